//! Membership proofs: leaf `index` is in the tree of `size` leaves.
//!
//! A proof carries exactly the siblings of the leaf's group at every level
//! where a hash happens (lifted levels carry nothing). The verifier derives
//! every position and group width from `(index, size, arity)` and the trusted
//! head; it never reads a root from the proof.

use arrayvec::ArrayVec;

use super::{check_head, check_params, check_value};
use crate::Arity;
use crate::error::TreeError;
use crate::hash::lanes::blake3::PathGroup;
use crate::hash::{Hash, HashKind, MAX_GROUP, lanes};
use crate::level::Level;
use crate::proof::error::VerifyError;
use crate::shape::{Path, PathStep};
use crate::tree::{TreeHead, View};

/// The most hashing levels a path has: a u64 size at arity 2.
const MAX_PATH: usize = 64;

/// A proof that `leaf` is leaf `index` of the tree of `size` leaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MembershipProof {
    pub(crate) arity: Arity,
    pub(crate) hash: HashKind,
    pub(crate) index: u64,
    pub(crate) size: u64,
    pub(crate) leaf: Hash,
    /// Siblings of every hashing level, bottom-up, each level's in index order.
    pub(crate) siblings: Vec<Hash>,
}

impl MembershipProof {
    /// The arity the proof was made for.
    pub fn arity(&self) -> Arity {
        self.arity
    }
    /// The hash the proof was made for.
    pub fn hash(&self) -> HashKind {
        self.hash
    }
    /// The proven leaf's index.
    pub fn index(&self) -> u64 {
        self.index
    }
    /// The tree size the proof is against.
    pub fn size(&self) -> u64 {
        self.size
    }
    /// The proven leaf.
    pub fn leaf(&self) -> Hash {
        self.leaf
    }
    /// All siblings, bottom-up.
    pub fn siblings(&self) -> &[Hash] {
        &self.siblings
    }

    /// The path steps that hash, each with its siblings.
    pub fn levels(&self) -> impl Iterator<Item = (PathStep, &[Hash])> {
        let mut rest = self.siblings.as_slice();
        Path::new(self.index, self.size, self.arity)
            .filter(PathStep::hashes)
            .map(move |step| {
                let (level, tail) = rest.split_at(step.sibling_count().min(rest.len()));
                rest = tail;
                (step, level)
            })
    }

    /// A proof with no content yet, for [`View::prove_into`] to fill.
    pub fn empty(config: crate::TreeConfig) -> MembershipProof {
        MembershipProof {
            arity: config.arity,
            hash: config.hash,
            index: 0,
            size: 0,
            leaf: [0; 32],
            siblings: Vec::new(),
        }
    }

    /// Builds the proof of leaf `index` in `view` into `proof`.
    pub(crate) fn generate_into(
        view: &View<'_>,
        index: u64,
        proof: &mut MembershipProof,
    ) -> Result<(), TreeError> {
        let size = view.size();
        if index >= size {
            return Err(TreeError::IndexOutOfRange { index, size });
        }
        let config = view.config();
        proof.arity = config.arity;
        proof.hash = config.hash;
        proof.index = index;
        proof.size = size;
        if view.reads_stored() {
            Self::gather_stored(view, index, proof);
        } else {
            Self::gather_with_edge(view, index, proof);
        }
        Ok(())
    }

    /// Gathers the siblings from a view of the stored size, where every
    /// group is one stored slice. The hot path of proof serving.
    ///
    /// Pass 1 resolves every level's group (its address follows from
    /// (index, size) alone) and asks the CPU to load it, so the cache misses
    /// of the big lower levels all start before any is waited for; it is
    /// kept short so that the out-of-order window still holds it when the
    /// first miss stalls. Pass 2 copies each group minus the path node:
    /// member m goes to slot m - (m > position). The path node lands where
    /// its right neighbour then overwrites it (or in one slot of slack past
    /// the end), so the copy has no data-dependent branch (the position is
    /// random per level and would mispredict about once a level) and every
    /// move is a fixed 32 bytes.
    fn gather_stored(view: &View<'_>, index: u64, proof: &mut MembershipProof) {
        // No initialisation of the 64 slots: that alone cost more than the
        // gathering at a 10-level path.
        let mut groups: ArrayVec<(&[Hash], u8), MAX_PATH> = ArrayVec::new();
        let mut total = 0;
        for step in Path::new(index, proof.size, proof.arity).filter(PathStep::hashes) {
            let Some(nodes) = view.stored_group(step.level, step.group_start, step.group_len)
            else {
                // The group crosses a segment boundary (an arity that does
                // not divide the segment length: about one group in 20,000
                // at N = 3): read it node by node.
                return Self::gather_with_edge(view, index, proof);
            };
            Level::prefetch_nodes(nodes);
            groups.push((nodes, step.position as u8));
            total += step.sibling_count();
        }
        proof.leaf = view.node(0, index);
        proof.siblings.resize(total + 1, [0; 32]);
        let out = proof.siblings.as_mut_slice();
        let mut at = 0;
        for &(nodes, position) in &groups {
            let slots = &mut out[at..at + nodes.len()];
            for (member, node) in nodes.iter().enumerate() {
                slots[member - usize::from(member > usize::from(position))] = *node;
            }
            at += nodes.len() - 1;
        }
        proof.siblings.truncate(total);
    }

