//! A verifying mirror: copies the leaves of an upstream tree (a published
//! tile store, or a cairn server's leaf range API) into a local tree, and
//! adopts a new upstream head only once it is proven to extend the head it
//! adopted last.
//!
//! Invariant: a leaf reaches the target only inside a verified chunk. For
//! each chunk `[a, e)` of the upstream head `(S, R)`, the mirror hashes the
//! root at `e` itself, from its own tree of `a` leaves and the chunk
//! (`root_after`), and checks a consistency proof from `(e, that root)` to
//! `(S, R)` fetched from upstream (at `e = S`, the root must equal `R`). So
//! every adopted leaf is one of the upstream head's, the target's tree is
//! always a prefix of it, and a head that forks from what was adopted
//! (another root at an adopted size, a size going backwards) is refused
//! before anything is fetched.

use std::sync::Arc;
use std::time::Duration;

use cairn_core::hex::to_hex;
use cairn_core::{ConsistencyProof, Hash, Snapshot, TreeHead, VerifyError};

use crate::bulk::{self, Ahead, DEFAULT_IN_FLIGHT};
use crate::checkpoint::{Checkpoint, MAGIC, MAGIC_KINDS, describe_tree};
use crate::client::{TileError, TileTree, read_checkpoint_checked};
use crate::pipeline;
use crate::publish::CHECKPOINT;
use crate::remote::{OpenError, RemoteOptions};
use crate::signed::CheckpointSignature;
use crate::store::{ObjectError, TileSource};

/// Why the mirror's own tree refused a write (the target's error, kept
/// whole for the caller).
pub type TargetError = Box<dyn std::error::Error + Send + Sync>;

/// Why a mirror stopped.
#[derive(Debug, thiserror::Error)]
pub enum MirrorError {
    /// Upstream could not be read (after the retries): nothing was adopted
    /// past the last verified chunk; try again later.
    #[error("{0}")]
    Unreachable(String),
    /// Upstream answered something that fails verification: a fork, a
    /// rewritten history, a size going backwards, a wrong, short or
    /// oversized object. Nothing of it was adopted.
    #[error("refused {object}: {reason}")]
    Refused {
        /// The object or answer refused (`s3://b/p/tile/0/003`, a URL).
        object: String,
        /// Why.
        reason: String,
    },
    /// The local tree refused a write, or is not what was adopted.
    #[error("the mirror's database: {0}")]
    Target(TargetError),
}

/// Why upstream does not prove a head to be a prefix of its own.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NotAPrefix {
    /// Upstream's consistency proof does not verify.
    #[error("{0}")]
    Proof(Box<VerifyError>),
    /// The consistency proof computed from upstream's tiles does not verify.
    #[error("{reason} (tiles read: {})", objects.join(", "))]
    Tiles {
        /// What the verifier said.
        reason: Box<VerifyError>,
        /// The tiles the proof was computed from.
        objects: Vec<String>,
    },
    /// At the head's own size, another root.
    #[error("they hash to root {}, the head's root is {}", show_root(computed.as_ref()), show_root(head.as_ref()))]
    Root {
        /// The root computed.
        computed: Option<Hash>,
        /// The head's root.
        head: Option<Hash>,
    },
}

fn show_root(root: Option<&Hash>) -> String {
    root.map_or_else(|| "none".to_owned(), to_hex)
}

impl From<ObjectError> for MirrorError {
    fn from(error: ObjectError) -> MirrorError {
        if error.too_large {
            MirrorError::Refused {
                object: format!("{}/{}", error.store, error.path),
                reason: error.message,
            }
        } else {
            MirrorError::Unreachable(error.to_string())
        }
    }
}

