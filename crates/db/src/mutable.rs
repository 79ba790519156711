//! The mutable database: a Lean or fixed-depth tree whose leaves can be
//! updated and removed (set to the zero leaf), as zk-kit's LeanIMT,
//! BinaryIMT and Semaphore groups allow, over a durable log of changes.
//!
//! The store is used unchanged as the durable, group-committed log of the
//! changes in the order they were accepted, two words per change
//! ([`Change::encode`]); the tree is a function of that sequence, kept in
//! memory and rebuilt at open by replaying it. So durability tokens,
//! recovery, checkpoints of the log and backups are the store's, and after
//! any crash the tree is exactly the tree of the recovered changes: a
//! change is in the tree whole or not at all (its two words are in one
//! group commit, and a log that ends inside a change is corrupt).
//!
//! Invariant: the tree holds exactly the durable changes (a prefix of the
//! log): changes are applied once the log made them durable, so every
//! head, proof and lookup describes durable state only. Changes accepted
//! but not yet durable are "pending": the checks of later changes (the
//! leaf an index holds, the values present or removed) see them, readers
//! do not. (The file is long because the change codec, the replay, the
//! pending set and the checks share that invariant and are read together.)
//! Each update or removal's proof of the old leaf is made when it
//! is applied, against the root just before it, and handed to its writer
//! once durable ([`MutableDb::changed`]).
//!
//! Why not the append-only store's own tree: its final nodes are written
//! once and served from file mappings and tiles; an update rewrites nodes
//! below the right edge, which that design forbids. The price is the
//! replay at open (one hash per leaf and a path per update) and the
//! store's own LeanIMT over the change words, kept for its recovery.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use cairn_core::{Hash, LeanImt, MembershipProof, TreeConfig, TreeError, TreeHead, TreeKind};
use cairn_store::fs::Fs;
use cairn_store::{CheckpointMeta, StdFs, StoreError, TaggedHead, Token};
use parking_lot::{Mutex, RwLock};

use crate::config::DbConfig;
use crate::db::{Db, DbStats};
use crate::error::{DbError, Result};
use crate::set::value_map::{ValueMap, ValueSet};
use crate::set::{Duplicate, DuplicateOf};

/// Words of the log per change.
pub const WORDS_PER_CHANGE: u64 = 2;

/// One change to a mutable tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// A new leaf at the right edge.
    Append(Hash),
    /// Leaf `index` (present, not removed) becomes the value.
    Update(u64, Hash),
    /// Leaf `index` (present, not removed) becomes the zero leaf.
    Remove(u64),
}

/// Why a change was refused (nothing of its batch was written).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MutableError {
    /// An update or removal of a leaf that was removed: it holds the zero
    /// leaf, which is no member (as zk-kit's contracts refuse it).
    #[error("change {position}: leaf {index} was removed: it has no member to update or remove")]
    Removed {
        /// The change's position in its batch.
        position: usize,
        /// The leaf index.
        index: u64,
    },
    /// An append or update to the zero leaf, which only a removal writes.
    #[error(
        "change {position}: the value is the tree's zero leaf, which marks a removed member (remove the leaf instead)"
    )]
    ZeroLeaf {
        /// The change's position in its batch.
        position: usize,
    },
    /// A value that was removed, in a tree whose policy keeps it out.
    #[error(
        "change {position}: value {} was removed from this tree and may not come back (the tree was created without --readmit-removed)",
        cairn_core::hex::to_hex(value)
    )]
    WasRemoved {
        /// The change's position in its batch.
        position: usize,
        /// The value.
        value: Hash,
    },
}

impl Change {
    const APPEND: u8 = 1;
    const UPDATE: u8 = 2;
    const REMOVE: u8 = 3;

    /// The two log words of this change, applied to a tree of `size`
    /// leaves with zero leaf `zero`, as the last change of its batch: word
    /// 0 is the operation byte (1 append, 2 update, 3 remove), the batch
    /// byte (0 here; see [`Change::continues`]), 6 zero bytes, the leaf index
    /// (little-endian u64; an append's is the size it lands at) and 16 zero
    /// bytes; word 1 is the leaf's new value (the zero leaf for a removal).
    pub fn encode(&self, size: u64, zero: &Hash) -> [Hash; 2] {
        let (op, index, value) = match *self {
            Change::Append(value) => (Self::APPEND, size, value),
            Change::Update(index, value) => (Self::UPDATE, index, value),
            Change::Remove(index) => (Self::REMOVE, index, *zero),
        };
        let mut word = [0u8; 32];
        word[0] = op;
        word[8..16].copy_from_slice(&index.to_le_bytes());
        [word, value]
    }

