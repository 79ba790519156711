//! One level of the tree as a run of page-sized chunks.
//!
//! A chunk holds 128 nodes (4 KiB, one page), so a node's address is a shift
//! and a mask, a cold chunk can later be served from one page of a mapped
//! file, and growing a level never moves what is already there (no `Vec`
//! doubling copies of a 32 MiB level).

use crate::hash::Hash;

/// Nodes per chunk.
pub const CHUNK_LEN: usize = 128;
const CHUNK_SHIFT: u32 = CHUNK_LEN.trailing_zeros();
const CHUNK_MASK: usize = CHUNK_LEN - 1;

/// 128 nodes; 4 KiB.
pub type Chunk = [Hash; CHUNK_LEN];

fn new_chunk() -> Box<Chunk> {
    // Built on the heap: a 4 KiB array through the stack would be copied.
    vec![[0u8; 32]; CHUNK_LEN]
        .into_boxed_slice()
        .try_into()
        .unwrap_or_else(|_| unreachable!("the vector has CHUNK_LEN elements"))
}

/// A level: `len` nodes in `ceil(len / 128)` chunks; slots past `len` in the
/// last chunk are unspecified and never read.
#[derive(Clone, Debug, Default)]
pub struct Level {
    chunks: Vec<Box<Chunk>>,
    len: usize,
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
        if index < self.len {
            Some(&self.chunks[index >> CHUNK_SHIFT][index & CHUNK_MASK])
        } else {
            None
        }
    }

    /// The node at `index`. Panics if absent (callers derive indices from the shape).
    #[inline]
    pub fn at(&self, index: usize) -> Hash {
        assert!(
            index < self.len,
            "node {index} is beyond the level's {} nodes",
            self.len
        );
        self.chunks[index >> CHUNK_SHIFT][index & CHUNK_MASK]
    }

    /// The last node.
    #[inline]
    pub fn last(&self) -> Option<Hash> {
        self.len.checked_sub(1).map(|i| self.at(i))
    }

    /// Sets the length to `len`, allocating chunks as needed. New slots hold
    /// zeros until written; the caller writes every slot below `len` that it
    /// exposes.
    pub fn resize(&mut self, len: usize) {
        let chunks = len.div_ceil(CHUNK_LEN);
        if chunks > self.chunks.len() {
            self.chunks.reserve_exact(chunks - self.chunks.len());
            while self.chunks.len() < chunks {
                self.chunks.push(new_chunk());
            }
        } else {
            self.chunks.truncate(chunks);
        }
        self.len = len;
    }

    /// Appends `values` (a memory copy, chunk by chunk).
    pub fn extend_from_slice(&mut self, mut values: &[Hash]) {
        let mut at = self.len;
        self.resize(self.len + values.len());
        while !values.is_empty() {
            let offset = at & CHUNK_MASK;
            let take = (CHUNK_LEN - offset).min(values.len());
            self.chunks[at >> CHUNK_SHIFT][offset..offset + take].copy_from_slice(&values[..take]);
            values = &values[take..];
            at += take;
        }
    }

    /// Copies nodes `[start, start + out.len())` into `out`.
    pub fn copy_to(&self, start: usize, out: &mut [Hash]) {
        assert!(start + out.len() <= self.len, "range ends past the level");
        let mut at = start;
        let mut done = 0;
        while done < out.len() {
            let offset = at & CHUNK_MASK;
            let take = (CHUNK_LEN - offset).min(out.len() - done);
            out[done..done + take]
                .copy_from_slice(&self.chunks[at >> CHUNK_SHIFT][offset..offset + take]);
            done += take;
            at += take;
        }
    }

    /// The nodes `[start, end)` as contiguous slices, chunk by chunk.
    pub fn slices(&self, start: usize, end: usize) -> impl Iterator<Item = &[Hash]> {
        assert!(
            start <= end && end <= self.len,
            "range {start}..{end} is outside the level"
        );
        let mut at = start;
        std::iter::from_fn(move || {
            if at >= end {
                return None;
            }
            let offset = at & CHUNK_MASK;
            let take = (CHUNK_LEN - offset).min(end - at);
            let slice = &self.chunks[at >> CHUNK_SHIFT][offset..offset + take];
            at += take;
            Some(slice)
        })
    }

    /// Chunk `index`, whole (slots past `len` unspecified).
    #[inline]
    pub fn chunk(&self, index: usize) -> &Chunk {
        &self.chunks[index]
    }

    /// The chunks, mutable, for writers that fill disjoint chunks in parallel.
    #[inline]
    pub fn chunks_mut(&mut self) -> &mut [Box<Chunk>] {
        &mut self.chunks
    }

    /// Every node, in order (for tests and exports).
    pub fn iter(&self) -> impl Iterator<Item = &Hash> {
        self.slices(0, self.len).flatten()
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
        assert_eq!(level.iter().copied().collect::<Vec<_>>(), values);
        let mut out = vec![[0u8; 32]; 300];
        level.copy_to(100, &mut out);
        assert_eq!(out, values[100..400]);
        let slices: Vec<usize> = level.slices(100, 400).map(<[Hash]>::len).collect();
        assert_eq!(slices, vec![28, 128, 128, 16]);
        level.resize(129);
        assert_eq!(level.last(), Some(values[128]));
        level.resize(0);
        assert!(level.is_empty());
    }
}
