//! Tidy checks that keep the docs true about the repository itself: every
//! path ARCHITECTURE.md's code map names exists, its command list is the
//! CLI's subcommands and its kind list the core's `TreeKind::NAMES`, and
//! no user doc links or names a file outside the repository (a reader has
//! only the repository).

use std::path::{Component, Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

/// Directories that are build output or installed packages, not sources.
const SKIP_DIRS: [&str; 5] = ["target", "node_modules", ".git", "artifacts", "corpus"];

/// Every file and directory under `dir`, as paths relative to `dir` with
/// `/` separators, skipping [`SKIP_DIRS`].
fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(relative) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(dir.join(&relative)) else {
            continue;
        };
        for entry in entries {
            let entry = entry.expect("directory entry");
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = relative.join(&name);
            let shown = path.to_string_lossy().replace('\\', "/");
            if entry.file_type().expect("file type").is_dir() {
                if SKIP_DIRS.contains(&name.as_str()) {
                    continue;
                }
                stack.push(path);
            }
            out.push(shown);
        }
    }
    out
}

/// Whether a backticked word reads as a path in the repository: it has a
/// `/` or a source or document extension, and is not an absolute OS path
/// (`/proc/self`), an npm scope (`@zk-kit/...`) or a Rust path.
fn looks_like_repo_path(word: &str) -> bool {
    const EXTENSIONS: [&str; 14] = [
        ".rs", ".md", ".json", ".ts", ".mjs", ".js", ".py", ".sh", ".toml", ".circom", ".csv",
        ".svg", ".service", ".yml",
    ];
    !word.starts_with(['/', '@', '#'])
        && !word.contains("::")
        && !word.contains("://")
        && (word.contains('/') || EXTENSIONS.iter().any(|e| word.ends_with(e)))
}

/// The words between backticks on `line` (each word of a backticked
/// command on its own).
fn backticked(line: &str) -> Vec<&str> {
    line.split('`')
        .skip(1)
        .step_by(2)
        .flat_map(str::split_whitespace)
        .collect()
}

/// The paths ARCHITECTURE.md's code map names that do not exist. A path
/// is looked up from the repository root, then from the directory its
/// section is about (`### \`crates/store\``) and that directory's `src/`,
/// then as the tail of any path under that directory (a bullet names
/// `real.rs` under the bullet for `fs/`).
fn missing_code_map_paths(architecture: &str, root: &Path) -> Vec<String> {
    let start = architecture
        .find("\n## Code map")
        .expect("ARCHITECTURE.md has a '## Code map' section");
    let rest = &architecture[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |at| at + 3);
    let map = &rest[..end];
    let mut missing = Vec::new();
    let mut base = PathBuf::new();
    let mut base_listing = walk(root);
    let mut in_block = false;
    for (number, line) in map.lines().enumerate() {
        let at = format!("code map line {}", number + 1);
        if line.starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if in_block {
            // The tree at the top: one path per line, then its description.
            if let Some(path) = line.split_whitespace().next()
                && !root.join(path).exists()
            {
                missing.push(format!("{at}: {path}"));
            }
            continue;
        }
        if let Some(header) = line.strip_prefix("### ") {
            base = backticked(header)
                .into_iter()
                .find(|word| root.join(word).is_dir())
                .map(PathBuf::from)
                .unwrap_or_default();
            base_listing = walk(&root.join(&base));
        }
        for word in backticked(line) {
            if !looks_like_repo_path(word) {
                continue;
            }
            let tail = word.trim_end_matches('/');
            let found = root.join(tail).exists()
                || root.join(&base).join(tail).exists()
                || root.join(&base).join("src").join(tail).exists()
                || base_listing
                    .iter()
                    .any(|path| path.ends_with(&format!("/{tail}")));
            if !found {
                missing.push(format!("{at}: {word} (section {})", base.display()));
            }
        }
    }
    missing
}

