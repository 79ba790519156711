//! The manifest `cairn.trees`: the names of a database's trees and the
//! directory of each, in the order they were added (a tree's number in
//! the block journal is its position here, so trees are only ever
//! appended). Replaced whole by tmp + fdatasync + rename + directory
//! fsync, checked by its CRC before anything in it is used.
//!
//! Version 2 adds to each tree its family: the member number and the
//! capacity and successor rule of a tree that rolls over (member `k` of
//! family `NAME` is the tree `NAME/k`; member 0 is `NAME` itself). A
//! manifest without a capacity is still written as version 1, which
//! builds before families read. Version 3 adds the whole-batch successor
//! rule (a rollover byte of 2); it is written only while a family has that
//! rule, so a build that knows only splitting refuses such a manifest
//! instead of splitting that family's writes.
#![deny(clippy::indexing_slicing, clippy::unwrap_used)]

use crate::forest::ForestError;
use crate::forest::family::Rollover;

/// The manifest's file name.
pub const MANIFEST: &str = "cairn.trees";
/// Its temporary while it is replaced.
pub(crate) const MANIFEST_TMP: &str = "cairn.trees.tmp";
const MAGIC: &[u8; 8] = b"CAIRNTRS";
/// The newest manifest format this build writes and reads (it reads
/// versions 1 and 2 too, and writes the oldest that holds its trees).
pub const MANIFEST_VERSION: u32 = 3;
/// The manifest format with families that split writes only.
const MANIFEST_VERSION_SPLIT: u32 = 2;
/// The manifest format before families.
const MANIFEST_VERSION_PLAIN: u32 = 1;
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
    /// Its family, if it has a capacity (`name` is then the family's).
    pub(crate) family: Option<Family>,
}

/// What the manifest says of a tree with a capacity: a member of a
/// family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Family {
    /// The member's number: 0 for the tree added, `k` for the `k`-th
    /// successor (Railgun's tree number).
    pub member: u32,
    /// The most leaves a member holds (an indexed tree's guard counted).
    pub capacity: u64,
    /// What a full member does with values that do not fit.
    pub rollover: Rollover,
}

impl Entry {
    /// The tree's name: the family's for member 0, `NAME/k` for member k.
    pub(crate) fn full_name(&self) -> String {
        member_name(&self.name, self.family.map_or(0, |f| f.member))
    }
}

/// The name of member `member` of family `family`: the family's own for
/// member 0, else `FAMILY/member`.
pub fn member_name(family: &str, member: u32) -> String {
    if member == 0 {
        family.to_owned()
    } else {
        format!("{family}/{member}")
    }
}

