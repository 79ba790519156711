//! The reference model: the tree spec transcribed as plainly as possible,
//! recursive and slow on purpose. Fast code is tested against this, never the
//! other way round.

use cairn_core::{Arity, Hash, HashKind};

/// The levels of the tree over `leaves`, bottom (the leaves) to top (the
/// root), built straight from the definition: level k+1 groups level k into
/// runs of N, lifts a run of one, hashes a run of two or more.
pub fn levels(arity: Arity, hash: HashKind, leaves: &[Hash]) -> Vec<Vec<Hash>> {
    fn build(arity: Arity, hash: HashKind, level: Vec<Hash>, out: &mut Vec<Vec<Hash>>) {
        let done = level.len() <= 1;
        out.push(level);
        if done {
            return;
        }
        let parents = out
            .last()
            .map(|level| {
                level
                    .chunks(arity.get())
                    .map(|group| {
                        if group.len() == 1 {
                            group[0]
                        } else {
                            hash.hash_children(group)
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        build(arity, hash, parents, out);
    }
    let mut out = Vec::new();
    build(arity, hash, leaves.to_vec(), &mut out);
    out
}

/// The root over `leaves`; `None` for no leaves.
pub fn root(arity: Arity, hash: HashKind, leaves: &[Hash]) -> Option<Hash> {
    levels(arity, hash, leaves)
        .last()
        .and_then(|top| top.first().copied())
}

/// The root of the subtree at (`level`, `index`) computed from the leaves it
/// covers alone: leaves [index * N^level, min((index + 1) * N^level, len)).
/// Equal to the node at that position, which the spec implies; used to check
/// the historical-view reasoning independently.
pub fn subtree_root(
    arity: Arity,
    hash: HashKind,
    leaves: &[Hash],
    level: u32,
    index: usize,
) -> Option<Hash> {
    let span = arity.get().checked_pow(level)?;
    let start = index.checked_mul(span)?;
    let end = start.saturating_add(span).min(leaves.len());
    if start >= end {
        return None;
    }
    root(arity, hash, &leaves[start..end])
}

/// The siblings a membership proof of leaf `index` must carry, per hashing
/// level, read off the reference levels.
pub fn membership_siblings(
    arity: Arity,
    hash: HashKind,
    leaves: &[Hash],
    index: usize,
) -> Vec<Vec<Hash>> {
    let levels = levels(arity, hash, leaves);
    let mut out = Vec::new();
    let mut position = index;
    for level in &levels[..levels.len().saturating_sub(1)] {
        let start = position - position % arity.get();
        let end = (start + arity.get()).min(level.len());
        if end - start > 1 {
            out.push(
                (start..end)
                    .filter(|&i| i != position)
                    .map(|i| level[i])
                    .collect(),
            );
        }
        position /= arity.get();
    }
    out
}
