//! Where a batch build spends its time: the copy into level 0 versus the
//! commit that hashes the upper levels. Run:
//! `cargo run --release -p cairn-bench --example profile_build -- [ARITY] [LEAVES]`.

use std::time::Instant;

use cairn_bench::{config, leaves};
use cairn_core::{HashKind, LeanImt};

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
