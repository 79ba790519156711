//! The nullifier set: every value in the tree, mapped to its leaf index.
//!
//! 4096 shards, each an open-addressing [`table::Table`] behind its own
//! lock. A value's keyed hash ([`TagHash`]: folded multiplies, or
//! SipHash-1-3 for sets from older files, under a random 128-bit key kept
//! with the set) picks the shard (top 12 bits) and the 28-bit tag. Entries
//! hold only the tag and the leaf index; a tag match is confirmed by
//! comparing the leaf itself, so the set never answers wrongly, and a
//! false match costs one leaf read.
//!
//! The key is what keeps adversarial values from clustering: values are
//! chosen by users (a commitment's preimage can be ground for any prefix),
//! but without the key nobody can aim at a shard or a tag, so probe
//! lengths follow the random-hash bound (at 80% load, about 3 slots for a
//! hit and 13 for a miss on average, 8 slots per cache line).
//!
//! A lookup is two dependent random reads (the slot, then the leaf that
//! confirms it); [`NullifierSet::find_many`] overlaps those of many values
//! with prefetches, which is where batch callers gain most.
//!
//! Why this design: the set must cost at most 16 bytes per value at 10^8
//! to 10^9 values, open without rescanning, and never answer wrongly. A
//! map of 32-byte keys costs 40+ bytes per value; a filter (Bloom, cuckoo)
//! can give neither the index nor a definite "present". Short fingerprints
//! pointing at leaves that are stored anyway (and often mapped) cost 8
//! bytes per slot and are exact; the price is the second read on a hit.

pub(crate) mod file;
pub(crate) mod table;
pub(crate) mod value_map;

use std::hash::Hasher as _;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use cairn_core::Hash;
use parking_lot::RwLock;
use rayon::prelude::*;
use siphasher::sip::SipHasher13;

use table::{MAX_INDEX, TAG_BITS, Table};

/// Bits of the keyed hash that pick a shard.
pub(crate) const SHARD_BITS: u32 = 12;
const SHARDS: usize = 1 << SHARD_BITS;
// The shard and the tag are disjoint bit fields of one 64-bit keyed hash;
// a shard number fits the `u16` the batch grouping keeps it in.
const _: () = assert!(SHARD_BITS + TAG_BITS <= u64::BITS && SHARD_BITS <= 16);
/// Below this many values a batch is inserted by the calling thread alone.
pub(crate) const PARALLEL_FROM: usize = 4096;

/// A value of a batch that the set (or an indexed tree) already holds,
/// and where it already is: the core's types, one for every kind of
/// database, so an indexed database's refusals need no conversion.
pub use cairn_core::indexed::{Duplicate, DuplicateOf};

/// Figures about the set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SetStats {
    /// Values held (including any of an append in progress).
    pub values: u64,
    /// Slots allocated over all shards.
    pub slots: u64,
    /// Resident bytes: slots plus the per-shard overhead.
    pub memory_bytes: u64,
}

/// The set's hash key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Key(pub u64, pub u64);

impl Key {
    pub fn random() -> Key {
        Key(rand::random(), rand::random())
    }
}

/// The keyed hash that places a set's values (its shard and tag). A set
/// keeps the one it was built with: its file names it, since the tags in
/// the slots are bits of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TagHash {
    /// SipHash-1-3 (what sets written by format version 1 use).
    SipHash13,
    /// Folded 64x64->128-bit multiplies of the value's words masked by the
    /// key ([`folded`]): what new sets use.
    Folded,
}

impl TagHash {
    /// The id stored in the set file.
    pub fn id(self) -> u8 {
        match self {
            TagHash::SipHash13 => 1,
            TagHash::Folded => 2,
        }
    }

    pub fn from_id(id: u8) -> Option<TagHash> {
        match id {
            1 => Some(TagHash::SipHash13),
            2 => Some(TagHash::Folded),
            _ => None,
        }
    }
}

/// The in-memory set.
#[derive(Debug)]
pub(crate) struct NullifierSet {
    key: Key,
    hash: TagHash,
    /// Allocated at the first use that needs a table (a set that never
    /// holds a value, as an idle tree's, costs no shard memory: the
    /// tables' locks and headers alone are tens of KiB).
    shards: OnceLock<Box<[RwLock<Table>]>>,
    values: AtomicU64,
}

/// A value's shard and tag.
#[derive(Clone, Copy, Debug)]
struct Slot {
    shard: usize,
    tag: u32,
}

impl NullifierSet {
    /// An empty set hashing with `key` and the hash new sets use.
    pub fn new(key: Key) -> NullifierSet {
        NullifierSet::with_hash(key, TagHash::Folded)
    }

    pub fn with_hash(key: Key, hash: TagHash) -> NullifierSet {
        NullifierSet::from_tables(key, hash, (0..SHARDS).map(|_| Table::default()).collect())
    }

