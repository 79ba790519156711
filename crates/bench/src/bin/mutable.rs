//! The mutable tree's figures (docs/performance.md, "Mutable trees and
//! indexed history"): a `MutableDb` of `--leaves` leaves (appended in
//! batches of 1M, durable), then `--rounds` rounds, each of one batch of
//! `--batch` updates of random live leaves, one batch of `--batch`
//! removals and one batch of `--batch` appends, in that order, each waited
//! for until durable with its old leaves' proofs (what `cairn update`
//! answers). Per kind of change: changes per second over the whole run,
//! the spread of the per-batch rates (p10, p50, p90), and the CPU seconds
//! of the process (user and system, all threads, from `/proc/self/stat`)
//! per change. Every batch's proofs are checked against the head before
//! it outside the timing.
//!
//! On a shared machine the wall clock holds the time the process waited
//! for a core. So each batch also reads (outside its timing) the run-queue
//! wait of the writing thread, which checks, logs, commits or waits for
//! the commit, and applies the batch, and of every thread of the process
//! (`/proc/.../schedstat`): a second table gives the rate with the
//! writer's wait taken out, and the rate of the batches during which no
//! thread of the process waited for a core at all.
//!
//! Run: `cargo run --release -p cairn-bench --bin mutable -- [--leaves N]
//! [--batch B] [--rounds R] [--hash blake3|poseidon] [--arity N] [--dir DIR]`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use cairn_bench::cpu_seconds;
use cairn_bench::sched::{ThreadCounters, process_waited_ns};
use cairn_core::{Arity, Hash, HashKind, TreeConfig};
use cairn_db::{Change, DbConfig, MutableDb};

struct Options {
    leaves: u64,
    batch: u64,
    rounds: u64,
    hash: HashKind,
    arity: u64,
    dir: PathBuf,
}

const USAGE: &str = "usage: mutable [--leaves N] [--batch B] [--rounds R] [--hash blake3|poseidon] [--arity N] [--dir DIR]";
const WAIT: Duration = Duration::from_secs(600);

fn options() -> Options {
    let mut options = Options {
        leaves: 10_000_000,
        batch: 1_000,
        rounds: 100,
        hash: HashKind::Blake3,
        arity: 4,
        dir: std::env::temp_dir(),
    };
    let mut args = std::env::args().skip(1);
    let bad = || -> ! {
        eprintln!("{USAGE}");
        std::process::exit(2)
    };
    let number = |text: &str| -> u64 { text.replace('_', "").parse().unwrap_or_else(|_| bad()) };
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| bad());
        match arg.as_str() {
            "--leaves" => options.leaves = number(&value()),
            "--batch" => options.batch = number(&value()),
            "--rounds" => options.rounds = number(&value()),
            "--arity" => options.arity = number(&value()),
            "--dir" => options.dir = PathBuf::from(value()),
            "--hash" => {
                let name = value();
                options.hash = HashKind::ALL
                    .into_iter()
                    .find(|kind| kind.name() == name)
                    .unwrap_or_else(|| bad());
            }
            _ => bad(),
        }
    }
    options
}

/// One kind of change's timings.
#[derive(Default)]
struct Timing {
    seconds: f64,
    cpu: f64,
    /// Changes per second of each batch.
    rates: Vec<f64>,
    changes: u64,
    /// Seconds the writing thread waited on a run queue during batches.
    waited: f64,
    /// Changes and seconds of the batches in which no thread of the
    /// process waited on a run queue.
    quiet_batches: u64,
    quiet_changes: u64,
    quiet_seconds: f64,
    /// Batches whose counters could be read.
    counted: u64,
}

impl Timing {
    fn row(&mut self, what: &str) -> String {
        self.rates.sort_by(f64::total_cmp);
        let at =
            |q: f64| self.rates[((self.rates.len() as f64 * q) as usize).min(self.rates.len() - 1)];
        format!(
            "| {what} | {} | {:.0} | {:.0} / {:.0} / {:.0} | {:.2} |",
            self.changes,
            self.changes as f64 / self.seconds,
            at(0.1),
            at(0.5),
            at(0.9),
            self.cpu / self.changes as f64 * 1e6
        )
    }

