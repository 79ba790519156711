//! A database of several trees published, mirrored and backed up whole:
//! every tree's tiles under `trees/NAME/` and one forest checkpoint at one
//! block; a mirror that adopts a checkpoint whole or not at all, refusing
//! a damaged checkpoint or tile by name; a backup that opens to the same
//! trees and blocks.

use std::process::{Command, Stdio};

use cairn_core::{Hash, HashKind};
use cairn_testkit::s3::S3Server;

use crate::support::{Dir, bin, cairn, cairn_env, cairn_stdin, root_hex};

/// Leaves of one tree: distinct per seed.
fn values(seed: u64, count: usize) -> Vec<Hash> {
    cairn_testkit::leaves(seed, count)
}

/// A database of three trees, and the leaves each holds.
fn forest(dir: &Dir, name: &str, blocks: &[(u64, [usize; 3])]) -> (String, [Vec<Hash>; 3]) {
    let db = dir.path(name);
    cairn(&["init", &db]).success();
    cairn(&[
        "tree", "add", &db, "notes", "--arity", "2", "--hash", "blake3",
    ])
    .success();
    cairn(&[
        "tree", "add", &db, "deposits", "--arity", "4", "--hash", "sha256",
    ])
    .success();
    cairn(&[
        "tree",
        "add",
        &db,
        "wide",
        "--arity",
        "16",
        "--hash",
        "keccak256",
    ])
    .success();
    let mut held: [Vec<Hash>; 3] = Default::default();
    append(&db, &mut held, blocks);
    (db, held)
}

const NAMES: [&str; 3] = ["notes", "deposits", "wide"];

/// Appends blocks of the given counts per tree (one `cairn ingest` per
/// tree and block: the block's number is the first tree's; the others'
/// go in plain appends before it).
fn append(db: &str, held: &mut [Vec<Hash>; 3], blocks: &[(u64, [usize; 3])]) {
    for &(block, counts) in blocks {
        // The last tree's ingest carries the block: the others are appended
        // first, so the block names every tree's head.
        for (i, &count) in counts.iter().enumerate() {
            let from = held[i].len();
            let more = values(i as u64 * 1_000_000 + from as u64 + 1, count);
            held[i].extend_from_slice(&more);
            let block_text = block.to_string();
            let mut args = vec!["ingest", db, "--tree", NAMES[i]];
            if i == 2 {
                args.extend(["--block", &block_text]);
            }
            args.push("-");
            cairn_stdin(&args, &bin(&more)).success();
        }
    }
}

/// Each tree's (size, root) as `cairn trees --json` lists them.
fn heads(db: &str) -> Vec<(String, u64, String)> {
    let out = cairn(&["trees", db, "--json"]).success();
    let mut heads: Vec<(String, u64, String)> = out
        .lines()
        .flat_map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            match v.as_array() {
                Some(items) => items.clone(),
                None => v
                    .get("trees")
                    .and_then(|t| t.as_array().cloned())
                    .unwrap_or_else(|| vec![v.clone()]),
            }
        })
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_owned(),
                t["size"].as_u64().unwrap(),
                t["root"].as_str().unwrap_or("none").to_owned(),
            )
        })
        .collect();
    heads.sort();
    heads
}

fn want_heads(held: &[Vec<Hash>; 3]) -> Vec<(String, u64, String)> {
    let params = [
        (2, HashKind::Blake3),
        (4, HashKind::Sha256),
        (16, HashKind::Keccak256),
    ];
    let mut want: Vec<(String, u64, String)> = NAMES
        .iter()
        .zip(held)
        .zip(params)
        .map(|((name, leaves), (n, hash))| {
            (
                (*name).to_owned(),
                leaves.len() as u64,
                root_hex(n, hash, leaves),
            )
        })
        .collect();
    want.sort();
    want
}

