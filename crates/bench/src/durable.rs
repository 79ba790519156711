//! The durable side-by-side comparison: workloads defined once over a
//! [`DurableStore`] trait, so that every store (rotortree 0.20's
//! `RotorTree` here, cairn's store once it exists) runs the same leaves
//! through the same calls. `src/bin/peers_durable.rs` runs them
//! interleaved and reports medians and ratios.
//!
//! Every workload opens its store in an empty directory it is given, times
//! only the work named in its doc (never opening a fresh store, never the
//! final close), and reads the process's I/O counters from just before the
//! store is opened to just after it is closed (see [`IoCounters`]), so the
//! bytes include whatever a store writes at open and at close.
//!
//! Adding a store: implement [`DurableStore`] (in this crate, for a type
//! wrapping the store) and add one line to the list of stores in
//! `peers_durable.rs`'s `main`.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_core::Hash;
use rotortree::{
    Blake3Hasher, CheckpointPolicy, DurabilityToken, FlushPolicy, RotorTree, RotorTreeConfig,
    TieringConfig, TreeSnapshot,
};

/// A durable append-only Merkle store under test: BLAKE3, arity `2..=16`
/// fixed at creation. Every method panics on failure (this is a benchmark:
/// a failure is a bug to look at, not a figure).
///
/// Methods take `&mut self` although the workloads are single-threaded and
/// rotortree's methods take `&self`: a store that needs `&mut` to append or
/// to read its root can then implement the trait without interior
/// mutability.
pub trait DurableStore: Sized {
    /// The name printed in the table and the CSV (`rotortree`, `cairn`).
    const NAME: &'static str;

    /// What an append returns and [`DurableStore::wait`] consumes: proof of
    /// a pending write (rotortree's `DurabilityToken`, or a sequence number).
    type Token;

    /// Creates a store of arity `arity` (BLAKE3) in `dir`, an existing empty
    /// directory. `checkpoint_every`: checkpoint (in the store's own way,
    /// e.g. in the background) after every that many log entries (an
    /// `append` or an `append_batch` is one entry); `None` checkpoints only
    /// when [`DurableStore::checkpoint`] is called.
    fn open(dir: &Path, arity: usize, checkpoint_every: Option<u64>) -> Self;

    /// Opens the store a previous [`DurableStore::open`] created in `dir`
    /// (and closed), checkpointing only on request. `verify`: recompute the
    /// root from the stored leaves and compare it with the stored one.
    fn reopen(dir: &Path, arity: usize, verify: bool) -> Self;

    /// Appends one leaf; it is visible at once, durable once
    /// [`DurableStore::wait`] on the token returns.
    fn append(&mut self, leaf: Hash) -> Self::Token;

    /// Appends `leaves` as one batch (one log entry).
    fn append_batch(&mut self, leaves: &[Hash]) -> Self::Token;

    /// Blocks until the append that returned `token` (and every earlier
    /// one) is durable.
    fn wait(&mut self, token: Self::Token);

    /// The current root (the workloads never ask an empty store).
    fn root(&mut self) -> Hash;

    /// Writes a checkpoint now and returns when it is durable.
    fn checkpoint(&mut self);

    /// Generates a membership proof of leaf `index` from a snapshot of the
    /// current tree and verifies it against that snapshot's root; panics if
    /// it does not verify.
    fn prove_and_verify(&mut self, index: u64);

    /// Flushes what is pending and closes the store (releasing its lock).
    fn close(self);
}

// ---------------------------------------------------------------------------
// rotortree 0.20

/// rotortree's `MAX_DEPTH` in these runs (its own benchmarks use 32).
pub const ROTOR_MAX_DEPTH: usize = 32;

type Rotor<const N: usize> = RotorTree<Blake3Hasher, N, ROTOR_MAX_DEPTH>;

/// rotortree 0.20's `RotorTree` with BLAKE3, `FlushPolicy::Interval(10 ms)`
/// (its default), default tiering; `checkpoint_every` maps to
/// `CheckpointPolicy::EveryNEntries` (a background checkpoint thread),
/// `None` to `CheckpointPolicy::Manual`. Its arity is a const generic, so
/// this dispatches over N = 2, 4, 8, 16 at run time.
pub enum RotorStore {
    /// N = 2.
    N2(Rotor<2>),
    /// N = 4.
    N4(Rotor<4>),
    /// N = 8.
    N8(Rotor<8>),
    /// N = 16.
    N16(Rotor<16>),
}

