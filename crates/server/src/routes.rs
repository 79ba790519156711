//! The routes as one table, the router built from it for a database of
//! any kind, and the middleware every request goes through (request id,
//! tracing span, latency metric, CORS, the read-only refusal).
//!
//! Invariant: the router serves exactly [`ROUTES`] (it is built from the
//! table and nothing else), and a test checks the table, with each route's
//! statuses, against the committed `openapi.json`. A route a kind cannot
//! serve is refused (404) from its row (`needs`), in the words of the
//! database's one refusal (`cairn_db::Operation::check`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, Method};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{MethodRouter, get, post};
use cairn_db::Operation;
use tracing::Instrument as _;

use crate::api::{
    append, changes, checkpoint, history, leaves, lookup, proofs, service, witness, writes,
};
use crate::cors::CorsPolicy;
use crate::error::{ApiError, ServerFailure};
use crate::metrics::Metrics;
use crate::state::AppState;

/// One route: what the router serves and the OpenAPI document describes.
#[derive(Clone, Copy, Debug)]
pub struct Route {
    /// The HTTP method.
    pub method: &'static str,
    /// The path template, `{name}` for a path parameter (OpenAPI's form).
    pub path: &'static str,
    /// Every status the route can answer with.
    pub statuses: &'static [u16],
    /// Whether the route needs the write token when one is configured.
    pub needs_token: bool,
    /// What the route does that only some tree kinds can (the others
    /// answer 404 with the refusal), if anything.
    pub needs: Option<Operation>,
}

