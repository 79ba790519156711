//! Proofs built from any source of a tree's nodes: for provers that hold
//! no tree, only a way to read (or fetch and check) the nodes a proof
//! needs, such as a client of immutable tiles on object storage. The shape
//! arithmetic is the same as the in-memory prover's (`shape.rs`); only the
//! reads differ, and every read names the node it wants.

use crate::TreeConfig;
use crate::error::TreeError;
use crate::hash::Hash;
use crate::proof::{ConsistencyProof, MembershipProof};

/// Why a proof could not be built from a node source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FromNodesError<E> {
    /// The request does not fit the tree (an index or size beyond it).
    Tree(TreeError),
    /// The source failed to give a node.
    Source(E),
}

impl<E: std::fmt::Display> std::fmt::Display for FromNodesError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FromNodesError::Tree(error) => error.fmt(f),
            FromNodesError::Source(error) => error.fmt(f),
        }
    }
}

impl<E: std::fmt::Debug + std::fmt::Display> std::error::Error for FromNodesError<E> {}

impl MembershipProof {
    /// The proof of leaf `index` in the tree of `size` leaves of `config`,
    /// reading each node it needs through `node(level, index)`, which must
    /// answer with the node of that tree (the proof verifies only if it did).
    pub fn from_nodes<E>(
        config: TreeConfig,
        index: u64,
        size: u64,
        mut node: impl FnMut(u32, u64) -> Result<Hash, E>,
    ) -> Result<MembershipProof, FromNodesError<E>> {
        if index >= size {
            return Err(FromNodesError::Tree(TreeError::IndexOutOfRange {
                index,
                size,
            }));
        }
        let leaf = node(0, index).map_err(FromNodesError::Source)?;
        let shape = config.shape();
        let mut siblings = Vec::with_capacity(shape.membership_sibling_count(index, size));
        for step in shape.path(index, size).filter(|s| s.hashes()) {
            for member in 0..step.group_len {
                if member != step.position {
                    let at = step.group_start + member as u64;
                    siblings.push(node(step.level, at).map_err(FromNodesError::Source)?);
                }
            }
        }
        Ok(MembershipProof {
            arity: config.arity,
            hash: config.hash,
            kind: config.kind,
            index,
            size,
            leaf,
            siblings,
        })
    }
}

impl ConsistencyProof {
    /// The consistency proof from `old_size` to `new_size` of a tree of
    /// `config`, reading the nodes of the tree of `new_size` leaves through
    /// `node(level, index)`.
    pub fn from_nodes<E>(
        config: TreeConfig,
        old_size: u64,
        new_size: u64,
        mut node: impl FnMut(u32, u64) -> Result<Hash, E>,
    ) -> Result<ConsistencyProof, FromNodesError<E>> {
        if old_size > new_size {
            return Err(FromNodesError::Tree(TreeError::OldSizeAboveNew {
                old_size,
                new_size,
            }));
        }
        let shape = config.shape();
        let mut proof = ConsistencyProof {
            arity: config.arity,
            hash: config.hash,
            kind: config.kind,
            old_size,
            new_size,
            edge_leaf: None,
            hashes: Vec::with_capacity(shape.consistency_hash_count(old_size, new_size)),
        };
        if old_size == 0 {
            return Ok(proof);
        }
        proof.edge_leaf = Some(node(0, old_size - 1).map_err(FromNodesError::Source)?);
        for step in shape.consistency_steps(old_size, new_size) {
            let group_start = step.edge - step.left as u64;
            for at in
                (group_start..step.edge).chain(step.edge + 1..step.edge + 1 + step.right as u64)
            {
                proof
                    .hashes
                    .push(node(step.level, at).map_err(FromNodesError::Source)?);
            }
        }
        Ok(proof)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Arity, HashKind, LeanImt, TreeConfig};

    use super::*;

    #[test]
    fn proofs_from_nodes_equal_the_trees_own_at_every_index_and_size() {
        let leaves: Vec<Hash> = (0..70u8).map(|i| [i; 32]).collect();
        for n in [2, 3, 4, 5, 16] {
            let config = TreeConfig::new(Arity::new(n).unwrap(), HashKind::Blake3);
            let mut tree = LeanImt::from_leaves(config, &leaves).unwrap();
            for size in 1..=70u64 {
                let view = tree.at_size(size).unwrap();
                let read = |level: u32, index: u64| Ok::<Hash, ()>(view.node(level, index));
                for index in 0..size {
                    let got = MembershipProof::from_nodes(config, index, size, read).unwrap();
                    assert_eq!(
                        got,
                        view.prove(index).unwrap(),
                        "n {n} size {size} index {index}"
                    );
                }
                for old in 0..=size {
                    let got = ConsistencyProof::from_nodes(config, old, size, read).unwrap();
                    assert_eq!(
                        got,
                        view.prove_consistency(old).unwrap(),
                        "n {n} {old} -> {size}"
                    );
                }
                assert!(matches!(
                    MembershipProof::from_nodes(config, size, size, read),
                    Err(FromNodesError::Tree(TreeError::IndexOutOfRange { .. }))
                ));
            }
        }
    }
}
