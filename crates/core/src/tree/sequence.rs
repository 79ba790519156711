//! A sequence of leaf updates, each with its membership proof against the
//! root just before it (a mutable tree's updates and removals: what
//! Semaphore's `updateMember` and zk-kit's `update` take, one after the
//! other), hashed level by level through the multi-lane kernels.
//!
//! The naive loop (prove, then update, per change) hashes one path per
//! change, each parent alone. This computes the same nodes in another
//! order: every version a change gives a node depends only on the level
//! below after that change, so a whole level's versions, one per change,
//! are independent and go through [`HashKind::hash_groups`] together (8
//! Poseidon permutations per IFMA pass, 8 or 16 BLAKE3 compressions per
//! SIMD pass). Each change still costs one hash per hashing level: the
//! minimum, since the next change's proof needs every node version the
//! previous one made (a parent shared by several changes in a batch is
//! hashed once per change that passes through it, as its intermediate
//! values are siblings in later proofs).
//!
//! Per level, the versions are kept sorted by (node, change): the value a
//! change sees for a node is the last version of an earlier change, else
//! the tree's. A change's proof siblings at a level are exactly the group
//! members it hashes, minus its own node, so proofs cost no second read.
//! The tree is written (copy-on-write through [`Level::set`]) only once
//! every level is computed, so a refusal or panic leaves it unchanged.

use crate::cast::{level_number, to_usize};
use crate::error::TreeError;
use crate::hash::{Hash, MAX_GROUP};
use crate::proof::MembershipProof;

use super::LeanImt;

/// One change's value of one node.
#[derive(Clone, Copy, Debug)]
struct Version {
    node: u64,
    change: usize,
    value: Hash,
}

/// The value of `node` that change `change` sees before it is applied:
/// the last version an earlier change gave it (`versions` sorted by
/// (node, change)), `None` if no earlier change did.
fn before(versions: &[Version], node: u64, change: usize) -> Option<Hash> {
    let at = versions.partition_point(|v| (v.node, v.change) < (node, change));
    at.checked_sub(1)
        .map(|i| versions[i])
        .filter(|v| v.node == node)
        .map(|v| v.value)
}

/// Below this many groups of a byte hash, a level is hashed on one thread.
const PARALLEL_FROM: usize = 1024;

/// `parents` of the complete groups `children` through the lane kernels,
/// in parallel pieces when there are many (a field hash: one kernel pass
/// per piece, since one pass outweighs a task).
fn hash_level(hash: crate::hash::HashKind, n: usize, children: &[Hash], parents: &mut [Hash]) {
    use rayon::prelude::*;
    let grain = if hash.is_field_hash() {
        hash.field_hash_grain()
    } else {
        PARALLEL_FROM
    };
    if parents.len() > grain && rayon::current_num_threads() > 1 {
        children
            .par_chunks(grain * n)
            .zip(parents.par_chunks_mut(grain))
            .for_each(|(children, parents)| hash.hash_groups(children, n, parents));
    } else {
        hash.hash_groups(children, n, parents);
    }
}

