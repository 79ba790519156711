//! Byte layouts of every file (see docs/file-format.md, which this module
//! implements; a change to one is a change to the other).

use cairn_core::cast::{level_number, to_usize};
use cairn_core::kind::KindFields;
use cairn_core::{Arity, Hash, HashKind, TreeConfig, TreeKind};

/// The format version written in every file (`cairn.meta` of a tree of
/// another kind than Lean is [`META_VERSION_KINDS`]).
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
pub(crate) const LOG_MAGIC: &[u8; 8] = b"CAIRNLOG";
pub(crate) const LEVEL_MAGIC: &[u8; 8] = b"CAIRNLVL";
pub(crate) const CHECKPOINT_MAGIC: &[u8; 8] = b"CAIRNCKP";
pub(crate) const HEADS_MAGIC: &[u8; 8] = b"CAIRNHDS";
/// The checkpoint's own version: 2 added finality, the rollback epoch and
/// the count of block-tagged heads. Version 1 checkpoints are still read.
pub const CHECKPOINT_VERSION: u32 = 2;
/// Bytes of the checkpoint's fixed part (version 2).
const CHECKPOINT_FIXED: usize = 96;
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
// Fixed records hold their fields and CRC: meta (CRC at 32..36), the
// heads header (CRC at 24..28) and a head record (CRC at 96..100).
const _: () = assert!(StoreMeta::LEN >= 36 && HEADS_HEADER_LEN >= 28 && HEAD_RECORD_LEN >= 100);
// A checkpoint names at most 65 levels (depth 64 at arity 2 for 2^64
// leaves): level files are numbered 1..=64 with two digits.
const _: () = assert!(CheckpointMeta::MAX_LEN == CHECKPOINT_FIXED + 4 + 40 * MAX_LEVELS);
/// Bytes of one node (a leaf in the log, a node in a level file).
const NODE_LEN: u64 = size_of::<Hash>() as u64;
/// The most levels a checkpoint records.
const MAX_LEVELS: usize = 65;

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

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
            Malformed::Version(v) => write!(f, "format version {v}, want {VERSION}"),
            Malformed::Crc => write!(f, "CRC mismatch"),
            Malformed::Field(what) => write!(f, "{what}"),
        }
    }
}

fn check_magic_version(bytes: &[u8], magic: &[u8; 8]) -> Result<(), Malformed> {
    if &bytes[..8] != magic {
        return Err(Malformed::Magic);
    }
    match u32_at(bytes, 8) {
        VERSION => Ok(()),
        other => Err(Malformed::Version(other)),
    }
}

