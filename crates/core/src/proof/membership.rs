//! Membership proofs: leaf `index` is in the tree of `size` leaves.
//!
//! A proof carries exactly the siblings of the leaf's group that exist at
//! every level where a hash happens (a Lean tree's lifted levels carry
//! nothing; a fixed-depth tree's absent members are the level's zero, which
//! the verifier computes). The verifier derives every position and group
//! width from `(index, size)` and the trusted tree; it never reads a root
//! from the proof.

use arrayvec::ArrayVec;

use super::{check_head, check_params, check_value};
use crate::Arity;
use crate::error::TreeError;
use crate::hash::lanes::blake3::PathGroup;
use crate::hash::{Hash, HashKind, MAX_GROUP, lanes};
use crate::kind::{ClimbingZeros, TreeKind, group_parent};
use crate::level::Level;
use crate::proof::error::VerifyError;
use crate::shape::{PathStep, Shape};
use crate::tree::{TreeConfig, TreeHead, View};

/// The most hashing levels a path has: a u64 size at arity 2.
const MAX_PATH: usize = 64;

/// A proof that `leaf` is leaf `index` of the tree of `size` leaves.
/// `Debug` shows the hashes in hex.
#[derive(Clone, PartialEq, Eq)]
pub struct MembershipProof {
    pub(crate) arity: Arity,
    pub(crate) hash: HashKind,
    pub(crate) kind: TreeKind,
    pub(crate) index: u64,
    pub(crate) size: u64,
    pub(crate) leaf: Hash,
    /// Siblings of every hashing level, bottom-up, each level's in index order.
    pub(crate) siblings: Vec<Hash>,
}

