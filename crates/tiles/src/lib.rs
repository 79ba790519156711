//! Immutable tiles of an append-only tree (a LeanIMT, or a fixed-depth
//! zero-padded tree): the tree's final nodes cut into
//! objects that never change once written (full tiles, and partial ones
//! named by how many nodes they hold), a checkpoint naming the head they
//! belong to, a publisher that writes them from a snapshot, and a client
//! that computes verified proofs from only the tiles it needs. Reads scale
//! by serving the objects from any static store or CDN; the layout is in
//! docs/spec.md ("Tiles").
//!
//! The checkpoint is signed (cairn's signed checkpoint, the C2SP note
//! `GET /v1/checkpoint` serves) when the publisher has a key, and
//! [`SignedBy`] checks it for readers that hold verifier keys; a reader
//! without one trusts the place it fetched the checkpoint from.
//!
//! Stores: a directory, S3-compatible object storage and HTTP(S) GET
//! (`remote.rs`, through `object_store`). A verifying mirror (`mirror.rs`)
//! copies a tile store or a cairn server into a local tree, adopting a
//! head only once it is proven to extend the one adopted before; the
//! long-running publisher and follower of a served database are in
//! `background.rs`. Those three need the default `remote` feature;
//! without it the crate has no network or thread dependencies and builds
//! for `wasm32-unknown-unknown` (a wallet in a browser).

#[cfg(feature = "remote")]
mod background;
#[cfg(feature = "remote")]
mod bulk;
mod checkpoint;
mod client;
mod forest;
mod layout;
#[cfg(feature = "remote")]
mod mirror;
#[cfg(feature = "remote")]
mod pipeline;
mod publish;
#[cfg(feature = "remote")]
mod remote;
mod signed;
mod store;

#[cfg(feature = "remote")]
pub use background::{Follower, FollowerStatus, PinHeadSend, Publisher, PublisherStatus, Stop};
#[cfg(feature = "remote")]
pub use bulk::DEFAULT_IN_FLIGHT;
pub use checkpoint::{Checkpoint, CheckpointError, MAGIC, MAGIC_KINDS, signers};
pub use client::{
    DEFAULT_CACHED_TILES, TileError, TileTree, read_checkpoint, read_checkpoint_checked,
};
pub use forest::{
    ENTRIES_MAX_BYTES, ENTRIES_PREFIX, FOREST_EXTENSION, FOREST_MAGIC, ForestCheckpointError,
    ForestEntries, ForestEntry, ForestHead, ForestRead, ForestReadError, Prefixed, TREES_PREFIX,
    WriteForestError, check_tree_name, entries_path, is_forest_checkpoint, read_forest,
    tree_prefix, verify_entry, verify_signed, write_forest,
};
pub use layout::{BundleRange, Layout, MAX_BUNDLE_LEAVES, MAX_TILE_NODES, TileId};
#[cfg(feature = "remote")]
pub use mirror::{
    CaughtUp, DEFAULT_CHUNK_LEAVES, DEFAULT_POLL, MirrorError, MirrorTarget, NotAPrefix,
    ServerUpstream, TargetError, TilesUpstream, Upstream, catch_up, verify_leaves,
};
pub use publish::{
    CHECKPOINT, Foreign, PinError, PinHead, PublishError, PublishOptions, Published, publish,
    publish_at, publish_with,
};
#[cfg(feature = "remote")]
pub use remote::{
    Location, LocationError, OpenError, RemoteOptions, RemoteStore, open_sink, open_source,
};
pub use signed::{CheckpointSignature, SignatureError, SignedBy, Unsigned};
pub use store::{
    CHECKPOINT_MAX_BYTES, DirStore, ObjectError, TileSink, TileSource, read_tile, read_tile_object,
};
