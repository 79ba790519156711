//! The store: a tree whose appends are made durable by group commit, with
//! checkpoints, tiering and recovery.
//!
//! Locks, in the order they may nest: `log` (the flush lock: whoever
//! writes to the log holds it), then `tree` (the writer lock: appends take
//! it for a memory copy, never for I/O), then `durable`. Checkpoints hold
//! `checkpoints` for their whole duration, `log` and `tree` only to take
//! their snapshot.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use cairn_core::level::{Level, NodeSource, SEGMENT_LEN};
use cairn_core::{CheckedLeaves, Hash, LeanImt, Snapshot, TreeError, TreeHead};
use parking_lot::{Condvar, Mutex};

use crate::checkpoint::{self, CHECKPOINT_TMP, Checkpoints, LEVELS_DIR, Marks};
use crate::config::StoreConfig;
use crate::error::{Result, StoreError};
use crate::format::{self, CheckpointMeta, HEADER_LEN, LogPosition, StoreMeta};
use crate::fs::{Fs, FsFile, FsLock, MappedNodes, OpenMode};
use crate::heads::{self, Heads, HeadsWriter};
use crate::log::{self, LogWriter};

/// What the store is: the file that makes a directory a store.
pub const META: &str = "cairn.meta";
/// `cairn.meta` being written at creation.
pub const META_TMP: &str = "cairn.meta.tmp";
/// The writers' lock file.
pub const LOCK: &str = "LOCK";
/// The directory of the log files (level 0).
pub const LOG_DIR: &str = "log";

/// A durable n-ary LeanIMT in a directory (without the nullifier set of
/// `cairn_db::Db`: repeated values are accepted).
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use cairn_core::{Arity, HashKind, TreeConfig};
/// use cairn_store::{StdFs, Store, StoreConfig, StoreError};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("commitments");
/// let config = StoreConfig::new(TreeConfig::new(Arity::new(4)?, HashKind::Blake3));
/// let store = Store::create(Arc::new(StdFs), &path, config.clone())?;
/// let appended = store.append_batch(&[[7; 32], [8; 32], [9; 32]])?;
/// appended.token.wait(Duration::from_secs(5))?;   // one group commit
/// store.checkpoint()?;                            // upper levels to disk: a fast reopen
///
/// // One handle per directory: a second open waits briefly, then is refused.
/// let second = Store::open(Arc::new(StdFs), &path, config.clone());
/// assert!(matches!(second, Err(StoreError::OpenInProcess { .. })));
/// let head = store.head();
/// store.close()?;
///
/// let store = Store::open(Arc::new(StdFs), &path, config)?;
/// assert_eq!(store.head(), head);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Store {
    pub(crate) inner: Arc<Inner>,
    background: Option<JoinHandle<()>>,
    /// The directory lock, released when the store is dropped (after
    /// `inner` is closed: tokens that outlive the store cannot write).
    /// A read-only store holds none once open.
    _lock: Option<Box<dyn FsLock>>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) fs: Arc<dyn Fs>,
    pub(crate) dir: PathBuf,
    pub(crate) meta: StoreMeta,
    pub(crate) config: StoreConfig,
    pub(crate) tree: Mutex<LeanImt>,
    /// The tree's size, readable without the lock.
    pub(crate) size: AtomicU64,
    /// Append calls so far, and at the last checkpoint (for the policy).
    appends: AtomicU64,
    appends_at_checkpoint: AtomicU64,
    pub(crate) log: Mutex<LogWriter>,
    /// Block-tagged heads and recent roots (taken after `tree`).
    pub(crate) heads: Mutex<Heads>,
    /// The heads file (taken only under `log`).
    pub(crate) heads_writer: Mutex<HeadsWriter>,
    pub(crate) durable: Mutex<Durable>,
    pub(crate) durable_changed: Condvar,
    /// Set with `durable.failure`: appends check it without the lock.
    pub(crate) poisoned: AtomicBool,
    /// Rollbacks so far (tokens remember the epoch they were made in).
    /// Changed only under the tree and durable locks, so an append reads
    /// it under the tree lock without taking the durable one.
    pub(crate) epoch: AtomicU64,
    pub(crate) published: ArcSwap<Snapshot>,
    pub(crate) checkpoints: Mutex<Checkpoints>,
    /// See [`CheckpointMeta::rollback_floor`] (`u64::MAX`: none).
    pub(crate) rollback_floor: Arc<AtomicU64>,
    shutdown: Mutex<bool>,
    shutdown_signal: Condvar,
    /// Set when the store is dropped: no more log writes.
    pub(crate) closed: AtomicBool,
    hook: Mutex<Option<Hook>>,
    observer: Mutex<Option<Observer>>,
    /// Opened with [`Store::open_read_only`]: nothing may write.
    pub(crate) read_only: bool,
}

/// What an open may do to the directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// A writer: holds the directory lock, repairs what recovery finds.
    Write,
    /// A read-only open: changes nothing; `writer_live` when a writer held
    /// the directory as it began (files may grow while it reads).
    ReadOnly { writer_live: bool },
}

impl Access {
    pub(crate) fn is_read_only(self) -> bool {
        matches!(self, Access::ReadOnly { .. })
    }
}

struct Hook(CheckpointHook);

struct Observer(CheckpointObserver);

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CheckpointObserver")
    }
}

impl std::fmt::Debug for Hook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CheckpointHook")
    }
}

/// What [`Store::set_checkpoint_hook`] runs after each checkpoint.
pub type CheckpointHook = Box<dyn Fn(&CheckpointMeta) -> Result<()> + Send + Sync>;

/// What [`Store::set_checkpoint_observer`] runs after each checkpoint
/// written: the checkpoint and how long it took, hook included.
pub type CheckpointObserver = Box<dyn Fn(&CheckpointMeta, Duration) + Send + Sync>;

#[derive(Debug)]
pub(crate) struct Durable {
    /// Leaves durable in the log.
    pub(crate) end: u64,
    /// Block-tagged heads durable in the heads file.
    pub(crate) tags: u64,
    /// Whether some thread is flushing (a waiter flushes itself if not).
    pub(crate) flushing: bool,
    /// The first write or sync failure: nothing is acknowledged after it.
    pub(crate) failure: Option<StoreError>,
    /// (epoch, size, tags kept) of every rollback: a token of an earlier
    /// epoch whose leaves reach past such a size, or whose block tag is
    /// not among the tags kept, was rolled back.
    pub(crate) cuts: Vec<(u64, u64, u64)>,
}

