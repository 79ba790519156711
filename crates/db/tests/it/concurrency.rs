//! Appends racing the store's own background thread.

use std::sync::mpsc;
use std::time::Duration;

use cairn_core::{Hash, HashKind};
use cairn_db::Db;

use crate::support::{config, value};

/// The set confirms a value against the leaf it may repeat, on rayon
/// threads, and committing the tree runs on the same rayon threads under
/// the tree lock (a snapshot of a dirty tree, a checkpoint). A set task that
/// waited for the tree lock deadlocked the two: seen with `cairn ingest`
/// appending a block while the store's flush thread checkpointed the one
/// before, and possible with any reader taking a snapshot during a batch.
/// Here a reader takes a snapshot (committing a large unhashed batch under
/// the tree lock) while the writer's next batch, which repeats that batch's
/// leaves, is in the set. It must finish, every repeat refused.
#[test]
fn a_snapshot_racing_a_batch_in_the_set_does_not_deadlock() {
    const BATCH: u64 = 1 << 18;
    // Where in the second batch's insert the snapshot lands varies with the
    // machine: each round waits a different time before taking it.
    const DELAYS_MS: [u64; 8] = [0, 5, 10, 20, 40, 80, 160, 320];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let mut config = config(4, HashKind::Blake3);
    config.store.log_shift = 20;
    let db = std::sync::Arc::new(Db::create(&path, config).unwrap());
    let rounds: Vec<(Vec<Hash>, Vec<Hash>)> = (0..DELAYS_MS.len() as u64)
        .map(|round| {
            let fresh: Vec<Hash> = (0..BATCH).map(|i| value(10 + round, i)).collect();
            // Every other value repeats a leaf of `fresh`.
            let mixed: Vec<Hash> = (0..BATCH / 2)
                .flat_map(|i| [fresh[(2 * i) as usize], value(100 + round, i)])
                .collect();
            (fresh, mixed)
        })
        .collect();
    let (appended_first, first_in) = mpsc::channel();
    let (round_done, round_finished) = mpsc::channel();
    let writer = {
        let db = std::sync::Arc::clone(&db);
        std::thread::spawn(move || {
            for (fresh, mixed) in rounds {
                db.append_batch(&fresh).unwrap();
                appended_first.send(()).unwrap();
                let outcome = db.append_new(&mixed).unwrap();
                assert_eq!(outcome.skipped.len() as u64, BATCH / 2);
                round_done.send(()).unwrap();
            }
        })
    };
    for delay in DELAYS_MS {
        first_in.recv().unwrap();
        std::thread::sleep(Duration::from_millis(delay));
        // Commits the first batch under the tree lock, on rayon threads, in
        // a thread of its own: in a deadlock it never returns.
        let reader = std::sync::Arc::clone(&db);
        std::thread::spawn(move || drop(reader.snapshot()));
        if round_finished
            .recv_timeout(Duration::from_secs(60))
            .is_err()
        {
            panic!(
                "a batch racing a snapshot ({delay} ms after the batch before) did not finish in 60 s: a deadlock between the set's rayon tasks and the tree lock"
            );
        }
    }
    writer.join().unwrap();
    db.check_set().unwrap();
}
