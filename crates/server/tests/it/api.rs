//! Every route and its statuses, against a real server on 127.0.0.1 with
//! a real HTTP client; answers are compared with the in-memory tree of the
//! same leaves (roots, proof bytes as the CLI prints them).

use std::path::Path;
use std::sync::Arc;

use axum::http::Method;
use cairn_core::hex::to_hex;
use cairn_core::{ConsistencyProof, HashKind, MembershipProof, TreeHead};
use cairn_db::{Database, DbConfig};
use cairn_testkit::sim::SimFs;

use crate::support::*;

const N: u64 = 3;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_answer_the_head_after_the_batch_and_root_reports_it() {
    let server = TestServer::new(N, HashKind::Blake3).await;
    let client = server.client();
    let config = tree(N, HashKind::Blake3);
    let empty = client.get("/v1/root").await.ok();
    assert_eq!(
        empty,
        serde_json::json!({"size": 0, "root": null, "depth": 0, "arity": 3, "hash": "blake3", "finalized": 0, "kind": "lean", "zero": null})
    );

    let all = leaves(1, 10);
    let first = client.post_json(&all[..3], None).await.ok();
    let mut local = local_tree(config, &all[..3]);
    assert_eq!(
        first,
        serde_json::json!({"first_index": 0, "count": 3, "size": 3, "root": to_hex(&local.root().unwrap())})
    );
    let second = client.post_binary(&all[3..], None).await.ok();
    let mut local = local_tree(config, &all);
    assert_eq!(second["first_index"], 3);
    assert_eq!(second["count"], 7);
    assert_eq!(second["size"], 10);
    assert_eq!(second["root"], to_hex(&local.root().unwrap()));

    let root = client.get("/v1/root").await.ok();
    assert_eq!(
        root,
        serde_json::json!({"size": 10, "root": to_hex(&local.root().unwrap()), "depth": 3, "arity": 3, "hash": "blake3", "finalized": 0, "kind": "lean", "zero": null})
    );
    let reply = client.get("/v1/root").await;
    assert_eq!(reply.headers["content-type"], "application/json");
    assert!(reply.headers.contains_key("x-request-id"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookups_find_leaves_and_name_what_is_refused() {
    let server = TestServer::new(N, HashKind::Sha256).await;
    let client = server.client();
    let all = leaves(2, 5);
    client.post_json(&all, None).await.ok();
    for (index, value) in all.iter().enumerate() {
        let found = client
            .get(&format!("/v1/leaves/{}", to_hex(value)))
            .await
            .ok();
        assert_eq!(found, serde_json::json!({ "index": index }));
    }
    let upper = to_hex(&all[2]).to_uppercase().replacen("0X", "0x", 1);
    assert_eq!(
        client.get(&format!("/v1/leaves/{upper}")).await.ok()["index"],
        2
    );

    let absent = to_hex(&leaf(2, 99));
    let error = client.get(&format!("/v1/leaves/{absent}")).await.error(404);
    assert!(error.contains(&absent), "{error}");
    for bad in [
        "0x12",
        "zz",
        &"0x".repeat(33),
        &format!("0x{}g", "0".repeat(63)),
    ] {
        let error = client.get(&format!("/v1/leaves/{bad}")).await.error(400);
        assert!(error.contains(bad), "{error} should name {bad}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proofs_are_the_cli_json_and_verify_at_every_size() {
    let server = TestServer::new(N, HashKind::Keccak256).await;
    let client = server.client();
    let config = tree(N, HashKind::Keccak256);
    let all = leaves(3, 14);
    client.post_binary(&all, None).await.ok();
    let mut local = local_tree(config, &all);
    for size in 1..=14u64 {
        let head = local.at_size(size).unwrap().head();
        for index in 0..size {
            let reply = client.get(&format!("/v1/proofs/{index}?size={size}")).await;
            let want = local.prove_at(index, size).unwrap().to_json() + "\n";
            assert_eq!(reply.text(), want, "index {index} size {size}");
            let proof = MembershipProof::from_json(reply.text()).unwrap();
            proof.verify(config.arity, config.hash, &head).unwrap();
        }
    }
    // Without a size: the durable tree.
    let reply = client.get("/v1/proofs/13").await;
    assert_eq!(reply.text(), local.prove(13).unwrap().to_json() + "\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proof_requests_out_of_range_or_malformed_are_refused_with_the_reason() {
    let server = TestServer::new(N, HashKind::Blake3).await;
    let client = server.client();
    let error = client.get("/v1/proofs/0").await.error(404);
    assert!(
        error.contains("out of range for a tree of size 0"),
        "{error}"
    );
    client.post_json(&leaves(4, 5), None).await.ok();

    let cases: &[(&str, u16, &str)] = &[
        (
            "/v1/proofs/5",
            404,
            "leaf index 5 is out of range for a tree of size 5",
        ),
        (
            "/v1/proofs/3?size=3",
            404,
            "leaf index 3 is out of range for a tree of size 3",
        ),
        (
            "/v1/proofs/0?size=6",
            404,
            "size 6 is beyond the tree's durable size 5",
        ),
        (
            "/v1/proofs/0?size=0",
            404,
            "out of range for a tree of size 0",
        ),
        (
            "/v1/proofs/abc",
            400,
            "leaf index \"abc\" is not a non-negative integer",
        ),
        ("/v1/proofs/-1", 400, "\"-1\""),
        (
            "/v1/proofs/1?size=x",
            400,
            "size \"x\" is not a non-negative integer",
        ),
        ("/v1/proofs/1?size=2&size=3", 400, "more than once"),
        ("/v1/proofs/1?at=2", 400, "unknown query parameter \"at\""),
        (
            "/v1/proofs/99999999999999999999",
            400,
            "99999999999999999999",
        ),
    ];
    for &(path, status, needle) in cases {
        let error = client.get(path).await.error(status);
        assert!(error.contains(needle), "{path}: {error:?} lacks {needle:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consistency_proofs_are_the_cli_json_and_verify_between_heads() {
    let server = TestServer::new(4, HashKind::Blake3).await;
    let client = server.client();
    let config = tree(4, HashKind::Blake3);
    let all = leaves(5, 21);
    client.post_json(&all, None).await.ok();
    let mut local = local_tree(config, &all);
    let heads: Vec<TreeHead> = (0..=21).map(|s| local.at_size(s).unwrap().head()).collect();
    for from in 0..=21u64 {
        for to in from..=21u64 {
            let reply = client
                .get(&format!("/v1/consistency?from={from}&to={to}"))
                .await;
            let want = local.prove_consistency(from, to).unwrap().to_json() + "\n";
            assert_eq!(reply.text(), want, "{from}..{to}");
            let proof = ConsistencyProof::from_json(reply.text()).unwrap();
            proof
                .verify(
                    config.arity,
                    config.hash,
                    &heads[from as usize],
                    &heads[to as usize],
                )
                .unwrap();
        }
    }
    let reply = client.get("/v1/consistency?from=7").await;
    assert_eq!(
        reply.text(),
        local.prove_consistency(7, 21).unwrap().to_json() + "\n"
    );

    let cases: &[(&str, u16, &str)] = &[
        ("/v1/consistency", 400, "missing query parameter from"),
        ("/v1/consistency?to=3", 400, "missing query parameter from"),
        (
            "/v1/consistency?from=5&to=4",
            400,
            "from 5 is larger than to 4",
        ),
        (
            "/v1/consistency?from=22",
            400,
            "from 22 is larger than to 21",
        ),
        (
            "/v1/consistency?from=1&to=22",
            404,
            "to 22 is beyond the tree's durable size 21",
        ),
        (
            "/v1/consistency?from=one",
            400,
            "from \"one\" is not a non-negative integer",
        ),
        (
            "/v1/consistency?from=1&size=2",
            400,
            "unknown query parameter \"size\"",
        ),
    ];
    for &(path, status, needle) in cases {
        let error = client.get(path).await.error(status);
        assert!(error.contains(needle), "{path}: {error:?} lacks {needle:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicates_are_refused_with_where_they_are_and_nothing_is_appended() {
    let server = TestServer::new(N, HashKind::Blake3).await;
    let client = server.client();
    let all = leaves(6, 4);
    client.post_json(&all, None).await.ok();
    let before = client.get("/v1/root").await.ok();

    let fresh = leaf(6, 100);
    let batch = [fresh, all[2], fresh, leaf(6, 101)];
    let reply = client.post_binary(&batch, None).await;
    let error = reply.error(409);
    assert!(
        error.contains("2 duplicate values in a batch of 4"),
        "{error}"
    );
    assert_eq!(
        reply.json()["duplicates"],
        serde_json::json!([
            {"position": 1, "value": to_hex(&all[2]), "index": 2},
            {"position": 2, "value": to_hex(&fresh), "batch_position": 0},
        ])
    );
    assert_eq!(client.get("/v1/root").await.ok(), before);
    client
        .get(&format!("/v1/leaves/{}", to_hex(&fresh)))
        .await
        .error(404);
    // The refused batch's fresh values can still be appended.
    let appended = client.post_json(&[fresh, leaf(6, 101)], None).await.ok();
    assert_eq!(appended["first_index"], 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_routes_and_methods_answer_json_errors() {
    let server = TestServer::new(N, HashKind::Blake3).await;
    let client = server.client();
    let error = client.get("/v2/root").await.error(404);
    assert!(error.contains("no route for GET /v2/root"), "{error}");
    let reply = client
        .request(Method::DELETE, "/v1/root", &[], Vec::new())
        .await;
    let error = reply.error(405);
    assert!(error.contains("/v1/root does not accept DELETE"), "{error}");
    let reply = client
        .request(Method::PUT, "/v1/leaves", &[], Vec::new())
        .await;
    reply.error(405);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_metrics_and_request_ids_are_served() {
    let server = TestServer::new(N, HashKind::Blake3).await;
    let client = server.client();
    let health = client.get("/healthz").await.ok();
    assert_eq!(health["status"], "ok", "{health}");
    assert!(health.get("error").is_none() && health.get("checkpoint").is_none());
    assert!(
        health["connections"]["open"].as_u64().unwrap() >= 1,
        "{health}"
    );
    client.post_json(&leaves(7, 3), None).await.ok();
    client
        .post_binary(&leaves(7, 3)[..1], None)
        .await
        .error(409);
    client.get("/v1/proofs/1").await.ok();
    client.get("/v1/proofs/x").await.error(400);

    let reply = client
        .request(
            Method::GET,
            "/v1/root",
            &[("x-request-id", "trace-me.42")],
            Vec::new(),
        )
        .await;
    assert_eq!(reply.headers["x-request-id"], "trace-me.42");
    let reply = client
        .request(
            Method::GET,
            "/v1/root",
            &[("x-request-id", "not ok!")],
            Vec::new(),
        )
        .await;
    assert_ne!(reply.headers["x-request-id"], "not ok!");

    let reply = client.get("/metrics").await;
    assert_eq!(reply.status, 200);
    assert!(
        reply.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    let text = reply.text();
    for line in [
        "cairn_appends_total 1\n",
        "cairn_leaves_appended_total 3\n",
        "cairn_duplicate_batches_total 1\n",
        "cairn_duplicates_rejected_total 1\n",
        "cairn_tree_size 3\n",
        "cairn_durable_size 3\n",
        "cairn_durable_wait_seconds_count 1\n",
        "cairn_append_seconds_count 1\n",
        "cairn_append_body_bytes_total ",
        "cairn_http_request_duration_seconds_count{method=\"GET\",route=\"/v1/proofs/{index}\",status=\"200\"} 1\n",
        "cairn_http_request_duration_seconds_count{method=\"GET\",route=\"/v1/proofs/{index}\",status=\"400\"} 1\n",
        "cairn_http_request_duration_seconds_count{method=\"POST\",route=\"/v1/leaves\",status=\"409\"} 1\n",
    ] {
        assert!(text.contains(line), "metrics lack {line:?}:\n{text}");
    }
    check_exposition_format(text);
}

/// The checkpoint histogram once saw only the checkpoint at shutdown; the
/// store's automatic checkpoints while serving must count too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_automatic_checkpoints_and_report_the_process() {
    let mut config = DbConfig::new(tree(N, HashKind::Blake3));
    config.store.checkpoint.every_appends = Some(1);
    let server = TestServer::with(config, |_| {}).await;
    let client = server.client();
    client.post_json(&leaves(9, 4), None).await.ok();
    let sample = |text: &str, name: &str| -> f64 {
        let line = text.lines().find(|l| l.starts_with(&format!("{name} ")));
        let line = line.unwrap_or_else(|| panic!("no {name} in:\n{text}"));
        line[name.len() + 1..].parse().unwrap()
    };
    // The background thread checkpoints after the append: wait for it,
    // bounded, by scraping.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let text = loop {
        let text = client.get("/metrics").await.text().to_owned();
        if sample(&text, "cairn_checkpoints_total") >= 1.0 {
            break text;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no automatic checkpoint:\n{text}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    };
    let checkpoints = sample(&text, "cairn_checkpoints_total");
    assert_eq!(
        sample(&text, "cairn_checkpoint_seconds_count"),
        checkpoints,
        "{text}"
    );
    assert!(sample(&text, "cairn_checkpoint_number") >= 1.0, "{text}");
    assert!(
        text.contains("# TYPE cairn_checkpoints_total counter\n"),
        "{text}"
    );
    if cfg!(target_os = "linux") {
        assert!(
            sample(&text, "process_resident_memory_bytes") > 0.0,
            "{text}"
        );
        assert!(sample(&text, "process_open_fds") >= 3.0, "{text}");
        assert!(sample(&text, "process_cpu_seconds_total") >= 0.0, "{text}");
        assert!(
            sample(&text, "process_start_time_seconds") > 1.6e9,
            "{text}"
        );
    }
    check_exposition_format(&text);
    server.stop().await.unwrap();
}

/// Every sample line belongs to a family announced by `# HELP` and
/// `# TYPE`, and its value parses.
fn check_exposition_format(text: &str) {
    let mut families = std::collections::HashSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split(' ');
            families.insert(parts.next().unwrap().to_owned());
            let kind = parts.next().unwrap();
            assert!(["counter", "gauge", "histogram"].contains(&kind), "{line}");
            continue;
        }
        if line.starts_with("# HELP ") {
            continue;
        }
        let (name_labels, value) = line.rsplit_once(' ').unwrap();
        value
            .parse::<f64>()
            .unwrap_or_else(|e| panic!("{line}: {e}"));
        let name = name_labels.split('{').next().unwrap();
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|suffix| name.strip_suffix(suffix).filter(|f| families.contains(*f)))
            .unwrap_or(name);
        assert!(families.contains(family), "{line}: no # TYPE for {family}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_without_a_set_refuses_lookups_with_501() {
    let mut config = DbConfig::new(tree(N, HashKind::Blake3));
    config.unique = false;
    let server = TestServer::with(config, |_| {}).await;
    let client = server.client();
    let all = leaves(8, 2);
    client.post_json(&all, None).await.ok();
    let error = client
        .get(&format!("/v1/leaves/{}", to_hex(&all[0])))
        .await
        .error(501);
    assert!(error.contains("no nullifier set"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_tree_refuses_appends_with_507() {
    let config = DbConfig::new(tree(2, HashKind::Blake3).with_max_depth(1));
    let server = TestServer::with(config, |_| {}).await;
    let client = server.client();
    let error = client.post_json(&leaves(9, 3), None).await.error(507);
    assert!(error.contains("capacity of 2 leaves"), "{error}");
    client.post_json(&leaves(9, 2), None).await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_fsync_answers_503_and_turns_health_to_failing() {
    let fs = Arc::new(SimFs::new());
    let mut config = DbConfig::new(tree(N, HashKind::Blake3));
    config.store.flush_interval = None;
    let db = Database::create_in(fs.clone(), Path::new("/db"), config).unwrap();
    let server = TestServer::start(db, |_| {}).await;
    let client = server.client();
    client.post_json(&leaves(10, 2), None).await.ok();

    fs.fail_nth_sync_data(1);
    let error = client.post_json(&[leaf(10, 2)], None).await.error(503);
    assert!(
        error.contains("leaves 2..3 were appended but not acknowledged as durable"),
        "{error}"
    );
    assert!(error.contains("injected fsync failure"), "{error}");
    let reply = client.get("/healthz").await;
    assert_eq!(reply.status, 503);
    assert_eq!(reply.json()["status"], "failing");
    let error = client.post_json(&[leaf(10, 3)], None).await.error(503);
    assert!(error.contains("stopped acknowledging writes"), "{error}");
    // Reads still answer, for the durable tree only.
    assert_eq!(client.head().await.size, 2);
    let metrics = client.get("/metrics").await;
    assert!(
        metrics.text().contains("cairn_append_failures_total 2\n"),
        "{}",
        metrics.text()
    );
    // The store is poisoned: the shutdown's flush reports it.
    assert!(server.stop().await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_lets_the_server_flush_and_checkpoint() {
    let server = TestServer::new(N, HashKind::Blake3).await;
    let client = server.client();
    client.post_json(&leaves(11, 30), None).await.ok();
    let db = Arc::clone(&server.db);
    server.stop().await.unwrap();
    let stats = db.stats();
    assert_eq!(stats.store.checkpoint_size, 30);
    assert_eq!(stats.store.durable, 30);
    assert!(
        client
            .try_request(Method::GET, "/healthz", &[], Vec::new())
            .await
            .is_err()
    );
}

/// A fixed-depth (zk-kit IMT) database through HTTP: the empty tree's root
/// is zeros[D], roots and proofs equal the in-memory tree's, proofs name
/// their tree and verify only against it, zk-kit's IMT proof format is
/// served, and appends beyond N^D are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_imt_serves_its_kind_roots_and_proofs() {
    let zero = leaf(77, 0);
    let config =
        tree(5, HashKind::Poseidon).with_kind(cairn_core::TreeKind::Fixed { depth: 2, zero });
    let server = TestServer::with(DbConfig::new(config), |_| {}).await;
    let client = server.client();
    let empty = client.get("/v1/root").await.ok();
    assert_eq!(
        empty,
        serde_json::json!({"size": 0, "root": to_hex(&config.empty_root().unwrap()), "depth": 2, "arity": 5, "hash": "poseidon", "finalized": 0, "kind": "imt", "zero": to_hex(&zero)})
    );
    let all = leaves(8, 25);
    client.post_json(&all[..7], None).await.ok();
    let mut local = local_tree(config, &all[..7]);
    let root = client.get("/v1/root").await.ok();
    assert_eq!(root["root"], to_hex(&local.root().unwrap()));
    assert_eq!(root["depth"], 2);
    for index in [0u64, 5, 6] {
        let reply = client.get(&format!("/v1/proofs/{index}")).await;
        let want = local.prove(index).unwrap();
        assert_eq!(reply.text(), want.to_json() + "\n");
        let proof = MembershipProof::from_json(reply.text()).unwrap();
        proof.verify_with(&config, &local.head()).unwrap();
        assert!(
            proof
                .verify(config.arity, config.hash, &local.head())
                .is_err()
        );
        let zkkit = client
            .get(&format!("/v1/proofs/{index}?format=zkkit"))
            .await
            .ok();
        assert_eq!(
            zkkit,
            serde_json::from_str::<serde_json::Value>(&want.to_zkkit_json().unwrap()).unwrap()
        );
    }
    let error = client.get("/v1/proofs/1?format=circom").await.error(400);
    assert!(error.contains("lean trees"), "{error}");
    let reply = client.get("/v1/consistency?from=0&to=7").await;
    let proof = ConsistencyProof::from_json(reply.text()).unwrap();
    proof
        .verify_with(&config, &config.empty_head(), &local.head())
        .unwrap();
    // Up to N^D = 25 leaves, not one more.
    client.post_json(&all[7..], None).await.ok();
    let error = client.post_json(&[leaf(9, 0)], None).await.error(507);
    assert!(error.contains("capacity of 25 leaves"), "{error}");
    let mut full = local_tree(config, &all);
    assert_eq!(
        client.get("/v1/root").await.ok()["root"],
        to_hex(&full.root().unwrap())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_lookups_answer_each_value_at_one_durable_size() {
    let server = TestServer::with(DbConfig::new(tree(N, HashKind::Blake3)), |config| {
        config.token = Some("secret".into());
    })
    .await;
    let client = server.client();
    let all = leaves(11, 9);
    client.post_json(&all, Some("secret")).await.ok();
    let absent = leaf(11, 99);
    let asked = [all[4], absent, all[0], all[8], all[4]];
    let want = serde_json::json!({"size": 9, "indices": [4, null, 0, 8, 4]});
    // A read: no token needed, JSON or binary bodies alike.
    let by_json = client
        .post_to(
            "/v1/lookup",
            &serde_json::json!({"leaves": asked.iter().map(to_hex).collect::<Vec<_>>()}),
            None,
        )
        .await
        .ok();
    assert_eq!(by_json, want);
    let by_binary = client
        .request(
            Method::POST,
            "/v1/lookup",
            &[("content-type", "application/octet-stream")],
            asked.concat(),
        )
        .await
        .ok();
    assert_eq!(by_binary, want);
    // Each answer is what the single lookup says.
    for (value, index) in asked.iter().zip(want["indices"].as_array().unwrap()) {
        let single = client.get(&format!("/v1/leaves/{}", to_hex(value))).await;
        match index.as_u64() {
            Some(i) => assert_eq!(single.ok()["index"], i),
            None => assert_eq!(single.status, 404),
        }
    }
    // Bad bodies: a block, no values, a torn record.
    let error = client
        .post_to(
            "/v1/lookup",
            &serde_json::json!({"leaves": [to_hex(&all[0])], "block": {"number": 1}}),
            None,
        )
        .await
        .error(400);
    assert!(error.contains("not a block"), "{error}");
    let error = client
        .post_to("/v1/lookup", &serde_json::json!({"leaves": []}), None)
        .await
        .error(400);
    assert!(error.contains("no values"), "{error}");
    client
        .request(
            Method::POST,
            "/v1/lookup",
            &[("content-type", "application/octet-stream")],
            vec![0u8; 33],
        )
        .await
        .error(400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_server_answers_batch_lookups_and_refuses_appends() {
    let (dir, db) = temp_db(DbConfig::new(tree(N, HashKind::Blake3)));
    let all = leaves(12, 6);
    db.append(&all)
        .unwrap()
        .wait(&db, std::time::Duration::from_secs(30))
        .unwrap();
    let server = TestServer::start(db, |config| config.read_only = true).await;
    let client = server.client();
    let found = client
        .post_to(
            "/v1/lookup",
            &serde_json::json!({"leaves": [to_hex(&all[5]), to_hex(&leaf(12, 50))]}),
            None,
        )
        .await
        .ok();
    assert_eq!(found, serde_json::json!({"size": 6, "indices": [5, null]}));
    client.post_json(&all[..1], None).await.error(403);
    drop(server);
    drop(dir);
}
