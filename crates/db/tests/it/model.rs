//! The database against a model: random sequences of appends (single,
//! all-or-nothing batches, batches that skip duplicates; fresh values,
//! values of the history, repeats within the batch, values of refused
//! batches and values lost to a crash), durability waits, flushes,
//! checkpoints, close and reopen, drop and reopen, and simulated power
//! loss, run on a [`SimFs`] and compared after every step with a map of
//! value -> index and the naive reference root of `cairn-testkit`.
//!
//! After every step: the outcome (`Ok` with the expected position, or
//! `Duplicates` with exactly the expected list), the size, the durable size
//! against what was acknowledged, the head against the reference root,
//! `index_of`/`contains`/`leaf` for present values (on the database and on
//! a snapshot), `index_of` for values of refused batches, values lost to a
//! crash and values never appended (all absent), `check_set()`, and the
//! set's counters. Around every append, the snapshot taken before it must
//! not see the new values.
//!
//! The configs make the store checkpoint every 32..400 leaves (in the
//! background thread, every 1 ms or 100 ms) and rewrite the set's file at
//! 0, 10 or 50% lag, so reopening goes through the set's checkpoint file
//! plus a replay of the leaves after it; the run asserts that it did.
//!
//! A power loss is taken at the moment of the step (the state a replay of
//! the file system's trace leaves), in a random [`CrashMode`]: the
//! recovered database must hold a prefix of the model at least as long as
//! what was acknowledged (token waits, flushes, checkpoints, and the
//! durable size read just before the cut).
//!
//! Cases: 64 for N = 2 and 64 for N = 4 (BLAKE3; sequences of up to 63
//! operations, batches of up to 47 values and, one operation in 16, of
//! 4,096..4,295 so that the set's parallel path runs), 16 for N = 3
//! (Poseidon; up to 39 operations, batches of up to 23). About 10 s in
//! the test profile. `CAIRN_DB_MODEL_CASES=<n>` runs n cases of each
//! BLAKE3 arity and n / 4 (at least 6) Poseidon ones. Each run prints what
//! it exercised, and a run of the default size or more asserts that it
//! refused duplicates of both kinds, skipped some, crashed and lost
//! leaves, reopened through the set file plus a replay, and saw the
//! background thread write the set's file.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cairn_core::{Hash, HashKind, TreeHead};
use cairn_db::{Db, DbConfig, DbError, Token};
use cairn_store::CheckpointPolicy;
use cairn_testkit::sim::{CrashMode, SECTOR, SimFs};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use rand::SeedableRng;

use cairn_testkit::env_u64;

use crate::support::*;

const DIR: &str = "/db";
const WAIT: Duration = Duration::from_secs(30);
/// Values at least this many are inserted by the set's parallel path.
const PARALLEL: usize = 4096;

// ---------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------

/// Where a value comes from.
#[derive(Clone, Debug)]
enum Pick {
    /// Never used before.
    Fresh,
    /// A value in the tree (a duplicate).
    History(Index),
    /// A value known to be absent: of a refused batch or lost to a crash.
    Absent(Index),
}

/// What an injected duplicate repeats.
#[derive(Clone, Debug)]
enum Source {
    /// A value in the tree.
    History(Index),
    /// An earlier value of the batch.
    Earlier(Index),
}

#[derive(Clone, Debug)]
struct BatchSpec {
    len: usize,
    /// Positions filled with values of the absent pool.
    reuse: Vec<(Index, Index)>,
    /// Positions overwritten with duplicates.
    dups: Vec<(Index, Source)>,
}

#[derive(Clone, Debug)]
enum Op {
    Single(Pick),
    /// `append_batch`: all or nothing.
    Batch(BatchSpec),
    /// `append_new`: duplicates skipped.
    New(BatchSpec),
    /// Wait on the newest token.
    Wait,
    Flush,
    Checkpoint,
    /// `close()`, then reopen with the test's config.
    Close,
    /// `drop()`, then reopen (with the stored config and default runtime
    /// settings if `stored`).
    Drop {
        stored: bool,
    },
    /// A power loss now, in mode `mode` (see [`State::crash`]).
    Crash {
        mode: u8,
        seed: u64,
    },
    /// Let the background thread run (flushes, automatic checkpoints).
    Pause,
}

