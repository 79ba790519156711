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

use super::{FileId, Fs, FsFile, FsLock, MappedNodes, OpenMode};

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

// ---------------------------------------------------------------------------
// The disk model: the namespace and the contents, durable and not.
// ---------------------------------------------------------------------------

/// The state the trace is replayed on: everything that survives a crash in
/// some mode, and nothing that does not (locks, faults and counters live in
/// [`Shared`]).
#[derive(Clone)]
struct Model {
    nodes: BTreeMap<Ino, Node>,
    next_ino: Ino,
    /// How many operations were applied since this model was created from
    /// scratch; numbers the writes so a replay tears the same one.
    applied: u64,
    /// The serial number and inode of the last write applied, the candidate
    /// for [`CrashMode::TearLastWrite`].
    last_write: Option<(u64, Ino)>,
}

#[derive(Clone)]
enum Node {
    File(FileNode),
    Dir(DirNode),
}

#[derive(Clone, Default)]
struct FileNode {
    /// The content before the first write in `pending`, all of it durable.
    base: Vec<u8>,
    /// Writes not yet folded into `base`, in order. A synced write stays here
    /// (marked durable) while an earlier one is lost: replaying them in order
    /// is the only way to build every crash state correctly when they overlap.
    pending: Vec<PendingWrite>,
    /// What reads see: `base` with every pending write applied.
    current: Vec<u8>,
}

#[derive(Clone)]
struct PendingWrite {
    serial: u64,
    offset: u64,
    data: Arc<[u8]>,
    state: WriteState,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum WriteState {
    /// Written, not synced yet.
    Unsynced,
    /// Made durable by a successful sync.
    Durable,
    /// Was unsynced when a sync failed: no later sync makes it durable.
    Lost,
}

#[derive(Clone, Default)]
struct DirNode {
    /// The entries reads see.
    entries: BTreeMap<String, Ino>,
    /// The entries as of the last successful `sync_dir`.
    durable: BTreeMap<String, Ino>,
    /// The operations since, each applied atomically (a rename within the
    /// directory is one operation of two changes).
    pending: Vec<DirOp>,
}

/// Entry changes applied together: `Some(ino)` sets a name, `None` removes it.
type DirOp = Vec<(String, Option<Ino>)>;

/// A recorded operation: its effect, and the path it was called with (for
/// [`SimFs::describe_op`] only; the effect names inodes, so that a write
/// through a handle whose file was renamed replays correctly).
#[derive(Clone)]
struct Op {
    path: Arc<str>,
    kind: OpKind,
}

#[derive(Clone)]
enum OpKind {
    Create {
        parent: Ino,
        name: String,
        ino: Ino,
        dir: bool,
    },
    Write {
        ino: Ino,
        offset: u64,
        data: Arc<[u8]>,
    },
    SyncData {
        ino: Ino,
        outcome: SyncOutcome,
    },
    SyncDir {
        ino: Ino,
        outcome: SyncOutcome,
    },
    Rename {
        ino: Ino,
        from_dir: Ino,
        from_name: String,
        to_dir: Ino,
        to_name: String,
        to_path: Arc<str>,
    },
    Remove {
        dir: Ino,
        name: String,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SyncOutcome {
    Durable,
    /// An injected failure: returned an error.
    Failed,
    /// The lying-sync switch was on: returned `Ok`, did nothing.
    Lied,
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = &self.path;
        match &self.kind {
            OpKind::Create { dir: true, .. } => write!(f, "create_dir {path}"),
            OpKind::Create { dir: false, .. } => write!(f, "create {path}"),
            OpKind::Write { offset, data, .. } => {
                write!(f, "write {path} [{offset}, {})", offset + data.len() as u64)
            }
            OpKind::SyncData { outcome, .. } => write!(f, "sync_data {path} ({outcome:?})"),
            OpKind::SyncDir { outcome, .. } => write!(f, "sync_dir {path} ({outcome:?})"),
            OpKind::Rename { to_path, .. } => write!(f, "rename {path} -> {to_path}"),
            OpKind::Remove { .. } => write!(f, "remove {path}"),
        }
    }
}

/// Writes `data` at `offset` of `buf`, zero-filling any gap past its end.
fn write_into(buf: &mut Vec<u8>, offset: u64, data: &[u8]) {
    // Offsets were checked against MAX_FILE_LEN when the write was made.
    let start = to_usize(offset);
    let end = start + data.len();
    if buf.len() < end {
        buf.resize(end, 0);
    }
    buf[start..end].copy_from_slice(data);
}

fn apply_dir_op(entries: &mut BTreeMap<String, Ino>, op: &DirOp) {
    for (name, target) in op {
        match target {
            Some(ino) => entries.insert(name.clone(), *ino),
            None => entries.remove(name),
        };
    }
}

/// How many `boundary`-aligned offsets lie in `[offset, offset + len)`.
fn tear_points_of(offset: u64, len: usize, boundary: usize) -> usize {
    assert!(boundary > 0, "a tear boundary must be at least 1 byte");
    let boundary = boundary as u64;
    let end = offset + len as u64;
    let first = offset.div_ceil(boundary) * boundary;
    if first >= end {
        0
    } else {
        to_usize((end - 1 - first) / boundary + 1)
    }
}

impl PendingWrite {
    fn end(&self) -> u64 {
        self.offset + self.data.len() as u64
    }

    fn durable(&self) -> bool {
        self.state == WriteState::Durable
    }
}

impl FileNode {
    fn with_content(content: Vec<u8>) -> Self {
        FileNode {
            current: content.clone(),
            base: content,
            pending: Vec::new(),
        }
    }

    fn sync(&mut self, outcome: SyncOutcome) {
        match outcome {
            SyncOutcome::Durable => {
                for w in &mut self.pending {
                    if w.state == WriteState::Unsynced {
                        w.state = WriteState::Durable;
                    }
                }
                // Fold the durable prefix into the base to keep the list short;
                // a lost write stops the folding (see `pending`).
                let n = self.pending.iter().take_while(|w| w.durable()).count();
                for w in self.pending.drain(..n) {
                    write_into(&mut self.base, w.offset, &w.data);
                }
            }
            SyncOutcome::Failed => {
                for w in &mut self.pending {
                    if w.state == WriteState::Unsynced {
                        w.state = WriteState::Lost;
                    }
                }
            }
            SyncOutcome::Lied => {}
        }
    }

    fn durable_len(&self) -> u64 {
        self.pending
            .iter()
            .filter(|w| w.durable())
            .fold(self.base.len() as u64, |len, w| len.max(w.end()))
    }

    /// The content this file has after a crash in `mode`. `torn` is the
    /// serial of the write to tear and the file offset to cut it at.
    fn crash_content<R: Rng + ?Sized>(
        &self,
        mode: &CrashMode,
        torn: Option<(u64, u64)>,
        rng: &mut R,
    ) -> Vec<u8> {
        match mode {
            CrashMode::KeepUnsynced | CrashMode::UndoDirOps => self.current.clone(),
            CrashMode::GrowthLost => {
                let mut content = self.current.clone();
                content.truncate(to_usize(self.durable_len()));
                content
            }
            CrashMode::DropUnsynced => {
                let mut content = self.base.clone();
                for w in self.pending.iter().filter(|w| w.durable()) {
                    write_into(&mut content, w.offset, &w.data);
                }
                content
            }
            CrashMode::TearLastWrite { .. } => {
                let mut content = self.base.clone();
                for w in &self.pending {
                    let data = match torn {
                        Some((serial, cut)) if serial == w.serial && !w.durable() => {
                            &w.data[..to_usize(cut - w.offset)]
                        }
                        _ => &w.data[..],
                    };
                    write_into(&mut content, w.offset, data);
                }
                content
            }
            CrashMode::RandomSectors => self.random_sectors(rng),
        }
    }

