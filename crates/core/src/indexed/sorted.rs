//! The indexed tree's values in sorted order, to find a value's low leaf.
//!
//! A B+tree of depth two kept as a vector of sorted chunks of at most
//! [`CHUNK_MAX`] entries, each entry a leaf index and the first 8 bytes of
//! its value (so most comparisons touch no value), plus the full first
//! value of every chunk for the top-level binary search. Chunks are
//! reference-counted and copied on write, so a snapshot is a copy of the
//! chunk pointers (one per ~384 values) and never sees a later insert.
//!
//! Memory: 16 bytes per entry at a fill of 1/2 to 1 (about 21 bytes per
//! value for random inserts), plus 40 bytes per chunk; a
//! `BTreeMap<[u8; 32], u64>` would cost about 60 bytes per value, and a
//! snapshot of it would copy it whole.

use crate::cast::to_usize;
use std::cmp::Ordering;
use std::sync::Arc;

use crate::hash::Hash;
use crate::level::Level;

/// The most entries in a chunk: an insert moves at most 8 KiB, and a
/// snapshot copies one pointer per 256..512 values.
const CHUNK_MAX: usize = 512;

/// A leaf index and the first 8 bytes of its value, big-endian.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    prefix: u64,
    index: u64,
}

impl Entry {
    pub(crate) fn new(value: &Hash, index: u64) -> Entry {
        Entry {
            prefix: prefix(value),
            index,
        }
    }

    pub(crate) fn index(self) -> u64 {
        self.index
    }
}

fn prefix(value: &Hash) -> u64 {
    let mut head = [0u8; 8];
    head.copy_from_slice(&value[..8]);
    u64::from_be_bytes(head)
}

/// A position in the order: chunk and offset within it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Position {
    chunk: usize,
    offset: usize,
}

/// Leaf indices sorted by their values (read from `values`, the level
/// holding each leaf's value at its index).
#[derive(Clone, Debug, Default)]
pub(crate) struct SortedIndex {
    chunks: Vec<Arc<Vec<Entry>>>,
    /// The value of each chunk's first entry.
    firsts: Vec<Hash>,
    len: u64,
}

impl SortedIndex {
    /// An index over sorted `entries` (built once, at a fill of 3/4).
    pub(crate) fn from_sorted(entries: &[Entry], values: &Level) -> SortedIndex {
        let mut index = SortedIndex::default();
        for piece in entries.chunks(CHUNK_MAX * 3 / 4) {
            index.firsts.push(values.at(to_usize(piece[0].index)));
            index.chunks.push(Arc::new(piece.to_vec()));
        }
        index.len = entries.len() as u64;
        index
    }

    /// Entries held.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Where `value` is (`Ok`), or where it would go (`Err`: the position
    /// of the first larger entry, which may be one past a chunk's end).
    pub(crate) fn locate(&self, value: &Hash, values: &Level) -> Result<Position, Position> {
        if self.chunks.is_empty() {
            return Err(Position {
                chunk: 0,
                offset: 0,
            });
        }
        // The last chunk whose first value is at most `value`.
        let after = self.firsts.partition_point(|first| first <= value);
        let chunk = after.saturating_sub(1);
        let want = prefix(value);
        let entries = &self.chunks[chunk];
        let found = entries.binary_search_by(|entry| match entry.prefix.cmp(&want) {
            Ordering::Equal => values.at(to_usize(entry.index)).cmp(value),
            other => other,
        });
        match found {
            Ok(offset) => Ok(Position { chunk, offset }),
            Err(offset) => Err(Position { chunk, offset }),
        }
    }

    /// The entry at `position`, if it holds one.
    pub(crate) fn at(&self, position: Position) -> Option<Entry> {
        self.chunks
            .get(position.chunk)
            .and_then(|c| c.get(position.offset))
            .copied()
    }

