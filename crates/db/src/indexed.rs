//! The indexed database: an indexed tree (sorted linked-list leaves,
//! absence proofs) over a durable log of the values inserted.
//!
//! The store is used unchanged as the durable, group-committed log of the
//! values in insertion order; the indexed tree is a function of that
//! sequence, kept in memory and rebuilt at open from the recovered values
//! (a sort and one hash per leaf). So durability tokens, recovery,
//! rollback, checkpoints of the log and backups are the store's, and
//! after any crash the tree is exactly the tree of the recovered values.
//!
//! Invariant: the tree holds exactly the durable values (a prefix of the
//! log): values are applied to it once the log has made them durable, so
//! every head, proof and lookup describes durable state only, and nothing
//! a reader was told can be lost or forked by a crash. Values appended but
//! not yet durable are "pending": the duplicate check covers them, readers
//! do not see them. The first reader (or writer) to notice that the log's
//! durable size passed the tree applies the new values, under the tree's
//! write lock.
//!
//! Why the log and not a store of the tree's nodes: the tree is a function
//! of the values in insertion order, so the log the storage engine already
//! makes durable, recovers, rolls back and backs up is a complete record of
//! it; a second durable structure (versioned nodes, as a key-value store
//! would keep) would need its own recovery for no new information. The
//! price is the rebuild at open (docs/performance.md has its figures) and
//! the store's own LeanIMT over the values, kept for its recovery; the
//! store records the kind, so [`crate::Db`] refuses an indexed directory
//! and `IndexedDb` any other, and that tree is never mistaken for this one.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use cairn_core::indexed::{
    AbsenceProof, HistoryStats, IndexedError, IndexedLeaf, IndexedMembershipProof, IndexedSnapshot,
    IndexedTree, InsertionWitness,
};
use cairn_core::{Hash, TreeConfig, TreeHead};
use cairn_store::fs::Fs;
use cairn_store::{Backup, CheckpointMeta, StdFs, StoreError, Token};
use parking_lot::{Mutex, RwLock};

use crate::config::DbConfig;
use crate::db::{Db, DbStats};
use crate::error::{DbError, Result};
use crate::set::value_map::ValueMap;
use crate::set::{Duplicate, DuplicateOf};

/// A durable indexed Merkle tree in a directory: insert values, prove
/// their absence or membership, get insertion witnesses.
///
/// Sizes and indices are the indexed tree's: leaf 0 is the guard (value
/// 0), so a database holding `n` values has size `n + 1`, and the `i`-th
/// value inserted (from 0) is leaf `i + 1`. Durability tokens count values
/// (the log's sequence): a token's `end()` is a size minus one.
///
/// ```
/// use std::time::Duration;
/// use cairn_core::{Arity, HashKind, TreeConfig};
/// use cairn_db::{DbConfig, IndexedDb};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("nullifiers");
/// let config = TreeConfig::new(Arity::new(4)?, HashKind::Blake3);
/// let db = IndexedDb::create(&path, DbConfig::new(config))?;
/// let inserted = db.insert_batch(&[[7; 32], [3; 32]])?;
/// inserted.token.wait(Duration::from_secs(5))?;      // durable from here on
/// let head = db.head();                              // the guard and two values
/// assert_eq!(head.size, 3);
/// let proof = db.prove_absence(&[5; 32])?;           // 3 < 5 < 7
/// proof.verify(config.arity, config.hash, &head, &[5; 32])?;
/// assert!(db.insert([3; 32]).is_err());              // already there
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct IndexedDb {
    db: Db,
    state: RwLock<State>,
    /// Values applied to the tree (its size minus the guard), read
    /// without the lock to skip catching up when there is nothing new.
    applied: AtomicU64,
    /// Serialises inserts and rollbacks (the duplicate check and the
    /// append are one step).
    writer: Mutex<()>,
}