/// Every route the server serves.
pub const ROUTES: &[Route] = &[
    Route {
        method: "POST",
        path: "/v1/leaves",
        statuses: &[200, 400, 401, 403, 404, 409, 413, 415, 500, 503, 507],
        needs_token: true,
        needs: None,
    },
    Route {
        method: "GET",
        path: "/v1/leaves",
        statuses: &[200, 400, 404],
        needs_token: false,
        needs: Some(Operation::LeafRange),
    },
    Route {
        method: "GET",
        path: "/v1/root",
        statuses: &[200, 404],
        needs_token: false,
        needs: None,
    },
    Route {
        method: "GET",
        path: "/v1/leaves/{value}",
        statuses: &[200, 400, 404, 501],
        needs_token: false,
        needs: None,
    },
    Route {
        method: "GET",
        path: "/v1/proofs/{index}",
        statuses: &[200, 304, 400, 404],
        needs_token: false,
        needs: None,
    },
    Route {
        method: "GET",
        path: "/v1/consistency",
        statuses: &[200, 304, 400, 404],
        needs_token: false,
        needs: Some(Operation::ConsistencyProof),
    },
    Route {
        method: "GET",
        path: "/v1/roots/{root}",
        statuses: &[200, 400, 404],
        needs_token: false,
        needs: Some(Operation::RootLookup),
    },
    Route {
        method: "GET",
        path: "/v1/heads",
        statuses: &[200, 400, 404],
        needs_token: false,
        needs: Some(Operation::BlockTags),
    },
    Route {
        method: "POST",
        path: "/v1/rollback",
        statuses: &[200, 400, 401, 403, 404, 409, 413, 500, 503],
        needs_token: true,
        needs: None,
    },
    Route {
        method: "POST",
        path: "/v1/finalize",
        statuses: &[200, 400, 401, 403, 404, 413, 500, 503],
        needs_token: true,
        needs: None,
    },
    Route {
        method: "GET",
        path: "/v1/absence/{value}",
        statuses: &[200, 400, 404, 409],
        needs_token: false,
        needs: Some(Operation::AbsenceProof),
    },
    Route {
        method: "POST",
        path: "/v1/changes",
        statuses: &[200, 400, 401, 403, 404, 409, 413, 415, 500, 503],
        needs_token: true,
        needs: Some(Operation::Mutation),
    },
    Route {
        method: "GET",
        path: "/v1/witness/append",
        statuses: &[200, 304, 400, 404],
        needs_token: false,
        needs: Some(Operation::AppendWitness),
    },
    Route {
        method: "POST",
        path: "/v1/witness/insert",
        statuses: &[200, 400, 404, 409, 413, 415],
        needs_token: false,
        needs: Some(Operation::InsertionWitness),
    },
    Route {
        method: "GET",
        path: "/healthz",
        statuses: &[200, 503],
        needs_token: false,
        needs: None,
    },
    Route {
        method: "GET",
        path: "/readyz",
        statuses: &[200, 503],
        needs_token: false,
        needs: None,
    },
    Route {
        method: "GET",
        path: "/metrics",
        statuses: &[200],
        needs_token: false,
        needs: None,
    },
    Route {
        method: "GET",
        path: "/openapi.json",
        statuses: &[200],
        needs_token: false,
        needs: None,
    },
    Route {
        method: "GET",
        path: "/v1/checkpoint",
        statuses: &[200, 404],
        needs_token: false,
        needs: Some(Operation::SignedCheckpoint),
    },
    Route {
        method: "POST",
        path: "/v1/lookup",
        statuses: &[200, 400, 404, 413, 415, 501],
        needs_token: false,
        needs: None,
    },
    Route {
        method: "POST",
        path: "/v1/trees/{name}/leaves",
        statuses: &[200, 400, 401, 403, 404, 409, 413, 415, 500, 503, 507],
        needs_token: true,
        needs: None,
    },
    Route {
        method: "GET",
        path: "/v1/trees/{name}/leaves",
        statuses: &[200, 400, 404],
        needs_token: false,
        needs: None,
    },
    Route {
        method: "GET",
        path: "/v1/trees/{name}/root",
        statuses: &[200, 404],
        needs_token: false,
        needs: None,
    },
    Route {
        method: "GET",
        path: "/v1/trees/{name}/leaves/{value}",
        statuses: &[200, 400, 404, 501],
        needs_token: false,
        needs: None,
    },
    Route {
        method: "GET",
        path: "/v1/trees/{name}/proofs/{index}",
        statuses: &[200, 304, 400, 404],
        needs_token: false,
        needs: None,
    },
    Route {
        method: "GET",
        path: "/v1/trees/{name}/consistency",
        statuses: &[200, 304, 400, 404],
        needs_token: false,
        needs: None,
    },
    Route {
        method: "GET",
        path: "/v1/trees/{name}/roots/{root}",
        statuses: &[200, 400, 404],
        needs_token: false,
        needs: None,
    },
    Route {
        method: "GET",
        path: "/v1/trees/{name}/heads",
        statuses: &[200, 400, 404],
        needs_token: false,
        needs: None,
    },
    Route {
        method: "POST",
        path: "/v1/trees/{name}/rollback",
        statuses: &[200, 400, 401, 403, 404, 409, 413, 500, 503],
        needs_token: true,
        needs: None,
    },
    Route {
        method: "POST",
        path: "/v1/trees/{name}/finalize",
        statuses: &[200, 400, 401, 403, 404, 413, 500, 503],
        needs_token: true,
        needs: None,
    },
    Route {
        method: "GET",
        path: "/v1/trees/{name}/absence/{value}",
        statuses: &[200, 400, 404, 409],
        needs_token: false,
        needs: None,
    },
    Route {
        method: "GET",
        path: "/v1/trees/{name}/checkpoint",
        statuses: &[200, 404],
        needs_token: false,
        needs: None,
    },
    Route {
        method: "POST",
        path: "/v1/trees/{name}/lookup",
        statuses: &[200, 400, 404, 413, 415, 501],
        needs_token: false,
        needs: None,
    },
    Route {
        method: "POST",
        path: "/v1/trees/{name}/changes",
        statuses: &[200, 400, 401, 403, 404, 409, 413, 415, 500, 503],
        needs_token: true,
        needs: None,
    },
    Route {
        method: "GET",
        path: "/v1/trees/{name}/witness/append",
        statuses: &[200, 304, 400, 404],
        needs_token: false,
        needs: None,
    },
    Route {
        method: "POST",
        path: "/v1/trees/{name}/witness/insert",
        statuses: &[200, 400, 404, 409, 413, 415],
        needs_token: false,
        needs: None,
    },
    Route {
        method: "GET",
        path: "/v1/trees",
        statuses: &[200],
        needs_token: false,
        needs: None,
    },
    Route {
        method: "POST",
        path: "/v1/blocks",
        statuses: &[200, 400, 401, 403, 404, 409, 413, 415, 500, 503, 507],
        needs_token: true,
        needs: None,
    },
    Route {
        method: "GET",
        path: "/v1/blocks",
        statuses: &[200, 400, 404],
        needs_token: false,
        needs: None,
    },
];

