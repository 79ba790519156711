//! `cairn follow`: a contract's events from an Ethereum JSON-RPC node into
//! a database, through reorganisations (the loop is `cairn_follow`'s).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::anyhow;
use cairn_follow::{
    Call, Event, EventField, Finality, FollowConfig, FollowError, FollowOptions, Follower, Metrics,
    RootChecks, Rpc, RpcOptions, Source,
};

use crate::database::{self, Options};
use crate::failure::{Code, Failure};
use crate::json::Object;
use crate::output;

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Follow a contract on an Ethereum chain into the cairn database DIR: read the values of FIELD of \
the event SIG from the node at --rpc, and append each block's values as one block-tagged ingest \
(tagged with the block's number and hash), so that the database's tree is the contract's.

The database must exist, created with the contract's tree parameters and --finality explicit \
(`cairn init DIR --arity 2 --hash poseidon --finality explicit` for a LeanIMT such as Semaphore \
v4's); a value the tree refuses (not canonical for its hash, a duplicate) stops the follower.

SIG is the event as the contract declares it, with `indexed` and parameter names: \
'Deposit(bytes32 indexed commitment, uint32 leafIndex, uint256 timestamp)'. FIELD names a \
parameter holding one 32-byte word (bytes32, uintN, intN, address; from a topic when indexed, \
from the data otherwise) or, unindexed, an array of them (uint256[]: one leaf per element). \
Several --event/--field pairs follow several events of the contract (Semaphore's MemberAdded \
and MembersAdded); their values are appended in log order. --where NAME=VALUE keeps only the \
logs whose indexed parameter NAME holds VALUE (decimal or 0x-hex, as its topic word), for a \
contract that emits one event for several trees: Semaphore's groups, --where groupId=5. Every \
--event must have an indexed parameter NAME; the filter is sent to the node with eth_getLogs and \
checked again on every log read.

Final history (at or below the node's `finalized` block, or --confirmations K below its head) \
is read with eth_getLogs over ranges of at most --max-range blocks (halved when the node refuses \
a range, as providers do past their result limits) and finalized in the database. Blocks above \
it are read one by one; each block's parent hash is checked against the hash ingested for its \
parent, and when they differ (a reorganisation) the database is rolled back to the last block \
both branches share and the new branch is ingested. A reorganisation below what is final stops \
the follower (exit 4). A node restarted under the follower (a new chain at the same URL) is \
handled alike: if its chain holds the blocks ingested up to some block above the final one, the \
database is rolled back to that block and follows the new chain; if it lacks the final block (its \
head is below it) or has another hash there or at the first block followed, the follower stops \
with exit 4, naming the block and both hashes.

Resuming needs no state besides the database: the last tagged block is where it restarts (after \
a crash or kill -9 too), its hash checked against the node's first. The first block followed \
(--from-block, default 0; ignored once the database holds tagged heads) is always tagged.

With --root-call (a view function and its --root-arg words: 'getLastRoot()', \
'getMerkleTreeRoot(uint256)' --root-arg 0), after each block with values the contract's root at \
that block is compared with the database's at that block's size; a mismatch stops the follower \
with exit 1, naming the block and both roots. An empty tree's root counts as zero.

Requests to the node are retried with exponential backoff while it is unreachable or busy (429, \
5xx), for --retry-for seconds; --rate-limit caps requests per second.

Progress: one line per range or block ingested and per reorganisation, at most one a second \
for ranges (all of them with --json: {\"event\":\"resumed\"|\"ingested\"|\"reorg\",...,\"node_head\":H,\
\"ingested_block\":B,\"lag_blocks\":L,\"lag_seconds\":S|null,\"leaves\":N,\"reorgs\":R,\"stale\":bool}). \
--metrics ADDR serves GET /metrics (Prometheus text: head, lag in blocks and seconds, \
reorganisations and their depth, requests) and GET /health (503 `stale` once the node's head has \
not advanced for --stale-after seconds). `cairn serve DIR --read-only` beside it serves the \
database's roots and proofs as they grow.

With --config FILE (instead of --contract, --event, --field, --where and --root-call), several \
contracts feed the trees of DIR, a database of several trees (`cairn init DIR`, `cairn tree add`): \
FILE is JSON, {\"from_block\":N,\"sources\":[{\"tree\":NAME,\"contract\":ADDR,\"events\":[{\"signature\":SIG,\
\"field\":FIELD}],\"where\":{NAME:VALUE},\"root_call\":SIG,\"root_args\":[VALUE]}]}, one source a tree \
(`where`, `root_call`, `root_args` and `from_block` optional). Each chain block's values from every \
source are one block of the database (one journal frame across the trees; a range of final blocks \
one fdatasync), rolled back and finalized together; it resumes from the database's last block. A \
file that does not fit (not JSON, an unknown field, a bad address, event or call, a tree DIR does \
not hold) is refused naming the field (exit 2). Progress lines list each tree's size (JSON: \
\"trees\":{NAME:SIZE} instead of \"root\").

Runs until stopped, or until --until-block is ingested, or (--exit-at-head) until it has caught \
up with the node's head.

Examples:
  cairn init deposits --kind imt --depth 20 --arity 2 --hash mimcsponge --zero 0x2fe54c60d3acabf3343a35b6eba15db4821b340f76e741e2249685ed4899af6c --finality explicit
  cairn follow deposits --rpc http://127.0.0.1:8545 --contract 0x5FbDB2315678afecb367f032d93F642f64180aa3 \\
    --event 'Deposit(bytes32 indexed commitment, uint32 leafIndex, uint256 timestamp)' --field commitment \\
    --root-call 'getLastRoot()' --confirmations 12
  cairn follow state --rpc http://127.0.0.1:8545 --config follow.json --confirmations 12";

/// Follow a contract's events into a database.
#[derive(clap::Args, Debug)]
pub struct FollowCmd {
    /// The database directory.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// The node's JSON-RPC endpoint (http or https).
    #[arg(long, value_name = "URL")]
    rpc: String,
    /// The contract whose events are read (0x and 40 hex digits).
    #[arg(
        long,
        value_name = "ADDR",
        required_unless_present = "config",
        conflicts_with = "config"
    )]
    contract: Option<String>,
    /// The event, as declared: 'Name(type [indexed] name, ...)' (repeatable).
    #[arg(
        long,
        value_name = "SIG",
        required_unless_present = "config",
        conflicts_with = "config"
    )]
    event: Vec<String>,
    /// The parameter of the matching --event whose values are leaves (one per --event).
    #[arg(
        long,
        value_name = "NAME",
        required_unless_present = "config",
        conflicts_with = "config"
    )]
    field: Vec<String>,
    /// A JSON file of several contracts, each feeding a tree of DIR (a database of several trees).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Count only logs whose indexed parameter NAME is VALUE, decimal or 0x-hex (repeatable; every --event).
    #[arg(long = "where", value_name = "NAME=VALUE", conflicts_with = "config")]
    filters: Vec<String>,
    /// The first block to read, when the database has no tagged head yet.
    #[arg(long, value_name = "N", default_value_t = 0)]
    from_block: u64,
    /// Final: K blocks below the node's head (default: the node's `finalized` block).
    #[arg(long, value_name = "K")]
    confirmations: Option<u64>,
    /// The block tag taken as final without --confirmations.
    #[arg(long, value_name = "TAG", default_value = "finalized", value_parser = ["finalized", "safe"])]
    finality_tag: String,
    /// The contract's view function answering its root: 'getLastRoot()'.
    #[arg(long, value_name = "SIG", conflicts_with = "config")]
    root_call: Option<String>,
    /// An argument of --root-call, decimal or 0x-hex (repeatable, in order).
    #[arg(long, value_name = "VALUE", requires = "root_call")]
    root_arg: Vec<String>,
    /// Compare roots at every block with values, or in final history only at each range's end.
    #[arg(long, value_name = "WHEN", default_value = "every-block", value_parser = ["every-block", "range-ends"])]
    root_checks: String,
    /// Blocks per eth_getLogs request at most.
    #[arg(long, value_name = "N", default_value_t = 2000)]
    max_range: u64,
    /// Milliseconds between polls of the node's head once caught up.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    poll_ms: u64,
    /// Requests per second at most (0: no limit).
    #[arg(long, value_name = "N", default_value_t = 0.0)]
    rate_limit: f64,
    /// Seconds a request is retried while the node is unreachable or busy.
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    retry_for: u64,
    /// Seconds without a new head after which the follower reports itself stale.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    stale_after: u64,
    /// Serve GET /metrics and GET /health on this address (127.0.0.1:9101).
    #[arg(long, value_name = "ADDR")]
    metrics: Option<SocketAddr>,
    /// Stop once this block is ingested.
    #[arg(long, value_name = "N")]
    until_block: Option<u64>,
    /// Stop once caught up with the node's head.
    #[arg(long)]
    exit_at_head: bool,
    /// Print progress as JSON lines (every step).
    #[arg(long)]
    json: bool,
}

