//! Serving an indexed database (`cairn init --kind indexed`): the same
//! route table ([`ROUTES`]) with the indexed tree's answers.
//!
//! - `POST /v1/leaves` inserts values (all or nothing, duplicates and the
//!   guard value 0 refused) and answers once they are durable, with the
//!   durable head; `?witness=1` adds the insertion witness of the batch
//!   (docs/spec.md, "Indexed trees").
//! - `GET /v1/absence/{value}` is the absence proof of a value,
//!   `GET /v1/proofs/{index}` the membership proof of a leaf, `GET
//!   /v1/leaves/{value}` a value's leaf index, `GET /v1/root` the head.
//!   Every read is at the durable head (the database applies values to its
//!   tree only once durable), so nothing a response said can be lost.
//! - The lean tree's history routes (consistency, heads, roots by value,
//!   the leaf mirror, rollback, finalize) answer 404 naming the kind: an
//!   indexed tree's leaves change below its right edge, so it has no
//!   older heads to prove against.
//!
//! Durability waits run on tokio's blocking pool (one thread per waiting
//! request, each on its token).

use std::future::{Future, IntoFuture as _};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use axum::body::Body;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use axum::routing::{MethodRouter, get, post};
use cairn_core::indexed::IndexedError;
use cairn_core::{Hash, shape};
use cairn_db::{DbError, IndexedDb};
use parking_lot::Mutex;
use serde::Serialize;
use tokio::net::TcpListener;

use crate::api::{json, method_not_allowed, no_route, openapi, with_type};
use crate::config::ServerConfig;
use crate::error::{ApiError, DuplicateJson, ServerError};
use crate::routes::{ROUTES, Route};
use crate::{auth, body};
use cairn_core::hex::to_hex as hex;

/// What the indexed handlers share.
#[derive(Debug)]
struct Shared {
    db: Arc<IndexedDb>,
    config: ServerConfig,
    /// The first storage fault an insert met.
    failure: Mutex<Option<String>>,
    inserts: AtomicU64,
    values: AtomicU64,
    absence_proofs: AtomicU64,
}

#[derive(Clone, Debug)]
struct IndexedState(Arc<Shared>);

/// The handler of a table entry for an indexed database.
fn handler(route: &Route) -> MethodRouter<IndexedState> {
    match (route.method, route.path) {
        ("POST", "/v1/leaves") => post(insert),
        ("GET", "/v1/root") => get(root),
        ("GET", "/v1/leaves/{value}") => get(leaf_index),
        ("GET", "/v1/proofs/{index}") => get(proof),
        ("GET", "/v1/absence/{value}") => get(absence),
        ("GET", "/healthz") => get(health),
        ("GET", "/metrics") => get(metrics),
        ("GET", "/openapi.json") => get(openapi),
        ("GET", _) => get(lean_only),
        ("POST", _) => post(lean_only),
        (method, path) => panic!("route {method} {path} is in ROUTES but has no indexed handler"),
    }
}

fn router(state: IndexedState) -> Router {
    let mut router = Router::new();
    for route in ROUTES {
        router = router.route(route.path, handler(route));
    }
    router
        .fallback(no_route)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
}

/// Binds `config.listen` and serves `db` until `shutdown` completes, then
/// flushes (and checkpoints the log if configured). `ready` gets the bound
/// address before the first request.
pub async fn serve_indexed<F>(
    db: Arc<IndexedDb>,
    config: ServerConfig,
    ready: impl FnOnce(SocketAddr),
    shutdown: F,
) -> Result<(), ServerError>
where
    F: Future<Output = ()> + Send + 'static,
{
    let addr = config.listen;
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| ServerError::Bind { addr, source })?;
    let local_addr = listener
        .local_addr()
        .map_err(|source| ServerError::Bind { addr, source })?;
    let tree = db.tree_config();
    tracing::info!(
        addr = %local_addr,
        dir = %db.dir().display(),
        kind = "indexed",
        arity = tree.arity.as_u64(),
        hash = tree.hash.name(),
        size = db.head().size,
        write_token = config.token.is_some(),
        "listening"
    );
    let checkpoint = config.checkpoint_on_shutdown;
    let state = IndexedState(Arc::new(Shared {
        db: Arc::clone(&db),
        config,
        failure: Mutex::new(None),
        inserts: AtomicU64::new(0),
        values: AtomicU64::new(0),
        absence_proofs: AtomicU64::new(0),
    }));
    ready(local_addr);
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .into_future()
        .await
        .map_err(|source| ServerError::Io {
            what: "serving",
            source,
        })?;
    tokio::task::spawn_blocking(move || -> Result<(), ServerError> {
        let head = db.flush()?;
        tracing::info!(size = head.size, "flushed");
        if checkpoint {
            db.checkpoint()?;
        }
        Ok(())
    })
    .await
    .map_err(|e| ServerError::Io {
        what: "the shutdown task",
        source: std::io::Error::other(e.to_string()),
    })?
}

