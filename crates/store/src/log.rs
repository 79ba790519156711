//! The leaf log: level 0 on disk. Group commits append leaves to the leaf
//! region of the current log file and one frame to its frame region, then
//! one `fdatasync` (docs/file-format.md, "Durability order" 2-3); recovery
//! scans the frames and tells a torn unacknowledged tail from corruption
//! ("Recovery" 3-4).

use cairn_core::cast::to_usize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairn_core::Hash;
use cairn_core::level::Level;

use crate::error::{Result, StoreError};
use crate::format::{self, FRAME_LEN, Frame, HEADER_LEN, LogPosition, StoreMeta};
use crate::fs::{Fs, FsFile, OpenMode};
use crate::layout::Layout;

/// The log's files and where the next frame goes. Owned by whoever flushes
/// (behind the store's flush lock). A clone shares the open files: a
/// rollback keeps one to put back if it cannot publish.
#[derive(Clone, Debug)]
pub(crate) struct LogWriter {
    fs: Arc<dyn Fs>,
    layout: Layout,
    meta: StoreMeta,
    /// Open log files, by number.
    files: Vec<Arc<dyn FsFile>>,
    /// A last file found at open whose header was never made durable: it
    /// holds nothing acknowledged and is reinitialised when first used.
    stale_next: bool,
    /// Where the next frame goes.
    next: LogPosition,
    /// Leaves durable in the log.
    end: u64,
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

    /// The open log files, by number.
    pub fn files(&self) -> &[Arc<dyn FsFile>] {
        &self.files
    }

    /// Writes to log file `number` go to `handle` from now on: the same
    /// bytes, written again at the file's name after it was removed or
    /// replaced (see the store's file checks).
    pub fn replace_handle(&mut self, number: u64, handle: Arc<dyn FsFile>) {
        self.files[to_usize(number)] = handle;
    }

    fn path(&self, file: u64) -> PathBuf {
        self.layout.log_file(file)
    }

    fn leaves_per_file(&self) -> u64 {
        self.meta.log_file_leaves()
    }

