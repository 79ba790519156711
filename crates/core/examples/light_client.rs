//! A light client following one leaf across batches without downloading them.
//!
//! The "server" owns the tree and appends batches. The "client" bootstraps
//! once with a trusted head and a membership proof of its own leaf, then for
//! every batch receives only the new head and a consistency proof: it checks
//! the new head extends the old one and rolls its proof forward, never seeing
//! a leaf. Run: `cargo run --release -p cairn-core --example light_client`.

use cairn_core::{
    Arity, ConsistencyProof, HashKind, LeanImt, MembershipProof, TreeConfig, TreeHead,
};

fn pseudo_random_leaf(i: u64) -> [u8; 32] {
    let mut leaf = *blake3::hash(&i.to_le_bytes()).as_bytes();
    leaf[0] &= 0x1f;
    leaf
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let arity = Arity::new(4)?;
    let hash = HashKind::Blake3;
    let mut server = LeanImt::new(TreeConfig::new(arity, hash));
    let initial: Vec<_> = (0..10_000).map(pseudo_random_leaf).collect();
    server.append_batch(&initial)?;

    // Bootstrap: the client trusts this head (say, read from a contract) and
    // receives a proof of its note, leaf 4,242.
    let my_index = 4_242;
    let mut trusted = server.head();
    let mut proof: MembershipProof = server.prove(my_index)?;
    proof.verify(arity, hash, &trusted)?;
    println!(
        "bootstrap: size {}, proof of leaf {my_index}: {} bytes",
        trusted.size,
        proof.to_bytes().len()
    );
    println!(
        "{:>10} {:>10} {:>14} {:>16} {:>12}",
        "batch", "new size", "update bytes", "raw leaf bytes", "proof bytes"
    );

    let mut next = initial.len() as u64;
    for batch_len in [1u64, 10, 100, 1_000, 10_000, 100_000] {
        let batch: Vec<_> = (next..next + batch_len).map(pseudo_random_leaf).collect();
        next += batch_len;
        server.append_batch(&batch)?;

        // What crosses the wire: the new head and one consistency proof.
        let new_head: TreeHead = server.head();
        let wire = server
            .prove_consistency(trusted.size, new_head.size)?
            .to_bytes();
        let update_bytes = wire.len() + 8 + 32;

        // Client side: decode, verify, roll forward, adopt the new head.
        let consistency = ConsistencyProof::from_bytes(&wire)?;
        proof = consistency.roll_forward(&proof, arity, hash, &trusted, &new_head)?;
        trusted = new_head;
        println!(
            "{batch_len:>10} {:>10} {update_bytes:>14} {:>16} {:>12}",
            trusted.size,
            batch_len * 32,
            proof.to_bytes().len()
        );
    }
    // The rolled-forward proof is exactly the one the server would generate.
    assert_eq!(proof, server.prove(my_index)?);
    println!(
        "rolled-forward proof equals a fresh proof at size {}",
        trusted.size
    );
    Ok(())
}
