//! The block journal `blocks.journal`: the durable record of every write
//! to a database of several trees. A header (what the trees held when it
//! was last rewritten, and the blocks a rollback may still reach) and
//! then one frame per write (a block's values for any number of trees, a
//! rollback, a finalization), each checksummed and chained to the one
//! before, made durable by one `fdatasync`. The trees' own logs catch up
//! later; open replays what they lack (docs/file-format.md, "Block
//! journal").
#![deny(clippy::indexing_slicing, clippy::unwrap_used)]

use cairn_core::Hash;

use crate::forest::ForestError;

/// The journal's file name.
pub const JOURNAL: &str = "blocks.journal";
/// Its temporary while it is rewritten.
pub(crate) const JOURNAL_TMP: &str = "blocks.journal.tmp";
const MAGIC: &[u8; 8] = b"CAIRNJNL";
/// The journal format this build writes and reads.
pub const JOURNAL_VERSION: u32 = 1;
/// Bytes before a header's body: magic, version, body length.
const HEADER_PREFIX: usize = 16;
/// The largest frame body, in bytes (a block of 2^22 values and change).
pub const MAX_FRAME: usize = (1 << 27) + (1 << 20);

const KIND_APPEND: u8 = 1;
const KIND_ROLLBACK: u8 = 2;
const KIND_FINALIZE: u8 = 3;

/// A chain block: its number and hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockId {
    /// The block number.
    pub number: u64,
    /// The block hash.
    pub hash: Hash,
}

/// The sizes a block left: for every tree whose size changed since the
/// block before (the others kept theirs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BlockSizes {
    pub(crate) block: BlockId,
    pub(crate) sizes: Vec<(u32, u64)>,
}

/// What the journal starts from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    /// The sequence number of the first frame after it.
    pub(crate) first_seq: u64,
    /// Per tree number, the size the frames continue from (durable in the
    /// tree when this header was written); a tree past the list starts
    /// from its empty size.
    pub(crate) base: Vec<u64>,
    /// The last finalized block, with every tree's size at it (a tree
    /// past the list: its empty size).
    pub(crate) finalized: Option<(BlockId, Vec<u64>)>,
    /// Every block after the finalized one, oldest first.
    pub(crate) blocks: Vec<BlockSizes>,
}

/// One tree's part of an append frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Part {
    /// The tree's number (its place in the manifest).
    pub(crate) tree: u32,
    /// The tree's size before these values.
    pub(crate) before: u64,
    pub(crate) values: Vec<Hash>,
}

/// One frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Record {
    /// Values for some trees, of a block or of none (a plain append).
    Append {
        block: Option<BlockId>,
        parts: Vec<Part>,
    },
    /// Every tree back to its size at the end of `block`.
    Rollback { block: u64 },
    /// No rollback below the end of `block`, in any tree.
    Finalize { block: u64 },
}

pub(crate) fn encode_header(header: &Header) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&header.first_seq.to_le_bytes());
    put_sizes(&mut body, &header.base);
    match &header.finalized {
        None => body.push(0),
        Some((block, sizes)) => {
            body.push(1);
            put_block(&mut body, block);
            put_sizes(&mut body, sizes);
        }
    }
    put_u32(&mut body, header.blocks.len());
    for block in &header.blocks {
        put_block(&mut body, &block.block);
        put_u32(&mut body, block.sizes.len());
        for (tree, size) in &block.sizes {
            body.extend_from_slice(&tree.to_le_bytes());
            body.extend_from_slice(&size.to_le_bytes());
        }
    }
    let mut out = Vec::with_capacity(HEADER_PREFIX + body.len() + 4);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&JOURNAL_VERSION.to_le_bytes());
    put_u32(&mut out, body.len());
    out.extend_from_slice(&body);
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Decodes the header at the start of `bytes`: the header, its checksum
/// (the chain value of the first frame) and where the frames begin.
pub(crate) fn decode_header(bytes: &[u8]) -> Result<(Header, u32, usize), ForestError> {
    let mut reader = Reader::new(bytes, 0);
    if reader.take(8)? != MAGIC {
        return Err(corrupt(0, "no blocks.journal magic".into()));
    }
    let version = reader.u32()?;
    if version != JOURNAL_VERSION {
        return Err(ForestError::UnsupportedVersion {
            file: JOURNAL,
            version,
            supported: JOURNAL_VERSION,
        });
    }
    let length = reader.u32()? as usize;
    let end = HEADER_PREFIX + length;
    let crc_bytes = bytes.get(end..end + 4).ok_or_else(|| {
        corrupt(
            0,
            format!("a header of {length} bytes in a file of {}", bytes.len()),
        )
    })?;
    let stored = u32::from_le_bytes(
        crc_bytes
            .try_into()
            .map_err(|_| corrupt(end, "short".into()))?,
    );
    let computed = crc32c::crc32c(bytes.get(..end).unwrap_or_default());
    if stored != computed {
        return Err(corrupt(
            end,
            format!("header checksum {stored:#010x}, its bytes sum to {computed:#010x}"),
        ));
    }
    let mut reader = Reader::new(bytes.get(..end).unwrap_or_default(), HEADER_PREFIX);
    let first_seq = reader.u64()?;
    let base = reader.sizes()?;
    let finalized = match reader.byte()? {
        0 => None,
        1 => Some((reader.block()?, reader.sizes()?)),
        other => return Err(corrupt(reader.at, format!("finalized flag {other}"))),
    };
    let count = reader.count(44)?;
    let mut blocks = Vec::with_capacity(count);
    for _ in 0..count {
        let block = reader.block()?;
        let entries = reader.count(12)?;
        let mut sizes = Vec::with_capacity(entries);
        for _ in 0..entries {
            sizes.push((reader.u32()?, reader.u64()?));
        }
        blocks.push(BlockSizes { block, sizes });
    }
    if reader.at != end {
        return Err(corrupt(reader.at, "bytes after the header's blocks".into()));
    }
    let header = Header {
        first_seq,
        base,
        finalized,
        blocks,
    };
    Ok((header, stored, end + 4))
}