impl Durable {
    /// Whether what `want` waits for was rolled back, and to what size.
    /// The tag count matters on its own: `truncate_to_block` can remove a
    /// tag at the size it keeps (an empty block), and that append's token
    /// must fail too, not wait for a tag count later tags would reach.
    fn cut(&self, want: &Want) -> Option<u64> {
        self.cuts
            .iter()
            .filter(|&&(epoch, to, kept)| epoch > want.epoch && (to < want.end || kept < want.tags))
            .map(|&(_, to, _)| to)
            .min()
    }

    fn holds(&self, want: &Want) -> bool {
        self.end >= want.end && self.tags >= want.tags
    }
}

/// What a durability wait waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Want {
    /// Leaves durable.
    pub(crate) end: u64,
    /// Block-tagged heads durable.
    pub(crate) tags: u64,
    /// The rollback epoch the append was made in.
    pub(crate) epoch: u64,
}

/// The result of an append: where the leaves went and the token that says
/// when they are durable.
#[derive(Debug, Clone)]
pub struct Appended {
    /// Index of the first appended leaf.
    pub first: u64,
    /// Number of leaves appended.
    pub count: u64,
    /// Durability of everything up to and including these leaves.
    pub token: Token,
}

/// A durability token: durable once the log holds every leaf below `end`
/// (and the heads file the append's block tag, if it had one).
#[derive(Debug, Clone)]
pub struct Token {
    want: Want,
    inner: Arc<Inner>,
}

impl Token {
    /// The tree size this token waits for.
    pub fn end(&self) -> u64 {
        self.want.end
    }

    /// Whether the leaves are durable, without waiting; an error if the
    /// store failed before they were, or if they were rolled back.
    pub fn is_durable(&self) -> Result<bool> {
        let durable = self.inner.durable.lock();
        if let Some(to) = durable.cut(&self.want) {
            return Err(StoreError::RolledBack {
                end: self.want.end,
                to,
            });
        }
        if durable.holds(&self.want) {
            return Ok(true);
        }
        match &durable.failure {
            Some(failure) => Err(poisoned(failure)),
            None => Ok(false),
        }
    }

    /// Waits until the leaves are durable, flushing them itself if no flush
    /// is running (so a waiter never sleeps on a timer); an error if a
    /// write or sync fails first, if they are rolled back, or after `timeout`.
    pub fn wait(&self, timeout: Duration) -> Result<()> {
        self.inner.wait_durable(self.want, Instant::now() + timeout)
    }
}

pub(crate) fn poisoned(failure: &StoreError) -> StoreError {
    StoreError::Poisoned {
        cause: failure.to_string(),
    }
}

/// The leaves of an append: as the caller gave them (checked under the
/// tree lock, as the tree appends them) or already checked by
/// [`Store::check_batch`] (only the capacity is checked again).
#[derive(Clone, Copy)]
enum Batch<'a, 'b> {
    Unchecked(&'a [Hash]),
    Checked(&'a CheckedLeaves<'b>),
}

impl Batch<'_, '_> {
    fn count(&self) -> usize {
        match self {
            Batch::Unchecked(leaves) => leaves.len(),
            Batch::Checked(leaves) => leaves.count(),
        }
    }