/// What a mirror follows.
pub trait Upstream {
    /// Where it is, for messages.
    fn describe(&self) -> String;
    /// Its newest head, with the tree's arity and hash.
    fn head(&mut self) -> Result<Checkpoint, MirrorError>;
    /// Leaves `[from, to)` of the tree at `head` (`to <= head.size`),
    /// checked for length only: the caller verifies them.
    fn leaves(&mut self, head: &Checkpoint, from: u64, to: u64) -> Result<Vec<Hash>, MirrorError>;
    /// Proves `old` is a prefix of `new` (both upstream's tree), or says
    /// why not.
    fn prove_prefix(
        &mut self,
        new: &Checkpoint,
        old: &TreeHead,
    ) -> Result<Result<(), NotAPrefix>, MirrorError>;
    /// Proves that `new` extends the tree the mirror adopted, `adopted`
    /// (whose head is trusted), or says why not. By default
    /// [`Upstream::prove_prefix`] of its head; an upstream that builds the
    /// proof from its objects (a tile store) reads the nodes left of the
    /// adopted size from `adopted` instead, so that a mirror resuming never
    /// fetches again what it already verified.
    fn prove_extends(
        &mut self,
        new: &Checkpoint,
        adopted: &Snapshot,
    ) -> Result<Result<(), NotAPrefix>, MirrorError> {
        self.prove_prefix(new, &adopted.head())
    }
    /// The chunk this upstream serves best for `head` (its bundle size):
    /// [`catch_up`] then asks for chunks ending on its multiples. `None`:
    /// the caller's chunk size.
    fn chunk_hint(&self, _head: &Checkpoint) -> Option<u64> {
        None
    }
    /// Says that leaves `[from, to)` of `head` will be asked for next, in
    /// chunks ending on multiples of `chunk` (and at `to`), so that
    /// upstream may fetch them ahead, concurrently with their verification.
    fn fetch_ahead(&mut self, _head: &Checkpoint, _from: u64, _to: u64, _chunk: u64) {}
    /// Whether upstream's own objects agree with `head` (a tile store: the
    /// root its tiles hash to is the checkpoint's), or what disagrees:
    /// asked once a chunk failed, so that a checkpoint over another
    /// history's tiles is named rather than the first leaf tile.
    fn check_head(&mut self, _head: &Checkpoint) -> Result<Result<(), MirrorError>, MirrorError> {
        Ok(Ok(()))
    }
    /// The object the leaves `[from, to)` last returned came from, when it
    /// was one object (a bundle): a refusal of them names it.
    fn leaves_object(&self, _from: u64, _to: u64) -> Option<String> {
        None
    }
    /// Nodes `[from, to)` of tree level `level` of `head`'s tree as
    /// upstream's own objects give them (a tile store: from its tiles, the
    /// last one computed from the tiles below when it is not final), not
    /// verified: the caller checks them against the head's root. `None`
    /// when upstream has no such objects (a cairn server); the mirror then
    /// verifies every chunk by a proof.
    fn nodes(
        &mut self,
        _head: &Checkpoint,
        _level: u32,
        _from: u64,
        _to: u64,
    ) -> Option<Result<Vec<Hash>, MirrorError>> {
        None
    }
}

/// The tree a mirror writes to.
pub trait MirrorTarget {
    /// The adopted tree, as it is now.
    fn adopted(&self) -> Arc<Snapshot>;
    /// Appends verified leaves.
    fn adopt(&mut self, leaves: &[Hash]) -> Result<(), TargetError>;
    /// Makes everything adopted durable.
    fn sync(&mut self) -> Result<(), TargetError>;
    /// Told, before a catch-up fetches anything, how many leaves it brings
    /// if every chunk verifies: upstream's claim, a hint and no promise
    /// (nothing of it is verified yet), so that the target can make room
    /// for them at once rather than growing as they come. Nothing by
    /// default.
    fn expect(&mut self, _leaves: u64) {}
    /// Whether the target stages leaves ([`MirrorTarget::stage`]); `false`
    /// by default. A target that does lets the mirror hash a chunk once:
    /// its own tree computes the chunk's node, which the mirror compares
    /// with the verified one before the chunk is committed.
    fn stages(&self) -> bool {
        false
    }
    /// Appends leaves not verified yet (one chunk at a time, after the
    /// adopted ones) such that nothing of them is durable or served before
    /// [`MirrorTarget::commit`], and returns the tree with them, from
    /// which the mirror reads the node it checks.
    fn stage(&mut self, _leaves: &[Hash]) -> Result<Arc<Snapshot>, TargetError> {
        Err("this mirror target does not stage leaves".into())
    }
    /// Adopts the staged leaves (they were verified): like
    /// [`MirrorTarget::adopt`] of them.
    fn commit(&mut self) -> Result<(), TargetError> {
        Err("this mirror target does not stage leaves".into())
    }
    /// Removes the staged leaves (they failed verification), leaving the
    /// tree as adopted, with nothing of them durable.
    fn discard(&mut self) -> Result<(), TargetError> {
        Err("this mirror target does not stage leaves".into())
    }
}

