//! Counters and latency histograms, rendered in the Prometheus text format
//! (version 0.0.4) by hand: lock-free atomics on the request path, one
//! read-mostly map for the per-route request histograms.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use cairn_db::{Database, StoreHealth};
use parking_lot::RwLock;

use crate::listener::ConnectionStats;

/// Upper bounds of the histogram buckets, in seconds (the last bucket,
/// `+Inf`, is implied).
const BOUNDS_SECONDS: [f64; 17] = [
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0,
];

/// A latency histogram. Buckets are stored per bucket (not cumulative) so
/// that one observation is one increment; rendering accumulates them.
#[derive(Debug, Default)]
pub(crate) struct Histogram {
    buckets: [AtomicU64; BOUNDS_SECONDS.len() + 1],
    sum_nanos: AtomicU64,
}

impl Histogram {
    pub fn observe(&self, elapsed: Duration) {
        let seconds = elapsed.as_secs_f64();
        let bucket = BOUNDS_SECONDS
            .iter()
            .position(|&bound| seconds <= bound)
            .unwrap_or(BOUNDS_SECONDS.len());
        self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// Appends the `_bucket`, `_sum` and `_count` lines; `labels` is empty
    /// or `key="value",...` without braces.
    fn render(&self, name: &str, labels: &str, out: &mut String) {
        let separator = if labels.is_empty() { "" } else { "," };
        let mut cumulative = 0;
        for (bucket, count) in self.buckets.iter().enumerate() {
            cumulative += count.load(Ordering::Relaxed);
            let bound = BOUNDS_SECONDS
                .get(bucket)
                .map_or_else(|| "+Inf".to_owned(), |b| b.to_string());
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels}{separator}le=\"{bound}\"}} {cumulative}"
            );
        }
        let braces = if labels.is_empty() {
            String::new()
        } else {
            format!("{{{labels}}}")
        };
        let sum = self.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9;
        let _ = writeln!(out, "{name}_sum{braces} {sum}");
        // The count is the +Inf bucket, so the two always agree in one scrape.
        let _ = writeln!(out, "{name}_count{braces} {cumulative}");
    }
}

/// A request's labels: method, route template (or "unmatched"), status.
type RequestKey = (&'static str, &'static str, u16);

/// Everything the server counts.
#[derive(Debug, Default)]
pub(crate) struct Metrics {
    /// Append requests acknowledged (durable).
    pub appends: AtomicU64,
    /// Leaves acknowledged.
    pub leaves: AtomicU64,
    /// Bytes of append request bodies read (accepted or not).
    pub body_bytes: AtomicU64,
    /// Append requests refused for duplicates, and the values they held.
    pub duplicate_batches: AtomicU64,
    pub duplicate_values: AtomicU64,
    /// Appends that failed in the database (storage faults, timeouts).
    pub append_failures: AtomicU64,
    /// The append call: duplicate check, set insert, memory copy.
    pub append_seconds: Histogram,
    /// From the append to the release of its durability token: the group
    /// commit (write and fdatasync) as a request sees it.
    pub durable_wait_seconds: Histogram,
    /// Tagged appends refused because their block did not follow the last.
    pub block_order_refusals: AtomicU64,
    /// Appends made but removed by a rollback before their answer (409).
    pub rolled_back_appends: AtomicU64,
    /// Rollbacks done, the durable leaves they removed, and their time.
    pub rollbacks: AtomicU64,
    pub rolled_back_leaves: AtomicU64,
    pub rollback_seconds: Histogram,
    /// Finalize requests done.
    pub finalizations: AtomicU64,
    /// Absence proofs served (an indexed database's).
    pub absence_proofs: AtomicU64,
    /// Checkpoints written while serving (automatic and on shutdown).
    pub checkpoints: AtomicU64,
    /// How long each of them took.
    pub checkpoint_seconds: Histogram,
    requests: RwLock<BTreeMap<RequestKey, Arc<Histogram>>>,
    /// The background publisher's figures, when it runs.
    pub publisher: std::sync::OnceLock<Arc<cairn_tiles::PublisherStatus>>,
    /// The mirror follower's figures, when it runs.
    pub follower: std::sync::OnceLock<Arc<cairn_tiles::FollowerStatus>>,
    /// A read-only server's refreshes, when it follows a writer.
    pub reader: std::sync::OnceLock<Arc<crate::reader::ReaderStatus>>,
    /// The connections and the limits they are served within.
    pub connections: Arc<ConnectionStats>,
}

