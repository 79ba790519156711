//! Starting, serving and stopping. Shutdown order: stop accepting, let
//! in-flight requests finish (for at most the grace period), flush,
//! checkpoint if configured, then (in [`run_db`]) wait for blocking tasks
//! and close the database, which releases the directory lock. Connections
//! are accepted and served, within their limits, by `listener.rs`.

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use cairn_db::{Database, Forest};
use tokio::net::TcpListener;

use crate::config::ServerConfig;
use crate::error::ServerError;
use crate::forest::Trees;
use crate::listener::{ConnectionStats, Limits};
use crate::metrics::Metrics;
use crate::state::AppState;
use crate::{health, listener};

/// A bound server, not yet serving: [`Server::local_addr`] tells which
/// port a `:0` listen address got.
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
    local_addr: SocketAddr,
    state: AppState,
    trees: Arc<Trees>,
    /// Where a read-only server of several trees reopens them from.
    read_only_dir: Option<std::path::PathBuf>,
}

impl Server {
    /// Binds `config.listen` for `db` (of any kind), served as the tree
    /// `default`.
    pub async fn bind(db: Arc<Database>, config: ServerConfig) -> Result<Server, ServerError> {
        let state = AppState::new(db, config);
        let trees = Arc::new(Trees::of_database(state));
        Server::bind_trees(trees, None).await
    }

    /// Binds `config.listen` for every tree of `forest` (a database of
    /// several trees, or one directory in the layout before). Publishing
    /// and mirroring serve one tree: refused for a database of several.
    pub async fn bind_forest(
        forest: Arc<Forest>,
        config: ServerConfig,
    ) -> Result<Server, ServerError> {
        if forest.is_journaled() && (config.publish.is_some() || config.mirror.is_some()) {
            return Err(ServerError::Usage(format!(
                "{} holds several trees: --publish and --mirror-from serve a database of one tree",
                forest.dir().display()
            )));
        }
        let front = Arc::new(Metrics::default());
        let trees = Arc::new(Trees::of_forest(forest, &config, &front)?);
        Server::bind_trees(trees, None).await
    }

    /// Binds `config.listen` for the database of several trees in `dir`,
    /// opened read-only beside its writer (each tree's directory opened
    /// again as the writer's files change).
    pub async fn bind_read_only_forest(
        dir: &Path,
        config: ServerConfig,
    ) -> Result<Server, ServerError> {
        let front = Arc::new(Metrics::default());
        let trees = Arc::new(Trees::of_read_only(dir, &config, &front)?);
        Server::bind_trees(trees, Some(dir.to_owned())).await
    }

