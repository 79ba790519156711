//! What a follower reports about itself, shared with whoever reads it (the
//! CLI's progress lines, the metrics endpoint): atomics written by the
//! follower's one thread, read at any time. Health is derived here: a
//! follower is stale when the node's head has not advanced for longer
//! than the stale threshold.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The follower's counters and gauges.
#[derive(Debug)]
pub struct Metrics {
    started: Instant,
    stale_after: Duration,
    /// The node's head block.
    pub node_head_block: AtomicU64,
    /// The node head's timestamp, seconds.
    pub node_head_timestamp: AtomicU64,
    /// Milliseconds since `started` when the node's head last advanced.
    node_advanced_ms: AtomicU64,
    /// The last block ingested (every block up to it is in the database).
    pub ingested_block: AtomicU64,
    /// Its timestamp, seconds (0: not known yet).
    pub ingested_timestamp: AtomicU64,
    /// The last block the database holds as final.
    pub finalized_block: AtomicU64,
    /// Leaves in the database.
    pub leaves: AtomicU64,
    /// Values ingested since the start (re-ingested ones after a reorg too).
    pub values_total: AtomicU64,
    /// Reorganisations seen.
    pub reorgs_total: AtomicU64,
    /// Blocks rolled back by the last reorganisation.
    pub reorg_depth_last: AtomicU64,
    /// Blocks rolled back by the deepest one.
    pub reorg_depth_max: AtomicU64,
    /// Roots compared with the contract's.
    pub root_checks_total: AtomicU64,
    /// Requests to the node.
    pub rpc_requests_total: AtomicU64,
    /// Requests retried.
    pub rpc_retries_total: AtomicU64,
    /// Milliseconds spent waiting on the node.
    pub rpc_wait_ms_total: AtomicU64,
}

/// A reading of [`Metrics`], with the derived lag and health.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Status {
    /// The node's head block.
    pub node_head_block: u64,
    /// The last block ingested.
    pub ingested_block: u64,
    /// Blocks behind the node's head.
    pub lag_blocks: u64,
    /// Seconds between the node head's timestamp and the ingested block's
    /// (`None` until a timestamp is known).
    pub lag_seconds: Option<u64>,
    /// The last block the database holds as final.
    pub finalized_block: u64,
    /// Leaves in the database.
    pub leaves: u64,
    /// Values ingested since the start.
    pub values_total: u64,
    /// Reorganisations seen.
    pub reorgs_total: u64,
    /// Depth of the last one.
    pub reorg_depth_last: u64,
    /// Depth of the deepest one.
    pub reorg_depth_max: u64,
    /// Roots compared with the contract's.
    pub root_checks_total: u64,
    /// Seconds since the node's head last advanced.
    pub node_idle_seconds: f64,
    /// Whether that is longer than the stale threshold.
    pub stale: bool,
}

impl Metrics {
    /// Fresh metrics; stale after `stale_after` without a new node head.
    pub fn new(stale_after: Duration) -> Metrics {
        let zero = || AtomicU64::new(0);
        Metrics {
            started: Instant::now(),
            stale_after,
            node_head_block: zero(),
            node_head_timestamp: zero(),
            node_advanced_ms: zero(),
            ingested_block: zero(),
            ingested_timestamp: zero(),
            finalized_block: zero(),
            leaves: zero(),
            values_total: zero(),
            reorgs_total: zero(),
            reorg_depth_last: zero(),
            reorg_depth_max: zero(),
            root_checks_total: zero(),
            rpc_requests_total: zero(),
            rpc_retries_total: zero(),
            rpc_wait_ms_total: zero(),
        }
    }

    /// Records the node's head: its advance resets the stale clock.
    pub fn node_head(&self, block: u64, timestamp: u64) {
        let before = self.node_head_block.swap(block, Ordering::Relaxed);
        self.node_head_timestamp.store(timestamp, Ordering::Relaxed);
        if block != before || self.node_advanced_ms.load(Ordering::Relaxed) == 0 {
            self.node_advanced_ms
                .store(self.elapsed_ms().max(1), Ordering::Relaxed);
        }
    }

    /// Records a reorganisation of `depth` blocks.
    pub fn reorg(&self, depth: u64) {
        self.reorgs_total.fetch_add(1, Ordering::Relaxed);
        self.reorg_depth_last.store(depth, Ordering::Relaxed);
        self.reorg_depth_max.fetch_max(depth, Ordering::Relaxed);
    }

    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// A consistent-enough reading (each value atomic, not all together).
    pub fn status(&self) -> Status {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let head = get(&self.node_head_block);
        let ingested = get(&self.ingested_block);
        let (head_time, ingested_time) = (
            get(&self.node_head_timestamp),
            get(&self.ingested_timestamp),
        );
        let advanced = get(&self.node_advanced_ms);
        let idle_ms = if advanced == 0 {
            self.elapsed_ms()
        } else {
            self.elapsed_ms().saturating_sub(advanced)
        };
        let node_idle_seconds = idle_ms as f64 / 1000.0;
        Status {
            node_head_block: head,
            ingested_block: ingested,
            lag_blocks: head.saturating_sub(ingested),
            lag_seconds: (ingested_time > 0).then(|| head_time.saturating_sub(ingested_time)),
            finalized_block: get(&self.finalized_block),
            leaves: get(&self.leaves),
            values_total: get(&self.values_total),
            reorgs_total: get(&self.reorgs_total),
            reorg_depth_last: get(&self.reorg_depth_last),
            reorg_depth_max: get(&self.reorg_depth_max),
            root_checks_total: get(&self.root_checks_total),
            node_idle_seconds,
            stale: node_idle_seconds >= self.stale_after.as_secs_f64(),
        }
    }

