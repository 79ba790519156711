//! Witnesses equal the tree's own proofs at the adopted head.

use cairn_core::{HashKind, TreeConfig};
use cairn_tiles::Unsigned;
use cairn_wallet::{Tracker, WalletError, sync};
use proptest::prelude::*;

use crate::{Published, config, imt, leaves};

/// Every marked leaf's witness equals the tree's proof at the tracker's
/// head, and encodes as the CLI's formats do.
fn check(tracker: &Tracker, published: &mut Published) {
    let head = tracker.head();
    let view = published.tree.at_size(head.size).unwrap();
    assert_eq!(view.head(), head);
    for index in tracker.marked().filter(|&i| i < head.size) {
        let got = tracker.witness(index).unwrap();
        assert_eq!(
            got,
            view.prove(index).unwrap(),
            "leaf {index} at {}",
            head.size
        );
    }
}

#[derive(Clone, Debug)]
enum Op {
    Grow(u64),
    Mark(u64),
    Unmark(u64),
    Checkpoint,
    Rewind(u64),
    Save,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (1u64..700).prop_map(Op::Grow),
        3 => any::<u64>().prop_map(Op::Mark),
        1 => any::<u64>().prop_map(Op::Unmark),
        2 => Just(Op::Checkpoint),
        1 => (0u64..6).prop_map(Op::Rewind),
        1 => Just(Op::Save),
    ]
}

/// Runs `ops` against a tree of `config`, syncing after each growth, and
/// checks every witness after each step.
fn run(config: TreeConfig, ops: &[Op]) {
    let all = leaves(9, 6_000);
    let mut published = Published::new(config);
    let mut tracker = Tracker::new(config, 4).unwrap();
    let mut block = 0u64;
    let mut size = 0u64;
    for op in ops {
        match *op {
            Op::Grow(count) => {
                let to = (size + count).min(all.len() as u64);
                if config.capacity().is_some_and(|cap| to > cap) {
                    continue;
                }
                if to > size {
                    published.grow(&all[size as usize..to as usize]);
                    size = to;
                }
                if size == 0 {
                    continue;
                }
                // A tracker that rewound below the store's head follows it again.
                sync(&mut tracker, &published.store, &Unsigned).unwrap();
            }
            Op::Mark(at) => {
                // Marks below the head and just beyond it.
                let index = at % (tracker.head().size + 3);
                if let Some(capacity) = config.capacity().filter(|&c| index >= c) {
                    assert_eq!(
                        tracker.mark(index),
                        Err(WalletError::BeyondCapacity { index, capacity })
                    );
                    continue;
                }
                tracker.mark(index).unwrap();
                if size == 0 {
                    continue;
                }
                let got = tracker.witness(index);
                if index >= tracker.head().size {
                    assert!(matches!(got, Err(WalletError::NotInTree { .. })), "{got:?}");
                }
                sync(&mut tracker, &published.store, &Unsigned).unwrap();
            }
            Op::Unmark(at) => {
                let marked: Vec<u64> = tracker.marked().collect();
                if !marked.is_empty() {
                    let index = marked[(at % marked.len() as u64) as usize];
                    assert!(tracker.unmark(index));
                    assert_eq!(
                        tracker.witness(index),
                        Err(WalletError::NotMarked { index })
                    );
                }
            }
            Op::Checkpoint => {
                block += 1;
                tracker.checkpoint(block).unwrap();
            }
            Op::Rewind(back) => {
                let retained = tracker.checkpoints();
                let target = block.saturating_sub(back);
                let got = tracker.rewind(target);
                if retained.contains(&target) {
                    got.unwrap();
                    assert_eq!(tracker.checkpoints().last(), Some(&target));
                    block = target;
                } else if retained.first().is_none_or(|&oldest| target < oldest) {
                    assert!(
                        matches!(got, Err(WalletError::RewindBeyondWindow { .. })),
                        "{got:?}"
                    );
                } else {
                    assert!(
                        matches!(got, Err(WalletError::UnknownBlock { .. })),
                        "{got:?}"
                    );
                }
            }
            Op::Save => {
                let bytes = tracker.to_bytes();
                let back = Tracker::from_bytes(&bytes).unwrap();
                assert_eq!(back.to_bytes(), bytes);
                assert_eq!(back.head(), tracker.head());
                tracker = back;
            }
        }
        check(&tracker, &mut published);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn witnesses_equal_the_trees_after_random_appends_marks_and_rewinds(
        n in prop_oneof![Just(2u64), Just(3), Just(4), Just(16)],
        fixed in any::<bool>(),
        ops in proptest::collection::vec(op(), 1..40),
    ) {
        let config = if fixed { imt(n, HashKind::Blake3, 14u32.div_ceil(n.ilog2())) } else { config(n, HashKind::Blake3) };
        run(config, &ops);
    }
}

/// Every hash, both kinds: a wallet following growth in blocks across
/// tile boundaries, with marks at tile edges.
#[test]
fn witnesses_equal_the_trees_under_every_hash_and_kind() {
    let hashes = [
        HashKind::Blake3,
        HashKind::Sha256,
        HashKind::Keccak256,
        HashKind::Poseidon,
        HashKind::MiMCSponge,
    ];
    for hash in hashes {
        for config in [
            config(2, hash),
            imt(2, hash, 12),
            config(5, hash),
            imt(4, hash, 6),
        ] {
            let ops = [
                Op::Grow(300),
                Op::Mark(0),
                Op::Mark(255),
                Op::Mark(299),
                Op::Checkpoint,
                Op::Grow(257),
                Op::Mark(556),
                Op::Checkpoint,
                Op::Grow(700),
                Op::Save,
                Op::Rewind(1),
                Op::Grow(1),
                Op::Mark(1_000),
                Op::Grow(500),
            ];
            run(config, &ops);
        }
    }
}
