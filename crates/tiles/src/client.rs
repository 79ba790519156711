//! Proofs computed from tiles: a client that trusts a head (from a
//! checkpoint it trusts) fetches only the tiles a proof needs, recomputes
//! the levels between tile-levels and the right edge by the tree's group
//! rule (the core's [`GroupRule::node`]: a Lean tree lifts a lone member, a
//! fixed-depth tree pads a partial group with the level's zero), builds
//! the proof with the core's shape arithmetic, and verifies it against the
//! head before handing it out. A tile of the wrong length is refused naming
//! the object; tiles that do not hash to the head make the proof fail, and
//! the error names every object it read. A leaf tile inside a complete
//! bundle is read as its byte range of the bundle (`store::read_tile`).
//!
//! Invariant: the cache only keeps tiles a verified proof was computed
//! from; a proof that fails drops every tile it fetched.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use cairn_core::proof::FromNodesError;
use cairn_core::{
    ConsistencyProof, GroupRule, Hash, KnownNodes, MembershipProof, RecomputeError, TreeConfig,
    TreeError, TreeHead, VerifyError,
};

use crate::checkpoint::{Checkpoint, CheckpointError};
use crate::layout::{Layout, TileId};
use crate::publish::CHECKPOINT;
use crate::signed::{CheckpointSignature, SignatureError};
use crate::store::{CHECKPOINT_MAX_BYTES, ObjectError, TileSource, read_tile};

/// Why a proof could not be computed from tiles.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TileError {
    /// An object could not be fetched.
    #[error(transparent)]
    Fetch(#[from] ObjectError),
    /// An object is not what its name says (length).
    #[error("{path}: {got} bytes, a tile of {width} nodes has {want}")]
    Malformed {
        /// The object.
        path: String,
        /// Its length.
        got: usize,
        /// The length its name implies.
        want: usize,
        /// The nodes its name says it holds.
        width: u64,
    },
    /// The tiles do not hash to the trusted head: one of them is wrong.
    #[error(
        "the tiles do not match the trusted head ({size} leaves, root {}): {reason}; objects read: {}",
        show_root(root.as_ref()),
        objects.join(", ")
    )]
    Mismatch {
        /// The trusted size.
        size: u64,
        /// The trusted root.
        root: Option<Hash>,
        /// What the verifier said.
        reason: Box<VerifyError>,
        /// Every object the proof was computed from.
        objects: Vec<String>,
    },
    /// The request does not fit the trusted tree.
    #[error(transparent)]
    Tree(#[from] TreeError),
    /// The tiles of the trusted head do not hold a node they must (a
    /// store that lacks a leaf tile, say).
    #[error("the tiles of {size} leaves give no node {index} at level {level}")]
    NoNode {
        /// The level.
        level: u32,
        /// The index.
        index: u64,
        /// The trusted size.
        size: u64,
    },
    /// The checkpoint object is not one.
    #[error("{store}/{CHECKPOINT}: {error}")]
    Checkpoint {
        /// The store.
        store: String,
        /// What is wrong with it.
        error: CheckpointError,
    },
    /// The checkpoint's signature is refused by the reader's keys.
    #[error("{store}/{CHECKPOINT}: signature: {error}")]
    Signature {
        /// The store.
        store: String,
        /// Why it is refused.
        error: SignatureError,
    },
}

fn show_root(root: Option<&Hash>) -> String {
    root.map_or_else(|| "none".into(), cairn_core::hex::to_hex)
}

/// Tiles a [`TileTree`] keeps by default (8 KiB each at most).
pub const DEFAULT_CACHED_TILES: usize = 64;

/// Reads and parses the checkpoint of the store `source`, naming the
/// object when it is missing, oversized or not a checkpoint.
pub fn read_checkpoint(source: &dyn TileSource) -> Result<Checkpoint, TileError> {
    let bytes = source.get(CHECKPOINT, CHECKPOINT_MAX_BYTES)?;
    Checkpoint::decode(&bytes).map_err(|error| TileError::Checkpoint {
        store: source.location(),
        error,
    })
}

/// [`read_checkpoint`], then `signature`'s check of the object (a
/// [`SignedBy`](crate::SignedBy) for a reader that holds verifier keys):
/// a refused signature is a [`TileError::Signature`] naming the object.
pub fn read_checkpoint_checked(
    source: &dyn TileSource,
    signature: &dyn CheckpointSignature,
) -> Result<Checkpoint, TileError> {
    let bytes = source.get(CHECKPOINT, CHECKPOINT_MAX_BYTES)?;
    let checkpoint = Checkpoint::decode(&bytes).map_err(|error| TileError::Checkpoint {
        store: source.location(),
        error,
    })?;
    signature
        .verify_checkpoint_signature(&bytes, &checkpoint)
        .map_err(|error| TileError::Signature {
            store: source.location(),
            error,
        })?;
    Ok(checkpoint)
}

