//! Durability: group commit of the log (one frame and one `fdatasync` for
//! everything appended since the last), the tokens that wait for it, and
//! the failure state: the first write or sync failure poisons the store,
//! and nothing is acknowledged after it.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use cairn_core::Snapshot;

use super::Inner;
use crate::error::{Result, StoreError};
use crate::format::LogPosition;

#[derive(Debug)]
pub(crate) struct Durable {
    /// Leaves durable in the log.
    pub(crate) end: u64,
    /// Block-tagged heads durable in the heads file.
    pub(crate) tags: u64,
    /// Whether some thread is flushing (a waiter flushes itself if not).
    pub(crate) flushing: bool,
    /// The first write or sync failure: nothing is acknowledged after it.
    pub(crate) failure: Option<StoreError>,
    /// (epoch, size, tags kept) of every rollback: a token of an earlier
    /// epoch whose leaves reach past such a size, or whose block tag is
    /// not among the tags kept, was rolled back.
    pub(crate) cuts: Vec<(u64, u64, u64)>,
}

impl Durable {
    /// Whether what `want` waits for was rolled back, and to what size.
    /// The tag count matters on its own: `truncate_to_block` can remove a
    /// tag at the size it keeps (an empty block), and that append's token
    /// must fail too, not wait for a tag count later tags would reach.
    fn cut(&self, want: &Want) -> Option<u64> {
        self.cuts
            .iter()
            .filter(|&&(epoch, to, kept)| epoch > want.epoch && (to < want.end || kept < want.tags))
            .map(|&(_, to, _)| to)
            .min()
    }

    fn holds(&self, want: &Want) -> bool {
        self.end >= want.end && self.tags >= want.tags
    }
}

/// What a durability wait waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Want {
    /// Leaves durable.
    pub(crate) end: u64,
    /// Block-tagged heads durable.
    pub(crate) tags: u64,
    /// The rollback epoch the append was made in.
    pub(crate) epoch: u64,
}

/// A durability token: durable once the log holds every leaf below `end`
/// (and the heads file the append's block tag, if it had one).
#[derive(Debug, Clone)]
pub struct Token {
    pub(super) want: Want,
    pub(super) inner: Arc<Inner>,
}

impl Token {
    /// The tree size this token waits for.
    pub fn end(&self) -> u64 {
        self.want.end
    }

    /// Whether the leaves are durable, without waiting; an error if the
    /// store failed before they were, or if they were rolled back.
    pub fn is_durable(&self) -> Result<bool> {
        let durable = self.inner.durable.lock();
        if let Some(to) = durable.cut(&self.want) {
            return Err(StoreError::RolledBack {
                end: self.want.end,
                to,
            });
        }
        if durable.holds(&self.want) {
            return Ok(true);
        }
        match &durable.failure {
            Some(failure) => Err(poisoned(failure)),
            None => Ok(false),
        }
    }

    /// Waits until the leaves are durable, flushing them itself if no flush
    /// is running (so a waiter never sleeps on a timer); an error if a
    /// write or sync fails first, if they are rolled back, or after `timeout`.
    pub fn wait(&self, timeout: Duration) -> Result<()> {
        self.inner.wait_durable(self.want, Instant::now() + timeout)
    }
}

pub(crate) fn poisoned(failure: &StoreError) -> StoreError {
    StoreError::Poisoned {
        cause: failure.to_string(),
    }
}

impl Inner {
    /// What a flush of everything appended so far waits for.
    pub(crate) fn want_all(&self) -> Want {
        let _tree = self.tree.lock();
        let tags = self.heads.lock().tags().len() as u64;
        Want {
            end: self.size.load(Ordering::Acquire),
            tags,
            epoch: self.epoch.load(Ordering::Acquire),
        }
    }

    /// Makes everything appended so far durable.
    pub(crate) fn flush_all(&self, timeout: Duration) -> Result<()> {
        let want = self.want_all();
        self.wait_durable(want, Instant::now() + timeout)
    }

