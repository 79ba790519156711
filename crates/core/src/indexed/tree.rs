//! The indexed tree: a LeanIMT over linked-list leaves kept in sorted
//! order, so that a value's absence is shown by its predecessor ("low")
//! leaf.
//!
//! Invariant: leaf 0 is the guard (value 0); leaf `i > 0` holds the
//! `i`-th value inserted; every leaf points to the leaf of the next larger
//! value (or holds the end marker). The tree is therefore a function of the
//! inserted values in order: inserting a batch at once, one by one, or
//! rebuilding from the values all give the same leaves and root.
//!
//! State: the leaf hashes in a [`LeanImt`] (updated in place with copy on
//! write, so snapshots keep their answers), every leaf's value in a
//! [`Level`] (append-only), and the leaf indices in sorted order
//! ([`SortedIndex`]). Memory per value: 32 (value) + 32 (leaf hash) +
//! 32 / (N - 1) (upper levels) + about 21 (sorted index) bytes.

use crate::cast::to_usize;
use std::collections::HashMap;

use rayon::prelude::*;

use super::error::{Duplicate, DuplicateOf, IndexedError};
use super::history::{History, HistoryStats};
use super::leaf::{GUARD_VALUE, IndexedLeaf};
use super::proof::{AbsenceProof, IndexedMembershipProof, InsertionStep, InsertionWitness};
use super::sorted::{Entry, SortedIndex};
use crate::hash::{Hash, HashKind};
use crate::level::Level;
use crate::tree::{LeanImt, Snapshot, TreeConfig, TreeHead, View};

/// Leaves hashed per task when a batch's leaves are hashed in parallel.
const HASH_PIECE: usize = 2048;

/// An indexed Merkle tree: sorted linked-list leaves
/// `(value, next_index, next_value)` under an n-ary LeanIMT, with
/// absence (non-membership) proofs, membership proofs of values and
/// insertion witnesses. See docs/spec.md, "Indexed trees".
#[derive(Debug)]
pub struct IndexedTree {
    tree: LeanImt,
    values: Level,
    sorted: SortedIndex,
    /// The retained heads and what insertions overwrote since the oldest
    /// (one head, nothing recorded, until a window is set).
    history: History,
}

impl IndexedTree {
    /// A tree holding only the guard leaf. `config`'s kind is replaced by
    /// [`TreeKind::Indexed`](crate::TreeKind::Indexed): an indexed tree has
    /// the Lean shape, whatever kind was asked.
    pub fn new(config: TreeConfig) -> IndexedTree {
        let config = config.with_kind(crate::TreeKind::Indexed);
        let mut tree = LeanImt::new(config);
        tree.append(IndexedLeaf::GUARD.hash(config.hash))
            .expect("a fresh tree takes one leaf");
        tree.commit();
        let mut values = Level::default();
        values.extend_from_slice(&[GUARD_VALUE]);
        let mut sorted = SortedIndex::default();
        sorted.insert(
            sorted.locate(&GUARD_VALUE, &values).unwrap_err(),
            Entry::new(&GUARD_VALUE, 0),
            &values,
        );
        let root = tree.root().expect("the guard leaf");
        IndexedTree {
            tree,
            values,
            sorted,
            history: History::new(1, 1, root),
        }
    }

    /// The tree after inserting `values` in order into an empty one, built
    /// at once (a sort, then every leaf hashed once): how a database
    /// rebuilds its tree from its log.
    pub fn from_values(config: TreeConfig, values: &[Hash]) -> Result<IndexedTree, IndexedError> {
        IndexedTree::from_runs(config, [values])
    }

