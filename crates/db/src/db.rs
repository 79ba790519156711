//! The database: a store and the nullifier set derived from its leaves.
//!
//! Appends are serialised by the writer lock. Under it a batch is checked
//! (length, canonical leaves, capacity), its values go into the set with the
//! indices they will get (refusing any already present), and only then into
//! the tree. Readers filter the set's answers by the size of the tree they
//! read: every leaf a reader can see is already in the set, and an entry of
//! a leaf not yet visible is ignored. A refused or failed batch is taken
//! back out of the set before the writer lock is released, so nothing of it
//! is ever visible.

use std::ops::Deref;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use cairn_core::{CheckedLeaves, Hash, Snapshot, TreeHead};
use cairn_store::fs::Fs;
use cairn_store::{
    Appended, Backup, BlockTag, CheckpointMeta, StdFs, Store, StoreError, StoreStats, stored_config,
};
use parking_lot::Mutex;

use crate::config::{DbConfig, FLAG_UNIQUE};
use crate::error::{DbError, Result};
use crate::set::file::{self, SET_FILE};
use crate::set::{Duplicate, DuplicateOf, Key, NullifierSet, SetStats};

/// Values replayed into the set per batch at open.
const REPLAY_CHUNK: u64 = 1 << 20;

/// A durable n-ary LeanIMT with a strict nullifier set, in a directory.
///
/// ```
/// use std::time::Duration;
/// use cairn_core::{Arity, HashKind, TreeConfig};
/// use cairn_db::{Db, DbConfig, DbError};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("nullifiers");
/// let config = TreeConfig::new(Arity::new(2)?, HashKind::Sha256);
/// let db = Db::create(&path, DbConfig::new(config))?;
/// let appended = db.append_batch(&[[1; 32], [2; 32]])?;
/// appended.token.wait(Duration::from_secs(5))?;      // durable from here on
/// assert!(matches!(db.append([1; 32]), Err(DbError::Duplicates { .. })));
/// db.close()?;
///
/// let db = Db::open(&path)?;                         // arity and hash from the directory
/// assert_eq!(db.index_of(&[2; 32])?, Some(1));
/// let snapshot = db.snapshot();
/// snapshot.prove(1)?.verify(config.arity, config.hash, &snapshot.head())?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Db {
    pub(crate) store: Store,
    pub(crate) set: Option<Arc<NullifierSet>>,
    pub(crate) persist: Option<Arc<Persist>>,
    /// Serialises appends (the duplicate check and the append are one step).
    pub(crate) writer: Mutex<()>,
    pub(crate) config: DbConfig,
    /// The sizes rolled back to so far, for snapshots taken before.
    pub(crate) cuts: Arc<Cuts>,
    /// Leaves the set's file covered at open (what a read-only database,
    /// which writes no set file, reports).
    covered_at_open: u64,
}

/// The sizes a database was rolled back to, in order: a snapshot taken
/// before a rollback finds the values of the leaves it removed (no longer
/// in the set) by scanning them.
#[derive(Debug, Default)]
pub(crate) struct Cuts(parking_lot::RwLock<Vec<u64>>);

impl Cuts {
    pub(crate) fn count(&self) -> usize {
        self.0.read().len()
    }

    pub(crate) fn push(&self, to: u64) {
        self.0.write().push(to);
    }

    /// The lowest size rolled back to after the first `seen` rollbacks.
    fn lowest_since(&self, seen: usize) -> Option<u64> {
        self.0
            .read()
            .get(seen..)
            .and_then(|cuts| cuts.iter().min().copied())
    }
}

/// The result of [`Db::append_new`].
#[derive(Debug, Clone)]
pub struct AppendedNew {
    /// Where the new values went (`None` if every value was a duplicate).
    pub appended: Option<Appended>,
    /// The values skipped, in batch order.
    pub skipped: Vec<Duplicate>,
}

/// Figures about a database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DbStats {
    /// The storage engine's figures.
    pub store: StoreStats,
    /// The set's figures (`None` without a set).
    pub set: Option<SetStats>,
    /// Leaves covered by the set's checkpoint file.
    pub set_checkpoint_size: u64,
}

/// The database's published durable head (see [`Db::durable_head`]):
/// what a reader may serve without waiting, since a crash can never take
/// it back.
#[derive(Debug, Clone)]
pub struct DurableHead {
    /// Leaves durable on disk.
    pub size: u64,
    /// The root at `size` (`None` for an empty tree).
    pub root: Option<Hash>,
    /// A snapshot holding at least `size` leaves, taken after every
    /// rollback before the commit that made `size` durable: its view at
    /// `size` (`snapshot.view(size)`) is the durable tree.
    pub snapshot: DbSnapshot,
    /// The write or sync failure that stopped acknowledgements, if any.
    pub failure: Option<StoreError>,
}

