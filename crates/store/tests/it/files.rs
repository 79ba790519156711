//! One writer, whatever happens to the names in its directory: the lock is
//! the directory's own (removing `LOCK` lets no second writer in), and a
//! running store puts back every file a reopen reads that was removed or
//! replaced under it, from what it holds, so nothing acknowledged is lost;
//! what it cannot put back it reports, and stops acknowledging when
//! acknowledgements go to that file.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairn_store::fs::OpenMode;
use cairn_store::{BlockTag, FileChange, FileOutcome, Fs, Store, StoreConfig, StoreError};
use cairn_testkit::sim::OpenFault;
use cairn_testkit::sim::{CrashMode, SimFs};

use crate::support::*;

fn append(store: &Store, range: std::ops::Range<u64>) {
    store
        .append_batch(&leaves(range))
        .unwrap()
        .token
        .wait(WAIT)
        .unwrap();
}

fn read(fs: &dyn Fs, path: &Path) -> Vec<u8> {
    let file = fs.open(path, OpenMode::ReadOnly).unwrap();
    let mut bytes = vec![0u8; file.len().unwrap() as usize];
    file.read_exact_at(&mut bytes, 0).unwrap();
    bytes
}

/// Removes `path`, and with `replace` creates a new file of junk there.
fn damage(fs: &dyn Fs, path: &Path, replace: bool) {
    fs.remove_file(path).unwrap();
    if replace {
        let file = fs.open(path, OpenMode::CreateNew).unwrap();
        file.write_at(b"not what the store wrote", 0).unwrap();
        file.sync_data().unwrap();
    }
}

/// Every name a reopen reads (the log has two files: the second is the one
/// appends go to).
const NAMES: [&str; 7] = [
    "cairn.meta",
    "LOCK",
    "checkpoint",
    "heads",
    "levels/level-01.nodes",
    "log/000000000000.log",
    "log/000000000001.log",
];

/// A store of 1,500 leaves in two log files, a checkpoint (level files)
/// and tagged heads.
fn populated(fs: Arc<dyn Fs>, dir: &Path) -> Store {
    let store = Store::create(fs, dir, config(4, 10)).unwrap();
    append(&store, 0..1000);
    store.checkpoint().unwrap();
    store
        .append_tagged(&leaves(1000..1500), BlockTag::number(7))
        .unwrap()
        .token
        .wait(WAIT)
        .unwrap();
    store
}

fn open(fs: Arc<dyn Fs>, dir: &Path) -> Result<Store, StoreError> {
    Store::open(fs, dir, config(4, 10))
}

/// Each name in turn, removed and then removed-and-replaced, under a store
/// that keeps appending: no second writer opens meanwhile, the store puts
/// the file back with the bytes it had, reports it, and reopens (after a
/// crash too) with everything acknowledged and the tagged heads.
fn every_name_is_put_back(fs: Arc<dyn Fs>, base: &Path, crashed: impl Fn() -> Arc<dyn Fs>) {
    for (number, &name) in NAMES.iter().enumerate() {
        for replace in [false, true] {
            let case = format!("{name} (replaced: {replace})");
            let dir = &base.join(format!("{number}-{replace}"));
            let store = populated(Arc::clone(&fs), dir);
            let path = dir.join(name);
            let before = read(&*fs, &path);
            damage(&*fs, &path, replace);
            // The lock is the directory's: no name inside it matters.
            match open(Arc::clone(&fs), dir) {
                Err(
                    StoreError::Locked { .. }
                    | StoreError::OpenInProcess { .. }
                    | StoreError::NotAStore { .. },
                ) => {}
                other => panic!("{case}: a second writer must not open: {other:?}"),
            }
            store.check_files();
            let health = store.health();
            let event = health
                .file_events
                .iter()
                .find(|e| e.path == path)
                .unwrap_or_else(|| panic!("{case}: not reported: {health:?}"));
            let change = if replace {
                FileChange::Replaced
            } else {
                FileChange::Removed
            };
            assert_eq!(
                (event.change, &event.outcome),
                (change, &FileOutcome::Restored),
                "{case}"
            );
            assert!(
                health.failure.is_none() && !health.is_degraded(),
                "{case}: {health:?}"
            );
            if name != "LOCK" {
                assert!(
                    read(&*fs, &path) == before,
                    "{case}: put back byte for byte"
                );
            }
            // Appends and checkpoints go on, into the files put back.
            append(&store, 1500..1600);
            store.checkpoint().unwrap();
            append(&store, 1600..1700);
            assert!(
                open(Arc::clone(&fs), dir).is_err(),
                "{case}: still one writer"
            );
            drop(store);
            for fs in [Arc::clone(&fs), crashed()] {
                let store = open(fs, dir).unwrap();
                assert_eq!(check_prefix(&store, 4), 1700, "{case}");
                assert_eq!(store.heads(0, 10).len(), 1, "{case}");
            }
        }
    }
}