    fn random_sectors<R: Rng + ?Sized>(&self, rng: &mut R) -> Vec<u8> {
        let sector = SECTOR as u64;
        // A sector written twice survives or not as a whole (its last
        // content reached the disk or its old one stayed), hence one draw
        // per sector, not per write. The set is ordered so that a seed
        // always gives the same state.
        let touched: BTreeSet<u64> = self
            .pending
            .iter()
            .filter(|w| !w.durable())
            .flat_map(|w| w.offset / sector..=(w.end() - 1) / sector)
            .collect();
        if touched.is_empty() {
            return self.current.clone();
        }
        let kept: BTreeSet<u64> = touched.into_iter().filter(|_| rng.gen_bool(0.5)).collect();
        let length_survives = rng.gen_bool(0.5);

        let mut content = self.base.clone();
        for w in &self.pending {
            if w.durable() {
                write_into(&mut content, w.offset, &w.data);
                continue;
            }
            for s in w.offset / sector..=(w.end() - 1) / sector {
                if kept.contains(&s) {
                    let lo = w.offset.max(s * sector);
                    let hi = w.end().min((s + 1) * sector);
                    let piece = &w.data[to_usize(lo - w.offset)..to_usize(hi - w.offset)];
                    write_into(&mut content, lo, piece);
                }
            }
        }
        if length_survives && content.len() < self.current.len() {
            content.resize(self.current.len(), 0);
        }
        content
    }
}

impl DirNode {
    fn change(&mut self, op: DirOp) {
        apply_dir_op(&mut self.entries, &op);
        self.pending.push(op);
    }

    fn sync(&mut self) {
        self.durable = self.entries.clone();
        self.pending.clear();
    }
}

fn invalid(path: &Path, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{}: {why}", path.display()),
    )
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{}: no such file or directory", path.display()),
    )
}

/// The names along an absolute path.
fn components(path: &Path) -> io::Result<Vec<&str>> {
    let mut parts = path.components();
    if parts.next() != Some(Component::RootDir) {
        return Err(invalid(path, "SimFs paths must be absolute"));
    }
    let mut names = Vec::new();
    for part in parts {
        match part {
            Component::Normal(name) => {
                names.push(name.to_str().ok_or_else(|| invalid(path, "not UTF-8"))?);
            }
            Component::CurDir => {}
            _ => return Err(invalid(path, "`..` is not supported")),
        }
    }
    Ok(names)
}

impl Model {
    fn new() -> Self {
        let mut nodes = BTreeMap::new();
        nodes.insert(ROOT, Node::Dir(DirNode::default()));
        Model {
            nodes,
            next_ino: ROOT + 1,
            applied: 0,
            last_write: None,
        }
    }

    fn node(&self, ino: Ino) -> &Node {
        &self.nodes[&ino]
    }

    fn is_dir(&self, ino: Ino) -> bool {
        matches!(self.node(ino), Node::Dir(_))
    }

    fn file(&self, ino: Ino) -> &FileNode {
        match self.node(ino) {
            Node::File(file) => file,
            Node::Dir(_) => unreachable!("inode {ino} is a directory"),
        }
    }

    fn file_mut(&mut self, ino: Ino) -> &mut FileNode {
        match self.nodes.get_mut(&ino) {
            Some(Node::File(file)) => file,
            _ => unreachable!("inode {ino} is not a file"),
        }
    }

    fn dir(&self, ino: Ino) -> &DirNode {
        match self.node(ino) {
            Node::Dir(dir) => dir,
            Node::File(_) => unreachable!("inode {ino} is a file"),
        }
    }

    fn dir_mut(&mut self, ino: Ino) -> &mut DirNode {
        match self.nodes.get_mut(&ino) {
            Some(Node::Dir(dir)) => dir,
            _ => unreachable!("inode {ino} is not a directory"),
        }
    }

    /// Follows `names` from the root.
    fn walk(&self, path: &Path, names: &[&str]) -> io::Result<Ino> {
        let mut ino = ROOT;
        for name in names {
            let Node::Dir(dir) = self.node(ino) else {
                return Err(io::Error::new(
                    io::ErrorKind::NotADirectory,
                    format!("{}: a component is not a directory", path.display()),
                ));
            };
            ino = *dir.entries.get(*name).ok_or_else(|| not_found(path))?;
        }
        Ok(ino)
    }

    fn resolve(&self, path: &Path) -> io::Result<Ino> {
        self.walk(path, &components(path)?)
    }

    /// The directory that holds (or would hold) `path`, and the name in it.
    fn resolve_parent(&self, path: &Path) -> io::Result<(Ino, String)> {
        let names = components(path)?;
        let Some((name, parents)) = names.split_last() else {
            return Err(invalid(path, "the root has no parent"));
        };
        let parent = self.walk(path, parents)?;
        if !self.is_dir(parent) {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("{}: the parent is not a directory", path.display()),
            ));
        }
        Ok((parent, (*name).to_owned()))
    }

    fn lookup(&self, dir: Ino, name: &str) -> Option<Ino> {
        self.dir(dir).entries.get(name).copied()
    }

    /// Applies a validated operation. The live file system and every replay
    /// go through here, so a replay reaches exactly the states the workload
    /// went through.
    fn apply(&mut self, op: &Op) {
        self.applied += 1;
        match &op.kind {
            OpKind::Create {
                parent,
                name,
                ino,
                dir,
            } => {
                let node = if *dir {
                    Node::Dir(DirNode::default())
                } else {
                    Node::File(FileNode::default())
                };
                self.nodes.insert(*ino, node);
                self.next_ino = self.next_ino.max(ino + 1);
                self.dir_mut(*parent)
                    .change(vec![(name.clone(), Some(*ino))]);
            }
            OpKind::Write { ino, offset, data } => {
                let serial = self.applied;
                let file = self.file_mut(*ino);
                write_into(&mut file.current, *offset, data);
                file.pending.push(PendingWrite {
                    serial,
                    offset: *offset,
                    data: data.clone(),
                    state: WriteState::Unsynced,
                });
                self.last_write = Some((serial, *ino));
            }
            OpKind::SyncData { ino, outcome } => self.file_mut(*ino).sync(*outcome),
            OpKind::SyncDir { ino, outcome } => {
                if *outcome == SyncOutcome::Durable {
                    self.dir_mut(*ino).sync();
                }
            }
            OpKind::Rename {
                ino,
                from_dir,
                from_name,
                to_dir,
                to_name,
                ..
            } => {
                if from_dir == to_dir {
                    self.dir_mut(*from_dir).change(vec![
                        (from_name.clone(), None),
                        (to_name.clone(), Some(*ino)),
                    ]);
                } else {
                    self.dir_mut(*from_dir)
                        .change(vec![(from_name.clone(), None)]);
                    self.dir_mut(*to_dir)
                        .change(vec![(to_name.clone(), Some(*ino))]);
                }
            }
            OpKind::Remove { dir, name } => self.dir_mut(*dir).change(vec![(name.clone(), None)]),
        }
    }

    /// The last write, if it is still not durable (only then can it tear).
    fn tearable_write(&self) -> Option<&PendingWrite> {
        let (serial, ino) = self.last_write?;
        self.file(ino)
            .pending
            .iter()
            .find(|w| w.serial == serial && !w.durable())
    }

    fn tear_points(&self, boundary: usize) -> usize {
        self.tearable_write()
            .map_or(0, |w| tear_points_of(w.offset, w.data.len(), boundary))
    }

    /// The state a power loss in `mode` leaves.
    fn crash<R: Rng + ?Sized>(&self, mode: &CrashMode, rng: &mut R) -> Model {
        let torn = match *mode {
            CrashMode::TearLastWrite { boundary, keep } => {
                let points = self.tear_points(boundary);
                assert!(
                    keep < points,
                    "TearLastWrite {{ boundary: {boundary}, keep: {keep} }}: the last write has {points} tear points"
                );
                let w = self.tearable_write().expect("a write with tear points");
                let b = boundary as u64;
                Some((w.serial, w.offset.div_ceil(b) * b + keep as u64 * b))
            }
            _ => None,
        };

        // Directories first, in inode order, so that a seed always gives the
        // same state.
        let mut entries: BTreeMap<Ino, BTreeMap<String, Ino>> = BTreeMap::new();
        for (&ino, node) in &self.nodes {
            if let Node::Dir(dir) = node {
                let keep = match mode {
                    CrashMode::DropUnsynced => 0,
                    CrashMode::UndoDirOps => rng.gen_range(0..=dir.pending.len()),
                    _ => dir.pending.len(),
                };
                let mut surviving = dir.durable.clone();
                for op in &dir.pending[..keep] {
                    apply_dir_op(&mut surviving, op);
                }
                entries.insert(ino, surviving);
            }
        }

        // Whatever the surviving entries do not reach from the root is gone.
        let mut reachable = BTreeSet::from([ROOT]);
        let mut stack = vec![ROOT];
        while let Some(dir) = stack.pop() {
            for &child in entries[&dir].values() {
                if reachable.insert(child) && entries.contains_key(&child) {
                    stack.push(child);
                }
            }
        }

        let mut nodes = BTreeMap::new();
        for (&ino, node) in &self.nodes {
            if !reachable.contains(&ino) {
                continue;
            }
            let node = match node {
                Node::Dir(_) => {
                    let surviving = entries.remove(&ino).expect("every directory has entries");
                    Node::Dir(DirNode {
                        durable: surviving.clone(),
                        entries: surviving,
                        pending: Vec::new(),
                    })
                }
                Node::File(file) => {
                    Node::File(FileNode::with_content(file.crash_content(mode, torn, rng)))
                }
            };
            nodes.insert(ino, node);
        }
        Model {
            nodes,
            next_ino: self.next_ino,
            applied: 0,
            last_write: None,
        }
    }
}

