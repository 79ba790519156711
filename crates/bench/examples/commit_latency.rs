//! Single-leaf commit latency: append one leaf and wait until it is
//! durable (one group commit and its `fdatasync`), again and again; prints
//! the median, 90th and 99th percentiles. A tagged variant (`--tagged`)
//! records a block tag with each leaf (a heads record in the same commit).
//! Run: `cargo run --release -p cairn-bench --example commit_latency --
//! [COMMITS] [--tagged] [--dir DIR]`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_bench::{config, leaves};
use cairn_core::HashKind;
use cairn_store::{BlockTag, StdFs, Store, StoreConfig};

fn main() {
    let mut commits = 2000usize;
    let mut tagged = false;
    let mut dir = std::env::temp_dir();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--tagged" => tagged = true,
            "--dir" => dir = args.next().expect("--dir DIR").into(),
            count => commits = count.parse().expect("COMMITS"),
        }
    }
    let temp = tempfile::tempdir_in(&dir).expect("temporary directory");
    let path = temp.path().join("store");
    let store_config = StoreConfig {
        flush_interval: None,
        checkpoint: Default::default(),
        ..StoreConfig::new(config(4, HashKind::Blake3))
    };
    let store = Store::create(Arc::new(StdFs), &path, store_config).expect("create");
    let data = leaves(commits);
    let mut times: Vec<Duration> = Vec::with_capacity(commits);
    for (i, leaf) in data.iter().enumerate() {
        let started = Instant::now();
        let appended = if tagged {
            store.append_tagged(std::slice::from_ref(leaf), BlockTag::number(i as u64))
        } else {
            store.append(*leaf)
        }
        .expect("append");
        appended
            .token
            .wait(Duration::from_secs(30))
            .expect("durable");
        times.push(started.elapsed());
    }
    store.close().expect("close");
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e6;
    println!(
        "{commits} single-leaf commits{}: median {:.1} us, p90 {:.1} us, p99 {:.1} us",
        if tagged { " (tagged)" } else { "" },
        at(0.5),
        at(0.9),
        at(0.99)
    );
}