    /// Whether the change whose first log word is `head` is followed by
    /// more of its batch (its batch byte is 1): a log ending in such a
    /// change ends inside a batch, which recovery drops whole.
    pub fn continues(head: &Hash) -> bool {
        head[1] == 1
    }

    /// The change two log words hold, checked against a tree of `size`
    /// leaves with zero leaf `zero`: a batch byte 0 or 1, every reserved
    /// byte zero, a known
    /// operation, an append at `size`, an update or removal below it, a
    /// removal's value the zero leaf.
    pub fn decode(
        words: [&Hash; 2],
        size: u64,
        zero: &Hash,
    ) -> std::result::Result<Change, String> {
        let [head, value] = words;
        if head[1] > 1 {
            return Err(format!("a change's batch byte is {}, want 0 or 1", head[1]));
        }
        if head[2..8] != [0; 6] || head[16..32] != [0; 16] {
            return Err("reserved bytes of a change are not zero".to_owned());
        }
        let index = u64::from_le_bytes(head[8..16].try_into().expect("8 bytes"));
        match head[0] {
            Self::APPEND if index == size => Ok(Change::Append(*value)),
            Self::APPEND => Err(format!("an append at leaf {index} of a tree of {size}")),
            Self::UPDATE | Self::REMOVE if index >= size => Err(format!(
                "a change of leaf {index} of a tree of {size} leaves"
            )),
            Self::UPDATE => Ok(Change::Update(index, *value)),
            Self::REMOVE if value == zero => Ok(Change::Remove(index)),
            Self::REMOVE => Err("a removal whose value is not the zero leaf".to_owned()),
            op => Err(format!("change operation {op}, want 1, 2 or 3")),
        }
    }
}

/// The leaf an update or removal replaced, with its membership proof
/// against the root just before the change: what Semaphore's
/// `updateMember` and `removeMember` (and zk-kit's `update`/`remove`) take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OldLeaf {
    /// The leaf index.
    pub index: u64,
    /// Its value before the change.
    pub old: Hash,
    /// Its proof against the head before the change.
    pub proof: MembershipProof,
}

/// Where a batch of changes went.
#[derive(Debug, Clone)]
pub struct ChangeTicket {
    /// The tree's size after the batch (its appends counted).
    pub size: u64,
    /// Changes in the batch.
    pub count: u64,
    /// Durability of the batch and everything before it (counts log words).
    pub token: Token,
    slot: OldLeaves,
}

/// Where a batch's old leaves (with their proofs) are handed to its
/// writer once it is durable.
type OldLeaves = Arc<OnceLock<Vec<Option<OldLeaf>>>>;

/// A durable mutable tree in a directory.
///
/// ```
/// use std::time::Duration;
/// use cairn_core::{Arity, HashKind, TreeConfig};
/// use cairn_db::{Change, DbConfig, MutableDb};
///
/// let dir = tempfile::tempdir()?;
/// let config = TreeConfig::new(Arity::new(2)?, HashKind::Blake3);
/// let db = MutableDb::create(dir.path().join("group"), DbConfig::new(config), false)?;
/// let appended = db.change(&[Change::Append([1; 32]), Change::Append([2; 32])])?;
/// db.changed(&appended, Duration::from_secs(5))?; // durable: the head has them
/// let before = db.head();
/// let ticket = db.change(&[Change::Remove(0)])?;
/// let old = db.changed(&ticket, Duration::from_secs(5))?;
/// let old = old[0].as_ref().expect("a removal replaces a leaf");
/// assert_eq!(old.old, [1; 32]);
/// old.proof.verify(config.arity, config.hash, &before)?; // against the root before
/// assert_eq!(db.leaf(0), Some([0; 32]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct MutableDb {
    db: Db,
    /// The database's configuration as its users see it (the tree's).
    config: DbConfig,
    /// The tree's configuration (its kind the shape: Lean or fixed-depth).
    shape: TreeConfig,
    /// A removed value may be appended or updated to again.
    readmit: bool,
    zero: Hash,
    state: RwLock<State>,
    /// Log words applied to the tree, read without the lock.
    applied: AtomicU64,
    /// Serialises writers (the checks and the log append are one step).
    writer: Mutex<()>,
}

#[derive(Debug)]
struct State {
    /// The durable changes applied.
    tree: LeanImt,
    /// Every accepted change's effect (durable or pending): value -> leaf
    /// index of each nonzero leaf.
    present: ValueMap<Hash, u64>,
    /// Values removed (accepted), kept out unless the policy readmits them.
    removed: ValueSet,
    /// Leaves as pending changes left them: index -> (value, log end).
    pending: ValueMap<u64, (Hash, u64)>,
    /// The tree's size once every accepted change is applied.
    accepted_size: u64,
    /// Batches not yet applied: first log word -> (end word, slot).
    batches: BTreeMap<u64, (u64, OldLeaves)>,
    /// Old leaves of the batch being applied.
    collecting: Vec<Option<OldLeaf>>,
    /// Log sizes at the end of block-tagged changes -> the tree's head
    /// there once applied (the store's tagged heads count log words).
    tagged: BTreeMap<u64, Option<TreeHead>>,
}

