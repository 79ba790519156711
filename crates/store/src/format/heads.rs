//! The `heads` file (docs/file-format.md, "Heads"): its header and the
//! block-tagged head records. Version 2 records also say what was durable
//! when they were written (the records before their batch, the log's last
//! frame), so recovery tells a torn last batch from a lost acknowledged
//! record. Version 1 files are still read.

use cairn_core::Hash;
use cairn_core::cast::to_usize;

use super::bytes::{array, crc_holds, exact, put, put_crc, put_u32, put_u64, u32_at, u64_at, zero};
use super::{HEAD_RECORD_LEN, HEADS_HEADER_LEN, Malformed, StoreMeta};

pub(crate) const HEADS_MAGIC: &[u8; 8] = b"CAIRNHDS";
/// The heads file version this build writes (records say what was durable).
pub const HEADS_VERSION: u32 = 2;
/// The heads file version before (records without what was durable).
pub const HEADS_VERSION_PLAIN: u32 = 1;

const RECORD: usize = to_usize(HEAD_RECORD_LEN);
const HEADER: usize = to_usize(HEADS_HEADER_LEN);

/// What was durable when a version 2 record was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeadDurable {
    /// Records of the heads file durable before this record's batch.
    pub records: u64,
    /// The sequence number of the log's last durable frame (0: none).
    pub log_seq: u64,
    /// The log's durable size (the end of that frame).
    pub log_end: u64,
}

/// A block-tagged head as stored in the heads file: the tree's size and
/// root at the end of an append tagged with a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeadRecord {
    /// The block number.
    pub block: u64,
    /// The block hash, if the append carried one.
    pub block_hash: Option<Hash>,
    /// Leaves in the tree at the end of the append.
    pub size: u64,
    /// The root at that size (`None` for the empty tree).
    pub root: Option<Hash>,
    /// The rollback epoch it was written in.
    pub epoch: u64,
    /// What was durable when it was written (`None` in a version 1 file).
    pub durable: Option<HeadDurable>,
}

impl HeadRecord {
    /// The record's bytes: version 2 when it says what was durable,
    /// version 1 otherwise.
    pub(crate) fn encode(&self) -> [u8; RECORD] {
        let mut b = [0u8; RECORD];
        put_u64::<0, RECORD>(&mut b, self.block);
        put_u64::<8, RECORD>(&mut b, self.size);
        put_u64::<16, RECORD>(&mut b, self.epoch);
        let flags = u32::from(self.block_hash.is_some()) | (u32::from(self.root.is_some()) << 1);
        put_u32::<24, RECORD>(&mut b, flags);
        if let Some(hash) = self.block_hash {
            put::<32, 32, RECORD>(&mut b, hash);
        }
        if let Some(root) = self.root {
            put::<64, 32, RECORD>(&mut b, root);
        }
        match self.durable {
            Some(durable) => {
                put_u64::<96, RECORD>(&mut b, durable.records);
                put_u64::<104, RECORD>(&mut b, durable.log_seq);
                put_u64::<112, RECORD>(&mut b, durable.log_end);
                put_crc::<120, RECORD>(&mut b);
            }
            None => put_crc::<96, RECORD>(&mut b),
        }
        b
    }

    /// `None` unless `b` is one well-formed record of a heads file of
    /// `version` (a torn or zeroed slot is not) of a tree whose empty tree
    /// has a root exactly when `empty_has_root` (a fixed-depth tree).
    pub(crate) fn decode(b: &[u8], version: u32, empty_has_root: bool) -> Option<HeadRecord> {
        let b = exact::<RECORD>(b)?;
        let durable = match version {
            HEADS_VERSION => {
                if !crc_holds::<120, RECORD>(b) || !zero::<124, RECORD, RECORD>(b) {
                    return None;
                }
                Some(HeadDurable {
                    records: u64_at::<96, RECORD>(b),
                    log_seq: u64_at::<104, RECORD>(b),
                    log_end: u64_at::<112, RECORD>(b),
                })
            }
            HEADS_VERSION_PLAIN => {
                if !crc_holds::<96, RECORD>(b) || !zero::<100, RECORD, RECORD>(b) {
                    return None;
                }
                None
            }
            _ => return None,
        };
        let flags = u32_at::<24, RECORD>(b);
        if flags > 3 || u32_at::<28, RECORD>(b) != 0 {
            return None;
        }
        let block_hash: Hash = array::<32, 32, RECORD>(b);
        let root: Hash = array::<64, 32, RECORD>(b);
        let size = u64_at::<8, RECORD>(b);
        // The empty Lean tree has no root, every other tree has one.
        if (flags & 2 != 0) != (size > 0 || empty_has_root) {
            return None;
        }
        if flags & 1 == 0 && block_hash != [0; 32] || flags & 2 == 0 && root != [0; 32] {
            return None;
        }
        // A log frame is named with its end, never an end without one.
        if durable.is_some_and(|d| d.log_seq == 0 && d.log_end != 0) {
            return None;
        }
        Some(HeadRecord {
            block: u64_at::<0, RECORD>(b),
            block_hash: (flags & 1 != 0).then_some(block_hash),
            size,
            root: (flags & 2 != 0).then_some(root),
            epoch: u64_at::<16, RECORD>(b),
            durable,
        })
    }
}

