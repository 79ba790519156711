//! Opening a database directory, and what its errors mean as exit codes.
//!
//! Everything goes through `cairn-db` (the CLI does not depend on the
//! storage engine). Commands that only read the tree (root, prove
//! --index, consistency, export, verify --db) read it alone
//! ([`read_tree`]): the nullifier set is not needed, and loading it would
//! read its whole checkpoint file. Commands that append, look values up or
//! report on the set open the database. Commands that only read open
//! read-only, beside a server or an ingest running on the same directory;
//! commands that write lock the directory for their duration: a second
//! writer gets the store's "locked" error (exit 4).

use std::path::Path;
use std::sync::Arc;

use anyhow::anyhow;
use cairn_core::{Snapshot, TreeKind};
use cairn_db::{Db, DbConfig, DbError, DiskUsage, ErrorKind, FileBytes, IndexedDb, OpenOptions};
pub use cairn_db::{META_FILE, is_database};

use crate::failure::{Code, Failure};

/// How a command opens a database.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Keep the store's background flush and automatic checkpoints (for
    /// long appends); otherwise nothing runs in the background.
    pub background: bool,
    /// Recompute every level at open (`cairn check`).
    pub verify: bool,
}

impl Options {
    pub(crate) fn open_options(self) -> OpenOptions {
        OpenOptions::new()
            .background(self.background)
            .verify(self.verify)
    }
}

/// The configuration `dir`'s database was created with.
pub fn stored(dir: &Path) -> Result<DbConfig, Failure> {
    DbConfig::stored(dir).map_err(db_failure)
}

/// The tree of the database in `dir`, read-only, without its nullifier set.
pub fn read_tree(dir: &Path) -> Result<Arc<Snapshot>, Failure> {
    if is_indexed_dir(dir) {
        return Err(lean_only(dir));
    }
    Db::read_tree(dir).map_err(db_failure)
}

/// Whether `dir` holds an indexed database (`cairn init --kind indexed`).
pub fn is_indexed_dir(dir: &Path) -> bool {
    is_database(dir) && DbConfig::stored(dir).is_ok_and(|config| is_indexed(&config))
}

/// Whether a database created as `config` is an indexed tree.
pub fn is_indexed(config: &DbConfig) -> bool {
    config.tree().kind == TreeKind::Indexed
}

/// What commands for lean and imt databases say of an indexed one.
pub fn lean_only(dir: &Path) -> Failure {
    Failure::new(
        Code::Usage,
        anyhow!(
            "{} is an indexed database (`cairn init --kind indexed`): this command reads a lean or imt tree; indexed databases take ingest, root, stats, contains, prove, verify, check, truncate, checkpoint, backup, export and serve",
            dir.display()
        ),
    )
}

/// Opens the indexed database in `dir`.
pub fn open_indexed(dir: &Path, options: Options) -> Result<IndexedDb, Failure> {
    options.open_options().open_indexed(dir).map_err(db_failure)
}

/// Opens the indexed database in `dir` read-only (beside a writer).
pub fn open_indexed_read_only(dir: &Path) -> Result<IndexedDb, Failure> {
    Options::default()
        .open_options()
        .read_only(true)
        .open_indexed(dir)
        .map_err(db_failure)
}

/// The values of the indexed database in `dir`, in insertion order, as
/// the leaves of a tree (read-only, without building the indexed tree).
pub fn read_values(dir: &Path) -> Result<Arc<Snapshot>, Failure> {
    cairn_db::Database::read_values(dir).map_err(db_failure)
}

/// Opens the database in `dir` (its tree and its nullifier set, if any).
pub fn open(dir: &Path, options: Options) -> Result<Db, Failure> {
    if is_indexed_dir(dir) {
        return Err(lean_only(dir));
    }
    open_raw(dir, options).map_err(db_failure)
}

/// Opens the database in `dir`, of whichever kind it holds.
pub fn open_database(dir: &Path, options: Options) -> Result<cairn_db::Database, Failure> {
    options.open_options().open(dir).map_err(db_failure)
}

/// [`open`], keeping the database's own error.
pub fn open_raw(dir: &Path, options: Options) -> Result<Db, DbError> {
    options.open_options().open_db(dir)
}

/// Opens the database in `dir` read-only (beside a writer, if one runs).
pub fn open_read_only(dir: &Path, options: Options) -> Result<Db, Failure> {
    if is_indexed_dir(dir) {
        return Err(lean_only(dir));
    }
    open_read_only_raw(dir, options).map_err(db_failure)
}

/// [`open_read_only`], keeping the database's own error.
pub fn open_read_only_raw(dir: &Path, options: Options) -> Result<Db, DbError> {
    options.open_options().read_only(true).open_db(dir)
}

/// The exit code of a database error: 3 duplicates; 2 what the caller
/// asked cannot be (a config that contradicts the stored one, an index or
/// size or block the tree does not hold, a block out of order, below the
/// finalized size); 4 everything else (I/O, corruption, a lock held, a
/// full tree or set, a refused batch).
pub fn db_code(error: &DbError) -> Code {
    match error.kind() {
        ErrorKind::Duplicate => Code::Duplicate,
        ErrorKind::Config
        | ErrorKind::Unsupported
        | ErrorKind::NotFound
        | ErrorKind::BlockOrder
        | ErrorKind::BelowFinalized { .. } => Code::Usage,
        // An absence asked of a value present, or the reverse.
        ErrorKind::Presence => Code::Invalid,
        _ => Code::Input,
    }
}

/// A database error as a failure with its exit code.
pub fn db_failure(error: DbError) -> Failure {
    let code = db_code(&error);
    match error {
        DbError::NoSet => Failure::new(
            code,
            anyhow!(
                "this database keeps no nullifier set (it was created with --no-unique): no lookups by value and no duplicate checks"
            ),
        ),
        error => Failure::new(code, error),
    }
}

/// Bytes on disk (allocated) and apparent file lengths of the database in
/// `dir`, by kind of file.
pub fn usage(dir: &Path) -> Result<(FileBytes, FileBytes), Failure> {
    let usage = DiskUsage::of(dir).map_err(db_failure)?;
    Ok((usage.allocated, usage.apparent))
}

/// The object of the JSON reports (`disk_bytes`, `file_bytes`).
pub fn usage_json(bytes: &FileBytes) -> String {
    crate::json::Object::new()
        .field("log", bytes.log)
        .field("levels", bytes.levels)
        .field("checkpoint", bytes.checkpoint)
        .field("set", bytes.set)
        .field("meta", bytes.meta)
        .field("other", bytes.other)
        .field("total", bytes.total())
        .finish()
}
