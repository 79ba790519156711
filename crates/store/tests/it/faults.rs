//! Fault injection through the simulated file system: failed fsyncs,
//! a full disk, corrupted records, stray and short files.

use std::path::Path;
use std::sync::Arc;

use cairn_store::{Fs, Store, StoreError};
use cairn_testkit::sim::SimFs;

use crate::support::*;

fn sim_store(fs: &SimFs) -> Store {
    Store::create(Arc::new(fs.clone()), Path::new("/db"), config(4, 10)).unwrap()
}

fn reopen(fs: &SimFs) -> Result<Store, StoreError> {
    Store::open(
        Arc::new(fs.clone()) as Arc<dyn Fs>,
        Path::new("/db"),
        config(4, 10),
    )
}

/// rotortree 0.20 failure 5: a durability wait hung when flushing failed.
#[test]
fn a_failed_fsync_fails_every_waiter_and_later_append_and_loses_nothing_acknowledged() {
    for nth in [1u64, 2, 3] {
        let fs = SimFs::new();
        let store = sim_store(&fs);
        let first = store.append_batch(&leaves(0..100)).unwrap();
        first.token.wait(WAIT).unwrap();
        fs.fail_nth_sync_data(nth);
        let mut failed = None;
        for round in 0..3u64 {
            let appended = store.append_batch(&leaves(100 + round * 10..110 + round * 10));
            match appended.map(|a| a.token.wait(WAIT)) {
                Ok(Ok(())) => continue,
                Ok(Err(e)) | Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        let failed = failed.expect("an injected fsync failure must surface");
        assert!(
            failed.to_string().contains("injected fsync failure"),
            "{failed}"
        );
        // Poisoned: nothing more is accepted or acknowledged.
        assert!(matches!(
            store.append(leaf(999)),
            Err(StoreError::Poisoned { .. })
        ));
        assert!(matches!(store.flush(), Err(StoreError::Poisoned { .. })));
        assert!(store.checkpoint().is_err());
        let durable = store.durable_size();
        drop(store);
        // After power loss, everything acknowledged is there.
        let crashed = fs.crash(
            &cairn_testkit::sim::CrashMode::DropUnsynced,
            &mut rand::thread_rng(),
        );
        let store = reopen(&crashed).unwrap();
        assert!(
            store.size() >= durable,
            "nth {nth}: {} < {durable}",
            store.size()
        );
        check_prefix(&store, 4);
    }
}

#[test]
fn a_full_disk_is_a_clear_error_and_the_store_reopens_with_everything_acknowledged() {
    for short in [false, true] {
        let fs = SimFs::new();
        let store = sim_store(&fs);
        store
            .append_batch(&leaves(0..50))
            .unwrap()
            .token
            .wait(WAIT)
            .unwrap();
        fs.set_write_budget(Some(700), short);
        let mut error = None;
        for round in 0..20u64 {
            let result = store
                .append_batch(&leaves(50 + round * 10..60 + round * 10))
                .and_then(|a| a.token.wait(WAIT));
            if let Err(e) = result {
                error = Some(e);
                break;
            }
        }
        let error = error.expect("the disk fills up");
        assert!(
            matches!(&error, StoreError::Io { kind, .. } if *kind == std::io::ErrorKind::StorageFull),
            "{error:?}"
        );
        let durable = store.durable_size();
        drop(store);
        fs.clear_faults();
        let store = reopen(&fs).unwrap();
        assert!(store.size() >= durable);
        check_prefix(&store, 4);
    }
}

fn corrupt_byte(fs: &SimFs, path: &str, offset: u64) {
    let file = fs
        .open(Path::new(path), cairn_store::fs::OpenMode::Existing)
        .unwrap();
    let mut byte = [0u8];
    file.read_exact_at(&mut byte, offset).unwrap();
    byte[0] ^= 0x40;
    file.write_at(&byte, offset).unwrap();
    file.sync_data().unwrap();
}

const LOG0: &str = "/db/log/000000000000.log";
const FRAMES: u64 = 4096 + 32 * 1024;

/// Three acknowledged commits of ten leaves each, then a `kill -9`
/// (nothing after the last commit: no seal).
fn three_frames() -> SimFs {
    let fs = SimFs::new();
    let store = sim_store(&fs);
    for round in 0..3u64 {
        store
            .append_batch(&leaves(round * 10..round * 10 + 10))
            .unwrap()
            .token
            .wait(WAIT)
            .unwrap();
    }
    let killed = fs.op_count();
    drop(store);
    fs.crash_at(
        killed,
        &cairn_testkit::sim::CrashMode::KeepUnsynced,
        &mut rand::thread_rng(),
    )
}

/// rotortree 0.20 failure 4: corruption in the middle of the log silently
/// truncated it. Here every acknowledged frame but the last is protected by
/// the ones after it (their chain, and the tail record of the commit
/// after it): rot is an error naming the file and the damaged offset.
#[test]
fn rot_in_an_acknowledged_frame_is_an_error_not_a_truncation() {
    // A bit flip in the leaves of frame 0, in its header, in frame 1's
    // leaf CRC and in frame 1's leaves: each error names where the log
    // stopped being valid, at or before the damage.
    for (offset, what, reported) in [
        (4096 + 32 * 3 + 5, "leaves of frame 0", 4096),
        (FRAMES + 9, "frame 0", FRAMES),
        (FRAMES + 32 + 20, "frame 1's leaf CRC", FRAMES + 32),
        (4096 + 32 * 12, "leaves of frame 1", 4096 + 32 * 10),
    ] {
        let fs = three_frames();
        corrupt_byte(&fs, LOG0, offset);
        match reopen(&fs) {
            Err(StoreError::Corrupt {
                path,
                offset: at,
                detail,
            }) => {
                assert_eq!(path, Path::new(LOG0), "{what}");
                assert_eq!(at, reported, "{what}: {detail}");
                assert!(detail.contains("acknowledged"), "{what}: {detail}");
            }
            other => panic!("{what}: want Corrupt, got {other:?}"),
        }
    }
}

/// Rot in the last acknowledged frame of a store that was not closed (no
/// seal) is the one loss indistinguishable from a torn commit: dropped,
/// the rest intact. Closed (sealed), the same damage is refused.
#[test]
fn rot_in_the_last_frame_is_a_torn_commit_unless_the_log_was_sealed() {
    let fs = three_frames();
    corrupt_byte(&fs, LOG0, 4096 + 32 * 25);
    let store = reopen(&fs).unwrap();
    assert_eq!(check_prefix(&store, 4), 20);
    drop(store);

    // The same commits, closed.
    let fs = SimFs::new();
    let store = sim_store(&fs);
    for round in 0..3u64 {
        store
            .append_batch(&leaves(round * 10..round * 10 + 10))
            .unwrap()
            .token
            .wait(WAIT)
            .unwrap();
    }
    store.close().unwrap();
    corrupt_byte(&fs, LOG0, 4096 + 32 * 25);
    match reopen(&fs) {
        Err(StoreError::Corrupt {
            path,
            offset,
            detail,
        }) => {
            assert_eq!(
                (path.as_path(), offset),
                (Path::new(LOG0), 4096 + 32 * 20),
                "{detail}"
            );
            assert!(
                detail.contains("frame 3 ending at leaf 30 was durable"),
                "{detail}"
            );
        }
        other => panic!("want Corrupt, got {other:?}"),
    }
}

#[test]
fn zero_filled_tails_open_as_torn_tails() {
    let fs = three_frames();
    let file = fs
        .open(Path::new(LOG0), cairn_store::fs::OpenMode::Existing)
        .unwrap();
    let len = file.len().unwrap();
    file.write_at(&vec![0u8; 8192], len).unwrap();
    file.sync_data().unwrap();
    let store = reopen(&fs).unwrap();
    assert_eq!(check_prefix(&store, 4), 30);
}

/// rotortree 0.20 failure 4, second half: a corrupt checkpoint meta fell
/// back silently to replaying what was left.
#[test]
fn a_corrupt_or_short_checkpoint_is_an_error() {
    let fs = SimFs::new();
    let store = sim_store(&fs);
    store.append_batch(&leaves(0..300)).unwrap();
    store.checkpoint().unwrap();
    drop(store);
    let good = fs.read_all(Path::new("/db/checkpoint")).unwrap();
    corrupt_byte(&fs, "/db/checkpoint", 33);
    assert!(
        matches!(reopen(&fs), Err(StoreError::Corrupt { path, .. }) if path == Path::new("/db/checkpoint"))
    );
    // A level file shorter than the checkpoint says: an error before mapping.
    let fs2 = SimFs::new();
    let store = sim_store(&fs2);
    store.append_batch(&leaves(0..300)).unwrap();
    store.checkpoint().unwrap();
    drop(store);
    let level1 = fs2
        .read_all(Path::new("/db/levels/level-01.nodes"))
        .unwrap();
    fs2.remove_file(Path::new("/db/levels/level-01.nodes"))
        .unwrap();
    let file = fs2
        .open(
            Path::new("/db/levels/level-01.nodes"),
            cairn_store::fs::OpenMode::CreateNew,
        )
        .unwrap();
    file.write_at(&level1[..level1.len() - 64], 0).unwrap();
    match reopen(&fs2) {
        Err(StoreError::Corrupt { path, detail, .. }) => {
            assert_eq!(path, Path::new("/db/levels/level-01.nodes"));
            assert!(detail.contains("the checkpoint says"), "{detail}");
        }
        other => panic!("want Corrupt, got {other:?}"),
    }
    // Version 3: 104 fixed bytes (finality, rollback epoch, heads, rollback
    // floor, the log's chain value), 48 per level (with the CRC of its
    // partial last page), the CRC.
    assert_eq!(good.len(), 104 + 48 * 6 + 4);
}

#[test]
fn stray_files_are_reported_and_a_leftover_temporary_checkpoint_is_ignored() {
    let fs = three_frames();
    let stray = fs
        .open(
            Path::new("/db/log/notes.txt"),
            cairn_store::fs::OpenMode::CreateNew,
        )
        .unwrap();
    drop(stray);
    assert!(
        matches!(reopen(&fs), Err(StoreError::Corrupt { path, .. }) if path == Path::new("/db/log/notes.txt"))
    );
    fs.remove_file(Path::new("/db/log/notes.txt")).unwrap();
    // A log file beyond a missing one.
    let gap = fs
        .open(
            Path::new("/db/log/000000000002.log"),
            cairn_store::fs::OpenMode::CreateNew,
        )
        .unwrap();
    drop(gap);
    assert!(matches!(reopen(&fs), Err(StoreError::Corrupt { .. })));
    fs.remove_file(Path::new("/db/log/000000000002.log"))
        .unwrap();
    let tmp = fs
        .open(
            Path::new("/db/checkpoint.tmp"),
            cairn_store::fs::OpenMode::CreateNew,
        )
        .unwrap();
    tmp.write_at(b"half a checkpoint", 0).unwrap();
    drop(tmp);
    let store = reopen(&fs).unwrap();
    assert_eq!(check_prefix(&store, 4), 30);
}

/// A flipped node of a level file is refused at every open: its page's
/// CRC (here the partial last page's, in the checkpoint) no longer holds.
#[test]
fn a_flipped_level_node_is_refused_at_open_naming_its_page() {
    let fs = SimFs::new();
    let store = sim_store(&fs);
    store.append_batch(&leaves(0..300)).unwrap();
    store.checkpoint().unwrap();
    drop(store);
    corrupt_byte(&fs, "/db/levels/level-01.nodes", 4096 + 32 * 10 + 5);
    match reopen(&fs) {
        Err(StoreError::Corrupt {
            path,
            offset,
            detail,
        }) => {
            assert_eq!(path, Path::new("/db/levels/level-01.nodes"));
            assert_eq!(offset, 4096, "the page's first node: {detail}");
            assert!(detail.contains("nodes 0..74 of level 1"), "{detail}");
            assert!(detail.contains("the checkpoint says"), "{detail}");
        }
        other => panic!("want Corrupt, got {other:?}"),
    }
}

/// Verification at open names a node that is not the hash of its
/// children as a typed error: where the node is and where its children
/// are, so a caller reports both without reopening the store. (A node
/// stored wrong under a matching sum, as a faulty writer would leave it:
/// only recomputing finds it.)
#[test]
fn verification_reports_a_wrong_node_and_where_its_children_are() {
    let fs = SimFs::new();
    let store = sim_store(&fs);
    store.append_batch(&leaves(0..300)).unwrap();
    store.checkpoint().unwrap();
    drop(store);
    // Node 10 of level 1 (arity 4) covers leaves 40..44, in log file 0;
    // the page CRC the checkpoint holds is made to match the wrong node.
    corrupt_byte(&fs, "/db/levels/level-01.nodes", 4096 + 32 * 10 + 5);
    let level1 = fs.read_all(Path::new("/db/levels/level-01.nodes")).unwrap();
    let checkpoint_bytes = fs.read_all(Path::new("/db/checkpoint")).unwrap();
    let store_id = cairn_store::stored_config(&fs, Path::new("/db"))
        .unwrap()
        .store_id;
    let mut checkpoint = cairn_store::decoders::checkpoint(&checkpoint_bytes, store_id).unwrap();
    let integrity = checkpoint.integrity.as_mut().unwrap();
    integrity.partial_pages[1] = crc32c::crc32c(&level1[4096..4096 + 32 * 74]);
    let rewritten = cairn_store::decoders::encode_checkpoint(&checkpoint, store_id);
    let file = fs
        .open(
            Path::new("/db/checkpoint"),
            cairn_store::fs::OpenMode::Existing,
        )
        .unwrap();
    file.write_at(&rewritten, 0).unwrap();
    file.sync_data().unwrap();
    let mut verify = config(4, 10);
    verify.verify_on_open = true;
    let error = Store::open(
        Arc::new(fs.clone()) as Arc<dyn Fs>,
        Path::new("/db"),
        verify,
    )
    .unwrap_err();
    let StoreError::NodeMismatch(mismatch) = &error else {
        panic!("want NodeMismatch, got {error:?}");
    };
    assert_eq!(
        (mismatch.level, mismatch.index, mismatch.offset),
        (1, 10, 4096 + 32 * 10)
    );
    assert_eq!(mismatch.file, Path::new("/db/levels/level-01.nodes"));
    let children = &mismatch.children;
    assert_eq!((children.level, children.first, children.end), (0, 40, 44));
    assert_eq!(children.file, Path::new("/db/log/000000000000.log"));
    assert_eq!(children.offset, 4096 + 32 * 40);
    assert_eq!(
        error.to_string(),
        "corrupt /db/levels/level-01.nodes at offset 4416: node 10 of level 1 is not the hash of its children"
    );
    assert!(error.is_storage_fault());
    assert_eq!(
        error.corrupt_location(),
        Some((Path::new("/db/levels/level-01.nodes"), 4416))
    );
    // Without recomputation the store opens: the sums hold.
    reopen(&fs).unwrap();
}