/// An immutable view of the database: the tree at one size, and lookups
/// that answer for exactly the leaves it holds.
#[derive(Debug, Clone)]
pub struct DbSnapshot {
    tree: Arc<Snapshot>,
    set: Option<Arc<NullifierSet>>,
    cuts: Arc<Cuts>,
    /// Rollbacks made before this snapshot was taken.
    seen: usize,
}

impl DbSnapshot {
    /// The tree.
    pub fn tree(&self) -> &Arc<Snapshot> {
        &self.tree
    }

    /// The index of `value` in this snapshot's tree.
    pub fn index_of(&self, value: &Hash) -> Result<Option<u64>> {
        let set = self.set.as_ref().ok_or(DbError::NoSet)?;
        if let Some(found) = set.find(value, |index| self.tree.leaf(index)) {
            return Ok(Some(found));
        }
        // A rollback since this snapshot took the values of the leaves it
        // removed out of the set; this snapshot still holds them.
        Ok(self
            .cuts
            .lowest_since(self.seen)
            .filter(|&lowest| lowest < self.tree.size())
            .and_then(|lowest| {
                (lowest..self.tree.size()).find(|&i| self.tree.leaf(i).as_ref() == Some(value))
            }))
    }

    /// Whether this snapshot's tree holds `value`.
    pub fn contains(&self, value: &Hash) -> Result<bool> {
        Ok(self.index_of(value)?.is_some())
    }

    /// [`DbSnapshot::index_of`] of each of `values`, in order: the same
    /// answers, with the memory reads of different values overlapped (for
    /// callers with many values at once; about 1,000 a call is plenty).
    pub fn index_of_many(&self, values: &[Hash]) -> Result<Vec<Option<u64>>> {
        let set = self.set.as_ref().ok_or(DbError::NoSet)?;
        let mut found = set.find_many(
            values,
            |index| self.tree.leaf(index),
            |index| prefetch_leaf(&self.tree, index),
        );
        if self
            .cuts
            .lowest_since(self.seen)
            .is_some_and(|lowest| lowest < self.tree.size())
        {
            for (slot, value) in found.iter_mut().zip(values) {
                if slot.is_none() {
                    *slot = self.index_of(value)?;
                }
            }
        }
        Ok(found)
    }
}

/// Starts loading leaf `index` of `tree` into the cache, if it is stored
/// (not the last leaf, which is kept apart).
#[inline]
fn prefetch_leaf(tree: &Snapshot, index: u64) {
    if let Some(leaf) = usize::try_from(index)
        .ok()
        .and_then(|i| tree.final_nodes(0).get(i))
    {
        crate::set::table::prefetch_read(leaf);
    }
}

impl Deref for DbSnapshot {
    type Target = Snapshot;

    fn deref(&self) -> &Snapshot {
        &self.tree
    }
}

/// Writes the set's checkpoint after the store's (in the store's hook, so
/// under its checkpoint lock, or from [`Db::checkpoint`]).
#[derive(Debug)]
pub(crate) struct Persist {
    pub(crate) fs: Arc<dyn Fs>,
    pub(crate) dir: std::path::PathBuf,
    pub(crate) store_id: u64,
    pub(crate) set: Arc<NullifierSet>,
    /// Leaves covered by the set's published checkpoint.
    pub(crate) covered: Mutex<u64>,
    /// Rollbacks so far (a rollback changes it while holding `covered`).
    pub(crate) epoch: AtomicU64,
    /// Cleared once a set file is written: it holds no rolled-back entry.
    pub(crate) floor: cairn_store::RollbackFloor,
    percent: u32,
    /// Automatic checkpoints leave the set's file alone below this size
    /// (a bulk load announced by [`Db::reserve`]).
    bulk_until: AtomicU64,
    /// Tells the store's file checks of each set file written (they put
    /// it back if it is removed or replaced while the database runs).
    watch: std::sync::OnceLock<cairn_store::FileWatch>,
}

impl Persist {
    /// Publishes a checkpoint of the set covering `size` durable leaves if
    /// `force`, or if the published one lags by the configured percentage.
    /// `size` was read in rollback epoch `epoch`: if a rollback came since,
    /// it may be past the tree's end now, and nothing is written.
    pub(crate) fn after_checkpoint(
        &self,
        size: u64,
        force: bool,
        epoch: u64,
    ) -> std::result::Result<(), StoreError> {
        let mut covered = self.covered.lock();
        self.write_locked(&mut covered, size, force, epoch)
    }

