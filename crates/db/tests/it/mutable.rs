//! Mutable trees: random appends, updates and removals against a naive
//! reference (the spec's root over the leaves as changed), every old
//! leaf's proof against the head before its change; reopening; rollback by
//! block across updates; the policy on removed values; the refusals; and
//! a power loss at every operation boundary of a fixed workload, after
//! which the tree is exactly the tree of a prefix of the changes, at
//! least as long as what was acknowledged.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use cairn_core::{Hash, HashKind, LeanImt, TreeConfig, TreeHead, TreeKind};
use cairn_db::{
    BlockTag, Change, Database, DbError, ErrorKind, MutableDb, MutableError, Operation,
};
use cairn_testkit::env_u64;
use cairn_testkit::sim::SimFs;
use proptest::prelude::*;
use rand::SeedableRng;

use crate::support::*;

const WAIT: Duration = Duration::from_secs(30);

/// A fixed-depth tree small enough for the reference's full levels.
fn small_fixed(n: u64, hash: HashKind) -> TreeConfig {
    let depth = match n {
        2 => 8,
        3 => 5,
        _ => 4,
    };
    tree(n, hash).with_kind(TreeKind::Fixed {
        depth,
        zero: value(u64::MAX, 1),
    })
}

fn zero_of(tree: &TreeConfig) -> Hash {
    match tree.kind {
        TreeKind::Fixed { zero, .. } => zero,
        _ => [0; 32],
    }
}

/// The naive model: the leaves as every change left them.
struct Model {
    tree: TreeConfig,
    leaves: Vec<Hash>,
}

impl Model {
    fn head(&self) -> TreeHead {
        TreeHead {
            size: self.leaves.len() as u64,
            root: reference_root_of(&self.tree, &self.leaves),
        }
    }

    /// Applies `change`, returning the old leaf's proof a fresh tree of the
    /// leaves before gives.
    fn apply(&mut self, change: Change) -> Option<(Hash, cairn_core::MembershipProof)> {
        let index = match change {
            Change::Append(value) => {
                self.leaves.push(value);
                return None;
            }
            Change::Update(index, _) | Change::Remove(index) => index,
        };
        let mut before = LeanImt::from_leaves(self.tree, &self.leaves).unwrap();
        let proof = before.prove(index).unwrap();
        let old = self.leaves[index as usize];
        self.leaves[index as usize] = match change {
            Change::Update(_, value) => value,
            _ => zero_of(&self.tree),
        };
        Some((old, proof))
    }
}

#[derive(Debug, Clone)]
enum Op {
    Append(u8),
    Update(u16),
    Remove(u16),
    /// Several changes in one batch: (0 append, 1 update, 2 removal, of
    /// the live leaf `at` picks among those the batch left so far).
    Batch(Vec<(u8, u16)>),
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (1u8..20).prop_map(Op::Append),
        3 => any::<u16>().prop_map(Op::Update),
        2 => any::<u16>().prop_map(Op::Remove),
        2 => prop::collection::vec((0u8..3, any::<u16>()), 2..16).prop_map(Op::Batch),
        1 => Just(Op::Reopen),
    ]
}

