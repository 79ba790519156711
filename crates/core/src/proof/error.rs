//! Why a proof was rejected: malformed bytes ([`DecodeError`]) or a
//! well-formed proof that does not match what the verifier trusts
//! ([`VerifyError`]).

use crate::hash::{Hash, HashKind};
use crate::hex::{Hex, HexError};

/// A byte string or JSON document that is not a well-formed proof.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// Fewer bytes than the fixed header.
    #[error("proof is {got} bytes, shorter than its {want}-byte header")]
    ShortHeader {
        /// Bytes given.
        got: usize,
        /// Header bytes.
        want: usize,
    },
    /// A format version this build does not know.
    #[error(
        "proof format version {got} is not supported, want 1 (a lean tree) or {want} (a tree of another kind)"
    )]
    UnsupportedVersion {
        /// Version found.
        got: u64,
        /// The newest version supported.
        want: u8,
    },
    /// A version 2 proof whose tree kind is unknown or not a tree (a depth
    /// out of range, a zero value its hash refuses).
    #[error("proof tree is malformed: {0}")]
    TreeKind(String),
    /// A fixed-depth tree's proof at a size beyond N^depth.
    #[error(
        "proof size {size} exceeds the capacity of its tree: {capacity} leaves (arity {arity}, depth {depth})"
    )]
    BeyondCapacity {
        /// The proof's size.
        size: u64,
        /// N^depth.
        capacity: u64,
        /// The proof's arity.
        arity: usize,
        /// The proof's fixed depth.
        depth: u32,
    },
    /// A membership proof where a consistency proof was expected, or the reverse.
    #[error("proof kind is {got}, want {want}")]
    WrongKind {
        /// Kind found.
        got: String,
        /// Kind expected.
        want: &'static str,
    },
    /// An arity outside 2..=16.
    #[error("proof arity {got} is out of range, want 2..=16")]
    BadArity {
        /// Arity found.
        got: u64,
    },
    /// An unknown hash id or name.
    #[error(
        "proof hash {got} is unknown, want blake3 (1), sha256 (2), keccak256 (3) or poseidon (4)"
    )]
    UnknownHash {
        /// Id or name found.
        got: String,
    },
    /// `index >= size` in a membership proof.
    #[error("proof leaf index {index} is out of range for its size {size}")]
    IndexOutOfRange {
        /// Index found.
        index: u64,
        /// Size found.
        size: u64,
    },
    /// `old_size > new_size` in a consistency proof.
    #[error("proof old size {old_size} is larger than its new size {new_size}")]
    OldSizeAboveNew {
        /// Old size found.
        old_size: u64,
        /// New size found.
        new_size: u64,
    },
    /// The total length disagrees with the one the header implies.
    #[error("proof is {got} bytes, its header implies exactly {want}")]
    WrongLength {
        /// Bytes given.
        got: usize,
        /// Bytes the header implies.
        want: usize,
    },
    /// A JSON level with the wrong number of hashes.
    #[error("proof level {level} has {got} {what}, want {want}")]
    WrongLevelLength {
        /// Position of the level in the proof's list.
        level: usize,
        /// What was counted.
        what: &'static str,
        /// Count found.
        got: usize,
        /// Count derived from the sizes and arity.
        want: usize,
    },
    /// A JSON proof with the wrong number of levels.
    #[error("proof has {got} levels, want {want}")]
    WrongLevelCount {
        /// Levels found.
        got: usize,
        /// Levels derived from the sizes and arity.
        want: usize,
    },
    /// The consistency proof's edge leaf is missing (old size > 0) or present (old size 0).
    #[error("proof edge leaf is {}, want {} for old size {old_size}", if *present { "present" } else { "absent" }, if *present { "none" } else { "one" })]
    EdgeLeaf {
        /// Whether an edge leaf was given.
        present: bool,
        /// The proof's old size.
        old_size: u64,
    },
    /// A malformed hash inside a JSON proof.
    #[error(transparent)]
    Hex(#[from] HexError),
    /// Not JSON of the expected shape.
    #[error("proof JSON is malformed: {0}")]
    Json(String),
}

