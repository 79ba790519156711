//! The facade's contract, one behaviour per test.

use std::time::Duration;

use cairn_core::{Arity, Hash, HashKind, LeanImt, TreeConfig};
use cairn_db::{Db, DbConfig, DbError, Duplicate, DuplicateOf};

fn tree(arity: u64, hash: HashKind) -> TreeConfig {
    TreeConfig::new(Arity::new(arity).unwrap(), hash)
}

fn config(arity: u64) -> DbConfig {
    let mut config = DbConfig::new(tree(arity, HashKind::Blake3));
    config.store.log_shift = 10;
    config
}

fn value(i: u64) -> Hash {
    cairn_testkit::leaf(7, i)
}

fn values(range: std::ops::Range<u64>) -> Vec<Hash> {
    range.map(value).collect()
}

fn root_of(arity: u64, leaves: &[Hash]) -> Option<Hash> {
    LeanImt::from_leaves(tree(arity, HashKind::Blake3), leaves)
        .unwrap()
        .root()
}

#[test]
fn a_duplicate_batch_is_refused_whole_with_every_duplicate_listed() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(dir.path().join("db"), config(4)).unwrap();
    let history = values(0..100);
    db.append_batch(&history).unwrap();
    let mut batch = values(100..110);
    batch[2] = history[42];
    batch[7] = batch[1];
    let before = db.head();
    let error = db.append_batch(&batch).unwrap_err();
    let DbError::Duplicates {
        batch: len,
        duplicates,
    } = &error
    else {
        panic!("{error}");
    };
    assert_eq!(*len, 10);
    assert_eq!(
        duplicates,
        &vec![
            Duplicate {
                position: 2,
                value: history[42],
                of: DuplicateOf::Leaf(42)
            },
            Duplicate {
                position: 7,
                value: batch[1],
                of: DuplicateOf::Batch(1)
            },
        ]
    );
    let message = error.to_string();
    assert!(
        message.contains("2 duplicate values in a batch of 10"),
        "{message}"
    );
    assert!(message.contains("already leaf 42"), "{message}");
    // Nothing changed, nothing of the batch is visible.
    assert_eq!(db.head(), before);
    assert_eq!(db.index_of(&batch[0]).unwrap(), None);
    assert_eq!(db.index_of(&history[42]).unwrap(), Some(42));
    db.check_set().unwrap();
    // A single duplicate too.
    assert!(matches!(
        db.append(history[0]),
        Err(DbError::Duplicates { .. })
    ));
    assert_eq!(db.size(), 100);
}

#[test]
fn skipping_duplicates_appends_the_new_values_contiguously() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(dir.path().join("db"), config(2)).unwrap();
    db.append_batch(&values(0..10)).unwrap();
    let mut batch = values(10..20);
    batch[0] = value(3);
    batch[5] = batch[4];
    let outcome = db.append_new(&batch).unwrap();
    let appended = outcome.appended.unwrap();
    assert_eq!((appended.first, appended.count), (10, 8));
    assert_eq!(
        outcome
            .skipped
            .iter()
            .map(|d| d.position)
            .collect::<Vec<_>>(),
        vec![0, 5]
    );
    let mut expected = values(0..10);
    expected.extend(
        batch
            .iter()
            .enumerate()
            .filter(|(p, _)| *p != 0 && *p != 5)
            .map(|(_, v)| *v),
    );
    assert_eq!(db.head().root, root_of(2, &expected));
    for (i, v) in expected.iter().enumerate() {
        assert_eq!(db.index_of(v).unwrap(), Some(i as u64));
    }
    // All duplicates: nothing appended, no error.
    let again = db.append_new(&batch).unwrap();
    assert!(again.appended.is_none());
    assert_eq!(again.skipped.len(), 10);
    db.check_set().unwrap();
}

