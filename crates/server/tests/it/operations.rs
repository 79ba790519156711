//! What operators look at: readiness beside liveness, the lag figures,
//! the build in `/metrics`, writes refused beyond loopback without a
//! token, and a read-only server following its writer on one directory.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use cairn_core::HashKind;
use cairn_db::{Database, DbConfig};

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_is_ready_and_metrics_name_the_build() {
    let server = TestServer::new(2, HashKind::Blake3).await;
    let client = server.client();
    let ready = client.get("/readyz").await.ok();
    assert_eq!(ready["ready"], true, "{ready}");
    assert!(ready.get("reasons").is_none(), "{ready}");
    let metrics = client.get("/metrics").await;
    let text = metrics.text();
    let line = text
        .lines()
        .find(|line| line.starts_with("cairn_build_info{"))
        .unwrap_or_else(|| panic!("no cairn_build_info in {text}"));
    let version = format!("version=\"{}\"", env!("CARGO_PKG_VERSION"));
    assert!(line.contains(&version) && line.ends_with("} 1"), "{line}");
    assert!(line.contains(&format!("commit=\"{}\"", cairn_server::BUILD.commit)));
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_beyond_loopback_without_a_token_are_refused_unless_allowed() {
    let every_interface: SocketAddr = "0.0.0.0:0".parse().unwrap();
    let config = DbConfig::new(tree(2, HashKind::Blake3));
    let server = TestServer::with(config.clone(), |c| c.listen = every_interface).await;
    let client = Client::new(SocketAddr::from(([127, 0, 0, 1], server.addr.port())));
    let error = client.post_json(&leaves(1, 2), None).await.error(403);
    assert!(error.contains("--token-file"), "{error}");
    // Reads are served, and nothing was appended.
    assert_eq!(client.head().await.size, 0);
    server.stop().await.unwrap();

    let server = TestServer::with(config.clone(), |c| {
        c.listen = every_interface;
        c.allow_open_writes = true;
    })
    .await;
    let client = Client::new(SocketAddr::from(([127, 0, 0, 1], server.addr.port())));
    client.post_json(&leaves(1, 2), None).await.ok();
    assert_eq!(client.head().await.size, 2);
    server.stop().await.unwrap();

    // A token makes writes possible beyond loopback, as on loopback.
    let server = TestServer::with(config, |c| {
        c.listen = every_interface;
        c.token = Some(TOKEN.into());
    })
    .await;
    let client = Client::new(SocketAddr::from(([127, 0, 0, 1], server.addr.port())));
    client.post_json(&leaves(1, 2), Some(TOKEN)).await.ok();
    server.stop().await.unwrap();
}

/// Asks `path` until `done` holds of its JSON answer or ten seconds pass
/// (the reader looks at the directory every few milliseconds here).
async fn until(client: &Client, path: &str, done: impl Fn(&serde_json::Value) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let reply = client.get(path).await;
        let value = reply.json();
        if done(&value) {
            return;
        }
        assert!(Instant::now() < deadline, "{path} never got there: {value}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_server_beside_the_writer_follows_its_durable_head() {
    let config = DbConfig::new(tree(4, HashKind::Blake3));
    let (dir, writer) = temp_db(config);
    writer
        .append(&leaves(7, 5))
        .unwrap()
        .wait(&writer, Duration::from_secs(5))
        .unwrap();
    // Opened without the lock while the writer holds it.
    let reader = Database::open_read_only(dir.path().join("db")).unwrap();
    let server = TestServer::start(reader, |c| {
        c.read_only = true;
        c.refresh_interval = Duration::from_millis(5);
    })
    .await;
    let client = server.client();
    assert_eq!(client.head().await.size, 5);
    let error = client.post_json(&leaves(8, 1), None).await.error(403);
    assert!(error.contains("read-only"), "{error}");

    writer
        .append(&leaves(9, 3))
        .unwrap()
        .wait(&writer, Duration::from_secs(5))
        .unwrap();
    let want = writer.head();
    until(&client, "/v1/root", |root| root["size"] == 8).await;
    assert_eq!(client.head().await, want);
    // A value appended after the reader first opened is found, and its
    // proof verifies against the writer's head.
    let value = leaves(9, 3)[2];
    let found = client
        .get(&format!("/v1/leaves/{}", cairn_core::hex::to_hex(&value)))
        .await
        .ok();
    assert_eq!(found["index"], 7, "{found}");
    client
        .verified_proof(tree(4, HashKind::Blake3), 7, &want)
        .await;

    let ready = client.get("/readyz").await.ok();
    assert_eq!(ready["ready"], true, "{ready}");
    assert_eq!(ready["reader"]["size"], 8, "{ready}");
    let health = client.get("/healthz").await.ok();
    assert_eq!(health["reader"]["size"], 8, "{health}");
    let metrics = client.get("/metrics").await;
    assert!(
        metrics.text().contains("\ncairn_reader_size 8\n"),
        "{}",
        metrics.text()
    );
    assert!(metrics.text().contains("\ncairn_reader_refreshes_total "));
    server.stop().await.unwrap();
    writer.close().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_reader_is_alive_but_not_ready() {
    let config = DbConfig::new(tree(2, HashKind::Blake3));
    let (dir, writer) = temp_db(config);
    let reader = Database::open_read_only(dir.path().join("db")).unwrap();
    // Looks at the directory once an hour: its last look at start is the
    // only one, and a staleness bound of one second passes.
    let server = TestServer::start(reader, |c| {
        c.read_only = true;
        c.refresh_interval = Duration::from_secs(3600);
        c.ready_max_staleness = Duration::from_secs(1);
    })
    .await;
    let client = server.client();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let reply = client.get("/readyz").await;
        if reply.status == 503 {
            let value = reply.json();
            assert_eq!(value["ready"], false, "{value}");
            let reason = value["reasons"][0].as_str().unwrap();
            assert!(reason.contains("more than 1 s"), "{reason}");
            break;
        }
        assert!(Instant::now() < deadline, "never stale: {}", reply.text());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Liveness is not readiness.
    assert_eq!(client.get("/healthz").await.ok()["status"], "ok");
    server.stop().await.unwrap();
    writer.close().unwrap();
}
