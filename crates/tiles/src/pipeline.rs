//! The chunk loop of a verifying mirror ([`catch_up`](crate::catch_up)):
//! leaves fetched, verified and adopted in order, with the verification of
//! the next chunks running on other threads while the current one is
//! adopted.
//!
//! Two ways to verify a chunk `[a, e)`:
//!
//! - **By its node** (the fast path). When the chunk size `c` is a power
//!   of `N` (`c = N^j`, a bundle by default) and upstream's objects give
//!   nodes (a tile store), the mirror first takes the nodes of level `j`
//!   from upstream, once per [`catch_up`](crate::catch_up): one per chunk
//!   still to fetch, the root of that chunk's complete subtree, and the
//!   last level-`j` node of the head. With its own level-`j` nodes left of
//!   its adopted size (a multiple of `c`), that row is the whole level `j`
//!   of the head's tree, which alone determines the root: the row is
//!   hashed up to the root, and it is accepted only if that is the head's
//!   root. Each full, aligned chunk is then verified alone, by hashing its
//!   leaves to their subtree's root and comparing it with the row's node:
//!   no proof is fetched per chunk, and chunks are hashed in parallel (one
//!   thread per chunk in the window), since each is a subtree of its own.
//!   Sound for the same reason a proof is: a wrong node in a row that
//!   hashes to the head's root, or wrong leaves that hash to a verified
//!   node, would be a second preimage of the hash.
//! - **By a proof** (the path of the spec's text, and the fallback): the
//!   root after the chunk from the adopted tree's frontier, then a
//!   consistency proof to the head (`verify_chunk` in `mirror.rs`), which
//!   also names the first bad leaf tile when it fails. Chunks that are not
//!   full, aligned chunks of a verified row go this way; so does every
//!   chunk when the row does not hash to the head's root (a store whose
//!   tiles disagree with its checkpoint, which the proof path names), and
//!   a chunk that does not hash to its node (to name what is wrong).
//!
//! Either way nothing reaches the target before it is verified, chunks are
//! adopted in order, and a failure adopts every chunk verified before it
//! and nothing after.

use std::collections::VecDeque;

use cairn_core::shape::level_len;
use cairn_core::{Hash, HashKind, Snapshot};

use crate::checkpoint::Checkpoint;
use crate::mirror::{MirrorError, MirrorTarget, Upstream, verify_chunk};

/// Chunks fetched and being verified ahead of the one adopted: with
/// bundles of 2 MiB, at most 8 MiB of leaves wait here (beside what the
/// fetcher holds), and up to this many are hashed at once.
const WINDOW: usize = 4;

