//! [`OverlayFs`]: a file system that reads through to another and keeps
//! every change in memory, so a writer's code (recovery above all) can
//! run over a directory without writing to it.
//!
//! What a reader of a database of several trees needs when a tree's files
//! trail the block journal (a crash between the journal's frame and the
//! tree's catch-up, or a writer that has not applied a rollback yet): the
//! writer's own recovery, run over this overlay, brings every tree to
//! what the journal holds, in memory, and the directory is left as it
//! was. It is the same code the writer runs at open, not a second
//! implementation of it.
//!
//! Semantics: a file opened to write (or renamed, or locked by name) is
//! copied into memory whole at that moment (log files are bounded by the
//! log file size); from then on the path names the copy, with an identity
//! of its own (device `u64::MAX`: no real file has it). Removals and
//! renames are kept as a set of removed names and a map of copies.
//! Directory listings merge both. Syncs do nothing (nothing here is
//! durable). Locks are granted at once and conflict with nothing: an
//! overlay never writes what another holder could see. A file only read
//! is read from the underlying file system, so its bytes may change if a
//! writer runs beside: every reader of the engine checks what it reads
//! (checksums, frame sequence), as it does over the real file system.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use cairn_core::Hash;
use parking_lot::{Mutex, RwLock};

use super::{FileId, FileIdentity, Fs, FsFile, FsLock, MappedNodes, OpenMode};

/// The device number of files and directories that live only in an
/// overlay.
const DEVICE: u64 = u64::MAX;

/// A file system over `base` whose changes stay in memory (see the
/// module doc).
#[derive(Debug)]
pub struct OverlayFs {
    base: Arc<dyn Fs>,
    state: Mutex<State>,
    /// The next inode number of a file or directory made here.
    inodes: AtomicU64,
    /// A clock for the change times of files made here: it only grows.
    clock: Arc<AtomicI64>,
}

#[derive(Debug, Default)]
struct State {
    /// Files that live here, by path.
    files: BTreeMap<PathBuf, Arc<MemFile>>,
    /// Directories made here.
    dirs: BTreeMap<PathBuf, u64>,
    /// Names of the underlying file system removed (or renamed away) here.
    removed: BTreeSet<PathBuf>,
}

/// A file in memory; its handles share it.
#[derive(Debug)]
struct MemFile {
    inode: u64,
    bytes: RwLock<Vec<u8>>,
    changed: AtomicI64,
    clock: Arc<AtomicI64>,
}

impl MemFile {
    fn touch(&self) {
        let now = self.clock.fetch_add(1, Ordering::Relaxed) + 1;
        self.changed.store(now, Ordering::Relaxed);
    }
}

#[derive(Debug)]
struct MemHandle {
    file: Arc<MemFile>,
    writable: bool,
}

/// Nodes copied out of a file in memory.
#[derive(Debug)]
struct Copied(Vec<Hash>);

impl MappedNodes for Copied {
    fn nodes(&self) -> &[Hash] {
        &self.0
    }
}

/// A lock that conflicts with nothing.
#[derive(Debug)]
struct Granted(Option<FileId>);

impl FsLock for Granted {
    fn identity(&self) -> Option<FileId> {
        self.0
    }
}

