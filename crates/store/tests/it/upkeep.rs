//! Failures that must not stop acknowledgements: a checkpoint, a
//! finalization or a rollback that cannot create its files (no descriptor
//! left, no space) fails alone, changes nothing in memory, is reported in
//! the store's health and is tried again; only the log's own writes and
//! syncs poison the store.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_store::{
    CheckpointPolicy, FLAG_EXPLICIT_FINALITY, Fs, Store, StoreConfig, StoreError, StoreHealth,
};
use cairn_testkit::sim::OpenFault;
use cairn_testkit::sim::{CrashMode, SimFs};

use crate::support::*;

fn sim_store(fs: &SimFs, config: StoreConfig) -> Store {
    Store::create(Arc::new(fs.clone()), Path::new("/db"), config).unwrap()
}

fn reopen(fs: &SimFs, config: StoreConfig) -> Store {
    let config = StoreConfig {
        flush_interval: None,
        checkpoint: CheckpointPolicy::default(),
        ..config
    };
    Store::open(
        Arc::new(fs.clone()) as Arc<dyn Fs>,
        Path::new("/db"),
        config,
    )
    .unwrap()
}

/// Rollbacks need finality to be explicit (else every checkpoint
/// finalizes what it covers).
fn explicit() -> StoreConfig {
    StoreConfig {
        flags: FLAG_EXPLICIT_FINALITY,
        ..config(4, 10)
    }
}

fn append(store: &Store, range: std::ops::Range<u64>) {
    store
        .append_batch(&leaves(range))
        .unwrap()
        .token
        .wait(WAIT)
        .unwrap();
}

/// Whether `error` is the operating system's error `errno`.
fn is_os_error(error: &StoreError, errno: i32) -> bool {
    let want = std::io::Error::from_raw_os_error(errno).to_string();
    matches!(error, StoreError::Io { message, .. } if *message == want)
}

