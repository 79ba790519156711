//! The database directory's own files: the manifest and the journal read
//! and replaced whole, the journal opened for appending, and the lookups
//! that name a tree's directory without opening the database.

use std::path::{Path, PathBuf};

use cairn_store::StdFs;
use cairn_store::StoreError;
use cairn_store::fs::{Fs, OpenMode};
use cairn_store::replace::replace_file;

use super::journal::{self, Header, JOURNAL};
use super::manifest::{self, Entry, MANIFEST};
use super::{DEFAULT_TREE, ForestError, Writer};
use crate::config::DbConfig;
use crate::error::Result;

/// The stored configuration of a tree of a journaled database, run with
/// nothing in the background: only the database flushes its log.
pub(super) fn journaled_config(fs: &dyn Fs, dir: &Path) -> Result<DbConfig> {
    let mut config = crate::db::resolve_config(fs, dir, None)?;
    quiet(&mut config);
    Ok(config)
}

pub(super) fn quiet(config: &mut DbConfig) {
    config.store.flush_interval = None;
    config.store.seal_after = None;
    config.store.checkpoint = cairn_store::CheckpointPolicy::default();
}

pub(super) fn read_all(fs: &dyn Fs, path: &Path) -> Result<Vec<u8>> {
    let file = fs
        .open(path, OpenMode::ReadOnly)
        .map_err(|e| StoreError::io("open", path, e))?;
    let length = file.len().map_err(|e| StoreError::io("stat", path, e))?;
    let mut bytes = vec![0; usize::try_from(length).expect("64-bit")];
    file.read_exact_at(&mut bytes, 0)
        .map_err(|e| StoreError::io("read", path, e))?;
    Ok(bytes)
}

pub(super) fn write_manifest(fs: &dyn Fs, dir: &Path, entries: &[Entry]) -> Result<()> {
    let bytes = manifest::encode(entries);
    replace_file(fs, dir, manifest::MANIFEST_TMP, MANIFEST, |file, path| {
        file.write_at(&bytes, 0)
            .map_err(|e| StoreError::io("write", path, e))
    })?;
    Ok(())
}

pub(super) fn write_journal(fs: &dyn Fs, dir: &Path, header: &Header) -> Result<()> {
    let bytes = journal::encode_header(header);
    replace_file(fs, dir, journal::JOURNAL_TMP, JOURNAL, |file, path| {
        file.write_at(&bytes, 0)
            .map_err(|e| StoreError::io("write", path, e))
    })?;
    Ok(())
}

/// The journal opened for appending after its valid frames (a torn tail
/// overwritten with zeros, so no stale byte follows the next frame).
pub(super) fn open_writer(fs: &dyn Fs, dir: &Path) -> Result<Writer> {
    let path = dir.join(JOURNAL);
    let bytes = read_all(fs, &path)?;
    let (header, prev, at) = journal::decode_header(&bytes)?;
    let scanned = journal::scan(&bytes, at, header.first_seq, prev)?;
    let file = fs
        .open(&path, OpenMode::Existing)
        .map_err(|e| StoreError::io("open", &path, e))?;
    if scanned.end < bytes.len() {
        file.write_at(&vec![0; bytes.len() - scanned.end], scanned.end as u64)
            .and_then(|()| file.sync_data())
            .map_err(|e| StoreError::io("write", &path, e))?;
    }
    Ok(Writer {
        file,
        start: at as u64,
        end: scanned.end as u64,
        seq: scanned.next_seq,
        prev: scanned.prev,
    })
}

/// Whether `dir` holds a database of several trees (its manifest).
pub fn is_forest(dir: impl AsRef<Path>) -> bool {
    dir.as_ref().join(MANIFEST).is_file()
}

/// The trees of the database in `dir` and the directory of each, read
/// from its manifest without opening anything (a directory of the
/// single-tree layout: its one tree, `default`, at `dir`). What a reader
/// opens a tree read-only from: beside a running writer, a tree reads as
/// its own log holds it, which may trail the journal by the applier's
/// latency (and, after a crash, until the next writing open replays it).
pub fn tree_dirs(dir: impl AsRef<Path>) -> Result<Vec<(String, PathBuf)>> {
    let dir = dir.as_ref();
    let path = dir.join(MANIFEST);
    if !path.is_file() {
        if !dir.is_dir() {
            return Err(StoreError::Missing {
                path: dir.to_owned(),
            }
            .into());
        }
        if !crate::is_database(dir) {
            return Err(StoreError::NotAStore {
                path: dir.to_owned(),
            }
            .into());
        }
        return Ok(vec![(DEFAULT_TREE.to_owned(), dir.to_owned())]);
    }
    let entries = manifest::decode(&read_all(&StdFs, &path)?)?;
    Ok(entries
        .into_iter()
        .map(|e| (e.full_name(), dir.join(e.dir)))
        .collect())
}

/// The members of the family `name` names in the database in `dir`, each
/// with its member number and directory, in member order (for a tree of
/// no family: that tree alone, with no member number; for a member named
/// `NAME/k`: that member alone). Read from the manifest; a member a
/// rollback emptied is listed (its directory holds an empty tree).
pub fn family_dirs(
    dir: impl AsRef<Path>,
    name: &str,
) -> Result<Vec<(String, Option<u32>, PathBuf)>> {
    let dir = dir.as_ref();
    let wanted = name.strip_suffix("/0").unwrap_or(name);
    let path = dir.join(MANIFEST);
    if !path.is_file() {
        return Ok(vec![(
            wanted.to_owned(),
            None,
            tree_dir(dir, Some(wanted))?,
        )]);
    }
    let entries = manifest::decode(&read_all(&StdFs, &path)?)?;
    let Some(found) = entries.iter().find(|e| e.full_name() == wanted) else {
        return Ok(vec![(
            wanted.to_owned(),
            None,
            tree_dir(dir, Some(wanted))?,
        )]);
    };
    let member = found.family.map(|f| f.member);
    if member.is_none_or(|m| m > 0) {
        return Ok(vec![(wanted.to_owned(), member, dir.join(&found.dir))]);
    }
    let mut members: Vec<(String, Option<u32>, PathBuf)> = entries
        .iter()
        .filter(|e| e.name == found.name && e.family.is_some())
        .map(|e| {
            let member = e.family.map(|f| f.member);
            (e.full_name(), member, dir.join(&e.dir))
        })
        .collect();
    members.sort_by_key(|(_, member, _)| *member);
    Ok(members)
}

/// The directory of tree `name` of the database in `dir`, or of the tree
/// a front end means by no name: `default` if there is one, else the only
/// tree.
pub fn tree_dir(dir: impl AsRef<Path>, name: Option<&str>) -> Result<PathBuf> {
    let trees = tree_dirs(dir)?;
    let wanted = name.unwrap_or(DEFAULT_TREE);
    // Member 0 of a family is the family's own tree.
    let wanted = wanted.strip_suffix("/0").unwrap_or(wanted);
    if let Some((_, path)) = trees.iter().find(|(n, _)| n == wanted) {
        return Ok(path.clone());
    }
    match (name, trees.as_slice()) {
        (None, [(_, only)]) => Ok(only.clone()),
        _ => Err(ForestError::UnknownTree {
            name: wanted.to_owned(),
            known: trees
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        }
        .into()),
    }
}