/// The database followed into: one tree, or the trees of a database of
/// several (with --config).
enum Followed {
    Tree(Box<cairn_db::Database>),
    Forest(Box<cairn_db::Forest>),
}

impl FollowCmd {
    /// The sources of --config, checked against the trees of `forest`.
    fn config_sources(
        &self,
        path: &std::path::Path,
        forest: &cairn_db::Forest,
    ) -> Result<FollowConfig, Failure> {
        let bad = |error: &dyn std::fmt::Display| {
            Failure::new(Code::Usage, anyhow!("--config {}: {error}", path.display()))
        };
        let text = std::fs::read_to_string(path).map_err(|error| {
            Failure::new(Code::Input, anyhow!("--config {}: {error}", path.display()))
        })?;
        let config = FollowConfig::parse(&text).map_err(|error| bad(&error))?;
        if !forest.is_journaled() {
            return Err(Failure::new(
                Code::Usage,
                anyhow!(
                    "--config: {} holds one tree in the layout before several; follow one contract into it with --contract, --event and --field, or add trees to it (`cairn tree add`)",
                    self.dir.display()
                ),
            ));
        }
        config
            .check_trees(&forest.names())
            .map_err(|error| bad(&error))?;
        Ok(config)
    }

    /// The sources of --contract, --event, --field, --where and --root-call.
    fn flag_sources(&self) -> Result<Vec<Source>, Failure> {
        let usage = |error: cairn_follow::AbiError| Failure::new(Code::Usage, error);
        if self.event.len() != self.field.len() {
            return Err(Failure::new(
                Code::Usage,
                anyhow!(
                    "{} --event and {} --field: give one --field per --event, in the same order",
                    self.event.len(),
                    self.field.len()
                ),
            ));
        }
        let mut events = self
            .event
            .iter()
            .zip(&self.field)
            .map(|(event, field)| EventField::parse(event, field))
            .collect::<Result<Vec<_>, _>>()
            .map_err(usage)?;
        for filter in &self.filters {
            let (name, value) = parse_filter(filter)?;
            events = events
                .into_iter()
                .map(|event| event.with_filter(name, value))
                .collect::<Result<_, _>>()
                .map_err(usage)?;
        }
        let root_call = self
            .root_call
            .as_deref()
            .map(|call| Call::parse(call, &self.root_arg))
            .transpose()
            .map_err(usage)?;
        let contract = cairn_follow::parse_address(self.contract.as_deref().unwrap_or_default())
            .map_err(usage)?;
        Ok(vec![Source {
            tree: None,
            contract,
            events,
            root_call,
        }])
    }