/// A well-formed proof that does not prove what the verifier asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// The proof was made for another arity.
    #[error("proof is for arity {proof}, the trusted tree has arity {trusted}")]
    ArityMismatch {
        /// Arity in the proof.
        proof: usize,
        /// Arity the verifier trusts.
        trusted: usize,
    },
    /// The proof was made for another hash.
    #[error("proof is for hash {proof}, the trusted tree uses {trusted}")]
    HashMismatch {
        /// Hash in the proof.
        proof: HashKind,
        /// Hash the verifier trusts.
        trusted: HashKind,
    },
    /// The proof was made for another kind of tree (Lean or fixed-depth),
    /// or a fixed-depth tree of another depth or zero value.
    #[error("proof is for a tree of kind {proof}, the trusted tree is {trusted}")]
    KindMismatch {
        /// The proof's kind, as `lean` or `imt of depth D and zero 0x..`.
        proof: String,
        /// The trusted kind, spelled the same way.
        trusted: String,
    },
    /// A consistency proof of a tree that is not append-only (an indexed
    /// tree rewrites earlier leaves): no such proof is ever produced.
    #[error(
        "a consistency proof of an {kind} tree: its leaves change as values are inserted, so it has none"
    )]
    NotAppendOnly {
        /// The proof's tree kind.
        kind: &'static str,
    },
    /// The proof claims a size other than the trusted one.
    #[error("proof {which} is {proof}, the trusted size is {trusted}")]
    SizeMismatch {
        /// Which size ("size", "old size", "new size").
        which: &'static str,
        /// Size in the proof.
        proof: u64,
        /// Size the verifier trusts.
        trusted: u64,
    },
    /// The trusted head is itself inconsistent (a Lean tree's root for size
    /// 0, or no root where the tree has one).
    #[error("trusted head is inconsistent: size {size} {}", if *has_root { "with a root (the empty tree has none)" } else { "without a root" })]
    InconsistentHead {
        /// The head's size.
        size: u64,
        /// Whether it carried a root.
        has_root: bool,
    },
    /// The leaf index is not below the trusted size.
    #[error("leaf index {index} is out of range for a tree of size {size}")]
    IndexOutOfRange {
        /// Index in the proof.
        index: u64,
        /// Trusted size.
        size: u64,
    },
    /// `old_size > new_size`.
    #[error("old size {old_size} is larger than new size {new_size}")]
    OldSizeAboveNew {
        /// Old size.
        old_size: u64,
        /// New size.
        new_size: u64,
    },
    /// The proof holds a different number of hashes than the shape requires.
    #[error("proof has {got} hashes, a tree of this shape needs exactly {want}")]
    HashCount {
        /// Hashes in the proof.
        got: usize,
        /// Hashes the derived shape requires.
        want: usize,
    },
    /// The edge leaf is present for old size 0 or missing for a larger one.
    #[error("proof edge leaf is {}, want {} for old size {old_size}", if *present { "present" } else { "absent" }, if *present { "none" } else { "one" })]
    EdgeLeaf {
        /// Whether an edge leaf was given.
        present: bool,
        /// The old size.
        old_size: u64,
    },
    /// A Poseidon or MiMCSponge proof value is not a canonical field element.
    #[error("proof {what} {} is not a canonical BN254 field element", Hex(value))]
    NonCanonical {
        /// Which value ("leaf", "sibling 3", ...).
        what: String,
        /// The value.
        value: Hash,
    },
    /// The recomputed root differs from the trusted one.
    #[error(
        "proof computes {which} {}, the trusted {which} is {}",
        Hex(computed),
        Hex(trusted)
    )]
    RootMismatch {
        /// Which root ("root", "old root", "new root").
        which: &'static str,
        /// Root computed from the proof.
        computed: Hash,
        /// Root the verifier trusts.
        trusted: Hash,
    },
}
