//! Answers: JSON and typed bodies, and proof answers with their
//! validators (an `ETag`, `304` for a matching `If-None-Match`, and
//! `Cache-Control: immutable` only for an answer no rollback can change).

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse as _, Response};
use serde::Serialize;

/// `value` as a JSON answer.
pub(crate) fn json<T: Serialize>(status: StatusCode, value: &T) -> Response {
    let body =
        serde_json::to_vec(value).unwrap_or_else(|e| unreachable!("serialising plain data: {e}"));
    with_type(status, body.into(), "application/json")
}

/// `body` answered with its content type.
pub(crate) fn with_type(status: StatusCode, body: Body, content_type: &'static str) -> Response {
    let mut response = (status, body).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// A proof answer (`binary`: raw bytes, else JSON ending in a newline)
/// with a validator: an `ETag` (a digest of the body), `304` when the
/// request's `If-None-Match` holds it, and `Cache-Control: immutable` when
/// the answer can never change (`no-cache` otherwise, so a cache
/// revalidates).
pub(crate) fn cached(
    request: &HeaderMap,
    mut body: Vec<u8>,
    binary: bool,
    immutable: bool,
) -> Response {
    if !binary {
        body.push(b'\n');
    }
    let digest = blake3::hash(&body);
    let tag = format!("\"{}\"", &digest.to_hex()[..32]);
    let cache = if immutable {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    let matches = request
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|v| v.trim().trim_start_matches("W/"))
        .any(|v| v == tag || v == "*");
    let content_type = if binary {
        "application/octet-stream"
    } else {
        "application/json"
    };
    let mut response = if matches {
        (StatusCode::NOT_MODIFIED, Body::empty()).into_response()
    } else {
        with_type(StatusCode::OK, body.into(), content_type)
    };
    let headers = response.headers_mut();
    if let Ok(tag) = HeaderValue::from_str(&tag) {
        headers.insert(header::ETAG, tag);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    response
}
