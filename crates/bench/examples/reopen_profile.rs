//! Opens a checkpointed store many times, for profiling `Store::open`.
//! Run: `cargo run --release -p cairn-bench --example reopen_profile --
//! [LEAVES] [OPENS] [--unvouched]`. Each open's close writes the verified
//! record, so the next open reads only what it does not vouch for;
//! `--unvouched` removes the record before every open, which then checks
//! every page against its sum (the first open after the files changed).

use std::sync::Arc;
use std::time::Instant;

use cairn_bench::{config, leaves};
use cairn_core::HashKind;
use cairn_store::{StdFs, Store, StoreConfig};

fn main() {
    let mut args = std::env::args().skip(1);
    let count: usize = args
        .next()
        .map_or(1_000_000, |a| a.parse().expect("LEAVES"));
    let opens: usize = args.next().map_or(200, |a| a.parse().expect("OPENS"));
    let unvouched = match args.next().as_deref() {
        None => false,
        Some("--unvouched") => true,
        Some(other) => panic!("unknown argument {other:?}: want --unvouched"),
    };
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("store");
    let store_config = StoreConfig::new(config(4, HashKind::Blake3));
    let data = leaves(count);
    {
        let store = Store::create(Arc::new(StdFs), &path, store_config.clone()).expect("create");
        for chunk in data.chunks(100_000) {
            store.append_batch(chunk).expect("append");
        }
        store.checkpoint().expect("checkpoint");
        store.close().expect("close");
    }
    let mut times = Vec::with_capacity(opens);
    for _ in 0..opens {
        if unvouched {
            match std::fs::remove_file(path.join("verified")) {
                Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                    panic!("removing the verified record: {error}")
                }
                _ => {}
            }
        }
        let began = Instant::now();
        let store = Store::open(Arc::new(StdFs), &path, store_config.clone()).expect("open");
        let _ = store.head();
        times.push(began.elapsed());
        drop(store);
    }
    times.sort();
    println!(
        "{count} leaves{}: open median {:?}, min {:?}, max {:?}",
        if unvouched {
            ", no verified record"
        } else {
            ""
        },
        times[opens / 2],
        times[0],
        times[opens - 1]
    );
}
