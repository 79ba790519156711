//! Signed tile stores from the command line: `cairn publish` signs the
//! checkpoint with the database's key (or --sign-key), `cairn mirror
//! --verify-key` and `cairn prove --tiles --verify-key` accept it with the
//! right key and refuse, adopting and proving nothing, a checkpoint that is
//! unsigned, signed by another key, or altered.

use crate::support::{Dir, cairn, ingest, init, leaves, root_hex};
use cairn_core::HashKind;

/// A new key named `name`: (signer key file, verifier key file, verifier key).
fn keygen(dir: &Dir, name: &str, file: &str) -> (String, String, String) {
    let key = dir.path(&format!("{file}.key"));
    let vkey = cairn(&["keygen", "--name", name, "--out", &key])
        .success()
        .trim()
        .to_owned();
    let vkey_file = dir.file(&format!("{file}.vkey"), format!("{vkey}\n"));
    (key, vkey_file, vkey)
}

#[test]
fn a_signed_store_is_mirrored_and_proven_with_its_key_and_refused_without_it() {
    let dir = Dir::new();
    let (key, vkey_file, vkey) = keygen(&dir, "example.org/tiles", "log");
    let (_, other_vkey_file, _) = keygen(&dir, "example.org/tiles", "other");
    let db = dir.path("db");
    init(&db, 4, HashKind::Sha256, &["--sign-key", &key]);
    let l = leaves(1_500);
    ingest(&db, &l[..1_000], &[]).success();
    let public = dir.path("public");
    // The database's own key signs by default.
    let json = cairn(&["publish", &db, "--to", &public, "--json"]).json();
    let key_id = &vkey.split('+').nth(1).unwrap();
    assert_eq!(
        json["signed_by"],
        format!("example.org/tiles+{key_id}").as_str()
    );
    // The object is the database's signed checkpoint, what GET
    // /v1/checkpoint serves.
    let object = std::fs::read_to_string(format!("{public}/checkpoint")).unwrap();
    assert_eq!(object, cairn(&["signed-checkpoint", &db]).success());
    cairn(&[
        "verify-checkpoint",
        "--key",
        &vkey,
        &format!("{public}/checkpoint"),
    ])
    .success();

    // Refused, exit 1, the object named, nothing created or adopted.
    let replica = dir.path("replica");
    let checkpoint = format!("{public}/checkpoint");
    cairn(&[
        "mirror",
        "--from",
        &public,
        &replica,
        "--verify-key",
        &other_vkey_file,
    ])
    .error(1, &[&checkpoint, "no known signature"]);
    assert!(!std::path::Path::new(&replica).exists(), "nothing created");
    cairn(&[
        "prove",
        "--tiles",
        &public,
        "--index",
        "7",
        "--verify-key",
        &other_vkey_file,
    ])
    .error(1, &[&checkpoint, "no known signature"]);

    // The right key: adopted and proven.
    let mirrored = cairn(&[
        "mirror",
        "--from",
        &public,
        &replica,
        "--verify-key",
        &vkey_file,
        "--json",
    ])
    .json();
    let root = root_hex(4, HashKind::Sha256, &l[..1_000]);
    assert_eq!(mirrored["size"].as_u64(), Some(1_000));
    assert_eq!(mirrored["root"], root.as_str());
    let proof = cairn(&[
        "prove",
        "--tiles",
        &public,
        "--index",
        "7",
        "--verify-key",
        &vkey_file,
    ])
    .success();
    let file = dir.file("proof.json", proof);
    cairn(&[
        "verify", "--arity", "4", "--hash", "sha256", "--root", &root, "--size", "1000", &file,
    ])
    .success();
    // A trusted-keys file of several keys, and repeated --verify-key.
    let both = dir.file(
        "trusted",
        format!(
            "# logs we follow\n{}\n{vkey}\n",
            std::fs::read_to_string(&other_vkey_file).unwrap().trim()
        ),
    );
    cairn(&[
        "prove",
        "--tiles",
        &public,
        "--index",
        "7",
        "--verify-key",
        &both,
    ])
    .success();
    cairn(&[
        "prove",
        "--tiles",
        &public,
        "--index",
        "7",
        "--verify-key",
        &other_vkey_file,
        "--verify-key",
        &vkey_file,
    ])
    .success();

    // The store grows; each altered checkpoint is refused and the mirror
    // stays where it was.
    ingest(&db, &l[1_000..], &[]).success();
    cairn(&["publish", &db, "--to", &public]).success();
    let good = std::fs::read_to_string(&checkpoint).unwrap();
    let unsigned = format!(
        "cairn tiles v1\narity 4\nhash sha256\nsize 1500\nroot {}\n",
        root_hex(4, HashKind::Sha256, &l)
    );
    let flipped = {
        let at = good.trim_end().len() - 2;
        let mut bytes = good.clone().into_bytes();
        bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
        String::from_utf8(bytes).unwrap()
    };
    for (bad, want) in [
        (unsigned.as_str(), "the checkpoint is unsigned"),
        (flipped.as_str(), "bad signature"),
        (&good.replace("hash=sha256", "hash=blake3"), "bad signature"),
        (&good.replace("\n1500\n", "\n1499\n"), "bad signature"),
    ] {
        std::fs::write(&checkpoint, bad).unwrap();
        cairn(&[
            "mirror",
            "--from",
            &public,
            &replica,
            "--verify-key",
            &vkey_file,
        ])
        .error(1, &[&checkpoint, want]);
        cairn(&[
            "prove",
            "--tiles",
            &public,
            "--index",
            "7",
            "--verify-key",
            &vkey_file,
        ])
        .error(1, &[&checkpoint, want]);
        let size = cairn(&["root", &replica, "--json"]).json()["size"].as_u64();
        assert_eq!(size, Some(1_000), "nothing adopted after {want}");
    }
    // Without a key, the transport is trusted: the unsigned form is read.
    std::fs::write(&checkpoint, &unsigned).unwrap();
    cairn(&["prove", "--tiles", &public, "--index", "7"]).success();
    std::fs::write(&checkpoint, &good).unwrap();
    let caught_up = cairn(&[
        "mirror",
        "--from",
        &public,
        &replica,
        "--verify-key",
        &vkey_file,
        "--json",
    ])
    .json();
    assert_eq!(caught_up["size"].as_u64(), Some(1_500));
    assert_eq!(caught_up["adopted"].as_u64(), Some(500));

    // A copy without the key (a backup leaves it out) cannot unsign it.
    let copy = dir.path("copy");
    cairn(&["backup", &db, &copy]).success();
    cairn(&["publish", &copy, "--to", &public])
        .error(2, &["signed by example.org/tiles+", "--sign-key"]);
    assert_eq!(std::fs::read_to_string(&checkpoint).unwrap(), good);
    // --verify-key files that cannot be used.
    cairn(&[
        "mirror",
        "--from",
        &public,
        &replica,
        "--verify-key",
        &dir.path("missing"),
    ])
    .error(4, &["--verify-key", "missing"]);
    let empty = dir.file("empty.vkey", "# none\n");
    cairn(&[
        "mirror",
        "--from",
        &public,
        &replica,
        "--verify-key",
        &empty,
    ])
    .error(2, &["holds no verifier key"]);
    cairn(&["mirror", "--from", &public, &replica, "--verify-key", &key])
        .error(2, &["signer (private) key"]);
}

