//! The indexed tree's figures (docs/performance.md, "Indexed trees"):
//!
//! - `ingest`: durable inserts of `--values` random values in batches of
//!   each `--batches` size (each batch waited for, as `cairn ingest`
//!   does), into an `IndexedDb` and, in the same run and interleaved, a
//!   lean `Db` with its nullifier set (the plain append path): values per
//!   second and bytes written per value (`/proc/self/io`), the database
//!   closed (flushed) inside the timing.
//! - `open`: reopening each database of the last ingest (warm page cache):
//!   the indexed one rebuilds its tree from the log.
//! - `proofs`: an in-memory indexed tree of `--values` values at N = 2, 4
//!   and 16: absence proof generation and verification per proof (median
//!   of `--samples` random absent values, each timed alone), the bytes of
//!   an absence proof, and the lean membership proof's generation at the
//!   same size for comparison.
//! - `history`: an in-memory indexed tree of `--values` values whose last
//!   `--heads` heads (default 4,096) are inserts of `--block` values each
//!   (default 100), with that window kept: absence proofs at a random
//!   retained head for random absent values (p50 and p99 of `--samples`,
//!   each timed alone and checked against its head), the history's bytes
//!   per head and per value inserted, and the window's inserts with and
//!   without history, interleaved.
//!
//! Run: `cargo run --release -p cairn-bench --bin indexed -- [--values N]
//! [--batches 1000,100000] [--samples S] [--dir DIR] [--workload ingest,open,proofs]`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cairn_bench::durable::{IoCounters, IoDelta};
use cairn_bench::sched::ThreadCounters;
use cairn_bench::{cpu_seconds, median};
use cairn_core::indexed::IndexedTree;
use cairn_core::{Arity, Hash, HashKind, LeanImt, TreeConfig};
use cairn_db::{Db, DbConfig, IndexedDb};

struct Options {
    values: u64,
    batches: Vec<u64>,
    samples: usize,
    dir: PathBuf,
    workloads: Vec<String>,
    heads: usize,
    block: u64,
}

const USAGE: &str = "usage: indexed [--values N] [--batches B1,B2] [--samples S] [--dir DIR] [--workload ingest,open,proofs,history] [--heads H] [--block B]";

fn options() -> Options {
    let mut options = Options {
        values: 1_000_000,
        batches: vec![1_000, 100_000],
        samples: 20_000,
        dir: std::env::temp_dir(),
        workloads: vec!["ingest".into(), "open".into(), "proofs".into()],
        heads: 4096,
        block: 100,
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
            "--values" => options.values = number(&value()),
            "--batches" => options.batches = value().split(',').map(number).collect(),
            "--samples" => options.samples = number(&value()) as usize,
            "--dir" => options.dir = PathBuf::from(value()),
            "--workload" => options.workloads = value().split(',').map(str::to_owned).collect(),
            "--heads" => options.heads = number(&value()) as usize,
            "--block" => options.block = number(&value()),
            _ => bad(),
        }
    }
    options
}

/// Random-looking distinct values (SHA-256 of the index: the order of
/// insertion is unrelated to the order of values, as for nullifiers).
fn values(count: u64, seed: u64) -> Vec<Hash> {
    use rayon::prelude::*;
    (0..count)
        .into_par_iter()
        .map(|i| cairn_testkit::leaf(seed, i))
        .collect()
}