    /// The store's hook, run under its checkpoint lock: skips the set's
    /// checkpoint (it is only ever optional there) while a rollback holds
    /// `covered`, since the rollback waits for the store's lock.
    fn after_store_checkpoint(&self, size: u64) -> std::result::Result<(), StoreError> {
        if size < self.bulk_until.load(Ordering::Acquire) {
            return Ok(());
        }
        let epoch = self.epoch.load(Ordering::Acquire);
        match self.covered.try_lock() {
            Some(mut covered) => self.write_locked(&mut covered, size, false, epoch),
            None => Ok(()),
        }
    }

    fn write_locked(
        &self,
        covered: &mut u64,
        size: u64,
        force: bool,
        epoch: u64,
    ) -> std::result::Result<(), StoreError> {
        if size <= *covered || self.epoch.load(Ordering::Acquire) != epoch {
            return Ok(());
        }
        let lag = size - *covered;
        if !force && lag.saturating_mul(100) < covered.saturating_mul(u64::from(self.percent)) {
            return Ok(());
        }
        file::write(&*self.fs, &self.dir, &self.set, self.store_id, size)?;
        *covered = size;
        self.floor.clear();
        if let Some(watch) = self.watch.get() {
            watch.published();
        }
        Ok(())
    }

    /// Writes the set file again for the leaves it covers: the store's
    /// check found it removed or replaced.
    fn rewrite(&self) -> std::result::Result<(), StoreError> {
        let covered = self.covered.lock();
        file::write(&*self.fs, &self.dir, &self.set, self.store_id, *covered)?;
        self.floor.clear();
        if let Some(watch) = self.watch.get() {
            watch.published();
        }
        Ok(())
    }
}

impl Db {
    /// Creates a database in `dir` (created if missing; must be empty).
    pub fn create(dir: impl AsRef<Path>, config: DbConfig) -> Result<Db> {
        Db::create_in(Arc::new(StdFs), dir.as_ref(), config)
    }

    /// Opens the database in `dir` with the configuration it was created
    /// with and default runtime settings.
    pub fn open(dir: impl AsRef<Path>) -> Result<Db> {
        Db::open_in(Arc::new(StdFs), dir.as_ref(), None)
    }

    /// Opens the database in `dir` with `config`, which must agree with the
    /// stored one (arity, hash, max depth, log file size, nullifier set).
    pub fn open_with(dir: impl AsRef<Path>, config: DbConfig) -> Result<Db> {
        Db::open_in(Arc::new(StdFs), dir.as_ref(), Some(config))
    }

    /// [`Db::create`] through a given file system.
    pub fn create_in(fs: Arc<dyn Fs>, dir: &Path, config: DbConfig) -> Result<Db> {
        check_kind(derived(&config), Derived::Plain)?;
        Db::create_kind(fs, dir, config)
    }

    /// Creates a database of either kind (the indexed one's store).
    pub(crate) fn create_kind(fs: Arc<dyn Fs>, dir: &Path, config: DbConfig) -> Result<Db> {
        let store = Store::create(Arc::clone(&fs), dir, config.store_config())?;
        let set = config
            .unique
            .then(|| Arc::new(NullifierSet::new(Key::random())));
        Ok(Db::start(fs, store, set, 0, config))
    }

    /// Opens the database in `dir` read-only, beside a writer (another
    /// process serving or ingesting into it) if one runs: the tree and the
    /// set as durable when it opened, never a byte written in `dir`.
    /// Writes (appends, checkpoints, rollbacks) are refused with
    /// [`StoreError::ReadOnly`]; later appends by the writer are not seen
    /// (open again for them).
    ///
    /// ```
    /// # use cairn_core::{Arity, HashKind, TreeConfig};
    /// # use cairn_db::{Db, DbConfig};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("db");
    /// let writer = Db::create(&path, DbConfig::new(TreeConfig::new(Arity::new(2)?, HashKind::Blake3)))?;
    /// writer.append_batch(&[[1; 32], [2; 32]])?.token.wait(std::time::Duration::from_secs(5))?;
    /// let reader = Db::open_read_only(&path)?;          // beside the running writer
    /// assert_eq!(reader.head(), writer.head());
    /// assert!(reader.append([3; 32]).is_err());         // read-only
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_read_only(dir: impl AsRef<Path>) -> Result<Db> {
        Db::open_read_only_in(Arc::new(StdFs), dir.as_ref(), None)
    }

    /// [`Db::open_read_only`] through a given file system, with `config`
    /// (which must agree with the stored one; `verify_on_open` is honoured,
    /// background settings are ignored) or the stored configuration.
    pub fn open_read_only_in(fs: Arc<dyn Fs>, dir: &Path, config: Option<DbConfig>) -> Result<Db> {
        Db::open_read_only_kind(fs, dir, config, Derived::Plain)
    }

