//! [`Snapshot`]: an immutable copy of a tree at one size that shares the
//! tree's memory. Its final nodes are shared segments that no writer
//! touches again; the one node per level that may still change is copied
//! into `edge`, so nothing the tree does later changes what it answers.

use crate::config::{TreeConfig, TreeHead};
use crate::error::TreeError;
use crate::hash::Hash;
use crate::kind::Zeros;
use crate::level::Level;
use crate::view::View;

/// An immutable copy of a tree at one size, sharing the tree's memory
/// (see [`LeanImt::snapshot`](crate::LeanImt::snapshot)). Cheap to take, `Send + Sync`, never
/// changed by what the tree does after: for serving proofs from other
/// threads while appends continue, and for writing checkpoints without
/// holding the writer's lock.
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub(crate) config: TreeConfig,
    pub(crate) zeros: Zeros,
    pub(crate) size: u64,
    /// `levels[k]`: the final nodes of level k (all but the last).
    pub(crate) levels: Vec<Level>,
    /// `edge[k]` = (index, value) of the last node of level k.
    pub(crate) edge: Vec<(u64, Hash)>,
}

impl Snapshot {
    /// The tree's configuration.
    pub fn config(&self) -> TreeConfig {
        self.config
    }

    /// Number of leaves.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Levels above the leaves (see [`LeanImt::depth`](crate::LeanImt::depth)).
    pub fn depth(&self) -> u32 {
        self.config.depth_at(self.size)
    }

    /// The root (see [`LeanImt::root`](crate::LeanImt::root)).
    pub fn root(&self) -> Option<Hash> {
        self.edge
            .last()
            .map(|&(_, root)| root)
            .or_else(|| self.zeros.empty_root())
    }

    /// Size and root.
    pub fn head(&self) -> TreeHead {
        TreeHead {
            size: self.size,
            root: self.root(),
        }
    }

    /// The leaf at `index`, if present.
    pub fn leaf(&self, index: u64) -> Option<Hash> {
        if index >= self.size {
            return None;
        }
        // Leaves are never rehashed: every one but the last is final.
        match usize::try_from(index)
            .ok()
            .and_then(|i| self.levels[0].get(i))
        {
            Some(leaf) => Some(*leaf),
            None => Some(self.edge[0].1),
        }
    }

    /// A view at `size` (at most the snapshot's size), for proofs.
    pub fn view(&self, size: u64) -> Result<View<'_>, TreeError> {
        View::new(&self.levels, self.config, &self.zeros, &self.edge, size)
    }

    /// The view at the snapshot's own size (what its proofs read).
    pub(crate) fn view_full(&self) -> View<'_> {
        View::new(
            &self.levels,
            self.config,
            &self.zeros,
            &self.edge,
            self.size,
        )
        .expect("own size")
    }

    /// The final nodes of `level` (every node but the last): what a
    /// checkpoint may write, since none of them can change again.
    pub fn final_nodes(&self, level: u32) -> &Level {
        &self.levels[level as usize]
    }

    /// Per level, (index, value) of its last node, the one that may still change.
    pub fn edge(&self) -> &[(u64, Hash)] {
        &self.edge
    }
}