    async fn bind_trees(
        trees: Arc<Trees>,
        read_only_dir: Option<std::path::PathBuf>,
    ) -> Result<Server, ServerError> {
        let state = trees.front.clone();
        let addr = state.shared().config.listen;
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| ServerError::Bind { addr, source })?;
        let local_addr = listener
            .local_addr()
            .map_err(|source| ServerError::Bind { addr, source })?;
        let shared = state.shared();
        shared
            .metrics
            .connections
            .configure(&shared.config)
            .map_err(ServerError::Usage)?;
        Ok(Server {
            listener,
            local_addr,
            state,
            trees,
            read_only_dir,
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Serves until `shutdown` completes; then stops accepting, lets
    /// in-flight requests finish (closing connections still busy after
    /// `shutdown_grace`), flushes, and checkpoints if configured. The
    /// database stays open: its owner closes it.
    pub async fn run<F>(self, shutdown: F) -> Result<(), ServerError>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let Server {
            listener,
            local_addr,
            state,
            trees,
            read_only_dir,
        } = self;
        let shared = state.shared();
        let config = &shared.config;
        let mut companions = crate::companions::Companions::start(
            &shared.db,
            config.publish.clone(),
            config.mirror.clone(),
            config.signer.clone(),
        )
        .await?;
        if let Some(status) = &companions.publisher {
            let _ = shared.metrics.publisher.set(Arc::clone(status));
        }
        if let Some(status) = &companions.follower {
            let _ = shared.metrics.follower.set(Arc::clone(status));
        }
        for served in &trees.trees {
            let db = &served.state.shared().db;
            let tree = db.tree_config();
            tracing::info!(
                addr = %local_addr,
                dir = %db.dir().display(),
                tree = served.name,
                kind = tree.kind.name(),
                arity = tree.arity.as_u64(),
                hash = tree.hash.name(),
                size = db.size(),
                write_token = config.token.is_some(),
                read_only = config.read_only,
                "listening"
            );
        }
        log_limits(&shared.metrics.connections);
        if let Some(signer) = &config.signer {
            tracing::info!(
                verifier_key = %signer.verifier(),
                head = if config.sign_finalized { "finalized" } else { "durable" },
                "signing checkpoints (GET /v1/checkpoint)"
            );
        }
        if !config.read_only && crate::auth::open_writes_refused(config) {
            tracing::warn!(
                addr = %local_addr,
                "listening beyond loopback without a write token: writes are refused (403); give --token-file, or --allow-open-writes to let anyone who can reach {local_addr} append, roll back and finalize"
            );
        } else if config.token.is_none() && !config.read_only && !local_addr.ip().is_loopback() {
            tracing::warn!(
                addr = %local_addr,
                "listening beyond loopback without a write token: anyone who can reach {local_addr} can append, roll back and finalize; give --token-file, or listen on 127.0.0.1"
            );
        }
        let grace = config.shutdown_grace;
        let (signalled, on_signal) = tokio::sync::oneshot::channel::<()>();
        let signal = async move {
            shutdown.await;
            tracing::info!("shutting down: no new connections, finishing in-flight requests");
            let _ = signalled.send(());
        };
        let watched = Arc::downgrade(&shared.db);
        let watch = tokio::spawn(health::watch(move || {
            watched.upgrade().map(|db| db.health())
        }));
        // A database opened read-only follows its writer: each request goes
        // to the newest opening of the directory.
        let (router, follow) = if shared.db.is_read_only() {
            let reader = crate::reader::Reader::new(&trees, read_only_dir);
            (reader.router(), Some(tokio::spawn(reader.follow())))
        } else {
            (crate::forest::router(Arc::clone(&trees)), None)
        };
        let serving = listener::serve(
            listener,
            router,
            Limits::of(config),
            Arc::clone(&shared.metrics.connections),
            signal,
        );
        let deadline = async move {
            match on_signal.await {
                Ok(()) => tokio::time::sleep(grace).await,
                Err(_) => std::future::pending().await,
            }
        };
        tokio::select! {
            served = serving => served.map_err(|source| ServerError::Io { what: "serving", source })?,
            () = deadline => tracing::warn!(
                grace_seconds = grace.as_secs_f64(),
                "requests still in flight after the grace period: closing their connections"
            ),
        }
        watch.abort();
        // Awaited: once it is gone, nothing of it holds the database.
        let _ = watch.await;
        if let Some(follow) = follow {
            follow.abort();
            let _ = follow.await;
        }
        // The publisher's last round publishes the last durable size.
        tokio::task::spawn_blocking(move || companions.stop_and_join())
            .await
            .map_err(|e| ServerError::Io {
                what: "stopping the companions",
                source: std::io::Error::other(e.to_string()),
            })?;
        finish(trees).await
    }
}

/// Logs the connection limits a server runs with.
pub(crate) fn log_limits(connections: &ConnectionStats) {
    let load = |n: &std::sync::atomic::AtomicU64| n.load(Ordering::Relaxed);
    let descriptors = load(&connections.descriptor_limit);
    tracing::info!(
        max_connections = load(&connections.max),
        open_file_limit = (descriptors > 0).then_some(descriptors),
        reserved_descriptors = (descriptors > 0).then(|| load(&connections.reserved)),
        header_read_timeout_seconds = load(&connections.header_read_timeout_ms) as f64 / 1e3,
        idle_timeout_seconds = load(&connections.idle_timeout_ms) as f64 / 1e3,
        "connection limits"
    );
}

/// Flushes, and checkpoints if configured (on the blocking pool).
async fn finish(trees: Arc<Trees>) -> Result<(), ServerError> {
    tokio::task::spawn_blocking(move || {
        let shared = trees.front.shared();
        if shared.db.is_read_only() {
            // Nothing was written: nothing to flush or checkpoint.
            return Ok(());
        }
        if let Some(forest) = trees.forest.as_ref().filter(|f| f.is_journaled()) {
            // Every tree's log catches up with the block journal; a
            // checkpoint makes each tree durable in its own files and
            // rewrites the journal.
            forest.apply()?;
            tracing::info!(trees = trees.trees.len(), "flushed");
            if shared.config.checkpoint_on_shutdown {
                let start = Instant::now();
                forest.checkpoint()?;
                tracing::info!(
                    millis = start.elapsed().as_millis() as u64,
                    "checkpoint written"
                );
            }
            return Ok(());
        }
        let durable = shared.db.flush()?;
        tracing::info!(durable, "flushed");
        if shared.config.checkpoint_on_shutdown {
            let start = Instant::now();
            let checkpointed = shared.db.checkpoint()?;
            let elapsed = start.elapsed();
            tracing::info!(
                size = checkpointed.written.then_some(checkpointed.size),
                millis = elapsed.as_millis() as u64,
                "checkpoint written"
            );
        }
        Ok(())
    })
    .await
    .map_err(|e| ServerError::Io {
        what: "the shutdown task",
        source: std::io::Error::other(e.to_string()),
    })?
}

/// Binds and serves `db` until `shutdown` completes (see [`Server::run`]).
pub async fn serve<F>(
    db: Arc<Database>,
    config: ServerConfig,
    shutdown: F,
) -> Result<(), ServerError>
where
    F: Future<Output = ()> + Send + 'static,
{
    Server::bind(db, config).await?.run(shutdown).await
}

/// Opens the database in `dir` and serves it until SIGTERM or SIGINT (a
/// second signal exits at once: acknowledged appends are durable anyway),
/// then shuts down gracefully and closes the database. Installs the
/// default log subscriber ([`init_logging`]) unless one is set.
pub fn run(dir: &Path, config: ServerConfig) -> Result<(), ServerError> {
    init_logging();
    if cairn_db::is_forest(dir) {
        return run_forest(Forest::open(dir)?, config, |_| {});
    }
    let db = Database::open(dir)?;
    run_db(db, config, |_| {})
}

/// [`run`] for an opened database of several trees: every tree served
/// (`/v1/trees/{name}/...`, the routes without a prefix for the default
/// tree, `POST /v1/blocks`), then the database closed.
pub fn run_forest(
    forest: Forest,
    config: ServerConfig,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), ServerError> {
    let runtime = runtime()?;
    let forest = Arc::new(forest);
    let served = runtime.block_on(async {
        let signal = shutdown_signal()?;
        let server = Server::bind_forest(Arc::clone(&forest), config).await?;
        ready(server.local_addr());
        server.run(signal).await
    });
    drop(runtime);
    let closed = match Arc::try_unwrap(forest) {
        Ok(forest) => forest.close().map_err(ServerError::from),
        Err(_) => Err(ServerError::StillInUse),
    };
    served?;
    closed?;
    tracing::info!("closed: the directory is released");
    Ok(())
}

/// Serves the database of several trees in `dir` read-only beside its
/// writer (see [`Server::bind_read_only_forest`]) until SIGTERM or SIGINT.
pub fn run_read_only_forest(
    dir: &Path,
    config: ServerConfig,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), ServerError> {
    let runtime = runtime()?;
    let served = runtime.block_on(async {
        let signal = shutdown_signal()?;
        let server = Server::bind_read_only_forest(dir, config).await?;
        ready(server.local_addr());
        server.run(signal).await
    });
    drop(runtime);
    served
}

/// The multi-threaded runtime a server runs on.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, ServerError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("cairn-server")
        .build()
        .map_err(|source| ServerError::Io {
            what: "starting the runtime",
            source,
        })
}

