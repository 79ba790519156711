//! The witness tracker: marked leaves, the adopted head, the retained
//! checkpoints, and the final nodes their witnesses read. It does no I/O:
//! [`Tracker::plan`] reads a checkpoint object and says which whole tiles
//! it needs, the caller fetches them (from a directory, HTTP, a browser's
//! `fetch`) and feeds them to the [`SyncPlan`], and [`Tracker::finish`]
//! adopts the new head only once every marked leaf's witness verifies
//! against it and the new tree extends the adopted one.
//!
//! Invariant: every node held is final and was read from tiles that
//! verified against an adopted head (or from a checksummed state whose
//! witnesses verify again on load); after a sync the held nodes are exactly
//! those the witnesses at the adopted head and at every retained
//! checkpoint read.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use cairn_core::proof::FromNodesError;
use cairn_core::{
    ConsistencyProof, GroupRule, Hash, MembershipProof, RecomputeError, TreeConfig, TreeHead,
    TreeKind, VerifyError,
};
use cairn_tiles::{BundleRange, Checkpoint, CheckpointSignature, Layout, TileId};

use crate::error::WalletError;
use crate::nodes::{Key, Mode, Source, Unfed};

/// Checkpoints a tracker retains by default (a reorganisation of up to
/// this many blocks rewinds with no network).
pub const DEFAULT_WINDOW: usize = 100;

/// A retained checkpoint: the head and marks at a block, and the keys of
/// the held nodes its witnesses read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Retained {
    pub block: u64,
    pub head: TreeHead,
    pub marked: BTreeSet<u64>,
    pub keys: BTreeSet<Key>,
}

/// Membership witnesses of marked leaves, kept current from tiles.
#[derive(Clone)]
pub struct Tracker {
    pub(crate) config: TreeConfig,
    pub(crate) rule: GroupRule,
    pub(crate) layout: Layout,
    pub(crate) head: TreeHead,
    pub(crate) marked: BTreeSet<u64>,
    /// The keys the witnesses at `head` read (of the marks synced).
    pub(crate) keys: BTreeSet<Key>,
    pub(crate) checkpoints: VecDeque<Retained>,
    pub(crate) window: usize,
    pub(crate) nodes: BTreeMap<Key, Hash>,
}

impl std::fmt::Debug for Tracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracker")
            .field("config", &self.config)
            .field("head", &self.head)
            .field("marked", &self.marked)
            .field("checkpoints", &self.checkpoints.len())
            .field("nodes", &self.nodes.len())
            .finish()
    }
}

/// One tile a sync needs: its path in the store and the most bytes to
/// accept for it, and, for a leaf tile inside a complete bundle, the byte
/// range of the bundle that holds it (docs/spec.md 8.1): read that range
/// first, and the tile's own object only when the bundle is missing (a
/// store of the older layout). Either way the bytes are fed under `path`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TileRequest {
    /// The tile's name (`tile/{t}/{K}` or `tile/{t}/{K}.p/{w}`).
    pub path: String,
    /// Its exact length: 32 bytes per node.
    pub max_bytes: u64,
    /// Where its bytes lie in a bundle, for a leaf tile of a complete one.
    pub bundle: Option<BundleRange>,
}

/// A sync in progress: the verified checkpoint's head and the tiles it
/// needs, fed one by one.
#[derive(Debug)]
pub struct SyncPlan {
    checkpoint: Checkpoint,
    from: TreeHead,
    marked: BTreeSet<u64>,
    wanted: BTreeMap<String, TileId>,
    fed: HashMap<TileId, Vec<Hash>>,
    bytes: usize,
}

/// What a finished sync adopted and read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncReport {
    /// The head adopted.
    pub head: TreeHead,
    /// Tiles read.
    pub tiles: usize,
    /// Their bytes.
    pub bytes: usize,
    /// Nodes held after the sync.
    pub nodes: usize,
}