fn run(tree: TreeConfig, ops: &[Op]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let mut config = config_of(tree);
    config.mutable = Some(false);
    let mut db = Database::create(&path, config).unwrap();
    let mut model = Model {
        tree,
        leaves: Vec::new(),
    };
    let mut next = 0u64;
    for op in ops {
        let before = model.head();
        let mut batch = Vec::new();
        match *op {
            Op::Append(count) => {
                let capacity = match tree.kind {
                    TreeKind::Fixed { depth, .. } => tree.arity.get().pow(depth) as u64,
                    _ => u64::MAX,
                };
                for _ in 0..count {
                    if (model.leaves.len() + batch.len()) as u64 >= capacity {
                        break;
                    }
                    batch.push(Change::Append(value(3, next)));
                    next += 1;
                }
            }
            Op::Update(at) | Op::Remove(at) => {
                let live: Vec<u64> = (0..model.leaves.len() as u64)
                    .filter(|&i| model.leaves[i as usize] != zero_of(&tree))
                    .collect();
                if live.is_empty() {
                    continue;
                }
                let index = live[at as usize % live.len()];
                batch.push(match op {
                    Op::Update(_) => {
                        next += 1;
                        Change::Update(index, value(3, next - 1))
                    }
                    _ => Change::Remove(index),
                });
            }
            Op::Batch(ref picks) => {
                let capacity = match tree.kind {
                    TreeKind::Fixed { depth, .. } => tree.arity.get().pow(depth) as u64,
                    _ => u64::MAX,
                };
                // The leaves as the batch so far leaves them.
                let mut leaves = model.leaves.clone();
                for &(kind, at) in picks {
                    let live: Vec<u64> = (0..leaves.len() as u64)
                        .filter(|&i| leaves[i as usize] != zero_of(&tree))
                        .collect();
                    if kind == 0 || live.is_empty() {
                        if leaves.len() as u64 >= capacity {
                            continue;
                        }
                        leaves.push(value(3, next));
                        batch.push(Change::Append(value(3, next)));
                        next += 1;
                        continue;
                    }
                    let index = live[at as usize % live.len()];
                    if kind == 1 {
                        leaves[index as usize] = value(3, next);
                        batch.push(Change::Update(index, value(3, next)));
                        next += 1;
                    } else {
                        leaves[index as usize] = zero_of(&tree);
                        batch.push(Change::Remove(index));
                    }
                }
            }
            Op::Reopen => {
                db.close().unwrap();
                db = Database::open(&path).unwrap();
                prop_assert!(db.is_mutable());
                prop_assert_eq!(db.head(), model.head());
                continue;
            }
        }
        if batch.is_empty() {
            continue;
        }
        let ticket = db.change(&batch).unwrap();
        let old = db.changed(&ticket, WAIT).unwrap();
        prop_assert_eq!(old.len(), batch.len());
        for (change, old) in batch.iter().zip(old) {
            let want = model.apply(*change);
            match (want, old) {
                (None, None) => {}
                (Some((leaf, proof)), Some(got)) => {
                    prop_assert_eq!(got.old, leaf);
                    prop_assert_eq!(&got.proof, &proof);
                }
                (want, got) => prop_assert!(false, "{want:?} vs {got:?}"),
            }
        }
        let head = db.head();
        prop_assert_eq!(head, model.head(), "after {:?} from {:?}", op, before);
        // Every live leaf proves against the durable head and is found.
        if let Some(index) = (0..model.leaves.len())
            .rev()
            .find(|&i| model.leaves[i] != zero_of(&tree))
        {
            let proof = match db.prove(index as u64, cairn_db::At::Durable).unwrap() {
                cairn_db::Proof::Membership(proof) => proof,
                other => panic!("{other:?}"),
            };
            proof.verify_with(&tree, &head).unwrap();
            prop_assert_eq!(
                db.index_of(&model.leaves[index]).unwrap(),
                Some(index as u64)
            );
        }
    }
    db.close().unwrap();
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: env_u64("CAIRN_MUTABLE_CASES", 24) as u32,
        ..ProptestConfig::default()
    })]

    /// Random appends, updates, removals and reopens, in Lean and
    /// fixed-depth trees of several arities, agree with the naive
    /// reference root for root and proof for proof.
    #[test]
    fn mutable_changes_agree_with_the_reference(
        n in 2u64..5,
        fixed in any::<bool>(),
        ops in prop::collection::vec(op(), 1..40),
    ) {
        let tree = if fixed { small_fixed(n, HashKind::Blake3) } else { tree(n, HashKind::Blake3) };
        run(tree, &ops)?;
    }
}

#[test]
fn poseidon_mutable_trees_agree_with_the_reference() {
    let ops: Vec<Op> = (0..30)
        .map(|i| match i % 5 {
            0 => Op::Append(5),
            1 => Op::Update(i * 7),
            2 => Op::Remove(i * 3),
            // Updates and removals through the lanes together, the same
            // leaf twice, an append between.
            3 => Op::Batch(vec![
                (1, i),
                (1, i * 5),
                (2, i * 3),
                (0, 0),
                (1, i),
                (1, i + 1),
            ]),
            _ => Op::Append(1),
        })
        .collect();
    run(tree(2, HashKind::Poseidon), &ops).unwrap();
    run(small_fixed(2, HashKind::Poseidon), &ops).unwrap();
}

