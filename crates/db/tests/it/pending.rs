//! 409 only for durable values, for every kind: a duplicate of a value not
//! yet durable is answered once that value is durable (refused then), or
//! appended if the earlier append was rolled back; a failed write is a
//! failure, never "duplicate". And through kill -9 before the fsync: a
//! fault run found a second client told "already leaf k" for a value a
//! crash then took back; here the second append is still waiting when the
//! process dies, and the value is absent after it (the absence proof an
//! indexed tree served meanwhile was of the head the crash kept).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use cairn_core::indexed::IndexedTree;
use cairn_core::{Hash, HashKind, TreeConfig, TreeKind};
use cairn_db::{Database, DbError, DuplicateOf, ErrorKind, Proof};
use cairn_store::StdFs;
use cairn_store::fs::Fs;
use cairn_testkit::kill9::Victim;
use cairn_testkit::sim::SimFs;
use cairn_testkit::sim::gated::{Gated, GatedFs};

use crate::support::*;

const WAIT: Duration = Duration::from_secs(30);
const CHILD_ENV: &str = "CAIRN_PENDING_CRASH_CHILD_DIR";
const KIND_ENV: &str = "CAIRN_PENDING_CRASH_KIND";
/// Values durable before the race.
const PREFIX: u64 = 10;

/// The kinds every test runs for.
fn kinds() -> [TreeConfig; 2] {
    [
        tree(2, HashKind::Blake3),
        tree(4, HashKind::Blake3).with_kind(TreeKind::Indexed),
    ]
}

/// Leaves before the first value: an indexed tree's guard.
fn offset(kind: &TreeConfig) -> u64 {
    u64::from(kind.kind == TreeKind::Indexed)
}

/// A database of `kind` in `dir` through `fs`, holding the durable prefix.
fn with_prefix(fs: Arc<dyn Fs>, dir: &Path, kind: TreeConfig) -> Database {
    let db = Database::create_in(fs, dir, config_of(kind)).unwrap();
    let prefix: Vec<Hash> = (0..PREFIX).map(|i| value(40, i)).collect();
    db.append(&prefix).unwrap().wait(&db, WAIT).unwrap();
    db
}

/// The value the race is about.
fn raced() -> Hash {
    value(41, 0)
}

#[test]
fn a_duplicate_of_a_pending_value_is_refused_only_once_it_is_durable() {
    for kind in kinds() {
        let dir = tempfile::tempdir().unwrap();
        let gate = Arc::new(GatedFs::default());
        let db = with_prefix(Arc::new(Gated(Arc::clone(&gate))), dir.path(), kind);
        let x = raced();
        let first = db.append(&[x]).unwrap();
        // The second append is not answered: it waits for the first.
        let second = db.append(&[value(41, 1), x]).unwrap();
        assert_eq!(second.appended(), None, "{kind:?}");
        // A batch repeating itself is refused at once: nothing to wait for.
        assert!(matches!(
            db.append(&[value(41, 2), value(41, 2)]),
            Err(DbError::Duplicates { .. })
        ));
        // The disk stalls while the second waits; then the first is durable
        // and the second refused, naming its leaf.
        gate.close();
        std::thread::scope(|scope| {
            let waiting = scope.spawn(|| second.wait(&db, WAIT));
            gate.open();
            match waiting.join().unwrap() {
                Err(DbError::Duplicates { duplicates, .. }) => {
                    assert_eq!(duplicates.len(), 1);
                    assert_eq!(duplicates[0].position, 1);
                    assert_eq!(
                        duplicates[0].of,
                        DuplicateOf::Leaf(offset(&kind) + PREFIX),
                        "{kind:?}"
                    );
                }
                other => panic!("{kind:?}: {other:?}"),
            }
        });
        let acked = first.wait(&db, WAIT).unwrap();
        assert_eq!(acked.first, offset(&kind) + PREFIX);
        // Once durable, a duplicate is refused at once.
        assert!(matches!(db.append(&[x]), Err(DbError::Duplicates { .. })));
        // Skipping: a batch of nothing but pending duplicates waits too,
        // then reports them skipped.
        let y = value(41, 3);
        let pending = db.append(&[y]).unwrap();
        let skipping = db.append_new(&[y]).unwrap();
        assert_eq!(skipping.appended(), None);
        let skipped = skipping.wait(&db, WAIT).unwrap();
        assert_eq!((skipped.count, skipped.skipped.len()), (0, 1));
        pending.wait(&db, WAIT).unwrap();
    }
}