impl SyncPlan {
    /// The head the sync adopts once it finishes.
    pub fn head(&self) -> TreeHead {
        self.checkpoint.head
    }

    /// Every tile the sync needs, in path order.
    pub fn wanted(&self) -> Vec<TileRequest> {
        self.wanted
            .iter()
            .map(|(path, tile)| TileRequest {
                path: path.clone(),
                max_bytes: tile.width * 32,
                bundle: self
                    .checkpoint
                    .layout()
                    .in_bundle(self.checkpoint.head.size, *tile),
            })
            .collect()
    }

    /// The tiles asked for and not fed yet.
    pub fn missing(&self) -> Vec<String> {
        self.wanted
            .iter()
            .filter(|(_, tile)| !self.fed.contains_key(tile))
            .map(|(path, _)| path.clone())
            .collect()
    }

    /// Feeds the bytes of tile `path`: refused when the sync did not ask
    /// for it or its length is not its name's.
    pub fn feed(&mut self, path: &str, bytes: &[u8]) -> Result<(), WalletError> {
        let tile = *self
            .wanted
            .get(path)
            .ok_or_else(|| WalletError::UnexpectedTile { path: path.into() })?;
        let want = usize::try_from(tile.width * 32).expect("at most 8 KiB");
        let (nodes, rest) = bytes.as_chunks::<32>();
        if bytes.len() != want || !rest.is_empty() {
            return Err(WalletError::MalformedTile {
                path: path.into(),
                got: bytes.len(),
                want,
                width: tile.width,
            });
        }
        if self.fed.insert(tile, nodes.to_vec()).is_none() {
            self.bytes += bytes.len();
        }
        Ok(())
    }
}

impl Tracker {
    /// A tracker of the tree `config` (a Lean or fixed-depth tree; its
    /// maximum depth, which limits appends, is not part of it) at its empty
    /// head, retaining at most `window` checkpoints (at least one).
    pub fn new(config: TreeConfig, window: usize) -> Result<Tracker, WalletError> {
        let config = Checkpoint::tree_of(&config);
        if matches!(config.kind, TreeKind::Indexed) {
            return Err(WalletError::ForeignTree {
                got: Box::new(config),
                want: Box::new(config.with_kind(TreeKind::Lean)),
            });
        }
        Ok(Tracker {
            rule: config.group_rule(),
            layout: Layout::new(config.arity, config.hash),
            head: config.empty_head(),
            config,
            marked: BTreeSet::new(),
            keys: BTreeSet::new(),
            checkpoints: VecDeque::new(),
            window: window.max(1),
            nodes: BTreeMap::new(),
        })
    }

    /// The tree followed.
    pub fn config(&self) -> TreeConfig {
        self.config
    }

    /// The adopted head.
    pub fn head(&self) -> TreeHead {
        self.head
    }

