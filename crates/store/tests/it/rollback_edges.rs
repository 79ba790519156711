//! Rollback edge cases, scripted: across a checkpoint, a
//! tiered level-0 segment and a log file boundary (with a power loss at
//! every boundary of the truncation, in every crash mode), to 0, to the
//! current size, below the finalized size, the same values appended again,
//! and the token of an empty block whose tag a rollback removed.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_core::level::SEGMENT_LEN;
use cairn_core::{Hash, HashKind, LeanImt, TreeHead};
use cairn_store::{BlockTag, FLAG_EXPLICIT_FINALITY, Fs, Store, StoreConfig, StoreError};
use cairn_testkit::sim::CrashMode;
use cairn_testkit::sim::SimFs;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::support::{WAIT, config, leaves, tree_config};

const DB: &str = "/db";

fn explicit(n: u64, log_shift: u8) -> StoreConfig {
    let mut config = config(n, log_shift);
    config.flags |= FLAG_EXPLICIT_FINALITY;
    config
}

fn create(fs: &SimFs, config: &StoreConfig) -> Store {
    Store::create(
        Arc::new(fs.clone()) as Arc<dyn Fs>,
        Path::new(DB),
        config.clone(),
    )
    .unwrap()
}

fn open(fs: &SimFs, config: &StoreConfig) -> Store {
    Store::open(
        Arc::new(fs.clone()) as Arc<dyn Fs>,
        Path::new(DB),
        config.clone(),
    )
    .unwrap()
}

fn reference(n: u64, leaves: &[Hash]) -> TreeHead {
    LeanImt::from_leaves(tree_config(n), leaves).unwrap().head()
}

/// The store holds exactly `want`, with the reference root and proofs.
fn check(store: &Store, n: u64, want: &[Hash], ctx: &str) {
    let snapshot = store.snapshot();
    let head = reference(n, want);
    assert_eq!(snapshot.head(), head, "{ctx}: head");
    let size = want.len() as u64;
    for i in [0, size / 2, size.saturating_sub(1)] {
        if i < size {
            assert_eq!(snapshot.leaf(i), Some(want[i as usize]), "{ctx}: leaf {i}");
            snapshot
                .prove(i)
                .unwrap()
                .verify(tree_config(n).arity, HashKind::Blake3, &head)
                .unwrap_or_else(|e| panic!("{ctx}: proof of {i}: {e}"));
        }
    }
    assert_eq!(snapshot.leaf(size), None, "{ctx}: past the end");
}

fn log_files(fs: &SimFs) -> Vec<String> {
    fs.list_dir(Path::new("/db/log")).unwrap()
}

/// Regression: the token of an empty tagged append (a block with no
/// leaves) whose tag `truncate_to_block` removed at the size it kept was
/// never cut: `wait` flushed in a loop past its deadline (the tag count it
/// waited for was gone), and once later blocks were tagged it reported the
/// removed tag durable. A rollback now records the tags it kept, and a
/// token whose tag is not among them fails with `RolledBack`.
#[test]
fn the_token_of_an_empty_block_rolled_back_at_the_same_size_fails() {
    let fs = SimFs::new();
    let store = create(&fs, &config(2, 10));
    store
        .append_tagged(&leaves(0..10), BlockTag::number(1))
        .unwrap()
        .token
        .wait(WAIT)
        .unwrap();
    for durable_first in [false, true] {
        let empty = store.append_tagged(&[], BlockTag::number(2)).unwrap();
        if durable_first {
            empty.token.wait(WAIT).unwrap();
        }
        assert_eq!(store.truncate_to_block(1).unwrap().size, 10);
        assert_eq!(store.heads(0, usize::MAX).len(), 1);
        // In a thread: the bug made this wait spin forever.
        let token = empty.token.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(token.wait(Duration::from_secs(2)));
        });
        let got = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the wait returns");
        assert!(
            matches!(got, Err(StoreError::RolledBack { end: 10, to: 10 })),
            "{got:?}"
        );
        assert!(matches!(
            empty.token.is_durable(),
            Err(StoreError::RolledBack { .. })
        ));
        // A later block 2 with the same tag count: the old token stays cut.
        let again = store
            .append_tagged(&leaves(10..12), BlockTag::number(2))
            .unwrap();
        again.token.wait(WAIT).unwrap();
        assert!(matches!(
            empty.token.wait(WAIT),
            Err(StoreError::RolledBack { .. })
        ));
        store.truncate_to_block(1).unwrap();
    }
}

