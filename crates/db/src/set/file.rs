//! The set's checkpoint file, `nullifiers.set`: every shard's slots for the
//! values of leaves `0..covered`. Byte tables in `docs/file-format.md`.
//!
//! Written whole to `nullifiers.set.tmp`, fdatasynced, renamed over the
//! previous one and the directory fsynced: a crash leaves the old or the
//! new file, never a mix. The file is derived data (the leaves in the log
//! rebuild it), but a file that exists and is wrong is reported, not
//! rebuilt silently. The decoder reads bytes from disk: it answers every
//! input with the set or an error, never a panic (the lints hold it to it).
#![deny(clippy::indexing_slicing, clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use cairn_store::StoreError;
use cairn_store::fs::{Fs, FsFile};
use cairn_store::replace::{open_published, replace_file};
use rayon::prelude::*;

use super::table::{self, Table};
use super::{Key, NullifierSet, SHARD_BITS, TagHash};

/// The published checkpoint of the set.
pub(crate) const SET_FILE: &str = "nullifiers.set";
/// A checkpoint being written (removed at open: never published).
pub(crate) const SET_TMP: &str = "nullifiers.set.tmp";
const MAGIC: &[u8; 8] = b"CAIRNSET";
/// The version written: 2 stores each shard as an occupancy bitmap and the
/// slots in use, and names the tag hash; 1 (still read) stored every slot
/// and always hashed with SipHash-1-3.
const VERSION: u32 = 2;
/// The oldest version read.
const VERSION_SLOTS: u32 = 1;
/// Header bytes.
pub(crate) const HEADER_LEN: usize = 64;
// The header holds its fields and its CRC (at 56..60).
const _: () = assert!(HEADER_LEN >= 60);
/// Writes and reads go through a buffer of this size.
const BUFFER: usize = 8 << 20;
/// Shards encoded in parallel before their bytes are written.
const WRITE_CHUNK: usize = 256;

/// What a checkpoint file holds.
#[derive(Debug)]
pub(crate) struct Loaded {
    pub set: NullifierSet,
    /// Leaves `0..covered` are in the set.
    pub covered: u64,
}

fn header(store_id: u64, covered: u64, key: Key, hash: TagHash, body_len: u64) -> [u8; HEADER_LEN] {
    let mut b = [0u8; HEADER_LEN];
    b[0..8].copy_from_slice(MAGIC);
    b[8..12].copy_from_slice(&VERSION.to_le_bytes());
    b[12] = SHARD_BITS as u8;
    b[13] = hash.id();
    b[16..24].copy_from_slice(&store_id.to_le_bytes());
    b[24..32].copy_from_slice(&covered.to_le_bytes());
    b[32..40].copy_from_slice(&key.0.to_le_bytes());
    b[40..48].copy_from_slice(&key.1.to_le_bytes());
    b[48..56].copy_from_slice(&body_len.to_le_bytes());
    let crc = crc32c::crc32c(&b[..56]);
    b[56..60].copy_from_slice(&crc.to_le_bytes());
    b
}

/// Appends to a file through a buffer, with `write_at`.
struct Writer<'a> {
    file: &'a dyn FsFile,
    path: &'a Path,
    buffer: Vec<u8>,
    offset: u64,
}

impl Writer<'_> {
    fn put(&mut self, bytes: &[u8]) -> Result<(), StoreError> {
        self.buffer.extend_from_slice(bytes);
        if self.buffer.len() >= BUFFER {
            self.drain()?;
        }
        Ok(())
    }

    fn drain(&mut self) -> Result<(), StoreError> {
        self.file
            .write_at(&self.buffer, self.offset)
            .map_err(|e| StoreError::io("write", self.path, e))?;
        self.offset += self.buffer.len() as u64;
        self.buffer.clear();
        Ok(())
    }
}

