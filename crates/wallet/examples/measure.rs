//! What following a tree costs a wallet: 10 marked notes at random
//! positions, the tree growing in blocks, a sync after each block;
//! prints the cold sync's and the steady state's tiles and bytes.
//!
//! ```text
//! cargo run -p cairn-wallet --profile test --example measure -- [LEAVES] [BLOCK] [START]
//! ```
//!
//! Defaults: 1,000,000 leaves in blocks of 1,000 after a start of 100,000
//! leaves, BLAKE3 N = 2 (tile bytes do not depend on the hash).

use cairn_core::{Arity, HashKind, LeanImt, TreeConfig};
use cairn_tiles::{DirStore, Unsigned, publish};
use cairn_wallet::{DEFAULT_WINDOW, Tracker, sync};

fn main() {
    let mut args = std::env::args()
        .skip(1)
        .map(|a| a.parse::<u64>().expect("a number"));
    let total = args.next().unwrap_or(1_000_000);
    let block = args.next().unwrap_or(1_000);
    let start = args.next().unwrap_or(100_000);
    let config = TreeConfig::new(Arity::new(2).expect("2"), HashKind::Blake3);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = DirStore::new(dir.path());
    let mut tree = LeanImt::new(config);
    let leaf = |i: u64| *blake3::hash(&i.to_be_bytes()).as_bytes();
    let grow = |tree: &mut LeanImt, from: u64, to: u64| {
        let leaves: Vec<_> = (from..to).map(leaf).collect();
        tree.append_batch(&leaves).expect("append");
        publish(&tree.snapshot(), &store).expect("publish");
    };
    grow(&mut tree, 0, start);
    let mut tracker = Tracker::new(config, DEFAULT_WINDOW).expect("a tracker");
    // Ten notes at positions spread by a fixed pseudo-random walk.
    for k in 1..=10u64 {
        tracker
            .mark(k.wrapping_mul(0x9e37_79b9_7f4a_7c15) % start)
            .expect("mark");
    }
    let cold = sync(&mut tracker, &store, &Unsigned).expect("cold sync");
    println!(
        "cold: {} leaves, 10 notes: {} tiles + checkpoint, {} bytes of tiles",
        start, cold.tiles, cold.bytes
    );
    let (mut syncs, mut tiles, mut bytes, mut most) = (0u64, 0usize, 0usize, 0usize);
    let mut size = start;
    let mut number = 0;
    while size < total {
        let to = (size + block).min(total);
        grow(&mut tree, size, to);
        let report = sync(&mut tracker, &store, &Unsigned).expect("sync");
        number += 1;
        tracker.checkpoint(number).expect("checkpoint");
        syncs += 1;
        tiles += report.tiles;
        bytes += report.bytes;
        most = most.max(report.bytes);
        size = to;
    }
    for index in tracker.marked().collect::<Vec<_>>() {
        let proof = tracker.witness(index).expect("witness");
        assert_eq!(
            proof,
            tree.at_size(size)
                .expect("view")
                .prove(index)
                .expect("proof")
        );
    }
    let state = tracker.to_bytes();
    println!(
        "steady: {syncs} syncs of {block} leaves to {size}: {:.2} tiles and {:.0} bytes of tiles per sync (most {most}), plus the checkpoint",
        tiles as f64 / syncs as f64,
        bytes as f64 / syncs as f64
    );
    println!(
        "state: {} bytes ({} nodes held, {} checkpoints retained)",
        state.len(),
        tracker.held_nodes(),
        tracker.checkpoints().len()
    );
}
