//! A server of a database of several trees: `/v1/trees/{name}/...` beside
//! the default tree's routes, `GET /v1/trees`, `POST /v1/blocks` (all or
//! nothing across trees), `GET /v1/blocks`, per-tree heads, rollback and
//! finalization by block, metrics labelled by tree, and the read-only
//! server beside the writer.

use std::sync::Arc;

use cairn_core::hex::to_hex;
use cairn_core::{Hash, HashKind};
use cairn_db::{DbConfig, Forest};
use cairn_server::{Server, ServerConfig, ServerError};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::support::*;

/// A database of several trees served on a free port until `stop`.
pub(crate) struct ForestServer {
    pub(crate) client: Client,
    forest: Arc<Forest>,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), ServerError>>>,
    dir: TempDir,
}

/// `notes` (arity 2, BLAKE3), `nulls` (arity 4, BLAKE3) and `field`
/// (arity 2, Poseidon): no tree named `default`.
fn three_trees() -> (TempDir, Forest) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let forest = Forest::create(&path).unwrap();
    forest
        .add_tree("notes", DbConfig::new(tree(2, HashKind::Blake3)))
        .unwrap();
    forest
        .add_tree("nulls", DbConfig::new(tree(4, HashKind::Blake3)))
        .unwrap();
    forest
        .add_tree("field", DbConfig::new(tree(2, HashKind::Poseidon)))
        .unwrap();
    (dir, forest)
}

impl ForestServer {
    async fn start(edit: impl FnOnce(&mut ServerConfig)) -> ForestServer {
        let (dir, forest) = three_trees();
        ForestServer::serve(dir, Arc::new(forest), edit).await
    }

    pub(crate) async fn serve(
        dir: TempDir,
        forest: Arc<Forest>,
        edit: impl FnOnce(&mut ServerConfig),
    ) -> ForestServer {
        let mut config = ServerConfig::new("127.0.0.1:0".parse().unwrap());
        edit(&mut config);
        let server = Server::bind_forest(Arc::clone(&forest), config)
            .await
            .unwrap();
        let client = Client::new(server.local_addr());
        let (shutdown, signal) = oneshot::channel::<()>();
        let task = tokio::spawn(server.run(async move {
            if signal.await.is_err() {
                std::future::pending::<()>().await;
            }
        }));
        ForestServer {
            client,
            forest,
            shutdown: Some(shutdown),
            task: Some(task),
            dir,
        }
    }

    pub(crate) async fn stop(mut self) -> (TempDir, Arc<Forest>) {
        let _ = self.shutdown.take().unwrap().send(());
        self.task.take().unwrap().await.unwrap().unwrap();
        (self.dir, self.forest)
    }
}

pub(crate) fn hexes(values: &[Hash]) -> Vec<String> {
    values.iter().map(to_hex).collect()
}

pub(crate) fn block(number: u64, trees: Value) -> Value {
    json!({ "number": number, "hash": to_hex(&[number as u8; 32]), "trees": trees })
}