/// The end of the last whole batch among the changes from log word `from`
/// (a batch's end) to `to`: after the last change whose batch byte says its
/// batch ends there, given `continues(at)` of the change at word `at`.
fn batch_end(from: u64, to: u64, continues: impl Fn(u64) -> bool) -> u64 {
    if to <= from {
        return from;
    }
    let mut end = to - (to - from) % WORDS_PER_CHANGE;
    while end > from && continues(end - WORDS_PER_CHANGE) {
        end -= WORDS_PER_CHANGE;
    }
    end
}

/// The store flag that says removed values may come back.
pub(crate) const FLAG_READMIT: u64 = 1 << 8;

impl MutableDb {
    /// Creates a mutable database of `config`'s tree (Lean or fixed-depth)
    /// in `dir`. `readmit`: a removed value may be appended again (off: it
    /// is refused for good, like a spent nullifier). `config.unique` is
    /// ignored: a mutable tree always refuses a value it holds.
    pub fn create(dir: impl AsRef<Path>, config: DbConfig, readmit: bool) -> Result<MutableDb> {
        let mut config = config;
        config.mutable = Some(readmit);
        MutableDb::create_in(Arc::new(StdFs), dir.as_ref(), config)
    }

    /// [`MutableDb::create`] through a given file system, mutable as
    /// `config.mutable` says (`None` is taken as `Some(false)`).
    pub fn create_in(fs: Arc<dyn Fs>, dir: &Path, mut config: DbConfig) -> Result<MutableDb> {
        config.mutable = Some(config.mutable.unwrap_or(false));
        let shape = config.tree();
        if shape.kind == TreeKind::Indexed {
            return Err(DbError::ConfigMismatch {
                field: "tree kind",
                stored: "indexed".to_owned(),
                given: "a mutable tree (lean or imt)".to_owned(),
            });
        }
        let db = Db::create_kind(fs, dir, log_config(config.clone()))?;
        MutableDb::load(db, config)
    }

    /// Opens the mutable database in `dir`: recovers the log and replays it.
    pub fn open(dir: impl AsRef<Path>) -> Result<MutableDb> {
        MutableDb::open_in(Arc::new(StdFs), dir.as_ref(), None)
    }

    /// [`MutableDb::open`] through a given file system, with `config` (its
    /// tree the mutable tree's; must agree with the stored one) or the
    /// stored one.
    pub fn open_in(fs: Arc<dyn Fs>, dir: &Path, config: Option<DbConfig>) -> Result<MutableDb> {
        let config = stored_config(&*fs, dir, config)?;
        let db = Db::open_kind(
            fs,
            dir,
            Some(log_config(config.clone())),
            crate::db::Derived::Mutable,
        )?;
        MutableDb::load(db, config)
    }

    /// Opens it read-only: the changes durable when it opened.
    pub fn open_read_only_in(
        fs: Arc<dyn Fs>,
        dir: &Path,
        config: Option<DbConfig>,
    ) -> Result<MutableDb> {
        let config = stored_config(&*fs, dir, config)?;
        let db = Db::open_read_only_kind(
            fs,
            dir,
            Some(log_config(config.clone())),
            crate::db::Derived::Mutable,
        )?;
        MutableDb::load(db, config)
    }

    /// The tree rebuilt by replaying every change in the log.
    fn load(db: Db, config: DbConfig) -> Result<MutableDb> {
        let shape = config.tree();
        let zero = zero_leaf(shape.kind);
        let readmit = config.mutable == Some(true);
        let mutable = MutableDb {
            db,
            config,
            shape,
            readmit,
            zero,
            state: RwLock::new(State {
                tree: LeanImt::try_new(shape)?,
                present: ValueMap::default(),
                removed: ValueSet::default(),
                pending: ValueMap::default(),
                accepted_size: 0,
                batches: BTreeMap::new(),
                collecting: Vec::new(),
                tagged: BTreeMap::new(),
            }),
            applied: AtomicU64::new(0),
            writer: Mutex::new(()),
        };
        mutable.replay()?;
        Ok(mutable)
    }

    /// The log's size without a last batch it holds only part of (a
    /// commit that crossed a log file may have made its first part
    /// durable): a writer truncates the log to the last batch's end, a
    /// reader replays up to it.
    fn drop_torn_batch(&self) -> Result<u64> {
        let size = self.db.store.size();
        if !size.is_multiple_of(WORDS_PER_CHANGE) {
            // The replay reports it.
            return Ok(size);
        }
        let end = {
            let leaves = self.db.store.leaves();
            batch_end(0, size, |at| {
                Change::continues(leaves.get(at as usize).expect("below the size"))
            })
        };
        if end < size && !self.db.store.is_read_only() {
            self.db.truncate(end)?;
        }
        Ok(end)
    }

