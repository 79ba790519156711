//! The witness of inserting a batch of values into an indexed tree,
//! computed from a snapshot without changing it: what a batch circuit
//! (`circuits/indexed-batch.circom`) or a sequencer planning its next batch
//! needs before the values are in the tree, if they ever are.
//!
//! The insertions are simulated in order over an overlay of the nodes they
//! change: each rewrites its low leaf's path and appends its new leaf's,
//! O(K · depth · N) hashes and node reads for K values whatever the tree's
//! size, and nothing is copied from the snapshot.
//!
//! Invariant: a node of the simulated tree is the overlay's when a leaf
//! below it changed or was appended (every such leaf's path is rehashed
//! into the overlay when it changes), else the snapshot's. That is sound
//! because a Lean node is a function of the leaves below it alone, and a
//! node the snapshot lacks (past its right edge, above its root) has an
//! appended leaf below it.

use std::collections::{BTreeMap, HashMap};

use super::error::{Duplicate, DuplicateOf, IndexedError};
use super::leaf::{GUARD_VALUE, IndexedLeaf};
use super::proof::{InsertionStep, InsertionWitness};
use super::tree::IndexedSnapshot;
use crate::error::TreeError;
use crate::hash::{Hash, HashKind, MAX_GROUP};
use crate::recompute::GroupRule;
use crate::shape::Shape;
use crate::view::View;

/// Refuses what no indexed tree takes, whatever it holds: an empty batch,
/// the guard value, a non-canonical value.
pub(super) fn check_values(hash: HashKind, values: &[Hash]) -> Result<(), IndexedError> {
    if values.is_empty() {
        return Err(TreeError::EmptyBatch.into());
    }
    for (position, value) in values.iter().enumerate() {
        if *value == GUARD_VALUE {
            return Err(IndexedError::GuardValue { position });
        }
        if !hash.accepts(value) {
            return Err(IndexedError::NonCanonical {
                position,
                value: *value,
            });
        }
    }
    Ok(())
}

/// Checks a batch against a tree that answers `index_of`: not empty, no
/// guard value, canonical values (field hashes), no value the tree holds
/// or repeated within the batch (every duplicate listed). Capacity is the
/// caller's to check.
pub(super) fn check_batch(
    hash: HashKind,
    values: &[Hash],
    index_of: impl Fn(&Hash) -> Option<u64>,
) -> Result<(), IndexedError> {
    check_values(hash, values)?;
    let mut duplicates = Vec::new();
    let mut seen: HashMap<Hash, usize> = HashMap::with_capacity(values.len());
    for (position, value) in values.iter().enumerate() {
        if let Some(index) = index_of(value) {
            duplicates.push(Duplicate {
                position,
                value: *value,
                of: DuplicateOf::Leaf(index),
            });
        } else if let Some(&first) = seen.get(value) {
            duplicates.push(Duplicate {
                position,
                value: *value,
                of: DuplicateOf::Batch(first),
            });
        } else {
            seen.insert(*value, position);
        }
    }
    if !duplicates.is_empty() {
        return Err(IndexedError::Duplicates {
            batch: values.len(),
            duplicates,
        });
    }
    Ok(())
}

impl IndexedSnapshot {
    /// The witness of inserting `values` one at a time, in order, into
    /// this tree, without changing it: the same witness
    /// [`IndexedTree::insert_with_witness`](super::IndexedTree::insert_with_witness)
    /// returns for the same values. A value whose predecessor comes
    /// earlier in the batch gets that value's new leaf as its low leaf; a
    /// value above every other gets the largest one's, whose end marker
    /// its own leaf inherits. Refused as an insertion would be: an empty
    /// batch, the guard value 0, a non-canonical value, a value the tree
    /// holds or one repeated in the batch (all listed), more values than
    /// the configured maximum depth holds.
    pub fn insertion_witness(&self, values: &[Hash]) -> Result<InsertionWitness, IndexedError> {
        let config = self.config();
        check_batch(config.hash, values, |value| self.index_of(value))?;
        let appending = values.len() as u64;
        if let Some(max_depth) = config.depth_limit() {
            let capacity = config.capacity();
            let fits = match (self.size().checked_add(appending), capacity) {
                (Some(after), Some(capacity)) => after <= capacity,
                (Some(_), None) => true,
                (None, _) => false,
            };
            if !fits {
                return Err(TreeError::CapacityExceeded {
                    size: self.size(),
                    appending,
                    capacity: capacity.unwrap_or(u64::MAX),
                    arity: config.arity.get(),
                    max_depth,
                }
                .into());
            }
        }
        let mut simulation = Simulation {
            snapshot: self,
            view: self.leaf_tree().view_full(),
            rule: config.group_rule(),
            shape: Shape::lean(config.arity),
            size: self.size(),
            nodes: HashMap::new(),
            leaves: HashMap::new(),
            inserted: BTreeMap::new(),
        };
        let steps = values
            .iter()
            .map(|value| simulation.insert(value))
            .collect();
        Ok(InsertionWitness {
            arity: config.arity,
            hash: config.hash,
            old_size: self.size(),
            steps,
        })
    }
}

