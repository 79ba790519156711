//! What this binary was built from (`build.rs` records it): the release,
//! the git commit, the target and its CPU features. `cairn --version`
//! prints it and `/metrics` exports it as `cairn_build_info`.

use std::fmt::Write as _;

/// The build's identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BuildInfo {
    /// The release (the workspace's version).
    pub version: &'static str,
    /// The git commit (12 hex digits), or `unknown` for a build without
    /// a repository and without `CAIRN_BUILD_COMMIT`.
    pub commit: &'static str,
    /// The target triple.
    pub target: &'static str,
    /// The CPU features that select code paths, comma-separated, or `none`.
    pub features: &'static str,
}

/// This binary's build.
pub const BUILD: BuildInfo = BuildInfo {
    version: env!("CARGO_PKG_VERSION"),
    commit: env!("CAIRN_BUILD_COMMIT"),
    target: env!("CAIRN_BUILD_TARGET"),
    features: env!("CAIRN_BUILD_FEATURES"),
};

impl BuildInfo {
    /// Appends the `cairn_build_info` gauge (always 1, the build in its
    /// labels) to a text exposition.
    pub(crate) fn render(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "# HELP cairn_build_info The running build: release, git commit, target and CPU features (always 1).\n\
             # TYPE cairn_build_info gauge\n\
             cairn_build_info{{version=\"{}\",commit=\"{}\",target=\"{}\",features=\"{}\"}} 1",
            label(self.version),
            label(self.commit),
            label(self.target),
            label(self.features),
        );
    }
}

/// A label value escaped as the text format requires.
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_build_names_a_commit_or_says_it_is_unknown() {
        // One token: `git rev-parse` output, `CAIRN_BUILD_COMMIT` trimmed,
        // or `unknown`.
        let commit = BUILD.commit;
        assert!(
            !commit.is_empty() && !commit.contains(char::is_whitespace),
            "{commit:?}"
        );
        assert_eq!(BUILD.version, env!("CARGO_PKG_VERSION"));
        assert!(!BUILD.target.is_empty() && !BUILD.features.is_empty());
    }

    #[test]
    fn build_info_renders_one_escaped_sample() {
        let info = BuildInfo {
            version: "1.2.3",
            commit: "abc\"def",
            target: "x86_64-unknown-linux-gnu",
            features: "avx2,sse4.2",
        };
        let mut out = String::new();
        info.render(&mut out);
        assert!(out.contains("# TYPE cairn_build_info gauge\n"), "{out}");
        assert!(
            out.ends_with(
                "cairn_build_info{version=\"1.2.3\",commit=\"abc\\\"def\",target=\"x86_64-unknown-linux-gnu\",features=\"avx2,sse4.2\"} 1\n"
            ),
            "{out}"
        );
    }
}
