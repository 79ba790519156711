//! Issue 14's model test for the store: random sequences of tagged appends
//! (fresh leaves, increasing block numbers, empty blocks, block hashes,
//! refused repeats), untagged appends, truncations (to a size between the
//! finalized size and the size, by block, below finality, past the end),
//! re-appends of the values just removed, finalizations (by size and by
//! block), checkpoints, flushes, token waits, snapshots, closes, drops and
//! power losses ([`SimFs`], every [`CrashMode`], at a boundary now, inside
//! the last operation or anywhere since the file system began), checked
//! after every operation against a reference model.
//!
//! The model is a list of *lines*: the leaves and block tags the store must
//! hold, as they were appended, and a new line for every rollback (the
//! leaves below its target and the tags it keeps), with the trace
//! boundaries of the operation that made it. Acknowledgements (`wait`,
//! `flush`, `checkpoint`, `finalize`, `close`, `durable_size()`) are
//! `(boundary, leaves, tags)` on a line; a rollback carries them over to
//! its line cut to what it keeps.
//!
//! After every operation: size; head against the naive reference root
//! (`cairn_testkit::reference`); sampled leaves; membership proofs; the
//! tags (`heads()`, block, hash, size and root against the reference);
//! `head_at_block`; `size_of_root` of every tagged root, of the recent
//! appends' roots (the window mirrored exactly) and `None` (or a size with
//! that root again) for rolled-back roots; `finalized_size` and `stats()`;
//! the durable size against the acknowledgements; every kept token
//! (`RolledBack` for rolled-back appends, with the end it waited for);
//! mapped segments only below the finalized size; and every kept snapshot
//! (its head, leaves and a proof) across later rollbacks, re-appends,
//! checkpoints, tiering, closes and crashes.
//!
//! A power loss at boundary `k` opens either as the line that was current
//! at `k` or, if `k` lies inside a rollback, as the line that rollback
//! makes ("before" or "after" it, never in between): the recovered leaves
//! are a prefix of that line no shorter than what was acknowledged on it
//! by `k` (so no acknowledged leaf below a rollback target and no finalized
//! leaf is lost) and no longer than what was appended by `k`; the recovered
//! tags are a prefix of the line's, at most to the recovered size, at least
//! every tag below it and every acknowledged one; the finalized size lies
//! between the acknowledged one and the largest asked for by `k`.
//!
//! Tests (`CAIRN_ROLLBACK_CASES=<n>` sets the first's case count, the
//! second gets n / 16 (32 by default); proptest's `PROPTEST_RNG_SEED` fixes the cases):
//! - `random_rollback_sequences_match_the_reference_model` (512): N = 2, 3,
//!   4, 16, log files of 1,024 leaves (so rollbacks cross files), explicit
//!   or default finality, root windows of 4,096 or 3, up to 70 operations.
//! - `random_rollback_sequences_with_tiering_match_the_reference_model`
//!   (32): log files of one 2 MiB segment (2^16 leaves), a first batch of
//!   more than one segment, checkpointed (and finalized), `tier_below` 1,
//!   so that level 0's first segment is mapped and rollbacks land in the
//!   next file, at its boundary or are refused below it.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_core::level::SEGMENT_LEN;
use cairn_core::{Arity, Hash, HashKind, Snapshot, TreeConfig, TreeHead};
use cairn_testkit::sim::SimFs;
use cairn_store::{
    BlockTag, CheckpointPolicy, FLAG_EXPLICIT_FINALITY, Fs, RootAt, Store, StoreConfig, StoreError,
    TaggedHead, Token,
};
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
const KEEP_TOKENS: usize = 16;
const KEEP_SNAPSHOTS: usize = 4;
/// Rolled-back roots kept for the `size_of_root` checks.
const KEEP_GONE: usize = 32;

// ---------------------------------------------------------------------------
// Cases
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
struct Setup {
    n: u64,
    log_shift: u8,
    explicit: bool,
    tier_below: u32,
    root_window: usize,
    seed: u64,
}

impl Setup {
    fn arity(&self) -> Arity {
        Arity::new(self.n).unwrap()
    }

