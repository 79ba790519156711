//! 409 only for durable values, over HTTP, for every kind: while the disk
//! stalls the first append of a value, a second append of it is not
//! answered; once the first is durable, the second is refused with the
//! leaf that holds the value, the same status and body for every kind.

use std::sync::Arc;
use std::time::Duration;

use cairn_core::{HashKind, TreeKind};
use cairn_db::{Database, DbConfig};
use cairn_testkit::sim::gated::{Gated, GatedFs};

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_of_a_value_not_yet_durable_is_answered_409_once_it_is() {
    for kind in [TreeKind::Lean, TreeKind::Indexed] {
        let dir = tempfile::tempdir().unwrap();
        let gate = Arc::new(GatedFs::default());
        let mut config = DbConfig::new(tree(2, HashKind::Blake3).with_kind(kind));
        config.store.flush_interval = None;
        let db = Database::create_in(
            Arc::new(Gated(Arc::clone(&gate))),
            &dir.path().join("db"),
            config,
        )
        .unwrap();
        let server = TestServer::start(db, |_| {}).await;
        let client = server.client();
        let first_index = u64::from(kind == TreeKind::Indexed);
        let x = leaf(70, 0);
        gate.close();
        let first = {
            let client = server.client();
            tokio::spawn(async move { client.post_json(&[x], None).await })
        };
        // The first is appended (its values pending) before the second comes.
        while server.db.size() == first_index {
            tokio::task::yield_now().await;
        }
        let mut second = {
            let client = server.client();
            tokio::spawn(async move { client.post_json(&[leaf(70, 1), x], None).await })
        };
        // The disk stalls: neither is answered, the second not with a 409.
        let early = tokio::time::timeout(Duration::from_millis(300), &mut second).await;
        assert!(
            early.is_err(),
            "{kind:?}: answered while the first was not durable: {:?}",
            early.map(|reply| reply.unwrap().text().to_owned())
        );
        gate.open();
        let first = first.await.unwrap().ok();
        assert_eq!(first["first_index"], first_index);
        // Now durable: the second is refused, naming the leaf.
        let second = second.await.unwrap();
        let message = second.error(409);
        assert!(message.contains("already leaf"), "{message}");
        assert_eq!(second.json()["duplicates"][0]["index"], first_index);
        assert_eq!(second.json()["duplicates"][0]["position"], 1);
        assert_eq!(client.head().await.size, first_index + 1);
        server.stop().await.unwrap();
    }
}

/// Kind parity: an append not durable within the durability timeout
/// answers 503 for every kind (an indexed database answered 500).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_append_not_durable_in_time_answers_503_for_every_kind() {
    for kind in [TreeKind::Lean, TreeKind::Indexed] {
        let dir = tempfile::tempdir().unwrap();
        let gate = Arc::new(GatedFs::default());
        let mut config = DbConfig::new(tree(2, HashKind::Blake3).with_kind(kind));
        config.store.flush_interval = None;
        let db = Database::create_in(
            Arc::new(Gated(Arc::clone(&gate))),
            &dir.path().join("db"),
            config,
        )
        .unwrap();
        let server = TestServer::start(db, |config| {
            config.durability_timeout = Duration::from_millis(100);
        })
        .await;
        gate.close();
        let reply = server.client().post_json(&[leaf(71, 0)], None).await;
        let message = reply.error(503);
        assert!(
            message.contains("were appended but not acknowledged as durable"),
            "{kind:?}: {message}"
        );
        assert!(message.contains("timed out"), "{kind:?}: {message}");
        gate.open();
        server.stop().await.unwrap();
    }
}

/// Kind parity: a value no leaf can be (not canonical for a field hash)
/// is a bad request on every lookup route, for every kind (it answered
/// 404, as if it were merely absent).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lookup_of_a_value_no_leaf_can_be_answers_400_for_every_kind() {
    let not_canonical = cairn_core::hex::to_hex(&[0xff; 32]);
    for kind in [TreeKind::Lean, TreeKind::Indexed] {
        let config = DbConfig::new(tree(2, HashKind::Poseidon).with_kind(kind));
        let server = TestServer::with(config, |_| {}).await;
        let client = server.client();
        let message = client
            .get(&format!("/v1/leaves/{not_canonical}"))
            .await
            .error(400);
        assert!(message.contains("canonical"), "{kind:?}: {message}");
        let lookup = serde_json::json!({ "leaves": [not_canonical] });
        client.post_to("/v1/lookup", &lookup, None).await.error(400);
        if kind == TreeKind::Indexed {
            client
                .get(&format!("/v1/absence/{not_canonical}"))
                .await
                .error(400);
        }
        server.stop().await.unwrap();
    }
}
