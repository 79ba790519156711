//! The storage issue's model test: random sequences of appends, batch
//! appends, durability waits, flushes, checkpoints, closes, drops and
//! simulated power losses, each followed by a reopen where it ends a
//! process; after every operation the store must equal a reference model.
//!
//! The model is the list of leaves appended (every value fresh, so a leaf
//! lost in a crash and a leaf appended after it never look alike) and what
//! was acknowledged as durable, as `(trace boundary, size)` pairs of the
//! current [`SimFs`]: a token's `wait`, `flush`, `checkpoint` and `close`
//! returning `Ok`, and `durable_size()` (the store's own claim), each from
//! the boundary at which it was made.
//!
//! After every operation: the size; the head against the naive reference
//! root (`cairn_testkit::reference`, memoised by size); leaves; membership
//! proofs verified against the reference head; consistency proofs (and
//! membership proofs at the old size) from earlier recorded heads; the
//! durable size against the acknowledgements; tokens' `is_durable`; the
//! checkpoint and tiering figures of `stats()`; and snapshots kept from
//! earlier operations still answering with their own head, leaves and
//! proofs (snapshot isolation across appends, checkpoints, tiering, closes
//! and crashes).
//!
//! A crash builds the state a power loss leaves, in a [`CrashMode`] the case
//! chooses (every variant, `TearLastWrite` at 512-byte and 4 KiB cuts
//! included), either now or at a trace boundary inside the last operation
//! (mid group commit, mid checkpoint, mid close or recovery) or anywhere
//! since the store was created on this `SimFs`; the store is reopened on
//! that image. The recovered size must lie between what was acknowledged at
//! that boundary and what was appended, its leaves must be the model's
//! prefix, the published checkpoint must be one at least as recent as the
//! last acknowledged one, and the model is truncated to it.
//!
//! Tests (cases per run in parentheses; `CAIRN_MODEL_CASES=<n>` sets the
//! first, and the next two to n / 8, for a longer run; proptest's own
//! `PROPTEST_RNG_SEED` fixes the generated cases):
//!
//! - `random_operation_sequences_match_the_reference_model` (128): BLAKE3,
//!   N = 2, 3, 4, 16, log files of 1,024 leaves (batches of up to 3,000
//!   cross them), up to 80 operations.
//! - `random_operation_sequences_with_tiering_match_the_reference_model` (16):
//!   log files of 2^16 leaves (one segment) or 2^17 (`map_leaves` maps
//!   level 0 only when a log file holds whole segments), a first batch of
//!   more than one segment (N = 3, 4, 16) or two (N = 2, so that level 1
//!   has a complete segment too), checkpointed, then up to 24 operations;
//!   `tier_below` 1, 2 or 64.
//! - `random_poseidon_operation_sequences_match_the_reference_model` (16):
//!   Poseidon (canonical leaves), small batches.
//! - `a_scripted_sequence_tiers_levels_0_and_1_and_survives_crashes`: one
//!   fixed sequence that must tier level 0 and level 1 both by checkpoints
//!   and at open, and crash in the middle of a tiering checkpoint.
//! - `canary_with_lying_fsync_the_model_finds_lost_acknowledged_leaves`.
//!
//! A failure prints proptest's minimal sequence; the operation index and the
//! crash boundary are in the panic message.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use cairn_core::level::SEGMENT_LEN;
use cairn_core::{Arity, Hash, HashKind, Snapshot, TreeConfig, TreeHead};
use cairn_testkit::sim::SimFs;
use cairn_store::{CheckpointPolicy, Fs, Store, StoreConfig, Token};
use cairn_testkit::reference;
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::power_loss::{
    CrashKind, CrashPoint, Trace, check_all_leaves, crash_kind, crash_point, crash_state, mode_name,
};
use crate::support::WAIT;

const DB: &str = "/db";
/// Tokens kept for `Wait` to choose from.
const KEEP_TOKENS: usize = 16;
/// Snapshots kept for the isolation checks.
const KEEP_SNAPSHOTS: usize = 4;
/// Heads kept for consistency proofs.
const KEEP_HEADS: usize = 12;

// ---------------------------------------------------------------------------
// Cases
// ---------------------------------------------------------------------------

/// What a case's store is.
#[derive(Clone, Copy, Debug)]
struct Setup {
    n: u64,
    hash: HashKind,
    log_shift: u8,
    tier_below: u32,
    /// Leaf values and the indices checks pick come from it.
    seed: u64,
}

impl Setup {
    fn arity(&self) -> Arity {
        Arity::new(self.n).unwrap()
    }

    fn tree(&self) -> TreeConfig {
        TreeConfig::new(self.arity(), self.hash)
    }

