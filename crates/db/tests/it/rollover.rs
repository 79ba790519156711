//! Families of trees that roll over: a block crossing a member's capacity
//! split over the member and its successors, each value addressed by
//! (member, index), a strict family refusing a value any member holds, a
//! rollback across the boundary emptying the member it made, manifests
//! without families still written and read as version 1, and a power
//! loss anywhere in a block that crosses a boundary leaving all of it or
//! none.

use std::path::Path;
use std::sync::Arc;

use cairn_core::{Hash, HashKind, TreeKind};
use cairn_db::{BlockId, Capacity, DbConfig, DbError, Forest, ForestError, Located, Rollover};
use cairn_store::Fs;
use cairn_testkit::reference;
use cairn_testkit::sim::SimFs;
use rand::SeedableRng;

use crate::support::{config_of, tree, value};

pub(super) fn block(number: u64) -> BlockId {
    BlockId {
        number,
        hash: [number as u8; 32],
    }
}

pub(super) fn values(seed: u64, from: u64, to: u64) -> Vec<Hash> {
    (from..to).map(|i| value(seed, i)).collect()
}

pub(super) const DEPTH: u32 = 3;
const ZERO: Hash = [7; 32];

/// A binary fixed-depth tree of 8 leaves, with or without its set.
pub(super) fn imt(unique: bool) -> DbConfig {
    let mut config = config_of(tree(2, HashKind::Blake3).with_kind(TreeKind::Fixed {
        depth: DEPTH,
        zero: ZERO,
    }));
    config.unique = unique;
    config
}

fn rolling(leaves: u64) -> Option<Capacity> {
    Some(Capacity {
        leaves,
        rollover: Rollover::Split,
    })
}

pub(super) fn root_of(leaves: &[Hash]) -> Hash {
    reference::fixed_root(
        cairn_core::Arity::new(2).unwrap(),
        HashKind::Blake3,
        DEPTH,
        ZERO,
        leaves,
    )
}

/// (name, size, root) of every member of `family` that holds something.
pub(super) fn members(forest: &Forest, family: &str) -> Vec<(String, u64, Option<Hash>)> {
    forest.apply().unwrap();
    forest
        .family(family)
        .unwrap()
        .into_iter()
        .map(|t| {
            let head = t.db.head();
            (t.name, head.size, head.root)
        })
        .collect()
}

/// What `members` must say of a family of 8-leaf members holding `all`.
fn expected(family: &str, all: &[Hash]) -> Vec<(String, u64, Option<Hash>)> {
    let mut out: Vec<_> = all
        .chunks(8)
        .enumerate()
        .map(|(k, chunk)| {
            (
                cairn_db::member_name(family, k as u32),
                chunk.len() as u64,
                Some(root_of(chunk)),
            )
        })
        .collect();
    if out.is_empty() {
        out.push((family.to_owned(), 0, Some(root_of(&[]))));
    }
    out
}

