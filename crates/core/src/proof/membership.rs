//! Membership proofs: leaf `index` is in the tree of `size` leaves.
//!
//! A proof carries exactly the siblings of the leaf's group at every level
//! where a hash happens (lifted levels carry nothing). The verifier derives
//! every position and group width from `(index, size, arity)` and the trusted
//! head; it never reads a root from the proof.

use super::{check_head, check_params, check_value};
use crate::Arity;
use crate::error::TreeError;
use crate::hash::lanes::blake3::PathGroup;
use crate::hash::{Hash, HashKind, MAX_GROUP, lanes};
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
        proof.leaf = view.node(0, index);
        proof.siblings.clear();
        // Every level's group address is known from (index, size) alone: ask
        // for all of them before reading any, so the cache misses of the big
        // lower levels overlap instead of queueing one after another.
        for step in Path::new(index, size, config.arity).filter(PathStep::hashes) {
            view.prefetch(step.level, step.group_start, step.group_len);
        }
        for step in Path::new(index, size, config.arity).filter(PathStep::hashes) {
            // The group minus the path node. A group read as one slice is
            // copied a node at a time (fixed 32-byte moves the compiler
            // inlines); a variable-length copy would call memmove per run.
            if let Some(group) = view.group(step.level, step.group_start, step.group_len) {
                for (member, node) in group.iter().enumerate() {
                    if member != step.position {
                        proof.siblings.push(*node);
                    }
                }
            } else {
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
        Ok(())
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