    fn append_to(&self, tree: &mut LeanImt) -> std::result::Result<u64, TreeError> {
        match self {
            Batch::Unchecked(leaves) => tree.append_batch(leaves),
            Batch::Checked(leaves) => tree.append_checked(leaves),
        }
    }
}

/// Read-only file mappings standing in for a tiered segment.
#[derive(Debug)]
struct Tiered(Arc<dyn MappedNodes>);

impl NodeSource for Tiered {
    fn nodes(&self) -> &[Hash] {
        self.0.nodes()
    }
}

/// Figures about a store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreStats {
    /// Leaves in the tree (visible).
    pub size: u64,
    /// Leaves durable in the log.
    pub durable: u64,
    /// Leaves covered by the last checkpoint.
    pub checkpoint_size: u64,
    /// The last checkpoint's number (0: none).
    pub checkpoint_number: u64,
    /// Per level, segments served from file mappings.
    pub tiered_segments: Vec<usize>,
    /// Leaves below which a rollback is refused.
    pub finalized: u64,
    /// Block-tagged heads.
    pub tagged_heads: u64,
}

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
            if entries.iter().any(|name| name != LOCK) {
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
        let lock = take_lock(&*fs, dir)?;
        for sub in [LOG_DIR, LEVELS_DIR] {
            let path = dir.join(sub);
            fs.create_dir(&path)
                .map_err(|e| StoreError::io("create directory", &path, e))?;
        }
        let meta = StoreMeta {
            tree: config.tree,
            log_shift: config.log_shift,
            store_id: rand::random::<u64>() | 1,
            flags: config.flags,
        };
        crate::replace::replace_file(&*fs, dir, META_TMP, META, |file, tmp| {
            file.write_at(&meta.encode(), 0)
                .map_err(|e| StoreError::io("write", tmp, e))
        })?;
        let log = log::new_writer(Arc::clone(&fs), &dir.join(LOG_DIR), meta);
        let heads_writer = heads::new_writer(Arc::clone(&fs), dir, meta);
        let mut store = Store::start(
            fs,
            dir,
            meta,
            config,
            LeanImt::new(meta.tree),
            log,
            (Vec::new(), heads_writer),
            Checkpoints::default(),
            false,
        );
        store._lock = Some(lock);
        Ok(store)
    }

    /// Opens the store in `dir`. `config.tree` and `config.log_shift` must
    /// equal what the store was created with.
    pub fn open(fs: Arc<dyn Fs>, dir: &Path, config: StoreConfig) -> Result<Store> {
        let meta_path = require_store(&*fs, dir)?;
        let lock = take_lock(&*fs, dir)?;
        // Recovery repairs (removes leftovers, zeroes stale records): no
        // read-only open may be part way through reading meanwhile.
        let recovering = take_open_lock(&*fs, &meta_path, false)?;
        let mut store = Store::recover(fs, dir, config, Access::Write)?;
        drop(recovering);
        store._lock = Some(lock);
        Ok(store)
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

    /// Whether this store was opened with [`Store::open_read_only`].
    pub fn is_read_only(&self) -> bool {
        self.inner.read_only
    }

    /// Recovery proper (docs/file-format.md, "Recovery"); the caller holds
    /// the locks `access` needs.
    fn recover(fs: Arc<dyn Fs>, dir: &Path, config: StoreConfig, access: Access) -> Result<Store> {
        let read_only = access.is_read_only();
        let meta_path = dir.join(META);
        let meta = read_meta(&*fs, &meta_path)?;
        check_config(&meta, &config)?;
        if !read_only {
            // Never published, so never valid: a checkpoint that crashed.
            crate::replace::remove_stale(&*fs, &dir.join(CHECKPOINT_TMP))?;
        }
        let levels_dir = dir.join(LEVELS_DIR);
        for name in fs
            .list_dir(&levels_dir)
            .map_err(|e| StoreError::io("list", &levels_dir, e))?
        {
            if format::parse_level_name(&name).is_none() {
                return Err(StoreError::corrupt(
                    levels_dir.join(name),
                    0,
                    "unexpected file in the levels directory",
                ));
            }
        }
        let last = checkpoint::read(&*fs, dir, &meta)?;
        let (resume, start) = match &last {
            Some(c) => (c.resume, c.size),
            None => (
                LogPosition {
                    file: 0,
                    slot: 0,
                    seq: 1,
                },
                0,
            ),
        };
        let log_dir = dir.join(LOG_DIR);
        let recovered = log::recover(Arc::clone(&fs), &log_dir, meta, (resume, start), access)?;
        let mut checkpoints = Checkpoints {
            last: last.clone(),
            ..Checkpoints::default()
        };
        let (trusted, epoch) = last.as_ref().map_or((0, 0), |c| (c.heads, c.epoch));
        let recovered_heads = heads::recover(
            Arc::clone(&fs),
            dir,
            meta,
            trusted,
            epoch,
            recovered.writer.end(),
            read_only,
        )?;
        let mut tree = match &last {
            Some(c) if c.size > 0 => load_levels(
                &*fs,
                dir,
                &meta,
                c,
                recovered.writer.files(),
                &mut checkpoints,
                read_only,
            )?,
            _ => LeanImt::new(meta.tree),
        };
        if !recovered.tail.is_empty() {
            tree.append_batch(&recovered.tail).map_err(|e| {
                StoreError::corrupt(
                    &log_dir,
                    0,
                    format!("the log holds leaves the tree refuses: {e}"),
                )
            })?;
        }
        tree.commit();
        if config.verify_on_open
            && let Some((level, index)) = tree.first_mismatch()
        {
            let (path, offset) = node_location(dir, &meta, level, index);
            return Err(StoreError::corrupt(
                path,
                offset,
                format!("node {index} of level {level} is not the hash of its children"),
            ));
        }
        Ok(Store::start(
            fs,
            dir,
            meta,
            config,
            tree,
            recovered.writer,
            recovered_heads,
            checkpoints,
            read_only,
        ))
    }

    /// Opens the store in `dir`, creating it if the directory holds none.
    pub fn open_or_create(fs: Arc<dyn Fs>, dir: &Path, config: StoreConfig) -> Result<Store> {
        if fs
            .exists(&dir.join(META))
            .map_err(|e| StoreError::io("stat", dir, e))?
        {
            Store::open(fs, dir, config)
        } else {
            Store::create(fs, dir, config)
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn start(
        fs: Arc<dyn Fs>,
        dir: &Path,
        meta: StoreMeta,
        config: StoreConfig,
        mut tree: LeanImt,
        log: LogWriter,
        (tags, heads_writer): (Vec<heads::TaggedHead>, HeadsWriter),
        checkpoints: Checkpoints,
        read_only: bool,
    ) -> Store {
        let snapshot = tree.snapshot();
        let durable_tags = tags.len() as u64;
        let mut heads = Heads::new(tags, config.root_window);
        heads.note_append(tree.size());
        let inner = Arc::new(Inner {
            fs,
            dir: dir.to_path_buf(),
            meta,
            size: AtomicU64::new(tree.size()),
            appends: AtomicU64::new(0),
            appends_at_checkpoint: AtomicU64::new(0),
            durable: Mutex::new(Durable {
                end: log.end(),
                tags: durable_tags,
                flushing: false,
                failure: None,
                cuts: Vec::new(),
            }),
            epoch: AtomicU64::new(0),
            heads: Mutex::new(heads),
            heads_writer: Mutex::new(heads_writer),
            tree: Mutex::new(tree),
            log: Mutex::new(log),
            durable_changed: Condvar::new(),
            poisoned: AtomicBool::new(false),
            published: ArcSwap::from_pointee(snapshot),
            rollback_floor: Arc::new(AtomicU64::new(
                checkpoints
                    .last
                    .as_ref()
                    .map_or(u64::MAX, |c| c.rollback_floor),
            )),
            checkpoints: Mutex::new(checkpoints),
            shutdown: Mutex::new(false),
            shutdown_signal: Condvar::new(),
            closed: AtomicBool::new(false),
            hook: Mutex::new(None),
            observer: Mutex::new(None),
            read_only,
            config,
        });
        let background = (!read_only
            && (inner.config.flush_interval.is_some()
                || inner.config.checkpoint != Default::default()))
        .then(|| {
            let inner = Arc::clone(&inner);
            std::thread::Builder::new()
                .name("cairn-flush".into())
                .spawn(move || inner.background())
                .expect("spawn the flush thread")
        });
        Store {
            inner,
            background,
            _lock: None,
        }
    }

    /// Appends one leaf. Visible at once; durable when the token says so.
    pub fn append(&self, leaf: Hash) -> Result<Appended> {
        self.append_batch(std::slice::from_ref(&leaf))
    }

    /// Appends `leaves` in order, all or nothing: a refused batch (empty,
    /// a non-canonical leaf, over capacity, or a failed store) changes
    /// nothing in memory or on disk. Any size works: the log splits it.
    ///
    /// A batch of 65,536 leaves or more is copied in by rayon's global
    /// pool while the tree lock is held (commits and snapshots of a dirty
    /// tree hash on it under the lock too): do not call a `Store` (or
    /// `Db`) method that may wait for that lock from inside a rayon task,
    /// or the pool can end up waiting for itself.
    pub fn append_batch(&self, leaves: &[Hash]) -> Result<Appended> {
        self.append_leaves(Batch::Unchecked(leaves))
    }

    /// [`Store::append_batch`] for leaves [`Store::check_batch`] accepted:
    /// they are not scanned again (the store's state and the capacity are
    /// checked again, at the size the append finds).
    pub fn append_checked(&self, leaves: &CheckedLeaves<'_>) -> Result<Appended> {
        self.append_leaves(Batch::Checked(leaves))
    }

    fn append_leaves(&self, leaves: Batch<'_, '_>) -> Result<Appended> {
        let inner = &self.inner;
        inner.writable("append")?;
        let (first, epoch) = {
            let mut tree = inner.tree.lock();
            if inner.poisoned.load(Ordering::Acquire) {
                return Err(poisoned(
                    inner.durable.lock().failure.as_ref().expect("poisoned"),
                ));
            }
            let first = leaves.append_to(&mut tree)?;
            inner.size.store(tree.size(), Ordering::Release);
            inner.appends.fetch_add(1, Ordering::Relaxed);
            inner.heads.lock().note_append(tree.size());
            // Read under the tree lock: a rollback changes both together.
            (first, inner.epoch.load(Ordering::Acquire))
        };
        let count = leaves.count() as u64;
        Ok(Appended {
            first,
            count,
            token: Token {
                want: Want {
                    end: first + count,
                    tags: 0,
                    epoch,
                },
                inner: Arc::clone(inner),
            },
        })
    }

    /// Appends `leaves` (possibly none) as the leaves of block `tag`, and
    /// records the head at their end (block, block hash, size, root) under
    /// the same durability: the token is durable once both the leaves and
    /// the head are. Block numbers must increase from one tagged append to
    /// the next; a repeated or lower one is refused and nothing changes.
    /// The root is computed here (the right edge is hashed under the tree
    /// lock), since a chain follower needs every block's root anyway.
    pub fn append_tagged(&self, leaves: &[Hash], tag: heads::BlockTag) -> Result<Appended> {
        self.append_tagged_leaves(Batch::Unchecked(leaves), tag)
    }

    /// [`Store::append_tagged`] for leaves [`Store::check_batch`] accepted
    /// (not scanned again).
    pub fn append_tagged_checked(
        &self,
        leaves: &CheckedLeaves<'_>,
        tag: heads::BlockTag,
    ) -> Result<Appended> {
        self.append_tagged_leaves(Batch::Checked(leaves), tag)
    }

    fn append_tagged_leaves(
        &self,
        leaves: Batch<'_, '_>,
        tag: heads::BlockTag,
    ) -> Result<Appended> {
        let inner = &self.inner;
        inner.writable("append")?;
        let (first, tags, epoch) = {
            let mut tree = inner.tree.lock();
            if inner.poisoned.load(Ordering::Acquire) {
                return Err(poisoned(
                    inner.durable.lock().failure.as_ref().expect("poisoned"),
                ));
            }
            let mut heads = inner.heads.lock();
            if let Some(last) = heads.last_block()
                && tag.number <= last
            {
                return Err(StoreError::BlockOrder {
                    block: tag.number,
                    last,
                });
            }
            let first = if leaves.count() == 0 {
                tree.size()
            } else {
                leaves.append_to(&mut tree)?
            };
            let head = tree.head();
            inner.size.store(head.size, Ordering::Release);
            inner.appends.fetch_add(1, Ordering::Relaxed);
            heads.note_append(head.size);
            heads.push_tag(heads::TaggedHead {
                block: tag.number,
                block_hash: tag.hash,
                size: head.size,
                root: head.root,
            });
            let tags = heads.tags().len() as u64;
            (first, tags, inner.epoch.load(Ordering::Acquire))
        };
        let count = leaves.count() as u64;
        Ok(Appended {
            first,
            count,
            token: Token {
                want: Want {
                    end: first + count,
                    tags,
                    epoch,
                },
                inner: Arc::clone(inner),
            },
        })
    }

    /// Whether [`Store::append_batch`] would accept `leaves` now (not
    /// empty, every leaf canonical for the hash, room in the tree, the
    /// store not failed), without appending them. What it accepts goes to
    /// [`Store::append_checked`] (or [`Store::append_tagged_checked`])
    /// without its leaves being scanned again.
    pub fn check_batch<'a>(&self, leaves: &'a [Hash]) -> Result<CheckedLeaves<'a>> {
        let inner = &self.inner;
        inner.writable("append")?;
        if inner.poisoned.load(Ordering::Acquire) {
            return Err(poisoned(
                inner.durable.lock().failure.as_ref().expect("poisoned"),
            ));
        }
        let checked = inner.meta.tree.check_leaves(leaves)?;
        inner.tree.lock().check_batch_size(leaves.len() as u64)?;
        Ok(checked)
    }

    /// The random identifier written at creation (files of one store
    /// carry it, so that files of another are refused).
    pub fn store_id(&self) -> u64 {
        self.inner.meta.store_id
    }

    /// Makes everything appended so far durable; returns the durable size.
    pub fn flush(&self) -> Result<u64> {
        self.inner.flush_all(Duration::from_secs(3600))?;
        Ok(self.durable_size())
    }

    /// Leaves in the tree (visible to readers, not necessarily durable).
    pub fn size(&self) -> u64 {
        self.inner.size.load(Ordering::Acquire)
    }

    /// Leaves durable in the log.
    pub fn durable_size(&self) -> u64 {
        self.inner.durable.lock().end
    }

    /// The tree's configuration.
    pub fn config(&self) -> &StoreConfig {
        &self.inner.config
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// Where node `index` of `level` is stored: its file and byte offset
    /// (level 0 in the log files, the levels above in the level files).
    pub fn node_location(&self, level: u32, index: u64) -> (PathBuf, u64) {
        node_location(&self.inner.dir, &self.inner.meta, level, index)
    }

    /// The level and index of the node a level file holds at `offset`, if
    /// `path` names a level file and `offset` is past its header: the
    /// inverse of [`Store::node_location`] for levels 1 and up.
    pub fn stored_node_at(&self, path: &Path, offset: u64) -> Option<(u32, u64)> {
        let level = format::parse_level_name(path.file_name()?.to_str()?)?;
        Some((level, offset.checked_sub(HEADER_LEN)? / 32))
    }

    /// An immutable snapshot of everything appended so far, for proofs.
    /// Reuses the last one when nothing was appended since (lock-free);
    /// otherwise hashes the new right edge under the tree lock.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.inner.snapshot()
    }

    /// Every leaf appended so far, sharing the tree's memory (no copy; leaves
    /// never change), readable without any lock: for readers of many leaves
    /// on worker threads, which must not wait for the tree lock (the flush
    /// thread holds it while it hashes on those same threads). Costs one
    /// reference count per 2 MiB of leaves and a moment under the lock.
    pub fn leaves(&self) -> Level {
        self.inner.tree.lock().share_leaves()
    }

    /// The leaf at `index` if it is visible: from the published snapshot
    /// when it holds it (lock-free), else under the tree lock for a moment.
    pub fn leaf(&self, index: u64) -> Option<Hash> {
        {
            let published = self.inner.published.load();
            if index < published.size() {
                return published.leaf(index);
            }
        }
        self.inner.tree.lock().leaf(index)
    }

    /// Runs `hook` after every checkpoint this store publishes (manual or
    /// automatic), in the thread that wrote it, while no other checkpoint
    /// can start: the layer above persists its own derived state there. An
    /// error from the hook is returned by [`Store::checkpoint`] (the
    /// checkpoint itself stays published).
    pub fn set_checkpoint_hook(&self, hook: CheckpointHook) {
        *self.inner.hook.lock() = Some(Hook(hook));
    }

    /// Runs `observer` after every checkpoint this store writes (manual or
    /// automatic, not one skipped because nothing was new) with the time it
    /// took, the checkpoint hook included: for metrics, which must see the
    /// background checkpoints too.
    pub fn set_checkpoint_observer(&self, observer: CheckpointObserver) {
        *self.inner.observer.lock() = Some(Observer(observer));
    }

    /// The current head (size and root).
    pub fn head(&self) -> TreeHead {
        self.snapshot().head()
    }

    /// Writes a checkpoint of everything appended so far (flushing it
    /// first); `None` if the last checkpoint already covers it.
    pub fn checkpoint(&self) -> Result<Option<CheckpointMeta>> {
        self.inner.checkpoint(None)
    }

    /// Figures about the store.
    pub fn stats(&self) -> StoreStats {
        let checkpoints = self.inner.checkpoints.lock();
        StoreStats {
            size: self.size(),
            durable: self.durable_size(),
            checkpoint_size: checkpoints.last.as_ref().map_or(0, |c| c.size),
            checkpoint_number: checkpoints.last.as_ref().map_or(0, |c| c.number),
            tiered_segments: checkpoints.tiered.clone(),
            finalized: Inner::finalized(&checkpoints),
            tagged_heads: self.inner.heads.lock().tags().len() as u64,
        }
    }

    /// Flushes, stops the background thread and releases the directory.
    pub fn close(mut self) -> Result<()> {
        self.stop_background();
        let result = self.flush().map(|_| ());
        drop(self);
        result
    }

    fn stop_background(&mut self) {
        *self.inner.shutdown.lock() = true;
        self.inner.shutdown_signal.notify_all();
        if let Some(handle) = self.background.take() {
            let _ = handle.join();
        }
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        self.stop_background();
        // Best effort: a dropped store flushes what it can; errors were
        // or will be reported through tokens.
        if !self.inner.poisoned.load(Ordering::Acquire) {
            let _ = self.inner.flush_all(Duration::from_secs(60));
        }
        // Under the flush lock: a flush in progress finishes first, later
        // ones (from tokens that outlive the store) see `closed`.
        let _log = self.inner.log.lock();
        self.inner.closed.store(true, Ordering::Release);
    }
}

