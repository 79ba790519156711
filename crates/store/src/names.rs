//! The names of the store's files and directories in its directory
//! (docs/file-format.md, "Directory"); the layer above adds its own.

pub use crate::checkpoint::{CHECKPOINT, CHECKPOINT_TMP, LEVELS_DIR};
pub use crate::heads::HEADS;
pub use crate::store::{LOCK, LOG_DIR, META, META_TMP};
