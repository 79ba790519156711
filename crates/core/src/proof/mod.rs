//! Proofs about a tree: membership of a leaf and consistency between two
//! sizes, their verifiers, roll-forward, and their binary and JSON encodings.
//!
//! Verifiers take what the caller trusts (arity, hash, kind, size and root)
//! and derive every position and width from it; anything a proof claims
//! that disagrees is a rejection with a reason. `verify(arity, hash, ..)`
//! trusts a Lean tree; `verify_with(config, ..)` trusts the tree `config`
//! describes, of either kind.

pub mod append;
mod binary;
mod consistency;
pub mod error;
mod from_nodes;
pub(crate) mod interop;
mod json;
mod membership;

pub use append::{AppendWitness, AppendWitnessError, batch_commitment};
pub use binary::{
    FORMAT_VERSION, FORMAT_VERSION_KINDS, KIND_ABSENCE, KIND_CONSISTENCY, KIND_INDEXED_MEMBERSHIP,
    KIND_INSERTION, KIND_MEMBERSHIP,
};
pub(crate) use binary::{PROOF_KINDS, kind_name};
pub use consistency::ConsistencyProof;
pub use error::{DecodeError, VerifyError};
pub use from_nodes::FromNodesError;
pub use interop::{InteropError, MAX_CIRCUIT_DEPTH};
pub use membership::MembershipProof;

use crate::Arity;
use crate::error::TreeError;
use crate::hash::{Hash, HashKind};
use crate::kind::TreeKind;
use crate::tree::{LeanImt, Snapshot, TreeHead, View};

/// The proof's (arity, hash, kind) against the trusted tree's.
fn check_params(
    (proof_arity, proof_hash, proof_kind): (Arity, HashKind, TreeKind),
    (arity, hash, kind): (Arity, HashKind, TreeKind),
) -> Result<(), VerifyError> {
    if proof_arity != arity {
        return Err(VerifyError::ArityMismatch {
            proof: proof_arity.get(),
            trusted: arity.get(),
        });
    }
    if proof_hash != hash {
        return Err(VerifyError::HashMismatch {
            proof: proof_hash,
            trusted: hash,
        });
    }
    if proof_kind != kind {
        return Err(VerifyError::KindMismatch {
            proof: describe_kind(&proof_kind),
            trusted: describe_kind(&kind),
        });
    }
    Ok(())
}

/// A kind as error messages name it: `lean`, or `imt of depth D and zero 0x..`.
fn describe_kind(kind: &TreeKind) -> String {
    match kind {
        TreeKind::Fixed { depth, zero } => {
            format!("imt of depth {depth} and zero {}", crate::hex::Hex(zero))
        }
        other => other.name().to_owned(),
    }
}

/// A trusted head of a tree of `kind` must be consistent: a Lean (or
/// indexed) tree has a root exactly when it has leaves, a fixed-depth tree
/// always has one.
fn check_head(kind: TreeKind, head: &TreeHead) -> Result<(), VerifyError> {
    let want_root = head.size > 0 || kind.fixed_depth().is_some();
    if want_root != head.root.is_some() {
        return Err(VerifyError::InconsistentHead {
            size: head.size,
            has_root: head.root.is_some(),
        });
    }
    Ok(())
}

fn check_value(hash: HashKind, what: &str, value: &Hash) -> Result<(), VerifyError> {
    if hash.accepts(value) {
        Ok(())
    } else {
        Err(VerifyError::NonCanonical {
            what: what.to_owned(),
            value: *value,
        })
    }
}

/// A decoded proof's tree kind must be a tree of its hash, and its size
/// must fit a fixed-depth tree (beyond N^depth the shape has no meaning).
fn check_decoded_kind(
    arity: Arity,
    hash: HashKind,
    kind: TreeKind,
    size: u64,
) -> Result<(), DecodeError> {
    kind.check(hash)
        .map_err(|e| DecodeError::TreeKind(e.to_string()))?;
    if let Some(depth) = kind.fixed_depth()
        && let Some(capacity) = crate::shape::capacity(arity, depth)
        && size > capacity
    {
        return Err(DecodeError::BeyondCapacity {
            size,
            capacity,
            arity: arity.get(),
            depth,
        });
    }
    Ok(())
}

