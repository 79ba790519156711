//! [`Fs`] in memory, for crash and fault testing.
//!
//! `kill -9` leaves the page cache intact, so it cannot reveal a missing
//! fsync. [`SimFs`] can: it keeps, for every file, what was *written* apart
//! from what was *synced*, and for every directory, its current entries apart
//! from the entries a directory sync made durable. Reads always see the
//! current state (what the page cache would show); a simulated power loss
//! throws away some or all of what was not synced.
//!
//! # Trace and crash states
//!
//! Every mutating call (file creation, `write_at`, `sync_data`, `sync_dir`,
//! `rename`, `remove_file`, `create_dir`, and the creation done by `lock`) is
//! recorded, in order, with its effect. Calls that fail validation (a missing
//! file, an existing name) change nothing and are not recorded; failed and
//! lying syncs *are* recorded (they are sync calls the engine made, and a
//! failed one changes what a later sync can make durable). After a workload
//! ran, [`SimFs::crash_at`] replays the first `k` operations (for any `k` in
//! `0..=`[`SimFs::op_count`]) and then cuts the power, as [`CrashMode`] says;
//! the result is a fresh `SimFs` whose state is what the disk would hold, with
//! no lock held, no fault configured and an empty trace, on which the engine
//! can recover (and be crashed again). To visit every boundary without
//! replaying from the start each time, step a [`Replay`] forward instead.
//!
//! # The model
//!
//! * **File data.** Each file has a durable content and the writes made since,
//!   in order. `sync_data` makes the file's data and length durable. At a
//!   crash, the data modes decide per file which unsynced bytes survive:
//!   none ([`CrashMode::DropUnsynced`]), all ([`CrashMode::KeepUnsynced`], the
//!   `kill -9` case), all but a torn tail of the last write
//!   ([`CrashMode::TearLastWrite`]: a disk writes a multi-sector request in
//!   any order and only each sector atomically, so the last write before the
//!   power cut may be cut at a 512-byte (logical sector) or 4 KiB (physical
//!   sector, page) boundary), a random subset of 512-byte sectors
//!   ([`CrashMode::RandomSectors`]: write-back of dirty pages happens in no
//!   particular order, across files too), or everything that lies inside the
//!   durable length while the length itself reverts
//!   ([`CrashMode::GrowthLost`]: in-place overwrites hit the disk but the
//!   inode size update of an append was not committed).
//!   Under `RandomSectors` the length of a file with unsynced writes survives
//!   with probability 1/2 independently of its sectors; when it survives
//!   and the sectors past the old end did not, the tail reads as zeros, which
//!   is what ext4 and xfs may leave after a crash that followed an extension
//!   (the size was journaled, the data blocks were not written).
//! * **Directory entries.** Creating a file or a directory, renaming and
//!   removing change the namespace at once but become durable only when the
//!   parent directory is synced (POSIX; ext4 and xfs in practice commit them
//!   in journal order, hence "a prefix survives"). At a crash each directory
//!   keeps its durable entries plus: none of its unsynced operations
//!   (`DropUnsynced`), a random prefix of them ([`CrashMode::UndoDirOps`]), or
//!   all of them (the other modes). A file or directory whose entry does not
//!   survive is gone, with everything under it, whatever was synced in it.
//! * **Failed fsync.** After a failed `sync_data` the file's unsynced writes
//!   stay unsynced *for good*: Linux marks the dirty pages clean after a
//!   write-back error and reports the error once (per open file since 4.13),
//!   so a retried fsync succeeds without writing them. Only writing the bytes again (and syncing)
//!   makes them durable. A failed `sync_dir` leaves the directory's
//!   operations unsynced; a later successful `sync_dir` makes them durable.
//! * **Lying sync.** A switch under which both syncs return `Ok` and make
//!   nothing durable: a disk whose volatile cache ignores flushes, or a file
//!   system mounted with barriers off. An engine run on it must lose
//!   acknowledged data at a crash (the canary of the crash tests).
//! * **Full disk.** A budget of bytes that `write_at` may still write; a write
//!   that does not fit fails with `StorageFull`, after writing the prefix
//!   that fits if short writes are enabled (as `write_all_at` does when the
//!   disk fills in the middle of a request).
//! * **Faults at open** ([`OpenFault`]): the process out of descriptors
//!   (`EMFILE`: every call that needs one fails, as the real call would:
//!   opens, locks, `sync_dir` and `list_dir`, which open the directory),
//!   or no space to create a file (`ENOSPC` at `open(CreateNew)` and
//!   `create_dir`), for the paths that contain a given part, until cleared.
//!   A failed call changes nothing.
//! * **Identity.** A file's identity ([`FileId`]) is its inode number: a
//!   handle keeps naming its inode after the name was removed or given to
//!   another file, as on a real file system.
//!
//! # What it does not model
//!
//! * Media errors: bit rot, misdirected or lost writes of *synced* data. Tests
//!   that need them write the damage into a crashed `SimFs` themselves.
//! * Tearing inside a sector: sectors are written atomically (use
//!   `TearLastWrite { boundary: 1, .. }` to tear a write at every byte), and
//!   a torn sector never damages durable bytes that share it (a 512e disk's
//!   read-modify-write of a 4 KiB physical sector could).
//! * Tearing any write but the last: `TearLastWrite` enumerates the cuts of
//!   the last write only; losing arbitrary unsynced sectors, of earlier
//!   writes too, is `RandomSectors`' job, which draws states rather than
//!   enumerating them.
//! * Every combination of a data policy with a directory policy: each mode
//!   pairs one of each as described above (a torn write together with undone
//!   directory operations, say, is not generated).
//! * Anything an fsync of a *file* does for its directory entry: ext4 commits
//!   a new file's entry with its data in practice, but POSIX does not promise
//!   it, so here only `sync_dir` makes entries durable (stricter than ext4).
//! * Atomicity of a rename *across* directories: it is recorded as a removal
//!   in one directory and an insertion in the other, each durable with its own
//!   directory, so a crash may leave the file under both names (like a hard
//!   link) or under neither. Within one directory a rename is atomic.
//! * Space accounting (the budget counts bytes written, overwrites included),
//!   truncation, hard links, permissions, timestamps, `O_DIRECT`.
//! * Mappings: `map_nodes` returns a copy, so a later write to the range is
//!   not seen through it (the engine never writes a mapped range), and a range
//!   past the end is an `UnexpectedEof` error instead of a SIGBUS.
//! * Locks are advisory, per `SimFs` (shared by its clones), not durable.
//! * Paths must be absolute; `..` is not supported; files are limited to
//!   4 GiB so that a wild offset is an error instead of an allocation.