    /// [`IndexedTree::from_values`] over values held in several runs (the
    /// segments of a store's leaf level), in order. Duplicates are found
    /// after the sort (no hash set): transient memory is about 80 bytes
    /// per value on top of the tree.
    pub fn from_runs<'a>(
        config: TreeConfig,
        runs: impl IntoIterator<Item = &'a [Hash]>,
    ) -> Result<IndexedTree, IndexedError> {
        let mut tree = IndexedTree::new(config);
        let mut all = Level::default();
        all.extend_from_slice(&[GUARD_VALUE]);
        for run in runs {
            all.extend_from_slice(run);
        }
        let count = all.len() - 1;
        if count == 0 {
            return Ok(tree);
        }
        for index in 1..=count {
            let value = all.at(index);
            let position = index - 1;
            if value == GUARD_VALUE {
                return Err(IndexedError::GuardValue { position });
            }
            if !config.hash.accepts(&value) {
                return Err(IndexedError::NonCanonical { position, value });
            }
        }
        tree.tree.check_batch_size(count as u64)?;
        let mut order: Vec<u64> = (0..all.len() as u64).collect();
        order.par_sort_unstable_by(|&a, &b| {
            all.at(to_usize(a))
                .cmp(&all.at(to_usize(b)))
                .then(a.cmp(&b))
        });
        let mut duplicates: Vec<Duplicate> = order
            .windows(2)
            .filter(|pair| all.at(to_usize(pair[0])) == all.at(to_usize(pair[1])))
            .map(|pair| Duplicate {
                position: to_usize(pair[1]) - 1,
                value: all.at(to_usize(pair[1])),
                of: DuplicateOf::Batch(to_usize(pair[0]) - 1),
            })
            .collect();
        if !duplicates.is_empty() {
            duplicates.sort_by_key(|d| d.position);
            return Err(IndexedError::Duplicates {
                batch: count,
                duplicates,
            });
        }
        // Each leaf hashed from its successor in the order, by rank, then
        // placed at its index.
        let ranked: Vec<Hash> = order
            .par_chunks(HASH_PIECE)
            .enumerate()
            .flat_map_iter(|(piece, indices)| {
                let leaves: Vec<IndexedLeaf> = indices
                    .iter()
                    .enumerate()
                    .map(|(offset, &index)| {
                        let (next_index, next_value) =
                            match order.get(piece * HASH_PIECE + offset + 1) {
                                Some(&next) => (next, all.at(to_usize(next))),
                                None => (0, super::leaf::END_MARKER),
                            };
                        IndexedLeaf {
                            value: all.at(to_usize(index)),
                            next_index,
                            next_value,
                        }
                    })
                    .collect();
                hash_leaves(config.hash, &leaves)
            })
            .collect();
        let mut hashes = vec![[0u8; 32]; all.len()];
        for (&index, hash) in order.iter().zip(&ranked) {
            hashes[to_usize(index)] = *hash;
        }
        drop(ranked);
        let entries: Vec<Entry> = order
            .iter()
            .map(|&i| Entry::new(&all.at(to_usize(i)), i))
            .collect();
        drop(order);
        tree.sorted = SortedIndex::from_sorted(&entries, &all);
        tree.tree = LeanImt::from_leaves(config.with_kind(crate::TreeKind::Indexed), &hashes)?;
        tree.values = all;
        tree.history = History::new(1, tree.size(), tree.root());
        Ok(tree)
    }

    /// Whether `extra` more values fit under the configured maximum depth.
    pub fn check_room(&self, extra: u64) -> Result<(), IndexedError> {
        Ok(self.tree.check_batch_size(extra)?)
    }

    /// The tree's configuration.
    pub fn config(&self) -> TreeConfig {
        self.tree.config()
    }

    /// Leaves, the guard included: one more than the values inserted.
    pub fn size(&self) -> u64 {
        self.tree.size()
    }

    /// The root (an indexed tree always has one: the guard's at least).
    pub fn root(&self) -> Hash {
        self.reader()
            .view
            .root()
            .expect("the guard leaf is always there")
    }

    /// The size and root.
    pub fn head(&self) -> TreeHead {
        TreeHead::new(self.size(), self.root())
    }

    /// The value of leaf `index` (0 for the guard).
    pub fn value(&self, index: u64) -> Option<Hash> {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.values.get(i))
            .copied()
    }

    /// The leaf at `index`, with its pointer.
    pub fn leaf(&self, index: u64) -> Option<IndexedLeaf> {
        self.reader().leaf(index)
    }

    /// The leaf index of `value`, if the tree holds it (0 for the guard value).
    pub fn index_of(&self, value: &Hash) -> Option<u64> {
        self.reader().index_of(value)
    }

    /// The absence proof of `value`: its low leaf and that leaf's path.
    pub fn prove_absence(&self, value: &Hash) -> Result<AbsenceProof, IndexedError> {
        self.reader().prove_absence(value)
    }

    /// The membership proof of `value`: its leaf and path.
    pub fn prove_value(&self, value: &Hash) -> Result<IndexedMembershipProof, IndexedError> {
        self.reader().prove_value(value)
    }

    /// The membership proof of leaf `index` (the guard's for 0).
    pub fn prove_index(&self, index: u64) -> Result<IndexedMembershipProof, IndexedError> {
        self.reader().prove_index(index)
    }

    /// An immutable, thread-safe copy of the tree as it is now, sharing
    /// its memory: later insertions and rollbacks never change what it
    /// returns (they copy what they would overwrite).
    pub fn snapshot(&mut self) -> IndexedSnapshot {
        let len = self.values.len();
        IndexedSnapshot {
            tree: self.tree.snapshot(),
            values: self.values.share(len),
            sorted: self.sorted.clone(),
        }
    }

    /// Checks a batch without changing anything: not empty, no guard
    /// value, canonical values (field hashes), no value the tree holds or
    /// repeated within the batch (every duplicate listed), within capacity.
    pub fn check_values(&self, values: &[Hash]) -> Result<(), IndexedError> {
        super::simulate::check_batch(self.config().hash, values, |value| self.index_of(value))?;
        self.tree.check_batch_size(values.len() as u64)?;
        Ok(())
    }

    /// Inserts one value; returns its leaf index.
    pub fn insert(&mut self, value: Hash) -> Result<u64, IndexedError> {
        self.insert_batch(std::slice::from_ref(&value))
    }

    /// Inserts `values` in order, all or nothing; returns the index of the
    /// first. The leaves are hashed once each in their final state (a new
    /// value's predecessor may be another value of the batch), every
    /// changed path once.
    pub fn insert_batch(&mut self, values: &[Hash]) -> Result<u64, IndexedError> {
        if values.len() >= MERGE_FROM {
            return self.insert_merged(values);
        }
        self.check_values(values)?;
        let first = self.size();
        let old_lows = self.old_lows(values);
        self.values.extend_from_slice(values);
        for (offset, value) in values.iter().enumerate() {
            let position = match self.sorted.locate(value, &self.values) {
                Err(position) => position,
                Ok(_) => unreachable!("checked: the tree does not hold it"),
            };
            self.sorted.insert(
                position,
                Entry::new(value, first + offset as u64),
                &self.values,
            );
        }
        // The new leaves, and the older leaves whose successor changed.
        let reader = self.reader_uncommitted();
        // An older leaf changes when a new value is its immediate
        // successor in the final order: it then points to that value (each
        // value has one immediate predecessor, so no leaf is named twice).
        let mut changed: Vec<(u64, IndexedLeaf)> = Vec::new();
        let mut leaves: Vec<IndexedLeaf> = Vec::with_capacity(values.len());
        for (offset, value) in values.iter().enumerate() {
            let position = reader
                .sorted
                .locate(value, reader.values)
                .unwrap_or_else(|_| unreachable!("just inserted"));
            let low = reader.sorted.before(position).expect("the guard is below");
            if low.index() < first {
                changed.push((
                    low.index(),
                    IndexedLeaf {
                        value: reader.values.at(to_usize(low.index())),
                        next_index: first + offset as u64,
                        next_value: *value,
                    },
                ));
            }
            leaves.push(reader.leaf_at(value, position));
        }
        debug_assert!(
            changed
                .iter()
                .all(|(i, leaf)| reader.leaf(*i) == Some(*leaf))
        );
        let (changed, old): (Vec<u64>, Vec<IndexedLeaf>) = changed.into_iter().unzip();
        let hash = self.config().hash;
        let new_hashes = hash_leaves(hash, &leaves);
        let old_hashes = hash_leaves(hash, &old);
        let updates: Vec<(u64, Hash)> = changed.into_iter().zip(old_hashes).collect();
        self.record(first, &old_lows);
        self.tree
            .update_leaves(&updates)
            .expect("indices below the size, hashes are canonical");
        self.tree
            .append_batch(&new_hashes)
            .expect("capacity checked with the values");
        self.tree.commit();
        self.push_head();
        debug_assert_eq!(self.sorted.len(), self.size());
        Ok(first)
    }

    /// [`IndexedTree::insert_batch`] of a large batch: the batch sorted,
    /// then merged into the order chunk by chunk (one sequential pass over
    /// the chunks it falls in, instead of a binary search per value), which
    /// also finds every value's neighbours for its leaf.
    fn insert_merged(&mut self, values: &[Hash]) -> Result<u64, IndexedError> {
        self.check_basics(values)?;
        let sorted = sorted_positions(values);
        let first = self.size();
        let old_lows = self.old_lows(values);
        let merged = match self
            .sorted
            .merge(values, &sorted.distinct, first, &self.values)
        {
            Ok(merged) if sorted.repeats.is_empty() => merged,
            Ok(_) => return Err(duplicates(values, &[], &sorted.repeats)),
            Err(present) => return Err(duplicates(values, &present, &sorted.repeats)),
        };
        self.values.extend_from_slice(values);
        let hash = self.config().hash;
        let mut changed: Vec<(u64, IndexedLeaf)> = Vec::new();
        let mut leaves: Vec<IndexedLeaf> = Vec::with_capacity(values.len());
        for (offset, value) in values.iter().enumerate() {
            let (low, next) = merged.neighbours[offset];
            if low.index() < first {
                changed.push((
                    low.index(),
                    IndexedLeaf {
                        value: self.values.at(to_usize(low.index())),
                        next_index: first + offset as u64,
                        next_value: *value,
                    },
                ));
            }
            leaves.push(match next {
                Some(next) => IndexedLeaf {
                    value: *value,
                    next_index: next.index(),
                    next_value: self.values.at(to_usize(next.index())),
                },
                None => IndexedLeaf {
                    value: *value,
                    next_index: 0,
                    next_value: super::leaf::END_MARKER,
                },
            });
        }
        self.sorted = self.sorted.apply(merged, &self.values);
        let new_hashes = hash_leaves(hash, &leaves);
        let (changed, old): (Vec<u64>, Vec<IndexedLeaf>) = changed.into_iter().unzip();
        let old_hashes = hash_leaves(hash, &old);
        let updates: Vec<(u64, Hash)> = changed.into_iter().zip(old_hashes).collect();
        self.record(first, &old_lows);
        self.tree
            .update_leaves(&updates)
            .expect("indices below the size, hashes are canonical");
        self.tree
            .append_batch(&new_hashes)
            .expect("capacity checked with the values");
        self.tree.commit();
        self.push_head();
        debug_assert_eq!(self.sorted.len(), self.size());
        Ok(first)
    }

    /// Refuses what no tree takes: an empty batch, the guard value, a
    /// non-canonical value, more values than the maximum depth allows.
    fn check_basics(&self, values: &[Hash]) -> Result<(), IndexedError> {
        super::simulate::check_values(self.config().hash, values)?;
        self.tree.check_batch_size(values.len() as u64)?;
        Ok(())
    }

    /// The positions of `values` the tree holds, with their leaf indices,
    /// found by one sequential walk of the order for a large batch (a
    /// search per value for a small one).
    pub fn present(&self, values: &[Hash]) -> Vec<(usize, u64)> {
        if values.len() < MERGE_FROM {
            return values
                .iter()
                .enumerate()
                .filter_map(|(p, v)| self.index_of(v).map(|i| (p, i)))
                .collect();
        }
        let sorted = sorted_positions(values);
        let mut found = self.sorted.present(values, &sorted.distinct, &self.values);
        // A repeat of a held value is held too.
        let held: HashMap<Hash, u64> = found.iter().map(|&(p, i)| (values[p], i)).collect();
        found.extend(
            sorted
                .repeats
                .iter()
                .filter_map(|&(p, _)| held.get(&values[p]).map(|&i| (p, i))),
        );
        found.sort_unstable();
        found
    }

    /// Inserts `values` one at a time, all or nothing, and returns the
    /// witness of every insertion: for each, the low leaf before and its
    /// path in the tree before, and the new leaf's path after (see
    /// [`InsertionWitness`]). A value whose predecessor came earlier in the
    /// batch gets that leaf ("pending" in Aztec's terms) as its low leaf.
    pub fn insert_with_witness(
        &mut self,
        values: &[Hash],
    ) -> Result<InsertionWitness, IndexedError> {
        self.check_values(values)?;
        let config = self.config();
        let old_size = self.size();
        let mut steps = Vec::with_capacity(values.len());
        for value in values {
            let size = self.size();
            let before = self
                .reader()
                .prove_absence(value)
                .expect("checked: a canonical value the tree lacks");
            let low_index = before.low_index();
            let low = *before.low_leaf();
            self.values.extend_from_slice(&[*value]);
            let position = self
                .sorted
                .locate(value, &self.values)
                .expect_err("checked: absent");
            self.sorted
                .insert(position, Entry::new(value, size), &self.values);
            let updated = IndexedLeaf {
                value: low.value,
                next_index: size,
                next_value: *value,
            };
            let new = IndexedLeaf {
                value: *value,
                next_index: low.next_index,
                next_value: low.next_value,
            };
            self.record(size, &[(low_index, low)]);
            self.tree
                .update(low_index, updated.hash(config.hash))
                .expect("the low leaf is in the tree");
            self.tree
                .append(new.hash(config.hash))
                .expect("capacity checked with the values");
            let after = self.tree.prove(size).expect("the leaf just appended");
            steps.push(InsertionStep {
                value: *value,
                low_index,
                low,
                low_siblings: before.into_siblings(),
                new_siblings: after.siblings().to_vec(),
            });
        }
        self.push_head();
        Ok(InsertionWitness {
            arity: config.arity,
            hash: config.hash,
            old_size,
            steps,
        })
    }

    /// Rolls back to the first `size` leaves (the guard and the first
    /// `size - 1` values): the removed values' predecessors point past
    /// them again. Snapshots taken before keep answering as before.
    pub fn truncate(&mut self, size: u64) -> Result<(), IndexedError> {
        let current = self.size();
        if size == 0 {
            return Err(IndexedError::TruncateGuard { to: size });
        }
        if size > current {
            return Err(crate::error::TreeError::TruncateBeyondSize {
                to: size,
                size: current,
            }
            .into());
        }
        if size == current {
            return Ok(());
        }
        let removed: Vec<Hash> = (size..current)
            .map(|i| self.values.at(to_usize(i)))
            .collect();
        for value in &removed {
            let position = self
                .sorted
                .locate(value, &self.values)
                .unwrap_or_else(|_| unreachable!("a held value"));
            self.sorted.remove(position, &self.values);
        }
        let mut changed: Vec<u64> = removed
            .iter()
            .map(|value| {
                let position = self
                    .sorted
                    .locate(value, &self.values)
                    .expect_err("just removed");
                self.sorted
                    .before(position)
                    .expect("the guard stays")
                    .index()
            })
            .filter(|&index| index < size)
            .collect();
        changed.sort_unstable();
        changed.dedup();
        self.values.truncate(to_usize(size));
        self.tree.truncate(size)?;
        self.tree.commit();
        let reader = self.reader();
        let leaves: Vec<IndexedLeaf> = changed
            .iter()
            .map(|&i| reader.leaf(i).expect("below the size"))
            .collect();
        let hashes = hash_leaves(self.config().hash, &leaves);
        let updates: Vec<(u64, Hash)> = changed.into_iter().zip(hashes).collect();
        self.tree.update_leaves(&updates)?;
        let edge = self.edge();
        self.history.truncate(size, self.root(), edge);
        Ok(())
    }

    /// Records the tree's current head in the history, with its right
    /// edge when a history is kept.
    fn push_head(&mut self) {
        let edge = self.edge();
        self.history.push_head(self.size(), self.root(), edge);
    }

    /// The last node of each level above the leaves (level 1 first), when
    /// a history is kept: what proofs at this head, once it is old, read
    /// instead of recomputing the nodes partial at its size.
    fn edge(&self) -> Option<Box<[Hash]>> {
        if !self.history.records() {
            return None;
        }
        let config = self.config();
        let size = self.size();
        let view = self
            .tree
            .view(size)
            .expect("every operation leaves the tree committed");
        Some(
            (1..=config.depth_at(size))
                .map(|level| {
                    let last = crate::shape::level_len(size, config.arity, level) - 1;
                    view.node(level, last)
                })
                .collect(),
        )
    }

    /// The low leaves (below the tree's size) that inserting `values`
    /// rewrites, as they are now, each once: what the history records
    /// before the rewrite. Empty when no history is kept. `values` are
    /// checked: absent, distinct, not the guard.
    fn old_lows(&self, values: &[Hash]) -> Vec<(u64, IndexedLeaf)> {
        if !self.history.records() {
            return Vec::new();
        }
        let reader = self.reader_uncommitted();
        let mut lows: Vec<(u64, IndexedLeaf)> = values
            .iter()
            .filter_map(|value| {
                let position = reader.sorted.locate(value, reader.values).err()?;
                let low = reader.sorted.before(position)?.index();
                Some((low, reader.leaf(low)?))
            })
            .collect();
        lows.sort_unstable_by_key(|&(index, _)| index);
        lows.dedup_by_key(|&mut (index, _)| index);
        lows
    }

    /// Records in the history the leaves of `lows` and the nodes above
    /// them as they are at `size` (the tree's size, committed), before
    /// they are overwritten.
    fn record(&mut self, size: u64, lows: &[(u64, IndexedLeaf)]) {
        if !self.history.records() || lows.is_empty() {
            return;
        }
        let config = self.config();
        let view = self.tree.at_size(size).expect("the tree's own size");
        self.history.record(config, &view, size, lows);
    }

    /// Keeps the last `heads` heads (the current one included, at least
    /// one) from now on, with what proofs against them need; heads past
    /// the window are forgotten. A tree keeps only its current head until
    /// this is called.
    pub fn set_history_window(&mut self, heads: usize) {
        self.history.set_window(heads);
    }

    /// Heads the history keeps at most.
    pub fn history_window(&self) -> usize {
        self.history.window()
    }

    /// What the history holds and its cost in bytes.
    pub fn history_stats(&self) -> HistoryStats {
        self.history.stats()
    }

    /// The retained heads, oldest first (the current one last).
    pub fn heads(&self) -> Vec<TreeHead> {
        self.history
            .heads()
            .map(|(size, root)| TreeHead::new(size, root))
            .collect()
    }

    /// The retained head of `size` leaves: [`IndexedError::OutsideWindow`]
    /// below the oldest, [`IndexedError::NotAHead`] between two heads.
    pub fn head_at(&self, size: u64) -> Result<TreeHead, IndexedError> {
        Ok(TreeHead::new(size, self.history.root_of(size)?))
    }

    /// The size of the retained head whose root is `root` (the newest if
    /// two share it).
    pub fn size_of_root(&self, root: &Hash) -> Option<u64> {
        self.history.size_of_root(root)
    }

    /// The absence proof of `value` against the retained head of `size`
    /// leaves.
    pub fn prove_absence_at(&self, value: &Hash, size: u64) -> Result<AbsenceProof, IndexedError> {
        self.past(size)?.prove_absence(value)
    }

    /// The membership proof of `value` against the retained head of
    /// `size` leaves ([`IndexedError::Absent`] if that tree lacks it).
    pub fn prove_value_at(
        &self,
        value: &Hash,
        size: u64,
    ) -> Result<IndexedMembershipProof, IndexedError> {
        self.past(size)?.prove_value(value)
    }

    /// The membership proof of leaf `index` against the retained head of
    /// `size` leaves.
    pub fn prove_index_at(
        &self,
        index: u64,
        size: u64,
    ) -> Result<IndexedMembershipProof, IndexedError> {
        self.past(size)?.prove_index(index)
    }

    /// The leaf `index` of the retained head of `size` leaves.
    pub fn leaf_at(&self, index: u64, size: u64) -> Result<Option<IndexedLeaf>, IndexedError> {
        Ok(self.past(size)?.leaf(index))
    }

    /// The root of the retained head of `size` leaves, recomputed from the
    /// history's nodes (equal to [`IndexedTree::head_at`]'s, which was
    /// recorded when the head was current): a check of the history.
    pub fn recompute_root_at(&self, size: u64) -> Result<Hash, IndexedError> {
        let past = Past {
            edge: None,
            ..self.past(size)?
        };
        let depth = self.config().depth_at(size);
        Ok(past.node(depth, 0))
    }

    fn past(&self, size: u64) -> Result<Past<'_>, IndexedError> {
        self.history.root_of(size)?;
        Ok(Past {
            reader: self.reader(),
            history: &self.history,
            size,
            edge: self.history.edge_at(size),
        })
    }

    /// The values in insertion order, the guard's first.
    pub fn values(&self) -> impl Iterator<Item = &Hash> {
        self.values.iter()
    }

    /// The leaf indices in the order of their values, the guard first.
    pub fn sorted_indices(&self) -> impl Iterator<Item = u64> + '_ {
        self.sorted.iter().map(Entry::index)
    }

    fn reader(&self) -> Reader<'_> {
        Reader {
            config: self.config(),
            view: self
                .tree
                .view(self.tree.size())
                .expect("every operation leaves the tree committed"),
            values: &self.values,
            sorted: &self.sorted,
        }
    }

    /// A reader of the values and the order only (the leaf hashes may be
    /// stale): for computing leaves mid-insertion.
    fn reader_uncommitted(&self) -> Lists<'_> {
        Lists {
            values: &self.values,
            sorted: &self.sorted,
        }
    }
}

