//! Signed checkpoints from the command line: keygen, init --sign-key,
//! sign-key, signed-checkpoint, verify-checkpoint and backups of a key.

use std::path::Path;

use crate::support::{cairn, cairn_stdin};

fn path(dir: &Path, name: &str) -> String {
    dir.join(name).to_str().unwrap().to_owned()
}

#[cfg(unix)]
fn mode(path: &str) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// A database of `count` leaves in `dir/db` signed by a new key named
/// `name`: (db, key file, verifier key).
fn signed_db(dir: &Path, name: &str, count: u64) -> (String, String, String) {
    let key = path(dir, "db.key");
    let vkey = cairn(&["keygen", "--name", name, "--out", &key])
        .success()
        .trim()
        .to_owned();
    let db = path(dir, "db");
    cairn(&[
        "init",
        &db,
        "--arity",
        "4",
        "--hash",
        "sha256",
        "--sign-key",
        &key,
    ])
    .success();
    if count > 0 {
        let leaves: String = (1..=count).map(|i| format!("0x{i:064x}\n")).collect();
        cairn_stdin(&["ingest", &db, "-", "--format", "hex"], leaves.as_bytes()).success();
    }
    (db, key, vkey)
}

#[test]
fn keygen_writes_a_private_key_file_and_prints_the_verifier_key() {
    let dir = tempfile::tempdir().unwrap();
    let key = path(dir.path(), "log.key");
    let out = cairn(&["keygen", "--name", "example.org/log", "--out", &key]).success();
    let vkey = out.trim();
    assert!(vkey.starts_with("example.org/log+"), "{vkey}");
    let signer = cairn_note::file::read_signer_key(Path::new(&key)).unwrap();
    assert_eq!(signer.verifier().to_string(), vkey);
    #[cfg(unix)]
    assert_eq!(mode(&key), 0o600);
    // An existing file is never overwritten.
    let before = std::fs::read(&key).unwrap();
    cairn(&["keygen", "--name", "example.org/log", "--out", &key]).error(2, &["already exists"]);
    assert_eq!(std::fs::read(&key).unwrap(), before);
    // Names with spaces or '+' are refused; nothing is written.
    let other = path(dir.path(), "other.key");
    cairn(&["keygen", "--name", "a+b", "--out", &other]).error(2, &["key name \"a+b\""]);
    assert!(!Path::new(&other).exists());
    let json = cairn(&["keygen", "--name", "x.example", "--out", &other, "--json"]).success();
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["name"], "x.example");
    assert_eq!(json["signer_key_file"], other.as_str());
    assert!(
        json["verifier_key"]
            .as_str()
            .unwrap()
            .starts_with("x.example+")
    );
    assert_eq!(json["key_id"].as_str().unwrap().len(), 8);
}

#[test]
fn a_signed_database_prints_checkpoints_that_verify() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _, vkey) = signed_db(dir.path(), "example.org/deposits", 5);
    #[cfg(unix)]
    assert_eq!(mode(&format!("{db}/signer.key")), 0o600);
    let note = cairn(&["signed-checkpoint", &db]).success();
    let root = cairn(&["root", &db]).success();
    let root = root.trim();
    let lines: Vec<&str> = note.lines().collect();
    assert_eq!(lines[..2], ["example.org/deposits", "5"]);
    assert_eq!(lines[3], "cairn-tree kind=lean arity=4 hash=sha256");
    assert_eq!(lines[4], "");
    assert!(lines[5].starts_with("\u{2014} example.org/deposits "));
    assert_eq!(lines.len(), 6);

    let valid = cairn_stdin(&["verify-checkpoint", "--key", &vkey], note.as_bytes()).success();
    assert_eq!(
        valid.trim(),
        format!("valid: example.org/deposits signed size 5, root {root}, arity 4, hash sha256")
    );
    let json = cairn_stdin(
        &["verify-checkpoint", "--key", &vkey, "-", "--json"],
        note.as_bytes(),
    )
    .success();
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"valid": true, "origin": "example.org/deposits", "size": 5, "root": root,
            "kind": "lean", "arity": 4, "hash": "sha256", "other_signatures": 0})
    );

    let json = cairn(&["signed-checkpoint", &db, "--json"]).success();
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["note"], note.as_str());
    assert_eq!(json["root"], root);
    assert_eq!(json["size"], 5);
    assert_eq!(json["verifier_key"], vkey.as_str());
    assert_eq!(
        (
            json["kind"].as_str(),
            json["arity"].as_u64(),
            json["hash"].as_str()
        ),
        (Some("lean"), Some(4), Some("sha256"))
    );
}

