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
