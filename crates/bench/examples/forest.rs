//! Databases of several trees, side by side in one run: the open of 1,000
//! trees (time, resident memory and disk per empty tree), blocks across
//! three trees against the same leaves appended to one tree as tagged
//! blocks (throughput, and fsyncs counted on the simulated file system),
//! and a 64-block rollback across three trees at three tree sizes.
//! Run: `cargo run --release -p cairn-bench --example forest -- [--dir DIR]
//! [--part open|blocks|reorg]` (every part without `--part`).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_bench::{config, leaves};
use cairn_core::{Hash, HashKind, TreeKind};
use cairn_db::{BlockId, BlockTag, Database, DbConfig, Forest};
use cairn_store::Fs;
use cairn_testkit::sim::SimFs;

const TREES: usize = 1000;
const BLOCKS: usize = 2000;
const PER_TREE: usize = 16;
const ROUNDS: usize = 3;

fn db_config(kind: TreeKind) -> DbConfig {
    let mut config = DbConfig::new(config(2, HashKind::Blake3).with_kind(kind));
    config.explicit_finality = true;
    config
}

fn block(number: usize) -> BlockId {
    BlockId {
        number: number as u64,
        hash: [(number % 251) as u8; 32],
    }
}

/// Resident set size of this process, in bytes.
fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("statm");
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .expect("rss")
        .parse()
        .expect("rss");
    pages * 4096
}

/// Allocated bytes under `path` (`du`'s count).
fn disk_bytes(path: &Path) -> u64 {
    let output = std::process::Command::new("du")
        .args(["-s", "-B1"])
        .arg(path)
        .output()
        .expect("du");
    String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .next()
        .expect("du output")
        .parse()
        .expect("du bytes")
}

fn open_many(dir: &Path) {
    let path = dir.join("many");
    let forest = Forest::create(&path).expect("create");
    let created = Instant::now();
    for i in 0..TREES {
        forest
            .add_tree(&format!("group-{i}"), db_config(TreeKind::Lean))
            .expect("add");
    }
    let add_time = created.elapsed();
    forest.close().expect("close");
    let disk = disk_bytes(&path);
    let mut opens = Vec::new();
    let mut rss = Vec::new();
    for _ in 0..ROUNDS {
        let before = rss_bytes();
        let started = Instant::now();
        let forest = Forest::open(&path).expect("open");
        opens.push(started.elapsed());
        rss.push(rss_bytes().saturating_sub(before));
        forest.close().expect("close");
    }
    opens.sort();
    rss.sort();
    println!(
        "1,000 empty trees: add {:.2} s; open median {:.3} s (min {:.3}, max {:.3}); resident memory per open tree {:.1} KiB (median of {ROUNDS}); disk per empty tree {:.1} KiB",
        add_time.as_secs_f64(),
        opens[ROUNDS / 2].as_secs_f64(),
        opens[0].as_secs_f64(),
        opens[ROUNDS - 1].as_secs_f64(),
        rss[ROUNDS / 2] as f64 / TREES as f64 / 1024.0,
        disk as f64 / TREES as f64 / 1024.0,
    );
}

/// BLOCKS blocks of PER_TREE values in each of three trees through the
/// forest; returns the time.
fn forest_blocks(fs: Arc<dyn Fs>, path: &Path, data: &[Hash]) -> Duration {
    let forest = Forest::create_in(fs, path).expect("create");
    for name in ["a", "b", "c"] {
        forest
            .add_tree(name, db_config(TreeKind::Lean))
            .expect("add");
    }
    let started = Instant::now();
    for b in 0..BLOCKS {
        let at = b * 3 * PER_TREE;
        let part = |k: usize| &data[at + k * PER_TREE..at + (k + 1) * PER_TREE];
        forest
            .commit_block(
                block(b + 1),
                &[("a", part(0)), ("b", part(1)), ("c", part(2))],
            )
            .expect("block");
    }
    forest.apply().expect("apply");
    let elapsed = started.elapsed();
    forest.close().expect("close");
    elapsed
}

