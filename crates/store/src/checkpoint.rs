//! Checkpoints: the final nodes of the upper levels appended to the level
//! files and the sums of every new whole page of every level (the leaves'
//! included) to the sums files, then a new `checkpoint` published by
//! write, fsync, rename, fsync of the directory (docs/file-format.md,
//! "Durability order" 4). Nothing here runs under the tree's lock: it
//! writes from a [`Snapshot`].

use cairn_core::cast::level_number;
use cairn_core::cast::to_usize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairn_core::Snapshot;
use cairn_core::level::Level;
use rayon::prelude::*;

use crate::error::{Result, StoreError};
use crate::format::{
    self, CheckpointMeta, Integrity, LogPosition, PAGE_NODES, SUM_LEN, StoreMeta, sum_offset,
};
use crate::fs::{Fs, FsFile, OpenMode};
use crate::layout::Layout;

/// What the last published checkpoint covers, and the open level files.
#[derive(Debug, Default)]
pub(crate) struct Checkpoints {
    /// The last published checkpoint, if any.
    pub last: Option<CheckpointMeta>,
    /// Open level files, by level (index 0 unused: level 0 is the log).
    pub files: Vec<Option<Arc<dyn FsFile>>>,
    /// Open sums files, by level (level 0's included).
    pub sums: Vec<Option<Arc<dyn FsFile>>>,
    /// Per level, how many leading segments are served from mappings.
    pub tiered: Vec<usize>,
    /// Whole pages of stored nodes the open read and checked against their
    /// sums, and those the verified record vouched for.
    pub pages_checked: u64,
    pub pages_vouched: u64,
}

impl Checkpoints {
    /// Final nodes of `level` already in its file.
    pub fn published_len(&self, level: usize) -> u64 {
        self.last
            .as_ref()
            .and_then(|meta| meta.levels.get(level))
            .map_or(0, |&(final_len, _)| final_len)
    }

    /// Whole pages of `level` whose sums are published (none before a
    /// checkpoint of the version that has sums).
    pub fn published_pages(&self, level: usize) -> u64 {
        match self.last.as_ref().map(|c| c.integrity.is_some()) {
            Some(true) => self.published_len(level) / PAGE_NODES,
            _ => 0,
        }
    }

    /// The sums file of `level` (opening or creating it; a file no
    /// published checkpoint names a page of gets a fresh header).
    pub fn sums_file(
        &mut self,
        fs: &dyn Fs,
        dir: &Path,
        meta: &StoreMeta,
        level: usize,
    ) -> Result<Arc<dyn FsFile>> {
        if self.sums.len() <= level {
            self.sums.resize(level + 1, None);
        }
        if let Some(file) = &self.sums[level] {
            return Ok(Arc::clone(file));
        }
        let layout = Layout::new(dir, meta);
        let path = layout.sums_file(level_number(level));
        let file = open_or_create(fs, &path)?;
        if self.published_pages(level) == 0 {
            write_header(
                fs,
                &*file,
                &path,
                &layout.levels_dir(),
                &format::sums_header(meta, level_number(level)),
            )?;
        }
        self.sums[level] = Some(Arc::clone(&file));
        Ok(file)
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
        let path = layout.level_file(level_number(level));
        let file = open_or_create(fs, &path)?;
        if self.published_len(level) == 0 {
            write_header(
                fs,
                &*file,
                &path,
                &layout.levels_dir(),
                &format::level_header(meta, level_number(level)),
            )?;
        }
        self.files[level] = Some(Arc::clone(&file));
        Ok(file)
    }
}

/// Opens `path` for writing, creating it if missing. One left by a
/// checkpoint that crashed before publishing (or by this store's earlier
/// checkpoints) is reused.
fn open_or_create(fs: &dyn Fs, path: &Path) -> Result<Arc<dyn FsFile>> {
    let exists = fs
        .exists(path)
        .map_err(|e| StoreError::io("stat", path, e))?;
    let (mode, op) = if exists {
        (OpenMode::Existing, "open")
    } else {
        (OpenMode::CreateNew, "create")
    };
    Ok(Arc::from(
        fs.open(path, mode)
            .map_err(|e| StoreError::io(op, path, e))?,
    ))
}

/// Writes a file's header and makes it durable, the directory entry too.
fn write_header(
    fs: &dyn Fs,
    file: &dyn FsFile,
    path: &Path,
    dir: &Path,
    header: &[u8],
) -> Result<()> {
    file.write_at(header, 0)
        .map_err(|e| StoreError::io("write", path, e))?;
    file.sync_data()
        .map_err(|e| StoreError::io("fdatasync", path, e))?;
    fs.sync_dir(dir)
        .map_err(|e| StoreError::io("fsync", dir, e))
}

/// The CRC-32C of nodes `first..end` of `nodes` (a page or less).
pub(crate) fn page_crc(nodes: &Level, first: u64, end: u64) -> u32 {
    let mut crc = 0;
    let mut at = first;
    while at < end {
        let run = nodes.run_from(to_usize(at));
        let take = to_usize((run.len() as u64).min(end - at));
        crc = crc32c::crc32c_append(crc, run[..take].as_flattened());
        at += take as u64;
    }
    crc
}

/// The sums of whole pages `from..to` of `nodes`, as the sums file holds them.
fn page_sums(nodes: &Level, from: u64, to: u64) -> Vec<u8> {
    (from..to)
        .into_par_iter()
        .map(|page| page_crc(nodes, page * PAGE_NODES, (page + 1) * PAGE_NODES))
        .collect::<Vec<u32>>()
        .into_iter()
        .flat_map(u32::to_le_bytes)
        .collect()
}

