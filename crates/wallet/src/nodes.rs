//! Where a tracker's computations read nodes. One recompute (the core's
//! [`GroupRule::node`]) serves three passes over the same shape
//! arithmetic, told apart by [`Mode`]:
//!
//! - **plan**: which whole tiles the witnesses (and the consistency proof
//!   from the adopted head) need beyond the nodes the tracker holds. The
//!   nodes a recompute reads depend on the shape alone, never on their
//!   values, so a pass that answers every tile node with a placeholder
//!   lists exactly the tiles the real pass will read.
//! - **read**: the real pass over held nodes and the fed tiles, collecting
//!   every final node it read or computed.
//! - **record**: a pass over held and collected nodes that notes the
//!   top-most final nodes a witness reads: what the tracker keeps.
//!
//! Invariant: a held node is *final* (its subtree complete), so it is the
//! same in the tree of every size that has it complete; a node is answered
//! from the held ones only at a size where it is final.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use cairn_core::{Arity, Hash, KnownNodes};
use cairn_tiles::{Layout, TileId};

/// A node's key: level, index.
pub(crate) type Key = (u32, u64);

/// Which pass.
pub(crate) enum Mode<'a> {
    /// Listing tiles.
    Plan(&'a mut BTreeSet<TileId>),
    /// Reading fed tiles.
    Read(&'a HashMap<TileId, Vec<Hash>>),
    /// Noting the final nodes read.
    Record(&'a mut BTreeSet<Key>),
}

/// A tile the read pass needs and was not fed (a plan that does not fit
/// the state it is finished on).
#[derive(Debug)]
pub(crate) struct Unfed(pub TileId);

/// The nodes of the tree of `size` leaves a pass reads.
pub(crate) struct Source<'a> {
    pub layout: Layout,
    pub size: u64,
    pub held: &'a BTreeMap<Key, Hash>,
    /// Final nodes read or computed by the pass (plan and read).
    pub found: &'a mut HashMap<Key, Hash>,
    /// Non-final nodes computed in this pass at this size.
    pub edge: HashMap<Key, Hash>,
    pub mode: Mode<'a>,
}

/// Whether node `index` of `level` is final in the tree of `size` leaves.
pub(crate) fn is_final(arity: Arity, size: u64, level: u32, index: u64) -> bool {
    arity
        .as_u64()
        .checked_pow(level)
        .and_then(|span| index.checked_add(1)?.checked_mul(span))
        .is_some_and(|end| end <= size)
}

impl KnownNodes for Source<'_> {
    type Error = Unfed;

    fn known(&mut self, level: u32, index: u64) -> Result<Option<Hash>, Unfed> {
        if !is_final(self.layout.arity, self.size, level, index) {
            return Ok(self.edge.get(&(level, index)).copied());
        }
        if let Some(node) = self.held.get(&(level, index)) {
            if let Mode::Record(hits) = &mut self.mode {
                hits.insert((level, index));
            }
            return Ok(Some(*node));
        }
        if let Some(node) = self.found.get(&(level, index)) {
            if let Mode::Record(hits) = &mut self.mode {
                hits.insert((level, index));
            }
            return Ok(Some(*node));
        }
        let height = self.layout.height();
        if !level.is_multiple_of(height) {
            return Ok(None);
        }
        let Some(tile) = self.layout.tile_of(self.size, level / height, index) else {
            return Ok(None);
        };
        match &mut self.mode {
            Mode::Plan(want) => {
                want.insert(tile);
                // Any value the hash accepts: only the reads matter here.
                Ok(Some([0; 32]))
            }
            Mode::Read(tiles) => {
                let nodes = tiles.get(&tile).ok_or(Unfed(tile))?;
                let offset = usize::try_from(index - tile.index * self.layout.width())
                    .expect("an offset within a tile of at most 256 nodes");
                let node = *nodes.get(offset).ok_or(Unfed(tile))?;
                self.found.insert((level, index), node);
                Ok(Some(node))
            }
            Mode::Record(_) => Ok(None),
        }
    }

    fn computed(&mut self, level: u32, index: u64, node: &Hash) {
        if is_final(self.layout.arity, self.size, level, index) {
            if !matches!(self.mode, Mode::Record(_)) {
                self.found.insert((level, index), *node);
            }
        } else {
            self.edge.insert((level, index), *node);
        }
    }
}