impl Metrics {
    /// Metrics of another tree of the same server: its own counters, the
    /// server's connections.
    pub fn sharing_connections(front: &Metrics) -> Metrics {
        Metrics {
            connections: Arc::clone(&front.connections),
            ..Metrics::default()
        }
    }

    /// One checkpoint written (the database's observer calls this).
    pub fn observe_checkpoint(&self, elapsed: Duration) {
        self.checkpoints.fetch_add(1, Ordering::Relaxed);
        self.checkpoint_seconds.observe(elapsed);
    }

    pub fn observe_request(&self, key: RequestKey, elapsed: Duration) {
        if let Some(histogram) = self.requests.read().get(&key) {
            histogram.observe(elapsed);
            return;
        }
        let histogram = Arc::clone(self.requests.write().entry(key).or_default());
        histogram.observe(elapsed);
    }

    /// The text exposition, with the database's gauges read now (an
    /// indexed database's in its own names: [`Metrics::render_indexed`]).
    pub fn render(&self, db: &Database) -> String {
        if db.kind() == cairn_core::TreeKind::Indexed {
            return self.render_indexed(db);
        }
        let mut out = String::with_capacity(16 << 10);
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        counter(
            &mut out,
            "cairn_appends_total",
            "Append requests acknowledged as durable.",
            load(&self.appends),
        );
        counter(
            &mut out,
            "cairn_leaves_appended_total",
            "Leaves acknowledged as durable.",
            load(&self.leaves),
        );
        self.render_write_counters(&mut out);
        counter(
            &mut out,
            "cairn_block_order_refusals_total",
            "Tagged appends refused (409) because their block number did not follow the last tagged one.",
            load(&self.block_order_refusals),
        );
        counter(
            &mut out,
            "cairn_rolled_back_appends_total",
            "Appends removed by a rollback before they were acknowledged (409).",
            load(&self.rolled_back_appends),
        );
        let stats = db.stats();
        gauge(
            &mut out,
            "cairn_tree_size",
            "Leaves in the tree (visible, durable or not).",
            stats.store.size,
        );
        gauge(
            &mut out,
            "cairn_durable_size",
            "Leaves durable on disk (what reads answer for).",
            stats.store.durable,
        );
        gauge(
            &mut out,
            "cairn_checkpoint_size",
            "Leaves covered by the last checkpoint.",
            stats.store.checkpoint_size,
        );
        gauge(
            &mut out,
            "cairn_checkpoint_number",
            "The number of the last checkpoint on disk (it survives restarts; 0: none).",
            stats.store.checkpoint_number,
        );
        gauge(
            &mut out,
            "cairn_finalized_size",
            "Leaves below which a rollback is refused.",
            stats.store.finalized,
        );
        gauge(
            &mut out,
            "cairn_tagged_heads",
            "Block-tagged heads kept (durable or not).",
            stats.store.tagged_heads,
        );
        self.render_histograms(&mut out);
        if let Some(status) = self.publisher.get() {
            // The lag against the durable size now, not when the publisher
            // last looked (it may be stuck retrying a dead store).
            status
                .durable_size
                .store(stats.store.durable, Ordering::Relaxed);
            status.render(&mut out);
        }
        if let Some(status) = self.follower.get() {
            status.render(&mut out);
        }
        if let Some(status) = self.reader.get() {
            status.render(&mut out);
        }
        self.render_server(&mut out, &db.health());
        crate::process::render(&mut out);
        crate::build_info::BUILD.render(&mut out);
        out
    }

