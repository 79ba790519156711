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

use cairn_db::{BlockTag, Database, DbError, Operation};

use crate::abi::{Call, EventField, Word};
use crate::metrics::Metrics;
use crate::rpc::{Address, BlockId, Header, Log, Rpc, RpcError};

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

/// What to follow, and how.
#[derive(Clone, Debug)]
pub struct FollowOptions {
    /// The contract whose logs are read.
    pub contract: Address,
    /// The events, each with the field whose values are leaves.
    pub events: Vec<EventField>,
    /// The first block to read, when the database has no tagged head yet.
    pub from_block: u64,
    /// Where finality comes from.
    pub finality: Finality,
    /// The view call answering the contract's current root, if any.
    pub root_call: Option<Call>,
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
        "root mismatch at block {block}: the contract's {call} is {contract}, cairn's root of {size} leaves is {cairn}"
    )]
    RootMismatch {
        /// The block.
        block: u64,
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

fn db_error(what: impl Into<String>) -> impl FnOnce(DbError) -> FollowError {
    let what = what.into();
    move |source| FollowError::Db { what, source }
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
        /// The database's size after them.
        size: u64,
        /// Its root (0x00..00: empty).
        root: Word,
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

/// A follower: one database, one node, one contract.
#[derive(Debug)]
pub struct Follower<'a> {
    db: &'a Database,
    rpc: Rpc,
    options: FollowOptions,
    metrics: Arc<Metrics>,
    /// The `eth_getLogs` topic filter: per position, the words allowed.
    topics: Vec<Vec<Word>>,
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
    /// A follower of `options` into `db` through `rpc`, resumed from the
    /// database's last tagged head (checked against the node; rolled back
    /// if the chain reorganised meanwhile).
    pub fn new(
        db: &'a Database,
        rpc: Rpc,
        options: FollowOptions,
        metrics: Arc<Metrics>,
    ) -> Result<Follower<'a>, FollowError> {
        db.supports(Operation::BlockTags)
            .map_err(db_error("following a chain"))?;
        if !db.config().explicit_finality {
            return Err(FollowError::Unsuitable(format!(
                "{} finalizes what each checkpoint covers, which a reorganisation may still remove: create it with `cairn init --finality explicit`",
                db.dir().display()
            )));
        }
        let topics = topic_filter(&options.events);
        let mut follower = Follower {
            db,
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
        let last = self
            .db
            .head_at_block(u64::MAX)
            .map_err(db_error("reading the last tagged head"))?;
        let Some(last) = last else {
            if self.db.size() > 0 {
                return Err(FollowError::Unsuitable(format!(
                    "{} holds {} leaves and no block-tagged head: follow a chain into an empty database, or one it filled",
                    self.db.dir().display(),
                    self.db.size()
                )));
            }
            self.report_db();
            return Ok(());
        };
        let first = self
            .db
            .heads(0, 1)
            .map_err(db_error("reading the first tagged head"))?;
        self.first = first.first().map_or(last.block, |head| head.block);
        // The finalized size says which tagged blocks are final.
        // Nothing finalized yet: no block is final (the first block
        // followed, tagged empty, is not one either).
        let finalized = self.db.finalized_size();
        let mut final_block = if finalized == 0 { 0 } else { self.first };
        for head in self
            .db
            .heads(0, usize::MAX)
            .map_err(db_error("reading the tagged heads"))?
            .into_iter()
            .take_while(|_| finalized > 0)
        {
            if head.size <= finalized {
                final_block = head.block;
            } else {
                break;
            }
        }
        self.final_block = final_block;
        self.next = last.block + 1;
        self.metrics
            .finalized_block
            .store(final_block, Ordering::Relaxed);
        self.metrics
            .ingested_block
            .store(last.block, Ordering::Relaxed);
        if let Some(hash) = last.block_hash {
            self.recent.insert(last.block, hash);
        }
        // The chain may have reorganised while nothing followed it.
        let node = self.rpc.header(BlockId::Number(last.block))?;
        if node.map(|h| h.hash) != last.block_hash && last.block_hash.is_some() {
            self.resumed = Some(self.reorganise(last.block)?);
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
                leaves: self.db.size(),
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

    /// Ingests blocks `next..=` at most `last` (all final) with one
    /// `eth_getLogs`, shrinking the range while the node refuses it.
    fn ingest_range(&mut self, last: u64) -> Result<Event, FollowError> {
        let from = self.next;
        let (to, logs) = loop {
            let to = last.min(from.saturating_add(self.range - 1));
            match self
                .rpc
                .logs(&self.options.contract, &self.topics, from, to)
            {
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
        let mut blocks: BTreeMap<u64, (Word, Vec<Word>)> = BTreeMap::new();
        for log in &logs {
            let values = self.values(log)?;
            let entry = blocks
                .entry(log.block_number)
                .or_insert_with(|| (log.block_hash, Vec::new()));
            if entry.0 != log.block_hash {
                return Err(RpcError::Malformed {
                    method: "eth_getLogs",
                    reason: format!("logs of block {} with two block hashes", log.block_number),
                }
                .into());
            }
            entry.1.extend(values);
        }
        if self
            .db
            .head_at_block(u64::MAX)
            .map_err(db_error("reading the last tagged head"))?
            .is_none()
            && !blocks.contains_key(&from)
        {
            // The first block followed is always tagged.
            let hash = match self.rpc.header(BlockId::Number(from))? {
                Some(header) => header.hash,
                None => end.hash,
            };
            blocks.insert(from, (hash, Vec::new()));
        }
        let mut appended = Vec::new();
        let mut values_count = 0u64;
        let mut last_ack = None;
        for (&number, (hash, values)) in &blocks {
            let ack = self
                .db
                .append_tagged(
                    values,
                    BlockTag {
                        number,
                        hash: Some(*hash),
                    },
                )
                .map_err(db_error(format!("appending the values of block {number}")))?;
            let (first, count) = match ack.appended() {
                Some(appended) => {
                    last_ack = Some(ack);
                    appended
                }
                // Refused for values not durable yet (an earlier block of
                // this range): waiting resolves it to the refusal.
                None => {
                    let acked = ack
                        .wait(self.db, self.options.durable_timeout)
                        .map_err(db_error(format!("appending the values of block {number}")))?;
                    (acked.first, acked.count)
                }
            };
            values_count += count;
            appended.push((number, first + count));
        }
        if let Some(ack) = last_ack {
            ack.wait(self.db, self.options.durable_timeout)
                .map_err(db_error(format!("making blocks {from} to {to} durable")))?;
        }
        // Blocks with values only: the first block followed may be tagged
        // empty, and an empty tree's root is no contract's to compare.
        let mut with_values = appended
            .iter()
            .copied()
            .filter(|(number, _)| blocks.get(number).is_some_and(|b| !b.1.is_empty()));
        let checks: Vec<(u64, u64)> = match self.options.root_checks {
            RootChecks::EveryBlock => with_values.collect(),
            RootChecks::RangeEnds => with_values.next_back().into_iter().collect(),
        };
        for (number, size) in checks {
            let root = self
                .db
                .head_at(size)
                .map_err(db_error(format!("reading the root of block {number}")))?
                .root;
            self.check_root(number, size, root)?;
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
        let head = self.db.head();
        self.report_db();
        Ok(Event::Ingested {
            from,
            to,
            values: values_count,
            size: head.size,
            root: head.root.unwrap_or([0; 32]),
        })
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
        let logs = self
            .rpc
            .logs_at(&self.options.contract, &self.topics, &header)?;
        let mut values = Vec::new();
        for log in &logs {
            values.extend(self.values(log)?);
        }
        let anchor = self
            .db
            .head_at_block(u64::MAX)
            .map_err(db_error("reading the last tagged head"))?
            .is_none();
        if !values.is_empty() || anchor {
            let acked = self
                .db
                .append_tagged(
                    &values,
                    BlockTag {
                        number,
                        hash: Some(header.hash),
                    },
                )
                .and_then(|ack| ack.wait(self.db, self.options.durable_timeout))
                .map_err(db_error(format!("appending the values of block {number}")))?;
            if !values.is_empty() {
                self.check_root(number, acked.size, acked.root)?;
            }
        }
        self.recent.insert(number, header.hash);
        self.next = number + 1;
        self.metrics
            .values_total
            .fetch_add(values.len() as u64, Ordering::Relaxed);
        self.metrics.ingested_block.store(number, Ordering::Relaxed);
        self.metrics
            .ingested_timestamp
            .store(header.timestamp, Ordering::Relaxed);
        let head = self.db.head();
        self.report_db();
        Ok(Some(Event::Ingested {
            from: number,
            to: number,
            values: values.len() as u64,
            size: head.size,
            root: head.root.unwrap_or([0; 32]),
        }))
    }

    /// The values of one log, by the event its first topic names.
    fn values(&self, log: &Log) -> Result<Vec<Word>, FollowError> {
        let decode = |source| FollowError::Decode {
            block: log.block_number,
            log_index: log.log_index,
            source,
        };
        let Some(event) = log
            .topics
            .first()
            .and_then(|topic| self.options.events.iter().find(|e| e.topic() == *topic))
        else {
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
            self.db
                .check_value(position, value)
                .map_err(db_error(format!(
                    "block {}, log {}: {} {}",
                    log.block_number,
                    log.log_index,
                    event.name(),
                    "value"
                )))?;
        }
        Ok(values)
    }

    /// Compares the contract's root at `block` with cairn's at `size`.
    fn check_root(&mut self, block: u64, size: u64, root: Option<Word>) -> Result<(), FollowError> {
        let Some(call) = &self.options.root_call else {
            return Ok(());
        };
        let answer = self
            .rpc
            .call(&self.options.contract, call.calldata(), block)?;
        let contract: Option<Word> = answer.get(..32).and_then(|w| w.try_into().ok());
        let cairn = root.unwrap_or([0; 32]);
        self.metrics
            .root_checks_total
            .fetch_add(1, Ordering::Relaxed);
        if contract != Some(cairn) || answer.len() != 32 {
            return Err(FollowError::RootMismatch {
                block,
                call: call.signature().to_owned(),
                contract: format!("0x{}", hex::encode(&answer)),
                cairn: format!("0x{}", hex::encode(cairn)),
                size,
            });
        }
        Ok(())
    }

    /// Finalizes the database up to `block` (final on the chain).
    fn finalize(&mut self, block: u64) -> Result<(), FollowError> {
        let block = block.min(self.next.saturating_sub(1));
        if block <= self.final_block
            || self
                .db
                .head_at_block(block)
                .map_err(db_error("reading a tagged head"))?
                .is_none()
        {
            return Ok(());
        }
        self.db
            .finalize_to_block(block)
            .map_err(db_error(format!("finalizing up to block {block}")))?;
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
                None => self
                    .db
                    .head_at_block(block)
                    .map_err(db_error("reading a tagged head"))?
                    .filter(|head| head.block == block)
                    .and_then(|head| head.block_hash),
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
        let before = self.db.size();
        let started = Instant::now();
        let head = self
            .db
            .truncate_to_block(ancestor)
            .map_err(db_error(format!("rolling back to block {ancestor}")))?;
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
            removed: before.saturating_sub(head.size),
            seconds,
        })
    }

    fn report_db(&self) {
        self.metrics.leaves.store(self.db.size(), Ordering::Relaxed);
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