/// The same leaves in one tree of the single-tree layout, one tagged
/// block of 3 * PER_TREE values at a time, each waited durable.
fn one_tree_blocks(fs: Arc<dyn Fs>, path: &Path, data: &[Hash]) -> Duration {
    let mut config = db_config(TreeKind::Lean);
    config.store.flush_interval = None;
    let db = Database::create_in(fs, path, config).expect("create");
    let started = Instant::now();
    for b in 0..BLOCKS {
        let at = b * 3 * PER_TREE;
        db.append_tagged(&data[at..at + 3 * PER_TREE], BlockTag::number(b as u64 + 1))
            .expect("append")
            .wait(&db, Duration::from_secs(60))
            .expect("durable");
    }
    let elapsed = started.elapsed();
    db.close().expect("close");
    elapsed
}

fn blocks(dir: &Path) {
    let data = leaves(BLOCKS * 3 * PER_TREE);
    let mut forest_times = Vec::new();
    let mut one_times = Vec::new();
    for round in 0..ROUNDS {
        // Interleaved, so drift in the machine's load falls on both.
        let path = dir.join(format!("blocks-forest-{round}"));
        forest_times.push(forest_blocks(Arc::new(cairn_store::StdFs), &path, &data));
        let path = dir.join(format!("blocks-one-{round}"));
        one_times.push(one_tree_blocks(Arc::new(cairn_store::StdFs), &path, &data));
    }
    forest_times.sort();
    one_times.sort();
    let rate = |t: Duration| (BLOCKS * 3 * PER_TREE) as f64 / t.as_secs_f64();
    let (f, o) = (forest_times[ROUNDS / 2], one_times[ROUNDS / 2]);
    println!(
        "{BLOCKS} blocks of 3 x {PER_TREE} values: 3 trees {:.0} values/s ({:.0}..{:.0}), one tree {:.0} values/s ({:.0}..{:.0}); 3 trees / one tree time = {:.2}",
        rate(f),
        rate(forest_times[ROUNDS - 1]),
        rate(forest_times[0]),
        rate(o),
        rate(one_times[ROUNDS - 1]),
        rate(one_times[0]),
        f.as_secs_f64() / o.as_secs_f64(),
    );
    // The syncs each run makes, counted on the simulated file system.
    let sim = SimFs::new();
    let start = sim.counters();
    forest_blocks(Arc::new(sim.clone()), Path::new("/f"), &data);
    let forest_syncs = sim.counters().sync_data_calls - start.sync_data_calls;
    let sim = SimFs::new();
    one_tree_blocks(Arc::new(sim.clone()), Path::new("/o"), &data);
    let one_syncs = sim.counters().sync_data_calls;
    println!(
        "fdatasync calls for those {BLOCKS} blocks (creation, catch-up and close included): 3 trees {forest_syncs} ({:.2} per block), one tree {one_syncs} ({:.2} per block)",
        forest_syncs as f64 / BLOCKS as f64,
        one_syncs as f64 / BLOCKS as f64,
    );
}

/// A 64-block rollback across three trees of `size` leaves each.
fn reorg(fs: Arc<dyn Fs>, path: &Path, size: usize) -> Duration {
    let forest = Forest::create_in(fs, path).expect("create");
    for name in ["a", "b", "c"] {
        forest
            .add_tree(name, db_config(TreeKind::Lean))
            .expect("add");
    }
    let data = leaves(3 * size);
    let base = size - 64 * 4;
    forest
        .commit_block(
            block(1),
            &[
                ("a", &data[..base]),
                ("b", &data[size..size + base]),
                ("c", &data[2 * size..2 * size + base]),
            ],
        )
        .expect("base");
    forest.checkpoint().expect("checkpoint");
    for b in 0..64 {
        let at = base + b * 4;
        let part = |k: usize| &data[k * size + at..k * size + at + 4];
        forest
            .commit_block(
                block(100 + b),
                &[("a", part(0)), ("b", part(1)), ("c", part(2))],
            )
            .expect("block");
    }
    forest.apply().expect("apply");
    let started = Instant::now();
    forest.truncate_to_block(99).expect("rollback");
    let elapsed = started.elapsed();
    forest.close().expect("close");
    elapsed
}