/// An immutable copy of an [`IndexedTree`] at one size (see
/// [`IndexedTree::snapshot`]): `Send + Sync`, cheap to clone.
#[derive(Clone, Debug)]
pub struct IndexedSnapshot {
    tree: Snapshot,
    values: Level,
    sorted: SortedIndex,
}

impl IndexedSnapshot {
    /// The tree's configuration.
    pub fn config(&self) -> TreeConfig {
        self.tree.config()
    }

    /// Leaves, the guard included.
    pub fn size(&self) -> u64 {
        self.tree.size()
    }

    /// The root.
    pub fn root(&self) -> Hash {
        self.tree.root().expect("the guard leaf is always there")
    }

    /// The size and root.
    pub fn head(&self) -> TreeHead {
        self.tree.head()
    }

    /// The value of leaf `index`.
    pub fn value(&self, index: u64) -> Option<Hash> {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.values.get(i))
            .copied()
    }

    /// The leaf at `index`, with its pointer.
    pub fn leaf(&self, index: u64) -> Option<IndexedLeaf> {
        self.reader().leaf(index)
    }

    /// The leaf index of `value`, if held.
    pub fn index_of(&self, value: &Hash) -> Option<u64> {
        self.reader().index_of(value)
    }

    /// The absence proof of `value`.
    pub fn prove_absence(&self, value: &Hash) -> Result<AbsenceProof, IndexedError> {
        self.reader().prove_absence(value)
    }

    /// The membership proof of `value`.
    pub fn prove_value(&self, value: &Hash) -> Result<IndexedMembershipProof, IndexedError> {
        self.reader().prove_value(value)
    }

    /// The membership proof of leaf `index`.
    pub fn prove_index(&self, index: u64) -> Result<IndexedMembershipProof, IndexedError> {
        self.reader().prove_index(index)
    }

    /// The tree of the leaf hashes.
    pub(super) fn leaf_tree(&self) -> &Snapshot {
        &self.tree
    }

    fn reader(&self) -> Reader<'_> {
        Reader {
            config: self.config(),
            view: self.tree.view(self.tree.size()).expect("its own size"),
            values: &self.values,
            sorted: &self.sorted,
        }
    }
}

