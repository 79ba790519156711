//! The follow loop: a contract's events, block by block, into a database.
//!
//! Invariants kept:
//! - every block up to the last one ingested is in the database: a block
//!   with values is one tagged append (tag = number and hash); a block
//!   without is not recorded, except the first block followed, always
//!   tagged, which anchors rollbacks and records where following began;
//! - the database's last durable tag is where a restart resumes (the next
//!   block), after checking that block's hash against the node's: no state
//!   lives outside the database;
//! - final history (at or below the node's finalized block, or K blocks
//!   under its head) is read in ranges and finalized in the database; the
//!   blocks above it one at a time by header, each parent hash checked
//!   against the hash ingested for its parent, so a reorganisation is seen
//!   at the first block of the new branch and rolled back to the last
//!   block both branches share;
//! - after a block's values are durable, the contract's root at that block
//!   (a view call) must equal the database's root at that block's size.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use cairn_db::{Database, DbError, Forest};

use crate::abi::{Call, EventField, Word};
use crate::metrics::Metrics;
use crate::rpc::{Address, BlockId, Header, Log, Rpc, RpcError};
use crate::target::{Block, Target};

/// Where finality comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finality {
    /// The node's `finalized` block (or `safe`), by its tag.
    Tag(&'static str),
    /// The block this many below the node's head.
    Confirmations(u64),
}

/// When the contract's root is compared with the database's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RootChecks {
    /// At every block with values.
    EveryBlock,
    /// At every block with values above final history, and at the last
    /// block with values of each range of final history.
    RangeEnds,
}

/// One contract's events into one tree.
#[derive(Clone, Debug)]
pub struct Source {
    /// The tree fed, in a database of several trees (a tree's name, or a
    /// family's); `None` for a database of one.
    pub tree: Option<String>,
    /// The contract whose logs are read.
    pub contract: Address,
    /// The events, each with the field whose values are leaves.
    pub events: Vec<EventField>,
    /// The view call answering the contract's current root, if any.
    pub root_call: Option<Call>,
}

/// What to follow, and how.
#[derive(Clone, Debug)]
pub struct FollowOptions {
    /// The contracts followed: one for a database of one tree, one per
    /// tree fed for a database of several.
    pub sources: Vec<Source>,
    /// The first block to read, when the database has no block yet.
    pub from_block: u64,
    /// Where finality comes from.
    pub finality: Finality,
    /// When roots are compared.
    pub root_checks: RootChecks,
    /// Blocks per `eth_getLogs` range at most (halved on an error, grown
    /// back after successes).
    pub max_range: u64,
    /// Time between two polls of the node's head once caught up.
    pub poll_interval: Duration,
    /// How long an append may take to be durable.
    pub durable_timeout: Duration,
    /// Stop once this block is ingested.
    pub until_block: Option<u64>,
    /// Stop once caught up with the node's head.
    pub exit_at_head: bool,
}

