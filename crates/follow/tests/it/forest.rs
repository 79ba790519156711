//! Several contracts into the trees of one database: two contracts and a
//! filter feed three trees (two Lean trees whose contracts answer their
//! roots, one indexed nullifier tree); each chain block is one database
//! block across them, rolled back and finalized together, and a follower
//! killed with SIGKILL at random points resumes from the database alone.
//! After every run each tree holds exactly its contract's values of the
//! node's chain, and every block the database holds is a chain block with
//! every tree's size at it.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use cairn_core::TreeKind;
use cairn_db::{DbConfig, Forest};
use cairn_follow::{
    Call, Event, EventField, Finality, FollowError, FollowOptions, Follower, Metrics, RootChecks,
    Source,
};

use crate::fake_node::{
    CONTRACT, CONTRACT2, Chain, EVENT, FakeNode, Faults, Word, tree_config, word,
};
use crate::{reorgs, rpc};

/// The trees: notes (the contract's group 1, root-checked), members (the
/// second contract, root-checked) and spent (group 2 again, indexed).
fn forest(dir: &Path) -> Forest {
    let forest = Forest::create(dir).expect("a database");
    let lean = DbConfig::new(tree_config());
    forest.add_tree("notes", lean.clone()).expect("notes");
    forest.add_tree("members", lean).expect("members");
    let indexed = DbConfig::new(tree_config().with_kind(TreeKind::Indexed));
    forest.add_tree("spent", indexed).expect("spent");
    forest
}

fn event(group: Option<u64>) -> EventField {
    let event = EventField::parse(EVENT, "value").expect("the event");
    match group {
        Some(group) => event.with_filter("group", word(group)).expect("a filter"),
        None => event,
    }
}

fn options(finality: Finality, root_checks: RootChecks) -> FollowOptions {
    let address = |text| cairn_follow::parse_address(text).expect("an address");
    let root = || Some(Call::parse("root()", &[]).expect("a call"));
    FollowOptions {
        sources: vec![
            Source {
                tree: Some("notes".to_owned()),
                contract: address(CONTRACT),
                events: vec![event(Some(1))],
                root_call: root(),
            },
            Source {
                tree: Some("members".to_owned()),
                contract: address(CONTRACT2),
                events: vec![event(None)],
                root_call: root(),
            },
            Source {
                tree: Some("spent".to_owned()),
                contract: address(CONTRACT),
                events: vec![event(Some(2))],
                root_call: None,
            },
        ],
        from_block: 0,
        finality,
        root_checks,
        max_range: 32,
        poll_interval: Duration::from_millis(1),
        durable_timeout: Duration::from_secs(30),
        until_block: None,
        exit_at_head: true,
    }
}

fn follow(
    forest: &Forest,
    node: &FakeNode,
    options: FollowOptions,
    mut each: impl FnMut(&Event),
) -> Result<Vec<Event>, FollowError> {
    let metrics = Arc::new(Metrics::new(Duration::from_secs(60)));
    let mut follower = Follower::forest(forest, rpc(node), options, metrics)?;
    let mut events = Vec::new();
    follower.run(|event, _| {
        each(event);
        events.push(event.clone());
    })?;
    Ok(events)
}

/// Each tree holds its contract's values of the node's chain; every block
/// held is the chain's, with every tree's size at it.
fn assert_equal_to_chain(forest: &Forest, node: &FakeNode) {
    forest.apply().expect("the trees durable");
    let chain = node.chain();
    let head = chain.head();
    let notes = forest.tree("notes").expect("notes");
    let members = forest.tree("members").expect("members");
    let spent = forest.tree("spent").expect("spent");
    assert_eq!(
        notes.leaves(0, None).expect("leaves"),
        chain.values(1, head)
    );
    assert_eq!(
        members.leaves(0, None).expect("leaves"),
        chain.values(2, head)
    );
    let nullifiers = chain.values(2, head);
    assert_eq!(
        spent.size(),
        nullifiers.len() as u64 + 1,
        "the guard and each nullifier"
    );
    for value in &nullifiers {
        assert!(spent.index_of(value).expect("a lookup").is_some());
    }
    let blocks = forest.blocks();
    assert!(!blocks.is_empty());
    for block in blocks {
        assert_eq!(
            block.hash,
            chain.hash(block.number),
            "block {} is the chain's",
            block.number
        );
        let sizes: Vec<u64> = forest
            .heads_at(block.number)
            .expect("heads")
            .iter()
            .map(|(_, size, _)| *size)
            .collect();
        let (ones, twos) = (
            chain.values(1, block.number).len() as u64,
            chain.values(2, block.number).len() as u64,
        );
        assert_eq!(
            sizes,
            vec![ones, twos, twos + 1],
            "sizes at block {}",
            block.number
        );
    }
}

