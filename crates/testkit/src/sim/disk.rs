//! The disk model of [`SimFs`]: the namespace and the contents, durable
//! and not, and the trace of operations a crash state is replayed from.

use super::*;

// ---------------------------------------------------------------------------
// The disk model: the namespace and the contents, durable and not.
// ---------------------------------------------------------------------------

/// The state the trace is replayed on: everything that survives a crash in
/// some mode, and nothing that does not (locks, faults and counters live in
/// [`Shared`]).
#[derive(Clone)]
pub(super) struct Model {
    pub(super) nodes: BTreeMap<Ino, Node>,
    pub(super) next_ino: Ino,
    /// How many operations were applied since this model was created from
    /// scratch; numbers the writes so a replay tears the same one.
    pub(super) applied: u64,
    /// The serial number and inode of the last write applied, the candidate
    /// for [`CrashMode::TearLastWrite`].
    pub(super) last_write: Option<(u64, Ino)>,
}

#[derive(Clone)]
pub(super) enum Node {
    File(FileNode),
    Dir(DirNode),
}

#[derive(Clone, Default)]
pub(super) struct FileNode {
    /// The content before the first write in `pending`, all of it durable.
    pub(super) base: Vec<u8>,
    /// Writes not yet folded into `base`, in order. A synced write stays here
    /// (marked durable) while an earlier one is lost: replaying them in order
    /// is the only way to build every crash state correctly when they overlap.
    pub(super) pending: Vec<PendingWrite>,
    /// What reads see: `base` with every pending write applied.
    pub(super) current: Vec<u8>,
}

#[derive(Clone)]
pub(super) struct PendingWrite {
    pub(super) serial: u64,
    pub(super) offset: u64,
    pub(super) data: Arc<[u8]>,
    pub(super) state: WriteState,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum WriteState {
    /// Written, not synced yet.
    Unsynced,
    /// Made durable by a successful sync.
    Durable,
    /// Was unsynced when a sync failed: no later sync makes it durable.
    Lost,
}

#[derive(Clone, Default)]
pub(super) struct DirNode {
    /// The entries reads see.
    pub(super) entries: BTreeMap<String, Ino>,
    /// The entries as of the last successful `sync_dir`.
    pub(super) durable: BTreeMap<String, Ino>,
    /// The operations since, each applied atomically (a rename within the
    /// directory is one operation of two changes).
    pub(super) pending: Vec<DirOp>,
}

/// Entry changes applied together: `Some(ino)` sets a name, `None` removes it.
pub(super) type DirOp = Vec<(String, Option<Ino>)>;

/// A recorded operation: its effect, and the path it was called with (for
/// [`SimFs::describe_op`] only; the effect names inodes, so that a write
/// through a handle whose file was renamed replays correctly).
#[derive(Clone)]
pub(super) struct Op {
    pub(super) path: Arc<str>,
    pub(super) kind: OpKind,
}

#[derive(Clone)]
pub(super) enum OpKind {
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
pub(super) enum SyncOutcome {
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
pub(super) fn write_into(buf: &mut Vec<u8>, offset: u64, data: &[u8]) {
    // Offsets were checked against MAX_FILE_LEN when the write was made.
    let start = to_usize(offset);
    let end = start + data.len();
    if buf.len() < end {
        buf.resize(end, 0);
    }
    buf[start..end].copy_from_slice(data);
}

pub(super) fn apply_dir_op(entries: &mut BTreeMap<String, Ino>, op: &DirOp) {
    for (name, target) in op {
        match target {
            Some(ino) => entries.insert(name.clone(), *ino),
            None => entries.remove(name),
        };
    }
}

/// How many `boundary`-aligned offsets lie in `[offset, offset + len)`.
pub(super) fn tear_points_of(offset: u64, len: usize, boundary: usize) -> usize {
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
    pub(super) fn end(&self) -> u64 {
        self.offset + self.data.len() as u64
    }

    pub(super) fn durable(&self) -> bool {
        self.state == WriteState::Durable
    }
}

impl FileNode {
    pub(super) fn with_content(content: Vec<u8>) -> Self {
        FileNode {
            current: content.clone(),
            base: content,
            pending: Vec::new(),
        }
    }