/// The `history` workload (see the module's header).
fn history(options: &Options, all: &[Hash]) {
    let config = config(4);
    let window = options.heads;
    let block = options.block as usize;
    let recent = (window - 1) * block;
    assert!(
        recent < all.len(),
        "--values must exceed (--heads - 1) * --block"
    );
    let base = all.len() - recent;
    let build = |keep: usize| {
        let started = Instant::now();
        let mut tree = IndexedTree::from_values(config, &all[..base]).expect("distinct values");
        let built = started.elapsed();
        tree.set_history_window(keep);
        (tree, built)
    };
    let (mut with, built) = build(window);
    let (mut without, _) = build(1);
    // The window's inserts, block by block, the two trees interleaved.
    let (mut on, mut off) = (Duration::ZERO, Duration::ZERO);
    for chunk in all[base..].chunks(block) {
        let started = Instant::now();
        with.insert_batch(chunk).expect("fresh values");
        on += started.elapsed();
        let started = Instant::now();
        without.insert_batch(chunk).expect("fresh values");
        off += started.elapsed();
    }
    assert_eq!(with.head(), without.head());
    drop(without);
    let heads = with.heads();
    assert_eq!(heads.len(), window);
    let stats = with.history_stats();
    let mut samples = Vec::with_capacity(options.samples);
    // Per sample, what the thread went through: read outside the timing.
    let mut disturbed = Vec::with_capacity(options.samples);
    for k in 0..options.samples as u64 {
        // Another seed's values: absent but for a 2^-256 chance.
        let absent = cairn_testkit::leaf(0x5eed, k);
        let pick = u64::from_le_bytes(absent[..8].try_into().expect("8 bytes"));
        let head = heads[(pick % heads.len() as u64) as usize];
        let before = ThreadCounters::now();
        let started = Instant::now();
        let proof = with.prove_absence_at(&absent, head.size);
        let elapsed = started.elapsed();
        let after = ThreadCounters::now();
        samples.push(elapsed);
        disturbed.push((elapsed, before.zip(after).map(|(b, a)| a.since(&b))));
        let proof = proof.expect("a random value is absent");
        proof
            .verify(config.arity, config.hash, &head, &absent)
            .expect("a proof at a retained head verifies against it");
    }
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)];
    println!(
        "
history: {} values, N = 4, BLAKE3, window {window} heads of {block} values (built {:.2} s)",
        all.len(),
        built.as_secs_f64()
    );
    println!("| absence proof at a random retained head | p50 | p99 | max |");
    println!("|---|---|---|---|");
    println!(
        "| {} samples | {:.1} us | {:.1} us | {:.1} us |",
        samples.len(),
        at(0.5).as_secs_f64() * 1e6,
        at(0.99).as_secs_f64() * 1e6,
        samples.last().expect("samples").as_secs_f64() * 1e6
    );
    print_disturbances(&mut disturbed);
    let inserted = (window - 1) * block;
    println!(
        "history: {} leaf records, {} node records at {} positions, {} bytes: {:.0} bytes per head, {:.1} bytes per value inserted",
        stats.leaf_records,
        stats.node_records,
        stats.positions,
        stats.bytes,
        stats.bytes as f64 / (window - 1) as f64,
        stats.bytes as f64 / inserted as f64
    );
    println!(
        "window inserts ({inserted} values in {} blocks): {:.3} s with history, {:.3} s without ({:.2}x)",
        window - 1,
        on.as_secs_f64(),
        off.as_secs_f64(),
        on.as_secs_f64() / off.as_secs_f64()
    );
}

/// Where the time of the slowest samples went: how many of them the
/// thread spent partly descheduled (the machine), or faulting pages in
/// (cold memory), against all samples; and the quantiles of the samples
/// that saw neither (the code's own tail).
fn print_disturbances(samples: &mut [(Duration, Option<ThreadCounters>)]) {
    if samples.iter().any(|(_, c)| c.is_none()) {
        println!("(no per-thread counters on this system)");
        return;
    }
    samples.sort_by_key(|(elapsed, _)| *elapsed);
    let tally = |part: &[(Duration, Option<ThreadCounters>)]| {
        let counters = || part.iter().filter_map(|(_, c)| *c);
        (
            part.len(),
            counters().filter(ThreadCounters::preempted).count(),
            counters().filter(|c| c.faults > 0).count(),
        )
    };
    println!("| samples | count | descheduled during it | page faults during it |");
    println!("|---|---|---|---|");
    let tail = samples.len() - samples.len() / 100;
    for (what, part) in [
        ("all", &samples[..]),
        ("slowest 1%", &samples[tail..]),
        (
            "slowest 0.1%",
            &samples[samples.len() - samples.len() / 1000..],
        ),
    ] {
        let (count, preempted, faulted) = tally(part);
        println!("| {what} | {count} | {preempted} | {faulted} |");
    }
    let mut quiet: Vec<Duration> = samples
        .iter()
        .filter(|(_, c)| c.is_some_and(|c| !c.preempted() && c.faults == 0))
        .map(|(elapsed, _)| *elapsed)
        .collect();
    if quiet.is_empty() {
        return;
    }
    quiet.sort();
    let at = |q: f64| quiet[((quiet.len() as f64 * q) as usize).min(quiet.len() - 1)];
    println!(
        "undisturbed samples ({} of {}): p50 {:.1} us, p99 {:.1} us, p99.9 {:.1} us, max {:.1} us",
        quiet.len(),
        samples.len(),
        at(0.5).as_secs_f64() * 1e6,
        at(0.99).as_secs_f64() * 1e6,
        at(0.999).as_secs_f64() * 1e6,
        quiet.last().expect("samples").as_secs_f64() * 1e6
    );
}

