//! Signed checkpoints against an independent implementation of the C2SP
//! signed-note format: Go's golang.org/x/mod/sumdb/note, through the
//! program in tools/notecheck (built here with the Go toolchain, which
//! fetches the module from the Go proxy pinned by its go.sum). Keys and
//! notes cross in both directions, and each side refuses a tampered note.
//! Without `go` on PATH the test says so and checks nothing else.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::cairn;

/// Builds tools/notecheck into `dir`, or `None` when there is no Go toolchain.
fn build_notecheck(dir: &Path) -> Option<PathBuf> {
    if Command::new("go").arg("version").output().is_err() {
        eprintln!(
            "go is not on PATH: skipping the cross-check against golang.org/x/mod/sumdb/note"
        );
        return None;
    }
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/notecheck");
    let binary = dir.join("notecheck");
    let output = Command::new("go")
        .args(["build", "-o"])
        .arg(&binary)
        .arg(".")
        .current_dir(&source)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "go build tools/notecheck failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some(binary)
}

/// Runs notecheck: (exit success, stdout, stderr).
fn notecheck(binary: &Path, args: &[&str]) -> (bool, String, String) {
    let output = Command::new(binary).args(args).output().unwrap();
    (
        output.status.success(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

fn path(dir: &Path, name: &str) -> String {
    dir.join(name).to_str().unwrap().to_owned()
}

#[test]
fn go_sumdb_note_and_cairn_verify_each_others_checkpoints() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let Some(go) = build_notecheck(dir) else {
        return;
    };
    // A database signed by a key cairn generated.
    let key = path(dir, "db.key");
    let vkey = cairn(&["keygen", "--name", "example.org/deposits", "--out", &key]).success();
    let vkey = vkey.trim();
    let db = path(dir, "db");
    cairn(&[
        "init",
        &db,
        "--arity",
        "3",
        "--hash",
        "keccak256",
        "--sign-key",
        &key,
    ])
    .success();
    let leaves: String = (1..=10).map(|i| format!("0x{i:064x}\n")).collect();
    let hex = path(dir, "leaves.hex");
    std::fs::write(&hex, leaves).unwrap();
    cairn(&["ingest", &db, &hex, "--format", "hex"]).success();
    let note = cairn(&["signed-checkpoint", &db]).success();
    let note_file = path(dir, "note.txt");
    std::fs::write(&note_file, &note).unwrap();
    let text = note.split_once("\n\n").unwrap().0.to_owned() + "\n";
    assert!(
        text.ends_with("cairn-tree kind=lean arity=3 hash=keccak256\n"),
        "{text}"
    );

    // Go verifies cairn's note with cairn's verifier key ...
    let (ok, out, err) = notecheck(&go, &["verify", vkey, &note_file]);
    assert!(ok, "Go refused cairn's note: {err}");
    assert_eq!(out, text);
    // ... and refuses it tampered.
    let tampered = path(dir, "tampered.txt");
    std::fs::write(&tampered, note.replacen("\n10\n", "\n11\n", 1)).unwrap();
    let (ok, _, err) = notecheck(&go, &["verify", vkey, &tampered]);
    assert!(!ok, "Go accepted a tampered note");
    assert!(err.contains("invalid signature"), "{err}");

    // Go signs the same text with cairn's signer key file: the same bytes
    // (Ed25519 is deterministic), which cairn verifies.
    let text_file = path(dir, "text.txt");
    std::fs::write(&text_file, &text).unwrap();
    let (ok, go_note, err) = notecheck(&go, &["sign", &key, &text_file]);
    assert!(ok, "Go could not sign with cairn's key file: {err}");
    assert_eq!(go_note, note);
    let go_note_file = path(dir, "go-note.txt");
    std::fs::write(&go_note_file, &go_note).unwrap();
    let valid = cairn(&["verify-checkpoint", "--key", vkey, &go_note_file]).success();
    assert!(
        valid.starts_with("valid: example.org/deposits signed size 10"),
        "{valid}"
    );

    // A key Go generated: cairn signs with Go's signer key, Go verifies
    // with Go's verifier key; Go signs, cairn verifies, and refuses the
    // note tampered.
    let (ok, keys, err) = notecheck(&go, &["keygen", "example.org/go-made"]);
    assert!(ok, "{err}");
    let (go_signer, go_verifier) = keys.trim().split_once('\n').unwrap();
    let go_key = path(dir, "go.key");
    std::fs::write(&go_key, format!("{go_signer}\n")).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&go_key, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let note = cairn(&["signed-checkpoint", &db, "--sign-key", &go_key]).success();
    std::fs::write(&note_file, &note).unwrap();
    let (ok, _, err) = notecheck(&go, &["verify", go_verifier, &note_file]);
    assert!(ok, "Go refused a note cairn signed with a Go key: {err}");
    let text = note.split_once("\n\n").unwrap().0.to_owned() + "\n";
    std::fs::write(&text_file, &text).unwrap();
    let (ok, go_note, err) = notecheck(&go, &["sign", &go_key, &text_file]);
    assert!(ok, "{err}");
    std::fs::write(&go_note_file, &go_note).unwrap();
    cairn(&["verify-checkpoint", "--key", go_verifier, &go_note_file]).success();
    std::fs::write(&go_note_file, go_note.replacen("arity=3", "arity=2", 1)).unwrap();
    cairn(&["verify-checkpoint", "--key", go_verifier, &go_note_file]).invalid("bad signature");
}
