//! The decoders of every record the store reads from disk, and their
//! encoders, for the fuzz targets in `fuzz/`. Hidden from the docs: this
//! is not an API. Each decoder takes the bytes exactly as the store reads
//! them (a fixed-size read where the store reads a fixed size) and answers
//! what the store concludes from them; none may panic on any input.

use cairn_core::cast::to_usize;
use std::io;
use std::sync::Arc;

use crate::format::{self, Frame, HEADER_LEN};
pub use crate::format::{
    CheckpointMeta, FrameRef, HeadDurable, HeadRecord, Integrity, LogPosition, StoreMeta,
    SuccessorMark, TailRecord,
};
use crate::fs::{FsFile, MappedNodes};

/// `cairn.meta`: the store reads its first [`StoreMeta::LEN`] bytes.
pub fn meta(bytes: &[u8]) -> Result<StoreMeta, String> {
    StoreMeta::decode(bytes).map_err(|why| why.to_string())
}

/// The bytes `cairn.meta` starts with for `meta`.
pub fn encode_meta(meta: &StoreMeta) -> Vec<u8> {
    meta.encode().to_vec()
}

/// The fields of one log frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameFields {
    /// Sequence number.
    pub seq: u64,
    /// The tree's size after the frame.
    pub end: u64,
    /// Leaves in the frame.
    pub count: u32,
    /// CRC-32C of the frame's leaves.
    pub leaves_crc: u32,
    /// The previous frame's CRC (the chain).
    pub prev: u32,
}

/// A frame slot (the scan reads [`format::FRAME_LEN`] bytes per slot):
/// `None` if it holds no frame.
pub fn frame(slot: &[u8; to_usize(format::FRAME_LEN)]) -> Option<FrameFields> {
    Frame::decode(slot).map(|frame| FrameFields {
        seq: frame.seq,
        end: frame.end,
        count: frame.count,
        leaves_crc: frame.leaves_crc,
        prev: frame.prev,
    })
}

/// The slot bytes of `fields`.
pub fn encode_frame(fields: &FrameFields) -> [u8; to_usize(format::FRAME_LEN)] {
    Frame {
        seq: fields.seq,
        end: fields.end,
        count: fields.count,
        leaves_crc: fields.leaves_crc,
        prev: fields.prev,
    }
    .encode()
}

/// Whether recovery's scan accepts `fields` at `position` of a log that
/// ends at `end` (see `Frame::follows`).
pub fn frame_follows(
    fields: &FrameFields,
    position: LogPosition,
    end: u64,
    first_of_file: u64,
    per_file: u64,
) -> bool {
    Frame {
        seq: fields.seq,
        end: fields.end,
        count: fields.count,
        leaves_crc: fields.leaves_crc,
        prev: fields.prev,
    }
    .follows(position, end, first_of_file, per_file)
}

/// The `checkpoint` file, whole, for the store `store_id`.
pub fn checkpoint(bytes: &[u8], store_id: u64) -> Result<CheckpointMeta, String> {
    CheckpointMeta::decode(bytes, store_id).map_err(|why| why.to_string())
}

/// The `checkpoint` file of `checkpoint` in the store `store_id`.
pub fn encode_checkpoint(checkpoint: &CheckpointMeta, store_id: u64) -> Vec<u8> {
    checkpoint.encode(store_id)
}

/// One slot of a `heads` file of `version` (its header's) of a tree whose
/// empty tree has a root exactly when `empty_has_root` (a fixed-depth
/// tree): `None` if it holds no record.
pub fn head_record(bytes: &[u8], version: u32, empty_has_root: bool) -> Option<HeadRecord> {
    HeadRecord::decode(bytes, version, empty_has_root)
}

/// The slot bytes of `record` (version 2 if it says what was durable,
/// version 1 otherwise).
pub fn encode_head_record(record: &HeadRecord) -> Vec<u8> {
    record.encode().to_vec()
}

/// The `heads` file's header (the store reads up to
/// [`format::HEADS_HEADER_LEN`] bytes): its version.
pub fn heads_header(meta: &StoreMeta, bytes: &[u8]) -> Result<u32, String> {
    format::check_heads_header(meta, bytes).map_err(|why| why.to_string())
}

/// What a log file's header page holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogHeader {
    /// The file's version.
    pub version: u32,
    /// Its valid tail records, by slot (version 2).
    pub tails: [Option<TailRecord>; 2],
    /// Its valid successor mark (version 2).
    pub successor: Option<SuccessorMark>,
}

/// A log file's header page ([`HEADER_LEN`] bytes) for file number `file`.
pub fn log_header(
    meta: &StoreMeta,
    file: u64,
    bytes: &[u8; to_usize(HEADER_LEN)],
) -> Result<LogHeader, String> {
    let version = format::check_log_header(meta, file, bytes).map_err(|why| why.to_string())?;
    let records = if version == format::LOG_VERSION {
        format::HeaderRecords::read(bytes, file, meta.store_id)
    } else {
        format::HeaderRecords::default()
    };
    Ok(LogHeader {
        version,
        tails: records.tails,
        successor: records.successor,
    })
}

/// The header page of log file `file` (current version, no records).
pub fn encode_log_header(meta: &StoreMeta, file: u64) -> Vec<u8> {
    format::log_header(meta, file).to_vec()
}

/// A tail record slot ([`format::TAIL_LEN`] bytes): `None` if it holds none.
pub fn tail_record(bytes: &[u8]) -> Option<TailRecord> {
    TailRecord::decode(bytes)
}

