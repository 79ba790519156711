//! The names of the store's files and directories in its directory
//! (docs/file-format.md, "Directory"), as [`Layout`] spells them; the
//! layer above adds its own.

use crate::Layout;

/// What the store is: the file that makes a directory a store.
pub const META: &str = Layout::META;
/// `cairn.meta` being written at creation.
pub const META_TMP: &str = Layout::META_TMP;
/// The writers' lock file.
pub const LOCK: &str = Layout::LOCK;
/// The directory of the log files (level 0).
pub const LOG_DIR: &str = Layout::LOG_DIR;
/// The directory of the level files.
pub const LEVELS_DIR: &str = Layout::LEVELS_DIR;
/// The published checkpoint's name in the store directory.
pub const CHECKPOINT: &str = Layout::CHECKPOINT;
/// A checkpoint being written (removed at open: never valid).
pub const CHECKPOINT_TMP: &str = Layout::CHECKPOINT_TMP;
/// The block-tagged heads file.
pub const HEADS: &str = Layout::HEADS;
/// The heads file being rewritten (removed at open: never valid).
pub const HEADS_TMP: &str = Layout::HEADS_TMP;
/// The verified record (advisory; see docs/file-format.md).
pub const VERIFIED: &str = Layout::VERIFIED;
/// The verified record being written.
pub const VERIFIED_TMP: &str = Layout::VERIFIED_TMP;