impl std::fmt::Debug for RotorStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let arity = match self {
            RotorStore::N2(_) => 2,
            RotorStore::N4(_) => 4,
            RotorStore::N8(_) => 8,
            RotorStore::N16(_) => 16,
        };
        f.debug_struct("RotorStore").field("arity", &arity).finish()
    }
}

/// Runs `$body` with `$tree` bound to the `RotorTree` inside `$store`,
/// whatever its arity.
macro_rules! on_rotor {
    ($store:expr, $tree:ident => $body:expr) => {
        match $store {
            RotorStore::N2($tree) => $body,
            RotorStore::N4($tree) => $body,
            RotorStore::N8($tree) => $body,
            RotorStore::N16($tree) => $body,
        }
    };
}

impl RotorStore {
    fn open_with(dir: &Path, arity: usize, checkpoint: CheckpointPolicy, verify: bool) -> Self {
        let config = || RotorTreeConfig {
            path: dir.to_path_buf(),
            flush_policy: FlushPolicy::Interval(Duration::from_millis(10)),
            checkpoint_policy: checkpoint,
            tiering: TieringConfig::default(),
            verify_checkpoint: verify,
        };
        fn open<const N: usize>(config: RotorTreeConfig) -> Rotor<N> {
            RotorTree::open(Blake3Hasher, config).expect("opening rotortree")
        }
        match arity {
            2 => RotorStore::N2(open(config())),
            4 => RotorStore::N4(open(config())),
            8 => RotorStore::N8(open(config())),
            16 => RotorStore::N16(open(config())),
            other => panic!("rotortree comparison runs N in 2, 4, 8, 16, not {other}"),
        }
    }
}

/// A proof of `index` from `snapshot`, verified against the snapshot's root.
fn rotor_prove<const N: usize>(snapshot: &Arc<TreeSnapshot<N, ROTOR_MAX_DEPTH>>, index: u64) {
    let root = snapshot.root().expect("non-empty snapshot");
    let proof = snapshot.generate_proof(index).expect("index in range");
    assert!(
        proof
            .verify_against(&Blake3Hasher, root)
            .expect("well-formed proof"),
        "rotortree proof of leaf {index} does not verify"
    );
}

impl DurableStore for RotorStore {
    const NAME: &'static str = "rotortree";
    type Token = DurabilityToken;

    fn open(dir: &Path, arity: usize, checkpoint_every: Option<u64>) -> Self {
        let policy = checkpoint_every.map_or(CheckpointPolicy::Manual, |every| {
            CheckpointPolicy::EveryNEntries(every)
        });
        Self::open_with(dir, arity, policy, false)
    }

    fn reopen(dir: &Path, arity: usize, verify: bool) -> Self {
        Self::open_with(dir, arity, CheckpointPolicy::Manual, verify)
    }

    fn append(&mut self, leaf: Hash) -> DurabilityToken {
        on_rotor!(self, tree => tree.insert(leaf).expect("rotortree insert").1)
    }

    fn append_batch(&mut self, leaves: &[Hash]) -> DurabilityToken {
        on_rotor!(self, tree => tree.insert_many(leaves).expect("rotortree insert_many").1)
    }

    fn wait(&mut self, token: DurabilityToken) {
        token.wait();
    }

    fn root(&mut self) -> Hash {
        on_rotor!(self, tree => tree.root().expect("non-empty tree"))
    }

    fn checkpoint(&mut self) {
        on_rotor!(self, tree => tree.checkpoint().expect("rotortree checkpoint"));
    }

    fn prove_and_verify(&mut self, index: u64) {
        on_rotor!(self, tree => rotor_prove(&tree.snapshot(), index));
    }

    fn close(self) {
        on_rotor!(self, tree => tree.close().expect("rotortree close"));
    }
}

// ---------------------------------------------------------------------------
// I/O accounting

