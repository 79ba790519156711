//! `POST /v1/changes` on a mutable database: updates and removals
//! answered with each old leaf's proof against the root before it and
//! the new head, checked against a reference tree; every refusal with its
//! code and nothing changed; the removal policy; block tags undone by a
//! rollback; and the refusal of a database created append-only.

use cairn_core::hex::{parse_hash, to_hex};
use cairn_core::{Hash, HashKind, MembershipProof, TreeConfig, TreeHead};
use cairn_db::DbConfig;
use serde_json::{Value, json};

use crate::support::*;

fn mutable(config: TreeConfig, readmit: bool) -> DbConfig {
    let mut db = DbConfig::new(config);
    db.mutable = Some(readmit);
    db
}

/// `POST /v1/changes` of `changes` (`(index, Some(value))` updates,
/// `(index, None)` removes), with `block` if given.
async fn change(
    client: &Client,
    changes: &[(u64, Option<Hash>)],
    block: Option<u64>,
    token: Option<&str>,
) -> Reply {
    let changes: Vec<Value> = changes
        .iter()
        .map(|(index, value)| json!({"index": index, "value": value.as_ref().map(to_hex)}))
        .collect();
    let mut body = json!({ "changes": changes });
    if let Some(number) = block {
        body["block"] = json!({ "number": number });
    }
    client.post_to("/v1/changes", &body, token).await
}

