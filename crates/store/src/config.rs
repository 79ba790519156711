//! How a store is opened: what it is (stored at creation) and how it runs.

use std::time::Duration;

use cairn_core::TreeConfig;

/// `cairn.meta` flag bit 1: only an explicit finalize makes leaves final
/// (without it, every checkpoint finalizes what it covers). Chosen at
/// creation; see [`StoreConfig::flags`].
pub const FLAG_EXPLICIT_FINALITY: u64 = crate::Layout::FLAG_EXPLICIT_FINALITY;

/// Creates the store without its files until its first write; see
/// [`crate::Layout::FLAG_LAZY_FILES`].
pub const FLAG_LAZY_FILES: u64 = crate::Layout::FLAG_LAZY_FILES;

/// How many recent appends' roots are kept for lookups by value, by default.
pub const DEFAULT_ROOT_WINDOW: usize = 4096;

/// How long the log stays unsealed after its last commit, by default.
pub const DEFAULT_SEAL_AFTER: Duration = Duration::from_secs(1);

/// Default log file size: 2^21 leaves (64 MiB).
pub const DEFAULT_LOG_SHIFT: u8 = 21;

/// Everything a store needs to open or be created.
#[derive(Clone, Debug)]
pub struct StoreConfig {
    /// The tree (stored at creation; opening with a different one is an error).
    pub tree: TreeConfig,
    /// log2 of leaves per log file, 10..=30 (stored at creation).
    pub log_shift: u8,
    /// Background group commit: flush what was appended every interval even
    /// if nobody waits. `None`: only waits, checkpoints and close flush.
    pub flush_interval: Option<Duration>,
    /// When to checkpoint automatically.
    pub checkpoint: CheckpointPolicy,
    /// Levels below this one are served from read-only file mappings after
    /// a checkpoint (complete 2 MiB segments only): 1 tiers the leaves, 0
    /// keeps everything in memory.
    pub tier_below: u32,
    /// Recompute every level at open and compare (slow; default off).
    pub verify_on_open: bool,
    /// Feature bits, stored at creation, must match at open: bit 0 is the
    /// database's (it keeps a nullifier set), bit 1 the store's
    /// ([`FLAG_EXPLICIT_FINALITY`]).
    pub flags: u64,
    /// How many of the last appends' roots [`crate::Store::size_of_root`]
    /// finds (roots of block-tagged heads are always found).
    pub root_window: usize,
    /// Seal the log once no commit came for this long (with the
    /// background thread): a tail record naming the last commit, so that
    /// damage to it is refused at the next open rather than taken for a
    /// torn commit. A clean close always seals. `None`: only a close.
    pub seal_after: Option<Duration>,
    /// `Some(shape)`: the store is the change log of a mutable tree of
    /// this shape (stored at creation, must match at open); `tree` is
    /// then a Lean tree over the log's words.
    pub mutable: Option<cairn_core::TreeKind>,
}

/// When the store checkpoints on its own (checked after each background flush).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckpointPolicy {
    /// After this many append calls (single or batch) since the last checkpoint.
    pub every_appends: Option<u64>,
    /// After this many leaves since the last checkpoint.
    pub every_leaves: Option<u64>,
    /// When the upper levels' final nodes not yet checkpointed exceed this many bytes.
    pub memory_bytes: Option<u64>,
}

impl StoreConfig {
    /// Defaults for `tree`: 64 MiB log files, a 10 ms background flush,
    /// a checkpoint every 2^22 leaves, leaves tiered out after checkpoints.
    pub fn new(tree: TreeConfig) -> StoreConfig {
        StoreConfig {
            tree,
            log_shift: DEFAULT_LOG_SHIFT,
            flush_interval: Some(Duration::from_millis(10)),
            checkpoint: CheckpointPolicy {
                every_appends: None,
                every_leaves: Some(1 << 22),
                memory_bytes: None,
            },
            tier_below: 1,
            verify_on_open: false,
            flags: 0,
            root_window: DEFAULT_ROOT_WINDOW,
            seal_after: Some(DEFAULT_SEAL_AFTER),
            mutable: None,
        }
    }
}