#[test]
fn two_contracts_feed_three_trees_as_one_block_through_reorganisations() {
    let dir = tempfile::tempdir().expect("a directory");
    let forest = forest(dir.path());
    let mut chain = Chain {
        root_group: 1,
        faults: Faults {
            busy_every: 9,
            error_every: 13,
            drop_every: 0,
            max_range: 8,
        },
        ..Chain::default()
    };
    chain.branch(0, 0, 40, 21);
    let node = FakeNode::start(chain);
    let finality = Finality::Confirmations(6);
    follow(
        &forest,
        &node,
        options(finality, RootChecks::RangeEnds),
        |_| {},
    )
    .expect("followed");
    assert_equal_to_chain(&forest, &node);
    node.chain().branch(40, 0, 20, 26);
    follow(
        &forest,
        &node,
        options(finality, RootChecks::EveryBlock),
        |_| {},
    )
    .expect("followed");
    assert_equal_to_chain(&forest, &node);
    assert!(
        forest.finalized_block().is_some_and(|b| b >= 50),
        "final history finalized"
    );

    // A reorganisation while nothing follows: one rollback of every tree.
    node.chain().branch(57, 1, 12, 22);
    let events = follow(
        &forest,
        &node,
        options(finality, RootChecks::EveryBlock),
        |_| {},
    )
    .expect("resumed");
    let seen = reorgs(&events);
    assert_eq!(seen.len(), 1, "{events:?}");
    assert!(seen[0] <= 56 && seen[0] >= 54, "ancestor {}", seen[0]);
    assert_equal_to_chain(&forest, &node);

    // A reorganisation while following, seen at a block's parent hash.
    node.chain().branch(69, 1, 6, 27);
    let shared = node.shared();
    let mut switched = false;
    let events = follow(
        &forest,
        &node,
        options(finality, RootChecks::EveryBlock),
        |event| {
            if let Event::Ingested { to, trees, .. } = event
                && *to == 71
                && !switched
            {
                assert_eq!(trees.len(), 3);
                switched = true;
                let mut chain = shared.lock().expect("lock");
                chain.branch(70, 2, 10, 23);
            }
        },
    );
    let events = events.expect("followed");
    assert!(switched, "block 71 was ingested alone: {events:?}");
    assert_eq!(reorgs(&events).len(), 1, "{events:?}");
    follow(
        &forest,
        &node,
        options(finality, RootChecks::EveryBlock),
        |_| {},
    )
    .expect("caught up");
    assert_equal_to_chain(&forest, &node);

    // Closed and reopened: the same, and following goes on from there.
    let last = forest.last_block();
    forest.close().expect("closed");
    let forest = Forest::open(dir.path()).expect("reopened");
    assert_eq!(forest.last_block(), last);
    node.chain().branch(80, 2, 8, 24);
    follow(
        &forest,
        &node,
        options(finality, RootChecks::EveryBlock),
        |_| {},
    )
    .expect("followed");
    assert_equal_to_chain(&forest, &node);
}

#[test]
fn a_contract_root_other_than_its_trees_names_the_tree() {
    let dir = tempfile::tempdir().expect("a directory");
    let forest = forest(dir.path());
    let mut chain = Chain {
        root_group: 1,
        root_skew: 1,
        ..Chain::default()
    };
    chain.branch(0, 0, 12, 25);
    let node = FakeNode::start(chain);
    let error = follow(
        &forest,
        &node,
        options(Finality::Confirmations(3), RootChecks::EveryBlock),
        |_| {},
    )
    .expect_err("a root mismatch");
    let FollowError::RootMismatch { tree, .. } = &error else {
        panic!("{error}");
    };
    assert!(tree.is_some(), "{error}");
    assert!(error.to_string().contains("tree \""), "{error}");
}

