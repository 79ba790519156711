//! Proofs: `GET /v1/proofs/{index}` (membership, at the durable head, an
//! explicit `size` or a known `root`), `GET /v1/consistency` and `GET
//! /v1/absence/{value}`, printed as `format` asks (cairn's JSON by
//! default, `binary`, or the interop forms the proof has). Every answer
//! carries an `ETag`; only an answer about an explicit size at or below
//! the finalized size, which no rollback can change, is `immutable`.

use std::sync::atomic::Ordering;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use cairn_core::TreeError;
use cairn_core::hex::{parse_hash, to_hex as hex};
use cairn_db::{At, DbError, Operation, Proof, ProofFormat};

use crate::body;
use crate::error::ApiError;
use crate::query::{self, RawQuery};
use crate::respond::cached;
use crate::state::AppState;

const PROOF_FORMATS: &str = "json, binary, zkkit, circom or zkkit-circom";

/// What a proof query asks: the format, the circuit depth, and its other
/// parameters.
struct Asked {
    format: ProofFormat,
    circuit_depth: Option<u32>,
    pairs: Vec<(&'static str, String)>,
}

/// What a proof query asks, its other parameters each of `allowed`.
fn asked(query: RawQuery, allowed: &[&'static str]) -> Result<Asked, ApiError> {
    let mut names = vec!["format", "circuit_depth"];
    names.extend_from_slice(allowed);
    let pairs = query::pairs(query, &names)?;
    let format = match query::find(&pairs, "format") {
        None | Some("json") => ProofFormat::Json,
        Some("binary") => ProofFormat::Binary,
        Some("zkkit") => ProofFormat::Zkkit,
        Some("circom") => ProofFormat::Circom,
        Some("zkkit-circom") => ProofFormat::ZkkitCircom,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "format {other:?} is not a proof format: want {PROOF_FORMATS}"
            )));
        }
    };
    let circuit_depth = match query::find(&pairs, "circuit_depth") {
        None => None,
        Some(_) if !matches!(format, ProofFormat::Circom | ProofFormat::ZkkitCircom) => {
            return Err(ApiError::bad_request(
                "circuit_depth is for format=circom or format=zkkit-circom",
            ));
        }
        Some(text) => {
            Some(u32::try_from(query::parse_u64("circuit_depth", text)?).unwrap_or(u32::MAX))
        }
    };
    Ok(Asked {
        format,
        circuit_depth,
        pairs,
    })
}

/// `proof` printed as asked, as an answer.
fn answer(
    headers: &HeaderMap,
    proof: &Proof,
    format: ProofFormat,
    circuit_depth: Option<u32>,
    immutable: bool,
) -> Result<Response, ApiError> {
    let bytes = proof.render(format, circuit_depth).map_err(|e| {
        ApiError::bad_request(format!(
            "{} at size {}: {e}",
            proof.describe(),
            proof.size()
        ))
    })?;
    Ok(cached(
        headers,
        bytes,
        format == ProofFormat::Binary,
        immutable,
    ))
}

pub(crate) async fn proof(
    State(state): State<AppState>,
    index: Result<Path<String>, PathRejection>,
    query: RawQuery,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let shared = state.shared();
    let db = &shared.db;
    let Path(index) = index.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let index = query::parse_u64("leaf index", &index)?;
    let Asked {
        format,
        circuit_depth,
        pairs,
    } = asked(query, &["size", "root"])?;
    let (at, explicit, root) = head_asked(db, &pairs)?;
    let proof = match at {
        // Between rollbacks: a root names a size only in one tree.
        At::Root(root) => {
            let _no_rollback = shared.rollbacks.read().await;
            db.prove(index, at).map_err(|error| match error {
                DbError::Tree(TreeError::IndexOutOfRange { index, size }) => {
                    ApiError::bad_request(format!(
                        "leaf index {index} is not below {size}, the size of root {}",
                        hex(&root)
                    ))
                }
                error => ApiError::from_db(error),
            })?
        }
        at => db.prove(index, at).map_err(ApiError::from_db)?,
    };
    // A proof by root names its size as surely as one by size.
    let immutable = shared.is_final(explicit.or(root.map(|_| proof.size())));
    answer(&headers, &proof, format, circuit_depth, immutable)
}

pub(crate) async fn consistency(
    State(state): State<AppState>,
    query: RawQuery,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let shared = state.shared();
    let numbers = query::numbers(query, &["from", "to"])?;
    let from = query::get(&numbers, "from").ok_or_else(|| {
        ApiError::bad_request("missing query parameter from (the older size): ?from=S1[&to=S2]")
    })?;
    let durable = shared.db.durable_size();
    let explicit = query::get(&numbers, "to");
    let to = explicit.unwrap_or(durable);
    if from > to {
        return Err(ApiError::bad_request(format!(
            "from {from} is larger than to {to}: a consistency proof goes from an older size to a newer one"
        )));
    }
    query::check_size(to, durable, "to")?;
    let proof = shared
        .db
        .prove_consistency(from, Some(to))
        .map_err(ApiError::from_db)?;
    Ok(cached(
        &headers,
        proof.json_bytes(),
        false,
        shared.is_final(explicit),
    ))
}

/// The head a proof query names: `size`, `root` or neither (the durable
/// head), with the explicit size and root.
fn head_asked(
    db: &cairn_db::Database,
    pairs: &[(&'static str, String)],
) -> Result<(At, Option<u64>, Option<cairn_core::Hash>), ApiError> {
    let explicit = query::find(pairs, "size")
        .map(|text| query::parse_u64("size", text))
        .transpose()?;
    let root = query::find(pairs, "root")
        .map(|text| parse_hash(text).map_err(|e| ApiError::bad_request(format!("root: {e}"))))
        .transpose()?;
    let at = match (explicit, root) {
        (Some(_), Some(_)) => {
            return Err(ApiError::bad_request(
                "give size or root, not both: a root names its size",
            ));
        }
        (Some(size), None) => {
            db.supports(Operation::HistoricalProof)
                .map_err(ApiError::from_db)?;
            query::check_size(size, db.durable_size(), "size")?;
            At::Size(size)
        }
        (None, Some(root)) => {
            db.supports(Operation::HistoricalProof)
                .map_err(ApiError::from_db)?;
            At::Root(root)
        }
        (None, None) => At::Durable,
    };
    Ok((at, explicit, root))
}

/// `GET /v1/absence/{value}`: the absence proof of a value against the
/// durable head or a retained earlier one (`size` or `root`; an indexed
/// tree's; 409 for a value it holds).
pub(crate) async fn absence(
    State(state): State<AppState>,
    value: Result<Path<String>, PathRejection>,
    query: RawQuery,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let shared = state.shared();
    let Path(text) = value.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let value = body::parse_leaf(&text, shared.db.tree_config().hash)
        .map_err(|e| ApiError::bad_request(format!("value: {e}")))?;
    let Asked {
        format,
        circuit_depth,
        pairs,
    } = asked(query, &["size", "root"])?;
    let (at, explicit, root) = head_asked(&shared.db, &pairs)?;
    let proof = {
        // Between rollbacks: a root names a size only in one tree.
        let _no_rollback = shared.rollbacks.read().await;
        shared
            .db
            .prove_absence_at(&value, at)
            .map_err(ApiError::from_db)?
    };
    shared
        .metrics
        .absence_proofs
        .fetch_add(1, Ordering::Relaxed);
    let immutable = shared.is_final(explicit.or(root.map(|_| proof.size())));
    answer(&headers, &proof, format, circuit_depth, immutable)
}
