//! A read-only server beside the writer on the same directory: the
//! database is opened read-only (no lock taken, nothing written), which
//! answers for what was durable when it opened. To follow the writer,
//! every `refresh_interval` the directory is looked at and, when a file
//! of it changed, opened again; the new opening is swapped in once it is
//! open, and requests after the swap are answered by it. So the server
//! serves the writer's durable head of at most about one interval ago,
//! and never a head that was not durable (a read-only open accepts only
//! what the log's checksums vouch for).
//!
//! Invariant: a request is answered by one opening from start to end (it
//! takes that opening's router when it arrives); the counters live in one
//! [`Metrics`] shared by every opening.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::Request;
use cairn_db::{Database, OpenOptions};
use parking_lot::RwLock;

use crate::config::ServerConfig;
use crate::forest::Trees;
use crate::metrics::Metrics;
use crate::routes;
use crate::state::AppState;

/// What the refreshes have done, read by `/metrics`, `/healthz` and
/// `/readyz`.
#[derive(Debug, Default)]
pub(crate) struct ReaderStatus {
    /// The durable size of the opening now serving.
    pub size: AtomicU64,
    /// When the directory was last found unchanged or opened again, in
    /// milliseconds since the Unix epoch.
    pub refreshed_unix_ms: AtomicU64,
    /// Openings swapped in after the first.
    pub refreshes: AtomicU64,
    /// Openings that failed (the previous one goes on serving).
    pub failures: AtomicU64,
}

impl ReaderStatus {
    /// Seconds since the directory was last known to be served as it is.
    pub fn staleness_seconds(&self) -> f64 {
        let refreshed = self.refreshed_unix_ms.load(Ordering::Relaxed);
        unix_ms_now().saturating_sub(refreshed) as f64 / 1e3
    }

    /// Appends the `cairn_reader_*` families.
    pub fn render(&self, out: &mut String) {
        use std::fmt::Write as _;
        let load = |n: &AtomicU64| n.load(Ordering::Relaxed);
        let families = [
            (
                "cairn_reader_size",
                "gauge",
                "The durable size of the read-only opening serving now.",
                load(&self.size) as f64,
            ),
            (
                "cairn_reader_staleness_seconds",
                "gauge",
                "Seconds since the directory was last found unchanged or opened again (how far behind the writer reads may be).",
                self.staleness_seconds(),
            ),
            (
                "cairn_reader_refreshes_total",
                "counter",
                "Openings of the directory swapped in after the first.",
                load(&self.refreshes) as f64,
            ),
            (
                "cairn_reader_refresh_failures_total",
                "counter",
                "Openings of the directory that failed (the previous one went on serving).",
                load(&self.failures) as f64,
            ),
        ];
        for (name, kind, help, value) in families {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
            );
        }
    }
}

fn unix_ms_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The opening serving now, and how to make the next.
#[derive(Debug)]
pub(crate) struct Reader {
    current: RwLock<Router>,
    dir: PathBuf,
    /// Whether `dir` is a database of several trees (each tree's
    /// directory opened again).
    forest: bool,
    config: ServerConfig,
    metrics: Arc<Metrics>,
    status: Arc<ReaderStatus>,
}

impl Reader {
    /// A reader serving `trees` (read-only openings) first; `forest_dir`
    /// is the database's directory when it holds several trees.
    pub fn new(trees: &Arc<Trees>, forest_dir: Option<PathBuf>) -> Arc<Reader> {
        let state = &trees.front;
        let shared = state.shared();
        let status = Arc::new(ReaderStatus::default());
        status
            .size
            .store(shared.db.durable_size(), Ordering::Relaxed);
        status
            .refreshed_unix_ms
            .store(unix_ms_now(), Ordering::Relaxed);
        let _ = shared.metrics.reader.set(Arc::clone(&status));
        Arc::new(Reader {
            current: RwLock::new(crate::forest::router(Arc::clone(trees))),
            forest: forest_dir.is_some(),
            dir: forest_dir.unwrap_or_else(|| shared.db.dir().to_owned()),
            config: shared.config.clone(),
            metrics: Arc::clone(&shared.metrics),
            status,
        })
    }

    /// The router the listener serves: each request goes to the router
    /// of the opening serving when it arrives.
    pub fn router(self: &Arc<Reader>) -> Router {
        let reader = Arc::clone(self);
        Router::new().fallback(move |request: Request| {
            let mut router = reader.current.read().clone();
            async move {
                match tower_service::Service::call(&mut router, request).await {
                    Ok(response) => response,
                    Err(never) => match never {},
                }
            }
        })
    }