/// What one [`catch_up`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CaughtUp {
    /// The upstream head now adopted.
    pub head: TreeHead,
    /// Leaves adopted by this call.
    pub adopted: u64,
}

/// Leaves fetched, verified and adopted at once by default: 2^16 (2 MiB).
pub const DEFAULT_CHUNK_LEAVES: u64 = 1 << 16;

/// Adopts upstream's newest head into `target`, chunk by chunk of at most
/// `chunk_leaves` verified leaves (see the module's invariant).
pub fn catch_up(
    upstream: &mut dyn Upstream,
    target: &mut dyn MirrorTarget,
    chunk_leaves: u64,
) -> Result<CaughtUp, MirrorError> {
    let new = upstream.head()?;
    let adopted = target.adopted();
    let config = adopted.config();
    let name = upstream.describe();
    let refused = |reason: String| MirrorError::Refused {
        object: name.clone(),
        reason,
    };
    if new.tree != Checkpoint::tree_of(&config) {
        return Err(refused(format!(
            "it is {}, the mirror holds {}",
            describe_tree(&new.tree),
            describe_tree(&config)
        )));
    }
    let old = adopted.head();
    if new.head.size < old.size {
        return Err(refused(format!(
            "its size went backwards: {} leaves, the mirror adopted {} (root {}); a published tree never shrinks",
            new.head.size,
            old.size,
            show(&old)
        )));
    }
    if new.head.size == old.size {
        if new.head != old {
            return Err(refused(format!(
                "FORK: at {} leaves its root is {}, the adopted root is {}: history was rewritten",
                old.size,
                show(&new.head),
                show(&old)
            )));
        }
        return Ok(CaughtUp {
            head: old,
            adopted: 0,
        });
    }
    if old.size > 0
        && let Err(why) = upstream.prove_extends(&new, &adopted)?
    {
        upstream.check_head(&new)??;
        return Err(refused(format!(
            "FORK: its head ({} leaves, root {}) does not extend the adopted head ({} leaves, root {}): {why}",
            new.head.size,
            show(&new.head),
            old.size,
            show(&old)
        )));
    }
    // Chunks of at most `chunk_leaves`, lined up with upstream's bundles.
    let chunk_leaves = upstream
        .chunk_hint(&new)
        .map_or(chunk_leaves, |hint| hint.min(chunk_leaves))
        .max(1);
    target.expect(new.head.size - old.size);
    upstream.fetch_ahead(&new, old.size, new.head.size, chunk_leaves);
    let count = pipeline::adopt_chunks(upstream, target, &new, chunk_leaves)?;
    target.sync().map_err(MirrorError::Target)?;
    let head = target.adopted().head();
    if head != new.head {
        return Err(MirrorError::Target(
            format!(
                "after adopting, the mirror's head is {} leaves, root {}; upstream's {} leaves, root {}",
                head.size,
                show(&head),
                new.head.size,
                show(&new.head)
            )
            .into(),
        ));
    }
    Ok(CaughtUp {
        head,
        adopted: count,
    })
}