#[derive(Debug)]
struct State {
    tree: IndexedTree,
    /// Values in the log but not yet in the tree: value -> log index.
    pending: ValueMap<Hash, u64>,
    /// Batches whose witness was asked for: first log index -> (count, slot).
    witnesses: BTreeMap<u64, (u64, Arc<OnceLock<InsertionWitness>>)>,
    /// Every insert not yet applied: first log index -> count. Each is
    /// applied on its own, so each is a head of the tree's history.
    batches: BTreeMap<u64, u64>,
}

/// Where an insert went.
#[derive(Debug, Clone)]
pub struct Inserted {
    /// The leaf index of the first value (the guard is leaf 0).
    pub first: u64,
    /// Values inserted.
    pub count: u64,
    /// Durability of everything up to and including these values (its
    /// `end()` counts values, one less than the tree's size).
    pub token: Token,
}

/// An insert whose witness was asked for: [`IndexedDb::witness`] returns it
/// once the values are durable.
#[derive(Debug, Clone)]
pub struct WitnessTicket {
    /// The insert.
    pub inserted: Inserted,
    slot: Arc<OnceLock<InsertionWitness>>,
}

impl IndexedDb {
    /// Creates an indexed database in `dir` (created if missing; must be
    /// empty). `config.unique` is ignored: the indexed tree itself refuses
    /// duplicates.
    pub fn create(dir: impl AsRef<Path>, config: DbConfig) -> Result<IndexedDb> {
        IndexedDb::create_in(Arc::new(StdFs), dir.as_ref(), config)
    }

    /// [`IndexedDb::create`] through a given file system.
    pub fn create_in(fs: Arc<dyn Fs>, dir: &Path, config: DbConfig) -> Result<IndexedDb> {
        let heads = config.history_heads;
        let db = Db::create_kind(fs, dir, indexed_config(config))?;
        IndexedDb::load(db, heads)
    }

    /// Opens the indexed database in `dir` with the configuration it was
    /// created with: recovers the log and rebuilds the tree from its values.
    pub fn open(dir: impl AsRef<Path>) -> Result<IndexedDb> {
        IndexedDb::open_in(Arc::new(StdFs), dir.as_ref(), None)
    }

    /// [`IndexedDb::open`] through a given file system, with `config`
    /// (which must agree with the stored one) or the stored one.
    pub fn open_in(fs: Arc<dyn Fs>, dir: &Path, config: Option<DbConfig>) -> Result<IndexedDb> {
        let heads = history_heads(config.as_ref());
        let db = Db::open_kind(
            fs,
            dir,
            config.map(indexed_config),
            crate::db::Derived::Indexed,
        )?;
        IndexedDb::load(db, heads)
    }

    /// Opens the indexed database in `dir` read-only (beside a writer, if
    /// one runs): the values durable when it opened.
    pub fn open_read_only(dir: impl AsRef<Path>) -> Result<IndexedDb> {
        IndexedDb::open_read_only_in(Arc::new(StdFs), dir.as_ref(), None)
    }

    /// Whether it was opened read-only.
    pub fn is_read_only(&self) -> bool {
        self.db.store.is_read_only()
    }

    /// [`IndexedDb::open_read_only`] through a given file system.
    pub fn open_read_only_in(
        fs: Arc<dyn Fs>,
        dir: &Path,
        config: Option<DbConfig>,
    ) -> Result<IndexedDb> {
        let heads = history_heads(config.as_ref());
        let db = Db::open_read_only_kind(
            fs,
            dir,
            config.map(indexed_config),
            crate::db::Derived::Indexed,
        )?;
        IndexedDb::load(db, heads)
    }