    pub fn from_tables(key: Key, hash: TagHash, tables: Vec<Table>) -> NullifierSet {
        assert_eq!(tables.len(), SHARDS);
        let values = tables.iter().map(|t| t.len() as u64).sum();
        let shards = OnceLock::new();
        if tables.iter().any(|t| t.capacity() > 0) {
            let _ = shards.set(tables.into_iter().map(RwLock::new).collect());
        }
        NullifierSet {
            key,
            hash,
            shards,
            values: AtomicU64::new(values),
        }
    }

    /// The shard tables, allocated empty at the first call.
    #[inline]
    fn tables(&self) -> &[RwLock<Table>] {
        self.shards
            .get_or_init(|| (0..SHARDS).map(|_| RwLock::new(Table::default())).collect())
    }

    pub fn key(&self) -> Key {
        self.key
    }

    pub fn hash(&self) -> TagHash {
        self.hash
    }

    pub fn len(&self) -> u64 {
        self.values.load(Ordering::Acquire)
    }

    /// The keyed hash of `value`: its top [`SHARD_BITS`] pick the shard,
    /// the next [`TAG_BITS`] are the tag.
    #[inline]
    fn keyed(&self, value: &Hash) -> u64 {
        match self.hash {
            TagHash::Folded => folded(value, self.key),
            TagHash::SipHash13 => {
                let mut hasher = SipHasher13::new_with_keys(self.key.0, self.key.1);
                hasher.write(value);
                hasher.finish()
            }
        }
    }

    #[inline]
    fn slot(&self, value: &Hash) -> Slot {
        let hash = self.keyed(value);
        Slot {
            shard: (hash >> (64 - SHARD_BITS)) as usize,
            tag: ((hash >> (64 - SHARD_BITS - TAG_BITS)) & ((1 << TAG_BITS) - 1)) as u32,
        }
    }

    /// The index of `value`, among entries for which `leaf(index)` returns
    /// the leaf (`None` for an index the caller cannot see yet).
    #[inline]
    pub fn find(&self, value: &Hash, leaf: impl Fn(u64) -> Option<Hash>) -> Option<u64> {
        let slot = self.slot(value);
        // An idle set answers without allocating its tables.
        self.shards.get()?[slot.shard]
            .read()
            .find(slot.tag, |index| leaf(index).as_ref() == Some(value))
    }

    /// [`NullifierSet::find`] for many values: the same answers, in order,
    /// with the memory reads of different values overlapped. All keyed
    /// hashes first; then, a few values ahead of the probe, a prefetch of
    /// each home slot; the probe notes the first entry with the value's tag;
    /// then the leaves of those entries are read to confirm, again
    /// prefetched a few ahead when `prefetch_leaf` can. A value whose first
    /// tag match is another value (a 28-bit tag collision, rare) is looked
    /// up again alone.
    pub fn find_many(
        &self,
        values: &[Hash],
        leaf: impl Fn(u64) -> Option<Hash>,
        prefetch_leaf: impl Fn(u64),
    ) -> Vec<Option<u64>> {
        /// How many values ahead the prefetches run: enough to cover a
        /// random read (~150 to 300 ns here) with the work of the values
        /// in between, few enough to stay within the CPU's outstanding
        /// misses.
        const AHEAD: usize = 12;
        let slots: Vec<Slot> = values.iter().map(|v| self.slot(v)).collect();
        // Each shard is read-locked once, when its slot is prefetched, and
        // held until the probe: at most AHEAD locks at a time, for well
        // under a microsecond. Recursive read locks, since two values of a
        // window may share a shard (a plain read lock could wait behind a
        // writer queued in between, while this thread holds the first).
        let lock = |slot: &Slot| {
            let table = self.tables()[slot.shard].read_recursive();
            table.prefetch(slot.tag);
            table
        };
        let mut window: std::collections::VecDeque<_> =
            slots.iter().take(AHEAD).map(lock).collect();
        let mut first: Vec<u64> = Vec::with_capacity(values.len());
        for (k, slot) in slots.iter().enumerate() {
            if let Some(next) = slots.get(k + AHEAD) {
                window.push_back(lock(next));
            }
            let table = window.pop_front().expect("one lock per value");
            let found = table.find(slot.tag, |_| true);
            drop(table);
            first.push(found.unwrap_or(NONE));
        }
        first
            .iter()
            .take(AHEAD)
            .filter(|&&i| i != NONE)
            .for_each(|&i| prefetch_leaf(i));
        let mut out = Vec::with_capacity(values.len());
        for (k, (value, &index)) in values.iter().zip(&first).enumerate() {
            if let Some(&next) = first.get(k + AHEAD)
                && next != NONE
            {
                prefetch_leaf(next);
            }
            out.push(if index == NONE {
                None
            } else if leaf(index).as_ref() == Some(value) {
                Some(index)
            } else {
                self.find(value, &leaf)
            });
        }
        out
    }

