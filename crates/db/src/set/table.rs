//! One shard of the nullifier set: an open-addressing table of 8-byte slots
//! with linear probing.
//!
//! A slot packs a 28-bit tag (bits of the value's keyed hash) above the
//! leaf index plus one (36 bits); 0 is an empty slot. The tag is both the
//! fingerprint and the position: a tag's home slot is `tag * capacity >> 28`,
//! which is monotone in the tag and computable for any capacity, so the
//! table grows by 1.25x (not 2x) and rehomes every entry from its slot
//! alone, without reading the leaves back. Growing at 80% load by 1.25x
//! keeps the load between 64% and 80%: 10 to 12.5 bytes per value. A
//! batch's entries for a shard come grouped by the tag's top bits
//! ([`Table::insert_run`]): when they fit, each is one probe, the probes
//! sweeping the table forward; when they do not, the shard grows once for
//! all of them and the held entries and the batch are merged, in tag
//! order, into the new slots in one pass.
//!
//! Hand-written rather than `hashbrown` because the workload needs what a
//! general map does not give: 8 bytes per entry (a map of 32-byte keys
//! would hold 40+), growth without the keys, and a table that serialises
//! as its slots.

/// Bits of the tag (the fingerprint kept per entry).
pub(crate) const TAG_BITS: u32 = 28;
/// Bits of the leaf index (plus one) kept per entry: 6.9e10 leaves.
const INDEX_BITS: u32 = 36;
pub(crate) const INDEX_MASK: u64 = (1 << INDEX_BITS) - 1;
/// The largest leaf index a slot can hold.
pub const MAX_INDEX: u64 = INDEX_MASK - 1;
/// A shard never needs more slots than there are tags.
pub(crate) const MAX_CAPACITY: usize = 1 << TAG_BITS;
const MIN_CAPACITY: usize = 8;

// The slot layout, checked by the compiler: tag and index fill the 64-bit
// slot exactly (a tag fits the `u32` it is handled as), the all-zero slot
// (empty) is no entry since the index is stored plus one, and the home
// slot's product `tag * capacity` fits in 64 bits at the largest capacity.
const _: () = assert!(TAG_BITS + INDEX_BITS == u64::BITS && TAG_BITS <= u32::BITS);
const _: () = assert!(MAX_INDEX + 1 == INDEX_MASK && MAX_INDEX < u64::MAX);
const _: () = assert!(TAG_BITS + TAG_BITS <= u64::BITS && MAX_CAPACITY == 1 << TAG_BITS);
const _: () = assert!(0 < MIN_CAPACITY && MIN_CAPACITY <= MAX_CAPACITY);

/// An entry: the tag and the leaf index.
#[inline]
pub(crate) fn pack(tag: u32, index: u64) -> u64 {
    debug_assert!(tag < 1 << TAG_BITS && index <= MAX_INDEX);
    (u64::from(tag) << INDEX_BITS) | (index + 1)
}

#[inline]
fn tag_of(slot: u64) -> u32 {
    (slot >> INDEX_BITS) as u32
}

#[inline]
pub(crate) fn index_of(slot: u64) -> u64 {
    (slot & INDEX_MASK) - 1
}

#[inline]
fn home(tag: u32, capacity: usize) -> usize {
    ((u64::from(tag) * capacity as u64) >> TAG_BITS) as usize
}

/// The smallest capacity that holds `len` entries at no more than 80% load.
fn capacity_for(len: usize) -> usize {
    (len * 5).div_ceil(4).max(MIN_CAPACITY)
}

