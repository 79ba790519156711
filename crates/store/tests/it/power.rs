//! Simulated power loss: seeded workloads run on [`SimFs`], which
//! records every mutating file operation; at every operation boundary of the
//! trace, crash states are built in every [`CrashMode`] (dropped and kept
//! unsynced data, lost growth, undone directory operations, random subsets
//! of unsynced sectors, and the last write torn at each 512-byte and 4 KiB
//! boundary), recovered with `Store::open`, and checked: the store opens,
//! nothing acknowledged is missing, every leaf is the workload's and the root
//! is the reference root of the recovered prefix.
//!
//! `kill -9` keeps the page cache, so the child-process crash tests cannot
//! see a missing fsync; this harness can, and the canary proves it: with
//! syncs that lie, some crash state loses an acknowledged leaf.
//!
//! - `power_loss_at_every_operation_boundary_loses_nothing_acknowledged`: 20
//!   seeds (N = 2, 3, 4, 16 in turn), each a workload of ~600 operations
//!   (single appends, batches of 1..=300 leaves, durability waits,
//!   checkpoints; 1,024 leaves per log file so commits cross files) and at
//!   least 10,000 crash states.
//! - `power_loss_after_recovering_from_power_loss_loses_nothing_acknowledged`:
//!   the same for a second life that starts from a crash state of the first
//!   (recovery's own writes, appends over a torn tail, a stale log file).
//! - `canary_with_lying_fsync_the_harness_finds_lost_acknowledged_leaves`.
//!
//! A state is "acknowledged" at boundary k as far as a durability wait or a
//! checkpoint had returned `Ok` within the first k operations. Every state
//! is built and judged against its own boundary's acknowledged size; a
//! state whose files are byte-for-byte those of a state already opened at
//! the same or the previous boundary is not opened again (opening depends
//! only on the files), which is what keeps 200,000 states within a minute.
//!
//! Environment (for a slow variant):
//! - `CAIRN_POWER_SEEDS`: `20` (seeds 0..20, the default), `100..140`,
//!   `3,7,11`, or `5,` (seed 5 alone);
//! - `CAIRN_POWER_SEEDS2`: the same for the second-life test (default 4);
//! - `CAIRN_POWER_OPS`: operations per workload (default 600, the workload
//!   stops at the first step that reaches it);
//! - `CAIRN_POWER_RANDOM`: `RandomSectors` draws per boundary (default 8, raised
//!   for a workload whose boundaries would not reach the minimum otherwise);
//! - `CAIRN_POWER_UNDO`: `UndoDirOps` draws per boundary (default 2);
//! - `CAIRN_POWER_MIN_STATES`: crash states each seed must reach (default 10,000);
//! - `CAIRN_POWER_PROVE_EVERY`: verify proofs in every k-th opened state
//!   (default 16; size, every leaf and the root are checked in all of them);
//! - `CAIRN_POWER_THREADS`: worker threads (default: available parallelism).
//!
//! A failure names the seed, the life, the boundary, the operation before
//! it, the mode and the draw; `CAIRN_POWER_SEEDS=<seed>,` (or
//! `CAIRN_POWER_SEEDS2` for life 2) reruns that workload, and [`crash_state`]
//! rebuilds exactly that state.

use std::collections::{BTreeSet, HashMap};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use cairn_core::{LeanImt, TreeConfig, TreeHead};
use cairn_store::{Fs, Store, StoreError, Token};
use cairn_testkit::env_u64;
use cairn_testkit::sim::{CrashMode, PAGE, Replay, SECTOR, SimFs};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::support::*;

const DB: &str = "/db";
/// 1,024 leaves per log file: a workload of a few thousand leaves crosses
/// several files.
const LOG_SHIFT: u8 = 10;
const ARITIES: [u64; 4] = [2, 3, 4, 16];

fn arity_of(seed: u64) -> u64 {
    ARITIES[(seed % ARITIES.len() as u64) as usize]
}

#[derive(Clone, Debug)]
struct Params {
    /// The workload runs until the trace holds at least this many operations.
    target_ops: usize,
    /// `RandomSectors` draws per boundary: at least this many, more if the
    /// workload needs them to reach `min_states`.
    random_draws: usize,
    /// Crash states each workload must reach.
    min_states: usize,
    /// `UndoDirOps` draws per boundary.
    undo_draws: usize,
    /// Verify membership proofs in every `prove_every`-th opened state.
    prove_every: usize,
    /// Syncs lie during the workload (after creation): the canary.
    lying_sync: bool,
    /// Stop checking a workload at its first lost acknowledged leaf (the
    /// canary).
    stop_at_first_loss: bool,
    /// The workloads build fixed-depth (zk-kit IMT) trees, not Lean ones.
    fixed: bool,
}