    pub(super) fn sync(&mut self, outcome: SyncOutcome) {
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

    pub(super) fn durable_len(&self) -> u64 {
        self.pending
            .iter()
            .filter(|w| w.durable())
            .fold(self.base.len() as u64, |len, w| len.max(w.end()))
    }

    /// The content this file has after a crash in `mode`. `torn` is the
    /// serial of the write to tear and the file offset to cut it at.
    pub(super) fn crash_content<R: Rng + ?Sized>(
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

    pub(super) fn random_sectors<R: Rng + ?Sized>(&self, rng: &mut R) -> Vec<u8> {
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
    pub(super) fn change(&mut self, op: DirOp) {
        apply_dir_op(&mut self.entries, &op);
        self.pending.push(op);
    }

    pub(super) fn sync(&mut self) {
        self.durable = self.entries.clone();
        self.pending.clear();
    }
}

pub(super) fn invalid(path: &Path, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{}: {why}", path.display()),
    )
}

pub(super) fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{}: no such file or directory", path.display()),
    )
}

/// The names along an absolute path.
pub(super) fn components(path: &Path) -> io::Result<Vec<&str>> {
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
    pub(super) fn new() -> Self {
        let mut nodes = BTreeMap::new();
        nodes.insert(ROOT, Node::Dir(DirNode::default()));
        Model {
            nodes,
            next_ino: ROOT + 1,
            applied: 0,
            last_write: None,
        }
    }

    pub(super) fn node(&self, ino: Ino) -> &Node {
        &self.nodes[&ino]
    }

    pub(super) fn is_dir(&self, ino: Ino) -> bool {
        matches!(self.node(ino), Node::Dir(_))
    }

    pub(super) fn file(&self, ino: Ino) -> &FileNode {
        match self.node(ino) {
            Node::File(file) => file,
            Node::Dir(_) => unreachable!("inode {ino} is a directory"),
        }
    }

    pub(super) fn file_mut(&mut self, ino: Ino) -> &mut FileNode {
        match self.nodes.get_mut(&ino) {
            Some(Node::File(file)) => file,
            _ => unreachable!("inode {ino} is not a file"),
        }
    }

    pub(super) fn dir(&self, ino: Ino) -> &DirNode {
        match self.node(ino) {
            Node::Dir(dir) => dir,
            Node::File(_) => unreachable!("inode {ino} is a file"),
        }
    }

    pub(super) fn dir_mut(&mut self, ino: Ino) -> &mut DirNode {
        match self.nodes.get_mut(&ino) {
            Some(Node::Dir(dir)) => dir,
            _ => unreachable!("inode {ino} is not a directory"),
        }
    }

    /// Follows `names` from the root.
    pub(super) fn walk(&self, path: &Path, names: &[&str]) -> io::Result<Ino> {
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

    pub(super) fn resolve(&self, path: &Path) -> io::Result<Ino> {
        self.walk(path, &components(path)?)
    }

    /// The directory that holds (or would hold) `path`, and the name in it.
    pub(super) fn resolve_parent(&self, path: &Path) -> io::Result<(Ino, String)> {
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

    pub(super) fn lookup(&self, dir: Ino, name: &str) -> Option<Ino> {
        self.dir(dir).entries.get(name).copied()
    }

    /// Applies a validated operation. The live file system and every replay
    /// go through here, so a replay reaches exactly the states the workload
    /// went through.
    pub(super) fn apply(&mut self, op: &Op) {
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
    pub(super) fn tearable_write(&self) -> Option<&PendingWrite> {
        let (serial, ino) = self.last_write?;
        self.file(ino)
            .pending
            .iter()
            .find(|w| w.serial == serial && !w.durable())
    }

    pub(super) fn tear_points(&self, boundary: usize) -> usize {
        self.tearable_write()
            .map_or(0, |w| tear_points_of(w.offset, w.data.len(), boundary))
    }

    /// The state a power loss in `mode` leaves.
    pub(super) fn crash<R: Rng + ?Sized>(&self, mode: &CrashMode, rng: &mut R) -> Model {
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
