//! Readers of a database of several trees (`open_tree`, `open_trees`):
//! they answer as the block journal says, even where a tree's own files
//! trail it (a crash before the catch-up) or still hold what a rollback
//! removed (a writer that has not written since), and write nothing.

use std::collections::BTreeMap;
use std::path::Path;

use cairn_core::{Hash, HashKind, TreeKind};
use cairn_db::{BlockId, Forest, OpenOptions, TREES_DIR};

use crate::support::{config_of, copy_dir, fixed_tree, tree, value};

fn block(number: u64) -> BlockId {
    BlockId {
        number,
        hash: [number as u8; 32],
    }
}

fn values(seed: u64, from: u64, to: u64) -> Vec<Hash> {
    (from..to).map(|i| value(seed, i)).collect()
}

fn three(path: &Path) -> Forest {
    let forest = Forest::create(path).unwrap();
    forest
        .add_tree("notes", config_of(tree(2, HashKind::Blake3)))
        .unwrap();
    forest
        .add_tree("groups", config_of(fixed_tree(4, HashKind::Sha256)))
        .unwrap();
    forest
        .add_tree(
            "nullifiers",
            config_of(tree(2, HashKind::Blake3).with_kind(TreeKind::Indexed)),
        )
        .unwrap();
    forest
}

fn commit(forest: &Forest, number: u64) {
    let i = number * 3;
    forest
        .commit_block(
            block(number),
            &[
                ("notes", &values(1, i, i + 3)),
                ("groups", &values(2, i, i + 2)),
                ("nullifiers", &values(3, i, i + 3)),
            ],
        )
        .unwrap();
}

/// (name, size, root) of every tree a reader opens.
fn read_heads(path: &Path) -> (Vec<(String, u64, Option<Hash>)>, bool) {
    let trees = cairn_db::open_trees(path, OpenOptions::new()).unwrap();
    let replayed = trees.iter().any(|t| t.replayed);
    let heads = trees
        .iter()
        .map(|t| {
            let head = t.db.head();
            (t.name.clone(), head.size, head.root)
        })
        .collect();
    (heads, replayed)
}

fn writer_heads(forest: &Forest) -> Vec<(String, u64, Option<Hash>)> {
    forest.apply().unwrap();
    forest
        .trees()
        .into_iter()
        .map(|t| {
            let head = t.db.head();
            (t.name, head.size, head.root)
        })
        .collect()
}

/// Every file under `dir` with its bytes.
fn contents(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut all = BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            } else {
                let name = entry
                    .path()
                    .strip_prefix(dir)
                    .unwrap()
                    .display()
                    .to_string();
                all.insert(name, std::fs::read(entry.path()).unwrap());
            }
        }
    }
    all
}

#[test]
fn a_reader_answers_with_the_journal_when_the_trees_files_trail_it() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("db");
    let forest = three(&path);
    commit(&forest, 1);
    forest.close().unwrap();
    // The trees' files as they were after block 1.
    let saved = temp.path().join("trees-at-1");
    copy_dir(&path.join(TREES_DIR), &saved);

    let forest = Forest::open(&path).unwrap();
    commit(&forest, 2);
    commit(&forest, 3);
    let want = writer_heads(&forest);
    // The journal with blocks 2 and 3 in frames (close rewrites it).
    let journal = std::fs::read(path.join(cairn_db::JOURNAL)).unwrap();
    forest.close().unwrap();
    assert_eq!(
        read_heads(&path),
        (want.clone(), false),
        "settled: read as is"
    );

    // A crash after the journal's frames, before any tree caught up.
    std::fs::remove_dir_all(path.join(TREES_DIR)).unwrap();
    copy_dir(&saved, &path.join(TREES_DIR));
    std::fs::write(path.join(cairn_db::JOURNAL), &journal).unwrap();
    let before = contents(&path);
    let (heads, replayed) = read_heads(&path);
    assert!(replayed, "the trees trail the journal");
    assert_eq!(heads, want, "every tree as the journal holds it");
    let notes = cairn_db::open_tree(&path, Some("notes"), OpenOptions::new()).unwrap();
    assert!(notes.replayed);
    assert_eq!(
        notes.db.index_of(&value(1, 10)).unwrap(),
        Some(7),
        "a value only the journal holds is found"
    );
    assert_eq!(notes.values().unwrap().size(), 9);
    let nullifiers = cairn_db::open_tree(&path, Some("nullifiers"), OpenOptions::new()).unwrap();
    assert_eq!(nullifiers.db.head(), {
        let h = &want[2];
        cairn_core::TreeHead {
            size: h.1,
            root: h.2,
        }
    });
    drop((notes, nullifiers));
    assert!(
        contents(&path) == before,
        "a reader writes nothing to the directory"
    );

    // The writer's own open agrees.
    let forest = Forest::open(&path).unwrap();
    assert_eq!(writer_heads(&forest), want);
    forest.close().unwrap();
}

