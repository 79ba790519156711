//! Creating and opening a store: the writer's locks (on the directory
//! itself, and on `LOCK` for older versions), the open lock on
//! `cairn.meta` that orders a writer's recovery and read-only opens, the
//! stored meta and its check against the caller's config. Recovery proper
//! is in `recovery.rs`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_core::LeanImt;

use super::{Access, Store};
use crate::checkpoint::{self, Checkpoints};
use crate::config::StoreConfig;
use crate::error::{Result, StoreError};
use crate::format::StoreMeta;
use crate::fs::{Fs, FsLock, OpenMode};
use crate::heads;
use crate::layout::Layout;
use crate::log;

impl Store {
    /// Creates a store in `dir` (created if missing; must be empty).
    pub fn create(fs: Arc<dyn Fs>, dir: &Path, config: StoreConfig) -> Result<Store> {
        if !(10..=30).contains(&config.log_shift) {
            return Err(StoreError::Config(format!(
                "log_shift {} outside 10..=30",
                config.log_shift
            )));
        }
        if let Some(depth) = config.tree.max_depth
            && !(1..=u32::from(u8::MAX)).contains(&depth)
        {
            // Stored in one byte, 0 meaning "no limit".
            return Err(StoreError::Config(format!(
                "max depth {depth} outside 1..=255"
            )));
        }
        config
            .tree
            .check()
            .map_err(|e| StoreError::Config(e.to_string()))?;
        if fs.exists(dir).map_err(|e| StoreError::io("stat", dir, e))? {
            let entries = fs
                .list_dir(dir)
                .map_err(|e| StoreError::io("list", dir, e))?;
            if entries.iter().any(|name| name != Layout::LOCK) {
                return Err(StoreError::NotEmpty { path: dir.into() });
            }
        } else {
            fs.create_dir(dir)
                .map_err(|e| StoreError::io("create directory", dir, e))?;
            if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                fs.sync_dir(parent)
                    .map_err(|e| StoreError::io("fsync", parent, e))?;
            }
        }
        let locks = take_lock(&*fs, dir)?;
        let lazy = config.flags & Layout::FLAG_LAZY_FILES != 0;
        if !lazy {
            for sub in [Layout::LOG_DIR, Layout::LEVELS_DIR] {
                let path = dir.join(sub);
                fs.create_dir(&path)
                    .map_err(|e| StoreError::io("create directory", &path, e))?;
            }
        }
        let meta = StoreMeta {
            tree: config.tree,
            log_shift: config.log_shift,
            store_id: rand::random::<u64>() | 1,
            flags: config.flags | Layout::FLAG_FORMAT_2,
            mutable: config.mutable,
        };
        // The first log file and the checkpoint exist before `cairn.meta`
        // makes the directory a store: from then on a store without them
        // is damaged, not new. A store created without its files makes
        // them at its first write (`lazy.rs`), holding meanwhile in memory
        // the checkpoint it will publish.
        let layout = Layout::new(dir, &meta);
        let mut checkpoints = Checkpoints::default();
        let log = if lazy {
            checkpoints.last = Some(checkpoint::initial());
            log::unmade(Arc::clone(&fs), &layout, meta)
        } else {
            let log = log::create(Arc::clone(&fs), &layout, meta)?;
            checkpoint::create(&*fs, dir, &meta, &mut checkpoints)?;
            log
        };
        crate::replace::replace_file(&*fs, dir, Layout::META_TMP, Layout::META, |file, tmp| {
            file.write_at(&meta.encode(), 0)
                .map_err(|e| StoreError::io("write", tmp, e))
        })?;
        let heads_writer = heads::new_writer(Arc::clone(&fs), dir, meta);
        let mut store = Store::start(
            fs,
            dir,
            meta,
            config,
            LeanImt::new(meta.tree),
            log,
            (Vec::new(), heads_writer),
            checkpoints,
            false,
        );
        store.adopt(locks);
        Ok(store)
    }

    /// Opens the store in `dir`. `config.tree` and `config.log_shift` must
    /// equal what the store was created with.
    pub fn open(fs: Arc<dyn Fs>, dir: &Path, config: StoreConfig) -> Result<Store> {
        let meta_path = require_store(&*fs, dir)?;
        let locks = take_lock(&*fs, dir)?;
        // Recovery repairs (removes leftovers, zeroes stale records): no
        // read-only open may be part way through reading meanwhile.
        let recovering = take_open_lock(&*fs, &meta_path, false)?;
        let mut store = Store::recover(fs, dir, config, Access::Write)?;
        store.migrate()?;
        drop(recovering);
        store.adopt(locks);
        Ok(store)
    }

    /// Holds the writer's locks for the store's life, and records what
    /// the names its file checks watch name now (`files.rs`).
    fn adopt(&mut self, locks: WriterLocks) {
        let inner = &self.inner;
        let dir_id = locks.dir.identity();
        *inner.lock_file.lock() = Some(locks.file);
        self._lock = Some(locks.dir);
        inner.upkeep.lock().expected.dir = dir_id;
        inner.hold_meta();
        inner.checkpoint_published();
    }

    /// Opens the store in `dir` read-only, beside a writer in another
    /// process (or this one) if one runs: it sees the durable state as of
    /// its open and never changes a byte in the directory (no repair, no
    /// removal, no lock file created). Appends, checkpoints, rollbacks
    /// and finalizations are refused with [`StoreError::ReadOnly`]; no
    /// background thread runs. Waits while a writer's open recovers the
    /// directory. See docs/file-format.md, "Read-only opens".
    pub fn open_read_only(fs: Arc<dyn Fs>, dir: &Path, config: StoreConfig) -> Result<Store> {
        let meta_path = require_store(&*fs, dir)?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let opening = take_open_lock(&*fs, &meta_path, true)?;
            let writer_live = writer_present(&*fs, dir)?;
            let access = Access::ReadOnly { writer_live };
            let result =
                Store::recover(Arc::clone(&fs), dir, config.clone(), access).and_then(|store| {
                    // A rollback published since the checkpoint was read
                    // may have rewritten bytes the open read past its
                    // new end: then the open starts again.
                    let loaded = store.checkpoint_epoch();
                    let now =
                        checkpoint::read(&*fs, dir, &store.inner.meta)?.map_or(0, |c| c.epoch);
                    Ok((store, loaded == now))
                });
            drop(opening);
            match result {
                Ok((store, true)) => return Ok(store),
                // Only a live writer can make an open fail or change under
                // it; without one, the answer is final.
                Err(error) if !writer_live || attempt >= READ_ONLY_ATTEMPTS => return Err(error),
                Ok((_, false)) if attempt >= READ_ONLY_ATTEMPTS => {
                    return Err(StoreError::Busy {
                        path: dir.into(),
                        attempts: attempt,
                    });
                }
                _ => {}
            }
        }
    }

    /// The rollback epoch of the checkpoint this store opened from or
    /// last published.
    fn checkpoint_epoch(&self) -> u64 {
        self.inner
            .checkpoints
            .lock()
            .last
            .as_ref()
            .map_or(0, |c| c.epoch)
    }

    /// Opens the store in `dir`, creating it if the directory holds none.
    pub fn open_or_create(fs: Arc<dyn Fs>, dir: &Path, config: StoreConfig) -> Result<Store> {
        if fs
            .exists(&dir.join(Layout::META))
            .map_err(|e| StoreError::io("stat", dir, e))?
        {
            Store::open(fs, dir, config)
        } else {
            Store::create(fs, dir, config)
        }
    }
}

