//! `GET /readyz` (readiness: should this server get read traffic now?)
//! and the lag figures it and `/healthz` report. Liveness stays
//! `/healthz`: a server that is behind is alive, and restarting it would
//! only put it further behind.
//!
//! Not ready (503): acknowledgements stopped (the store failed); a mirror
//! that has not yet held upstream's newest head, or last held it longer
//! ago than `--ready-max-staleness`; a read-only server beside its writer
//! whose last look at the directory is older than that. The server binds
//! its port only once the database is open and recovered, so it is not
//! ready (the connection is refused) while opening.

use std::sync::atomic::Ordering;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde::Serialize;

use crate::respond::json;
use crate::state::{AppState, Shared};

/// The lag of each companion that runs, for `/healthz` and `/readyz`.
#[derive(Debug, Default, Serialize)]
pub(crate) struct LagJson {
    #[serde(skip_serializing_if = "Option::is_none")]
    publish: Option<PublishLag>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mirror: Option<MirrorLag>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reader: Option<ReaderLag>,
}

#[derive(Debug, Serialize)]
struct PublishLag {
    published_size: u64,
    durable_size: u64,
    lag_leaves: u64,
    failures: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_error: Option<String>,
}

#[derive(Debug, Serialize)]
struct MirrorLag {
    adopted_size: u64,
    upstream_size: u64,
    lag_leaves: u64,
    /// Seconds since the mirror last held upstream's newest head; absent
    /// before the first time.
    #[serde(skip_serializing_if = "Option::is_none")]
    caught_up_seconds_ago: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_error: Option<String>,
}

#[derive(Debug, Serialize)]
struct ReaderLag {
    size: u64,
    staleness_seconds: f64,
    refresh_failures: u64,
}

fn unix_ms_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The lag figures of `shared`'s companions, read now.
pub(crate) fn lag(shared: &Shared) -> LagJson {
    let metrics = &shared.metrics;
    let last_error = |error: &std::sync::Mutex<Option<String>>| {
        error.lock().unwrap_or_else(|e| e.into_inner()).clone()
    };
    let publish = metrics.publisher.get().map(|status| {
        let published = status.published_size.load(Ordering::Relaxed);
        // Against the durable size now, as /metrics reports it.
        let durable = shared.db.durable_size();
        PublishLag {
            published_size: published,
            durable_size: durable,
            lag_leaves: durable.saturating_sub(published),
            failures: status.failures.load(Ordering::Relaxed),
            last_error: last_error(&status.last_error),
        }
    });
    let mirror = metrics.follower.get().map(|status| {
        let caught_up = status.caught_up_unix_ms.load(Ordering::Relaxed);
        MirrorLag {
            adopted_size: status.adopted_size.load(Ordering::Relaxed),
            upstream_size: status.upstream_size.load(Ordering::Relaxed),
            lag_leaves: status.lag_leaves(),
            caught_up_seconds_ago: (caught_up > 0)
                .then(|| unix_ms_now().saturating_sub(caught_up) as f64 / 1e3),
            last_error: last_error(&status.last_error),
        }
    });
    let reader = metrics.reader.get().map(|status| ReaderLag {
        size: status.size.load(Ordering::Relaxed),
        staleness_seconds: status.staleness_seconds(),
        refresh_failures: status.failures.load(Ordering::Relaxed),
    });
    LagJson {
        publish,
        mirror,
        reader,
    }
}

#[derive(Serialize)]
struct ReadyJson {
    ready: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    reasons: Vec<String>,
    #[serde(flatten)]
    lag: LagJson,
}

/// Why `shared` should not get traffic now (empty: ready).
fn not_ready(shared: &Shared, lag: &LagJson) -> Vec<String> {
    let max = shared.config.ready_max_staleness.as_secs_f64();
    let mut reasons = Vec::new();
    if let Some(failure) = shared.failure() {
        reasons.push(format!("acknowledgements stopped: {failure}"));
    }
    if let Some(mirror) = &lag.mirror {
        match mirror.caught_up_seconds_ago {
            None => reasons.push(format!(
                "the mirror has not caught up with upstream yet ({} of {} leaves adopted)",
                mirror.adopted_size, mirror.upstream_size
            )),
            Some(ago) if ago > max => reasons.push(format!(
                "the mirror last caught up with upstream {ago:.0} s ago (more than {max:.0} s); {} leaves behind",
                mirror.lag_leaves
            )),
            Some(_) => {}
        }
    }
    if let Some(reader) = &lag.reader
        && reader.staleness_seconds > max
    {
        reasons.push(format!(
            "the directory was last opened or found unchanged {:.0} s ago (more than {max:.0} s)",
            reader.staleness_seconds
        ));
    }
    reasons
}

/// `GET /readyz`: 200 `{"ready":true,...}` or 503 with the reasons.
pub(crate) async fn ready(State(state): State<AppState>) -> Response {
    let shared = state.shared();
    let lag = lag(shared);
    let reasons = not_ready(shared, &lag);
    let code = if reasons.is_empty() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    json(
        code,
        &ReadyJson {
            ready: reasons.is_empty(),
            reasons,
            lag,
        },
    )
}
