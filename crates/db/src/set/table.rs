//! One shard of the nullifier set: an open-addressing table of 8-byte slots
//! with linear probing.
//!
//! A slot packs a 28-bit tag (bits of the value's keyed hash) above the
//! leaf index plus one (36 bits); 0 is an empty slot. The tag is both the
//! fingerprint and the position: a tag's home slot is `tag * capacity >> 28`,
//! which is monotone in the tag and computable for any capacity, so the
//! table grows by 1.25x (not 2x) and rehomes every entry from its slot
//! alone, without reading the leaves back. Growing at 80% load by 1.25x
//! keeps the load between 64% and 80%: 10 to 12.5 bytes per value.
//!
//! Hand-written rather than `hashbrown` because the workload needs what a
//! general map does not give: 8 bytes per entry (a map of 32-byte keys
//! would hold 40+), growth without the keys, and a table that serialises
//! as its slots.

/// Bits of the tag (the fingerprint kept per entry).
pub(crate) const TAG_BITS: u32 = 28;
/// Bits of the leaf index (plus one) kept per entry: 6.9e10 leaves.
const INDEX_BITS: u32 = 36;
const INDEX_MASK: u64 = (1 << INDEX_BITS) - 1;
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
fn index_of(slot: u64) -> u64 {
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

    /// Makes room for `extra` more entries; `false` if the shard would need
    /// more slots than there are tags (about 215 million entries in one
    /// shard, far beyond the index limit over 4096 shards).
    pub fn reserve(&mut self, extra: usize) -> bool {
        let want = self.len + extra;
        if want * 5 <= self.slots.len() * 4 {
            return true;
        }
        // Growing moves every entry: when a batch forces it, leave room for
        // another batch like it (at most a quarter more, so the load stays
        // at or above 64%).
        let headroom = extra.min(self.len / 4);
        let grown = (self.slots.len() * 5).div_ceil(4);
        let capacity = capacity_for(want + headroom).max(grown);
        if capacity > MAX_CAPACITY {
            if capacity_for(want) > MAX_CAPACITY {
                return false;
            }
            self.rebuild(MAX_CAPACITY);
            return true;
        }
        self.rebuild(capacity);
        true
    }

    /// Inserts an entry (room must have been reserved). Does not look for
    /// an equal value: callers `find` first.
    #[inline]
    pub fn insert(&mut self, tag: u32, index: u64) {
        assert!(
            (self.len + 1) * 5 <= self.slots.len() * 4,
            "insert without reserve"
        );
        place(&mut self.slots, pack(tag, index));
        self.len += 1;
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

    /// A copy holding only the entries with an index below `end` (what a
    /// checkpoint covering `end` leaves writes).
    pub fn below(&self, end: u64) -> Table {
        if self.slots.iter().all(|&s| s == 0 || index_of(s) < end) {
            return self.clone();
        }
        let mut out = Table {
            slots: vec![0; self.slots.len()],
            len: 0,
        };
        for &slot in &self.slots {
            if slot != 0 && index_of(slot) < end {
                place(&mut out.slots, slot);
                out.len += 1;
            }
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

    /// Grows to `capacity` slots in place: no second table, no fresh
    /// zeroed pages beyond the new tail.
    ///
    /// Homes only move right when the capacity grows (`tag * C >> 28` is
    /// monotone in C). With every cluster sorted by tag, each entry's new
    /// position `max(new home, previous new position + 1)`, in slot order,
    /// is at or after its old one, and every slot between its new home and
    /// it is full; moving entries from the last to the first never
    /// overwrites one not yet moved. Entries of the cluster at slot 0 (which may have
    /// wrapped around from the end) and any that would run past the new end
    /// are taken out first and put back by ordinary insertion.
    fn rebuild(&mut self, capacity: usize) {
        assert!(capacity >= self.slots.len());
        let old = self.slots.len();
        let mut aside = Vec::new();
        let mut at = 0;
        while at < old && self.slots[at] != 0 {
            aside.push(self.slots[at]);
            self.slots[at] = 0;
            at += 1;
        }
        // Sort each remaining cluster by tag: it stays valid (the k-th
        // smallest home of a cluster starting at s is at most s + k), and
        // then slot order is tag order, the order the new layout needs.
        let mut from = at;
        while from < old {
            if self.slots[from] == 0 {
                from += 1;
                continue;
            }
            let start = from;
            while from < old && self.slots[from] != 0 {
                from += 1;
            }
            sort_short(&mut self.slots[start..from]);
        }
        self.slots.resize(capacity, 0);
        // Forward pass: new positions of the entries left, in slot order.
        let mut moves: Vec<(u32, u32)> = Vec::with_capacity(self.len - aside.len());
        let mut next = 0usize;
        for from in at..old {
            let slot = self.slots[from];
            if slot == 0 {
                continue;
            }
            let to = home(tag_of(slot), capacity).max(next);
            if to >= capacity {
                aside.push(slot);
                self.slots[from] = 0;
                continue;
            }
            debug_assert!(to >= from, "entries only move right");
            moves.push((from as u32, to as u32));
            next = to + 1;
        }
        // Backward pass: move, last first.
        for &(from, to) in moves.iter().rev() {
            let (from, to) = (from as usize, to as usize);
            if from != to {
                self.slots[to] = self.slots[from];
                self.slots[from] = 0;
            }
        }
        for slot in aside {
            place(&mut self.slots, slot);
        }
    }

    /// The reference growth: a fresh table filled by ordinary insertion.
    #[cfg(test)]
    fn rebuilt_by_insertion(&self, capacity: usize) -> Vec<u64> {
        let mut slots = vec![0; capacity];
        for &slot in &self.slots {
            if slot != 0 {
                place(&mut slots, slot);
            }
        }
        slots
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

    fn add(table: &mut Table, tag: u32, index: u64) {
        assert!(table.reserve(1));
        table.insert(tag, index);
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

    /// Valid: every entry reachable from its home; and holds exactly `want`.
    fn assert_valid(slots: &[u64], want: &[u64]) {
        let mut held: Vec<u64> = slots.iter().copied().filter(|&s| s != 0).collect();
        held.sort_unstable();
        let mut want = want.to_vec();
        want.sort_unstable();
        assert_eq!(held, want);
        Table::from_slots(slots.to_vec(), want.len(), u64::MAX >> 30).unwrap();
    }

    proptest! {
        /// Growing in place holds the same entries as the reference growth,
        /// every one reachable, with wrap-around clusters and crowded tags.
        #[test]
        fn growing_in_place_matches_growing_by_insertion(
            tags in prop::collection::vec(0u32..40, 1..300),
            spread in 0u32..4,
            steps in 1usize..6,
        ) {
            let mut table = Table::default();
            let mut want = Vec::new();
            for (index, tag) in tags.iter().enumerate() {
                // Crowd the tags near the top so clusters wrap around, or
                // (spread 3) spread 40 values over the whole tag space.
                let tag = if spread == 3 {
                    tag * ((1 << TAG_BITS) / 40)
                } else {
                    ((1u32 << TAG_BITS) - 1) - (tag << (spread * 9))
                };
                prop_assume!(tag < 1 << TAG_BITS);
                add(&mut table, tag, index as u64);
                want.push(pack(tag, index as u64));
            }
            assert_valid(table.slots(), &want);
            for _ in 0..steps {
                let capacity = (table.capacity() * 5).div_ceil(4) + 1;
                let reference = table.rebuilt_by_insertion(capacity);
                table.rebuild(capacity);
                assert_valid(table.slots(), &want);
                assert_valid(&reference, &want);
                for &slot in &want {
                    prop_assert!(table.find(tag_of(slot), |i| i == index_of(slot)).is_some());
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
            let below = table.below(200);
            let kept = model.keys().filter(|&&i| i < 200).count();
            prop_assert_eq!(below.len(), kept);
            for (&index, &tag) in &model {
                let found = below.find(tag, |i| i == index);
                prop_assert_eq!(found, (index < 200).then_some(index));
            }
            let copy = Table::from_slots(table.slots().to_vec(), table.len(), u64::MAX - 1);
            prop_assert!(copy.is_ok());
        }
    }
}
