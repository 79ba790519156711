//! The database's errors.

use std::path::Path;

use cairn_core::hex::to_hex;
use cairn_core::{TreeError, TreeKind};
use cairn_store::{NodeMismatch, StoreError};

use crate::operation::Operation;
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
    /// The tree refused a query: a leaf index or a size it does not hold,
    /// a value no leaf of it can be (not canonical for its hash).
    #[error(transparent)]
    Tree(#[from] TreeError),
    /// An operation this database's kind cannot do: what it is and which
    /// kind can (see [`Operation`]).
    #[error("{}", operation.refusal(*kind))]
    Unsupported {
        /// What was asked.
        operation: Operation,
        /// The database's kind.
        kind: TreeKind,
    },
    /// An absence proof was asked of a value the tree holds.
    #[error(
        "value {} is in the tree (leaf {index}): it has no absence proof",
        to_hex(value)
    )]
    Present {
        /// The value.
        value: cairn_core::Hash,
        /// Its leaf index.
        index: u64,
    },
    /// A membership proof was asked of a value the tree does not hold.
    #[error(
        "value {} is not in the tree: it has no membership proof",
        to_hex(value)
    )]
    Absent {
        /// The value.
        value: cairn_core::Hash,
    },
    /// A proof was asked against a root that is not one of the durable
    /// tree's known roots.
    #[error(
        "root {} is not a root of the durable tree among the tagged heads and the roots of the last {window} appends",
        to_hex(root)
    )]
    UnknownRoot {
        /// The root.
        root: cairn_core::Hash,
        /// How many recent appends' roots are known by value.
        window: usize,
    },
    /// A lookup by value in a database opened without its nullifier set
    /// (`OpenOptions::lookups(false)`).
    #[error("this database was opened without its nullifier set: no lookups by value")]
    SetNotLoaded,
    /// A head about to be published is no longer the database's: the tree
    /// was rolled back and regrown since the snapshot it came from.
    #[error(
        "the tree was rolled back and regrown since its tiles were read: its head at {size} leaves changed"
    )]
    HeadChanged {
        /// The size whose root changed.
        size: u64,
    },
    /// A mutable tree refused a change (see [`crate::MutableError`]).
    #[error(transparent)]
    Mutable(#[from] crate::mutable::MutableError),
    /// An operation a mutable tree cannot do.
    #[error("{}", operation.refusal_mutable(*kind))]
    UnsupportedMutable {
        /// What was asked.
        operation: Operation,
        /// The tree's shape.
        kind: TreeKind,
    },
    /// A database of several trees refused (see [`crate::ForestError`]).
    #[error(transparent)]
    Forest(#[from] crate::forest::ForestError),
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
        use crate::forest::ForestError as Forest;
        matches!(self, DbError::Store(e) if e.is_storage_fault())
            || matches!(
                self,
                DbError::Forest(Forest::CorruptManifest { .. } | Forest::CorruptJournal { .. })
            )
    }

    /// What kind of failure this is: what a caller maps to an exit code
    /// or an HTTP status, without matching the storage engine's and the
    /// tree's errors inside.
    pub fn kind(&self) -> ErrorKind {
        use cairn_core::TreeError as Tree;
        use cairn_core::indexed::IndexedError as Indexed;
        match self {
            DbError::Duplicates { .. } => ErrorKind::Duplicate,
            DbError::Indexed(error) => match error {
                Indexed::Duplicates { .. } => ErrorKind::Duplicate,
                Indexed::Present { .. } | Indexed::Absent { .. } => ErrorKind::Presence,
                Indexed::TruncateGuard { .. }
                | Indexed::OutsideWindow { .. }
                | Indexed::NotAHead { .. }
                | Indexed::Tree(
                    Tree::IndexOutOfRange { .. }
                    | Tree::SizeBeyondTree { .. }
                    | Tree::TruncateBeyondSize { .. },
                ) => ErrorKind::NotFound,
                Indexed::Tree(Tree::CapacityExceeded { .. }) => ErrorKind::Full,
                // The guard value 0, a non-canonical value, an empty batch.
                _ => ErrorKind::InvalidBatch,
            },
            DbError::NoSet | DbError::ConfigMismatch { .. } | DbError::SetNotLoaded => {
                ErrorKind::Config
            }
            DbError::Present { .. } | DbError::Absent { .. } => ErrorKind::Presence,
            DbError::UnknownRoot { .. } => ErrorKind::NotFound,
            DbError::SetFull(_) => ErrorKind::Full,
            DbError::Unsupported { .. } | DbError::UnsupportedMutable { .. } => {
                ErrorKind::Unsupported
            }
            DbError::Mutable(error) => match error {
                crate::mutable::MutableError::Removed { .. } => ErrorKind::Presence,
                crate::mutable::MutableError::WasRemoved { .. } => ErrorKind::Duplicate,
                _ => ErrorKind::InvalidBatch,
            },
            DbError::HeadChanged { .. } => ErrorKind::RolledBack,
            DbError::Forest(error) => {
                use crate::forest::ForestError as Forest;
                match error {
                    Forest::BadName { .. } | Forest::TreeTwice { .. } => ErrorKind::InvalidBatch,
                    Forest::MemberWrite { .. } | Forest::BatchOverMember { .. } => {
                        ErrorKind::InvalidBatch
                    }
                    Forest::BadCapacity { .. } => ErrorKind::Config,
                    Forest::Full { .. } => ErrorKind::Full,
                    Forest::InFamily { .. } => ErrorKind::Duplicate,
                    Forest::UnknownTree { .. } | Forest::NoBlock { .. } => ErrorKind::NotFound,
                    Forest::TreeExists { .. } | Forest::SingleTree => ErrorKind::Config,
                    Forest::BlockOrder { .. } => ErrorKind::BlockOrder,
                    Forest::BelowFinalized { finalized, .. } => ErrorKind::BelowFinalized {
                        finalized: *finalized,
                    },
                    Forest::CorruptManifest { .. }
                    | Forest::CorruptJournal { .. }
                    | Forest::Poisoned { .. } => ErrorKind::Unavailable,
                    _ => ErrorKind::Other,
                }
            }
            DbError::Tree(error) => match error {
                Tree::EmptyBatch | Tree::NonCanonicalLeaf { .. } => ErrorKind::InvalidBatch,
                Tree::CapacityExceeded { .. } => ErrorKind::Full,
                Tree::IndexOutOfRange { .. }
                | Tree::SizeBeyondTree { .. }
                | Tree::TruncateBeyondSize { .. } => ErrorKind::NotFound,
                _ => ErrorKind::Other,
            },
            DbError::Store(error) => match error {
                StoreError::NotEmpty { .. }
                | StoreError::ConfigMismatch { .. }
                | StoreError::Config(_) => ErrorKind::Config,
                StoreError::Tree(Tree::EmptyBatch | Tree::NonCanonicalLeaf { .. }) => {
                    ErrorKind::InvalidBatch
                }
                StoreError::Tree(Tree::CapacityExceeded { .. }) => ErrorKind::Full,
                StoreError::Tree(Tree::IndexOutOfRange { .. } | Tree::SizeBeyondTree { .. })
                | StoreError::BeyondSize { .. }
                | StoreError::NoHeadAtBlock { .. } => ErrorKind::NotFound,
                StoreError::BlockOrder { .. } => ErrorKind::BlockOrder,
                StoreError::RolledBack { .. } => ErrorKind::RolledBack,
                StoreError::BelowFinalized { finalized, .. } => ErrorKind::BelowFinalized {
                    finalized: *finalized,
                },
                StoreError::Poisoned { .. }
                | StoreError::Replaced { .. }
                | StoreError::Io { .. }
                | StoreError::Corrupt { .. }
                | StoreError::NodeMismatch(_)
                | StoreError::Timeout { .. }
                | StoreError::Closed => ErrorKind::Unavailable,
                _ => ErrorKind::Other,
            },
        }
    }

    /// The file and byte offset a corruption names, if this is one.
    pub fn corrupt_location(&self) -> Option<(&Path, u64)> {
        match self {
            DbError::Store(error) => error.corrupt_location(),
            _ => None,
        }
    }

    /// The stored node verification found not to be the hash of its
    /// children, with where its children are, if this is that corruption
    /// (an open with verification on: `OpenOptions::verify`).
    pub fn node_mismatch(&self) -> Option<&NodeMismatch> {
        match self {
            DbError::Store(StoreError::NodeMismatch(mismatch)) => Some(mismatch),
            _ => None,
        }
    }
}

