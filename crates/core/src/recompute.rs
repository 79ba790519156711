//! Recomputing nodes a caller does not hold, by the kind's group rule. A
//! client of immutable tiles computes any node of a tree at a trusted size
//! from the nodes it fetched ([`GroupRule::node`] over [`KnownNodes`]); a
//! mirror or a verifier computes the root after appending leaves to a tree
//! it knows only by its [`Frontier`] ([`GroupRule::root_after`]).
//!
//! Invariant: every parent computed here is [`group_parent`]'s, with the
//! zeros of the tree's kind, so a recompute agrees with the tree byte for
//! byte whatever the kind.

use crate::Arity;
use crate::cast::to_usize;
use crate::config::TreeConfig;
use crate::hash::{Hash, HashKind, MAX_GROUP};
use crate::kind::{TreeKind, Zeros, group_parent};
use crate::shape::{Shape, level_len};
use crate::snapshot::Snapshot;
use crate::view::View;

/// A tree's group rule with its zeros, computed once: what makes the
/// parent of any group of any level. Cheap to clone (the zeros are shared).
#[derive(Clone, Debug)]
pub struct GroupRule {
    arity: Arity,
    hash: HashKind,
    kind: TreeKind,
    zeros: Zeros,
}

impl TreeConfig {
    /// The tree's group rule (for a fixed-depth tree this computes its
    /// zeros: `depth` hashes).
    pub fn group_rule(&self) -> GroupRule {
        GroupRule {
            arity: self.arity,
            hash: self.hash,
            kind: self.kind,
            zeros: Zeros::new(self.arity, self.hash, self.kind),
        }
    }
}

/// Where a recompute reads the nodes it does not compute.
pub trait KnownNodes {
    /// Why a node could not be read.
    type Error;

    /// Node `index` of `level` if the caller holds it (stored, fetched,
    /// cached), `Ok(None)` to have it computed from its children. It must
    /// be the node of the tree at the size the recompute is asked about
    /// (a verifier checks what comes out).
    fn known(&mut self, level: u32, index: u64) -> Result<Option<Hash>, Self::Error>;

    /// Called with every node the recompute computed, for a caller that
    /// keeps them.
    fn computed(&mut self, level: u32, index: u64, node: &Hash) {
        let _ = (level, index, node);
    }
}

impl<E, F: FnMut(u32, u64) -> Result<Option<Hash>, E>> KnownNodes for F {
    type Error = E;

    fn known(&mut self, level: u32, index: u64) -> Result<Option<Hash>, E> {
        self(level, index)
    }
}

/// Why a node could not be recomputed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecomputeError<E> {
    /// The tree of that size has no such node.
    NoSuchNode {
        /// The level asked for.
        level: u32,
        /// The index asked for.
        index: u64,
        /// The tree's size.
        size: u64,
    },
    /// A leaf the source does not hold: leaves cannot be computed.
    MissingLeaf {
        /// The leaf's index.
        index: u64,
    },
    /// The source failed to give a node.
    Source(E),
}

impl<E: std::fmt::Display> std::fmt::Display for RecomputeError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecomputeError::NoSuchNode { level, index, size } => write!(
                f,
                "the tree of {size} leaves has no node {index} at level {level}"
            ),
            RecomputeError::MissingLeaf { index } => write!(
                f,
                "leaf {index} is not known, and a leaf cannot be computed"
            ),
            RecomputeError::Source(error) => error.fmt(f),
        }
    }
}

impl<E: std::fmt::Debug + std::fmt::Display> std::error::Error for RecomputeError<E> {}

impl GroupRule {
    /// The tree's arity.
    pub fn arity(&self) -> Arity {
        self.arity
    }

    /// The tree's hash.
    pub fn hash(&self) -> HashKind {
        self.hash
    }

    /// The tree's kind.
    pub fn kind(&self) -> TreeKind {
        self.kind
    }

    /// What pads a partial group of `level`: `None` for a Lean tree (a
    /// lone member is lifted), `zeros[level]` for a fixed-depth one.
    ///
    /// # Panics
    /// For a fixed-depth tree, at a level above its depth.
    pub fn pad(&self, level: u32) -> Option<&Hash> {
        self.zeros.pad(level)
    }