impl FsFile for MemHandle {
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        if !self.writable {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "the file was opened read-only",
            ));
        }
        let offset = usize::try_from(offset).map_err(io::Error::other)?;
        let end = offset + buf.len();
        let mut bytes = self.file.bytes.write();
        if bytes.len() < end {
            bytes.resize(end, 0);
        }
        bytes[offset..end].copy_from_slice(buf);
        drop(bytes);
        self.file.touch();
        Ok(())
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let bytes = self.file.bytes.read();
        let Ok(offset) = usize::try_from(offset) else {
            return Ok(0);
        };
        if offset >= bytes.len() {
            return Ok(0);
        }
        let n = buf.len().min(bytes.len() - offset);
        buf[..n].copy_from_slice(&bytes[offset..offset + n]);
        Ok(n)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.file.bytes.read().len() as u64)
    }

    fn sync_data(&self) -> io::Result<()> {
        Ok(())
    }

    fn map_nodes(&self, offset: u64, nodes: usize) -> io::Result<Arc<dyn MappedNodes>> {
        let bytes = self.file.bytes.read();
        let start = usize::try_from(offset).map_err(io::Error::other)?;
        let end = start + nodes * 32;
        if end > bytes.len() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "cannot map {} bytes at offset {offset}: the file has {} bytes",
                    nodes * 32,
                    bytes.len()
                ),
            ));
        }
        let (chunks, _) = bytes[start..end].as_chunks::<32>();
        Ok(Arc::new(Copied(chunks.to_vec())))
    }

    fn identity(&self) -> io::Result<FileIdentity> {
        let changed = self.file.changed.load(Ordering::Relaxed);
        Ok(FileIdentity {
            dev: DEVICE,
            ino: self.file.inode,
            len: self.file.bytes.read().len() as u64,
            modified_ns: changed,
            changed_ns: changed,
        })
    }
}

impl OverlayFs {
    /// An overlay over `base`, empty.
    pub fn new(base: Arc<dyn Fs>) -> OverlayFs {
        OverlayFs {
            base,
            state: Mutex::new(State::default()),
            inodes: AtomicU64::new(1),
            clock: Arc::new(AtomicI64::new(0)),
        }
    }

    /// Bytes held in memory (the files written, copied or made here).
    pub fn bytes_held(&self) -> u64 {
        let state = self.state.lock();
        state
            .files
            .values()
            .map(|f| f.bytes.read().len() as u64)
            .sum()
    }

    fn new_file(&self, bytes: Vec<u8>) -> Arc<MemFile> {
        let file = Arc::new(MemFile {
            inode: self.inodes.fetch_add(1, Ordering::Relaxed),
            bytes: RwLock::new(bytes),
            changed: AtomicI64::new(0),
            clock: Arc::clone(&self.clock),
        });
        file.touch();
        file
    }

    /// Whether `path` names something, as the overlay sees it.
    fn exists_in(&self, state: &State, path: &Path) -> io::Result<bool> {
        if state.files.contains_key(path) || state.dirs.contains_key(path) {
            return Ok(true);
        }
        if state.removed.contains(path) {
            return Ok(false);
        }
        self.base.exists(path)
    }

    /// The file `path` names, copied into memory if it is the underlying
    /// file system's (`NotFound` if nothing is there).
    fn copy_up(&self, state: &mut State, path: &Path) -> io::Result<Arc<MemFile>> {
        if let Some(file) = state.files.get(path) {
            return Ok(Arc::clone(file));
        }
        if state.removed.contains(path) {
            return Err(not_found(path));
        }
        let source = self.base.open(path, OpenMode::ReadOnly)?;
        let length = usize::try_from(source.len()?).map_err(io::Error::other)?;
        let mut bytes = vec![0; length];
        // A file that shrank while being copied (a writer beside) keeps
        // what could be read: the readers above check every byte.
        let mut done = 0;
        while done < length {
            let n = source.read_at(&mut bytes[done..], done as u64)?;
            if n == 0 {
                break;
            }
            done += n;
        }
        bytes.truncate(done);
        let file = self.new_file(bytes);
        state.files.insert(path.to_owned(), Arc::clone(&file));
        Ok(file)
    }
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{} does not exist", path.display()),
    )
}

