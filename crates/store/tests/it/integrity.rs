//! Damage to acknowledged data is refused, never taken for a torn tail:
//! the log's tail records, chain and successor marks, the heads records'
//! claims, the sums of every level, and the files a store has from
//! creation on. Also the migration of a directory the format 1 build
//! wrote, read-only and under power loss at every boundary.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_store::fs::OpenMode;
use cairn_store::{BlockTag, Fs, Store, StoreConfig, StoreError};
use cairn_testkit::sim::{CrashMode, SimFs};

use crate::support::*;

const LOG0: &str = "/db/log/000000000000.log";
const LOG1: &str = "/db/log/000000000001.log";
/// Where the frame region of a log file of 1,024 leaves starts.
const FRAMES: u64 = 4096 + 32 * 1024;

fn create(fs: &SimFs) -> Store {
    Store::create(Arc::new(fs.clone()), Path::new("/db"), config(4, 10)).unwrap()
}

fn reopen(fs: &SimFs) -> Result<Store, StoreError> {
    Store::open(
        Arc::new(fs.clone()) as Arc<dyn Fs>,
        Path::new("/db"),
        config(4, 10),
    )
}

/// The directory as a `kill -9` right now would leave it (no close, no
/// seal): every write so far survives, nothing the drop does.
fn killed(fs: &SimFs, store: Store) -> SimFs {
    let at = fs.op_count();
    drop(store);
    fs.crash_at(at, &CrashMode::KeepUnsynced, &mut rand::thread_rng())
}

fn append_waited(store: &Store, range: std::ops::Range<u64>) {
    store
        .append_batch(&leaves(range))
        .unwrap()
        .token
        .wait(WAIT)
        .unwrap();
}

fn write_bytes(fs: &SimFs, path: &str, offset: u64, bytes: &[u8]) {
    let file = fs.open(Path::new(path), OpenMode::Existing).unwrap();
    file.write_at(bytes, offset).unwrap();
    file.sync_data().unwrap();
}

fn flip(fs: &SimFs, path: &str, offset: u64) {
    let mut byte = [0u8];
    let file = fs.open(Path::new(path), OpenMode::Existing).unwrap();
    file.read_exact_at(&mut byte, offset).unwrap();
    write_bytes(fs, path, offset, &[byte[0] ^ 0x10]);
}

/// Replaces `path` by its first `len` bytes (a cut file).
fn cut(fs: &SimFs, path: &str, len: usize) {
    let bytes = fs.read_all(Path::new(path)).unwrap();
    fs.remove_file(Path::new(path)).unwrap();
    let file = fs.open(Path::new(path), OpenMode::CreateNew).unwrap();
    file.write_at(&bytes[..len.min(bytes.len())], 0).unwrap();
    file.sync_data().unwrap();
}

/// The open must be refused as a corruption of `path` whose detail holds
/// `says`; returns the offset it names.
fn refused(result: Result<Store, StoreError>, path: &str, says: &str) -> u64 {
    match result {
        Err(StoreError::Corrupt {
            path: at,
            offset,
            detail,
        }) => {
            assert_eq!(at, Path::new(path), "{detail}");
            assert!(detail.contains(says), "want {says:?} in: {detail}");
            offset
        }
        Err(other) => panic!("want a corruption of {path}, got {other}"),
        Ok(store) => panic!(
            "want a corruption of {path}, the store opened at size {}",
            store.size()
        ),
    }
}

/// A checkpoint at 100 leaves, then three acknowledged commits of 10, then
/// a `kill -9`.
fn three_commits_after_a_checkpoint() -> SimFs {
    let fs = SimFs::new();
    let store = create(&fs);
    append_waited(&store, 0..100);
    store.checkpoint().unwrap();
    for round in 0..3 {
        append_waited(&store, 100 + round * 10..110 + round * 10);
    }
    killed(&fs, store)
}

