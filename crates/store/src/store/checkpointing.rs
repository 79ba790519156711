//! Taking a checkpoint: one flush and snapshot at the same size under
//! the flush lock, the level files written from the snapshot without the
//! tree lock, then tiering, the hook and the observer. Finality (which
//! leaves a rollback may no longer undo) is decided here.
//!
//! Only the flush can stop acknowledgements (it writes the log). Every
//! later failure leaves the last published checkpoint in force and memory
//! as it was (a finalization included): it is reported in the store's
//! health and tried again, since what the checkpoint would cover is
//! durable in the log already.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::durability::Taken;
use super::{Hook, Inner, Observer};
use crate::checkpoint::{self, Checkpoints, Marks};
use crate::error::{Result, StoreError};
use crate::format::CheckpointMeta;

impl Inner {
    /// Whether only [`Store::finalize`] finalizes (else every checkpoint
    /// finalizes what it covers).
    pub(crate) fn explicit_finality(&self) -> bool {
        self.meta.flags & crate::config::FLAG_EXPLICIT_FINALITY != 0
    }

    /// The size below which a rollback is refused.
    pub(crate) fn finalized(checkpoints: &Checkpoints) -> u64 {
        checkpoints.last.as_ref().map_or(0, |c| c.finalized)
    }

    /// A checkpoint of everything appended so far; with `finalize`, one
    /// that also finalizes that many leaves (published even if nothing
    /// else changed).
    pub(crate) fn checkpoint(&self, finalize: Option<u64>) -> Result<Option<CheckpointMeta>> {
        self.checkpoint_as(finalize, false)
    }

    /// [`Inner::checkpoint`]; with `rewrite`, published even if it covers
    /// nothing new (the checkpoint a store of an older format is migrated
    /// with: it adds the sums).
    pub(crate) fn checkpoint_as(
        &self,
        finalize: Option<u64>,
        rewrite: bool,
    ) -> Result<Option<CheckpointMeta>> {
        self.writable(if finalize.is_some() {
            "finalize"
        } else {
            "checkpoint"
        })?;
        let result = self.write_checkpoint(finalize, rewrite);
        match &result {
            // A failed flush poisoned the store: that is its report.
            Err(_) if self.poisoned.load(Ordering::Acquire) => {}
            Err(error) if !error.is_storage_fault() => {}
            result => self.note_checkpoint(result),
        }
        result
    }

    fn write_checkpoint(
        &self,
        finalize: Option<u64>,
        rewrite: bool,
    ) -> Result<Option<CheckpointMeta>> {
        let started = Instant::now();
        let mut checkpoints = self.checkpoints.lock();
        self.settle(&mut checkpoints)?;
        // Flush and snapshot at one size, under the flush lock only.
        let mut taken = None;
        let appends = self.appends.load(Ordering::Relaxed);
        let result = self.flush_log(Some(&mut taken));
        {
            let mut durable = self.durable.lock();
            self.record_flush(&mut durable, result.clone());
        }
        result?;
        let Taken {
            snapshot,
            resume,
            chain,
            heads,
            epoch,
        } = taken.expect("flush_log fills the snapshot");
        if let Some(size) = finalize
            && size > snapshot.size()
        {
            // A rollback ran between the caller's check and this flush.
            return Err(StoreError::BeyondSize {
                what: "finalize",
                to: size,
                size: snapshot.size(),
            });
        }
        let last = checkpoints.last.as_ref();
        let before = last.map_or(0, |c| c.finalized);
        let finalized = match finalize {
            Some(size) => before.max(size),
            None if self.explicit_finality() => before,
            None => snapshot.size(),
        };
        if !rewrite
            && last.map_or(0, |c| c.size) == snapshot.size()
            && finalized == before
            && last.map_or(0, |c| c.heads) == heads
        {
            let failing = self.upkeep.lock().is_checkpoint_failing();
            if failing && let Some(last) = checkpoints.last.clone() {
                // What failed after the last checkpoint was published
                // (tiering, the hook) is done again.
                self.tier(&mut checkpoints)?;
                if let Some(Hook(hook)) = &*self.hook.lock() {
                    hook(&last)?;
                }
            }
            return Ok(None);
        }
        self.make_files(&mut self.log.lock())?;
        // Nodes written to a level file that lost its name would not be
        // found by the open the checkpoint is for.
        self.check_level_files(&mut checkpoints)?;
        let written = checkpoint::write(
            &*self.fs,
            &self.dir,
            &self.meta,
            &mut checkpoints,
            &snapshot,
            resume,
            Marks {
                chain,
                finalized,
                epoch,
                heads,
                rollback_floor: self.rollback_floor.load(Ordering::Acquire),
            },
        );
        // A failure leaves the last checkpoint in force (or, past its
        // rename, this one, not yet known durable: either opens to every
        // durable leaf, since the log keeps them all), and memory as it
        // was: nothing acknowledged is at risk.
        let written = written?;
        self.checkpoint_published();
        self.appends_at_checkpoint.store(appends, Ordering::Relaxed);
        self.tier(&mut checkpoints)?;
        // Advisory: what the next open need not read again.
        let _ = self.write_verified(&written, std::time::Duration::ZERO);
        if let Some(Hook(hook)) = &*self.hook.lock() {
            hook(&written)?;
        }
        if let Some(Observer(observer)) = &*self.observer.lock() {
            observer(&written, started.elapsed());
        }
        Ok(Some(written))
    }
}