/// The bytes of frame `seq` holding `record`, chained to `prev`, and its
/// checksum (the next frame's `prev`).
pub(crate) fn encode_frame(seq: u64, prev: u32, record: &Record) -> (Vec<u8>, u32) {
    let mut body = Vec::new();
    match record {
        Record::Append { block, parts } => {
            body.push(KIND_APPEND);
            body.extend_from_slice(&seq.to_le_bytes());
            match block {
                None => body.push(0),
                Some(block) => {
                    body.push(1);
                    put_block(&mut body, block);
                }
            }
            put_u32(&mut body, parts.len());
            for part in parts {
                body.extend_from_slice(&part.tree.to_le_bytes());
                body.extend_from_slice(&part.before.to_le_bytes());
                put_u32(&mut body, part.values.len());
                body.extend_from_slice(part.values.as_flattened());
            }
        }
        Record::Rollback { block } | Record::Finalize { block } => {
            body.push(if matches!(record, Record::Rollback { .. }) {
                KIND_ROLLBACK
            } else {
                KIND_FINALIZE
            });
            body.extend_from_slice(&seq.to_le_bytes());
            body.extend_from_slice(&block.to_le_bytes());
        }
    }
    let mut out = Vec::with_capacity(body.len() + 12);
    put_u32(&mut out, body.len());
    out.extend_from_slice(&body);
    out.extend_from_slice(&prev.to_le_bytes());
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    // Pair assertion with the scan.
    debug_assert!(matches!(
        decode_frame(&out, 0, seq, Some(prev)),
        Ok(Some((ref decoded, _, _))) if decoded == record
    ));
    (out, crc)
}

/// What a scan of the frames found.
#[derive(Debug)]
pub(crate) struct Scanned {
    pub(crate) records: Vec<Record>,
    /// Where the valid frames end (the next frame goes there).
    pub(crate) end: usize,
    /// The chain value after the last valid frame.
    pub(crate) prev: u32,
    /// The sequence number of the next frame.
    pub(crate) next_seq: u64,
}

/// Reads the frames from `at`. A frame that does not check is the torn
/// tail of a write a crash interrupted (every frame is synced before the
/// next is written) unless a valid frame follows it: then it is a
/// corruption of acknowledged data, and refused.
pub(crate) fn scan(
    bytes: &[u8],
    at: usize,
    first_seq: u64,
    prev: u32,
) -> Result<Scanned, ForestError> {
    let mut scanned = Scanned {
        records: Vec::new(),
        end: at,
        prev,
        next_seq: first_seq,
    };
    loop {
        match decode_frame(bytes, scanned.end, scanned.next_seq, Some(scanned.prev)) {
            Ok(Some((record, next, crc))) => {
                scanned.records.push(record);
                scanned.end = next;
                scanned.prev = crc;
                scanned.next_seq += 1;
            }
            Ok(None) => return Ok(scanned),
            Err(error) => {
                // A torn tail only if no valid frame follows.
                if frame_follows(bytes, scanned.end + 1, scanned.next_seq + 1) {
                    return Err(error);
                }
                return Ok(scanned);
            }
        }
    }
}

