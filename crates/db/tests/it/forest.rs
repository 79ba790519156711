//! Databases of several trees: trees of every kind written by blocks, a
//! directory of the layout before opened as one tree and converted, and
//! blocks across three trees (with rollbacks between them) under a power
//! loss at every file-system operation: each block is in every tree or in
//! none, and nothing acknowledged is lost.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairn_core::{Hash, HashKind, TreeKind};
use cairn_db::{BlockId, BlockParts, Database, DbConfig, DbError, Forest, ForestError};
use cairn_store::Fs;
use cairn_testkit::sim::{CrashMode, SimFs};
use rand::SeedableRng;

use crate::support::{config_of, copy_dir, fixed_tree, reference_root, tree, value};

fn block(number: u64) -> BlockId {
    BlockId {
        number,
        hash: [number as u8; 32],
    }
}

fn values(seed: u64, from: u64, to: u64) -> Vec<Hash> {
    (from..to).map(|i| value(seed, i)).collect()
}

/// Three trees of three kinds: a Lean note tree, a fixed-depth tree and
/// an indexed nullifier tree.
fn add_three(forest: &Forest) {
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
}

/// (size, root) of every tree, each made durable first.
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

#[test]
fn trees_of_every_kind_take_blocks_and_reopen_with_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let forest = Forest::create(&path).unwrap();
    add_three(&forest);
    let notes = values(1, 0, 10);
    let committed = forest
        .commit_block(
            block(1),
            &[
                ("notes", &notes[..6]),
                ("groups", &values(2, 0, 3)),
                ("nullifiers", &values(3, 0, 4)),
            ],
        )
        .unwrap();
    assert_eq!(committed.trees[0].size, 6);
    assert_eq!(
        committed.trees[2].first, 1,
        "an indexed tree's guard is leaf 0"
    );
    // A tree named with no values records its size at the block.
    forest
        .commit_block(block(2), &[("notes", &notes[6..]), ("groups", &[])])
        .unwrap();
    let before = heads(&forest);
    assert_eq!(
        before[0].2,
        reference_root(2, HashKind::Blake3, &notes),
        "the note tree is the reference tree of its values"
    );
    // The same values again are refused whole: nothing written anywhere.
    let refused = forest.commit_block(
        block(3),
        &[("groups", &values(2, 3, 5)), ("notes", &notes[..1])],
    );
    assert!(
        matches!(refused, Err(DbError::Duplicates { .. })),
        "{refused:?}"
    );
    assert_eq!(heads(&forest), before);
    let order = forest.commit_block(block(2), &[("notes", &values(1, 10, 11))]);
    assert!(
        matches!(
            order,
            Err(DbError::Forest(ForestError::BlockOrder {
                block: 2,
                last: 2
            }))
        ),
        "{order:?}"
    );
    forest.close().unwrap();
    let forest = Forest::open(&path).unwrap();
    assert_eq!(forest.names(), ["notes", "groups", "nullifiers"]);
    assert_eq!(heads(&forest), before);
    let at1 = forest.heads_at(1).unwrap();
    assert_eq!(
        at1.iter().map(|h| h.1).collect::<Vec<_>>(),
        [6, 3, 5],
        "sizes at block 1"
    );
    assert_eq!(forest.last_block(), Some(2));
    let unknown = forest.tree("missing");
    assert!(
        matches!(
            unknown,
            Err(DbError::Forest(ForestError::UnknownTree { .. }))
        ),
        "{unknown:?}"
    );
    forest.close().unwrap();
}

