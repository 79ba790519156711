//! The fixed-depth tree kind against the reference (the full zero-padded
//! tree built from its definition): roots and nodes at every size, proofs of
//! every leaf at every size, consistency between every pair of sizes,
//! roll-forward, proofs from nodes, rollback, rebuilding from levels, and the
//! verifiers refusing a proof of another kind, depth or zero value.

use cairn_core::{
    Arity, ConsistencyProof, DecodeError, Hash, HashKind, LeanImt, MembershipProof, TreeConfig,
    TreeError, TreeHead, TreeKind, VerifyError,
};
use cairn_testkit::reference;
use proptest::prelude::*;

use crate::support::arity;

fn fixed(n: u64, hash: HashKind, depth: u32, zero: Hash) -> TreeConfig {
    TreeConfig::new(arity(n), hash).with_kind(TreeKind::Fixed { depth, zero })
}

/// A zero value that is not all zeros, canonical under every hash.
const ZERO: Hash = {
    let mut zero = [0x11; 32];
    zero[0] = 0x01;
    zero
};

/// The shapes every exhaustive test runs: arity and depth with N^D small.
const SHAPES: [(u64, u32); 6] = [(2, 1), (2, 4), (3, 3), (4, 2), (5, 2), (16, 1)];

fn reference_head(config: &TreeConfig, leaves: &[Hash], size: u64) -> TreeHead {
    let TreeKind::Fixed { depth, zero } = config.kind else {
        unreachable!("fixed configs only")
    };
    TreeHead {
        size,
        root: Some(reference::fixed_root(
            config.arity,
            config.hash,
            depth,
            zero,
            &leaves[..size as usize],
        )),
    }
}

#[test]
fn every_node_at_every_size_equals_the_full_padded_tree() {
    for hash in [HashKind::Blake3, HashKind::Keccak256] {
        for (n, depth) in SHAPES {
            let config = fixed(n, hash, depth, ZERO);
            let capacity = config.capacity().unwrap();
            let leaves = cairn_testkit::leaves(n, capacity as usize);
            let mut grown = LeanImt::new(config);
            assert_eq!(grown.head(), reference_head(&config, &leaves, 0));
            assert_eq!(grown.head(), config.empty_head());
            for size in 1..=capacity {
                grown.append(leaves[size as usize - 1]).unwrap();
                let prefix = &leaves[..size as usize];
                let full = reference::fixed_levels(config.arity, hash, depth, ZERO, prefix);
                let mut built = LeanImt::from_leaves(config, prefix).unwrap();
                let context = format!("{hash} N = {n} D = {depth} size {size}");
                // The reference's two forms of the definition agree.
                assert_eq!(
                    reference::fixed_root(config.arity, hash, depth, ZERO, prefix),
                    full[depth as usize][0],
                    "{context}"
                );
                assert_eq!(built.depth(), depth, "{context}");
                assert_eq!(grown.head(), built.head(), "{context}");
                assert_eq!(built.root(), Some(full[depth as usize][0]), "{context}");
                for (level, nodes) in full.iter().enumerate() {
                    let len = cairn_core::shape::level_len(size, config.arity, level as u32);
                    for index in 0..len {
                        assert_eq!(
                            built.node(level as u32, index),
                            Some(nodes[index as usize]),
                            "{context} node ({level}, {index})"
                        );
                    }
                    assert_eq!(built.node(level as u32, len), None, "{context}");
                }
            }
            // Full means full: one more leaf is refused and changes nothing.
            let before = grown.head();
            let err = grown.append(leaves[0]).unwrap_err();
            assert!(
                matches!(err, TreeError::CapacityExceeded { capacity: c, .. } if c == capacity),
                "{err}"
            );
            assert_eq!(grown.head(), before);
        }
    }
}