/// Checks that `leaves`, appended to the tree of `snapshot`, make exactly
/// the head `new` (the last chunk of [`catch_up`], all at once): the
/// root they hash to from the snapshot's frontier must be `new`'s root,
/// which also proves the snapshot a prefix of `new`. When they do not,
/// the first bad leaf tile is found by bisection with consistency proofs
/// from `upstream` and named. For a caller that adopts several trees'
/// leaves in one write (a forest mirror), after verifying each.
pub fn verify_leaves(
    upstream: &mut dyn Upstream,
    new: &Checkpoint,
    snapshot: &Snapshot,
    leaves: &[Hash],
) -> Result<(), MirrorError> {
    if snapshot.size() + leaves.len() as u64 != new.head.size {
        return Err(MirrorError::Refused {
            object: upstream.describe(),
            reason: format!(
                "{} leaves after {} make {}, the head has {}",
                leaves.len(),
                snapshot.size(),
                snapshot.size() + leaves.len() as u64,
                new.head.size
            ),
        });
    }
    let object = upstream.leaves_object(snapshot.size(), new.head.size);
    verify_chunk(upstream, new, snapshot, leaves, object)
}

fn show(head: &TreeHead) -> String {
    show_root(head.root.as_ref())
}

/// Checks that `leaves` after the tree of `snapshot` make a prefix of
/// `new`; when they do not, finds the first bad stretch by bisection to
/// name it.
pub(crate) fn verify_chunk(
    upstream: &mut dyn Upstream,
    new: &Checkpoint,
    snapshot: &Snapshot,
    leaves: &[Hash],
    object: Option<String>,
) -> Result<(), MirrorError> {
    let at = snapshot.size();
    // The adopted tree's frontier and rule: the root after any prefix of
    // the chunk is hashed from them alone.
    let frontier = snapshot.frontier();
    let rule = snapshot.config().group_rule();
    let check =
        |upstream: &mut dyn Upstream, len: usize| -> Result<Result<(), NotAPrefix>, MirrorError> {
            let root = rule.root_after(&frontier, &leaves[..len]);
            let head = TreeHead {
                size: at + len as u64,
                root,
            };
            if head.size == new.head.size {
                return Ok(if head == new.head {
                    Ok(())
                } else {
                    Err(NotAPrefix::Root {
                        computed: head.root,
                        head: new.head.root,
                    })
                });
            }
            upstream.prove_prefix(new, &head)
        };
    let Err(why) = check(upstream, leaves.len())? else {
        return Ok(());
    };
    upstream.check_head(new)??;
    // The shortest failing prefix ending on a leaf tile's edge: prefixes
    // of good leaves pass, and once a bad leaf is in, every longer prefix
    // fails. (Tile edges, because a proof from inside a tile reads that
    // tile of the new tree, wrong leaves included.)
    let width = new.layout().width();
    let mut ends: Vec<usize> = Vec::new();
    let mut edge = (at / width + 1) * width;
    while edge < at + leaves.len() as u64 {
        ends.push((edge - at) as usize);
        edge += width;
    }
    ends.push(leaves.len());
    // ends[good] passes (or good is -1, the empty prefix); ends[bad] fails.
    let (mut good, mut bad) = (-1isize, ends.len() as isize - 1);
    while bad - good > 1 {
        let mid = good + (bad - good) / 2;
        match check(upstream, ends[mid as usize])? {
            Ok(()) => good = mid,
            Err(_) => bad = mid,
        }
    }
    let first = at
        + if good < 0 {
            0
        } else {
            ends[good as usize] as u64
        };
    let end = at + ends[bad as usize] as u64;
    // The leaves came from one object (a bundle): it is the one to name.
    let (object, within) = match object {
        Some(object) => (object.clone(), format!(" of {object}")),
        None => (
            leaf_object(new, first).map_or_else(
                || upstream.describe(),
                |path| format!("{} ({path})", upstream.describe()),
            ),
            leaf_object(new, first).map_or_else(String::new, |p| format!(" in {p}")),
        ),
    };
    Err(MirrorError::Refused {
        object,
        reason: format!(
            "leaves {first}..{end}{within} do not belong to the head of {} leaves (root {}): {why}",
            new.head.size,
            show(&new.head),
        ),
    })
}

