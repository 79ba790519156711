//! What a chain follower does over HTTP: block-tagged appends, the heads
//! they leave, rollbacks by size and by block, finality, roots by value
//! and proofs against them, a rollback racing appends and reads, and all
//! of it across a restart.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use axum::http::Method;
use cairn_core::hex::to_hex;
use cairn_core::{Hash, HashKind, MembershipProof, TreeConfig, TreeHead};
use cairn_db::{Db, DbConfig};
use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};
use serde_json::{Value, json};

use crate::support::*;

const N: u64 = 3;

/// A follower's database: finality only when asked for (else every
/// checkpoint would finalize what it covers).
fn follower(root_window: Option<usize>) -> DbConfig {
    let mut config = DbConfig::new(tree(N, HashKind::Blake3));
    config.explicit_finality = true;
    if let Some(window) = root_window {
        config.store.root_window = window;
    }
    config
}

fn config() -> TreeConfig {
    tree(N, HashKind::Blake3)
}

fn root_hex(leaves: &[Hash]) -> Value {
    match local_tree(config(), leaves).root() {
        Some(root) => to_hex(&root).into(),
        None => Value::Null,
    }
}

fn head_json(block: u64, hash: Option<&Hash>, leaves: &[Hash]) -> Value {
    json!({
        "block": block,
        "block_hash": hash.map(to_hex),
        "size": leaves.len(),
        "root": root_hex(leaves),
    })
}

const OCTETS: (&str, &str) = ("content-type", "application/octet-stream");