impl Params {
    fn from_env() -> Params {
        Params {
            target_ops: env_u64("CAIRN_POWER_OPS", 600) as usize,
            random_draws: env_u64("CAIRN_POWER_RANDOM", 8) as usize,
            min_states: env_u64("CAIRN_POWER_MIN_STATES", 10_000) as usize,
            undo_draws: env_u64("CAIRN_POWER_UNDO", 2) as usize,
            prove_every: (env_u64("CAIRN_POWER_PROVE_EVERY", 16) as usize).max(1),
            lying_sync: false,
            stop_at_first_loss: false,
            fixed: false,
        }
    }
}

/// `20` → 0..20; `100..140`; `3,7,11`; `5,` → just 5.
fn seeds_from_env(name: &str, default: u64) -> Vec<u64> {
    let Ok(spec) = std::env::var(name) else {
        return (0..default).collect();
    };
    let parse = |s: &str| -> u64 {
        s.trim()
            .parse()
            .unwrap_or_else(|e| panic!("{name}={spec}: {e}"))
    };
    if let Some((from, to)) = spec.split_once("..") {
        (parse(from)..parse(to)).collect()
    } else if spec.contains(',') {
        spec.split(',')
            .filter(|s| !s.trim().is_empty())
            .map(parse)
            .collect()
    } else {
        (0..parse(&spec)).collect()
    }
}

// ---------------------------------------------------------------------------
// The workload
// ---------------------------------------------------------------------------

/// A workload's trace and what it acknowledged, and when.
#[derive(Debug)]
struct Workload {
    seed: u64,
    /// 1: from `Store::create` on an empty disk; 2: from `Store::open` on a
    /// crash state of life 1 (`origin` says which).
    life: u64,
    origin: Option<String>,
    n: u64,
    /// The tree: arity `n`, Lean or fixed-depth.
    tree: TreeConfig,
    fs: SimFs,
    /// Boundary from which the store exists: `cairn.meta`'s rename is durable
    /// (`Store::create` returned). Before it, "not a store" is a valid outcome.
    created: usize,
    /// `(boundary, size)`: from `boundary` on (the trace's length right after
    /// a wait or checkpoint returned), `size` leaves are acknowledged.
    /// Increasing in both.
    acks: Vec<(usize, u64)>,
    /// Leaves appended in all (by both lives).
    appended: u64,
    waits: usize,
    checkpoints: usize,
}

impl Workload {
    /// Leaves acknowledged at boundary `k`.
    fn acked_at(&self, k: usize) -> u64 {
        let i = self.acks.partition_point(|&(at, _)| at <= k);
        i.checked_sub(1).map_or(0, |i| self.acks[i].1)
    }
}

fn open_sim(fs: SimFs, tree: TreeConfig) -> Result<Store, StoreError> {
    Store::open(
        Arc::new(fs) as Arc<dyn Fs>,
        Path::new(DB),
        config_of(tree, LOG_SHIFT),
    )
}

/// What [`drive`] did.
#[derive(Debug, Default)]
struct Driven {
    appended: u64,
    waits: usize,
    checkpoints: usize,
}

