//! kill -9 at random moments, through the database: a child process
//! appends single values and batches (fresh ones, and duplicates that must
//! be refused or skipped), waits on tokens, checkpoints now and then (and
//! the background thread checkpoints the store and the set), and records
//! every acknowledged durable index and value in a file, fsynced before the
//! acknowledgement counts. The parent SIGKILLs it at a random moment,
//! reopens with `Db::open`, and checks:
//!
//! - every acknowledged value is at its index (`leaf` and `index_of`), and
//!   the size is at least the acknowledged size;
//! - every leaf of the recovered prefix is the workload's value for its
//!   index (each value of the workload is distinct, so every value appears
//!   at most once: in particular each value that was refused as a
//!   duplicate appears once, at its first index, if that index survived,
//!   and not at all otherwise);
//! - the root is the naive reference root of the recovered prefix;
//! - `check_set()` passes (the set and the tree agree exactly: every leaf
//!   at its index, as many values as leaves), and the workload's values
//!   past the recovered size (refused fresh values, lost ones, future
//!   ones) are absent.
//!
//! Value `i` of the workload is a pure function of `i`, so the checker
//! knows what must be where. A database that grows past 150,000 leaves is
//! replaced by a fresh one (so the naive reference stays cheap over
//! thousands of kills). The same runs for a fixed-depth (zk-kit IMT) tree.
//! 100 kills of a Lean tree and 40 of a fixed-depth one in CI;
//! `CAIRN_DB_CRASH_KILLS=2000` for the slow variant (both).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cairn_core::hex::{parse_hash, to_hex};
use cairn_core::{Hash, HashKind, TreeConfig, TreeHead};
use cairn_db::{Db, DbConfig, DbError, Duplicate, DuplicateOf};
use cairn_store::CheckpointPolicy;
use rand::{Rng, SeedableRng};

use cairn_testkit::env_u64;
use cairn_testkit::kill9::{AckFile, Victim, acknowledged_lines};

use crate::support::*;

const CHILD_ENV: &str = "CAIRN_DB_CRASH_CHILD_DIR";
const ACKS_ENV: &str = "CAIRN_DB_CRASH_ACKS";
const SEED_ENV: &str = "CAIRN_DB_CRASH_SEED";
/// Non-empty in the child's environment for a fixed-depth tree.
const FIXED_ENV: &str = "CAIRN_DB_CRASH_FIXED";
const N: u64 = 3;
const HASH: HashKind = HashKind::Blake3;
/// The stream of the workload's values.
const STREAM: u64 = 0x00c4_a5db;
/// A database larger than this is replaced by a fresh one.
const MAX_LEAVES: u64 = 150_000;
const WAIT: Duration = Duration::from_secs(30);

/// Value `i` of the workload.
fn value_at(i: u64) -> Hash {
    value(STREAM, i)
}

/// The child's config: a 2 ms background flush, the store checkpointed
/// every 2,000 leaves and the set's file rewritten at 20% lag.
fn child_config(fixed: bool) -> DbConfig {
    let mut config = config_of(tree_of(fixed));
    config.store.flush_interval = Some(Duration::from_millis(2));
    config.store.checkpoint = CheckpointPolicy {
        every_leaves: Some(2_000),
        ..CheckpointPolicy::default()
    };
    config.set_rewrite_percent = 20;
    config
}

/// The workload's tree: Lean, or fixed-depth.
fn tree_of(fixed: bool) -> TreeConfig {
    if fixed {
        fixed_tree(N, HASH)
    } else {
        tree(N, HASH)
    }
}

/// An item of a batch the child builds: the next fresh value, or a repeat.
#[derive(Clone, Copy, Debug)]
enum Item {
    /// Value `i` of the workload, `i >= next` (not in the tree yet).
    Fresh(u64),
    /// Value `i` of the workload, `i < next` (in the tree).
    Old(u64),
}