/// Why following stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FollowError {
    /// The node failed.
    #[error(transparent)]
    Rpc(#[from] RpcError),
    /// A log does not decode as its event.
    #[error("block {block}, log {log_index}: {source}")]
    Decode {
        /// The block.
        block: u64,
        /// The log's index in it.
        log_index: u64,
        /// Why.
        source: crate::abi::AbiError,
    },
    /// The database refused an operation.
    #[error("{what}: {source}")]
    Db {
        /// What was being done.
        what: String,
        /// The database's error.
        source: DbError,
    },
    /// The database cannot be followed into.
    #[error("{0}")]
    Unsuitable(String),
    /// The contract's root differs from the database's.
    #[error(
        "root mismatch at block {block}{}: the contract's {call} is {contract}, cairn's root of {size} leaves is {cairn}",
        tree.as_ref().map(|t| format!(", tree {t:?}")).unwrap_or_default()
    )]
    RootMismatch {
        /// The block.
        block: u64,
        /// The tree compared, in a database of several.
        tree: Option<String>,
        /// The call made.
        call: String,
        /// The contract's root.
        contract: String,
        /// cairn's root (0x00..00 for an empty tree).
        cairn: String,
        /// cairn's size.
        size: u64,
    },
    /// The chain changed below what is final.
    #[error(
        "the chain reorganised below final block {finalized}: block {block} was {stored}, the node now has {node} (a node restarted with another chain, or a reorganisation deeper than the finality followed)"
    )]
    BelowFinality {
        /// The last final block.
        finalized: u64,
        /// The block whose hash changed.
        block: u64,
        /// The hash ingested.
        stored: String,
        /// The node's hash now.
        node: String,
    },
    /// The node keeps answering a block whose parent hash is not the hash
    /// of the node's block below it.
    #[error(
        "the node's block {block} has parent hash {parent_hash}, but its block {} is {parent_block_hash}: the node's chain is inconsistent", block - 1
    )]
    Inconsistent {
        /// The block.
        block: u64,
        /// Its parent hash.
        parent_hash: String,
        /// The hash of the node's block below it.
        parent_block_hash: String,
    },
    /// The chain changed at or below the first block followed.
    #[error(
        "the chain reorganised at block {block}, at or below the first block followed ({first}): block {block} was {stored}, the node now has {node} (a node restarted with another chain; if not, start again with a lower --from-block)"
    )]
    BeforeStart {
        /// The block.
        block: u64,
        /// The first block followed.
        first: u64,
        /// The hash ingested.
        stored: String,
        /// The node's hash now.
        node: String,
    },
}

/// A block hash for a message: hex, or why there is none.
fn hash_text(hash: Option<Word>) -> String {
    hash.map_or_else(
        || "no block".to_owned(),
        |h| format!("0x{}", hex::encode(h)),
    )
}

/// The `eth_getLogs` topic filter of `events`: any of their topics first,
/// then at each indexed position the one word every event's filter asks
/// for there (when they all ask for the same; otherwise any, and the logs
/// are filtered as they are read).
fn topic_filter(events: &[EventField]) -> Vec<Vec<Word>> {
    let mut topics = vec![events.iter().map(EventField::topic).collect::<Vec<_>>()];
    for index in 1..4 {
        let mut asked = events.iter().map(|event| {
            let mut words = event.filters().iter().filter(|(i, _)| *i == index);
            match (words.next(), words.next()) {
                (Some((_, word)), None) => Some(*word),
                _ => None,
            }
        });
        let first = asked.next().flatten();
        let common = first.filter(|word| asked.all(|other| other == Some(*word)));
        topics.push(common.into_iter().collect());
    }
    while topics.last().is_some_and(Vec::is_empty) {
        topics.pop();
    }
    topics
}

/// What one step did, for progress lines.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// Following (re)started at `next`, the database holding `leaves`.
    Resumed {
        /// The next block to read.
        next: u64,
        /// Leaves in the database.
        leaves: u64,
    },
    /// Blocks `from..=to` ingested.
    Ingested {
        /// The first block.
        from: u64,
        /// The last block.
        to: u64,
        /// Values appended.
        values: u64,
        /// The leaves of the trees followed after them.
        size: u64,
        /// The root of a database of one tree (0x00..00: empty); `None`
        /// for several (see `trees`).
        root: Option<Word>,
        /// Each tree followed in a database of several: its name and size.
        trees: Vec<(String, u64)>,
    },
    /// The chain reorganised: rolled back to `ancestor`.
    Reorg {
        /// The last block both branches share.
        ancestor: u64,
        /// Blocks rolled back.
        depth: u64,
        /// Leaves removed.
        removed: u64,
        /// Seconds the rollback took (without re-fetching).
        seconds: f64,
    },
}