/// Whether a frame numbered `seq` whose own checksum holds starts
/// anywhere at or after `from` (its chain value is not checked: the frame
/// before it is the one that failed): the search for acknowledged frames
/// past a frame that does not check, whose length field cannot be trusted
/// to say where the next one starts.
fn frame_follows(bytes: &[u8], from: usize, seq: u64) -> bool {
    let want = seq.to_le_bytes();
    (from..bytes.len().saturating_sub(12)).any(|at| {
        bytes.get(at + 5..at + 13) == Some(&want[..])
            && matches!(decode_frame(bytes, at, seq, None), Ok(Some(_)))
    })
}

/// The frame at `at`: `None` at the clean end (no bytes, or only zeros
/// from a preallocated or torn tail), the record, where the next begins
/// and its checksum, or why it does not check.
fn decode_frame(
    bytes: &[u8],
    at: usize,
    seq: u64,
    prev: Option<u32>,
) -> Result<Option<(Record, usize, u32)>, ForestError> {
    let rest = bytes.get(at..).unwrap_or_default();
    if rest.iter().all(|&b| b == 0) {
        return Ok(None);
    }
    let mut reader = Reader::new(bytes, at);
    let length = reader.u32()? as usize;
    if length > MAX_FRAME {
        return Err(corrupt(
            at,
            format!("a frame of {length} bytes, at most {MAX_FRAME}"),
        ));
    }
    let body_start = reader.at;
    reader.take(length)?;
    let chained = reader.u32()?;
    let stored = reader.u32()?;
    let computed = crc32c::crc32c(bytes.get(at..body_start + length + 4).unwrap_or_default());
    if stored != computed {
        return Err(corrupt(
            at,
            format!("frame {seq}: checksum {stored:#010x}, its bytes sum to {computed:#010x}"),
        ));
    }
    if let Some(prev) = prev
        && chained != prev
    {
        return Err(corrupt(
            at,
            format!("frame {seq} follows a frame summing to {chained:#010x}, not {prev:#010x}"),
        ));
    }
    let next = reader.at;
    let mut body = Reader::new(
        bytes.get(..body_start + length).unwrap_or_default(),
        body_start,
    );
    let kind = body.byte()?;
    let found = body.u64()?;
    if found != seq {
        return Err(corrupt(
            at,
            format!("frame numbered {found}, {seq} expected"),
        ));
    }
    let record = match kind {
        KIND_APPEND => {
            let block = match body.byte()? {
                0 => None,
                1 => Some(body.block()?),
                other => return Err(corrupt(at, format!("block flag {other}"))),
            };
            let count = body.count(16)?;
            let mut parts = Vec::with_capacity(count);
            for _ in 0..count {
                let tree = body.u32()?;
                let before = body.u64()?;
                let values = body.count(32)?;
                let mut read = Vec::with_capacity(values);
                for _ in 0..values {
                    read.push(body.hash()?);
                }
                parts.push(Part {
                    tree,
                    before,
                    values: read,
                });
            }
            Record::Append { block, parts }
        }
        KIND_ROLLBACK => Record::Rollback { block: body.u64()? },
        KIND_FINALIZE => Record::Finalize { block: body.u64()? },
        other => return Err(corrupt(at, format!("frame kind {other}"))),
    };
    if body.at != body_start + length {
        return Err(corrupt(at, format!("frame {seq}: bytes after its record")));
    }
    Ok(Some((record, next, stored)))
}

fn corrupt(offset: usize, what: String) -> ForestError {
    ForestError::CorruptJournal {
        offset: offset as u64,
        what,
    }
}

fn put_u32(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(
        &u32::try_from(n)
            .expect("counts fit in 32 bits")
            .to_le_bytes(),
    );
}

fn put_block(out: &mut Vec<u8>, block: &BlockId) {
    out.extend_from_slice(&block.number.to_le_bytes());
    out.extend_from_slice(&block.hash);
}

fn put_sizes(out: &mut Vec<u8>, sizes: &[u64]) {
    put_u32(out, sizes.len());
    for size in sizes {
        out.extend_from_slice(&size.to_le_bytes());
    }
}

