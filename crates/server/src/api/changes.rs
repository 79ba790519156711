//! `POST /v1/changes`: updates and removals of a mutable tree's leaves
//! (`cairn init --mutable`), a batch in order, all or nothing (a JSON
//! block tags it), answered once durable with each changed leaf's old
//! value and its membership proof against the root just before that
//! change (what Semaphore's `updateMember` and `removeMember` take), and
//! the head.
//!
//! The body: `{"changes": [{"index": I, "value": "0x.."}, {"index": J,
//! "value": null}], "block": {"number": N, "hash": "0x.."}}`; a string
//! value updates the leaf, `null` removes it (sets the zero leaf). A
//! missing `value` is refused rather than read as a removal. Refusals
//! carry a stable `code` beside the message (see [`code`]); like an
//! append's, a refusal that names a value or leaf names durable state
//! only.

use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use cairn_core::hex::to_hex as hex;
use cairn_core::{HashKind, TreeError};
use cairn_db::{
    BlockTag, Change, ChangeTicket, DbError, MutableError, OldLeaf, Proof, ProofFormat,
};
use serde::{Deserialize, Deserializer, Serialize};

use crate::error::ApiError;
use crate::query;
use crate::respond::json;
use crate::state::{AppState, Shared};
use crate::{auth, body};

/// A change as a request names it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChangeJson {
    index: u64,
    /// `Some(None)`: `"value": null`, a removal; `None`: no `value`.
    #[serde(default, deserialize_with = "given")]
    value: Option<Option<String>>,
}

