//! The handlers. An append runs on the async worker (a batch of up to 64
//! untagged leaves) or the blocking pool (larger or tagged), then awaits its
//! durability token (`Token::durable`: the store's commit thread makes one
//! group commit for every waiting request, and its notification wakes
//! them; no thread per request). Reads are answered from the database's
//! published durable head (`Db::durable_head`: the durable size and a
//! snapshot the store took at or after the commit that made it durable),
//! so a reader never sees a size that is not durable and a crash can
//! never take back what a response said.
//!
//! The token, not the notification, decides whether an append is
//! acknowledged: a rollback can undo an append after its leaves were
//! durable, and an append made after a rollback can end below a size
//! durable before it, so a durable size alone says nothing about one
//! append.
//!
//! Rollbacks make "durable" something that can shrink, so every read is
//! made between two rollbacks: a rollback counts itself in `rollbacks`
//! (odd while one runs) before it changes anything and again once it is
//! done, and a read that saw the count change under it is made again.
//! Reads wait while a rollback runs; nothing read before it (a durable
//! head, an acknowledged block) is used after it. (The store replaces its
//! published head inside the rollback, so a head read after one never
//! holds the old tree.)

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use cairn_core::hex::parse_hash;
use cairn_core::{Hash, TreeHead};
use cairn_db::StoreError;
use cairn_db::{Appended, BlockTag, Db, DbError, DbSnapshot, ErrorKind, TaggedHead, Token};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::config::ServerConfig;
use crate::error::ApiError;
use crate::metrics::Metrics;
use crate::routes::OPENAPI_JSON;
use crate::{auth, body};
use cairn_core::hex::to_hex as hex;

/// What every handler shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub db: Arc<Db>,
    pub config: ServerConfig,
    pub metrics: Arc<Metrics>,
    /// The first storage fault a request met that the store did not
    /// record itself (a write of the nullifier set's files; the store's
    /// own write and sync failures are in its durable head): the server
    /// reports itself unhealthy after either.
    pub failure: Mutex<Option<String>>,
    /// Rollbacks begun and ended: odd while one runs (see `consistent`).
    rollbacks: watch::Sender<u64>,
    /// Serialises rollbacks and finalizations (each checks the durable
    /// size, then acts on it).
    writes: Mutex<()>,
    /// The highest block whose tagged append was acknowledged (or
    /// recovered): its tag and every earlier one are durable.
    acked_block: Mutex<Option<u64>>,
}

/// The handlers' state.
#[derive(Clone, Debug)]
pub(crate) struct AppState(Arc<Shared>);

impl AppState {
    pub fn new(db: Arc<Db>, config: ServerConfig) -> AppState {
        let metrics = Arc::new(Metrics::default());
        // Every checkpoint written while serving, the store's automatic
        // ones included (not only the one at shutdown).
        let observed = Arc::clone(&metrics);
        db.set_checkpoint_observer(Box::new(move |_, elapsed| {
            observed.observe_checkpoint(elapsed);
        }));
        // Every tag recovered at open is durable.
        let acked_block = db.head_at_block(u64::MAX).map(|head| head.block);
        AppState(Arc::new(Shared {
            db,
            config,
            metrics,
            failure: Mutex::new(None),
            rollbacks: watch::Sender::new(0),
            writes: Mutex::new(()),
            acked_block: Mutex::new(acked_block),
        }))
    }

    pub fn shared(&self) -> &Shared {
        &self.0
    }
}

impl Shared {
    /// `read(generation)`, made between two rollbacks: run again if a
    /// rollback began or ended meanwhile, and only once none is running.
    /// Whatever `read` gets from the database (sizes, snapshots, lookups)
    /// is then of one tree, and that tree is the current one or one every
    /// later rollback began after. `read` must be cheap: it holds nothing,
    /// but may run more than once.
    pub(crate) async fn consistent<T>(&self, mut read: impl FnMut(u64) -> T) -> T {
        loop {
            let generation = *self.rollbacks.borrow();
            if generation % 2 == 1 {
                let mut ended = self.rollbacks.subscribe();
                // The sender lives as long as `self`.
                let _ = ended.wait_for(|g| g % 2 == 0).await;
                continue;
            }
            let value = read(generation);
            if *self.rollbacks.borrow() == generation {
                return value;
            }
        }
    }

    /// The durable size and a snapshot that holds at least that many
    /// leaves (answers are views of it at the durable size): the
    /// database's published durable head, read without a lock or any
    /// hashing (the store takes the snapshot once per group commit).
    /// Inside `consistent` only.
    pub(crate) fn durable(&self) -> (DbSnapshot, u64) {
        let head = self.db.durable_head();
        (head.snapshot, head.size)
    }

    /// A snapshot of at least `size` leaves (which the tree must hold):
    /// the durable head's if it does (it does once an append ending at
    /// `size` is durable, unless a rollback ran since), else a new one.
    /// Inside `consistent` only.
    fn snapshot_covering(&self, size: u64) -> DbSnapshot {
        let head = self.db.durable_head();
        if head.snapshot.size() >= size {
            return head.snapshot;
        }
        self.db.snapshot()
    }