#[test]
fn every_file_removed_or_replaced_under_a_simulated_store_is_put_back() {
    let sim = SimFs::new();
    let fs: Arc<dyn Fs> = Arc::new(sim.clone());
    let crashed = || -> Arc<dyn Fs> {
        Arc::new(sim.crash(&CrashMode::DropUnsynced, &mut rand::thread_rng()))
    };
    every_name_is_put_back(fs, Path::new("/"), crashed);
}

#[test]
fn every_file_removed_or_replaced_under_a_store_on_disk_is_put_back() {
    let temp = tempfile::tempdir().unwrap();
    every_name_is_put_back(std_fs(), temp.path(), std_fs);
}

/// `LOCK` gone: an open in this process is still refused as this
/// process's, and a read-only open still sees the writer.
#[test]
fn removing_the_lock_file_lets_no_second_handle_in() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("db");
    let store = Store::create(std_fs(), &dir, config(4, 10)).unwrap();
    append(&store, 0..10);
    std::fs::remove_file(dir.join("LOCK")).unwrap();
    assert!(matches!(
        open(std_fs(), &dir),
        Err(StoreError::OpenInProcess { .. })
    ));
    // Through another path to the same directory too.
    let link = temp.path().join("link");
    std::os::unix::fs::symlink(&dir, &link).unwrap();
    assert!(matches!(
        open(std_fs(), &link),
        Err(StoreError::OpenInProcess { .. })
    ));
    let reader = Store::open_read_only(std_fs(), &dir, config(4, 10)).unwrap();
    assert_eq!(reader.size(), 10);
    drop(reader);
    drop(store);
    // Released with the store: the next writer opens (and takes LOCK
    // again, for older versions).
    let store = open(std_fs(), &dir).unwrap();
    assert_eq!(check_prefix(&store, 4), 10);
    assert!(dir.join("LOCK").exists());
}

/// The log file appends go to, removed while no descriptor is left to
/// copy it back: acknowledging more would acknowledge leaves that are not
/// durable at its name, so the store stops; once it can, it still puts
/// the file back, and the reopen finds every leaf acknowledged.
#[test]
fn a_log_file_that_cannot_be_put_back_stops_acknowledgements() {
    let fs = SimFs::new();
    let dir = Path::new("/db");
    let store = Store::create(Arc::new(fs.clone()), dir, config(4, 10)).unwrap();
    append(&store, 0..100);
    let path = dir.join("log/000000000000.log");
    fs.remove_file(&path).unwrap();
    fs.fail_opens(OpenFault::TooManyFiles, "");
    store.check_files();
    let health = store.health();
    assert!(
        matches!(&health.failure, Some(StoreError::Replaced { path: p, .. }) if *p == path),
        "{health:?}"
    );
    assert_eq!(
        health.file_events.last().map(|e| &e.outcome),
        Some(&FileOutcome::Stopped)
    );
    assert!(matches!(
        store.append(leaf(100)),
        Err(StoreError::Poisoned { .. })
    ));
    fs.clear_open_faults();
    store.check_files();
    let health = store.health();
    assert_eq!(
        health.file_events.last().map(|e| &e.outcome),
        Some(&FileOutcome::Restored)
    );
    assert!(health.failure.is_some(), "stopped until reopened");
    drop(store);
    let crashed = fs.crash(&CrashMode::DropUnsynced, &mut rand::thread_rng());
    let store = open(Arc::new(crashed), dir).unwrap();
    assert_eq!(check_prefix(&store, 4), 100);
}

/// A level file that cannot be put back stops checkpoints (their nodes
/// would not be found at its name), not appends.
#[test]
fn a_level_file_that_cannot_be_put_back_stops_checkpoints_not_appends() {
    let fs = SimFs::new();
    let dir = Path::new("/db");
    let store = Store::create(Arc::new(fs.clone()), dir, config(4, 10)).unwrap();
    append(&store, 0..500);
    store.checkpoint().unwrap();
    let path: PathBuf = dir.join("levels/level-01.nodes");
    fs.remove_file(&path).unwrap();
    fs.fail_opens(OpenFault::NoSpace, "restore.tmp");
    store.check_files();
    let health = store.health();
    assert_eq!(health.unrestored, std::slice::from_ref(&path), "{health:?}");
    assert!(health.is_degraded() && health.failure.is_none());
    append(&store, 500..600);
    let error = store.checkpoint().unwrap_err();
    assert!(
        matches!(&error, StoreError::Replaced { path: p, .. } if *p == path),
        "{error:?}"
    );
    append(&store, 600..700);
    fs.clear_open_faults();
    store.check_files();
    store.checkpoint().unwrap();
    let health = store.health();
    assert!(!health.is_degraded(), "{health:?}");
    drop(store);
    let crashed = fs.crash(&CrashMode::DropUnsynced, &mut rand::thread_rng());
    let store = open(Arc::new(crashed), dir).unwrap();
    assert_eq!(check_prefix(&store, 4), 700);
    assert_eq!(store.stats().checkpoint_size, 700);
}

