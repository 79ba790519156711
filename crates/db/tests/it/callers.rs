//! What the CLI and the server ask of the database instead of reaching into
//! the storage engine: opening as created ([`OpenOptions`]), the tree
//! alone, the files' sizes, error kinds, and where a stored node's
//! children are.

use std::time::Duration;

use cairn_core::{Arity, Hash, HashKind, LeanImt, TreeConfig};
use cairn_db::{
    BlockTag, Db, DbConfig, DbError, DiskUsage, ErrorKind, OpenOptions, StoreError, is_database,
};

fn config() -> DbConfig {
    let mut config =
        DbConfig::new(TreeConfig::new(Arity::new(4).unwrap(), HashKind::Blake3).with_max_depth(4));
    config.store.log_shift = 10;
    config.explicit_finality = true;
    config
}

fn values(range: std::ops::Range<u64>) -> Vec<Hash> {
    range.map(|i| cairn_testkit::leaf(11, i)).collect()
}

#[test]
fn open_options_open_a_database_as_it_was_created() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    assert!(!is_database(&path));
    let db = Db::create(&path, config()).unwrap();
    db.append_batch(&values(0..50))
        .unwrap()
        .token
        .wait(Duration::from_secs(5))
        .unwrap();
    db.close().unwrap();
    assert!(is_database(&path));
    assert!(!is_database(dir.path()), "the parent holds no cairn.meta");

    let stored = DbConfig::stored(&path).unwrap();
    assert_eq!(stored.tree(), config().tree());
    assert_eq!(stored.log_file_leaves(), 1024);
    assert!(stored.unique && stored.explicit_finality);

    let quiet = OpenOptions::new()
        .background(false)
        .verify(true)
        .config(&path)
        .unwrap();
    assert_eq!(quiet.store.flush_interval, None);
    assert_eq!(quiet.store.checkpoint, Default::default());
    assert!(quiet.store.verify_on_open);
    let default = OpenOptions::new().config(&path).unwrap();
    assert!(default.store.flush_interval.is_some() && !default.store.verify_on_open);

    // Read-only: beside a writer, refusing writes.
    let writer = OpenOptions::new().background(false).open(&path).unwrap();
    let reader = OpenOptions::new().read_only(true).open(&path).unwrap();
    assert_eq!(reader.head(), writer.head());
    assert_eq!(reader.index_of(&values(7..8)[0]).unwrap(), Some(7));
    let refused = reader.append(values(99..100)[0]).unwrap_err();
    assert!(matches!(
        refused,
        DbError::Store(StoreError::ReadOnly { .. })
    ));
    assert_eq!(refused.kind(), ErrorKind::Other);
    reader.close().unwrap();

    // The tree alone, read-only, without the set.
    let tree = Db::read_tree(&path).unwrap();
    assert_eq!(tree.head(), writer.head());
    let leaves = values(0..50);
    let mut reference = LeanImt::from_leaves(config().tree(), &leaves).unwrap();
    assert_eq!(tree.root(), reference.root());
    writer.close().unwrap();

    let missing = OpenOptions::new()
        .open(dir.path().join("nothing"))
        .unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::Other, "{missing}");
}

#[test]
fn disk_usage_counts_every_file_by_kind() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = Db::create(&path, config()).unwrap();
    db.append_batch(&values(0..200)).unwrap();
    db.checkpoint().unwrap();
    db.append_tagged(
        &values(200..210),
        BlockTag {
            number: 1,
            hash: None,
        },
    )
    .unwrap()
    .token
    .wait(Duration::from_secs(5))
    .unwrap();
    let open = db.disk_usage().unwrap();
    db.close().unwrap();
    // A close writes the verified record (counted as other) and nothing
    // else that changes a length.
    let usage = DiskUsage::of(&path).unwrap();
    let mut same = open;
    same.apparent.other = usage.apparent.other;
    same.allocated.other = usage.allocated.other;
    assert_eq!(same, usage, "open or closed");
    let length = |name: &str| std::fs::metadata(path.join(name)).unwrap().len();
    let apparent = usage.apparent;
    assert_eq!(apparent.meta, length("cairn.meta"));
    assert_eq!(apparent.checkpoint, length("checkpoint"));
    assert_eq!(apparent.set, length("nullifiers.set"));
    assert_eq!(
        apparent.other,
        length("LOCK") + length("heads") + length("verified")
    );
    let in_dir = |name: &str| -> u64 {
        std::fs::read_dir(path.join(name))
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap().len())
            .sum()
    };
    assert_eq!(apparent.log, in_dir("log"));
    assert_eq!(apparent.levels, in_dir("levels"));
    assert!(apparent.log > 4096 + 200 * 32 && apparent.levels > 0);
    assert_eq!(
        apparent.total(),
        apparent.log
            + apparent.levels
            + apparent.checkpoint
            + apparent.set
            + apparent.meta
            + apparent.other
    );
    // The log's leaf region is sparse: far less is allocated than its length.
    assert!(usage.allocated.log < apparent.log, "{usage:?}");
}

