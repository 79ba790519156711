//! Where everything is in a store's directory (docs/file-format.md,
//! "Directory"): every file and directory name, the flag bits of
//! `cairn.meta`, and every byte offset computed from the format's sizes.
//! Callers ask a [`Layout`] for a path or an offset instead of joining
//! names or multiplying by the node size themselves; the byte layouts of
//! headers, frames and records stay in `format.rs`.

use std::path::{Path, PathBuf};

use crate::error::StoredChildren;
use crate::format::{self, FRAME_LEN, HEAD_RECORD_LEN, HEADER_LEN, HEADS_HEADER_LEN, StoreMeta};

/// The places of a store's files and of the nodes, frames and records in
/// them, for one directory and one log file size.
///
/// ```
/// use std::path::Path;
/// use cairn_core::{Arity, HashKind, TreeConfig};
/// use cairn_store::{Layout, StoreMeta};
///
/// let meta = StoreMeta {
///     tree: TreeConfig::new(Arity::new(2)?, HashKind::Blake3),
///     log_shift: 10,
///     store_id: 1,
///     flags: 0,
///     mutable: None,
/// };
/// let layout = Layout::new("db", &meta);
/// // Leaf 1025 is the second leaf of the second log file.
/// assert_eq!(
///     layout.node_location(0, 1025),
///     (Path::new("db/log/000000000001.log").to_path_buf(), 4096 + 32),
/// );
/// assert_eq!(layout.stored_node_at(&layout.level_file(3), 4096 + 64), Some((3, 2)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    dir: PathBuf,
    log_file_leaves: u64,
}

impl Layout {
    /// What the store is: the file that makes a directory a store.
    pub const META: &str = "cairn.meta";
    /// `cairn.meta` being written at creation.
    pub const META_TMP: &str = "cairn.meta.tmp";
    /// The writers' lock file.
    pub const LOCK: &str = "LOCK";
    /// The directory of the log files (level 0).
    pub const LOG_DIR: &str = "log";
    /// The directory of the level files (levels 1 and up).
    pub const LEVELS_DIR: &str = "levels";
    /// The published checkpoint.
    pub const CHECKPOINT: &str = "checkpoint";
    /// A checkpoint being written (never valid: removed at open).
    pub const CHECKPOINT_TMP: &str = "checkpoint.tmp";
    /// The block-tagged heads.
    pub const HEADS: &str = "heads";
    /// The heads file being rewritten in the current version (removed at
    /// open: never valid).
    pub const HEADS_TMP: &str = "heads.tmp";
    /// The verified record: which files were verified up to where, and
    /// their identity then (advisory).
    pub const VERIFIED: &str = "verified";
    /// The verified record being written.
    pub const VERIFIED_TMP: &str = "verified.tmp";

    /// `cairn.meta` flag bit 0: the layer above keeps a nullifier set
    /// (the store itself does not read it).
    pub const FLAG_NULLIFIER_SET: u64 = 1;
    /// `cairn.meta` flag bit 1: only an explicit finalization finalizes
    /// leaves (without it, every checkpoint finalizes what it covers).
    pub const FLAG_EXPLICIT_FINALITY: u64 = 1 << 1;
    /// `cairn.meta` flag bit 2: the store was created by a build of format
    /// 2, so its first log file and its checkpoint exist from creation on
    /// (set by the store itself; not a setting).
    pub const FLAG_FORMAT_2: u64 = 1 << 2;
    /// `cairn.meta` flag bit 3: the store was created without its files
    /// (`log/`, `levels/`, the first log file, the checkpoint): it makes
    /// them at its first write, the checkpoint at size 0 before the
    /// first log file, so an empty store is its directory and
    /// `cairn.meta` alone (a tree of a database of several). Set at
    /// creation by the caller; a record of the store, not a setting.
    pub const FLAG_LAZY_FILES: u64 = 1 << 3;
    /// The flag bits that record how the store was made rather than how
    /// it is used: an open's config need not repeat them.
    pub const FLAGS_OF_THE_STORE: u64 = Layout::FLAG_FORMAT_2 | Layout::FLAG_LAZY_FILES;

    /// Bytes per node (a leaf is a node of level 0).
    pub const NODE_LEN: u64 = 32;

