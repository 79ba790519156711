//! Overwriting nodes below a level's right edge: only the indexed tree
//! does it (an insertion rewrites its predecessor's leaf and that leaf's
//! path), never the append-only LeanIMT.
//!
//! Invariant kept: memory a snapshot reads never changes. A node below the
//! frozen watermark is written in place only when its segment is held by
//! this level alone (`Arc::get_mut` proves no snapshot shares it) and is
//! the level's own memory; otherwise the segment is first copied, the
//! writer moves to the copy, and the sharers keep the old memory. So a
//! snapshot costs nothing until the writer touches a shared segment, and
//! then one segment copy (at most 2 MiB) per segment touched.

use std::sync::Arc;

use super::WHOLE_SEGMENT_FROM;
use super::{Level, MIN_HEAP_NODES, Memory, SEGMENT_LEN, SEGMENT_MASK, SEGMENT_SHIFT};
use crate::hash::Hash;

impl Level {
    /// Overwrites node `index` with `value`. A segment shared with a
    /// snapshot (or served from a [`super::NodeSource`]) is copied first,
    /// so what the snapshot reads never changes.
    ///
    /// # Panics
    /// If `index` is not below the level's length.
    pub fn set(&mut self, index: usize, value: Hash) {
        assert!(
            index < self.len,
            "setting node {index} of a level of {} nodes",
            self.len
        );
        let segment = index >> SEGMENT_SHIFT;
        if index < self.frozen && !self.owns(segment) {
            self.make_private(segment);
        }
        let offset = index & SEGMENT_MASK;
        // SAFETY: `&mut self` makes us the level's only writer. Either the
        // node is at or above the frozen watermark (no snapshot reads it,
        // as for every append), or `owns` holds after `make_private`: the
        // segment's `Arc` has no other holder, so no reader anywhere can
        // reach its memory; `offset + 1 <= used <= capacity`.
        #[allow(unsafe_code)]
        let slot = unsafe { self.segments[segment].slice_mut(offset, offset + 1) };
        slot[0] = value;
    }

    /// Whether segment `index` is this level's own memory and shared with
    /// no one (a spliced segment never is: its first runs are read-only).
    pub(super) fn owns(&mut self, index: usize) -> bool {
        match Arc::get_mut(&mut self.segments[index]) {
            Some(segment) => matches!(segment.memory, Memory::Owned { .. }),
            None => false,
        }
    }

    /// Replaces segment `index` by a private copy of its used nodes.
    fn make_private(&mut self, index: usize) {
        let used = self.used(index);
        let old = &self.segments[index];
        // A whole segment holds SEGMENT_LEN, a heap copy the old capacity:
        // `used` fits either way.
        let capacity = if old.capacity() >= WHOLE_SEGMENT_FROM || used >= WHOLE_SEGMENT_FROM {
            SEGMENT_LEN
        } else {
            old.capacity().clamp(MIN_HEAP_NODES, SEGMENT_LEN)
        };
        let fresh = old.copied(used, capacity);
        self.segments[index] = Arc::new(fresh);
    }

    /// Segments of this level that no one else holds, of its segment
    /// count (for tests of the copy-on-write accounting).
    pub fn private_segments(&mut self) -> (usize, usize) {
        let count = self.segments.len();
        let private = (0..count).filter(|&i| self.owns(i)).count();
        (private, count)
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
    fn set_below_a_shared_prefix_copies_the_segment_and_leaves_the_share_unchanged() {
        let values: Vec<Hash> = (0..SEGMENT_LEN * 2 + 300).map(value).collect();
        let mut level = Level::default();
        level.extend_from_slice(&values);
        let shared = level.share(level.len());
        assert_eq!(level.private_segments(), (0, 3));
        level.set(5, [0xaa; 32]);
        level.set(SEGMENT_LEN * 2 + 7, [0xbb; 32]);
        // Only the two touched segments were copied.
        assert_eq!(level.private_segments(), (2, 3));
        assert!(shared.iter().eq(values.iter()));
        assert_eq!(level.at(5), [0xaa; 32]);
        assert_eq!(level.at(SEGMENT_LEN * 2 + 7), [0xbb; 32]);
        for i in [0, 4, 6, SEGMENT_LEN, SEGMENT_LEN * 2 + 299] {
            assert_eq!(level.at(i), values[i], "node {i}");
        }
        // Once the share is gone, writes land in place.
        drop(shared);
        assert_eq!(level.private_segments(), (3, 3));
        level.set(SEGMENT_LEN + 1, [0xcc; 32]);
        assert_eq!(level.at(SEGMENT_LEN + 1), [0xcc; 32]);
    }

    #[test]
    fn set_in_a_small_heap_segment_and_then_growth_keep_every_node() {
        let mut level = Level::default();
        level.extend_from_slice(&[value(0), value(1), value(2)]);
        let shared = level.share(3);
        level.set(1, [9; 32]);
        level.extend_from_slice(&(3..5000).map(value).collect::<Vec<_>>());
        assert_eq!(level.at(1), [9; 32]);
        assert_eq!(level.at(4999), value(4999));
        assert!(shared.iter().eq([value(0), value(1), value(2)].iter()));
    }

    #[test]
    fn set_on_a_tiered_segment_moves_to_memory() {
        #[derive(Debug)]
        struct Held(Vec<Hash>);
        impl crate::level::NodeSource for Held {
            fn nodes(&self) -> &[Hash] {
                &self.0
            }
        }
        let values: Vec<Hash> = (0..SEGMENT_LEN + 3).map(value).collect();
        let mut level = Level::default();
        level.extend_from_slice(&values);
        let _ = level.share(SEGMENT_LEN);
        let source = Arc::new(Held(values[..SEGMENT_LEN].to_vec()));
        level.tier(0, source.clone()).unwrap();
        level.set(10, [7; 32]);
        assert!(!level.is_tiered(0));
        assert_eq!(level.at(10), [7; 32]);
        assert_eq!(source.0[10], value(10));
    }

    #[test]
    #[should_panic(expected = "setting node 3")]
    fn set_past_the_end_panics() {
        let mut level = Level::default();
        level.extend_from_slice(&[value(0), value(1), value(2)]);
        level.set(3, [0; 32]);
    }
}