#[test]
fn the_empty_tree_root_is_the_top_zero_and_views_at_size_zero_say_so() {
    let config = fixed(2, HashKind::Poseidon, 3, [0; 32]);
    let zeros = config.kind.zeros(config.arity, config.hash);
    let mut tree = LeanImt::new(config);
    assert_eq!(tree.root(), Some(zeros[3]));
    assert_eq!(tree.depth(), 3);
    let leaves = cairn_testkit::leaves(1, 5);
    tree.append_batch(&leaves).unwrap();
    assert_eq!(tree.at_size(0).unwrap().root(), Some(zeros[3]));
    assert_eq!(tree.snapshot().view(0).unwrap().head(), config.empty_head());
    tree.truncate(0).unwrap();
    assert_eq!(tree.head(), config.empty_head());
    assert_eq!(LeanImt::new(config).snapshot().root(), Some(zeros[3]));
}

#[test]
fn every_proof_of_every_leaf_at_every_size_verifies_and_matches_the_reference() {
    for (n, depth) in SHAPES {
        let config = fixed(n, HashKind::Sha256, depth, ZERO);
        let capacity = config.capacity().unwrap() as usize;
        let leaves = cairn_testkit::leaves(3, capacity);
        let mut tree = LeanImt::from_leaves(config, &leaves).unwrap();
        for size in 1..=capacity as u64 {
            let trusted = reference_head(&config, &leaves, size);
            let view = tree.at_size(size).unwrap();
            assert_eq!(view.head(), trusted);
            for index in 0..size {
                let proof = view.prove(index).unwrap();
                let context = format!("N = {n} D = {depth} leaf {index} of {size}");
                assert_eq!(proof.verify_with(&config, &trusted), Ok(()), "{context}");
                assert_eq!(proof.kind(), config.kind);
                // The proof carries the members that exist; the reference's
                // full groups hold them first, then the padding.
                let full = reference::fixed_membership_siblings(
                    config.arity,
                    config.hash,
                    depth,
                    ZERO,
                    &leaves[..size as usize],
                    index as usize,
                );
                let levels: Vec<_> = proof.levels().collect();
                assert_eq!(levels.len(), depth as usize, "{context}");
                for ((step, siblings), (position, want)) in levels.iter().zip(&full) {
                    assert_eq!(step.position, *position, "{context}");
                    assert_eq!(*siblings, &want[..siblings.len()], "{context}");
                }
                let read = |level: u32, at: u64| Ok::<Hash, ()>(view.node(level, at));
                assert_eq!(
                    MembershipProof::from_nodes(config, index, size, read),
                    Ok(proof.clone())
                );
                assert_eq!(
                    MembershipProof::from_bytes(&proof.to_bytes()),
                    Ok(proof.clone())
                );
                assert_eq!(
                    MembershipProof::from_json(&proof.to_json()),
                    Ok(proof.clone())
                );
            }
        }
    }
}

#[test]
fn consistency_between_every_pair_of_sizes_verifies_and_rolls_proofs_forward() {
    for (n, depth) in [(2u64, 4u32), (3, 2), (4, 2), (5, 2)] {
        let config = fixed(n, HashKind::Blake3, depth, ZERO);
        let capacity = config.capacity().unwrap();
        let leaves = cairn_testkit::leaves(5, capacity as usize);
        let tree = LeanImt::from_leaves(config, &leaves).unwrap();
        for new_size in 0..=capacity {
            let new = reference_head(&config, &leaves, new_size);
            let view = tree.view(new_size).unwrap();
            let read = |level: u32, at: u64| Ok::<Hash, ()>(view.node(level, at));
            for old_size in 0..=new_size {
                let old = reference_head(&config, &leaves, old_size);
                let proof = view.prove_consistency(old_size).unwrap();
                let context = format!("N = {n} D = {depth} {old_size} -> {new_size}");
                assert_eq!(proof.verify_with(&config, &old, &new), Ok(()), "{context}");
                assert_eq!(
                    ConsistencyProof::from_nodes(config, old_size, new_size, read),
                    Ok(proof.clone())
                );
                assert_eq!(
                    ConsistencyProof::decode(&proof.to_bytes()),
                    Ok(proof.clone())
                );
                assert_eq!(
                    ConsistencyProof::decode(proof.to_json().as_bytes()),
                    Ok(proof.clone())
                );
                // Swapped or altered roots are refused.
                if old.root != new.root {
                    assert!(proof.verify_with(&config, &new, &old).is_err());
                }
                let forged = TreeHead {
                    root: Some([7; 32]),
                    ..new
                };
                assert!(proof.verify_with(&config, &old, &forged).is_err() || old_size == 0);
                let forged_old = TreeHead {
                    root: Some([7; 32]),
                    ..old
                };
                assert!(
                    proof.verify_with(&config, &forged_old, &new).is_err(),
                    "{context}"
                );
                for index in 0..old_size {
                    let old_proof = tree.view(old_size).unwrap().prove(index).unwrap();
                    let rolled = proof
                        .roll_forward_with(&old_proof, &config, &old, &new)
                        .unwrap_or_else(|e| panic!("{context} leaf {index}: {e}"));
                    assert_eq!(rolled, view.prove(index).unwrap(), "{context}");
                }
            }
        }
    }
}