    /// No background thread: the case alone decides when the store writes,
    /// so a case replays identically (what proptest's shrinking needs).
    fn config(&self, verify_on_open: bool) -> StoreConfig {
        StoreConfig {
            log_shift: self.log_shift,
            flush_interval: None,
            checkpoint: CheckpointPolicy::default(),
            tier_below: self.tier_below,
            verify_on_open,
            ..StoreConfig::new(self.tree())
        }
    }

    fn log_file_leaves(&self) -> u64 {
        1 << self.log_shift
    }
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Append,
    AppendBatch(usize),
    /// Waits on a kept token: the newest for 0, older ones otherwise.
    Wait(u8),
    Flush,
    Checkpoint,
    /// Keeps a snapshot for the isolation checks.
    Snapshot,
    /// `close()` then `Store::open` on the same file system.
    CloseReopen {
        verify: bool,
    },
    /// Drops the store without `close()` (it flushes what it can), then opens.
    DropReopen {
        verify: bool,
    },
    /// A power loss, then `Store::open` on what it left.
    CrashReopen {
        kind: CrashKind,
        at: CrashPoint,
        seed: u64,
        verify: bool,
    },
}

fn batch(max: usize) -> impl Strategy<Value = usize> {
    prop_oneof![
        4 => 2usize..=16,
        3 => 17usize..=300.min(max),
        1 => (300.min(max))..=max,
    ]
}

fn op(max_batch: usize) -> impl Strategy<Value = Op> {
    prop_oneof![
        16 => Just(Op::Append),
        14 => batch(max_batch).prop_map(Op::AppendBatch),
        10 => any::<u8>().prop_map(|pick| Op::Wait(pick % 4)),
        3 => Just(Op::Flush),
        6 => Just(Op::Checkpoint),
        3 => Just(Op::Snapshot),
        3 => any::<bool>().prop_map(|verify| Op::CloseReopen { verify }),
        3 => any::<bool>().prop_map(|verify| Op::DropReopen { verify }),
        8 => (crash_kind(), crash_point(3), any::<u64>(), any::<bool>()).prop_map(
            |(kind, at, seed, verify)| Op::CrashReopen { kind, at, seed, verify }
        ),
    ]
}

fn arity_choice() -> impl Strategy<Value = u64> {
    prop_oneof![Just(2u64), Just(3), Just(4), Just(16)]
}

/// BLAKE3, 1,024 leaves per log file.
fn small_case() -> impl Strategy<Value = (Setup, Vec<Op>)> {
    (
        arity_choice(),
        1u32..=3,
        any::<u64>(),
        prop::collection::vec(op(3000), 1..80),
    )
        .prop_map(|(n, tier_below, seed, ops)| {
            let setup = Setup {
                n,
                hash: HashKind::Blake3,
                log_shift: 10,
                tier_below,
                seed,
            };
            (setup, ops)
        })
}

/// Log files of one segment (or two, so that level 0's second segment
/// starts inside a file), and a first batch that fills more than one
/// segment (two for N = 2, whose level 1 then holds a complete segment
/// too), checkpointed (which tiers what `tier_below` says) before random
/// operations go on.
fn tiering_case() -> impl Strategy<Value = (Setup, Vec<Op>)> {
    (
        prop_oneof![3 => Just(2u64), 1 => Just(3), 1 => Just(4), 1 => Just(16)],
        prop_oneof![3 => Just(16u8), 1 => Just(17)],
        prop_oneof![Just(1u32), Just(2), Just(64)],
        any::<u64>(),
        1usize..3000,
        prop::collection::vec(op(3000), 1..24),
    )
        .prop_map(|(n, log_shift, tier_below, seed, extra, mut ops)| {
            let setup = Setup {
                n,
                hash: HashKind::Blake3,
                log_shift,
                tier_below,
                seed,
            };
            let segments = if n == 2 { 2 } else { 1 };
            ops.splice(
                0..0,
                [
                    Op::AppendBatch(segments * SEGMENT_LEN + extra),
                    Op::Checkpoint,
                ],
            );
            (setup, ops)
        })
}

/// Poseidon (every leaf a canonical field element), small batches: the
/// naive reference hashes every node of every size it is asked about.
fn poseidon_case() -> impl Strategy<Value = (Setup, Vec<Op>)> {
    (
        arity_choice(),
        1u32..=2,
        any::<u64>(),
        prop::collection::vec(op(48), 1..28),
    )
        .prop_map(|(n, tier_below, seed, ops)| {
            let setup = Setup {
                n,
                hash: HashKind::Poseidon,
                log_shift: 10,
                tier_below,
                seed,
            };
            (setup, ops)
        })
}

// ---------------------------------------------------------------------------
// The reference model
// ---------------------------------------------------------------------------

/// A snapshot kept from an earlier operation, with what it answered then.
struct Kept {
    snapshot: Arc<Snapshot>,
    head: TreeHead,
    /// (index, leaf) pairs it returned.
    samples: Vec<(u64, Hash)>,
}