fn pick() -> impl Strategy<Value = Pick> {
    prop_oneof![
        6 => Just(Pick::Fresh),
        2 => any::<Index>().prop_map(Pick::History),
        2 => any::<Index>().prop_map(Pick::Absent),
    ]
}

fn source() -> impl Strategy<Value = Source> {
    prop_oneof![
        any::<Index>().prop_map(Source::History),
        any::<Index>().prop_map(Source::Earlier),
    ]
}

fn batch(len: std::ops::Range<usize>) -> impl Strategy<Value = BatchSpec> {
    (
        len,
        prop::collection::vec((any::<Index>(), any::<Index>()), 0..3),
        // No duplicate half the time: the batch goes in.
        prop_oneof![
            Just(Vec::new()),
            prop::collection::vec((any::<Index>(), source()), 1..4),
        ],
    )
        .prop_map(|(len, reuse, dups)| BatchSpec { len, reuse, dups })
}

fn op(max_batch: usize, big: bool) -> impl Strategy<Value = Op> {
    let mut ops: Vec<(u32, BoxedStrategy<Op>)> = vec![
        (8, pick().prop_map(Op::Single).boxed()),
        (6, batch(2..max_batch).prop_map(Op::Batch).boxed()),
        (4, batch(1..max_batch).prop_map(Op::New).boxed()),
        (3, Just(Op::Wait).boxed()),
        (1, Just(Op::Flush).boxed()),
        (2, Just(Op::Checkpoint).boxed()),
        (1, Just(Op::Close).boxed()),
        (
            1,
            any::<bool>().prop_map(|stored| Op::Drop { stored }).boxed(),
        ),
        (
            3,
            (any::<u8>(), any::<u64>())
                .prop_map(|(mode, seed)| Op::Crash { mode, seed })
                .boxed(),
        ),
        (1, Just(Op::Pause).boxed()),
    ];
    if big {
        // Batches the set inserts in parallel (shard by shard).
        ops.push((
            1,
            batch(PARALLEL..PARALLEL + 200).prop_map(Op::Batch).boxed(),
        ));
        ops.push((1, batch(PARALLEL..PARALLEL + 200).prop_map(Op::New).boxed()));
    }
    proptest::strategy::Union::new_weighted(ops)
}

/// The runtime settings of a case.
#[derive(Clone, Debug)]
struct Params {
    set_rewrite_percent: u32,
    checkpoint_every_leaves: u64,
    /// A 1 ms background flush (else only the checkpoint policy's 100 ms
    /// tick).
    background_flush: bool,
}

fn params() -> impl Strategy<Value = Params> {
    (
        prop_oneof![Just(0u32), Just(10), Just(50)],
        prop_oneof![Just(32u64), Just(100), Just(400)],
        any::<bool>(),
    )
        .prop_map(|(percent, every, background)| Params {
            set_rewrite_percent: percent,
            checkpoint_every_leaves: every,
            background_flush: background,
        })
}

// ---------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------

/// What the database must hold.
struct Model {
    n: u64,
    hash: HashKind,
    leaves: Vec<Hash>,
    present: HashMap<Hash, u64>,
    /// Values known to be absent when added (fresh values of refused
    /// batches, leaves lost to a crash); filtered against `present` on use.
    absent: Vec<Hash>,
    absent_known: HashSet<Hash>,
    /// The stream fresh values come from, and the next one.
    seed: u64,
    next_fresh: u64,
    /// Leaves acknowledged durable.
    acked: u64,
    /// The reference root at a size.
    root: Option<(usize, Option<Hash>)>,
}

/// Values of this stream are never appended.
const NEVER: u64 = 0x006e_6576_6572;

impl Model {
    fn fresh(&mut self) -> Hash {
        self.next_fresh += 1;
        value(self.seed, self.next_fresh)
    }

    fn push(&mut self, v: Hash) {
        let index = self.leaves.len() as u64;
        assert!(self.present.insert(v, index).is_none(), "model: a repeat");
        self.leaves.push(v);
    }

