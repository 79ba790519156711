//! An indexed database over HTTP: inserts (with and without witnesses),
//! the head, absence and membership proofs verified against it, lookups,
//! refusals (duplicates, the guard value, block tags), the lean history
//! routes answering 404, and a lean server answering 404 for absence;
//! rollback and finalize by size (refusals, proofs against the rolled
//! back head, a restart keeping both); CORS and the request metrics.
//! Every status is checked against the OpenAPI document by the client
//! (preflights aside: they are no API route).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::http::Method;
use cairn_core::hex::{parse_hash, to_hex};
use cairn_core::indexed::{AbsenceProof, IndexedMembershipProof, IndexedTree, InsertionWitness};
use cairn_core::{HashKind, TreeHead, TreeKind};
use cairn_db::{Database, DbConfig, IndexedDb};
use cairn_server::{CorsPolicy, Server, ServerConfig, ServerError};
use serde_json::json;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::browsers::{APP, header, raw_to};
use crate::support::*;

/// An indexed database served on a free port until [`Indexed::stop`].
struct Indexed {
    addr: SocketAddr,
    stop: oneshot::Sender<()>,
    task: JoinHandle<Result<(), ServerError>>,
}

impl Indexed {
    async fn start(db: &Arc<Database>, edit: impl FnOnce(&mut ServerConfig)) -> Indexed {
        let (stop, signal) = oneshot::channel::<()>();
        let mut config = ServerConfig::new("127.0.0.1:0".parse().unwrap());
        config.token = Some(TOKEN.to_owned());
        edit(&mut config);
        let server = Server::bind(Arc::clone(db), config).await.unwrap();
        let addr = server.local_addr();
        let task = tokio::spawn(server.run(async move {
            let _ = signal.await;
        }));
        Indexed { addr, stop, task }
    }

    fn client(&self) -> Client {
        Client::new(self.addr)
    }

    async fn stop(self) {
        let _ = self.stop.send(());
        self.task.await.unwrap().unwrap();
    }
}

/// A fresh indexed database of `tree` in `path`.
fn indexed_db(path: &std::path::Path, mut config: DbConfig) -> Arc<Database> {
    config.store.tree = config.store.tree.with_kind(TreeKind::Indexed);
    Arc::new(Database::create(path, config).unwrap())
}

/// The head of the indexed tree of `values` (the guard first).
fn head_of_values(config: cairn_core::TreeConfig, values: &[cairn_core::Hash]) -> TreeHead {
    IndexedTree::from_values(config, values).unwrap().head()
}

