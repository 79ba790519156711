//! kill -9 at random moments, through mutable databases (Lean and
//! fixed-depth): a child process applies a stream of batches of appends,
//! updates and removals, each tagged with a block, waits for some, rolls
//! back by block now and then (the background thread flushes and
//! checkpoints too), and records in a file, fsynced before it counts,
//! every batch before it submits it, every batch it saw durable and every
//! rollback it began. The parent SIGKILLs it, reopens and checks:
//!
//! - the recovered changes are at least the acknowledged ones (a rollback
//!   that began lowers that to its target, whether or not it finished), and
//!   end where a batch ends: no batch is half applied;
//! - the root is the naive reference root of the leaves those changes
//!   leave (the stream is a function of the changes before it, so a prefix
//!   of it is known without the child's help);
//! - the strict set follows them: live values are found at their leaves,
//!   removed and overwritten values are not, and a removed value is refused
//!   when offered again;
//! - the last update's old leaf proves against the head before it.
//!
//! 10 kills per tree kind in CI; `CAIRN_MUTABLE_CRASH_KILLS=500` for a
//! slow variant.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cairn_core::{Hash, HashKind, TreeConfig, TreeHead, TreeKind};
use cairn_db::{Change, DbError, MutableDb, MutableError, WORDS_PER_CHANGE};
use cairn_store::{BlockTag, CheckpointPolicy};
use cairn_testkit::env_u64;
use cairn_testkit::kill9::{AckFile, Victim, acknowledged_lines};
use rand::{Rng, SeedableRng};

use crate::support::*;

const CHILD_ENV: &str = "CAIRN_MUTABLE_CRASH_CHILD_DIR";
const ACKS_ENV: &str = "CAIRN_MUTABLE_CRASH_ACKS";
const SEED_ENV: &str = "CAIRN_MUTABLE_CRASH_SEED";
const FIXED_ENV: &str = "CAIRN_MUTABLE_CRASH_FIXED";
/// Seeds of the change stream's randomness and of its new values.
const STREAM: u64 = 0x03c4_a1e5;
const VALUES: u64 = 0x03c4_a1e6;
/// A fresh database once this many changes were recovered.
const MAX_CHANGES: u64 = 40_000;
const WAIT: Duration = Duration::from_secs(30);

fn shape(fixed: bool) -> TreeConfig {
    let lean = tree(4, HashKind::Blake3);
    if fixed {
        lean.with_kind(TreeKind::Fixed {
            depth: 8,
            zero: value(u64::MAX, 7),
        })
    } else {
        lean
    }
}

fn child_config(fixed: bool) -> cairn_db::DbConfig {
    let mut config = config_of(shape(fixed));
    config.mutable = Some(false);
    config.store.flush_interval = Some(Duration::from_millis(2));
    config.store.checkpoint = CheckpointPolicy {
        every_leaves: Some(2_000),
        ..CheckpointPolicy::default()
    };
    config
}

/// The leaves as a prefix of the change stream leaves them, and the
/// stream's next change: change `k` depends only on `k` and the changes
/// before it, so the child and the parent compute the same stream.
struct Stream {
    zero: Hash,
    capacity: u64,
    leaves: Vec<Hash>,
    /// Indices of the leaves not removed, and each leaf's place in it.
    live: Vec<u64>,
    place: Vec<usize>,
    /// Values removed (refused for good) and values overwritten by an
    /// update (gone from the tree, but not refused).
    removed: Vec<Hash>,
    overwritten: Vec<Hash>,
    changes: u64,
}

impl Stream {
    fn new(shape: &TreeConfig) -> Stream {
        let (zero, capacity) = match shape.kind {
            TreeKind::Fixed { depth, zero } => (zero, shape.arity.get().pow(depth) as u64),
            _ => ([0; 32], u64::MAX),
        };
        Stream {
            zero,
            capacity,
            leaves: Vec::new(),
            live: Vec::new(),
            place: Vec::new(),
            removed: Vec::new(),
            overwritten: Vec::new(),
            changes: 0,
        }
    }

    /// The stream's first `count` changes applied.
    fn at(shape: &TreeConfig, count: u64) -> Stream {
        let mut stream = Stream::new(shape);
        while stream.changes < count {
            stream.next();
        }
        stream
    }

