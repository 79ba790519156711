//! `Database`, the one type over every kind, driven the same way for a
//! lean, a fixed-depth and an indexed tree: appends and their
//! acknowledgements (blocking and awaited, with a deadline), duplicates,
//! lookups, proofs, rollback and finality in the tree's sizes, checkpoints,
//! backups, a reopen that finds the kind in the directory, and the one
//! place that refuses what a kind cannot do.

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use cairn_core::indexed::IndexedTree;
use cairn_core::{Hash, HashKind, TreeConfig, TreeKind};
use cairn_db::{At, BlockTag, Database, DbError, ErrorKind, Operation, Proof};

use crate::support::*;

const WAIT: Duration = Duration::from_secs(30);

/// The kinds every test runs for.
fn kinds() -> [TreeConfig; 3] {
    [
        tree(3, HashKind::Blake3),
        fixed_tree(2, HashKind::Sha256),
        tree(4, HashKind::Blake3).with_kind(TreeKind::Indexed),
    ]
}

/// The head a tree of `kind` holding `values` has (the reference).
fn head_of(kind: &TreeConfig, values: &[Hash]) -> cairn_core::TreeHead {
    match kind.kind {
        TreeKind::Indexed => IndexedTree::from_values(*kind, values).unwrap().head(),
        _ => cairn_core::TreeHead {
            size: values.len() as u64,
            root: reference_root_of(kind, values),
        },
    }
}

/// Leaves before the first value: the guard of an indexed tree.
fn offset(kind: &TreeConfig) -> u64 {
    u64::from(kind.kind == TreeKind::Indexed)
}

/// Runs `future` to completion on this thread (the database's async wait
/// needs no runtime).
fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut context = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return output;
        }
        std::thread::park();
    }
}

#[test]
fn every_kind_appends_acknowledges_proves_and_reopens_by_what_the_directory_holds() {
    for kind in kinds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let values: Vec<Hash> = (0..40).map(|i| value(1, i)).collect();
        let db = Database::create(&path, config_of(kind)).unwrap();
        assert_eq!(db.kind(), kind.kind);
        let acked = db.append(&values[..30]).unwrap().wait(&db, WAIT).unwrap();
        let first = offset(&kind);
        assert_eq!((acked.first, acked.count), (first, 30), "{kind:?}");
        let head = head_of(&kind, &values[..30]);
        assert_eq!((acked.size, acked.root), (head.size, head.root), "{kind:?}");
        assert_eq!(db.head(), head);
        // Awaited, with a deadline that never comes.
        let ack = db.append(&values[30..40]).unwrap();
        assert_eq!(ack.appended(), Some((first + 30, 10)));
        let acked = block_on(ack.durable(&db, std::future::pending())).unwrap();
        let head = head_of(&kind, &values);
        assert_eq!((acked.size, acked.root), (head.size, head.root), "{kind:?}");

        // A durable duplicate is refused at once, with its leaf.
        match db.append(&[values[5], value(1, 99)]) {
            Err(DbError::Duplicates { duplicates, .. }) => {
                assert_eq!(duplicates.len(), 1);
                assert_eq!(
                    duplicates[0].of,
                    cairn_db::DuplicateOf::Leaf(first + 5),
                    "{kind:?}"
                );
            }
            other => panic!("{kind:?}: {other:?}"),
        }
        // Skipping it appends the rest.
        let acked = db
            .append_new(&[values[5], value(1, 99)])
            .unwrap()
            .wait(&db, WAIT)
            .unwrap();
        assert_eq!((acked.count, acked.skipped.len()), (1, 1), "{kind:?}");
        let all: Vec<Hash> = values.iter().copied().chain([value(1, 99)]).collect();
        let head = head_of(&kind, &all);
        assert_eq!(db.head(), head);

        // Lookups and proofs at the durable head, verified.
        assert_eq!(db.index_of(&values[7]).unwrap(), Some(first + 7));
        assert_eq!(db.index_of(&value(2, 0)).unwrap(), None);
        let lookup = db.lookup(&[values[3], value(2, 0)]).unwrap();
        assert_eq!(lookup.size, head.size);
        assert_eq!(lookup.indices, [Some(first + 3), None]);
        let by_index = db.prove(first + 7, At::Durable).unwrap();
        let by_value = db.prove_value(&values[7], At::Durable).unwrap();
        assert_eq!(by_index, by_value);
        assert_eq!(by_index.size(), head.size);
        match &by_index {
            Proof::Membership(proof) => proof.verify_with(&kind, &head).unwrap(),
            Proof::IndexedMembership(proof) => proof
                .verify(kind.arity, kind.hash, &head, &values[7])
                .unwrap(),
            Proof::Absence(_) => panic!("an absence proof by index"),
        }
        assert!(matches!(
            db.prove_value(&value(2, 0), At::Durable),
            Err(DbError::Absent { .. })
        ));
        assert_eq!(
            db.prove(head.size, At::Durable).unwrap_err().kind(),
            ErrorKind::NotFound
        );
        db.checkpoint().unwrap();
        db.close().unwrap();

        // The kind comes from the directory.
        let db = Database::open(&path).unwrap();
        assert_eq!((db.kind(), db.head()), (kind.kind, head));
        db.close().unwrap();
        let reader = Database::open_read_only(&path).unwrap();
        assert_eq!(reader.head(), head);
        assert_eq!(reader.index_of(&values[9]).unwrap(), Some(first + 9));
        reader.close().unwrap();
        // Without the set: roots and proofs, no lookups.
        let tree_only = cairn_db::OpenOptions::new()
            .read_only(true)
            .lookups(false)
            .open(&path)
            .unwrap();
        assert_eq!(tree_only.head(), head);
        if kind.kind.is_append_only() {
            assert!(matches!(
                tree_only.index_of(&values[0]),
                Err(DbError::SetNotLoaded)
            ));
        }
        tree_only.close().unwrap();
        // The values in order, whatever the kind.
        let log = Database::read_values(&path).unwrap();
        assert_eq!(log.size(), all.len() as u64);
        assert_eq!(log.leaf(40), Some(value(1, 99)));
    }
}

