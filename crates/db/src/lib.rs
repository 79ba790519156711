//! cairn's database. [`Database`] is the one type over every tree kind,
//! opened by what the directory holds: a lean or fixed-depth tree with a
//! strict nullifier set ([`Db`]), or an indexed tree that proves absence
//! ([`IndexedDb`]); appends are acknowledged ([`Ack`]) once durable, and
//! what a kind cannot do is refused by [`Operation::check`].
//!
//! Underneath, a [`Db`] owns an n-ary LeanIMT (or a fixed-depth tree), its
//! storage engine and a strict nullifier set, all numbering leaves by one
//! leaf index.
//!
//! - **Strict uniqueness**: a value already in the tree, or repeated within
//!   a batch, is refused; a batch is all or nothing
//!   ([`Db::append_batch`]) unless duplicates are explicitly skipped
//!   ([`Db::append_new`]). A refused append writes nothing.
//! - **Lookups** ([`Db::index_of`], [`Db::contains`], and on a
//!   [`DbSnapshot`]) come from an in-memory table of 8-byte entries (a
//!   28-bit keyed fingerprint and a 36-bit leaf index), confirmed against
//!   the leaf itself: never a scan, never a false answer.
//! - **Crash consistency by construction**: the set is derived from the
//!   leaves. Its checkpoint file says which leaves it covers; open loads it
//!   and inserts the leaves after them, so after any crash the set holds
//!   exactly the recovered leaves.
//! - **Durability**: an append's [`Token`] is waited on blocking
//!   ([`Token::wait`]) or awaited without a thread ([`Token::durable`]);
//!   [`Db::durable_head`] is what a reader may serve (the durable size,
//!   its root and a snapshot holding it, read without a lock).
//!
//! The map and its invariants: `ARCHITECTURE.md`; the figures:
//! `docs/performance.md`;
//! the set's file: `docs/file-format.md`.
#![warn(missing_docs)]

/// The README's library examples, compiled and run as doctests so that
/// they cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

mod config;
mod database;
mod db;
#[doc(hidden)]
pub mod decoders;
mod error;
mod forest;
mod indexed;
mod mutable;
mod open;
mod operation;
pub mod repair;
mod rollback;
mod set;
mod usage;

/// The `cairn.meta` version of a database whose tree is of another kind
/// than Lean.
pub use cairn_store::format::META_VERSION_KINDS as FORMAT_VERSION_KINDS;
/// The on-disk format this build writes (older ones are read and migrated).
pub use cairn_store::format::STORE_FORMAT;
pub use cairn_store::format::VERSION as FORMAT_VERSION;
pub use cairn_store::names::META as META_FILE;
pub use cairn_store::{
    Appended, Backup, BlockTag, CheckpointFailure, CheckpointMeta, CheckpointObserver,
    CheckpointPolicy, FileChange, FileEvent, FileOutcome, NodeMismatch, RootAt, StoreConfig,
    StoreError, StoreHealth, StoreStats, StoredChildren, TaggedHead, Token,
};
pub use config::DbConfig;
pub use database::{
    Ack, Acked, At, Changed, Checked, Checkpointed, Database, Durable, Lookup, Proof, ProofFormat,
    RenderError,
};
pub use db::{AppendedNew, Db, DbSnapshot, DbStats, DurableHead};
pub use error::{DbError, ErrorKind, Result};
pub use forest::{
    BlockId, BlockParts, Capacity, Committed, DEFAULT_TREE, Family, Forest, ForestError, JOURNAL,
    JOURNAL_VERSION, Located, MANIFEST, MANIFEST_VERSION, ReadTree, Rollover, TREES_DIR, Tree,
    TreeAt, check_name, family_dirs, is_forest, member_name, open_tree, open_trees, tree_dir,
    tree_dirs,
};
pub use indexed::{IndexedDb, Inserted, WitnessTicket};
pub use mutable::{Change, ChangeTicket, MutableDb, MutableError, OldLeaf, WORDS_PER_CHANGE};
pub use open::{OpenOptions, is_database};
pub use operation::Operation;
pub use set::table::MAX_INDEX;
pub use set::{Duplicate, DuplicateOf, SetStats};
pub use usage::{DiskUsage, FileBytes};