#[test]
fn a_block_past_a_capacity_goes_on_in_new_members_addressed_by_member_and_index() {
    let dir = tempfile::tempdir().unwrap();
    let forest = Forest::create(dir.path()).unwrap();
    forest
        .add_tree_with("commitments", imt(true), rolling(8))
        .unwrap();
    forest.add_tree("notes", imt(false)).unwrap();
    let all = values(1, 0, 23);
    forest
        .commit_block(block(1), &[("commitments", &all[..5])])
        .unwrap();
    // 3 values fill member 0, 3 start member 1, and the other tree too.
    let committed = forest
        .commit_block(
            block(2),
            &[("notes", &values(2, 0, 1)), ("commitments", &all[5..11])],
        )
        .unwrap();
    let written: Vec<(&str, u64, u64)> = committed
        .trees
        .iter()
        .map(|t| (t.tree.as_str(), t.first, t.count))
        .collect();
    assert_eq!(
        written,
        [
            ("notes", 0, 1),
            ("commitments", 5, 3),
            ("commitments/1", 0, 3)
        ]
    );
    // One block filling member 1 and half of member 2.
    forest
        .commit_block(block(3), &[("commitments", &all[11..23])])
        .unwrap();
    assert_eq!(
        members(&forest, "commitments"),
        expected("commitments", &all)
    );
    for (i, v) in all.iter().enumerate() {
        let member = (i / 8) as u32;
        assert_eq!(
            forest.locate("commitments", v).unwrap(),
            Some(Located {
                tree: cairn_db::member_name("commitments", member),
                member,
                index: (i % 8) as u64,
            }),
            "value {i}"
        );
    }
    assert_eq!(forest.locate("commitments", &value(9, 0)).unwrap(), None);
    // A member is a tree of its own: named, proved and written through
    // its family only.
    let member = forest.tree("commitments/2").unwrap();
    assert_eq!(member.index_of(&all[17]).unwrap(), Some(1));
    let refused = forest
        .commit_block(block(4), &[("commitments/2", &values(1, 30, 31))])
        .unwrap_err();
    assert!(
        matches!(refused, DbError::Forest(ForestError::MemberWrite { .. })),
        "{refused}"
    );
    drop(member);
    let names = forest.names();
    forest.close().unwrap();
    let forest = Forest::open(dir.path()).unwrap();
    assert_eq!(forest.names(), names);
    assert_eq!(
        members(&forest, "commitments"),
        expected("commitments", &all)
    );
    assert_eq!(
        cairn_db::family_dirs(dir.path(), "commitments")
            .unwrap()
            .iter()
            .map(|(name, member, _)| (name.as_str(), *member))
            .collect::<Vec<_>>(),
        [
            ("commitments", Some(0)),
            ("commitments/1", Some(1)),
            ("commitments/2", Some(2))
        ]
    );
    assert_eq!(
        cairn_db::tree_dir(dir.path(), Some("commitments/0")).unwrap(),
        dir.path().join("trees/commitments")
    );
    assert_eq!(
        cairn_db::tree_dir(dir.path(), Some("commitments/2")).unwrap(),
        dir.path().join("trees/commitments@2")
    );
}

#[test]
fn a_strict_family_refuses_a_value_any_member_holds_or_one_a_write_repeats() {
    let dir = tempfile::tempdir().unwrap();
    let forest = Forest::create(dir.path()).unwrap();
    forest
        .add_tree_with("strict", imt(true), rolling(8))
        .unwrap();
    forest
        .add_tree_with("loose", imt(false), rolling(8))
        .unwrap();
    let first = values(1, 0, 10);
    forest
        .commit_block(block(1), &[("strict", &first), ("loose", &first)])
        .unwrap();
    // Member 1 holds values 8 and 9; value 2 is in member 0.
    let again = [value(1, 2)];
    let refused = forest
        .commit_block(block(2), &[("strict", &again)])
        .unwrap_err();
    match &refused {
        DbError::Forest(ForestError::InFamily { value, tree, index }) => {
            assert_eq!(*value, again[0]);
            assert_eq!(tree.as_deref(), Some("strict"));
            assert_eq!(*index, Some(2));
        }
        other => panic!("{other}"),
    }
    // A value repeated on both sides of a boundary.
    let forest_b = values(3, 0, 7);
    let mut split = forest_b.clone();
    split.push(forest_b[0]);
    split.push(value(3, 99));
    forest
        .commit_block(block(2), &[("strict", &values(4, 0, 6))])
        .unwrap();
    let refused = forest
        .commit_block(block(3), &[("strict", &split)])
        .unwrap_err();
    assert!(
        matches!(
            refused,
            DbError::Forest(ForestError::InFamily { tree: None, .. })
        ),
        "{refused}"
    );
    // Nothing of a refused write stays; a family without a set takes
    // repeats in any member.
    assert_eq!(forest.family("strict").unwrap().len(), 2);
    assert_eq!(forest.tree("strict/1").unwrap().size(), 8);
    forest
        .commit_block(block(3), &[("loose", &again), ("strict", &[])])
        .unwrap();
    assert_eq!(forest.tree("loose/1").unwrap().size(), 3);
    forest.close().unwrap();
}

