//! The set's checkpoint file, `nullifiers.set`: a damaged file is reported
//! (never silently rebuilt), a leftover `nullifiers.set.tmp` is removed, a
//! missing file is rebuilt from the leaves, and the set cannot be switched
//! off (or on) at open.

use std::path::{Path, PathBuf};

use cairn_core::{Hash, HashKind};
use cairn_db::{Db, DbConfig, DbError};
use cairn_store::StoreError;

use crate::support::*;

const SET: &str = "nullifiers.set";
const TMP: &str = "nullifiers.set.tmp";
/// The file's header (magic, version, shard bits, store id, covered, key,
/// body length, CRC): `docs/file-format.md`.
const HEADER: usize = 64;

fn db_config() -> DbConfig {
    config(4, HashKind::Blake3)
}

fn values(range: std::ops::Range<u64>) -> Vec<Hash> {
    range.map(|i| value(11, i)).collect()
}

/// A database of 3,000 values whose set file covers the first 2,000.
fn make(path: &Path) -> Vec<Hash> {
    let all = values(0..3_000);
    let db = Db::create(path, db_config()).unwrap();
    db.append_batch(&all[..2_000]).unwrap();
    db.checkpoint().unwrap();
    assert_eq!(db.stats().set_checkpoint_size, 2_000);
    for v in &all[2_000..] {
        db.append(*v).unwrap();
    }
    db.close().unwrap();
    all
}

/// Opens and checks every value (after the leaves `all`).
fn open_and_check(path: &Path, all: &[Hash]) -> Db {
    let db = Db::open(path).unwrap();
    assert_eq!(db.size(), all.len() as u64);
    for (i, v) in all.iter().enumerate() {
        assert_eq!(db.index_of(v).unwrap(), Some(i as u64));
    }
    assert_eq!(db.index_of(&value(12, 0)).unwrap(), None);
    db.check_set().unwrap();
    db
}

/// The error of opening `path`: a corruption of the set file.
fn corrupt_open(path: &Path, what: &str) -> String {
    let error = Db::open(path).expect_err(what);
    let DbError::Store(StoreError::Corrupt { path: file, .. }) = &error else {
        panic!("{what}: not a corruption: {error}");
    };
    assert_eq!(file, &path.join(SET), "{what}: {error}");
    let message = error.to_string();
    assert!(message.contains(SET), "{what}: {message}");
    assert!(error.is_storage_fault());
    message
}

/// Where each non-empty shard's body (occupancy bitmap, then the slots
/// in use) lies in the file: (shard, offset, length in bytes).
fn shards(bytes: &[u8]) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    let mut at = HEADER;
    let mut shard = 0;
    while at < bytes.len() {
        let capacity = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let count = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
        let body = 8 * capacity.div_ceil(64) + 8 * count;
        if capacity > 0 {
            out.push((shard, at + 8, body));
        }
        at += 8 + body + 4;
        shard += 1;
    }
    assert_eq!(at, bytes.len());
    // The shard count is in the header (byte 12: log2 of it).
    let bits = u32::from(bytes[12]);
    assert_eq!(shard, 1 << bits);
    out
}

#[test]
fn a_damaged_set_file_fails_open_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let all = make(&path);
    let file = path.join(SET);
    let good = std::fs::read(&file).unwrap();
    let nonempty = shards(&good);
    let (shard, slots, body) = nonempty[nonempty.len() / 2];
    let mut damages: Vec<(String, Vec<u8>, &str)> = Vec::new();
    let mut flip = |what: String, at: usize, expect: &'static str| {
        let mut bytes = good.clone();
        bytes[at] ^= 0x10;
        damages.push((what, bytes, expect));
    };
    flip("magic".into(), 0, "bad magic");
    // Store id, covered size, key, body length: all under the header CRC.
    for at in [8, 12, 13, 17, 25, 33, 47, 50, 57] {
        flip(format!("header byte {at}"), at, "header CRC");
    }
    flip(format!("shard {shard}'s capacity"), slots - 8, "");
    flip(
        format!("shard {shard}'s count"),
        slots - 4,
        "CRC-32C mismatch",
    );
    flip(
        format!("a bitmap word of shard {shard}"),
        slots + 3,
        "CRC-32C mismatch",
    );
    flip(
        format!("an entry of shard {shard}"),
        slots + body - 3,
        "CRC-32C mismatch",
    );
    flip(
        format!("shard {shard}'s CRC"),
        slots + body + 1,
        "CRC-32C mismatch",
    );
    flip(
        "the last shard's CRC".into(),
        good.len() - 1,
        "CRC-32C mismatch",
    );
    let mut truncated = good.clone();
    truncated.truncate(good.len() - 3);
    damages.push(("a truncated file".into(), truncated, "bytes"));
    let mut longer = good.clone();
    longer.extend_from_slice(&[0; 8]);
    damages.push(("a longer file".into(), longer, "bytes"));
    damages.push(("an empty file".into(), Vec::new(), "header"));
    for (what, bytes, expect) in damages {
        std::fs::write(&file, &bytes).unwrap();
        let message = corrupt_open(&path, &what);
        assert!(message.contains(expect), "{what}: {message}");
        if expect == "CRC-32C mismatch" && what.starts_with("shard") {
            assert!(
                message.contains(&format!("shard {shard}")),
                "{what}: {message}"
            );
        }
    }
    // Restored, the file opens, and nothing was rebuilt behind our back.
    std::fs::write(&file, &good).unwrap();
    let db = open_and_check(&path, &all);
    assert_eq!(db.stats().set_checkpoint_size, 2_000);
}