    fn add_absent(&mut self, v: Hash) {
        if !self.present.contains_key(&v) && self.absent_known.insert(v) {
            self.absent.push(v);
            if self.absent.len() > 512 {
                let gone = self.absent.remove(0);
                self.absent_known.remove(&gone);
            }
        }
    }

    /// A value of the absent pool that is still absent.
    fn absent_pick(&mut self, i: &Index) -> Option<Hash> {
        self.absent.retain(|v| !self.present.contains_key(v));
        self.absent_known.retain(|v| !self.present.contains_key(v));
        (!self.absent.is_empty()).then(|| self.absent[i.index(self.absent.len())])
    }

    fn history_pick(&self, i: &Index) -> Option<Hash> {
        (!self.leaves.is_empty()).then(|| self.leaves[i.index(self.leaves.len())])
    }

    /// Keeps the first `size` leaves (after a crash); the rest are absent.
    fn truncate(&mut self, size: u64) {
        let lost = self.leaves.split_off(size as usize);
        for v in &lost {
            self.present.remove(v);
        }
        for v in lost {
            self.add_absent(v);
        }
    }

    fn root(&mut self) -> Option<Hash> {
        let size = self.leaves.len();
        match self.root {
            Some((at, root)) if at == size => root,
            _ => {
                let root = reference_root(self.n, self.hash, &self.leaves);
                self.root = Some((size, root));
                root
            }
        }
    }

    fn build(&mut self, spec: &BatchSpec) -> Vec<Hash> {
        let mut values: Vec<Hash> = (0..spec.len).map(|_| self.fresh()).collect();
        for (position, chosen) in &spec.reuse {
            if let Some(v) = self.absent_pick(chosen) {
                values[position.index(spec.len)] = v;
            }
        }
        for (position, source) in &spec.dups {
            let position = position.index(spec.len);
            match source {
                Source::History(chosen) => {
                    if let Some(v) = self.history_pick(chosen) {
                        values[position] = v;
                    }
                }
                Source::Earlier(chosen) if position > 0 => {
                    values[position] = values[chosen.index(position)];
                }
                Source::Earlier(_) => {}
            }
        }
        values
    }
}

// ---------------------------------------------------------------------------
// Coverage: what the run must have exercised
// ---------------------------------------------------------------------------

#[derive(Debug, Default)]
struct Coverage {
    steps: AtomicU64,
    appended: AtomicU64,
    refused_batches: AtomicU64,
    refused_of_leaf: AtomicU64,
    refused_of_batch: AtomicU64,
    skipped: AtomicU64,
    parallel_batches: AtomicU64,
    crashes: AtomicU64,
    crash_lost_leaves: AtomicU64,
    reopens: AtomicU64,
    /// Reopens that loaded the set's file and replayed leaves after it.
    file_and_replay: AtomicU64,
    /// Reopens that replayed everything (no file yet).
    replay_only: AtomicU64,
    /// Set checkpoints written by the background thread.
    automatic_set_checkpoints: AtomicU64,
}

fn bump(counter: &AtomicU64, by: u64) {
    counter.fetch_add(by, Ordering::Relaxed);
}

fn get(counter: &AtomicU64) -> u64 {
    counter.load(Ordering::Relaxed)
}

// ---------------------------------------------------------------------------
// One case
// ---------------------------------------------------------------------------

fn db_err(what: &str, e: DbError) -> TestCaseError {
    TestCaseError::fail(format!("{what}: {e}"))
}

struct State<'a> {
    config: DbConfig,
    fs: Arc<SimFs>,
    db: Option<Db>,
    model: Model,
    tokens: Vec<Token>,
    /// Bytes written when the trace was last cleared.
    cleared_at: u64,
    /// The set checkpoint size seen after the last step.
    set_checkpoint: u64,
    cov: &'a Coverage,
}