/// A follower: one node, one database, and the contracts feeding it (one
/// into a database of one tree; one per tree into a database of several,
/// every chain block one block across them).
#[derive(Debug)]
pub struct Follower<'a> {
    target: Target<'a>,
    rpc: Rpc,
    options: FollowOptions,
    metrics: Arc<Metrics>,
    /// Per source, the `eth_getLogs` topic filter: per position, the words
    /// allowed.
    topics: Vec<Vec<Vec<Word>>>,
    /// Hashes of the blocks ingested above final history, by number.
    recent: BTreeMap<u64, Word>,
    /// The next block to ingest.
    next: u64,
    /// The first block followed (the first tagged head).
    first: u64,
    /// The last block the database holds as final.
    final_block: u64,
    /// Blocks per range now.
    range: u64,
    /// A reorganisation found when resuming, reported when the run starts.
    resumed: Option<Event>,
    /// Consecutive answers of a block whose parent hash is not its parent's.
    inconsistent: u32,
}

/// How many times a block whose parent hash is not the node's parent
/// block's hash is asked for again before the node is called broken.
const INCONSISTENT_RETRIES: u32 = 5;

impl<'a> Follower<'a> {
    /// A follower of `options` (one source) into `db` through `rpc`,
    /// resumed from the database's last tagged head (checked against the
    /// node; rolled back if the chain reorganised meanwhile).
    pub fn new(
        db: &'a Database,
        rpc: Rpc,
        options: FollowOptions,
        metrics: Arc<Metrics>,
    ) -> Result<Follower<'a>, FollowError> {
        let target = Target::tree(db, &options.sources)?;
        Follower::start(target, rpc, options, metrics)
    }

    /// A follower of `options`' sources, each into the tree it names in
    /// `forest`: each chain block's values from every source are one
    /// block of the database (one journal frame across the trees), rolled
    /// back and finalized together; resumed from the database's last
    /// block (checked against the node; rolled back if the chain
    /// reorganised meanwhile).
    pub fn forest(
        forest: &'a Forest,
        rpc: Rpc,
        options: FollowOptions,
        metrics: Arc<Metrics>,
    ) -> Result<Follower<'a>, FollowError> {
        let target = Target::forest(forest, &options.sources)?;
        Follower::start(target, rpc, options, metrics)
    }

    fn start(
        target: Target<'a>,
        rpc: Rpc,
        options: FollowOptions,
        metrics: Arc<Metrics>,
    ) -> Result<Follower<'a>, FollowError> {
        let topics = options
            .sources
            .iter()
            .map(|source| topic_filter(&source.events))
            .collect();
        let mut follower = Follower {
            target,
            rpc,
            metrics,
            topics,
            recent: BTreeMap::new(),
            next: options.from_block,
            first: options.from_block,
            final_block: 0,
            range: options.max_range.max(1),
            resumed: None,
            inconsistent: 0,
            options,
        };
        follower.resume()?;
        Ok(follower)
    }

    /// The next block to ingest.
    pub fn next_block(&self) -> u64 {
        self.next
    }

    /// The node client (its statistics).
    pub fn rpc(&self) -> &Rpc {
        &self.rpc
    }

    fn resume(&mut self) -> Result<(), FollowError> {
        let Some((last, last_hash)) = self.target.last()? else {
            let empty = match &self.target {
                Target::Tree(db) => db.size() == 0,
                Target::Forest { trees, .. } => trees.iter().all(|(_, db)| {
                    db.size() <= u64::from(db.kind() == cairn_core::TreeKind::Indexed)
                }),
            };
            if !empty {
                return Err(FollowError::Unsuitable(format!(
                    "{} holds {} leaves and no block: follow a chain into empty trees, or ones it filled",
                    self.target.dir().display(),
                    self.target.leaves()
                )));
            }
            self.report_db();
            return Ok(());
        };
        self.first = self.target.first()?.unwrap_or(last);
        self.final_block = self.target.final_block()?;
        self.next = last + 1;
        self.metrics
            .finalized_block
            .store(self.final_block, Ordering::Relaxed);
        self.metrics.ingested_block.store(last, Ordering::Relaxed);
        if let Some(hash) = last_hash {
            self.recent.insert(last, hash);
        }
        // The chain may have reorganised while nothing followed it.
        let node = self.rpc.header(BlockId::Number(last))?;
        if node.map(|h| h.hash) != last_hash && last_hash.is_some() {
            self.resumed = Some(self.reorganise(last)?);
        }
        self.report_db();
        Ok(())
    }

    /// Follows until stopped by `until_block`, `exit_at_head` or an error;
    /// `report` sees each step.
    pub fn run(&mut self, mut report: impl FnMut(&Event, &Metrics)) -> Result<(), FollowError> {
        report(
            &Event::Resumed {
                next: self.next,
                leaves: self.target.leaves(),
            },
            &self.metrics,
        );
        if let Some(event) = self.resumed.take() {
            report(&event, &self.metrics);
        }
        loop {
            let Some(head) = self.rpc.header(BlockId::Tag("latest"))? else {
                return Err(RpcError::Malformed {
                    method: "eth_getBlockByNumber",
                    reason: "no latest block".to_owned(),
                }
                .into());
            };
            self.metrics.node_head(head.number, head.timestamp);
            // The last block ingested must still be the node's.
            if let Some((&last, &hash)) = self.recent.last_key_value()
                && last + 1 == self.next
            {
                let node = if last <= head.number {
                    self.rpc.header(BlockId::Number(last))?.map(|h| h.hash)
                } else {
                    None
                };
                if node != Some(hash) {
                    let event = self.reorganise(last.min(head.number))?;
                    report(&event, &self.metrics);
                }
            }
            let stop = self.options.until_block.unwrap_or(u64::MAX);
            let final_target = self.final_target(&head)?.min(stop);
            while self.next <= final_target {
                let event = self.ingest_range(final_target)?;
                report(&event, &self.metrics);
            }
            self.finalize(final_target)?;
            while self.next <= head.number.min(stop) {
                match self.ingest_block()? {
                    Some(event) => report(&event, &self.metrics),
                    None => break,
                }
            }
            self.sync_rpc_metrics();
            if self.next > stop || (self.options.exit_at_head && self.next > head.number) {
                return Ok(());
            }
            if self.next > head.number {
                std::thread::sleep(self.options.poll_interval);
            }
        }
    }

    /// The last block final now.
    fn final_target(&mut self, head: &Header) -> Result<u64, FollowError> {
        Ok(match self.options.finality {
            Finality::Confirmations(k) => head.number.saturating_sub(k),
            Finality::Tag(tag) => match self.rpc.header(BlockId::Tag(tag))? {
                Some(header) => header.number.min(head.number),
                None => 0,
            },
        })
    }

    /// Every source's logs of blocks `from..=to`, one `eth_getLogs` each.
    fn range_logs(&mut self, from: u64, to: u64) -> Result<Vec<Vec<Log>>, RpcError> {
        let mut all = Vec::with_capacity(self.options.sources.len());
        for (source, topics) in self.options.sources.iter().zip(&self.topics) {
            all.push(self.rpc.logs(&source.contract, topics, from, to)?);
        }
        Ok(all)
    }

    /// Ingests blocks `next..=` at most `last` (all final) with one
    /// `eth_getLogs` a source, shrinking the range while the node refuses
    /// it.
    fn ingest_range(&mut self, last: u64) -> Result<Event, FollowError> {
        let from = self.next;
        let (to, logs) = loop {
            let to = last.min(from.saturating_add(self.range - 1));
            match self.range_logs(from, to) {
                Ok(logs) => break (to, logs),
                // Too many results, a range too long, a response too large:
                // providers word it differently; a shorter range is the fix.
                Err(RpcError::Node { .. }) if self.range > 1 => self.range /= 2,
                Err(error) => return Err(error.into()),
            }
        };
        let end = self
            .rpc
            .header(BlockId::Number(to))?
            .ok_or_else(|| RpcError::Malformed {
                method: "eth_getBlockByNumber",
                reason: format!("no block {to}, below the final block {last}"),
            })?;
        let sources = self.options.sources.len();
        let mut blocks: BTreeMap<u64, Block> = BTreeMap::new();
        for (source, logs) in logs.iter().enumerate() {
            for log in logs {
                let values = self.values(source, log)?;
                let block = blocks.entry(log.block_number).or_insert_with(|| Block {
                    number: log.block_number,
                    hash: log.block_hash,
                    values: vec![Vec::new(); sources],
                });
                if block.hash != log.block_hash {
                    return Err(RpcError::Malformed {
                        method: "eth_getLogs",
                        reason: format!("logs of block {} with two block hashes", log.block_number),
                    }
                    .into());
                }
                block.values[source].extend(values);
            }
        }
        if self.target.last()?.is_none() && !blocks.contains_key(&from) {
            // The first block followed is always held.
            let hash = match self.rpc.header(BlockId::Number(from))? {
                Some(header) => header.hash,
                None => end.hash,
            };
            blocks.insert(
                from,
                Block {
                    number: from,
                    hash,
                    values: vec![Vec::new(); sources],
                },
            );
        }
        let blocks: Vec<Block> = blocks.into_values().collect();
        let values_count: u64 = blocks
            .iter()
            .flat_map(|b| &b.values)
            .map(|v| v.len() as u64)
            .sum();
        // Written in runs ending where roots are compared: at every block
        // with values, or at the range's end.
        let checking = self.options.sources.iter().any(|s| s.root_call.is_some());
        let mut run_start = 0;
        for (index, block) in blocks.iter().enumerate() {
            let with_values = block.values.iter().any(|v| !v.is_empty());
            let cut = index + 1 == blocks.len()
                || (checking && with_values && self.options.root_checks == RootChecks::EveryBlock);
            if !cut {
                continue;
            }
            let run = &blocks[run_start..=index];
            run_start = index + 1;
            self.target.commit(run, self.options.durable_timeout)?;
            if checking {
                // Blocks with values only: the first block followed may
                // be held empty, and an empty tree's root is no contract's
                // to compare.
                let fed: Vec<bool> = (0..sources)
                    .map(|s| run.iter().any(|b| !b.values[s].is_empty()))
                    .collect();
                let at = run
                    .iter()
                    .rev()
                    .find(|b| b.values.iter().any(|v| !v.is_empty()))
                    .map(|b| b.number);
                if let Some(at) = at {
                    self.check_roots(at, &fed)?;
                }
            }
        }
        self.next = to + 1;
        self.recent.clear();
        self.recent.insert(to, end.hash);
        self.metrics
            .values_total
            .fetch_add(values_count, Ordering::Relaxed);
        self.metrics.ingested_block.store(to, Ordering::Relaxed);
        self.metrics
            .ingested_timestamp
            .store(end.timestamp, Ordering::Relaxed);
        // Grow back towards the maximum after a success.
        self.range = (self.range * 2).min(self.options.max_range.max(1));
        self.report_db();
        Ok(self.ingested(from, to, values_count))
    }

    /// The event of blocks `from..=to` ingested.
    fn ingested(&self, from: u64, to: u64, values: u64) -> Event {
        let (size, root, trees) = match &self.target {
            Target::Tree(db) => {
                let head = db.head();
                (head.size, Some(head.root.unwrap_or([0; 32])), Vec::new())
            }
            Target::Forest { .. } => {
                let trees: Vec<(String, u64)> = self
                    .target
                    .sizes()
                    .into_iter()
                    .map(|(name, size)| (name.unwrap_or_default(), size))
                    .collect();
                (trees.iter().map(|(_, s)| s).sum(), None, trees)
            }
        };
        Event::Ingested {
            from,
            to,
            values,
            size,
            root,
            trees,
        }
    }

    /// Ingests block `next` (above final history) by its header, checking
    /// its parent; `None` when the node has no such block (yet).
    fn ingest_block(&mut self) -> Result<Option<Event>, FollowError> {
        let number = self.next;
        let Some(header) = self.rpc.header(BlockId::Number(number))? else {
            return Ok(None);
        };
        if let Some(parent) = number.checked_sub(1)
            && let Some(&known) = self.recent.get(&parent)
            && known != header.parent_hash
        {
            let node_parent = self.rpc.header(BlockId::Number(parent))?.map(|h| h.hash);
            if node_parent != Some(known) {
                return self.reorganise(parent).map(Some);
            }
            // The node's block has a parent other than the node's block
            // below it: a node between two branches answers so for a
            // moment; one that keeps answering so is broken.
            self.inconsistent += 1;
            if self.inconsistent > INCONSISTENT_RETRIES {
                return Err(FollowError::Inconsistent {
                    block: number,
                    parent_hash: format!("0x{}", hex::encode(header.parent_hash)),
                    parent_block_hash: format!("0x{}", hex::encode(known)),
                });
            }
            std::thread::sleep(self.options.poll_interval);
            return Ok(None);
        }
        self.inconsistent = 0;
        let mut values = Vec::with_capacity(self.options.sources.len());
        for source in 0..self.options.sources.len() {
            let contract = self.options.sources[source].contract;
            let logs = self.rpc.logs_at(&contract, &self.topics[source], &header)?;
            let mut of_source = Vec::new();
            for log in &logs {
                of_source.extend(self.values(source, log)?);
            }
            values.push(of_source);
        }
        let fed: Vec<bool> = values.iter().map(|v| !v.is_empty()).collect();
        let count: u64 = values.iter().map(|v| v.len() as u64).sum();
        let anchor = self.target.last()?.is_none();
        if count > 0 || anchor {
            self.target.commit(
                &[Block {
                    number,
                    hash: header.hash,
                    values,
                }],
                self.options.durable_timeout,
            )?;
            if count > 0 {
                self.check_roots(number, &fed)?;
            }
        }
        self.recent.insert(number, header.hash);
        self.next = number + 1;
        self.metrics
            .values_total
            .fetch_add(count, Ordering::Relaxed);
        self.metrics.ingested_block.store(number, Ordering::Relaxed);
        self.metrics
            .ingested_timestamp
            .store(header.timestamp, Ordering::Relaxed);
        self.report_db();
        Ok(Some(self.ingested(number, number, count)))
    }

    /// The values of one log of source `source`, by the event its first
    /// topic names.
    fn values(&self, source: usize, log: &Log) -> Result<Vec<Word>, FollowError> {
        let decode = |source| FollowError::Decode {
            block: log.block_number,
            log_index: log.log_index,
            source,
        };
        let Some(event) = log.topics.first().and_then(|topic| {
            self.options.sources[source]
                .events
                .iter()
                .find(|e| e.topic() == *topic)
        }) else {
            return Err(RpcError::Malformed {
                method: "eth_getLogs",
                reason: format!(
                    "log {} of block {} is none of the events asked for",
                    log.log_index, log.block_number
                ),
            }
            .into());
        };
        if !event.matches(&log.topics) {
            return Ok(Vec::new());
        }
        let values = event.values(&log.topics, &log.data).map_err(decode)?;
        for (position, value) in values.iter().enumerate() {
            self.target
                .check_value(source, position, value)
                .map_err(|error| FollowError::Db {
                    what: format!(
                        "block {}, log {}: {} value",
                        log.block_number,
                        log.log_index,
                        event.name()
                    ),
                    source: error,
                })?;
        }
        Ok(values)
    }

    /// Compares each source's contract root at `block` with its tree's
    /// root now, for the sources `fed` says got values.
    fn check_roots(&mut self, block: u64, fed: &[bool]) -> Result<(), FollowError> {
        let wanted = self
            .options
            .sources
            .iter()
            .zip(fed)
            .any(|(source, fed)| *fed && source.root_call.is_some());
        if !wanted {
            return Ok(());
        }
        let roots = self.target.roots()?;
        for (index, (size, root)) in roots.into_iter().enumerate() {
            let source = &self.options.sources[index];
            let Some(call) = source.root_call.as_ref().filter(|_| fed[index]) else {
                continue;
            };
            let answer = self.rpc.call(&source.contract, call.calldata(), block)?;
            let contract: Option<Word> = answer.get(..32).and_then(|w| w.try_into().ok());
            let cairn = root.unwrap_or([0; 32]);
            self.metrics
                .root_checks_total
                .fetch_add(1, Ordering::Relaxed);
            if contract != Some(cairn) || answer.len() != 32 {
                return Err(FollowError::RootMismatch {
                    block,
                    tree: source.tree.clone(),
                    call: call.signature().to_owned(),
                    contract: format!("0x{}", hex::encode(&answer)),
                    cairn: format!("0x{}", hex::encode(cairn)),
                    size,
                });
            }
        }
        Ok(())
    }

    /// Finalizes the database up to `block` (final on the chain).
    fn finalize(&mut self, block: u64) -> Result<(), FollowError> {
        let block = block.min(self.next.saturating_sub(1));
        if block <= self.final_block || !self.target.finalize_to_block(block)? {
            return Ok(());
        }
        self.final_block = block;
        // Hashes at or below the final block are no longer needed, but the
        // final block's own, which the next block's parent is checked
        // against.
        self.recent = self.recent.split_off(&block);
        self.metrics.finalized_block.store(block, Ordering::Relaxed);
        Ok(())
    }

    /// Finds the last block at or below `from` that the node and the
    /// database agree on, rolls the database back to it and goes on from
    /// the block after.
    fn reorganise(&mut self, from: u64) -> Result<Event, FollowError> {
        // Below the final block nothing may change, and only tagged blocks
        // have a hash to compare: a node whose head is below it (restarted
        // with a shorter chain) is checked at the final block itself.
        let mut block = from.max(self.final_block);
        let ancestor = loop {
            let stored = match self.recent.get(&block) {
                Some(hash) => Some(*hash),
                None => self.target.hash_at(block)?,
            };
            let node = self.rpc.header(BlockId::Number(block))?.map(|h| h.hash);
            let agree = match stored {
                Some(stored) => node == Some(stored),
                // An untagged block at or below the final one is the
                // node's; above it every block ingested has its hash kept.
                None => block <= self.final_block && node.is_some(),
            };
            if agree {
                break block;
            }
            if block <= self.final_block {
                return Err(FollowError::BelowFinality {
                    finalized: self.final_block,
                    block,
                    stored: stored.map_or_else(|| "not kept".to_owned(), |h| hash_text(Some(h))),
                    node: hash_text(node),
                });
            }
            if block <= self.first {
                return Err(FollowError::BeforeStart {
                    block,
                    first: self.first,
                    stored: stored.map_or_else(|| "not kept".to_owned(), |h| hash_text(Some(h))),
                    node: hash_text(node),
                });
            }
            block -= 1;
        };
        let depth = self.next.saturating_sub(1).saturating_sub(ancestor);
        let started = Instant::now();
        let removed = self.target.truncate_to_block(ancestor)?;
        let seconds = started.elapsed().as_secs_f64();
        self.recent.split_off(&(ancestor + 1));
        self.next = ancestor + 1;
        self.metrics.reorg(depth);
        self.metrics
            .ingested_block
            .store(ancestor, Ordering::Relaxed);
        self.report_db();
        Ok(Event::Reorg {
            ancestor,
            depth,
            removed,
            seconds,
        })
    }

    fn report_db(&self) {
        self.metrics
            .leaves
            .store(self.target.leaves(), Ordering::Relaxed);
    }

    fn sync_rpc_metrics(&self) {
        let stats = self.rpc.stats();
        self.metrics
            .rpc_requests_total
            .store(stats.requests, Ordering::Relaxed);
        self.metrics
            .rpc_retries_total
            .store(stats.retries, Ordering::Relaxed);
        self.metrics
            .rpc_wait_ms_total
            .store((stats.seconds * 1000.0) as u64, Ordering::Relaxed);
    }
}