/// Fetches, verifies and adopts the leaves `[target's size, new's size)`
/// in chunks ending on multiples of `chunk` (see the module's comment).
/// Returns the leaves adopted.
pub(crate) fn adopt_chunks(
    upstream: &mut dyn Upstream,
    target: &mut dyn MirrorTarget,
    new: &Checkpoint,
    chunk: u64,
) -> Result<u64, MirrorError> {
    let size = new.head.size;
    let config = new.tree;
    let (n, hash) = (config.arity.get(), config.hash);
    // The level whose nodes are the chunks' roots, if chunks are complete
    // subtrees of a level that upstream's tiles hold (at or above tile-level
    // 1, so that the row never reads leaf tiles).
    let level =
        chunk_level(config.arity.as_u64(), chunk).filter(|&level| level >= new.layout().height());
    let start = target.adopted().size();
    let stages = target.stages();
    let mut row = Row::Undecided;
    let mut fetched = start;
    let mut adopted = start;
    let mut failed: Option<MirrorError> = None;
    std::thread::scope(|scope| {
        // Fetched chunks in order: their range, the object they came from,
        // and their leaves with the check running on them.
        let mut window: VecDeque<Pending<'_>> = VecDeque::new();
        loop {
            // Fill the window: fetch the next chunks and start their checks.
            while failed.is_none() && window.len() < WINDOW && fetched < size {
                let end = chunk_end(fetched, chunk, size);
                if let (Row::Undecided, Some(level)) = (&row, level)
                    && fetched.is_multiple_of(chunk)
                    && end - fetched == chunk
                {
                    if fetched != adopted {
                        // The row needs the adopted tree up to here.
                        break;
                    }
                    row = Row::decide(upstream, new, &target.adopted(), chunk, level)?;
                }
                let leaves = match upstream.leaves(new, fetched, end) {
                    Ok(leaves) => leaves,
                    Err(error) => {
                        failed = Some(error);
                        break;
                    }
                };
                if leaves.len() as u64 != end - fetched {
                    failed = Some(MirrorError::Refused {
                        object: upstream.describe(),
                        reason: format!("asked for leaves {fetched}..{end}, got {}", leaves.len()),
                    });
                    break;
                }
                let object = upstream.leaves_object(fetched, end);
                let expected = (end - fetched == chunk)
                    .then(|| row.node(fetched / chunk))
                    .flatten();
                let check = match expected {
                    None => Check::Proof(leaves),
                    Some(node) if stages => Check::Staged(leaves, node),
                    Some(node) => Check::Hashing(scope.spawn(move || {
                        let ok = subtree_root(hash, n, &leaves) == node;
                        (leaves, ok)
                    })),
                };
                window.push_back(Pending {
                    from: fetched,
                    to: end,
                    object,
                    check,
                });
                fetched = end;
            }
            let Some(pending) = window.pop_front() else {
                break;
            };
            let snapshot = target.adopted();
            if snapshot.size() != pending.from {
                return Err(MirrorError::Target(
                    format!(
                        "the mirror's tree has {} leaves, {} were adopted: another writer?",
                        snapshot.size(),
                        pending.from
                    )
                    .into(),
                ));
            }
            let leaves = match pending.check {
                Check::Proof(leaves) => Some(leaves),
                Check::Hashing(handle) => match handle.join() {
                    Ok((leaves, true)) => {
                        target.adopt(&leaves).map_err(MirrorError::Target)?;
                        None
                    }
                    Ok((leaves, false)) => Some(leaves),
                    Err(panic) => std::panic::resume_unwind(panic),
                },
                Check::Staged(leaves, node) => {
                    let tree = target.stage(&leaves).map_err(MirrorError::Target)?;
                    let k = pending.from / chunk;
                    let theirs = match (level, tree.view(pending.to)) {
                        (Some(level), Ok(view)) if tree.size() == pending.to => {
                            Some(view.node(level, k))
                        }
                        _ => None,
                    };
                    if theirs == Some(node) {
                        target.commit().map_err(MirrorError::Target)?;
                        None
                    } else {
                        target.discard().map_err(MirrorError::Target)?;
                        Some(leaves)
                    }
                }
            };
            if let Some(leaves) = leaves {
                // Not checked by a node, or not matching it: the proof path
                // verifies it, or names what is wrong.
                verify_chunk(upstream, new, &snapshot, &leaves, pending.object)?;
                target.adopt(&leaves).map_err(MirrorError::Target)?;
            }
            adopted = pending.to;
        }
        Ok(())
    })?;
    match failed {
        Some(error) => Err(error),
        None => Ok(adopted - start),
    }
}

/// A chunk fetched, and how it is verified.
struct Pending<'scope> {
    from: u64,
    to: u64,
    object: Option<String>,
    check: Check<'scope>,
}

/// How a chunk is verified.
enum Check<'scope> {
    /// By a proof, when it is adopted.
    Proof(Vec<Hash>),
    /// By its node, hashed on a thread of its own (whether it matched).
    Hashing(std::thread::ScopedJoinHandle<'scope, (Vec<Hash>, bool)>),
    /// By its node, computed by the target's tree once staged there.
    Staged(Vec<Hash>, Hash),
}

/// The end of the chunk that starts at `at`: the next multiple of `chunk`
/// (so that chunks line up with bundles after any start), at most `size`.
pub(crate) fn chunk_end(at: u64, chunk: u64, size: u64) -> u64 {
    ((at / chunk + 1) * chunk).min(size)
}

/// `j` when `chunk = N^j` with `j >= 1`.
fn chunk_level(arity: u64, chunk: u64) -> Option<u32> {
    let level = chunk.checked_ilog(arity)?;
    (level >= 1 && arity.checked_pow(level) == Some(chunk)).then_some(level)
}

/// The verified nodes of the chunks' level, or why there are none.
enum Row {
    /// Not asked for yet (the adopted size is not on a chunk boundary).
    Undecided,
    /// None: upstream gives no nodes, no full chunk is left, or the row
    /// did not hash to the head's root (the proof path then names what
    /// is wrong).
    None,
    /// Nodes `[first, first + nodes.len())` of the chunks' level, verified.
    Verified { first: u64, nodes: Vec<Hash> },
}