/// The process's I/O counters from `/proc/self/io` (summed over all its
/// threads, including exited ones, so a store's background flush and
/// checkpoint threads count).
///
/// - `write_bytes`: bytes the process caused to be sent to the storage
///   layer, counted when a page-cache page is dirtied (by `write` or by a
///   store through a writable mapping), not when writeback happens: it
///   does not lag the kernel's writeback, so reading it right after the
///   store is closed is exact. Rewriting an already dirty page is not
///   counted twice; it stays 0 on tmpfs.
/// - `cancelled_write_bytes`: dirty bytes that were truncated or deleted
///   before writeback (subtracted in [`IoDelta::disk_bytes`]).
/// - `wchar`: bytes passed to `write`-family system calls, whether or not
///   they reach a disk; stores through a mapping are not counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoCounters {
    /// `wchar`.
    pub wchar: u64,
    /// `write_bytes`.
    pub write_bytes: u64,
    /// `cancelled_write_bytes`.
    pub cancelled_write_bytes: u64,
}

impl IoCounters {
    /// The counters now, or `None` where `/proc/self/io` is unavailable.
    pub fn now() -> Option<Self> {
        let text = std::fs::read_to_string("/proc/self/io").ok()?;
        let field = |name: &str| {
            text.lines().find_map(|line| {
                let (key, value) = line.split_once(':')?;
                (key.trim() == name).then(|| value.trim().parse::<u64>().ok())?
            })
        };
        Some(Self {
            wchar: field("wchar")?,
            write_bytes: field("write_bytes")?,
            cancelled_write_bytes: field("cancelled_write_bytes")?,
        })
    }
}

/// The I/O between two [`IoCounters`] readings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoDelta {
    /// Growth of `wchar`.
    pub wchar: u64,
    /// Growth of `write_bytes`.
    pub write_bytes: u64,
    /// Growth of `cancelled_write_bytes`.
    pub cancelled_write_bytes: u64,
}

impl IoDelta {
    /// `before` to `after`; `None` if either reading is missing.
    pub fn between(before: Option<IoCounters>, after: Option<IoCounters>) -> Option<Self> {
        let (b, a) = (before?, after?);
        Some(Self {
            wchar: a.wchar.saturating_sub(b.wchar),
            write_bytes: a.write_bytes.saturating_sub(b.write_bytes),
            cancelled_write_bytes: a
                .cancelled_write_bytes
                .saturating_sub(b.cancelled_write_bytes),
        })
    }

    /// Bytes sent (or still to be sent) to the disk: `write_bytes` less
    /// what was cancelled before writeback.
    pub fn disk_bytes(&self) -> u64 {
        self.write_bytes.saturating_sub(self.cancelled_write_bytes)
    }
}

// ---------------------------------------------------------------------------
// workloads

/// One run of one workload on one store.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    /// The timed part (see each workload's doc).
    pub elapsed: Duration,
    /// Leaves the timed part appended (or, for a reopen, holds).
    pub leaves: u64,
    /// I/O from just before the store is opened to just after it is closed
    /// (for a reopen: around the reopen only, not the build).
    pub io: Option<IoDelta>,
    /// The root at the end: every store must report the same one.
    pub root: Hash,
}

/// Workload sizes. [`Sizes::full`] are the anchor figures' sizes;
/// [`Sizes::quick`] divides every leaf count and every batch by 10 and
/// keeps the number of batches, the checkpoint cadence, the follower's
/// 1,000-leaf block and the proofs per batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    /// Chain follower: leaves, one append each.
    pub follow_leaves: usize,
    /// Chain follower: leaves per block (wait + root at each block's end).
    pub follow_block: usize,
    /// Durable bulk: leaves.
    pub bulk_leaves: usize,
    /// Durable bulk: leaves per batch (wait per batch).
    pub bulk_batch: usize,
    /// One batch: leaves (278,827 = all Tornado Cash mainnet deposits).
    pub one_batch: usize,
    /// Sustained: leaves.
    pub sustained_leaves: usize,
    /// Sustained: leaves per batch.
    pub sustained_batch: usize,
    /// Sustained: log entries (batches) between checkpoints.
    pub sustained_checkpoint_every: u64,
    /// Sustained: proofs generated and verified per batch.
    pub sustained_proofs: usize,
    /// Reopen: leaves in the store.
    pub reopen_leaves: usize,
    /// Reopen: leaves per batch when building the store.
    pub reopen_batch: usize,
}

