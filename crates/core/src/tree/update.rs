//! Overwriting leaves of a `LeanImt` (the indexed tree's predecessor
//! updates, a mutable tree's updates and removals) and rehashing their
//! paths, by the kind's partial-group rule (lifted, or padded with the
//! level's zero in a fixed-depth tree, up to its depth).
//!
//! After an update the tree is no longer the append-only LeanIMT of its
//! history: a node below the right edge changed, so views at earlier
//! sizes, consistency proofs and roll-forward no longer describe earlier
//! trees. Its callers (the indexed tree, the database's mutable trees)
//! therefore prove at the current head only (or from a snapshot taken at
//! the head they prove).
//! Snapshots taken before an update keep answering as before: the writes
//! go through [`Level::set`], which copies a shared segment first.

use crate::cast::to_usize;
use rayon::prelude::*;

use super::LeanImt;
use crate::error::TreeError;
use crate::hash::{Hash, MAX_GROUP};
use crate::level::Level;

/// Below this many parents at a level, they are hashed on one thread.
const PARALLEL_FROM: usize = 1024;

impl LeanImt {
    /// Sets leaf `index` to `leaf` and rehashes its path (commits first).
    pub fn update(&mut self, index: u64, leaf: Hash) -> Result<(), TreeError> {
        self.update_leaves(&[(index, leaf)])
    }

    /// Sets each `(index, leaf)` (a later pair for the same index wins) and
    /// rehashes every changed node once, level by level. All or nothing:
    /// an index past the end or a non-canonical leaf (field hashes) is
    /// refused before anything changes. Commits first.
    pub fn update_leaves(&mut self, updates: &[(u64, Hash)]) -> Result<(), TreeError> {
        let size = self.size();
        for (position, &(index, leaf)) in updates.iter().enumerate() {
            if index >= size {
                return Err(TreeError::IndexOutOfRange { index, size });
            }
            if !self.config.hash.accepts(&leaf) {
                return Err(TreeError::NonCanonicalLeaf { position, leaf });
            }
        }
        self.commit();
        let mut dirty: Vec<usize> = Vec::with_capacity(updates.len());
        for &(index, leaf) in updates {
            let index = to_usize(index);
            self.levels[0].set(index, leaf);
            dirty.push(index);
        }
        dirty.sort_unstable();
        dirty.dedup();
        let n = self.config.arity.get();
        let mut level = 0;
        // Up to the top level: a fixed-depth tree's levels above the
        // first of one node still hash that node with zeros.
        while level + 1 < self.levels.len() && !dirty.is_empty() {
            for index in &mut dirty {
                *index /= n;
            }
            dirty.dedup();
            let (lower, upper) = self.levels.split_at_mut(level + 1);
            let pad = self.zeros.pad(crate::cast::level_number(level)).copied();
            let values = parents_of(self.config.hash, n, pad, &lower[level], &dirty);
            let parents: &mut Level = &mut upper[0];
            for (&p, value) in dirty.iter().zip(values) {
                parents.set(p, value);
            }
            level += 1;
        }
        Ok(())
    }
}

