//! Opening a database directory, and what its errors mean as exit codes.
//!
//! Commands that only read the tree (root, prove --index, consistency,
//! export, verify --db) open the storage engine alone: the nullifier set is
//! not needed, and loading it would read its whole checkpoint file.
//! Commands that append, look values up or report on the set open the
//! database facade. Commands that only read open read-only, beside a
//! server or an ingest running on the same directory; commands that write
//! lock the directory for their duration: a second writer gets the
//! store's "locked" error (exit 4).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::anyhow;
use cairn_core::TreeError;
use cairn_db::{Db, DbConfig, DbError};
use cairn_store::{CheckpointPolicy, StdFs, Store, StoreConfig, StoreError, StoreMeta};

use crate::failure::{Code, Failure};

/// The file that makes a directory a cairn database.
pub const META_FILE: &str = "cairn.meta";

/// `cairn.meta` flag bit 0: the database keeps a nullifier set
/// (docs/file-format.md, "Directory"; `cairn_db` does not export the name).
const FLAG_UNIQUE: u64 = 1;

/// Whether `path` is a directory holding a cairn database.
pub fn is_database(path: &Path) -> bool {
    path.is_dir() && path.join(META_FILE).is_file()
}

/// How a command opens a database.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Keep the store's background flush and automatic checkpoints (for
    /// long appends); otherwise nothing runs in the background.
    pub background: bool,
    /// Recompute every level at open (`cairn check`).
    pub verify: bool,
}

/// What `dir`'s `cairn.meta` says the database is.
pub fn stored(dir: &Path) -> Result<StoreMeta, Failure> {
    cairn_store::stored_config(&StdFs, dir).map_err(store_failure)
}

/// The store configuration that opens a database created as `meta`.
fn store_config(meta: &StoreMeta, options: Options) -> StoreConfig {
    let mut config = StoreConfig::new(meta.tree);
    config.log_shift = meta.log_shift;
    config.flags = meta.flags;
    config.verify_on_open = options.verify;
    if !options.background {
        config.flush_interval = None;
        config.checkpoint = CheckpointPolicy::default();
    }
    config
}

/// Whether a database created as `meta` is an indexed tree
/// (`cairn init --kind indexed`).
pub fn is_indexed(meta: &StoreMeta) -> bool {
    meta.flags & cairn_db::FLAG_INDEXED != 0
}

/// Whether `dir` holds an indexed database.
pub fn is_indexed_dir(dir: &Path) -> bool {
    is_database(dir) && stored(dir).is_ok_and(|meta| is_indexed(&meta))
}

/// What commands for lean databases say of an indexed one.
pub fn lean_only(dir: &Path) -> Failure {
    Failure::new(
        Code::Usage,
        anyhow!(
            "{} is an indexed database (`cairn init --kind indexed`): this command reads a lean tree; indexed databases take ingest, root, stats, contains, prove, verify, check, truncate, checkpoint, backup, export and serve",
            dir.display()
        ),
    )
}

/// Whether a database created as `meta` keeps a nullifier set.
pub fn is_unique(meta: &StoreMeta) -> bool {
    meta.flags & FLAG_UNIQUE != 0
}

/// Opens the tree of the database in `dir` read-only, without its
/// nullifier set.
pub fn open_tree(dir: &Path) -> Result<Store, Failure> {
    let meta = stored(dir)?;
    if is_indexed(&meta) {
        return Err(lean_only(dir));
    }
    open_log(dir)
}

/// Opens the store of the database in `dir` read-only, whatever its kind:
/// for an indexed database, its log of inserted values.
pub fn open_log(dir: &Path) -> Result<Store, Failure> {
    let meta = stored(dir)?;
    Store::open_read_only(
        Arc::new(StdFs),
        dir,
        store_config(&meta, Options::default()),
    )
    .map_err(store_failure)
}

/// Opens the database in `dir` (its tree and its nullifier set, if any).
pub fn open(dir: &Path, options: Options) -> Result<Db, Failure> {
    if is_indexed_dir(dir) {
        return Err(lean_only(dir));
    }
    open_raw(dir, options).map_err(db_failure)
}

/// [`open`], keeping the database's own error.
pub fn open_raw(dir: &Path, options: Options) -> Result<Db, DbError> {
    Db::open_with(dir, db_config(dir, options)?)
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
    let config = db_config(dir, options)?;
    Db::open_read_only_in(Arc::new(StdFs), dir, Some(config))
}

/// The configuration that opens the database in `dir` as it was created.
pub(crate) fn db_config(dir: &Path, options: Options) -> Result<DbConfig, DbError> {
    let meta = cairn_store::stored_config(&StdFs, dir)?;
    let mut config = DbConfig::new(meta.tree);
    config.store = store_config(&meta, options);
    config.unique = is_unique(&meta);
    config.explicit_finality = meta.flags & cairn_store::FLAG_EXPLICIT_FINALITY != 0;
    config.indexed = is_indexed(&meta);
    Ok(config)
}

