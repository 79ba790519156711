//! The shape of a tree as a function of its size and arity alone.
//!
//! Everything a verifier must derive (depth, level lengths, the group a node
//! belongs to, its position in it) lives here, as pure integer arithmetic, so
//! that the prover and the verifier share one definition. The free functions
//! describe a Lean tree; [`Shape`] describes either kind (a fixed-depth tree
//! has the same level lengths, and every one of its `depth` levels hashes).

use crate::Arity;
use crate::cast::to_usize;
use crate::kind::TreeKind;

/// What the shape arithmetic needs of a tree: its arity and, for a
/// fixed-depth tree, its depth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Children per internal node, at most.
    pub arity: Arity,
    /// `Some(D)` for a fixed-depth tree: D levels above the leaves
    /// whatever its size, each one hashing (partial groups are padded).
    pub fixed_depth: Option<u32>,
}

impl Shape {
    /// The shape of a Lean tree of `arity`.
    pub const fn lean(arity: Arity) -> Shape {
        Shape {
            arity,
            fixed_depth: None,
        }
    }

    /// The shape of a tree of `arity` and `kind`.
    pub const fn new(arity: Arity, kind: TreeKind) -> Shape {
        Shape {
            arity,
            fixed_depth: kind.fixed_depth(),
        }
    }

    /// Levels above the leaves at `size`: `depth(size)` for a Lean tree,
    /// the fixed depth for a fixed-depth one (whatever the size).
    #[inline]
    pub fn depth(&self, size: u64) -> u32 {
        match self.fixed_depth {
            None => depth(size, self.arity),
            Some(fixed) => fixed,
        }
    }

    /// The path of leaf `index` in the tree of `size` leaves.
    #[inline]
    pub fn path(&self, index: u64, size: u64) -> Path {
        let mut path = Path::new(index, size, self.arity);
        if let Some(fixed) = self.fixed_depth {
            path.pad_to = fixed;
        }
        path
    }

    /// The total number of siblings in a membership proof of `index` at `size`.
    pub fn membership_sibling_count(&self, index: u64, size: u64) -> usize {
        self.path(index, size)
            .map(|step| step.sibling_count())
            .sum()
    }

    /// The steps of a consistency proof from `old_size` to `new_size`
    /// (`0 < old_size <= new_size`), one per level below the new root.
    pub fn consistency_steps(
        &self,
        old_size: u64,
        new_size: u64,
    ) -> impl Iterator<Item = ConsistencyStep> + use<> {
        steps(
            old_size,
            new_size,
            self.arity,
            self.fixed_depth.unwrap_or(0),
        )
    }

    /// The total number of hashes (excluding the edge leaf) in a
    /// consistency proof from `old_size` to `new_size`; 0 when `old_size` is 0.
    pub fn consistency_hash_count(&self, old_size: u64, new_size: u64) -> usize {
        if old_size == 0 {
            return 0;
        }
        self.consistency_steps(old_size, new_size)
            .map(|step| step.left + step.right)
            .sum()
    }
}

/// The number of nodes at `level` in a tree of `size` leaves: ceil(size / N^level).
#[inline]
pub fn level_len(size: u64, arity: Arity, level: u32) -> u64 {
    match arity.as_u64().checked_pow(level) {
        Some(span) => size.div_ceil(span),
        // N^level exceeds every u64 size: the level holds one node if any.
        None => u64::from(size > 0),
    }
}

/// The depth of a tree of `size` leaves: ceil(log_N(size)), 0 for 0 or 1 leaf.
#[inline]
pub fn depth(size: u64, arity: Arity) -> u32 {
    let mut depth = 0;
    let mut len = size;
    while len > 1 {
        len = len.div_ceil(arity.as_u64());
        depth += 1;
    }
    depth
}

/// How many leaves a tree of at most `max_depth` levels holds: N^max_depth,
/// or `None` when that exceeds `u64::MAX` (no limit a u64 size can reach).
#[inline]
pub fn capacity(arity: Arity, max_depth: u32) -> Option<u64> {
    arity.as_u64().checked_pow(max_depth)
}

