//! The storage engine's errors. Every one names what was wrong and where.

use std::path::{Path, PathBuf};

use cairn_core::TreeError;

/// An error of the storage engine.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// A file operation failed.
    #[error("{op} {path}: {message}")]
    Io {
        /// What was being done ("write", "fdatasync", ...).
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The operating system's message.
        message: String,
        /// Its kind.
        kind: std::io::ErrorKind,
    },
    /// A file does not hold what it must: never repaired silently.
    #[error("corrupt {path} at offset {offset}: {detail}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Where.
        offset: u64,
        /// What is wrong.
        detail: String,
    },
    /// Verification (`StoreConfig::verify_on_open`) found a stored node
    /// that is not the hash of its children: a corruption whose place in
    /// the tree is known (the node or one of its children is wrong).
    #[error(
        "corrupt {} at offset {}: node {} of level {} is not the hash of its children",
        .0.file.display(),
        .0.offset,
        .0.index,
        .0.level
    )]
    NodeMismatch(Box<NodeMismatch>),
    /// Another process has the store open.
    #[error("{path} is locked: another process has this store open")]
    Locked {
        /// The lock file.
        path: PathBuf,
    },
    /// This process already has the store open (another `Store` or `Db`
    /// on the same directory that was not closed or dropped).
    #[error("{path} is already open in this process: close or drop the other handle first")]
    OpenInProcess {
        /// The directory.
        path: PathBuf,
    },
    /// The directory does not exist.
    #[error("{path} does not exist")]
    Missing {
        /// The directory.
        path: PathBuf,
    },
    /// The directory holds no store.
    #[error("{path} is not a cairn store (no cairn.meta)")]
    NotAStore {
        /// The directory.
        path: PathBuf,
    },
    /// Creating a store where one (or other files) exists.
    #[error("{path} is not empty: refusing to create a store there")]
    NotEmpty {
        /// The directory.
        path: PathBuf,
    },
    /// Opening with a config that contradicts the stored one.
    #[error("config mismatch: {field} is {stored} in the store, {given} was asked for")]
    ConfigMismatch {
        /// Which setting.
        field: &'static str,
        /// The stored value.
        stored: String,
        /// The requested value.
        given: String,
    },
    /// An invalid configuration.
    #[error("invalid config: {0}")]
    Config(String),
    /// The tree refused the append (nothing changed).
    #[error(transparent)]
    Tree(#[from] TreeError),
    /// An earlier write or sync failed: the store acknowledges nothing more.
    #[error(
        "the store stopped acknowledging writes after an earlier failure: {cause}; reopen it to recover what was acknowledged"
    )]
    Poisoned {
        /// The first failure.
        cause: String,
    },
    /// A durability wait ran out of time (the write may still become durable).
    #[error("timed out waiting for leaves up to {want} to be durable (durable: {durable})")]
    Timeout {
        /// The size waited for.
        want: u64,
        /// The durable size when the wait gave up.
        durable: u64,
    },
    /// The store was closed.
    #[error("the store is closed")]
    Closed,
    /// A write asked of a store opened read-only.
    #[error("cannot {what}: {path} is open read-only")]
    ReadOnly {
        /// What was asked ("append", "checkpoint", ...).
        what: &'static str,
        /// The directory.
        path: PathBuf,
    },
    /// An open waited too long for opens of the other kind.
    #[error("{path} stayed locked by {waiting_for} for {waited_seconds} s")]
    OpenBusy {
        /// `cairn.meta`, whose lock orders writers' recovery and read-only opens.
        path: PathBuf,
        /// How long the open waited.
        waited_seconds: u64,
        /// Whom it waited for.
        waiting_for: &'static str,
    },
    /// A read-only open found the store rolled back under it every time.
    #[error(
        "{path} was rolled back while it was being opened read-only, {attempts} times in a row"
    )]
    Busy {
        /// The directory.
        path: PathBuf,
        /// Opens tried.
        attempts: u32,
    },
    /// A block tag that does not follow the last one.
    #[error(
        "block {block} does not follow the last tagged block {last}: block numbers must increase"
    )]
    BlockOrder {
        /// The block asked for.
        block: u64,
        /// The last tagged block.
        last: u64,
    },
    /// A rollback or finalization below what is final.
    #[error("cannot roll back to {to} leaves: the first {finalized} are final")]
    BelowFinalized {
        /// The size asked for.
        to: u64,
        /// The finalized size.
        finalized: u64,
    },
    /// A rollback or finalization beyond the tree's size.
    #[error("cannot {what} {to} leaves: the tree holds {size}")]
    BeyondSize {
        /// "roll back to" or "finalize".
        what: &'static str,
        /// The size asked for.
        to: u64,
        /// The tree's size.
        size: u64,
    },
    /// No block-tagged head at or below a block.
    #[error("no block-tagged head at or below block {block}")]
    NoHeadAtBlock {
        /// The block asked for.
        block: u64,
    },
    /// The leaves (or block tag) a token waits for were rolled back.
    #[error("the append ending at {end} leaves was rolled back (the tree was truncated to {to})")]
    RolledBack {
        /// The size the token waited for.
        end: u64,
        /// The size it was truncated to.
        to: u64,
    },
    /// A file (or the directory) the store writes to no longer has its
    /// name, and the store could not write it there again: what it writes
    /// would not be durable at the name a reopen reads.
    #[error(
        "{path} was {change} while the store was using it and could not be restored ({detail}): nothing more is acknowledged; what it held is still in the store's memory until it closes"
    )]
    Replaced {
        /// The file or directory.
        path: PathBuf,
        /// "removed" or "replaced".
        change: &'static str,
        /// Why it could not be restored.
        detail: String,
    },
}

