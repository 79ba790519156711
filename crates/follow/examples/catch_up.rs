//! Catch-up throughput of the follower against the scripted JSON-RPC node
//! of the tests (in this process, one TCP connection a request): the same
//! chain's values followed by one contract into one tree, and by two
//! contracts into two trees of one database (each block one journal frame
//! across both, a range's blocks one fdatasync). Every block is final
//! (no confirmations pending), so all of it is read in `eth_getLogs`
//! ranges. Prints values per second, and the seconds spent waiting on the
//! node.
//!
//! `cargo run --release -p cairn-follow --example catch_up -- [BLOCKS] [ROUNDS]`

#[path = "../tests/it/fake_node.rs"]
#[allow(dead_code)]
mod fake_node;

use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_db::{Database, DbConfig, Forest};
use cairn_follow::{
    EventField, Finality, FollowOptions, Follower, Metrics, RootChecks, Rpc, RpcOptions, Source,
};
use fake_node::{CONTRACT, CONTRACT2, Chain, EVENT, FakeNode, tree_config, word};

fn rpc(node: &FakeNode) -> Rpc {
    Rpc::new(
        &node.url,
        RpcOptions {
            timeout: Duration::from_secs(30),
            retry_for: Duration::from_secs(30),
            min_interval: Duration::ZERO,
        },
    )
    .expect("a client")
}

fn options(sources: Vec<Source>) -> FollowOptions {
    FollowOptions {
        sources,
        from_block: 0,
        finality: Finality::Confirmations(0),
        root_checks: RootChecks::RangeEnds,
        max_range: 2_000,
        poll_interval: Duration::from_millis(1),
        durable_timeout: Duration::from_secs(60),
        until_block: None,
        exit_at_head: true,
    }
}

fn source(tree: Option<&str>, contract: &str, group: Option<u64>) -> Source {
    let event = EventField::parse(EVENT, "value").expect("the event");
    let event = match group {
        Some(group) => event.with_filter("group", word(group)).expect("a filter"),
        None => event,
    };
    Source {
        tree: tree.map(str::to_owned),
        contract: cairn_follow::parse_address(contract).expect("an address"),
        events: vec![event],
        root_call: None,
    }
}

/// (seconds, values, seconds waiting on the node, requests).
fn one_tree(node: &FakeNode) -> (f64, u64, f64, u64) {
    let dir = tempfile::tempdir().expect("a directory");
    let mut config = DbConfig::new(tree_config());
    config.explicit_finality = true;
    let db = Database::create(dir.path(), config).expect("a database");
    let metrics = Arc::new(Metrics::new(Duration::from_secs(60)));
    let started = Instant::now();
    let mut follower = Follower::new(
        &db,
        rpc(node),
        options(vec![source(None, CONTRACT, None)]),
        Arc::clone(&metrics),
    )
    .expect("a follower");
    follower.run(|_, _| {}).expect("followed");
    let seconds = started.elapsed().as_secs_f64();
    let stats = follower.rpc().stats();
    drop(follower);
    db.close().expect("closed");
    (
        seconds,
        metrics.status().leaves,
        stats.seconds,
        stats.requests,
    )
}

fn two_trees(node: &FakeNode) -> (f64, u64, f64, u64) {
    let dir = tempfile::tempdir().expect("a directory");
    let forest = Forest::create(dir.path()).expect("a database");
    forest
        .add_tree("notes", DbConfig::new(tree_config()))
        .expect("notes");
    forest
        .add_tree("members", DbConfig::new(tree_config()))
        .expect("members");
    let metrics = Arc::new(Metrics::new(Duration::from_secs(60)));
    let started = Instant::now();
    let mut follower = Follower::forest(
        &forest,
        rpc(node),
        options(vec![
            source(Some("notes"), CONTRACT, Some(1)),
            source(Some("members"), CONTRACT2, None),
        ]),
        Arc::clone(&metrics),
    )
    .expect("a follower");
    follower.run(|_, _| {}).expect("followed");
    let seconds = started.elapsed().as_secs_f64();
    let stats = follower.rpc().stats();
    drop(follower);
    forest.close().expect("closed");
    (
        seconds,
        metrics.status().leaves,
        stats.seconds,
        stats.requests,
    )
}

fn main() {
    let mut args = std::env::args().skip(1);
    let blocks: u64 = args.next().map_or(40_000, |a| a.parse().expect("BLOCKS"));
    let rounds: usize = args.next().map_or(3, |a| a.parse().expect("ROUNDS"));
    let mut chain = Chain {
        root_group: 1,
        ..Chain::default()
    };
    chain.branch(0, 0, blocks, 1);
    let values = chain.values(1, blocks).len() + chain.values(2, blocks).len();
    let node = FakeNode::start(chain);
    println!(
        "{blocks} blocks, {values} values (groups 1 and 2), every block final, ranges of 2,000 blocks"
    );
    let mut one = Vec::new();
    let mut two = Vec::new();
    for _ in 0..rounds {
        // Interleaved, so both see the same machine load.
        one.push(one_tree(&node));
        two.push(two_trees(&node));
    }
    for (name, runs) in [
        ("one contract, one tree", &one),
        ("two contracts, two trees", &two),
    ] {
        let mut rates: Vec<f64> = runs.iter().map(|(s, v, _, _)| *v as f64 / s).collect();
        rates.sort_by(f64::total_cmp);
        let (seconds, leaves, node_seconds, requests) = runs[runs.len() / 2];
        println!(
            "{name}: {:.0} values/s median ({:.0}..{:.0}), {leaves} leaves in {seconds:.2} s, {node_seconds:.2} s waiting on the node, {requests} requests",
            rates[rates.len() / 2],
            rates[0],
            rates[rates.len() - 1],
        );
    }
}
