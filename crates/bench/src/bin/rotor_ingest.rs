//! rotortree's side of a whole-process ingest comparison: what `cairn
//! ingest DIR FILE` does, done with rotortree 0.20 (its `storage` feature,
//! BLAKE3, a 10 ms background flush): read a file of raw 32-byte leaves in
//! blocks, `insert_many` each block and wait until it is durable, then
//! close. rotortree checks no duplicates; cairn's ingest refuses them.
//!
//! Run: `rotor_ingest DIR FILE [--arity N] [--block LEAVES] [--checkpoint]`
//! (DIR must not exist; defaults N = 4 and blocks of 1,048,576 leaves,
//! cairn's ingest default). With `--checkpoint` it checkpoints before it
//! closes, as `cairn ingest` leaves its database (so a reopen reads the
//! checkpoint instead of replaying the log). `scripts/ingest_vs_rotortree.sh` runs it beside `cairn
//! ingest`, interleaved.

use std::io::Read;
use std::path::PathBuf;
use std::time::Instant;

use cairn_bench::durable::{DurableStore, RotorStore};
use cairn_core::Hash;

const USAGE: &str = "usage: rotor_ingest DIR FILE [--arity N] [--block LEAVES] [--checkpoint]";

fn main() {
    let mut args = std::env::args().skip(1);
    let mut positional: Vec<String> = Vec::new();
    let (mut arity, mut block, mut checkpoint) = (4usize, 1usize << 20, false);
    while let Some(arg) = args.next() {
        let mut number = |name: &str| -> usize {
            args.next()
                .and_then(|v| v.parse().ok())
                .filter(|&v: &usize| v > 0)
                .unwrap_or_else(|| panic!("{name} takes a positive integer\n{USAGE}"))
        };
        match arg.as_str() {
            "--arity" => arity = number("--arity"),
            "--block" => block = number("--block"),
            "--checkpoint" => checkpoint = true,
            other if other.starts_with("--") => panic!("unknown option {other}\n{USAGE}"),
            _ => positional.push(arg),
        }
    }
    let [dir, file] = <[String; 2]>::try_from(positional).unwrap_or_else(|_| panic!("{USAGE}"));
    let dir = PathBuf::from(dir);
    assert!(
        !dir.exists(),
        "{} exists: rotor_ingest creates it",
        dir.display()
    );
    std::fs::create_dir_all(&dir).expect("create the directory");

    let started = Instant::now();
    let mut input = std::fs::File::open(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
    let mut store = RotorStore::open(&dir, arity, None);
    let mut bytes = vec![0u8; block * 32];
    let mut total = 0u64;
    loop {
        let read = read_full(&mut input, &mut bytes);
        assert_eq!(read % 32, 0, "{file}: not a whole number of 32-byte leaves");
        if read == 0 {
            break;
        }
        let leaves: Vec<Hash> = bytes[..read]
            .chunks_exact(32)
            .map(|c| c.try_into().expect("32 bytes"))
            .collect();
        let token = store.append_batch(&leaves);
        store.wait(token);
        total += leaves.len() as u64;
    }
    let root = if total > 0 { Some(store.root()) } else { None };
    if checkpoint {
        store.checkpoint();
    }
    store.close();
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "rotortree: {total} leaves durable in {seconds:.3} s ({:.0} leaves/s), root {}",
        total as f64 / seconds,
        root.map_or_else(|| "none".to_owned(), |r| cairn_core::hex::to_hex(&r))
    );
}

/// Fills `buffer` from `input` as far as it goes; the bytes read.
fn read_full(input: &mut impl Read, buffer: &mut [u8]) -> usize {
    let mut filled = 0;
    while filled < buffer.len() {
        match input.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => panic!("reading leaves: {e}"),
        }
    }
    filled
}
