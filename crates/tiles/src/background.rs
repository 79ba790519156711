//! Long-running companions of a served database, each on its own thread:
//! a [`Publisher`] that keeps a tile store up to date with the database's
//! durable size, and a [`Follower`] that keeps a mirror up to date with its
//! upstream. Both read snapshots; the only lock an append may wait on is
//! the database's, taken by the publisher's pin hook (the caller's: a
//! finalize, once per publication whose size is not final yet). Both
//! count what they do in a status that `/metrics` renders.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use cairn_core::{Snapshot, TreeHead};
use cairn_note::Signer;

use crate::mirror::{MirrorError, MirrorTarget, Upstream, catch_up};
use crate::publish::{PublishError, PublishOptions, publish_with};
use crate::store::TileSink;

/// Tells a companion thread to stop, and wakes it.
#[derive(Debug, Default)]
pub struct Stop {
    stopped: Mutex<bool>,
    wake: Condvar,
}

impl Stop {
    /// A signal not given yet.
    pub fn new() -> Arc<Stop> {
        Arc::new(Stop::default())
    }

    /// Gives the signal.
    pub fn stop(&self) {
        *self.stopped.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.wake.notify_all();
    }

    /// Whether it was given.
    pub fn is_stopped(&self) -> bool {
        *self.stopped.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits `timeout` or until the signal; whether it was given.
    pub fn wait(&self, timeout: Duration) -> bool {
        let guard = self.stopped.lock().unwrap_or_else(|e| e.into_inner());
        let (guard, _) = self
            .wake
            .wait_timeout_while(guard, timeout, |stopped| !*stopped)
            .unwrap_or_else(|e| e.into_inner());
        *guard
    }
}

/// What a [`Publisher`] has done, read by `/metrics`.
#[derive(Debug, Default)]
pub struct PublisherStatus {
    /// The size of the store's checkpoint this publisher last wrote.
    pub published_size: AtomicU64,
    /// The database's durable size when last looked at.
    pub durable_size: AtomicU64,
    /// The size it publishes toward (durable, or finalized).
    pub target_size: AtomicU64,
    /// Publications completed.
    pub publications: AtomicU64,
    /// Publications that failed (each is retried after a backoff).
    pub failures: AtomicU64,
    /// Objects and bytes written.
    pub objects: AtomicU64,
    /// Bytes written.
    pub bytes: AtomicU64,
    /// Milliseconds the last completed publication took.
    pub last_millis: AtomicU64,
    /// The last failure's message.
    pub last_error: Mutex<Option<String>>,
}

impl PublisherStatus {
    /// The Prometheus text of these figures.
    pub fn render(&self, out: &mut String) {
        let load = |v: &AtomicU64| v.load(Ordering::Relaxed);
        let published = load(&self.published_size);
        let durable = load(&self.durable_size);
        let metrics = [
            (
                "cairn_publish_published_size",
                "gauge",
                "Leaves the tile store's checkpoint names (written by this server).",
                published,
            ),
            (
                "cairn_publish_durable_size",
                "gauge",
                "The database's durable size when the publisher last looked.",
                durable,
            ),
            (
                "cairn_publish_target_size",
                "gauge",
                "The size the publisher publishes toward (durable or finalized).",
                load(&self.target_size),
            ),
            (
                "cairn_publish_lag_leaves",
                "gauge",
                "Durable leaves not yet named by the published checkpoint.",
                durable.saturating_sub(published),
            ),
            (
                "cairn_publications_total",
                "counter",
                "Publications completed (tiles, then the checkpoint).",
                load(&self.publications),
            ),
            (
                "cairn_publish_failures_total",
                "counter",
                "Publications that failed after the store's retries (retried with backoff).",
                load(&self.failures),
            ),
            (
                "cairn_publish_objects_total",
                "counter",
                "Objects written to the tile store.",
                load(&self.objects),
            ),
            (
                "cairn_publish_bytes_total",
                "counter",
                "Bytes written to the tile store.",
                load(&self.bytes),
            ),
        ];
        for (name, kind, help, value) in metrics {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
            );
        }
        let name = "cairn_publish_last_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} How long the last completed publication took.\n# TYPE {name} gauge\n{name} {}",
            load(&self.last_millis) as f64 / 1e3
        );
    }
}

/// A [`PinHead`](crate::publish::PinHead) a publisher thread can own.
pub type PinHeadSend = dyn Fn(&TreeHead) -> Result<(), crate::publish::PinError> + Send;

/// Keeps a tile store up to date with a database.
pub struct Publisher {
    /// Where to publish.
    pub sink: Box<dyn TileSink>,
    /// The tree now, its durable size and the size to publish (the
    /// durable or the finalized size).
    pub source: Box<dyn Fn() -> (Arc<Snapshot>, u64, u64) + Send>,
    /// How often to look for new durable leaves.
    pub interval: Duration,
    /// The longest wait after failures (it doubles from `interval`).
    pub max_backoff: Duration,
    /// What it has done.
    pub status: Arc<PublisherStatus>,
    /// Signs the checkpoint (unsigned without a key).
    pub signer: Option<Arc<Signer>>,
    /// Makes a head final before the checkpoint names it
    /// ([`PublishOptions::before_checkpoint`]).
    pub pin: Option<Box<PinHeadSend>>,
}