#[test]
fn a_forest_publishes_and_mirrors_whole_and_damage_is_refused_by_name() {
    let dir = Dir::new();
    let (db, mut held) = forest(&dir, "db", &[(10, [3_000, 700, 5]), (11, [1, 300, 0])]);
    assert_eq!(heads(&db), want_heads(&held));
    let public = dir.path("public");
    let json = cairn(&["publish", &db, "--to", &public, "--json"]).json();
    assert_eq!(json["block"].as_u64(), Some(11));
    assert_eq!(json["trees"].as_array().unwrap().len(), 3);
    // Every tree's prefix is a store of one tree: proofs come from it.
    let proof = cairn(&[
        "prove",
        "--tiles",
        &format!("{public}/trees/notes"),
        "--index",
        "2999",
    ])
    .success();
    assert!(proof.contains("\"index\""), "{proof}");
    let replica = dir.path("replica");
    let mirrored = cairn(&["mirror", "--from", &public, &replica, "--json"]).json();
    assert_eq!(mirrored["block"].as_u64(), Some(11));
    assert_eq!(
        mirrored["adopted"].as_u64(),
        Some(3_000 + 1 + 700 + 300 + 5)
    );
    assert_eq!(heads(&replica), want_heads(&held));
    // Again: nothing new.
    let again = cairn(&["mirror", "--from", &public, &replica, "--json"]).json();
    assert_eq!(again["adopted"].as_u64(), Some(0));
    // More blocks, published and mirrored: only what is new.
    append(&db, &mut held, &[(12, [500, 0, 70])]);
    cairn(&["publish", &db, "--to", &public]).success();
    let more = cairn(&["mirror", "--from", &public, &replica, "--json"]).json();
    assert_eq!(more["adopted"].as_u64(), Some(570));
    assert_eq!(heads(&replica), want_heads(&held));
    // What was published is final, in every tree.
    cairn(&["truncate", &db, "--to-block", "11"]).fails(2, "");

    // One tree of the store, mirrored alone into a database of one tree.
    let one = dir.path("one");
    cairn(&["mirror", "--from", &public, "--tree", "deposits", &one]).success();
    assert_eq!(
        cairn(&["root", &one]).success().trim(),
        root_hex(4, HashKind::Sha256, &held[1])
    );

    // A damaged leaf tile of one tree: refused, naming it; nothing adopted.
    let damaged = dir.path("damaged");
    copy_dir(&public, &damaged);
    let tile = format!("{damaged}/trees/notes/tile/0/005");
    let mut bytes = std::fs::read(&tile).unwrap();
    bytes[40] ^= 1;
    std::fs::write(&tile, bytes).unwrap();
    let fresh = dir.path("fresh");
    cairn(&["mirror", "--from", &damaged, &fresh])
        .error(1, &["trees/notes", "tile/0/005", "leaves 1280..1536"]);
    // The fresh mirror holds no leaf of any tree.
    for (_, size, _) in heads(&fresh) {
        assert_eq!(size, 0);
    }
    // A damaged forest checkpoint: its root no longer names the entries.
    let forged = dir.path("forged");
    copy_dir(&public, &forged);
    let checkpoint = format!("{forged}/checkpoint");
    let text = std::fs::read_to_string(&checkpoint).unwrap();
    std::fs::write(&checkpoint, text.replace("trees 3", "trees 2")).unwrap();
    cairn(&["mirror", "--from", &forged, &dir.path("fresh2")]).error(1, &["forest/", "2 trees"]);
    std::fs::write(&checkpoint, text.replace("\nroot 0x", "\nroot 0x0")).unwrap();
    cairn(&["mirror", "--from", &forged, &dir.path("fresh3")]).error(1, &["checkpoint"]);
    // An entries object changed: it no longer hashes to the root.
    let entries = std::fs::read_dir(format!("{forged}/forest"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::write(&checkpoint, &text).unwrap();
    let lines = std::fs::read_to_string(&entries).unwrap();
    std::fs::write(&entries, lines.replacen("size=", "size=1", 1)).unwrap();
    cairn(&["mirror", "--from", &forged, &dir.path("fresh4")]).error(1, &["forest/"]);
    // A store of one tree is not mirrored as a forest, nor the reverse.
    cairn(&[
        "mirror",
        "--from",
        &format!("{public}/trees/notes"),
        &replica,
    ])
    .error(2, &["not empty"]);
}

#[test]
fn a_signed_forest_checkpoint_is_checked_against_the_key() {
    let dir = Dir::new();
    let (db, held) = forest(&dir, "db", &[(1, [100, 200, 300])]);
    let key = dir.path("db.key");
    let vkey_text = cairn(&["keygen", "--name", "example.org/forest", "--out", &key]).success();
    let vkey = dir.file("db.vkey", vkey_text);
    let public = dir.path("public");
    let json = cairn(&[
        "publish",
        &db,
        "--to",
        &public,
        "--sign-key",
        &key,
        "--json",
    ])
    .json();
    assert!(
        json["signed_by"]
            .as_str()
            .unwrap()
            .starts_with("example.org/forest+")
    );
    let replica = dir.path("replica");
    cairn(&["mirror", "--from", &public, &replica, "--verify-key", &vkey]).success();
    assert_eq!(heads(&replica), want_heads(&held));
    // A changed block line: the signature no longer verifies.
    let checkpoint = format!("{public}/checkpoint");
    let text = std::fs::read_to_string(&checkpoint).unwrap();
    assert!(text.contains("cairn-forest block=1 hash=0x"), "{text}");
    std::fs::write(&checkpoint, text.replace("block=1 ", "block=2 ")).unwrap();
    cairn(&[
        "mirror",
        "--from",
        &public,
        &dir.path("r2"),
        "--verify-key",
        &vkey,
    ])
    .error(1, &["checkpoint", "signature"]);
    // Another key's checkpoint.
    let other = dir.path("other.key");
    cairn(&["keygen", "--name", "example.org/forest", "--out", &other]).success();
    std::fs::write(&checkpoint, &text).unwrap();
    let elsewhere = dir.path("elsewhere");
    cairn(&["publish", &db, "--to", &elsewhere, "--sign-key", &other]).success();
    cairn(&[
        "mirror",
        "--from",
        &elsewhere,
        &dir.path("r3"),
        "--verify-key",
        &vkey,
    ])
    .error(1, &["signature"]);
    // One tree's mirror checks its entry against the signed checkpoint too.
    cairn(&[
        "mirror",
        "--from",
        &elsewhere,
        "--tree",
        "notes",
        &dir.path("r4"),
        "--verify-key",
        &vkey,
    ])
    .error(1, &["signature"]);
    cairn(&[
        "mirror",
        "--from",
        &public,
        "--tree",
        "notes",
        &dir.path("r5"),
        "--verify-key",
        &vkey,
    ])
    .success();
}

#[test]
fn a_forest_publishes_to_s3_and_mirrors_from_it() {
    let Some(s3) = S3Server::start("tiles") else {
        return;
    };
    let env = s3.env();
    let endpoint = s3.endpoint();
    let dir = Dir::new();
    let (db, held) = forest(&dir, "db", &[(5, [2_000, 10, 600])]);
    let to = "s3://tiles/forest";
    cairn_env(
        &["publish", &db, "--to", to, "--s3-endpoint", &endpoint],
        b"",
        &env,
    )
    .success();
    let replica = dir.path("replica");
    let out = cairn_env(
        &[
            "mirror",
            "--from",
            to,
            &replica,
            "--s3-endpoint",
            &endpoint,
            "--json",
        ],
        b"",
        &env,
    )
    .json();
    assert_eq!(out["adopted"].as_u64(), Some(2_610));
    assert_eq!(heads(&replica), want_heads(&held));
}

/// A mirror killed at any point opens at the checkpoint before or the one
/// it was adopting, never in between, and a second run completes it.
#[test]
fn a_forest_mirror_killed_mid_way_restarts_cleanly() {
    let dir = Dir::new();
    let (db, held) = forest(&dir, "db", &[(1, [200_000, 100_000, 150_000])]);
    let public = dir.path("public");
    cairn(&["publish", &db, "--to", &public]).success();
    for delay_ms in [50u64, 300, 900] {
        let replica = dir.path(&format!("replica-{delay_ms}"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_cairn"))
            .args(["mirror", "--from", &public, &replica])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        child.kill().expect("SIGKILL");
        child.wait().unwrap();
        if cairn_db::is_forest(std::path::Path::new(&replica)) {
            let sizes: Vec<u64> = heads(&replica).iter().map(|h| h.1).collect();
            let none = sizes.iter().all(|&s| s == 0);
            assert!(
                none || heads(&replica) == want_heads(&held),
                "after a kill at {delay_ms} ms: {sizes:?}"
            );
        }
        let _ = std::fs::remove_dir_all(&replica).ok().filter(|_| {
            // A directory the kill left before it was a database is
            // removed; one that is a database is resumed.
            !cairn_db::is_forest(std::path::Path::new(&replica))
        });
        cairn(&["mirror", "--from", &public, &replica]).success();
        assert_eq!(heads(&replica), want_heads(&held));
    }
}

#[test]
fn a_forest_backs_up_whole_and_the_copy_goes_on_from_its_blocks() {
    let dir = Dir::new();
    let (db, mut held) = forest(&dir, "db", &[(3, [1_000, 20, 3]), (4, [5, 0, 7])]);
    let copy = dir.path("copy");
    let json = cairn(&["backup", &db, &copy, "--json"]).json();
    assert_eq!(json["block"].as_u64(), Some(4));
    assert_eq!(json["trees"].as_array().unwrap().len(), 3);
    assert_eq!(heads(&copy), want_heads(&held));
    // The copy holds the blocks: a rollback by block works there.
    let heads_db = cairn(&["heads", &db, "--json"]).success();
    assert_eq!(cairn(&["heads", &copy, "--json"]).success(), heads_db);
    cairn(&["truncate", &copy, "--to-block", "3"]).success();
    let mut back = held.clone();
    back[0].truncate(1_000);
    back[2].truncate(3);
    assert_eq!(heads(&copy), want_heads(&back));
    // The original goes on; a copy restored from it goes on from its blocks.
    append(&db, &mut held, &[(5, [10, 10, 10])]);
    let copy2 = dir.path("copy2");
    cairn(&["backup", &db, &copy2]).success();
    assert_eq!(heads(&copy2), want_heads(&held));
    append(&copy2, &mut held.clone(), &[(6, [1, 1, 1])]);
    // One tree alone, as a database of one tree.
    let one = dir.path("one");
    cairn(&["backup", &db, &one, "--tree", "deposits"]).success();
    assert_eq!(
        cairn(&["root", &one]).success().trim(),
        root_hex(4, HashKind::Sha256, &held[1])
    );
    cairn(&["backup", &db, &copy]).error(2, &["not empty"]);
    // Repair acts on one tree; a database of several refuses it.
    cairn(&["repair", &db, "--from", &dir.path("nowhere")])
        .error(2, &["several trees", "cairn backup"]);
}

fn copy_dir(from: &str, to: &str) {
    let status = Command::new("cp").args(["-r", from, to]).status().unwrap();
    assert!(status.success());
}
