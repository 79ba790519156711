//! The damage an independent fault-injection run found cairn trusting,
//! each as the commands a user runs see it now: every command that opens
//! the database refuses it with exit 4 naming the file and offset, `cairn
//! check` reports the same, and no acknowledged value is accepted again.
//! (The states after the checkpoint are built in this process through
//! `cairn_db`, as a server that appended them and stopped would leave them.)

use std::path::Path;
use std::time::Duration;

use cairn_core::{Arity, Hash, HashKind, TreeConfig};
use cairn_db::{BlockTag, Db, DbConfig};

use crate::support::*;

const WAIT: Duration = Duration::from_secs(30);

fn flip(path: &str, offset: u64) {
    let mut bytes = std::fs::read(path).expect("read file to damage");
    bytes[offset as usize] ^= 0x04;
    std::fs::write(path, bytes).expect("write damaged file");
}

fn hex_of(value: &Hash) -> String {
    cairn_core::hex::to_hex(value)
}

/// A database of arity 4 with 1,024 leaves per log file: `before` leaves
/// checkpointed, then `after` blocks of 10 leaves each appended and
/// acknowledged, then closed (as a server stopped by SIGTERM leaves it).
fn database(dir: &Dir, before: usize, after: usize) -> (String, Vec<Hash>) {
    let path = dir.path("db");
    let mut config = DbConfig::new(TreeConfig::new(Arity::new(4).unwrap(), HashKind::Blake3));
    config.store.log_shift = 10;
    config.store.flush_interval = None;
    config.store.checkpoint = Default::default();
    let db = Db::create(&path, config).unwrap();
    let all = leaves(before + 10 * after);
    let mut block = 100;
    if before > 0 {
        db.append_tagged(&all[..before], BlockTag::number(block))
            .unwrap()
            .token
            .wait(WAIT)
            .unwrap();
        block += 1;
    }
    db.checkpoint().unwrap();
    for chunk in all[before..].chunks(10) {
        db.append_tagged(chunk, BlockTag::number(block))
            .unwrap()
            .token
            .wait(WAIT)
            .unwrap();
        block += 1;
    }
    db.close().unwrap();
    (path, all)
}

/// Every reading command refuses the damaged database, naming `file`;
/// `cairn check` too; ingesting `value` again is refused as well (the
/// database does not open), not accepted.
fn refused_everywhere(db: &str, file: &str, offset: Option<u64>, value: &Hash) {
    let mut needles = vec![file.to_owned()];
    if let Some(offset) = offset {
        needles.push(format!("offset {offset}"));
    }
    let needles: Vec<&str> = needles.iter().map(String::as_str).collect();
    cairn(&["root", db]).error(4, &needles);
    cairn(&["contains", db, &hex_of(value)]).error(4, &needles);
    cairn(&["stats", db]).error(4, &needles);
    let check = cairn(&["check", "--json", db]);
    assert_eq!(check.code, 4, "check: {}", check.stderr);
    let json: serde_json::Value = serde_json::from_str(&check.out()).unwrap();
    assert_eq!(json["ok"], false);
    assert!(
        json["file"].as_str().unwrap().ends_with(file)
            || json["error"].as_str().unwrap().contains(file),
        "{json}"
    );
    cairn_stdin(
        &["ingest", db, "--format", "hex", "-"],
        hex_of(value).as_bytes(),
    )
    .error(4, &needles);
}

/// Found by the fault-injection run: one bit flipped in a stored level
/// node, and the server answered a wrong root (its /healthz ok).
#[test]
fn a_flipped_level_node_is_refused_not_served() {
    let dir = Dir::new();
    let (db, all) = database(&dir, 1000, 0);
    let level1 = format!("{db}/levels/level-01.nodes");
    flip(&level1, 4096 + 32 * 7 + 3);
    refused_everywhere(&db, "level-01.nodes", Some(4096), &all[3]);
    cairn(&["serve", &db, "--listen", "127.0.0.1:0"]).error(4, &["level-01.nodes"]);
}