impl Fs for OverlayFs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn FsFile>> {
        let mut state = self.state.lock();
        match mode {
            OpenMode::CreateNew => {
                if self.exists_in(&state, path)? {
                    return Err(io::Error::new(
                        io::ErrorKind::AlreadyExists,
                        format!("{} exists", path.display()),
                    ));
                }
                let file = self.new_file(Vec::new());
                state.removed.remove(path);
                state.files.insert(path.to_owned(), Arc::clone(&file));
                Ok(Box::new(MemHandle {
                    file,
                    writable: true,
                }))
            }
            OpenMode::Existing => {
                let file = self.copy_up(&mut state, path)?;
                Ok(Box::new(MemHandle {
                    file,
                    writable: true,
                }))
            }
            OpenMode::ReadOnly => {
                if let Some(file) = state.files.get(path) {
                    return Ok(Box::new(MemHandle {
                        file: Arc::clone(file),
                        writable: false,
                    }));
                }
                if state.removed.contains(path) {
                    return Err(not_found(path));
                }
                drop(state);
                self.base.open(path, OpenMode::ReadOnly)
            }
        }
    }

    fn create_dir(&self, path: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        if self.exists_in(&state, path)? {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} exists", path.display()),
            ));
        }
        let inode = self.inodes.fetch_add(1, Ordering::Relaxed);
        state.removed.remove(path);
        state.dirs.insert(path.to_owned(), inode);
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        let file = self.copy_up(&mut state, from)?;
        state.files.remove(from);
        state.removed.insert(from.to_owned());
        state.removed.remove(to);
        state.files.insert(to.to_owned(), file);
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        let here = state.files.remove(path).is_some();
        if !here && (state.removed.contains(path) || !self.base.exists(path)?) {
            return Err(not_found(path));
        }
        state.removed.insert(path.to_owned());
        Ok(())
    }

    fn sync_dir(&self, _path: &Path) -> io::Result<()> {
        Ok(())
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        let state = self.state.lock();
        let mut names = BTreeSet::new();
        if !state.dirs.contains_key(path) {
            if state.removed.contains(path) {
                return Err(not_found(path));
            }
            for name in self.base.list_dir(path)? {
                if !state.removed.contains(&path.join(&name)) {
                    names.insert(name);
                }
            }
        }
        let children = state.files.keys().chain(state.dirs.keys());
        for child in children {
            if child.parent() == Some(path)
                && let Some(name) = child.file_name()
            {
                names.insert(name.to_string_lossy().into_owned());
            }
        }
        Ok(names.into_iter().collect())
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        let state = self.state.lock();
        self.exists_in(&state, path)
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn FsLock>> {
        let mut state = self.state.lock();
        let file = if self.exists_in(&state, path)? {
            self.copy_up(&mut state, path)?
        } else {
            let file = self.new_file(Vec::new());
            state.files.insert(path.to_owned(), Arc::clone(&file));
            file
        };
        Ok(Box::new(Granted(Some(FileId {
            device: DEVICE,
            inode: file.inode,
        }))))
    }

    fn identity_of(&self, path: &Path) -> io::Result<FileIdentity> {
        self.open(path, OpenMode::ReadOnly)?.identity()
    }

    fn lock_existing(&self, path: &Path, _shared: bool) -> io::Result<Box<dyn FsLock>> {
        if !self.exists(path)? {
            return Err(not_found(path));
        }
        Ok(Box::new(Granted(None)))
    }

    fn lock_dir(&self, dir: &Path) -> io::Result<Box<dyn FsLock>> {
        Ok(Box::new(Granted(Some(self.identity(dir)?))))
    }

    fn identity(&self, path: &Path) -> io::Result<FileId> {
        let state = self.state.lock();
        if let Some(file) = state.files.get(path) {
            return Ok(FileId {
                device: DEVICE,
                inode: file.inode,
            });
        }
        if let Some(&inode) = state.dirs.get(path) {
            return Ok(FileId {
                device: DEVICE,
                inode,
            });
        }
        if state.removed.contains(path) {
            return Err(not_found(path));
        }
        drop(state);
        self.base.identity(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::StdFs;

    fn read(fs: &dyn Fs, path: &Path) -> Vec<u8> {
        let file = fs.open(path, OpenMode::ReadOnly).unwrap();
        let mut bytes = vec![0; usize::try_from(file.len().unwrap()).unwrap()];
        file.read_exact_at(&mut bytes, 0).unwrap();
        bytes
    }

    #[test]
    fn changes_stay_in_memory_and_reads_see_them() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path();
        std::fs::write(dir.join("a"), b"hello").unwrap();
        std::fs::write(dir.join("b"), b"bee").unwrap();
        std::fs::create_dir(dir.join("sub")).unwrap();
        let fs = OverlayFs::new(Arc::new(StdFs));
        let before = StdFs.identity(&dir.join("a")).unwrap();
        assert_eq!(fs.identity(&dir.join("a")).unwrap(), before);

        // Written: copied up, changed in memory only.
        let a = fs.open(&dir.join("a"), OpenMode::Existing).unwrap();
        a.write_at(b"J", 0).unwrap();
        a.write_at(b"!!", 5).unwrap();
        assert_eq!(read(&fs, &dir.join("a")), b"Jello!!");
        assert_eq!(std::fs::read(dir.join("a")).unwrap(), b"hello");
        assert_ne!(fs.identity(&dir.join("a")).unwrap(), before);
        assert_eq!(a.file_id().unwrap(), fs.identity(&dir.join("a")).unwrap());

        // Created, renamed over another, removed.
        let c = fs.open(&dir.join("c.tmp"), OpenMode::CreateNew).unwrap();
        c.write_at(b"sea", 0).unwrap();
        assert_eq!(
            fs.open(&dir.join("c.tmp"), OpenMode::CreateNew)
                .unwrap_err()
                .kind(),
            io::ErrorKind::AlreadyExists
        );
        fs.rename(&dir.join("c.tmp"), &dir.join("b")).unwrap();
        assert_eq!(read(&fs, &dir.join("b")), b"sea");
        assert!(!fs.exists(&dir.join("c.tmp")).unwrap());
        fs.remove_file(&dir.join("a")).unwrap();
        assert!(!fs.exists(&dir.join("a")).unwrap());
        assert_eq!(
            fs.open(&dir.join("a"), OpenMode::ReadOnly)
                .unwrap_err()
                .kind(),
            io::ErrorKind::NotFound
        );
        assert_eq!(
            fs.remove_file(&dir.join("a")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        fs.create_dir(&dir.join("new")).unwrap();
        fs.open(&dir.join("new/x"), OpenMode::CreateNew).unwrap();
        assert_eq!(fs.list_dir(dir).unwrap(), vec!["b", "new", "sub"]);
        assert_eq!(fs.list_dir(&dir.join("new")).unwrap(), vec!["x"]);

        // The directory is untouched.
        assert_eq!(std::fs::read(dir.join("a")).unwrap(), b"hello");
        assert_eq!(std::fs::read(dir.join("b")).unwrap(), b"bee");
        let mut real: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        real.sort();
        assert_eq!(real, vec!["a", "b", "sub"]);
        assert_eq!(
            fs.bytes_held(),
            3,
            "b (renamed from c.tmp) and the empty new/x"
        );
    }

    #[test]
    fn mapped_nodes_are_the_bytes_written_and_a_read_only_handle_refuses_writes() {
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().join("nodes");
        let fs = OverlayFs::new(Arc::new(StdFs));
        let file = fs.open(&path, OpenMode::CreateNew).unwrap();
        let nodes: Vec<u8> = (0..96u8).collect();
        file.write_at(&nodes, 0).unwrap();
        let mapped = file.map_nodes(32, 2).unwrap();
        assert_eq!(mapped.nodes().as_flattened(), &nodes[32..96]);
        assert_eq!(
            file.map_nodes(64, 2).unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
        let reader = fs.open(&path, OpenMode::ReadOnly).unwrap();
        assert_eq!(
            reader.write_at(b"x", 0).unwrap_err().kind(),
            io::ErrorKind::PermissionDenied
        );
        // Locks conflict with nothing, and lock files stay in memory.
        let _one = fs.lock(&temp.path().join("LOCK")).unwrap();
        let _two = fs.lock(&temp.path().join("LOCK")).unwrap();
        let _dir = fs.lock_dir(temp.path()).unwrap();
        assert!(!temp.path().join("LOCK").exists());
    }
}
