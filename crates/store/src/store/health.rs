//! What the store reports beside its durable head ([`Store::health`]):
//! a checkpoint that failed and is tried again with backoff, and the
//! files found removed or replaced under the running store (checked in
//! `files.rs`). Neither stops acknowledgements: only a failed write or
//! sync of what acknowledgements rest on does (the log, the heads file,
//! a file of theirs that could not be put back at its name).

use std::collections::{BTreeSet, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::{Inner, Store};
use crate::error::StoreError;
use crate::fs::{FileId, FsFile};

/// The pause before a failed checkpoint is tried again; it doubles with
/// each failure in a row, up to [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_millis(250);
/// The longest pause between two tries of a failing checkpoint.
const RETRY_MAX: Duration = Duration::from_secs(10);
/// How often the background thread compares the files the store holds
/// with what their names name.
pub(crate) const FILE_CHECK_INTERVAL: Duration = Duration::from_secs(1);
/// File events kept for [`StoreHealth::file_events`].
const FILE_EVENTS_KEPT: usize = 32;

/// What the store reports about itself: see [`Store::health`].
#[derive(Clone, Debug)]
pub struct StoreHealth {
    /// The write or sync failure that stopped acknowledgements, if any
    /// (the durable head's).
    pub failure: Option<StoreError>,
    /// The last checkpoint that failed (or rollback or finalization that
    /// could not publish its checkpoint), while none has been written
    /// since. Appends go on meanwhile; what is not checkpointed is in the
    /// log, so only the next open's replay grows.
    pub checkpoint: Option<CheckpointFailure>,
    /// Checkpoints that failed since the store was opened.
    pub checkpoint_failures: u64,
    /// The last files found removed or replaced under the store, oldest
    /// first (at most 32), with what the store did.
    pub file_events: Vec<FileEvent>,
    /// Files found removed or replaced since the store was opened.
    pub file_events_total: u64,
    /// Files found removed or replaced that are not back at their names
    /// yet (the store tries again at each check).
    pub unrestored: Vec<PathBuf>,
}

impl StoreHealth {
    /// Whether something needs attention although acknowledgements go on:
    /// a failing checkpoint, or a file the store could not put back.
    pub fn is_degraded(&self) -> bool {
        self.checkpoint.is_some() || !self.unrestored.is_empty()
    }
}

/// A checkpoint that failed (see [`StoreHealth::checkpoint`]).
#[derive(Clone, Debug)]
pub struct CheckpointFailure {
    /// The last failure.
    pub error: StoreError,
    /// Failures in a row.
    pub consecutive: u64,
    /// When the first of them happened.
    pub since: SystemTime,
    /// When the store's background thread tries again (`None`: the store
    /// runs none; the next checkpoint asked for tries).
    pub retry_in: Option<Duration>,
}

/// A file found removed or replaced under the running store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileEvent {
    /// The file (or the store's directory).
    pub path: PathBuf,
    /// What was found.
    pub change: FileChange,
    /// What the store did.
    pub outcome: FileOutcome,
    /// When it was found.
    pub at: SystemTime,
}

/// What happened to a file's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileChange {
    /// Nothing has the name any more.
    Removed,
    /// The name names another file (or directory).
    Replaced,
}

impl FileChange {
    /// "removed" or "replaced".
    pub fn as_str(self) -> &'static str {
        match self {
            FileChange::Removed => "removed",
            FileChange::Replaced => "replaced",
        }
    }
}

/// What the store did about a [`FileEvent`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileOutcome {
    /// Written again at its name from what the store holds (the open
    /// file's bytes, or its memory for `cairn.meta`, `checkpoint` and
    /// `LOCK`): nothing was lost.
    Restored,
    /// Could not be written again (the error); acknowledgements go on
    /// (they do not rest on this file), the store retries at its next
    /// check, and a reopen would not find what the file held.
    NotRestored(String),
    /// Acknowledgements rest on this file and it could not be written
    /// again: the store stopped acknowledging (see
    /// [`StoreError::Replaced`]).
    Stopped,
}

/// Writes a watched file of the layer above again (see
/// [`Store::watch_file`]).
pub type FileRestore = Box<dyn Fn() -> crate::error::Result<()> + Send + Sync>;