    /// Opens a database of the given kind read-only.
    pub(crate) fn open_read_only_kind(
        fs: Arc<dyn Fs>,
        dir: &Path,
        config: Option<DbConfig>,
        kind: Derived,
    ) -> Result<Db> {
        let config = resolve_config(&*fs, dir, config)?;
        check_kind(derived(&config), kind)?;
        // Taken before the store: the file then covers no leaf the store
        // lacks (see `file::open`).
        let published = if config.unique {
            file::open(&*fs, dir)?
        } else {
            None
        };
        let store = Store::open_read_only(Arc::clone(&fs), dir, config.store_config())?;
        Db::load(fs, store, config, published)
    }

    /// [`Db::open`] (`config: None`) or [`Db::open_with`] through a given
    /// file system.
    pub fn open_in(fs: Arc<dyn Fs>, dir: &Path, config: Option<DbConfig>) -> Result<Db> {
        Db::open_kind(fs, dir, config, Derived::Plain)
    }

    /// Opens a database of the given kind.
    pub(crate) fn open_kind(
        fs: Arc<dyn Fs>,
        dir: &Path,
        config: Option<DbConfig>,
        kind: Derived,
    ) -> Result<Db> {
        let config = resolve_config(&*fs, dir, config)?;
        check_kind(derived(&config), kind)?;
        let store = Store::open(Arc::clone(&fs), dir, config.store_config())?;
        if config.unique {
            // Never published: a set checkpoint that crashed.
            cairn_store::replace::remove_stale(&*fs, &dir.join(file::SET_TMP))?;
        }
        let published = if config.unique {
            file::open(&*fs, dir)?
        } else {
            None
        };
        Db::load(fs, store, config, published)
    }

    /// The set (from `published` and the leaves it does not cover) and the
    /// database around `store`.
    fn load(
        fs: Arc<dyn Fs>,
        store: Store,
        config: DbConfig,
        published: Option<Box<dyn cairn_store::fs::FsFile>>,
    ) -> Result<Db> {
        if !config.unique {
            return Ok(Db::start(fs, store, None, 0, config));
        }
        let dir = store.dir().to_path_buf();
        let size = store.size();
        let floor = store.rollback_floor();
        let (set, covered) = match file::read_from(published, &dir, store.store_id(), size, floor)?
        {
            Some(loaded) => (loaded.set, loaded.covered),
            None => (NullifierSet::new(Key::random()), 0),
        };
        replay(&set, &store, covered, &dir.join(SET_FILE))?;
        Ok(Db::start(fs, store, Some(Arc::new(set)), covered, config))
    }

    /// The database around `store`, without a nullifier set.
    pub(crate) fn from_store(fs: Arc<dyn Fs>, store: Store, config: DbConfig) -> Result<Db> {
        Ok(Db::start(fs, store, None, 0, config))
    }

    fn start(
        fs: Arc<dyn Fs>,
        store: Store,
        set: Option<Arc<NullifierSet>>,
        covered: u64,
        config: DbConfig,
    ) -> Db {
        // A read-only database writes no set checkpoint.
        let persist = set.as_ref().filter(|_| !store.is_read_only()).map(|set| {
            Arc::new(Persist {
                fs,
                dir: store.dir().to_path_buf(),
                store_id: store.store_id(),
                set: Arc::clone(set),
                covered: Mutex::new(covered),
                epoch: AtomicU64::new(0),
                floor: store.rollback_floor_handle(),
                percent: config.set_rewrite_percent,
                bulk_until: AtomicU64::new(0),
                watch: std::sync::OnceLock::new(),
            })
        });
        if let Some(persist) = &persist {
            let weak = Arc::downgrade(persist);
            let watch = store.watch_file(
                SET_FILE,
                Box::new(move || weak.upgrade().map_or(Ok(()), |p| p.rewrite())),
            );
            let _ = persist.watch.set(watch);
            let persist = Arc::clone(persist);
            store.set_checkpoint_hook(Box::new(move |meta: &CheckpointMeta| {
                persist.after_store_checkpoint(meta.size)
            }));
        }
        Db {
            store,
            set,
            persist,
            writer: Mutex::new(()),
            config,
            cuts: Arc::default(),
            covered_at_open: covered,
        }
    }

    /// Appends one value; refused with [`DbError::Duplicates`] if the
    /// database holds it.
    pub fn append(&self, value: Hash) -> Result<Appended> {
        self.append_batch(std::slice::from_ref(&value))
    }

    /// Appends `values` in order, all or nothing: a batch with any value
    /// already in the tree or repeated within it is refused with every
    /// duplicate listed, and nothing is appended or written.
    pub fn append_batch(&self, values: &[Hash]) -> Result<Appended> {
        self.append_checked(values, None)
    }

