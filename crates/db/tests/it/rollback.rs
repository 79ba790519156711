//! Rollback through the database: the nullifier set follows the tree
//! (removed values can be appended again, kept ones are still refused),
//! snapshots taken before keep their lookups, and a power loss at every
//! boundary of a rollback opens either as before it or as after it, with
//! a set that matches the tree.

use std::path::Path;
use std::sync::Arc;

use cairn_core::{Hash, HashKind};
use cairn_db::{BlockTag, Db, DbConfig, DbError};
use cairn_store::{Fs, StoreError};
use cairn_testkit::sim::{CrashMode, SECTOR, SimFs};
use rand::SeedableRng;

use crate::support::{config, reference_root, value};

fn explicit() -> DbConfig {
    let mut config = config(4, HashKind::Blake3);
    config.explicit_finality = true;
    config
}

fn values(from: u64, to: u64) -> Vec<Hash> {
    (from..to).map(|i| value(7, i)).collect()
}

fn create(fs: &SimFs) -> Db {
    Db::create_in(
        Arc::new(fs.clone()) as Arc<dyn Fs>,
        Path::new("/db"),
        explicit(),
    )
    .unwrap()
}

fn open(fs: &SimFs) -> Db {
    Db::open_in(
        Arc::new(fs.clone()) as Arc<dyn Fs>,
        Path::new("/db"),
        Some(explicit()),
    )
    .unwrap()
}

#[test]
fn removed_values_leave_the_set_and_old_snapshots_still_find_them() {
    let fs = SimFs::new();
    let db = create(&fs);
    db.append_batch(&values(0, 3000)).unwrap();
    db.checkpoint().unwrap();
    assert_eq!(db.stats().set_checkpoint_size, 3000);
    let before = db.snapshot();
    db.truncate(1000).unwrap();
    assert_eq!(
        db.stats().set_checkpoint_size,
        1000,
        "the set file was rewritten at the new size"
    );
    assert_eq!(db.index_of(&value(7, 2000)).unwrap(), None);
    assert_eq!(db.index_of(&value(7, 999)).unwrap(), Some(999));
    assert_eq!(
        before.index_of(&value(7, 2000)).unwrap(),
        Some(2000),
        "isolation"
    );
    // The same through the batch lookups: the old snapshot finds the
    // removed values (by its scan), the database does not.
    let asked = [
        value(7, 999),
        value(7, 2000),
        value(7, 2999),
        value(7, 5000),
    ];
    assert_eq!(
        before.index_of_many(&asked).unwrap(),
        vec![Some(999), Some(2000), Some(2999), None]
    );
    assert_eq!(
        db.index_of_many(&asked).unwrap(),
        vec![Some(999), None, None, None]
    );
    // Kept values are still refused; removed ones go back in, at new indices.
    assert!(matches!(
        db.append(value(7, 10)),
        Err(DbError::Duplicates { .. })
    ));
    let again = db.append_batch(&values(2000, 2100)).unwrap();
    assert_eq!(again.first, 1000);
    again
        .token
        .wait(std::time::Duration::from_secs(30))
        .unwrap();
    assert_eq!(db.index_of(&value(7, 2000)).unwrap(), Some(1000));
    assert_eq!(before.index_of(&value(7, 2000)).unwrap(), Some(2000));
    db.check_set().unwrap();
    drop(db);
    let db = open(&fs);
    db.check_set().unwrap();
    let mut want = values(0, 1000);
    want.extend(values(2000, 2100));
    assert_eq!(db.head().root, reference_root(4, HashKind::Blake3, &want));
}

#[test]
fn a_tagged_batch_with_a_duplicate_records_no_tag() {
    let fs = SimFs::new();
    let db = create(&fs);
    db.append_tagged(&values(0, 10), BlockTag::number(5))
        .unwrap();
    let mut bad = values(10, 20);
    bad.push(value(7, 3));
    assert!(matches!(
        db.append_tagged(&bad, BlockTag::number(6)),
        Err(DbError::Duplicates { .. })
    ));
    assert!(matches!(
        db.append_tagged(&values(10, 20), BlockTag::number(5)),
        Err(DbError::Store(StoreError::BlockOrder { block: 5, last: 5 }))
    ));
    assert_eq!(db.heads(0, 10).len(), 1);
    assert_eq!(db.size(), 10);
    db.append_tagged(&values(10, 20), BlockTag::number(6))
        .unwrap();
    assert_eq!(db.heads(0, 10).len(), 2);
    db.truncate_to_block(5).unwrap();
    assert_eq!(db.size(), 10);
    db.append_tagged(&values(10, 20), BlockTag::number(6))
        .unwrap();
}

/// Every boundary of one rollback (set file rewrite, checkpoint, log file
/// removal), in every untorn crash mode and each tear of the last write:
/// the database opens as before or as after, never in between, and its set
/// holds exactly its leaves.
#[test]
fn a_power_loss_anywhere_in_a_rollback_opens_before_or_after_it() {
    let fs = SimFs::new();
    let db = create(&fs);
    db.append_batch(&values(0, 2500)).unwrap();
    db.checkpoint().unwrap();
    db.append_batch(&values(2500, 3100)).unwrap();
    db.flush().unwrap();
    let old_root = db.head().root;
    let start = fs.op_count();
    db.truncate(900).unwrap();
    let end = fs.op_count();
    let new_root = db.head().root;
    assert!(end > start + 4, "the rollback touched the disk");
    let mut states = 0;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    for k in start..=end {
        let mut replay = fs.replay();
        replay.seek(k);
        let mut modes = vec![
            CrashMode::DropUnsynced,
            CrashMode::KeepUnsynced,
            CrashMode::UndoDirOps,
            CrashMode::GrowthLost,
            CrashMode::RandomSectors,
        ];
        for keep in 0..replay.tear_points(SECTOR).min(4) {
            modes.push(CrashMode::TearLastWrite {
                boundary: SECTOR,
                keep,
            });
        }
        for mode in modes {
            let crashed = replay.crash(&mode, &mut rng);
            let reopened = open(&crashed);
            let head = reopened.head();
            let ctx = format!(
                "boundary {k} of {start}..={end} ({}), {mode:?}",
                fs.describe_op(k.saturating_sub(1))
            );
            match head.size {
                3100 => assert_eq!(head.root, old_root, "{ctx}"),
                900 => assert_eq!(head.root, new_root, "{ctx}"),
                other => panic!("{ctx}: opened with {other} leaves"),
            }
            reopened
                .check_set()
                .unwrap_or_else(|e| panic!("{ctx}: {e}"));
            // Removed values go back in exactly when the rollback survived.
            let back = reopened.append(value(7, 3000));
            assert_eq!(back.is_ok(), head.size == 900, "{ctx}");
            states += 1;
        }
    }
    assert!(states > 20);
}