impl Inner {
    /// [`StoreError::ReadOnly`] if the store was opened read-only.
    pub(crate) fn writable(&self, what: &'static str) -> Result<()> {
        if self.read_only {
            return Err(StoreError::ReadOnly {
                what,
                path: self.dir.clone(),
            });
        }
        Ok(())
    }

    fn snapshot(&self) -> Arc<Snapshot> {
        let current = self.published.load_full();
        if current.size() == self.size.load(Ordering::Acquire) {
            return current;
        }
        let mut tree = self.tree.lock();
        let current = self.published.load_full();
        if current.size() == tree.size() {
            return current;
        }
        let fresh = Arc::new(tree.snapshot());
        self.published.store(Arc::clone(&fresh));
        fresh
    }

    /// What a flush of everything appended so far waits for.
    pub(crate) fn want_all(&self) -> Want {
        let _tree = self.tree.lock();
        let tags = self.heads.lock().tags().len() as u64;
        Want {
            end: self.size.load(Ordering::Acquire),
            tags,
            epoch: self.epoch.load(Ordering::Acquire),
        }
    }

    /// Makes everything appended so far durable.
    pub(crate) fn flush_all(&self, timeout: Duration) -> Result<()> {
        let want = self.want_all();
        self.wait_durable(want, Instant::now() + timeout)
    }