    /// Inserts `values` as leaves `first..`, refusing each that is already
    /// present (a leaf below `first`, for which `leaf` gives the value) or
    /// repeats an earlier value of the batch; returns the refused ones,
    /// in batch order. Every other value is inserted.
    ///
    /// Errors if an index would not fit a slot or a shard is full.
    pub fn insert_batch(
        &self,
        values: &[Hash],
        first: u64,
        leaf: &(dyn Fn(u64) -> Option<Hash> + Sync),
    ) -> Result<Vec<Duplicate>, String> {
        if values.is_empty() {
            return Ok(Vec::new());
        }
        let last = first + values.len() as u64 - 1;
        if last > MAX_INDEX {
            return Err(format!(
                "leaf index {last} exceeds the set's limit {MAX_INDEX}"
            ));
        }
        let is_at = |value: &Hash, index: u64| -> Option<DuplicateOf> {
            if index >= first {
                let position = (index - first) as usize;
                (values[position] == *value).then_some(DuplicateOf::Batch(position))
            } else {
                (leaf(index).as_ref() == Some(value)).then_some(DuplicateOf::Leaf(index))
            }
        };
        let same = |position: usize, index: u64| is_at(&values[position], index);
        let duplicate = |(position, of): (usize, DuplicateOf)| Duplicate {
            position,
            value: values[position],
            of,
        };
        let mut duplicates = Vec::new();
        if values.len() < PARALLEL_FROM {
            // One cold table read per value: the homes of the values
            // AHEAD positions on are prefetched, each under a brief read
            // lock (as in the parallel path below), in batches big enough
            // for it to pay.
            const AHEAD: usize = 8;
            let slots: Vec<Slot> = values.iter().map(|v| self.slot(v)).collect();
            let prefetch = |slot: &Slot| self.tables()[slot.shard].read().prefetch(slot.tag);
            let ahead = if values.len() >= 2 * AHEAD { AHEAD } else { 0 };
            slots.iter().take(ahead).for_each(prefetch);
            for (position, &slot) in slots.iter().enumerate() {
                if ahead > 0
                    && let Some(next) = slots.get(position + ahead)
                {
                    prefetch(next);
                }
                let record = (u64::from(slot.tag) << 32) | position as u64;
                let mut refused = Vec::new();
                if !self.tables()[slot.shard].write().insert_run(
                    &mut [record],
                    first,
                    same,
                    &mut refused,
                ) {
                    return Err(format!("shard {} of the set is full", slot.shard));
                }
                duplicates.extend(refused.into_iter().map(duplicate));
            }
        } else {
            // Group the batch by shard and, within a shard, by the top bits
            // of the tag: a tag's home is monotone in the tag, so each
            // shard is then filled in one forward sweep (a few slots back
            // and forth within a group) instead of at random, without a
            // sort per shard (a shard that must grow sorts its run). Two
            // passes that stay in cache: the batch is scattered into 256
            // buckets of 16 shards each (few enough write streams for the
            // caches to combine), then each bucket, a few thousand records,
            // is grouped by shard and tag bits where it sits, in parallel
            // with the others, and its shards filled from it at once.
            let hashes: Vec<u64> = values.par_iter().map(|v| self.keyed(v)).collect();
            let (starts, mut records) = by_bucket(&hashes);
            drop(hashes);
            let mut buckets: Vec<&mut [u64]> = Vec::with_capacity(BUCKETS);
            let mut rest = records.as_mut_slice();
            for bucket in 0..BUCKETS {
                let (run, tail) = rest.split_at_mut(starts[bucket + 1] - starts[bucket]);
                buckets.push(run);
                rest = tail;
            }
            // A small batch leaves a few values per shard, each probe a
            // read of a cold table (one cache miss per value, ~85% of the
            // inserts' time in a profile of 10,000-value batches): the
            // homes of the values a few shards ahead are prefetched, under
            // a brief read lock (one lock held at a time, so no order to
            // keep with lookups, which hold several read locks). Long runs
            // sweep their table in home order and need no hint.
            const AHEAD: usize = 4;
            const SHORT: usize = 16;
            let prefetch = |shard: usize, run: &[u64]| {
                if !run.is_empty() && run.len() < SHORT {
                    let table = self.tables()[shard].read();
                    for &record in run {
                        table.prefetch((record >> 32) as u32);
                    }
                }
            };
            let found: Vec<Result<Vec<Duplicate>, String>> = buckets
                .into_par_iter()
                .enumerate()
                .map(|(bucket, records)| {
                    let shard_starts = by_shard_in_bucket(records);
                    let shard = |k: usize| (bucket << BUCKET_SHARD_BITS) | k;
                    let ahead = |records: &[u64], k: usize| {
                        if k < BUCKET_SHARDS {
                            prefetch(shard(k), &records[shard_starts[k]..shard_starts[k + 1]]);
                        }
                    };
                    let mut found = Vec::new();
                    for k in 0..AHEAD {
                        ahead(records, k);
                    }
                    for k in 0..BUCKET_SHARDS {
                        ahead(records, k + AHEAD);
                        let (from, to) = (shard_starts[k], shard_starts[k + 1]);
                        if from == to {
                            continue;
                        }
                        let mut refused = Vec::new();
                        if !self.tables()[shard(k)].write().insert_run(
                            &mut records[from..to],
                            first,
                            same,
                            &mut refused,
                        ) {
                            return Err(format!("shard {} of the set is full", shard(k)));
                        }
                        found.extend(refused.into_iter().map(duplicate));
                    }
                    Ok(found)
                })
                .collect();
            for part in found {
                duplicates.extend(part?);
            }
            duplicates.sort_unstable_by_key(|d| d.position);
        }
        let inserted = values.len() - duplicates.len();
        self.values.fetch_add(inserted as u64, Ordering::AcqRel);
        Ok(duplicates)
    }

