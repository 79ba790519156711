//! The indexed database: inserts, pending values, proofs, witnesses,
//! rollback and reopening, against the sorted-list model of the testkit;
//! random operation sequences with simulated power losses (every crash
//! mode of [`SimFs`]); and a power loss at every operation boundary of a
//! fixed workload. After any crash the tree must be exactly the tree of a
//! prefix of the values inserted, at least as long as what was
//! acknowledged durable.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use cairn_core::indexed::{IndexedError, IndexedTree};
use cairn_core::{Arity, Hash, HashKind, TreeHead};
use cairn_db::{DbConfig, DbError, DuplicateOf, IndexedDb, Token};
use cairn_testkit::env_u64;
use cairn_testkit::sim::{CrashMode, SECTOR, SimFs};
use proptest::prelude::*;
use rand::SeedableRng;

use crate::support::*;

const DIR: &str = "/db";
const WAIT: Duration = Duration::from_secs(30);

fn model_head(n: u64, hash: HashKind, values: &[Hash]) -> TreeHead {
    TreeHead::new(
        values.len() as u64 + 1,
        cairn_testkit::indexed::root(Arity::new(n).unwrap(), hash, values),
    )
}

#[test]
fn inserted_values_become_visible_when_durable_and_prove_absence_and_membership() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let config = config(4, HashKind::Blake3);
    let db = IndexedDb::create(&path, config.clone()).unwrap();
    assert_eq!(db.head(), model_head(4, HashKind::Blake3, &[]));
    let values: Vec<Hash> = (0..300).map(|i| value(1, i)).collect();
    let inserted = db.insert_batch(&values[..200]).unwrap();
    assert_eq!((inserted.first, inserted.count), (1, 200));
    // Pending values are refused as duplicates, at the leaf they will take.
    let err = db.insert(values[5]).unwrap_err();
    let DbError::Duplicates { duplicates, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(duplicates[0].of, DuplicateOf::Leaf(6));
    inserted.token.wait(WAIT).unwrap();
    assert_eq!(db.head(), model_head(4, HashKind::Blake3, &values[..200]));
    let head = db.head();
    let arity = Arity::new(4).unwrap();
    for v in &values[..200] {
        let proof = db.prove_value(v).unwrap();
        proof.verify(arity, HashKind::Blake3, &head, v).unwrap();
        assert!(matches!(
            db.prove_absence(v),
            Err(DbError::Indexed(IndexedError::Present { .. }))
        ));
    }
    for v in &values[200..] {
        db.prove_absence(v)
            .unwrap()
            .verify(arity, HashKind::Blake3, &head, v)
            .unwrap();
    }
    // A witnessed insert carries the durable head to the next one.
    let ticket = db.insert_witnessed(&values[200..210]).unwrap();
    let witness = db.witness(&ticket, WAIT).unwrap();
    let after = witness.verify(arity, HashKind::Blake3, &head).unwrap();
    assert_eq!(after, db.head());
    assert_eq!(after, model_head(4, HashKind::Blake3, &values[..210]));
    // Bad values, and the guard, refused; nothing changes.
    assert!(matches!(
        db.insert_batch(&[values[250], [0; 32]]),
        Err(DbError::Indexed(IndexedError::GuardValue { position: 1 }))
    ));
    assert!(matches!(
        db.insert_batch(&[]),
        Err(DbError::Indexed(IndexedError::Tree(_)))
    ));
    assert_eq!(db.logged(), 210);
    db.close().unwrap();
    // Reopened: rebuilt from the log; a plain open is refused.
    let err = cairn_db::Db::open(&path).unwrap_err();
    assert!(err.to_string().contains("tree kind is indexed"), "{err}");
    let db = IndexedDb::open(&path).unwrap();
    assert_eq!(db.head(), after);
    assert!(IndexedDb::open(dir.path().join("nothing")).is_err());
    // Rollback, then the removed values go in again at the same leaves.
    let snapshot = db.snapshot();
    let head = db.truncate(101).unwrap();
    assert_eq!(head, model_head(4, HashKind::Blake3, &values[..100]));
    assert_eq!(snapshot.head(), after);
    assert!(snapshot.prove_value(&values[150]).is_ok());
    let again = db.insert_batch(&values[100..210]).unwrap();
    assert_eq!(again.first, 101);
    assert_eq!(db.flush().unwrap(), after);
    // A backup opens with the same head.
    let copy = dir.path().join("copy");
    db.backup_to(&copy).unwrap();
    db.close().unwrap();
    assert_eq!(IndexedDb::open(&copy).unwrap().head(), after);
    let plain = dir.path().join("plain");
    cairn_db::Db::create(&plain, config)
        .unwrap()
        .close()
        .unwrap();
    let err = IndexedDb::open(&plain).unwrap_err();
    assert!(err.to_string().contains("tree kind is lean"), "{err}");
}

