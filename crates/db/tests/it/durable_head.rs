//! `Db::durable_head`: what a reader may serve. It moves only when a
//! commit makes leaves durable, its snapshot answers lookups for exactly
//! the durable leaves, and a rollback replaces it before the database's
//! own rollback count moves.

use std::time::Duration;

use cairn_core::{Hash, HashKind};
use cairn_db::Db;

use crate::support::{config, reference_root, value};

const WAIT: Duration = Duration::from_secs(30);

fn values(from: u64, to: u64) -> Vec<Hash> {
    (from..to).map(|i| value(7, i)).collect()
}

#[test]
fn the_durable_head_serves_only_durable_leaves_and_follows_rollbacks() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(dir.path().join("db"), config(4, HashKind::Blake3)).unwrap();
    let first = values(0, 30);
    db.append_batch(&first).unwrap().token.wait(WAIT).unwrap();
    let head = db.durable_head();
    assert_eq!(head.size, 30);
    assert_eq!(head.root, reference_root(4, HashKind::Blake3, &first));
    assert!(head.failure.is_none());
    assert_eq!(head.snapshot.index_of(&first[29]).unwrap(), Some(29));

    // Visible but not durable: the head does not move.
    let more = values(30, 40);
    let appended = db.append_batch(&more).unwrap();
    assert_eq!(db.size(), 40);
    assert_eq!(db.durable_head().size, 30);
    appended.token.wait(WAIT).unwrap();
    let head = db.durable_head();
    assert_eq!(head.size, 40);
    let all: Vec<Hash> = first.iter().chain(&more).copied().collect();
    assert_eq!(head.root, reference_root(4, HashKind::Blake3, &all));

    // A rollback: the head is the rolled-back tree's, and its snapshot
    // no longer finds what was removed.
    db.truncate(20).unwrap();
    let head = db.durable_head();
    assert_eq!(head.size, 20);
    assert_eq!(head.root, reference_root(4, HashKind::Blake3, &first[..20]));
    assert_eq!(head.snapshot.size(), 20);
    assert_eq!(head.snapshot.index_of(&first[25]).unwrap(), None);
    assert_eq!(head.snapshot.index_of(&first[19]).unwrap(), Some(19));
}
