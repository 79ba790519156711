//! The n-ary incremental Merkle tree, held in memory: a Lean tree or a
//! fixed-depth one (see [`TreeKind`](crate::TreeKind)).
//!
//! Invariant: after every public call, `levels[0]` holds the leaves verbatim,
//! `levels[k + 1]` holds exactly ceil(len_k / N) nodes, each the parent of
//! its group of children by `kind::group_parent` (a complete group hashed;
//! a partial one lifted or hashed over its members in a Lean tree, padded
//! with `zeros[k]` and hashed in a fixed-depth one), and the top level holds
//! one node (the root) unless the tree is empty. A Lean tree's top level is
//! `depth(size)`, a non-empty fixed-depth tree's is its depth. Nothing ever
//! changes except the right edge of each level.

use crate::cast::level_number;
use crate::cast::to_usize;

use rayon::prelude::*;

use crate::batch::CheckedLeaves;
use crate::error::TreeError;
use crate::hash::Hash;
use crate::kind::Zeros;
use crate::level::Level;
use crate::shape;

pub use crate::config::{TreeConfig, TreeHead};
pub use crate::snapshot::Snapshot;
pub use crate::view::View;

mod sequence;
mod update;

/// An in-memory n-ary incremental Merkle tree of either kind: a LeanIMT,
/// or (with [`TreeKind::Fixed`](crate::TreeKind::Fixed)) a fixed-depth zero-padded tree.
///
/// Appends are lazy: they copy leaves into level 0 and nothing else. The
/// upper levels are brought up to date by [`LeanImt::commit`], which every
/// method that needs a hash (root, head, proofs, views) calls first, and
/// which hashes only the dirty right edge, level by level, with the
/// multi-lane kernels. A chain follower that appends one leaf per call and
/// reads the root once per block therefore runs at batch speed.
#[derive(Clone, Debug)]
pub struct LeanImt {
    config: TreeConfig,
    /// A fixed-depth tree's zero of every level, computed once.
    zeros: Zeros,
    /// `levels[0]` = leaves; see the module invariant (which holds for the
    /// first `hashed` leaves; nodes above them may be stale).
    levels: Vec<Level>,
    /// Leaves covered by up-to-date upper levels.
    hashed: u64,
}

impl LeanImt {
    /// An empty tree.
    ///
    /// # Panics
    /// If `config` is not a tree ([`TreeConfig::check`]): check
    /// configurations that come from input first, or use
    /// [`LeanImt::try_new`].
    pub fn new(config: TreeConfig) -> LeanImt {
        LeanImt::try_new(config).unwrap_or_else(|e| panic!("tree configuration: {e}"))
    }

    /// An empty tree, or why `config` is not a tree.
    pub fn try_new(config: TreeConfig) -> Result<LeanImt, TreeError> {
        config.check()?;
        Ok(LeanImt {
            config,
            zeros: Zeros::new(config.arity, config.hash, config.kind),
            levels: vec![Level::default()],
            hashed: 0,
        })
    }

    /// A tree holding `leaves`, built in one pass (an empty slice gives the
    /// empty tree).
    pub fn from_leaves(config: TreeConfig, leaves: &[Hash]) -> Result<LeanImt, TreeError> {
        let mut tree = LeanImt::try_new(config)?;
        // The field hashes are bound by arithmetic, not by memory: they gain
        // nothing from hashing the leaves while they are in cache, and their
        // commit spreads each level across threads at a finer grain.
        if leaves.len() < 2 || config.hash.is_field_hash() {
            if !leaves.is_empty() {
                tree.append_batch(leaves)?;
            }
            tree.commit();
            return Ok(tree);
        }
        tree.check_batch(leaves)?;
        // The leaves and their parents in one pass (see
        // `build::fill_leaves_and_parents`), then the levels above.
        let (lower, upper) = tree.levels.split_at_mut(1);
        let mut parents = Level::default();
        crate::build::fill_leaves_and_parents(
            config.hash,
            config.arity.get(),
            tree.zeros.pad(0),
            leaves,
            &mut lower[0],
            &mut parents,
        );
        debug_assert!(upper.is_empty());
        tree.levels.push(parents);
        tree.rehash_from(1, 0);
        Ok(tree)
    }

