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
//! Run: `cargo run --release -p cairn-bench --bin poseidon_peer -- [--rounds R]
//! [--batch B] [--inputs 2,4]`.

use std::hint::black_box;
use std::time::Instant;

use ark_bn254::Fr;
use cairn_bench::median;
use cairn_core::{Hash, HashKind};
use light_poseidon::{Poseidon, PoseidonBytesHasher};

const USAGE: &str = "usage: poseidon_peer [--rounds R] [--batch B] [--inputs 2,4]";

fn main() {
    let mut rounds = 15usize;
    let mut batch = 2_000usize;
    let mut widths = vec![2usize, 4];
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .unwrap_or_else(|| panic!("{arg} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--rounds" => rounds = value().parse().expect(USAGE),
            "--batch" => batch = value().parse().expect(USAGE),
            "--inputs" => {
                widths = value()
                    .split(',')
                    .map(|w| w.parse().expect(USAGE))
                    .collect()
            }
            _ => panic!("unknown argument {arg}\n{USAGE}"),
        }
    }
    println!("inputs (t)  cairn/hash  light-poseidon/hash  ratio (cairn / light)");
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
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
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
        println!(
            "{inputs} ({})       {ours:>7.2} us  {theirs:>12.2} us        {:.2}x",
            inputs + 1,
            ours / theirs
        );
    }
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