#[test]
fn a_rollback_across_a_boundary_empties_the_member_its_blocks_made_and_the_next_rollover_reuses_it()
{
    let dir = tempfile::tempdir().unwrap();
    let forest = Forest::create(dir.path()).unwrap();
    forest.add_tree_with("c", imt(true), rolling(8)).unwrap();
    let all = values(1, 0, 12);
    forest.commit_block(block(1), &[("c", &all[..6])]).unwrap();
    forest
        .commit_block(block(2), &[("c", &all[6..12])])
        .unwrap();
    assert_eq!(forest.family("c").unwrap().len(), 2);
    forest.truncate_to_block(1).unwrap();
    assert_eq!(members(&forest, "c"), expected("c", &all[..6]));
    assert_eq!(forest.locate("c", &all[9]).unwrap(), None);
    // The member's slot stays in the manifest, empty; the next rollover
    // fills it again rather than making another.
    let names = forest.names();
    let other = values(2, 0, 5);
    forest.commit_block(block(2), &[("c", &other)]).unwrap();
    assert_eq!(forest.names(), names);
    let mut now = all[..6].to_vec();
    now.extend_from_slice(&other);
    assert_eq!(members(&forest, "c"), expected("c", &now));
    forest.truncate_to_block(1).unwrap();
    forest.close().unwrap();
    let forest = Forest::open(dir.path()).unwrap();
    assert_eq!(members(&forest, "c"), expected("c", &all[..6]));
    forest.close().unwrap();
}

#[test]
fn a_capacity_without_rollover_refuses_what_does_not_fit_and_a_capacity_past_the_depth_is_refused()
{
    let dir = tempfile::tempdir().unwrap();
    let forest = Forest::create(dir.path()).unwrap();
    let capped = Some(Capacity {
        leaves: 4,
        rollover: Rollover::Refuse,
    });
    forest.add_tree_with("capped", imt(true), capped).unwrap();
    forest
        .commit_block(block(1), &[("capped", &values(1, 0, 3))])
        .unwrap();
    let refused = forest
        .commit_block(block(2), &[("capped", &values(1, 3, 5))])
        .unwrap_err();
    assert!(
        matches!(
            refused,
            DbError::Forest(ForestError::Full {
                capacity: 4,
                size: 3,
                values: 2,
                ..
            })
        ),
        "{refused}"
    );
    assert_eq!(forest.tree("capped").unwrap().size(), 3);
    let refused = forest
        .add_tree_with("deep", imt(true), rolling(9))
        .unwrap_err();
    assert!(
        refused.to_string().contains("at most 8 (its fixed depth)"),
        "{refused}"
    );
    let refused = forest
        .add_tree_with(
            "guarded",
            config_of(tree(2, HashKind::Blake3).with_kind(TreeKind::Indexed)),
            rolling(1),
        )
        .unwrap_err();
    assert!(refused.to_string().contains("at least 2"), "{refused}");
    forest.close().unwrap();
}

#[test]
fn an_indexed_family_counts_its_guard_in_each_members_capacity() {
    let dir = tempfile::tempdir().unwrap();
    let forest = Forest::create(dir.path()).unwrap();
    let config = config_of(tree(2, HashKind::Blake3).with_kind(TreeKind::Indexed));
    forest.add_tree_with("n", config, rolling(4)).unwrap();
    let all = values(5, 0, 8);
    forest.commit_block(block(1), &[("n", &all)]).unwrap();
    let sizes: Vec<u64> = members(&forest, "n").iter().map(|m| m.1).collect();
    assert_eq!(sizes, [4, 4, 3]);
    let refused = forest
        .commit_block(block(2), &[("n", &all[..1])])
        .unwrap_err();
    assert!(
        matches!(refused, DbError::Forest(ForestError::InFamily { .. })),
        "{refused}"
    );
    forest.close().unwrap();
}

#[test]
fn a_manifest_without_families_stays_version_1_and_opens_after_a_family_is_added() {
    let dir = tempfile::tempdir().unwrap();
    let forest = Forest::create(dir.path()).unwrap();
    forest.add_tree("plain", imt(true)).unwrap();
    forest
        .commit_block(block(1), &[("plain", &values(1, 0, 3))])
        .unwrap();
    forest.close().unwrap();
    let manifest = dir.path().join(cairn_db::MANIFEST);
    let version = |path: &Path| std::fs::read(path).unwrap()[8..12].to_vec();
    assert_eq!(version(&manifest), 1u32.to_le_bytes());
    let forest = Forest::open(dir.path()).unwrap();
    forest.add_tree_with("c", imt(true), rolling(8)).unwrap();
    forest
        .commit_block(block(2), &[("c", &values(2, 0, 9))])
        .unwrap();
    forest.close().unwrap();
    assert_eq!(version(&manifest), 2u32.to_le_bytes());
    let forest = Forest::open(dir.path()).unwrap();
    assert_eq!(forest.names(), ["plain", "c", "c/1"]);
    assert_eq!(forest.tree("plain").unwrap().size(), 3);
    forest.close().unwrap();
}