/// The exit code of a database error.
pub fn db_code(error: &DbError) -> Code {
    match error {
        DbError::Store(error) => store_code(error),
        DbError::Duplicates { .. } => Code::Duplicate,
        DbError::NoSet | DbError::ConfigMismatch { .. } => Code::Usage,
        DbError::SetFull(_) => Code::Input,
        DbError::Indexed(error) => crate::indexed::code(error),
    }
}

/// The exit code of a storage engine error.
pub fn store_code(error: &StoreError) -> Code {
    match error {
        StoreError::NotEmpty { .. } | StoreError::ConfigMismatch { .. } | StoreError::Config(_) => {
            Code::Usage
        }
        StoreError::Tree(TreeError::IndexOutOfRange { .. } | TreeError::SizeBeyondTree { .. }) => {
            Code::Usage
        }
        // Rollback and finality asked for what the tree does not allow.
        StoreError::BlockOrder { .. }
        | StoreError::BelowFinalized { .. }
        | StoreError::BeyondSize { .. }
        | StoreError::NoHeadAtBlock { .. } => Code::Usage,
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

/// A storage engine error as a failure with its exit code.
pub fn store_failure(error: StoreError) -> Failure {
    Failure::new(store_code(&error), error)
}

/// The file and offset a corruption names, if it names one.
pub fn corrupt_location(error: &DbError) -> Option<(PathBuf, u64)> {
    match error {
        DbError::Store(StoreError::Corrupt { path, offset, .. }) => Some((path.clone(), *offset)),
        _ => None,
    }
}

/// Bytes of a database's files, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// `log/*.log`: the leaves (level 0) and their frames.
    pub log: u64,
    /// `levels/*.nodes`: the checkpointed final nodes of levels 1 and up.
    pub levels: u64,
    /// `checkpoint` (and a leftover `checkpoint.tmp`).
    pub checkpoint: u64,
    /// `nullifiers.set` (and a leftover `nullifiers.set.tmp`).
    pub set: u64,
    /// `cairn.meta`.
    pub meta: u64,
    /// Anything else (the `LOCK` file).
    pub other: u64,
}

impl Usage {
    /// Every kind together.
    pub fn total(&self) -> u64 {
        self.log + self.levels + self.checkpoint + self.set + self.meta + self.other
    }

    fn add(&mut self, kind: &str, bytes: u64) {
        let slot = match kind {
            "log" => &mut self.log,
            "levels" => &mut self.levels,
            "checkpoint" | "checkpoint.tmp" => &mut self.checkpoint,
            "nullifiers.set" | "nullifiers.set.tmp" => &mut self.set,
            "cairn.meta" | "cairn.meta.tmp" => &mut self.meta,
            _ => &mut self.other,
        };
        *slot += bytes;
    }

    /// The object of the JSON reports (`disk_bytes`, `file_bytes`).
    pub fn json(&self) -> String {
        crate::json::Object::new()
            .field("log", self.log)
            .field("levels", self.levels)
            .field("checkpoint", self.checkpoint)
            .field("set", self.set)
            .field("meta", self.meta)
            .field("other", self.other)
            .field("total", self.total())
            .finish()
    }
}

/// Bytes a file occupies on disk: its allocated blocks where the platform
/// says (log files are sparse: their apparent length counts a whole log
/// file's leaf region), else its length.
fn allocated(metadata: &std::fs::Metadata) -> u64 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        metadata.blocks() * 512
    }
    #[cfg(not(unix))]
    {
        metadata.len()
    }
}

/// Bytes on disk (allocated) and apparent file lengths of the database in
/// `dir`, by kind of file.
pub fn usage(dir: &Path) -> Result<(Usage, Usage), Failure> {
    let mut disk = Usage::default();
    let mut apparent = Usage::default();
    let read_dir = |path: &Path| {
        std::fs::read_dir(path)
            .map_err(|e| Failure::new(Code::Input, anyhow!("{}: cannot list: {e}", path.display())))
    };
    for entry in read_dir(dir)? {
        let entry = entry.map_err(|e| {
            Failure::new(Code::Input, anyhow!("{}: cannot list: {e}", dir.display()))
        })?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        let metadata = std::fs::metadata(&path).map_err(|e| {
            Failure::new(Code::Input, anyhow!("{}: cannot stat: {e}", path.display()))
        })?;
        if metadata.is_dir() {
            let kind = if name == "log" || name == "levels" {
                name.as_str()
            } else {
                "other"
            };
            for inner in read_dir(&path)? {
                let inner = inner.map_err(|e| {
                    Failure::new(Code::Input, anyhow!("{}: cannot list: {e}", path.display()))
                })?;
                let metadata = inner.metadata().map_err(|e| {
                    Failure::new(
                        Code::Input,
                        anyhow!("{}: cannot stat: {e}", inner.path().display()),
                    )
                })?;
                disk.add(kind, allocated(&metadata));
                apparent.add(kind, metadata.len());
            }
        } else {
            disk.add(&name, allocated(&metadata));
            apparent.add(&name, metadata.len());
        }
    }
    Ok((disk, apparent))
}