    /// The text exposition of an indexed database's server: the counters
    /// and histograms the lean server keeps (block tags aside: an indexed
    /// database has none), and its gauges in the indexed tree's sizes
    /// (the guard is leaf 0: `n` values make size `n + 1`).
    fn render_indexed(&self, db: &Database) -> String {
        let mut out = String::with_capacity(16 << 10);
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        counter(
            &mut out,
            "cairn_indexed_inserts_total",
            "Insert requests acknowledged as durable.",
            load(&self.appends),
        );
        counter(
            &mut out,
            "cairn_indexed_values_total",
            "Values acknowledged as durable.",
            load(&self.leaves),
        );
        counter(
            &mut out,
            "cairn_indexed_absence_proofs_total",
            "Absence proofs served.",
            load(&self.absence_proofs),
        );
        self.render_write_counters(&mut out);
        // Read in this order so that the lag is the one this scrape found:
        // the head applies what became durable.
        let stats = db.stats();
        let applied = db.applied_size();
        let head = db.head();
        let durable = stats.store.durable + 1;
        gauge(
            &mut out,
            "cairn_indexed_size",
            "Leaves of the indexed tree (the guard and the durable values): the head reads answer for.",
            head.size,
        );
        gauge(
            &mut out,
            "cairn_indexed_values",
            "Values in the indexed tree (durable).",
            head.size - 1,
        );
        gauge(
            &mut out,
            "cairn_indexed_logged_size",
            "The tree's size once every value logged (durable or not) is applied.",
            stats.store.size + 1,
        );
        gauge(
            &mut out,
            "cairn_indexed_durable_size",
            "The tree's size once every durable value is applied.",
            durable,
        );
        gauge(
            &mut out,
            "cairn_indexed_pending_values",
            "Values logged but not yet durable (waiting for the group commit).",
            stats.store.size.saturating_sub(stats.store.durable),
        );
        gauge(
            &mut out,
            "cairn_indexed_apply_lag_values",
            "Values durable but not yet applied to the tree when this scrape began (the next read applies them).",
            durable.saturating_sub(applied),
        );
        gauge(
            &mut out,
            "cairn_finalized_size",
            "Leaves below which a rollback is refused (at least 1: the guard).",
            db.finalized_size(),
        );
        gauge(
            &mut out,
            "cairn_checkpoint_values",
            "Values covered by the last checkpoint of the log.",
            stats.store.checkpoint_size,
        );
        gauge(
            &mut out,
            "cairn_checkpoint_number",
            "The number of the last checkpoint on disk (it survives restarts; 0: none).",
            stats.store.checkpoint_number,
        );
        self.render_histograms(&mut out);
        if let Some(status) = self.reader.get() {
            status.render(&mut out);
        }
        self.render_server(&mut out, &db.health());
        crate::process::render(&mut out);
        crate::build_info::BUILD.render(&mut out);
        out
    }