fn tag(number: u64) -> BlockTag {
    BlockTag {
        number,
        hash: Some([number as u8; 32]),
    }
}

#[test]
fn a_rollback_by_block_restores_updated_and_removed_leaves() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(2, HashKind::Blake3);
    config.mutable = Some(false);
    let db = Database::create(dir.path().join("db"), config).unwrap();
    let leaves: Vec<Hash> = (0..10).map(|i| value(1, i)).collect();
    let appends: Vec<Change> = leaves.iter().map(|&v| Change::Append(v)).collect();
    let ticket = db.change_tagged(&appends, tag(1)).unwrap();
    db.changed(&ticket, WAIT).unwrap();
    let at_one = db.head();
    let ticket = db
        .change_tagged(&[Change::Update(3, value(2, 0)), Change::Remove(7)], tag(2))
        .unwrap();
    db.changed(&ticket, WAIT).unwrap();
    assert_ne!(db.head(), at_one);
    let heads = db.heads(0, 10).unwrap();
    assert_eq!(heads.len(), 2);
    assert_eq!((heads[0].size, heads[0].root), (at_one.size, at_one.root));
    assert_eq!((heads[1].size, heads[1].root), (10, db.head().root));
    assert_eq!(db.head_at_block(1).unwrap().unwrap().root, at_one.root);
    assert_eq!(db.index_of(&leaves[3]).unwrap(), None);
    // A removed value may not come back (the default policy).
    let refused = db.change(&[Change::Append(leaves[7])]).unwrap_err();
    assert!(
        matches!(refused, DbError::Mutable(MutableError::WasRemoved { .. })),
        "{refused}"
    );
    assert_eq!(refused.kind(), ErrorKind::Duplicate);
    // Rolling back to block 1 undoes both.
    assert_eq!(db.truncate_to_block(1).unwrap(), at_one);
    assert_eq!(db.index_of(&leaves[3]).unwrap(), Some(3));
    assert_eq!(db.index_of(&leaves[7]).unwrap(), Some(7));
    // Size is no point of a mutable tree's history.
    let refused = db.truncate(5).unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::Unsupported);
    db.close().unwrap();
    let db = Database::open(dir.path().join("db")).unwrap();
    assert_eq!(db.head(), at_one);
}

#[test]
fn what_assumes_nodes_never_change_is_refused_with_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(2, HashKind::Blake3);
    config.mutable = Some(false);
    let db = Database::create(dir.path().join("db"), config).unwrap();
    let ticket = db
        .change(&[Change::Append(value(1, 0)), Change::Append(value(1, 1))])
        .unwrap();
    db.changed(&ticket, WAIT).unwrap();
    for operation in [
        Operation::ConsistencyProof,
        Operation::Tiles,
        Operation::SignedCheckpoint,
        Operation::RootLookup,
        Operation::HistoricalProof,
        Operation::LeafRange,
    ] {
        let error = db.supports(operation).unwrap_err();
        assert!(
            matches!(error, DbError::UnsupportedMutable { operation: o, .. } if o == operation),
            "{error}"
        );
        assert!(
            error
                .to_string()
                .starts_with("a mutable lean database has no"),
            "{error}"
        );
    }
    let error = db.prove_consistency(1, None).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unsupported);
    assert!(db.supports(Operation::Mutation).is_ok());
    // Removing, then updating or removing the removed leaf, is refused.
    db.remove(0, WAIT).unwrap();
    for change in [Change::Remove(0), Change::Update(0, value(1, 9))] {
        let error = db.change(&[change]).unwrap_err();
        assert!(
            matches!(
                error,
                DbError::Mutable(MutableError::Removed { index: 0, .. })
            ),
            "{error}"
        );
    }
    // The zero leaf is no value, an index past the end no leaf.
    let error = db.change(&[Change::Append([0; 32])]).unwrap_err();
    assert!(
        matches!(error, DbError::Mutable(MutableError::ZeroLeaf { .. })),
        "{error}"
    );
    let error = db.change(&[Change::Update(2, value(1, 9))]).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NotFound);
    // An append-only database refuses changes, naming the way to get them.
    let plain = Database::create(
        dir.path().join("plain"),
        crate::support::config(2, HashKind::Blake3),
    )
    .unwrap();
    let error = plain.change(&[Change::Remove(0)]).unwrap_err();
    assert!(
        error.to_string().contains("cairn init --mutable"),
        "{error}"
    );
}

