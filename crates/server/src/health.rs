//! `GET /healthz`, and the watch that logs what the
//! store reports about itself as it changes.
//!
//! Three states: `ok`; `degraded` (200: appends are acknowledged, but a
//! checkpoint is failing and being retried, or a file of the store could
//! not be put back at its name: look before restarting); `failing` (503:
//! acknowledgements stopped; only a restart recovers).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::StatusCode;
use axum::response::Response;
use cairn_db::{FileOutcome, StoreHealth};
use serde::Serialize;

use crate::listener::ConnectionStats;
use crate::respond::json;

#[derive(Serialize)]
struct HealthJson {
    status: &'static str,
    /// Why acknowledgements stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    checkpoint: Option<CheckpointJson>,
    #[serde(skip_serializing_if = "is_zero")]
    checkpoint_failures: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    files: Vec<FileJson>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    unrestored: Vec<String>,
    connections: ConnectionsJson,
    /// The lag of the publisher, the mirror or the read-only opening.
    #[serde(flatten)]
    lag: crate::ready::LagJson,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Serialize)]
struct CheckpointJson {
    error: String,
    consecutive_failures: u64,
    failing_since: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_in_seconds: Option<f64>,
}

#[derive(Serialize)]
struct FileJson {
    path: String,
    change: &'static str,
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    at: u64,
}

#[derive(Serialize)]
struct ConnectionsJson {
    open: u64,
    limit: u64,
}

fn unix_seconds(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The answer to `GET /healthz`: the store's health, with `failure` the
/// first failure the server itself met that stopped acknowledgements (the
/// store's own is in `store.failure`).
pub(crate) fn answer(
    failure: Option<String>,
    store: &StoreHealth,
    connections: &ConnectionStats,
    lag: crate::ready::LagJson,
) -> Response {
    let error = store
        .failure
        .as_ref()
        .map(|failure| failure.to_string())
        .or(failure);
    let (status, code) = match (&error, store.is_degraded()) {
        (Some(_), _) => ("failing", StatusCode::SERVICE_UNAVAILABLE),
        (None, true) => ("degraded", StatusCode::OK),
        (None, false) => ("ok", StatusCode::OK),
    };
    let body = HealthJson {
        status,
        error,
        checkpoint: store.checkpoint.as_ref().map(|failing| CheckpointJson {
            error: failing.error.to_string(),
            consecutive_failures: failing.consecutive,
            failing_since: unix_seconds(failing.since),
            retry_in_seconds: failing.retry_in.map(|d| d.as_secs_f64()),
        }),
        checkpoint_failures: store.checkpoint_failures,
        files: store
            .file_events
            .iter()
            .map(|event| {
                let (outcome, error) = match &event.outcome {
                    FileOutcome::Restored => ("restored", None),
                    FileOutcome::NotRestored(why) => ("not restored", Some(why.clone())),
                    FileOutcome::Stopped => ("stopped acknowledgements", None),
                };
                FileJson {
                    path: event.path.display().to_string(),
                    change: event.change.as_str(),
                    outcome,
                    error,
                    at: unix_seconds(event.at),
                }
            })
            .collect(),
        unrestored: store
            .unrestored
            .iter()
            .map(|path| path.display().to_string())
            .collect(),
        connections: ConnectionsJson {
            open: connections.open(),
            limit: connections.bound.load(std::sync::atomic::Ordering::Relaxed),
        },
        lag,
    };
    json(code, &body)
}

/// Logs what changes in the store's health, once a second, until the
/// server stops or `health` finds the database gone (it holds it weakly:
/// the watch must not keep the database open): a checkpoint that starts
/// failing (and each tenth failure in a row), one that succeeds again,
/// each file event. The store itself logs nothing.
pub(crate) async fn watch(health: impl Fn() -> Option<StoreHealth> + Send) {
    let mut interval = tokio::time::interval(Duration::from_secs(1));
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut seen_events = 0;
    let mut failing = 0;
    let mut stopped = false;
    loop {
        interval.tick().await;
        let Some(now) = health() else {
            return;
        };
        match &now.checkpoint {
            Some(failure) if failure.consecutive > failing => {
                if failing == 0 || failure.consecutive % 10 == 0 {
                    tracing::warn!(
                        error = %failure.error,
                        failures = failure.consecutive,
                        retry_in_seconds = failure.retry_in.map(|d| d.as_secs_f64()),
                        "checkpoint failed; appends go on and the checkpoint is tried again (the log holds what it would cover)"
                    );
                }
                failing = failure.consecutive;
            }
            Some(_) => {}
            None if failing > 0 => {
                tracing::info!(after_failures = failing, "checkpoint written again");
                failing = 0;
            }
            None => {}
        }
        let new = now.file_events_total.saturating_sub(seen_events) as usize;
        let shown = now.file_events.len();
        for event in &now.file_events[shown.saturating_sub(new)..] {
            match &event.outcome {
                FileOutcome::Restored => tracing::warn!(
                    path = %event.path.display(),
                    change = event.change.as_str(),
                    "a file of the database was {} under the server: written again from what the server holds, nothing lost",
                    event.change.as_str()
                ),
                FileOutcome::NotRestored(why) => tracing::error!(
                    path = %event.path.display(),
                    change = event.change.as_str(),
                    error = %why,
                    "a file of the database was {} under the server and could not be written again (retrying every second); do not restart before it is back",
                    event.change.as_str()
                ),
                FileOutcome::Stopped => {}
            }
        }
        seen_events = now.file_events_total;
        if let (Some(failure), false) = (&now.failure, stopped) {
            stopped = true;
            tracing::error!(error = %failure, "the database stopped acknowledging writes");
        }
    }
}