/// A tree read through tiles, at one trusted head.
pub struct TileTree<'s> {
    config: TreeConfig,
    rule: GroupRule,
    head: TreeHead,
    tiles: Tiles<'s>,
    /// Verified tiles in the order they were verified (eviction order).
    order: VecDeque<TileId>,
    capacity: usize,
}

/// The nodes a [`TileTree`] holds or can fetch: the final nodes of every
/// tile-level, and the nodes computed from them.
struct Tiles<'s> {
    layout: Layout,
    size: u64,
    source: &'s dyn TileSource,
    /// Tiles by id, with whether a verified proof used them.
    tiles: HashMap<TileId, (Arc<Vec<Hash>>, bool)>,
    /// Nodes computed from tiles.
    nodes: HashMap<(u32, u64), Hash>,
    /// Objects fetched, in order (for errors and figures); a leaf tile read
    /// from a bundle is named by its range, `bundle/{K}[a..b]`.
    fetched: Vec<(String, usize)>,
    /// Bundles found missing (a store of leaf tiles): not asked again.
    no_bundle: BTreeSet<u64>,
}

impl std::fmt::Debug for TileTree<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TileTree")
            .field("config", &self.config)
            .field("head", &self.head)
            .field("tiles", &self.tiles.tiles.len())
            .finish()
    }
}

impl<'s> TileTree<'s> {
    /// The tree of `config` whose trusted head is `head`, read from `source`.
    pub fn new(config: TreeConfig, head: TreeHead, source: &'s dyn TileSource) -> TileTree<'s> {
        TileTree {
            config,
            rule: config.group_rule(),
            head,
            tiles: Tiles {
                layout: Layout::new(config.arity, config.hash),
                size: head.size,
                source,
                tiles: HashMap::new(),
                nodes: HashMap::new(),
                fetched: Vec::new(),
                no_bundle: BTreeSet::new(),
            },
            order: VecDeque::new(),
            capacity: DEFAULT_CACHED_TILES,
        }
    }

    /// Keeps at most `tiles` tiles between proofs (at least the ones one
    /// proof needs are kept while it is computed).
    pub fn with_cache_capacity(mut self, tiles: usize) -> TileTree<'s> {
        self.capacity = tiles;
        self
    }

    /// The trusted head.
    pub fn head(&self) -> TreeHead {
        self.head
    }

    /// Tiles held now (all of them from verified proofs).
    pub fn cached_tiles(&self) -> usize {
        self.tiles.tiles.len()
    }

    /// Objects fetched so far and their bytes (a tile is fetched once).
    pub fn fetched(&self) -> &[(String, usize)] {
        &self.tiles.fetched
    }

    /// The membership proof of leaf `index` at the trusted head, verified.
    pub fn prove(&mut self, index: u64) -> Result<MembershipProof, TileError> {
        let (config, size) = (self.config, self.head.size);
        let proof = MembershipProof::from_nodes(config, index, size, |l, i| self.node(l, i))
            .map_err(unwrap_nodes);
        let verified = proof.and_then(|proof| {
            proof
                .verify_with(&config, &self.head)
                .map_err(|e| self.mismatch(e))?;
            Ok(proof)
        });
        self.settle(verified.is_ok());
        verified
    }

    /// After a proof: on success its tiles join the cache (evicting the
    /// oldest beyond the capacity); on failure every tile it fetched is
    /// dropped, with the nodes computed from them.
    fn settle(&mut self, verified: bool) {
        let tiles = &mut self.tiles;
        if verified {
            for (id, (_, ok)) in tiles.tiles.iter_mut() {
                if !*ok {
                    *ok = true;
                    self.order.push_back(*id);
                }
            }
            while self.order.len() > self.capacity {
                if let Some(old) = self.order.pop_front() {
                    tiles.tiles.remove(&old);
                    // Nodes may come from it: recompute them when needed.
                    tiles.nodes.clear();
                }
            }
            if tiles.nodes.len() > 1 << 16 {
                tiles.nodes.clear();
            }
        } else {
            tiles.tiles.retain(|_, (_, ok)| *ok);
            tiles.nodes.clear();
        }
    }

    /// The consistency proof from `old` (a head the caller trusts too) to
    /// the trusted head, verified against both.
    pub fn prove_consistency(&mut self, old: &TreeHead) -> Result<ConsistencyProof, TileError> {
        self.prove_consistency_over(old, |_, _| None)
    }