/// One level of a leaf's path to the root.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PathStep {
    /// The level of the group (0 = leaves).
    pub level: u32,
    /// Index at `level` of the group's first member.
    pub group_start: u64,
    /// Members in the group that exist at the tree's size: 1 to N (a Lean
    /// tree lifts a lone member; a fixed-depth tree pads the rest with zeros).
    pub group_len: usize,
    /// The path node's position within the group.
    pub position: usize,
    /// Whether the tree pads a partial group to N with the level's zero
    /// (a fixed-depth tree) rather than lifting a lone member: then the
    /// level hashes whatever `group_len` is.
    pub pads: bool,
}

impl PathStep {
    /// Whether this level hashes (a Lean tree lifts a group of one unchanged).
    #[inline]
    pub fn hashes(&self) -> bool {
        self.group_len > 1 || self.pads
    }

    /// The number of siblings a proof carries at this level.
    #[inline]
    pub fn sibling_count(&self) -> usize {
        self.group_len - 1
    }
}

/// The groups on the path from leaf `index` to the root of a tree of `size`
/// leaves, one per level below the root (`depth(size)` steps for a Lean
/// tree, lifted levels included; the fixed depth for a fixed-depth tree,
/// see [`Shape::path`]). `index < size` is the caller's to check.
#[derive(Clone, Debug)]
pub struct Path {
    arity: u64,
    /// log2(arity) for power-of-two arities: shifts instead of divisions on
    /// the proof path (a 64-bit division costs tens of cycles).
    shift: Option<u32>,
    size_at_level: u64,
    index_at_level: u64,
    level: u32,
    /// A fixed-depth tree's depth: the path goes on to this level, one node
    /// per level past `depth(size)`; 0 for a Lean tree.
    pad_to: u32,
}

impl Path {
    /// The path of `index` in a Lean tree of `size` leaves.
    #[inline]
    pub fn new(index: u64, size: u64, arity: Arity) -> Path {
        debug_assert!(index < size, "index {index} must be below size {size}");
        let arity = arity.as_u64();
        Path {
            arity,
            shift: arity.is_power_of_two().then(|| arity.trailing_zeros()),
            size_at_level: size,
            index_at_level: index,
            level: 0,
            pad_to: 0,
        }
    }
}

impl Iterator for Path {
    type Item = PathStep;

    #[inline]
    fn next(&mut self) -> Option<PathStep> {
        // A Lean path ends at the level of one node; a fixed-depth one at
        // its depth (where its one node is, since size <= N^depth).
        if self.size_at_level <= 1 && self.level >= self.pad_to {
            return None;
        }
        let (parent, position, parent_len) = match self.shift {
            Some(shift) => (
                self.index_at_level >> shift,
                self.index_at_level & (self.arity - 1),
                // size >= 2 here, so size - 1 cannot underflow.
                ((self.size_at_level - 1) >> shift) + 1,
            ),
            None => (
                self.index_at_level / self.arity,
                self.index_at_level % self.arity,
                self.size_at_level.div_ceil(self.arity),
            ),
        };
        let group_start = self.index_at_level - position;
        let group_len = to_usize((self.size_at_level - group_start).min(self.arity));
        let step = PathStep {
            level: self.level,
            group_start,
            group_len,
            position: to_usize(position),
            pads: self.pad_to > 0,
        };
        self.size_at_level = parent_len;
        self.index_at_level = parent;
        self.level += 1;
        Some(step)
    }
}

/// The total number of siblings in a membership proof of `index` at `size`.
pub fn membership_sibling_count(index: u64, size: u64, arity: Arity) -> usize {
    Path::new(index, size, arity)
        .map(|step| step.sibling_count())
        .sum()
}

