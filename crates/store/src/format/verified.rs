//! The verified record `DIR/verified` (docs/file-format.md, "Verified
//! record"): which files, with which identity, were verified up to where.
//! Advisory: a record that does not decode is no record (everything is
//! verified again).

use super::Malformed;
use super::bytes::{exact, put, put_u32, put_u64, u32_at, u64_at};
use crate::fs::FileIdentity;

pub(crate) const VERIFIED_MAGIC: &[u8; 8] = b"CAIRNVFY";
/// The verified record's version.
pub const VERIFIED_VERSION: u32 = 1;
/// Bytes of its header.
pub const VERIFIED_HEADER_LEN: usize = 24;
/// Bytes of one entry.
pub const VERIFIED_ENTRY_LEN: usize = 64;
/// The most entries a record holds (a store with more files gets no
/// record: every open verifies all of it).
pub const VERIFIED_MAX_ENTRIES: usize = 1 << 16;
/// The longest record.
pub const VERIFIED_MAX_BYTES: usize =
    VERIFIED_HEADER_LEN + VERIFIED_ENTRY_LEN * VERIFIED_MAX_ENTRIES + 4;

/// Which file an entry is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum VerifiedFile {
    /// Log file `n`: its first `verified` leaves.
    Log(u64),
    /// The level file of a level (1 and up): its first `verified` nodes.
    Level(u32),
    /// The sums file of a level (0 and up): its first `verified` sums.
    Sums(u32),
}

/// One entry: a file, its identity when the record was written, and how
/// much of it matched its sums (or was written from verified memory by
/// the store that wrote the record).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VerifiedEntry {
    /// The file.
    pub file: VerifiedFile,
    /// Its identity.
    pub identity: FileIdentity,
    /// Nodes (leaves, sums) from its start that were verified.
    pub verified: u64,
}

impl VerifiedEntry {
    fn encode(&self) -> [u8; VERIFIED_ENTRY_LEN] {
        let mut b = [0u8; VERIFIED_ENTRY_LEN];
        let (kind, number) = match self.file {
            VerifiedFile::Log(n) => (1, n),
            VerifiedFile::Level(l) => (2, u64::from(l)),
            VerifiedFile::Sums(l) => (3, u64::from(l)),
        };
        put_u32::<0, VERIFIED_ENTRY_LEN>(&mut b, kind);
        put_u64::<8, VERIFIED_ENTRY_LEN>(&mut b, number);
        put_u64::<16, VERIFIED_ENTRY_LEN>(&mut b, self.identity.dev);
        put_u64::<24, VERIFIED_ENTRY_LEN>(&mut b, self.identity.ino);
        put_u64::<32, VERIFIED_ENTRY_LEN>(&mut b, self.identity.len);
        put::<40, 8, VERIFIED_ENTRY_LEN>(&mut b, self.identity.modified_ns.to_le_bytes());
        put::<48, 8, VERIFIED_ENTRY_LEN>(&mut b, self.identity.changed_ns.to_le_bytes());
        put_u64::<56, VERIFIED_ENTRY_LEN>(&mut b, self.verified);
        b
    }

    fn decode(b: &[u8; VERIFIED_ENTRY_LEN]) -> Option<VerifiedEntry> {
        let number = u64_at::<8, VERIFIED_ENTRY_LEN>(b);
        let level = u32::try_from(number).ok();
        let file = match u32_at::<0, VERIFIED_ENTRY_LEN>(b) {
            1 => VerifiedFile::Log(number),
            2 => VerifiedFile::Level(level?),
            3 => VerifiedFile::Sums(level?),
            _ => return None,
        };
        if u32_at::<4, VERIFIED_ENTRY_LEN>(b) != 0 {
            return None;
        }
        Some(VerifiedEntry {
            file,
            identity: FileIdentity {
                dev: u64_at::<16, VERIFIED_ENTRY_LEN>(b),
                ino: u64_at::<24, VERIFIED_ENTRY_LEN>(b),
                len: u64_at::<32, VERIFIED_ENTRY_LEN>(b),
                modified_ns: i64::from_le_bytes(super::bytes::array::<40, 8, VERIFIED_ENTRY_LEN>(
                    b,
                )),
                changed_ns: i64::from_le_bytes(super::bytes::array::<48, 8, VERIFIED_ENTRY_LEN>(b)),
            },
            verified: u64_at::<56, VERIFIED_ENTRY_LEN>(b),
        })
    }
}