    fn config(&self, verify_on_open: bool) -> StoreConfig {
        StoreConfig {
            log_shift: self.log_shift,
            flush_interval: None,
            checkpoint: CheckpointPolicy::default(),
            tier_below: self.tier_below,
            verify_on_open,
            flags: if self.explicit {
                FLAG_EXPLICIT_FINALITY
            } else {
                0
            },
            root_window: self.root_window,
            ..StoreConfig::new(TreeConfig::new(self.arity(), HashKind::Blake3))
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Append(usize),
    /// A tagged append: `count` leaves (0: an empty block), the block
    /// number `gap` after the last one (0: a repeat, refused), a hash or not.
    Tagged {
        count: usize,
        gap: u8,
        hash: bool,
    },
    /// The leaves the last rollback removed, appended again.
    Reappend,
    Truncate(u32),
    TruncateToBlock(u32),
    Finalize(u32),
    FinalizeToBlock(u32),
    Wait(u8),
    Flush,
    Checkpoint,
    Snapshot,
    CloseReopen {
        verify: bool,
    },
    DropReopen {
        verify: bool,
    },
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

fn op(max: usize) -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => count(max).prop_map(Op::Append),
        14 => (
            prop_oneof![1 => Just(0usize), 6 => count(max)],
            prop_oneof![1 => Just(0u8), 8 => Just(1u8), 2 => 2u8..=5],
            any::<bool>()
        )
            .prop_map(|(count, gap, hash)| Op::Tagged { count, gap, hash }),
        2 => Just(Op::Reappend),
        7 => any::<u32>().prop_map(Op::Truncate),
        6 => any::<u32>().prop_map(Op::TruncateToBlock),
        2 => any::<u32>().prop_map(Op::Finalize),
        2 => any::<u32>().prop_map(Op::FinalizeToBlock),
        5 => any::<u8>().prop_map(|pick| Op::Wait(pick % 6)),
        3 => Just(Op::Flush),
        3 => Just(Op::Checkpoint),
        3 => Just(Op::Snapshot),
        1 => any::<bool>().prop_map(|verify| Op::CloseReopen { verify }),
        1 => any::<bool>().prop_map(|verify| Op::DropReopen { verify }),
        8 => (crash_kind(), crash_point(4), any::<u64>(), any::<bool>()).prop_map(
            |(kind, at, seed, verify)| Op::CrashReopen { kind, at, seed, verify }
        ),
    ]
}

fn small_case() -> impl Strategy<Value = (Setup, Vec<Op>)> {
    (
        prop_oneof![Just(2u64), Just(3), Just(4), Just(16)],
        any::<bool>(),
        prop_oneof![3 => Just(4096usize), 1 => Just(3)],
        any::<u64>(),
        prop::collection::vec(op(2500), 1..70),
    )
        .prop_map(|(n, explicit, root_window, seed, ops)| {
            let setup = Setup {
                n,
                log_shift: 10,
                explicit,
                tier_below: 1,
                root_window,
                seed,
            };
            (setup, ops)
        })
}

/// One segment per log file; a first (tagged or not) batch of more than
/// one segment, checkpointed, which maps level 0's first segment once
/// finalized (by the checkpoint by default, by `finalize` otherwise).
fn tiering_case() -> impl Strategy<Value = (Setup, Vec<Op>)> {
    (
        prop_oneof![Just(2u64), Just(3), Just(4)],
        any::<bool>(),
        any::<u64>(),
        1usize..4000,
        any::<bool>(),
        any::<u32>(),
        any::<bool>(),
        prop::collection::vec(op(2000), 1..18),
    )
        .prop_map(|(n, explicit, seed, extra, tagged, pick, map, mut ops)| {
            let setup = Setup {
                n,
                log_shift: 16,
                explicit,
                tier_below: 1,
                root_window: 4096,
                seed,
            };
            let first = SEGMENT_LEN + extra;
            let mut prefix = vec![if tagged {
                Op::Tagged {
                    count: first,
                    gap: 1,
                    hash: true,
                }
            } else {
                Op::Append(first)
            }];
            prefix.push(Op::Snapshot);
            prefix.push(Op::Checkpoint);
            if explicit {
                // Above one segment (mapped; rollbacks stay in log file
                // 1), or at most one (nothing mapped; rollbacks may reach
                // the file boundary).
                let target = if map {
                    SEGMENT_LEN as u32 + 1 + pick % extra as u32
                } else {
                    pick % (SEGMENT_LEN as u32 + 1)
                };
                prefix.push(Op::Finalize(8 * target + 2));
            }
            ops.splice(0..0, prefix);
            (setup, ops)
        })
}

// ---------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Tag {
    block: u64,
    hash: Option<Hash>,
    size: u64,
}

/// The leaves and tags of one line of history, and what is known of them
/// at each trace boundary.
#[derive(Clone, Debug)]
struct Line {
    leaves: Vec<Hash>,
    tags: Vec<Tag>,
    /// `(boundary, leaves, tags)` appended by that boundary.
    grown: Vec<(usize, u64, usize)>,
    /// `(boundary, leaves, tags)` acknowledged from that boundary on.
    acks: Vec<(usize, u64, usize)>,
    /// The first and last boundary of the operation that made this line.
    born: (usize, usize),
    /// Naive reference roots by size.
    roots: BTreeMap<u64, Option<Hash>>,
}

fn at_boundary(list: &[(usize, u64, usize)], k: usize) -> (u64, usize) {
    let i = list.partition_point(|&(at, _, _)| at <= k);
    i.checked_sub(1).map_or((0, 0), |i| (list[i].1, list[i].2))
}

impl Line {
    fn root(&mut self, arity: Arity, size: u64) -> Option<Hash> {
        let leaves = &self.leaves;
        *self
            .roots
            .entry(size)
            .or_insert_with(|| reference::root(arity, HashKind::Blake3, &leaves[..size as usize]))
    }

    fn grow(&mut self, at: usize) {
        let entry = (at, self.leaves.len() as u64, self.tags.len());
        if self.grown.last().is_some_and(|&(b, _, _)| b == at) {
            *self.grown.last_mut().unwrap() = entry;
        } else {
            self.grown.push(entry);
        }
    }

    fn acknowledge(&mut self, at: usize, leaves: u64, tags: usize) {
        let (l, t) = self.acks.last().map_or((0, 0), |&(_, l, t)| (l, t));
        if leaves > l || tags > t {
            self.acks.push((at, leaves.max(l), tags.max(t)));
        }
    }

    fn tagged(&self, block: u64) -> Option<Tag> {
        let at = self.tags.partition_point(|t| t.block <= block);
        at.checked_sub(1).map(|i| self.tags[i])
    }

    fn first_block_at(&self, size: u64) -> Option<u64> {
        self.tags.iter().find(|t| t.size == size).map(|t| t.block)
    }
}

struct KeptToken {
    token: Token,
    end: u64,
    /// The index of its block tag, if tagged.
    tag: Option<usize>,
    rolled_back: bool,
}

struct Kept {
    snapshot: Arc<Snapshot>,
    head: TreeHead,
    samples: Vec<(u64, Hash)>,
}