#[test]
fn what_a_kind_cannot_do_is_refused_from_one_place_before_any_work() {
    for kind in kinds() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(dir.path().join("db"), config_of(kind)).unwrap();
        let values: Vec<Hash> = (0..8).map(|i| value(3, i)).collect();
        db.append(&values).unwrap().wait(&db, WAIT).unwrap();
        let size = db.head().size;
        type Attempt<'a> = Box<dyn Fn() -> Result<(), DbError> + 'a>;
        let attempts: Vec<(Operation, Attempt<'_>)> = vec![
            (
                Operation::AbsenceProof,
                Box::new(|| db.prove_absence(&value(4, 0)).map(drop)),
            ),
            (
                Operation::ConsistencyProof,
                Box::new(|| db.prove_consistency(1, None).map(drop)),
            ),
            (
                Operation::HistoricalProof,
                Box::new(|| db.prove(offset(&kind), At::Size(size - 1)).map(drop)),
            ),
            (Operation::BlockTags, Box::new(|| db.heads(0, 10).map(drop))),
            (
                Operation::BlockTags,
                Box::new(|| {
                    db.append_tagged(&[value(4, 1)], BlockTag::number(1))
                        .map(drop)
                }),
            ),
            (
                Operation::BlockTags,
                Box::new(|| db.truncate_to_block(1).map(drop)),
            ),
            (
                Operation::RootLookup,
                Box::new(|| db.size_of_root(&[1; 32]).map(drop)),
            ),
            (
                Operation::LeafRange,
                Box::new(|| db.leaves(0, None).map(drop)),
            ),
            (Operation::Tiles, Box::new(|| db.tree_snapshot().map(drop))),
            (
                Operation::InsertionWitness,
                Box::new(|| db.append_witnessed(&[value(4, 2)]).map(drop)),
            ),
        ];
        let mut refused = 0;
        for (operation, attempt) in &attempts {
            assert_eq!(
                db.supports(*operation).is_ok(),
                operation.supported_by(kind.kind)
            );
            if operation.supported_by(kind.kind) {
                continue;
            }
            match attempt() {
                Err(DbError::Unsupported {
                    operation: named,
                    kind: of,
                }) => assert_eq!((named, of), (*operation, kind.kind)),
                other => panic!("{kind:?}: {operation:?}: {other:?}"),
            }
            refused += 1;
        }
        assert!(refused >= 2, "{kind:?}");
        // A refusal appends nothing.
        assert_eq!(db.head().size, size);
        // No leaf can be a value the hash refuses: a lookup of one is refused.
        if kind.hash.is_field_hash() {
            assert_eq!(
                db.index_of(&[0xff; 32]).unwrap_err().kind(),
                ErrorKind::InvalidBatch
            );
        }
    }
}