pub(super) fn sim_open(fs: &SimFs) -> Forest {
    Forest::open_in(Arc::new(fs.clone()) as Arc<dyn Fs>, Path::new("/db")).unwrap()
}

/// A block whose values cross a member's capacity (making the member),
/// beside another tree, then a rollback across the boundary and a block
/// that crosses it again, a power loss after every file-system operation:
/// the database opens at the state after some write, at or after the
/// last acknowledged one and at most one past it, with the member there
/// exactly when the state has values in it.
#[test]
fn a_block_across_a_rollover_is_all_or_nothing_after_a_power_loss_anywhere() {
    crossing_under_power_loss(
        rolling(8),
        (12, 3),
        9,
        |_| {},
        |ctx, before, forest, second_open| {
            if second_open {
                assert!(
                    forest.family("c").unwrap().len() >= before,
                    "{ctx}: a second open"
                );
            }
        },
    );
}

/// The members of family `c` and of tree `notes`.
pub(super) type Members = (
    Vec<(String, u64, Option<Hash>)>,
    Vec<(String, u64, Option<Hash>)>,
);

/// The power-loss sweep of a block crossing a family's capacity (8 leaves,
/// rule `capacity`) beside another tree: a block of 5 values into `c` (6
/// held) with 2 into `notes`, a rollback to block 1, and a block of
/// `last` values into `c` after one into `notes`; then, after every
/// file-system operation of those writes and in every crash mode, the
/// database opens at the state after some write, at or after the last
/// acknowledged one and at most one past it, and takes a block of `next`
/// values into `c`. `written` checks the states after each write;
/// `after(ctx, members of c at open, forest, second open)` checks what
/// the rule says about that block, on the forest that wrote it and on a
/// second open after it closed.
pub(super) fn crossing_under_power_loss(
    capacity: Option<Capacity>,
    (last, seed): (u64, u64),
    next: u64,
    written: impl Fn(&[Members]),
    after: impl Fn(&str, usize, &Forest, bool),
) {
    let fs = SimFs::new();
    let forest = Forest::create_in(Arc::new(fs.clone()) as Arc<dyn Fs>, Path::new("/db")).unwrap();
    forest.add_tree_with("c", imt(true), capacity).unwrap();
    forest.add_tree("notes", imt(false)).unwrap();
    forest
        .commit_block(block(1), &[("c", &values(1, 0, 6))])
        .unwrap();
    forest.checkpoint().unwrap();
    let state = |f: &Forest| (members(f, "c"), members(f, "notes"));
    let mut states = vec![state(&forest)];
    let mut acked = vec![fs.op_count()];
    let start = fs.op_count();
    type Write = Box<dyn Fn(&Forest)>;
    let writes: Vec<Write> = vec![
        Box::new(|f| {
            f.commit_block(
                block(2),
                &[("c", &values(1, 6, 11)), ("notes", &values(2, 0, 2))],
            )
            .map(drop)
            .unwrap()
        }),
        Box::new(|f| f.truncate_to_block(1).map(drop).unwrap()),
        Box::new(move |f| {
            f.commit_block(
                block(2),
                &[("notes", &values(2, 5, 6)), ("c", &values(3, 0, last))],
            )
            .map(drop)
            .unwrap()
        }),
    ];
    for write in &writes {
        write(&forest);
        acked.push(fs.op_count());
        states.push(state(&forest));
    }
    written(&states);
    let end = fs.op_count();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
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
            let reopened =
                Forest::open_in(Arc::new(crashed.clone()) as Arc<dyn Fs>, Path::new("/db"))
                    .unwrap_or_else(|e| panic!("{ctx}: {e}"));
            let got = state(&reopened);
            assert!(
                states.iter().skip(done).take(2).any(|s| *s == got),
                "{ctx}: opened at {got:?}, acknowledged write {done}"
            );
            // The family takes the next block whatever the crash left.
            let last = reopened.last_block().unwrap_or(0);
            reopened
                .commit_block(block(last + 1), &[("c", &values(4, 0, next))])
                .unwrap_or_else(|e| panic!("{ctx}: a block after: {e}"));
            let before = got.0.len();
            after(&ctx, before, &reopened, false);
            reopened.close().unwrap_or_else(|e| panic!("{ctx}: {e}"));
            let again = sim_open(&crashed);
            after(&ctx, before, &again, true);
            drop(again);
            checked += 1;
        }
    }
    assert!(checked > 30, "{checked} states");
}

