//! The implementations the reference runs in lockstep with: the storage
//! engine ([`Store`]) and the database facade ([`Database`]) of every
//! kind, on a [`SimFs`]. Each operation is one call here; what a subject
//! cannot do is asked of the one capability table
//! ([`Operation::supported_by`]).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use cairn_core::{Hash, TreeHead, TreeKind};
use cairn_db::{Ack, At, Database, DbConfig, DbError, Operation, Proof};
use cairn_store::{
    BlockTag, CheckpointMeta, CheckpointPolicy, FLAG_EXPLICIT_FINALITY, Fs, Store, StoreConfig,
    StoreError, TaggedHead, Token,
};

use super::Setup;
use crate::sim::SimFs;

/// Where every run keeps its files.
const DIR: &str = "/db";
/// How long an acknowledgement may take (never reached: nothing runs in
/// the background).
pub(crate) const WAIT: Duration = Duration::from_secs(30);

/// Which implementation a run drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// `cairn_store::Store`: the engine, read whole (durable or not).
    Store,
    /// `cairn_db::Database` of the case's kind, read at its durable head.
    Database,
}

/// An implementation under test.
#[expect(
    clippy::large_enum_variant,
    reason = "one per run, moved a few times: a box would only add an indirection"
)]
pub(crate) enum Subject {
    Store(Store),
    Database(Database),
}

/// An append's acknowledgement to come.
pub(crate) enum Pending {
    Token(Token),
    /// `None` once waited on (an `Ack` resolves once).
    Ack(Option<Ack>),
}

impl Setup {
    fn store_config(&self, verify_on_open: bool) -> StoreConfig {
        StoreConfig {
            log_shift: self.log_shift,
            // No background thread: the case alone decides when anything
            // is written, so a case replays identically (for shrinking).
            flush_interval: None,
            checkpoint: CheckpointPolicy::default(),
            tier_below: self.tier_below,
            verify_on_open,
            flags: if self.explicit {
                FLAG_EXPLICIT_FINALITY
            } else {
                0
            },
            root_window: self.root_window,
            ..StoreConfig::new(self.tree())
        }
    }

    fn db_config(&self, verify_on_open: bool) -> DbConfig {
        let mut config = DbConfig::new(self.tree());
        config.store = self.store_config(verify_on_open);
        config.store.flags = 0;
        config.explicit_finality = self.explicit;
        config.set_rewrite_percent = self.set_rewrite_percent;
        config
    }
}

/// A database error that must be the store's.
pub(crate) fn store_error(error: DbError) -> StoreError {
    match error {
        DbError::Store(error) => error,
        other => panic!("expected a storage error, got {other:?}"),
    }
}

impl Subject {
    pub(crate) fn create(setup: &Setup, fs: &SimFs) -> Subject {
        let fs = Arc::new(fs.clone()) as Arc<dyn Fs>;
        match setup.target {
            Target::Store => Subject::Store(
                Store::create(fs, Path::new(DIR), setup.store_config(false))
                    .unwrap_or_else(|e| panic!("create: {e}")),
            ),
            Target::Database => Subject::Database(
                Database::create_in(fs, Path::new(DIR), setup.db_config(false))
                    .unwrap_or_else(|e| panic!("create: {e}")),
            ),
        }
    }

    pub(crate) fn open(setup: &Setup, fs: &SimFs, verify: bool, ctx: &str) -> Subject {
        let fs = Arc::new(fs.clone()) as Arc<dyn Fs>;
        match setup.target {
            Target::Store => Subject::Store(
                Store::open(fs, Path::new(DIR), setup.store_config(verify))
                    .unwrap_or_else(|e| panic!("{ctx}: open failed: {e}")),
            ),
            Target::Database => Subject::Database(
                Database::open_in(fs, Path::new(DIR), Some(setup.db_config(verify)))
                    .unwrap_or_else(|e| panic!("{ctx}: open failed: {e}")),
            ),
        }
    }

    /// Whether it can do `operation` (the store: what an append-only
    /// database can).
    pub(crate) fn supports(&self, operation: Operation) -> bool {
        match self {
            Subject::Store(_) => operation.supported_by(TreeKind::Lean),
            Subject::Database(db) => {
                let yes = db.supports(operation).is_ok();
                assert_eq!(yes, operation.supported_by(db.kind()));
                yes
            }
        }
    }

    /// Whether it refuses values it holds (a database; the store does not).
    pub(crate) fn refuses_duplicates(&self) -> bool {
        matches!(self, Subject::Database(db) if db.refuses_duplicates())
    }

    pub(crate) fn size(&self) -> u64 {
        match self {
            Subject::Store(store) => store.size(),
            Subject::Database(db) => db.size(),
        }
    }

    pub(crate) fn durable_size(&self) -> u64 {
        match self {
            Subject::Store(store) => store.durable_size(),
            Subject::Database(db) => db.durable_size(),
        }
    }

    pub(crate) fn finalized_size(&self) -> u64 {
        match self {
            Subject::Store(store) => store.finalized_size(),
            Subject::Database(db) => db.finalized_size(),
        }
    }

    /// The head it serves: the whole tree's for the store, the durable
    /// one's for a database.
    pub(crate) fn head(&self) -> TreeHead {
        match self {
            Subject::Store(store) => store.head(),
            Subject::Database(db) => db.head(),
        }
    }

    /// The size of the head it serves.
    pub(crate) fn served_size(&self) -> u64 {
        match self {
            Subject::Store(store) => store.size(),
            Subject::Database(db) => db.head().size,
        }
    }