    /// The parent of `members` (1..=N nodes of `level`, in index order):
    /// [`group_parent`] with this tree's zeros.
    ///
    /// # Panics
    /// If `members` is empty or longer than N, or, for a fixed-depth tree,
    /// `level` is not below its depth.
    #[inline]
    pub fn parent(&self, level: u32, members: &[Hash]) -> Hash {
        group_parent(self.hash, self.arity.get(), self.zeros.pad(level), members)
    }

    /// The root of the empty tree: `None` for a Lean tree, `zeros[depth]`
    /// for a fixed-depth one.
    pub fn empty_root(&self) -> Option<Hash> {
        self.zeros.empty_root()
    }

    /// Levels above the leaves at `size` (see [`Shape::depth`]).
    pub fn depth(&self, size: u64) -> u32 {
        Shape::new(self.arity, self.kind).depth(size)
    }

    /// Node `index` of `level` in the tree of `size` leaves: the one
    /// `known` holds, else the parent of its children, each read the same
    /// way (down to the leaves, which must be known).
    pub fn node<K: KnownNodes + ?Sized>(
        &self,
        size: u64,
        level: u32,
        index: u64,
        known: &mut K,
    ) -> Result<Hash, RecomputeError<K::Error>> {
        if size == 0 || level > self.depth(size) || index >= level_len(size, self.arity, level) {
            return Err(RecomputeError::NoSuchNode { level, index, size });
        }
        self.node_within(size, level, index, known)
    }

    /// The root of the tree of `size` leaves (the empty tree's for 0).
    pub fn root<K: KnownNodes + ?Sized>(
        &self,
        size: u64,
        known: &mut K,
    ) -> Result<Option<Hash>, RecomputeError<K::Error>> {
        if size == 0 {
            return Ok(self.empty_root());
        }
        self.node(size, self.depth(size), 0, known).map(Some)
    }

    /// [`GroupRule::node`] of a node the tree has.
    fn node_within<K: KnownNodes + ?Sized>(
        &self,
        size: u64,
        level: u32,
        index: u64,
        known: &mut K,
    ) -> Result<Hash, RecomputeError<K::Error>> {
        if let Some(node) = known.known(level, index).map_err(RecomputeError::Source)? {
            return Ok(node);
        }
        let Some(below) = level.checked_sub(1) else {
            return Err(RecomputeError::MissingLeaf { index });
        };
        let n = self.arity.as_u64();
        // index < ceil(len / N), so index * N < len: no overflow.
        let first = index * n;
        let end = first
            .saturating_add(n)
            .min(level_len(size, self.arity, below));
        let mut group = [[0u8; 32]; MAX_GROUP];
        for (slot, child) in group.iter_mut().zip(first..end) {
            *slot = self.node_within(size, below, child, known)?;
        }
        let node = self.parent(below, &group[..to_usize(end - first)]);
        known.computed(level, index, &node);
        Ok(node)
    }

    /// The root of the tree of `frontier.size()` leaves followed by
    /// `leaves`: each level's new nodes from the frontier's final nodes of
    /// that level and the new nodes below, complete groups through the
    /// multi-lane kernels. With no leaves, the root of the frontier's tree.
    ///
    /// # Panics
    /// If the frontier is of another arity, or the sizes overflow a u64.
    pub fn root_after(&self, frontier: &Frontier, leaves: &[Hash]) -> Option<Hash> {
        assert_eq!(
            frontier.arity, self.arity,
            "a frontier of arity {} under a group rule of arity {}",
            frontier.arity, self.arity
        );
        let size = frontier
            .size
            .checked_add(leaves.len() as u64)
            .expect("a tree holds at most u64::MAX leaves");
        if size == 0 {
            return self.empty_root();
        }
        let n = self.arity.get();
        let mut levels = frontier.levels();
        // The new nodes of the level, from its first non-final index on.
        let mut fresh: Vec<Hash> = leaves.to_vec();
        // The frontier's nodes of the level followed by the new ones: the
        // level's nodes from the start of its last complete-or-not group.
        let mut nodes: Vec<Hash> = Vec::with_capacity(leaves.len() + n);
        for level in 0..=self.depth(size) {
            nodes.clear();
            if let Some(final_nodes) = levels.next() {
                nodes.extend_from_slice(final_nodes);
            }
            nodes.extend_from_slice(&fresh);
            if level == self.depth(size) {
                break;
            }
            let complete = nodes.len() / n;
            fresh.clear();
            fresh.resize(nodes.len().div_ceil(n), [0; 32]);
            if complete > 0 {
                self.hash
                    .hash_groups(&nodes[..complete * n], n, &mut fresh[..complete]);
            }
            if complete < fresh.len() {
                fresh[complete] = self.parent(level, &nodes[complete * n..]);
            }
        }
        debug_assert_eq!(nodes.len(), 1, "the top level holds the root alone");
        nodes.first().copied()
    }
}

