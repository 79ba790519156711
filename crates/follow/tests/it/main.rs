//! The follow loop against a scripted JSON-RPC node in this process: the
//! chain reorganises, the node restarts with another chain, answers busy
//! or fails; after every run the database must hold exactly the values of
//! the node's chain (one group's, by an indexed filter), every tagged
//! head must be a block of that chain, and what the loop refuses it must
//! refuse with the block and both hashes named.

mod fake_node;
mod forest;

use std::sync::Arc;
use std::time::Duration;

use cairn_db::{Database, DbConfig};
use cairn_follow::{
    Call, Event, EventField, Finality, FollowError, FollowOptions, Follower, Metrics, RootChecks,
    Rpc, RpcOptions, Source,
};
use fake_node::{CONTRACT, Chain, EVENT, FakeNode, Faults, hex, tree_config, word};

const GROUP: u64 = 1;

fn database(dir: &std::path::Path) -> Database {
    let mut config = DbConfig::new(tree_config());
    config.explicit_finality = true;
    Database::create(dir, config).expect("a database")
}

fn options(finality: Finality, from_block: u64) -> FollowOptions {
    FollowOptions {
        sources: vec![Source {
            tree: None,
            contract: cairn_follow::parse_address(CONTRACT).expect("an address"),
            events: vec![
                EventField::parse(EVENT, "value")
                    .and_then(|e| e.with_filter("group", word(GROUP)))
                    .expect("the event"),
            ],
            root_call: Some(Call::parse("root()", &[]).expect("a call")),
        }],
        from_block,
        finality,
        root_checks: RootChecks::EveryBlock,
        max_range: 32,
        poll_interval: Duration::from_millis(1),
        durable_timeout: Duration::from_secs(30),
        until_block: None,
        exit_at_head: true,
    }
}

fn rpc(node: &FakeNode) -> Rpc {
    rpc_url(&node.url)
}

fn rpc_url(url: &str) -> Rpc {
    Rpc::new(
        url,
        RpcOptions {
            timeout: Duration::from_secs(10),
            retry_for: Duration::from_secs(30),
            min_interval: Duration::ZERO,
        },
    )
    .expect("a client")
}

/// Follows `node` into `db` until caught up; every event seen.
fn follow(
    db: &Database,
    node: &FakeNode,
    options: FollowOptions,
    mut each: impl FnMut(&Event),
) -> Result<Vec<Event>, FollowError> {
    let metrics = Arc::new(Metrics::new(Duration::from_secs(60)));
    let mut follower = Follower::new(db, rpc(node), options, metrics)?;
    let mut events = Vec::new();
    follower.run(|event, _| {
        each(event);
        events.push(event.clone());
    })?;
    Ok(events)
}

/// The database holds the group's values of the node's chain, and every
/// tagged head is a block of it.
fn assert_equal_to_chain(db: &Database, node: &FakeNode) {
    let chain = node.chain();
    let head = chain.head();
    assert_eq!(
        db.leaves(0, None).expect("the leaves"),
        chain.values(GROUP, head),
        "the database's leaves are the group's values through block {head}"
    );
    let heads = db.heads(0, usize::MAX).expect("the tagged heads");
    assert!(!heads.is_empty());
    for tagged in heads {
        assert_eq!(
            tagged.block_hash,
            Some(chain.hash(tagged.block)),
            "tagged block {} is the chain's",
            tagged.block
        );
        assert_eq!(
            tagged.size,
            chain.values(GROUP, tagged.block).len() as u64,
            "size at block {}",
            tagged.block
        );
    }
}

fn reorgs(events: &[Event]) -> Vec<u64> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Reorg { ancestor, .. } => Some(*ancestor),
            _ => None,
        })
        .collect()
}

