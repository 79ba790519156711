//! Throughput of the multi-lane BLAKE3 kernels against a `blake3::hash` loop:
//! one level's worth of parents (~1M children) for groups of 2, 4, 8 and 16,
//! with every kernel this CPU supports. Prints the median of several runs as
//! GB/s of input (children bytes) and ns per parent. Then small batches (a
//! level's right edge, or the few parents an append dirties), where tails
//! and per-call costs dominate: ns per parent through `hash_groups`.
//!
//! Run: `cargo run --release -p cairn-core --example blake3_lanes [RUNS [CHILDREN]]`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use cairn_core::hash::lanes::blake3::{Kernel, hash_groups, hash_groups_with, kernel_name};

fn children(count: usize) -> Vec<[u8; 32]> {
    // splitmix64, so the input is not all zeros and costs nothing to make.
    let mut state = 0u64;
    (0..count)
        .map(|_| {
            let mut child = [0u8; 32];
            for word in child.chunks_exact_mut(8) {
                state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                word.copy_from_slice(&(z ^ (z >> 31)).to_le_bytes());
            }
            child
        })
        .collect()
}

/// The median of `runs` timings of `f`.
fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    f(); // warm up: page in the output, settle the clock
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let started = Instant::now();
            f();
            started.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .map(|arg| arg.parse().expect("RUNS is a number"))
        .unwrap_or(9);
    let count: usize = std::env::args()
        .nth(2)
        .map(|arg| arg.parse().expect("CHILDREN is a number"))
        .unwrap_or(1 << 20);
    let children = children(count);
    println!(
        "{count} children ({:.1} MiB), median of {runs} runs; hash_groups uses {}",
        (count * 32) as f64 / (1 << 20) as f64,
        kernel_name()
    );
    println!(
        "{:>5} {:>12} {:>9} {:>11} {:>8}",
        "group", "kernel", "GB/s", "ns/parent", "speedup"
    );
    for group in [2, 4, 8, 16] {
        let parents = count / group;
        let input = &children[..parents * group];
        let bytes = (parents * group * 32) as f64;
        let mut reference = vec![[0u8; 32]; parents];
        let baseline = median(runs, || {
            for (parent, members) in reference.iter_mut().zip(input.chunks_exact(group)) {
                *parent = *blake3::hash(black_box(members).as_flattened()).as_bytes();
            }
            black_box(&mut reference);
        });
        let row = |name: &str, time: Duration| {
            println!(
                "{group:>5} {name:>12} {:>9.2} {:>11.1} {:>7.2}x",
                bytes / time.as_secs_f64() / 1e9,
                time.as_nanos() as f64 / parents as f64,
                baseline.as_secs_f64() / time.as_secs_f64()
            );
        };
        row("blake3::hash", baseline);
        for &kernel in Kernel::supported() {
            let mut out = vec![[0u8; 32]; parents];
            let time = median(runs, || {
                hash_groups_with(kernel, black_box(input), group, &mut out);
                black_box(&mut out);
            });
            assert!(out == reference, "{} disagrees with blake3", kernel.name());
            row(kernel.name(), time);
        }
    }

    println!("\nsmall batches, group 4, ns/parent (median of {runs} runs of 4096 calls)");
    println!(
        "{:>7} {:>12} {:>12}",
        "parents",
        "blake3::hash",
        kernel_name()
    );
    let group = 4;
    for parents in [1, 2, 3, 4, 7, 8, 15, 16, 31] {
        let input = &children[..parents * group];
        let calls = 4096;
        let per_parent = |time: Duration| time.as_nanos() as f64 / (calls * parents) as f64;
        let mut out = vec![[0u8; 32]; parents];
        let baseline = median(runs, || {
            for _ in 0..calls {
                for (parent, members) in out.iter_mut().zip(black_box(input).chunks_exact(group)) {
                    *parent = *blake3::hash(members.as_flattened()).as_bytes();
                }
                black_box(&mut out);
            }
        });
        let lanes = median(runs, || {
            for _ in 0..calls {
                hash_groups(black_box(input), group, &mut out);
                black_box(&mut out);
            }
        });
        println!(
            "{parents:>7} {:>12.1} {:>12.1}",
            per_parent(baseline),
            per_parent(lanes)
        );
    }
}
