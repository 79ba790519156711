//! The history of an indexed tree: what insertions overwrote, kept for the
//! last heads, so that proofs can be built against any retained head.
//!
//! An insertion rewrites its low leaves' pointers and the complete nodes
//! above them in place; appending only changes nodes that were partial
//! (on the right edge) before it. So the tree at an earlier size `s` is the
//! current tree with each node that was complete at `s` replaced by the
//! value it had before its first overwrite at or after `s`, and each
//! partial node recomputed from its children by the Lean group rule.
//! Invariant: for every retained head of size `s`, every overwrite since
//! `s` of a leaf pointer below `s` or of a complete node is recorded, with
//! the size the tree had before it; records older than the oldest retained
//! head are dropped. Nothing here is persisted: a database rebuilds it from
//! its log of values at open.

use std::collections::{HashMap, VecDeque};

use super::error::IndexedError;
use super::leaf::IndexedLeaf;
use crate::config::TreeConfig;
use crate::hash::Hash;
use crate::view::View;

/// A leaf pointer before an overwrite: `at` is the tree's size before it.
#[derive(Clone, Copy, Debug)]
struct LeafVersion {
    at: u64,
    next_index: u64,
    next_value: Hash,
}

/// A node before an overwrite: `at` is the tree's size before it.
#[derive(Clone, Copy, Debug)]
struct NodeVersion {
    at: u64,
    hash: Hash,
}

/// Bytes one recorded leaf pointer costs in its list.
pub const LEAF_VERSION_BYTES: usize = std::mem::size_of::<LeafVersion>();
/// Bytes one recorded node costs in its list.
pub const NODE_VERSION_BYTES: usize = std::mem::size_of::<NodeVersion>();
/// Bytes a map slot costs for each position with records (key, list
/// header, and the hash map's control byte), beside its records.
const SLOT_BYTES: usize = 16 + std::mem::size_of::<Vec<NodeVersion>>() + 1;

/// A retained head: its size and root, and the last node of each level
/// above the leaves at its size (`edge[level - 1]`), when recorded.
///
/// The edge is what a proof at an old head would otherwise recompute on
/// every call: a node partial at that size is the hash of its children
/// at that size, recursively down to the leaves (a dozen hashes and a few
/// dozen history lookups at 10^7 leaves, for the top level alone, which
/// every proof crosses). It never changes once the head is made (later
/// insertions overwrite only nodes complete at that size, or append), so
/// it is taken from the tree when the head is current: depth x 32 bytes.
#[derive(Debug, Clone)]
struct Head {
    size: u64,
    root: Hash,
    edge: Option<Box<[Hash]>>,
}

/// The retained heads and the overwrites since the oldest of them.
#[derive(Debug, Clone)]
pub(crate) struct History {
    /// Heads kept at most (the current one included), at least 1.
    window: usize,
    /// Retained heads, oldest first; the last is the tree's current head.
    heads: VecDeque<Head>,
    /// Leaf index -> its pointers before each overwrite, oldest first.
    leaves: HashMap<u64, Vec<LeafVersion>>,
    /// (level >= 1, index) -> its values before each overwrite, oldest first.
    nodes: HashMap<(u32, u64), Vec<NodeVersion>>,
    /// Records held (leaf pointers, nodes).
    records: (usize, usize),
}

/// The heads a history retains, and how much it keeps for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryStats {
    /// Heads kept at most.
    pub window: usize,
    /// Heads retained now (the current one included).
    pub heads: usize,
    /// The oldest retained head's size.
    pub oldest: u64,
    /// Leaf pointers recorded.
    pub leaf_records: usize,
    /// Nodes recorded.
    pub node_records: usize,
    /// Positions with records.
    pub positions: usize,
    /// Bytes the records take, with their map slots and the heads' right
    /// edges (an estimate of the heap: list capacity beyond length and
    /// allocator overhead are not counted).
    pub bytes: usize,
}

impl History {
    /// A history holding only the head `(size, root)`.
    pub(crate) fn new(window: usize, size: u64, root: Hash) -> History {
        History {
            window: window.max(1),
            heads: VecDeque::from([Head {
                size,
                root,
                edge: None,
            }]),
            leaves: HashMap::new(),
            nodes: HashMap::new(),
            records: (0, 0),
        }
    }

    /// Whether anything is recorded at all (a window of more than one head).
    pub(crate) fn records(&self) -> bool {
        self.window > 1
    }

    pub(crate) fn window(&self) -> usize {
        self.window
    }

