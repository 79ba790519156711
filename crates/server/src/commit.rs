//! Waiting for durability without a thread per request. One committer
//! thread waits on the newest durability token it was given (the store
//! then writes and fsyncs everything appended so far: one group commit)
//! and publishes the durable size on a watch channel; requests await that
//! channel. While a commit runs, later appends accumulate and go out
//! together in the next one, so the number of fsyncs follows the disk,
//! not the request rate.
//!
//! The committer holds tokens only, never the database: dropping the
//! server's state stops it, and the database can be closed while it
//! finishes (a token of a closed store answers with an error).

use std::sync::Arc;
use std::time::Duration;

use cairn_db::Token;
use cairn_store::StoreError;
use parking_lot::{Condvar, Mutex};
use tokio::sync::watch;

/// What the committer has made durable.
#[derive(Clone, Debug, Default)]
struct Committed {
    /// Leaves durable (at least).
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
    committed: watch::Receiver<Committed>,
}

/// How long the committer waits on one token before trying again (a
/// request's own timeout is separate).
const COMMIT_WAIT: Duration = Duration::from_secs(60);

impl Committer {
    /// Starts the committer thread; `durable` is the size already durable.
    pub fn start(durable: u64) -> Committer {
        let queue = Arc::new(Queue::default());
        let (publish, committed) = watch::channel(Committed {
            end: durable,
            failure: None,
        });
        let thread_queue = Arc::clone(&queue);
        std::thread::Builder::new()
            .name("cairn-committer".into())
            .spawn(move || commit_loop(&thread_queue, &publish))
            .expect("spawn the committer thread");
        Committer { queue, committed }
    }

    /// Waits (asynchronously) until the leaves below `token.end()` are
    /// durable: an error if the store failed first, or after `timeout`.
    pub async fn durable(&self, token: Token, timeout: Duration) -> Result<(), StoreError> {
        let end = token.end();
        let mut committed = self.committed.clone();
        if committed.borrow().end >= end {
            return Ok(());
        }
        {
            let mut pending = self.queue.pending.lock();
            if pending.token.as_ref().is_none_or(|t| t.end() < end) {
                pending.token = Some(token);
            }
        }
        self.queue.wake.notify_one();
        let reached = async {
            let c = committed
                .wait_for(|c| c.end >= end || c.failure.is_some())
                .await
                .map_err(|_| StoreError::Closed)?;
            match &c.failure {
                _ if c.end >= end => Ok(()),
                Some(failure) => Err(failure.clone()),
                None => Err(StoreError::Closed),
            }
        };
        match tokio::time::timeout(timeout, reached).await {
            Ok(result) => result,
            Err(_) => Err(StoreError::Timeout {
                want: end,
                durable: self.committed.borrow().end,
            }),
        }
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
                publish.send_if_modified(|c| {
                    let advanced = token.end() > c.end;
                    c.end = c.end.max(token.end());
                    advanced
                });
            }
            Err(StoreError::Timeout { .. }) => {
                // Not durable yet and not failed: wait on it again unless
                // a newer token came in meanwhile.
                let mut pending = queue.pending.lock();
                if pending.token.is_none() {
                    pending.token = Some(token);
                }
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
