//! The store: a tree whose appends are made durable by group commit, with
//! checkpoints, tiering and recovery. This module owns the `Store` type,
//! its shared state (`Inner`) and its public API (appends, reads, stats,
//! close); the parts of its life live in the submodules below.
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
use std::time::Duration;

use arc_swap::ArcSwap;
use cairn_core::level::Level;
use cairn_core::{CheckedLeaves, Hash, LeanImt, Snapshot, TreeError, TreeHead};
use parking_lot::{Condvar, Mutex};

pub(crate) use crate::access::Access;
use crate::checkpoint::Checkpoints;
use crate::config::StoreConfig;
use crate::error::{Result, StoreError};
use crate::format::{CheckpointMeta, StoreMeta};
use crate::fs::{Fs, FsLock};
use crate::heads::{self, Heads, HeadsWriter};
use crate::layout::Layout;
use crate::log::LogWriter;

mod background;
mod checkpointing;
mod durability;
mod files;
mod health;
mod integrity;
mod lazy;
mod migrate;
mod open;
pub(crate) use open::take_writer_locks;
mod recovery;
mod tiering;
mod verified;

pub(crate) use durability::{Commit, Durable, Taken, Want, poisoned};
pub use durability::{DurableHead, Token};
pub use files::FileWatch;
pub use health::FileRestore;
pub use health::{CheckpointFailure, FileChange, FileEvent, FileOutcome, StoreHealth};
pub use open::stored_config;

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
    /// The directory lock (on the directory itself), released when the
    /// store is dropped (after `inner` is closed: tokens that outlive the
    /// store cannot write). A read-only store holds none once open.
    _lock: Option<Box<dyn FsLock>>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) fs: Arc<dyn Fs>,
    pub(crate) dir: PathBuf,
    pub(crate) meta: StoreMeta,
    /// Where the store's files, nodes and frames are.
    pub(crate) layout: Layout,
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
    /// Fires after every change of `durable` (see `durability.rs`).
    pub(crate) durable_changed: event_listener::Event,
    /// The published durable head (replaced under the durable lock).
    pub(crate) head: ArcSwap<DurableHead>,
    /// The commit thread async waiters ask for flushes.
    pub(crate) commit: Mutex<Commit>,
    pub(crate) commit_signal: Condvar,
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
    /// A rollback made in memory whose files still hold the leaves it
    /// removed (see [`Store::truncate_deferred`]): settled before the log
    /// is written again.
    pub(crate) deferred: Mutex<Option<crate::rollback::Deferred>>,
    shutdown: Mutex<bool>,
    shutdown_signal: Condvar,
    /// Set when the store is dropped: no more log writes.
    pub(crate) closed: AtomicBool,
    hook: Mutex<Option<Hook>>,
    observer: Mutex<Option<Observer>>,
    /// Opened with [`Store::open_read_only`]: nothing may write.
    pub(crate) read_only: bool,
    /// The lock on the `LOCK` file, which older versions take (the
    /// directory's is this version's): taken again if the file is
    /// removed, released when the store is dropped.
    pub(crate) lock_file: Mutex<Option<Box<dyn FsLock>>>,
    /// A failing checkpoint, the file checks (`health.rs`, `files.rs`).
    pub(crate) upkeep: Mutex<health::Upkeep>,
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
    /// Whole 4 KiB pages of stored nodes (the leaves' included) the open
    /// read and checked against their sums.
    pub pages_checked_at_open: u64,
    /// Whole pages the open did not read again: the verified record
    /// vouched for them (their files unchanged since it was written).
    pub pages_vouched_at_open: u64,
}

