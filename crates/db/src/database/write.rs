//! Rollbacks, finality, publication pins, flushes, checkpoints and
//! backups, for every kind, in the tree's sizes. A rollback holds appends
//! off, opens the read gate, and flushes before it closes it: every tag it
//! left is durable, and no append made before it stays pending (so the
//! last append's token, which duplicates of pending values wait for, is
//! dropped).

use std::path::Path;

use cairn_core::TreeHead;
use cairn_store::{Backup, CheckpointMeta, StoreError};

use super::{Database, Kind};
use crate::error::{DbError, Result};
use crate::operation::Operation;

/// Where a rollback or a finalization goes.
#[derive(Clone, Copy, Debug)]
enum Target {
    Size(u64),
    Block(u64),
    /// A size, the files brought there at the next write.
    Deferred(u64),
}

/// What a checkpoint did, in the tree's sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checkpointed {
    /// Whether one was written (`false`: the last one covered everything).
    pub written: bool,
    /// The number of the last checkpoint on disk (0: none yet).
    pub number: u64,
    /// The leaves it covers (an indexed tree's guard included).
    pub size: u64,
    /// The leaves the nullifier set's checkpoint covers, if it has one.
    pub set_size: Option<u64>,
}

impl Database {
    /// Rolls back to the tree of the first `size` leaves: atomic and
    /// durable, refused below the finalized size; every tag left is
    /// durable once it returns; the removed values can be appended again;
    /// acknowledgements of removed appends fail with
    /// [`StoreError::RolledBack`].
    pub fn truncate(&self, size: u64) -> Result<TreeHead> {
        self.roll_back(Target::Size(size))
    }

    /// Rolls back to the end of the last append tagged at or below `block`
    /// ([`Operation::BlockTags`]).
    pub fn truncate_to_block(&self, block: u64) -> Result<TreeHead> {
        self.supports(Operation::BlockTags)?;
        self.roll_back(Target::Block(block))
    }

    /// [`Database::truncate`] for a caller whose own durable record (a
    /// database's block journal) holds the rollback: memory and reads
    /// answer as after it at once, the tree's files are brought there at
    /// its next write, and nothing is synced here. After a crash before
    /// then the tree reopens as before the call: the caller rolls it back
    /// again. An indexed tree is rolled back durably at once.
    pub fn truncate_deferred(&self, size: u64) -> Result<TreeHead> {
        self.roll_back(Target::Deferred(size))
    }

    /// Writes a rollback [`Database::truncate_deferred`] left to the
    /// tree's files now (nothing if none waits).
    pub fn settle_rollback(&self) -> Result<()> {
        match &self.kind {
            Kind::AppendOnly(db) => db.settle_rollback(),
            Kind::Indexed(_) | Kind::Mutable(_) => Ok(()),
        }
    }

    fn roll_back(&self, target: Target) -> Result<TreeHead> {
        // No append meanwhile: the flush below leaves nothing pending.
        if let (Target::Size(_) | Target::Deferred(_), true) = (target, self.is_mutable()) {
            self.supports(Operation::SizeRollback)?;
        }
        let mut last = self.appends.lock();
        let log = match &self.kind {
            Kind::AppendOnly(db) => Some(db),
            Kind::Mutable(db) => Some(db.log()),
            Kind::Indexed(_) => None,
        };
        if let (Target::Block(block), Some(db)) = (target, log)
            && db.head_at_block(block).is_none()
        {
            // Refused before reads are held off.
            return Err(StoreError::NoHeadAtBlock { block }.into());
        }
        let window = self.gate.open();
        let result = match (&self.kind, target) {
            (Kind::AppendOnly(db), Target::Size(size)) => db.truncate(size),
            (Kind::AppendOnly(db), Target::Block(block)) => db.truncate_to_block(block),
            (Kind::AppendOnly(db), Target::Deferred(size)) => {
                let head = db.truncate_deferred(size);
                // Nothing to flush: the caller's record is the durable one.
                *last = None;
                drop(window);
                return head;
            }
            (Kind::Indexed(db), Target::Size(size) | Target::Deferred(size)) => {
                let finalized = db.finalized_size();
                if size < finalized {
                    // The guard is always final: size 0 too.
                    Err(StoreError::BelowFinalized {
                        to: size,
                        finalized,
                    }
                    .into())
                } else {
                    db.truncate(size).map_err(in_tree_sizes)
                }
            }
            (Kind::Mutable(db), Target::Block(block)) => db.rollback_to_block(block),
            (Kind::Indexed(_), Target::Block(_))
            | (Kind::Mutable(_), Target::Size(_) | Target::Deferred(_)) => {
                unreachable!("refused above")
            }
        }
        .and_then(|head| {
            // Every tag left is durable once the flush returns (it writes
            // the pending ones); later ones are not counted.
            let tagged = match &self.kind {
                Kind::AppendOnly(db) => db.head_at_block(u64::MAX).map(|head| head.block),
                Kind::Mutable(db) => db.log().head_at_block(u64::MAX).map(|head| head.block),
                Kind::Indexed(_) => None,
            };
            self.flush()?;
            *self.acked_block.lock() = tagged;
            match &self.kind {
                Kind::AppendOnly(_) => Ok(head),
                // An indexed tree answers its durable head, which reaches
                // the new size only once the flush made the values below
                // it durable (appends are held off meanwhile).
                Kind::Indexed(_) | Kind::Mutable(_) => Ok(self.head()),
            }
        });
        // Everything appended before is durable now, or removed.
        *last = None;
        drop(window);
        result
    }