// ---------------------------------------------------------------------------
// The live file system: model + trace + faults + locks.
// ---------------------------------------------------------------------------

struct Shared {
    /// The state the trace starts from (empty, or what a crash left).
    initial: Arc<Model>,
    model: Model,
    trace: Vec<Op>,
    faults: Faults,
    counters: SimCounters,
    /// Inodes locked by a live [`SimLock`].
    locks: BTreeSet<Ino>,
    /// Inodes with shared locks, and how many holders each has.
    shared_locks: BTreeMap<Ino, usize>,
    /// A logical clock, one tick per recorded operation, and the tick of
    /// each inode's last change: what a file's identity reports as its
    /// change time (a fresh `SimFs`, as a crash leaves one, starts again
    /// at 0, so an identity taken before a crash never matches after it).
    clock: i64,
    changed: BTreeMap<Ino, i64>,
}

#[derive(Debug, Default)]
struct Faults {
    /// Call numbers (1-based, counted over the whole life of the SimFs) of
    /// `sync_data` calls to fail.
    fail_sync_data: BTreeSet<u64>,
    fail_sync_dir: BTreeSet<u64>,
    /// Bytes `write_at` may still write; `None` is unlimited.
    write_budget: Option<u64>,
    /// Whether a write that does not fit writes what fits before failing.
    short_write: bool,
    lying_sync: bool,
    /// Calls on paths containing the string fail with the fault.
    open: Option<(OpenFault, String)>,
}

impl fmt::Debug for Shared {
    // The contents can be megabytes; a summary is what a failing test needs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimFs")
            .field("inodes", &self.model.nodes.len())
            .field("ops", &self.trace.len())
            .field("locks", &self.locks.len())
            .field("faults", &self.faults)
            .field("counters", &self.counters)
            .finish()
    }
}

impl Shared {
    fn from_model(model: Model) -> Self {
        Shared {
            initial: Arc::new(model.clone()),
            model,
            trace: Vec::new(),
            faults: Faults::default(),
            counters: SimCounters::default(),
            locks: BTreeSet::new(),
            shared_locks: BTreeMap::new(),
            clock: 0,
            changed: BTreeMap::new(),
        }
    }

    fn record(&mut self, path: Arc<str>, kind: OpKind) {
        self.clock += 1;
        match &kind {
            OpKind::Create { ino, .. } | OpKind::Write { ino, .. } | OpKind::Rename { ino, .. } => {
                self.changed.insert(*ino, self.clock);
            }
            _ => {}
        }
        let op = Op { path, kind };
        self.model.apply(&op);
        self.trace.push(op);
    }

    /// Creates a file or directory at `path`, failing as `open(CreateNew)`
    /// and `create_dir` do.
    fn create(&mut self, path: &Path, dir: bool) -> io::Result<Ino> {
        let (parent, name) = self.model.resolve_parent(path)?;
        if self.model.lookup(parent, &name).is_some() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{}: already exists", path.display()),
            ));
        }
        let ino = self.model.next_ino;
        self.record(
            path.display().to_string().into(),
            OpKind::Create {
                parent,
                name,
                ino,
                dir,
            },
        );
        Ok(ino)
    }

    /// The injected [`OpenFault`] a call on `path` that `needs` meets, if
    /// any (counted).
    fn open_fault(&mut self, path: &Path, needs: Needs) -> io::Result<()> {
        let Some((fault, part)) = &self.faults.open else {
            return Ok(());
        };
        let hit = match fault {
            OpenFault::TooManyFiles => needs != Needs::Entry,
            OpenFault::NoSpace => needs != Needs::Descriptor,
        };
        if !hit || !path.to_string_lossy().contains(part.as_str()) {
            return Ok(());
        }
        let errno = fault.errno();
        self.counters.open_faults += 1;
        Err(io::Error::from_raw_os_error(errno))
    }

    /// Decides the outcome of sync call number `call`.
    fn sync_outcome(fail: &mut BTreeSet<u64>, lying: bool, call: u64) -> SyncOutcome {
        if fail.remove(&call) {
            SyncOutcome::Failed
        } else if lying {
            SyncOutcome::Lied
        } else {
            SyncOutcome::Durable
        }
    }
}

fn sync_failure() -> io::Error {
    io::Error::other("injected fsync failure")
}

/// An open file of a [`SimFs`].
struct SimFile {
    shared: Arc<Mutex<Shared>>,
    ino: Ino,
    /// The path it was opened as, for messages and the trace.
    path: Arc<str>,
    writable: bool,
}

impl fmt::Debug for SimFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimFile")
            .field("path", &self.path)
            .field("ino", &self.ino)
            .field("writable", &self.writable)
            .finish()
    }
}

#[derive(Debug)]
struct SimNodes(Vec<Hash>);

impl MappedNodes for SimNodes {
    fn nodes(&self) -> &[Hash] {
        &self.0
    }
}

