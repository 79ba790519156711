//! Where tiles live: a [`TileSource`] reads objects by path, a
//! [`TileSink`] writes them. A plain directory ([`DirStore`]) is both
//! (serve it with any static HTTP server or CDN); object storage and
//! HTTP(S) are in `remote.rs`. Every read names the largest object it
//! accepts, so a store that answers with more is refused before the bytes
//! are read; a ranged read (a leaf tile inside a bundle) names the whole
//! object's exact length, so a bundle of another length is refused even
//! when only part of it is read.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::layout::{BundleRange, Layout, TileId};

/// The largest checkpoint object read: the five lines are under 200 bytes;
/// the rest is room for signatures.
pub const CHECKPOINT_MAX_BYTES: u64 = 64 << 10;

/// A failed read or write of one object, naming it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{op} {store}/{path}: {message}")]
pub struct ObjectError {
    /// "get", "put" or "sync".
    pub op: &'static str,
    /// The store (a directory, `s3://bucket/prefix`, a URL).
    pub store: String,
    /// The object's path in the store.
    pub path: String,
    /// What went wrong.
    pub message: String,
    /// Whether the object does not exist.
    pub missing: bool,
    /// Whether the object has more bytes than the reader accepts.
    pub too_large: bool,
}

impl ObjectError {
    /// The error of a ranged read of an object of `got` bytes where one of
    /// exactly `want` is expected.
    pub fn wrong_length(store: String, path: &str, got: u64, want: u64) -> ObjectError {
        ObjectError {
            op: "get",
            store,
            path: path.to_owned(),
            message: format!("the object has {got} bytes, want exactly {want}"),
            missing: false,
            too_large: got > want,
        }
    }

    /// The error of a read that got `got` bytes (or a header saying so)
    /// where at most `max_bytes` are accepted.
    pub fn too_large(store: String, path: &str, got: u64, max_bytes: u64) -> ObjectError {
        ObjectError {
            op: "get",
            store,
            path: path.to_owned(),
            message: format!("the object has {got} bytes, at most {max_bytes} are accepted here"),
            missing: false,
            too_large: true,
        }
    }
}

/// Reads objects by path.
pub trait TileSource: Send + Sync {
    /// The bytes of object `path`: refused, naming it, when it does not
    /// exist ([`ObjectError::missing`]) or has more than `max_bytes` bytes.
    fn get(&self, path: &str, max_bytes: u64) -> Result<Vec<u8>, ObjectError>;

    /// Where the objects are, for messages: a directory, `s3://bucket/prefix`
    /// or a URL.
    fn location(&self) -> String;

    /// [`TileSource::get`] of several objects (concurrently where the store
    /// can), each answered on its own.
    fn get_many(&self, paths: &[String], max_bytes: u64) -> Vec<Result<Vec<u8>, ObjectError>> {
        paths.iter().map(|path| self.get(path, max_bytes)).collect()
    }

    /// Bytes `[offset, offset + len)` of object `path`, whose whole length
    /// must be exactly `whole` bytes: refused, naming it, when it does not
    /// exist ([`ObjectError::missing`]), has another length or answers
    /// fewer bytes. This default reads the whole object and cuts the range
    /// out; the stores read only the range.
    fn get_range(
        &self,
        path: &str,
        offset: u64,
        len: u64,
        whole: u64,
    ) -> Result<Vec<u8>, ObjectError> {
        let bytes = self.get(path, whole)?;
        cut_range(self.location(), path, &bytes, offset, len, whole)
    }
}

/// Reads the bytes of `tile` of the tree of `size` leaves from `source`,
/// with the name of what was read. A leaf tile inside a complete bundle
/// is read as its byte range of the bundle ([`Layout::in_bundle`],
/// named `bundle/{K}[a..b]`); when that bundle is missing (a store
/// published before bundles were the leaf level), from the tile's own
/// object, and the bundle is added to `no_bundle` so that it is not asked
/// for again. Any other tile is read from its object, accepting at most
/// its `32 w` bytes. Nothing is checked here but lengths: the caller
/// verifies the bytes against the head.
pub fn read_tile(
    source: &dyn TileSource,
    layout: &Layout,
    size: u64,
    tile: TileId,
    no_bundle: &mut BTreeSet<u64>,
) -> Result<(Vec<u8>, String), ObjectError> {
    let range = layout.in_bundle(size, tile);
    read_tile_object(
        source,
        &layout.path(tile),
        tile.width * 32,
        range.as_ref(),
        no_bundle,
    )
}