/// A file of the layer above the checks watch.
pub(crate) struct Watched {
    pub(crate) path: PathBuf,
    /// The file the layer published there last, held open (`None`: none
    /// yet, or it could not be opened).
    pub(crate) held: Option<Box<dyn FsFile>>,
    pub(crate) restore: Arc<FileRestore>,
}

impl std::fmt::Debug for Watched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watched")
            .field("path", &self.path)
            .field("held", &self.held)
            .finish_non_exhaustive()
    }
}

/// The store's own bookkeeping behind [`StoreHealth`] (its `upkeep`
/// lock, taken last, never held across I/O).
#[derive(Debug)]
pub(crate) struct Upkeep {
    checkpoint: Option<Failing>,
    checkpoint_failures: u64,
    events: VecDeque<FileEvent>,
    events_total: u64,
    unrestored: BTreeSet<PathBuf>,
    next_file_check: Instant,
    /// What the names the store does not hold open should name: its
    /// directory (the lock's), `LOCK`, `cairn.meta` and `checkpoint`
    /// (`None` inside: absent).
    pub(crate) expected: Expected,
    /// Files of the layer above the checks watch (`Store::watch_file`).
    pub(crate) watched: Vec<Watched>,
}

#[derive(Debug)]
struct Failing {
    error: StoreError,
    consecutive: u64,
    since: SystemTime,
    retry_at: Instant,
}

/// What the file checks compare the names the store does not write
/// through with (`None`: unknown, not checked). Files are held open
/// (read-only): a file system gives a removed file's inode number to the
/// next file created once nothing holds it, and a replacement must not
/// pass for the original.
#[derive(Debug, Default)]
pub(crate) struct Expected {
    /// The directory the store locked.
    pub(crate) dir: Option<FileId>,
    /// `cairn.meta`.
    pub(crate) meta: Option<Box<dyn FsFile>>,
    /// `checkpoint`, as the store last published it (or found it).
    pub(crate) checkpoint: Option<Published>,
}

/// What `checkpoint` should be.
#[derive(Debug)]
pub(crate) enum Published {
    /// No checkpoint was published yet.
    Absent,
    /// This file.
    File(Box<dyn FsFile>),
}

/// Whether a failed checkpoint is to be tried now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Retry {
    /// None failed: the policy decides.
    Nothing,
    /// One failed; its pause is not over.
    Later,
    /// One failed; try again now.
    Now,
}

impl Default for Upkeep {
    fn default() -> Upkeep {
        Upkeep {
            checkpoint: None,
            checkpoint_failures: 0,
            events: VecDeque::new(),
            events_total: 0,
            unrestored: BTreeSet::new(),
            next_file_check: Instant::now() + FILE_CHECK_INTERVAL,
            expected: Expected::default(),
            watched: Vec::new(),
        }
    }
}

impl Upkeep {
    pub(crate) fn checkpoint_failed(&mut self, error: StoreError, now: Instant) {
        self.checkpoint_failures += 1;
        let (consecutive, since) = match &self.checkpoint {
            Some(failing) => (failing.consecutive + 1, failing.since),
            None => (1, SystemTime::now()),
        };
        let pause = RETRY_FIRST
            .saturating_mul(1 << (consecutive - 1).min(16))
            .min(RETRY_MAX);
        self.checkpoint = Some(Failing {
            error,
            consecutive,
            since,
            retry_at: now + pause,
        });
    }

    pub(crate) fn checkpoint_written(&mut self) {
        self.checkpoint = None;
    }

    pub(crate) fn retry(&self, now: Instant) -> Retry {
        match &self.checkpoint {
            None => Retry::Nothing,
            Some(failing) if now >= failing.retry_at => Retry::Now,
            Some(_) => Retry::Later,
        }
    }

    pub(crate) fn is_checkpoint_failing(&self) -> bool {
        self.checkpoint.is_some()
    }

    /// Whether the files are due for a check (and if so, the next one is
    /// scheduled).
    pub(crate) fn file_check_due(&mut self, now: Instant) -> bool {
        if now < self.next_file_check {
            return false;
        }
        self.next_file_check = now + FILE_CHECK_INTERVAL;
        true
    }

    pub(crate) fn file_event(&mut self, path: PathBuf, change: FileChange, outcome: FileOutcome) {
        if outcome == FileOutcome::Restored {
            self.unrestored.remove(&path);
        } else {
            self.unrestored.insert(path.clone());
        }
        if self.events.len() == FILE_EVENTS_KEPT {
            self.events.pop_front();
        }
        self.events.push_back(FileEvent {
            path,
            change,
            outcome,
            at: SystemTime::now(),
        });
        self.events_total += 1;
    }

