//! Staged appends (`Store::stage` / `Store::append_staged`): leaves written
//! into the log before their append. What must hold: the commit that
//! frames staged leaves does not write them again (that is the point), a
//! staged batch that is never appended changes nothing a reopen or a
//! power loss can see, and whatever replaces it at those positions (other
//! leaves, after a refusal or a rollback) is what the log ends up holding.
//! The power-loss harness (`power.rs`) drives staged and abandoned batches
//! too, and judges every crash state of them.

use std::path::Path;
use std::sync::Arc;

use cairn_core::Hash;
use cairn_store::fs::sim::{CrashMode, SimFs};
use cairn_store::{Fs, Store, StoreConfig};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::support::*;

const DB: &str = "/db";
/// 1,024 leaves per log file: batches of a few thousand cross files.
const LOG_SHIFT: u8 = 10;
/// Batches of 64 leaves and more are staged.
const STAGE_FROM: usize = 64;

fn staging_config(n: u64) -> StoreConfig {
    StoreConfig {
        stage_from: STAGE_FROM,
        ..config(n, LOG_SHIFT)
    }
}

fn create(fs: &SimFs) -> Store {
    Store::create(
        Arc::new(fs.clone()) as Arc<dyn Fs>,
        Path::new(DB),
        staging_config(4),
    )
    .unwrap()
}

fn open(fs: &SimFs) -> Store {
    Store::open(
        Arc::new(fs.clone()) as Arc<dyn Fs>,
        Path::new(DB),
        staging_config(4),
    )
    .unwrap()
}

/// Leaves no workload index produces: what a refused batch held.
fn strangers(count: u64) -> Vec<Hash> {
    (0..count).map(|i| leaf(u64::MAX / 2 + i)).collect()
}

/// Stages `batch`, appends it and waits; returns the bytes written by
/// the append and its commit (not by the staging).
fn append_staged(store: &Store, fs: &SimFs, batch: &[Hash]) -> (bool, u64) {
    let staged = store.stage(store.check_batch(batch).unwrap());
    let written = staged.is_written();
    let before = fs.counters().bytes_written;
    let appended = store.append_staged(staged, None).unwrap();
    appended.token.wait(WAIT).unwrap();
    (written, fs.counters().bytes_written - before)
}

#[test]
fn a_staged_batch_is_framed_without_being_written_again() {
    let fs = SimFs::new();
    let store = create(&fs);
    store
        .append_batch(&leaves(0..10))
        .unwrap()
        .token
        .wait(WAIT)
        .unwrap();
    // 3,000 leaves from 10: three log files, the last two created by the
    // staging itself.
    let (written, after_staging) = append_staged(&store, &fs, &leaves(10..3010));
    assert!(written, "a batch from stage_from leaves on is staged");
    // One 32-byte frame per file, and nothing else.
    assert_eq!(
        after_staging,
        3 * 32,
        "the commit of staged leaves writes only their frames"
    );
    // The same batch size without staging writes every leaf.
    let before = fs.counters().bytes_written;
    store
        .append_checked(&store.check_batch(&leaves(3010..6010)).unwrap())
        .unwrap()
        .token
        .wait(WAIT)
        .unwrap();
    assert!(fs.counters().bytes_written - before >= 3000 * 32);
    check_prefix(&store, 4);
    drop(store);
    assert_eq!(check_prefix(&open(&fs), 4), 6010);
}

#[test]
fn small_batches_busy_logs_and_pending_appends_are_not_staged() {
    let fs = SimFs::new();
    let store = create(&fs);
    let small_leaves = leaves(0..63);
    let small = store.stage(store.check_batch(&small_leaves).unwrap());
    assert!(!small.is_written(), "below stage_from");
    store.append_staged(small, None).unwrap();
    // Appended leaves are waiting for a commit: a staged batch could not
    // go at the log's end.
    let pending_leaves = leaves(63..200);
    let pending = store.stage(store.check_batch(&pending_leaves).unwrap());
    assert!(!pending.is_written(), "appended leaves wait for a commit");
    let appended = store.append_staged(pending, None).unwrap();
    appended.token.wait(WAIT).unwrap();
    let now_leaves = leaves(200..400);
    let now = store.stage(store.check_batch(&now_leaves).unwrap());
    assert!(now.is_written());
    store
        .append_staged(now, None)
        .unwrap()
        .token
        .wait(WAIT)
        .unwrap();
    drop(store);
    assert_eq!(check_prefix(&open(&fs), 4), 400);
}

