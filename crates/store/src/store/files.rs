//! The running store's check of its own files (docs/file-format.md,
//! "Locks"): every name a reopen reads is compared (device and inode)
//! with what the store holds: the open log, level and heads files (their
//! handles), the directory (its lock), `LOCK`, `cairn.meta` and
//! `checkpoint` (the identities recorded when they were taken or
//! written). A name found removed or replaced is written again from what
//! the store holds, so nothing acknowledged depends on a file that no
//! longer has its name; where that fails for a file acknowledgements go
//! to (the log file being written, the heads file, the directory), the
//! store stops acknowledging, since what it would acknowledge is not
//! durable where a reopen looks.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use cairn_core::cast::{level_number, to_usize};

use super::health::{FileChange, FileOutcome, FileRestore, Published, Watched};
use super::{Inner, Store};
use crate::checkpoint::Checkpoints;
use crate::error::{Result, StoreError};
use crate::fs::{FileId, Fs, FsFile, OpenMode};
use crate::layout::Layout;
use crate::log::LogWriter;

/// Where a file is copied before it is renamed back to its name (in the
/// store's directory, whose other names a reopen ignores; a leftover is
/// removed by the next restore).
pub(crate) const RESTORE_TMP: &str = "restore.tmp";

/// Bytes copied per read and write when a file is restored.
const COPY_CHUNK: usize = 1 << 20;

/// How the layer above tells the store's checks that it published a
/// watched file anew (see [`Store::watch_file`]). Holds the store weakly.
#[derive(Debug, Clone)]
pub struct FileWatch {
    inner: Weak<Inner>,
    path: PathBuf,
}

impl FileWatch {
    /// The file now at the watched name is the one the layer published:
    /// the checks compare the name with it from now on. Call it after
    /// each publication (it opens the file: one descriptor held).
    pub fn published(&self) {
        let Some(inner) = self.inner.upgrade() else {
            return;
        };
        let held = inner.fs.open(&self.path, OpenMode::ReadOnly).ok();
        let mut upkeep = inner.upkeep.lock();
        if let Some(watched) = upkeep.watched.iter_mut().find(|w| w.path == self.path) {
            watched.held = held;
        }
    }
}

impl Store {
    /// Has the file checks watch `name`, a file the layer above keeps in
    /// the store's directory and publishes by rename (the database's
    /// nullifier set): the file there now is held as the one to compare
    /// the name with, and if the name is found removed or replaced,
    /// `restore` writes the file again (and calls
    /// [`FileWatch::published`]); the event is reported like the store's
    /// own files'. `restore` runs on the checking thread with no lock of
    /// the store held. A read-only store checks nothing.
    pub fn watch_file(&self, name: &str, restore: FileRestore) -> FileWatch {
        let path = self.inner.dir.join(name);
        let held = match self.inner.read_only {
            true => None,
            false => self.inner.fs.open(&path, OpenMode::ReadOnly).ok(),
        };
        let mut upkeep = self.inner.upkeep.lock();
        upkeep.watched.retain(|w| w.path != path);
        upkeep.watched.push(Watched {
            path: path.clone(),
            held,
            restore: Arc::new(restore),
        });
        FileWatch {
            inner: Arc::downgrade(&self.inner),
            path,
        }
    }
}

/// What a name was found to name, against what the store holds.
enum Seen {
    Same,
    Changed(FileChange),
    /// The check could not tell (no identity, or a `stat` that failed
    /// otherwise than with "not found"): nothing is done.
    Unknown,
}

fn compare(held: io::Result<FileId>, named: io::Result<FileId>) -> Seen {
    match (held, named) {
        (Ok(held), Ok(named)) if held == named => Seen::Same,
        (Ok(_), Ok(_)) => Seen::Changed(FileChange::Replaced),
        (Ok(_), Err(e)) if e.kind() == io::ErrorKind::NotFound => {
            Seen::Changed(FileChange::Removed)
        }
        _ => Seen::Unknown,
    }
}