#[test]
fn rollback_and_finalization_by_block_act_on_every_tree() {
    let dir = tempfile::tempdir().unwrap();
    let forest = Forest::create(dir.path().join("db")).unwrap();
    add_three(&forest);
    let mut at = Vec::new();
    for number in 1..=5 {
        let i = number * 2;
        forest
            .commit_block(
                block(number),
                &[
                    ("notes", &values(1, i, i + 2)),
                    ("groups", &values(2, i, i + 1)),
                    ("nullifiers", &values(3, i, i + 2)),
                ],
            )
            .unwrap();
        at.push(heads(&forest));
    }
    let rolled = forest.truncate_to_block(3).unwrap();
    assert_eq!(
        rolled.iter().map(|t| t.size).collect::<Vec<_>>(),
        at[2].iter().map(|h| h.1).collect::<Vec<_>>()
    );
    assert_eq!(heads(&forest), at[2]);
    // The removed values go back in, in another block 4.
    forest
        .commit_block(
            block(4),
            &[
                ("notes", &values(1, 8, 10)),
                ("nullifiers", &values(3, 8, 9)),
            ],
        )
        .unwrap();
    let four = heads(&forest);
    assert_eq!(forest.finalize_to_block(4).unwrap(), 4);
    let below = forest.truncate_to_block(3);
    assert!(
        matches!(
            below,
            Err(DbError::Forest(ForestError::NoBlock {
                block: 3,
                finalized: Some(4)
            }))
        ),
        "{below:?}"
    );
    forest.checkpoint().unwrap();
    for tree in forest.trees() {
        assert_eq!(
            tree.db.finalized_size(),
            four.iter().find(|h| h.0 == tree.name).unwrap().1,
            "{} is final at block 4 once checkpointed",
            tree.name
        );
    }
    let path = forest.dir().to_owned();
    forest.close().unwrap();
    let forest = Forest::open(&path).unwrap();
    assert_eq!(heads(&forest), four);
    assert_eq!(forest.finalized_block(), Some(4));
    forest.close().unwrap();
}

/// A copy of `tests/data/single-tree`, made by the build before several
/// trees (see `tests/data/single-tree.md`).
fn single_tree_copy(to: &Path) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/single-tree");
    let path = to.join("single-tree");
    copy_dir(&source, &path);
    // The fixture's `levels/` is empty (no checkpoint wrote a level), and
    // git keeps no empty directory: the store made it, so the copy does.
    std::fs::create_dir_all(path.join("levels")).unwrap();
    path
}

#[test]
fn a_directory_of_the_layout_before_opens_as_its_default_tree_and_converts() {
    let dir = tempfile::tempdir().unwrap();
    let path = single_tree_copy(dir.path());
    let root = cairn_core::hex::parse_hash(
        "0x64a6fa6f6c4e5d960c52f6da472585d883ad2cb130b2ec5c5e045226df60c813",
    )
    .unwrap();
    let forest = Forest::open(&path).unwrap();
    assert!(!forest.is_journaled());
    assert_eq!(forest.names(), ["default"]);
    let default = forest.default_tree().unwrap();
    assert_eq!((default.head().size, default.head().root), (5, Some(root)));
    assert_eq!(forest.heads_at(7).unwrap()[0].1, 5, "its tagged head");
    // Written as before: its own log and tags, no journal.
    forest
        .commit_block(block(8), &[("default", &values(1, 0, 2))])
        .unwrap();
    assert!(!path.join(cairn_db::JOURNAL).exists());
    drop(default);
    // A second tree makes it a database of several.
    forest
        .add_tree(
            "nullifiers",
            config_of(tree(2, HashKind::Blake3).with_kind(TreeKind::Indexed)),
        )
        .unwrap();
    assert!(forest.is_journaled());
    forest
        .commit_block(
            block(9),
            &[
                ("default", &values(1, 2, 3)),
                ("nullifiers", &values(3, 0, 2)),
            ],
        )
        .unwrap();
    let after = heads(&forest);
    forest.close().unwrap();
    let forest = Forest::open(&path).unwrap();
    assert_eq!(forest.names(), ["default", "nullifiers"]);
    assert_eq!(heads(&forest), after);
    assert_eq!(after[0].1, 8);
    forest.close().unwrap();
    // The tree itself is still a database the one-tree facade opens.
    let db = Database::open_read_only(&path).unwrap();
    assert_eq!(db.head().size, 8);
}

#[test]
fn a_tree_name_outside_the_rules_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let forest = Forest::create(dir.path().join("db")).unwrap();
    for bad in ["", "A", "../x", "a/b"] {
        let refused = forest.add_tree(bad, config_of(tree(2, HashKind::Blake3)));
        assert!(
            matches!(refused, Err(DbError::Forest(ForestError::BadName { .. }))),
            "{bad:?}: {refused:?}"
        );
    }
    forest
        .add_tree("a", config_of(tree(2, HashKind::Blake3)))
        .unwrap();
    let twice = forest.add_tree("a", config_of(tree(2, HashKind::Blake3)));
    assert!(matches!(
        twice,
        Err(DbError::Forest(ForestError::TreeExists { .. }))
    ));
}