    /// Replays the whole log into a fresh tree (at open and after a
    /// rollback). Appends are batched into one tree append per run.
    fn replay(&self) -> Result<()> {
        let mut state = self.state.write();
        let size = self.drop_torn_batch()?;
        let leaves = self.db.store.leaves();
        let corrupt = |at: u64, detail: String| {
            DbError::Store(StoreError::corrupt(
                self.db.store.layout().log_dir(),
                at,
                format!("the log is not a mutable tree's changes: word {at}: {detail}"),
            ))
        };
        if !size.is_multiple_of(WORDS_PER_CHANGE) {
            return Err(corrupt(size, "the log ends inside a change".to_owned()));
        }
        let mut tree = LeanImt::try_new(self.shape)?;
        let mut present: ValueMap<Hash, u64> = ValueMap::default();
        let mut removed = ValueSet::default();
        let mut run: Vec<Hash> = Vec::new();
        let mut tagged: BTreeMap<u64, Option<TreeHead>> = self
            .db
            .heads(0, usize::MAX)
            .into_iter()
            .map(|head| (head.size, None))
            .collect();
        let mut record = |tree: &mut LeanImt, run: &mut Vec<Hash>, at: u64| -> Result<()> {
            if let Some(slot) = tagged.get_mut(&at) {
                if !run.is_empty() {
                    tree.append_batch(run)
                        .map_err(|e| corrupt(at, e.to_string()))?;
                    run.clear();
                }
                *slot = Some(tree.head());
            }
            Ok(())
        };
        record(&mut tree, &mut run, 0)?;
        let mut at = 0;
        while at < size {
            let word = |i: u64| {
                leaves
                    .get(i as usize)
                    .expect("words below the size are held")
            };
            let change = Change::decode(
                [word(at), word(at + 1)],
                tree.size() + run.len() as u64,
                &self.zero,
            )
            .map_err(|detail| corrupt(at, detail))?;
            let index_after = tree.size() + run.len() as u64;
            match change {
                Change::Append(value) => {
                    check_replayed(&present, &removed, self.readmit, &self.zero, &value)
                        .map_err(|detail| corrupt(at, detail))?;
                    present.insert(value, index_after);
                    run.push(value);
                }
                Change::Update(index, _) | Change::Remove(index) => {
                    if !run.is_empty() {
                        tree.append_batch(&run)
                            .map_err(|e| corrupt(at, e.to_string()))?;
                        run.clear();
                    }
                    let old = tree.leaf(index).expect("checked below the size");
                    if old == self.zero {
                        return Err(corrupt(at, format!("a change of removed leaf {index}")));
                    }
                    let new = match change {
                        Change::Update(_, value) => {
                            check_replayed(&present, &removed, self.readmit, &self.zero, &value)
                                .map_err(|detail| corrupt(at, detail))?;
                            present.insert(value, index);
                            value
                        }
                        _ => {
                            removed.insert(old);
                            self.zero
                        }
                    };
                    present.remove(&old);
                    tree.update(index, new)
                        .map_err(|e| corrupt(at, e.to_string()))?;
                }
            }
            at += WORDS_PER_CHANGE;
            record(&mut tree, &mut run, at)?;
        }
        if !run.is_empty() {
            tree.append_batch(&run)
                .map_err(|e| corrupt(at, e.to_string()))?;
        }
        tree.commit();
        state.tagged = tagged;
        state.accepted_size = tree.size();
        state.tree = tree;
        state.present = present;
        state.removed = removed;
        state.pending.clear();
        state.collecting.clear();
        // Batches the rollback removed: their slots stay empty, so their
        // writers are told `RolledBack`.
        state.batches.clear();
        self.applied.store(size, Ordering::Release);
        Ok(())
    }

    /// Applies `changes` in order, all or nothing: each is checked against
    /// the tree as every change accepted before it left it (an index below
    /// the size and not removed, a value canonical, not the zero leaf, not
    /// held, not removed unless the policy readmits it). The changes reach
    /// the tree (its head, proofs and lookups) once durable; their old
    /// leaves' proofs through [`MutableDb::changed`].
    pub fn change(&self, changes: &[Change]) -> Result<ChangeTicket> {
        if changes.is_empty() {
            return Err(DbError::Tree(TreeError::EmptyBatch));
        }
        self.change_inner(changes, None)
    }