#[test]
fn a_tree_created_readmitting_removed_values_takes_them_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = MutableDb::create(dir.path().join("db"), config(4, HashKind::Blake3), true).unwrap();
    let v = value(1, 0);
    db.change(&[Change::Append(v), Change::Remove(0), Change::Append(v)])
        .unwrap();
    db.flush().unwrap();
    assert_eq!(db.leaf(0), Some([0; 32]));
    assert_eq!(db.leaf(1), Some(v));
    db.close().unwrap();
    let db = MutableDb::open(dir.path().join("db")).unwrap();
    assert!(db.readmits_removed());
    assert_eq!(db.index_of_many(&[v]).1, vec![Some(1)]);
}

#[test]
fn an_update_to_a_value_the_tree_holds_is_a_duplicate() {
    let dir = tempfile::tempdir().unwrap();
    let db = MutableDb::create(dir.path().join("db"), config(2, HashKind::Blake3), false).unwrap();
    let (a, b) = (value(1, 0), value(1, 1));
    db.change(&[Change::Append(a), Change::Append(b)]).unwrap();
    let error = db.change(&[Change::Update(0, b)]).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Duplicate);
    // Freed in the same batch, a value may move.
    db.change(&[Change::Update(1, value(1, 2)), Change::Update(0, b)])
        .unwrap();
    db.flush().unwrap();
    assert_eq!(db.leaf(0), Some(b));
    assert_eq!(db.index_of_many(&[a, b]).1, vec![None, Some(0)]);
}

/// A power loss after every operation of a fixed workload of appends,
/// updates and removals (with waits and a checkpoint), in every crash
/// mode: the database opens, holds at least what was acknowledged at that
/// boundary, and its tree is the model's for a prefix of the changes.
#[test]
fn power_loss_at_every_operation_boundary_recovers_a_prefix_of_the_changes() {
    use rand::Rng;
    let tree = tree(3, HashKind::Blake3);
    let fs = Arc::new(SimFs::new());
    let mut config = config_of(tree);
    config.mutable = Some(false);
    let dir = Path::new("/db");
    let db = MutableDb::create_in(fs.clone(), dir, config.clone()).unwrap();
    fs.clear_trace();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
    let mut model = Model {
        tree,
        leaves: Vec::new(),
    };
    // The tree's head after each prefix of changes, and the changes
    // acknowledged after the first k file-system operations.
    let mut heads: Vec<TreeHead> = vec![model.head()];
    let mut acked_at: Vec<(usize, usize)> = vec![(0, 0)];
    let mut next = 0;
    for round in 0..40 {
        let mut batch = Vec::new();
        for _ in 0..rng.gen_range(1..12) {
            let live: Vec<u64> = (0..model.leaves.len() as u64)
                .filter(|&i| model.leaves[i as usize] != [0; 32])
                .collect();
            let change = match rng.gen_range(0..4) {
                0 | 1 if !live.is_empty() => {
                    let index = live[rng.gen_range(0..live.len())];
                    if rng.gen_bool(0.5) {
                        next += 1;
                        Change::Update(index, value(6, next))
                    } else {
                        Change::Remove(index)
                    }
                }
                _ => {
                    next += 1;
                    Change::Append(value(6, next))
                }
            };
            // The batch is checked as a sequence: apply as we go.
            model.apply(change);
            heads.push(model.head());
            batch.push(change);
        }
        let ticket = db.change(&batch).unwrap();
        if round % 3 == 0 {
            db.changed(&ticket, WAIT).unwrap();
        }
        if round == 20 {
            db.checkpoint().unwrap();
        }
        let durable = db.log_words_durable() / cairn_db::WORDS_PER_CHANGE;
        acked_at.push((fs.op_count(), durable as usize));
    }
    db.flush().unwrap();
    assert_eq!(db.head(), *heads.last().unwrap());
    drop(db);
    let acked = |k: usize| -> usize {
        acked_at
            .iter()
            .take_while(|(ops, _)| *ops <= k)
            .last()
            .map_or(0, |(_, a)| *a)
    };
    let mut replay = fs.replay();
    let ops = replay.op_count();
    let step = env_u64("CAIRN_MUTABLE_POWER_STEP", 1).max(1) as usize;
    let mut states = 0;
    let mut seen = std::collections::BTreeSet::new();
    for k in (0..=ops).step_by(step) {
        replay.seek(k);
        for mode in replay.crash_modes() {
            let crashed = Arc::new(replay.crash(&mode, &mut rng));
            let db = MutableDb::open_in(crashed, dir, Some(config.clone()))
                .unwrap_or_else(|e| panic!("boundary {k} {mode:?}: open failed: {e}"));
            let head = db.head();
            let recovered = heads
                .iter()
                .rposition(|h| *h == head)
                .unwrap_or_else(|| panic!("boundary {k} {mode:?}: {head:?} is no prefix's head"));
            assert!(
                recovered >= acked(k),
                "boundary {k} {mode:?}: recovered {recovered} changes, acknowledged {}",
                acked(k)
            );
            seen.insert(recovered);
            states += 1;
        }
    }
    eprintln!(
        "{states} crash states over {} boundaries, {} distinct recoveries",
        ops / step + 1,
        seen.len()
    );
    assert!(seen.len() > 10, "too few distinct recoveries");
}