#[test]
fn truncating_to_every_size_equals_a_tree_built_to_that_size() {
    for (n, depth) in [(2u64, 4u32), (3, 3), (5, 2)] {
        let config = fixed(n, HashKind::Blake3, depth, ZERO);
        let capacity = config.capacity().unwrap();
        let leaves = cairn_testkit::leaves(9, capacity as usize);
        for size in 0..=capacity {
            for commit in [true, false] {
                let mut tree = LeanImt::from_leaves(config, &leaves).unwrap();
                let snapshot = tree.snapshot();
                if !commit {
                    tree.truncate(capacity - 1).unwrap();
                    tree.append(leaves[capacity as usize - 1]).unwrap();
                }
                tree.truncate(size).unwrap();
                let mut fresh = LeanImt::from_leaves(config, &leaves[..size as usize]).unwrap();
                assert_eq!(tree.head(), fresh.head(), "N = {n} size {size}");
                if size < capacity {
                    tree.append(leaves[size as usize]).unwrap();
                    fresh.append(leaves[size as usize]).unwrap();
                    assert_eq!(tree.head(), fresh.head(), "N = {n} size {size} + 1");
                }
                assert_eq!(snapshot.head(), reference_head(&config, &leaves, capacity));
            }
        }
    }
}

#[test]
fn from_levels_rebuilds_a_fixed_tree_and_first_mismatch_finds_a_bad_edge() {
    let config = fixed(3, HashKind::Blake3, 5, ZERO);
    let leaves = cairn_testkit::leaves(2, 40);
    let mut tree = LeanImt::from_leaves(config, &leaves).unwrap();
    let levels = tree.levels().to_vec();
    assert_eq!(levels.len(), 6);
    let mut rebuilt = LeanImt::from_levels(config, levels.clone()).unwrap();
    assert_eq!(rebuilt.head(), tree.head());
    assert_eq!(rebuilt.first_mismatch(), None);
    // The levels of a Lean tree (fewer, with lifted edges) are not a fixed tree.
    let lean = LeanImt::from_leaves(TreeConfig::new(arity(3), HashKind::Blake3), &leaves).unwrap();
    assert!(matches!(
        LeanImt::from_levels(config, lean.levels().to_vec()),
        Err(TreeError::LevelShape { .. })
    ));
    // Same shape, different edge: the lone padded node at the top levels.
    let mut bad = levels.clone();
    let mut top: Vec<Hash> = bad[4].iter().copied().collect();
    top[0][0] ^= 1;
    bad[4] = cairn_core::level::Level::default();
    bad[4].extend_from_slice(&top);
    let corrupt = LeanImt::from_levels(config, bad).unwrap();
    assert_eq!(corrupt.first_mismatch(), Some((4, 0)));
    // An empty fixed tree is one empty level.
    let empty = LeanImt::from_levels(config, vec![]).unwrap();
    assert!(empty.is_empty());
}