/// A field that is present, `null` or not.
fn given<'de, D: Deserializer<'de>>(input: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(input).map(Some)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChangesJson {
    #[serde(default)]
    changes: Vec<ChangeJson>,
    #[serde(default)]
    block: Option<BlockJson>,
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct BlockJson {
    number: u64,
    #[serde(default)]
    hash: Option<String>,
}

/// One change's answer: the leaf, its old and new value, and the old
/// leaf's proof (cairn's JSON membership proof, as `GET /v1/proofs`).
#[derive(Serialize)]
struct ChangedJson {
    index: u64,
    old: String,
    /// The new value; `null` for a removal.
    value: Option<String>,
    proof: serde_json::Value,
}

#[derive(Serialize)]
struct AnswerJson {
    count: u64,
    size: u64,
    root: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    block: Option<BlockJson>,
    changes: Vec<ChangedJson>,
}

/// What a request asks: the changes and the block tagging them.
#[derive(Debug)]
struct Asked {
    changes: Vec<Change>,
    block: Option<BlockTag>,
}

fn parse(bytes: &[u8], max_changes: usize, hash: HashKind) -> Result<Asked, ApiError> {
    let doc: ChangesJson = serde_json::from_slice(bytes).map_err(|e| {
        ApiError::bad_request(format!(
            "the body is not {{\"changes\": [{{\"index\": I, \"value\": \"0x..\" or null}}, ...], \"block\": {{\"number\": N, \"hash\": \"0x..\"}}}} (block optional): {e}"
        ))
    })?;
    if doc.changes.len() > max_changes {
        return Err(ApiError::too_large(format!(
            "a batch of {} changes exceeds this server's limit of {max_changes} per request",
            doc.changes.len()
        )));
    }
    let block = match doc.block {
        None => None,
        Some(block) => Some(BlockTag {
            number: block.number,
            hash: block.hash.as_deref().map(body::block_hash).transpose()?,
        }),
    };
    if doc.changes.is_empty() && block.is_none() {
        return Err(ApiError::bad_request(
            "empty batch: give at least one change (a block alone needs its number: {\"changes\": [], \"block\": {\"number\": N}})",
        ));
    }
    let changes = doc
        .changes
        .into_iter()
        .enumerate()
        .map(|(position, change)| match change.value {
            None => Err(ApiError::bad_request(format!(
                "change at position {position} has no value: give \"value\": \"0x..\" to update leaf {} or \"value\": null to remove it",
                change.index
            ))),
            Some(None) => Ok(Change::Remove(change.index)),
            Some(Some(text)) => body::parse_leaf(&text, hash)
                .map(|value| Change::Update(change.index, value))
                .map_err(|e| {
                    ApiError::bad_request(format!("change at position {position}: value {e}"))
                        .with_code("non_canonical")
                }),
        })
        .collect::<Result<_, _>>()?;
    Ok(Asked { changes, block })
}

pub(crate) async fn changes(
    State(state): State<AppState>,
    headers: HeaderMap,
    request_body: Body,
) -> Result<Response, ApiError> {
    let shared = state.shared();
    auth::check_write(shared.config.token.as_deref(), &headers)?;
    if body::encoding(&headers)? != body::Encoding::Json {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "changes are sent as application/json ({\"changes\": [{\"index\": I, \"value\": \"0x..\" or null}]})",
        ));
    }
    let bytes = query::write_body(shared, &headers, request_body).await?;
    let asked = parse(
        &bytes,
        shared.config.max_batch_leaves,
        shared.db.tree_config().hash,
    )?;
    drop(bytes);
    // No rollback removes these changes before they are answered.
    let _no_rollback = shared.rollbacks.read().await;
    let block = asked.block;
    let task = state.clone();
    let (ticket, asked) = tokio::task::spawn_blocking(move || {
        let ticket = apply(task.shared(), &asked);
        (ticket, asked)
    })
    .await
    .map_err(|e| ApiError::internal(format!("the change task failed: {e}")))?;
    let ticket = ticket.map_err(|error| refused(shared, error))?;
    match tokio::time::timeout(shared.config.durability_timeout, ticket.token.durable()).await {
        Ok(result) => result.map_err(|error| refused(shared, error.into()))?,
        Err(_) => {
            return Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "{} changes were accepted but not acknowledged as durable within {} s: they may still become durable (read the leaves before sending them again)",
                    ticket.count,
                    shared.config.durability_timeout.as_secs(),
                ),
            ));
        }
    }
    // Durable: the old leaves are ready (no wait).
    let old = shared
        .db
        .changed(&ticket, Duration::ZERO)
        .map_err(|error| refused(shared, error))?;
    let head = shared.db.head();
    let changes = old
        .into_iter()
        .zip(&asked.changes)
        .map(|(old, change)| answer(old, change))
        .collect::<Result<Vec<_>, _>>()?;
    let metrics = &shared.metrics;
    metrics.appends.fetch_add(1, Ordering::Relaxed);
    Ok(json(
        StatusCode::OK,
        &AnswerJson {
            count: ticket.count,
            size: head.size,
            root: head.root.as_ref().map(hex),
            block: block.map(|tag| BlockJson {
                number: tag.number,
                hash: tag.hash.as_ref().map(hex),
            }),
            changes,
        },
    ))
}

/// Applies the batch (on the blocking pool). A refusal naming a value or
/// a leaf that other writers changed and that is not yet durable waits
/// for everything accepted to be durable and checks again, so that a
/// refusal describes durable state (as an append's 409 does).
fn apply(shared: &Shared, asked: &Asked) -> Result<ChangeTicket, DbError> {
    let db = &shared.db;
    let attempt = || match asked.block {
        Some(tag) => db.change_tagged(&asked.changes, tag),
        None => db.change(&asked.changes),
    };
    match attempt() {
        Err(error) if code(&error).is_some_and(|c| PENDING_SENSITIVE.contains(&c)) => {
            db.flush()?;
            attempt()
        }
        result => result,
    }
}

/// The refusals whose answer depends on what other writers accepted.
const PENDING_SENSITIVE: &[&str] = &["duplicate", "was_removed", "removed_leaf"];