/// Random single appends, batches of 1..=300 leaves, waits on recent tokens
/// and checkpoints on `store` (holding leaves `0..first`), until `fs`'s
/// trace holds `params.target_ops` operations; records acknowledgements in
/// `acks`. Drops the store at the end (which flushes what is left: more
/// boundaries, nothing more acknowledged).
fn drive(
    store: Store,
    fs: &SimFs,
    rng: &mut ChaCha8Rng,
    first: u64,
    acks: &mut Vec<(usize, u64)>,
    params: &Params,
) -> Driven {
    let mut tokens: Vec<Token> = Vec::new();
    let mut driven = Driven {
        appended: first,
        ..Driven::default()
    };
    let mut acknowledge = |size: u64, at: usize| {
        if acks.last().is_none_or(|&(_, acked)| size > acked) {
            acks.push((at, size));
        }
    };
    while fs.op_count() < params.target_ops {
        let appended = driven.appended;
        let roll = rng.gen_range(0..100);
        if roll < 40 {
            let got = store.append(leaf(appended)).unwrap();
            assert_eq!(got.first, appended);
            driven.appended += 1;
            tokens.push(got.token);
        } else if roll < 68 {
            // 1..=300 leaves, small batches more often than large ones, so
            // that a few thousand leaves make hundreds of operations.
            let max = [300, 40, 8][rng.gen_range(0..3)];
            let count = rng.gen_range(1..=max);
            let got = store
                .append_batch(&leaves(appended..appended + count))
                .unwrap();
            assert_eq!((got.first, got.count), (appended, count));
            driven.appended += count;
            tokens.push(got.token);
        } else if roll < 92 {
            // Mostly the newest token; sometimes an older one (which may be
            // durable already, or flush everything since anyway).
            let Some(token) = (if rng.gen_bool(0.6) {
                tokens.last()
            } else if tokens.is_empty() {
                None
            } else {
                tokens.get(rng.gen_range(0..tokens.len()))
            }) else {
                continue;
            };
            token.wait(WAIT).unwrap();
            driven.waits += 1;
            acknowledge(token.end(), fs.op_count());
        } else {
            store.checkpoint().unwrap();
            driven.checkpoints += 1;
            // A checkpoint flushes everything appended before it.
            assert_eq!(store.durable_size(), appended);
            acknowledge(appended, fs.op_count());
        }
        // Keep the tokens the waits choose from few and recent.
        if tokens.len() > 16 {
            tokens.drain(..tokens.len() - 16);
        }
    }
    drop(tokens);
    drop(store);
    driven
}

/// Life 1 of `seed`'s workload: create the store on an empty disk, then
/// [`drive`] it.
fn run_workload(seed: u64, params: &Params) -> Workload {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let n = arity_of(seed);
    let tree = if params.fixed {
        fixed_tree_config(n)
    } else {
        tree_config(n)
    };
    let fs = SimFs::new();
    let store = Store::create(
        Arc::new(fs.clone()) as Arc<dyn Fs>,
        Path::new(DB),
        config_of(tree, LOG_SHIFT),
    )
    .unwrap();
    let created = fs.op_count();
    if params.lying_sync {
        fs.set_lying_sync(true);
    }
    let mut acks = Vec::new();
    let driven = drive(store, &fs, &mut rng, 0, &mut acks, params);
    Workload {
        seed,
        life: 1,
        origin: None,
        n,
        tree,
        fs,
        created,
        acks,
        appended: driven.appended,
        waits: driven.waits,
        checkpoints: driven.checkpoints,
    }
}

/// Life 2: a random crash state of life 1 (at a boundary after creation,
/// three times in four right after a write, so that something is torn or
/// lost; any mode), recovered, then driven on. Its trace starts at the
/// crash state, so its boundaries cover recovery's own writes and appends
/// over a torn tail, a stale log file, a crashed checkpoint's leftovers.
/// What life 2 opened with is durable (a crash state is all durable), so
/// it is acknowledged from boundary 0.
fn run_second_life(first: &Workload, params: &Params) -> Workload {
    let mut rng = ChaCha8Rng::seed_from_u64(first.seed ^ 0x5eed_0000_0002);
    let draws = draws_for(first, params);
    let mut replay = first.fs.replay();
    let after_writes: Vec<usize> = (first.created.max(1)..=replay.op_count())
        .filter(|&k| first.fs.describe_op(k - 1).starts_with("write "))
        .collect();
    let k = if rng.gen_bool(0.75) && !after_writes.is_empty() {
        after_writes[rng.gen_range(0..after_writes.len())]
    } else {
        rng.gen_range(first.created..=replay.op_count())
    };
    replay.seek(k);
    let modes = modes_at(&replay, draws);
    let draw = rng.gen_range(0..modes.len());
    let fs = replay.crash(&modes[draw], &mut state_rng(first, k, draw));
    let origin = format!(
        "life 1 crashed at boundary {k} (after `{}`), {:?}, draw {draw} of {draws:?}",
        k.checked_sub(1)
            .map_or_else(|| "nothing".into(), |i| first.fs.describe_op(i)),
        modes[draw],
    );
    let store = open_sim(fs.clone(), first.tree).unwrap_or_else(|e| panic!("{origin}: {e}"));
    let recovered = store.size();
    let mut acks = vec![(0, recovered)];
    let driven = drive(store, &fs, &mut rng, recovered, &mut acks, params);
    Workload {
        seed: first.seed,
        life: 2,
        origin: Some(format!("{origin}, recovered {recovered} leaves")),
        n: first.n,
        tree: first.tree,
        fs,
        created: 0,
        acks,
        appended: driven.appended,
        waits: driven.waits,
        checkpoints: driven.checkpoints,
    }
}

