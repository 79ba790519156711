//! Read-only opens: beside a live writer, racing its appends, checkpoints,
//! tiering and rollbacks; writing nothing; writers still excluding each
//! other.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cairn_core::{Hash, HashKind};
use cairn_db::{Db, DbError};
use cairn_store::StoreError;
use cairn_store::fs::Fs;
use cairn_testkit::sim::SimFs;

use crate::support::{config, value};

const WAIT: Duration = Duration::from_secs(10);

#[test]
fn a_read_only_open_beside_a_writer_sees_its_durable_state_and_refuses_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let writer = Db::create(&path, config(4, HashKind::Blake3)).unwrap();
    let leaves: Vec<Hash> = (0..3000).map(|i| value(1, i)).collect();
    writer.append_batch(&leaves[..2000]).unwrap();
    writer.checkpoint().unwrap();
    writer
        .append_batch(&leaves[2000..])
        .unwrap()
        .token
        .wait(WAIT)
        .unwrap();
    let reader = Db::open_read_only(&path).unwrap();
    assert_eq!(reader.head(), writer.head());
    assert_eq!(reader.durable_size(), 3000);
    assert_eq!(reader.index_of(&leaves[2500]).unwrap(), Some(2500));
    let refused = |result: Result<(), DbError>, what: &str| match result {
        Err(DbError::Store(StoreError::ReadOnly { what: said, .. })) => assert_eq!(said, what),
        other => panic!("{what}: {other:?}"),
    };
    refused(reader.append([9; 32]).map(drop), "append");
    refused(reader.append_new(&[[9; 32]]).map(drop), "append");
    refused(reader.checkpoint().map(drop), "checkpoint");
    refused(reader.truncate(2999).map(drop), "roll back");
    refused(reader.finalize(3000).map(drop), "finalize");
    // Appends after the open are not seen by it; a new open sees them.
    writer.append([7; 32]).unwrap().token.wait(WAIT).unwrap();
    assert_eq!(reader.size(), 3000);
    assert_eq!(Db::open_read_only(&path).unwrap().size(), 3001);
    reader.close().unwrap();
    writer.close().unwrap();
}

#[test]
fn two_writers_still_exclude_each_other_beside_a_reader() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let writer = Db::create(&path, config(2, HashKind::Blake3)).unwrap();
    let reader = Db::open_read_only(&path).unwrap();
    match Db::open(&path) {
        Err(DbError::Store(StoreError::OpenInProcess { .. })) => {}
        other => panic!("a second writer opened: {other:?}"),
    }
    drop(writer);
    // With the writer gone (and a reader open), a writer opens.
    let writer = Db::open(&path).unwrap();
    writer.append([1; 32]).unwrap();
    drop(reader);
    writer.close().unwrap();
}

/// A file's observable state: its length, modification time and bytes.
type Listing = BTreeMap<String, (u64, std::time::SystemTime, Vec<u8>)>;

fn listing(dir: &Path) -> Listing {
    let mut out = Listing::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let entry = entry.unwrap();
            let meta = entry.metadata().unwrap();
            let name = entry
                .path()
                .strip_prefix(dir)
                .unwrap()
                .display()
                .to_string();
            if meta.is_dir() {
                stack.push(entry.path());
                out.insert(name, (0, meta.modified().unwrap(), Vec::new()));
            } else {
                let bytes = std::fs::read(entry.path()).unwrap();
                out.insert(name, (meta.len(), meta.modified().unwrap(), bytes));
            }
        }
    }
    out
}

/// A directory with what a writer's recovery would repair: a crashed
/// checkpoint's and set checkpoint's temporaries, and a torn last commit.
fn directory_with_leftovers(path: &Path) {
    let mut config = config(4, HashKind::Blake3);
    config.store.tier_below = 2;
    let db = Db::create(path, config).unwrap();
    db.append_batch(&(0..1500).map(|i| value(2, i)).collect::<Vec<_>>())
        .unwrap();
    db.checkpoint().unwrap();
    db.append_batch(&(1500..1600).map(|i| value(2, i)).collect::<Vec<_>>())
        .unwrap();
    db.close().unwrap();
    std::fs::write(path.join("checkpoint.tmp"), b"half a checkpoint").unwrap();
    std::fs::write(path.join("nullifiers.set.tmp"), b"half a set").unwrap();
    // Leaves of a commit that never wrote its frame, past the durable end.
    let log = std::fs::OpenOptions::new()
        .write(true)
        .open(path.join("log/000000000001.log"))
        .unwrap();
    std::os::unix::fs::FileExt::write_all_at(&log, &[0xab; 64], 4096 + 32 * 600).unwrap();
}