/// What a checkpoint records beside the tree: finality, the rollback
/// epoch and the count of block-tagged heads at its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Marks {
    /// The value the first frame after the checkpoint carries as `prev`.
    pub chain: u32,
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
    let layout = Layout::new(dir, meta);
    let mut written: Vec<(PathBuf, Arc<dyn FsFile>)> = Vec::new();
    let mut partial_pages = Vec::with_capacity(depth_levels);
    for level in 0..depth_levels {
        let nodes = snapshot.final_nodes(level_number(level));
        let to = nodes.len() as u64;
        if level > 0 {
            let from = state.published_len(level);
            if to > from {
                let file = state.level_file(fs, dir, meta, level)?;
                let path = layout.level_file(level_number(level));
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
        }
        // The sums of the pages completed since the last checkpoint; the
        // partial last page's goes into the checkpoint itself.
        let pages = to / PAGE_NODES;
        let from_page = state.published_pages(level).min(pages);
        if pages > from_page {
            let file = state.sums_file(fs, dir, meta, level)?;
            let path = layout.sums_file(level_number(level));
            let sums = page_sums(nodes, from_page, pages);
            debug_assert_eq!(sums.len() as u64, (pages - from_page) * SUM_LEN);
            file.write_at(&sums, sum_offset(from_page))
                .map_err(|e| StoreError::io("write", &path, e))?;
            written.push((path, file));
        }
        partial_pages.push(page_crc(nodes, pages * PAGE_NODES, to));
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
        integrity: Some(Integrity {
            chain: marks.chain,
            partial_pages,
        }),
    };
    let bytes = checkpoint.encode(meta.store_id);
    assert_publishable(&checkpoint, meta, &bytes);
    publish(fs, dir, &bytes)?;
    state.last = Some(checkpoint.clone());
    Ok(checkpoint)
}

/// Publishes the checkpoint a store is created with: number 0, no leaves,
/// the log resuming at its first frame. From then on a store of this
/// format always has a checkpoint, so a missing one is damage.
pub(crate) fn create(
    fs: &dyn Fs,
    dir: &Path,
    meta: &StoreMeta,
    state: &mut Checkpoints,
) -> Result<()> {
    publish_initial(fs, dir, meta)?;
    state.last = Some(initial());
    Ok(())
}

/// The checkpoint a store starts from: size 0, nothing finalized, no
/// rollback, the log resuming at its first frame.
pub(crate) fn initial() -> CheckpointMeta {
    CheckpointMeta {
        number: 0,
        size: 0,
        resume: LogPosition {
            file: 0,
            slot: 0,
            seq: 1,
        },
        levels: Vec::new(),
        finalized: 0,
        epoch: 0,
        heads: 0,
        rollback_floor: u64::MAX,
        integrity: Some(Integrity {
            chain: 0,
            partial_pages: Vec::new(),
        }),
    }
}

/// Whether `checkpoint` is the one a store starts from (number 0 is
/// published only at creation, or at a lazy store's first write).
pub(crate) fn is_initial(checkpoint: &CheckpointMeta) -> bool {
    checkpoint.number == 0 && checkpoint.size == 0
}

/// Publishes [`initial`] as the store's checkpoint.
pub(crate) fn publish_initial(fs: &dyn Fs, dir: &Path, meta: &StoreMeta) -> Result<()> {
    let checkpoint = initial();
    let bytes = checkpoint.encode(meta.store_id);
    assert_publishable(&checkpoint, meta, &bytes);
    publish(fs, dir, &bytes)
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
    assert!(
        checkpoint
            .integrity
            .as_ref()
            .is_none_or(|i| i.partial_pages.len() == checkpoint.levels.len()),
        "a checkpoint holds one partial page CRC per level: {checkpoint:?}"
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
    // Pair assertion after reading: every byte of a checkpoint of version
    // 2 or 3 is a field, reserved zero or the CRC, so what decoded encodes
    // to the same bytes (version 1 is converted, not copied).
    if format::checkpoint_version(&bytes) >= 2 {
        assert_eq!(
            checkpoint.encode(meta.store_id),
            bytes,
            "a checkpoint must encode to the bytes it was read from"
        );
    }
    Ok(Some(checkpoint))
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
            mutable: None,
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
            integrity: Some(Integrity {
                chain: 0,
                partial_pages: vec![9, 2, 0],
            }),
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
            integrity: Some(Integrity {
                chain: 0,
                partial_pages: Vec::new(),
            }),
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
        if let Some(integrity) = &mut extra_top.integrity {
            integrity.partial_pages.push(0);
        }
        assert!(
            check(&extra_top).is_err(),
            "a level above the single top node"
        );
        let mut no_top = ten_leaves();
        no_top.levels.pop();
        if let Some(integrity) = &mut no_top.integrity {
            integrity.partial_pages.pop();
        }
        assert!(check(&no_top).is_err(), "a top level of three nodes");
        let beyond = CheckpointMeta {
            finalized: 11,
            ..ten_leaves()
        };
        assert!(check(&beyond).is_err(), "finalized above the size");
        let mut short_pages = ten_leaves();
        if let Some(integrity) = &mut short_pages.integrity {
            integrity.partial_pages.pop();
        }
        assert!(
            check(&short_pages).is_err(),
            "a level without its partial page"
        );
    }
}
