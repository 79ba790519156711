//! The tracker in lockstep with zcash's `shardtree` (the tree Zcash
//! wallets keep witnesses in) over a depth-20 Poseidon N = 2 imt: random
//! sequences of appends (some marked), syncs, checkpoints, rewinds and
//! unmarks drive both, and every root and every marked leaf's witness
//! must agree. `shardtree` hashes through [`Node`], cairn's Poseidon of two
//! children; its empty subtree of level k (`Hashable::empty_root`, the
//! empty leaf combined with itself k times) is then exactly the imt's
//! `zeros[k]` for the imt's zero value as the empty leaf, which the test
//! checks rather than assumes.
//!
//! `shardtree` marks a leaf as it is appended, so marks here are made at
//! append (the tracker can also mark older leaves, which `shardtree`
//! cannot express). An unmark after checkpoint `c` is recorded at `c` in
//! `shardtree` (so a rewind to `c` brings the mark back), as the tracker
//! restores `c`'s marks on a rewind. A rewind drops the leaves after the
//! checkpoint; the leaves appended after it are new ones (a reorg), which
//! the tracker reads from a store republished with the new chain.
//!
//! The default run is a few seconds; `CAIRN_SHARDTREE_CASES=N` runs N
//! random sequences instead (e.g. 500 for a long run).

use cairn_core::{Hash, HashKind, TreeConfig};
use cairn_tiles::Unsigned;
use cairn_wallet::{Tracker, WalletError, sync};
use incrementalmerkletree::{Hashable, Level, Position, Retention};
use proptest::prelude::*;
use shardtree::ShardTree;
use shardtree::store::ShardStore;
use shardtree::store::memory::MemoryShardStore;

use crate::{Published, imt};

/// The tree's depth, as `shardtree`'s `DEPTH` and the imt's `depth`.
const DEPTH: u8 = 20;
/// `shardtree`'s shard height: small, so that appends cross shards and
/// its cap is exercised.
const SHARD_HEIGHT: u8 = 6;
/// Checkpoints each side retains.
const WINDOW: usize = 4;
/// The imt's zero value, `shardtree`'s empty leaf.
const ZERO: Hash = [0; 32];

/// A node hashed with cairn's Poseidon (circomlib's, over BN254) of two
/// children.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Node(Hash);

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "0x")?;
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl Hashable for Node {
    fn empty_leaf() -> Node {
        Node(ZERO)
    }

    fn combine(_level: Level, a: &Node, b: &Node) -> Node {
        Node(HashKind::Poseidon.hash_children(&[a.0, b.0]))
    }
}

type Shards = ShardTree<MemoryShardStore<Node, u64>, DEPTH, SHARD_HEIGHT>;

fn config() -> TreeConfig {
    imt(2, HashKind::Poseidon, u32::from(DEPTH))
}

/// cairn's `zeros[k]`, computed from the spec's definition.
fn zeros() -> Vec<Hash> {
    let mut zeros = vec![ZERO];
    for k in 0..usize::from(DEPTH) {
        let z = zeros[k];
        zeros.push(HashKind::Poseidon.hash_children(&[z, z]));
    }
    zeros
}

#[test]
fn shardtree_empty_roots_are_the_imt_zero_hashes() {
    let zeros = zeros();
    for (k, zero) in zeros.iter().enumerate() {
        let level = Level::from(u8::try_from(k).unwrap());
        assert_eq!(Node::empty_root(level), Node(*zero), "level {k}");
    }
    let tracker = Tracker::new(config(), WINDOW).unwrap();
    assert_eq!(tracker.head().root, Some(zeros[usize::from(DEPTH)]));
    let shards = Shards::new(MemoryShardStore::empty(), WINDOW);
    assert_eq!(
        shards.root_at_checkpoint_depth(None).unwrap(),
        tracker.head().root.map(Node)
    );
}

#[derive(Clone, Debug)]
enum Op {
    /// Appends `count` new leaves, marking those at the given offsets.
    Append { count: u64, marks: Vec<u64> },
    /// Syncs the tracker to the store's head (no checkpoint).
    Sync,
    /// Syncs, then checkpoints the next block on both sides.
    Checkpoint,
    /// Rewinds both to the block `back` blocks before the last.
    Rewind(u64),
    /// Unmarks one of the marked leaves.
    Unmark(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (1u64..300, proptest::collection::vec(0u64..300, 0..3))
            .prop_map(|(count, marks)| Op::Append { count, marks }),
        1 => Just(Op::Sync),
        3 => Just(Op::Checkpoint),
        2 => (0u64..7).prop_map(Op::Rewind),
        1 => any::<u64>().prop_map(Op::Unmark),
    ]
}