    /// Marks the first `size` leaves final: no rollback below them. Never
    /// lowered; returns the finalized size. Durable when it returns.
    pub fn finalize(&self, size: u64) -> Result<u64> {
        match &self.kind {
            Kind::AppendOnly(db) => db.finalize(size),
            Kind::Indexed(db) => db.finalize(size).map_err(in_tree_sizes),
            Kind::Mutable(_) => Err(DbError::UnsupportedMutable {
                operation: Operation::SizeRollback,
                kind: self.kind(),
            }),
        }
    }

    /// Finalizes up to the end of the last append tagged at or below
    /// `block` ([`Operation::BlockTags`]).
    pub fn finalize_to_block(&self, block: u64) -> Result<u64> {
        match &self.kind {
            Kind::Mutable(db) => db.finalize_to_block(block),
            _ => self
                .append_only(Operation::BlockTags)?
                .finalize_to_block(block),
        }
    }

    /// Makes `head` final before a publication names it (tiles, a signed
    /// checkpoint), so that no rollback can ever contradict it: after this
    /// a rollback below `head.size` is refused. [`DbError::HeadChanged`]
    /// when the tree was rolled back and regrown since the snapshot `head`
    /// came from (the publisher retries with a fresh one).
    pub fn pin_published(&self, head: &TreeHead) -> Result<()> {
        let db = self.append_only(Operation::Tiles)?;
        db.finalize(head.size)?;
        let now = db.snapshot().tree().view(head.size)?.head();
        if now != *head {
            return Err(DbError::HeadChanged { size: head.size });
        }
        Ok(())
    }

    /// Makes everything appended so far durable; returns the durable size.
    pub fn flush(&self) -> Result<u64> {
        match &self.kind {
            Kind::AppendOnly(db) => db.flush(),
            Kind::Indexed(db) => Ok(db.flush()?.size),
            Kind::Mutable(db) => db.flush(),
        }
    }

    /// Makes the tree's first `size` leaves durable and writes none past
    /// them (in the tree's sizes: an indexed tree's guard counts); returns
    /// the durable size. What a database of several trees uses to make a
    /// tree catch up with its block journal, which already holds the
    /// leaves: a tree of such a database runs without background flushes
    /// or automatic checkpoints, so nothing else writes leaves the
    /// journal does not hold yet.
    pub fn flush_to(&self, size: u64) -> Result<u64> {
        match &self.kind {
            Kind::AppendOnly(db) => Ok(db.store.flush_to(size)?),
            Kind::Indexed(db) => Ok(db.flush_to(size.saturating_sub(1))? + 1),
            // Never in a database of several trees (which refuses one).
            Kind::Mutable(db) => db.flush(),
        }
    }

    /// Writes a checkpoint (flushing first): the tree's upper levels and
    /// the nullifier set, or an indexed tree's log of values, so the next
    /// open replays less.
    pub fn checkpoint(&self) -> Result<Checkpointed> {
        let (written, guard): (Option<CheckpointMeta>, u64) = match &self.kind {
            Kind::AppendOnly(db) => (db.checkpoint()?, 0),
            Kind::Indexed(db) => (db.checkpoint()?, 1),
            Kind::Mutable(db) => (db.checkpoint()?, 0),
        };
        let stats = self.stats();
        // A mutable tree's checkpoint covers changes (two log words each).
        let per = if self.is_mutable() {
            crate::mutable::WORDS_PER_CHANGE
        } else {
            1
        };
        Ok(Checkpointed {
            written: written.is_some(),
            number: stats.store.checkpoint_number,
            size: stats.store.checkpoint_size / per + guard,
            set_size: self.has_set().then_some(stats.set_checkpoint_size),
        })
    }

    /// Writes a consistent copy of the durable state into `dest` (created;
    /// it must not exist or be empty) while appends go on; it opens as a
    /// database of the same kind, size and root. `head` is the copy's.
    pub fn backup_to(&self, dest: impl AsRef<Path>) -> Result<Backup> {
        match &self.kind {
            Kind::AppendOnly(db) => db.backup_to(dest),
            Kind::Indexed(db) => {
                // The log of values is copied; the head is the tree's of
                // the values copied, which the durable head was when the
                // copy began (no rollback runs: this holds appends off).
                let _appends = self.appends.lock();
                let head = db.flush()?;
                let mut backup = db.backup_to(dest)?;
                debug_assert_eq!(backup.head.size + 1, head.size);
                backup.head = head;
                Ok(backup)
            }
            Kind::Mutable(db) => {
                // The log of changes is copied whole and flushed first; the
                // head is the tree's of the changes copied.
                let _appends = self.appends.lock();
                db.flush()?;
                let head = db.head();
                let mut backup = db.log().backup_to(dest)?;
                backup.head = head;
                Ok(backup)
            }
        }
    }
}

/// An error of an indexed tree's log (which counts values) in the tree's
/// sizes (which count the guard too).
fn in_tree_sizes(error: DbError) -> DbError {
    match error {
        DbError::Store(StoreError::BelowFinalized { to, finalized }) => {
            DbError::Store(StoreError::BelowFinalized {
                to: to + 1,
                finalized: finalized + 1,
            })
        }
        DbError::Store(StoreError::BeyondSize { what, to, size }) => {
            DbError::Store(StoreError::BeyondSize {
                what,
                to: to + 1,
                size: size + 1,
            })
        }
        other => other,
    }
}
