//! Consistency proofs: the tree of `old_size` leaves is a prefix of the tree
//! of `new_size` leaves, and roll-forward of membership proofs across them.
//!
//! The proof walks the old tree's right edge. At each level it carries the
//! edge node's `left` siblings (complete nodes both trees share) and its
//! `right` siblings (nodes only the new tree has), plus the old tree's last
//! leaf. From those the verifier recomputes both roots: the old one from the
//! left siblings alone, the new one from both (each group's parent by the
//! kind's rule: a fixed-depth tree pads with the level's zero). All counts
//! derive from `(old_size, new_size)` and the tree's shape, so a proof binds
//! both sizes and both roots.

use super::{check_head, check_params, check_value};
use crate::Arity;
use crate::cast::to_usize;
use crate::error::TreeError;
use crate::hash::{Hash, HashKind, MAX_GROUP};
use crate::kind::{ClimbingZeros, TreeKind, group_parent};
use crate::proof::error::VerifyError;
use crate::proof::membership::MembershipProof;
use crate::shape::{ConsistencyStep, PathStep, Shape};
use crate::tree::{TreeConfig, TreeHead, View};

/// A proof that the tree at `old_size` is a prefix of the tree at `new_size`.
///
/// From size 0 the proof is empty: the empty tree is a prefix of every tree,
/// so it says nothing about the new root. For equal sizes it proves that the
/// two roots are the same root of a tree of that size.
/// `Debug` shows the hashes in hex.
#[derive(Clone, PartialEq, Eq)]
pub struct ConsistencyProof {
    pub(crate) arity: Arity,
    pub(crate) hash: HashKind,
    pub(crate) kind: TreeKind,
    pub(crate) old_size: u64,
    pub(crate) new_size: u64,
    /// Leaf `old_size - 1`; `None` exactly when `old_size` is 0.
    pub(crate) edge_leaf: Option<Hash>,
    /// Per level bottom-up: the `left` then the `right` siblings.
    pub(crate) hashes: Vec<Hash>,
}

impl std::fmt::Debug for ConsistencyProof {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsistencyProof")
            .field("arity", &self.arity)
            .field("hash", &self.hash)
            .field("kind", &self.kind)
            .field("old_size", &self.old_size)
            .field("new_size", &self.new_size)
            .field("edge_leaf", &crate::hex::HexOption(self.edge_leaf.as_ref()))
            .field("hashes", &crate::hex::HexList(&self.hashes))
            .finish()
    }
}

/// One level of a verified walk: the shape, where its hashes sit in the
/// proof, and the new tree's value of the old edge node at that level.
#[derive(Clone, Copy, Debug)]
struct WalkLevel {
    step: ConsistencyStep,
    offset: usize,
    new_edge: Hash,
}

impl ConsistencyProof {
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
    /// The older size.
    pub fn old_size(&self) -> u64 {
        self.old_size
    }
    /// The newer size.
    pub fn new_size(&self) -> u64 {
        self.new_size
    }
    /// The old tree's last leaf, `None` when the old size is 0.
    pub fn edge_leaf(&self) -> Option<Hash> {
        self.edge_leaf
    }
    /// All sibling hashes, bottom-up.
    pub fn hashes(&self) -> &[Hash] {
        &self.hashes
    }

    /// The levels with at least one hash: their shape and their left and
    /// right siblings.
    pub fn levels(&self) -> impl Iterator<Item = (ConsistencyStep, &[Hash], &[Hash])> {
        let steps: Box<dyn Iterator<Item = ConsistencyStep>> = if self.old_size == 0 {
            Box::new(std::iter::empty())
        } else {
            Box::new(self.shape().consistency_steps(self.old_size, self.new_size))
        };
        let mut rest = self.hashes.as_slice();
        steps
            .filter(|step| step.left + step.right > 0)
            .map(move |step| {
                let (left, tail) = rest.split_at(step.left.min(rest.len()));
                let (right, tail) = tail.split_at(step.right.min(tail.len()));
                rest = tail;
                (step, left, right)
            })
    }

