//! What the tracker refuses, per layer: a sync ([`WalletError`]) and the
//! persisted state ([`StateError`]). Every variant says what it got and
//! what it wanted; a refusal changes nothing in the tracker.

use cairn_core::hex::to_hex;
use cairn_core::{Hash, TreeConfig, TreeError, VerifyError};
use cairn_tiles::{CheckpointError, ObjectError, SignatureError};

/// Why the tracker refused a call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WalletError {
    /// The checkpoint object is not one.
    #[error("checkpoint: {0}")]
    Checkpoint(CheckpointError),
    /// The checkpoint's signature is refused by the tracker's keys.
    #[error("checkpoint signature: {0}")]
    Signature(SignatureError),
    /// The checkpoint names another tree than the tracker follows.
    #[error("the checkpoint is of the tree {got:?}, the tracker follows {want:?}")]
    ForeignTree {
        /// The checkpoint's tree.
        got: Box<TreeConfig>,
        /// The tracker's.
        want: Box<TreeConfig>,
    },
    /// The checkpoint is older than the adopted head: a rollback is the
    /// caller's decision ([`Tracker::rewind`](crate::Tracker::rewind)).
    #[error(
        "the checkpoint names {got} leaves, below the adopted head of {have}: rewind to a block at or below it first"
    )]
    Behind {
        /// The checkpoint's size.
        got: u64,
        /// The adopted size.
        have: u64,
    },
    /// The checkpoint names the adopted size with another root.
    #[error(
        "the checkpoint names {size} leaves with root {}, the adopted head has {}",
        show(got),
        show(have)
    )]
    Fork {
        /// The size.
        size: u64,
        /// The checkpoint's root.
        got: Option<Hash>,
        /// The adopted root.
        have: Option<Hash>,
    },
    /// The checkpoint's tree does not extend the adopted head, or the
    /// tiles do not hash to the checkpoint.
    #[error("the tiles do not verify against {size} leaves, root {}: {reason}; tiles: {}", show(root), tiles.join(", "))]
    Mismatch {
        /// The checkpoint's size.
        size: u64,
        /// The checkpoint's root.
        root: Option<Hash>,
        /// What the verifier said.
        reason: Box<VerifyError>,
        /// Every tile the sync was fed.
        tiles: Vec<String>,
    },
    /// A tile of the wrong length.
    #[error("{path}: {got} bytes, a tile of {width} nodes has {want}")]
    MalformedTile {
        /// The tile's path.
        path: String,
        /// Its length.
        got: usize,
        /// The length its name implies.
        want: usize,
        /// The nodes its name says it holds.
        width: u64,
    },
    /// A tile the sync did not ask for.
    #[error("{path}: not a tile this sync asked for")]
    UnexpectedTile {
        /// The path fed.
        path: String,
    },
    /// A sync finished before every tile it asked for was fed.
    #[error("{path}: asked for and not fed")]
    MissingTile {
        /// The tile's path.
        path: String,
    },
    /// A sync planned against another state of the tracker (it adopted,
    /// rewound or was restored since).
    #[error(
        "the sync was planned from the head of {planned} leaves, the tracker is at {have}: plan again"
    )]
    StalePlan {
        /// The size the plan started from.
        planned: u64,
        /// The tracker's size now.
        have: u64,
    },
    /// An object could not be fetched (the driver's stores).
    #[error(transparent)]
    Fetch(#[from] ObjectError),
    /// A witness of a leaf that is not marked.
    #[error("leaf {index} is not marked")]
    NotMarked {
        /// The leaf.
        index: u64,
    },
    /// A witness of a marked leaf beyond the adopted head.
    #[error("leaf {index} is not in the adopted tree of {size} leaves yet")]
    NotInTree {
        /// The leaf.
        index: u64,
        /// The adopted size.
        size: u64,
    },
    /// A witness of a leaf marked since the last sync.
    #[error("leaf {index} was marked after the last sync (at {size} leaves): sync first")]
    NotSynced {
        /// The leaf.
        index: u64,
        /// The adopted size.
        size: u64,
    },
    /// A mark beyond what the tree can ever hold.
    #[error("leaf {index} is beyond the tree's capacity of {capacity} leaves")]
    BeyondCapacity {
        /// The leaf.
        index: u64,
        /// The capacity.
        capacity: u64,
    },
    /// A checkpoint whose block is not above the last one.
    #[error("block {block} is not above the last checkpointed block {last}")]
    BlockOrder {
        /// The block given.
        block: u64,
        /// The last checkpointed block.
        last: u64,
    },
    /// A rewind below the retained window.
    #[error(
        "block {block} is below the retained window (oldest checkpointed block: {}); only the last {window} checkpoints are kept",
        oldest.map_or_else(|| "none".to_owned(), |b| b.to_string())
    )]
    RewindBeyondWindow {
        /// The block asked for.
        block: u64,
        /// The oldest block retained.
        oldest: Option<u64>,
        /// Checkpoints retained at most.
        window: usize,
    },
    /// A rewind to a block within the window that was never checkpointed.
    #[error("block {block} was never checkpointed (retained: {retained:?})")]
    UnknownBlock {
        /// The block asked for.
        block: u64,
        /// The blocks retained.
        retained: Vec<u64>,
    },
    /// The request does not fit the tree.
    #[error(transparent)]
    Tree(#[from] TreeError),
}

/// Why bytes are not a tracker's persisted state. A refused state loads
/// nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// Fewer bytes than the encoding needs.
    #[error("{got} bytes, truncated: want at least {want}")]
    Truncated {
        /// Bytes given.
        got: usize,
        /// Bytes needed to go on.
        want: usize,
    },
    /// Not a tracker state.
    #[error("magic {got:02x?}, want {want:02x?} (not a cairn wallet state)")]
    Magic {
        /// The first bytes.
        got: Vec<u8>,
        /// The magic.
        want: Vec<u8>,
    },
    /// A version this build does not read.
    #[error("state version {got}, this build reads {want}")]
    Version {
        /// The version byte.
        got: u8,
        /// The version read.
        want: u8,
    },
    /// The checksum does not match: the bytes were changed.
    #[error("checksum {got:#010x}, the bytes hash to {want:#010x}: the state is corrupt")]
    Checksum {
        /// The stored checksum.
        got: u32,
        /// The checksum of the bytes.
        want: u32,
    },
    /// A field outside what the encoder writes.
    #[error("{field}: {got}, want {want}")]
    Field {
        /// The field.
        field: &'static str,
        /// What was read.
        got: String,
        /// What it must be.
        want: &'static str,
    },
    /// Bytes after the checksum.
    #[error("{extra} bytes after the checksum")]
    Trailing {
        /// How many.
        extra: usize,
    },
    /// The nodes do not give witnesses that verify against the stored
    /// heads.
    #[error("the witness of leaf {index} at {size} leaves does not verify: {reason}")]
    Inconsistent {
        /// The head's size.
        size: u64,
        /// The leaf.
        index: u64,
        /// What the verifier said.
        reason: String,
    },
}

fn show(root: &Option<Hash>) -> String {
    root.as_ref().map_or_else(|| "none".into(), to_hex)
}
