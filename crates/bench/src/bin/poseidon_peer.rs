//! Poseidon per hash against `light-poseidon` in the same process.
//!
//! Both sides hash the same canonical big-endian inputs through their byte
//! APIs (cairn's `HashKind::Poseidon.hash_children`, light-poseidon's
//! `hash_bytes_be`), so both pay the same conversions in and out of
//! Montgomery form. For each width the two alternate in short timed runs
//! (`--batch` hashes each) over `--rounds` rounds, so a change of load on
//! the machine lands on both; the figure is each side's median time per
//! hash and the ratio cairn / light-poseidon (below 1: cairn is faster).
//! Every output is compared, so a fast wrong hash cannot pass.
//!
//! A third column times the tree's bulk path on the same groups,
//! `HashKind::Poseidon.hash_groups` over all of them at once (several
//! hashes per pass where the CPU has a multi-lane kernel, see
//! `HashKind::kernel_name`), interleaved with the other two.
//!
//! Then the bound: the time of one BN254 `Fr` multiplication (`ark-ff`,
//! independent products, so the figure is throughput, not latency), the
//! multiplications one permutation of the optimised form takes (an S-box
//! is three: two squarings and a product; a full round adds the t x t
//! matrix, a partial round the sparse one's 2t - 1), and the hashes per
//! second per core those allow, beside the measured ones.
//!
//! Run: `cargo run --release -p cairn-bench --bin poseidon_peer -- [--rounds R]
//! [--batch B] [--inputs 2,4] [--csv FILE]`; with `--csv`, one row per
//! width (microseconds per hash and the bound) for
//! `scripts/plot_poseidon.py`.

use std::hint::black_box;
use std::time::Instant;

use ark_bn254::Fr;
use cairn_bench::median;
use cairn_core::{Hash, HashKind};
use light_poseidon::{Poseidon, PoseidonBytesHasher};

const USAGE: &str = "usage: poseidon_peer [--rounds R] [--batch B] [--inputs 2,4] [--csv FILE]";

fn main() {
    let mut rounds = 15usize;
    let mut batch = 2_000usize;
    let mut widths = vec![2usize, 4];
    let mut csv: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .unwrap_or_else(|| panic!("{arg} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--rounds" => rounds = value().parse().expect(USAGE),
            "--batch" => batch = value().parse().expect(USAGE),
            "--csv" => csv = Some(value()),
            "--inputs" => {
                widths = value()
                    .split(',')
                    .map(|w| w.parse().expect(USAGE))
                    .collect()
            }
            _ => panic!("unknown argument {arg}\n{USAGE}"),
        }
    }
    println!("batched kernel: {}", HashKind::Poseidon.kernel_name());
    println!(
        "inputs (t)  cairn/hash  batched/hash  light-poseidon/hash  ratio (cairn / light)  ratio (batched / light)"
    );
    let mut measured = Vec::new();
    for inputs in widths {
        let groups = field_inputs(inputs, batch);
        let mut light = Poseidon::<Fr>::new_circom(inputs).expect("1..=12 inputs");
        for group in &groups {
            let refs: Vec<&[u8]> = group.iter().map(|input| input.as_slice()).collect();
            let want = light.hash_bytes_be(&refs).expect("canonical inputs");
            assert_eq!(
                HashKind::Poseidon.hash_children(group),
                want,
                "outputs differ"
            );
        }
        // The bulk path takes groups of 2..=16 children, laid out contiguously.
        let flat: Vec<Hash> = groups.iter().flatten().copied().collect();
        let mut batched_out = vec![[0u8; 32]; groups.len()];
        let batched_ok = inputs >= 2;
        if batched_ok {
            HashKind::Poseidon.hash_groups(&flat, inputs, &mut batched_out);
            for (parent, group) in batched_out.iter().zip(&groups) {
                assert_eq!(
                    *parent,
                    HashKind::Poseidon.hash_children(group),
                    "batched outputs differ"
                );
            }
        }
        let (mut ours, mut batched, mut theirs) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            if batched_ok {
                let start = Instant::now();
                HashKind::Poseidon.hash_groups(black_box(&flat), inputs, &mut batched_out);
                black_box(&batched_out);
                batched.push(start.elapsed());
            }
            let start = Instant::now();
            for group in &groups {
                black_box(HashKind::Poseidon.hash_children(black_box(group)));
            }
            ours.push(start.elapsed());
            let start = Instant::now();
            for group in &groups {
                let refs: [&[u8]; 16] =
                    std::array::from_fn(|i| group.get(i).map_or(&[][..], |input| input.as_slice()));
                black_box(light.hash_bytes_be(black_box(&refs[..inputs])).unwrap());
            }
            theirs.push(start.elapsed());
        }
        let per_hash = |d: std::time::Duration| d.as_secs_f64() * 1e6 / batch as f64;
        let (ours, theirs) = (per_hash(median(&mut ours)), per_hash(median(&mut theirs)));
        let batched = if batched_ok {
            per_hash(median(&mut batched))
        } else {
            f64::NAN
        };
        println!(
            "{inputs} ({})       {ours:>7.2} us  {batched:>9.2} us  {theirs:>12.2} us        {:>14.2}x  {:>22.2}x",
            inputs + 1,
            ours / theirs,
            batched / theirs
        );
        measured.push((inputs, ours, batched, theirs));
    }
    let mul_ns = multiplication_ns(rounds);
    println!("\none Fr multiplication: {mul_ns:.2} ns (throughput, median of {rounds} runs)");
    println!(
        "inputs (t)  multiplications  bound/hash  bound hashes/s/core  measured hashes/s/core  measured / bound  batched hashes/s/core  batched / bound"
    );
    let mut rows =
        vec!["inputs,t,cairn_us,cairn_batched_us,light_poseidon_us,bound_us,kernel".to_string()];
    for (inputs, ours_us, batched_us, light_us) in measured {
        let t = inputs + 1;
        let muls = multiplications(t);
        let bound_us = muls as f64 * mul_ns / 1e3;
        rows.push(format!(
            "{inputs},{t},{ours_us:.4},{batched_us:.4},{light_us:.4},{bound_us:.4},\"{}\"",
            HashKind::Poseidon.kernel_name()
        ));
        println!(
            "{inputs} ({t})       {muls:>15}  {bound_us:>7.2} us  {:>19.0}  {:>22.0}  {:>15.2}  {:>21.0}  {:>14.2}",
            1e6 / bound_us,
            1e6 / ours_us,
            bound_us / ours_us,
            1e6 / batched_us,
            bound_us / batched_us
        );
    }
    if let Some(path) = csv {
        std::fs::write(&path, rows.join("\n") + "\n")
            .unwrap_or_else(|e| panic!("writing {path}: {e}"));
        println!("\nwrote {path}");
    }
}

