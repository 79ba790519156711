//! What signing and pinning add to a served database's publication round,
//! side by side in one run: each round appends `--batch` leaves (durable),
//! then times (a) publishing the new tiles and an unsigned checkpoint to a
//! directory, (b) signing the checkpoint (Ed25519, cairn-note), and (c)
//! pinning the head: making it final in the database before the
//! checkpoint names it (`pin_published`, a database checkpoint under the
//! writer lock, which appends wait on). Medians over `--rounds` rounds.
//!
//!     cargo run --release -p cairn-server --example publish_costs -- \
//!         [--base 1000000] [--batch 4000] [--rounds 40]

use std::time::{Duration, Instant};

use cairn_core::{Arity, HashKind, TreeConfig};
use cairn_db::{Db, DbConfig};
use cairn_note::Signer;
use cairn_tiles::{Checkpoint, DirStore, publish_at};

fn argument(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map_or(default, |v| v.parse().expect("a number"))
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let base = argument("--base", 1_000_000);
    let batch = argument("--batch", 4_000);
    let rounds = argument("--rounds", 40);
    let work = tempfile::tempdir().expect("a temporary directory");
    let tree = TreeConfig::new(Arity::new(4).expect("arity 4"), HashKind::Blake3);
    let mut config = DbConfig::new(tree);
    config.explicit_finality = true;
    config.store.flush_interval = None;
    config.store.checkpoint = Default::default();
    let db = Db::create(work.path().join("db"), config).expect("a database");
    let mut next = 0u64;
    let mut leaves = |count: u64| -> Vec<[u8; 32]> {
        let out = (next..next + count)
            .map(|i| cairn_testkit::leaf(17, i))
            .collect();
        next += count;
        out
    };
    for _ in 0..base.div_ceil(100_000) {
        db.append_batch(&leaves(100_000)).expect("append");
    }
    db.flush().expect("flush");
    db.checkpoint().expect("checkpoint");
    let store = DirStore::new(work.path().join("tiles"));
    let signer = Signer::from_seed("example.org/costs", &[3; 32]).expect("a key");
    let snapshot = std::sync::Arc::clone(db.snapshot().tree());
    publish_at(&snapshot, snapshot.size(), &store).expect("the first publication");
    let (mut publish, mut sign, mut pin) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        db.append_batch(&leaves(batch)).expect("append");
        db.flush().expect("flush");
        let snapshot = std::sync::Arc::clone(db.snapshot().tree());
        let started = Instant::now();
        publish_at(&snapshot, snapshot.size(), &store).expect("publish");
        publish.push(started.elapsed());
        let checkpoint = Checkpoint {
            tree: Checkpoint::tree_of(&tree),
            head: snapshot.head(),
        };
        let started = Instant::now();
        std::hint::black_box(checkpoint.encode_signed(&signer).expect("sign"));
        sign.push(started.elapsed());
        let started = Instant::now();
        cairn_server::pin_published(&db, &snapshot.head()).expect("pin");
        pin.push(started.elapsed());
    }
    let (publish, sign, pin) = (median(publish), median(sign), median(pin));
    println!(
        "base {base} leaves, {rounds} rounds of {batch} leaves (N = 4, BLAKE3), medians per round:"
    );
    println!(
        "| publication (tiles + unsigned checkpoint, directory) | signing the checkpoint | pinning the head (finalize) |"
    );
    println!("|---|---|---|");
    println!(
        "| {:.2} ms | {:.1} us ({:.4}x) | {:.2} ms ({:.2}x) |",
        publish.as_secs_f64() * 1e3,
        sign.as_secs_f64() * 1e6,
        sign.as_secs_f64() / publish.as_secs_f64(),
        pin.as_secs_f64() * 1e3,
        pin.as_secs_f64() / publish.as_secs_f64()
    );
}