    /// Waits until what `want` names is durable, flushing if nobody is.
    fn wait_durable(&self, want: Want, deadline: Instant) -> Result<()> {
        let mut durable = self.durable.lock();
        loop {
            if let Some(to) = durable.cut(&want) {
                return Err(StoreError::RolledBack { end: want.end, to });
            }
            if durable.holds(&want) {
                return Ok(());
            }
            if let Some(failure) = &durable.failure {
                return Err(poisoned(failure));
            }
            if !durable.flushing {
                durable.flushing = true;
                let epoch = self.epoch.load(Ordering::Acquire);
                drop(durable);
                let result = self.flush_log(None);
                durable = self.durable.lock();
                durable.flushing = false;
                match result {
                    // A rollback ran between this flush's release of the
                    // log and now: the end it made durable may hold leaves
                    // removed since, and recording it would claim leaves
                    // appended after the rollback are durable. The next
                    // flush (from the rolled-back log) says what is.
                    Ok(_) if self.epoch.load(Ordering::Acquire) != epoch => {
                        self.durable_changed.notify_all();
                    }
                    // The store was dropped: nothing was written, nothing failed.
                    Err(StoreError::Closed) => {
                        self.durable_changed.notify_all();
                        return Err(StoreError::Closed);
                    }
                    // The first failure poisons the store; the caller who hit
                    // it gets the failure itself, later ones `Poisoned`.
                    Err(error) if durable.failure.is_none() => {
                        self.record_flush(&mut durable, Err(error.clone()));
                        return Err(error);
                    }
                    result => self.record_flush(&mut durable, result),
                }
                continue;
            }
            if self
                .durable_changed
                .wait_until(&mut durable, deadline)
                .timed_out()
            {
                if durable.holds(&want) && durable.cut(&want).is_none() {
                    return Ok(());
                }
                return Err(StoreError::Timeout {
                    want: want.end,
                    durable: durable.end,
                });
            }
        }
    }