impl Sizes {
    /// The sizes of the anchor figures.
    pub const fn full() -> Self {
        Self {
            follow_leaves: 1_000_000,
            follow_block: 1_000,
            bulk_leaves: 10_000_000,
            bulk_batch: 1_000_000,
            one_batch: 278_827,
            sustained_leaves: 1_000_000,
            sustained_batch: 10_000,
            sustained_checkpoint_every: 25,
            sustained_proofs: 3,
            reopen_leaves: 10_000_000,
            reopen_batch: 1_000_000,
        }
    }

    /// Leaf counts and batches divided by 10 (see [`Sizes`]).
    pub const fn quick() -> Self {
        let full = Self::full();
        Self {
            follow_leaves: full.follow_leaves / 10,
            follow_block: full.follow_block,
            bulk_leaves: full.bulk_leaves / 10,
            bulk_batch: full.bulk_batch / 10,
            one_batch: full.one_batch / 10,
            sustained_leaves: full.sustained_leaves / 10,
            sustained_batch: full.sustained_batch / 10,
            sustained_checkpoint_every: full.sustained_checkpoint_every,
            sustained_proofs: full.sustained_proofs,
            reopen_leaves: full.reopen_leaves / 10,
            reopen_batch: full.reopen_batch / 10,
        }
    }

    /// The most leaves any workload needs.
    pub fn max_leaves(&self) -> usize {
        Workload::ALL
            .into_iter()
            .map(|w| w.leaves_needed(self))
            .max()
            .unwrap_or(0)
    }
}

/// The durable workloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// [`chain_follower`].
    Follow,
    /// [`bulk`].
    Bulk,
    /// [`one_batch`].
    OneBatch,
    /// [`sustained`].
    Sustained,
    /// [`reopen`] without verification.
    Reopen,
    /// [`reopen`] with verification.
    ReopenVerify,
    /// [`reopen`] of a store closed without a checkpoint (log replay), no
    /// verification.
    ReopenReplay,
}

impl Workload {
    /// Every workload, in the order they run.
    pub const ALL: [Workload; 7] = [
        Workload::Follow,
        Workload::Bulk,
        Workload::OneBatch,
        Workload::Sustained,
        Workload::Reopen,
        Workload::ReopenVerify,
        Workload::ReopenReplay,
    ];

    /// The name used by `--workload` and in the table and CSV.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Follow => "follow",
            Workload::Bulk => "bulk",
            Workload::OneBatch => "one-batch",
            Workload::Sustained => "sustained",
            Workload::Reopen => "reopen",
            Workload::ReopenVerify => "reopen-verify",
            Workload::ReopenReplay => "reopen-replay",
        }
    }

    /// The workload called `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|w| w.name() == name)
    }

    /// How many leaves it uses at `sizes`.
    pub fn leaves_needed(self, sizes: &Sizes) -> usize {
        match self {
            Workload::Follow => sizes.follow_leaves,
            Workload::Bulk => sizes.bulk_leaves,
            Workload::OneBatch => sizes.one_batch,
            Workload::Sustained => sizes.sustained_leaves,
            Workload::Reopen | Workload::ReopenVerify | Workload::ReopenReplay => {
                sizes.reopen_leaves
            }
        }
    }

    /// What it does, at `sizes`.
    pub fn describe(self, sizes: &Sizes) -> String {
        match self {
            Workload::Follow => format!(
                "chain follower: {} leaves, one append each, wait for the last token and read the root every {} leaves",
                sizes.follow_leaves, sizes.follow_block
            ),
            Workload::Bulk => format!(
                "durable bulk: {} leaves in batches of {}, wait per batch",
                sizes.bulk_leaves, sizes.bulk_batch
            ),
            Workload::OneBatch => {
                format!("one batch of {} leaves, wait", sizes.one_batch)
            }
            Workload::Sustained => format!(
                "sustained: {} leaves in batches of {}, checkpoint every {} batches, {} proofs generated and verified per batch, wait at the end",
                sizes.sustained_leaves,
                sizes.sustained_batch,
                sizes.sustained_checkpoint_every,
                sizes.sustained_proofs
            ),
            Workload::Reopen => format!(
                "reopen a {}-leaf checkpointed store (built in batches of {}) until the root is readable, no verification",
                sizes.reopen_leaves, sizes.reopen_batch
            ),
            Workload::ReopenVerify => format!(
                "reopen a {}-leaf checkpointed store until the root is readable, root recomputed and verified",
                sizes.reopen_leaves
            ),
            Workload::ReopenReplay => format!(
                "reopen a {}-leaf store closed without a checkpoint (log replay) until the root is readable, no verification",
                sizes.reopen_leaves
            ),
        }
    }
}