#[test]
fn a_read_only_open_leaves_every_file_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    directory_with_leftovers(&path);
    let before = listing(&path);
    // Coarse timestamps would hide a rewrite made within the same tick.
    std::thread::sleep(Duration::from_millis(20));
    let reader = Db::open_read_only(&path).unwrap();
    assert_eq!(reader.size(), 1600);
    reader.check_set().unwrap();
    let snapshot = reader.snapshot();
    snapshot.prove(1599).unwrap();
    reader.close().unwrap();
    assert_eq!(listing(&path), before);
    // A writer's open repairs what the reader left alone.
    Db::open(&path).unwrap().close().unwrap();
    assert!(!path.join("checkpoint.tmp").exists());
}

#[test]
fn a_read_only_open_makes_no_write_rename_or_removal_on_the_simulated_file_system() {
    let fs = SimFs::new();
    let shared: Arc<dyn Fs> = Arc::new(fs.clone());
    let path = Path::new("/db");
    let db = Db::create_in(Arc::clone(&shared), path, config(3, HashKind::Blake3)).unwrap();
    db.append_batch(&(0..1200).map(|i| value(3, i)).collect::<Vec<_>>())
        .unwrap();
    db.checkpoint().unwrap();
    let token = db
        .append_batch(&(1200..1300).map(|i| value(3, i)).collect::<Vec<_>>())
        .unwrap()
        .token;
    token.wait(WAIT).unwrap();
    db.close().unwrap();
    let stale = shared
        .open(
            &path.join("checkpoint.tmp"),
            cairn_store::fs::OpenMode::CreateNew,
        )
        .unwrap();
    stale.write_at(b"never published", 0).unwrap();
    drop(stale);
    fs.clear_trace();
    let reader = Db::open_read_only_in(Arc::clone(&shared), path, None).unwrap();
    assert_eq!(reader.size(), 1300);
    reader.close().unwrap();
    for index in 0..fs.op_count() {
        let op = fs.describe_op(index);
        assert!(op.starts_with("sync_data /db/log/"), "op {index}: {op}");
    }
}

/// The heads a writer produced: every (size, root) it ever had, and its
/// durable size, for readers to check against.
#[derive(Default)]
struct History {
    heads: Mutex<HashSet<(u64, Option<Hash>)>>,
    durable: AtomicU64,
    rollbacks: AtomicU64,
    /// Writer iterations finished (every head of one is recorded by its end).
    rounds: AtomicU64,
}

impl History {
    /// Whether the writer had `head`: a head becomes readable on disk a
    /// moment before the writer records it (a background group commit
    /// after an append, a published rollback before `truncate` returns),
    /// so a miss waits until the writer finished the iteration that was
    /// running when the reader looked (bounded).
    fn had(&self, head: (u64, Option<Hash>), rounds_seen: u64) -> bool {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let recorded = self.rounds.load(Ordering::Acquire) >= rounds_seen + 2;
            if self.heads.lock().unwrap().contains(&head) {
                return true;
            }
            if recorded || Instant::now() > deadline {
                return false;
            }
            std::thread::yield_now();
        }
    }
}

