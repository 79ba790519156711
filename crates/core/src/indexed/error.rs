//! Why an indexed tree refused an insertion or a query, and why an
//! indexed proof was rejected.

use crate::error::TreeError;
use crate::hash::Hash;
use crate::hex::Hex;
use crate::proof::VerifyError;

/// What a duplicate value repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DuplicateOf {
    /// A value the tree holds, at this leaf index.
    Leaf(u64),
    /// An earlier value of the same batch, at this position.
    Batch(usize),
}

/// A refused value of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Duplicate {
    /// Position in the batch.
    pub position: usize,
    /// The value.
    pub value: Hash,
    /// What it repeats.
    pub of: DuplicateOf,
}

/// Why an insertion, a query or a rollback of an indexed tree was refused.
/// A refused insertion changes nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IndexedError {
    /// The underlying tree refused (empty batch, capacity, sizes).
    #[error(transparent)]
    Tree(#[from] TreeError),
    /// Value 0 is the guard leaf's: every indexed tree holds it at index 0,
    /// so it is never inserted nor proven absent.
    #[error(
        "value at batch position {position} is 0, the guard leaf's value: indexed trees hold it at index 0 and refuse it as a value"
    )]
    GuardValue {
        /// Position in the batch (0 for a single value or a query).
        position: usize,
    },
    /// A field-hash tree was given a value that is not a canonical BN254 scalar.
    #[error(
        "value at batch position {position} ({}) is not a canonical BN254 field element: it must be below the modulus 0x30644e72e131a029b85045b68181585d2833e84879b9709143e1f593f0000001",
        Hex(value)
    )]
    NonCanonical {
        /// Position in the batch (0 for a single value or a query).
        position: usize,
        /// The value.
        value: Hash,
    },
    /// Values the tree holds already or repeated within the batch: nothing
    /// was inserted.
    #[error("{}", describe(*.batch, .duplicates))]
    Duplicates {
        /// Values in the refused batch.
        batch: usize,
        /// Every refused value, in batch order.
        duplicates: Vec<Duplicate>,
    },
    /// An absence proof was asked for a value the tree holds.
    #[error(
        "value {} is in the tree (leaf {index}): it has no absence proof",
        Hex(value)
    )]
    Present {
        /// The value.
        value: Hash,
        /// Its leaf index.
        index: u64,
    },
    /// A membership proof was asked for a value the tree does not hold.
    #[error("value {} is not in the tree: it has no membership proof", Hex(value))]
    Absent {
        /// The value.
        value: Hash,
    },
    /// A proof was asked against a size older than the oldest head the
    /// tree's history retains.
    #[error(
        "size {size} is outside the retained window of {window} heads: sizes {oldest}..={newest} are retained"
    )]
    OutsideWindow {
        /// The size asked for.
        size: u64,
        /// The oldest retained head's size.
        oldest: u64,
        /// The current head's size.
        newest: u64,
        /// Heads the window keeps.
        window: usize,
    },
    /// A proof was asked against a size inside the window that is no head
    /// (it fell inside one applied batch).
    #[error(
        "size {size} is not a retained head: the heads around it are at sizes {before} and {after}"
    )]
    NotAHead {
        /// The size asked for.
        size: u64,
        /// The retained head below it.
        before: u64,
        /// The retained head above it.
        after: u64,
    },
    /// A rollback below the guard leaf.
    #[error(
        "cannot truncate an indexed tree to {to} leaves: the guard leaf (index 0) always stays"
    )]
    TruncateGuard {
        /// The size asked for.
        to: u64,
    },
}

/// Up to this many duplicates are spelled out in the message (all are in
/// the error's list).
const SHOWN: usize = 8;

fn describe(batch: usize, duplicates: &[Duplicate]) -> String {
    let mut out = format!(
        "{} duplicate value{} in a batch of {batch}, nothing inserted:",
        duplicates.len(),
        if duplicates.len() == 1 { "" } else { "s" }
    );
    for d in duplicates.iter().take(SHOWN) {
        let of = match d.of {
            DuplicateOf::Leaf(index) => format!("leaf {index}"),
            DuplicateOf::Batch(position) => format!("batch position {position}"),
        };
        out.push_str(&format!(
            " {} at position {} (already {of});",
            Hex(&d.value),
            d.position
        ));
    }
    if duplicates.len() > SHOWN {
        out.push_str(&format!(" and {} more", duplicates.len() - SHOWN));
    } else {
        out.pop();
    }
    out
}

/// Why an indexed proof or insertion witness does not prove what the
/// verifier asked: the checks every membership proof gets
/// ([`VerifyError`]), plus the ordering the linked list must keep.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IndexedVerifyError {
    /// The path, its shape or its values do not match the trusted head.
    #[error(transparent)]
    Path(#[from] VerifyError),
    /// The proof is about another value than the one asked about.
    #[error(
        "proof is about value {}, the verifier asked about {}",
        Hex(proof),
        Hex(asked)
    )]
    ValueMismatch {
        /// The proof's value.
        proof: Hash,
        /// The value asked about.
        asked: Hash,
    },
    /// Value 0 is the guard's: no proof is about it.
    #[error("value 0 is the guard leaf's value: no absence proof or insertion is about it")]
    GuardValue,
    /// The low leaf does not bracket the value: it is not its predecessor.
    #[error(
        "low leaf {} (next {}) does not bracket value {}: want low < value and (value < next or next = 0)",
        Hex(low),
        Hex(next),
        Hex(value)
    )]
    NotBracketed {
        /// The value.
        value: Hash,
        /// The low leaf's value.
        low: Hash,
        /// The low leaf's next value.
        next: Hash,
    },
    /// A leaf's pointer is impossible in a tree of the trusted size: its
    /// next index is outside the tree, points to the guard without being
    /// the end marker, or the end marker carries an index.
    #[error(
        "leaf points to index {next_index} with next value {}, impossible in a tree of {size} leaves (the end marker is next index 0 with next value 0)",
        Hex(next_value)
    )]
    BadPointer {
        /// The pointer's index.
        next_index: u64,
        /// The pointer's value.
        next_value: Hash,
        /// The tree's size.
        size: u64,
    },
    /// The trusted head is not an indexed tree's: it has at least the guard leaf.
    #[error("trusted head has size 0: an indexed tree always holds its guard leaf")]
    EmptyHead,
    /// A leaf's index and value disagree about the guard: value 0 is leaf
    /// 0's, and leaf 0 holds value 0.
    #[error(
        "leaf {index} has value {}: the guard (value 0) is leaf 0 and only leaf 0",
        Hex(value)
    )]
    GuardIndex {
        /// The leaf's index in the proof.
        index: u64,
        /// The leaf's value in the proof.
        value: Hash,
    },
    /// A witness of no insertion: an empty batch is refused, so no tree
    /// produces one.
    #[error("the witness holds no insertion: an empty batch is refused, so none is ever produced")]
    EmptyWitness,
    /// One insertion of a witness was rejected.
    #[error("insertion {step} of the witness: {reason}")]
    Step {
        /// The insertion, counted from 0.
        step: usize,
        /// Why it was rejected.
        reason: Box<IndexedVerifyError>,
    },
}