#[derive(Debug, Default, Clone)]
struct Coverage {
    cases: usize,
    ops: usize,
    max_size: u64,
    tags: usize,
    /// Rollbacks that wrote (reached durable leaves or tags), memory-only
    /// ones, no-ops, refused ones.
    durable_rollbacks: usize,
    memory_rollbacks: usize,
    no_op_rollbacks: usize,
    refused: usize,
    /// Rollbacks whose target and old size are in different log files.
    across_files: usize,
    rolled_back_tokens: usize,
    finalizes: usize,
    reappends: usize,
    crashes: BTreeMap<&'static str, usize>,
    /// Crashes at a boundary inside a rollback, and what they opened as.
    inside_rollback: usize,
    opened_before: usize,
    opened_after: usize,
    reopens: usize,
    tiered: usize,
}

impl Coverage {
    fn merge(&mut self, o: &Coverage) {
        self.cases += o.cases;
        self.ops += o.ops;
        self.max_size = self.max_size.max(o.max_size);
        self.tags += o.tags;
        self.durable_rollbacks += o.durable_rollbacks;
        self.memory_rollbacks += o.memory_rollbacks;
        self.no_op_rollbacks += o.no_op_rollbacks;
        self.refused += o.refused;
        self.across_files += o.across_files;
        self.rolled_back_tokens += o.rolled_back_tokens;
        self.finalizes += o.finalizes;
        self.reappends += o.reappends;
        for (mode, count) in &o.crashes {
            *self.crashes.entry(mode).or_default() += count;
        }
        self.inside_rollback += o.inside_rollback;
        self.opened_before += o.opened_before;
        self.opened_after += o.opened_after;
        self.reopens += o.reopens;
        self.tiered = self.tiered.max(o.tiered);
    }
}

struct Model {
    setup: Setup,
    lines: Vec<Line>,
    counter: u64,
    finalized: u64,
    /// `(boundary, finalized, 0)`: acknowledged finalized sizes.
    fin_acks: Vec<(usize, u64, usize)>,
    /// `(boundary, finalized, 0)`: the largest finalized size asked for
    /// by an operation started by then.
    fin_asked: Vec<(usize, u64, usize)>,
    /// Ends of the recent appends, as `Heads` keeps them.
    recent: std::collections::VecDeque<u64>,
    /// Roots rolled back (they may come back only as the root of the same
    /// leaves again).
    gone: Vec<Hash>,
    /// The leaves the last rollback removed.
    removed: Vec<Hash>,
    tokens: Vec<KeptToken>,
    kept: Vec<Kept>,
    fs: SimFs,
    floor: usize,
    mark: usize,
    rng: ChaCha8Rng,
    ctx: String,
    coverage: Coverage,
}

impl Model {
    fn new(setup: Setup, fs: SimFs) -> Model {
        let floor = fs.op_count();
        let line = Line {
            leaves: Vec::new(),
            tags: Vec::new(),
            grown: vec![(floor, 0, 0)],
            acks: vec![(floor, 0, 0)],
            born: (floor, floor),
            roots: BTreeMap::new(),
        };
        let mut recent = std::collections::VecDeque::new();
        if setup.root_window > 0 {
            recent.push_back(0);
        }
        Model {
            setup,
            lines: vec![line],
            counter: 0,
            finalized: 0,
            fin_acks: vec![(floor, 0, 0)],
            fin_asked: vec![(floor, 0, 0)],
            recent,
            gone: Vec::new(),
            removed: Vec::new(),
            tokens: Vec::new(),
            kept: Vec::new(),
            fs,
            floor,
            mark: floor,
            rng: ChaCha8Rng::seed_from_u64(setup.seed),
            ctx: "create".into(),
            coverage: Coverage {
                cases: 1,
                ..Coverage::default()
            },
        }
    }

    fn line(&mut self) -> &mut Line {
        self.lines.last_mut().unwrap()
    }

    fn cur(&self) -> &Line {
        self.lines.last().unwrap()
    }

    fn size(&self) -> u64 {
        self.cur().leaves.len() as u64
    }

    fn now(&self) -> usize {
        self.fs.op_count()
    }

    fn root(&mut self, size: u64) -> Option<Hash> {
        let arity = self.setup.arity();
        self.line().root(arity, size)
    }

    fn head(&mut self, size: u64) -> TreeHead {
        TreeHead {
            size,
            root: self.root(size),
        }
    }

    fn fresh(&mut self, count: usize) -> Vec<Hash> {
        let first = self.counter;
        self.counter += count as u64;
        (first..self.counter)
            .map(|i| cairn_testkit::leaf(self.setup.seed, i))
            .collect()
    }

    fn note_append(&mut self, size: u64) {
        let window = self.setup.root_window;
        if window == 0 || self.recent.back() == Some(&size) {
            return;
        }
        if self.recent.len() == window {
            self.recent.pop_front();
        }
        self.recent.push_back(size);
    }

    /// Everything appended is acknowledged now (a flush, a checkpoint...).
    fn acknowledge_all(&mut self) {
        let at = self.now();
        let line = self.line();
        let (leaves, tags) = (line.leaves.len() as u64, line.tags.len());
        line.acknowledge(at, leaves, tags);
    }

    fn acknowledge_finalized(&mut self, finalized: u64) {
        let at = self.now();
        self.finalized = finalized;
        if self.fin_acks.last().is_none_or(|&(_, f, _)| finalized > f) {
            self.fin_acks.push((at, finalized, 0));
        }
    }

    fn ask_finalized(&mut self, at: usize, finalized: u64) {
        if self.fin_asked.last().is_none_or(|&(_, f, _)| finalized > f) {
            self.fin_asked.push((at, finalized, 0));
        }
    }

