//! cairn's storage engine: a [`Store`] keeps an n-ary append-only tree (a
//! LeanIMT or a fixed-depth tree; for an indexed database, the log of its
//! values) durable in a directory.
//!
//! - **Appends** copy leaves into memory under a short lock and return a
//!   durability [`Token`]; no file I/O happens on that path.
//! - **Group commit**: whoever waits first (a blocking [`Token::wait`]
//!   flushes on its own thread; an async [`Token::durable`] asks the
//!   store's commit thread to flush at once; the background thread every
//!   `flush_interval`) writes everything appended since the last commit
//!   with one frame and one `fdatasync`; every token up to it is released,
//!   and one notification wakes blocking and async waiters alike.
//! - **The durable head** ([`Store::durable_head`]): the durable size, its
//!   root and a snapshot holding it, published after every commit and
//!   rollback and read without a lock: what a reader may serve.
//! - **The leaf log is level 0**: leaves are written once, at fixed offsets
//!   of the log files, so sealed parts of the log are mapped and served as
//!   level 0 directly.
//! - **Checkpoints** write the upper levels' final nodes from a snapshot,
//!   without the append path's lock, and publish atomically; **recovery**
//!   maps them and replays the log's tail without rehashing.
//! - **Rollback**: a chain follower tags appends with blocks, truncates
//!   what a reorganisation orphaned (atomically, published like a
//!   checkpoint) and finalizes what can no longer change.
//! - **Faults**: a failed write or sync of what acknowledgements rest on
//!   (the log, the heads file) poisons the store: nothing more is
//!   acknowledged. A failed checkpoint changes nothing, is reported
//!   ([`Store::health`]) and retried.
//!
//! Every file operation goes through the [`fs::Fs`] seam; the on-disk
//! format is `docs/file-format.md`.
#![warn(missing_docs)]
// Narrowing casts are checked conversions or name their argument (`cairn_core::cast`).
#![warn(clippy::cast_possible_truncation)]

mod access;
mod backup;
mod checkpoint;
pub mod config;
#[doc(hidden)]
pub mod decoders;
pub mod error;
pub mod format;
pub mod fs;
mod heads;
mod layout;
mod log;
pub mod names;
pub mod replace;
mod rollback;
mod salvage;
mod store;

pub use backup::{Backup, DerivedFiles};
pub use config::{CheckpointPolicy, FLAG_EXPLICIT_FINALITY, FLAG_LAZY_FILES, StoreConfig};
pub use error::{NodeMismatch, StoreError, StoredChildren};
pub use format::{CheckpointMeta, LogPosition, StoreMeta};
pub use fs::{FileId, Fs, StdFs};
pub use heads::{BlockTag, RootAt, TaggedHead};
pub use layout::Layout;
pub use rollback::RollbackFloor;
pub use salvage::{Damage, Salvage};
pub use store::{
    Appended, CheckpointFailure, CheckpointHook, CheckpointObserver, DurableHead, FileChange,
    FileEvent, FileOutcome, FileRestore, FileWatch, Store, StoreHealth, StoreStats, Token,
    stored_config,
};