    /// Appends `values` (possibly none) as block `tag`'s, all or nothing
    /// like [`Db::append_batch`], and records the head at their end (see
    /// [`Store::append_tagged`]): block numbers must increase.
    pub fn append_tagged(&self, values: &[Hash], tag: BlockTag) -> Result<Appended> {
        self.append_checked(values, Some(tag))
    }

    fn append_checked(&self, values: &[Hash], tag: Option<BlockTag>) -> Result<Appended> {
        let _writer = self.writer.lock();
        let Some(set) = self.set.as_ref().filter(|_| !values.is_empty()) else {
            return Ok(match tag {
                Some(tag) => self.store.append_tagged(values, tag),
                None => self.store.append_batch(values),
            }?);
        };
        // Checked once, before the set's work; the store appends the
        // checked batch without scanning it again.
        let checked = self.store.check_batch(values)?;
        // The block order is the store's to check (under its tree lock);
        // a refused tag takes the batch back out of the set below.
        let first = self.store.size();
        let refused = self.insert(set, values, first)?;
        if !refused.is_empty() {
            set.remove_batch(values, first, &refused);
            return Err(DbError::Duplicates {
                batch: values.len(),
                duplicates: refused,
            });
        }
        let appended = match tag {
            Some(tag) => self.store.append_tagged_checked(&checked, tag),
            None => self.store.append_checked(&checked),
        };
        match appended {
            Ok(appended) => {
                assert_eq!(appended.first, first, "appends are serialised");
                Ok(appended)
            }
            Err(error) => {
                set.remove_batch(values, first, &[]);
                Err(error.into())
            }
        }
    }

    /// Appends the values of `values` the database does not hold yet, in
    /// order, skipping (and reporting) the others; a value repeated within
    /// the batch is appended once, at its first position.
    pub fn append_new(&self, values: &[Hash]) -> Result<AppendedNew> {
        let _writer = self.writer.lock();
        let set = self.set.as_ref().ok_or(DbError::NoSet)?;
        let checked = self.store.check_batch(values)?;
        let first = self.store.size();
        let skipped = self.insert(set, values, first)?;
        if skipped.is_empty() {
            let appended = self.append_to_store(set, &checked, first)?;
            return Ok(AppendedNew {
                appended: Some(appended),
                skipped,
            });
        }
        if skipped.len() == values.len() {
            return Ok(AppendedNew {
                appended: None,
                skipped,
            });
        }
        set.compact_batch(values, first, &skipped);
        let refused: Vec<usize> = skipped.iter().map(|d| d.position).collect();
        let fresh = checked
            .without(&refused)
            .expect("fewer values were skipped than the batch holds");
        let appended = self.append_to_store(set, &fresh, first)?;
        Ok(AppendedNew {
            appended: Some(appended),
            skipped,
        })
    }

    fn insert(&self, set: &NullifierSet, values: &[Hash], first: u64) -> Result<Vec<Duplicate>> {
        // Under the writer lock the tree holds exactly `first` leaves. The
        // set confirms tag matches by reading leaves. A batch big enough to
        // go to rayon threads reads them from a lock-free share of the
        // leaves, never through `Store::leaf`, which may take the tree lock:
        // the flush thread and snapshots hold that lock while they hash on
        // the same rayon threads, so a rayon task waiting for it deadlocks
        // the two (found when `cairn ingest` appended a block while the
        // previous one's checkpoint ran). A small batch runs on this thread,
        // where waiting for the lock is safe, and skips the share.
        let shared = (values.len() >= crate::set::PARALLEL_FROM).then(|| self.store.leaves());
        let leaf = |index: u64| match &shared {
            Some(leaves) => usize::try_from(index)
                .ok()
                .and_then(|i| leaves.get(i))
                .copied(),
            None => self.store.leaf(index),
        };
        set.insert_batch(values, first, &leaf)
            .map_err(DbError::SetFull)
    }

    fn append_to_store(
        &self,
        set: &NullifierSet,
        values: &CheckedLeaves<'_>,
        first: u64,
    ) -> Result<Appended> {
        match self.store.append_checked(values) {
            Ok(appended) => {
                assert_eq!(appended.first, first, "appends are serialised");
                Ok(appended)
            }
            Err(error) => {
                set.remove_batch(values.leaves(), first, &[]);
                Err(error.into())
            }
        }
    }

    /// The index of `value`, if the tree holds it (as a reader of the
    /// current snapshot sees it: durable or not).
    pub fn index_of(&self, value: &Hash) -> Result<Option<u64>> {
        let set = self.set.as_ref().ok_or(DbError::NoSet)?;
        let size = self.store.size();
        Ok(set.find(value, |index| {
            if index < size {
                self.store.leaf(index)
            } else {
                None
            }
        }))
    }