/// The parents `dirty` (sorted, distinct) of `children`, in order. The
/// complete groups are gathered into one buffer and hashed by the
/// multi-lane kernels ([`HashKind::hash_groups`]), in parallel pieces when
/// there are many; a partial last group by the kind's rule (`pad`).
fn parents_of(
    hash: crate::hash::HashKind,
    n: usize,
    pad: Option<Hash>,
    children: &Level,
    dirty: &[usize],
) -> Vec<Hash> {
    let len = children.len();
    let one = |p: usize| -> Hash {
        let start = p * n;
        let count = n.min(len - start);
        let mut group = [[0u8; 32]; MAX_GROUP];
        children.copy_to(start, &mut group[..count]);
        crate::kind::group_parent(hash, n, pad.as_ref(), &group[..count])
    };
    let piece = |parents: &[usize]| -> Vec<Hash> {
        // Every parent but possibly the level's last has a complete group.
        let complete = parents.iter().take_while(|&&p| p * n + n <= len).count();
        let mut buffer = vec![[0u8; 32]; complete * n];
        for (slot, &p) in buffer.chunks_exact_mut(n).zip(parents) {
            children.copy_to(p * n, slot);
        }
        let mut out = vec![[0u8; 32]; complete];
        hash.hash_groups(&buffer, n, &mut out);
        out.extend(parents[complete..].iter().map(|&p| one(p)));
        out
    };
    let chunk = if hash.is_field_hash() {
        // A field hash outweighs a task: one kernel pass per piece.
        hash.field_hash_grain()
    } else {
        PARALLEL_FROM
    };
    if dirty.len() > chunk && rayon::current_num_threads() > 1 {
        dirty.par_chunks(chunk).flat_map_iter(piece).collect()
    } else {
        piece(dirty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cast::to_usize;
    use crate::hash::HashKind;
    use crate::level::SEGMENT_LEN;
    use crate::{Arity, TreeConfig};

    fn leaf(i: u64) -> Hash {
        *blake3::hash(&i.to_le_bytes()).as_bytes()
    }

    fn config(n: u64) -> TreeConfig {
        TreeConfig::new(Arity::new(n).unwrap(), HashKind::Blake3)
    }

    #[test]
    fn updates_equal_a_tree_built_from_the_updated_leaves() {
        for n in [2u64, 3, 4, 7, 16] {
            for size in [1u64, 2, 3, 5, 16, 17, 100, 1000] {
                let mut leaves: Vec<Hash> = (0..size).map(leaf).collect();
                let mut tree = LeanImt::from_leaves(config(n), &leaves).unwrap();
                let updates: Vec<(u64, Hash)> = [0, size / 3, size / 2, size - 1, size / 2]
                    .iter()
                    .enumerate()
                    .map(|(k, &i)| (i, leaf(10_000 + k as u64)))
                    .collect();
                for &(i, l) in &updates {
                    leaves[to_usize(i)] = l;
                }
                tree.update_leaves(&updates).unwrap();
                let mut want = LeanImt::from_leaves(config(n), &leaves).unwrap();
                assert_eq!(tree.head(), want.head(), "N = {n}, size {size}");
                for index in [0, size / 2, size - 1] {
                    assert_eq!(tree.prove(index).unwrap(), want.prove(index).unwrap());
                }
                // Uncommitted appends first, then an update, then more appends.
                tree.append_batch(&[leaf(1), leaf(2)]).unwrap();
                tree.update(size, leaf(3)).unwrap();
                leaves.extend([leaf(3), leaf(2)]);
                assert_eq!(
                    tree.root(),
                    LeanImt::from_leaves(config(n), &leaves).unwrap().root()
                );
            }
        }
    }

    #[test]
    fn updates_of_a_fixed_depth_tree_equal_a_tree_built_from_the_updated_leaves() {
        for n in [2u64, 3, 4] {
            for size in [1u64, 2, 3, 5, 17] {
                let cfg = config(n).with_kind(crate::TreeKind::Fixed {
                    depth: 6,
                    zero: [0; 32],
                });
                let mut leaves: Vec<Hash> = (0..size).map(leaf).collect();
                let mut tree = LeanImt::from_leaves(cfg, &leaves).unwrap();
                for (k, i) in [0, size / 2, size - 1].into_iter().enumerate() {
                    let new = if k == 1 {
                        [0; 32]
                    } else {
                        leaf(500 + k as u64)
                    };
                    leaves[to_usize(i)] = new;
                    tree.update(i, new).unwrap();
                    let mut want = LeanImt::from_leaves(cfg, &leaves).unwrap();
                    assert_eq!(tree.head(), want.head(), "N = {n}, size {size}");
                    assert_eq!(tree.prove(i).unwrap(), want.prove(i).unwrap());
                }
            }
        }
    }

    #[test]
    fn a_snapshot_keeps_its_answers_across_updates_in_shared_segments() {
        let size = SEGMENT_LEN as u64 + 5000;
        let leaves: Vec<Hash> = (0..size).map(leaf).collect();
        let mut tree = LeanImt::from_leaves(config(4), &leaves).unwrap();
        let before = tree.snapshot();
        let head = before.head();
        let proofs: Vec<_> = [0, 77, SEGMENT_LEN as u64 + 1, size - 1]
            .iter()
            .map(|&i| before.prove(i).unwrap())
            .collect();
        let updates: Vec<(u64, Hash)> = (0..size)
            .step_by(997)
            .map(|i| (i, leaf(i + size)))
            .collect();
        tree.update_leaves(&updates).unwrap();
        assert_ne!(tree.head(), head);
        assert_eq!(before.head(), head);
        for proof in &proofs {
            assert_eq!(before.prove(proof.index()).unwrap(), *proof);
            proof
                .verify(config(4).arity, HashKind::Blake3, &head)
                .unwrap();
        }
        let mut updated = leaves.clone();
        for &(i, l) in &updates {
            updated[to_usize(i)] = l;
        }
        assert_eq!(
            tree.head(),
            LeanImt::from_leaves(config(4), &updated).unwrap().head()
        );
    }

    #[test]
    fn a_refused_update_changes_nothing() {
        let cfg = TreeConfig::new(Arity::new(2).unwrap(), HashKind::Poseidon);
        let leaves: Vec<Hash> = (1..5u8).map(|i| [i; 32].map(|b| b & 0x0f)).collect();
        let mut tree = LeanImt::from_leaves(cfg, &leaves).unwrap();
        let head = tree.head();
        assert_eq!(
            tree.update_leaves(&[(0, [1; 32]), (4, [1; 32])]),
            Err(TreeError::IndexOutOfRange { index: 4, size: 4 })
        );
        assert!(matches!(
            tree.update_leaves(&[(0, [1; 32]), (1, [0xff; 32])]),
            Err(TreeError::NonCanonicalLeaf { position: 1, .. })
        ));
        assert_eq!(tree.head(), head);
    }
}
