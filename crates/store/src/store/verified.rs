//! The verified record (docs/file-format.md, "Verified record"): after
//! its own durable writes (a checkpoint, a seal, a close), a writer
//! records each file's identity and how much of it is verified, so that
//! the next open re-reads only what changed since; anything whose
//! identity differs is verified again in full, and `verify_on_open`
//! (`cairn check`) ignores the record.
//!
//! What it relies on and what it cannot see: a write, truncation or
//! replacement through the file system changes a file's identity (its
//! change time cannot be set back by a process), and nobody writes the
//! directory while a writer holds it. Damage below the file system that
//! changes no metadata (media rot the drive does not report) in a file
//! the record vouches for is found only by an open after the file changes
//! again, or by `cairn check`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use cairn_core::cast::level_number;

use super::Inner;
use crate::error::{Result, StoreError};
use crate::format::{self, CheckpointMeta, PAGE_NODES, VerifiedEntry, VerifiedFile};
use crate::fs::{FileIdentity, Fs, FsFile, OpenMode};
use crate::layout::Layout;

/// What the record at open vouches for.
#[derive(Debug, Default)]
pub(crate) struct Trust {
    entries: HashMap<VerifiedFile, VerifiedEntry>,
}

impl Trust {
    /// The record of the store in `layout`, if there is one that decodes
    /// (anything else vouches for nothing).
    pub fn read(fs: &dyn Fs, layout: &Layout, store_id: u64) -> Trust {
        let path = layout.verified();
        let Ok(file) = fs.open(&path, OpenMode::ReadOnly) else {
            return Trust::default();
        };
        let Ok(len) = file.len() else {
            return Trust::default();
        };
        if len > format::VERIFIED_MAX_BYTES as u64 {
            return Trust::default();
        }
        let mut bytes = vec![0u8; cairn_core::cast::to_usize(len)];
        if file.read_exact_at(&mut bytes, 0).is_err() {
            return Trust::default();
        }
        let entries = format::decode_verified(&bytes, store_id).unwrap_or_default();
        Trust {
            entries: entries.into_iter().map(|e| (e.file, e)).collect(),
        }
    }

    /// How much of `file` is vouched for, given its identity now.
    pub fn verified(&self, file: VerifiedFile, identity: Option<FileIdentity>) -> u64 {
        match (self.entries.get(&file), identity) {
            (Some(entry), Some(identity)) if entry.identity == identity => entry.verified,
            _ => 0,
        }
    }
}

/// The identity of `file`, `None` if it cannot be read (then nothing of
/// it is vouched for).
pub(crate) fn identity_of(file: &dyn FsFile) -> Option<FileIdentity> {
    file.identity().ok()
}

/// What a record written now vouches for, file by file: the checkpoint's
/// final nodes of every level (their sums included), all of which this
/// store verified at open or wrote itself since from memory it verified.
fn claims(checkpoint: &CheckpointMeta, per_file: u64) -> Vec<(VerifiedFile, u64)> {
    let mut out = Vec::new();
    if checkpoint.integrity.is_none() {
        return out;
    }
    for (level, &(final_len, _)) in checkpoint.levels.iter().enumerate() {
        let level = level_number(level);
        if level == 0 {
            let mut file = 0;
            while file * per_file < final_len {
                out.push((
                    VerifiedFile::Log(file),
                    (final_len - file * per_file).min(per_file),
                ));
                file += 1;
            }
        } else if final_len > 0 {
            out.push((VerifiedFile::Level(level), final_len));
        }
        if final_len >= PAGE_NODES {
            out.push((VerifiedFile::Sums(level), final_len / PAGE_NODES));
        }
    }
    out
}

impl Inner {
    /// Writes the verified record (a writer only; advisory, so without a
    /// sync: a record a crash loses or tears vouches for nothing). A file
    /// changed in the same tick of the file system's clock as the record
    /// is left out: a later write in that tick could keep its identity.
    pub(crate) fn record_verified(&self) -> Result<()> {
        let checkpoint = self.checkpoints.lock().last.clone();
        // A store that has not made its files has none to vouch for.
        if self.log.lock().is_unmade() {
            return Ok(());
        }
        match checkpoint {
            Some(checkpoint) => self.write_verified(&checkpoint, RECORD_WAIT),
            None => Ok(()),
        }
    }

    /// [`Inner::record_verified`] for the published `checkpoint` (called
    /// with the checkpoint lock held, or with a copy taken under it). A
    /// file changed in the tick the record is written in is left out;
    /// with `wait`, the record waits up to that long for the clock to
    /// move past the last change first (a close does: it has just sealed
    /// the log, and nothing else writes any more).
    pub(crate) fn write_verified(&self, checkpoint: &CheckpointMeta, wait: Duration) -> Result<()> {
        if self.read_only {
            return Ok(());
        }
        let layout = &self.layout;
        let mut found = Vec::new();
        for (which, verified) in claims(checkpoint, layout.log_file_leaves()) {
            let path: PathBuf = match which {
                VerifiedFile::Log(n) => layout.log_file(n),
                VerifiedFile::Level(l) => layout.level_file(l),
                VerifiedFile::Sums(l) => layout.sums_file(l),
            };
            let Ok(data) = self.fs.open(&path, OpenMode::ReadOnly) else {
                continue;
            };
            if let Some(identity) = identity_of(&*data) {
                found.push(VerifiedEntry {
                    file: which,
                    identity,
                    verified,
                });
            }
        }
        if found.len() > format::VERIFIED_MAX_ENTRIES {
            return Ok(());
        }
        let newest = found.iter().map(|e| e.identity.changed_ns).max();
        let tmp = layout.verified_tmp();
        crate::replace::remove_stale(&*self.fs, &tmp)?;
        let file = self
            .fs
            .open(&tmp, OpenMode::CreateNew)
            .map_err(|e| StoreError::io("create", &tmp, e))?;
        // The file system's clock now, as a change time: a file whose last
        // change is not older may share its tick with a later write.
        let started = Instant::now();
        let now = loop {
            file.write_at(&[0], 0)
                .map_err(|e| StoreError::io("write", &tmp, e))?;
            let now = file
                .identity()
                .map_err(|e| StoreError::io("stat", &tmp, e))?
                .changed_ns;
            if newest.is_none_or(|newest| now > newest) || started.elapsed() >= wait {
                break now;
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        let entries: Vec<VerifiedEntry> = found
            .into_iter()
            .filter(|entry| entry.identity.changed_ns < now)
            .collect();
        let bytes = format::encode_verified(self.meta.store_id, &entries);
        file.write_at(&bytes, 0)
            .map_err(|e| StoreError::io("write", &tmp, e))?;
        drop(file);
        self.fs
            .rename(&tmp, &layout.verified())
            .map_err(|e| StoreError::io("rename", &tmp, e))
    }
}

/// How long a close waits for the file system's clock to tick past its
/// last write, so that the record leaves nothing out (one tick of a
/// coarse clock is at most 10 ms at 100 Hz; file systems with fine
/// change times need no wait).
pub(crate) const RECORD_WAIT: Duration = Duration::from_millis(20);
