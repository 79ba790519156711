//! The manifest `cairn.trees`: the names of a database's trees and the
//! directory of each, in the order they were added (a tree's number in
//! the block journal is its position here, so trees are only ever
//! appended). Replaced whole by tmp + fdatasync + rename + directory
//! fsync, checked by its CRC before anything in it is used.
#![deny(clippy::indexing_slicing, clippy::unwrap_used)]

use crate::forest::ForestError;

/// The manifest's file name.
pub const MANIFEST: &str = "cairn.trees";
/// Its temporary while it is replaced.
pub(crate) const MANIFEST_TMP: &str = "cairn.trees.tmp";
const MAGIC: &[u8; 8] = b"CAIRNTRS";
/// The manifest format this build writes and reads.
pub const MANIFEST_VERSION: u32 = 1;
/// The longest tree name, in bytes.
pub const MAX_NAME: usize = 64;
/// The most trees one database holds.
pub const MAX_TREES: usize = 1 << 20;

/// One tree of the manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    /// Its name.
    pub(crate) name: String,
    /// Its directory, relative to the database's (`.` for a tree that
    /// was the whole directory before it held several).
    pub(crate) dir: String,
}

/// Whether `name` may name a tree: 1 to 64 bytes of `a-z`, `0-9`, `-`,
/// `_` and `.`, starting with a letter or digit (so it is a directory
/// name and a URL path segment as it is).
pub fn check_name(name: &str) -> Result<(), ForestError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b))
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if ok {
        Ok(())
    } else {
        Err(ForestError::BadName {
            name: name.to_owned(),
        })
    }
}

pub(crate) fn encode(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(20 + entries.len() * 40);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&MANIFEST_VERSION.to_le_bytes());
    let count = u32::try_from(entries.len()).expect("at most MAX_TREES trees");
    out.extend_from_slice(&count.to_le_bytes());
    for entry in entries {
        let name = u8::try_from(entry.name.len()).expect("names are checked");
        out.push(name);
        out.extend_from_slice(entry.name.as_bytes());
        let dir = u16::try_from(entry.dir.len()).expect("directories are short");
        out.extend_from_slice(&dir.to_le_bytes());
        out.extend_from_slice(entry.dir.as_bytes());
    }
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    // Pair assertion: what is written decodes to what was meant.
    debug_assert_eq!(decode(&out).ok().as_deref(), Some(entries));
    out
}

/// Decodes a manifest, refusing anything but exactly one valid encoding.
pub(crate) fn decode(bytes: &[u8]) -> Result<Vec<Entry>, ForestError> {
    let corrupt = |what: String| ForestError::CorruptManifest { what };
    let Some((body, crc)) = bytes.split_last_chunk::<4>() else {
        return Err(corrupt(format!(
            "{} bytes, fewer than its checksum",
            bytes.len()
        )));
    };
    let stored = u32::from_le_bytes(*crc);
    let computed = crc32c::crc32c(body);
    if stored != computed {
        return Err(corrupt(format!(
            "checksum {stored:#010x}, its bytes sum to {computed:#010x}"
        )));
    }
    let mut reader = Reader { bytes: body, at: 0 };
    let magic = reader.take(8)?;
    if magic != MAGIC {
        return Err(corrupt("no cairn.trees magic".into()));
    }
    let version = reader.u32()?;
    if version != MANIFEST_VERSION {
        return Err(ForestError::UnsupportedVersion {
            file: MANIFEST,
            version,
            supported: MANIFEST_VERSION,
        });
    }
    let count = reader.u32()? as usize;
    if count > MAX_TREES {
        return Err(corrupt(format!("{count} trees, at most {MAX_TREES}")));
    }
    let mut entries: Vec<Entry> = Vec::with_capacity(count.min(body.len() / 4));
    for _ in 0..count {
        let length = usize::from(reader.take(1)?.first().copied().unwrap_or(0));
        let name = reader.text(length)?;
        check_name(&name)?;
        let length = usize::from(u16::from_le_bytes(
            reader
                .take(2)?
                .try_into()
                .map_err(|_| corrupt("short".into()))?,
        ));
        let dir = reader.text(length)?;
        if entries.iter().any(|e| e.name == name || e.dir == dir) {
            return Err(corrupt(format!("tree {name} or directory {dir} twice")));
        }
        entries.push(Entry { name, dir });
    }
    if reader.at != body.len() {
        return Err(corrupt(format!(
            "{} bytes after the last tree",
            body.len() - reader.at
        )));
    }
    Ok(entries)
}

/// A cursor over manifest bytes that refuses to read past the end.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], ForestError> {
        let out =
            self.bytes
                .get(self.at..self.at + n)
                .ok_or_else(|| ForestError::CorruptManifest {
                    what: format!(
                        "ends at byte {} inside a field of {n} bytes at {}",
                        self.bytes.len(),
                        self.at
                    ),
                })?;
        self.at += n;
        Ok(out)
    }

    fn u32(&mut self) -> Result<u32, ForestError> {
        let bytes = self.take(4)?;
        Ok(u32::from_le_bytes(bytes.try_into().map_err(|_| {
            ForestError::CorruptManifest {
                what: "short".into(),
            }
        })?))
    }

    fn text(&mut self, n: usize) -> Result<String, ForestError> {
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| ForestError::CorruptManifest {
            what: "a name that is not UTF-8".into(),
        })
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used)]
mod tests {
    use super::*;

    fn entries() -> Vec<Entry> {
        vec![
            Entry {
                name: "default".into(),
                dir: ".".into(),
            },
            Entry {
                name: "notes".into(),
                dir: "trees/notes".into(),
            },
        ]
    }

    #[test]
    fn a_manifest_decodes_to_what_was_encoded() {
        assert_eq!(decode(&encode(&entries())).unwrap(), entries());
        assert_eq!(decode(&encode(&[])).unwrap(), vec![]);
    }

    #[test]
    fn every_flipped_bit_and_every_truncation_is_refused() {
        let bytes = encode(&entries());
        for bit in 0..bytes.len() * 8 {
            let mut flipped = bytes.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            assert!(decode(&flipped).is_err(), "bit {bit}");
        }
        for length in 0..bytes.len() {
            assert!(decode(&bytes[..length]).is_err(), "length {length}");
        }
    }

    #[test]
    fn names_are_directory_and_url_safe() {
        for good in ["default", "notes", "group-7", "a.b_c", "0"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", "Notes", "../x", "a/b", ".hidden", "-x", &"a".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
