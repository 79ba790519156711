//! `cairn publish` and `cairn prove --tiles`: proofs from published tiles
//! verify against the database's head; a damaged tile and a forked tree
//! are refused with their exit codes.

use cairn_core::HashKind;

use crate::support::{Dir, cairn, ingest, init, leaves, root_hex};

#[test]
fn proofs_from_published_tiles_verify_and_damage_is_refused() {
    let dir = Dir::new();
    let db = dir.path("db");
    let public = dir.path("public");
    init(&db, 4, HashKind::Blake3, &["--finality", "explicit"]);
    let l = leaves(3_000);
    ingest(&db, &l[..2_000], &[]).success();
    let json = cairn(&[
        "publish",
        &db,
        "--to",
        &format!("file://{public}"),
        "--json",
    ])
    .json();
    assert_eq!(json["size"].as_u64(), Some(2_000));
    let root = root_hex(4, HashKind::Blake3, &l[..2_000]);
    assert_eq!(json["root"], root.as_str());
    for index in ["0", "1023", "1999"] {
        let proof = cairn(&["prove", "--tiles", &public, "--index", index]).success();
        let file = dir.file("proof.json", proof);
        cairn(&[
            "verify", "--arity", "4", "--hash", "blake3", "--root", &root, "--size", "2000", &file,
        ])
        .success();
    }
    cairn(&["prove", "--tiles", &public, "--index", "2000"]).error(2, &["out of range"]);
    // A copy of the database as published so far.
    let older = dir.path("older");
    cairn(&["backup", &db, &older]).success();
    // Publishing again after more leaves writes only what changed.
    ingest(&db, &l[2_000..], &[]).success();
    let again = cairn(&["publish", &db, "--to", &public, "--json"]).json();
    assert!(again["objects"].as_u64().unwrap() < json["objects"].as_u64().unwrap());
    assert_eq!(again["signed_by"], serde_json::Value::Null);
    // A damaged tile is refused by name.
    let tile = format!("{public}/tile/0/001");
    let mut bytes = std::fs::read(&tile).unwrap();
    bytes[0] ^= 1;
    std::fs::write(&tile, bytes).unwrap();
    cairn(&["prove", "--tiles", &public, "--index", "300"])
        .error(4, &["tile/0/001", "do not match"]);
    // What was published is final: no rollback contradicts the store.
    cairn(&["truncate", &db, "--to", "2500"])
        .error(2, &["the first 3000 are final", "publishing them as tiles"]);
    cairn(&["truncate", &db, "--to", "3000"]).success();
    // A tree behind what was published (an older copy) cannot publish there.
    cairn(&["publish", &older, "--to", &public])
        .error(2, &["rolled back below what was published"]);
    // --finalized publishes only what can never be rolled back.
    let chain = dir.path("chain");
    init(&chain, 4, HashKind::Blake3, &["--finality", "explicit"]);
    ingest(&chain, &l, &[]).success();
    cairn(&["finalize", &chain, "--to", "1000"]).success();
    let fin = cairn(&[
        "publish",
        &chain,
        "--to",
        &dir.path("final"),
        "--finalized",
        "--json",
    ])
    .json();
    assert_eq!(fin["size"].as_u64(), Some(1_000));
    assert_eq!(
        fin["root"],
        root_hex(4, HashKind::Blake3, &l[..1_000]).as_str()
    );
    // Above the published size, the chain can still be rolled back.
    cairn(&["truncate", &chain, "--to", "1000"]).success();
    cairn(&["publish", &db, "--to", "gs://bucket/prefix"]).error(2, &["gs:// is not supported"]);
    cairn(&["publish", &db, "--to", "https://example.org/x"]).error(2, &["read-only"]);
}