/// Explicit finality: a checkpoint finalizes nothing, so a rollback can
/// reach below it; the rollback's own checkpoint covers the new size.
#[test]
fn truncate_across_a_checkpoint() {
    let cfg = explicit(3, 10);
    let fs = SimFs::new();
    let store = create(&fs, &cfg);
    let mut want = leaves(0..1500);
    store.append_batch(&want).unwrap();
    let covered = store.checkpoint().unwrap().unwrap();
    assert_eq!(covered.size, 1500);
    store.append_batch(&leaves(1500..1800)).unwrap();
    store.flush().unwrap();
    let before = store.snapshot();
    let head = store.truncate(900).unwrap();
    want.truncate(900);
    assert_eq!(head, reference(3, &want));
    let stats = store.stats();
    assert_eq!(
        stats.checkpoint_size, 900,
        "the rollback published a checkpoint"
    );
    assert!(stats.checkpoint_number > covered.number);
    assert_eq!(stats.finalized, 0);
    check(&store, 3, &want, "after");
    assert_eq!(before.size(), 1800);
    assert_eq!(before.leaf(1700), Some(leaves(1700..1701)[0]));
    drop(store);
    let store = open(&fs, &cfg);
    check(&store, 3, &want, "reopened");
    // Grows past the old checkpoint again with other leaves, checkpoints.
    let more = leaves(50_000..51_000);
    store.append_batch(&more).unwrap();
    want.extend_from_slice(&more);
    store.checkpoint().unwrap().unwrap();
    drop(store);
    check(&open(&fs, &cfg), 3, &want, "checkpointed again");
}

/// Level 0 tiered from the log (log files of one segment), finalized
/// above one segment: the mapping stays below the finalized size, the
/// rollback rewrites log bytes above it, and a snapshot taken before the
/// truncation keeps answering with its own leaves and proofs.
#[test]
fn truncate_across_a_tiered_level_0_segment_after_finalize() {
    let n = 4;
    let seg = SEGMENT_LEN as u64;
    let mut cfg = explicit(n, 16);
    cfg.tier_below = 1;
    let fs = SimFs::new();
    let store = create(&fs, &cfg);
    let mut want = leaves(0..seg + 5000);
    store.append_batch(&want).unwrap();
    store.checkpoint().unwrap();
    assert_eq!(
        store.stats().tiered_segments.first().copied().unwrap_or(0),
        0,
        "nothing final, nothing mapped"
    );
    // Finalized at exactly one segment: its last leaf is the edge, so no
    // segment is wholly final yet.
    assert_eq!(store.finalize(seg).unwrap(), seg);
    assert_eq!(store.stats().tiered_segments[0], 0);
    assert_eq!(store.finalize(seg + 1000).unwrap(), seg + 1000);
    assert_eq!(store.stats().tiered_segments[0], 1, "segment 0 mapped");
    let before = store.snapshot();
    let old_head = before.head();
    let probe = seg + 3000;
    assert!(matches!(
        store.truncate(seg + 999),
        Err(StoreError::BelowFinalized { .. })
    ));
    let head = store.truncate(seg + 1000).unwrap();
    want.truncate((seg + 1000) as usize);
    assert_eq!(head, reference(n, &want));
    // Other leaves where the rolled-back ones were (same log file, same
    // offsets), then a checkpoint.
    let other = leaves(900_000..904_000);
    store
        .append_batch(&other)
        .unwrap()
        .token
        .wait(WAIT)
        .unwrap();
    want.extend_from_slice(&other);
    store.checkpoint().unwrap();
    check(&store, n, &want, "re-appended");
    // The old snapshot: its own head, leaves on both sides of the cut,
    // proofs against its own head.
    assert_eq!(before.head(), old_head);
    for i in [0, seg - 1, seg, seg + 999, seg + 1000, probe, seg + 4999] {
        assert_eq!(before.leaf(i), Some(leaves(i..i + 1)[0]), "old leaf {i}");
        before
            .prove(i)
            .unwrap()
            .verify(tree_config(n).arity, HashKind::Blake3, &old_head)
            .unwrap_or_else(|e| panic!("old proof {i}: {e}"));
    }
    drop(store);
    let store = open(&fs, &cfg);
    assert_eq!(store.stats().tiered_segments[0], 1, "mapped at open");
    assert_eq!(store.finalized_size(), seg + 1000);
    check(&store, n, &want, "reopened");
    // Down to the file boundary (the finalized size allows it only when
    // finalized there): not possible here, so refused, nothing changed.
    assert!(matches!(
        store.truncate(seg),
        Err(StoreError::BelowFinalized { .. })
    ));
    assert_eq!(store.size(), want.len() as u64);
}

