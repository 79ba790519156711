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

/// Every level of the fixed-depth tree of `depth` over `leaves`, built from
/// its definition as a full tree: the leaves are padded with `zero` to N^depth
/// and every level is the hash of every run of N nodes below, up to the one
/// root at level `depth`. No zero hashes are computed on their own (a
/// subtree of absent leaves hashes to `zeros[k]` by construction), so this
/// checks the fast tree's `zeros[k]` shortcut rather than sharing it.
///
/// # Panics
/// If the full tree would hold more than 2^20 leaves (this is for small trees)
/// or there are more leaves than it holds.
pub fn fixed_levels(
    arity: Arity,
    hash: HashKind,
    depth: u32,
    zero: Hash,
    leaves: &[Hash],
) -> Vec<Vec<Hash>> {
    let capacity = arity
        .get()
        .checked_pow(depth)
        .filter(|&c| c <= 1 << 20)
        .expect("a small fixed-depth tree");
    assert!(leaves.len() <= capacity, "more leaves than N^depth");
    let mut level = leaves.to_vec();
    level.resize(capacity, zero);
    let mut out = vec![level];
    while out.len() <= depth as usize {
        let parents = out[out.len() - 1]
            .chunks(arity.get())
            .map(|group| hash.hash_children(group))
            .collect();
        out.push(parents);
    }
    out
}

/// The root of the fixed-depth tree of `depth` over `leaves` (also of no
/// leaves: the root of the all-zero tree), level by level from the other
/// form of the definition: `zeros[0] = zero`, `zeros[k + 1]` the hash of N
/// copies of `zeros[k]`, and each node of level k + 1 the hash of its N
/// children with the absent ones replaced by `zeros[k]`. Any size (the
/// full tree of [`fixed_levels`] is for small ones; tests check the two
/// agree).
pub fn fixed_root(arity: Arity, hash: HashKind, depth: u32, zero: Hash, leaves: &[Hash]) -> Hash {
    let n = arity.get();
    let mut level = leaves.to_vec();
    let mut zero_k = zero;
    for _ in 0..depth {
        if level.is_empty() {
            level.push(zero_k);
        }
        level = level
            .chunks(n)
            .map(|members| {
                let mut group = members.to_vec();
                group.resize(n, zero_k);
                hash.hash_children(&group)
            })
            .collect();
        zero_k = hash.hash_children(&vec![zero_k; n]);
    }
    assert_eq!(level.len(), 1, "more leaves than N^depth");
    level[0]
}

/// Per level of the fixed-depth tree, the path node's position and the
/// N - 1 other members of its group in the full tree (absent ones are the
/// padding): what zk-kit's `createProof` returns.
pub fn fixed_membership_siblings(
    arity: Arity,
    hash: HashKind,
    depth: u32,
    zero: Hash,
    leaves: &[Hash],
    index: usize,
) -> Vec<(usize, Vec<Hash>)> {
    let levels = fixed_levels(arity, hash, depth, zero, leaves);
    let n = arity.get();
    let mut position = index;
    levels[..depth as usize]
        .iter()
        .map(|level| {
            let start = position - position % n;
            let siblings = (start..start + n)
                .filter(|&i| i != position)
                .map(|i| level[i])
                .collect();
            let at = position - start;
            position /= n;
            (at, siblings)
        })
        .collect()
}