/// Both sides and the chain they follow.
struct Lockstep {
    tracker: Tracker,
    shards: Shards,
    /// The chain's leaves (after a rewind: the surviving prefix, then new ones).
    leaves: Vec<Hash>,
    /// The store the tracker syncs from, republished after a rewind.
    published: Published,
    /// Leaves made so far, so a reorg's leaves differ from the dropped ones.
    made: u64,
    /// The last block checkpointed.
    block: u64,
    zeros: Vec<Hash>,
}

impl Lockstep {
    fn new() -> Lockstep {
        Lockstep {
            tracker: Tracker::new(config(), WINDOW).unwrap(),
            shards: Shards::new(MemoryShardStore::empty(), WINDOW),
            leaves: Vec::new(),
            published: Published::new(config()),
            made: 0,
            block: 0,
            zeros: zeros(),
        }
    }

    fn apply(&mut self, op: &Op) {
        match op {
            Op::Append { count, marks } => {
                for offset in 0..*count {
                    let mut leaf = cairn_testkit::leaf(30, self.made);
                    leaf[0] = 0;
                    self.made += 1;
                    let index = self.leaves.len() as u64;
                    let marked = marks.contains(&offset);
                    let retention = if marked {
                        self.tracker.mark(index).unwrap();
                        Retention::Marked
                    } else {
                        Retention::Ephemeral
                    };
                    self.shards.append(Node(leaf), retention).unwrap();
                    self.leaves.push(leaf);
                }
            }
            Op::Sync => {
                self.sync();
                self.check_tip();
            }
            Op::Checkpoint => {
                self.sync();
                self.block += 1;
                self.tracker.checkpoint(self.block).unwrap();
                self.shards.checkpoint(self.block).unwrap();
                self.check_checkpoint();
            }
            Op::Rewind(back) => {
                let target = self.block.saturating_sub(*back);
                let retained = self.tracker.checkpoints();
                let got = self.tracker.rewind(target);
                let found = self.shards.truncate_to_checkpoint(&target).unwrap();
                assert_eq!(got.is_ok(), found, "rewind to {target}: {got:?}");
                assert_eq!(found, retained.contains(&target));
                if !found {
                    assert!(
                        matches!(
                            got,
                            Err(WalletError::RewindBeyondWindow { .. }
                                | WalletError::UnknownBlock { .. })
                        ),
                        "{got:?}"
                    );
                    return;
                }
                self.block = target;
                let size = self.tracker.head().size;
                let tip = self.shards.max_leaf_position(None).unwrap();
                assert_eq!(tip.map_or(0, |p| u64::from(p) + 1), size);
                self.leaves.truncate(usize::try_from(size).unwrap());
                // The store holds the dropped leaves: the next sync reads a
                // store republished with the chain as it now is.
                self.published = Published::new(config());
                self.check_checkpoint();
            }
            Op::Unmark(at) => {
                let marked: Vec<u64> = self.tracker.marked().collect();
                if marked.is_empty() {
                    return;
                }
                let index = marked[usize::try_from(at % marked.len() as u64).unwrap()];
                assert!(self.tracker.unmark(index));
                let last = self.tracker.checkpoints().last().copied();
                let removed = self
                    .shards
                    .remove_mark(Position::from(index), last.as_ref())
                    .unwrap();
                assert!(removed, "leaf {index} is marked in shardtree");
            }
        }
        self.check_checkpoints();
    }

    /// Publishes the chain's new leaves and syncs the tracker to them.
    fn sync(&mut self) {
        let published = self.published.tree.size();
        let size = self.leaves.len();
        if size > usize::try_from(published).unwrap() {
            self.published
                .grow(&self.leaves[usize::try_from(published).unwrap()..]);
        }
        if size > 0 {
            sync(&mut self.tracker, &self.published.store, &Unsigned).unwrap();
        }
        assert_eq!(self.tracker.head().size, size as u64);
    }