    /// The marked leaves.
    pub fn marked(&self) -> impl Iterator<Item = u64> + '_ {
        self.marked.iter().copied()
    }

    /// The retained checkpoints' blocks, oldest first.
    pub fn checkpoints(&self) -> Vec<u64> {
        self.checkpoints.iter().map(|c| c.block).collect()
    }

    /// Final nodes held (32 bytes each, plus 9 of key in the state).
    pub fn held_nodes(&self) -> usize {
        self.nodes.len()
    }

    /// Marks leaf `index`: its witness is kept from the next sync on (a
    /// leaf beyond the adopted head is followed once the tree has it).
    pub fn mark(&mut self, index: u64) -> Result<(), WalletError> {
        if let Some(capacity) = self.config.capacity()
            && index >= capacity
        {
            return Err(WalletError::BeyondCapacity { index, capacity });
        }
        self.marked.insert(index);
        Ok(())
    }

    /// Stops keeping leaf `index`'s witness (its nodes go at the next sync
    /// unless a retained checkpoint still needs them). Whether it was marked.
    pub fn unmark(&mut self, index: u64) -> bool {
        self.marked.remove(&index)
    }

    /// Reads the checkpoint object `object` as fetched, checks its
    /// signature with `signature`, its tree against the tracker's and its
    /// head against the adopted one, and lists the tiles the sync needs.
    pub fn plan(
        &self,
        object: &[u8],
        signature: &dyn CheckpointSignature,
    ) -> Result<SyncPlan, WalletError> {
        let checkpoint = Checkpoint::decode(object).map_err(WalletError::Checkpoint)?;
        signature
            .verify_checkpoint_signature(object, &checkpoint)
            .map_err(WalletError::Signature)?;
        if checkpoint.tree != self.config {
            return Err(WalletError::ForeignTree {
                got: Box::new(checkpoint.tree),
                want: Box::new(self.config),
            });
        }
        let (new, old) = (checkpoint.head, self.head);
        if new.size < old.size {
            return Err(WalletError::Behind {
                got: new.size,
                have: old.size,
            });
        }
        if new.size == old.size && new.root != old.root {
            return Err(WalletError::Fork {
                size: new.size,
                got: new.root,
                have: old.root,
            });
        }
        let mut want = BTreeSet::new();
        let mut scratch = HashMap::new();
        let mut source = self.source(new.size, &mut scratch, Mode::Plan(&mut want));
        self.proofs(&old, new.size, &self.marked, &mut source)
            .map_err(|e| match e {
                Failed::Tree(e) => WalletError::Tree(e),
                Failed::Unfed(_) => unreachable!("the plan pass reads no fed tile"),
            })?;
        Ok(SyncPlan {
            checkpoint,
            from: old,
            marked: self.marked.clone(),
            wanted: want
                .into_iter()
                .map(|tile| (self.layout.path(tile), tile))
                .collect(),
            fed: HashMap::new(),
            bytes: 0,
        })
    }

    /// Finishes `plan`: computes every planned witness at its head and the
    /// consistency proof from the adopted head from the held nodes and the
    /// fed tiles, and adopts the head only if all of them verify. Then
    /// keeps only the nodes the witnesses at the new head and at the
    /// retained checkpoints read.
    pub fn finish(&mut self, plan: SyncPlan) -> Result<SyncReport, WalletError> {
        if plan.from != self.head {
            return Err(WalletError::StalePlan {
                planned: plan.from.size,
                have: self.head.size,
            });
        }
        if let Some(path) = plan.missing().into_iter().next() {
            return Err(WalletError::MissingTile { path });
        }
        let (old, new) = (self.head, plan.checkpoint.head);
        let tiles = || plan.wanted.keys().cloned().collect::<Vec<_>>();
        let mismatch = |reason: VerifyError| WalletError::Mismatch {
            size: new.size,
            root: new.root,
            reason: Box::new(reason),
            tiles: tiles(),
        };
        let mut found = HashMap::new();
        let mut source = self.source(new.size, &mut found, Mode::Read(&plan.fed));
        let (witnesses, consistency) = self
            .proofs(&old, new.size, &plan.marked, &mut source)
            .map_err(|e| match e {
                Failed::Tree(e) => WalletError::Tree(e),
                Failed::Unfed(Unfed(tile)) => WalletError::MissingTile {
                    path: self.layout.path(tile),
                },
            })?;
        if let Some(proof) = consistency {
            proof
                .verify_with(&self.config, &old, &new)
                .map_err(mismatch)?;
        }
        for proof in &witnesses {
            proof.verify_with(&self.config, &new).map_err(mismatch)?;
        }
        // Adopt: what the witnesses at the new head read, then keep only
        // what some head still needs.
        let mut keys = BTreeSet::new();
        let mut source = self.source(new.size, &mut found, Mode::Record(&mut keys));
        for index in plan.marked.iter().filter(|&&i| i < new.size) {
            self.witness_from(*index, new.size, &mut source)
                .expect("the read pass computed this witness from the same nodes");
        }
        self.record_frontier(new.size, &mut source)
            .expect("the read pass read the frontier");
        for key in &keys {
            if !self.nodes.contains_key(key) {
                let node = found.get(key).expect("a recorded node was held or found");
                self.nodes.insert(*key, *node);
            }
        }
        self.head = new;
        self.keys = keys;
        self.prune();
        Ok(SyncReport {
            head: new,
            tiles: plan.fed.len(),
            bytes: plan.bytes,
            nodes: self.nodes.len(),
        })
    }

    /// The witness of marked leaf `index` at the adopted head, verified
    /// against it. Its `to_zkkit_json`, `to_zkkit_circom_json` and
    /// `to_circom_json` give the formats the CLI prints.
    pub fn witness(&self, index: u64) -> Result<MembershipProof, WalletError> {
        if !self.marked.contains(&index) {
            return Err(WalletError::NotMarked { index });
        }
        let size = self.head.size;
        if index >= size {
            return Err(WalletError::NotInTree { index, size });
        }
        let mut hits = BTreeSet::new();
        let mut found = HashMap::new();
        let mut source = self.source(size, &mut found, Mode::Record(&mut hits));
        let proof = self.witness_from(index, size, &mut source)?;
        proof
            .verify_with(&self.config, &self.head)
            .map_err(|reason| WalletError::Mismatch {
                size,
                root: self.head.root,
                reason: Box::new(reason),
                tiles: Vec::new(),
            })?;
        Ok(proof)
    }

    /// Retains the adopted head and marks as `block`'s (blocks strictly
    /// increase), dropping the oldest checkpoint beyond the window.
    pub fn checkpoint(&mut self, block: u64) -> Result<(), WalletError> {
        if let Some(last) = self.checkpoints.back()
            && block <= last.block
        {
            return Err(WalletError::BlockOrder {
                block,
                last: last.block,
            });
        }
        self.checkpoints.push_back(Retained {
            block,
            head: self.head,
            marked: self.marked.clone(),
            keys: self.keys.clone(),
        });
        while self.checkpoints.len() > self.window {
            self.checkpoints.pop_front();
        }
        Ok(())
    }

    /// Returns to checkpoint `block`'s head and marks, with no network,
    /// forgetting the checkpoints after it. A block below the window is
    /// refused ([`WalletError::RewindBeyondWindow`]), as is one that was
    /// never checkpointed; either way nothing changes.
    pub fn rewind(&mut self, block: u64) -> Result<(), WalletError> {
        let Some(at) = self.checkpoints.iter().position(|c| c.block == block) else {
            let oldest = self.checkpoints.front().map(|c| c.block);
            if oldest.is_none_or(|oldest| block < oldest) {
                return Err(WalletError::RewindBeyondWindow {
                    block,
                    oldest,
                    window: self.window,
                });
            }
            return Err(WalletError::UnknownBlock {
                block,
                retained: self.checkpoints(),
            });
        };
        self.checkpoints.truncate(at + 1);
        let to = self.checkpoints.back().expect("just kept");
        self.head = to.head;
        self.marked = to.marked.clone();
        self.keys = to.keys.clone();
        // Nodes final only in later heads are no witness's at this one.
        self.prune();
        Ok(())
    }

    /// Keeps only the nodes the adopted head's and the retained
    /// checkpoints' witnesses read.
    pub(crate) fn prune(&mut self) {
        let keep: BTreeSet<Key> = self
            .checkpoints
            .iter()
            .flat_map(|c| c.keys.iter())
            .chain(self.keys.iter())
            .copied()
            .collect();
        self.nodes.retain(|key, _| keep.contains(key));
    }

    pub(crate) fn source<'a>(
        &'a self,
        size: u64,
        found: &'a mut HashMap<Key, Hash>,
        mode: Mode<'a>,
    ) -> Source<'a> {
        Source {
            layout: self.layout,
            size,
            held: &self.nodes,
            found,
            edge: HashMap::new(),
            mode,
        }
    }

    /// The witness of `index` in the tree of `size` leaves read through
    /// `source`; a node it cannot read is the leaf not being synced.
    pub(crate) fn witness_from(
        &self,
        index: u64,
        size: u64,
        source: &mut Source<'_>,
    ) -> Result<MembershipProof, WalletError> {
        MembershipProof::from_nodes(self.config, index, size, |l, i| {
            self.rule.node(size, l, i, source)
        })
        .map_err(|e| match e {
            FromNodesError::Tree(e) => WalletError::Tree(e),
            FromNodesError::Source(_) => WalletError::NotSynced {
                index,
                size: self.head.size,
            },
        })
    }

    /// Reads the frontier of the tree of `size` leaves through `source`
    /// (in the record pass: notes its keys).
    pub(crate) fn record_frontier(
        &self,
        size: u64,
        source: &mut Source<'_>,
    ) -> Result<(), RecomputeError<Unfed>> {
        for (l, i) in frontier_keys(self.config, size) {
            self.rule.node(size, l, i, source)?;
        }
        Ok(())
    }

    /// The witnesses of `marked` leaves in the tree of `size` leaves, and
    /// the consistency proof from `old` (none from an empty or equal head).
    fn proofs(
        &self,
        old: &TreeHead,
        size: u64,
        marked: &BTreeSet<u64>,
        source: &mut Source<'_>,
    ) -> Result<(Vec<MembershipProof>, Option<ConsistencyProof>), Failed> {
        let rule = &self.rule;
        let read = |l: u32, i: u64, source: &mut Source<'_>| {
            rule.node(size, l, i, source).map_err(|e| match e {
                RecomputeError::Source(unfed) => Failed::Unfed(unfed),
                RecomputeError::NoSuchNode { level, index, size } => {
                    unreachable!("the shape asked for node {index} of level {level} at {size}")
                }
                RecomputeError::MissingLeaf { index } => {
                    unreachable!("leaf {index} below the size is final, so held or in a tile")
                }
            })
        };
        let consistency = if old.size > 0 && old.size < size {
            Some(
                ConsistencyProof::from_nodes(self.config, old.size, size, |l, i| {
                    read(l, i, source)
                })
                .map_err(Failed::from)?,
            )
        } else {
            None
        };
        let mut witnesses = Vec::new();
        for &index in marked.iter().filter(|&&i| i < size) {
            witnesses.push(
                MembershipProof::from_nodes(self.config, index, size, |l, i| read(l, i, source))
                    .map_err(Failed::from)?,
            );
        }
        // What the next sync's consistency proof from this head reads of
        // it: read now, from the right edge's tiles, and kept.
        for (l, i) in frontier_keys(self.config, size) {
            read(l, i, source)?;
        }
        Ok((witnesses, consistency))
    }
}

/// Why a pass stopped.
enum Failed {
    Tree(cairn_core::TreeError),
    Unfed(Unfed),
}

impl From<FromNodesError<Failed>> for Failed {
    fn from(e: FromNodesError<Failed>) -> Failed {
        match e {
            FromNodesError::Tree(e) => Failed::Tree(e),
            FromNodesError::Source(e) => e,
        }
    }
}

/// The final nodes a consistency proof from the tree of `size` leaves to
/// any larger one reads of it: its last leaf, and per level the members
/// of the old edge node's group left of it (the levels above only grow).
pub(crate) fn frontier_keys(config: TreeConfig, size: u64) -> Vec<Key> {
    let mut keys = Vec::new();
    if size == 0 {
        return keys;
    }
    keys.push((0, size - 1));
    for step in config.shape().consistency_steps(size, size) {
        let first = step.edge - step.left as u64;
        keys.extend((first..step.edge).map(|i| (step.level, i)));
    }
    keys.sort_unstable();
    keys.dedup();
    keys
}