    /// The tree's configuration.
    pub fn config(&self) -> TreeConfig {
        self.config
    }

    /// Number of leaves.
    pub fn size(&self) -> u64 {
        self.levels[0].len() as u64
    }

    /// Whether the tree has no leaves.
    pub fn is_empty(&self) -> bool {
        self.levels[0].is_empty()
    }

    /// Levels above the leaves: ceil(log_N(size)) for a Lean tree (0 for
    /// an empty or one-leaf tree), the fixed depth for a fixed-depth one.
    pub fn depth(&self) -> u32 {
        self.config.depth_at(self.size())
    }

    /// Whether every upper level is up to date (no append since the last commit).
    pub fn is_committed(&self) -> bool {
        self.hashed == self.size()
    }

    /// Hashes what appends left dirty: the right edge of every level.
    pub fn commit(&mut self) {
        if self.is_committed() {
            return;
        }
        self.rehash_from(0, to_usize(self.hashed));
    }

    /// Recomputes every level above `level` whose nodes cover leaves from
    /// node `dirty` of `level` on, and marks the tree committed.
    fn rehash_from(&mut self, mut level: usize, mut dirty: usize) {
        let arity = self.config.arity.get();
        let top = self.config.levels_len(self.size()) - 1;
        while level < top {
            if self.levels.len() == level + 1 {
                self.levels.push(Level::default());
            }
            let (lower, upper) = self.levels.split_at_mut(level + 1);
            dirty /= arity;
            crate::build::rehash_level(
                self.config.hash,
                arity,
                self.zeros.pad(level_number(level)),
                &lower[level],
                &mut upper[0],
                dirty,
            );
            level += 1;
        }
        self.hashed = self.size();
    }

    /// The root; for the empty tree `None` (a Lean tree has no root) or
    /// `zeros[depth]` (a fixed-depth tree).
    pub fn root(&mut self) -> Option<Hash> {
        self.commit();
        self.levels
            .last()
            .and_then(Level::last)
            .or_else(|| self.zeros.empty_root())
    }

    /// The size and root together.
    pub fn head(&mut self) -> TreeHead {
        TreeHead {
            size: self.size(),
            root: self.root(),
        }
    }