#[test]
fn rollback_and_finality_speak_the_trees_sizes_for_every_kind() {
    for kind in kinds() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = config_of(kind);
        config.explicit_finality = true;
        let db = Database::create(dir.path().join("db"), config).unwrap();
        let values: Vec<Hash> = (0..20).map(|i| value(5, i)).collect();
        db.append(&values).unwrap().wait(&db, WAIT).unwrap();
        let first = offset(&kind);
        assert_eq!(db.finalize(first + 6).unwrap(), first + 6);
        assert_eq!(db.finalize(first + 2).unwrap(), first + 6, "never lowered");
        let error = db.truncate(first + 3).unwrap_err();
        assert_eq!(
            error.kind(),
            ErrorKind::BelowFinalized {
                finalized: first + 6
            },
            "{kind:?}: {error}"
        );
        let error = db.truncate(first + 21).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::NotFound, "{kind:?}: {error}");
        assert!(
            error.to_string().contains(&format!("{}", first + 20)),
            "{error}"
        );
        let head = db.truncate(first + 10).unwrap();
        assert_eq!(head, head_of(&kind, &values[..10]));
        assert_eq!(db.head(), head);
        // Removed values go in again, at the indices they left.
        let acked = db.append(&values[15..17]).unwrap().wait(&db, WAIT).unwrap();
        assert_eq!(acked.first, first + 10);
        let mut now = values[..10].to_vec();
        now.extend_from_slice(&values[15..17]);
        assert_eq!(db.head(), head_of(&kind, &now));
        // The guard of an indexed tree is always final.
        if kind.kind == TreeKind::Indexed {
            assert!(matches!(
                db.truncate(0).unwrap_err().kind(),
                ErrorKind::BelowFinalized { .. }
            ));
        }
        let checkpointed = db.checkpoint().unwrap();
        assert_eq!(checkpointed.size, db.head().size, "{kind:?}");
        assert_eq!(checkpointed.set_size.is_some(), db.has_set());
        // A backup opens with the same head.
        let copy = dir.path().join("copy");
        let backup = db.backup_to(&copy).unwrap();
        assert_eq!(backup.head, db.head(), "{kind:?}");
        db.close().unwrap();
        let restored = Database::open(&copy).unwrap();
        assert_eq!(restored.head(), backup.head);
        restored.close().unwrap();
    }
}

#[test]
fn tagged_heads_are_served_once_durable_and_roots_answer_their_size() {
    let kind = tree(2, HashKind::Sha256);
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("db"), config_of(kind)).unwrap();
    let values: Vec<Hash> = (0..12).map(|i| value(6, i)).collect();
    let mut roots = Vec::new();
    for (block, chunk) in values.chunks(4).enumerate() {
        let acked = db
            .append_tagged(chunk, BlockTag::number(10 + block as u64))
            .unwrap()
            .wait(&db, WAIT)
            .unwrap();
        assert_eq!(acked.block, Some(BlockTag::number(10 + block as u64)));
        roots.push((acked.size, acked.root.unwrap()));
    }
    // An empty block's tag, acknowledged: served although no leaf follows it.
    db.append_tagged(&[], BlockTag::number(13))
        .unwrap()
        .wait(&db, WAIT)
        .unwrap();
    let heads = db.heads(0, 10).unwrap();
    assert_eq!(
        heads.iter().map(|h| h.block).collect::<Vec<_>>(),
        [10, 11, 12, 13]
    );
    // Block order is the store's one check: a repeated number is refused.
    let error = db
        .append_tagged(&[value(6, 50)], BlockTag::number(13))
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::BlockOrder);
    assert_eq!(db.index_of(&value(6, 50)).unwrap(), None, "nothing kept");
    for &(size, root) in &roots {
        let found = db.size_of_root(&root).unwrap().unwrap();
        assert_eq!(found.size, size);
        let proof = db.prove(0, At::Root(root)).unwrap();
        assert_eq!(proof.size(), size);
    }
    assert!(matches!(
        db.prove(0, At::Root([9; 32])),
        Err(DbError::UnknownRoot { .. })
    ));
    // Rolled back to block 11: the later heads are gone, every one left durable.
    let head = db.truncate_to_block(11).unwrap();
    assert_eq!(head.size, 8);
    assert_eq!(db.heads(0, 10).unwrap().len(), 2);
    assert_eq!(db.size_of_root(&roots[2].1).unwrap(), None);
    let leaves = db.leaves(2, Some(6)).unwrap();
    assert_eq!(leaves, values[2..6]);
    let consistency = db.prove_consistency(4, None).unwrap();
    consistency
        .verify(kind.arity, kind.hash, &db.head_at(4).unwrap(), &db.head())
        .unwrap();
    // Publishing pins a head: final from then on.
    db.pin_published(&db.head_at(6).unwrap()).unwrap();
    assert_eq!(db.finalized_size(), 6);
    let stale = cairn_core::TreeHead::new(7, [3; 32]);
    assert!(matches!(
        db.pin_published(&stale),
        Err(DbError::HeadChanged { size: 7 })
    ));
}