/// `capacity` empty slots, every page of them already written.
///
/// Why not just `vec![0; capacity]`: that memory comes zeroed from the
/// allocator without being touched, and a probe reads a slot before it
/// writes one, so the kernel first maps the shared zero page and then, at
/// the write, copies it and flushes the old mapping from every core the
/// process runs on (an inter-processor interrupt, a VM exit on a virtual
/// machine). In `cairn ingest` of 10M values those flushes were a fifth of
/// all CPU samples. A write to each page up front makes its first fault
/// allocate the page outright. `black_box` keeps the compiler from
/// proving the store redundant (the memory is known to be zero).
pub(crate) fn empty_slots(capacity: usize) -> Vec<u64> {
    const SLOTS_PER_PAGE: usize = 4096 / std::mem::size_of::<u64>();
    let mut slots = vec![0u64; capacity];
    for slot in slots.iter_mut().step_by(SLOTS_PER_PAGE) {
        *slot = std::hint::black_box(0);
    }
    slots
}

/// One shard: slots and the number of entries.
#[derive(Clone, Debug, Default)]
pub(crate) struct Table {
    slots: Vec<u64>,
    len: usize,
}

impl Table {
    /// Entries held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Slots allocated.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// The slots, as stored in a checkpoint.
    pub fn slots(&self) -> &[u64] {
        &self.slots
    }

    /// The index of the first entry with `tag` for which `is` holds (the
    /// caller compares the leaf at that index with the value it looks for).
    #[inline]
    pub fn find(&self, tag: u32, mut is: impl FnMut(u64) -> bool) -> Option<u64> {
        let capacity = self.slots.len();
        if capacity == 0 {
            return None;
        }
        let mut at = home(tag, capacity);
        // Terminates: the load is at most 80%, so there is an empty slot.
        loop {
            let slot = self.slots[at];
            if slot == 0 {
                return None;
            }
            if tag_of(slot) == tag && is(index_of(slot)) {
                return Some(index_of(slot));
            }
            at += 1;
            if at == capacity {
                at = 0;
            }
        }
    }

    /// Asks the CPU to start loading the cache line of `tag`'s home slot
    /// (for batch lookups, which issue many such loads before the probes
    /// that need them).
    #[inline]
    pub fn prefetch(&self, tag: u32) {
        if self.slots.is_empty() {
            return;
        }
        let at = home(tag, self.slots.len());
        prefetch_read(&self.slots[at]);
    }

    /// The capacity to grow to when `extra` more entries do not fit;
    /// `None` if it would exceed [`MAX_CAPACITY`].
    fn grown_for(&self, extra: usize) -> Option<usize> {
        let want = self.len + extra;
        // Growing moves every entry: when a batch forces it, leave as much
        // room as the load floor allows (a quarter of the entries more, so
        // the load starts at 64%), so that the next growth is as far off
        // as it can be.
        let headroom = want / 4;
        let grown = (self.slots.len() * 5).div_ceil(4);
        let capacity = capacity_for(want + headroom).max(grown);
        if capacity <= MAX_CAPACITY {
            Some(capacity)
        } else if capacity_for(want) <= MAX_CAPACITY {
            Some(MAX_CAPACITY)
        } else {
            None
        }
    }

    /// Grows, if need be, so that `extra` more entries fit without a
    /// growth (each entry moved once, to its home in the larger table);
    /// `false` (nothing changed) if that would exceed [`MAX_CAPACITY`].
    /// For a caller that knows how many values are coming: a bulk ingest
    /// that grows the table batch by batch moves every entry at each
    /// growth, several times over.
    pub fn reserve(&mut self, extra: usize) -> bool {
        let want = capacity_for(self.len + extra);
        if want <= self.slots.len() {
            return true;
        }
        if want > MAX_CAPACITY {
            return false;
        }
        let mut refused: Vec<(usize, ())> = Vec::new();
        self.merge_grow(&[], 0, want, |_, _| None, &mut refused);
        debug_assert!(refused.is_empty());
        true
    }