    /// The next change of the stream, applied.
    fn next(&mut self) -> Change {
        let k = self.changes;
        let r = u64::from_le_bytes(value(STREAM, k)[..8].try_into().unwrap());
        let full = self.leaves.len() as u64 >= self.capacity;
        // Keep about as many live leaves as removed ones at most.
        let roll = r % 10;
        let change = if self.live.is_empty() || (roll < 4 && !full) {
            Change::Append(value(VALUES, k))
        } else {
            let index = self.live[((r >> 8) % self.live.len() as u64) as usize];
            if roll < 7 {
                Change::Update(index, value(VALUES, k))
            } else {
                Change::Remove(index)
            }
        };
        match change {
            Change::Append(v) => {
                self.place.push(self.live.len());
                self.live.push(self.leaves.len() as u64);
                self.leaves.push(v);
            }
            Change::Update(index, v) => {
                self.overwritten.push(self.leaves[index as usize]);
                self.leaves[index as usize] = v;
            }
            Change::Remove(index) => {
                self.removed.push(self.leaves[index as usize]);
                self.leaves[index as usize] = self.zero;
                let at = self.place[index as usize];
                self.live.swap_remove(at);
                if let Some(&moved) = self.live.get(at) {
                    self.place[moved as usize] = at;
                }
                self.place[index as usize] = usize::MAX;
            }
        }
        self.changes += 1;
        change
    }

    fn head(&self, shape: &TreeConfig) -> TreeHead {
        TreeHead {
            size: self.leaves.len() as u64,
            root: reference_root_of(shape, &self.leaves),
        }
    }
}

/// Changes in a database: its durable log words over two.
fn changes_in(db: &MutableDb) -> u64 {
    db.log_words_durable() / WORDS_PER_CHANGE
}

/// The writer. A no-op unless started by
/// `kill_9_never_loses_an_acknowledged_change_of_a_mutable_database`.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let fixed = std::env::var(FIXED_ENV).unwrap() == "1";
    let seed: u64 = std::env::var(SEED_ENV).unwrap().parse().unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut acks = AckFile::open(std::env::var(ACKS_ENV).unwrap());
    let shape = shape(fixed);
    let db = MutableDb::open_in(
        std::sync::Arc::new(cairn_store::StdFs),
        Path::new(&dir),
        Some(child_config(fixed)),
    )
    .unwrap();
    let mut stream = Stream::at(&shape, changes_in(&db));
    assert_eq!(db.head(), stream.head(&shape), "the child's stream");
    // Batch ends of this run: the blocks a rollback may go back to.
    let mut blocks: Vec<u64> = Vec::new();
    println!("opened");
    loop {
        if rng.gen_range(0..100) < 4 && !blocks.is_empty() {
            // Among the recent blocks: the retained heads are a window.
            let to = blocks[rng.gen_range(blocks.len().saturating_sub(500)..blocks.len())];
            acks.record(&format!("rollback {to}\n"));
            db.rollback_to_block(to).unwrap();
            blocks.retain(|&end| end <= to);
            stream = Stream::at(&shape, to);
            continue;
        }
        let count = if rng.gen_bool(0.5) {
            rng.gen_range(1..4)
        } else {
            rng.gen_range(4..200)
        };
        let batch: Vec<Change> = (0..count).map(|_| stream.next()).collect();
        let end = stream.changes;
        // The block number is the change count at the batch's end, so the
        // blocks increase (also after a rollback) and name a prefix.
        acks.record(&format!("batch {end}\n"));
        let ticket = db
            .change_tagged(
                &batch,
                BlockTag {
                    number: end,
                    hash: None,
                },
            )
            .unwrap();
        blocks.push(end);
        if rng.gen_bool(0.3) {
            db.changed(&ticket, WAIT).unwrap();
            acks.record(&format!("durable {end}\n"));
        }
        if rng.gen_range(0..100) == 0 {
            db.checkpoint().unwrap();
        }
    }
}

/// What a round's acknowledgements allow: the fewest changes a recovery
/// may hold (the largest acknowledged, lowered by every rollback begun
/// after it), and where batches end (a recovery ends at one of them).
fn allowed(path: &Path, mut acked: u64) -> (u64, Vec<u64>) {
    let mut ends = vec![acked];
    for line in acknowledged_lines(path) {
        let (what, n) = line.split_once(' ').unwrap();
        let n: u64 = n.parse().unwrap();
        match what {
            "durable" => acked = acked.max(n),
            "rollback" => acked = acked.min(n),
            "batch" => {}
            _ => panic!("bad line {line}"),
        }
        ends.push(n);
    }
    (acked, ends)
}