impl State<'_> {
    fn db(&self) -> &Db {
        self.db.as_ref().expect("open")
    }

    fn reopen(&mut self, config: Option<DbConfig>) -> Result<(), TestCaseError> {
        let db = Db::open_in(self.fs.clone(), Path::new(DIR), config)
            .map_err(|e| db_err("reopen", e))?;
        bump(&self.cov.reopens, 1);
        let stats = db.stats();
        let covered = stats.set_checkpoint_size;
        if covered > 0 && covered < stats.store.size {
            bump(&self.cov.file_and_replay, 1);
        } else if covered == 0 && stats.store.size > 0 {
            bump(&self.cov.replay_only, 1);
        }
        self.set_checkpoint = covered;
        self.db = Some(db);
        Ok(())
    }

    /// Judges the outcome of `append_batch(values)` (or `append`).
    fn judge_batch(
        &mut self,
        values: &[Hash],
        result: Result<cairn_db::Appended, DbError>,
    ) -> Result<(), TestCaseError> {
        let expected = expected_duplicates(&self.model.present, values);
        let size = self.model.leaves.len() as u64;
        if expected.is_empty() {
            let appended = result.map_err(|e| db_err("append", e))?;
            prop_assert_eq!(
                (appended.first, appended.count),
                (size, values.len() as u64)
            );
            for v in values {
                self.model.push(*v);
            }
            bump(&self.cov.appended, values.len() as u64);
            self.tokens.push(appended.token);
        } else {
            match result {
                Err(DbError::Duplicates { batch, duplicates }) => {
                    prop_assert_eq!(batch, values.len());
                    prop_assert_eq!(&duplicates, &expected);
                }
                Err(e) => return Err(db_err("append (expected duplicates)", e)),
                Ok(a) => {
                    return Err(TestCaseError::fail(format!(
                        "a batch with duplicates {expected:?} was appended at {}",
                        a.first
                    )));
                }
            }
            bump(&self.cov.refused_batches, 1);
            for d in &expected {
                match d.of {
                    cairn_db::DuplicateOf::Leaf(_) => bump(&self.cov.refused_of_leaf, 1),
                    cairn_db::DuplicateOf::Batch(_) => bump(&self.cov.refused_of_batch, 1),
                }
            }
            for v in values {
                self.model.add_absent(*v);
            }
        }
        Ok(())
    }

    fn append_new(&mut self, values: &[Hash]) -> Result<(), TestCaseError> {
        let expected = expected_duplicates(&self.model.present, values);
        let size = self.model.leaves.len() as u64;
        let out = self
            .db()
            .append_new(values)
            .map_err(|e| db_err("append_new", e))?;
        prop_assert_eq!(&out.skipped, &expected);
        let mut skipped = expected.iter().map(|d| d.position).peekable();
        let mut kept = Vec::new();
        for (position, v) in values.iter().enumerate() {
            if skipped.peek() == Some(&position) {
                skipped.next();
            } else {
                kept.push(*v);
            }
        }
        match out.appended {
            None => prop_assert!(kept.is_empty(), "{} new values not appended", kept.len()),
            Some(appended) => {
                prop_assert_eq!((appended.first, appended.count), (size, kept.len() as u64));
                self.tokens.push(appended.token);
            }
        }
        if !expected.is_empty() {
            bump(&self.cov.skipped, expected.len() as u64);
        }
        bump(&self.cov.appended, kept.len() as u64);
        for v in kept {
            self.model.push(v);
        }
        Ok(())
    }

    fn step(&mut self, op: &Op) -> Result<(), TestCaseError> {
        bump(&self.cov.steps, 1);
        let size = self.model.leaves.len();
        // The snapshot before an append must not see what it adds.
        let before =
            matches!(op, Op::Single(_) | Op::Batch(_) | Op::New(_)).then(|| self.db().snapshot());
        match op {
            Op::Single(pick) => {
                let v = match pick {
                    Pick::Fresh => None,
                    Pick::History(i) => self.model.history_pick(i),
                    Pick::Absent(i) => self.model.absent_pick(i),
                }
                .unwrap_or_else(|| self.model.fresh());
                let result = self.db().append(v);
                self.judge_batch(&[v], result)?;
            }
            Op::Batch(spec) => {
                let values = self.model.build(spec);
                if values.len() >= PARALLEL {
                    bump(&self.cov.parallel_batches, 1);
                }
                let result = self.db().append_batch(&values);
                self.judge_batch(&values, result)?;
            }
            Op::New(spec) => {
                let values = self.model.build(spec);
                if values.len() >= PARALLEL {
                    bump(&self.cov.parallel_batches, 1);
                }
                self.append_new(&values)?;
            }
            Op::Wait => {
                if let Some(token) = self.tokens.last() {
                    token.wait(WAIT).map_err(|e| db_err("wait", e.into()))?;
                    self.model.acked = self.model.acked.max(token.end());
                }
            }
            Op::Flush => {
                let durable = self.db().flush().map_err(|e| db_err("flush", e))?;
                prop_assert_eq!(durable, size as u64);
                self.model.acked = durable;
            }
            Op::Checkpoint => {
                self.db()
                    .checkpoint()
                    .map_err(|e| db_err("checkpoint", e))?;
                let stats = self.db().stats();
                prop_assert_eq!(stats.store.checkpoint_size, size as u64);
                prop_assert_eq!(stats.set_checkpoint_size, size as u64);
                self.model.acked = size as u64;
                self.set_checkpoint = size as u64;
            }
            Op::Close => {
                let covered = self.db().stats().set_checkpoint_size;
                self.tokens.clear();
                let db = self.db.take().expect("open");
                db.close().map_err(|e| db_err("close", e))?;
                self.reopen(Some(self.config.clone()))?;
                prop_assert!(self.db().stats().set_checkpoint_size >= covered);
                self.model.acked = size as u64;
            }
            Op::Drop { stored } => {
                let covered = self.db().stats().set_checkpoint_size;
                self.tokens.clear();
                drop(self.db.take());
                self.reopen((!stored).then(|| self.config.clone()))?;
                prop_assert!(self.db().stats().set_checkpoint_size >= covered);
                self.model.acked = size as u64;
            }
            Op::Crash { mode, seed } => self.crash(*mode, *seed)?,
            Op::Pause => std::thread::sleep(Duration::from_millis(3)),
        }
        if self.tokens.len() > 8 {
            self.tokens.drain(..self.tokens.len() - 8);
        }
        if let Some(before) = before {
            prop_assert_eq!(before.size(), size as u64);
            for v in &self.model.leaves[size..] {
                prop_assert_eq!(before.index_of(v).map_err(|e| db_err("index_of", e))?, None);
            }
        }
        // Keep the trace (which holds every byte written since it was
        // cleared) small; the crash states are built from the model.
        let written = self.fs.counters().bytes_written;
        if self.fs.op_count() > 2048 || written - self.cleared_at > 32 << 20 {
            self.fs.clear_trace();
            self.cleared_at = written;
        }
        self.check(matches!(op, Op::Checkpoint))
    }

    /// A power loss now: the state the trace so far leaves in one of the
    /// modes, then recovery from it.
    fn crash(&mut self, mode: u8, seed: u64) -> Result<(), TestCaseError> {
        let db = self.db.take().expect("open");
        let covered = db.stats().set_checkpoint_size;
        // What is durable now is acknowledged (read before the cut).
        self.model.acked = self.model.acked.max(db.durable_size());
        let mut replay = self.fs.replay();
        replay.seek(replay.op_count());
        let tears = replay.tear_points(SECTOR);
        let mode = match mode % 9 {
            3 => CrashMode::KeepUnsynced,
            4 => CrashMode::GrowthLost,
            5 => CrashMode::UndoDirOps,
            6 => CrashMode::RandomSectors,
            7 | 8 if tears > 0 => CrashMode::TearLastWrite {
                boundary: SECTOR,
                keep: (seed % tears as u64) as usize,
            },
            _ => CrashMode::DropUnsynced,
        };
        let crashed = replay.crash(&mode, &mut rand_chacha::ChaCha8Rng::seed_from_u64(seed));
        // The old database flushes into the old file system as it goes.
        self.tokens.clear();
        drop(db);
        self.fs = Arc::new(crashed);
        self.cleared_at = self.fs.counters().bytes_written;
        self.reopen(Some(self.config.clone()))?;
        bump(&self.cov.crashes, 1);
        let recovered = self.db().size();
        let acked = self.model.acked;
        let size = self.model.leaves.len() as u64;
        prop_assert!(
            recovered >= acked && recovered <= size,
            "{mode:?}: recovered {recovered} leaves, {acked} acknowledged, {size} appended"
        );
        prop_assert!(self.db().stats().set_checkpoint_size >= covered);
        bump(&self.cov.crash_lost_leaves, size - recovered);
        self.model.truncate(recovered);
        // A crash state is all durable.
        self.model.acked = recovered;
        Ok(())
    }

    fn check(&mut self, checkpointed: bool) -> Result<(), TestCaseError> {
        let db = self.db.as_ref().expect("open");
        let model = &mut self.model;
        let size = model.leaves.len() as u64;
        prop_assert_eq!(db.size(), size);
        let durable = db.durable_size();
        prop_assert!(
            durable >= model.acked && durable <= size,
            "durable {durable}, acknowledged {}, size {size}",
            model.acked
        );
        let root = model.root();
        prop_assert_eq!(db.head(), TreeHead { size, root });
        let snapshot = db.snapshot();
        prop_assert_eq!(snapshot.head(), TreeHead { size, root });
        // Present values: all of them while few, else a stride and the
        // newest ones.
        let len = model.leaves.len();
        let mut indices: Vec<usize> = if len <= 2048 {
            (0..len).collect()
        } else {
            (0..len).step_by(len / 1024).chain(len - 256..len).collect()
        };
        indices.dedup();
        let found = |e| db_err("index_of", e);
        for &i in &indices {
            let v = model.leaves[i];
            prop_assert_eq!(db.index_of(&v).map_err(found)?, Some(i as u64));
            prop_assert_eq!(db.leaf(i as u64), Some(v));
        }
        for &i in indices.iter().step_by(7) {
            let v = model.leaves[i];
            prop_assert_eq!(snapshot.index_of(&v).map_err(found)?, Some(i as u64));
            prop_assert!(db.contains(&v).map_err(found)?);
        }
        // Absent values: of refused batches, lost to crashes, never used.
        let never: Vec<Hash> = (0..4).map(|k| value(model.seed ^ NEVER, k)).collect();
        let absent: Vec<&Hash> = model
            .absent
            .iter()
            .rev()
            .take(64)
            .filter(|v| !model.present.contains_key(*v))
            .chain(&never)
            .collect();
        for &v in &absent {
            prop_assert_eq!(db.index_of(v).map_err(found)?, None, "{:?}", v);
            prop_assert!(!db.contains(v).map_err(found)?);
            prop_assert_eq!(snapshot.index_of(v).map_err(found)?, None);
        }
        // The same answers from the batch lookups, present and absent
        // values interleaved.
        let mut asked = Vec::new();
        let mut want = Vec::new();
        for (k, &i) in indices.iter().enumerate() {
            asked.push(model.leaves[i]);
            want.push(Some(i as u64));
            if let Some(&&v) = absent.get(k) {
                asked.push(v);
                want.push(None);
            }
        }
        prop_assert_eq!(&db.index_of_many(&asked).map_err(found)?, &want);
        prop_assert_eq!(&snapshot.index_of_many(&asked).map_err(found)?, &want);
        db.check_set().map_err(|e| db_err("check_set", e))?;
        let stats = db.stats();
        prop_assert_eq!(stats.set.expect("unique").values, size);
        prop_assert!(stats.set_checkpoint_size <= size);
        prop_assert!(stats.store.checkpoint_size <= size);
        if stats.set_checkpoint_size > self.set_checkpoint && !checkpointed {
            bump(&self.cov.automatic_set_checkpoints, 1);
        }
        self.set_checkpoint = stats.set_checkpoint_size;
        Ok(())
    }
}

