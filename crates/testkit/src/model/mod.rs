//! The operation-sequence model: random sequences of appends (plain,
//! tagged with a block, empty blocks, refused repeats of a block, values
//! a rollback removed appended again, batches holding a durable
//! duplicate), rollbacks (by size: between the finalized size and the
//! size, below finality, past the end; by block), finalizations (by size
//! and by block), acknowledgement waits, flushes, checkpoints, snapshots,
//! closes, drops and power losses, applied in lockstep to a naive
//! reference (`reference.rs`) and to one implementation: the
//! storage engine (`cairn_store::Store`) or the database facade
//! (`cairn_db::Database`) of any kind (lean, fixed-depth `imt`, indexed).
//! Operations a kind cannot do are asked of the capability table
//! (`cairn_db::Operation`) and must be refused with its error.
//!
//! After every operation: the size, the durable size against what was
//! acknowledged, the finalized size, the served head (the store's whole
//! tree, a database's durable one) against the reference root; leaves or
//! lookups (present, removed and never-used values; the set checked
//! against the tree); membership proofs, absence proofs (indexed),
//! consistency proofs and proofs at earlier heads (append-only); the tags
//! with their roots, head and root lookups, the recent roots' window and
//! rolled-back roots (block tags); the store's tokens, figures, tiering
//! and kept snapshots. Every reopen compares every leaf.
//!
//! A power loss (`power.rs`) builds the state a crash leaves on the
//! simulated file system at a boundary now, inside the last operation or
//! anywhere since the file system began, in every crash mode. The
//! recovered tree must be a prefix of the history line current at that
//! boundary (or, inside a rollback, of the line the rollback makes: before
//! or after it, never in between), no shorter than what was acknowledged
//! by then and no longer than what was appended; the tags a prefix of the
//! line's, at least every one below the recovered size and every
//! acknowledged one; the finalized size between what was acknowledged and
//! what was asked for; the store's checkpoint at least the last one
//! published.
//!
//! Case counts: [`cases`] reads `CAIRN_MODEL_CASES` (a multiplier of the
//! default counts, in percent; `PROPTEST_RNG_SEED` fixes the cases).

mod power;
mod reference;
mod run;
mod subject;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::time::Instant;

use cairn_core::level::SEGMENT_LEN;
use cairn_core::{Arity, HashKind, TreeConfig, TreeKind};
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestRunner};

pub use power::{CrashKind, CrashPoint};
pub use subject::Target;

use power::{crash_kind, crash_point};
use run::Run;

/// The tree kinds a run can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A LeanIMT.
    Lean,
    /// A fixed-depth tree (zk-kit IMT) deep enough for 2^20 leaves, with a
    /// zero value that is not all zeros.
    Fixed,
    /// An indexed tree (a database only).
    Indexed,
}

/// What a case runs on.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    /// The implementation.
    pub target: Target,
    /// The tree kind.
    pub kind: Kind,
    /// The arity.
    pub n: u64,
    /// The hash.
    pub hash: HashKind,
    /// Leaves per log file: `1 << log_shift`.
    pub log_shift: u8,
    /// Levels below this one are tiered to mappings at checkpoints.
    pub tier_below: u32,
    /// Finality only by `finalize` (else every checkpoint finalizes).
    pub explicit: bool,
    /// Recent roots the store keeps for root lookups.
    pub root_window: usize,
    /// When a database rewrites its nullifier set's file.
    pub set_rewrite_percent: u32,
    /// Values and the checks' picks come from it.
    pub seed: u64,
}

impl Setup {
    /// The arity.
    pub fn arity(&self) -> Arity {
        Arity::new(self.n).expect("a valid arity")
    }

    /// The tree's configuration.
    pub fn tree(&self) -> TreeConfig {
        let tree = TreeConfig::new(self.arity(), self.hash);
        match self.kind {
            Kind::Lean => tree,
            Kind::Fixed => {
                let depth = (20f64 / (self.n as f64).log2()).ceil() as u32;
                tree.with_kind(TreeKind::Fixed {
                    depth,
                    zero: crate::leaf(u64::MAX, 0),
                })
            }
            Kind::Indexed => tree.with_kind(TreeKind::Indexed),
        }
    }