/// The same across a log file boundary with the file-aligned target, with a
/// mapping-free finalized size exactly at the boundary.
#[test]
fn truncate_to_a_tiered_log_file_boundary() {
    let n = 2;
    let seg = SEGMENT_LEN as u64;
    let mut cfg = explicit(n, 16);
    cfg.tier_below = 1;
    let fs = SimFs::new();
    let store = create(&fs, &cfg);
    let mut want = leaves(0..2 * seg + 10);
    store.append_batch(&want).unwrap();
    store.finalize(seg).unwrap();
    assert_eq!(store.stats().tiered_segments[0], 0);
    let before = store.snapshot();
    assert_eq!(log_files(&fs).len(), 3);
    store.truncate(seg).unwrap();
    want.truncate(seg as usize);
    assert_eq!(log_files(&fs).len(), 1, "files 1 and 2 removed");
    check(&store, n, &want, "at the boundary");
    assert_eq!(
        before.leaf(2 * seg + 9),
        Some(leaves(2 * seg + 9..2 * seg + 10)[0])
    );
    let other = leaves(700_000..700_000 + seg + 7);
    store.append_batch(&other).unwrap();
    want.extend_from_slice(&other);
    store.finalize(seg + 2).unwrap();
    assert_eq!(store.stats().tiered_segments[0], 1);
    drop(store);
    let store = open(&fs, &cfg);
    check(&store, n, &want, "reopened");
    assert_eq!(
        before.head(),
        reference(n, &leaves(0..2 * seg + 10)),
        "the old snapshot"
    );
}

