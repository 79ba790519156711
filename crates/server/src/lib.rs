//! cairn's HTTP server: durable appends, membership and consistency proofs
//! and nullifier lookups over one [`cairn_db::Db`], on tokio and axum.
//!
//! - **Writes are durable when acknowledged**: `POST /v1/leaves` appends a
//!   batch (all or nothing, duplicates refused) and answers only after its
//!   durability token is released. The append runs on tokio's blocking
//!   pool; the request then awaits its token (`Token::durable`): the
//!   store's commit thread makes one group commit for everything appended
//!   meanwhile and its notification wakes the waiting requests, so the
//!   async workers never wait on a lock or an fsync.
//! - **Reads only show durable state**: roots, proofs and lookups are
//!   answered at the durable size, never past it, so nothing the server
//!   ever handed out can be lost or forked by a crash (a root served once
//!   is a prefix of every later root, across restarts).
//! - **Chain followers**: appends may carry a block tag; `POST
//!   /v1/rollback` undoes the appends of orphaned blocks (never below the
//!   finalized size, `POST /v1/finalize`), and once it has answered no
//!   response names a size, root or leaf it removed (reads are made
//!   between rollbacks, see `api.rs`); `GET /v1/heads`, `GET
//!   /v1/roots/{root}` and proofs by root serve what a wallet needs to
//!   prove against the root a contract holds.
//! - **Signed checkpoints**: with a signer key, `GET /v1/checkpoint`
//!   answers the durable head as a C2SP signed note (`cairn-note`).
//! - **Reads scale out**: `--publish` keeps a tile store (a directory or
//!   S3) at the durable size in the background, `--read-only` refuses
//!   writes (403), and `--mirror-from` makes the server a verifying
//!   mirror of a tile store or another server (`companions.rs`).
//! - **Routes are one table** ([`ROUTES`]): the router is built from it and
//!   a test checks it against the committed OpenAPI document
//!   (`openapi.json`, served at `/openapi.json`).
//!
//! Embedding: [`Server::bind`] then [`Server::run`] with a shutdown future
//! (or [`serve`]); the blocking [`run`] opens a directory, handles SIGTERM
//! and SIGINT, and closes the database on the way out.
#![warn(missing_docs)]

mod api;
mod auth;
mod body;
mod companions;
mod config;
mod cors;
mod error;
mod health;
mod indexed;
mod listener;
mod metrics;
mod mirror;
mod process;
mod routes;
mod server;
mod signed;

pub use companions::{DbTarget, MirrorSettings, PublishSettings, open_upstream, pin_published};
pub use config::{
    DEFAULT_DURABILITY_TIMEOUT_SECONDS, DEFAULT_HEADER_READ_TIMEOUT_SECONDS,
    DEFAULT_IDLE_TIMEOUT_SECONDS, DEFAULT_MAX_BATCH_LEAVES, DEFAULT_MAX_BODY_BYTES,
    SIGNER_KEY_FILE, ServeOptions, ServerConfig, read_signer_key_file, read_token_file,
    trusted_keys,
};
pub use cors::CorsPolicy;
pub use error::ServerError;
pub use indexed::{run_indexed, serve_indexed};
pub use listener::{DEFAULT_MAX_CONNECTIONS, RESERVED_DESCRIPTORS_MIN, reserved_descriptors};
pub use mirror::DEFAULT_MAX_LEAVES_PER_READ;
pub use routes::{OPENAPI_JSON, ROUTES, Route};
pub use server::{Server, init_logging, run, run_db, serve};