/// Railgun's commitment trees across the rollover from tree 0 to tree 1
/// (`test-vectors/railgun.json`, roots computed by
/// `@railgun-community/engine`'s merkle tree): a family of depth-16
/// Poseidon members with Railgun's zero value and a capacity of 65,536,
/// fed the same leaves in the same batches, holds the same root in member
/// k as the engine's tree k after every batch.
#[test]
fn a_railgun_family_matches_the_railgun_engines_roots_across_the_rollover() {
    use cairn_testkit::vectors;
    let railgun = vectors::load("railgun.json");
    let depth = railgun["depth"].as_u64().unwrap() as u32;
    let capacity = railgun["capacity"].as_u64().unwrap();
    let zero = vectors::hash_or_null(&railgun["zero"]).unwrap();
    let leaves: Vec<Hash> = (0..railgun["leaf_count"].as_u64().unwrap())
        .map(vectors::rule_leaf)
        .collect();
    for (i, first) in railgun["first_leaves"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        assert_eq!(vectors::hash_or_null(first), Some(leaves[i]), "leaf {i}");
    }
    let dir = tempfile::tempdir().unwrap();
    let forest = Forest::create(dir.path()).unwrap();
    let mut config =
        config_of(tree(2, HashKind::Poseidon).with_kind(TreeKind::Fixed { depth, zero }));
    config.store.log_shift = 16;
    forest
        .add_tree_with("railgun", config, rolling(capacity))
        .unwrap();
    assert_eq!(
        forest.tree("railgun").unwrap().head().root,
        vectors::hash_or_null(&railgun["empty_root"])
    );
    let mut written = 0u64;
    let roots = railgun["roots"].as_array().unwrap();
    for (number, entry) in roots.iter().enumerate() {
        let member = entry["tree"].as_u64().unwrap();
        let size = entry["size"].as_u64().unwrap();
        let end = member * capacity + size;
        forest
            .commit_block(
                block(number as u64 + 1),
                &[("railgun", &leaves[written as usize..end as usize])],
            )
            .unwrap();
        written = end;
        forest.apply().unwrap();
        let name = cairn_db::member_name("railgun", member as u32);
        let head = forest.tree(&name).unwrap().head();
        assert_eq!(head.size, size, "{name}");
        assert_eq!(
            head.root,
            vectors::hash_or_null(&entry["root"]),
            "{name} at size {size}"
        );
    }
    assert!(
        roots.len() >= 6 && written > capacity,
        "the vectors cross a rollover"
    );
    // The same leaves in one block across the boundary: the same last
    // root of each tree.
    let last_root = |member: u64| {
        roots
            .iter()
            .rev()
            .find(|e| e["tree"].as_u64() == Some(member))
            .and_then(|e| vectors::hash_or_null(&e["root"]))
    };
    forest.truncate_to_block(3).unwrap();
    let from = roots[2]["size"].as_u64().unwrap() as usize;
    forest
        .commit_block(block(100), &[("railgun", &leaves[from..written as usize])])
        .unwrap();
    forest.apply().unwrap();
    assert_eq!(forest.tree("railgun").unwrap().head().root, last_root(0));
    assert_eq!(forest.tree("railgun/1").unwrap().head().root, last_root(1));
    forest.close().unwrap();
}

const KILL_DIR_ENV: &str = "CAIRN_ROLLOVER_KILL_DIR";
const KILL_ACKS_ENV: &str = "CAIRN_ROLLOVER_KILL_ACKS";
/// Leaves a member of the killed family holds.
const KILL_CAPACITY: u64 = 32;

/// Block `number`'s values: three for the family, one for the plain tree.
fn kill_values(number: u64) -> (Vec<Hash>, Vec<Hash>) {
    (values(number, 0, 3), values(1 << 40 | number, 0, 1))
}