/// The final nodes of the last group of every level of the tree of `size`
/// leaves, bottom-up: at level k, with `F_k = floor(size / N^k)` final
/// nodes, the `F_k mod N` nodes `[F_k - F_k mod N, F_k)`. They are the left
/// siblings of the path of leaf `size` in the tree of `size + 1` leaves,
/// and every node an append reads besides the new leaves.
#[derive(Clone, PartialEq, Eq)]
pub struct Frontier {
    arity: Arity,
    size: u64,
    nodes: Vec<Hash>,
}

impl std::fmt::Debug for Frontier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Frontier")
            .field("arity", &self.arity)
            .field("size", &self.size)
            .field("nodes", &crate::hex::HexList(&self.nodes))
            .finish()
    }
}

/// A frontier given the wrong number of nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a frontier of {size} leaves at arity {arity} has {want} nodes, got {got}")]
pub struct FrontierLenError {
    /// The tree's size.
    pub size: u64,
    /// The tree's arity.
    pub arity: usize,
    /// The nodes given.
    pub got: usize,
    /// The nodes it has.
    pub want: usize,
}

impl Frontier {
    /// How many nodes the frontier of `size` leaves at `arity` holds.
    pub fn len_at(arity: Arity, size: u64) -> usize {
        final_counts(arity, size).map(|(_, count)| count).sum()
    }

    /// The frontier of the tree of `size` leaves from its nodes, bottom-up
    /// and each level's in index order.
    pub fn new(arity: Arity, size: u64, nodes: Vec<Hash>) -> Result<Frontier, FrontierLenError> {
        let want = Frontier::len_at(arity, size);
        if nodes.len() != want {
            return Err(FrontierLenError {
                size,
                arity: arity.get(),
                got: nodes.len(),
                want,
            });
        }
        Ok(Frontier { arity, size, nodes })
    }

    /// The frontier of the tree of `size` leaves, reading each of its nodes
    /// through `node(level, index)`.
    pub fn read<E>(
        arity: Arity,
        size: u64,
        mut node: impl FnMut(u32, u64) -> Result<Hash, E>,
    ) -> Result<Frontier, E> {
        let mut nodes = Vec::with_capacity(Frontier::len_at(arity, size));
        for (level, count) in final_counts(arity, size) {
            let finals = size / arity.as_u64().pow(level);
            for index in finals - count as u64..finals {
                nodes.push(node(level, index)?);
            }
        }
        Ok(Frontier { arity, size, nodes })
    }

    /// The size of the tree it is the frontier of.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The arity.
    pub fn arity(&self) -> Arity {
        self.arity
    }

    /// Its nodes, bottom-up.
    pub fn nodes(&self) -> &[Hash] {
        &self.nodes
    }

    /// Each level's nodes, bottom-up (empty slices where a level has none).
    fn levels(&self) -> impl Iterator<Item = &[Hash]> {
        let mut rest = self.nodes.as_slice();
        final_counts(self.arity, self.size).map(move |(_, count)| {
            let (level, tail) = rest.split_at(count);
            rest = tail;
            level
        })
    }
}

/// Per level with final nodes at `size` (`F_k > 0`), the level and
/// `F_k mod N`.
fn final_counts(arity: Arity, size: u64) -> impl Iterator<Item = (u32, usize)> {
    let n = arity.as_u64();
    let mut finals = size;
    let mut level = 0;
    std::iter::from_fn(move || {
        if finals == 0 {
            return None;
        }
        let out = (level, to_usize(finals % n));
        finals /= n;
        level += 1;
        Some(out)
    })
}

impl View<'_> {
    /// The frontier of the tree at this view's size.
    pub fn frontier(&self) -> Frontier {
        let read = |level, index| Ok::<Hash, std::convert::Infallible>(self.node(level, index));
        match Frontier::read(self.config().arity, self.size(), read) {
            Ok(frontier) => frontier,
            Err(never) => match never {},
        }
    }
}

