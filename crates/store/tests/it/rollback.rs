//! Rollback, finality and block-tagged heads: the scripted cases (the
//! random sequences with power losses are in `rollback_model.rs`).

use std::path::Path;
use std::sync::Arc;

use cairn_core::LeanImt;
use cairn_store::{BlockTag, Fs, Store, StoreError};
use cairn_testkit::sim::SimFs;

use crate::support::{WAIT, config, leaves, tree_config};

/// Only `finalize` finalizes, so a rollback may reach below a checkpoint.
fn explicit(n: u64, log_shift: u8) -> cairn_store::StoreConfig {
    let mut config = config(n, log_shift);
    config.flags |= cairn_store::FLAG_EXPLICIT_FINALITY;
    config
}

fn open(fs: &SimFs, log_shift: u8) -> Store {
    Store::open(
        Arc::new(fs.clone()) as Arc<dyn Fs>,
        Path::new("/db"),
        explicit(4, log_shift),
    )
    .unwrap()
}

#[test]
fn a_durable_rollback_survives_reopen_and_the_indices_are_reused() {
    for (log_shift, to) in [(10u8, 1500u64), (10, 1024), (10, 0), (10, 2047), (12, 700)] {
        let fs = SimFs::new();
        let store = Store::create(
            Arc::new(fs.clone()) as Arc<dyn Fs>,
            Path::new("/db"),
            explicit(4, log_shift),
        )
        .unwrap();
        store.append_batch(&leaves(0..1200)).unwrap();
        store.checkpoint().unwrap();
        let old = store.append_batch(&leaves(1200..3000)).unwrap();
        store.flush().unwrap();
        let before = store.snapshot();
        let head = store.truncate(to).unwrap();
        let want = LeanImt::from_leaves(tree_config(4), &leaves(0..to))
            .unwrap()
            .head();
        assert_eq!(head, want, "shift {log_shift} to {to}");
        assert!(matches!(
            old.token.wait(WAIT),
            Err(StoreError::RolledBack { end: 3000, .. })
        ));
        // Re-append other leaves at the same indices.
        let again: Vec<_> = leaves(10_000..10_500);
        store
            .append_batch(&again)
            .unwrap()
            .token
            .wait(WAIT)
            .unwrap();
        assert_eq!(before.size(), 3000, "the old snapshot keeps its size");
        assert_eq!(before.leaf(2999), Some(leaves(2999..3000)[0]));
        drop(store);
        let store = open(&fs, log_shift);
        let mut all = leaves(0..to);
        all.extend_from_slice(&again);
        let mut reference = LeanImt::from_leaves(tree_config(4), &all).unwrap();
        assert_eq!(
            store.head(),
            reference.head(),
            "shift {log_shift} to {to} reopened"
        );
        store.checkpoint().unwrap();
        drop(store);
        assert_eq!(open(&fs, log_shift).head(), reference.head());
    }
}

#[test]
fn by_default_a_checkpoint_finalizes_what_it_covers() {
    let fs = SimFs::new();
    let store = Store::create(
        Arc::new(fs.clone()) as Arc<dyn Fs>,
        Path::new("/db"),
        config(4, 10),
    )
    .unwrap();
    store.append_batch(&leaves(0..1200)).unwrap();
    store.checkpoint().unwrap();
    store.append_batch(&leaves(1200..1300)).unwrap();
    assert_eq!(store.finalized_size(), 1200);
    assert!(matches!(
        store.truncate(1199),
        Err(StoreError::BelowFinalized {
            to: 1199,
            finalized: 1200
        })
    ));
    assert_eq!(store.size(), 1300, "a refused rollback changes nothing");
    store.truncate(1200).unwrap();
    assert_eq!(store.size(), 1200);
}

