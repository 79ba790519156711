//! Signer key files.

use cairn_note::Signer;
use cairn_note::file::{read_signer_key, readable_by_others, write_signer_key};

use crate::support::refused;

#[test]
fn a_key_file_round_trips_and_is_private() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.key");
    let signer = Signer::generate("example.org/log").unwrap();
    write_signer_key(&path, &signer, false).unwrap();
    assert_eq!(
        read_signer_key(&path).unwrap().verifier(),
        signer.verifier()
    );
    assert!(!readable_by_others(&path));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text, format!("{}\n", signer.to_key_text().as_str()));
    assert!(!dir.path().join("log.key.tmp").exists());
}

#[test]
fn an_existing_key_file_is_kept_unless_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.key");
    let first = Signer::generate("example.org/log").unwrap();
    let second = Signer::generate("example.org/log").unwrap();
    write_signer_key(&path, &first, false).unwrap();
    refused(write_signer_key(&path, &second, false), &["already exists"]);
    assert_eq!(read_signer_key(&path).unwrap().verifier(), first.verifier());
    write_signer_key(&path, &second, true).unwrap();
    assert_eq!(
        read_signer_key(&path).unwrap().verifier(),
        second.verifier()
    );
}

#[test]
fn bad_key_files_are_refused_without_quoting_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.key");
    refused(read_signer_key(&path), &["bad.key"]);
    let signer = Signer::generate("example.org/log").unwrap();
    let secret = signer.to_key_text().to_string();
    // A verifier key where a signer key belongs.
    std::fs::write(&path, signer.verifier().to_string()).unwrap();
    refused(
        read_signer_key(&path),
        &["does not hold a signer key", "cairn keygen"],
    );
    // A damaged signer key: the error does not show the seed.
    let damaged = format!("{}x", &secret[..secret.len() - 1]);
    std::fs::write(&path, &damaged).unwrap();
    let message = refused(read_signer_key(&path), &["bad.key"]);
    assert!(
        !message.contains(secret.splitn(5, '+').nth(4).unwrap()),
        "{message}"
    );
    std::fs::write(&path, vec![b'x'; 5000]).unwrap();
    refused(read_signer_key(&path), &["5000 bytes, want at most 4096"]);
    // Surrounding white space is ignored.
    std::fs::write(&path, format!("\n  {secret}\r\n")).unwrap();
    assert_eq!(
        read_signer_key(&path).unwrap().verifier(),
        signer.verifier()
    );
}

#[test]
fn verifier_key_files_hold_one_key_a_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trusted");
    let a = crate::support::verifier("example.org/a");
    let b = crate::support::verifier("example.org/b");
    std::fs::write(&path, format!("# trusted logs\n{a}\n\n  {b}  \n")).unwrap();
    let keys = cairn_note::file::read_verifier_keys(&path).unwrap();
    assert_eq!(keys, vec![a.clone(), b]);
    std::fs::write(&path, "# nothing\n\n").unwrap();
    crate::support::refused(
        cairn_note::file::read_verifier_keys(&path),
        &["holds no verifier key"],
    );
    std::fs::write(&path, format!("{a}\nnot-a-key\n")).unwrap();
    crate::support::refused(cairn_note::file::read_verifier_keys(&path), &["line 2"]);
    let signer_key = crate::support::signer("example.org/a")
        .to_key_text()
        .to_string();
    std::fs::write(&path, signer_key).unwrap();
    let error = crate::support::refused(cairn_note::file::read_verifier_keys(&path), &["signer"]);
    assert!(!error.contains("PRIVATE"), "{error}");
    crate::support::refused(
        cairn_note::file::read_verifier_keys(&dir.path().join("missing")),
        &["missing"],
    );
}
