//! What a tree is ([`TreeConfig`]: arity, hash, kind, maximum depth) and
//! what a verifier trusts of it ([`TreeHead`]: a size and its root). Plain
//! values with no behaviour beyond the arithmetic of their fields; the
//! tree, its checks and its proofs build on them.

use crate::Arity;
use crate::hash::{Hash, HashKind};
use crate::kind::{KindError, TreeKind};
use crate::shape::{self, Shape};

/// What a tree is: chosen at creation, stored by the database, never changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreeConfig {
    /// Children per internal node, at most.
    pub arity: Arity,
    /// The node hash.
    pub hash: HashKind,
    /// If set, appends that would make the tree deeper than this fail
    /// (for Lean trees that must fit a fixed-depth circuit; a fixed-depth
    /// tree takes none).
    pub max_depth: Option<u32>,
    /// The tree's kind: Lean (the default) or fixed-depth.
    pub kind: TreeKind,
}

impl TreeConfig {
    /// A Lean tree of `arity` and `hash` with no maximum depth.
    pub const fn new(arity: Arity, hash: HashKind) -> TreeConfig {
        TreeConfig {
            arity,
            hash,
            max_depth: None,
            kind: TreeKind::Lean,
        }
    }

    /// The same tree limited to `max_depth` levels.
    pub const fn with_max_depth(self, max_depth: u32) -> TreeConfig {
        TreeConfig {
            max_depth: Some(max_depth),
            ..self
        }
    }

    /// The same arity and hash as a tree of `kind`.
    pub const fn with_kind(self, kind: TreeKind) -> TreeConfig {
        TreeConfig { kind, ..self }
    }

    /// Whether the fields make a tree: the kind fits the hash (see
    /// [`TreeKind::check`]) and a fixed-depth tree has no maximum depth.
    pub fn check(&self) -> Result<(), KindError> {
        self.kind.check(self.hash)?;
        if let (Some(depth), Some(max_depth)) = (self.kind.fixed_depth(), self.max_depth) {
            return Err(KindError::MaxDepth { depth, max_depth });
        }
        Ok(())
    }

    /// The depth that bounds the tree, if any: the maximum depth of a Lean
    /// tree, the depth of a fixed-depth one.
    pub const fn depth_limit(&self) -> Option<u32> {
        match self.kind.fixed_depth() {
            Some(depth) => Some(depth),
            None => self.max_depth,
        }
    }

    /// The most leaves the tree may hold (N^depth limit), if limited within `u64`.
    pub fn capacity(&self) -> Option<u64> {
        self.depth_limit()
            .and_then(|d| shape::capacity(self.arity, d))
    }

    /// What the shape arithmetic needs: arity and fixed depth.
    pub const fn shape(&self) -> Shape {
        Shape::new(self.arity, self.kind)
    }

    /// Levels above the leaves at `size`: `ceil(log_N(size))` for a Lean
    /// tree, the fixed depth for a fixed-depth one.
    pub fn depth_at(&self, size: u64) -> u32 {
        self.shape().depth(size)
    }

    /// How many levels (leaves included) the tree of `size` leaves keeps:
    /// 1 while it is empty, else its depth + 1.
    pub(crate) fn levels_len(&self, size: u64) -> usize {
        if size == 0 {
            1
        } else {
            self.depth_at(size) as usize + 1
        }
    }

    /// The root of the empty tree: `None` for a Lean tree (it has none),
    /// `zeros[depth]` for a fixed-depth one (computed: `depth` hashes).
    pub fn empty_root(&self) -> Option<Hash> {
        self.kind.zeros(self.arity, self.hash).last().copied()
    }

    /// Whether the empty tree has a root (a fixed-depth tree's
    /// `zeros[depth]`); a Lean tree's has none.
    pub const fn empty_has_root(&self) -> bool {
        !matches!(self.kind, TreeKind::Lean)
    }

    /// The head of the empty tree (see [`TreeConfig::empty_root`]).
    pub fn empty_head(&self) -> TreeHead {
        TreeHead {
            size: 0,
            root: self.empty_root(),
        }
    }
}

/// A tree's size and root as a verifier trusts them: the root of the tree
/// with exactly `size` leaves. The empty Lean tree has no root; the empty
/// fixed-depth tree's root is its `zeros[depth]`. `Debug` shows
/// the root in hex; with the `serde` feature a head serializes as
/// `{"size": S, "root": "0x.." | null}`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct TreeHead {
    /// Number of leaves.
    pub size: u64,
    /// The root: `None` exactly when `size` is 0 in a Lean tree; always
    /// present in a fixed-depth tree.
    #[cfg_attr(feature = "serde", serde(with = "crate::hex::serde_option"))]
    pub root: Option<Hash>,
}

impl std::fmt::Debug for TreeHead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TreeHead")
            .field("size", &self.size)
            .field("root", &crate::hex::HexOption(self.root.as_ref()))
            .finish()
    }
}

impl TreeHead {
    /// The head of a non-empty tree.
    pub const fn new(size: u64, root: Hash) -> TreeHead {
        TreeHead {
            size,
            root: Some(root),
        }
    }

    /// The head of the empty Lean tree (a fixed-depth tree's empty head
    /// has a root: [`TreeConfig::empty_head`]).
    pub const EMPTY: TreeHead = TreeHead {
        size: 0,
        root: None,
    };
}
