//! Rollback figures, measured on `Db` (BLAKE3, N = 4, nullifier set on,
//! explicit finality, durable):
//!
//! - `truncate`: for each size in `--sizes`, ingest that many leaves in 1M
//!   batches, checkpoint, then `--rounds` times: append `--tail` leaves,
//!   wait, and time `truncate` back by `--tail` (the leaves are durable, so
//!   the rollback publishes a checkpoint). Beside it, the median of one
//!   32-byte write + `fdatasync` in the same directory, the unit a
//!   rollback's publication is made of.
//! - `roots`: `size_of_root` of tagged roots and of recent untagged roots
//!   (after the first lookup computed them), each call timed alone.
//!
//! Run: `cargo run --release -p cairn-bench --bin db_rollback -- [--sizes
//! 1000000,10000000] [--tail 10000] [--rounds 9] [--dir DIR]`.

use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use cairn_bench::median;
use cairn_core::{Arity, Hash, HashKind, TreeConfig};
use cairn_db::{BlockTag, Db, DbConfig};

const WAIT: Duration = Duration::from_secs(600);

struct Options {
    sizes: Vec<u64>,
    tail: u64,
    rounds: usize,
    dir: PathBuf,
}

const USAGE: &str = "usage: db_rollback [--sizes N,M,..] [--tail T] [--rounds R] [--dir DIR]";

fn options() -> Options {
    let mut o = Options {
        sizes: vec![1_000_000, 10_000_000],
        tail: 10_000,
        rounds: 9,
        dir: std::env::temp_dir(),
    };
    let mut args = std::env::args().skip(1);
    let number = |v: &str| -> u64 {
        v.replace('_', "").parse().unwrap_or_else(|_| {
            eprintln!("{USAGE}");
            std::process::exit(2)
        })
    };
    while let Some(arg) = args.next() {
        let value = args.next().unwrap_or_else(|| {
            eprintln!("{USAGE}");
            std::process::exit(2)
        });
        match arg.as_str() {
            "--sizes" => o.sizes = value.split(',').map(number).collect(),
            "--tail" => o.tail = number(&value),
            "--rounds" => o.rounds = number(&value) as usize,
            "--dir" => o.dir = PathBuf::from(value),
            _ => {
                eprintln!("{USAGE}");
                std::process::exit(2)
            }
        }
    }
    o
}

fn value(i: u64) -> Hash {
    cairn_testkit::leaf(0x0b10_c4ed, i)
}

fn config() -> DbConfig {
    let mut config = DbConfig::new(TreeConfig::new(
        Arity::new(4).expect("arity"),
        HashKind::Blake3,
    ));
    config.explicit_finality = true;
    // The benchmark decides when checkpoints happen.
    config.store.checkpoint = Default::default();
    config
}

fn fsync_unit(dir: &std::path::Path) -> Duration {
    let path = dir.join("fsync-probe");
    let mut file = std::fs::File::create(&path).expect("probe file");
    let mut times = Vec::new();
    for _ in 0..21 {
        let started = Instant::now();
        file.write_all(&[7u8; 32]).expect("write");
        file.sync_data().expect("fdatasync");
        times.push(started.elapsed());
    }
    drop(file);
    let _ = std::fs::remove_file(path);
    median(&mut times)
}

fn truncate(o: &Options) {
    println!(
        "truncate the last {} leaves (durable; BLAKE3, N = 4, set on, explicit finality), median of {} rounds",
        o.tail, o.rounds
    );
    for &size in &o.sizes {
        let dir = tempfile::tempdir_in(&o.dir).expect("a temporary directory");
        let db = Db::create(dir.path(), config()).expect("create");
        let mut next = 0u64;
        while next < size {
            let count = (size - next).min(1 << 20);
            let batch: Vec<Hash> = (next..next + count).map(value).collect();
            db.append_batch(&batch)
                .expect("append")
                .token
                .wait(WAIT)
                .expect("durable");
            next += count;
        }
        db.checkpoint().expect("checkpoint");
        let mut times = Vec::new();
        for round in 0..o.rounds as u64 {
            let tail: Vec<Hash> = (0..o.tail)
                .map(|i| value(size + 1_000_000_000 + round * o.tail + i))
                .collect();
            db.append_batch(&tail)
                .expect("append")
                .token
                .wait(WAIT)
                .expect("durable");
            let started = Instant::now();
            db.truncate(size).expect("truncate");
            times.push(started.elapsed());
        }
        let unit = fsync_unit(dir.path());
        let took = median(&mut times);
        println!(
            "  {size:>11} leaves: truncate {:>8.3} ms  (one 32-byte write + fdatasync here: {:.3} ms; ratio {:.1})",
            took.as_secs_f64() * 1e3,
            unit.as_secs_f64() * 1e3,
            took.as_secs_f64() / unit.as_secs_f64()
        );
        db.close().expect("close");
    }
}

fn roots(o: &Options) {
    let dir = tempfile::tempdir_in(&o.dir).expect("a temporary directory");
    let db = Db::create(dir.path(), config()).expect("create");
    let mut next = 0u64;
    for block in 0..2000u64 {
        let leaves: Vec<Hash> = (next..next + 8).map(value).collect();
        next += 8;
        db.append_tagged(&leaves, BlockTag::number(block))
            .expect("append");
        // Untagged appends between blocks: their roots are in the window.
        db.append(value(next)).expect("append");
        next += 1;
    }
    db.flush().expect("flush");
    let tagged: Vec<Hash> = db
        .heads(0, usize::MAX)
        .iter()
        .filter_map(|h| h.root)
        .collect();
    let snapshot = db.snapshot();
    let recent: Vec<Hash> = (next - 4000..next)
        .filter(|s| s % 9 == 0)
        .filter_map(|s| snapshot.view(s).ok().and_then(|v| v.root()))
        .collect();
    let started = Instant::now();
    assert!(
        db.size_of_root(&recent[0]).is_some(),
        "a recent root resolves"
    );
    let first = started.elapsed();
    let time = |roots: &[Hash]| {
        let mut times = Vec::with_capacity(roots.len());
        for root in roots {
            let started = Instant::now();
            let found = db.size_of_root(root);
            times.push(started.elapsed());
            assert!(found.is_some());
        }
        median(&mut times)
    };
    let tagged_median = time(&tagged);
    let recent_median = time(&recent);
    let absent: Vec<Hash> = (0..2000).map(|i| value(u64::MAX - i)).collect();
    let mut times = Vec::new();
    for root in &absent {
        let started = Instant::now();
        assert!(db.size_of_root(root).is_none());
        times.push(started.elapsed());
    }
    println!(
        "size_of_root, 2,000 tagged heads and a window of 4,096 appends (each call timed alone, ~20 ns of it Instant):"
    );
    println!(
        "  tagged root: {} ns median; recent root: {} ns median; absent root: {} ns median; the first lookup computing the window's roots: {:.2} ms",
        tagged_median.as_nanos(),
        recent_median.as_nanos(),
        median(&mut times).as_nanos(),
        first.as_secs_f64() * 1e3
    );
}

fn main() {
    let o = options();
    truncate(&o);
    roots(&o);
}