    /// The position before `position` (which may be one past a chunk's
    /// end), if there is an entry before it.
    pub(crate) fn previous(&self, position: Position) -> Option<Position> {
        if position.offset > 0 {
            return Some(Position {
                chunk: position.chunk,
                offset: position.offset - 1,
            });
        }
        let chunk = position.chunk.checked_sub(1)?;
        let len = self.chunks.get(chunk)?.len();
        Some(Position {
            chunk,
            offset: len.checked_sub(1)?,
        })
    }

    /// The entry before `position` (which may be one past a chunk's end).
    pub(crate) fn before(&self, position: Position) -> Option<Entry> {
        if position.offset > 0 {
            return self.at(Position {
                chunk: position.chunk,
                offset: position.offset - 1,
            });
        }
        let chunk = position.chunk.checked_sub(1)?;
        self.chunks[chunk].last().copied()
    }

    /// The entry after the one at `position`.
    pub(crate) fn after(&self, position: Position) -> Option<Entry> {
        let entries = self.chunks.get(position.chunk)?;
        if position.offset + 1 < entries.len() {
            return Some(entries[position.offset + 1]);
        }
        self.chunks
            .get(position.chunk + 1)
            .and_then(|c| c.first())
            .copied()
    }

    #[cfg(test)]
    /// The entry at `position` or, one past a chunk's end, the next
    /// chunk's first: the first entry at or after `position`.
    pub(crate) fn following(&self, position: Position) -> Option<Entry> {
        self.at(position).or_else(|| {
            self.chunks
                .get(position.chunk + 1)
                .and_then(|c| c.first())
                .copied()
        })
    }

    /// Inserts `entry` at `position`, as returned by
    /// [`SortedIndex::locate`]'s `Err`; `values` must hold its value.
    pub(crate) fn insert(&mut self, position: Position, entry: Entry, values: &Level) {
        let value = values.at(to_usize(entry.index));
        self.len += 1;
        if self.chunks.is_empty() {
            self.chunks.push(Arc::new(vec![entry]));
            self.firsts.push(value);
            return;
        }
        let Position { chunk, offset } = position;
        let entries = Arc::make_mut(&mut self.chunks[chunk]);
        entries.insert(offset, entry);
        if offset == 0 {
            self.firsts[chunk] = value;
        }
        if entries.len() > CHUNK_MAX {
            let upper = entries.split_off(entries.len() / 2);
            let first = values.at(to_usize(upper[0].index));
            self.chunks.insert(chunk + 1, Arc::new(upper));
            self.firsts.insert(chunk + 1, first);
        }
    }

    /// Removes the entry at `position` (found by [`SortedIndex::locate`]).
    pub(crate) fn remove(&mut self, position: Position, values: &Level) {
        let Position { chunk, offset } = position;
        let entries = Arc::make_mut(&mut self.chunks[chunk]);
        entries.remove(offset);
        self.len -= 1;
        if entries.is_empty() {
            self.chunks.remove(chunk);
            self.firsts.remove(chunk);
        } else if offset == 0 {
            self.firsts[chunk] = values.at(to_usize(entries[0].index));
        }
    }