/// One write of the crash workload.
type Write = Box<dyn Fn(&Forest)>;

fn sim_open(fs: &SimFs) -> Forest {
    Forest::open_in(Arc::new(fs.clone()) as Arc<dyn Fs>, Path::new("/db")).unwrap()
}

/// A small config: every tree's log files hold 1,024 leaves.
fn small(kind: Option<TreeKind>) -> DbConfig {
    let tree = tree(2, HashKind::Blake3);
    config_of(match kind {
        Some(kind) => tree.with_kind(kind),
        None => tree,
    })
}

/// Blocks across three trees and rollbacks between them (each tree's
/// files catching up with a rollback only at its next write), a power loss
/// after every file-system operation in every untorn mode and some torn
/// last writes: the database opens at the state after some write, the
/// same one in every tree, at or after the last acknowledged write and at
/// most one write past it.
#[test]
fn a_block_across_three_trees_is_all_or_nothing_after_a_power_loss_anywhere() {
    let fs = SimFs::new();
    let forest = Forest::create_in(Arc::new(fs.clone()) as Arc<dyn Fs>, Path::new("/db")).unwrap();
    forest.add_tree("notes", small(None)).unwrap();
    forest
        .add_tree(
            "groups",
            small(Some(TreeKind::Fixed {
                depth: 12,
                zero: [0; 32],
            })),
        )
        .unwrap();
    forest
        .add_tree("nullifiers", small(Some(TreeKind::Indexed)))
        .unwrap();
    forest
        .commit_block(
            block(1),
            &[
                ("notes", &values(1, 0, 3)),
                ("nullifiers", &values(3, 0, 2)),
            ],
        )
        .unwrap();
    forest.checkpoint().unwrap();
    // States[i]: every tree's head after write i; acked[i]: the trace
    // length when write i returned.
    let mut states = vec![heads(&forest)];
    let mut acked = vec![fs.op_count()];
    let start = fs.op_count();
    let writes: Vec<Write> = vec![
        Box::new(|f| {
            f.commit_block(
                block(2),
                &[
                    ("notes", &values(1, 3, 6)),
                    ("groups", &values(2, 0, 2)),
                    ("nullifiers", &values(3, 2, 5)),
                ],
            )
            .map(drop)
            .unwrap()
        }),
        Box::new(|f| {
            f.commit_block(
                block(3),
                &[("groups", &values(2, 2, 3)), ("notes", &values(1, 6, 7))],
            )
            .map(drop)
            .unwrap()
        }),
        Box::new(|f| f.truncate_to_block(2).map(drop).unwrap()),
        Box::new(|f| {
            f.commit_block(
                block(3),
                &[
                    ("nullifiers", &values(3, 5, 7)),
                    ("notes", &values(1, 7, 8)),
                ],
            )
            .map(drop)
            .unwrap()
        }),
        Box::new(|f| f.truncate_to_block(1).map(drop).unwrap()),
        Box::new(|f| {
            f.commit_block(block(2), &[("groups", &values(2, 9, 10)), ("notes", &[])])
                .map(drop)
                .unwrap()
        }),
        // A rollback whose trees' files still hold the removed leaves when
        // other values are written at the same indices, then one below
        // it, and a checkpoint that must publish both before the journal
        // forgets them.
        Box::new(|f| {
            f.commit_block(block(3), &[("notes", &values(1, 20, 23))])
                .map(drop)
                .unwrap()
        }),
        Box::new(|f| f.apply().unwrap()),
        Box::new(|f| f.truncate_to_block(2).map(drop).unwrap()),
        Box::new(|f| {
            f.commit_block(
                block(3),
                &[
                    ("notes", &values(1, 30, 32)),
                    ("nullifiers", &values(3, 30, 31)),
                ],
            )
            .map(drop)
            .unwrap()
        }),
        Box::new(|f| f.truncate_to_block(1).map(drop).unwrap()),
        Box::new(|f| {
            f.commit_block(block(2), &[("notes", &values(1, 40, 41))])
                .map(drop)
                .unwrap()
        }),
        Box::new(|f| f.checkpoint().unwrap()),
    ];
    for write in &writes {
        write(&forest);
        acked.push(fs.op_count());
        // Heads read without a flush: read each tree's durable head after
        // making it catch up (a flush is a write of its own: after `acked`).
        states.push(heads(&forest));
    }
    let end = fs.op_count();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(29);
    let mut checked = 0;
    let mut replay = fs.replay();
    for k in start..=end {
        replay.seek(k);
        let modes = replay.crash_modes_up_to(3);
        // The last write acknowledged at this boundary.
        let done = acked.iter().rposition(|&a| a <= k).unwrap();
        for mode in modes {
            let crashed = replay.crash(&mode, &mut rng);
            let ctx = format!(
                "boundary {k} of {start}..={end} ({}), {mode:?}",
                fs.describe_op(k.saturating_sub(1))
            );
            let reopened =
                Forest::open_in(Arc::new(crashed.clone()) as Arc<dyn Fs>, Path::new("/db"))
                    .unwrap_or_else(|e| panic!("{ctx}: {e}"));
            let got = heads(&reopened);
            let found = states
                .iter()
                .enumerate()
                .skip(done)
                .take(2)
                .any(|(_, state)| *state == got);
            assert!(found, "{ctx}: opened at {got:?}, acknowledged write {done}");
            reopened.close().unwrap_or_else(|e| panic!("{ctx}: {e}"));
            // Open is idempotent: a second open finds the same state.
            let again = sim_open(&crashed);
            assert_eq!(heads(&again), got, "{ctx}: a second open");
            checked += 1;
        }
    }
    assert!(checked > 50, "{checked} states");
}

