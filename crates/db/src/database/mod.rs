//! [`Database`]: one type over every tree kind, opened by what the
//! directory holds. The CLI and the server use it alone; [`crate::Db`]
//! (lean and fixed-depth trees) and [`crate::IndexedDb`] are the kinds
//! underneath.
//!
//! Why an enum and not a trait object: the kinds are a closed set, fixed
//! by the core's `TreeKind` and the kind byte of `cairn.meta`, not a
//! plug-in point, so a `match` over them is exhaustive and a new kind
//! fails to compile until every operation decides what it does for it
//! (a trait's default method would refuse silently, or answer wrongly);
//! the kinds' answers differ in type (a membership proof, an indexed one,
//! an absence proof), which an enum returns as data while a trait would
//! need associated types and stop being object-safe; and an append, the
//! hot path, is one predictable branch rather than a virtual call.
//! What a kind cannot do is refused by [`crate::Operation::check`], the
//! one place that knows, before any work.
//!
//! Sizes and indices are the tree's everywhere: an indexed tree counts its
//! guard leaf 0, so its size is its values plus one.
//!
//! Invariants kept here for every kind:
//! - appends are serialised together with the token of the last one
//!   (`appends`), so a duplicate of a value not yet durable can wait for
//!   its durability ([`Ack`]): 409 only for durable values;
//! - a rollback opens the read gate (`gate`), so reads that span the
//!   store's separate structures (tagged heads and the durable size, a
//!   root and the tree it is a root of, an acknowledgement's root) are made
//!   between two rollbacks, and flushes before it closes, so nothing
//!   appended before it stays pending;
//! - a tagged head is served only once durable (`acked_block`).

mod ack;
mod gate;
mod mutate;
mod read;
mod write;

use std::path::Path;
use std::sync::Arc;

use cairn_core::{Hash, TreeConfig, TreeKind};
use cairn_store::fs::Fs;
use cairn_store::{StdFs, StoreError, Token, stored_config};
use parking_lot::Mutex;

pub use ack::{Ack, Acked};
pub use mutate::Changed;
pub use read::{At, Durable, Lookup, Proof, ProofFormat, RenderError};
pub use write::Checkpointed;

use crate::config::DbConfig;
use crate::db::{Db, DbStats};
use crate::error::{DbError, Result};
use crate::indexed::IndexedDb;
use crate::mutable::MutableDb;
use crate::open::OpenOptions;
use crate::operation::Operation;
use gate::Gate;

/// A durable Merkle tree of any kind in a directory, with its refusal of
/// duplicates: a LeanIMT or a fixed-depth tree with a nullifier set, or
/// an indexed tree (which proves absence).
///
/// ```
/// use std::time::Duration;
/// use cairn_core::{Arity, HashKind, TreeConfig, TreeKind};
/// use cairn_db::{At, Database, DbConfig, DbError};
///
/// let dir = tempfile::tempdir()?;
/// let tree = TreeConfig::new(Arity::new(2)?, HashKind::Sha256);
/// for kind in [TreeKind::Lean, TreeKind::Indexed] {
///     let path = dir.path().join(kind.name());
///     let db = Database::create(&path, DbConfig::new(tree.with_kind(kind)))?;
///     let acked = db.append(&[[1; 32], [2; 32]])?.wait(&db, Duration::from_secs(5))?;
///     assert_eq!(acked.count, 2);                   // durable, with the head that holds them
///     assert!(matches!(db.append(&[[1; 32]]), Err(DbError::Duplicates { .. })));
///     let proof = db.prove(acked.first, At::Durable)?;
///     assert_eq!(proof.size(), acked.size);
///     db.close()?;
/// }
/// let db = Database::open(dir.path().join("indexed"))?; // the kind from the directory
/// assert!(db.prove_absence(&[3; 32]).is_ok());          // indexed trees prove absence
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Database {
    kind: Kind,
    gate: Gate,
    /// Held by every append with the token of the last one since the last
    /// rollback (which flushes, so that token covers every leaf not yet
    /// durable).
    appends: Mutex<Option<Token>>,
    /// The highest block whose tagged append was acknowledged (or
    /// recovered): its tag and every earlier one are durable.
    acked_block: Mutex<Option<u64>>,
    /// Whether the nullifier set was loaded (see [`OpenOptions::lookups`]).
    lookups: bool,
}

