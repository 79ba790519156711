//! The batch circuits' witnesses over HTTP: `GET /v1/witness/append` is
//! the tree's own append witness (a reference tree's, byte for byte), and
//! `POST /v1/witness/insert` the indexed tree's insertion witness for
//! values it does not insert; both under `/v1/trees/{name}` too; each
//! refusal with its status and the value it names; the kinds without the
//! witness answer 404. In a database of several trees of mixed kinds, each
//! tree's routes answer its own witnesses (those of a single-tree database
//! holding the same values) and its own refusals.

use std::sync::Arc;
use std::time::Duration;

use cairn_core::hex::to_hex;
use cairn_core::{Hash, HashKind, LeanImt, TreeKind};
use cairn_db::{Database, DbConfig, Forest};
use serde_json::json;

use crate::forest::{ForestServer, block, hexes};
use crate::support::*;

/// The config of an indexed database of arity `n` under `hash`.
fn indexed(n: u64, hash: HashKind) -> DbConfig {
    let mut config = DbConfig::new(tree(n, hash));
    config.store.tree = config.store.tree.with_kind(TreeKind::Indexed);
    config
}

/// The circom input of the append witness of leaves `from..to` of a
/// reference tree of `leaves`, as the server ends it (a newline).
fn reference_append(leaves: &[cairn_core::Hash], from: u64, to: u64, depth: Option<u32>) -> String {
    let mut tree = LeanImt::from_leaves(tree(2, HashKind::Poseidon), leaves).unwrap();
    let witness = tree.snapshot().append_witness(from, to).unwrap();
    witness.to_circom_json(depth).unwrap() + "\n"
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn append_witnesses_are_the_trees_own_and_bad_ranges_are_refused() {
    let server = TestServer::new(2, HashKind::Poseidon).await;
    let client = server.client();
    let all = leaves(33, 37);
    client.post_json(&all, None).await.ok();

    let reply = client
        .get("/v1/witness/append?from=5&to=21&circuit_depth=8")
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.headers["content-type"], "application/json");
    assert_eq!(reply.text(), reference_append(&all, 5, 21, Some(8)));
    let input = reply.json();
    assert_eq!(input["size"], "5");
    assert_eq!(input["leaves"].as_array().unwrap().len(), 16);
    assert_eq!(input["frontier"].as_array().unwrap().len(), 8);
    // Cached like a proof: the same answer has the same tag.
    let tag = reply.headers["etag"].to_str().unwrap().to_owned();
    let again = client
        .request(
            axum::http::Method::GET,
            "/v1/witness/append?from=5&to=21&circuit_depth=8",
            &[("if-none-match", &tag)],
            Vec::new(),
        )
        .await;
    assert_eq!(again.status, 304);
    // The default depth is the new tree's; the empty tree's root is 0.
    let reply = client.get("/v1/witness/append?from=0&to=4").await;
    assert_eq!(reply.text(), reference_append(&all, 0, 4, None));
    assert_eq!(reply.json()["oldRoot"], "0");
    let named = client
        .get("/v1/trees/default/witness/append?from=33&to=37")
        .await;
    assert_eq!(named.text(), reference_append(&all, 33, 37, None));

    for (query, status, says) in [
        ("from=5", 400, "missing query parameter"),
        ("to=9", 400, "missing query parameter"),
        ("from=9&to=5", 400, "from 9 is above to 5"),
        ("from=5&to=5", 400, "a batch of 0"),
        ("from=5&to=8", 400, "a batch of 3"),
        (
            "from=5&to=41",
            404,
            "to 41 is beyond the tree's durable size 37",
        ),
        ("from=5&to=21&circuit_depth=4", 400, "depth"),
        ("from=5&to=21&circuit_depth=65", 400, "depth"),
        ("from=5&to=21&circuit_depth=99999999999", 400, "depth"),
        ("from=-1&to=3", 400, "not a non-negative integer"),
        ("from=1&to=5&size=3", 400, "unknown query parameter"),
    ] {
        let reply = client.get(&format!("/v1/witness/append?{query}")).await;
        let error = reply.error(status);
        assert!(error.contains(says), "{query}: {error}");
    }
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn append_witnesses_need_a_binary_poseidon_append_only_tree() {
    for (config, says) in [
        (DbConfig::new(tree(2, HashKind::Blake3)), "Poseidon"),
        (DbConfig::new(tree(4, HashKind::Poseidon)), "arity"),
    ] {
        let server = TestServer::with(config, |_| {}).await;
        let client = server.client();
        client.post_json(&leaves(3, 8), None).await.ok();
        let error = client
            .get("/v1/witness/append?from=0&to=8")
            .await
            .error(400);
        assert!(error.contains(says), "{error}");
        // An append-only tree has no insertion witnesses.
        let reply = client
            .post_to("/v1/witness/insert", &json!({"values": ["1"]}), None)
            .await;
        let error = reply.error(404);
        assert!(error.contains("no insertion witnesses"), "{error}");
        server.stop().await.unwrap();
    }
    let server = TestServer::with(indexed(2, HashKind::Poseidon), |_| {}).await;
    let error = server
        .client()
        .get("/v1/witness/append?from=0&to=4")
        .await
        .error(404);
    assert!(
        error.starts_with("an indexed database has no append witnesses"),
        "{error}"
    );
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insertion_witnesses_are_the_databases_and_insert_nothing() {
    // Read-only and with a write token: a witness is a read.
    let server = TestServer::with(indexed(2, HashKind::Poseidon), |config| {
        config.max_batch_leaves = 8;
    })
    .await;
    let client = server.client();
    let stored: Vec<_> = (1..=8u64).map(|i| value(i * 100)).collect();
    client.post_json(&stored, None).await.ok();
    let before = client.get("/v1/root").await.ok();

    // Two sharing a low leaf, one above every stored value, one below.
    let batch = [value(150), value(160), value(5000), value(7)];
    let decimal = ["150", "160", "5000", "7"];
    let (head, witness) = server.db.insertion_witness(&batch).unwrap();
    let want = witness.to_circom_json(&head, Some(6)).unwrap() + "\n";
    let hex: Vec<_> = batch.iter().map(to_hex).collect();
    for values in [json!(hex), json!(decimal)] {
        for path in ["/v1/witness/insert", "/v1/trees/default/witness/insert"] {
            let reply = client
                .post_to(path, &json!({"values": values, "circuit_depth": 6}), None)
                .await;
            assert_eq!(reply.status, 200, "{path}: {}", reply.text());
            assert_eq!(reply.text(), want, "{path}");
        }
    }
    let input: serde_json::Value = serde_json::from_str(&want).unwrap();
    assert_eq!(input["size"], "9");
    assert_eq!(input["values"], json!(decimal));
    // The default depth is the tree's after the batch (13 leaves: 4).
    let reply = client
        .post_to("/v1/witness/insert", &json!({"values": decimal}), None)
        .await
        .ok();
    assert_eq!(reply["frontier"][0].as_array().unwrap().len(), 4);
    assert_eq!(
        client.get("/v1/root").await.ok(),
        before,
        "nothing inserted"
    );

    let p = "21888242871839275222246405745257275088548364400416034343698204186575808495617";
    for (body, status, says) in [
        (
            json!({"values": ["300", "150", "160", "170"]}),
            409,
            "already leaf 3",
        ),
        (
            json!({"values": ["150", "160", "150", "170"]}),
            409,
            "position 2",
        ),
        (json!({"values": ["0", "150", "160", "170"]}), 400, "guard"),
        (
            json!({"values": [p, "150", "160", "170"]}),
            400,
            "position 0",
        ),
        (
            json!({"values": ["150", "160", "170"]}),
            400,
            "a batch of 3",
        ),
        (
            json!({"values": ["150", "160", "170", "180"], "circuit_depth": 3}),
            400,
            "depth",
        ),
        (json!({"values": []}), 400, "no values"),
        (json!({"leaves": ["150"]}), 400, "values"),
        (json!({"values": ["x1"]}), 400, "position 0"),
        (
            json!({"values": ["1", "2", "3", "4", "5", "6", "7", "8", "9"]}),
            413,
            "limit of 8",
        ),
    ] {
        let reply = client.post_to("/v1/witness/insert", &body, None).await;
        let error = reply.error(status);
        assert!(error.contains(says), "{body}: {error}");
        if status == 409 {
            let duplicates = &reply.json()["duplicates"];
            assert_eq!(duplicates.as_array().unwrap().len(), 1, "{body}");
        }
    }
    let reply = client
        .request(
            axum::http::Method::POST,
            "/v1/witness/insert",
            &[("content-type", "application/octet-stream")],
            vec![0; 32],
        )
        .await;
    reply.error(415);
    assert_eq!(
        client.get("/v1/root").await.ok(),
        before,
        "nothing inserted"
    );
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_server_and_one_with_a_token_answer_insertion_witnesses() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let db = cairn_db::Database::create(&path, indexed(2, HashKind::Poseidon)).unwrap();
        db.append(&[value(10), value(20)])
            .unwrap()
            .wait(&db, std::time::Duration::from_secs(30))
            .unwrap();
        db.close().unwrap();
    }
    for read_only in [true, false] {
        let db = cairn_db::Database::open(&path).unwrap();
        let server = TestServer::start(db, |config| {
            config.read_only = read_only;
            config.token = Some(TOKEN.to_owned());
        })
        .await;
        let body = json!({"values": ["11", "12", "13", "30"]});
        let reply = server
            .client()
            .post_to("/v1/witness/insert", &body, None)
            .await;
        assert_eq!(reply.status, 200, "read-only {read_only}: {}", reply.text());
        assert_eq!(reply.json()["size"], "3");
        server.stop().await.unwrap();
    }
}

/// `values` appended to a fresh single-tree database of `config`: the
/// reference a forest's tree of the same values must answer as.
fn reference_db(config: DbConfig, values: &[Hash]) -> (tempfile::TempDir, Database) {
    let (dir, db) = temp_db(config);
    db.append(values)
        .unwrap()
        .wait(&db, Duration::from_secs(30))
        .unwrap();
    (dir, db)
}

/// The circom input of inserting `batch` into `db` at depth `depth`, as the server ends it.
fn reference_insert(db: &Database, batch: &[Hash], depth: u32) -> String {
    let (head, witness) = db.insertion_witness(batch).unwrap();
    witness.to_circom_json(&head, Some(depth)).unwrap() + "\n"
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_tree_of_a_forest_answers_its_own_witnesses() {
    // Two indexed trees (one of them `default`, the tree of the routes
    // without a prefix) holding different values, a binary Poseidon lean
    // tree, and two lean trees without append witnesses.
    let dir = tempfile::tempdir().unwrap();
    let forest = Forest::create(dir.path().join("db")).unwrap();
    for (name, config) in [
        ("default", indexed(2, HashKind::Poseidon)),
        ("notes", DbConfig::new(tree(2, HashKind::Poseidon))),
        ("set", indexed(2, HashKind::Poseidon)),
        ("wide", DbConfig::new(tree(4, HashKind::Poseidon))),
        ("plain", DbConfig::new(tree(2, HashKind::Blake3))),
    ] {
        forest.add_tree(name, config).unwrap();
    }
    let server = ForestServer::serve(dir, Arc::new(forest), |_| {}).await;
    let client = &server.client;
    let in_default: Vec<_> = (1..=8u64).map(|i| value(i * 100)).collect();
    let in_set: Vec<_> = [150, 250, 350, 9000, 12].map(value).to_vec();
    let mut notes = leaves(41, 20);
    client
        .post_to(
            "/v1/blocks",
            &block(
                1,
                json!({
                    "default": hexes(&in_default),
                    "set": hexes(&in_set),
                    "notes": hexes(&notes),
                    "wide": hexes(&leaves(42, 9)),
                    "plain": hexes(&leaves(43, 5)),
                }),
            ),
            None,
        )
        .await
        .ok();
    let (_default_dir, default_db) = reference_db(indexed(2, HashKind::Poseidon), &in_default);
    let (_set_dir, set_db) = reference_db(indexed(2, HashKind::Poseidon), &in_set);

    // Insertion witnesses: each indexed tree's own, with and without the prefix for `default`.
    let batch = [value(160), value(170), value(5000), value(7)];
    let body = json!({"values": hexes(&batch), "circuit_depth": 6});
    let want = reference_insert(&default_db, &batch, 6);
    for path in ["/v1/witness/insert", "/v1/trees/default/witness/insert"] {
        let reply = client.post_to(path, &body, None).await;
        assert_eq!(reply.status, 200, "{path}: {}", reply.text());
        assert_eq!(reply.text(), want, "{path}");
    }
    let reply = client
        .post_to("/v1/trees/set/witness/insert", &body, None)
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.text(), reference_insert(&set_db, &batch, 6));
    assert_ne!(reply.text(), want, "the two indexed trees differ");
    assert_eq!(reply.json()["size"], "6");
    // A value one indexed tree holds and the other does not.
    let held = json!({"values": ["150", "160", "170", "5000"]});
    let refused = client
        .post_to("/v1/trees/set/witness/insert", &held, None)
        .await;
    assert!(refused.error(409).contains("already leaf 1"));
    let reply = client.post_to("/v1/witness/insert", &held, None).await;
    assert_eq!(reply.status, 200, "{}", reply.text());

    // Append witnesses: the lean Poseidon tree's own, and each other kind's refusal.
    let reply = client
        .get("/v1/trees/notes/witness/append?from=4&to=20&circuit_depth=8")
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.text(), reference_append(&notes, 4, 20, Some(8)));
    for (path, status, says) in [
        (
            "/v1/witness/append?from=0&to=4",
            404,
            "an indexed database has no append witnesses",
        ),
        (
            "/v1/trees/set/witness/append?from=0&to=4",
            404,
            "an indexed database has no append witnesses",
        ),
        ("/v1/trees/wide/witness/append?from=0&to=8", 400, "arity"),
        (
            "/v1/trees/plain/witness/append?from=0&to=4",
            400,
            "Poseidon",
        ),
        (
            "/v1/trees/notes/witness/append?from=16&to=24",
            404,
            "to 24 is beyond the tree's durable size 20",
        ),
        (
            "/v1/trees/missing/witness/append?from=0&to=4",
            404,
            "\"missing\"",
        ),
    ] {
        let error = client.get(path).await.error(status);
        assert!(error.contains(says), "{path}: {error}");
    }
    for (name, says) in [
        ("notes", "no insertion witnesses"),
        ("plain", "no insertion witnesses"),
        ("missing", "\"missing\""),
    ] {
        let path = format!("/v1/trees/{name}/witness/insert");
        let error = client.post_to(&path, &body, None).await.error(404);
        assert!(error.contains(says), "{path}: {error}");
    }

    // The witnessed batch inserted into `set` in a block with more notes:
    // the next witnesses start from the head the last one claimed.
    let claimed = client
        .post_to("/v1/trees/set/witness/insert", &body, None)
        .await
        .ok();
    let more = leaves(44, 4);
    client
        .post_to(
            "/v1/blocks",
            &block(2, json!({"set": hexes(&batch), "notes": hexes(&more)})),
            None,
        )
        .await
        .ok();
    notes.extend(more);
    let next = client
        .post_to(
            "/v1/trees/set/witness/insert",
            &json!({"values": ["1", "2", "3", "4"], "circuit_depth": 6}),
            None,
        )
        .await
        .ok();
    assert_eq!(next["oldRoot"], claimed["newRoot"]);
    assert_eq!(next["size"], "10");
    let reply = client
        .get("/v1/trees/notes/witness/append?from=20&to=24")
        .await;
    assert_eq!(reply.text(), reference_append(&notes, 20, 24, None));
    // `default` was not in the block: its witness is unchanged.
    let reply = client.post_to("/v1/witness/insert", &body, None).await;
    assert_eq!(reply.text(), want);
    server.stop().await;
}

/// The field element `n` as a 32-byte big-endian value.
fn value(n: u64) -> cairn_core::Hash {
    let mut bytes = [0u8; 32];
    bytes[24..].copy_from_slice(&n.to_be_bytes());
    bytes
}
