//! One run: a case's operations applied to the reference and to one
//! subject in lockstep, every invariant checked after every operation,
//! and the judgement of what a power loss left.

use std::sync::Arc;

use cairn_core::level::SEGMENT_LEN;
use cairn_core::{Hash, Snapshot, TreeHead, TreeKind};
use cairn_db::Operation;
use cairn_store::{BlockTag, StoreError};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::power::{Trace, crash_state, mode_name};
use super::reference::{Reference, at_boundary};
use super::subject::{Pending, Subject, Target};
use super::{Coverage, Kind, Op, Setup};
use crate::sim::SimFs;

mod check;

const KEEP_PENDING: usize = 16;
const KEEP_SNAPSHOTS: usize = 4;
const KEEP_HEADS: usize = 12;

/// An append whose acknowledgement the run may wait for.
struct Kept {
    pending: Pending,
    /// The tree size at its end.
    end: u64,
    /// The index of its block tag, if tagged.
    tag: Option<usize>,
    rolled_back: bool,
}

/// A store snapshot kept from an earlier operation, with what it answered.
struct KeptSnapshot {
    snapshot: Arc<Snapshot>,
    head: TreeHead,
    samples: Vec<(u64, Hash)>,
}

pub(crate) struct Run {
    setup: Setup,
    r: Reference,
    fs: SimFs,
    /// First boundary of `fs`'s trace at which the subject exists.
    floor: usize,
    /// Where the last operation that touched the file system began.
    mark: usize,
    pending: Vec<Kept>,
    snapshots: Vec<KeptSnapshot>,
    /// Heads served earlier, for consistency proofs.
    heads: Vec<TreeHead>,
    /// `(boundary, number, size)` of the store's checkpoints.
    checkpoints: Vec<(usize, u64, u64)>,
    /// What the store's `tiered_segments` must say while the run made no
    /// rollback and no finalization (with default finality): what those
    /// publish and unmap is held to the weaker bound, mappings only below
    /// the finalized size.
    tiered: Vec<usize>,
    rolled_back: bool,
    /// Fresh values come from `leaf(seed, counter)`, never reused.
    counter: u64,
    rng: ChaCha8Rng,
    ctx: String,
    pub(crate) coverage: Coverage,
}

/// Level lengths of a lean tree of `size` leaves, leaves first.
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

fn max_into(into: &mut Vec<usize>, from: &[usize]) {
    if into.len() < from.len() {
        into.resize(from.len(), 0);
    }
    for (a, &b) in into.iter_mut().zip(from) {
        *a = (*a).max(b);
    }
}

impl Run {
    /// Creates the subject on a fresh file system, with syncs that lie
    /// from then on if `lying_sync` (the canary).
    pub(crate) fn new(setup: Setup, lying_sync: bool) -> (Run, Subject) {
        let fs = SimFs::new();
        let subject = Subject::create(&setup, &fs);
        fs.set_lying_sync(lying_sync);
        let floor = fs.op_count();
        let mut run = Run {
            setup,
            r: Reference::new(setup, floor),
            fs,
            floor,
            mark: floor,
            pending: Vec::new(),
            snapshots: Vec::new(),
            heads: Vec::new(),
            checkpoints: vec![(floor, 0, 0)],
            tiered: Vec::new(),
            rolled_back: false,
            counter: 0,
            rng: ChaCha8Rng::seed_from_u64(setup.seed),
            ctx: format!("{setup:?}, create"),
            coverage: Coverage {
                cases: 1,
                ..Coverage::default()
            },
        };
        run.check(&subject, true);
        (run, subject)
    }

    pub(crate) fn set_ctx(&mut self, ctx: String) {
        self.ctx = ctx;
    }

    fn now(&self) -> usize {
        self.fs.op_count()
    }

    fn fresh(&mut self, count: usize) -> Vec<Hash> {
        let first = self.counter;
        self.counter += count as u64;
        (first..self.counter)
            .map(|i| crate::leaf(self.setup.seed, i))
            .collect()
    }

    /// Applies `op` to both, then checks.
    pub(crate) fn step(&mut self, subject: Subject, op: Op) -> Subject {
        let start = self.now();
        let subject = self.apply(subject, op);
        if !matches!(op, Op::CrashReopen { .. }) && self.now() > start {
            self.mark = start;
        }
        self.coverage.ops += 1;
        subject
    }