#[test]
fn follows_a_chain_through_reorganisations_busy_answers_and_failures() {
    let dir = tempfile::tempdir().expect("a directory");
    let db = database(dir.path());
    let mut chain = Chain {
        root_group: GROUP,
        faults: Faults {
            busy_every: 5,
            error_every: 7,
            drop_every: 11,
            max_range: 8,
        },
        ..Chain::default()
    };
    chain.branch(0, 0, 41, 1);
    let node = FakeNode::start(chain);
    let finality = Finality::Confirmations(6);

    let events = follow(&db, &node, options(finality, 0), |_| {}).expect("followed");
    assert!(reorgs(&events).is_empty());
    assert_equal_to_chain(&db, &node);
    assert!(
        db.finalized_size() > 0,
        "final history (below 6 confirmations) is finalized"
    );
    {
        let chain = node.chain();
        assert!(chain.faulted > 10, "faults injected: {}", chain.faulted);
        assert!(chain.ranges_refused > 0, "a range over 8 blocks refused");
    }

    // A reorganisation while nothing follows: found when resuming.
    node.chain().branch(38, 1, 10, 2);
    let events = follow(&db, &node, options(finality, 0), |_| {}).expect("resumed");
    let seen = reorgs(&events);
    assert_eq!(seen.len(), 1, "{events:?}");
    assert!(seen[0] <= 37, "ancestor {}", seen[0]);
    assert_equal_to_chain(&db, &node);

    // A reorganisation while following, seen at a block's parent hash.
    node.chain().branch(48, 2, 6, 3);
    let shared = node.shared();
    let mut switched = false;
    let events = follow(&db, &node, options(finality, 0), |event| {
        if let Event::Ingested { to: 50, .. } = event
            && !switched
        {
            switched = true;
            shared.lock().expect("lock").branch(49, 3, 8, 4);
        }
    })
    .expect("followed through a reorganisation");
    assert!(switched, "block 50 was ingested alone: {events:?}");
    let seen = reorgs(&events);
    assert_eq!(seen.len(), 1, "{events:?}");
    assert!(seen[0] <= 48, "ancestor {}", seen[0]);
    // Caught up with the head seen before the switch; the rest next time.
    follow(&db, &node, options(finality, 0), |_| {}).expect("caught up");
    assert_equal_to_chain(&db, &node);
}

#[test]
fn finality_follows_the_nodes_finalized_and_safe_tags() {
    let dir = tempfile::tempdir().expect("a directory");
    let db = database(dir.path());
    let mut chain = Chain {
        root_group: GROUP,
        finalized: Some(20),
        safe: Some(26),
        ..Chain::default()
    };
    chain.branch(0, 0, 31, 5);
    let node = FakeNode::start(chain);

    follow(&db, &node, options(Finality::Tag("finalized"), 0), |_| {}).expect("followed");
    assert_equal_to_chain(&db, &node);
    let at_20 = node.chain().values(GROUP, 20).len() as u64;
    assert_eq!(db.finalized_size(), at_20, "finalized through block 20");

    // Above the finalized block a reorganisation is followed.
    node.chain().branch(24, 1, 8, 6);
    let events =
        follow(&db, &node, options(Finality::Tag("finalized"), 0), |_| {}).expect("followed");
    assert_eq!(reorgs(&events).len(), 1, "{events:?}");
    assert_equal_to_chain(&db, &node);

    // The safe tag finalizes further.
    follow(&db, &node, options(Finality::Tag("safe"), 0), |_| {}).expect("followed");
    let at_26 = node.chain().values(GROUP, 26).len() as u64;
    assert_eq!(db.finalized_size(), at_26, "finalized through block 26");

    // Below it, a changed block stops the follower with both hashes.
    let last_final = db
        .heads(0, usize::MAX)
        .expect("heads")
        .into_iter()
        .rfind(|h| h.size <= at_26)
        .expect("a final tagged block");
    let stored = node.chain().hash(last_final.block);
    node.chain().branch(15, 2, 20, 7);
    let error = follow(&db, &node, options(Finality::Tag("safe"), 0), |_| {})
        .expect_err("a reorganisation below finality");
    let FollowError::BelowFinality {
        finalized,
        block,
        stored: said_stored,
        node: said_node,
    } = &error
    else {
        panic!("{error}");
    };
    assert_eq!((*finalized, *block), (last_final.block, last_final.block));
    assert_eq!(said_stored, &hex(&stored));
    assert_eq!(said_node, &hex(&node.chain().hash(last_final.block)));
    assert!(error.to_string().contains(said_node.as_str()), "{error}");
    assert_eq!(db.finalized_size(), at_26, "nothing final was touched");
}

