//! A server of several trees: one database of named trees
//! ([`cairn_db::Forest`]), or one tree served as the tree `default`. Each
//! tree has its own state and router (the single-tree routes, `api/`);
//! `/v1/trees/{name}/...` is handed to the tree named, with the prefix
//! taken off, and the routes without a prefix to the default tree
//! ([`Forest::default_tree`]: `default`, or the only tree). The database's
//! own routes are here: `GET /v1/trees`, `POST /v1/blocks` (one block of
//! values for several trees: one journal frame) and `GET /v1/blocks`
//! (every tree's head at each block).
//!
//! Invariant: a write to a tree of a journaled database goes through the
//! database ([`commit`]), never to the tree alone, and every tree shares
//! one rollback lock ([`Locks`]): a rollback by block acts on all of them,
//! so no append or block in flight on any tree is removed unanswered. A
//! block is answered once its journal frame is durable (one `fdatasync`);
//! a tree answers a request only once its own log holds every write the
//! journal made durable before ([`caught_up`]), so a write answered is
//! read back.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use axum::routing::{get, post};
use cairn_core::Hash;
use cairn_core::hex::to_hex as hex;
use cairn_db::{BlockId, BlockTag, Database, DbError, Forest, ForestError, TreeAt};
use parking_lot::RwLock;
use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use crate::config::ServerConfig;
use crate::error::{ApiError, ServerError};
use crate::metrics::Metrics;
use crate::query::{self, RawQuery};
use crate::respond::{json, with_type};
use crate::routes::{self, Scope};
use crate::state::{AppState, Locks, Shared, TreeOf};
use crate::{auth, body};

/// The trees a server serves.
#[derive(Debug)]
pub(crate) struct Trees {
    /// The database of several trees, if the server serves one (else one
    /// [`Database`], served as the tree `default`).
    pub forest: Option<Arc<Forest>>,
    /// Every tree, in the database's order, with its state and router.
    pub trees: Vec<Served>,
    /// Which of them the routes without a prefix answer for.
    pub default: Option<usize>,
    /// The state whose metrics count connections and requests, and whose
    /// configuration the server runs with (the default tree's, else the
    /// first tree's).
    pub front: AppState,
    /// Whether `/metrics` labels each tree's families (a database of
    /// several trees), or is one tree's as before.
    pub labelled: bool,
    /// Trees the database made after the server started (a family's next
    /// member, made by a block that rolled over, or made again after a
    /// rollback took it away): served from the first request that names
    /// them, or the first listing.
    grown: RwLock<Vec<Served>>,
    /// How such a tree is served (what the first ones were served with);
    /// `None` for a server whose trees are fixed when it starts.
    maker: Option<Maker>,
}

/// What a tree's state is made of, in a server of several trees.
#[derive(Debug)]
struct Maker {
    config: ServerConfig,
    front: Arc<Metrics>,
    locks: Locks,
}

impl Maker {
    /// `db`, the tree `name` of `forest`, served with its own metrics
    /// (the front tree's when `front`).
    fn serve(&self, forest: &Arc<Forest>, name: &str, db: Arc<Database>, front: bool) -> Served {
        let metrics = if front {
            Arc::clone(&self.front)
        } else {
            Arc::new(Metrics::sharing_connections(&self.front))
        };
        let of = forest.is_journaled().then(|| TreeOf {
            forest: Arc::clone(forest),
            name: name.to_owned(),
        });
        let state = AppState::of_tree(db, self.config.clone(), &metrics, of, &self.locks);
        Served {
            name: name.to_owned(),
            router: routes::tree_router(state.clone()),
            state,
        }
    }
}

/// One tree as served.
#[derive(Clone, Debug)]
pub(crate) struct Served {
    pub name: String,
    pub state: AppState,
    pub router: Router,
}

impl Trees {
    /// One database served as the tree `default`.
    pub fn of_database(state: AppState) -> Trees {
        let router = routes::tree_router(state.clone());
        Trees {
            forest: None,
            trees: vec![Served {
                name: cairn_db::DEFAULT_TREE.to_owned(),
                state: state.clone(),
                router,
            }],
            default: Some(0),
            front: state,
            labelled: false,
            grown: RwLock::default(),
            maker: None,
        }
    }