fn config(n: u64) -> TreeConfig {
    TreeConfig::new(Arity::new(n).expect("arity"), HashKind::Blake3)
}

/// The default runtime settings (background flush, automatic checkpoints).
fn db_config() -> DbConfig {
    DbConfig::new(config(4))
}

struct Ingested {
    seconds: f64,
    cpu_seconds: Option<f64>,
    disk_bytes: Option<u64>,
}

fn ingest_indexed(dir: &Path, values: &[Hash], batch: usize) -> Ingested {
    let before = IoCounters::now();
    let cpu = cpu_seconds();
    let start = Instant::now();
    let db = IndexedDb::create(dir, db_config()).expect("create");
    for chunk in values.chunks(batch) {
        let inserted = db.insert_batch(chunk).expect("insert");
        inserted
            .token
            .wait(Duration::from_secs(600))
            .expect("durable");
    }
    let head = db.flush().expect("flush");
    assert_eq!(head.size, values.len() as u64 + 1);
    db.close().expect("close");
    let seconds = start.elapsed().as_secs_f64();
    Ingested {
        seconds,
        cpu_seconds: cpu.zip(cpu_seconds()).map(|(a, b)| b - a),
        disk_bytes: IoDelta::between(before, IoCounters::now()).map(|d| d.disk_bytes()),
    }
}

fn ingest_lean(dir: &Path, values: &[Hash], batch: usize) -> Ingested {
    let before = IoCounters::now();
    let cpu = cpu_seconds();
    let start = Instant::now();
    let db = Db::create(dir, db_config()).expect("create");
    for chunk in values.chunks(batch) {
        let appended = db.append_batch(chunk).expect("append");
        appended
            .token
            .wait(Duration::from_secs(600))
            .expect("durable");
    }
    let head = db.head();
    assert_eq!(head.size, values.len() as u64);
    db.close().expect("close");
    let seconds = start.elapsed().as_secs_f64();
    Ingested {
        seconds,
        cpu_seconds: cpu.zip(cpu_seconds()).map(|(a, b)| b - a),
        disk_bytes: IoDelta::between(before, IoCounters::now()).map(|d| d.disk_bytes()),
    }
}

fn print_ingest(kind: &str, batch: u64, count: u64, done: &Ingested) {
    let per_value = done.disk_bytes.map_or_else(
        || "n/a".to_owned(),
        |b| format!("{:.1}", b as f64 / count as f64),
    );
    let cpu = done
        .cpu_seconds
        .map_or_else(|| "n/a".to_owned(), |c| format!("{c:.2}"));
    println!(
        "| {kind} | {batch} | {count} | {:.2} | {cpu} | {:.0} | {per_value} |",
        done.seconds,
        count as f64 / done.seconds
    );
}

