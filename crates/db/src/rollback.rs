//! Rollback and finality for the database: the store's, plus the nullifier
//! set. Values of removed leaves leave the set (so they can be appended
//! again). The set's file is not rewritten: the store's rollback records
//! the size rolled back to (its rollback floor, cleared when a set file is
//! written afresh), and open drops the file's entries at or above it, so
//! that after a crash at any instant the set holds exactly the recovered
//! leaves.

use std::sync::atomic::Ordering;

use cairn_core::{Hash, TreeHead};
use cairn_store::{RootAt, TaggedHead};

use crate::db::Db;
use crate::error::Result;

impl Db {
    /// Rolls the database back to its first `to` leaves (see
    /// [`cairn_store::Store::truncate`]): atomic and durable, refused below
    /// the finalized size; the removed values can be appended again, and
    /// snapshots taken before keep answering as before (lookups included).
    pub fn truncate(&self, to: u64) -> Result<TreeHead> {
        self.rollback(to, None, false)
    }

    /// [`Db::truncate`] whose files catch up at the next write (see
    /// [`cairn_store::Store::truncate_deferred`]): for a caller whose own
    /// durable record holds the rollback.
    pub fn truncate_deferred(&self, to: u64) -> Result<TreeHead> {
        self.rollback(to, None, true)
    }

    /// Publishes a rollback [`Db::truncate_deferred`] left to the files.
    pub fn settle_rollback(&self) -> Result<()> {
        Ok(self.store.settle_rollback()?)
    }

    /// Rolls back to the end of the last append tagged at or below `block`,
    /// removing every later tagged head.
    pub fn truncate_to_block(&self, block: u64) -> Result<TreeHead> {
        let head = self
            .store
            .head_at_block(block)
            .ok_or(cairn_store::StoreError::NoHeadAtBlock { block })?;
        self.rollback(head.size, Some(block), false)
    }

    fn rollback(&self, to: u64, block: Option<u64>, defer: bool) -> Result<TreeHead> {
        let _writer = self.writer.lock();
        let from = self.store.size();
        let finalized = self.store.finalized_size();
        if to > from || to < finalized {
            // Let the store refuse it with its error, changing nothing.
            return Ok(self.store.truncate(to)?);
        }
        // The values leaving the set, read before the tree lets them go.
        let removed: Vec<Hash> = match &self.set {
            Some(_) if to < from => {
                let snapshot = self.store.snapshot();
                (to..from)
                    .map(|i| snapshot.leaf(i).expect("below the size"))
                    .collect()
            }
            _ => Vec::new(),
        };
        // Held to the end: no set checkpoint runs meanwhile (the store's
        // hook skips it, an explicit one waits and then sees the epoch).
        let mut covered = self.persist.as_ref().map(|p| p.covered.lock());
        if let (Some(persist), Some(covered)) = (&self.persist, covered.as_mut()) {
            persist.epoch.fetch_add(1, Ordering::AcqRel);
            // The set's file may cover removed leaves: the store's
            // rollback records its size as the floor (atomically with
            // the rollback), below which open trims the file's entries.
            **covered = (**covered).min(to);
        }
        let head = match block {
            Some(block) => self.store.truncate_to_block(block)?,
            None if defer => self.store.truncate_deferred(to)?,
            None => self.store.truncate(to)?,
        };
        if let Some(set) = &self.set
            && !removed.is_empty()
        {
            // Snapshots taken before this point scan the removed leaves.
            self.cuts.push(to);
            set.remove_batch(&removed, to, &[]);
        }
        drop(covered);
        Ok(head)
    }

    /// Marks the first `size` leaves final (see
    /// [`cairn_store::Store::finalize`]); returns the finalized size.
    pub fn finalize(&self, size: u64) -> Result<u64> {
        let _writer = self.writer.lock();
        Ok(self.store.finalize(size)?)
    }

    /// Finalizes up to the end of the last append tagged at or below `block`.
    pub fn finalize_to_block(&self, block: u64) -> Result<u64> {
        let _writer = self.writer.lock();
        Ok(self.store.finalize_to_block(block)?)
    }

    /// Block-tagged heads that are durable (the first this many of [`Db::heads`]).
    pub fn durable_tags(&self) -> u64 {
        self.store.durable_tags()
    }

    /// Leaves below which a rollback is refused.
    pub fn finalized_size(&self) -> u64 {
        self.store.finalized_size()
    }

    /// The block-tagged heads from block `from_block` on, at most `limit`.
    pub fn heads(&self, from_block: u64, limit: usize) -> Vec<TaggedHead> {
        self.store.heads(from_block, limit)
    }

    /// The last block-tagged head at or below `block`.
    pub fn head_at_block(&self, block: u64) -> Option<TaggedHead> {
        self.store.head_at_block(block)
    }

    /// The size whose root is `root` (every tagged head, and the last
    /// appends' roots: see [`cairn_store::Store::size_of_root`]).
    pub fn size_of_root(&self, root: &Hash) -> Option<RootAt> {
        self.store.size_of_root(root)
    }
}