#[test]
fn verify_checkpoint_refuses_tampered_foreign_and_malformed_notes() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _, vkey) = signed_db(dir.path(), "example.org/deposits", 5);
    let note = cairn(&["signed-checkpoint", &db]).success();
    let verify = |note: &str| cairn_stdin(&["verify-checkpoint", "--key", &vkey], note.as_bytes());
    verify(&note.replacen("\n5\n", "\n4\n", 1)).invalid("bad signature by example.org/deposits+");
    verify(&note.replacen("hash=sha256", "hash=blake3", 1)).invalid("bad signature");
    verify(&note.replacen("\n\n", "\n", 1)).invalid("no blank line");
    verify(&note.replacen('\u{2014}', "--", 1)).invalid("em dash");
    // The same signature twice is still one signature by the key.
    let last = note.lines().last().unwrap();
    verify(&format!("{note}{last}\n")).success();
    verify("").invalid("no blank line");
    // Another key: no known signature.
    let other = path(dir.path(), "other.key");
    let other_vkey =
        cairn(&["keygen", "--name", "example.org/deposits", "--out", &other]).success();
    cairn_stdin(
        &["verify-checkpoint", "--key", other_vkey.trim()],
        note.as_bytes(),
    )
    .invalid("no known signature");
    // --json: the verdict on stdout, nothing on stderr, exit 1.
    let run = cairn_stdin(
        &["verify-checkpoint", "--key", &vkey, "--json"],
        note.replacen("\n5\n", "\n6\n", 1).as_bytes(),
    );
    assert_eq!(run.code, 1);
    assert_eq!(run.stderr, "");
    let json: serde_json::Value = serde_json::from_str(&run.out()).unwrap();
    assert_eq!(json["valid"], false);
    assert!(
        json["reason"].as_str().unwrap().contains("bad signature"),
        "{json}"
    );
    // Not UTF-8.
    cairn_stdin(&["verify-checkpoint", "--key", &vkey], b"\xff\n\n").invalid("not UTF-8");
    // A malformed key is a usage error; a missing file an I/O error.
    cairn_stdin(&["verify-checkpoint", "--key", "nonsense"], note.as_bytes())
        .error(2, &["--key", "malformed verifier key"]);
    cairn(&[
        "verify-checkpoint",
        "--key",
        &vkey,
        &path(dir.path(), "missing.txt"),
    ])
    .error(4, &["missing.txt"]);
}

#[test]
fn signed_checkpoint_needs_a_key_and_a_non_empty_tree() {
    let dir = tempfile::tempdir().unwrap();
    let db = path(dir.path(), "plain");
    cairn(&["init", &db, "--arity", "2", "--hash", "blake3"]).success();
    cairn(&["signed-checkpoint", &db]).error(2, &["has no signer key", "cairn sign-key"]);
    let key = path(dir.path(), "k.key");
    cairn(&["keygen", "--name", "k.example", "--out", &key]).success();
    cairn(&["signed-checkpoint", &db, "--sign-key", &key]).fails(1, "empty: ");
    // A bad key file given with --sign-key.
    let bad = path(dir.path(), "bad.key");
    std::fs::write(&bad, "PRIVATE+KEY+x+00000000+AAAA\n").unwrap();
    cairn(&["signed-checkpoint", &db, "--sign-key", &bad]).error(2, &["bad.key"]);
    cairn(&[
        "signed-checkpoint",
        &db,
        "--sign-key",
        &path(dir.path(), "nope.key"),
    ])
    .error(4, &["nope.key"]);
    // A key others can read still signs, with a warning.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::write(db_leaf_file(dir.path()), format!("0x{:064x}\n", 1)).unwrap();
        cairn(&["ingest", &db, &db_leaf_file(dir.path()), "--format", "hex"]).success();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
        let run = cairn(&["signed-checkpoint", &db, "--sign-key", &key]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(
            run.stderr.contains("readable by other users: chmod 600"),
            "{}",
            run.stderr
        );
    }
}

fn db_leaf_file(dir: &Path) -> String {
    path(dir, "one.hex")
}

#[test]
fn init_with_a_bad_key_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let bad = path(dir.path(), "bad.key");
    std::fs::write(&bad, "not a key\n").unwrap();
    let db = path(dir.path(), "db");
    cairn(&[
        "init",
        &db,
        "--arity",
        "2",
        "--hash",
        "blake3",
        "--sign-key",
        &bad,
    ])
    .error(2, &["bad.key", "does not hold a signer key"]);
    assert!(!Path::new(&db).join("cairn.meta").exists());
}