    /// Keeps at most `window` heads from now on (at least 1), dropping the
    /// oldest beyond it.
    pub(crate) fn set_window(&mut self, window: usize) {
        self.window = window.max(1);
        self.prune();
        if !self.records() {
            // The one head left is the current tree's: proofs read the tree.
            for head in &mut self.heads {
                head.edge = None;
            }
        }
    }

    /// Records that leaves `changed` (below `at`, the tree's size) are about
    /// to be overwritten: `old(index)` is each one's leaf now, `current`
    /// the tree now. Every node above them that is complete at `at` is
    /// recorded once.
    pub(crate) fn record(
        &mut self,
        config: TreeConfig,
        current: &View<'_>,
        at: u64,
        changed: &[(u64, IndexedLeaf)],
    ) {
        if !self.records() || changed.is_empty() {
            return;
        }
        debug_assert_eq!(current.size(), at);
        let n = config.arity.as_u64();
        let depth = config.depth_at(at);
        let mut keys: Vec<(u32, u64)> = Vec::with_capacity(changed.len() * depth as usize);
        for &(index, old) in changed {
            debug_assert!(index < at);
            let versions = self.leaves.entry(index).or_default();
            if versions.last().is_none_or(|v| v.at < at) {
                versions.push(LeafVersion {
                    at,
                    next_index: old.next_index,
                    next_value: old.next_value,
                });
                self.records.0 += 1;
            }
            let mut node = index;
            let mut span: u64 = 1;
            for level in 1..=depth {
                node /= n;
                span = span.saturating_mul(n);
                if (node + 1).saturating_mul(span) > at {
                    break; // partial at `at`, and so every node above it
                }
                keys.push((level, node));
            }
        }
        keys.sort_unstable();
        keys.dedup();
        for (level, index) in keys {
            let versions = self.nodes.entry((level, index)).or_default();
            if versions.last().is_none_or(|v| v.at < at) {
                versions.push(NodeVersion {
                    at,
                    hash: current.node(level, index),
                });
                self.records.1 += 1;
            }
        }
    }

    /// Records the tree's new head after a change that grew it, with its
    /// right edge (see [`Head`]) if given.
    pub(crate) fn push_head(&mut self, size: u64, root: Hash, edge: Option<Box<[Hash]>>) {
        if self.heads.back().is_some_and(|last| last.size == size) {
            self.heads.pop_back();
        }
        debug_assert!(self.heads.back().is_none_or(|last| last.size < size));
        self.heads.push_back(Head { size, root, edge });
        self.prune();
    }

    /// Forgets every head above `size` and every overwrite made at or
    /// after it (a rollback to `size`), then records `(size, root)` as the
    /// current head.
    pub(crate) fn truncate(&mut self, size: u64, root: Hash, edge: Option<Box<[Hash]>>) {
        while self.heads.back().is_some_and(|last| last.size >= size) {
            self.heads.pop_back();
        }
        let mut dropped = (0, 0);
        self.leaves.retain(|_, versions| {
            let keep = versions.partition_point(|v| v.at < size);
            dropped.0 += versions.len() - keep;
            versions.truncate(keep);
            !versions.is_empty()
        });
        self.nodes.retain(|_, versions| {
            let keep = versions.partition_point(|v| v.at < size);
            dropped.1 += versions.len() - keep;
            versions.truncate(keep);
            !versions.is_empty()
        });
        self.records.0 -= dropped.0;
        self.records.1 -= dropped.1;
        self.heads.push_back(Head { size, root, edge });
        self.prune();
    }

    /// Drops the oldest heads beyond the window and the records only they
    /// needed (overwrites made before the oldest retained head).
    fn prune(&mut self) {
        if self.heads.len() <= self.window {
            return;
        }
        while self.heads.len() > self.window {
            self.heads.pop_front();
        }
        let oldest = self.oldest();
        let mut dropped = (0, 0);
        self.leaves.retain(|_, versions| {
            let drop = versions.partition_point(|v| v.at < oldest);
            dropped.0 += drop;
            versions.drain(..drop);
            !versions.is_empty()
        });
        self.nodes.retain(|_, versions| {
            let drop = versions.partition_point(|v| v.at < oldest);
            dropped.1 += drop;
            versions.drain(..drop);
            !versions.is_empty()
        });
        self.records.0 -= dropped.0;
        self.records.1 -= dropped.1;
    }

    /// The oldest retained head's size.
    pub(crate) fn oldest(&self) -> u64 {
        self.heads.front().map_or(0, |head| head.size)
    }