    /// Looks at the directory every `refresh_interval`, opens it again
    /// when a file changed and swaps the new opening in; runs until the
    /// task is aborted.
    pub async fn follow(self: Arc<Reader>) {
        let mut interval = tokio::time::interval(self.config.refresh_interval);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // Nothing seen yet: the first look opens the directory again, in
        // case the writer moved between the first opening and this task.
        let mut seen = Vec::new();
        let mut failing = false;
        loop {
            interval.tick().await;
            let now = fingerprint(&self.dir);
            if now == seen && !failing {
                self.status
                    .refreshed_unix_ms
                    .store(unix_ms_now(), Ordering::Relaxed);
                continue;
            }
            let dir = self.dir.clone();
            let (forest, config, metrics) =
                (self.forest, self.config.clone(), Arc::clone(&self.metrics));
            let opened =
                tokio::task::spawn_blocking(move || open_router(&dir, forest, config, &metrics))
                    .await;
            match opened {
                Ok(Ok((router, size))) => {
                    if failing {
                        tracing::info!(dir = %self.dir.display(), "the directory opens again");
                    }
                    failing = false;
                    seen = now;
                    self.swap(router, size);
                }
                Ok(Err(error)) => {
                    self.status.failures.fetch_add(1, Ordering::Relaxed);
                    if !failing {
                        tracing::warn!(dir = %self.dir.display(), error = %error, "opening the directory again failed; the previous opening goes on serving");
                    }
                    failing = true;
                }
                Err(join) => {
                    self.status.failures.fetch_add(1, Ordering::Relaxed);
                    tracing::error!(error = %join, "the reopening task failed");
                    failing = true;
                }
            }
        }
    }

    fn swap(&self, router: Router, size: u64) {
        *self.current.write() = router;
        self.status.size.store(size, Ordering::Relaxed);
        self.status.refreshes.fetch_add(1, Ordering::Relaxed);
        self.status
            .refreshed_unix_ms
            .store(unix_ms_now(), Ordering::Relaxed);
        tracing::debug!(size, "serving a new opening of the directory");
    }
}

/// The router of a new read-only opening of `dir` (each tree's directory
/// when `forest`), and the durable size of its front tree.
fn open_router(
    dir: &Path,
    forest: bool,
    config: ServerConfig,
    metrics: &Arc<Metrics>,
) -> Result<(Router, u64), cairn_db::DbError> {
    if forest {
        let trees = Trees::of_read_only(dir, &config, metrics)?;
        let size = trees.front.shared().db.durable_size();
        return Ok((crate::forest::router(Arc::new(trees)), size));
    }
    let db = open(dir)?;
    let size = db.durable_size();
    let state = AppState::with_metrics(Arc::new(db), config, metrics);
    Ok((routes::router(state), size))
}

/// Opens `dir` read-only, as `cairn serve --read-only` does at start.
pub(crate) fn open(dir: &Path) -> Result<Database, cairn_db::DbError> {
    OpenOptions::new()
        .read_only(true)
        .background(false)
        .open(dir)
}

/// What changes in a directory when a writer makes something durable:
/// the name, length and modification time of every file in it and in its
/// subdirectories (the log's files are written in place, so their
/// modification time moves while their length may not). Unreadable
/// entries are left out: the opening reports what is wrong with them.
fn fingerprint(dir: &Path) -> Vec<(PathBuf, u64, Option<SystemTime>)> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(at) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&at) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(metadata) = entry.metadata() else {
                continue;
            };
            if metadata.is_dir() {
                pending.push(entry.path());
            } else {
                files.push((entry.path(), metadata.len(), metadata.modified().ok()));
            }
        }
    }
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_fingerprint_moves_when_a_file_is_written_in_place() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("log")).unwrap();
        let file = dir.path().join("log/0.log");
        std::fs::write(&file, [0u8; 64]).unwrap();
        let before = fingerprint(dir.path());
        assert_eq!(before.len(), 1);
        // Same length, new bytes, a later modification time.
        let later = SystemTime::now() + Duration::from_secs(5);
        std::fs::write(&file, [1u8; 64]).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(later)
            .unwrap();
        assert_ne!(fingerprint(dir.path()), before);
    }
}