impl Operation {
    /// `Ok` if a tree of `kind` can do it, else the refusal
    /// ([`DbError::Unsupported`]).
    pub fn check(self, kind: TreeKind) -> Result<(), DbError> {
        if self.supported_by(kind) {
            Ok(())
        } else {
            Err(DbError::Unsupported {
                operation: self,
                kind,
            })
        }
    }
}

/// The kinds of [`DbError`] a caller tells apart (see [`DbError::kind`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A batch repeats values the database holds or repeats itself.
    Duplicate,
    /// A batch the tree refuses as given: empty, or a leaf that is not
    /// canonical for the hash.
    InvalidBatch,
    /// No room: the tree's maximum depth or the nullifier set's capacity.
    Full,
    /// Something asked of a configuration or directory that does not
    /// allow it: a config that contradicts the stored one, an invalid
    /// config, a directory that is not empty, a lookup without a set.
    Config,
    /// An index, size, or block the tree does not hold (or, in an indexed
    /// tree, a rollback that would remove its guard leaf).
    NotFound,
    /// An indexed tree asked to prove a value absent that is present, or
    /// present that is absent.
    Presence,
    /// A block number that does not follow the last tagged one.
    BlockOrder,
    /// The append a durability wait was for was rolled back (or, for a
    /// publication, the head it was about to name).
    RolledBack,
    /// An operation the database's kind cannot do
    /// ([`DbError::Unsupported`]): asking again will not help.
    Unsupported,
    /// A rollback below the finalized size.
    BelowFinalized {
        /// The finalized size.
        finalized: u64,
    },
    /// The storage failed (I/O, corruption, an earlier failure, a timed
    /// out wait, a closed database): retrying later may succeed.
    Unavailable,
    /// Anything else (a lock held by another process, a read-only
    /// database asked to write, ...).
    Other,
}

/// The database's result type.
pub type Result<T, E = DbError> = std::result::Result<T, E>;