#[test]
fn head_at_block_is_the_last_durable_tag_at_or_below_it() {
    let kind = tree(2, HashKind::Sha256);
    let dir = tempfile::tempdir().unwrap();
    let db = Database::create(dir.path().join("db"), config_of(kind)).unwrap();
    assert_eq!(db.head_at_block(u64::MAX).unwrap(), None, "no tag yet");
    for (block, count) in [(10u64, 0u64), (12, 3), (15, 2)] {
        let values: Vec<Hash> = (0..count).map(|i| value(9, block * 10 + i)).collect();
        db.append_tagged(&values, BlockTag::number(block))
            .unwrap()
            .wait(&db, WAIT)
            .unwrap();
    }
    let at = |block| db.head_at_block(block).unwrap().map(|h| (h.block, h.size));
    assert_eq!(at(u64::MAX), Some((15, 5)));
    assert_eq!(at(14), Some((12, 3)));
    assert_eq!(at(12), Some((12, 3)));
    assert_eq!(at(11), Some((10, 0)), "an empty block's tag counts");
    assert_eq!(at(9), None);
    db.truncate_to_block(12).unwrap();
    assert_eq!(at(u64::MAX), Some((12, 3)), "a rollback drops later tags");
    drop(db);
    let db = Database::open(dir.path().join("db")).unwrap();
    assert_eq!(
        db.head_at_block(u64::MAX)
            .unwrap()
            .map(|h| (h.block, h.size)),
        Some((12, 3)),
        "recovered at open"
    );
    let indexed = Database::create(
        dir.path().join("indexed"),
        config_of(kind.with_kind(TreeKind::Indexed)),
    )
    .unwrap();
    assert!(matches!(
        indexed.head_at_block(1),
        Err(DbError::Unsupported {
            operation: Operation::BlockTags,
            ..
        })
    ));
}

#[test]
fn an_acknowledgement_past_its_deadline_names_the_sizes_in_the_trees_units() {
    for kind in kinds() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(dir.path().join("db"), config_of(kind)).unwrap();
        let ack = db.append(&[value(8, 0), value(8, 1)]).unwrap();
        // A deadline that has passed: nothing flushed it meanwhile.
        let error = block_on(ack.durable(&db, std::future::ready(()))).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Unavailable, "{kind:?}: {error}");
        let end = offset(&kind) + 2;
        assert!(
            error.to_string().contains(&format!("leaves up to {end} ")),
            "{kind:?}: {error}"
        );
        // Still appended: a flush makes it durable.
        assert_eq!(db.flush().unwrap(), end);
    }
}