/// The slot bytes of `record`.
pub fn encode_tail_record(record: &TailRecord) -> Vec<u8> {
    record.encode().to_vec()
}

/// A successor mark slot of log file `file` of store `store_id`.
pub fn successor_mark(bytes: &[u8], file: u64, store_id: u64) -> Option<SuccessorMark> {
    SuccessorMark::decode(bytes, file, store_id)
}

/// A sums file's header ([`format::SUMS_HEADER_LEN`] bytes) for `level`.
pub fn sums_header(
    meta: &StoreMeta,
    level: u32,
    bytes: &[u8; to_usize(format::SUMS_HEADER_LEN)],
) -> Result<(), String> {
    format::check_sums_header(meta, level, bytes).map_err(|why| why.to_string())
}

/// A level file's header ([`HEADER_LEN`] bytes) for `level`.
pub fn level_header(
    meta: &StoreMeta,
    level: u32,
    bytes: &[u8; to_usize(HEADER_LEN)],
) -> Result<(), String> {
    format::check_level_header(meta, level, bytes).map_err(|why| why.to_string())
}

/// The verified record of the store `store_id`: its entries.
pub fn verified(bytes: &[u8], store_id: u64) -> Result<Vec<crate::format::VerifiedEntry>, String> {
    format::decode_verified(bytes, store_id).map_err(|why| why.to_string())
}

/// The verified record holding `entries`.
pub fn encode_verified(store_id: u64, entries: &[crate::format::VerifiedEntry]) -> Vec<u8> {
    format::encode_verified(store_id, entries)
}

/// A read-only file over bytes in memory, for decoders that read through
/// an [`FsFile`] (the database's set file).
#[derive(Debug)]
pub struct BytesFile(pub Vec<u8>);

impl FsFile for BytesFile {
    fn write_at(&self, _buf: &[u8], _offset: u64) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "a BytesFile is read-only",
        ))
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(self.0.len());
        let take = buf.len().min(self.0.len() - start);
        buf[..take].copy_from_slice(&self.0[start..start + take]);
        Ok(take)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.0.len() as u64)
    }

    fn sync_data(&self) -> io::Result<()> {
        Ok(())
    }

    fn identity(&self) -> io::Result<crate::fs::FileIdentity> {
        Ok(crate::fs::FileIdentity {
            len: self.0.len() as u64,
            ..Default::default()
        })
    }

    fn map_nodes(&self, _offset: u64, _nodes: usize) -> io::Result<Arc<dyn MappedNodes>> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "a BytesFile is not mapped",
        ))
    }
}

#[cfg(test)]
mod tests {
    use cairn_core::{Arity, HashKind, TreeConfig};

    use super::*;

    #[test]
    fn every_decoder_reads_what_its_encoder_wrote() {
        let meta_value = StoreMeta {
            tree: TreeConfig::new(Arity::new(3).unwrap(), HashKind::Sha256),
            log_shift: 20,
            store_id: 42,
            flags: 1,
            mutable: None,
        };
        assert_eq!(meta(&encode_meta(&meta_value)), Ok(meta_value));
        assert!(meta(&[0; 10]).is_err());
        let fields = FrameFields {
            seq: 3,
            end: 90,
            count: 10,
            leaves_crc: 5,
            prev: 6,
        };
        assert_eq!(frame(&encode_frame(&fields)), Some(fields));
        let position = LogPosition {
            file: 0,
            slot: 2,
            seq: 3,
        };
        assert!(frame_follows(&fields, position, 80, 0, 1024));
        assert!(!frame_follows(&fields, position, 81, 0, 1024));
        let record = HeadRecord {
            block: 9,
            block_hash: None,
            size: 90,
            root: Some([1; 32]),
            epoch: 0,
            durable: Some(HeadDurable {
                records: 3,
                log_seq: 2,
                log_end: 80,
            }),
        };
        assert_eq!(
            head_record(&encode_head_record(&record), 2, false),
            Some(record)
        );
        assert_eq!(
            heads_header(&meta_value, &format::heads_header(&meta_value)),
            Ok(2)
        );
        let log = format::log_header(&meta_value, 2);
        assert_eq!(
            log_header(&meta_value, 2, &log).map(|header| header.version),
            Ok(2)
        );
        assert!(log_header(&meta_value, 3, &log).is_err());
        assert_eq!(encode_log_header(&meta_value, 2), log.to_vec());
        let tail = TailRecord {
            counter: 1,
            durable: None,
            heads: 0,
            epoch: 0,
            sealed: false,
        };
        assert_eq!(tail_record(&encode_tail_record(&tail)), Some(tail));
        let mark = SuccessorMark {
            next: 3,
            first_seq: 9,
        };
        assert_eq!(successor_mark(&mark.encode(42), 2, 42), Some(mark));
        let level = format::level_header(&meta_value, 1);
        assert!(level_header(&meta_value, 1, &level).is_ok());
        let sums = format::sums_header(&meta_value, 0);
        assert!(sums_header(&meta_value, 0, &sums).is_ok());
        let file = BytesFile(vec![1, 2, 3]);
        let mut buf = [0u8; 4];
        assert_eq!(file.read_at(&mut buf, 1).unwrap(), 2);
        assert_eq!(buf[..2], [2, 3]);
        assert_eq!(file.read_at(&mut buf, 7).unwrap(), 0);
        assert!(file.write_at(&[0], 0).is_err());
    }
}