impl FsFile for SimFile {
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let mut shared = self.shared.lock();
        shared.counters.write_calls += 1;
        if !self.writable {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("{}: opened read-only", self.path),
            ));
        }
        if offset
            .checked_add(buf.len() as u64)
            .is_none_or(|end| end > MAX_FILE_LEN)
        {
            return Err(io::Error::new(
                io::ErrorKind::FileTooLarge,
                format!(
                    "{}: a write at {offset} of {} bytes is past SimFs's limit",
                    self.path,
                    buf.len()
                ),
            ));
        }
        let faults = &mut shared.faults;
        let n = match faults.write_budget {
            Some(left) if (buf.len() as u64) > left => {
                if faults.short_write {
                    faults.write_budget = Some(0);
                    to_usize(left)
                } else {
                    0
                }
            }
            Some(left) => {
                faults.write_budget = Some(left - buf.len() as u64);
                buf.len()
            }
            None => buf.len(),
        };
        if n > 0 {
            shared.counters.bytes_written += n as u64;
            shared.record(
                self.path.clone(),
                OpKind::Write {
                    ino: self.ino,
                    offset,
                    data: buf[..n].into(),
                },
            );
        }
        if n < buf.len() {
            return Err(io::Error::new(
                io::ErrorKind::StorageFull,
                format!(
                    "{}: injected: no space left on device (wrote {n} of {} bytes at {offset})",
                    self.path,
                    buf.len()
                ),
            ));
        }
        Ok(())
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let shared = self.shared.lock();
        let content = &shared.model.file(self.ino).current;
        if offset >= content.len() as u64 {
            return Ok(0);
        }
        let start = to_usize(offset);
        let n = buf.len().min(content.len() - start);
        buf[..n].copy_from_slice(&content[start..start + n]);
        Ok(n)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.shared.lock().model.file(self.ino).current.len() as u64)
    }

    fn identity(&self) -> io::Result<crate::fs::FileIdentity> {
        let shared = self.shared.lock();
        let changed = shared.changed.get(&self.ino).copied().unwrap_or(0);
        Ok(crate::fs::FileIdentity {
            dev: SIM_DEVICE,
            ino: self.ino,
            len: shared.model.file(self.ino).current.len() as u64,
            modified_ns: changed,
            changed_ns: changed,
        })
    }

    fn sync_data(&self) -> io::Result<()> {
        let mut shared = self.shared.lock();
        shared.counters.sync_data_calls += 1;
        let call = shared.counters.sync_data_calls;
        let lying = shared.faults.lying_sync;
        let outcome = Shared::sync_outcome(&mut shared.faults.fail_sync_data, lying, call);
        shared.record(
            self.path.clone(),
            OpKind::SyncData {
                ino: self.ino,
                outcome,
            },
        );
        if outcome == SyncOutcome::Failed {
            Err(sync_failure())
        } else {
            Ok(())
        }
    }

    fn map_nodes(&self, offset: u64, nodes: usize) -> io::Result<Arc<dyn MappedNodes>> {
        let shared = self.shared.lock();
        let content = &shared.model.file(self.ino).current;
        let len = nodes.checked_mul(32).map(|len| len as u64);
        let range = len.and_then(|len| Some(offset..offset.checked_add(len)?));
        let Some(range) = range.filter(|r| r.end <= content.len() as u64) else {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "{}: cannot map {nodes} nodes at offset {offset}: the file has {} bytes",
                    self.path,
                    content.len()
                ),
            ));
        };
        let bytes = &content[to_usize(range.start)..to_usize(range.end)];
        Ok(Arc::new(SimNodes(bytes.as_chunks::<32>().0.to_vec())))
    }
}

/// A lock held on a [`SimFs`] file; released on drop.
struct SimLock {
    shared: Arc<Mutex<Shared>>,
    ino: Ino,
    path: String,
    /// Taken shared by [`Fs::lock_existing`].
    is_shared: bool,
}

impl fmt::Debug for SimLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimLock").field("path", &self.path).finish()
    }
}

impl FsLock for SimLock {
    fn identity(&self) -> Option<FileId> {
        Some(sim_id(self.ino))
    }
}

impl Drop for SimLock {
    fn drop(&mut self) {
        let mut shared = self.shared.lock();
        if !self.is_shared {
            shared.locks.remove(&self.ino);
            return;
        }
        if let Some(count) = shared.shared_locks.get_mut(&self.ino) {
            *count -= 1;
            if *count == 0 {
                shared.shared_locks.remove(&self.ino);
            }
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
        let mut modes = vec![
            CrashMode::DropUnsynced,
            CrashMode::KeepUnsynced,
            CrashMode::RandomSectors,
            CrashMode::UndoDirOps,
            CrashMode::GrowthLost,
        ];
        for boundary in [SECTOR, PAGE] {
            for keep in 0..self.tear_points(boundary) {
                modes.push(CrashMode::TearLastWrite { boundary, keep });
            }
        }
        modes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn p(path: &str) -> &Path {
        Path::new(path)
    }

    fn rng(seed: u64) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(seed)
    }

    /// `/db` and `/db/f`, both durable, empty; returns the open file.
    fn setup() -> (SimFs, Box<dyn FsFile>) {
        let fs = SimFs::new();
        fs.create_dir(p("/db")).unwrap();
        fs.sync_dir(p("/")).unwrap();
        let file = fs.open(p("/db/f"), OpenMode::CreateNew).unwrap();
        fs.sync_dir(p("/db")).unwrap();
        (fs, file)
    }

    fn content(fs: &SimFs, path: &str) -> Option<Vec<u8>> {
        match fs.read_all(p(path)) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => panic!("{path}: {e}"),
        }
    }