#[test]
fn every_path_in_the_architecture_code_map_exists() {
    let root = root();
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let missing = missing_code_map_paths(&text, &root);
    assert!(missing.is_empty(), "ARCHITECTURE.md names {missing:#?}");
}

#[test]
fn the_code_map_check_reports_a_renamed_file() {
    let root = root();
    let text = "# A\n\n## Code map\n\n```\ncrates/core   the core\ncrates/nope   gone\n```\n\n\
                ### `crates/store`\n\n- `format.rs`: layouts; `fs/` and `real.rs`.\n\
                - `no_such_module.rs`: not there.\n- `Store::open` and `/proc/self` are no paths.\n\n\
                ## Cross-cutting decisions\n\n- `nowhere.rs` is outside the map.\n";
    let missing = missing_code_map_paths(text, &root);
    assert_eq!(missing.len(), 2, "{missing:#?}");
    assert!(missing[0].contains("crates/nope"), "{missing:#?}");
    assert!(missing[1].contains("no_such_module.rs"), "{missing:#?}");
}

/// The plain words (letters, digits and `-`) between backticks in the
/// paragraph of `text` that opens with `marker` (up to the next blank
/// line); `None` if no line starts with it.
fn listed_words(text: &str, marker: &str) -> Option<Vec<String>> {
    let mut lines = text.lines().skip_while(|line| !line.starts_with(marker));
    let first = lines.next()?;
    let paragraph = std::iter::once(first).chain(lines.take_while(|line| !line.trim().is_empty()));
    let mut words = Vec::new();
    for line in paragraph {
        for word in line.split('`').skip(1).step_by(2) {
            let plain = !word.is_empty()
                && word
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
            if plain {
                words.push(word.to_owned());
            }
        }
    }
    Some(words)
}

/// Where the list of `what` in the paragraph `marker` opens differs from
/// `actual`: each name missing from the doc, each name the doc lists that
/// is not one, each name listed twice.
fn list_drift(text: &str, marker: &str, what: &str, actual: &[String]) -> Vec<String> {
    let Some(listed) = listed_words(text, marker) else {
        return vec![format!("no paragraph starts with {marker:?}")];
    };
    let mut drift = Vec::new();
    for name in actual {
        if !listed.contains(name) {
            drift.push(format!("{what} {name} is missing from {marker:?}"));
        }
    }
    for (at, name) in listed.iter().enumerate() {
        if !actual.contains(name) {
            drift.push(format!("{marker:?} lists {name}, which is not a {what}"));
        } else if listed[..at].contains(name) {
            drift.push(format!("{marker:?} lists {name} twice"));
        }
    }
    drift
}

/// The paragraph of ARCHITECTURE.md that lists the CLI's commands.
const COMMANDS_MARKER: &str = "**Commands**";
/// The paragraph of ARCHITECTURE.md that lists the tree kinds.
const KINDS_MARKER: &str = "**Kinds**";

/// The `cairn` subcommands, as the parser knows them (the ones the
/// dispatcher runs; clap's own `help` aside).
fn cli_commands() -> Vec<String> {
    use clap::CommandFactory as _;
    cairn_cli::Cli::command()
        .get_subcommands()
        .map(|command| command.get_name().to_owned())
        .filter(|name| name != "help")
        .collect()
}

fn kind_names() -> Vec<String> {
    cairn_core::TreeKind::NAMES.map(str::to_owned).to_vec()
}

#[test]
fn the_architecture_command_list_is_the_clis() {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let commands = cli_commands();
    assert!(commands.len() >= 20, "{commands:?}");
    let drift = list_drift(&text, COMMANDS_MARKER, "command", &commands);
    assert!(drift.is_empty(), "ARCHITECTURE.md: {drift:#?}");
}

#[test]
fn the_architecture_kind_list_is_the_cores() {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let drift = list_drift(&text, KINDS_MARKER, "kind", &kind_names());
    assert!(drift.is_empty(), "ARCHITECTURE.md: {drift:#?}");
}