    /// Every entry, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = Entry> + '_ {
        self.chunks.iter().flat_map(|c| c.iter().copied())
    }

    /// Merges a batch into the order, chunk by chunk, without changing
    /// anything: `batch[p]` will be leaf `first + p`, `sorted` lists the
    /// batch positions in the order of their values (distinct, none 0).
    /// Each chunk the batch touches is read once, sequentially, instead of
    /// one binary search per value (whose cache misses dominated large
    /// batches). Returns the merged chunks and each batch position's
    /// neighbours in the final order, or the positions of the values the
    /// order already holds with their leaf indices.
    pub(crate) fn merge(
        &self,
        batch: &[Hash],
        sorted: &[usize],
        first: u64,
        values: &Level,
    ) -> Result<Merged, Vec<(usize, u64)>> {
        let mut duplicates = Vec::new();
        let mut replaced: Vec<(usize, Vec<Entry>)> = Vec::new();
        let mut neighbours = vec![(Entry::new(&[0; 32], 0), None); batch.len()];
        let mut at = 0;
        for (chunk, entries) in self.chunks.iter().enumerate() {
            if at == sorted.len() {
                break;
            }
            // The batch values below the next chunk's first value go here
            // (every value is above the guard, the first of chunk 0).
            let end = match self.firsts.get(chunk + 1) {
                Some(next) => at + sorted[at..].partition_point(|&p| batch[p] < *next),
                None => sorted.len(),
            };
            if end == at {
                continue;
            }
            let mut out: Vec<Entry> = Vec::with_capacity(entries.len() + end - at);
            let mut added: Vec<(usize, usize)> = Vec::with_capacity(end - at);
            let mut old = entries.iter().peekable();
            for &p in &sorted[at..end] {
                let x = &batch[p];
                let want = prefix(x);
                while let Some(&&entry) = old.peek() {
                    let order = match entry.prefix.cmp(&want) {
                        Ordering::Equal => values.at(to_usize(entry.index)).cmp(x),
                        other => other,
                    };
                    match order {
                        Ordering::Less => {
                            out.push(entry);
                            old.next();
                        }
                        Ordering::Equal => {
                            duplicates.push((p, entry.index));
                            break;
                        }
                        Ordering::Greater => break,
                    }
                }
                added.push((p, out.len()));
                out.push(Entry {
                    prefix: want,
                    index: first + p as u64,
                });
            }
            out.extend(old.copied());
            let next_first = self.chunks.get(chunk + 1).and_then(|c| c.first()).copied();
            for &(p, k) in added.iter().filter(|_| duplicates.is_empty()) {
                // A touched chunk starts with its old first entry: every
                // value of the batch has its predecessor in the chunk.
                let below = out[k - 1];
                let above = out.get(k + 1).copied().or(next_first);
                neighbours[p] = (below, above);
            }
            replaced.push((chunk, out));
            at = end;
        }
        if !duplicates.is_empty() {
            duplicates.sort_unstable();
            return Err(duplicates);
        }
        Ok(Merged {
            replaced,
            neighbours,
            added: batch.len() as u64,
        })
    }

    /// The batch positions among `sorted` (as for [`SortedIndex::merge`])
    /// whose values the order holds, with their leaf indices: one
    /// sequential walk of the chunks the batch falls in.
    pub(crate) fn present(
        &self,
        batch: &[Hash],
        sorted: &[usize],
        values: &Level,
    ) -> Vec<(usize, u64)> {
        let mut found = Vec::new();
        let mut at = 0;
        for (chunk, entries) in self.chunks.iter().enumerate() {
            if at == sorted.len() {
                break;
            }
            let end = match self.firsts.get(chunk + 1) {
                Some(next) => at + sorted[at..].partition_point(|&p| batch[p] < *next),
                None => sorted.len(),
            };
            let mut k = 0;
            for &p in &sorted[at..end] {
                let x = &batch[p];
                let want = prefix(x);
                while let Some(entry) = entries.get(k) {
                    let order = match entry.prefix.cmp(&want) {
                        Ordering::Equal => values.at(to_usize(entry.index)).cmp(x),
                        other => other,
                    };
                    match order {
                        Ordering::Less => k += 1,
                        Ordering::Equal => {
                            found.push((p, entry.index));
                            break;
                        }
                        Ordering::Greater => break,
                    }
                }
            }
            at = end;
        }
        found.sort_unstable();
        found
    }

    /// The order after a [`SortedIndex::merge`] (whose batch `values` now
    /// holds): untouched chunks shared, merged ones split to at most
    /// [`CHUNK_MAX`] entries.
    pub(crate) fn apply(&self, merged: Merged, values: &Level) -> SortedIndex {
        let mut out = SortedIndex {
            chunks: Vec::with_capacity(self.chunks.len() + merged.replaced.len()),
            firsts: Vec::with_capacity(self.chunks.len() + merged.replaced.len()),
            len: self.len + merged.added,
        };
        let mut replaced = merged.replaced.into_iter().peekable();
        for (chunk, entries) in self.chunks.iter().enumerate() {
            match replaced.next_if(|(c, _)| *c == chunk) {
                None => {
                    out.chunks.push(Arc::clone(entries));
                    out.firsts.push(self.firsts[chunk]);
                }
                Some((_, merged)) => {
                    let pieces = merged.len().div_ceil(CHUNK_MAX * 3 / 4);
                    let size = merged.len().div_ceil(pieces);
                    for piece in merged.chunks(size) {
                        out.firsts.push(values.at(to_usize(piece[0].index)));
                        out.chunks.push(Arc::new(piece.to_vec()));
                    }
                }
            }
        }
        out
    }
}

