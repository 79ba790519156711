//! The durability notification: async waits (`Token::durable`) share one
//! group commit, learn of rollbacks and failures from their tokens, and
//! the published durable head follows every commit and rollback.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use cairn_store::{Store, StoreError, Token};
use cairn_testkit::sim::SimFs;

use crate::support::*;

fn sim_store(fs: &SimFs) -> Store {
    Store::create(Arc::new(fs.clone()), Path::new("/db"), config(4, 10)).unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap()
}

/// Awaits every token at once, each in its own task; the results in order.
fn await_all(tokens: Vec<Token>) -> Vec<Result<(), StoreError>> {
    runtime().block_on(async {
        let tasks: Vec<_> = tokens
            .into_iter()
            .map(|token| tokio::spawn(tokio::time::timeout(WAIT, token.durable())))
            .collect();
        let mut results = Vec::new();
        for task in tasks {
            results.push(task.await.unwrap().expect("an async wait hung"));
        }
        results
    })
}

#[test]
fn many_async_waiters_share_one_fsync() {
    let fs = SimFs::new();
    let store = sim_store(&fs);
    store.append(leaf(0)).unwrap().token.wait(WAIT).unwrap();
    let tokens: Vec<Token> = (1..65)
        .map(|i| store.append(leaf(i)).unwrap().token)
        .collect();
    let before = fs.counters().sync_data_calls;
    for result in await_all(tokens.clone()) {
        result.unwrap();
    }
    // Everything was appended before the first wait: one commit covers it
    // (a flush with nothing new writes and syncs nothing).
    assert_eq!(fs.counters().sync_data_calls - before, 1);
    assert_eq!(store.durable_size(), 65);
    // Waiting again costs nothing.
    let before = fs.counters().sync_data_calls;
    for result in await_all(tokens) {
        result.unwrap();
    }
    assert_eq!(fs.counters().sync_data_calls, before);
}

#[test]
fn appends_made_while_waiting_go_out_in_later_commits() {
    // Waiters and appends interleave: every waiter is answered, and one
    // commit covers many of them (a round's appends can be split over
    // two commits when one starts while they are made, never more).
    let fs = SimFs::new();
    let store = Arc::new(sim_store(&fs));
    let before = fs.counters().sync_data_calls;
    let rt = runtime();
    let results = rt.block_on(async {
        let mut tasks = Vec::new();
        for round in 0..20u64 {
            let tokens: Vec<Token> = (0..8)
                .map(|i| store.append(leaf(round * 8 + i)).unwrap().token)
                .collect();
            for token in tokens {
                tasks.push(tokio::spawn(tokio::time::timeout(WAIT, token.durable())));
            }
            tokio::task::yield_now().await;
        }
        let mut results = Vec::new();
        for task in tasks {
            results.push(task.await.unwrap().expect("an async wait hung"));
        }
        results
    });
    assert_eq!(results.len(), 160);
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    let syncs = fs.counters().sync_data_calls - before;
    assert!((1..=40).contains(&syncs), "{syncs} fsyncs for 20 rounds");
    assert_eq!(store.durable_size(), 160);
}

#[test]
fn the_durable_head_follows_commits_and_rollbacks() {
    let fs = SimFs::new();
    let store = sim_store(&fs);
    let empty = store.durable_head();
    assert_eq!((empty.size, empty.root), (0, None));
    assert!(empty.failure.is_none());
    let appended = store.append_batch(&leaves(0..40)).unwrap();
    // Visible, not durable: the head stays where it was.
    assert_eq!(store.durable_head().size, 0);
    runtime().block_on(appended.token.durable()).unwrap();
    let head = store.durable_head();
    assert_eq!(head.size, 40);
    assert_eq!(head.root, store.head().root);
    assert!(head.snapshot.size() >= 40);
    assert_eq!(head.snapshot.view(40).unwrap().root(), head.root);
    // Appended, not durable: a reader of the head still sees 40.
    store.append_batch(&leaves(40..50)).unwrap();
    assert_eq!(store.durable_head().size, 40);
    let root_at_25 = store.snapshot().view(25).unwrap().root();
    store.truncate(25).unwrap();
    let head = store.durable_head();
    assert_eq!((head.size, head.root), (25, root_at_25));
    assert_eq!(
        head.snapshot.size(),
        25,
        "no snapshot of the old tree stays"
    );
    assert_eq!(store.durable_size(), 25);
}

#[test]
fn a_rollback_fails_async_waiters_of_removed_leaves() {
    let fs = SimFs::new();
    let store = sim_store(&fs);
    let kept = store.append_batch(&leaves(0..10)).unwrap().token;
    let removed = store.append_batch(&leaves(10..20)).unwrap().token;
    runtime().block_on(removed.durable()).unwrap();
    store.truncate(10).unwrap();
    let later = store.append_batch(&leaves(100..105)).unwrap().token;
    let results = await_all(vec![kept, removed, later]);
    assert!(results[0].is_ok(), "{:?}", results[0]);
    assert!(
        matches!(results[1], Err(StoreError::RolledBack { end: 20, to: 10 })),
        "{:?}",
        results[1]
    );
    assert!(results[2].is_ok(), "{:?}", results[2]);
    assert_eq!(store.durable_size(), 15);
}

#[test]
fn a_failed_fsync_fails_every_waiter_async_and_blocking() {
    let fs = SimFs::new();
    let store = Arc::new(sim_store(&fs));
    store.append(leaf(0)).unwrap().token.wait(WAIT).unwrap();
    fs.fail_nth_sync_data(1);
    let tokens: Vec<Token> = (1..33)
        .map(|i| store.append(leaf(i)).unwrap().token)
        .collect();
    let blocking: Vec<_> = tokens[..8]
        .iter()
        .cloned()
        .map(|token| std::thread::spawn(move || token.wait(WAIT)))
        .collect();
    let mut results = await_all(tokens[8..].to_vec());
    results.extend(blocking.into_iter().map(|t| t.join().unwrap()));
    assert_eq!(results.len(), 32);
    for result in &results {
        let error = result
            .as_ref()
            .expect_err("nothing is acknowledged after a failed fsync");
        assert!(
            error.to_string().contains("injected fsync failure"),
            "{error}"
        );
    }
    let head = store.durable_head();
    assert_eq!(head.size, 1);
    let failure = head.failure.as_ref().expect("the head carries the failure");
    assert!(
        failure.to_string().contains("injected fsync failure"),
        "{failure}"
    );
    // Later waiters fail at once too.
    let late = await_all(vec![tokens[0].clone()]);
    assert!(
        matches!(late[0], Err(StoreError::Poisoned { .. })),
        "{late:?}"
    );
}

#[test]
fn dropping_the_store_answers_async_waiters() {
    // The close flushes what was appended: waiters still pending then
    // resolve (durable), none hangs; a token that outlives the store
    // answers at once.
    let fs = SimFs::new();
    let store = sim_store(&fs);
    let tokens: Vec<Token> = (0..16)
        .map(|i| store.append(leaf(i)).unwrap().token)
        .collect();
    let rt = runtime();
    let tasks: Vec<_> = tokens
        .iter()
        .map(|token| {
            let durable = token.durable();
            rt.spawn(async move { tokio::time::timeout(WAIT, durable).await })
        })
        .collect();
    drop(store);
    for task in tasks {
        rt.block_on(task).unwrap().expect("hung").unwrap();
    }
    let after = rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(5), tokens[3].durable()).await
    });
    after.expect("hung").unwrap();
}
