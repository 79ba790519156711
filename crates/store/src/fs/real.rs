//! [`Fs`] on the operating system's file system.

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use cairn_core::Hash;

use super::{FileId, Fs, FsFile, FsLock, MappedNodes, OpenMode};

/// The real file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct StdFs;

#[derive(Debug)]
struct StdFile(File);

/// Lock files this process holds (canonical paths). An `flock` only tells
/// that some open file holds the lock; this set tells that it is this
/// process, so a second open here gets an error that says so.
static HELD: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

/// Directories this process holds locked ([`Fs::lock_dir`]), by identity:
/// a second open through another path (a symbolic link, a bind mount)
/// is still recognised as this process's.
static HELD_DIRS: Mutex<BTreeSet<FileId>> = Mutex::new(BTreeSet::new());

#[derive(Debug)]
struct StdLock {
    /// Leaves [`HELD`] before the file closes, so a waiter that sees the
    /// set without it may briefly still find the `flock` taken: it retries.
    key: PathBuf,
    id: Option<FileId>,
    _file: File,
}

impl Drop for StdLock {
    fn drop(&mut self) {
        HELD.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.key);
    }
}

impl FsLock for StdLock {
    fn identity(&self) -> Option<FileId> {
        self.id
    }
}

/// A lock on a directory ([`Fs::lock_dir`]): the open directory holds it.
#[derive(Debug)]
struct DirLock {
    /// Leaves [`HELD_DIRS`] before the descriptor closes (see [`StdLock`]).
    id: FileId,
    _dir: File,
}

impl Drop for DirLock {
    fn drop(&mut self) {
        HELD_DIRS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.id);
    }
}

impl FsLock for DirLock {
    fn identity(&self) -> Option<FileId> {
        Some(self.id)
    }
}

fn file_id(meta: &std::fs::Metadata) -> FileId {
    FileId {
        device: meta.dev(),
        inode: meta.ino(),
    }
}

/// A lock taken by [`Fs::lock_existing`]: the open file holds it.
#[derive(Debug)]
struct ExistingLock(#[allow(dead_code)] File);

impl FsLock for ExistingLock {}

/// A read-only mapping of nodes.
#[derive(Debug)]
struct Mapped(memmap2::Mmap);

impl MappedNodes for Mapped {
    fn nodes(&self) -> &[Hash] {
        self.0.as_chunks::<32>().0
    }
}

impl FsFile for StdFile {
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.0.write_all_at(buf, offset)
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        loop {
            match self.0.read_at(buf, offset) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => return other,
            }
        }
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }

    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }

    fn identity(&self) -> io::Result<super::FileIdentity> {
        Ok(identity(&self.0.metadata()?))
    }

    #[allow(unsafe_code)]
    fn map_nodes(&self, offset: u64, nodes: usize) -> io::Result<Arc<dyn MappedNodes>> {
        let len = nodes * 32;
        let file_len = self.len()?;
        if offset + len as u64 > file_len {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("cannot map {len} bytes at offset {offset}: the file has {file_len} bytes"),
            ));
        }
        // SAFETY: the range lies inside the file (checked just above), and
        // the engine maps only ranges it never writes again and never
        // truncates (files only grow; regions below a published checkpoint
        // or a durable log frontier are immutable), so the mapping's bytes do
        // not change under the `&[Hash]` it hands out. Another process
        // truncating the files would break this; the directory lock excludes
        // other cairn processes, and outside tampering is out of scope (see
        // docs/file-format.md, "Assumptions").
        let map = unsafe {
            memmap2::MmapOptions::new()
                .offset(offset)
                .len(len)
                .map(&self.0)?
        };
        Ok(Arc::new(Mapped(map)))
    }
}

/// A file's identity from its metadata.
fn identity(meta: &std::fs::Metadata) -> super::FileIdentity {
    use std::os::unix::fs::MetadataExt;
    let ns = |seconds: i64, nanos: i64| seconds.saturating_mul(1_000_000_000).saturating_add(nanos);
    super::FileIdentity {
        dev: meta.dev(),
        ino: meta.ino(),
        len: meta.len(),
        modified_ns: ns(meta.mtime(), meta.mtime_nsec()),
        changed_ns: ns(meta.ctime(), meta.ctime_nsec()),
    }
}

impl Fs for StdFs {
    fn identity_of(&self, path: &Path) -> io::Result<super::FileIdentity> {
        Ok(identity(&std::fs::metadata(path)?))
    }

    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn FsFile>> {
        let mut options = OpenOptions::new();
        match mode {
            OpenMode::Existing => options.read(true).write(true),
            OpenMode::CreateNew => options.read(true).write(true).create_new(true),
            OpenMode::ReadOnly => options.read(true),
        };
        Ok(Box::new(StdFile(options.open(path)?)))
    }

