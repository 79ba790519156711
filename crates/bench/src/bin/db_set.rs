//! The nullifier set's figures (docs/performance.md, "Nullifier set"), measured on `Db`:
//!
//! - `ingest`: durable bulk ingest of `--leaves` values in `--batch`
//!   batches, waiting for each, with the set on and off, interleaved over
//!   `--rounds`; the ratio is the speed with the set over the speed without.
//!   Every round's time is printed too: on this VM they spread by up to
//!   2x, so compare within one run.
//! - `append-cpu`: the same appends with the set on, but no waits and no
//!   background flush (nothing is written until close): the CPU of the
//!   append path alone (set insert and tree copy), in ns a value.
//! - `lookup`: `index_of` of present values and `contains` of absent ones
//!   on the database of `--leaves` values, everything in memory; each call
//!   timed alone (the figures include about 20 ns of `Instant` overhead);
//!   then `index_of_many` of 1,000 values a call (9 in 10 present) against
//!   the same values looked up one by one, per value.
//! - `scale`: with `--scale-leaves M`, ingest M values in 4M batches,
//!   checkpoint, report the set's bytes per value and the process RSS;
//!   close, reopen and time the open (warm page cache). With
//!   `--scale-no-set` the same without the set: the storage engine's RSS
//!   with level 0 tiered, against the tree's total bytes.
//!
//! Run: `cargo run --release -p cairn-bench --bin db_set -- [--quick]
//! [--leaves N] [--batch B] [--rounds R] [--scale-leaves M] [--dir DIR]
//! [--workload ingest,lookup,scale]`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cairn_bench::median;
use cairn_core::{Arity, Hash, HashKind, TreeConfig};
use cairn_db::{Db, DbConfig};

struct Options {
    leaves: u64,
    batch: u64,
    rounds: usize,
    scale_leaves: Option<u64>,
    scale_unique: bool,
    dir: PathBuf,
    workloads: Vec<String>,
}

const USAGE: &str = "usage: db_set [--quick] [--leaves N] [--batch B] [--rounds R] \
                     [--scale-leaves M] [--scale-no-set] [--dir DIR] [--workload ingest,lookup,scale,append-cpu]";

fn options() -> Options {
    let mut options = Options {
        leaves: 10_000_000,
        batch: 1_000_000,
        rounds: 3,
        scale_leaves: None,
        scale_unique: true,
        dir: std::env::temp_dir(),
        workloads: vec!["ingest".into(), "lookup".into()],
    };
    let mut args = std::env::args().skip(1);
    let number = |value: Option<String>| -> u64 {
        value
            .and_then(|v| v.replace('_', "").parse().ok())
            .unwrap_or_else(|| {
                eprintln!("{USAGE}");
                std::process::exit(2)
            })
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => {
                options.leaves = 1_000_000;
                options.batch = 100_000;
            }
            "--leaves" => options.leaves = number(args.next()),
            "--batch" => options.batch = number(args.next()),
            "--rounds" => options.rounds = number(args.next()) as usize,
            "--scale-leaves" => {
                options.scale_leaves = Some(number(args.next()));
                if !options.workloads.iter().any(|w| w == "scale") {
                    options.workloads.push("scale".into());
                }
            }
            "--scale-no-set" => options.scale_unique = false,
            "--dir" => options.dir = args.next().map(PathBuf::from).expect(USAGE),
            "--workload" => {
                options.workloads = args
                    .next()
                    .expect(USAGE)
                    .split(',')
                    .map(str::to_owned)
                    .collect()
            }
            _ => {
                eprintln!("{USAGE}");
                std::process::exit(2)
            }
        }
    }
    options
}

