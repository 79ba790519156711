//! The durable side-by-side comparison: every workload of
//! `cairn_bench::durable` on every store in the list in `main`, in the
//! same process, on the same leaves, each run in a fresh temporary
//! directory, interleaved (round r starts with store r mod the number of
//! stores, so no store always goes first), reporting medians per store and
//! the ratio of each store's median to rotortree's (< 1 means faster than
//! rotortree). The roots of every run of a workload must agree.
//!
//! Run: `cargo run --release -p cairn-bench --bin peers_durable -- [--quick]
//! [--rounds R] [--workload NAME[,NAME]] [--arity N] [--dir DIR] [--csv FILE]`.
//! `--quick` divides leaf counts and batches by 10; workloads: follow, bulk,
//! one-batch, sustained, reopen, reopen-verify, reopen-replay.
//!
//! Bytes per leaf come from `/proc/self/io`, read from before the store is
//! opened to after it is closed (see `cairn_bench::durable::IoCounters`):
//! "disk" is `write_bytes - cancelled_write_bytes` (counted when pages are
//! dirtied, so it does not lag writeback; 0 on tmpfs), "wchar" the bytes
//! passed to write system calls.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cairn_bench::durable::{
    CairnStore, DurableStore, RotorStore, Sample, Sizes, Workload, leaves_parallel, run_workload,
};
use cairn_bench::median;
use cairn_core::Hash;

/// One store under comparison: its name and its workloads, monomorphised.
struct Store {
    name: &'static str,
    run: fn(Workload, &Path, usize, &Sizes, &[Hash]) -> Sample,
}

fn store<S: DurableStore>() -> Store {
    Store {
        name: S::NAME,
        run: run_workload::<S>,
    }
}

struct Options {
    rounds: usize,
    quick: bool,
    workloads: Vec<Workload>,
    arity: usize,
    dir: PathBuf,
    csv: Option<String>,
}

const USAGE: &str = "usage: peers_durable [--quick] [--rounds R] [--workload NAME[,NAME]] \
                     [--arity N] [--dir DIR] [--csv FILE]\n\
                     workloads: follow, bulk, one-batch, sustained, reopen, reopen-verify, reopen-replay";

fn options() -> Options {
    let mut args = std::env::args().skip(1);
    let mut options = Options {
        rounds: 3,
        quick: false,
        workloads: Vec::new(),
        arity: 4,
        dir: std::env::temp_dir(),
        csv: None,
    };
    let value = |flag: &str, args: &mut dyn Iterator<Item = String>| {
        args.next()
            .unwrap_or_else(|| panic!("{flag} needs a value\n{USAGE}"))
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => options.quick = true,
            "--rounds" => {
                options.rounds = value("--rounds", &mut args)
                    .parse()
                    .ok()
                    .filter(|&r| r > 0)
                    .unwrap_or_else(|| panic!("--rounds takes a positive integer\n{USAGE}"));
            }
            "--workload" => {
                for name in value("--workload", &mut args).split(',') {
                    let workload = Workload::from_name(name)
                        .unwrap_or_else(|| panic!("unknown workload {name:?}\n{USAGE}"));
                    options.workloads.push(workload);
                }
            }
            "--arity" => {
                options.arity = value("--arity", &mut args)
                    .parse()
                    .unwrap_or_else(|_| panic!("--arity takes 2, 4, 8 or 16\n{USAGE}"));
            }
            "--dir" => options.dir = value("--dir", &mut args).into(),
            "--csv" => options.csv = Some(value("--csv", &mut args)),
            "--help" | "-h" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => panic!("unknown argument {other:?}\n{USAGE}"),
        }
    }
    if options.workloads.is_empty() {
        options.workloads = Workload::ALL.to_vec();
    }
    options
}

/// Per-store results of one workload.
struct Results {
    name: &'static str,
    samples: Vec<Sample>,
}

impl Results {
    fn median_time(&self) -> Duration {
        median(&mut self.samples.iter().map(|s| s.elapsed).collect::<Vec<_>>())
    }

    /// The median over rounds of `per_leaf(sample)`, if every sample has it.
    fn median_per_leaf(&self, per_leaf: impl Fn(&Sample) -> Option<u64>) -> Option<f64> {
        let mut values = self
            .samples
            .iter()
            .map(|s| per_leaf(s).map(|bytes| bytes as f64 / s.leaves.max(1) as f64))
            .collect::<Option<Vec<f64>>>()?;
        values.sort_by(f64::total_cmp);
        values.get(values.len() / 2).copied()
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn or_dash(value: Option<f64>, decimals: usize) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:.decimals$}"))
}