#[test]
fn error_kinds_name_what_callers_tell_apart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = Db::create(&path, config()).unwrap();
    let batch = values(0..10);
    db.append_batch(&batch).unwrap();
    fn kind<T>(result: Result<T, DbError>) -> ErrorKind {
        match result {
            Ok(_) => panic!("an error was expected"),
            Err(error) => error.kind(),
        }
    }
    assert_eq!(kind(db.append_batch(&batch[..2])), ErrorKind::Duplicate);
    assert_eq!(kind(db.append_batch(&[])), ErrorKind::InvalidBatch);
    // 4^4 = 256 leaves fit at max depth 4.
    assert_eq!(kind(db.append_batch(&values(100..400))), ErrorKind::Full);
    let tag = |number| BlockTag { number, hash: None };
    db.append_tagged(&values(20..21), tag(5)).unwrap();
    assert_eq!(
        kind(db.append_tagged(&values(21..22), tag(5))),
        ErrorKind::BlockOrder
    );
    db.finalize(8).unwrap();
    assert_eq!(
        kind(db.truncate(4)),
        ErrorKind::BelowFinalized { finalized: 8 }
    );
    assert_eq!(kind(db.truncate(1_000)), ErrorKind::NotFound);
    assert_eq!(kind(db.truncate_to_block(2)), ErrorKind::NotFound);
    assert_eq!(
        kind(Db::open(&path)),
        ErrorKind::Other,
        "the directory is open in this process"
    );
    db.close().unwrap();
    let mut other = config();
    other.unique = false;
    assert_eq!(kind(Db::open_with(&path, other)), ErrorKind::Config);
    assert_eq!(kind(Db::create(&path, config())), ErrorKind::Config);

    // A corruption: unavailable, naming its file and offset.
    std::fs::write(path.join("checkpoint"), b"not a checkpoint").unwrap();
    let corrupt = Db::open(&path).unwrap_err();
    assert_eq!(corrupt.kind(), ErrorKind::Unavailable);
    let (file, offset) = corrupt
        .corrupt_location()
        .expect("a corruption names its file");
    assert_eq!((file, offset), (path.join("checkpoint").as_path(), 0));
    assert_eq!(DbError::NoSet.kind(), ErrorKind::Config);
    assert_eq!(DbError::NoSet.corrupt_location(), None);
}

#[test]
fn a_wrong_stored_node_points_at_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = Db::create(&path, config()).unwrap();
    db.append_batch(&values(0..100)).unwrap();
    db.checkpoint().unwrap();
    // Node 3 of level 2 covers nodes 12..16 of level 1 (25 nodes there).
    let level2 = path.join("levels/level-02.nodes");
    let children = db.children_of_stored_node(&level2, 4096 + 3 * 32).unwrap();
    assert_eq!((children.level, children.first, children.end), (1, 12, 16));
    assert_eq!(children.file, path.join("levels/level-01.nodes"));
    assert_eq!(children.offset, 4096 + 12 * 32);
    // Node 24 of level 1 covers leaves 96..100, in log file 0.
    let level1 = path.join("levels/level-01.nodes");
    let leaves = db.children_of_stored_node(&level1, 4096 + 24 * 32).unwrap();
    assert_eq!((leaves.level, leaves.first, leaves.end), (0, 96, 100));
    assert_eq!(leaves.file, path.join("log/000000000000.log"));
    assert_eq!(leaves.offset, 4096 + 96 * 32);
    assert_eq!(
        db.children_of_stored_node(&path.join("checkpoint"), 4096),
        None
    );
    assert_eq!(
        db.children_of_stored_node(&level1, 10),
        None,
        "inside the header"
    );
    db.close().unwrap();
}

#[test]
fn a_verified_open_reports_a_wrong_node_with_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = Db::create(&path, config()).unwrap();
    db.append_batch(&values(0..100)).unwrap();
    db.checkpoint().unwrap();
    db.close().unwrap();
    // Node 10 of level 1 covers leaves 40..44, in log file 0. It is made
    // wrong under a matching sum (the CRC of level 1's partial last page,
    // which the checkpoint holds), as a faulty writer would leave it:
    // only recomputing the level finds it (a flip alone fails its sum).
    let level1 = path.join("levels/level-01.nodes");
    let mut bytes = std::fs::read(&level1).unwrap();
    bytes[4096 + 10 * 32 + 3] ^= 1;
    std::fs::write(&level1, &bytes).unwrap();
    let store_id = cairn_store::stored_config(&cairn_store::StdFs, &path)
        .unwrap()
        .store_id;
    let checkpoint_path = path.join("checkpoint");
    let mut checkpoint =
        cairn_store::decoders::checkpoint(&std::fs::read(&checkpoint_path).unwrap(), store_id)
            .unwrap();
    let final_nodes = checkpoint.levels[1].0 as usize;
    checkpoint.integrity.as_mut().unwrap().partial_pages[1] =
        crc32c::crc32c(&bytes[4096..4096 + 32 * final_nodes]);
    std::fs::write(
        &checkpoint_path,
        cairn_store::decoders::encode_checkpoint(&checkpoint, store_id),
    )
    .unwrap();

    let error = OpenOptions::new()
        .read_only(true)
        .verify(true)
        .open(&path)
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unavailable);
    assert!(error.is_storage_fault());
    assert_eq!(
        error.corrupt_location(),
        Some((level1.as_path(), 4096 + 10 * 32))
    );
    let mismatch = error.node_mismatch().expect("a typed node mismatch");
    assert_eq!((mismatch.level, mismatch.index), (1, 10));
    assert_eq!(mismatch.file, level1);
    let children = &mismatch.children;
    assert_eq!((children.level, children.first, children.end), (0, 40, 44));
    assert_eq!(children.file, path.join("log/000000000000.log"));
    assert_eq!(children.offset, 4096 + 40 * 32);

    // Opened without verification, the same database names the same
    // children, and other corruptions carry no node.
    let db = OpenOptions::new().read_only(true).open(&path).unwrap();
    let from_db = db.children_of_stored_node(&level1, 4096 + 10 * 32).unwrap();
    assert_eq!(&from_db, children);
    db.close().unwrap();
    std::fs::write(path.join("checkpoint"), b"not a checkpoint").unwrap();
    let other = Db::open(&path).unwrap_err();
    assert!(other.corrupt_location().is_some() && other.node_mismatch().is_none());
}