/// A truncation that removes two whole log files and part of a third,
/// with a power loss at every boundary inside it, in every crash mode: the
/// store opens as before it or as after it, never in between; then the
/// indices are reused.
#[test]
fn truncate_across_log_files_is_atomic_under_power_loss() {
    let n = 3;
    for (to, tagged) in [(500u64, false), (1024, true), (2047, true), (0, false)] {
        let cfg = explicit(n, 10);
        let fs = SimFs::new();
        let store = create(&fs, &cfg);
        let all = leaves(0..3500);
        for block in 0..7u64 {
            let range = (block * 500) as usize..(block * 500 + 500) as usize;
            if tagged {
                store
                    .append_tagged(&all[range], BlockTag::number(block))
                    .unwrap();
            } else {
                store.append_batch(&all[range]).unwrap();
            }
        }
        store.checkpoint().unwrap();
        assert_eq!(log_files(&fs).len(), 4);
        let heads_before = store.heads(0, usize::MAX);
        let start = fs.op_count();
        store.truncate(to).unwrap();
        let end = fs.op_count();
        assert!(end > start, "a durable rollback writes");
        let files_after = log_files(&fs).len();
        // A store keeps its first log file from creation on.
        assert_eq!(
            files_after as u64,
            to.div_ceil(1024).max(1),
            "to {to}: log files left"
        );
        let after_head = reference(n, &all[..to as usize]);
        let before_head = reference(n, &all);
        let kept_tags: Vec<_> = heads_before
            .iter()
            .filter(|h| h.size <= to)
            .copied()
            .collect();
        let mut replay = fs.replay();
        let mut states = [0usize; 2];
        for k in start..=end {
            replay.seek(k);
            let mut modes = replay.crash_modes();
            // Tears: the first, a middle and the last cut are enough here.
            let tears: Vec<_> = modes.split_off(5);
            for pick in [0, tears.len() / 2, tears.len().saturating_sub(1)] {
                if let Some(&tear) = tears.get(pick) {
                    modes.push(tear);
                }
            }
            for mode in modes {
                let crashed = replay.crash(&mode, &mut ChaCha8Rng::seed_from_u64(k as u64));
                let ctx = format!(
                    "to {to}: power loss at boundary {k} of {start}..{end} ({}), {mode:?}",
                    if k > 0 {
                        fs.describe_op(k - 1)
                    } else {
                        String::new()
                    }
                );
                let store = Store::open(
                    Arc::new(crashed.clone()) as Arc<dyn Fs>,
                    Path::new(DB),
                    cfg.clone(),
                )
                .unwrap_or_else(|e| panic!("{ctx}: open: {e}"));
                let head = store.head();
                let heads = store.heads(0, usize::MAX);
                if head == before_head {
                    assert!(k < end, "{ctx}: the rollback returned, then was undone");
                    assert_eq!(heads, heads_before, "{ctx}: tags before");
                    states[0] += 1;
                } else {
                    assert_eq!(head, after_head, "{ctx}: neither before nor after");
                    assert_eq!(heads, kept_tags, "{ctx}: tags after");
                    states[1] += 1;
                }
                // The indices are reused either way.
                let size = head.size;
                store
                    .append_batch(&leaves(90_000..90_300))
                    .unwrap()
                    .token
                    .wait(WAIT)
                    .unwrap();
                drop(store);
                let store =
                    Store::open(Arc::new(crashed) as Arc<dyn Fs>, Path::new(DB), cfg.clone())
                        .unwrap_or_else(|e| panic!("{ctx}: second open: {e}"));
                let mut want = all[..size as usize].to_vec();
                want.extend(leaves(90_000..90_300));
                check(&store, n, &want, &ctx);
            }
        }
        assert!(
            states[0] > 0 && states[1] > 0,
            "to {to}: before/after {states:?}"
        );
    }
}

#[test]
fn truncate_to_0_then_start_again() {
    let cfg = explicit(4, 10);
    let fs = SimFs::new();
    let store = create(&fs, &cfg);
    store
        .append_tagged(&leaves(0..2500), BlockTag::number(7))
        .unwrap();
    store.checkpoint().unwrap();
    store.append_batch(&leaves(2500..2600)).unwrap();
    store.flush().unwrap();
    assert_eq!(store.truncate(0).unwrap(), TreeHead::EMPTY);
    assert_eq!(store.head(), TreeHead::EMPTY);
    assert!(store.heads(0, usize::MAX).is_empty());
    assert_eq!(store.snapshot().leaf(0), None);
    // Only the first log file is left: a store keeps it from creation on.
    assert_eq!(log_files(&fs).len(), 1, "{:?}", log_files(&fs));
    drop(store);
    let store = open(&fs, &cfg);
    assert_eq!(store.head(), TreeHead::EMPTY);
    assert!(store.heads(0, usize::MAX).is_empty());
    // Block 7 again (its tag went with its leaves), then more.
    let want = leaves(5000..6100);
    store
        .append_tagged(&want[..100], BlockTag::number(7))
        .unwrap();
    store.append_batch(&want[100..]).unwrap();
    store.checkpoint().unwrap();
    drop(store);
    let store = open(&fs, &cfg);
    check(&store, 4, &want, "after 0");
    assert_eq!(store.heads(0, usize::MAX)[0].size, 100);
}