const KILL_DIR_ENV: &str = "CAIRN_FOREST_KILL_DIR";
const KILL_ACKS_ENV: &str = "CAIRN_FOREST_KILL_ACKS";
const KILL_TREES: [&str; 3] = ["notes", "groups", "nullifiers"];

/// The child of the kill -9 test: blocks of two values for each of three
/// trees, and every fifth write a rollback of two blocks, each
/// acknowledged (`will S` before, `done S` after, S the size every tree
/// has after it) in a file synced before it counts; runs until killed.
#[test]
fn forest_kill_child() {
    let Ok(dir) = std::env::var(KILL_DIR_ENV) else {
        return;
    };
    let mut acks = cairn_testkit::kill9::AckFile::open(std::env::var(KILL_ACKS_ENV).unwrap());
    let forest = Forest::open(&dir).unwrap();
    println!("opened");
    let mut number = forest.last_block().unwrap_or(0) + 1;
    let mut write = 0u64;
    loop {
        write += 1;
        let size = forest.trees()[0].db.size();
        if write.is_multiple_of(5) && forest.blocks().len() > 3 {
            let to = forest.blocks()[forest.blocks().len() - 3].number;
            let sizes = forest.heads_at(to).unwrap();
            acks.record(&format!("will {}\n", sizes[0].1));
            forest.truncate_to_block(to).unwrap();
            acks.record(&format!("done {}\n", sizes[0].1));
            continue;
        }
        let values: Vec<Vec<Hash>> = (0..3).map(|k| values(number * 16 + k, 0, 2)).collect();
        acks.record(&format!("will {}\n", size + 2));
        forest
            .commit_block(
                block(number),
                &[
                    (KILL_TREES[0], &values[0][..]),
                    (KILL_TREES[1], &values[1][..]),
                    (KILL_TREES[2], &values[2][..]),
                ],
            )
            .unwrap();
        acks.record(&format!("done {}\n", size + 2));
        number += 1;
    }
}