    pub(crate) fn generate(view: &View<'_>, old_size: u64) -> Result<ConsistencyProof, TreeError> {
        let read =
            |level: u32, index: u64| Ok::<Hash, std::convert::Infallible>(view.node(level, index));
        ConsistencyProof::from_nodes(view.config(), old_size, view.size(), read).map_err(|error| {
            match error {
                crate::proof::FromNodesError::Tree(error) => error,
                crate::proof::FromNodesError::Source(never) => match never {},
            }
        })
    }

    /// Checks that `old` and `new`, both trusted heads of a Lean tree of
    /// `arity` and `hash`, are consistent: the old tree is a prefix of the
    /// new one. A proof of a fixed-depth tree is refused: verify it with
    /// [`ConsistencyProof::verify_with`].
    pub fn verify(
        &self,
        arity: Arity,
        hash: HashKind,
        old: &TreeHead,
        new: &TreeHead,
    ) -> Result<(), VerifyError> {
        self.verify_with(&TreeConfig::new(arity, hash), old, new)
    }

    /// Checks that `old` and `new`, both trusted heads of the tree `config`
    /// describes (arity, hash and kind), are consistent.
    pub fn verify_with(
        &self,
        config: &TreeConfig,
        old: &TreeHead,
        new: &TreeHead,
    ) -> Result<(), VerifyError> {
        self.walk(config, old, new).map(|_| ())
    }

    /// Verifies, recording the new tree's value of the old edge node at each
    /// level (what roll-forward needs).
    fn walk(
        &self,
        config: &TreeConfig,
        old: &TreeHead,
        new: &TreeHead,
    ) -> Result<Vec<WalkLevel>, VerifyError> {
        check_params(
            (self.arity, self.hash, self.kind),
            (config.arity, config.hash, config.kind),
        )?;
        if !self.kind.is_append_only() {
            return Err(VerifyError::NotAppendOnly {
                kind: self.kind.name(),
            });
        }
        check_head(self.kind, old)?;
        check_head(self.kind, new)?;
        for (which, proof, trusted) in [
            ("old size", self.old_size, old.size),
            ("new size", self.new_size, new.size),
        ] {
            if proof != trusted {
                return Err(VerifyError::SizeMismatch {
                    which,
                    proof,
                    trusted,
                });
            }
        }
        if self.old_size > self.new_size {
            return Err(VerifyError::OldSizeAboveNew {
                old_size: self.old_size,
                new_size: self.new_size,
            });
        }
        let shape = self.shape();
        let want = shape.consistency_hash_count(self.old_size, self.new_size);
        if self.hashes.len() != want {
            return Err(VerifyError::HashCount {
                got: self.hashes.len(),
                want,
            });
        }
        let mut zeros = ClimbingZeros::new(self.arity, self.hash, self.kind);
        let edge_leaf = match (self.old_size, self.edge_leaf) {
            (0, None) => {
                // The empty tree is a prefix of every tree; a fixed-depth
                // one's trusted old root must still be its root, zeros[depth].
                if let Some(depth) = self.kind.fixed_depth() {
                    let computed = *zeros.pad(depth).expect("a fixed-depth tree has zeros");
                    let trusted = old.root.unwrap_or_default();
                    if computed != trusted {
                        return Err(VerifyError::RootMismatch {
                            which: "old root",
                            computed,
                            trusted,
                        });
                    }
                }
                return Ok(Vec::new());
            }
            (0, Some(_)) | (_, None) => {
                return Err(VerifyError::EdgeLeaf {
                    present: self.edge_leaf.is_some(),
                    old_size: self.old_size,
                });
            }
            (_, Some(leaf)) => leaf,
        };
        check_value(self.hash, "edge leaf", &edge_leaf)?;
        for (i, value) in self.hashes.iter().enumerate() {
            check_value(self.hash, &format!("hash {i}"), value)?;
        }

        let mut old_node = edge_leaf;
        let mut new_node = edge_leaf;
        let mut offset = 0;
        let mut group = [[0u8; 32]; MAX_GROUP];
        let n = self.arity.get();
        let mut walk = Vec::with_capacity(shape.depth(self.new_size) as usize);
        for step in shape.consistency_steps(self.old_size, self.new_size) {
            walk.push(WalkLevel {
                step,
                offset,
                new_edge: new_node,
            });
            let left = &self.hashes[offset..offset + step.left];
            let right = &self.hashes[offset + step.left..offset + step.left + step.right];
            offset += step.left + step.right;
            // The level's zero pads a fixed-depth tree's partial groups;
            // a Lean tree has none (a lone member is lifted).
            let pad = zeros.pad(step.level).copied();
            group[..step.left].copy_from_slice(left);
            if step.below_old_root {
                group[step.left] = old_node;
                old_node = group_parent(self.hash, n, pad.as_ref(), &group[..=step.left]);
            }
            group[step.left] = new_node;
            group[step.left + 1..=step.left + step.right].copy_from_slice(right);
            new_node = group_parent(
                self.hash,
                n,
                pad.as_ref(),
                &group[..=step.left + step.right],
            );
        }
        debug_assert_eq!(offset, self.hashes.len());
        for (which, computed, trusted) in [
            ("old root", old_node, old.root),
            ("new root", new_node, new.root),
        ] {
            let trusted = trusted.unwrap_or_default();
            if computed != trusted {
                return Err(VerifyError::RootMismatch {
                    which,
                    computed,
                    trusted,
                });
            }
        }
        Ok(walk)
    }