#[test]
fn lookups_survive_checkpoints_and_reopens_and_the_set_file_is_used() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = Db::create(&path, config(4)).unwrap();
    let all = values(0..50_000);
    db.append_batch(&all[..30_000]).unwrap();
    db.checkpoint().unwrap();
    assert_eq!(db.stats().set_checkpoint_size, 30_000);
    assert!(path.join("nullifiers.set").exists());
    for v in &all[30_000..] {
        db.append(*v).unwrap();
    }
    let head = db.head();
    db.close().unwrap();

    // The checkpoint covers 30,000; the other 20,000 are replayed.
    let db = Db::open(&path).unwrap();
    assert_eq!(db.head(), head);
    assert_eq!(db.stats().set_checkpoint_size, 30_000);
    for i in (0..50_000).step_by(7) {
        assert_eq!(db.index_of(&all[i]).unwrap(), Some(i as u64));
    }
    assert_eq!(db.index_of(&value(1 << 40)).unwrap(), None);
    db.check_set().unwrap();
    assert!(matches!(
        db.append(all[49_999]),
        Err(DbError::Duplicates { .. })
    ));
    db.append(value(50_000)).unwrap();
    db.close().unwrap();
}

#[test]
fn a_snapshot_answers_for_its_own_size() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(dir.path().join("db"), config(3)).unwrap();
    db.append_batch(&values(0..10)).unwrap();
    let snapshot = db.snapshot();
    db.append_batch(&values(10..20)).unwrap();
    assert_eq!(snapshot.size(), 10);
    assert_eq!(snapshot.index_of(&value(5)).unwrap(), Some(5));
    assert_eq!(snapshot.index_of(&value(15)).unwrap(), None);
    assert_eq!(db.snapshot().index_of(&value(15)).unwrap(), Some(15));
}

#[test]
fn appended_values_are_found_before_they_are_durable() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(2);
    config.store.flush_interval = None;
    config.store.checkpoint = Default::default();
    let db = Db::create(dir.path().join("db"), config).unwrap();
    let appended = db.append(value(1)).unwrap();
    assert_eq!(db.durable_size(), 0);
    assert_eq!(db.index_of(&value(1)).unwrap(), Some(0));
    appended.token.wait(Duration::from_secs(10)).unwrap();
    assert_eq!(db.durable_size(), 1);
}

#[test]
fn the_stored_config_wins_and_a_contradiction_names_both_values() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    Db::create(&path, config(8)).unwrap().close().unwrap();
    let db = Db::open(&path).unwrap();
    assert_eq!(db.config().tree().arity.get(), 8);
    assert!(db.is_unique());
    drop(db);
    let mut off = config(8);
    off.unique = false;
    let error = Db::open_with(&path, off).unwrap_err().to_string();
    assert!(
        error.contains("nullifier set (unique) is on in the database, off was asked for"),
        "{error}"
    );
    let error = Db::open_with(&path, config(4)).unwrap_err().to_string();
    assert!(error.contains("arity is 8"), "{error}");
}

#[test]
fn without_the_set_duplicates_are_appended_and_lookups_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let mut config = config(2);
    config.unique = false;
    let db = Db::create(&path, config).unwrap();
    db.append(value(1)).unwrap();
    db.append(value(1)).unwrap();
    assert_eq!(db.size(), 2);
    assert!(matches!(db.index_of(&value(1)), Err(DbError::NoSet)));
    assert!(matches!(db.index_of_many(&[value(1)]), Err(DbError::NoSet)));
    assert!(matches!(
        db.snapshot().index_of_many(&[value(1)]),
        Err(DbError::NoSet)
    ));
    assert!(db.stats().set.is_none());
    db.close().unwrap();
    let db = Db::open(&path).unwrap();
    assert!(!db.is_unique());
    assert!(!path.join("nullifiers.set").exists());
}

#[test]
fn bad_input_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(
        dir.path().join("db"),
        DbConfig::new(tree(2, HashKind::Poseidon)),
    )
    .unwrap();
    assert!(db.append_batch(&[]).is_err());
    // 2^256 - 1 is not a BN254 field element.
    let error = db.append_batch(&[[0u8; 32], [0xff; 32]]).unwrap_err();
    assert!(error.to_string().contains("position 1"), "{error}");
    assert_eq!(db.size(), 0);
    assert_eq!(db.index_of(&[0u8; 32]).unwrap(), None);
    db.append([0u8; 32]).unwrap();
    assert_eq!(db.index_of(&[0u8; 32]).unwrap(), Some(0));
}

/// A second open in the same process once blamed "another process".
#[test]
fn a_second_open_in_the_same_process_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = Db::create(&path, config(2)).unwrap();
    let error = Db::open(&path).unwrap_err().to_string();
    assert!(error.contains("already open in this process"), "{error}");
    assert!(!error.contains("another process"), "{error}");
    db.close().unwrap();
    Db::open(&path).unwrap();
}
