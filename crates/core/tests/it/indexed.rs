//! The indexed tree against the reference model (a sorted list with every
//! leaf and root recomputed), in lockstep over random operation sequences:
//! inserts one by one, in batches, with witnesses, rollbacks and
//! snapshots. Every proof the tree gives must verify against the
//! reference head, and every witness must carry the old head to the new.

use cairn_core::indexed::{
    AbsenceProof, DuplicateOf, IndexedError, IndexedLeaf, IndexedMembershipProof, IndexedSnapshot,
    IndexedTree, IndexedVerifyError, InsertionWitness,
};
use cairn_core::{DecodeError, Hash, HashKind, TreeConfig, TreeHead, VerifyError};
use cairn_testkit::indexed as model;
use proptest::prelude::*;

use crate::support::arity;

fn hash_kind() -> impl Strategy<Value = HashKind> {
    prop_oneof![
        Just(HashKind::Blake3),
        Just(HashKind::Sha256),
        Just(HashKind::Keccak256)
    ]
}

/// A nonzero value from a small domain (so that operations collide with
/// values held), canonical under every hash.
fn value(n: u64) -> Hash {
    let mut v = cairn_testkit::leaf(99, n % 97);
    v[0] &= 0x0f;
    v
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u64),
    Batch(Vec<u64>),
    Witness(Vec<u64>),
    Truncate(u64),
    Snapshot,
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        4 => any::<u64>().prop_map(Op::Insert),
        3 => prop::collection::vec(any::<u64>(), 1..12).prop_map(Op::Batch),
        2 => prop::collection::vec(any::<u64>(), 1..6).prop_map(Op::Witness),
        1 => any::<u64>().prop_map(Op::Truncate),
        1 => Just(Op::Snapshot),
    ];
    prop::collection::vec(op, 1..24)
}

fn reference_head(n: u64, hash: HashKind, values: &[Hash]) -> TreeHead {
    TreeHead::new(values.len() as u64 + 1, model::root(arity(n), hash, values))
}

/// What the model says of a batch: refused (with the first refused
/// position) if a value is held or repeated.
fn refused(values: &[Hash], batch: &[Hash]) -> Option<usize> {
    batch
        .iter()
        .enumerate()
        .find(|(p, v)| values.contains(v) || batch[..*p].contains(v))
        .map(|(p, _)| p)
}