impl OpenOptions {
    /// Opens the database in `dir` with these options, of the kind it was
    /// created as.
    pub fn open(&self, dir: impl AsRef<Path>) -> Result<Database> {
        self.open_in(Arc::new(StdFs), dir.as_ref())
    }

    /// [`OpenOptions::open`] through a given file system.
    pub fn open_in(&self, fs: Arc<dyn Fs>, dir: &Path) -> Result<Database> {
        let config = self.config_in(&*fs, dir)?;
        match (self.read_only, self.lookups) {
            (true, false) => Database::open_tree_only(fs, dir, config),
            (true, true) => Database::open_read_only_in(fs, dir, Some(config)),
            (false, _) => Database::open_in(fs, dir, Some(config)),
        }
    }
}

/// What [`Database::check`] checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checked {
    /// The nullifier set holds exactly the leaves.
    Set,
    /// No nullifier set to check (created without one).
    NoSet,
    /// An indexed tree, rebuilt at open from the log's values, or a
    /// mutable tree replayed from its changes (each checked as written)
    /// (an indexed tree's values each
    /// nonzero, canonical and held once).
    Values,
}

/// The kind implementations.
#[derive(Debug)]
enum Kind {
    /// A lean or fixed-depth tree: appends at the right edge, a nullifier
    /// set beside it.
    AppendOnly(Db),
    /// An indexed tree over a log of its values.
    Indexed(IndexedDb),
    /// A mutable Lean or fixed-depth tree over a log of its changes.
    Mutable(MutableDb),
}

impl Database {
    fn new(kind: Kind, lookups: bool) -> Database {
        // Every tag recovered at open is durable.
        let acked_block = match &kind {
            Kind::AppendOnly(db) => db.head_at_block(u64::MAX).map(|head| head.block),
            Kind::Mutable(db) => db.log().head_at_block(u64::MAX).map(|head| head.block),
            Kind::Indexed(_) => None,
        };
        Database {
            kind,
            gate: Gate::default(),
            appends: Mutex::new(None),
            acked_block: Mutex::new(acked_block),
            lookups,
        }
    }

    /// Creates a database of the kind `config` names in `dir` (created if
    /// missing; must be empty). An indexed tree keeps no nullifier set
    /// (`config.unique` is ignored: the tree refuses duplicates itself).
    pub fn create(dir: impl AsRef<Path>, config: DbConfig) -> Result<Database> {
        Database::create_in(Arc::new(StdFs), dir.as_ref(), config)
    }

    /// [`Database::create`] through a given file system.
    pub fn create_in(fs: Arc<dyn Fs>, dir: &Path, config: DbConfig) -> Result<Database> {
        let kind = match config.tree().kind {
            TreeKind::Indexed => Kind::Indexed(IndexedDb::create_in(fs, dir, config)?),
            _ if config.mutable.is_some() => Kind::Mutable(MutableDb::create_in(fs, dir, config)?),
            _ => Kind::AppendOnly(Db::create_in(fs, dir, config)?),
        };
        Ok(Database::new(kind, true))
    }

    /// Opens the database in `dir`, of the kind and with the configuration
    /// it was created with, and default runtime settings (see
    /// [`OpenOptions`] for others).
    pub fn open(dir: impl AsRef<Path>) -> Result<Database> {
        OpenOptions::new().open(dir)
    }

    /// Opens the database in `dir` through a given file system, with
    /// `config` (which must agree with the stored one) or the stored one.
    pub fn open_in(fs: Arc<dyn Fs>, dir: &Path, config: Option<DbConfig>) -> Result<Database> {
        let stored = stored_config(&*fs, dir)?;
        let kind = match stored.tree.kind {
            _ if stored.mutable.is_some() => Kind::Mutable(MutableDb::open_in(fs, dir, config)?),
            TreeKind::Indexed => Kind::Indexed(IndexedDb::open_in(fs, dir, config)?),
            _ => Kind::AppendOnly(Db::open_in(fs, dir, config)?),
        };
        Ok(Database::new(kind, true))
    }