    /// The tracker's head root is `shardtree`'s root over all its leaves.
    fn check_tip(&self) {
        let root = self.shards.root_at_checkpoint_depth(None).unwrap();
        assert_eq!(root, self.tracker.head().root.map(Node));
    }

    /// At a checkpoint just taken or rewound to: the roots agree, and every
    /// leaf the tracker keeps has `shardtree`'s witness.
    fn check_checkpoint(&mut self) {
        let head = self.tracker.head();
        let root = self.shards.root_at_checkpoint_depth_caching(Some(0));
        assert_eq!(root.unwrap(), head.root.map(Node), "root at {}", head.size);
        let kept = self.shards.marked_positions().unwrap();
        for index in self.tracker.marked().collect::<Vec<_>>() {
            assert!(
                index < head.size,
                "leaf {index} marked beyond {}",
                head.size
            );
            assert!(kept.contains(&Position::from(index)), "leaf {index}");
            let witness = self.tracker.witness(index).unwrap();
            assert_eq!(witness.leaf(), self.leaves[usize::try_from(index).unwrap()]);
            let path = self
                .shards
                .witness_at_checkpoint_depth_caching(Position::from(index), 0)
                .unwrap()
                .unwrap();
            assert_eq!(u64::from(path.position()), index);
            let got = self.full_path(index, head.size, witness.siblings());
            let want: Vec<Hash> = path.path_elems().iter().map(|n| n.0).collect();
            assert_eq!(got, want, "witness of leaf {index} at size {}", head.size);
            assert_eq!(Some(path.root(Node(witness.leaf()))), head.root.map(Node));
        }
    }

    /// Both sides retain the same checkpoints.
    fn check_checkpoints(&self) {
        let retained = self.tracker.checkpoints();
        let store = self.shards.store();
        for block in 1..=self.block.max(1) {
            let held = store.get_checkpoint(&block).unwrap().is_some();
            assert_eq!(held, retained.contains(&block), "checkpoint {block}");
        }
        assert_eq!(store.checkpoint_count().unwrap(), retained.len());
    }

    /// The witness's siblings as `shardtree` gives them: one per level,
    /// `zeros[k]` where the sibling does not exist (a cairn imt witness
    /// carries only the siblings that exist).
    fn full_path(&self, index: u64, size: u64, siblings: &[Hash]) -> Vec<Hash> {
        let mut rest = siblings.iter();
        let path = (0..u32::from(DEPTH))
            .map(|k| {
                let sibling = (index >> k) ^ 1;
                if sibling << k < size {
                    *rest.next().expect("a sibling per level that has one")
                } else {
                    self.zeros[usize::try_from(k).unwrap()]
                }
            })
            .collect();
        assert_eq!(rest.next(), None, "no sibling left over");
        path
    }
}

fn run(ops: &[Op]) {
    let mut lockstep = Lockstep::new();
    for op in ops {
        lockstep.apply(op);
    }
}

fn cases() -> u32 {
    std::env::var("CAIRN_SHARDTREE_CASES")
        .ok()
        .map_or(6, |v| v.parse().expect("CAIRN_SHARDTREE_CASES is a count"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn tracker_agrees_with_shardtree_over_random_appends_marks_checkpoints_rewinds_and_unmarks(
        ops in proptest::collection::vec(op(), 1..40),
    ) {
        run(&ops);
    }
}

/// A fixed sequence that crosses shards and tiles, unmarks after a
/// checkpoint and rewinds past the unmark, and reorgs onto new leaves.
#[test]
fn tracker_agrees_with_shardtree_across_a_reorg_that_restores_an_unmarked_leaf() {
    let append = |count, marks: &[u64]| Op::Append {
        count,
        marks: marks.to_vec(),
    };
    run(&[
        append(70, &[0, 63, 64]),
        Op::Checkpoint,
        append(200, &[10, 199]),
        Op::Checkpoint,
        Op::Unmark(0),
        append(5, &[]),
        Op::Sync,
        Op::Checkpoint,
        Op::Rewind(1),
        append(300, &[255]),
        Op::Checkpoint,
        Op::Checkpoint,
        Op::Checkpoint,
        Op::Checkpoint,
        Op::Checkpoint,
        Op::Rewind(6),
        Op::Rewind(4),
    ]);
}
