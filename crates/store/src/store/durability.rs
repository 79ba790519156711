//! Durability: group commit of the log (one frame and one `fdatasync` for
//! everything appended since the last), the tokens that wait for it, the
//! published durable head, and the failure state: the first write or sync
//! failure poisons the store, and nothing is acknowledged after it.
//!
//! One notification (`Inner::durable_changed`, an `event_listener::Event`) fires after
//! every change of the durable state: a commit recorded, a failure, a
//! rollback, the store closed. Blocking waiters ([`Token::wait`]) and
//! async ones ([`Token::durable`]) both listen to it; neither trusts it:
//! a woken waiter asks its token again, because a rollback can undo an
//! append after it was durable (the token knows, a durable size does not).
//!
//! Who writes: a blocking waiter flushes on its own thread when nobody is
//! flushing (no timer in its latency); an async waiter cannot block, so
//! it asks the store's commit thread (one per store, started on the first
//! async wait) to flush at once. Either way one `fdatasync` covers every
//! leaf appended before it began, and appends made meanwhile accumulate
//! for the next one.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use cairn_core::{Hash, Snapshot};
use event_listener::Listener;

use super::Inner;
use crate::error::{Result, StoreError};
use crate::format::LogPosition;
use crate::log::HeadsDurable;

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

/// The published durable head: what a reader may serve without waiting,
/// since a crash can never take it back. Replaced (never changed in place)
/// after every commit, rollback and failure; read without a lock through
/// [`Store::durable_head`](super::Store::durable_head).
#[derive(Debug, Clone)]
pub struct DurableHead {
    /// Leaves durable in the log.
    pub size: u64,
    /// The root at `size` (`None` for an empty tree).
    pub root: Option<Hash>,
    /// A snapshot of the tree holding at least `size` leaves (taken at or
    /// after the commit that made `size` durable, and after every rollback
    /// before it): a view of it at `size` is the durable tree.
    pub snapshot: Arc<Snapshot>,
    /// The write or sync failure that stopped acknowledgements, if any.
    pub failure: Option<StoreError>,
}

impl DurableHead {
    pub(crate) fn new(
        size: u64,
        snapshot: Arc<Snapshot>,
        failure: Option<StoreError>,
    ) -> DurableHead {
        debug_assert!(snapshot.size() >= size);
        let root = if snapshot.size() == size {
            snapshot.root()
        } else {
            snapshot
                .view(size)
                .expect("the snapshot holds the durable size")
                .root()
        };
        DurableHead {
            size,
            root,
            snapshot,
            failure,
        }
    }
}

/// What one flush of the log did.
#[derive(Debug, Clone)]
pub(crate) struct Flushed {
    /// Leaves durable in the log.
    pub(crate) end: u64,
    /// Block-tagged heads durable in the heads file.
    pub(crate) tags: u64,
    /// The tree at `end` leaves.
    pub(crate) snapshot: Arc<Snapshot>,
    /// The rollback epoch the flush read the tree in.
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

