//! The file-system seam: every file operation the engine performs goes
//! through [`Fs`], so that tests can replace the operating system with
//! the simulated file system of `cairn-testkit` (`cairn_testkit::sim`), which keeps what was
//! written apart from what was synced and can therefore build the states a
//! power loss leaves behind, and inject faults (failed fsyncs, a full disk)
//! at any call.
//!
//! The trait is deliberately small: positioned reads and writes, data and
//! directory syncs, create/rename/remove, listing, locks (of a file or of
//! the store's directory), the identity of a file (device and inode, to
//! tell whether a name still names the file a handle holds) and a
//! read-only mapping. The engine never relies on the file position, on
//! `O_APPEND`, or on anything a directory sync does not make durable.

use std::io;
use std::path::Path;
use std::sync::Arc;

use cairn_core::Hash;

pub mod overlay;
pub mod real;

pub use overlay::OverlayFs;
pub use real::StdFs;

/// How to open a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenMode {
    /// Read and write an existing file.
    Existing,
    /// Create a new file, failing if one exists (`AlreadyExists`).
    CreateNew,
    /// Read only.
    ReadOnly,
}

/// What identifies a file or directory while it exists: its device and
/// inode numbers. A path and an open handle name the same object exactly
/// when their identities are equal; a name removed and created again names
/// a new one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId {
    /// The device (file system) holding it.
    pub device: u64,
    /// Its inode number on that device.
    pub inode: u64,
}

/// An open file (a file has a length but no useful emptiness test, hence
/// `len_without_is_empty`). All I/O is positioned; implementations must be usable from
/// several threads at once (reads concurrent with a write elsewhere in the file).
#[allow(clippy::len_without_is_empty)]
pub trait FsFile: Send + Sync + std::fmt::Debug {
    /// Writes all of `buf` at `offset` (extending the file if needed).
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// Reads up to `buf.len()` bytes at `offset`; returns how many were read
    /// (fewer only at the end of the file).
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;
    /// The file's current length.
    fn len(&self) -> io::Result<u64>;
    /// Makes the file's data (and the length needed to read it) durable:
    /// `fdatasync`.
    fn sync_data(&self) -> io::Result<()>;
    /// A read-only view of `[offset, offset + nodes * 32)` as nodes, for
    /// serving cold levels. The caller checks that the range lies inside the
    /// file first (reading past the end of a mapping is a SIGBUS, not an
    /// error), and only maps ranges that are never written again.
    fn map_nodes(&self, offset: u64, nodes: usize) -> io::Result<Arc<dyn MappedNodes>>;

    /// What identifies the file's present content without reading it: its
    /// device, inode, length and change times (`fstat`). Any write through
    /// the file system changes the change time; see [`FileIdentity`].
    fn identity(&self) -> io::Result<FileIdentity>;

    /// The device and inode of the open file, whatever its name is now:
    /// compared with [`Fs::identity`] of its path, it tells whether the
    /// file was removed or replaced under its holder.
    fn file_id(&self) -> io::Result<FileId> {
        self.identity().map(|identity| identity.id())
    }

    /// Reads exactly `buf.len()` bytes at `offset`, or fails with `UnexpectedEof`.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let mut done = 0;
        while done < buf.len() {
            let n = self.read_at(&mut buf[done..], offset + done as u64)?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "wanted {} bytes at offset {offset}, the file ends after {done}",
                        buf.len()
                    ),
                ));
            }
            done += n;
        }
        Ok(())
    }
}

/// A file's identity as `fstat` gives it: equal identities of one path at
/// two times mean nobody wrote, truncated or replaced the file between
/// them, provided the second is not in the same tick of the file system's
/// clock as the first change (see docs/file-format.md, "Verified record").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileIdentity {
    /// The device.
    pub dev: u64,
    /// The inode.
    pub ino: u64,
    /// The length in bytes.
    pub len: u64,
    /// The last data change (mtime), nanoseconds since the epoch.
    pub modified_ns: i64,
    /// The last change of any kind (ctime), nanoseconds since the epoch: a
    /// process cannot set it back.
    pub changed_ns: i64,
}

impl FileIdentity {
    /// The device and inode alone: what names the file, not its content.
    pub fn id(&self) -> FileId {
        FileId {
            device: self.dev,
            inode: self.ino,
        }
    }
}

/// Nodes served from a mapping (or, in tests, from memory).
pub trait MappedNodes: Send + Sync + std::fmt::Debug {
    /// The mapped nodes.
    fn nodes(&self) -> &[Hash];
}

impl AsRef<[Hash]> for dyn MappedNodes {
    fn as_ref(&self) -> &[Hash] {
        self.nodes()
    }
}

/// A held lock (exclusive or shared); released on drop.
pub trait FsLock: Send + Sync + std::fmt::Debug {
    /// The identity of the locked file or directory, where known: a
    /// holder compares it with [`Fs::identity`] of the path it locked to
    /// tell whether that path still names what it holds.
    fn identity(&self) -> Option<FileId> {
        None
    }
}

/// The file-system operations the engine uses.
pub trait Fs: Send + Sync + std::fmt::Debug {
    /// Opens `path` as `mode` says.
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn FsFile>>;
    /// Creates a directory (its parent must exist). Not durable until the
    /// parent directory is synced.
    fn create_dir(&self, path: &Path) -> io::Result<()>;
    /// Renames `from` to `to`, replacing `to` atomically if it exists. Not
    /// durable until the directory is synced.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes a file. Not durable until the directory is synced.
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Makes the directory's entries (creations, renames, removals) durable.
    fn sync_dir(&self, path: &Path) -> io::Result<()>;
    /// The names of the entries of a directory, sorted.
    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>>;
    /// Whether `path` exists (file or directory).
    fn exists(&self, path: &Path) -> io::Result<bool>;
    /// Takes an exclusive lock on `path` (created if missing), without
    /// waiting: `WouldBlock` if another holder has it.
    fn lock(&self, path: &Path) -> io::Result<Box<dyn FsLock>>;
    /// The identity of the file at `path` (see [`FsFile::identity`]): one
    /// `stat`, where opening the file would take three calls.
    fn identity_of(&self, path: &Path) -> io::Result<FileIdentity> {
        self.open(path, OpenMode::ReadOnly)?.identity()
    }
    /// Takes a lock on the existing file `path`, opened read-only (never
    /// created), without waiting: shared locks coexist with each other,
    /// an exclusive one with nothing. `WouldBlock` if a conflicting holder
    /// has it (another handle of this process included), `NotFound` if
    /// the file does not exist. Independent of [`Fs::lock`]'s locks on
    /// other files.
    fn lock_existing(&self, path: &Path, shared: bool) -> io::Result<Box<dyn FsLock>>;
    /// Takes an exclusive lock on the directory `dir` itself (an `flock`
    /// on a descriptor of the directory), without waiting: `WouldBlock` if
    /// another holder has it, `ResourceBusy` if this process already holds
    /// it through another handle. The lock is checked to be on the
    /// directory `dir` names once it is held (a directory renamed away
    /// meanwhile is not taken for it). Unlike a lock file, it cannot be
    /// defeated by removing or replacing a name inside the directory, and
    /// the directory cannot be replaced while it holds the store's files.
    fn lock_dir(&self, dir: &Path) -> io::Result<Box<dyn FsLock>>;
    /// The identity of what `path` names now (`stat`, following symbolic
    /// links; it needs no descriptor, so it works when the process has
    /// none left): `NotFound` if nothing does.
    fn identity(&self, path: &Path) -> io::Result<FileId>;
}
