//! A batch of leaves checked once: not empty, every leaf canonical for the
//! tree's hash. The one check of a batch's leaves ([`TreeConfig::check_leaves`]);
//! a layer that validates a batch before doing its own work (the database
//! checks it before its nullifier set) hands the [`CheckedLeaves`] down,
//! so the leaves are not scanned again on the way into the tree. Only the
//! capacity is checked again at the append, against the tree's size then.

use std::borrow::Cow;

use crate::config::TreeConfig;
use crate::error::TreeError;
use crate::hash::{Hash, HashKind};

/// Leaves that passed [`TreeConfig::check_leaves`]: a non-empty batch of
/// leaves canonical for `hash`. Only that check makes one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckedLeaves<'a> {
    leaves: Cow<'a, [Hash]>,
    hash: HashKind,
}

impl TreeConfig {
    /// Checks `leaves` as one batch for a tree of this configuration: not
    /// empty, and every leaf canonical for the hash (below the field
    /// modulus for Poseidon and MiMCSponge).
    pub fn check_leaves<'a>(&self, leaves: &'a [Hash]) -> Result<CheckedLeaves<'a>, TreeError> {
        if leaves.is_empty() {
            return Err(TreeError::EmptyBatch);
        }
        if let Some(position) = leaves.iter().position(|leaf| !self.hash.accepts(leaf)) {
            return Err(TreeError::NonCanonicalLeaf {
                position,
                leaf: leaves[position],
            });
        }
        Ok(CheckedLeaves {
            leaves: Cow::Borrowed(leaves),
            hash: self.hash,
        })
    }
}

impl CheckedLeaves<'_> {
    /// The leaves.
    pub fn leaves(&self) -> &[Hash] {
        &self.leaves
    }

    /// How many leaves (at least one).
    pub fn count(&self) -> usize {
        self.leaves.len()
    }

    /// The hash they were checked for.
    pub fn hash(&self) -> HashKind {
        self.hash
    }

    /// The batch without the leaves at `positions` (ascending), `None` if
    /// none is left: what is left is canonical still, so it is not checked
    /// again (a caller that skips duplicates appends the rest).
    ///
    /// # Panics
    /// If `positions` is not ascending or names a position past the batch.
    pub fn without(&self, positions: &[usize]) -> Option<CheckedLeaves<'static>> {
        assert!(
            positions.windows(2).all(|pair| pair[0] < pair[1])
                && positions
                    .last()
                    .is_none_or(|&last| last < self.leaves.len()),
            "positions {positions:?} are not ascending positions of a batch of {}",
            self.leaves.len()
        );
        let mut skipped = positions.iter().peekable();
        let mut kept = Vec::with_capacity(self.leaves.len() - positions.len());
        for (position, leaf) in self.leaves.iter().enumerate() {
            if skipped.peek() == Some(&&position) {
                skipped.next();
            } else {
                kept.push(*leaf);
            }
        }
        (!kept.is_empty()).then_some(CheckedLeaves {
            leaves: Cow::Owned(kept),
            hash: self.hash,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Arity;

    #[test]
    fn a_batch_is_checked_once_and_what_is_left_of_it_stays_checked() {
        let poseidon = TreeConfig::new(Arity::BINARY, HashKind::Poseidon);
        assert_eq!(poseidon.check_leaves(&[]), Err(TreeError::EmptyBatch));
        let above = [0xff; 32];
        assert_eq!(
            poseidon.check_leaves(&[[1; 32], above]),
            Err(TreeError::NonCanonicalLeaf {
                position: 1,
                leaf: above
            })
        );
        let mut leaves = [[0u8; 32]; 5];
        for (i, leaf) in leaves.iter_mut().enumerate() {
            leaf[31] = i.to_le_bytes()[0];
        }
        let checked = poseidon.check_leaves(&leaves).unwrap();
        assert_eq!((checked.count(), checked.hash()), (5, HashKind::Poseidon));
        let rest = checked.without(&[0, 3]).unwrap();
        assert_eq!(rest.leaves(), [leaves[1], leaves[2], leaves[4]]);
        assert_eq!(checked.without(&[0, 1, 2, 3, 4]), None);
        assert_eq!(checked.without(&[]).unwrap().leaves(), leaves);
    }

    #[test]
    #[should_panic(expected = "not ascending")]
    fn positions_out_of_order_are_refused() {
        let config = TreeConfig::new(Arity::BINARY, HashKind::Blake3);
        let leaves = [[1; 32], [2; 32], [3; 32]];
        let _ = config.check_leaves(&leaves).unwrap().without(&[2, 1]);
    }
}