/// [`read_tile`] of a tile named by its object `path` (at most
/// `max_bytes`) and, when it lies in a complete bundle, its `range` of it
/// (for a caller that planned the request from the layout beforehand).
pub fn read_tile_object(
    source: &dyn TileSource,
    path: &str,
    max_bytes: u64,
    range: Option<&BundleRange>,
    no_bundle: &mut BTreeSet<u64>,
) -> Result<(Vec<u8>, String), ObjectError> {
    if let Some(range) = range
        && !no_bundle.contains(&range.bundle)
    {
        match source.get_range(&range.path, range.offset, range.len, range.bundle_bytes) {
            Ok(bytes) => return Ok((bytes, range.describe())),
            Err(e) if e.missing => {
                no_bundle.insert(range.bundle);
            }
            Err(e) => return Err(e),
        }
    }
    Ok((source.get(path, max_bytes)?, path.to_owned()))
}

/// `[offset, offset + len)` of the whole object `bytes`, which must be
/// `whole` bytes long (a store that could not read only the range).
pub(crate) fn cut_range(
    store: String,
    path: &str,
    bytes: &[u8],
    offset: u64,
    len: u64,
    whole: u64,
) -> Result<Vec<u8>, ObjectError> {
    if bytes.len() as u64 != whole {
        return Err(ObjectError::wrong_length(
            store,
            path,
            bytes.len() as u64,
            whole,
        ));
    }
    let end = offset.checked_add(len).filter(|&end| end <= whole);
    match end {
        Some(end) => Ok(bytes[offset as usize..end as usize].to_vec()),
        None => panic!("range {offset}+{len} outside an object of {whole} bytes"),
    }
}

/// Writes objects by path (and reads them back: a publisher resumes from
/// the checkpoint it published).
pub trait TileSink: TileSource {
    /// Writes object `path` whole: a reader sees the old object or the new
    /// one, never part of one.
    fn put(&self, path: &str, bytes: &[u8]) -> Result<(), ObjectError>;

    /// [`TileSink::put`] of several objects (concurrently where the store
    /// can); the first error, if any, after every write has ended.
    fn put_many(&self, objects: &[(String, Vec<u8>)]) -> Result<(), ObjectError> {
        objects
            .iter()
            .try_for_each(|(path, bytes)| self.put(path, bytes))
    }

    /// Makes every object put so far durable (before a checkpoint names
    /// them). Object storage acknowledges a write once it is durable, so
    /// only directories do anything here.
    fn sync(&self) -> Result<(), ObjectError>;
}

impl<T: TileSource + ?Sized> TileSource for &T {
    fn get(&self, path: &str, max_bytes: u64) -> Result<Vec<u8>, ObjectError> {
        (**self).get(path, max_bytes)
    }
    fn location(&self) -> String {
        (**self).location()
    }
    fn get_many(&self, paths: &[String], max_bytes: u64) -> Vec<Result<Vec<u8>, ObjectError>> {
        (**self).get_many(paths, max_bytes)
    }
    fn get_range(
        &self,
        path: &str,
        offset: u64,
        len: u64,
        whole: u64,
    ) -> Result<Vec<u8>, ObjectError> {
        (**self).get_range(path, offset, len, whole)
    }
}

impl<T: TileSource + ?Sized> TileSource for Box<T> {
    fn get(&self, path: &str, max_bytes: u64) -> Result<Vec<u8>, ObjectError> {
        (**self).get(path, max_bytes)
    }
    fn location(&self) -> String {
        (**self).location()
    }
    fn get_many(&self, paths: &[String], max_bytes: u64) -> Vec<Result<Vec<u8>, ObjectError>> {
        (**self).get_many(paths, max_bytes)
    }
    fn get_range(
        &self,
        path: &str,
        offset: u64,
        len: u64,
        whole: u64,
    ) -> Result<Vec<u8>, ObjectError> {
        (**self).get_range(path, offset, len, whole)
    }
}

