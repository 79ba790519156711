//! Publishing a tree's tiles from a snapshot: every tile the store does
//! not have yet, then the checkpoint, last, once they are durable, so a
//! published checkpoint never names a missing tile. With a signer key the
//! checkpoint is cairn's signed checkpoint; a store whose checkpoint is
//! signed is never given an unsigned one.
//!
//! The leaf level is written once: as bundles (`bundle/{K}`, `B` leaves)
//! for every complete bundle, as leaf tiles only past the last complete
//! bundle, so the store holds each leaf once (docs/spec.md 8.1).

use cairn_core::{Snapshot, TreeConfig, TreeError, TreeHead};
use cairn_note::Signer;

use crate::checkpoint::{Checkpoint, CheckpointError, signers};
use crate::layout::Layout;
use crate::store::{CHECKPOINT_MAX_BYTES, ObjectError, TileSink};

/// What a publication wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Published {
    /// Objects written (tiles and the checkpoint).
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Tiles already in the store with the right content, skipped.
    pub skipped: u64,
    /// Tiles the store held with other content, written over (left by an
    /// interrupted publication of a tree since rolled back; no published
    /// checkpoint ever named them).
    pub replaced: u64,
}

/// Why a publication failed.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// Reading or writing an object failed (the old checkpoint still
    /// stands: it is written last).
    #[error(transparent)]
    Object(#[from] ObjectError),
    /// The store's checkpoint is not one of this tree's (another arity,
    /// hash or kind, a size above the snapshot's, another root).
    #[error("the store's checkpoint does not fit this tree: {0}")]
    Foreign(Foreign),
    /// The tree refused a read.
    #[error(transparent)]
    Tree(#[from] TreeError),
    /// An indexed tree rewrites earlier leaves: no object of it would stay
    /// immutable.
    #[error(
        "tiles describe append-only trees: an indexed tree rewrites earlier leaves as values are inserted, so it cannot be published as tiles"
    )]
    Indexed,
    /// The store's checkpoint is signed and this publication has no key:
    /// an unsigned checkpoint over it would make every verifying reader
    /// refuse the store.
    #[error(
        "the store's checkpoint is signed by {keys}: publishing an unsigned one over it would make every reader that checks signatures refuse the store; give the signer key"
    )]
    WouldUnsign {
        /// The keys (`name+id`) that signed the store's checkpoint.
        keys: String,
    },
    /// The signer refused the head (a key that cannot sign).
    #[error("signing the checkpoint: {0}")]
    Sign(CheckpointError),
    /// The caller's hook refused to let the head be published (the
    /// database could not make it final, say): the old checkpoint stands.
    #[error("the head of {size} leaves cannot be published: {reason}")]
    Pinned {
        /// The head's size.
        size: u64,
        /// Why.
        reason: PinError,
    },
}

/// Why a store's checkpoint is not one of the tree being published.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Foreign {
    /// It is no checkpoint.
    #[error("{0}")]
    Decode(CheckpointError),
    /// It is of another tree (arity, hash or kind).
    #[error("it is for {store}, the tree is {tree}")]
    Tree {
        /// The tree it names, as a refusal says it.
        store: String,
        /// The tree published.
        tree: String,
    },
    /// It names more leaves than the publication.
    #[error(
        "it names {store} leaves, this publication {size}: the tree was rolled back below what was published, or is another tree"
    )]
    Ahead {
        /// The size it names.
        store: u64,
        /// The size published.
        size: u64,
    },
    /// Its root differs from the tree's at its size.
    #[error(
        "its root at {size} leaves differs from this tree's: the tree was rolled back below what was published, or is another tree"
    )]
    Root {
        /// The size it names.
        size: u64,
    },
}

/// Why a [`PinHead`] hook refused a head (the caller's error, kept whole).
pub type PinError = Box<dyn std::error::Error + Send + Sync>;

/// A hook called with the head a checkpoint is about to name; `Err(why)`
/// stops the publication ([`PublishOptions::before_checkpoint`]).
pub type PinHead<'a> = dyn Fn(&TreeHead) -> Result<(), PinError> + 'a;