/// The values and their order.
struct Lists<'a> {
    values: &'a Level,
    sorted: &'a SortedIndex,
}

impl Lists<'_> {
    /// The leaf of `value`, which is at `position` in the order.
    fn leaf_at(&self, value: &Hash, position: super::sorted::Position) -> IndexedLeaf {
        match self.sorted.after(position) {
            Some(next) => IndexedLeaf {
                value: *value,
                next_index: next.index(),
                next_value: self.values.at(to_usize(next.index())),
            },
            None => IndexedLeaf {
                value: *value,
                next_index: 0,
                next_value: super::leaf::END_MARKER,
            },
        }
    }

    fn leaf(&self, index: u64) -> Option<IndexedLeaf> {
        let value = *usize::try_from(index)
            .ok()
            .and_then(|i| self.values.get(i))?;
        let position = self.sorted.locate(&value, self.values).ok()?;
        Some(self.leaf_at(&value, position))
    }
}

/// Everything a query reads, from a tree or a snapshot.
struct Reader<'a> {
    config: TreeConfig,
    view: View<'a>,
    values: &'a Level,
    sorted: &'a SortedIndex,
}

impl Reader<'_> {
    fn lists(&self) -> Lists<'_> {
        Lists {
            values: self.values,
            sorted: self.sorted,
        }
    }

    fn leaf(&self, index: u64) -> Option<IndexedLeaf> {
        self.lists().leaf(index)
    }

    fn index_of(&self, value: &Hash) -> Option<u64> {
        let position = self.sorted.locate(value, self.values).ok()?;
        self.sorted.at(position).map(Entry::index)
    }

    fn check_query(&self, value: &Hash) -> Result<(), IndexedError> {
        if *value == GUARD_VALUE {
            return Err(IndexedError::GuardValue { position: 0 });
        }
        if !self.config.hash.accepts(value) {
            return Err(IndexedError::NonCanonical {
                position: 0,
                value: *value,
            });
        }
        Ok(())
    }

    fn prove_absence(&self, value: &Hash) -> Result<AbsenceProof, IndexedError> {
        self.check_query(value)?;
        let position = match self.sorted.locate(value, self.values) {
            Ok(position) => {
                return Err(IndexedError::Present {
                    value: *value,
                    index: self.sorted.at(position).map_or(0, Entry::index),
                });
            }
            Err(position) => position,
        };
        let low = self
            .sorted
            .before(position)
            .expect("the guard is below every value");
        let low_leaf = self.leaf(low.index()).expect("a held leaf");
        let path = self.view.prove(low.index())?;
        Ok(AbsenceProof {
            arity: self.config.arity,
            hash: self.config.hash,
            value: *value,
            low_index: low.index(),
            size: self.view.size(),
            low: low_leaf,
            siblings: path.siblings().to_vec(),
        })
    }

    fn prove_value(&self, value: &Hash) -> Result<IndexedMembershipProof, IndexedError> {
        self.check_query(value)?;
        let index = self
            .index_of(value)
            .ok_or(IndexedError::Absent { value: *value })?;
        self.prove_index(index)
    }

    fn prove_index(&self, index: u64) -> Result<IndexedMembershipProof, IndexedError> {
        let path = self.view.prove(index)?;
        let leaf = self.leaf(index).expect("below the size");
        Ok(IndexedMembershipProof {
            arity: self.config.arity,
            hash: self.config.hash,
            index,
            size: self.view.size(),
            leaf,
            siblings: path.siblings().to_vec(),
        })
    }
}

