//! kill -9 at random moments: a child process appends (singles and
//! batches), checkpoints now and then, and prints every acknowledged size;
//! the parent kills it, reopens, and checks that everything acknowledged is
//! there with the reference root. 100 kills of a Lean tree and 40 of a
//! fixed-depth one in CI; set `CAIRN_CRASH_KILLS=2000` for the slow variant
//! (both).

use std::path::Path;
use std::time::{Duration, Instant};

use cairn_core::TreeConfig;
use cairn_store::Store;
use cairn_testkit::kill9::Victim;
use rand::{Rng, SeedableRng};

use crate::support::*;

const CHILD_ENV: &str = "CAIRN_CRASH_CHILD_DIR";
const SEED_ENV: &str = "CAIRN_CRASH_SEED";
/// Non-empty in the child's environment for a fixed-depth tree.
const FIXED_ENV: &str = "CAIRN_CRASH_CHILD_FIXED";
const N: u64 = 3;
const LOG_SHIFT: u8 = 10;
/// A store larger than this is replaced by a fresh one: a store of
/// millions of leaves in 1,024-leaf log files would open more files at
/// recovery than a process may hold, and its reference root would cost
/// more than the round.
const MAX_LEAVES: u64 = 150_000;
/// A child appends at most this many leaves, then waits to be killed: a
/// child that is not killed at once appends tens of thousands of leaves a
/// millisecond.
const CHILD_LEAVES: u64 = 20_000;

/// The writer. A no-op unless started by `kill_rounds`.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let seed: u64 = std::env::var(SEED_ENV).unwrap().parse().unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let fixed = std::env::var_os(FIXED_ENV).is_some_and(|v| !v.is_empty());
    let mut cfg = config_of(tree(fixed), LOG_SHIFT);
    // A background flush too, so commits race with kills from two threads.
    cfg.flush_interval = Some(Duration::from_millis(2));
    let store = Store::open_or_create(std_fs(), Path::new(&dir), cfg).unwrap();
    println!("opened");
    let mut next = store.size();
    let stop = next + CHILD_LEAVES;
    loop {
        if next >= stop {
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        let appended = if rng.gen_bool(0.5) {
            store.append(leaf(next)).unwrap()
        } else {
            let count = rng.gen_range(2..400);
            store.append_batch(&leaves(next..next + count)).unwrap()
        };
        next += appended.count;
        if rng.gen_bool(0.3) {
            appended.token.wait(WAIT).unwrap();
            println!("ack {}", appended.token.end());
        }
        if rng.gen_bool(0.02) {
            store.checkpoint().unwrap();
            println!("checkpoint");
        }
    }
}

fn tree(fixed: bool) -> TreeConfig {
    if fixed {
        fixed_tree_config(N)
    } else {
        tree_config(N)
    }
}

#[test]
fn kill_9_never_loses_an_acknowledged_leaf() {
    kill_rounds(false, 100);
}

#[test]
fn kill_9_never_loses_an_acknowledged_leaf_of_a_fixed_depth_tree() {
    kill_rounds(true, 40);
}

fn kill_rounds(fixed: bool, default_kills: u64) {
    let kills: u64 = std::env::var("CAIRN_CRASH_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default_kills);
    let dir = tempfile::tempdir().unwrap();
    let mut generation = 0;
    let mut db = dir.path().join("db0");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0xc4a5);
    let mut acknowledged = 0u64;
    let mut recovered = 0u64;
    let mut checkpoints = 0;
    let started = Instant::now();
    for round in 0..kills {
        let fixed_env = if fixed { "1" } else { "" };
        let seed = round.to_string();
        let victim = Victim::start(
            "crash::crash_child",
            [
                (CHILD_ENV, db.as_os_str()),
                (SEED_ENV, seed.as_ref()),
                (FIXED_ENV, fixed_env.as_ref()),
            ],
        );
        // Three rounds in four kill while appending, within 10 ms of the
        // open (however slow a loaded machine made the start: a child
        // appends tens of thousands of leaves a millisecond); the rest at
        // any moment, creation and recovery included.
        if rng.gen_bool(0.75) && victim.opened(WAIT) {
            std::thread::sleep(Duration::from_micros(rng.gen_range(0..10_000)));
        } else {
            std::thread::sleep(Duration::from_millis(rng.gen_range(5..60)));
        }
        let (mut acked, mut cps) = (0u64, 0);
        for line in victim.kill() {
            if let Some(end) = line.strip_prefix("ack ") {
                acked = acked.max(end.parse().unwrap());
            } else if line == "checkpoint" {
                cps += 1;
            }
        }
        acknowledged = acknowledged.max(acked);
        checkpoints += cps;
        if !db.join("cairn.meta").exists() {
            continue; // killed before creation finished
        }
        let store = Store::open(std_fs(), &db, config_of(tree(fixed), LOG_SHIFT))
            .unwrap_or_else(|e| panic!("round {round}: reopen failed: {e}"));
        let size = check_prefix_of(&store, tree(fixed));
        assert!(
            size >= acknowledged,
            "round {round}: {size} leaves recovered, {acknowledged} were acknowledged"
        );
        acknowledged = size;
        if size > MAX_LEAVES {
            drop(store);
            recovered += size;
            generation += 1;
            db = dir.path().join(format!("db{generation}"));
            acknowledged = 0;
        }
    }
    recovered += acknowledged;
    eprintln!(
        "{kills} kills, {} stores, {recovered} leaves recovered in all, {checkpoints} checkpoints acknowledged, {:.1} s",
        generation + 1,
        started.elapsed().as_secs_f64()
    );
    assert!(
        kills < 10 || recovered > 0,
        "{kills} kills and not one leaf recovered: the test checked nothing"
    );
}
