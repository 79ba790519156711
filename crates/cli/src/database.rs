//! Opening a database directory, and what its errors mean as exit codes.
//!
//! Everything goes through `cairn_db::Database`, whatever the tree's kind
//! (the CLI does not depend on the storage engine), and what a kind cannot
//! do is the database's refusal (exit 2). Commands that only read roots
//! and proofs (root, prove --index, consistency, verify --db) open without
//! the nullifier set ([`read`]): loading it would read its whole file.
//! Commands that only read open read-only, beside a server or an ingest
//! running on the same directory; commands that write lock the directory
//! for their duration: a second writer gets the store's "locked" error
//! (exit 4).

use std::path::Path;
use std::sync::Arc;

use anyhow::anyhow;
use cairn_core::Snapshot;
use cairn_db::{
    Database, DbConfig, DbError, DiskUsage, ErrorKind, FileBytes, OpenOptions, ReadTree,
};
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
    fn open_options(self) -> OpenOptions {
        OpenOptions::new()
            .background(self.background)
            .verify(self.verify)
    }
}

/// The configuration `dir`'s database was created with.
pub fn stored(dir: &Path) -> Result<DbConfig, Failure> {
    DbConfig::stored(dir).map_err(db_failure)
}

/// Opens the database in `dir` for writing, of whichever kind it holds.
pub fn open(dir: &Path, options: Options) -> Result<Database, Failure> {
    options.open_options().open(dir).map_err(db_failure)
}

/// Opens the database in `dir` read-only (beside a writer, if one runs).
pub fn open_read_only(dir: &Path, options: Options) -> Result<Database, Failure> {
    open_read_only_raw(dir, options).map_err(db_failure)
}

/// [`open_read_only`], keeping the database's own error.
pub fn open_read_only_raw(dir: &Path, options: Options) -> Result<Database, DbError> {
    options.open_options().read_only(true).open(dir)
}

/// Opens the database in `dir` read-only without its nullifier set: for
/// roots and proofs by index.
pub fn read(dir: &Path) -> Result<Database, Failure> {
    Options::default()
        .open_options()
        .read_only(true)
        .lookups(false)
        .open(dir)
        .map_err(db_failure)
}

/// The values appended to the database in `dir`, in order, as the leaves
/// of a tree (read-only, without building anything else).
pub fn values(dir: &Path) -> Result<Arc<Snapshot>, Failure> {
    Database::read_values(dir).map_err(db_failure)
}

/// Tree `tree` of the database in `dir` (no name: the default tree, or
/// the only one) opened read-only, beside a writer if one runs, as the
/// database's block journal says it is: a tree whose own files trail the
/// journal (a crash before they caught up) or still hold leaves a
/// rollback removed is read from the journal's replay in memory. A
/// directory of one tree is that tree.
pub fn open_tree(dir: &Path, tree: Option<&str>, options: Options) -> Result<ReadTree, Failure> {
    cairn_db::open_tree(dir, tree, options.open_options()).map_err(db_failure)
}

/// [`open_tree`] without the nullifier set: for roots and proofs by
/// index (see [`read`]).
pub fn read_tree(dir: &Path, tree: Option<&str>) -> Result<ReadTree, Failure> {
    cairn_db::open_tree(dir, tree, Options::default().open_options().lookups(false))
        .map_err(db_failure)
}

/// The values appended to tree `tree` of the database in `dir`, in order,
/// as the leaves of a tree (see [`values`] and [`open_tree`]).
pub fn tree_values(dir: &Path, tree: Option<&str>) -> Result<Arc<Snapshot>, Failure> {
    let opened = read_tree(dir, tree)?;
    let values = opened.values().map_err(db_failure);
    close(opened.db)?;
    values
}

/// Closes `db`, as a failure with its exit code.
pub fn close(db: Database) -> Result<(), Failure> {
    db.close().map_err(db_failure)
}

/// The exit code of a database error: 3 duplicates; 2 what the caller
/// asked cannot be (a config that contradicts the stored one, an index or
/// size or block the tree does not hold, a block out of order, below the
/// finalized size, what the tree's kind cannot do); 1 a value present or
/// absent against what was asked; 4 everything else (I/O, corruption, a
/// lock held, a full tree or set, a refused batch).
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

/// The directory of the tree `tree` names in the database `dir` (the
/// default tree without a name): a database of several trees keeps each
/// in its own directory, a database of one is its tree.
pub fn tree_dir(dir: &Path, tree: Option<&str>) -> Result<std::path::PathBuf, Failure> {
    if tree.is_none() && !cairn_db::is_forest(dir) {
        return Ok(dir.to_owned());
    }
    cairn_db::tree_dir(dir, tree).map_err(db_failure)
}

/// Where `value` is in the family (or tree) `tree` names in the database
/// `dir`: the member's name, its member number (`None` for a tree of no
/// family), its directory and the value's index; `None` if no member
/// holds it. Each member is read as the block journal says it is.
#[allow(clippy::type_complexity)]
pub fn locate(
    dir: &Path,
    tree: &str,
    value: &cairn_core::Hash,
) -> Result<Option<(String, Option<u32>, std::path::PathBuf, u64)>, Failure> {
    for (name, member, path) in cairn_db::family_dirs(dir, tree).map_err(db_failure)? {
        let opened = if cairn_db::is_forest(dir) {
            open_tree(dir, Some(&name), Options::default())?
        } else {
            open_tree(&path, None, Options::default())?
        };
        let found = opened
            .db
            .lookup(std::slice::from_ref(value))
            .map_err(db_failure);
        close(opened.db)?;
        if let Some(index) = found?.indices[0] {
            return Ok(Some((name, member, path, index)));
        }
    }
    Ok(None)
}

/// Whether `tree` names a family with more than one member (or a member
/// of one), so that answers say which member.
pub fn is_family(dir: &Path, tree: Option<&str>) -> Result<bool, Failure> {
    let Some(tree) = tree else {
        return Ok(false);
    };
    if !cairn_db::is_forest(dir) {
        return Ok(false);
    }
    let members = cairn_db::family_dirs(dir, tree).map_err(db_failure)?;
    Ok(members.iter().any(|(_, member, _)| member.is_some()))
}