use cairn_core::cast::to_usize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io;
use std::path::{Component, Path};
use std::sync::Arc;

use cairn_core::Hash;
use parking_lot::Mutex;
use rand::Rng;

use cairn_store::fs::{FileId, FileIdentity, Fs, FsFile, FsLock, MappedNodes, OpenMode};

mod disk;
mod file;
pub mod gated;
#[cfg(test)]
mod tests;

use disk::*;
use file::*;

/// The sector size of [`CrashMode::RandomSectors`] (and the smaller of the two
/// usual tear boundaries).
pub const SECTOR: usize = 512;

/// The larger usual tear boundary: a page, and the physical sector of most
/// current disks.
pub const PAGE: usize = 4096;

/// The largest file length the simulation accepts; a write beyond it is a
/// `FileTooLarge` error rather than a multi-gigabyte allocation.
const MAX_FILE_LEN: u64 = 1 << 32;

/// An inode number. The root directory is [`ROOT`]; numbers are never reused.
type Ino = u64;
const ROOT: Ino = 0;

/// What a simulated power loss keeps of what was not synced. See the module
/// documentation for the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CrashMode {
    /// Only synced data and synced directory entries survive.
    DropUnsynced,
    /// Everything written survives, as after `kill -9`.
    KeepUnsynced,
    /// Every unsynced write and directory operation survives, except the
    /// last write operation before the crash point, of which only the bytes
    /// before its `keep`-th `boundary`-aligned file offset survive (the
    /// aligned offsets counted are those in `[offset, offset + len)`; with
    /// `boundary: 1` that is every byte). `keep` ranges over
    /// `0..`[`SimFs::tear_points`]; there is nothing to tear (and asking for
    /// it panics) if that write was synced since.
    TearLastWrite {
        /// The alignment of the cut, e.g. [`SECTOR`] or [`PAGE`].
        boundary: usize,
        /// Which aligned offset inside the write to cut at.
        keep: usize,
    },
    /// Each unsynced [`SECTOR`]-sized, sector-aligned piece of each file
    /// survives with probability 1/2, and so does each file's unsynced length
    /// (its tail reading as zeros where sectors were lost). Directory
    /// operations all survive.
    RandomSectors,
    /// Each directory keeps a random prefix (from none to all) of its
    /// unsynced operations; all written data survives in the files that
    /// remain.
    UndoDirOps,
    /// Unsynced writes survive where they lie inside the file's durable
    /// length, but the length reverts to it: appended bytes are lost.
    /// Directory operations all survive.
    GrowthLost,
}

