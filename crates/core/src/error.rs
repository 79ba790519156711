//! Errors of the tree and of proof generation. Verification failures have
//! their own enum in `proof::error`, because a caller handles them differently
//! (a bad proof is the peer's fault, a bad append is the caller's).

use crate::hash::Hash;
use crate::hex::Hex;

/// Why an append or a proof request was refused. A refused append changes
/// nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TreeError {
    /// A batch append with no leaves.
    #[error("empty batch: append at least one leaf")]
    EmptyBatch,
    /// A Poseidon or MiMCSponge tree was given a leaf that is not a canonical BN254 scalar.
    #[error(
        "leaf at batch position {position} ({}) is not a canonical BN254 field element: it must be below the modulus 0x30644e72e131a029b85045b68181585d2833e84879b9709143e1f593f0000001",
        Hex(leaf)
    )]
    NonCanonicalLeaf {
        /// Position of the leaf in the batch (0 for a single append).
        position: usize,
        /// The refused value.
        leaf: Hash,
    },
    /// The append would make the tree deeper than its maximum depth.
    #[error(
        "appending {appending} leaves to a tree of {size} would exceed its capacity of {capacity} leaves (arity {arity}, max depth {max_depth})"
    )]
    CapacityExceeded {
        /// Leaves in the tree before the append.
        size: u64,
        /// Leaves in the refused append.
        appending: u64,
        /// N^max_depth.
        capacity: u64,
        /// The tree's arity.
        arity: usize,
        /// The tree's maximum depth.
        max_depth: u32,
    },
    /// A proof was requested for a leaf that the tree (at that size) lacks.
    #[error("leaf index {index} is out of range for a tree of size {size}")]
    IndexOutOfRange {
        /// The requested leaf index.
        index: u64,
        /// The size the proof was requested at.
        size: u64,
    },
    /// A proof was requested at a size the tree has not reached.
    #[error("size {size} is beyond the tree's current size {tree_size}")]
    SizeBeyondTree {
        /// The requested size.
        size: u64,
        /// The tree's current size.
        tree_size: u64,
    },
    /// A read-only view was requested while appends are not hashed yet.
    #[error(
        "the tree has {size} leaves but only {hashed} are hashed: commit before taking a read-only view"
    )]
    Uncommitted {
        /// Leaves in the tree.
        size: u64,
        /// Leaves covered by up-to-date upper levels.
        hashed: u64,
    },
    /// A rollback to more leaves than the tree holds.
    #[error("cannot truncate to {to} leaves: the tree holds {size}")]
    TruncateBeyondSize {
        /// The size asked for.
        to: u64,
        /// The tree's size.
        size: u64,
    },
    /// Levels handed to `LeanImt::from_levels` do not form a tree.
    #[error("level {level} holds {got} nodes, want {want} (the level below implies it)")]
    LevelShape {
        /// The level whose length is wrong.
        level: u32,
        /// Its length.
        got: u64,
        /// The length the level below implies.
        want: u64,
    },
    /// A configuration that is not a tree (a fixed depth out of range, a
    /// zero value the hash refuses).
    #[error(transparent)]
    Kind(#[from] crate::kind::KindError),
    /// A consistency proof was requested from a larger size to a smaller one.
    #[error("old size {old_size} is larger than new size {new_size}")]
    OldSizeAboveNew {
        /// The requested old size.
        old_size: u64,
        /// The requested new size.
        new_size: u64,
    },
}