#[test]
fn configurations_that_are_not_trees_are_refused() {
    let poseidon = |zero| fixed(2, HashKind::Poseidon, 20, zero);
    assert!(matches!(
        LeanImt::try_new(poseidon([0xff; 32])),
        Err(TreeError::Kind(cairn_core::KindError::Zero { .. }))
    ));
    assert!(LeanImt::try_new(fixed(2, HashKind::Blake3, 0, ZERO)).is_err());
    assert!(LeanImt::try_new(fixed(2, HashKind::Blake3, 65, ZERO)).is_err());
    assert!(LeanImt::try_new(fixed(2, HashKind::Blake3, 64, ZERO)).is_ok());
    assert!(LeanImt::try_new(fixed(2, HashKind::Blake3, 3, ZERO).with_max_depth(3)).is_err());
    assert!(LeanImt::from_leaves(poseidon([0xff; 32]), &[]).is_err());
    // The deepest trees: capacity beyond u64 at N = 16, D = 64.
    let deep = fixed(16, HashKind::Blake3, 64, ZERO);
    assert_eq!(deep.capacity(), None);
    let mut tree = LeanImt::from_leaves(deep, &cairn_testkit::leaves(1, 20)).unwrap();
    let proof = tree.prove(19).unwrap();
    assert_eq!(proof.levels().count(), 64);
    proof.verify_with(&deep, &tree.head()).unwrap();
    MembershipProof::from_bytes(&proof.to_bytes()).unwrap();
}

#[test]
fn verifiers_refuse_a_proof_of_another_kind_depth_or_zero() {
    let leaves = cairn_testkit::leaves(4, 6);
    let config = fixed(2, HashKind::Keccak256, 3, ZERO);
    let lean_config = TreeConfig::new(arity(2), HashKind::Keccak256);
    let mut tree = LeanImt::from_leaves(config, &leaves).unwrap();
    let mut lean = LeanImt::from_leaves(lean_config, &leaves).unwrap();
    let (head, lean_head) = (tree.head(), lean.head());
    let proof = tree.prove(5).unwrap();
    let lean_proof = lean.prove(5).unwrap();
    let kind_mismatch =
        |result: Result<(), VerifyError>| matches!(result, Err(VerifyError::KindMismatch { .. }));
    // The Lean verifier refuses a fixed proof by name, and the reverse.
    let err = proof
        .verify(arity(2), HashKind::Keccak256, &head)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "proof is for a tree of kind imt of depth 3 and zero {}, the trusted tree is lean",
            cairn_core::hex::to_hex(&ZERO)
        )
    );
    assert!(kind_mismatch(lean_proof.verify_with(&config, &head)));
    assert!(kind_mismatch(proof.verify_with(&lean_config, &lean_head)));
    // Another depth or zero value is another tree.
    for other in [
        fixed(2, HashKind::Keccak256, 4, ZERO),
        fixed(2, HashKind::Keccak256, 3, [0; 32]),
    ] {
        assert!(kind_mismatch(proof.verify_with(&other, &head)));
    }
    let consistency = tree.prove_consistency(2, 6).unwrap();
    let old = tree.at_size(2).unwrap().head();
    assert!(consistency.verify_with(&config, &old, &head).is_ok());
    assert!(matches!(
        consistency.verify(arity(2), HashKind::Keccak256, &old, &head),
        Err(VerifyError::KindMismatch { .. })
    ));
    // A fixed tree's head always has a root, at size 0 too, and it must be zeros[D].
    let empty = config.empty_head();
    let from_zero = tree.prove_consistency(0, 6).unwrap();
    assert_eq!(from_zero.verify_with(&config, &empty, &head), Ok(()));
    assert!(matches!(
        from_zero.verify_with(&config, &TreeHead::EMPTY, &head),
        Err(VerifyError::InconsistentHead { .. })
    ));
    let wrong_empty = TreeHead {
        size: 0,
        root: Some(ZERO),
    };
    assert!(matches!(
        from_zero.verify_with(&config, &wrong_empty, &head),
        Err(VerifyError::RootMismatch {
            which: "old root",
            ..
        })
    ));
    let no_root = TreeHead {
        size: 6,
        root: None,
    };
    assert!(matches!(
        proof.verify_with(&config, &no_root),
        Err(VerifyError::InconsistentHead { .. })
    ));
}

