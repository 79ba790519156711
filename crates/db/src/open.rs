//! Opening a database as it was created: [`OpenOptions`] (read-only or
//! writing, background work, verification, the nullifier set or not),
//! the stored configuration, the log alone, and where a stored node's
//! children are.

use std::path::Path;
use std::sync::Arc;

use cairn_core::Snapshot;
use cairn_store::{CheckpointPolicy, StdFs, Store, StoredChildren, names};

use crate::config::DbConfig;
use cairn_store::fs::Fs;

use crate::db::{Db, Derived, check_kind, derived, resolve_config};
use crate::error::Result;

/// Whether `dir` is a directory holding a cairn database (it has the
/// store's `cairn.meta`).
pub fn is_database(dir: impl AsRef<Path>) -> bool {
    let dir = dir.as_ref();
    dir.is_dir() && dir.join(names::META).is_file()
}

/// How [`OpenOptions::open`] opens a database. The tree, the log file
/// size, the nullifier set and finality are always the ones the database
/// was created with; these choose how this open runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenOptions {
    pub(crate) read_only: bool,
    background: bool,
    verify: bool,
    pub(crate) lookups: bool,
}

impl Default for OpenOptions {
    /// What [`crate::Database::open`] does: writing, with background work, no
    /// verification, the nullifier set loaded.
    fn default() -> OpenOptions {
        OpenOptions {
            read_only: false,
            background: true,
            verify: false,
            lookups: true,
        }
    }
}

impl OpenOptions {
    /// The defaults (see [`OpenOptions::default`]).
    pub fn new() -> OpenOptions {
        OpenOptions::default()
    }

    /// Open read-only ([`crate::Database::open_read_only`]): beside a writer,
    /// writing nothing.
    pub fn read_only(self, read_only: bool) -> OpenOptions {
        OpenOptions { read_only, ..self }
    }

    /// Keep the storage engine's background flush and automatic
    /// checkpoints (on by default). Off, nothing runs in the background:
    /// only waits, explicit checkpoints and close flush (a command that
    /// opens, appends and closes).
    pub fn background(self, background: bool) -> OpenOptions {
        OpenOptions { background, ..self }
    }

    /// Recompute every level from the one below at open and compare it
    /// with what is stored (slow; off by default).
    pub fn verify(self, verify: bool) -> OpenOptions {
        OpenOptions { verify, ..self }
    }

    /// The configuration these options open `dir`'s database with: the
    /// stored one, with this open's runtime settings.
    pub fn config(&self, dir: impl AsRef<Path>) -> Result<DbConfig> {
        self.config_in(&StdFs, dir.as_ref())
    }

    /// [`OpenOptions::config`] through a given file system.
    pub(crate) fn config_in(&self, fs: &dyn Fs, dir: &Path) -> Result<DbConfig> {
        let mut config = resolve_config(fs, dir, None)?;
        config.store.verify_on_open = self.verify;
        if !self.background {
            config.store.flush_interval = None;
            config.store.checkpoint = CheckpointPolicy::default();
        }
        Ok(config)
    }

    /// Load a read-only database's nullifier set (on by default). Off, a
    /// lean or fixed-depth database opens without reading the set's file
    /// (a pass over it at open): for roots and proofs; a lookup by value
    /// is then refused ([`crate::DbError::SetNotLoaded`]). A writing open
    /// always loads it (appends check it).
    pub fn lookups(self, lookups: bool) -> OpenOptions {
        OpenOptions { lookups, ..self }
    }
}

impl DbConfig {
    /// The configuration the database in `dir` was created with (tree,
    /// log file size, nullifier set, finality), with default runtime
    /// settings.
    pub fn stored(dir: impl AsRef<Path>) -> Result<DbConfig> {
        resolve_config(&StdFs, dir.as_ref(), None)
    }

    /// Leaves per log file.
    pub fn log_file_leaves(&self) -> u64 {
        1 << self.store.log_shift
    }
}

/// The log of the database in `dir` as durable now, read-only (beside a
/// writer, if one runs): its leaves are the values appended, in order.
pub(crate) fn read_log(dir: &Path) -> Result<Arc<Snapshot>> {
    read_log_in(Arc::new(StdFs), dir)
}

/// [`read_log`] through a given file system.
pub(crate) fn read_log_in(fs: Arc<dyn Fs>, dir: &Path) -> Result<Arc<Snapshot>> {
    let config = OpenOptions::new().background(false).config_in(&*fs, dir)?;
    let store = Store::open_read_only(fs, dir, config.store_config())?;
    let snapshot = store.snapshot();
    store.close()?;
    Ok(snapshot)
}

impl Db {
    /// The tree of the database in `dir` as durable now, read-only (beside
    /// a writer, if one runs) and without loading the nullifier set: for
    /// readers of roots and proofs only.
    /// An indexed database is refused (its store holds the values, not
    /// the tree: see [`crate::Database::read_values`]).
    pub fn read_tree(dir: impl AsRef<Path>) -> Result<Arc<Snapshot>> {
        let dir = dir.as_ref();
        check_kind(derived(&DbConfig::stored(dir)?), Derived::Plain)?;
        read_log(dir)
    }

    /// A lean or fixed-depth database opened read-only without its
    /// nullifier set (`config` is the stored one).
    pub(crate) fn open_tree_only(
        fs: Arc<dyn cairn_store::fs::Fs>,
        dir: &Path,
        mut config: DbConfig,
    ) -> Result<Db> {
        check_kind(derived(&config), Derived::Plain)?;
        let store = Store::open_read_only(Arc::clone(&fs), dir, config.store_config())?;
        // Lookups are refused by the caller; the stored flag stays as it is.
        config.unique = false;
        Db::from_store(fs, store, config)
    }

    /// Where the children of the node stored at `offset` of the level file
    /// `file` are, if `file` is one of this database's level files: for
    /// reporting a node that is not the hash of its children (one of the
    /// two is wrong).
    pub fn children_of_stored_node(&self, file: &Path, offset: u64) -> Option<StoredChildren> {
        let layout = self.store.layout();
        let (level, index) = layout.stored_node_at(file, offset)?;
        layout.children_of(self.config().tree().arity, self.size(), level, index)
    }
}
