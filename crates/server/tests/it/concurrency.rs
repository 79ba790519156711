//! Concurrent writers and readers: 8 tasks append single leaves and
//! batches (some holding duplicates, which must be refused whole) while 8
//! others read heads, verify membership proofs against the head they read
//! and consistency proofs between successive heads, and look up leaves
//! already acknowledged. At the end the acknowledged batches, in index
//! order, must be exactly the tree the server reports.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use cairn_core::hex::to_hex;
use cairn_core::{ConsistencyProof, Hash, HashKind, TreeHead};
use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};

use crate::support::*;

const WRITERS: u64 = 8;
const READERS: u64 = 8;
const REQUESTS_PER_WRITER: u64 = 40;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_and_readers_agree_on_every_head_and_proof() {
    let hash = HashKind::Sha256;
    let config = tree(4, hash);
    let server = TestServer::new(4, hash).await;
    let acked: Arc<Mutex<Vec<(u64, Hash)>>> = Arc::default();
    let writers_done = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));

    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let client = server.client();
            let acked = Arc::clone(&acked);
            tokio::spawn(async move {
                let mut rng = StdRng::seed_from_u64(w);
                let mut next = 0u64;
                let mut mine: Vec<Hash> = Vec::new();
                for request in 0..REQUESTS_PER_WRITER {
                    let count = if request % 3 == 0 {
                        rng.gen_range(2..=50)
                    } else {
                        1
                    };
                    let mut batch: Vec<Hash> =
                        (0..count).map(|k| leaf(100 + w, next + k)).collect();
                    let duplicate = request % 10 == 9 && !mine.is_empty();
                    if duplicate {
                        batch.push(mine[rng.gen_range(0..mine.len())]);
                    }
                    let reply = if request % 2 == 0 {
                        client.post_json(&batch, None).await
                    } else {
                        client.post_binary(&batch, None).await
                    };
                    if duplicate {
                        let error = reply.error(409);
                        assert!(error.contains("already leaf"), "{error}");
                        continue; // nothing appended: the fresh values are reusable
                    }
                    let answer = reply.ok();
                    let first = answer["first_index"].as_u64().unwrap();
                    assert_eq!(answer["count"], count);
                    assert_eq!(answer["size"], first + count);
                    let mut acked = acked.lock();
                    acked.extend(
                        batch
                            .iter()
                            .enumerate()
                            .map(|(k, v)| (first + k as u64, *v)),
                    );
                    mine.extend_from_slice(&batch);
                    next += count;
                }
            })
        })
        .collect();

    let readers: Vec<_> = (0..READERS)
        .map(|r| {
            let client = server.client();
            let acked = Arc::clone(&acked);
            let done = Arc::clone(&writers_done);
            let reads = Arc::clone(&reads);
            tokio::spawn(async move {
                let mut rng = StdRng::seed_from_u64(1000 + r);
                let mut previous: Option<TreeHead> = None;
                loop {
                    let last_round = done.load(Ordering::Acquire);
                    let head = client.head().await;
                    if let Some(previous) = previous {
                        assert!(head.size >= previous.size, "{head:?} after {previous:?}");
                        let reply = client
                            .get(&format!(
                                "/v1/consistency?from={}&to={}",
                                previous.size, head.size
                            ))
                            .await;
                        assert_eq!(reply.status, 200, "{}", reply.text());
                        let proof = ConsistencyProof::from_json(reply.text()).unwrap();
                        proof
                            .verify(config.arity, config.hash, &previous, &head)
                            .unwrap();
                    }
                    if head.size > 0 {
                        let index = rng.gen_range(0..head.size);
                        client.verified_proof(config, index, &head).await;
                    }
                    let known = {
                        let acked = acked.lock();
                        (!acked.is_empty()).then(|| acked[rng.gen_range(0..acked.len())])
                    };
                    if let Some((index, value)) = known {
                        let found = client
                            .get(&format!("/v1/leaves/{}", to_hex(&value)))
                            .await
                            .ok();
                        assert_eq!(found["index"], index);
                    }
                    reads.fetch_add(1, Ordering::Relaxed);
                    previous = Some(head);
                    if last_round {
                        break;
                    }
                }
            })
        })
        .collect();

    for writer in writers {
        writer.await.unwrap();
    }
    writers_done.store(true, Ordering::Release);
    for reader in readers {
        reader.await.unwrap();
    }
    assert!(reads.load(Ordering::Relaxed) >= READERS, "the readers ran");

    let mut acked = acked.lock().clone();
    acked.sort_unstable_by_key(|&(index, _)| index);
    for (position, &(index, _)) in acked.iter().enumerate() {
        assert_eq!(
            index, position as u64,
            "every index acknowledged exactly once"
        );
    }
    let values: Vec<Hash> = acked.iter().map(|&(_, v)| v).collect();
    let mut local = local_tree(config, &values);
    let head = server.client().head().await;
    assert_eq!(head, local.head());
}