/// Call and byte counts of a [`SimFs`] (shared by its clones).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SimCounters {
    /// `sync_data` calls, failed and lying ones included.
    pub sync_data_calls: u64,
    /// `sync_dir` calls, failed and lying ones included.
    pub sync_dir_calls: u64,
    /// `write_at` calls, failed ones included.
    pub write_calls: u64,
    /// Bytes written (the prefix of a short write included).
    pub bytes_written: u64,
    /// Calls failed by an [`OpenFault`].
    pub open_faults: u64,
}

/// A fault injected at the calls that open or create files (see
/// [`SimFs::fail_opens`]); the error is the operating system's own
/// (`raw_os_error`), as the real call would return it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenFault {
    /// `EMFILE`: the process has no descriptor left. Fails `open` (every
    /// mode), the locks, `sync_dir` and `list_dir` (they open the
    /// directory); not `write_at`, `sync_data` or anything through a handle
    /// already open, nor `rename`, `remove_file` or `exists`.
    TooManyFiles,
    /// `ENOSPC` when creating: fails `open(CreateNew)` and `create_dir`.
    NoSpace,
}

impl OpenFault {
    /// The operating system's number of the error (Linux and the BSDs
    /// agree on both).
    const fn errno(self) -> i32 {
        match self {
            OpenFault::TooManyFiles => 24,
            OpenFault::NoSpace => 28,
        }
    }
}

/// What a call about to be made needs, for [`OpenFault`]s.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Needs {
    /// A descriptor (it opens something).
    Descriptor,
    /// A descriptor and a new entry (it creates a file).
    Creation,
    /// A new entry and no descriptor (`create_dir`).
    Entry,
}

/// The device number of every [`SimFs`] identity.
const SIM_DEVICE: u64 = 0x51_4d;

fn sim_id(ino: Ino) -> FileId {
    FileId {
        device: SIM_DEVICE,
        inode: ino,
    }
}

/// An in-memory file system that keeps what was written apart from what was
/// synced, records every mutating operation, builds the states a power loss
/// can leave, and injects faults. Clones share the same state.
///
/// See the module documentation for the model.
#[derive(Clone)]
pub struct SimFs {
    shared: Arc<Mutex<Shared>>,
}

impl fmt::Debug for SimFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `try_lock`: formatting must not deadlock if the state is held.
        match self.shared.try_lock() {
            Some(shared) => shared.fmt(f),
            None => f.write_str("SimFs { <locked> }"),
        }
    }
}

impl Default for SimFs {
    fn default() -> Self {
        SimFs::new()
    }
}

impl SimFs {
    /// An empty file system: only the root directory `/`, durable.
    pub fn new() -> Self {
        SimFs::from_model(Model::new())
    }