impl std::fmt::Debug for MembershipProof {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MembershipProof")
            .field("arity", &self.arity)
            .field("hash", &self.hash)
            .field("kind", &self.kind)
            .field("index", &self.index)
            .field("size", &self.size)
            .field("leaf", &crate::hex::Hex(&self.leaf))
            .field("siblings", &crate::hex::HexList(&self.siblings))
            .finish()
    }
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
    /// The kind of tree the proof was made for.
    pub fn kind(&self) -> TreeKind {
        self.kind
    }
    /// The tree the proof was made for: its arity, hash and kind.
    pub fn config(&self) -> TreeConfig {
        TreeConfig::new(self.arity, self.hash).with_kind(self.kind)
    }
    /// The proof's shape arithmetic (arity and fixed depth).
    pub(crate) fn shape(&self) -> Shape {
        Shape::new(self.arity, self.kind)
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
        self.shape()
            .path(self.index, self.size)
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
            kind: config.kind,
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
        proof.kind = config.kind;
        proof.index = index;
        proof.size = size;
        Self::gather(view, index, proof);
        Ok(())
    }

    /// Gathers the leaf and its siblings: the hot path of proof serving.
    ///
    /// Pass 1 resolves every level's group (its address follows from
    /// (index, size) alone) to a stored slice and asks the CPU to load it,
    /// so the cache misses of the big lower levels all start before any is
    /// waited for; it is kept short so that the out-of-order window still
    /// holds it when the first miss stalls, and the leaf is read only after
    /// it. Pass 2 copies each group minus the path node: member m goes to
    /// slot m - (m > position). The path node lands where its right
    /// neighbour then overwrites it (or in one slot of slack past the end),
    /// so the copy has no data-dependent branch (the position is random per
    /// level and would mispredict about once a level) and every move is a
    /// fixed 32 bytes.
    ///
    /// A group that is not one stored slice is read node by node: the last
    /// group of a level in a snapshot or an older view (its last node is the
    /// recomputed or copied right edge), or a group that crosses a segment
    /// boundary (arities that do not divide the segment length: about one
    /// group in 20,000 at N = 3).
    fn gather(view: &View<'_>, index: u64, proof: &mut MembershipProof) {
        // An `ArrayVec` leaves its unused slots uninitialised: initialising
        // a 64-slot array cost more than the gathering of a 10-level path.
        let mut groups: ArrayVec<(Option<&[Hash]>, PathStep), MAX_PATH> = ArrayVec::new();
        let mut total = 0;
        for step in proof
            .shape()
            .path(index, proof.size)
            .filter(PathStep::hashes)
        {
            let nodes = view.group(step.level, step.group_start, step.group_len);
            if let Some(nodes) = nodes {
                Level::prefetch_nodes(nodes);
            }
            groups.push((nodes, step));
            total += step.sibling_count();
        }
        proof.leaf = view.node(0, index);
        proof.siblings.resize(total + 1, [0; 32]);
        let out = proof.siblings.as_mut_slice();
        let mut at = 0;
        for &(nodes, step) in &groups {
            let slots = &mut out[at..at + step.group_len];
            if let Some(nodes) = nodes {
                scatter(slots, nodes.iter(), step.position);
            } else if let Some((prefix, last)) =
                view.group_ending_at_edge(step.level, step.group_start, step.group_len)
            {
                // The last group of its level in a snapshot or an older
                // view: the same scatter, the edge node last.
                scatter(slots, prefix.iter().chain([&last]), step.position);
            } else {
                let (left, right) = slots[..step.sibling_count()].split_at_mut(step.position);
                view.nodes_into(step.level, step.group_start, left);
                view.nodes_into(
                    step.level,
                    step.group_start + step.position as u64 + 1,
                    right,
                );
            }
            at += step.sibling_count();
        }
        proof.siblings.truncate(total);
    }

    /// The node-by-node gatherer, for tests: the reference `gather` is
    /// checked against.
    #[cfg(test)]
    fn gather_node_by_node(view: &View<'_>, index: u64, proof: &mut MembershipProof) {
        proof.leaf = view.node(0, index);
        proof.siblings.clear();
        for step in proof
            .shape()
            .path(index, proof.size)
            .filter(PathStep::hashes)
        {
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

    /// Checks the proof against a Lean tree of `arity` and `hash` whose
    /// head the caller trusts. Every claimed field must equal what the
    /// trusted values imply; the root is recomputed and compared. A proof
    /// of a fixed-depth tree is refused ([`VerifyError::KindMismatch`]):
    /// verify it with [`MembershipProof::verify_with`].
    pub fn verify(
        &self,
        arity: Arity,
        hash: HashKind,
        trusted: &TreeHead,
    ) -> Result<(), VerifyError> {
        self.verify_with(&TreeConfig::new(arity, hash), trusted)
    }

    /// Checks the proof against a tree of `config` (its arity, hash and
    /// kind; a maximum depth is not part of a proof) whose head the caller
    /// trusts.
    pub fn verify_with(&self, config: &TreeConfig, trusted: &TreeHead) -> Result<(), VerifyError> {
        check_params(
            (self.arity, self.hash, self.kind),
            (config.arity, config.hash, config.kind),
        )?;
        check_head(self.kind, trusted)?;
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
        for step in self
            .shape()
            .path(self.index, self.size)
            .filter(PathStep::hashes)
        {
            path[depth] = PathGroup {
                // A group is at most the arity (16) wide.
                width: u8::try_from(step.group_len).expect("a group of at most 16"),
                position: u8::try_from(step.position).expect("a position below 16"),
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
        if self.kind.fixed_depth().is_some() {
            return Ok(self.fold_fixed());
        }
        if self.hash == HashKind::Blake3 {
            // The BLAKE3 path kernel hashes each group's siblings before the
            // path node alongside the levels below it (Lean groups only:
            // it knows no padding).
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

    /// The root of a fixed-depth proof whose shape is checked: every level
    /// hashes, its absent members padded with the level's zero (computed
    /// only as high as a partial group needs).
    pub(crate) fn fold_fixed(&self) -> Hash {
        let mut zeros = ClimbingZeros::new(self.arity, self.hash, self.kind);
        let n = self.arity.get();
        let mut node = self.leaf;
        let mut group = [[0u8; 32]; MAX_GROUP];
        for (step, siblings) in self.levels() {
            let width = step.group_len;
            group[..step.position].copy_from_slice(&siblings[..step.position]);
            group[step.position] = node;
            group[step.position + 1..width].copy_from_slice(&siblings[step.position..]);
            let pad = if width < n {
                zeros.pad(step.level)
            } else {
                None
            };
            node = group_parent(self.hash, n, pad, &group[..width]);
        }
        node
    }
}

/// Writes a group's members minus the one at `position` into `slots` (one
/// slot longer than the siblings): member m goes to slot m - (m > position),
/// so the path node is overwritten by its right neighbour or lands in the
/// last slot, with no branch on the position.
#[inline(always)]
fn scatter<'a>(slots: &mut [Hash], members: impl Iterator<Item = &'a Hash>, position: usize) {
    for (member, node) in members.enumerate() {
        slots[member - usize::from(member > position)] = *node;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cast::to_usize;
    use crate::level::SEGMENT_LEN;
    use crate::tree::{LeanImt, TreeConfig};

    fn leaf(i: u64) -> Hash {
        *blake3::hash(&i.to_le_bytes()).as_bytes()
    }

    /// The gatherer (slices, prefetch, branchless scatter, node-by-node
    /// fallback) against the node-by-node reference, for every leaf whose
    /// group at some level sits at a segment boundary (arities that do not
    /// divide the segment length have groups that cross it) and at both
    /// ends, from three kinds of view: the tree at its size (every group
    /// stored), a snapshot (each level's last node held apart), and an older
    /// size (the right edge recomputed).
    #[test]
    fn gather_equals_node_by_node_in_every_kind_of_view() {
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
            let snapshot = tree.snapshot();
            let older = count - 777;
            let older_head = LeanImt::from_leaves(config, &leaves[..to_usize(older)])
                .unwrap()
                .head();
            let mut indices: Vec<u64> = (0..64).chain(count - 900..count).collect();
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
            let head = tree.head();
            let views = [
                ("tree", tree.view(count).unwrap(), head),
                ("snapshot", snapshot.view(count).unwrap(), head),
                ("older", tree.view(older).unwrap(), older_head),
            ];
            let mut fast = MembershipProof::empty(config);
            let mut slow = MembershipProof::empty(config);
            for (kind, view, head) in &views {
                for &index in indices.iter().filter(|&&i| i < view.size()) {
                    view.prove_into(index, &mut fast).unwrap();
                    slow.index = index;
                    slow.size = view.size();
                    MembershipProof::gather_node_by_node(view, index, &mut slow);
                    let context = format!("N = {arity}, {kind} view, leaf {index}");
                    assert_eq!(fast.leaf, slow.leaf, "{context}");
                    assert_eq!(fast.siblings, slow.siblings, "{context}");
                    assert_eq!(fast.leaf, leaves[to_usize(index)], "{context}");
                    fast.verify(config.arity, config.hash, head)
                        .unwrap_or_else(|e| panic!("{context}: {e}"));
                }
            }
        }
    }
}
