//! A wallet's witness tracker over cairn's immutable tiles: it keeps the
//! membership witnesses of the leaves a wallet marks (its notes) current as
//! the tree grows, reading only whole tiles (the tiles on the marked
//! leaves' paths and the changing right edge, never an object that names
//! one leaf), so the store learns no more than which tiles a wallet reads.
//!
//! The tracker is sans-IO ([`Tracker::plan`] says which tiles a sync
//! needs, the caller fetches them and feeds them to the [`SyncPlan`],
//! [`Tracker::finish`] adopts the checkpoint's head only once every
//! witness verifies against it): the same core serves a native wallet
//! ([`sync`] reads any [`TileSource`](cairn_tiles::TileSource)), and one
//! that fetches in a browser. It checkpoints heads by block and rewinds
//! to them with no network, and persists as versioned, checksummed bytes
//! ([`Tracker::to_bytes`]; the layout is in docs/spec.md, "Wallet
//! state").

mod driver;
mod error;
mod nodes;
mod state;
mod tracker;

pub use driver::sync;
pub use error::{StateError, WalletError};
pub use state::{STATE_MAGIC, STATE_VERSION};
pub use tracker::{DEFAULT_WINDOW, SyncPlan, SyncReport, TileRequest, Tracker};