/// One level of a consistency proof from `old_size` to `new_size` leaves.
///
/// The old tree's right edge at `level` is node `edge = level_len(old) - 1`.
/// Its group in the new tree is `[group_start, group_start + left + 1 + right)`:
/// `left` complete nodes shared by both trees, the edge node, and `right`
/// nodes that only the new tree has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConsistencyStep {
    /// The level (0 = leaves).
    pub level: u32,
    /// Index at `level` of the old tree's right-edge node.
    pub edge: u64,
    /// Shared siblings left of the edge node in its group.
    pub left: usize,
    /// New-only siblings right of the edge node in its group (new tree).
    pub right: usize,
    /// Whether the old tree still has this level below its root, i.e. the
    /// edge node's old group is hashed or lifted into the old root (always,
    /// in a fixed-depth tree).
    pub below_old_root: bool,
}

/// The steps of a consistency proof from `old_size` to `new_size`
/// (`0 < old_size <= new_size`) of a Lean tree, one per level below the new root.
pub fn consistency_steps(
    old_size: u64,
    new_size: u64,
    arity: Arity,
) -> impl Iterator<Item = ConsistencyStep> {
    steps(old_size, new_size, arity, 0)
}

/// [`consistency_steps`], going on to level `pad_to` (a fixed-depth tree's
/// depth; 0 for a Lean tree).
fn steps(
    old_size: u64,
    new_size: u64,
    arity: Arity,
    pad_to: u32,
) -> impl Iterator<Item = ConsistencyStep> + use<> {
    debug_assert!(0 < old_size && old_size <= new_size);
    let n = arity.as_u64();
    let mut edge = old_size.saturating_sub(1);
    let mut old_len = old_size;
    let mut new_len = new_size;
    let mut level = 0;
    std::iter::from_fn(move || {
        if new_len <= 1 && level >= pad_to {
            return None;
        }
        let group_start = edge - edge % n;
        // Saturating: near u64::MAX sizes the group's nominal end overflows.
        let group_end = group_start.saturating_add(n).min(new_len);
        let step = ConsistencyStep {
            level,
            edge,
            left: to_usize(edge - group_start),
            right: to_usize(group_end - edge - 1),
            below_old_root: old_len > 1 || level < pad_to,
        };
        edge /= n;
        old_len = old_len.div_ceil(n);
        new_len = new_len.div_ceil(n);
        level += 1;
        Some(step)
    })
}