#[test]
fn encodings_name_the_tree_and_refuse_malformed_trees() {
    let config = fixed(4, HashKind::Blake3, 3, ZERO);
    let leaves = cairn_testkit::leaves(6, 30);
    let mut tree = LeanImt::from_leaves(config, &leaves).unwrap();
    let proof = tree.prove(29).unwrap();
    let bytes = proof.to_bytes();
    assert_eq!(bytes[0], 2, "a fixed tree's proof is version 2");
    assert_eq!(&bytes[4..6], &[1, 3], "tree kind 1 (imt), depth 3");
    assert_eq!(&bytes[6..38], &ZERO);
    assert_eq!(bytes.len(), 54 + 32 * (1 + proof.siblings().len()));
    let json: serde_json::Value = serde_json::from_str(&proof.to_json()).unwrap();
    assert_eq!(json["version"], 2);
    assert_eq!(
        json["tree"],
        serde_json::json!({"kind": "imt", "depth": 3, "zero": cairn_core::hex::to_hex(&ZERO)})
    );
    // Another tree kind byte, depth 0 or a size beyond N^D is refused.
    let with = |at: usize, value: u8| {
        let mut b = bytes.clone();
        b[at] = value;
        MembershipProof::from_bytes(&b)
    };
    assert!(matches!(with(4, 0), Err(DecodeError::TreeKind(_))));
    assert!(matches!(with(4, 2), Err(DecodeError::TreeKind(_))));
    assert!(matches!(with(5, 0), Err(DecodeError::TreeKind(_))));
    assert!(matches!(with(5, 65), Err(DecodeError::TreeKind(_))));
    let mut beyond = bytes.clone();
    beyond[46..54].copy_from_slice(&65u64.to_be_bytes());
    assert_eq!(
        MembershipProof::from_bytes(&beyond),
        Err(DecodeError::BeyondCapacity {
            size: 65,
            capacity: 64,
            arity: 4,
            depth: 3
        })
    );
    assert!(matches!(
        with(0, 3),
        Err(DecodeError::UnsupportedVersion { .. })
    ));
    // Version 1 is a Lean tree: no tree field; version 2 needs one.
    let text = proof.to_json();
    let v1 = text.replacen("\"version\": 2", "\"version\": 1", 1);
    assert!(matches!(
        MembershipProof::from_json(&v1),
        Err(DecodeError::TreeKind(_))
    ));
    let lean_json = LeanImt::from_leaves(TreeConfig::new(arity(4), HashKind::Blake3), &leaves)
        .unwrap()
        .prove(29)
        .unwrap()
        .to_json();
    let v2 = lean_json.replacen("\"version\": 1", "\"version\": 2", 1);
    assert!(matches!(
        MembershipProof::from_json(&v2),
        Err(DecodeError::TreeKind(_))
    ));
    let other_kind = text.replacen("\"kind\": \"imt\"", "\"kind\": \"indexed\"", 1);
    assert!(matches!(
        MembershipProof::from_json(&other_kind),
        Err(DecodeError::TreeKind(_))
    ));
    // A Poseidon tree's zero value must be canonical in a proof too.
    let poseidon = fixed(2, HashKind::Poseidon, 2, [0; 32]);
    let mut p = LeanImt::from_leaves(poseidon, &leaves[..3]).unwrap();
    let mut b = p.prove(0).unwrap().to_bytes();
    b[6..38].copy_from_slice(&[0xff; 32]);
    assert!(matches!(
        MembershipProof::from_bytes(&b),
        Err(DecodeError::TreeKind(_))
    ));
}

