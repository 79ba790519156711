//! The checks run after every operation: the subject against the
//! reference, through what its kind can do.

use cairn_core::level::SEGMENT_LEN;
use cairn_core::{Hash, Snapshot, TreeHead};
use cairn_db::Operation;
use cairn_store::{RootAt, StoreError};
use rand::Rng;

use super::super::Kind;
use super::super::reference::{Tag, at_boundary};
use super::super::subject::{Pending, Subject};
use super::{KEEP_HEADS, Run};

impl Run {
    // -----------------------------------------------------------------
    // Checks
    // -----------------------------------------------------------------

    /// Every invariant, after every operation; `all` compares every leaf
    /// (after a reopen) instead of a sample.
    pub(crate) fn check(&mut self, subject: &Subject, all: bool) {
        let ctx = self.ctx.clone();
        let setup = self.setup;
        let size = self.r.size();
        assert_eq!(subject.size(), size, "{ctx}: size");
        let durable = subject.durable_size();
        let (acked, _) = at_boundary(&self.r.cur().acks, usize::MAX);
        assert!(
            acked <= durable && durable <= size,
            "{ctx}: durable size {durable}, acknowledged {acked}, size {size}"
        );
        let at = self.now();
        self.r.line().acknowledge(at, durable, 0);
        assert_eq!(
            subject.finalized_size(),
            self.r.finalized,
            "{ctx}: finalized"
        );

        // The served head (a database's: the durable one) against the reference.
        let served = subject.served_size();
        let head = subject.head();
        assert_eq!(
            head,
            self.r.head(served),
            "{ctx}: head against the reference"
        );
        if let Subject::Database(_) = subject {
            assert_eq!(served, durable, "{ctx}: a database serves its durable head");
        }
        self.check_values(subject, served, &head, all);
        if subject.supports(Operation::ConsistencyProof) {
            self.check_history(subject, &head);
        }
        if subject.supports(Operation::BlockTags) {
            self.check_tags(subject, served, all);
        }
        match subject {
            Subject::Store(store) => self.check_store(store, size, durable),
            Subject::Database(db) => {
                db.check()
                    .unwrap_or_else(|e| panic!("{ctx}: the set against the tree: {e}"));
            }
        }
        self.coverage.max_size = self.coverage.max_size.max(size);
        self.coverage.log_files = self
            .coverage
            .log_files
            .max(size.div_ceil(1 << setup.log_shift));
    }