#[test]
fn a_reader_beside_a_writer_never_sees_leaves_a_rollback_removed() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("db");
    let forest = three(&path);
    let mut at = Vec::new();
    for number in 1..=4 {
        commit(&forest, number);
        at.push(writer_heads(&forest));
    }
    // The rollback is journaled; the trees' files still hold blocks 2-4.
    forest.truncate_to_block(1).unwrap();
    assert_eq!(writer_heads(&forest), at[0]);
    let (heads, replayed) = read_heads(&path);
    assert!(replayed, "the trees' files hold what the rollback removed");
    assert_eq!(heads, at[0]);
    let notes = cairn_db::open_tree(&path, Some("notes"), OpenOptions::new()).unwrap();
    assert_eq!(
        notes.db.index_of(&value(1, 6)).unwrap(),
        None,
        "a value of a removed block is not found"
    );
    drop(notes);
    // New blocks after the rollback: the reader follows the writer.
    commit(&forest, 2);
    let now = writer_heads(&forest);
    assert_eq!(read_heads(&path).0, now);
    // A lean tree that grew again after the rollback settled it in its
    // files: the journal's values after the rollback are its leaves, so
    // it is read from its files.
    let notes = cairn_db::open_tree(&path, Some("notes"), OpenOptions::new()).unwrap();
    assert!(!notes.replayed);
    assert_eq!(notes.db.head().root, now[0].2);
    drop(notes);
    forest.close().unwrap();
    assert_eq!(read_heads(&path).0, now);
}

#[test]
fn one_tree_is_found_by_name_and_an_unknown_name_is_refused() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("db");
    let forest = three(&path);
    commit(&forest, 1);
    forest.close().unwrap();
    let groups = cairn_db::open_tree(&path, Some("groups"), OpenOptions::new()).unwrap();
    assert_eq!((groups.name.as_str(), groups.db.size()), ("groups", 2));
    assert!(groups.db.is_read_only());
    let missing = cairn_db::open_tree(&path, Some("missing"), OpenOptions::new()).unwrap_err();
    assert!(
        missing.to_string().contains("notes, groups, nullifiers"),
        "{missing}"
    );
    let none = cairn_db::open_tree(&path, None, OpenOptions::new()).unwrap_err();
    assert!(none.to_string().contains("default"), "{none}");
}

#[test]
fn a_reader_opening_while_the_writer_makes_trees_first_files_is_not_refused() {
    // Each block is the first write of a tree made without its files: the
    // writer's catch-up makes them while a reader, replaying the journal
    // in memory, may be making the same tree's files there. A reader that
    // meets the writer's file instead retries; it never fails for it.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let forest = Forest::create(&path).unwrap();
    const TREES: u64 = 40;
    for k in 0..TREES {
        forest
            .add_tree(&format!("t{k}"), config_of(tree(2, HashKind::Blake3)))
            .unwrap();
    }
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            let mut opens = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) || opens == 0 {
                let trees = cairn_db::open_trees(&path, OpenOptions::new())
                    .unwrap_or_else(|e| panic!("open {opens}: {e}"));
                assert_eq!(trees.len() as u64, TREES);
                opens += 1;
            }
            opens
        });
        for k in 0..TREES {
            let name = format!("t{k}");
            forest
                .commit_block(block(k + 1), &[(name.as_str(), &values(k, 0, 3))])
                .unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(reader.join().unwrap() > 0);
    });
    forest.close().unwrap();
    let (heads, _) = read_heads(&path);
    assert!(heads.iter().all(|(_, size, _)| *size == 3), "{heads:?}");
}
