//! Online backups: a consistent copy of a live database, opening as a
//! normal database with the same size, root, heads and set.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use cairn_core::{Hash, HashKind};
use cairn_db::{BlockTag, Db, DbError};
use cairn_store::StoreError;

use crate::support::{config, value};

const WAIT: Duration = Duration::from_secs(10);

/// Opens `dest` as a database (verifying every level) and checks it holds
/// exactly `leaves`, with `root`, and a set answering for each of them.
fn assert_copy(dest: &std::path::Path, leaves: &[Hash], root: Option<Hash>) {
    let mut config = config(4, HashKind::Blake3);
    config.store.verify_on_open = true;
    config.store.log_shift = cairn_store::stored_config(&cairn_store::StdFs, dest)
        .unwrap()
        .log_shift;
    let copy = Db::open_with(dest, config).unwrap();
    assert_eq!(copy.size(), leaves.len() as u64);
    assert_eq!(copy.head().root, root);
    copy.check_set().unwrap();
    for (index, leaf) in leaves.iter().enumerate().step_by(97) {
        assert_eq!(copy.index_of(leaf).unwrap(), Some(index as u64));
        assert_eq!(copy.leaf(index as u64), Some(*leaf));
    }
    // A normal database: it appends and reopens.
    copy.append([0xee; 32]).unwrap().token.wait(WAIT).unwrap();
    copy.close().unwrap();
    assert_eq!(Db::open(dest).unwrap().size(), leaves.len() as u64 + 1);
}

/// Bytes allocated to the files under `dir`, and how many files.
fn allocated(dir: &std::path::Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt as _;
    let (mut bytes, mut files) = (0, 0);
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        if meta.is_dir() {
            let (b, f) = allocated(&entry.path());
            bytes += b;
            files += f;
        } else {
            bytes += meta.blocks() * 512;
            files += 1;
        }
    }
    (bytes, files)
}

#[test]
fn a_backup_of_a_database_opens_with_its_size_root_heads_and_set() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = Db::create(&path, config(4, HashKind::Blake3)).unwrap();
    let leaves: Vec<Hash> = (0..2500).map(|i| value(5, i)).collect();
    db.append_tagged(&leaves[..1000], BlockTag::number(10))
        .unwrap();
    db.checkpoint().unwrap();
    db.append_tagged(&leaves[1000..2048], BlockTag::number(11))
        .unwrap();
    db.append_batch(&leaves[2048..]).unwrap();
    // Not flushed yet: the backup flushes to take a durable state.
    let backup = db.backup_to(dir.path().join("copy")).unwrap();
    assert_eq!(backup.head, db.head());
    assert_eq!(backup.tagged_heads, 2);
    assert_eq!(db.durable_size(), 2500);
    let copy = Db::open(dir.path().join("copy")).unwrap();
    assert_eq!(copy.heads(0, 10), db.heads(0, 10));
    assert_eq!(copy.finalized_size(), 1000);
    assert_eq!(copy.stats().set_checkpoint_size, 2500);
    drop(copy);
    assert_copy(&dir.path().join("copy"), &leaves, db.head().root);
    // Only used bytes were written: the copy allocates no more than them
    // (and a partial page per file), whatever its files' apparent sizes.
    let (allocated, files) = allocated(&dir.path().join("copy"));
    assert!(
        allocated <= backup.bytes + 4096 * files + 32 * 4096,
        "{allocated} bytes allocated in {files} files for {} written",
        backup.bytes
    );
    db.close().unwrap();
}

#[test]
fn a_backup_of_a_read_only_open_copies_what_it_opened_and_an_empty_tree_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = Db::create(&path, config(4, HashKind::Blake3)).unwrap();
    let reader = Db::open_read_only(&path).unwrap();
    reader.backup_to(dir.path().join("empty")).unwrap();
    assert_copy(&dir.path().join("empty"), &[], None);
    let leaves: Vec<Hash> = (0..1024).map(|i| value(6, i)).collect();
    db.append_batch(&leaves).unwrap().token.wait(WAIT).unwrap();
    let reader = Db::open_read_only(&path).unwrap();
    // The writer goes on; the read-only open copies what it saw.
    db.append([0xaa; 32]).unwrap();
    let backup = reader.backup_to(dir.path().join("copy")).unwrap();
    assert_eq!(backup.head.size, 1024);
    assert_copy(&dir.path().join("copy"), &leaves, reader.head().root);
    db.close().unwrap();
}

#[test]
fn a_backup_refuses_a_destination_that_is_not_empty() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(dir.path().join("db"), config(2, HashKind::Blake3)).unwrap();
    std::fs::create_dir(dir.path().join("full")).unwrap();
    std::fs::write(dir.path().join("full/notes"), b"mine").unwrap();
    match db.backup_to(dir.path().join("full")) {
        Err(DbError::Store(StoreError::NotEmpty { .. })) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(
        std::fs::read(dir.path().join("full/notes")).unwrap(),
        b"mine"
    );
}

/// A writer appends as fast as it can while backups run: each copy holds
/// a durable state the writer had, at least the size durable when the
/// backup began.
#[test]
fn backups_under_load_hold_a_state_the_writer_had() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let mut writer_config = config(4, HashKind::Blake3);
    writer_config.store.log_shift = 16;
    writer_config.store.flush_interval = Some(Duration::from_millis(2));
    let db = Arc::new(Db::create(&path, writer_config).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let db = Arc::clone(&db);
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut next = 0;
            while !stop.load(Ordering::Acquire) && next < 1 << 20 {
                let batch: Vec<Hash> = (0..500).map(|i| value(7, next + i)).collect();
                next += 500;
                db.append_batch(&batch).unwrap();
            }
        })
    };
    for round in 0..3 {
        let durable = db.durable_size();
        let dest = dir.path().join(format!("copy{round}"));
        let backup = db.backup_to(&dest).unwrap();
        assert!(backup.head.size >= durable);
        let leaves: Vec<Hash> = (0..backup.head.size).map(|i| value(7, i)).collect();
        let root = db.snapshot().view(backup.head.size).unwrap().head().root;
        assert_eq!(backup.head.root, root);
        assert_copy(&dest, &leaves, root);
    }
    stop.store(true, Ordering::Release);
    writer.join().unwrap();
}