#[test]
fn the_tree_trails_the_durable_log_until_a_read_applies_it_and_the_guard_is_always_final() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = IndexedDb::create(&path, config(2, HashKind::Sha256)).unwrap();
    let values: Vec<Hash> = (0..20).map(|i| value(7, i)).collect();
    assert_eq!((db.applied_size(), db.durable_size()), (1, 1));
    assert_eq!(db.finalized_size(), 1);
    let inserted = db.insert_batch(&values[..10]).unwrap();
    inserted.token.wait(WAIT).unwrap();
    // Durable, not applied: the next read applies it.
    assert_eq!((db.applied_size(), db.durable_size()), (1, 11));
    assert_eq!(db.head(), model_head(2, HashKind::Sha256, &values[..10]));
    assert_eq!(db.applied_size(), 11);
    // Finality in tree sizes, never lowered; the guard cannot go.
    assert_eq!(db.finalize(6).unwrap(), 6);
    assert_eq!(db.finalize(3).unwrap(), 6);
    assert!(matches!(
        db.truncate(0),
        Err(DbError::Indexed(IndexedError::TruncateGuard { to: 0 }))
    ));
    // The store's refusal counts values (the log's sequence): one less.
    let err = db.truncate(5).unwrap_err();
    assert_eq!(
        err.kind(),
        cairn_db::ErrorKind::BelowFinalized { finalized: 5 },
        "{err}"
    );
    assert_eq!(db.head().size, 11);
    let head = db.truncate(8).unwrap();
    assert_eq!(head, model_head(2, HashKind::Sha256, &values[..7]));
    assert_eq!((db.applied_size(), db.durable_size()), (8, 8));
    db.close().unwrap();
    // Both are durable.
    let db = IndexedDb::open(&path).unwrap();
    assert_eq!(db.head(), head);
    assert_eq!(db.finalized_size(), 6);
}

#[test]
fn a_read_only_open_sees_the_durable_values_beside_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let writer = IndexedDb::create(&path, config(2, HashKind::Sha256)).unwrap();
    let values: Vec<Hash> = (0..50).map(|i| value(2, i)).collect();
    writer
        .insert_batch(&values)
        .unwrap()
        .token
        .wait(WAIT)
        .unwrap();
    let reader = IndexedDb::open_read_only(&path).unwrap();
    assert_eq!(reader.head(), writer.head());
    assert!(reader.insert(value(2, 99)).is_err());
    let proof = reader.prove_absence(&value(2, 99)).unwrap();
    proof
        .verify(
            Arity::new(2).unwrap(),
            HashKind::Sha256,
            &writer.head(),
            &value(2, 99),
        )
        .unwrap();
}

#[test]
fn poseidon_values_must_be_canonical() {
    let dir = tempfile::tempdir().unwrap();
    let db = IndexedDb::create(dir.path().join("db"), config(2, HashKind::Poseidon)).unwrap();
    let err = db.insert_batch(&[value(3, 0), [0xff; 32]]).unwrap_err();
    assert!(
        matches!(
            err,
            DbError::Indexed(IndexedError::NonCanonical { position: 1, .. })
        ),
        "{err}"
    );
    db.insert_batch(&[value(3, 0), value(3, 1)])
        .unwrap()
        .token
        .wait(WAIT)
        .unwrap();
    assert_eq!(
        db.head(),
        model_head(2, HashKind::Poseidon, &[value(3, 0), value(3, 1)])
    );
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u64),
    Batch(Vec<u64>),
    Witnessed(Vec<u64>),
    Wait,
    Checkpoint,
    Truncate(u64),
    Crash(u8, u64),
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => any::<u64>().prop_map(Op::Insert),
        4 => prop::collection::vec(any::<u64>(), 1..40).prop_map(Op::Batch),
        2 => prop::collection::vec(any::<u64>(), 1..6).prop_map(Op::Witnessed),
        3 => Just(Op::Wait),
        1 => Just(Op::Checkpoint),
        1 => any::<u64>().prop_map(Op::Truncate),
        2 => (any::<u8>(), any::<u64>()).prop_map(|(m, s)| Op::Crash(m, s)),
        1 => Just(Op::Reopen),
    ]
}