/// The fault-injection run found that zeroing the frames after the
/// checkpoint lost every acknowledged leaf since it, silently.
#[test]
fn frames_after_the_checkpoint_zeroed_are_refused() {
    let fs = three_commits_after_a_checkpoint();
    let len = fs.read_all(Path::new(LOG0)).unwrap().len();
    write_bytes(&fs, LOG0, FRAMES, &vec![0; len - FRAMES as usize]);
    let offset = refused(reopen(&fs), LOG0, "acknowledged data is lost");
    assert_eq!(offset, FRAMES + 32, "the first frame after the checkpoint");
}

/// The same with the frames cut off (the file truncated).
#[test]
fn frames_after_the_checkpoint_cut_are_refused() {
    let fs = three_commits_after_a_checkpoint();
    cut(&fs, LOG0, (FRAMES + 32) as usize);
    refused(reopen(&fs), LOG0, "frame 3 ending at leaf 120 was durable");
}

/// What an unclean stop can lose, and only that: the last commit. Its
/// frame zeroed opens with the two commits before it.
#[test]
fn the_last_commit_before_a_kill_is_the_only_loss_that_opens() {
    let fs = three_commits_after_a_checkpoint();
    write_bytes(&fs, LOG0, FRAMES + 32 * 3, &[0; 32]);
    let store = reopen(&fs).unwrap();
    assert_eq!(check_prefix(&store, 4), 120);
    drop(store);
    // One commit more zeroed is refused: the last one's tail record names it.
    let fs = three_commits_after_a_checkpoint();
    write_bytes(&fs, LOG0, FRAMES + 32 * 2, &[0; 64]);
    refused(reopen(&fs), LOG0, "frame 3 ending at leaf 120 was durable");
}

/// A store idle for `seal_after` is sealed by its background thread:
/// damage to its last commit is then refused after a `kill -9` too.
#[test]
fn an_idle_store_seals_its_log() {
    let fs = SimFs::new();
    let config = StoreConfig {
        flush_interval: Some(Duration::from_millis(1)),
        seal_after: Some(Duration::ZERO),
        ..config(4, 10)
    };
    let store = Store::create(Arc::new(fs.clone()), Path::new("/db"), config).unwrap();
    append_waited(&store, 0..10);
    append_waited(&store, 10..20);
    // The background thread seals within a few of its rounds.
    let deadline = Instant::now() + WAIT;
    let sealed = |fs: &SimFs| {
        let page = fs.read_all(Path::new(LOG0)).unwrap();
        cairn_store::format::TAIL_OFFSETS.iter().any(|&at| {
            let at = at as usize;
            cairn_store::decoders::tail_record(&page[at..at + cairn_store::format::TAIL_LEN])
                .is_some_and(|tail| tail.sealed && tail.durable.is_some_and(|f| f.end == 20))
        })
    };
    while !sealed(&fs) {
        assert!(Instant::now() < deadline, "the store never sealed");
        std::thread::yield_now();
    }
    let fs = killed(&fs, store);
    write_bytes(&fs, LOG0, FRAMES + 32, &[0; 32]);
    refused(reopen(&fs), LOG0, "frame 2 ending at leaf 20 was durable");
}

/// The fault-injection run deleted the last log file: its acknowledged
/// leaves were lost and the store opened. The file before it records
/// that it was created.
#[test]
fn a_deleted_last_log_file_is_refused() {
    let fs = SimFs::new();
    let store = create(&fs);
    append_waited(&store, 0..1000);
    store.checkpoint().unwrap();
    append_waited(&store, 1000..1100);
    append_waited(&store, 1100..1110);
    let fs = killed(&fs, store);
    fs.remove_file(Path::new(LOG1)).unwrap();
    let offset = refused(
        reopen(&fs),
        LOG0,
        "log file 1 (/db/log/000000000001.log) is missing",
    );
    assert_eq!(offset, cairn_store::format::SUCCESSOR_OFFSET);
    // Cut to nothing: its header is gone, and the mark says it was durable.
    let fs2 = SimFs::new();
    let store = create(&fs2);
    append_waited(&store, 0..1100);
    let fs2 = killed(&fs2, store);
    cut(&fs2, LOG1, 0);
    refused(reopen(&fs2), LOG1, "shorter than its 4096-byte header");
}