async fn size_of(client: &Client, name: &str) -> u64 {
    client.get(&format!("/v1/trees/{name}/root")).await.ok()["size"]
        .as_u64()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trees_are_listed_and_each_answers_under_its_prefix() {
    let server = ForestServer::start(|_| {}).await;
    let client = &server.client;
    let listed = client.get("/v1/trees").await.ok();
    let names: Vec<&str> = listed["trees"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["notes", "nulls", "field"]);
    assert_eq!(listed["trees"][1]["arity"], 4);
    assert_eq!(listed["trees"][2]["hash"], "poseidon");
    assert_eq!(listed["trees"][0]["kind"], "lean");
    assert_eq!(listed["trees"][0]["size"], 0);
    assert_eq!(listed["trees"][0]["root"], Value::Null);
    assert_eq!(listed["default"], Value::Null);
    assert_eq!(listed["journaled"], true);
    let root = client.get("/v1/trees/nulls/root").await.ok();
    assert_eq!(root["arity"], 4);
    // No tree named default and more than one tree: the routes without a
    // prefix name the tree they lack.
    let refused = client.get("/v1/root").await;
    assert!(refused.error(404).contains("no tree named \"default\""));
    assert_eq!(refused.json()["tree"], "default");
    let refused = client.get("/v1/trees/missing/root").await;
    let message = refused.error(404);
    assert!(
        message.contains("\"missing\"") && message.contains("notes, nulls, field"),
        "{message}"
    );
    assert_eq!(refused.json()["tree"], "missing");
    // An unknown route of a known tree is the router's refusal.
    let refused = client.get("/v1/trees/notes/nothing").await;
    assert!(refused.error(404).starts_with("no route"));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_block_writes_several_trees_and_each_serves_its_values() {
    let server = ForestServer::start(|_| {}).await;
    let client = &server.client;
    let notes = leaves(1, 5);
    let nulls = leaves(2, 3);
    let answer = client
        .post_to(
            "/v1/blocks",
            &block(
                10,
                json!({ "notes": hexes(&notes), "nulls": hexes(&nulls), "field": [] }),
            ),
            None,
        )
        .await
        .ok();
    assert_eq!(answer["block"]["number"], 10);
    assert_eq!(answer["block"]["hash"], to_hex(&[10u8; 32]));
    let mut local = local_tree(tree(2, HashKind::Blake3), &notes);
    // In the order the body names them (serde_json writes keys sorted).
    let named = |name: &str| {
        answer["trees"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()
            .clone()
    };
    let order: Vec<&str> = answer["trees"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["field", "notes", "nulls"]);
    assert_eq!(named("notes")["first_index"], 0);
    assert_eq!(named("notes")["count"], 5);
    assert_eq!(named("notes")["size"], 5);
    assert_eq!(named("notes")["root"], to_hex(&local.head().root.unwrap()));
    assert_eq!(named("nulls")["size"], 3);
    assert_eq!(named("field")["count"], 0);
    // Each tree serves what the block gave it, proofs included.
    let root = client.get("/v1/trees/notes/root").await.ok();
    assert_eq!(root["size"], 5);
    assert_eq!(root["root"], named("notes")["root"]);
    let proof = client.get("/v1/trees/notes/proofs/3?size=5").await.ok();
    assert_eq!(proof["index"], 3);
    let found = client
        .get(&format!("/v1/trees/nulls/leaves/{}", to_hex(&nulls[2])))
        .await
        .ok();
    assert_eq!(found["index"], 2);
    // Not in the other tree.
    client
        .get(&format!("/v1/trees/notes/leaves/{}", to_hex(&nulls[2])))
        .await
        .error(404);
    // A second block naming one tree: the others record their heads too.
    client
        .post_to(
            "/v1/blocks",
            &block(11, json!({ "nulls": hexes(&leaves(3, 2)) })),
            None,
        )
        .await
        .ok();
    let blocks = client.get("/v1/blocks").await.ok();
    let listed = blocks["blocks"].as_array().unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0]["number"], 10);
    assert_eq!(listed[1]["number"], 11);
    let sizes: Vec<(String, u64)> = listed[1]["trees"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_owned(),
                t["size"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        sizes,
        [
            ("notes".to_owned(), 5),
            ("nulls".to_owned(), 5),
            ("field".to_owned(), 0)
        ]
    );
    let page = client.get("/v1/blocks?from_block=11&limit=1").await.ok();
    assert_eq!(page["blocks"].as_array().unwrap().len(), 1);
    assert_eq!(page["next_from_block"], Value::Null);
    let page = client.get("/v1/blocks?limit=1").await.ok();
    assert_eq!(page["next_from_block"], 11);
    // One tree's heads by block.
    let heads = client.get("/v1/trees/notes/heads").await.ok();
    let heads = heads["heads"].as_array().unwrap();
    assert_eq!(heads.len(), 2);
    assert_eq!(heads[1]["block"], 11);
    assert_eq!(heads[1]["size"], 5);
    assert_eq!(heads[1]["block_hash"], to_hex(&[11u8; 32]));
    let listed = client.get("/v1/trees").await.ok();
    assert_eq!(listed["last_block"], 11);
    // Durable: the database reopened holds both blocks.
    let (dir, forest) = server.stop().await;
    let forest = Arc::try_unwrap(forest).unwrap();
    forest.close().unwrap();
    let reopened = Forest::open(dir.path().join("db")).unwrap();
    assert_eq!(reopened.tree("notes").unwrap().size(), 5);
    assert_eq!(reopened.tree("nulls").unwrap().size(), 5);
    assert_eq!(reopened.last_block(), Some(11));
    reopened.close().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_block_writes_nothing_in_any_tree() {
    let server = ForestServer::start(|config| config.max_batch_leaves = 8).await;
    let client = &server.client;
    let first = leaves(4, 2);
    client
        .post_to(
            "/v1/blocks",
            &block(1, json!({ "notes": hexes(&first) })),
            None,
        )
        .await
        .ok();
    let fresh = hexes(&leaves(5, 2));
    let cases: Vec<(Value, u16, &str)> = vec![
        // An unknown tree, named.
        (
            block(2, json!({ "nulls": fresh, "ghost": fresh })),
            404,
            "no tree named \"ghost\"",
        ),
        // A value the tree holds already: nothing of the block is kept.
        (
            block(2, json!({ "nulls": fresh, "notes": hexes(&first[..1]) })),
            409,
            "",
        ),
        // A block number that does not follow the last.
        (block(1, json!({ "nulls": fresh })), 409, "does not follow"),
        // A value that is not 32 bytes.
        (
            block(2, json!({ "nulls": ["0x1234"] })),
            400,
            "tree \"nulls\", value at position 0",
        ),
        // A field element at or above the modulus (hex and decimal).
        (block(2, json!({ "field": [to_hex(&[0xff; 32])] })), 400, ""),
        (
            block(
                2,
                json!({ "field": ["21888242871839275222246405745257275088548364400416034343698204186575808495617"] }),
            ),
            400,
            "tree \"field\", value at position 0",
        ),
        // More values than a request may carry, counted across trees.
        (
            block(
                2,
                json!({ "nulls": hexes(&leaves(6, 5)), "notes": hexes(&leaves(7, 4)) }),
            ),
            413,
            "9 values",
        ),
        // A tree named twice, a field the body does not have.
        (
            json!({"number": 2, "trees": {}, "parent": "0x00"}),
            400,
            "unknown field",
        ),
    ];
    for (body, status, needle) in cases {
        let reply = client.post_to("/v1/blocks", &body, None).await;
        let message = reply.error(status);
        assert!(message.contains(needle), "{body}: {message}");
        for (name, size) in [("notes", 2), ("nulls", 0), ("field", 0)] {
            assert_eq!(size_of(client, name).await, size, "{body}: tree {name}");
        }
    }
    let twice = br#"{"number": 2, "trees": {"nulls": [], "nulls": []}}"#;
    let reply = client
        .request(
            axum::http::Method::POST,
            "/v1/blocks",
            &[("content-type", "application/json")],
            twice.to_vec(),
        )
        .await;
    assert!(reply.error(400).contains("named twice"));
    let reply = client
        .request(
            axum::http::Method::POST,
            "/v1/blocks",
            &[("content-type", "application/octet-stream")],
            vec![0; 32],
        )
        .await;
    reply.error(415);
    assert_eq!(client.get("/v1/trees").await.ok()["last_block"], 1);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_appended_alone_goes_through_the_journal_and_rolls_back_by_block() {
    let server = ForestServer::start(|_| {}).await;
    let client = &server.client;
    // Untagged, then tagged (a block of one tree).
    let appended = client
        .post_to(
            "/v1/trees/notes/leaves",
            &json!({ "leaves": hexes(&leaves(8, 3)) }),
            None,
        )
        .await
        .ok();
    assert_eq!(appended["size"], 3);
    assert!(appended["root"].is_string());
    let tagged = client
        .post_to(
            "/v1/trees/notes/leaves",
            &json!({ "leaves": hexes(&leaves(9, 2)), "block": { "number": 5 } }),
            None,
        )
        .await
        .ok();
    assert_eq!(tagged["block"]["number"], 5);
    client
        .post_to(
            "/v1/blocks",
            &block(
                6,
                json!({ "notes": hexes(&leaves(10, 1)), "nulls": hexes(&leaves(11, 4)) }),
            ),
            None,
        )
        .await
        .ok();
    // A size target is refused: a database of several trees rolls back by
    // block, every tree at once.
    let refused = client
        .post_to("/v1/trees/notes/rollback", &json!({ "to_size": 3 }), None)
        .await;
    assert!(refused.error(400).contains("by block"));
    let refused = client
        .post_to(
            "/v1/trees/notes/leaves?witness=1",
            &json!({ "leaves": hexes(&leaves(12, 1)) }),
            None,
        )
        .await;
    assert!(refused.error(400).contains("witness"));
    let rolled = client
        .post_to("/v1/trees/nulls/rollback", &json!({ "to_block": 5 }), None)
        .await
        .ok();
    assert_eq!(rolled["size"], 0);
    assert_eq!(rolled["block"], 5);
    assert_eq!(size_of(client, "notes").await, 5);
    assert_eq!(size_of(client, "nulls").await, 0);
    // A rolled back block number may be written again.
    client
        .post_to(
            "/v1/blocks",
            &block(6, json!({ "nulls": hexes(&leaves(13, 1)) })),
            None,
        )
        .await
        .ok();
    let finalized = client
        .post_to("/v1/trees/notes/finalize", &json!({ "block": 6 }), None)
        .await
        .ok();
    assert_eq!(finalized["finalized"], 5);
    let refused = client
        .post_to("/v1/trees/nulls/rollback", &json!({ "to_block": 5 }), None)
        .await;
    refused.error(404);
    assert_eq!(client.get("/v1/trees").await.ok()["finalized_block"], 6);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_label_each_tree_and_keep_the_server_families_once() {
    let server = ForestServer::start(|_| {}).await;
    let client = &server.client;
    client
        .post_to(
            "/v1/blocks",
            &block(1, json!({ "nulls": hexes(&leaves(14, 3)) })),
            None,
        )
        .await
        .ok();
    let text = client.get("/metrics").await.text().to_owned();
    assert_eq!(
        text.matches("# TYPE cairn_tree_size gauge\n").count(),
        1,
        "{text}"
    );
    assert!(
        text.contains("cairn_tree_size{tree=\"nulls\"} 3\n"),
        "{text}"
    );
    assert!(
        text.contains("cairn_tree_size{tree=\"notes\"} 0\n"),
        "{text}"
    );
    assert!(
        text.contains("cairn_leaves_appended_total{tree=\"nulls\"} 3\n"),
        "{text}"
    );
    assert_eq!(
        text.matches("# TYPE cairn_http_connections_open gauge\n")
            .count(),
        1
    );
    assert!(
        !text.contains("cairn_http_connections_open{tree="),
        "{text}"
    );
    assert!(text.contains("route=\"/v1/blocks\""), "{text}");
    assert_eq!(client.get("/healthz").await.status, 200);
    assert_eq!(client.get("/readyz").await.status, 200);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_server_serves_every_tree_beside_the_writer() {
    let writer = ForestServer::start(|_| {}).await;
    let notes = leaves(15, 4);
    writer
        .client
        .post_to(
            "/v1/blocks",
            &block(1, json!({ "notes": hexes(&notes) })),
            None,
        )
        .await
        .ok();
    let dir = writer.dir.path().join("db");
    let mut config = ServerConfig::new("127.0.0.1:0".parse().unwrap());
    config.read_only = true;
    config.refresh_interval = std::time::Duration::from_millis(20);
    let reader = Server::bind_read_only_forest(&dir, config).await.unwrap();
    let client = Client::new(reader.local_addr());
    let (shutdown, signal) = oneshot::channel::<()>();
    let task = tokio::spawn(reader.run(async move {
        let _ = signal.await;
    }));
    let root = client.get("/v1/trees/notes/root").await.ok();
    assert_eq!(root["size"], 4);
    assert_eq!(
        root["root"],
        writer.client.get("/v1/trees/notes/root").await.ok()["root"]
    );
    let names = client.get("/v1/trees").await.ok()["trees"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(names, 3);
    let refused = client
        .post_to("/v1/blocks", &block(2, json!({ "notes": [] })), None)
        .await;
    assert!(refused.error(403).contains("read-only"));
    // The reader follows the writer.
    writer
        .client
        .post_to(
            "/v1/blocks",
            &block(2, json!({ "notes": hexes(&leaves(16, 1)) })),
            None,
        )
        .await
        .ok();
    let mut size = 0;
    for _ in 0..500 {
        size = size_of(&client, "notes").await;
        if size == 5 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(size, 5);
    let text = client.get("/metrics").await.text().to_owned();
    assert!(
        text.contains("cairn_durable_size{tree=\"notes\"} 5\n"),
        "{text}"
    );
    let _ = shutdown.send(());
    task.await.unwrap().unwrap();
    writer.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_database_is_served_as_the_tree_default() {
    let server = TestServer::new(2, HashKind::Blake3).await;
    let client = server.client();
    let listed = client.get("/v1/trees").await.ok();
    assert_eq!(listed["trees"][0]["name"], "default");
    assert_eq!(listed["default"], "default");
    assert_eq!(listed["journaled"], false);
    let values = leaves(17, 3);
    let answer = client
        .post_to(
            "/v1/blocks",
            &block(4, json!({ "default": hexes(&values) })),
            None,
        )
        .await
        .ok();
    assert_eq!(answer["trees"][0]["size"], 3);
    assert_eq!(
        client.get("/v1/trees/default/root").await.ok(),
        client.get("/v1/root").await.ok()
    );
    let blocks = client.get("/v1/blocks").await.ok();
    assert_eq!(blocks["blocks"][0]["number"], 4);
    assert_eq!(blocks["blocks"][0]["trees"][0]["size"], 3);
    let refused = client
        .post_to("/v1/blocks", &block(5, json!({ "other": [] })), None)
        .await;
    assert_eq!(refused.json()["tree"], "other");
    refused.error(404);
    // The metrics of one tree stay unlabelled.
    let text = client.get("/metrics").await.text().to_owned();
    assert!(text.contains("\ncairn_tree_size 3\n"), "{text}");
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_batch_family_is_listed_with_its_rule_and_a_block_that_does_not_fit_starts_a_member()
 {
    let (dir, forest) = three_trees();
    forest
        .add_tree_with(
            "rg",
            DbConfig::new(tree(2, HashKind::Blake3)),
            Some(cairn_db::Capacity {
                leaves: 4,
                rollover: cairn_db::Rollover::WholeBatch,
            }),
        )
        .unwrap();
    let server = ForestServer::serve(dir, Arc::new(forest), |_| {}).await;
    let client = &server.client;
    let listed = client.get("/v1/trees").await.ok();
    let rg = listed["trees"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "rg")
        .unwrap()
        .clone();
    assert_eq!(rg["capacity"], 4);
    assert_eq!(rg["rollover"], "whole-batch");
    assert!(listed["trees"][0].get("capacity").is_none());
    let first = leaves(7, 3);
    client
        .post_to(
            "/v1/blocks",
            &block(1, json!({ "rg": hexes(&first) })),
            None,
        )
        .await
        .ok();
    // 2 values, 1 of room: both go to member 1, member 0 stays at 3.
    let second = leaves(8, 2);
    let answer = client
        .post_to(
            "/v1/blocks",
            &block(2, json!({ "rg": hexes(&second) })),
            None,
        )
        .await
        .ok();
    let written: Vec<(String, u64, u64)> = answer["trees"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_owned(),
                t["first_index"].as_u64().unwrap(),
                t["count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        written,
        [("rg".to_owned(), 3, 0), ("rg/1".to_owned(), 0, 2)]
    );
    // Too many values for one member: refused whole, as a bad batch.
    let refused = client
        .post_to(
            "/v1/blocks",
            &block(3, json!({ "rg": hexes(&leaves(9, 5)) })),
            None,
        )
        .await;
    let message = refused.error(400);
    assert!(message.contains("one member holds at most 4"), "{message}");
    // The member that block made is served at once, as `rg/1` under
    // `/v1/trees/rg/1/...`, and listed, with no restart.
    let member_root = answer["trees"][1]["root"].clone();
    assert!(member_root.is_string());
    let names = |listed: &Value| -> Vec<String> {
        listed["trees"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let listed = client.get("/v1/trees").await.ok();
    assert!(names(&listed).contains(&"rg/1".to_owned()), "{listed}");
    let root = client.get("/v1/trees/rg/1/root").await.ok();
    assert_eq!(
        (root["size"].clone(), root["root"].clone()),
        (json!(2), member_root)
    );
    let proof = client.get("/v1/trees/rg/1/proofs/1").await.ok();
    assert_eq!(proof["index"], 1);
    let found = client
        .get(&format!("/v1/trees/rg/1/leaves/{}", to_hex(&second[1])))
        .await
        .ok();
    assert_eq!(found["index"], 1);
    assert_eq!(size_of(client, "rg").await, 3);
    // A member no block made is unknown, by its whole name.
    let message = client.get("/v1/trees/rg/2/root").await.error(404);
    assert!(message.contains("rg/2"), "{message}");
    // A rollback below the block that made it empties the member (the
    // database drops it from its list when it next opens) ...
    client
        .post_to("/v1/trees/rg/rollback", &json!({ "to_block": 1 }), None)
        .await
        .ok();
    assert_eq!(size_of(client, "rg/1").await, 0);
    assert_eq!(size_of(client, "rg").await, 3);
    // ... and the next block that does not fit fills it again.
    let again = leaves(10, 4);
    let answer = client
        .post_to(
            "/v1/blocks",
            &block(2, json!({ "rg": hexes(&again) })),
            None,
        )
        .await
        .ok();
    let root = client.get("/v1/trees/rg/1/root").await.ok();
    assert_eq!(root["size"], 4);
    assert_eq!(root["root"], answer["trees"][1]["root"]);
    let found = client
        .get(&format!("/v1/trees/rg/1/leaves/{}", to_hex(&again[3])))
        .await
        .ok();
    assert_eq!(found["index"], 3);
    server.stop().await;
}