#[test]
fn truncate_to_the_current_size_is_a_no_op() {
    let cfg = explicit(2, 10);
    let fs = SimFs::new();
    let store = create(&fs, &cfg);
    let first = store
        .append_tagged(&leaves(0..1500), BlockTag::number(1))
        .unwrap();
    store.checkpoint().unwrap();
    let second = store.append_batch(&leaves(1500..1600)).unwrap();
    let stats = store.stats();
    let ops = fs.op_count();
    let head = store.head();
    assert_eq!(store.truncate(1600).unwrap(), head);
    // By block: block 1 is the last tag, at 1500 < 1600: that is a real
    // rollback, so only `truncate(size)` is the no-op here.
    assert_eq!(fs.op_count(), ops, "nothing written");
    assert_eq!(store.stats(), stats);
    // Tokens are untouched: the pending one is flushed by its own wait.
    second.token.wait(WAIT).unwrap();
    first.token.wait(WAIT).unwrap();
    assert_eq!(store.heads(0, usize::MAX).len(), 1);
    // Nothing pending, all durable: still a no-op.
    let ops = fs.op_count();
    store.truncate(1600).unwrap();
    assert_eq!(fs.op_count(), ops);
    assert!(matches!(
        store.truncate(1601),
        Err(StoreError::BeyondSize {
            to: 1601,
            size: 1600,
            ..
        })
    ));
    // The last tag's block: the size stays, nothing above it to remove.
    store
        .append_tagged(&[], BlockTag::number(2))
        .unwrap()
        .token
        .wait(WAIT)
        .unwrap();
    let ops = fs.op_count();
    assert_eq!(store.truncate_to_block(2).unwrap(), head);
    assert_eq!(fs.op_count(), ops);
    drop(store);
    let store = open(&fs, &cfg);
    assert_eq!(store.head(), head);
    assert_eq!(store.heads(0, usize::MAX).len(), 2);
}

#[test]
fn truncate_below_the_finalized_size_is_refused_and_changes_nothing() {
    for explicit_finality in [true, false] {
        let cfg = if explicit_finality {
            explicit(3, 10)
        } else {
            config(3, 10)
        };
        let fs = SimFs::new();
        let store = create(&fs, &cfg);
        for block in 0..6u64 {
            store
                .append_tagged(
                    &leaves(block * 400..block * 400 + 400),
                    BlockTag::number(block),
                )
                .unwrap();
        }
        if explicit_finality {
            assert_eq!(store.finalize_to_block(2).unwrap(), 1200);
        } else {
            store.checkpoint().unwrap();
        }
        let pending = store.append_batch(&leaves(2400..2410)).unwrap();
        let finalized = store.finalized_size();
        assert_eq!(finalized, if explicit_finality { 1200 } else { 2400 });
        let ops = fs.op_count();
        let stats = store.stats();
        let head = store.head();
        let heads = store.heads(0, usize::MAX);
        let old_root = heads[1].root.unwrap();
        for refused in [
            store.truncate(finalized - 1),
            store.truncate(0),
            store.truncate_to_block(if explicit_finality { 1 } else { 4 }),
        ] {
            assert!(
                matches!(refused, Err(StoreError::BelowFinalized { finalized: f, .. }) if f == finalized),
                "{refused:?}"
            );
        }
        assert!(matches!(
            store.finalize(5000),
            Err(StoreError::BeyondSize { .. })
        ));
        assert_eq!(fs.op_count(), ops, "nothing written");
        assert_eq!(store.stats(), stats);
        assert_eq!(store.head(), head);
        assert_eq!(store.heads(0, usize::MAX), heads);
        assert_eq!(store.size_of_root(&old_root).unwrap().size, 800);
        pending.token.wait(WAIT).unwrap();
        // At the finalized size exactly: allowed.
        store.truncate(finalized).unwrap();
        assert_eq!(store.size(), finalized);
        // Finality is never lowered.
        assert_eq!(store.finalize(10).unwrap(), finalized);
        drop(store);
        let store = open(&fs, &cfg);
        assert_eq!(store.finalized_size(), finalized);
        check(&store, 3, &leaves(0..finalized), "reopened");
    }
}