    /// Makes room for `additional` more values, spread over the shards as
    /// the keyed hash spreads them (the mean per shard plus four standard
    /// deviations and a few slots), so that a bulk ingest of that many
    /// grows no shard again (a growth moves every entry of its shard).
    /// Errors if a shard would need more than its largest capacity.
    pub fn reserve(&self, additional: u64) -> Result<(), String> {
        let mean = additional as f64 / SHARDS as f64;
        let per_shard = (mean + 4.0 * mean.sqrt()).ceil() as usize + 8;
        self.tables()
            .par_iter()
            .enumerate()
            .try_for_each(|(shard, table)| {
                if table.write().reserve(per_shard) {
                    Ok(())
                } else {
                    Err(format!(
                        "shard {shard} of the set cannot hold {per_shard} more values"
                    ))
                }
            })
    }

    /// Takes out what [`NullifierSet::insert_batch`] inserted for `values`
    /// at `first..`, except the positions in `refused` (sorted).
    pub fn remove_batch(&self, values: &[Hash], first: u64, refused: &[Duplicate]) {
        let mut refused = refused.iter().map(|d| d.position).peekable();
        let mut removed = 0;
        for (position, value) in values.iter().enumerate() {
            if refused.peek() == Some(&position) {
                refused.next();
                continue;
            }
            let slot = self.slot(value);
            let gone = self.tables()[slot.shard]
                .write()
                .remove(slot.tag, first + position as u64);
            assert!(gone, "removing an entry that was inserted");
            removed += 1;
        }
        self.values.fetch_sub(removed, Ordering::AcqRel);
    }

    /// Renumbers the entries of a batch inserted at `first..` with some
    /// values refused, so that the accepted ones are contiguous from `first`
    /// (what the tree gets when duplicates are skipped).
    pub fn compact_batch(&self, values: &[Hash], first: u64, refused: &[Duplicate]) {
        let mut refused = refused.iter().map(|d| d.position).peekable();
        let mut next = first;
        for (position, value) in values.iter().enumerate() {
            if refused.peek() == Some(&position) {
                refused.next();
                continue;
            }
            let from = first + position as u64;
            if from != next {
                let slot = self.slot(value);
                let moved = self.tables()[slot.shard]
                    .write()
                    .renumber(slot.tag, from, next);
                assert!(moved, "renumbering an entry that was inserted");
            }
            next += 1;
        }
    }

    /// Calls `f` with shard `shard` under its read lock (for a checkpoint:
    /// one shard at a time, so appends go on).
    pub fn with_shard<R>(&self, shard: usize, f: impl FnOnce(&Table) -> R) -> R {
        match self.shards.get() {
            Some(tables) => f(&tables[shard].read()),
            None => f(&Table::default()),
        }
    }

    pub fn shard_count(&self) -> usize {
        SHARDS
    }

    pub fn stats(&self) -> SetStats {
        let Some(tables) = self.shards.get() else {
            return SetStats {
                values: self.len(),
                slots: 0,
                memory_bytes: 0,
            };
        };
        let mut slots = 0u64;
        for shard in tables.iter() {
            slots += shard.read().capacity() as u64;
        }
        SetStats {
            values: self.len(),
            slots,
            memory_bytes: slots * 8 + (SHARDS * std::mem::size_of::<RwLock<Table>>()) as u64,
        }
    }

    /// The longest probe sequence of any entry, over all shards.
    pub fn max_probe(&self) -> usize {
        let Some(tables) = self.shards.get() else {
            return 0;
        };
        tables
            .par_iter()
            .map(|s| s.read().max_probe())
            .max()
            .unwrap_or(0)
    }
}

/// No entry (for [`NullifierSet::find_many`]'s first matches).
const NONE: u64 = u64::MAX;

/// The low and high halves of the 128-bit product, xored: every output bit
/// depends on every bit of both factors.
#[inline(always)]
fn fold(a: u64, b: u64) -> u64 {
    let product = u128::from(a) * u128::from(b);
    (product as u64) ^ ((product >> 64) as u64)
}

