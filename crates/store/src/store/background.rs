//! The background thread: flushes every `flush_interval`, takes the
//! checkpoints the policy asks for (and tries a failed one again after its
//! pause), and checks the store's files every second (`files.rs`);
//! stopped (and joined) before a store closes. Read-only stores run none.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::health::Retry;
use super::{Inner, Store};

impl Inner {
    pub(super) fn background(&self) {
        let interval = self
            .config
            .flush_interval
            .unwrap_or(Duration::from_millis(100));
        loop {
            {
                let mut stop = self.shutdown.lock();
                if *stop {
                    return;
                }
                self.shutdown_signal.wait_for(&mut stop, interval);
                if *stop {
                    return;
                }
            }
            if !self.poisoned.load(Ordering::Acquire) {
                if self.config.flush_interval.is_some() {
                    let _ = self.flush_all(interval);
                }
                if self.seal_due() && self.seal().is_ok() {
                    let checkpoint = self.checkpoints.lock().last.clone();
                    if let Some(checkpoint) = checkpoint {
                        let _ = self.write_verified(&checkpoint, super::verified::RECORD_WAIT);
                    }
                }
                // A failed checkpoint is tried again after its pause,
                // whatever the policy says; the outcome is in `upkeep`.
                // Bound first: the upkeep lock must not be held while the
                // policy takes the checkpoint lock.
                let retry = self.upkeep.lock().retry(Instant::now());
                let take = match retry {
                    Retry::Now => true,
                    Retry::Later => false,
                    Retry::Nothing => self.checkpoint_due(),
                };
                if take {
                    let _ = self.checkpoint(None);
                }
            }
            // Also once acknowledgements stopped: putting a file back
            // still saves what was acknowledged in it for the next open.
            let check = self.upkeep.lock().file_check_due(Instant::now());
            if check {
                self.check_files();
            }
        }
    }

    /// Whether the log has been quiet for `seal_after` since a commit
    /// that no tail record names yet.
    fn seal_due(&self) -> bool {
        let Some(after) = self.config.seal_after else {
            return false;
        };
        let log = self.log.lock();
        log.since_commit().is_some_and(|quiet| quiet >= after) && {
            let writer = self.heads_writer.lock();
            log.unsealed(crate::log::HeadsDurable {
                records: writer.written() as u64,
                epoch: writer.epoch(),
            })
        }
    }

    fn checkpoint_due(&self) -> bool {
        let policy = self.config.checkpoint;
        // `covered` first: a checkpoint taken by another thread between the
        // two reads can only make `size` larger, never `covered` > `size`.
        let covered = self.checkpoints.lock().last.as_ref().map_or(0, |c| c.size);
        let size = self.size.load(Ordering::Acquire);
        let fresh = size.saturating_sub(covered);
        let n = self.meta.tree.arity.get() as u64;
        let appends = self.appends.load(Ordering::Relaxed)
            - self.appends_at_checkpoint.load(Ordering::Relaxed);
        policy.every_appends.is_some_and(|every| appends >= every)
            || policy.every_leaves.is_some_and(|every| fresh >= every)
            || policy
                .memory_bytes
                .is_some_and(|bytes| fresh.div_ceil(n - 1) * 32 >= bytes)
    }
}

impl Store {
    pub(super) fn stop_background(&mut self) {
        *self.inner.shutdown.lock() = true;
        self.inner.shutdown_signal.notify_all();
        if let Some(handle) = self.background.take() {
            let _ = handle.join();
        }
    }
}