fn check_crc(bytes: &[u8], body: usize) -> Result<(), Malformed> {
    if crc32c::crc32c(&bytes[..body]) == u32_at(bytes, body) {
        Ok(())
    } else {
        Err(Malformed::Crc)
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

    /// The encoded length: 40 bytes for a Lean tree, 80 for another kind.
    pub fn encoded_len(&self) -> usize {
        match self.tree.kind {
            TreeKind::Lean => Self::LEN,
            _ => Self::LEN_KINDS,
        }
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; self.encoded_len()];
        let version = if b.len() == Self::LEN {
            VERSION
        } else {
            META_VERSION_KINDS
        };
        b[..8].copy_from_slice(META_MAGIC);
        b[8..12].copy_from_slice(&version.to_le_bytes());
        b[12] = self.tree.arity.byte();
        b[13] = self.tree.hash.id();
        b[14] = depth_byte(self.tree.max_depth.unwrap_or(0));
        b[15] = self.log_shift;
        b[16..24].copy_from_slice(&self.store_id.to_le_bytes());
        b[24..32].copy_from_slice(&self.flags.to_le_bytes());
        // The kind's fields (none for a Lean tree) by the core's codec.
        let body = match self.tree.kind.fields() {
            Some(fields) => {
                b[32] = fields.id;
                b[33] = fields.depth;
                b[40..72].copy_from_slice(&fields.zero);
                72
            }
            None => 32,
        };
        let crc = crc32c::crc32c(&b[..body]);
        b[body..body + 4].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// The length of the meta whose first 40 bytes are `b`: what to read.
    pub(crate) fn len_of(b: &[u8]) -> usize {
        if b.len() >= 12 && u32_at(b, 8) == META_VERSION_KINDS {
            Self::LEN_KINDS
        } else {
            Self::LEN
        }
    }

    pub(crate) fn decode(b: &[u8]) -> Result<StoreMeta, Malformed> {
        let want = StoreMeta::len_of(b);
        if b.len() < want {
            return Err(Malformed::Field(format!("{} bytes, want {want}", b.len())));
        }
        if &b[..8] != META_MAGIC {
            return Err(Malformed::Magic);
        }
        let kind = match u32_at(b, 8) {
            VERSION => {
                check_crc(b, 32)?;
                TreeKind::Lean
            }
            META_VERSION_KINDS => {
                check_crc(b, 72)?;
                if b[34..40].iter().chain(&b[76..80]).any(|&x| x != 0) {
                    return Err(Malformed::Field("reserved bytes are not zero".to_owned()));
                }
                let fields = KindFields {
                    id: b[32],
                    depth: b[33],
                    zero: b[40..72].try_into().expect("32 bytes"),
                };
                TreeKind::from_fields(&fields)
                    .map_err(|e| Malformed::Field(format!("tree: {e}")))?
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
            store_id: u64_at(b, 16),
            flags: u64_at(b, 24),
        })
    }
}

/// The header of log file `file`.
pub(crate) fn log_header(meta: &StoreMeta, file: u64) -> Vec<u8> {
    let mut b = vec![0u8; to_usize(HEADER_LEN)];
    b[..8].copy_from_slice(LOG_MAGIC);
    b[8..12].copy_from_slice(&VERSION.to_le_bytes());
    b[12] = meta.tree.arity.byte();
    b[13] = meta.tree.hash.id();
    b[16..24].copy_from_slice(&meta.store_id.to_le_bytes());
    b[24..32].copy_from_slice(&file.to_le_bytes());
    b[32..40].copy_from_slice(&(file << meta.log_shift).to_le_bytes());
    b[40..48].copy_from_slice(&meta.log_file_leaves().to_le_bytes());
    let crc = crc32c::crc32c(&b[..48]);
    b[48..52].copy_from_slice(&crc.to_le_bytes());
    b
}

/// Checks a log file header against the store and the file's number.
pub(crate) fn check_log_header(meta: &StoreMeta, file: u64, b: &[u8]) -> Result<(), Malformed> {
    check_magic_version(b, LOG_MAGIC)?;
    check_crc(b, 48)?;
    let want = log_header(meta, file);
    if b[..52] != want[..52] {
        return Err(Malformed::Field(format!(
            "header is for store {:#x} file {} with {} leaves per file, want store {:#x} file {file} with {}",
            u64_at(b, 16),
            u64_at(b, 24),
            u64_at(b, 40),
            meta.store_id,
            meta.log_file_leaves()
        )));
    }
    Ok(())
}

/// A tree depth as the one byte `cairn.meta` holds: depths are 0 (none)
/// or 1..=64 (`TreeKind::check` refuses others before a store exists).
fn depth_byte(depth: u32) -> u8 {
    u8::try_from(depth).expect("a checked depth is at most 64")
}

/// The header of the file of `level`.
pub(crate) fn level_header(meta: &StoreMeta, level: u32) -> Vec<u8> {
    let mut b = vec![0u8; to_usize(HEADER_LEN)];
    b[..8].copy_from_slice(LEVEL_MAGIC);
    b[8..12].copy_from_slice(&VERSION.to_le_bytes());
    b[12] = meta.tree.arity.byte();
    b[13] = meta.tree.hash.id();
    b[14..16].copy_from_slice(
        &u16::try_from(level)
            .expect("a level number below MAX_LEVELS")
            .to_le_bytes(),
    );
    b[16..24].copy_from_slice(&meta.store_id.to_le_bytes());
    let crc = crc32c::crc32c(&b[..24]);
    b[24..28].copy_from_slice(&crc.to_le_bytes());
    b
}

/// Checks a level file header.
pub(crate) fn check_level_header(meta: &StoreMeta, level: u32, b: &[u8]) -> Result<(), Malformed> {
    check_magic_version(b, LEVEL_MAGIC)?;
    check_crc(b, 24)?;
    if b[..28] != level_header(meta, level)[..28] {
        return Err(Malformed::Field(format!(
            "header is for store {:#x} level {}, want store {:#x} level {level}",
            u64_at(b, 16),
            u16::from_le_bytes([b[14], b[15]]),
            meta.store_id
        )));
    }
    Ok(())
}

/// One frame: the record of one group commit in one log file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Frame {
    pub seq: u64,
    pub end: u64,
    pub count: u32,
    pub leaves_crc: u32,
}

