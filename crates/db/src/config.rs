//! What a database is (stored at creation) and how it runs.

use cairn_core::TreeConfig;
use cairn_store::{FLAG_EXPLICIT_FINALITY, StoreConfig};

/// The store's flag bit that says the database keeps a nullifier set.
pub(crate) const FLAG_UNIQUE: u64 = cairn_store::Layout::FLAG_NULLIFIER_SET;

/// Everything a database needs to be created or opened.
#[derive(Clone, Debug)]
pub struct DbConfig {
    /// The tree and the storage engine (tree, log file size: stored at
    /// creation; flush, checkpoint and tiering policy: per open).
    pub store: StoreConfig,
    /// Keep the nullifier set: refuse values already present and answer
    /// `index_of` (stored at creation).
    pub unique: bool,
    /// After an automatic checkpoint, rewrite the set's checkpoint once the
    /// leaves it does not cover exceed this percentage of those it does
    /// (and always on [`crate::Db::checkpoint`]). Rewriting is whole-file,
    /// so this trades bytes written (about 100/p + 1 times the set's size
    /// over a database's life) against leaves replayed at open (at most p%).
    pub set_rewrite_percent: u32,
    /// Only [`crate::Db::finalize`] makes leaves final (stored at
    /// creation). Off, every checkpoint finalizes what it covers, so a
    /// rollback reaches back to the last checkpoint only; on, a chain
    /// follower rolls back to any size it has not finalized, whatever was
    /// checkpointed, and only finalized nodes are served from file mappings.
    pub explicit_finality: bool,
    /// Heads an indexed tree keeps proofs against (the current one
    /// included, at least 1): each applied insert is a head, and a proof
    /// at an older size is refused with the window (per open).
    pub history_heads: usize,
    /// A mutable tree (stored at creation): leaves can be updated and
    /// removed ([`crate::MutableDb`]); `Some(readmit)`, where `readmit`
    /// lets a removed value come back. Lean and fixed-depth trees only.
    pub mutable: Option<bool>,
}

/// Heads an indexed tree keeps proofs against by default.
pub const DEFAULT_HISTORY_HEADS: usize = 4096;

impl DbConfig {
    /// Defaults: the store's defaults, with the nullifier set, the set's
    /// checkpoint rewritten when it lags by 25%.
    pub fn new(tree: TreeConfig) -> DbConfig {
        DbConfig {
            store: StoreConfig::new(tree),
            unique: true,
            set_rewrite_percent: 25,
            explicit_finality: false,
            history_heads: DEFAULT_HISTORY_HEADS,
            mutable: None,
        }
    }

    /// The tree's configuration.
    pub fn tree(&self) -> TreeConfig {
        self.store.tree
    }

    pub(crate) fn store_config(&self) -> StoreConfig {
        let mut store = self.store.clone();
        store.flags = (store.flags & (crate::mutable::FLAG_READMIT | cairn_store::FLAG_LAZY_FILES))
            | if self.unique { FLAG_UNIQUE } else { 0 }
            | if self.explicit_finality {
                FLAG_EXPLICIT_FINALITY
            } else {
                0
            };
        store
    }
}