/// Serves the opened indexed database until SIGTERM or SIGINT (see
/// [`crate::run_db`]), then closes it.
pub fn run_indexed(
    db: IndexedDb,
    config: ServerConfig,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), ServerError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("cairn-server")
        .build()
        .map_err(|source| ServerError::Io {
            what: "starting the runtime",
            source,
        })?;
    let db = Arc::new(db);
    let served = runtime.block_on(async {
        let signal = crate::server::shutdown_signal()?;
        serve_indexed(Arc::clone(&db), config, ready, signal).await
    });
    drop(runtime);
    let closed = match Arc::try_unwrap(db) {
        Ok(db) => db.close().map_err(ServerError::from),
        Err(_) => Err(ServerError::StillInUse),
    };
    served?;
    closed?;
    tracing::info!("closed: the directory is released");
    Ok(())
}

async fn lean_only() -> ApiError {
    ApiError::not_found(
        "this database is indexed (sorted linked-list leaves): it proves against its current head only and keeps no tagged heads, so this route does not apply; see /v1/absence/{value}, /v1/proofs/{index}, /v1/leaves/{value} and /v1/root",
    )
}

/// A refusal or failure of the indexed database as an answer.
fn refused(shared: &Shared, error: DbError) -> ApiError {
    match error {
        DbError::Duplicates { ref duplicates, .. } => {
            let mut answer = ApiError::new(StatusCode::CONFLICT, error.to_string());
            answer.duplicates = Some(duplicates.iter().map(DuplicateJson::from).collect());
            answer
        }
        DbError::Indexed(IndexedError::Present { .. }) => {
            ApiError::new(StatusCode::CONFLICT, error.to_string())
        }
        DbError::Indexed(IndexedError::Absent { .. }) => ApiError::not_found(error.to_string()),
        DbError::Indexed(IndexedError::Tree(cairn_core::TreeError::CapacityExceeded {
            ..
        })) => ApiError::new(StatusCode::INSUFFICIENT_STORAGE, error.to_string()),
        DbError::Indexed(IndexedError::Tree(cairn_core::TreeError::IndexOutOfRange { .. })) => {
            ApiError::not_found(error.to_string())
        }
        DbError::Indexed(_) => ApiError::bad_request(error.to_string()),
        error if error.is_storage_fault() => {
            let mut failure = shared.failure.lock();
            if failure.is_none() {
                tracing::error!(error = %error, "the database failed: no more inserts will be acknowledged");
                *failure = Some(error.to_string());
            }
            ApiError::unavailable(error.to_string())
        }
        error if error.kind() == cairn_db::ErrorKind::RolledBack => {
            ApiError::new(StatusCode::CONFLICT, error.to_string())
        }
        other => ApiError::internal(other.to_string()),
    }
}

#[derive(Serialize)]
struct InsertedJson {
    first_index: u64,
    count: u64,
    size: u64,
    root: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    witness: Option<serde_json::Value>,
}