/// Polls `health` until `done` holds, for at most 60 s.
fn wait_for(store: &Store, what: &str, done: impl Fn(&StoreHealth) -> bool) -> StoreHealth {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let health = store.health();
        if done(&health) {
            return health;
        }
        assert!(Instant::now() < deadline, "{what}: {health:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The faults of the fault-injection run: every open failing with EMFILE,
/// or every creation with ENOSPC.
const FAULTS: [(OpenFault, i32); 2] = [(OpenFault::TooManyFiles, 24), (OpenFault::NoSpace, 28)];

#[test]
fn a_checkpoint_or_finalization_without_descriptors_or_space_fails_alone() {
    for (fault, errno) in FAULTS {
        let fs = SimFs::new();
        let store = sim_store(&fs, config(4, 10));
        append(&store, 0..100);
        let head = store.head();
        fs.fail_opens(fault, "");
        let error = store.checkpoint().unwrap_err();
        assert!(is_os_error(&error, errno), "{fault:?}: {error:?}");
        let error = store.finalize(60).unwrap_err();
        assert!(is_os_error(&error, errno), "{fault:?}: {error:?}");
        assert!(fs.counters().open_faults >= 2, "the fault was met");
        // Nothing changed, nothing stopped.
        assert_eq!(store.finalized_size(), 0);
        assert_eq!(store.stats().checkpoint_number, 0);
        assert_eq!(store.head(), head);
        let health = store.health();
        assert!(health.failure.is_none(), "{health:?}");
        assert!(store.durable_head().failure.is_none());
        let failing = health.checkpoint.as_ref().expect("reported");
        assert_eq!(failing.consecutive, 2);
        assert!(is_os_error(&failing.error, errno), "{failing:?}");
        assert_eq!(failing.retry_in, None, "no background thread here");
        assert!(health.is_degraded());
        append(&store, 100..200);
        // Once the files can be created again, so can the checkpoint.
        fs.clear_open_faults();
        assert_eq!(store.finalize(60).unwrap(), 60);
        let health = store.health();
        assert!(health.checkpoint.is_none() && !health.is_degraded());
        assert_eq!(health.checkpoint_failures, 2);
        append(&store, 200..210);
        drop(store);
        let crashed = fs.crash(&CrashMode::DropUnsynced, &mut rand::thread_rng());
        let store = reopen(&crashed, config(4, 10));
        assert_eq!(check_prefix(&store, 4), 210);
        assert_eq!(store.stats().checkpoint_size, 200);
    }
}

#[test]
fn the_background_thread_retries_a_failed_checkpoint_while_appends_go_on() {
    for (fault, errno) in FAULTS {
        let fs = SimFs::new();
        let config = StoreConfig {
            flush_interval: Some(Duration::from_millis(5)),
            checkpoint: CheckpointPolicy {
                every_leaves: Some(50),
                ..CheckpointPolicy::default()
            },
            // One log file holds every leaf: creating the next one is a
            // log write, which would stop acknowledgements.
            ..config(4, 14)
        };
        let store = sim_store(&fs, config.clone());
        append(&store, 0..20);
        fs.fail_opens(fault, "");
        let mut appended = 20;
        let health = loop {
            append(&store, appended..appended + 20);
            appended += 20;
            let health = store.health();
            if health
                .checkpoint
                .as_ref()
                .is_some_and(|f| f.consecutive >= 2)
            {
                break health;
            }
            assert!(appended < 1000, "no checkpoint was tried: {health:?}");
            std::thread::sleep(Duration::from_millis(20));
        };
        let failing = health.checkpoint.unwrap();
        assert!(is_os_error(&failing.error, errno), "{failing:?}");
        assert!(failing.retry_in.is_some(), "{failing:?}");
        assert!(health.failure.is_none());
        assert_eq!(store.stats().checkpoint_size, 0);
        append(&store, appended..appended + 20);
        appended += 20;
        fs.clear_open_faults();
        let health = wait_for(&store, "the retry succeeds", |h| h.checkpoint.is_none());
        assert!(health.checkpoint_failures >= 2);
        assert!(store.stats().checkpoint_size >= 50);
        drop(store);
        let crashed = fs.crash(&CrashMode::DropUnsynced, &mut rand::thread_rng());
        assert_eq!(check_prefix(&reopen(&crashed, config), 4), appended);
    }
}

#[test]
fn a_rollback_that_cannot_publish_its_checkpoint_changes_nothing() {
    for (fault, errno) in FAULTS {
        let fs = SimFs::new();
        let store = sim_store(&fs, explicit());
        append(&store, 0..100);
        store.checkpoint().unwrap();
        append(&store, 100..120);
        let head = store.head();
        let durable = store.durable_head();
        fs.fail_opens(fault, "");
        let error = store.truncate(80).unwrap_err();
        assert!(is_os_error(&error, errno), "{fault:?}: {error:?}");
        // The tree as it was, every leaf readable, the durable head kept.
        assert_eq!(store.head(), head);
        assert_eq!(store.size(), 120);
        assert_eq!(store.leaf(110), Some(leaf(110)));
        assert_eq!(store.durable_size(), 120);
        assert_eq!(store.durable_head().root, durable.root);
        assert_eq!(store.snapshot().head(), head);
        let health = store.health();
        assert!(
            health.failure.is_none() && health.checkpoint.is_some(),
            "{health:?}"
        );
        // Appends go on at the old end.
        let token = store.append_batch(&leaves(120..130)).unwrap();
        assert_eq!(token.first, 120);
        token.token.wait(WAIT).unwrap();
        fs.clear_open_faults();
        // The same rollback succeeds once the files can be created.
        let rolled = store.truncate(80).unwrap();
        assert_eq!(rolled.size, 80);
        assert!(matches!(
            token.token.wait(WAIT),
            Err(StoreError::RolledBack { end: 130, to: 80 })
        ));
        assert!(store.health().checkpoint.is_none());
        append(&store, 80..90);
        drop(store);
        let crashed = fs.crash(&CrashMode::DropUnsynced, &mut rand::thread_rng());
        assert_eq!(check_prefix(&reopen(&crashed, explicit()), 4), 90);
    }
}

/// Past the rename, the rolled-back checkpoint is in place but may not be
/// durable: memory takes the rollback and acknowledgements stop (the log
/// is rewound for a checkpoint a crash may not keep).
#[test]
fn a_rollback_whose_checkpoint_is_renamed_but_not_synced_stops_acknowledgements() {
    let fs = SimFs::new();
    let store = sim_store(&fs, explicit());
    append(&store, 0..100);
    store.checkpoint().unwrap();
    // The rollback writes no node (its size is below the checkpoint's):
    // the first directory sync is the checkpoint's, after its rename.
    fs.fail_nth_sync_dir(1);
    let error = store.truncate(80).unwrap_err();
    assert!(
        error.to_string().contains("injected fsync failure"),
        "{error}"
    );
    assert_eq!(store.size(), 80);
    assert!(store.health().failure.is_some());
    assert!(matches!(
        store.append(leaf(80)),
        Err(StoreError::Poisoned { .. })
    ));
    drop(store);
    for mode in [CrashMode::DropUnsynced, CrashMode::KeepUnsynced] {
        let crashed = fs.crash(&mode, &mut rand::thread_rng());
        let size = check_prefix(&reopen(&crashed, explicit()), 4);
        assert!(size == 80 || size == 100, "{mode:?}: {size}");
    }
}