    /// Rebuilds the tree from every value in the log (all durable after
    /// recovery). A value the tree refuses (0, non-canonical, repeated)
    /// means the log holds what this database never appends: corruption.
    ///
    /// The history is rebuilt too: the tree is built at once up to the
    /// last `heads - 1` values, which are then inserted one at a time, so
    /// after an open every size of the last `heads` is a retained head
    /// (the log does not keep where each insert ended).
    fn load(db: Db, heads: usize) -> Result<IndexedDb> {
        let config = db.config().tree();
        let logged = db.store.size();
        let replayed = logged.min(heads.max(1) as u64 - 1);
        let size = logged - replayed;
        let leaves = db.store.leaves();
        let runs = leaves
            .segment_slices()
            .scan(0u64, |at, run| {
                let take = (size - *at).min(run.len() as u64) as usize;
                *at += take as u64;
                Some(&run[..take])
            })
            .filter(|run| !run.is_empty());
        let corrupt = |e: IndexedError| {
            let path = db.store.layout().log_dir();
            DbError::Store(StoreError::corrupt(
                path,
                0,
                format!("the log is not an indexed tree's values: {e}"),
            ))
        };
        let mut tree = IndexedTree::from_runs(config, runs).map_err(corrupt)?;
        tree.set_history_window(heads);
        for index in size..logged {
            let value = *leaves
                .get(index as usize)
                .expect("recovered values are in the log");
            tree.insert(value).map_err(corrupt)?;
        }
        let applied = tree.size() - 1;
        Ok(IndexedDb {
            db,
            state: RwLock::new(State {
                tree,
                pending: ValueMap::default(),
                witnesses: BTreeMap::new(),
                batches: BTreeMap::new(),
            }),
            applied: AtomicU64::new(applied),
            writer: Mutex::new(()),
        })
    }

    /// Inserts one value (see [`IndexedDb::insert_batch`]).
    pub fn insert(&self, value: Hash) -> Result<Inserted> {
        self.insert_batch(std::slice::from_ref(&value))
    }

    /// Inserts `values` in order, all or nothing: a batch holding the
    /// guard value 0, a non-canonical value (field hashes), or a value the
    /// database holds (durable or pending) or repeats is refused with every
    /// duplicate listed, and nothing is written. The values reach the tree
    /// (and its head and proofs) once durable.
    pub fn insert_batch(&self, values: &[Hash]) -> Result<Inserted> {
        Ok(self.insert_inner(values, false)?.inserted)
    }

    /// [`IndexedDb::insert_batch`], keeping the witness of the insertion
    /// (the low leaves before and the new leaves' paths after, one value
    /// at a time): [`IndexedDb::witness`] returns it once durable.
    pub fn insert_witnessed(&self, values: &[Hash]) -> Result<WitnessTicket> {
        self.insert_inner(values, true)
    }

    /// Inserts the values of `values` the database does not hold (durable
    /// or pending), in order, skipping (and reporting) the others; a value
    /// repeated within the batch is inserted once, at its first position.
    /// The guard value 0 and non-canonical values are refused as by
    /// [`IndexedDb::insert_batch`]. `None` when every value was skipped.
    pub fn insert_new(&self, values: &[Hash]) -> Result<(Option<Inserted>, Vec<Duplicate>)> {
        let _writer = self.writer.lock();
        let first = self.db.store.size();
        let state = self.state.write();
        let skipped = state.duplicates(values)?;
        if skipped.len() == values.len() {
            return Ok((None, skipped));
        }
        let mut skip = skipped.iter().map(|d| d.position).peekable();
        let fresh: Vec<Hash> = values
            .iter()
            .enumerate()
            .filter(|&(position, _)| skip.next_if_eq(&position).is_none())
            .map(|(_, value)| *value)
            .collect();
        let ticket = self.append_locked(state, &fresh, first, false)?;
        Ok((Some(ticket.inserted), skipped))
    }

    fn insert_inner(&self, values: &[Hash], witness: bool) -> Result<WitnessTicket> {
        let _writer = self.writer.lock();
        let first = self.db.store.size();
        let state = self.state.write();
        let duplicates = state.duplicates(values)?;
        if !duplicates.is_empty() {
            return Err(DbError::Duplicates {
                batch: values.len(),
                duplicates,
            });
        }
        self.append_locked(state, values, first, witness)
    }

