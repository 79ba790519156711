//! The two ways a tree gets its leaves, side by side in one process:
//! `LeanImt::from_leaves` (each task copies a parent chunk's leaves and
//! hashes them from the input while it is in cache) against `append_batch`
//! then a commit (copy everything, then hash from the stored leaves).
//! Medians of 15 interleaved rounds. Run:
//! `cargo run --release -p cairn-bench --example build_paths`.

use cairn_bench::{config, leaves, median};
use cairn_core::{HashKind, LeanImt};
use std::time::Instant;
fn main() {
    let input = leaves(1 << 20);
    for arity in [2, 4, 8, 16] {
        for count in [100_000usize, 1 << 20] {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for round in 0..15 {
                let fused = || {
                    let t = Instant::now();
                    let mut tree =
                        LeanImt::from_leaves(config(arity, HashKind::Blake3), &input[..count])
                            .unwrap();
                    std::hint::black_box(tree.root());
                    t.elapsed()
                };
                let split = || {
                    let t = Instant::now();
                    let mut tree = LeanImt::new(config(arity, HashKind::Blake3));
                    tree.append_batch(&input[..count]).unwrap();
                    std::hint::black_box(tree.root());
                    t.elapsed()
                };
                if round % 2 == 0 {
                    a.push(fused());
                    b.push(split());
                } else {
                    b.push(split());
                    a.push(fused());
                }
            }
            let (a, b) = (median(&mut a), median(&mut b));
            println!(
                "N={arity} {count}: fused {:.3} ms, copy+commit {:.3} ms, ratio {:.2}",
                a.as_secs_f64() * 1e3,
                b.as_secs_f64() * 1e3,
                a.as_secs_f64() / b.as_secs_f64()
            );
        }
    }
}
