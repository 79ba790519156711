//! `POST /v1/leaves`: an append (a batch, all or nothing; `?block=N` or a
//! JSON block tags it; `?witness=1` asks an indexed tree for the insertion
//! witness), answered once durable with the head that holds it.
//!
//! The append runs on the async worker for a small untagged batch (it does
//! no I/O: the store's commit thread writes), else on the blocking pool;
//! then the request awaits its acknowledgement (`Ack::durable`: the store
//! makes one group commit for every waiting request and its notification
//! wakes them; no thread per request), within the durability timeout. A
//! duplicate of a value not yet durable is answered once that value is
//! durable: 409 names only durable values.

use std::sync::atomic::Ordering;
use std::time::Instant;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use cairn_core::hex::to_hex as hex;
use cairn_db::{Ack, Acked, BlockTag, DbError, ErrorKind, Operation};
use serde::Serialize;

use crate::error::ApiError;
use crate::query::{self, RawQuery};
use crate::respond::json;
use crate::state::{AppState, Shared};
use crate::{auth, body};

/// The most leaves an untagged append runs on the async worker itself.
const INLINE_APPEND_MAX: usize = 64;

#[derive(Serialize)]
struct AppendedJson {
    first_index: u64,
    count: u64,
    size: u64,
    root: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    block: Option<BlockJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    witness: Option<serde_json::Value>,
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

/// What the query asks: a block (`?block=N[&block_hash=0x..]`) and the
/// witness (`?witness=1`).
fn options(query: RawQuery) -> Result<(Option<BlockTag>, bool), ApiError> {
    let pairs = query::pairs(query, &["block", "block_hash", "witness"])?;
    let number = query::find(&pairs, "block")
        .map(|text| query::parse_u64("block", text))
        .transpose()?;
    let hash = query::find(&pairs, "block_hash")
        .map(body::block_hash)
        .transpose()?;
    let block = match (number, hash) {
        (Some(number), hash) => Some(BlockTag { number, hash }),
        (None, Some(_)) => {
            return Err(ApiError::bad_request(
                "block_hash without block: give the block number too (?block=N&block_hash=0x..)",
            ));
        }
        (None, None) => None,
    };
    let witness = match query::find(&pairs, "witness") {
        None | Some("0" | "false") => false,
        Some("1" | "true") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "witness={other:?}: want 1 or 0"
            )));
        }
    };
    Ok((block, witness))
}

pub(crate) async fn append(
    State(state): State<AppState>,
    headers: HeaderMap,
    query: RawQuery,
    request_body: Body,
) -> Result<Response, ApiError> {
    let shared = state.shared();
    auth::check_write(shared.config.token.as_deref(), &headers)?;
    let encoding = body::encoding(&headers)?;
    let (query_block, witness) = options(query)?;
    let bytes = query::write_body(shared, &headers, request_body).await?;
    let batch = body::batch(
        encoding,
        &bytes,
        shared.config.max_batch_leaves,
        query_block,
        shared.db.tree_config().hash,
    )?;
    drop(bytes);
    // What the kind cannot do, refused before anything is appended.
    let db = &shared.db;
    if batch.block.is_some() {
        db.supports(Operation::BlockTags)
            .map_err(ApiError::from_db)?;
    }
    if witness {
        db.supports(Operation::InsertionWitness)
            .map_err(ApiError::from_db)?;
    }
    let block = batch.block;
    // No rollback removes this append before it is answered.
    let _no_rollback = shared.rollbacks.read().await;
    if let Some(tree) = &shared.forest {
        if witness {
            return Err(ApiError::bad_request(
                "insertion witnesses are not given for a tree of a database of several trees: append without ?witness",
            ));
        }
        let tree = tree.clone();
        let task = state.clone();
        let committed = tokio::task::spawn_blocking(move || {
            crate::forest::commit(task.shared(), &tree, block, &batch.leaves)
        })
        .await
        .map_err(|e| ApiError::internal(format!("the append task failed: {e}")))?
        .map_err(|error| refused(shared, None, error))?;
        let metrics = &shared.metrics;
        metrics.appends.fetch_add(1, Ordering::Relaxed);
        metrics.leaves.fetch_add(committed.count, Ordering::Relaxed);
        return Ok(json(
            StatusCode::OK,
            &AppendedJson {
                first_index: committed.first,
                count: committed.count,
                size: committed.size,
                root: db
                    .head_at(committed.size)
                    .ok()
                    .and_then(|h| h.root)
                    .as_ref()
                    .map(hex),
                block: block.map(BlockJson::from),
                witness: None,
            },
        ));
    }
    let start = Instant::now();
    // A small untagged batch is appended on this worker: the append does
    // no I/O, so it is microseconds, and handing it to the blocking pool
    // cost two thread switches per request, the largest part of a
    // single-leaf append's CPU. Larger batches (the duplicate check,
    // copying leaves) and tagged or witnessed ones go to the blocking pool.
    let ack = if block.is_none() && !witness && batch.leaves.len() <= INLINE_APPEND_MAX {
        append_now(shared, &batch, witness)
    } else {
        let task = state.clone();
        tokio::task::spawn_blocking(move || append_now(task.shared(), &batch, witness))
            .await
            .map_err(|e| ApiError::internal(format!("the append task failed: {e}")))?
    }
    .map_err(|error| refused(shared, None, error))?;
    let appended = ack.appended();
    let appended_at = Instant::now();
    let metrics = &shared.metrics;
    metrics.append_seconds.observe(appended_at - start);
    let acked = ack
        .durable(db, tokio::time::sleep(shared.config.durability_timeout))
        .await
        .map_err(|error| refused(shared, appended, error))?;
    metrics.durable_wait_seconds.observe(appended_at.elapsed());
    metrics.appends.fetch_add(1, Ordering::Relaxed);
    metrics.leaves.fetch_add(acked.count, Ordering::Relaxed);
    Ok(json(StatusCode::OK, &answer(acked)))
}