fn leaf_object(new: &Checkpoint, index: u64) -> Option<String> {
    let layout = new.layout();
    let tile = layout.tile_of(new.head.size, 0, index)?;
    // Inside a complete bundle the leaf tile is a range of the bundle (a
    // store of the older layout also has the tile itself): name both.
    Some(match layout.in_bundle(new.head.size, tile) {
        Some(range) => format!("{} ({})", range.describe(), layout.path(tile)),
        None => layout.path(tile),
    })
}

/// A published tile store as upstream: leaves from its bundles where it
/// has them (several in flight, fetched ahead of the verification), from
/// its leaf tiles elsewhere.
pub struct TilesUpstream {
    source: Arc<dyn TileSource>,
    signature: Box<dyn CheckpointSignature>,
    in_flight: usize,
    bundles: bool,
    ahead: Option<Ahead>,
    /// The bundle the leaves last returned were cut from.
    last: Option<(u64, u64, String)>,
}

impl std::fmt::Debug for TilesUpstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TilesUpstream")
            .field("source", &self.source.location())
            .field("in_flight", &self.in_flight)
            .finish()
    }
}

impl TilesUpstream {
    /// Follows the tile store `source`, checking each checkpoint with
    /// `signature`: [`SignedBy`](crate::SignedBy) for a mirror that holds
    /// verifier keys, [`Unsigned`](crate::Unsigned) for one that trusts the transport.
    pub fn new(source: Box<dyn TileSource>, signature: Box<dyn CheckpointSignature>) -> Self {
        TilesUpstream {
            source: Arc::from(source),
            signature,
            in_flight: DEFAULT_IN_FLIGHT,
            bundles: true,
            ahead: None,
            last: None,
        }
    }

    /// Bundles asked for at once (at least 1; [`DEFAULT_IN_FLIGHT`] by default).
    pub fn with_in_flight(mut self, in_flight: usize) -> Self {
        self.in_flight = in_flight.max(1);
        self
    }

    /// Whether bundles are read where the store has them (the default);
    /// without, every leaf comes from the leaf tiles (for comparisons).
    pub fn with_bundles(mut self, bundles: bool) -> Self {
        self.bundles = bundles;
        self
    }
}

fn tile_refusal(error: TileError) -> MirrorError {
    match error {
        TileError::Fetch(error) => error.into(),
        TileError::Malformed {
            path, got, want, ..
        } => MirrorError::Refused {
            object: path,
            reason: format!("{got} bytes, want {want}"),
        },
        TileError::Checkpoint { store, error } => MirrorError::Refused {
            object: format!("{store}/{CHECKPOINT}"),
            reason: error.to_string(),
        },
        TileError::Signature { store, error } => MirrorError::Refused {
            object: format!("{store}/{CHECKPOINT}"),
            reason: format!("signature: {error}"),
        },
        other => MirrorError::Refused {
            object: "tiles".into(),
            reason: other.to_string(),
        },
    }
}

impl Upstream for TilesUpstream {
    fn describe(&self) -> String {
        format!("{}/{CHECKPOINT}", self.source.location())
    }

    fn head(&mut self) -> Result<Checkpoint, MirrorError> {
        read_checkpoint_checked(&*self.source, &*self.signature).map_err(tile_refusal)
    }