    /// Inserts a batch's entries for this shard: `run` holds
    /// `tag << 32 | position`, entries of equal tags in position order
    /// (any order otherwise: the run is sorted here if the table must
    /// grow; in home order it sweeps the table forward), and the entry at
    /// `position` gets leaf index `first + position`. Before an entry goes in,
    /// `same(position, index)` is asked about each entry with its tag
    /// already held (or inserted earlier from the run); the first `Some`
    /// refuses it, pushed to `refused` with its position. `false` (nothing
    /// inserted) if the shard would need more than [`MAX_CAPACITY`] slots.
    ///
    /// When the run fits, each entry costs one probe from its home (the
    /// duplicate check and the insertion share it). When it does not, the
    /// table grows once, to what the whole run needs, and the held entries
    /// (in tag order) and the run are merged into the new slots in one
    /// forward pass: no entry moves twice and no slot is written twice.
    pub fn insert_run<D>(
        &mut self,
        run: &mut [u64],
        first: u64,
        mut same: impl FnMut(usize, u64) -> Option<D>,
        refused: &mut Vec<(usize, D)>,
    ) -> bool {
        if (self.len + run.len()) * 5 <= self.slots.len() * 4 {
            // The run sweeps the table forward, but each group of it (see
            // the caller) lands at random within a few cache lines: the
            // home of the entry a few on is asked for ahead, so the misses
            // of consecutive entries overlap instead of queueing.
            const AHEAD: usize = 8;
            let capacity = self.slots.len();
            let hint = |slots: &[u64], record: u64| {
                prefetch_read(&slots[home((record >> 32) as u32, capacity)]);
            };
            for &record in run.iter().take(AHEAD) {
                hint(&self.slots, record);
            }
            for (k, &record) in run.iter().enumerate() {
                if let Some(&next) = run.get(k + AHEAD) {
                    hint(&self.slots, next);
                }
                let (tag, position) = ((record >> 32) as u32, record as u32 as usize);
                let index = first + position as u64;
                match self.find_or_insert(tag, index, |i| same(position, i)) {
                    Some(of) => refused.push((position, of)),
                    None => self.len += 1,
                }
            }
            return true;
        }
        let Some(capacity) = self.grown_for(run.len()) else {
            return false;
        };
        // (tag, position): equal tags keep batch order, so the first of
        // two equal values is the one inserted.
        run.sort_unstable();
        self.merge_grow(run, first, capacity, same, refused);
        true
    }

    /// One probe from `tag`'s home: the first entry with `tag` for which
    /// `same` answers `Some` refuses the new entry; else the entry takes
    /// the first empty slot (the caller made room and counts it).
    #[inline]
    fn find_or_insert<D>(
        &mut self,
        tag: u32,
        index: u64,
        mut same: impl FnMut(u64) -> Option<D>,
    ) -> Option<D> {
        let capacity = self.slots.len();
        let mut at = home(tag, capacity);
        loop {
            let slot = self.slots[at];
            if slot == 0 {
                self.slots[at] = pack(tag, index);
                return None;
            }
            if tag_of(slot) == tag
                && let Some(of) = same(index_of(slot))
            {
                return Some(of);
            }
            at += 1;
            if at == capacity {
                at = 0;
            }
        }
    }

    /// The entries held, in packed order (tag, then index): each cluster
    /// sorted (clusters are short), and the cluster at slot 0, which may
    /// hold entries wrapped around from the end, merged in.
    fn sorted_entries(&self) -> Vec<u64> {
        let end = self.slots.len();
        let mut wrapped = Vec::new();
        let mut at = 0;
        while at < end && self.slots[at] != 0 {
            wrapped.push(self.slots[at]);
            at += 1;
        }
        sort_short(&mut wrapped);
        let mut rest = Vec::with_capacity(self.len - wrapped.len());
        while at < end {
            if self.slots[at] == 0 {
                at += 1;
                continue;
            }
            let start = rest.len();
            while at < end && self.slots[at] != 0 {
                rest.push(self.slots[at]);
                at += 1;
            }
            // The clusters after the first are in home order among
            // themselves: every home of a cluster lies at or after its
            // start, which is past the previous cluster's end.
            sort_short(&mut rest[start..]);
        }
        if wrapped.is_empty() {
            return rest;
        }
        let mut out = Vec::with_capacity(self.len);
        merge(&wrapped, &rest, |slot| out.push(slot));
        out
    }