/// Writes and publishes a checkpoint of the set covering leaves
/// `0..covered` (all durable). Entries of later leaves, which the set may
/// already hold, are left out.
pub(crate) fn write(
    fs: &dyn Fs,
    dir: &Path,
    set: &NullifierSet,
    store_id: u64,
    covered: u64,
) -> Result<(), StoreError> {
    replace_file(fs, dir, SET_TMP, SET_FILE, |file, tmp| {
        let mut out = Writer {
            file,
            path: tmp,
            buffer: Vec::with_capacity(BUFFER + (1 << 16)),
            offset: HEADER_LEN as u64,
        };
        let mut held = 0u64;
        // Shards are encoded and summed in parallel, a chunk at a time
        // (a few MiB of encodings in memory at once), and written in order.
        let shards: Vec<usize> = (0..set.shard_count()).collect();
        for chunk in shards.chunks(WRITE_CHUNK) {
            let encoded: Vec<(Vec<u8>, u64)> = chunk
                .par_iter()
                .map(|&shard| {
                    // Under the shard's read lock, so appends go on; as it
                    // is, with any entries of leaves from `covered` on (an
                    // append that ran past the checkpoint's size): open
                    // drops them.
                    let mut bytes = Vec::new();
                    let below =
                        set.with_shard(shard, |table| encode_shard(table, covered, &mut bytes));
                    let crc = crc32c::crc32c(&bytes);
                    bytes.extend_from_slice(&crc.to_le_bytes());
                    (bytes, below)
                })
                .collect();
            for (bytes, below) in encoded {
                held += below;
                out.put(&bytes)?;
            }
        }
        out.drain()?;
        // Every leaf below `covered` is in the set before it is in the
        // tree, and nothing is ever removed: the copy holds exactly
        // `covered` values.
        assert_eq!(held, covered, "the set holds every covered leaf once");
        let body_len = out.offset - HEADER_LEN as u64;
        let head = header(store_id, covered, set.key(), set.hash(), body_len);
        file.write_at(&head, 0)
            .map_err(|e| StoreError::io("write", tmp, e))
    })
}

/// Words of a shard's occupancy bitmap: one bit per slot.
fn bitmap_words(capacity: usize) -> usize {
    capacity.div_ceil(64)
}

/// A shard as version 2 stores it, without its CRC: capacity, entries,
/// the occupancy bitmap (bit `i % 64` of word `i / 64` set for a slot in
/// use) and the slots in use, in slot order. At 64% to 80% load that is
/// 8.2 bytes per value where all the slots were 10 to 12.5. Returns how
/// many entries point below `end`.
fn encode_shard(table: &Table, end: u64, out: &mut Vec<u8>) -> u64 {
    let slots = table.slots();
    let words = bitmap_words(slots.len());
    out.reserve(8 + 8 * words + 8 * table.len() + 4);
    out.extend_from_slice(&(slots.len() as u32).to_le_bytes());
    out.extend_from_slice(&(table.len() as u32).to_le_bytes());
    let bitmap_at = out.len();
    out.resize(bitmap_at + 8 * words, 0);
    // One pass, without a branch on the load (a slot is in use at random):
    // each slot is written at the cursor, which moves on only past one in
    // use; the entries end up packed, followed by one slot of slack.
    let entries_at = out.len();
    out.resize(entries_at + 8 * table.len() + 8, 0);
    let mut below = 0u64;
    let mut cursor = entries_at;
    for (word_index, chunk) in slots.chunks(64).enumerate() {
        let mut word = 0u64;
        for (bit, &slot) in chunk.iter().enumerate() {
            let used = slot != 0;
            word |= u64::from(used) << bit;
            if let Some(field) = out.get_mut(cursor..cursor + 8) {
                field.copy_from_slice(&slot.to_le_bytes());
            }
            cursor += 8 * usize::from(used);
            let index = (slot & table::INDEX_MASK).wrapping_sub(1);
            below += u64::from(used & (index < end));
        }
        let at = bitmap_at + 8 * word_index;
        if let Some(field) = out.get_mut(at..at + 8) {
            field.copy_from_slice(&word.to_le_bytes());
        }
    }
    assert_eq!(
        cursor,
        entries_at + 8 * table.len(),
        "the count of slots in use"
    );
    out.truncate(cursor);
    below
}