/// The keyed hash of new sets: the value's four little-endian words, each
/// pair masked with key words and multiplied (128-bit product, folded),
/// the two results masked again and multiplied once more. About 3 ns where
/// SipHash-1-3 of 32 bytes takes 15 to 20 here.
///
/// Why a keyed multiply suffices where the value may be ground: values
/// are hashes, but a user choosing a commitment's preimage can grind it
/// until the value has any prefix or suffix they like, and a hash that
/// took its shard and tag from the value's own bits would let them pile
/// values into one shard or onto one tag. Here every output bit depends
/// on the product of two words each masked by 64 unknown key bits: values
/// sharing any fixed part, or differing in one word only, land on shards
/// and tags that look independent to whoever does not know the key (the
/// test `values_sharing_long_prefixes_spread_over_shards_and_tags`). A
/// factor collapses to 0 only for a word equal to its key word, a 2^-64
/// guess. What this does not give is SipHash's resistance to an attacker
/// who learns outputs (from lookup timings, say) and solves for the key:
/// the key is per database, never leaves it, and the worst an attacker
/// who found it could do is lengthen probes in the shards they aim at:
/// never a wrong answer (every tag match is confirmed against the leaf),
/// and never more than the 80% load allows a cluster to grow.
#[inline]
fn folded(value: &Hash, key: Key) -> u64 {
    let word = |i: usize| {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&value[8 * i..8 * i + 8]);
        u64::from_le_bytes(bytes)
    };
    // Fixed odd constants (digits of pi) so that the two pairs and the
    // final step use different masks even where the key words are equal.
    const C0: u64 = 0x243f_6a88_85a3_08d3;
    const C1: u64 = 0x1319_8a2e_0370_7345;
    const C2: u64 = 0xa409_3822_299f_31d1;
    let low = fold(word(0) ^ key.0, word(1) ^ key.1);
    let high = fold(word(2) ^ key.1 ^ C0, word(3) ^ key.0 ^ C1);
    fold(low ^ C2, high.rotate_left(23) ^ key.0 ^ key.1)
}

/// Bits at the top of the tag that order a shard's run (64 groups, a few
/// cache lines of a shard's table each).
const GROUP_BITS: u32 = 6;
/// Bits at the top of the keyed hash that pick a batch's bucket in the
/// first grouping pass ([`by_bucket`]).
const BUCKET_BITS: u32 = 8;
const BUCKETS: usize = 1 << BUCKET_BITS;
/// The shard bits below the bucket's: a bucket holds this many shards.
const BUCKET_SHARD_BITS: u32 = SHARD_BITS - BUCKET_BITS;
const BUCKET_SHARDS: usize = 1 << BUCKET_SHARD_BITS;
// A bucket record is the shard's low bits, the tag and a 32-bit batch
// position, filling a `u64`; the second pass orders by its top bits.
const _: () = assert!(BUCKET_SHARD_BITS + TAG_BITS + 32 == u64::BITS);
const _: () = assert!(BUCKET_BITS < SHARD_BITS && GROUP_BITS <= TAG_BITS);
/// Below this many records a bucket is ordered by a sort rather than by
/// counting (whose 1,024 counters would cost more than the records).
const COUNT_FROM: usize = 256;

/// The first grouping pass: a stable counting sort of the batch by the
/// keyed hash's top [`BUCKET_BITS`]. `records[starts[b]..starts[b+1]]`
/// holds bucket `b`'s values in batch order, each as the shard's low
/// [`BUCKET_SHARD_BITS`] above the tag (the 32 bits of the hash below the
/// bucket's) above the batch position.
fn by_bucket(hashes: &[u64]) -> (Vec<usize>, Vec<u64>) {
    assert!(
        hashes.len() <= u32::MAX as usize,
        "batch positions fit in u32"
    );
    let bucket = |hash: u64| (hash >> (u64::BITS - BUCKET_BITS)) as usize;
    let mut starts = vec![0usize; BUCKETS + 1];
    for &hash in hashes {
        starts[bucket(hash) + 1] += 1;
    }
    for b in 0..BUCKETS {
        starts[b + 1] += starts[b];
    }
    let mut next = starts.clone();
    let mut records = vec![0u64; hashes.len()];
    for (position, &hash) in hashes.iter().enumerate() {
        let at = &mut next[bucket(hash)];
        records[*at] =
            (((hash >> (u64::BITS - BUCKET_BITS - 32)) as u32 as u64) << 32) | position as u64;
        *at += 1;
    }
    (starts, records)
}