fn run_case(
    n: u64,
    hash: HashKind,
    params: &Params,
    ops: &[Op],
    seed: u64,
    cov: &Coverage,
) -> Result<(), TestCaseError> {
    let mut config = config(n, hash);
    config.set_rewrite_percent = params.set_rewrite_percent;
    config.store.checkpoint = CheckpointPolicy {
        every_leaves: Some(params.checkpoint_every_leaves),
        ..CheckpointPolicy::default()
    };
    config.store.flush_interval = params.background_flush.then(|| Duration::from_millis(1));
    let fs = Arc::new(SimFs::new());
    let db = Db::create_in(fs.clone(), Path::new(DIR), config.clone())
        .map_err(|e| db_err("create", e))?;
    let mut state = State {
        config,
        fs,
        db: Some(db),
        model: Model {
            n,
            hash,
            leaves: Vec::new(),
            present: HashMap::new(),
            absent: Vec::new(),
            absent_known: HashSet::new(),
            seed,
            next_fresh: 0,
            acked: 0,
            root: None,
        },
        tokens: Vec::new(),
        cleared_at: 0,
        set_checkpoint: 0,
        cov,
    };
    state.check(false)?;
    for (i, op) in ops.iter().enumerate() {
        state
            .step(op)
            .map_err(|e| TestCaseError::fail(format!("step {i} ({op:?}): {e}")))?;
    }
    Ok(())
}