/// Reads a file through a buffer.
struct Reader<'a> {
    file: &'a dyn FsFile,
    path: &'a Path,
    buffer: Vec<u8>,
    at: usize,
    /// File offset of `buffer[0]`.
    offset: u64,
    end: u64,
}

impl Reader<'_> {
    /// The next `n` bytes, or a corruption error at the current offset.
    fn take(&mut self, n: usize, what: &str) -> Result<&[u8], StoreError> {
        if self.buffer.len() - self.at < n {
            let position = self.offset + self.at as u64;
            let left = self.end.saturating_sub(position);
            if (n as u64) > left {
                return Err(StoreError::corrupt(
                    self.path,
                    position,
                    format!("{what}: the file ends {left} bytes on, {n} are needed"),
                ));
            }
            let want = (n.max(BUFFER) as u64).min(left) as usize;
            let mut fresh = vec![0u8; want];
            self.file
                .read_exact_at(&mut fresh, position)
                .map_err(|e| StoreError::io("read", self.path, e))?;
            self.buffer = fresh;
            self.offset = position;
            self.at = 0;
        }
        let start = self.at;
        self.at += n;
        self.buffer.get(start..self.at).ok_or_else(|| {
            StoreError::corrupt(
                self.path,
                self.offset + start as u64,
                format!("{what}: {n} bytes past the buffer"),
            )
        })
    }

    fn position(&self) -> u64 {
        self.offset + self.at as u64
    }
}

/// The little-endian `u32` at `at` of `b` (0 past its end: callers read
/// fields of a header whose length they checked).
fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .and_then(|f| f.try_into().ok())
        .map_or(0, u32::from_le_bytes)
}

