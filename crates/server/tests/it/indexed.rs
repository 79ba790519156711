//! An indexed database over HTTP: inserts (with and without witnesses),
//! the head, absence and membership proofs verified against it, lookups,
//! refusals (duplicates, the guard value, block tags), the lean history
//! routes answering 404, and a lean server answering 404 for absence.
//! Every status is checked against the OpenAPI document by the client.

use std::sync::Arc;

use cairn_core::hex::{parse_hash, to_hex};
use cairn_core::indexed::{AbsenceProof, IndexedMembershipProof, IndexedTree, InsertionWitness};
use cairn_core::{HashKind, TreeHead};
use cairn_db::{DbConfig, IndexedDb};
use cairn_server::{ServerConfig, serve_indexed};
use serde_json::json;
use tokio::sync::oneshot;

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_indexed_database_serves_inserts_absence_proofs_and_witnesses() {
    let config = tree(4, HashKind::Blake3);
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(IndexedDb::create(dir.path().join("db"), DbConfig::new(config)).unwrap());
    let (ready_tx, ready_rx) = oneshot::channel();
    let (stop, signal) = oneshot::channel::<()>();
    let mut server_config = ServerConfig::new("127.0.0.1:0".parse().unwrap());
    server_config.token = Some(TOKEN.to_owned());
    let task = tokio::spawn(serve_indexed(
        Arc::clone(&db),
        server_config,
        move |addr| {
            let _ = ready_tx.send(addr);
        },
        async move {
            let _ = signal.await;
        },
    ));
    let client = Client::new(ready_rx.await.unwrap());
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
    client
        .get(&format!("/v1/absence/{}?size=3", to_hex(&absent)))
        .await
        .error(400);

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

    let _ = stop.send(());
    task.await.unwrap().unwrap();
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