/// Runs `cases` cases of sequences of up to `max_ops` operations.
fn run(
    n: u64,
    hash: HashKind,
    cases: u32,
    max_ops: usize,
    max_batch: usize,
    big: bool,
) -> Coverage {
    let started = Instant::now();
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        // A case takes milliseconds; shrinking a long sequence takes many.
        max_shrink_iters: 2048,
        ..Config::default()
    });
    let cov = Coverage::default();
    let strategy = (
        params(),
        prop::collection::vec(op(max_batch, big), 1..max_ops),
        any::<u64>(),
    );
    let result = runner.run(&strategy, |(params, ops, seed)| {
        run_case(n, hash, &params, &ops, seed, &cov)
    });
    if let Err(e) = result {
        panic!("N = {n}, {hash:?}: {e}");
    }
    eprintln!(
        "model N = {n} {hash:?}: {cases} cases, {} steps, {} values appended, {} refused batches ({} of leaves, {} within), {} skipped, {} parallel batches, {} crashes ({} leaves lost), {} reopens ({} through the set file + replay, {} replay only), {} automatic set checkpoints, {:.1} s",
        get(&cov.steps),
        get(&cov.appended),
        get(&cov.refused_batches),
        get(&cov.refused_of_leaf),
        get(&cov.refused_of_batch),
        get(&cov.skipped),
        get(&cov.parallel_batches),
        get(&cov.crashes),
        get(&cov.crash_lost_leaves),
        get(&cov.reopens),
        get(&cov.file_and_replay),
        get(&cov.replay_only),
        get(&cov.automatic_set_checkpoints),
        started.elapsed().as_secs_f64()
    );
    cov
}