fn main() {
    // The stores compared, baseline (rotortree) first; one line per store.
    let stores = [store::<RotorStore>(), store::<CairnStore>()];

    let options = options();
    let sizes = if options.quick {
        Sizes::quick()
    } else {
        Sizes::full()
    };
    std::fs::create_dir_all(&options.dir).expect("creating --dir");
    println!(
        "machine: {} cores; arity {}, BLAKE3; {} sizes; medians of {} interleaved rounds; stores in fresh directories under {}",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        options.arity,
        if options.quick {
            "--quick (1/10)"
        } else {
            "full"
        },
        options.rounds,
        options.dir.display()
    );
    println!(
        "ratio = store median / {} median (< 1 means faster); disk = write_bytes - cancelled_write_bytes, wchar = write syscalls, per leaf, open to close",
        stores[0].name
    );

    let needed = options
        .workloads
        .iter()
        .map(|w| w.leaves_needed(&sizes))
        .max()
        .unwrap_or(0);
    let started = Instant::now();
    let leaves = leaves_parallel(needed);
    println!(
        "{needed} leaves generated in {:.0} ms",
        ms(started.elapsed())
    );

    let mut csv = String::from(
        "workload,store,arity,leaves,rounds,median_ms,min_ms,max_ms,disk_bytes_per_leaf,wchar_per_leaf,ratio_vs_baseline,samples_ms\n",
    );
    for &workload in &options.workloads {
        println!("\n## {}: {}", workload.name(), workload.describe(&sizes));
        let mut results: Vec<Results> = stores
            .iter()
            .map(|s| Results {
                name: s.name,
                samples: Vec::new(),
            })
            .collect();
        for round in 0..options.rounds {
            for k in 0..stores.len() {
                let i = (round + k) % stores.len();
                let dir = tempfile::Builder::new()
                    .prefix(&format!("cairn-durable-{}-", stores[i].name))
                    .tempdir_in(&options.dir)
                    .expect("creating a temporary directory");
                let sample = (stores[i].run)(workload, dir.path(), options.arity, &sizes, &leaves);
                drop(dir);
                eprintln!(
                    "  round {} {:<10} {:>10.1} ms",
                    round + 1,
                    stores[i].name,
                    ms(sample.elapsed)
                );
                results[i].samples.push(sample);
            }
        }

        let roots: Vec<(&str, Hash)> = results
            .iter()
            .flat_map(|r| r.samples.iter().map(move |s| (r.name, s.root)))
            .collect();
        for (name, root) in &roots {
            assert_eq!(
                *root,
                roots[0].1,
                "{}: {name}'s root differs from {}'s",
                workload.name(),
                roots[0].0
            );
        }

        println!(
            "{:<11} {:>10} {:>11} {:>11} {:>11} {:>10} {:>11} {:>11} {:>7}",
            "store",
            "leaves",
            "median ms",
            "min ms",
            "max ms",
            "Mleaves/s",
            "disk B/leaf",
            "wchar B/lf",
            "ratio"
        );
        let baseline = results[0].median_time();
        for r in &results {
            let median = r.median_time();
            let min = r
                .samples
                .iter()
                .map(|s| s.elapsed)
                .min()
                .unwrap_or_default();
            let max = r
                .samples
                .iter()
                .map(|s| s.elapsed)
                .max()
                .unwrap_or_default();
            let count = r.samples.first().map_or(0, |s| s.leaves);
            let disk = r.median_per_leaf(|s| s.io.map(|io| io.disk_bytes()));
            let wchar = r.median_per_leaf(|s| s.io.map(|io| io.wchar));
            let ratio = median.as_secs_f64() / baseline.as_secs_f64();
            println!(
                "{:<11} {:>10} {:>11.2} {:>11.2} {:>11.2} {:>10.2} {:>11} {:>11} {:>7.2}",
                r.name,
                count,
                ms(median),
                ms(min),
                ms(max),
                count as f64 / median.as_secs_f64() / 1e6,
                or_dash(disk, 1),
                or_dash(wchar, 1),
                ratio
            );
            let samples: Vec<String> = r
                .samples
                .iter()
                .map(|s| format!("{:.3}", ms(s.elapsed)))
                .collect();
            let _ = writeln!(
                csv,
                "{},{},{},{count},{},{:.3},{:.3},{:.3},{},{},{ratio:.4},{}",
                workload.name(),
                r.name,
                options.arity,
                r.samples.len(),
                ms(median),
                ms(min),
                ms(max),
                disk.map_or_else(String::new, |v| format!("{v:.2}")),
                wchar.map_or_else(String::new, |v| format!("{v:.2}")),
                samples.join(";")
            );
        }
    }

    if let Some(path) = options.csv {
        std::fs::write(&path, csv).expect("writing the CSV");
        println!("\nwrote {path}");
    }
}
