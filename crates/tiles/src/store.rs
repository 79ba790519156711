//! Where tiles live: a [`TileSource`] reads objects by path, a
//! [`TileSink`] writes them. A plain directory is both (publish it with any
//! static HTTP server or CDN).

use std::io::Write as _;
use std::path::{Path, PathBuf};

/// A failed read or write of one object, naming it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{op} {path}: {message}")]
pub struct ObjectError {
    /// "get" or "put".
    pub op: &'static str,
    /// The object's path.
    pub path: String,
    /// What went wrong.
    pub message: String,
    /// Whether the object does not exist.
    pub missing: bool,
}

/// Reads objects by path.
pub trait TileSource {
    /// The bytes of object `path`.
    fn get(&self, path: &str) -> Result<Vec<u8>, ObjectError>;
}

/// Writes objects by path (and reads them back: a publisher resumes from
/// the checkpoint it published).
pub trait TileSink: TileSource {
    /// Whether object `path` exists (immutable objects are written once).
    fn exists(&self, path: &str) -> Result<bool, ObjectError>;
    /// Writes object `path`, replacing it atomically if it exists.
    fn put(&self, path: &str, bytes: &[u8]) -> Result<(), ObjectError>;
    /// Makes every object put so far durable (before a checkpoint names them).
    fn sync(&self) -> Result<(), ObjectError>;
}

/// A directory of objects (`file://` stores).
#[derive(Debug, Clone)]
pub struct DirStore {
    root: PathBuf,
}

impl DirStore {
    /// The store rooted at `root` (created on the first write).
    pub fn new(root: impl Into<PathBuf>) -> DirStore {
        DirStore { root: root.into() }
    }

    /// Its directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn file(&self, path: &str) -> PathBuf {
        self.root.join(path)
    }
}

fn error(op: &'static str, path: &str, e: &std::io::Error) -> ObjectError {
    ObjectError {
        op,
        path: path.to_owned(),
        message: e.to_string(),
        missing: e.kind() == std::io::ErrorKind::NotFound,
    }
}

impl TileSource for DirStore {
    fn get(&self, path: &str) -> Result<Vec<u8>, ObjectError> {
        std::fs::read(self.file(path)).map_err(|e| error("get", path, &e))
    }
}

impl TileSink for DirStore {
    fn exists(&self, path: &str) -> Result<bool, ObjectError> {
        self.file(path)
            .try_exists()
            .map_err(|e| error("stat", path, &e))
    }

    /// Write a temporary beside it, `fsync` it, rename it over the object:
    /// a reader sees the old object or the new one, never part of one.
    fn put(&self, path: &str, bytes: &[u8]) -> Result<(), ObjectError> {
        let target = self.file(path);
        let dir = target.parent().expect("objects live in a directory");
        std::fs::create_dir_all(dir).map_err(|e| error("put", path, &e))?;
        let tmp = target.with_extension("tmp-cairn");
        let mut file = std::fs::File::create(&tmp).map_err(|e| error("put", path, &e))?;
        file.write_all(bytes).map_err(|e| error("put", path, &e))?;
        file.sync_data().map_err(|e| error("put", path, &e))?;
        std::fs::rename(&tmp, &target).map_err(|e| error("put", path, &e))
    }

    /// `fsync`s every directory under the root (renames are durable once
    /// their directory is).
    fn sync(&self) -> Result<(), ObjectError> {
        fn walk(dir: &Path) -> std::io::Result<()> {
            for entry in std::fs::read_dir(dir)? {
                let entry = entry?;
                if entry.file_type()?.is_dir() {
                    walk(&entry.path())?;
                }
            }
            std::fs::File::open(dir)?.sync_all()
        }
        if !self.root.exists() {
            return Ok(());
        }
        walk(&self.root).map_err(|e| error("sync", &self.root.display().to_string(), &e))
    }
}