    /// The trees of the database in `dir` opened read-only (no lock
    /// taken, nothing written): what a read-only server beside the writer
    /// serves. Each tree serves what the block journal held when it was
    /// opened: where a tree's own files trail the journal or still hold
    /// what a rollback removed, the journal's replay in memory (see
    /// [`cairn_db::open_trees`]).
    pub fn of_read_only(
        dir: &std::path::Path,
        config: &ServerConfig,
        front: &Arc<Metrics>,
    ) -> Result<Trees, DbError> {
        let opened = cairn_db::open_trees(
            dir,
            cairn_db::OpenOptions::new()
                .read_only(true)
                .background(false),
        )?;
        let default = opened
            .iter()
            .position(|t| t.name == cairn_db::DEFAULT_TREE)
            .or((opened.len() == 1).then_some(0));
        let front_index = default.unwrap_or(0);
        let locks = Locks::default();
        let mut served = Vec::with_capacity(opened.len());
        for (index, cairn_db::ReadTree { name, db, .. }) in opened.into_iter().enumerate() {
            let metrics = if index == front_index {
                Arc::clone(front)
            } else {
                Arc::new(Metrics::sharing_connections(front))
            };
            let state = AppState::of_tree(Arc::new(db), config.clone(), &metrics, None, &locks);
            served.push(Served {
                name,
                router: routes::tree_router(state.clone()),
                state,
            });
        }
        let Some(first) = served.get(front_index) else {
            return Err(ForestError::UnknownTree {
                name: cairn_db::DEFAULT_TREE.to_owned(),
                known: String::new(),
            }
            .into());
        };
        let front = first.state.clone();
        Ok(Trees {
            forest: None,
            labelled: cairn_db::is_forest(dir),
            trees: served,
            default,
            front,
            grown: RwLock::default(),
            maker: None,
        })
    }

    /// The trees of `forest`, each counting in its own metrics (the
    /// connections in the front tree's, `front`).
    pub fn of_forest(
        forest: Arc<Forest>,
        config: &ServerConfig,
        front: &Arc<Metrics>,
    ) -> Result<Trees, ServerError> {
        let trees = forest.trees();
        if trees.is_empty() {
            return Err(ServerError::Usage(format!(
                "{} holds no tree yet: add one with `cairn tree add`",
                forest.dir().display()
            )));
        }
        let default = forest
            .default_tree()
            .ok()
            .and_then(|db| trees.iter().position(|t| Arc::ptr_eq(&t.db, &db)));
        let front_index = default.unwrap_or(0);
        let maker = Maker {
            config: config.clone(),
            front: Arc::clone(front),
            locks: Locks::default(),
        };
        let served = trees
            .iter()
            .enumerate()
            .map(|(index, tree)| {
                maker.serve(
                    &forest,
                    &tree.name,
                    Arc::clone(&tree.db),
                    index == front_index,
                )
            })
            .collect::<Vec<_>>();
        let front = served[front_index].state.clone();
        Ok(Trees {
            labelled: forest.is_journaled(),
            forest: Some(forest),
            trees: served,
            default,
            front,
            grown: RwLock::default(),
            maker: Some(maker),
        })
    }

