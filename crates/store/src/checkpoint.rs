//! Checkpoints: the final nodes of the upper levels appended to the level
//! files, then a new `checkpoint` published by write, fsync, rename, fsync
//! of the directory (docs/file-format.md, "Durability order" 4). Nothing
//! here runs under the tree's lock: it writes from a [`Snapshot`].

use cairn_core::cast::level_number;
use cairn_core::cast::to_usize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairn_core::Snapshot;

use crate::error::{Result, StoreError};
use crate::format::{self, CheckpointMeta, LogPosition, StoreMeta};
use crate::fs::{Fs, FsFile, OpenMode};
use crate::layout::Layout;

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
        let layout = Layout::new(dir, meta);
        let levels_dir = layout.levels_dir();
        let path = layout.level_file(level_number(level));
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
            file.write_at(&format::level_header(meta, level_number(level)), 0)
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
        let nodes = snapshot.final_nodes(level_number(level));
        let from = state.published_len(level);
        let to = nodes.len() as u64;
        if to <= from {
            continue;
        }
        let file = state.level_file(fs, dir, meta, level)?;
        let path = Layout::new(dir, meta).level_file(level_number(level));
        let mut at = from;
        while at < to {
            let run = nodes.run_from(to_usize(at));
            let take = to_usize((run.len() as u64).min(to - at));
            file.write_at(run[..take].as_flattened(), Layout::node_offset(at))
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
                    snapshot.final_nodes(level_number(level)).len() as u64,
                    snapshot.edge()[level].1,
                )
            })
            .collect(),
        finalized: marks.finalized,
        epoch: marks.epoch,
        heads: marks.heads,
        rollback_floor: marks.rollback_floor,
    };
    let bytes = checkpoint.encode(meta.store_id);
    assert_publishable(&checkpoint, meta, &bytes);
    publish(fs, dir, &bytes)?;
    state.last = Some(checkpoint.clone());
    Ok(checkpoint)
}

/// Pair assertion before publishing: the checkpoint has the shape of a
/// tree of its size (what `LeanImt::from_levels` requires when recovery
/// reopens it: level 0 keeps `size - 1` final leaves, each level above one
/// node per group of the level below, a single top node), its marks are in
/// range, and its bytes decode to it.
fn assert_publishable(checkpoint: &CheckpointMeta, meta: &StoreMeta, bytes: &[u8]) {
    let arity = meta.tree.arity.get() as u64;
    let fixed_depth = meta.tree.kind.fixed_depth();
    let mut want = checkpoint.size;
    for (level, &(final_len, _)) in checkpoint.levels.iter().enumerate() {
        assert_eq!(
            final_len + 1,
            want,
            "checkpoint level {level} keeps {final_len} final nodes of {want}"
        );
        // A fixed-depth tree keeps one node per level from its Lean top up
        // to its depth (each its padded parent); a Lean tree stops there.
        assert!(
            want > 1 || level + 1 == checkpoint.levels.len() || fixed_depth.is_some(),
            "checkpoint level {level} has one node but is not the top"
        );
        want = want.div_ceil(arity);
    }
    if let (Some(depth), true) = (fixed_depth, checkpoint.size > 0) {
        assert_eq!(
            checkpoint.levels.len(),
            depth as usize + 1,
            "a fixed-depth checkpoint keeps every level up to its depth"
        );
    }
    assert!(
        checkpoint
            .levels
            .last()
            .is_none_or(|&(final_len, _)| final_len == 0),
        "a checkpoint's top level is one node: {:?}",
        checkpoint.levels.last()
    );
    assert_eq!(
        checkpoint.levels.is_empty(),
        checkpoint.size == 0,
        "a checkpoint has levels exactly when it has leaves"
    );
    assert!(
        checkpoint.finalized <= checkpoint.size && checkpoint.resume.seq >= 1,
        "checkpoint marks out of range: {checkpoint:?}"
    );
    assert_eq!(
        CheckpointMeta::decode(bytes, meta.store_id).as_ref(),
        Ok(checkpoint),
        "a checkpoint must read back as written"
    );
}