/// The update and removal sequences of `typescript.json` (zk-kit's
/// TypeScript LeanIMT and IMT, a removal writing the zero leaf), replayed
/// through mutable databases: root for root after every step, and every
/// old leaf's proof verifies against the root before its change.
#[test]
fn zk_kit_typescript_update_and_remove_sequences_replay_root_for_root() {
    use cairn_core::hex::{parse_hash, to_hex};
    let doc = cairn_testkit::vectors::load("typescript.json");
    let sequences = doc["mutations"]
        .as_array()
        .expect("typescript.json has a mutations array");
    let hash_at = |text: Option<&str>, at: &str| -> Hash {
        parse_hash(text.unwrap_or_else(|| panic!("{at}: not a string")))
            .unwrap_or_else(|error| panic!("{at}: {error}"))
    };
    let mut kinds = std::collections::BTreeSet::new();
    for (number, sequence) in sequences.iter().enumerate() {
        let name = |key: &str| {
            sequence[key]
                .as_str()
                .unwrap_or_else(|| panic!("mutations[{number}].{key}"))
                .to_owned()
        };
        let hash = HashKind::ALL
            .into_iter()
            .find(|kind| kind.name() == name("hash"))
            .unwrap_or_else(|| panic!("mutations[{number}]: unknown hash {}", name("hash")));
        let arity = sequence["arity"].as_u64().expect("arity");
        let mut shape = tree(arity, hash);
        if name("kind") == "imt" {
            let depth = sequence["depth"].as_u64().expect("depth") as u32;
            let zero = hash_at(sequence["zero"].as_str(), "zero");
            shape = shape.with_kind(TreeKind::Fixed { depth, zero });
        }
        let what = format!(
            "mutations[{number}] ({} {} N={arity})",
            name("kind"),
            name("hash")
        );
        let dir = tempfile::tempdir().unwrap();
        let mut config = config_of(shape);
        config.mutable = Some(false);
        let db = Database::create(dir.path().join("db"), config).unwrap();
        let mut leaves: Vec<Hash> = Vec::new();
        let steps = sequence["steps"].as_array().expect("steps");
        assert!(!steps.is_empty(), "{what}: no steps");
        let mut removals = 0;
        for (i, step) in steps.iter().enumerate() {
            let at = format!("{what} step {i}");
            let index = || {
                step["index"]
                    .as_u64()
                    .unwrap_or_else(|| panic!("{at}: index"))
            };
            let change = match step["op"].as_str().expect("op") {
                "insert" => Change::Append(hash_at(step["value"].as_str(), &at)),
                "update" => Change::Update(index(), hash_at(step["value"].as_str(), &at)),
                "remove" => {
                    removals += 1;
                    Change::Remove(index())
                }
                other => panic!("{at}: unknown op {other}"),
            };
            let before = db.head();
            let ticket = db.change(&[change]).unwrap();
            let old = db.changed(&ticket, WAIT).unwrap();
            match (change, &old[..]) {
                (Change::Append(value), [None]) => leaves.push(value),
                (Change::Update(index, _) | Change::Remove(index), [Some(old)]) => {
                    assert_eq!(old.old, leaves[index as usize], "{at}: the old leaf");
                    old.proof.verify_with(&shape, &before).unwrap();
                    leaves[index as usize] = match change {
                        Change::Update(_, value) => value,
                        _ => zero_of(&shape),
                    };
                }
                (change, old) => panic!("{at}: {change:?} answered {old:?}"),
            }
            let root = db.head().root.expect("a tree with leaves has a root");
            assert_eq!(
                to_hex(&root),
                to_hex(&hash_at(step["root"].as_str(), &at)),
                "{at}: cairn's root and zk-kit's"
            );
        }
        assert!(removals > 0, "{what}: no removal");
        kinds.insert(name("kind"));
        db.close().unwrap();
    }
    assert_eq!(kinds.into_iter().collect::<Vec<_>>(), ["imt", "lean"]);
}