    pub(crate) fn run(self) -> Result<(), Failure> {
        if self.max_range == 0 {
            return Err(Failure::new(
                Code::Usage,
                anyhow!("--max-range must be at least 1"),
            ));
        }
        if !(self.rate_limit >= 0.0 && self.rate_limit.is_finite()) {
            return Err(Failure::new(
                Code::Usage,
                anyhow!(
                    "--rate-limit {} is not a number of requests per second",
                    self.rate_limit
                ),
            ));
        }
        let finality = match (self.confirmations, self.finality_tag.as_str()) {
            (Some(k), _) => Finality::Confirmations(k),
            (None, "safe") => Finality::Tag("safe"),
            (None, _) => Finality::Tag("finalized"),
        };
        let mut options = FollowOptions {
            sources: Vec::new(),
            from_block: self.from_block,
            finality,
            root_checks: if self.root_checks == "range-ends" {
                RootChecks::RangeEnds
            } else {
                RootChecks::EveryBlock
            },
            max_range: self.max_range,
            poll_interval: Duration::from_millis(self.poll_ms),
            durable_timeout: Duration::from_secs(120),
            until_block: self.until_block,
            exit_at_head: self.exit_at_head,
        };
        let rpc = Rpc::new(
            &self.rpc,
            RpcOptions {
                timeout: Duration::from_secs(30),
                retry_for: Duration::from_secs(self.retry_for),
                min_interval: if self.rate_limit > 0.0 {
                    Duration::from_secs_f64(1.0 / self.rate_limit)
                } else {
                    Duration::ZERO
                },
            },
        )
        .map_err(|error| Failure::new(Code::Input, error))?;
        let metrics = Arc::new(Metrics::new(Duration::from_secs(self.stale_after)));
        if let Some(addr) = self.metrics {
            let bound = cairn_follow::metrics::serve(addr, Arc::clone(&metrics))
                .map_err(|error| Failure::new(Code::Input, anyhow!("--metrics {addr}: {error}")))?;
            eprintln!("metrics on http://{bound}/metrics, health on http://{bound}/health");
        }
        let into = match &self.config {
            Some(path) => {
                let forest = cairn_db::Forest::open(&self.dir).map_err(database::db_failure)?;
                let config = self.config_sources(path, &forest)?;
                options.sources = config.sources;
                options.from_block = config.from_block.unwrap_or(self.from_block);
                Followed::Forest(Box::new(forest))
            }
            None => {
                options.sources = self.flag_sources()?;
                Followed::Tree(Box::new(database::open(
                    &self.dir,
                    Options {
                        background: true,
                        verify: false,
                    },
                )?))
            }
        };
        let started = Instant::now();
        let follower = match &into {
            Followed::Tree(db) => Follower::new(db, rpc, options, metrics),
            Followed::Forest(forest) => Follower::forest(forest, rpc, options, metrics),
        };
        let result = follower.and_then(|mut follower| {
            let mut printed = Instant::now() - Duration::from_secs(2);
            let mut failure = None;
            let outcome = follower.run(|event, metrics| {
                if failure.is_some() {
                    return;
                }
                // Ranges of final history at most once a second; the
                // rest (a block at the head, a reorganisation) always.
                let range = matches!(event, Event::Ingested { from, to, .. } if from != to);
                if self.json || !range || printed.elapsed() >= Duration::from_secs(1) {
                    if range {
                        printed = Instant::now();
                    }
                    if let Err(error) = output::line(&render(event, metrics, self.json)) {
                        failure = Some(error);
                    }
                }
            });
            let stats = follower.rpc().stats();
            outcome.map(|()| (stats, failure))
        });
        let closed = match into {
            Followed::Tree(db) => database::close(*db),
            Followed::Forest(forest) => (*forest).close().map_err(database::db_failure),
        };
        let (stats, printing) = result.map_err(follow_failure)?;
        closed?;
        if let Some(failure) = printing {
            return Err(failure);
        }
        let seconds = started.elapsed().as_secs_f64();
        if self.json {
            return output::line(
                &Object::new()
                    .field("event", "stopped")
                    .field("seconds", (seconds * 1000.0).round() / 1000.0)
                    .field("rpc_requests", stats.requests)
                    .field("rpc_retries", stats.retries)
                    .field("rpc_seconds", (stats.seconds * 1000.0).round() / 1000.0)
                    .finish(),
            );
        }
        output::line(&format!(
            "stopped after {seconds:.2} s: {} requests to the node ({} retried), {:.2} s waiting on it",
            crate::units::group(stats.requests),
            crate::units::group(stats.retries),
            stats.seconds
        ))
    }
}

