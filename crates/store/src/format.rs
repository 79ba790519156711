//! Byte layouts of every file (see docs/file-format.md, which this module
//! implements; a change to one is a change to the other): `cairn.meta` and
//! the level files' header here, the log's records in `format/log.rs`, the
//! checkpoint in `format/checkpoint.rs`, the heads file in
//! `format/heads.rs` and the sums files in `format/sums.rs`. Every decoder
//! takes bytes from disk and answers `Err` or `None` for anything it does
//! not accept; none can panic (the lints below hold them to it).
#![deny(clippy::indexing_slicing, clippy::unwrap_used)]

use cairn_core::cast::{level_number, to_usize};
use cairn_core::kind::KindFields;
use cairn_core::{Arity, Hash, HashKind, TreeConfig, TreeKind};

mod bytes;
mod checkpoint;
mod heads;
mod log;
mod sums;
mod verified;

use bytes::{array, crc_holds, put, put_crc, put_u32, put_u64, u16_at, u32_at, u64_at, zero};
pub(crate) use checkpoint::checkpoint_version;
pub use checkpoint::{CHECKPOINT_VERSION, CheckpointMeta, Integrity};
pub use heads::{HEADS_VERSION, HEADS_VERSION_PLAIN, HeadDurable, HeadRecord};
pub(crate) use heads::{check_heads_header, heads_header};
pub(crate) use log::{
    Frame, HeaderRecords, check_log_header, log_header, log_name, parse_log_name,
};
pub use log::{
    FrameRef, LOG_VERSION, LOG_VERSION_UNCHAINED, LogPosition, SUCCESSOR_LEN, SUCCESSOR_OFFSET,
    SuccessorMark, TAIL_LEN, TAIL_OFFSETS, TailRecord,
};
pub use sums::{PAGE_NODES, SUM_LEN, SUMS_HEADER_LEN, SUMS_VERSION, sum_offset};
pub(crate) use sums::{check_sums_header, parse_sums_name, sums_header, sums_name};
pub use verified::{
    VERIFIED_MAX_BYTES, VERIFIED_MAX_ENTRIES, VERIFIED_VERSION, VerifiedEntry, VerifiedFile,
};
pub(crate) use verified::{decode_verified, encode_verified};

/// The on-disk format this build writes (docs/file-format.md; format 1
/// directories are read, and migrated by a writer's open).
pub const STORE_FORMAT: u32 = 2;
/// The version of `cairn.meta` of a Lean tree and of the level files.
pub const VERSION: u32 = 1;
/// The version of a `cairn.meta` that names its tree's kind (80 bytes): a
/// build that reads only version 1 refuses such a store rather than open
/// a fixed-depth tree as a Lean one.
pub const META_VERSION_KINDS: u32 = 2;
/// Every log and level file starts with one 4 KiB page of header, so the
/// nodes after it are page-aligned for mapping.
pub const HEADER_LEN: u64 = 4096;
/// Bytes of one frame.
pub const FRAME_LEN: u64 = 32;

pub(crate) const META_MAGIC: &[u8; 8] = b"CAIRNDB\0";
pub(crate) const LEVEL_MAGIC: &[u8; 8] = b"CAIRNLVL";
/// Bytes of the heads file's header.
pub const HEADS_HEADER_LEN: u64 = 64;
/// Bytes of one block-tagged head record.
pub const HEAD_RECORD_LEN: u64 = 128;

// Layout relationships the offsets rely on, checked by the compiler.
// Log and level files: the header is whole pages and a whole number of
// nodes, so node `i` at `HEADER_LEN + 32 * i` is page-aligned at every
// segment start (mappings start on a page) and a 2 MiB segment of nodes is
// whole pages. A frame is one node's width, so the frame region after the
// leaf region stays node-aligned too.
const _: () = assert!(HEADER_LEN.is_multiple_of(4096) && HEADER_LEN.is_multiple_of(NODE_LEN));
const _: () = assert!((cairn_core::level::SEGMENT_LEN as u64 * NODE_LEN).is_multiple_of(4096));
const _: () = assert!(FRAME_LEN == NODE_LEN);
// A checkpoint names at most 65 levels (depth 64 at arity 2 for 2^64
// leaves): level files are numbered 1..=64 with two digits.
const _: () = assert!(MAX_LEVELS == 65);
/// Bytes of one node (a leaf in the log, a node in a level file).
const NODE_LEN: u64 = size_of::<Hash>() as u64;
/// The most levels a checkpoint records.
const MAX_LEVELS: usize = 65;
/// A header page, as read from a log or level file.
pub(crate) type HeaderPage = [u8; to_usize(HEADER_LEN)];