    /// Resolves once the leaves are durable, without blocking a thread:
    /// asks the store's commit thread to flush at once (one group commit
    /// covers every waiter; a flush already running is followed by
    /// another) and awaits the store's notification. Resolves to an error
    /// if a write or sync fails first (every waiter gets it), if the
    /// leaves are rolled back ([`StoreError::RolledBack`]), or if the
    /// store is dropped before they are durable ([`StoreError::Closed`]).
    /// Without a timeout of its own: wrap it in the runtime's (and report
    /// [`StoreError::Timeout`] with [`Token::end`] and the durable size).
    ///
    /// Works on any executor (it needs no runtime's timers or I/O).
    pub fn durable(&self) -> impl Future<Output = Result<()>> + Send + 'static {
        let token = self.clone();
        async move {
            loop {
                // Listening before asking: a change after the question
                // wakes the wait below.
                let changed = token.inner.durable_changed.listen();
                if token.settled()? {
                    return Ok(());
                }
                Inner::request_commit(&token.inner);
                changed.await;
            }
        }
    }

    /// `is_durable`, and [`StoreError::Closed`] once the store is gone
    /// without the leaves being durable (nobody will flush them).
    fn settled(&self) -> Result<bool> {
        if self.is_durable()? {
            return Ok(true);
        }
        if self.inner.closed.load(Ordering::Acquire) {
            // Checked again after `closed`: the close's own flush may
            // have made them durable.
            return match self.is_durable()? {
                true => Ok(true),
                false => Err(StoreError::Closed),
            };
        }
        Ok(false)
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

    /// Asks the commit thread to flush at once (starting it on first use).
    /// Nothing happens once the store is closing: its close flushes.
    pub(crate) fn request_commit(inner: &Arc<Inner>) {
        let mut commit = inner.commit.lock();
        if commit.stop {
            return;
        }
        commit.requested = true;
        if commit.thread.is_none() {
            let thread_inner = Arc::clone(inner);
            commit.thread = Some(
                std::thread::Builder::new()
                    .name("cairn-commit".into())
                    .spawn(move || thread_inner.commit_loop())
                    .expect("spawn the commit thread"),
            );
        }
        drop(commit);
        inner.commit_signal.notify_one();
    }

    /// The commit thread: one group commit per wake-up. Requests made
    /// while it flushes are answered by the next flush (the flag is
    /// cleared before the flush begins, so nothing is missed).
    fn commit_loop(&self) {
        loop {
            {
                let mut commit = self.commit.lock();
                while !commit.requested && !commit.stop {
                    self.commit_signal.wait(&mut commit);
                }
                if commit.stop {
                    return;
                }
                commit.requested = false;
            }
            // The outcome is recorded and announced by the flush; the
            // waiters read it from their tokens.
            let _ = self.flush_all(COMMIT_WAIT);
        }
    }

    /// Stops the commit thread (before a store closes) and joins it.
    pub(crate) fn stop_commit(&self) {
        let thread = {
            let mut commit = self.commit.lock();
            commit.stop = true;
            commit.thread.take()
        };
        self.commit_signal.notify_all();
        if let Some(thread) = thread {
            let _ = thread.join();
        }
    }

    /// Wakes every waiter, blocking and async, to ask its token again.
    pub(crate) fn notify_durable(&self) {
        self.durable_changed.notify(usize::MAX);
    }

    /// Publishes the durable head after `durable` changed: `snapshot` (if
    /// given) holds at least `durable.end` leaves of the current tree;
    /// without one, the current head's snapshot is kept if it still covers
    /// the durable size. Under the durable lock, so heads are published in
    /// order.
    pub(crate) fn publish_head(&self, durable: &Durable, snapshot: Option<Arc<Snapshot>>) {
        let current = self.head.load();
        let snapshot = match snapshot {
            Some(snapshot) => snapshot,
            None => Arc::clone(&current.snapshot),
        };
        self.head.store(Arc::new(DurableHead::new(
            durable.end,
            snapshot,
            durable.failure.clone(),
        )));
    }

    /// Makes at least the first `limit` leaves durable (fewer if the tree
    /// holds fewer), writing none past `limit`: one group commit of this
    /// thread, or of another flushing meanwhile. Returns the durable size.
    pub(crate) fn flush_to(&self, limit: u64) -> Result<u64> {
        let mut durable = self.durable.lock();
        loop {
            if durable.end >= limit.min(self.size.load(Ordering::Acquire)) {
                return Ok(durable.end);
            }
            if let Some(failure) = &durable.failure {
                return Err(poisoned(failure));
            }
            if !durable.flushing {
                durable.flushing = true;
                drop(durable);
                let result = self.flush_log_to(None, Some(limit));
                durable = self.durable.lock();
                durable.flushing = false;
                return match result {
                    Err(StoreError::Closed) => {
                        self.notify_durable();
                        Err(StoreError::Closed)
                    }
                    Err(error) => {
                        self.record_flush(&mut durable, Err(error.clone()));
                        Err(error)
                    }
                    result => {
                        self.record_flush(&mut durable, result);
                        Ok(durable.end)
                    }
                };
            }
            let changed = self.durable_changed.listen();
            drop(durable);
            changed.wait();
            durable = self.durable.lock();
        }
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
                drop(durable);
                let result = self.flush_log(None);
                durable = self.durable.lock();
                durable.flushing = false;
                match result {
                    // The store was dropped: nothing was written, nothing failed.
                    Err(StoreError::Closed) => {
                        self.notify_durable();
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
            // Listening under the lock: whoever changes the state next
            // takes the lock first, so its notification reaches us.
            let changed = self.durable_changed.listen();
            drop(durable);
            let timed_out = changed.wait_deadline(deadline).is_none();
            durable = self.durable.lock();
            if timed_out {
                if let Some(to) = durable.cut(&want) {
                    return Err(StoreError::RolledBack { end: want.end, to });
                }
                if durable.holds(&want) {
                    return Ok(());
                }
                return Err(StoreError::Timeout {
                    want: want.end,
                    durable: durable.end,
                });
            }
        }
    }

    /// Records what a flush did (or its failure), publishes the durable
    /// head and wakes every waiter.
    pub(crate) fn record_flush(&self, durable: &mut Durable, result: Result<Flushed>) {
        match result {
            // A rollback ran between this flush's read of the tree and
            // now: the end it made durable may hold leaves removed since,
            // and recording it would claim leaves appended after the
            // rollback are durable. The next flush (from the rolled-back
            // log) says what is.
            Ok(flushed) if flushed.epoch != self.epoch.load(Ordering::Acquire) => {}
            Ok(flushed) => {
                durable.tags = durable.tags.max(flushed.tags);
                if flushed.end >= durable.end {
                    durable.end = flushed.end;
                    if self.head.load().size != durable.end {
                        self.publish_head(durable, Some(flushed.snapshot));
                    }
                }
            }
            Err(error) => {
                if durable.failure.is_none() {
                    durable.failure = Some(error);
                    self.poisoned.store(true, Ordering::Release);
                    self.publish_head(durable, None);
                }
            }
        }
        self.notify_durable();
    }

    /// One group commit of everything appended so far. With `snapshot`,
    /// also takes a snapshot of the tree at exactly the flushed size (for a
    /// checkpoint) and returns it there. Returns the durable size.
    /// Returns the durable size and the count of durable tagged heads.
    /// Tagged heads are made durable before the leaves they follow (see
    /// `heads.rs`).
    pub(crate) fn flush_log(&self, snapshot: Option<&mut Option<Taken>>) -> Result<Flushed> {
        self.flush_log_to(snapshot, None)
    }

    /// [`Inner::flush_log`] of at most the first `limit` leaves (all of
    /// them with `None`). A bounded flush takes no checkpoint snapshot and
    /// writes no tagged head: it serves a caller whose own record (a
    /// database's block journal) is the durable one for the leaves past
    /// `limit`, and which never tags.
    pub(crate) fn flush_log_to(
        &self,
        snapshot: Option<&mut Option<Taken>>,
        limit: Option<u64>,
    ) -> Result<Flushed> {
        debug_assert!(limit.is_none() || snapshot.is_none());
        let mut log = self.log.lock();
        // A deferred rollback reaches the files before anything more is
        // written to them. Callers holding the checkpoint lock settled it
        // under that lock, so none can be pending here for them.
        while self.deferred.lock().is_some() {
            drop(log);
            self.settle_locking()?;
            log = self.log.lock();
        }
        if self.closed.load(Ordering::Acquire) {
            return Err(StoreError::Closed);
        }
        if self.poisoned.load(Ordering::Acquire) {
            return Err(self.durable.lock().failure.clone().expect("poisoned"));
        }
        let (leaves, to, taken, epoch, (pending, tags)) = {
            let mut tree = self.tree.lock();
            // The snapshot of the durable head: the newest one if it is of
            // this size (one per commit at most; appends only invalidate it).
            let mut taken = self.published.load_full();
            if taken.size() != tree.size() {
                taken = Arc::new(tree.snapshot());
                self.published.store(Arc::clone(&taken));
            }
            let pending = self.heads.lock().pending();
            let epoch = self.epoch.load(Ordering::Acquire);
            let to = limit.map_or(tree.size(), |limit| limit.min(tree.size()));
            (
                tree.share_leaves(),
                to.max(log.end()),
                taken,
                epoch,
                pending,
            )
        };
        assert!(
            limit.is_none() || pending.is_empty(),
            "a bounded flush of a store with tagged heads"
        );
        // The log's tail record names the heads records durable before this
        // commit's: those of a commit a crash tears are never named, so
        // recovery may drop them (as it drops the commit's leaves).
        let (heads, heads_epoch) = {
            let mut writer = self.heads_writer.lock();
            let before = HeadsDurable {
                records: writer.written() as u64,
                epoch: writer.epoch(),
            };
            if !pending.is_empty() {
                writer.write(&pending, log.last())?;
            }
            (before, writer.epoch())
        };
        if !pending.is_empty() {
            self.verify_heads_name()?;
            self.heads.lock().mark_written(tags);
        }
        let first = log.end() / self.layout.log_file_leaves();
        let wrote = log.end() < to || !pending.is_empty();
        if wrote {
            self.make_files(&mut log)?;
        }
        log.commit(&leaves, to, heads)?;
        if wrote {
            // Acknowledged only if durable at the names a reopen reads.
            self.verify_log_names(&mut log, first)?;
        }
        if let Some(out) = snapshot {
            *out = Some(Taken {
                snapshot: Arc::clone(&taken),
                resume: log.next(),
                chain: log.chain(),
                heads: tags as u64,
                epoch: heads_epoch,
            });
        }
        debug_assert_eq!(log.end(), to);
        Ok(Flushed {
            end: log.end(),
            tags: tags as u64,
            snapshot: taken,
            epoch,
        })
    }
}

/// How long the commit thread waits on one flush before trying again.
const COMMIT_WAIT: Duration = Duration::from_secs(60);

/// The commit thread's state (see `Inner::request_commit`).
#[derive(Debug, Default)]
pub(crate) struct Commit {
    /// A waiter asked for a flush since the last began.
    pub(crate) requested: bool,
    /// The store is closing: no more flushes from this thread.
    pub(crate) stop: bool,
    pub(crate) thread: Option<std::thread::JoinHandle<()>>,
}

/// What a checkpoint's flush hands over: the snapshot at the flushed size,
/// where the log continues, and the heads and rollback epoch at that size.
pub(crate) struct Taken {
    pub(crate) snapshot: Arc<Snapshot>,
    pub(crate) resume: LogPosition,
    /// The `prev` of the frame at `resume`.
    pub(crate) chain: u32,
    pub(crate) heads: u64,
    pub(crate) epoch: u64,
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::pin;
    use std::sync::Arc;
    use std::task::{Context, Poll, Waker};

    use cairn_core::{Arity, HashKind, TreeConfig};

    use crate::{StdFs, Store, StoreConfig, StoreError};

    /// A store in `dir` on the real file system: these tests stop the
    /// commit thread and look at wake-ups, not at what reaches the disk.
    fn store(dir: &tempfile::TempDir) -> Store {
        let config = StoreConfig {
            flush_interval: None,
            ..StoreConfig::new(TreeConfig::new(Arity::new(2).unwrap(), HashKind::Blake3))
        };
        Store::create(Arc::new(StdFs), &dir.path().join("db"), config).unwrap()
    }

    fn leaf(i: u8) -> [u8; 32] {
        let mut leaf = [0; 32];
        leaf[0] = i;
        leaf
    }

    /// Polls `future` on this thread until it resolves, counting the
    /// wake-ups it needed; `between` runs after the first (pending) poll.
    fn drive<F: Future>(future: F, between: impl FnOnce()) -> (F::Output, usize) {
        let mut future = pin!(future);
        let mut cx = Context::from_waker(Waker::noop());
        let Poll::Pending = future.as_mut().poll(&mut cx) else {
            panic!("resolved before anything changed");
        };
        between();
        let mut polls = 1;
        loop {
            polls += 1;
            if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
                return (output, polls);
            }
            assert!(polls < 1000, "never resolved");
            std::thread::yield_now();
        }
    }

    #[test]
    fn a_rollback_wakes_an_async_waiter_whose_leaves_were_never_durable() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(&dir);
        // No commit thread answers: only the rollback can settle the wait.
        store.inner.commit.lock().stop = true;
        store.append(leaf(1)).unwrap();
        let token = store.append(leaf(2)).unwrap().token;
        let (result, _) = drive(token.durable(), || {
            store.truncate(1).unwrap();
        });
        assert!(
            matches!(result, Err(StoreError::RolledBack { end: 2, to: 1 })),
            "{result:?}"
        );
    }

    #[test]
    fn a_store_closed_before_the_leaves_were_durable_answers_closed() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(&dir);
        store.inner.commit.lock().stop = true;
        let token = store.append(leaf(1)).unwrap().token;
        // A close that could not flush (as when its flush times out):
        // nobody will write these leaves, and the waiter is told.
        let (result, _) = drive(token.durable(), || {
            store
                .inner
                .closed
                .store(true, std::sync::atomic::Ordering::Release);
            store.inner.notify_durable();
        });
        assert!(matches!(result, Err(StoreError::Closed)), "{result:?}");
    }
}
