//! Reads made between two rollbacks. A rollback counts itself in the
//! generation (odd while it runs) before it changes anything and again
//! once it is done; a read that spans what the store keeps apart (the
//! tagged heads and the durable size, a root and the tree it is a root
//! of) runs between two rollbacks: it waits while one runs, and is made
//! again if one began or ended under it. Then everything it read is of
//! one tree: the current one, or one every later rollback began after.

use std::sync::atomic::{AtomicU64, Ordering};

use event_listener::{Event, Listener as _};

/// The rollback generation and the notification of its changes.
#[derive(Debug, Default)]
pub(crate) struct Gate {
    generation: AtomicU64,
    ended: Event,
}

/// A rollback's stretch of the generation: counted when it opens and again
/// when it closes (also on a panic).
pub(crate) struct Window<'a>(&'a Gate);

impl Drop for Window<'_> {
    fn drop(&mut self) {
        self.0.generation.fetch_add(1, Ordering::AcqRel);
        self.0.ended.notify(usize::MAX);
    }
}

impl Gate {
    /// Opens a rollback's window: reads wait until it is dropped.
    pub(crate) fn open(&self) -> Window<'_> {
        let before = self.generation.fetch_add(1, Ordering::AcqRel);
        debug_assert!(before.is_multiple_of(2), "rollbacks are serialised");
        Window(self)
    }

    /// The generation if no rollback runs, else a listener that fires when
    /// it ends (listening before the second look, so the end is not missed).
    fn settled(&self) -> Result<u64, event_listener::EventListener> {
        let generation = self.generation.load(Ordering::Acquire);
        if generation.is_multiple_of(2) {
            return Ok(generation);
        }
        let ended = self.ended.listen();
        let generation = self.generation.load(Ordering::Acquire);
        if generation.is_multiple_of(2) {
            return Ok(generation);
        }
        Err(ended)
    }

    /// Whether no rollback began since `generation` was read.
    pub(crate) fn unchanged(&self, generation: u64) -> bool {
        self.generation.load(Ordering::Acquire) == generation
    }

    /// `read(generation)`, made between two rollbacks, blocking while one
    /// runs. `read` must be cheap: it may run more than once.
    pub(crate) fn read<T>(&self, mut read: impl FnMut(u64) -> T) -> T {
        loop {
            match self.settled() {
                Ok(generation) => {
                    let value = read(generation);
                    if self.unchanged(generation) {
                        return value;
                    }
                }
                Err(ended) => ended.wait(),
            }
        }
    }

    /// [`Gate::read`], awaiting a running rollback without a thread.
    pub(crate) async fn read_async<T>(&self, mut read: impl FnMut(u64) -> T) -> T {
        loop {
            match self.settled() {
                Ok(generation) => {
                    let value = read(generation);
                    if self.unchanged(generation) {
                        return value;
                    }
                }
                Err(ended) => ended.await,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    use super::*;

    #[test]
    fn a_read_waits_for_a_running_rollback_and_is_made_again_if_one_ran_under_it() {
        let gate = Arc::new(Gate::default());
        assert_eq!(gate.read(|g| g), 0);
        // A rollback under the first attempt: the read runs twice.
        let mut attempts = 0;
        let value = gate.read(|g| {
            attempts += 1;
            if attempts == 1 {
                drop(gate.open());
            }
            g
        });
        assert_eq!((attempts, value), (2, 2));
        // A running rollback holds the read until it ends.
        let window = gate.open();
        let done = Arc::new(AtomicBool::new(false));
        let reader = {
            let gate = Arc::clone(&gate);
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                let g = gate.read(|g| g);
                done.store(true, Ordering::Release);
                g
            })
        };
        std::thread::yield_now();
        assert!(
            !done.load(Ordering::Acquire)
                || gate.generation.load(Ordering::Acquire).is_multiple_of(2)
        );
        drop(window);
        assert_eq!(reader.join().unwrap(), 4);
    }
}
