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
//! - `POST /v1/rollback` (`{"to_size": S}`) and `POST /v1/finalize`
//!   (`{"size": S}`) as on a lean database, in the indexed tree's sizes
//!   (the guard is leaf 0, so the guard itself is always final). A
//!   rollback waits for the inserts in flight and holds new ones off until
//!   it is durable, so no insert is answered with a head it removed.
//! - The lean tree's history routes (consistency, heads, roots by value,
//!   the leaf mirror, and block targets of rollback and finalize) answer
//!   404 naming the kind: an indexed tree's leaves change below its right
//!   edge, so it has no older heads to prove against.
//! - The lean server's middleware ([`observed`]): CORS, request ids and
//!   the request metrics.
//!
//! Durability waits run on tokio's blocking pool (one thread per waiting
//! request, each on its token).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

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

use crate::api::{
    FinalizeJson, FinalizedJson, RollbackJson, RolledBackJson, Target, check_size, durable_within,
    json, method_not_allowed, no_route, openapi, target, with_type,
};
use crate::config::ServerConfig;
use crate::error::{ApiError, DuplicateJson, ServerError};
use crate::metrics::Metrics;
use crate::routes::{ROUTES, Route, observed};
use crate::{auth, body};
use cairn_core::hex::to_hex as hex;