    /// A rollback to `to` (with `max_block`: tags of later blocks go too)
    /// that ran over boundaries `start..end`.
    fn roll_back(&mut self, to: u64, max_block: Option<u64>, start: usize, end: usize) {
        let arity = self.setup.arity();
        let old = self.line();
        let kept = old
            .tags
            .partition_point(|t| t.size <= to && max_block.is_none_or(|b| t.block <= b));
        let size = old.leaves.len() as u64;
        if to == size && kept == old.tags.len() {
            self.coverage.no_op_rollbacks += 1;
            return;
        }
        let mut gone: Vec<Hash> = Vec::new();
        for i in kept..old.tags.len() {
            let tag_size = old.tags[i].size;
            gone.extend(old.root(arity, tag_size));
        }
        gone.extend(old.root(arity, size));
        let removed = old.leaves[to as usize..].to_vec();
        let mut line = Line {
            leaves: old.leaves[..to as usize].to_vec(),
            tags: old.tags[..kept].to_vec(),
            grown: vec![(start, to, kept)],
            acks: old
                .acks
                .iter()
                .map(|&(at, leaves, tags)| (at, leaves.min(to), tags.min(kept)))
                .collect(),
            born: (start, end),
            roots: old.roots.range(..=to).map(|(&s, &r)| (s, r)).collect(),
        };
        line.grow(end);
        self.lines.push(line);
        if !removed.is_empty() {
            self.removed = removed;
        }
        for root in gone {
            if !self.gone.contains(&root) {
                self.gone.push(root);
            }
        }
        if self.gone.len() > KEEP_GONE {
            let excess = self.gone.len() - KEEP_GONE;
            self.gone.drain(..excess);
        }
        while self.recent.back().is_some_and(|&s| s > to) {
            self.recent.pop_back();
        }
        // The new head joins the window, as an append's does.
        self.note_append(to);
        for t in &mut self.tokens {
            // Its leaves, or its tag (an empty block at `to` by block).
            if !t.rolled_back && (t.end > to || t.tag.is_some_and(|i| i >= kept)) {
                t.rolled_back = true;
            }
        }
        if end > start {
            self.coverage.durable_rollbacks += 1;
        } else {
            self.coverage.memory_rollbacks += 1;
        }
        let per_file = 1u64 << self.setup.log_shift;
        if to / per_file != size.saturating_sub(1) / per_file {
            self.coverage.across_files += 1;
        }
    }

    /// Forgets every line: the store reopened on `fs` (floor 0) as `line`.
    fn restart(&mut self, leaves: Vec<Hash>, tags: Vec<Tag>, finalized: u64) {
        let at = self.floor;
        let size = leaves.len() as u64;
        let count = tags.len();
        let roots = self
            .line()
            .roots
            .range(..=size)
            .map(|(&s, &r)| (s, r))
            .collect();
        self.lines = vec![Line {
            leaves,
            tags,
            grown: vec![(at, size, count)],
            acks: vec![(at, size, count)],
            born: (at, at),
            roots,
        }];
        self.finalized = finalized;
        self.fin_acks = vec![(at, finalized, 0)];
        self.fin_asked = vec![(at, finalized, 0)];
    }
}

// ---------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------