/// A value of a small domain, so that inserts repeat values held.
fn small(n: u64) -> Hash {
    value(77, n % 400)
}

/// What the random sequences exercised (a run that never lost a value to
/// a crash, say, proves little).
#[derive(Default, Debug)]
struct Coverage {
    crashes: AtomicU64,
    crashes_losing_values: AtomicU64,
    truncates: AtomicU64,
    witnessed: AtomicU64,
    refused: AtomicU64,
    reopens: AtomicU64,
    historical_heads: AtomicU64,
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

struct Harness<'a> {
    cov: &'a Coverage,
    n: u64,
    hash: HashKind,
    config: DbConfig,
    fs: Arc<SimFs>,
    db: Option<IndexedDb>,
    /// Every value in the log, durable or not, in order.
    values: Vec<Hash>,
    /// Values known durable.
    acked: u64,
    tokens: Vec<Token>,
}

impl Harness<'_> {
    fn db(&self) -> &IndexedDb {
        self.db.as_ref().expect("open")
    }

    fn insert(&mut self, batch: Vec<Hash>, witnessed: bool) -> Result<(), TestCaseError> {
        let refused = batch
            .iter()
            .enumerate()
            .any(|(p, v)| self.values.contains(v) || batch[..p].contains(v));
        let before = self.db().head();
        if witnessed && !refused {
            let ticket = self.db().insert_witnessed(&batch).unwrap();
            let first = self.values.len() as u64;
            prop_assert_eq!(ticket.inserted.first, first + 1);
            self.values.extend_from_slice(&batch);
            let witness = self.db().witness(&ticket, WAIT).unwrap();
            // Its old head is the tree just before the batch.
            let old = witness.old_size();
            prop_assert_eq!(old, first + 1);
            let head_before = model_head(self.n, self.hash, &self.values[..first as usize]);
            let after = witness
                .verify(Arity::new(self.n).unwrap(), self.hash, &head_before)
                .unwrap();
            prop_assert_eq!(after, model_head(self.n, self.hash, &self.values));
            self.acked = self.values.len() as u64;
            bump(&self.cov.witnessed);
            return Ok(());
        }
        match self.db().insert_batch(&batch) {
            Ok(inserted) => {
                prop_assert!(!refused, "a batch with duplicates went in");
                prop_assert_eq!(inserted.first, self.values.len() as u64 + 1);
                self.values.extend_from_slice(&batch);
                self.tokens.push(inserted.token);
            }
            Err(DbError::Duplicates { .. }) => {
                prop_assert!(refused, "a batch without duplicates was refused");
                bump(&self.cov.refused);
                // Nothing of the refused batch shows. A background flush may
                // have made earlier values durable meanwhile, so the head is
                // the model's head of some prefix at least as long as before.
                let after = self.db().head();
                prop_assert!(after.size >= before.size);
                prop_assert!(after.size as usize - 1 <= self.values.len());
                prop_assert_eq!(
                    after,
                    model_head(self.n, self.hash, &self.values[..after.size as usize - 1])
                );
            }
            Err(e) => return Err(TestCaseError::fail(format!("insert: {e}"))),
        }
        Ok(())
    }

    fn reopen(&mut self) -> Result<(), TestCaseError> {
        let db = IndexedDb::open_in(self.fs.clone(), Path::new(DIR), Some(self.config.clone()))
            .map_err(|e| TestCaseError::fail(format!("reopen: {e}")))?;
        self.db = Some(db);
        Ok(())
    }

    fn step(&mut self, op: &Op) -> Result<(), TestCaseError> {
        match op {
            Op::Insert(v) => self.insert(vec![small(*v)], false)?,
            Op::Batch(vs) => self.insert(vs.iter().map(|&v| small(v)).collect(), false)?,
            Op::Witnessed(vs) => self.insert(vs.iter().map(|&v| small(v)).collect(), true)?,
            Op::Wait => {
                if let Some(token) = self.tokens.pop() {
                    token.wait(WAIT).unwrap();
                    self.acked = self.acked.max(token.end());
                }
                self.tokens.clear();
            }
            Op::Checkpoint => {
                self.db().checkpoint().unwrap();
                self.acked = self.values.len() as u64;
            }
            Op::Truncate(to) => {
                let to = to % (self.values.len() as u64 + 1);
                let finalized = self.db().finalized_size() - 1;
                match self.db().truncate(to + 1) {
                    Ok(head) => {
                        self.values.truncate(to as usize);
                        self.acked = self.acked.min(to);
                        // The durable head: values below `to` may be pending.
                        prop_assert!(head.size <= to + 1);
                        bump(&self.cov.truncates);
                    }
                    Err(e) => prop_assert!(to < finalized, "truncate to {to}: {e}"),
                }
                self.tokens.clear();
            }
            Op::Crash(mode, seed) => {
                let db = self.db.take().expect("open");
                self.acked = self.acked.max(db.stats().store.durable);
                let mut replay = self.fs.replay();
                replay.seek(replay.op_count());
                let tears = replay.tear_points(SECTOR);
                let mode = match mode % 8 {
                    1 => CrashMode::KeepUnsynced,
                    2 => CrashMode::GrowthLost,
                    3 => CrashMode::UndoDirOps,
                    4 => CrashMode::RandomSectors,
                    5 | 6 if tears > 0 => CrashMode::TearLastWrite {
                        boundary: SECTOR,
                        keep: (*seed % tears as u64) as usize,
                    },
                    _ => CrashMode::DropUnsynced,
                };
                let crashed =
                    replay.crash(&mode, &mut rand_chacha::ChaCha8Rng::seed_from_u64(*seed));
                self.tokens.clear();
                drop(db);
                self.fs = Arc::new(crashed);
                self.reopen()?;
                let recovered = self.db().head().size - 1;
                prop_assert!(
                    recovered >= self.acked && recovered <= self.values.len() as u64,
                    "{mode:?}: recovered {recovered}, acknowledged {}, inserted {}",
                    self.acked,
                    self.values.len()
                );
                bump(&self.cov.crashes);
                if recovered < self.values.len() as u64 {
                    bump(&self.cov.crashes_losing_values);
                }
                self.values.truncate(recovered as usize);
                self.acked = recovered;
            }
            Op::Reopen => {
                self.db.take().expect("open").close().unwrap();
                self.reopen()?;
                bump(&self.cov.reopens);
                self.acked = self.values.len() as u64;
            }
        }
        self.check()
    }

    /// Checks the database against the model. With a background flush,
    /// more values may become durable while this reads (the head and each
    /// proof are separate reads, and no append comes meanwhile, so the
    /// head only moves towards the model's end): a check that saw the head
    /// move is done again.
    fn check(&mut self) -> Result<(), TestCaseError> {
        for _ in 0..1000 {
            if self.check_once()? {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Err(TestCaseError::fail(
            "the head kept moving during 1,000 checks",
        ))
    }

    /// One check; `Ok(false)` if the head moved under it.
    fn check_once(&mut self) -> Result<bool, TestCaseError> {
        let db = self.db();
        let durable = db.stats().store.durable as usize;
        prop_assert!(durable <= self.values.len());
        let head = db.head();
        // The head may have caught up with a flush since `durable` was read.
        let shown = head.size as usize - 1;
        prop_assert!(shown >= durable && shown <= self.values.len());
        prop_assert_eq!(head, model_head(self.n, self.hash, &self.values[..shown]));
        let arity = Arity::new(self.n).unwrap();
        for probe in (0..8).map(|k| small(k * 53)) {
            match self.values[..shown].iter().position(|v| *v == probe) {
                Some(i) => {
                    prop_assert_eq!(db.index_of(&probe), Some(i as u64 + 1));
                    let proof = db.prove_value(&probe).unwrap();
                    if proof.size() != head.size {
                        return Ok(false);
                    }
                    prop_assert_eq!(proof.verify(arity, self.hash, &head, &probe), Ok(()));
                }
                None => {
                    let Ok(proof) = db.prove_absence(&probe) else {
                        // Only if the probe became durable since the head was read.
                        prop_assert!(self.values[shown..].contains(&probe));
                        return Ok(false);
                    };
                    if proof.size() != head.size {
                        return Ok(false);
                    }
                    prop_assert_eq!(proof.verify(arity, self.hash, &head, &probe), Ok(()));
                }
            }
        }
        self.check_history(shown)
    }

    /// Every retained head is the model's head of its prefix, and proofs
    /// against it (absence or membership of the probes, as that prefix
    /// holds them) verify against it; `Ok(false)` if the head moved.
    fn check_history(&self, shown: usize) -> Result<bool, TestCaseError> {
        let db = self.db();
        let arity = Arity::new(self.n).unwrap();
        let heads = db.heads();
        prop_assert!(heads.len() <= self.config.history_heads);
        let Some(last) = heads.last() else {
            return Err(TestCaseError::fail("no head retained"));
        };
        if last.size as usize - 1 != shown {
            return Ok(false);
        }
        for head in &heads {
            let prefix = &self.values[..head.size as usize - 1];
            prop_assert_eq!(*head, model_head(self.n, self.hash, prefix));
            for probe in (0..8).map(|k| small(k * 53)) {
                match prefix.iter().position(|v| *v == probe) {
                    Some(i) => {
                        let proof = match db.prove_value_at(&probe, head.size) {
                            Ok(proof) => proof,
                            // Only if inserts made durable since moved the window.
                            Err(_) if db.heads().last() != Some(last) => return Ok(false),
                            Err(error) => return Err(TestCaseError::fail(error.to_string())),
                        };
                        prop_assert_eq!(proof.index(), i as u64 + 1);
                        prop_assert_eq!(proof.verify(arity, self.hash, head, &probe), Ok(()));
                    }
                    None => {
                        let proof = match db.prove_absence_at(&probe, head.size) {
                            Ok(proof) => proof,
                            Err(_) if db.heads().last() != Some(last) => return Ok(false),
                            Err(error) => return Err(TestCaseError::fail(error.to_string())),
                        };
                        prop_assert_eq!(proof.verify(arity, self.hash, head, &probe), Ok(()));
                    }
                }
            }
        }
        bump(&self.cov.historical_heads);
        Ok(true)
    }
}

fn run_case(
    n: u64,
    hash: HashKind,
    background: bool,
    ops: &[Op],
    cov: &Coverage,
) -> Result<(), TestCaseError> {
    let mut config = config(n, hash);
    config.store.flush_interval = background.then(|| Duration::from_millis(1));
    // A small window, so that heads leave it between checks.
    config.history_heads = 5;
    let fs = Arc::new(SimFs::new());
    let db = IndexedDb::create_in(fs.clone(), Path::new(DIR), config.clone()).unwrap();
    let mut harness = Harness {
        cov,
        n,
        hash,
        config,
        fs,
        db: Some(db),
        values: Vec::new(),
        acked: 0,
        tokens: Vec::new(),
    };
    for (i, op) in ops.iter().enumerate() {
        harness
            .step(op)
            .map_err(|e| TestCaseError::fail(format!("step {i} ({op:?}): {e}")))?;
    }
    Ok(())
}

/// Random sequences of inserts (single, batches, witnessed, with
/// repeats), durability waits, checkpoints, rollbacks, reopens and power
/// losses in every crash mode, checked after every step against the
/// sorted-list model of the durable prefix. `CAIRN_INDEXED_MODEL_CASES`
/// (default 64) sets the number of sequences.
#[test]
fn indexed_operations_and_power_losses_agree_with_the_model() {
    use proptest::test_runner::{Config, TestRunner};
    let cov = Coverage::default();
    let cases = env_u64("CAIRN_INDEXED_MODEL_CASES", 64) as u32;
    let mut runner = TestRunner::new(Config {
        cases,
        ..Config::default()
    });
    let strategy = (
        prop_oneof![Just(2u64), Just(3), Just(4), Just(16)],
        prop_oneof![Just(HashKind::Blake3), Just(HashKind::Keccak256)],
        any::<bool>(),
        prop::collection::vec(op(), 1..40),
    );
    runner
        .run(&strategy, |(n, hash, background, ops)| {
            run_case(n, hash, background, &ops, &cov)
        })
        .unwrap();
    eprintln!("{cases} sequences: {cov:?}");
    for (what, counter) in [
        ("crashes losing values", &cov.crashes_losing_values),
        ("rollbacks", &cov.truncates),
        ("witnessed inserts", &cov.witnessed),
        ("refused batches", &cov.refused),
        ("reopens", &cov.reopens),
        ("checks of retained heads", &cov.historical_heads),
    ] {
        assert!(counter.load(Ordering::Relaxed) > 0, "no {what}");
    }
}

/// A power loss after every operation of a fixed workload (inserts,
/// witnessed inserts, waits, a checkpoint, a rollback), in every untorn
/// crash mode and each torn last write: the database opens, holds at
/// least what was acknowledged at that boundary, and its tree is the
/// model's for the recovered prefix of the workload's values.
#[test]
fn power_loss_at_every_operation_boundary_rebuilds_the_acknowledged_tree() {
    let (n, hash) = (3, HashKind::Blake3);
    let values: Vec<Hash> = (0..4000).map(|i| value(5, i)).collect();
    let fs = Arc::new(SimFs::new());
    let config = config(n, hash);
    let db = IndexedDb::create_in(fs.clone(), Path::new(DIR), config.clone()).unwrap();
    fs.clear_trace();
    // acked[k] = values acknowledged durable after the first k operations.
    let mut acked_at: Vec<(usize, u64)> = vec![(0, 0)];
    let mut at = 0usize;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
    // (first and last operation of the rollback, the size it went to).
    let mut truncated_to: Option<(usize, usize, u64)> = None;
    for round in 0..60 {
        use rand::Rng;
        let take = rng.gen_range(1..120);
        let batch = &values[at..at + take];
        if round % 5 == 0 {
            let ticket = db.insert_witnessed(batch).unwrap();
            db.witness(&ticket, WAIT).unwrap();
        } else {
            let inserted = db.insert_batch(batch).unwrap();
            if round % 3 == 0 {
                inserted.token.wait(WAIT).unwrap();
            }
        }
        at += take;
        if round == 30 {
            db.checkpoint().unwrap();
        }
        if round == 45 {
            // Roll back into the durable values; later inserts reuse the indices.
            db.flush().unwrap();
            let to = at as u64 - 50;
            let start = fs.op_count();
            db.truncate(to + 1).unwrap();
            truncated_to = Some((start, fs.op_count(), to));
            at = to as usize;
        }
        acked_at.push((fs.op_count(), db.stats().store.durable));
    }
    let last = db.flush().unwrap();
    acked_at.push((fs.op_count(), db.stats().store.durable));
    drop(db);
    let acked = |k: usize| -> u64 {
        acked_at
            .iter()
            .take_while(|(ops, _)| *ops <= k)
            .last()
            .map_or(0, |(_, a)| *a)
    };
    let mut replay = fs.replay();
    let mut states = 0;
    let mut seen_sizes = std::collections::BTreeSet::new();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(10);
    let ops = replay.op_count();
    let step = env_u64("CAIRN_INDEXED_POWER_STEP", 1).max(1) as usize;
    for k in (0..=ops).step_by(step) {
        replay.seek(k);
        // While the rollback runs, either side of its commit point may
        // be recovered: at least the size it goes to. (The values
        // inserted again after it are the same, so every recovery is a
        // prefix of `values`.)
        let want_floor = match truncated_to {
            Some((start, end, to)) if k > start && k <= end => acked(k).min(to),
            _ => acked(k),
        };
        for mode in replay.crash_modes() {
            let crashed = Arc::new(replay.crash(&mode, &mut rng));
            let db = IndexedDb::open_in(crashed, Path::new(DIR), Some(config.clone()))
                .unwrap_or_else(|e| panic!("boundary {k} {mode:?}: open failed: {e}"));
            let head = db.head();
            let recovered = head.size - 1;
            assert!(
                recovered >= want_floor,
                "boundary {k} {mode:?}: recovered {recovered}, acknowledged {want_floor}"
            );
            assert_eq!(
                head,
                IndexedTree::from_values(config.tree(), &values[..recovered as usize])
                    .unwrap()
                    .head(),
                "boundary {k} {mode:?}"
            );
            seen_sizes.insert(recovered);
            states += 1;
        }
    }
    assert_eq!(
        last,
        IndexedTree::from_values(config.tree(), &values[..at])
            .unwrap()
            .head()
    );
    eprintln!(
        "{states} crash states over {} boundaries, {} distinct recovered sizes",
        ops / step + 1,
        seen_sizes.len()
    );
    assert!(seen_sizes.len() > 20, "too few distinct recoveries");
}
