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
//! or without a file so marked.

use cairn_core::cast::to_usize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use cairn_core::Hash;
use cairn_core::level::Level;

use crate::access::Access;
use crate::error::{Result, StoreError};
use crate::format::{
    self, FRAME_LEN, Frame, FrameRef, HEADER_LEN, HeaderPage, HeaderRecords, LOG_VERSION,
    LogPosition, SUCCESSOR_OFFSET, StoreMeta, SuccessorMark, TAIL_OFFSETS, TailRecord,
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
    pub fn ensure_first_file(&mut self) -> Result<()> {
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
        if !self.unsealed(heads) {
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
    let mut writer = LogWriter {
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
    };
    writer.ensure_file(0)?;
    Ok(writer)
}

/// What recovery found in the log.
#[derive(Debug)]
pub(crate) struct Recovered {
    pub writer: LogWriter,
    /// The leaves after the resume point, `[start, writer.end())`.
    pub tail: Vec<Hash>,
    /// Every valid tail record, with its file and offset (what they say
    /// of the heads file is the heads' recovery to check).
    pub tails: Vec<(TailRecord, PathBuf, u64)>,
}

/// Where the log resumes and what must hold of it: the checkpoint's (or
/// the log's start without one).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Resume {
    /// Where the first frame after the checkpoint is.
    pub position: LogPosition,
    /// The leaves the checkpoint covers (where that frame starts).
    pub start: u64,
    /// The `prev` of that frame (a checkpoint of version 3 records it).
    pub chain: Option<u32>,
    /// The store is of format 2 (its first log file exists from creation).
    pub strict: bool,
}

/// A frame some durable record says was durable when it was written:
/// recovery refuses a log that ends before it.
#[derive(Clone, Debug)]
pub(crate) struct Claim {
    pub seq: u64,
    pub end: u64,
    /// Its file, slot and CRC, when the record names them.
    pub exact: Option<(u64, u64, u32)>,
    /// The record that says so, and where.
    pub source: PathBuf,
    pub offset: u64,
}

/// Why the scan stopped where it did.
#[derive(Clone, Debug)]
enum Stop {
    /// The slot holds no valid frame (zeroed, torn, damaged or past the file).
    NoFrame,
    /// A valid frame that does not continue the log there.
    Misplaced(Frame),
    /// A frame whose `prev` is not the CRC of the frame before it.
    Chain { prev: u32, want: u32 },
    /// A frame whose leaves do not match its CRC (or are cut short).
    Leaves { start: u64, crc: u32, want: u32 },
    /// The next log file does not exist.
    NoFile,
}

/// Reads log file `number`'s header page; `Err` with why it is not valid.
fn read_header(
    handle: &dyn FsFile,
    path: &Path,
    meta: &StoreMeta,
    number: u64,
) -> Result<std::result::Result<(u32, HeaderRecords), format::Malformed>> {
    let mut header: HeaderPage = [0u8; to_usize(HEADER_LEN)];
    let read = handle
        .read_at(&mut header, 0)
        .map_err(|e| StoreError::io("read", path, e))?;
    if read < header.len() {
        return Ok(Err(format::Malformed::Field(format!(
            "the file has {read} bytes, shorter than its {HEADER_LEN}-byte header"
        ))));
    }
    Ok(
        format::check_log_header(meta, number, &header).map(|version| {
            let records = if version == LOG_VERSION {
                HeaderRecords::read(&header, number, meta.store_id)
            } else {
                HeaderRecords::default()
            };
            (version, records)
        }),
    )
}

/// Opens the log, scans it from `resume` and finds the frontier. Errors on
/// anything but a torn unacknowledged tail: a frame some durable record
/// (a tail record here, or one of `claims`) names that the log no longer
/// holds, a marked file that is missing, a valid frame past the frontier.
///
/// `access` says what the caller may do: a writer removes rolled-back
/// files; a read-only open changes nothing, and beside a live writer
/// takes a valid frame past the frontier for a commit that raced the
/// scan (it cannot tell it from damage, so it does not judge it).
pub(crate) fn recover(
    fs: Arc<dyn Fs>,
    layout: &Layout,
    meta: StoreMeta,
    resume: Resume,
    mut claims: Vec<Claim>,
    access: Access,
) -> Result<Recovered> {
    let read_only = access.is_read_only();
    let open_mode = if read_only {
        OpenMode::ReadOnly
    } else {
        OpenMode::Existing
    };
    let per_file = meta.log_file_leaves();
    let dir = &layout.log_dir();
    let names = fs
        .list_dir(dir)
        .map_err(|e| StoreError::io("list", dir, e))?;
    let mut files: Vec<LogFile> = Vec::with_capacity(names.len());
    let mut marks: Vec<Option<SuccessorMark>> = Vec::with_capacity(names.len());
    let mut stale_next = false;
    let mut counter = 0;
    let mut newest: Option<TailRecord> = None;
    let mut tails = Vec::new();
    for (expected, name) in names.iter().enumerate() {
        let path = dir.join(name);
        let Some(number) = format::parse_log_name(name) else {
            return Err(StoreError::corrupt(
                &path,
                0,
                "unexpected file in the log directory",
            ));
        };
        if number != expected as u64 {
            return Err(StoreError::corrupt(
                &path,
                0,
                format!(
                    "log file {number} where file {expected} was expected: {} is missing",
                    layout.log_file(expected as u64).display()
                ),
            ));
        }
        let handle = fs
            .open(&path, open_mode)
            .map_err(|e| StoreError::io("open", &path, e))?;
        match read_header(&*handle, &path, &meta, number)? {
            Ok((version, records)) => {
                for (slot, tail) in records.tails.iter().enumerate() {
                    let Some(tail) = tail else { continue };
                    counter = counter.max(tail.counter);
                    tails.push((*tail, path.clone(), TAIL_OFFSETS[slot]));
                    if newest.is_none_or(|n| tail.counter > n.counter) {
                        newest = Some(*tail);
                    }
                    if let Some(frame) = tail.durable {
                        claims.push(Claim {
                            seq: frame.seq,
                            end: frame.end,
                            exact: Some((frame.file, frame.slot, frame.crc)),
                            source: path.clone(),
                            offset: TAIL_OFFSETS[slot],
                        });
                    }
                }
                marks.push(records.successor);
                files.push(LogFile {
                    handle: Arc::from(handle),
                    version,
                    next_tail: records.newest().1,
                });
            }
            // The last file's header was never made durable: its creation
            // was interrupted, so it cannot hold an acknowledged frame
            // (frames are written only after the header's fsync, and the
            // file before it is marked only after that too).
            Err(_)
                if expected + 1 == names.len()
                    && !marked(&marks, number, resume.position.seq)
                    && !file_has_frames(&*handle, &path, layout)? =>
            {
                stale_next = true;
            }
            Err(why) => return Err(StoreError::corrupt(&path, 0, why)),
        }
    }
    let judge = access.judges_tail();
    // A marked file must exist: the log went on there after the checkpoint.
    if judge && marked(&marks, files.len() as u64, resume.position.seq) {
        let before = files.len() as u64 - 1;
        return Err(StoreError::corrupt(
            layout.log_file(before),
            SUCCESSOR_OFFSET,
            format!(
                "log file {} ({}) is missing, but this file's header records that it was created",
                before + 1,
                layout.log_file(before + 1).display()
            ),
        ));
    }
    if judge && resume.strict && files.is_empty() {
        return Err(StoreError::corrupt(
            dir,
            0,
            "no log file: a store's first log file exists from its creation on",
        ));
    }
    let resume_file = resume.position.file;
    if judge
        && (resume_file > files.len() as u64
            || resume_file == files.len() as u64 && resume.position.slot > 0)
    {
        return Err(StoreError::corrupt(
            layout.log_file(resume_file),
            0,
            format!(
                "missing: the checkpoint resumes the log in it (slot {})",
                resume.position.slot
            ),
        ));
    }
    // Only what was written after the checkpoint is judged by the scan;
    // the checkpoint vouches for the rest.
    claims.retain(|claim| claim.seq >= resume.position.seq);

    let mut tail: Vec<Hash> = Vec::new();
    let mut position = resume.position;
    let mut end = resume.start;
    let mut expected_prev = resume.chain;
    let mut last: Option<FrameRef> = None;
    // Scan valid frames.
    let (stopped, stop) = loop {
        let Some(file) = files.get(to_usize(position.file)) else {
            break (position, Stop::NoFile);
        };
        let handle = &file.handle;
        let path = layout.log_file(position.file);
        let frame_at = layout.frame_offset(position.slot);
        let mut raw = [0u8; to_usize(FRAME_LEN)];
        let read = handle
            .read_at(&mut raw, frame_at)
            .map_err(|e| StoreError::io("read", &path, e))?;
        let first_of_file = position.file * per_file;
        let Some(frame) = (read == raw.len()).then(|| Frame::decode(&raw)).flatten() else {
            break (position, Stop::NoFrame);
        };
        if !frame.follows(position, end, first_of_file, per_file) {
            break (position, Stop::Misplaced(frame));
        }
        if file.version == LOG_VERSION
            && let Some(want) = expected_prev.filter(|&want| want != frame.prev)
        {
            break (
                position,
                Stop::Chain {
                    prev: frame.prev,
                    want,
                },
            );
        }
        let count = frame.count as usize;
        let before = tail.len();
        tail.resize(before + count, [0; 32]);
        let bytes = tail[before..].as_flattened_mut();
        let read = handle
            .read_at(bytes, Layout::node_offset(frame.start() - first_of_file))
            .map_err(|e| StoreError::io("read", &path, e))?;
        let crc = crc32c::crc32c(&bytes[..read]);
        if read < bytes.len() || crc != frame.leaves_crc {
            tail.truncate(before);
            break (
                position,
                Stop::Leaves {
                    start: frame.start(),
                    crc,
                    want: frame.leaves_crc,
                },
            );
        }
        let crc = frame.crc();
        if judge {
            for claim in claims.iter().filter(|c| c.seq == frame.seq) {
                let exact = claim
                    .exact
                    .is_none_or(|at| at == (position.file, position.slot, crc));
                if claim.end != frame.end || !exact {
                    return Err(StoreError::corrupt(
                        path,
                        frame_at,
                        format!(
                            "frame {} ends at leaf {} with CRC {crc:#010x}, but {} at offset {} records it ending at leaf {}{}",
                            frame.seq,
                            frame.end,
                            claim.source.display(),
                            claim.offset,
                            claim.end,
                            claim
                                .exact
                                .map_or_else(String::new, |(file, slot, crc)| format!(
                                    " in file {file} slot {slot} with CRC {crc:#010x}"
                                )),
                        ),
                    ));
                }
            }
        }
        last = Some(FrameRef {
            seq: frame.seq,
            end: frame.end,
            file: position.file,
            slot: position.slot,
            crc,
        });
        expected_prev = Some(crc);
        end = frame.end;
        position = if frame.end == first_of_file + per_file {
            LogPosition {
                file: position.file + 1,
                slot: 0,
                seq: position.seq + 1,
            }
        } else {
            LogPosition {
                file: position.file,
                slot: position.slot + 1,
                seq: position.seq + 1,
            }
        };
    };

    // Pair assertion: the accepted frames are one contiguous run of leaves
    // from the resume point, each leaf read once.
    assert_eq!(
        resume.start + tail.len() as u64,
        end,
        "the scan read {} leaves from {} to {end}",
        tail.len(),
        resume.start
    );

    // A frame a durable record names must be among those accepted.
    if judge
        && let Some(claim) = claims
            .iter()
            .filter(|c| c.seq >= position.seq)
            .max_by_key(|c| c.seq)
    {
        let (path, offset, why) = describe_stop(layout, stopped, &stop, per_file);
        return Err(StoreError::corrupt(
            path,
            offset,
            format!(
                "acknowledged data is lost: the log ends at leaf {end} ({why}), but frame {} ending at leaf {} was durable, as {} records at offset {}",
                claim.seq,
                claim.end,
                claim.source.display(),
                claim.offset
            ),
        ));
    }

    // Past the frontier nothing may look like a frame: only the frontier's
    // own slot may hold the torn frame of the last, unacknowledged commit.
    // Frames numbered before `resume` are leftovers of a rollback (its
    // checkpoint resumes after them), never later commits.
    let mut stale_files = Vec::new();
    if judge && !matches!(stop, Stop::NoFile) {
        let torn = stopped;
        for (number, file) in files.iter().enumerate().skip(to_usize(torn.file)) {
            let first_slot = if number as u64 == torn.file {
                torn.slot + 1
            } else {
                0
            };
            let path = layout.log_file(number as u64);
            if let Some(offset) = first_valid_frame(
                &*file.handle,
                &path,
                layout,
                first_slot,
                resume.position.seq,
            )? {
                let (_, _, why) = describe_stop(layout, stopped, &stop, per_file);
                return Err(StoreError::corrupt(
                    path,
                    offset,
                    format!(
                        "a valid frame after the log's end at leaf {end} (frame {} in file {}: {why}): acknowledged data is damaged",
                        torn.slot, torn.file
                    ),
                ));
            }
            // A whole file past the frontier's holds only rolled-back
            // leaves (a crash came between a rollback's publication and
            // the removal of its files): remove it now.
            if number as u64 > position.file {
                stale_files.push(number as u64);
            }
        }
    }
    // A last file whose header never became durable (not in `files`) past
    // the frontier's file is a leftover too; left behind, it would sit past
    // a gap once the files before it are removed.
    let unheaded = files.len() as u64;
    if stale_next && unheaded > position.file {
        stale_files.push(unheaded);
    }
    if read_only {
        // What the scan read may still be only in the page cache (a writer
        // killed before its fdatasync, or one syncing right now): sync the
        // files it read frames from, so that everything this open reports
        // is durable. This writes nothing.
        let last_file = to_usize(position.file).min(files.len().saturating_sub(1));
        for (number, file) in files
            .iter()
            .enumerate()
            .take(last_file + 1)
            .skip(to_usize(resume.position.file))
        {
            let path = layout.log_file(number as u64);
            file.handle
                .sync_data()
                .map_err(|e| StoreError::io("fdatasync", &path, e))?;
        }
        if let Some(&first) = stale_files.first() {
            files.truncate(to_usize(first));
            stale_next = false;
        }
    } else if let Some(&first) = stale_files.first() {
        files.truncate(to_usize(first));
        stale_next = false;
        for &number in stale_files.iter().rev() {
            crate::replace::remove_stale(&*fs, &layout.log_file(number))?;
        }
        fs.sync_dir(dir)
            .map_err(|e| StoreError::io("fsync", dir, e))?;
    }
    let claimed = newest.map_or((0, HeadsDurable::default()), |t| {
        (
            t.durable.map_or(0, |f| f.seq),
            HeadsDurable {
                records: t.heads,
                epoch: t.epoch,
            },
        )
    });
    Ok(Recovered {
        writer: LogWriter {
            fs,
            layout: layout.clone(),
            meta,
            files,
            stale_next,
            next: position,
            end,
            chain: expected_prev.unwrap_or(0),
            last,
            counter,
            claimed,
            last_commit: None,
        },
        tail,
        tails,
    })
}

/// Whether the file before `file` is marked as followed by it, with a
/// first frame the checkpoint (whose log resumes at `resume_seq`) does
/// not cover.
fn marked(marks: &[Option<SuccessorMark>], file: u64, resume_seq: u64) -> bool {
    file.checked_sub(1)
        .and_then(|before| marks.get(to_usize(before)).copied().flatten())
        .is_some_and(|mark| mark.next == file && mark.first_seq >= resume_seq)
}

/// The file, offset and words for where and why the scan stopped.
fn describe_stop(
    layout: &Layout,
    at: LogPosition,
    stop: &Stop,
    per_file: u64,
) -> (PathBuf, u64, String) {
    let path = layout.log_file(at.file);
    let frame_at = layout.frame_offset(at.slot);
    match stop {
        Stop::NoFrame => (
            path,
            frame_at,
            format!("slot {} of file {} holds no valid frame", at.slot, at.file),
        ),
        Stop::Misplaced(frame) => (
            path,
            frame_at,
            format!(
                "slot {} of file {} holds frame {} of leaves {}..{}, not frame {}",
                at.slot,
                at.file,
                frame.seq,
                frame.start(),
                frame.end,
                at.seq
            ),
        ),
        Stop::Chain { prev, want } => (
            path,
            frame_at,
            format!(
                "frame {} names a previous frame with CRC {prev:#010x}, want {want:#010x}",
                at.seq
            ),
        ),
        Stop::Leaves { start, crc, want } => (
            path,
            Layout::node_offset(start - at.file * per_file),
            format!(
                "the leaves of frame {} from leaf {start} have CRC {crc:#010x}, the frame says {want:#010x}",
                at.seq
            ),
        ),
        Stop::NoFile => (path, 0, format!("log file {} does not exist", at.file)),
    }
}

/// The offset of the first slot at or after `first_slot` holding a frame
/// whose own CRC is valid and whose sequence number is at least `min_seq`,
/// if any.
fn first_valid_frame(
    file: &dyn FsFile,
    path: &Path,
    layout: &Layout,
    first_slot: u64,
    min_seq: u64,
) -> Result<Option<u64>> {
    let len = file.len().map_err(|e| StoreError::io("stat", path, e))?;
    let mut at = layout.frame_offset(first_slot);
    let mut buffer = vec![0u8; 64 * 1024];
    while at < len {
        let want = to_usize(len - at).min(buffer.len());
        let read = file
            .read_at(&mut buffer[..want], at)
            .map_err(|e| StoreError::io("read", path, e))?;
        if read == 0 {
            break;
        }
        for (i, slot) in buffer[..read].chunks_exact(to_usize(FRAME_LEN)).enumerate() {
            if Frame::decode(slot).is_some_and(|frame| frame.seq >= min_seq) {
                return Ok(Some(at + FRAME_LEN * i as u64));
            }
        }
        at += (read as u64 / FRAME_LEN) * FRAME_LEN;
        if read < to_usize(FRAME_LEN) {
            break;
        }
    }
    Ok(None)
}

fn file_has_frames(file: &dyn FsFile, path: &Path, layout: &Layout) -> Result<bool> {
    Ok(first_valid_frame(file, path, layout, 0, 0)?.is_some())
}