/// The value of the one sample of `name` (with its labels, if any) in a
/// Prometheus text exposition.
fn sample(text: &str, name: &str) -> u64 {
    let prefix = format!("{name} ");
    let line = text
        .lines()
        .find(|line| line.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no sample {name} in\n{text}"));
    line[prefix.len()..].parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_indexed_database_serves_inserts_absence_proofs_and_witnesses() {
    let config = tree(4, HashKind::Blake3);
    let dir = tempfile::tempdir().unwrap();
    let db = indexed_db(&dir.path().join("db"), DbConfig::new(config));
    let server = Indexed::start(&db, |_| {}).await;
    let client = server.client();
    let values = leaves(3, 120);

    let answer = client
        .post_to(
            "/v1/leaves",
            &json!({"leaves": values[..100].iter().map(to_hex).collect::<Vec<_>>()}),
            Some(TOKEN),
        )
        .await
        .ok();
    assert_eq!(
        (answer["first_index"].as_u64(), answer["count"].as_u64()),
        (Some(1), Some(100))
    );
    let want = IndexedTree::from_values(config, &values[..100]).unwrap();
    assert_eq!(answer["size"], 101);
    assert_eq!(answer["root"], to_hex(&want.root()));
    let root = client.get("/v1/root").await.ok();
    assert_eq!(
        (root["size"].as_u64(), root["kind"].as_str()),
        (Some(101), Some("indexed"))
    );
    let head = TreeHead::new(101, parse_hash(root["root"].as_str().unwrap()).unwrap());

    // Absence of a value not inserted, in both encodings.
    let absent = values[110];
    let reply = client
        .get(&format!("/v1/absence/{}", to_hex(&absent)))
        .await;
    assert_eq!(reply.status, 200);
    let proof = AbsenceProof::from_json(reply.text()).unwrap();
    proof
        .verify(config.arity, config.hash, &head, &absent)
        .unwrap();
    let binary = client
        .get(&format!("/v1/absence/{}?format=binary", to_hex(&absent)))
        .await;
    assert_eq!(AbsenceProof::from_bytes(&binary.body).unwrap(), proof);
    // A present value has none; its index and membership proof instead.
    let present = values[42];
    client
        .get(&format!("/v1/absence/{}", to_hex(&present)))
        .await
        .error(409);
    let index = client
        .get(&format!("/v1/leaves/{}", to_hex(&present)))
        .await
        .ok()["index"]
        .as_u64()
        .unwrap();
    assert_eq!(index, 43);
    let member = client.get(&format!("/v1/proofs/{index}")).await;
    IndexedMembershipProof::from_json(member.text())
        .unwrap()
        .verify(config.arity, config.hash, &head, &present)
        .unwrap();
    client.get("/v1/proofs/500").await.error(404);
    client
        .get(&format!("/v1/absence/{}", to_hex(&[0; 32])))
        .await
        .error(400);
    // Size 3 is inside the first insert: no retained head.
    let between = client
        .get(&format!("/v1/absence/{}?size=3", to_hex(&absent)))
        .await
        .error(404);
    assert!(between.contains("not a retained head"), "{between}");

    // A witnessed insert carries the head to the next one.
    let answer = client
        .post_to(
            "/v1/leaves?witness=1",
            &json!({"leaves": values[100..110].iter().map(to_hex).collect::<Vec<_>>()}),
            Some(TOKEN),
        )
        .await
        .ok();
    let witness = InsertionWitness::from_json(&answer["witness"].to_string()).unwrap();
    let after = witness.verify(config.arity, config.hash, &head).unwrap();
    assert_eq!(after.size, 111);
    assert_eq!(answer["root"], to_hex(&after.root.unwrap()));

    // The head before it is retained: a value inserted since is absent
    // there, by size and by root, and the proof verifies against it.
    let since = values[105];
    for query in [
        "size=101".to_owned(),
        format!("root={}", to_hex(&head.root.unwrap())),
    ] {
        let reply = client
            .get(&format!("/v1/absence/{}?{query}", to_hex(&since)))
            .await
            .ok();
        AbsenceProof::from_json(&reply.to_string())
            .unwrap()
            .verify(config.arity, config.hash, &head, &since)
            .unwrap();
    }
    client
        .get(&format!(
            "/v1/absence/{}?size=101&root={}",
            to_hex(&since),
            to_hex(&head.root.unwrap())
        ))
        .await
        .error(400);
    client
        .get(&format!("/v1/absence/{}", to_hex(&since)))
        .await
        .error(409);

    // Refusals.
    let dup = client
        .post_to(
            "/v1/leaves",
            &json!({"leaves": [to_hex(&values[5])]}),
            Some(TOKEN),
        )
        .await;
    assert!(dup.error(409).contains("duplicate"));
    assert_eq!(dup.json()["duplicates"][0]["index"], 6);
    client
        .post_to(
            "/v1/leaves",
            &json!({"leaves": [to_hex(&[0; 32])]}),
            Some(TOKEN),
        )
        .await
        .error(400);
    client
        .post_to(
            "/v1/leaves?block=3",
            &json!({"leaves": [to_hex(&values[115])]}),
            Some(TOKEN),
        )
        .await
        .error(400);
    client
        .post_to(
            "/v1/leaves",
            &json!({"leaves": [to_hex(&values[115])]}),
            None,
        )
        .await
        .error(401);
    // The lean tree's history routes do not apply.
    for path in [
        "/v1/consistency?from=1&to=2",
        "/v1/heads",
        &format!("/v1/roots/{}", to_hex(&after.root.unwrap())),
        "/v1/leaves?from=0",
    ] {
        assert!(
            client.get(path).await.error(404).contains("indexed"),
            "{path}"
        );
    }
    assert_eq!(client.get("/healthz").await.ok()["status"], "ok");
    assert!(
        client
            .get("/metrics")
            .await
            .text()
            .contains("cairn_indexed_size 111")
    );

    server.stop().await;
    assert_eq!(db.head(), after);
}

#[tokio::test]
async fn a_lean_database_has_no_absence_proofs() {
    let server = TestServer::new(2, HashKind::Sha256).await;
    let reply = server
        .client()
        .get(&format!("/v1/absence/{}", to_hex(&leaf(1, 1))))
        .await;
    assert!(reply.error(404).contains("indexed database"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_indexed_database_rolls_back_and_finalizes_by_size_and_a_restart_keeps_both() {
    let config = tree(4, HashKind::Blake3);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    // A chain follower's database: only finalize makes leaves final (not
    // the checkpoint the server writes at shutdown).
    let mut db_config = DbConfig::new(config);
    db_config.explicit_finality = true;
    let db = indexed_db(&path, db_config);
    let server = Indexed::start(&db, |_| {}).await;
    let client = server.client();
    let values = leaves(5, 60);

    // The guard is always final: even an empty database refuses size 0.
    let refusal = client
        .post_to("/v1/rollback", &json!({"to_size": 0}), Some(TOKEN))
        .await;
    assert!(refusal.error(409).contains("final"));
    assert_eq!(refusal.json()["finalized"], 1);

    let answer = client.post_json(&values[..50], Some(TOKEN)).await.ok();
    assert_eq!(answer["size"], 51);

    // Refusals change nothing: no token, a wrong one, a bad body, beyond
    // the durable size, a block target (an indexed database tags none).
    client
        .post_to("/v1/rollback", &json!({"to_size": 20}), None)
        .await
        .error(401);
    client
        .post_to("/v1/rollback", &json!({"to_size": 20}), Some("wrong"))
        .await
        .error(401);
    client
        .post_to("/v1/finalize", &json!({"size": 20}), None)
        .await
        .error(401);
    client
        .post_to(
            "/v1/rollback",
            &json!({"to_size": 20, "to_block": 3}),
            Some(TOKEN),
        )
        .await
        .error(400);
    client
        .post_to("/v1/rollback", &json!({"size": 20}), Some(TOKEN))
        .await
        .error(400);
    let beyond = client
        .post_to("/v1/rollback", &json!({"to_size": 52}), Some(TOKEN))
        .await
        .error(404);
    assert!(beyond.contains("52") && beyond.contains("51"), "{beyond}");
    let block = client
        .post_to("/v1/rollback", &json!({"to_block": 3}), Some(TOKEN))
        .await
        .error(404);
    assert!(block.contains("block-tagged"), "{block}");
    client
        .post_to("/v1/finalize", &json!({"block": 3}), Some(TOKEN))
        .await
        .error(404);
    client
        .post_to("/v1/finalize", &json!({"size": 52}), Some(TOKEN))
        .await
        .error(404);
    assert_eq!(db.head(), head_of_values(config, &values[..50]));

    // Finalize: never lowered.
    let finalized = client
        .post_to("/v1/finalize", &json!({"size": 11}), Some(TOKEN))
        .await
        .ok();
    assert_eq!(finalized, json!({"finalized": 11}));
    let finalized = client
        .post_to("/v1/finalize", &json!({"size": 4}), Some(TOKEN))
        .await
        .ok();
    assert_eq!(finalized, json!({"finalized": 11}));
    assert_eq!(client.get("/v1/root").await.ok()["finalized"], 11);
    for to in [0, 1, 10] {
        let refusal = client
            .post_to("/v1/rollback", &json!({"to_size": to}), Some(TOKEN))
            .await;
        let message = refusal.error(409);
        assert!(message.contains("the first 11 are final"), "{message}");
        assert_eq!(refusal.json()["finalized"], 11);
    }
    assert_eq!(db.head().size, 51);

    // Roll back to the guard and 30 values: the answer, the head, proofs
    // and lookups are the rolled back tree's.
    let rolled_back = client
        .post_to("/v1/rollback", &json!({"to_size": 31}), Some(TOKEN))
        .await
        .ok();
    let want = head_of_values(config, &values[..30]);
    assert_eq!(
        rolled_back,
        json!({"size": 31, "root": to_hex(&want.root.unwrap()), "finalized": 11})
    );
    let head = head_of(&client.get("/v1/root").await.ok());
    assert_eq!(head, want);
    let member = client.get("/v1/proofs/30").await;
    IndexedMembershipProof::from_json(member.text())
        .unwrap()
        .verify(config.arity, config.hash, &head, &values[29])
        .unwrap();
    client.get("/v1/proofs/31").await.error(404);
    let removed = values[40];
    client
        .get(&format!("/v1/leaves/{}", to_hex(&removed)))
        .await
        .error(404);
    let absence = client
        .get(&format!("/v1/absence/{}", to_hex(&removed)))
        .await;
    AbsenceProof::from_json(absence.text())
        .unwrap()
        .verify(config.arity, config.hash, &head, &removed)
        .unwrap();
    // Removed values go in again, at the indices they left.
    let again = client.post_json(&values[40..45], Some(TOKEN)).await.ok();
    assert_eq!(
        (again["first_index"].as_u64(), again["size"].as_u64()),
        (Some(31), Some(36))
    );
    let mut now = values[..30].to_vec();
    now.extend_from_slice(&values[40..45]);
    let after = head_of_values(config, &now);
    assert_eq!(head_of(&client.get("/v1/root").await.ok()), after);
    server.stop().await;

    // A restart (the server checkpointed at shutdown) keeps the rollback
    // and the finality; so does a rollback made just before a reopen.
    let db = Arc::try_unwrap(db).unwrap();
    db.close().unwrap();
    let db = Arc::new(Database::open(&path).unwrap());
    assert_eq!(db.head(), after);
    let server = Indexed::start(&db, |c| c.checkpoint_on_shutdown = false).await;
    let client = server.client();
    let root = client.get("/v1/root").await.ok();
    assert_eq!(
        (head_of(&root), root["finalized"].as_u64()),
        (after, Some(11))
    );
    let rolled_back = client
        .post_to("/v1/rollback", &json!({"to_size": 33}), Some(TOKEN))
        .await
        .ok();
    assert_eq!(rolled_back["size"], 33);
    server.stop().await;
    let db = Arc::try_unwrap(db).unwrap();
    db.close().unwrap();
    let db = Database::open(&path).unwrap();
    assert_eq!(db.head(), head_of_values(config, &now[..32]));
    assert_eq!(db.finalized_size(), 11);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_indexed_server_answers_cors_and_counts_its_requests_in_metrics() {
    let config = tree(2, HashKind::Sha256);
    let dir = tempfile::tempdir().unwrap();
    let db = indexed_db(&dir.path().join("db"), DbConfig::new(config));
    let server = Indexed::start(&db, |c| {
        c.cors = CorsPolicy::Origins(vec![APP.to_owned()]);
    })
    .await;
    let client = server.client();

    // A write's preflight from the named origin is granted, with the
    // headers a token needs; another origin's is refused.
    let preflight = [
        ("origin", APP),
        ("access-control-request-method", "POST"),
        (
            "access-control-request-headers",
            "authorization, content-type",
        ),
    ];
    let (status, headers, _) =
        raw_to(server.addr, Method::OPTIONS, "/v1/rollback", &preflight, "").await;
    assert_eq!(status, 204);
    assert_eq!(header(&headers, "access-control-allow-origin"), Some(APP));
    assert!(
        header(&headers, "access-control-allow-methods")
            .unwrap()
            .contains("POST")
    );
    assert!(
        header(&headers, "access-control-allow-headers")
            .unwrap()
            .contains("authorization")
    );
    let other = [
        ("origin", "https://elsewhere.example.org"),
        ("access-control-request-method", "GET"),
    ];
    let (status, headers, _) = raw_to(server.addr, Method::OPTIONS, "/v1/root", &other, "").await;
    assert_eq!(status, 403);
    assert_eq!(header(&headers, "access-control-allow-origin"), None);
    // Answers to the named origin carry the CORS headers, others none.
    let values = leaves(9, 20);
    let body = json!({"leaves": values[..10].iter().map(to_hex).collect::<Vec<_>>()}).to_string();
    let authorization = format!("Bearer {TOKEN}");
    let write = [
        ("origin", APP),
        ("content-type", "application/json"),
        ("authorization", authorization.as_str()),
    ];
    let reply = client
        .request(Method::POST, "/v1/leaves", &write, body.into_bytes())
        .await;
    assert_eq!(reply.ok()["size"], 11);
    assert_eq!(
        header(&reply.headers, "access-control-allow-origin"),
        Some(APP)
    );
    let reply = client
        .request(Method::GET, "/v1/root", &[("origin", APP)], Vec::new())
        .await;
    assert_eq!(
        header(&reply.headers, "access-control-allow-origin"),
        Some(APP)
    );
    assert!(
        header(&reply.headers, "access-control-expose-headers")
            .unwrap()
            .contains("x-request-id")
    );
    assert!(reply.headers.contains_key("x-request-id"));
    let reply = client
        .request(
            Method::GET,
            "/v1/root",
            &[("origin", "https://elsewhere.example.org")],
            Vec::new(),
        )
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(header(&reply.headers, "access-control-allow-origin"), None);

    // The metrics count these requests, the writes and the gauges.
    client
        .post_json(&values[3..5], Some(TOKEN))
        .await
        .error(409);
    client.post_json(&values[10..15], None).await.error(401);
    client
        .get(&format!("/v1/absence/{}", to_hex(&values[19])))
        .await
        .ok();
    client
        .post_to("/v1/finalize", &json!({"size": 4}), Some(TOKEN))
        .await
        .ok();
    client
        .post_to("/v1/rollback", &json!({"to_size": 8}), Some(TOKEN))
        .await
        .ok();
    client
        .post_to("/v1/rollback", &json!({"to_size": 2}), Some(TOKEN))
        .await
        .error(409);
    let text = client.get("/metrics").await.text().to_owned();
    let requests = |method: &str, route: &str, status: u16| {
        sample(
            &text,
            &format!(
                "cairn_http_request_duration_seconds_count{{method=\"{method}\",route=\"{route}\",status=\"{status}\"}}"
            ),
        )
    };
    assert_eq!(requests("GET", "/v1/root", 200), 2);
    assert_eq!(requests("POST", "/v1/leaves", 200), 1);
    assert_eq!(requests("POST", "/v1/leaves", 409), 1);
    assert_eq!(requests("POST", "/v1/leaves", 401), 1);
    assert_eq!(requests("POST", "/v1/rollback", 200), 1);
    assert_eq!(requests("POST", "/v1/rollback", 409), 1);
    // A preflight is no API route: it counts as unmatched.
    assert_eq!(requests("OPTIONS", "unmatched", 204), 1);
    assert_eq!(requests("GET", "/v1/absence/{value}", 200), 1);
    for (name, want) in [
        ("cairn_indexed_inserts_total", 1),
        ("cairn_indexed_values_total", 10),
        ("cairn_indexed_absence_proofs_total", 1),
        ("cairn_duplicate_batches_total", 1),
        ("cairn_duplicates_rejected_total", 2),
        ("cairn_rollbacks_total", 1),
        ("cairn_rolled_back_leaves_total", 3),
        ("cairn_finalizations_total", 1),
        ("cairn_indexed_size", 8),
        ("cairn_indexed_values", 7),
        ("cairn_indexed_durable_size", 8),
        ("cairn_indexed_logged_size", 8),
        ("cairn_indexed_pending_values", 0),
        ("cairn_finalized_size", 4),
        ("cairn_durable_wait_seconds_count", 1),
        ("cairn_rollback_seconds_count", 1),
    ] {
        assert_eq!(sample(&text, name), want, "{name}");
    }
    // The block-tag counters of the lean server do not apply.
    assert!(!text.contains("cairn_block_order_refusals_total"));
    server.stop().await;
}

/// A rollback waits for the inserts in flight and holds new ones off until
/// it is durable: no insert is answered with a head that lacks its values.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inserts_racing_rollbacks_are_answered_with_heads_that_hold_them() {
    let config = tree(2, HashKind::Blake3);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = indexed_db(&path, DbConfig::new(config));
    let server = Indexed::start(&db, |_| {}).await;
    let values = leaves(11, 400);
    let inserter = |chunk: Vec<cairn_core::Hash>| {
        let client = server.client();
        tokio::spawn(async move {
            for batch in chunk.chunks(5) {
                let answer = client.post_json(batch, Some(TOKEN)).await.ok();
                let first = answer["first_index"].as_u64().unwrap();
                let size = answer["size"].as_u64().unwrap();
                assert!(
                    size >= first + 5,
                    "leaves {first}..{} answered with a head of size {size}",
                    first + 5
                );
            }
        })
    };
    let inserters = [
        inserter(values[..200].to_vec()),
        inserter(values[200..].to_vec()),
    ];
    let client = server.client();
    let mut rollbacks = 0;
    loop {
        let size = client.get("/v1/root").await.ok()["size"].as_u64().unwrap();
        let to = 1 + size / 2;
        let answer = client
            .post_to("/v1/rollback", &json!({"to_size": to}), Some(TOKEN))
            .await
            .ok();
        assert_eq!(answer["size"], to);
        rollbacks += 1;
        if rollbacks == 20 || inserters.iter().all(|task| task.is_finished()) {
            break;
        }
    }
    for task in inserters {
        task.await.unwrap();
    }
    // The head is the tree of the values it holds, in leaf order.
    let head = db.head();
    server.stop().await;
    Arc::try_unwrap(db).unwrap().close().unwrap();
    let db = IndexedDb::open(&path).unwrap();
    assert_eq!(db.head(), head);
    let held: Vec<cairn_core::Hash> = (1..head.size)
        .map(|index| db.leaf(index).unwrap().value)
        .collect();
    let mut sorted = held.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), held.len());
    assert_eq!(head.root, head_of_values(config, &held).root);
}

/// A finalization (a checkpoint) without descriptors fails alone on an
/// indexed server too: 503 for it, the health `degraded`, and inserts are
/// still acknowledged (the server does not take it for a failed store).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_indexed_finalization_without_descriptors_stops_no_insert() {
    let fs = cairn_testkit::sim::SimFs::new();
    let mut db_config = DbConfig::new(tree(4, HashKind::Blake3).with_kind(TreeKind::Indexed));
    db_config.explicit_finality = true;
    let db = Arc::new(
        Database::create_in(Arc::new(fs.clone()), std::path::Path::new("/db"), db_config).unwrap(),
    );
    let server = Indexed::start(&db, |_| {}).await;
    let client = server.client();
    client.post_json(&leaves(40, 10), Some(TOKEN)).await.ok();
    fs.fail_opens(cairn_testkit::sim::OpenFault::TooManyFiles, "");
    let error = client
        .post_to("/v1/finalize", &json!({"size": 5}), Some(TOKEN))
        .await
        .error(503);
    assert!(error.contains("Too many open files"), "{error}");
    let health = client.get("/healthz").await.ok();
    assert_eq!(health["status"], "degraded", "{health}");
    let answer = client.post_json(&leaves(41, 10), Some(TOKEN)).await.ok();
    assert_eq!(answer["size"], 21);
    fs.clear_open_faults();
    let finalized = client
        .post_to("/v1/finalize", &json!({"size": 5}), Some(TOKEN))
        .await
        .ok();
    assert_eq!(finalized["finalized"], 5);
    assert_eq!(client.get("/healthz").await.ok()["status"], "ok");
    server.stop().await;
}