// ---------------------------------------------------------------------------
// Crash states and their check
// ---------------------------------------------------------------------------

/// The random generator of state `draw` at boundary `k` of a workload: a
/// function of the seed, the life, `k` and `draw`, so that one state can be
/// rebuilt alone.
fn state_rng(w: &Workload, k: usize, draw: usize) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(
        w.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15)
            ^ (w.life << 56)
            ^ ((k as u64) << 20)
            ^ draw as u64,
    )
}

/// How many times each random mode is drawn at every boundary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Draws {
    undo: usize,
    random: usize,
}

/// The crash modes tried at the replay's boundary, in order (a mode's index
/// in this list is its `draw`): the deterministic modes, `UndoDirOps` and
/// `RandomSectors` several times, then the last write torn at every 512-byte
/// and 4 KiB boundary inside it.
fn modes_at(replay: &Replay, draws: Draws) -> Vec<CrashMode> {
    let mut modes = vec![
        CrashMode::DropUnsynced,
        CrashMode::KeepUnsynced,
        CrashMode::GrowthLost,
    ];
    modes.extend(std::iter::repeat_n(CrashMode::UndoDirOps, draws.undo));
    modes.extend(std::iter::repeat_n(CrashMode::RandomSectors, draws.random));
    for boundary in [SECTOR, PAGE] {
        for keep in 0..replay.tear_points(boundary) {
            modes.push(CrashMode::TearLastWrite { boundary, keep });
        }
    }
    modes
}

/// Rebuilds one crash state of a workload (for reproducing a failure: run
/// the workload with the same seed and params, then call this).
fn crash_state(w: &Workload, draws: Draws, k: usize, draw: usize) -> (CrashMode, SimFs) {
    let mut replay = w.fs.replay();
    replay.seek(k);
    let mode = modes_at(&replay, draws)[draw];
    (mode, replay.crash(&mode, &mut state_rng(w, k, draw)))
}

/// Reference heads of the workload's prefixes, computed once per size.
#[derive(Debug)]
struct Reference {
    tree: LeanImt,
    heads: HashMap<u64, TreeHead>,
}

impl Reference {
    fn new(tree: TreeConfig, appended: u64) -> Reference {
        let tree = LeanImt::from_leaves(tree, &leaves(0..appended)).unwrap();
        Reference {
            tree,
            heads: HashMap::new(),
        }
    }

    fn head(&mut self, size: u64) -> TreeHead {
        let tree = &mut self.tree;
        *self
            .heads
            .entry(size)
            .or_insert_with(|| tree.at_size(size).unwrap().head())
    }
}

/// What was wrong with one crash state.
#[derive(Debug, Clone)]
struct Violation {
    seed: u64,
    life: u64,
    origin: Option<String>,
    k: usize,
    op: String,
    mode: CrashMode,
    draw: usize,
    draws: Draws,
    acked: u64,
    /// Some(size) when the store opened with fewer leaves than acknowledged.
    lost: Option<u64>,
    what: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "seed {} (N = {}), life {}{}, boundary {} (after `{}`), {:?}, draw {} of {:?}, {} acknowledged: {}",
            self.seed,
            arity_of(self.seed),
            self.life,
            self.origin
                .as_ref()
                .map_or_else(String::new, |origin| format!(" ({origin})")),
            self.k,
            self.op,
            self.mode,
            self.draw,
            self.draws,
            self.acked,
            self.what
        )
    }
}

/// What opening one crash state gave, whatever the boundary: the part of a
/// check that depends only on the state's bytes.
#[derive(Clone, Debug)]
enum Opened {
    /// No `cairn.meta`, or not even the directory: not a store (valid only
    /// before creation completed).
    NotAStore,
    /// Opened with this many leaves, each `leaf(i)`, with the reference root.
    Size(u64),
    /// Anything else: a failed open, a wrong leaf or root, a panic.
    Wrong(String),
}