/// How a publication signs and pins its checkpoint.
#[derive(Default)]
pub struct PublishOptions<'a> {
    /// Sign the checkpoint with this key (unsigned without one).
    pub signer: Option<&'a Signer>,
    /// Called with the head the checkpoint will name once its tiles are
    /// durable, right before the checkpoint is written: the database makes
    /// that head final there, so that no rollback can contradict what the
    /// store is about to say. An `Err` stops the publication, leaving the
    /// old checkpoint.
    pub before_checkpoint: Option<&'a PinHead<'a>>,
}

impl std::fmt::Debug for PublishOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PublishOptions")
            .field("signer", &self.signer)
            .field("before_checkpoint", &self.before_checkpoint.is_some())
            .finish()
    }
}

/// Tiles read and written per round trip to the store.
const BATCH_TILES: usize = 64;

/// Publishes `snapshot` to `sink`: the tiles added since the store's
/// checkpoint (all of them if it has none), then the checkpoint. A tile
/// the store already holds with the same content is not written again
/// (it is immutable).
pub fn publish(snapshot: &Snapshot, sink: &dyn TileSink) -> Result<Published, PublishError> {
    publish_at(snapshot, snapshot.size(), sink)
}

/// [`publish`] of the tree of the first `size` leaves of `snapshot` (a
/// finalized size, say).
pub fn publish_at(
    snapshot: &Snapshot,
    size: u64,
    sink: &dyn TileSink,
) -> Result<Published, PublishError> {
    publish_with(snapshot, size, sink, &PublishOptions::default())
}

/// [`publish_at`], signing and pinning the checkpoint as `options` say. A
/// signed publication of the empty tree writes no checkpoint (it has no
/// root to sign).
pub fn publish_with(
    snapshot: &Snapshot,
    size: u64,
    sink: &dyn TileSink,
    options: &PublishOptions<'_>,
) -> Result<Published, PublishError> {
    let config = snapshot.config();
    if !config.kind.is_append_only() {
        return Err(PublishError::Indexed);
    }
    let tree = Checkpoint::tree_of(&config);
    let layout = Layout::new(config.arity, config.hash);
    let view = snapshot.view(size)?;
    let from = published_size(sink, snapshot, size, tree, options.signer.is_some())?;
    let width = layout.width();
    let mut done = Published::default();
    // Inside a complete bundle's stretch the bundle is the leaf level: its
    // leaf tiles are not written (a reader reads them as bundle ranges).
    let tiles = layout.tile_objects_since(from, size);
    for batch in tiles.chunks(BATCH_TILES) {
        let objects: Vec<(String, Vec<u8>)> = batch
            .iter()
            .map(|tile| {
                let level = layout.height() * tile.level;
                let first = tile.index * width;
                let mut bytes = Vec::with_capacity((tile.width * 32) as usize);
                for node in first..first + tile.width {
                    bytes.extend_from_slice(&view.node(level, node));
                }
                (layout.path(*tile), bytes)
            })
            .collect();
        // Tiles past the published checkpoint may exist from a publication
        // that stopped before its checkpoint, possibly of a tree since
        // rolled back: compare, never trust a name alone.
        let paths: Vec<String> = objects.iter().map(|(path, _)| path.clone()).collect();
        let held = sink.get_many(&paths, crate::MAX_TILE_NODES * 32);
        let mut writes = Vec::new();
        for ((path, bytes), held) in objects.into_iter().zip(held) {
            match held {
                Ok(old) if old == bytes => done.skipped += 1,
                Ok(_) => {
                    done.replaced += 1;
                    writes.push((path, bytes));
                }
                Err(e) if e.missing => writes.push((path, bytes)),
                // An oversized object is other content, written over.
                Err(e) if e.too_large => {
                    done.replaced += 1;
                    writes.push((path, bytes));
                }
                Err(e) => return Err(e.into()),
            }
        }
        sink.put_many(&writes)?;
        done.objects += writes.len() as u64;
        done.bytes += writes.iter().map(|(_, b)| b.len() as u64).sum::<u64>();
    }
    publish_bundles(&view, &layout, from, size, sink, &mut done)?;
    sink.sync()?;
    let checkpoint = Checkpoint {
        tree,
        head: view.head(),
    };
    let checkpoint = match options.signer {
        None => checkpoint.encode(),
        // Nothing to sign (the empty Lean tree has no root), and no tile
        // to name: the store stays as it is.
        Some(_) if checkpoint.head.root.is_none() => return Ok(done),
        Some(signer) => checkpoint
            .encode_signed(signer)
            .map_err(PublishError::Sign)?,
    };
    if let Some(pin) = options.before_checkpoint {
        let head = view.head();
        pin(&head).map_err(|reason| PublishError::Pinned { size, reason })?;
    }
    sink.put(CHECKPOINT, checkpoint.as_bytes())?;
    sink.sync()?;
    done.objects += 1;
    done.bytes += checkpoint.len() as u64;
    Ok(done)
}