/// Appends a batch (the database's writer lock and duplicate check, no
/// I/O): on the async worker for a small untagged batch, else on the
/// blocking pool.
fn append_now(shared: &Shared, batch: &body::Batch, witness: bool) -> Result<Ack, DbError> {
    match (batch.block, witness) {
        (Some(tag), _) => shared.db.append_tagged(&batch.leaves, tag),
        (None, true) => shared.db.append_witnessed(&batch.leaves),
        (None, false) => shared.db.append(&batch.leaves),
    }
}

fn answer(acked: Acked) -> AppendedJson {
    AppendedJson {
        first_index: acked.first,
        count: acked.count,
        size: acked.size,
        root: acked.root.as_ref().map(hex),
        block: acked.block.map(BlockJson::from),
        witness: acked.witness.map(|w| {
            serde_json::from_str(&w.to_json_compact())
                .unwrap_or_else(|e| unreachable!("the witness's own JSON: {e}"))
        }),
    }
}

/// A refused or failed append as an answer, counted. `appended` is where
/// the values went if they were appended (then refused by a rollback
/// before they were acknowledged, or not durable in time).
pub(crate) fn refused(shared: &Shared, appended: Option<(u64, u64)>, error: DbError) -> ApiError {
    let metrics = &shared.metrics;
    let kind = error.kind();
    match &error {
        DbError::Duplicates { duplicates, .. } => {
            metrics.duplicate_batches.fetch_add(1, Ordering::Relaxed);
            metrics
                .duplicate_values
                .fetch_add(duplicates.len() as u64, Ordering::Relaxed);
        }
        _ if kind == ErrorKind::BlockOrder => {
            metrics.block_order_refusals.fetch_add(1, Ordering::Relaxed);
        }
        _ if kind == ErrorKind::RolledBack => {
            metrics.rolled_back_appends.fetch_add(1, Ordering::Relaxed);
        }
        // The request's own fault: nothing failed.
        _ if matches!(
            kind,
            ErrorKind::InvalidBatch | ErrorKind::Unsupported | ErrorKind::Config
        ) => {}
        _ => {
            metrics.append_failures.fetch_add(1, Ordering::Relaxed);
            shared.record_failure(&error);
        }
    }
    let mut answer = ApiError::from_db(error);
    if let Some((first, count)) = appended {
        let end = first + count;
        if kind == ErrorKind::RolledBack {
            answer.message = format!(
                "leaves {first}..{end} were appended but a rollback removed them before they were acknowledged: {}",
                answer.message
            );
        } else if answer.status == StatusCode::SERVICE_UNAVAILABLE {
            answer.message = format!(
                "leaves {first}..{end} were appended but not acknowledged as durable: {}",
                answer.message
            );
        }
    }
    answer
}