/// What a case exercised, summed over cases.
#[derive(Debug, Default, Clone)]
struct Coverage {
    cases: usize,
    ops: usize,
    max_size: u64,
    log_files: u64,
    checkpoints: usize,
    reopens: usize,
    /// Crashes by resolved mode.
    crashes: BTreeMap<&'static str, usize>,
    /// Crashes that dropped leaves that were appended (but not acknowledged).
    lost_unacknowledged: usize,
    /// Crashes that kept leaves beyond the acknowledged size.
    kept_unacknowledged: usize,
    /// Crashes whose boundary was inside an operation (not after it).
    mid_operation: usize,
    /// Per level, the most segments `stats()` reported tiered after a
    /// checkpoint and after an open.
    tiered_by_checkpoint: Vec<usize>,
    tiered_at_open: Vec<usize>,
}

impl Coverage {
    fn merge(&mut self, other: &Coverage) {
        self.cases += other.cases;
        self.ops += other.ops;
        self.max_size = self.max_size.max(other.max_size);
        self.log_files = self.log_files.max(other.log_files);
        self.checkpoints += other.checkpoints;
        self.reopens += other.reopens;
        for (mode, count) in &other.crashes {
            *self.crashes.entry(mode).or_default() += count;
        }
        self.lost_unacknowledged += other.lost_unacknowledged;
        self.kept_unacknowledged += other.kept_unacknowledged;
        self.mid_operation += other.mid_operation;
        max_into(&mut self.tiered_by_checkpoint, &other.tiered_by_checkpoint);
        max_into(&mut self.tiered_at_open, &other.tiered_at_open);
    }

    fn crashes(&self) -> usize {
        self.crashes.values().sum()
    }
}

fn max_into(into: &mut Vec<usize>, from: &[usize]) {
    if into.len() < from.len() {
        into.resize(from.len(), 0);
    }
    for (a, &b) in into.iter_mut().zip(from) {
        *a = (*a).max(b);
    }
}

/// Level lengths of a tree of `size` leaves, leaves first (none when empty).
fn level_lens(size: u64, n: u64) -> Vec<u64> {
    if size == 0 {
        return Vec::new();
    }
    let mut lens = vec![size];
    while let Some(&last) = lens.last().filter(|&&len| len > 1) {
        lens.push(last.div_ceil(n));
    }
    lens
}

struct Model {
    setup: Setup,
    /// Every leaf the store must hold, in order.
    leaves: Vec<Hash>,
    /// Leaf values are `testkit::leaf(seed, counter)`, never reused.
    counter: u64,
    /// Naive reference roots by size (for the current leaves).
    roots: BTreeMap<u64, Option<Hash>>,
    /// Heads recorded after earlier operations.
    heads: Vec<TreeHead>,
    kept: Vec<Kept>,
    tokens: Vec<Token>,
    /// The file system the store lives on now.
    fs: SimFs,
    /// First boundary of `fs`'s trace at which the store exists.
    floor: usize,
    /// The boundary at which the last operation that touched the file
    /// system started.
    mark: usize,
    /// `(boundary, size)`: acknowledged from `boundary` on; increasing.
    acks: Vec<(usize, u64)>,
    /// `(boundary, number, size)` of checkpoints returned on `fs`
    /// (the first: what `fs` started with).
    checkpoints: Vec<(usize, u64, u64)>,
    /// What `stats().tiered_segments` must say.
    tiered: Vec<usize>,
    rng: ChaCha8Rng,
    /// The operation being run, for messages.
    ctx: String,
    coverage: Coverage,
}

impl Model {
    fn new(setup: Setup, fs: SimFs) -> Model {
        let floor = fs.op_count();
        Model {
            setup,
            leaves: Vec::new(),
            counter: 0,
            roots: BTreeMap::new(),
            heads: vec![TreeHead::EMPTY],
            kept: Vec::new(),
            tokens: Vec::new(),
            fs,
            floor,
            mark: floor,
            acks: vec![(floor, 0)],
            checkpoints: vec![(floor, 0, 0)],
            tiered: Vec::new(),
            rng: ChaCha8Rng::seed_from_u64(setup.seed),
            ctx: "create".into(),
            coverage: Coverage {
                cases: 1,
                ..Coverage::default()
            },
        }
    }

    fn size(&self) -> u64 {
        self.leaves.len() as u64
    }

    fn fresh(&mut self, count: usize) -> Vec<Hash> {
        let first = self.counter;
        self.counter += count as u64;
        (first..self.counter)
            .map(|i| cairn_testkit::leaf(self.setup.seed, i))
            .collect()
    }

    /// The reference head at `size`: the naive root of the first `size` leaves.
    fn head(&mut self, size: u64) -> TreeHead {
        let setup = self.setup;
        let leaves = &self.leaves;
        let root = *self.roots.entry(size).or_insert_with(|| {
            reference::root(setup.arity(), setup.hash, &leaves[..size as usize])
        });
        TreeHead { size, root }
    }