/// A reorganisation that brings back the same leaves: accepted at the same
/// indices, the same roots again, while tokens of the first appends stay
/// rolled back.
#[test]
fn the_same_values_append_again_after_a_truncation() {
    let cfg = explicit(4, 10);
    let fs = SimFs::new();
    let store = create(&fs, &cfg);
    let base = leaves(0..700);
    store.append_tagged(&base, BlockTag::number(1)).unwrap();
    let orphan = leaves(700..1900);
    let old = store
        .append_tagged(
            &orphan,
            BlockTag {
                number: 2,
                hash: Some([2; 32]),
            },
        )
        .unwrap();
    old.token.wait(WAIT).unwrap();
    let old_root = store.head().root.unwrap();
    store.truncate_to_block(1).unwrap();
    assert_eq!(store.size_of_root(&old_root), None);
    let started = Instant::now();
    assert!(matches!(
        old.token.wait(WAIT),
        Err(StoreError::RolledBack { end: 1900, to: 700 })
    ));
    assert!(started.elapsed() < WAIT);
    let new = store
        .append_tagged(
            &orphan,
            BlockTag {
                number: 2,
                hash: Some([3; 32]),
            },
        )
        .unwrap();
    assert_eq!((new.first, new.count), (700, 1200));
    new.token.wait(WAIT).unwrap();
    assert!(matches!(
        old.token.is_durable(),
        Err(StoreError::RolledBack { .. })
    ));
    assert_eq!(store.head().root, Some(old_root));
    let found = store.size_of_root(&old_root).unwrap();
    assert_eq!((found.size, found.block), (1900, Some(2)));
    drop(store);
    let store = open(&fs, &cfg);
    let mut want = base.clone();
    want.extend_from_slice(&orphan);
    check(&store, 4, &want, "reopened");
    let heads = store.heads(0, usize::MAX);
    assert_eq!(heads[1].block_hash, Some([3; 32]), "the new block's hash");
    // Once more, across the reopen, with a crash right after the rollback.
    store.truncate(700).unwrap();
    let crashed = fs.crash(&CrashMode::DropUnsynced, &mut ChaCha8Rng::seed_from_u64(1));
    drop(store);
    let store = open(&crashed, &cfg);
    check(&store, 4, &base, "after a power loss");
    store
        .append_batch(&orphan)
        .unwrap()
        .token
        .wait(WAIT)
        .unwrap();
    check(&store, 4, &want, "again");
}

/// Regression: a power loss after the heads file's header was written but
/// before it was synced can keep the file's length and lose its bytes
/// (zeros); open refused such a file as corrupt ("bad magic") although it
/// can hold nothing (records are written only after the header is
/// durable). Found by `rollback_model` (RandomSectors). Now a bad header
/// with no valid record is reinitialised; with a record it is still damage.
#[test]
fn a_heads_file_whose_header_never_became_durable_holds_nothing() {
    use cairn_store::fs::OpenMode;
    let cfg = config(2, 10);
    let heads = Path::new("/db/heads");
    // The state such a power loss leaves: untagged leaves durable, a heads
    // file of one header's length, all zeros.
    let fs = SimFs::new();
    let store = create(&fs, &cfg);
    store.append_batch(&leaves(0..100)).unwrap();
    store.close().unwrap();
    let file = fs.open(heads, OpenMode::CreateNew).unwrap();
    file.write_at(&[0u8; 64], 0).unwrap();
    file.sync_data().unwrap();
    fs.sync_dir(Path::new(DB)).unwrap();
    drop(file);
    let store = open(&fs, &cfg);
    assert!(store.heads(0, usize::MAX).is_empty());
    store
        .append_tagged(&leaves(100..110), BlockTag::number(5))
        .unwrap()
        .token
        .wait(WAIT)
        .unwrap();
    drop(store);
    let store = open(&fs, &cfg);
    assert_eq!(store.heads(0, usize::MAX).len(), 1);
    check(&store, 2, &leaves(0..110), "tagged after");
    drop(store);
    // A damaged header in front of a valid record: refused.
    let file = fs.open(heads, OpenMode::Existing).unwrap();
    file.write_at(&[0u8; 64], 0).unwrap();
    file.sync_data().unwrap();
    drop(file);
    let got = Store::open(
        Arc::new(fs.clone()) as Arc<dyn Fs>,
        Path::new(DB),
        cfg.clone(),
    );
    assert!(
        matches!(got, Err(StoreError::Corrupt { .. })),
        "{:?}",
        got.err()
    );
}