    fn apply(&mut self, subject: Subject, op: Op) -> Subject {
        let size = self.r.size();
        let finalized = self.r.finalized;
        let offset = self.setup.offset();
        let tags = subject.supports(Operation::BlockTags);
        match op {
            Op::Append(count) => {
                let values = self.fresh(count);
                self.append(&subject, &values, None);
            }
            Op::Tagged { count, gap, hash } if tags => self.tagged(&subject, count, gap, hash),
            Op::Reappend => {
                let values = if self.r.removed.is_empty() {
                    self.fresh(1)
                } else {
                    self.coverage.reappends += 1;
                    // Once: held again, they are no longer absent.
                    std::mem::take(&mut self.r.removed)
                };
                self.append(&subject, &values, None);
            }
            Op::Duplicate(pick) if subject.refuses_duplicates() => self.duplicate(&subject, pick),
            Op::Truncate(pick) => {
                let to = match pick % 10 {
                    0 if finalized > 0 => u64::from(pick / 10) % finalized,
                    1 => size + 1 + u64::from(pick / 10) % 3,
                    _ => finalized + u64::from(pick / 10) % (size - finalized + 1),
                };
                self.truncate(&subject, to, None);
            }
            Op::TruncateToBlock(pick) if tags => {
                let block = self.pick_block(pick);
                match self.r.cur().tagged(block) {
                    None => {
                        let got = subject.truncate(0, Some(block));
                        assert!(
                            matches!(got, Err(StoreError::NoHeadAtBlock { block: b }) if b == block),
                            "{}: truncate_to_block {block}: {got:?}",
                            self.ctx
                        );
                        assert_eq!(subject.size(), size);
                    }
                    Some(tag) => self.truncate(&subject, tag.size, Some(block)),
                }
            }
            Op::Finalize(pick) => {
                let target = match pick % 8 {
                    0 => size + 1,
                    1 => finalized / 2,
                    _ => finalized + u64::from(pick / 8) % (size - finalized + 1),
                };
                self.finalize(&subject, target, None);
            }
            Op::FinalizeToBlock(pick) if tags => {
                let block = self.pick_block(pick);
                match self.r.cur().tagged(block) {
                    None => {
                        let got = subject.finalize(0, Some(block));
                        assert!(
                            matches!(got, Err(StoreError::NoHeadAtBlock { .. })),
                            "{}: {got:?}",
                            self.ctx
                        );
                    }
                    Some(tag) => self.finalize(&subject, tag.size, Some(block)),
                }
            }
            // What the subject cannot do is refused, from the one table,
            // and changes nothing.
            Op::Tagged { .. } | Op::TruncateToBlock(_) | Op::FinalizeToBlock(_) => {
                let Subject::Database(db) = &subject else {
                    unreachable!("the store has block tags")
                };
                let refused = match op {
                    Op::Tagged { .. } => {
                        db.append_tagged(&self.fresh(1), BlockTag::number(1)).err()
                    }
                    Op::TruncateToBlock(_) => db.truncate_to_block(1).err(),
                    _ => db.finalize_to_block(1).err(),
                };
                assert!(
                    matches!(
                        refused,
                        Some(cairn_db::DbError::Unsupported {
                            operation: Operation::BlockTags,
                            ..
                        })
                    ),
                    "{}: {refused:?}",
                    self.ctx
                );
                assert_eq!(subject.size(), size, "{}: a refusal appended", self.ctx);
                self.coverage.unsupported += 1;
            }
            Op::Duplicate(_) => {}
            Op::Wait(pick) => self.wait(&subject, pick),
            Op::Flush => {
                let durable = subject.flush();
                assert_eq!(durable, size, "{}: flush", self.ctx);
                let at = self.now();
                self.r.acknowledge_all(at);
            }
            Op::Checkpoint => self.checkpoint(&subject),
            Op::Snapshot => {
                if let Subject::Store(store) = &subject {
                    let snapshot = store.snapshot();
                    let mut samples = Vec::new();
                    if size > 0 {
                        for i in [0, self.rng.gen_range(0..size), size - 1] {
                            samples.push((i, self.r.value(i)));
                        }
                    }
                    let head = self.r.head(size);
                    if self.snapshots.len() >= KEEP_SNAPSHOTS {
                        self.snapshots.remove(0);
                    }
                    self.snapshots.push(KeptSnapshot {
                        snapshot,
                        head,
                        samples,
                    });
                }
            }
            Op::CloseReopen { verify } => return self.reopen_same(subject, true, verify),
            Op::DropReopen { verify } => return self.reopen_same(subject, false, verify),
            Op::CrashReopen {
                kind,
                at,
                seed,
                verify,
            } => return self.crash_and_reopen(subject, kind, at, seed, verify),
        }
        let _ = offset;
        self.check(&subject, false);
        subject
    }