    /// Applies `changes` (possibly none) as block `tag`'s, recording the
    /// log's head at their end (block numbers must increase); see
    /// [`MutableDb::change`] and [`MutableDb::rollback_to_block`].
    pub fn change_tagged(
        &self,
        changes: &[Change],
        tag: cairn_store::BlockTag,
    ) -> Result<ChangeTicket> {
        self.change_inner(changes, Some(tag))
    }

    /// Appends `values` (as block `tag`'s, if given); with `skip`, the
    /// values held (durable or pending) or repeated are skipped and
    /// reported rather than refused (`None` when every value was).
    pub fn append_values(
        &self,
        values: &[Hash],
        tag: Option<cairn_store::BlockTag>,
        skip: bool,
    ) -> Result<(Option<ChangeTicket>, Vec<Duplicate>)> {
        let _writer = self.writer.lock();
        let mut skipped = Vec::new();
        let mut fresh = Vec::with_capacity(values.len());
        if skip {
            let state = self.state.read();
            let mut seen: ValueMap<Hash, usize> = ValueMap::default();
            for (position, value) in values.iter().enumerate() {
                let of = match (seen.get(value), state.present.get(value)) {
                    (Some(&at), _) => Some(DuplicateOf::Batch(at)),
                    (None, Some(&index)) => Some(DuplicateOf::Leaf(index)),
                    (None, None) => None,
                };
                match of {
                    Some(of) => skipped.push(Duplicate {
                        position,
                        value: *value,
                        of,
                    }),
                    None => {
                        seen.insert(*value, position);
                        fresh.push(Change::Append(*value));
                    }
                }
            }
            if fresh.is_empty() && tag.is_none() {
                return Ok((None, skipped));
            }
        } else {
            if values.is_empty() && tag.is_none() {
                return Err(DbError::Tree(TreeError::EmptyBatch));
            }
            fresh.extend(values.iter().map(|&value| Change::Append(value)));
        }
        Ok((Some(self.change_locked(&fresh, tag)?), skipped))
    }

    fn change_inner(
        &self,
        changes: &[Change],
        tag: Option<cairn_store::BlockTag>,
    ) -> Result<ChangeTicket> {
        let _writer = self.writer.lock();
        self.change_locked(changes, tag)
    }

    /// [`MutableDb::change_inner`] under the writer lock.
    fn change_locked(
        &self,
        changes: &[Change],
        tag: Option<cairn_store::BlockTag>,
    ) -> Result<ChangeTicket> {
        let first = self.db.store.size();
        let mut state = self.state.write();
        let mut size = state.accepted_size;
        let mut words = Vec::with_capacity(changes.len() * 2);
        // The batch's own effects, checked before any is recorded: leaves
        // it changed, values it added (and holds at its end), values held
        // before it that it freed, values it removed.
        let mut leaves: ValueMap<u64, Hash> = ValueMap::default();
        let mut added: ValueMap<Hash, usize> = ValueMap::default();
        let mut freed = ValueSet::default();
        let mut removed = ValueSet::default();
        let mut duplicates = Vec::new();
        for (position, change) in changes.iter().enumerate() {
            let value = match *change {
                Change::Append(value) | Change::Update(_, value) => Some(value),
                Change::Remove(_) => None,
            };
            if let Some(value) = value {
                self.check_value(position, &value)?;
                let held = state
                    .present
                    .get(&value)
                    .filter(|_| !freed.contains(&value));
                if let Some(&at) = added.get(&value) {
                    duplicates.push(Duplicate {
                        position,
                        value,
                        of: DuplicateOf::Batch(at),
                    });
                } else if let Some(&index) = held {
                    duplicates.push(Duplicate {
                        position,
                        value,
                        of: DuplicateOf::Leaf(index),
                    });
                } else if !self.readmit
                    && (state.removed.contains(&value) || removed.contains(&value))
                {
                    return Err(MutableError::WasRemoved { position, value }.into());
                }
            }
            let index = match *change {
                Change::Update(index, _) | Change::Remove(index) => {
                    if index >= size {
                        return Err(TreeError::IndexOutOfRange { index, size }.into());
                    }
                    let old = match leaves.get(&index) {
                        Some(old) => *old,
                        None => state.leaf(index),
                    };
                    if old == self.zero {
                        return Err(MutableError::Removed { position, index }.into());
                    }
                    if added.remove(&old).is_none() {
                        freed.insert(old);
                    }
                    if value.is_none() {
                        removed.insert(old);
                    }
                    index
                }
                Change::Append(_) => size,
            };
            leaves.insert(index, value.unwrap_or(self.zero));
            if let Some(value) = value {
                added.insert(value, position);
            }
            let [mut head, value] = change.encode(size, &self.zero);
            // Every change but the batch's last says the batch goes on, so
            // recovery never keeps part of a batch.
            if position + 1 < changes.len() {
                head[1] = 1;
            }
            words.extend([head, value]);
            if matches!(change, Change::Append(_)) {
                size += 1;
            }
        }
        if !duplicates.is_empty() {
            return Err(DbError::Duplicates {
                batch: changes.len(),
                duplicates,
            });
        }
        if let Some(limit) = self.shape.kind.fixed_depth().or(self.shape.max_depth) {
            let capacity = self.shape.arity.get() as u128;
            let capacity = capacity.checked_pow(limit).unwrap_or(u128::MAX);
            if u128::from(size) > capacity {
                return Err(TreeError::CapacityExceeded {
                    size: state.accepted_size,
                    appending: size - state.accepted_size,
                    capacity: u64::try_from(capacity).unwrap_or(u64::MAX),
                    arity: self.shape.arity.get(),
                    max_depth: limit,
                }
                .into());
            }
        }
        let end = first + words.len() as u64;
        let appended = match tag {
            Some(tag) => self.db.append_tagged(&words, tag)?,
            None => self.db.append_batch(&words)?,
        };
        assert_eq!(appended.first, first, "changes are serialised");
        // Recorded once the log holds them: a failed append changes nothing.
        if tag.is_some() {
            let head = (end == self.applied.load(Ordering::Acquire)).then(|| state.tree.head());
            state.tagged.insert(end, head);
        }
        let slot = Arc::new(OnceLock::new());
        if changes.is_empty() {
            let _ = slot.set(Vec::new());
        } else {
            state.batches.insert(first, (end, Arc::clone(&slot)));
        }
        for change in changes {
            match *change {
                Change::Append(value) => {
                    let index = state.accepted_size;
                    state.present.insert(value, index);
                    state.pending.insert(index, (value, end));
                    state.accepted_size += 1;
                }
                Change::Update(index, _) | Change::Remove(index) => {
                    let old = state.leaf(index);
                    state.present.remove(&old);
                    let new = match *change {
                        Change::Update(_, value) => {
                            state.present.insert(value, index);
                            value
                        }
                        _ => {
                            state.removed.insert(old);
                            self.zero
                        }
                    };
                    if self.readmit {
                        state.removed.remove(&new);
                    }
                    state.pending.insert(index, (new, end));
                }
            }
        }
        drop(state);
        self.catch_up();
        Ok(ChangeTicket {
            size,
            count: changes.len() as u64,
            token: appended.token,
            slot,
        })
    }