    /// Appends `values`, checked and free of duplicates, to the log (under
    /// the writer lock, with the state's lock held on entry): `first` is
    /// the log's size.
    fn append_locked(
        &self,
        mut state: parking_lot::RwLockWriteGuard<'_, State>,
        values: &[Hash],
        first: u64,
        witness: bool,
    ) -> Result<WitnessTicket> {
        let slot = Arc::new(OnceLock::new());
        state.check_room(first, values.len() as u64)?;
        // Registered before the log holds them: a reader that sees them
        // durable right after the append finds them here.
        for (offset, value) in values.iter().enumerate() {
            state.pending.insert(*value, first + offset as u64);
        }
        if witness {
            state
                .witnesses
                .insert(first, (values.len() as u64, Arc::clone(&slot)));
        }
        state.batches.insert(first, values.len() as u64);
        drop(state);
        match self.db.append_batch(values) {
            Ok(appended) => {
                assert_eq!(appended.first, first, "inserts are serialised");
                // What became durable goes into the tree now, while the
                // log writes this batch: the pending values (and their
                // map) stay within the log's undurable window even when
                // nothing reads, and applying overlaps the fsync.
                self.catch_up();
                Ok(WitnessTicket {
                    inserted: Inserted {
                        first: first + 1,
                        count: appended.count,
                        token: appended.token,
                    },
                    slot,
                })
            }
            Err(error) => {
                let mut state = self.state.write();
                for value in values {
                    state.pending.remove(value);
                }
                state.witnesses.remove(&first);
                state.batches.remove(&first);
                Err(error)
            }
        }
    }

    /// The witness of `ticket`'s insert: waits up to `timeout` for it to be
    /// durable (flushing if no flush runs), then returns it.
    pub fn witness(&self, ticket: &WitnessTicket, timeout: Duration) -> Result<InsertionWitness> {
        ticket.inserted.token.wait(timeout)?;
        self.catch_up();
        ticket.slot.get().cloned().ok_or_else(|| {
            // Durable but not applied: only if a rollback removed it
            // between the wait and here.
            DbError::Store(StoreError::RolledBack {
                end: ticket.inserted.token.end(),
                to: self.applied.load(Ordering::Acquire),
            })
        })
    }

    /// Applies the values the log made durable since the last call.
    fn catch_up(&self) {
        let durable = self.db.store.durable_size();
        if self.applied.load(Ordering::Acquire) >= durable {
            return;
        }
        let mut state = self.state.write();
        // Read again under the lock: a rollback that finished meanwhile cut
        // the tree under this lock, and values appended after it may not
        // be durable, whatever the first reading said.
        let durable = self.db.store.durable_size();
        let mut at = state.tree.size() - 1;
        if at >= durable {
            return;
        }
        let leaves = self.db.store.leaves();
        // A rollback may have cut the log since `durable` was read (it
        // then cuts the tree too, under the writer lock, after this).
        let durable = durable.min(leaves.len() as u64);
        let read = |from: u64, to: u64| -> Vec<Hash> {
            (from..to)
                .map(|i| {
                    *leaves
                        .get(i as usize)
                        .expect("durable leaves are in the log")
                })
                .collect()
        };
        while at < durable {
            let next = state
                .witnesses
                .range(at..)
                .next()
                .map(|(&first, &(count, _))| (first, count));
            match next {
                Some((first, count)) if first == at => {
                    if first + count > durable {
                        break;
                    }
                    let values = read(first, first + count);
                    let witness = state
                        .tree
                        .insert_with_witness(&values)
                        .expect("values checked when they were appended");
                    if let Some((_, slot)) = state.witnesses.remove(&first) {
                        let _ = slot.set(witness);
                    }
                    at += count;
                }
                next => {
                    // Up to the end of the insert that starts here (or the
                    // next one's start): each insert is one head.
                    let batch_end = match state.batches.get(&at) {
                        Some(&count) => at + count,
                        None => state
                            .batches
                            .range(at..)
                            .next()
                            .map_or(durable, |(&f, _)| f),
                    };
                    let end = next
                        .map_or(durable, |(first, _)| first.min(durable))
                        .min(batch_end)
                        .min(durable);
                    let values = read(at, end);
                    state
                        .tree
                        .insert_batch(&values)
                        .expect("values checked when they were appended");
                    at = end;
                }
            }
            if at > self.applied.load(Ordering::Acquire) {
                // Inserts wholly applied; one applied in part keeps its
                // entry under its first index, and its rest is applied
                // as its own head when durable.
                let done: Vec<u64> = state.batches.range(..at).map(|(&f, _)| f).collect();
                for first in done {
                    let count = state.batches.remove(&first).expect("just listed");
                    if first + count > at {
                        state.batches.insert(at, first + count - at);
                    }
                }
                let from = self.applied.load(Ordering::Acquire);
                for value in read(from, at) {
                    state.pending.remove(&value);
                }
                self.applied.store(at, Ordering::Release);
            }
        }
    }