/// How long `take_lock` retries a held lock before reporting it.
const LOCK_WAIT: Duration = Duration::from_millis(500);

/// A writer's locks: the directory's, which no removal or replacement of
/// a file inside it can defeat, and `LOCK`'s, which older versions take
/// (so that either version excludes the other).
struct WriterLocks {
    dir: Box<dyn FsLock>,
    file: Box<dyn FsLock>,
}

/// Takes the writer's locks (the directory's, then `LOCK`'s), retrying
/// for [`LOCK_WAIT`] while either is held.
///
/// Why retry: the lock is an `flock` on an open file, and a child forked
/// by any thread of this process holds a copy of every open file until it
/// calls exec. A store closed while another thread spawns a process can
/// therefore stay locked for a moment after `close` returned (seen in the
/// test suite: a close-then-open racing the kill -9 test's spawns). A
/// handle that really holds the directory is still reported, after the
/// wait: [`StoreError::OpenInProcess`] when it is one of this process
/// (the file system says so with `ResourceBusy`), [`StoreError::Locked`]
/// otherwise.
fn take_lock(fs: &dyn Fs, dir: &Path) -> Result<WriterLocks> {
    let started = Instant::now();
    let dir_lock = retry_lock(started, dir, dir, || fs.lock_dir(dir))?;
    let path = dir.join(Layout::LOCK);
    let file = retry_lock(started, dir, &path, || fs.lock(&path))?;
    Ok(WriterLocks {
        dir: dir_lock,
        file,
    })
}

