//! Recovery of the leaf log: the scan of its frames from the checkpoint's
//! resume point, the frontier where valid frames end, and the rule that
//! tells a torn, unacknowledged tail (dropped) from acknowledged data that
//! is gone (refused): every durable record that names a frame (a tail
//! record, a head record, the checkpoint) must find it, and every file
//! marked as followed must be followed (docs/file-format.md, "Recovery"
//! 3-4, "What a torn tail and rot look like"). It hands the writer back
//! positioned after the frontier.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairn_core::Hash;
use cairn_core::cast::to_usize;

use super::{HeadsDurable, LogFile, LogWriter};
use crate::access::Access;
use crate::error::{Result, StoreError};
use crate::format::{
    self, FRAME_LEN, Frame, FrameRef, HEADER_LEN, HeaderPage, HeaderRecords, LOG_VERSION,
    LogPosition, SUCCESSOR_OFFSET, StoreMeta, SuccessorMark, TAIL_OFFSETS, TailRecord,
};
use crate::fs::{Fs, FsFile, OpenMode};
use crate::layout::Layout;

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
    let lazy = meta.flags & Layout::FLAG_LAZY_FILES != 0;
    let names = list_dir(&*fs, dir, lazy)?;
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
    let unmade = lazy && files.is_empty();
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
            unmade,
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

/// The names in `dir`; none if it is missing from a store created
/// without its files (`lazy`) that has not made them yet.
pub(crate) fn list_dir(fs: &dyn Fs, dir: &Path, lazy: bool) -> Result<Vec<String>> {
    if lazy && !fs.exists(dir).map_err(|e| StoreError::io("stat", dir, e))? {
        return Ok(Vec::new());
    }
    fs.list_dir(dir).map_err(|e| StoreError::io("list", dir, e))
}
