//! kill -9 at random moments: a child process appends (singles and
//! batches), checkpoints now and then, and prints every acknowledged size;
//! the parent kills it, reopens, and checks that everything acknowledged is
//! there with the reference root. 100 kills in CI; set
//! `CAIRN_CRASH_KILLS=2000` for the slow variant.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cairn_store::Store;
use rand::{Rng, SeedableRng};

use crate::support::*;

const CHILD_ENV: &str = "CAIRN_CRASH_CHILD_DIR";
const N: u64 = 3;
const LOG_SHIFT: u8 = 10;

/// The writer. A no-op unless started by `kill_9_never_loses_an_acknowledged_leaf`.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let seed: u64 = std::env::var("CAIRN_CRASH_SEED").unwrap().parse().unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut cfg = config(N, LOG_SHIFT);
    // A background flush too, so commits race with kills from two threads.
    cfg.flush_interval = Some(Duration::from_millis(2));
    let store = Store::open_or_create(std_fs(), Path::new(&dir), cfg).unwrap();
    let mut next = store.size();
    loop {
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

#[test]
fn kill_9_never_loses_an_acknowledged_leaf() {
    let kills: u64 = std::env::var("CAIRN_CRASH_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let exe = std::env::current_exe().unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0xc4a5);
    let mut acknowledged = 0u64;
    let mut checkpoints = 0;
    let started = Instant::now();
    for round in 0..kills {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "crash::crash_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, &db)
            .env("CAIRN_CRASH_SEED", round.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut last = 0u64;
            let mut checkpoints = 0;
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(end) = line.strip_prefix("ack ") {
                    last = last.max(end.parse().unwrap());
                } else if line == "checkpoint" {
                    checkpoints += 1;
                }
            }
            (last, checkpoints)
        });
        std::thread::sleep(Duration::from_millis(rng.gen_range(5..60)));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let (acked, cps) = reader.join().unwrap();
        acknowledged = acknowledged.max(acked);
        checkpoints += cps;
        if !db.join("cairn.meta").exists() {
            continue; // killed before creation finished
        }
        let store = Store::open(std_fs(), &db, config(N, LOG_SHIFT))
            .unwrap_or_else(|e| panic!("round {round}: reopen failed: {e}"));
        let size = check_prefix(&store, N);
        assert!(
            size >= acknowledged,
            "round {round}: {size} leaves recovered, {acknowledged} were acknowledged"
        );
        acknowledged = size;
    }
    eprintln!(
        "{kills} kills, {acknowledged} leaves at the end, {checkpoints} checkpoints acknowledged, {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
