//! kill -9 at random moments, through the indexed database: a child
//! process inserts single values, batches and witnessed batches, offers
//! duplicates (refused), checkpoints and rolls back now and then (the
//! background thread flushes and checkpoints too), and records in a file,
//! fsynced before it counts, every size it saw durable and every rollback
//! it began. The parent SIGKILLs it, reopens with `IndexedDb::open`, and
//! checks:
//!
//! - the recovered size is at least the acknowledged one (a rollback that
//!   began lowers it to its target, whether or not it finished);
//! - value `i` of the workload is at leaf `i + 1` for every recovered
//!   value, and absent past them (the log is a prefix of the workload: the
//!   child inserts the same values again after a rollback);
//! - the head is the head of the indexed tree rebuilt from that prefix,
//!   and absence proofs of later values verify against it.
//!
//! 30 kills in CI; `CAIRN_INDEXED_CRASH_KILLS=1000` for a slow variant.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cairn_core::indexed::IndexedTree;
use cairn_core::{Arity, Hash, HashKind};
use cairn_db::{DbConfig, DbError, IndexedDb};
use cairn_store::CheckpointPolicy;
use cairn_testkit::env_u64;
use cairn_testkit::kill9::{AckFile, Victim, acknowledged_lines};
use rand::{Rng, SeedableRng};

use crate::support::*;

const CHILD_ENV: &str = "CAIRN_INDEXED_CRASH_CHILD_DIR";
const ACKS_ENV: &str = "CAIRN_INDEXED_CRASH_ACKS";
const SEED_ENV: &str = "CAIRN_INDEXED_CRASH_SEED";
const N: u64 = 4;
const HASH: HashKind = HashKind::Blake3;
const STREAM: u64 = 0x01de_c5ed;
const MAX_VALUES: u64 = 60_000;
const WAIT: Duration = Duration::from_secs(30);

fn value_at(i: u64) -> Hash {
    value(STREAM, i)
}

fn child_config() -> DbConfig {
    let mut config = config(N, HASH);
    config.store.flush_interval = Some(Duration::from_millis(2));
    config.store.checkpoint = CheckpointPolicy {
        every_leaves: Some(3_000),
        ..CheckpointPolicy::default()
    };
    config
}

/// The writer. A no-op unless started by
/// `kill_9_never_loses_an_acknowledged_value_of_an_indexed_database`.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let seed: u64 = std::env::var(SEED_ENV).unwrap().parse().unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut acks = AckFile::open(std::env::var(ACKS_ENV).unwrap());
    let db = IndexedDb::open_in(
        std::sync::Arc::new(cairn_store::StdFs),
        Path::new(&dir),
        Some(child_config()),
    )
    .unwrap();
    let mut next = db.logged();
    loop {
        let roll = rng.gen_range(0..100);
        if roll < 40 {
            let inserted = db.insert(value_at(next)).unwrap();
            assert_eq!(inserted.first, next + 1);
            next += 1;
            if rng.gen_bool(0.2) {
                inserted.token.wait(WAIT).unwrap();
                acks.record(&format!("durable {}\n", inserted.token.end()));
            }
        } else if roll < 75 {
            let count = rng.gen_range(2..400);
            let batch: Vec<Hash> = (next..next + count).map(value_at).collect();
            let inserted = db.insert_batch(&batch).unwrap();
            next += count;
            if rng.gen_bool(0.3) {
                inserted.token.wait(WAIT).unwrap();
                acks.record(&format!("durable {}\n", inserted.token.end()));
            }
        } else if roll < 85 {
            let count = rng.gen_range(1..20);
            let batch: Vec<Hash> = (next..next + count).map(value_at).collect();
            // The trusted head before: everything inserted so far, durable.
            let before = db.flush().unwrap();
            let ticket = db.insert_witnessed(&batch).unwrap();
            next += count;
            let witness = db.witness(&ticket, WAIT).unwrap();
            let after = witness
                .verify(Arity::new(N).unwrap(), HASH, &before)
                .unwrap();
            assert_eq!(after.size, next + 1);
            acks.record(&format!("durable {next}\n"));
        } else if roll < 93 {
            if next > 0 {
                let old = rng.gen_range(0..next);
                assert!(matches!(
                    db.insert(value_at(old)),
                    Err(DbError::Duplicates { .. })
                ));
            }
        } else if roll < 97 {
            db.checkpoint().unwrap();
            acks.record(&format!("durable {next}\n"));
        } else {
            let finalized = db.finalized_size() - 1;
            if next > finalized {
                let to = rng.gen_range(finalized..=next);
                acks.record(&format!("rollback {to}\n"));
                db.truncate(to + 1).unwrap();
                next = to;
            }
        }
    }
}