#[test]
fn a_set_file_of_another_store_or_from_a_later_state_fails_open() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    make(&a);
    make(&b);
    // Another store's file.
    std::fs::copy(b.join(SET), a.join(SET)).unwrap();
    let message = corrupt_open(&a, "another store's file");
    assert!(message.contains("belongs to store"), "{message}");

    // A file covering more leaves than the directory holds: the set file of
    // a later state put back beside an earlier copy of the same store.
    let early = dir.path().join("early");
    copy_dir(&b, &early);
    let db = Db::open(&b).unwrap();
    db.append_batch(&values(3_000..4_000)).unwrap();
    db.checkpoint().unwrap();
    assert_eq!(db.stats().set_checkpoint_size, 4_000);
    db.close().unwrap();
    std::fs::copy(b.join(SET), early.join(SET)).unwrap();
    let message = corrupt_open(&early, "a file from the future");
    assert!(
        message.contains("covers 4000 leaves, the store holds only 3000"),
        "{message}"
    );
}

#[test]
fn a_leftover_tmp_file_is_removed_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let all = make(&path);
    let tmp: PathBuf = path.join(TMP);
    // A checkpoint of the set that crashed half-way: garbage, never
    // published.
    std::fs::write(&tmp, b"CAIRNSET and then nothing valid").unwrap();
    let db = open_and_check(&path, &all);
    assert!(!tmp.exists(), "the tmp file is still there");
    assert_eq!(db.stats().set_checkpoint_size, 2_000);
    db.close().unwrap();

    // Also when no set file was ever published.
    std::fs::remove_file(path.join(SET)).unwrap();
    std::fs::write(&tmp, vec![0xa5; 100_000]).unwrap();
    let db = open_and_check(&path, &all);
    assert!(!tmp.exists());
    assert_eq!(db.stats().set_checkpoint_size, 0);
}

#[test]
fn a_missing_set_file_is_rebuilt_from_the_leaves() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let all = make(&path);
    std::fs::remove_file(path.join(SET)).unwrap();
    let db = open_and_check(&path, &all);
    // Rebuilt by replaying every leaf: nothing covered by a file.
    assert_eq!(db.stats().set_checkpoint_size, 0);
    // Duplicates are refused as before.
    let Err(DbError::Duplicates { duplicates, .. }) = db.append(all[1_234]) else {
        panic!("a duplicate was appended");
    };
    assert_eq!(duplicates[0].of, cairn_db::DuplicateOf::Leaf(1_234));
    // The next checkpoint writes the file again, covering everything.
    db.checkpoint().unwrap();
    assert_eq!(db.stats().set_checkpoint_size, 3_000);
    assert!(path.join(SET).exists());
    db.close().unwrap();
    let db = open_and_check(&path, &all);
    assert_eq!(db.stats().set_checkpoint_size, 3_000);
}

#[test]
fn the_set_cannot_be_switched_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let on = dir.path().join("on");
    let all = make(&on);
    let mut off_config = db_config();
    off_config.unique = false;
    let error = Db::open_with(&on, off_config.clone()).unwrap_err();
    let DbError::ConfigMismatch {
        field,
        stored,
        given,
    } = &error
    else {
        panic!("{error}");
    };
    assert_eq!(
        (*field, stored.as_str(), given.as_str()),
        ("nullifier set (unique)", "on", "off")
    );
    let message = error.to_string();
    assert!(
        message.contains("is on in the database, off was asked for"),
        "{message}"
    );
    // Refused before anything was touched: it opens as it was.
    drop(open_and_check(&on, &all));

    // And the other way round.
    let off = dir.path().join("off");
    let db = Db::create(&off, off_config).unwrap();
    db.append_batch(&all[..10]).unwrap();
    db.close().unwrap();
    let error = Db::open_with(&off, db_config()).unwrap_err();
    let DbError::ConfigMismatch { stored, given, .. } = &error else {
        panic!("{error}");
    };
    assert_eq!((stored.as_str(), given.as_str()), ("off", "on"));
    assert!(!off.join(SET).exists());
    let db = Db::open(&off).unwrap();
    assert!(!db.is_unique());
    assert_eq!(db.size(), 10);
}