    fn acknowledge(&mut self, size: u64) {
        let at = self.fs.op_count();
        if self.acks.last().is_none_or(|&(_, acked)| size > acked) {
            self.acks.push((at, size));
        }
    }

    /// Leaves acknowledged at boundary `k`.
    fn acked_at(&self, k: usize) -> u64 {
        let i = self.acks.partition_point(|&(at, _)| at <= k);
        i.checked_sub(1).map_or(0, |i| self.acks[i].1)
    }

    fn acked(&self) -> u64 {
        self.acks.last().map_or(0, |&(_, size)| size)
    }

    /// The last checkpoint returned: (number, size).
    fn checkpoint(&self) -> (u64, u64) {
        let &(_, number, size) = self.checkpoints.last().expect("a first entry");
        (number, size)
    }

    /// Segments of `level` (of `len` nodes) a checkpoint can map: complete
    /// segments of final nodes; none for level 0 when a log file holds less
    /// than one segment (`map_leaves`).
    fn mappable(&self, level: usize, len: u64) -> Option<usize> {
        if level == 0 && self.setup.log_file_leaves() < SEGMENT_LEN as u64 {
            return None;
        }
        Some(((len - 1) / SEGMENT_LEN as u64) as usize)
    }

    /// Tiering after a checkpoint of `size` leaves: levels below
    /// `tier_below` serve their complete segments from mappings.
    fn tier_after_checkpoint(&mut self, size: u64) {
        let lens = level_lens(size, self.setup.n);
        let cold = (self.setup.tier_below as usize).min(lens.len());
        for (level, &len) in lens.iter().enumerate().take(cold) {
            if self.tiered.len() <= level {
                self.tiered.resize(level + 1, 0);
            }
            if let Some(complete) = self.mappable(level, len) {
                self.tiered[level] = self.tiered[level].max(complete);
            }
        }
        max_into(&mut self.coverage.tiered_by_checkpoint, &self.tiered);
    }

    /// Tiering at open: every complete segment of every level of the
    /// checkpoint is mapped (docs/file-format.md, Recovery 5).
    fn tier_at_open(&mut self, checkpoint_size: u64) {
        self.tiered = if checkpoint_size == 0 {
            Vec::new()
        } else {
            level_lens(checkpoint_size, self.setup.n)
                .iter()
                .enumerate()
                .map(|(level, &len)| self.mappable(level, len).unwrap_or(0))
                .collect()
        };
        max_into(&mut self.coverage.tiered_at_open, &self.tiered);
    }

    /// Forgets everything past `size` (a crash lost it).
    fn truncate(&mut self, size: u64) {
        self.leaves.truncate(size as usize);
        self.roots.split_off(&(size + 1));
        self.heads.retain(|head| head.size <= size);
    }

    fn keep_head(&mut self, head: TreeHead) {
        if self.heads.contains(&head) {
            return;
        }
        if self.heads.len() >= KEEP_HEADS {
            // Keep the oldest (the widest consistency proofs) and recent ones.
            let drop = self.rng.gen_range(1..self.heads.len());
            self.heads.remove(drop);
        }
        self.heads.push(head);
    }
}

// ---------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------