/// Why bytes are not a valid record; the caller adds file and offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Malformed {
    Magic,
    Version(u32),
    Crc,
    Field(String),
}

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Malformed::Magic => write!(f, "bad magic"),
            Malformed::Version(v) => write!(f, "format version {v} is unknown to this build"),
            Malformed::Crc => write!(f, "CRC mismatch"),
            Malformed::Field(what) => write!(f, "{what}"),
        }
    }
}

/// What `cairn.meta` records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoreMeta {
    /// The tree.
    pub tree: TreeConfig,
    /// log2 of the leaves per log file.
    pub log_shift: u8,
    /// The store's random id, in every file.
    pub store_id: u64,
    /// Flags: bit 0 is the database's (it keeps a nullifier set), bit 1
    /// [`crate::FLAG_EXPLICIT_FINALITY`]; other bits are written 0.
    pub flags: u64,
    /// `Some(shape)`: the store is the change log of a mutable tree of
    /// this shape (Lean or fixed-depth), whose own tree (`tree`) is a Lean
    /// tree over the log's words. Written as kind id
    /// [`StoreMeta::MUTABLE_LEAN_ID`] or [`StoreMeta::MUTABLE_FIXED_ID`],
    /// which a build without mutable trees refuses as an unknown kind.
    pub mutable: Option<TreeKind>,
}

impl StoreMeta {
    /// Encoded length of version 1 (a Lean tree).
    pub const LEN: usize = 40;
    /// Encoded length of version 2 (a tree of another kind).
    pub const LEN_KINDS: usize = 80;

    /// Leaves per log file.
    pub fn log_file_leaves(&self) -> u64 {
        1 << self.log_shift
    }

    /// The kind id of a mutable Lean tree's change log (depth and zero 0).
    pub const MUTABLE_LEAN_ID: u8 = 3;
    /// The kind id of a mutable fixed-depth tree's change log (its depth
    /// and zero in the kind's fields).
    pub const MUTABLE_FIXED_ID: u8 = 4;

    /// The encoded length: 40 bytes for a Lean tree, 80 for another kind
    /// or a mutable tree.
    pub fn encoded_len(&self) -> usize {
        match (self.tree.kind, self.mutable) {
            (TreeKind::Lean, None) => Self::LEN,
            _ => Self::LEN_KINDS,
        }
    }

    /// The kind fields written: the tree's, or a mutable tree's shape
    /// under the mutable ids.
    fn kind_fields(&self) -> Option<KindFields> {
        match self.mutable {
            None => self.tree.kind.fields(),
            Some(shape) => Some(match shape.fields() {
                None => KindFields {
                    id: Self::MUTABLE_LEAN_ID,
                    depth: 0,
                    zero: [0; 32],
                },
                Some(fields) => KindFields {
                    id: Self::MUTABLE_FIXED_ID,
                    ..fields
                },
            }),
        }
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut b = [0u8; Self::LEN_KINDS];
        let version = if self.encoded_len() == Self::LEN {
            VERSION
        } else {
            META_VERSION_KINDS
        };
        put::<0, 8, { Self::LEN_KINDS }>(&mut b, *META_MAGIC);
        put_u32::<8, { Self::LEN_KINDS }>(&mut b, version);
        b[12] = self.tree.arity.byte();
        b[13] = self.tree.hash.id();
        b[14] = depth_byte(self.tree.max_depth.unwrap_or(0));
        b[15] = self.log_shift;
        put_u64::<16, { Self::LEN_KINDS }>(&mut b, self.store_id);
        put_u64::<24, { Self::LEN_KINDS }>(&mut b, self.flags);
        // The kind's fields (none for a Lean tree) by the core's codec.
        assert!(
            self.mutable.is_none() || self.tree.kind == TreeKind::Lean,
            "a mutable tree's change log is a Lean tree of words"
        );
        match self.kind_fields() {
            Some(fields) => {
                b[32] = fields.id;
                b[33] = fields.depth;
                put::<40, 32, { Self::LEN_KINDS }>(&mut b, fields.zero);
                put_crc::<72, { Self::LEN_KINDS }>(&mut b);
            }
            None => put_crc::<32, { Self::LEN_KINDS }>(&mut b),
        }
        b.into_iter().take(self.encoded_len()).collect()
    }

