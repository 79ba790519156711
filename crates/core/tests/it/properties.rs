//! Property tests: the tree, its views and its proofs against the reference
//! model, over random arities and random sequences of appends.

use cairn_core::{
    Arity, ConsistencyProof, Hash, HashKind, LeanImt, MembershipProof, TreeConfig, TreeHead,
};
use cairn_testkit::reference;
use proptest::prelude::*;

use crate::support::{arity, head};

fn hash_kind() -> impl Strategy<Value = HashKind> {
    prop_oneof![
        Just(HashKind::Blake3),
        Just(HashKind::Sha256),
        Just(HashKind::Keccak256)
    ]
}

/// A sequence of append operations: each is a batch size, 1 meaning a
/// single-leaf `append`.
fn batches() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(prop_oneof![3 => Just(1usize), 2 => 2usize..40], 1..12)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn every_root_after_every_append_equals_the_reference(n in 2u64..=16, hash in hash_kind(), ops in batches(), seed in any::<u64>()) {
        let config = TreeConfig::new(arity(n), hash);
        let mut tree = LeanImt::new(config);
        let mut all: Vec<Hash> = Vec::new();
        for count in ops {
            let batch = cairn_testkit::leaves(seed ^ all.len() as u64, count);
            let first = if count == 1 { tree.append(batch[0]) } else { tree.append_batch(&batch) };
            prop_assert_eq!(first, Ok(all.len() as u64));
            all.extend_from_slice(&batch);
            prop_assert_eq!(tree.size(), all.len() as u64);
            prop_assert_eq!(tree.root(), reference::root(arity(n), hash, &all));
            prop_assert_eq!(tree.depth() as usize, reference::levels(arity(n), hash, &all).len() - 1);
        }
    }

    /// The root after appending to a tree known only by its frontier is
    /// the reference root of the longer tree, for both kinds.
    #[test]
    fn the_root_after_appending_to_a_frontier_equals_the_reference(n in 2u64..=16, old in 0usize..700, added in 0usize..700, fixed in any::<bool>(), seed in any::<u64>()) {
        let all = cairn_testkit::leaves(seed, old + added);
        let mut config = TreeConfig::new(arity(n), HashKind::Blake3);
        // Room for every size the strategy draws, and one level more.
        let depth = cairn_core::shape::depth(1400, arity(n)) + 1;
        let zero = [9; 32];
        if fixed {
            config = config.with_kind(cairn_core::TreeKind::Fixed { depth, zero });
        }
        let mut before = LeanImt::from_leaves(config, &all[..old]).unwrap();
        let frontier = before.snapshot().frontier();
        let got = config.group_rule().root_after(&frontier, &all[old..]);
        let want = if fixed {
            Some(reference::fixed_root(arity(n), HashKind::Blake3, depth, zero, &all))
        } else {
            reference::root(arity(n), HashKind::Blake3, &all)
        };
        prop_assert_eq!(got, want);
    }

    #[test]
    fn every_proof_of_every_leaf_at_every_size_verifies(n in 2u64..=9, hash in hash_kind(), count in 1usize..48, seed in any::<u64>()) {
        let leaves = cairn_testkit::leaves(seed, count);
        let mut tree = LeanImt::from_leaves(TreeConfig::new(arity(n), hash), &leaves).unwrap();
        for size in 1..=count as u64 {
            let trusted = head(n, hash, &leaves, size);
            prop_assert_eq!(tree.at_size(size).unwrap().head(), trusted);
            for index in 0..size {
                let proof = tree.prove_at(index, size).unwrap();
                prop_assert_eq!(proof.verify(arity(n), hash, &trusted), Ok(()));
                let want: Vec<Hash> = reference::membership_siblings(arity(n), hash, &leaves[..size as usize], index as usize)
                    .concat();
                prop_assert_eq!(proof.siblings(), want.as_slice());
                prop_assert_eq!(MembershipProof::from_bytes(&proof.to_bytes()), Ok(proof.clone()));
            }
        }
    }

    #[test]
    fn roll_forward_equals_a_freshly_generated_proof(n in 2u64..=16, hash in hash_kind(), new_size in 1u64..300, old_frac in 0.0f64..=1.0, index_frac in 0.0f64..1.0, seed in any::<u64>()) {
        let old_size = ((new_size as f64 * old_frac) as u64).clamp(1, new_size);
        let index = ((old_size as f64 * index_frac) as u64).min(old_size - 1);
        let leaves = cairn_testkit::leaves(seed, new_size as usize);
        let mut tree = LeanImt::from_leaves(TreeConfig::new(arity(n), hash), &leaves).unwrap();
        let old = head(n, hash, &leaves, old_size);
        let new = head(n, hash, &leaves, new_size);
        let consistency = tree.prove_consistency(old_size, new_size).unwrap();
        prop_assert_eq!(consistency.verify(arity(n), hash, &old, &new), Ok(()));
        let old_proof = tree.prove_at(index, old_size).unwrap();
        let rolled = consistency.roll_forward(&old_proof, arity(n), hash, &old, &new);
        prop_assert_eq!(rolled, Ok(tree.prove_at(index, new_size).unwrap()));
        prop_assert_eq!(ConsistencyProof::from_bytes(&consistency.to_bytes()), Ok(consistency.clone()));
        prop_assert_eq!(ConsistencyProof::from_json(&consistency.to_json()), Ok(consistency.clone()));
    }

    #[test]
    fn a_consistency_proof_verifies_for_its_own_pair_of_sizes_only(n in 2u64..=8, new_size in 1u64..80, old_frac in 0.0f64..=1.0, other_old in 0u64..80, other_new in 0u64..80, seed in any::<u64>()) {
        let hash = HashKind::Blake3;
        let old_size = (new_size as f64 * old_frac) as u64;
        let leaves = cairn_testkit::leaves(seed, 80);
        let mut tree = LeanImt::from_leaves(TreeConfig::new(arity(n), hash), &leaves).unwrap();
        let proof = tree.prove_consistency(old_size, new_size).unwrap();
        let heads = |m: u64, k: u64| (head(n, hash, &leaves, m), head(n, hash, &leaves, k));
        let (old, new) = heads(old_size, new_size);
        prop_assert_eq!(proof.verify(arity(n), hash, &old, &new), Ok(()));
        if (other_old, other_new) != (old_size, new_size) && other_old <= other_new {
            let (old, new) = heads(other_old, other_new);
            prop_assert!(proof.verify(arity(n), hash, &old, &new).is_err());
            // Relabelling the sizes inside the proof does not help either.
            let mut bytes = proof.to_bytes();
            bytes[4..12].copy_from_slice(&other_old.to_be_bytes());
            bytes[12..20].copy_from_slice(&other_new.to_be_bytes());
            if let Ok(relabelled) = ConsistencyProof::from_bytes(&bytes) {
                prop_assert!(relabelled.verify(arity(n), hash, &old, &new).is_err() || other_old == 0,
                    "relabelled {}->{} as {}->{} verified", old_size, new_size, other_old, other_new);
            }
        }
    }
}