    /// Waits until what `want` names is durable, flushing if nobody is.
    fn wait_durable(&self, want: Want, deadline: Instant) -> Result<()> {
        let mut durable = self.durable.lock();
        loop {
            if let Some(to) = durable.cut(&want) {
                return Err(StoreError::RolledBack { end: want.end, to });
            }
            if durable.holds(&want) {
                return Ok(());
            }
            if let Some(failure) = &durable.failure {
                return Err(poisoned(failure));
            }
            if !durable.flushing {
                durable.flushing = true;
                let epoch = self.epoch.load(Ordering::Acquire);
                drop(durable);
                let result = self.flush_log(None);
                durable = self.durable.lock();
                durable.flushing = false;
                match result {
                    // A rollback ran between this flush's release of the
                    // log and now: the end it made durable may hold leaves
                    // removed since, and recording it would claim leaves
                    // appended after the rollback are durable. The next
                    // flush (from the rolled-back log) says what is.
                    Ok(_) if self.epoch.load(Ordering::Acquire) != epoch => {
                        self.durable_changed.notify_all();
                    }
                    // The store was dropped: nothing was written, nothing failed.
                    Err(StoreError::Closed) => {
                        self.durable_changed.notify_all();
                        return Err(StoreError::Closed);
                    }
                    // The first failure poisons the store; the caller who hit
                    // it gets the failure itself, later ones `Poisoned`.
                    Err(error) if durable.failure.is_none() => {
                        self.record_flush(&mut durable, Err(error.clone()));
                        return Err(error);
                    }
                    result => self.record_flush(&mut durable, result),
                }
                continue;
            }
            if self
                .durable_changed
                .wait_until(&mut durable, deadline)
                .timed_out()
            {
                if durable.holds(&want) && durable.cut(&want).is_none() {
                    return Ok(());
                }
                return Err(StoreError::Timeout {
                    want: want.end,
                    durable: durable.end,
                });
            }
        }
    }

    pub(crate) fn record_flush(&self, durable: &mut Durable, result: Result<(u64, u64)>) {
        match result {
            Ok((end, tags)) => {
                durable.end = durable.end.max(end);
                durable.tags = durable.tags.max(tags);
            }
            Err(error) => {
                if durable.failure.is_none() {
                    durable.failure = Some(error);
                    self.poisoned.store(true, Ordering::Release);
                }
            }
        }
        self.durable_changed.notify_all();
    }

    /// One group commit of everything appended so far. With `snapshot`,
    /// also takes a snapshot of the tree at exactly the flushed size (for a
    /// checkpoint) and returns it there. Returns the durable size.
    /// Returns the durable size and the count of durable tagged heads.
    /// Tagged heads are made durable before the leaves they follow (see
    /// `heads.rs`).
    pub(crate) fn flush_log(&self, snapshot: Option<&mut Option<Taken>>) -> Result<(u64, u64)> {
        let mut log = self.log.lock();
        if self.closed.load(Ordering::Acquire) {
            return Err(StoreError::Closed);
        }
        if self.poisoned.load(Ordering::Acquire) {
            return Err(self.durable.lock().failure.clone().expect("poisoned"));
        }
        let (leaves, to, taken, (pending, tags)) = {
            let mut tree = self.tree.lock();
            let taken = snapshot.is_some().then(|| tree.snapshot());
            let pending = self.heads.lock().pending();
            (tree.share_leaves(), tree.size(), taken, pending)
        };
        if !pending.is_empty() {
            self.heads_writer.lock().write(&pending)?;
            self.heads.lock().mark_written(tags);
        }
        log.commit(&leaves, to)?;
        if let (Some(out), Some(taken)) = (snapshot, taken) {
            *out = Some(Taken {
                snapshot: taken,
                resume: log.next(),
                heads: tags as u64,
                epoch: self.heads_writer.lock().epoch(),
            });
        }
        Ok((log.end(), tags as u64))
    }
}

/// What a checkpoint's flush hands over: the snapshot at the flushed size,
/// where the log continues, and the heads and rollback epoch at that size.
pub(crate) struct Taken {
    pub(crate) snapshot: Snapshot,
    pub(crate) resume: LogPosition,
    pub(crate) heads: u64,
    pub(crate) epoch: u64,
}