/// Which part of the server a route belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
    /// A tree's route without a prefix: the default tree's.
    Tree,
    /// A tree's route under `/v1/trees/{name}`.
    Named,
    /// The database's own: `/v1/trees`, `/v1/blocks`.
    Forest,
    /// The server's: health, readiness, metrics, the document.
    Service,
}

/// The scope of a route's path.
pub(crate) fn scope(path: &str) -> Scope {
    if path.starts_with("/v1/trees/") {
        Scope::Named
    } else if path == "/v1/trees" || path == "/v1/blocks" {
        Scope::Forest
    } else if path.starts_with("/v1/") {
        Scope::Tree
    } else {
        Scope::Service
    }
}

/// The handler of a table entry for a database of `kind` (`mutable` or
/// not): the route's own, or the refusal of what it needs (with the code
/// `not_mutable` for a change of a tree created append-only). A table
/// entry without a handler is a programmer error, caught by every test
/// that builds a router.
fn handler(route: &Route, kind: cairn_core::TreeKind, mutable: bool) -> MethodRouter<AppState> {
    if let Some((needs, refusal)) = route
        .needs
        .and_then(|needs| Some((needs, needs.check_for(kind, mutable).err()?)))
    {
        let message = refusal.to_string();
        let refuse = move || async move {
            let answer = ApiError::not_found(message);
            if needs == Operation::Mutation {
                answer.with_code("not_mutable")
            } else {
                answer
            }
        };
        return match route.method {
            "POST" => post(refuse),
            _ => get(refuse),
        };
    }
    match (route.method, route.path) {
        ("POST", "/v1/leaves") => post(append::append),
        ("GET", "/v1/leaves") => get(leaves::leaves),
        ("GET", "/v1/root") => get(history::root),
        ("GET", "/v1/leaves/{value}") => get(lookup::leaf_index),
        ("GET", "/v1/proofs/{index}") => get(proofs::proof),
        ("GET", "/v1/consistency") => get(proofs::consistency),
        ("GET", "/v1/roots/{root}") => get(history::root_at),
        ("GET", "/v1/heads") => get(history::heads),
        ("POST", "/v1/rollback") => post(writes::rollback),
        ("POST", "/v1/finalize") => post(writes::finalize),
        ("GET", "/v1/absence/{value}") => get(proofs::absence),
        ("GET", "/healthz") => get(service::health),
        ("GET", "/readyz") => get(crate::ready::ready),
        ("GET", "/metrics") => get(service::metrics),
        ("GET", "/openapi.json") => get(service::openapi),
        ("GET", "/v1/checkpoint") => get(checkpoint::checkpoint),
        ("POST", "/v1/lookup") => post(lookup::lookup),
        ("POST", "/v1/changes") => post(changes::changes),
        ("GET", "/v1/witness/append") => get(witness::append),
        ("POST", "/v1/witness/insert") => post(witness::insert),
        (method, path) => panic!("route {method} {path} is in ROUTES but has no handler"),
    }
}

/// The router of one tree's routes (the single-tree routes without a
/// prefix, and the service routes) for the state's database: what a
/// server of several trees hands each tree's requests to. Not observed:
/// the server's router around it records the request.
pub(crate) fn tree_router(state: AppState) -> Router {
    let kind = state.shared().db.kind();
    let mutable = state.shared().db.is_mutable();
    let mut router = Router::new();
    for route in ROUTES
        .iter()
        .filter(|r| matches!(scope(r.path), Scope::Tree | Scope::Service))
    {
        router = router.route(route.path, handler(route, kind, mutable));
    }
    router
        .fallback(service::no_route)
        .method_not_allowed_fallback(service::method_not_allowed)
        .layer(middleware::from_fn_with_state(state.clone(), read_only))
        .with_state(state)
}

/// The router of [`ROUTES`] for one database, served as the tree
/// `default` (see `forest.rs`).
pub(crate) fn router(state: AppState) -> Router {
    crate::forest::router(Arc::new(crate::forest::Trees::of_database(state)))
}

/// The router of a server of several trees, its fallback set (a
/// family's members are answered there: `/v1/trees/NAME/K/...`), inside
/// the refusal of a method a path does not take, the read-only guard and
/// the middleware.
pub(crate) fn finish<S>(router: Router<S>, front: AppState) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    let router = router
        .method_not_allowed_fallback(service::method_not_allowed)
        .layer(middleware::from_fn_with_state(front.clone(), read_only));
    let shared = front.shared();
    observed(
        router,
        shared.config.cors.clone(),
        Arc::clone(&shared.metrics),
    )
}

