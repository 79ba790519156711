//! `GET /v1/leaves?from=&to=`: durable leaves by index, raw or JSON, bounded
//! by the server's limit, and never past the durable size.

use axum::http::Method;
use cairn_core::hex::to_hex;
use cairn_core::{Hash, HashKind};
use cairn_db::DbConfig;

use crate::support::*;

const LIMIT: usize = 16;

async fn limited() -> TestServer {
    TestServer::with(DbConfig::new(tree(3, HashKind::Blake3)), |c| {
        c.max_leaves_per_read = LIMIT;
    })
    .await
}

fn raw(leaves: &[Hash]) -> Vec<u8> {
    leaves.as_flattened().to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaves_are_answered_raw_by_default_and_as_json_on_request() {
    let server = limited().await;
    let client = server.client();
    let all = leaves(40, 20);
    client.post_json(&all, None).await.ok();

    let reply = client.get("/v1/leaves?from=3&to=11").await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.headers["content-type"], "application/octet-stream");
    assert_eq!(reply.body.as_ref(), raw(&all[3..11]).as_slice());

    let reply = client
        .request(
            Method::GET,
            "/v1/leaves?from=3&to=11",
            &[("accept", "application/json")],
            Vec::new(),
        )
        .await;
    assert_eq!(reply.headers["content-type"], "application/json");
    let hex: Vec<String> = all[3..11].iter().map(to_hex).collect();
    assert_eq!(reply.ok(), serde_json::json!({"from": 3, "leaves": hex}));

    // An empty range, at the durable size too.
    for path in [
        "/v1/leaves?from=5&to=5",
        "/v1/leaves?from=20&to=20",
        "/v1/leaves?from=20",
    ] {
        let reply = client.get(path).await;
        assert_eq!(reply.status, 200, "{path}: {}", reply.text());
        assert!(reply.body.is_empty(), "{path}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_to_a_mirror_pages_through_every_leaf_up_to_the_limit() {
    let server = limited().await;
    let client = server.client();
    let all = leaves(41, 2 * LIMIT as u64 + 5);
    client.post_binary(&all, None).await.ok();

    let mut mirrored: Vec<u8> = Vec::new();
    let mut pages = 0;
    loop {
        let from = mirrored.len() / 32;
        let reply = client.get(&format!("/v1/leaves?from={from}")).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert!(reply.body.len() <= LIMIT * 32);
        if reply.body.is_empty() {
            break;
        }
        mirrored.extend_from_slice(&reply.body);
        pages += 1;
    }
    assert_eq!(pages, 3);
    assert_eq!(mirrored, raw(&all));
    // No parameter at all: from 0, up to the limit.
    let reply = client.get("/v1/leaves").await;
    assert_eq!(reply.body.as_ref(), raw(&all[..LIMIT]).as_slice());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ranges_above_the_limit_reversed_or_malformed_are_refused_with_400() {
    let server = limited().await;
    let client = server.client();
    client.post_json(&leaves(42, 40), None).await.ok();

    let error = client.get("/v1/leaves?from=0&to=17").await.error(400);
    assert!(error.contains("17 leaves"), "{error}");
    assert!(error.contains("limit of 16"), "{error}");
    assert!(error.contains("--max-leaves-per-read"), "{error}");
    // Exactly the limit is fine.
    let reply = client.get("/v1/leaves?from=1&to=17").await;
    assert_eq!(reply.body.len(), LIMIT * 32, "{}", reply.status);

    let error = client.get("/v1/leaves?from=9&to=4").await.error(400);
    assert!(error.contains("from 9 is larger than to 4"), "{error}");
    for (path, named) in [
        ("/v1/leaves?from=-1", "from \"-1\""),
        ("/v1/leaves?to=x", "to \"x\""),
        ("/v1/leaves?size=3", "unknown query parameter \"size\""),
        ("/v1/leaves?from=1&from=2", "more than once"),
    ] {
        let error = client.get(path).await.error(400);
        assert!(error.contains(named), "{path}: {error}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaves_beyond_the_durable_size_are_refused_with_404_naming_it() {
    let mut config = DbConfig::new(tree(3, HashKind::Blake3));
    // No background flush: leaves appended past the server stay not durable.
    config.store.flush_interval = None;
    let server = TestServer::with(config, |c| c.max_leaves_per_read = LIMIT).await;
    let client = server.client();
    let all = leaves(43, 12);
    client.post_json(&all[..10], None).await.ok();
    drop(server.db.append(&all[10..]).unwrap());
    assert_eq!(server.db.size(), 12);
    assert_eq!(server.db.durable_size(), 10);

    let error = client.get("/v1/leaves?from=8&to=11").await.error(404);
    assert!(
        error.contains("to 11 is beyond the tree's durable size 10"),
        "{error}"
    );
    let error = client.get("/v1/leaves?from=11").await.error(404);
    assert!(
        error.contains("from 11 is beyond the tree's durable size 10"),
        "{error}"
    );
    // Without `to`: the durable leaves only.
    let reply = client.get("/v1/leaves?from=8").await;
    assert_eq!(reply.body.as_ref(), raw(&all[8..10]).as_slice());
    server.db.flush().unwrap();
    let reply = client.get("/v1/leaves?from=8").await;
    assert_eq!(reply.body.as_ref(), raw(&all[8..12]).as_slice());
}
