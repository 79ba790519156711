//! The live file system behind [`SimFs`]: the disk model, its trace,
//! the injected faults and the locks; open files and held locks.

use super::*;

// ---------------------------------------------------------------------------
// The live file system: model + trace + faults + locks.
// ---------------------------------------------------------------------------

pub(super) struct Shared {
    /// The state the trace starts from (empty, or what a crash left).
    pub(super) initial: Arc<Model>,
    pub(super) model: Model,
    pub(super) trace: Vec<Op>,
    pub(super) faults: Faults,
    pub(super) counters: SimCounters,
    /// Inodes locked by a live [`SimLock`].
    pub(super) locks: BTreeSet<Ino>,
    /// Inodes with shared locks, and how many holders each has.
    pub(super) shared_locks: BTreeMap<Ino, usize>,
    /// A logical clock, one tick per recorded operation, and the tick of
    /// each inode's last change: what a file's identity reports as its
    /// change time (a fresh `SimFs`, as a crash leaves one, starts again
    /// at 0, so an identity taken before a crash never matches after it).
    pub(super) clock: i64,
    pub(super) changed: BTreeMap<Ino, i64>,
}

#[derive(Debug, Default)]
pub(super) struct Faults {
    /// Call numbers (1-based, counted over the whole life of the SimFs) of
    /// `sync_data` calls to fail.
    pub(super) fail_sync_data: BTreeSet<u64>,
    pub(super) fail_sync_dir: BTreeSet<u64>,
    /// Bytes `write_at` may still write; `None` is unlimited.
    pub(super) write_budget: Option<u64>,
    /// Whether a write that does not fit writes what fits before failing.
    pub(super) short_write: bool,
    pub(super) lying_sync: bool,
    /// Calls on paths containing the string fail with the fault.
    pub(super) open: Option<(OpenFault, String)>,
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
    pub(super) fn from_model(model: Model) -> Self {
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

    pub(super) fn record(&mut self, path: Arc<str>, kind: OpKind) {
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
    pub(super) fn create(&mut self, path: &Path, dir: bool) -> io::Result<Ino> {
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
    pub(super) fn open_fault(&mut self, path: &Path, needs: Needs) -> io::Result<()> {
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
    pub(super) fn sync_outcome(fail: &mut BTreeSet<u64>, lying: bool, call: u64) -> SyncOutcome {
        if fail.remove(&call) {
            SyncOutcome::Failed
        } else if lying {
            SyncOutcome::Lied
        } else {
            SyncOutcome::Durable
        }
    }
}

pub(super) fn sync_failure() -> io::Error {
    io::Error::other("injected fsync failure")
}

/// An open file of a [`SimFs`].
pub(super) struct SimFile {
    pub(super) shared: Arc<Mutex<Shared>>,
    pub(super) ino: Ino,
    /// The path it was opened as, for messages and the trace.
    pub(super) path: Arc<str>,
    pub(super) writable: bool,
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
pub(super) struct SimNodes(Vec<Hash>);

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

    fn identity(&self) -> io::Result<FileIdentity> {
        let shared = self.shared.lock();
        let changed = shared.changed.get(&self.ino).copied().unwrap_or(0);
        Ok(FileIdentity {
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
pub(super) struct SimLock {
    pub(super) shared: Arc<Mutex<Shared>>,
    pub(super) ino: Ino,
    pub(super) path: String,
    /// Taken shared by [`Fs::lock_existing`].
    pub(super) is_shared: bool,
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