/// Runs `workload` on store `S` of arity `arity` in `dir` (an existing
/// empty directory) with the first leaves of `leaves` (at least
/// `workload.leaves_needed(sizes)`).
pub fn run_workload<S: DurableStore>(
    workload: Workload,
    dir: &Path,
    arity: usize,
    sizes: &Sizes,
    leaves: &[Hash],
) -> Sample {
    match workload {
        Workload::Follow => chain_follower::<S>(
            dir,
            arity,
            &leaves[..sizes.follow_leaves],
            sizes.follow_block,
        ),
        Workload::Bulk => bulk::<S>(dir, arity, &leaves[..sizes.bulk_leaves], sizes.bulk_batch),
        Workload::OneBatch => one_batch::<S>(dir, arity, &leaves[..sizes.one_batch]),
        Workload::Sustained => sustained::<S>(
            dir,
            arity,
            &leaves[..sizes.sustained_leaves],
            sizes.sustained_batch,
            sizes.sustained_checkpoint_every,
            sizes.sustained_proofs,
        ),
        Workload::Reopen | Workload::ReopenVerify | Workload::ReopenReplay => reopen::<S>(
            dir,
            arity,
            &leaves[..sizes.reopen_leaves],
            sizes.reopen_batch,
            workload != Workload::ReopenReplay,
            workload == Workload::ReopenVerify,
        ),
    }
}

/// Chain follower: one `append` per leaf; at the end of every `block`
/// leaves, wait for the block's last token and read the root. Timed: the
/// appends, waits and root reads.
pub fn chain_follower<S: DurableStore>(
    dir: &Path,
    arity: usize,
    leaves: &[Hash],
    block: usize,
) -> Sample {
    let before = IoCounters::now();
    let mut store = S::open(dir, arity, None);
    let started = Instant::now();
    let mut root = [0; 32];
    for block in leaves.chunks(block) {
        let mut last = None;
        for leaf in block {
            last = Some(store.append(*leaf));
        }
        store.wait(last.expect("blocks are not empty"));
        root = std::hint::black_box(store.root());
    }
    let elapsed = started.elapsed();
    store.close();
    Sample {
        elapsed,
        leaves: leaves.len() as u64,
        io: IoDelta::between(before, IoCounters::now()),
        root,
    }
}

/// Durable bulk: `leaves` in batches of `batch`, waiting for each batch to
/// be durable before the next. Timed: the appends and waits, then the
/// root. Bytes: open to close (see [`IoCounters`]; `write_bytes` is counted
/// when pages are dirtied, so closing before reading loses nothing).
pub fn bulk<S: DurableStore>(dir: &Path, arity: usize, leaves: &[Hash], batch: usize) -> Sample {
    let before = IoCounters::now();
    let mut store = S::open(dir, arity, None);
    let started = Instant::now();
    for chunk in leaves.chunks(batch) {
        let token = store.append_batch(chunk);
        store.wait(token);
    }
    let root = store.root();
    let elapsed = started.elapsed();
    store.close();
    Sample {
        elapsed,
        leaves: leaves.len() as u64,
        io: IoDelta::between(before, IoCounters::now()),
        root,
    }
}

