//! The service routes: `GET /healthz`, `GET /metrics` (Prometheus text),
//! `GET /openapi.json` (the API document), and the answers to a route or
//! method the server does not have.

use axum::extract::State;
use axum::http::{Method, StatusCode, Uri};
use axum::response::Response;

use crate::error::ApiError;
use crate::respond::with_type;
use crate::state::AppState;

/// The OpenAPI 3 document of [`crate::ROUTES`], as committed and served.
pub const OPENAPI_JSON: &str = include_str!("../../openapi.json");

pub(crate) async fn health(State(state): State<AppState>) -> Response {
    let shared = state.shared();
    crate::health::answer(
        shared.failure(),
        &shared.db.health(),
        &shared.metrics.connections,
        crate::ready::lag(shared),
    )
}

pub(crate) async fn metrics(State(state): State<AppState>) -> Response {
    let shared = state.shared();
    let text = shared.metrics.render(&shared.db);
    with_type(
        StatusCode::OK,
        text.into(),
        "text/plain; version=0.0.4; charset=utf-8",
    )
}

pub(crate) async fn openapi() -> Response {
    with_type(StatusCode::OK, OPENAPI_JSON.into(), "application/json")
}

pub(crate) async fn no_route(method: Method, uri: Uri) -> ApiError {
    ApiError::not_found(format!(
        "no route for {method} {}: the API is described at /openapi.json",
        uri.path()
    ))
}

pub(crate) async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("{} does not accept {method}", uri.path()),
    )
}