/// Opens one crash state and checks what it holds: every leaf is `leaf(i)`
/// and the root is the reference root of the recovered prefix; with `prove`,
/// membership proofs of a few leaves verify against it.
fn open_and_check(crashed: SimFs, w: &Workload, reference: &mut Reference, prove: bool) -> Opened {
    let store = match open_sim(crashed, w.tree) {
        Ok(store) => store,
        Err(StoreError::NotAStore { .. } | StoreError::Missing { .. }) => return Opened::NotAStore,
        Err(e) => return Opened::Wrong(format!("open failed: {e}")),
    };
    let snapshot = store.snapshot();
    let size = snapshot.size();
    if size > w.appended {
        return Opened::Wrong(format!(
            "{size} leaves recovered, only {} were ever appended",
            w.appended
        ));
    }
    if store.durable_size() != size {
        return Opened::Wrong(format!(
            "opened with {size} leaves but {} durable",
            store.durable_size()
        ));
    }
    if size > 0 {
        let finals = snapshot.final_nodes(0);
        if finals.len() as u64 != size - 1 {
            return Opened::Wrong(format!(
                "level 0 holds {} final leaves at size {size}",
                finals.len()
            ));
        }
        if let Some(i) = finals
            .iter()
            .enumerate()
            .position(|(i, got)| *got != leaf(i as u64))
        {
            return Opened::Wrong(format!("leaf {i} is wrong (size {size})"));
        }
        let (index, last) = snapshot.edge()[0];
        if index != size - 1 || last != leaf(size - 1) {
            return Opened::Wrong(format!(
                "the last leaf (index {index}) is wrong (size {size})"
            ));
        }
    }
    let want = reference.head(size);
    if snapshot.head() != want {
        return Opened::Wrong(format!(
            "head {:?} at size {size}, the reference is {want:?}",
            snapshot.head()
        ));
    }
    if prove && size > 0 {
        for index in [0, size / 3, size / 2, size - 1] {
            let verified = snapshot
                .prove(index)
                .map_err(|e| e.to_string())
                .and_then(|proof| proof.verify_with(&w.tree, &want).map_err(|e| e.to_string()));
            if let Err(e) = verified {
                return Opened::Wrong(format!("proof of leaf {index} at size {size}: {e}"));
            }
        }
    }
    Opened::Size(size)
}

/// `open_and_check`, with a panic turned into a wrong result.
fn open_and_check_caught(
    crashed: SimFs,
    w: &Workload,
    reference: &mut Reference,
    prove: bool,
) -> Opened {
    catch_unwind(AssertUnwindSafe(|| {
        open_and_check(crashed, w, reference, prove)
    }))
    .unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Opened::Wrong(format!("panicked: {message}"))
    })
}

/// The verdict on a state at boundary `k`, where `acked` leaves were
/// acknowledged: `None` if it is right, else (lost: the recovered size if
/// acknowledged leaves are missing, what is wrong).
fn verdict(opened: &Opened, w: &Workload, k: usize, acked: u64) -> Option<(Option<u64>, String)> {
    match *opened {
        Opened::NotAStore if k < w.created => None,
        Opened::NotAStore => Some((
            None,
            "not a store (no cairn.meta) after its creation completed".into(),
        )),
        Opened::Size(size) if size < acked => Some((
            Some(size),
            format!("lost acknowledged leaves: {size} recovered"),
        )),
        Opened::Size(_) => None,
        Opened::Wrong(ref what) => Some((None, what.clone())),
    }
}

/// The files and directories under `/db`, with contents: what `Store::open`
/// can see of a state.
type Dump = Vec<(String, Option<Vec<u8>>)>;

fn dump(fs: &SimFs) -> Dump {
    let mut out = Vec::new();
    let mut dirs = vec![std::path::PathBuf::from(DB)];
    while let Some(dir) = dirs.pop() {
        let Ok(names) = fs.list_dir(&dir) else {
            continue;
        };
        for name in names {
            let path = dir.join(&name);
            match fs.read_all(&path) {
                Ok(content) => out.push((path.display().to_string(), Some(content))),
                Err(_) => {
                    out.push((path.display().to_string(), None));
                    dirs.push(path);
                }
            }
        }
    }
    out.sort();
    out
}

/// A 64-bit digest of a dump (CRC-32C and length): a fast pre-filter before
/// comparing dumps, and the distinct-state count.
fn digest(dump: &Dump) -> u64 {
    let mut crc = 0u32;
    let mut len = 0u32;
    for (path, content) in dump {
        crc = crc32c::crc32c_append(crc, path.as_bytes());
        match content {
            Some(bytes) => {
                crc = crc32c::crc32c_append(crc, &(bytes.len() as u64).to_le_bytes());
                crc = crc32c::crc32c_append(crc, bytes);
                len = len.wrapping_add(bytes.len() as u32 + 1);
            }
            None => crc = crc32c::crc32c_append(crc, b"/"),
        }
    }
    (u64::from(len) << 32) | u64::from(crc)
}

