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
use crate::kind::group_parent;
use crate::level::Level;

/// Below this many parents to compute at a level, one thread does it: the
/// fork-join overhead (a few microseconds) would exceed the hashing saved
/// (4,096 parents at N = 4 are ~120 us of single-core BLAKE3). Chosen from
/// that estimate; a sweep of 1,024 to 16,384 (builds of 10,000 to 300,000
/// leaves, N = 2, 4, 16) found no setting better by more than the run-to-run
/// spread on the 2-core machine (see docs/performance.md).
pub const PARALLEL_MIN_PARENTS: usize = 4096;

/// Recomputes parents `[first, ceil(children.len() / n))` of `parents`,
/// resizing it to that length. `pad` is the children's level's zero in a
/// fixed-depth tree, `None` in a Lean tree (see `kind::group_parent`).
pub(crate) fn rehash_level(
    hash: HashKind,
    n: usize,
    pad: Option<&Hash>,
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
    let fill = |(start, piece): &mut Piece<'_>| {
        fill_parents(hash, n, pad, children, *start, piece);
    };
    let threads = rayon::current_num_threads();
    if hash.is_field_hash() && len - first >= 2 && threads > 1 {
        // One field hash (Poseidon, MiMCSponge) costs microseconds
        // (`poseidon_peer`: 1.2 us a Poseidon hash of two inputs in IFMA
        // lanes, 7.7 us one at a time), more than splitting work across
        // threads, so every level of two or more
        // parents is shared, one kernel pass per piece: one parent, or the
        // 8 of a Poseidon lane pass (a 128-parent chunk would leave the top
        // levels of a tree on one core: a third of a 2^12-leaf N = 16 build).
        let grain = hash.field_hash_grain();
        let mut passes: Vec<Piece<'_>> = pieces
            .iter_mut()
            .flat_map(|(start, piece)| {
                let start = *start;
                piece
                    .chunks_mut(grain)
                    .enumerate()
                    .map(move |(offset, run)| (start + offset * grain, run))
            })
            .collect();
        passes.par_iter_mut().for_each(fill);
    } else if len - first >= PARALLEL_MIN_PARENTS && threads > 1 {
        pieces.par_iter_mut().for_each(fill);
    } else {
        pieces.iter_mut().for_each(fill);
    }
}

/// A run of a level's nodes to write, tagged with the index of its first.
type Piece<'a> = (usize, &'a mut [Hash]);

/// Fills the empty leaf level with `leaves` and the empty level above with
/// their parents, one parent chunk per task: a task copies the N leaf chunks
/// under its 128 parents (at most 64 KiB) and hashes those parents from the
/// input it has just read, still in cache. The leaves cross the memory bus
/// once, where a copy followed by a commit reads them twice; at 2^20 leaves
/// that second read of 32 MiB from memory was a third of the build.
pub(crate) fn fill_leaves_and_parents(
    hash: HashKind,
    n: usize,
    pad: Option<&Hash>,
    leaves: &[Hash],
    leaf_level: &mut Level,
    parents: &mut Level,
) {
    assert!(
        leaf_level.is_empty() && parents.is_empty(),
        "only a fresh tree is filled this way"
    );
    leaf_level.resize(leaves.len());
    parents.resize(leaves.len().div_ceil(n));
    let parent_count = parents.len();
    let mut leaf_pieces = leaf_level.pieces_mut(0);
    let mut parent_pieces = parents.pieces_mut(0);
    // Both levels are cut at chunk boundaries from node 0, so parent chunk
    // i sits over leaf chunks [i * n, (i + 1) * n).
    debug_assert_eq!(parent_pieces.len(), leaf_pieces.len().div_ceil(n));
    let task = |((first, out), below): (&mut Piece<'_>, &mut [Piece<'_>])| {
        for (at, piece) in below.iter_mut() {
            piece.copy_from_slice(&leaves[*at..*at + piece.len()]);
        }
        parents_of_slice(hash, n, pad, leaves, *first, out);
    };
    if parent_count >= PARALLEL_MIN_PARENTS && rayon::current_num_threads() > 1 {
        parent_pieces
            .par_iter_mut()
            .zip(leaf_pieces.par_chunks_mut(n))
            .for_each(task);
    } else {
        parent_pieces
            .iter_mut()
            .zip(leaf_pieces.chunks_mut(n))
            .for_each(task);
    }
}

/// Writes parents `[first, first + out.len())` of the contiguous `children`
/// into `out`.
fn parents_of_slice(
    hash: HashKind,
    n: usize,
    pad: Option<&Hash>,
    children: &[Hash],
    first: usize,
    out: &mut [Hash],
) {
    let end = first + out.len();
    let full_end = end.min(children.len() / n);
    if first < full_end {
        hash.hash_groups(
            &children[first * n..full_end * n],
            n,
            &mut out[..full_end - first],
        );
    }
    if full_end < end {
        debug_assert_eq!(full_end + 1, end);
        out[full_end - first] = group_parent(hash, n, pad, &children[full_end * n..]);
    }
}

/// Writes parents `[first, first + out.len())` into `out`.
pub(crate) fn fill_parents(
    hash: HashKind,
    n: usize,
    pad: Option<&Hash>,
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
        // The last, partial group: the one rule the kinds differ in.
        debug_assert_eq!(parent + 1, end);
        let child = parent * n;
        let members = children_len - child;
        debug_assert!((1..n).contains(&members));
        let mut group = [[0u8; 32]; MAX_GROUP];
        children.copy_to(child, &mut group[..members]);
        out[parent - first] = group_parent(hash, n, pad, &group[..members]);
    }
}