    fn keep(&mut self, pending: Pending, end: u64, tag: Option<usize>) {
        self.pending.push(Kept {
            pending,
            end,
            tag,
            rolled_back: false,
        });
        if self.pending.len() > KEEP_PENDING {
            self.pending.remove(0);
        }
    }

    fn append(&mut self, subject: &Subject, values: &[Hash], tag: Option<(u64, Option<Hash>)>) {
        let size = self.r.size();
        let got = subject
            .append(values, tag.map(|(number, hash)| BlockTag { number, hash }))
            .unwrap_or_else(|e| panic!("{}: append: {e}", self.ctx));
        let (first, count, pending) = got;
        assert_eq!((first, count), (size, values.len() as u64), "{}", self.ctx);
        let at = self.now();
        self.r.append(values, tag, at);
        let tag = tag.map(|_| self.r.cur().tags.len() - 1);
        let end = self.r.size();
        self.keep(pending, end, tag);
    }

    fn tagged(&mut self, subject: &Subject, count: usize, gap: u8, with_hash: bool) {
        let last = self.r.cur().tags.last().map(|t| t.block);
        let block = match last {
            Some(last) => last + u64::from(gap),
            None => u64::from(gap.max(1)) + self.rng.gen_range(0..3),
        };
        let hash = with_hash.then(|| {
            let mut h = [0u8; 32];
            self.rng.fill(&mut h[..]);
            h
        });
        let values = self.fresh(count);
        if let Some(last) = last.filter(|&last| block <= last) {
            let size = self.r.size();
            let got = subject.append(
                &values,
                Some(BlockTag {
                    number: block,
                    hash,
                }),
            );
            assert!(
                matches!(&got, Err(StoreError::BlockOrder { block: b, last: l }) if *b == block && *l == last),
                "{}: a repeated block: {:?}",
                self.ctx,
                got.err()
            );
            assert_eq!(subject.size(), size, "{}: a refused tag appended", self.ctx);
            self.coverage.refused += 1;
            return;
        }
        self.append(subject, &values, Some((block, hash)));
        self.coverage.tags += 1;
    }

    /// A batch of a fresh value and a durable one the database holds:
    /// refused whole, naming the duplicate and its leaf.
    fn duplicate(&mut self, subject: &Subject, pick: u32) {
        let Subject::Database(db) = subject else {
            unreachable!("only databases refuse duplicates")
        };
        let offset = self.setup.offset();
        let durable = db.durable_size().min(self.r.size());
        if durable <= offset {
            return;
        }
        let index = offset + u64::from(pick) % (durable - offset);
        let value = self.r.value(index);
        let batch = [self.fresh(1)[0], value];
        let got = db.append(&batch);
        match got {
            Err(cairn_db::DbError::Duplicates {
                batch: 2,
                duplicates,
            }) => assert_eq!(
                duplicates,
                vec![cairn_db::Duplicate {
                    position: 1,
                    value,
                    of: cairn_db::DuplicateOf::Leaf(index)
                }],
                "{}",
                self.ctx
            ),
            other => panic!("{}: a durable duplicate: {other:?}", self.ctx),
        }
        assert_eq!(db.lookup(&batch).unwrap().indices, vec![None, Some(index)]);
        self.coverage.duplicates += 1;
    }

