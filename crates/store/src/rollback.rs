//! Rollback and finality: undoing appends a chain reorganisation orphaned,
//! and marking what can no longer be undone.
//!
//! A rollback of leaves that are only in memory changes memory. One that
//! reaches durable leaves (or durable block-tagged heads) is published like
//! a checkpoint: the checkpoint at the new size, whose log position resumes
//! after every frame written before, *is* the commit point (atomic by
//! rename); log files past the new size are removed after it. Recovery
//! never scans the frames of rolled-back leaves again, and treats frames
//! numbered before the checkpoint's as leftovers. Only finalized nodes are
//! ever mapped from files, so the bytes a rollback lets the log and level
//! files write again are never under a mapping (docs/file-format.md,
//! "Rollback").

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use cairn_core::{Hash, TreeHead};

use crate::checkpoint::{self, Marks};
use crate::error::{Result, StoreError};
use crate::heads::{RootAt, TaggedHead};
use crate::log::HeadsDurable;
use crate::store::{Flushed, Inner, Store, poisoned};

impl Store {
    /// Rolls the tree back to its first `to` leaves: every leaf from `to`
    /// on and every block-tagged head above `to` is removed, atomically
    /// and durably (after a crash at any instant the store opens either as
    /// before the call or as after it). Tokens of removed appends fail with
    /// [`StoreError::RolledBack`]; snapshots taken before keep answering as
    /// before; the next append reuses index `to`. Refused below the
    /// finalized size. Returns the new head.
    pub fn truncate(&self, to: u64) -> Result<TreeHead> {
        self.inner.rollback(to, None)
    }

    /// Rolls back to the end of the last append tagged at or below `block`
    /// (removing every later tagged head, even at the same size).
    pub fn truncate_to_block(&self, block: u64) -> Result<TreeHead> {
        let head = self
            .head_at_block(block)
            .ok_or(StoreError::NoHeadAtBlock { block })?;
        self.inner.rollback(head.size, Some(block))
    }

    /// Marks the first `size` leaves final: a rollback below them is
    /// refused from now on, and their nodes may be served from file
    /// mappings. Durable when it returns (it publishes a checkpoint).
    /// Returns the finalized size (never lowered).
    pub fn finalize(&self, size: u64) -> Result<u64> {
        let current = self.finalized_size();
        if size <= current {
            return Ok(current);
        }
        let have = self.size();
        if size > have {
            return Err(StoreError::BeyondSize {
                what: "finalize",
                to: size,
                size: have,
            });
        }
        self.inner.checkpoint(Some(size))?;
        Ok(self.finalized_size())
    }

    /// Finalizes up to the end of the last append tagged at or below `block`.
    pub fn finalize_to_block(&self, block: u64) -> Result<u64> {
        let head = self
            .head_at_block(block)
            .ok_or(StoreError::NoHeadAtBlock { block })?;
        self.finalize(head.size)
    }

    /// The lowest size rolled back to since [`RollbackFloor::clear`]
    /// (as the last published checkpoint or rollback recorded it), if any:
    /// a derived file written before holds nothing valid at or above it.
    pub fn rollback_floor(&self) -> Option<u64> {
        let floor = self.inner.rollback_floor.load(Ordering::Acquire);
        (floor != u64::MAX).then_some(floor)
    }

    /// A handle the layer above keeps (in its checkpoint hook, say) to
    /// clear the rollback floor once it wrote its derived files afresh.
    pub fn rollback_floor_handle(&self) -> RollbackFloor {
        RollbackFloor(Arc::clone(&self.inner.rollback_floor))
    }

    /// Block-tagged heads that are durable (the first this many of [`Store::heads`]).
    pub fn durable_tags(&self) -> u64 {
        self.inner.durable.lock().tags
    }

    /// Leaves below which a rollback is refused.
    pub fn finalized_size(&self) -> u64 {
        Inner::finalized(&self.inner.checkpoints.lock())
    }

    /// The block-tagged heads from block `from_block` on, at most `limit`.
    pub fn heads(&self, from_block: u64, limit: usize) -> Vec<TaggedHead> {
        let heads = self.inner.heads.lock();
        let tags = heads.tags();
        let first = tags.partition_point(|t| t.block < from_block);
        tags[first..].iter().take(limit).copied().collect()
    }

    /// The block number of the last tagged append.
    pub fn last_block(&self) -> Option<u64> {
        self.inner.heads.lock().last_block()
    }

    /// The last block-tagged head at or below `block`.
    pub fn head_at_block(&self, block: u64) -> Option<TaggedHead> {
        self.inner.heads.lock().at_block(block)
    }

    /// The size whose root is `root`, among every block-tagged head and
    /// the last [`crate::StoreConfig::root_window`] appends (after a
    /// reopen, those since it), with the first block tagged at that size.
    /// From memory; roots of recent untagged appends are computed once,
    /// at the first lookup that needs them.
    pub fn size_of_root(&self, root: &Hash) -> Option<RootAt> {
        let (missing, epoch) = {
            let heads = self.inner.heads.lock();
            if let Some(found) = heads.lookup(root) {
                return Some(found);
            }
            (heads.missing_roots(), heads.epoch())
        };
        if missing.is_empty() {
            return None;
        }
        let snapshot = self.snapshot();
        let roots: Vec<(u64, Option<Hash>)> = missing
            .into_iter()
            .filter(|&size| size <= snapshot.size())
            .map(|size| (size, snapshot.view(size).ok().and_then(|v| v.root())))
            .collect();
        let mut heads = self.inner.heads.lock();
        heads.fill_roots(&roots, epoch);
        heads.lookup(root)
    }
}