/// Value `i` of the data set: 32 pseudo-random bytes (the values are
/// hashes in practice), cheap enough to make 100M of them.
fn value(i: u64) -> Hash {
    let mut out = [0u8; 32];
    let mut state = i.wrapping_add(0x243f_6a88_85a3_08d3);
    for chunk in out.chunks_mut(8) {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        chunk.copy_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    out
}

fn values(range: std::ops::Range<u64>) -> Vec<Hash> {
    use rayon::prelude::*;
    range.into_par_iter().map(value).collect()
}

fn config(unique: bool) -> DbConfig {
    let mut config = DbConfig::new(TreeConfig::new(Arity::new(4).unwrap(), HashKind::Blake3));
    config.unique = unique;
    // Everything in memory, no automatic checkpoints during a timed run.
    config.store.tier_below = 0;
    config.store.checkpoint = Default::default();
    config
}

/// Ingests `count` values in `batch` batches, waiting for each; returns
/// the time and the database.
fn ingest(dir: &Path, unique: bool, count: u64, batch: u64) -> (Duration, Db) {
    let db = Db::create(dir, config(unique)).expect("create");
    let elapsed = append_all(&db, count, batch, true);
    (elapsed, db)
}

/// Appends `count` values to `db` in `batch` batches, waiting for each to
/// be durable if `wait`; returns the time of the appends (and waits) alone.
fn append_all(db: &Db, count: u64, batch: u64, wait: bool) -> Duration {
    let mut elapsed = Duration::ZERO;
    let mut start = 0;
    while start < count {
        let end = (start + batch).min(count);
        let chunk = values(start..end);
        let began = Instant::now();
        let appended = db.append_batch(&chunk).expect("append");
        if wait {
            appended
                .token
                .wait(Duration::from_secs(600))
                .expect("durable");
        }
        elapsed += began.elapsed();
        start = end;
    }
    elapsed
}

fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let options = options();
    let root = tempfile::Builder::new()
        .prefix("cairn-db-set-")
        .tempdir_in(&options.dir)
        .expect("temporary directory");
    println!(
        "db_set: {} values, batches of {}, N=4 BLAKE3, {} rounds, in {}",
        options.leaves,
        options.batch,
        options.rounds,
        root.path().display()
    );
    let wants = |name: &str| options.workloads.iter().any(|w| w == name);

    // One side alone, for profiling.
    for (name, unique) in [("ingest-on", true), ("ingest-off", false)] {
        if wants(name) {
            let dir = root.path().join(name);
            let (elapsed, db) = ingest(&dir, unique, options.leaves, options.batch);
            println!("{name} {:.1} ms", elapsed.as_secs_f64() * 1e3);
            db.close().expect("close");
        }
    }

    if wants("append-cpu") {
        let dir = root.path().join("append-cpu");
        let mut config = config(true);
        config.store.flush_interval = None;
        let db = Db::create(&dir, config).expect("create");
        let elapsed = append_all(&db, options.leaves, options.batch, false);
        println!(
            "append-cpu {} values in batches of {}: {:.1} ms, {:.1} ns a value",
            options.leaves,
            options.batch,
            elapsed.as_secs_f64() * 1e3,
            elapsed.as_secs_f64() * 1e9 / options.leaves as f64
        );
        drop(db);
    }

    if wants("ingest") {
        let mut times: [Vec<Duration>; 2] = Default::default();
        for round in 0..options.rounds {
            // Alternate which goes first.
            for way in [round % 2, 1 - round % 2] {
                let dir = root.path().join(format!("ingest-{round}-{way}"));
                let (elapsed, db) = ingest(&dir, way == 0, options.leaves, options.batch);
                db.close().expect("close");
                std::fs::remove_dir_all(&dir).expect("clean up");
                times[way].push(elapsed);
            }
        }
        for (name, runs) in ["set on", "set off"].iter().zip(&times) {
            let list: Vec<String> = runs
                .iter()
                .map(|t| format!("{:.0}", t.as_secs_f64() * 1e3))
                .collect();
            println!("ingest   {name}: rounds {} ms", list.join(", "));
        }
        let [on, off] = times.map(|mut t| median(&mut t));
        println!(
            "ingest   set on {:>9.1} ms ({:.2} M/s)   set off {:>9.1} ms ({:.2} M/s)   speed ratio on/off {:.2}",
            on.as_secs_f64() * 1e3,
            options.leaves as f64 / on.as_secs_f64() / 1e6,
            off.as_secs_f64() * 1e3,
            options.leaves as f64 / off.as_secs_f64() / 1e6,
            off.as_secs_f64() / on.as_secs_f64()
        );
    }

    if wants("lookup") {
        let dir = root.path().join("lookup");
        let (_, db) = ingest(&dir, true, options.leaves, options.batch);
        let stats = db.stats();
        let set = stats.set.expect("set on");
        println!(
            "memory   {} values: {:.2} bytes/value ({} slots, load {:.2})",
            set.values,
            set.memory_bytes as f64 / set.values as f64,
            set.slots,
            set.values as f64 / set.slots as f64
        );
        let probes = 1_000_000u64;
        let mut state = 0x1234_5678u64;
        let mut present = Vec::with_capacity(probes as usize);
        let mut absent = Vec::with_capacity(probes as usize);
        let _ = db.snapshot(); // publish the snapshot lookups read leaves from
        for _ in 0..probes {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let index = (state >> 20) % options.leaves;
            let v = value(index);
            let began = Instant::now();
            let found = db.index_of(&v).expect("lookup");
            present.push(began.elapsed());
            assert_eq!(found, Some(index));
            let missing = value(options.leaves + (state >> 20) % (1 << 40));
            let began = Instant::now();
            let found = db.contains(&missing).expect("lookup");
            absent.push(began.elapsed());
            assert!(!found);
        }
        for (name, mut samples) in [("index_of", present), ("contains", absent)] {
            samples.sort_unstable();
            println!(
                "{name:<8} {} random lookups: median {} ns, p99 {} ns, p99.9 {} ns{}",
                probes,
                percentile(&samples, 0.5).as_nanos(),
                percentile(&samples, 0.99).as_nanos(),
                percentile(&samples, 0.999).as_nanos(),
                if name == "index_of" {
                    " (present)"
                } else {
                    " (absent)"
                }
            );
        }
        // Batch lookups, as a caller with many values at once makes them:
        // `index_of_many` of 1,000 values a call against the same 1,000
        // looked up one by one, alternating, per value.
        const PER_CALL: usize = 1000;
        let calls = (probes as usize / PER_CALL).max(10);
        let mut many = Vec::with_capacity(calls);
        let mut singles = Vec::with_capacity(calls);
        for call in 0..calls {
            let mut asked = Vec::with_capacity(PER_CALL);
            let mut want = Vec::with_capacity(PER_CALL);
            for k in 0..PER_CALL {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                // One value in ten absent.
                if k % 10 == 9 {
                    asked.push(value(options.leaves + (state >> 20) % (1 << 40)));
                    want.push(None);
                } else {
                    let index = (state >> 20) % options.leaves;
                    asked.push(value(index));
                    want.push(Some(index));
                }
            }
            let per_value = |elapsed: Duration| elapsed / PER_CALL as u32;
            let run_many = |samples: &mut Vec<Duration>| {
                let began = Instant::now();
                let found = db.index_of_many(&asked).expect("lookup");
                samples.push(per_value(began.elapsed()));
                assert_eq!(found, want);
            };
            let run_singles = |samples: &mut Vec<Duration>| {
                let began = Instant::now();
                let found: Vec<Option<u64>> = asked
                    .iter()
                    .map(|v| db.index_of(v).expect("lookup"))
                    .collect();
                samples.push(per_value(began.elapsed()));
                assert_eq!(found, want);
            };
            if call % 2 == 0 {
                run_many(&mut many);
                run_singles(&mut singles);
            } else {
                run_singles(&mut singles);
                run_many(&mut many);
            }
        }
        for (name, mut samples) in [("many", many), ("singles", singles)] {
            samples.sort_unstable();
            println!(
                "{name:<8} {calls} calls of {PER_CALL} values (9 in 10 present): per value median {} ns, p99 {} ns{}",
                percentile(&samples, 0.5).as_nanos(),
                percentile(&samples, 0.99).as_nanos(),
                if name == "many" {
                    " (index_of_many)"
                } else {
                    " (index_of one by one)"
                }
            );
        }
        db.close().expect("close");
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    if wants("scale") {
        let count = options.scale_leaves.unwrap_or(options.leaves);
        let dir = root.path().join("scale");
        let rss_before = rss_bytes();
        let began = Instant::now();
        let mut config = config(options.scale_unique);
        config.store.tier_below = 1;
        let db = Db::create(&dir, config).expect("create");
        let batch = 4u64 << 20;
        let mut start = 0;
        while start < count {
            let end = (start + batch).min(count);
            let chunk = values(start..end);
            db.append_batch(&chunk)
                .expect("append")
                .token
                .wait(Duration::from_secs(600))
                .expect("durable");
            start = end;
        }
        let ingest = began.elapsed();
        let began = Instant::now();
        db.checkpoint().expect("checkpoint");
        let checkpoint = began.elapsed();
        let rss = rss_bytes().saturating_sub(rss_before);
        let tree_bytes = {
            let snapshot = db.snapshot();
            let mut nodes = 0u64;
            let mut len = snapshot.size();
            while len > 1 {
                nodes += len;
                len = len.div_ceil(4);
            }
            (nodes + 1) * 32
        };
        let set = db.stats().set;
        println!(
            "scale    {count} values: ingest {:.1} s, checkpoint {:.2} s, RSS {:.2} GiB = {:.1}% of the tree's {:.2} GiB{}",
            ingest.as_secs_f64(),
            checkpoint.as_secs_f64(),
            rss as f64 / (1u64 << 30) as f64,
            100.0 * rss as f64 / tree_bytes as f64,
            tree_bytes as f64 / (1u64 << 30) as f64,
            match set {
                Some(set) => format!(
                    "; set {:.2} bytes/value ({:.2} GiB, load {:.2})",
                    set.memory_bytes as f64 / set.values as f64,
                    set.memory_bytes as f64 / (1u64 << 30) as f64,
                    set.values as f64 / set.slots as f64
                ),
                None => " (no set)".to_string(),
            }
        );
        db.close().expect("close");
        let set_file = std::fs::metadata(dir.join("nullifiers.set")).map_or(0, |m| m.len());
        let began = Instant::now();
        let db = Db::open(&dir).expect("open");
        let open = began.elapsed();
        assert_eq!(db.size(), count);
        if options.scale_unique {
            assert_eq!(
                db.index_of(&value(count / 2)).expect("lookup"),
                Some(count / 2)
            );
        }
        println!(
            "open     {count} values with a checkpoint: {:.3} s (set file {:.2} GiB, warm page cache)",
            open.as_secs_f64(),
            set_file as f64 / (1u64 << 30) as f64
        );
        drop(db);
        std::fs::remove_dir_all(&dir).expect("clean up");
    }
}