    fn from_model(model: Model) -> Self {
        SimFs {
            shared: Arc::new(Mutex::new(Shared::from_model(model))),
        }
    }

    // -- Trace and crash states --------------------------------------------

    /// How many operations were recorded: crash points are `0..=op_count()`.
    pub fn op_count(&self) -> usize {
        self.shared.lock().trace.len()
    }

    /// A one-line description of recorded operation `index` (0-based: it is
    /// the operation between boundaries `index` and `index + 1`), e.g.
    /// `write /db/log/00000000.log [4096, 4608)`, for test failure messages.
    ///
    /// # Panics
    /// If `index >= op_count()`.
    pub fn describe_op(&self, index: usize) -> String {
        self.shared.lock().trace[index].to_string()
    }

    /// A replay of the trace recorded so far, at boundary 0, to step through
    /// every crash point without replaying from the start each time.
    pub fn replay(&self) -> Replay {
        let shared = self.shared.lock();
        Replay {
            ops: shared.trace.clone(),
            model: Model::clone(&shared.initial),
            position: 0,
        }
    }

    /// The state a power loss right after the first `k` recorded operations
    /// leaves, as a fresh `SimFs` (no lock held, no fault, empty trace).
    /// Replays `k` operations: to visit every boundary, use [`SimFs::replay`].
    ///
    /// # Panics
    /// If `k > op_count()`, or for a [`CrashMode::TearLastWrite`] whose
    /// `keep` is not below [`SimFs::tear_points`]`(k, boundary)`.
    pub fn crash_at<R: Rng + ?Sized>(&self, k: usize, mode: &CrashMode, rng: &mut R) -> SimFs {
        let mut replay = self.replay();
        replay.seek(k);
        replay.crash(mode, rng)
    }

    /// How many [`CrashMode::TearLastWrite`] states there are at boundary `k`
    /// for `boundary`: the `boundary`-aligned offsets inside the last write
    /// of the first `k` operations, or 0 if there was none or it was synced.
    ///
    /// # Panics
    /// If `k > op_count()` or `boundary == 0`.
    pub fn tear_points(&self, k: usize, boundary: usize) -> usize {
        let mut replay = self.replay();
        replay.seek(k);
        replay.tear_points(boundary)
    }

    /// The state a power loss now leaves: `crash_at(op_count(), ..)` without
    /// the replay.
    ///
    /// # Panics
    /// As [`SimFs::crash_at`].
    pub fn crash<R: Rng + ?Sized>(&self, mode: &CrashMode, rng: &mut R) -> SimFs {
        SimFs::from_model(self.shared.lock().model.crash(mode, rng))
    }

    /// Forgets the recorded operations: the current state, with what is
    /// still unsynced in it, becomes boundary 0 of later replays. For tests
    /// that crash only inside the part of a workload they care about.
    pub fn clear_trace(&self) {
        let mut shared = self.shared.lock();
        shared.trace.clear();
        // The last write is not an operation of the new trace: nothing to tear
        // at boundary 0.
        shared.model.last_write = None;
        shared.initial = Arc::new(shared.model.clone());
    }

    // -- Faults ---------------------------------------------------------------

    /// Makes the `n`-th `sync_data` call from now (1 = the next one) fail
    /// with `Other`, "injected fsync failure", leaving the file's unsynced
    /// writes unsynced for good. Calls accumulate.
    ///
    /// # Panics
    /// If `n == 0`.
    pub fn fail_nth_sync_data(&self, n: u64) {
        assert!(n > 0, "n counts from 1 (the next call)");
        let mut shared = self.shared.lock();
        let call = shared.counters.sync_data_calls + n;
        shared.faults.fail_sync_data.insert(call);
    }

    /// Makes the `n`-th `sync_dir` call from now (1 = the next one) fail
    /// with `Other`, "injected fsync failure", leaving the directory's
    /// operations unsynced. Calls accumulate.
    ///
    /// # Panics
    /// If `n == 0`.
    pub fn fail_nth_sync_dir(&self, n: u64) {
        assert!(n > 0, "n counts from 1 (the next call)");
        let mut shared = self.shared.lock();
        let call = shared.counters.sync_dir_calls + n;
        shared.faults.fail_sync_dir.insert(call);
    }

