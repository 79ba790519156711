//! What a proof from tiles costs: GETs and bytes per membership proof,
//! cold (a new client per proof) and warm (one client, its default cache
//! of 64 tiles), and the time per proof, against a local HTTP tile server
//! (`cairn_testkit::http::StaticServer`, one connection per GET) serving
//! the published directory; plus the objects and bytes a publication of the
//! whole tree writes, and the cold cost at 100M leaves from the layout
//! alone (a tile per tile-level on the path).
//!
//! `cargo run --release -p cairn-tiles --example tile_costs -- [SIZE..]`
//! (default 1000000).

use std::time::Instant;

use cairn_core::{Arity, Hash, HashKind, LeanImt, TreeConfig};
use cairn_testkit::http::StaticServer;
use cairn_tiles::{DirStore, Layout, Location, RemoteOptions, RemoteStore, TileTree, publish};

fn main() {
    let sizes: Vec<u64> = {
        let given: Vec<u64> = std::env::args()
            .skip(1)
            .map(|a| a.replace('_', "").parse().expect("sizes are counts"))
            .collect();
        if given.is_empty() {
            vec![1_000_000]
        } else {
            given
        }
    };
    println!(
        "| N | leaves | objects published | bytes published | cold: GETs, KiB per proof | warm: GETs, KiB per proof | cold: time per proof | warm: time per proof |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for n in [2u64, 4, 16] {
        let config = TreeConfig::new(Arity::new(n).expect("arity"), HashKind::Blake3);
        for &size in &sizes {
            let leaves: Vec<Hash> = (0..size).map(|i| cairn_testkit::leaf(5, i)).collect();
            let mut tree = LeanImt::from_leaves(config, &leaves).expect("a tree");
            drop(leaves);
            let snapshot = tree.snapshot();
            let dir = tempfile::tempdir().expect("a directory");
            let published = publish(&snapshot, &DirStore::new(dir.path())).expect("publish");
            let server = StaticServer::start(dir.path());
            let store = RemoteStore::open(
                &Location::parse(&server.url()).expect("a URL"),
                &RemoteOptions::default(),
            )
            .expect("an HTTP store");
            let head = snapshot.head();
            let mut state = 0x9e37_79b9_7f4a_7c15u64;
            let mut next = || {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state % size
            };
            let proofs = 200u64;
            let (requests, bytes) = (server.requests(), server.bytes());
            let started = Instant::now();
            for _ in 0..proofs {
                TileTree::new(config, head, &store)
                    .prove(next())
                    .expect("a proof");
            }
            let cold_time = started.elapsed() / proofs as u32;
            let cold_gets = (server.requests() - requests) as f64 / proofs as f64;
            let cold_kib = (server.bytes() - bytes) as f64 / proofs as f64 / 1024.0;
            let mut warm = TileTree::new(config, head, &store);
            for _ in 0..proofs {
                warm.prove(next()).expect("a proof");
            }
            let (requests, bytes) = (server.requests(), server.bytes());
            let started = Instant::now();
            for _ in 0..proofs {
                warm.prove(next()).expect("a proof");
            }
            let warm_time = started.elapsed() / proofs as u32;
            let warm_gets = (server.requests() - requests) as f64 / proofs as f64;
            let warm_kib = (server.bytes() - bytes) as f64 / proofs as f64 / 1024.0;
            println!(
                "| {n} | {size} | {} | {:.1} MiB | {cold_gets:.2}, {cold_kib:.1} | {warm_gets:.2}, {warm_kib:.1} | {:.0} us | {:.0} us |",
                published.objects,
                published.bytes as f64 / (1 << 20) as f64,
                cold_time.as_secs_f64() * 1e6,
                warm_time.as_secs_f64() * 1e6,
            );
        }
        let layout = Layout::new(config.arity, config.hash);
        let depth = cairn_core::shape::depth(100_000_000, config.arity);
        let tiles = depth.div_ceil(layout.height());
        println!(
            "| {n} | 100000000 (from the layout) | | | {tiles} path tiles, {:.1} KiB, plus the right edge's (at most {tiles} more, shared by every proof at the head) | | | |",
            (tiles as u64 * layout.width() * 32) as f64 / 1024.0
        );
    }
}
