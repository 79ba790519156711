//! The log file's records (docs/file-format.md, "The leaf log is level
//! 0"): its header page with the tail records and the successor mark, and
//! the chained frame. Version 1 files (unchained frames, no tail records,
//! no successor mark) are still read.

use cairn_core::cast::to_usize;

use super::bytes::{crc_holds, exact, put, put_crc, put_u32, put_u64, u32_at, u64_at, zero};
use super::{FRAME_LEN, HEADER_LEN, Malformed, StoreMeta};

pub(crate) const LOG_MAGIC: &[u8; 8] = b"CAIRNLOG";
/// The log file version this build writes: 2 chains its frames and keeps
/// tail records and a successor mark in the header page.
pub const LOG_VERSION: u32 = 2;
/// The log file version before chained frames (still read).
pub const LOG_VERSION_UNCHAINED: u32 = 1;
/// Where the two tail records are in a log file's header page: each at
/// the start of its own 512-byte sector, so a write torn between sectors
/// damages at most the one being written.
pub const TAIL_OFFSETS: [u64; 2] = [512, 1024];
/// Where the successor mark is in a log file's header page (its own sector).
pub const SUCCESSOR_OFFSET: u64 = 1536;
/// Bytes of a tail record.
pub const TAIL_LEN: usize = 80;
/// Bytes of a successor mark.
pub const SUCCESSOR_LEN: usize = 32;

const _: () =
    assert!(TAIL_OFFSETS[0].is_multiple_of(512) && TAIL_OFFSETS[1] == TAIL_OFFSETS[0] + 512);
const _: () = assert!(SUCCESSOR_OFFSET == TAIL_OFFSETS[1] + 512);
const _: () = assert!(SUCCESSOR_OFFSET + 512 <= HEADER_LEN && TAIL_LEN <= 512);

/// A frame's place in the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct LogPosition {
    /// Log file number.
    pub file: u64,
    /// Frame slot in it.
    pub slot: u64,
    /// The frame's sequence number.
    pub seq: u64,
}

/// The header page of log file `file` in the current version (its tail
/// records and successor mark empty).
pub(crate) fn log_header(meta: &StoreMeta, file: u64) -> [u8; to_usize(HEADER_LEN)] {
    log_header_of(meta, file, LOG_VERSION)
}

pub(crate) fn log_header_of(
    meta: &StoreMeta,
    file: u64,
    version: u32,
) -> [u8; to_usize(HEADER_LEN)] {
    let mut b = [0u8; to_usize(HEADER_LEN)];
    put::<0, 8, { to_usize(HEADER_LEN) }>(&mut b, *LOG_MAGIC);
    put_u32::<8, { to_usize(HEADER_LEN) }>(&mut b, version);
    b[12] = meta.tree.arity.byte();
    b[13] = meta.tree.hash.id();
    put_u64::<16, { to_usize(HEADER_LEN) }>(&mut b, meta.store_id);
    put_u64::<24, { to_usize(HEADER_LEN) }>(&mut b, file);
    put_u64::<32, { to_usize(HEADER_LEN) }>(&mut b, file << meta.log_shift);
    put_u64::<40, { to_usize(HEADER_LEN) }>(&mut b, meta.log_file_leaves());
    put_crc::<48, { to_usize(HEADER_LEN) }>(&mut b);
    b
}