    /// Lets `write_at` write `bytes` more bytes (`None`: unlimited). A write
    /// that does not fit fails with `StorageFull`; with `short_write`, it
    /// first writes the prefix that fits (after which the budget is 0),
    /// otherwise it writes nothing and the budget stays for smaller writes.
    pub fn set_write_budget(&self, bytes: Option<u64>, short_write: bool) {
        let mut shared = self.shared.lock();
        shared.faults.write_budget = bytes;
        shared.faults.short_write = short_write;
    }

    /// While on, `sync_data` and `sync_dir` return `Ok` and make nothing
    /// durable.
    pub fn set_lying_sync(&self, lying: bool) {
        self.shared.lock().faults.lying_sync = lying;
    }

    /// From now until cleared ([`SimFs::clear_faults`] or
    /// [`SimFs::clear_open_faults`]), every call on a path containing
    /// `path_part` (`""`: every path) that `fault` concerns fails with it
    /// and changes nothing (counted in [`SimCounters::open_faults`]).
    /// Replaces an open fault set before.
    pub fn fail_opens(&self, fault: OpenFault, path_part: &str) {
        self.shared.lock().faults.open = Some((fault, path_part.to_owned()));
    }

    /// Removes the fault [`SimFs::fail_opens`] set, leaving the others.
    pub fn clear_open_faults(&self) {
        self.shared.lock().faults.open = None;
    }

    /// Removes every configured fault (pending sync failures, the write
    /// budget, the lying sync, faults at open). Writes already lost to a
    /// failed sync stay lost.
    pub fn clear_faults(&self) {
        self.shared.lock().faults = Faults::default();
    }

    /// The call and byte counts so far.
    pub fn counters(&self) -> SimCounters {
        self.shared.lock().counters
    }

    /// The current content of the file at `path` (a test convenience).
    pub fn read_all(&self, path: &Path) -> io::Result<Vec<u8>> {
        let shared = self.shared.lock();
        let ino = shared.model.resolve(path)?;
        match shared.model.node(ino) {
            Node::File(file) => Ok(file.current.clone()),
            Node::Dir(_) => Err(is_a_directory(path)),
        }
    }
}

fn is_a_directory(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::IsADirectory,
        format!("{}: is a directory", path.display()),
    )
}

fn not_a_directory(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotADirectory,
        format!("{}: not a directory", path.display()),
    )
}