    /// Whether the tree holds `value`.
    pub fn contains(&self, value: &Hash) -> Result<bool> {
        Ok(self.index_of(value)?.is_some())
    }

    /// [`Db::index_of`] of each of `values`, in order: the same answers,
    /// with the memory reads of different values overlapped (for callers
    /// with many values at once; about 1,000 a call is plenty).
    pub fn index_of_many(&self, values: &[Hash]) -> Result<Vec<Option<u64>>> {
        let set = self.set.as_ref().ok_or(DbError::NoSet)?;
        let size = self.store.size();
        let published = self.store.published();
        Ok(set.find_many(
            values,
            |index| {
                if index < published.size() {
                    published.leaf(index)
                } else if index < size {
                    self.store.leaf(index)
                } else {
                    None
                }
            },
            |index| prefetch_leaf(&published, index),
        ))
    }

    /// The leaf at `index`, if the tree holds that many.
    pub fn leaf(&self, index: u64) -> Option<Hash> {
        self.store.leaf(index)
    }

    /// An immutable snapshot of everything appended so far.
    pub fn snapshot(&self) -> DbSnapshot {
        // The rollback count first: a snapshot taken after it began sees
        // the smaller tree, one taken before scans what it removed.
        let seen = self.cuts.count();
        DbSnapshot {
            tree: self.store.snapshot(),
            set: self.set.clone(),
            cuts: Arc::clone(&self.cuts),
            seen,
        }
    }

    /// The current head (size and root).
    pub fn head(&self) -> TreeHead {
        self.store.head()
    }

    /// Leaves in the tree.
    pub fn size(&self) -> u64 {
        self.store.size()
    }

    /// Leaves durable on disk.
    pub fn durable_size(&self) -> u64 {
        self.store.durable_size()
    }

    /// The published durable head: the durable size, its root, a snapshot
    /// holding at least that many leaves, and the failure that stopped
    /// acknowledgements. Read without a lock (no tree hashing: the store
    /// takes the snapshot once per group commit); replaced after every
    /// commit, rollback and failure. To wait for a later one, await an
    /// append's [`Token::durable`](crate::Token::durable).
    pub fn durable_head(&self) -> DurableHead {
        // The rollback count first, as in `snapshot`: the store publishes
        // a rollback's head before the count moves.
        let seen = self.cuts.count();
        let head = self.store.durable_head();
        DurableHead {
            size: head.size,
            root: head.root,
            snapshot: DbSnapshot {
                tree: Arc::clone(&head.snapshot),
                set: self.set.clone(),
                cuts: Arc::clone(&self.cuts),
                seen,
            },
            failure: head.failure.clone(),
        }
    }

    /// The write or sync failure that stopped acknowledgements, if any.
    pub fn failure(&self) -> Option<StoreError> {
        self.store.durable_head().failure.clone()
    }

    /// Makes everything appended so far durable; returns the durable size.
    pub fn flush(&self) -> Result<u64> {
        Ok(self.store.flush()?)
    }

    /// What the store reports about itself, read without waiting for a
    /// write: the failure that stopped acknowledgements, a failing
    /// checkpoint (appends go on; the store tries again), and the files
    /// found removed or replaced under it (see
    /// [`cairn_store::Store::health`]).
    pub fn health(&self) -> cairn_store::StoreHealth {
        self.store.health()
    }

    /// Checkpoints the tree and the set (flushing first); returns the
    /// store's checkpoint, `None` if the last one already covered
    /// everything.
    pub fn checkpoint(&self) -> Result<Option<CheckpointMeta>> {
        let written = self.store.checkpoint()?;
        if let Some(persist) = &self.persist {
            let epoch = persist.epoch.load(Ordering::Acquire);
            persist.after_checkpoint(self.store.stats().checkpoint_size, true, epoch)?;
        }
        Ok(written)
    }

    /// Runs `observer` after every checkpoint written (manual or
    /// automatic) with the time it took, the set's checkpoint included
    /// (see [`Store::set_checkpoint_observer`]).
    pub fn set_checkpoint_observer(&self, observer: cairn_store::CheckpointObserver) {
        self.store.set_checkpoint_observer(observer);
    }

    /// Figures about the database.
    pub fn stats(&self) -> DbStats {
        DbStats {
            store: self.store.stats(),
            set: self.set.as_ref().map(|s| s.stats()),
            set_checkpoint_size: self
                .persist
                .as_ref()
                .map_or(self.covered_at_open, |p| *p.covered.lock()),
        }
    }