/// One batch: all of `leaves` in a single `append_batch`, then wait and
/// read the root. Timed: the append, the wait and the root.
pub fn one_batch<S: DurableStore>(dir: &Path, arity: usize, leaves: &[Hash]) -> Sample {
    bulk::<S>(dir, arity, leaves, leaves.len().max(1))
}

/// Sustained: `leaves` in batches of `batch`, the store checkpointing every
/// `checkpoint_every` batches (its own policy, see [`DurableStore::open`]),
/// and after each batch `proofs` membership proofs generated and verified
/// (leaves 0, size / 2 and size - 1 for three; spread evenly otherwise).
/// No wait per batch; timed: the loop, then a wait for the last batch to
/// be durable and the root.
pub fn sustained<S: DurableStore>(
    dir: &Path,
    arity: usize,
    leaves: &[Hash],
    batch: usize,
    checkpoint_every: u64,
    proofs: usize,
) -> Sample {
    let before = IoCounters::now();
    let mut store = S::open(dir, arity, Some(checkpoint_every));
    let started = Instant::now();
    let mut size = 0u64;
    let mut last = None;
    for chunk in leaves.chunks(batch) {
        last = Some(store.append_batch(chunk));
        size += chunk.len() as u64;
        for k in 0..proofs as u64 {
            store.prove_and_verify(proof_index(size, k, proofs as u64));
        }
    }
    if let Some(token) = last {
        store.wait(token);
    }
    let root = store.root();
    let elapsed = started.elapsed();
    store.close();
    Sample {
        elapsed,
        leaves: leaves.len() as u64,
        io: IoDelta::between(before, IoCounters::now()),
        root,
    }
}

/// The `k`th of `proofs` leaf indices in a tree of `size` leaves: 0,
/// size / 2, size - 1 for three; the last leaf for one; evenly spread
/// otherwise.
fn proof_index(size: u64, k: u64, proofs: u64) -> u64 {
    match (proofs, k) {
        (1, _) => size - 1,
        (3, 1) => size / 2,
        _ => (size - 1) * k / (proofs - 1),
    }
}

/// Reopen: builds a store of `leaves` (batches of `batch`, each waited
/// for), checkpoints it if `checkpoint` (otherwise the store is left to
/// whatever its close does: rotortree's replays its log at the next open)
/// and closes it, all untimed; then reopens it, with root verification if
/// `verify`. Timed: the reopen until the root is readable. The root must
/// equal the built one. Bytes: around the reopen and its close only. The
/// store's files are in the page cache (just written).
pub fn reopen<S: DurableStore>(
    dir: &Path,
    arity: usize,
    leaves: &[Hash],
    batch: usize,
    checkpoint: bool,
    verify: bool,
) -> Sample {
    let built = {
        let mut store = S::open(dir, arity, None);
        for chunk in leaves.chunks(batch) {
            let token = store.append_batch(chunk);
            store.wait(token);
        }
        if checkpoint {
            store.checkpoint();
        }
        let root = store.root();
        store.close();
        root
    };
    let before = IoCounters::now();
    let started = Instant::now();
    let mut store = S::reopen(dir, arity, verify);
    let root = store.root();
    let elapsed = started.elapsed();
    assert_eq!(
        root,
        built,
        "{}: the reopened root differs from the built one",
        S::NAME
    );
    store.close();
    Sample {
        elapsed,
        leaves: leaves.len() as u64,
        io: IoDelta::between(before, IoCounters::now()),
        root,
    }
}

/// The seed of [`crate::leaves`].
const LEAF_SEED: u64 = 0xca1e;