    /// [`TileTree::prove_consistency`] for a caller that holds the tree of
    /// `old` (a mirror): `known(level, index)` gives the nodes it has, and
    /// only the others are read from tiles. The caller's nodes need no
    /// trust beyond its own: the proof is verified against both heads.
    /// Only nodes whose subtrees are complete at `old`'s size are asked
    /// for (those are the same in the new tree).
    pub fn prove_consistency_over(
        &mut self,
        old: &TreeHead,
        known: impl Fn(u32, u64) -> Option<Hash>,
    ) -> Result<ConsistencyProof, TileError> {
        let (config, size) = (self.config, self.head.size);
        let n = config.arity.as_u64();
        let complete_at_old = |level: u32, index: u64| {
            n.checked_pow(level)
                .and_then(|span| (index + 1).checked_mul(span))
                .is_some_and(|end| end <= old.size)
        };
        let proof = ConsistencyProof::from_nodes(config, old.size, size, |l, i| {
            match complete_at_old(l, i).then(|| known(l, i)).flatten() {
                Some(node) => Ok(node),
                None => self.node(l, i),
            }
        })
        .map_err(unwrap_nodes);
        let verified = proof.and_then(|proof| {
            proof
                .verify_with(&config, old, &self.head)
                .map_err(|e| self.mismatch(e))?;
            Ok(proof)
        });
        self.settle(verified.is_ok());
        verified
    }

    fn mismatch(&self, reason: VerifyError) -> TileError {
        TileError::Mismatch {
            size: self.head.size,
            root: self.head.root,
            reason: Box::new(reason),
            objects: self.tiles.fetched.iter().map(|(p, _)| p.clone()).collect(),
        }
    }

    /// The root the tiles hash to at the head's size, computed from them
    /// alone (the head's own root is not consulted): a reader compares the
    /// two to tell a checkpoint that disagrees with its tiles.
    pub fn tiles_root(&mut self) -> Result<Option<Hash>, TileError> {
        let size = self.head.size;
        if size == 0 {
            return Ok(self.rule.empty_root());
        }
        self.node(self.rule.depth(size), 0).map(Some)
    }

    /// Node `index` of tree `level` at the trusted head: from a tile if it
    /// is a final node of a tile-level, else computed from its children.
    pub fn node(&mut self, level: u32, index: u64) -> Result<Hash, TileError> {
        let size = self.head.size;
        self.rule
            .node(size, level, index, &mut self.tiles)
            .map_err(|error| match error {
                RecomputeError::Source(error) => error,
                RecomputeError::NoSuchNode {
                    level: 0,
                    index,
                    size,
                } => TileError::Tree(TreeError::IndexOutOfRange { index, size }),
                RecomputeError::NoSuchNode { level, index, size } => {
                    TileError::NoNode { level, index, size }
                }
                RecomputeError::MissingLeaf { index } => TileError::NoNode {
                    level: 0,
                    index,
                    size,
                },
            })
    }
}

impl KnownNodes for Tiles<'_> {
    type Error = TileError;

    fn known(&mut self, level: u32, index: u64) -> Result<Option<Hash>, TileError> {
        if let Some(node) = self.nodes.get(&(level, index)) {
            return Ok(Some(*node));
        }
        let height = self.layout.height();
        if !level.is_multiple_of(height) {
            return Ok(None);
        }
        let Some(tile) = self.layout.tile_of(self.size, level / height, index) else {
            return Ok(None);
        };
        let nodes = self.tile(tile)?;
        let offset = index - tile.index * self.layout.width();
        Ok(usize::try_from(offset)
            .ok()
            .and_then(|offset| nodes.get(offset))
            .copied())
    }

    fn computed(&mut self, level: u32, index: u64, node: &Hash) {
        self.nodes.insert((level, index), *node);
    }
}

impl Tiles<'_> {
    fn tile(&mut self, tile: TileId) -> Result<Arc<Vec<Hash>>, TileError> {
        if let Some((nodes, _)) = self.tiles.get(&tile) {
            return Ok(Arc::clone(nodes));
        }
        let (bytes, path) = read_tile(
            self.source,
            &self.layout,
            self.size,
            tile,
            &mut self.no_bundle,
        )?;
        let want = tile.width as usize * 32;
        if bytes.len() != want {
            return Err(TileError::Malformed {
                path,
                got: bytes.len(),
                want,
                width: tile.width,
            });
        }
        self.fetched.push((path, bytes.len()));
        let nodes: Vec<Hash> = bytes.as_chunks::<32>().0.to_vec();
        let nodes = Arc::new(nodes);
        self.tiles.insert(tile, (Arc::clone(&nodes), false));
        Ok(nodes)
    }
}

fn unwrap_nodes(error: FromNodesError<TileError>) -> TileError {
    match error {
        FromNodesError::Tree(error) => TileError::Tree(error),
        FromNodesError::Source(error) => error,
    }
}
