//! The decoder of the database's own file, `nullifiers.set`, for the fuzz
//! targets in `fuzz/`. Hidden from the docs: this is not an API. It takes
//! the file's bytes and answers what open concludes from them; it must not
//! panic on any input.

use std::path::Path;

use cairn_store::decoders::BytesFile;

use crate::set::file;

/// Bytes of the set file's header.
pub const SET_HEADER_LEN: usize = file::HEADER_LEN;
/// Shards in a set file.
pub const SET_SHARDS: usize = 1 << crate::set::SHARD_BITS;

/// What open keeps of a valid set file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetFile {
    /// Leaves `0..covered` are in the set (after the rollback floor).
    pub covered: u64,
    /// Values the loaded set holds.
    pub values: u64,
}

/// Reads `bytes` as the set file of store `store_id` whose log recovered
/// `size` leaves, with the store's rollback floor `floor`.
pub fn set_file(
    bytes: Vec<u8>,
    store_id: u64,
    size: u64,
    floor: Option<u64>,
) -> Result<SetFile, String> {
    let loaded = file::read_from(
        Some(Box::new(BytesFile(bytes))),
        Path::new("fuzz"),
        store_id,
        size,
        floor,
    )
    .map_err(|e| e.to_string())?
    .expect("a file was given");
    Ok(SetFile {
        covered: loaded.covered,
        values: loaded.set.len(),
    })
}

/// One tree a manifest names: its name and its directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestTree {
    /// The tree's name.
    pub name: String,
    /// Its directory, relative to the database's.
    pub dir: String,
    /// Its family, for a tree added with a capacity (`name` is then the
    /// family's).
    pub family: Option<ManifestFamily>,
}

/// What a manifest says of a tree with a capacity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ManifestFamily {
    /// The member's number (0 for the tree added).
    pub member: u32,
    /// The most leaves a member holds.
    pub capacity: u64,
    /// What a full member does with values that do not fit.
    pub rollover: crate::forest::Rollover,
}

/// Reads `bytes` as `cairn.trees`, as open does.
pub fn forest_manifest(bytes: &[u8]) -> Result<Vec<ManifestTree>, String> {
    crate::forest::manifest::decode(bytes)
        .map(|entries| {
            entries
                .into_iter()
                .map(|e| ManifestTree {
                    name: e.name,
                    dir: e.dir,
                    family: e.family.map(|f| ManifestFamily {
                        member: f.member,
                        capacity: f.capacity,
                        rollover: f.rollover,
                    }),
                })
                .collect()
        })
        .map_err(|e| e.to_string())
}

/// Encodes `trees` as `cairn.trees` (valid tree names only), as the
/// database writes it.
pub fn encode_forest_manifest(trees: &[ManifestTree]) -> Vec<u8> {
    let entries: Vec<crate::forest::manifest::Entry> = trees
        .iter()
        .map(|t| crate::forest::manifest::Entry {
            name: t.name.clone(),
            dir: t.dir.clone(),
            family: t.family.map(|f| crate::forest::manifest::Family {
                member: f.member,
                capacity: f.capacity,
                rollover: f.rollover,
            }),
        })
        .collect();
    crate::forest::manifest::encode(&entries)
}

/// What open reads from `blocks.journal`: the header's fields and the
/// frames a scan accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Journal {
    /// Where the frames begin (the header's length).
    pub frames_start: usize,
    /// Where the accepted frames end.
    pub frames_end: usize,
    /// The header's sequence number of the first frame.
    pub first_seq: u64,
    /// The sequence number of the next frame.
    pub next_seq: u64,
    /// The header's base sizes, one per tree.
    pub base: Vec<u64>,
    /// Frames accepted.
    pub frames: usize,
}

/// Reads `bytes` as `blocks.journal`, header and frames, as open does
/// (before it compares what the journal says with the trees).
pub fn forest_journal(bytes: &[u8]) -> Result<Journal, String> {
    use crate::forest::journal;
    let (header, prev, at) = journal::decode_header(bytes).map_err(|e| e.to_string())?;
    let scanned = journal::scan(bytes, at, header.first_seq, prev).map_err(|e| e.to_string())?;
    // Pair check: every frame accepted encodes back to its bytes.
    let mut chain = prev;
    let mut encoded = Vec::new();
    for (i, record) in scanned.records.iter().enumerate() {
        let (frame, crc) = journal::encode_frame(header.first_seq + i as u64, chain, record);
        encoded.extend_from_slice(&frame);
        chain = crc;
    }
    assert_eq!(
        bytes.get(at..scanned.end),
        Some(encoded.as_slice()),
        "accepted frames are exactly their encoding"
    );
    assert_eq!(
        chain, scanned.prev,
        "the chain ends at the last frame's sum"
    );
    Ok(Journal {
        frames_start: at,
        frames_end: scanned.end,
        first_seq: header.first_seq,
        next_seq: scanned.next_seq,
        base: header.base.clone(),
        frames: scanned.records.len(),
    })
}

/// A retained block of a journal header: its number, the byte its hash
/// repeats, and (tree number, size at its end) pairs.
pub type HeaderBlock = (u64, u8, Vec<(u32, u64)>);

/// The bytes of a journal header: `first_seq`, `base` sizes, no
/// finalized block, `blocks` (number, hash byte, sizes per tree), as the
/// database writes it; and the chain value its first frame follows.
pub fn encode_journal_header(
    first_seq: u64,
    base: &[u64],
    blocks: &[HeaderBlock],
) -> (Vec<u8>, u32) {
    use crate::forest::journal::{BlockSizes, Header, encode_header};
    let header = Header {
        first_seq,
        base: base.to_vec(),
        finalized: None,
        blocks: blocks
            .iter()
            .map(|(number, hash, sizes)| BlockSizes {
                block: crate::forest::BlockId {
                    number: *number,
                    hash: [*hash; 32],
                },
                sizes: sizes.clone(),
            })
            .collect(),
    };
    let bytes = encode_header(&header);
    let crc = crc32c::crc32c(bytes.get(..bytes.len() - 4).unwrap_or_default());
    (bytes, crc)
}

/// A journal frame for the fuzz targets to build inputs from.
#[derive(Clone, Debug)]
pub enum JournalRecord {
    /// Values for trees (number, size before, values), of a block or none.
    Append {
        /// The block (number, hash byte).
        block: Option<(u64, u8)>,
        /// Per tree: its number, its size before, the values.
        parts: Vec<(u32, u64, Vec<[u8; 32]>)>,
    },
    /// A rollback to a block.
    Rollback(u64),
    /// A finalization to a block.
    Finalize(u64),
}

/// The bytes of frame `seq` chained to `prev`, and its sum.
pub fn encode_journal_frame(seq: u64, prev: u32, record: &JournalRecord) -> (Vec<u8>, u32) {
    use crate::forest::journal::{Part, Record, encode_frame};
    let record = match record {
        JournalRecord::Append { block, parts } => Record::Append {
            block: block.map(|(number, hash)| crate::forest::BlockId {
                number,
                hash: [hash; 32],
            }),
            parts: parts
                .iter()
                .map(|(tree, before, values)| Part {
                    tree: *tree,
                    before: *before,
                    values: values.clone(),
                })
                .collect(),
        },
        JournalRecord::Rollback(block) => Record::Rollback { block: *block },
        JournalRecord::Finalize(block) => Record::Finalize { block: *block },
    };
    encode_frame(seq, prev, &record)
}