#[test]
fn sources_naming_no_tree_a_tree_twice_or_a_filled_tree_are_refused() {
    let dir = tempfile::tempdir().expect("a directory");
    let forest = forest(dir.path());
    let node = FakeNode::start(Chain::default());
    let finality = Finality::Confirmations(3);
    let metrics = || Arc::new(Metrics::new(Duration::from_secs(60)));
    let mut twice = options(finality, RootChecks::EveryBlock);
    twice.sources[1].tree = Some("notes".to_owned());
    let error = Follower::forest(&forest, rpc(&node), twice, metrics()).expect_err("twice");
    assert!(
        error.to_string().contains("both feed the tree \"notes\""),
        "{error}"
    );
    let mut unknown = options(finality, RootChecks::EveryBlock);
    unknown.sources[2].tree = Some("nope".to_owned());
    let error = Follower::forest(&forest, rpc(&node), unknown, metrics()).expect_err("unknown");
    assert!(error.to_string().contains("nope"), "{error}");
    forest
        .append("notes", &[word(7)])
        .expect("a value outside any block");
    let error = Follower::forest(
        &forest,
        rpc(&node),
        options(finality, RootChecks::EveryBlock),
        metrics(),
    )
    .expect_err("filled");
    assert!(error.to_string().contains("no block"), "{error}");
}

/// The child of [`a_follower_killed_at_random_points_resumes_from_the_database`]:
/// follows until killed, when the test runs it (a no-op otherwise).
#[test]
fn child_follows_until_killed() {
    let Ok(args) = std::env::var("CAIRN_FOLLOW_CHILD") else {
        return;
    };
    let (dir, url) = args.split_once('|').expect("DIR|URL");
    let forest = Forest::open(dir).expect("the database");
    let node = crate::rpc_url(url);
    let mut options = options(Finality::Confirmations(6), RootChecks::EveryBlock);
    options.exit_at_head = false;
    options.max_range = 4;
    let metrics = Arc::new(Metrics::new(Duration::from_secs(60)));
    let mut follower = Follower::forest(&forest, node, options, metrics).expect("a follower");
    follower.run(|_, _| {}).expect("followed until killed");
}

#[test]
fn a_follower_killed_at_random_points_resumes_from_the_database() {
    let dir = tempfile::tempdir().expect("a directory");
    forest(dir.path()).close().expect("created");
    let mut chain = Chain {
        root_group: 1,
        ..Chain::default()
    };
    chain.branch(0, 0, 300, 31);
    let node = FakeNode::start(chain);
    // Every block hash of every branch made: the sizes each tree had at it.
    let mut seen: HashMap<Word, (u64, u64)> = HashMap::new();
    let record = |node: &FakeNode, seen: &mut HashMap<Word, (u64, u64)>| {
        let chain = node.chain();
        for block in &chain.blocks {
            seen.insert(
                block.hash,
                (
                    chain.values(1, block.number).len() as u64,
                    chain.values(2, block.number).len() as u64,
                ),
            );
        }
    };
    record(&node, &mut seen);
    let exe = std::env::current_exe().expect("the test binary");
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut random = move |below: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % below
    };
    for round in 0..8u64 {
        let mut child = std::process::Command::new(&exe)
            .args([
                "--exact",
                "forest::child_follows_until_killed",
                "--nocapture",
            ])
            .env(
                "CAIRN_FOLLOW_CHILD",
                format!("{}|{}", dir.path().display(), node.url),
            )
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("the child");
        std::thread::sleep(Duration::from_millis(40 + random(260)));
        // The chain moves under it: new blocks, or a reorganisation above
        // what six confirmations made final.
        {
            let mut chain = node.chain();
            let head = chain.head();
            if round % 2 == 1 {
                chain.branch(head - 3, 100 + round, 12, 40 + round);
            } else {
                chain.branch(head + 1, 0, 10, 40 + round);
            }
        }
        record(&node, &mut seen);
        std::thread::sleep(Duration::from_millis(random(120)));
        child.kill().expect("SIGKILL");
        child.wait().expect("reaped");
        // Whatever the kill interrupted, every block held is whole: each
        // tree's size at it is the chain's at that block.
        let forest = Forest::open(dir.path()).expect("reopened after the kill");
        for block in forest.blocks() {
            let (ones, twos) = seen[&block.hash];
            let sizes: Vec<u64> = forest
                .heads_at(block.number)
                .expect("heads")
                .iter()
                .map(|(_, size, _)| *size)
                .collect();
            assert_eq!(
                sizes,
                vec![ones, twos, twos + 1],
                "round {round}, block {}",
                block.number
            );
        }
        forest.close().expect("closed");
    }
    let forest = Forest::open(dir.path()).expect("reopened");
    assert!(
        forest.last_block().is_some(),
        "the children ingested something"
    );
    follow(
        &forest,
        &node,
        options(Finality::Confirmations(6), RootChecks::EveryBlock),
        |_| {},
    )
    .expect("resumed after the last kill");
    assert_equal_to_chain(&forest, &node);
}