/// Checks a log file's header page against the store and the file's
/// number; returns its version ([`LOG_VERSION`] or
/// [`LOG_VERSION_UNCHAINED`]).
pub(crate) fn check_log_header(
    meta: &StoreMeta,
    file: u64,
    b: &[u8; to_usize(HEADER_LEN)],
) -> Result<u32, Malformed> {
    if super::bytes::array::<0, 8, { to_usize(HEADER_LEN) }>(b) != *LOG_MAGIC {
        return Err(Malformed::Magic);
    }
    let version = u32_at::<8, { to_usize(HEADER_LEN) }>(b);
    if version != LOG_VERSION && version != LOG_VERSION_UNCHAINED {
        return Err(Malformed::Version(version));
    }
    if !crc_holds::<48, { to_usize(HEADER_LEN) }>(b) {
        return Err(Malformed::Crc);
    }
    let want = log_header_of(meta, file, version);
    if super::bytes::array::<0, 52, { to_usize(HEADER_LEN) }>(b)
        != super::bytes::array::<0, 52, { to_usize(HEADER_LEN) }>(&want)
    {
        return Err(Malformed::Field(format!(
            "header is for store {:#x} file {} with {} leaves per file, want store {:#x} file {file} with {}",
            u64_at::<16, { to_usize(HEADER_LEN) }>(b),
            u64_at::<24, { to_usize(HEADER_LEN) }>(b),
            u64_at::<40, { to_usize(HEADER_LEN) }>(b),
            meta.store_id,
            meta.log_file_leaves()
        )));
    }
    Ok(version)
}

/// One frame: the record of one group commit in one log file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Frame {
    pub seq: u64,
    pub end: u64,
    pub count: u32,
    pub leaves_crc: u32,
    /// The CRC (bytes 28..32) of the frame before it in the log, or the
    /// checkpoint's chain value for the first frame after a checkpoint
    /// (0 in a version 1 file, which does not chain).
    pub prev: u32,
}

impl Frame {
    pub fn start(&self) -> u64 {
        self.end - u64::from(self.count)
    }

    pub fn encode(&self) -> [u8; to_usize(FRAME_LEN)] {
        let mut b = [0u8; to_usize(FRAME_LEN)];
        put_u64::<0, 32>(&mut b, self.seq);
        put_u64::<8, 32>(&mut b, self.end);
        put_u32::<16, 32>(&mut b, self.count);
        put_u32::<20, 32>(&mut b, self.leaves_crc);
        put_u32::<24, 32>(&mut b, self.prev);
        put_crc::<28, 32>(&mut b);
        b
    }

    /// The frame's own CRC as encoded: what the next frame's `prev` holds.
    pub fn crc(&self) -> u32 {
        u32_at::<28, 32>(&self.encode())
    }

    /// Whether this is the frame recovery accepts at `position` when the
    /// log so far ends at `end`, in a log file of `per_file` leaves whose
    /// first is `first_of_file`: it carries the position's sequence number,
    /// starts where the log ends and ends inside its file, and slot 0
    /// starts at the file's first leaf. The writer asserts it of every
    /// frame before writing it; recovery's scan requires it of every frame
    /// it reads.
    pub fn follows(
        &self,
        position: LogPosition,
        end: u64,
        first_of_file: u64,
        per_file: u64,
    ) -> bool {
        self.seq == position.seq
            && self.start() == end
            && self.end <= first_of_file.saturating_add(per_file)
            && (position.slot > 0 || self.start() == first_of_file)
    }

    /// A frame whose own CRC holds (its leaves and its place in the chain
    /// are checked separately); `None` for any other slot.
    pub fn decode(b: &[u8]) -> Option<Frame> {
        let b = exact::<{ to_usize(FRAME_LEN) }>(b)?;
        if !crc_holds::<28, 32>(b) {
            return None;
        }
        let frame = Frame {
            seq: u64_at::<0, 32>(b),
            end: u64_at::<8, 32>(b),
            count: u32_at::<16, 32>(b),
            leaves_crc: u32_at::<20, 32>(b),
            prev: u32_at::<24, 32>(b),
        };
        (frame.count > 0 && frame.seq > 0 && frame.end >= u64::from(frame.count)).then_some(frame)
    }
}

/// A frame as a tail record or a head record names it: the last frame
/// that was durable when the record was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameRef {
    /// Its sequence number (at least 1).
    pub seq: u64,
    /// The tree's size after it.
    pub end: u64,
    /// The log file holding it.
    pub file: u64,
    /// Its slot there.
    pub slot: u64,
    /// Its own CRC (bytes 28..32).
    pub crc: u32,
}