    /// The tree named `name`, as the database holds it now: one of those
    /// served from the start, or one made since (served from now on).
    fn named(&self, name: &str) -> Result<Served, ApiError> {
        // The database's tree of that name now: a member a rollback took
        // away is no longer served, one made again is served anew.
        let current = match &self.forest {
            Some(forest) => Some(forest.tree(name).map_err(|_| self.unknown(name))?),
            None => None,
        };
        let is_current = |tree: &&Served| {
            tree.name == name
                && current
                    .as_ref()
                    .is_none_or(|db| Arc::ptr_eq(&tree.state.shared().db, db))
        };
        if let Some(tree) = self.trees.iter().find(is_current) {
            return Ok(tree.clone());
        }
        if let Some(tree) = self.grown.read().iter().find(is_current) {
            return Ok(tree.clone());
        }
        match (&self.forest, &self.maker, &current) {
            (Some(forest), Some(maker), Some(db)) => {
                let mut grown = self.grown.write();
                if let Some(tree) = grown.iter().find(is_current) {
                    return Ok(tree.clone());
                }
                grown.retain(|tree| tree.name != name);
                let served = maker.serve(forest, name, Arc::clone(db), false);
                grown.push(served.clone());
                Ok(served)
            }
            _ => Err(self.unknown(name)),
        }
    }

    /// Every tree served, in the database's order (those made since the
    /// server started included).
    fn every(&self) -> Vec<Served> {
        match &self.forest {
            Some(forest) => forest
                .names()
                .iter()
                .filter_map(|name| self.named(name).ok())
                .collect(),
            None => self.trees.clone(),
        }
    }

    fn unknown(&self, name: &str) -> ApiError {
        let known = match &self.forest {
            Some(forest) => forest.names(),
            None => self.trees.iter().map(|t| t.name.clone()).collect(),
        }
        .join(", ");
        let error = ForestError::UnknownTree {
            name: name.to_owned(),
            known,
        };
        ApiError::not_found(error.to_string()).for_tree(name)
    }
}

/// The router of every route for `trees`.
pub(crate) fn router(trees: Arc<Trees>) -> Router {
    let mut router: Router<Arc<Trees>> = Router::new();
    for route in routes::ROUTES {
        let method = route.method;
        let handler = match (routes::scope(route.path), method, route.path) {
            (Scope::Forest, "GET", "/v1/trees") => get(list),
            (Scope::Forest, "POST", "/v1/blocks") => post(append_block),
            (Scope::Forest, "GET", "/v1/blocks") => get(blocks),
            (Scope::Service, _, "/healthz" | "/readyz") => get(every_tree),
            (Scope::Service, _, "/metrics") => get(metrics),
            (Scope::Service, _, _) | (Scope::Tree, _, _) => {
                if method == "POST" {
                    post(to_default)
                } else {
                    get(to_default)
                }
            }
            (Scope::Named, "POST", _) => post(to_named),
            (Scope::Named, _, _) => get(to_named),
            (Scope::Forest, method, path) => {
                panic!("route {method} {path} is in ROUTES but has no handler")
            }
        };
        router = router.route(route.path, handler);
    }
    let front = trees.front.clone();
    routes::finish(router.fallback(member_or_none), front).with_state(trees)
}

/// What no route of the table matched: a family member's route,
/// `/v1/trees/NAME/K/...` (a tree's routes under a name holding a `/`),
/// else the refusal of a path the API does not have.
async fn member_or_none(State(trees): State<Arc<Trees>>, request: Request) -> Response {
    let tail = request.uri().path().strip_prefix("/v1/trees/");
    if let Some((Cow::Owned(_), _)) = tail.map(tree_path) {
        return to_named(State(trees), request).await;
    }
    let (method, uri) = (request.method().clone(), request.uri().clone());
    axum::response::IntoResponse::into_response(crate::api::service::no_route(method, uri).await)
}

