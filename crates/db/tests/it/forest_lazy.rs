//! The trees of a database of several are created without their files: an
//! empty tree is its directory and `cairn.meta` until its first write,
//! which makes `log/`, `levels/`, the checkpoint and the first log file.
//! Checked here: what exists when, reads of an empty tree (writing and
//! read-only), a power loss at every file-system operation of the first
//! write (each state reopens, twice, and takes writes after), a tree
//! directory with every file (as earlier builds made them) still opening,
//! damage after the first write still refused, and single-tree databases
//! keeping their files from creation on.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairn_core::{Hash, HashKind};
use cairn_db::{BlockId, Database, DbConfig, Forest, OpenOptions};
use cairn_store::Fs;
use cairn_testkit::sim::SimFs;
use rand::SeedableRng;

use crate::support::{config, reference_root, value};

fn block(number: u64) -> BlockId {
    BlockId {
        number,
        hash: [number as u8; 32],
    }
}

fn values(seed: u64, from: u64, to: u64) -> Vec<Hash> {
    (from..to).map(|i| value(seed, i)).collect()
}

/// Every file and directory under `dir`, relative to it.
fn files_under(dir: &Path) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            found.insert(
                path.strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
            );
            if path.is_dir() {
                stack.push(path);
            }
        }
    }
    found
}

fn names(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

/// The files of a tree that holds leaves (a Lean tree of arity 2 with a
/// nullifier set, before any level file or set checkpoint).
const MADE: [&str; 6] = [
    "LOCK",
    "cairn.meta",
    "checkpoint",
    "levels",
    "log",
    "log/000000000000.log",
];

#[test]
fn an_empty_tree_is_its_directory_and_meta_until_its_first_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let forest = Forest::create(&path).unwrap();
    forest
        .add_tree("empty", config(2, HashKind::Blake3))
        .unwrap();
    forest
        .add_tree("full", config(2, HashKind::Blake3))
        .unwrap();
    let leaves = values(1, 0, 5);
    forest
        .commit_block(block(1), &[("full", leaves.as_slice())])
        .unwrap();
    forest.checkpoint().unwrap();
    forest.close().unwrap();
    let empty = path.join("trees/empty");
    let idle = names(&["LOCK", "cairn.meta"]);
    assert_eq!(files_under(&empty), idle);
    assert!(files_under(&path.join("trees/full")).is_superset(&names(&MADE)));

    // Reads of the empty tree: a writing open (which writes nothing to
    // it), a reader of the database, a read-only open of its directory.
    let forest = Forest::open(&path).unwrap();
    assert_eq!(forest.tree("empty").unwrap().head().size, 0);
    assert_eq!(
        forest.tree("full").unwrap().head().root,
        reference_root(2, HashKind::Blake3, &leaves)
    );
    forest.checkpoint().unwrap();
    forest.close().unwrap();
    assert_eq!(files_under(&empty), idle);
    let read = cairn_db::open_tree(&path, Some("empty"), OpenOptions::new()).unwrap();
    assert_eq!(read.db.head().size, 0);
    assert!(!read.replayed);
    drop(read);
    let alone = Database::open_read_only(&empty).unwrap();
    assert_eq!(alone.head().size, 0);
    drop(alone);
    assert_eq!(files_under(&empty), idle);

    // The first write makes its files; they open as any tree's.
    let forest = Forest::open(&path).unwrap();
    let more = values(2, 0, 3);
    forest
        .commit_block(block(2), &[("empty", more.as_slice())])
        .unwrap();
    forest.apply().unwrap();
    assert!(files_under(&empty).is_superset(&names(&MADE)));
    forest.close().unwrap();
    let forest = Forest::open(&path).unwrap();
    assert_eq!(
        forest.tree("empty").unwrap().head().root,
        reference_root(2, HashKind::Blake3, &more)
    );
    forest.close().unwrap();
}

/// A tree directory with every file from its creation on (what earlier
/// builds made, and what a single-tree database still is) opens in a
/// database of several unchanged, and takes writes.
#[test]
fn a_tree_directory_made_with_every_file_still_opens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let forest = Forest::create(&path).unwrap();
    forest.add_tree("old", config(2, HashKind::Blake3)).unwrap();
    forest.close().unwrap();
    // The same tree as an eager store (format 2 without the lazy flag).
    let tree_dir = path.join("trees/old");
    std::fs::remove_dir_all(&tree_dir).unwrap();
    let mut eager: DbConfig = config(2, HashKind::Blake3);
    eager.explicit_finality = true;
    Database::create(&tree_dir, eager).unwrap().close().unwrap();
    let before = files_under(&tree_dir);
    assert!(before.is_superset(&names(&MADE)), "{before:?}");

    let forest = Forest::open(&path).unwrap();
    assert_eq!(forest.tree("old").unwrap().head().size, 0);
    let leaves = values(3, 0, 4);
    forest
        .commit_block(block(1), &[("old", leaves.as_slice())])
        .unwrap();
    forest.close().unwrap();
    let forest = Forest::open(&path).unwrap();
    assert_eq!(
        forest.tree("old").unwrap().head().root,
        reference_root(2, HashKind::Blake3, &leaves)
    );
    forest.close().unwrap();
}