    /// The old leaves of `ticket`'s changes (`None` for an append), each
    /// with its proof against the root before it: waits up to `timeout`
    /// for the batch to be durable.
    pub fn changed(
        &self,
        ticket: &ChangeTicket,
        timeout: Duration,
    ) -> Result<Vec<Option<OldLeaf>>> {
        ticket.token.wait(timeout)?;
        self.catch_up();
        ticket.slot.get().cloned().ok_or_else(|| {
            DbError::Store(StoreError::RolledBack {
                end: ticket.token.end(),
                to: self.applied.load(Ordering::Acquire),
            })
        })
    }

    /// Applies the changes the log made durable since the last call.
    fn catch_up(&self) {
        let durable = self.db.store.durable_size();
        if self.applied.load(Ordering::Acquire) >= durable {
            return;
        }
        let mut state = self.state.write();
        let durable = self.db.store.durable_size();
        let mut at = self.applied.load(Ordering::Acquire);
        let leaves = self.db.store.leaves();
        let durable = durable.min(leaves.len() as u64);
        // Whole batches only: a reader never sees part of one.
        let durable = batch_end(at, durable, |i| {
            Change::continues(
                leaves
                    .get(i as usize)
                    .expect("durable words are in the log"),
            )
        });
        let State {
            tree,
            pending,
            batches,
            collecting,
            tagged,
            ..
        } = &mut *state;
        // Consecutive updates and removals are applied together (one
        // level-by-level pass through the lane hashers, each with its
        // proof against the root just before it), up to an append, a
        // tagged head or the end of a writer's batch.
        let mut run: Vec<(u64, Hash)> = Vec::new();
        let flush = |tree: &mut LeanImt, run: &mut Vec<(u64, Hash)>, out: &mut Vec<_>| {
            if !run.is_empty() {
                out.extend(self.apply(tree, run).into_iter().map(Some));
                run.clear();
            }
        };
        while at + WORDS_PER_CHANGE <= durable {
            let word = |i: u64| {
                leaves
                    .get(i as usize)
                    .expect("durable words are in the log")
            };
            let change = Change::decode([word(at), word(at + 1)], tree.size(), &self.zero)
                .expect("changes were checked when they were logged");
            match change {
                Change::Append(value) => {
                    flush(tree, &mut run, collecting);
                    tree.append(value).expect("checked when logged");
                    collecting.push(None);
                }
                Change::Update(index, value) => run.push((index, value)),
                Change::Remove(index) => run.push((index, self.zero)),
            }
            at += WORDS_PER_CHANGE;
            let batch_ends = batches
                .first_key_value()
                .is_some_and(|(_, (end, _))| *end == at);
            if let Some(slot) = tagged.get_mut(&at) {
                flush(tree, &mut run, collecting);
                *slot = Some(tree.head());
            }
            if batch_ends {
                flush(tree, &mut run, collecting);
                let (_, (_, slot)) = batches.pop_first().expect("a first batch");
                let _ = slot.set(std::mem::take(collecting));
            }
        }
        flush(tree, &mut run, collecting);
        if batches.is_empty() {
            // Replayed or recovered changes have no writer waiting.
            collecting.clear();
        }
        tree.commit();
        // Writers append under the state lock, so the log's size is every
        // accepted change. All applied: a fresh map, since a retain walks
        // every bucket of the capacity a large batch once grew.
        if at >= self.db.store.size() {
            if !pending.is_empty() {
                *pending = ValueMap::default();
            }
        } else {
            pending.retain(|_, (_, end)| *end > at);
        }
        self.applied.store(at, Ordering::Release);
    }