/// What checking every crash state of one workload found.
#[derive(Debug, Default)]
struct Outcome {
    boundaries: usize,
    draws: Option<Draws>,
    /// Crash states built and checked.
    states: usize,
    /// Distinct states among them (by digest).
    distinct: usize,
    /// States actually opened: a state whose files equal, byte for byte, one
    /// opened at this boundary or the one before has the same outcome, and
    /// is judged against its own boundary's acknowledged size without
    /// reopening.
    opened: usize,
    not_a_store: usize,
    /// Distinct recovered sizes.
    sizes: BTreeSet<u64>,
    violations: Vec<Violation>,
    violation_count: usize,
    seconds: f64,
}

const KEEP_VIOLATIONS: usize = 20;

/// The draws for `w`: `params`' own, with more `RandomSectors` draws if
/// the boundaries would otherwise not reach `params.min_states`.
fn draws_for(w: &Workload, params: &Params) -> Draws {
    let mut replay = w.fs.replay();
    let boundaries = replay.op_count() + 1;
    let mut fixed = 0;
    for k in 0..boundaries {
        replay.seek(k);
        fixed += modes_at(
            &replay,
            Draws {
                undo: params.undo_draws,
                random: 0,
            },
        )
        .len();
    }
    Draws {
        undo: params.undo_draws,
        random: params
            .random_draws
            .max(params.min_states.saturating_sub(fixed).div_ceil(boundaries)),
    }
}

/// States opened at one boundary: (digest, files, outcome).
type Seen = Vec<(u64, Dump, Opened)>;

fn check_workload(w: &Workload, params: &Params) -> Outcome {
    let started = Instant::now();
    let mut reference = Reference::new(w.tree, w.appended);
    let draws = draws_for(w, params);
    let mut outcome = Outcome {
        draws: Some(draws),
        ..Outcome::default()
    };
    let mut digests = std::collections::HashSet::new();
    // Identical states recur mostly within a boundary (a random draw that
    // kept every unsynced sector is the KeepUnsynced state) and from one
    // boundary to the next (nothing changes what survives of a write until
    // its sync): those are compared byte for byte, not reopened.
    let mut current: Seen = Vec::new();
    let mut replay = w.fs.replay();
    'boundaries: for k in 0..=replay.op_count() {
        replay.seek(k);
        outcome.boundaries += 1;
        let previous = std::mem::take(&mut current);
        let acked = w.acked_at(k);
        for (draw, mode) in modes_at(&replay, draws).into_iter().enumerate() {
            let crashed = replay.crash(&mode, &mut state_rng(w, k, draw));
            outcome.states += 1;
            let files = dump(&crashed);
            let digest = digest(&files);
            digests.insert(digest);
            let known = current
                .iter()
                .chain(&previous)
                .find(|(d, f, _)| *d == digest && *f == files)
                .map(|(_, _, opened)| opened.clone());
            let opened = match known {
                Some(opened) => opened,
                None => {
                    let prove = outcome.opened.is_multiple_of(params.prove_every);
                    outcome.opened += 1;
                    let opened = open_and_check_caught(crashed, w, &mut reference, prove);
                    current.push((digest, files, opened.clone()));
                    opened
                }
            };
            match opened {
                Opened::NotAStore => outcome.not_a_store += 1,
                Opened::Size(size) => {
                    outcome.sizes.insert(size);
                }
                Opened::Wrong(_) => {}
            }
            let Some((lost, what)) = verdict(&opened, w, k, acked) else {
                continue;
            };
            outcome.violation_count += 1;
            if outcome.violations.len() < KEEP_VIOLATIONS || lost.is_some() {
                outcome.violations.push(Violation {
                    seed: w.seed,
                    life: w.life,
                    origin: w.origin.clone(),
                    k,
                    op: k
                        .checked_sub(1)
                        .map_or_else(|| "nothing".into(), |i| w.fs.describe_op(i)),
                    mode,
                    draw,
                    draws,
                    acked,
                    lost,
                    what,
                });
            }
            if params.stop_at_first_loss && lost.is_some() {
                break 'boundaries;
            }
        }
    }
    outcome.distinct = digests.len();
    outcome.seconds = started.elapsed().as_secs_f64();
    outcome
}

