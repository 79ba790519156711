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
        // A character well inside the base64 signature: the last one
        // before the padding carries bits past the last byte, which a
        // flip could set (a refusal as non-canonical, not a bad
        // signature).
        let at = good.trim_end().len() - 10;
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

/// A Tornado-style pool (MiMCSponge, an imt of depth 20 whose zero is
/// keccak256("tornado") mod p) published as signed tiles: its checkpoint
/// names the tree, proofs from the tiles verify as the pool's, and a
/// mirror with the key is created with the pool's kind and follows it.
#[test]
fn a_fixed_depth_pool_is_published_proven_and_mirrored_from_signed_tiles() {
    let dir = Dir::new();
    let (key, vkey_file, vkey) = keygen(&dir, "example.org/pool", "pool");
    let zero = "21663839004416932945382355908790599225266501822907911457504978515578255421292";
    let db = dir.path("db");
    let imt = [
        "--kind",
        "imt",
        "--depth",
        "20",
        "--zero",
        zero,
        "--sign-key",
        &key,
    ];
    init(&db, 2, HashKind::MiMCSponge, &imt);
    // The empty pool has a root (the contract's zeros(20)) and a signed
    // checkpoint, and publishing it writes one.
    let public = dir.path("public");
    let empty = cairn(&["publish", &db, "--to", &public, "--json"]).json();
    assert_eq!(empty["size"].as_u64(), Some(0));
    assert_eq!(
        empty["root"],
        "0x29d7ed391256ccc3ea596c86e933b89ff339d25ea8ddced975ae2fe30b5296d4"
    );
    let l = leaves(300);
    ingest(&db, &l, &[]).success();
    let json = cairn(&["publish", &db, "--to", &public, "--json"]).json();
    let root = json["root"].as_str().unwrap().to_owned();
    let object = std::fs::read_to_string(format!("{public}/checkpoint")).unwrap();
    assert!(
        object.contains("cairn-tree kind=imt arity=2 hash=mimcsponge depth=20 zero=0x2fe54c60"),
        "{object}"
    );
    assert_eq!(object, cairn(&["signed-checkpoint", &db]).success());
    cairn(&[
        "verify-checkpoint",
        "--key",
        &vkey,
        &format!("{public}/checkpoint"),
    ])
    .success();
    // Proofs from the tiles are the pool's: version 2, verified against
    // the trusted imt.
    let proof = cairn(&[
        "prove",
        "--tiles",
        &public,
        "--index",
        "257",
        "--verify-key",
        &vkey_file,
    ])
    .success();
    assert_eq!(proof, cairn(&["prove", &db, "--index", "257"]).success());
    let file = dir.file("proof.json", proof);
    cairn(&[
        "verify",
        "--arity",
        "2",
        "--hash",
        "mimcsponge",
        "--kind",
        "imt",
        "--depth",
        "20",
        "--zero",
        zero,
        "--root",
        &root,
        "--size",
        "300",
        &file,
    ])
    .success();
    // A mirror takes the pool's kind, and follows it as it grows.
    let replica = dir.path("replica");
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
    assert_eq!(
        (mirrored["size"].as_u64(), &mirrored["root"]),
        (Some(300), &json["root"])
    );
    let stats = cairn(&["stats", &replica, "--json"]).json();
    assert_eq!(stats["kind"], "imt", "{stats}");
    ingest(&db, &leaves(400)[300..], &[]).success();
    cairn(&["publish", &db, "--to", &public]).success();
    let again = cairn(&["mirror", "--from", &public, &replica, "--json"]).json();
    assert_eq!(again["adopted"].as_u64(), Some(100));
    assert_eq!(
        cairn(&["root", &replica, "--json"]).json()["root"],
        cairn(&["root", &db, "--json"]).json()["root"]
    );
}