/// A tail record in a log file's header page: what the writer knew to be
/// durable when it wrote it, in the same `fdatasync` as a frame (or alone,
/// as a seal).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TailRecord {
    /// Orders the two slots of one file: the larger is the newer.
    pub counter: u64,
    /// The last frame durable before this record was written (`None`
    /// before the log's first frame).
    pub durable: Option<FrameRef>,
    /// Records durable in the heads file then, of rollback epoch `epoch`.
    pub heads: u64,
    /// The rollback epoch of `heads`.
    pub epoch: u64,
    /// Written by a seal (a clean close or an idle store) rather than by
    /// a commit.
    pub sealed: bool,
}

impl TailRecord {
    /// The record's bytes.
    pub fn encode(&self) -> [u8; TAIL_LEN] {
        let mut b = [0u8; TAIL_LEN];
        put_u64::<0, TAIL_LEN>(&mut b, self.counter);
        if let Some(frame) = self.durable {
            put_u64::<8, TAIL_LEN>(&mut b, frame.seq);
            put_u64::<16, TAIL_LEN>(&mut b, frame.end);
            put_u64::<24, TAIL_LEN>(&mut b, frame.file);
            put_u64::<32, TAIL_LEN>(&mut b, frame.slot);
            put_u32::<40, TAIL_LEN>(&mut b, frame.crc);
        }
        put_u32::<44, TAIL_LEN>(&mut b, u32::from(self.sealed));
        put_u64::<48, TAIL_LEN>(&mut b, self.heads);
        put_u64::<56, TAIL_LEN>(&mut b, self.epoch);
        put_crc::<72, TAIL_LEN>(&mut b);
        b
    }

    /// A well-formed tail record; `None` for a zeroed, torn or damaged
    /// slot.
    pub fn decode(b: &[u8]) -> Option<TailRecord> {
        let b = exact::<TAIL_LEN>(b)?;
        if !crc_holds::<72, TAIL_LEN>(b)
            || !zero::<64, 72, TAIL_LEN>(b)
            || !zero::<76, 80, TAIL_LEN>(b)
        {
            return None;
        }
        let counter = u64_at::<0, TAIL_LEN>(b);
        let flags = u32_at::<44, TAIL_LEN>(b);
        let seq = u64_at::<8, TAIL_LEN>(b);
        if counter == 0 || flags > 1 {
            return None;
        }
        let durable = if seq == 0 {
            if !zero::<16, 44, TAIL_LEN>(b) {
                return None;
            }
            None
        } else {
            Some(FrameRef {
                seq,
                end: u64_at::<16, TAIL_LEN>(b),
                file: u64_at::<24, TAIL_LEN>(b),
                slot: u64_at::<32, TAIL_LEN>(b),
                crc: u32_at::<40, TAIL_LEN>(b),
            })
        };
        Some(TailRecord {
            counter,
            durable,
            heads: u64_at::<48, TAIL_LEN>(b),
            epoch: u64_at::<56, TAIL_LEN>(b),
            sealed: flags == 1,
        })
    }
}

/// The mark a log file gets once the next file exists durably: a deleted
/// or truncated next file is then damage, not an unused one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SuccessorMark {
    /// The next file's number (this file's + 1).
    pub next: u64,
    /// The sequence number of the first frame written there.
    pub first_seq: u64,
}

impl SuccessorMark {
    /// The mark's bytes in the store `store_id`.
    pub fn encode(&self, store_id: u64) -> [u8; SUCCESSOR_LEN] {
        let mut b = [0u8; SUCCESSOR_LEN];
        put_u64::<0, SUCCESSOR_LEN>(&mut b, self.next);
        put_u64::<8, SUCCESSOR_LEN>(&mut b, self.first_seq);
        put_u64::<16, SUCCESSOR_LEN>(&mut b, store_id);
        put_crc::<24, SUCCESSOR_LEN>(&mut b);
        b
    }

