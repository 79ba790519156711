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

use cairn_core::cast::to_usize;
use cairn_core::level::Level;
use cairn_core::{Hash, LeanImt, Snapshot, TreeHead};

use crate::checkpoint::{self, Checkpoints, Marks};
use crate::error::{Result, StoreError};
use crate::heads::{RootAt, TaggedHead};
use crate::log::{HeadsDurable, LogWriter};
use crate::store::{Inner, Store, poisoned};

impl Store {
    /// Rolls the tree back to its first `to` leaves: every leaf from `to`
    /// on and every block-tagged head above `to` is removed, atomically
    /// and durably (after a crash at any instant the store opens either as
    /// before the call or as after it). Tokens of removed appends fail with
    /// [`StoreError::RolledBack`]; snapshots taken before keep answering as
    /// before; the next append reuses index `to`. Refused below the
    /// finalized size. Returns the new head.
    pub fn truncate(&self, to: u64) -> Result<TreeHead> {
        self.inner.rollback(to, None, false)
    }

    /// [`Store::truncate`] for a caller whose own durable record (a
    /// database's block journal) already holds the rollback: memory
    /// answers as after it at once, and the store's files are brought
    /// there at its next write (the next flush, checkpoint or close
    /// publishes the rollback first, as [`Store::truncate`] would have),
    /// so the call itself syncs nothing. Until then the files still hold
    /// the removed leaves: a crash reopens the store as before the call,
    /// and the caller must roll it back again from its record. A store
    /// with block-tagged heads is rolled back durably at once.
    pub fn truncate_deferred(&self, to: u64) -> Result<TreeHead> {
        self.inner.rollback(to, None, true)
    }

    /// Whether a [`Store::truncate_deferred`] still waits to reach the
    /// files.
    pub fn rollback_pending(&self) -> bool {
        self.inner.deferred.lock().is_some()
    }

    /// Publishes a rollback [`Store::truncate_deferred`] left to the
    /// files now (nothing if none is pending).
    pub fn settle_rollback(&self) -> Result<()> {
        self.inner.writable("roll back")?;
        self.inner.settle_locking()
    }