fn sample(metrics: &str, name: &str) -> u64 {
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no {name} in\n{metrics}"))
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tagged_appends_record_heads_in_block_order() {
    let server = TestServer::with(follower(None), |_| {}).await;
    let client = server.client();
    let all = leaves(21, 12);
    let hash = leaf(99, 0);

    // A tag alone, on the empty tree.
    let reply = client.post_tagged(&[], 1, None, None).await.ok();
    assert_eq!(
        reply,
        json!({"first_index": 0, "count": 0, "size": 0, "root": null, "block": {"number": 1, "hash": null}})
    );
    let reply = client
        .post_tagged(&all[..3], 10, Some(&hash), None)
        .await
        .ok();
    assert_eq!(
        reply,
        json!({"first_index": 0, "count": 3, "size": 3, "root": root_hex(&all[..3]), "block": {"number": 10, "hash": to_hex(&hash)}})
    );
    // A repeated or lower block number: 409, nothing appended.
    for block in [10, 9, 1] {
        let error = client
            .post_tagged(&all[3..4], block, None, None)
            .await
            .error(409);
        assert!(
            error.contains(&format!(
                "block {block} does not follow the last tagged block 10"
            )),
            "{error}"
        );
    }
    assert_eq!(client.head().await.size, 3);
    // Untagged appends still work, and answer without a block.
    let reply = client.post_json(&all[3..5], None).await.ok();
    assert!(reply.get("block").is_none(), "{reply}");
    let reply = client.post_tagged(&[], 11, None, None).await.ok();
    assert_eq!(
        reply,
        json!({"first_index": 5, "count": 0, "size": 5, "root": root_hex(&all[..5]), "block": {"number": 11, "hash": null}})
    );
    // A binary body names its block in the query.
    let reply = client
        .request(
            Method::POST,
            &format!("/v1/leaves?block=12&block_hash={}", to_hex(&hash)),
            &[OCTETS],
            all[5..8].as_flattened().to_vec(),
        )
        .await
        .ok();
    assert_eq!(reply["size"], 8);
    assert_eq!(reply["block"], json!({"number": 12, "hash": to_hex(&hash)}));
    let reply = client
        .request(Method::POST, "/v1/leaves?block=13", &[OCTETS], Vec::new())
        .await
        .ok();
    assert_eq!(reply["count"], 0);
    assert_eq!(reply["root"], root_hex(&all[..8]));

    // Malformed blocks.
    let one = all[8].to_vec();
    for (path, needle) in [
        (
            format!("/v1/leaves?block_hash={}", to_hex(&hash)),
            "block_hash without block",
        ),
        (
            "/v1/leaves?block=x".to_owned(),
            "not a non-negative integer",
        ),
        (
            "/v1/leaves?block=14&block_hash=0x12".to_owned(),
            "block hash",
        ),
        ("/v1/leaves?blok=14".to_owned(), "unknown query parameter"),
    ] {
        let error = client
            .request(Method::POST, &path, &[OCTETS], one.clone())
            .await
            .error(400);
        assert!(error.contains(needle), "{path}: {error}");
    }
    let body = json!({"leaves": [to_hex(&all[8])], "block": {"number": 14}});
    let reply = client
        .request(
            Method::POST,
            "/v1/leaves?block=14",
            &[("content-type", "application/json")],
            body.to_string().into_bytes(),
        )
        .await;
    assert!(reply.error(400).contains("given twice"));
    let error = client
        .post_to("/v1/leaves", &json!({"leaves": []}), None)
        .await
        .error(400);
    assert!(error.contains("empty batch"), "{error}");
    assert_eq!(client.head().await.size, 8);

    // The heads, in block order, and in pages.
    let heads = vec![
        head_json(1, None, &[]),
        head_json(10, Some(&hash), &all[..3]),
        head_json(11, None, &all[..5]),
        head_json(12, Some(&hash), &all[..8]),
        head_json(13, None, &all[..8]),
    ];
    assert_eq!(
        client.get("/v1/heads").await.ok(),
        json!({"heads": heads, "next_from_block": null})
    );
    assert_eq!(
        client.get("/v1/heads?limit=2").await.ok(),
        json!({"heads": heads[..2], "next_from_block": 11})
    );
    assert_eq!(
        client.get("/v1/heads?from_block=11&limit=2").await.ok(),
        json!({"heads": heads[2..4], "next_from_block": 13})
    );
    assert_eq!(
        client.get("/v1/heads?from_block=12&limit=10000").await.ok(),
        json!({"heads": heads[3..], "next_from_block": null})
    );
    assert_eq!(
        client.get("/v1/heads?from_block=14").await.ok(),
        json!({"heads": [], "next_from_block": null})
    );
    for bad in ["limit=0", "limit=10001", "from_block=-1", "block=3"] {
        client.get(&format!("/v1/heads?{bad}")).await.error(400);
    }

    let metrics = client.get("/metrics").await;
    assert_eq!(
        sample(metrics.text(), "cairn_block_order_refusals_total"),
        3
    );
    assert_eq!(sample(metrics.text(), "cairn_tagged_heads"), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollbacks_by_size_and_block_stop_at_the_finalized_size() {
    let server = TestServer::with(follower(None), |c| c.token = Some(TOKEN.into())).await;
    let client = server.client();
    let token = Some(TOKEN);
    let all = leaves(22, 12);
    // Blocks 1..=6, two leaves each.
    for block in 1..=6u64 {
        let at = 2 * (block as usize - 1);
        client
            .post_tagged(&all[at..at + 2], block, None, token)
            .await
            .ok();
    }
    // Writes need the token.
    let error = client
        .post_to("/v1/rollback", &json!({"to_size": 0}), None)
        .await
        .error(401);
    assert!(error.contains("Authorization"), "{error}");
    client
        .post_to("/v1/finalize", &json!({"size": 0}), None)
        .await
        .error(401);

    // Finality by block, then by size; it never goes down.
    let reply = client
        .post_to("/v1/finalize", &json!({"block": 2}), token)
        .await
        .ok();
    assert_eq!(reply, json!({"finalized": 4}));
    let reply = client
        .post_to("/v1/finalize", &json!({"size": 3}), token)
        .await
        .ok();
    assert_eq!(reply, json!({"finalized": 4}));
    assert_eq!(client.get("/v1/root").await.ok()["finalized"], 4);
    let error = client
        .post_to("/v1/finalize", &json!({"size": 13}), token)
        .await
        .error(404);
    assert!(
        error.contains("beyond the tree's durable size 12"),
        "{error}"
    );
    let error = client
        .post_to("/v1/finalize", &json!({"block": 0}), token)
        .await
        .error(404);
    assert!(
        error.contains("no block-tagged head at or below block 0"),
        "{error}"
    );

    // Below the finalized size: 409 with the finalized size, nothing changed.
    let reply = client
        .post_to("/v1/rollback", &json!({"to_size": 3}), token)
        .await;
    let error = reply.error(409);
    assert!(error.contains("the first 4 are final"), "{error}");
    assert_eq!(reply.json()["finalized"], 4);
    assert_eq!(client.head().await.size, 12);
    client
        .post_to("/v1/rollback", &json!({"to_block": 1}), token)
        .await
        .error(409);

    // By block: back to the end of block 4.
    let reply = client
        .post_to("/v1/rollback", &json!({"to_block": 4}), token)
        .await
        .ok();
    assert_eq!(
        reply,
        json!({"size": 8, "root": root_hex(&all[..8]), "block": 4, "finalized": 4})
    );
    let head = client.get("/v1/root").await.ok();
    assert_eq!(head["size"], 8);
    assert_eq!(head["root"], root_hex(&all[..8]));
    let heads = client.get("/v1/heads").await.ok();
    let blocks: Vec<u64> = heads["heads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["block"].as_u64().unwrap())
        .collect();
    assert_eq!(blocks, [1, 2, 3, 4]);
    // The removed values are gone, and can be appended again (block 5
    // again, now with other leaves first).
    client
        .get(&format!("/v1/leaves/{}", to_hex(&all[9])))
        .await
        .error(404);
    let reply = client
        .post_tagged(&[all[9], all[8]], 5, None, token)
        .await
        .ok();
    assert_eq!(reply["first_index"], 8);
    let now = [&all[..8], &[all[9], all[8]]].concat();
    assert_eq!(reply["root"], root_hex(&now));
    assert_eq!(
        client
            .get(&format!("/v1/leaves/{}", to_hex(&all[9])))
            .await
            .ok()["index"],
        8
    );

    // By size, to a size inside an append (tags above it go).
    let reply = client
        .post_to("/v1/rollback", &json!({"to_size": 9}), token)
        .await
        .ok();
    assert_eq!(
        reply,
        json!({"size": 9, "root": root_hex(&now[..9]), "finalized": 4})
    );
    let heads = client.get("/v1/heads?from_block=4").await.ok();
    assert_eq!(
        heads,
        json!({"heads": [head_json(4, None, &all[..8])], "next_from_block": null})
    );
    // A no-op rollback to the current size.
    let reply = client
        .post_to("/v1/rollback", &json!({"to_size": 9}), token)
        .await
        .ok();
    assert_eq!(reply["size"], 9);

    // Refusals.
    let error = client
        .post_to("/v1/rollback", &json!({"to_size": 10}), token)
        .await
        .error(404);
    assert!(
        error.contains("beyond the tree's durable size 9"),
        "{error}"
    );
    let error = client
        .post_to("/v1/rollback", &json!({"to_block": 0}), token)
        .await
        .error(404);
    assert!(
        error.contains("no block-tagged head at or below block 0"),
        "{error}"
    );
    for (body, needle) in [
        (json!({"to_size": 1, "to_block": 1}), "exactly one"),
        (json!({}), "exactly one"),
        (json!({"size": 1}), "unknown field"),
        (json!({"to_size": -1}), "the body is not"),
    ] {
        let error = client
            .post_to("/v1/rollback", &body, token)
            .await
            .error(400);
        assert!(error.contains(needle), "{body}: {error}");
    }
    let error = client
        .post_to("/v1/finalize", &json!({"to_size": 1}), token)
        .await
        .error(400);
    assert!(error.contains("unknown field"), "{error}");

    let metrics = client.get("/metrics").await;
    let text = metrics.text();
    assert_eq!(sample(text, "cairn_rollbacks_total"), 3);
    assert_eq!(sample(text, "cairn_rolled_back_leaves_total"), 5);
    assert_eq!(sample(text, "cairn_finalized_size"), 4);
    assert_eq!(sample(text, "cairn_finalizations_total"), 2);
    assert!(text.contains("cairn_rollback_seconds_count 3\n"), "{text}");
}

/// The proof of `index` against `root`, verified against the head the
/// root names.
async fn proof_by_root(client: &Client, index: u64, root: &Hash, size: u64) -> MembershipProof {
    let reply = client
        .get(&format!("/v1/proofs/{index}?root={}", to_hex(root)))
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let proof = MembershipProof::from_json(reply.text()).unwrap();
    assert_eq!(proof.size(), size);
    let head = TreeHead {
        size,
        root: Some(*root),
    };
    proof
        .verify(config().arity, config().hash, &head)
        .unwrap_or_else(|e| panic!("proof of {index} against {head:?}: {e}"));
    proof
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roots_by_value_answer_sizes_and_prove_against_them() {
    // A window of the last 3 appends' roots (tagged heads stay).
    let server = TestServer::with(follower(Some(3)), |_| {}).await;
    let client = server.client();
    let all = leaves(23, 40);
    let mut ends: Vec<(usize, Option<u64>)> = Vec::new();
    let mut at = 0;
    for (k, count) in [3usize, 1, 5, 2, 4, 6, 2, 3].into_iter().enumerate() {
        let batch = &all[at..at + count];
        // Even appends are tagged (block 100 + k).
        let block = (k % 2 == 0).then_some(100 + k as u64);
        let reply = match block {
            Some(block) => client.post_tagged(batch, block, None, None).await,
            None => client.post_json(batch, None).await,
        };
        at += count;
        assert_eq!(reply.ok()["root"], root_hex(&all[..at]));
        ends.push((at, block));
    }
    let last = ends.len() - 1;
    for (position, &(size, block)) in ends.iter().enumerate() {
        let root = local_tree(config(), &all[..size]).root().unwrap();
        let reply = client.get(&format!("/v1/roots/{}", to_hex(&root))).await;
        // Untagged roots older than the last 3 appends are forgotten.
        if block.is_none() && position + 3 <= last {
            let error = reply.error(404);
            assert!(
                error.contains("tagged heads and the roots of the last 3 appends"),
                "{error}"
            );
            client
                .get(&format!("/v1/proofs/0?root={}", to_hex(&root)))
                .await
                .error(404);
            continue;
        }
        assert_eq!(reply.ok(), json!({"size": size, "block": block}));
        for index in [0, size as u64 / 2, size as u64 - 1] {
            let proof = proof_by_root(&client, index, &root, size as u64).await;
            assert_eq!(proof.leaf(), all[index as usize]);
        }
        let error = client
            .get(&format!("/v1/proofs/{size}?root={}", to_hex(&root)))
            .await
            .error(400);
        assert!(error.contains(&format!("not below {size}")), "{error}");
    }
    // Refusals.
    let root = local_tree(config(), &all[..3]).root().unwrap();
    let error = client
        .get(&format!("/v1/proofs/0?root={}&size=3", to_hex(&root)))
        .await
        .error(400);
    assert!(error.contains("not both"), "{error}");
    client.get("/v1/roots/0x12").await.error(400);
    client.get("/v1/proofs/0?root=0x12").await.error(400);
    let unknown = to_hex(&leaf(23, 999));
    client.get(&format!("/v1/roots/{unknown}")).await.error(404);
    client
        .get(&format!("/v1/proofs/0?root={unknown}"))
        .await
        .error(404);

    // After a rollback the removed roots are unknown; the kept ones stay.
    let (kept, _) = ends[3];
    client
        .post_to("/v1/rollback", &json!({"to_size": kept}), None)
        .await
        .ok();
    for &(size, block) in &ends {
        let root = local_tree(config(), &all[..size]).root().unwrap();
        let reply = client.get(&format!("/v1/roots/{}", to_hex(&root))).await;
        if size > kept {
            reply.error(404);
            client
                .get(&format!("/v1/proofs/0?root={}", to_hex(&root)))
                .await
                .error(404);
        } else if block.is_some() {
            assert_eq!(reply.ok(), json!({"size": size, "block": block}));
            proof_by_root(&client, 0, &root, size as u64).await;
        }
    }
}

/// Appends, reads and rollbacks at once. Every value is fresh (never
/// appended twice), so what a rollback removes is gone for good: after a
/// rollback has answered, no request sent later may name a removed value
/// or a root of a removed size. No answer is a 5xx; an append the rollback
/// removed answers 409; every acknowledged leaf a rollback did not remove
/// is in the final tree at its index.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollback_racing_appends_never_serves_a_removed_head() {
    const WRITERS: u64 = 4;
    const READERS: u64 = 3;
    const ROLLBACKS: u64 = 12;
    let server = TestServer::with(follower(None), |_| {}).await;
    let db = Arc::clone(&server.db);
    let config = config();
    // Hash -> the number of the rollback that removed it (values and roots).
    let dead: Arc<Mutex<HashMap<Hash, u64>>> = Arc::default();
    // Rollbacks that have answered (and whose removals are in `dead`),
    // rollbacks sent, and the sizes rolled back to.
    let answered = Arc::new(AtomicU64::new(0));
    let begun = Arc::new(AtomicU64::new(0));
    let targets: Arc<Mutex<HashSet<u64>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let check_alive = {
        let dead = Arc::clone(&dead);
        move |value: &Hash, sent_after: u64, what: &str| {
            if let Some(&k) = dead.lock().get(value) {
                assert!(
                    k > sent_after,
                    "{what} {} was removed by rollback {k}, which answered before the request (after {sent_after})",
                    to_hex(value)
                );
            }
        }
    };

    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let client = server.client();
            let stop = Arc::clone(&stop);
            let answered = Arc::clone(&answered);
            let check_alive = check_alive.clone();
            tokio::spawn(async move {
                let mut acked: Vec<(u64, Hash)> = Vec::new();
                let mut refused: Vec<Hash> = Vec::new();
                let mut next = 0u64;
                while !stop.load(Ordering::Acquire) {
                    let count = 1 + next % 3;
                    let batch: Vec<Hash> = (next..next + count).map(|i| leaf(300 + w, i)).collect();
                    next += count;
                    let sent_after = answered.load(Ordering::Acquire);
                    let reply = client.post_json(&batch, None).await;
                    match reply.status {
                        200 => {
                            let body = reply.json();
                            let first = body["first_index"].as_u64().unwrap();
                            let root = cairn_core::hex::parse_hash(body["root"].as_str().unwrap())
                                .unwrap();
                            check_alive(&root, sent_after, "appended root");
                            acked.extend(
                                batch
                                    .iter()
                                    .enumerate()
                                    .map(|(k, v)| (first + k as u64, *v)),
                            );
                        }
                        409 => {
                            let error = reply.error(409);
                            assert!(error.contains("rolled back"), "{error}");
                            refused.extend(batch);
                        }
                        status => panic!("append answered {status}: {}", reply.text()),
                    }
                }
                (acked, refused)
            })
        })
        .collect();

    let reads = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = (0..READERS)
        .map(|r| {
            let client = server.client();
            let stop = Arc::clone(&stop);
            let answered = Arc::clone(&answered);
            let reads = Arc::clone(&reads);
            let check_alive = check_alive.clone();
            let begun = Arc::clone(&begun);
            let targets = Arc::clone(&targets);
            let db = Arc::clone(&db);
            tokio::spawn(async move {
                let mut rng = StdRng::seed_from_u64(500 + r);
                while !stop.load(Ordering::Acquire) {
                    let sent_after = answered.load(Ordering::Acquire);
                    let head = client.head().await;
                    // A root may be unknown by value: one a rollback not
                    // answered when the head was asked for removed, or the
                    // head right after a rollback to a size no append ended
                    // at (no tag, not an append's end).
                    let may_be_unknown = || {
                        begun.load(Ordering::Acquire) > sent_after
                            || targets.lock().contains(&head.size)
                    };
                    let Some(root) = head.root else { continue };
                    check_alive(&root, sent_after, "head root");
                    let index = rng.gen_range(0..head.size);
                    // By root: the proof of that head, or 404 once a later
                    // rollback removed it.
                    let reply = client
                        .get(&format!("/v1/proofs/{index}?root={}", to_hex(&root)))
                        .await;
                    match reply.status {
                        200 => {
                            let proof = MembershipProof::from_json(reply.text()).unwrap();
                            proof.verify(config.arity, config.hash, &head).unwrap();
                            check_alive(&proof.leaf(), sent_after, "proved leaf");
                        }
                        404 => assert!(
                            may_be_unknown(),
                            "{head:?} durable {} size {} lookup {:?} actual {:?} begun {} sent_after {}: {}",
                            db.durable_size(),
                            db.size(),
                            db.size_of_root(&root),
                            db.tree_snapshot().unwrap().view(head.size).map(|v| v.root()),
                            begun.load(Ordering::Acquire),
                            sent_after,
                            reply.text()
                        ),
                        status => panic!("proof answered {status}: {}", reply.text()),
                    }
                    // The last leaves below that head, by index: none a
                    // rollback answered before the request removed.
                    let from = head.size.saturating_sub(8);
                    let reply = client
                        .request(
                            Method::GET,
                            &format!("/v1/leaves?from={from}&to={}", head.size),
                            &[("accept", "application/json")],
                            Vec::new(),
                        )
                        .await;
                    match reply.status {
                        200 => {
                            for value in reply.json()["leaves"].as_array().unwrap() {
                                let value =
                                    cairn_core::hex::parse_hash(value.as_str().unwrap()).unwrap();
                                check_alive(&value, sent_after, "mirrored leaf");
                            }
                        }
                        // Only once a rollback begun since shrank the tree.
                        404 => assert!(
                            begun.load(Ordering::Acquire) > sent_after,
                            "{}",
                            reply.text()
                        ),
                        status => panic!("leaves answered {status}: {}", reply.text()),
                    }
                    // By value: the size of that root, if still there.
                    let reply = client.get(&format!("/v1/roots/{}", to_hex(&root))).await;
                    match reply.status {
                        200 => assert_eq!(reply.json()["size"], head.size),
                        404 => assert!(may_be_unknown(), "{}", reply.text()),
                        status => panic!("root lookup answered {status}: {}", reply.text()),
                    }
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();

    let client = server.client();
    let mut rng = StdRng::seed_from_u64(77);
    let mut finalized = 0;
    for k in 1..=ROLLBACKS {
        tokio::time::sleep(std::time::Duration::from_millis(rng.gen_range(5..30))).await;
        // What is there now: everything from the target on is removed.
        let before = db.tree_snapshot().unwrap();
        let durable = client.head().await.size;
        let depth = rng.gen_range(0..=(durable - finalized).min(40));
        let to = durable - depth;
        targets.lock().insert(to);
        begun.store(k, Ordering::Release);
        let reply = client
            .post_to("/v1/rollback", &json!({"to_size": to}), None)
            .await;
        let body = reply.ok();
        assert_eq!(body["size"], to);
        {
            let mut dead = dead.lock();
            for size in to + 1..=before.size() {
                dead.entry(before.leaf(size - 1).unwrap()).or_insert(k);
                let root = before.view(size).unwrap().root().unwrap();
                dead.entry(root).or_insert(k);
            }
        }
        answered.store(k, Ordering::Release);
        // Now and then, finalize part of what is there.
        if k % 4 == 0 && to > finalized {
            let target = finalized + (to - finalized) / 2;
            let reply = client
                .post_to("/v1/finalize", &json!({"size": target}), None)
                .await
                .ok();
            finalized = reply["finalized"].as_u64().unwrap();
            assert_eq!(finalized, target);
        }
    }
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    stop.store(true, Ordering::Release);
    let mut acked = Vec::new();
    let mut refused = Vec::new();
    for writer in writers {
        let (a, r) = writer.await.unwrap();
        acked.extend(a);
        refused.extend(r);
    }
    for reader in readers {
        reader.await.unwrap();
    }
    assert!(reads.load(Ordering::Relaxed) > 0, "the readers ran");

    // The final tree: the server's head is the database's, every
    // acknowledged leaf is at its index unless a rollback removed it, and
    // no value an append was refused for (rolled back) is there.
    let head = client.head().await;
    assert_eq!(head, db.head());
    let snapshot = db.tree_snapshot().unwrap();
    let present: HashSet<Hash> = (0..head.size).map(|i| snapshot.leaf(i).unwrap()).collect();
    let dead = dead.lock().clone();
    let mut survivors = 0;
    for (index, value) in &acked {
        if dead.contains_key(value) {
            assert!(!present.contains(value), "{} came back", to_hex(value));
        } else if *index < head.size && snapshot.leaf(*index) == Some(*value) {
            survivors += 1;
        } else {
            // Removed by a rollback after the snapshot its removals were
            // read from: a rollback removes every index from its target.
            assert!(!present.contains(value), "{} moved", to_hex(value));
        }
    }
    assert!(survivors > 0, "some acknowledged leaves survived");
    for value in &refused {
        assert!(
            !present.contains(value),
            "a refused append's {} is there",
            to_hex(value)
        );
    }
    let metrics = client.get("/metrics").await;
    assert_eq!(sample(metrics.text(), "cairn_rollbacks_total"), ROLLBACKS);
}

/// Tags, finality and rollbacks survive a SIGKILL of the server binary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tags_and_finality_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("db");
    Db::create(&data, follower(None)).unwrap().close().unwrap();
    let log = dir.path().join("server.log");
    let all = leaves(24, 20);
    let hash = leaf(98, 1);

    let mut server = ServerProcess::start(&data, &[], &log);
    let client = server.client();
    for block in 1..=8u64 {
        let at = 2 * (block as usize - 1);
        client
            .post_tagged(&all[at..at + 2], 10 * block, Some(&hash), None)
            .await
            .ok();
    }
    client
        .post_to("/v1/finalize", &json!({"block": 30}), None)
        .await
        .ok();
    client
        .post_to("/v1/rollback", &json!({"to_block": 65}), None)
        .await
        .ok();
    client.post_tagged(&[], 66, None, None).await.ok();
    let heads = client.get("/v1/heads").await.ok();
    let root = client.get("/v1/root").await.ok();
    assert_eq!(root["size"], 12);
    assert_eq!(root["finalized"], 6);
    assert_eq!(heads["heads"].as_array().unwrap().len(), 7);
    server.kill();

    let server = ServerProcess::start(&data, &[], &log);
    let client = server.client();
    assert_eq!(client.get("/v1/heads").await.ok(), heads);
    assert_eq!(client.get("/v1/root").await.ok(), root);
    // A root by value: the tag at block 40 (size 8).
    let at_40 = local_tree(config(), &all[..8]).root().unwrap();
    assert_eq!(
        client
            .get(&format!("/v1/roots/{}", to_hex(&at_40)))
            .await
            .ok(),
        json!({"size": 8, "block": 40})
    );
    proof_by_root(&client, 7, &at_40, 8).await;
    // Finality held; order is still enforced from the last block.
    assert_eq!(
        client
            .post_to("/v1/rollback", &json!({"to_size": 5}), None)
            .await
            .json()["finalized"],
        6
    );
    client
        .post_tagged(&all[12..13], 66, None, None)
        .await
        .error(409);
    let reply = client
        .post_to("/v1/rollback", &json!({"to_block": 30}), None)
        .await
        .ok();
    assert_eq!(reply["size"], 6);
    client.post_tagged(&all[12..13], 31, None, None).await.ok();
}