fn cases() -> u32 {
    env_u64("CAIRN_DB_MODEL_CASES", 64) as u32
}

/// What a run of the default size (or larger) must have exercised.
fn assert_covered(cov: &Coverage, big: bool) {
    for (what, count) in [
        ("refused duplicates of leaves", get(&cov.refused_of_leaf)),
        (
            "refused duplicates within a batch",
            get(&cov.refused_of_batch),
        ),
        ("skipped duplicates", get(&cov.skipped)),
        ("crashes", get(&cov.crashes)),
        ("crashes that lost leaves", get(&cov.crash_lost_leaves)),
        (
            "reopens through the set file + replay",
            get(&cov.file_and_replay),
        ),
        (
            "automatic set checkpoints",
            get(&cov.automatic_set_checkpoints),
        ),
        (
            "parallel batches",
            if big { get(&cov.parallel_batches) } else { 1 },
        ),
    ] {
        assert!(count > 0, "the run exercised no {what}");
    }
}

#[test]
fn binary_blake3_matches_the_model() {
    let cases = cases();
    let cov = run(2, HashKind::Blake3, cases, 64, 48, true);
    if cases >= 64 {
        assert_covered(&cov, true);
    }
}

#[test]
fn quaternary_blake3_matches_the_model() {
    let cases = cases();
    let cov = run(4, HashKind::Blake3, cases, 64, 48, true);
    if cases >= 64 {
        assert_covered(&cov, true);
    }
}

/// Poseidon (canonical BN254 leaves), ternary, smaller: its hash is slow.
#[test]
fn ternary_poseidon_matches_the_model() {
    run(3, HashKind::Poseidon, (cases() / 4).max(6), 40, 24, false);
}