/// Found by the fault-injection run: a bit flipped in the last
/// acknowledged frame, and its leaves were gone while `check` said ok and
/// the values were accepted again.
#[test]
fn a_flipped_last_acknowledged_frame_is_refused() {
    let dir = Dir::new();
    let (db, all) = database(&dir, 100, 3);
    // The frames after the checkpoint: slots 1, 2 and 3 of log file 0.
    let log = format!("{db}/log/000000000000.log");
    let frames = 4096 + 32 * 1024;
    flip(&log, frames + 32 * 3 + 9);
    refused_everywhere(&db, "000000000000.log", Some(frames + 32 * 3), &all[125]);
}

/// Found by the fault-injection run: the frames after the checkpoint
/// zeroed, or cut off, lost every acknowledged leaf since it.
#[test]
fn frames_after_the_checkpoint_zeroed_or_cut_are_refused() {
    let frames = 4096 + 32 * 1024u64;
    let dir = Dir::new();
    let (db, all) = database(&dir, 100, 3);
    let log = format!("{db}/log/000000000000.log");
    let mut bytes = std::fs::read(&log).unwrap();
    let len = bytes.len();
    bytes[frames as usize + 32..len].fill(0);
    std::fs::write(&log, &bytes).unwrap();
    refused_everywhere(&db, "000000000000.log", Some(frames + 32), &all[105]);

    let dir = Dir::new();
    let (db, all) = database(&dir, 100, 3);
    let log = format!("{db}/log/000000000000.log");
    let bytes = std::fs::read(&log).unwrap();
    std::fs::write(&log, &bytes[..frames as usize + 32]).unwrap();
    refused_everywhere(&db, "000000000000.log", None, &all[105]);
}

/// Found by the fault-injection run: the last log file deleted, and its
/// acknowledged leaves were gone, `check` ok, the values accepted again.
#[test]
fn a_deleted_last_log_file_is_refused() {
    let dir = Dir::new();
    let (db, all) = database(&dir, 1000, 5);
    let last = format!("{db}/log/000000000001.log");
    assert!(Path::new(&last).is_file());
    std::fs::remove_file(&last).unwrap();
    refused_everywhere(&db, "000000000001.log", None, &all[1040]);
}

/// Found by the fault-injection run: a bit flipped in a checkpointed leaf
/// was accepted by normal opens; `contains` said absent and the value was
/// accepted again.
#[test]
fn a_flipped_checkpointed_leaf_is_refused() {
    let dir = Dir::new();
    let (db, all) = database(&dir, 1000, 0);
    let log = format!("{db}/log/000000000000.log");
    // Leaf 300, in page 2 of the leaves (leaves 256..384).
    flip(&log, 4096 + 32 * 300 + 17);
    refused_everywhere(&db, "000000000000.log", Some(4096 + 32 * 256), &all[300]);
}

/// Found by the fault-injection run: one byte flipped in record 1 of the
/// heads file silently dropped the tags of the blocks after it, and a
/// later `truncate --to-block` removed acknowledged leaves, exit 0.
#[test]
fn a_flipped_heads_record_is_refused_and_no_truncate_runs() {
    let dir = Dir::new();
    let (db, all) = database(&dir, 0, 5);
    let heads = format!("{db}/heads");
    let record1 = 64 + 128;
    flip(&heads, record1 + 9);
    let before = std::fs::read(format!("{db}/log/000000000000.log")).unwrap();
    cairn(&["truncate", &db, "--to-block", "103"])
        .error(4, &["heads", &format!("offset {record1}")]);
    assert_eq!(
        std::fs::read(format!("{db}/log/000000000000.log")).unwrap(),
        before,
        "nothing was rolled back"
    );
    refused_everywhere(&db, "heads", Some(record1), &all[42]);
}