    /// Opens the database in `dir` read-only, beside a writer if one runs
    /// (see [`Db::open_read_only`]).
    pub fn open_read_only(dir: impl AsRef<Path>) -> Result<Database> {
        OpenOptions::new().read_only(true).open(dir)
    }

    /// [`Database::open_read_only`] through a given file system.
    pub fn open_read_only_in(
        fs: Arc<dyn Fs>,
        dir: &Path,
        config: Option<DbConfig>,
    ) -> Result<Database> {
        let stored = stored_config(&*fs, dir)?;
        let kind = match stored.tree.kind {
            _ if stored.mutable.is_some() => {
                Kind::Mutable(MutableDb::open_read_only_in(fs, dir, config)?)
            }
            TreeKind::Indexed => Kind::Indexed(IndexedDb::open_read_only_in(fs, dir, config)?),
            _ => Kind::AppendOnly(Db::open_read_only_in(fs, dir, config)?),
        };
        Ok(Database::new(kind, true))
    }

    /// A lean or fixed-depth database opened read-only without its
    /// nullifier set, for roots and proofs (see [`OpenOptions::lookups`]).
    pub(crate) fn open_tree_only(
        fs: Arc<dyn Fs>,
        dir: &Path,
        config: DbConfig,
    ) -> Result<Database> {
        let kind = match config.tree().kind {
            _ if config.mutable.is_some() => {
                Kind::Mutable(MutableDb::open_read_only_in(fs, dir, Some(config))?)
            }
            TreeKind::Indexed => {
                Kind::Indexed(IndexedDb::open_read_only_in(fs, dir, Some(config))?)
            }
            _ => Kind::AppendOnly(Db::open_tree_only(fs, dir, config)?),
        };
        Ok(Database::new(kind, false))
    }

    /// The values appended to the database in `dir`, in order, as durable
    /// now, read-only (beside a writer, if one runs) and without building
    /// anything else: the leaves of the returned tree are the values. For
    /// a lean or fixed-depth database that is its tree; for an indexed one,
    /// the log of its values (whose root is not the indexed tree's). What
    /// an export copies.
    pub fn read_values(dir: impl AsRef<Path>) -> Result<Arc<cairn_core::Snapshot>> {
        crate::open::read_log(dir.as_ref())
    }

    /// The tree's kind.
    pub fn kind(&self) -> TreeKind {
        self.tree_config().kind
    }

    /// Whether this database can do `operation` (see
    /// [`Operation::check`]): `Err` is the refusal.
    pub fn supports(&self, operation: Operation) -> Result<()> {
        operation.check_for(self.kind(), self.is_mutable())
    }

    /// Whether its leaves can be updated and removed (created mutable).
    pub fn is_mutable(&self) -> bool {
        matches!(self.kind, Kind::Mutable(_))
    }

    /// The mutable database, or the refusal of `operation`.
    fn mutable(&self, operation: Operation) -> Result<&MutableDb> {
        match &self.kind {
            Kind::Mutable(db) => Ok(db),
            _ => Err(DbError::Unsupported {
                operation,
                kind: self.kind(),
            }),
        }
    }

    /// The configuration it runs with.
    pub fn config(&self) -> &DbConfig {
        match &self.kind {
            Kind::AppendOnly(db) => db.config(),
            Kind::Indexed(db) => db.config(),
            Kind::Mutable(db) => db.config(),
        }
    }

    /// The tree's configuration.
    pub fn tree_config(&self) -> TreeConfig {
        self.config().tree()
    }

    /// The database's directory.
    pub fn dir(&self) -> &Path {
        match &self.kind {
            Kind::AppendOnly(db) => db.dir(),
            Kind::Indexed(db) => db.dir(),
            Kind::Mutable(db) => db.dir(),
        }
    }

    /// Whether it refuses a value it holds: a lean or fixed-depth database
    /// with its nullifier set, or an indexed one (by construction).
    pub fn refuses_duplicates(&self) -> bool {
        match &self.kind {
            Kind::AppendOnly(db) => db.config().unique,
            Kind::Indexed(_) | Kind::Mutable(_) => true,
        }
    }

