//! cairn-core: the pure core of cairn. An n-ary Lean Incremental Merkle Tree
//! (arity 2..=16), a fixed-depth zero-padded one, or an indexed one (sorted
//! linked-list leaves that prove absence), its node hashers (BLAKE3,
//! SHA-256, Keccak-256, Poseidon and MiMCSponge over BN254), membership,
//! consistency and absence proofs with their verifiers and encodings.
//!
//! Architecture invariant: this crate does no file or network I/O. Storage
//! lives in the engine crate; everything here is deterministic computation.

// Narrowing casts are checked conversions or name their argument ([`cast`]).
#![warn(clippy::cast_possible_truncation)]

pub mod arity;
mod batch;
mod build;
pub mod cast;
mod config;
pub mod decimal;
pub mod error;
pub mod hash;
pub mod hex;
pub mod indexed;
pub mod kind;
pub mod level;
pub mod proof;
pub mod recompute;
pub mod shape;
mod snapshot;
pub mod tree;
mod view;

pub use arity::{Arity, ArityError};
pub use batch::CheckedLeaves;
pub use error::TreeError;
pub use hash::{Hash, HashKind};
pub use kind::{KindCodeError, KindError, TreeKind};
pub use level::{NodeSource, TierError};
pub use proof::{
    AppendWitness, AppendWitnessError, ConsistencyProof, DecodeError, MembershipProof, VerifyError,
};
pub use recompute::{Frontier, GroupRule, KnownNodes, RecomputeError};
pub use tree::{LeanImt, Snapshot, TreeConfig, TreeHead, View};