/// A retained earlier head of a tree, read through its history: the
/// current tree's nodes, except those overwritten since (from the
/// history) and the right edge at the earlier size (recomputed from its
/// children by the Lean group rule).
struct Past<'a> {
    reader: Reader<'a>,
    history: &'a History,
    size: u64,
    /// The head's right edge, if recorded (else recomputed).
    edge: Option<&'a [Hash]>,
}

impl Past<'_> {
    /// Leaf `index` at this size.
    fn leaf(&self, index: u64) -> Option<IndexedLeaf> {
        if index >= self.size {
            return None;
        }
        let mut leaf = self.reader.leaf(index)?;
        if let Some((next_index, next_value)) = self.history.pointer_at(index, self.size) {
            leaf.next_index = next_index;
            leaf.next_value = next_value;
        }
        Some(leaf)
    }

    /// The node at `level`, `index` of the tree at this size (which must
    /// have it).
    fn node(&self, level: u32, index: u64) -> Hash {
        let config = self.reader.config;
        if level == 0 {
            return match self.history.pointer_at(index, self.size) {
                Some(_) => self.leaf(index).expect("below the size").hash(config.hash),
                None => self.reader.view.node(0, index),
            };
        }
        let n = config.arity.as_u64();
        let span = n.saturating_pow(level);
        if (index + 1).saturating_mul(span) <= self.size {
            return self
                .history
                .node_at(level, index, self.size)
                .unwrap_or_else(|| self.reader.view.node(level, index));
        }
        // On the right edge at this size: recorded with the head, or its
        // children at this size.
        if let Some(&node) = self
            .edge
            .and_then(|edge| edge.get(to_usize(u64::from(level) - 1)))
        {
            return node;
        }
        let below = n.saturating_pow(level - 1);
        let children = self.size.div_ceil(below);
        let start = index * n;
        let end = (start + n).min(children);
        let mut group = [[0u8; 32]; crate::hash::MAX_GROUP];
        for (slot, child) in group.iter_mut().zip(start..end) {
            *slot = self.node(level - 1, child);
        }
        crate::kind::group_parent(
            config.hash,
            config.arity.get(),
            None,
            &group[..to_usize(end - start)],
        )
    }

    fn index_of(&self, value: &Hash) -> Option<u64> {
        self.reader
            .index_of(value)
            .filter(|&index| index < self.size)
    }

    fn prove_index(&self, index: u64) -> Result<IndexedMembershipProof, IndexedError> {
        let config = self.reader.config;
        let path = crate::proof::MembershipProof::from_nodes(config, index, self.size, |l, i| {
            Ok::<Hash, std::convert::Infallible>(self.node(l, i))
        })
        .map_err(|error| match error {
            crate::proof::FromNodesError::Tree(error) => IndexedError::Tree(error),
            crate::proof::FromNodesError::Source(never) => match never {},
        })?;
        let leaf = self.leaf(index).expect("below the size");
        Ok(IndexedMembershipProof {
            arity: config.arity,
            hash: config.hash,
            index,
            size: self.size,
            leaf,
            siblings: path.siblings().to_vec(),
        })
    }

    fn prove_value(&self, value: &Hash) -> Result<IndexedMembershipProof, IndexedError> {
        self.reader.check_query(value)?;
        let index = self
            .index_of(value)
            .ok_or(IndexedError::Absent { value: *value })?;
        self.prove_index(index)
    }

    fn prove_absence(&self, value: &Hash) -> Result<AbsenceProof, IndexedError> {
        self.reader.check_query(value)?;
        let sorted = self.reader.sorted;
        let mut position = match sorted.locate(value, self.reader.values) {
            Ok(position) => {
                let index = sorted.at(position).map_or(0, Entry::index);
                if index < self.size {
                    return Err(IndexedError::Present {
                        value: *value,
                        index,
                    });
                }
                position
            }
            Err(position) => position,
        };
        // The largest value below it among the leaves of this size: walk
        // down the order past the values inserted since.
        let low = loop {
            position = sorted
                .previous(position)
                .expect("the guard is below every value");
            let entry = sorted.at(position).expect("a held position");
            if entry.index() < self.size {
                break entry.index();
            }
        };
        let proof = self.prove_index(low)?;
        Ok(AbsenceProof {
            arity: proof.arity,
            hash: proof.hash,
            value: *value,
            low_index: low,
            size: self.size,
            low: proof.leaf,
            siblings: proof.siblings,
        })
    }
}