/// The directory of member `member` of family `family`, relative to the
/// database's: `trees/FAMILY` for member 0, `trees/FAMILY@k` after (`@`
/// is in no tree name, so no tree's directory is a member's).
pub(crate) fn member_dir(trees_dir: &str, family: &str, member: u32) -> String {
    if member == 0 {
        format!("{trees_dir}/{family}")
    } else {
        format!("{trees_dir}/{family}@{member}")
    }
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

/// The rollover byte of `rule`.
fn rollover_byte(rule: Rollover) -> u8 {
    match rule {
        Rollover::Refuse => 0,
        Rollover::Split => 1,
        Rollover::WholeBatch => 2,
    }
}

/// The version a manifest of `entries` is written as: the oldest that
/// holds them, so that builds that read it are as many as can.
fn written_version(entries: &[Entry]) -> u32 {
    let families = entries.iter().any(|e| e.family.is_some());
    let whole = entries
        .iter()
        .any(|e| e.family.is_some_and(|f| f.rollover == Rollover::WholeBatch));
    match (families, whole) {
        (_, true) => MANIFEST_VERSION,
        (true, false) => MANIFEST_VERSION_SPLIT,
        (false, false) => MANIFEST_VERSION_PLAIN,
    }
}

pub(crate) fn encode(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(20 + entries.len() * 40);
    out.extend_from_slice(MAGIC);
    let families = entries.iter().any(|e| e.family.is_some());
    let version = written_version(entries);
    out.extend_from_slice(&version.to_le_bytes());
    let count = u32::try_from(entries.len()).expect("at most MAX_TREES trees");
    out.extend_from_slice(&count.to_le_bytes());
    for entry in entries {
        let name = u8::try_from(entry.name.len()).expect("names are checked");
        out.push(name);
        out.extend_from_slice(entry.name.as_bytes());
        let dir = u16::try_from(entry.dir.len()).expect("directories are short");
        out.extend_from_slice(&dir.to_le_bytes());
        out.extend_from_slice(entry.dir.as_bytes());
        if families {
            // member u32, capacity u64 (0: none), rollover u8.
            let family = entry.family.unwrap_or(Family {
                member: 0,
                capacity: 0,
                rollover: Rollover::Refuse,
            });
            out.extend_from_slice(&family.member.to_le_bytes());
            out.extend_from_slice(&family.capacity.to_le_bytes());
            out.push(rollover_byte(family.rollover));
        }
    }
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    // Pair assertion: what is written decodes to what was meant.
    debug_assert_eq!(decode(&out).ok().as_deref(), Some(entries));
    out
}

/// Whether `dir` is a directory a manifest may name: the database's own
/// (`.`) or one directory under `trees/`, so that no manifest opens a tree
/// outside the database.
fn inside_database(dir: &str) -> bool {
    dir == "."
        || dir
            .strip_prefix(super::TREES_DIR)
            .and_then(|rest| rest.strip_prefix('/'))
            .is_some_and(|leaf| {
                !leaf.is_empty() && leaf != "." && leaf != ".." && !leaf.contains(['/', '\\', '\0'])
            })
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
    if ![
        MANIFEST_VERSION_PLAIN,
        MANIFEST_VERSION_SPLIT,
        MANIFEST_VERSION,
    ]
    .contains(&version)
    {
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
        if !inside_database(&dir) {
            return Err(corrupt(format!(
                "tree {name}: directory {dir:?} is neither . nor one directory under {}/",
                super::TREES_DIR
            )));
        }
        let family = if version == MANIFEST_VERSION_PLAIN {
            None
        } else {
            let member = reader.u32()?;
            let capacity = reader.u64()?;
            let rollover = match reader.take(1)?.first().copied() {
                Some(0) => Rollover::Refuse,
                Some(1) => Rollover::Split,
                Some(2) if version >= MANIFEST_VERSION => Rollover::WholeBatch,
                other => {
                    return Err(corrupt(format!(
                        "tree {name}: rollover {other:?} in a version {version} manifest"
                    )));
                }
            };
            if capacity == 0 {
                if member != 0 || rollover != Rollover::Refuse {
                    return Err(corrupt(format!(
                        "tree {name}: member {member} or a rollover without a capacity"
                    )));
                }
                None
            } else {
                Some(Family {
                    member,
                    capacity,
                    rollover,
                })
            }
        };
        if let Some(f) = family
            && f.member > 0
        {
            // A member follows its predecessor, with the family's rule.
            let before = entries
                .iter()
                .find(|e| e.name == name && e.family.map(|g| g.member) == Some(f.member - 1));
            match before.and_then(|e| e.family) {
                Some(g)
                    if g.capacity == f.capacity
                        && g.rollover == f.rollover
                        && f.rollover.rolls_over() => {}
                _ => {
                    return Err(corrupt(format!(
                        "tree {name}/{} without its predecessor of the same capacity and rollover",
                        f.member
                    )));
                }
            }
        }
        let entry = Entry { name, dir, family };
        let full = entry.full_name();
        if entries
            .iter()
            .any(|e| e.full_name() == full || e.dir == entry.dir)
        {
            return Err(corrupt(format!(
                "tree {full} or directory {} twice",
                entry.dir
            )));
        }
        entries.push(entry);
    }
    if reader.at != body.len() {
        return Err(corrupt(format!(
            "{} bytes after the last tree",
            body.len() - reader.at
        )));
    }
    let want = written_version(&entries);
    if version != want {
        // One encoding per content: the oldest version that holds it.
        return Err(corrupt(format!(
            "version {version} for trees a version {want} manifest holds"
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

    fn u64(&mut self) -> Result<u64, ForestError> {
        let bytes = self.take(8)?;
        Ok(u64::from_le_bytes(bytes.try_into().map_err(|_| {
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
                family: None,
            },
            Entry {
                name: "notes".into(),
                dir: "trees/notes".into(),
                family: None,
            },
        ]
    }

    fn family() -> Vec<Entry> {
        let mut entries = entries();
        for member in 0..3 {
            entries.push(Entry {
                name: "commitments".into(),
                dir: member_dir("trees", "commitments", member),
                family: Some(Family {
                    member,
                    capacity: 65_536,
                    rollover: Rollover::Split,
                }),
            });
        }
        entries
    }

    /// A version 1 manifest as builds before families wrote it.
    fn version_1(entries: &[(&str, &str)]) -> Vec<u8> {
        let mut out = b"CAIRNTRS".to_vec();
        out.extend_from_slice(&1u32.to_le_bytes());
        out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        for (name, dir) in entries {
            out.push(name.len() as u8);
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(&(dir.len() as u16).to_le_bytes());
            out.extend_from_slice(dir.as_bytes());
        }
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    #[test]
    fn a_manifest_without_capacities_is_written_as_version_1_and_version_1_still_reads() {
        let old = version_1(&[("default", "."), ("notes", "trees/notes")]);
        assert_eq!(decode(&old).unwrap(), entries());
        assert_eq!(encode(&entries()), old);
    }

    #[test]
    fn a_directory_outside_the_database_is_refused() {
        for dir in [
            "..",
            "/tmp/x",
            "trees",
            "trees/",
            "trees/..",
            "trees/a/b",
            "other/a",
        ] {
            let bytes = version_1(&[("notes", dir)]);
            assert!(
                matches!(decode(&bytes), Err(ForestError::CorruptManifest { .. })),
                "{dir}"
            );
        }
        for dir in [".", "trees/notes", "trees/notes@2", "trees/notes~1"] {
            assert!(decode(&version_1(&[("notes", dir)])).is_ok(), "{dir}");
        }
    }

    #[test]
    fn a_family_is_written_as_version_2_and_reads_back_with_its_members() {
        let bytes = encode(&family());
        assert_eq!(bytes[8..12], 2u32.to_le_bytes());
        let decoded = decode(&bytes).unwrap();
        assert_eq!(decoded, family());
        let names: Vec<String> = decoded.iter().map(Entry::full_name).collect();
        assert_eq!(
            names,
            [
                "default",
                "notes",
                "commitments",
                "commitments/1",
                "commitments/2"
            ]
        );
        for bit in 0..bytes.len() * 8 {
            let mut flipped = bytes.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            assert!(decode(&flipped).is_err(), "bit {bit}");
        }
    }

    fn whole_batch_family() -> Vec<Entry> {
        let mut entries = family();
        for entry in &mut entries {
            if let Some(family) = &mut entry.family {
                family.rollover = Rollover::WholeBatch;
            }
        }
        entries
    }

    #[test]
    fn a_whole_batch_family_is_written_as_version_3_and_only_version_3_holds_it() {
        let bytes = encode(&whole_batch_family());
        assert_eq!(bytes[8..12], 3u32.to_le_bytes());
        assert_eq!(decode(&bytes).unwrap(), whole_batch_family());
        // A version 2 reader's format has no rule 2: refused, not split.
        let error = decode(&encode_as(2, &whole_batch_family())).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("rollover Some(2) in a version 2"),
            "{error}"
        );
        // One encoding per content: no newer version than needed.
        for (version, entries) in [(3, family()), (3, entries()), (2, entries())] {
            let error = decode(&encode_as(version, &entries)).unwrap_err();
            assert!(
                error
                    .to_string()
                    .contains(&format!("version {version} for trees")),
                "{error}"
            );
        }
        // A family's members share one rule.
        let mut mixed = whole_batch_family();
        if let Some(family) = &mut mixed[3].family {
            family.rollover = Rollover::Split;
        }
        let error = decode(&encode_as(3, &mixed)).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("commitments/1 without its predecessor"),
            "{error}"
        );
        for bit in 0..bytes.len() * 8 {
            let mut flipped = bytes.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            assert!(decode(&flipped).is_err(), "bit {bit}");
        }
    }

    #[test]
    fn a_member_without_its_predecessor_is_refused() {
        let mut entries = family();
        entries.remove(3);
        let error = decode(&encode_unchecked(&entries)).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("commitments/2 without its predecessor"),
            "{error}"
        );
    }

    /// [`encode`] without its pair assertion, for manifests it refuses.
    fn encode_unchecked(entries: &[Entry]) -> Vec<u8> {
        encode_as(2, entries)
    }

    /// The manifest of `entries` with any version number.
    fn encode_as(version: u32, entries: &[Entry]) -> Vec<u8> {
        let mut out = b"CAIRNTRS".to_vec();
        out.extend_from_slice(&version.to_le_bytes());
        out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        for entry in entries {
            out.push(entry.name.len() as u8);
            out.extend_from_slice(entry.name.as_bytes());
            out.extend_from_slice(&(entry.dir.len() as u16).to_le_bytes());
            out.extend_from_slice(entry.dir.as_bytes());
            let f = entry.family.unwrap_or(Family {
                member: 0,
                capacity: 0,
                rollover: Rollover::Refuse,
            });
            out.extend_from_slice(&f.member.to_le_bytes());
            out.extend_from_slice(&f.capacity.to_le_bytes());
            out.push(rollover_byte(f.rollover));
        }
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
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