    /// Makes room for `additional` more values in the nullifier set, if
    /// the database keeps one (see [`Db::reserve`]); a hint, nothing for
    /// an indexed tree.
    pub fn reserve(&self, additional: u64) -> Result<()> {
        match &self.kind {
            Kind::AppendOnly(db) => db.reserve(additional),
            Kind::Indexed(_) | Kind::Mutable(_) => Ok(()),
        }
    }

    /// Whether it keeps a nullifier set beside the tree (a lean or
    /// fixed-depth database created with one; an indexed tree needs none).
    pub fn has_set(&self) -> bool {
        matches!(&self.kind, Kind::AppendOnly(db) if db.config().unique)
    }

    /// Whether it was opened read-only (no lock taken, nothing written:
    /// it answers for what was durable when it opened).
    pub fn is_read_only(&self) -> bool {
        match &self.kind {
            Kind::AppendOnly(db) => db.store.is_read_only(),
            Kind::Indexed(db) => db.is_read_only(),
            Kind::Mutable(db) => db.is_read_only(),
        }
    }

    /// Leaves appended so far, durable or not.
    pub fn size(&self) -> u64 {
        match &self.kind {
            Kind::AppendOnly(db) => db.size(),
            Kind::Indexed(db) => db.logged() + 1,
            Kind::Mutable(db) => db.accepted_size(),
        }
    }

    /// Leaves durable on disk (an indexed tree's once every durable value
    /// is applied).
    pub fn durable_size(&self) -> u64 {
        match &self.kind {
            Kind::AppendOnly(db) => db.durable_size(),
            Kind::Indexed(db) => db.durable_size(),
            Kind::Mutable(db) => db.durable_size(),
        }
    }

    /// Leaves the tree has applied: an indexed tree applies values once
    /// durable, on the next read (with [`Database::durable_size`], how far
    /// it trails); an append-only tree holds every appended leaf.
    pub fn applied_size(&self) -> u64 {
        match &self.kind {
            Kind::AppendOnly(db) => db.size(),
            Kind::Indexed(db) => db.applied_size(),
            Kind::Mutable(db) => db.durable_size(),
        }
    }

    /// Leaves below which a rollback is refused.
    pub fn finalized_size(&self) -> u64 {
        match &self.kind {
            Kind::AppendOnly(db) => db.finalized_size(),
            Kind::Indexed(db) => db.finalized_size(),
            // Finality is by block, over the log of changes: no size of
            // the tree is final (a change may still be undone).
            Kind::Mutable(_) => 0,
        }
    }

    /// The write or sync failure that stopped acknowledgements, if any.
    pub fn failure(&self) -> Option<StoreError> {
        match &self.kind {
            Kind::AppendOnly(db) => db.failure(),
            Kind::Indexed(db) => db.failure(),
            Kind::Mutable(db) => db.failure(),
        }
    }

    /// What the store reports about itself, read without waiting for a
    /// write: the failure that stopped acknowledgements, a failing
    /// checkpoint (appends go on; the store tries again), and the files
    /// found removed or replaced under it (see
    /// [`cairn_store::Store::health`]).
    pub fn health(&self) -> cairn_store::StoreHealth {
        match &self.kind {
            Kind::AppendOnly(db) => db.health(),
            Kind::Indexed(db) => db.health(),
            Kind::Mutable(db) => db.health(),
        }
    }

    /// Figures about the database: the storage engine's count the log's
    /// leaves (an indexed tree's values, without the guard).
    pub fn stats(&self) -> DbStats {
        match &self.kind {
            Kind::AppendOnly(db) => db.stats(),
            Kind::Indexed(db) => db.stats(),
            Kind::Mutable(db) => db.stats(),
        }
    }

    /// Runs `observer` after every checkpoint written (manual or automatic).
    pub fn set_checkpoint_observer(&self, observer: cairn_store::CheckpointObserver) {
        match &self.kind {
            Kind::AppendOnly(db) => db.set_checkpoint_observer(observer),
            Kind::Indexed(db) => db.set_checkpoint_observer(observer),
            Kind::Mutable(db) => db.log().set_checkpoint_observer(observer),
        }
    }