/// A stored node that is not the hash of its children (see
/// [`StoreError::NodeMismatch`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeMismatch {
    /// The node's level (1 and up: leaves have no children).
    pub level: u32,
    /// Its index in that level.
    pub index: u64,
    /// The file holding it.
    pub file: PathBuf,
    /// Its byte offset in that file.
    pub offset: u64,
    /// Where its children are.
    pub children: StoredChildren,
}

/// Where the children of a stored node are: a run of nodes of the level
/// below, starting in one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredChildren {
    /// Their level.
    pub level: u32,
    /// The first child's index in that level.
    pub first: u64,
    /// One past the last child's index.
    pub end: u64,
    /// The file holding the first child.
    pub file: PathBuf,
    /// The first child's byte offset in it.
    pub offset: u64,
}

impl StoreError {
    /// A failed file operation on `path`.
    pub fn io(op: &'static str, path: impl Into<PathBuf>, e: std::io::Error) -> StoreError {
        StoreError::Io {
            op,
            path: path.into(),
            message: e.to_string(),
            kind: e.kind(),
        }
    }

    /// `path` does not hold what it must at `offset`.
    pub fn corrupt(path: impl Into<PathBuf>, offset: u64, detail: impl ToString) -> StoreError {
        StoreError::Corrupt {
            path: path.into(),
            offset,
            detail: detail.to_string(),
        }
    }

    /// Whether this is an I/O failure or a corruption (exit code 4 in the CLI).
    pub fn is_storage_fault(&self) -> bool {
        matches!(
            self,
            StoreError::Io { .. }
                | StoreError::Corrupt { .. }
                | StoreError::NodeMismatch(_)
                | StoreError::Poisoned { .. }
                | StoreError::Replaced { .. }
        )
    }

    /// The file and byte offset a corruption names, if this is one.
    pub fn corrupt_location(&self) -> Option<(&Path, u64)> {
        match self {
            StoreError::Corrupt { path, offset, .. } => Some((path, *offset)),
            StoreError::NodeMismatch(mismatch) => Some((&mismatch.file, mismatch.offset)),
            _ => None,
        }
    }
}

/// Results of the engine.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;
