//! Proofs computed from tiles: a client that trusts a head (from a
//! checkpoint it trusts) fetches only the tiles a proof needs, recomputes
//! the levels between tile-levels and the right edge, builds the proof
//! with the core's shape arithmetic, and verifies it against the head
//! before handing it out. A tile of the wrong length is refused naming
//! the object; tiles that do not hash to the head make the proof fail,
//! and the error names every object it read.
//!
//! Invariant: the cache only keeps tiles a verified proof was computed
//! from; a proof that fails drops every tile it fetched.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use cairn_core::proof::FromNodesError;
use cairn_core::{ConsistencyProof, Hash, MembershipProof, TreeConfig, TreeError, TreeHead};

use crate::checkpoint::Checkpoint;
use crate::layout::{Layout, TileId};
use crate::publish::CHECKPOINT;
use crate::store::{CHECKPOINT_MAX_BYTES, ObjectError, TileSource};

/// Why a proof could not be computed from tiles.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
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
        "the tiles do not match the trusted head ({size} leaves, root {root}): {reason}; objects read: {objects}"
    )]
    Mismatch {
        /// The trusted size.
        size: u64,
        /// The trusted root, in hex.
        root: String,
        /// What the verifier said.
        reason: String,
        /// Every object the proof was computed from.
        objects: String,
    },
    /// The request does not fit the trusted tree.
    #[error(transparent)]
    Tree(#[from] TreeError),
    /// The checkpoint object is not one.
    #[error("{store}/checkpoint: {reason}")]
    Checkpoint {
        /// The store.
        store: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// Tiles a [`TileTree`] keeps by default (8 KiB each at most).
pub const DEFAULT_CACHED_TILES: usize = 64;

/// Reads and parses the checkpoint of the store `source`, naming the
/// object when it is missing, oversized or not a checkpoint.
pub fn read_checkpoint(source: &dyn TileSource) -> Result<Checkpoint, TileError> {
    let bytes = source.get(CHECKPOINT, CHECKPOINT_MAX_BYTES)?;
    Checkpoint::decode(&bytes).map_err(|reason| TileError::Checkpoint {
        store: source.location(),
        reason,
    })
}

/// [`read_checkpoint`], then `signature`'s check of the object (a
/// [`SignedBy`](crate::SignedBy) for a reader that holds verifier keys):
/// a refused signature is a [`TileError::Checkpoint`] naming the object.
pub fn read_checkpoint_checked(
    source: &dyn TileSource,
    signature: &dyn crate::mirror::CheckpointSignature,
) -> Result<Checkpoint, TileError> {
    let bytes = source.get(CHECKPOINT, CHECKPOINT_MAX_BYTES)?;
    let refuse = |reason: String| TileError::Checkpoint {
        store: source.location(),
        reason,
    };
    let checkpoint = Checkpoint::decode(&bytes).map_err(refuse)?;
    signature
        .verify_checkpoint_signature(&bytes, &checkpoint)
        .map_err(|reason| refuse(format!("signature: {reason}")))?;
    Ok(checkpoint)
}

/// A tree read through tiles, at one trusted head.
pub struct TileTree<'s> {
    config: TreeConfig,
    layout: Layout,
    head: TreeHead,
    source: &'s dyn TileSource,
    /// Tiles by id, with whether a verified proof used them.
    tiles: HashMap<TileId, (Arc<Vec<Hash>>, bool)>,
    /// Verified tiles in the order they were verified (eviction order).
    order: VecDeque<TileId>,
    capacity: usize,
    nodes: HashMap<(u32, u64), Hash>,
    /// Objects fetched, in order (for errors and figures).
    fetched: Vec<(String, usize)>,
}

impl std::fmt::Debug for TileTree<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TileTree")
            .field("layout", &self.layout)
            .field("head", &self.head)
            .field("tiles", &self.tiles.len())
            .finish()
    }
}

