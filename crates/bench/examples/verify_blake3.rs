//! The single-group BLAKE3 path of proof verification, against the `blake3`
//! crate and rotortree, interleaved (the order alternates every round),
//! reporting medians.
//!
//! 1. ns per hash of one group of 2, 4, 8, 16 children with every
//!    single-group kernel this CPU supports and with `blake3::hash` (through
//!    rotortree's `Blake3Hasher::hash_children`, which is exactly that), as a
//!    dependency chain (each hash's output is the next one's first child:
//!    what a verifier does, so latency, not throughput).
//! 2. Membership-proof verification, N = 4, 2^20 leaves: cairn against
//!    rotortree 0.20, the same workload as the `peers` binary.
//!
//! Run: `cargo run --release -p cairn-bench --example verify_blake3 -- [ROUNDS]`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use cairn_bench::{config, leaves, median, rotor};
use cairn_core::hash::lanes::blake3::{SingleKernel, hash_one_with, single_kernel_name};
use cairn_core::{HashKind, LeanImt};
use rotortree::{Blake3Hasher, Hasher as _};

/// Times each of `runs` once per round, rotating which goes first, and
/// returns their medians.
fn interleave(rounds: usize, runs: &mut [&mut dyn FnMut()]) -> Vec<Duration> {
    let mut times = vec![Vec::new(); runs.len()];
    for round in 0..rounds {
        for k in 0..runs.len() {
            let which = (round + k) % runs.len();
            let started = Instant::now();
            runs[which]();
            times[which].push(started.elapsed());
        }
    }
    times.iter_mut().map(|t| median(t)).collect()
}

/// `count` chained hashes of a group of `group` children with `hash`.
fn chain(group: usize, count: usize, hash: &dyn Fn(&[[u8; 32]]) -> [u8; 32]) -> [u8; 32] {
    let mut children: Vec<[u8; 32]> = (0..group).map(|i| [i as u8 + 1; 32]).collect();
    for _ in 0..count {
        children[0] = hash(black_box(&children));
    }
    children[0]
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .map(|arg| arg.parse().expect("ROUNDS is a number"))
        .unwrap_or(11);
    println!(
        "single-group kernel routed to by HashKind::hash_children: {}; medians of {rounds} interleaved rounds",
        single_kernel_name()
    );

    println!("\n## ns per chained hash of one group");
    let kernels = SingleKernel::supported();
    print!("{:>9} {:>9}", "children", "blake3");
    for kernel in kernels {
        print!(" {:>9}", kernel.name());
    }
    println!(" {:>14}", "blake3/fastest");
    const COUNT: usize = 200_000;
    for group in [2, 4, 8, 16] {
        // rotortree's BLAKE3 `hash_children` is `blake3::hash` of the
        // concatenation (this crate does not depend on `blake3` itself).
        let reference = |c: &[[u8; 32]]| Blake3Hasher.hash_children(c);
        let want = chain(group, 1000, &reference);
        let mut runs: Vec<Box<dyn FnMut()>> = Vec::new();
        runs.push(Box::new(move || {
            black_box(chain(group, COUNT, &reference));
        }));
        for &kernel in kernels {
            let ours = move |c: &[[u8; 32]]| hash_one_with(kernel, c);
            assert_eq!(chain(group, 1000, &ours), want, "{}", kernel.name());
            runs.push(Box::new(move || {
                black_box(chain(group, COUNT, &ours));
            }));
        }
        let mut refs: Vec<&mut dyn FnMut()> = runs.iter_mut().map(|r| &mut **r as _).collect();
        let times = interleave(rounds, &mut refs);
        let ns = |d: Duration| d.as_secs_f64() * 1e9 / COUNT as f64;
        print!("{:>9} {:>9.1}", group, ns(times[0]));
        for time in &times[1..] {
            print!(" {:>9.1}", ns(*time));
        }
        let fastest = times[1..].iter().min().copied().unwrap_or(times[0]);
        println!(" {:>13.2}x", times[0].as_secs_f64() / fastest.as_secs_f64());
    }

    println!("\n## membership proof verification, N = 4, 2^20 leaves");
    let all = leaves(1 << 20);
    let mut tree = LeanImt::from_leaves(config(4, HashKind::Blake3), &all).expect("valid");
    let head = tree.head();
    let view = tree.view(head.size).expect("committed");
    let rotor_tree = rotor::tree::<4>(&all);
    let snapshot = rotor_tree.snapshot();
    let indices: Vec<u64> = (0..1000u64)
        .map(|i| (i * 2_654_435_761) % all.len() as u64)
        .collect();
    let cairn_proofs: Vec<_> = indices
        .iter()
        .map(|&i| view.prove(i).expect("in range"))
        .collect();
    let rotor_proofs: Vec<_> = indices
        .iter()
        .map(|&i| snapshot.generate_proof(i).expect("in range"))
        .collect();
    let arity = view.config().arity;
    const VERIFIES: usize = 100_000;
    let mut cairn = || {
        for proof in cairn_proofs.iter().cycle().take(VERIFIES) {
            proof.verify(arity, HashKind::Blake3, &head).expect("valid");
        }
    };
    let mut rotortree = || {
        for proof in rotor_proofs.iter().cycle().take(VERIFIES) {
            assert!(proof.verify(&Blake3Hasher).expect("well-formed"));
        }
    };
    let times = interleave(rounds, &mut [&mut cairn, &mut rotortree]);
    let ns = |d: Duration| d.as_secs_f64() * 1e9 / VERIFIES as f64;
    println!(
        "verify: cairn {:.0} ns, rotortree {:.0} ns, speed-up {:.2}x",
        ns(times[0]),
        ns(times[1]),
        times[1].as_secs_f64() / times[0].as_secs_f64()
    );
}