    /// Announces a bulk load of `additional` more values. The nullifier
    /// set makes room for them, so that appending them grows none of its
    /// tables (a growth moves every entry of its table: a load that grows
    /// them batch by batch moves each entry several times; the memory is
    /// taken now, about 10 bytes per value). And until the tree holds
    /// them, automatic checkpoints leave the set's file as it is (each
    /// would rewrite it whole): [`Db::checkpoint`] writes it, and a crash
    /// before that costs the next open the insertion of the leaves it does
    /// not cover, read from the log. Nothing without a set.
    pub fn reserve(&self, additional: u64) -> Result<()> {
        let Some(set) = &self.set else {
            return Ok(());
        };
        if let Some(persist) = &self.persist {
            let until = self.size().saturating_add(additional);
            persist.bulk_until.store(until, Ordering::Release);
        }
        set.reserve(additional).map_err(DbError::SetFull)
    }

    /// The longest probe sequence in the set (a figure for adversarial
    /// tests and benchmarks; scans every shard).
    pub fn set_max_probe(&self) -> Result<usize> {
        Ok(self.set.as_ref().ok_or(DbError::NoSet)?.max_probe())
    }

    /// Checks the set against the tree: every leaf is found at its index
    /// and the set holds nothing else. Reports the first leaf that is not.
    pub fn check_set(&self) -> Result<()> {
        let set = self.set.as_ref().ok_or(DbError::NoSet)?;
        let _writer = self.writer.lock();
        let snapshot = self.store.snapshot();
        let size = snapshot.size();
        let path = self.store.dir().join(SET_FILE);
        use rayon::prelude::*;
        let missing = (0..size.div_ceil(REPLAY_CHUNK))
            .into_par_iter()
            .find_map_first(|chunk| {
                (chunk * REPLAY_CHUNK..((chunk + 1) * REPLAY_CHUNK).min(size)).find_map(|i| {
                    let leaf = snapshot.leaf(i).expect("below size");
                    let found = set.find(&leaf, |j| snapshot.leaf(j));
                    (found != Some(i)).then_some((i, found))
                })
            });
        if let Some((index, found)) = missing {
            let leaf = snapshot.leaf(index).expect("below size");
            return Err(StoreError::corrupt(
                path,
                0,
                format!(
                    "leaf {index} ({}) is {} in the nullifier set",
                    cairn_core::hex::to_hex(&leaf),
                    match found {
                        None => "missing".to_string(),
                        Some(other) => format!("at index {other}"),
                    }
                ),
            )
            .into());
        }
        if set.len() != size {
            return Err(StoreError::corrupt(
                path,
                0,
                format!(
                    "the nullifier set holds {} values, the tree {size} leaves",
                    set.len()
                ),
            )
            .into());
        }
        Ok(())
    }

    /// Writes a consistent copy of the database's durable state into
    /// `dest` (created; it must not exist or be empty) while appends go
    /// on: the tree, tagged heads and finalized size (see
    /// [`Store::backup_to`]) and the nullifier set's file for exactly the
    /// copied leaves. `dest` then opens as a database with the same size,
    /// root and set. Works on a read-only database too (a backup of a
    /// directory another process serves).
    pub fn backup_to(&self, dest: impl AsRef<Path>) -> Result<Backup> {
        let dest = dest.as_ref();
        let Some(set) = &self.set else {
            return Ok(self.store.backup_to(dest)?);
        };
        let store_id = self.store.store_id();
        let cuts = self.cuts.count();
        let mut write_set = |fs: &dyn Fs, dest: &Path, size: u64| {
            file::write(fs, dest, set, store_id, size)?;
            if self.cuts.count() != cuts {
                // A rollback changed the set while it was copied: leave no
                // set file, and the copy rebuilds its set from its leaves
                // when first opened.
                let path = dest.join(SET_FILE);
                fs.remove_file(&path)
                    .map_err(|e| StoreError::io("remove", &path, e))?;
                fs.sync_dir(dest)
                    .map_err(|e| StoreError::io("fsync", dest, e))?;
                return Ok(0);
            }
            let path = dest.join(SET_FILE);
            let file = fs
                .open(&path, cairn_store::fs::OpenMode::ReadOnly)
                .map_err(|e| StoreError::io("open", &path, e))?;
            file.len().map_err(|e| StoreError::io("stat", &path, e))
        };
        Ok(self.store.backup_with(dest, &mut write_set)?)
    }

    /// The configuration it runs with.
    pub fn config(&self) -> &DbConfig {
        &self.config
    }

    /// Whether the database keeps a nullifier set.
    pub fn is_unique(&self) -> bool {
        self.set.is_some()
    }