    fn wait(&mut self, subject: &Subject, pick: u8) {
        let Some(i) = self.pending.len().checked_sub(1 + pick as usize) else {
            return;
        };
        let kept = &mut self.pending[i];
        let (end, rolled_back, tag) = (kept.end, kept.rolled_back, kept.tag);
        let Some(got) = subject.wait(&mut kept.pending) else {
            return;
        };
        if rolled_back {
            assert!(
                matches!(got, Err(StoreError::RolledBack { .. })),
                "{}: wait on a rolled-back append to {end}: {got:?}",
                self.ctx
            );
            self.coverage.rolled_back_waits += 1;
            return;
        }
        let head = got.unwrap_or_else(|e| panic!("{}: wait to {end}: {e}", self.ctx));
        if let Some(head) = head {
            // The acknowledgement names a head that holds the append.
            assert!(
                head.size >= end,
                "{}: acknowledged {head:?} for {end}",
                self.ctx
            );
            if self.setup.kind_name() != "indexed" {
                assert_eq!(head.size, end, "{}", self.ctx);
            }
            let want = self.r.root(head.size);
            assert_eq!(head.root, want, "{}: the acknowledged root", self.ctx);
        }
        let tags = tag.map_or(0, |i| i + 1);
        let at = self.now();
        self.r.line().acknowledge(at, end, tags);
    }

    /// A block number for a by-block operation: one of the tags' (or one
    /// below it, between two tags), or one past the last, or below all.
    fn pick_block(&self, pick: u32) -> u64 {
        let tags = &self.r.cur().tags;
        if tags.is_empty() {
            return u64::from(pick % 8);
        }
        let i = (pick as usize) % (tags.len() + 2);
        match i.checked_sub(2) {
            None if i == 0 => tags[0].block.saturating_sub(1),
            None => tags.last().expect("a tag").block + 1,
            Some(i) => tags[i].block - u64::from((pick >> 16) & 1),
        }
    }