    /// The leaf at `index`, if present.
    pub fn leaf(&self, index: u64) -> Option<Hash> {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.levels[0].get(i))
            .copied()
    }

    /// All leaves, in order.
    pub fn leaves(&self) -> impl Iterator<Item = &Hash> {
        self.levels[0].iter()
    }

    /// The node at `level`, `index` of the current tree (after a commit).
    pub fn node(&mut self, level: u32, index: u64) -> Option<Hash> {
        self.commit();
        let level = self.levels.get(level as usize)?;
        usize::try_from(index)
            .ok()
            .and_then(|i| level.get(i))
            .copied()
    }

    /// Appends one leaf; returns its index. Nothing is hashed until a commit.
    pub fn append(&mut self, leaf: Hash) -> Result<u64, TreeError> {
        self.append_batch(std::slice::from_ref(&leaf))
    }

    /// Appends `leaves` in order; returns the index of the first. All or
    /// nothing: a refused batch leaves the tree unchanged. Nothing is hashed
    /// until a commit.
    pub fn append_batch(&mut self, leaves: &[Hash]) -> Result<u64, TreeError> {
        let checked = self.config.check_leaves(leaves)?;
        self.append_checked(&checked)
    }

    /// Appends leaves already checked by [`TreeConfig::check_leaves`]
    /// (only the capacity is checked here, against the size now); returns
    /// the index of the first. All or nothing, like
    /// [`LeanImt::append_batch`].
    ///
    /// # Panics
    /// If the leaves were checked for another hash.
    pub fn append_checked(&mut self, leaves: &CheckedLeaves<'_>) -> Result<u64, TreeError> {
        assert_eq!(
            leaves.hash(),
            self.config.hash,
            "leaves checked for another hash than the tree's"
        );
        self.check_batch_size(leaves.count() as u64)?;
        let first = self.size();
        self.levels[0].extend_from_slice(leaves.leaves());
        Ok(first)
    }

    /// Removes every leaf from `size` on (a rollback): the tree becomes
    /// the tree of its first `size` leaves, and a later append reuses
    /// their indices. Snapshots taken before keep answering as before
    /// (shared memory the writer will write again is not written: it
    /// moves to memory of its own from the 4 KiB chunk holding the cut on,
    /// `Level::truncate`). Nothing is hashed here: the right edge at
    /// `size` is rehashed by the next commit.
    pub fn truncate(&mut self, size: u64) -> Result<(), TreeError> {
        let current = self.size();
        if size > current {
            return Err(TreeError::TruncateBeyondSize {
                to: size,
                size: current,
            });
        }
        if size == current {
            return Ok(());
        }
        let n = self.config.arity.get() as u64;
        // Every node of level k that covers only leaves below `hashed` and
        // below `size` is correct in the smaller tree; the ones from
        // `dirty / N^k` on are dropped and rehashed by the next commit
        // (which starts from the same index at each level).
        let dirty = self.hashed.min(size.saturating_sub(1));
        let levels = self.config.levels_len(size);
        self.levels.truncate(levels);
        self.levels[0].truncate(to_usize(size));
        let mut keep = dirty;
        for level in self.levels.iter_mut().skip(1) {
            keep /= n;
            level.truncate(to_usize(keep).min(level.len()));
        }
        // A tree with no level above the leaves is committed as it stands.
        self.hashed = if levels == 1 { size } else { dirty };
        Ok(())
    }

    /// Validates a batch against this tree without changing anything.
    pub fn check_batch(&self, leaves: &[Hash]) -> Result<(), TreeError> {
        self.config.check_leaves(leaves)?;
        self.check_batch_size(leaves.len() as u64)
    }

    /// A read-only view of the tree as it was when it had `size` leaves
    /// (commits first).
    pub fn at_size(&mut self, size: u64) -> Result<View<'_>, TreeError> {
        self.commit();
        View::new(&self.levels, self.config, &self.zeros, &[], size)
    }

    /// A read-only view at `size` without committing: an error if appends
    /// since the last commit are not hashed yet. For callers that share the
    /// tree read-only (a snapshot under a read lock).
    pub fn view(&self, size: u64) -> Result<View<'_>, TreeError> {
        if !self.is_committed() {
            return Err(TreeError::Uncommitted {
                size: self.size(),
                hashed: self.hashed,
            });
        }
        View::new(&self.levels, self.config, &self.zeros, &[], size)
    }

    /// An immutable, thread-safe copy of the tree as it is now (commits
    /// first), sharing the tree's memory: it costs one reference count per
    /// 2 MiB segment plus one node per level, whatever the size. Later
    /// appends, commits and tiering never change what it returns.
    pub fn snapshot(&mut self) -> Snapshot {
        self.commit();
        let size = self.size();
        let mut levels = Vec::with_capacity(self.levels.len());
        let mut edge = Vec::with_capacity(self.levels.len());
        for level in &mut self.levels {
            // Every node but the last of a level is final; the last may
            // still change, so the snapshot keeps its own copy of it.
            match level.last() {
                Some(last) => {
                    let final_len = level.len() - 1;
                    edge.push((final_len as u64, last));
                    levels.push(level.share(final_len));
                }
                None => levels.push(Level::default()),
            }
        }
        Snapshot {
            config: self.config,
            zeros: self.zeros.clone(),
            size,
            levels,
            edge,
        }
    }

    /// A read-only copy of the leaves sharing the tree's memory (leaves
    /// never change): what the storage engine writes to its log without
    /// holding the tree's lock.
    pub fn share_leaves(&mut self) -> Level {
        let len = self.levels[0].len();
        self.levels[0].share(len)
    }

    /// A committed tree from levels built elsewhere (a checkpoint read back
    /// by the storage engine): the nodes are trusted, only the shape is
    /// checked. [`LeanImt::first_mismatch`] recomputes them.
    pub fn from_levels(config: TreeConfig, mut levels: Vec<Level>) -> Result<LeanImt, TreeError> {
        config.check()?;
        if levels.is_empty() {
            levels.push(Level::default());
        }
        let n = config.arity.get();
        let size = levels[0].len() as u64;
        // Levels 1..want_levels, each ceil(len / N) of the one below.
        let want_levels = config.levels_len(size);
        for (index, pair) in levels.windows(2).enumerate() {
            let want = pair[0].len().div_ceil(n);
            let above_top = index + 1 >= want_levels;
            if above_top || pair[1].len() != want {
                return Err(TreeError::LevelShape {
                    level: level_number(index) + 1,
                    got: pair[1].len() as u64,
                    want: if above_top { 0 } else { want as u64 },
                });
            }
        }
        let top = levels.len() - 1;
        if levels.len() < want_levels {
            return Err(TreeError::LevelShape {
                level: level_number(top) + 1,
                got: 0,
                want: levels[top].len().div_ceil(n) as u64,
            });
        }
        let tree = LeanImt {
            config,
            zeros: Zeros::new(config.arity, config.hash, config.kind),
            levels,
            hashed: size,
        };
        tree.check_batch_size(0)?;
        Ok(tree)
    }

    /// Recomputes every upper level from the one below and returns the
    /// first stored node that differs, as (level, index), or `None` when
    /// every level is what the leaves imply. Only for a committed tree.
    pub fn first_mismatch(&self) -> Option<(u32, u64)> {
        assert!(self.is_committed(), "checking an uncommitted tree");
        let n = self.config.arity.get();
        const PIECE: usize = 4096;
        for level in 1..self.levels.len() {
            let children = &self.levels[level - 1];
            let stored = &self.levels[level];
            let mismatch = (0..stored.len().div_ceil(PIECE))
                .into_par_iter()
                .find_map_first(|piece| {
                    let first = piece * PIECE;
                    let count = PIECE.min(stored.len() - first);
                    let mut want = vec![[0u8; 32]; count];
                    crate::build::fill_parents(
                        self.config.hash,
                        n,
                        self.zeros.pad(level_number(level) - 1),
                        children,
                        first,
                        &mut want,
                    );
                    let mut got = vec![[0u8; 32]; count];
                    stored.copy_to(first, &mut got);
                    want.iter()
                        .zip(&got)
                        .position(|(a, b)| a != b)
                        .map(|offset| (first + offset) as u64)
                });
            if let Some(index) = mismatch {
                return Some((level_number(level), index));
            }
        }
        None
    }

    /// The levels, read-only (the nodes above an uncommitted tail may be stale).
    pub fn levels(&self) -> &[Level] {
        &self.levels
    }

    /// Serves whole segment `segment` of `level` from `source` (see
    /// [`Level::tier`]). Snapshots taken before keep the old memory.
    pub fn tier(
        &mut self,
        level: u32,
        segment: usize,
        source: std::sync::Arc<dyn crate::level::NodeSource>,
    ) -> Result<(), crate::level::TierError> {
        self.levels[level as usize].tier(segment, source)
    }

    /// Whether `appending` more leaves fit under the configured depth limit
    /// (a Lean tree's maximum depth, a fixed-depth tree's depth).
    pub fn check_batch_size(&self, appending: u64) -> Result<(), TreeError> {
        let size = self.size();
        if let Some(max_depth) = self.config.depth_limit() {
            let capacity = shape::capacity(self.config.arity, max_depth);
            let fits = match (size.checked_add(appending), capacity) {
                (Some(after), Some(capacity)) => after <= capacity,
                (Some(_), None) => true,
                (None, _) => false,
            };
            if !fits {
                return Err(TreeError::CapacityExceeded {
                    size,
                    appending,
                    capacity: capacity.unwrap_or(u64::MAX),
                    arity: self.config.arity.get(),
                    max_depth,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Arity;
    use crate::cast::{level_number, to_usize};
    use crate::hash::HashKind;
    use crate::level::SEGMENT_LEN;

    fn leaves(count: usize) -> Vec<Hash> {
        (0..count)
            .map(|i| {
                let mut leaf = [0u8; 32];
                leaf[24..].copy_from_slice(&(i as u64 + 1).to_be_bytes());
                leaf
            })
            .collect()
    }

    impl LeanImt {
        fn dump(&mut self) -> Vec<Vec<Hash>> {
            self.commit();
            self.levels
                .iter()
                .map(|level| level.iter().copied().collect())
                .collect()
        }
    }

    fn config(n: u64) -> TreeConfig {
        TreeConfig::new(Arity::new(n).unwrap(), HashKind::Blake3)
    }

    /// `from_leaves` (leaves and parents filled in one pass per chunk) against
    /// appends and a commit (copy, then hash from the stored leaves), level
    /// by level, at sizes around chunk, parent-chunk and segment boundaries
    /// and above the parallel threshold, for every arity.
    #[test]
    fn from_leaves_equals_append_and_commit_at_every_level() {
        let all = leaves(4096 * 16 + 300);
        for n in 2..=16u64 {
            let n_usize = to_usize(n);
            let mut sizes = vec![2, 3, n_usize - 1, n_usize, n_usize + 1, 128, 129];
            sizes.extend([128 * n_usize - 1, 128 * n_usize, 128 * n_usize + 1, 1000]);
            sizes.extend([4096 * n_usize + 7, crate::level::SEGMENT_LEN + 5]);
            for size in sizes.into_iter().filter(|&s| s >= 1) {
                let mut built = LeanImt::from_leaves(config(n), &all[..size]).unwrap();
                assert!(built.is_committed());
                let mut appended = LeanImt::new(config(n));
                appended.append_batch(&all[..size]).unwrap();
                assert_eq!(built.dump(), appended.dump(), "N = {n}, {size} leaves");
            }
        }
    }

    #[test]
    fn empty_tree_has_no_root_and_one_leaf_is_its_own_root() {
        let mut tree = LeanImt::new(config(4));
        assert_eq!(tree.root(), None);
        assert_eq!(tree.head(), TreeHead::EMPTY);
        let leaf = leaves(1)[0];
        tree.append(leaf).unwrap();
        assert_eq!(tree.root(), Some(leaf));
        assert_eq!(tree.depth(), 0);
    }

    #[test]
    fn lone_children_are_lifted_and_partial_groups_hash_their_members() {
        let l = leaves(6);
        let mut tree = LeanImt::from_leaves(config(4), &l).unwrap();
        let h = |c: &[Hash]| HashKind::Blake3.hash_children(c);
        let left = h(&l[0..4]);
        let right = h(&l[4..6]);
        assert_eq!(tree.root(), Some(h(&[left, right])));
        let mut tree = LeanImt::from_leaves(config(4), &l[..5]).unwrap();
        assert_eq!(tree.root(), Some(h(&[left, l[4]])));
        assert_eq!(tree.depth(), 2);
    }

    #[test]
    fn single_appends_equal_one_batch() {
        let l = leaves(200);
        for n in [2, 3, 4, 16] {
            let mut batch = LeanImt::from_leaves(config(n), &l).unwrap();
            let mut single = LeanImt::new(config(n));
            for leaf in &l {
                single.append(*leaf).unwrap();
            }
            assert_eq!(single.root(), batch.root(), "arity {n}");
            assert_eq!(single.dump(), batch.dump(), "arity {n}");
        }
    }

    #[test]
    fn lazy_appends_hash_only_at_commit_and_match_the_reference() {
        // Large enough for the parallel path (>= PARALLEL_MIN_PARENTS parents
        // at level 1) and, at N = 3 and 7, groups straddling chunk edges.
        let l = leaves(30_000);
        for n in [2, 3, 4, 7, 16] {
            let mut tree = LeanImt::new(config(n));
            let mut appended = 0;
            for (round, take) in [1usize, 127, 128, 129, 5_000, 1, 24_614]
                .into_iter()
                .enumerate()
            {
                tree.append_batch(&l[appended..appended + take]).unwrap();
                appended += take;
                assert!(!tree.is_committed());
                assert!(matches!(
                    tree.view(appended as u64),
                    Err(TreeError::Uncommitted { .. })
                ));
                if round % 2 == 1 {
                    let want = spec_root(n, &l[..appended]);
                    assert_eq!(tree.root(), Some(want), "arity {n} after {appended}");
                    assert!(tree.view(appended as u64).is_ok());
                }
            }
            assert_eq!(tree.root(), Some(spec_root(n, &l)), "arity {n}");
        }
    }

    /// The spec, level by level over plain vectors (the testkit's reference
    /// depends on this crate, so unit tests carry their own).
    fn spec_root(n: u64, leaves: &[Hash]) -> Hash {
        let mut level = leaves.to_vec();
        while level.len() > 1 {
            level = level
                .chunks(to_usize(n))
                .map(|g| {
                    if g.len() == 1 {
                        g[0]
                    } else {
                        HashKind::Blake3.hash_children(g)
                    }
                })
                .collect();
        }
        level[0]
    }

    #[test]
    fn empty_batch_is_refused() {
        let mut tree = LeanImt::new(config(2));
        assert_eq!(tree.append_batch(&[]), Err(TreeError::EmptyBatch));
    }

    #[test]
    fn max_depth_refuses_an_overflowing_append_and_changes_nothing() {
        let l = leaves(17);
        let mut tree = LeanImt::new(config(4).with_max_depth(2));
        tree.append_batch(&l[..15]).unwrap();
        let before = tree.head();
        let err = tree.append_batch(&l[15..17]).unwrap_err();
        assert_eq!(
            err,
            TreeError::CapacityExceeded {
                size: 15,
                appending: 2,
                capacity: 16,
                arity: 4,
                max_depth: 2
            }
        );
        assert_eq!(tree.head(), before);
        tree.append(l[15]).unwrap();
        assert!(tree.append(l[16]).is_err());
        assert_eq!(tree.size(), 16);
        // Depth 0 holds exactly one leaf.
        let mut tiny = LeanImt::new(config(2).with_max_depth(0));
        tiny.append(l[0]).unwrap();
        assert!(tiny.append(l[1]).is_err());
    }

    #[test]
    fn poseidon_tree_refuses_non_canonical_leaves_without_change() {
        let cfg = TreeConfig::new(Arity::new(2).unwrap(), HashKind::Poseidon);
        let mut tree = LeanImt::new(cfg);
        let bad = [0xff; 32];
        let err = tree.append_batch(&[leaves(1)[0], bad]).unwrap_err();
        assert_eq!(
            err,
            TreeError::NonCanonicalLeaf {
                position: 1,
                leaf: bad
            }
        );
        assert!(
            err.to_string()
                .contains("not a canonical BN254 field element")
        );
        assert!(tree.is_empty());
    }

    #[test]
    fn view_at_every_earlier_size_equals_a_tree_built_to_that_size() {
        let l = leaves(70);
        for n in [2, 3, 4, 5, 16] {
            let mut tree = LeanImt::from_leaves(config(n), &l).unwrap();
            for size in 0..=70u64 {
                let mut old = LeanImt::from_leaves(config(n), &l[..to_usize(size)]).unwrap();
                let view = tree.at_size(size).unwrap();
                assert_eq!(view.root(), old.root(), "arity {n} size {size}");
                for (level, nodes) in old.dump().iter().enumerate() {
                    for (index, node) in nodes.iter().enumerate() {
                        assert_eq!(view.node(level_number(level), index as u64), *node);
                    }
                }
            }
            assert!(tree.at_size(71).is_err());
        }
    }

    #[test]
    fn a_snapshot_is_isolated_from_later_appends_and_answers_like_a_fresh_tree() {
        let l = leaves(300);
        for n in [2, 3, 4, 16] {
            let mut tree = LeanImt::new(config(n));
            let mut snapshots = Vec::new();
            for (i, leaf) in l.iter().enumerate() {
                tree.append(*leaf).unwrap();
                if i % 7 == 0 || i < 20 {
                    snapshots.push(tree.snapshot());
                }
            }
            let empty = LeanImt::new(config(n)).snapshot();
            assert_eq!(empty.head(), TreeHead::EMPTY);
            assert!(empty.prove(0).is_err());
            for snapshot in &snapshots {
                let size = snapshot.size();
                let mut fresh = LeanImt::from_leaves(config(n), &l[..to_usize(size)]).unwrap();
                assert_eq!(snapshot.head(), fresh.head(), "arity {n} size {size}");
                assert_eq!(snapshot.leaf(size - 1), Some(l[to_usize(size) - 1]));
                assert_eq!(snapshot.leaf(size), None);
                for index in [0, size / 2, size - 1] {
                    let proof = snapshot.prove(index).unwrap();
                    assert_eq!(proof, fresh.prove(index).unwrap());
                    proof
                        .verify(config(n).arity, HashKind::Blake3, &fresh.head())
                        .unwrap();
                }
                for old in [0, 1, size / 3, size] {
                    assert_eq!(
                        snapshot.prove_at(0, old.max(1)).unwrap(),
                        fresh.prove_at(0, old.max(1)).unwrap()
                    );
                    assert_eq!(
                        snapshot.prove_consistency(old, size).unwrap(),
                        fresh.prove_consistency(old, size).unwrap()
                    );
                }
                // The final nodes plus the edge are exactly the fresh tree's levels.
                for (level, nodes) in fresh.dump().iter().enumerate() {
                    let stored: Vec<Hash> = snapshot
                        .final_nodes(level_number(level))
                        .iter()
                        .copied()
                        .collect();
                    assert_eq!(stored[..], nodes[..nodes.len() - 1]);
                    assert_eq!(snapshot.edge()[level].1, *nodes.last().unwrap());
                }
            }
        }
    }

    #[test]
    fn truncating_to_every_size_equals_a_tree_built_to_that_size() {
        let l = leaves(70);
        let other = leaves(140)[70..].to_vec();
        for n in [2, 3, 4, 5, 16] {
            for size in 0..=70u64 {
                // Committed or not, with a snapshot sharing its memory or not.
                for (commit, share) in [(true, true), (false, false), (true, false)] {
                    let mut tree = LeanImt::from_leaves(config(n), &l).unwrap();
                    tree.append_batch(&l[..3].iter().map(|x| x.map(|b| !b)).collect::<Vec<_>>())
                        .unwrap();
                    if commit {
                        tree.commit();
                    }
                    let before = share.then(|| tree.snapshot());
                    tree.truncate(size).unwrap();
                    let mut fresh = LeanImt::from_leaves(config(n), &l[..to_usize(size)]).unwrap();
                    assert_eq!(tree.head(), fresh.head(), "arity {n} size {size}");
                    assert_eq!(tree.dump(), fresh.dump(), "arity {n} size {size}");
                    // The indices are reused, and the result is the tree of the new leaves.
                    tree.append_batch(&other[..5]).unwrap();
                    fresh.append_batch(&other[..5]).unwrap();
                    assert_eq!(tree.dump(), fresh.dump(), "arity {n} size {size} re-append");
                    if let Some(before) = before {
                        let mut old = LeanImt::from_leaves(config(n), &l).unwrap();
                        old.append_batch(&l[..3].iter().map(|x| x.map(|b| !b)).collect::<Vec<_>>())
                            .unwrap();
                        assert_eq!(before.head(), old.head());
                        assert_eq!(
                            before.prove(size.min(72)).unwrap(),
                            old.prove(size.min(72)).unwrap()
                        );
                    }
                }
            }
            let mut tree = LeanImt::from_leaves(config(n), &l).unwrap();
            assert_eq!(
                tree.truncate(71),
                Err(TreeError::TruncateBeyondSize { to: 71, size: 70 })
            );
            assert_eq!(tree.size(), 70);
        }
    }

    #[test]
    fn truncating_inside_a_shared_segment_leaves_the_snapshot_untouched() {
        // Level 0 spans two segments; the snapshot shares the first whole
        // one, and the re-appended leaves land inside it.
        let count = SEGMENT_LEN + 1000;
        let l = leaves(count);
        let mut tree = LeanImt::from_leaves(config(4), &l).unwrap();
        let before = tree.snapshot();
        let head = before.head();
        let cut = SEGMENT_LEN as u64 - 500;
        tree.truncate(cut).unwrap();
        let fresh_leaves: Vec<Hash> = l[..1200].iter().map(|x| x.map(|b| b ^ 0x5a)).collect();
        tree.append_batch(&fresh_leaves).unwrap();
        let mut want = l[..to_usize(cut)].to_vec();
        want.extend_from_slice(&fresh_leaves);
        assert_eq!(
            tree.head(),
            LeanImt::from_leaves(config(4), &want).unwrap().head()
        );
        assert_eq!(before.head(), head);
        for index in [0, cut - 1, cut, cut + 499, count as u64 - 1] {
            assert_eq!(before.leaf(index), Some(l[to_usize(index)]));
            before
                .prove(index)
                .unwrap()
                .verify(config(4).arity, HashKind::Blake3, &head)
                .unwrap();
        }
    }

    #[test]
    fn from_levels_rebuilds_a_tree_and_first_mismatch_finds_a_bad_node() {
        let l = leaves(1000);
        let mut tree = LeanImt::from_leaves(config(4), &l).unwrap();
        let copy = |tree: &LeanImt| -> Vec<Level> { tree.levels().to_vec() };
        let mut rebuilt = LeanImt::from_levels(config(4), copy(&tree)).unwrap();
        assert_eq!(rebuilt.head(), tree.head());
        assert_eq!(rebuilt.first_mismatch(), None);
        rebuilt.append(l[0]).unwrap();
        let mut more = l.clone();
        more.push(l[0]);
        assert_eq!(
            rebuilt.root(),
            LeanImt::from_leaves(config(4), &more).unwrap().root()
        );
        // A corrupted node is found at its level and index.
        let mut levels = copy(&tree);
        let mut bad: Vec<Hash> = levels[2].iter().copied().collect();
        bad[17][0] ^= 1;
        levels[2] = Level::default();
        levels[2].extend_from_slice(&bad);
        let corrupt = LeanImt::from_levels(config(4), levels).unwrap();
        assert_eq!(corrupt.first_mismatch(), Some((2, 17)));
        // Shapes that are not a tree are refused.
        let mut short = copy(&tree);
        short[1].resize(3);
        assert!(matches!(
            LeanImt::from_levels(config(4), short),
            Err(TreeError::LevelShape {
                level: 1,
                got: 3,
                want: 250
            })
        ));
        let mut topless = copy(&tree);
        topless.pop();
        assert!(matches!(
            LeanImt::from_levels(config(4), topless),
            Err(TreeError::LevelShape { .. })
        ));
        assert!(LeanImt::from_levels(config(4), vec![]).unwrap().is_empty());
        assert!(tree.root().is_some());
    }
}
