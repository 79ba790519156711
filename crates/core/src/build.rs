//! Hashing a level's parents from its children: the one hot loop of the tree.
//!
//! Complete groups that lie inside one child segment are contiguous, so runs
//! of them go to the multi-lane kernel (`HashKind::hash_groups`) in one call;
//! a group that straddles a segment boundary (only for arities that do not
//! divide 65,536) is gathered into a stack buffer. Large levels are split by parent
//! chunk across threads: each task writes one 4 KiB parent chunk and reads
//! the N child chunks under it, so tasks never share a cache line.

use rayon::prelude::*;

use crate::hash::{Hash, HashKind, MAX_GROUP};
use crate::level::Level;

/// Below this many parents to compute at a level, one thread does it: the
/// fork-join overhead (a few microseconds) would exceed the hashing saved
/// (4,096 parents at N = 4 are ~120 us of single-core BLAKE3). Chosen from
/// that estimate, not tuned by a sweep; tuning it is listed as open work in
/// docs/performance.md.
pub const PARALLEL_MIN_PARENTS: usize = 4096;

/// Recomputes parents `[first, ceil(children.len() / n))` of `parents`,
/// resizing it to that length.
pub(crate) fn rehash_level(
    hash: HashKind,
    n: usize,
    children: &Level,
    parents: &mut Level,
    first: usize,
) {
    let len = children.len().div_ceil(n);
    parents.resize(len);
    if first >= len {
        return;
    }
    let mut pieces = parents.pieces_mut(first);
    let fill = |(start, piece): &mut (usize, &mut [Hash])| {
        fill_parents(hash, n, children, *start, piece);
    };
    if len - first >= PARALLEL_MIN_PARENTS && rayon::current_num_threads() > 1 {
        pieces.par_iter_mut().for_each(fill);
    } else {
        pieces.iter_mut().for_each(fill);
    }
}

/// Writes parents `[first, first + out.len())` into `out`.
pub(crate) fn fill_parents(
    hash: HashKind,
    n: usize,
    children: &Level,
    first: usize,
    out: &mut [Hash],
) {
    let children_len = children.len();
    let end = first + out.len();
    let full_end = end.min(children_len / n);
    let mut parent = first;
    while parent < full_end {
        let child = parent * n;
        // Groups are contiguous up to the end of the child's segment (2 MiB),
        // so one kernel call takes every complete group this task needs,
        // keeping all SIMD lanes busy even at N = 16.
        let run = children.run_from(child);
        let fit = run.len() / n;
        let slot = parent - first;
        if fit == 0 {
            let mut group = [[0u8; 32]; MAX_GROUP];
            children.copy_to(child, &mut group[..n]);
            out[slot] = hash.hash_children(&group[..n]);
            parent += 1;
        } else {
            let count = fit.min(full_end - parent);
            hash.hash_groups(&run[..count * n], n, &mut out[slot..slot + count]);
            parent += count;
        }
    }
    if parent < end {
        // The last, partial group: lifted if alone, else hashed over its members.
        debug_assert_eq!(parent + 1, end);
        let child = parent * n;
        let members = children_len - child;
        debug_assert!((1..n).contains(&members));
        out[parent - first] = if members == 1 {
            children.at(child)
        } else {
            let mut group = [[0u8; 32]; MAX_GROUP];
            children.copy_to(child, &mut group[..members]);
            hash.hash_children(&group[..members])
        };
    }
}
