//! `cairn mirror`: copy a published tile store or a cairn server into a
//! local database, verifying every head before adopting it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::anyhow;
use cairn_core::{Hash, Snapshot};
use cairn_db::{Database, DbConfig, Operation};
use cairn_server::{DbTarget, adopt_error, open_upstream};
use cairn_tiles::{
    DEFAULT_CHUNK_LEAVES, MirrorError, MirrorTarget, TargetError, Upstream, catch_up,
};

use crate::commands::forest_tiles;
use crate::commands::ingest::CHECKPOINT_AFTER;
use crate::commands::publish::RemoteArgs;
use crate::database::{self, Options};
use crate::failure::{Code, Failure};
use crate::json::Object;
use crate::output;

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Mirror the tree at --from into the cairn database DIR, verifying it: --from is a tile store that \
`cairn publish` wrote (a directory, file://PATH, http(s)://URL or s3://BUCKET/PREFIX) or the URL \
of a cairn server (its GET /v1/root, /v1/leaves and /v1/consistency). An http(s) URL is a tile \
store if it serves `checkpoint`, else a server.

A DIR without a database is created with the upstream's arity, hash and kind (--no-unique for a tree \
that repeats values). Leaves are fetched in chunks (--chunk, at most a bundle: 65,536 leaves for \
N = 2, 4, 16): from a tile store, one bundle object per chunk where the store has them (else its \
leaf tiles; --no-bundles reads chunk-sized ranges of the bundles), --in-flight of them at once, ahead of the verification. \
Whole bundles are checked against the store's nodes of the bundle level, taken once and accepted \
only if they hash to the head's root: each bundle is appended to the mirror's tree in memory, and \
made durable only if the node it hashes to there is the verified one (else it is removed again). \
Any other chunk (and every chunk from a cairn server) is adopted only if upstream proves the root \
the mirror's tree has with it to be a prefix of its head (a consistency proof; the head's root \
itself for the last chunk). A head that does \
not extend what the mirror adopted before (a fork, a rewritten history, a size going backwards) \
and a leaf tile that is wrong, short or oversized are refused loudly, naming the object, and \
nothing of them is adopted (exit 1). An upstream that cannot be reached after the retries exits 4; \
run again to resume from the adopted size. Each verified chunk is made durable as the next one is \
checked, and nothing unverified ever is, so a mirror killed at any moment resumes from the last \
durable one; a run ends with a checkpoint of the database, so \
opening the mirror afterwards does not rehash its log.

Signed checkpoints: with --verify-key FILE (a file of verifier keys, one per line, as `cairn \
keygen` prints them; repeatable) the store's checkpoint must be a signed checkpoint (`cairn \
publish --sign-key`, `cairn serve --publish` with a key) whose signature by one of those keys \
verifies and whose origin is that key's name; an unsigned checkpoint, one signed by another key, \
or one whose text or signature was changed is refused loudly, naming the object, before anything \
is fetched or adopted (exit 1). Without --verify-key the checkpoint, signed or not, is trusted as \
far as the place it comes from (the transport); each new head is still checked to extend the one \
adopted. --verify-key applies to tile stores, not to a cairn server's URL.

With --follow the mirror keeps following (every --interval seconds) until SIGINT/SIGTERM; to \
serve a mirror while it follows, run `cairn serve DIR --read-only --mirror-from URL`.

