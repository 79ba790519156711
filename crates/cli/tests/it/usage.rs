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
fn version_is_printed() {
    let out = cairn(&["--version"]).success();
    assert!(out.starts_with("cairn "), "{out}");
}