impl<T: TileSink + ?Sized> TileSink for &T {
    fn put(&self, path: &str, bytes: &[u8]) -> Result<(), ObjectError> {
        (**self).put(path, bytes)
    }
    fn put_many(&self, objects: &[(String, Vec<u8>)]) -> Result<(), ObjectError> {
        (**self).put_many(objects)
    }
    fn sync(&self) -> Result<(), ObjectError> {
        (**self).sync()
    }
}

impl<T: TileSource + ?Sized> TileSource for std::sync::Arc<T> {
    fn get(&self, path: &str, max_bytes: u64) -> Result<Vec<u8>, ObjectError> {
        (**self).get(path, max_bytes)
    }
    fn location(&self) -> String {
        (**self).location()
    }
    fn get_many(&self, paths: &[String], max_bytes: u64) -> Vec<Result<Vec<u8>, ObjectError>> {
        (**self).get_many(paths, max_bytes)
    }
    fn get_range(
        &self,
        path: &str,
        offset: u64,
        len: u64,
        whole: u64,
    ) -> Result<Vec<u8>, ObjectError> {
        (**self).get_range(path, offset, len, whole)
    }
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

    fn error(&self, op: &'static str, path: &str, e: &std::io::Error) -> ObjectError {
        ObjectError {
            op,
            store: self.location(),
            path: path.to_owned(),
            message: e.to_string(),
            missing: e.kind() == std::io::ErrorKind::NotFound,
            too_large: false,
        }
    }
}

impl TileSource for DirStore {
    fn get(&self, path: &str, max_bytes: u64) -> Result<Vec<u8>, ObjectError> {
        use std::io::Read as _;
        let file = std::fs::File::open(self.file(path)).map_err(|e| self.error("get", path, &e))?;
        let mut bytes = Vec::new();
        // One byte more than allowed tells an oversized file from a full one.
        file.take(max_bytes.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| self.error("get", path, &e))?;
        if bytes.len() as u64 > max_bytes {
            let got = std::fs::metadata(self.file(path)).map_or(bytes.len() as u64, |m| m.len());
            return Err(ObjectError::too_large(
                self.location(),
                path,
                got,
                max_bytes,
            ));
        }
        Ok(bytes)
    }

    fn location(&self) -> String {
        self.root.display().to_string()
    }

    /// Reads only the range, after checking the file's length.
    fn get_range(
        &self,
        path: &str,
        offset: u64,
        len: u64,
        whole: u64,
    ) -> Result<Vec<u8>, ObjectError> {
        use std::io::{Read as _, Seek as _};
        assert!(
            offset + len <= whole,
            "range {offset}+{len} outside {whole} bytes"
        );
        let mut file =
            std::fs::File::open(self.file(path)).map_err(|e| self.error("get", path, &e))?;
        let got = file
            .metadata()
            .map_err(|e| self.error("get", path, &e))?
            .len();
        if got != whole {
            return Err(ObjectError::wrong_length(self.location(), path, got, whole));
        }
        let mut bytes = vec![0; len as usize];
        file.seek(std::io::SeekFrom::Start(offset))
            .and_then(|_| file.read_exact(&mut bytes))
            .map_err(|e| self.error("get", path, &e))?;
        Ok(bytes)
    }
}

impl TileSink for DirStore {
    /// Write a temporary beside it, `fsync` it, rename it over the object:
    /// a reader sees the old object or the new one, never part of one.
    fn put(&self, path: &str, bytes: &[u8]) -> Result<(), ObjectError> {
        let target = self.file(path);
        let dir = target.parent().expect("objects live in a directory");
        std::fs::create_dir_all(dir).map_err(|e| self.error("put", path, &e))?;
        let tmp = target.with_extension("tmp-cairn");
        let mut file = std::fs::File::create(&tmp).map_err(|e| self.error("put", path, &e))?;
        file.write_all(bytes)
            .map_err(|e| self.error("put", path, &e))?;
        file.sync_data().map_err(|e| self.error("put", path, &e))?;
        std::fs::rename(&tmp, &target).map_err(|e| self.error("put", path, &e))
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
        walk(&self.root).map_err(|e| self.error("sync", "", &e))
    }
}