#[test]
fn an_abandoned_staged_batch_leaves_nothing_and_is_overwritten_by_the_next() {
    let fs = SimFs::new();
    let store = create(&fs);
    store
        .append_batch(&leaves(0..100))
        .unwrap()
        .token
        .wait(WAIT)
        .unwrap();
    // Staged and dropped (as the database does when the set refuses the
    // batch): other leaves then take those positions, staged or not.
    for stage_next in [false, true] {
        let size = store.size();
        let stranger = strangers(1500);
        let refused = store.stage(store.check_batch(&stranger).unwrap());
        assert!(refused.is_written());
        drop(refused);
        let batch = leaves(size..size + 1200);
        if stage_next {
            assert!(append_staged(&store, &fs, &batch).0);
        } else {
            store
                .append_batch(&batch)
                .unwrap()
                .token
                .wait(WAIT)
                .unwrap();
        }
    }
    // Staged and dropped with nothing after it: a reopen finds the log
    // as it was (the staged bytes are an unframed tail), then in every
    // crash state the same.
    let refused_leaves = strangers(700);
    let refused = store.stage(store.check_batch(&refused_leaves).unwrap());
    assert!(refused.is_written());
    drop(refused);
    drop(store);
    assert_eq!(check_prefix(&open(&fs), 4), 2500);
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for mode in [
        CrashMode::DropUnsynced,
        CrashMode::KeepUnsynced,
        CrashMode::RandomSectors,
        CrashMode::GrowthLost,
        CrashMode::UndoDirOps,
    ] {
        let crashed = fs.crash(&mode, &mut rng);
        let store = open(&crashed);
        assert_eq!(check_prefix(&store, 4), 2500, "{mode:?}");
    }
}

#[test]
fn a_rollback_between_a_staged_append_and_its_commit_writes_what_replaced_it() {
    let fs = SimFs::new();
    let store = create(&fs);
    store
        .append_batch(&leaves(0..100))
        .unwrap()
        .token
        .wait(WAIT)
        .unwrap();
    // Appended from a staged write but not committed, then rolled back:
    // the strangers go and the workload's leaves take their positions.
    let staged_leaves = strangers(900);
    let staged = store.stage(store.check_batch(&staged_leaves).unwrap());
    assert!(staged.is_written());
    let appended = store.append_staged(staged, None).unwrap();
    store.truncate(100).unwrap();
    assert!(appended.token.wait(WAIT).is_err(), "rolled back");
    store
        .append_batch(&leaves(100..1000))
        .unwrap()
        .token
        .wait(WAIT)
        .unwrap();
    // And once more after a durable staged append.
    let (written, _) = append_staged(&store, &fs, &strangers(500));
    assert!(written);
    store.truncate(1000).unwrap();
    store
        .append_batch(&leaves(1000..1500))
        .unwrap()
        .token
        .wait(WAIT)
        .unwrap();
    assert_eq!(check_prefix(&store, 4), 1500);
    drop(store);
    assert_eq!(check_prefix(&open(&fs), 4), 1500);
}

#[test]
fn staged_appends_on_a_real_file_system_reopen_as_appended() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let config = StoreConfig {
        stage_from: STAGE_FROM,
        ..config(2, LOG_SHIFT)
    };
    let store = Store::create(std_fs(), &path, config.clone()).unwrap();
    let mut size = 0;
    for count in [5000u64, 64, 2048, 1] {
        let batch = leaves(size..size + count);
        let staged = store.stage(store.check_batch(&batch).unwrap());
        assert_eq!(staged.is_written(), count >= STAGE_FROM as u64);
        store
            .append_staged(staged, None)
            .unwrap()
            .token
            .wait(WAIT)
            .unwrap();
        size += count;
    }
    drop(store);
    let store = Store::open(std_fs(), &path, config).unwrap();
    assert_eq!(check_prefix(&store, 2), size);
}