    /// Checks what derives from the leaves beyond the levels (which an open
    /// with verification recomputes): the nullifier set against the tree
    /// (every leaf at its index, nothing else), or, for an indexed tree,
    /// nothing more (its tree was rebuilt from the log's values at open,
    /// each refused if 0, not canonical or repeated). Reports the first
    /// problem as a corruption.
    pub fn check(&self) -> Result<Checked> {
        match &self.kind {
            Kind::AppendOnly(db) if db.config().unique => {
                db.check_set()?;
                Ok(Checked::Set)
            }
            Kind::AppendOnly(_) => Ok(Checked::NoSet),
            Kind::Indexed(_) | Kind::Mutable(_) => Ok(Checked::Values),
        }
    }

    /// Where the children of the node stored at `offset` of the level file
    /// `file` are, if it is one of this database's (see
    /// [`Db::children_of_stored_node`]).
    pub fn children_of_stored_node(
        &self,
        file: &Path,
        offset: u64,
    ) -> Option<cairn_store::StoredChildren> {
        match &self.kind {
            Kind::AppendOnly(db) => db.children_of_stored_node(file, offset),
            Kind::Indexed(_) | Kind::Mutable(_) => None,
        }
    }

    /// Flushes and releases the directory.
    pub fn close(self) -> Result<()> {
        match self.kind {
            Kind::AppendOnly(db) => db.close(),
            Kind::Indexed(db) => db.close(),
            Kind::Mutable(db) => db.close(),
        }
    }

    /// The lean or fixed-depth database, or the refusal of `operation`.
    fn append_only(&self, operation: Operation) -> Result<&Db> {
        match &self.kind {
            Kind::AppendOnly(db) => Ok(db),
            Kind::Indexed(_) => Err(DbError::Unsupported {
                operation,
                kind: TreeKind::Indexed,
            }),
            Kind::Mutable(_) => Err(DbError::UnsupportedMutable {
                operation,
                kind: self.kind(),
            }),
        }
    }

    /// The indexed database, or the refusal of `operation`.
    fn indexed(&self, operation: Operation) -> Result<&IndexedDb> {
        match &self.kind {
            Kind::Indexed(db) => Ok(db),
            Kind::AppendOnly(_) => Err(DbError::Unsupported {
                operation,
                kind: self.kind(),
            }),
            Kind::Mutable(_) => Err(DbError::UnsupportedMutable {
                operation,
                kind: self.kind(),
            }),
        }
    }

    /// Refuses a lookup in a database opened without its set.
    fn check_lookups(&self) -> Result<()> {
        if self.lookups {
            Ok(())
        } else {
            Err(DbError::SetNotLoaded)
        }
    }

    /// Whether the tree takes `value` as a leaf (canonical for its hash;
    /// an indexed tree's not its guard value 0), the refusal naming it as
    /// the value at `position` of a batch: what a caller streaming values
    /// checks before appending them.
    pub fn check_value(&self, position: usize, value: &Hash) -> Result<()> {
        let hash = self.tree_config().hash;
        match &self.kind {
            Kind::Mutable(db) if *value == db.zero_leaf() => {
                Err(crate::mutable::MutableError::ZeroLeaf { position }.into())
            }
            Kind::Indexed(_) if *value == [0; 32] => Err(DbError::Indexed(
                cairn_core::indexed::IndexedError::GuardValue { position },
            )),
            Kind::Indexed(_) if !hash.accepts(value) => Err(DbError::Indexed(
                cairn_core::indexed::IndexedError::NonCanonical {
                    position,
                    value: *value,
                },
            )),
            _ if !hash.accepts(value) => {
                Err(DbError::Tree(cairn_core::TreeError::NonCanonicalLeaf {
                    position,
                    leaf: *value,
                }))
            }
            _ => Ok(()),
        }
    }

    /// Refuses values no leaf of this tree can be (not canonical for its
    /// hash), naming the first.
    fn check_canonical(&self, values: &[Hash]) -> Result<()> {
        let hash = self.tree_config().hash;
        match values.iter().position(|value| !hash.accepts(value)) {
            None => Ok(()),
            Some(position) => Err(DbError::Tree(cairn_core::TreeError::NonCanonicalLeaf {
                position,
                leaf: values[position],
            })),
        }
    }
}