/// The tree sizes of the rollback part: `CAIRN_REORG_SIZES=10000,100000`
/// picks some (10,000, 100,000 and 1,000,000 leaves a tree by default).
fn sizes() -> Vec<usize> {
    match std::env::var("CAIRN_REORG_SIZES") {
        Ok(list) => list
            .split(',')
            .map(|s| {
                s.trim()
                    .parse()
                    .expect("CAIRN_REORG_SIZES: sizes separated by commas")
            })
            .collect(),
        Err(_) => vec![10_000, 100_000, 1_000_000],
    }
}

fn reorgs(dir: &Path) {
    for size in sizes() {
        let mut times = Vec::new();
        for round in 0..ROUNDS {
            let path = dir.join(format!("reorg-{size}-{round}"));
            times.push(reorg(Arc::new(cairn_store::StdFs), &path, size));
        }
        times.sort();
        println!(
            "64-block rollback across 3 trees of {size} leaves: median {:.2} ms ({:.2}..{:.2})",
            times[ROUNDS / 2].as_secs_f64() * 1e3,
            times[0].as_secs_f64() * 1e3,
            times[ROUNDS - 1].as_secs_f64() * 1e3,
        );
    }
    let sim = SimFs::new();
    let counted = reorg_counted(Arc::new(sim.clone()), &sim);
    println!("fdatasync + directory fsync calls of that rollback (10,000 leaves): {counted}");
}

/// The syncs of the rollback alone, on the simulated file system.
fn reorg_counted(fs: Arc<dyn Fs>, sim: &SimFs) -> String {
    let size = 10_000;
    let forest = Forest::create_in(fs, Path::new("/r")).expect("create");
    for name in ["a", "b", "c"] {
        forest
            .add_tree(name, db_config(TreeKind::Lean))
            .expect("add");
    }
    let data = leaves(3 * size);
    let base = size - 256;
    forest
        .commit_block(
            block(1),
            &[
                ("a", &data[..base]),
                ("b", &data[size..size + base]),
                ("c", &data[2 * size..2 * size + base]),
            ],
        )
        .expect("base");
    for b in 0..64 {
        let at = base + b * 4;
        let part = |k: usize| &data[k * size + at..k * size + at + 4];
        forest
            .commit_block(
                block(100 + b),
                &[("a", part(0)), ("b", part(1)), ("c", part(2))],
            )
            .expect("block");
    }
    forest.apply().expect("apply");
    let before = sim.counters();
    forest.truncate_to_block(1).expect("rollback");
    let after = sim.counters();
    forest.close().expect("close");
    format!(
        "{} fdatasync, {} directory fsync",
        after.sync_data_calls - before.sync_data_calls,
        after.sync_dir_calls - before.sync_dir_calls
    )
}

fn main() {
    let mut dir = std::env::temp_dir();
    let mut part = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--dir" => dir = args.next().expect("--dir DIR").into(),
            "--part" => part = Some(args.next().expect("--part open|blocks|reorg")),
            other => panic!("unknown argument {other}"),
        }
    }
    let run = |name: &str| part.as_deref().is_none_or(|p| p == name);
    if let Some(p) = part.as_deref()
        && !["open", "blocks", "reorg"].contains(&p)
    {
        panic!("unknown part {p}: open, blocks or reorg");
    }
    let temp = tempfile::tempdir_in(&dir).expect("temporary directory");
    if run("open") {
        open_many(temp.path());
    }
    if run("blocks") {
        blocks(temp.path());
    }
    if run("reorg") {
        reorgs(temp.path());
    }
}