#[test]
fn a_duplicate_of_a_value_rolled_back_before_it_was_durable_is_appended() {
    for kind in kinds() {
        let dir = tempfile::tempdir().unwrap();
        let db = with_prefix(Arc::new(StdFs), dir.path(), kind);
        let size = db.head().size;
        let x = raced();
        let first = db.append(&[x]).unwrap();
        let second = db.append(&[x]).unwrap();
        assert_eq!(second.appended(), None, "{kind:?}");
        // The first is rolled back (a reorganisation) before anything waits.
        db.truncate(size).unwrap();
        assert_eq!(
            first.wait(&db, WAIT).unwrap_err().kind(),
            ErrorKind::RolledBack,
            "{kind:?}"
        );
        // The second goes in instead, where the first was.
        let acked = second.wait(&db, WAIT).unwrap();
        assert_eq!((acked.first, acked.count), (size, 1), "{kind:?}");
        assert_eq!(db.index_of(&x).unwrap(), Some(size));
    }
}

#[test]
fn a_duplicate_of_a_value_whose_write_failed_gets_the_failure_not_a_duplicate() {
    for kind in kinds() {
        let fs = Arc::new(SimFs::new());
        let db = with_prefix(fs.clone(), Path::new("/db"), kind);
        let x = raced();
        let _first = db.append(&[x]).unwrap();
        let second = db.append(&[x]).unwrap();
        fs.fail_nth_sync_data(1);
        let error = second.wait(&db, WAIT).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Unavailable, "{kind:?}: {error}");
        assert!(!matches!(error, DbError::Duplicates { .. }));
    }
}

/// The process killed while the second append waits. A no-op unless
/// started by `kill_9_before_the_fsync_leaves_no_duplicate_answer_for_an_absent_value`.
#[test]
fn pending_crash_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let kind = match std::env::var(KIND_ENV).unwrap().as_str() {
        "indexed" => kinds()[1],
        _ => kinds()[0],
    };
    let gate = Arc::new(GatedFs::default());
    let db = with_prefix(Arc::new(Gated(Arc::clone(&gate))), Path::new(&dir), kind);
    let durable = db.head();
    // Every write and fsync from here on stalls until the process is killed.
    gate.close();
    let x = raced();
    let first = db.append(&[x]).unwrap();
    match db.append(&[x]) {
        Ok(second) if second.appended().is_none() => {
            println!("second waits");
            // Its wait flushes the first, and stalls in the write.
            let db = Arc::new(db);
            let waiting = Arc::clone(&db);
            std::thread::spawn(move || match second.wait(&waiting, WAIT) {
                Err(DbError::Duplicates { .. }) => println!("second refused"),
                other => println!("second answered {other:?}"),
            });
            // Meanwhile a reader is answered at the durable head, which
            // does not hold the first append's value.
            assert_eq!(db.head(), durable);
            assert_eq!(db.index_of(&x).unwrap(), None);
            if let Ok(Proof::Absence(proof)) = db.prove_absence(&x) {
                proof
                    .verify(kind.arity, kind.hash, &durable, &x)
                    .expect("an absence proof of the durable head");
                println!("absent at {}", durable.size);
            }
            drop(first);
            println!("opened");
            loop {
                std::thread::park();
            }
        }
        Ok(_) => println!("second appended"),
        Err(error) => println!("second refused at once: {error}"),
    }
    println!("opened");
    loop {
        std::thread::park();
    }
}

#[test]
fn kill_9_before_the_fsync_leaves_no_duplicate_answer_for_an_absent_value() {
    for (name, kind) in ["lean", "indexed"].into_iter().zip(kinds()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let victim = Victim::start(
            "pending::pending_crash_child",
            [
                (CHILD_ENV, path.display().to_string()),
                (KIND_ENV, name.to_owned()),
            ],
        );
        assert!(
            victim.opened(Duration::from_secs(120)),
            "{name}: the child never got ready"
        );
        let said = victim.kill();
        assert!(
            said.iter().any(|line| line == "second waits"),
            "{name}: the duplicate of a pending value was answered at once: {said:?}"
        );
        assert!(
            !said.iter().any(|line| line.starts_with("second refused")),
            "{name}: {said:?}"
        );
        // The fsync never happened: the value is absent, and the second
        // client was told nothing about it.
        let db = Database::open(&path).unwrap();
        let size = offset(&kind) + PREFIX;
        assert_eq!(db.head().size, size, "{name}");
        assert_eq!(db.index_of(&raced()).unwrap(), None, "{name}");
        if kind.kind == TreeKind::Indexed {
            // The absence proof served before the crash was of this head.
            assert!(said.contains(&format!("absent at {size}")), "{said:?}");
            let prefix: Vec<Hash> = (0..PREFIX).map(|i| value(40, i)).collect();
            assert_eq!(
                db.head(),
                IndexedTree::from_values(kind, &prefix).unwrap().head()
            );
        }
        db.close().unwrap();
    }
}