/// The writer's locks on the store in `dir`, for a caller that works on
/// its files without opening it (a salvage): held until dropped.
pub(crate) fn take_writer_locks(fs: &dyn Fs, dir: &Path) -> Result<[Box<dyn FsLock>; 2]> {
    let WriterLocks { dir, file } = take_lock(fs, dir)?;
    Ok([dir, file])
}

/// `take` until it succeeds, retrying while the lock is held until
/// [`LOCK_WAIT`] after `started`; `path` is what it locks.
fn retry_lock(
    started: Instant,
    dir: &Path,
    path: &Path,
    take: impl Fn() -> std::io::Result<Box<dyn FsLock>>,
) -> Result<Box<dyn FsLock>> {
    let mut pause = Duration::from_millis(1);
    loop {
        match take() {
            Ok(lock) => return Ok(lock),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::ResourceBusy
                ) =>
            {
                if started.elapsed() >= LOCK_WAIT {
                    return Err(match e.kind() {
                        std::io::ErrorKind::ResourceBusy => {
                            StoreError::OpenInProcess { path: dir.into() }
                        }
                        _ => StoreError::Locked { path: path.into() },
                    });
                }
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(e) => return Err(StoreError::io("lock", path, e)),
        }
    }
}

/// How long an open waits for the other kind of open to finish with the
/// store's `cairn.meta` lock: a writer's recovery (for a read-only open),
/// read-only opens part way through loading (for a writer's recovery).
const OPEN_WAIT: Duration = Duration::from_secs(60);

/// How many times a read-only open starts again when a live writer's
/// rollback changed the files under it.
const READ_ONLY_ATTEMPTS: u32 = 8;

/// Takes the open lock on `cairn.meta` (shared for a read-only open,
/// exclusive for a writer's recovery), waiting up to [`OPEN_WAIT`].
///
/// Why `cairn.meta`: every store has it, it is never written after
/// creation, and a read-only open can lock it without creating anything.
/// Writers exclude each other with `LOCK` for their whole life; this lock
/// is held only while opening, so readers never block a running writer.
fn take_open_lock(fs: &dyn Fs, meta_path: &Path, shared: bool) -> Result<Box<dyn FsLock>> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match fs.lock_existing(meta_path, shared) {
            Ok(lock) => return Ok(lock),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if started.elapsed() >= OPEN_WAIT {
                    return Err(StoreError::OpenBusy {
                        path: meta_path.into(),
                        waited_seconds: OPEN_WAIT.as_secs(),
                        waiting_for: if shared {
                            "a writer's recovery"
                        } else {
                            "read-only opens"
                        },
                    });
                }
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(20));
            }
            Err(e) => return Err(StoreError::io("lock", meta_path, e)),
        }
    }
}

/// Whether a writer holds `dir` right now: its directory lock, or `LOCK`
/// (an older version's writer takes only that), probed with an exclusive
/// lock released at once. Asked under the shared open lock: no writer can
/// finish opening meanwhile, so "no" stays true while the read-only open
/// reads.
fn writer_present(fs: &dyn Fs, dir: &Path) -> Result<bool> {
    let held = |e: &std::io::Error| {
        matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::ResourceBusy
        )
    };
    match fs.lock_dir(dir) {
        Ok(_probe) => {}
        Err(e) if held(&e) => return Ok(true),
        Err(e) => return Err(StoreError::io("lock", dir, e)),
    }
    let path = dir.join(Layout::LOCK);
    match fs.lock_existing(&path, false) {
        Ok(_probe) => Ok(false),
        Err(e) if held(&e) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(StoreError::io("lock", &path, e)),
    }
}

