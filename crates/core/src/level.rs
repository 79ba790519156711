//! One level of the tree as a run of page-sized chunks.
//!
//! A chunk holds 128 nodes (4 KiB, one page), so a node's address is a shift
//! and a mask, a cold chunk can later be served from one page of a mapped
//! file, and growing a level never moves what is already there (no `Vec`
//! doubling copies of a 32 MiB level).

use crate::hash::Hash;

/// Nodes per chunk: 4 KiB, one page.
pub const CHUNK_LEN: usize = 128;
/// Nodes per segment: 512 chunks, 2 MiB (one transparent huge page), one allocation.
pub const SEGMENT_LEN: usize = 512 * CHUNK_LEN;
/// A new segment that will hold at least this many nodes (256 KiB) is a
/// pooled whole segment rather than a heap vector: a fresh heap allocation
/// that large is itself a new mapping, faulted in page by page.
const WHOLE_SEGMENT_FROM: usize = SEGMENT_LEN / 8;
const SEGMENT_SHIFT: u32 = SEGMENT_LEN.trailing_zeros();
const SEGMENT_MASK: usize = SEGMENT_LEN - 1;

/// A level: `len` nodes in segments of [`SEGMENT_LEN`], each a vector whose
/// length is the number of its slots in use; every segment but the last is
/// full.
///
/// Why segments of chunks: on this workload's machines a 4 KiB page fault
/// costs ~3 us, so copying a million leaves (8,192 pages) into fresh memory
/// took 24-30 ms, against ~7 ms into huge-page segments (both printed by
/// `cargo run --release -p cairn-bench --example profile_build`). A whole segment is therefore an anonymous
/// mapping advised to use one 2 MiB transparent huge page: one fault per
/// segment. The last, growing segment of a small level stays on the heap,
/// so small trees make no system calls. A chunk stays the unit of
/// addressing, of parallel work and, later, of tiering to mapped files.
#[derive(Debug, Default)]
pub struct Level {
    segments: Vec<Segment>,
    len: usize,
}

/// The storage of one segment.
#[derive(Debug)]
enum Segment {
    /// A heap vector: the growing last segment of a level.
    Heap(Vec<Hash>),
    /// A whole-segment anonymous mapping; `len` slots in use.
    Mapped { map: memmap2::MmapMut, len: usize },
}

impl Segment {
    /// A fresh whole segment: a huge-page mapping when the system gives one,
    /// else a zeroed heap vector of full capacity.
    fn whole() -> Segment {
        if let Some(map) = POOL
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .pop()
        {
            return Segment::Mapped { map, len: 0 };
        }
        match memmap2::MmapMut::map_anon(SEGMENT_LEN * 32) {
            Ok(map) => {
                // Only a hint: without transparent huge pages it is 4 KiB pages.
                #[cfg(target_os = "linux")]
                let _ = map.advise(memmap2::Advice::HugePage);
                Segment::Mapped { map, len: 0 }
            }
            Err(_) => Segment::Heap(Vec::with_capacity(SEGMENT_LEN)),
        }
    }

    #[inline]
    fn as_slice(&self) -> &[Hash] {
        match self {
            Segment::Heap(nodes) => nodes,
            Segment::Mapped { map, len } => &map.as_chunks::<32>().0[..*len],
        }
    }

    #[inline]
    fn as_mut_slice(&mut self) -> &mut [Hash] {
        match self {
            Segment::Heap(nodes) => nodes,
            Segment::Mapped { map, len } => &mut map.as_chunks_mut::<32>().0[..*len],
        }
    }

    #[inline]
    fn len(&self) -> usize {
        match self {
            Segment::Heap(nodes) => nodes.len(),
            Segment::Mapped { len, .. } => *len,
        }
    }

    /// Adds `extra` slots (zeros or stale values until written).
    fn grow(&mut self, extra: usize) {
        debug_assert!(self.len() + extra <= SEGMENT_LEN);
        match self {
            Segment::Heap(nodes) => {
                let want = nodes.len() + extra;
                if want > nodes.capacity() {
                    let capacity = want.max(2 * nodes.capacity()).min(SEGMENT_LEN);
                    nodes.reserve_exact(capacity - nodes.len());
                }
                nodes.resize(want, [0; 32]);
            }
            Segment::Mapped { len, .. } => *len += extra,
        }
    }

