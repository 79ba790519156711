//! The decoders of every record the store reads from disk, and their
//! encoders, for the fuzz targets in `fuzz/`. Hidden from the docs: this
//! is not an API. Each decoder takes the bytes exactly as the store reads
//! them (a fixed-size read where the store reads a fixed size) and answers
//! what the store concludes from them; none may panic on any input.

use cairn_core::cast::to_usize;
use std::io;
use std::sync::Arc;

use crate::format::{self, Frame, HEADER_LEN};
pub use crate::format::{CheckpointMeta, HeadRecord, LogPosition, StoreMeta};
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
}

/// A frame slot (the scan reads [`format::FRAME_LEN`] bytes per slot):
/// `None` if it holds no frame.
pub fn frame(slot: &[u8; to_usize(format::FRAME_LEN)]) -> Option<FrameFields> {
    Frame::decode(slot).map(|frame| FrameFields {
        seq: frame.seq,
        end: frame.end,
        count: frame.count,
        leaves_crc: frame.leaves_crc,
    })
}

/// The slot bytes of `fields`.
pub fn encode_frame(fields: &FrameFields) -> [u8; to_usize(format::FRAME_LEN)] {
    Frame {
        seq: fields.seq,
        end: fields.end,
        count: fields.count,
        leaves_crc: fields.leaves_crc,
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

/// One slot of the `heads` file of a tree whose empty tree has a root
/// exactly when `empty_has_root` (a fixed-depth tree): `None` if it holds
/// no record.
pub fn head_record(bytes: &[u8], empty_has_root: bool) -> Option<HeadRecord> {
    HeadRecord::decode(bytes, empty_has_root)
}

/// The slot bytes of `record`.
pub fn encode_head_record(record: &HeadRecord) -> Vec<u8> {
    record.encode().to_vec()
}

/// The `heads` file's header (the store reads up to
/// [`format::HEADS_HEADER_LEN`] bytes).
pub fn heads_header(meta: &StoreMeta, bytes: &[u8]) -> Result<(), String> {
    format::check_heads_header(meta, bytes).map_err(|why| why.to_string())
}

/// A log file's header ([`HEADER_LEN`] bytes) for file number `file`.
pub fn log_header(
    meta: &StoreMeta,
    file: u64,
    bytes: &[u8; to_usize(HEADER_LEN)],
) -> Result<(), String> {
    format::check_log_header(meta, file, bytes).map_err(|why| why.to_string())
}

/// A level file's header ([`HEADER_LEN`] bytes) for `level`.
pub fn level_header(
    meta: &StoreMeta,
    level: u32,
    bytes: &[u8; to_usize(HEADER_LEN)],
) -> Result<(), String> {
    format::check_level_header(meta, level, bytes).map_err(|why| why.to_string())
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
        };
        assert_eq!(meta(&encode_meta(&meta_value)), Ok(meta_value));
        assert!(meta(&[0; 10]).is_err());
        let fields = FrameFields {
            seq: 3,
            end: 90,
            count: 10,
            leaves_crc: 5,
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
        };
        assert_eq!(
            head_record(&encode_head_record(&record), false),
            Some(record)
        );
        assert!(heads_header(&meta_value, &format::heads_header(&meta_value)).is_ok());
        let log = format::log_header(&meta_value, 2);
        assert!(log_header(&meta_value, 2, log.as_slice().try_into().unwrap()).is_ok());
        assert!(log_header(&meta_value, 3, log.as_slice().try_into().unwrap()).is_err());
        let level = format::level_header(&meta_value, 1);
        assert!(level_header(&meta_value, 1, level.as_slice().try_into().unwrap()).is_ok());
        let file = BytesFile(vec![1, 2, 3]);
        let mut buf = [0u8; 4];
        assert_eq!(file.read_at(&mut buf, 1).unwrap(), 2);
        assert_eq!(buf[..2], [2, 3]);
        assert_eq!(file.read_at(&mut buf, 7).unwrap(), 0);
        assert!(file.write_at(&[0], 0).is_err());
    }
}
