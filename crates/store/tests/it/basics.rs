//! Appends, group commit, checkpoints, tiering and reopen on the real file system.

use std::sync::Arc;

use cairn_core::level::SEGMENT_LEN;
use cairn_core::{HashKind, LeanImt};
use cairn_store::{Store, StoreError};

use crate::support::*;

#[test]
fn appends_are_durable_across_reopen_with_and_without_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let fs = std_fs();
    let store = Store::create(fs.clone(), &path, config(4, 10)).unwrap();
    assert_eq!(store.head().size, 0);
    let mut next = 0u64;
    // Singles and batches, crossing log files (1,024 leaves each).
    for batch in [1u64, 1, 5, 300, 1, 2000, 7] {
        let got = if batch == 1 {
            store.append(leaf(next)).unwrap()
        } else {
            store.append_batch(&leaves(next..next + batch)).unwrap()
        };
        assert_eq!((got.first, got.count), (next, batch));
        next += batch;
        if next.is_multiple_of(2) {
            got.token.wait(WAIT).unwrap();
            assert!(got.token.is_durable().unwrap());
        }
    }
    assert_eq!(check_prefix(&store, 4), next);
    store.checkpoint().unwrap().expect("a first checkpoint");
    assert!(
        store.checkpoint().unwrap().is_none(),
        "nothing new to cover"
    );
    store.append_batch(&leaves(next..next + 10)).unwrap();
    next += 10;
    store.close().unwrap();

    let store = Store::open(fs.clone(), &path, config(4, 10)).unwrap();
    assert_eq!(check_prefix(&store, 4), next);
    assert_eq!(store.stats().checkpoint_size, next - 10);
    // A second handle on the same directory is refused while this one
    // lives, with an error naming this process rather than another one.
    match Store::open(fs.clone(), &path, config(4, 10)) {
        Err(error @ StoreError::OpenInProcess { .. }) => {
            assert!(
                error.to_string().contains("already open in this process"),
                "{error}"
            );
        }
        other => panic!("want OpenInProcess, got {other:?}"),
    }
    // A lock released while `open` waits (as when a child forked elsewhere
    // in the process still held the file for a moment) is taken.
    let release = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(100));
        drop(store);
    });
    let store = Store::open(fs.clone(), &path, config(4, 10)).unwrap();
    release.join().unwrap();
    assert_eq!(check_prefix(&store, 4), next);
    drop(store);
    // A contradicting config names both values.
    let err = Store::open(fs.clone(), &path, config(8, 10)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "config mismatch: arity is 4 in the store, 8 was asked for"
    );
    assert!(matches!(
        Store::create(fs.clone(), &path, config(4, 10)),
        Err(StoreError::NotEmpty { .. })
    ));
    assert!(matches!(
        Store::open(fs, &dir.path().join("nothing"), config(4, 10)),
        Err(StoreError::Missing { .. })
    ));
}

/// rotortree 0.20 failure 1: a checkpoint treated the last node of a level
/// chunk as final; one more leaf and another checkpoint broke proofs.
#[test]
fn checkpoints_at_chunk_boundaries_keep_every_proof_valid() {
    for n in [2u64, 3, 4, 8, 16] {
        for first in [127u64, 128, 255, 256, 257, n * n * n - 1, n * n * n] {
            let dir = tempfile::tempdir().unwrap();
            let fs = std_fs();
            let store = Store::create(fs.clone(), dir.path(), config(n, 10)).unwrap();
            store.append_batch(&leaves(0..first)).unwrap();
            store.checkpoint().unwrap();
            store.append(leaf(first)).unwrap();
            store.checkpoint().unwrap();
            let check_all = |store: &Store| {
                let snapshot = store.snapshot();
                let head = snapshot.head();
                let mut reference =
                    LeanImt::from_leaves(tree_config(n), &leaves(0..first + 1)).unwrap();
                assert_eq!(head, reference.head(), "N={n} first={first}");
                for index in 0..=first {
                    snapshot
                        .prove(index)
                        .unwrap()
                        .verify(tree_config(n).arity, HashKind::Blake3, &head)
                        .unwrap_or_else(|e| panic!("N={n} first={first} leaf {index}: {e}"));
                }
            };
            check_all(&store);
            store.close().unwrap();
            let store = Store::open(fs, dir.path(), config(n, 10)).unwrap();
            check_all(&store);
        }
    }
}