    /// Applies `run` (updates and removals as `(index, new leaf)`, in
    /// order), returning each one's old leaf and its proof against the
    /// root just before it.
    fn apply(&self, tree: &mut LeanImt, run: &[(u64, Hash)]) -> Vec<OldLeaf> {
        tree.update_each(run)
            .expect("checked when logged")
            .into_iter()
            .map(|proof| OldLeaf {
                index: proof.index(),
                old: proof.leaf(),
                proof,
            })
            .collect()
    }

    fn check_value(&self, position: usize, value: &Hash) -> Result<()> {
        if *value == self.zero {
            return Err(MutableError::ZeroLeaf { position }.into());
        }
        if !self.shape.hash.accepts(value) {
            return Err(TreeError::NonCanonicalLeaf {
                position,
                leaf: *value,
            }
            .into());
        }
        Ok(())
    }

    /// The durable head.
    pub fn head(&self) -> TreeHead {
        self.catch_up();
        let mut state = self.state.write();
        state.tree.head()
    }

    /// The durable leaf `index` (the zero leaf if it was removed).
    pub fn leaf(&self, index: u64) -> Option<Hash> {
        self.catch_up();
        self.state.read().tree.leaf(index)
    }

    /// The membership proof of durable leaf `index` against the durable
    /// head, with that head.
    pub fn prove(&self, index: u64) -> Result<MembershipProof> {
        self.catch_up();
        let state = self.state.read();
        let size = state.tree.size();
        Ok(state.tree.view(size)?.prove(index)?)
    }

    /// The durable size and, per value, its leaf index in the durable
    /// tree (`None` if no leaf holds it now).
    pub fn index_of_many(&self, values: &[Hash]) -> (u64, Vec<Option<u64>>) {
        self.catch_up();
        let state = self.state.read();
        let size = state.tree.size();
        let indices = values
            .iter()
            .map(|value| {
                // The accepted map, checked against the durable leaves.
                state
                    .present
                    .get(value)
                    .copied()
                    .filter(|&i| state.tree.leaf(i) == Some(*value))
                    .or_else(|| {
                        // A value updated away by a pending change is
                        // still durable where it was.
                        state
                            .pending
                            .keys()
                            .copied()
                            .find(|&i| state.tree.leaf(i) == Some(*value))
                    })
            })
            .collect();
        (size, indices)
    }

    /// The tree's configuration (its kind the shape).
    pub fn shape(&self) -> TreeConfig {
        self.shape
    }

    /// Whether a removed value may come back.
    pub fn readmits_removed(&self) -> bool {
        self.readmit
    }

    /// The zero leaf a removal writes: 0 for a Lean tree (zk-kit's
    /// LeanIMT), the tree's zero value for a fixed-depth one (zk-kit's
    /// IMT and BinaryIMT).
    pub fn zero_leaf(&self) -> Hash {
        self.zero
    }

    /// The database's configuration (its tree the mutable tree's).
    pub fn config(&self) -> &DbConfig {
        &self.config
    }

    /// Whether it was opened read-only.
    pub fn is_read_only(&self) -> bool {
        self.db.store.is_read_only()
    }

    /// The write or sync failure that stopped acknowledgements, if any.
    pub fn failure(&self) -> Option<StoreError> {
        self.db.failure()
    }

    /// The log's health.
    pub fn health(&self) -> cairn_store::StoreHealth {
        self.db.health()
    }

    /// Finalizes the changes recorded up to block `block` (no rollback
    /// may undo them); the log words final.
    pub fn finalize_to_block(&self, block: u64) -> Result<u64> {
        self.db.finalize_to_block(block)
    }