    /// The mark in the header page of log file `file`, if it holds a
    /// valid one.
    pub fn decode(b: &[u8], file: u64, store_id: u64) -> Option<SuccessorMark> {
        let b = exact::<SUCCESSOR_LEN>(b)?;
        let mark = SuccessorMark {
            next: u64_at::<0, SUCCESSOR_LEN>(b),
            first_seq: u64_at::<8, SUCCESSOR_LEN>(b),
        };
        (crc_holds::<24, SUCCESSOR_LEN>(b)
            && zero::<28, 32, SUCCESSOR_LEN>(b)
            && u64_at::<16, SUCCESSOR_LEN>(b) == store_id
            && Some(mark.next) == file.checked_add(1)
            && mark.first_seq > 0)
            .then_some(mark)
    }
}

/// What a log file's header page holds beside the header proper.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct HeaderRecords {
    /// The valid tail records (slot 0, slot 1).
    pub tails: [Option<TailRecord>; 2],
    /// The successor mark, if valid.
    pub successor: Option<SuccessorMark>,
}

impl HeaderRecords {
    /// The records of a version 2 header page of file `file`.
    pub fn read(b: &[u8; to_usize(HEADER_LEN)], file: u64, store_id: u64) -> HeaderRecords {
        let slot =
            |at: u64, len: usize| b.get(to_usize(at)..to_usize(at) + len).unwrap_or_default();
        HeaderRecords {
            tails: TAIL_OFFSETS.map(|at| TailRecord::decode(slot(at, TAIL_LEN))),
            successor: SuccessorMark::decode(slot(SUCCESSOR_OFFSET, SUCCESSOR_LEN), file, store_id),
        }
    }

    /// The newer valid tail record and the slot the writer overwrites
    /// next (the other one).
    pub fn newest(&self) -> (Option<TailRecord>, usize) {
        match self.tails {
            [Some(a), Some(b)] if b.counter > a.counter => (Some(b), 0),
            [Some(a), _] => (Some(a), 1),
            [None, Some(b)] => (Some(b), 0),
            [None, None] => (None, 0),
        }
    }
}

/// `log/NNNNNNNNNNNN.log`
pub(crate) fn log_name(file: u64) -> String {
    format!("{file:012}.log")
}