--json prints {\"size\":S,\"root\":\"0x..\"|null,\"adopted\":A,\"from\":\"..\"}.

Examples:
  cairn publish db --to public && cairn mirror --from public replica
  cairn mirror --from https://tiles.example.org/nullifiers replica --json
  cairn mirror --from http://127.0.0.1:7878 replica --follow
  cairn keygen --name example.org/db --out db.key > db.vkey && cairn publish db --to public --sign-key db.key && cairn mirror --from public replica --verify-key db.vkey";

/// Copy and verify a tile store or a cairn server into a database.
#[derive(clap::Args, Debug)]
pub struct MirrorCmd {
    /// What to mirror: a tile store (path, file://, http(s)://, s3://) or a cairn server's URL.
    #[arg(long, value_name = "URL")]
    from: String,
    /// The mirror's database directory (created if it holds none).
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// Keep following upstream until interrupted.
    #[arg(long)]
    follow: bool,
    /// With --follow: seconds between looks at upstream.
    #[arg(long, value_name = "SECONDS", default_value_t = 1.0)]
    interval: f64,
    /// Leaves fetched, verified and adopted at once.
    #[arg(long, value_name = "LEAVES", default_value_t = DEFAULT_CHUNK_LEAVES)]
    chunk: u64,
    /// Bundles (2 MiB each) fetched at once, ahead of their verification (at most 16).
    #[arg(long, value_name = "N", default_value_t = cairn_tiles::DEFAULT_IN_FLIGHT)]
    in_flight: usize,
    /// Read chunk-sized ranges of the bundles rather than whole ones, and
    /// leaf tiles elsewhere (to compare the two).
    #[arg(long)]
    no_bundles: bool,
    /// When creating DIR: keep no nullifier set (for trees that repeat values).
    #[arg(long)]
    no_unique: bool,
    /// Trust only checkpoints signed by a key in this file (one verifier key per line; repeatable).
    #[arg(long, value_name = "FILE")]
    verify_key: Vec<PathBuf>,
    /// How remote stores are reached.
    #[command(flatten)]
    remote: RemoteArgs,
    /// Of a store of several trees: mirror only this tree, into a database of one tree.
    #[arg(long, value_name = "NAME")]
    tree: Option<String>,
    /// Print the result as one line of JSON.
    #[arg(long)]
    json: bool,
}

/// The keys of the `--verify-key` files, if any (exit 2 for a file that
/// holds none or a malformed one, 4 for one that cannot be read).
pub(crate) fn trusted_keys(paths: &[PathBuf]) -> Result<Option<cairn_tiles::SignedBy>, Failure> {
    cairn_server::trusted_keys(paths).map_err(|e| {
        let error = anyhow!("--verify-key: {e}");
        match e {
            cairn_note::KeyError::File { .. } if paths.iter().any(|p| !p.exists()) => {
                Failure::new(Code::Input, error)
            }
            _ => Failure::new(Code::Usage, error),
        }
    })
}

/// The store at `from` if it is a tile store whose checkpoint is a forest
/// checkpoint (a cairn server, a missing or single-tree checkpoint: `None`).
fn forest_store(
    from: &str,
    remote: &RemoteArgs,
) -> Result<Option<Arc<dyn cairn_tiles::TileSource>>, Failure> {
    let Ok(location) = cairn_tiles::Location::parse(from) else {
        return Ok(None);
    };
    let Ok(source) = cairn_tiles::open_source(&location, &remote.options()) else {
        return Ok(None);
    };
    match source.get(cairn_tiles::CHECKPOINT, cairn_tiles::CHECKPOINT_MAX_BYTES) {
        Ok(bytes) if cairn_tiles::is_forest_checkpoint(&bytes) => Ok(Some(Arc::from(source))),
        _ => Ok(None),
    }
}

/// Maps a mirror's error to an exit code: refused is a failed check (1),
/// unreachable or a database fault is I/O (4).
pub(crate) fn mirror_failure(error: MirrorError) -> Failure {
    match error {
        MirrorError::Refused { .. } => Failure::new(Code::Invalid, error),
        _ => Failure::new(Code::Input, error),
    }
}

/// Creates the mirror's database in `dir` from upstream's tree (arity, hash, kind),
/// unless `dir` holds one.
pub(crate) fn create_for(
    dir: &Path,
    upstream: &mut dyn Upstream,
    no_unique: bool,
) -> Result<(), Failure> {
    if database::is_database(dir) {
        return Ok(());
    }
    let head = upstream.head().map_err(mirror_failure)?;
    let mut config = DbConfig::new(head.tree);
    config.unique = !no_unique;
    config.store.flush_interval = None;
    config.store.checkpoint = Default::default();
    let db = Database::create(dir, config).map_err(database::db_failure)?;
    db.close().map_err(database::db_failure)
}

/// The most leaves a catch-up makes room for in the nullifier set before
/// any of them is verified (about 10 bytes each: 1.3 GB of address space,
/// taken by the pages only as values land in them).
const RESERVE_AT_MOST: u64 = 1 << 27;

/// The mirror's database as the target of [`catch_up`], staging each
/// chunk so that the mirror hashes it once: staged leaves are appended to
/// the tree in memory, where nothing makes them durable (the database runs
/// no background flush, and no checkpoint is taken while a chunk is
/// staged), then made durable up to their end once verified (`flush_to`,
/// which writes nothing past it), or rolled back (`truncate`: out of the
/// tree and the nullifier set, nothing of them on disk). The flush of a
/// committed chunk runs on a thread of its own while the next chunk is
/// staged and checked; the next commit, a discard or a sync waits for it.
struct Staging {
    db: Arc<Database>,
    /// The adopted size while a chunk is staged.
    staged: Option<u64>,
    /// The flush of the last committed chunk, and its end.
    flushing: Option<(u64, std::thread::JoinHandle<cairn_db::Result<u64>>)>,
}

impl Staging {
    fn new(db: Arc<Database>) -> Staging {
        Staging {
            db,
            staged: None,
            flushing: None,
        }
    }

    /// Waits for the flush of the last committed chunk.
    fn settle(&mut self) -> Result<(), TargetError> {
        if let Some((end, flush)) = self.flushing.take() {
            let durable = match flush.join() {
                Ok(durable) => durable?,
                Err(panic) => std::panic::resume_unwind(panic),
            };
            if durable < end {
                return Err(format!("{end} leaves adopted, {durable} durable").into());
            }
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        // No flush outlives its target (the database is closed after).
        let _ = self.settle();
    }
}

impl MirrorTarget for Staging {
    fn adopted(&self) -> Arc<Snapshot> {
        DbTarget(Arc::clone(&self.db)).adopted()
    }

    fn adopt(&mut self, leaves: &[Hash]) -> Result<(), TargetError> {
        self.settle()?;
        DbTarget(Arc::clone(&self.db)).adopt(leaves)
    }

    fn sync(&mut self) -> Result<(), TargetError> {
        self.settle()?;
        DbTarget(Arc::clone(&self.db)).sync()
    }

    /// Makes room in the nullifier set for the leaves upstream claims to
    /// bring (as an ingest does for its file), so that adopting them grows
    /// none of its tables: a growth moves every entry of its table, and
    /// growing as the chunks come moves each entry several times. At most
    /// [`RESERVE_AT_MOST`]: the claim is not verified yet, and an
    /// upstream that lies about its size must not make the mirror take
    /// more memory than that before a leaf verifies. A set that cannot
    /// make room grows as the leaves come.
    fn expect(&mut self, leaves: u64) {
        let _ = self.db.reserve(leaves.min(RESERVE_AT_MOST));
    }

    fn stages(&self) -> bool {
        true
    }

    fn stage(&mut self, leaves: &[Hash]) -> Result<Arc<Snapshot>, TargetError> {
        let before = self.db.size();
        let want = before + leaves.len() as u64;
        // Nothing is staged before (each chunk is committed or discarded
        // first), so the append is done here, or refused whole.
        let _not_waited = self.db.append(leaves).map_err(adopt_error)?;
        self.staged = Some(before);
        if self.db.size() != want {
            self.discard()?;
            return Err(format!(
                "staging leaves {before}..{want}: the tree holds {} leaves",
                self.db.size()
            )
            .into());
        }
        Ok(self.db.tree_snapshot()?)
    }

    fn commit(&mut self) -> Result<(), TargetError> {
        self.settle()?;
        let end = self.db.size();
        let db = Arc::clone(&self.db);
        let flush = std::thread::Builder::new()
            .name("cairn-mirror-flush".into())
            .spawn(move || db.flush_to(end))?;
        self.flushing = Some((end, flush));
        self.staged = None;
        Ok(())
    }

    fn discard(&mut self) -> Result<(), TargetError> {
        self.settle()?;
        if let Some(before) = self.staged.take()
            && self.db.size() > before
        {
            self.db.truncate(before)?;
        }
        Ok(())
    }
}

/// Checkpoints the mirror as an ingest checkpoints its primary: once
/// [`CHECKPOINT_AFTER`] leaves were adopted since the last checkpoint, and
/// at the end of a run (`last`) whatever was adopted, so that the next
/// open of the mirror reads its upper levels instead of rehashing its log.
fn checkpoint_adopted(db: &Database, last: bool) -> Result<(), Failure> {
    let stats = db.stats();
    let behind = stats.store.size - stats.store.checkpoint_size;
    if behind >= CHECKPOINT_AFTER || (last && behind > 0) {
        db.checkpoint().map_err(database::db_failure)?;
    }
    Ok(())
}

impl MirrorCmd {
    /// A store of several trees into a database of several trees.
    fn run_forest(
        &self,
        source: Arc<dyn cairn_tiles::TileSource>,
        trusted: Option<&cairn_tiles::SignedBy>,
    ) -> Result<(), Failure> {
        let keys = trusted.map(|k| k.keys());
        let mut adopted = 0;
        let done = loop {
            match forest_tiles::mirror_forest(Arc::clone(&source), &self.dir, keys, self.no_unique)
            {
                Ok(done) => {
                    adopted += done.adopted;
                    if !self.follow {
                        break done;
                    }
                }
                Err(error) if !self.follow => return Err(error),
                Err(error) => eprintln!("warning: {error}"),
            }
            std::thread::sleep(std::time::Duration::from_secs_f64(self.interval.max(0.01)));
        };
        if self.json {
            return output::line(
                &Object::new()
                    .field("block", done.head.block)
                    .field("trees", done.head.trees)
                    .hash("root", Some(&done.head.root))
                    .field("adopted", adopted)
                    .field("from", self.from.clone())
                    .finish(),
            );
        }
        output::line(&format!(
            "mirrored {} leaves of {} trees from {}: block {}, root of roots {}",
            crate::units::group(adopted),
            done.head.trees,
            self.from,
            done.head.block,
            cairn_core::hex::to_hex(&done.head.root)
        ))
    }

    pub(crate) fn run(self) -> Result<(), Failure> {
        let trusted = trusted_keys(&self.verify_key)?;
        let forest = forest_store(&self.from, &self.remote)?;
        let mut upstream: Box<dyn Upstream> = match (forest, &self.tree) {
            (Some(source), None) => return self.run_forest(source, trusted.as_ref()),
            (Some(source), Some(name)) => Box::new(forest_tiles::ForestTreeUpstream::new(
                source,
                trusted.as_ref().map(|k| k.keys().to_vec()),
                name,
            )),
            (None, Some(name)) => {
                return Err(Failure::new(
                    Code::Usage,
                    anyhow!(
                        "--tree {name}: {} is not a store of several trees (its checkpoint is no forest checkpoint)",
                        self.from
                    ),
                ));
            }
            (None, None) => open_upstream(
                &self.from,
                &cairn_tiles::RemoteOptions {
                    bulk_in_flight: self.in_flight.clamp(1, 16),
                    bulk_bundles: !self.no_bundles,
                    ..self.remote.options()
                },
                trusted.as_ref(),
            )
            .map_err(|why| Failure::new(Code::Usage, anyhow!("{why}")))?,
        };
        create_for(&self.dir, &mut *upstream, self.no_unique)?;
        // Nothing in the background: a staged chunk stays in memory until
        // it is verified (`Staging`).
        let db = Arc::new(database::open(
            &self.dir,
            Options {
                background: false,
                verify: false,
            },
        )?);
        db.supports(Operation::Tiles)
            .map_err(database::db_failure)?;
        let mut target = Staging::new(Arc::clone(&db));
        let mut adopted = 0;
        let result = loop {
            match catch_up(&mut *upstream, &mut target, self.chunk) {
                Ok(done) => {
                    adopted += done.adopted;
                    if let Err(error) = checkpoint_adopted(&db, !self.follow) {
                        break Err(error);
                    }
                    if !self.follow {
                        break Ok(done.head);
                    }
                }
                Err(error) if !self.follow => break Err(mirror_failure(error)),
                Err(error) => eprintln!("warning: {error}"),
            }
            std::thread::sleep(std::time::Duration::from_secs_f64(self.interval.max(0.01)));
        };
        // A chunk committed before a failure is durable before the error
        // is reported.
        let result = match (result, target.settle()) {
            (Ok(_), Err(error)) => Err(Failure::new(Code::Input, anyhow!("{error}"))),
            (result, _) => result,
        };
        drop(target);
        let db = Arc::try_unwrap(db)
            .map_err(|_| Failure::new(Code::Input, anyhow!("the database is still in use")))?;
        db.close().map_err(database::db_failure)?;
        let head = result?;
        if self.json {
            return output::line(
                &Object::new()
                    .field("size", head.size)
                    .hash("root", head.root.as_ref())
                    .field("adopted", adopted)
                    .field("from", self.from.clone())
                    .finish(),
            );
        }
        output::line(&format!(
            "mirrored {} leaves from {}: size {}, root {}",
            crate::units::group(adopted),
            self.from,
            head.size,
            head.root
                .map_or_else(|| "none".to_owned(), |r| cairn_core::hex::to_hex(&r))
        ))
    }
}