/// Every file a store has from creation on: the first log file and the
/// checkpoint. Without them it is damaged, not new.
#[test]
fn a_store_without_its_first_log_file_or_its_checkpoint_is_refused() {
    let fs = SimFs::new();
    drop(create(&fs));
    let no_log = fs.crash_at(
        fs.op_count(),
        &CrashMode::KeepUnsynced,
        &mut rand::thread_rng(),
    );
    no_log.remove_file(Path::new(LOG0)).unwrap();
    refused(reopen(&no_log), "/db/log", "no log file");
    fs.remove_file(Path::new("/db/checkpoint")).unwrap();
    refused(reopen(&fs), "/db/checkpoint", "missing");
}

/// The fault-injection run flipped a checkpointed leaf: normal opens took
/// it, `contains` said absent and the value was accepted again.
#[test]
fn a_flipped_checkpointed_leaf_is_refused() {
    let fs = SimFs::new();
    let store = create(&fs);
    append_waited(&store, 0..300);
    store.checkpoint().unwrap();
    drop(store);
    // Leaf 140: page 1 of the leaves (leaves 128..256), a whole page.
    flip(&fs, LOG0, 4096 + 32 * 140 + 7);
    let offset = refused(reopen(&fs), LOG0, "nodes 128..256 of level 0");
    assert_eq!(offset, 4096 + 32 * 128);
    // Leaf 260, in the partial last page: the checkpoint holds its CRC.
    let fs = SimFs::new();
    let store = create(&fs);
    append_waited(&store, 0..300);
    store.checkpoint().unwrap();
    drop(store);
    flip(&fs, LOG0, 4096 + 32 * 260);
    refused(reopen(&fs), LOG0, "the checkpoint says");
    // A flipped sum is refused the same way (the page or its sum).
    let fs = SimFs::new();
    let store = create(&fs);
    append_waited(&store, 0..300);
    store.checkpoint().unwrap();
    drop(store);
    flip(
        &fs,
        "/db/levels/level-00.sums",
        cairn_store::format::sum_offset(1) + 2,
    );
    refused(reopen(&fs), LOG0, "level-00.sums says");
}

/// The fault-injection run flipped a byte of record 1 of `heads`: the
/// tags of the later blocks were dropped and a later rollback to a block
/// removed acknowledged leaves. A later record vouches for it now.
#[test]
fn a_flipped_heads_record_that_a_later_one_vouches_for_is_refused() {
    let fs = SimFs::new();
    let store = create(&fs);
    for block in 0..5u64 {
        store
            .append_tagged(
                &leaves(block * 10..block * 10 + 10),
                BlockTag::number(100 + block),
            )
            .unwrap()
            .token
            .wait(WAIT)
            .unwrap();
    }
    let fs = killed(&fs, store);
    let record1 = 64 + 128;
    flip(&fs, "/db/heads", record1 + 3);
    let offset = refused(reopen(&fs), "/db/heads", "block-tagged head 1 is damaged");
    assert_eq!(offset, record1);
    // The last record damaged after a kill is the last commit's loss (the
    // tag only: its leaves' frame is named by nothing either, but intact):
    // the store opens with the tags before it.
    let five_blocks = || {
        let fs = SimFs::new();
        let store = create(&fs);
        for block in 0..5u64 {
            store
                .append_tagged(
                    &leaves(block * 10..block * 10 + 10),
                    BlockTag::number(100 + block),
                )
                .unwrap()
                .token
                .wait(WAIT)
                .unwrap();
        }
        (fs, store)
    };
    let (fs, store) = five_blocks();
    let fs = killed(&fs, store);
    flip(&fs, "/db/heads", 64 + 128 * 4 + 3);
    let store = reopen(&fs).unwrap();
    assert_eq!(store.heads(0, usize::MAX).len(), 4);
    assert_eq!(check_prefix(&store, 4), 50);
    drop(store);
    // Closed, the seal names all five records: the same damage is refused.
    let (fs, store) = five_blocks();
    store.close().unwrap();
    flip(&fs, "/db/heads", 64 + 128 * 4 + 3);
    refused(reopen(&fs), "/db/heads", "a tail record of the log");
}