/// The directory renamed away and another put at its path: nothing the
/// store writes by path would reach the store, so it stops.
#[test]
fn a_directory_replaced_under_the_store_stops_acknowledgements() {
    let fs = SimFs::new();
    let store = Store::create(Arc::new(fs.clone()), Path::new("/db"), config(4, 10)).unwrap();
    append(&store, 0..10);
    fs.rename(Path::new("/db"), Path::new("/moved")).unwrap();
    fs.create_dir(Path::new("/db")).unwrap();
    store.check_files();
    let health = store.health();
    assert!(
        matches!(&health.failure, Some(StoreError::Replaced { path, .. }) if path == Path::new("/db")),
        "{health:?}"
    );
    assert!(store.append(leaf(10)).is_err());
}

/// A read-only store checks nothing and writes nothing.
#[test]
fn a_read_only_store_puts_nothing_back() {
    let fs = SimFs::new();
    let dir = Path::new("/db");
    let store = Store::create(Arc::new(fs.clone()), dir, config(4, 10)).unwrap();
    append(&store, 0..10);
    drop(store);
    let config: StoreConfig = config(4, 10);
    let reader = Store::open_read_only(Arc::new(fs.clone()), dir, config).unwrap();
    fs.remove_file(&dir.join("LOCK")).unwrap();
    fs.clear_trace();
    reader.check_files();
    assert_eq!(fs.op_count(), 0);
    assert!(reader.health().file_events.is_empty());
}

/// The files a commit writes, removed (or replaced) between two commits:
/// the next commit puts them back before it acknowledges anything, so no
/// acknowledgement rests on a file without its name, with no check run.
#[test]
fn a_commit_is_acknowledged_only_with_its_files_at_their_names() {
    for replace in [false, true] {
        let fs = SimFs::new();
        let dir = Path::new("/db");
        let store = Store::create(Arc::new(fs.clone()), dir, config(4, 10)).unwrap();
        store
            .append_tagged(&leaves(0..10), BlockTag::number(1))
            .unwrap()
            .token
            .wait(WAIT)
            .unwrap();
        let log = dir.join("log/000000000000.log");
        let heads = dir.join("heads");
        damage(&fs, &log, replace);
        damage(&fs, &heads, replace);
        store
            .append_tagged(&leaves(10..20), BlockTag::number(2))
            .unwrap()
            .token
            .wait(WAIT)
            .unwrap();
        let events = store.health().file_events;
        for path in [&log, &heads] {
            assert!(
                events
                    .iter()
                    .any(|e| e.path == *path && e.outcome == FileOutcome::Restored),
                "{path:?}: {events:?}"
            );
        }
        drop(store);
        let crashed = fs.crash(&CrashMode::DropUnsynced, &mut rand::thread_rng());
        let store = open(Arc::new(crashed), dir).unwrap();
        assert_eq!(check_prefix(&store, 4), 20);
        assert_eq!(store.heads(0, 10).len(), 2);
    }
}

/// ... and when it cannot put a file back, the commit fails: nothing is
/// acknowledged that a reopen would not find.
#[test]
fn a_commit_whose_log_file_cannot_be_put_back_is_not_acknowledged() {
    let fs = SimFs::new();
    let dir = Path::new("/db");
    let store = Store::create(Arc::new(fs.clone()), dir, config(4, 10)).unwrap();
    append(&store, 0..10);
    let log = dir.join("log/000000000000.log");
    fs.remove_file(&log).unwrap();
    fs.fail_opens(OpenFault::NoSpace, "restore.tmp");
    let waited = store
        .append_batch(&leaves(10..20))
        .unwrap()
        .token
        .wait(WAIT);
    assert!(
        matches!(&waited, Err(StoreError::Replaced { path, .. }) if *path == log),
        "{waited:?}"
    );
    assert!(matches!(
        store.append(leaf(20)),
        Err(StoreError::Poisoned { .. })
    ));
    assert_eq!(store.durable_size(), 10);
    fs.clear_open_faults();
    store.check_files();
    drop(store);
    let crashed = fs.crash(&CrashMode::DropUnsynced, &mut rand::thread_rng());
    let store = open(Arc::new(crashed), dir).unwrap();
    assert!(check_prefix(&store, 4) >= 10);
}
