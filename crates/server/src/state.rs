//! What every handler shares: the database, the configuration, the
//! metrics, the first storage fault a request met, and the lock that keeps
//! rollbacks apart from the requests in flight.
//!
//! Invariant: a rollback holds `rollbacks` exclusively; an append holds it
//! shared from its start to its answer, and so do the reads the database
//! makes between rollbacks (tagged heads, roots by value). So no append in
//! flight is removed before it is answered, no answer names a head a
//! rollback that answered before it removed, and no worker blocks on the
//! database's wait for a running rollback: requests await the lock instead.

use std::sync::Arc;

use cairn_db::{Database, DbError, Forest};
use parking_lot::Mutex;

use crate::config::ServerConfig;
use crate::metrics::Metrics;

/// What every handler shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub db: Arc<Database>,
    pub config: ServerConfig,
    pub metrics: Arc<Metrics>,
    /// The first storage fault a request met that the store did not
    /// record itself (a write of the nullifier set's files; the store's
    /// own write and sync failures are in its durable head): the server
    /// reports itself unhealthy after either.
    failure: Mutex<Option<String>>,
    /// Held shared by appends and by reads made between rollbacks, and
    /// exclusively by a rollback (an async lock: waiters hold no thread).
    /// One lock for every tree of a database of several: a rollback there
    /// acts on them all.
    pub rollbacks: Arc<tokio::sync::RwLock<()>>,
    /// Serialises rollbacks and finalizations (each checks the durable
    /// size, then acts on it); shared like `rollbacks`.
    pub writes: Arc<Mutex<()>>,
    /// The database of several trees this tree is one of, and its name
    /// there, when its writes go through that database's block journal.
    pub forest: Option<TreeOf>,
}

/// A tree of a journaled database of several trees: every write to it is
/// made through the database (one journal frame each), never to the tree
/// alone.
#[derive(Clone, Debug)]
pub(crate) struct TreeOf {
    pub forest: Arc<Forest>,
    pub name: String,
}

/// What the trees of one server share: the rollback lock and the writes
/// lock (a rollback of a database of several trees acts on all of them).
#[derive(Clone, Debug, Default)]
pub(crate) struct Locks {
    pub rollbacks: Arc<tokio::sync::RwLock<()>>,
    pub writes: Arc<Mutex<()>>,
}

/// The handlers' state.
#[derive(Clone, Debug)]
pub(crate) struct AppState(Arc<Shared>);

impl AppState {
    pub fn new(db: Arc<Database>, config: ServerConfig) -> AppState {
        AppState::with_metrics(db, config, &Arc::new(Metrics::default()))
    }

    /// [`AppState::new`] counting in `metrics` (a read-only server's
    /// openings share one).
    pub fn with_metrics(
        db: Arc<Database>,
        config: ServerConfig,
        metrics: &Arc<Metrics>,
    ) -> AppState {
        AppState::of_tree(db, config, metrics, None, &Locks::default())
    }

    /// The state of one tree of a server of several: its own metrics,
    /// the locks every tree shares, and the database it is part of.
    pub fn of_tree(
        db: Arc<Database>,
        config: ServerConfig,
        metrics: &Arc<Metrics>,
        forest: Option<TreeOf>,
        locks: &Locks,
    ) -> AppState {
        let metrics = Arc::clone(metrics);
        // Every checkpoint written while serving, the store's automatic
        // ones included (not only the one at shutdown).
        let observed = Arc::clone(&metrics);
        db.set_checkpoint_observer(Box::new(move |_, elapsed| {
            observed.observe_checkpoint(elapsed);
        }));
        AppState(Arc::new(Shared {
            db,
            config,
            metrics,
            failure: Mutex::new(None),
            rollbacks: Arc::clone(&locks.rollbacks),
            writes: Arc::clone(&locks.writes),
            forest,
        }))
    }

    pub fn shared(&self) -> &Shared {
        &self.0
    }
}

impl Shared {
    /// The first storage fault: the store's (a failed write or sync of
    /// the log stops every acknowledgement), else one a request met.
    pub fn failure(&self) -> Option<String> {
        if let Some(failure) = self.db.failure() {
            return Some(failure.to_string());
        }
        self.failure.lock().clone()
    }

    /// Records a storage fault a request met, if it is the first and it
    /// stopped acknowledgements (a failed checkpoint, rollback
    /// publication or finalization changes nothing and is in the store's
    /// health).
    pub fn record_failure(&self, error: &DbError) {
        if error.is_storage_fault() && self.db.health().failure.is_some() {
            let mut failure = self.failure.lock();
            if failure.is_none() {
                tracing::error!(error = %error, "the database failed: no more appends will be acknowledged");
                *failure = Some(error.to_string());
            }
        }
    }

    /// Whether an answer about the tree of `size` leaves, asked for
    /// explicitly, can never change: no rollback can reach below the
    /// finalized size. An answer at the current size follows the tree.
    pub fn is_final(&self, explicit: Option<u64>) -> bool {
        explicit.is_some_and(|size| size <= self.db.finalized_size())
    }
}