fn main() {
    let options = options();
    let count = options.values;
    println!(
        "indexed tree figures: {count} values, BLAKE3, {} threads",
        rayon::current_num_threads()
    );
    let all = values(count, 0x1dec);
    if options.workloads.iter().any(|w| w == "history") {
        history(&options, &all);
    }
    let root = tempfile::tempdir_in(&options.dir).expect("temp dir");
    if options.workloads.iter().any(|w| w == "ingest") {
        println!(
            "\n| database | batch | values | seconds | CPU seconds | values/s | bytes written per value |"
        );
        println!("|---|---|---|---|---|---|---|");
        for &batch in &options.batches {
            // Interleaved: the two kinds under the same machine load.
            let lean = ingest_lean(
                &root.path().join(format!("lean-{batch}")),
                &all,
                batch as usize,
            );
            let indexed = ingest_indexed(
                &root.path().join(format!("indexed-{batch}")),
                &all,
                batch as usize,
            );
            print_ingest("lean (append + nullifier set)", batch, count, &lean);
            print_ingest("indexed (insert)", batch, count, &indexed);
            let cpu_ratio = lean
                .cpu_seconds
                .zip(indexed.cpu_seconds)
                .map_or_else(|| "n/a".to_owned(), |(l, i)| format!("{:.2}", i / l));
            println!(
                "| indexed / lean | {batch} | | {:.2} x the time | {cpu_ratio} x the CPU | {:.2} x the rate | |",
                indexed.seconds / lean.seconds,
                lean.seconds / indexed.seconds
            );
        }
    }
    if options.workloads.iter().any(|w| w == "memory") {
        println!(
            "\n| in memory, batch | values/s (IndexedTree::insert_batch) | values/s (LeanImt::append_batch + commit) |"
        );
        println!("|---|---|---|");
        for &batch in &options.batches {
            let start = Instant::now();
            let mut tree = IndexedTree::new(config(4));
            for chunk in all.chunks(batch as usize) {
                tree.insert_batch(chunk).expect("insert");
            }
            let indexed = start.elapsed().as_secs_f64();
            let start = Instant::now();
            let mut lean = LeanImt::new(config(4));
            for chunk in all.chunks(batch as usize) {
                lean.append_batch(chunk).expect("append");
                lean.commit();
            }
            let lean_seconds = start.elapsed().as_secs_f64();
            println!(
                "| {batch} | {:.0} | {:.0} |",
                count as f64 / indexed,
                count as f64 / lean_seconds
            );
        }
    }
    if options.workloads.iter().any(|w| w == "open")
        && let Some(&batch) = options.batches.last()
    {
        println!("\n| database | open seconds (warm cache) |");
        println!("|---|---|");
        let lean = root.path().join(format!("lean-{batch}"));
        let indexed = root.path().join(format!("indexed-{batch}"));
        if lean.exists() && indexed.exists() {
            for _ in 0..2 {
                let start = Instant::now();
                let db = Db::open(&lean).expect("open");
                let lean_seconds = start.elapsed().as_secs_f64();
                db.close().expect("close");
                let start = Instant::now();
                let db = IndexedDb::open(&indexed).expect("open");
                let indexed_seconds = start.elapsed().as_secs_f64();
                assert_eq!(db.head().size, count + 1);
                db.close().expect("close");
                println!("| lean (set file + replay) | {lean_seconds:.2} |");
                println!("| indexed (rebuild from the log) | {indexed_seconds:.2} |");
            }
        } else {
            println!("(run the ingest workload first)");
        }
    }
    if options.workloads.iter().any(|w| w == "proofs") {
        println!(
            "\n| N | absence proof bytes | generate (us, median) | verify (us, median) | lean membership proof: generate (us) |"
        );
        println!("|---|---|---|---|---|");
        let absent = values(options.samples as u64, 0x0bad);
        for n in [2u64, 4, 16] {
            let start = Instant::now();
            let tree = IndexedTree::from_values(config(n), &all).expect("build");
            let built = start.elapsed().as_secs_f64();
            let head = tree.head();
            let mut generate = Vec::with_capacity(absent.len());
            let mut verify = Vec::with_capacity(absent.len());
            let mut bytes = 0;
            for value in &absent {
                let start = Instant::now();
                let proof = tree.prove_absence(value).expect("absent");
                generate.push(start.elapsed());
                let start = Instant::now();
                proof
                    .verify(config(n).arity, HashKind::Blake3, &head, value)
                    .expect("verifies");
                verify.push(start.elapsed());
                bytes = bytes.max(proof.to_bytes().len());
            }
            let mut lean = LeanImt::from_leaves(config(n), &all).expect("lean");
            let view_head = lean.head();
            let mut lean_generate = Vec::with_capacity(absent.len());
            let view = lean.at_size(view_head.size).expect("view");
            for (k, _) in absent.iter().enumerate() {
                let index = (k as u64 * 7919) % count;
                let start = Instant::now();
                let proof = view.prove(index).expect("proof");
                lean_generate.push(start.elapsed());
                std::hint::black_box(proof);
            }
            let us = |mut d: Vec<Duration>| median(&mut d).as_secs_f64() * 1e6;
            println!(
                "| {n} | {bytes} | {:.2} | {:.2} | {:.2} |",
                us(generate),
                us(verify),
                us(lean_generate)
            );
            eprintln!("(N = {n}: built the indexed tree of {count} values in {built:.2} s)");
        }
    }
}