    /// The connections, the limits and the store's health, for both
    /// servers.
    fn render_server(&self, out: &mut String, health: &StoreHealth) {
        let c = &*self.connections;
        let load = |n: &AtomicU64| n.load(Ordering::Relaxed);
        let seconds = |n: &AtomicU64| load(n) as f64 / 1e3;
        gauge(
            out,
            "cairn_http_connections_open",
            "Connections open now.",
            c.open(),
        );
        gauge(
            out,
            "cairn_http_connections_limit",
            "Connections allowed open now (the bound, lowered as the database's files take descriptors); more are answered 503.",
            load(&c.bound),
        );
        gauge(
            out,
            "cairn_http_connections_max",
            "The bound on connections set at start (--max-connections, or what the open-file limit left).",
            load(&c.max),
        );
        gauge(
            out,
            "cairn_reserved_descriptors",
            "File descriptors kept out of the connections' reach for the database's own files (0: the limit is unknown).",
            load(&c.reserved),
        );
        counter(
            out,
            "cairn_http_connections_accepted_total",
            "Connections accepted.",
            load(&c.accepted),
        );
        counter(
            out,
            "cairn_http_connections_refused_total",
            "Connections answered 503 with Retry-After because as many as allowed were open.",
            load(&c.refused),
        );
        counter(
            out,
            "cairn_http_connections_dropped_total",
            "Connections over the bound closed without an answer (too many being refused at once).",
            load(&c.dropped),
        );
        counter(
            out,
            "cairn_http_header_read_timeouts_total",
            "Connections closed because a request's headers did not arrive in time (slow or silent clients).",
            load(&c.header_timeouts),
        );
        counter(
            out,
            "cairn_http_idle_timeouts_total",
            "Answers not read (nothing moved for the idle timeout while writing one: the connection is closed) and request bodies that stalled as long (refused with 400).",
            load(&c.idle_timeouts),
        );
        counter(
            out,
            "cairn_http_accept_errors_total",
            "Failed accepts (no descriptor left, say); the server pauses 50 ms and tries again.",
            load(&c.accept_errors),
        );
        for (name, help, value) in [
            (
                "cairn_http_header_read_timeout_seconds",
                "How long a request's headers may take to arrive (--header-read-timeout).",
                seconds(&c.header_read_timeout_ms),
            ),
            (
                "cairn_http_idle_timeout_seconds",
                "How long a connection may move nothing (--idle-timeout).",
                seconds(&c.idle_timeout_ms),
            ),
            (
                "cairn_durability_timeout_seconds",
                "How long an append waits to become durable before answering 503 (--durability-timeout).",
                seconds(&c.durability_timeout_ms),
            ),
        ] {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
            );
        }
        gauge(
            out,
            "cairn_max_body_bytes",
            "Request bodies above this many bytes are refused with 413 (--max-body-bytes).",
            load(&c.max_body_bytes),
        );
        gauge(
            out,
            "cairn_max_batch_leaves",
            "Batches above this many leaves are refused with 413 (--max-batch-leaves).",
            load(&c.max_batch_leaves),
        );
        gauge(
            out,
            "cairn_max_leaves_per_read",
            "GET /v1/leaves answers at most this many leaves (--max-leaves-per-read).",
            load(&c.max_leaves_per_read),
        );
        gauge(
            out,
            "cairn_acknowledgements_stopped",
            "1 once the database stopped acknowledging writes (a failed log write or sync): restart it.",
            u64::from(health.failure.is_some()),
        );
        gauge(
            out,
            "cairn_checkpoint_failing",
            "Failed checkpoints in a row (0: the last one was written); appends go on and the checkpoint is retried.",
            health.checkpoint.as_ref().map_or(0, |f| f.consecutive),
        );
        counter(
            out,
            "cairn_checkpoint_failures_total",
            "Checkpoints (and rollback or finalize publications) that failed since the database was opened.",
            health.checkpoint_failures,
        );
        counter(
            out,
            "cairn_file_events_total",
            "Files of the database found removed or replaced under the server (each written again from what it holds, if it could).",
            health.file_events_total,
        );
        gauge(
            out,
            "cairn_files_unrestored",
            "Files of the database removed or replaced under the server and not yet written again (do not restart).",
            health.unrestored.len() as u64,
        );
    }

    /// The counters of writes both servers keep.
    fn render_write_counters(&self, out: &mut String) {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        counter(
            out,
            "cairn_append_body_bytes_total",
            "Bytes of append request bodies read.",
            load(&self.body_bytes),
        );
        counter(
            out,
            "cairn_duplicate_batches_total",
            "Append requests refused because they held duplicates (409).",
            load(&self.duplicate_batches),
        );
        counter(
            out,
            "cairn_duplicates_rejected_total",
            "Duplicate values in refused append requests.",
            load(&self.duplicate_values),
        );
        counter(
            out,
            "cairn_append_failures_total",
            "Appends that failed in the database (storage fault, timeout, full).",
            load(&self.append_failures),
        );
        counter(
            out,
            "cairn_rollbacks_total",
            "Rollbacks done (POST /v1/rollback).",
            load(&self.rollbacks),
        );
        counter(
            out,
            "cairn_rolled_back_leaves_total",
            "Durable leaves removed by rollbacks.",
            load(&self.rolled_back_leaves),
        );
        counter(
            out,
            "cairn_finalizations_total",
            "Finalize requests done (POST /v1/finalize).",
            load(&self.finalizations),
        );
        counter(
            out,
            "cairn_checkpoints_total",
            "Checkpoints written while serving (automatic and on shutdown).",
            load(&self.checkpoints),
        );
    }

    /// The histograms both servers keep, request latency included.
    fn render_histograms(&self, out: &mut String) {
        let histograms = [
            (
                "cairn_append_seconds",
                "The append call: duplicate check, set insert and memory copy.",
                &self.append_seconds,
            ),
            (
                "cairn_durable_wait_seconds",
                "From an append to its leaves being durable (group commit: write and fdatasync).",
                &self.durable_wait_seconds,
            ),
            (
                "cairn_rollback_seconds",
                "Rollbacks, from the request's turn to the rollback being durable.",
                &self.rollback_seconds,
            ),
            (
                "cairn_checkpoint_seconds",
                "Checkpoints written while serving (automatic and on shutdown), the nullifier set's included.",
                &self.checkpoint_seconds,
            ),
        ];
        for (name, help, histogram) in histograms {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
            histogram.render(name, "", out);
        }
        let name = "cairn_http_request_duration_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} Request latency by method, route and status.\n# TYPE {name} histogram"
        );
        for ((method, route, status), histogram) in self.requests.read().iter() {
            let labels = format!("method=\"{method}\",route=\"{route}\",status=\"{status}\"");
            histogram.render(name, &labels, out);
        }
    }
}

