//! The handlers. An append runs on the blocking pool, then awaits the
//! committer (`commit.rs`) for durability; reads are answered at the
//! durable size from a cached snapshot, so a crash can never take back what
//! a response said.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use cairn_core::{Hash, shape};
use cairn_db::{Appended, Db, DbError, DbSnapshot};
use parking_lot::Mutex;
use serde::Serialize;

use crate::commit::Committer;
use crate::config::ServerConfig;
use crate::error::ApiError;
use crate::metrics::Metrics;
use crate::routes::OPENAPI_JSON;
use crate::{auth, body, json as proof_text};
use cairn_core::hex::to_hex as hex;

/// What every handler shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub db: Arc<Db>,
    pub config: ServerConfig,
    pub metrics: Arc<Metrics>,
    /// The first storage fault an append met: the database acknowledges
    /// nothing after it, so the server reports itself unhealthy.
    pub failure: Mutex<Option<String>>,
    pub committer: Committer,
    /// The newest snapshot taken (see `snapshot_covering`).
    latest: Mutex<Option<DbSnapshot>>,
    request_ids: AtomicU64,
    request_id_prefix: u32,
}

/// The handlers' state.
#[derive(Clone, Debug)]
pub(crate) struct AppState(Arc<Shared>);

impl AppState {
    pub fn new(db: Arc<Db>, config: ServerConfig) -> AppState {
        let metrics = Arc::new(Metrics::default());
        // Every checkpoint written while serving, the store's automatic
        // ones included (not only the one at shutdown).
        let observed = Arc::clone(&metrics);
        db.set_checkpoint_observer(Box::new(move |_, elapsed| {
            observed.observe_checkpoint(elapsed);
        }));
        AppState(Arc::new(Shared {
            committer: Committer::start(db.durable_size()),
            db,
            config,
            metrics,
            failure: Mutex::new(None),
            latest: Mutex::new(None),
            request_ids: AtomicU64::new(0),
            request_id_prefix: rand::random(),
        }))
    }

    pub fn shared(&self) -> &Shared {
        &self.0
    }

    /// A request id unique within this process (and, through the random
    /// prefix, across restarts in practice).
    pub fn next_request_id(&self) -> String {
        let n = self.0.request_ids.fetch_add(1, Ordering::Relaxed);
        format!("{:08x}-{n}", self.0.request_id_prefix)
    }
}

impl Shared {
    /// The durable size and a snapshot that holds at least that many
    /// leaves (answers are views of it at the durable size).
    fn durable(&self) -> (DbSnapshot, u64) {
        let durable = self.db.durable_size();
        let snapshot = self.snapshot_covering(durable);
        let size = durable.min(snapshot.size());
        (snapshot, size)
    }

    /// A snapshot of at least `size` leaves (which the tree must hold):
    /// the cached one if it does, else a new one, cached. Taking a snapshot
    /// while appends arrive rehashes the right edge under the tree lock;
    /// the cache makes that once per group commit instead of once per
    /// request, and a view at an earlier size costs a few hashes.
    fn snapshot_covering(&self, size: u64) -> DbSnapshot {
        if let Some(cached) = self.latest.lock().as_ref()
            && cached.size() >= size
        {
            return cached.clone();
        }
        let fresh = self.db.snapshot();
        let mut latest = self.latest.lock();
        if latest
            .as_ref()
            .is_none_or(|cached| cached.size() < fresh.size())
        {
            *latest = Some(fresh.clone());
        }
        fresh
    }

    fn record_failure(&self, error: &DbError) {
        if error.is_storage_fault() {
            let mut failure = self.failure.lock();
            if failure.is_none() {
                tracing::error!(error = %error, "the database failed: no more appends will be acknowledged");
                *failure = Some(error.to_string());
            }
        }
    }
}

fn json<T: Serialize>(status: StatusCode, value: &T) -> Response {
    let body =
        serde_json::to_vec(value).unwrap_or_else(|e| unreachable!("serialising plain data: {e}"));
    with_type(status, body.into(), "application/json")
}

