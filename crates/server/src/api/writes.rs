//! `POST /v1/rollback` (`{"to_size": S}` or `{"to_block": N}`) and `POST
//! /v1/finalize` (`{"size": S}` or `{"block": N}`): a chain follower's
//! reorganisations and what can no longer be undone, in the tree's sizes
//! for every kind (an indexed tree counts its guard leaf; it has no block
//! targets).
//!
//! A rollback waits for the appends in flight and holds new ones off (the
//! shared `rollbacks` lock) until it is durable, so no append is answered
//! with a head it removed; it runs on the blocking pool.

use std::sync::atomic::Ordering;
use std::time::Instant;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use cairn_core::TreeHead;
use cairn_core::hex::to_hex as hex;
use serde::Serialize;

use crate::auth;
use crate::error::ApiError;
use crate::query::{self, FinalizeBody, RollbackBody, Target};
use crate::respond::json;
use crate::state::{AppState, Shared};

#[derive(Serialize)]
struct RolledBackJson {
    size: u64,
    root: Option<String>,
    /// The block rolled back to (with `to_block`).
    #[serde(skip_serializing_if = "Option::is_none")]
    block: Option<u64>,
    finalized: u64,
}

pub(crate) async fn rollback(
    State(state): State<AppState>,
    headers: HeaderMap,
    request_body: Body,
) -> Result<Response, ApiError> {
    auth::check_write(state.shared().config.token.as_deref(), &headers)?;
    let target = query::target(
        request_body,
        |b: RollbackBody| (b.to_size, b.to_block),
        "to_size",
        "to_block",
    )
    .await?;
    // No append in flight from here on: none is removed unanswered, and
    // the next one is answered with the rolled back head.
    let _appends = state.shared().rollbacks.write().await;
    let task = state.clone();
    let (head, finalized) = tokio::task::spawn_blocking(move || roll_back(task.shared(), target))
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

/// Rolls back (on the blocking pool); returns once the rollback is
/// durable, with the finalized size.
fn roll_back(shared: &Shared, target: Target) -> Result<(TreeHead, u64), ApiError> {
    let _writes = shared.writes.lock();
    let db = &shared.db;
    let start = Instant::now();
    let durable = db.durable_size();
    let result = match (target, &shared.forest) {
        (Target::Size(size), None) => {
            query::check_size(size, durable, "to_size")?;
            db.truncate(size)
        }
        (Target::Block(block), None) => db.truncate_to_block(block),
        (Target::Size(_), Some(_)) => return Err(by_block("rolls back", "to_block")),
        // Every tree of the database, in one journal frame.
        (Target::Block(block), Some(tree)) => {
            tree.forest.truncate_to_block(block).map(|_| db.head())
        }
    };
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

/// The refusal of a size target in a database of several trees, which
/// rolls back and finalizes by block, every tree at once.
fn by_block(what: &str, field: &str) -> ApiError {
    ApiError::bad_request(format!(
        "a database of several trees {what} by block, every tree at once: give {{\"{field}\": N}}"
    ))
}

#[derive(Serialize)]
struct FinalizedJson {
    finalized: u64,
}

pub(crate) async fn finalize(
    State(state): State<AppState>,
    headers: HeaderMap,
    request_body: Body,
) -> Result<Response, ApiError> {
    auth::check_write(state.shared().config.token.as_deref(), &headers)?;
    let target = query::target(
        request_body,
        |b: FinalizeBody| (b.size, b.block),
        "size",
        "block",
    )
    .await?;
    let task = state.clone();
    let finalized = tokio::task::spawn_blocking(move || {
        let shared = task.shared();
        let _writes = shared.writes.lock();
        let db = &shared.db;
        let result = match (target, &shared.forest) {
            (Target::Size(size), None) => {
                query::check_size(size, db.durable_size(), "size")?;
                db.finalize(size)
            }
            (Target::Block(block), None) => db.finalize_to_block(block),
            (Target::Size(_), Some(_)) => return Err(by_block("finalizes", "block")),
            // Every tree of the database, in one journal frame; the answer
            // is this tree's size at the block finalized.
            (Target::Block(block), Some(tree)) => {
                tree.forest.finalize_to_block(block).and_then(|at| {
                    let heads = tree.forest.heads_at(at)?;
                    Ok(heads
                        .into_iter()
                        .find(|(name, _, _)| *name == tree.name)
                        .map_or(0, |(_, size, _)| size))
                })
            }
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
    tracing::info!(finalized, "finalized");
    Ok(json(StatusCode::OK, &FinalizedJson { finalized }))
}