    /// Every path under `/` with its content (`None` for directories).
    fn dump(fs: &SimFs) -> BTreeMap<String, Option<Vec<u8>>> {
        fn walk(fs: &SimFs, dir: &str, out: &mut BTreeMap<String, Option<Vec<u8>>>) {
            for name in fs.list_dir(p(dir)).unwrap() {
                let path = format!("{}/{name}", dir.trim_end_matches('/'));
                if fs.list_dir(p(&path)).is_ok() {
                    out.insert(path.clone(), None);
                    walk(fs, &path, out);
                } else {
                    out.insert(path.clone(), Some(fs.read_all(p(&path)).unwrap()));
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(fs, "/", &mut out);
        out
    }

    fn crash(fs: &SimFs, mode: CrashMode) -> SimFs {
        fs.crash(&mode, &mut rng(0))
    }

    #[test]
    fn drop_unsynced_keeps_only_synced_writes() {
        let (fs, file) = setup();
        file.write_at(b"hello", 0).unwrap();
        file.sync_data().unwrap();
        file.write_at(b" world", 5).unwrap();
        assert_eq!(content(&fs, "/db/f").unwrap(), b"hello world");

        assert_eq!(
            content(&crash(&fs, CrashMode::DropUnsynced), "/db/f").unwrap(),
            b"hello"
        );
        assert_eq!(
            content(&crash(&fs, CrashMode::KeepUnsynced), "/db/f").unwrap(),
            b"hello world"
        );
        assert_eq!(
            content(&crash(&fs, CrashMode::UndoDirOps), "/db/f").unwrap(),
            b"hello world"
        );

        // At every boundary: before the directory syncs nothing survives a
        // DropUnsynced crash, then an empty file, then "hello".
        let n = fs.op_count();
        assert_eq!(n, 7);
        let expected: [Option<&[u8]>; 8] = [
            None,
            None,
            None,
            None,
            Some(b""),
            Some(b""),
            Some(b"hello"),
            Some(b"hello"),
        ];
        for (k, want) in expected.iter().enumerate() {
            let crashed = fs.crash_at(k, &CrashMode::DropUnsynced, &mut rng(0));
            assert_eq!(content(&crashed, "/db/f").as_deref(), *want, "boundary {k}");
        }
        // /db itself exists from boundary 2 (after sync_dir("/")).
        assert!(
            !fs.crash_at(1, &CrashMode::DropUnsynced, &mut rng(0))
                .exists(p("/db"))
                .unwrap()
        );
        assert!(
            fs.crash_at(2, &CrashMode::DropUnsynced, &mut rng(0))
                .exists(p("/db"))
                .unwrap()
        );
    }

    #[test]
    fn file_needs_its_directory_synced() {
        let fs = SimFs::new();
        fs.create_dir(p("/db")).unwrap();
        fs.sync_dir(p("/")).unwrap();
        let file = fs.open(p("/db/f"), OpenMode::CreateNew).unwrap();
        file.write_at(b"data", 0).unwrap();
        file.sync_data().unwrap();
        // Data synced, entry not: the file is gone.
        let crashed = crash(&fs, CrashMode::DropUnsynced);
        assert_eq!(crashed.list_dir(p("/db")).unwrap(), Vec::<String>::new());
        assert_eq!(
            content(&crash(&fs, CrashMode::KeepUnsynced), "/db/f").unwrap(),
            b"data"
        );
        fs.sync_dir(p("/db")).unwrap();
        assert_eq!(
            content(&crash(&fs, CrashMode::DropUnsynced), "/db/f").unwrap(),
            b"data"
        );
    }

    #[test]
    fn new_directory_needs_its_parent_synced() {
        let fs = SimFs::new();
        fs.create_dir(p("/db")).unwrap();
        let file = fs.open(p("/db/f"), OpenMode::CreateNew).unwrap();
        file.write_at(b"x", 0).unwrap();
        file.sync_data().unwrap();
        fs.sync_dir(p("/db")).unwrap();
        // Everything inside /db is durable, but /db's own entry is not.
        assert!(dump(&crash(&fs, CrashMode::DropUnsynced)).is_empty());
        fs.sync_dir(p("/")).unwrap();
        assert_eq!(
            content(&crash(&fs, CrashMode::DropUnsynced), "/db/f").unwrap(),
            b"x"
        );
    }

    #[test]
    fn rename_without_sync_dir_is_undone_by_drop_unsynced() {
        let (fs, file) = setup();
        file.write_at(b"new", 0).unwrap();
        file.sync_data().unwrap();
        let old = fs.open(p("/db/final"), OpenMode::CreateNew).unwrap();
        old.write_at(b"old", 0).unwrap();
        old.sync_data().unwrap();
        fs.sync_dir(p("/db")).unwrap();

        fs.rename(p("/db/f"), p("/db/final")).unwrap();
        assert_eq!(fs.list_dir(p("/db")).unwrap(), ["final"]);
        assert_eq!(content(&fs, "/db/final").unwrap(), b"new");

        let dropped = crash(&fs, CrashMode::DropUnsynced);
        assert_eq!(dropped.list_dir(p("/db")).unwrap(), ["f", "final"]);
        assert_eq!(content(&dropped, "/db/final").unwrap(), b"old");
        assert_eq!(content(&dropped, "/db/f").unwrap(), b"new");
        let kept = crash(&fs, CrashMode::KeepUnsynced);
        assert_eq!(kept.list_dir(p("/db")).unwrap(), ["final"]);
        assert_eq!(content(&kept, "/db/final").unwrap(), b"new");

        fs.sync_dir(p("/db")).unwrap();
        let synced = crash(&fs, CrashMode::DropUnsynced);
        assert_eq!(synced.list_dir(p("/db")).unwrap(), ["final"]);
        assert_eq!(content(&synced, "/db/final").unwrap(), b"new");
    }

    #[test]
    fn remove_without_sync_dir_is_undone_by_drop_unsynced() {
        let (fs, file) = setup();
        file.write_at(b"keep", 0).unwrap();
        file.sync_data().unwrap();
        fs.remove_file(p("/db/f")).unwrap();
        assert!(!fs.exists(p("/db/f")).unwrap());
        // The open handle still works on the unlinked inode.
        file.write_at(b"!", 4).unwrap();
        assert_eq!(file.len().unwrap(), 5);
        assert_eq!(
            content(&crash(&fs, CrashMode::DropUnsynced), "/db/f").unwrap(),
            b"keep"
        );
        assert_eq!(content(&crash(&fs, CrashMode::KeepUnsynced), "/db/f"), None);
    }

    #[test]
    fn cross_directory_rename_is_durable_per_directory() {
        let fs = SimFs::new();
        for dir in ["/a", "/b"] {
            fs.create_dir(p(dir)).unwrap();
        }
        fs.sync_dir(p("/")).unwrap();
        fs.open(p("/a/x"), OpenMode::CreateNew).unwrap();
        fs.sync_dir(p("/a")).unwrap();
        fs.rename(p("/a/x"), p("/b/x")).unwrap();
        fs.sync_dir(p("/b")).unwrap();
        // /b's insertion is durable, /a's removal is not: both names survive.
        let crashed = crash(&fs, CrashMode::DropUnsynced);
        assert!(crashed.exists(p("/a/x")).unwrap());
        assert!(crashed.exists(p("/b/x")).unwrap());
    }

    #[test]
    fn undo_dir_ops_keeps_a_prefix_per_directory() {
        let (fs, file) = setup();
        file.write_at(b"f", 0).unwrap();
        fs.open(p("/db/a"), OpenMode::CreateNew)
            .unwrap()
            .write_at(b"a", 0)
            .unwrap();
        fs.open(p("/db/b"), OpenMode::CreateNew).unwrap();
        fs.rename(p("/db/a"), p("/db/c")).unwrap();
        fs.remove_file(p("/db/b")).unwrap();

        let prefixes: [&[&str]; 5] = [
            &["f"],
            &["a", "f"],
            &["a", "b", "f"],
            &["b", "c", "f"],
            &["c", "f"],
        ];
        let mut seen = BTreeSet::new();
        for seed in 0..200 {
            let crashed = fs.crash(&CrashMode::UndoDirOps, &mut rng(seed));
            let names = crashed.list_dir(p("/db")).unwrap();
            let index = prefixes.iter().position(|want| names == *want);
            let index = index.unwrap_or_else(|| panic!("not a prefix: {names:?}"));
            seen.insert(index);
            // Data all survives in the files that remain.
            assert_eq!(content(&crashed, "/db/f").unwrap(), b"f");
            if index >= 3 {
                assert_eq!(content(&crashed, "/db/c").unwrap(), b"a");
            }
        }
        assert_eq!(seen.len(), prefixes.len(), "every prefix occurs");
    }

    #[test]
    fn tear_last_write_at_sector_and_page_boundaries() {
        let (fs, file) = setup();
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8 + 1).collect();
        file.write_at(&data, 100).unwrap();
        let k = fs.op_count();
        // Aligned offsets in [100, 10100): 512, 1024, ..., 9728 and 4096, 8192.
        assert_eq!(fs.tear_points(k, SECTOR), 19);
        assert_eq!(fs.tear_points(k, PAGE), 2);
        assert_eq!(fs.tear_points(k, 1), 10_000);
        assert_eq!(fs.tear_points(k - 1, SECTOR), 0, "no write before it");

        for (boundary, first) in [(SECTOR, 512), (PAGE, 4096), (1, 100)] {
            for keep in 0..fs.tear_points(k, boundary) {
                let mode = CrashMode::TearLastWrite { boundary, keep };
                let got = content(&fs.crash_at(k, &mode, &mut rng(0)), "/db/f").unwrap();
                let cut = first + keep * boundary;
                assert_eq!(got.len(), cut, "{mode:?}");
                assert!(got[..100].iter().all(|&b| b == 0));
                assert_eq!(&got[100..], &data[..cut - 100], "{mode:?}");
            }
        }

        let mut replay = fs.replay();
        replay.seek(k);
        assert_eq!(replay.crash_modes().len(), 5 + 19 + 2);
    }

    #[test]
    fn tear_keeps_other_unsynced_writes_and_can_drop_an_aligned_write() {
        let (fs, file) = setup();
        file.write_at(&[1; 4096], 0).unwrap();
        file.sync_data().unwrap();
        let other = fs.open(p("/db/g"), OpenMode::CreateNew).unwrap();
        other.write_at(b"other", 0).unwrap();
        file.write_at(&[2; 4096], 4096).unwrap();
        let k = fs.op_count();
        assert_eq!(fs.tear_points(k, SECTOR), 8);
        for keep in 0..8 {
            let mode = CrashMode::TearLastWrite {
                boundary: SECTOR,
                keep,
            };
            let crashed = fs.crash_at(k, &mode, &mut rng(0));
            let got = content(&crashed, "/db/f").unwrap();
            assert_eq!(got.len(), 4096 + keep * SECTOR);
            assert!(got[..4096].iter().all(|&b| b == 1));
            assert!(got[4096..].iter().all(|&b| b == 2));
            assert_eq!(content(&crashed, "/db/g").unwrap(), b"other");
        }
        // Once synced, the last write cannot tear.
        file.sync_data().unwrap();
        assert_eq!(fs.tear_points(fs.op_count(), SECTOR), 0);
    }

    #[test]
    #[should_panic(expected = "tear points")]
    fn tear_beyond_the_last_point_panics() {
        let (fs, file) = setup();
        file.write_at(&[1; 1000], 0).unwrap();
        let mode = CrashMode::TearLastWrite {
            boundary: SECTOR,
            keep: 2,
        };
        crash(&fs, mode);
    }

    #[test]
    fn random_sectors_keeps_each_unsynced_sector_or_not() {
        let (fs, file) = setup();
        file.write_at(&[b'a'; 2048], 0).unwrap();
        file.sync_data().unwrap();
        // Sectors 2 and 3 overwrite durable data, 4 and 5 extend the file.
        file.write_at(&[b'b'; 2048], 1024).unwrap();

        let mut outcomes = BTreeSet::new();
        for seed in 0..300 {
            let got = content(
                &fs.crash(&CrashMode::RandomSectors, &mut rng(seed)),
                "/db/f",
            )
            .unwrap();
            assert!(
                [2048, 2560, 3072].contains(&got.len()),
                "length {}",
                got.len()
            );
            assert!(
                got[..1024].iter().all(|&b| b == b'a'),
                "synced data is kept"
            );
            let mut outcome = Vec::new();
            for (s, sector) in got.chunks(SECTOR).enumerate().skip(2) {
                let byte = sector[0];
                assert!(sector.iter().all(|&b| b == byte), "sector {s} is whole");
                let allowed: &[u8] = if s < 4 { b"ab" } else { b"b\0" };
                assert!(allowed.contains(&byte), "sector {s} is {byte}");
                outcome.push(byte);
            }
            outcomes.insert(outcome);
        }
        // Both fates for each sector, and zero-filled tails (a lost sector 5
        // under a surviving length) among them.
        for s in 0..2 {
            assert!(outcomes.iter().any(|o| o[s] == b'a') && outcomes.iter().any(|o| o[s] == b'b'));
        }
        assert!(
            outcomes.iter().any(|o| o.len() == 4 && o[3] == 0),
            "zero tail"
        );
        assert!(outcomes.iter().any(|o| o.len() == 2), "growth lost");
        assert!(outcomes.len() > 8);
    }

    #[test]
    fn growth_lost_keeps_overwrites_within_the_durable_length() {
        let (fs, file) = setup();
        file.write_at(&[b'a'; 1000], 0).unwrap();
        file.sync_data().unwrap();
        file.write_at(&[b'b'; 1000], 500).unwrap();
        let fresh = fs.open(p("/db/g"), OpenMode::CreateNew).unwrap();
        fresh.write_at(b"appended", 0).unwrap();

        let crashed = crash(&fs, CrashMode::GrowthLost);
        let got = content(&crashed, "/db/f").unwrap();
        assert_eq!(got.len(), 1000);
        assert!(got[..500].iter().all(|&b| b == b'a'));
        assert!(got[500..].iter().all(|&b| b == b'b'));
        // Directory operations survive; the new file's growth does not.
        assert_eq!(content(&crashed, "/db/g").unwrap(), b"");
    }

    #[test]
    fn replay_reaches_every_state_the_workload_went_through() {
        let mut r = rng(7);
        let fs = SimFs::new();
        let mut snapshots = vec![dump(&crash(&fs, CrashMode::KeepUnsynced))];
        let mut dropped = vec![dump(&crash(&fs, CrashMode::DropUnsynced))];
        fs.create_dir(p("/d")).unwrap();
        snapshots.push(dump(&crash(&fs, CrashMode::KeepUnsynced)));
        dropped.push(dump(&crash(&fs, CrashMode::DropUnsynced)));
        let mut files: Vec<(String, Box<dyn FsFile>)> = Vec::new();
        while fs.op_count() < 300 {
            let before = fs.op_count();
            match r.gen_range(0..10) {
                0 | 1 => {
                    let name = format!("/d/{}", r.gen_range(0..6));
                    if let Ok(file) = fs.open(p(&name), OpenMode::CreateNew) {
                        files.push((name, file));
                    }
                }
                2..=5 if !files.is_empty() => {
                    let (_, file) = &files[r.gen_range(0..files.len())];
                    let len = r.gen_range(1..1500);
                    let byte = r.r#gen::<u8>();
                    file.write_at(&vec![byte; len], r.gen_range(0..3000))
                        .unwrap();
                }
                6 if !files.is_empty() => files[r.gen_range(0..files.len())].1.sync_data().unwrap(),
                7 => fs
                    .sync_dir(p(if r.gen_bool(0.5) { "/d" } else { "/" }))
                    .unwrap(),
                8 => {
                    let from = format!("/d/{}", r.gen_range(0..6));
                    let to = format!("/d/{}", r.gen_range(0..6));
                    let _ = fs.rename(p(&from), p(&to));
                }
                _ => {
                    let _ = fs.remove_file(p(&format!("/d/{}", r.gen_range(0..6))));
                }
            }
            if fs.op_count() > before {
                assert_eq!(fs.op_count(), before + 1, "one call, one operation");
                snapshots.push(dump(&crash(&fs, CrashMode::KeepUnsynced)));
                dropped.push(dump(&crash(&fs, CrashMode::DropUnsynced)));
            }
        }
        let mut replay = fs.replay();
        for k in 0..=fs.op_count() {
            replay.seek(k);
            let context = || format!("boundary {k} after {}", fs.describe_op(k.max(1) - 1));
            assert_eq!(
                dump(&replay.crash(&CrashMode::KeepUnsynced, &mut r)),
                snapshots[k],
                "{}",
                context()
            );
            assert_eq!(
                dump(&replay.crash(&CrashMode::DropUnsynced, &mut r)),
                dropped[k],
                "{}",
                context()
            );
        }
        assert!(!replay.step());
    }

    #[test]
    fn crashed_fs_is_fresh_and_can_crash_again() {
        let (fs, file) = setup();
        file.write_at(b"one", 0).unwrap();
        file.sync_data().unwrap();
        let _lock = fs.lock(p("/db/LOCK")).unwrap();
        fs.fail_nth_sync_data(1);

        let after = crash(&fs, CrashMode::KeepUnsynced);
        assert_eq!(after.op_count(), 0);
        assert_eq!(after.counters(), SimCounters::default());
        let _relock = after.lock(p("/db/LOCK")).unwrap();
        let file = after.open(p("/db/f"), OpenMode::Existing).unwrap();
        file.write_at(b"two", 3).unwrap();
        file.sync_data().unwrap(); // the failure was configured on `fs`
        // Boundary 0 of the new trace is the crashed state, not an empty fs.
        assert_eq!(
            content(
                &after.crash_at(0, &CrashMode::DropUnsynced, &mut rng(0)),
                "/db/f"
            )
            .unwrap(),
            b"one"
        );
        assert_eq!(
            content(&after.crash(&CrashMode::DropUnsynced, &mut rng(0)), "/db/f").unwrap(),
            b"onetwo"
        );
    }

    #[test]
    fn clear_trace_starts_replays_from_the_current_state() {
        let (fs, file) = setup();
        file.write_at(b"setup", 0).unwrap();
        fs.clear_trace();
        assert_eq!(fs.op_count(), 0);
        assert_eq!(fs.tear_points(0, 1), 0);
        file.sync_data().unwrap();
        assert_eq!(
            content(
                &fs.crash_at(0, &CrashMode::DropUnsynced, &mut rng(0)),
                "/db/f"
            )
            .unwrap(),
            b""
        );
        assert_eq!(
            content(
                &fs.crash_at(0, &CrashMode::KeepUnsynced, &mut rng(0)),
                "/db/f"
            )
            .unwrap(),
            b"setup"
        );
        assert_eq!(
            content(
                &fs.crash_at(1, &CrashMode::DropUnsynced, &mut rng(0)),
                "/db/f"
            )
            .unwrap(),
            b"setup"
        );
    }

    #[test]
    fn describe_op_names_each_operation() {
        let (fs, file) = setup();
        file.write_at(b"abc", 10).unwrap();
        fs.fail_nth_sync_data(1);
        file.sync_data().unwrap_err();
        fs.rename(p("/db/f"), p("/db/g")).unwrap();
        fs.remove_file(p("/db/g")).unwrap();
        let described: Vec<String> = (0..fs.op_count()).map(|i| fs.describe_op(i)).collect();
        assert_eq!(
            described,
            [
                "create_dir /db",
                "sync_dir / (Durable)",
                "create /db/f",
                "sync_dir /db (Durable)",
                "write /db/f [10, 13)",
                "sync_data /db/f (Failed)",
                "rename /db/f -> /db/g",
                "remove /db/g",
            ]
        );
    }

    #[test]
    fn lock_is_exclusive_across_clones_until_dropped() {
        let fs = SimFs::new();
        let other = fs.clone();
        let lock = fs.lock(p("/LOCK")).unwrap();
        assert!(fs.exists(p("/LOCK")).unwrap(), "created if missing");
        assert_eq!(
            other.lock(p("/LOCK")).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
        assert_eq!(
            fs.lock(p("/LOCK")).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
        // Another file is another lock; a missing directory is NotFound.
        let _second = fs.lock(p("/LOCK2")).unwrap();
        assert_eq!(
            fs.lock(p("/no/LOCK")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        drop(lock);
        let _again = other.lock(p("/LOCK")).unwrap();
        assert_eq!(fs.op_count(), 2, "only the two creations are recorded");
    }

    #[test]
    fn a_directory_lock_is_exclusive_and_independent_of_the_files_inside() {
        let fs = SimFs::new();
        fs.create_dir(p("/db")).unwrap();
        let lock = fs.lock_dir(p("/db")).unwrap();
        assert_eq!(
            fs.clone().lock_dir(p("/db")).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
        // A lock file inside is another lock.
        let _file = fs.lock(p("/db/LOCK")).unwrap();
        assert_eq!(lock.identity(), Some(fs.identity(p("/db")).unwrap()));
        assert_eq!(
            fs.lock_dir(p("/db/LOCK")).unwrap_err().kind(),
            io::ErrorKind::NotADirectory
        );
        drop(lock);
        let _again = fs.lock_dir(p("/db")).unwrap();
    }

    #[test]
    fn identity_follows_the_file_not_its_name() {
        let (fs, file) = setup();
        let id = file.file_id().unwrap();
        assert_eq!(fs.identity(p("/db/f")).unwrap(), id);
        fs.rename(p("/db/f"), p("/db/g")).unwrap();
        assert_eq!(fs.identity(p("/db/g")).unwrap(), id, "renamed");
        assert_eq!(
            fs.identity(p("/db/f")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        fs.remove_file(p("/db/g")).unwrap();
        let again = fs.open(p("/db/g"), OpenMode::CreateNew).unwrap();
        assert_ne!(again.file_id().unwrap(), id, "a new file under the name");
        // The removed file is still written and read through its handle.
        file.write_at(b"still here", 0).unwrap();
        let mut back = [0u8; 10];
        file.read_exact_at(&mut back, 0).unwrap();
        assert_eq!(&back, b"still here");
    }

    #[test]
    fn open_faults_fail_the_calls_they_concern_and_change_nothing() {
        let (fs, file) = setup();
        let before = fs.op_count();
        fs.fail_opens(OpenFault::TooManyFiles, "");
        let emfile = |e: io::Error| e.raw_os_error();
        assert_eq!(
            fs.open(p("/db/f"), OpenMode::ReadOnly).err().map(emfile),
            Some(Some(24))
        );
        assert_eq!(
            fs.open(p("/db/n"), OpenMode::CreateNew).err().map(emfile),
            Some(Some(24))
        );
        assert_eq!(fs.sync_dir(p("/db")).err().map(emfile), Some(Some(24)));
        assert_eq!(fs.list_dir(p("/db")).err().map(emfile), Some(Some(24)));
        assert_eq!(fs.lock(p("/db/L")).err().map(emfile), Some(Some(24)));
        assert_eq!(fs.lock_dir(p("/db")).err().map(emfile), Some(Some(24)));
        // What needs no new descriptor works.
        file.write_at(b"x", 0).unwrap();
        file.sync_data().unwrap();
        fs.create_dir(p("/db/sub")).unwrap();
        assert!(fs.exists(p("/db/f")).unwrap());
        fs.identity(p("/db/f")).unwrap();
        assert!(
            !fs.exists(p("/db/n")).unwrap(),
            "a failed creation creates nothing"
        );
        assert_eq!(fs.counters().open_faults, 6);
        // ENOSPC concerns creations only, on the paths named.
        fs.fail_opens(OpenFault::NoSpace, "tmp");
        assert_eq!(
            fs.open(p("/db/x.tmp"), OpenMode::CreateNew)
                .err()
                .map(emfile),
            Some(Some(28))
        );
        assert_eq!(
            fs.create_dir(p("/db/tmp")).err().map(emfile),
            Some(Some(28))
        );
        fs.open(p("/db/x"), OpenMode::CreateNew).unwrap();
        fs.open(p("/db/f"), OpenMode::Existing).unwrap();
        fs.clear_faults();
        fs.open(p("/db/x.tmp"), OpenMode::CreateNew).unwrap();
        assert_eq!(fs.counters().open_faults, 8);
        assert_eq!(
            fs.op_count(),
            before + 5,
            "the write, the sync, the directory and the two files made; no failed call"
        );
    }

    #[test]
    fn map_nodes_copies_ranges_inside_the_file() {
        let (_fs, file) = setup();
        let bytes: Vec<u8> = (0..96).collect();
        file.write_at(&bytes, 0).unwrap();
        let all = file.map_nodes(0, 3).unwrap();
        assert_eq!(all.nodes().len(), 3);
        assert_eq!(all.nodes()[2][0], 64);
        let tail = file.map_nodes(32, 2).unwrap();
        assert_eq!(tail.nodes()[0][31], 63);
        assert_eq!(file.map_nodes(96, 0).unwrap().nodes().len(), 0);
        for (offset, nodes) in [(32, 3), (97, 0), (u64::MAX - 10, 1), (0, usize::MAX)] {
            let e = file.map_nodes(offset, nodes).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "{offset} {nodes}");
        }
        // A copy: later writes do not show through it.
        file.write_at(&[0xff; 32], 0).unwrap();
        assert_eq!(all.nodes()[0][0], 0);
    }

    #[test]
    fn reads_writes_and_the_namespace() {
        let (fs, file) = setup();
        file.write_at(b"xy", 4).unwrap();
        assert_eq!(file.len().unwrap(), 6);
        let mut buf = [9u8; 8];
        assert_eq!(file.read_at(&mut buf, 0).unwrap(), 6);
        assert_eq!(&buf[..6], b"\0\0\0\0xy", "the gap is zero-filled");
        assert_eq!(file.read_at(&mut buf, 6).unwrap(), 0);
        assert_eq!(file.read_at(&mut buf, 1000).unwrap(), 0);
        assert_eq!(
            file.read_exact_at(&mut buf, 0).unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
        file.write_at(b"", 100).unwrap();
        assert_eq!(file.len().unwrap(), 6, "an empty write does not extend");

        let kind = |r: io::Result<Box<dyn FsFile>>| r.unwrap_err().kind();
        assert_eq!(
            kind(fs.open(p("/db/f"), OpenMode::CreateNew)),
            io::ErrorKind::AlreadyExists
        );
        assert_eq!(
            kind(fs.open(p("/nodir/f"), OpenMode::CreateNew)),
            io::ErrorKind::NotFound
        );
        assert_eq!(
            kind(fs.open(p("/db/g"), OpenMode::Existing)),
            io::ErrorKind::NotFound
        );
        assert_eq!(
            kind(fs.open(p("/db"), OpenMode::ReadOnly)),
            io::ErrorKind::IsADirectory
        );
        assert_eq!(
            kind(fs.open(p("db/f"), OpenMode::ReadOnly)),
            io::ErrorKind::InvalidInput
        );
        assert_eq!(
            kind(fs.open(p("/db/f/x"), OpenMode::CreateNew)),
            io::ErrorKind::NotADirectory
        );
        assert_eq!(
            fs.create_dir(p("/db")).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        assert_eq!(
            fs.create_dir(p("/a/b")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        assert_eq!(
            fs.remove_file(p("/db")).unwrap_err().kind(),
            io::ErrorKind::IsADirectory
        );
        assert_eq!(
            fs.remove_file(p("/db/zz")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        assert_eq!(
            fs.rename(p("/db/zz"), p("/db/y")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        assert_eq!(
            fs.sync_dir(p("/db/f")).unwrap_err().kind(),
            io::ErrorKind::NotADirectory
        );
        assert_eq!(
            fs.list_dir(p("/db/f")).unwrap_err().kind(),
            io::ErrorKind::NotADirectory
        );

        let read_only = fs.open(p("/db/f"), OpenMode::ReadOnly).unwrap();
        assert_eq!(
            read_only.write_at(b"no", 0).unwrap_err().kind(),
            io::ErrorKind::PermissionDenied
        );
        read_only.sync_data().unwrap();

        for name in ["c", "a", "b"] {
            fs.open(&Path::new("/db").join(name), OpenMode::CreateNew)
                .unwrap();
        }
        assert_eq!(fs.list_dir(p("/db")).unwrap(), ["a", "b", "c", "f"]);
        assert_eq!(fs.list_dir(p("/")).unwrap(), ["db"]);
        assert!(fs.exists(p("/")).unwrap());
        assert!(fs.exists(p("/db/a")).unwrap());
        assert!(!fs.exists(p("/db/zz")).unwrap());
        assert!(!fs.exists(p("/db/f/x")).unwrap());
        fs.rename(p("/db/a"), p("/db/b")).unwrap();
        assert_eq!(fs.list_dir(p("/db")).unwrap(), ["b", "c", "f"]);
        fs.rename(p("/db/b"), p("/db/b")).unwrap();
        assert_eq!(
            fs.rename(p("/db/b"), p("/db")).unwrap_err().kind(),
            io::ErrorKind::IsADirectory
        );
    }

    #[test]
    fn injected_sync_data_failure_loses_the_unsynced_writes_for_good() {
        let (fs, file) = setup();
        fs.fail_nth_sync_data(2);
        file.write_at(b"A", 0).unwrap();
        file.sync_data().unwrap();
        file.write_at(b"B", 1).unwrap();
        let e = file.sync_data().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::Other);
        assert_eq!(e.to_string(), "injected fsync failure");
        // The retry succeeds, but as on Linux it does not write B.
        file.sync_data().unwrap();
        assert_eq!(content(&fs, "/db/f").unwrap(), b"AB");
        assert_eq!(
            content(&crash(&fs, CrashMode::DropUnsynced), "/db/f").unwrap(),
            b"A"
        );
        assert_eq!(
            content(&crash(&fs, CrashMode::KeepUnsynced), "/db/f").unwrap(),
            b"AB"
        );
        // A write after the failure is made durable by the next sync...
        file.write_at(b"C", 2).unwrap();
        file.sync_data().unwrap();
        let got = content(&crash(&fs, CrashMode::DropUnsynced), "/db/f").unwrap();
        assert_eq!(got, b"A\0C");
        // ...and so is writing B again.
        file.write_at(b"B", 1).unwrap();
        file.sync_data().unwrap();
        assert_eq!(
            content(&crash(&fs, CrashMode::DropUnsynced), "/db/f").unwrap(),
            b"ABC"
        );
        assert_eq!(fs.counters().sync_data_calls, 5);
    }

    #[test]
    fn injected_sync_dir_failure_leaves_entries_unsynced() {
        let fs = SimFs::new();
        fs.fail_nth_sync_dir(1);
        fs.fail_nth_sync_dir(3);
        fs.create_dir(p("/db")).unwrap();
        assert_eq!(
            fs.sync_dir(p("/")).unwrap_err().to_string(),
            "injected fsync failure"
        );
        assert!(
            !crash(&fs, CrashMode::DropUnsynced)
                .exists(p("/db"))
                .unwrap()
        );
        fs.sync_dir(p("/")).unwrap();
        assert!(
            crash(&fs, CrashMode::DropUnsynced)
                .exists(p("/db"))
                .unwrap()
        );
        fs.sync_dir(p("/db")).unwrap_err();
        fs.clear_faults();
        fs.sync_dir(p("/db")).unwrap();
        assert_eq!(fs.counters().sync_dir_calls, 4);
    }

    #[test]
    fn storage_full_after_the_write_budget() {
        let (fs, file) = setup();
        fs.set_write_budget(Some(10), false);
        file.write_at(&[1; 6], 0).unwrap();
        let e = file.write_at(&[2; 6], 6).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        assert_eq!(file.len().unwrap(), 6, "nothing written");
        file.write_at(&[3; 4], 6).unwrap();
        assert_eq!(
            file.write_at(&[4], 10).unwrap_err().kind(),
            io::ErrorKind::StorageFull
        );
        assert_eq!(file.len().unwrap(), 10);

        // Short writes: the prefix that fits, then the error.
        fs.set_write_budget(Some(5), true);
        assert_eq!(
            file.write_at(&[5; 8], 10).unwrap_err().kind(),
            io::ErrorKind::StorageFull
        );
        assert_eq!(file.len().unwrap(), 15);
        assert_eq!(
            file.write_at(&[6], 15).unwrap_err().kind(),
            io::ErrorKind::StorageFull
        );

        fs.set_write_budget(None, false);
        file.write_at(&[7], 15).unwrap();
        let counters = fs.counters();
        assert_eq!(counters.write_calls, 7);
        assert_eq!(counters.bytes_written, 6 + 4 + 5 + 1);
    }

    #[test]
    fn lying_sync_loses_everything_at_a_crash() {
        let fs = SimFs::new();
        fs.set_lying_sync(true);
        fs.create_dir(p("/db")).unwrap();
        fs.sync_dir(p("/")).unwrap();
        let file = fs.open(p("/db/f"), OpenMode::CreateNew).unwrap();
        fs.sync_dir(p("/db")).unwrap();
        file.write_at(b"acknowledged", 0).unwrap();
        file.sync_data().unwrap();
        assert_eq!(content(&fs, "/db/f").unwrap(), b"acknowledged");
        for k in 0..=fs.op_count() {
            assert!(
                dump(&fs.crash_at(k, &CrashMode::DropUnsynced, &mut rng(0))).is_empty(),
                "boundary {k}"
            );
        }
        // Turning it off makes the next syncs real.
        fs.set_lying_sync(false);
        fs.sync_dir(p("/")).unwrap();
        fs.sync_dir(p("/db")).unwrap();
        file.sync_data().unwrap();
        assert_eq!(
            content(&crash(&fs, CrashMode::DropUnsynced), "/db/f").unwrap(),
            b"acknowledged"
        );
    }

    #[test]
    fn clones_share_state_and_debug_is_a_summary() {
        let fs = SimFs::default();
        let clone = fs.clone();
        clone.create_dir(p("/x")).unwrap();
        assert!(fs.exists(p("/x")).unwrap());
        let debug = format!("{fs:?}");
        assert!(debug.contains("ops: 1"), "{debug}");
    }
}