    /// Appends `values`, which must fit.
    fn extend(&mut self, values: &[Hash]) {
        match self {
            Segment::Heap(nodes) if nodes.capacity() - nodes.len() >= values.len() => {
                nodes.extend_from_slice(values);
            }
            _ => {
                let at = self.len();
                self.grow(values.len());
                self.as_mut_slice()[at..].copy_from_slice(values);
            }
        }
    }

    fn truncate(&mut self, new_len: usize) {
        match self {
            Segment::Heap(nodes) => nodes.truncate(new_len),
            Segment::Mapped { len, .. } => *len = (*len).min(new_len),
        }
    }
}

/// Whole segments freed by dropped levels, kept for reuse (up to
/// [`POOL_SEGMENTS`]) so that a process that builds and drops trees does not
/// fault the same memory in again and again.
static POOL: std::sync::Mutex<Vec<memmap2::MmapMut>> = std::sync::Mutex::new(Vec::new());
/// At most 64 segments (128 MiB) are kept.
const POOL_SEGMENTS: usize = 64;

impl Drop for Segment {
    fn drop(&mut self) {
        if let Segment::Mapped { map, .. } = self {
            let mut pool = POOL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if pool.len() < POOL_SEGMENTS {
                // A stand-in for the moved-out mapping: an empty anonymous map
                // costs nothing to create or drop.
                if let Ok(empty) = memmap2::MmapMut::map_anon(0) {
                    pool.push(std::mem::replace(map, empty));
                }
            }
        }
    }
}

impl Clone for Segment {
    fn clone(&self) -> Segment {
        let mut copy = Segment::whole();
        copy.extend(self.as_slice());
        copy
    }
}

impl Clone for Level {
    fn clone(&self) -> Level {
        Level {
            segments: self.segments.clone(),
            len: self.len,
        }
    }
}

impl Level {
    /// Number of nodes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the level has no node.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The node at `index`, if present.
    #[inline]
    pub fn get(&self, index: usize) -> Option<&Hash> {
        self.segments
            .get(index >> SEGMENT_SHIFT)?
            .as_slice()
            .get(index & SEGMENT_MASK)
    }

    /// The node at `index`. Panics if absent (callers derive indices from the shape).
    #[inline]
    pub fn at(&self, index: usize) -> Hash {
        match self.get(index) {
            Some(node) => *node,
            None => panic!("node {index} is beyond the level's {} nodes", self.len),
        }
    }

    /// The last node.
    #[inline]
    pub fn last(&self) -> Option<Hash> {
        self.len.checked_sub(1).map(|i| self.at(i))
    }

    /// Sets the length to `len`. New slots hold unspecified values (zeros,
    /// or what a shrink left behind) until written; the caller writes every
    /// slot below `len` that it exposes.
    pub fn resize(&mut self, len: usize) {
        if len <= self.len {
            let segments = len.div_ceil(SEGMENT_LEN);
            self.segments.truncate(segments);
            if let Some(last) = self.segments.last_mut() {
                last.truncate(len - (segments - 1) * SEGMENT_LEN);
            }
        } else {
            let mut missing = len - self.len;
            while missing > 0 {
                match self.segments.last_mut() {
                    Some(last) if last.len() < SEGMENT_LEN => {
                        let take = missing.min(SEGMENT_LEN - last.len());
                        last.grow(take);
                        missing -= take;
                    }
                    _ if missing >= WHOLE_SEGMENT_FROM => self.segments.push(Segment::whole()),
                    _ => self.segments.push(Segment::Heap(Vec::new())),
                }
            }
        }
        self.len = len;
    }

    /// Appends `values` (a memory copy, segment by segment).
    pub fn extend_from_slice(&mut self, mut values: &[Hash]) {
        self.len += values.len();
        while !values.is_empty() {
            match self.segments.last_mut() {
                Some(last) if last.len() < SEGMENT_LEN => {
                    let take = values.len().min(SEGMENT_LEN - last.len());
                    last.extend(&values[..take]);
                    values = &values[take..];
                }
                _ if values.len() >= WHOLE_SEGMENT_FROM => self.segments.push(Segment::whole()),
                _ => self
                    .segments
                    .push(Segment::Heap(Vec::with_capacity(values.len()))),
            }
        }
    }