#[test]
fn sign_key_adds_keeps_and_replaces_a_database_key() {
    let dir = tempfile::tempdir().unwrap();
    let db = path(dir.path(), "db");
    cairn(&["init", &db, "--arity", "2", "--hash", "blake3"]).success();
    cairn_stdin(
        &["ingest", &db, "-", "--format", "hex"],
        format!("0x{:064x}\n", 1).as_bytes(),
    )
    .success();
    let first = path(dir.path(), "first.key");
    let first_vkey = cairn(&["keygen", "--name", "first.example", "--out", &first]).success();
    let out = cairn(&["sign-key", &db, &first]).success();
    assert!(
        out.contains("now signs") && out.contains(first_vkey.trim()),
        "{out}"
    );
    let out = cairn(&["sign-key", &db, &first]).success();
    assert!(out.contains("already signs"), "{out}");
    let second = path(dir.path(), "second.key");
    let second_vkey = cairn(&["keygen", "--name", "second.example", "--out", &second]).success();
    cairn(&["sign-key", &db, &second]).error(
        2,
        &["already signs with the key first.example+", "--replace"],
    );
    let note = cairn(&["signed-checkpoint", &db]).success();
    cairn_stdin(
        &["verify-checkpoint", "--key", first_vkey.trim()],
        note.as_bytes(),
    )
    .success();
    let json = cairn(&["sign-key", &db, &second, "--replace", "--json"]).success();
    assert!(json.contains(r#""changed":true"#), "{json}");
    let note = cairn(&["signed-checkpoint", &db]).success();
    cairn_stdin(
        &["verify-checkpoint", "--key", second_vkey.trim()],
        note.as_bytes(),
    )
    .success();
    cairn_stdin(
        &["verify-checkpoint", "--key", first_vkey.trim()],
        note.as_bytes(),
    )
    .invalid("no known signature");
    cairn(&["sign-key", &path(dir.path(), "nodb"), &first]).error(4, &["is not a cairn database"]);
}

#[test]
fn a_follower_signs_its_finalized_head() {
    let dir = tempfile::tempdir().unwrap();
    let db = path(dir.path(), "db");
    cairn(&[
        "init",
        &db,
        "--arity",
        "2",
        "--hash",
        "blake3",
        "--finality",
        "explicit",
    ])
    .success();
    let leaves: String = (1..=6).map(|i| format!("0x{i:064x}\n")).collect();
    cairn_stdin(&["ingest", &db, "-", "--format", "hex"], leaves.as_bytes()).success();
    let key = path(dir.path(), "k.key");
    let vkey = cairn(&["keygen", "--name", "k.example", "--out", &key]).success();
    cairn(&["sign-key", &db, &key]).success();
    cairn(&["signed-checkpoint", &db, "--finalized"]).fails(1, "empty: ");
    cairn(&["finalize", &db, "--to", "4"]).success();
    let note = cairn(&["signed-checkpoint", &db, "--finalized"]).success();
    let verdict = cairn_stdin(
        &["verify-checkpoint", "--key", vkey.trim()],
        note.as_bytes(),
    )
    .success();
    assert!(verdict.contains("signed size 4,"), "{verdict}");
    let note = cairn(&["signed-checkpoint", &db]).success();
    let verdict = cairn_stdin(
        &["verify-checkpoint", "--key", vkey.trim()],
        note.as_bytes(),
    )
    .success();
    assert!(verdict.contains("signed size 6,"), "{verdict}");
}

#[test]
fn backups_leave_the_key_out_unless_asked() {
    let dir = tempfile::tempdir().unwrap();
    let (db, key, vkey) = signed_db(dir.path(), "example.org/deposits", 3);
    let plain = path(dir.path(), "plain");
    let out = cairn(&["backup", &db, &plain]).success();
    assert!(out.contains("the signer key was left out"), "{out}");
    assert!(!Path::new(&plain).join("signer.key").exists());
    cairn(&["signed-checkpoint", &plain]).error(2, &["has no signer key"]);
    cairn(&["sign-key", &plain, &key]).success();
    let note = cairn(&["signed-checkpoint", &plain]).success();
    cairn_stdin(&["verify-checkpoint", "--key", &vkey], note.as_bytes()).success();

    let with = path(dir.path(), "with");
    let json = cairn(&["backup", &db, &with, "--with-sign-key", "--json"]).success();
    assert!(json.contains(r#""signer_key":"copied""#), "{json}");
    #[cfg(unix)]
    assert_eq!(mode(&format!("{with}/signer.key")), 0o600);
    assert_eq!(
        cairn(&["signed-checkpoint", &with]).success(),
        cairn(&["signed-checkpoint", &db]).success()
    );
    let json = cairn(&["backup", &db, &path(dir.path(), "third"), "--json"]).success();
    assert!(json.contains(r#""signer_key":"left out""#), "{json}");
}