    /// Grows to `capacity` and inserts `run` (see [`Table::insert_run`]),
    /// writing the new slots in one pass.
    fn merge_grow<D>(
        &mut self,
        run: &[u64],
        first: u64,
        capacity: usize,
        mut same: impl FnMut(usize, u64) -> Option<D>,
        refused: &mut Vec<(usize, D)>,
    ) {
        // Entries go in home order at max(home, next free slot), so each
        // entry's probe path, from its home to its slot, is full: a valid
        // table. Entries that would run past the end wrap around to the
        // start afterwards.
        let mut slots = empty_slots(capacity);
        let mut next = 0;
        let mut overflow = Vec::new();
        let mut put = |slots: &mut [u64], slot: u64| {
            let to = home(tag_of(slot), capacity).max(next);
            if to < capacity {
                slots[to] = slot;
                next = to + 1;
            } else {
                overflow.push(slot);
            }
        };
        // The indexes held with the tag being merged: what an entry of the
        // run with that tag is checked against (almost always none).
        let mut group_tag = u32::MAX;
        let mut group: Vec<u64> = Vec::new();
        let mut held = self.sorted_entries().into_iter().peekable();
        let mut accepted = 0;
        for &record in run {
            let (tag, position) = ((record >> 32) as u32, record as u32 as usize);
            let index = first + position as u64;
            let entry = pack(tag, index);
            if tag != group_tag {
                group_tag = tag;
                group.clear();
                while let Some(slot) = held.next_if(|&slot| tag_of(slot) < tag) {
                    put(&mut slots, slot);
                }
                // Every held entry with the tag comes out before the run's
                // first entry with it (held indexes are below `first`, but
                // the check does not depend on that).
                while let Some(slot) = held.next_if(|&slot| tag_of(slot) == tag) {
                    group.push(index_of(slot));
                    put(&mut slots, slot);
                }
            }
            if let Some(of) = group.iter().find_map(|&i| same(position, i)) {
                refused.push((position, of));
                continue;
            }
            group.push(index);
            put(&mut slots, entry);
            accepted += 1;
        }
        for slot in held {
            put(&mut slots, slot);
        }
        for slot in overflow {
            place(&mut slots, slot);
        }
        self.slots = slots;
        self.len += accepted;
    }

    /// Removes the entry (`tag`, `index`); `false` if absent. Backward-shift
    /// deletion: later entries of the cluster move up so no probe sequence
    /// is broken (no tombstones).
    pub fn remove(&mut self, tag: u32, index: u64) -> bool {
        let capacity = self.slots.len();
        if capacity == 0 {
            return false;
        }
        let target = pack(tag, index);
        let mut at = home(tag, capacity);
        loop {
            let slot = self.slots[at];
            if slot == 0 {
                return false;
            }
            if slot == target {
                break;
            }
            at = (at + 1) % capacity;
        }
        let mut hole = at;
        let mut next = at;
        loop {
            next = (next + 1) % capacity;
            let slot = self.slots[next];
            if slot == 0 {
                break;
            }
            let from = home(tag_of(slot), capacity);
            // The entry may fill the hole if the hole lies on its probe
            // path, i.e. cyclically within [home, next).
            let distance = |a: usize, b: usize| (b + capacity - a) % capacity;
            if distance(from, next) >= distance(hole, next) {
                self.slots[hole] = slot;
                hole = next;
            }
        }
        self.slots[hole] = 0;
        self.len -= 1;
        true
    }