/// kill -9 at random moments of blocks and rollbacks across three trees
/// (lean trees, so every tree has the same size after every write): the
/// database opens with every tree at the same size, the one after the last
/// acknowledged write or after the write in flight.
#[test]
fn a_kill_9_leaves_every_tree_at_the_same_write() {
    use rand::Rng;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let acks = dir.path().join("acks");
    let forest = Forest::create(&path).unwrap();
    for name in KILL_TREES {
        forest
            .add_tree(name, config_of(tree(2, HashKind::Blake3)))
            .unwrap();
    }
    forest.close().unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
    let kills = cairn_testkit::env_u64("CAIRN_FOREST_KILLS", 12);
    for kill in 0..kills {
        let victim = cairn_testkit::kill9::Victim::start(
            "forest::forest_kill_child",
            [
                (KILL_DIR_ENV, path.as_os_str()),
                (KILL_ACKS_ENV, acks.as_os_str()),
            ],
        );
        assert!(
            victim.opened(std::time::Duration::from_secs(60)),
            "kill {kill}: never opened"
        );
        std::thread::sleep(std::time::Duration::from_millis(rng.gen_range(20..300)));
        victim.kill();
        let lines = cairn_testkit::kill9::acknowledged_lines(&acks);
        let last_done = lines
            .iter()
            .rev()
            .find_map(|l| l.strip_prefix("done "))
            .map(|s| s.parse::<u64>().unwrap());
        let in_flight = lines
            .last()
            .and_then(|l| l.strip_prefix("will "))
            .map(|s| s.parse::<u64>().unwrap());
        let forest = Forest::open(&path).unwrap_or_else(|e| panic!("kill {kill}: {e}"));
        let sizes: Vec<u64> = heads(&forest).iter().map(|h| h.1).collect();
        assert!(
            sizes.iter().all(|&s| s == sizes[0]),
            "kill {kill}: trees at different writes: {sizes:?}"
        );
        let allowed = [last_done.unwrap_or(0), in_flight.unwrap_or(u64::MAX)];
        assert!(
            allowed.contains(&sizes[0]),
            "kill {kill}: size {} is neither the acknowledged {:?} nor the one in flight {:?}",
            sizes[0],
            last_done,
            in_flight
        );
        forest.close().unwrap();
        // The next child starts after this open: acknowledgements restart.
        std::fs::write(&acks, format!("done {}\n", sizes[0])).unwrap();
    }
}

#[test]
fn several_blocks_commit_with_one_fdatasync_and_a_refused_one_keeps_those_before() {
    let fs = SimFs::new();
    let forest = Forest::create_in(Arc::new(fs.clone()) as Arc<dyn Fs>, Path::new("/db")).unwrap();
    add_three(&forest);
    let notes: Vec<Vec<Hash>> = (0..8).map(|b| values(1, b * 3, b * 3 + 3)).collect();
    let nulls: Vec<Vec<Hash>> = (0..8).map(|b| values(2, b * 2, b * 2 + 2)).collect();
    let batch: Vec<BlockParts<'_>> = (0..8)
        .map(|b| {
            (
                block(10 + b as u64),
                vec![("notes", &notes[b][..]), ("nullifiers", &nulls[b][..])],
            )
        })
        .collect();
    let before = fs.counters().sync_data_calls;
    let committed = forest.commit_blocks(&batch).unwrap();
    assert_eq!(
        fs.counters().sync_data_calls - before,
        1,
        "one fdatasync for 8 blocks"
    );
    assert_eq!(committed.len(), 8);
    assert_eq!(committed[7].trees[0].size, 24);
    assert_eq!(forest.last_block(), Some(17));
    // Every block is a rollback target with its own sizes.
    let at_12 = forest.heads_at(12).unwrap();
    assert_eq!((at_12[0].1, at_12[2].1), (9, 1 + 6));

    // A block refused in the middle (a nullifier twice): the blocks before
    // it are durable, it and those after are not written.
    let again = values(2, 0, 1);
    let fresh: Vec<Vec<Hash>> = (0..3).map(|b| values(3, b, b + 1)).collect();
    let refused: Vec<BlockParts<'_>> = vec![
        (block(20), vec![("notes", &fresh[0][..])]),
        (block(21), vec![("nullifiers", &again[..])]),
        (block(22), vec![("notes", &fresh[2][..])]),
    ];
    let error = forest.commit_blocks(&refused).unwrap_err();
    assert!(!error.to_string().is_empty());
    assert_eq!(forest.last_block(), Some(20));
    let want = heads(&forest);
    drop(forest);
    let reopened = sim_open(&fs);
    assert_eq!(heads(&reopened), want);
    assert_eq!(reopened.last_block(), Some(20));
    assert_eq!(reopened.trees()[0].db.size(), 25);
}