/// `NAME=VALUE` of --where: the parameter's name and its topic word.
pub(crate) fn parse_filter(text: &str) -> Result<(&str, cairn_follow::Word), Failure> {
    let usage = |reason: String| Failure::new(Code::Usage, anyhow!("--where {text:?}: {reason}"));
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| usage("want NAME=VALUE (groupId=5)".to_owned()))?;
    let word = cairn_follow::abi::parse_word(value.trim()).map_err(usage)?;
    Ok((name.trim(), word))
}

/// One progress line.
fn render(event: &Event, metrics: &Metrics, json: bool) -> String {
    let status = metrics.status();
    let hex = |word: &[u8; 32]| cairn_core::hex::to_hex(word);
    if json {
        let object = match event {
            Event::Resumed { next, leaves } => Object::new()
                .field("event", "resumed")
                .field("next_block", *next)
                .field("size", *leaves),
            Event::Ingested {
                from,
                to,
                values,
                size,
                root,
                trees,
            } => {
                let object = Object::new()
                    .field("event", "ingested")
                    .field("from", *from)
                    .field("to", *to)
                    .field("values", *values)
                    .field("size", *size);
                match root {
                    Some(root) => object.field("root", hex(root)),
                    None => object.raw(
                        "trees",
                        &trees
                            .iter()
                            .fold(Object::new(), |o, (name, size)| o.field(name, *size))
                            .finish(),
                    ),
                }
            }
            Event::Reorg {
                ancestor,
                depth,
                removed,
                seconds,
            } => Object::new()
                .field("event", "reorg")
                .field("ancestor", *ancestor)
                .field("depth", *depth)
                .field("removed", *removed)
                .field("rollback_seconds", *seconds),
        };
        return object
            .field("node_head", status.node_head_block)
            .field("ingested_block", status.ingested_block)
            .field("finalized_block", status.finalized_block)
            .field("lag_blocks", status.lag_blocks)
            .field("lag_seconds", status.lag_seconds)
            .field("leaves", status.leaves)
            .field("reorgs", status.reorgs_total)
            .field("stale", status.stale)
            .finish();
    }
    let tail = format!(
        "(head {}, lag {} blocks{}, {} reorgs{})",
        status.node_head_block,
        status.lag_blocks,
        status
            .lag_seconds
            .map(|s| format!(" / {s} s"))
            .unwrap_or_default(),
        status.reorgs_total,
        if status.stale { ", STALE" } else { "" }
    );
    match event {
        Event::Resumed { next, leaves } => {
            format!("following from block {next}, database of {leaves} leaves")
        }
        Event::Ingested {
            from,
            to,
            values,
            size,
            root,
            trees,
        } => {
            let blocks = if from == to {
                format!("block {from}")
            } else {
                format!("blocks {from}..{to}")
            };
            match root {
                Some(root) => format!(
                    "{blocks}: +{values} values, size {size}, root {} {tail}",
                    hex(root)
                ),
                None => format!(
                    "{blocks}: +{values} values, {} {tail}",
                    trees
                        .iter()
                        .map(|(name, size)| format!("{name} {size}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }
        }
        Event::Reorg {
            ancestor,
            depth,
            removed,
            seconds,
        } => format!(
            "reorg: rolled back {depth} blocks to block {ancestor} ({removed} leaves removed, {:.1} ms) {tail}",
            seconds * 1000.0
        ),
    }
}

/// A follower's error as the CLI's exit code: a root mismatch is a failed
/// check (1); a refusal of the database's a usage error (2) or what the
/// database says; the node, a log, a chain that no longer holds the blocks
/// ingested (a reorganisation below finality or the first block followed,
/// a node restarted with another chain) 4.
fn follow_failure(error: FollowError) -> Failure {
    match error {
        FollowError::RootMismatch { .. } => Failure::new(Code::Invalid, error),
        FollowError::Unsuitable(_) => Failure::new(Code::Usage, error),
        FollowError::Db { ref source, .. } => Failure::new(database::db_code(source), error),
        other => Failure::new(Code::Input, other),
    }
}