/// Field multiplications (squarings counted as multiplications) in one
/// circomlib Poseidon permutation of width `t` in the optimised form:
/// full rounds of t S-boxes and a dense t x t matrix, partial rounds of
/// one S-box and a sparse matrix.
fn multiplications(t: usize) -> usize {
    let (full, partial) = cairn_core::hash::poseidon_rounds(t);
    let sbox = 3;
    full * (t * sbox + t * t) + partial * (sbox + 2 * t - 1)
}

/// The median time of one `Fr` multiplication over `rounds` runs of a
/// batch of independent products (eight accumulators, so the products
/// overlap as a permutation's independent ones can).
fn multiplication_ns(rounds: usize) -> f64 {
    use ark_ff::Field;
    const STEPS: usize = 200_000;
    // Full-width operands: small integers squared until they wrap the modulus.
    let wide = |seed: u64| (0..8).fold(Fr::from(seed), |x, _| x.square());
    let factor = wide(0x9e37_79b9_7f4a_7c15);
    let mut samples = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let mut lanes: [Fr; 8] = std::array::from_fn(|i| wide(i as u64 + 3));
        let start = Instant::now();
        for _ in 0..STEPS {
            for lane in &mut lanes {
                *lane *= factor;
            }
        }
        samples.push(start.elapsed());
        black_box(lanes.iter().fold(Fr::ONE, |a, b| a * b));
    }
    median(&mut samples).as_secs_f64() * 1e9 / (STEPS * 8) as f64
}

/// `count` groups of `inputs` pseudo-random canonical field elements (the
/// top byte cleared keeps each below the BN254 modulus).
fn field_inputs(inputs: usize, count: usize) -> Vec<Vec<Hash>> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..count)
        .map(|_| {
            (0..inputs)
                .map(|_| {
                    let mut value = [0u8; 32];
                    for chunk in value.chunks_mut(8) {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        chunk.copy_from_slice(&state.to_be_bytes());
                    }
                    value[0] = 0;
                    value
                })
                .collect()
        })
        .collect()
}