    /// Opens (creating if needed) log file `file`, which must be the next one.
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
        handle
            .write_at(&format::log_header(&self.meta, file), 0)
            .map_err(|e| StoreError::io("write", &path, e))?;
        handle
            .sync_data()
            .map_err(|e| StoreError::io("fdatasync", &path, e))?;
        self.fs
            .sync_dir(&self.layout.log_dir())
            .map_err(|e| StoreError::io("fsync", self.layout.log_dir(), e))?;
        self.files.push(Arc::from(handle));
        Ok(())
    }

    /// Makes leaves `[self.end, to)` of `leaves` (a shared copy of level 0)
    /// durable: per log file touched, the leaf bytes, one frame, one
    /// `fdatasync`. On error nothing is announced; the caller poisons the store.
    pub fn commit(&mut self, leaves: &Level, to: u64) -> Result<()> {
        let per_file = self.leaves_per_file();
        while self.end < to {
            let file = self.end / per_file;
            self.ensure_file(file)?;
            let first_of_file = file * per_file;
            let stop = to.min(first_of_file + per_file);
            let handle = Arc::clone(&self.files[to_usize(file)]);
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
            handle
                .sync_data()
                .map_err(|e| StoreError::io("fdatasync", &path, e))?;
            self.end = stop;
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
        let aligned = to.is_multiple_of(per_file);
        let slot = if aligned {
            0
        } else {
            let handle = &self.files[to_usize(file)];
            let path = self.path(file);
            let len = handle.len().map_err(|e| StoreError::io("stat", &path, e))?;
            // Frames are written in slot order and are the last bytes of
            // a file ever written, so its length bounds the slots used.
            let region = self.layout.frames_offset();
            len.saturating_sub(region).div_ceil(FRAME_LEN)
        };
        let first_stale = if aligned { file } else { file + 1 };
        // A last file whose header never became durable is on disk too.
        let on_disk = self.files.len() as u64 + u64::from(self.stale_next);
        let stale: Vec<u64> = (first_stale..on_disk).collect();
        self.files.truncate(to_usize(first_stale));
        self.stale_next = false;
        self.next = LogPosition {
            file,
            slot,
            seq: self.next.seq,
        };
        self.end = to;
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

/// Creates the empty log directory's first state (no files yet).
pub(crate) fn new_writer(fs: Arc<dyn Fs>, layout: &Layout, meta: StoreMeta) -> LogWriter {
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
    }
}

/// What recovery found in the log.
#[derive(Debug)]
pub(crate) struct Recovered {
    pub writer: LogWriter,
    /// The leaves after the resume point, `[start, writer.end())`.
    pub tail: Vec<Hash>,
}

/// Opens the log, scans it from `resume` (whose first frame must start at
/// leaf `start`) and finds the frontier. Errors on anything but a torn tail.
///
/// `access` says what the caller may do: a writer removes rolled-back
/// files; a read-only open changes nothing, and beside a live writer
/// takes a valid frame past the frontier for a commit that raced the
/// scan (it cannot tell it from damage, so it does not judge it).
pub(crate) fn recover(
    fs: Arc<dyn Fs>,
    layout: &Layout,
    meta: StoreMeta,
    (resume, start): (LogPosition, u64),
    access: crate::store::Access,
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
    let mut files: Vec<Arc<dyn FsFile>> = Vec::with_capacity(names.len());
    let mut stale_next = false;
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
                format!("log file {number} where file {expected} was expected (a file is missing)"),
            ));
        }
        let handle = fs
            .open(&path, open_mode)
            .map_err(|e| StoreError::io("open", &path, e))?;
        let mut header = vec![0u8; to_usize(HEADER_LEN)];
        let read = handle
            .read_at(&mut header, 0)
            .map_err(|e| StoreError::io("read", &path, e))?;
        let valid = if read < header.len() {
            Err(format::Malformed::Field(format!(
                "the file has {read} bytes, shorter than its {HEADER_LEN}-byte header"
            )))
        } else {
            format::check_log_header(&meta, number, &header)
        };
        match valid {
            Ok(()) => files.push(Arc::from(handle)),
            // The last file's header was never made durable: its creation
            // was interrupted, so it cannot hold an acknowledged frame
            // (frames are written only after the header's fsync).
            Err(_) if expected + 1 == names.len() && !file_has_frames(&*handle, &path, layout)? => {
                stale_next = true;
            }
            Err(why) => return Err(StoreError::corrupt(&path, 0, why)),
        }
    }

    let mut tail: Vec<Hash> = Vec::new();
    let mut position = resume;
    let mut end = start;
    // Scan valid frames.
    let frontier_torn = loop {
        let Some(handle) = files.get(to_usize(position.file)) else {
            break None;
        };
        let path = layout.log_file(position.file);
        let frame_at = layout.frame_offset(position.slot);
        let mut raw = [0u8; to_usize(FRAME_LEN)];
        let read = handle
            .read_at(&mut raw, frame_at)
            .map_err(|e| StoreError::io("read", &path, e))?;
        let first_of_file = position.file * per_file;
        let frame = (read == raw.len())
            .then(|| Frame::decode(&raw))
            .flatten()
            .filter(|f| f.follows(position, end, first_of_file, per_file));
        let Some(frame) = frame else {
            break Some((position, frame_at));
        };
        let count = frame.count as usize;
        let before = tail.len();
        tail.resize(before + count, [0; 32]);
        let bytes = tail[before..].as_flattened_mut();
        let read = handle
            .read_at(bytes, Layout::node_offset(frame.start() - first_of_file))
            .map_err(|e| StoreError::io("read", &path, e))?;
        if read < bytes.len() || crc32c::crc32c(bytes) != frame.leaves_crc {
            tail.truncate(before);
            break Some((position, frame_at));
        }
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
        start + tail.len() as u64,
        end,
        "the scan read {} leaves from {start} to {end}",
        tail.len()
    );

    // Past the frontier nothing may look like a frame: only the frontier's
    // own slot may hold the torn frame of the last, unacknowledged commit.
    // Frames numbered before `resume` are leftovers of a rollback (its
    // checkpoint resumes after them), never later commits.
    let mut stale_files = Vec::new();
    let judge_tail = !matches!(access, crate::store::Access::ReadOnly { writer_live: true });
    if let Some((torn, _)) = frontier_torn.filter(|_| judge_tail) {
        for (number, handle) in files.iter().enumerate().skip(to_usize(torn.file)) {
            let first_slot = if number as u64 == torn.file {
                torn.slot + 1
            } else {
                0
            };
            let path = layout.log_file(number as u64);
            if let Some(offset) =
                first_valid_frame(&**handle, &path, layout, first_slot, resume.seq)?
            {
                return Err(StoreError::corrupt(
                    path,
                    offset,
                    format!(
                        "a valid frame after the log's end at leaf {end} (frame {} in file {} is bad): acknowledged data is damaged",
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
        let last = to_usize(position.file).min(files.len().saturating_sub(1));
        for (number, handle) in files
            .iter()
            .enumerate()
            .take(last + 1)
            .skip(to_usize(resume.file))
        {
            let path = layout.log_file(number as u64);
            handle
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
    Ok(Recovered {
        writer: LogWriter {
            fs,
            layout: layout.clone(),
            meta,
            files,
            stale_next,
            next: position,
            end,
        },
        tail,
    })
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
