//! The simulation's own tests: the crash modes, faults and identities
//! against what the module documentation promises.

use super::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn p(path: &str) -> &Path {
    Path::new(path)
}

fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// `/db` and `/db/f`, both durable, empty; returns the open file.
fn setup() -> (SimFs, Box<dyn FsFile>) {
    let fs = SimFs::new();
    fs.create_dir(p("/db")).unwrap();
    fs.sync_dir(p("/")).unwrap();
    let file = fs.open(p("/db/f"), OpenMode::CreateNew).unwrap();
    fs.sync_dir(p("/db")).unwrap();
    (fs, file)
}

fn content(fs: &SimFs, path: &str) -> Option<Vec<u8>> {
    match fs.read_all(p(path)) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => panic!("{path}: {e}"),
    }
}

/// Every path under `/` with its content (`None` for directories).
fn dump(fs: &SimFs) -> BTreeMap<String, Option<Vec<u8>>> {
    fn walk(fs: &SimFs, dir: &str, out: &mut BTreeMap<String, Option<Vec<u8>>>) {
        for name in fs.list_dir(p(dir)).unwrap() {
            let path = format!("{}/{name}", dir.trim_end_matches('/'));
            if fs.list_dir(p(&path)).is_ok() {
                out.insert(path.clone(), None);
                walk(fs, &path, out);
            } else {
                out.insert(path.clone(), Some(fs.read_all(p(&path)).unwrap()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(fs, "/", &mut out);
    out
}

fn crash(fs: &SimFs, mode: CrashMode) -> SimFs {
    fs.crash(&mode, &mut rng(0))
}

#[test]
fn drop_unsynced_keeps_only_synced_writes() {
    let (fs, file) = setup();
    file.write_at(b"hello", 0).unwrap();
    file.sync_data().unwrap();
    file.write_at(b" world", 5).unwrap();
    assert_eq!(content(&fs, "/db/f").unwrap(), b"hello world");

    assert_eq!(
        content(&crash(&fs, CrashMode::DropUnsynced), "/db/f").unwrap(),
        b"hello"
    );
    assert_eq!(
        content(&crash(&fs, CrashMode::KeepUnsynced), "/db/f").unwrap(),
        b"hello world"
    );
    assert_eq!(
        content(&crash(&fs, CrashMode::UndoDirOps), "/db/f").unwrap(),
        b"hello world"
    );

    // At every boundary: before the directory syncs nothing survives a
    // DropUnsynced crash, then an empty file, then "hello".
    let n = fs.op_count();
    assert_eq!(n, 7);
    let expected: [Option<&[u8]>; 8] = [
        None,
        None,
        None,
        None,
        Some(b""),
        Some(b""),
        Some(b"hello"),
        Some(b"hello"),
    ];
    for (k, want) in expected.iter().enumerate() {
        let crashed = fs.crash_at(k, &CrashMode::DropUnsynced, &mut rng(0));
        assert_eq!(content(&crashed, "/db/f").as_deref(), *want, "boundary {k}");
    }
    // /db itself exists from boundary 2 (after sync_dir("/")).
    assert!(
        !fs.crash_at(1, &CrashMode::DropUnsynced, &mut rng(0))
            .exists(p("/db"))
            .unwrap()
    );
    assert!(
        fs.crash_at(2, &CrashMode::DropUnsynced, &mut rng(0))
            .exists(p("/db"))
            .unwrap()
    );
}

#[test]
fn file_needs_its_directory_synced() {
    let fs = SimFs::new();
    fs.create_dir(p("/db")).unwrap();
    fs.sync_dir(p("/")).unwrap();
    let file = fs.open(p("/db/f"), OpenMode::CreateNew).unwrap();
    file.write_at(b"data", 0).unwrap();
    file.sync_data().unwrap();
    // Data synced, entry not: the file is gone.
    let crashed = crash(&fs, CrashMode::DropUnsynced);
    assert_eq!(crashed.list_dir(p("/db")).unwrap(), Vec::<String>::new());
    assert_eq!(
        content(&crash(&fs, CrashMode::KeepUnsynced), "/db/f").unwrap(),
        b"data"
    );
    fs.sync_dir(p("/db")).unwrap();
    assert_eq!(
        content(&crash(&fs, CrashMode::DropUnsynced), "/db/f").unwrap(),
        b"data"
    );
}

#[test]
fn new_directory_needs_its_parent_synced() {
    let fs = SimFs::new();
    fs.create_dir(p("/db")).unwrap();
    let file = fs.open(p("/db/f"), OpenMode::CreateNew).unwrap();
    file.write_at(b"x", 0).unwrap();
    file.sync_data().unwrap();
    fs.sync_dir(p("/db")).unwrap();
    // Everything inside /db is durable, but /db's own entry is not.
    assert!(dump(&crash(&fs, CrashMode::DropUnsynced)).is_empty());
    fs.sync_dir(p("/")).unwrap();
    assert_eq!(
        content(&crash(&fs, CrashMode::DropUnsynced), "/db/f").unwrap(),
        b"x"
    );
}

#[test]
fn rename_without_sync_dir_is_undone_by_drop_unsynced() {
    let (fs, file) = setup();
    file.write_at(b"new", 0).unwrap();
    file.sync_data().unwrap();
    let old = fs.open(p("/db/final"), OpenMode::CreateNew).unwrap();
    old.write_at(b"old", 0).unwrap();
    old.sync_data().unwrap();
    fs.sync_dir(p("/db")).unwrap();

    fs.rename(p("/db/f"), p("/db/final")).unwrap();
    assert_eq!(fs.list_dir(p("/db")).unwrap(), ["final"]);
    assert_eq!(content(&fs, "/db/final").unwrap(), b"new");

    let dropped = crash(&fs, CrashMode::DropUnsynced);
    assert_eq!(dropped.list_dir(p("/db")).unwrap(), ["f", "final"]);
    assert_eq!(content(&dropped, "/db/final").unwrap(), b"old");
    assert_eq!(content(&dropped, "/db/f").unwrap(), b"new");
    let kept = crash(&fs, CrashMode::KeepUnsynced);
    assert_eq!(kept.list_dir(p("/db")).unwrap(), ["final"]);
    assert_eq!(content(&kept, "/db/final").unwrap(), b"new");

    fs.sync_dir(p("/db")).unwrap();
    let synced = crash(&fs, CrashMode::DropUnsynced);
    assert_eq!(synced.list_dir(p("/db")).unwrap(), ["final"]);
    assert_eq!(content(&synced, "/db/final").unwrap(), b"new");
}

#[test]
fn remove_without_sync_dir_is_undone_by_drop_unsynced() {
    let (fs, file) = setup();
    file.write_at(b"keep", 0).unwrap();
    file.sync_data().unwrap();
    fs.remove_file(p("/db/f")).unwrap();
    assert!(!fs.exists(p("/db/f")).unwrap());
    // The open handle still works on the unlinked inode.
    file.write_at(b"!", 4).unwrap();
    assert_eq!(file.len().unwrap(), 5);
    assert_eq!(
        content(&crash(&fs, CrashMode::DropUnsynced), "/db/f").unwrap(),
        b"keep"
    );
    assert_eq!(content(&crash(&fs, CrashMode::KeepUnsynced), "/db/f"), None);
}

#[test]
fn cross_directory_rename_is_durable_per_directory() {
    let fs = SimFs::new();
    for dir in ["/a", "/b"] {
        fs.create_dir(p(dir)).unwrap();
    }
    fs.sync_dir(p("/")).unwrap();
    fs.open(p("/a/x"), OpenMode::CreateNew).unwrap();
    fs.sync_dir(p("/a")).unwrap();
    fs.rename(p("/a/x"), p("/b/x")).unwrap();
    fs.sync_dir(p("/b")).unwrap();
    // /b's insertion is durable, /a's removal is not: both names survive.
    let crashed = crash(&fs, CrashMode::DropUnsynced);
    assert!(crashed.exists(p("/a/x")).unwrap());
    assert!(crashed.exists(p("/b/x")).unwrap());
}

#[test]
fn undo_dir_ops_keeps_a_prefix_per_directory() {
    let (fs, file) = setup();
    file.write_at(b"f", 0).unwrap();
    fs.open(p("/db/a"), OpenMode::CreateNew)
        .unwrap()
        .write_at(b"a", 0)
        .unwrap();
    fs.open(p("/db/b"), OpenMode::CreateNew).unwrap();
    fs.rename(p("/db/a"), p("/db/c")).unwrap();
    fs.remove_file(p("/db/b")).unwrap();

    let prefixes: [&[&str]; 5] = [
        &["f"],
        &["a", "f"],
        &["a", "b", "f"],
        &["b", "c", "f"],
        &["c", "f"],
    ];
    let mut seen = BTreeSet::new();
    for seed in 0..200 {
        let crashed = fs.crash(&CrashMode::UndoDirOps, &mut rng(seed));
        let names = crashed.list_dir(p("/db")).unwrap();
        let index = prefixes.iter().position(|want| names == *want);
        let index = index.unwrap_or_else(|| panic!("not a prefix: {names:?}"));
        seen.insert(index);
        // Data all survives in the files that remain.
        assert_eq!(content(&crashed, "/db/f").unwrap(), b"f");
        if index >= 3 {
            assert_eq!(content(&crashed, "/db/c").unwrap(), b"a");
        }
    }
    assert_eq!(seen.len(), prefixes.len(), "every prefix occurs");
}

#[test]
fn tear_last_write_at_sector_and_page_boundaries() {
    let (fs, file) = setup();
    let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8 + 1).collect();
    file.write_at(&data, 100).unwrap();
    let k = fs.op_count();
    // Aligned offsets in [100, 10100): 512, 1024, ..., 9728 and 4096, 8192.
    assert_eq!(fs.tear_points(k, SECTOR), 19);
    assert_eq!(fs.tear_points(k, PAGE), 2);
    assert_eq!(fs.tear_points(k, 1), 10_000);
    assert_eq!(fs.tear_points(k - 1, SECTOR), 0, "no write before it");

    for (boundary, first) in [(SECTOR, 512), (PAGE, 4096), (1, 100)] {
        for keep in 0..fs.tear_points(k, boundary) {
            let mode = CrashMode::TearLastWrite { boundary, keep };
            let got = content(&fs.crash_at(k, &mode, &mut rng(0)), "/db/f").unwrap();
            let cut = first + keep * boundary;
            assert_eq!(got.len(), cut, "{mode:?}");
            assert!(got[..100].iter().all(|&b| b == 0));
            assert_eq!(&got[100..], &data[..cut - 100], "{mode:?}");
        }
    }

    let mut replay = fs.replay();
    replay.seek(k);
    assert_eq!(replay.crash_modes().len(), 5 + 19 + 2);
}

#[test]
fn tear_keeps_other_unsynced_writes_and_can_drop_an_aligned_write() {
    let (fs, file) = setup();
    file.write_at(&[1; 4096], 0).unwrap();
    file.sync_data().unwrap();
    let other = fs.open(p("/db/g"), OpenMode::CreateNew).unwrap();
    other.write_at(b"other", 0).unwrap();
    file.write_at(&[2; 4096], 4096).unwrap();
    let k = fs.op_count();
    assert_eq!(fs.tear_points(k, SECTOR), 8);
    for keep in 0..8 {
        let mode = CrashMode::TearLastWrite {
            boundary: SECTOR,
            keep,
        };
        let crashed = fs.crash_at(k, &mode, &mut rng(0));
        let got = content(&crashed, "/db/f").unwrap();
        assert_eq!(got.len(), 4096 + keep * SECTOR);
        assert!(got[..4096].iter().all(|&b| b == 1));
        assert!(got[4096..].iter().all(|&b| b == 2));
        assert_eq!(content(&crashed, "/db/g").unwrap(), b"other");
    }
    // Once synced, the last write cannot tear.
    file.sync_data().unwrap();
    assert_eq!(fs.tear_points(fs.op_count(), SECTOR), 0);
}

#[test]
#[should_panic(expected = "tear points")]
fn tear_beyond_the_last_point_panics() {
    let (fs, file) = setup();
    file.write_at(&[1; 1000], 0).unwrap();
    let mode = CrashMode::TearLastWrite {
        boundary: SECTOR,
        keep: 2,
    };
    crash(&fs, mode);
}

#[test]
fn random_sectors_keeps_each_unsynced_sector_or_not() {
    let (fs, file) = setup();
    file.write_at(&[b'a'; 2048], 0).unwrap();
    file.sync_data().unwrap();
    // Sectors 2 and 3 overwrite durable data, 4 and 5 extend the file.
    file.write_at(&[b'b'; 2048], 1024).unwrap();

    let mut outcomes = BTreeSet::new();
    for seed in 0..300 {
        let got = content(
            &fs.crash(&CrashMode::RandomSectors, &mut rng(seed)),
            "/db/f",
        )
        .unwrap();
        assert!(
            [2048, 2560, 3072].contains(&got.len()),
            "length {}",
            got.len()
        );
        assert!(
            got[..1024].iter().all(|&b| b == b'a'),
            "synced data is kept"
        );
        let mut outcome = Vec::new();
        for (s, sector) in got.chunks(SECTOR).enumerate().skip(2) {
            let byte = sector[0];
            assert!(sector.iter().all(|&b| b == byte), "sector {s} is whole");
            let allowed: &[u8] = if s < 4 { b"ab" } else { b"b\0" };
            assert!(allowed.contains(&byte), "sector {s} is {byte}");
            outcome.push(byte);
        }
        outcomes.insert(outcome);
    }
    // Both fates for each sector, and zero-filled tails (a lost sector 5
    // under a surviving length) among them.
    for s in 0..2 {
        assert!(outcomes.iter().any(|o| o[s] == b'a') && outcomes.iter().any(|o| o[s] == b'b'));
    }
    assert!(
        outcomes.iter().any(|o| o.len() == 4 && o[3] == 0),
        "zero tail"
    );
    assert!(outcomes.iter().any(|o| o.len() == 2), "growth lost");
    assert!(outcomes.len() > 8);
}

#[test]
fn growth_lost_keeps_overwrites_within_the_durable_length() {
    let (fs, file) = setup();
    file.write_at(&[b'a'; 1000], 0).unwrap();
    file.sync_data().unwrap();
    file.write_at(&[b'b'; 1000], 500).unwrap();
    let fresh = fs.open(p("/db/g"), OpenMode::CreateNew).unwrap();
    fresh.write_at(b"appended", 0).unwrap();

    let crashed = crash(&fs, CrashMode::GrowthLost);
    let got = content(&crashed, "/db/f").unwrap();
    assert_eq!(got.len(), 1000);
    assert!(got[..500].iter().all(|&b| b == b'a'));
    assert!(got[500..].iter().all(|&b| b == b'b'));
    // Directory operations survive; the new file's growth does not.
    assert_eq!(content(&crashed, "/db/g").unwrap(), b"");
}

#[test]
fn replay_reaches_every_state_the_workload_went_through() {
    let mut r = rng(7);
    let fs = SimFs::new();
    let mut snapshots = vec![dump(&crash(&fs, CrashMode::KeepUnsynced))];
    let mut dropped = vec![dump(&crash(&fs, CrashMode::DropUnsynced))];
    fs.create_dir(p("/d")).unwrap();
    snapshots.push(dump(&crash(&fs, CrashMode::KeepUnsynced)));
    dropped.push(dump(&crash(&fs, CrashMode::DropUnsynced)));
    let mut files: Vec<(String, Box<dyn FsFile>)> = Vec::new();
    while fs.op_count() < 300 {
        let before = fs.op_count();
        match r.gen_range(0..10) {
            0 | 1 => {
                let name = format!("/d/{}", r.gen_range(0..6));
                if let Ok(file) = fs.open(p(&name), OpenMode::CreateNew) {
                    files.push((name, file));
                }
            }
            2..=5 if !files.is_empty() => {
                let (_, file) = &files[r.gen_range(0..files.len())];
                let len = r.gen_range(1..1500);
                let byte = r.r#gen::<u8>();
                file.write_at(&vec![byte; len], r.gen_range(0..3000))
                    .unwrap();
            }
            6 if !files.is_empty() => files[r.gen_range(0..files.len())].1.sync_data().unwrap(),
            7 => fs
                .sync_dir(p(if r.gen_bool(0.5) { "/d" } else { "/" }))
                .unwrap(),
            8 => {
                let from = format!("/d/{}", r.gen_range(0..6));
                let to = format!("/d/{}", r.gen_range(0..6));
                let _ = fs.rename(p(&from), p(&to));
            }
            _ => {
                let _ = fs.remove_file(p(&format!("/d/{}", r.gen_range(0..6))));
            }
        }
        if fs.op_count() > before {
            assert_eq!(fs.op_count(), before + 1, "one call, one operation");
            snapshots.push(dump(&crash(&fs, CrashMode::KeepUnsynced)));
            dropped.push(dump(&crash(&fs, CrashMode::DropUnsynced)));
        }
    }
    let mut replay = fs.replay();
    for k in 0..=fs.op_count() {
        replay.seek(k);
        let context = || format!("boundary {k} after {}", fs.describe_op(k.max(1) - 1));
        assert_eq!(
            dump(&replay.crash(&CrashMode::KeepUnsynced, &mut r)),
            snapshots[k],
            "{}",
            context()
        );
        assert_eq!(
            dump(&replay.crash(&CrashMode::DropUnsynced, &mut r)),
            dropped[k],
            "{}",
            context()
        );
    }
    assert!(!replay.step());
}

#[test]
fn crashed_fs_is_fresh_and_can_crash_again() {
    let (fs, file) = setup();
    file.write_at(b"one", 0).unwrap();
    file.sync_data().unwrap();
    let _lock = fs.lock(p("/db/LOCK")).unwrap();
    fs.fail_nth_sync_data(1);

    let after = crash(&fs, CrashMode::KeepUnsynced);
    assert_eq!(after.op_count(), 0);
    assert_eq!(after.counters(), SimCounters::default());
    let _relock = after.lock(p("/db/LOCK")).unwrap();
    let file = after.open(p("/db/f"), OpenMode::Existing).unwrap();
    file.write_at(b"two", 3).unwrap();
    file.sync_data().unwrap(); // the failure was configured on `fs`
    // Boundary 0 of the new trace is the crashed state, not an empty fs.
    assert_eq!(
        content(
            &after.crash_at(0, &CrashMode::DropUnsynced, &mut rng(0)),
            "/db/f"
        )
        .unwrap(),
        b"one"
    );
    assert_eq!(
        content(&after.crash(&CrashMode::DropUnsynced, &mut rng(0)), "/db/f").unwrap(),
        b"onetwo"
    );
}

#[test]
fn clear_trace_starts_replays_from_the_current_state() {
    let (fs, file) = setup();
    file.write_at(b"setup", 0).unwrap();
    fs.clear_trace();
    assert_eq!(fs.op_count(), 0);
    assert_eq!(fs.tear_points(0, 1), 0);
    file.sync_data().unwrap();
    assert_eq!(
        content(
            &fs.crash_at(0, &CrashMode::DropUnsynced, &mut rng(0)),
            "/db/f"
        )
        .unwrap(),
        b""
    );
    assert_eq!(
        content(
            &fs.crash_at(0, &CrashMode::KeepUnsynced, &mut rng(0)),
            "/db/f"
        )
        .unwrap(),
        b"setup"
    );
    assert_eq!(
        content(
            &fs.crash_at(1, &CrashMode::DropUnsynced, &mut rng(0)),
            "/db/f"
        )
        .unwrap(),
        b"setup"
    );
}

#[test]
fn describe_op_names_each_operation() {
    let (fs, file) = setup();
    file.write_at(b"abc", 10).unwrap();
    fs.fail_nth_sync_data(1);
    file.sync_data().unwrap_err();
    fs.rename(p("/db/f"), p("/db/g")).unwrap();
    fs.remove_file(p("/db/g")).unwrap();
    let described: Vec<String> = (0..fs.op_count()).map(|i| fs.describe_op(i)).collect();
    assert_eq!(
        described,
        [
            "create_dir /db",
            "sync_dir / (Durable)",
            "create /db/f",
            "sync_dir /db (Durable)",
            "write /db/f [10, 13)",
            "sync_data /db/f (Failed)",
            "rename /db/f -> /db/g",
            "remove /db/g",
        ]
    );
}

#[test]
fn lock_is_exclusive_across_clones_until_dropped() {
    let fs = SimFs::new();
    let other = fs.clone();
    let lock = fs.lock(p("/LOCK")).unwrap();
    assert!(fs.exists(p("/LOCK")).unwrap(), "created if missing");
    assert_eq!(
        other.lock(p("/LOCK")).unwrap_err().kind(),
        io::ErrorKind::WouldBlock
    );
    assert_eq!(
        fs.lock(p("/LOCK")).unwrap_err().kind(),
        io::ErrorKind::WouldBlock
    );
    // Another file is another lock; a missing directory is NotFound.
    let _second = fs.lock(p("/LOCK2")).unwrap();
    assert_eq!(
        fs.lock(p("/no/LOCK")).unwrap_err().kind(),
        io::ErrorKind::NotFound
    );
    drop(lock);
    let _again = other.lock(p("/LOCK")).unwrap();
    assert_eq!(fs.op_count(), 2, "only the two creations are recorded");
}

#[test]
fn a_directory_lock_is_exclusive_and_independent_of_the_files_inside() {
    let fs = SimFs::new();
    fs.create_dir(p("/db")).unwrap();
    let lock = fs.lock_dir(p("/db")).unwrap();
    assert_eq!(
        fs.clone().lock_dir(p("/db")).unwrap_err().kind(),
        io::ErrorKind::WouldBlock
    );
    // A lock file inside is another lock.
    let _file = fs.lock(p("/db/LOCK")).unwrap();
    assert_eq!(lock.identity(), Some(fs.identity(p("/db")).unwrap()));
    assert_eq!(
        fs.lock_dir(p("/db/LOCK")).unwrap_err().kind(),
        io::ErrorKind::NotADirectory
    );
    drop(lock);
    let _again = fs.lock_dir(p("/db")).unwrap();
}

#[test]
fn identity_follows_the_file_not_its_name() {
    let (fs, file) = setup();
    let id = file.file_id().unwrap();
    assert_eq!(fs.identity(p("/db/f")).unwrap(), id);
    fs.rename(p("/db/f"), p("/db/g")).unwrap();
    assert_eq!(fs.identity(p("/db/g")).unwrap(), id, "renamed");
    assert_eq!(
        fs.identity(p("/db/f")).unwrap_err().kind(),
        io::ErrorKind::NotFound
    );
    fs.remove_file(p("/db/g")).unwrap();
    let again = fs.open(p("/db/g"), OpenMode::CreateNew).unwrap();
    assert_ne!(again.file_id().unwrap(), id, "a new file under the name");
    // The removed file is still written and read through its handle.
    file.write_at(b"still here", 0).unwrap();
    let mut back = [0u8; 10];
    file.read_exact_at(&mut back, 0).unwrap();
    assert_eq!(&back, b"still here");
}

#[test]
fn open_faults_fail_the_calls_they_concern_and_change_nothing() {
    let (fs, file) = setup();
    let before = fs.op_count();
    fs.fail_opens(OpenFault::TooManyFiles, "");
    let emfile = |e: io::Error| e.raw_os_error();
    assert_eq!(
        fs.open(p("/db/f"), OpenMode::ReadOnly).err().map(emfile),
        Some(Some(24))
    );
    assert_eq!(
        fs.open(p("/db/n"), OpenMode::CreateNew).err().map(emfile),
        Some(Some(24))
    );
    assert_eq!(fs.sync_dir(p("/db")).err().map(emfile), Some(Some(24)));
    assert_eq!(fs.list_dir(p("/db")).err().map(emfile), Some(Some(24)));
    assert_eq!(fs.lock(p("/db/L")).err().map(emfile), Some(Some(24)));
    assert_eq!(fs.lock_dir(p("/db")).err().map(emfile), Some(Some(24)));
    // What needs no new descriptor works.
    file.write_at(b"x", 0).unwrap();
    file.sync_data().unwrap();
    fs.create_dir(p("/db/sub")).unwrap();
    assert!(fs.exists(p("/db/f")).unwrap());
    fs.identity(p("/db/f")).unwrap();
    assert!(
        !fs.exists(p("/db/n")).unwrap(),
        "a failed creation creates nothing"
    );
    assert_eq!(fs.counters().open_faults, 6);
    // ENOSPC concerns creations only, on the paths named.
    fs.fail_opens(OpenFault::NoSpace, "tmp");
    assert_eq!(
        fs.open(p("/db/x.tmp"), OpenMode::CreateNew)
            .err()
            .map(emfile),
        Some(Some(28))
    );
    assert_eq!(
        fs.create_dir(p("/db/tmp")).err().map(emfile),
        Some(Some(28))
    );
    fs.open(p("/db/x"), OpenMode::CreateNew).unwrap();
    fs.open(p("/db/f"), OpenMode::Existing).unwrap();
    fs.clear_faults();
    fs.open(p("/db/x.tmp"), OpenMode::CreateNew).unwrap();
    assert_eq!(fs.counters().open_faults, 8);
    assert_eq!(
        fs.op_count(),
        before + 5,
        "the write, the sync, the directory and the two files made; no failed call"
    );
}

#[test]
fn map_nodes_copies_ranges_inside_the_file() {
    let (_fs, file) = setup();
    let bytes: Vec<u8> = (0..96).collect();
    file.write_at(&bytes, 0).unwrap();
    let all = file.map_nodes(0, 3).unwrap();
    assert_eq!(all.nodes().len(), 3);
    assert_eq!(all.nodes()[2][0], 64);
    let tail = file.map_nodes(32, 2).unwrap();
    assert_eq!(tail.nodes()[0][31], 63);
    assert_eq!(file.map_nodes(96, 0).unwrap().nodes().len(), 0);
    for (offset, nodes) in [(32, 3), (97, 0), (u64::MAX - 10, 1), (0, usize::MAX)] {
        let e = file.map_nodes(offset, nodes).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "{offset} {nodes}");
    }
    // A copy: later writes do not show through it.
    file.write_at(&[0xff; 32], 0).unwrap();
    assert_eq!(all.nodes()[0][0], 0);
}

#[test]
fn reads_writes_and_the_namespace() {
    let (fs, file) = setup();
    file.write_at(b"xy", 4).unwrap();
    assert_eq!(file.len().unwrap(), 6);
    let mut buf = [9u8; 8];
    assert_eq!(file.read_at(&mut buf, 0).unwrap(), 6);
    assert_eq!(&buf[..6], b"\0\0\0\0xy", "the gap is zero-filled");
    assert_eq!(file.read_at(&mut buf, 6).unwrap(), 0);
    assert_eq!(file.read_at(&mut buf, 1000).unwrap(), 0);
    assert_eq!(
        file.read_exact_at(&mut buf, 0).unwrap_err().kind(),
        io::ErrorKind::UnexpectedEof
    );
    file.write_at(b"", 100).unwrap();
    assert_eq!(file.len().unwrap(), 6, "an empty write does not extend");

    let kind = |r: io::Result<Box<dyn FsFile>>| r.unwrap_err().kind();
    assert_eq!(
        kind(fs.open(p("/db/f"), OpenMode::CreateNew)),
        io::ErrorKind::AlreadyExists
    );
    assert_eq!(
        kind(fs.open(p("/nodir/f"), OpenMode::CreateNew)),
        io::ErrorKind::NotFound
    );
    assert_eq!(
        kind(fs.open(p("/db/g"), OpenMode::Existing)),
        io::ErrorKind::NotFound
    );
    assert_eq!(
        kind(fs.open(p("/db"), OpenMode::ReadOnly)),
        io::ErrorKind::IsADirectory
    );
    assert_eq!(
        kind(fs.open(p("db/f"), OpenMode::ReadOnly)),
        io::ErrorKind::InvalidInput
    );
    assert_eq!(
        kind(fs.open(p("/db/f/x"), OpenMode::CreateNew)),
        io::ErrorKind::NotADirectory
    );
    assert_eq!(
        fs.create_dir(p("/db")).unwrap_err().kind(),
        io::ErrorKind::AlreadyExists
    );
    assert_eq!(
        fs.create_dir(p("/a/b")).unwrap_err().kind(),
        io::ErrorKind::NotFound
    );
    assert_eq!(
        fs.remove_file(p("/db")).unwrap_err().kind(),
        io::ErrorKind::IsADirectory
    );
    assert_eq!(
        fs.remove_file(p("/db/zz")).unwrap_err().kind(),
        io::ErrorKind::NotFound
    );
    assert_eq!(
        fs.rename(p("/db/zz"), p("/db/y")).unwrap_err().kind(),
        io::ErrorKind::NotFound
    );
    assert_eq!(
        fs.sync_dir(p("/db/f")).unwrap_err().kind(),
        io::ErrorKind::NotADirectory
    );
    assert_eq!(
        fs.list_dir(p("/db/f")).unwrap_err().kind(),
        io::ErrorKind::NotADirectory
    );

    let read_only = fs.open(p("/db/f"), OpenMode::ReadOnly).unwrap();
    assert_eq!(
        read_only.write_at(b"no", 0).unwrap_err().kind(),
        io::ErrorKind::PermissionDenied
    );
    read_only.sync_data().unwrap();

    for name in ["c", "a", "b"] {
        fs.open(&Path::new("/db").join(name), OpenMode::CreateNew)
            .unwrap();
    }
    assert_eq!(fs.list_dir(p("/db")).unwrap(), ["a", "b", "c", "f"]);
    assert_eq!(fs.list_dir(p("/")).unwrap(), ["db"]);
    assert!(fs.exists(p("/")).unwrap());
    assert!(fs.exists(p("/db/a")).unwrap());
    assert!(!fs.exists(p("/db/zz")).unwrap());
    assert!(!fs.exists(p("/db/f/x")).unwrap());
    fs.rename(p("/db/a"), p("/db/b")).unwrap();
    assert_eq!(fs.list_dir(p("/db")).unwrap(), ["b", "c", "f"]);
    fs.rename(p("/db/b"), p("/db/b")).unwrap();
    assert_eq!(
        fs.rename(p("/db/b"), p("/db")).unwrap_err().kind(),
        io::ErrorKind::IsADirectory
    );
}

#[test]
fn injected_sync_data_failure_loses_the_unsynced_writes_for_good() {
    let (fs, file) = setup();
    fs.fail_nth_sync_data(2);
    file.write_at(b"A", 0).unwrap();
    file.sync_data().unwrap();
    file.write_at(b"B", 1).unwrap();
    let e = file.sync_data().unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::Other);
    assert_eq!(e.to_string(), "injected fsync failure");
    // The retry succeeds, but as on Linux it does not write B.
    file.sync_data().unwrap();
    assert_eq!(content(&fs, "/db/f").unwrap(), b"AB");
    assert_eq!(
        content(&crash(&fs, CrashMode::DropUnsynced), "/db/f").unwrap(),
        b"A"
    );
    assert_eq!(
        content(&crash(&fs, CrashMode::KeepUnsynced), "/db/f").unwrap(),
        b"AB"
    );
    // A write after the failure is made durable by the next sync...
    file.write_at(b"C", 2).unwrap();
    file.sync_data().unwrap();
    let got = content(&crash(&fs, CrashMode::DropUnsynced), "/db/f").unwrap();
    assert_eq!(got, b"A\0C");
    // ...and so is writing B again.
    file.write_at(b"B", 1).unwrap();
    file.sync_data().unwrap();
    assert_eq!(
        content(&crash(&fs, CrashMode::DropUnsynced), "/db/f").unwrap(),
        b"ABC"
    );
    assert_eq!(fs.counters().sync_data_calls, 5);
}

#[test]
fn injected_sync_dir_failure_leaves_entries_unsynced() {
    let fs = SimFs::new();
    fs.fail_nth_sync_dir(1);
    fs.fail_nth_sync_dir(3);
    fs.create_dir(p("/db")).unwrap();
    assert_eq!(
        fs.sync_dir(p("/")).unwrap_err().to_string(),
        "injected fsync failure"
    );
    assert!(
        !crash(&fs, CrashMode::DropUnsynced)
            .exists(p("/db"))
            .unwrap()
    );
    fs.sync_dir(p("/")).unwrap();
    assert!(
        crash(&fs, CrashMode::DropUnsynced)
            .exists(p("/db"))
            .unwrap()
    );
    fs.sync_dir(p("/db")).unwrap_err();
    fs.clear_faults();
    fs.sync_dir(p("/db")).unwrap();
    assert_eq!(fs.counters().sync_dir_calls, 4);
}

#[test]
fn storage_full_after_the_write_budget() {
    let (fs, file) = setup();
    fs.set_write_budget(Some(10), false);
    file.write_at(&[1; 6], 0).unwrap();
    let e = file.write_at(&[2; 6], 6).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::StorageFull);
    assert_eq!(file.len().unwrap(), 6, "nothing written");
    file.write_at(&[3; 4], 6).unwrap();
    assert_eq!(
        file.write_at(&[4], 10).unwrap_err().kind(),
        io::ErrorKind::StorageFull
    );
    assert_eq!(file.len().unwrap(), 10);

    // Short writes: the prefix that fits, then the error.
    fs.set_write_budget(Some(5), true);
    assert_eq!(
        file.write_at(&[5; 8], 10).unwrap_err().kind(),
        io::ErrorKind::StorageFull
    );
    assert_eq!(file.len().unwrap(), 15);
    assert_eq!(
        file.write_at(&[6], 15).unwrap_err().kind(),
        io::ErrorKind::StorageFull
    );

    fs.set_write_budget(None, false);
    file.write_at(&[7], 15).unwrap();
    let counters = fs.counters();
    assert_eq!(counters.write_calls, 7);
    assert_eq!(counters.bytes_written, 6 + 4 + 5 + 1);
}

#[test]
fn lying_sync_loses_everything_at_a_crash() {
    let fs = SimFs::new();
    fs.set_lying_sync(true);
    fs.create_dir(p("/db")).unwrap();
    fs.sync_dir(p("/")).unwrap();
    let file = fs.open(p("/db/f"), OpenMode::CreateNew).unwrap();
    fs.sync_dir(p("/db")).unwrap();
    file.write_at(b"acknowledged", 0).unwrap();
    file.sync_data().unwrap();
    assert_eq!(content(&fs, "/db/f").unwrap(), b"acknowledged");
    for k in 0..=fs.op_count() {
        assert!(
            dump(&fs.crash_at(k, &CrashMode::DropUnsynced, &mut rng(0))).is_empty(),
            "boundary {k}"
        );
    }
    // Turning it off makes the next syncs real.
    fs.set_lying_sync(false);
    fs.sync_dir(p("/")).unwrap();
    fs.sync_dir(p("/db")).unwrap();
    file.sync_data().unwrap();
    assert_eq!(
        content(&crash(&fs, CrashMode::DropUnsynced), "/db/f").unwrap(),
        b"acknowledged"
    );
}

#[test]
fn clones_share_state_and_debug_is_a_summary() {
    let fs = SimFs::default();
    let clone = fs.clone();
    clone.create_dir(p("/x")).unwrap();
    assert!(fs.exists(p("/x")).unwrap());
    let debug = format!("{fs:?}");
    assert!(debug.contains("ops: 1"), "{debug}");
}