    /// Leaves before the first value: an indexed tree's guard.
    pub fn offset(&self) -> u64 {
        u64::from(self.kind == Kind::Indexed)
    }

    fn kind_name(&self) -> &'static str {
        self.tree().kind.name()
    }
}

/// One operation of a case.
#[derive(Clone, Copy, Debug)]
#[allow(missing_docs)]
pub enum Op {
    /// Fresh values, all or nothing.
    Append(usize),
    /// A tagged append: `count` values (0: an empty block), the block
    /// number `gap` after the last one (0: a repeat, refused), a block
    /// hash or not.
    Tagged {
        count: usize,
        gap: u8,
        hash: bool,
    },
    /// The values the last rollback removed, appended again.
    Reappend,
    /// A batch holding a durable value (refused by a database).
    Duplicate(u32),
    Truncate(u32),
    TruncateToBlock(u32),
    Finalize(u32),
    FinalizeToBlock(u32),
    /// Waits on a kept acknowledgement: the newest for 0, older ones else.
    Wait(u8),
    Flush,
    Checkpoint,
    /// Keeps a store snapshot for the isolation checks.
    Snapshot,
    /// `close()`, then open on the same file system.
    CloseReopen {
        verify: bool,
    },
    /// Dropped without `close()` (it flushes what it can), then opened.
    DropReopen {
        verify: bool,
    },
    /// A power loss, then an open on what it left.
    CrashReopen {
        kind: CrashKind,
        at: CrashPoint,
        seed: u64,
        verify: bool,
    },
}

fn count(max: usize) -> impl Strategy<Value = usize> {
    prop_oneof![
        4 => 1usize..=16,
        3 => 17usize..=300.min(max),
        1 => (300.min(max))..=max,
    ]
}

/// One operation, batches of up to `max` values.
pub fn op(max: usize) -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => count(max).prop_map(Op::Append),
        12 => (
            prop_oneof![1 => Just(0usize), 6 => count(max)],
            prop_oneof![1 => Just(0u8), 8 => Just(1u8), 2 => 2u8..=5],
            any::<bool>()
        )
            .prop_map(|(count, gap, hash)| Op::Tagged { count, gap, hash }),
        2 => Just(Op::Reappend),
        2 => any::<u32>().prop_map(Op::Duplicate),
        6 => any::<u32>().prop_map(Op::Truncate),
        5 => any::<u32>().prop_map(Op::TruncateToBlock),
        2 => any::<u32>().prop_map(Op::Finalize),
        2 => any::<u32>().prop_map(Op::FinalizeToBlock),
        7 => any::<u8>().prop_map(|pick| Op::Wait(pick % 6)),
        3 => Just(Op::Flush),
        4 => Just(Op::Checkpoint),
        3 => Just(Op::Snapshot),
        2 => any::<bool>().prop_map(|verify| Op::CloseReopen { verify }),
        2 => any::<bool>().prop_map(|verify| Op::DropReopen { verify }),
        8 => (crash_kind(), crash_point(4), any::<u64>(), any::<bool>()).prop_map(
            |(kind, at, seed, verify)| Op::CrashReopen { kind, at, seed, verify }
        ),
    ]
}

fn setup(target: Target, kind: Kind, hash: HashKind) -> impl Strategy<Value = Setup> {
    (
        prop_oneof![Just(2u64), Just(3), Just(4), Just(16)],
        any::<bool>(),
        prop_oneof![3 => Just(4096usize), 1 => Just(3)],
        1u32..=3,
        prop_oneof![Just(0u32), Just(10), Just(50)],
        any::<u64>(),
    )
        .prop_map(
            move |(n, explicit, root_window, tier_below, set_rewrite_percent, seed)| Setup {
                target,
                kind,
                n,
                hash,
                log_shift: 10,
                tier_below,
                explicit,
                root_window,
                set_rewrite_percent,
                seed,
            },
        )
}