impl Store {
    /// Whether this store was opened with [`Store::open_read_only`].
    pub fn is_read_only(&self) -> bool {
        self.inner.read_only
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
        let snapshot = Arc::new(tree.snapshot());
        let head = DurableHead::new(log.end().min(snapshot.size()), Arc::clone(&snapshot), None);
        let durable_tags = tags.len() as u64;
        let mut heads = Heads::new(tags, config.root_window);
        heads.note_append(tree.size());
        let inner = Arc::new(Inner {
            fs,
            dir: dir.to_path_buf(),
            layout: Layout::new(dir, &meta),
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
            durable_changed: event_listener::Event::new(),
            head: ArcSwap::from_pointee(head),
            commit: Mutex::new(Commit::default()),
            commit_signal: Condvar::new(),
            poisoned: AtomicBool::new(false),
            published: ArcSwap::new(snapshot),
            rollback_floor: Arc::new(AtomicU64::new(
                checkpoints
                    .last
                    .as_ref()
                    .map_or(u64::MAX, |c| c.rollback_floor),
            )),
            deferred: Mutex::new(None),
            checkpoints: Mutex::new(checkpoints),
            shutdown: Mutex::new(false),
            shutdown_signal: Condvar::new(),
            closed: AtomicBool::new(false),
            hook: Mutex::new(None),
            observer: Mutex::new(None),
            read_only,
            config,
            lock_file: Mutex::new(None),
            upkeep: Mutex::new(health::Upkeep::default()),
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

    /// Makes the first `limit` leaves durable (all, if the tree holds
    /// fewer) and writes none past them; returns the durable size. For a
    /// caller whose own durable record (a database's block journal) covers
    /// the leaves past `limit`: such a store never tags, never flushes in
    /// the background and never checkpoints on its own, so nothing else
    /// writes them (see docs/file-format.md, "Database directory").
    pub fn flush_to(&self, limit: u64) -> Result<u64> {
        self.inner.flush_to(limit)
    }

    /// Leaves in the tree (visible to readers, not necessarily durable).
    pub fn size(&self) -> u64 {
        self.inner.size.load(Ordering::Acquire)
    }

    /// Leaves durable in the log.
    pub fn durable_size(&self) -> u64 {
        self.inner.head.load().size
    }

    /// The published durable head: the durable size, its root, a snapshot
    /// holding at least that many leaves, and the failure that stopped
    /// acknowledgements, if any. Read without a lock; replaced after each
    /// commit, rollback and failure (wait for the next with a token).
    pub fn durable_head(&self) -> Arc<DurableHead> {
        self.inner.head.load_full()
    }

    /// The tree's configuration.
    pub fn config(&self) -> &StoreConfig {
        &self.inner.config
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// Where the store's files are, and its nodes and frames in them.
    pub fn layout(&self) -> &Layout {
        &self.inner.layout
    }

    /// Where node `index` of `level` is stored: its file and byte offset
    /// (level 0 in the log files, the levels above in the level files).
    pub fn node_location(&self, level: u32, index: u64) -> (PathBuf, u64) {
        self.inner.layout.node_location(level, index)
    }

    /// The level and index of the node a level file holds at `offset`, if
    /// `path` names a level file and `offset` is past its header: the
    /// inverse of [`Store::node_location`] for levels 1 and up.
    pub fn stored_node_at(&self, path: &Path, offset: u64) -> Option<(u32, u64)> {
        self.inner.layout.stored_node_at(path, offset)
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

    /// The last published snapshot, lock-free (it may hold fewer leaves
    /// than [`Store::size`]; [`Store::snapshot`] publishes a current one,
    /// under the tree lock when it must).
    pub fn published(&self) -> Arc<Snapshot> {
        self.inner.published.load_full()
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
    /// first); `None` if the last checkpoint already covers it. A failure
    /// other than the log's own (a level file, `checkpoint.tmp`, the hook)
    /// stops nothing: appends go on, [`Store::health`] reports it and the
    /// background thread tries again.
    pub fn checkpoint(&self) -> Result<Option<CheckpointMeta>> {
        self.inner.checkpoint(None)
    }

    /// Checks now what the background thread checks every second: that
    /// every file name a reopen reads still names the file the store
    /// holds, putting back what was removed or replaced (see
    /// [`Store::health`]'s file events and docs/file-format.md, "Locks").
    pub fn check_files(&self) {
        self.inner.check_files();
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
            pages_checked_at_open: checkpoints.pages_checked,
            pages_vouched_at_open: checkpoints.pages_vouched,
        }
    }

    /// Flushes, seals the log (so that damage to even the last commit is
    /// refused at the next open), stops the background thread and
    /// releases the directory.
    pub fn close(mut self) -> Result<()> {
        self.stop_background();
        self.inner.stop_commit();
        let result = self
            .inner
            .settle_locking()
            .and_then(|()| self.flush())
            .and_then(|_| self.inner.seal());
        if result.is_ok() {
            // Advisory: a close that cannot write it still succeeded.
            let _ = self.inner.record_verified();
        }
        drop(self);
        result
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        self.stop_background();
        self.inner.stop_commit();
        // Best effort: a dropped store flushes what it can; errors were
        // or will be reported through tokens.
        if !self.inner.poisoned.load(Ordering::Acquire) {
            let _ = self
                .inner
                .flush_all(Duration::from_secs(60))
                .and_then(|()| self.inner.seal());
        }
        // Under the flush lock: a flush in progress finishes first, later
        // ones (from tokens that outlive the store) see `closed`.
        let _log = self.inner.log.lock();
        self.inner.closed.store(true, Ordering::Release);
        // `inner` may outlive the store (in tokens): the lock goes now.
        self.inner.lock_file.lock().take();
        // Async waiters whose leaves the close did not make durable learn
        // it now (`StoreError::Closed`).
        self.inner.notify_durable();
    }
}

impl Inner {
    /// Seals the log (see [`LogWriter::seal`]): nothing to do for a
    /// read-only, failed or closed store, or one sealed since its last
    /// commit. A failed seal is returned, and does not stop
    /// acknowledgements: it wrote no leaf.
    pub(crate) fn seal(&self) -> Result<()> {
        if self.read_only || self.poisoned.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut log = self.log.lock();
        if self.closed.load(Ordering::Acquire) {
            return Ok(());
        }
        let heads = {
            let writer = self.heads_writer.lock();
            crate::log::HeadsDurable {
                records: writer.written() as u64,
                epoch: writer.epoch(),
            }
        };
        log.seal(heads)
    }

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
}