    /// The durable head: size (values + 1) and root.
    pub fn head(&self) -> TreeHead {
        self.catch_up();
        self.state.read().tree.head()
    }

    /// The tree's size (durable values + 1).
    pub fn size(&self) -> u64 {
        self.catch_up();
        self.state.read().tree.size()
    }

    /// Values in the log, durable or not (the next insert's log index).
    pub fn logged(&self) -> u64 {
        self.db.store.size()
    }

    /// The tree's size as last applied, without applying the values that
    /// became durable since (every other read applies them first): with
    /// [`IndexedDb::durable_size`], how far the tree trails the log.
    pub fn applied_size(&self) -> u64 {
        self.applied.load(Ordering::Acquire) + 1
    }

    /// The tree's size once every durable value is applied: the log's
    /// durable values and the guard. Never below [`IndexedDb::applied_size`]
    /// outside a rollback.
    pub fn durable_size(&self) -> u64 {
        self.db.durable_size() + 1
    }

    /// The leaf index of `value` if it is durable in the tree.
    pub fn index_of(&self, value: &Hash) -> Option<u64> {
        self.catch_up();
        self.state.read().tree.index_of(value)
    }

    /// [`IndexedDb::index_of`] of each of `values` (the guard value 0 is
    /// no value: `None`), with the tree's size they are answered at.
    pub fn index_of_many(&self, values: &[Hash]) -> (u64, Vec<Option<u64>>) {
        self.catch_up();
        let state = self.state.read();
        let indices = values
            .iter()
            .map(|value| state.tree.index_of(value).filter(|&index| index > 0))
            .collect();
        (state.tree.size(), indices)
    }

    /// Leaf `index`, with its pointer.
    pub fn leaf(&self, index: u64) -> Option<IndexedLeaf> {
        self.catch_up();
        self.state.read().tree.leaf(index)
    }

    /// The absence proof of `value` against the durable head.
    pub fn prove_absence(&self, value: &Hash) -> Result<AbsenceProof> {
        self.catch_up();
        Ok(self.state.read().tree.prove_absence(value)?)
    }

    /// The absence proof of `value` and the head it is against, read together.
    pub fn prove_absence_with_head(&self, value: &Hash) -> Result<(AbsenceProof, TreeHead)> {
        self.catch_up();
        let state = self.state.read();
        Ok((state.tree.prove_absence(value)?, state.tree.head()))
    }

    /// The membership proof of `value` against the durable head.
    pub fn prove_value(&self, value: &Hash) -> Result<IndexedMembershipProof> {
        self.catch_up();
        Ok(self.state.read().tree.prove_value(value)?)
    }

    /// The membership proof of leaf `index` against the durable head.
    pub fn prove_index(&self, index: u64) -> Result<IndexedMembershipProof> {
        self.catch_up();
        Ok(self.state.read().tree.prove_index(index)?)
    }

    /// The retained head of `size` leaves (see [`IndexedDb::heads`]):
    /// [`IndexedError::OutsideWindow`] below the oldest,
    /// [`IndexedError::NotAHead`] inside one applied insert.
    pub fn head_at(&self, size: u64) -> Result<TreeHead> {
        self.catch_up();
        Ok(self.state.read().tree.head_at(size)?)
    }

    /// The retained heads, oldest first, the durable head last: one per
    /// insert applied since the oldest (every size of the last
    /// [`DbConfig::history_heads`] values after an open).
    pub fn heads(&self) -> Vec<TreeHead> {
        self.catch_up();
        self.state.read().tree.heads()
    }