fn depth_for(n: u64) -> u32 {
    match n {
        2 => 7,
        3 => 4,
        4 | 5 => 3,
        _ => 2,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_appends_keep_every_root_equal_to_the_reference(
        n in 2u64..=16,
        batches in prop::collection::vec(prop_oneof![3 => Just(1usize), 2 => 2usize..30], 1..10),
        zero in any::<[u8; 32]>(),
        seed in any::<u64>(),
    ) {
        let depth = depth_for(n);
        let config = fixed(n, HashKind::Blake3, depth, zero);
        let capacity = config.capacity().unwrap() as usize;
        let mut tree = LeanImt::new(config);
        let mut all: Vec<Hash> = Vec::new();
        for count in batches {
            let count = count.min(capacity - all.len());
            if count == 0 {
                break;
            }
            let batch = cairn_testkit::leaves(seed ^ all.len() as u64, count);
            tree.append_batch(&batch).unwrap();
            all.extend_from_slice(&batch);
            prop_assert_eq!(
                tree.root(),
                Some(reference::fixed_root(arity(n), HashKind::Blake3, depth, zero, &all))
            );
            let index = all.len() as u64 / 2;
            let proof = tree.prove(index).unwrap();
            prop_assert_eq!(proof.verify_with(&config, &tree.head()), Ok(()));
        }
    }

    #[test]
    fn fixed_decoders_never_panic_on_mutations_and_re_encode_what_they_accept(
        at in 0usize..200,
        value in any::<u8>(),
        cut in any::<Option<usize>>(),
    ) {
        let config = fixed(3, HashKind::Blake3, 3, ZERO);
        let mut tree = LeanImt::from_leaves(config, &cairn_testkit::leaves(8, 20)).unwrap();
        for mut bytes in [tree.prove(19).unwrap().to_bytes(), tree.prove_consistency(7, 20).unwrap().to_bytes()] {
            let len = bytes.len();
            bytes[at % len] = value;
            if let Some(cut) = cut {
                bytes.truncate(cut % (len + 1));
            }
            if let Ok(proof) = MembershipProof::from_bytes(&bytes) {
                prop_assert_eq!(proof.to_bytes(), bytes.clone());
            }
            if let Ok(proof) = ConsistencyProof::from_bytes(&bytes) {
                prop_assert_eq!(proof.to_bytes(), bytes.clone());
            }
        }
    }
}

#[test]
fn a_binary_poseidon_imt_renders_as_zkkit_and_its_circuit_inputs() {
    let config = fixed(2, HashKind::Poseidon, 4, [0; 32]);
    let leaves = cairn_testkit::leaves(11, 5);
    let mut tree = LeanImt::from_leaves(config, &leaves).unwrap();
    let proof = tree.prove(4).unwrap();
    let full =
        reference::fixed_membership_siblings(arity(2), HashKind::Poseidon, 4, [0; 32], &leaves, 4);
    let dec = cairn_core::decimal::to_decimal;
    let json: serde_json::Value = serde_json::from_str(&proof.to_zkkit_json().unwrap()).unwrap();
    assert_eq!(json["root"], dec(&tree.root().unwrap()));
    assert_eq!(json["leafIndex"], 4);
    assert_eq!(json["pathIndices"], serde_json::json!([0, 0, 1, 0]));
    let want: Vec<Vec<String>> = full
        .iter()
        .map(|(_, row)| row.iter().map(dec).collect())
        .collect();
    assert_eq!(json["siblings"], serde_json::json!(want));
    let circom: serde_json::Value =
        serde_json::from_str(&proof.to_zkkit_circom_json(Some(6)).unwrap()).unwrap();
    assert_eq!(circom["depth"], "4");
    assert_eq!(circom["index"], "4");
    assert_eq!(circom["siblings"].as_array().unwrap().len(), 6);
    assert_eq!(circom["siblings"][5], "0");
    assert!(proof.to_zkkit_circom_json(Some(3)).is_err());
    assert!(matches!(
        proof.to_circom_json(None),
        Err(cairn_core::proof::InteropError::NotLean { .. })
    ));
    // Any arity renders as zk-kit's IMT proof.
    let five = fixed(5, HashKind::Poseidon, 2, [0; 32]);
    let mut tree = LeanImt::from_leaves(five, &leaves).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&tree.prove(1).unwrap().to_zkkit_json().unwrap()).unwrap();
    assert_eq!(json["siblings"][0].as_array().unwrap().len(), 4);
    assert_eq!(json["siblings"][1].as_array().unwrap().len(), 4);
    let _ = Arity::BINARY;
}