/// The total number of hashes (excluding the edge leaf) in a consistency
/// proof from `old_size` to `new_size`; 0 when `old_size` is 0.
pub fn consistency_hash_count(old_size: u64, new_size: u64, arity: Arity) -> usize {
    if old_size == 0 {
        return 0;
    }
    consistency_steps(old_size, new_size, arity)
        .map(|step| step.left + step.right)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cast::to_usize;

    fn arity(n: u64) -> Arity {
        Arity::new(n).unwrap()
    }

    #[test]
    fn depth_is_ceil_log() {
        let four = arity(4);
        let cases = [(0, 0), (1, 0), (2, 1), (4, 1), (5, 2), (16, 2), (17, 3)];
        for (size, want) in cases {
            assert_eq!(depth(size, four), want, "size {size}");
        }
        assert_eq!(depth(u64::MAX, arity(2)), 64);
        assert_eq!(depth(u64::MAX, arity(16)), 16);
        assert_eq!(depth(1 << 20, arity(2)), 20);
        assert_eq!(depth((1 << 20) + 1, arity(2)), 21);
    }

    #[test]
    fn level_len_matches_repeated_ceiling_division() {
        for n in [2, 3, 7, 16] {
            for size in 0..300u64 {
                let mut len = size;
                for level in 0..10 {
                    assert_eq!(level_len(size, arity(n), level), len);
                    len = len.div_ceil(n);
                }
            }
        }
        assert_eq!(level_len(u64::MAX, arity(16), 17), 1);
        assert_eq!(level_len(0, arity(16), 17), 0);
    }

    #[test]
    fn path_of_a_leaf_in_a_partial_tree() {
        // 10 leaves, N = 4: levels of 10, 3, 1 nodes. Leaf 9 is in group
        // [8, 10) at level 0, node 2 is alone... no: level 1 group [0, 3).
        let steps: Vec<_> = Path::new(9, 10, arity(4)).collect();
        assert_eq!(
            steps,
            vec![
                PathStep {
                    level: 0,
                    group_start: 8,
                    group_len: 2,
                    position: 1,
                    pads: false
                },
                PathStep {
                    level: 1,
                    group_start: 0,
                    group_len: 3,
                    position: 2,
                    pads: false
                },
            ]
        );
        // 9 leaves, N = 4: leaf 8 is alone in its group and is lifted.
        let steps: Vec<_> = Path::new(8, 9, arity(4)).collect();
        assert_eq!(steps[0].group_len, 1);
        assert!(!steps[0].hashes());
        assert_eq!(membership_sibling_count(8, 9, arity(4)), 2);
        assert_eq!(Path::new(0, 1, arity(4)).count(), 0);
    }

    #[test]
    fn consistency_steps_split_each_edge_group() {
        // 5 -> 11 leaves at N = 4. Level 0: edge 4, group [4, 8): left 0,
        // right 3. Level 1: edge 1, group [0, 3): left 1, right 1.
        let steps: Vec<_> = consistency_steps(5, 11, arity(4)).collect();
        assert_eq!(steps.len(), 2);
        assert_eq!((steps[0].edge, steps[0].left, steps[0].right), (4, 0, 3));
        assert_eq!((steps[1].edge, steps[1].left, steps[1].right), (1, 1, 1));
        assert!(steps[0].below_old_root && steps[1].below_old_root);
        // 3 -> 20 at N = 4: the old tree has depth 1, the new one depth 3.
        let steps: Vec<_> = consistency_steps(3, 20, arity(4)).collect();
        assert_eq!(steps.len(), 3);
        assert!(steps[0].below_old_root);
        assert!(!steps[1].below_old_root);
        assert_eq!(consistency_hash_count(0, 20, arity(4)), 0);
    }

    #[test]
    fn shapes_of_the_largest_sizes_do_not_overflow() {
        // Found by fuzzing the consistency decoder: a header of u64::MAX sizes.
        for n in [2, 3, 16] {
            let count = consistency_hash_count(u64::MAX, u64::MAX, arity(n));
            assert!(count <= (to_usize(n) - 1) * 64);
            assert!(
                membership_sibling_count(u64::MAX - 1, u64::MAX, arity(n))
                    <= (to_usize(n) - 1) * 64
            );
            assert_eq!(
                consistency_hash_count(1, u64::MAX, arity(n)),
                consistency_steps(1, u64::MAX, arity(n))
                    .map(|s| s.right)
                    .sum::<usize>()
            );
        }
    }

    #[test]
    fn a_fixed_depth_path_goes_on_to_its_depth_and_hashes_every_level() {
        // 5 leaves, N = 2, depth 4: levels of 5, 3, 2, 1, 1 nodes.
        let shape = Shape::new(
            arity(2),
            TreeKind::Fixed {
                depth: 4,
                zero: [0; 32],
            },
        );
        let steps: Vec<_> = shape.path(4, 5).collect();
        assert_eq!(steps.len(), 4);
        assert!(steps.iter().all(PathStep::hashes));
        let lens: Vec<usize> = steps.iter().map(|s| s.group_len).collect();
        assert_eq!(lens, [1, 1, 2, 1]);
        assert_eq!(shape.membership_sibling_count(4, 5), 1);
        assert_eq!(shape.depth(0), 4);
        assert_eq!(shape.path(0, 1).count(), 4);
        // Consistency from 1 to 5 walks all four levels; the old tree has
        // every one of them.
        let steps: Vec<_> = shape.consistency_steps(1, 5).collect();
        assert_eq!(steps.len(), 4);
        assert!(steps.iter().all(|s| s.below_old_root));
        assert_eq!(
            steps.iter().map(|s| (s.left, s.right)).collect::<Vec<_>>(),
            [(0, 1), (0, 1), (0, 1), (0, 0)]
        );
        assert_eq!(shape.consistency_hash_count(1, 5), 3);
        // A Lean shape is the free functions.
        let lean = Shape::lean(arity(3));
        assert_eq!(lean.path(9, 10).count(), Path::new(9, 10, arity(3)).count());
        assert_eq!(
            lean.consistency_hash_count(4, 20),
            consistency_hash_count(4, 20, arity(3))
        );
    }
}
