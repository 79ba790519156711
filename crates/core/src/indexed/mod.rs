//! Indexed Merkle trees: non-membership for the LeanIMT.
//!
//! Leaves are a sorted linked list `(value, next_index, next_value)` over
//! the values inserted, with a guard leaf (value 0) at index 0, under the
//! same n-ary LeanIMT as plain trees. A value's absence is shown by its
//! low leaf: the largest value below it, whose successor is above it (or
//! which has none). Inserting a value appends its leaf and rewrites its
//! low leaf's pointer, so unlike the plain tree the leaves below the right
//! edge change; the tree remains a function of the values in insertion
//! order. Construction and encodings: docs/spec.md, "Indexed trees".

mod binary;
mod error;
mod history;
mod interop;
mod json;
mod leaf;
mod proof;
mod simulate;
mod sorted;
mod tree;

pub use crate::proof::{KIND_ABSENCE, KIND_INDEXED_MEMBERSHIP, KIND_INSERTION};
pub use error::{Duplicate, DuplicateOf, IndexedError, IndexedVerifyError};
pub use history::{HistoryStats, LEAF_VERSION_BYTES, NODE_VERSION_BYTES};
pub use leaf::{END_MARKER, GUARD_VALUE, IndexedLeaf, index_word};
pub use proof::{AbsenceProof, IndexedMembershipProof, InsertionStep, InsertionWitness};
pub use tree::{IndexedSnapshot, IndexedTree};

/// Proof kinds any cairn proof file may hold, by their kind byte (binary)
/// or kind name (JSON): what a generic `verify` dispatches on. The indexed
/// kinds' binary encodings are version 1 only: another version with their
/// byte is no indexed proof (the membership or consistency decoder then
/// refuses it as malformed).
pub fn proof_kind(bytes: &[u8]) -> Option<&'static str> {
    let trimmed = bytes.trim_ascii_start();
    if trimmed.first() == Some(&b'{') {
        #[derive(serde::Deserialize)]
        struct Kind {
            kind: String,
        }
        let kind: Kind = serde_json::from_slice(bytes).ok()?;
        return crate::proof::PROOF_KINDS
            .iter()
            .map(|(_, name)| *name)
            .find(|name| *name == kind.kind);
    }
    let (&version, &byte) = (bytes.first()?, bytes.get(1)?);
    let indexed = [KIND_ABSENCE, KIND_INDEXED_MEMBERSHIP, KIND_INSERTION].contains(&byte);
    if indexed && version != crate::proof::FORMAT_VERSION {
        return None;
    }
    crate::proof::PROOF_KINDS
        .iter()
        .find(|(kind, _)| *kind == byte)
        .map(|(_, name)| *name)
}