    pub(crate) fn record_flush(&self, durable: &mut Durable, result: Result<(u64, u64)>) {
        match result {
            Ok((end, tags)) => {
                durable.end = durable.end.max(end);
                durable.tags = durable.tags.max(tags);
            }
            Err(error) => {
                if durable.failure.is_none() {
                    durable.failure = Some(error);
                    self.poisoned.store(true, Ordering::Release);
                }
            }
        }
        self.durable_changed.notify_all();
    }

    /// One group commit of everything appended so far. With `snapshot`,
    /// also takes a snapshot of the tree at exactly the flushed size (for a
    /// checkpoint) and returns it there. Returns the durable size.
    /// Returns the durable size and the count of durable tagged heads.
    /// Tagged heads are made durable before the leaves they follow (see
    /// `heads.rs`).
    pub(crate) fn flush_log(&self, snapshot: Option<&mut Option<Taken>>) -> Result<(u64, u64)> {
        let mut log = self.log.lock();
        if self.closed.load(Ordering::Acquire) {
            return Err(StoreError::Closed);
        }
        if self.poisoned.load(Ordering::Acquire) {
            return Err(self.durable.lock().failure.clone().expect("poisoned"));
        }
        let (leaves, to, taken, (pending, tags)) = {
            let mut tree = self.tree.lock();
            let taken = snapshot.is_some().then(|| tree.snapshot());
            let pending = self.heads.lock().pending();
            (tree.share_leaves(), tree.size(), taken, pending)
        };
        if !pending.is_empty() {
            self.heads_writer.lock().write(&pending)?;
            self.heads.lock().mark_written(tags);
        }
        log.commit(&leaves, to)?;
        if let (Some(out), Some(taken)) = (snapshot, taken) {
            *out = Some(Taken {
                snapshot: taken,
                resume: log.next(),
                heads: tags as u64,
                epoch: self.heads_writer.lock().epoch(),
            });
        }
        Ok((log.end(), tags as u64))
    }

    /// Whether only [`Store::finalize`] finalizes (else every checkpoint
    /// finalizes what it covers).
    pub(crate) fn explicit_finality(&self) -> bool {
        self.meta.flags & crate::config::FLAG_EXPLICIT_FINALITY != 0
    }

    /// The size below which a rollback is refused.
    pub(crate) fn finalized(checkpoints: &Checkpoints) -> u64 {
        checkpoints.last.as_ref().map_or(0, |c| c.finalized)
    }

    /// A checkpoint of everything appended so far; with `finalize`, one
    /// that also finalizes that many leaves (published even if nothing
    /// else changed).
    pub(crate) fn checkpoint(&self, finalize: Option<u64>) -> Result<Option<CheckpointMeta>> {
        self.writable(if finalize.is_some() {
            "finalize"
        } else {
            "checkpoint"
        })?;
        let started = Instant::now();
        let mut checkpoints = self.checkpoints.lock();
        // Flush and snapshot at one size, under the flush lock only.
        let mut taken = None;
        let appends = self.appends.load(Ordering::Relaxed);
        let result = self.flush_log(Some(&mut taken));
        {
            let mut durable = self.durable.lock();
            self.record_flush(&mut durable, result.clone());
        }
        result?;
        let Taken {
            snapshot,
            resume,
            heads,
            epoch,
        } = taken.expect("flush_log fills the snapshot");
        if let Some(size) = finalize
            && size > snapshot.size()
        {
            // A rollback ran between the caller's check and this flush.
            return Err(StoreError::BeyondSize {
                what: "finalize",
                to: size,
                size: snapshot.size(),
            });
        }
        let last = checkpoints.last.as_ref();
        let before = last.map_or(0, |c| c.finalized);
        let finalized = match finalize {
            Some(size) => before.max(size),
            None if self.explicit_finality() => before,
            None => snapshot.size(),
        };
        if last.map_or(0, |c| c.size) == snapshot.size()
            && finalized == before
            && last.map_or(0, |c| c.heads) == heads
        {
            return Ok(None);
        }
        let written = checkpoint::write(
            &*self.fs,
            &self.dir,
            &self.meta,
            &mut checkpoints,
            &snapshot,
            resume,
            Marks {
                finalized,
                epoch,
                heads,
                rollback_floor: self.rollback_floor.load(Ordering::Acquire),
            },
        );
        let written = match written {
            Ok(written) => written,
            Err(error) => {
                let mut durable = self.durable.lock();
                self.record_flush(&mut durable, Err(error.clone()));
                return Err(error);
            }
        };
        self.appends_at_checkpoint.store(appends, Ordering::Relaxed);
        self.tier(&mut checkpoints)?;
        if let Some(Hook(hook)) = &*self.hook.lock() {
            hook(&written)?;
        }
        if let Some(Observer(observer)) = &*self.observer.lock() {
            observer(&written, started.elapsed());
        }
        Ok(Some(written))
    }

    /// Serves complete final segments of cold levels from mappings of the
    /// published files (after a checkpoint).
    fn tier(&self, checkpoints: &mut Checkpoints) -> Result<()> {
        let Some(last) = checkpoints.last.clone() else {
            return Ok(());
        };
        let cold = (self.config.tier_below as usize).min(last.levels.len());
        let log_files = self.log.lock().files().to_vec();
        let mut tiered_any = false;
        for level in 0..cold {
            if checkpoints.tiered.len() <= level {
                checkpoints.tiered.resize(level + 1, 0);
            }
            // Only finalized nodes are mapped: a rollback above them later
            // writes the bytes past it again.
            let final_len = mappable(&self.meta, last.finalized, level).min(last.levels[level].0);
            let complete = (final_len as usize) / SEGMENT_LEN;
            while checkpoints.tiered[level] < complete {
                let segment = checkpoints.tiered[level];
                let source = if level == 0 {
                    match map_leaves(&self.meta, &log_files, segment, &self.dir)? {
                        Some(source) => source,
                        None => break,
                    }
                } else {
                    let file = checkpoints.level_file(&*self.fs, &self.dir, &self.meta, level)?;
                    let path = self
                        .dir
                        .join(LEVELS_DIR)
                        .join(format::level_name(level as u32));
                    map_segment(&*file, segment, &path)?
                };
                self.tree
                    .lock()
                    .tier(level as u32, segment, source)
                    .expect("a published segment is frozen");
                checkpoints.tiered[level] += 1;
                tiered_any = true;
            }
        }
        if tiered_any {
            // The published snapshot still shares the memory the tiered
            // segments replaced: publish a fresh one so that memory goes.
            let mut tree = self.tree.lock();
            self.published.store(Arc::new(tree.snapshot()));
        }
        Ok(())
    }

