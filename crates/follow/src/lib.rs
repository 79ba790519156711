//! cairn's chain follower: reads a contract's events from an Ethereum
//! JSON-RPC node and keeps a cairn database equal to the contract's tree,
//! block by block, through reorganisations and restarts.
//!
//! The pieces, bottom up: [`abi`] (an event signature, where its leaf
//! field sits in a log, a view call's calldata), [`rpc`] (the JSON-RPC
//! methods a follower calls, with retries and a rate limit), [`metrics`]
//! (lag, reorganisations, health, a Prometheus endpoint) and [`Follower`]
//! (the loop), and [`config`] (a file naming several contracts, each
//! feeding a tree of a database of several trees). All state is the
//! database's: its blocks say where to resume, its finalized block what
//! no reorganisation may touch.
//!
//! ```no_run
//! use std::sync::Arc;
//! use std::time::Duration;
//! use cairn_follow::{Call, EventField, Finality, FollowOptions, Follower, Metrics, RootChecks, Rpc, RpcOptions, Source};
//!
//! let db = cairn_db::Database::open("commitments")?;
//! let options = FollowOptions {
//!     sources: vec![Source {
//!         tree: None,
//!         contract: cairn_follow::parse_address("0x5FbDB2315678afecb367f032d93F642f64180aa3")?,
//!         events: vec![EventField::parse("Deposit(bytes32 indexed commitment, uint32 leafIndex, uint256 timestamp)", "commitment")?],
//!         root_call: Some(Call::parse("getLastRoot()", &[])?),
//!     }],
//!     from_block: 0,
//!     finality: Finality::Confirmations(12),
//!     root_checks: RootChecks::EveryBlock,
//!     max_range: 2_000,
//!     poll_interval: Duration::from_secs(2),
//!     durable_timeout: Duration::from_secs(60),
//!     until_block: None,
//!     exit_at_head: true,
//! };
//! let rpc = Rpc::new("http://127.0.0.1:8545", RpcOptions::default())?;
//! let metrics = Arc::new(Metrics::new(Duration::from_secs(60)));
//! let mut follower = Follower::new(&db, rpc, options, metrics)?;
//! follower.run(|event, _| println!("{event:?}"))?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod abi;
pub mod config;
mod follower;
pub mod metrics;
pub mod rpc;
mod target;

pub use abi::{AbiError, Call, EventField, Word};
pub use config::{ConfigError, FollowConfig};
pub use follower::{Event, Finality, FollowError, FollowOptions, Follower, RootChecks, Source};
pub use metrics::{Metrics, Status};
pub use rpc::{Address, BlockId, Header, Log, Rpc, RpcError, RpcOptions, RpcStats};

/// A 0x-prefixed 40-digit hex address (any case) as its 20 bytes.
pub fn parse_address(text: &str) -> Result<Address, AbiError> {
    let bad = |reason: &str| AbiError::Call {
        call: text.to_owned(),
        reason: reason.to_owned(),
    };
    let digits = text
        .strip_prefix("0x")
        .ok_or_else(|| bad("an address starts with 0x"))?;
    if digits.len() != 40 {
        return Err(bad(&format!(
            "an address has 40 hex digits, this has {}",
            digits.len()
        )));
    }
    let mut address = [0; 20];
    hex::decode_to_slice(digits, &mut address).map_err(|_| bad("not hex"))?;
    Ok(address)
}