/// Atomically replaces `checkpoint` (see [`crate::replace::replace_file`]).
fn publish(fs: &dyn Fs, dir: &Path, bytes: &[u8]) -> Result<()> {
    crate::replace::replace_file(
        fs,
        dir,
        Layout::CHECKPOINT_TMP,
        Layout::CHECKPOINT,
        |file, path| {
            file.write_at(bytes, 0)
                .map_err(|e| StoreError::io("write", path, e))
        },
    )
}

/// Reads the published checkpoint, if any.
pub(crate) fn read(fs: &dyn Fs, dir: &Path, meta: &StoreMeta) -> Result<Option<CheckpointMeta>> {
    let path = Layout::new(dir, meta).checkpoint();
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
    let mut bytes = vec![0u8; to_usize(len)];
    file.read_exact_at(&mut bytes, 0)
        .map_err(|e| StoreError::io("read", &path, e))?;
    let checkpoint = CheckpointMeta::decode(&bytes, meta.store_id)
        .map_err(|why| StoreError::corrupt(&path, 0, why))?;
    // Pair assertion after reading: every byte of a current checkpoint is
    // a field or the CRC, so what decoded encodes to the same bytes (an
    // older version is converted, not copied).
    if checkpoint_version(&bytes) == format::CHECKPOINT_VERSION {
        assert_eq!(
            checkpoint.encode(meta.store_id),
            bytes,
            "a checkpoint must encode to the bytes it was read from"
        );
    }
    Ok(Some(checkpoint))
}

/// The version field of checkpoint bytes that decoded.
fn checkpoint_version(bytes: &[u8]) -> u32 {
    u32::from_le_bytes(
        bytes[8..12]
            .try_into()
            .expect("a decoded checkpoint has a version"),
    )
}

#[cfg(test)]
mod tests {
    use cairn_core::{Arity, HashKind, TreeConfig};

    use super::*;

    fn meta() -> StoreMeta {
        StoreMeta {
            tree: TreeConfig::new(Arity::new(4).unwrap(), HashKind::Blake3),
            log_shift: 12,
            store_id: 7,
            flags: 0,
        }
    }

    /// A checkpoint of 10 leaves at arity 4: levels of 10, 3 and 1 nodes.
    fn ten_leaves() -> CheckpointMeta {
        CheckpointMeta {
            number: 1,
            size: 10,
            resume: LogPosition {
                file: 0,
                slot: 1,
                seq: 2,
            },
            levels: vec![(9, [1; 32]), (2, [2; 32]), (0, [3; 32])],
            finalized: 10,
            epoch: 0,
            heads: 0,
            rollback_floor: u64::MAX,
        }
    }

    fn check(checkpoint: &CheckpointMeta) -> std::thread::Result<()> {
        let bytes = checkpoint.encode(meta().store_id);
        std::panic::catch_unwind(|| assert_publishable(checkpoint, &meta(), &bytes))
    }

    #[test]
    fn only_a_checkpoint_with_the_shape_of_its_size_is_published() {
        assert!(check(&ten_leaves()).is_ok());
        let empty = CheckpointMeta {
            size: 0,
            levels: Vec::new(),
            finalized: 0,
            ..ten_leaves()
        };
        assert!(check(&empty).is_ok());
        let mut wrong_count = ten_leaves();
        wrong_count.levels[1].0 = 3;
        assert!(
            check(&wrong_count).is_err(),
            "level 1 of 10 leaves has 3 nodes"
        );
        let mut extra_top = ten_leaves();
        extra_top.levels.push((0, [4; 32]));
        assert!(
            check(&extra_top).is_err(),
            "a level above the single top node"
        );
        let mut no_top = ten_leaves();
        no_top.levels.pop();
        assert!(check(&no_top).is_err(), "a top level of three nodes");
        let beyond = CheckpointMeta {
            finalized: 11,
            ..ten_leaves()
        };
        assert!(check(&beyond).is_err(), "finalized above the size");
    }
}