/// What `path` names now: `Ok(None)` if nothing.
fn named(fs: &dyn Fs, path: &Path) -> io::Result<Option<FileId>> {
    match fs.identity(path) {
        Ok(id) => Ok(Some(id)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Writes the bytes of `held` (an open file whose name no longer names
/// it) to `path` again: copied to [`RESTORE_TMP`] (runs of zeros left as
/// holes, as the log files' unwritten leaf regions are), fdatasynced,
/// renamed over `path`, both directories fsynced. Returns the new file,
/// open for writing. A crash part way leaves `path` as it was found.
fn restore(fs: &dyn Fs, dir: &Path, held: &dyn FsFile, path: &Path) -> Result<Arc<dyn FsFile>> {
    let tmp = dir.join(RESTORE_TMP);
    crate::replace::remove_stale(fs, &tmp)?;
    let copy = fs
        .open(&tmp, OpenMode::CreateNew)
        .map_err(|e| StoreError::io("create", &tmp, e))?;
    let len = held.len().map_err(|e| StoreError::io("stat", path, e))?;
    let mut buffer = vec![0u8; COPY_CHUNK];
    let mut at = 0u64;
    while at < len {
        let n = to_usize((len - at).min(COPY_CHUNK as u64));
        let chunk = &mut buffer[..n];
        held.read_exact_at(chunk, at)
            .map_err(|e| StoreError::io("read", path, e))?;
        // The last chunk is written even if zero: it sets the length.
        if at + n as u64 == len || chunk.iter().any(|&b| b != 0) {
            copy.write_at(chunk, at)
                .map_err(|e| StoreError::io("write", &tmp, e))?;
        }
        at += n as u64;
    }
    copy.sync_data()
        .map_err(|e| StoreError::io("fdatasync", &tmp, e))?;
    drop(copy);
    fs.rename(&tmp, path)
        .map_err(|e| StoreError::io("rename", &tmp, e))?;
    let parent = path.parent().unwrap_or(dir);
    fs.sync_dir(parent)
        .map_err(|e| StoreError::io("fsync", parent, e))?;
    if parent != dir {
        fs.sync_dir(dir)
            .map_err(|e| StoreError::io("fsync", dir, e))?;
    }
    let reopened = fs
        .open(path, OpenMode::Existing)
        .map_err(|e| StoreError::io("open", path, e))?;
    Ok(Arc::from(reopened))
}

impl Inner {
    /// Checks every name the store's next open reads against what the
    /// store holds, and puts back what it can (see the module doc). Run
    /// by the background thread every second, before a checkpoint for the
    /// level files, and by [`super::Store::check_files`].
    pub(crate) fn check_files(&self) {
        if self.read_only || self.closed.load(Ordering::Acquire) {
            return;
        }
        if !self.check_dir() {
            return;
        }
        self.check_watched();
        self.check_lock_file();
        self.check_meta();
        {
            let mut checkpoints = self.checkpoints.lock();
            // A store making its files publishes its first checkpoint
            // under the log lock (`lazy.rs`): held here, so the check
            // sees the store before that or after.
            let log = self.log.lock();
            if !log.is_unmade() {
                self.check_checkpoint_file(&checkpoints);
            }
            drop(log);
            // A failure is recorded as an event; checkpoints refuse to
            // publish until the level file is back.
            let _ = self.check_level_files(&mut checkpoints);
        }
        // Compared without the flush lock (a commit waits for nothing),
        // taken only to put a file back.
        let files = self.log.lock().files().to_vec();
        let moved = files.iter().enumerate().any(|(number, handle)| {
            let path = self.layout.log_file(number as u64);
            matches!(
                compare(handle.file_id(), self.fs.identity(&path)),
                Seen::Changed(_)
            )
        });
        let mut log = self.log.lock();
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        if moved {
            self.check_log_files(&mut log);
        }
        self.check_heads_file();
    }

    /// The layer above's watched files, written again by their restore
    /// (called with no lock of the store held: it publishes through the
    /// layer's own locks, which a checkpoint's hook takes under the
    /// store's).
    fn check_watched(&self) {
        let changed: Vec<(PathBuf, FileChange, Arc<FileRestore>)> = {
            let upkeep = self.upkeep.lock();
            upkeep
                .watched
                .iter()
                .filter_map(|watched| {
                    let now = named(&*self.fs, &watched.path).ok()?;
                    let held = match &watched.held {
                        Some(file) => Some(file.file_id().ok()?),
                        None => None,
                    };
                    let change = match (held, now) {
                        (held, now) if held == now => return None,
                        (_, None) => FileChange::Removed,
                        (_, Some(_)) => FileChange::Replaced,
                    };
                    Some((watched.path.clone(), change, Arc::clone(&watched.restore)))
                })
                .collect()
        };
        for (path, change, restore) in changed {
            self.event(&path, change, restore());
        }
    }

    /// Stops acknowledgements: `path` is one they rest on and it could
    /// not be put back.
    fn stop(&self, path: &Path, change: FileChange, why: &StoreError) {
        let error = StoreError::Replaced {
            path: path.to_path_buf(),
            change: change.as_str(),
            detail: why.to_string(),
        };
        let mut durable = self.durable.lock();
        self.record_flush(&mut durable, Err(error));
        drop(durable);
        self.upkeep
            .lock()
            .file_event(path.to_path_buf(), change, FileOutcome::Stopped);
    }

    fn event(&self, path: &Path, change: FileChange, result: Result<()>) {
        let outcome = match result {
            Ok(()) => FileOutcome::Restored,
            Err(error) => FileOutcome::NotRestored(error.to_string()),
        };
        self.upkeep
            .lock()
            .file_event(path.to_path_buf(), change, outcome);
    }

    /// The directory must be the one the store locked: every file the
    /// store creates or replaces later goes where the path leads. Returns
    /// whether it is (or cannot be told).
    fn check_dir(&self) -> bool {
        let Some(locked) = self.upkeep.lock().expected.dir else {
            return true;
        };
        match compare(Ok(locked), self.fs.identity(&self.dir)) {
            Seen::Same | Seen::Unknown => true,
            Seen::Changed(change) => {
                // A directory cannot be copied back: what it names now is
                // not the store.
                let why = StoreError::io(
                    "check",
                    &self.dir,
                    io::Error::other("the path no longer names the directory the store locked"),
                );
                if !self.poisoned.load(Ordering::Acquire) {
                    self.stop(&self.dir, change, &why);
                }
                false
            }
        }
    }

    /// `LOCK` (kept for older versions, which lock only it): locked again
    /// when it was removed or replaced.
    fn check_lock_file(&self) {
        let path = self.layout.lock();
        let mut held = self.lock_file.lock();
        let Some(identity) = held.as_ref().and_then(|lock| lock.identity()) else {
            return;
        };
        let Seen::Changed(change) = compare(Ok(identity), self.fs.identity(&path)) else {
            return;
        };
        // The old handle goes first: this process's second lock of the
        // same path would be refused as its own.
        *held = None;
        let result = match self.fs.lock(&path) {
            Ok(lock) => {
                *held = Some(lock);
                Ok(())
            }
            Err(e) => Err(StoreError::io("lock", &path, e)),
        };
        self.event(&path, change, result);
    }

    /// Holds `cairn.meta` open for the checks to compare its name with.
    pub(crate) fn hold_meta(&self) {
        let held = self.fs.open(&self.layout.meta(), OpenMode::ReadOnly).ok();
        self.upkeep.lock().expected.meta = held;
    }

    /// `cairn.meta` (never written after creation): written again from
    /// memory.
    fn check_meta(&self) {
        let path = self.layout.meta();
        let Some(held) = self
            .upkeep
            .lock()
            .expected
            .meta
            .as_ref()
            .map(|f| f.file_id())
        else {
            return;
        };
        let Seen::Changed(change) = compare(held, self.fs.identity(&path)) else {
            return;
        };
        let bytes = self.meta.encode();
        let result = crate::replace::replace_file(
            &*self.fs,
            &self.dir,
            Layout::META_TMP,
            Layout::META,
            |file, tmp| {
                file.write_at(&bytes, 0)
                    .map_err(|e| StoreError::io("write", tmp, e))
            },
        );
        if result.is_ok() {
            self.hold_meta();
        }
        self.event(&path, change, result);
    }

    /// Holds what `checkpoint` names after the store published it (or
    /// found it at open), for [`Inner::check_checkpoint_file`].
    pub(crate) fn checkpoint_published(&self) {
        let held = match self.fs.open(&self.layout.checkpoint(), OpenMode::ReadOnly) {
            Ok(file) => Some(Published::File(file)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Some(Published::Absent),
            // Unknown (no descriptor left, say): not checked until the
            // next publication.
            Err(_) => None,
        };
        self.upkeep.lock().expected.checkpoint = held;
    }

    /// `checkpoint`: published again from memory (or removed, if the
    /// store has published none). Under the checkpoint lock.
    fn check_checkpoint_file(&self, checkpoints: &Checkpoints) {
        let path = self.layout.checkpoint();
        let expected = match &self.upkeep.lock().expected.checkpoint {
            None => return,
            Some(Published::Absent) => None,
            Some(Published::File(file)) => match file.file_id() {
                Ok(id) => Some(id),
                Err(_) => return,
            },
        };
        let Ok(now) = named(&*self.fs, &path) else {
            return;
        };
        if now == expected {
            return;
        }
        let change = match now {
            None => FileChange::Removed,
            Some(_) => FileChange::Replaced,
        };
        let result = match &checkpoints.last {
            Some(last) => {
                let bytes = last.encode(self.meta.store_id);
                crate::replace::replace_file(
                    &*self.fs,
                    &self.dir,
                    Layout::CHECKPOINT_TMP,
                    Layout::CHECKPOINT,
                    |file, tmp| {
                        file.write_at(&bytes, 0)
                            .map_err(|e| StoreError::io("write", tmp, e))
                    },
                )
            }
            None => self
                .fs
                .remove_file(&path)
                .map_err(|e| StoreError::io("remove", &path, e))
                .and_then(|()| {
                    self.fs
                        .sync_dir(&self.dir)
                        .map_err(|e| StoreError::io("fsync", &self.dir, e))
                }),
        };
        if result.is_ok() {
            self.checkpoint_published();
        }
        self.event(&path, change, result);
    }

    /// The level files the store holds open, each put back from its
    /// handle if its name changed. An error if one is still not at its
    /// name: a checkpoint must not publish nodes a reopen would not find.
    /// Under the checkpoint lock.
    pub(crate) fn check_level_files(&self, checkpoints: &mut Checkpoints) -> Result<()> {
        let mut unrestored = Ok(());
        for level in 1..checkpoints.files.len() {
            let Some(handle) = checkpoints.files[level].clone() else {
                continue;
            };
            let path = self.layout.level_file(level_number(level));
            let Seen::Changed(change) = compare(handle.file_id(), self.fs.identity(&path)) else {
                continue;
            };
            match restore(&*self.fs, &self.dir, &*handle, &path) {
                Ok(fresh) => {
                    checkpoints.files[level] = Some(fresh);
                    self.event(&path, change, Ok(()));
                }
                Err(error) => {
                    self.event(&path, change, Err(error.clone()));
                    if unrestored.is_ok() {
                        unrestored = Err(StoreError::Replaced {
                            path,
                            change: change.as_str(),
                            detail: error.to_string(),
                        });
                    }
                }
            }
        }
        unrestored
    }

    /// The log files, each put back from its handle if its name changed.
    /// The last one is the one appends go to: if it cannot be put back,
    /// acknowledgements stop. Under the flush lock.
    fn check_log_files(&self, log: &mut LogWriter) {
        let files = log.files().to_vec();
        for (number, handle) in files.iter().enumerate() {
            let path = self.layout.log_file(number as u64);
            let Seen::Changed(change) = compare(handle.file_id(), self.fs.identity(&path)) else {
                continue;
            };
            match restore(&*self.fs, &self.dir, &**handle, &path) {
                Ok(fresh) => {
                    log.replace_handle(number as u64, fresh);
                    self.event(&path, change, Ok(()));
                }
                Err(error) if number + 1 == files.len() => {
                    if !self.poisoned.load(Ordering::Acquire) {
                        self.stop(&path, change, &error);
                    }
                }
                Err(error) => self.event(&path, change, Err(error)),
            }
        }
    }

    /// Before a commit is acknowledged, the log files it wrote (from
    /// `first` on) must still be at their names, or what it acknowledges
    /// would not be durable where a reopen looks: one `fstat` and one
    /// `stat` per file. A file found removed or replaced is put back from
    /// its handle first; if it cannot be, the commit fails (which stops
    /// acknowledgements). Under the flush lock.
    pub(crate) fn verify_log_names(&self, log: &mut LogWriter, first: u64) -> Result<()> {
        let files = log.files().to_vec();
        for (number, handle) in files.iter().enumerate().skip(to_usize(first)) {
            let path = self.layout.log_file(number as u64);
            let Seen::Changed(change) = compare(handle.file_id(), self.fs.identity(&path)) else {
                continue;
            };
            let fresh = self.put_back_or_refuse(&**handle, &path, change)?;
            log.replace_handle(number as u64, fresh);
        }
        Ok(())
    }

    /// [`Inner::verify_log_names`] for the heads file, after a commit
    /// wrote block-tagged heads to it.
    pub(crate) fn verify_heads_name(&self) -> Result<()> {
        let mut writer = self.heads_writer.lock();
        let (Some(handle), path) = writer.file() else {
            return Ok(());
        };
        let (handle, path) = (Arc::clone(handle), path.to_path_buf());
        let Seen::Changed(change) = compare(handle.file_id(), self.fs.identity(&path)) else {
            return Ok(());
        };
        let fresh = self.put_back_or_refuse(&*handle, &path, change)?;
        writer.replace_handle(fresh);
        Ok(())
    }

    /// Puts `held` back at `path` (reported either way); the error a
    /// commit fails with if it cannot.
    fn put_back_or_refuse(
        &self,
        held: &dyn FsFile,
        path: &Path,
        change: FileChange,
    ) -> Result<Arc<dyn FsFile>> {
        match restore(&*self.fs, &self.dir, held, path) {
            Ok(fresh) => {
                self.event(path, change, Ok(()));
                Ok(fresh)
            }
            Err(error) => {
                self.upkeep
                    .lock()
                    .file_event(path.to_path_buf(), change, FileOutcome::Stopped);
                Err(StoreError::Replaced {
                    path: path.to_path_buf(),
                    change: change.as_str(),
                    detail: error.to_string(),
                })
            }
        }
    }

    /// The heads file, put back from its handle if its name changed;
    /// acknowledgements of tagged appends go to it. Under the flush lock.
    fn check_heads_file(&self) {
        let mut writer = self.heads_writer.lock();
        let (Some(handle), path) = writer.file() else {
            return;
        };
        let (handle, path) = (Arc::clone(handle), path.to_path_buf());
        let Seen::Changed(change) = compare(handle.file_id(), self.fs.identity(&path)) else {
            return;
        };
        match restore(&*self.fs, &self.dir, &*handle, &path) {
            Ok(fresh) => {
                writer.replace_handle(fresh);
                drop(writer);
                self.event(&path, change, Ok(()));
            }
            Err(error) => {
                drop(writer);
                if !self.poisoned.load(Ordering::Acquire) {
                    self.stop(&path, change, &error);
                }
            }
        }
    }
}