fn kill_rounds(fixed: bool, kills: u64) {
    let shape = shape(fixed);
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x3c4a + u64::from(fixed));
    let new_db = |generation: u32| -> PathBuf {
        let path = dir.path().join(format!("db{generation}"));
        MutableDb::create_in(
            std::sync::Arc::new(cairn_store::StdFs),
            &path,
            child_config(fixed),
        )
        .unwrap()
        .close()
        .unwrap();
        path
    };
    let mut generation = 0;
    let mut path = new_db(generation);
    let mut acked = 0u64;
    let (mut recovered_total, mut beyond) = (0u64, 0u32);
    for round in 0..kills {
        let acks = dir.path().join(format!("acks{round}"));
        let seed = (round * 2 + u64::from(fixed)).to_string();
        let victim = Victim::start(
            "mutable_crash::crash_child",
            [
                (CHILD_ENV, path.as_os_str()),
                (ACKS_ENV, acks.as_os_str()),
                (SEED_ENV, seed.as_ref()),
                (FIXED_ENV, (if fixed { "1" } else { "0" }).as_ref()),
            ],
        );
        assert!(victim.opened(WAIT), "round {round}: the child never opened");
        std::thread::sleep(Duration::from_millis(rng.gen_range(10..150)));
        victim.kill();
        let (want, ends) = allowed(&acks, acked);
        let db =
            MutableDb::open(&path).unwrap_or_else(|e| panic!("round {round}: reopen failed: {e}"));
        let count = changes_in(&db);
        assert!(
            count >= want,
            "round {round}: {count} changes recovered, {want} acknowledged"
        );
        assert!(
            ends.contains(&count),
            "round {round}: {count} changes recovered, not where a batch ends ({ends:?})"
        );
        let stream = Stream::at(&shape, count);
        let head = db.head();
        assert_eq!(head, stream.head(&shape), "round {round}: {count} changes");
        // The strict set: live values at their leaves, gone ones absent.
        let live: Vec<u64> = stream.live.iter().copied().step_by(37).collect();
        let values: Vec<Hash> = live.iter().map(|&i| stream.leaves[i as usize]).collect();
        let found = db.index_of_many(&values).1;
        assert_eq!(found, live.into_iter().map(Some).collect::<Vec<_>>());
        let gone: Vec<Hash> = (stream.removed.iter().rev().take(40))
            .chain(stream.overwritten.iter().rev().take(40))
            .copied()
            .collect();
        assert!(
            db.index_of_many(&gone).1.iter().all(Option::is_none),
            "round {round}: a removed or overwritten value is still found"
        );
        if let Some(&removed) = stream.removed.last() {
            let refused = db.change(&[Change::Append(removed)]).unwrap_err();
            assert!(
                matches!(refused, DbError::Mutable(MutableError::WasRemoved { .. })),
                "round {round}: {refused}"
            );
        }
        if let Some(&index) = stream.live.last() {
            db.prove(index).unwrap().verify_with(&shape, &head).unwrap();
        }
        db.close().unwrap();
        // An update made now (in a copy: it is no change of the stream)
        // answers the recovered leaf with its proof against the head.
        if let Some(&index) = stream.live.last() {
            let copy = dir.path().join("copy");
            copy_dir(&path, &copy);
            let db = MutableDb::open(&copy).unwrap();
            let ticket = db
                .change(&[Change::Update(index, value(0xfeed, round))])
                .unwrap();
            let old = db.changed(&ticket, WAIT).unwrap();
            let old = old[0].as_ref().unwrap();
            assert_eq!(old.old, stream.leaves[index as usize], "round {round}");
            old.proof.verify_with(&shape, &head).unwrap();
            db.close().unwrap();
            std::fs::remove_dir_all(&copy).unwrap();
        }
        if count > want {
            beyond += 1;
        }
        acked = count;
        if count > MAX_CHANGES {
            recovered_total += count;
            generation += 1;
            path = new_db(generation);
            acked = 0;
        }
    }
    recovered_total += acked;
    eprintln!(
        "{} tree: {kills} kills, {} databases, {recovered_total} changes recovered, {beyond} recoveries holding unacknowledged changes",
        if fixed { "fixed-depth" } else { "lean" },
        generation + 1
    );
}

#[test]
fn kill_9_never_loses_an_acknowledged_change_of_a_mutable_database() {
    let kills = env_u64("CAIRN_MUTABLE_CRASH_KILLS", 10);
    kill_rounds(false, kills);
    kill_rounds(true, kills);
}