/// What the indexed handlers share.
#[derive(Debug)]
struct Shared {
    db: Arc<IndexedDb>,
    config: ServerConfig,
    /// The first storage fault an insert met.
    failure: Mutex<Option<String>>,
    metrics: Arc<Metrics>,
    /// Held shared by an insert from its check to its answer, exclusively
    /// by a rollback: a rollback never removes an insert in flight, and an
    /// insert's answer never names a head a rollback removed. An async
    /// lock: an insert holds it while it waits for durability on its
    /// token's async wait, without a thread.
    inserts: tokio::sync::RwLock<()>,
    /// Serialises rollbacks and finalizations (each checks the sizes, then
    /// acts on them).
    writes: Mutex<()>,
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
        ("POST", "/v1/rollback") => post(rollback),
        ("POST", "/v1/finalize") => post(finalize),
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
    let router = router
        .fallback(no_route)
        .method_not_allowed_fallback(method_not_allowed);
    let shared = &state.0;
    observed(
        router,
        shared.config.cors.clone(),
        Arc::clone(&shared.metrics),
    )
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
    let metrics = Arc::new(Metrics::default());
    metrics
        .connections
        .configure(&config)
        .map_err(ServerError::Usage)?;
    let limits = crate::listener::Limits::of(&config);
    // Every checkpoint of the log written while serving, the store's
    // automatic ones included.
    let observed_checkpoints = Arc::clone(&metrics);
    db.set_checkpoint_observer(Box::new(move |_, elapsed| {
        observed_checkpoints.observe_checkpoint(elapsed);
    }));
    let state = IndexedState(Arc::new(Shared {
        db: Arc::clone(&db),
        config,
        failure: Mutex::new(None),
        metrics,
        inserts: tokio::sync::RwLock::new(()),
        writes: Mutex::new(()),
    }));
    crate::server::log_limits(&state.0.metrics.connections);
    let connections = Arc::clone(&state.0.metrics.connections);
    let watched = Arc::downgrade(&db);
    let watch = tokio::spawn(crate::health::watch(move || {
        watched.upgrade().map(|db| db.health())
    }));
    ready(local_addr);
    let served =
        crate::listener::serve(listener, router(state), limits, connections, shutdown).await;
    watch.abort();
    // Awaited: once it is gone, nothing of it holds the database.
    let _ = watch.await;
    served.map_err(|source| ServerError::Io {
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
    let runtime = crate::server::runtime()?;
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
        "this database is indexed (sorted linked-list leaves): it proves against its current head only and keeps no tagged heads, so this route does not apply; see /v1/absence/{value}, /v1/proofs/{index}, /v1/leaves/{value}, /v1/root, and /v1/rollback and /v1/finalize by size",
    )
}

/// A refused or failed insert as an answer, counted.
fn insert_refused(shared: &Shared, error: DbError) -> ApiError {
    let metrics = &shared.metrics;
    match &error {
        DbError::Duplicates { duplicates, .. } => {
            metrics.duplicate_batches.fetch_add(1, Ordering::Relaxed);
            metrics
                .duplicate_values
                .fetch_add(duplicates.len() as u64, Ordering::Relaxed);
        }
        DbError::Indexed(IndexedError::Tree(cairn_core::TreeError::CapacityExceeded {
            ..
        })) => {
            metrics.append_failures.fetch_add(1, Ordering::Relaxed);
        }
        DbError::Indexed(_) => {}
        _ => {
            metrics.append_failures.fetch_add(1, Ordering::Relaxed);
        }
    }
    refused(shared, error)
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
            // Only what stopped the store's acknowledgements stops the
            // server's (a failed finalization or rollback changed nothing).
            let stopped = shared.db.health().failure.is_some();
            let mut failure = shared.failure.lock();
            if failure.is_none() && stopped {
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
    shared
        .metrics
        .body_bytes
        .fetch_add(bytes.len() as u64, Ordering::Relaxed);
    let hash = shared.db.tree_config().hash;
    let batch = body::batch(encoding, &bytes, shared.config.max_batch_leaves, None, hash)?;
    if batch.block.is_some() {
        return Err(ApiError::bad_request(
            "an indexed database records no block-tagged heads: block does not apply",
        ));
    }
    let timeout = shared.config.durability_timeout;
    let _no_rollback = shared.inserts.read().await;
    let start = Instant::now();
    // The insert itself checks and sorts the batch into the tree's pending
    // values: CPU, on the blocking pool. The wait that follows is async.
    let task = state.clone();
    let (inserted, ticket) = tokio::task::spawn_blocking(move || {
        let db = &task.0.db;
        if witness {
            db.insert_witnessed(&batch.leaves)
                .map(|ticket| (ticket.inserted.clone(), Some(ticket)))
        } else {
            db.insert_batch(&batch.leaves)
                .map(|inserted| (inserted, None))
        }
    })
    .await
    .map_err(|e| ApiError::internal(format!("the insert task failed: {e}")))?
    .map_err(|e| insert_refused(shared, e))?;
    let inserted_at = Instant::now();
    let metrics = &shared.metrics;
    metrics.append_seconds.observe(inserted_at - start);
    let end = inserted.first + inserted.count;
    durable_within(&inserted.token, timeout, end, || shared.db.durable_size())
        .await
        .map_err(|e| insert_refused(shared, DbError::Store(e)))?;
    let witness = match ticket {
        // Durable already: this applies it to the tree (CPU) and reads
        // the witness, so it goes to the blocking pool too.
        Some(ticket) => {
            let task = state.clone();
            let witness = tokio::task::spawn_blocking(move || task.0.db.witness(&ticket, timeout))
                .await
                .map_err(|e| ApiError::internal(format!("the witness task failed: {e}")))?
                .map_err(|e| insert_refused(shared, e))?;
            Some(witness)
        }
        None => None,
    };
    metrics.durable_wait_seconds.observe(inserted_at.elapsed());
    let head = shared.db.head();
    metrics.appends.fetch_add(1, Ordering::Relaxed);
    metrics.leaves.fetch_add(inserted.count, Ordering::Relaxed);
    let answer = InsertedJson {
        first_index: inserted.first,
        count: inserted.count,
        size: head.size,
        root: hex(&head.root.unwrap_or_default()),
        witness: witness.map(|w| {
            serde_json::from_str(&w.to_json_compact())
                .unwrap_or_else(|e| unreachable!("the witness's own JSON: {e}"))
        }),
    };
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
    shared
        .metrics
        .absence_proofs
        .fetch_add(1, Ordering::Relaxed);
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

async fn health(State(state): State<IndexedState>) -> Response {
    let shared = &state.0;
    crate::health::answer(
        shared.failure.lock().clone(),
        &shared.db.health(),
        &shared.metrics.connections,
    )
}

async fn metrics(State(state): State<IndexedState>) -> Response {
    let shared = &state.0;
    let text = shared.metrics.render_indexed(&shared.db);
    with_type(
        StatusCode::OK,
        text.into(),
        "text/plain; version=0.0.4; charset=utf-8",
    )
}

/// The answer to a block target: an indexed database tags no heads.
fn no_blocks(block: u64) -> ApiError {
    ApiError::not_found(format!(
        "no tagged head at or below block {block}: an indexed database records no block-tagged heads; give a size"
    ))
}

/// The refusal of a rollback to `size` below the `finalized` size (409,
/// naming it, as the lean server answers).
fn below_finalized(size: u64, finalized: u64) -> ApiError {
    let mut answer = ApiError::new(
        StatusCode::CONFLICT,
        format!(
            "cannot roll back to size {size}: the first {finalized} leaves are final (the guard and {} values)",
            finalized - 1
        ),
    );
    answer.finalized = Some(finalized);
    answer
}

/// A refused or failed rollback or finalization of the database.
fn write_refused(shared: &Shared, size: u64, error: DbError) -> ApiError {
    match error.kind() {
        // Finalized meanwhile by a checkpoint (without explicit finality):
        // the log counts values, the tree the guard too.
        cairn_db::ErrorKind::BelowFinalized { finalized } => below_finalized(size, finalized + 1),
        _ if error.is_storage_fault() => refused(shared, error),
        _ => ApiError::from_write(error),
    }
}

async fn rollback(
    State(state): State<IndexedState>,
    headers: HeaderMap,
    request_body: Body,
) -> Result<Response, ApiError> {
    auth::check_write(state.0.config.token.as_deref(), &headers)?;
    let target = target(
        request_body,
        |b: RollbackJson| (b.to_size, b.to_block),
        "to_size",
        "to_block",
    )
    .await?;
    let size = match target {
        Target::Size(size) => size,
        Target::Block(block) => return Err(no_blocks(block)),
    };
    // No insert in flight from here on: none is removed unanswered, and
    // the next one is answered with the rolled back head.
    let _inserts = state.0.inserts.write().await;
    let task = state.clone();
    let (head, finalized) = tokio::task::spawn_blocking(move || {
        let shared = &task.0;
        let _writes = shared.writes.lock();
        let start = Instant::now();
        let db = &shared.db;
        let durable = db.head().size;
        check_size(size, durable, "to_size")?;
        let finalized = db.finalized_size();
        if size < finalized {
            return Err(below_finalized(size, finalized));
        }
        let head = db
            .truncate(size)
            .map_err(|e| write_refused(shared, size, e))?;
        let metrics = &shared.metrics;
        metrics.rollbacks.fetch_add(1, Ordering::Relaxed);
        metrics
            .rolled_back_leaves
            .fetch_add(durable - head.size, Ordering::Relaxed);
        metrics.rollback_seconds.observe(start.elapsed());
        tracing::info!(to = head.size, from = durable, "rolled back");
        Ok((head, db.finalized_size()))
    })
    .await
    .map_err(|e| ApiError::internal(format!("the rollback task failed: {e}")))??;
    Ok(json(
        StatusCode::OK,
        &RolledBackJson {
            size: head.size,
            root: head.root.as_ref().map(hex),
            block: None,
            finalized,
        },
    ))
}

async fn finalize(
    State(state): State<IndexedState>,
    headers: HeaderMap,
    request_body: Body,
) -> Result<Response, ApiError> {
    auth::check_write(state.0.config.token.as_deref(), &headers)?;
    let target = target(
        request_body,
        |b: FinalizeJson| (b.size, b.block),
        "size",
        "block",
    )
    .await?;
    let size = match target {
        Target::Size(size) => size,
        Target::Block(block) => return Err(no_blocks(block)),
    };
    let task = state.clone();
    let finalized = tokio::task::spawn_blocking(move || {
        let shared = &task.0;
        let _writes = shared.writes.lock();
        let db = &shared.db;
        check_size(size, db.head().size, "size")?;
        db.finalize(size)
            .map_err(|e| write_refused(shared, size, e))
    })
    .await
    .map_err(|e| ApiError::internal(format!("the finalize task failed: {e}")))??;
    state
        .0
        .metrics
        .finalizations
        .fetch_add(1, Ordering::Relaxed);
    tracing::info!(finalized, "finalized");
    Ok(json(StatusCode::OK, &FinalizedJson { finalized }))
}