/// A copy of `tests/data/format-1` (see `tests/data/format-1.md`).
fn format_1_copy() -> (tempfile::TempDir, PathBuf) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/format-1");
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("db");
    copy_dir(&source, &dir);
    (temp, dir)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Every file of a directory, by path relative to it, with its bytes.
fn contents(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push((
                    path.strip_prefix(dir).unwrap().to_path_buf(),
                    std::fs::read(&path).unwrap(),
                ));
            }
        }
    }
    out.sort();
    out
}

const FORMAT_1_ROOT: &str = "0xc20931074315e67640feea577e0771a68bbcb9a96406ad2ab12efe8883eaf265";

fn stored(fs: &dyn Fs, dir: &Path) -> StoreConfig {
    let meta = cairn_store::stored_config(fs, dir).unwrap();
    StoreConfig {
        flags: meta.flags,
        ..config_of(meta.tree, meta.log_shift)
    }
}

fn check_format_1_state(store: &Store) {
    let head = store.head();
    assert_eq!(head.size, 2600);
    assert_eq!(cairn_core::hex::to_hex(&head.root.unwrap()), FORMAT_1_ROOT);
    let tags = store.heads(0, usize::MAX);
    assert_eq!(tags.len(), 12);
    assert_eq!((tags[7].block, tags[7].size), (8, 2400));
    assert_eq!((tags[11].block, tags[11].size), (12, 2600));
}

/// A directory the format 1 build wrote opens read-only without a byte
/// changed, and a writer's open migrates it: the same head and tags, then
/// every protection of the current format (here: a flipped level node,
/// which format 1 never noticed, is refused).
#[test]
fn a_format_1_directory_opens_and_migrates() {
    let (_temp, dir) = format_1_copy();
    let before = contents(&dir);
    let fs = std_fs();
    let config = stored(&*fs, &dir);
    let store = Store::open_read_only(Arc::clone(&fs), &dir, config.clone()).unwrap();
    check_format_1_state(&store);
    drop(store);
    assert!(
        contents(&dir) == before,
        "a read-only open changed the directory"
    );

    let store = Store::open(Arc::clone(&fs), &dir, config.clone()).unwrap();
    check_format_1_state(&store);
    assert_eq!(
        store.stats().checkpoint_size,
        2600,
        "the migration's checkpoint"
    );
    store.close().unwrap();
    // 2,600 leaves at arity 4: levels 0, 1 and 2 have whole pages of final
    // nodes (2,599, 649 and 162), level 3 (40) only a partial one.
    for level in 0..=6 {
        let sums = dir.join(format!("levels/level-{level:02}.sums"));
        assert_eq!(sums.exists(), level <= 2, "{}", sums.display());
    }
    let log0 = std::fs::read(dir.join("log/000000000000.log")).unwrap();
    assert_eq!(u32::from_le_bytes(log0[8..12].try_into().unwrap()), 2);
    let store = Store::open(Arc::clone(&fs), &dir, config.clone()).unwrap();
    check_format_1_state(&store);
    // Appends go on, and the store reopens with them.
    store
        .append_tagged(&leaves(0..5), BlockTag::number(13))
        .unwrap()
        .token
        .wait(WAIT)
        .unwrap();
    let head = store.head();
    store.close().unwrap();
    let store = Store::open(Arc::clone(&fs), &dir, config.clone()).unwrap();
    assert_eq!(store.head(), head);
    drop(store);
    // Level 1, node 10 (a whole page of 128 nodes is there: 650 nodes).
    let level1 = dir.join("levels/level-01.nodes");
    let mut bytes = std::fs::read(&level1).unwrap();
    bytes[4096 + 32 * 10] ^= 1;
    std::fs::write(&level1, &bytes).unwrap();
    match Store::open(Arc::clone(&fs), &dir, config) {
        Err(StoreError::Corrupt { path, offset, .. }) => {
            assert_eq!((path, offset), (level1, 4096));
        }
        other => panic!("want Corrupt, got {other:?}"),
    }
}

