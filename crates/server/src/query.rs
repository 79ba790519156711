//! Reading requests: query parameters (each at most once, each one the
//! route takes), bodies within a limit, the targets of rollbacks and
//! finalizations, and sizes checked against the durable size. Every
//! refusal is a 4xx naming the value.

use axum::body::{Body, Bytes};
use axum::extract::Query;
use axum::extract::rejection::QueryRejection;
use serde::Deserialize;

use crate::error::ApiError;

/// A route's query, as axum hands it over.
pub(crate) type RawQuery = Result<Query<Vec<(String, String)>>, QueryRejection>;

/// The query's parameters, each at most once and each one of `allowed`.
pub(crate) fn pairs(
    query: RawQuery,
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

/// The text of parameter `name`, if given.
pub(crate) fn find<'a>(pairs: &'a [(&'static str, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(_, text)| text.as_str())
}

/// The query's parameters, each at most once and each one of `allowed`,
/// as non-negative integers.
pub(crate) fn numbers(
    query: RawQuery,
    allowed: &[&'static str],
) -> Result<Vec<(&'static str, u64)>, ApiError> {
    pairs(query, allowed)?
        .into_iter()
        .map(|(name, text)| Ok((name, parse_u64(name, &text)?)))
        .collect()
}

/// `text` as a non-negative integer, refusing it by `what`.
pub(crate) fn parse_u64(what: &str, text: &str) -> Result<u64, ApiError> {
    text.parse::<u64>().map_err(|_| {
        ApiError::bad_request(format!("{what} {text:?} is not a non-negative integer"))
    })
}

/// The value of number `name`, if given.
pub(crate) fn get(numbers: &[(&'static str, u64)], name: &str) -> Option<u64> {
    numbers
        .iter()
        .find(|&&(known, _)| known == name)
        .map(|&(_, value)| value)
}

/// Refuses `size` (named `what`) beyond the durable size (404).
pub(crate) fn check_size(size: u64, durable: u64, what: &str) -> Result<(), ApiError> {
    if size > durable {
        return Err(ApiError::not_found(format!(
            "{what} {size} is beyond the tree's durable size {durable}"
        )));
    }
    Ok(())
}

fn too_large_body(what: String, limit: usize) -> ApiError {
    ApiError::too_large(format!(
        "a request body of {what} exceeds this server's limit of {limit} bytes"
    ))
}

/// Refuses a body its `Content-Length` says is above `limit`, before it
/// is read.
pub(crate) fn check_declared(
    headers: &axum::http::HeaderMap,
    limit: usize,
) -> Result<(), ApiError> {
    let declared = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    match declared {
        Some(declared) if declared > limit as u64 => {
            Err(too_large_body(format!("{declared} bytes"), limit))
        }
        _ => Ok(()),
    }
}

/// The request body, at most `limit` bytes (413 above it).
pub(crate) async fn read_body(request_body: Body, limit: usize) -> Result<Bytes, ApiError> {
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

/// A write's body: refused above the server's body limit (by its declared
/// length first, then as read), and counted in the body-bytes metric.
pub(crate) async fn write_body(
    shared: &crate::state::Shared,
    headers: &axum::http::HeaderMap,
    request_body: Body,
) -> Result<Bytes, ApiError> {
    let limit = shared.config.max_body_bytes;
    check_declared(headers, limit)?;
    let bytes = read_body(request_body, limit).await?;
    shared
        .metrics
        .body_bytes
        .fetch_add(bytes.len() as u64, std::sync::atomic::Ordering::Relaxed);
    Ok(bytes)
}

/// Bodies of the rollback and finalize requests are small.
const SMALL_BODY_BYTES: usize = 4096;

/// Where a rollback or a finalization goes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Target {
    Size(u64),
    Block(u64),
}

/// `{"to_size": S}` or `{"to_block": N}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RollbackBody {
    #[serde(default)]
    pub to_size: Option<u64>,
    #[serde(default)]
    pub to_block: Option<u64>,
}

/// `{"size": S}` or `{"block": N}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FinalizeBody {
    #[serde(default)]
    pub size: Option<u64>,
    #[serde(default)]
    pub block: Option<u64>,
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
