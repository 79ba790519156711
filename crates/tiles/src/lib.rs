//! Immutable tiles of an n-ary LeanIMT: the tree's final nodes cut into
//! objects that never change once written (full tiles, and partial ones
//! named by how many nodes they hold), a checkpoint naming the head they
//! belong to, a publisher that writes them from a snapshot, and a client
//! that computes verified proofs from only the tiles it needs. Reads scale
//! by serving the objects from any static store or CDN; the layout is in
//! docs/spec.md ("Tiles").

mod checkpoint;
mod client;
mod layout;
mod publish;
mod store;

pub use checkpoint::{Checkpoint, MAGIC};
pub use client::{TileError, TileTree};
pub use layout::{Layout, MAX_TILE_NODES, TileId};
pub use publish::{CHECKPOINT, PublishError, Published, publish, publish_at};
pub use store::{DirStore, ObjectError, TileSink, TileSource};
