//! [`View`]: the tree as it was at an earlier (or the current) size, read
//! from the stored levels of a tree or snapshot without rebuilding it: only
//! the right edge at the view's size is recomputed, by the kind's group
//! rule. What the provers read nodes through.

use std::borrow::Cow;

use crate::cast::to_usize;
use crate::config::{TreeConfig, TreeHead};
use crate::error::TreeError;
use crate::hash::Hash;
use crate::kind::Zeros;
use crate::level::Level;

/// The tree as it was at an earlier (or the current) size, derived from the
/// current tree without rebuilding it.
///
/// A node that covers only leaves below `size` is the same in both trees;
/// at each level only the last node of the smaller tree can differ, so the
/// view recomputes that right edge once, bottom-up (at most N - 1 stored
/// siblings and one hash per level). A view of the current size reads the
/// stored nodes directly and allocates nothing.
#[derive(Clone, Debug)]
pub struct View<'a> {
    levels: &'a [Level],
    config: TreeConfig,
    zeros: &'a Zeros,
    size: u64,
    /// `edge[k]` = (index, value) of the last node of level k at `size`,
    /// read instead of the stored one. Empty when the stored levels are the
    /// tree at `size` exactly.
    edge: Cow<'a, [(u64, Hash)]>,
}

impl<'a> View<'a> {
    /// `levels` hold the tree at its full size, except that where
    /// `stored_edge` is non-empty the last node of each level is in it
    /// rather than in `levels` (a snapshot).
    pub(crate) fn new(
        levels: &'a [Level],
        config: TreeConfig,
        zeros: &'a Zeros,
        stored_edge: &'a [(u64, Hash)],
        size: u64,
    ) -> Result<View<'a>, TreeError> {
        let tree_size = match stored_edge.first() {
            Some(&(last, _)) => last + 1,
            None => levels[0].len() as u64,
        };
        if size > tree_size {
            return Err(TreeError::SizeBeyondTree { size, tree_size });
        }
        if size == tree_size || size == 0 {
            return Ok(View {
                levels,
                config,
                zeros,
                size,
                edge: Cow::Borrowed(if size == 0 { &[] } else { stored_edge }),
            });
        }
        // Every node read below lies strictly left of the stored edge at its
        // level (the path of leaf size - 1 < tree_size - 1, and its left
        // siblings), so it is in `levels` even for a snapshot.
        let arity = config.arity;
        let mut edge = Vec::with_capacity(config.depth_at(size) as usize + 1);
        let mut node = levels[0].at(to_usize(size - 1));
        edge.push((size - 1, node));
        let mut buffer = [[0u8; 32]; crate::hash::MAX_GROUP];
        for step in config.shape().path(size - 1, size) {
            if step.hashes() {
                // The path node is the last member of its group.
                let level = &levels[step.level as usize];
                level.copy_to(to_usize(step.group_start), &mut buffer[..step.position]);
                buffer[step.position] = node;
                node = crate::kind::group_parent(
                    config.hash,
                    arity.get(),
                    zeros.pad(step.level),
                    &buffer[..step.group_len],
                );
            }
            edge.push((step.group_start / arity.as_u64(), node));
        }
        Ok(View {
            levels,
            config,
            zeros,
            size,
            edge: Cow::Owned(edge),
        })
    }

    /// The tree's configuration.
    pub fn config(&self) -> TreeConfig {
        self.config
    }

    /// The view's size.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The root at this size; at size 0 `None` (a Lean tree) or
    /// `zeros[depth]` (a fixed-depth tree).
    pub fn root(&self) -> Option<Hash> {
        if self.size == 0 {
            self.zeros.empty_root()
        } else if self.edge.is_empty() {
            self.levels.last().and_then(Level::last)
        } else {
            self.edge.last().map(|&(_, root)| root)
        }
    }

    /// The head (size and root) at this size.
    pub fn head(&self) -> TreeHead {
        TreeHead {
            size: self.size,
            root: self.root(),
        }
    }

    /// The node at `level`, `index` of the tree at this size.
    ///
    /// # Panics
    /// If the node does not exist at this size (a programmer error: callers
    /// derive positions from `shape`).
    #[inline]
    pub fn node(&self, level: u32, index: u64) -> Hash {
        if let Some(&(edge_index, value)) = self.edge.get(level as usize) {
            assert!(
                index <= edge_index,
                "node {index} at level {level} is outside a tree of size {}",
                self.size
            );
            if index == edge_index {
                return value;
            }
        }
        self.levels[level as usize].at(to_usize(index))
    }

    /// The nodes `[start, start + len)` of `level` as one stored slice, when
    /// none of them is a right-edge node held apart (snapshots, older
    /// views) and they do not cross a segment boundary.
    #[inline(always)]
    pub(crate) fn group(&self, level: u32, start: u64, len: usize) -> Option<&'a [Hash]> {
        if let Some(&(edge_index, _)) = self.edge.get(level as usize)
            && start + len as u64 > edge_index
        {
            return None;
        }
        let levels: &'a [Level] = self.levels;
        levels[level as usize].run_from(to_usize(start)).get(..len)
    }

    /// For a group whose last member is the right-edge node held apart: its
    /// stored members before that node, and the node. `None` for any other
    /// group or a prefix that crosses a segment boundary.
    #[inline]
    pub(crate) fn group_ending_at_edge(
        &self,
        level: u32,
        start: u64,
        len: usize,
    ) -> Option<(&'a [Hash], Hash)> {
        let &(edge_index, value) = self.edge.get(level as usize)?;
        if len == 0 || start + len as u64 - 1 != edge_index {
            return None;
        }
        let levels: &'a [Level] = self.levels;
        let prefix = levels[level as usize]
            .run_from(to_usize(start))
            .get(..len - 1)?;
        Some((prefix, value))
    }

    /// Copies the nodes `[start, start + out.len())` of `level` into `out`.
    #[inline]
    pub(crate) fn nodes_into(&self, level: u32, start: u64, out: &mut [Hash]) {
        match self.edge.get(level as usize) {
            Some(&(edge_index, _)) if start + out.len() as u64 > edge_index => {
                for (offset, slot) in out.iter_mut().enumerate() {
                    *slot = self.node(level, start + offset as u64);
                }
            }
            _ => self.levels[level as usize].copy_to(to_usize(start), out),
        }
    }
}
