//! Following a chain from the command line: `ingest --block`, `heads`,
//! `truncate`, `finalize`, `prove --root` and `stats`, with their exit codes.

use cairn_core::HashKind;
use cairn_core::hex::to_hex;

use crate::support::{Dir, cairn, ingest, init, leaves, root_hex};

#[test]
fn a_follower_tags_blocks_rolls_back_a_reorg_and_proves_against_an_older_root() {
    let dir = Dir::new();
    let db = dir.path("db");
    init(&db, 2, HashKind::Blake3, &["--finality", "explicit"]);
    let l = leaves(30);
    // Blocks 10, 11 (empty), 12, 13.
    ingest(
        &db,
        &l[..10],
        &["--block", "10", "--block-hash", &to_hex(&[10; 32])],
    )
    .success();
    cairn(&["ingest", &db, "/dev/null", "--block", "11"]).success();
    ingest(&db, &l[10..20], &["--block", "12"]).success();
    ingest(&db, &l[20..25], &["--block", "13"]).success();
    let heads = cairn(&["heads", &db, "--json"]).json();
    let list = heads["heads"].as_array().unwrap();
    assert_eq!(list.len(), 4);
    assert_eq!(list[0]["block_hash"], to_hex(&[10; 32]).as_str());
    assert_eq!(
        (list[1]["block"].as_u64(), list[1]["size"].as_u64()),
        (Some(11), Some(10))
    );
    assert_eq!(
        list[2]["root"],
        root_hex(2, HashKind::Blake3, &l[..20]).as_str()
    );
    // A repeated block number is refused and appends nothing.
    ingest(&db, &l[25..26], &["--block", "13"]).error(2, &["block 13 does not follow"]);
    // Prove leaf 3 against block 12's root, and verify it against that head.
    let root12 = list[2]["root"].as_str().unwrap().to_owned();
    let proof = cairn(&["prove", &db, "--index", "3", "--root", &root12]).success();
    let file = dir.file("proof.json", proof);
    cairn(&[
        "verify", "--arity", "2", "--hash", "blake3", "--root", &root12, "--size", "20", &file,
    ])
    .success();
    cairn(&["prove", &db, "--index", "3", "--root", &to_hex(&[9; 32])])
        .error(2, &["has no head with root"]);
    // The chain reorganises after block 11: 12 and 13 go, their values come back.
    let json = cairn(&["truncate", &db, "--to-block", "11", "--json"]).json();
    assert_eq!(
        (json["size"].as_u64(), json["removed"].as_u64()),
        (Some(10), Some(15))
    );
    assert_eq!(
        json["root"],
        root_hex(2, HashKind::Blake3, &l[..10]).as_str()
    );
    assert_eq!(
        cairn(&["heads", &db, "--json"]).json()["heads"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    ingest(&db, &l[20..25], &["--block", "12"]).success();
    let mut want = l[..10].to_vec();
    want.extend_from_slice(&l[20..25]);
    assert_eq!(
        cairn(&["root", &db]).success().trim(),
        root_hex(2, HashKind::Blake3, &want)
    );
    // Finality: nothing below it rolls back.
    let json = cairn(&["finalize", &db, "--to-block", "11", "--json"]).json();
    assert_eq!(json["finalized_size"].as_u64(), Some(10));
    cairn(&["truncate", &db, "--to", "9"]).error(2, &["the first 10 are final"]);
    let stats = cairn(&["stats", &db, "--json"]).json();
    assert_eq!(
        (
            stats["size"].as_u64(),
            stats["finalized_size"].as_u64(),
            stats["tagged_heads"].as_u64()
        ),
        (Some(15), Some(10), Some(3))
    );
    cairn(&["truncate", &db, "--to", "16"]).error(2, &["the tree holds 15"]);
    cairn(&["truncate", &db, "--to-block", "5"])
        .error(2, &["no block-tagged head at or below block 5"]);
    cairn(&["check", &db]).success();
}

#[test]
fn a_tagged_ingest_is_one_commit() {
    let dir = Dir::new();
    let db = dir.path("db");
    init(&db, 4, HashKind::Blake3, &[]);
    ingest(&db, &leaves(10), &["--block", "1", "--block-size", "4"])
        .error(2, &["more than --block-size (4) leaves"]);
    assert_eq!(
        cairn(&["stats", &db, "--json"]).json()["size"].as_u64(),
        Some(0)
    );
    cairn(&[
        "ingest",
        &db,
        "--block-hash",
        &to_hex(&[1; 32]),
        "/dev/null",
    ])
    .fails(2, "error");
    // By default a checkpoint finalizes what it covers.
    ingest(&db, &leaves(10), &["--block", "1"]).success();
    cairn(&["checkpoint", &db]).success();
    cairn(&["truncate", &db, "--to", "5"]).error(2, &["the first 10 are final"]);
}