fn check(store: &Store, m: &mut Model, all_leaves: bool) {
    let ctx = m.ctx.clone();
    let arity = m.setup.arity();
    let size = m.size();
    assert_eq!(store.size(), size, "{ctx}: size");
    let snapshot = store.snapshot();
    let head = m.head(size);
    assert_eq!(snapshot.head(), head, "{ctx}: head against the reference");

    if all_leaves {
        check_all_leaves(&snapshot, &m.cur().leaves, &ctx);
    } else if size > 0 {
        let mut picks = vec![0, size - 1, size / 2];
        picks.extend((0..3).map(|_| m.rng.gen_range(0..size)));
        for i in picks {
            assert_eq!(
                snapshot.leaf(i),
                Some(m.cur().leaves[i as usize]),
                "{ctx}: leaf {i}"
            );
        }
    }
    assert_eq!(snapshot.leaf(size), None, "{ctx}: a leaf past the end");
    if size > 0 {
        for i in [size - 1, m.rng.gen_range(0..size)] {
            let proof = snapshot
                .prove(i)
                .unwrap_or_else(|e| panic!("{ctx}: prove {i}: {e}"));
            assert_eq!(proof.leaf(), m.cur().leaves[i as usize]);
            proof
                .verify(arity, HashKind::Blake3, &head)
                .unwrap_or_else(|e| panic!("{ctx}: proof of {i} at {size}: {e}"));
        }
    }

    // Tags, with their roots against the reference.
    let heads = store.heads(0, usize::MAX);
    let want_tags = m.cur().tags.clone();
    assert_eq!(heads.len(), want_tags.len(), "{ctx}: tag count");
    let check_roots: Vec<usize> = if all_leaves || want_tags.len() <= 12 {
        (0..want_tags.len()).collect()
    } else {
        let mut picks: Vec<usize> = (want_tags.len() - 4..want_tags.len()).collect();
        picks.extend((0..4).map(|_| m.rng.gen_range(0..want_tags.len())));
        picks
    };
    for (got, want) in heads.iter().zip(&want_tags) {
        assert_eq!(
            (got.block, got.block_hash, got.size),
            (want.block, want.hash, want.size),
            "{ctx}: tag"
        );
    }
    for &i in &check_roots {
        let want = want_tags[i];
        let root = m.root(want.size);
        assert_eq!(heads[i].root, root, "{ctx}: root of tag {i}");
        if let Some(root) = root {
            assert_eq!(
                store.size_of_root(&root),
                Some(RootAt {
                    size: want.size,
                    block: m.cur().first_block_at(want.size)
                }),
                "{ctx}: size_of_root of tag {i} (block {})",
                want.block
            );
        }
        assert_eq!(
            store.head_at_block(want.block),
            Some(heads[i]),
            "{ctx}: head_at_block {}",
            want.block
        );
    }
    if let Some(last) = want_tags.last() {
        let block = m.rng.gen_range(0..=last.block + 1);
        let want = m.cur().tagged(block).map(|t| (t.block, t.size));
        assert_eq!(
            store.head_at_block(block).map(|h| (h.block, h.size)),
            want,
            "{ctx}: head_at_block {block}"
        );
    }
    // Recent appends' roots, as the window keeps them.
    let recent: Vec<u64> = m.recent.iter().copied().collect();
    for s in recent {
        if s == 0 || s > size {
            continue;
        }
        let root = m.root(s).unwrap();
        assert_eq!(
            store.size_of_root(&root),
            Some(RootAt {
                size: s,
                block: m.cur().first_block_at(s)
            }),
            "{ctx}: size_of_root of recent size {s}"
        );
    }
    // Rolled-back roots are not found, unless the same leaves are back.
    for root in m.gone.clone() {
        if let Some(at) = store.size_of_root(&root) {
            assert!(
                at.size <= size && m.root(at.size) == Some(root),
                "{ctx}: a rolled-back root resolves to size {}",
                at.size
            );
        }
    }

    // Durability and tokens.
    let durable = store.durable_size();
    let (acked, _) = at_boundary(&m.cur().acks, usize::MAX);
    assert!(
        acked <= durable && durable <= size,
        "{ctx}: durable size {durable}, acknowledged {acked}, size {size}"
    );
    for t in &m.tokens {
        match t.token.is_durable() {
            Err(StoreError::RolledBack { end, to }) => {
                assert!(t.rolled_back, "{ctx}: token to {} says rolled back", t.end);
                assert!(end == t.end && to <= size, "{ctx}: RolledBack {end} {to}");
            }
            Ok(durable_now) => {
                assert!(!t.rolled_back, "{ctx}: rolled-back token to {}", t.end);
                if durable_now || t.tag.is_none() {
                    assert_eq!(durable_now, durable >= t.end, "{ctx}: token to {}", t.end);
                }
            }
            Err(e) => panic!("{ctx}: token to {}: {e}", t.end),
        }
    }
    let at = m.now();
    m.line().acknowledge(at, durable, 0);

    // Finality, figures, mappings.
    assert_eq!(store.finalized_size(), m.finalized, "{ctx}: finalized");
    let stats = store.stats();
    assert_eq!(
        (
            stats.size,
            stats.durable,
            stats.finalized,
            stats.tagged_heads
        ),
        (size, durable, m.finalized, want_tags.len() as u64),
        "{ctx}: stats"
    );
    if let Some(&segments) = stats.tiered_segments.first() {
        assert!(
            (segments * SEGMENT_LEN) as u64 <= m.finalized.saturating_sub(1),
            "{ctx}: {segments} level-0 segments mapped, {} leaves final",
            m.finalized
        );
        m.coverage.tiered = m.coverage.tiered.max(segments);
    }

    // Kept snapshots answer as they did.
    for (k, kept) in m.kept.iter().enumerate() {
        assert_eq!(kept.snapshot.head(), kept.head, "{ctx}: kept snapshot {k}");
        for &(i, leaf) in &kept.samples {
            assert_eq!(
                kept.snapshot.leaf(i),
                Some(leaf),
                "{ctx}: kept {k}, leaf {i}"
            );
        }
        if let Some(&(i, leaf)) = kept.samples.last() {
            let proof = kept.snapshot.prove(i).unwrap();
            assert_eq!(proof.leaf(), leaf);
            proof
                .verify(arity, HashKind::Blake3, &kept.head)
                .unwrap_or_else(|e| panic!("{ctx}: kept snapshot {k}, proof of {i}: {e}"));
        }
    }
    m.coverage.max_size = m.coverage.max_size.max(size);
}

// ---------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------

fn open(setup: &Setup, fs: &SimFs, verify: bool, ctx: &str) -> Store {
    Store::open(
        Arc::new(fs.clone()) as Arc<dyn Fs>,
        Path::new(DB),
        setup.config(verify),
    )
    .unwrap_or_else(|e| panic!("{ctx}: open failed: {e}"))
}

fn keep_token(m: &mut Model, token: Token, end: u64, tag: Option<usize>) {
    m.tokens.push(KeptToken {
        token,
        end,
        tag,
        rolled_back: false,
    });
    if m.tokens.len() > KEEP_TOKENS {
        m.tokens.remove(0);
    }
}

fn append(store: &Store, m: &mut Model, leaves: Vec<Hash>) {
    let first = m.size();
    let got = store
        .append_batch(&leaves)
        .unwrap_or_else(|e| panic!("{}: append: {e}", m.ctx));
    assert_eq!(
        (got.first, got.count),
        (first, leaves.len() as u64),
        "{}",
        m.ctx
    );
    let at = m.now();
    let line = m.line();
    line.leaves.extend_from_slice(&leaves);
    line.grow(at);
    let end = m.size();
    m.note_append(end);
    keep_token(m, got.token, end, None);
}