/// Every invariant, after every operation. `all_leaves` compares every leaf
/// (after a reopen) instead of a sample.
fn check(store: &Store, m: &mut Model, all_leaves: bool) {
    let ctx = m.ctx.clone();
    let setup = m.setup;
    let size = m.size();
    assert_eq!(store.size(), size, "{ctx}: size");
    let snapshot = store.snapshot();
    assert_eq!(snapshot.size(), size, "{ctx}: snapshot size");
    let head = m.head(size);
    assert_eq!(snapshot.head(), head, "{ctx}: head against the reference");
    assert_eq!(store.head(), head, "{ctx}: store head");

    // Leaves.
    if all_leaves {
        check_all_leaves(&snapshot, &m.leaves, &ctx);
    } else if size > 0 {
        let mut picks = vec![0, size - 1, size / 2];
        picks.extend((0..3).map(|_| m.rng.gen_range(0..size)));
        for i in picks {
            assert_eq!(
                snapshot.leaf(i),
                Some(m.leaves[i as usize]),
                "{ctx}: leaf {i}"
            );
        }
    }
    assert_eq!(snapshot.leaf(size), None, "{ctx}: a leaf past the end");

    // Membership proofs at the current head.
    if size > 0 {
        for i in [size - 1, m.rng.gen_range(0..size)] {
            let proof = snapshot
                .prove(i)
                .unwrap_or_else(|e| panic!("{ctx}: prove {i} at {size}: {e}"));
            assert_eq!(proof.leaf(), m.leaves[i as usize], "{ctx}: proof leaf {i}");
            proof
                .verify(setup.arity(), setup.hash, &head)
                .unwrap_or_else(|e| panic!("{ctx}: proof of {i} at {size}: {e}"));
        }
    }

    // Consistency from earlier heads (and membership at them).
    for _ in 0..2 {
        let old = m.heads[m.rng.gen_range(0..m.heads.len())];
        assert!(old.size <= size, "{ctx}: a kept head past the end");
        let proof = snapshot
            .prove_consistency(old.size, size)
            .unwrap_or_else(|e| panic!("{ctx}: prove consistency {} -> {size}: {e}", old.size));
        proof
            .verify(setup.arity(), setup.hash, &old, &head)
            .unwrap_or_else(|e| panic!("{ctx}: consistency {} -> {size}: {e}", old.size));
        let view = snapshot.view(old.size).unwrap();
        assert_eq!(view.head(), old, "{ctx}: view at {}", old.size);
        if old.size > 0 {
            let i = m.rng.gen_range(0..old.size);
            snapshot
                .prove_at(i, old.size)
                .unwrap()
                .verify(setup.arity(), setup.hash, &old)
                .unwrap_or_else(|e| panic!("{ctx}: proof of {i} at old size {}: {e}", old.size));
        }
    }
    m.keep_head(head);

    // Snapshots from earlier operations answer as they did.
    for (k, kept) in m.kept.iter().enumerate() {
        assert_eq!(kept.snapshot.head(), kept.head, "{ctx}: kept snapshot {k}");
        for &(i, leaf) in &kept.samples {
            assert_eq!(
                kept.snapshot.leaf(i),
                Some(leaf),
                "{ctx}: kept snapshot {k}, leaf {i}"
            );
        }
        if let Some(&(i, leaf)) = kept.samples.last() {
            let proof = kept.snapshot.prove(i).unwrap();
            assert_eq!(proof.leaf(), leaf);
            proof
                .verify(setup.arity(), setup.hash, &kept.head)
                .unwrap_or_else(|e| panic!("{ctx}: kept snapshot {k}, proof of {i}: {e}"));
        }
    }

    // Durability: the store's claim covers every acknowledgement, and is
    // itself an acknowledgement from now on.
    let durable = store.durable_size();
    assert!(
        m.acked() <= durable && durable <= size,
        "{ctx}: durable size {durable}, acknowledged {}, size {size}",
        m.acked()
    );
    for token in &m.tokens {
        assert_eq!(
            token.is_durable().unwrap(),
            durable >= token.end(),
            "{ctx}: token to {} with {durable} durable",
            token.end()
        );
    }
    m.acknowledge(durable);

    // Checkpoint and tiering figures.
    let stats = store.stats();
    let (number, covered) = m.checkpoint();
    assert_eq!(
        (
            stats.size,
            stats.durable,
            stats.checkpoint_number,
            stats.checkpoint_size
        ),
        (size, durable, number, covered),
        "{ctx}: stats (size, durable, checkpoint number, checkpoint size)"
    );
    assert_eq!(stats.tiered_segments, m.tiered, "{ctx}: tiered segments");

    m.coverage.max_size = m.coverage.max_size.max(size);
    m.coverage.log_files = m
        .coverage
        .log_files
        .max(size.div_ceil(setup.log_file_leaves()));
}

// ---------------------------------------------------------------------------
// Running a case
// ---------------------------------------------------------------------------

fn open(setup: &Setup, fs: &SimFs, verify: bool, ctx: &str) -> Store {
    Store::open(
        Arc::new(fs.clone()) as Arc<dyn Fs>,
        Path::new(DB),
        setup.config(verify),
    )
    .unwrap_or_else(|e| panic!("{ctx}: open failed: {e}"))
}

/// After any reopen: the store holds the model, durable, with the
/// checkpoint it found.
fn reopened(store: &Store, m: &mut Model) {
    let ctx = m.ctx.clone();
    m.coverage.reopens += 1;
    m.tokens.clear();
    let stats = store.stats();
    assert_eq!(
        store.durable_size(),
        store.size(),
        "{ctx}: opened with leaves that are not durable"
    );
    m.tier_at_open(stats.checkpoint_size);
    check(store, m, true);
}

/// Close or drop, then reopen on the same file system: nothing is lost.
fn reopen_same(store: Store, m: &mut Model, close: bool, verify: bool) -> Store {
    let size = m.size();
    if close {
        store
            .close()
            .unwrap_or_else(|e| panic!("{}: close: {e}", m.ctx));
        m.acknowledge(size);
    } else {
        drop(store);
    }
    // Tokens outlive their store: everything they cover was flushed (by
    // `close`, or by the drop's best-effort flush, with no fault here).
    for token in m.tokens.clone() {
        assert!(token.is_durable().unwrap(), "{}: token after close", m.ctx);
        m.acknowledge(token.end());
    }
    let store = open(&m.setup, &m.fs, verify, &m.ctx);
    reopened(&store, m);
    store
}

