//! Membership-proof verification time per proof, and the proofs it timed,
//! so that another implementation can time the very same proofs (the
//! TypeScript package's `npm run bench` reads the file this writes).
//!
//! For each hash: a tree of random canonical leaves (N = 4 and 2^20 leaves
//! for the byte hashes; N = 2 and 2^16 leaves for Poseidon), 1,000 proofs of
//! random leaves, then the median over rounds of the time to decode and
//! verify all of them from their binary encoding (and to verify already
//! decoded ones), divided by 1,000. Writes `{hash, arity, size, root,
//! proofs: [0x..binary]}` per hash as JSON to the path given.
//!
//! Run: `cargo run --release -p cairn-core --example verify_timing -- OUT.json [ROUNDS]`.

use std::hint::black_box;
use std::time::Instant;

use cairn_core::hex::to_hex;
use cairn_core::{Arity, HashKind, LeanImt, MembershipProof, TreeConfig};

fn leaf(i: u64) -> [u8; 32] {
    let mut leaf = *blake3::hash(&i.to_le_bytes()).as_bytes();
    leaf[0] &= 0x1f;
    leaf
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let out = args
        .next()
        .ok_or("usage: verify_timing OUT.json [ROUNDS]")?;
    let rounds: usize = args.next().map_or(Ok(21), |r| r.parse())?;
    let mut entries = Vec::new();
    for (hash, arity, size) in [
        (HashKind::Blake3, 4, 1u64 << 20),
        (HashKind::Sha256, 4, 1 << 20),
        (HashKind::Keccak256, 4, 1 << 20),
        (HashKind::Poseidon, 2, 1 << 16),
    ] {
        let arity = Arity::new(arity)?;
        let leaves: Vec<_> = (0..size).map(leaf).collect();
        let mut tree = LeanImt::from_leaves(TreeConfig::new(arity, hash), &leaves)?;
        let head = tree.head();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut encoded = Vec::new();
        for _ in 0..1000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            encoded.push(tree.prove(state % size)?.to_bytes());
        }
        let decoded: Vec<MembershipProof> = encoded
            .iter()
            .map(|bytes| MembershipProof::from_bytes(bytes))
            .collect::<Result<_, _>>()?;
        let per_proof = |body: &mut dyn FnMut()| {
            let runs = (0..rounds)
                .map(|_| {
                    let started = Instant::now();
                    body();
                    started.elapsed().as_nanos() as f64 / encoded.len() as f64
                })
                .collect();
            median(runs)
        };
        let decode_verify = per_proof(&mut || {
            for bytes in &encoded {
                let proof = MembershipProof::from_bytes(black_box(bytes)).expect("valid");
                proof.verify(arity, hash, &head).expect("valid");
            }
        });
        let verify = per_proof(&mut || {
            for proof in &decoded {
                black_box(proof).verify(arity, hash, &head).expect("valid");
            }
        });
        println!(
            "{:>9} N = {} size {:>7}: decode + verify {:>9.0} ns/proof, verify {:>9.0} ns/proof ({} bytes/proof)",
            hash.name(),
            arity.get(),
            size,
            decode_verify,
            verify,
            encoded[0].len()
        );
        let proofs: Vec<String> = encoded
            .iter()
            .map(|bytes| format!("\"0x{}\"", hex::encode(bytes)))
            .collect();
        let root = head.root.as_ref().map(to_hex).ok_or("empty tree")?;
        entries.push(format!(
            "{{\"hash\":\"{}\",\"arity\":{},\"size\":{},\"root\":\"{}\",\"rust_decode_verify_ns\":{:.0},\"rust_verify_ns\":{:.0},\"proofs\":[{}]}}",
            hash.name(),
            arity.get(),
            size,
            root,
            decode_verify,
            verify,
            proofs.join(",")
        ));
    }
    std::fs::write(&out, format!("[{}]\n", entries.join(",\n")))?;
    Ok(())
}