    fn leaves(&mut self, head: &Checkpoint, from: u64, to: u64) -> Result<Vec<Hash>, MirrorError> {
        self.last = None;
        if let Some(ahead) = &mut self.ahead {
            let chunk = (ahead.head == *head)
                .then(|| ahead.take(from, to))
                .flatten();
            match chunk {
                Some(chunk) => {
                    if let Some(object) = chunk.bundle {
                        self.last = Some((from, to, object));
                    }
                    return chunk.leaves;
                }
                // Not what was planned: fetch from here on directly.
                None => self.ahead = None,
            }
        }
        let chunks = bulk::plan(from, to, head.layout().bundle_leaves());
        let mut out = Vec::with_capacity((to - from) as usize);
        let mut failed = None;
        let mut bundles = Vec::new();
        let bundles_on = self.bundles;
        bulk::fetch_chunks(
            &*self.source,
            head,
            &chunks,
            self.in_flight,
            bundles_on,
            |chunk| {
                match chunk.leaves {
                    Ok(leaves) => out.extend(leaves),
                    Err(error) => failed = Some(error),
                }
                bundles.extend(chunk.bundle);
                true
            },
        );
        if let Some(error) = failed {
            return Err(error);
        }
        if let [object] = &bundles[..]
            && chunks.len() == 1
        {
            self.last = Some((from, to, object.clone()));
        }
        Ok(out)
    }

    fn chunk_hint(&self, head: &Checkpoint) -> Option<u64> {
        Some(head.layout().bundle_leaves())
    }

    fn fetch_ahead(&mut self, head: &Checkpoint, from: u64, to: u64, chunk: u64) {
        self.ahead = Some(Ahead::start(
            Arc::clone(&self.source),
            head,
            bulk::plan(from, to, chunk),
            self.in_flight,
            self.bundles,
        ));
    }

    fn check_head(&mut self, head: &Checkpoint) -> Result<Result<(), MirrorError>, MirrorError> {
        let mut tree = TileTree::new(head.tree, head.head, &*self.source);
        let root = tree.tiles_root().map_err(tile_refusal)?;
        if root == head.head.root {
            return Ok(Ok(()));
        }
        Ok(Err(MirrorError::Refused {
            object: self.describe(),
            reason: format!(
                "it names {} leaves with root {}, but its tiles hash to root {} at that size (tiles read: {}): the checkpoint is not of the tree its tiles hold",
                head.head.size,
                show(&head.head),
                show_root(root.as_ref()),
                tree.fetched()
                    .iter()
                    .map(|(path, _)| path.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }))
    }

    fn nodes(
        &mut self,
        head: &Checkpoint,
        level: u32,
        from: u64,
        to: u64,
    ) -> Option<Result<Vec<Hash>, MirrorError>> {
        let mut tree = TileTree::new(head.tree, head.head, &*self.source);
        Some(
            (from..to)
                .map(|index| tree.node(level, index).map_err(tile_refusal))
                .collect(),
        )
    }

    fn leaves_object(&self, from: u64, to: u64) -> Option<String> {
        self.last
            .as_ref()
            .filter(|(f, t, _)| (*f, *t) == (from, to))
            .map(|(_, _, object)| object.clone())
    }

    fn prove_prefix(
        &mut self,
        new: &Checkpoint,
        old: &TreeHead,
    ) -> Result<Result<(), NotAPrefix>, MirrorError> {
        self.prove_over(new, old, None)
    }

    fn prove_extends(
        &mut self,
        new: &Checkpoint,
        adopted: &Snapshot,
    ) -> Result<Result<(), NotAPrefix>, MirrorError> {
        self.prove_over(new, &adopted.head(), Some(adopted))
    }
}

impl TilesUpstream {
    /// The consistency proof from `old` to `new` built from the tiles,
    /// with the nodes the mirror holds (`adopted`, the tree of `old`)
    /// taken from it rather than fetched.
    fn prove_over(
        &mut self,
        new: &Checkpoint,
        old: &TreeHead,
        adopted: Option<&Snapshot>,
    ) -> Result<Result<(), NotAPrefix>, MirrorError> {
        let mut tree = TileTree::new(new.tree, new.head, &*self.source);
        let view = adopted.and_then(|snapshot| snapshot.view(old.size).ok());
        let known = |level: u32, index: u64| view.as_ref().map(|view| view.node(level, index));
        match tree.prove_consistency_over(old, known) {
            Ok(_) => Ok(Ok(())),
            Err(TileError::Mismatch {
                reason, objects, ..
            }) => Ok(Err(NotAPrefix::Tiles { reason, objects })),
            Err(error) => Err(tile_refusal(error)),
        }
    }
}

/// A cairn server's read API as upstream: `GET /v1/root` for the head,
/// `GET /v1/leaves?from=&to=` for leaves, `GET /v1/consistency` for
/// proofs.
pub struct ServerUpstream {
    base: String,
    client: reqwest::Client,
    runtime: tokio::runtime::Runtime,
    options: RemoteOptions,
    /// Leaves asked for per request (halved when the server refuses).
    per_request: u64,
}

impl std::fmt::Debug for ServerUpstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerUpstream")
            .field("base", &self.base)
            .finish()
    }
}