impl Snapshot {
    /// The frontier of the snapshot's tree.
    pub fn frontier(&self) -> Frontier {
        self.view_full().frontier()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LeanImt;

    fn leaves(count: u64) -> Vec<Hash> {
        (0..count)
            .map(|i| *blake3::hash(&i.to_le_bytes()).as_bytes())
            .collect()
    }

    fn configs() -> Vec<TreeConfig> {
        let mut out = Vec::new();
        for n in [2u64, 3, 4, 16] {
            let arity = Arity::new(n).unwrap();
            let lean = TreeConfig::new(arity, HashKind::Blake3);
            out.push(lean);
            out.push(lean.with_kind(TreeKind::Fixed {
                depth: if n == 2 { 9 } else { 6 },
                zero: [3; 32],
            }));
        }
        out
    }

    /// A source that knows only what a tile store holds: the final nodes
    /// of every `height`-th level.
    #[test]
    fn any_node_recomputed_from_the_final_nodes_of_some_levels_is_the_trees() {
        let all = leaves(300);
        for config in configs() {
            let rule = config.group_rule();
            for size in [1u64, 2, 5, 16, 17, 100, 255, 256, 257, 300] {
                let mut tree = LeanImt::from_leaves(config, &all[..to_usize(size)]).unwrap();
                let view = tree.at_size(size).unwrap();
                let n = config.arity.as_u64();
                let mut reads = 0;
                let mut stored = |level: u32, index: u64| {
                    reads += 1;
                    let finals = n.checked_pow(level).map_or(0, |span| size / span);
                    let ok = level.is_multiple_of(3) && index < finals;
                    Ok::<_, ()>(ok.then(|| view.node(level, index)))
                };
                for level in 0..=rule.depth(size) {
                    for index in 0..level_len(size, config.arity, level) {
                        assert_eq!(
                            rule.node(size, level, index, &mut stored),
                            Ok(view.node(level, index)),
                            "{config:?} size {size} node ({level}, {index})"
                        );
                    }
                }
                assert_eq!(rule.root(size, &mut stored), Ok(view.root()));
                let depth = rule.depth(size);
                assert_eq!(
                    rule.node(size, depth + 1, 0, &mut stored),
                    Err(RecomputeError::NoSuchNode {
                        level: depth + 1,
                        index: 0,
                        size
                    })
                );
                assert!(reads > 0);
            }
            let mut none = |_: u32, _: u64| Ok::<_, ()>(None);
            assert_eq!(rule.root(0, &mut none), Ok(rule.empty_root()));
            assert_eq!(
                rule.node(5, 0, 4, &mut none),
                Err(RecomputeError::MissingLeaf { index: 4 })
            );
            let mut failing = |_: u32, _: u64| Err::<Option<Hash>, _>("unreachable store");
            assert_eq!(
                rule.node(5, 0, 4, &mut failing),
                Err(RecomputeError::Source("unreachable store"))
            );
        }
    }

    /// Every split of a tree into a frontier and the leaves after it gives
    /// the tree's root, and the frontier is the left siblings of the next
    /// leaf's path.
    #[test]
    fn the_root_after_every_split_is_the_root_of_the_longer_tree() {
        let all = leaves(140);
        for config in configs() {
            let rule = config.group_rule();
            for size in 0..=140u64 {
                let mut tree = LeanImt::from_leaves(config, &all[..to_usize(size)]).unwrap();
                let frontier = tree.snapshot().frontier();
                assert_eq!(frontier.nodes().len(), Frontier::len_at(config.arity, size));
                assert_eq!(rule.root_after(&frontier, &[]), tree.root(), "{size}");
                for end in [size + 1, size + 2, size + 7, 140]
                    .into_iter()
                    .filter(|&e| e <= 140)
                {
                    let mut longer = LeanImt::from_leaves(config, &all[..to_usize(end)]).unwrap();
                    assert_eq!(
                        rule.root_after(&frontier, &all[to_usize(size)..to_usize(end)]),
                        longer.root(),
                        "{config:?} {size} -> {end}"
                    );
                }
                if size < 140 {
                    let mut next =
                        LeanImt::from_leaves(config, &all[..to_usize(size) + 1]).unwrap();
                    let proof = next.prove(size).unwrap();
                    let left: Vec<Hash> = proof
                        .levels()
                        .flat_map(|(step, siblings)| siblings[..step.position].to_vec())
                        .collect();
                    assert_eq!(frontier.nodes(), &left[..], "{config:?} {size}");
                }
            }
            assert_eq!(
                Frontier::new(config.arity, 5, Vec::new()).map_err(|e| (e.got, e.want)),
                Err((0, Frontier::len_at(config.arity, 5)))
            );
        }
    }
}
