//! The database's errors.

use cairn_core::hex::to_hex;
use cairn_store::StoreError;

use crate::set::{Duplicate, DuplicateOf};

/// A database error.
#[derive(Debug, Clone, thiserror::Error)]
pub enum DbError {
    /// The storage engine failed or refused (I/O, corruption, lock, a leaf
    /// the tree refuses...).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A batch holds values already in the tree or repeated within it:
    /// nothing was appended.
    #[error("{}", describe(*.batch, .duplicates))]
    Duplicates {
        /// Values in the refused batch.
        batch: usize,
        /// Every refused value, in batch order.
        duplicates: Vec<Duplicate>,
    },
    /// Lookups need the nullifier set, which this database does not keep.
    #[error("this database keeps no nullifier set (created with unique off): no lookups by value")]
    NoSet,
    /// Opening with a config that contradicts the stored one.
    #[error("config mismatch: {field} is {stored} in the database, {given} was asked for")]
    ConfigMismatch {
        /// Which setting.
        field: &'static str,
        /// The stored value.
        stored: String,
        /// The requested value.
        given: String,
    },
    /// The set cannot take more values.
    #[error("the nullifier set is full: {0}")]
    SetFull(String),
    /// An indexed database refused a value or a query (the guard value 0,
    /// a non-canonical value, a value present or absent, a rollback below
    /// the guard).
    #[error(transparent)]
    Indexed(cairn_core::indexed::IndexedError),
}

/// Up to this many duplicates are spelled out in the message (all are in
/// the error's list).
const SHOWN: usize = 8;

fn describe(batch: usize, duplicates: &[Duplicate]) -> String {
    let mut out = format!(
        "{} duplicate value{} in a batch of {batch}, nothing appended:",
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
            to_hex(&d.value),
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

impl DbError {
    /// Whether this is an I/O failure or a corruption.
    pub fn is_storage_fault(&self) -> bool {
        matches!(self, DbError::Store(e) if e.is_storage_fault())
    }
}

/// The database's result type.
pub type Result<T, E = DbError> = std::result::Result<T, E>;