impl Frame {
    pub fn start(&self) -> u64 {
        self.end - u64::from(self.count)
    }

    pub fn encode(&self) -> [u8; to_usize(FRAME_LEN)] {
        let mut b = [0u8; to_usize(FRAME_LEN)];
        b[..8].copy_from_slice(&self.seq.to_le_bytes());
        b[8..16].copy_from_slice(&self.end.to_le_bytes());
        b[16..20].copy_from_slice(&self.count.to_le_bytes());
        b[20..24].copy_from_slice(&self.leaves_crc.to_le_bytes());
        let crc = crc32c::crc32c(&b[..28]);
        b[28..32].copy_from_slice(&crc.to_le_bytes());
        b
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
            && self.end <= first_of_file + per_file
            && (position.slot > 0 || self.start() == first_of_file)
    }

    /// A frame whose own CRC holds (its leaves are checked separately).
    pub fn decode(b: &[u8]) -> Option<Frame> {
        if crc32c::crc32c(&b[..28]) != u32_at(b, 28) {
            return None;
        }
        let frame = Frame {
            seq: u64_at(b, 0),
            end: u64_at(b, 8),
            count: u32_at(b, 16),
            leaves_crc: u32_at(b, 20),
        };
        (frame.count > 0 && frame.seq > 0 && frame.end >= u64::from(frame.count)).then_some(frame)
    }
}

/// A published checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointMeta {
    /// 1, 2, ...
    pub number: u64,
    /// Leaves covered.
    pub size: u64,
    /// Where the log continues: file, slot and sequence number of the first
    /// frame after the checkpoint.
    pub resume: LogPosition,
    /// Per level: (final nodes stored, the level's last node).
    pub levels: Vec<(u64, Hash)>,
    /// Leaves below which a rollback is refused (at most `size`).
    pub finalized: u64,
    /// Rollbacks published so far: head records of an older epoch past
    /// `heads` are leftovers of a rollback.
    pub epoch: u64,
    /// Block-tagged head records valid at this checkpoint (all at sizes
    /// at most `size`).
    pub heads: u64,
    /// The lowest size rolled back to since the layer above last cleared
    /// it ([`crate::RollbackFloor::clear`]), `u64::MAX` for none:
    /// derived files written before (the database's set) hold nothing
    /// valid at or above it.
    pub rollback_floor: u64,
}

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