    /// Rewrites the slot of entry (`tag`, `from`) to point at `to` instead
    /// (same tag, same position); `false` if absent.
    pub fn renumber(&mut self, tag: u32, from: u64, to: u64) -> bool {
        let capacity = self.slots.len();
        if capacity == 0 {
            return false;
        }
        let target = pack(tag, from);
        let mut at = home(tag, capacity);
        loop {
            match self.slots[at] {
                0 => return false,
                slot if slot == target => {
                    self.slots[at] = pack(tag, to);
                    return true;
                }
                _ => at = (at + 1) % capacity,
            }
        }
    }

    /// How many entries have an index below `end`.
    pub fn count_below(&self, end: u64) -> u64 {
        self.slots
            .iter()
            .map(|&s| u64::from(s != 0 && index_of(s) < end))
            .sum()
    }

    /// The table holding only its entries with an index below `end` (what
    /// open keeps of a checkpoint that covers `end` leaves).
    pub fn below(self, end: u64) -> Table {
        let later: Vec<u64> = self
            .slots
            .iter()
            .copied()
            .filter(|&slot| slot != 0 && index_of(slot) >= end)
            .collect();
        if later.is_empty() {
            return self;
        }
        if later.len() * 4 > self.len {
            // Many go: placing those that stay afresh is cheaper.
            let mut out = Table {
                slots: empty_slots(self.slots.len()),
                len: 0,
            };
            for &slot in &self.slots {
                if slot != 0 && index_of(slot) < end {
                    place(&mut out.slots, slot);
                    out.len += 1;
                }
            }
            return out;
        }
        // A few go (typically one batch appended while a checkpoint was
        // written): taken out one by one.
        let mut out = self;
        for slot in later {
            let removed = out.remove(tag_of(slot), index_of(slot));
            debug_assert!(removed, "an entry of the table");
        }
        out
    }

    /// A table from checkpointed slots, checked: the capacity is one the
    /// growth rule allows, the count matches, every index is below `end`
    /// and every entry is reachable from its home.
    pub fn from_slots(slots: Vec<u64>, len: usize, end: u64) -> Result<Table, String> {
        if slots.len() > MAX_CAPACITY || (!slots.is_empty() && slots.len() < MIN_CAPACITY) {
            return Err(format!("capacity {} is not a valid one", slots.len()));
        }
        if len * 5 > slots.len() * 4 {
            return Err(format!(
                "{len} entries in {} slots exceed the 80% load",
                slots.len()
            ));
        }
        let mut count = 0;
        let capacity = slots.len();
        // One pass from just after an empty slot (the load limit leaves
        // one): an entry is reachable iff its home lies cyclically between
        // the start of its cluster and its slot.
        let empty = slots.iter().position(|&s| s == 0).unwrap_or(0);
        let mut cluster = (empty + 1) % capacity.max(1);
        for step in 1..=capacity {
            let at = (empty + step) % capacity;
            let slot = slots[at];
            if slot == 0 {
                cluster = (at + 1) % capacity;
                continue;
            }
            count += 1;
            if slot & INDEX_MASK == 0 || index_of(slot) >= end {
                return Err(format!(
                    "slot {at} points at leaf {}, the checkpoint covers {end}",
                    (slot & INDEX_MASK).wrapping_sub(1)
                ));
            }
            let from = home(tag_of(slot), capacity);
            let distance = |a: usize, b: usize| (b + capacity - a) % capacity;
            if distance(from, at) > distance(cluster, at) {
                return Err(format!("slot {at} is unreachable from its home {from}"));
            }
        }
        if count != len {
            return Err(format!("{count} entries, the header says {len}"));
        }
        Ok(Table { slots, len })
    }

    /// The longest probe sequence of any entry (1 when every entry sits at
    /// its home slot).
    pub fn max_probe(&self) -> usize {
        let capacity = self.slots.len();
        self.slots
            .iter()
            .enumerate()
            .filter(|&(_, &s)| s != 0)
            .map(|(at, &s)| (at + capacity - home(tag_of(s), capacity)) % capacity + 1)
            .max()
            .unwrap_or(0)
    }