    /// The length of the meta whose first 40 bytes are `b`: what to read.
    pub(crate) fn len_of(b: &[u8]) -> usize {
        match b.first_chunk::<12>() {
            Some(head) if u32_at::<8, 12>(head) == META_VERSION_KINDS => Self::LEN_KINDS,
            _ => Self::LEN,
        }
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<StoreMeta, Malformed> {
        let want = StoreMeta::len_of(bytes);
        let short = || Malformed::Field(format!("{} bytes, want {want}", bytes.len()));
        let b: &[u8; Self::LEN] = bytes.first_chunk().ok_or_else(short)?;
        if array::<0, 8, { Self::LEN }>(b) != *META_MAGIC {
            return Err(Malformed::Magic);
        }
        let mut mutable = None;
        let kind = match u32_at::<8, { Self::LEN }>(b) {
            VERSION => {
                if !crc_holds::<32, { Self::LEN }>(b) {
                    return Err(Malformed::Crc);
                }
                TreeKind::Lean
            }
            META_VERSION_KINDS => {
                let b: &[u8; Self::LEN_KINDS] = bytes.first_chunk().ok_or_else(short)?;
                if !crc_holds::<72, { Self::LEN_KINDS }>(b) {
                    return Err(Malformed::Crc);
                }
                if !zero::<34, 40, { Self::LEN_KINDS }>(b)
                    || !zero::<76, 80, { Self::LEN_KINDS }>(b)
                {
                    return Err(Malformed::Field("reserved bytes are not zero".to_owned()));
                }
                let mut fields = KindFields {
                    id: b[32],
                    depth: b[33],
                    zero: array::<40, 32, { Self::LEN_KINDS }>(b),
                };
                let shape = |fields: &KindFields| {
                    TreeKind::from_fields(fields)
                        .map_err(|e| Malformed::Field(format!("mutable tree: {e}")))
                };
                match fields.id {
                    Self::MUTABLE_LEAN_ID => {
                        if fields.depth != 0 || fields.zero != [0; 32] {
                            return Err(Malformed::Field(format!(
                                "a mutable Lean tree's depth byte and zero are 0, got depth {}",
                                fields.depth
                            )));
                        }
                        mutable = Some(TreeKind::Lean);
                        TreeKind::Lean
                    }
                    Self::MUTABLE_FIXED_ID => {
                        fields.id = TreeKind::FIXED_ID;
                        mutable = Some(shape(&fields)?);
                        TreeKind::Lean
                    }
                    _ => TreeKind::from_fields(&fields)
                        .map_err(|e| Malformed::Field(format!("tree: {e}")))?,
                }
            }
            other => return Err(Malformed::Version(other)),
        };
        let arity =
            Arity::new(u64::from(b[12])).map_err(|e| Malformed::Field(format!("arity: {e}")))?;
        let hash = HashKind::from_id(b[13])
            .ok_or_else(|| Malformed::Field(format!("unknown hash id {}", b[13])))?;
        let mut tree = TreeConfig::new(arity, hash).with_kind(kind);
        if b[14] != 0 {
            tree = tree.with_max_depth(u32::from(b[14]));
        }
        tree.check()
            .map_err(|e| Malformed::Field(format!("tree: {e}")))?;
        if !(10..=30).contains(&b[15]) {
            return Err(Malformed::Field(format!(
                "log2 leaves per log file {}, want 10..=30",
                b[15]
            )));
        }
        Ok(StoreMeta {
            tree,
            log_shift: b[15],
            store_id: u64_at::<16, { Self::LEN }>(b),
            flags: u64_at::<24, { Self::LEN }>(b),
            mutable,
        })
    }
}

/// A tree depth as the one byte `cairn.meta` holds: depths are 0 (none)
/// or 1..=64 (`TreeKind::check` refuses others before a store exists).
fn depth_byte(depth: u32) -> u8 {
    u8::try_from(depth).expect("a checked depth is at most 64")
}

/// The header of the file of `level`.
pub(crate) fn level_header(meta: &StoreMeta, level: u32) -> HeaderPage {
    let mut b = [0u8; to_usize(HEADER_LEN)];
    put::<0, 8, { to_usize(HEADER_LEN) }>(&mut b, *LEVEL_MAGIC);
    put_u32::<8, { to_usize(HEADER_LEN) }>(&mut b, VERSION);
    b[12] = meta.tree.arity.byte();
    b[13] = meta.tree.hash.id();
    put::<14, 2, { to_usize(HEADER_LEN) }>(
        &mut b,
        u16::try_from(level)
            .expect("a level number below MAX_LEVELS")
            .to_le_bytes(),
    );
    put_u64::<16, { to_usize(HEADER_LEN) }>(&mut b, meta.store_id);
    put_crc::<24, { to_usize(HEADER_LEN) }>(&mut b);
    b
}

/// Checks a level file header.
pub(crate) fn check_level_header(
    meta: &StoreMeta,
    level: u32,
    b: &HeaderPage,
) -> Result<(), Malformed> {
    if array::<0, 8, { to_usize(HEADER_LEN) }>(b) != *LEVEL_MAGIC {
        return Err(Malformed::Magic);
    }
    let version = u32_at::<8, { to_usize(HEADER_LEN) }>(b);
    if version != VERSION {
        return Err(Malformed::Version(version));
    }
    if !crc_holds::<24, { to_usize(HEADER_LEN) }>(b) {
        return Err(Malformed::Crc);
    }
    let want = level_header(meta, level);
    if array::<0, 28, { to_usize(HEADER_LEN) }>(b)
        != array::<0, 28, { to_usize(HEADER_LEN) }>(&want)
    {
        return Err(Malformed::Field(format!(
            "header is for store {:#x} level {}, want store {:#x} level {level}",
            u64_at::<16, { to_usize(HEADER_LEN) }>(b),
            u16_at::<14, { to_usize(HEADER_LEN) }>(b),
            meta.store_id
        )));
    }
    Ok(())
}

/// `levels/level-NN.nodes`
pub(crate) fn level_name(level: u32) -> String {
    format!("level-{level:02}.nodes")
}

/// The level of a level file name.
pub(crate) fn parse_level_name(name: &str) -> Option<u32> {
    let digits = name.strip_prefix("level-")?.strip_suffix(".nodes")?;
    (digits.len() == 2 && digits.bytes().all(|c| c.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
        .filter(|&level| (1..level_number(MAX_LEVELS)).contains(&level))
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used)]
mod tests {
    use super::*;

    fn meta() -> StoreMeta {
        StoreMeta {
            tree: TreeConfig::new(Arity::new(4).unwrap(), HashKind::Blake3).with_max_depth(20),
            log_shift: 12,
            store_id: 0xfeed_beef,
            flags: 0,
            mutable: None,
        }
    }

    fn meta_of(store_id: u64) -> StoreMeta {
        StoreMeta { store_id, ..meta() }
    }

    #[test]
    fn a_mutable_trees_meta_round_trips_and_a_reader_without_mutable_trees_refuses_it() {
        for shape in [
            TreeKind::Lean,
            TreeKind::Fixed {
                depth: 20,
                zero: [0x02; 32],
            },
        ] {
            let m = StoreMeta {
                mutable: Some(shape),
                ..meta()
            };
            let bytes = m.encode();
            assert_eq!(bytes.len(), StoreMeta::LEN_KINDS);
            assert_eq!(StoreMeta::decode(&bytes), Ok(m));
            for bit in 0..72 * 8 {
                let mut bad = bytes.clone();
                bad[bit / 8] ^= 1 << (bit % 8);
                assert_ne!(StoreMeta::decode(&bad), Ok(m), "meta bit {bit}");
            }
            // What a build without mutable trees reads: the kind codec of
            // the core, which knows no id above the indexed one.
            let fields = KindFields {
                id: bytes[32],
                depth: bytes[33],
                zero: bytes[40..72].try_into().unwrap(),
            };
            assert!(matches!(
                TreeKind::from_fields(&fields),
                Err(cairn_core::KindCodeError::UnknownId { .. })
            ));
        }
    }

    #[test]
    fn metas_round_trip_and_every_bit_flip_is_caught() {
        let m = meta();
        let bytes = m.encode();
        assert_eq!(bytes.len(), StoreMeta::LEN);
        assert_eq!(StoreMeta::decode(&bytes), Ok(m));
        for bit in 0..32 * 8 {
            let mut bad = bytes.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(StoreMeta::decode(&bad).is_err(), "meta bit {bit}");
        }
        // A fixed-depth tree's meta is version 2, 80 bytes, every bit of
        // its first 80 covered.
        let fixed = StoreMeta {
            tree: TreeConfig::new(Arity::new(5).unwrap(), HashKind::Poseidon).with_kind(
                TreeKind::Fixed {
                    depth: 20,
                    zero: [0x01; 32],
                },
            ),
            ..meta()
        };
        let bytes = fixed.encode();
        assert_eq!(bytes.len(), StoreMeta::LEN_KINDS);
        assert_eq!(
            u32::from_le_bytes(bytes[8..12].try_into().unwrap()),
            META_VERSION_KINDS
        );
        assert_eq!((bytes[32], bytes[33]), (1, 20));
        assert_eq!(
            StoreMeta::len_of(&bytes[..StoreMeta::LEN]),
            StoreMeta::LEN_KINDS
        );
        assert_eq!(StoreMeta::decode(&bytes), Ok(fixed));
        for bit in 0..StoreMeta::LEN_KINDS * 8 {
            let mut bad = bytes.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(StoreMeta::decode(&bad).is_err(), "fixed meta bit {bit}");
        }
        assert!(StoreMeta::decode(&bytes[..StoreMeta::LEN]).is_err());
        // An indexed tree's meta: version 2, kind 2, no depth or zero; one
        // under a valid CRC but with a depth or zero is corruption.
        let indexed = StoreMeta {
            tree: TreeConfig::new(Arity::new(4).unwrap(), HashKind::Blake3)
                .with_kind(TreeKind::Indexed)
                .with_max_depth(30),
            ..meta()
        };
        let indexed_bytes = indexed.encode();
        assert_eq!(indexed_bytes.len(), StoreMeta::LEN_KINDS);
        assert_eq!((indexed_bytes[32], indexed_bytes[33]), (2, 0));
        assert_eq!(StoreMeta::decode(&indexed_bytes), Ok(indexed));
        for at in [33, 40, 71] {
            let mut bad = indexed_bytes.clone();
            bad[at] = 1;
            let crc = crc32c::crc32c(&bad[..72]);
            bad[72..76].copy_from_slice(&crc.to_le_bytes());
            assert!(StoreMeta::decode(&bad).is_err(), "indexed meta byte {at}");
        }
        // A depth or zero value that is no tree is corruption, even under a valid CRC.
        let mut bad = bytes.clone();
        bad[33] = 0;
        let crc = crc32c::crc32c(&bad[..72]);
        bad[72..76].copy_from_slice(&crc.to_le_bytes());
        assert!(StoreMeta::decode(&bad).is_err());
        let m = meta();
        let lh = level_header(&m, 2);
        assert_eq!(check_level_header(&m, 2, &lh), Ok(()));
        assert!(check_level_header(&m, 3, &lh).is_err());
        assert!(check_level_header(&meta_of(7), 2, &lh).is_err());
    }

    #[test]
    fn names_parse_strictly() {
        assert_eq!(parse_level_name(&level_name(7)), Some(7));
        assert_eq!(parse_level_name("level-00.nodes"), None);
        assert_eq!(parse_level_name("level-7.nodes"), None);
        assert_eq!(parse_log_name(&log_name(42)), Some(42));
    }
}