    /// Appends `values` (tagged if `tag`): the first index and the
    /// acknowledgement to come.
    pub(crate) fn append(
        &self,
        values: &[Hash],
        tag: Option<BlockTag>,
    ) -> Result<(u64, u64, Pending), StoreError> {
        match self {
            Subject::Store(store) => {
                let got = match tag {
                    Some(tag) => store.append_tagged(values, tag),
                    None => store.append_batch(values),
                }?;
                Ok((got.first, got.count, Pending::Token(got.token)))
            }
            Subject::Database(db) => {
                let ack = match tag {
                    Some(tag) => db.append_tagged(values, tag),
                    None => db.append(values),
                }
                .map_err(store_error)?;
                let (first, count) = ack.appended().expect("nothing pending to wait for");
                Ok((first, count, Pending::Ack(Some(ack))))
            }
        }
    }

    /// Waits for `pending`: the durable head of an append-only
    /// database's acknowledgement, checked by the caller.
    pub(crate) fn wait(
        &self,
        pending: &mut Pending,
    ) -> Option<Result<Option<TreeHead>, StoreError>> {
        match (self, pending) {
            (Subject::Store(_), Pending::Token(token)) => Some(token.wait(WAIT).map(|()| None)),
            (Subject::Database(db), Pending::Ack(ack)) => {
                let ack = ack.take()?;
                Some(
                    ack.wait(db, WAIT)
                        .map(|acked| {
                            Some(TreeHead {
                                size: acked.size,
                                root: acked.root,
                            })
                        })
                        .map_err(store_error),
                )
            }
            _ => unreachable!("a pending append of another subject"),
        }
    }

    pub(crate) fn truncate(&self, to: u64, block: Option<u64>) -> Result<TreeHead, StoreError> {
        match (self, block) {
            (Subject::Store(store), None) => store.truncate(to),
            (Subject::Store(store), Some(block)) => store.truncate_to_block(block),
            (Subject::Database(db), None) => db.truncate(to).map_err(store_error),
            (Subject::Database(db), Some(block)) => {
                db.truncate_to_block(block).map_err(store_error)
            }
        }
    }

    pub(crate) fn finalize(&self, to: u64, block: Option<u64>) -> Result<u64, StoreError> {
        match (self, block) {
            (Subject::Store(store), None) => store.finalize(to),
            (Subject::Store(store), Some(block)) => store.finalize_to_block(block),
            (Subject::Database(db), None) => db.finalize(to).map_err(store_error),
            (Subject::Database(db), Some(block)) => {
                db.finalize_to_block(block).map_err(store_error)
            }
        }
    }

    pub(crate) fn flush(&self) -> u64 {
        match self {
            Subject::Store(store) => store.flush(),
            Subject::Database(db) => db.flush().map_err(store_error),
        }
        .unwrap_or_else(|e| panic!("flush: {e}"))
    }

    /// A checkpoint: the store's meta if one was written.
    pub(crate) fn checkpoint(&self) -> Option<CheckpointMeta> {
        match self {
            Subject::Store(store) => store
                .checkpoint()
                .unwrap_or_else(|e| panic!("checkpoint: {e}")),
            Subject::Database(db) => {
                let done = db
                    .checkpoint()
                    .unwrap_or_else(|e| panic!("checkpoint: {e}"));
                assert_eq!(done.size, db.size(), "a checkpoint covers everything");
                if let Some(set) = done.set_size {
                    assert_eq!(set, done.size, "the nullifier set's checkpoint");
                }
                None
            }
        }
    }

    /// The tagged heads it serves (a database: the durable ones).
    pub(crate) fn heads(&self) -> Vec<TaggedHead> {
        match self {
            Subject::Store(store) => store.heads(0, usize::MAX),
            Subject::Database(db) => db
                .heads(0, usize::MAX)
                .unwrap_or_else(|e| panic!("heads: {e}")),
        }
    }

    /// A membership proof of leaf `index` (holding `value`) against the
    /// served head `head`, verified.
    pub(crate) fn check_proof(
        &self,
        setup: &Setup,
        index: u64,
        value: &Hash,
        head: &TreeHead,
    ) -> Result<(), String> {
        let tree = setup.tree();
        match self {
            Subject::Store(store) => {
                let proof = store.snapshot().prove(index).map_err(|e| e.to_string())?;
                if proof.leaf() != *value {
                    return Err(format!("the proof of {index} holds another leaf"));
                }
                proof.verify_with(&tree, head).map_err(|e| e.to_string())
            }
            Subject::Database(db) => {
                match db.prove(index, At::Durable).map_err(|e| e.to_string())? {
                    Proof::Membership(proof) => {
                        if proof.leaf() != *value {
                            return Err(format!("the proof of {index} holds another leaf"));
                        }
                        proof.verify_with(&tree, head).map_err(|e| e.to_string())
                    }
                    Proof::IndexedMembership(proof) => proof
                        .verify(setup.arity(), setup.hash, head, value)
                        .map_err(|e| e.to_string()),
                    Proof::Absence(_) => Err("an absence proof for a member".into()),
                }
            }
        }
    }

    pub(crate) fn close(self) {
        match self {
            Subject::Store(store) => store.close().unwrap_or_else(|e| panic!("close: {e}")),
            Subject::Database(db) => db.close().unwrap_or_else(|e| panic!("close: {e}")),
        }
    }
}