/// `sync_data` calls recorded since trace position `from`, as (journal,
/// other files).
fn syncs_since(fs: &SimFs, from: usize) -> (usize, usize) {
    let ops: Vec<String> = (from..fs.op_count()).map(|i| fs.describe_op(i)).collect();
    let syncs = || ops.iter().filter(|op| op.starts_with("sync_data "));
    let journal = syncs().filter(|op| op.contains(cairn_db::JOURNAL)).count();
    (journal, syncs().count() - journal)
}

/// A block answered the way a server answers it (the roots from the trees'
/// memory, no tree flushed) costs the journal's one `fdatasync`; a tree
/// read afterwards catches up first and serves the block; a power loss
/// before any tree caught up keeps the block in every tree.
#[test]
fn a_block_answered_with_its_roots_costs_one_fdatasync_and_reads_catch_up() {
    let fs = SimFs::new();
    let forest = Forest::create_in(Arc::new(fs.clone()) as Arc<dyn Fs>, Path::new("/db")).unwrap();
    for name in ["notes", "commitments", "groups"] {
        forest.add_tree(name, small(None)).unwrap();
    }
    forest.set_background_apply(false);
    let parts: Vec<Vec<Hash>> = (0..3).map(|t| values(40 + t, 0, 5 + t)).collect();
    let named: Vec<(&str, &[Hash])> = ["notes", "commitments", "groups"]
        .into_iter()
        .zip(&parts)
        .map(|(name, values)| (name, &values[..]))
        .collect();
    let from = fs.op_count();
    let committed = forest.commit_block(block(7), &named).unwrap();
    let answered: Vec<Option<Hash>> = committed
        .trees
        .iter()
        .map(|at| forest.head_after(&at.tree, at.size).unwrap().root)
        .collect();
    assert_eq!(
        syncs_since(&fs, from),
        (1, 0),
        "one fdatasync, the journal's"
    );
    for (name, _) in &named {
        assert!(forest.trails(name), "{name} has not caught up yet");
    }

    // A power loss now: the block is in every tree after the open.
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    for mode in [CrashMode::DropUnsynced, CrashMode::GrowthLost] {
        let crashed = fs.crash(&mode, &mut rng);
        let reopened = sim_open(&crashed);
        let got: Vec<(u64, Option<Hash>)> = heads(&reopened)
            .into_iter()
            .map(|(_, size, root)| (size, root))
            .collect();
        let want: Vec<(u64, Option<Hash>)> = committed
            .trees
            .iter()
            .zip(&answered)
            .map(|(at, root)| (at.size, *root))
            .collect();
        assert_eq!(got, want, "{mode:?}");
        assert_eq!(reopened.last_block(), Some(7));
    }

    // A reader catches one tree up: that tree's log only.
    let from = fs.op_count();
    forest.catch_up("commitments").unwrap();
    let (journal, trees) = syncs_since(&fs, from);
    assert_eq!(journal, 0);
    assert!(trees >= 1, "the tree's log was flushed");
    assert!(!forest.trails("commitments") && forest.trails("notes"));
    let db = forest.tree("commitments").unwrap();
    assert_eq!(db.head().size, committed.trees[1].size);
    assert_eq!(
        db.head().root,
        answered[1],
        "the answer's root is the tree's"
    );
    // Caught up already: no I/O.
    let from = fs.op_count();
    forest.catch_up("commitments").unwrap();
    assert_eq!(fs.op_count(), from);
    assert!(forest.catch_up("nope").is_err());
    // A later block rolled back before any reader caught up: the reader
    // catches up to what the rollback left.
    let more = values(50, 0, 4);
    forest
        .commit_block(block(8), &[("notes", &more[..])])
        .unwrap();
    forest.truncate_to_block(7).unwrap();
    forest.catch_up("notes").unwrap();
    let notes = forest.tree("notes").unwrap();
    assert_eq!(
        (notes.head().size, notes.head().root),
        (committed.trees[0].size, answered[0])
    );
    forest.close().unwrap();
}