/// Hands a request to `router` as `uri`: a new request of the same
/// method, headers and body, without the outer router's extensions (its
/// path parameters would be taken for the inner route's).
async fn call(router: &Router, request: Request, uri: Option<Uri>) -> Response {
    let (parts, body) = request.into_parts();
    let mut inner = Request::new(body);
    *inner.method_mut() = parts.method;
    *inner.uri_mut() = uri.unwrap_or(parts.uri);
    *inner.version_mut() = parts.version;
    *inner.headers_mut() = parts.headers;
    let mut router = router.clone();
    match tower_service::Service::call(&mut router, inner).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// Before a tree answers a request: its log catches up with what the
/// block journal made durable (a block is answered once its journal frame
/// is durable, the trees' own logs following), so that every write
/// answered before is read back. Nothing to do, and no I/O, when the tree
/// holds it already.
async fn caught_up(trees: &Arc<Trees>, name: &str) -> Result<(), Response> {
    let Some(forest) = trees.forest.as_ref().filter(|f| f.trails(name)) else {
        return Ok(());
    };
    let forest = Arc::clone(forest);
    let owned = name.to_owned();
    let result = tokio::task::spawn_blocking(move || forest.catch_up(&owned))
        .await
        .map_err(|e| ApiError::internal(format!("the catch-up task failed: {e}")));
    let error = match result {
        Ok(Ok(())) => return Ok(()),
        Ok(Err(error)) => {
            if let Ok(tree) = trees.named(name) {
                tree.state.shared().record_failure(&error);
            }
            ApiError::from_db(error)
        }
        Err(error) => error,
    };
    Err(axum::response::IntoResponse::into_response(error))
}

async fn to_default(State(trees): State<Arc<Trees>>, request: Request) -> Response {
    match trees.default {
        Some(index) => {
            if let Err(response) = caught_up(&trees, &trees.trees[index].name).await {
                return response;
            }
            call(&trees.trees[index].router, request, None).await
        }
        None => axum::response::IntoResponse::into_response(trees.unknown(cairn_db::DEFAULT_TREE)),
    }
}

/// `/v1/trees/{name}/rest` to the tree named, as `/v1/rest`.
async fn to_named(State(trees): State<Arc<Trees>>, request: Request) -> Response {
    let uri = request.uri().clone();
    let tail = uri.path().strip_prefix("/v1/trees/").unwrap_or_default();
    let (name, rest) = tree_path(tail);
    let tree = match trees.named(&name) {
        Ok(tree) => tree,
        Err(error) => return axum::response::IntoResponse::into_response(error),
    };
    let inner = match uri.query() {
        Some(query) => format!("/v1/{rest}?{query}"),
        None => format!("/v1/{rest}"),
    };
    let Ok(inner) = inner.parse::<Uri>() else {
        return axum::response::IntoResponse::into_response(ApiError::bad_request(format!(
            "{} is not a path of a tree",
            uri.path()
        )));
    };
    if let Err(response) = caught_up(&trees, &name).await {
        return response;
    }
    call(&tree.router, request, Some(inner)).await
}

/// The tree's name and the route's path in `tail` (what follows
/// `/v1/trees/`): `NAME/rest`, or `NAME/K/rest` for member K of the
/// family NAME (no route of a tree begins with a number).
fn tree_path(tail: &str) -> (Cow<'_, str>, &str) {
    let (name, rest) = tail.split_once('/').unwrap_or((tail, ""));
    let (member, after) = rest.split_once('/').unwrap_or((rest, ""));
    if !member.is_empty() && member.bytes().all(|b| b.is_ascii_digit()) {
        (Cow::Owned(format!("{name}/{member}")), after)
    } else {
        (Cow::Borrowed(name), rest)
    }
}

/// `/healthz` and `/readyz`: the first tree that is not well, else the
/// default tree's answer.
async fn every_tree(State(trees): State<Arc<Trees>>, request: Request) -> Response {
    let uri = request.uri().clone();
    let front = trees.default.unwrap_or(0);
    for (index, tree) in trees.trees.iter().enumerate() {
        if index == front {
            continue;
        }
        let asked = Request::builder()
            .method(Method::GET)
            .uri(uri.clone())
            .body(Body::empty())
            .unwrap_or_else(|e| unreachable!("a GET of a parsed URI: {e}"));
        let answer = call(&tree.router, asked, None).await;
        if !answer.status().is_success() {
            return answer;
        }
    }
    call(&trees.trees[front].router, request, None).await
}

#[derive(Serialize)]
struct TreeJson {
    name: String,
    kind: &'static str,
    arity: u64,
    hash: &'static str,
    size: u64,
    root: Option<String>,
    finalized: u64,
    /// A family member's capacity (absent for a tree without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    capacity: Option<u64>,
    /// A family member's successor rule: `none`, `split` or
    /// `whole-batch` (absent for a tree without a capacity).
    #[serde(skip_serializing_if = "Option::is_none")]
    rollover: Option<&'static str>,
}

#[derive(Serialize)]
struct TreesJson {
    trees: Vec<TreeJson>,
    /// The tree the routes without `/v1/trees/{name}` answer for.
    default: Option<String>,
    /// Whether blocks of several trees are written through the block
    /// journal (`POST /v1/blocks` naming any tree).
    journaled: bool,
    last_block: Option<u64>,
    finalized_block: Option<u64>,
}

/// `GET /v1/trees`.
async fn list(State(trees): State<Arc<Trees>>) -> Response {
    let every = trees.every();
    for tree in &every {
        if let Err(response) = caught_up(&trees, &tree.name).await {
            return response;
        }
    }
    let listed = every
        .iter()
        .map(|tree| {
            let db = &tree.state.shared().db;
            let durable = db.durable();
            let config = db.tree_config();
            let family = trees.forest.as_ref().and_then(|forest| {
                forest
                    .family(&tree.name)
                    .ok()
                    .and_then(|members| members.first().and_then(|m| m.family))
            });
            TreeJson {
                capacity: family.map(|f| f.capacity),
                rollover: family.map(|f| f.rollover.name()),
                name: tree.name.clone(),
                kind: config.kind.name(),
                arity: config.arity.as_u64(),
                hash: config.hash.name(),
                size: durable.size,
                root: durable.root.as_ref().map(hex),
                finalized: durable.finalized,
            }
        })
        .collect();
    let (journaled, last_block, finalized_block) = match &trees.forest {
        Some(forest) => (
            forest.is_journaled(),
            forest.last_block(),
            forest.finalized_block(),
        ),
        None => (false, None, None),
    };
    json(
        StatusCode::OK,
        &TreesJson {
            trees: listed,
            default: trees.default.map(|i| trees.trees[i].name.clone()),
            journaled,
            last_block,
            finalized_block,
        },
    )
}

/// Appends `values` to `tree` of a journaled database (a block of one
/// tree when `block` is given), then makes the tree's own log catch up so
/// that reads answer for it; returns where the values went.
pub(crate) fn commit(
    shared: &Shared,
    tree: &TreeOf,
    block: Option<BlockTag>,
    values: &[Hash],
) -> Result<TreeAt, DbError> {
    let committed = match block {
        Some(tag) => tree.forest.commit_block(
            BlockId {
                number: tag.number,
                hash: tag.hash.unwrap_or([0; 32]),
            },
            &[(tree.name.as_str(), values)],
        ),
        None => tree.forest.append(&tree.name, values),
    }?;
    // Durable from here (the journal holds it); the tree serves it once
    // its log holds it too.
    if let Err(error) = tree.forest.catch_up(&tree.name) {
        shared.record_failure(&error);
        return Err(error);
    }
    let mut trees = committed.trees;
    Ok(trees.remove(0))
}

/// A block's values for several trees: `{"number": N, "hash": "0x..",
/// "trees": {"name": ["0x..", ...], ...}}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BlockBody<'a> {
    number: u64,
    #[serde(borrow, default)]
    hash: Option<Cow<'a, str>>,
    #[serde(borrow)]
    trees: Parts<'a>,
}