/// The path of `dir`'s `cairn.meta`, if `dir` holds a store.
fn require_store(fs: &dyn Fs, dir: &Path) -> Result<PathBuf> {
    require_dir(fs, dir)?;
    let meta_path = dir.join(Layout::META);
    if !fs
        .exists(&meta_path)
        .map_err(|e| StoreError::io("stat", &meta_path, e))?
    {
        return Err(StoreError::NotAStore { path: dir.into() });
    }
    Ok(meta_path)
}

/// [`StoreError::Missing`] unless `dir` exists.
fn require_dir(fs: &dyn Fs, dir: &Path) -> Result<()> {
    match fs.exists(dir) {
        Ok(true) => Ok(()),
        Ok(false) => Err(StoreError::Missing { path: dir.into() }),
        Err(e) => Err(StoreError::io("stat", dir, e)),
    }
}

pub(super) fn read_meta(fs: &dyn Fs, path: &Path) -> Result<StoreMeta> {
    let file = fs
        .open(path, OpenMode::ReadOnly)
        .map_err(|e| StoreError::io("open", path, e))?;
    let mut bytes = vec![0u8; StoreMeta::LEN];
    file.read_exact_at(&mut bytes, 0)
        .map_err(|e| StoreError::corrupt(path, 0, e))?;
    // A version 2 meta (a tree of another kind than Lean) is longer.
    let len = StoreMeta::len_of(&bytes);
    if len > bytes.len() {
        bytes.resize(len, 0);
        file.read_exact_at(&mut bytes, 0)
            .map_err(|e| StoreError::corrupt(path, 0, e))?;
    }
    StoreMeta::decode(&bytes).map_err(|why| StoreError::corrupt(path, 0, why))
}

pub(super) fn check_config(meta: &StoreMeta, config: &StoreConfig) -> Result<()> {
    let stored = meta.tree;
    let given = config.tree;
    if stored.arity != given.arity {
        return Err(StoreError::ConfigMismatch {
            field: "arity",
            stored: stored.arity.get().to_string(),
            given: given.arity.get().to_string(),
        });
    }
    if stored.hash != given.hash {
        return Err(StoreError::ConfigMismatch {
            field: "hash",
            stored: format!("{:?}", stored.hash),
            given: format!("{:?}", given.hash),
        });
    }
    if stored.max_depth != given.max_depth {
        return Err(StoreError::ConfigMismatch {
            field: "max depth",
            stored: format!("{:?}", stored.max_depth),
            given: format!("{:?}", given.max_depth),
        });
    }
    if stored.kind != given.kind {
        return Err(StoreError::ConfigMismatch {
            field: "tree kind",
            stored: format!("{:?}", stored.kind),
            given: format!("{:?}", given.kind),
        });
    }
    if meta.mutable != config.mutable {
        let word = |shape: Option<cairn_core::TreeKind>| match shape {
            None => "append-only".to_owned(),
            Some(shape) => format!("mutable {}", shape.name()),
        };
        return Err(StoreError::ConfigMismatch {
            field: "mutability",
            stored: word(meta.mutable),
            given: word(config.mutable),
        });
    }
    // The format bits are the store's own record, not settings.
    let settings = |flags: u64| flags & !Layout::FLAGS_OF_THE_STORE;
    if settings(meta.flags) != settings(config.flags) {
        return Err(StoreError::ConfigMismatch {
            field: "flags",
            stored: format!("{:#x}", settings(meta.flags)),
            given: format!("{:#x}", settings(config.flags)),
        });
    }
    if meta.log_shift != config.log_shift {
        return Err(StoreError::ConfigMismatch {
            field: "log2 leaves per log file",
            stored: meta.log_shift.to_string(),
            given: config.log_shift.to_string(),
        });
    }
    Ok(())
}

/// The stored configuration of the store in `dir` (to open it without
/// knowing it).
pub fn stored_config(fs: &dyn Fs, dir: &Path) -> Result<StoreMeta> {
    require_dir(fs, dir)?;
    let path = dir.join(Layout::META);
    if !fs
        .exists(&path)
        .map_err(|e| StoreError::io("stat", &path, e))?
    {
        return Err(StoreError::NotAStore { path: dir.into() });
    }
    read_meta(fs, &path)
}