/// The heads file's header (of the version this build writes).
pub(crate) fn heads_header(meta: &StoreMeta) -> [u8; HEADER] {
    heads_header_of(meta, HEADS_VERSION)
}

pub(crate) fn heads_header_of(meta: &StoreMeta, version: u32) -> [u8; HEADER] {
    let mut b = [0u8; HEADER];
    put::<0, 8, HEADER>(&mut b, *HEADS_MAGIC);
    put_u32::<8, HEADER>(&mut b, version);
    put_u64::<16, HEADER>(&mut b, meta.store_id);
    put_crc::<24, HEADER>(&mut b);
    b
}

/// Checks the heads file's header (up to its first 64 bytes); returns
/// its version.
pub(crate) fn check_heads_header(meta: &StoreMeta, b: &[u8]) -> Result<u32, Malformed> {
    let Some(b) = b.first_chunk::<HEADER>() else {
        return Err(Malformed::Field(format!(
            "{} bytes, shorter than the {HEADS_HEADER_LEN}-byte header",
            b.len()
        )));
    };
    if array::<0, 8, HEADER>(b) != *HEADS_MAGIC {
        return Err(Malformed::Magic);
    }
    let version = u32_at::<8, HEADER>(b);
    if version != HEADS_VERSION && version != HEADS_VERSION_PLAIN {
        return Err(Malformed::Version(version));
    }
    if !crc_holds::<24, HEADER>(b) {
        return Err(Malformed::Crc);
    }
    if u64_at::<16, HEADER>(b) != meta.store_id {
        return Err(Malformed::Field(format!(
            "heads of store {:#x}, want {:#x}",
            u64_at::<16, HEADER>(b),
            meta.store_id
        )));
    }
    Ok(version)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used)]
mod tests {
    use cairn_core::{Arity, HashKind, TreeConfig};

    use super::*;

    fn meta_of(store_id: u64) -> StoreMeta {
        StoreMeta {
            tree: TreeConfig::new(Arity::new(4).unwrap(), HashKind::Blake3),
            log_shift: 12,
            store_id,
            flags: 0,
            mutable: None,
        }
    }

    #[test]
    fn records_of_both_versions_round_trip_and_every_bit_flip_is_caught() {
        let record = HeadRecord {
            block: 19,
            block_hash: Some([7; 32]),
            size: 1000,
            root: Some([8; 32]),
            epoch: 2,
            durable: Some(HeadDurable {
                records: 5,
                log_seq: 40,
                log_end: 990,
            }),
        };
        let plain = HeadRecord {
            durable: None,
            ..record
        };
        for (record, version) in [(record, HEADS_VERSION), (plain, HEADS_VERSION_PLAIN)] {
            let rb = record.encode();
            assert_eq!(HeadRecord::decode(&rb, version, false), Some(record));
            for bit in 0..rb.len() * 8 {
                let mut bad = rb;
                bad[bit / 8] ^= 1 << (bit % 8);
                assert_ne!(
                    HeadRecord::decode(&bad, version, false),
                    Some(record),
                    "version {version} record bit {bit}"
                );
            }
            assert_eq!(HeadRecord::decode(&[0u8; 128], version, false), None);
        }
        assert_eq!(
            HeadRecord::decode(&record.encode(), HEADS_VERSION_PLAIN, false),
            None,
            "a record is read only as the version its file says"
        );
        let empty = HeadRecord {
            block: 1,
            block_hash: None,
            size: 0,
            root: None,
            epoch: 0,
            durable: Some(HeadDurable {
                records: 0,
                log_seq: 0,
                log_end: 0,
            }),
        };
        assert_eq!(HeadRecord::decode(&empty.encode(), 2, false), Some(empty));
        assert_eq!(HeadRecord::decode(&empty.encode(), 2, true), None);
        // A fixed-depth tree's empty head has a root (its top zero).
        let fixed_empty = HeadRecord {
            root: Some([3; 32]),
            ..empty
        };
        assert_eq!(
            HeadRecord::decode(&fixed_empty.encode(), 2, true),
            Some(fixed_empty)
        );
        assert_eq!(HeadRecord::decode(&fixed_empty.encode(), 2, false), None);
    }

    #[test]
    fn headers_of_both_versions_are_read() {
        let m = meta_of(0xfeed);
        assert_eq!(check_heads_header(&m, &heads_header(&m)), Ok(HEADS_VERSION));
        assert_eq!(
            check_heads_header(&m, &heads_header_of(&m, HEADS_VERSION_PLAIN)),
            Ok(HEADS_VERSION_PLAIN)
        );
        assert!(check_heads_header(&meta_of(7), &heads_header(&m)).is_err());
        assert!(check_heads_header(&m, &heads_header(&m)[..63]).is_err());
        assert!(check_heads_header(&m, &heads_header_of(&m, 3)).is_err());
    }
}