/// What the mirror reads of `GET /v1/root` (the answer has more fields).
#[derive(serde::Deserialize)]
struct RootAnswer {
    size: u64,
    root: Option<String>,
    arity: u64,
    hash: String,
    /// `lean`, `imt` or `indexed`; a server from before kinds sends none.
    #[serde(default)]
    kind: Option<String>,
    /// The depth at `size` (an imt's fixed depth).
    #[serde(default)]
    depth: Option<u32>,
    /// An imt's zero value.
    #[serde(default)]
    zero: Option<String>,
}

impl ServerUpstream {
    /// Follows the server at `base` (`http://host:port`).
    pub fn new(base: &str, options: &RemoteOptions) -> Result<ServerUpstream, OpenError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(OpenError::Runtime)?;
        let client = reqwest::Client::builder()
            .timeout(options.request_timeout)
            .build()
            .map_err(|error| OpenError::Client {
                base: base.to_owned(),
                error,
            })?;
        Ok(ServerUpstream {
            base: base.trim_end_matches('/').to_owned(),
            client,
            runtime,
            options: options.clone(),
            per_request: 1 << 16,
        })
    }

    /// GET `path`: the status and body, retried with backoff on connection
    /// errors, timeouts and 5xx.
    fn get(&self, path: &str, accept: &str, max_bytes: u64) -> Result<(u16, Vec<u8>), MirrorError> {
        let url = format!("{}{path}", self.base);
        let started = std::time::Instant::now();
        let mut backoff = self.options.first_backoff;
        let mut tries = 0usize;
        loop {
            let answer = self.runtime.block_on(async {
                let response = self
                    .client
                    .get(&url)
                    .header("accept", accept)
                    .send()
                    .await?;
                let status = response.status().as_u16();
                if let Some(len) = response.content_length()
                    && len > max_bytes
                {
                    return Ok((status, None));
                }
                let body = response.bytes().await?;
                Ok::<_, reqwest::Error>((status, Some(body.to_vec())))
            });
            let retry_why = match answer {
                Ok((status, None)) => {
                    return Err(MirrorError::Refused {
                        object: url,
                        reason: format!("status {status} with a body over {max_bytes} bytes"),
                    });
                }
                Ok((status, Some(body))) if status < 500 => {
                    if body.len() as u64 > max_bytes {
                        return Err(MirrorError::Refused {
                            object: url,
                            reason: format!("{} bytes, at most {max_bytes} accepted", body.len()),
                        });
                    }
                    return Ok((status, body));
                }
                Ok((status, Some(body))) => format!(
                    "status {status}: {}",
                    String::from_utf8_lossy(&body[..body.len().min(200)])
                ),
                Err(error) => one_line(&error),
            };
            tries += 1;
            if tries > self.options.max_retries || started.elapsed() > self.options.retry_timeout {
                return Err(MirrorError::Unreachable(format!(
                    "GET {url}: {retry_why} (after {} retries)",
                    tries - 1
                )));
            }
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(self.options.max_backoff);
        }
    }
}

fn one_line(error: &dyn std::error::Error) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        out.push_str(": ");
        out.push_str(&cause.to_string());
        source = cause.source();
    }
    out
}

impl Upstream for ServerUpstream {
    fn describe(&self) -> String {
        format!("{}/v1/root", self.base)
    }

