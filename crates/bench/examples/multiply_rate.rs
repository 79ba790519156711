//! How many 64-bit integer multiplies one core of this machine completes a
//! second: eight independent chains of `wrapping_mul`, so the loop is
//! bound by the multiplier's throughput, not by one multiply's latency.
//! This is the ceiling under the WebAssembly Poseidon (nine 29-bit limbs,
//! every partial product one `i64.mul`) quoted in `docs/performance.md`:
//! a hash's multiplies divided by its time, against this rate.
//!
//! Run: `cargo run --release -p cairn-bench --example multiply_rate -- [ROUNDS]`
//! (default 5; prints each round and the median).

use std::time::Instant;

/// Multiplies a round.
const MULTIPLIES: u64 = 400_000_000;
/// Independent chains (in [`chains`]): more than the multiplier's latency
/// in cycles, so one can issue every cycle.
const CHAINS: usize = 8;

/// One round: billions of multiplies a second. Eight chains in locals
/// (registers): each step is `x * (x | factor)`, one `imul` and one `or`,
/// which the compiler cannot regroup (as it would `x * factor * factor`
/// into one multiply by a square); the factor and the count come through
/// `black_box`, so nothing is folded.
fn round() -> f64 {
    let factor = std::hint::black_box(1u64);
    let steps = std::hint::black_box(MULTIPLIES / CHAINS as u64);
    let start = Instant::now();
    let product = chains(factor, steps);
    let seconds = start.elapsed().as_secs_f64();
    std::hint::black_box(product);
    MULTIPLIES as f64 / seconds / 1e9
}

/// `steps` rounds of the eight chains; their sum, so none is dead.
#[inline(never)]
fn chains(factor: u64, steps: u64) -> u64 {
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = [3u64, 5, 7, 11, 13, 17, 19, 23];
    for _ in 0..steps {
        a = a.wrapping_mul(a | factor);
        b = b.wrapping_mul(b | factor);
        c = c.wrapping_mul(c | factor);
        d = d.wrapping_mul(d | factor);
        e = e.wrapping_mul(e | factor);
        f = f.wrapping_mul(f | factor);
        g = g.wrapping_mul(g | factor);
        h = h.wrapping_mul(h | factor);
    }
    [a, b, c, d, e, f, g, h].iter().fold(0, |sum, x| sum ^ x)
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .map_or(5, |text| text.parse().expect("ROUNDS is a count"));
    let mut rates: Vec<f64> = (0..rounds.max(1))
        .map(|i| {
            let rate = round();
            println!("round {i}: {rate:.3} G multiplies/s");
            rate
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    println!(
        "median {:.3} G 64-bit multiplies/s on one core ({} rounds of {MULTIPLIES})",
        rates[rates.len() / 2],
        rates.len()
    );
}