/// Runs and checks the workloads of `seeds` on worker threads: life 1, or
/// with `second_life`, life 2 (after an unchecked life 1).
fn run_seeds(seeds: &[u64], params: &Params, second_life: bool) -> Vec<(Workload, Outcome)> {
    let threads = (env_u64(
        "CAIRN_POWER_THREADS",
        std::thread::available_parallelism().map_or(2, |n| n.get() as u64),
    ) as usize)
        .clamp(1, seeds.len().max(1));
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let results = Mutex::new(Vec::with_capacity(seeds.len()));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= seeds.len() || failed.load(Ordering::Relaxed) {
                        break;
                    }
                    let mut workload = run_workload(seeds[i], params);
                    if second_life {
                        workload = run_second_life(&workload, params);
                    }
                    let outcome = check_workload(&workload, params);
                    if outcome.violation_count > 0 && params.stop_at_first_loss {
                        failed.store(true, Ordering::Relaxed);
                    }
                    // Reported as each one ends: a slow run shows progress.
                    let mut report = summary(&workload, &outcome);
                    if let Some(origin) = &workload.origin {
                        report.push_str(&format!("\n         from {origin}"));
                    }
                    eprintln!("{report}");
                    results.lock().unwrap().push((workload, outcome));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|(w, _)| w.seed);
    results
}

fn summary(w: &Workload, o: &Outcome) -> String {
    format!(
        "seed {:>3} N={:<2} {} life {} ops {:>4} leaves {:>5} (acked {:>5}, {} log files) waits {:>3} checkpoints {:>2} | boundaries {:>4} random draws {:>2} states {:>6} ({:>5} distinct, {:>5} opened) not-a-store {:>3} sizes {:>3} violations {} | {:.1} s",
        w.seed,
        w.n,
        w.tree.kind.name(),
        w.life,
        w.fs.op_count(),
        w.appended,
        w.acked_at(usize::MAX),
        w.appended.div_ceil(1 << LOG_SHIFT),
        w.waits,
        w.checkpoints,
        o.boundaries,
        o.draws.map_or(0, |d| d.random),
        o.states,
        o.distinct,
        o.opened,
        o.not_a_store,
        o.sizes.len(),
        o.violation_count,
        o.seconds,
    )
}

// ---------------------------------------------------------------------------
// The tests
// ---------------------------------------------------------------------------

/// Runs, checks and reports the workloads of `seeds`; fails with the
/// violations found, if any.
fn sweep(seeds: &[u64], params: &Params, second_life: bool) {
    let started = Instant::now();
    let results = run_seeds(seeds, params, second_life);
    assert_eq!(results.len(), seeds.len());
    let mut total = 0;
    let mut violations = Vec::new();
    for (_, o) in &results {
        total += o.states;
        violations.extend(o.violations.iter().cloned());
    }
    let distinct: usize = results.iter().map(|(_, o)| o.distinct).sum();
    eprintln!(
        "{} seeds (life {}), {total} crash states ({distinct} distinct), {:.1} s",
        seeds.len(),
        if second_life { 2 } else { 1 },
        started.elapsed().as_secs_f64()
    );
    if !violations.is_empty() {
        let count: usize = results.iter().map(|(_, o)| o.violation_count).sum();
        let listed: Vec<String> = violations.iter().map(|v| format!("  {v}")).collect();
        panic!(
            "{count} crash states recovered wrongly; the first ones:\n{}",
            listed.join("\n")
        );
    }
    for (w, o) in &results {
        // The workload is the one the issue asks for: it acknowledged
        // leaves, checkpointed, and its commits crossed log files.
        assert!(w.acked_at(usize::MAX) > 0, "seed {}: nothing acked", w.seed);
        assert!(w.checkpoints > 0, "seed {}: no checkpoint", w.seed);
        assert!(
            w.appended > 2 << LOG_SHIFT,
            "seed {}: {} leaves do not cross two log files",
            w.seed,
            w.appended
        );
        assert!(
            o.states >= params.min_states,
            "seed {}: {} crash states, want at least {}",
            w.seed,
            o.states,
            params.min_states
        );
    }
}

/// Every crash state at every operation boundary of 20 seeded workloads
/// (N = 2, 3, 4, 16) recovers everything acknowledged, with the right
/// leaves and root.
#[test]
fn power_loss_at_every_operation_boundary_loses_nothing_acknowledged() {
    sweep(
        &seeds_from_env("CAIRN_POWER_SEEDS", 20),
        &Params::from_env(),
        false,
    );
}