impl CheckpointMeta {
    pub(crate) fn encode(&self, store_id: u64) -> Vec<u8> {
        let mut b = Vec::with_capacity(CHECKPOINT_FIXED + 4 + 40 * self.levels.len());
        b.extend_from_slice(CHECKPOINT_MAGIC);
        b.extend_from_slice(&CHECKPOINT_VERSION.to_le_bytes());
        b.extend_from_slice(&level_number(self.levels.len()).to_le_bytes());
        b.extend_from_slice(&store_id.to_le_bytes());
        b.extend_from_slice(&self.number.to_le_bytes());
        b.extend_from_slice(&self.size.to_le_bytes());
        b.extend_from_slice(&self.resume.file.to_le_bytes());
        b.extend_from_slice(&self.resume.slot.to_le_bytes());
        b.extend_from_slice(&self.resume.seq.to_le_bytes());
        b.extend_from_slice(&self.finalized.to_le_bytes());
        b.extend_from_slice(&self.epoch.to_le_bytes());
        b.extend_from_slice(&self.heads.to_le_bytes());
        b.extend_from_slice(&self.rollback_floor.to_le_bytes());
        debug_assert_eq!(b.len(), CHECKPOINT_FIXED);
        for (final_len, last) in &self.levels {
            b.extend_from_slice(&final_len.to_le_bytes());
            b.extend_from_slice(last);
        }
        let crc = crc32c::crc32c(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        b
    }

    /// The longest valid encoding ([`MAX_LEVELS`] levels).
    pub(crate) const MAX_LEN: usize = CHECKPOINT_FIXED + 4 + 40 * MAX_LEVELS;

    pub(crate) fn decode(b: &[u8], store_id: u64) -> Result<CheckpointMeta, Malformed> {
        if b.len() < 68 {
            return Err(Malformed::Field(format!(
                "{} bytes, want at least 68",
                b.len()
            )));
        }
        if &b[..8] != CHECKPOINT_MAGIC {
            return Err(Malformed::Magic);
        }
        // Version 1 had no finality, epoch or heads (its fixed part ends at 64).
        let fixed = match u32_at(b, 8) {
            1 => 64,
            CHECKPOINT_VERSION => CHECKPOINT_FIXED,
            other => return Err(Malformed::Version(other)),
        };
        let levels = u32_at(b, 12) as usize;
        if levels > MAX_LEVELS {
            return Err(Malformed::Field(format!(
                "{levels} levels, want at most {MAX_LEVELS}"
            )));
        }
        let want = fixed + 4 + 40 * levels;
        if b.len() != want {
            return Err(Malformed::Field(format!(
                "{} bytes, want {want} for {levels} levels",
                b.len()
            )));
        }
        check_crc(b, want - 4)?;
        if u64_at(b, 16) != store_id {
            return Err(Malformed::Field(format!(
                "checkpoint of store {:#x}, want {store_id:#x}",
                u64_at(b, 16)
            )));
        }
        let levels = (0..levels)
            .map(|l| {
                let at = fixed + 40 * l;
                (
                    u64_at(b, at),
                    b[at + 8..at + 40].try_into().expect("32 bytes"),
                )
            })
            .collect();
        let size = u64_at(b, 32);
        let (finalized, epoch, heads, rollback_floor) = if fixed == 64 {
            // A version 1 store finalised everything it checkpointed.
            (size, 0, 0, u64::MAX)
        } else {
            (u64_at(b, 64), u64_at(b, 72), u64_at(b, 80), u64_at(b, 88))
        };
        if finalized > size {
            return Err(Malformed::Field(format!(
                "finalized size {finalized} above the checkpoint's size {size}"
            )));
        }
        Ok(CheckpointMeta {
            number: u64_at(b, 24),
            size,
            resume: LogPosition {
                file: u64_at(b, 40),
                slot: u64_at(b, 48),
                seq: u64_at(b, 56),
            },
            levels,
            finalized,
            epoch,
            heads,
            rollback_floor,
        })
    }
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
}

impl HeadRecord {
    pub(crate) fn encode(&self) -> [u8; to_usize(HEAD_RECORD_LEN)] {
        let mut b = [0u8; to_usize(HEAD_RECORD_LEN)];
        b[0..8].copy_from_slice(&self.block.to_le_bytes());
        b[8..16].copy_from_slice(&self.size.to_le_bytes());
        b[16..24].copy_from_slice(&self.epoch.to_le_bytes());
        let flags = u32::from(self.block_hash.is_some()) | (u32::from(self.root.is_some()) << 1);
        b[24..28].copy_from_slice(&flags.to_le_bytes());
        if let Some(hash) = &self.block_hash {
            b[32..64].copy_from_slice(hash);
        }
        if let Some(root) = &self.root {
            b[64..96].copy_from_slice(root);
        }
        let crc = crc32c::crc32c(&b[..96]);
        b[96..100].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// `None` unless `b` is one well-formed record (a torn or zeroed slot
    /// is not) of a tree whose empty tree has a root exactly when
    /// `empty_has_root` (a fixed-depth tree).
    pub(crate) fn decode(b: &[u8], empty_has_root: bool) -> Option<HeadRecord> {
        if b.len() != to_usize(HEAD_RECORD_LEN) || check_crc(b, 96).is_err() {
            return None;
        }
        let flags = u32_at(b, 24);
        if flags > 3 || u32_at(b, 28) != 0 || b[100..].iter().any(|&x| x != 0) {
            return None;
        }
        let block_hash: Hash = b[32..64].try_into().expect("32 bytes");
        let root: Hash = b[64..96].try_into().expect("32 bytes");
        let size = u64_at(b, 8);
        // The empty Lean tree has no root, every other tree has one.
        if (flags & 2 != 0) != (size > 0 || empty_has_root) {
            return None;
        }
        if flags & 1 == 0 && block_hash != [0; 32] || flags & 2 == 0 && root != [0; 32] {
            return None;
        }
        Some(HeadRecord {
            block: u64_at(b, 0),
            block_hash: (flags & 1 != 0).then_some(block_hash),
            size,
            root: (flags & 2 != 0).then_some(root),
            epoch: u64_at(b, 16),
        })
    }
}

/// The heads file's header.
pub(crate) fn heads_header(meta: &StoreMeta) -> [u8; to_usize(HEADS_HEADER_LEN)] {
    let mut b = [0u8; to_usize(HEADS_HEADER_LEN)];
    b[0..8].copy_from_slice(HEADS_MAGIC);
    b[8..12].copy_from_slice(&VERSION.to_le_bytes());
    b[16..24].copy_from_slice(&meta.store_id.to_le_bytes());
    let crc = crc32c::crc32c(&b[..24]);
    b[24..28].copy_from_slice(&crc.to_le_bytes());
    b
}

pub(crate) fn check_heads_header(meta: &StoreMeta, b: &[u8]) -> Result<(), Malformed> {
    if b.len() < to_usize(HEADS_HEADER_LEN) {
        return Err(Malformed::Field(format!(
            "{} bytes, shorter than the {HEADS_HEADER_LEN}-byte header",
            b.len()
        )));
    }
    check_magic_version(b, HEADS_MAGIC)?;
    check_crc(b, 24)?;
    if u64_at(b, 16) != meta.store_id {
        return Err(Malformed::Field(format!(
            "heads of store {:#x}, want {:#x}",
            u64_at(b, 16),
            meta.store_id
        )));
    }
    Ok(())
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
mod tests {
    use super::*;

    fn meta() -> StoreMeta {
        StoreMeta {
            tree: TreeConfig::new(Arity::new(4).unwrap(), HashKind::Blake3).with_max_depth(20),
            log_shift: 12,
            store_id: 0xfeed_beef,
            flags: 0,
        }
    }

    fn meta_of(store_id: u64) -> StoreMeta {
        StoreMeta { store_id, ..meta() }
    }

    #[test]
    fn every_record_round_trips_and_every_bit_flip_is_caught() {
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
        assert_eq!(u32_at(&bytes, 8), META_VERSION_KINDS);
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
        let frame = Frame {
            seq: 7,
            end: 100,
            count: 3,
            leaves_crc: 42,
        };
        let fb = frame.encode();
        assert_eq!(Frame::decode(&fb), Some(frame));
        assert_eq!(frame.start(), 97);
        for bit in 0..256 {
            let mut bad = fb;
            bad[bit / 8] ^= 1 << (bit % 8);
            assert_ne!(Frame::decode(&bad), Some(frame), "frame bit {bit}");
        }
        assert_eq!(Frame::decode(&[0u8; 32]), None, "a zeroed slot is no frame");
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
        let ckpt = CheckpointMeta {
            number: 3,
            size: 1000,
            resume: LogPosition {
                file: 0,
                slot: 5,
                seq: 6,
            },
            levels: vec![(999, [1; 32]), (249, [2; 32]), (62, [3; 32]), (0, [4; 32])],
            finalized: 900,
            epoch: 2,
            heads: 17,
            rollback_floor: 950,
        };
        let cb = ckpt.encode(m.store_id);
        assert_eq!(CheckpointMeta::decode(&cb, m.store_id), Ok(ckpt.clone()));
        assert!(
            CheckpointMeta::decode(&cb, 1).is_err(),
            "another store's checkpoint"
        );
        assert!(CheckpointMeta::decode(&cb[..cb.len() - 1], m.store_id).is_err());
        for bit in 0..cb.len() * 8 {
            let mut bad = cb.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(
                CheckpointMeta::decode(&bad, m.store_id).is_err(),
                "checkpoint bit {bit}"
            );
        }
        // A version 1 checkpoint (no finality, epoch or heads) still reads,
        // as finalized at its size.
        let mut v1 = cb[..64].to_vec();
        v1[8..12].copy_from_slice(&1u32.to_le_bytes());
        v1.extend_from_slice(&cb[CHECKPOINT_FIXED..cb.len() - 4]);
        let crc = crc32c::crc32c(&v1);
        v1.extend_from_slice(&crc.to_le_bytes());
        let read = CheckpointMeta::decode(&v1, m.store_id).unwrap();
        assert_eq!(
            (read.finalized, read.epoch, read.heads, read.rollback_floor),
            (1000, 0, 0, u64::MAX)
        );
        assert_eq!(read.levels, ckpt.levels);
        let record = HeadRecord {
            block: 19,
            block_hash: Some([7; 32]),
            size: 1000,
            root: Some([8; 32]),
            epoch: 2,
        };
        let rb = record.encode();
        assert_eq!(HeadRecord::decode(&rb, false), Some(record));
        for bit in 0..rb.len() * 8 {
            let mut bad = rb;
            bad[bit / 8] ^= 1 << (bit % 8);
            assert_ne!(
                HeadRecord::decode(&bad, false),
                Some(record),
                "head record bit {bit}"
            );
        }
        assert_eq!(
            HeadRecord::decode(&[0u8; 128], false),
            None,
            "a zeroed slot is no record"
        );
        let empty = HeadRecord {
            block: 1,
            block_hash: None,
            size: 0,
            root: None,
            epoch: 0,
        };
        assert_eq!(HeadRecord::decode(&empty.encode(), false), Some(empty));
        assert_eq!(HeadRecord::decode(&empty.encode(), true), None);
        // A fixed-depth tree's empty head has a root (its top zero).
        let fixed_empty = HeadRecord {
            root: Some([3; 32]),
            ..empty
        };
        assert_eq!(
            HeadRecord::decode(&fixed_empty.encode(), true),
            Some(fixed_empty)
        );
        assert_eq!(HeadRecord::decode(&fixed_empty.encode(), false), None);
        let hh = heads_header(&m);
        assert_eq!(check_heads_header(&m, &hh), Ok(()));
        assert!(check_heads_header(&meta_of(7), &hh).is_err());
        let header = log_header(&m, 3);
        assert_eq!(check_log_header(&m, 3, &header), Ok(()));
        assert!(check_log_header(&m, 4, &header).is_err());
        let lh = level_header(&m, 2);
        assert_eq!(check_level_header(&m, 2, &lh), Ok(()));
        assert!(check_level_header(&m, 3, &lh).is_err());
    }

    #[test]
    fn names_parse_strictly() {
        assert_eq!(parse_log_name(&log_name(42)), Some(42));
        assert_eq!(parse_log_name("42.log"), None);
        assert_eq!(parse_log_name("00000000004x.log"), None);
        assert_eq!(parse_level_name(&level_name(7)), Some(7));
        assert_eq!(parse_level_name("level-00.nodes"), None);
        assert_eq!(parse_level_name("level-7.nodes"), None);
    }
}
