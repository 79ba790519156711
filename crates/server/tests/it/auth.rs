//! The token rules: with a token configured every write needs
//! `Authorization: Bearer <token>` and every read works without it; with
//! none, writes are open.

use axum::http::Method;
use cairn_core::HashKind;
use cairn_core::hex::to_hex;
use cairn_db::DbConfig;

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_need_the_bearer_token_and_reads_do_not() {
    let config = DbConfig::new(tree(2, HashKind::Blake3));
    let server = TestServer::with(config, |c| c.token = Some(TOKEN.into())).await;
    let client = server.client();
    let batch = leaves(20, 3);

    let reply = client.post_json(&batch, None).await;
    let error = reply.error(401);
    assert!(error.contains("missing Authorization header"), "{error}");
    assert_eq!(reply.headers["www-authenticate"], "Bearer realm=\"cairn\"");
    let error = client
        .post_binary(&batch, Some("wrong-token"))
        .await
        .error(401);
    assert!(error.contains("not this server's write token"), "{error}");
    assert!(
        !error.contains(TOKEN) && !error.contains("wrong-token"),
        "{error}"
    );
    let near_miss = &TOKEN[..TOKEN.len() - 1];
    client.post_binary(&batch, Some(near_miss)).await.error(401);
    let basic = format!("Basic {TOKEN}");
    let body = leaves(20, 1).as_flattened().to_vec();
    let reply = client
        .request(
            Method::POST,
            "/v1/leaves",
            &[
                ("content-type", "application/octet-stream"),
                ("authorization", &basic),
            ],
            body,
        )
        .await;
    assert!(reply.error(401).contains("Bearer scheme"));
    // The token is checked before the body is looked at.
    let reply = client
        .request(
            Method::POST,
            "/v1/leaves",
            &[("content-type", "text/plain")],
            b"garbage".to_vec(),
        )
        .await;
    reply.error(401);
    assert_eq!(client.head().await.size, 0, "refused writes append nothing");

    let appended = client.post_json(&batch, Some(TOKEN)).await.ok();
    assert_eq!(appended["count"], 3);
    let appended = client.post_binary(&leaves(21, 2), Some(TOKEN)).await.ok();
    assert_eq!(appended["first_index"], 3);

    // Reads, without a token.
    let head = client.head().await;
    assert_eq!(head.size, 5);
    client.get("/v1/proofs/4").await.ok();
    client.get("/v1/consistency?from=2").await.ok();
    client
        .get(&format!("/v1/leaves/{}", to_hex(&batch[1])))
        .await
        .ok();
    client.get("/healthz").await.ok();
    assert_eq!(client.get("/metrics").await.status, 200);
    client.get("/openapi.json").await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_token_writes_are_open() {
    let server = TestServer::new(2, HashKind::Blake3).await;
    let client = server.client();
    client.post_json(&leaves(22, 2), None).await.ok();
    // A token sent to a server without one is ignored.
    client
        .post_json(&leaves(23, 2), Some("anything"))
        .await
        .ok();
}

/// Starts `cairn-server DIR --listen 0.0.0.0:0 ARGS..`, stops it with
/// SIGTERM once it listens, and returns what it logged.
fn log_of_a_server_on_every_interface(args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_cairn-server"))
        .arg(dir.path().join("db"))
        .args(["--create-arity", "2", "--create-hash", "blake3"])
        .args(["--listen", "0.0.0.0:0"])
        .args(args)
        .env("CAIRN_LOG", "info")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert!(line.starts_with("listening on 0.0.0.0:"), "{line:?}");
    let pid = child.id().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status();
    assert!(killed.unwrap().success());
    assert!(child.wait().unwrap().success());
    std::fs::read_to_string(&log).unwrap()
}

#[test]
fn listening_beyond_loopback_without_a_token_logs_a_warning() {
    let log = log_of_a_server_on_every_interface(&[]);
    assert!(log.contains("WARN"), "{log}");
    assert!(
        log.contains("listening beyond loopback without a write token: writes are refused"),
        "{log}"
    );
    assert!(log.contains("--token-file"), "{log}");
    // Accepting them is a choice made explicitly, and warned about.
    let log = log_of_a_server_on_every_interface(&["--allow-open-writes"]);
    assert!(
        log.contains("anyone who can reach") && !log.contains("writes are refused"),
        "{log}"
    );

    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "s3cret\n").unwrap();
    std::fs::set_permissions(&token, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let log = log_of_a_server_on_every_interface(&["--token-file", token.to_str().unwrap()]);
    assert!(log.contains("listening"), "{log}");
    assert!(!log.contains("WARN"), "{log}");
}