    /// The rates without the time spent waiting for a core.
    fn undisturbed(&self, what: &str) -> String {
        let rate = |changes: u64, seconds: f64| {
            if seconds > 0.0 {
                format!("{:.0}", changes as f64 / seconds)
            } else {
                "-".into()
            }
        };
        format!(
            "| {what} | {:.1} of {:.1} | {} | {} of {} | {} |",
            self.waited,
            self.seconds,
            rate(self.changes, self.seconds - self.waited),
            self.quiet_batches,
            self.counted,
            rate(self.quiet_changes, self.quiet_seconds),
        )
    }
}

/// Applies `batch` durably, timed into `timing`; checks every old leaf's
/// proof against the head before it (outside the timing).
fn timed(db: &MutableDb, shape: &TreeConfig, batch: &[Change], timing: &mut Timing) {
    let before = db.head();
    let cpu = cpu_seconds();
    let (writer, process) = (ThreadCounters::now(), process_waited_ns());
    let started = Instant::now();
    let ticket = db.change(batch).expect("a valid batch");
    let old = db.changed(&ticket, WAIT).expect("durable");
    let seconds = started.elapsed().as_secs_f64();
    let writer = writer.zip(ThreadCounters::now()).map(|(b, a)| a.since(&b));
    let process = process.zip(process_waited_ns()).map(|(b, a)| a - b);
    if let Some((writer, process)) = writer.zip(process) {
        timing.counted += 1;
        timing.waited += writer.waited_ns as f64 / 1e9;
        if process == 0 {
            timing.quiet_batches += 1;
            timing.quiet_changes += batch.len() as u64;
            timing.quiet_seconds += seconds;
        }
    }
    if let Some(used) = cpu.zip(cpu_seconds()).map(|(a, b)| b - a) {
        timing.cpu += used;
    }
    timing.seconds += seconds;
    timing.rates.push(batch.len() as f64 / seconds);
    timing.changes += batch.len() as u64;
    // Within a batch each proof is against the root the previous change
    // left; the first one's is the head before the batch.
    if let Some(Some(first)) = old.first() {
        first
            .proof
            .verify_with(shape, &before)
            .expect("the first old leaf proves against the head before");
    }
}