/// The file number of a log file name.
pub(crate) fn parse_log_name(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(".log")?;
    (digits.len() == 12 && digits.bytes().all(|c| c.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used)]
mod tests {
    use cairn_core::{Arity, HashKind, TreeConfig};

    use super::*;

    fn meta() -> StoreMeta {
        StoreMeta {
            tree: TreeConfig::new(Arity::new(4).unwrap(), HashKind::Blake3),
            log_shift: 12,
            store_id: 0xfeed_beef,
            flags: 0,
            mutable: None,
        }
    }

    #[test]
    fn frames_round_trip_and_every_bit_flip_is_caught() {
        let frame = Frame {
            seq: 7,
            end: 100,
            count: 3,
            leaves_crc: 42,
            prev: 0xdead_beef,
        };
        let fb = frame.encode();
        assert_eq!(Frame::decode(&fb), Some(frame));
        assert_eq!(frame.start(), 97);
        assert_eq!(
            frame.crc(),
            u32::from_le_bytes(fb[28..32].try_into().unwrap())
        );
        for bit in 0..256 {
            let mut bad = fb;
            bad[bit / 8] ^= 1 << (bit % 8);
            assert_ne!(Frame::decode(&bad), Some(frame), "frame bit {bit}");
        }
        assert_eq!(Frame::decode(&[0u8; 32]), None, "a zeroed slot is no frame");
        assert_eq!(Frame::decode(&fb[..31]), None, "a short slot is no frame");
        // Recovery accepts it only where it follows the log.
        let at = |slot, seq| LogPosition { file: 0, slot, seq };
        assert!(frame.follows(at(3, 7), 97, 0, 128));
        assert!(
            !frame.follows(at(3, 8), 97, 0, 128),
            "another sequence number"
        );
        assert!(!frame.follows(at(3, 7), 96, 0, 128), "a gap before it");
        assert!(!frame.follows(at(3, 7), 97, 0, 99), "past its file's end");
        assert!(
            !frame.follows(at(0, 7), 97, 0, 128),
            "slot 0 not at the file's first leaf"
        );
        assert!(frame.follows(at(0, 7), 97, 97, 128));
    }

    #[test]
    fn tail_records_and_marks_round_trip_and_every_bit_flip_is_caught() {
        let tail = TailRecord {
            counter: 9,
            durable: Some(FrameRef {
                seq: 5,
                end: 77,
                file: 1,
                slot: 3,
                crc: 0x1234_5678,
            }),
            heads: 4,
            epoch: 2,
            sealed: true,
        };
        let tb = tail.encode();
        assert_eq!(TailRecord::decode(&tb), Some(tail));
        for bit in 0..TAIL_LEN * 8 {
            let mut bad = tb;
            bad[bit / 8] ^= 1 << (bit % 8);
            assert_ne!(TailRecord::decode(&bad), Some(tail), "tail bit {bit}");
        }
        assert_eq!(TailRecord::decode(&[0u8; TAIL_LEN]), None);
        let first = TailRecord {
            durable: None,
            sealed: false,
            ..tail
        };
        assert_eq!(TailRecord::decode(&first.encode()), Some(first));
        let mark = SuccessorMark {
            next: 4,
            first_seq: 19,
        };
        let mb = mark.encode(7);
        assert_eq!(SuccessorMark::decode(&mb, 3, 7), Some(mark));
        assert_eq!(SuccessorMark::decode(&mb, 4, 7), None, "for another file");
        assert_eq!(SuccessorMark::decode(&mb, 3, 8), None, "of another store");
        for bit in 0..SUCCESSOR_LEN * 8 {
            let mut bad = mb;
            bad[bit / 8] ^= 1 << (bit % 8);
            assert_ne!(
                SuccessorMark::decode(&bad, 3, 7),
                Some(mark),
                "mark bit {bit}"
            );
        }
        // In a header page: the newer tail record wins, the other slot is
        // the next to be written.
        let mut page = log_header(&meta(), 3);
        let older = TailRecord { counter: 8, ..tail };
        page[512..512 + TAIL_LEN].copy_from_slice(&older.encode());
        page[1024..1024 + TAIL_LEN].copy_from_slice(&tb);
        page[1536..1536 + SUCCESSOR_LEN].copy_from_slice(&mark.encode(meta().store_id));
        let records = HeaderRecords::read(&page, 3, meta().store_id);
        assert_eq!(records.newest(), (Some(tail), 0));
        assert_eq!(records.successor, Some(mark));
        assert_eq!(check_log_header(&meta(), 3, &page), Ok(LOG_VERSION));
    }

    #[test]
    fn headers_of_both_versions_are_read_and_others_refused() {
        let m = meta();
        let header = log_header(&m, 3);
        assert_eq!(check_log_header(&m, 3, &header), Ok(LOG_VERSION));
        assert!(check_log_header(&m, 4, &header).is_err());
        let old = log_header_of(&m, 3, LOG_VERSION_UNCHAINED);
        assert_eq!(check_log_header(&m, 3, &old), Ok(LOG_VERSION_UNCHAINED));
        let other = log_header_of(&m, 3, 3);
        assert_eq!(check_log_header(&m, 3, &other), Err(Malformed::Version(3)));
        for bit in 0..52 * 8 {
            let mut bad = header;
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(check_log_header(&m, 3, &bad).is_err(), "header bit {bit}");
        }
    }

    #[test]
    fn names_parse_strictly() {
        assert_eq!(parse_log_name(&log_name(42)), Some(42));
        assert_eq!(parse_log_name("42.log"), None);
        assert_eq!(parse_log_name("00000000004x.log"), None);
    }
}