    /// Rolls back to the end of the last append tagged at or below `block`
    /// (removing every later tagged head, even at the same size).
    pub fn truncate_to_block(&self, block: u64) -> Result<TreeHead> {
        let head = self
            .head_at_block(block)
            .ok_or(StoreError::NoHeadAtBlock { block })?;
        self.inner.rollback(head.size, Some(block), false)
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

/// A rollback made in memory only ([`Store::truncate_deferred`]): the
/// tree as it left it, which its publication writes.
#[derive(Debug)]
pub(crate) struct Deferred {
    /// The size rolled back to (the lowest, if several were deferred).
    pub(crate) to: u64,
    pub(crate) snapshot: Arc<Snapshot>,
    pub(crate) leaves: Level,
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
    ///
    /// A rollback that reaches durable state (leaves in the log, records
    /// in the heads file) publishes its checkpoint before memory says
    /// anything of it, holding appends off meanwhile (the tree lock, for
    /// the time of the checkpoint's writes): a failure before the
    /// checkpoint is in place puts the tree back as it was, changes
    /// nothing else, and is reported like a failed checkpoint; only a
    /// failed log write, or a failure once the new checkpoint has its name
    /// (it may or may not be durable, and the log is rewound for it), stops
    /// acknowledgements.
    pub(crate) fn rollback(
        &self,
        to: u64,
        max_block: Option<u64>,
        defer: bool,
    ) -> Result<TreeHead> {
        self.writable("roll back")?;
        // Lock order: checkpoints -> log -> tree (-> heads, durable).
        let mut checkpoints = self.checkpoints.lock();
        let mut log = self.log.lock();
        if self.closed.load(Ordering::Acquire) {
            return Err(StoreError::Closed);
        }
        if !defer {
            // A durable rollback starts from files that say what memory
            // says.
            self.settle_with(&mut checkpoints, &mut log)?;
        }
        let finalized = Inner::finalized(&checkpoints);
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
        let (tags_before, kept) = {
            let heads = self.heads.lock();
            (heads.tags().len(), heads.kept(to, max_block))
        };
        if to == size && kept == tags_before {
            // The new head's root is found by value like an append's.
            self.heads.lock().note_append(to);
            return Ok(tree.head());
        }
        // Records in the heads file that stay valid: the checkpoint below
        // counts only these; kept tags not written yet are written by
        // later flushes, in the new epoch.
        let written = self.heads_writer.lock().written() as u64;
        let written_kept = (kept as u64).min(written);
        let reaches_disk = to < log.end() || written_kept < written;
        // Deferred: only a store without tagged heads (no heads file to
        // rewind), whose log holds leaves from `to` on.
        let defer = defer && reaches_disk && tags_before == 0 && written == 0;
        // The leaves to put back if the publication fails (shared, not
        // copied).
        let removed = (reaches_disk && !defer).then(|| tree.share_leaves());
        tree.truncate(to)?;
        // One `Arc`: cloning a `Snapshot` would deep-copy its levels.
        let snapshot = Arc::new(tree.snapshot());
        if defer {
            let mut deferred = self.deferred.lock();
            // The lowest size rolled back to is the one the files go to;
            // leaves appended since are written after it.
            if deferred.as_ref().is_none_or(|d| to < d.to) {
                *deferred = Some(Deferred {
                    to,
                    snapshot: Arc::clone(&snapshot),
                    leaves: tree.share_leaves(),
                });
            }
        }
        let mut failure = None;
        let mut stale = Vec::new();
        if let Some(removed) = removed {
            let leaves = tree.share_leaves();
            let marks = Marks {
                chain: log.chain(),
                finalized,
                epoch: self.heads_writer.lock().epoch() + 1,
                heads: written_kept,
                rollback_floor: self.rollback_floor.load(Ordering::Acquire).min(to),
            };
            match self.publish_rollback(&mut checkpoints, &mut log, &snapshot, &leaves, marks) {
                Ok(files) => {
                    stale = files;
                    self.note_checkpoint::<()>(&Ok(()));
                }
                Err(Unpublished { error, log_failed }) => {
                    put_back(&mut tree, &removed, to, size);
                    drop(tree);
                    if log_failed {
                        let mut durable = self.durable.lock();
                        self.record_flush(&mut durable, Err(error.clone()));
                    } else {
                        self.note_checkpoint::<()>(&Err(error.clone()));
                    }
                    return Err(error);
                }
                Err(Published(error)) => failure = Some(error),
            }
        }
        // What is on disk now (or, after a failure past the checkpoint's
        // rename, named there) becomes memory's.
        {
            let mut heads = self.heads.lock();
            heads.truncate(to, max_block);
            heads.note_append(to);
        }
        self.size.store(to, Ordering::Release);
        self.published.store(Arc::clone(&snapshot));
        {
            let mut durable = self.durable.lock();
            let epoch = self.epoch.fetch_add(1, Ordering::AcqRel) + 1;
            durable.cuts.push((epoch, to, kept as u64));
            if reaches_disk && !defer {
                durable.end = to;
                durable.tags = written_kept;
            } else {
                durable.end = durable.end.min(to);
                durable.tags = durable.tags.min(written_kept);
            }
            // Nothing of the old tree stays published.
            self.publish_head(&durable, Some(Arc::clone(&snapshot)));
            if let Some(error) = &failure {
                self.record_flush(&mut durable, Err(error.clone()));
            }
        }
        let head = snapshot.head();
        drop(tree);
        // Waiters on rolled-back appends find out now.
        self.notify_durable();
        if let Some(error) = failure {
            return Err(error);
        }
        // Published: the removed leaves' files are garbage now (a crash
        // before their removal leaves them to recovery). A failure here
        // changes nothing the store reads; it is reported, and the
        // rollback stands.
        if let Err(error) = log.remove_files(&stale) {
            self.note_checkpoint::<()>(&Err(error));
        }
        Ok(head)
    }

    /// [`Inner::settle_with`] taking the locks (checkpoints -> log); the
    /// caller holds neither.
    pub(crate) fn settle_locking(&self) -> Result<()> {
        if self.deferred.lock().is_none() {
            return Ok(());
        }
        let mut checkpoints = self.checkpoints.lock();
        let mut log = self.log.lock();
        if self.closed.load(Ordering::Acquire) {
            return Err(StoreError::Closed);
        }
        self.settle_with(&mut checkpoints, &mut log)
    }

    /// [`Inner::settle_with`] under the checkpoint lock the caller holds.
    pub(crate) fn settle(&self, checkpoints: &mut Checkpoints) -> Result<()> {
        if self.deferred.lock().is_none() {
            return Ok(());
        }
        let mut log = self.log.lock();
        self.settle_with(checkpoints, &mut log)
    }

    /// Publishes a deferred rollback (see [`Store::truncate_deferred`]):
    /// the log rewound to its size and its checkpoint published, exactly
    /// as the rollback would have at once; memory says so already. On a
    /// failure before the checkpoint has its name nothing changed and it
    /// stays pending; after, the store is poisoned (as a failed rollback
    /// publication leaves it).
    pub(crate) fn settle_with(
        &self,
        checkpoints: &mut Checkpoints,
        log: &mut LogWriter,
    ) -> Result<()> {
        let Some(pending) = self.deferred.lock().take() else {
            return Ok(());
        };
        if pending.to >= log.end() {
            return Ok(());
        }
        let marks = Marks {
            chain: log.chain(),
            finalized: Inner::finalized(checkpoints),
            epoch: self.heads_writer.lock().epoch() + 1,
            heads: 0,
            rollback_floor: self.rollback_floor.load(Ordering::Acquire).min(pending.to),
        };
        match self.publish_rollback(checkpoints, log, &pending.snapshot, &pending.leaves, marks) {
            Ok(stale) => {
                self.note_checkpoint::<()>(&Ok(()));
                if let Err(error) = log.remove_files(&stale) {
                    self.note_checkpoint::<()>(&Err(error));
                }
                Ok(())
            }
            Err(Unpublished { error, log_failed }) => {
                *self.deferred.lock() = Some(pending);
                if log_failed {
                    let mut durable = self.durable.lock();
                    self.record_flush(&mut durable, Err(error.clone()));
                } else {
                    self.note_checkpoint::<()>(&Err(error.clone()));
                }
                Err(error)
            }
            Err(Published(error)) => {
                let mut durable = self.durable.lock();
                self.record_flush(&mut durable, Err(error.clone()));
                Err(error)
            }
        }
    }

    /// The durable part of a rollback to `snapshot`'s size: the log rewound
    /// (or, when only block tags go, written up to the size), then its
    /// checkpoint published. Returns the log files to remove.
    fn publish_rollback(
        &self,
        checkpoints: &mut Checkpoints,
        log: &mut LogWriter,
        snapshot: &Snapshot,
        leaves: &Level,
        mut marks: Marks,
    ) -> std::result::Result<Vec<u64>, RollbackFailure> {
        let to = snapshot.size();
        self.make_files(log).map_err(|error| Unpublished {
            error,
            log_failed: false,
        })?;
        let before = log.clone();
        let unpublished = |error| Unpublished {
            error,
            log_failed: false,
        };
        let stale = if to < log.end() {
            // Reads only; the writer changes after them.
            log.rewind(to).map_err(unpublished)?.1
        } else {
            let heads = {
                let writer = self.heads_writer.lock();
                HeadsDurable {
                    records: writer.written() as u64,
                    epoch: writer.epoch(),
                }
            };
            log.commit(leaves, to, heads).map_err(|error| Unpublished {
                error,
                log_failed: true,
            })?;
            Vec::new()
        };
        // The chain value of the log as rewound or written.
        marks.chain = log.chain();
        let path = self.layout.checkpoint();
        let named_before = self.fs.identity(&path).ok();
        let written = self.check_level_files(checkpoints).and_then(|()| {
            checkpoint::write(
                &*self.fs,
                &self.dir,
                &self.meta,
                checkpoints,
                snapshot,
                log.next(),
                marks,
            )
        });
        if let Err(error) = written {
            // The name tells whether the new checkpoint is in place: a
            // `stat` needs no descriptor, so it answers when the process
            // has none left.
            if self.fs.identity(&path).ok() == named_before {
                *log = before;
                return Err(unpublished(error));
            }
            self.rollback_floor.fetch_min(to, Ordering::AcqRel);
            self.heads_writer.lock().rewind(marks.heads, marks.epoch);
            return Err(Published(error));
        }
        self.checkpoint_published();
        self.rollback_floor.fetch_min(to, Ordering::AcqRel);
        self.heads_writer.lock().rewind(marks.heads, marks.epoch);
        Ok(stale)
    }
}

/// How a rollback's publication failed.
enum RollbackFailure {
    /// Before its checkpoint had its name: the old one is in force and the
    /// log writer is as it was (unless the log write itself failed, which
    /// stops acknowledgements).
    Unpublished { error: StoreError, log_failed: bool },
    /// Once its checkpoint had its name (which a crash may or may not keep).
    Published(StoreError),
}

use RollbackFailure::{Published, Unpublished};

/// Appends leaves `from..to` of `removed` (the tree's leaves before it was
/// truncated to `from`) again: the tree as it was before the truncation.
fn put_back(tree: &mut LeanImt, removed: &Level, from: u64, to: u64) {
    let mut at = from;
    while at < to {
        let run = removed.run_from(to_usize(at));
        let take = to_usize((run.len() as u64).min(to - at));
        tree.append_batch(&run[..take])
            .expect("leaves the tree held are accepted again");
        at += take as u64;
    }
}