/// The leaf hashes of `leaves` (`IndexedLeaf::hash`): their words, three
/// per leaf, through `HashKind::hash_groups` (the multi-lane kernels where
/// the hash has them), in parallel for large batches.
pub(crate) fn hash_leaves(hash: HashKind, leaves: &[IndexedLeaf]) -> Vec<Hash> {
    let mut out = vec![[0u8; 32]; leaves.len()];
    let fill = |(leaves, out): (&[IndexedLeaf], &mut [Hash])| {
        let words: Vec<Hash> = leaves.iter().flat_map(IndexedLeaf::words).collect();
        hash.hash_groups(&words, 3, out);
    };
    let piece = if hash.is_field_hash() { 16 } else { HASH_PIECE };
    if leaves.len() > piece && rayon::current_num_threads() > 1 {
        leaves
            .par_chunks(piece)
            .zip(out.par_chunks_mut(piece))
            .for_each(fill);
    } else {
        fill((leaves, &mut out));
    }
    out
}

/// From this many values a batch is merged into the order (see
/// `IndexedTree::insert_merged`); below, each value is searched for.
const MERGE_FROM: usize = 64;

/// A batch's positions in the order of their values.
struct SortedPositions {
    /// The first position of each distinct value, in value order.
    distinct: Vec<usize>,
    /// (position, first position of the same value) for every repeat.
    repeats: Vec<(usize, usize)>,
}

