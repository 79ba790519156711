//! `GET /v1/checkpoint`: the signed note (C2SP signed-note + tlog-checkpoint,
//! docs/spec.md "Signed checkpoints") of the head the server answers at,
//! signed with the server's key on each request (Ed25519 is deterministic:
//! one head, one note).
//!
//! Invariant: the signed head is one the server would serve anyway: the
//! durable head (or, with `sign_finalized`, the finalized one), read
//! between two rollbacks like every other read.

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use cairn_note::{TreeLine, sign_head};

use crate::api::{AppState, with_type};
use crate::error::ApiError;

pub(crate) async fn checkpoint(State(state): State<AppState>) -> Result<Response, ApiError> {
    let shared = state.shared();
    let Some(signer) = shared.config.signer.as_deref() else {
        return Err(ApiError::not_found(
            "this server signs no checkpoints: it has no signer key (start it with --sign-key FILE, or add one to the database with `cairn sign-key DIR FILE`)",
        ));
    };
    let sign_finalized = shared.config.sign_finalized;
    let (snapshot, size) = shared
        .consistent(|_| {
            // Read first: it is durable when it is published.
            let finalized = shared.db.finalized_size();
            let (snapshot, durable) = shared.durable();
            let size = if sign_finalized {
                finalized.min(durable)
            } else {
                durable
            };
            (snapshot, size)
        })
        .await;
    let view = snapshot
        .view(size)
        .map_err(|e| ApiError::internal(format!("the tree at size {size}: {e}")))?;
    let Some(root) = view.root() else {
        let which = if sign_finalized {
            "finalized"
        } else {
            "durable"
        };
        return Err(ApiError::not_found(format!(
            "no checkpoint yet: the {which} tree is empty, and cairn's empty tree has no root to sign"
        )));
    };
    let tree = TreeLine::of(&snapshot.config()).map_err(|e| ApiError::internal(e.to_string()))?;
    let note = sign_head(signer, &tree, size, &root)
        .map_err(|e| ApiError::internal(format!("signing the head at size {size}: {e}")))?;
    let mut response = with_type(StatusCode::OK, note.into(), "text/plain; charset=utf-8");
    // The head moves with every append (and may move back with a rollback).
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Ok(response)
}