#[test]
fn publish_signs_with_a_given_key_and_an_empty_tree_publishes_nothing() {
    let dir = Dir::new();
    let (key, vkey_file, _) = keygen(&dir, "example.org/given", "given");
    let db = dir.path("db");
    init(&db, 2, HashKind::Blake3, &[]);
    let public = dir.path("public");
    let out = cairn(&["publish", &db, "--to", &public, "--sign-key", &key]).success();
    assert!(
        out.contains("published nothing") && out.contains("no root to sign"),
        "{out}"
    );
    assert!(!std::path::Path::new(&format!("{public}/checkpoint")).exists());
    ingest(&db, &leaves(300), &[]).success();
    let out = cairn(&["publish", &db, "--to", &public, "--sign-key", &key]).success();
    assert!(out.contains("signed by example.org/given+"), "{out}");
    let replica = dir.path("replica");
    cairn(&[
        "mirror",
        "--from",
        &public,
        &replica,
        "--verify-key",
        &vkey_file,
    ])
    .success();
    // A database without a key publishes unsigned, as before.
    let plain = dir.path("plain");
    init(&plain, 2, HashKind::Blake3, &[]);
    ingest(&plain, &leaves(300), &[]).success();
    let json = cairn(&[
        "publish",
        &plain,
        "--to",
        &dir.path("plain-public"),
        "--json",
    ])
    .json();
    assert_eq!(json["signed_by"], serde_json::Value::Null);
    cairn(&[
        "mirror",
        "--from",
        &dir.path("plain-public"),
        &dir.path("r2"),
        "--verify-key",
        &vkey_file,
    ])
    .error(1, &["the checkpoint is unsigned"]);
}
