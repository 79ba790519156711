//! cairn's HTTP server: durable appends, membership, absence and
//! consistency proofs and nullifier lookups over one
//! [`cairn_db::Database`] of any tree kind, or every tree of a
//! [`cairn_db::Forest`] (`/v1/trees/{name}/...`, `POST /v1/blocks`: see
//! `forest.rs`), on tokio and axum.
//!
//! - **Writes are durable when acknowledged**: `POST /v1/leaves` appends a
//!   batch (all or nothing, duplicates refused once durable) and answers
//!   only once the database acknowledges it. The append runs on the async
//!   worker (a small batch) or tokio's blocking pool; the request then
//!   awaits its acknowledgement (`Ack::durable`): the store's commit thread
//!   makes one group commit for everything appended meanwhile and its
//!   notification wakes the waiting requests, so the async workers never
//!   wait on a lock or an fsync.
//! - **Reads only show durable state**: roots, proofs and lookups are
//!   answered at the durable size, never past it, so nothing the server
//!   ever handed out can be lost or forked by a crash (a root served once
//!   is a prefix of every later root, across restarts).
//! - **Chain followers**: appends may carry a block tag; `POST
//!   /v1/rollback` undoes the appends of orphaned blocks (never below the
//!   finalized size, `POST /v1/finalize`), and once it has answered no
//!   response names a size, root or leaf it removed (reads are made
//!   between rollbacks, see `state.rs`); `GET /v1/heads`, `GET
//!   /v1/roots/{root}` and proofs by root serve what a wallet needs to
//!   prove against the root a contract holds.
//! - **Signed checkpoints**: with a signer key, `GET /v1/checkpoint`
//!   answers the durable head as a C2SP signed note (`cairn-note`).
//! - **Reads scale out**: `--publish` keeps a tile store (a directory or
//!   S3) at the durable size in the background, `--read-only` refuses
//!   writes (403), and `--mirror-from` makes the server a verifying
//!   mirror of a tile store or another server (`companions.rs`).
//! - **Routes are one table** ([`ROUTES`]): the router is built from it for
//!   a database of any kind (a route the kind cannot serve is refused from
//!   its row), and a test checks it against the committed OpenAPI document
//!   (`openapi.json`, served at `/openapi.json`). One handler set serves
//!   every kind (`api/`), over the database alone.
//!
//! Embedding: [`Server::bind`] then [`Server::run`] with a shutdown future
//! (or [`serve`]); the blocking [`run`] opens a directory, handles SIGTERM
//! and SIGINT, and closes the database on the way out.
#![warn(missing_docs)]

mod api;
mod auth;
mod body;
mod build_info;
mod companions;
mod config;
mod cors;
mod error;
mod forest;
mod health;
mod listener;
mod metrics;
mod process;
mod query;
mod reader;
mod ready;
mod respond;
mod routes;
mod server;
mod state;

pub use api::service::OPENAPI_JSON;
pub use build_info::{BUILD, BuildInfo};
pub use companions::{
    DbTarget, MirrorSettings, PublishSettings, adopt_error, check_tiles, open_upstream,
};
pub use config::{
    DEFAULT_DURABILITY_TIMEOUT_SECONDS, DEFAULT_HEADER_READ_TIMEOUT_SECONDS,
    DEFAULT_IDLE_TIMEOUT_SECONDS, DEFAULT_MAX_BATCH_LEAVES, DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_LEAVES_PER_READ, DEFAULT_READY_MAX_STALENESS_SECONDS, DEFAULT_REFRESH_INTERVAL_MS,
    LogFormat, SIGNER_KEY_FILE, ServeOptions, ServerConfig, read_signer_key_file, read_token_file,
    trusted_keys,
};
pub use cors::CorsPolicy;
pub use error::ServerError;
pub use listener::{DEFAULT_MAX_CONNECTIONS, RESERVED_DESCRIPTORS_MIN, reserved_descriptors};
pub use routes::{ROUTES, Route};
pub use server::{
    Server, init_logging, init_logging_as, run, run_db, run_forest, run_read_only_forest, serve,
};
