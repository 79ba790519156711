//! The leaf log: level 0 on disk. Group commits append leaves to the leaf
//! region of the current log file, one chained frame to its frame region
//! and one tail record to its header page, then one `fdatasync`
//! (docs/file-format.md, "Durability order" 2-3); recovery scans the
//! frames and tells a torn unacknowledged tail from lost acknowledged
//! data ("Recovery" 3-4, "What a torn tail and rot look like").
//!
//! What the log keeps so that a loss is seen: each frame names the one
//! before it (`prev`); each commit's tail record, in a sector of the
//! header page that no frame write touches, names the last frame that was
//! durable before the commit began, and a seal (at a clean close, or once
//! the store is idle) names the last one; a file is marked once the next
//! one exists. Recovery refuses a log that ends before any frame so named,
//! or without a file so marked. The writer is here; the scan that finds
//! where the log ends, and judges what it finds, is `recovery.rs`.

mod recovery;

pub(crate) use recovery::{Claim, Resume, list_dir, recover};

use cairn_core::cast::to_usize;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use cairn_core::level::Level;

use crate::error::{Result, StoreError};
use crate::format::{
    self, FRAME_LEN, Frame, FrameRef, LOG_VERSION, LogPosition, SUCCESSOR_OFFSET, StoreMeta,
    SuccessorMark, TAIL_OFFSETS, TailRecord,
};
use crate::fs::{Fs, FsFile, OpenMode};
use crate::layout::Layout;

/// What the heads file holds durably, as a tail record names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct HeadsDurable {
    /// Records durable in the heads file.
    pub records: u64,
    /// Their rollback epoch.
    pub epoch: u64,
}

/// One open log file.
#[derive(Debug, Clone)]
struct LogFile {
    handle: Arc<dyn FsFile>,
    /// Its format version (1: unchained, no tail records).
    version: u32,
    /// The tail slot the next tail record goes to (the older one).
    next_tail: usize,
}

/// The log's files and where the next frame goes. Owned by whoever flushes
/// (behind the store's flush lock). A clone shares the open files: a
/// rollback keeps one to put back if it cannot publish.
#[derive(Clone, Debug)]
pub(crate) struct LogWriter {
    fs: Arc<dyn Fs>,
    layout: Layout,
    meta: StoreMeta,
    /// Open log files, by number.
    files: Vec<LogFile>,
    /// A last file found at open whose header was never made durable: it
    /// holds nothing acknowledged and is reinitialised when first used.
    stale_next: bool,
    /// Where the next frame goes.
    next: LogPosition,
    /// Leaves durable in the log.
    end: u64,
    /// The CRC of the last frame written or read (the next frame's `prev`).
    chain: u32,
    /// The last durable frame since the last checkpoint or rollback the
    /// log resumed from (`None`: none since).
    last: Option<FrameRef>,
    /// The last tail record's counter.
    counter: u64,
    /// What the newest tail record names: its frame's sequence number and
    /// the heads it counts (a seal that would add nothing is skipped).
    claimed: (u64, HeadsDurable),
    /// When the last commit wrote a frame.
    last_commit: Option<Instant>,
    /// A store created without its files (`Layout::FLAG_LAZY_FILES`) that
    /// has no log file yet: the store makes its files before the first
    /// one (`Inner::make_files`).
    unmade: bool,
}

impl LogWriter {
    /// Leaves durable in the log.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// Where the next frame will go.
    pub fn next(&self) -> LogPosition {
        self.next
    }

    /// The last durable frame since the log resumed (`None`: none since).
    pub fn last(&self) -> Option<FrameRef> {
        self.last
    }

    /// The value the next frame's `prev` holds (a checkpoint records it).
    pub fn chain(&self) -> u32 {
        self.chain
    }

    /// The open log files, by number.
    pub fn files(&self) -> Vec<Arc<dyn FsFile>> {
        self.files.iter().map(|f| Arc::clone(&f.handle)).collect()
    }

    /// Whether any open log file is of the current version.
    pub fn has_current_file(&self) -> bool {
        self.files.iter().any(|f| f.version == LOG_VERSION)
    }

    /// Writes to log file `number` go to `handle` from now on: the same
    /// bytes, written again at the file's name after it was removed or
    /// replaced (see the store's file checks).
    pub fn replace_handle(&mut self, number: u64, handle: Arc<dyn FsFile>) {
        self.files[to_usize(number)].handle = handle;
    }