/// Loads the directory `from` (on disk) into `fs` at `to`, everything
/// durable.
fn load(fs: &SimFs, from: &Path, to: &Path) {
    fs.create_dir(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            load(fs, &entry.path(), &target);
        } else {
            let file = fs.open(&target, OpenMode::CreateNew).unwrap();
            file.write_at(&std::fs::read(entry.path()).unwrap(), 0)
                .unwrap();
            file.sync_data().unwrap();
        }
    }
    fs.sync_dir(to).unwrap();
}

/// A power loss at every boundary of the migration leaves a directory
/// that opens read-only and as a writer with the same head and tags (a
/// writer's open finishing the migration).
#[test]
fn a_migration_survives_power_loss_at_every_boundary() {
    let fs = SimFs::new();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/format-1");
    load(&fs, &source, Path::new("/db"));
    fs.sync_dir(Path::new("/")).unwrap();
    fs.clear_trace();
    let config = stored(&fs, Path::new("/db"));
    let store = Store::open(Arc::new(fs.clone()), Path::new("/db"), config.clone()).unwrap();
    check_format_1_state(&store);
    drop(store);
    let ops = fs.op_count();
    assert!(ops > 10, "the migration wrote ({ops} operations)");
    let mut replay = fs.replay();
    let mut rng = rand::thread_rng();
    for k in 0..=ops {
        replay.seek(k);
        for mode in replay.crash_modes() {
            let crashed = replay.crash(&mode, &mut rng);
            let at = || format!("power loss at boundary {k} of {ops}, {mode:?}");
            let store =
                Store::open_read_only(Arc::new(crashed.clone()), Path::new("/db"), config.clone())
                    .unwrap_or_else(|e| panic!("{}: read-only open: {e}", at()));
            check_format_1_state(&store);
            drop(store);
            let store = Store::open(Arc::new(crashed.clone()), Path::new("/db"), config.clone())
                .unwrap_or_else(|e| panic!("{}: open: {e}", at()));
            check_format_1_state(&store);
        }
    }
}

/// A store closed cleanly reopens without reading again a page its
/// verified record vouches for; a file changed since (here rewritten with
/// the same bytes: its identity changed) is read and checked in full.
#[test]
fn the_verified_record_spares_unchanged_files_and_only_them() {
    let fs = SimFs::new();
    let store = create(&fs);
    append_waited(&store, 0..3000);
    store.checkpoint().unwrap();
    store.close().unwrap();
    let store = reopen(&fs).unwrap();
    let stats = store.stats();
    // 3,000 leaves at arity 4: whole pages 23 + 5 + 1 (levels 0, 1, 2).
    assert_eq!(
        (stats.pages_checked_at_open, stats.pages_vouched_at_open),
        (0, 29)
    );
    store.close().unwrap();
    // A reopen that wrote nothing leaves the record valid.
    let store = reopen(&fs).unwrap();
    assert_eq!(store.stats().pages_checked_at_open, 0);
    store.close().unwrap();
    let level1 = "/db/levels/level-01.nodes";
    let page = fs.read_all(Path::new(level1)).unwrap();
    write_bytes(&fs, level1, 4096, &page[4096..4128]);
    let store = reopen(&fs).unwrap();
    let stats = store.stats();
    assert_eq!(
        (stats.pages_checked_at_open, stats.pages_vouched_at_open),
        (5, 24)
    );
    drop(store);
    // `verify_on_open` (what `cairn check` asks) trusts no record.
    let mut verify = config(4, 10);
    verify.verify_on_open = true;
    let store = Store::open(Arc::new(fs.clone()), Path::new("/db"), verify).unwrap();
    assert_eq!(store.stats().pages_checked_at_open, 29);
    drop(store);
    // A damaged record vouches for nothing.
    write_bytes(&fs, "/db/verified", 30, &[0xff]);
    let store = reopen(&fs).unwrap();
    assert_eq!(store.stats().pages_vouched_at_open, 0);
}