/// The trees of a block body in the order written, each named once.
struct Parts<'a>(Vec<(Cow<'a, str>, Vec<Cow<'a, str>>)>);

impl<'de: 'a, 'a> Deserialize<'de> for Parts<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Parts<'a>, D::Error> {
        struct Seen;
        impl<'de> Visitor<'de> for Seen {
            type Value = Parts<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of tree names to lists of values")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Parts<'de>, M::Error> {
                let mut parts: Vec<(Cow<'de, str>, Vec<Cow<'de, str>>)> = Vec::new();
                while let Some((name, values)) =
                    map.next_entry::<Cow<'de, str>, Vec<Cow<'de, str>>>()?
                {
                    if parts.iter().any(|(seen, _)| *seen == name) {
                        return Err(serde::de::Error::custom(format!(
                            "tree {name:?} is named twice"
                        )));
                    }
                    parts.push((name, values));
                }
                Ok(Parts(parts))
            }
        }
        deserializer.deserialize_map(Seen)
    }
}

#[derive(Serialize)]
struct BlockAnswerJson {
    block: BlockIdJson,
    trees: Vec<TreeAtJson>,
}

#[derive(Serialize)]
struct BlockIdJson {
    number: u64,
    hash: String,
}

#[derive(Serialize)]
struct TreeAtJson {
    name: String,
    first_index: u64,
    count: u64,
    size: u64,
    root: Option<String>,
}

