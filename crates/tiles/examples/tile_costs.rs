//! What a proof from tiles costs: objects and bytes fetched per membership
//! proof, cold (an empty cache per proof) and warm (one client for all),
//! and the time per proof against a local directory, for N = 2, 4, 16 at
//! the sizes given; plus the cold cost at 100M leaves from the layout
//! alone (a tile per tile-level on the path).
//!
//! `cargo run --release -p cairn-tiles --example tile_costs -- [SIZE..]`
//! (default 1000000 10000000).

use std::time::Instant;

use cairn_core::{Arity, Hash, HashKind, LeanImt, TreeConfig};
use cairn_tiles::{DirStore, Layout, TileTree, publish};

fn main() {
    let sizes: Vec<u64> = {
        let given: Vec<u64> = std::env::args()
            .skip(1)
            .map(|a| a.replace('_', "").parse().expect("sizes are counts"))
            .collect();
        if given.is_empty() {
            vec![1_000_000, 10_000_000]
        } else {
            given
        }
    };
    println!(
        "| N | leaves | objects published | bytes published | cold: objects, KiB per proof | warm: new objects per proof | time per proof (warm, local dir) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for n in [2u64, 4, 16] {
        let config = TreeConfig::new(Arity::new(n).expect("arity"), HashKind::Blake3);
        for &size in &sizes {
            let leaves: Vec<Hash> = (0..size).map(|i| cairn_testkit::leaf(5, i)).collect();
            let mut tree = LeanImt::from_leaves(config, &leaves).expect("a tree");
            drop(leaves);
            let snapshot = tree.snapshot();
            let dir = tempfile::tempdir().expect("a directory");
            let store = DirStore::new(dir.path());
            let published = publish(&snapshot, &store).expect("publish");
            let head = snapshot.head();
            let mut state = 0x9e37_79b9_7f4a_7c15u64;
            let mut next = || {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state % size
            };
            let proofs = 200;
            let (mut cold_objects, mut cold_bytes) = (0usize, 0usize);
            for _ in 0..proofs {
                let mut client = TileTree::new(config, head, &store);
                client.prove(next()).expect("a proof");
                cold_objects += client.fetched().len();
                cold_bytes += client.fetched().iter().map(|(_, b)| b).sum::<usize>();
            }
            let mut warm = TileTree::new(config, head, &store);
            for _ in 0..proofs {
                warm.prove(next()).expect("a proof");
            }
            let before = warm.fetched().len();
            let started = Instant::now();
            for _ in 0..proofs {
                warm.prove(next()).expect("a proof");
            }
            let per_proof = started.elapsed() / proofs as u32;
            let warm_new = (warm.fetched().len() - before) as f64 / proofs as f64;
            println!(
                "| {n} | {size} | {} | {:.1} MiB | {:.2}, {:.1} | {warm_new:.2} | {:.0} us |",
                published.objects,
                published.bytes as f64 / (1 << 20) as f64,
                cold_objects as f64 / proofs as f64,
                cold_bytes as f64 / proofs as f64 / 1024.0,
                per_proof.as_secs_f64() * 1e6
            );
        }
        let layout = Layout::new(config.arity, config.hash);
        let depth = cairn_core::shape::depth(100_000_000, config.arity);
        let tiles = depth.div_ceil(layout.height());
        println!(
            "| {n} | 100000000 (from the layout) | | | {tiles} path tiles, {:.1} KiB, plus the right edge's (at most {tiles} more, shared by every proof at the head) | | |",
            (tiles as u64 * layout.width() * 32) as f64 / 1024.0
        );
    }
}