    /// The database's directory.
    pub fn dir(&self) -> &Path {
        self.store.dir()
    }

    /// Flushes and releases the directory.
    pub fn close(self) -> Result<()> {
        Ok(self.store.close()?)
    }
}

/// What a store's leaves are: the tree's own leaves, an indexed tree's
/// values (see [`crate::IndexedDb`]) or a mutable tree's changes (see
/// [`crate::MutableDb`]); a database of one is never opened as another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Derived {
    /// A lean or fixed-depth tree's leaves.
    Plain,
    /// An indexed tree's values.
    Indexed,
    /// A mutable tree's changes.
    Mutable,
}

/// What `config`'s store holds.
pub(crate) fn derived(config: &DbConfig) -> Derived {
    if config.store.mutable.is_some() || config.mutable.is_some() {
        Derived::Mutable
    } else if config.tree().kind == cairn_core::TreeKind::Indexed {
        Derived::Indexed
    } else {
        Derived::Plain
    }
}

/// Refuses to open a database of one kind as another: the trees differ.
pub(crate) fn check_kind(stored: Derived, asked: Derived) -> Result<()> {
    if stored == asked {
        return Ok(());
    }
    let word = |kind: Derived| {
        match kind {
            Derived::Indexed => "indexed (open it with IndexedDb)",
            Derived::Mutable => "mutable (open it with MutableDb)",
            Derived::Plain => "lean or imt (open it with Db)",
        }
        .to_string()
    };
    Err(DbError::ConfigMismatch {
        field: "tree kind",
        stored: word(stored),
        given: word(asked),
    })
}

/// `config` checked against the stored configuration of `dir`, or the
/// stored configuration with default runtime settings.
pub(crate) fn resolve_config(
    fs: &dyn Fs,
    dir: &Path,
    config: Option<DbConfig>,
) -> Result<DbConfig> {
    let meta = stored_config(fs, dir)?;
    let stored_unique = meta.flags & FLAG_UNIQUE != 0;
    let stored_explicit = meta.flags & cairn_store::FLAG_EXPLICIT_FINALITY != 0;
    let config = match config {
        Some(config) => {
            if config.unique != stored_unique {
                let word = |on: bool| if on { "on" } else { "off" }.to_string();
                return Err(DbError::ConfigMismatch {
                    field: "nullifier set (unique)",
                    stored: word(stored_unique),
                    given: word(config.unique),
                });
            }
            if config.explicit_finality != stored_explicit {
                let word = |on: bool| if on { "explicit" } else { "at checkpoints" }.to_string();
                return Err(DbError::ConfigMismatch {
                    field: "finality",
                    stored: word(stored_explicit),
                    given: word(config.explicit_finality),
                });
            }
            let stored = if meta.mutable.is_some() {
                Derived::Mutable
            } else if meta.tree.kind == cairn_core::TreeKind::Indexed {
                Derived::Indexed
            } else {
                Derived::Plain
            };
            check_kind(stored, derived(&config))?;
            config
        }
        None => {
            let mut config = DbConfig::new(match meta.mutable {
                Some(shape) => meta.tree.with_kind(shape),
                None => meta.tree,
            });
            config.mutable = meta
                .mutable
                .map(|_| meta.flags & crate::mutable::FLAG_READMIT != 0);
            config.store.log_shift = meta.log_shift;
            config.unique = stored_unique;
            config.explicit_finality = stored_explicit;
            config
        }
    };
    Ok(config)
}

/// Inserts leaves `from..` of `store` into `set` (those the set's
/// checkpoint does not cover), in large parallel batches. A repeated leaf
/// means the log holds what a unique database never appends: corruption.
fn replay(set: &NullifierSet, store: &Store, from: u64, path: &Path) -> Result<()> {
    let snapshot = store.snapshot();
    let size = snapshot.size();
    let mut start = from;
    let mut chunk = Vec::new();
    while start < size {
        let end = (start + REPLAY_CHUNK).min(size);
        chunk.clear();
        chunk.extend((start..end).map(|i| snapshot.leaf(i).expect("below size")));
        let leaf = |index: u64| snapshot.leaf(index);
        let refused = set
            .insert_batch(&chunk, start, &leaf)
            .map_err(DbError::SetFull)?;
        if let Some(first) = refused.first() {
            return Err(StoreError::corrupt(
                path,
                0,
                format!(
                    "leaf {} repeats leaf {}: a database with a nullifier set never appends a value twice",
                    start + first.position as u64,
                    match first.of {
                        DuplicateOf::Leaf(index) => index,
                        DuplicateOf::Batch(position) => start + position as u64,
                    }
                ),
            )
            .into());
        }
        start = end;
    }
    Ok(())
}