/// `count` leaves, the same as [`crate::leaves`] (`cairn_testkit::leaves`
/// with the benchmarks' seed), generated on every core.
pub fn leaves_parallel(count: usize) -> Vec<Hash> {
    use rayon::prelude::*;
    (0..count as u64)
        .into_par_iter()
        .map(|i| cairn_testkit::leaf(LEAF_SEED, i))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallel_leaves_are_the_benchmark_leaves() {
        assert_eq!(leaves_parallel(1000), crate::leaves(1000));
    }

    #[test]
    fn quick_sizes_keep_the_shape() {
        let (full, quick) = (Sizes::full(), Sizes::quick());
        assert_eq!(
            full.bulk_leaves / full.bulk_batch,
            quick.bulk_leaves / quick.bulk_batch
        );
        assert_eq!(
            full.sustained_leaves / full.sustained_batch,
            quick.sustained_leaves / quick.sustained_batch
        );
        assert_eq!(quick.max_leaves(), 1_000_000);
    }

    #[test]
    fn io_counters_parse_here() {
        if std::path::Path::new("/proc/self/io").exists() {
            assert!(IoCounters::now().is_some());
        }
    }

    /// Every workload at a tiny size on rotortree: roots agree with the
    /// in-memory build and proofs verify.
    #[test]
    fn rotortree_runs_every_workload() {
        let sizes = Sizes {
            follow_leaves: 2_500,
            follow_block: 1_000,
            bulk_leaves: 5_000,
            bulk_batch: 1_000,
            one_batch: 2_789,
            sustained_leaves: 5_000,
            sustained_batch: 100,
            sustained_checkpoint_every: 25,
            sustained_proofs: 3,
            reopen_leaves: 5_000,
            reopen_batch: 1_000,
        };
        let all = crate::leaves(sizes.max_leaves());
        for arity in [2, 4, 16] {
            for workload in Workload::ALL {
                let dir = tempfile::tempdir().expect("a temp dir");
                let sample = run_workload::<RotorStore>(workload, dir.path(), arity, &sizes, &all);
                let expected = crate::with_rotor_arity!(
                    arity,
                    N => crate::rotor::build::<N>(&all[..sample.leaves as usize])
                );
                assert_eq!(sample.root, expected, "{} at N = {arity}", workload.name());
            }
        }
    }
}

/// cairn's store: BLAKE3, a 10 ms background group commit (as rotortree's
/// interval), leaves tiered out after checkpoints.
#[derive(Debug)]
pub struct CairnStore(cairn_store::Store);

impl CairnStore {
    fn config(
        arity: usize,
        checkpoint_every: Option<u64>,
        verify: bool,
    ) -> cairn_store::StoreConfig {
        let mut config =
            cairn_store::StoreConfig::new(crate::config(arity, cairn_core::HashKind::Blake3));
        config.checkpoint = cairn_store::CheckpointPolicy {
            every_appends: checkpoint_every,
            ..Default::default()
        };
        config.verify_on_open = verify;
        config
    }
}

impl DurableStore for CairnStore {
    const NAME: &'static str = "cairn";
    type Token = cairn_store::Token;

    fn open(dir: &Path, arity: usize, checkpoint_every: Option<u64>) -> Self {
        let fs: Arc<dyn cairn_store::Fs> = Arc::new(cairn_store::StdFs);
        CairnStore(
            cairn_store::Store::create(fs, dir, Self::config(arity, checkpoint_every, false))
                .expect("create a cairn store"),
        )
    }

    fn reopen(dir: &Path, arity: usize, verify: bool) -> Self {
        let fs: Arc<dyn cairn_store::Fs> = Arc::new(cairn_store::StdFs);
        CairnStore(
            cairn_store::Store::open(fs, dir, Self::config(arity, None, verify))
                .expect("open a cairn store"),
        )
    }

    fn append(&mut self, leaf: Hash) -> cairn_store::Token {
        self.0.append(leaf).expect("cairn append").token
    }

    fn append_batch(&mut self, leaves: &[Hash]) -> cairn_store::Token {
        self.0.append_batch(leaves).expect("cairn append").token
    }

    fn wait(&mut self, token: cairn_store::Token) {
        token
            .wait(Duration::from_secs(600))
            .expect("cairn durability");
    }

    fn root(&mut self) -> Hash {
        self.0.head().root.expect("non-empty tree")
    }

    fn checkpoint(&mut self) {
        self.0.checkpoint().expect("cairn checkpoint");
    }

    fn prove_and_verify(&mut self, index: u64) {
        let snapshot = self.0.snapshot();
        let proof = snapshot.prove(index).expect("a leaf of the snapshot");
        let config = snapshot.config();
        proof
            .verify(config.arity, config.hash, &snapshot.head())
            .expect("a cairn proof verifies");
    }

    fn close(self) {
        self.0.close().expect("cairn close");
    }
}
