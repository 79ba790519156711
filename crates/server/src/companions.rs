//! What runs beside the server on its own threads: the tile publisher
//! (`--publish URL`), which keeps a tile store at the durable (or
//! finalized) size, and the mirror's follower (`--mirror-from URL`), which
//! adopts verified upstream heads into the served database. They read
//! snapshots and append like any writer, so appends never wait on them;
//! their figures are in `/metrics`. Stopped and joined at shutdown, before
//! the final flush.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use cairn_core::{Hash, Snapshot};
use cairn_db::{Database, Operation};
use cairn_note::Signer;
use cairn_tiles::{
    CheckpointSignature, Follower, FollowerStatus, Location, MirrorTarget, Publisher,
    PublisherStatus, RemoteOptions, ServerUpstream, SignedBy, Stop, TilesUpstream, Unsigned,
    Upstream,
};

use crate::error::ServerError;

/// Where and how a server publishes its tiles.
#[derive(Clone, Debug)]
pub struct PublishSettings {
    /// The tile store (a directory or `s3://`).
    pub location: Location,
    /// How a remote store is reached.
    pub remote: RemoteOptions,
    /// Publish the finalized size instead of the durable one (for
    /// databases that are rolled back).
    pub finalized: bool,
    /// How often to look for new durable leaves.
    pub interval: Duration,
}

/// What a read-only mirror server follows.
#[derive(Clone, Debug)]
pub struct MirrorSettings {
    /// The upstream: a tile store or a cairn server's URL.
    pub from: String,
    /// How it is reached.
    pub remote: RemoteOptions,
    /// How often to look at it.
    pub interval: Duration,
    /// Leaves verified and adopted at once.
    pub chunk_leaves: u64,
    /// The keys a tile store's checkpoint must be signed by (`--verify-key`);
    /// `None` trusts the transport.
    pub trusted: Option<SignedBy>,
}

/// How long a mirror waits for a chunk of adopted leaves to be durable.
const ADOPT_TIMEOUT: Duration = Duration::from_secs(3600);

/// A mirror's database as the target of a follower: appends of verified
/// leaves, each chunk durable before the next.
#[derive(Debug, Clone)]
pub struct DbTarget(pub Arc<Database>);

impl MirrorTarget for DbTarget {
    fn adopted(&self) -> Arc<Snapshot> {
        self.0
            .tree_snapshot()
            .expect("a mirror's database has tiles (checked when it starts)")
    }

    fn adopt(&mut self, leaves: &[Hash]) -> Result<(), cairn_tiles::TargetError> {
        let db = &self.0;
        let acked = db
            .append(leaves)
            .and_then(|ack| ack.wait(db, ADOPT_TIMEOUT));
        acked.map(|_| ()).map_err(adopt_error)
    }

    fn sync(&mut self) -> Result<(), cairn_tiles::TargetError> {
        self.0.flush().map(|_| ()).map_err(Into::into)
    }
}

/// The error of a mirror's append, with a hint when upstream repeats
/// values the mirror's nullifier set refuses.
pub fn adopt_error(e: cairn_db::DbError) -> cairn_tiles::TargetError {
    if matches!(e, cairn_db::DbError::Duplicates { .. }) {
        format!("{e} (upstream repeats values: mirror it into a database made with --no-unique)")
            .into()
    } else {
        e.into()
    }
}

/// Refuses a database that cannot be published or mirrored (tiles are of
/// append-only trees).
pub fn check_tiles(db: &Database) -> Result<(), ServerError> {
    db.supports(Operation::Tiles)
        .map_err(|refusal| ServerError::Usage(refusal.to_string()))
}

/// The upstream at `from`: a cairn server when `from` is an http(s) URL
/// answering `GET /v1/root`, else a tile store (its `checkpoint`), whose
/// checkpoints must be signed by one of `trusted`'s keys when given.
pub fn open_upstream(
    from: &str,
    remote: &RemoteOptions,
    trusted: Option<&SignedBy>,
) -> Result<Box<dyn Upstream + Send>, String> {
    let signature = || -> Box<dyn CheckpointSignature> {
        match trusted {
            Some(keys) => Box::new(keys.clone()),
            None => Box::new(Unsigned),
        }
    };
    let server_upstream = |url: &str| -> Result<Box<dyn Upstream + Send>, String> {
        if trusted.is_some() {
            return Err(format!(
                "{from} is a cairn server, not a tile store: verifier keys check a tile store's signed checkpoint (give the URL of the store `cairn publish` or `cairn serve --publish` writes)"
            ));
        }
        Ok(Box::new(
            ServerUpstream::new(url, remote).map_err(|e| e.to_string())?,
        ))
    };
    let location = Location::parse(from).map_err(|e| e.to_string())?;
    if let Location::Http(url) = &location {
        let source = cairn_tiles::open_source(&location, remote).map_err(|e| e.to_string())?;
        // A tile store has a checkpoint; a cairn server answers /v1/root.
        match source.get(cairn_tiles::CHECKPOINT, cairn_tiles::CHECKPOINT_MAX_BYTES) {
            Ok(_) => {}
            Err(e) if e.missing => return server_upstream(url),
            Err(e) => return Err(e.to_string()),
        }
        return Ok(Box::new(
            TilesUpstream::new(source, signature())
                .with_in_flight(remote.bulk_in_flight)
                .with_bundles(remote.bulk_bundles),
        ));
    }
    let source = cairn_tiles::open_source(&location, remote).map_err(|e| e.to_string())?;
    Ok(Box::new(
        TilesUpstream::new(source, signature())
            .with_in_flight(remote.bulk_in_flight)
            .with_bundles(remote.bulk_bundles),
    ))
}

