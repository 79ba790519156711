//! Waiting for durability without a thread per request. One committer
//! thread waits on the newest durability token (the store then writes and
//! fsyncs everything appended so far: one group commit) and announces
//! each finished commit on a watch channel; requests await that channel
//! and then ask their own token. While a commit runs, later appends
//! accumulate and go out together in the next one, so the number of
//! fsyncs follows the disk, not the request rate.
//!
//! The token, not the channel, decides: a rollback can undo an append
//! after its leaves were durable, and an append made after a rollback can
//! end below a size durable before it, so a durable size alone says
//! nothing about one append. The channel only says when to ask again.
//!
//! The committer holds tokens only, never the database: dropping the
//! server's state stops it, and the database can be closed while it
//! finishes (a token of a closed store answers with an error).

use std::sync::Arc;
use std::time::Duration;

use cairn_db::StoreError;
use cairn_db::Token;
use parking_lot::{Condvar, Mutex};
use tokio::sync::watch;

/// What the committer has done.
#[derive(Clone, Debug, Default)]
struct Committed {
    /// The end of the last token made durable (for messages only: a
    /// rollback lowers it).
    end: u64,
    /// The failure that stopped every commit, if any.
    failure: Option<StoreError>,
}

#[derive(Debug, Default)]
struct Pending {
    /// The token with the highest end not yet waited for.
    token: Option<Token>,
    stop: bool,
}

#[derive(Debug, Default)]
struct Queue {
    pending: Mutex<Pending>,
    wake: Condvar,
}

/// The committer: [`Committer::durable`] returns once a token's leaves
/// are durable.
#[derive(Debug)]
pub(crate) struct Committer {
    queue: Arc<Queue>,
    publish: Arc<watch::Sender<Committed>>,
}

/// How long the committer waits on one token before trying again (a
/// request's own timeout is separate).
const COMMIT_WAIT: Duration = Duration::from_secs(60);

impl Committer {
    /// Starts the committer thread; `durable` is the size already durable.
    pub fn start(durable: u64) -> Committer {
        let queue = Arc::new(Queue::default());
        let publish = Arc::new(watch::Sender::new(Committed {
            end: durable,
            failure: None,
        }));
        let thread_queue = Arc::clone(&queue);
        let thread_publish = Arc::clone(&publish);
        std::thread::Builder::new()
            .name("cairn-committer".into())
            .spawn(move || commit_loop(&thread_queue, &thread_publish))
            .expect("spawn the committer thread");
        Committer { queue, publish }
    }

    /// Waits (asynchronously) until the leaves below `token.end()` are
    /// durable: an error if the store failed first, if they were rolled
    /// back ([`StoreError::RolledBack`]), or after `timeout`.
    pub async fn durable(&self, token: &Token, timeout: Duration) -> Result<(), StoreError> {
        let end = token.end();
        let mut committed = self.publish.subscribe();
        let reached = async {
            loop {
                // Seen before asking the token: a commit finishing after
                // the question wakes the wait below.
                committed.borrow_and_update();
                if token.is_durable()? {
                    return Ok(());
                }
                if let Some(failure) = &committed.borrow().failure {
                    return Err(failure.clone());
                }
                {
                    let mut pending = self.queue.pending.lock();
                    if pending.token.as_ref().is_none_or(|t| t.end() < end) {
                        pending.token = Some(token.clone());
                    }
                }
                self.queue.wake.notify_one();
                committed.changed().await.map_err(|_| StoreError::Closed)?;
            }
        };
        match tokio::time::timeout(timeout, reached).await {
            Ok(result) => result,
            Err(_) => Err(StoreError::Timeout {
                want: end,
                durable: self.publish.borrow().end,
            }),
        }
    }

    /// A rollback to `to` leaves happened: every waiter asks its token
    /// again (those of removed appends learn it now).
    pub fn rolled_back(&self, to: u64) {
        self.publish.send_modify(|c| c.end = c.end.min(to));
    }
}

impl Drop for Committer {
    fn drop(&mut self) {
        self.queue.pending.lock().stop = true;
        self.queue.wake.notify_one();
    }
}

fn commit_loop(queue: &Queue, publish: &watch::Sender<Committed>) {
    loop {
        let token = {
            let mut pending = queue.pending.lock();
            loop {
                if let Some(token) = pending.token.take() {
                    break token;
                }
                if pending.stop {
                    return;
                }
                queue.wake.wait(&mut pending);
            }
        };
        match token.wait(COMMIT_WAIT) {
            Ok(()) => {
                // Every waiter asks its token again, even when this one
                // ends below what was announced before (after a rollback).
                publish.send_modify(|c| c.end = c.end.max(token.end()));
            }
            Err(StoreError::Timeout { .. }) => {
                // Not durable yet and not failed: wait on it again unless
                // a newer token came in meanwhile.
                let mut pending = queue.pending.lock();
                if pending.token.is_none() {
                    pending.token = Some(token);
                }
            }
            Err(StoreError::RolledBack { .. }) => {
                // Not a failure: the waiters find out from their tokens
                // (and those whose appends survived hand theirs in again).
                publish.send_modify(|_| {});
            }
            Err(error) => {
                tracing::error!(error = %error, "a group commit failed: no more appends will be acknowledged");
                publish.send_modify(|c| c.failure = Some(error));
                // Every later token fails at once (the store is poisoned),
                // so keep serving them: waiters get the error.
            }
        }
    }
}