    fn background(&self) {
        let interval = self
            .config
            .flush_interval
            .unwrap_or(Duration::from_millis(100));
        loop {
            {
                let mut stop = self.shutdown.lock();
                if *stop {
                    return;
                }
                self.shutdown_signal.wait_for(&mut stop, interval);
                if *stop {
                    return;
                }
            }
            if self.poisoned.load(Ordering::Acquire) {
                continue;
            }
            if self.config.flush_interval.is_some() {
                let _ = self.flush_all(interval);
            }
            if self.checkpoint_due() {
                let _ = self.checkpoint(None);
            }
        }
    }

    fn checkpoint_due(&self) -> bool {
        let policy = self.config.checkpoint;
        // `covered` first: a checkpoint taken by another thread between the
        // two reads can only make `size` larger, never `covered` > `size`.
        let covered = self.checkpoints.lock().last.as_ref().map_or(0, |c| c.size);
        let size = self.size.load(Ordering::Acquire);
        let fresh = size.saturating_sub(covered);
        let n = self.meta.tree.arity.get() as u64;
        let appends = self.appends.load(Ordering::Relaxed)
            - self.appends_at_checkpoint.load(Ordering::Relaxed);
        policy.every_appends.is_some_and(|every| appends >= every)
            || policy.every_leaves.is_some_and(|every| fresh >= every)
            || policy
                .memory_bytes
                .is_some_and(|bytes| fresh.div_ceil(n - 1) * 32 >= bytes)
    }
}

/// What a checkpoint's flush hands over: the snapshot at the flushed size,
/// where the log continues, and the heads and rollback epoch at that size.
pub(crate) struct Taken {
    pub(crate) snapshot: Snapshot,
    pub(crate) resume: LogPosition,
    pub(crate) heads: u64,
    pub(crate) epoch: u64,
}

/// How many nodes of `level` may be mapped from files: the final nodes of
/// the tree of `finalized` leaves (a rollback never reaches below them, so
/// their bytes are never written again).
pub(crate) fn mappable(meta: &StoreMeta, finalized: u64, level: usize) -> u64 {
    cairn_core::shape::level_len(finalized, meta.tree.arity, level as u32).saturating_sub(1)
}

/// A mapping of the leaves of level-0 segment `segment`, if the log files
/// are large enough to hold whole segments.
fn map_leaves(
    meta: &StoreMeta,
    files: &[Arc<dyn FsFile>],
    segment: usize,
    dir: &Path,
) -> Result<Option<Arc<dyn NodeSource>>> {
    let per_file = meta.log_file_leaves();
    if per_file < SEGMENT_LEN as u64 {
        return Ok(None);
    }
    let first = (segment * SEGMENT_LEN) as u64;
    let file = (first / per_file) as usize;
    let Some(handle) = files.get(file) else {
        return Ok(None);
    };
    let offset = HEADER_LEN + 32 * (first - file as u64 * per_file);
    let map = handle.map_nodes(offset, SEGMENT_LEN).map_err(|e| {
        StoreError::io(
            "map",
            dir.join(LOG_DIR).join(format::log_name(file as u64)),
            e,
        )
    })?;
    Ok(Some(Arc::new(Tiered(map))))
}

fn map_segment(file: &dyn FsFile, segment: usize, path: &Path) -> Result<Arc<dyn NodeSource>> {
    let offset = HEADER_LEN + 32 * (segment * SEGMENT_LEN) as u64;
    let map = file
        .map_nodes(offset, SEGMENT_LEN)
        .map_err(|e| StoreError::io("map", path, e))?;
    Ok(Arc::new(Tiered(map)))
}