    fn create_dir(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        File::open(path)?.sync_all()
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(path)? {
            names.push(entry?.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        path.try_exists()
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn FsLock>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        let key = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        let mut held = HELD.lock().unwrap_or_else(PoisonError::into_inner);
        if held.contains(&key) {
            return Err(io::Error::new(
                io::ErrorKind::ResourceBusy,
                format!("{} is held by this process", path.display()),
            ));
        }
        match file.try_lock() {
            Ok(()) => {
                held.insert(key.clone());
                let id = file.metadata().ok().map(|meta| file_id(&meta));
                Ok(Box::new(StdLock {
                    key,
                    id,
                    _file: file,
                }))
            }
            Err(TryLockError::WouldBlock) => Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("{} is held by another process", path.display()),
            )),
            Err(TryLockError::Error(e)) => Err(e),
        }
    }

    fn lock_existing(&self, path: &Path, shared: bool) -> io::Result<Box<dyn FsLock>> {
        // `flock` locks belong to the open file description: a second
        // handle of this process conflicts like another process's would.
        let file = File::open(path)?;
        let taken = if shared {
            file.try_lock_shared()
        } else {
            file.try_lock()
        };
        match taken {
            Ok(()) => Ok(Box::new(ExistingLock(file))),
            Err(TryLockError::WouldBlock) => Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("{} is locked by another holder", path.display()),
            )),
            Err(TryLockError::Error(e)) => Err(e),
        }
    }

    fn lock_dir(&self, dir: &Path) -> io::Result<Box<dyn FsLock>> {
        // Reading a directory's descriptor is refused, but it can be
        // locked and synced.
        let handle = File::open(dir)?;
        let meta = handle.metadata()?;
        if !meta.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("{} is not a directory", dir.display()),
            ));
        }
        let id = file_id(&meta);
        let mut held = HELD_DIRS.lock().unwrap_or_else(PoisonError::into_inner);
        if held.contains(&id) {
            return Err(io::Error::new(
                io::ErrorKind::ResourceBusy,
                format!("{} is held by this process", dir.display()),
            ));
        }
        match handle.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    format!("{} is held by another process", dir.display()),
                ));
            }
            Err(TryLockError::Error(e)) => return Err(e),
        }
        // The lock is on what was opened; the path must still name it (a
        // directory renamed away between the open and the lock is not the
        // store's directory any more). Dropping `handle` releases it.
        let now = file_id(&std::fs::metadata(dir)?);
        if now != id {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("{} was replaced while it was being locked", dir.display()),
            ));
        }
        held.insert(id);
        Ok(Box::new(DirLock { id, _dir: handle }))
    }

    fn identity(&self, path: &Path) -> io::Result<FileId> {
        Ok(file_id(&std::fs::metadata(path)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_lock_is_held_once_per_process_whatever_the_path() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("db");
        std::fs::create_dir(&dir).unwrap();
        let lock = StdFs.lock_dir(&dir).unwrap();
        assert_eq!(lock.identity(), Some(StdFs.identity(&dir).unwrap()));
        assert_eq!(
            StdFs.lock_dir(&dir).unwrap_err().kind(),
            io::ErrorKind::ResourceBusy
        );
        let link = temp.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        assert_eq!(
            StdFs.lock_dir(&link).unwrap_err().kind(),
            io::ErrorKind::ResourceBusy,
            "the same directory through a symbolic link"
        );
        // Another handle's flock conflicts (as another process's would).
        let other = File::open(&dir).unwrap();
        assert!(matches!(other.try_lock(), Err(TryLockError::WouldBlock)));
        drop(lock);
        other.try_lock().unwrap();
        assert_eq!(
            StdFs.lock_dir(&dir).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
    }

    #[test]
    fn a_file_keeps_its_identity_after_its_name_is_removed() {
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().join("f");
        let file = StdFs.open(&path, OpenMode::CreateNew).unwrap();
        let id = file.file_id().unwrap();
        assert_eq!(StdFs.identity(&path).unwrap(), id);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(
            StdFs.identity(&path).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        // Held open, the removed file keeps its inode: a new file at the
        // name cannot get its number.
        let again = StdFs.open(&path, OpenMode::CreateNew).unwrap();
        assert_ne!(again.file_id().unwrap(), id);
        assert_eq!(file.file_id().unwrap(), id);
    }
}