/// rotortree 0.20 failure 2: a snapshot's proofs changed under it when a
/// later checkpoint rewrote mapped regions. Here: snapshots taken before
/// and after a reopen keep answering the same through appends, checkpoints
/// and tiering.
#[test]
fn snapshots_are_isolated_across_checkpoints_and_tiering() {
    tiering_case(tree_config(4));
}

/// The same for a fixed-depth tree: tiering maps final nodes only, which
/// are the same in both kinds; the padded right edge stays in memory.
#[test]
fn snapshots_of_a_fixed_depth_tree_are_isolated_across_checkpoints_and_tiering() {
    tiering_case(fixed_tree_config(4));
}

fn tiering_case(tree: cairn_core::TreeConfig) {
    let dir = tempfile::tempdir().unwrap();
    let fs = std_fs();
    let total = 2 * SEGMENT_LEN as u64 + 1000;
    let store = Store::create(fs.clone(), dir.path(), config_of(tree, 16)).unwrap();
    store.append_batch(&leaves(0..total)).unwrap();
    let before = store.snapshot();
    let proofs: Vec<_> = [0, 70_000, total - 1]
        .iter()
        .map(|&i| before.prove(i).unwrap())
        .collect();
    store.checkpoint().unwrap();
    // Level 0's first segment is now served from the log file's mapping.
    assert_eq!(store.stats().tiered_segments, vec![2]);
    store.append_batch(&leaves(total..total + 5000)).unwrap();
    store.checkpoint().unwrap();
    for (proof, index) in proofs.iter().zip([0, 70_000, total - 1]) {
        assert_eq!(&before.prove(index).unwrap(), proof);
    }
    assert_eq!(check_prefix_of(&store, tree), total + 5000);
    store.close().unwrap();
    let store = Store::open(fs, dir.path(), config_of(tree, 16)).unwrap();
    let mut tiered = vec![0; store.snapshot().depth() as usize + 1];
    tiered[0] = 2;
    assert_eq!(store.stats().tiered_segments, tiered);
    let after = store.snapshot();
    store
        .append_batch(&leaves(total + 5000..total + 6000))
        .unwrap();
    store.checkpoint().unwrap();
    assert_eq!(after.size(), total + 5000);
    assert_eq!(after.prove_at(70_000, total).unwrap(), proofs[1]);
    assert_eq!(check_prefix_of(&store, tree), total + 6000);
}

/// rotortree 0.20 failure 3: an oversized batch panicked after changing
/// memory. Any batch size works here: the log splits it across files.
#[test]
fn a_batch_larger_than_a_log_file_is_split_and_recovered() {
    let dir = tempfile::tempdir().unwrap();
    let fs = std_fs();
    let store = Store::create(fs.clone(), dir.path(), config(2, 10)).unwrap();
    let count = 10_000u64;
    let appended = store.append_batch(&leaves(0..count)).unwrap();
    appended.token.wait(WAIT).unwrap();
    assert_eq!(store.durable_size(), count);
    drop(store);
    let store = Store::open(fs, dir.path(), config(2, 10)).unwrap();
    assert_eq!(check_prefix(&store, 2), count);
    assert_eq!(
        std::fs::read_dir(dir.path().join("log")).unwrap().count(),
        count.div_ceil(1024) as usize
    );
}

#[test]
fn refused_batches_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let fs = std_fs();
    let mut cfg = config(2, 10);
    cfg.tree = cfg.tree.with_max_depth(3);
    let store = Store::create(fs.clone(), dir.path(), cfg.clone()).unwrap();
    store.append_batch(&leaves(0..5)).unwrap();
    assert!(matches!(
        store.append_batch(&leaves(5..9)),
        Err(StoreError::Tree(
            cairn_core::TreeError::CapacityExceeded { .. }
        ))
    ));
    assert!(matches!(store.append_batch(&[]), Err(StoreError::Tree(_))));
    assert_eq!(store.size(), 5);
    store.close().unwrap();
    let store = Store::open(fs, dir.path(), cfg).unwrap();
    assert_eq!(store.size(), 5);
}