impl Row {
    /// The row from the adopted tree (of a multiple of `chunk` leaves) and
    /// upstream's nodes of `level` right of it, if it hashes to the head's
    /// root.
    fn decide(
        upstream: &mut dyn Upstream,
        new: &Checkpoint,
        adopted: &Snapshot,
        chunk: u64,
        level: u32,
    ) -> Result<Row, MirrorError> {
        let size = new.head.size;
        let config = new.tree;
        let first = adopted.size() / chunk;
        let len = level_len(size, config.arity, level);
        if first >= size / chunk {
            return Ok(Row::None);
        }
        let theirs = match upstream.nodes(new, level, first, len) {
            None => return Ok(Row::None),
            Some(Ok(nodes)) if nodes.len() as u64 == len - first => nodes,
            // An object the row needs is wrong: the proof path names it.
            Some(Ok(_) | Err(MirrorError::Refused { .. })) => return Ok(Row::None),
            Some(Err(error)) => return Err(error),
        };
        let view = adopted
            .view(adopted.size())
            .map_err(|e| MirrorError::Target(e.to_string().into()))?;
        let mut row: Vec<Hash> = (0..first).map(|k| view.node(level, k)).collect();
        row.extend_from_slice(&theirs);
        if hash_row(new, level, row) == new.head.root {
            Ok(Row::Verified {
                first,
                nodes: theirs,
            })
        } else {
            Ok(Row::None)
        }
    }

    /// The verified node of chunk `k`, if any.
    fn node(&self, k: u64) -> Option<Hash> {
        match self {
            Row::Verified { first, nodes } => k
                .checked_sub(*first)
                .and_then(|i| usize::try_from(i).ok())
                .and_then(|i| nodes.get(i))
                .copied(),
            Row::Undecided | Row::None => None,
        }
    }
}

/// The root of the head's tree from all of level `level`'s nodes, by the
/// tree's group rule (a Lean tree lifts a lone member, a fixed-depth one
/// pads with its zeros).
fn hash_row(new: &Checkpoint, mut level: u32, mut row: Vec<Hash>) -> Option<Hash> {
    let rule = new.tree.group_rule();
    let n = new.tree.arity.get();
    let depth = rule.depth(new.head.size);
    while level < depth {
        row = row
            .chunks(n)
            .map(|group| rule.parent(level, group))
            .collect();
        level += 1;
    }
    match row[..] {
        [root] => Some(root),
        _ => None,
    }
}

/// The root of the complete subtree over `leaves` (a power of `n` of them,
/// at least `n`): every group full, so the same for every kind.
fn subtree_root(hash: HashKind, n: usize, leaves: &[Hash]) -> Hash {
    let mut row = vec![[0u8; 32]; leaves.len() / n];
    hash.hash_groups(leaves, n, &mut row);
    while row.len() > 1 {
        let mut up = vec![[0u8; 32]; row.len() / n];
        hash.hash_groups(&row, n, &mut up);
        row = up;
    }
    row[0]
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_core::{Arity, LeanImt, TreeConfig};

    #[test]
    fn chunk_levels_are_powers_of_the_arity() {
        assert_eq!(chunk_level(4, 65_536), Some(8));
        assert_eq!(chunk_level(2, 65_536), Some(16));
        assert_eq!(chunk_level(3, 59_049), Some(10));
        assert_eq!(chunk_level(4, 1), None);
        assert_eq!(chunk_level(4, 1_000), None);
        assert_eq!(chunk_level(4, 32_768), None);
    }

    #[test]
    fn a_subtree_root_is_the_trees_node() {
        for n in [2u64, 3, 4, 16] {
            let config = TreeConfig::new(Arity::new(n).unwrap(), HashKind::Blake3);
            let c = n.pow(if n == 16 { 2 } else { 4 });
            let leaves: Vec<Hash> = (0..3 * c + 5)
                .map(|i| {
                    HashKind::Blake3.hash_children(&[[(i % 251) as u8; 32], [(i / 251) as u8; 32]])
                })
                .collect();
            let tree = LeanImt::from_leaves(config, &leaves).unwrap();
            let view = tree.view(tree.size()).unwrap();
            let level = chunk_level(n, c).unwrap();
            for k in 0..3 {
                let chunk = &leaves[(k * c) as usize..((k + 1) * c) as usize];
                assert_eq!(
                    subtree_root(HashKind::Blake3, n as usize, chunk),
                    view.node(level, k),
                    "N = {n}, chunk {k}"
                );
            }
        }
    }
}