/// Whether `bytes` hold a JSON proof: its first non-whitespace byte is `{`,
/// which is never the first byte (the format version) of a binary proof.
fn is_json(bytes: &[u8]) -> bool {
    bytes.trim_ascii_start().first() == Some(&b'{')
}

fn decode_either<T>(
    bytes: &[u8],
    from_json: fn(&str) -> Result<T, DecodeError>,
    from_bytes: fn(&[u8]) -> Result<T, DecodeError>,
) -> Result<T, DecodeError> {
    if is_json(bytes) {
        let text =
            std::str::from_utf8(bytes).map_err(|e| DecodeError::Json(format!("not UTF-8: {e}")))?;
        from_json(text)
    } else {
        from_bytes(bytes)
    }
}

impl MembershipProof {
    /// Decodes either encoding: JSON if the first non-whitespace byte is
    /// `{`, else binary.
    pub fn decode(bytes: &[u8]) -> Result<MembershipProof, DecodeError> {
        decode_either(
            bytes,
            MembershipProof::from_json,
            MembershipProof::from_bytes,
        )
    }
}

impl ConsistencyProof {
    /// Decodes either encoding: JSON if the first non-whitespace byte is
    /// `{`, else binary.
    pub fn decode(bytes: &[u8]) -> Result<ConsistencyProof, DecodeError> {
        decode_either(
            bytes,
            ConsistencyProof::from_json,
            ConsistencyProof::from_bytes,
        )
    }
}

impl View<'_> {
    /// The membership proof of leaf `index` at this view's size.
    pub fn prove(&self, index: u64) -> Result<MembershipProof, TreeError> {
        let mut proof = MembershipProof::empty(self.config());
        self.prove_into(index, &mut proof)?;
        Ok(proof)
    }

    /// Writes the membership proof of leaf `index` into `proof`, reusing its
    /// buffer: no allocation once the buffer has grown to the tree's depth.
    pub fn prove_into(&self, index: u64, proof: &mut MembershipProof) -> Result<(), TreeError> {
        MembershipProof::generate_into(self, index, proof)
    }

    /// The consistency proof from `old_size` to this view's size.
    pub fn prove_consistency(&self, old_size: u64) -> Result<ConsistencyProof, TreeError> {
        ConsistencyProof::generate(self, old_size)
    }
}

impl LeanImt {
    /// The membership proof of leaf `index` in the current tree.
    pub fn prove(&mut self, index: u64) -> Result<MembershipProof, TreeError> {
        self.at_size(self.size())?.prove(index)
    }

    /// The membership proof of leaf `index` in the tree as it was at `size`
    /// (`index < size <= self.size()`), for verifiers that trust an older root.
    pub fn prove_at(&mut self, index: u64, size: u64) -> Result<MembershipProof, TreeError> {
        self.at_size(size)?.prove(index)
    }

    /// The consistency proof between the tree at `old_size` and at `new_size`.
    pub fn prove_consistency(
        &mut self,
        old_size: u64,
        new_size: u64,
    ) -> Result<ConsistencyProof, TreeError> {
        if old_size > new_size {
            return Err(TreeError::OldSizeAboveNew { old_size, new_size });
        }
        self.at_size(new_size)?.prove_consistency(old_size)
    }
}

impl Snapshot {
    /// The membership proof of leaf `index` at the snapshot's size.
    pub fn prove(&self, index: u64) -> Result<MembershipProof, TreeError> {
        self.view_full().prove(index)
    }

    /// The membership proof of leaf `index` in the tree of `size` leaves.
    pub fn prove_at(&self, index: u64, size: u64) -> Result<MembershipProof, TreeError> {
        self.view(size)?.prove(index)
    }

    /// The consistency proof from `old_size` to `new_size`.
    pub fn prove_consistency(
        &self,
        old_size: u64,
        new_size: u64,
    ) -> Result<ConsistencyProof, TreeError> {
        self.view(new_size)?.prove_consistency(old_size)
    }
}