/// The second grouping pass, over one bucket of [`by_bucket`]: orders its
/// records by shard, then by the tag's top [`GROUP_BITS`] (equal tags in
/// batch order), and leaves each as `tag << 32 | position`, what
/// [`Table::insert_run`] takes; returns where each of the bucket's shards
/// starts (`starts[k]..starts[k+1]`, shard `k` of the bucket).
fn by_shard_in_bucket(records: &mut [u64]) -> [usize; BUCKET_SHARDS + 1] {
    const KEY_BITS: u32 = BUCKET_SHARD_BITS + GROUP_BITS;
    const KEYS: usize = 1 << KEY_BITS;
    const TAG_AND_POSITION: u64 = (1 << (TAG_BITS + 32)) - 1;
    let shard = |record: u64| (record >> (TAG_BITS + 32)) as usize;
    let mut starts = [0usize; BUCKET_SHARDS + 1];
    for &record in records.iter() {
        starts[shard(record) + 1] += 1;
    }
    for k in 0..BUCKET_SHARDS {
        starts[k + 1] += starts[k];
    }
    if records.len() < COUNT_FROM {
        // By shard, tag and position: grouped as wanted, equal tags in
        // batch order.
        records.sort_unstable();
    } else {
        let key = |record: u64| (record >> (u64::BITS - KEY_BITS)) as usize;
        let mut next = vec![0usize; KEYS + 1];
        for &record in records.iter() {
            next[key(record) + 1] += 1;
        }
        for k in 0..KEYS {
            next[k + 1] += next[k];
        }
        let unordered = records.to_vec();
        for record in unordered {
            let at = &mut next[key(record)];
            records[*at] = record;
            *at += 1;
        }
    }
    for record in records.iter_mut() {
        *record &= TAG_AND_POSITION;
    }
    starts
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn value(i: u64) -> Hash {
        *blake3_like(i)
    }

    /// Distinct, deterministic 32-byte values.
    fn blake3_like(i: u64) -> Box<Hash> {
        let mut out = [0u8; 32];
        let mut state = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0xdead_beef;
        for chunk in out.chunks_mut(8) {
            state ^= state >> 31;
            state = state.wrapping_mul(0xbf58_476d_1ce4_e5b9);
            state ^= state >> 29;
            chunk.copy_from_slice(&state.to_le_bytes());
        }
        Box::new(out)
    }

    fn lookup(set: &NullifierSet, leaves: &[Hash], v: &Hash) -> Option<u64> {
        set.find(v, |i| leaves.get(i as usize).copied())
    }

    #[test]
    fn an_empty_set_allocates_no_tables_until_a_value_comes() {
        let set = NullifierSet::new(Key(1, 2));
        assert!(set.shards.get().is_none());
        assert_eq!(set.stats().memory_bytes, 0);
        assert_eq!(set.max_probe(), 0);
        assert_eq!(set.with_shard(7, |t| t.len()), 0);
        // Read from empty tables too: an idle set written to its file
        // keeps nothing allocated.
        let restored = NullifierSet::from_tables(
            Key(1, 2),
            TagHash::Folded,
            (0..SHARDS).map(|_| Table::default()).collect(),
        );
        assert!(restored.shards.get().is_none());
        let leaves = vec![value(0)];
        assert_eq!(lookup(&restored, &leaves, &value(0)), None);
        assert!(
            restored.shards.get().is_none(),
            "a lookup allocates nothing"
        );
        let leaf = |i: u64| leaves.get(i as usize).copied();
        assert!(restored.insert_batch(&leaves, 0, &leaf).unwrap().is_empty());
        assert!(restored.shards.get().is_some());
        assert_eq!(lookup(&restored, &leaves, &value(0)), Some(0));
        assert!(restored.stats().memory_bytes > 0);
    }

    #[test]
    fn serial_and_parallel_batches_agree_and_report_duplicates_in_order() {
        for batch in [10usize, 10_000] {
            let set = NullifierSet::new(Key(1, 2));
            let mut leaves: Vec<Hash> = (0..batch as u64).map(value).collect();
            let leaf = |i: u64| leaves.get(i as usize).copied();
            assert!(
                set.insert_batch(&leaves.clone(), 0, &leaf)
                    .unwrap()
                    .is_empty()
            );
            // A second batch: new values, repeats of history, and repeats
            // within the batch.
            let mut next: Vec<Hash> = (batch as u64..2 * batch as u64).map(value).collect();
            next[3] = leaves[7];
            next[5] = next[4];
            next[batch - 1] = next[0];
            let snapshot = leaves.clone();
            let leaf = |i: u64| snapshot.get(i as usize).copied();
            let duplicates = set.insert_batch(&next, batch as u64, &leaf).unwrap();
            assert_eq!(
                duplicates,
                vec![
                    Duplicate {
                        position: 3,
                        value: leaves[7],
                        of: DuplicateOf::Leaf(7)
                    },
                    Duplicate {
                        position: 5,
                        value: next[4],
                        of: DuplicateOf::Batch(4)
                    },
                    Duplicate {
                        position: batch - 1,
                        value: next[0],
                        of: DuplicateOf::Batch(0)
                    },
                ]
            );
            assert_eq!(set.len(), 2 * batch as u64 - 3);
            // Roll the batch back: the set is as before.
            set.remove_batch(&next, batch as u64, &duplicates);
            assert_eq!(set.len(), batch as u64);
            leaves.extend_from_slice(&next);
            for (i, v) in leaves.iter().enumerate().take(batch) {
                assert_eq!(lookup(&set, &leaves, v), Some(i as u64));
            }
            assert_eq!(lookup(&set, &leaves, &next[0]), None);
        }
    }

    /// The two grouping passes against a plain sort: every value of the
    /// batch lands in its shard's run once, each run in tag-group order
    /// with equal tags in batch order, for buckets ordered by counting and
    /// by sorting alike (and with many equal hashes).
    #[test]
    fn grouping_passes_order_by_shard_then_tag_group_keeping_batch_order() {
        for (count, distinct) in [
            (1_000u64, 1_000u64),
            (2_000, 100),
            (300_000, 300_000),
            (200_000, 5_000),
        ] {
            let hashes: Vec<u64> = (0..count)
                .map(|i| {
                    let mut h = (i % distinct).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                    h ^= h >> 29;
                    h.wrapping_mul(0xbf58_476d_1ce4_e5b9)
                })
                .collect();
            let (starts, mut records) = by_bucket(&hashes);
            assert_eq!(starts[BUCKETS], hashes.len());
            let mut seen = vec![false; hashes.len()];
            let mut counted = 0;
            for bucket in 0..BUCKETS {
                let records = &mut records[starts[bucket]..starts[bucket + 1]];
                counted += usize::from(records.len() >= COUNT_FROM);
                let shard_starts = by_shard_in_bucket(records);
                assert_eq!(shard_starts[BUCKET_SHARDS], records.len());
                for k in 0..BUCKET_SHARDS {
                    let shard = (bucket << BUCKET_SHARD_BITS) | k;
                    let run = &records[shard_starts[k]..shard_starts[k + 1]];
                    let mut last: Option<(u32, usize)> = None;
                    for &record in run {
                        let (tag, position) = ((record >> 32) as u32, record as u32 as usize);
                        let hash = hashes[position];
                        assert_eq!((hash >> (64 - SHARD_BITS)) as usize, shard);
                        assert_eq!(
                            u64::from(tag),
                            (hash >> (64 - SHARD_BITS - TAG_BITS)) & ((1 << TAG_BITS) - 1)
                        );
                        assert!(!seen[position], "position {position} twice");
                        seen[position] = true;
                        if let Some((last_tag, last_position)) = last {
                            let group = |t: u32| t >> (TAG_BITS - GROUP_BITS);
                            assert!(group(last_tag) <= group(tag), "groups out of order");
                            if last_tag == tag {
                                assert!(last_position < position, "equal tags out of batch order");
                            }
                        }
                        last = Some((tag, position));
                    }
                }
            }
            assert!(seen.iter().all(|&s| s), "every value grouped");
            // Both orderings ran: small buckets sorted, large ones counted.
            if count >= 200_000 {
                assert!(counted > 0);
            } else {
                assert_eq!(counted, 0);
            }
        }
    }

    #[test]
    fn compacting_a_batch_renumbers_what_follows_a_refused_value() {
        let set = NullifierSet::new(Key(3, 4));
        let mut batch: Vec<Hash> = (0..6).map(value).collect();
        batch[2] = batch[1];
        let none = |_: u64| None;
        let refused = set.insert_batch(&batch, 100, &none).unwrap();
        assert_eq!(refused.len(), 1);
        set.compact_batch(&batch, 100, &refused);
        let kept: Vec<Hash> = batch
            .iter()
            .enumerate()
            .filter(|(p, _)| *p != 2)
            .map(|(_, v)| *v)
            .collect();
        let leaf = |i: u64| {
            i.checked_sub(100)
                .and_then(|i| kept.get(i as usize).copied())
        };
        for (i, v) in kept.iter().enumerate() {
            assert_eq!(set.find(v, leaf), Some(100 + i as u64));
        }
    }

    #[test]
    fn a_million_values_against_a_map() {
        let set = NullifierSet::new(Key::random());
        let mut model = HashMap::new();
        let mut leaves = Vec::new();
        for chunk in 0..10u64 {
            let batch: Vec<Hash> = (chunk * 100_000..(chunk + 1) * 100_000)
                .map(value)
                .collect();
            let snapshot = leaves.clone();
            let leaf = move |i: u64| snapshot.get(i as usize).copied();
            let first = leaves.len() as u64;
            assert!(set.insert_batch(&batch, first, &leaf).unwrap().is_empty());
            for (i, v) in batch.iter().enumerate() {
                model.insert(*v, first + i as u64);
            }
            leaves.extend_from_slice(&batch);
        }
        assert_eq!(set.len(), 1_000_000);
        for (v, &i) in model.iter().step_by(97) {
            assert_eq!(lookup(&set, &leaves, v), Some(i));
        }
        for i in 2_000_000..2_001_000 {
            assert_eq!(lookup(&set, &leaves, &value(i)), None);
        }
        let stats = set.stats();
        let per_value = stats.memory_bytes as f64 / stats.values as f64;
        assert!(per_value <= 16.0, "{per_value} bytes per value");
        assert!(set.max_probe() < 200, "max probe {}", set.max_probe());
    }

    /// Values ground to share a long prefix (or suffix) still spread over
    /// the shards and tags as random ones do: the key, not the value's
    /// bytes, decides where a value goes.
    #[test]
    fn values_sharing_long_prefixes_spread_over_shards_and_tags() {
        const COUNT: u32 = 1 << 20;
        for (shared_prefix, hash) in [
            (true, TagHash::Folded),
            (false, TagHash::Folded),
            (true, TagHash::SipHash13),
            (false, TagHash::SipHash13),
        ] {
            let set = NullifierSet::with_hash(Key::random(), hash);
            let mut per_shard = vec![0u32; SHARDS];
            let mut slots: Vec<u64> = (0..COUNT)
                .map(|i| {
                    let mut v = [0xabu8; 32];
                    if shared_prefix {
                        v[28..].copy_from_slice(&i.to_be_bytes());
                    } else {
                        v[..4].copy_from_slice(&i.to_be_bytes());
                    }
                    let slot = set.slot(&v);
                    per_shard[slot.shard] += 1;
                    ((slot.shard as u64) << 32) | u64::from(slot.tag)
                })
                .collect();
            // 256 per shard on average, standard deviation 16: 7 deviations
            // either side.
            let (low, high) = (
                *per_shard.iter().min().unwrap(),
                *per_shard.iter().max().unwrap(),
            );
            assert!(low >= 144 && high <= 368, "shard sizes {low}..{high}");
            // 2^20 values in 2^40 (shard, tag) pairs: about half a pair
            // collides on average.
            slots.sort_unstable();
            slots.dedup();
            let collisions = COUNT as usize - slots.len();
            assert!(collisions <= 8, "{collisions} (shard, tag) collisions");
        }
    }

    #[test]
    fn many_lookups_answer_as_single_ones() {
        let set = NullifierSet::new(Key(5, 6));
        let leaves: Vec<Hash> = (0..50_000).map(value).collect();
        let leaf = |i: u64| leaves.get(i as usize).copied();
        assert!(set.insert_batch(&leaves, 0, &leaf).unwrap().is_empty());
        let mut asked: Vec<Hash> = (0..3000).map(|i| value(i * 31 % 60_000)).collect();
        asked.push(leaves[49_999]);
        let prefetched = std::cell::Cell::new(0);
        let many = set.find_many(&asked, leaf, |_| prefetched.set(prefetched.get() + 1));
        let single: Vec<Option<u64>> = asked.iter().map(|v| set.find(v, leaf)).collect();
        assert_eq!(many, single);
        assert!(many.iter().filter(|f| f.is_some()).count() > 2000);
        assert!(
            prefetched.get() > 2000,
            "{} leaves prefetched",
            prefetched.get()
        );
        assert!(set.find_many(&[], leaf, |_| ()).is_empty());
    }

    /// A value whose first entry with its tag is another value's (a tag
    /// collision) is still found, and one whose only such entry is
    /// another value's is absent.
    #[test]
    fn many_lookups_look_past_a_colliding_tag() {
        let key = Key(9, 10);
        let probe = NullifierSet::new(key);
        let (wanted, absent) = (value(1), value(2));
        let (at, tag) = {
            let slot = probe.slot(&wanted);
            (slot.shard, slot.tag)
        };
        let absent_slot = probe.slot(&absent);
        let leaves = [value(100), wanted, value(101)];
        let mut tables: Vec<Table> = (0..SHARDS).map(|_| Table::default()).collect();
        let mut refused: Vec<(usize, ())> = Vec::new();
        // Leaf 0 (another value) with `wanted`'s tag first, then `wanted`
        // at leaf 1; leaf 2 (another value) with `absent`'s tag.
        for (shard, tag, index) in [
            (at, tag, 0),
            (at, tag, 1),
            (absent_slot.shard, absent_slot.tag, 2),
        ] {
            assert!(tables[shard].insert_run(
                &mut [u64::from(tag) << 32],
                index,
                |_, _| None,
                &mut refused
            ));
        }
        let set = NullifierSet::from_tables(key, TagHash::Folded, tables);
        let leaf = |i: u64| leaves.get(i as usize).copied();
        assert_eq!(
            set.find_many(&[wanted, absent], leaf, |_| ()),
            vec![Some(1), None]
        );
        assert_eq!(set.find(&wanted, leaf), Some(1));
    }
}
