//! The main job, in memory: ingest the size of the whole Tornado Cash mainnet
//! deposit history (278,827 leaves; deterministic pseudo-random field
//! elements) under every hash, prove and verify a membership proof, roll it
//! forward across a second batch with a consistency proof, and print each
//! step's figure. Durable ingest arrives with the storage engine.
//!
//! Run: `cargo run --release -p cairn-core --example tornado [ARITY]`.

use std::time::Instant;

use cairn_core::{Arity, HashKind, LeanImt, TreeConfig};

const DEPOSITS: u64 = 278_827;
const SECOND_BATCH: u64 = 10_000;

fn leaf(i: u64) -> [u8; 32] {
    let mut leaf = *blake3::hash(&i.to_be_bytes()).as_bytes();
    leaf[0] &= 0x1f; // below 2^253: a canonical BN254 scalar, valid for Poseidon too
    leaf
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let arity: Arity = std::env::args().nth(1).as_deref().unwrap_or("4").parse()?;
    let leaves: Vec<_> = (0..DEPOSITS + SECOND_BATCH).map(leaf).collect();
    let (history, batch) = leaves.split_at(DEPOSITS as usize);
    println!("{DEPOSITS} leaves, then {SECOND_BATCH} more, arity {arity}");
    for hash in HashKind::ALL {
        let started = Instant::now();
        let mut tree = LeanImt::from_leaves(TreeConfig::new(arity, hash), history)?;
        let build = started.elapsed();
        let old = tree.head();

        let index = DEPOSITS / 3;
        let started = Instant::now();
        let proof = tree.prove(index)?;
        let prove = started.elapsed();
        let started = Instant::now();
        proof.verify(arity, hash, &old)?;
        let verify = started.elapsed();

        tree.append_batch(batch)?;
        let new = tree.head();
        let consistency = tree.prove_consistency(old.size, new.size)?;
        let started = Instant::now();
        let rolled = consistency.roll_forward(&proof, arity, hash, &old, &new)?;
        let roll = started.elapsed();
        assert_eq!(rolled, tree.prove(index)?);

        println!(
            "{hash:>9}: build {:>9.1} ms ({:>6.2} M leaves/s), depth {}, prove {:>7.1} us, verify {:>8.1} us, \
             proof {} B, consistency {} B, roll-forward {:>8.1} us, root {}",
            build.as_secs_f64() * 1e3,
            DEPOSITS as f64 / build.as_secs_f64() / 1e6,
            tree.depth(),
            prove.as_secs_f64() * 1e6,
            verify.as_secs_f64() * 1e6,
            proof.to_bytes().len(),
            consistency.to_bytes().len(),
            roll.as_secs_f64() * 1e6,
            cairn_core::hex::to_hex(&new.root.unwrap_or_default()),
        );
    }
    Ok(())
}