/// The tree as the insertions so far left it (see the module's invariant).
struct Simulation<'a> {
    snapshot: &'a IndexedSnapshot,
    /// The snapshot's leaf-hash tree at its size.
    view: View<'a>,
    rule: GroupRule,
    shape: Shape,
    /// Leaves now.
    size: u64,
    /// (level, index) -> node, for every node a changed leaf is under.
    nodes: HashMap<(u32, u64), Hash>,
    /// The preimages of the changed and appended leaves.
    leaves: HashMap<u64, IndexedLeaf>,
    /// The values inserted so far, in value order, with their leaf index.
    inserted: BTreeMap<Hash, u64>,
}

impl Simulation<'_> {
    fn node(&self, level: u32, index: u64) -> Hash {
        match self.nodes.get(&(level, index)) {
            Some(node) => *node,
            // Untouched: the snapshot holds it (the module's invariant).
            None => self.view.node(level, index),
        }
    }

    fn leaf(&self, index: u64) -> IndexedLeaf {
        match self.leaves.get(&index) {
            Some(leaf) => *leaf,
            None => self
                .snapshot
                .leaf(index)
                .expect("an unchanged leaf below the snapshot's size"),
        }
    }

    /// The siblings of leaf `index` now, bottom-up, as a membership proof
    /// carries them (a lifted level none).
    fn siblings(&self, index: u64) -> Vec<Hash> {
        let mut siblings = Vec::new();
        for step in self.shape.path(index, self.size) {
            for member in 0..step.group_len {
                if member != step.position {
                    siblings.push(self.node(step.level, step.group_start + member as u64));
                }
            }
        }
        siblings
    }

    /// Sets leaf `index` (below the current size) and rehashes its path.
    fn set(&mut self, index: u64, leaf: IndexedLeaf) {
        self.leaves.insert(index, leaf);
        self.nodes.insert((0, index), leaf.hash(self.rule.hash()));
        let n = self.rule.arity().as_u64();
        let mut group = [[0u8; 32]; MAX_GROUP];
        for step in self.shape.path(index, self.size) {
            for (member, slot) in group[..step.group_len].iter_mut().enumerate() {
                *slot = self.node(step.level, step.group_start + member as u64);
            }
            let parent = self.rule.parent(step.level, &group[..step.group_len]);
            self.nodes
                .insert((step.level + 1, step.group_start / n), parent);
        }
    }

    /// Inserts `value` (checked: canonical, absent, not the guard).
    fn insert(&mut self, value: &Hash) -> InsertionStep {
        let size = self.size;
        // The low leaf: the larger of the snapshot's predecessor and the
        // batch's (an earlier value of the batch between them).
        let stored = self
            .snapshot
            .prove_absence(value)
            .expect("checked: a canonical value the tree lacks")
            .low_index();
        let stored_value = self.snapshot.value(stored).expect("a held leaf");
        let low_index = match self.inserted.range(..*value).next_back() {
            Some((inserted, &index)) if *inserted > stored_value => index,
            _ => stored,
        };
        let low = self.leaf(low_index);
        debug_assert!(low.brackets(value), "the predecessor brackets the value");
        let low_siblings = self.siblings(low_index);
        self.set(
            low_index,
            IndexedLeaf {
                value: low.value,
                next_index: size,
                next_value: *value,
            },
        );
        self.size = size + 1;
        self.set(
            size,
            IndexedLeaf {
                value: *value,
                next_index: low.next_index,
                next_value: low.next_value,
            },
        );
        self.inserted.insert(*value, size);
        InsertionStep {
            value: *value,
            low_index,
            low,
            low_siblings,
            new_siblings: self.siblings(size),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::indexed::{IndexedTree, index_word};
    use crate::{Arity, TreeConfig};

    fn value(n: u64) -> Hash {
        index_word(n)
    }

    /// The simulated witness equals the one the tree's own insertion
    /// returns, verifies from the snapshot's head to the head the real
    /// insertion reaches, and leaves the snapshot as it was.
    fn check(config: TreeConfig, stored: &[Hash], batch: &[Hash]) {
        let mut tree = IndexedTree::from_values(config, stored).unwrap();
        let snapshot = tree.snapshot();
        let before = snapshot.head();
        let simulated = snapshot.insertion_witness(batch).unwrap();
        let applied = tree.insert_with_witness(batch).unwrap();
        assert_eq!(simulated, applied, "{config:?} {stored:?} {batch:?}");
        let after = simulated
            .verify(config.arity, config.hash, &before)
            .unwrap();
        assert_eq!(after, tree.head());
        assert_eq!(snapshot.head(), before);
        let rebuilt = IndexedTree::from_values(config, &[stored, batch].concat()).unwrap();
        assert_eq!(rebuilt.head(), after);
    }

    #[test]
    fn simulated_witnesses_are_the_inserted_ones() {
        for arity in [2, 3, 4, 16] {
            for hash in [HashKind::Poseidon, HashKind::Blake3] {
                let config = TreeConfig::new(Arity::new(arity).unwrap(), hash);
                // Shared low leaf (2000, 3000 under 1000), one above every
                // value (end marker), one below every value (the guard's).
                let stored = [value(1000), value(5000), value(9000)];
                check(
                    config,
                    &stored,
                    &[value(2000), value(3000), value(9500), value(1)],
                );
                // From the guard alone, growing the depth on every insert.
                check(config, &[], &(1..=40).rev().map(value).collect::<Vec<_>>());
                // Every size from 1 to 34, a batch of 5 values: two past the
                // last value, two under the first, one in between.
                for n in 0..33u64 {
                    let stored: Vec<Hash> = (1..=n).map(|i| value(i * 10)).collect();
                    let batch: Vec<Hash> = [3, n * 10 + 7, 13, n * 10 + 9, 1].map(value).to_vec();
                    check(config, &stored, &batch);
                }
            }
        }
    }

    #[test]
    fn refusals_list_what_an_insertion_would() {
        let config = TreeConfig::new(Arity::new(2).unwrap(), HashKind::Poseidon);
        let mut tree = IndexedTree::from_values(config, &[value(10), value(20)]).unwrap();
        let snapshot = tree.snapshot();
        let error = snapshot
            .insertion_witness(&[value(5), value(20), value(5)])
            .unwrap_err();
        assert_eq!(
            error,
            IndexedError::Duplicates {
                batch: 3,
                duplicates: vec![
                    Duplicate {
                        position: 1,
                        value: value(20),
                        of: DuplicateOf::Leaf(2)
                    },
                    Duplicate {
                        position: 2,
                        value: value(5),
                        of: DuplicateOf::Batch(0)
                    },
                ]
            }
        );
        assert_eq!(
            snapshot.insertion_witness(&[value(5), GUARD_VALUE]),
            Err(IndexedError::GuardValue { position: 1 })
        );
        assert_eq!(
            snapshot.insertion_witness(&[[0xff; 32]]),
            Err(IndexedError::NonCanonical {
                position: 0,
                value: [0xff; 32]
            })
        );
        assert_eq!(
            snapshot.insertion_witness(&[]),
            Err(IndexedError::Tree(TreeError::EmptyBatch))
        );
        let limited = config.with_max_depth(2);
        let mut small = IndexedTree::from_values(limited, &[value(1), value(2)]).unwrap();
        assert!(matches!(
            small.snapshot().insertion_witness(&[value(3), value(4)]),
            Err(IndexedError::Tree(TreeError::CapacityExceeded {
                size: 3,
                appending: 2,
                capacity: 4,
                ..
            }))
        ));
        assert!(small.snapshot().insertion_witness(&[value(3)]).is_ok());
    }
}