/// The answer's change `i`: its proof, checked against `before`, and its
/// old value.
fn old_leaf(answer: &Value, i: usize, config: TreeConfig, before: &TreeHead) -> (u64, Hash) {
    let change = &answer["changes"][i];
    let proof = MembershipProof::from_json(&change["proof"].to_string()).unwrap();
    proof
        .verify_with(&config, before)
        .unwrap_or_else(|e| panic!("change {i}'s proof against {before:?}: {e}"));
    let old = parse_hash(change["old"].as_str().unwrap()).unwrap();
    assert_eq!(proof.leaf(), old);
    assert_eq!(proof.index(), change["index"].as_u64().unwrap());
    (proof.index(), old)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_and_removals_answer_old_leaf_proofs_chained_from_the_head_before() {
    let config = tree(2, HashKind::Blake3);
    let server = TestServer::with(mutable(config, false), |_| {}).await;
    let client = server.client();
    let values = leaves(81, 6);
    client.post_json(&values, None).await.ok();
    let mut reference = local_tree(config, &values);
    let before = client.head().await;
    assert_eq!(before, reference.head());

    let new = leaf(82, 0);
    let answer = change(&client, &[(1, Some(new)), (4, None)], None, None)
        .await
        .ok();
    assert_eq!(answer["count"], 2);
    // The first change proves leaf 1 against the head before the batch;
    // the second proves leaf 4 against the root after the first.
    assert_eq!(old_leaf(&answer, 0, config, &before), (1, values[1]));
    assert_eq!(answer["changes"][0]["value"], to_hex(&new));
    reference.update(1, new).unwrap();
    let middle = reference.head();
    assert_eq!(old_leaf(&answer, 1, config, &middle), (4, values[4]));
    assert_eq!(answer["changes"][1]["value"], Value::Null);
    reference.update(4, [0; 32]).unwrap();
    let after = reference.head();
    assert_eq!(head_of(&answer), after);
    assert_eq!(client.head().await, after);
    // Reads follow: leaf 1's proof is of the new value, and the removed
    // leaf holds the zero leaf.
    for (index, want) in [(1, new), (4, [0; 32])] {
        let reply = client.get(&format!("/v1/proofs/{index}")).await;
        let proof = MembershipProof::from_json(reply.ok().to_string().as_str()).unwrap();
        proof.verify_with(&config, &after).unwrap();
        assert_eq!(proof.leaf(), want);
    }
}

/// A refused batch, its status and its code.
type Refusal<'a> = (&'a [(u64, Option<Hash>)], u16, &'static str);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_refusal_carries_its_code_and_changes_nothing() {
    let config = tree(2, HashKind::Blake3);
    let server = TestServer::with(mutable(config, false), |_| {}).await;
    let client = server.client();
    let values = leaves(83, 4);
    client.post_json(&values, None).await.ok();
    change(&client, &[(2, None)], None, None).await.ok();
    let head = client.head().await;

    let refusals: [Refusal<'_>; 6] = [
        (&[(4, Some(leaf(84, 0)))], 404, "index_out_of_range"),
        (&[(0, Some(values[1]))], 409, "duplicate"),
        (
            &[(0, Some(leaf(84, 1))), (1, Some(leaf(84, 1)))],
            409,
            "duplicate",
        ),
        (&[(0, Some([0; 32]))], 400, "zero_leaf"),
        (&[(2, Some(leaf(84, 2)))], 409, "removed_leaf"),
        (&[(0, Some(values[2]))], 409, "was_removed"),
    ];
    for (changes, status, code) in refusals {
        let reply = change(&client, changes, None, None).await;
        reply.error(status);
        assert_eq!(reply.json()["code"], code, "{changes:?}: {}", reply.text());
        assert_eq!(client.head().await, head, "{code} changed the tree");
    }
    // A duplicate lists the value and where the tree holds it.
    let reply = change(&client, &[(0, Some(values[1]))], None, None).await;
    assert_eq!(reply.json()["duplicates"][0]["index"], 1);
    // A change without a value is refused, not read as a removal.
    let body = json!({"changes": [{"index": 0}]});
    let reply = client.post_to("/v1/changes", &body, None).await;
    assert!(reply.error(400).contains("no value"));
    assert_eq!(client.head().await, head);

    // A Poseidon tree refuses a value that is no field element.
    let poseidon = tree(2, HashKind::Poseidon);
    let server = TestServer::with(mutable(poseidon, false), |_| {}).await;
    let client = server.client();
    client.post_json(&leaves(85, 2), None).await.ok();
    let reply = change(&client, &[(0, Some([0xff; 32]))], None, None).await;
    reply.error(400);
    assert_eq!(reply.json()["code"], "non_canonical");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_created_with_readmit_removed_takes_a_removed_value_back() {
    let config = tree(4, HashKind::Blake3);
    let server = TestServer::with(mutable(config, true), |_| {}).await;
    let client = server.client();
    let values = leaves(86, 5);
    client.post_json(&values, None).await.ok();
    change(&client, &[(0, None)], None, None).await.ok();
    let answer = change(&client, &[(3, Some(values[0]))], None, None)
        .await
        .ok();
    let mut reference = local_tree(config, &values);
    reference.update(0, [0; 32]).unwrap();
    reference.update(3, values[0]).unwrap();
    assert_eq!(head_of(&answer), reference.head());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tagged_batch_of_changes_is_undone_by_a_rollback_to_an_earlier_block() {
    let config = tree(2, HashKind::Blake3);
    let server = TestServer::with(mutable(config, false), |_| {}).await;
    let client = server.client();
    let values = leaves(87, 5);
    client.post_tagged(&values, 1, None, None).await.ok();
    let at_block_1 = client.head().await;
    let answer = change(&client, &[(0, Some(leaf(88, 0))), (1, None)], Some(2), None)
        .await
        .ok();
    assert_eq!(answer["block"]["number"], 2);
    assert_ne!(head_of(&answer), at_block_1);
    // A block number that does not follow is refused.
    change(&client, &[(2, None)], Some(2), None)
        .await
        .error(409);

    let rolled = client
        .post_to("/v1/rollback", &json!({"to_block": 1}), None)
        .await
        .ok();
    assert_eq!(head_of(&rolled), at_block_1);
    assert_eq!(client.head().await, at_block_1);
    // The old values are back: leaf 0's is held again.
    change(&client, &[(3, Some(values[0]))], None, None)
        .await
        .error(409);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_created_append_only_refuses_changes_as_not_mutable() {
    let server = TestServer::with(DbConfig::new(tree(2, HashKind::Blake3)), |c| {
        c.token = Some(TOKEN.into());
    })
    .await;
    let client = server.client();
    client.post_json(&leaves(89, 3), Some(TOKEN)).await.ok();
    for path in ["/v1/changes", "/v1/trees/default/changes"] {
        let body = json!({"changes": [{"index": 0, "value": null}]});
        let reply = client.post_to(path, &body, Some(TOKEN)).await;
        let message = reply.error(404);
        assert_eq!(reply.json()["code"], "not_mutable", "{path}");
        assert!(message.contains("updates or removals"), "{message}");
    }
}