/// A cursor that refuses to read past its end, and counts that cannot
/// claim more bytes than remain.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8], at: usize) -> Reader<'a> {
        Reader { bytes, at }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], ForestError> {
        let out = self
            .at
            .checked_add(n)
            .and_then(|end| self.bytes.get(self.at..end))
            .ok_or_else(|| corrupt(self.at, format!("ends inside a field of {n} bytes")))?;
        self.at += n;
        Ok(out)
    }

    fn byte(&mut self) -> Result<u8, ForestError> {
        Ok(self.take(1)?.first().copied().unwrap_or(0))
    }

    fn u32(&mut self) -> Result<u32, ForestError> {
        let at = self.at;
        Ok(u32::from_le_bytes(
            self.take(4)?
                .try_into()
                .map_err(|_| corrupt(at, "short".into()))?,
        ))
    }

    fn u64(&mut self) -> Result<u64, ForestError> {
        let at = self.at;
        Ok(u64::from_le_bytes(
            self.take(8)?
                .try_into()
                .map_err(|_| corrupt(at, "short".into()))?,
        ))
    }

    fn hash(&mut self) -> Result<Hash, ForestError> {
        let at = self.at;
        self.take(32)?
            .try_into()
            .map_err(|_| corrupt(at, "short".into()))
    }

    fn block(&mut self) -> Result<BlockId, ForestError> {
        Ok(BlockId {
            number: self.u64()?,
            hash: self.hash()?,
        })
    }

    /// A count of items of at least `item_bytes` each.
    fn count(&mut self, item_bytes: usize) -> Result<usize, ForestError> {
        let at = self.at;
        let count = self.u32()? as usize;
        let left = self.bytes.len().saturating_sub(self.at);
        if count.saturating_mul(item_bytes) > left {
            return Err(corrupt(
                at,
                format!("{count} items of {item_bytes} bytes in the {left} bytes left"),
            ));
        }
        Ok(count)
    }

    fn sizes(&mut self) -> Result<Vec<u64>, ForestError> {
        let count = self.count(8)?;
        (0..count).map(|_| self.u64()).collect()
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header {
            first_seq: 7,
            base: vec![3, 0, 1],
            finalized: Some((
                BlockId {
                    number: 4,
                    hash: [4; 32],
                },
                vec![2, 0, 1],
            )),
            blocks: vec![BlockSizes {
                block: BlockId {
                    number: 5,
                    hash: [5; 32],
                },
                sizes: vec![(0, 3)],
            }],
        }
    }

    fn records() -> Vec<Record> {
        vec![
            Record::Append {
                block: Some(BlockId {
                    number: 6,
                    hash: [6; 32],
                }),
                parts: vec![
                    Part {
                        tree: 0,
                        before: 3,
                        values: vec![[1; 32], [2; 32]],
                    },
                    Part {
                        tree: 2,
                        before: 1,
                        values: vec![],
                    },
                ],
            },
            Record::Rollback { block: 5 },
            Record::Append {
                block: None,
                parts: vec![Part {
                    tree: 1,
                    before: 0,
                    values: vec![[9; 32]],
                }],
            },
            Record::Finalize { block: 5 },
        ]
    }

    fn journal() -> Vec<u8> {
        let mut bytes = encode_header(&header());
        let mut prev = crc32c::crc32c(&bytes[..bytes.len() - 4]);
        for (i, record) in records().iter().enumerate() {
            let (frame, crc) = encode_frame(7 + i as u64, prev, record);
            bytes.extend_from_slice(&frame);
            prev = crc;
        }
        bytes
    }

    #[test]
    fn a_journal_scans_to_what_was_written() {
        let bytes = journal();
        let (decoded, prev, at) = decode_header(&bytes).unwrap();
        assert_eq!(decoded, header());
        let scanned = scan(&bytes, at, decoded.first_seq, prev).unwrap();
        assert_eq!(scanned.records, records());
        assert_eq!(scanned.end, bytes.len());
        assert_eq!(scanned.next_seq, 11);
    }

    #[test]
    fn a_torn_last_frame_is_dropped_and_every_earlier_one_kept() {
        let bytes = journal();
        let (decoded, prev, at) = decode_header(&bytes).unwrap();
        let full = scan(&bytes, at, 7, prev).unwrap();
        let last_start = {
            let three = scan(&bytes[..full.end - 21], at, 7, prev).unwrap();
            assert_eq!(three.records.len(), 3);
            three.end
        };
        for cut in last_start..bytes.len() {
            let scanned = scan(&bytes[..cut], at, decoded.first_seq, prev).unwrap();
            assert_eq!(scanned.records, records()[..3], "cut at {cut}");
            assert_eq!(scanned.end, last_start);
        }
    }

    #[test]
    fn a_flipped_bit_in_an_acknowledged_frame_is_refused_not_dropped() {
        let bytes = journal();
        let (_, prev, at) = decode_header(&bytes).unwrap();
        // Any bit of the first frame: a valid frame follows it.
        let first_end = {
            let mut reader = Reader::new(&bytes, at);
            let length = reader.u32().unwrap() as usize;
            at + 4 + length + 8
        };
        for bit in at * 8..first_end * 8 {
            let mut flipped = bytes.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            let result = scan(&flipped, at, 7, prev);
            assert!(
                matches!(result, Err(ForestError::CorruptJournal { .. })),
                "bit {bit}: {result:?}"
            );
        }
    }

    #[test]
    fn every_flipped_bit_of_the_header_is_refused() {
        let bytes = encode_header(&header());
        for bit in 0..bytes.len() * 8 {
            let mut flipped = bytes.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            assert!(decode_header(&flipped).is_err(), "bit {bit}");
        }
    }
}