#[test]
fn a_restarted_node_is_rolled_back_to_the_shared_prefix_or_stops_the_follower() {
    let dir = tempfile::tempdir().expect("a directory");
    let db = database(dir.path());
    let mut chain = Chain {
        root_group: GROUP,
        ..Chain::default()
    };
    chain.branch(0, 0, 31, 8);
    let node = FakeNode::start(chain);
    let finality = Finality::Confirmations(5);
    follow(&db, &node, options(finality, 0), |_| {}).expect("followed");
    assert_equal_to_chain(&db, &node);
    let final_block = db
        .heads(0, usize::MAX)
        .expect("heads")
        .into_iter()
        .rfind(|h| h.size <= db.finalized_size())
        .expect("a final tagged block")
        .block;

    // Restarted with the same history up to block 27, then another, and
    // shorter than what was ingested: rolled back to the shared prefix.
    node.chain().branch(28, 1, 2, 9);
    assert_eq!(node.chain().head(), 29);
    let events = follow(&db, &node, options(finality, 0), |_| {}).expect("followed");
    let seen = reorgs(&events);
    assert_eq!(seen.len(), 1, "{events:?}");
    assert!(
        seen[0] <= 27 && seen[0] >= final_block,
        "ancestor {}",
        seen[0]
    );
    assert_equal_to_chain(&db, &node);

    // Restarted with another history from genesis: stops at the final
    // block, naming it and both hashes; nothing is rolled back.
    let size = db.size();
    let stored = node.chain().hash(final_block);
    node.chain().branch(0, 2, 40, 10);
    let error = follow(&db, &node, options(finality, 0), |_| {}).expect_err("another chain");
    match &error {
        FollowError::BelowFinality {
            block,
            stored: s,
            node: n,
            ..
        } => {
            assert_eq!(*block, final_block);
            assert_eq!(s, &hex(&stored));
            assert_eq!(n, &hex(&node.chain().hash(final_block)));
        }
        other => panic!("{other}"),
    }
    assert_eq!(db.size(), size);

    // Restarted with a chain shorter than the final block: the same.
    node.chain().branch(0, 3, 10, 11);
    let error = follow(&db, &node, options(finality, 0), |_| {}).expect_err("a short chain");
    match &error {
        FollowError::BelowFinality { block, node, .. } => {
            assert_eq!((*block, node.as_str()), (final_block, "no block"));
        }
        other => panic!("{other}"),
    }
    assert!(error.to_string().contains("restarted"), "{error}");
    assert_eq!(db.size(), size);
}

#[test]
fn a_chain_replaced_before_anything_is_final_stops_at_the_first_block() {
    let dir = tempfile::tempdir().expect("a directory");
    let db = database(dir.path());
    let mut chain = Chain {
        root_group: GROUP,
        ..Chain::default()
    };
    chain.branch(0, 0, 12, 12);
    let node = FakeNode::start(chain);
    let finality = Finality::Confirmations(100);
    follow(&db, &node, options(finality, 3), |_| {}).expect("followed");
    assert_equal_to_chain_from(&db, &node, 3);
    assert_eq!(db.finalized_size(), 0);
    let stored = node.chain().hash(3);
    node.chain().branch(0, 1, 15, 13);
    let error = follow(&db, &node, options(finality, 3), |_| {}).expect_err("another chain");
    match &error {
        FollowError::BeforeStart {
            block,
            first,
            stored: s,
            node: n,
        } => {
            assert_eq!((*block, *first), (3, 3));
            assert_eq!(s, &hex(&stored));
            assert_eq!(n, &hex(&node.chain().hash(3)));
        }
        other => panic!("{other}"),
    }
}

/// As [`assert_equal_to_chain`], for a database that began at `from`.
fn assert_equal_to_chain_from(db: &Database, node: &FakeNode, from: u64) {
    let chain = node.chain();
    let before = match from.checked_sub(1) {
        Some(last) => chain.values(GROUP, last).len(),
        None => 0,
    };
    let want = chain.values(GROUP, chain.head()).split_off(before);
    assert_eq!(db.leaves(0, None).expect("the leaves"), want);
}

#[test]
fn a_contract_root_other_than_the_databases_stops_the_follower() {
    let dir = tempfile::tempdir().expect("a directory");
    let db = database(dir.path());
    let mut chain = Chain {
        root_group: GROUP,
        root_skew: 1,
        ..Chain::default()
    };
    chain.branch(0, 0, 10, 14);
    let node = FakeNode::start(chain);
    let error = follow(&db, &node, options(Finality::Confirmations(3), 0), |_| {})
        .expect_err("a root mismatch");
    let FollowError::RootMismatch {
        block,
        contract,
        cairn,
        ..
    } = &error
    else {
        panic!("{error}");
    };
    let first = node
        .chain()
        .blocks
        .iter()
        .find(|b| b.logs.iter().any(|(g, _)| *g == GROUP))
        .expect("a block with a value of the group")
        .number;
    assert_eq!(*block, first);
    assert_ne!(contract, cairn);
}