/// The child of the kill -9 rollover test: blocks 1, 2, ... of three
/// values for a family of 32-leaf members and one for a plain tree, every
/// seventh write a rollback of three blocks (often back across a member's
/// boundary), each acknowledged (`will B` before, `done B` after, B the
/// last block after it) in a file synced before it counts; runs until
/// killed.
#[test]
fn rollover_kill_child() {
    let Ok(dir) = std::env::var(KILL_DIR_ENV) else {
        return;
    };
    let mut acks = cairn_testkit::kill9::AckFile::open(std::env::var(KILL_ACKS_ENV).unwrap());
    let forest = Forest::open(&dir).unwrap();
    println!("opened");
    let mut write = 0u64;
    loop {
        write += 1;
        let blocks = forest.blocks();
        if write.is_multiple_of(7) && blocks.len() > 4 {
            let to = blocks[blocks.len() - 4].number;
            acks.record(&format!("will {to}\n"));
            forest.truncate_to_block(to).unwrap();
            acks.record(&format!("done {to}\n"));
            continue;
        }
        let number = forest.last_block().unwrap_or(0) + 1;
        let (family, plain) = kill_values(number);
        acks.record(&format!("will {number}\n"));
        forest
            .commit_block(block(number), &[("notes", &family), ("spent", &plain)])
            .unwrap();
        acks.record(&format!("done {number}\n"));
    }
}

/// kill -9 at random moments of blocks and rollbacks that cross a
/// family's rollover boundaries: the database opens at the last
/// acknowledged block or the one in flight, the family holding exactly
/// the values of blocks 1 to it (every member but the last full) and the
/// plain tree one value a block.
#[test]
fn a_kill_9_across_rollovers_leaves_the_family_and_the_tree_at_one_block() {
    use rand::Rng;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let acks = dir.path().join("acks");
    let forest = Forest::create(&path).unwrap();
    forest
        .add_tree_with(
            "notes",
            config_of(tree(2, HashKind::Blake3)),
            rolling(KILL_CAPACITY),
        )
        .unwrap();
    forest
        .add_tree("spent", config_of(tree(2, HashKind::Blake3)))
        .unwrap();
    forest.close().unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(29);
    let kills = cairn_testkit::env_u64("CAIRN_FOREST_KILLS", 10);
    let mut most_members = 0;
    for kill in 0..kills {
        let victim = cairn_testkit::kill9::Victim::start(
            "rollover::rollover_kill_child",
            [
                (KILL_DIR_ENV, path.as_os_str()),
                (KILL_ACKS_ENV, acks.as_os_str()),
            ],
        );
        assert!(
            victim.opened(std::time::Duration::from_secs(60)),
            "kill {kill}: never opened"
        );
        std::thread::sleep(std::time::Duration::from_millis(rng.gen_range(20..250)));
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
        let last = forest.last_block().unwrap_or(0);
        assert!(
            [last_done.unwrap_or(0), in_flight.unwrap_or(u64::MAX)].contains(&last),
            "kill {kill}: block {last} is neither the acknowledged {last_done:?} nor the one in flight {in_flight:?}"
        );
        forest.apply().unwrap();
        let mut want = Vec::new();
        let mut spent = Vec::new();
        for number in 1..=last {
            let (family, plain) = kill_values(number);
            want.extend(family);
            spent.extend(plain);
        }
        let members = forest.family("notes").unwrap();
        most_members = most_members.max(members.len());
        let mut held = Vec::new();
        for (k, member) in members.iter().enumerate() {
            let leaves = member.db.leaves(0, None).unwrap();
            if k + 1 < members.len() {
                assert_eq!(
                    leaves.len() as u64,
                    KILL_CAPACITY,
                    "kill {kill}: member {k} is full"
                );
            }
            held.extend(leaves);
        }
        assert_eq!(
            held, want,
            "kill {kill}: the family holds blocks 1..={last}"
        );
        let plain = forest.tree("spent").unwrap();
        assert_eq!(
            plain.leaves(0, None).unwrap(),
            spent,
            "kill {kill}: the plain tree"
        );
        forest.close().unwrap();
        // The next child starts after this open: acknowledgements restart.
        std::fs::write(&acks, format!("done {last}\n")).unwrap();
    }
    assert!(
        most_members > 2,
        "the family rolled over: {most_members} members"
    );
}
