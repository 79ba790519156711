//! A store created without its files (`Layout::FLAG_LAZY_FILES`, what a
//! database of several trees creates each tree as): an empty store is
//! its directory and `cairn.meta` alone, and makes `log/`, `levels/`, its
//! checkpoint at size 0 and its first log file at its first write, in
//! that order, each durable before the next (docs/file-format.md,
//! "Files made at the first write").
//!
//! Why that order: the first log file is the last step, and recovery
//! reads a store with no log file and no checkpoint other than the one at
//! size 0 as empty, whatever of the earlier steps a crash left; each step
//! finds what an earlier attempt made and keeps it. Once the first log
//! file exists the store is one created with its files, held to every
//! check of the format.

use super::Inner;
use crate::checkpoint;
use crate::error::{Result, StoreError};
use crate::log::LogWriter;

impl Inner {
    /// Makes the store's files if it was created without them and has not
    /// made them yet; nothing otherwise. Called under the log lock before
    /// the first write to the log, a level file or the checkpoint.
    pub(crate) fn make_files(&self, log: &mut LogWriter) -> Result<()> {
        if !log.is_unmade() {
            return Ok(());
        }
        let fs = &*self.fs;
        for dir in [self.layout.log_dir(), self.layout.levels_dir()] {
            if !fs
                .exists(&dir)
                .map_err(|e| StoreError::io("stat", &dir, e))?
            {
                fs.create_dir(&dir)
                    .map_err(|e| StoreError::io("create directory", &dir, e))?;
            }
        }
        fs.sync_dir(&self.dir)
            .map_err(|e| StoreError::io("fsync", &self.dir, e))?;
        let path = self.layout.checkpoint();
        if !fs
            .exists(&path)
            .map_err(|e| StoreError::io("stat", &path, e))?
        {
            checkpoint::publish_initial(fs, &self.dir, &self.meta)?;
        }
        log.make_first_file()?;
        // The checkpoint now at its name is the store's own.
        self.checkpoint_published();
        Ok(())
    }
}