fn with_type(status: StatusCode, body: Body, content_type: &'static str) -> Response {
    let mut response = (status, body).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

// -- POST /v1/leaves ----------------------------------------------------------

#[derive(Serialize)]
struct AppendedJson {
    first_index: u64,
    count: u64,
    size: u64,
    root: String,
}

pub(crate) async fn append(
    State(state): State<AppState>,
    headers: HeaderMap,
    request_body: Body,
) -> Result<Response, ApiError> {
    let shared = state.shared();
    auth::check_write(shared.config.token.as_deref(), &headers)?;
    let encoding = body::encoding(&headers)?;
    let limit = shared.config.max_body_bytes;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(declared) = declared
        && declared > limit as u64
    {
        return Err(too_large_body(format!("{declared} bytes"), limit));
    }
    let bytes = read_body(request_body, limit).await?;
    shared
        .metrics
        .body_bytes
        .fetch_add(bytes.len() as u64, Ordering::Relaxed);
    let hash = shared.db.config().tree().hash;
    let leaves = body::leaves(encoding, &bytes, shared.config.max_batch_leaves, hash)?;
    drop(bytes);
    let task_state = state.clone();
    let (appended, appended_at) =
        tokio::task::spawn_blocking(move || append_leaves(task_state.shared(), &leaves))
            .await
            .map_err(|e| ApiError::internal(format!("the append task failed: {e}")))??;
    let end = appended.first + appended.count;
    let metrics = &shared.metrics;
    let durable = shared
        .committer
        .durable(appended.token, shared.config.durability_timeout)
        .await;
    if let Err(error) = durable {
        metrics.append_failures.fetch_add(1, Ordering::Relaxed);
        let error = DbError::Store(error);
        shared.record_failure(&error);
        let mut refused = ApiError::from_append(error);
        if refused.status == StatusCode::SERVICE_UNAVAILABLE {
            refused.message = format!(
                "leaves {}..{end} were appended but not acknowledged as durable: {}",
                appended.first, refused.message
            );
        }
        return Err(refused);
    }
    metrics.durable_wait_seconds.observe(appended_at.elapsed());
    let root = shared
        .snapshot_covering(end)
        .view(end)
        .map_err(|e| ApiError::internal(format!("the root at size {end}: {e}")))?
        .root()
        .ok_or_else(|| ApiError::internal(format!("no root at size {end}")))?;
    metrics.appends.fetch_add(1, Ordering::Relaxed);
    metrics.leaves.fetch_add(appended.count, Ordering::Relaxed);
    Ok(json(
        StatusCode::OK,
        &AppendedJson {
            first_index: appended.first,
            count: appended.count,
            size: end,
            root: hex(&root),
        },
    ))
}

fn too_large_body(what: String, limit: usize) -> ApiError {
    ApiError::too_large(format!(
        "a request body of {what} exceeds this server's limit of {limit} bytes"
    ))
}

async fn read_body(request_body: Body, limit: usize) -> Result<Bytes, ApiError> {
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

/// Appends `leaves` (on the blocking pool: the append takes the writer
/// lock and inserts into the set).
fn append_leaves(shared: &Shared, leaves: &[Hash]) -> Result<(Appended, Instant), ApiError> {
    let metrics = &shared.metrics;
    let start = Instant::now();
    let appended = shared.db.append_batch(leaves).map_err(|error| {
        if let DbError::Duplicates { duplicates, .. } = &error {
            metrics.duplicate_batches.fetch_add(1, Ordering::Relaxed);
            metrics
                .duplicate_values
                .fetch_add(duplicates.len() as u64, Ordering::Relaxed);
        } else {
            metrics.append_failures.fetch_add(1, Ordering::Relaxed);
            shared.record_failure(&error);
        }
        ApiError::from_append(error)
    })?;
    let appended_at = Instant::now();
    metrics.append_seconds.observe(appended_at - start);
    Ok((appended, appended_at))
}

// -- GET /v1/root ---------------------------------------------------------------

#[derive(Serialize)]
struct RootJson {
    size: u64,
    root: Option<String>,
    depth: u32,
    arity: u64,
    hash: &'static str,
}

pub(crate) async fn root(State(state): State<AppState>) -> Result<Response, ApiError> {
    let shared = state.shared();
    let (snapshot, size) = shared.durable();
    let tree = snapshot.config();
    let view = snapshot
        .view(size)
        .map_err(|e| ApiError::internal(format!("the tree at size {size}: {e}")))?;
    Ok(json(
        StatusCode::OK,
        &RootJson {
            size,
            root: view.root().as_ref().map(hex),
            depth: shape::depth(size, tree.arity),
            arity: tree.arity.as_u64(),
            hash: tree.hash.name(),
        },
    ))
}

// -- GET /v1/leaves/{value} -----------------------------------------------------

#[derive(Serialize)]
struct IndexJson {
    index: u64,
}

pub(crate) async fn leaf_index(
    State(state): State<AppState>,
    value: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let shared = state.shared();
    let Path(text) = value.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let hash = shared.db.config().tree().hash;
    let value =
        body::parse_leaf(&text, hash).map_err(|e| ApiError::bad_request(format!("leaf: {e}")))?;
    let found = shared.db.index_of(&value).map_err(|error| match error {
        DbError::NoSet => ApiError::new(StatusCode::NOT_IMPLEMENTED, error.to_string()),
        other => ApiError::internal(other.to_string()),
    })?;
    // Read after the lookup: a leaf found below it is durable.
    let durable = shared.db.durable_size();
    match found {
        Some(index) if index < durable => Ok(json(StatusCode::OK, &IndexJson { index })),
        _ => Err(ApiError::not_found(format!(
            "leaf {} is not in the tree (durable size {durable})",
            hex(&value)
        ))),
    }
}

// -- GET /v1/proofs/{index}?size=S ----------------------------------------------

/// The query's parameters, each at most once and each one of `allowed`,
/// as non-negative integers.
fn parameters(
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
    allowed: &[&'static str],
) -> Result<Vec<(&'static str, u64)>, ApiError> {
    let Query(pairs) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let mut out: Vec<(&'static str, u64)> = Vec::with_capacity(pairs.len());
    for (name, text) in pairs {
        let Some(&known) = allowed.iter().find(|&&a| a == name) else {
            return Err(ApiError::bad_request(format!(
                "unknown query parameter {name:?}: this route takes {}",
                allowed.join(", ")
            )));
        };
        if out.iter().any(|&(seen, _)| seen == known) {
            return Err(ApiError::bad_request(format!(
                "query parameter {known} is given more than once"
            )));
        }
        out.push((known, parse_u64(known, &text)?));
    }
    Ok(out)
}

fn parse_u64(what: &str, text: &str) -> Result<u64, ApiError> {
    text.parse::<u64>().map_err(|_| {
        ApiError::bad_request(format!("{what} {text:?} is not a non-negative integer"))
    })
}

fn get(parameters: &[(&'static str, u64)], name: &str) -> Option<u64> {
    parameters
        .iter()
        .find(|&&(known, _)| known == name)
        .map(|&(_, value)| value)
}

fn check_size(size: u64, durable: u64, what: &str) -> Result<(), ApiError> {
    if size > durable {
        return Err(ApiError::not_found(format!(
            "{what} {size} is beyond the tree's durable size {durable}"
        )));
    }
    Ok(())
}

/// What `?format=` asks a membership proof to be printed as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ProofFormat {
    Json,
    Zkkit,
    Circom,
    ZkkitCircom,
}

const PROOF_FORMATS: &str = "json, zkkit, circom or zkkit-circom";

/// Takes `format` out of the query's pairs (at most once).
fn take_format(pairs: &mut Vec<(String, String)>) -> Result<ProofFormat, ApiError> {
    let mut found = None;
    let mut refused = None;
    pairs.retain(|(name, value)| {
        if name != "format" {
            return true;
        }
        if found.is_some() {
            refused = Some(ApiError::bad_request(
                "query parameter format is given more than once",
            ));
        }
        found = Some(match value.as_str() {
            "json" => ProofFormat::Json,
            "zkkit" => ProofFormat::Zkkit,
            "circom" => ProofFormat::Circom,
            "zkkit-circom" => ProofFormat::ZkkitCircom,
            other => {
                refused = Some(ApiError::bad_request(format!(
                    "format {other:?} is not a proof format: want {PROOF_FORMATS}"
                )));
                ProofFormat::Json
            }
        });
        false
    });
    match refused {
        Some(error) => Err(error),
        None => Ok(found.unwrap_or(ProofFormat::Json)),
    }
}

pub(crate) async fn proof(
    State(state): State<AppState>,
    index: Result<Path<String>, PathRejection>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let shared = state.shared();
    let Path(index) = index.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let index = parse_u64("leaf index", &index)?;
    let Query(mut pairs) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let format = take_format(&mut pairs)?;
    let parameters = parameters(Ok(Query(pairs)), &["size", "format", "circuit_depth"])?;
    let circuit_depth = match get(&parameters, "circuit_depth") {
        None => None,
        Some(_) if !matches!(format, ProofFormat::Circom | ProofFormat::ZkkitCircom) => {
            return Err(ApiError::bad_request(
                "circuit_depth is for format=circom or format=zkkit-circom",
            ));
        }
        Some(depth) => Some(u32::try_from(depth).unwrap_or(u32::MAX)),
    };
    let (snapshot, durable) = shared.durable();
    let explicit = get(&parameters, "size");
    let size = explicit.unwrap_or(durable);
    check_size(size, durable, "size")?;
    let proof = snapshot
        .prove_at(index, size)
        .map_err(ApiError::from_proof)?;
    let text = match format {
        ProofFormat::Json => proof_text::membership(&proof),
        other => {
            let rendered = match other {
                ProofFormat::Zkkit => proof.to_zkkit_json(),
                ProofFormat::Circom => proof.to_circom_json(circuit_depth),
                _ => proof.to_zkkit_circom_json(circuit_depth),
            };
            rendered
                .map_err(|e| {
                    ApiError::bad_request(format!("the proof of leaf {index} at size {size}: {e}"))
                })?
                .into_bytes()
        }
    };
    Ok(cached(&headers, text, shared.is_final(explicit)))
}

impl Shared {
    /// Whether an answer about the tree of `size` leaves, asked for
    /// explicitly, can never change: no rollback can reach below the
    /// finalized size. An answer at the current size follows the tree.
    fn is_final(&self, explicit: Option<u64>) -> bool {
        explicit.is_some_and(|size| size <= self.db.finalized_size())
    }
}

/// A proof answer with a validator: an `ETag` (a digest of the body), `304`
/// when the request's `If-None-Match` holds it, and `Cache-Control:
/// immutable` when the answer can never change (`no-cache` otherwise, so a
/// cache revalidates).
fn cached(request: &HeaderMap, mut text: Vec<u8>, immutable: bool) -> Response {
    text.push(b'\n');
    let digest = blake3::hash(&text);
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
    let mut response = if matches {
        (StatusCode::NOT_MODIFIED, Body::empty()).into_response()
    } else {
        with_type(StatusCode::OK, text.into(), "application/json")
    };
    let headers = response.headers_mut();
    if let Ok(tag) = HeaderValue::from_str(&tag) {
        headers.insert(header::ETAG, tag);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    response
}

// -- GET /v1/consistency?from=S1&to=S2 -----------------------------------------

pub(crate) async fn consistency(
    State(state): State<AppState>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let shared = state.shared();
    let parameters = parameters(query, &["from", "to"])?;
    let from = get(&parameters, "from").ok_or_else(|| {
        ApiError::bad_request("missing query parameter from (the older size): ?from=S1[&to=S2]")
    })?;
    let (snapshot, durable) = shared.durable();
    let explicit = get(&parameters, "to");
    let to = explicit.unwrap_or(durable);
    if from > to {
        return Err(ApiError::bad_request(format!(
            "from {from} is larger than to {to}: a consistency proof goes from an older size to a newer one"
        )));
    }
    check_size(to, durable, "to")?;
    let proof = snapshot
        .prove_consistency(from, to)
        .map_err(ApiError::from_proof)?;
    Ok(cached(
        &headers,
        proof_text::consistency(&proof),
        shared.is_final(explicit),
    ))
}

// -- GET /healthz, /metrics, /openapi.json ------------------------------------

#[derive(Serialize)]
struct HealthJson<'a> {
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
}

pub(crate) async fn health(State(state): State<AppState>) -> Response {
    match state.shared().failure.lock().as_deref() {
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