impl Fs for SimFs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn FsFile>> {
        let mut shared = self.shared.lock();
        let needs = match mode {
            OpenMode::CreateNew => Needs::Creation,
            OpenMode::Existing | OpenMode::ReadOnly => Needs::Descriptor,
        };
        shared.open_fault(path, needs)?;
        let ino = match mode {
            OpenMode::CreateNew => shared.create(path, false)?,
            OpenMode::Existing | OpenMode::ReadOnly => {
                let ino = shared.model.resolve(path)?;
                if shared.model.is_dir(ino) {
                    return Err(is_a_directory(path));
                }
                ino
            }
        };
        Ok(Box::new(SimFile {
            shared: self.shared.clone(),
            ino,
            path: path.display().to_string().into(),
            writable: mode != OpenMode::ReadOnly,
        }))
    }

    fn create_dir(&self, path: &Path) -> io::Result<()> {
        let mut shared = self.shared.lock();
        shared.open_fault(path, Needs::Entry)?;
        shared.create(path, true).map(|_| ())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut shared = self.shared.lock();
        let model = &shared.model;
        let (from_dir, from_name) = model.resolve_parent(from)?;
        let ino = model
            .lookup(from_dir, &from_name)
            .ok_or_else(|| not_found(from))?;
        let (to_dir, to_name) = model.resolve_parent(to)?;
        if let Some(target) = model.lookup(to_dir, &to_name) {
            // Renaming a file onto itself (or onto another name of the same
            // inode) does nothing, as POSIX says.
            if target == ino {
                return Ok(());
            }
            if model.is_dir(target) {
                return Err(is_a_directory(to));
            }
            if model.is_dir(ino) {
                return Err(not_a_directory(to));
            }
        }
        if model.is_dir(ino) && to.starts_with(from) {
            return Err(invalid(to, "cannot move a directory into itself"));
        }
        let to_path = to.display().to_string().into();
        let kind = OpKind::Rename {
            ino,
            from_dir,
            from_name,
            to_dir,
            to_name,
            to_path,
        };
        shared.record(from.display().to_string().into(), kind);
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut shared = self.shared.lock();
        let (dir, name) = shared.model.resolve_parent(path)?;
        let ino = shared
            .model
            .lookup(dir, &name)
            .ok_or_else(|| not_found(path))?;
        if shared.model.is_dir(ino) {
            return Err(is_a_directory(path));
        }
        shared.record(
            path.display().to_string().into(),
            OpKind::Remove { dir, name },
        );
        Ok(())
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        let mut shared = self.shared.lock();
        shared.open_fault(path, Needs::Descriptor)?;
        let ino = shared.model.resolve(path)?;
        if !shared.model.is_dir(ino) {
            return Err(not_a_directory(path));
        }
        shared.counters.sync_dir_calls += 1;
        let call = shared.counters.sync_dir_calls;
        let lying = shared.faults.lying_sync;
        let outcome = Shared::sync_outcome(&mut shared.faults.fail_sync_dir, lying, call);
        shared.record(
            path.display().to_string().into(),
            OpKind::SyncDir { ino, outcome },
        );
        if outcome == SyncOutcome::Failed {
            Err(sync_failure())
        } else {
            Ok(())
        }
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        let mut shared = self.shared.lock();
        shared.open_fault(path, Needs::Descriptor)?;
        let ino = shared.model.resolve(path)?;
        match shared.model.node(ino) {
            // A BTreeMap's keys come sorted.
            Node::Dir(dir) => Ok(dir.entries.keys().cloned().collect()),
            Node::File(_) => Err(not_a_directory(path)),
        }
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        match self.shared.lock().model.resolve(path) {
            Ok(_) => Ok(true),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
            {
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn FsLock>> {
        let mut shared = self.shared.lock();
        shared.open_fault(path, Needs::Descriptor)?;
        let ino = match shared.model.resolve(path) {
            Ok(ino) if shared.model.is_dir(ino) => return Err(is_a_directory(path)),
            Ok(ino) => ino,
            Err(e) if e.kind() == io::ErrorKind::NotFound => shared.create(path, false)?,
            Err(e) => return Err(e),
        };
        if shared.shared_locks.contains_key(&ino) || !shared.locks.insert(ino) {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("{} is held by another holder", path.display()),
            ));
        }
        Ok(Box::new(SimLock {
            shared: self.shared.clone(),
            ino,
            path: path.display().to_string(),
            is_shared: false,
        }))
    }

    fn lock_existing(&self, path: &Path, is_shared: bool) -> io::Result<Box<dyn FsLock>> {
        let mut shared = self.shared.lock();
        shared.open_fault(path, Needs::Descriptor)?;
        let ino = shared.model.resolve(path)?;
        if shared.model.is_dir(ino) {
            return Err(is_a_directory(path));
        }
        let busy =
            shared.locks.contains(&ino) || (!is_shared && shared.shared_locks.contains_key(&ino));
        if busy {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("{} is held by another holder", path.display()),
            ));
        }
        if is_shared {
            *shared.shared_locks.entry(ino).or_insert(0) += 1;
        } else {
            shared.locks.insert(ino);
        }
        Ok(Box::new(SimLock {
            shared: self.shared.clone(),
            ino,
            path: path.display().to_string(),
            is_shared,
        }))
    }

    fn lock_dir(&self, dir: &Path) -> io::Result<Box<dyn FsLock>> {
        let mut shared = self.shared.lock();
        shared.open_fault(dir, Needs::Descriptor)?;
        let ino = shared.model.resolve(dir)?;
        if !shared.model.is_dir(ino) {
            return Err(not_a_directory(dir));
        }
        if shared.shared_locks.contains_key(&ino) || !shared.locks.insert(ino) {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("{} is held by another holder", dir.display()),
            ));
        }
        Ok(Box::new(SimLock {
            shared: self.shared.clone(),
            ino,
            path: dir.display().to_string(),
            is_shared: false,
        }))
    }

    fn identity(&self, path: &Path) -> io::Result<FileId> {
        Ok(sim_id(self.shared.lock().model.resolve(path)?))
    }
}