/// A batch starting at `next` of `len` items, each a repeat with
/// probability `dup` (of a leaf, or of an earlier item); the fresh items
/// are values `next, next + 1, ...` in order.
fn build(rng: &mut impl Rng, next: u64, len: usize, dup: f64) -> Vec<Item> {
    let mut items: Vec<Item> = Vec::with_capacity(len);
    let mut fresh = next;
    for _ in 0..len {
        let item = if rng.gen_bool(dup) && (next > 0 || !items.is_empty()) {
            if next > 0 && (items.is_empty() || rng.gen_bool(0.5)) {
                Item::Old(rng.gen_range(0..next))
            } else {
                items[rng.gen_range(0..items.len())]
            }
        } else {
            fresh += 1;
            Item::Fresh(fresh - 1)
        };
        items.push(item);
    }
    items
}

fn item_value(item: Item) -> Hash {
    match item {
        Item::Fresh(i) | Item::Old(i) => value_at(i),
    }
}

/// The duplicates the database must report for `items`.
fn duplicates_of(items: &[Item]) -> Vec<Duplicate> {
    let mut first: HashMap<u64, usize> = HashMap::new();
    let mut out = Vec::new();
    for (position, item) in items.iter().enumerate() {
        let of = match *item {
            Item::Old(i) => Some(DuplicateOf::Leaf(i)),
            Item::Fresh(i) => match first.get(&i) {
                Some(&earlier) => Some(DuplicateOf::Batch(earlier)),
                None => {
                    first.insert(i, position);
                    None
                }
            },
        };
        if let Some(of) = of {
            out.push(Duplicate {
                position,
                value: item_value(*item),
                of,
            });
        }
    }
    out
}

/// The acknowledgement file, and lines to go out with the next
/// acknowledgement (they count only with it).
struct Acks {
    file: AckFile,
    pending: String,
}

impl Acks {
    /// Records that leaves `0..end` are durable (with the last one's
    /// value), after what is pending; durable before it returns.
    fn ack(&mut self, end: u64, what: &str) {
        if end > 0 {
            self.pending.push_str(&format!(
                "{what} {end} {} {}\n",
                end - 1,
                to_hex(&value_at(end - 1))
            ));
        }
        self.file.record(&self.pending);
        self.pending.clear();
    }
}

