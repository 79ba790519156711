//! Throughput of the multi-lane SHA-256 and Keccak-256 parent hashers, per
//! kernel, against a loop over the single-message `sha2` / `sha3` crates.
//!
//! `cargo run --release -p cairn-core --example sha_keccak_lanes [children] [reps]`
//!
//! Hashes `children` (default 2^20) 32-byte children in groups of 2, 4, 8
//! and 16 with every kernel this CPU supports, `reps` (default 7) times
//! each, and prints the median as input GB/s and ns per parent.

use std::hint::black_box;
use std::time::{Duration, Instant};

use cairn_core::hash::lanes::{keccak, sha256};

fn children(n: usize) -> Vec<[u8; 32]> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..n)
        .map(|_| {
            let mut child = [0u8; 32];
            for chunk in child.chunks_exact_mut(8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                chunk.copy_from_slice(&x.to_le_bytes());
            }
            child
        })
        .collect()
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn time(reps: usize, mut run: impl FnMut()) -> Duration {
    run(); // warm up (page faults, caches, AVX-512 frequency licence)
    median(
        (0..reps)
            .map(|_| {
                let start = Instant::now();
                run();
                start.elapsed()
            })
            .collect(),
    )
}

fn report(
    hash: &str,
    group: usize,
    kernel: &str,
    bytes: usize,
    parents: usize,
    t: Duration,
    base: Duration,
) {
    println!(
        "{hash:<9} {group:>5} {kernel:<16} {:>8.3} {:>10.1} {:>8.2}x",
        bytes as f64 / t.as_secs_f64() / 1e9,
        t.as_nanos() as f64 / parents as f64,
        base.as_secs_f64() / t.as_secs_f64(),
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .map_or(1 << 20, |a| a.parse().expect("children"));
    let reps: usize = args.next().map_or(7, |a| a.parse().expect("reps"));
    let input = children(n);
    println!(
        "{n} children, median of {reps}; hash_groups picks sha256: {}, keccak256: {}",
        sha256::kernel_name(),
        keccak::kernel_name()
    );
    println!(
        "{:<9} {:>5} {:<16} {:>8} {:>10} {:>9}",
        "hash", "group", "kernel", "GB/s", "ns/parent", "vs crate"
    );
    for group in [2, 4, 8, 16] {
        let parents = n / group;
        let kids = &input[..parents * group];
        let bytes = kids.len() * 32;
        let mut out = vec![[0u8; 32]; parents];

        let mut base = Duration::ZERO;
        for kernel in sha256::Kernel::supported() {
            let t = time(reps, || {
                sha256::hash_groups_with(kernel, black_box(kids), group, &mut out);
                black_box(&out);
            });
            if kernel == sha256::Kernel::Sha2 {
                base = t;
            }
            report("sha256", group, kernel.name(), bytes, parents, t, base);
        }

        let mut base = Duration::ZERO;
        for kernel in keccak::Kernel::supported() {
            let t = time(reps, || {
                keccak::hash_groups_with(kernel, black_box(kids), group, &mut out);
                black_box(&out);
            });
            if kernel == keccak::Kernel::Sha3 {
                base = t;
            }
            report("keccak256", group, kernel.name(), bytes, parents, t, base);
        }
    }
}