#[test]
fn views_are_byte_identical_to_the_subtree_roots_of_the_reference() {
    // Node (level, index) of the tree at any size is the LeanIMT root of the
    // leaves it covers: the fact the historical views rely on.
    let (mut tree, leaves) = crate::support::tree(3, HashKind::Sha256, 100);
    for size in [1u64, 2, 3, 4, 9, 10, 26, 27, 28, 81, 82, 100] {
        let view = tree.at_size(size).unwrap();
        let prefix = &leaves[..size as usize];
        for (level, nodes) in reference::levels(arity(3), HashKind::Sha256, prefix)
            .iter()
            .enumerate()
        {
            for (index, node) in nodes.iter().enumerate() {
                assert_eq!(view.node(level as u32, index as u64), *node);
                assert_eq!(
                    reference::subtree_root(
                        arity(3),
                        HashKind::Sha256,
                        prefix,
                        level as u32,
                        index
                    ),
                    Some(*node)
                );
            }
        }
    }
}

#[test]
fn consistency_from_size_zero_is_empty_and_says_nothing_about_the_new_root() {
    let (mut tree, leaves) = crate::support::tree(4, HashKind::Blake3, 10);
    let proof = tree.prove_consistency(0, 10).unwrap();
    assert_eq!(proof.edge_leaf(), None);
    assert!(proof.hashes().is_empty());
    assert_eq!(proof.to_bytes().len(), 20);
    let new = head(4, HashKind::Blake3, &leaves, 10);
    let four = arity(4);
    assert_eq!(
        proof.verify(four, HashKind::Blake3, &TreeHead::EMPTY, &new),
        Ok(())
    );
    // The old head must be the empty one: size 0 and no root.
    let bogus_old = TreeHead {
        size: 0,
        root: Some([1; 32]),
    };
    assert!(
        proof
            .verify(four, HashKind::Blake3, &bogus_old, &new)
            .is_err()
    );
    // From 0 to 0 is the empty tree on both sides.
    let mut empty = LeanImt::new(TreeConfig::new(four, HashKind::Blake3));
    let proof = empty.prove_consistency(0, 0).unwrap();
    assert_eq!(
        proof.verify(four, HashKind::Blake3, &TreeHead::EMPTY, &TreeHead::EMPTY),
        Ok(())
    );
}

#[test]
fn consistency_between_equal_sizes_requires_equal_roots() {
    let (mut tree, leaves) = crate::support::tree(4, HashKind::Blake3, 21);
    let four = arity(4);
    for size in [1u64, 4, 5, 16, 21] {
        let proof = tree.prove_consistency(size, size).unwrap();
        let trusted = head(4, HashKind::Blake3, &leaves, size);
        assert_eq!(
            proof.verify(four, HashKind::Blake3, &trusted, &trusted),
            Ok(())
        );
        let other = TreeHead {
            root: Some([9; 32]),
            ..trusted
        };
        assert!(
            proof
                .verify(four, HashKind::Blake3, &trusted, &other)
                .is_err()
        );
        assert!(
            proof
                .verify(four, HashKind::Blake3, &other, &trusted)
                .is_err()
        );
    }
}

#[test]
fn consistency_from_a_larger_to_a_smaller_size_is_refused_everywhere() {
    let (mut tree, _) = crate::support::tree(2, HashKind::Blake3, 8);
    assert_eq!(
        tree.prove_consistency(5, 3).unwrap_err().to_string(),
        "old size 5 is larger than new size 3"
    );
    let mut bytes = tree.prove_consistency(3, 5).unwrap().to_bytes();
    bytes[4..12].copy_from_slice(&5u64.to_be_bytes());
    bytes[12..20].copy_from_slice(&3u64.to_be_bytes());
    assert_eq!(
        ConsistencyProof::from_bytes(&bytes)
            .unwrap_err()
            .to_string(),
        "proof old size 5 is larger than its new size 3"
    );
}

#[test]
fn proofs_against_sizes_the_tree_has_not_reached_are_refused() {
    let (mut tree, _) = crate::support::tree(2, HashKind::Blake3, 8);
    assert!(tree.prove_at(0, 9).is_err());
    assert!(tree.prove_at(8, 8).is_err());
    assert!(tree.prove_consistency(2, 9).is_err());
    let mut empty = LeanImt::new(TreeConfig::new(Arity::BINARY, HashKind::Blake3));
    assert!(empty.prove(0).is_err());
}