/// The writer. A no-op unless started by
/// `kill_9_never_loses_an_acknowledged_value_nor_admits_a_duplicate`.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let seed: u64 = std::env::var(SEED_ENV).unwrap().parse().unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut acks = Acks {
        file: AckFile::open(std::env::var(ACKS_ENV).unwrap()),
        pending: String::new(),
    };
    let fixed = std::env::var_os(FIXED_ENV).is_some_and(|v| !v.is_empty());
    let db = Db::open_with(&dir, child_config(fixed)).unwrap();
    let mut next = db.size();
    loop {
        let roll = rng.gen_range(0..100);
        let appended = if roll < 35 {
            let got = db.append(value_at(next)).unwrap();
            assert_eq!((got.first, got.count), (next, 1));
            Some(got)
        } else if roll < 60 {
            let count = rng.gen_range(2..300);
            let batch: Vec<Hash> = (next..next + count).map(value_at).collect();
            let got = db.append_batch(&batch).unwrap();
            assert_eq!((got.first, got.count), (next, count));
            Some(got)
        } else if roll < 70 {
            // A single duplicate of a leaf.
            if next > 0 {
                let old = rng.gen_range(0..next);
                let Err(DbError::Duplicates { batch, duplicates }) = db.append(value_at(old))
                else {
                    panic!("value {old} appended twice");
                };
                assert_eq!(batch, 1);
                assert_eq!(duplicates, duplicates_of(&[Item::Old(old)]));
                acks.pending.push_str(&format!("refused {old}\n"));
            }
            None
        } else if roll < 85 {
            // A batch with duplicates: refused whole; its fresh values go
            // in later, at the same indices.
            let len = rng.gen_range(1..120);
            let items = build(&mut rng, next, len, 0.05);
            let values: Vec<Hash> = items.iter().map(|&i| item_value(i)).collect();
            let expected = duplicates_of(&items);
            match db.append_batch(&values) {
                Err(DbError::Duplicates { batch, duplicates }) => {
                    assert_eq!(batch, len);
                    assert_eq!(duplicates, expected);
                    for item in &items {
                        if let Item::Old(i) = item {
                            acks.pending.push_str(&format!("refused {i}\n"));
                        }
                    }
                    None
                }
                Ok(got) => {
                    assert!(expected.is_empty(), "appended with duplicates {expected:?}");
                    assert_eq!((got.first, got.count), (next, len as u64));
                    Some(got)
                }
                Err(e) => panic!("{e}"),
            }
        } else {
            // Skip mode: the fresh values go in, in order, from `next`.
            let len = rng.gen_range(1..120);
            let items = build(&mut rng, next, len, 0.1);
            let values: Vec<Hash> = items.iter().map(|&i| item_value(i)).collect();
            let expected = duplicates_of(&items);
            let fresh = (len - expected.len()) as u64;
            let got = db.append_new(&values).unwrap();
            assert_eq!(got.skipped, expected);
            for item in &items {
                if let Item::Old(i) = item {
                    acks.pending.push_str(&format!("refused {i}\n"));
                }
            }
            match got.appended {
                Some(got) => {
                    assert_eq!((got.first, got.count), (next, fresh));
                    Some(got)
                }
                None => {
                    assert_eq!(fresh, 0);
                    None
                }
            }
        };
        if let Some(appended) = appended {
            next += appended.count;
            if rng.gen_bool(0.3) {
                appended.token.wait(WAIT).unwrap();
                acks.ack(appended.token.end(), "ack");
            }
        }
        if rng.gen_bool(0.04) {
            db.checkpoint().unwrap();
            acks.ack(next, "checkpoint");
        }
    }
}

/// What the acknowledgement files said, over all rounds.
#[derive(Default)]
struct Acknowledged {
    /// The largest acknowledged size.
    size: u64,
    /// `(index, value)` of each acknowledgement.
    values: Vec<(u64, Hash)>,
    /// Indices of leaves whose values were refused as duplicates.
    refused: Vec<u64>,
    checkpoints: usize,
}

impl Acknowledged {
    /// Reads the complete lines of `path` (a torn last line is ignored).
    fn read(&mut self, path: &Path) {
        for line in acknowledged_lines(path) {
            let mut words = line.split(' ');
            match words.next() {
                Some(what @ ("ack" | "checkpoint")) => {
                    let end: u64 = words.next().unwrap().parse().unwrap();
                    let index: u64 = words.next().unwrap().parse().unwrap();
                    let value = parse_hash(words.next().unwrap()).unwrap();
                    assert_eq!(index + 1, end, "{line}");
                    assert_eq!(value, value_at(index), "{line}");
                    self.size = self.size.max(end);
                    self.values.push((index, value));
                    if what == "checkpoint" {
                        self.checkpoints += 1;
                    }
                }
                Some("refused") => self.refused.push(words.next().unwrap().parse().unwrap()),
                _ => panic!("bad line in {}: {line}", path.display()),
            }
        }
    }
}