fn tagged(store: &Store, m: &mut Model, count: usize, gap: u8, with_hash: bool) {
    let last = m.cur().tags.last().map(|t| t.block);
    let block = match last {
        Some(last) => last + u64::from(gap),
        None => u64::from(gap.max(1)) + m.rng.gen_range(0..3),
    };
    let leaves = m.fresh(count);
    let hash = with_hash.then(|| {
        let mut h = [0u8; 32];
        m.rng.fill(&mut h[..]);
        h
    });
    let size = m.size();
    let got = store.append_tagged(
        &leaves,
        BlockTag {
            number: block,
            hash,
        },
    );
    if let Some(last) = last.filter(|&last| block <= last) {
        assert!(
            matches!(got, Err(StoreError::BlockOrder { block: b, last: l }) if b == block && l == last),
            "{}: a repeated block: {got:?}",
            m.ctx
        );
        assert_eq!(
            store.size(),
            size,
            "{}: a refused tag appends nothing",
            m.ctx
        );
        m.coverage.refused += 1;
        return;
    }
    let got = got.unwrap_or_else(|e| panic!("{}: append_tagged: {e}", m.ctx));
    assert_eq!((got.first, got.count), (size, count as u64), "{}", m.ctx);
    let at = m.now();
    let line = m.line();
    line.leaves.extend_from_slice(&leaves);
    let end = line.leaves.len() as u64;
    line.tags.push(Tag {
        block,
        hash,
        size: end,
    });
    let tag = line.tags.len() - 1;
    line.grow(at);
    m.note_append(end);
    keep_token(m, got.token, end, Some(tag));
    m.coverage.tags += 1;
}

/// `truncate(to)` or `truncate_to_block(block)`, against the model.
fn truncate(store: &Store, m: &mut Model, to: u64, block: Option<u64>) {
    let size = m.size();
    let start = m.now();
    let got = match block {
        Some(b) => store.truncate_to_block(b),
        None => store.truncate(to),
    };
    let end = m.now();
    let ctx = format!("{}: truncate to {to} (block {block:?}) of {size}", m.ctx);
    if to > size {
        assert!(
            matches!(got, Err(StoreError::BeyondSize { .. })),
            "{ctx}: {got:?}"
        );
    } else if to < m.finalized {
        assert!(
            matches!(got, Err(StoreError::BelowFinalized { to: t, finalized }) if t == to && finalized == m.finalized),
            "{ctx}: {got:?}"
        );
    } else {
        let head = got.unwrap_or_else(|e| panic!("{ctx}: {e}"));
        assert_eq!(head, m.head(to), "{ctx}: head");
        m.roll_back(to, block, start, end);
        return;
    }
    assert_eq!(end, start, "{ctx}: a refused rollback wrote");
    assert_eq!(
        store.size(),
        size,
        "{ctx}: a refused rollback changed the size"
    );
    m.coverage.refused += 1;
}

/// A block number for a by-block operation: one of the tags' (or one
/// below it, between two tags), or one past the last, or below all.
fn pick_block(m: &Model, pick: u32) -> u64 {
    let tags = &m.cur().tags;
    if tags.is_empty() {
        return u64::from(pick % 8);
    }
    let i = (pick as usize) % (tags.len() + 2);
    match i.checked_sub(2) {
        None if i == 0 => tags[0].block.saturating_sub(1),
        None => tags.last().unwrap().block + 1,
        Some(i) => tags[i].block - u64::from((pick >> 16) & 1),
    }
}

fn finalize(store: &Store, m: &mut Model, target: u64, block: Option<u64>) {
    let start = m.now();
    let size = m.size();
    let got = match block {
        Some(b) => store.finalize_to_block(b),
        None => store.finalize(target),
    };
    let ctx = format!("{}: finalize {target} (block {block:?}) of {size}", m.ctx);
    if target <= m.finalized {
        assert_eq!(
            got.unwrap_or_else(|e| panic!("{ctx}: {e}")),
            m.finalized,
            "{ctx}"
        );
        assert_eq!(m.now(), start, "{ctx}: nothing to do wrote");
        return;
    }
    if target > size {
        assert!(
            matches!(got, Err(StoreError::BeyondSize { .. })),
            "{ctx}: {got:?}"
        );
        m.coverage.refused += 1;
        return;
    }
    m.ask_finalized(start, target);
    assert_eq!(
        got.unwrap_or_else(|e| panic!("{ctx}: {e}")),
        target,
        "{ctx}"
    );
    m.acknowledge_all();
    m.acknowledge_finalized(target);
    m.coverage.finalizes += 1;
}

fn step(store: Store, m: &mut Model, op: Op) -> Store {
    let start = m.now();
    let store = apply(store, m, op);
    if !matches!(op, Op::CrashReopen { .. }) && m.now() > start {
        m.mark = start;
    }
    store
}