    fn path(&self, file: u64) -> PathBuf {
        self.layout.log_file(file)
    }

    fn leaves_per_file(&self) -> u64 {
        self.meta.log_file_leaves()
    }

    /// Opens (creating if needed) log file `file`, which must be the next
    /// one; then marks the file before it, so that this one can no longer
    /// go missing unnoticed.
    fn ensure_file(&mut self, file: u64) -> Result<()> {
        if to_usize(file) < self.files.len() {
            return Ok(());
        }
        assert!(
            !self.unmade,
            "a log file written before the store made its files"
        );
        debug_assert_eq!(to_usize(file), self.files.len());
        let path = self.path(file);
        let handle = if self.stale_next {
            self.stale_next = false;
            self.fs
                .open(&path, OpenMode::Existing)
                .map_err(|e| StoreError::io("open", &path, e))?
        } else {
            self.fs
                .open(&path, OpenMode::CreateNew)
                .map_err(|e| StoreError::io("create", &path, e))?
        };
        // The whole page: a reinitialised file's old tail records and mark
        // are zeroed with it.
        handle
            .write_at(&format::log_header(&self.meta, file), 0)
            .map_err(|e| StoreError::io("write", &path, e))?;
        handle
            .sync_data()
            .map_err(|e| StoreError::io("fdatasync", &path, e))?;
        self.fs
            .sync_dir(&self.layout.log_dir())
            .map_err(|e| StoreError::io("fsync", self.layout.log_dir(), e))?;
        if let Some(before) = file.checked_sub(1) {
            let mark = SuccessorMark {
                next: file,
                first_seq: self.next.seq,
            };
            let before_path = self.path(before);
            let previous = &self.files[to_usize(before)].handle;
            previous
                .write_at(&mark.encode(self.meta.store_id), SUCCESSOR_OFFSET)
                .map_err(|e| StoreError::io("write", &before_path, e))?;
            previous
                .sync_data()
                .map_err(|e| StoreError::io("fdatasync", &before_path, e))?;
        }
        self.files.push(LogFile {
            handle: Arc::from(handle),
            version: LOG_VERSION,
            next_tail: 0,
        });
        Ok(())
    }

    /// Creates log file 0 if the log has none (a store an older format
    /// created and never appended to).
    /// Nothing for a store whose files are made at its first write.
    pub fn ensure_first_file(&mut self) -> Result<()> {
        if self.unmade {
            return Ok(());
        }
        self.ensure_file(0)
    }

    /// Whether the store's files are still to be made (see `unmade`).
    pub fn is_unmade(&self) -> bool {
        self.unmade
    }

    /// Creates log file 0 of a store that made its other files: the last
    /// step of making them, after which the store has every file of a
    /// store created with them.
    pub fn make_first_file(&mut self) -> Result<()> {
        self.unmade = false;
        self.ensure_file(0)
    }

    /// Rewrites the header of every log file of an older version in the
    /// current one (the header's first 52 bytes, in one sector; its other
    /// bytes are zero in both), each synced: tail records and marks are
    /// written there from now on. The frames already in such a file are
    /// behind the checkpoint the migration published first, so they are
    /// never checked for a chain.
    pub fn upgrade_headers(&mut self) -> Result<()> {
        for (number, file) in self.files.iter_mut().enumerate() {
            if file.version == LOG_VERSION {
                continue;
            }
            let path = self.layout.log_file(number as u64);
            let header = format::log_header(&self.meta, number as u64);
            file.handle
                .write_at(header.get(..52).unwrap_or_default(), 0)
                .map_err(|e| StoreError::io("write", &path, e))?;
            file.handle
                .sync_data()
                .map_err(|e| StoreError::io("fdatasync", &path, e))?;
            file.version = LOG_VERSION;
            file.next_tail = 0;
        }
        Ok(())
    }