/// The lowest size a recovery may show: the largest durable size
/// acknowledged, lowered by every rollback begun after it.
fn floor(path: &Path, mut acked: u64) -> u64 {
    for line in acknowledged_lines(path) {
        let (what, n) = line.split_once(' ').unwrap();
        let n: u64 = n.parse().unwrap();
        match what {
            "durable" => acked = acked.max(n),
            "rollback" => acked = acked.min(n),
            _ => panic!("bad line {line}"),
        }
    }
    acked
}

#[test]
fn kill_9_never_loses_an_acknowledged_value_of_an_indexed_database() {
    let kills = env_u64("CAIRN_INDEXED_CRASH_KILLS", 30);
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x1dec);
    let new_db = |generation: u32| -> PathBuf {
        let path = dir.path().join(format!("db{generation}"));
        IndexedDb::create(&path, child_config())
            .unwrap()
            .close()
            .unwrap();
        path
    };
    let mut generation = 0;
    let mut path = new_db(generation);
    let mut acked = 0u64;
    let (mut recovered_total, mut losses) = (0u64, 0u32);
    for round in 0..kills {
        let acks = dir.path().join(format!("acks{round}"));
        let seed = round.to_string();
        let victim = Victim::start(
            "indexed_crash::crash_child",
            [
                (CHILD_ENV, path.as_os_str()),
                (ACKS_ENV, acks.as_os_str()),
                (SEED_ENV, seed.as_ref()),
            ],
        );
        std::thread::sleep(Duration::from_millis(rng.gen_range(20..200)));
        victim.kill();
        let want = floor(&acks, acked);
        let db =
            IndexedDb::open(&path).unwrap_or_else(|e| panic!("round {round}: reopen failed: {e}"));
        let head = db.head();
        let size = head.size - 1;
        assert!(
            size >= want,
            "round {round}: {size} values recovered, {want} acknowledged"
        );
        let values: Vec<Hash> = (0..size).map(value_at).collect();
        let rebuilt = IndexedTree::from_values(child_config().tree(), &values).unwrap();
        assert_eq!(head, rebuilt.head(), "round {round}");
        for i in [0, size / 2, size.saturating_sub(1)]
            .into_iter()
            .filter(|&i| i < size)
        {
            assert_eq!(db.index_of(&value_at(i)), Some(i + 1), "round {round}");
        }
        for i in size..size + 20 {
            let proof = db.prove_absence(&value_at(i)).unwrap();
            proof
                .verify(Arity::new(N).unwrap(), HASH, &head, &value_at(i))
                .unwrap_or_else(|e| panic!("round {round}: value {i}: {e}"));
        }
        // The history is rebuilt from the recovered log: a few retained
        // heads, each the tree of its prefix, prove against their roots.
        let heads = db.heads();
        assert_eq!(heads.last(), Some(&head), "round {round}");
        for old in heads.iter().rev().step_by(997).take(4) {
            let prefix: Vec<Hash> = (0..old.size - 1).map(value_at).collect();
            let rebuilt = IndexedTree::from_values(child_config().tree(), &prefix).unwrap();
            assert_eq!(*old, rebuilt.head(), "round {round}");
            let absent = value_at(old.size - 1);
            db.prove_absence_at(&absent, old.size)
                .unwrap()
                .verify(Arity::new(N).unwrap(), HASH, old, &absent)
                .unwrap_or_else(|e| panic!("round {round}: size {}: {e}", old.size));
        }
        if size > want {
            losses += 1;
        }
        db.close().unwrap();
        acked = size;
        if size > MAX_VALUES {
            recovered_total += size;
            generation += 1;
            path = new_db(generation);
            acked = 0;
        }
    }
    recovered_total += acked;
    eprintln!(
        "{kills} kills, {} databases, {recovered_total} values recovered, {losses} recoveries holding unacknowledged values",
        generation + 1
    );
}