/// Whether `?witness=1` (or `true`) was asked; any other parameter is refused.
fn wants_witness(
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<bool, ApiError> {
    let Query(pairs) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let mut witness = false;
    for (name, value) in pairs {
        match (name.as_str(), value.as_str()) {
            ("witness", "1" | "true") => witness = true,
            ("witness", "0" | "false") => witness = false,
            ("witness", other) => {
                return Err(ApiError::bad_request(format!(
                    "witness={other:?}: want 1 or 0"
                )));
            }
            ("block" | "block_hash", _) => {
                return Err(ApiError::bad_request(
                    "an indexed database records no block-tagged heads: block does not apply",
                ));
            }
            (other, _) => {
                return Err(ApiError::bad_request(format!(
                    "unknown query parameter {other:?}: an insert takes witness=1"
                )));
            }
        }
    }
    Ok(witness)
}

async fn insert(
    State(state): State<IndexedState>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
    headers: HeaderMap,
    request_body: Body,
) -> Result<Response, ApiError> {
    let shared = &state.0;
    auth::check_write(shared.config.token.as_deref(), &headers)?;
    if let Some(failure) = shared.failure.lock().as_deref() {
        return Err(ApiError::unavailable(format!(
            "the database failed earlier and acknowledges nothing more: {failure}"
        )));
    }
    let witness = wants_witness(query)?;
    let encoding = body::encoding(&headers)?;
    let limit = shared.config.max_body_bytes;
    let bytes = axum::body::to_bytes(request_body, limit)
        .await
        .map_err(|_| {
            ApiError::too_large(format!(
                "the body exceeds this server's limit of {limit} bytes"
            ))
        })?;
    let hash = shared.db.tree_config().hash;
    let batch = body::batch(encoding, &bytes, shared.config.max_batch_leaves, None, hash)?;
    if batch.block.is_some() {
        return Err(ApiError::bad_request(
            "an indexed database records no block-tagged heads: block does not apply",
        ));
    }
    let task = state.clone();
    let timeout = shared.config.durability_timeout;
    let answer = tokio::task::spawn_blocking(move || -> Result<InsertedJson, ApiError> {
        let shared = &task.0;
        let db = &shared.db;
        let (inserted, witness) = if witness {
            let ticket = db
                .insert_witnessed(&batch.leaves)
                .map_err(|e| refused(shared, e))?;
            let witness = db
                .witness(&ticket, timeout)
                .map_err(|e| refused(shared, e))?;
            (ticket.inserted, Some(witness))
        } else {
            let inserted = db
                .insert_batch(&batch.leaves)
                .map_err(|e| refused(shared, e))?;
            inserted
                .token
                .wait(timeout)
                .map_err(|e| refused(shared, DbError::Store(e)))?;
            (inserted, None)
        };
        let head = db.head();
        shared.inserts.fetch_add(1, Ordering::Relaxed);
        shared.values.fetch_add(inserted.count, Ordering::Relaxed);
        Ok(InsertedJson {
            first_index: inserted.first,
            count: inserted.count,
            size: head.size,
            root: hex(&head.root.unwrap_or_default()),
            witness: witness.map(|w| {
                serde_json::from_str(&w.to_json_compact())
                    .unwrap_or_else(|e| unreachable!("the witness's own JSON: {e}"))
            }),
        })
    })
    .await
    .map_err(|e| ApiError::internal(format!("the insert task failed: {e}")))??;
    Ok(json(StatusCode::OK, &answer))
}

#[derive(Serialize)]
struct RootJson {
    size: u64,
    root: String,
    depth: u32,
    arity: u64,
    hash: &'static str,
    finalized: u64,
    kind: &'static str,
}

async fn root(State(state): State<IndexedState>) -> Response {
    let db = &state.0.db;
    let head = db.head();
    let tree = db.tree_config();
    json(
        StatusCode::OK,
        &RootJson {
            size: head.size,
            root: hex(&head.root.unwrap_or_default()),
            depth: shape::depth(head.size, tree.arity),
            arity: tree.arity.as_u64(),
            hash: tree.hash.name(),
            finalized: db.finalized_size().min(head.size),
            kind: "indexed",
        },
    )
}

fn value_of(shared: &Shared, value: Result<Path<String>, PathRejection>) -> Result<Hash, ApiError> {
    let Path(text) = value.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let hash = shared.db.tree_config().hash;
    body::parse_leaf(&text, hash).map_err(|e| ApiError::bad_request(format!("value: {e}")))
}

#[derive(Serialize)]
struct IndexJson {
    index: u64,
}

async fn leaf_index(
    State(state): State<IndexedState>,
    value: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let shared = &state.0;
    let value = value_of(shared, value)?;
    match shared.db.index_of(&value).filter(|&i| i > 0) {
        Some(index) => Ok(json(StatusCode::OK, &IndexJson { index })),
        None => Err(ApiError::not_found(format!(
            "value {} is not in the tree (durable size {}); /v1/absence/{} proves it",
            hex(&value),
            shared.db.head().size,
            hex(&value)
        ))),
    }
}

/// `format=json` (the default) or `format=binary`; nothing else.
fn binary_format(
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<bool, ApiError> {
    let Query(pairs) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let mut binary = false;
    for (name, value) in pairs {
        match (name.as_str(), value.as_str()) {
            ("format", "json") => binary = false,
            ("format", "binary") => binary = true,
            ("format", other) => {
                return Err(ApiError::bad_request(format!(
                    "format {other:?}: an indexed proof is json or binary"
                )));
            }
            (other, _) => {
                return Err(ApiError::bad_request(format!(
                    "unknown query parameter {other:?}: an indexed database proves at its current head only (format=json|binary)"
                )));
            }
        }
    }
    Ok(binary)
}

fn proof_answer(json_text: String, bytes: Vec<u8>, binary: bool) -> Response {
    let mut response = if binary {
        with_type(StatusCode::OK, bytes.into(), "application/octet-stream")
    } else {
        with_type(StatusCode::OK, json_text.into(), "application/json")
    };
    // Every answer is about the current head, which the next insert changes.
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-cache"),
    );
    response
}

async fn absence(
    State(state): State<IndexedState>,
    value: Result<Path<String>, PathRejection>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<Response, ApiError> {
    let shared = &state.0;
    let value = value_of(shared, value)?;
    let binary = binary_format(query)?;
    let proof = shared
        .db
        .prove_absence(&value)
        .map_err(|e| refused(shared, e))?;
    shared.absence_proofs.fetch_add(1, Ordering::Relaxed);
    Ok(proof_answer(proof.to_json(), proof.to_bytes(), binary))
}

async fn proof(
    State(state): State<IndexedState>,
    index: Result<Path<String>, PathRejection>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<Response, ApiError> {
    let shared = &state.0;
    let Path(index) = index.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let index: u64 = index
        .parse()
        .map_err(|_| ApiError::bad_request(format!("leaf index {index:?} is not a number")))?;
    let binary = binary_format(query)?;
    let proof = shared
        .db
        .prove_index(index)
        .map_err(|e| refused(shared, e))?;
    Ok(proof_answer(proof.to_json(), proof.to_bytes(), binary))
}

#[derive(Serialize)]
struct HealthJson<'a> {
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
}

async fn health(State(state): State<IndexedState>) -> Response {
    match state.0.failure.lock().as_deref() {
        None => json(
            StatusCode::OK,
            &HealthJson {
                status: "ok",
                error: None,
            },
        ),
        Some(failure) => json(
            StatusCode::SERVICE_UNAVAILABLE,
            &HealthJson {
                status: "failing",
                error: Some(failure),
            },
        ),
    }
}

async fn metrics(State(state): State<IndexedState>) -> Response {
    let shared = &state.0;
    let head = shared.db.head();
    let text = format!(
        "# HELP cairn_indexed_size Leaves of the indexed tree (values + the guard), durable.\n# TYPE cairn_indexed_size gauge\ncairn_indexed_size {}\n# HELP cairn_indexed_inserts_total Inserts acknowledged.\n# TYPE cairn_indexed_inserts_total counter\ncairn_indexed_inserts_total {}\n# HELP cairn_indexed_values_total Values acknowledged.\n# TYPE cairn_indexed_values_total counter\ncairn_indexed_values_total {}\n# HELP cairn_indexed_absence_proofs_total Absence proofs served.\n# TYPE cairn_indexed_absence_proofs_total counter\ncairn_indexed_absence_proofs_total {}\n",
        head.size,
        shared.inserts.load(Ordering::Relaxed),
        shared.values.load(Ordering::Relaxed),
        shared.absence_proofs.load(Ordering::Relaxed),
    );
    with_type(
        StatusCode::OK,
        text.into(),
        "text/plain; version=0.0.4; charset=utf-8",
    )
}
