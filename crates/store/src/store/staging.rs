//! Staged appends: a batch's leaves written into the log before the batch
//! is appended, so that the disk works while the caller does (the
//! database checks a batch against its nullifier set between the two).
//!
//! The protocol, and why it is safe:
//! 1. [`Store::stage`] takes the flush lock without waiting (a flush in
//!    progress means the log is busy: nothing is staged), and only when
//!    every appended leaf is already in the log: then the batch's first
//!    leaf goes at the log's end. It writes the leaves there, starts their
//!    writeback and records the write (`LogWriter::stage`). No frame is
//!    written, so the log's content does not change: recovery reads only
//!    framed leaves, and a crash leaves the staged bytes as an ignored tail.
//! 2. [`Store::append_staged`] appends the very leaves the handle staged
//!    (it owns them, so they cannot change in between) and, if they land
//!    where they were staged, notes the write's id under the tree lock.
//! 3. The next flush takes that note under the tree lock and passes it to
//!    `LogWriter::commit`, which skips writing the staged bytes when the
//!    write is still the recorded one and its CRC equals that of the
//!    tree's leaves there; it frames them and syncs as usual.
//!
//! Anything that could put other leaves at those positions drops the
//! record: a commit that writes them, a later staging, a rollback (which
//! also clears the note). A batch that is refused after staging simply
//! never produces the note. So a skipped write is always of bytes equal
//! to the tree's, and the `fdatasync` that frames them makes them durable
//! like any commit's.

use std::sync::atomic::Ordering;

use cairn_core::CheckedLeaves;

use super::{Appended, Batch, Inner, Store};
use crate::error::Result;
use crate::heads::BlockTag;

/// A batch whose leaves may have been written into the log ahead of its
/// append (see [`Store::stage`]); append it with [`Store::append_staged`]
/// or drop it.
#[derive(Debug)]
pub struct Staged<'a> {
    leaves: CheckedLeaves<'a>,
    /// Where the leaves were written and the write's id, if they were.
    written: Option<(u64, u64)>,
}

impl<'a> Staged<'a> {
    /// The leaves.
    pub fn leaves(&self) -> &CheckedLeaves<'a> {
        &self.leaves
    }

    /// Whether the leaves were written into the log (see [`Store::stage`]).
    pub fn is_written(&self) -> bool {
        self.written.is_some()
    }
}

impl Store {
    /// Writes `leaves` into the log where they will go if they are the
    /// next leaves appended, and starts their writeback, without appending
    /// them: they are neither visible nor durable, and the log's content
    /// does not change (nothing frames them). Append them with
    /// [`Store::append_staged`]: that append's commit then finds them
    /// written and only frames and syncs them, so the disk's writeback ran
    /// while the caller worked between the two calls.
    ///
    /// Only an optimisation: nothing is written for a batch below
    /// [`StoreConfig::stage_from`](crate::StoreConfig::stage_from) leaves, while a flush runs, while appended leaves
    /// wait for a commit, or on any error (the commit then writes the
    /// leaves itself, and reports a failure as it would have).
    pub fn stage<'a>(&self, leaves: CheckedLeaves<'a>) -> Staged<'a> {
        let written = self.inner.stage_write(&leaves);
        Staged { leaves, written }
    }

    /// Appends the leaves of `staged`, as [`Store::append_checked`] (with
    /// `tag`, as [`Store::append_tagged_checked`]).
    pub fn append_staged(&self, staged: Staged<'_>, tag: Option<BlockTag>) -> Result<Appended> {
        let batch = Batch::Checked(&staged.leaves);
        match tag {
            Some(tag) => self.append_tagged_leaves(batch, tag, staged.written),
            None => self.append_leaves(batch, staged.written),
        }
    }
}

impl Inner {
    fn stage_write(&self, leaves: &CheckedLeaves<'_>) -> Option<(u64, u64)> {
        if leaves.count() < self.config.stage_from
            || self.read_only
            || self.poisoned.load(Ordering::Acquire)
        {
            return None;
        }
        let mut log = self.log.try_lock()?;
        if self.closed.load(Ordering::Acquire) {
            return None;
        }
        // Lock order: log, then tree.
        let first = self.tree.lock().size();
        let id = self.staged_ids.fetch_add(1, Ordering::Relaxed) + 1;
        match log.stage(leaves.leaves(), first, id) {
            Ok(true) => Some((first, id)),
            Ok(false) | Err(_) => None,
        }
    }

    /// Under the tree lock, right after an append put its first leaf at
    /// `first`: notes a staged write of those leaves for the next flush
    /// if they landed where they were staged.
    pub(super) fn note_staged(&self, staged: Option<(u64, u64)>, first: u64) {
        if let Some((staged_first, id)) = staged
            && staged_first == first
        {
            self.staged_appended.store(id, Ordering::Release);
        }
    }
}