    /// Writes a tail record naming what is durable into `file`'s header
    /// page (without syncing).
    fn write_tail(&mut self, file: u64, heads: HeadsDurable, sealed: bool) -> Result<()> {
        let path = self.path(file);
        let log_file = &mut self.files[to_usize(file)];
        assert_eq!(
            log_file.version, LOG_VERSION,
            "tail records go to current log files only"
        );
        self.counter += 1;
        let record = TailRecord {
            counter: self.counter,
            durable: self.last,
            heads: heads.records,
            epoch: heads.epoch,
            sealed,
        };
        let encoded = record.encode();
        // Pair assertion: what goes to disk reads back as what was meant.
        debug_assert_eq!(TailRecord::decode(&encoded), Some(record));
        log_file
            .handle
            .write_at(&encoded, TAIL_OFFSETS[log_file.next_tail])
            .map_err(|e| StoreError::io("write", &path, e))?;
        log_file.next_tail = 1 - log_file.next_tail;
        self.claimed = (self.last.map_or(0, |f| f.seq), heads);
        Ok(())
    }

    /// Makes leaves `[self.end, to)` of `leaves` (a shared copy of level 0)
    /// durable: per log file touched, the leaf bytes, one frame, one tail
    /// record naming what was durable before (with `heads`, the heads
    /// file's durable records), one `fdatasync`. On error nothing is
    /// announced; the caller poisons the store.
    pub fn commit(&mut self, leaves: &Level, to: u64, heads: HeadsDurable) -> Result<()> {
        let per_file = self.leaves_per_file();
        while self.end < to {
            let file = self.end / per_file;
            self.ensure_file(file)?;
            let first_of_file = file * per_file;
            let stop = to.min(first_of_file + per_file);
            let handle = Arc::clone(&self.files[to_usize(file)].handle);
            let path = self.path(file);
            let mut crc = 0u32;
            let mut at = self.end;
            while at < stop {
                let run = leaves.run_from(to_usize(at));
                let take = to_usize((run.len() as u64).min(stop - at));
                assert!(take > 0, "leaf {at} is not in memory");
                let bytes = run[..take].as_flattened();
                crc = crc32c::crc32c_append(crc, bytes);
                handle
                    .write_at(bytes, Layout::node_offset(at - first_of_file))
                    .map_err(|e| StoreError::io("write", &path, e))?;
                at += take as u64;
            }
            let count = stop - self.end;
            let frame = Frame {
                seq: self.next.seq,
                end: stop,
                count: u32::try_from(count).expect("log files hold at most 2^30 leaves"),
                leaves_crc: crc,
                prev: self.chain,
            };
            // Pair assertion with recovery's scan: the frame is the one it
            // will accept at this position, and reads back as written.
            assert!(
                self.next.file == file
                    && frame.follows(self.next, self.end, first_of_file, per_file),
                "frame {frame:?} does not follow the log at {:?} (end {}, file {file})",
                self.next,
                self.end
            );
            let encoded = frame.encode();
            assert_eq!(
                Frame::decode(&encoded),
                Some(frame),
                "a frame must read back as written"
            );
            let frame_at = self.layout.frame_offset(self.next.slot);
            handle
                .write_at(&encoded, frame_at)
                .map_err(|e| StoreError::io("write", &path, e))?;
            self.write_tail(file, heads, false)?;
            handle
                .sync_data()
                .map_err(|e| StoreError::io("fdatasync", &path, e))?;
            self.end = stop;
            self.chain = frame.crc();
            self.last = Some(FrameRef {
                seq: frame.seq,
                end: stop,
                file,
                slot: self.next.slot,
                crc: self.chain,
            });
            self.last_commit = Some(Instant::now());
            self.next = if stop == first_of_file + per_file {
                LogPosition {
                    file: file + 1,
                    slot: 0,
                    seq: self.next.seq + 1,
                }
            } else {
                LogPosition {
                    file,
                    slot: self.next.slot + 1,
                    seq: self.next.seq + 1,
                }
            };
        }
        Ok(())
    }

    /// Whether a seal would record anything: a frame or heads records made
    /// durable since the newest tail record.
    pub fn unsealed(&self, heads: HeadsDurable) -> bool {
        self.last.is_some_and(|frame| frame.seq > self.claimed.0) || heads != self.claimed.1
    }

    /// How long ago the last commit wrote a frame.
    pub fn since_commit(&self) -> Option<std::time::Duration> {
        self.last_commit.map(|at| at.elapsed())
    }

