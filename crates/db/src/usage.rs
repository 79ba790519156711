//! Bytes a database's files take, by kind: what `cairn stats` reports.
//! The store names its files ([`cairn_store::names`]); the set's are the
//! database's.

use std::path::Path;

use cairn_store::{StoreError, names};

use crate::db::Db;
use crate::error::Result;
use crate::set::file::{SET_FILE, SET_TMP};

/// Bytes of a database's files, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileBytes {
    /// `log/*.log`: the leaves (level 0) and their frames.
    pub log: u64,
    /// `levels/`: the checkpointed final nodes of levels 1 and up and their
    /// page sums.
    pub levels: u64,
    /// `checkpoint` (and a leftover `checkpoint.tmp`).
    pub checkpoint: u64,
    /// `nullifiers.set` (and a leftover `nullifiers.set.tmp`).
    pub set: u64,
    /// `cairn.meta`.
    pub meta: u64,
    /// Anything else (the `LOCK` file, the `heads` file, the `verified`
    /// record).
    pub other: u64,
}

impl FileBytes {
    /// Every kind together.
    pub fn total(&self) -> u64 {
        self.log + self.levels + self.checkpoint + self.set + self.meta + self.other
    }

    fn add(&mut self, name: &str, bytes: u64) {
        let slot = match name {
            names::LOG_DIR => &mut self.log,
            names::LEVELS_DIR => &mut self.levels,
            names::CHECKPOINT | names::CHECKPOINT_TMP => &mut self.checkpoint,
            SET_FILE | SET_TMP => &mut self.set,
            names::META | names::META_TMP => &mut self.meta,
            _ => &mut self.other,
        };
        *slot += bytes;
    }
}

/// A database directory's bytes: allocated on disk (log files are sparse:
/// the unwritten part of their leaf region takes no space) and the files'
/// apparent lengths.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiskUsage {
    /// Bytes allocated on disk (the files' lengths where the platform does
    /// not say).
    pub allocated: FileBytes,
    /// The files' lengths.
    pub apparent: FileBytes,
}

impl DiskUsage {
    /// The usage of the database directory `dir` (open or not).
    pub fn of(dir: impl AsRef<Path>) -> Result<DiskUsage> {
        let dir = dir.as_ref();
        let mut usage = DiskUsage::default();
        let list =
            |path: &Path| std::fs::read_dir(path).map_err(|e| StoreError::io("list", path, e));
        for entry in list(dir)? {
            let entry = entry.map_err(|e| StoreError::io("list", dir, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            let metadata =
                std::fs::metadata(&path).map_err(|e| StoreError::io("stat", &path, e))?;
            if metadata.is_dir() {
                // The log and levels directories count as their kind,
                // any other directory as other.
                let kind = if name == names::LOG_DIR || name == names::LEVELS_DIR {
                    name.as_str()
                } else {
                    ""
                };
                for inner in list(&path)? {
                    let inner = inner.map_err(|e| StoreError::io("list", &path, e))?;
                    let metadata = inner
                        .metadata()
                        .map_err(|e| StoreError::io("stat", inner.path(), e))?;
                    usage.allocated.add(kind, allocated(&metadata));
                    usage.apparent.add(kind, metadata.len());
                }
            } else {
                usage.allocated.add(&name, allocated(&metadata));
                usage.apparent.add(&name, metadata.len());
            }
        }
        Ok(usage)
    }
}

/// Bytes a file occupies on disk: its allocated blocks where the platform
/// says, else its length.
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

impl Db {
    /// The bytes this database's files take (see [`DiskUsage::of`]).
    pub fn disk_usage(&self) -> Result<DiskUsage> {
        DiskUsage::of(self.dir())
    }
}