/// The record's bytes for the store `store_id`.
pub(crate) fn encode_verified(store_id: u64, entries: &[VerifiedEntry]) -> Vec<u8> {
    let mut header = [0u8; VERIFIED_HEADER_LEN];
    put::<0, 8, VERIFIED_HEADER_LEN>(&mut header, *VERIFIED_MAGIC);
    put_u32::<8, VERIFIED_HEADER_LEN>(&mut header, VERIFIED_VERSION);
    put_u32::<12, VERIFIED_HEADER_LEN>(
        &mut header,
        u32::try_from(entries.len()).expect("a record holds at most 2^16 entries"),
    );
    put_u64::<16, VERIFIED_HEADER_LEN>(&mut header, store_id);
    let mut b = header.to_vec();
    for entry in entries {
        b.extend_from_slice(&entry.encode());
    }
    let crc = crc32c::crc32c(&b);
    b.extend_from_slice(&crc.to_le_bytes());
    b
}

/// The entries of a record of the store `store_id`.
pub(crate) fn decode_verified(b: &[u8], store_id: u64) -> Result<Vec<VerifiedEntry>, Malformed> {
    let Some((body, crc)) = b.split_last_chunk::<4>() else {
        return Err(Malformed::Field(format!("{} bytes", b.len())));
    };
    let Some((head, entries)) = body.split_first_chunk::<VERIFIED_HEADER_LEN>() else {
        return Err(Malformed::Field(format!("{} bytes", b.len())));
    };
    if super::bytes::array::<0, 8, VERIFIED_HEADER_LEN>(head) != *VERIFIED_MAGIC {
        return Err(Malformed::Magic);
    }
    let version = u32_at::<8, VERIFIED_HEADER_LEN>(head);
    if version != VERIFIED_VERSION {
        return Err(Malformed::Version(version));
    }
    if crc32c::crc32c(body) != u32::from_le_bytes(*crc) {
        return Err(Malformed::Crc);
    }
    if u64_at::<16, VERIFIED_HEADER_LEN>(head) != store_id {
        return Err(Malformed::Field("of another store".to_owned()));
    }
    let count = u32_at::<12, VERIFIED_HEADER_LEN>(head) as usize;
    if count > VERIFIED_MAX_ENTRIES || entries.len() != count * VERIFIED_ENTRY_LEN {
        return Err(Malformed::Field(format!(
            "{} entry bytes for {count} entries",
            entries.len()
        )));
    }
    entries
        .chunks_exact(VERIFIED_ENTRY_LEN)
        .map(|raw| {
            exact::<VERIFIED_ENTRY_LEN>(raw)
                .and_then(VerifiedEntry::decode)
                .ok_or_else(|| Malformed::Field("an entry of no known file".to_owned()))
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_every_bit_flip_is_caught() {
        let entries = vec![
            VerifiedEntry {
                file: VerifiedFile::Log(3),
                identity: FileIdentity {
                    dev: 1,
                    ino: 2,
                    len: 3,
                    modified_ns: 4,
                    changed_ns: -5,
                },
                verified: 6,
            },
            VerifiedEntry {
                file: VerifiedFile::Sums(0),
                identity: FileIdentity::default(),
                verified: 9,
            },
            VerifiedEntry {
                file: VerifiedFile::Level(64),
                identity: FileIdentity::default(),
                verified: 1,
            },
        ];
        let bytes = encode_verified(7, &entries);
        assert_eq!(decode_verified(&bytes, 7), Ok(entries.clone()));
        assert!(decode_verified(&bytes, 8).is_err());
        for bit in 0..bytes.len() * 8 {
            let mut bad = bytes.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert_ne!(decode_verified(&bad, 7), Ok(entries.clone()), "bit {bit}");
        }
        assert!(decode_verified(&bytes[..bytes.len() - 1], 7).is_err());
        assert!(decode_verified(&[], 7).is_err());
        assert_eq!(decode_verified(&encode_verified(7, &[]), 7), Ok(Vec::new()));
    }
}
