//! Lookups by value: `GET /v1/leaves/{value}` (a leaf's index) and `POST
//! /v1/lookup` (many values at once: a wallet checking its notes, an
//! indexer a block's nullifiers), at the durable size. A value no leaf
//! can be (not canonical for the tree's hash) is refused (400); a database
//! without a nullifier set cannot answer (501).

use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use cairn_core::hex::to_hex as hex;
use cairn_db::Operation;
use serde::Serialize;

use crate::body;
use crate::error::ApiError;
use crate::query;
use crate::respond::json;
use crate::state::AppState;

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
    let db = &shared.db;
    let value = body::parse_leaf(&text, db.tree_config().hash)
        .map_err(|e| ApiError::bad_request(format!("leaf: {e}")))?;
    let found = db
        .lookup(std::slice::from_ref(&value))
        .map_err(ApiError::from_db)?;
    match found.indices[0] {
        Some(index) => Ok(json(StatusCode::OK, &IndexJson { index })),
        None => {
            // Where a kind proves absence, say so.
            let proves = match db.supports(Operation::AbsenceProof) {
                Ok(()) => format!("; /v1/absence/{} proves it", hex(&value)),
                Err(_) => String::new(),
            };
            Err(ApiError::not_found(format!(
                "leaf {} is not in the tree (durable size {}){proves}",
                hex(&value),
                found.size
            )))
        }
    }
}

#[derive(Serialize)]
struct LookupJson {
    /// The durable size the answers are for.
    size: u64,
    /// Per value, in order: its leaf index, or null if it is not a
    /// durable leaf.
    indices: Vec<Option<u64>>,
}

/// Many values at once: the same answers as `GET /v1/leaves/{value}` for
/// each, at one durable size, with the memory reads of different values
/// overlapped. A read: allowed on read-only servers and mirrors, and
/// without the write token.
pub(crate) async fn lookup(
    State(state): State<AppState>,
    headers: HeaderMap,
    request_body: Body,
) -> Result<Response, ApiError> {
    let shared = state.shared();
    let encoding = body::encoding(&headers)?;
    let bytes = query::read_body(request_body, shared.config.max_body_bytes).await?;
    let (values, block) = body::values(
        encoding,
        &bytes,
        shared.config.max_batch_leaves,
        shared.db.tree_config().hash,
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
    let found = shared.db.lookup(&values).map_err(ApiError::from_db)?;
    Ok(json(
        StatusCode::OK,
        &LookupJson {
            size: found.size,
            indices: found.indices,
        },
    ))
}