    /// The retained heads, oldest first.
    pub(crate) fn heads(&self) -> impl DoubleEndedIterator<Item = (u64, Hash)> + '_ {
        self.heads.iter().map(|head| (head.size, head.root))
    }

    /// The right edge recorded with the retained head of `size` (see
    /// [`Head`]), if any.
    pub(crate) fn edge_at(&self, size: u64) -> Option<&[Hash]> {
        let at = self.heads.partition_point(|head| head.size < size);
        self.heads
            .get(at)
            .filter(|head| head.size == size)
            .and_then(|head| head.edge.as_deref())
    }

    /// The root of the retained head of `size`, or why there is none.
    pub(crate) fn root_of(&self, size: u64) -> Result<Hash, IndexedError> {
        let newest = self.heads.back().map_or(0, |head| head.size);
        if size > newest {
            return Err(crate::error::TreeError::SizeBeyondTree {
                size,
                tree_size: newest,
            }
            .into());
        }
        let oldest = self.oldest();
        if size < oldest {
            return Err(IndexedError::OutsideWindow {
                size,
                oldest,
                newest,
                window: self.window,
            });
        }
        let at = self.heads.partition_point(|head| head.size < size);
        match self.heads.get(at) {
            Some(head) if head.size == size => Ok(head.root),
            next => Err(IndexedError::NotAHead {
                size,
                before: at
                    .checked_sub(1)
                    .and_then(|i| self.heads.get(i))
                    .map_or(oldest, |head| head.size),
                after: next.map_or(newest, |head| head.size),
            }),
        }
    }

    /// The size of the retained head whose root is `root`, newest first.
    pub(crate) fn size_of_root(&self, root: &Hash) -> Option<u64> {
        self.heads
            .iter()
            .rev()
            .find(|head| head.root == *root)
            .map(|head| head.size)
    }

    /// Leaf `index`'s pointer at size `size` if it was overwritten since:
    /// `(next_index, next_value)`.
    pub(crate) fn pointer_at(&self, index: u64, size: u64) -> Option<(u64, Hash)> {
        let versions = self.leaves.get(&index)?;
        let first = versions.partition_point(|v| v.at < size);
        versions.get(first).map(|v| (v.next_index, v.next_value))
    }

    /// Node `(level >= 1, index)`'s value at size `size` if it was
    /// complete then and overwritten since.
    pub(crate) fn node_at(&self, level: u32, index: u64, size: u64) -> Option<Hash> {
        let versions = self.nodes.get(&(level, index))?;
        let first = versions.partition_point(|v| v.at < size);
        versions.get(first).map(|v| v.hash)
    }

    /// What it holds and its cost.
    pub(crate) fn stats(&self) -> HistoryStats {
        let positions = self.leaves.len() + self.nodes.len();
        let edges: usize = self
            .heads
            .iter()
            .filter_map(|head| head.edge.as_ref())
            .map(|edge| edge.len() * std::mem::size_of::<Hash>())
            .sum();
        HistoryStats {
            window: self.window,
            heads: self.heads.len(),
            oldest: self.oldest(),
            leaf_records: self.records.0,
            node_records: self.records.1,
            positions,
            bytes: self.records.0 * LEAF_VERSION_BYTES
                + self.records.1 * NODE_VERSION_BYTES
                + positions * SLOT_BYTES
                + edges,
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use crate::indexed::{IndexedError, IndexedTree};
    use crate::{Arity, Hash, HashKind, TreeConfig, TreeHead};

    fn value(seed: u64) -> Hash {
        let mut value = *blake3::hash(&seed.to_le_bytes()).as_bytes();
        value[0] &= 0x0f; // canonical for the field hashes too
        value
    }

    /// Checks every retained head of `tree` against the tree rebuilt from
    /// its values (`values[..size - 1]`): the root, and the proofs of
    /// `probes` (absence or membership, whichever holds) and of a few leaf
    /// indices, equal to the rebuilt tree's and verifying against the head.
    fn check_heads(tree: &IndexedTree, values: &[Hash], probes: &[Hash]) {
        let config = tree.config();
        for head in tree.heads() {
            let size = head.size;
            let reference =
                IndexedTree::from_values(config, &values[..usize::try_from(size - 1).unwrap()])
                    .unwrap();
            assert_eq!(head, reference.head(), "size {size}");
            assert_eq!(tree.recompute_root_at(size).unwrap(), head.root.unwrap());
            for probe in probes {
                match reference.prove_absence(probe) {
                    Ok(want) => {
                        let got = tree.prove_absence_at(probe, size).unwrap();
                        assert_eq!(got, want, "size {size}");
                        got.verify(config.arity, config.hash, &head, probe).unwrap();
                    }
                    Err(IndexedError::Present { .. }) => {
                        let got = tree.prove_value_at(probe, size).unwrap();
                        assert_eq!(got, reference.prove_value(probe).unwrap());
                        got.verify(config.arity, config.hash, &head, probe).unwrap();
                    }
                    Err(other) => panic!("{other}"),
                }
            }
            for index in [0, size / 2, size - 1] {
                let got = tree.prove_index_at(index, size).unwrap();
                assert_eq!(got, reference.prove_index(index).unwrap(), "size {size}");
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn proofs_at_every_retained_head_equal_the_rebuilt_trees(
            arity in 2u64..6,
            window in 1usize..7,
            blocks in prop::collection::vec((1usize..90, any::<bool>(), 0u8..8), 1..10),
        ) {
            let config = TreeConfig::new(Arity::new(arity).unwrap(), HashKind::Blake3);
            let mut tree = IndexedTree::new(config);
            tree.set_history_window(window);
            let mut values: Vec<Hash> = Vec::new();
            let mut seed = 0u64;
            for (count, witnessed, rollback) in blocks {
                let batch: Vec<Hash> = (0..count).map(|_| { seed += 1; value(seed) }).collect();
                if witnessed {
                    tree.insert_with_witness(&batch).unwrap();
                } else {
                    tree.insert_batch(&batch).unwrap();
                }
                values.extend_from_slice(&batch);
                if rollback == 0 && values.len() > 3 {
                    let to = values.len() as u64 / 2 + 1;
                    tree.truncate(to).unwrap();
                    values.truncate(usize::try_from(to - 1).unwrap());
                }
                prop_assert!(tree.heads().len() <= window);
                prop_assert_eq!(tree.heads().last().copied(), Some(tree.head()));
                let mut probes: Vec<Hash> = (0..6).map(|k| value(seed + 1000 + k)).collect();
                probes.extend(values.iter().step_by(7).copied());
                check_heads(&tree, &values, &probes);
            }
        }
    }

    #[test]
    fn sizes_outside_the_window_or_between_heads_are_refused_with_the_window() {
        let config = TreeConfig::new(Arity::new(2).unwrap(), HashKind::Blake3);
        let mut tree = IndexedTree::new(config);
        tree.set_history_window(3);
        for block in 0..5u64 {
            let batch: Vec<Hash> = (0..4).map(|k| value(block * 10 + k)).collect();
            tree.insert_batch(&batch).unwrap();
        }
        // Heads at 1, 5, 9, 13, 17, 21: the last three are kept.
        let sizes: Vec<u64> = tree.heads().iter().map(|h| h.size).collect();
        assert_eq!(sizes, [13, 17, 21]);
        assert_eq!(
            tree.prove_absence_at(&value(999), 9).unwrap_err(),
            IndexedError::OutsideWindow {
                size: 9,
                oldest: 13,
                newest: 21,
                window: 3
            }
        );
        assert_eq!(
            tree.head_at(15).unwrap_err(),
            IndexedError::NotAHead {
                size: 15,
                before: 13,
                after: 17
            }
        );
        assert!(matches!(
            tree.head_at(22).unwrap_err(),
            IndexedError::Tree(crate::TreeError::SizeBeyondTree {
                size: 22,
                tree_size: 21
            })
        ));
        let message = tree.head_at(2).unwrap_err().to_string();
        assert!(
            message.contains("window of 3 heads") && message.contains("13..=21"),
            "{message}"
        );
        // A rollback below the window keeps the head it rolls back to.
        tree.truncate(3).unwrap();
        assert_eq!(tree.heads(), vec![TreeHead::new(3, tree.root())]);
        assert_eq!(
            tree.history_stats().leaf_records + tree.history_stats().node_records,
            0
        );
    }

    #[test]
    fn records_are_dropped_with_the_heads_that_needed_them() {
        let config = TreeConfig::new(Arity::new(4).unwrap(), HashKind::Blake3);
        let mut tree = IndexedTree::new(config);
        tree.set_history_window(4);
        for block in 0..50u64 {
            let batch: Vec<Hash> = (0..20).map(|k| value(block * 100 + k)).collect();
            tree.insert_batch(&batch).unwrap();
        }
        let full = tree.history_stats();
        assert_eq!(full.heads, 4);
        assert!(full.leaf_records > 0 && full.node_records > 0);
        // At most the three newest batches' overwrites are kept.
        assert!(full.leaf_records <= 3 * 20, "{full:?}");
        tree.set_history_window(1);
        let none = tree.history_stats();
        assert_eq!(
            (none.leaf_records, none.node_records, none.bytes),
            (0, 0, 0)
        );
    }
}