/// The little-endian `u64` at `at` of `b` (see [`u32_at`]).
fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .and_then(|f| f.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// The published set file of `dir`, opened (not read): a read-only open
/// takes it before it opens the store, so the file covers no leaf the
/// store it then opens lacks (a writer publishes the set only after the
/// leaves it covers are durable). Leaves a leftover temporary in place.
pub(crate) fn open(fs: &dyn Fs, dir: &Path) -> Result<Option<Box<dyn FsFile>>, StoreError> {
    open_published(fs, &dir.join(SET_FILE))
}

/// The set's checkpoint read from `published` (opened by [`open`]), if there is one; every byte is checked
/// (CRCs, counts, the store it belongs to, indices below `covered`, no
/// more than `size` leaves covered). With `floor` (the lowest size the
/// store was rolled back to since the file was written), entries at or
/// above it are dropped and the file covers only `floor` leaves: they were
/// removed, and other leaves may hold those indices now.
pub(crate) fn read_from(
    published: Option<Box<dyn FsFile>>,
    dir: &Path,
    store_id: u64,
    size: u64,
    floor: Option<u64>,
) -> Result<Option<Loaded>, StoreError> {
    let path: PathBuf = dir.join(SET_FILE);
    let Some(file) = published else {
        return Ok(None);
    };
    let len = file.len().map_err(|e| StoreError::io("stat", &path, e))?;
    let mut reader = Reader {
        file: &*file,
        path: &path,
        buffer: Vec::new(),
        at: 0,
        offset: 0,
        end: len,
    };
    let corrupt = |offset: u64, why: String| StoreError::corrupt(&path, offset, why);
    let head: [u8; HEADER_LEN] = reader
        .take(HEADER_LEN, "header")?
        .try_into()
        .map_err(|_| corrupt(0, "a short header".into()))?;
    if head.first_chunk::<8>() != Some(MAGIC) {
        return Err(corrupt(0, "not a cairn set checkpoint (bad magic)".into()));
    }
    let crc = crc32c::crc32c(head.first_chunk::<56>().map_or(&[][..], |b| b.as_slice()));
    if u32_at(&head, 56) != crc {
        return Err(corrupt(
            56,
            format!(
                "header CRC-32C is {:#010x}, the header hashes to {crc:#010x}",
                u32_at(&head, 56)
            ),
        ));
    }
    let version = u32_at(&head, 8);
    if !(VERSION_SLOTS..=VERSION).contains(&version) {
        return Err(corrupt(
            8,
            format!("format version {version}, this build reads {VERSION_SLOTS} to {VERSION}"),
        ));
    }
    // Version 1: the shard bits as a u32, SipHash-1-3 implied; version 2:
    // the shard bits in a byte, the tag hash's id in the next, two zeros.
    let (shard_bits, hash) = if version == VERSION_SLOTS {
        (u32_at(&head, 12), TagHash::SipHash13)
    } else {
        let id = head.get(13).copied().unwrap_or(0);
        let hash = TagHash::from_id(id)
            .ok_or_else(|| corrupt(13, format!("tag hash id {id}, this build knows 1 and 2")))?;
        if head.get(14..16) != Some(&[0, 0][..]) {
            return Err(corrupt(14, "bytes 14..16 are not zero".into()));
        }
        (u32::from(head.get(12).copied().unwrap_or(0)), hash)
    };
    if shard_bits != SHARD_BITS {
        return Err(corrupt(
            12,
            format!("{shard_bits} shard bits, this build uses {SHARD_BITS}"),
        ));
    }
    let owner = u64_at(&head, 16);
    if owner != store_id {
        return Err(corrupt(
            16,
            format!("belongs to store {owner:#x}, this directory's store is {store_id:#x}"),
        ));
    }
    let covered = u64_at(&head, 24);
    let kept = floor.map_or(covered, |floor| covered.min(floor));
    if kept > size {
        return Err(corrupt(
            24,
            format!("covers {kept} leaves, the store holds only {size}"),
        ));
    }
    let key = Key(u64_at(&head, 32), u64_at(&head, 40));
    let body_len = u64_at(&head, 48);
    if HEADER_LEN as u64 + body_len != len {
        return Err(corrupt(
            48,
            format!(
                "the file has {len} bytes, its header says {}",
                HEADER_LEN as u64 + body_len
            ),
        ));
    }
    let shards = 1usize << SHARD_BITS;
    // Read and check the CRCs in file order, then check every table's
    // structure in parallel (the slower part, over a gigabyte at 10^8
    // values).
    let mut read = Vec::with_capacity(shards);
    for shard in 0..shards {
        let at = reader.position();
        let counts = reader.take(8, "shard header")?;
        let capacity = u32_at(counts, 0) as usize;
        let count = u32_at(counts, 4) as usize;
        let mut crc = crc32c::crc32c(counts);
        let slots = if version == VERSION_SLOTS {
            let body = reader.take(capacity * 8 + 4, "shard slots")?;
            let (slot_bytes, stored) = body.split_at_checked(capacity * 8).unwrap_or((body, &[]));
            crc = crc32c::crc32c_append(crc, slot_bytes);
            if u32_at(stored, 0) != crc || stored.len() != 4 {
                return Err(corrupt(at, format!("shard {shard}: CRC-32C mismatch")));
            }
            Shard::Slots(slot_bytes.chunks_exact(8).map(|c| u64_at(c, 0)).collect())
        } else {
            let words = bitmap_words(capacity);
            let bitmap: Vec<u64> = {
                let bytes = reader.take(words * 8, "shard bitmap")?;
                crc = crc32c::crc32c_append(crc, bytes);
                bytes.chunks_exact(8).map(|c| u64_at(c, 0)).collect()
            };
            let body = reader.take(count * 8 + 4, "shard entries")?;
            let (entry_bytes, stored) = body.split_at_checked(count * 8).unwrap_or((body, &[]));
            crc = crc32c::crc32c_append(crc, entry_bytes);
            if u32_at(stored, 0) != crc || stored.len() != 4 {
                return Err(corrupt(at, format!("shard {shard}: CRC-32C mismatch")));
            }
            let entries = entry_bytes.chunks_exact(8).map(|c| u64_at(c, 0)).collect();
            Shard::Packed {
                capacity,
                bitmap,
                entries,
            }
        };
        read.push((at, slots, count));
    }
    // Version 1 holds only entries below `covered`; version 2 may hold
    // later ones too (appends that ran while it was written), dropped here.
    let end = if version == VERSION_SLOTS {
        covered
    } else {
        table::MAX_INDEX + 1
    };
    // Each shard expanded, checked and counted by one thread while its
    // slots are in that core's cache.
    let tables = read
        .into_par_iter()
        .enumerate()
        .map(|(shard, (at, slots, count))| {
            let slots = match slots {
                Shard::Slots(slots) => slots,
                Shard::Packed {
                    capacity,
                    bitmap,
                    entries,
                } => expand(capacity, &bitmap, &entries)
                    .map_err(|why| corrupt(at, format!("shard {shard}: {why}")))?,
            };
            let table = Table::from_slots(slots, count, end)
                .map_err(|why| corrupt(at, format!("shard {shard}: {why}")))?;
            let below = table.count_below(covered);
            Ok((table, below))
        })
        .collect::<Result<Vec<(Table, u64)>, StoreError>>()?;
    let held: u64 = tables.iter().map(|(_, below)| below).sum();
    if held != covered {
        return Err(corrupt(
            24,
            format!(
                "holds {held} values below leaf {covered}, its header says it covers {covered} leaves"
            ),
        ));
    }
    let tables = tables
        .into_par_iter()
        .map(|(table, below)| {
            if kept == covered && below == table.len() as u64 {
                table
            } else {
                table.below(kept)
            }
        })
        .collect();
    Ok(Some(Loaded {
        set: NullifierSet::from_tables(key, hash, tables),
        covered: kept,
    }))
}

/// A shard as read, its CRC checked.
enum Shard {
    /// Version 1: every slot.
    Slots(Vec<u64>),
    /// Version 2: the occupancy bitmap and the slots in use.
    Packed {
        capacity: usize,
        bitmap: Vec<u64>,
        entries: Vec<u64>,
    },
}

/// A version 2 shard's slots from its occupancy bitmap and the entries in
/// use: the bitmap marks exactly as many slots as there are entries, none
/// past the capacity, and no entry is the empty slot.
fn expand(capacity: usize, bitmap: &[u64], entries: &[u64]) -> Result<Vec<u64>, String> {
    let marked: usize = bitmap.iter().map(|w| w.count_ones() as usize).sum();
    let count = entries.len();
    if marked != count {
        return Err(format!(
            "the bitmap marks {marked} slots in use, the shard holds {count} entries"
        ));
    }
    let tail = capacity % 64;
    if tail != 0
        && let Some(last) = bitmap.last()
        && last >> tail != 0
    {
        return Err(format!(
            "the bitmap marks slots past the capacity {capacity}"
        ));
    }
    let mut slots = table::empty_slots(capacity);
    let mut next = entries.iter().copied();
    for (word_index, &word) in bitmap.iter().enumerate() {
        let mut word = word;
        while word != 0 {
            let at = word_index * 64 + word.trailing_zeros() as usize;
            word &= word - 1;
            let entry = next.next().unwrap_or(0);
            if entry == 0 {
                return Err(format!("slot {at} is marked in use and holds 0"));
            }
            if let Some(slot) = slots.get_mut(at) {
                *slot = entry;
            }
        }
    }
    Ok(slots)
}

#[cfg(test)]
#[expect(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    reason = "tests index the buffers they build and unwrap to fail loudly"
)]
mod tests {
    use cairn_store::decoders::BytesFile;

