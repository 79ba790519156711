//! Help text and the documented conventions.

use crate::support::cairn;

#[test]
fn help_documents_exit_codes_formats_and_the_empty_tree() {
    let help = cairn(&["--help"]).success();
    for needle in [
        "Exit status:",
        "0  success",
        "1  the proof is invalid",
        "2  usage",
        "3  duplicate leaves",
        "4  I/O or corruption",
        "locked by another",
        "--format hex",
        "no root",
        "root\":null",
        "verify-consistency",
        "Numbers: in text, counts are grouped",
    ] {
        assert!(
            help.contains(needle),
            "cairn --help lacks {needle:?}:\n{help}"
        );
    }
    let root_help = cairn(&["root", "--help"]).success();
    assert!(root_help.contains("empty tree: no root"), "{root_help}");
    assert!(root_help.contains("exit code is 1"), "{root_help}");
    let verify_help = cairn(&["verify-consistency", "--help"]).success();
    assert!(
        verify_help.contains("omit --old-root exactly when --old-size is 0"),
        "{verify_help}"
    );
}

#[test]
fn no_command_prints_help_and_exits_2() {
    let run = cairn(&[]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("Usage: cairn <COMMAND>"), "{run:?}");
}

#[test]
fn version_names_the_release_and_the_on_disk_format() {
    let short = cairn(&["-V"]).success();
    let want = format!("cairn {} (on-disk format 2)\n", env!("CARGO_PKG_VERSION"));
    assert_eq!(short, want);
    // --version adds the build, one `key: value` line each.
    let long = cairn(&["--version"]).success();
    let lines: Vec<&str> = long.lines().collect();
    assert_eq!(lines.len(), 4, "{long}");
    assert_eq!(format!("{}\n", lines[0]), want);
    let commit = lines[1].strip_prefix("commit: ").expect(&long);
    assert!(
        commit == "unknown" || commit.bytes().all(|b| b.is_ascii_hexdigit()),
        "{long}"
    );
    assert!(
        lines[2].starts_with("target: ") && lines[2].len() > "target: ".len(),
        "{long}"
    );
    assert!(lines[3].starts_with("features: "), "{long}");
    // The same format a new database records.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let init = cairn(&[
        "init",
        db.to_str().unwrap(),
        "--arity",
        "2",
        "--hash",
        "sha256",
        "--json",
    ]);
    assert!(
        init.success()
            .contains(r#""format_version":1,"kind":"lean","#)
    );
}

/// Completes `words` (the last one being typed) with the bash script
/// `cairn completions bash` prints, run by bash itself.
fn bash_completes(words: &[&str]) -> String {
    let script = cairn(&["completions", "bash"]).success();
    let program = format!(
        "{script}\nCOMP_WORDS=({words}); COMP_CWORD={cword}; _cairn cairn {last} {prev}; echo \"${{COMPREPLY[*]}}\"",
        words = words.join(" "),
        cword = words.len() - 1,
        last = words[words.len() - 1],
        prev = words[words.len() - 2],
    );
    let output = std::process::Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &program])
        .output()
        .expect("bash runs");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn bash_completion_completes_commands_and_options() {
    assert_eq!(bash_completes(&["cairn", "in"]), "init ingest\n");
    assert_eq!(
        bash_completes(&["cairn", "ingest", "db", "--skip"]),
        "--skip-duplicates\n"
    );
    for (shell, needle) in [
        ("zsh", "#compdef cairn"),
        ("fish", "complete -c cairn"),
        ("elvish", "cairn"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let script = cairn(&["completions", shell]).success();
        assert!(script.contains(needle), "{shell}: {script}");
        assert!(script.contains("verify-consistency"), "{shell}: {script}");
    }
    cairn(&["completions", "tcsh"]).error(2, &["invalid value 'tcsh'"]);
}

#[test]
fn man_prints_cairn_1_and_writes_a_page_per_command() {
    let page = cairn(&["man"]).success();
    assert!(page.contains(".TH cairn 1"), "{page}");
    assert!(page.contains("on\\-disk format 2"), "{page}");
    assert!(page.contains("Exit status:"), "{page}");
    // Examples and the exit status table are kept line for line, not
    // filled into a paragraph.
    assert!(page.contains("Examples:\n.nf\n  cairn init db"), "{page}");
    assert!(page.contains("Exit status:\n.nf\n  0  success"), "{page}");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("man1");
    let listed = cairn(&["man", "--dir", out.to_str().unwrap()]).success();
    let ingest = out.join("cairn-ingest.1");
    assert!(
        listed.lines().any(|line| line == ingest.to_str().unwrap()),
        "{listed}"
    );
    assert!(out.join("cairn.1").is_file() && out.join("cairn-serve.1").is_file());
    let ingest = std::fs::read_to_string(ingest).unwrap();
    assert!(ingest.contains("skip\\-duplicates"), "{ingest}");
    assert!(ingest.contains(".nf\n  cairn ingest"), "{ingest}");
}