fn counter(out: &mut String, name: &str, help: &str, value: u64) {
    let _ = writeln!(
        out,
        "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}"
    );
}

fn gauge(out: &mut String, name: &str, help: &str, value: u64) {
    let _ = writeln!(
        out,
        "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
    );
}

/// The families of the server as a whole, not of one tree: a server of
/// several trees renders them once, from the front tree's metrics, without
/// a `tree` label.
const SERVER_FAMILIES: &[&str] = &[
    "cairn_http_",
    "cairn_reserved_descriptors",
    "cairn_durability_timeout_seconds",
    "cairn_max_",
    "cairn_build_info",
    "cairn_reader_",
    "cairn_publish",
    "cairn_mirror_",
    "process_",
];

fn is_server_family(name: &str) -> bool {
    SERVER_FAMILIES
        .iter()
        .any(|prefix| name.starts_with(prefix))
}

/// Several trees' expositions merged into one: each family once (its
/// `HELP` and `TYPE` lines, then every tree's samples labelled
/// `tree="name"`), the server's own families once, unlabelled.
#[derive(Debug, Default)]
pub(crate) struct Families {
    /// Family name, its HELP and TYPE lines, its samples; in first-seen
    /// order.
    families: Vec<(String, String, Vec<String>)>,
}

impl Families {
    /// Adds one tree's exposition; `front` is the tree whose metrics hold
    /// the server's own families.
    pub fn add(&mut self, text: &str, tree: &str, front: bool) {
        let mut current: Option<usize> = None;
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                let name = rest.split(' ').next().unwrap_or_default();
                current = self.family(name);
                if let Some(index) = current
                    && self.families[index].1.is_empty()
                {
                    self.families[index].1.push_str(line);
                    self.families[index].1.push('\n');
                }
                continue;
            }
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let name = rest.split(' ').next().unwrap_or_default();
                current = self.family(name);
                if let Some(index) = current
                    && !self.families[index].1.contains("# TYPE ")
                {
                    self.families[index].1.push_str(line);
                    self.families[index].1.push('\n');
                }
                continue;
            }
            let Some(index) = current else { continue };
            let server = is_server_family(&self.families[index].0);
            if server {
                if front {
                    self.families[index].2.push(line.to_owned());
                }
                continue;
            }
            self.families[index].2.push(labelled(line, tree));
        }
    }

    fn family(&mut self, name: &str) -> Option<usize> {
        if let Some(index) = self.families.iter().position(|(n, _, _)| n == name) {
            return Some(index);
        }
        self.families
            .push((name.to_owned(), String::new(), Vec::new()));
        Some(self.families.len() - 1)
    }

    /// The merged exposition.
    pub fn finish(self) -> String {
        let mut out = String::with_capacity(32 << 10);
        for (_, header, samples) in self.families {
            if samples.is_empty() && header.is_empty() {
                continue;
            }
            out.push_str(&header);
            for sample in samples {
                out.push_str(&sample);
                out.push('\n');
            }
        }
        out
    }
}