/// A batch whose log words cross a log file (512 changes a file here) is
/// committed in two parts, the first file synced first: a power loss
/// between them leaves the first part durable, and open drops it, so
/// every recovery holds whole batches only.
#[test]
fn a_batch_across_a_log_file_is_recovered_whole_or_not_at_all() {
    let tree = tree(2, HashKind::Blake3);
    let fs = Arc::new(SimFs::new());
    let mut config = config_of(tree);
    config.mutable = Some(false);
    let dir = Path::new("/db");
    let db = MutableDb::create_in(fs.clone(), dir, config.clone()).unwrap();
    fs.clear_trace();
    let first: Vec<Change> = (0..400).map(|i| Change::Append(value(8, i))).collect();
    let second: Vec<Change> = (0..200)
        .map(|i| match i % 3 {
            0 => Change::Update(i, value(9, i)),
            1 => Change::Remove(i),
            _ => Change::Append(value(8, 400 + i)),
        })
        .collect();
    let mut model = Model {
        tree,
        leaves: Vec::new(),
    };
    let mut heads = vec![model.head()];
    for batch in [&first, &second] {
        let ticket = db.change(batch).unwrap();
        db.changed(&ticket, WAIT).unwrap();
        for change in batch.iter() {
            model.apply(*change);
        }
        heads.push(model.head());
    }
    assert_eq!(db.head(), heads[2]);
    drop(db);
    let mut replay = fs.replay();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(8);
    let mut seen = std::collections::BTreeSet::new();
    for k in 0..=replay.op_count() {
        replay.seek(k);
        for mode in replay.crash_modes() {
            let crashed = Arc::new(replay.crash(&mode, &mut rng));
            let db = MutableDb::open_in(crashed, dir, Some(config.clone()))
                .unwrap_or_else(|e| panic!("boundary {k} {mode:?}: open failed: {e}"));
            let head = db.head();
            let whole = heads
                .iter()
                .position(|h| *h == head)
                .unwrap_or_else(|| panic!("boundary {k} {mode:?}: {head:?} is part of a batch"));
            // What was dropped is gone from the log too: the next change
            // follows the last whole batch.
            let words = db.log_words_durable();
            assert_eq!(words, [0, 800, 1200][whole], "boundary {k} {mode:?}");
            seen.insert(whole);
        }
    }
    assert_eq!(seen.len(), 3, "every whole prefix is a recovery: {seen:?}");
}