    use super::*;

    /// Distinct pseudo-random values (splitmix64 words).
    fn value(i: u64) -> cairn_core::Hash {
        let mut out = [0u8; 32];
        let mut state = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        for chunk in out.chunks_mut(8) {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            chunk.copy_from_slice(&(z ^ (z >> 31)).to_le_bytes());
        }
        out
    }

    /// A set file as format version 1 laid it out: every slot of every
    /// shard, SipHash-1-3 implied (written here as that version's writer
    /// did, to show such files still open).
    fn version_1(set: &NullifierSet, store_id: u64, covered: u64) -> Vec<u8> {
        let mut body = Vec::new();
        for shard in 0..set.shard_count() {
            let start = body.len();
            let table = set.with_shard(shard, |table| table.clone().below(covered));
            body.extend_from_slice(&(table.capacity() as u32).to_le_bytes());
            body.extend_from_slice(&(table.len() as u32).to_le_bytes());
            body.extend(table.slots().iter().flat_map(|slot| slot.to_le_bytes()));
            let crc = crc32c::crc32c(&body[start..]);
            body.extend_from_slice(&crc.to_le_bytes());
        }
        let mut b = vec![0u8; HEADER_LEN];
        b[0..8].copy_from_slice(MAGIC);
        b[8..12].copy_from_slice(&1u32.to_le_bytes());
        b[12..16].copy_from_slice(&SHARD_BITS.to_le_bytes());
        b[16..24].copy_from_slice(&store_id.to_le_bytes());
        b[24..32].copy_from_slice(&covered.to_le_bytes());
        b[32..40].copy_from_slice(&set.key().0.to_le_bytes());
        b[40..48].copy_from_slice(&set.key().1.to_le_bytes());
        b[48..56].copy_from_slice(&(body.len() as u64).to_le_bytes());
        let crc = crc32c::crc32c(&b[..56]);
        b[56..60].copy_from_slice(&crc.to_le_bytes());
        b.extend_from_slice(&body);
        b
    }