    /// Every (tag, index) held, in slot order.
    #[cfg(test)]
    pub fn entries(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.slots
            .iter()
            .filter(|&&s| s != 0)
            .map(|&s| (tag_of(s), index_of(s)))
    }
}

/// Sorts a cluster: most are a few slots and already in order, so an
/// insertion sort (no call into the general sort) does them.
#[inline]
fn sort_short(run: &mut [u64]) {
    if run.len() > 32 {
        run.sort_unstable();
        return;
    }
    for i in 1..run.len() {
        let value = run[i];
        let mut j = i;
        while j > 0 && run[j - 1] > value {
            run[j] = run[j - 1];
            j -= 1;
        }
        run[j] = value;
    }
}

/// A hint to load the cache line holding `value`; nothing on targets
/// without a prefetch instruction here.
#[inline(always)]
pub(crate) fn prefetch_read<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: SSE is part of the x86_64 baseline, and a prefetch only
        // hints the cache; the pointer comes from a live reference anyway.
        #[allow(unsafe_code)]
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>((value as *const T).cast::<i8>())
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

/// Merges two sorted sequences, in order, into `out`.
fn merge(a: &[u64], b: &[u64], mut out: impl FnMut(u64)) {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i] <= b[j] {
            out(a[i]);
            i += 1;
        } else {
            out(b[j]);
            j += 1;
        }
    }
    a[i..].iter().chain(&b[j..]).for_each(|&slot| out(slot));
}