    /// The Prometheus text exposition of the metrics.
    pub fn prometheus(&self) -> String {
        let status = self.status();
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut out = String::new();
        let mut gauge = |name: &str, help: &str, kind: &str, value: String| {
            out.push_str(&format!(
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n"
            ));
        };
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        for (name, help, kind, value) in [
            (
                "cairn_follow_node_head_block",
                "the node's head block",
                "gauge",
                status.node_head_block.to_string(),
            ),
            (
                "cairn_follow_ingested_block",
                "the last block whose events are in the database",
                "gauge",
                status.ingested_block.to_string(),
            ),
            (
                "cairn_follow_lag_blocks",
                "blocks the database is behind the node's head",
                "gauge",
                status.lag_blocks.to_string(),
            ),
            (
                "cairn_follow_lag_seconds",
                "seconds between the node head's timestamp and the last ingested block's",
                "gauge",
                status
                    .lag_seconds
                    .map_or_else(|| "NaN".to_owned(), |s| s.to_string()),
            ),
            (
                "cairn_follow_finalized_block",
                "the last block the database holds as final",
                "gauge",
                status.finalized_block.to_string(),
            ),
            (
                "cairn_follow_leaves",
                "leaves in the database",
                "gauge",
                status.leaves.to_string(),
            ),
            (
                "cairn_follow_values_total",
                "values ingested since the start, re-ingested ones included",
                "counter",
                status.values_total.to_string(),
            ),
            (
                "cairn_follow_reorgs_total",
                "chain reorganisations rolled back",
                "counter",
                status.reorgs_total.to_string(),
            ),
            (
                "cairn_follow_reorg_depth_last",
                "blocks rolled back by the last reorganisation",
                "gauge",
                status.reorg_depth_last.to_string(),
            ),
            (
                "cairn_follow_reorg_depth_max",
                "blocks rolled back by the deepest reorganisation",
                "gauge",
                status.reorg_depth_max.to_string(),
            ),
            (
                "cairn_follow_root_checks_total",
                "roots compared with the contract's",
                "counter",
                status.root_checks_total.to_string(),
            ),
            (
                "cairn_follow_rpc_requests_total",
                "requests to the node",
                "counter",
                get(&self.rpc_requests_total).to_string(),
            ),
            (
                "cairn_follow_rpc_retries_total",
                "requests to the node retried",
                "counter",
                get(&self.rpc_retries_total).to_string(),
            ),
            (
                "cairn_follow_rpc_wait_seconds_total",
                "seconds spent waiting on the node",
                "counter",
                format!("{:.3}", get(&self.rpc_wait_ms_total) as f64 / 1000.0),
            ),
            (
                "cairn_follow_node_idle_seconds",
                "seconds since the node's head last advanced",
                "gauge",
                format!("{:.3}", status.node_idle_seconds),
            ),
            (
                "cairn_follow_stale",
                "1 when the node's head has not advanced for longer than the stale threshold",
                "gauge",
                u8::from(status.stale).to_string(),
            ),
            (
                "cairn_follow_scrape_timestamp_seconds",
                "when this was read",
                "gauge",
                now.to_string(),
            ),
        ] {
            gauge(name, help, kind, value);
        }
        out
    }
}

/// Serves `GET /metrics` (Prometheus text) and `GET /health` (200 `ok`, or
/// 503 `stale` when the node has stopped advancing) on `addr`, from a
/// thread of its own, for as long as the process runs. Returns the bound
/// address (port 0 picks one).
pub fn serve(addr: SocketAddr, metrics: Arc<Metrics>) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr)?;
    let bound = listener.local_addr()?;
    std::thread::Builder::new()
        .name("cairn-follow-metrics".to_owned())
        .spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut request_line = String::new();
                if BufReader::new(&stream)
                    .read_line(&mut request_line)
                    .is_err()
                {
                    continue;
                }
                let path = request_line.split_whitespace().nth(1).unwrap_or("");
                let (status, body) = match path {
                    "/metrics" => ("200 OK", metrics.prometheus()),
                    "/health" if metrics.status().stale => {
                        ("503 Service Unavailable", "stale\n".to_owned())
                    }
                    "/health" => ("200 OK", "ok\n".to_owned()),
                    _ => ("404 Not Found", "not found: /metrics or /health\n".to_owned()),
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        })?;
    Ok(bound)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lag_and_staleness_derive_from_heads() {
        let metrics = Metrics::new(Duration::ZERO);
        metrics.node_head(100, 1_000);
        metrics.ingested_block.store(90, Ordering::Relaxed);
        metrics.ingested_timestamp.store(880, Ordering::Relaxed);
        let status = metrics.status();
        assert_eq!((status.lag_blocks, status.lag_seconds), (10, Some(120)));
        assert!(
            metrics.status().stale,
            "a threshold of 0 s is always reached"
        );
        let patient = Metrics::new(Duration::from_secs(3600));
        patient.node_head(1, 1);
        assert!(!patient.status().stale);
        assert!(patient.prometheus().contains("cairn_follow_stale 0\n"));
    }

    #[test]
    fn reorgs_keep_the_last_and_the_deepest() {
        let metrics = Metrics::new(Duration::from_secs(1));
        metrics.reorg(5);
        metrics.reorg(2);
        let status = metrics.status();
        assert_eq!(
            (
                status.reorgs_total,
                status.reorg_depth_last,
                status.reorg_depth_max
            ),
            (2, 2, 5)
        );
    }
}