    fn filled(hash: TagHash, count: u64) -> (NullifierSet, Vec<cairn_core::Hash>) {
        let set = NullifierSet::with_hash(Key(11, 12), hash);
        let leaves: Vec<cairn_core::Hash> = (0..count).map(value).collect();
        let leaf = |i: u64| leaves.get(i as usize).copied();
        assert!(set.insert_batch(&leaves, 0, &leaf).unwrap().is_empty());
        (set, leaves)
    }

    fn read(bytes: Vec<u8>, size: u64) -> Result<Option<Loaded>, StoreError> {
        read_from(
            Some(Box::new(BytesFile(bytes))),
            Path::new("t"),
            5,
            size,
            None,
        )
    }

    fn assert_finds(set: &NullifierSet, leaves: &[cairn_core::Hash]) {
        let leaf = |i: u64| leaves.get(i as usize).copied();
        for (i, v) in leaves.iter().enumerate().step_by(7) {
            assert_eq!(set.find(v, leaf), Some(i as u64));
        }
        assert_eq!(set.find(&value(1 << 40), leaf), None);
    }

    #[test]
    fn a_version_1_file_opens_with_its_siphash_tags_and_is_rewritten_as_version_2() {
        let (set, leaves) = filled(TagHash::SipHash13, 20_000);
        let loaded = read(version_1(&set, 5, 20_000), 20_000).unwrap().unwrap();
        assert_eq!(loaded.covered, 20_000);
        assert_eq!(loaded.set.hash(), TagHash::SipHash13);
        assert_eq!(loaded.set.key(), set.key());
        assert_finds(&loaded.set, &leaves);

        let fs = cairn_store::StdFs;
        let dir = tempfile::tempdir().unwrap();
        write(&fs, dir.path(), &loaded.set, 5, 20_000).unwrap();
        let bytes = std::fs::read(dir.path().join(SET_FILE)).unwrap();
        assert_eq!(u32_at(&bytes, 8), 2);
        assert_eq!(bytes[13], TagHash::SipHash13.id());
        let again = read(bytes, 20_000).unwrap().unwrap();
        assert_eq!(again.set.hash(), TagHash::SipHash13);
        assert_finds(&again.set, &leaves);
    }

