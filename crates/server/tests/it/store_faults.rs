//! What the database's own faults do to the server: a checkpoint or a
//! finalization that cannot create its files (no descriptor left) makes
//! the health `degraded` and stops no append, and the retry succeeds once
//! descriptors are back; a second writer never gets into the directory of
//! a running server, whatever file name is removed or replaced under it,
//! and the server puts each file back and reports it.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_core::HashKind;
use cairn_db::{Database, DbConfig, DbError, StoreError};
use cairn_testkit::sim::OpenFault;
use cairn_testkit::sim::SimFs;
use serde_json::{Value, json};

use crate::support::*;

/// The longest any wait below may take before the test fails.
const BOUND: Duration = Duration::from_secs(60);

/// Polls `/healthz` until `done` holds.
async fn health_until(client: &Client, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + BOUND;
    loop {
        let reply = client.get("/healthz").await;
        let health = reply.json();
        if done(&health) {
            return health;
        }
        assert!(Instant::now() < deadline, "{what}: {health}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_without_descriptors_degrades_health_and_stops_no_append() {
    let fs = SimFs::new();
    let mut config = DbConfig::new(tree(2, HashKind::Blake3));
    config.store.checkpoint.every_leaves = Some(16);
    let db = Database::create_in(Arc::new(fs.clone()), Path::new("/db"), config).unwrap();
    let server = TestServer::start(db, |_| {}).await;
    let client = server.client();
    client.post_json(&leaves(1, 4), None).await.ok();
    fs.fail_opens(OpenFault::TooManyFiles, "");
    let mut appended = 4;
    let health = loop {
        client.post_json(&leaves(2 + appended, 8), None).await.ok();
        appended += 8;
        let health = client.get("/healthz").await;
        assert_eq!(health.status, 200, "{}", health.text());
        let health = health.json();
        if health["status"] == "degraded" {
            break health;
        }
        assert!(appended < 2000, "no checkpoint failed: {health}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let checkpoint = &health["checkpoint"];
    assert!(
        checkpoint["error"]
            .as_str()
            .unwrap()
            .contains("Too many open files"),
        "{health}"
    );
    assert!(checkpoint["consecutive_failures"].as_u64().unwrap() >= 1);
    assert!(
        checkpoint["retry_in_seconds"].as_f64().is_some(),
        "{health}"
    );
    // A finalization fails alone: an error, nothing final, appends go on.
    let size = client.head().await.size;
    let error = client
        .post_to("/v1/finalize", &json!({ "size": size }), None)
        .await
        .error(503);
    assert!(error.contains("Too many open files"), "{error}");
    assert_eq!(server.db.finalized_size(), 0);
    let health = client.get("/healthz").await;
    assert_eq!(health.status, 200, "not failing: {}", health.text());
    client.post_json(&leaves(9_000, 8), None).await.ok();
    let metrics = client.get("/metrics").await;
    assert!(
        metrics
            .text()
            .lines()
            .any(|l| l.starts_with("cairn_checkpoint_failing ") && !l.ends_with(" 0")),
        "{}",
        metrics.text()
    );
    // Descriptors back: the retry succeeds on its own.
    fs.clear_open_faults();
    health_until(&client, "the checkpoint is retried", |h| {
        h["status"] == "ok"
    })
    .await;
    let size = client.head().await.size;
    let finalized = client
        .post_to("/v1/finalize", &json!({ "size": size }), None)
        .await
        .ok();
    assert_eq!(finalized["finalized"], size);
    assert!(server.db.stats().store.checkpoint_size >= size);
    server.stop().await.unwrap();
}

/// Every name of a database, removed and then replaced by another file, in
/// turn, under a running server (another process): no second writer opens
/// the directory meanwhile, the server stays up and acknowledges appends,
/// puts the file back, reports it in its health, and shuts down with every
/// value it acknowledged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_second_writer_gets_in_whatever_is_removed_under_a_running_server() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("db");
    let log = temp.path().join("server.log");
    let mut server = ServerProcess::start(
        &dir,
        &["--create-arity", "2", "--create-hash", "blake3"],
        &log,
    );
    let client = server.client();
    let mut acknowledged = Vec::new();
    let mut block = 0;
    let mut append = async |seed: u64| {
        block += 1;
        let values = leaves(seed, 25);
        client.post_tagged(&values, block, None, None).await.ok();
        acknowledged.extend(values);
    };
    append(1).await;
    // A checkpoint: level files, `checkpoint` and the set's file exist.
    client
        .post_to("/v1/finalize", &json!({ "size": 25 }), None)
        .await
        .ok();
    append(2).await;
    let names = [
        "LOCK",
        "cairn.meta",
        "checkpoint",
        "heads",
        "levels/level-01.nodes",
        "log/000000000000.log",
        "nullifiers.set",
    ];
    for (round, name) in names.iter().enumerate() {
        let path = dir.join(name);
        assert!(path.exists(), "{name}");
        std::fs::remove_file(&path).unwrap();
        // Created new, never opened over what the server may have put
        // back meanwhile (that would write into its file).
        if let Ok(mut other) = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            std::io::Write::write_all(&mut other, b"not the database's").unwrap();
        }
        // A second writer (this process) is refused: the directory is
        // locked, not a file in it. (With `cairn.meta` replaced it stops
        // earlier: it reads the meta to learn the tree before it locks.)
        match Database::open(&dir) {
            Err(DbError::Store(StoreError::Locked { .. })) => {}
            Err(DbError::Store(StoreError::Corrupt { path: p, .. }))
                if *name == "cairn.meta" && p == path => {}
            other => panic!("{name}: a second writer must not open: {other:?}"),
        }
        append(10 + round as u64).await;
        let health = health_until(&client, name, |h| {
            h["files"].as_array().is_some_and(|files| {
                files
                    .iter()
                    .any(|f| f["path"] == path.display().to_string() && f["outcome"] == "restored")
            })
        })
        .await;
        assert_eq!(health["status"], "ok", "{health}");
        assert_eq!(health["files"].as_array().unwrap().len(), round + 1);
        append(100 + round as u64).await;
    }
    // The same with a second server process.
    std::fs::remove_file(dir.join("LOCK")).unwrap();
    let second = std::process::Command::new(env!("CARGO_BIN_EXE_cairn-server"))
        .arg(&dir)
        .args(["--listen", "127.0.0.1:0"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!second.status.success());
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(stderr.contains("locked"), "{stderr}");
    append(1000).await;
    assert!(server.terminate().success());
    let db = Database::open(&dir).unwrap();
    assert_eq!(db.size(), acknowledged.len() as u64);
    for value in &acknowledged {
        assert!(db.index_of(value).unwrap().is_some());
    }
    assert_eq!(db.heads(0, 100).unwrap().len() as u64, block);
}
