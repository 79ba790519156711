//! Opening a directory an older format wrote (docs/file-format.md,
//! "Migration"): a writer's open brings it to the current format before
//! anything is appended. Each step is atomic or idempotent, so a crash
//! part way leaves a directory that opens (read-only, as the older format
//! it still partly is) and that the next writer's open finishes migrating.
//!
//! What migration cannot give a directory after the fact: the sums of
//! nodes written by the older build are computed from those nodes as they
//! are found (as that build trusted them), and a log written without tail
//! records keeps none for the frames before the migration's checkpoint
//! (which covers them).

use super::Store;
use crate::error::Result;

impl Store {
    /// Migrates the store to the current format if an older one wrote it:
    /// the heads file rewritten with records that say what was durable, a
    /// first log file if it has none, a checkpoint with the chain value
    /// and the sums of every level, then every log file's header
    /// rewritten in the current version (its frames are behind that
    /// checkpoint: they are never chained). Nothing for a read-only store.
    pub(super) fn migrate(&self) -> Result<()> {
        let inner = &self.inner;
        if inner.read_only {
            return Ok(());
        }
        {
            let mut writer = inner.heads_writer.lock();
            if !writer.is_current() {
                let tags = inner.heads.lock().tags()[..writer.written()].to_vec();
                writer.migrate(&tags)?;
            }
        }
        inner.log.lock().ensure_first_file()?;
        let sums = inner
            .checkpoints
            .lock()
            .last
            .as_ref()
            .is_some_and(|c| c.integrity.is_some());
        if !sums {
            inner.checkpoint_as(None, true)?;
        }
        inner.log.lock().upgrade_headers()
    }
}