    #[test]
    fn a_version_2_file_holds_the_slots_in_use_and_gives_back_every_slot() {
        let (set, leaves) = filled(TagHash::Folded, 30_000);
        let fs = cairn_store::StdFs;
        let dir = tempfile::tempdir().unwrap();
        write(&fs, dir.path(), &set, 5, 30_000).unwrap();
        let bytes = std::fs::read(dir.path().join(SET_FILE)).unwrap();
        let stats = set.stats();
        // Header, per shard 12 bytes and the bitmap, 8 bytes per value.
        let bitmap: u64 = (0..set.shard_count())
            .map(|s| set.with_shard(s, |t| bitmap_words(t.capacity()) as u64 * 8))
            .sum();
        assert_eq!(
            bytes.len() as u64,
            HEADER_LEN as u64 + 12 * set.shard_count() as u64 + bitmap + 8 * stats.values
        );
        let loaded = read(bytes, 30_000).unwrap().unwrap();
        assert_eq!(loaded.set.hash(), TagHash::Folded);
        for shard in 0..set.shard_count() {
            let want = set.with_shard(shard, |t| t.slots().to_vec());
            let got = loaded.set.with_shard(shard, |t| t.slots().to_vec());
            assert_eq!(got, want, "shard {shard}");
        }
        assert_finds(&loaded.set, &leaves);
    }

    #[test]
    fn entries_past_the_covered_leaves_are_written_and_dropped_at_open() {
        // A checkpoint covering 12,000 leaves while the set holds 15,000:
        // the file holds the shards as they are, open keeps the 12,000.
        let (set, leaves) = filled(TagHash::Folded, 15_000);
        let fs = cairn_store::StdFs;
        let dir = tempfile::tempdir().unwrap();
        write(&fs, dir.path(), &set, 5, 12_000).unwrap();
        let bytes = std::fs::read(dir.path().join(SET_FILE)).unwrap();
        let loaded = read(bytes.clone(), 15_000).unwrap().unwrap();
        assert_eq!((loaded.covered, loaded.set.len()), (12_000, 12_000));
        assert_finds(&loaded.set, &leaves[..12_000]);
        let leaf = |i: u64| leaves.get(i as usize).copied();
        for v in &leaves[12_000..] {
            assert_eq!(loaded.set.find(v, leaf), None);
        }
        // With a rollback floor below: only the leaves under it.
        let floor = read_from(
            Some(Box::new(BytesFile(bytes))),
            Path::new("t"),
            5,
            15_000,
            Some(3_000),
        )
        .unwrap()
        .unwrap();
        assert_eq!((floor.covered, floor.set.len()), (3_000, 3_000));
        assert_finds(&floor.set, &leaves[..3_000]);
    }

    #[test]
    fn a_bitmap_that_disagrees_with_the_entries_is_refused() {
        let entry = 1u64 << 40;
        let two = [entry, entry + 1];
        assert_eq!(expand(8, &[0b101], &two).unwrap()[2], entry + 1);
        assert!(
            expand(8, &[0b1], &two)
                .unwrap_err()
                .contains("marks 1 slots")
        );
        assert!(
            expand(8, &[0b1_0000_0001], &two)
                .unwrap_err()
                .contains("past the capacity")
        );
        assert!(
            expand(8, &[0b11], &[entry, 0])
                .unwrap_err()
                .contains("holds 0")
        );
        assert!(expand(64, &[1 << 63], &[entry]).is_ok());
    }
}