    /// Copies nodes `[start, start + out.len())` into `out`.
    #[inline]
    pub fn copy_to(&self, start: usize, out: &mut [Hash]) {
        let mut at = start;
        let mut done = 0;
        while done < out.len() {
            let segment = self.segments[at >> SEGMENT_SHIFT].as_slice();
            let offset = at & SEGMENT_MASK;
            let take = (segment.len() - offset).min(out.len() - done);
            out[done..done + take].copy_from_slice(&segment[offset..offset + take]);
            done += take;
            at += take;
        }
    }

    /// Hints the CPU to start loading node `index` (a proof gathers one
    /// group per level: issuing every level's load first lets the misses
    /// overlap instead of queueing).
    #[inline]
    #[allow(unsafe_code)]
    pub fn prefetch(&self, index: usize) {
        #[cfg(target_arch = "x86_64")]
        if let Some(node) = self.get(index) {
            use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
            // SAFETY: `_mm_prefetch` needs SSE, which every x86_64 CPU has
            // (it is in the target's baseline features). A prefetch is only a
            // hint: it never faults and reads nothing into the program; the
            // pointer is to a live node of this level anyway.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(node.as_ptr().cast()) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = index;
    }

    /// The nodes from `index` to the end of its segment: the longest
    /// contiguous run starting there.
    #[inline]
    pub fn run_from(&self, index: usize) -> &[Hash] {
        &self.segments[index >> SEGMENT_SHIFT].as_slice()[index & SEGMENT_MASK..]
    }

    /// The used parts of chunks `first..`, mutable, for writers that fill
    /// disjoint chunks in parallel.
    pub fn chunks_mut(&mut self, first: usize) -> Vec<&mut [Hash]> {
        self.segments
            .iter_mut()
            .flat_map(|segment| segment.as_mut_slice().chunks_mut(CHUNK_LEN))
            .skip(first)
            .collect()
    }

    /// Every node, in order (for tests and exports).
    pub fn iter(&self) -> impl Iterator<Item = &Hash> {
        self.segments.iter().flat_map(Segment::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(i: usize) -> Hash {
        let mut v = [0u8; 32];
        v[..8].copy_from_slice(&(i as u64).to_le_bytes());
        v
    }

    #[test]
    fn extends_across_chunks_and_reads_back() {
        let mut level = Level::default();
        let values: Vec<Hash> = (0..1000).map(value).collect();
        level.extend_from_slice(&values[..5]);
        level.extend_from_slice(&values[5..300]);
        level.extend_from_slice(&values[300..]);
        assert_eq!(level.len(), 1000);
        for (i, v) in values.iter().enumerate() {
            assert_eq!(level.get(i), Some(v));
        }
        assert_eq!(level.get(1000), None);
        // Prefetching is only a hint: any index, present or not, changes nothing.
        for i in [0, 1, 127, 128, 999, 1000, usize::MAX] {
            level.prefetch(i);
        }
        assert_eq!(level.iter().copied().collect::<Vec<_>>(), values);
        assert_eq!(level.iter().copied().collect::<Vec<_>>(), values);
        let mut out = vec![[0u8; 32]; 300];
        level.copy_to(100, &mut out);
        assert_eq!(out, values[100..400]);
        assert_eq!(
            level
                .chunks_mut(7)
                .iter()
                .map(|c| c.len())
                .collect::<Vec<_>>(),
            vec![104]
        );
        level.resize(129);
        assert_eq!(level.last(), Some(values[128]));
        level.resize(0);
        assert!(level.is_empty());
        // Across segments: a batch larger than one segment, then a resize.
        let many: Vec<Hash> = (0..SEGMENT_LEN * 2 + 7).map(value).collect();
        level.extend_from_slice(&many[..3]);
        level.extend_from_slice(&many[3..]);
        assert_eq!(level.iter().copied().collect::<Vec<_>>(), many);
        assert_eq!(level.at(SEGMENT_LEN + 1), many[SEGMENT_LEN + 1]);
        level.resize(SEGMENT_LEN * 3 + 1);
        assert_eq!(level.get(SEGMENT_LEN * 3), Some(&[0; 32]));
        level.resize(SEGMENT_LEN - 1);
        assert_eq!(level.last(), Some(many[SEGMENT_LEN - 2]));
        level.resize(SEGMENT_LEN * 2);
        assert_eq!(level.len(), SEGMENT_LEN * 2);
    }
}