fn sorted_positions(values: &[Hash]) -> SortedPositions {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.par_sort_unstable_by(|&a, &b| values[a].cmp(&values[b]).then(a.cmp(&b)));
    let mut distinct = Vec::with_capacity(order.len());
    let mut repeats = Vec::new();
    for &p in &order {
        match distinct.last() {
            Some(&q) if values[q] == values[p] => repeats.push((p, q)),
            _ => distinct.push(p),
        }
    }
    SortedPositions { distinct, repeats }
}

/// The refusal of a batch, as [`IndexedTree::check_values`] words it:
/// every duplicate in batch order, a value the tree holds (or its repeat)
/// as that leaf, another repeat as its first position.
fn duplicates(
    values: &[Hash],
    present: &[(usize, u64)],
    repeats: &[(usize, usize)],
) -> IndexedError {
    let held: HashMap<Hash, u64> = present.iter().map(|&(p, i)| (values[p], i)).collect();
    let mut duplicates: Vec<Duplicate> = present
        .iter()
        .map(|&(position, index)| Duplicate {
            position,
            value: values[position],
            of: DuplicateOf::Leaf(index),
        })
        .collect();
    duplicates.extend(repeats.iter().map(|&(position, first)| Duplicate {
        position,
        value: values[position],
        of: match held.get(&values[position]) {
            Some(&index) => DuplicateOf::Leaf(index),
            None => DuplicateOf::Batch(first),
        },
    }));
    duplicates.sort_by_key(|d| d.position);
    IndexedError::Duplicates {
        batch: values.len(),
        duplicates,
    }
}
