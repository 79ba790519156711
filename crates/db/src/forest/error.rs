//! The errors of a database of several trees, beside its trees' own.

use cairn_core::Hash;
use cairn_core::hex::to_hex;

use super::{DEFAULT_TREE, MAX_NAME};

/// The errors of a database of several trees (beside its trees' own).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ForestError {
    /// A tree name outside what a directory and a URL take.
    #[error(
        "tree name {name:?} refused: 1 to {MAX_NAME} bytes of a-z, 0-9, '-', '_' and '.', starting with a letter or digit"
    )]
    BadName {
        /// The name.
        name: String,
    },
    /// No tree of this name.
    #[error("no tree named {name:?} in this database (it holds: {known})")]
    UnknownTree {
        /// The name asked for.
        name: String,
        /// The names it holds, comma separated.
        known: String,
    },
    /// A tree of this name exists already.
    #[error("a tree named {name:?} exists already")]
    TreeExists {
        /// The name.
        name: String,
    },
    /// A tree named twice in one block.
    #[error("tree {name:?} is named twice in one block")]
    TreeTwice {
        /// The name.
        name: String,
    },
    /// The manifest does not decode.
    #[error("cairn.trees is corrupt: {what}")]
    CorruptManifest {
        /// What is wrong.
        what: String,
    },
    /// The journal does not decode, or contradicts the trees.
    #[error("blocks.journal is corrupt at byte {offset}: {what}")]
    CorruptJournal {
        /// Where.
        offset: u64,
        /// What is wrong.
        what: String,
    },
    /// A file of a format this build does not read.
    #[error("{file} has format version {version}; this build reads version {supported}")]
    UnsupportedVersion {
        /// The file.
        file: &'static str,
        /// Its version.
        version: u32,
        /// The version this build reads.
        supported: u32,
    },
    /// A block number at or below the last one.
    #[error("block {block} does not follow the last block {last}")]
    BlockOrder {
        /// The block refused.
        block: u64,
        /// The last block written.
        last: u64,
    },
    /// No block at or below this number is known (rolled back, before the
    /// first block, or below the finalized block).
    #[error("no block at or below {block} that a rollback or finalization can reach{}", finalized.map(|f| format!(" (block {f} is finalized)")).unwrap_or_default())]
    NoBlock {
        /// The block asked for.
        block: u64,
        /// The finalized block, if any.
        finalized: Option<u64>,
    },
    /// A rollback below a tree's finalized size: nothing was rolled back.
    #[error(
        "rolling back to block {block} takes tree {tree:?} to {to} leaves, below its finalized size {finalized}: nothing rolled back"
    )]
    BelowFinalized {
        /// The block asked for.
        block: u64,
        /// The tree.
        tree: String,
        /// The size it would have.
        to: u64,
        /// Its finalized size.
        finalized: u64,
    },
    /// An earlier journal write or sync failed: nothing is written after
    /// it (reopen to recover).
    #[error(
        "the block journal failed earlier ({cause}): nothing is written until the database is reopened"
    )]
    Poisoned {
        /// The first failure.
        cause: String,
    },
    /// A single-tree directory holds one tree and no journal: a block
    /// naming another tree needs trees added first.
    #[error(
        "this database is one tree in the layout before several trees; a block can name only {DEFAULT_TREE:?} until a tree is added"
    )]
    SingleTree,
    /// A capacity a tree of this config cannot have.
    #[error(
        "tree {name:?} cannot have a capacity of {capacity} leaves: at least {least}{}",
        most.map(|m| format!(", at most {m} (its fixed depth)")).unwrap_or_default()
    )]
    BadCapacity {
        /// The tree.
        name: String,
        /// The capacity asked for.
        capacity: u64,
        /// The least it can be (one more than the empty tree's size).
        least: u64,
        /// The most, for a fixed-depth tree.
        most: Option<u64>,
    },
    /// A write naming a member of a family rather than the family.
    #[error("{name:?} is a member of family {family:?}: writes name the family")]
    MemberWrite {
        /// The member named.
        name: String,
        /// Its family.
        family: String,
    },
    /// A full tree without a rollover.
    #[error(
        "tree {tree:?} holds {size} of its capacity of {capacity} leaves and rolls over to no other: {values} values refused"
    )]
    Full {
        /// The tree.
        tree: String,
        /// Its capacity.
        capacity: u64,
        /// Its size.
        size: u64,
        /// The values refused.
        values: u64,
    },
    /// A write to a whole-batch family larger than one member holds: no
    /// member can take it whole.
    #[error(
        "{values} values for family {tree:?}, which rolls over whole batches: one member holds at most {capacity}"
    )]
    BatchOverMember {
        /// The family.
        tree: String,
        /// The values one member holds.
        capacity: u64,
        /// The values written.
        values: u64,
    },
    /// A value a member of a strict family holds, or one a write to the
    /// family repeats.
    #[error("value {} is {}: the family refuses it", to_hex(value), match (tree, index) {
        (Some(tree), Some(index)) => format!("at index {index} of member {tree:?}"),
        _ => "twice in one write to the family".to_owned(),
    })]
    InFamily {
        /// The value.
        value: Hash,
        /// The member holding it, `None` for a value the write repeats.
        tree: Option<String>,
        /// Its index there.
        index: Option<u64>,
    },
}
