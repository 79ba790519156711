//! Checkpoints: the final nodes of the upper levels appended to the level
//! files, then a new `checkpoint` published by write, fsync, rename, fsync
//! of the directory (docs/file-format.md, "Durability order" 4). Nothing
//! here runs under the tree's lock: it writes from a [`Snapshot`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairn_core::Snapshot;

use crate::error::{Result, StoreError};
use crate::format::{self, CheckpointMeta, HEADER_LEN, LogPosition, StoreMeta};
use crate::fs::{Fs, FsFile, OpenMode};

/// File names in the store directory.
pub(crate) const CHECKPOINT: &str = "checkpoint";
pub(crate) const CHECKPOINT_TMP: &str = "checkpoint.tmp";
pub(crate) const LEVELS_DIR: &str = "levels";

/// What the last published checkpoint covers, and the open level files.
#[derive(Debug, Default)]
pub(crate) struct Checkpoints {
    /// The last published checkpoint, if any.
    pub last: Option<CheckpointMeta>,
    /// Open level files, by level (index 0 unused: level 0 is the log).
    pub files: Vec<Option<Arc<dyn FsFile>>>,
    /// Per level, how many leading segments are served from mappings.
    pub tiered: Vec<usize>,
}

impl Checkpoints {
    /// Final nodes of `level` already in its file.
    pub fn published_len(&self, level: usize) -> u64 {
        self.last
            .as_ref()
            .and_then(|meta| meta.levels.get(level))
            .map_or(0, |&(final_len, _)| final_len)
    }

    /// The level file of `level` (opening or creating it).
    pub fn level_file(
        &mut self,
        fs: &dyn Fs,
        dir: &Path,
        meta: &StoreMeta,
        level: usize,
    ) -> Result<Arc<dyn FsFile>> {
        if self.files.len() <= level {
            self.files.resize(level + 1, None);
        }
        if let Some(file) = &self.files[level] {
            return Ok(Arc::clone(file));
        }
        let levels_dir = dir.join(LEVELS_DIR);
        let path = levels_dir.join(format::level_name(level as u32));
        let exists = fs
            .exists(&path)
            .map_err(|e| StoreError::io("stat", &path, e))?;
        let file: Arc<dyn FsFile> = if exists {
            // Left by a checkpoint that crashed before publishing (or by
            // this store's earlier checkpoints): reuse it, rewriting the header.
            Arc::from(
                fs.open(&path, OpenMode::Existing)
                    .map_err(|e| StoreError::io("open", &path, e))?,
            )
        } else {
            Arc::from(
                fs.open(&path, OpenMode::CreateNew)
                    .map_err(|e| StoreError::io("create", &path, e))?,
            )
        };
        if !exists || self.published_len(level) == 0 {
            file.write_at(&format::level_header(meta, level as u32), 0)
                .map_err(|e| StoreError::io("write", &path, e))?;
            file.sync_data()
                .map_err(|e| StoreError::io("fdatasync", &path, e))?;
            fs.sync_dir(&levels_dir)
                .map_err(|e| StoreError::io("fsync", &levels_dir, e))?;
        }
        self.files[level] = Some(Arc::clone(&file));
        Ok(file)
    }
}

/// What a checkpoint records beside the tree: finality, the rollback
/// epoch and the count of block-tagged heads at its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Marks {
    pub finalized: u64,
    pub epoch: u64,
    pub heads: u64,
    pub rollback_floor: u64,
}

/// Writes and publishes the checkpoint of `snapshot`, whose leaves are
/// durable in the log, which continues at `resume`. A snapshot smaller
/// than the last checkpoint (a rollback) writes no node: its final nodes
/// are a prefix of the published ones, and it publishes shorter lengths.
pub(crate) fn write(
    fs: &dyn Fs,
    dir: &Path,
    meta: &StoreMeta,
    state: &mut Checkpoints,
    snapshot: &Snapshot,
    resume: LogPosition,
    marks: Marks,
) -> Result<CheckpointMeta> {
    assert!(
        marks.finalized <= snapshot.size(),
        "finalizing {} of {} leaves",
        marks.finalized,
        snapshot.size()
    );
    let depth_levels = snapshot.edge().len();
    let mut written: Vec<(PathBuf, Arc<dyn FsFile>)> = Vec::new();
    for level in 1..depth_levels {
        let nodes = snapshot.final_nodes(level as u32);
        let from = state.published_len(level);
        let to = nodes.len() as u64;
        if to <= from {
            continue;
        }
        let file = state.level_file(fs, dir, meta, level)?;
        let path = dir.join(LEVELS_DIR).join(format::level_name(level as u32));
        let mut at = from;
        while at < to {
            let run = nodes.run_from(at as usize);
            let take = (run.len() as u64).min(to - at) as usize;
            file.write_at(run[..take].as_flattened(), HEADER_LEN + 32 * at)
                .map_err(|e| StoreError::io("write", &path, e))?;
            at += take as u64;
        }
        written.push((path, file));
    }
    for (path, file) in &written {
        file.sync_data()
            .map_err(|e| StoreError::io("fdatasync", path, e))?;
    }
    let checkpoint = CheckpointMeta {
        number: state.last.as_ref().map_or(1, |last| last.number + 1),
        size: snapshot.size(),
        resume,
        levels: (0..depth_levels)
            .map(|level| {
                (
                    snapshot.final_nodes(level as u32).len() as u64,
                    snapshot.edge()[level].1,
                )
            })
            .collect(),
        finalized: marks.finalized,
        epoch: marks.epoch,
        heads: marks.heads,
        rollback_floor: marks.rollback_floor,
    };
    publish(fs, dir, &checkpoint.encode(meta.store_id))?;
    state.last = Some(checkpoint.clone());
    Ok(checkpoint)
}

/// Atomically replaces `checkpoint` (see [`crate::replace::replace_file`]).
fn publish(fs: &dyn Fs, dir: &Path, bytes: &[u8]) -> Result<()> {
    crate::replace::replace_file(fs, dir, CHECKPOINT_TMP, CHECKPOINT, |file, path| {
        file.write_at(bytes, 0)
            .map_err(|e| StoreError::io("write", path, e))
    })
}

/// Reads the published checkpoint, if any.
pub(crate) fn read(fs: &dyn Fs, dir: &Path, meta: &StoreMeta) -> Result<Option<CheckpointMeta>> {
    let path = dir.join(CHECKPOINT);
    let Some(file) = crate::replace::open_published(fs, &path)? else {
        return Ok(None);
    };
    let len = file.len().map_err(|e| StoreError::io("stat", &path, e))?;
    if len > CheckpointMeta::MAX_LEN as u64 {
        return Err(StoreError::corrupt(
            &path,
            0,
            format!("{len} bytes, too long"),
        ));
    }
    let mut bytes = vec![0u8; len as usize];
    file.read_exact_at(&mut bytes, 0)
        .map_err(|e| StoreError::io("read", &path, e))?;
    CheckpointMeta::decode(&bytes, meta.store_id)
        .map(Some)
        .map_err(|why| StoreError::corrupt(&path, 0, why))
}