/// A batch merged into the order, not yet applied.
#[derive(Debug)]
pub(crate) struct Merged {
    /// The touched chunks' new entries, by chunk, in order.
    replaced: Vec<(usize, Vec<Entry>)>,
    /// Per batch position, its predecessor and successor in the final order.
    pub(crate) neighbours: Vec<(Entry, Option<Entry>)>,
    added: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cast::to_usize;

    fn value(n: u64) -> Hash {
        // Equal 8-byte prefixes for neighbours, so ties go to the full value.
        let mut v = [0u8; 32];
        v[..8].copy_from_slice(&(n / 4).to_be_bytes());
        v[24..].copy_from_slice(&n.to_be_bytes());
        v
    }

    /// Random inserts and removals against a sorted `Vec`, across chunk
    /// splits and emptied chunks; a clone taken midway keeps its order.
    #[test]
    fn inserts_and_removals_keep_the_order_of_a_sorted_vec() {
        let mut values = Level::default();
        let mut index = SortedIndex::default();
        let mut model: Vec<(Hash, u64)> = Vec::new();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut snapshot = None;
        for step in 0..6000u64 {
            let v = value(next() % 50_000);
            match index.locate(&v, &values) {
                Ok(position) if step % 3 == 0 => {
                    index.remove(position, &values);
                    model.retain(|(m, _)| *m != v);
                }
                Ok(_) => {}
                Err(position) => {
                    let i = values.len() as u64;
                    values.extend_from_slice(&[v]);
                    // The neighbours `before`/`at` bracket the new value.
                    if let Some(below) = index.before(position) {
                        assert!(values.at(to_usize(below.index())) < v);
                    }
                    if let Some(above) = index.following(position) {
                        assert!(values.at(to_usize(above.index())) > v);
                    }
                    index.insert(position, Entry::new(&v, i), &values);
                    model.push((v, i));
                    model.sort();
                }
            }
            if step == 3000 {
                snapshot = Some((index.clone(), model.clone()));
            }
            if step % 500 == 0 {
                let got: Vec<u64> = index.iter().map(Entry::index).collect();
                let want: Vec<u64> = model.iter().map(|m| m.1).collect();
                assert_eq!(got, want, "step {step}");
                assert_eq!(index.len(), model.len() as u64);
            }
        }
        assert!(index.chunks.len() > 2);
        let (old, old_model) = snapshot.unwrap();
        let got: Vec<u64> = old.iter().map(Entry::index).collect();
        assert_eq!(got, old_model.iter().map(|m| m.1).collect::<Vec<_>>());
        // `after` walks the whole order.
        let first = index.locate(&model[0].0, &values).unwrap();
        let mut at = first;
        let mut walked = vec![index.at(at).unwrap().index()];
        while let Some(e) = index.after(at) {
            walked.push(e.index());
            at = index
                .locate(&values.at(to_usize(e.index())), &values)
                .unwrap();
        }
        assert_eq!(walked, model.iter().map(|m| m.1).collect::<Vec<_>>());
    }
}