/// Bundles read and written per round trip to the store (2 MiB each).
const BATCH_BUNDLES: usize = 8;

/// Writes the full bundles of the tree of `size` leaves that the tree of
/// `from` leaves did not have, compared first like tiles (a bundle past the
/// checkpoint may be left by a publication that stopped before it).
fn publish_bundles(
    view: &cairn_core::View<'_>,
    layout: &Layout,
    from: u64,
    size: u64,
    sink: &dyn TileSink,
    done: &mut Published,
) -> Result<(), PublishError> {
    let leaves = layout.bundle_leaves();
    let bundles: Vec<u64> = layout.bundles_since(from, size).collect();
    for batch in bundles.chunks(BATCH_BUNDLES) {
        let paths: Vec<String> = batch.iter().map(|&k| layout.bundle_path(k)).collect();
        let held = sink.get_many(&paths, leaves * 32);
        let mut writes = Vec::new();
        for ((&k, path), held) in batch.iter().zip(paths).zip(held) {
            let mut bytes = Vec::with_capacity((leaves * 32) as usize);
            for leaf in k * leaves..(k + 1) * leaves {
                bytes.extend_from_slice(&view.node(0, leaf));
            }
            match held {
                Ok(old) if old == bytes => done.skipped += 1,
                Ok(_) => {
                    done.replaced += 1;
                    writes.push((path, bytes));
                }
                Err(e) if e.missing => writes.push((path, bytes)),
                Err(e) if e.too_large => {
                    done.replaced += 1;
                    writes.push((path, bytes));
                }
                Err(e) => return Err(e.into()),
            }
        }
        sink.put_many(&writes)?;
        done.objects += writes.len() as u64;
        done.bytes += writes.iter().map(|(_, b)| b.len() as u64).sum::<u64>();
    }
    Ok(())
}

/// The checkpoint object's path.
pub const CHECKPOINT: &str = "checkpoint";

/// The size the store's checkpoint names (0 without one), checked to be a
/// head of this very tree: tiles are immutable, so a tree that differs
/// below the published size (a rollback past it, another tree) must never
/// publish into the store.
fn published_size(
    sink: &dyn TileSink,
    snapshot: &Snapshot,
    size: u64,
    tree: TreeConfig,
    signing: bool,
) -> Result<u64, PublishError> {
    let bytes = match sink.get(CHECKPOINT, CHECKPOINT_MAX_BYTES) {
        Ok(bytes) => bytes,
        Err(e) if e.missing => return Ok(0),
        Err(e) => return Err(e.into()),
    };
    let old = Checkpoint::decode(&bytes).map_err(|e| PublishError::Foreign(Foreign::Decode(e)))?;
    // The publisher checks the old head against its own tree below, so it
    // needs no key to trust it; but it must not unsign a signed store.
    if !signing && let Some(keys) = signers(&bytes) {
        return Err(PublishError::WouldUnsign {
            keys: keys.join(", "),
        });
    }
    if old.tree != tree {
        return Err(PublishError::Foreign(Foreign::Tree {
            store: crate::checkpoint::describe_tree(&old.tree),
            tree: crate::checkpoint::describe_tree(&tree),
        }));
    }
    if old.head.size > size {
        return Err(PublishError::Foreign(Foreign::Ahead {
            store: old.head.size,
            size,
        }));
    }
    let ours = snapshot.view(old.head.size)?.head();
    if ours != old.head {
        return Err(PublishError::Foreign(Foreign::Root {
            size: old.head.size,
        }));
    }
    Ok(old.head.size)
}
