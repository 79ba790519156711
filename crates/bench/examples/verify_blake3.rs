//! The single-group BLAKE3 path of proof verification, against the `blake3`
//! crate and rotortree, interleaved (the order rotates every round),
//! reporting medians of the runs that were not preempted (see
//! [`interleave`]).
//!
//! 1. ns per hash of one group of 2..=16 children with every single-group
//!    kernel this CPU supports and with `blake3::hash` (through rotortree's
//!    `Blake3Hasher::hash_children`, which is exactly that), as a
//!    dependency chain (each hash's output is the next one's first child:
//!    what a verifier does, so latency, not throughput). `hash_one` (and so
//!    `HashKind::hash_children`) uses its kernel for the sizes where this
//!    table shows it faster.
//! 2. ns per path of 10 groups (a membership proof's hashing at N = 4 and
//!    2^20 leaves, random positions) with every path kernel and with
//!    `blake3::hash` one group after another; also N = 8 and 16.
//! 3. Membership-proof verification, N = 4, 2^20 leaves: cairn against
//!    rotortree 0.20, the same workload as the `peers` binary, and cairn's
//!    path kernel alone on the same proofs.
//!
//! Run: `cargo run --release -p cairn-bench --example verify_blake3 -- [ROUNDS]`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use cairn_bench::{config, leaves, median, rotor};
use cairn_core::hash::lanes::blake3::{
    PathGroup, SingleKernel, hash_one_with, hash_path, hash_path_with, single_kernel_name,
};
use cairn_core::shape::{Path, PathStep};
use cairn_core::{HashKind, LeanImt};
use rotortree::{Blake3Hasher, Hasher as _};

/// How many times this thread has been put on a CPU (Linux: the third
/// field of `/proc/thread-self/schedstat`), or `None` where that is not
/// available.
fn switches() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    stat.split_whitespace().nth(2)?.parse().ok()
}

/// Times each of `runs` once per round, rotating which goes first, and
/// returns their median wall times. On this shared 2-core machine other
/// jobs preempt the benchmark for whole time slices, so a run during which
/// the thread was switched out is left out (unless every run was).
fn interleave(rounds: usize, runs: &mut [&mut dyn FnMut()]) -> Vec<Duration> {
    let mut clean = vec![Vec::new(); runs.len()];
    let mut all = vec![Vec::new(); runs.len()];
    for round in 0..rounds {
        for k in 0..runs.len() {
            let which = (round + k) % runs.len();
            let (before, started) = (switches(), Instant::now());
            runs[which]();
            let elapsed = started.elapsed();
            if before.is_some() && before == switches() {
                clean[which].push(elapsed);
            }
            all[which].push(elapsed);
        }
    }
    clean
        .iter_mut()
        .zip(&mut all)
        .map(|(clean, all)| {
            if clean.is_empty() {
                median(all)
            } else {
                median(clean)
            }
        })
        .collect()
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
        .unwrap_or(101);
    println!(
        "single-group kernel: {}; medians of {rounds} interleaved rounds{}",
        single_kernel_name(),
        if switches().is_some() {
            ", runs preempted left out"
        } else {
            ""
        }
    );

    println!("\n## ns per chained hash of one group");
    let kernels = SingleKernel::supported();
    print!("{:>9} {:>9}", "children", "blake3");
    for kernel in kernels {
        print!(" {:>9}", kernel.name());
    }
    println!(" {:>14}", "blake3/fastest");
    const COUNT: usize = 20_000;
    for group in 2..=16 {
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

    println!("\n## ns per path of 10 groups, random positions");
    print!("{:>9} {:>9}", "arity", "blake3");
    for kernel in kernels {
        print!(" {:>9}", kernel.name());
    }
    println!(" {:>14}", "blake3/fastest");
    const PATHS: usize = 256;
    const PATH_ROUNDS: usize = 8;
    for arity in [4u8, 8, 16] {
        let mut state = 0x5eed_u64 + u64::from(arity);
        let paths: Vec<(Vec<PathGroup>, Vec<[u8; 32]>)> = (0..PATHS)
            .map(|p| {
                let path: Vec<PathGroup> = (0..10)
                    .map(|_| {
                        state = state
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        PathGroup {
                            width: arity,
                            position: ((state >> 33) % u64::from(arity)) as u8,
                        }
                    })
                    .collect();
                (
                    path,
                    leaves(10 * (usize::from(arity) - 1) + p % 3)[p % 3..].to_vec(),
                )
            })
            .collect();
        let fold = |path: &[PathGroup], siblings: &[[u8; 32]]| {
            let mut node = [1u8; 32];
            let mut rest = siblings;
            for group in path {
                let (width, position) = (usize::from(group.width), usize::from(group.position));
                let (level, tail) = rest.split_at(width - 1);
                rest = tail;
                let mut members = [[0u8; 32]; 16];
                members[..position].copy_from_slice(&level[..position]);
                members[position] = node;
                members[position + 1..width].copy_from_slice(&level[position..]);
                node = Blake3Hasher.hash_children(&members[..width]);
            }
            node
        };
        for (path, siblings) in &paths {
            for &kernel in kernels {
                assert_eq!(
                    hash_path_with(kernel, &[1u8; 32], path, siblings),
                    fold(path, siblings)
                );
            }
        }
        let mut runs: Vec<Box<dyn FnMut()>> = Vec::new();
        let paths = &paths;
        runs.push(Box::new(move || {
            for _ in 0..PATH_ROUNDS {
                for (path, siblings) in paths {
                    black_box(fold(black_box(path), siblings));
                }
            }
        }));
        for &kernel in kernels {
            runs.push(Box::new(move || {
                for _ in 0..PATH_ROUNDS {
                    for (path, siblings) in paths {
                        black_box(hash_path_with(
                            kernel,
                            &[1u8; 32],
                            black_box(path),
                            siblings,
                        ));
                    }
                }
            }));
        }
        let mut refs: Vec<&mut dyn FnMut()> = runs.iter_mut().map(|r| &mut **r as _).collect();
        let times = interleave(rounds, &mut refs);
        let ns = |d: Duration| d.as_secs_f64() * 1e9 / (PATHS * PATH_ROUNDS) as f64;
        print!("{:>9} {:>9.0}", arity, ns(times[0]));
        for time in &times[1..] {
            print!(" {:>9.0}", ns(*time));
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
    const VERIFIES: usize = 2_000;
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
    // The path kernel alone on the same proofs, shapes derived beforehand:
    // what `verify` adds is its checks and the shape walk.
    let shapes: Vec<Vec<PathGroup>> = cairn_proofs
        .iter()
        .map(|proof| {
            Path::new(proof.index(), proof.size(), arity)
                .filter(PathStep::hashes)
                .map(|step| PathGroup {
                    width: step.group_len as u8,
                    position: step.position as u8,
                })
                .collect()
        })
        .collect();
    let mut kernel = || {
        for (proof, shape) in cairn_proofs.iter().zip(&shapes).cycle().take(VERIFIES) {
            let root = hash_path(&proof.leaf(), shape, proof.siblings());
            assert_eq!(Some(root), head.root);
        }
    };
    let times = interleave(rounds, &mut [&mut cairn, &mut rotortree, &mut kernel]);
    let ns = |d: Duration| d.as_secs_f64() * 1e9 / VERIFIES as f64;
    println!(
        "verify: cairn {:.0} ns, rotortree {:.0} ns, speed-up {:.2}x; cairn's path kernel alone {:.0} ns",
        ns(times[0]),
        ns(times[1]),
        times[1].as_secs_f64() / times[0].as_secs_f64(),
        ns(times[2])
    );
}