/// A power loss at a boundary chosen by `at`, then a reopen on what it left.
fn crash_and_reopen(
    store: Store,
    m: &mut Model,
    kind: CrashKind,
    at: CrashPoint,
    seed: u64,
    verify: bool,
) -> Store {
    let now = m.fs.op_count();
    let (k, replay, mode) = crash_state(
        &m.fs,
        Trace {
            now: m.fs.op_count(),
            mark: m.mark,
            floor: m.floor,
        },
        kind,
        at,
    );
    // What must survive: every acknowledgement made by boundary k (and at
    // `now`, whatever the store says is durable).
    let mut acked = m.acked_at(k);
    if k == now {
        acked = acked.max(store.durable_size());
    }
    // The last checkpoint returned by boundary k must survive, or a later one.
    let must_checkpoint = m
        .checkpoints
        .iter()
        .rev()
        .find(|&&(at, _, _)| at <= k)
        .map_or(0, |&(_, number, _)| number);
    let crashed = replay.crash(&mode, &mut ChaCha8Rng::seed_from_u64(seed));
    let ctx = format!(
        "{}: power loss at boundary {k} of {now} (after `{}`), {mode:?}",
        m.ctx,
        k.checked_sub(1)
            .map_or_else(|| "nothing".into(), |i| m.fs.describe_op(i)),
    );
    // The old process is gone; its drop writes only to the old file system.
    drop(store);
    let store = open(&m.setup, &crashed, verify, &ctx);
    let recovered = store.size();
    assert!(
        acked <= recovered && recovered <= m.size(),
        "{ctx}: recovered {recovered} leaves; {acked} were acknowledged, {} appended",
        m.size()
    );
    check_all_leaves(&store.snapshot(), &m.leaves[..recovered as usize], &ctx);
    let stats = store.stats();
    let found = m
        .checkpoints
        .iter()
        .find(|&&(_, number, _)| number == stats.checkpoint_number);
    match found {
        Some(&(_, number, size)) if number >= must_checkpoint => assert_eq!(
            stats.checkpoint_size, size,
            "{ctx}: checkpoint {number} covers the wrong size"
        ),
        _ => panic!(
            "{ctx}: opened with checkpoint {} (size {}); checkpoint {must_checkpoint} was published, the last one is {}",
            stats.checkpoint_number,
            stats.checkpoint_size,
            m.checkpoint().0
        ),
    }

    let c = &mut m.coverage;
    *c.crashes.entry(mode_name(&mode)).or_default() += 1;
    c.lost_unacknowledged += usize::from(recovered < m.leaves.len() as u64);
    c.kept_unacknowledged += usize::from(recovered > acked);
    c.mid_operation += usize::from(k < now);

    // The model follows the disk.
    m.truncate(recovered);
    m.fs = crashed;
    m.floor = 0;
    m.mark = 0;
    m.acks = vec![(0, recovered)];
    m.checkpoints = vec![(0, stats.checkpoint_number, stats.checkpoint_size)];
    m.ctx = ctx;
    reopened(&store, m);
    store
}

fn append(store: &Store, m: &mut Model, count: usize) {
    let leaves = m.fresh(count);
    let got = if count == 1 {
        store.append(leaves[0])
    } else {
        store.append_batch(&leaves)
    }
    .unwrap_or_else(|e| panic!("{}: append: {e}", m.ctx));
    let first = m.size();
    assert_eq!((got.first, got.count), (first, count as u64), "{}", m.ctx);
    assert_eq!(got.token.end(), first + count as u64, "{}", m.ctx);
    m.leaves.extend_from_slice(&leaves);
    m.tokens.push(got.token);
    if m.tokens.len() > KEEP_TOKENS {
        m.tokens.remove(0);
    }
}

fn step(store: Store, m: &mut Model, op: Op) -> Store {
    let start = m.fs.op_count();
    let store = apply(store, m, op);
    // A crash starts a new file system and sets its own mark.
    if !matches!(op, Op::CrashReopen { .. }) && m.fs.op_count() > start {
        m.mark = start;
    }
    store
}