/// BLAKE3, log files of 1,024 leaves (batches of up to 2,500 cross them),
/// up to 70 operations.
pub fn small_case(target: Target, kind: Kind) -> impl Strategy<Value = (Setup, Vec<Op>)> {
    (
        setup(target, kind, HashKind::Blake3),
        prop::collection::vec(op(2500), 1..70),
    )
}

/// Poseidon (canonical leaves), small batches: the naive reference hashes
/// every node of every size it is asked about.
pub fn poseidon_case(target: Target, kind: Kind) -> impl Strategy<Value = (Setup, Vec<Op>)> {
    (
        setup(target, kind, HashKind::Poseidon),
        prop::collection::vec(op(48), 1..28),
    )
}

/// Log files of one segment (2^16 leaves) or two, and a first batch of
/// more than one segment (two for N = 2, whose level 1 then holds a
/// complete segment too), checkpointed, finalized when finality is
/// explicit (above one segment, so that level 0 is mapped, or at most at
/// one, so that rollbacks may reach the file boundary); `tier_below` 1, 2
/// or 64.
pub fn tiering_case(target: Target, kind: Kind) -> impl Strategy<Value = (Setup, Vec<Op>)> {
    (
        setup(target, kind, HashKind::Blake3),
        prop_oneof![3 => Just(2u64), 1 => Just(3), 1 => Just(4)],
        prop_oneof![3 => Just(16u8), 1 => Just(17)],
        prop_oneof![Just(1u32), Just(2), Just(64)],
        1usize..3000,
        (any::<bool>(), any::<u32>(), any::<bool>()),
        prop::collection::vec(op(2000), 1..20),
    )
        .prop_map(
            |(setup, n, log_shift, tier_below, extra, (tagged, pick, map), mut ops)| {
                let setup = Setup {
                    n,
                    log_shift,
                    tier_below,
                    root_window: 4096,
                    ..setup
                };
                let segments = if n == 2 { 2 } else { 1 };
                let first = segments * SEGMENT_LEN + extra;
                let mut prefix = vec![if tagged {
                    Op::Tagged {
                        count: first,
                        gap: 1,
                        hash: true,
                    }
                } else {
                    Op::Append(first)
                }];
                prefix.extend([Op::Snapshot, Op::Checkpoint]);
                if setup.explicit {
                    let target = if map {
                        SEGMENT_LEN as u32 + 1 + pick % extra as u32
                    } else {
                        pick % (SEGMENT_LEN as u32 + 1)
                    };
                    prefix.push(Op::Finalize(8 * target + 2));
                }
                ops.splice(0..0, prefix);
                (setup, ops)
            },
        )
}

/// What runs exercised, summed over cases.
#[derive(Debug, Default, Clone)]
#[allow(missing_docs)]
pub struct Coverage {
    pub cases: usize,
    pub ops: usize,
    pub max_size: u64,
    pub log_files: u64,
    pub tags: usize,
    pub checkpoints: usize,
    pub reopens: usize,
    /// Rollbacks that wrote, memory-only ones, no-ops, refused operations.
    pub durable_rollbacks: usize,
    pub memory_rollbacks: usize,
    pub no_op_rollbacks: usize,
    pub refused: usize,
    /// Operations the subject's kind lacks, refused as such.
    pub unsupported: usize,
    /// Rollbacks whose target and old size are in different log files.
    pub across_files: usize,
    pub rolled_back_waits: usize,
    pub finalizes: usize,
    pub reappends: usize,
    pub duplicates: usize,
    pub absence_proofs: usize,
    /// Crashes by mode.
    pub crashes: BTreeMap<&'static str, usize>,
    pub mid_operation: usize,
    pub lost_unacknowledged: usize,
    pub kept_unacknowledged: usize,
    /// Crashes inside a rollback, and whether they clearly opened before
    /// or after it.
    pub inside_rollback: usize,
    pub opened_before: usize,
    pub opened_after: usize,
    /// The most level-0 segments mapped, and per level the most segments
    /// tiered by checkpoints and at open.
    pub tiered: usize,
    pub tiered_by_checkpoint: Vec<usize>,
    pub tiered_at_open: Vec<usize>,
}

