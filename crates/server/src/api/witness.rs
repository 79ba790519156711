//! Batch witnesses, the inputs of cairn's batch circuits
//! (`circuits/append.circom`, `circuits/indexed-batch.circom`) as snarkjs
//! reads them, the same JSON `cairn prove --append-witness` and
//! `--insert-witness` print:
//!
//! - `GET /v1/witness/append?from=F&to=T[&circuit_depth=D]`: that leaves
//!   `F..T` appended to the durable tree of `F` leaves give the tree of `T`
//!   (append-only trees; a binary Poseidon lean one for the circuit);
//! - `POST /v1/witness/insert` with `{"values": [..], "circuit_depth": D}`:
//!   inserting the values in order into the durable indexed tree, which is
//!   not changed (a read: no write token, served by read-only servers).
//!
//! A kind without the witness is refused by the route table (404); a bad
//! range, batch length or depth is 400, a value the tree holds or the
//! batch repeats 409 (naming it, as an append does).

use std::borrow::Cow;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use cairn_db::ErrorKind;
use serde::Deserialize;

use crate::body::{self, Encoding};
use crate::error::ApiError;
use crate::query::{self, RawQuery};
use crate::respond::{cached, with_type};
use crate::state::AppState;

/// The circuit depth a query or body names, as the circuits take it.
fn circuit_depth(depth: Option<u64>) -> Option<u32> {
    // Past u32 is past every circuit's maximum: refused as too deep.
    depth.map(|depth| u32::try_from(depth).unwrap_or(u32::MAX))
}

/// `GET /v1/witness/append`.
pub(crate) async fn append(
    State(state): State<AppState>,
    query: RawQuery,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let shared = state.shared();
    let numbers = query::numbers(query, &["from", "to", "circuit_depth"])?;
    let (Some(from), Some(to)) = (query::get(&numbers, "from"), query::get(&numbers, "to")) else {
        return Err(ApiError::bad_request(
            "missing query parameter: want ?from=F&to=T[&circuit_depth=D] (the leaves F..T, appended to the tree of the first F)",
        ));
    };
    if from > to {
        return Err(ApiError::bad_request(format!(
            "from {from} is above to {to}: the batch is the leaves from..to, appended to the tree of the first from"
        )));
    }
    let limit = shared.config.max_batch_leaves as u64;
    if to - from > limit {
        return Err(ApiError::bad_request(format!(
            "a batch of {} leaves exceeds this server's limit of {limit} leaves per request",
            to - from
        )));
    }
    query::check_size(to, shared.db.durable_size(), "to")?;
    let depth = circuit_depth(query::get(&numbers, "circuit_depth"));
    let witness = shared
        .db
        .append_witness(from, Some(to))
        .map_err(ApiError::from_db)?;
    let json = witness.to_circom_json(depth).map_err(|error| {
        ApiError::bad_request(format!(
            "cannot make the append witness of leaves {from}..{to}: {error}"
        ))
    })?;
    Ok(cached(
        &headers,
        json.into_bytes(),
        false,
        shared.is_final(Some(to)),
    ))
}

/// The body of `POST /v1/witness/insert`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InsertJson<'a> {
    #[serde(borrow)]
    values: Vec<Cow<'a, str>>,
    #[serde(default)]
    circuit_depth: Option<u64>,
}

/// `POST /v1/witness/insert`.
pub(crate) async fn insert(
    State(state): State<AppState>,
    headers: HeaderMap,
    request_body: Body,
) -> Result<Response, ApiError> {
    let shared = state.shared();
    if body::encoding(&headers)? != Encoding::Json {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "an insertion witness is asked in JSON: send application/json ({\"values\": [\"0x..\"], \"circuit_depth\": D})",
        ));
    }
    let bytes = query::read_body(request_body, shared.config.max_body_bytes).await?;
    let asked: InsertJson<'_> = serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::bad_request(format!(
            "the body is not {{\"values\": [\"0x..\" or decimal, ...], \"circuit_depth\": D}} (circuit_depth optional): {e}"
        ))
    })?;
    let limit = shared.config.max_batch_leaves;
    if asked.values.len() > limit {
        return Err(ApiError::too_large(format!(
            "a batch of {} values exceeds this server's limit of {limit} values per request",
            asked.values.len()
        )));
    }
    if asked.values.is_empty() {
        return Err(ApiError::bad_request(
            "no values: an insertion witness needs at least one (a positive multiple of 4 for the circuit)",
        ));
    }
    let hash = shared.db.tree_config().hash;
    let values = asked
        .values
        .iter()
        .enumerate()
        .map(|(position, text)| {
            body::parse_leaf(text, hash)
                .map_err(|e| ApiError::bad_request(format!("value at position {position}: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let (head, witness) =
        shared
            .db
            .insertion_witness(&values)
            .map_err(|error| match error.kind() {
                // Past the tree's capacity: the tree's state refuses the
                // batch, no storage is short (nothing is written).
                ErrorKind::Full => ApiError::new(StatusCode::CONFLICT, error.to_string()),
                _ => ApiError::from_db(error),
            })?;
    let json = witness
        .to_circom_json(&head, circuit_depth(asked.circuit_depth))
        .map_err(|error| {
            ApiError::bad_request(format!(
                "cannot make the insertion witness of {} values: {error}",
                values.len()
            ))
        })?;
    let mut json = json.into_bytes();
    json.push(b'\n');
    Ok(with_type(StatusCode::OK, json.into(), "application/json"))
}