    /// Gathers the siblings node by node: from a view below the stored
    /// size, whose right edge is recomputed, or across segment boundaries.
    fn gather_with_edge(view: &View<'_>, index: u64, proof: &mut MembershipProof) {
        proof.leaf = view.node(0, index);
        proof.siblings.clear();
        for step in Path::new(index, proof.size, proof.arity).filter(PathStep::hashes) {
            let at = proof.siblings.len();
            proof.siblings.resize(at + step.sibling_count(), [0; 32]);
            let (left, right) = proof.siblings[at..].split_at_mut(step.position);
            view.nodes_into(step.level, step.group_start, left);
            view.nodes_into(
                step.level,
                step.group_start + step.position as u64 + 1,
                right,
            );
        }
    }

    /// Checks the proof against a tree of `arity` and `hash` whose head the
    /// caller trusts. Every claimed field must equal what the trusted values
    /// imply; the root is recomputed and compared.
    pub fn verify(
        &self,
        arity: Arity,
        hash: HashKind,
        trusted: &TreeHead,
    ) -> Result<(), VerifyError> {
        check_params(self.arity, self.hash, arity, hash)?;
        check_head(trusted)?;
        if self.size != trusted.size {
            return Err(VerifyError::SizeMismatch {
                which: "size",
                proof: self.size,
                trusted: trusted.size,
            });
        }
        let computed = self.compute_root()?;
        let trusted_root = trusted.root.unwrap_or_default();
        if computed != trusted_root {
            return Err(VerifyError::RootMismatch {
                which: "root",
                computed,
                trusted: trusted_root,
            });
        }
        Ok(())
    }

    /// The root the proof implies at its own size, after checking its shape
    /// and values (but not against any trusted head).
    pub(crate) fn compute_root(&self) -> Result<Hash, VerifyError> {
        if self.index >= self.size {
            return Err(VerifyError::IndexOutOfRange {
                index: self.index,
                size: self.size,
            });
        }
        // The hashing levels' shapes, and so how many siblings they take.
        let mut path = [PathGroup::default(); MAX_PATH];
        let mut depth = 0;
        let mut want = 0;
        for step in Path::new(self.index, self.size, self.arity).filter(PathStep::hashes) {
            path[depth] = PathGroup {
                width: step.group_len as u8,
                position: step.position as u8,
            };
            depth += 1;
            want += step.sibling_count();
        }
        if self.siblings.len() != want {
            return Err(VerifyError::HashCount {
                got: self.siblings.len(),
                want,
            });
        }
        check_value(self.hash, "leaf", &self.leaf)?;
        for (i, sibling) in self.siblings.iter().enumerate() {
            if !self.hash.accepts(sibling) {
                return Err(VerifyError::NonCanonical {
                    what: format!("sibling {i}"),
                    value: *sibling,
                });
            }
        }
        if self.hash == HashKind::Blake3 {
            // The BLAKE3 path kernel hashes each group's siblings before the
            // path node alongside the levels below it.
            return Ok(lanes::blake3::hash_path(
                &self.leaf,
                &path[..depth],
                &self.siblings,
            ));
        }
        let mut node = self.leaf;
        let mut group = [[0u8; 32]; MAX_GROUP];
        for (step, siblings) in self.levels() {
            let width = step.group_len;
            group[..step.position].copy_from_slice(&siblings[..step.position]);
            group[step.position] = node;
            group[step.position + 1..width].copy_from_slice(&siblings[step.position..]);
            node = self.hash.hash_children(&group[..width]);
        }
        Ok(node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::level::SEGMENT_LEN;
    use crate::tree::{LeanImt, TreeConfig};

    fn leaf(i: u64) -> Hash {
        *blake3::hash(&i.to_le_bytes()).as_bytes()
    }

    /// The stored-view gatherer (slices, prefetch, branchless scatter)
    /// against the node-by-node one, for every leaf whose group at some
    /// level sits at a segment boundary (arities that do not divide the
    /// segment length have groups that cross it), and at the ends.
    #[test]
    fn stored_gather_equals_node_by_node_across_segment_boundaries() {
        for (arity, count) in [
            (2u64, 140_000u64),
            (3, 200_000),
            (4, 70_000),
            (5, 330_000),
            (16, 70_000),
        ] {
            let config = TreeConfig::new(Arity::new(arity).unwrap(), HashKind::Blake3);
            let leaves: Vec<Hash> = (0..count).map(leaf).collect();
            let mut tree = LeanImt::from_leaves(config, &leaves).unwrap();
            let head = tree.head();
            let view = tree.view(count).unwrap();
            assert!(view.reads_stored());
            let mut indices: Vec<u64> = (0..64).chain(count - 64..count).collect();
            // Leaves under the boundary at levels 0 and 1.
            let mut span = 1;
            for _ in 0..2 {
                let boundary = SEGMENT_LEN as u64 * span;
                if boundary < count {
                    let reach = 2 * arity * span;
                    indices.extend(boundary.saturating_sub(reach)..(boundary + reach).min(count));
                }
                span *= arity;
            }
            let mut fast = MembershipProof::empty(config);
            let mut slow = MembershipProof::empty(config);
            for index in indices {
                view.prove_into(index, &mut fast).unwrap();
                slow.index = index;
                slow.size = count;
                MembershipProof::gather_with_edge(&view, index, &mut slow);
                assert_eq!(fast.leaf, slow.leaf, "N = {arity}, leaf {index}");
                assert_eq!(fast.siblings, slow.siblings, "N = {arity}, leaf {index}");
                assert_eq!(fast.leaf, leaves[index as usize]);
                fast.verify(config.arity, config.hash, &head).unwrap();
            }
        }
    }
}