/// The same after a first power loss: each workload restarts from a random
/// crash state of a first one (a torn tail, a stale log file, a crashed
/// checkpoint's leftovers), appends over it, and every crash state of that
/// second life is checked.
#[test]
fn power_loss_after_recovering_from_power_loss_loses_nothing_acknowledged() {
    sweep(
        &seeds_from_env("CAIRN_POWER_SEEDS2", 4),
        &Params::from_env(),
        true,
    );
}

/// The first sweep over fixed-depth (zk-kit IMT) trees: their checkpoints
/// hold the padded right edge up to the fixed depth, and recovery rebuilds
/// it from the level files and the log.
#[test]
fn power_loss_at_every_operation_boundary_loses_nothing_acknowledged_in_a_fixed_depth_tree() {
    sweep(
        &seeds_from_env("CAIRN_POWER_SEEDS_FIXED", 8),
        &Params {
            fixed: true,
            ..Params::from_env()
        },
        false,
    );
}

/// The second-life sweep over fixed-depth trees.
#[test]
fn power_loss_after_recovering_from_power_loss_loses_nothing_acknowledged_in_a_fixed_depth_tree() {
    sweep(
        &seeds_from_env("CAIRN_POWER_SEEDS2_FIXED", 2),
        &Params {
            fixed: true,
            ..Params::from_env()
        },
        true,
    );
}

/// The canary: with syncs that lie during the workload, the same harness
/// must find a crash state that lost an acknowledged leaf. A harness that
/// cannot fail proves nothing.
#[test]
fn canary_with_lying_fsync_the_harness_finds_lost_acknowledged_leaves() {
    let params = Params {
        lying_sync: true,
        stop_at_first_loss: true,
        ..Params::from_env()
    };
    for seed in [0u64, 3] {
        let w = run_workload(seed, &params);
        assert!(
            w.acked_at(usize::MAX) > 0,
            "the canary acknowledged nothing"
        );
        let outcome = check_workload(&w, &params);
        let loss = outcome
            .violations
            .iter()
            .find(|v| v.lost.is_some_and(|size| size < v.acked))
            .unwrap_or_else(|| {
                panic!(
                    "seed {seed}: lying syncs lost no acknowledged leaf in {} crash states: the harness cannot fail",
                    outcome.states
                )
            });
        eprintln!(
            "canary seed {seed}: after {} states ({} violations): {loss}",
            outcome.states, outcome.violation_count
        );
    }
}

/// The harness's own bookkeeping: acknowledgements only grow, a state
/// rebuilt alone equals the one the sweep checked, and the canary's first
/// loss is at the first acknowledgement's boundary at the latest.
#[test]
fn the_harness_rebuilds_single_states_and_orders_acknowledgements() {
    let params = Params {
        target_ops: 120,
        ..Params::from_env()
    };
    let w = run_workload(1, &params);
    assert!(
        w.acks
            .windows(2)
            .all(|p| p[0].0 < p[1].0 && p[0].1 < p[1].1)
    );
    assert_eq!(w.acked_at(0), 0);
    let &(first_at, first_size) = w.acks.first().expect("an acknowledgement");
    assert_eq!(w.acked_at(first_at - 1), 0);
    assert_eq!(w.acked_at(first_at), first_size);
    // At the first acknowledged boundary, dropping everything unsynced keeps
    // the acknowledged leaves...
    let draws = draws_for(&w, &params);
    let (mode, crashed) = crash_state(&w, draws, first_at, 0);
    assert_eq!(mode, CrashMode::DropUnsynced);
    let store = open_sim(crashed, w.tree).unwrap();
    assert!(check_prefix_of(&store, w.tree) >= first_size);
    drop(store);
    // ...and the same workload with lying syncs loses them there.
    let lying = run_workload(
        1,
        &Params {
            lying_sync: true,
            ..params.clone()
        },
    );
    assert_eq!(lying.acks.first(), w.acks.first(), "the same workload");
    let (_, crashed) = crash_state(&lying, draws, first_at, 0);
    let store = open_sim(crashed, w.tree).unwrap();
    assert!(check_prefix_of(&store, w.tree) < first_size);
    // Random draws are a function of (seed, boundary, draw).
    let k = w.fs.op_count() / 2;
    let random = 3 + draws.undo;
    let (mode, a) = crash_state(&w, draws, k, random);
    assert_eq!(mode, CrashMode::RandomSectors);
    let (_, b) = crash_state(&w, draws, k, random);
    assert_eq!(dump(&a), dump(&b));
    assert_eq!(digest(&dump(&a)), digest(&dump(&b)));
}