    /// The layout of the store in `dir` described by `meta`.
    pub fn new(dir: impl Into<PathBuf>, meta: &StoreMeta) -> Layout {
        Layout {
            dir: dir.into(),
            log_file_leaves: meta.log_file_leaves(),
        }
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Leaves per log file.
    pub fn log_file_leaves(&self) -> u64 {
        self.log_file_leaves
    }

    /// `cairn.meta`.
    pub fn meta(&self) -> PathBuf {
        self.dir.join(Layout::META)
    }

    /// The writers' lock file.
    pub fn lock(&self) -> PathBuf {
        self.dir.join(Layout::LOCK)
    }

    /// The directory of the log files.
    pub fn log_dir(&self) -> PathBuf {
        self.dir.join(Layout::LOG_DIR)
    }

    /// The directory of the level files.
    pub fn levels_dir(&self) -> PathBuf {
        self.dir.join(Layout::LEVELS_DIR)
    }

    /// The published checkpoint.
    pub fn checkpoint(&self) -> PathBuf {
        self.dir.join(Layout::CHECKPOINT)
    }

    /// A checkpoint being written.
    pub fn checkpoint_tmp(&self) -> PathBuf {
        self.dir.join(Layout::CHECKPOINT_TMP)
    }

    /// The block-tagged heads file.
    pub fn heads(&self) -> PathBuf {
        self.dir.join(Layout::HEADS)
    }

    /// The heads file being rewritten.
    pub fn heads_tmp(&self) -> PathBuf {
        self.dir.join(Layout::HEADS_TMP)
    }

    /// The verified record.
    pub fn verified(&self) -> PathBuf {
        self.dir.join(Layout::VERIFIED)
    }

    /// The verified record being written.
    pub fn verified_tmp(&self) -> PathBuf {
        self.dir.join(Layout::VERIFIED_TMP)
    }

    /// The sums file of `level` (0 for the leaves in the log files).
    pub fn sums_file(&self, level: u32) -> PathBuf {
        self.levels_dir().join(format::sums_name(level))
    }

    /// Log file `number`.
    pub fn log_file(&self, number: u64) -> PathBuf {
        self.log_dir().join(format::log_name(number))
    }

    /// The level file of `level` (1 and up).
    pub fn level_file(&self, level: u32) -> PathBuf {
        self.levels_dir().join(format::level_name(level))
    }

    /// The byte offset of the `index`-th node of a log or level file
    /// (nodes follow the file's header).
    pub const fn node_offset(index: u64) -> u64 {
        HEADER_LEN + Layout::NODE_LEN * index
    }

    /// The length of a log or level file holding `nodes` nodes (and no
    /// frames).
    pub const fn nodes_len(nodes: u64) -> u64 {
        Layout::node_offset(nodes)
    }

    /// The log file holding leaf `index`, and the leaf's byte offset in it.
    pub fn leaf_location(&self, index: u64) -> (u64, u64) {
        let file = index / self.log_file_leaves;
        (
            file,
            Layout::node_offset(index - file * self.log_file_leaves),
        )
    }

    /// Where the frame region of a log file starts (after its leaves).
    pub fn frames_offset(&self) -> u64 {
        Layout::node_offset(self.log_file_leaves)
    }

    /// The byte offset of frame slot `slot` of a log file.
    pub fn frame_offset(&self, slot: u64) -> u64 {
        self.frames_offset() + FRAME_LEN * slot
    }

    /// The byte offset of record `index` of the heads file.
    pub const fn head_record_offset(index: u64) -> u64 {
        HEADS_HEADER_LEN + HEAD_RECORD_LEN * index
    }

    /// Where node `index` of `level` is stored: its file and byte offset
    /// (level 0 in the log files, the levels above in the level files).
    pub fn node_location(&self, level: u32, index: u64) -> (PathBuf, u64) {
        if level == 0 {
            let (file, offset) = self.leaf_location(index);
            (self.log_file(file), offset)
        } else {
            (self.level_file(level), Layout::node_offset(index))
        }
    }

    /// Where the children of node `index` of `level` (1 and up) are in a
    /// tree of `size` leaves; `None` for a leaf.
    pub fn children_of(
        &self,
        arity: cairn_core::Arity,
        size: u64,
        level: u32,
        index: u64,
    ) -> Option<StoredChildren> {
        let below = level.checked_sub(1)?;
        let first = index * arity.as_u64();
        let end = (first + arity.as_u64()).min(cairn_core::shape::level_len(size, arity, below));
        let (file, offset) = self.node_location(below, first);
        Some(StoredChildren {
            level: below,
            first,
            end,
            file,
            offset,
        })
    }

    /// The level and index of the node a level file holds at `offset`, if
    /// `path` names a level file and `offset` is past its header: the
    /// inverse of [`Layout::node_location`] for levels 1 and up.
    pub fn stored_node_at(&self, path: &Path, offset: u64) -> Option<(u32, u64)> {
        let level = format::parse_level_name(path.file_name()?.to_str()?)?;
        Some((level, offset.checked_sub(HEADER_LEN)? / Layout::NODE_LEN))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_core::{Arity, HashKind, TreeConfig};

    fn layout(log_shift: u8) -> Layout {
        let meta = StoreMeta {
            tree: TreeConfig::new(Arity::new(4).unwrap(), HashKind::Blake3),
            log_shift,
            store_id: 1,
            flags: 0,
            mutable: None,
        };
        Layout::new("/db", &meta)
    }

    #[test]
    fn node_locations_and_stored_nodes_are_inverse_for_levels_above_zero() {
        let layout = layout(10);
        for (level, index) in [(1, 0), (1, 7), (5, 1 << 20)] {
            let (path, offset) = layout.node_location(level, index);
            assert_eq!(layout.stored_node_at(&path, offset), Some((level, index)));
        }
        assert_eq!(layout.stored_node_at(&layout.checkpoint(), 4096), None);
        assert_eq!(
            layout.stored_node_at(&layout.level_file(1), 10),
            None,
            "inside the header"
        );
    }

    #[test]
    fn leaves_wrap_to_the_next_log_file_and_frames_follow_the_leaves() {
        let layout = layout(10);
        assert_eq!(layout.leaf_location(1023), (0, 4096 + 32 * 1023));
        assert_eq!(layout.leaf_location(1024), (1, 4096));
        assert_eq!(layout.frames_offset(), 4096 + 32 * 1024);
        assert_eq!(layout.frame_offset(2), 4096 + 32 * 1024 + 2 * FRAME_LEN);
        assert_eq!(
            layout.log_file(1),
            Path::new("/db/log/000000000001.log").to_path_buf()
        );
        assert_eq!(
            layout.level_file(2),
            Path::new("/db/levels/level-02.nodes").to_path_buf()
        );
    }
}