/// Clears a store's rollback floor (see [`Store::rollback_floor`]).
#[derive(Debug, Clone)]
pub struct RollbackFloor(Arc<AtomicU64>);

impl RollbackFloor {
    /// The layer above wrote its derived files afresh: rollbacks before
    /// now no longer concern them. The next checkpoint records it; until
    /// then the old floor stands, which only costs a longer replay.
    pub fn clear(&self) {
        self.0.store(u64::MAX, Ordering::Release);
    }
}

impl Inner {
    /// See [`Store::truncate`]; with `max_block`, tagged heads of later
    /// blocks go too.
    pub(crate) fn rollback(&self, to: u64, max_block: Option<u64>) -> Result<TreeHead> {
        self.writable("roll back")?;
        // Lock order: checkpoints -> log -> tree (-> heads, durable).
        let mut checkpoints = self.checkpoints.lock();
        let mut log = self.log.lock();
        if self.closed.load(Ordering::Acquire) {
            return Err(StoreError::Closed);
        }
        let finalized = Inner::finalized(&checkpoints);
        let (snapshot, leaves, written_kept) = {
            let mut tree = self.tree.lock();
            if self.poisoned.load(Ordering::Acquire) {
                return Err(poisoned(
                    self.durable.lock().failure.as_ref().expect("poisoned"),
                ));
            }
            let size = tree.size();
            if to > size {
                return Err(StoreError::BeyondSize {
                    what: "roll back to",
                    to,
                    size,
                });
            }
            if to < finalized {
                return Err(StoreError::BelowFinalized { to, finalized });
            }
            let mut heads = self.heads.lock();
            let tags_before = heads.tags().len();
            let kept = heads.truncate(to, max_block);
            // The new head's root is found by value like an append's.
            heads.note_append(to);
            if to == size && kept == tags_before {
                return Ok(tree.head());
            }
            tree.truncate(to)?;
            self.size.store(to, Ordering::Release);
            // Records in the heads file that stay valid: the checkpoint
            // below counts only these; kept tags not written yet are
            // written by later flushes, in the new epoch.
            let written_kept = kept.min(self.heads_writer.lock().written()) as u64;
            // One `Arc`: cloning a `Snapshot` would deep-copy its levels.
            let snapshot = Arc::new(tree.snapshot());
            self.published.store(Arc::clone(&snapshot));
            {
                let mut durable = self.durable.lock();
                let epoch = self.epoch.fetch_add(1, Ordering::AcqRel) + 1;
                durable.cuts.push((epoch, to, kept as u64));
                durable.end = durable.end.min(to);
                durable.tags = durable.tags.min(written_kept);
                // Nothing of the old tree stays published.
                self.publish_head(&durable, Some(Arc::clone(&snapshot)));
            }
            (snapshot, tree.share_leaves(), written_kept)
        };
        // Waiters on rolled-back appends find out now.
        self.notify_durable();
        let head = snapshot.head();
        let written = self.heads_writer.lock().written() as u64;
        if to >= log.end() && written_kept == written {
            // Nothing durable is undone: memory was all there was.
            return Ok(head);
        }
        let published = (|| -> Result<()> {
            let stale = if to < log.end() {
                log.rewind(to)?.1
            } else {
                let heads = {
                    let writer = self.heads_writer.lock();
                    HeadsDurable {
                        records: writer.written() as u64,
                        epoch: writer.epoch(),
                    }
                };
                log.commit(&leaves, to, heads)?;
                Vec::new()
            };
            let epoch = self.heads_writer.lock().epoch() + 1;
            let floor = self.rollback_floor.fetch_min(to, Ordering::AcqRel).min(to);
            checkpoint::write(
                &*self.fs,
                &self.dir,
                &self.meta,
                &mut checkpoints,
                &snapshot,
                log.next(),
                Marks {
                    chain: log.chain(),
                    finalized,
                    epoch,
                    heads: written_kept,
                    rollback_floor: floor,
                },
            )?;
            self.heads_writer.lock().rewind(written_kept, epoch);
            // Published: the removed leaves' files are garbage now (a
            // crash before this line leaves them to recovery).
            log.remove_files(&stale)
        })();
        let mut durable = self.durable.lock();
        match published {
            Ok(()) => {
                let flushed = Flushed {
                    end: to,
                    tags: written_kept,
                    snapshot: Arc::clone(&snapshot),
                    epoch: self.epoch.load(Ordering::Acquire),
                };
                self.record_flush(&mut durable, Ok(flushed));
                Ok(head)
            }
            Err(error) => {
                self.record_flush(&mut durable, Err(error.clone()));
                Err(error)
            }
        }
    }
}