/// The stable name of a refused change: `index_out_of_range` (404),
/// `non_canonical` and `zero_leaf` (400), `duplicate` (the value is held:
/// 409 with the duplicates), `was_removed` (the value was removed and the
/// tree does not readmit removed values: 409), `removed_leaf` (the leaf
/// was removed already: 409). `not_mutable` is the route table's.
fn code(error: &DbError) -> Option<&'static str> {
    Some(match error {
        DbError::Tree(TreeError::IndexOutOfRange { .. }) => "index_out_of_range",
        DbError::Tree(TreeError::NonCanonicalLeaf { .. }) => "non_canonical",
        DbError::Duplicates { .. } => "duplicate",
        DbError::Mutable(MutableError::ZeroLeaf { .. }) => "zero_leaf",
        DbError::Mutable(MutableError::WasRemoved { .. }) => "was_removed",
        DbError::Mutable(MutableError::Removed { .. }) => "removed_leaf",
        _ => return None,
    })
}

fn refused(shared: &Shared, error: DbError) -> ApiError {
    let code = code(&error);
    if code.is_none() && error.is_storage_fault() {
        shared
            .metrics
            .append_failures
            .fetch_add(1, Ordering::Relaxed);
        shared.record_failure(&error);
    }
    let answer = ApiError::from_db(error);
    match code {
        Some(code) => answer.with_code(code),
        None => answer,
    }
}

fn answer(old: Option<OldLeaf>, change: &Change) -> Result<ChangedJson, ApiError> {
    let old = old.ok_or_else(|| ApiError::internal("a change of a leaf has no old leaf"))?;
    let value = match *change {
        Change::Update(_, value) => Some(hex(&value)),
        _ => None,
    };
    let bytes = Proof::Membership(old.proof)
        .render(ProofFormat::Json, None)
        .map_err(|e| ApiError::internal(format!("the old leaf's proof: {e}")))?;
    let proof = serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::internal(format!("the old leaf's proof is not JSON: {e}")))?;
    Ok(ChangedJson {
        index: old.index,
        old: hex(&old.old),
        value,
        proof,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<Vec<Change>, ApiError> {
        parse(text.as_bytes(), 4, HashKind::Blake3).map(|asked| asked.changes)
    }

    #[test]
    fn a_string_updates_null_removes_and_a_missing_value_is_refused() {
        let value = format!("0x{}", "ab".repeat(32));
        let changes = parsed(&format!(
            r#"{{"changes": [{{"index": 3, "value": "{value}"}}, {{"index": 1, "value": null}}]}}"#
        ))
        .unwrap();
        assert_eq!(changes, [Change::Update(3, [0xab; 32]), Change::Remove(1)]);
        let refused = parsed(r#"{"changes": [{"index": 2}]}"#).unwrap_err();
        assert_eq!(refused.status, StatusCode::BAD_REQUEST);
        assert!(refused.message.contains("no value"), "{}", refused.message);
    }

    #[test]
    fn empty_too_many_and_unknown_fields_are_refused() {
        assert_eq!(
            parsed(r#"{"changes": []}"#).unwrap_err().status,
            StatusCode::BAD_REQUEST
        );
        let five = r#"{"changes": [{"index":0,"value":null},{"index":1,"value":null},{"index":2,"value":null},{"index":3,"value":null},{"index":4,"value":null}]}"#;
        assert_eq!(
            parsed(five).unwrap_err().status,
            StatusCode::PAYLOAD_TOO_LARGE
        );
        assert_eq!(
            parsed(r#"{"changes": [{"index": 0, "value": null, "x": 1}]}"#)
                .unwrap_err()
                .status,
            StatusCode::BAD_REQUEST
        );
        let block = parse(br#"{"block": {"number": 7}}"#, 4, HashKind::Blake3).unwrap();
        assert!(block.changes.is_empty());
        assert_eq!(block.block.map(|b| b.number), Some(7));
    }

    #[test]
    fn a_non_canonical_field_element_is_refused_with_its_code() {
        // The BN254 scalar field's modulus, spelled in decimal.
        let modulus =
            "21888242871839275222246405745257275088548364400416034343698204186575808495617";
        let refused = parse(
            format!(r#"{{"changes": [{{"index": 0, "value": "{modulus}"}}]}}"#).as_bytes(),
            4,
            HashKind::Poseidon,
        )
        .unwrap_err();
        assert_eq!(refused.status, StatusCode::BAD_REQUEST);
        assert_eq!(refused.code, Some("non_canonical"));
    }
}