impl LeanImt {
    /// Sets each `(index, leaf)` in order and returns, per update, the
    /// membership proof of the leaf it replaced against the root just
    /// before it: the same proofs and the same tree as proving and then
    /// [`LeanImt::update`]-ing one update after the other. All or
    /// nothing: an index past the end or a non-canonical leaf is refused
    /// before anything changes. Commits first.
    pub fn update_each(
        &mut self,
        updates: &[(u64, Hash)],
    ) -> Result<Vec<MembershipProof>, TreeError> {
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
        let Some(&(first, _)) = updates.first() else {
            return Ok(Vec::new());
        };
        let config = self.config;
        let hash = config.hash;
        let n = config.arity.get();
        let shape = config.shape();
        // Every leaf's path has the same number of steps at one size.
        let depth = shape.path(first, size).count();
        assert_eq!(
            depth + 1,
            self.levels.len(),
            "a committed tree has its levels"
        );
        let mut steps = Vec::with_capacity(updates.len() * depth);
        for &(index, _) in updates {
            steps.extend(shape.path(index, size));
        }
        assert_eq!(steps.len(), updates.len() * depth);
        let mut proofs: Vec<MembershipProof> = updates
            .iter()
            .map(|&(index, _)| MembershipProof {
                arity: config.arity,
                hash,
                kind: config.kind,
                index,
                size,
                leaf: [0; 32],
                siblings: Vec::with_capacity(shape.membership_sibling_count(index, size)),
            })
            .collect();
        // Each change's path node at the current level and its value
        // after the change.
        let mut nodes: Vec<u64> = updates.iter().map(|&(index, _)| index).collect();
        let mut own: Vec<Hash> = updates.iter().map(|&(_, leaf)| leaf).collect();
        let mut all: Vec<Vec<Version>> = Vec::with_capacity(depth + 1);
        let mut children: Vec<Hash> = Vec::new();
        let mut hashed_by_lanes: Vec<usize> = Vec::new();
        for level in 0..=depth {
            let mut versions: Vec<Version> = nodes
                .iter()
                .zip(&own)
                .enumerate()
                .map(|(change, (&node, &value))| Version {
                    node,
                    change,
                    value,
                })
                .collect();
            versions.sort_unstable_by_key(|v| (v.node, v.change));
            let stored = &self.levels[level];
            if level == 0 {
                for (change, proof) in proofs.iter_mut().enumerate() {
                    proof.leaf = before(&versions, proof.index, change)
                        .unwrap_or_else(|| stored.at(to_usize(proof.index)));
                }
            }
            if level == depth {
                all.push(versions);
                break;
            }
            let pad = self.zeros.pad(level_number(level)).copied();
            children.clear();
            hashed_by_lanes.clear();
            let mut next = own.clone();
            for (change, proof) in proofs.iter_mut().enumerate() {
                let step = steps[change * depth + level];
                debug_assert_eq!(step.level as usize, level);
                if !step.hashes() {
                    continue; // lifted: the parent is the node itself
                }
                let mut group = [[0u8; 32]; MAX_GROUP];
                for (member, slot) in group[..step.group_len].iter_mut().enumerate() {
                    if member == step.position {
                        *slot = own[change];
                        continue;
                    }
                    let at = step.group_start + member as u64;
                    *slot =
                        before(&versions, at, change).unwrap_or_else(|| stored.at(to_usize(at)));
                    proof.siblings.push(*slot);
                }
                if step.group_len == n {
                    children.extend_from_slice(&group[..n]);
                    hashed_by_lanes.push(change);
                } else {
                    next[change] =
                        crate::kind::group_parent(hash, n, pad.as_ref(), &group[..step.group_len]);
                }
            }
            let mut parents = vec![[0u8; 32]; hashed_by_lanes.len()];
            hash_level(hash, n, &children, &mut parents);
            for (&change, parent) in hashed_by_lanes.iter().zip(parents) {
                next[change] = parent;
            }
            all.push(versions);
            own = next;
            for node in &mut nodes {
                *node /= n as u64;
            }
        }
        // Each node's last version is its value after the whole sequence.
        for (level, versions) in all.iter().enumerate() {
            for (k, version) in versions.iter().enumerate() {
                if versions.get(k + 1).is_none_or(|v| v.node != version.node) {
                    self.levels[level].set(to_usize(version.node), version.value);
                }
            }
        }
        Ok(proofs)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use crate::hash::HashKind;
    use crate::{Arity, Hash, LeanImt, TreeConfig, TreeKind};

    fn leaf(i: u64) -> Hash {
        let mut value = *blake3::hash(&i.to_le_bytes()).as_bytes();
        value[0] &= 0x0f; // canonical for the field hashes too
        value
    }

    /// The reference: prove, then update, one change after the other.
    fn naive(tree: &mut LeanImt, updates: &[(u64, Hash)]) -> Vec<crate::MembershipProof> {
        updates
            .iter()
            .map(|&(index, value)| {
                let proof = tree.prove(index).unwrap();
                tree.update(index, value).unwrap();
                proof
            })
            .collect()
    }

    fn check(config: TreeConfig, size: u64, updates: &[(u64, Hash)]) {
        let leaves: Vec<Hash> = (0..size).map(leaf).collect();
        let mut want = LeanImt::from_leaves(config, &leaves).unwrap();
        let mut got = want.clone();
        let want_proofs = naive(&mut want, updates);
        let got_proofs = got.update_each(updates).unwrap();
        assert_eq!(got_proofs, want_proofs, "{config:?} size {size}");
        assert_eq!(got.head(), want.head());
        // The tree itself, not only the root: every node of every level.
        let mut rebuilt = leaves.clone();
        for &(index, value) in updates {
            rebuilt[usize::try_from(index).unwrap()] = value;
        }
        let mut fresh = LeanImt::from_leaves(config, &rebuilt).unwrap();
        assert_eq!(got.head(), fresh.head());
        for index in (0..size).step_by(usize::try_from(size / 7 + 1).unwrap()) {
            assert_eq!(got.prove(index).unwrap(), fresh.prove(index).unwrap());
        }
        // Each proof verifies against the head the naive loop had before it.
        let mut replay = LeanImt::from_leaves(config, &leaves).unwrap();
        for (proof, &(index, value)) in got_proofs.iter().zip(updates) {
            let before = replay.head();
            proof
                .verify_with(&config, &before)
                .expect("a proof against the root before its update");
            replay.update(index, value).unwrap();
        }
    }

    #[test]
    fn an_empty_sequence_changes_nothing_and_a_bad_one_is_refused_whole() {
        let config = TreeConfig::new(Arity::new(2).unwrap(), HashKind::Blake3);
        let mut tree = LeanImt::from_leaves(config, &[leaf(0), leaf(1), leaf(2)]).unwrap();
        let head = tree.head();
        assert!(tree.update_each(&[]).unwrap().is_empty());
        assert_eq!(
            tree.update_each(&[(0, leaf(9)), (3, leaf(8))]),
            Err(crate::TreeError::IndexOutOfRange { index: 3, size: 3 })
        );
        assert_eq!(tree.head(), head);
    }

    #[test]
    fn repeated_indices_and_right_edges_equal_the_naive_loop() {
        for n in [2u64, 3, 4, 16] {
            for kind in [
                TreeKind::Lean,
                TreeKind::Fixed {
                    depth: 7,
                    zero: [0; 32],
                },
            ] {
                let config =
                    TreeConfig::new(Arity::new(n).unwrap(), HashKind::Blake3).with_kind(kind);
                for size in [1u64, 2, 5, 17, 100] {
                    let updates: Vec<(u64, Hash)> = [0, size - 1, size / 2, 0, size - 1, size / 3]
                        .iter()
                        .enumerate()
                        .map(|(k, &i)| (i, leaf(1000 + k as u64)))
                        .collect();
                    check(config, size, &updates);
                }
            }
        }
    }

    #[test]
    fn poseidon_groups_through_the_lanes_equal_the_naive_loop() {
        let config = TreeConfig::new(Arity::new(2).unwrap(), HashKind::Poseidon);
        let updates: Vec<(u64, Hash)> = (0..40).map(|k| ((k * 37) % 300, leaf(500 + k))).collect();
        check(config, 300, &updates);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn any_sequence_equals_the_naive_loop(
            n in 2u64..6,
            fixed in any::<bool>(),
            size in 1u64..300,
            picks in prop::collection::vec((any::<u64>(), 0u8..4), 1..60),
        ) {
            let kind = if fixed { TreeKind::Fixed { depth: 9, zero: [7; 32] } } else { TreeKind::Lean };
            let config = TreeConfig::new(Arity::new(n).unwrap(), HashKind::Blake3).with_kind(kind);
            // Clustered picks (the same few leaves again and again) as
            // often as spread ones.
            let updates: Vec<(u64, Hash)> = picks
                .iter()
                .enumerate()
                .map(|(k, &(pick, spread))| {
                    let index = if spread == 0 { pick % size.min(4) } else { pick % size };
                    (index, leaf(10_000 + k as u64))
                })
                .collect();
            check(config, size, &updates);
        }
    }
}