/// Once a tree made its files, a missing first log file is damage, as in
/// any store: refused, naming it.
#[test]
fn a_tree_that_made_its_files_is_held_to_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let forest = Forest::create(&path).unwrap();
    forest.add_tree("a", config(2, HashKind::Blake3)).unwrap();
    forest
        .commit_block(block(1), &[("a", values(4, 0, 2).as_slice())])
        .unwrap();
    forest.checkpoint().unwrap();
    forest.close().unwrap();
    std::fs::remove_file(path.join("trees/a/log/000000000000.log")).unwrap();
    let error = Forest::open(&path).map(drop).unwrap_err().to_string();
    assert!(error.contains("log"), "{error}");
}

/// A single-tree database keeps its files from creation on.
#[test]
fn a_single_tree_database_has_its_files_from_creation() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("one");
    Database::create(&path, config(2, HashKind::Blake3))
        .unwrap()
        .close()
        .unwrap();
    assert!(files_under(&path).is_superset(&names(&MADE)));
}

fn sim_dir() -> PathBuf {
    PathBuf::from("/db")
}

/// Every tree's (name, size, root), each made durable first.
fn heads(forest: &Forest) -> Vec<(String, u64, Option<Hash>)> {
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

/// A power loss after every file-system operation of the first writes to
/// empty trees (a block, the applier's catch-up that makes the files, a
/// checkpoint, a rollback to before the block and a block after it), in
/// every crash mode and some torn last writes: the database reopens at a
/// state between the last acknowledged write and the one after, a second
/// open agrees, and a block written after the reopen is there at the
/// next one.
#[test]
fn the_first_write_to_an_empty_tree_survives_a_power_loss_anywhere() {
    let fs = SimFs::new();
    let forest = Forest::create_in(Arc::new(fs.clone()) as Arc<dyn Fs>, &sim_dir()).unwrap();
    for name in ["a", "b", "c"] {
        forest.add_tree(name, config(2, HashKind::Blake3)).unwrap();
    }
    let mut states = vec![heads(&forest)];
    let mut acked = vec![fs.op_count()];
    let start = fs.op_count();
    type Write = Box<dyn Fn(&Forest)>;
    let writes: Vec<Write> = vec![
        Box::new(|f| {
            f.commit_block(block(1), &[("a", values(1, 0, 3).as_slice())])
                .map(drop)
                .unwrap()
        }),
        Box::new(|f| f.apply().unwrap()),
        Box::new(|f| f.checkpoint().unwrap()),
        // Tree b takes values only in memory and the journal, then loses
        // them to a rollback: its files are made by the rollback's
        // publication at its next write.
        Box::new(|f| {
            f.commit_block(block(2), &[("b", values(2, 0, 2).as_slice())])
                .map(drop)
                .unwrap()
        }),
        Box::new(|f| f.truncate_to_block(1).map(drop).unwrap()),
        Box::new(|f| {
            f.commit_block(
                block(2),
                &[
                    ("b", values(2, 5, 6).as_slice()),
                    ("c", values(3, 0, 1).as_slice()),
                ],
            )
            .map(drop)
            .unwrap()
        }),
        Box::new(|f| f.checkpoint().unwrap()),
    ];
    for write in &writes {
        write(&forest);
        acked.push(fs.op_count());
        states.push(heads(&forest));
    }
    let end = fs.op_count();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(31);
    let mut replay = fs.replay();
    let mut checked = 0;
    for k in start..=end {
        replay.seek(k);
        let modes = replay.crash_modes_up_to(2);
        let done = acked.iter().rposition(|&a| a <= k).unwrap();
        for mode in modes {
            let crashed = replay.crash(&mode, &mut rng);
            let ctx = format!(
                "boundary {k} of {start}..={end} ({}), {mode:?}",
                fs.describe_op(k.saturating_sub(1))
            );
            let open = || {
                Forest::open_in(Arc::new(crashed.clone()) as Arc<dyn Fs>, &sim_dir())
                    .unwrap_or_else(|e| panic!("{ctx}: {e}"))
            };
            let reopened = open();
            let got = heads(&reopened);
            assert!(
                states.iter().skip(done).take(2).any(|s| *s == got),
                "{ctx}: opened at {got:?}, acknowledged write {done}"
            );
            reopened.close().unwrap_or_else(|e| panic!("{ctx}: {e}"));
            let again = open();
            assert_eq!(heads(&again), got, "{ctx}: a second open");
            // Whatever a crash left of the files being made, the next
            // write makes the rest.
            let next = again.last_block().map_or(1, |b| b + 1);
            again
                .commit_block(
                    block(next),
                    &[
                        ("a", values(9, 0, 1).as_slice()),
                        ("b", values(9, 1, 2).as_slice()),
                        ("c", values(9, 2, 3).as_slice()),
                    ],
                )
                .unwrap_or_else(|e| panic!("{ctx}: a block after: {e}"));
            let after = heads(&again);
            again.close().unwrap_or_else(|e| panic!("{ctx}: {e}"));
            assert_eq!(heads(&open()), after, "{ctx}: after a block");
            checked += 1;
        }
    }
    assert!(checked > 50, "{checked} states");
}