/// [`run`] for an opened database; `ready` is called with the bound
/// address before the first request is accepted.
pub fn run_db(
    db: Database,
    config: ServerConfig,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), ServerError> {
    let runtime = runtime()?;
    let db = Arc::new(db);
    // A read-only opening is replaced as the server follows its writer,
    // and closing one writes nothing: it is not kept here to be closed.
    let held = (!db.is_read_only()).then(|| Arc::clone(&db));
    let served = runtime.block_on(async {
        let signal = shutdown_signal()?;
        let server = Server::bind(db, config).await?;
        ready(server.local_addr());
        server.run(signal).await
    });
    // Dropping the runtime waits for blocking tasks still running (an
    // append whose client went away): after it nothing else holds `db`.
    drop(runtime);
    let closed = match held.map(Arc::try_unwrap) {
        Some(Ok(db)) => db.close().map_err(ServerError::from),
        Some(Err(_)) => Err(ServerError::StillInUse),
        None => Ok(()),
    };
    served?;
    closed?;
    tracing::info!("closed: the directory is released");
    Ok(())
}

/// Completes at the first SIGTERM or SIGINT; a second one exits the
/// process at once.
#[cfg(unix)]
pub(crate) fn shutdown_signal() -> Result<impl Future<Output = ()> + Send + 'static, ServerError> {
    use tokio::signal::unix::{SignalKind, signal};
    let install = |kind: SignalKind| {
        signal(kind).map_err(|source| ServerError::Io {
            what: "installing a signal handler",
            source,
        })
    };
    let mut terminate = install(SignalKind::terminate())?;
    let mut interrupt = install(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = terminate.recv() => tracing::info!("SIGTERM"),
            _ = interrupt.recv() => tracing::info!("SIGINT"),
        }
        tokio::spawn(async move {
            tokio::select! {
                _ = terminate.recv() => {}
                _ = interrupt.recv() => {}
            }
            tracing::warn!("second signal: exiting without waiting for the graceful shutdown");
            std::process::exit(1);
        });
    })
}

#[cfg(not(unix))]
pub(crate) fn shutdown_signal() -> Result<impl Future<Output = ()> + Send + 'static, ServerError> {
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("interrupted");
    })
}

/// Installs a `tracing` subscriber writing to stderr, unless one is set:
/// the filter comes from `CAIRN_LOG` (default `info`; `debug` logs every
/// request), JSON lines when `CAIRN_LOG_FORMAT=json`.
pub fn init_logging() {
    init_logging_as(None);
}

/// [`init_logging`] in `format` (`None`: as `CAIRN_LOG_FORMAT` says).
pub fn init_logging_as(format: Option<crate::config::LogFormat>) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("CAIRN_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    let json = match format {
        Some(format) => format == crate::config::LogFormat::Json,
        None => std::env::var("CAIRN_LOG_FORMAT").is_ok_and(|v| v == "json"),
    };
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}