#[test]
fn the_command_list_check_reports_a_missing_and_a_made_up_command() {
    let mut commands = cli_commands();
    let dropped = commands.pop().expect("a command");
    let listed: Vec<String> = commands.iter().map(|name| format!("`{name}`")).collect();
    let text = format!(
        "# A\n\n{COMMANDS_MARKER} (see `commands/`): {},\n`compact`, `init`.\n\nNot `reindex`.\n",
        listed.join(", ")
    );
    let drift = list_drift(&text, COMMANDS_MARKER, "command", &cli_commands());
    assert_eq!(drift.len(), 3, "{drift:#?}");
    assert!(
        drift[0].contains(&format!("{dropped} is missing")),
        "{drift:#?}"
    );
    assert!(
        drift[1].contains("compact, which is not a command"),
        "{drift:#?}"
    );
    assert!(drift[2].contains("init twice"), "{drift:#?}");
    let gone = list_drift(
        "# A\n\nCommands: `init`.\n",
        COMMANDS_MARKER,
        "command",
        &cli_commands(),
    );
    assert_eq!(gone.len(), 1, "{gone:#?}");
    assert!(gone[0].contains("no paragraph starts with"), "{gone:#?}");
}

#[test]
fn the_kind_list_check_reports_a_missing_and_a_made_up_kind() {
    let text = format!(
        "{KINDS_MARKER} (`TreeKind::NAMES`): `lean` (no padding) and `sparse`\n(a made-up one).\n\n`indexed` is past the paragraph.\n"
    );
    let drift = list_drift(&text, KINDS_MARKER, "kind", &kind_names());
    assert_eq!(drift.len(), 3, "{drift:#?}");
    assert!(drift[0].contains("imt is missing"), "{drift:#?}");
    assert!(drift[1].contains("indexed is missing"), "{drift:#?}");
    assert!(
        drift[2].contains("sparse, which is not a kind"),
        "{drift:#?}"
    );
}

/// The user docs: READMEs, ARCHITECTURE.md and docs/.
fn user_docs(root: &Path) -> Vec<PathBuf> {
    let mut docs = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    for dir in ["docs", "crates", "clients", "test-vectors", "circuits"] {
        for path in walk(&root.join(dir)) {
            let is_doc = if dir == "docs" {
                path.ends_with(".md") && !path.contains('/')
            } else {
                path == "README.md"
                    || (path.ends_with("/README.md") && path.matches('/').count() == 1)
            };
            if is_doc {
                docs.push(root.join(dir).join(path));
            }
        }
    }
    docs.sort();
    docs
}