    fn report(&self, failure: Option<StoreError>, background: bool) -> StoreHealth {
        let now = Instant::now();
        StoreHealth {
            failure,
            checkpoint: self.checkpoint.as_ref().map(|failing| CheckpointFailure {
                error: failing.error.clone(),
                consecutive: failing.consecutive,
                since: failing.since,
                retry_in: background.then(|| failing.retry_at.saturating_duration_since(now)),
            }),
            checkpoint_failures: self.checkpoint_failures,
            file_events: self.events.iter().cloned().collect(),
            file_events_total: self.events_total,
            unrestored: self.unrestored.iter().cloned().collect(),
        }
    }
}

impl Inner {
    /// Records the outcome of a checkpoint (or of a rollback's or a
    /// finalization's publication) for [`Store::health`].
    pub(crate) fn note_checkpoint<T>(&self, result: &crate::error::Result<T>) {
        let mut upkeep = self.upkeep.lock();
        match result {
            Ok(_) => upkeep.checkpoint_written(),
            Err(error) => upkeep.checkpoint_failed(error.clone(), Instant::now()),
        }
    }
}

impl Store {
    /// What the store reports about itself without waiting for any lock
    /// a write holds: the failure that stopped acknowledgements, a
    /// failing checkpoint (retried by the background thread with a pause
    /// that doubles from 250 ms up to 10 s), and the files found removed
    /// or replaced under it with what it did (see docs/file-format.md,
    /// "Locks").
    pub fn health(&self) -> StoreHealth {
        let failure = self.inner.head.load().failure.clone();
        self.inner
            .upkeep
            .lock()
            .report(failure, self.background.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_checkpoint_is_retried_after_a_pause_that_doubles_up_to_a_bound() {
        let mut upkeep = Upkeep::default();
        assert_eq!(upkeep.retry(Instant::now()), Retry::Nothing);
        let mut pauses = Vec::new();
        for _ in 0..8 {
            let now = Instant::now();
            upkeep.checkpoint_failed(StoreError::Closed, now);
            let failing = upkeep.checkpoint.as_ref().unwrap();
            pauses.push(failing.retry_at.duration_since(now));
            assert_eq!(upkeep.retry(now), Retry::Later);
            assert_eq!(upkeep.retry(failing.retry_at), Retry::Now);
        }
        let ms = Duration::from_millis;
        assert_eq!(
            pauses,
            [250, 500, 1000, 2000, 4000, 8000, 10_000, 10_000].map(ms),
            "doubling from the first pause up to the bound"
        );
        let health = upkeep.report(None, true);
        let failing = health.checkpoint.unwrap();
        assert_eq!((failing.consecutive, health.checkpoint_failures), (8, 8));
        upkeep.checkpoint_written();
        assert_eq!(upkeep.retry(Instant::now()), Retry::Nothing);
        let health = upkeep.report(None, true);
        assert!(health.checkpoint.is_none() && !health.is_degraded());
        assert_eq!(health.checkpoint_failures, 8, "the total stays");
    }

    #[test]
    fn file_events_keep_the_last_ones_and_count_them_all() {
        let mut upkeep = Upkeep::default();
        for i in 0..40 {
            upkeep.file_event(
                PathBuf::from(format!("/db/{i}")),
                FileChange::Removed,
                FileOutcome::Restored,
            );
        }
        let health = upkeep.report(None, false);
        assert_eq!(health.file_events.len(), FILE_EVENTS_KEPT);
        assert_eq!(health.file_events_total, 40);
        assert_eq!(health.file_events[0].path, PathBuf::from("/db/8"));
        assert!(!health.is_degraded(), "restored files need nothing");
        let level = PathBuf::from("/db/levels/level-01.nodes");
        upkeep.file_event(
            level.clone(),
            FileChange::Replaced,
            FileOutcome::NotRestored("no space".into()),
        );
        let health = upkeep.report(None, false);
        assert!(health.is_degraded());
        assert_eq!(health.unrestored, std::slice::from_ref(&level));
        // Put back at a later check: nothing is left to do.
        upkeep.file_event(level, FileChange::Replaced, FileOutcome::Restored);
        assert!(!upkeep.report(None, false).is_degraded());
    }
}