/// Rebuilds the tree at the checkpoint from the log (level 0) and the
/// level files, mapping cold levels, without hashing.
fn load_levels(
    fs: &dyn Fs,
    dir: &Path,
    meta: &StoreMeta,
    last: &CheckpointMeta,
    log_files: &[Arc<dyn FsFile>],
    checkpoints: &mut Checkpoints,
    read_only: bool,
) -> Result<LeanImt> {
    let mode = if read_only {
        OpenMode::ReadOnly
    } else {
        OpenMode::Existing
    };
    let per_file = meta.log_file_leaves();
    let checkpoint_path = dir.join(checkpoint::CHECKPOINT);
    let mut levels = Vec::with_capacity(last.levels.len());
    checkpoints.tiered = vec![0; last.levels.len()];
    for (level, &(final_len, edge)) in last.levels.iter().enumerate() {
        let mut nodes = Level::default();
        let final_len = final_len as usize;
        // Where node `i` of this level lives: (file, offset).
        // Where leaf `i` lives: (log file, its path, offset).
        let file_for = |i: u64| -> Result<(Arc<dyn FsFile>, PathBuf, u64)> {
            let number = i / per_file;
            let path = dir.join(LOG_DIR).join(format::log_name(number));
            let handle = log_files.get(number as usize).ok_or_else(|| {
                StoreError::corrupt(
                    &checkpoint_path,
                    0,
                    format!("the checkpoint covers leaf {i} but log file {number} is missing"),
                )
            })?;
            Ok((
                Arc::clone(handle),
                path,
                HEADER_LEN + 32 * (i - number * per_file),
            ))
        };
        let level_file = if level > 0 && final_len > 0 {
            let path = dir.join(LEVELS_DIR).join(format::level_name(level as u32));
            let handle: Arc<dyn FsFile> = Arc::from(
                fs.open(&path, mode)
                    .map_err(|e| StoreError::io("open", &path, e))?,
            );
            let mut header = vec![0u8; HEADER_LEN as usize];
            handle
                .read_exact_at(&mut header, 0)
                .map_err(|e| StoreError::corrupt(&path, 0, format!("header: {e}")))?;
            format::check_level_header(meta, level as u32, &header)
                .map_err(|why| StoreError::corrupt(&path, 0, why))?;
            let want = HEADER_LEN + 32 * final_len as u64;
            let len = handle.len().map_err(|e| StoreError::io("stat", &path, e))?;
            if len < want {
                return Err(StoreError::corrupt(
                    &path,
                    len,
                    format!(
                        "the file has {len} bytes, the checkpoint says it holds {final_len} nodes ({want} bytes)"
                    ),
                ));
            }
            if checkpoints.files.len() <= level {
                checkpoints.files.resize(level + 1, None);
            }
            checkpoints.files[level] = Some(Arc::clone(&handle));
            Some((handle, path))
        } else if level == 0 {
            // Every leaf the checkpoint covers must be in the log files.
            let leaves = last.size;
            if leaves > 0 {
                let (handle, path, offset) = file_for(leaves - 1)?;
                let len = handle.len().map_err(|e| StoreError::io("stat", &path, e))?;
                if len < offset + 32 {
                    return Err(StoreError::corrupt(
                        &path,
                        len,
                        format!(
                            "the log file ends before leaf {} that the checkpoint covers",
                            leaves - 1
                        ),
                    ));
                }
            }
            None
        } else {
            None
        };
        let mut at = 0usize;
        while at < final_len {
            // Open maps every complete segment of every level (pages come
            // in on demand from the page cache, so open reads nothing for
            // them); only the partial last segment of each level is read.
            // `tier_below` governs what later checkpoints move out of memory.
            let whole = at.is_multiple_of(SEGMENT_LEN)
                && at + SEGMENT_LEN <= final_len
                && (at + SEGMENT_LEN) as u64 <= mappable(meta, last.finalized, level);
            if whole {
                let source = match &level_file {
                    Some((handle, path)) => Some(map_segment(&**handle, at / SEGMENT_LEN, path)?),
                    None => map_leaves(meta, log_files, at / SEGMENT_LEN, dir)?,
                };
                if let Some(source) = source {
                    nodes
                        .push_tiered(source)
                        .expect("segments are pushed in order");
                    checkpoints.tiered[level] += 1;
                    at += SEGMENT_LEN;
                    continue;
                }
            }
            // Read into memory, at most to the end of this segment (and of
            // the log file holding it).
            let mut take = (SEGMENT_LEN - at % SEGMENT_LEN).min(final_len - at);
            let (handle, path, offset) = match &level_file {
                Some((handle, path)) => (
                    Arc::clone(handle),
                    path.clone(),
                    HEADER_LEN + 32 * at as u64,
                ),
                None => {
                    let (handle, path, offset) = file_for(at as u64)?;
                    let left_in_file = per_file - (at as u64 % per_file);
                    take = take.min(left_in_file as usize);
                    (handle, path, offset)
                }
            };
            // Straight into the level's memory: no buffer, no zeroing.
            let first = at;
            nodes.extend_with(take, |index, run: &mut [Hash]| {
                let at = offset + 32 * (index - first) as u64;
                handle
                    .read_exact_at(run.as_flattened_mut(), at)
                    .map_err(|e| StoreError::corrupt(&path, at, format!("reading nodes: {e}")))
            })?;
            at += take;
        }
        // The level's last node is in the checkpoint (for level 0 it is
        // also in the log: they must agree).
        if level == 0 {
            let (handle, path, offset) = file_for(final_len as u64)?;
            let mut leaf = [0u8; 32];
            handle
                .read_exact_at(&mut leaf, offset)
                .map_err(|e| StoreError::corrupt(&path, offset, format!("reading a leaf: {e}")))?;
            if leaf != edge {
                return Err(StoreError::corrupt(
                    &path,
                    offset,
                    format!("leaf {final_len} differs from the checkpoint's copy"),
                ));
            }
        }
        nodes.extend_from_slice(&[edge]);
        levels.push(nodes);
    }
    let tree = LeanImt::from_levels(meta.tree, levels).map_err(|e| {
        StoreError::corrupt(
            &checkpoint_path,
            0,
            format!("levels do not form a tree: {e}"),
        )
    })?;
    if tree.size() != last.size {
        return Err(StoreError::corrupt(
            &checkpoint_path,
            0,
            format!(
                "level 0 holds {} leaves, the checkpoint says {}",
                tree.size(),
                last.size
            ),
        ));
    }
    Ok(tree)
}

/// Where node `index` of `level` is stored.
fn node_location(dir: &Path, meta: &StoreMeta, level: u32, index: u64) -> (PathBuf, u64) {
    if level == 0 {
        let file = index / meta.log_file_leaves();
        (
            dir.join(LOG_DIR).join(format::log_name(file)),
            HEADER_LEN + 32 * (index - file * meta.log_file_leaves()),
        )
    } else {
        (
            dir.join(LEVELS_DIR).join(format::level_name(level)),
            HEADER_LEN + 32 * index,
        )
    }
}

/// How long `take_lock` retries a held lock before reporting it.
const LOCK_WAIT: Duration = Duration::from_millis(500);

/// Takes the directory lock, retrying for [`LOCK_WAIT`] while it is held.
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
fn take_lock(fs: &dyn Fs, dir: &Path) -> Result<Box<dyn FsLock>> {
    let path = dir.join(LOCK);
    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match fs.lock(&path) {
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
                        _ => StoreError::Locked { path },
                    });
                }
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(e) => return Err(StoreError::io("lock", &path, e)),
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

/// Whether a writer holds `dir`'s `LOCK` right now (probed with an
/// exclusive lock, released at once). Asked under the shared open lock:
/// no writer can finish opening meanwhile, so "no" stays true while the
/// read-only open reads.
fn writer_present(fs: &dyn Fs, dir: &Path) -> Result<bool> {
    let path = dir.join(LOCK);
    match fs.lock_existing(&path, false) {
        Ok(_probe) => Ok(false),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(StoreError::io("lock", &path, e)),
    }
}

/// The path of `dir`'s `cairn.meta`, if `dir` holds a store.
fn require_store(fs: &dyn Fs, dir: &Path) -> Result<PathBuf> {
    require_dir(fs, dir)?;
    let meta_path = dir.join(META);
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

fn read_meta(fs: &dyn Fs, path: &Path) -> Result<StoreMeta> {
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

fn check_config(meta: &StoreMeta, config: &StoreConfig) -> Result<()> {
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
    if meta.flags != config.flags {
        return Err(StoreError::ConfigMismatch {
            field: "flags",
            stored: format!("{:#x}", meta.flags),
            given: format!("{:#x}", config.flags),
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
    let path = dir.join(META);
    if !fs
        .exists(&path)
        .map_err(|e| StoreError::io("stat", &path, e))?
    {
        return Err(StoreError::NotAStore { path: dir.into() });
    }
    read_meta(fs, &path)
}