    fn truncate(&mut self, subject: &Subject, to: u64, block: Option<u64>) {
        let size = self.r.size();
        let start = self.now();
        let got = subject.truncate(to, block);
        let end = self.now();
        let ctx = format!("{}: truncate to {to} (block {block:?}) of {size}", self.ctx);
        if to > size {
            assert!(
                matches!(got, Err(StoreError::BeyondSize { .. })),
                "{ctx}: {got:?}"
            );
        } else if to < self.r.finalized {
            assert!(
                matches!(got, Err(StoreError::BelowFinalized { to: t, finalized }) if t == to && finalized == self.r.finalized),
                "{ctx}: {got:?}"
            );
        } else {
            let head = got.unwrap_or_else(|e| panic!("{ctx}: {e}"));
            // Every kind answers the head at the target: a rollback flushes
            // what it keeps before it answers.
            assert_eq!(head, self.r.head(to), "{ctx}: head");
            let Some(kept) = self.r.roll_back(to, block, start, end) else {
                self.coverage.no_op_rollbacks += 1;
                return;
            };
            self.rolled_back = true;
            self.heads.retain(|h| h.size <= to);
            for t in &mut self.pending {
                // Its values, or its tag (an empty block at `to`).
                if !t.rolled_back && (t.end > to || t.tag.is_some_and(|i| i >= kept)) {
                    t.rolled_back = true;
                }
            }
            if let Subject::Database(_) = subject {
                // A database's rollback flushes: everything it left is durable.
                self.r.acknowledge_all(end);
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
            return;
        }
        if matches!(subject, Subject::Store(_)) {
            assert_eq!(end, start, "{ctx}: a refused rollback wrote");
        }
        assert_eq!(
            subject.size(),
            size,
            "{ctx}: a refused rollback changed the size"
        );
        self.coverage.refused += 1;
    }

    fn finalize(&mut self, subject: &Subject, target: u64, block: Option<u64>) {
        self.rolled_back = true;
        let start = self.now();
        let size = self.r.size();
        let got = subject.finalize(target, block);
        let ctx = format!(
            "{}: finalize {target} (block {block:?}) of {size}",
            self.ctx
        );
        if target <= self.r.finalized {
            let got = got.unwrap_or_else(|e| panic!("{ctx}: {e}"));
            assert_eq!(got, self.r.finalized, "{ctx}");
            return;
        }
        if target > size {
            assert!(
                matches!(got, Err(StoreError::BeyondSize { .. })),
                "{ctx}: {got:?}"
            );
            self.coverage.refused += 1;
            return;
        }
        self.r.ask_finalized(start, target);
        assert_eq!(
            got.unwrap_or_else(|e| panic!("{ctx}: {e}")),
            target,
            "{ctx}"
        );
        let at = self.now();
        self.r.acknowledge_all(at);
        self.r.acknowledge_finalized(at, target);
        self.coverage.finalizes += 1;
    }

    fn checkpoint(&mut self, subject: &Subject) {
        let start = self.now();
        let size = self.r.size();
        if !self.setup.explicit {
            self.r.ask_finalized(start, size);
        }
        self.observe_checkpoint(subject);
        let (number, covered) = self.last_checkpoint();
        let written = subject.checkpoint();
        let at = self.now();
        if let Subject::Store(_) = subject {
            match written {
                None => assert_eq!(covered, size, "{}: no checkpoint written", self.ctx),
                Some(meta) => {
                    assert_eq!(
                        (meta.number, meta.size),
                        (number + 1, size),
                        "{}: checkpoint",
                        self.ctx
                    );
                    if self.setup.kind == Kind::Lean {
                        // Each level's final length and last node.
                        let values = &self.r.cur().values;
                        let levels =
                            crate::reference::levels(self.setup.arity(), self.setup.hash, values);
                        let want: Vec<(u64, Hash)> = levels
                            .iter()
                            .filter(|level| !level.is_empty())
                            .map(|level| (level.len() as u64 - 1, *level.last().expect("a node")))
                            .collect();
                        assert_eq!(meta.levels, want, "{}: checkpoint levels", self.ctx);
                    }
                    self.checkpoints.push((at, meta.number, size));
                    self.coverage.checkpoints += 1;
                    self.tier_after_checkpoint(size);
                }
            }
        }
        self.r.acknowledge_all(at);
        if !self.setup.explicit {
            let finalized = size.max(self.r.finalized);
            self.r.acknowledge_finalized(at, finalized);
        }
    }

    /// Takes note of a checkpoint the store published by itself.
    fn observe_checkpoint(&mut self, subject: &Subject) {
        if let Subject::Store(store) = subject {
            let stats = store.stats();
            if stats.checkpoint_number > self.last_checkpoint().0 {
                let at = self.now();
                self.checkpoints
                    .push((at, stats.checkpoint_number, stats.checkpoint_size));
                self.tier_after_checkpoint(stats.checkpoint_size);
            }
        }
    }

    fn last_checkpoint(&self) -> (u64, u64) {
        let &(_, number, size) = self.checkpoints.last().expect("a first entry");
        (number, size)
    }

    /// Segments of `level` (of `len` nodes) a checkpoint can map: complete
    /// segments; none for level 0 when a log file holds less than one.
    fn mappable(&self, level: usize, len: u64) -> Option<usize> {
        if level == 0 && (1u64 << self.setup.log_shift) < SEGMENT_LEN as u64 {
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
    /// checkpoint is mapped.
    fn tier_at_open(&mut self, checkpoint_size: u64) {
        self.tiered = level_lens(checkpoint_size, self.setup.n)
            .iter()
            .enumerate()
            .map(|(level, &len)| self.mappable(level, len).unwrap_or(0))
            .collect();
        max_into(&mut self.coverage.tiered_at_open, &self.tiered);
    }

    // -----------------------------------------------------------------
    // Reopens and power losses
    // -----------------------------------------------------------------

    fn reopened(&mut self, subject: &Subject) {
        self.coverage.reopens += 1;
        self.pending.clear();
        // The root window starts again from the head it opened with.
        self.r.recent.clear();
        self.r.note_append(subject.size());
        assert_eq!(
            subject.durable_size(),
            subject.size(),
            "{}: opened with leaves that are not durable",
            self.ctx
        );
        if let Subject::Store(store) = subject {
            self.tier_at_open(store.stats().checkpoint_size);
        }
        self.check(subject, true);
    }

    /// Close or drop, then reopen on the same file system: nothing is lost.
    pub(crate) fn reopen_same(&mut self, subject: Subject, close: bool, verify: bool) -> Subject {
        if close {
            subject.close();
        } else {
            drop(subject);
        }
        let at = self.now();
        self.r.acknowledge_all(at);
        for t in &self.pending {
            // Tokens outlive their store: what they cover was flushed.
            if let Pending::Token(token) = &t.pending {
                match token.is_durable() {
                    Err(StoreError::RolledBack { .. }) => assert!(t.rolled_back, "{}", self.ctx),
                    got => assert!(got.unwrap(), "{}: token after close", self.ctx),
                }
            }
        }
        let subject = Subject::open(&self.setup, &self.fs, verify, &self.ctx);
        self.reopened(&subject);
        subject
    }

    /// A power loss at a boundary chosen by `at`, then a reopen on what it left.
    fn crash_and_reopen(
        &mut self,
        subject: Subject,
        kind: super::power::CrashKind,
        at: super::power::CrashPoint,
        seed: u64,
        verify: bool,
    ) -> Subject {
        let now = self.now();
        let (k, replay, mode) = crash_state(
            &self.fs,
            Trace {
                now,
                mark: self.mark,
                floor: self.floor,
            },
            kind,
            at,
        );
        if k == now {
            // What the subject says is durable is acknowledged.
            let durable = subject.durable_size();
            self.r.line().acknowledge(now, durable, 0);
        }
        let crashed = replay.crash(&mode, &mut ChaCha8Rng::seed_from_u64(seed));
        let ctx = format!(
            "{}: power loss at boundary {k} of {now} (after `{}`), {mode:?}",
            self.ctx,
            k.checked_sub(1)
                .map_or_else(|| "nothing".into(), |i| self.fs.describe_op(i)),
        );
        // The old process is gone; its drop writes only to the old file system.
        drop(subject);
        let subject = Subject::open(&self.setup, &crashed, verify, &ctx);
        let recovered = subject.size();
        let tags = if subject.supports(Operation::BlockTags) {
            subject.heads()
        } else {
            Vec::new()
        };
        // The line committed by k, and the one a rollback running at k makes.
        let committed = self
            .r
            .lines
            .iter()
            .rposition(|l| l.born.1 <= k)
            .unwrap_or(0);
        let mut candidates = vec![committed];
        let inside = self
            .r
            .lines
            .get(committed + 1)
            .is_some_and(|next| next.born.0 <= k);
        if inside {
            candidates.insert(0, committed + 1);
        }
        let mut failures = Vec::new();
        let mut opened = None;
        for &line in &candidates {
            match self.matches_line(&subject, line, k, &tags) {
                Ok(()) => {
                    opened = Some(line);
                    break;
                }
                Err(why) => failures.push(why),
            }
        }
        let Some(line) = opened else {
            panic!("{ctx}: opened as no state it could have had: {failures:?}");
        };
        // Finality: at least what was acknowledged, at most what was asked.
        let finalized = subject.finalized_size();
        let (acked_final, _) = at_boundary(&self.r.fin_acks, k);
        let (asked_final, _) = at_boundary(&self.r.fin_asked, k);
        assert!(
            acked_final <= finalized && finalized <= asked_final.max(acked_final),
            "{ctx}: finalized {finalized}; {acked_final} acknowledged, {asked_final} asked for"
        );
        assert!(finalized <= recovered, "{ctx}: finalized past the size");
        // The store's last checkpoint published by k, or a later one.
        if let Subject::Store(store) = &subject {
            let must = self
                .checkpoints
                .iter()
                .rev()
                .find(|&&(at, _, _)| at <= k)
                .map_or(0, |&(_, number, _)| number);
            let stats = store.stats();
            let known = self
                .checkpoints
                .iter()
                .find(|c| c.1 == stats.checkpoint_number);
            match known {
                Some(&(_, number, size)) if number >= must && stats.checkpoint_size == size => {}
                // The open rolled back the part of a block a torn commit
                // left (it crossed a log file), publishing the rollback as
                // a checkpoint of its own at the size it recovered (its
                // number may be one a lost checkpoint had).
                _ if stats.checkpoint_number > must && stats.checkpoint_size == recovered => {
                    // A rollback unmaps the tiered segments, as one asked for.
                    self.rolled_back = true;
                }
                Some(&(_, number, size)) if number >= must => panic!(
                    "{ctx}: checkpoint {number} covers {} leaves, not {size}",
                    stats.checkpoint_size
                ),
                _ => panic!(
                    "{ctx}: opened with checkpoint {} (size {}); checkpoint {must} was published",
                    stats.checkpoint_number, stats.checkpoint_size
                ),
            }
            self.checkpoints = vec![(0, stats.checkpoint_number, stats.checkpoint_size)];
        }

        let c = &mut self.coverage;
        *c.crashes.entry(mode_name(&mode)).or_default() += 1;
        c.mid_operation += usize::from(k < now);
        c.lost_unacknowledged += usize::from(recovered < self.r.size());
        let (acked, _) = at_boundary(&self.r.lines[line].acks, k);
        c.kept_unacknowledged += usize::from(recovered > acked);
        if inside {
            c.inside_rollback += 1;
            // Both lines agree on a short enough prefix: count clear cases.
            let other = if line == committed {
                committed + 1
            } else {
                committed
            };
            if self.matches_line(&subject, other, k, &tags).is_err() {
                if line == committed {
                    self.coverage.opened_before += 1;
                } else {
                    self.coverage.opened_after += 1;
                }
            }
        }
        // The reference follows the disk.
        self.fs = crashed;
        self.floor = 0;
        self.mark = 0;
        self.r.restart(line, recovered, tags.len(), finalized, 0);
        // Heads served before are heads of this line only if they agree.
        let heads = std::mem::take(&mut self.heads);
        for h in heads {
            if h.size <= recovered && self.r.root(h.size) == h.root {
                self.heads.push(h);
            }
        }
        self.ctx = ctx;
        self.reopened(&subject);
        subject
    }

    /// Whether the recovered subject (its `tags`) is line `line` as it
    /// could be after a power loss at boundary `k`.
    fn matches_line(
        &mut self,
        subject: &Subject,
        line: usize,
        k: usize,
        tags: &[cairn_store::TaggedHead],
    ) -> Result<(), String> {
        let offset = self.setup.offset();
        let r = subject.size();
        let l = &self.r.lines[line];
        let (acked, acked_tags) = at_boundary(&l.acks, k);
        let (grown, grown_tags) = at_boundary(&l.grown, k);
        if r < acked || r > grown {
            return Err(format!(
                "line {line}: {r} leaves recovered; {acked} acknowledged, {grown} appended by then"
            ));
        }
        let values = &l.values[..(r - offset) as usize];
        match subject {
            Subject::Store(store) => {
                let snapshot = store.snapshot();
                if r > 0 {
                    let finals = snapshot.final_nodes(0);
                    if let Some(i) = finals
                        .iter()
                        .zip(values)
                        .position(|(got, want)| got != want)
                    {
                        return Err(format!("line {line}: leaf {i} differs"));
                    }
                    if snapshot.edge()[0].1 != values[values.len() - 1] {
                        return Err(format!("line {line}: the last leaf differs"));
                    }
                }
            }
            Subject::Database(db) => {
                if db.supports(Operation::LeafRange).is_ok() {
                    let leaves = db.leaves(0, None).map_err(|e| e.to_string())?;
                    if leaves != values {
                        return Err(format!("line {line}: the leaves differ"));
                    }
                }
                let want = self.setup.root(values);
                if db.head().root != want {
                    return Err(format!("line {line}: the root differs"));
                }
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
        }
        if let Some(missing) = l.tags[tags.len()..].iter().find(|t| t.size < r) {
            return Err(format!(
                "line {line}: tag of block {} at {} missing below the recovered size {r}",
                missing.block, missing.size
            ));
        }
        let sizes: Vec<u64> = l.tags[..tags.len()].iter().map(|t| t.size).collect();
        for (i, (got, &want)) in tags.iter().zip(&sizes).enumerate() {
            if got.root != self.r.root_of(line, want) {
                return Err(format!("line {line}: tag {i} has the wrong root"));
            }
        }
        Ok(())
    }

    /// The end of a run: a final close and reopen, and kept snapshots
    /// that outlived every store they came from.
    pub(crate) fn finish(mut self, subject: Subject) -> Coverage {
        self.ctx = format!("{:?}, final close and reopen", self.setup);
        let subject = self.reopen_same(subject, true, true);
        subject.close();
        for kept in &self.snapshots {
            assert_eq!(kept.snapshot.head(), kept.head);
        }
        self.coverage
    }
}

impl Target {
    /// Whether it serves `kind`.
    pub(crate) fn serves(self, kind: TreeKind) -> bool {
        self == Target::Database || kind.is_append_only()
    }
}
