//! Where a batch build spends its time: the copy into level 0 versus the
//! commit that hashes the upper levels. Run:
//! `cargo run --release -p cairn-bench --example profile_build -- [ARITY] [LEAVES]`.

use std::time::Instant;

use cairn_bench::{config, leaves};
use cairn_core::{HashKind, LeanImt, MembershipProof};

fn main() {
    let mut args = std::env::args().skip(1);
    let arity: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(4);
    let count: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1 << 20);
    let input = leaves(count);
    for _ in 0..3 {
        let started = Instant::now();
        let mut plain: Vec<[u8; 32]> = Vec::with_capacity(input.len());
        plain.extend_from_slice(&input);
        let elapsed = started.elapsed();
        std::hint::black_box(&plain);
        println!(
            "plain copy into a fresh Vec: {:.2} ms",
            elapsed.as_secs_f64() * 1e3
        );
    }
    {
        // Proof generation: random leaves (cache and TLB misses on the big
        // lower levels) against one hot leaf (compute alone).
        let tree = LeanImt::from_leaves(config(arity, HashKind::Blake3), &input).expect("valid");
        let size = tree.size();
        let view = tree.view(size).expect("committed");
        let mut proof = MembershipProof::empty(view.config());
        for (label, stride) in [("random leaves", 2_654_435_761u64), ("one hot leaf", 0)] {
            let mut index = 12_345u64;
            let started = Instant::now();
            for _ in 0..200_000 {
                index = (index + stride) % size;
                view.prove_into(index, &mut proof).expect("in range");
                std::hint::black_box(&proof);
            }
            println!(
                "prove_into, {label}: {:.0} ns",
                started.elapsed().as_secs_f64() * 1e9 / 200_000.0
            );
        }
    }
    for round in 0..5 {
        let started = Instant::now();
        let mut tree = LeanImt::new(config(arity, HashKind::Blake3));
        tree.append_batch(&input).expect("valid");
        let appended = started.elapsed();
        tree.commit();
        let total = started.elapsed();
        println!(
            "round {round}: append {:.2} ms, commit {:.2} ms, total {:.2} ms",
            appended.as_secs_f64() * 1e3,
            (total - appended).as_secs_f64() * 1e3,
            total.as_secs_f64() * 1e3
        );
    }
}
