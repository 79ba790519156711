//! Poseidon batch builds (the circuit hash): 2^16 leaves at N = 2 and 2^12
//! at N = 16, medians of 5. Run:
//! `cargo run --release -p cairn-bench --example poseidon_build`.

use std::time::Instant;

use cairn_bench::{cairn_build, leaves, median};
use cairn_core::HashKind;

fn main() {
    for (arity, count) in [(2usize, 1usize << 16), (4, 1 << 14), (16, 1 << 12)] {
        let input = leaves(count);
        let mut times: Vec<_> = (0..5)
            .map(|_| {
                let started = Instant::now();
                std::hint::black_box(cairn_build(arity, HashKind::Poseidon, &input));
                started.elapsed()
            })
            .collect();
        println!(
            "Poseidon N = {arity}, {count} leaves: {:.1} ms",
            median(&mut times).as_secs_f64() * 1e3
        );
    }
}