impl std::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publisher")
            .field("sink", &self.sink.location())
            .field("interval", &self.interval)
            .field("signer", &self.signer)
            .field("pin", &self.pin.is_some())
            .finish()
    }
}

impl Publisher {
    /// Publishes whenever the target size moved, until `stop`; then once
    /// more, so that a graceful shutdown leaves the store at the last
    /// durable size.
    pub fn run(self, stop: &Stop) {
        let mut wait = Duration::ZERO;
        let mut published: Option<u64> = None;
        loop {
            let stopping = stop.wait(wait);
            wait = self.interval;
            let (snapshot, durable, target) = (self.source)();
            self.status.durable_size.store(durable, Ordering::Relaxed);
            self.status.target_size.store(target, Ordering::Relaxed);
            if published != Some(target) {
                let started = Instant::now();
                let options = PublishOptions {
                    signer: self.signer.as_deref(),
                    before_checkpoint: self
                        .pin
                        .as_ref()
                        .map(|pin| pin as &crate::publish::PinHead<'_>),
                };
                match publish_with(&snapshot, target, &*self.sink, &options) {
                    Ok(done) => {
                        published = Some(target);
                        let s = &self.status;
                        s.published_size.store(target, Ordering::Relaxed);
                        s.publications.fetch_add(1, Ordering::Relaxed);
                        s.objects.fetch_add(done.objects, Ordering::Relaxed);
                        s.bytes.fetch_add(done.bytes, Ordering::Relaxed);
                        s.last_millis
                            .store(started.elapsed().as_millis() as u64, Ordering::Relaxed);
                        tracing::debug!(size = target, objects = done.objects, "published");
                    }
                    Err(error) => {
                        self.status.failures.fetch_add(1, Ordering::Relaxed);
                        let message = error.to_string();
                        let level_error = matches!(
                            error,
                            PublishError::Foreign(_) | PublishError::WouldUnsign { .. }
                        );
                        if level_error {
                            tracing::error!(store = %self.sink.location(), error = %message, "publishing refused");
                        } else {
                            tracing::warn!(store = %self.sink.location(), error = %message, "publishing failed; retrying");
                        }
                        *self
                            .status
                            .last_error
                            .lock()
                            .unwrap_or_else(|e| e.into_inner()) = Some(message);
                        wait = backoff(
                            self.interval,
                            self.max_backoff,
                            self.status.failures.load(Ordering::Relaxed),
                        );
                    }
                }
            }
            if stopping {
                return;
            }
        }
    }
}

fn backoff(interval: Duration, max: Duration, failures: u64) -> Duration {
    let doubled = interval.saturating_mul(1u32 << failures.min(16) as u32);
    doubled.min(max).max(interval)
}

/// What a [`Follower`] has done, read by `/metrics`.
#[derive(Debug, Default)]
pub struct FollowerStatus {
    /// The upstream size adopted last.
    pub adopted_size: AtomicU64,
    /// Leaves adopted by this process.
    pub adopted_leaves: AtomicU64,
    /// Heads refused (forks, rewritten history, bad objects).
    pub refusals: AtomicU64,
    /// Looks at upstream that failed (unreachable).
    pub failures: AtomicU64,
    /// The size of the newest upstream head seen (adopted or not).
    pub upstream_size: AtomicU64,
    /// When the mirror last held upstream's head (a look that adopted
    /// everything upstream had), in milliseconds since the Unix epoch;
    /// 0 before the first.
    pub caught_up_unix_ms: AtomicU64,
    /// The last refusal or failure.
    pub last_error: Mutex<Option<String>>,
}

impl FollowerStatus {
    /// The Prometheus text of these figures.
    pub fn render(&self, out: &mut String) {
        let load = |v: &AtomicU64| v.load(Ordering::Relaxed);
        let metrics = [
            (
                "cairn_mirror_adopted_size",
                "gauge",
                "Leaves of the upstream head adopted last (verified).",
                load(&self.adopted_size),
            ),
            (
                "cairn_mirror_adopted_leaves_total",
                "counter",
                "Leaves adopted from upstream by this process.",
                load(&self.adopted_leaves),
            ),
            (
                "cairn_mirror_refusals_total",
                "counter",
                "Upstream heads refused: forks, rewritten history, wrong objects.",
                load(&self.refusals),
            ),
            (
                "cairn_mirror_failures_total",
                "counter",
                "Looks at upstream that failed (unreachable after retries).",
                load(&self.failures),
            ),
        ];
        for (name, kind, help, value) in metrics {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
            );
        }
        let lag = [
            (
                "cairn_mirror_upstream_size",
                "Leaves of the newest upstream head seen (adopted or not).",
                load(&self.upstream_size),
            ),
            (
                "cairn_mirror_lag_leaves",
                "Leaves of the newest upstream head seen that the mirror has not adopted.",
                self.lag_leaves(),
            ),
        ];
        for (name, help, value) in lag {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
            );
        }
        let name = "cairn_mirror_caught_up_timestamp_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} When the mirror last held upstream's newest head (Unix seconds; 0: not yet).\n# TYPE {name} gauge\n{name} {}",
            load(&self.caught_up_unix_ms) as f64 / 1e3
        );
    }

    /// Leaves of the newest upstream head seen not adopted yet.
    pub fn lag_leaves(&self) -> u64 {
        let upstream = self.upstream_size.load(Ordering::Relaxed);
        upstream.saturating_sub(self.adopted_size.load(Ordering::Relaxed))
    }
}