/// An indexed tree proves absence and membership against each retained
/// head (one per applied append) by size or by root, refuses a size
/// outside its window with the window, and a rollback drops the heads
/// above it while the older ones keep proving.
#[test]
fn an_indexed_tree_proves_against_its_retained_heads_by_size_and_root() {
    let kind = tree(2, HashKind::Blake3).with_kind(TreeKind::Indexed);
    let dir = tempfile::tempdir().unwrap();
    let mut config = config_of(kind);
    config.history_heads = 4;
    let db = Database::create(dir.path().join("db"), config).unwrap();
    let values: Vec<Hash> = (0..30).map(|i| value(8, i)).collect();
    for block in values.chunks(5) {
        db.append(block).unwrap().wait(&db, WAIT).unwrap();
    }
    let heads = db.indexed_heads().unwrap();
    let sizes: Vec<u64> = heads.iter().map(|h| h.size).collect();
    assert_eq!(sizes, [16, 21, 26, 31]);
    let absent = value(9, 0);
    for head in &heads {
        let prefix = &values[..head.size as usize - 1];
        assert_eq!(*head, head_of(&kind, prefix));
        assert_eq!(db.head_at(head.size).unwrap(), *head);
        for at in [At::Size(head.size), At::Root(head.root.unwrap())] {
            let Proof::Absence(proof) = db.prove_absence_at(&absent, at).unwrap() else {
                panic!("not an absence proof");
            };
            proof.verify(kind.arity, kind.hash, head, &absent).unwrap();
            // The last value of the head is a member there, absent before it.
            let last = prefix.last().unwrap();
            let Proof::IndexedMembership(member) = db.prove_value(last, at).unwrap() else {
                panic!("not a membership proof");
            };
            member.verify(kind.arity, kind.hash, head, last).unwrap();
        }
        if head.size > 16 {
            // Its last value is absent at the head before.
            let newest = &values[head.size as usize - 2];
            let earlier = At::Size(head.size - 5);
            assert!(db.prove_absence_at(newest, earlier).is_ok());
        }
    }
    let error = db.prove_absence_at(&absent, At::Size(11)).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::NotFound);
    let message = error.to_string();
    assert!(
        message.contains("window of 4 heads") && message.contains("16..=31"),
        "{message}"
    );
    let between = db.prove_absence_at(&absent, At::Size(18)).unwrap_err();
    assert!(between.to_string().contains("16 and 21"), "{between}");
    assert!(matches!(
        db.prove_absence_at(&absent, At::Root([9; 32])),
        Err(DbError::UnknownRoot { window: 4, .. })
    ));
    // A rollback to 21 drops the heads above it; 16 and 21 still prove.
    db.truncate(21).unwrap();
    let sizes: Vec<u64> = db.indexed_heads().unwrap().iter().map(|h| h.size).collect();
    assert_eq!(sizes, [16, 21]);
    assert_eq!(
        db.prove_absence_at(&absent, At::Size(26))
            .unwrap_err()
            .kind(),
        ErrorKind::NotFound
    );
    let Proof::Absence(proof) = db.prove_absence_at(&absent, At::Size(16)).unwrap() else {
        panic!("not an absence proof");
    };
    proof
        .verify(kind.arity, kind.hash, &heads[0], &absent)
        .unwrap();
    // The values rolled back go in again as a new head.
    db.append(&values[20..25]).unwrap().wait(&db, WAIT).unwrap();
    assert_eq!(db.head_at(26).unwrap(), heads[2]);
}

/// The insertion witness of a batch not inserted is the one the insert
/// then returns (two values sharing a low leaf, one above every value),
/// from the durable head it names, and asking for it changes nothing; a
/// held or repeated value is refused as the insert refuses it.
#[test]
fn an_indexed_tree_witnesses_a_batch_before_inserting_it() {
    for kind in [
        tree(4, HashKind::Blake3).with_kind(TreeKind::Indexed),
        tree(2, HashKind::Poseidon).with_kind(TreeKind::Indexed),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(dir.path().join("db"), config_of(kind)).unwrap();
        let word = cairn_core::indexed::index_word;
        let stored: Vec<Hash> = (1..=20).map(|i| word(i * 100)).collect();
        db.append(&stored).unwrap().wait(&db, WAIT).unwrap();
        let batch = [word(150), word(160), word(5000), word(5), word(170)];
        let (head, witness) = db.insertion_witness(&batch).unwrap();
        assert_eq!(head, db.head());
        assert_eq!(db.head(), head_of(&kind, &stored), "nothing inserted");
        let after = witness.verify(kind.arity, kind.hash, &head).unwrap();
        let ack = db.append_witnessed(&batch).unwrap();
        let acked = ack.wait(&db, WAIT).unwrap();
        assert_eq!(acked.witness.as_ref(), Some(&witness));
        assert_eq!(db.head(), after);
        assert_eq!(after, head_of(&kind, &[&stored[..], &batch[..]].concat()));
        match db.insertion_witness(&[word(7), word(300), word(7)]) {
            Err(DbError::Duplicates {
                batch: 3,
                duplicates,
            }) => {
                assert_eq!(duplicates.len(), 2, "{duplicates:?}");
            }
            other => panic!("{other:?}"),
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let lean =
        Database::create(dir.path().join("db"), config_of(tree(2, HashKind::Blake3))).unwrap();
    assert!(matches!(
        lean.insertion_witness(&[[1; 32]]),
        Err(DbError::Unsupported {
            operation: Operation::InsertionWitness,
            ..
        })
    ));
}