/// The running companions.
#[derive(Debug, Default)]
pub(crate) struct Companions {
    stop: Arc<Stop>,
    threads: Vec<JoinHandle<()>>,
    pub publisher: Option<Arc<PublisherStatus>>,
    pub follower: Option<Arc<FollowerStatus>>,
}

impl Companions {
    /// Starts the companions asked for: a publisher (signing with
    /// `signer`) and a mirror's follower. Each opens its store on its own
    /// thread (remote stores block on their own runtime, which cannot run
    /// inside the server's), and this waits for the opening.
    pub async fn start(
        db: &Arc<Database>,
        publish: Option<PublishSettings>,
        mirror: Option<MirrorSettings>,
        signer: Option<Arc<Signer>>,
    ) -> Result<Companions, ServerError> {
        let mut companions = Companions {
            stop: Stop::new(),
            ..Companions::default()
        };
        if publish.is_some() || mirror.is_some() {
            check_tiles(db)?;
        }
        if let Some(settings) = publish {
            let status = Arc::new(PublisherStatus::default());
            let source_db = Arc::clone(db);
            let run_status = Arc::clone(&status);
            let stop = Arc::clone(&companions.stop);
            let pin_db = Arc::clone(db);
            let thread = start_thread("cairn-publisher", move || {
                let sink = cairn_tiles::open_sink(&settings.location, &settings.remote)
                    .map_err(|e| e.to_string())?;
                let finalized = settings.finalized;
                let signed = signer.as_ref().map(|s| format!("{}+{:08x}", s.name(), s.id()));
                tracing::info!(store = %settings.location, finalized, signed_by = ?signed, "publishing tiles");
                Ok(move || {
                    Publisher {
                        sink,
                        // Durable first, then the snapshot: the snapshot
                        // then holds every durable leaf.
                        source: Box::new(move || {
                            let durable = source_db.durable_size();
                            let target = if finalized {
                                source_db.finalized_size().min(durable)
                            } else {
                                durable
                            };
                            let snapshot = source_db
                                .tree_snapshot()
                                .expect("a published database has tiles (checked above)");
                            (snapshot, durable, target)
                        }),
                        interval: settings.interval,
                        max_backoff: Duration::from_secs(60),
                        status: run_status,
                        signer,
                        pin: Some(Box::new(move |head| {
                            pin_db.pin_published(head).map_err(|e| {
                                format!(
                                    "making the first {} leaves final before publishing them: {e}",
                                    head.size
                                )
                                .into()
                            })
                        })),
                    }
                    .run(&stop);
                })
            })
            .await?;
            companions.threads.push(thread);
            companions.publisher = Some(status);
        }
        if let Some(settings) = mirror {
            let status = Arc::new(FollowerStatus::default());
            status
                .adopted_size
                .store(db.size(), std::sync::atomic::Ordering::Relaxed);
            let target = DbTarget(Arc::clone(db));
            let run_status = Arc::clone(&status);
            let stop = Arc::clone(&companions.stop);
            let thread = start_thread("cairn-mirror", move || {
                let upstream =
                    open_upstream(&settings.from, &settings.remote, settings.trusted.as_ref())?;
                tracing::info!(upstream = %upstream.describe(), "mirroring");
                Ok(move || {
                    Follower {
                        upstream,
                        target: Box::new(target),
                        chunk_leaves: settings.chunk_leaves,
                        interval: settings.interval,
                        max_backoff: Duration::from_secs(60),
                        status: run_status,
                    }
                    .run(&stop);
                })
            })
            .await?;
            companions.threads.push(thread);
            companions.follower = Some(status);
        }
        Ok(companions)
    }

    /// Stops every companion and waits for it (a publisher first publishes
    /// the last durable size).
    pub fn stop_and_join(&mut self) {
        self.stop.stop();
        for thread in self.threads.drain(..) {
            if thread.join().is_err() {
                tracing::error!("a companion thread panicked");
            }
        }
    }
}

/// Runs `open` on a new thread, then what it returns there; the opening's
/// error, if any, is this call's.
async fn start_thread<R: FnOnce() + Send + 'static>(
    name: &str,
    open: impl FnOnce() -> Result<R, String> + Send + 'static,
) -> Result<JoinHandle<()>, ServerError> {
    let (opened, on_open) = tokio::sync::oneshot::channel::<Result<(), String>>();
    let thread = std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || match open() {
            Ok(run) => {
                let _ = opened.send(Ok(()));
                run();
            }
            Err(why) => {
                let _ = opened.send(Err(why));
            }
        })
        .map_err(|source| ServerError::Io {
            what: "starting a companion thread",
            source,
        })?;
    match on_open.await {
        Ok(Ok(())) => Ok(thread),
        Ok(Err(why)) => {
            let _ = thread.join();
            Err(ServerError::Usage(why))
        }
        Err(_) => Err(ServerError::Usage(format!("{name} ended while opening"))),
    }
}