/// `router` inside the middleware: the CORS policy, then (outermost, so
/// preflights and refusals count too) the request id, span and latency
/// metric.
fn observed<S>(router: Router<S>, cors: CorsPolicy, metrics: Arc<Metrics>) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    router
        .layer(middleware::from_fn_with_state(
            Arc::new(cors),
            crate::cors::cors,
        ))
        .layer(middleware::from_fn_with_state(
            Observer {
                metrics,
                ids: Arc::new(RequestIds {
                    next: AtomicU64::new(0),
                    prefix: rand::random(),
                }),
            },
            observe,
        ))
}

/// What the observing middleware keeps: the metrics it records latencies
/// in and the ids it gives requests.
#[derive(Clone, Debug)]
struct Observer {
    metrics: Arc<Metrics>,
    ids: Arc<RequestIds>,
}

#[derive(Debug)]
struct RequestIds {
    next: AtomicU64,
    prefix: u32,
}

impl RequestIds {
    /// A request id unique within this process (and, through the random
    /// prefix, across restarts in practice).
    fn next(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        format!("{:08x}-{n}", self.prefix)
    }
}

/// Refuses every write with 403 on a read-only server (`--read-only`),
/// and on one listening beyond loopback without a write token, before the
/// handler runs: nothing about the database changes. (`POST /v1/lookup`
/// and `POST /v1/witness/insert` are reads with a body, not writes.)
async fn read_only(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let config = &state.shared().config;
    let path = request.uri().path();
    // The route's tail for the tree it names: `/v1/TAIL` or
    // `/v1/trees/{name}/TAIL`.
    let tail = match path.strip_prefix("/v1/trees/") {
        Some(named) => named.split_once('/').map(|(_, tail)| tail),
        None => path.strip_prefix("/v1/"),
    };
    let read = matches!(tail, Some("lookup" | "witness/insert"));
    if request.method() == Method::POST && !read {
        let refusal = if config.read_only {
            Some("this server is read-only (--read-only): send writes to the primary")
        } else if crate::auth::open_writes_refused(config) {
            Some(
                "this server listens beyond loopback without a write token, so it refuses writes: start it with --token-file (or --allow-open-writes)",
            )
        } else {
            None
        };
        if let Some(message) = refusal {
            return axum::response::IntoResponse::into_response(ApiError::new(
                axum::http::StatusCode::FORBIDDEN,
                message,
            ));
        }
    }
    next.run(request).await
}

/// The `x-request-id` header: taken from the request when it is a short
/// token, else made up; returned on the response and put on the span.
const REQUEST_ID: &str = "x-request-id";

fn incoming_request_id(request: &Request) -> Option<String> {
    let value = request.headers().get(REQUEST_ID)?.to_str().ok()?;
    let valid = (1..=64).contains(&value.len())
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b));
    valid.then(|| value.to_owned())
}

fn static_method(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::PATCH => "PATCH",
        _ => "OTHER",
    }
}

/// Gives the request an id and a span, and records its latency by method,
/// route template and status. Logs every request at debug, and server
/// errors at error with their message. Headers are never logged: the
/// token travels in one.
async fn observe(State(state): State<Observer>, request: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = static_method(request.method());
    // axum answers HEAD with the GET handler.
    let routed_as = if method == "HEAD" { "GET" } else { method };
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .and_then(|matched| {
            ROUTES
                .iter()
                .find(|r| r.path == matched.as_str() && r.method == routed_as)
        })
        .map_or("unmatched", |r| r.path);
    let id = incoming_request_id(&request).unwrap_or_else(|| state.ids.next());
    // A debug span: at the default level it costs nothing per request.
    let span = tracing::debug_span!(
        "request",
        id = %id,
        method,
        route,
        path = %request.uri().path(),
    );
    let mut response = next.run(request).instrument(span.clone()).await;
    let elapsed = start.elapsed();
    let status = response.status();
    state
        .metrics
        .observe_request((method, route, status.as_u16()), elapsed);
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(REQUEST_ID, value);
    }
    let micros = elapsed.as_micros() as u64;
    match response.extensions().get::<ServerFailure>() {
        Some(ServerFailure(error)) => tracing::error!(
            id = %id,
            method,
            route,
            status = status.as_u16(),
            micros,
            error = %error,
            "request failed"
        ),
        None => span.in_scope(|| tracing::debug!(status = status.as_u16(), micros, "request")),
    }
    response
}