    /// The size of the retained head whose root is `root`.
    pub fn size_of_root(&self, root: &Hash) -> Option<u64> {
        self.catch_up();
        self.state.read().tree.size_of_root(root)
    }

    /// The absence proof of `value` against the retained head of `size`
    /// leaves.
    pub fn prove_absence_at(&self, value: &Hash, size: u64) -> Result<AbsenceProof> {
        self.catch_up();
        Ok(self.state.read().tree.prove_absence_at(value, size)?)
    }

    /// The membership proof of `value` against the retained head of
    /// `size` leaves.
    pub fn prove_value_at(&self, value: &Hash, size: u64) -> Result<IndexedMembershipProof> {
        self.catch_up();
        Ok(self.state.read().tree.prove_value_at(value, size)?)
    }

    /// The membership proof of leaf `index` against the retained head of
    /// `size` leaves.
    pub fn prove_index_at(&self, index: u64, size: u64) -> Result<IndexedMembershipProof> {
        self.catch_up();
        Ok(self.state.read().tree.prove_index_at(index, size)?)
    }

    /// What the history holds and its cost in bytes.
    pub fn history_stats(&self) -> HistoryStats {
        self.catch_up();
        self.state.read().tree.history_stats()
    }

    /// An immutable snapshot of the durable tree: later inserts and
    /// rollbacks never change what it answers (they copy what they would
    /// overwrite, so the first insert after a snapshot costs a copy of
    /// each 2 MiB segment it touches).
    pub fn snapshot(&self) -> IndexedSnapshot {
        self.catch_up();
        self.state.write().tree.snapshot()
    }

    /// What the store reports about itself (see [`Db::health`]).
    pub fn health(&self) -> cairn_store::StoreHealth {
        self.db.health()
    }

    /// Makes every value appended so far durable and applies it; returns
    /// the head.
    pub fn flush(&self) -> Result<TreeHead> {
        self.db.flush()?;
        Ok(self.head())
    }

    /// Makes the first `values` values durable, none past them; returns
    /// the durable count of values (see [`crate::Database::flush_to`]).
    pub(crate) fn flush_to(&self, values: u64) -> Result<u64> {
        Ok(self.db.store.flush_to(values)?)
    }

    /// Checkpoints the log (flushing first): open then recovers from it
    /// rather than from every frame. The tree is always rebuilt from the
    /// values.
    pub fn checkpoint(&self) -> Result<Option<CheckpointMeta>> {
        let written = self.db.checkpoint()?;
        self.catch_up();
        Ok(written)
    }

    /// Rolls back to the tree of `size` leaves (the guard and the first
    /// `size - 1` values): atomic and durable (the log's rollback), refused
    /// below the finalized size. Pending values past it are dropped (their
    /// tokens fail with `RolledBack`); the removed values can be inserted
    /// again; snapshots taken before keep their answers.
    pub fn truncate(&self, size: u64) -> Result<TreeHead> {
        if size == 0 {
            return Err(IndexedError::TruncateGuard { to: 0 }.into());
        }
        let _writer = self.writer.lock();
        self.catch_up();
        let to = size - 1;
        self.db.truncate(to)?;
        let mut state = self.state.write();
        state.pending.retain(|_, index| *index < to);
        state
            .witnesses
            .retain(|&first, &mut (count, _)| first + count <= to);
        state.batches.retain(|&first, _| first < to);
        if let Some((&first, count)) = state.batches.iter_mut().next_back() {
            *count = (*count).min(to - first);
        }
        if state.tree.size() > size {
            state.tree.truncate(size)?;
        }
        self.applied.store(state.tree.size() - 1, Ordering::Release);
        drop(state);
        self.catch_up();
        Ok(self.head())
    }

    /// Marks the first `size` leaves final: no rollback below them.
    pub fn finalize(&self, size: u64) -> Result<u64> {
        Ok(self.db.finalize(size.saturating_sub(1))? + 1)
    }

    /// Leaves below which a rollback is refused.
    pub fn finalized_size(&self) -> u64 {
        self.db.finalized_size() + 1
    }