/// Puts a packed entry in the first empty slot from its home.
#[inline]
fn place(slots: &mut [u64], slot: u64) {
    let capacity = slots.len();
    let mut at = home(tag_of(slot), capacity);
    while slots[at] != 0 {
        at += 1;
        if at == capacity {
            at = 0;
        }
    }
    slots[at] = slot;
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;

    /// Inserts one entry (leaf `index`, no duplicate check).
    fn add(table: &mut Table, tag: u32, index: u64) {
        let mut refused: Vec<(usize, ())> = Vec::new();
        assert!(table.insert_run(
            &mut [u64::from(tag) << 32],
            index,
            |_, _| None,
            &mut refused
        ));
        assert!(refused.is_empty());
    }

    #[test]
    fn new_slots_are_empty_at_every_length() {
        // Around page boundaries (512 slots a page) and none at all: the
        // pages are written up front, and what is written is an empty slot.
        for capacity in [0, 1, 8, 511, 512, 513, 1024, 4097, 100_000] {
            let slots = empty_slots(capacity);
            assert_eq!(slots.len(), capacity);
            assert!(slots.iter().all(|&slot| slot == 0), "capacity {capacity}");
        }
    }

    /// This thread's minor page faults so far (`/proc/thread-self/stat`,
    /// the tenth field: per thread, so tests running beside do not count).
    #[cfg(target_os = "linux")]
    fn minor_faults() -> u64 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        let after_name = &stat[stat.rfind(')').unwrap() + 1..];
        after_name
            .split_whitespace()
            .nth(7)
            .unwrap()
            .parse()
            .unwrap()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn reading_new_slots_faults_no_page_in() {
        // 16 MiB: the allocator maps it fresh. Had the pages been left
        // untouched, each read would fault the zero page in (and each
        // later insert copy it): 4,096 faults here.
        let slots = empty_slots(1 << 21);
        let before = minor_faults();
        let sum = slots.iter().fold(0u64, |acc, &slot| acc.wrapping_add(slot));
        let faults = minor_faults() - before;
        assert_eq!(std::hint::black_box(sum), 0);
        assert!(
            faults < 64,
            "{faults} page faults reading slots written up front"
        );
    }

    #[test]
    fn grows_by_a_quarter_and_keeps_load_between_64_and_80_percent() {
        let mut table = Table::default();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for index in 0..200_000u64 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            add(&mut table, (state >> 36) as u32, index);
            let load = table.len() as f64 / table.capacity() as f64;
            assert!(load <= 0.8, "load {load} at {index}");
            if table.len() > 1000 {
                assert!(load >= 0.63, "load {load} at {index}");
            }
        }
        for (tag, index) in table.entries().collect::<Vec<_>>() {
            assert_eq!(table.find(tag, |i| i == index), Some(index));
        }
    }

    #[test]
    fn a_reserved_table_takes_that_many_entries_without_growing() {
        let mut table = Table::default();
        for index in 0..100 {
            add(
                &mut table,
                (index as u32).wrapping_mul(2_654_435_761) >> 4,
                index,
            );
        }
        assert!(table.reserve(10_000));
        let capacity = table.capacity();
        assert!(capacity >= (10_100 * 5) / 4, "capacity {capacity}");
        let mut state = 7u64;
        for index in 100..10_100u64 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            add(&mut table, (state >> 36) as u32, index);
        }
        assert_eq!(table.capacity(), capacity, "grew after a reserve");
        assert_eq!(table.len(), 10_100);
        for (tag, index) in table.entries().collect::<Vec<_>>() {
            assert_eq!(table.find(tag, |i| i == index), Some(index));
        }
        Table::from_slots(table.slots().to_vec(), table.len(), 10_100).unwrap();
        // Room already there: nothing moves.
        assert!(table.reserve(0));
        assert_eq!(table.capacity(), capacity);
        assert!(!table.reserve(MAX_CAPACITY));
    }

    #[test]
    fn from_slots_refuses_what_the_table_cannot_hold() {
        let mut table = Table::default();
        for i in 0..50 {
            add(&mut table, (i * 331_337) as u32 & 0xff_ffff, i);
        }
        let ok = Table::from_slots(table.slots().to_vec(), 50, 50).unwrap();
        assert_eq!(ok.len(), 50);
        assert!(
            Table::from_slots(table.slots().to_vec(), 49, 50)
                .unwrap_err()
                .contains("header says 49")
        );
        assert!(
            Table::from_slots(table.slots().to_vec(), 50, 49)
                .unwrap_err()
                .contains("covers 49")
        );
        // An entry placed past an empty slot after its home cannot be
        // found by a probe: refused.
        let mut slots = vec![0u64; 8];
        slots[3] = pack(0, 0); // tag 0 has home 0; slots 0..3 are empty
        assert!(
            Table::from_slots(slots, 1, 1)
                .unwrap_err()
                .contains("unreachable")
        );
    }

    proptest! {
        /// Batches go in like into a map that refuses what it holds: in
        /// the room left (one probe each) and by growing (the merge),
        /// with crowded and equal tags, wrap-around clusters, repeats of
        /// held values and repeats within a batch; after each batch the
        /// table is valid and finds exactly the accepted values.
        #[test]
        fn runs_go_in_like_into_a_map(
            batches in prop::collection::vec(prop::collection::vec(0u32..300, 0..150), 1..8),
            spread in 0u32..4,
        ) {
            // 300 values over 40 tags: equal tags for different values.
            // Crowded near the top so clusters wrap around, or (spread 3)
            // spread over the whole tag space.
            let tag_of_value = |v: u32| {
                let t = v % 40;
                if spread == 3 {
                    t * ((1 << TAG_BITS) / 40)
                } else {
                    ((1u32 << TAG_BITS) - 1) - (t << (spread * 9))
                }
            };
            let mut table = Table::default();
            let mut leaves: Vec<u32> = Vec::new();
            let mut model: HashMap<u32, u64> = HashMap::new();
            for batch in batches {
                let first = leaves.len() as u64;
                let mut run: Vec<u64> = batch
                    .iter()
                    .enumerate()
                    .map(|(p, &v)| (u64::from(tag_of_value(v)) << 32) | p as u64)
                    .collect();
                // Batch order (the positions), or home order with equal
                // tags in batch order, as the set passes runs.
                if spread % 2 == 0 {
                    run.sort_by_key(|record| record >> (32 + TAG_BITS - 6));
                }
                let mut refused = Vec::new();
                let same = |position: usize, index: u64| {
                    let held = match index.checked_sub(first) {
                        Some(p) => batch[p as usize],
                        None => leaves[index as usize],
                    };
                    (held == batch[position]).then_some(index)
                };
                prop_assert!(table.insert_run(&mut run, first, same, &mut refused));
                let mut want = Vec::new();
                for (p, &v) in batch.iter().enumerate() {
                    match model.get(&v) {
                        Some(&i) => want.push((p, i)),
                        None => {
                            model.insert(v, first + p as u64);
                        }
                    }
                }
                refused.sort_unstable();
                prop_assert_eq!(refused, want);
                leaves.extend(&batch);
                prop_assert_eq!(table.len(), model.len());
                let load = table.len() as f64 / table.capacity().max(1) as f64;
                prop_assert!(load <= 0.8, "load {}", load);
                Table::from_slots(table.slots().to_vec(), table.len(), leaves.len() as u64)
                    .map_err(TestCaseError::fail)?;
                for (&v, &i) in &model {
                    let found = table.find(tag_of_value(v), |j| leaves[j as usize] == v);
                    prop_assert_eq!(found, Some(i));
                }
            }
        }

        /// The table against a map, through inserts, removals, renumbering
        /// and copies below a size; tags drawn from a small range so that
        /// clusters, wrap-around and equal tags are common.
        #[test]
        fn behaves_like_a_map(ops in prop::collection::vec((0u8..4, 0u32..64, 0u64..400), 1..600)) {
            let mut table = Table::default();
            let mut model: HashMap<u64, u32> = HashMap::new();
            for (op, tag, index) in ops {
                // Spread the small tags over the whole tag space, keeping
                // collisions: tag t lands in the top bits.
                let tag = (tag << 22) | (tag & 3);
                match op {
                    0 | 1 => {
                        if let std::collections::hash_map::Entry::Vacant(e) = model.entry(index) {
                            add(&mut table, tag, index);
                            e.insert(tag);
                        }
                    }
                    2 => {
                        let removed = table.remove(tag, index);
                        prop_assert_eq!(removed, model.get(&index) == Some(&tag));
                        if removed {
                            model.remove(&index);
                        }
                    }
                    // A renumbering onto an index already held would make
                    // two entries of one index, which the set never does.
                    _ if model.contains_key(&(index + 1000)) => {}
                    _ => {
                        let to = index + 1000;
                        let renumbered = table.renumber(tag, index, to);
                        prop_assert_eq!(renumbered, model.get(&index) == Some(&tag));
                        if renumbered {
                            model.remove(&index);
                            model.insert(to, tag);
                        }
                    }
                }
                prop_assert_eq!(table.len(), model.len());
            }
            for (&index, &tag) in &model {
                prop_assert_eq!(table.find(tag, |i| i == index), Some(index));
            }
            // Many entries dropped (placed afresh) and few (taken out).
            for end in [200, 380] {
                let below = table.clone().below(end);
                let kept = model.keys().filter(|&&i| i < end).count();
                prop_assert_eq!(below.len(), kept);
                prop_assert_eq!(table.count_below(end), kept as u64);
                for (&index, &tag) in &model {
                    let found = below.find(tag, |i| i == index);
                    prop_assert_eq!(found, (index < end).then_some(index));
                }
                prop_assert!(Table::from_slots(below.slots().to_vec(), kept, end).is_ok());
            }
            let copy = Table::from_slots(table.slots().to_vec(), table.len(), u64::MAX - 1);
            prop_assert!(copy.is_ok());
        }
    }
}