impl Coverage {
    fn merge(&mut self, o: &Coverage) {
        self.cases += o.cases;
        self.ops += o.ops;
        self.max_size = self.max_size.max(o.max_size);
        self.log_files = self.log_files.max(o.log_files);
        self.tags += o.tags;
        self.checkpoints += o.checkpoints;
        self.reopens += o.reopens;
        self.durable_rollbacks += o.durable_rollbacks;
        self.memory_rollbacks += o.memory_rollbacks;
        self.no_op_rollbacks += o.no_op_rollbacks;
        self.refused += o.refused;
        self.unsupported += o.unsupported;
        self.across_files += o.across_files;
        self.rolled_back_waits += o.rolled_back_waits;
        self.finalizes += o.finalizes;
        self.reappends += o.reappends;
        self.duplicates += o.duplicates;
        self.absence_proofs += o.absence_proofs;
        for (mode, count) in &o.crashes {
            *self.crashes.entry(mode).or_default() += count;
        }
        self.mid_operation += o.mid_operation;
        self.lost_unacknowledged += o.lost_unacknowledged;
        self.kept_unacknowledged += o.kept_unacknowledged;
        self.inside_rollback += o.inside_rollback;
        self.opened_before += o.opened_before;
        self.opened_after += o.opened_after;
        self.tiered = self.tiered.max(o.tiered);
        for (into, from) in [
            (&mut self.tiered_by_checkpoint, &o.tiered_by_checkpoint),
            (&mut self.tiered_at_open, &o.tiered_at_open),
        ] {
            if into.len() < from.len() {
                into.resize(from.len(), 0);
            }
            for (a, &b) in into.iter_mut().zip(from) {
                *a = (*a).max(b);
            }
        }
    }

    /// Crashes in all modes.
    pub fn crash_count(&self) -> usize {
        self.crashes.values().sum()
    }
}

/// Runs one case: every operation in lockstep, then a final close and
/// reopen. Syncs lie from creation on if `lying_sync` (the canary).
pub fn run_case(setup: Setup, ops: &[Op], lying_sync: bool) -> Coverage {
    assert!(
        setup.target.serves(setup.tree().kind),
        "{setup:?}: the store holds append-only trees"
    );
    let (mut run, mut subject) = Run::new(setup, lying_sync);
    for (i, &op) in ops.iter().enumerate() {
        run.set_ctx(format!("{setup:?}, op {i} {op:?}"));
        subject = run.step(subject, op);
    }
    run.finish(subject)
}

/// `default` scaled by `CAIRN_MODEL_CASES` (percent, 100 unless set), at
/// least 1.
pub fn cases(default: u32) -> u32 {
    let percent = crate::env_u64("CAIRN_MODEL_CASES", 100);
    ((u64::from(default) * percent / 100).max(1)) as u32
}

/// Runs `cases` cases of `strategy`; fails with proptest's minimal case.
pub fn run(name: &str, cases: u32, strategy: impl Strategy<Value = (Setup, Vec<Op>)>) -> Coverage {
    let started = Instant::now();
    let mut runner = TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        // A case takes milliseconds; shrinking a long sequence takes many.
        max_shrink_iters: 1024,
        ..ProptestConfig::default()
    });
    let total = RefCell::new(Coverage::default());
    let result = runner.run(&strategy, |(setup, ops)| {
        let coverage = run_case(setup, &ops, false);
        total.borrow_mut().merge(&coverage);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{name}: {e}");
    }
    let total = total.into_inner();
    eprintln!(
        "{name}: {cases} cases, {:.1} s, {total:?}",
        started.elapsed().as_secs_f64()
    );
    total
}