/// Checks the database after a kill; returns its size.
fn check(
    round: u64,
    db: &Db,
    tree: &TreeConfig,
    acknowledged: &Acknowledged,
    values: &mut Vec<Hash>,
) -> u64 {
    let size = db.size();
    assert!(
        size >= acknowledged.size,
        "round {round}: {size} leaves recovered, {} were acknowledged",
        acknowledged.size
    );
    while (values.len() as u64) < size + 64 {
        values.push(value_at(values.len() as u64));
    }
    for &(index, value) in &acknowledged.values {
        assert_eq!(db.leaf(index), Some(value), "round {round}: leaf {index}");
        assert_eq!(db.index_of(&value).unwrap(), Some(index), "round {round}");
    }
    let snapshot = db.snapshot();
    for i in 0..size {
        assert_eq!(
            snapshot.leaf(i),
            Some(values[i as usize]),
            "round {round}: leaf {i} is not the workload's"
        );
    }
    let root = reference_root_of(tree, &values[..size as usize]);
    assert_eq!(db.head(), TreeHead { size, root }, "round {round}");
    db.check_set()
        .unwrap_or_else(|e| panic!("round {round}: {e}"));
    assert_eq!(db.stats().set.unwrap().values, size, "round {round}");
    for &index in &acknowledged.refused {
        let want = (index < size).then_some(index);
        assert_eq!(
            db.index_of(&value_at(index)).unwrap(),
            want,
            "round {round}: a value refused as a duplicate of leaf {index}"
        );
    }
    // Refused fresh values, lost values and future ones are absent.
    for i in size..size + 64 {
        assert_eq!(
            db.index_of(&values[i as usize]).unwrap(),
            None,
            "round {round}: value {i}"
        );
    }
    size
}

#[test]
fn kill_9_never_loses_an_acknowledged_value_nor_admits_a_duplicate() {
    kill_rounds(false, 100);
}

#[test]
fn kill_9_never_loses_an_acknowledged_value_of_a_fixed_depth_tree() {
    kill_rounds(true, 40);
}

fn kill_rounds(fixed: bool, default_kills: u64) {
    let kills = env_u64("CAIRN_DB_CRASH_KILLS", default_kills);
    let tree = tree_of(fixed);
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x00db_c4a5);
    let started = Instant::now();
    let mut generation = 0;
    let new_db = |generation: u32| -> PathBuf {
        let path = dir.path().join(format!("db{generation}"));
        Db::create(&path, child_config(fixed))
            .unwrap()
            .close()
            .unwrap();
        path
    };
    let mut path = new_db(generation);
    let mut acknowledged = Acknowledged::default();
    let mut values: Vec<Hash> = Vec::new();
    let (mut leaves, mut refused, mut checkpoints, mut set_files) = (0u64, 0usize, 0usize, 0u64);
    for round in 0..kills {
        let acks = dir.path().join(format!("acks{round}"));
        let seed = round.to_string();
        let fixed_env = if fixed { "1" } else { "" };
        let victim = Victim::start(
            "crash::crash_child",
            [
                (CHILD_ENV, path.as_os_str()),
                (ACKS_ENV, acks.as_os_str()),
                (SEED_ENV, seed.as_ref()),
                (FIXED_ENV, fixed_env.as_ref()),
            ],
        );
        std::thread::sleep(Duration::from_millis(rng.gen_range(5..120)));
        victim.kill();
        acknowledged.read(&acks);
        let db = Db::open(&path).unwrap_or_else(|e| panic!("round {round}: reopen failed: {e}"));
        assert_eq!(db.config().tree(), tree, "round {round}: the stored tree");
        let size = check(round, &db, &tree, &acknowledged, &mut values);
        if db.stats().set_checkpoint_size > 0 {
            set_files += 1;
        }
        db.close().unwrap();
        // Everything recovered is durable now: later rounds keep it.
        acknowledged.size = size;
        if size > MAX_LEAVES {
            leaves += size;
            refused += acknowledged.refused.len();
            checkpoints += acknowledged.checkpoints;
            generation += 1;
            path = new_db(generation);
            acknowledged = Acknowledged::default();
        }
    }
    leaves += acknowledged.size;
    refused += acknowledged.refused.len();
    checkpoints += acknowledged.checkpoints;
    eprintln!(
        "{kills} kills, {} databases, {leaves} leaves recovered in all, {refused} duplicates refused, {checkpoints} checkpoints acknowledged, {set_files} reopens through a set file, {:.1} s",
        generation + 1,
        started.elapsed().as_secs_f64()
    );
    if kills >= default_kills {
        assert!(refused > 0, "no duplicate was refused");
        assert!(set_files > 0, "no reopen went through the set's file");
    }
}
