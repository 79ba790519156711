//! `GET /v1/leaves?from=&to=`: the durable leaves by index, for mirrors and
//! indexers that copy a served database. Raw 32-byte leaves by default (the
//! bytes `cairn export` writes for the same range), JSON on request.
//!
//! Invariant: every leaf answered is durable and of one tree: the range is
//! checked against the durable size and copied from one snapshot of the
//! durable tree (`Database::leaves`).

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use cairn_core::hex::to_hex;
use serde::Serialize;

use crate::error::ApiError;
use crate::query::{self, RawQuery};
use crate::respond::{json, with_type};
use crate::state::AppState;

#[derive(Serialize)]
struct LeavesJson {
    from: u64,
    leaves: Vec<String>,
}

/// Whether the client asked for JSON: the first of `application/json` and
/// `application/octet-stream` its `Accept` header names decides; binary if
/// it names neither.
fn wants_json(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(|item| item.split(';').next())
        .map(str::trim)
        .find_map(|media| {
            if media.eq_ignore_ascii_case("application/json") {
                Some(true)
            } else if media.eq_ignore_ascii_case("application/octet-stream") {
                Some(false)
            } else {
                None
            }
        })
        .unwrap_or(false)
}

pub(crate) async fn leaves(
    State(state): State<AppState>,
    headers: HeaderMap,
    query: RawQuery,
) -> Result<axum::response::Response, ApiError> {
    let shared = state.shared();
    let numbers = query::numbers(query, &["from", "to"])?;
    let from = query::get(&numbers, "from").unwrap_or(0);
    let to = query::get(&numbers, "to");
    let limit = shared.config.max_leaves_per_read as u64;
    if let Some(to) = to {
        if from > to {
            return Err(ApiError::bad_request(format!(
                "from {from} is larger than to {to}: the range is leaves from..to, from <= to"
            )));
        }
        if to - from > limit {
            return Err(ApiError::bad_request(format!(
                "leaves {from}..{to} are {} leaves, more than the server's limit of {limit} per read (--max-leaves-per-read): ask for fewer",
                to - from
            )));
        }
    }
    let durable = shared.db.durable_size();
    query::check_size(from, durable, "from")?;
    // Without `to`: as many as the limit allows, up to the durable size.
    let to = to.unwrap_or_else(|| durable.min(from.saturating_add(limit)));
    query::check_size(to, durable, "to")?;
    // A rollback since `durable` was read may refuse the range (404).
    let leaves = shared
        .db
        .leaves(from, Some(to))
        .map_err(ApiError::from_db)?;
    if wants_json(&headers) {
        return Ok(json(
            StatusCode::OK,
            &LeavesJson {
                from,
                leaves: leaves.iter().map(to_hex).collect(),
            },
        ));
    }
    Ok(with_type(
        StatusCode::OK,
        leaves.as_flattened().to_vec().into(),
        "application/octet-stream",
    ))
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn accepting(values: &[&'static str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(header::ACCEPT, HeaderValue::from_static(value));
        }
        headers
    }

    #[test]
    fn accept_header_picks_the_first_known_media_type() {
        assert!(!wants_json(&accepting(&[])));
        assert!(!wants_json(&accepting(&["*/*"])));
        assert!(wants_json(&accepting(&["application/json"])));
        assert!(wants_json(&accepting(&[
            "text/html, Application/JSON;q=0.9"
        ])));
        assert!(!wants_json(&accepting(&[
            "application/octet-stream, application/json"
        ])));
        assert!(wants_json(&accepting(&[
            "application/json",
            "application/octet-stream"
        ])));
    }
}