    fn head(&mut self) -> Result<Checkpoint, MirrorError> {
        let (status, body) = self.get("/v1/root", "application/json", 1 << 16)?;
        let refused = |reason: String| MirrorError::Refused {
            object: format!("{}/v1/root", self.base),
            reason,
        };
        if status != 200 {
            return Err(refused(format!("status {status}")));
        }
        let answer: RootAnswer = serde_json::from_slice(&body)
            .map_err(|e| refused(format!("not a root answer: {e}")))?;
        let root = match &answer.root {
            None => "none".to_owned(),
            Some(root) => root.clone(),
        };
        // One parser for heads, whatever their source: the checkpoint's.
        let (arity, hash, size) = (answer.arity, &answer.hash, answer.size);
        let text = match answer.kind.as_deref() {
            None | Some("lean") => {
                format!("{MAGIC}\narity {arity}\nhash {hash}\nsize {size}\nroot {root}\n")
            }
            Some("indexed") => {
                return Err(refused(
                    "it serves an indexed tree, which rewrites earlier leaves: a mirror follows append-only trees".to_owned(),
                ));
            }
            Some(kind) => format!(
                "{MAGIC_KINDS}\narity {arity}\nhash {hash}\nkind {kind}\ndepth {}\nzero {}\nsize {size}\nroot {root}\n",
                answer
                    .depth
                    .map_or_else(|| "none".to_owned(), |d| d.to_string()),
                answer.zero.as_deref().unwrap_or("none"),
            ),
        };
        Checkpoint::decode(text.as_bytes()).map_err(|e| refused(e.to_string()))
    }

    fn leaves(&mut self, _: &Checkpoint, from: u64, to: u64) -> Result<Vec<Hash>, MirrorError> {
        let mut out = Vec::with_capacity((to - from) as usize);
        let mut at = from;
        while at < to {
            let end = (at + self.per_request).min(to);
            let path = format!("/v1/leaves?from={at}&to={end}");
            let (status, body) = self.get(&path, "application/octet-stream", (end - at) * 32)?;
            if status == 400 && self.per_request > 1 && body.windows(5).any(|w| w == b"limit") {
                self.per_request /= 2;
                continue;
            }
            if status != 200 {
                return Err(MirrorError::Refused {
                    object: format!("{}{path}", self.base),
                    reason: format!("status {status}: {}", String::from_utf8_lossy(&body)),
                });
            }
            if body.len() as u64 != (end - at) * 32 {
                return Err(MirrorError::Refused {
                    object: format!("{}{path}", self.base),
                    reason: format!(
                        "{} bytes, {} leaves are {}",
                        body.len(),
                        end - at,
                        (end - at) * 32
                    ),
                });
            }
            out.extend(
                body.chunks_exact(32)
                    .map(|leaf| -> Hash { leaf.try_into().expect("32 bytes") }),
            );
            at = end;
        }
        Ok(out)
    }

    fn prove_prefix(
        &mut self,
        new: &Checkpoint,
        old: &TreeHead,
    ) -> Result<Result<(), NotAPrefix>, MirrorError> {
        let path = format!("/v1/consistency?from={}&to={}", old.size, new.head.size);
        let (status, body) = self.get(&path, "application/json", 1 << 20)?;
        let object = format!("{}{path}", self.base);
        if status != 200 {
            return Err(MirrorError::Refused {
                object,
                reason: format!("status {status}: {}", String::from_utf8_lossy(&body)),
            });
        }
        let text = String::from_utf8(body).map_err(|_| MirrorError::Refused {
            object: object.clone(),
            reason: "not UTF-8".into(),
        })?;
        let proof = ConsistencyProof::from_json(&text).map_err(|e| MirrorError::Refused {
            object: object.clone(),
            reason: format!("not a consistency proof: {e}"),
        })?;
        Ok(proof
            .verify_with(&new.tree, old, &new.head)
            .map_err(|e| NotAPrefix::Proof(Box::new(e))))
    }
}

/// How long a follower waits between looks at upstream by default.
pub const DEFAULT_POLL: Duration = Duration::from_secs(1);