#[test]
fn tags_must_increase_and_roll_back_with_their_leaves() {
    let fs = SimFs::new();
    let store = Store::create(
        Arc::new(fs.clone()) as Arc<dyn Fs>,
        Path::new("/db"),
        config(2, 10),
    )
    .unwrap();
    for block in 0..10u64 {
        let tag = BlockTag {
            number: 100 + block,
            hash: Some([block as u8; 32]),
        };
        let range = block * 50..block * 50 + 50;
        store.append_tagged(&leaves(range), tag).unwrap();
    }
    // An empty block is a tag alone.
    store.append_tagged(&[], BlockTag::number(110)).unwrap();
    assert!(matches!(
        store.append_tagged(&leaves(9000..9001), BlockTag::number(110)),
        Err(StoreError::BlockOrder {
            block: 110,
            last: 110
        })
    ));
    assert_eq!(store.size(), 500, "a refused tag appends nothing");
    store.flush().unwrap();
    let heads = store.heads(0, usize::MAX);
    assert_eq!(heads.len(), 11);
    assert_eq!(heads[10].size, 500);
    let root_at_105 = heads[5].root.unwrap();
    assert_eq!(
        store.size_of_root(&root_at_105).map(|r| (r.size, r.block)),
        Some((300, Some(105)))
    );
    store.truncate_to_block(105).unwrap();
    assert_eq!(store.size(), 300);
    assert_eq!(store.heads(0, usize::MAX).len(), 6);
    assert_eq!(store.size_of_root(&heads[7].root.unwrap()), None);
    store
        .append_tagged(&leaves(7000..7050), BlockTag::number(106))
        .unwrap()
        .token
        .wait(WAIT)
        .unwrap();
    drop(store);
    let store = open_n(&fs, 2);
    let heads = store.heads(0, usize::MAX);
    assert_eq!(heads.len(), 7);
    assert_eq!((heads[6].block, heads[6].size), (106, 350));
    assert_eq!(heads[6].root, Some(store.head().root.unwrap()));
    assert_eq!(store.size_of_root(&root_at_105).map(|r| r.size), Some(300));
    assert!(matches!(
        store.truncate_to_block(99),
        Err(StoreError::NoHeadAtBlock { block: 99 })
    ));
}

fn open_n(fs: &SimFs, n: u64) -> Store {
    Store::open(
        Arc::new(fs.clone()) as Arc<dyn Fs>,
        Path::new("/db"),
        config(n, 10),
    )
    .unwrap()
}

#[test]
fn finality_refuses_a_rollback_below_it() {
    let fs = SimFs::new();
    let mut cfg = config(4, 10);
    cfg.flags |= cairn_store::FLAG_EXPLICIT_FINALITY;
    let store = Store::create(
        Arc::new(fs.clone()) as Arc<dyn Fs>,
        Path::new("/db"),
        cfg.clone(),
    )
    .unwrap();
    store.append_batch(&leaves(0..2000)).unwrap();
    store.checkpoint().unwrap();
    assert_eq!(
        store.finalized_size(),
        0,
        "explicit finality: a checkpoint finalizes nothing"
    );
    store.truncate(1000).unwrap();
    assert_eq!(store.finalize(800).unwrap(), 800);
    assert!(matches!(
        store.truncate(799),
        Err(StoreError::BelowFinalized {
            to: 799,
            finalized: 800
        })
    ));
    assert!(matches!(
        store.finalize(1001),
        Err(StoreError::BeyondSize { .. })
    ));
    assert_eq!(store.size(), 1000);
    drop(store);
    let store = Store::open(Arc::new(fs.clone()) as Arc<dyn Fs>, Path::new("/db"), cfg).unwrap();
    assert_eq!(store.finalized_size(), 800);
    assert_eq!(store.size(), 1000);
}