fn apply(store: Store, m: &mut Model, op: Op) -> Store {
    let size = m.size();
    let finalized = m.finalized;
    match op {
        Op::Append(count) => {
            let leaves = m.fresh(count);
            append(&store, m, leaves);
        }
        Op::Tagged { count, gap, hash } => tagged(&store, m, count, gap, hash),
        Op::Reappend => {
            let leaves = if m.removed.is_empty() {
                m.fresh(1)
            } else {
                m.coverage.reappends += 1;
                m.removed.clone()
            };
            append(&store, m, leaves);
        }
        Op::Truncate(pick) => {
            let to = match pick % 10 {
                0 if finalized > 0 => u64::from(pick / 10) % finalized,
                1 => size + 1 + u64::from(pick / 10) % 3,
                _ => finalized + u64::from(pick / 10) % (size - finalized + 1),
            };
            truncate(&store, m, to, None);
        }
        Op::TruncateToBlock(pick) => {
            let block = pick_block(m, pick);
            match m.cur().tagged(block) {
                None => {
                    let got = store.truncate_to_block(block);
                    assert!(
                        matches!(got, Err(StoreError::NoHeadAtBlock { block: b }) if b == block),
                        "{}: truncate_to_block {block}: {got:?}",
                        m.ctx
                    );
                    assert_eq!(store.size(), size);
                }
                Some(tag) => truncate(&store, m, tag.size, Some(block)),
            }
        }
        Op::Finalize(pick) => {
            let target = match pick % 8 {
                0 => size + 1,
                1 => finalized / 2,
                _ => finalized + u64::from(pick / 8) % (size - finalized + 1),
            };
            finalize(&store, m, target, None);
        }
        Op::FinalizeToBlock(pick) => {
            let block = pick_block(m, pick);
            match m.cur().tagged(block) {
                None => {
                    let got = store.finalize_to_block(block);
                    assert!(
                        matches!(got, Err(StoreError::NoHeadAtBlock { .. })),
                        "{}: {got:?}",
                        m.ctx
                    );
                }
                Some(tag) => finalize(&store, m, tag.size, Some(block)),
            }
        }
        Op::Wait(pick) => {
            if let Some(i) = m.tokens.len().checked_sub(1 + pick as usize) {
                let started = Instant::now();
                let got = m.tokens[i].token.wait(WAIT);
                let (end, rolled_back) = (m.tokens[i].end, m.tokens[i].rolled_back);
                if rolled_back {
                    assert!(
                        matches!(got, Err(StoreError::RolledBack { end: e, .. }) if e == end),
                        "{}: wait on a rolled-back token to {end}: {got:?}",
                        m.ctx
                    );
                    assert!(started.elapsed() < Duration::from_secs(5));
                    m.coverage.rolled_back_tokens += 1;
                } else {
                    got.unwrap_or_else(|e| panic!("{}: wait to {end}: {e}", m.ctx));
                    // The tags up to the token's own are durable too.
                    let tags = m.tokens[i].tag.map_or(0, |i| i + 1);
                    let at = m.now();
                    m.line().acknowledge(at, end, tags);
                }
            }
        }
        Op::Flush => {
            let durable = store
                .flush()
                .unwrap_or_else(|e| panic!("{}: flush: {e}", m.ctx));
            assert_eq!(durable, size, "{}: flush", m.ctx);
            m.acknowledge_all();
        }
        Op::Checkpoint => {
            let start = m.now();
            if !m.setup.explicit {
                m.ask_finalized(start, size);
            }
            let written = store
                .checkpoint()
                .unwrap_or_else(|e| panic!("{}: checkpoint: {e}", m.ctx));
            if let Some(meta) = &written {
                assert_eq!(meta.size, size, "{}: checkpoint size", m.ctx);
            }
            m.acknowledge_all();
            if !m.setup.explicit {
                m.acknowledge_finalized(size.max(finalized));
            }
        }
        Op::Snapshot => {
            let snapshot = store.snapshot();
            let mut samples = Vec::new();
            if size > 0 {
                for i in [0, m.rng.gen_range(0..size), size - 1] {
                    samples.push((i, m.cur().leaves[i as usize]));
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

fn reopened(store: &Store, m: &mut Model) {
    m.coverage.reopens += 1;
    m.tokens.clear();
    m.recent.clear();
    m.note_append(store.size());
    assert_eq!(
        store.durable_size(),
        store.size(),
        "{}: opened with leaves that are not durable",
        m.ctx
    );
    check(store, m, true);
}

fn reopen_same(store: Store, m: &mut Model, close: bool, verify: bool) -> Store {
    if close {
        store
            .close()
            .unwrap_or_else(|e| panic!("{}: close: {e}", m.ctx));
    } else {
        drop(store);
    }
    m.acknowledge_all();
    for t in &m.tokens {
        if t.rolled_back {
            assert!(matches!(
                t.token.is_durable(),
                Err(StoreError::RolledBack { .. })
            ));
        } else {
            assert!(
                t.token.is_durable().unwrap(),
                "{}: token after close",
                m.ctx
            );
        }
    }
    let store = open(&m.setup, &m.fs, verify, &m.ctx);
    reopened(&store, m);
    store
}

/// Whether the recovered state (`leaves` read from the store, `tags`) is
/// line `line` as it could be after a power loss at boundary `k`.
fn matches_line(
    m: &mut Model,
    line: usize,
    k: usize,
    snapshot: &Snapshot,
    tags: &[TaggedHead],
) -> Result<(), String> {
    let arity = m.setup.arity();
    let l = &mut m.lines[line];
    let r = snapshot.size();
    let (acked, acked_tags) = at_boundary(&l.acks, k);
    let (grown, grown_tags) = at_boundary(&l.grown, k);
    if r < acked || r > grown {
        return Err(format!(
            "line {line}: {r} leaves recovered; {acked} acknowledged, {grown} appended by then"
        ));
    }
    let finals = snapshot.final_nodes(0);
    if r > 0 {
        if let Some(i) = finals
            .iter()
            .zip(&l.leaves)
            .position(|(got, want)| got != want)
        {
            return Err(format!("line {line}: leaf {i} differs"));
        }
        if snapshot.edge()[0].1 != l.leaves[r as usize - 1] {
            return Err(format!("line {line}: the last leaf differs"));
        }
    }
    if tags.len() > grown_tags.min(l.tags.len()) || tags.len() < acked_tags {
        return Err(format!(
            "line {line}: {} tags recovered; {acked_tags} acknowledged, {grown_tags} appended",
            tags.len()
        ));
    }
    for (i, got) in tags.iter().enumerate() {
        let want = l.tags[i];
        if (got.block, got.block_hash, got.size) != (want.block, want.hash, want.size) {
            return Err(format!(
                "line {line}: tag {i} is {got:?}, the model's {want:?}"
            ));
        }
        if got.size > r {
            return Err(format!("line {line}: tag {i} past the recovered size {r}"));
        }
        if got.root != l.root(arity, want.size) {
            return Err(format!("line {line}: tag {i} has the wrong root"));
        }
    }
    if let Some(missing) = l.tags[tags.len()..].iter().find(|t| t.size < r) {
        return Err(format!(
            "line {line}: tag of block {} at {} missing below the recovered size {r}",
            missing.block, missing.size
        ));
    }
    Ok(())
}

fn crash_and_reopen(
    store: Store,
    m: &mut Model,
    kind: CrashKind,
    at: CrashPoint,
    seed: u64,
    verify: bool,
) -> Store {
    let now = m.now();
    let (k, replay, mode) = crash_state(
        &m.fs,
        Trace {
            now: m.now(),
            mark: m.mark,
            floor: m.floor,
        },
        kind,
        at,
    );
    let crashed = replay.crash(&mode, &mut ChaCha8Rng::seed_from_u64(seed));
    let ctx = format!(
        "{}: power loss at boundary {k} of {now} (after `{}`), {mode:?}",
        m.ctx,
        k.checked_sub(1)
            .map_or_else(|| "nothing".into(), |i| m.fs.describe_op(i)),
    );
    drop(store);
    let store = open(&m.setup, &crashed, verify, &ctx);
    let snapshot = store.snapshot();
    let tags = store.heads(0, usize::MAX);
    // The line committed by k, and the one a rollback running at k makes.
    let committed = m.lines.iter().rposition(|l| l.born.1 <= k).unwrap_or(0);
    let mut candidates = vec![committed];
    let inside = m
        .lines
        .get(committed + 1)
        .is_some_and(|next| next.born.0 <= k);
    if inside {
        candidates.insert(0, committed + 1);
    }
    let mut failures = Vec::new();
    let mut opened = None;
    for &line in &candidates {
        match matches_line(m, line, k, &snapshot, &tags) {
            Ok(()) => {
                opened = Some(line);
                break;
            }
            Err(why) => failures.push(why),
        }
    }
    let Some(line) = opened else {
        panic!("{ctx}: opened as no state the store could have had: {failures:?}");
    };
    // Finality: at least what was acknowledged, at most what was asked.
    let finalized = store.finalized_size();
    let (acked_final, _) = at_boundary(&m.fin_acks, k);
    let (asked_final, _) = at_boundary(&m.fin_asked, k);
    assert!(
        acked_final <= finalized && finalized <= asked_final.max(acked_final),
        "{ctx}: finalized {finalized}; {acked_final} acknowledged, {asked_final} asked for"
    );
    assert!(
        finalized <= snapshot.size(),
        "{ctx}: finalized past the size"
    );

    let c = &mut m.coverage;
    *c.crashes.entry(mode_name(&mode)).or_default() += 1;
    if inside {
        c.inside_rollback += 1;
        // Both lines agree on a short enough prefix: count only clear cases.
        let other = if line == committed {
            committed + 1
        } else {
            committed
        };
        if matches_line(m, other, k, &snapshot, &tags).is_err() {
            if line == committed {
                m.coverage.opened_before += 1;
            } else {
                m.coverage.opened_after += 1;
            }
        }
    }

    let r = snapshot.size() as usize;
    let leaves = m.lines[line].leaves[..r].to_vec();
    let tags: Vec<Tag> = m.lines[line].tags[..tags.len()].to_vec();
    // Keep the memoised roots of the line it opened as.
    let mut roots = std::mem::take(&mut m.lines[line].roots);
    roots.retain(|&s, _| s <= r as u64);
    m.fs = crashed;
    m.floor = 0;
    m.mark = 0;
    m.restart(leaves, tags, finalized);
    m.line().roots = roots;
    m.ctx = ctx;
    reopened(&store, m);
    store
}

fn run_case(setup: Setup, ops: &[Op]) -> Coverage {
    let fs = SimFs::new();
    let store = Store::create(
        Arc::new(fs.clone()) as Arc<dyn Fs>,
        Path::new(DB),
        setup.config(false),
    )
    .unwrap();
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
    for kept in &m.kept {
        assert_eq!(kept.snapshot.head(), kept.head);
    }
    m.coverage
}

// ---------------------------------------------------------------------------
// The tests
// ---------------------------------------------------------------------------

fn cases() -> u32 {
    cairn_testkit::env_u64("CAIRN_ROLLBACK_CASES", 512) as u32
}

fn run(name: &str, cases: u32, strategy: impl Strategy<Value = (Setup, Vec<Op>)>) -> Coverage {
    let started = Instant::now();
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
        "{name}: {cases} cases, {:?}, {:.1} s",
        total,
        started.elapsed().as_secs_f64()
    );
    total
}

#[test]
fn random_rollback_sequences_match_the_reference_model() {
    let cases = cases();
    let total = run("rollback", cases, small_case());
    if cases >= 64 {
        assert!(total.crashes.len() >= 6, "crash modes: {:?}", total.crashes);
        assert!(total.durable_rollbacks > 0 && total.memory_rollbacks > 0);
        assert!(total.across_files > 0);
        assert!(total.rolled_back_tokens > 0);
        assert!(total.reappends > 0);
        assert!(total.inside_rollback > 0);
        assert!(
            total.opened_before > 0 && total.opened_after > 0,
            "power losses inside rollbacks opened before {} and after {} (clearly)",
            total.opened_before,
            total.opened_after
        );
    }
}

#[test]
fn random_rollback_sequences_with_tiering_match_the_reference_model() {
    let total = run("rollback, tiering", (cases() / 16).max(1), tiering_case());
    assert!(total.tiered >= 1, "level 0 was mapped: {total:?}");
}
