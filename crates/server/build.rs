//! Records what a binary was built from, for `cairn --version` and the
//! `cairn_build_info` metric: the git commit (from `CAIRN_BUILD_COMMIT`
//! when set, as a build from a source archive or a container without
//! `.git` sets it, else from `git`, else `unknown`), the target triple
//! and the CPU features the build may use.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=CAIRN_BUILD_COMMIT");
    let commit = match std::env::var("CAIRN_BUILD_COMMIT") {
        Ok(commit) if !commit.trim().is_empty() => commit.trim().to_owned(),
        _ => git_commit().unwrap_or_else(|| "unknown".to_owned()),
    };
    println!("cargo:rustc-env=CAIRN_BUILD_COMMIT={commit}");
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".to_owned());
    println!("cargo:rustc-env=CAIRN_BUILD_TARGET={target}");
    // Only the features that select a code path (SIMD kernels, hardware
    // CRC and AES), so the line stays readable.
    let wanted = [
        "sse4.2",
        "avx",
        "avx2",
        "avx512f",
        "bmi2",
        "aes",
        "pclmulqdq",
        "sha",
        "neon",
        "crc",
    ];
    let enabled = std::env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    let features: Vec<&str> = enabled
        .split(',')
        .filter(|feature| wanted.contains(feature))
        .collect();
    let features = if features.is_empty() {
        "none".to_owned()
    } else {
        features.join(",")
    };
    println!("cargo:rustc-env=CAIRN_BUILD_FEATURES={features}");
}

/// The commit checked out (12 hex digits), or `None` without `git` or a
/// repository. Asks cargo to run this again when HEAD or the branch it
/// names moves. (Uncommitted changes are not marked: cargo cannot be asked
/// to rerun on every edit; `scripts/release` refuses a dirty tree.)
fn git_commit() -> Option<String> {
    let git = |args: &[&str]| -> Option<String> {
        let output = Command::new("git").args(args).output().ok()?;
        if !output.status.success() {
            return None;
        }
        let text = String::from_utf8(output.stdout).ok()?;
        Some(text.trim().to_owned())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"])?;
    let mut watched = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for path in watched {
        // Only files that exist: cargo reruns a script on every build
        // while a watched path is missing, and the crate would rebuild.
        if let Some(file) = git(&["rev-parse", "--git-path", &path]).map(absolute)
            && file.exists()
        {
            println!("cargo:rerun-if-changed={}", file.display());
        }
    }
    Some(commit)
}

/// `git rev-parse --git-path` answers relative to the working directory,
/// which for a build script is the crate's directory.
fn absolute(path: String) -> PathBuf {
    let path = PathBuf::from(path);
    if path.is_absolute() {
        path
    } else {
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default()).join(path)
    }
}