    /// Seals the log: a tail record naming the last durable frame (and
    /// `heads`), synced, so that damage to even the last commit is seen
    /// at the next open. Written at a clean close and once the store is
    /// idle; nothing is written if it would add nothing.
    pub fn seal(&mut self, heads: HeadsDurable) -> Result<()> {
        if !self.unsealed(heads) || self.files.is_empty() {
            return Ok(());
        }
        let file = match self.last {
            Some(frame) => frame.file,
            // No frame since the log resumed: the file it resumes in, or
            // the last one there is.
            None => self.next.file.min(self.files.len() as u64 - 1),
        };
        if self
            .files
            .get(to_usize(file))
            .is_none_or(|f| f.version != LOG_VERSION)
        {
            return Ok(());
        }
        self.write_tail(file, heads, true)?;
        let path = self.path(file);
        self.files[to_usize(file)]
            .handle
            .sync_data()
            .map_err(|e| StoreError::io("fdatasync", &path, e))
    }
}

impl LogWriter {
    /// Rolls the log back to `to` leaves (below its durable end) and
    /// returns where the next frame goes and the numbers of the files that
    /// hold nothing from `to` on (to be removed once the rollback is
    /// published). The next frame goes to the leaf `to`'s file, after
    /// every slot any earlier frame used, so frames of the rolled-back
    /// leaves are never scanned again (recovery resumes from the
    /// published position); nothing on disk changes here.
    pub fn rewind(&mut self, to: u64) -> Result<(LogPosition, Vec<u64>)> {
        assert!(
            to < self.end,
            "rewinding to {to} of {} durable leaves",
            self.end
        );
        let per_file = self.leaves_per_file();
        let file = to / per_file;
        // A file that starts at `to` holds nothing from `to` on and goes,
        // except file 0: a store keeps its first log file from creation on.
        let aligned = to.is_multiple_of(per_file) && to > 0;
        let slot = if aligned {
            0
        } else {
            let handle = &self.files[to_usize(file)].handle;
            let path = self.path(file);
            let len = handle.len().map_err(|e| StoreError::io("stat", &path, e))?;
            // Frames are written in slot order and are the last bytes of
            // a file ever written, so its length bounds the slots used.
            let region = self.layout.frames_offset();
            len.saturating_sub(region).div_ceil(FRAME_LEN)
        };
        // A file the log goes back to keeps its header, its tail records
        // and its mark of the next file: they name frames before the
        // rollback's checkpoint, which recovery does not judge.
        let first_stale = if aligned { file } else { file + 1 };
        // A last file whose header never became durable is on disk too.
        let on_disk = self.files.len() as u64 + u64::from(self.stale_next);
        let stale: Vec<u64> = (first_stale..on_disk).collect();
        self.files.truncate(to_usize(first_stale));
        self.stale_next = false;
        // The sequence numbers go on past every one written or named so
        // far (a successor mark names the first frame of a file even when
        // a crash tore that frame): whatever an earlier record says of a
        // frame, the rollback's checkpoint supersedes it.
        self.next = LogPosition {
            file,
            slot,
            seq: self.next.seq + 1,
        };
        self.end = to;
        // Frames from here on are judged against the rollback's checkpoint.
        self.last = None;
        Ok((self.next, stale))
    }

    /// Removes log files `numbers` (rolled back) and syncs the directory.
    pub fn remove_files(&self, numbers: &[u64]) -> Result<()> {
        if numbers.is_empty() {
            return Ok(());
        }
        // Highest first: a crash part way leaves the numbers contiguous
        // (recovery refuses a gap as a missing file).
        for &number in numbers.iter().rev() {
            let path = self.path(number);
            crate::replace::remove_stale(&*self.fs, &path)?;
        }
        self.fs
            .sync_dir(&self.layout.log_dir())
            .map_err(|e| StoreError::io("fsync", self.layout.log_dir(), e))
    }
}

/// The log of a new store: file 0 created (header synced, directory
/// synced), so that a store without log files is damage.
pub(crate) fn create(fs: Arc<dyn Fs>, layout: &Layout, meta: StoreMeta) -> Result<LogWriter> {
    let mut writer = unmade(fs, layout, meta);
    writer.make_first_file()?;
    Ok(writer)
}

/// The writer of a new store's log before its first file exists.
pub(crate) fn unmade(fs: Arc<dyn Fs>, layout: &Layout, meta: StoreMeta) -> LogWriter {
    LogWriter {
        fs,
        layout: layout.clone(),
        meta,
        files: Vec::new(),
        stale_next: false,
        next: LogPosition {
            file: 0,
            slot: 0,
            seq: 1,
        },
        end: 0,
        chain: 0,
        last: None,
        counter: 0,
        claimed: (0, HeadsDurable::default()),
        last_commit: None,
        unmade: true,
    }
}