fn apply(store: Store, m: &mut Model, op: Op) -> Store {
    let size = m.size();
    match op {
        Op::Append => append(&store, m, 1),
        Op::AppendBatch(count) => append(&store, m, count),
        Op::Wait(pick) => {
            if let Some(i) = m.tokens.len().checked_sub(1 + pick as usize) {
                let token = m.tokens[i].clone();
                token
                    .wait(WAIT)
                    .unwrap_or_else(|e| panic!("{}: wait: {e}", m.ctx));
                assert!(token.is_durable().unwrap(), "{}", m.ctx);
                assert!(store.durable_size() >= token.end(), "{}", m.ctx);
                m.acknowledge(token.end());
            }
        }
        Op::Flush => {
            let durable = store
                .flush()
                .unwrap_or_else(|e| panic!("{}: flush: {e}", m.ctx));
            assert_eq!(durable, size, "{}: flush", m.ctx);
            m.acknowledge(durable);
        }
        Op::Checkpoint => {
            let (number, covered) = m.checkpoint();
            let written = store
                .checkpoint()
                .unwrap_or_else(|e| panic!("{}: checkpoint: {e}", m.ctx));
            match written {
                None => assert_eq!(covered, size, "{}: no checkpoint written", m.ctx),
                Some(meta) => {
                    assert_ne!(covered, size, "{}: a checkpoint of nothing new", m.ctx);
                    assert_eq!((meta.number, meta.size), (number + 1, size), "{}", m.ctx);
                    // Each level's final length and last node, against the
                    // reference levels.
                    let levels = reference::levels(
                        m.setup.arity(),
                        m.setup.hash,
                        &m.leaves[..size as usize],
                    );
                    let want: Vec<(u64, Hash)> = levels
                        .iter()
                        .map(|level| (level.len() as u64 - 1, *level.last().unwrap()))
                        .collect();
                    assert_eq!(meta.levels, want, "{}: checkpoint levels", m.ctx);
                    m.checkpoints.push((m.fs.op_count(), number + 1, size));
                    m.coverage.checkpoints += 1;
                }
            }
            m.acknowledge(size);
            assert_eq!(store.durable_size(), size, "{}", m.ctx);
            m.tier_after_checkpoint(size);
        }
        Op::Snapshot => {
            let snapshot = store.snapshot();
            let mut samples = Vec::new();
            if size > 0 {
                for i in [0, m.rng.gen_range(0..size), size - 1] {
                    samples.push((i, m.leaves[i as usize]));
                }
            }
            let head = m.head(size);
            if m.kept.len() >= KEEP_SNAPSHOTS {
                m.kept.remove(0);
            }
            m.kept.push(Kept {
                snapshot,
                head,
                samples,
            });
        }
        Op::CloseReopen { verify } => return reopen_same(store, m, true, verify),
        Op::DropReopen { verify } => return reopen_same(store, m, false, verify),
        Op::CrashReopen {
            kind,
            at,
            seed,
            verify,
        } => return crash_and_reopen(store, m, kind, at, seed, verify),
    }
    check(&store, m, false);
    store
}

/// Runs one case on a fresh [`SimFs`]: every operation, then a final close
/// and reopen. Returns what it exercised.
fn run_case(setup: Setup, ops: &[Op]) -> Coverage {
    run_case_on(setup, ops, false)
}

/// [`run_case`], with syncs that lie after creation if `lying_sync` (the
/// canary).
fn run_case_on(setup: Setup, ops: &[Op], lying_sync: bool) -> Coverage {
    let fs = SimFs::new();
    let store = Store::create(
        Arc::new(fs.clone()) as Arc<dyn Fs>,
        Path::new(DB),
        setup.config(false),
    )
    .unwrap();
    fs.set_lying_sync(lying_sync);
    let mut m = Model::new(setup, fs);
    check(&store, &mut m, true);
    let mut store = store;
    for (i, &op) in ops.iter().enumerate() {
        m.ctx = format!("{setup:?}, op {i} {op:?}");
        store = step(store, &mut m, op);
        m.coverage.ops += 1;
    }
    m.ctx = format!("{setup:?}, final close and reopen");
    let store = reopen_same(store, &mut m, true, true);
    store.close().unwrap();
    // Snapshots outlive every store they came from.
    for kept in &m.kept {
        assert_eq!(kept.snapshot.head(), kept.head);
    }
    m.coverage
}

// ---------------------------------------------------------------------------
// The tests
// ---------------------------------------------------------------------------

fn cases() -> u32 {
    match std::env::var("CAIRN_MODEL_CASES") {
        Ok(value) => value
            .trim()
            .parse()
            .unwrap_or_else(|e| panic!("CAIRN_MODEL_CASES={value}: {e}")),
        Err(_) => 128,
    }
}