    /// Writes a consistent copy of the durable log into `dest` (see
    /// [`Db::backup_to`]); it opens as an indexed database with the same
    /// values and root.
    pub fn backup_to(&self, dest: impl AsRef<Path>) -> Result<Backup> {
        self.db.backup_to(dest)
    }

    /// Figures about the log.
    pub fn stats(&self) -> DbStats {
        self.db.stats()
    }

    /// The tree's configuration.
    pub fn tree_config(&self) -> TreeConfig {
        self.db.config().tree()
    }

    /// The configuration it runs with.
    pub fn config(&self) -> &DbConfig {
        self.db.config()
    }

    /// The database's directory.
    pub fn dir(&self) -> &Path {
        self.db.dir()
    }

    /// The write or sync failure that stopped acknowledgements, if any.
    pub fn failure(&self) -> Option<StoreError> {
        self.db.failure()
    }

    /// Runs `observer` after every checkpoint of the log.
    pub fn set_checkpoint_observer(&self, observer: cairn_store::CheckpointObserver) {
        self.db.set_checkpoint_observer(observer);
    }

    /// Flushes and releases the directory.
    pub fn close(self) -> Result<()> {
        self.db.close()
    }
}

impl State {
    /// The values of `values` the tree holds (durable or pending) or that
    /// repeat an earlier one of the batch, reported against leaf indices;
    /// a batch the tree refuses whatever it holds (empty, the guard value
    /// 0, a non-canonical value) is an error.
    fn duplicates(&self, values: &[Hash]) -> Result<Vec<Duplicate>> {
        if values.is_empty() {
            return Err(IndexedError::Tree(cairn_core::TreeError::EmptyBatch).into());
        }
        let hash = self.tree.config().hash;
        for (position, value) in values.iter().enumerate() {
            if *value == [0; 32] {
                return Err(IndexedError::GuardValue { position }.into());
            }
            if !hash.accepts(value) {
                return Err(IndexedError::NonCanonical {
                    position,
                    value: *value,
                }
                .into());
            }
        }
        let mut duplicates = Vec::new();
        let mut seen: ValueMap<&Hash, usize> =
            ValueMap::with_capacity_and_hasher(values.len(), Default::default());
        // Held values, found for a large batch by one walk of the order.
        let mut held = self.tree.present(values).into_iter().peekable();
        for (position, value) in values.iter().enumerate() {
            let of = if let Some((_, index)) = held.next_if(|&(p, _)| p == position) {
                Some(DuplicateOf::Leaf(index))
            } else if let Some(&index) = self.pending.get(value) {
                Some(DuplicateOf::Leaf(index + 1))
            } else if let Some(&earlier) = seen.get(value) {
                Some(DuplicateOf::Batch(earlier))
            } else {
                seen.insert(value, position);
                None
            };
            if let Some(of) = of {
                duplicates.push(Duplicate {
                    position,
                    value: *value,
                    of,
                });
            }
        }
        Ok(duplicates)
    }

    /// Refuses `count` more values when the log holds `first` (some of
    /// them not yet in the tree) and the tree has no room for them.
    fn check_room(&self, first: u64, count: u64) -> Result<()> {
        let logged_ahead = first - (self.tree.size() - 1);
        self.tree
            .check_room(logged_ahead + count)
            .map_err(DbError::from)
    }
}

/// The history window `config` asks for, or the default.
fn history_heads(config: Option<&DbConfig>) -> usize {
    config.map_or(crate::config::DEFAULT_HISTORY_HEADS, |c| c.history_heads)
}

/// `config` as an indexed database's: the indexed kind, no nullifier set.
fn indexed_config(mut config: DbConfig) -> DbConfig {
    config.store.tree = config.store.tree.with_kind(cairn_core::TreeKind::Indexed);
    config.unique = false;
    config
}

impl From<IndexedError> for DbError {
    fn from(error: IndexedError) -> DbError {
        match error {
            IndexedError::Duplicates { batch, duplicates } => {
                DbError::Duplicates { batch, duplicates }
            }
            other => DbError::Indexed(other),
        }
    }
}