/// A rollback deferred to the store's next write: memory and the durable
/// head answer as after it at once and no file changes (a reopen finds
/// the store as before it: the caller's own record holds the rollback);
/// the next flush publishes it before writing the leaves appended since,
/// and a power loss anywhere in that flush opens the store as before the
/// rollback, at its size, or with every leaf since.
#[test]
fn a_deferred_rollback_reaches_the_files_at_the_next_write_all_or_nothing() {
    use cairn_testkit::sim::CrashMode;
    use rand::SeedableRng;
    let fs = SimFs::new();
    let store = Store::create(
        Arc::new(fs.clone()) as Arc<dyn Fs>,
        Path::new("/db"),
        explicit(4, 10),
    )
    .unwrap();
    let root =
        |values: &[cairn_core::Hash]| LeanImt::from_leaves(tree_config(4), values).unwrap().head();
    store.append_batch(&leaves(0..1500)).unwrap();
    store.checkpoint().unwrap();
    store.append_batch(&leaves(1500..2100)).unwrap();
    store.flush().unwrap();
    let old = root(&leaves(0..2100));
    let start = fs.op_count();
    assert_eq!(
        store.truncate_deferred(1700).unwrap(),
        root(&leaves(0..1700))
    );
    let head = store.truncate_deferred(1200).unwrap();
    // A higher one after keeps the lower size for the files.
    store.append_batch(&leaves(1200..1300)).unwrap();
    store.truncate_deferred(1250).unwrap();
    store.truncate_deferred(1200).unwrap();
    assert_eq!(fs.op_count(), start, "a deferred rollback touches no file");
    let rolled = root(&leaves(0..1200));
    assert_eq!(head, rolled);
    assert_eq!(store.head(), rolled);
    assert_eq!(store.durable_head().size, 1200);
    assert!(store.rollback_pending());
    // Not yet in the files: a copy of them opens as before.
    let copy = fs.replay();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    {
        let mut copy = copy;
        copy.seek(fs.op_count());
        let crashed = copy.crash(&CrashMode::KeepUnsynced, &mut rng);
        let reopened = Store::open(
            Arc::new(crashed) as Arc<dyn Fs>,
            Path::new("/db"),
            explicit(4, 10),
        )
        .unwrap();
        assert_eq!(reopened.head(), old);
    }
    let again = leaves(10_000..10_300);
    store.append_batch(&again).unwrap();
    let flush_start = fs.op_count();
    store.flush().unwrap();
    let end = fs.op_count();
    assert!(!store.rollback_pending());
    let mut all = leaves(0..1200);
    all.extend_from_slice(&again);
    let new = root(&all);
    assert_eq!(store.head(), new);
    drop(store);
    assert_eq!(open(&fs, 10).head(), new);
    let mut replay = fs.replay();
    let mut checked = 0;
    for k in flush_start..=end {
        replay.seek(k);
        for mode in [
            CrashMode::DropUnsynced,
            CrashMode::KeepUnsynced,
            CrashMode::UndoDirOps,
            CrashMode::GrowthLost,
        ] {
            let crashed = replay.crash(&mode, &mut rng);
            let reopened = Store::open(
                Arc::new(crashed) as Arc<dyn Fs>,
                Path::new("/db"),
                explicit(4, 10),
            )
            .unwrap_or_else(|e| panic!("boundary {k}, {mode:?}: {e}"));
            let got = reopened.head();
            assert!(
                got == old || got == rolled || got == new,
                "boundary {k}, {mode:?}: {got:?}"
            );
            if k == end {
                assert_eq!(got, new, "boundary {k}, {mode:?}: after the flush");
            }
            checked += 1;
        }
    }
    assert!(checked > 8, "{checked} states");
}

/// An explicit settle publishes a deferred rollback with nothing
/// appended after it, and a durable rollback settles one first.
#[test]
fn a_deferred_rollback_settles_alone_and_under_a_durable_one() {
    let fs = SimFs::new();
    let store = Store::create(
        Arc::new(fs.clone()) as Arc<dyn Fs>,
        Path::new("/db"),
        explicit(4, 10),
    )
    .unwrap();
    store.append_batch(&leaves(0..900)).unwrap();
    store.flush().unwrap();
    store.truncate_deferred(600).unwrap();
    store.settle_rollback().unwrap();
    assert!(!store.rollback_pending());
    drop(store);
    let store = open(&fs, 10);
    assert_eq!(store.size(), 600);
    store.truncate_deferred(500).unwrap();
    store.append_batch(&leaves(5000..5050)).unwrap();
    // Above the deferred size: the files go to 500 first, then to 520.
    store.truncate(520).unwrap();
    assert!(!store.rollback_pending());
    let mut all = leaves(0..500);
    all.extend_from_slice(&leaves(5000..5020));
    let want = LeanImt::from_leaves(tree_config(4), &all).unwrap().head();
    assert_eq!(store.head(), want);
    drop(store);
    assert_eq!(open(&fs, 10).head(), want);
}