/// `POST /v1/blocks`: one block of values for several trees, all or
/// nothing, answered once durable (one journal frame for the block) and
/// served by every tree it names.
async fn append_block(
    State(trees): State<Arc<Trees>>,
    headers: HeaderMap,
    request_body: Body,
) -> Result<Response, ApiError> {
    let front = trees.front.shared();
    let config = &front.config;
    auth::check_write(config.token.as_deref(), &headers)?;
    if body::encoding(&headers)? != body::Encoding::Json {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "a block is JSON: {\"number\": N, \"hash\": \"0x..\", \"trees\": {\"name\": [\"0x..\"]}}",
        ));
    }
    query::check_declared(&headers, config.max_body_bytes)?;
    let bytes = query::read_body(request_body, config.max_body_bytes).await?;
    let doc: BlockBody<'_> = serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::bad_request(format!(
            "the body is not {{\"number\": N, \"hash\": \"0x..\", \"trees\": {{\"name\": [\"0x..\", ...]}}}} (hash optional): {e}"
        ))
    })?;
    let total: usize = doc.trees.0.iter().map(|(_, values)| values.len()).sum();
    if total > config.max_batch_leaves {
        return Err(ApiError::too_large(format!(
            "a block of {total} values exceeds this server's limit of {} values per request",
            config.max_batch_leaves
        )));
    }
    let hash = doc.hash.as_deref().map(body::block_hash).transpose()?;
    let mut parts: Vec<(Served, Vec<Hash>)> = Vec::with_capacity(doc.trees.0.len());
    for (name, texts) in &doc.trees.0 {
        let tree = trees.named(name)?;
        let kind = tree.state.shared().db.tree_config().hash;
        let values = texts
            .iter()
            .enumerate()
            .map(|(position, text)| {
                body::parse_leaf(text, kind).map_err(|e| {
                    ApiError::bad_request(format!(
                        "tree {name:?}, value at position {position}: {e}"
                    ))
                    .for_tree(name)
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        parts.push((tree, values));
    }
    let number = doc.number;
    drop(bytes);
    let block = BlockId {
        number,
        hash: hash.unwrap_or([0; 32]),
    };
    let _no_rollback = front.rollbacks.read().await;
    let task = Arc::clone(&trees);
    let committed =
        tokio::task::spawn_blocking(move || write_block(&task, block, hash.is_some(), &parts))
            .await
            .map_err(|e| ApiError::internal(format!("the block task failed: {e}")))??;
    Ok(json(
        StatusCode::OK,
        &BlockAnswerJson {
            block: BlockIdJson {
                number: block.number,
                hash: hex(&block.hash),
            },
            trees: committed,
        },
    ))
}

/// Writes a block (on the blocking pool): through the database's journal,
/// or as a tagged append of the one tree of a database before several.
fn write_block(
    trees: &Trees,
    block: BlockId,
    hashed: bool,
    parts: &[(Served, Vec<Hash>)],
) -> Result<Vec<TreeAtJson>, ApiError> {
    let refused = |tree: &Served, error: DbError| {
        crate::api::append::refused(tree.state.shared(), None, error)
    };
    let first = parts.first().map_or(&trees.trees[0], |(tree, _)| tree);
    let written: Vec<TreeAt> = match &trees.forest {
        Some(forest) => {
            let named: Vec<(&str, &[Hash])> = parts
                .iter()
                .map(|(tree, values)| (tree.name.as_str(), values.as_slice()))
                .collect();
            // Durable once the block's journal frame is: one fdatasync.
            // The answer's roots come from the trees' memory where they
            // can (each tree read later catches up first: `catch_up`).
            let committed = forest
                .commit_block(block, &named)
                .map_err(|error| refused(first, error))?;
            let mut roots = Vec::with_capacity(committed.trees.len());
            for at in &committed.trees {
                match forest.head_after(&at.tree, at.size) {
                    Ok(head) => roots.push(head.root),
                    Err(error) => {
                        first.state.shared().record_failure(&error);
                        return Err(ApiError::from_db(error));
                    }
                }
            }
            return Ok(answer(trees, committed.trees, roots));
        }
        None => {
            // One database: a block names its one tree at most.
            let db = &trees.trees[0].state.shared().db;
            let values = parts
                .first()
                .map_or(&[][..], |(_, values)| values.as_slice());
            let tag = BlockTag {
                number: block.number,
                hash: hashed.then_some(block.hash),
            };
            let ack = db
                .append_tagged(values, tag)
                .map_err(|error| refused(&trees.trees[0], error))?;
            let timeout = trees.front.shared().config.durability_timeout;
            let acked = ack
                .wait(db, timeout)
                .map_err(|error| refused(&trees.trees[0], error))?;
            if parts.is_empty() {
                Vec::new()
            } else {
                vec![TreeAt {
                    tree: trees.trees[0].name.clone(),
                    first: acked.first,
                    count: acked.count,
                    size: acked.size,
                }]
            }
        }
    };
    let roots = written
        .iter()
        .map(|at| {
            let tree = trees.named(&at.tree).ok();
            tree.and_then(|t| t.state.shared().db.head_at(at.size).ok())
                .and_then(|h| h.root)
        })
        .collect();
    Ok(answer(trees, written, roots))
}

/// A block's answer: per tree written, where its values went and its root
/// after them (counted in the tree's metrics).
fn answer(trees: &Trees, written: Vec<TreeAt>, roots: Vec<Option<Hash>>) -> Vec<TreeAtJson> {
    written
        .into_iter()
        .zip(roots)
        .map(|(at, root)| {
            if let Ok(tree) = trees.named(&at.tree) {
                let shared = tree.state.shared();
                shared.metrics.appends.fetch_add(1, Ordering::Relaxed);
                shared.metrics.leaves.fetch_add(at.count, Ordering::Relaxed);
            }
            TreeAtJson {
                name: at.tree,
                first_index: at.first,
                count: at.count,
                size: at.size,
                root: root.as_ref().map(hex),
            }
        })
        .collect()
}

/// Blocks a listing answers by default, and at most.
const BLOCKS_DEFAULT_LIMIT: u64 = 100;
const BLOCKS_MAX_LIMIT: u64 = 1_000;

#[derive(Serialize)]
struct BlockHeadsJson {
    number: u64,
    hash: Option<String>,
    trees: Vec<HeadOfJson>,
}

#[derive(Serialize)]
struct HeadOfJson {
    name: String,
    size: u64,
    root: Option<String>,
}

#[derive(Serialize)]
struct BlocksJson {
    blocks: Vec<BlockHeadsJson>,
    finalized_block: Option<u64>,
    /// Where the next page starts (`null`: this page reached the end).
    next_from_block: Option<u64>,
}

/// `GET /v1/blocks?from_block=N&limit=L`: every tree's head at the end of
/// each block a rollback can still reach (the finalized one first).
async fn blocks(State(trees): State<Arc<Trees>>, query: RawQuery) -> Result<Response, ApiError> {
    let numbers = query::numbers(query, &["from_block", "limit"])?;
    let from = query::get(&numbers, "from_block").unwrap_or(0);
    let limit = query::get(&numbers, "limit").unwrap_or(BLOCKS_DEFAULT_LIMIT);
    if !(1..=BLOCKS_MAX_LIMIT).contains(&limit) {
        return Err(ApiError::bad_request(format!(
            "limit {limit} is not between 1 and {BLOCKS_MAX_LIMIT}"
        )));
    }
    let limit = limit as usize;
    let front = trees.front.shared();
    let _no_rollback = front.rollbacks.read().await;
    let task = Arc::clone(&trees);
    let answer = tokio::task::spawn_blocking(move || block_heads(&task, from, limit))
        .await
        .map_err(|e| ApiError::internal(format!("the heads task failed: {e}")))??;
    Ok(json(StatusCode::OK, &answer))
}

fn block_heads(trees: &Trees, from: u64, limit: usize) -> Result<BlocksJson, ApiError> {
    let Some(forest) = trees.forest.as_ref().filter(|f| f.is_journaled()) else {
        if trees.labelled {
            return Err(ApiError::not_found(
                "this read-only server serves each tree's own files, not the block journal: ask the writer for the heads by block",
            ));
        }
        // One tree: its own tagged heads.
        let tree = &trees.trees[0];
        let heads = tree
            .state
            .shared()
            .db
            .heads(from, limit + 1)
            .map_err(ApiError::from_db)?;
        let next_from_block = heads.get(limit).map(|h| h.block);
        return Ok(BlocksJson {
            blocks: heads
                .iter()
                .take(limit)
                .map(|h| BlockHeadsJson {
                    number: h.block,
                    hash: h.block_hash.as_ref().map(hex),
                    trees: vec![HeadOfJson {
                        name: tree.name.clone(),
                        size: h.size,
                        root: h.root.as_ref().map(hex),
                    }],
                })
                .collect(),
            finalized_block: None,
            next_from_block,
        });
    };
    let all = forest.blocks();
    let mut listed = all.iter().filter(|b| b.number >= from);
    let mut blocks = Vec::new();
    for block in listed.by_ref().take(limit) {
        let heads = forest.heads_at(block.number).map_err(ApiError::from_db)?;
        blocks.push(BlockHeadsJson {
            number: block.number,
            hash: Some(hex(&block.hash)),
            trees: heads
                .into_iter()
                .map(|(name, size, root)| HeadOfJson {
                    name,
                    size,
                    root: root.as_ref().map(hex),
                })
                .collect(),
        });
    }
    Ok(BlocksJson {
        blocks,
        finalized_block: forest.finalized_block(),
        next_from_block: listed.next().map(|b| b.number),
    })
}

/// One tree's head at each block of a journaled database, from
/// `from_block` on: what `GET /v1/heads` answers for a tree of one.
pub(crate) fn tree_heads(
    tree: &TreeOf,
    from: u64,
    limit: usize,
) -> Result<Vec<cairn_db::TaggedHead>, DbError> {
    let mut heads = Vec::new();
    for block in tree
        .forest
        .blocks()
        .into_iter()
        .filter(|b| b.number >= from)
        .take(limit)
    {
        let at = tree.forest.heads_at(block.number)?;
        if let Some((_, size, root)) = at.into_iter().find(|(name, _, _)| *name == tree.name) {
            heads.push(cairn_db::TaggedHead {
                block: block.number,
                block_hash: Some(block.hash),
                size,
                root,
            });
        }
    }
    Ok(heads)
}

/// `GET /metrics`: one tree's exposition as before when the server serves
/// one tree; else every tree's families labelled `tree="name"`, and the
/// server's own (connections, requests, process, build) once.
async fn metrics(State(trees): State<Arc<Trees>>) -> Response {
    let front_index = trees.default.unwrap_or(0);
    if !trees.labelled {
        return crate::api::service::metrics(State(trees.front.clone())).await;
    }
    let mut families = crate::metrics::Families::default();
    let front = &trees.trees[front_index].name;
    for tree in trees.every() {
        let shared = tree.state.shared();
        let text = shared.metrics.render(&shared.db);
        families.add(&text, &tree.name, tree.name == *front);
    }
    with_type(
        StatusCode::OK,
        families.finish().into(),
        "text/plain; version=0.0.4; charset=utf-8",
    )
}