/// Runs `cases` cases of `strategy`; fails with proptest's minimal case.
fn run(name: &str, cases: u32, strategy: impl Strategy<Value = (Setup, Vec<Op>)>) -> Coverage {
    let started = std::time::Instant::now();
    let mut runner = TestRunner::new(ProptestConfig {
        cases,
        source_file: Some(file!()),
        ..ProptestConfig::default()
    });
    let total = RefCell::new(Coverage::default());
    let result = runner.run(&strategy, |(setup, ops)| {
        let coverage = run_case(setup, &ops);
        total.borrow_mut().merge(&coverage);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{name}: {e}");
    }
    let total = total.into_inner();
    eprintln!(
        "{name}: {} cases ({} passing runs incl. shrinking), {} ops, max {} leaves over {} log files, {} checkpoints, {} reopens, {} crashes {:?} ({} mid-operation, {} lost unacknowledged leaves, {} kept more than acknowledged), tiered by checkpoints {:?}, at open {:?}, {:.1} s",
        cases,
        total.cases,
        total.ops,
        total.max_size,
        total.log_files,
        total.checkpoints,
        total.reopens,
        total.crashes(),
        total.crashes,
        total.mid_operation,
        total.lost_unacknowledged,
        total.kept_unacknowledged,
        total.tiered_by_checkpoint,
        total.tiered_at_open,
        started.elapsed().as_secs_f64(),
    );
    total
}

#[test]
fn random_operation_sequences_match_the_reference_model() {
    let cases = cases();
    let total = run("blake3", cases, small_case());
    if cases >= 32 {
        // The cases are the ones asked for: crashes in every mode, in the
        // middle of operations, losing and keeping unacknowledged leaves,
        // over several log files.
        assert!(total.crashes.len() >= 6, "crash modes: {:?}", total.crashes);
        assert!(total.mid_operation > 0);
        assert!(total.lost_unacknowledged > 0);
        assert!(total.kept_unacknowledged > 0);
        assert!(total.log_files >= 3);
    }
}

#[test]
fn random_operation_sequences_with_tiering_match_the_reference_model() {
    run("tiering", (cases() / 8).max(1), tiering_case());
}

#[test]
fn random_poseidon_operation_sequences_match_the_reference_model() {
    run("poseidon", (cases() / 8).max(1), poseidon_case());
}

/// One fixed sequence on N = 2 with log files of one segment that must tier
/// level 0 and level 1, by a checkpoint and at open, keep a snapshot taken
/// before tiering intact, and recover from power losses in the middle of a
/// tiering checkpoint and of a group commit that crosses a log file.
#[test]
fn a_scripted_sequence_tiers_levels_0_and_1_and_survives_crashes() {
    let setup = Setup {
        n: 2,
        hash: HashKind::Blake3,
        log_shift: 16,
        tier_below: 2,
        seed: 0x7e57,
    };
    let crash = |kind, at| Op::CrashReopen {
        kind,
        at,
        seed: 5,
        verify: true,
    };
    let ops = [
        Op::AppendBatch(2 * SEGMENT_LEN + 700),
        Op::Snapshot,
        Op::Checkpoint,
        Op::AppendBatch(1500),
        Op::Wait(0),
        Op::Append,
        Op::Checkpoint,
        // Mid checkpoint: the level files are written, the checkpoint may
        // or may not be published.
        crash(CrashKind::DropUnsynced, CrashPoint::InLastOp(7)),
        Op::Snapshot,
        Op::AppendBatch(SEGMENT_LEN),
        Op::Checkpoint,
        crash(
            CrashKind::Tear {
                page: true,
                keep: 3,
            },
            CrashPoint::InLastOp(2),
        ),
        Op::AppendBatch(2000),
        // Crosses from log file 3 into file 4.
        Op::AppendBatch(SEGMENT_LEN),
        Op::Flush,
        crash(CrashKind::RandomSectors, CrashPoint::InLastOp(1)),
        Op::CloseReopen { verify: false },
        Op::AppendBatch(10),
        Op::DropReopen { verify: true },
        Op::Checkpoint,
    ];
    let coverage = run_case(setup, &ops);
    eprintln!("{coverage:?}");
    assert!(
        coverage.tiered_by_checkpoint.len() >= 2
            && coverage.tiered_by_checkpoint[..2].iter().all(|&s| s >= 1),
        "a checkpoint tiered levels 0 and 1: {:?}",
        coverage.tiered_by_checkpoint
    );
    assert!(
        coverage.tiered_at_open.len() >= 2 && coverage.tiered_at_open[..2].iter().all(|&s| s >= 1),
        "open mapped levels 0 and 1: {:?}",
        coverage.tiered_at_open
    );
    assert!(coverage.crashes() == 3 && coverage.mid_operation == 3);
    assert!(coverage.log_files >= 4);
}

/// The canary: with syncs that lie, a power loss after an acknowledged
/// flush loses acknowledged leaves, and the model test must say so. A test
/// that cannot fail proves nothing.
#[test]
fn canary_with_lying_fsync_the_model_finds_lost_acknowledged_leaves() {
    let setup = Setup {
        n: 4,
        hash: HashKind::Blake3,
        log_shift: 10,
        tier_below: 1,
        seed: 3,
    };
    let ops = [
        Op::AppendBatch(1500),
        Op::Flush,
        Op::CrashReopen {
            kind: CrashKind::DropUnsynced,
            at: CrashPoint::Now,
            seed: 0,
            verify: false,
        },
    ];
    // Honest syncs: nothing lost.
    run_case(setup, &ops);
    let caught = std::panic::catch_unwind(|| run_case_on(setup, &ops, true))
        .expect_err("lying syncs lost nothing the model noticed");
    let message = caught.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        message.contains("recovered 0 leaves; 1500 were acknowledged"),
        "{message}"
    );
}