/// An [`Upstream`] that records the size of every head it answers, so
/// that the lag is known while a catch-up fails part of the way.
struct Watched<'a> {
    upstream: &'a mut dyn Upstream,
    seen: &'a AtomicU64,
}

impl Upstream for Watched<'_> {
    fn describe(&self) -> String {
        self.upstream.describe()
    }

    fn head(&mut self) -> Result<crate::Checkpoint, MirrorError> {
        let head = self.upstream.head()?;
        self.seen.store(head.head.size, Ordering::Relaxed);
        Ok(head)
    }

    fn leaves(
        &mut self,
        head: &crate::Checkpoint,
        from: u64,
        to: u64,
    ) -> Result<Vec<cairn_core::Hash>, MirrorError> {
        self.upstream.leaves(head, from, to)
    }

    fn prove_prefix(
        &mut self,
        new: &crate::Checkpoint,
        old: &TreeHead,
    ) -> Result<Result<(), crate::mirror::NotAPrefix>, MirrorError> {
        self.upstream.prove_prefix(new, old)
    }

    fn prove_extends(
        &mut self,
        new: &crate::Checkpoint,
        adopted: &cairn_core::Snapshot,
    ) -> Result<Result<(), crate::mirror::NotAPrefix>, MirrorError> {
        self.upstream.prove_extends(new, adopted)
    }

    fn chunk_hint(&self, head: &crate::Checkpoint) -> Option<u64> {
        self.upstream.chunk_hint(head)
    }

    fn fetch_ahead(&mut self, head: &crate::Checkpoint, from: u64, to: u64, chunk: u64) {
        self.upstream.fetch_ahead(head, from, to, chunk);
    }

    fn check_head(
        &mut self,
        head: &crate::Checkpoint,
    ) -> Result<Result<(), MirrorError>, MirrorError> {
        self.upstream.check_head(head)
    }

    fn leaves_object(&self, from: u64, to: u64) -> Option<String> {
        self.upstream.leaves_object(from, to)
    }
}

fn unix_ms_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Keeps a mirror up to date with its upstream.
pub struct Follower {
    /// What it follows.
    pub upstream: Box<dyn Upstream + Send>,
    /// Where adopted leaves go.
    pub target: Box<dyn MirrorTarget + Send>,
    /// Leaves verified and adopted at once.
    pub chunk_leaves: u64,
    /// How often to look at upstream.
    pub interval: Duration,
    /// The longest wait after failures.
    pub max_backoff: Duration,
    /// What it has done.
    pub status: Arc<FollowerStatus>,
}

impl std::fmt::Debug for Follower {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Follower")
            .field("upstream", &self.upstream.describe())
            .finish()
    }
}

impl Follower {
    /// Catches up every `interval` until `stop`. A refused head is logged
    /// as an error and counted, and never adopted; the follower keeps
    /// looking (upstream may be repaired) with a backoff.
    pub fn run(mut self, stop: &Stop) {
        let mut wait = Duration::ZERO;
        let mut failures = 0u64;
        while !stop.wait(wait) {
            wait = self.interval;
            let mut watched = Watched {
                upstream: &mut *self.upstream,
                seen: &self.status.upstream_size,
            };
            match catch_up(&mut watched, &mut *self.target, self.chunk_leaves) {
                Ok(done) => {
                    failures = 0;
                    self.status
                        .caught_up_unix_ms
                        .store(unix_ms_now(), Ordering::Relaxed);
                    self.status
                        .adopted_size
                        .store(done.head.size, Ordering::Relaxed);
                    self.status
                        .adopted_leaves
                        .fetch_add(done.adopted, Ordering::Relaxed);
                    if done.adopted > 0 {
                        tracing::info!(
                            size = done.head.size,
                            adopted = done.adopted,
                            "mirror caught up"
                        );
                    }
                }
                Err(error) => {
                    failures += 1;
                    let message = error.to_string();
                    match error {
                        MirrorError::Refused { .. } => {
                            self.status.refusals.fetch_add(1, Ordering::Relaxed);
                            tracing::error!(upstream = %self.upstream.describe(), error = %message, "upstream head refused; not adopted");
                        }
                        _ => {
                            self.status.failures.fetch_add(1, Ordering::Relaxed);
                            tracing::warn!(upstream = %self.upstream.describe(), error = %message, "mirror could not catch up; retrying");
                        }
                    }
                    *self
                        .status
                        .last_error
                        .lock()
                        .unwrap_or_else(|e| e.into_inner()) = Some(message);
                    wait = backoff(self.interval, self.max_backoff, failures);
                }
            }
        }
    }
}