/// Every answer of `tree` about `values` against the model.
fn check_answers(
    n: u64,
    hash: HashKind,
    head: &TreeHead,
    values: &[Hash],
    leaf: impl Fn(u64) -> Option<IndexedLeaf>,
    absence: impl Fn(&Hash) -> Result<AbsenceProof, IndexedError>,
    member: impl Fn(&Hash) -> Result<IndexedMembershipProof, IndexedError>,
) -> Result<(), TestCaseError> {
    let a = arity(n);
    for (index, want) in model::leaves(values).iter().enumerate() {
        prop_assert_eq!(leaf(index as u64), Some(*want));
    }
    prop_assert_eq!(leaf(values.len() as u64 + 1), None);
    for probe in (0..100).map(value) {
        match values.iter().position(|v| *v == probe) {
            Some(position) => {
                let proof = member(&probe).unwrap();
                prop_assert_eq!(proof.index(), position as u64 + 1);
                prop_assert_eq!(proof.verify(a, hash, head, &probe), Ok(()));
                let present = matches!(absence(&probe), Err(IndexedError::Present { index, .. }) if index == position as u64 + 1);
                prop_assert!(present, "absence of a held value");
            }
            None => {
                let proof = absence(&probe).unwrap();
                prop_assert_eq!(proof.low_index(), model::low_index(values, &probe));
                prop_assert_eq!(proof.verify(a, hash, head, &probe), Ok(()));
                prop_assert_eq!(AbsenceProof::decode(&proof.to_bytes()), Ok(proof.clone()));
                prop_assert_eq!(
                    AbsenceProof::decode(proof.to_json().as_bytes()),
                    Ok(proof.clone())
                );
                let absent = matches!(member(&probe), Err(IndexedError::Absent { .. }));
                prop_assert!(absent, "membership of an absent value");
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_operation_agrees_with_the_sorted_list_model(n in 2u64..=16, hash in hash_kind(), ops in ops()) {
        let config = TreeConfig::new(arity(n), hash);
        let mut tree = IndexedTree::new(config);
        let mut values: Vec<Hash> = Vec::new();
        let mut snapshots: Vec<(IndexedSnapshot, Vec<Hash>)> = Vec::new();
        for op in ops {
            let before = tree.head();
            match op {
                Op::Insert(v) => {
                    let v = value(v);
                    match (refused(&values, &[v]), tree.insert(v)) {
                        (None, Ok(index)) => {
                            prop_assert_eq!(index, values.len() as u64 + 1);
                            values.push(v);
                        }
                        (Some(_), Err(IndexedError::Duplicates { duplicates, .. })) => {
                            prop_assert!(matches!(duplicates[0].of, DuplicateOf::Leaf(_)));
                            prop_assert_eq!(tree.head(), before);
                        }
                        (want, got) => prop_assert!(false, "model {want:?}, tree {got:?}"),
                    }
                }
                Op::Batch(batch) | Op::Witness(batch) if refused(&values, &batch.iter().map(|&v| value(v)).collect::<Vec<_>>()).is_some() => {
                    let batch: Vec<Hash> = batch.into_iter().map(value).collect();
                    let position = refused(&values, &batch).unwrap();
                    match tree.insert_batch(&batch) {
                        Err(IndexedError::Duplicates { duplicates, .. }) => prop_assert_eq!(duplicates[0].position, position),
                        other => prop_assert!(false, "{other:?}"),
                    }
                    prop_assert!(tree.insert_with_witness(&batch).is_err());
                    prop_assert_eq!(tree.head(), before);
                }
                Op::Batch(batch) => {
                    let batch: Vec<Hash> = batch.into_iter().map(value).collect();
                    prop_assert_eq!(tree.insert_batch(&batch), Ok(values.len() as u64 + 1));
                    values.extend_from_slice(&batch);
                }
                Op::Witness(batch) => {
                    let batch: Vec<Hash> = batch.into_iter().map(value).collect();
                    let witness = tree.insert_with_witness(&batch).unwrap();
                    values.extend_from_slice(&batch);
                    let after = witness.verify(arity(n), hash, &before).unwrap();
                    prop_assert_eq!(after, reference_head(n, hash, &values));
                    prop_assert_eq!(InsertionWitness::decode(&witness.to_bytes()), Ok(witness.clone()));
                    prop_assert_eq!(InsertionWitness::decode(witness.to_json().as_bytes()), Ok(witness.clone()));
                }
                Op::Truncate(to) => {
                    let to = to % (values.len() as u64 + 1);
                    tree.truncate(to + 1).unwrap();
                    values.truncate(to as usize);
                }
                Op::Snapshot => snapshots.push((tree.snapshot(), values.clone())),
            }
            let head = reference_head(n, hash, &values);
            prop_assert_eq!(tree.head(), head);
        }
        let head = tree.head();
        check_answers(n, hash, &head, &values, |i| tree.leaf(i), |v| tree.prove_absence(v), |v| tree.prove_value(v))?;
        // Snapshots answer as the tree did when they were taken.
        for (snapshot, values) in &snapshots {
            let head = reference_head(n, hash, values);
            prop_assert_eq!(snapshot.head(), head);
            check_answers(n, hash, &head, values, |i| snapshot.leaf(i), |v| snapshot.prove_absence(v), |v| snapshot.prove_value(v))?;
        }
        // A rebuild from the values in order is the same tree.
        let rebuilt = IndexedTree::from_values(config, &values).unwrap();
        prop_assert_eq!(rebuilt.head(), tree.head());
        prop_assert_eq!(rebuilt.sorted_indices().collect::<Vec<_>>(), tree.sorted_indices().collect::<Vec<_>>());
    }
}

fn blake3_tree(n: u64, count: u64) -> (IndexedTree, Vec<Hash>) {
    let values: Vec<Hash> = (0..count).map(|i| cairn_testkit::leaf(5, i)).collect();
    let tree =
        IndexedTree::from_values(TreeConfig::new(arity(n), HashKind::Blake3), &values).unwrap();
    (tree, values)
}

#[test]
fn the_empty_tree_is_the_guard_leaf_alone() {
    for hash in HashKind::ALL {
        let tree = IndexedTree::new(TreeConfig::new(arity(4), hash));
        let guard = model::leaf_hash(hash, &IndexedLeaf::GUARD);
        assert_eq!(tree.head(), TreeHead::new(1, guard), "{hash}");
        let x = value(3);
        let proof = tree.prove_absence(&x).unwrap();
        assert_eq!(proof.low_index(), 0);
        assert_eq!(*proof.low_leaf(), IndexedLeaf::GUARD);
        assert!(proof.siblings().is_empty());
        proof.verify(arity(4), hash, &tree.head(), &x).unwrap();
    }
}

#[test]
fn field_hash_trees_agree_with_the_model_and_refuse_non_canonical_values() {
    for hash in [HashKind::Poseidon, HashKind::MiMCSponge] {
        let values: Vec<Hash> = (0..9).map(value).collect();
        let config = TreeConfig::new(arity(3), hash);
        let mut tree = IndexedTree::new(config);
        tree.insert_batch(&values[..4]).unwrap();
        let before = tree.head();
        let witness = tree.insert_with_witness(&values[4..]).unwrap();
        assert_eq!(
            tree.head(),
            TreeHead::new(10, model::root(arity(3), hash, &values))
        );
        assert_eq!(
            witness.verify(arity(3), hash, &before).unwrap(),
            tree.head()
        );
        let big = [0xff; 32];
        assert!(matches!(
            tree.insert_batch(&[value(50), big]),
            Err(IndexedError::NonCanonical { position: 1, .. })
        ));
        assert!(matches!(
            tree.prove_absence(&big),
            Err(IndexedError::NonCanonical { .. })
        ));
        assert_eq!(tree.head().size, 10);
    }
}

#[test]
fn the_guard_value_is_refused_everywhere() {
    let (mut tree, _) = blake3_tree(4, 10);
    let head = tree.head();
    assert_eq!(
        tree.insert_batch(&[value(1), [0; 32]]),
        Err(IndexedError::GuardValue { position: 1 })
    );
    assert!(matches!(
        tree.prove_absence(&[0; 32]),
        Err(IndexedError::GuardValue { .. })
    ));
    assert_eq!(tree.head(), head);
    assert!(matches!(
        tree.truncate(0),
        Err(IndexedError::TruncateGuard { to: 0 })
    ));
    let guard = tree.prove_index(0).unwrap();
    guard
        .verify(arity(4), HashKind::Blake3, &head, &[0; 32])
        .unwrap();
    // A proof about value 0 is refused by the verifiers.
    let absent = tree.prove_absence(&value(1)).unwrap();
    assert_eq!(
        absent.verify(arity(4), HashKind::Blake3, &head, &[0; 32]),
        Err(IndexedVerifyError::ValueMismatch {
            proof: value(1),
            asked: [0; 32]
        })
    );
}

#[test]
fn duplicates_are_listed_against_the_tree_and_the_batch() {
    let (mut tree, values) = blake3_tree(2, 20);
    let head = tree.head();
    let err = tree
        .insert_batch(&[value(1), values[3], value(2), value(1)])
        .unwrap_err();
    let IndexedError::Duplicates { batch, duplicates } = &err else {
        panic!("{err}")
    };
    assert_eq!(*batch, 4);
    assert_eq!(duplicates.len(), 2);
    assert_eq!(
        (duplicates[0].position, duplicates[0].of),
        (1, DuplicateOf::Leaf(4))
    );
    assert_eq!(
        (duplicates[1].position, duplicates[1].of),
        (3, DuplicateOf::Batch(0))
    );
    assert!(
        err.to_string()
            .contains("2 duplicate values in a batch of 4, nothing inserted"),
        "{err}"
    );
    assert_eq!(tree.head(), head);
}

/// The named forgeries: each mutation of an honest proof must be refused
/// with its reason.
#[test]
fn forged_absence_proofs_are_refused_with_their_reason() {
    let (mut tree, values) = blake3_tree(4, 50);
    let a = arity(4);
    let hash = HashKind::Blake3;
    let head = tree.head();
    let x = value(7);
    let honest = tree.prove_absence(&x).unwrap();
    honest.verify(a, hash, &head, &x).unwrap();
    let mutate = |f: &dyn Fn(&mut serde_json::Value)| -> AbsenceProof {
        let mut doc: serde_json::Value = serde_json::from_str(&honest.to_json()).unwrap();
        f(&mut doc);
        AbsenceProof::from_json(&doc.to_string()).unwrap()
    };
    // Asked about another value.
    let other = value(8);
    assert!(matches!(
        honest.verify(a, hash, &head, &other),
        Err(IndexedVerifyError::ValueMismatch { .. })
    ));
    // The value swapped in the proof for a held one: its low leaf no longer brackets it.
    let held = values[10];
    let swapped = mutate(&|d| d["value"] = cairn_core::hex::to_hex(&held).into());
    assert!(matches!(
        swapped.verify(a, hash, &head, &held),
        Err(IndexedVerifyError::NotBracketed { .. })
    ));
    // The low leaf's next value moved above the value (hiding a held successor).
    let widened =
        mutate(&|d| d["low_leaf"]["next_value"] = cairn_core::hex::to_hex(&[0x7f; 32]).into());
    let e = widened.verify(a, hash, &head, &x).unwrap_err();
    assert!(
        matches!(
            e,
            IndexedVerifyError::Path(VerifyError::RootMismatch { .. })
        ),
        "{e}"
    );
    // The low leaf claimed to be last.
    let last = mutate(&|d| {
        d["low_leaf"]["next_value"] = cairn_core::hex::to_hex(&[0; 32]).into();
        d["low_leaf"]["next_index"] = 0.into();
    });
    assert!(matches!(
        last.verify(a, hash, &head, &x),
        Err(IndexedVerifyError::Path(VerifyError::RootMismatch { .. }))
    ));
    // An impossible pointer.
    let pointer = mutate(&|d| d["low_leaf"]["next_index"] = 51.into());
    assert!(matches!(
        pointer.verify(a, hash, &head, &x),
        Err(IndexedVerifyError::BadPointer { next_index: 51, .. })
    ));
    // A sibling flipped.
    let sibling = mutate(&|d| d["siblings"][0][0] = cairn_core::hex::to_hex(&[1; 32]).into());
    assert!(matches!(
        sibling.verify(a, hash, &head, &x),
        Err(IndexedVerifyError::Path(VerifyError::RootMismatch { .. }))
    ));
    // A low leaf from another size: the proof at 51 leaves against the head at 52.
    tree.insert(value(90)).unwrap();
    let later = tree.head();
    assert_eq!(
        honest.verify(a, hash, &later, &x),
        Err(IndexedVerifyError::Path(VerifyError::SizeMismatch {
            which: "size",
            proof: 51,
            trusted: 52
        }))
    );
    // The size relabelled to match: the path no longer hashes to the root.
    let relabelled = mutate(&|d| d["size"] = 52.into());
    assert!(relabelled.verify(a, hash, &later, &x).is_err());
    // Wrong parameters, and a head that is not an indexed tree's.
    assert!(matches!(
        honest.verify(arity(2), hash, &head, &x),
        Err(IndexedVerifyError::Path(VerifyError::ArityMismatch { .. }))
    ));
    assert!(matches!(
        honest.verify(a, HashKind::Sha256, &head, &x),
        Err(IndexedVerifyError::Path(VerifyError::HashMismatch { .. }))
    ));
    assert_eq!(
        honest.verify(a, hash, &TreeHead::EMPTY, &x),
        Err(IndexedVerifyError::EmptyHead)
    );
}

/// A small value: 31 zero bytes then `n`.
fn small(n: u8) -> Hash {
    let mut v = [0; 32];
    v[31] = n;
    v
}

#[test]
fn the_guard_is_leaf_zero_and_only_leaf_zero_in_every_proof() {
    let a = arity(2);
    let hash = HashKind::Blake3;
    let tree =
        IndexedTree::from_values(TreeConfig::new(a, hash), &[small(10), small(20), small(30)])
            .unwrap();
    let head = tree.head();
    let relabel = |json: String, f: &dyn Fn(&mut serde_json::Value)| -> String {
        let mut doc: serde_json::Value = serde_json::from_str(&json).unwrap();
        f(&mut doc);
        doc.to_string()
    };
    // Absence of 25: its low leaf is 20's (index 2); a value of 0 there is not the guard.
    let x = small(25);
    let honest = tree.prove_absence(&x).unwrap();
    assert_eq!(honest.low_index(), 2);
    honest.verify(a, hash, &head, &x).unwrap();
    let zeroed = relabel(honest.to_json(), &|d| {
        d["low_leaf"]["value"] = cairn_core::hex::to_hex(&[0; 32]).into()
    });
    assert_eq!(
        AbsenceProof::from_json(&zeroed)
            .unwrap()
            .verify(a, hash, &head, &x),
        Err(IndexedVerifyError::GuardIndex {
            index: 2,
            value: [0; 32]
        })
    );
    // Absence of 5: its low leaf is the guard; a nonzero value at index 0 is refused.
    let y = small(5);
    let guard = tree.prove_absence(&y).unwrap();
    assert_eq!(guard.low_index(), 0);
    let moved = relabel(guard.to_json(), &|d| {
        d["low_leaf"]["value"] = cairn_core::hex::to_hex(&small(1)).into()
    });
    assert_eq!(
        AbsenceProof::from_json(&moved)
            .unwrap()
            .verify(a, hash, &head, &y),
        Err(IndexedVerifyError::GuardIndex {
            index: 0,
            value: small(1)
        })
    );
    // Membership of 0 claimed at index 2.
    let member = tree.prove_value(&small(20)).unwrap();
    let claimed = relabel(member.to_json(), &|d| {
        d["leaf"]["value"] = cairn_core::hex::to_hex(&[0; 32]).into()
    });
    assert_eq!(
        IndexedMembershipProof::from_json(&claimed)
            .unwrap()
            .verify(a, hash, &head, &[0; 32]),
        Err(IndexedVerifyError::GuardIndex {
            index: 2,
            value: [0; 32]
        })
    );
}

#[test]
fn a_witness_of_no_insertion_is_refused() {
    let (mut tree, _) = blake3_tree(2, 5);
    let before = tree.head();
    let witness = tree.insert_with_witness(&[value(1)]).unwrap();
    let mut doc: serde_json::Value = serde_json::from_str(&witness.to_json()).unwrap();
    doc["insertions"] = serde_json::Value::Array(Vec::new());
    let empty = InsertionWitness::from_json(&doc.to_string()).unwrap();
    assert_eq!(
        empty.verify(arity(2), HashKind::Blake3, &before),
        Err(IndexedVerifyError::EmptyWitness)
    );
    // The same in the binary encoding: the header and a count of 0.
    let decoded = InsertionWitness::from_bytes(&empty.to_bytes()).unwrap();
    assert_eq!(
        decoded.verify(arity(2), HashKind::Blake3, &before),
        Err(IndexedVerifyError::EmptyWitness)
    );
}

#[test]
fn forged_insertion_witnesses_are_refused_at_the_step_they_break() {
    let (mut tree, _) = blake3_tree(3, 30);
    let a = arity(3);
    let hash = HashKind::Blake3;
    let before = tree.head();
    // Values whose low leaves are inside the batch: each follows the last.
    let mut batch: Vec<Hash> = (0..4)
        .map(|k| {
            let mut v = [0x7f; 32];
            v[31] = k;
            v
        })
        .collect();
    batch.push(value(3));
    let witness = tree.insert_with_witness(&batch).unwrap();
    // Pending low leaves: insertions 1..=3 have the previous one as low leaf.
    for j in 1..4 {
        assert_eq!(witness.steps()[j].low_index, before.size + j as u64 - 1);
    }
    assert_eq!(witness.verify(a, hash, &before).unwrap(), tree.head());
    let mutate = |f: &dyn Fn(&mut serde_json::Value)| -> InsertionWitness {
        let mut doc: serde_json::Value = serde_json::from_str(&witness.to_json()).unwrap();
        f(&mut doc);
        InsertionWitness::from_json(&doc.to_string()).unwrap()
    };
    let step = |e: IndexedVerifyError| match e {
        IndexedVerifyError::Step { step, reason } => (step, *reason),
        other => panic!("not a step error: {other}"),
    };
    // A value already in the tree, inserted again.
    let again = mutate(&|d| d["insertions"][2]["value"] = d["insertions"][1]["value"].clone());
    let (j, reason) = step(again.verify(a, hash, &before).unwrap_err());
    assert_eq!(j, 2);
    assert!(
        matches!(reason, IndexedVerifyError::NotBracketed { .. }),
        "{reason}"
    );
    // The new leaf's path tampered with.
    let path = mutate(&|d| {
        d["insertions"][4]["new_siblings"][0][0] = cairn_core::hex::to_hex(&[3; 32]).into()
    });
    let (j, reason) = step(path.verify(a, hash, &before).unwrap_err());
    assert_eq!(j, 4);
    assert!(
        matches!(
            reason,
            IndexedVerifyError::Path(VerifyError::RootMismatch { .. })
        ),
        "{reason}"
    );
    // Against another old head.
    assert!(matches!(
        witness.verify(a, hash, &tree.head()),
        Err(IndexedVerifyError::Path(VerifyError::SizeMismatch { .. }))
    ));
    let mut wrong_root = before;
    wrong_root.root = Some([9; 32]);
    let (j, _) = step(witness.verify(a, hash, &wrong_root).unwrap_err());
    assert_eq!(j, 0);
}

#[test]
fn decoders_refuse_wrong_kinds_lengths_and_fields() {
    let (tree, values) = blake3_tree(4, 40);
    let absence = tree.prove_absence(&value(5)).unwrap();
    let member = tree.prove_value(&values[7]).unwrap();
    // Each kind's bytes refused as the others', naming the kind.
    assert!(matches!(
        IndexedMembershipProof::from_bytes(&absence.to_bytes()),
        Err(DecodeError::WrongKind { .. })
    ));
    let e = cairn_core::MembershipProof::from_bytes(&member.to_bytes()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "proof kind is indexed_membership, want membership"
    );
    assert!(matches!(
        AbsenceProof::from_json(&member.to_json()),
        Err(DecodeError::WrongKind { .. })
    ));
    // Trailing and missing bytes.
    let mut long = absence.to_bytes();
    long.push(0);
    assert!(matches!(
        AbsenceProof::from_bytes(&long),
        Err(DecodeError::WrongLength { .. })
    ));
    let bytes = member.to_bytes();
    assert!(matches!(
        IndexedMembershipProof::from_bytes(&bytes[..bytes.len() - 1]),
        Err(DecodeError::WrongLength { .. })
    ));
    // Unknown JSON fields.
    let mut doc: serde_json::Value = serde_json::from_str(&absence.to_json()).unwrap();
    doc["extra"] = 1.into();
    assert!(matches!(
        AbsenceProof::from_json(&doc.to_string()),
        Err(DecodeError::Json(_))
    ));
    // A witness claiming more insertions than its bytes hold.
    let mut t = IndexedTree::new(TreeConfig::new(arity(4), HashKind::Blake3));
    let witness = t.insert_with_witness(&[value(1), value(2)]).unwrap();
    let mut bytes = witness.to_bytes();
    bytes[19] = 200;
    assert!(matches!(
        InsertionWitness::from_bytes(&bytes),
        Err(DecodeError::WrongLength { .. })
    ));
    for cut in 0..witness.to_bytes().len() {
        assert!(
            InsertionWitness::from_bytes(&witness.to_bytes()[..cut]).is_err(),
            "cut at {cut}"
        );
    }
    assert_eq!(
        cairn_core::indexed::proof_kind(&witness.to_bytes()),
        Some("insertion")
    );
    assert_eq!(
        cairn_core::indexed::proof_kind(absence.to_json().as_bytes()),
        Some("absence")
    );
    // One flipped bit turned an imt's membership proof (version 2, kind
    // byte 1) into kind 3 or 5: it was dispatched as an indexed proof, which
    // is version 1 only, instead of being refused as a malformed proof.
    let imt = TreeConfig::new(arity(2), HashKind::Blake3).with_kind(cairn_core::TreeKind::Fixed {
        depth: 4,
        zero: [0; 32],
    });
    let mut proof = cairn_core::LeanImt::from_leaves(imt, &[value(1), value(2)])
        .unwrap()
        .prove(1)
        .unwrap()
        .to_bytes();
    assert_eq!(cairn_core::indexed::proof_kind(&proof), Some("membership"));
    for flipped in [3, 5] {
        proof[1] = flipped;
        assert_eq!(
            cairn_core::indexed::proof_kind(&proof),
            None,
            "kind {flipped}"
        );
    }
}

#[test]
fn binary_sizes_follow_the_layout() {
    for n in [2u64, 4, 16] {
        let (tree, values) = blake3_tree(n, 1000);
        let absence = tree.prove_absence(&value(1)).unwrap();
        assert_eq!(
            absence.to_bytes().len(),
            124 + 32 * absence.siblings().len()
        );
        let member = tree.prove_value(&values[0]).unwrap();
        assert_eq!(member.to_bytes().len(), 92 + 32 * member.siblings().len());
    }
}

/// At a size where the sorted index splits chunks and the levels span
/// several segments: batches, single inserts, witnesses and rollbacks
/// against a rebuild from the values (sort and hash everything), with
/// snapshots taken along the way that must keep their answers.
#[test]
fn large_trees_with_snapshots_agree_with_a_rebuild() {
    let count = 70_000u64;
    let all: Vec<Hash> = (0..count).map(|i| cairn_testkit::leaf(11, i)).collect();
    let config = TreeConfig::new(arity(4), HashKind::Blake3);
    let mut tree = IndexedTree::new(config);
    let mut values: Vec<Hash> = Vec::new();
    let mut snapshots = Vec::new();
    let mut at = 0usize;
    let mut round = 0;
    while at < all.len() {
        let take = [20_000usize, 1, 3_000, 7][round % 4].min(all.len() - at);
        let batch = &all[at..at + take];
        match round % 3 {
            0 => {
                tree.insert_batch(batch).unwrap();
            }
            1 if take <= 50 => {
                let before = tree.head();
                let witness = tree.insert_with_witness(batch).unwrap();
                assert_eq!(
                    witness.verify(config.arity, config.hash, &before).unwrap(),
                    tree.head()
                );
            }
            _ => {
                for value in batch {
                    tree.insert(*value).unwrap();
                }
            }
        }
        values.extend_from_slice(batch);
        at += take;
        if round % 2 == 0 {
            snapshots.push((tree.snapshot(), values.len()));
        }
        if round == 6 {
            // Roll back half of the last batch and insert it again.
            let keep = values.len() - take / 2;
            tree.truncate(keep as u64 + 1).unwrap();
            values.truncate(keep);
            assert_eq!(
                tree.head(),
                IndexedTree::from_values(config, &values).unwrap().head()
            );
            tree.insert_batch(&all[keep..at]).unwrap();
            values.extend_from_slice(&all[keep..at]);
        }
        round += 1;
    }
    assert_eq!(
        tree.head(),
        IndexedTree::from_values(config, &values).unwrap().head()
    );
    for (snapshot, len) in &snapshots {
        let rebuilt = IndexedTree::from_values(config, &values[..*len]).unwrap();
        assert_eq!(snapshot.head(), rebuilt.head());
        for probe in [values[0], values[len / 2], values[len - 1]] {
            let proof = snapshot.prove_value(&probe).unwrap();
            assert_eq!(proof, rebuilt.prove_value(&probe).unwrap());
            proof
                .verify(config.arity, config.hash, &snapshot.head(), &probe)
                .unwrap();
        }
        let absent = cairn_testkit::leaf(12, *len as u64);
        let proof = snapshot.prove_absence(&absent).unwrap();
        assert_eq!(proof, rebuilt.prove_absence(&absent).unwrap());
    }
}

#[test]
fn small_trees_agree_with_the_model_for_every_arity() {
    let values: Vec<Hash> = (0..300).map(|i| cairn_testkit::leaf(13, i)).collect();
    for n in 2..=16u64 {
        let tree =
            IndexedTree::from_values(TreeConfig::new(arity(n), HashKind::Sha256), &values).unwrap();
        assert_eq!(
            tree.head(),
            reference_head(n, HashKind::Sha256, &values),
            "N = {n}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Large batches take the merge path (the batch sorted and merged into
    /// the order chunk by chunk); they must refuse exactly what
    /// `check_values` refuses, list the same duplicates, and otherwise
    /// build the tree a rebuild builds.
    #[test]
    fn merged_batches_agree_with_the_per_value_checks_and_a_rebuild(
        n in prop_oneof![Just(2u64), Just(4), Just(16)],
        batches in prop::collection::vec(prop::collection::vec(0u64..3000, 64..400), 1..6),
    ) {
        let config = TreeConfig::new(arity(n), HashKind::Blake3);
        let mut tree = IndexedTree::new(config);
        let mut values: Vec<Hash> = Vec::new();
        let at = |k: u64| cairn_testkit::leaf(21, k);
        for batch in batches {
            let batch: Vec<Hash> = batch.into_iter().map(at).collect();
            let want = tree.check_values(&batch);
            let present: Vec<(usize, u64)> = batch
                .iter()
                .enumerate()
                .filter_map(|(p, v)| tree.index_of(v).map(|i| (p, i)))
                .collect();
            prop_assert_eq!(tree.present(&batch), present);
            let before = tree.head();
            match (want, tree.insert_batch(&batch)) {
                (Ok(()), Ok(first)) => {
                    prop_assert_eq!(first, values.len() as u64 + 1);
                    values.extend_from_slice(&batch);
                }
                (Err(want), Err(got)) => {
                    prop_assert_eq!(got, want);
                    prop_assert_eq!(tree.head(), before);
                }
                (want, got) => prop_assert!(false, "check_values {want:?}, insert_batch {got:?}"),
            }
            // Distinct values of the same batch go in too.
            let mut fresh: Vec<Hash> = Vec::new();
            for v in &batch {
                if tree.index_of(v).is_none() && !fresh.contains(v) {
                    fresh.push(*v);
                }
            }
            if fresh.len() >= 64 {
                tree.insert_batch(&fresh).unwrap();
                values.extend_from_slice(&fresh);
            }
            prop_assert_eq!(tree.head(), IndexedTree::from_values(config, &values).unwrap().head());
        }
        for (index, leaf) in cairn_testkit::indexed::leaves(&values).iter().enumerate().step_by(7) {
            prop_assert_eq!(tree.leaf(index as u64), Some(*leaf));
        }
    }
}

/// The plain proofs of an indexed tree's leaf hashes: version 2 with tree
/// kind 2 in both encodings, one encoding only, Lean-shaped, refused
/// against another kind; no consistency proof of an indexed tree verifies.
#[test]
fn plain_proofs_of_an_indexed_tree_name_their_kind() {
    use cairn_core::{ConsistencyProof, MembershipProof, TreeKind};
    let config = TreeConfig::new(arity(3), HashKind::Blake3);
    let values: Vec<Hash> = (1..=20u8).map(|i| [i; 32]).collect();
    let indexed = IndexedTree::from_values(config, &values).unwrap();
    assert_eq!(indexed.config().kind, TreeKind::Indexed);
    // The same leaf hashes in a Lean tree: the shape is the Lean one.
    let indexed_config = config.with_kind(TreeKind::Indexed);
    let mut plain = cairn_core::LeanImt::new(indexed_config);
    let mut lean = cairn_core::LeanImt::new(config);
    let leaves: Vec<Hash> = (0..indexed.size()).map(|i| [i as u8 + 100; 32]).collect();
    plain.append_batch(&leaves).unwrap();
    lean.append_batch(&leaves).unwrap();
    assert_eq!(plain.root(), lean.root());
    let head = plain.head();
    let proof = plain.prove(7).unwrap();
    proof.verify_with(&indexed_config, &head).unwrap();
    let bytes = proof.to_bytes();
    assert_eq!((bytes[0], bytes[4], bytes[5]), (2, 2, 0));
    assert_eq!(bytes[6..38], [0; 32]);
    assert_eq!(MembershipProof::from_bytes(&bytes).unwrap(), proof);
    let json = proof.to_json();
    assert!(
        json.contains("\"tree\": {\n    \"kind\": \"indexed\"\n  }"),
        "{json}"
    );
    assert_eq!(MembershipProof::from_json(&json).unwrap(), proof);
    // A Lean proof of the same leaf is refused against the indexed tree and
    // the reverse: the kind is part of what a verifier trusts.
    let lean_proof = lean.prove(7).unwrap();
    assert!(lean_proof.verify_with(&indexed_config, &head).is_err());
    assert!(proof.verify_with(&config, &lean.head()).is_err());
    // A depth byte or zero value under kind 2 would not re-encode: refused.
    for at in [5, 6, 37] {
        let mut bad = bytes.clone();
        bad[at] = 1;
        assert!(
            matches!(
                MembershipProof::from_bytes(&bad),
                Err(DecodeError::TreeKind(_))
            ),
            "byte {at}"
        );
    }
    let with_depth = json.replace(
        "\"kind\": \"indexed\"",
        "\"kind\": \"indexed\",\n    \"depth\": 3",
    );
    assert!(matches!(
        MembershipProof::from_json(&with_depth),
        Err(DecodeError::TreeKind(_))
    ));
    // Consistency: an indexed tree is not append-only.
    let old = plain.view(5).unwrap().head();
    let consistency = plain.prove_consistency(5, plain.size()).unwrap();
    let decoded = ConsistencyProof::from_bytes(&consistency.to_bytes()).unwrap();
    assert!(matches!(
        decoded.verify_with(&indexed_config, &old, &head),
        Err(VerifyError::NotAppendOnly { kind: "indexed" })
    ));
}