    /// Turns `proof`, a membership proof against the trusted `old` head of
    /// a Lean tree of `arity` and `hash`, into the membership proof of the
    /// same leaf against the trusted `new` head, using only this
    /// consistency proof (no leaves). Both inputs are verified first, and
    /// so is the result. For a tree of either kind: [`ConsistencyProof::roll_forward_with`].
    pub fn roll_forward(
        &self,
        proof: &MembershipProof,
        arity: Arity,
        hash: HashKind,
        old: &TreeHead,
        new: &TreeHead,
    ) -> Result<MembershipProof, VerifyError> {
        self.roll_forward_with(proof, &TreeConfig::new(arity, hash), old, new)
    }

    /// [`ConsistencyProof::roll_forward`] for the trusted tree `config` of either kind.
    pub fn roll_forward_with(
        &self,
        proof: &MembershipProof,
        config: &TreeConfig,
        old: &TreeHead,
        new: &TreeHead,
    ) -> Result<MembershipProof, VerifyError> {
        proof.verify_with(config, old)?;
        let walk = self.walk(config, old, new)?;
        let arity = config.arity;
        let shape = self.shape();
        // A verified membership proof means old.size > 0, so the walk covers
        // every level of the new tree.
        debug_assert_eq!(walk.len() as u64, u64::from(shape.depth(self.new_size)));
        let n = arity.as_u64();
        let old_levels: Vec<(PathStep, &[Hash])> = shape
            .path(proof.index, proof.size)
            .scan(proof.siblings.as_slice(), |rest, step| {
                let (level, tail) = rest.split_at(step.sibling_count());
                *rest = tail;
                Some((step, level))
            })
            .collect();
        let mut siblings =
            Vec::with_capacity(shape.membership_sibling_count(proof.index, self.new_size));
        for step in shape
            .path(proof.index, self.new_size)
            .filter(PathStep::hashes)
        {
            let at = walk[step.level as usize];
            let node = step.group_start + step.position as u64;
            if step.group_start / n < at.step.edge / n {
                // A complete group left of the old edge: identical in both trees.
                let (old_step, old_siblings) = old_levels[step.level as usize];
                debug_assert_eq!(old_step.group_len, step.group_len);
                siblings.extend_from_slice(old_siblings);
            } else {
                // The old edge node's group: left siblings are shared, the edge
                // node has its new value, right siblings are new-only.
                let left = &self.hashes[at.offset..at.offset + at.step.left];
                let right = &self.hashes
                    [at.offset + at.step.left..at.offset + at.step.left + at.step.right];
                for member in step.group_start..step.group_start + step.group_len as u64 {
                    if member == node {
                        continue;
                    }
                    let value = if member < at.step.edge {
                        left[to_usize(member - step.group_start)]
                    } else if member == at.step.edge {
                        at.new_edge
                    } else {
                        right[to_usize(member - at.step.edge - 1)]
                    };
                    siblings.push(value);
                }
            }
        }
        let rolled = MembershipProof {
            arity,
            hash: config.hash,
            kind: config.kind,
            index: proof.index,
            size: self.new_size,
            leaf: proof.leaf,
            siblings,
        };
        rolled.verify_with(config, new)?;
        Ok(rolled)
    }
}