/// `path` joined to `dir` with `.` and `..` resolved lexically; `None` if
/// it climbs above the filesystem root.
fn resolve(dir: &Path, path: &str) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in dir.join(path).components() {
        match component {
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    Some(out)
}

/// Where `text` (the doc at `doc`) links to or names a file outside the
/// repository, or a repository file that does not exist: relative links
/// must resolve to a path inside the repository, backticked paths with a
/// source or document extension must name a file in it, and nothing may
/// cite the team's internal guide or a path climbing out of the tree.
fn outside_references(text: &str, doc: &Path, root: &Path, listing: &[String]) -> Vec<String> {
    let dir = doc.parent().expect("a doc is in a directory");
    let mut found = Vec::new();
    let internal = ["shared", "/guide/"].concat();
    for (number, line) in text.lines().enumerate() {
        let at = format!("line {}", number + 1);
        if line.contains(&internal) || line.contains("/work/") {
            found.push(format!("{at}: cites a path outside the repository"));
        }
        for piece in line.split("](").skip(1) {
            let target = piece.split([')', ' ']).next().unwrap_or_default();
            let target = target.split('#').next().unwrap_or_default();
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            match resolve(dir, target) {
                Some(path) if path.starts_with(root) && path.exists() => {}
                Some(path) if path.starts_with(root) => {
                    found.push(format!("{at}: link to {target}, which does not exist"));
                }
                _ => found.push(format!("{at}: link to {target}, outside the repository")),
            }
        }
        for word in backticked(line) {
            if !looks_like_repo_path(word) {
                continue;
            }
            if word.starts_with("../") {
                match resolve(dir, word) {
                    Some(path) if path.starts_with(root) => {}
                    _ => found.push(format!("{at}: {word} is outside the repository")),
                }
                continue;
            }
            // A bare name is checked only for sources and docs: a bare
            // `proof.json` is a user's file in an example.
            let named_file = if word.contains('/') {
                [
                    ".rs", ".md", ".json", ".ts", ".mjs", ".py", ".circom", ".toml",
                ]
                .iter()
                .any(|e| word.ends_with(e))
            } else {
                word.ends_with(".rs") || word.ends_with(".md")
            };
            if !named_file || word.contains(['*', '{', '<']) {
                continue;
            }
            let exists = dir.join(word).exists()
                || root.join(word).exists()
                || listing
                    .iter()
                    .any(|path| path == word || path.ends_with(&format!("/{word}")));
            if !exists {
                found.push(format!("{at}: {word} is not a file in the repository"));
            }
        }
    }
    found
}

#[test]
fn no_user_doc_links_or_names_files_outside_the_repository() {
    let root = root();
    let listing = walk(&root);
    let docs = user_docs(&root);
    // The top-level docs, docs/*.md and the READMEs of the server, the
    // TypeScript client, the vectors and the circuits at least.
    assert!(docs.len() >= 9, "{docs:#?}");
    for doc in docs {
        let text = std::fs::read_to_string(&doc).unwrap();
        let found = outside_references(&text, &doc, &root, &listing);
        assert!(found.is_empty(), "{}: {found:#?}", doc.display());
    }
}

#[test]
fn the_outside_reference_check_reports_each_kind() {
    let root = root();
    let listing = walk(&root);
    let doc = root.join("docs/example.md");
    let guide = ["shared", "/guide/style.md"].concat();
    let text = format!(
        "See [spec](spec.md), [the map](../ARCHITECTURE.md#code-map) and \
         [rfc](https://example.org/a.md).\n\
         Not [this](../../elsewhere/notes.md) nor [that](missing.md).\n\
         The guide `{guide}`, `../../seeds/000.txt`, `crates/core/src/gone.rs`.\n\
         Fine: `crates/core/src/level.rs`, `level.rs`, `/proc/self`, `proof.json`.\n"
    );
    let found = outside_references(&text, &doc, &root, &listing);
    assert_eq!(found.len(), 6, "{found:#?}");
    assert!(
        found.iter().all(|f| !f.starts_with("line 1:")),
        "{found:#?}"
    );
    assert!(found[0].contains("outside the repository"), "{found:#?}");
    assert!(found[1].contains("missing.md"), "{found:#?}");
    assert!(
        found.iter().any(|f| f.contains("line 3: cites")),
        "{found:#?}"
    );
    assert!(found.iter().any(|f| f.contains("seeds")), "{found:#?}");
    assert!(found.iter().any(|f| f.contains("gone.rs")), "{found:#?}");
    assert!(found.iter().any(|f| f.contains("style.md")), "{found:#?}");
}

#[test]
fn no_test_or_source_cites_the_internal_guide() {
    let root = root();
    let internal = ["shared", "/guide"].concat();
    let mut found = Vec::new();
    for path in walk(&root) {
        let is_text = [
            ".rs", ".md", ".ts", ".mjs", ".js", ".py", ".sh", ".toml", ".circom",
        ]
        .iter()
        .any(|e| path.ends_with(e))
            || path == ".ci/run";
        if !is_text {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(root.join(&path)) else {
            continue;
        };
        if text.contains(&internal) {
            found.push(path);
        }
    }
    assert!(
        found.is_empty(),
        "cite files outside the repository: {found:#?}"
    );
}