    /// The first storage fault: the store's (a failed write or sync of
    /// the log stops every acknowledgement), else one a request met.
    fn failure(&self) -> Option<String> {
        if let Some(failure) = self.db.durable_head().failure {
            return Some(failure.to_string());
        }
        self.failure.lock().clone()
    }

    /// Records that block `block`'s tagged append was acknowledged, unless
    /// a rollback began since `generation` (inside `consistent` only).
    fn note_acked_block(&self, block: u64, generation: u64) {
        let mut acked = self.acked_block.lock();
        if *self.rollbacks.borrow() == generation {
            *acked = Some(acked.map_or(block, |a| a.max(block)));
        }
    }

    /// Which tagged heads are durable, when `durable` leaves are: those
    /// a durable leaf follows, and those up to the last block whose
    /// append was acknowledged. (Heads are made durable in order, before
    /// the leaves that follow them.)
    fn tag_durability(&self, durable: u64) -> impl Fn(u64, u64) -> bool {
        let acked = *self.acked_block.lock();
        move |block, size| size < durable || acked.is_some_and(|a| block <= a)
    }

    /// Records a storage fault a request met, if it stopped
    /// acknowledgements (a failed checkpoint, rollback publication or
    /// finalization changes nothing and is in the store's health).
    fn record_failure(&self, error: &DbError) {
        if error.is_storage_fault() && self.db.durable_head().failure.is_some() {
            let mut failure = self.failure.lock();
            if failure.is_none() {
                tracing::error!(error = %error, "the database failed: no more appends will be acknowledged");
                *failure = Some(error.to_string());
            }
        }
    }
}

/// A rollback's stretch of `Shared::rollbacks`: counted when it opens and
/// again when it closes (also on a panic).
struct RollbackWindow<'a>(&'a Shared);

impl<'a> RollbackWindow<'a> {
    fn open(shared: &'a Shared) -> RollbackWindow<'a> {
        shared.rollbacks.send_modify(|g| *g += 1);
        RollbackWindow(shared)
    }
}

impl Drop for RollbackWindow<'_> {
    fn drop(&mut self) {
        self.0.rollbacks.send_modify(|g| *g += 1);
    }
}

pub(crate) fn json<T: Serialize>(status: StatusCode, value: &T) -> Response {
    let body =
        serde_json::to_vec(value).unwrap_or_else(|e| unreachable!("serialising plain data: {e}"));
    with_type(status, body.into(), "application/json")
}

