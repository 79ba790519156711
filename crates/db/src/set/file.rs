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

use super::table::Table;
use super::{Key, NullifierSet, SHARD_BITS};

/// The published checkpoint of the set.
pub(crate) const SET_FILE: &str = "nullifiers.set";
/// A checkpoint being written (removed at open: never published).
pub(crate) const SET_TMP: &str = "nullifiers.set.tmp";
const MAGIC: &[u8; 8] = b"CAIRNSET";
const VERSION: u32 = 1;
/// Header bytes.
pub(crate) const HEADER_LEN: usize = 64;
// The header holds its fields and its CRC (at 56..60).
const _: () = assert!(HEADER_LEN >= 60);
/// Writes and reads go through a buffer of this size.
const BUFFER: usize = 8 << 20;

/// What a checkpoint file holds.
#[derive(Debug)]
pub(crate) struct Loaded {
    pub set: NullifierSet,
    /// Leaves `0..covered` are in the set.
    pub covered: u64,
}

fn header(store_id: u64, covered: u64, key: Key, body_len: u64) -> [u8; HEADER_LEN] {
    let mut b = [0u8; HEADER_LEN];
    b[0..8].copy_from_slice(MAGIC);
    b[8..12].copy_from_slice(&VERSION.to_le_bytes());
    b[12..16].copy_from_slice(&SHARD_BITS.to_le_bytes());
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
        let mut bytes = Vec::new();
        for shard in 0..set.shard_count() {
            // One shard at a time under its read lock, so appends go on.
            bytes.clear();
            set.with_shard_below(shard, covered, |table| {
                held += table.len() as u64;
                bytes.extend_from_slice(&(table.capacity() as u32).to_le_bytes());
                bytes.extend_from_slice(&(table.len() as u32).to_le_bytes());
                bytes.extend(table.slots().iter().flat_map(|slot| slot.to_le_bytes()));
            });
            let crc = crc32c::crc32c(&bytes);
            bytes.extend_from_slice(&crc.to_le_bytes());
            out.put(&bytes)?;
        }
        out.drain()?;
        // Every leaf below `covered` is in the set before it is in the
        // tree, and nothing is ever removed: the copy holds exactly
        // `covered` values.
        assert_eq!(held, covered, "the set holds every covered leaf once");
        let body_len = out.offset - HEADER_LEN as u64;
        file.write_at(&header(store_id, covered, set.key(), body_len), 0)
            .map_err(|e| StoreError::io("write", tmp, e))
    })
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
    if version != VERSION {
        return Err(corrupt(
            8,
            format!("format version {version}, this build reads {VERSION}"),
        ));
    }
    let shard_bits = u32_at(&head, 12);
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
        let body = reader.take(capacity * 8 + 4, "shard slots")?;
        let (slot_bytes, stored) = body.split_at_checked(capacity * 8).unwrap_or((body, &[]));
        crc = crc32c::crc32c_append(crc, slot_bytes);
        if u32_at(stored, 0) != crc || stored.len() != 4 {
            return Err(corrupt(at, format!("shard {shard}: CRC-32C mismatch")));
        }
        let slots: Vec<u64> = slot_bytes.chunks_exact(8).map(|c| u64_at(c, 0)).collect();
        read.push((at, slots, count));
    }
    use rayon::prelude::*;
    let tables = read
        .into_par_iter()
        .enumerate()
        .map(|(shard, (at, slots, count))| {
            Table::from_slots(slots, count, covered)
                .map_err(|why| corrupt(at, format!("shard {shard}: {why}")))
        })
        .collect::<Result<Vec<Table>, StoreError>>()?;
    let held: u64 = tables.iter().map(|t| t.len() as u64).sum();
    if held != covered {
        return Err(corrupt(
            24,
            format!("holds {held} values, its header says it covers {covered} leaves"),
        ));
    }
    let tables = if kept < covered {
        tables.into_par_iter().map(|t| t.below(kept)).collect()
    } else {
        tables
    };
    Ok(Some(Loaded {
        set: NullifierSet::from_tables(key, tables),
        covered: kept,
    }))
}
