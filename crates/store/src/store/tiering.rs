//! Tiering: complete segments of final nodes served from read-only
//! mappings of the files that hold them (the log for level 0, the level
//! files above), so memory holds only what can still change. Only
//! finalized nodes are mapped: a rollback never rewrites their bytes.

use cairn_core::cast::level_number;
use cairn_core::cast::to_usize;
use std::path::Path;
use std::sync::Arc;

use cairn_core::Hash;
use cairn_core::level::{NodeSource, SEGMENT_LEN};

use super::Inner;
use crate::checkpoint::Checkpoints;
use crate::error::{Result, StoreError};
use crate::format::StoreMeta;
use crate::fs::{FsFile, MappedNodes};
use crate::layout::Layout;

/// Read-only file mappings standing in for a tiered segment.
#[derive(Debug)]
struct Tiered(Arc<dyn MappedNodes>);

impl NodeSource for Tiered {
    fn nodes(&self) -> &[Hash] {
        self.0.nodes()
    }
}

impl Inner {
    /// Serves complete final segments of cold levels from mappings of the
    /// published files (after a checkpoint).
    pub(super) fn tier(&self, checkpoints: &mut Checkpoints) -> Result<()> {
        let Some(last) = checkpoints.last.clone() else {
            return Ok(());
        };
        let cold = (self.config.tier_below as usize).min(last.levels.len());
        let log_files = self.log.lock().files().to_vec();
        let mut tiered_any = false;
        for level in 0..cold {
            if checkpoints.tiered.len() <= level {
                checkpoints.tiered.resize(level + 1, 0);
            }
            // Only finalized nodes are mapped: a rollback above them later
            // writes the bytes past it again.
            let final_len = mappable(&self.meta, last.finalized, level).min(last.levels[level].0);
            let complete = to_usize(final_len) / SEGMENT_LEN;
            while checkpoints.tiered[level] < complete {
                let segment = checkpoints.tiered[level];
                let source = if level == 0 {
                    match map_leaves(&self.layout, &log_files, segment)? {
                        Some(source) => source,
                        None => break,
                    }
                } else {
                    let file = checkpoints.level_file(&*self.fs, &self.dir, &self.meta, level)?;
                    map_segment(
                        &*file,
                        segment,
                        &self.layout.level_file(level_number(level)),
                    )?
                };
                self.tree
                    .lock()
                    .tier(level_number(level), segment, source)
                    .expect("a published segment is frozen");
                checkpoints.tiered[level] += 1;
                tiered_any = true;
            }
        }
        if tiered_any {
            // The published snapshot still shares the memory the tiered
            // segments replaced: publish a fresh one so that memory goes.
            let mut tree = self.tree.lock();
            self.published.store(Arc::new(tree.snapshot()));
        }
        Ok(())
    }
}

/// How many nodes of `level` may be mapped from files: the final nodes of
/// the tree of `finalized` leaves (a rollback never reaches below them, so
/// their bytes are never written again).
pub(crate) fn mappable(meta: &StoreMeta, finalized: u64, level: usize) -> u64 {
    cairn_core::shape::level_len(finalized, meta.tree.arity, level_number(level)).saturating_sub(1)
}

/// A mapping of the leaves of level-0 segment `segment`, if the log files
/// are large enough to hold whole segments.
pub(super) fn map_leaves(
    layout: &Layout,
    files: &[Arc<dyn FsFile>],
    segment: usize,
) -> Result<Option<Arc<dyn NodeSource>>> {
    let per_file = layout.log_file_leaves();
    if per_file < SEGMENT_LEN as u64 {
        return Ok(None);
    }
    let first = (segment * SEGMENT_LEN) as u64;
    let (file, offset) = layout.leaf_location(first);
    let Some(handle) = files.get(to_usize(file)) else {
        return Ok(None);
    };
    let map = handle
        .map_nodes(offset, SEGMENT_LEN)
        .map_err(|e| StoreError::io("map", layout.log_file(file), e))?;
    Ok(Some(Arc::new(Tiered(map))))
}

pub(super) fn map_segment(
    file: &dyn FsFile,
    segment: usize,
    path: &Path,
) -> Result<Arc<dyn NodeSource>> {
    let offset = Layout::node_offset((segment * SEGMENT_LEN) as u64);
    let map = file
        .map_nodes(offset, SEGMENT_LEN)
        .map_err(|e| StoreError::io("map", path, e))?;
    Ok(Arc::new(Tiered(map)))
}