/// A replay of a [`SimFs`]'s trace (as it was when [`SimFs::replay`] was
/// called), stepped forward one operation boundary at a time, building crash
/// states at each.
pub struct Replay {
    ops: Vec<Op>,
    model: Model,
    position: usize,
}

impl fmt::Debug for Replay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Replay")
            .field("position", &self.position)
            .field("op_count", &self.ops.len())
            .finish()
    }
}

/// The crash modes that tear no write, in the order [`Replay::crash_modes`]
/// lists them.
const UNTORN: [CrashMode; 5] = [
    CrashMode::DropUnsynced,
    CrashMode::KeepUnsynced,
    CrashMode::RandomSectors,
    CrashMode::UndoDirOps,
    CrashMode::GrowthLost,
];

impl Replay {
    /// The current boundary: how many operations were replayed.
    pub fn position(&self) -> usize {
        self.position
    }

    /// How many operations the trace holds (the last boundary).
    pub fn op_count(&self) -> usize {
        self.ops.len()
    }

    /// Replays the next operation; `false` (and nothing done) at the end.
    pub fn step(&mut self) -> bool {
        let Some(op) = self.ops.get(self.position) else {
            return false;
        };
        self.model.apply(op);
        self.position += 1;
        true
    }

    /// Replays up to boundary `k`.
    ///
    /// # Panics
    /// If `k` is behind the current position or past the end of the trace.
    pub fn seek(&mut self, k: usize) {
        assert!(
            (self.position..=self.ops.len()).contains(&k),
            "cannot seek to boundary {k}: at {} of {}",
            self.position,
            self.ops.len()
        );
        while self.position < k {
            self.step();
        }
    }

    /// [`SimFs::tear_points`] at the current boundary.
    pub fn tear_points(&self, boundary: usize) -> usize {
        self.model.tear_points(boundary)
    }

    /// [`SimFs::crash_at`] at the current boundary.
    pub fn crash<R: Rng + ?Sized>(&self, mode: &CrashMode, rng: &mut R) -> SimFs {
        SimFs::from_model(self.model.crash(mode, rng))
    }

    /// Every crash mode worth trying at the current boundary: the five
    /// untorn modes, then each tear of the last write at [`SECTOR`] and
    /// [`PAGE`] boundaries. (The random modes are listed once; call them
    /// again with other draws for more states.)
    pub fn crash_modes(&self) -> Vec<CrashMode> {
        let mut modes = UNTORN.to_vec();
        for boundary in [SECTOR, PAGE] {
            for keep in 0..self.tear_points(boundary) {
                modes.push(CrashMode::TearLastWrite { boundary, keep });
            }
        }
        modes
    }

    /// The five untorn modes of [`Replay::crash_modes`] and at most `tears`
    /// tears of the last write at [`SECTOR`] boundaries: for workloads with
    /// many boundaries, where every tear of each would take too long.
    pub fn crash_modes_up_to(&self, tears: usize) -> Vec<CrashMode> {
        let mut modes = UNTORN.to_vec();
        for keep in 0..self.tear_points(SECTOR).min(tears) {
            modes.push(CrashMode::TearLastWrite {
                boundary: SECTOR,
                keep,
            });
        }
        modes
    }
}