impl<'s> TileTree<'s> {
    /// The tree of `config` whose trusted head is `head`, read from `source`.
    pub fn new(config: TreeConfig, head: TreeHead, source: &'s dyn TileSource) -> TileTree<'s> {
        TileTree {
            config,
            layout: Layout::new(config.arity, config.hash),
            head,
            source,
            tiles: HashMap::new(),
            order: VecDeque::new(),
            capacity: DEFAULT_CACHED_TILES,
            nodes: HashMap::new(),
            fetched: Vec::new(),
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
        self.tiles.len()
    }

    /// Objects fetched so far and their bytes (a tile is fetched once).
    pub fn fetched(&self) -> &[(String, usize)] {
        &self.fetched
    }

    /// The membership proof of leaf `index` at the trusted head, verified.
    pub fn prove(&mut self, index: u64) -> Result<MembershipProof, TileError> {
        let (config, size) = (self.config, self.head.size);
        let proof = MembershipProof::from_nodes(config, index, size, |l, i| self.node(l, i))
            .map_err(unwrap_nodes);
        let verified = proof.and_then(|proof| {
            proof
                .verify(config.arity, config.hash, &self.head)
                .map_err(|e| self.mismatch(e.to_string()))?;
            Ok(proof)
        });
        self.settle(verified.is_ok());
        verified
    }

    /// After a proof: on success its tiles join the cache (evicting the
    /// oldest beyond the capacity); on failure every tile it fetched is
    /// dropped, with the nodes computed from them.
    fn settle(&mut self, verified: bool) {
        if verified {
            for (id, (_, ok)) in self.tiles.iter_mut() {
                if !*ok {
                    *ok = true;
                    self.order.push_back(*id);
                }
            }
            while self.order.len() > self.capacity {
                if let Some(old) = self.order.pop_front() {
                    self.tiles.remove(&old);
                    // Nodes may come from it: recompute them when needed.
                    self.nodes.clear();
                }
            }
            if self.nodes.len() > 1 << 16 {
                self.nodes.clear();
            }
        } else {
            self.tiles.retain(|_, (_, ok)| *ok);
            self.nodes.clear();
        }
    }

    /// The consistency proof from `old` (a head the caller trusts too) to
    /// the trusted head, verified against both.
    pub fn prove_consistency(&mut self, old: &TreeHead) -> Result<ConsistencyProof, TileError> {
        let (config, size) = (self.config, self.head.size);
        let proof = ConsistencyProof::from_nodes(config, old.size, size, |l, i| self.node(l, i))
            .map_err(unwrap_nodes);
        let verified = proof.and_then(|proof| {
            proof
                .verify(config.arity, config.hash, old, &self.head)
                .map_err(|e| self.mismatch(e.to_string()))?;
            Ok(proof)
        });
        self.settle(verified.is_ok());
        verified
    }

    fn mismatch(&self, reason: String) -> TileError {
        let objects: Vec<&str> = self.fetched.iter().map(|(p, _)| p.as_str()).collect();
        TileError::Mismatch {
            size: self.head.size,
            root: self
                .head
                .root
                .map_or_else(|| "none".into(), |r| cairn_core::hex::to_hex(&r)),
            reason,
            objects: objects.join(", "),
        }
    }

    /// Node `index` of tree `level` at the trusted head: from a tile if it
    /// is a final node of a tile-level, else hashed from its children.
    pub fn node(&mut self, level: u32, index: u64) -> Result<Hash, TileError> {
        if let Some(node) = self.nodes.get(&(level, index)) {
            return Ok(*node);
        }
        let size = self.head.size;
        let height = self.layout.height();
        let node = if level.is_multiple_of(height)
            && let Some(tile) = self.layout.tile_of(size, level / height, index)
        {
            let nodes = self.tile(tile)?;
            nodes[(index - tile.index * self.layout.width()) as usize]
        } else {
            if level == 0 {
                // Every leaf below the size is final, so in a tile.
                return Err(TreeError::IndexOutOfRange { index, size }.into());
            }
            let below = cairn_core::shape::level_len(size, self.config.arity, level - 1);
            let n = self.config.arity.as_u64();
            let first = index * n;
            let end = (first + n).min(below);
            if first >= end {
                return Err(TreeError::IndexOutOfRange { index, size }.into());
            }
            if end - first == 1 {
                // A lone child is lifted unchanged.
                self.node(level - 1, first)?
            } else {
                let mut children = Vec::with_capacity((end - first) as usize);
                for child in first..end {
                    children.push(self.node(level - 1, child)?);
                }
                self.config.hash.hash_children(&children)
            }
        };
        self.nodes.insert((level, index), node);
        Ok(node)
    }

    fn tile(&mut self, tile: TileId) -> Result<Arc<Vec<Hash>>, TileError> {
        if let Some((nodes, _)) = self.tiles.get(&tile) {
            return Ok(Arc::clone(nodes));
        }
        let path = self.layout.path(tile);
        let bytes = self.source.get(&path, tile.width * 32)?;
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
        let nodes: Vec<Hash> = bytes
            .chunks_exact(32)
            .map(|c| c.try_into().expect("32 bytes"))
            .collect();
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