/// Readers open the database read-only over and over while a writer
/// appends (crossing log files), checkpoints (tiering leaves into file
/// mappings) and rolls back what it did not checkpoint. Every reader sees
/// a head the writer had, at least as large as what was durable when it
/// began, whose proofs verify and whose set answers for exactly its
/// leaves. 5 s; `CAIRN_READ_ONLY_SECS` for longer.
#[test]
fn read_only_opens_racing_a_writer_see_consistent_durable_states() {
    let seconds: u64 = std::env::var("CAIRN_READ_ONLY_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let mut writer_config = config(4, HashKind::Blake3);
    writer_config.store.log_shift = 16; // whole 2 MiB segments of leaves per file: tiering
    writer_config.store.tier_below = 2;
    writer_config.store.flush_interval = Some(Duration::from_millis(2));
    let db = Db::create(&path, writer_config).unwrap();
    let history = Arc::new(History::default());
    history.heads.lock().unwrap().insert((0, None));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let history = Arc::clone(&history);
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut next = 0u64;
            let mut round = 0u64;
            while !stop.load(Ordering::Acquire) {
                round += 1;
                let batch: Vec<Hash> = (0..1500).map(|i| value(4, next + i)).collect();
                next += batch.len() as u64;
                let appended = db.append_batch(&batch).unwrap();
                let snapshot = db.snapshot();
                let head = snapshot.head();
                let mut heads = history.heads.lock().unwrap();
                heads.insert((head.size, head.root));
                // A group commit writes one frame per log file: a reader
                // may find the log ending at a file boundary inside a batch.
                let boundary = head.size >> 16 << 16;
                if boundary > appended.first {
                    heads.insert((boundary, snapshot.view(boundary).unwrap().head().root));
                }
                drop(heads);
                if round.is_multiple_of(5) {
                    appended.token.wait(WAIT).unwrap();
                    history.durable.store(db.durable_size(), Ordering::Release);
                }
                if round.is_multiple_of(23) {
                    db.checkpoint().unwrap();
                } else if round.is_multiple_of(17) {
                    // Below the durable size, above the finalized one: a
                    // published rollback rewriting bytes readers may read.
                    let to = (db.finalized_size() + 1).max(db.size() - 700);
                    history.rollbacks.fetch_add(1, Ordering::AcqRel);
                    let head = db.truncate(to).unwrap();
                    history.heads.lock().unwrap().insert((head.size, head.root));
                    history.durable.store(db.durable_size(), Ordering::Release);
                    // Odd while a rollback runs: readers skip the check.
                    history.rollbacks.fetch_add(1, Ordering::AcqRel);
                }
                history.rounds.fetch_add(1, Ordering::AcqRel);
            }
            db.close().unwrap();
        })
    };
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut opens = 0u64;
    let mut largest = 0u64;
    while Instant::now() < deadline {
        let rollbacks_before = history.rollbacks.load(Ordering::Acquire);
        let durable_before = history.durable.load(Ordering::Acquire);
        let reader = Db::open_read_only(&path).unwrap();
        let snapshot = reader.snapshot();
        let head = snapshot.head();
        // Every head the open could see was made by an iteration finished
        // by now or running now.
        let rounds_seen = history.rounds.load(Ordering::Acquire);
        if rollbacks_before.is_multiple_of(2)
            && history.rollbacks.load(Ordering::Acquire) == rollbacks_before
        {
            assert!(
                head.size >= durable_before,
                "open {opens}: size {} below the {durable_before} leaves durable before it began",
                head.size
            );
        }
        assert!(
            history.had((head.size, head.root), rounds_seen),
            "open {opens}: head {head:?} is none the writer had"
        );
        if head.size > 0 {
            for index in [0, head.size / 2, head.size - 1] {
                let proof = snapshot.prove(index).unwrap();
                proof
                    .verify(
                        reader.config().tree().arity,
                        reader.config().tree().hash,
                        &head,
                    )
                    .unwrap();
                let leaf = snapshot.leaf(index).unwrap();
                assert_eq!(snapshot.index_of(&leaf).unwrap(), Some(index));
            }
        }
        // A value appended later is not in this open's set.
        assert_eq!(snapshot.index_of(&value(4, 1 << 40)).unwrap(), None);
        largest = largest.max(head.size);
        opens += 1;
        drop(snapshot);
        reader.close().unwrap();
    }
    stop.store(true, Ordering::Release);
    writer.join().unwrap();
    assert!(opens >= 3, "only {opens} read-only opens in {seconds} s");
    assert!(largest > 0);
    eprintln!("{opens} read-only opens in {seconds} s, up to {largest} leaves");
}