    /// Leaves or lookups, proofs, and absent values.
    pub(super) fn check_values(
        &mut self,
        subject: &Subject,
        served: u64,
        head: &TreeHead,
        all: bool,
    ) {
        let ctx = self.ctx.clone();
        let setup = self.setup;
        let offset = setup.offset();
        let values = served - offset;
        let picks: Vec<u64> = if values == 0 {
            Vec::new()
        } else if all && values <= 4096 {
            (offset..served).collect()
        } else {
            let mut picks = vec![offset, served - 1, offset + values / 2];
            picks.extend((0..3).map(|_| self.rng.gen_range(offset..served)));
            picks
        };
        match subject {
            Subject::Store(store) => {
                let snapshot = store.snapshot();
                if all {
                    check_all_leaves(&snapshot, &self.r.cur().values, &ctx);
                }
                for &i in &picks {
                    assert_eq!(snapshot.leaf(i), Some(self.r.value(i)), "{ctx}: leaf {i}");
                }
                assert_eq!(snapshot.leaf(served), None, "{ctx}: a leaf past the end");
            }
            Subject::Database(db) => {
                // Lookups of held values, of removed ones and of never-used ones.
                let mut asked: Vec<Hash> = picks.iter().map(|&i| self.r.value(i)).collect();
                let mut want: Vec<Option<u64>> = picks.iter().map(|&i| Some(i)).collect();
                let held = &self.r.cur().values[..values as usize];
                for v in self.r.removed.iter().take(8) {
                    if !held.contains(v) {
                        asked.push(*v);
                        want.push(None);
                    }
                }
                let never = crate::leaf(setup.seed ^ NEVER, self.rng.r#gen());
                asked.push(never);
                want.push(None);
                let got = db
                    .lookup(&asked)
                    .unwrap_or_else(|e| panic!("{ctx}: lookup: {e}"));
                // Values appended since the durable head are not found yet.
                assert_eq!(got.size, served, "{ctx}: the lookup's size");
                assert_eq!(got.indices, want, "{ctx}: lookups");
                if db.supports(Operation::LeafRange).is_ok() && all {
                    let leaves = db
                        .leaves(0, None)
                        .unwrap_or_else(|e| panic!("{ctx}: leaves: {e}"));
                    assert!(leaves == held, "{ctx}: the leaves differ from the model's");
                }
                if db.supports(Operation::AbsenceProof).is_ok() {
                    match db.prove_absence(&never) {
                        Ok(cairn_db::Proof::Absence(proof)) => proof
                            .verify(setup.arity(), setup.hash, head, &never)
                            .unwrap_or_else(|e| panic!("{ctx}: absence proof: {e}")),
                        other => panic!("{ctx}: absence proof: {other:?}"),
                    }
                    self.coverage.absence_proofs += 1;
                }
            }
        }
        for &i in picks.iter().rev().take(2) {
            let value = self.r.value(i);
            subject
                .check_proof(&setup, i, &value, head)
                .unwrap_or_else(|e| panic!("{ctx}: proof of {i} at {served}: {e}"));
        }
    }

    /// Consistency proofs from earlier served heads, and membership at them.
    pub(super) fn check_history(&mut self, subject: &Subject, head: &TreeHead) {
        let ctx = self.ctx.clone();
        let tree = self.setup.tree();
        self.heads.retain(|h| h.size <= head.size);
        for _ in 0..2 {
            let Some(&old) = self
                .heads
                .get(self.rng.gen_range(0..self.heads.len().max(1)))
            else {
                break;
            };
            let proof = match subject {
                Subject::Store(store) => store.snapshot().prove_consistency(old.size, head.size),
                Subject::Database(db) => {
                    db.prove_consistency(old.size, None).map_err(|e| match e {
                        cairn_db::DbError::Tree(e) => e,
                        other => panic!("{ctx}: consistency: {other}"),
                    })
                }
            }
            .unwrap_or_else(|e| {
                panic!(
                    "{ctx}: prove consistency {} -> {}: {e}",
                    old.size, head.size
                )
            });
            proof.verify_with(&tree, &old, head).unwrap_or_else(|e| {
                panic!("{ctx}: consistency {} -> {}: {e}", old.size, head.size)
            });
            if old.size > 0 {
                let i = self.rng.gen_range(0..old.size);
                let proof = match subject {
                    Subject::Store(store) => store.snapshot().prove_at(i, old.size).ok(),
                    Subject::Database(db) => match db.prove(i, cairn_db::At::Size(old.size)) {
                        Ok(cairn_db::Proof::Membership(proof)) => Some(proof),
                        other => panic!("{ctx}: proof at {}: {other:?}", old.size),
                    },
                };
                proof
                    .expect("a proof at an earlier size")
                    .verify_with(&tree, &old)
                    .unwrap_or_else(|e| {
                        panic!("{ctx}: proof of {i} at old size {}: {e}", old.size)
                    });
            }
        }
        if !self.heads.contains(head) {
            if self.heads.len() >= KEEP_HEADS {
                // Keep the oldest (the widest consistency proofs) and recent ones.
                let drop = self.rng.gen_range(1..self.heads.len());
                self.heads.remove(drop);
            }
            self.heads.push(*head);
        }
    }

    /// The tags served (all of the store's, a database's durable prefix)
    /// with their roots, head lookups by block and root lookups.
    pub(super) fn check_tags(&mut self, subject: &Subject, served: u64, all: bool) {
        let ctx = self.ctx.clone();
        let heads = subject.heads();
        let want: Vec<Tag> = self.r.cur().tags.clone();
        match subject {
            Subject::Store(_) => assert_eq!(heads.len(), want.len(), "{ctx}: tag count"),
            Subject::Database(_) => {
                assert!(heads.len() <= want.len(), "{ctx}: more tags than appended");
                if let Some(missing) = want[heads.len()..].iter().find(|t| t.size < served) {
                    panic!(
                        "{ctx}: the durable tag of block {} is not served",
                        missing.block
                    );
                }
            }
        }
        for (got, want) in heads.iter().zip(&want) {
            assert_eq!(
                (got.block, got.block_hash, got.size),
                (want.block, want.hash, want.size),
                "{ctx}: tag"
            );
        }
        let picks: Vec<usize> = if all || heads.len() <= 12 {
            (0..heads.len()).collect()
        } else {
            let mut picks: Vec<usize> = (heads.len() - 4..heads.len()).collect();
            picks.extend((0..4).map(|_| self.rng.gen_range(0..heads.len())));
            picks
        };
        for i in picks {
            let tag = want[i];
            let root = self.r.root(tag.size);
            assert_eq!(heads[i].root, root, "{ctx}: root of tag {i}");
            let block = self.r.cur().first_block_at(tag.size);
            if let (Some(root), Subject::Store(store)) = (root, subject) {
                assert_eq!(
                    store.size_of_root(&root),
                    Some(RootAt {
                        size: tag.size,
                        block
                    }),
                    "{ctx}: size_of_root of tag {i} (block {})",
                    tag.block
                );
                assert_eq!(
                    store.head_at_block(tag.block),
                    Some(heads[i]),
                    "{ctx}: head_at_block"
                );
            }
            if let (Some(root), Subject::Database(db)) = (root, subject) {
                let found = db
                    .size_of_root(&root)
                    .unwrap_or_else(|e| panic!("{ctx}: {e}"));
                assert_eq!(
                    found.map(|at| at.size),
                    Some(tag.size),
                    "{ctx}: size_of_root of tag {i}"
                );
            }
        }
        let Subject::Store(store) = subject else {
            return;
        };
        if let Some(last) = want.last() {
            let block = self.rng.gen_range(0..=last.block + 1);
            let tagged = self.r.cur().tagged(block).map(|t| (t.block, t.size));
            assert_eq!(
                store.head_at_block(block).map(|h| (h.block, h.size)),
                tagged,
                "{ctx}: head_at_block {block}"
            );
        }
        // Recent appends' roots, as the window keeps them.
        for s in self.r.recent.clone() {
            if s == 0 || s > served {
                continue;
            }
            let root = self.r.root(s).expect("a nonempty tree");
            assert_eq!(
                store.size_of_root(&root),
                Some(RootAt {
                    size: s,
                    block: self.r.cur().first_block_at(s)
                }),
                "{ctx}: size_of_root of recent size {s}"
            );
        }
        // Rolled-back roots are not found, unless the same leaves are back.
        for root in self.r.gone.clone() {
            if let Some(at) = store.size_of_root(&root) {
                assert!(
                    at.size <= served && self.r.root(at.size) == Some(root),
                    "{ctx}: a rolled-back root resolves to size {}",
                    at.size
                );
            }
        }
    }

    /// The store's own: tokens, figures, tiering and kept snapshots.
    pub(super) fn check_store(&mut self, store: &cairn_store::Store, size: u64, durable: u64) {
        let ctx = self.ctx.clone();
        for t in &self.pending {
            let Pending::Token(token) = &t.pending else {
                unreachable!("a store's pending append is a token")
            };
            match token.is_durable() {
                Err(StoreError::RolledBack { end, to }) => {
                    assert!(t.rolled_back, "{ctx}: token to {} says rolled back", t.end);
                    assert!(end == t.end && to <= size, "{ctx}: RolledBack {end} {to}");
                }
                Ok(now) => {
                    assert!(!t.rolled_back, "{ctx}: rolled-back token to {}", t.end);
                    if now || t.tag.is_none() {
                        assert_eq!(now, durable >= t.end, "{ctx}: token to {}", t.end);
                    }
                }
                Err(e) => panic!("{ctx}: token to {}: {e}", t.end),
            }
        }
        let stats = store.stats();
        let (number, _) = self.last_checkpoint();
        if stats.checkpoint_number > number {
            // Published by a finalization or a rollback.
            let at = self.now();
            self.checkpoints
                .push((at, stats.checkpoint_number, stats.checkpoint_size));
            self.tier_after_checkpoint(stats.checkpoint_size);
        }
        assert_eq!(
            (
                stats.size,
                stats.durable,
                stats.finalized,
                stats.tagged_heads
            ),
            (
                size,
                durable,
                self.r.finalized,
                self.r.cur().tags.len() as u64
            ),
            "{ctx}: stats"
        );
        let (number, covered) = self.last_checkpoint();
        assert_eq!(
            (stats.checkpoint_number, stats.checkpoint_size),
            (number, covered),
            "{ctx}: stats (checkpoint number, checkpoint size)"
        );
        if !self.setup.explicit && !self.rolled_back && self.setup.kind == Kind::Lean {
            assert_eq!(stats.tiered_segments, self.tiered, "{ctx}: tiered segments");
        }
        if let Some(&segments) = stats.tiered_segments.first() {
            assert!(
                (segments * SEGMENT_LEN) as u64 <= self.r.finalized.saturating_sub(1),
                "{ctx}: {segments} level-0 segments mapped, {} leaves final",
                self.r.finalized
            );
            self.coverage.tiered = self.coverage.tiered.max(segments);
        }
        let tree = self.setup.tree();
        for (k, kept) in self.snapshots.iter().enumerate() {
            assert_eq!(kept.snapshot.head(), kept.head, "{ctx}: kept snapshot {k}");
            for &(i, leaf) in &kept.samples {
                assert_eq!(
                    kept.snapshot.leaf(i),
                    Some(leaf),
                    "{ctx}: kept {k}, leaf {i}"
                );
            }
            if let Some(&(i, leaf)) = kept.samples.last() {
                let proof = kept.snapshot.prove(i).expect("a kept leaf");
                assert_eq!(proof.leaf(), leaf);
                proof
                    .verify_with(&tree, &kept.head)
                    .unwrap_or_else(|e| panic!("{ctx}: kept snapshot {k}, proof of {i}: {e}"));
            }
        }
    }
}

/// Values of this stream are never appended.
const NEVER: u64 = 0x006e_6576_6572;

/// Checks that `snapshot` holds exactly `leaves`.
fn check_all_leaves(snapshot: &Snapshot, leaves: &[Hash], ctx: &str) {
    let size = leaves.len();
    assert_eq!(snapshot.size(), size as u64, "{ctx}: size");
    if size == 0 {
        return;
    }
    let finals = snapshot.final_nodes(0);
    assert_eq!(finals.len(), size - 1, "{ctx}: final leaves");
    if let Some(i) = finals
        .iter()
        .zip(leaves)
        .position(|(got, want)| got != want)
    {
        panic!("{ctx}: leaf {i} of {size} differs from the model");
    }
    assert_eq!(
        snapshot.edge()[0],
        ((size - 1) as u64, leaves[size - 1]),
        "{ctx}: the last leaf"
    );
}