pub(crate) fn with_type(status: StatusCode, body: Body, content_type: &'static str) -> Response {
    let mut response = (status, body).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

// -- POST /v1/leaves ----------------------------------------------------------

#[derive(Serialize)]
struct AppendedJson {
    first_index: u64,
    count: u64,
    size: u64,
    root: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    block: Option<BlockJson>,
}

#[derive(Serialize)]
struct BlockJson {
    number: u64,
    hash: Option<String>,
}

impl From<BlockTag> for BlockJson {
    fn from(tag: BlockTag) -> BlockJson {
        BlockJson {
            number: tag.number,
            hash: tag.hash.as_ref().map(hex),
        }
    }
}

/// The block of a binary append, from the query: `?block=N[&block_hash=0x..]`.
fn query_block(
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<Option<BlockTag>, ApiError> {
    let pairs = query_pairs(query, &["block", "block_hash"])?;
    let number = find(&pairs, "block")
        .map(|text| parse_u64("block", text))
        .transpose()?;
    let hash = find(&pairs, "block_hash")
        .map(body::block_hash)
        .transpose()?;
    match (number, hash) {
        (Some(number), hash) => Ok(Some(BlockTag { number, hash })),
        (None, Some(_)) => Err(ApiError::bad_request(
            "block_hash without block: give the block number too (?block=N&block_hash=0x..)",
        )),
        (None, None) => Ok(None),
    }
}

pub(crate) async fn append(
    State(state): State<AppState>,
    headers: HeaderMap,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
    request_body: Body,
) -> Result<Response, ApiError> {
    let shared = state.shared();
    auth::check_write(shared.config.token.as_deref(), &headers)?;
    let encoding = body::encoding(&headers)?;
    let query_block = query_block(query)?;
    let limit = shared.config.max_body_bytes;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(declared) = declared
        && declared > limit as u64
    {
        return Err(too_large_body(format!("{declared} bytes"), limit));
    }
    let bytes = read_body(request_body, limit).await?;
    shared
        .metrics
        .body_bytes
        .fetch_add(bytes.len() as u64, Ordering::Relaxed);
    let batch = body::batch(
        encoding,
        &bytes,
        shared.config.max_batch_leaves,
        query_block,
        shared.db.config().tree().hash,
    )?;
    drop(bytes);
    let block = batch.block;
    // A small untagged batch is appended on this worker: the append does
    // no I/O (the commit thread writes), so it is microseconds, and
    // handing it to the blocking pool cost two thread switches per
    // request, the largest part of a single-leaf append's CPU. Larger
    // batches (the set's insert, copying leaves) and tagged ones (the
    // heads) go to the blocking pool.
    let (appended, appended_at) = if block.is_none() && batch.leaves.len() <= INLINE_APPEND_MAX {
        append_leaves(shared, &batch)?
    } else {
        let task_state = state.clone();
        tokio::task::spawn_blocking(move || append_leaves(task_state.shared(), &batch))
            .await
            .map_err(|e| ApiError::internal(format!("the append task failed: {e}")))??
    };
    let end = appended.first + appended.count;
    let metrics = &shared.metrics;
    let durable = durable_within(
        &appended.token,
        shared.config.durability_timeout,
        end,
        || shared.db.durable_size(),
    )
    .await;
    if let Err(error) = durable {
        return Err(refused_append(shared, &appended, DbError::Store(error)));
    }
    metrics.durable_wait_seconds.observe(appended_at.elapsed());
    // The head at the end of the batch, from the tree the batch is still
    // in: a rollback may have removed it since it was durable.
    let checked = shared
        .consistent(
            |generation| -> Result<Result<Option<Hash>, ApiError>, StoreError> {
                if !appended.token.is_durable()? {
                    return Ok(Err(ApiError::internal(format!(
                        "the append ending at {end} was reported durable but is not"
                    ))));
                }
                let root = match shared.snapshot_covering(end).view(end) {
                    Ok(view) => view.root(),
                    Err(e) => {
                        return Ok(Err(ApiError::internal(format!(
                            "the root at size {end}: {e}"
                        ))));
                    }
                };
                if let Some(block) = block {
                    shared.note_acked_block(block.number, generation);
                }
                Ok(Ok(root))
            },
        )
        .await;
    let root = match checked {
        Ok(root) => root?,
        Err(error) => return Err(refused_append(shared, &appended, DbError::Store(error))),
    };
    if appended.count > 0 && root.is_none() {
        return Err(ApiError::internal(format!("no root at size {end}")));
    }
    metrics.appends.fetch_add(1, Ordering::Relaxed);
    metrics.leaves.fetch_add(appended.count, Ordering::Relaxed);
    Ok(json(
        StatusCode::OK,
        &AppendedJson {
            first_index: appended.first,
            count: appended.count,
            size: end,
            root: root.as_ref().map(hex),
            block: block.map(BlockJson::from),
        },
    ))
}

/// The answer to an append that was made but not acknowledged: rolled
/// back before it was (409), or not durable (503, storage failure or
/// timeout).
/// Waits for `token` on its async wait (no thread), at most `timeout`: the
/// token decides, the store's notification only wakes the wait. A timeout
/// is [`StoreError::Timeout`] for the `want` leaves, with the durable size
/// `durable` reads then.
pub(crate) async fn durable_within(
    token: &Token,
    timeout: std::time::Duration,
    want: u64,
    durable: impl FnOnce() -> u64,
) -> Result<(), StoreError> {
    tokio::time::timeout(timeout, token.durable())
        .await
        .unwrap_or_else(|_| {
            Err(StoreError::Timeout {
                want,
                durable: durable(),
            })
        })
}

fn refused_append(shared: &Shared, appended: &Appended, error: DbError) -> ApiError {
    let end = appended.first + appended.count;
    if error.kind() == ErrorKind::RolledBack {
        shared
            .metrics
            .rolled_back_appends
            .fetch_add(1, Ordering::Relaxed);
        let mut refused = ApiError::from_append(error);
        refused.message = format!(
            "leaves {}..{end} were appended but a rollback removed them before they were acknowledged: {}",
            appended.first, refused.message
        );
        return refused;
    }
    shared
        .metrics
        .append_failures
        .fetch_add(1, Ordering::Relaxed);
    shared.record_failure(&error);
    let mut refused = ApiError::from_append(error);
    if refused.status == StatusCode::SERVICE_UNAVAILABLE {
        refused.message = format!(
            "leaves {}..{end} were appended but not acknowledged as durable: {}",
            appended.first, refused.message
        );
    }
    refused
}

fn too_large_body(what: String, limit: usize) -> ApiError {
    ApiError::too_large(format!(
        "a request body of {what} exceeds this server's limit of {limit} bytes"
    ))
}

async fn read_body(request_body: Body, limit: usize) -> Result<Bytes, ApiError> {
    axum::body::to_bytes(request_body, limit)
        .await
        .map_err(|error| {
            let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&error);
            while let Some(cause) = source {
                if cause.is::<http_body_util::LengthLimitError>() {
                    return too_large_body(format!("more than {limit} bytes"), limit);
                }
                source = cause.source();
            }
            ApiError::bad_request(format!("cannot read the request body: {error}"))
        })
}

/// The most leaves an untagged append runs on the async worker itself.
const INLINE_APPEND_MAX: usize = 64;

/// Appends a batch (the writer lock and the set insert, no I/O): on the
/// async worker for a small untagged batch, else on the blocking pool.
fn append_leaves(shared: &Shared, batch: &body::Batch) -> Result<(Appended, Instant), ApiError> {
    let metrics = &shared.metrics;
    let start = Instant::now();
    let appended = match batch.block {
        Some(tag) => shared.db.append_tagged(&batch.leaves, tag),
        None => shared.db.append_batch(&batch.leaves),
    };
    let appended = appended.map_err(|error| {
        if let DbError::Duplicates { duplicates, .. } = &error {
            metrics.duplicate_batches.fetch_add(1, Ordering::Relaxed);
            metrics
                .duplicate_values
                .fetch_add(duplicates.len() as u64, Ordering::Relaxed);
        } else if error.kind() == ErrorKind::BlockOrder {
            metrics.block_order_refusals.fetch_add(1, Ordering::Relaxed);
        } else {
            metrics.append_failures.fetch_add(1, Ordering::Relaxed);
            shared.record_failure(&error);
        }
        ApiError::from_append(error)
    })?;
    let appended_at = Instant::now();
    metrics.append_seconds.observe(appended_at - start);
    Ok((appended, appended_at))
}

// -- GET /v1/root ---------------------------------------------------------------

#[derive(Serialize)]
struct RootJson {
    size: u64,
    root: Option<String>,
    depth: u32,
    arity: u64,
    hash: &'static str,
    finalized: u64,
    /// `lean` or `imt`.
    kind: &'static str,
    /// An imt's zero value (`null` for a lean tree).
    zero: Option<String>,
}

pub(crate) async fn root(State(state): State<AppState>) -> Result<Response, ApiError> {
    let shared = state.shared();
    let (snapshot, size, finalized) = shared
        .consistent(|_| {
            // Read first: it is durable when it is published.
            let finalized = shared.db.finalized_size();
            let (snapshot, size) = shared.durable();
            (snapshot, size, finalized)
        })
        .await;
    let tree = snapshot.config();
    let view = snapshot
        .view(size)
        .map_err(|e| ApiError::internal(format!("the tree at size {size}: {e}")))?;
    Ok(json(
        StatusCode::OK,
        &RootJson {
            size,
            root: view.root().as_ref().map(hex),
            depth: tree.depth_at(size),
            arity: tree.arity.as_u64(),
            hash: tree.hash.name(),
            finalized: finalized.min(size),
            kind: tree.kind.name(),
            zero: tree.kind.zero().as_ref().map(hex),
        },
    ))
}

// -- GET /v1/leaves/{value} -----------------------------------------------------

#[derive(Serialize)]
struct IndexJson {
    index: u64,
}

pub(crate) async fn leaf_index(
    State(state): State<AppState>,
    value: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let shared = state.shared();
    let Path(text) = value.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let hash = shared.db.config().tree().hash;
    let value =
        body::parse_leaf(&text, hash).map_err(|e| ApiError::bad_request(format!("leaf: {e}")))?;
    let (found, durable) = shared
        .consistent(|_| {
            let found = shared.db.index_of(&value);
            // Read after the lookup: a leaf found below it is durable.
            (found, shared.db.durable_size())
        })
        .await;
    let found = found.map_err(|error| match error {
        DbError::NoSet => ApiError::new(StatusCode::NOT_IMPLEMENTED, error.to_string()),
        other => ApiError::internal(other.to_string()),
    })?;
    match found {
        Some(index) if index < durable => Ok(json(StatusCode::OK, &IndexJson { index })),
        _ => Err(ApiError::not_found(format!(
            "leaf {} is not in the tree (durable size {durable})",
            hex(&value)
        ))),
    }
}

// -- POST /v1/lookup ------------------------------------------------------------

#[derive(Serialize)]
struct LookupJson {
    /// The durable size the answers are for.
    size: u64,
    /// Per value, in order: its leaf index, or null if it is not a
    /// durable leaf.
    indices: Vec<Option<u64>>,
}

/// Many values at once (a wallet checking its notes, an indexer a block's
/// nullifiers): the same answers as `GET /v1/leaves/{value}` for each, at
/// one durable size, with the memory reads of different values
/// overlapped (`Db::index_of_many`). A read: allowed on read-only servers
/// and mirrors, and without the write token.
pub(crate) async fn lookup(
    State(state): State<AppState>,
    headers: HeaderMap,
    request_body: Body,
) -> Result<Response, ApiError> {
    let shared = state.shared();
    let encoding = body::encoding(&headers)?;
    let limit = shared.config.max_body_bytes;
    let bytes = read_body(request_body, limit).await?;
    let (values, block) = body::values(
        encoding,
        &bytes,
        shared.config.max_batch_leaves,
        shared.db.config().tree().hash,
    )?;
    drop(bytes);
    if block.is_some() {
        return Err(ApiError::bad_request(
            "a lookup takes values only, not a block",
        ));
    }
    if values.is_empty() {
        return Err(ApiError::bad_request(
            "no values: a lookup needs at least one",
        ));
    }
    let (found, size) = shared
        .consistent(|_| {
            let (snapshot, size) = shared.durable();
            (snapshot.index_of_many(&values), size)
        })
        .await;
    let found = found.map_err(|error| match error {
        DbError::NoSet => ApiError::new(StatusCode::NOT_IMPLEMENTED, error.to_string()),
        other => ApiError::internal(other.to_string()),
    })?;
    let indices = found
        .into_iter()
        .map(|index| index.filter(|&i| i < size))
        .collect();
    Ok(json(StatusCode::OK, &LookupJson { size, indices }))
}

// -- GET /v1/proofs/{index}?size=S|root=R ---------------------------------------

/// The query's parameters, each at most once and each one of `allowed`.
fn query_pairs(
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
    allowed: &[&'static str],
) -> Result<Vec<(&'static str, String)>, ApiError> {
    let Query(pairs) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let mut out: Vec<(&'static str, String)> = Vec::with_capacity(pairs.len());
    for (name, text) in pairs {
        let Some(&known) = allowed.iter().find(|&&a| a == name) else {
            return Err(ApiError::bad_request(format!(
                "unknown query parameter {name:?}: this route takes {}",
                allowed.join(", ")
            )));
        };
        if out.iter().any(|(seen, _)| *seen == known) {
            return Err(ApiError::bad_request(format!(
                "query parameter {known} is given more than once"
            )));
        }
        out.push((known, text));
    }
    Ok(out)
}

fn find<'a>(pairs: &'a [(&'static str, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(_, text)| text.as_str())
}

/// The query's parameters, each at most once and each one of `allowed`,
/// as non-negative integers.
pub(crate) fn parameters(
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
    allowed: &[&'static str],
) -> Result<Vec<(&'static str, u64)>, ApiError> {
    query_pairs(query, allowed)?
        .into_iter()
        .map(|(name, text)| Ok((name, parse_u64(name, &text)?)))
        .collect()
}

fn parse_u64(what: &str, text: &str) -> Result<u64, ApiError> {
    text.parse::<u64>().map_err(|_| {
        ApiError::bad_request(format!("{what} {text:?} is not a non-negative integer"))
    })
}

pub(crate) fn get(parameters: &[(&'static str, u64)], name: &str) -> Option<u64> {
    parameters
        .iter()
        .find(|&&(known, _)| known == name)
        .map(|&(_, value)| value)
}

pub(crate) fn check_size(size: u64, durable: u64, what: &str) -> Result<(), ApiError> {
    if size > durable {
        return Err(ApiError::not_found(format!(
            "{what} {size} is beyond the tree's durable size {durable}"
        )));
    }
    Ok(())
}

/// What `?format=` asks a membership proof to be printed as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ProofFormat {
    Json,
    Zkkit,
    Circom,
    ZkkitCircom,
}

const PROOF_FORMATS: &str = "json, zkkit, circom or zkkit-circom";

/// Takes `format` out of the query's pairs (at most once).
fn take_format(pairs: &mut Vec<(String, String)>) -> Result<ProofFormat, ApiError> {
    let mut found = None;
    let mut refused = None;
    pairs.retain(|(name, value)| {
        if name != "format" {
            return true;
        }
        if found.is_some() {
            refused = Some(ApiError::bad_request(
                "query parameter format is given more than once",
            ));
        }
        found = Some(match value.as_str() {
            "json" => ProofFormat::Json,
            "zkkit" => ProofFormat::Zkkit,
            "circom" => ProofFormat::Circom,
            "zkkit-circom" => ProofFormat::ZkkitCircom,
            other => {
                refused = Some(ApiError::bad_request(format!(
                    "format {other:?} is not a proof format: want {PROOF_FORMATS}"
                )));
                ProofFormat::Json
            }
        });
        false
    });
    match refused {
        Some(error) => Err(error),
        None => Ok(found.unwrap_or(ProofFormat::Json)),
    }
}

pub(crate) async fn proof(
    State(state): State<AppState>,
    index: Result<Path<String>, PathRejection>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let shared = state.shared();
    let Path(index) = index.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let index = parse_u64("leaf index", &index)?;
    let Query(mut raw) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let format = take_format(&mut raw)?;
    let pairs = query_pairs(Ok(Query(raw)), &["size", "root", "circuit_depth"])?;
    let explicit = find(&pairs, "size")
        .map(|text| parse_u64("size", text))
        .transpose()?;
    let root = find(&pairs, "root")
        .map(|text| parse_hash(text).map_err(|e| ApiError::bad_request(format!("root: {e}"))))
        .transpose()?;
    let circuit_depth = match find(&pairs, "circuit_depth") {
        None => None,
        Some(_) if !matches!(format, ProofFormat::Circom | ProofFormat::ZkkitCircom) => {
            return Err(ApiError::bad_request(
                "circuit_depth is for format=circom or format=zkkit-circom",
            ));
        }
        Some(text) => Some(u32::try_from(parse_u64("circuit_depth", text)?).unwrap_or(u32::MAX)),
    };
    if root.is_some() && explicit.is_some() {
        return Err(ApiError::bad_request(
            "give size or root, not both: a root names its size",
        ));
    }
    let (snapshot, durable, size) = match root {
        Some(root) => {
            let (snapshot, durable, size) = shared
                .consistent(|_| {
                    let (snapshot, durable) = shared.durable();
                    let size = durable_root(shared, &root, durable)?.size;
                    Ok::<_, ApiError>((snapshot, durable, size))
                })
                .await?;
            if index >= size {
                return Err(ApiError::bad_request(format!(
                    "leaf index {index} is not below {size}, the size of root {}",
                    hex(&root)
                )));
            }
            (snapshot, durable, size)
        }
        None => {
            let (snapshot, durable) = shared.consistent(|_| shared.durable()).await;
            (snapshot, durable, explicit.unwrap_or(durable))
        }
    };
    // A proof by root names its size as surely as one by size.
    let explicit = explicit.or(root.map(|_| size));
    check_size(size, durable, "size")?;
    let proof = snapshot
        .prove_at(index, size)
        .map_err(ApiError::from_proof)?;
    let text = match format {
        ProofFormat::Json => proof.json_bytes(),
        other => {
            let rendered = match other {
                ProofFormat::Zkkit => proof.to_zkkit_json(),
                ProofFormat::Circom => proof.to_circom_json(circuit_depth),
                _ => proof.to_zkkit_circom_json(circuit_depth),
            };
            rendered
                .map_err(|e| {
                    ApiError::bad_request(format!("the proof of leaf {index} at size {size}: {e}"))
                })?
                .into_bytes()
        }
    };
    Ok(cached(&headers, text, shared.is_final(explicit)))
}

impl Shared {
    /// Whether an answer about the tree of `size` leaves, asked for
    /// explicitly, can never change: no rollback can reach below the
    /// finalized size. An answer at the current size follows the tree.
    fn is_final(&self, explicit: Option<u64>) -> bool {
        explicit.is_some_and(|size| size <= self.db.finalized_size())
    }
}

/// A proof answer with a validator: an `ETag` (a digest of the body), `304`
/// when the request's `If-None-Match` holds it, and `Cache-Control:
/// immutable` when the answer can never change (`no-cache` otherwise, so a
/// cache revalidates).
fn cached(request: &HeaderMap, mut text: Vec<u8>, immutable: bool) -> Response {
    text.push(b'\n');
    let digest = blake3::hash(&text);
    let tag = format!("\"{}\"", &digest.to_hex()[..32]);
    let cache = if immutable {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    let matches = request
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|v| v.trim().trim_start_matches("W/"))
        .any(|v| v == tag || v == "*");
    let mut response = if matches {
        (StatusCode::NOT_MODIFIED, Body::empty()).into_response()
    } else {
        with_type(StatusCode::OK, text.into(), "application/json")
    };
    let headers = response.headers_mut();
    if let Ok(tag) = HeaderValue::from_str(&tag) {
        headers.insert(header::ETAG, tag);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    response
}

// -- GET /v1/consistency?from=S1&to=S2 -----------------------------------------

pub(crate) async fn consistency(
    State(state): State<AppState>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let shared = state.shared();
    let parameters = parameters(query, &["from", "to"])?;
    let from = get(&parameters, "from").ok_or_else(|| {
        ApiError::bad_request("missing query parameter from (the older size): ?from=S1[&to=S2]")
    })?;
    let (snapshot, durable) = shared.consistent(|_| shared.durable()).await;
    let explicit = get(&parameters, "to");
    let to = explicit.unwrap_or(durable);
    if from > to {
        return Err(ApiError::bad_request(format!(
            "from {from} is larger than to {to}: a consistency proof goes from an older size to a newer one"
        )));
    }
    check_size(to, durable, "to")?;
    let proof = snapshot
        .prove_consistency(from, to)
        .map_err(ApiError::from_proof)?;
    Ok(cached(
        &headers,
        proof.json_bytes(),
        shared.is_final(explicit),
    ))
}

// -- GET /v1/roots/{root} -------------------------------------------------------

#[derive(Serialize)]
struct RootAtJson {
    size: u64,
    block: Option<u64>,
}

/// Where `root` is, if that is within the durable tree (inside
/// `consistent` only); the block only if its tag is durable.
fn durable_root(shared: &Shared, root: &Hash, durable: u64) -> Result<RootAtJson, ApiError> {
    let unknown = || {
        ApiError::not_found(format!(
            "root {} is not a root of the durable tree among the tagged heads and the roots of the last {} appends",
            hex(root),
            shared.db.config().store.root_window
        ))
    };
    let found = shared.db.size_of_root(root).ok_or_else(unknown)?;
    if found.size > durable {
        return Err(unknown());
    }
    Ok(RootAtJson {
        size: found.size,
        block: found
            .block
            .filter(|&block| shared.tag_durability(durable)(block, found.size)),
    })
}

pub(crate) async fn root_at(
    State(state): State<AppState>,
    root: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let shared = state.shared();
    let Path(text) = root.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let root = parse_hash(&text).map_err(|e| ApiError::bad_request(format!("root: {e}")))?;
    let found = shared
        .consistent(|_| durable_root(shared, &root, shared.db.durable_size()))
        .await?;
    Ok(json(StatusCode::OK, &found))
}

// -- GET /v1/heads?from_block=N&limit=L -----------------------------------------

/// Tagged heads a listing answers by default, and at most.
const HEADS_DEFAULT_LIMIT: u64 = 100;
const HEADS_MAX_LIMIT: u64 = 10_000;

#[derive(Serialize)]
struct HeadJson {
    block: u64,
    block_hash: Option<String>,
    size: u64,
    root: Option<String>,
}

impl From<&TaggedHead> for HeadJson {
    fn from(head: &TaggedHead) -> HeadJson {
        HeadJson {
            block: head.block,
            block_hash: head.block_hash.as_ref().map(hex),
            size: head.size,
            root: head.root.as_ref().map(hex),
        }
    }
}

#[derive(Serialize)]
struct HeadsJson {
    heads: Vec<HeadJson>,
    /// Where the next page starts (`null`: this page reached the end).
    next_from_block: Option<u64>,
}

pub(crate) async fn heads(
    State(state): State<AppState>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<Response, ApiError> {
    let shared = state.shared();
    let parameters = parameters(query, &["from_block", "limit"])?;
    let from = get(&parameters, "from_block").unwrap_or(0);
    let limit = get(&parameters, "limit").unwrap_or(HEADS_DEFAULT_LIMIT);
    if !(1..=HEADS_MAX_LIMIT).contains(&limit) {
        return Err(ApiError::bad_request(format!(
            "limit {limit} is not between 1 and {HEADS_MAX_LIMIT}"
        )));
    }
    let limit = limit as usize;
    let (mut heads, durable) = shared
        .consistent(|_| {
            let durable = shared.tag_durability(shared.db.durable_size());
            // One more than asked for: whether there is a next page.
            (shared.db.heads(from, limit + 1), durable)
        })
        .await;
    // Durable heads are a prefix (made durable in order).
    let durable_count = heads
        .iter()
        .take_while(|h| durable(h.block, h.size))
        .count();
    heads.truncate(durable_count);
    let next_from_block = (heads.len() > limit).then(|| heads[limit].block);
    heads.truncate(limit);
    Ok(json(
        StatusCode::OK,
        &HeadsJson {
            heads: heads.iter().map(HeadJson::from).collect(),
            next_from_block,
        },
    ))
}

// -- POST /v1/rollback, POST /v1/finalize ---------------------------------------

/// Bodies of the rollback and finalize requests are small.
const SMALL_BODY_BYTES: usize = 4096;

/// `{"to_size": S}` or `{"to_block": N}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RollbackJson {
    #[serde(default)]
    pub to_size: Option<u64>,
    #[serde(default)]
    pub to_block: Option<u64>,
}

/// `{"size": S}` or `{"block": N}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FinalizeJson {
    #[serde(default)]
    pub size: Option<u64>,
    #[serde(default)]
    pub block: Option<u64>,
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Target {
    Size(u64),
    Block(u64),
}

/// The target of a rollback or finalize body: `fields` turns the parsed
/// body into (size, block); `size_name` and `block_name` are the fields'
/// names in messages.
pub(crate) async fn target<T: serde::de::DeserializeOwned>(
    request_body: Body,
    fields: impl FnOnce(T) -> (Option<u64>, Option<u64>),
    size_name: &str,
    block_name: &str,
) -> Result<Target, ApiError> {
    let bytes = read_body(request_body, SMALL_BODY_BYTES).await?;
    let usage = || format!("{{\"{size_name}\": S}} or {{\"{block_name}\": N}}");
    let doc: T = serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::bad_request(format!("the body is not {}: {e}", usage())))?;
    match fields(doc) {
        (Some(size), None) => Ok(Target::Size(size)),
        (None, Some(block)) => Ok(Target::Block(block)),
        _ => Err(ApiError::bad_request(format!(
            "give exactly one of {size_name} and {block_name}: {}",
            usage()
        ))),
    }
}

#[derive(Serialize)]
pub(crate) struct RolledBackJson {
    pub size: u64,
    pub root: Option<String>,
    /// The block rolled back to (with `to_block`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<u64>,
    pub finalized: u64,
}

pub(crate) async fn rollback(
    State(state): State<AppState>,
    headers: HeaderMap,
    request_body: Body,
) -> Result<Response, ApiError> {
    auth::check_write(state.shared().config.token.as_deref(), &headers)?;
    let target = target(
        request_body,
        |b: RollbackJson| (b.to_size, b.to_block),
        "to_size",
        "to_block",
    )
    .await?;
    let task_state = state.clone();
    let (head, finalized) =
        tokio::task::spawn_blocking(move || roll_back(task_state.shared(), target))
            .await
            .map_err(|e| ApiError::internal(format!("the rollback task failed: {e}")))??;
    Ok(json(
        StatusCode::OK,
        &RolledBackJson {
            size: head.size,
            root: head.root.as_ref().map(hex),
            block: match target {
                Target::Block(block) => Some(block),
                Target::Size(_) => None,
            },
            finalized,
        },
    ))
}

/// Rolls back (on the blocking pool): reads wait meanwhile, and find
/// nothing of the old tree when they resume. Returns once the rollback is
/// durable.
fn roll_back(shared: &Shared, target: Target) -> Result<(TreeHead, u64), ApiError> {
    let _writes = shared.writes.lock();
    let db = &shared.db;
    let start = Instant::now();
    let durable = db.durable_size();
    // Refused before reads are held off.
    match target {
        Target::Size(size) => check_size(size, durable, "to_size")?,
        Target::Block(block) => {
            if db.head_at_block(block).is_none() {
                return Err(ApiError::from_write(
                    StoreError::NoHeadAtBlock { block }.into(),
                ));
            }
        }
    }
    let window = RollbackWindow::open(shared);
    let result = match target {
        Target::Size(size) => db.truncate(size),
        Target::Block(block) => db.truncate_to_block(block),
    }
    .and_then(|head| {
        // Every tag left is durable once the flush returns (it writes
        // the pending ones); later ones are not counted.
        let last = db.head_at_block(u64::MAX).map(|h| h.block);
        db.flush()?;
        *shared.acked_block.lock() = last;
        Ok(head)
    });
    drop(window);
    let head = result.map_err(|error| {
        shared.record_failure(&error);
        ApiError::from_write(error)
    })?;
    let metrics = &shared.metrics;
    metrics.rollbacks.fetch_add(1, Ordering::Relaxed);
    metrics
        .rolled_back_leaves
        .fetch_add(durable.saturating_sub(head.size), Ordering::Relaxed);
    metrics.rollback_seconds.observe(start.elapsed());
    tracing::info!(to = head.size, from = durable, "rolled back");
    Ok((head, db.finalized_size()))
}

#[derive(Serialize)]
pub(crate) struct FinalizedJson {
    pub finalized: u64,
}

pub(crate) async fn finalize(
    State(state): State<AppState>,
    headers: HeaderMap,
    request_body: Body,
) -> Result<Response, ApiError> {
    auth::check_write(state.shared().config.token.as_deref(), &headers)?;
    let target = target(
        request_body,
        |b: FinalizeJson| (b.size, b.block),
        "size",
        "block",
    )
    .await?;
    let task_state = state.clone();
    let finalized = tokio::task::spawn_blocking(move || {
        let shared = task_state.shared();
        let _writes = shared.writes.lock();
        let db = &shared.db;
        let result = match target {
            Target::Size(size) => {
                check_size(size, db.durable_size(), "size")?;
                db.finalize(size)
            }
            Target::Block(block) => db.finalize_to_block(block),
        };
        result.map_err(|error| {
            shared.record_failure(&error);
            ApiError::from_write(error)
        })
    })
    .await
    .map_err(|e| ApiError::internal(format!("the finalize task failed: {e}")))??;
    state
        .shared()
        .metrics
        .finalizations
        .fetch_add(1, Ordering::Relaxed);
    Ok(json(StatusCode::OK, &FinalizedJson { finalized }))
}

// -- GET /healthz, /metrics, /openapi.json ------------------------------------

pub(crate) async fn health(State(state): State<AppState>) -> Response {
    let shared = state.shared();
    crate::health::answer(
        shared.failure(),
        &shared.db.health(),
        &shared.metrics.connections,
    )
}

pub(crate) async fn metrics(State(state): State<AppState>) -> Response {
    let shared = state.shared();
    let text = shared.metrics.render(&shared.db);
    with_type(
        StatusCode::OK,
        text.into(),
        "text/plain; version=0.0.4; charset=utf-8",
    )
}

/// Absence proofs need an indexed database (`cairn init --kind indexed`,
/// served by `indexed.rs`): a lean tree's leaves are in append order.
pub(crate) async fn absence() -> ApiError {
    ApiError::not_found(
        "this database is lean (append-only leaves in insertion order): absence proofs need an indexed database (`cairn init --kind indexed`)",
    )
}

pub(crate) async fn openapi() -> Response {
    with_type(StatusCode::OK, OPENAPI_JSON.into(), "application/json")
}

pub(crate) async fn no_route(method: Method, uri: Uri) -> ApiError {
    ApiError::not_found(format!(
        "no route for {method} {}: the API is described at /openapi.json",
        uri.path()
    ))
}

pub(crate) async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("{} does not accept {method}", uri.path()),
    )
}