fn main() {
    let options = options();
    let shape = TreeConfig::new(Arity::new(options.arity).expect("arity"), options.hash);
    let root = tempfile::tempdir_in(&options.dir).expect("a scratch directory");
    let db =
        MutableDb::create(root.path().join("db"), DbConfig::new(shape), false).expect("create");
    // Canonical values under every hash; seeds apart per use.
    let fresh = |seed: u64, i: u64| cairn_testkit::leaf(seed, i);
    let started = Instant::now();
    let chunk = 1_000_000u64;
    let mut at = 0;
    while at < options.leaves {
        let end = (at + chunk).min(options.leaves);
        let values: Vec<Hash> = (at..end).map(|i| fresh(1, i)).collect();
        let (ticket, _) = db.append_values(&values, None, false).expect("append");
        db.changed(&ticket.expect("appended"), WAIT)
            .expect("durable");
        at = end;
    }
    eprintln!(
        "built {} leaves ({} N = {}) in {:.1} s",
        options.leaves,
        options.hash.name(),
        options.arity,
        started.elapsed().as_secs_f64()
    );
    let (mut updates, mut removals, mut appends) =
        (Timing::default(), Timing::default(), Timing::default());
    let mut removed = std::collections::HashSet::new();
    let mut size = options.leaves;
    let mut next = 0u64;
    // A splitmix64 stream picks the indices (leaves removed are skipped).
    let mut state = 0x5eed_u64;
    let mut random = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    for _ in 0..options.rounds {
        let mut pick = |removed: &std::collections::HashSet<u64>, taken: &mut Vec<u64>| loop {
            let index = random() % size;
            if !removed.contains(&index) && !taken.contains(&index) {
                taken.push(index);
                return index;
            }
        };
        let mut taken = Vec::new();
        let batch: Vec<Change> = (0..options.batch)
            .map(|_| {
                next += 1;
                Change::Update(pick(&removed, &mut taken), fresh(2, next))
            })
            .collect();
        timed(&db, &shape, &batch, &mut updates);
        let mut taken = Vec::new();
        let batch: Vec<Change> = (0..options.batch)
            .map(|_| Change::Remove(pick(&removed, &mut taken)))
            .collect();
        timed(&db, &shape, &batch, &mut removals);
        removed.extend(taken);
        let batch: Vec<Change> = (0..options.batch)
            .map(|_| {
                next += 1;
                Change::Append(fresh(2, next))
            })
            .collect();
        timed(&db, &shape, &batch, &mut appends);
        size += options.batch;
    }
    println!(
        "\nmutable: {} leaves, {} N = {}, batches of {}, {} rounds (update, remove, append), each batch durable",
        options.leaves,
        options.hash.name(),
        options.arity,
        options.batch,
        options.rounds
    );
    println!("| change | changes | per second | per batch: p10 / p50 / p90 | CPU us per change |");
    println!("|---|---|---|---|---|");
    println!("{}", updates.row("update"));
    println!("{}", removals.row("remove"));
    println!("{}", appends.row("append"));
    println!(
        "\n| change | writer's run-queue wait, s (of the run's s) | per second without it | batches with no thread waiting | their per second |"
    );
    println!("|---|---|---|---|---|");
    println!("{}", updates.undisturbed("update"));
    println!("{}", removals.undisturbed("remove"));
    println!("{}", appends.undisturbed("append"));
    hash_cost(&shape, size);
    db.close().expect("close");
}

/// What hashing costs per update at `size` leaves: the hashes on its path
/// (one per hashing level, the minimum when every update's proof is
/// against the root just before it; averaged over spread indices), the
/// log's own tree's share (two words per change, appended to a Lean tree
/// of the same hash), and the time of one hash alone and in lanes.
fn hash_cost(shape: &TreeConfig, size: u64) {
    let path: usize = (0..1000u64)
        .map(|k| {
            let index = (k * 7_919_993) % size;
            shape
                .shape()
                .path(index, size)
                .filter(cairn_core::shape::PathStep::hashes)
                .count()
        })
        .sum();
    let path = path as f64 / 1000.0;
    // A Lean tree of arity N hashes (w - 1) / (N - 1) parents for w leaves.
    let log = 2.0 / (shape.arity.get() as f64 - 1.0);
    let n = shape.arity.get();
    let groups = 4096;
    let children: Vec<Hash> = (0..(groups * n) as u64)
        .map(|i| cairn_testkit::leaf(3, i))
        .collect();
    let mut out = vec![[0u8; 32]; groups];
    let mut lanes = Vec::new();
    let mut alone = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        shape.hash.hash_groups(&children, n, &mut out);
        lanes.push(started.elapsed() / groups as u32);
        let started = Instant::now();
        for (parent, group) in out.iter_mut().zip(children.chunks_exact(n)) {
            *parent = shape.hash.hash_children(group);
        }
        alone.push(started.elapsed() / groups as u32);
    }
    let lanes = cairn_bench::median(&mut lanes).as_secs_f64() * 1e6;
    let alone = cairn_bench::median(&mut alone).as_secs_f64() * 1e6;
    println!(
        "hashing per update: {path:.1} on its path (the minimum: one per hashing level) + {log:.1} for the log's own tree; one hash {alone:.3} us alone, {lanes:.3} us in lanes ({}): {:.2} us per update alone, {:.2} us in lanes",
        shape.hash.kernel_name(),
        (path + log) * alone,
        (path + log) * lanes
    );
}
