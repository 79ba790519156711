//! The head and its history: `GET /v1/root` (the durable head, the tree's
//! parameters and the finalized size), `GET /v1/roots/{root}` (the size a
//! root is the root of) and `GET /v1/heads` (the block-tagged heads, in
//! pages). Tagged heads and roots by value are read between rollbacks, and
//! only durable ones are answered.

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use cairn_core::hex::{parse_hash, to_hex as hex};
use cairn_db::TaggedHead;
use serde::Serialize;

use crate::error::ApiError;
use crate::query::{self, RawQuery};
use crate::respond::json;
use crate::state::AppState;

#[derive(Serialize)]
struct RootJson {
    size: u64,
    root: Option<String>,
    depth: u32,
    arity: u64,
    hash: &'static str,
    finalized: u64,
    /// `lean`, `imt` or `indexed`.
    kind: &'static str,
    /// An imt's zero value (`null` for other kinds).
    zero: Option<String>,
}

pub(crate) async fn root(State(state): State<AppState>) -> Response {
    let db = &state.shared().db;
    let durable = db.durable();
    let tree = db.tree_config();
    json(
        StatusCode::OK,
        &RootJson {
            size: durable.size,
            root: durable.root.as_ref().map(hex),
            depth: tree.depth_at(durable.size),
            arity: tree.arity.as_u64(),
            hash: tree.hash.name(),
            finalized: durable.finalized,
            kind: tree.kind.name(),
            zero: tree.kind.zero().as_ref().map(hex),
        },
    )
}

#[derive(Serialize)]
struct RootAtJson {
    size: u64,
    block: Option<u64>,
}

pub(crate) async fn root_at(
    State(state): State<AppState>,
    root: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let shared = state.shared();
    let Path(text) = root.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let root = parse_hash(&text).map_err(|e| ApiError::bad_request(format!("root: {e}")))?;
    let found = {
        let _no_rollback = shared.rollbacks.read().await;
        shared.db.size_of_root(&root).map_err(ApiError::from_db)?
    };
    let found = found.ok_or_else(|| {
        ApiError::not_found(format!(
            "root {} is not a root of the durable tree among the tagged heads and the roots of the last {} appends",
            hex(&root),
            shared.db.config().store.root_window
        ))
    })?;
    Ok(json(
        StatusCode::OK,
        &RootAtJson {
            size: found.size,
            block: found.block,
        },
    ))
}

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
    query: RawQuery,
) -> Result<Response, ApiError> {
    let shared = state.shared();
    let numbers = query::numbers(query, &["from_block", "limit"])?;
    let from = query::get(&numbers, "from_block").unwrap_or(0);
    let limit = query::get(&numbers, "limit").unwrap_or(HEADS_DEFAULT_LIMIT);
    if !(1..=HEADS_MAX_LIMIT).contains(&limit) {
        return Err(ApiError::bad_request(format!(
            "limit {limit} is not between 1 and {HEADS_MAX_LIMIT}"
        )));
    }
    let limit = limit as usize;
    // One more than asked for: whether there is a next page.
    let mut heads = {
        let _no_rollback = shared.rollbacks.read().await;
        match &shared.forest {
            // A tree of a journaled database: its head at each block.
            Some(tree) => {
                let tree = tree.clone();
                tokio::task::spawn_blocking(move || {
                    crate::forest::tree_heads(&tree, from, limit + 1)
                })
                .await
                .map_err(|e| ApiError::internal(format!("the heads task failed: {e}")))?
            }
            None => shared.db.heads(from, limit + 1),
        }
        .map_err(ApiError::from_db)?
    };
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