#[test]
fn concurrent_writers_share_group_commits() {
    let dir = tempfile::tempdir().unwrap();
    let fs = std_fs();
    let store = Arc::new(Store::create(fs.clone(), dir.path(), config(4, 12)).unwrap());
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                let mut mine = Vec::new();
                for _ in 0..200 {
                    let value = rand::random::<[u8; 32]>();
                    let appended = store.append(value).unwrap();
                    appended.token.wait(WAIT).unwrap();
                    mine.push((appended.first, value));
                }
                mine
            })
        })
        .collect();
    let acknowledged: Vec<_> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    let store = Arc::into_inner(store).unwrap();
    store.close().unwrap();
    let store = Store::open(fs, dir.path(), config(4, 12)).unwrap();
    let snapshot = store.snapshot();
    assert_eq!(snapshot.size(), 800);
    for (index, value) in acknowledged {
        assert_eq!(snapshot.leaf(index), Some(value));
    }
}

#[test]
fn a_max_depth_the_meta_cannot_hold_is_refused_at_creation() {
    for depth in [0, 256] {
        let dir = tempfile::tempdir().unwrap();
        let mut config = config(2, 10);
        config.tree = config.tree.with_max_depth(depth);
        let error = Store::create(Arc::new(cairn_store::StdFs), &dir.path().join("s"), config)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains(&format!("max depth {depth} outside 1..=255")),
            "{error}"
        );
    }
}

#[test]
fn opening_a_missing_directory_says_it_does_not_exist() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nowhere");
    let error = Store::open(std_fs(), &missing, config(4, 10)).unwrap_err();
    assert!(
        matches!(&error, StoreError::Missing { path } if path == &missing),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        format!("{} does not exist", missing.display())
    );
    let error = cairn_store::stored_config(&cairn_store::StdFs, &missing).unwrap_err();
    assert!(matches!(error, StoreError::Missing { .. }), "{error:?}");
    // An existing directory without a store is still "not a store".
    let error = Store::open(std_fs(), dir.path(), config(4, 10)).unwrap_err();
    assert!(matches!(error, StoreError::NotAStore { .. }), "{error:?}");
}

/// A fixed-depth store keeps its kind in `cairn.meta` (version 2): it
/// reopens as itself (from the checkpoint and the log, after a rollback,
/// and as a backup), and an open that names another kind, depth or zero is
/// refused; a tree that is not a tree is refused at creation.
#[test]
fn a_fixed_depth_store_reopens_as_itself_and_refuses_another_kind() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let tree = fixed_tree_config(4);
    let store = Store::create(std_fs(), &path, config_of(tree, 10)).unwrap();
    // The empty tree's head has a root: zeros[D].
    assert_eq!(store.snapshot().head(), tree.empty_head());
    let all = leaves(0..5_000);
    store
        .append_batch(&all[..3_000])
        .unwrap()
        .token
        .wait(WAIT)
        .unwrap();
    store.checkpoint().unwrap();
    store
        .append_batch(&all[3_000..])
        .unwrap()
        .token
        .wait(WAIT)
        .unwrap();
    store.truncate(4_321).unwrap();
    drop(store);
    assert_eq!(
        std::fs::metadata(path.join("cairn.meta")).unwrap().len(),
        80
    );
    assert_eq!(
        cairn_store::stored_config(&cairn_store::StdFs, &path)
            .unwrap()
            .tree,
        tree
    );
    let store = Store::open(std_fs(), &path, config_of(tree, 10)).unwrap();
    assert_eq!(check_prefix_of(&store, tree), 4_321);
    let copy = dir.path().join("copy");
    store.backup_to(&copy).unwrap();
    drop(store);
    let backup = Store::open(std_fs(), &copy, config_of(tree, 10)).unwrap();
    assert_eq!(check_prefix_of(&backup, tree), 4_321);
    drop(backup);
    let cairn_core::TreeKind::Fixed { depth, zero } = tree.kind else {
        unreachable!("a fixed tree")
    };
    for other in [
        tree_config(4),
        tree_config(4).with_kind(cairn_core::TreeKind::Fixed {
            depth: depth + 1,
            zero,
        }),
        tree_config(4).with_kind(cairn_core::TreeKind::Fixed {
            depth,
            zero: [0; 32],
        }),
    ] {
        let error = Store::open(std_fs(), &path, config_of(other, 10)).unwrap_err();
        assert!(
            matches!(
                &error,
                StoreError::ConfigMismatch {
                    field: "tree kind",
                    ..
                }
            ),
            "{error:?}"
        );
    }
    let not_a_tree = tree_config(4).with_kind(cairn_core::TreeKind::Fixed { depth: 0, zero });
    let error = Store::create(std_fs(), &dir.path().join("t"), config_of(not_a_tree, 10))
        .unwrap_err()
        .to_string();
    assert!(error.contains("depth 0 is out of range"), "{error}");
}