    /// The log's database (its store holds the change words).
    pub(crate) fn log(&self) -> &Db {
        &self.db
    }

    /// The tree's size with every accepted change (durable or not).
    pub fn accepted_size(&self) -> u64 {
        self.state.read().accepted_size
    }

    /// Words of the log durable (two per change): how many changes a
    /// crash now keeps.
    pub fn log_words_durable(&self) -> u64 {
        self.db.store.durable_size()
    }

    /// `head` (one of the log's tagged heads) in the tree's terms: the
    /// tree's size and root once the changes up to it were applied;
    /// `None` for a head not yet applied.
    pub fn tree_head(&self, head: TaggedHead) -> Option<TaggedHead> {
        self.catch_up();
        let state = self.state.read();
        let tree = (*state.tagged.get(&head.size)?)?;
        Some(TaggedHead {
            size: tree.size,
            root: tree.root,
            ..head
        })
    }

    /// The durable size of the tree.
    pub fn durable_size(&self) -> u64 {
        self.catch_up();
        self.state.read().tree.size()
    }

    /// Waits for everything accepted to be durable; the durable size.
    pub fn flush(&self) -> Result<u64> {
        self.db.flush()?;
        Ok(self.durable_size())
    }

    /// Checkpoints the log.
    pub fn checkpoint(&self) -> Result<Option<CheckpointMeta>> {
        self.db.checkpoint()
    }

    /// The log's figures.
    pub fn stats(&self) -> DbStats {
        self.db.stats()
    }

    /// Rolls the tree back to the changes durable when block `block` was
    /// recorded (see [`Db::truncate_to_block`]): every later change,
    /// appends, updates and removals alike, is undone, so updated and
    /// removed leaves get their old values back. The durable head after.
    pub fn rollback_to_block(&self, block: u64) -> Result<TreeHead> {
        let _writer = self.writer.lock();
        self.db.flush()?;
        self.catch_up();
        self.db.truncate_to_block(block)?;
        self.replay()?;
        Ok(self.head())
    }

    /// Closes the log.
    pub fn close(self) -> Result<()> {
        self.db.close()
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        self.db.dir()
    }
}

impl State {
    /// Leaf `index` as every accepted change left it.
    fn leaf(&self, index: u64) -> Hash {
        match self.pending.get(&index) {
            Some((value, _)) => *value,
            None => self
                .tree
                .leaf(index)
                .expect("index checked below the accepted size"),
        }
    }
}

/// A replayed append's or update's value checked against what the changes
/// before it left: a log holding what this database never writes is corrupt.
fn check_replayed(
    present: &ValueMap<Hash, u64>,
    removed: &ValueSet,
    readmit: bool,
    zero: &Hash,
    value: &Hash,
) -> std::result::Result<(), String> {
    if value == zero {
        return Err("a value that is the zero leaf".to_owned());
    }
    if let Some(index) = present.get(value) {
        return Err(format!("a value leaf {index} holds"));
    }
    if !readmit && removed.contains(value) {
        return Err("a value removed before".to_owned());
    }
    Ok(())
}

/// The zero leaf of a mutable tree of `kind`.
pub(crate) fn zero_leaf(kind: TreeKind) -> Hash {
    match kind {
        TreeKind::Fixed { zero, .. } => zero,
        _ => [0; 32],
    }
}

/// The log's configuration for a mutable tree of `config`'s tree.
pub(crate) fn log_config(mut config: DbConfig) -> DbConfig {
    let shape = config.store.tree;
    config.store.tree = shape.with_kind(TreeKind::Lean);
    config.store.tree.max_depth = None;
    config.store.mutable = Some(shape.kind);
    config.unique = false;
    if config.mutable == Some(true) {
        config.store.flags |= FLAG_READMIT;
    }
    config
}

/// The stored configuration of the mutable tree in `dir` (or `config`,
/// which must agree with it).
fn stored_config(fs: &dyn Fs, dir: &Path, config: Option<DbConfig>) -> Result<DbConfig> {
    let stored = crate::db::resolve_config(fs, dir, None)?;
    if stored.mutable.is_none() {
        return Err(DbError::ConfigMismatch {
            field: "mutability",
            stored: "append-only".to_owned(),
            given: "mutable".to_owned(),
        });
    }
    match config {
        None => Ok(stored),
        Some(mut config) => {
            if config.tree() != stored.tree() {
                return Err(DbError::ConfigMismatch {
                    field: "tree",
                    stored: format!("{:?}", stored.tree()),
                    given: format!("{:?}", config.tree()),
                });
            }
            config.mutable = stored.mutable;
            config.unique = stored.unique;
            Ok(config)
        }
    }
}