/// A sample line with `tree="name"` as its first label (tree names are
/// `[a-z0-9._-]`: nothing to escape).
fn labelled(line: &str, tree: &str) -> String {
    match line.find(['{', ' ']) {
        Some(at) if line[at..].starts_with('{') => {
            let (name, rest) = line.split_at(at);
            let rest = &rest[1..];
            if rest.starts_with('}') {
                format!("{name}{{tree=\"{tree}\"{rest}")
            } else {
                format!("{name}{{tree=\"{tree}\",{rest}")
            }
        }
        Some(at) => {
            let (name, rest) = line.split_at(at);
            format!("{name}{{tree=\"{tree}\"}}{rest}")
        }
        None => line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_families_label_tree_samples_and_keep_server_families_once() {
        let one = "# HELP cairn_tree_size Leaves.\n# TYPE cairn_tree_size gauge\ncairn_tree_size 3\n# HELP cairn_append_seconds S.\n# TYPE cairn_append_seconds histogram\ncairn_append_seconds_bucket{le=\"0.1\"} 1\ncairn_append_seconds_sum 0.5\n# HELP process_open_fds F.\n# TYPE process_open_fds gauge\nprocess_open_fds 9\n";
        let two = one.replace("cairn_tree_size 3", "cairn_tree_size 4");
        let mut families = Families::default();
        families.add(one, "notes", true);
        families.add(&two, "nullifiers", false);
        let out = families.finish();
        assert_eq!(
            out.matches("# TYPE cairn_tree_size gauge").count(),
            1,
            "{out}"
        );
        assert!(
            out.contains(
                "cairn_tree_size{tree=\"notes\"} 3\ncairn_tree_size{tree=\"nullifiers\"} 4\n"
            ),
            "{out}"
        );
        assert!(
            out.contains("cairn_append_seconds_bucket{tree=\"nullifiers\",le=\"0.1\"} 1\n"),
            "{out}"
        );
        assert!(
            out.contains("cairn_append_seconds_sum{tree=\"notes\"} 0.5\n"),
            "{out}"
        );
        assert_eq!(out.matches("process_open_fds").count(), 3, "{out}");
        assert!(out.contains("\nprocess_open_fds 9\n"), "{out}");
    }

    #[test]
    fn histogram_buckets_are_cumulative_and_agree_with_the_count() {
        let histogram = Histogram::default();
        for micros in [10, 80, 80, 3_000, 20_000_000] {
            histogram.observe(Duration::from_micros(micros));
        }
        let mut out = String::new();
        histogram.render("x", "a=\"b\"", &mut out);
        assert!(
            out.contains("x_bucket{a=\"b\",le=\"0.00005\"} 1\n"),
            "{out}"
        );
        assert!(out.contains("x_bucket{a=\"b\",le=\"0.0001\"} 3\n"), "{out}");
        assert!(out.contains("x_bucket{a=\"b\",le=\"0.005\"} 4\n"), "{out}");
        assert!(out.contains("x_bucket{a=\"b\",le=\"10\"} 4\n"), "{out}");
        assert!(out.contains("x_bucket{a=\"b\",le=\"+Inf\"} 5\n"), "{out}");
        assert!(out.contains("x_count{a=\"b\"} 5\n"), "{out}");
        assert!(out.contains("x_sum{a=\"b\"} 20.00317\n"), "{out}");
    }
}
