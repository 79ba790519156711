//! The forgery matrix: one named test per attack, each of which a verifier
//! must reject. Several pin gaps reproduced against rotortree 0.20.0's
//! verifier: a proof relabelled to another index and size, a size checked
//! only through its depth, unused sibling slots not required to be zero,
//! and a consistency proof whose sizes are not bound to the trusted head.

use cairn_core::{ConsistencyProof, Hash, HashKind, MembershipProof, TreeHead, VerifyError};

use crate::support::{arity, head, tree};

const B3: HashKind = HashKind::Blake3;

/// Rewrites the index and size fields of a binary membership proof.
fn relabel(proof: &MembershipProof, index: u64, size: u64) -> Vec<u8> {
    let mut bytes = proof.to_bytes();
    bytes[4..12].copy_from_slice(&index.to_be_bytes());
    bytes[12..20].copy_from_slice(&size.to_be_bytes());
    bytes
}

/// Decodes and verifies; `Ok` only if both succeed.
fn accept(bytes: &[u8], n: u64, hash: HashKind, trusted: &TreeHead) -> Result<(), String> {
    let proof = MembershipProof::from_bytes(bytes).map_err(|e| format!("decode: {e}"))?;
    proof
        .verify(arity(n), hash, trusted)
        .map_err(|e| format!("verify: {e}"))
}

#[test]
fn relabelled_index_and_size_is_rejected() {
    // rotortree 0.20 accepted a proof for leaf 2 of 3 relabelled as leaf 3 of
    // 4, because sibling counts were not derived from the size.
    let (mut tree, leaves) = tree(2, B3, 4);
    let proof = tree.prove_at(2, 3).unwrap();
    let trusted = head(2, B3, &leaves, 4);
    let err = accept(&relabel(&proof, 3, 4), 2, B3, &trusted).unwrap_err();
    assert!(
        err.starts_with("decode") || err.starts_with("verify"),
        "{err}"
    );
    // Same shape, other index: decodes, but the root does not match.
    let err = accept(
        &relabel(&tree.prove_at(2, 4).unwrap(), 3, 4),
        2,
        B3,
        &trusted,
    )
    .unwrap_err();
    assert!(err.contains("computes root"), "{err}");
}

#[test]
fn relabelled_size_within_the_same_depth_is_rejected() {
    // rotortree 0.20 checked the size only through the depth: a size-5 proof
    // relabelled as size 8 verified.
    let (mut tree, leaves) = tree(2, B3, 8);
    let proof = tree.prove_at(4, 5).unwrap();
    let err = accept(&relabel(&proof, 4, 8), 2, B3, &head(2, B3, &leaves, 8)).unwrap_err();
    assert!(
        err.starts_with("decode"),
        "the shape of size 8 needs more siblings: {err}"
    );
    // Claiming the true size 5 against a trusted size 8 is a size mismatch.
    let err = proof
        .verify(arity(2), B3, &head(2, B3, &leaves, 8))
        .unwrap_err();
    assert_eq!(
        err,
        VerifyError::SizeMismatch {
            which: "size",
            proof: 5,
            trusted: 8
        }
    );
}

#[test]
fn an_internal_node_presented_as_a_leaf_is_rejected() {
    // Node 1 of level 1 (the parent of leaves 4..8 at N = 4) with the level-1
    // siblings would reproduce the root of a 16-leaf tree if the verifier let
    // the prover choose the depth.
    let (mut tree, leaves) = tree(4, B3, 16);
    let trusted = head(4, B3, &leaves, 16);
    let real = tree.prove(5).unwrap();
    let internal: Hash = tree.node(1, 1).unwrap();
    let upper: Vec<Hash> = real.siblings()[3..].to_vec();
    // As a proof of "leaf 1 of 4" it has the right shape for size 4, not 16.
    let mut forged = Vec::new();
    forged.extend_from_slice(&[1, 1, 4, B3.id()]);
    forged.extend_from_slice(&1u64.to_be_bytes());
    forged.extend_from_slice(&4u64.to_be_bytes());
    forged.extend_from_slice(&internal);
    forged.extend_from_slice(upper.as_flattened());
    let proof = MembershipProof::from_bytes(&forged).expect("well-formed for size 4");
    assert!(matches!(
        proof.verify(arity(4), B3, &trusted),
        Err(VerifyError::SizeMismatch {
            proof: 4,
            trusted: 16,
            ..
        })
    ));
    // Relabelled with the trusted size it needs one more level of siblings.
    let err = accept(&relabel(&proof, 1, 16), 4, B3, &trusted).unwrap_err();
    assert!(err.starts_with("decode"), "{err}");
}

#[test]
fn an_extra_all_zero_sibling_is_rejected() {
    // rotortree 0.20 did not require unused slots to be zero, so its encoding
    // was malleable; here there are no unused slots at all.
    let (mut tree, leaves) = tree(4, B3, 10);
    let mut bytes = tree.prove(9).unwrap().to_bytes();
    bytes.extend_from_slice(&[0u8; 32]);
    assert!(
        accept(&bytes, 4, B3, &head(4, B3, &leaves, 10))
            .unwrap_err()
            .contains("header implies exactly")
    );
}

#[test]
fn truncated_and_padded_proofs_are_rejected() {
    let (mut tree, leaves) = tree(3, B3, 30);
    let bytes = tree.prove(13).unwrap().to_bytes();
    let trusted = head(3, B3, &leaves, 30);
    assert_eq!(accept(&bytes, 3, B3, &trusted), Ok(()));
    for cut in [0, 1, 19, 20, 51, 52, bytes.len() - 32, bytes.len() - 1] {
        assert!(
            accept(&bytes[..cut], 3, B3, &trusted).is_err(),
            "truncated to {cut}"
        );
    }
    for extra in [1usize, 31, 32, 64] {
        let mut padded = bytes.clone();
        padded.resize(bytes.len() + extra, 0);
        assert!(
            accept(&padded, 3, B3, &trusted).is_err(),
            "padded by {extra}"
        );
    }
}

#[test]
fn a_forged_two_to_three_consistency_proof_fails_against_a_four_leaf_root() {
    // rotortree 0.20 accepted a 2 -> 3 consistency proof against the trusted
    // root of a 4-leaf tree because the sizes were not bound into the proof.
    let (mut tree, leaves) = tree(2, B3, 4);
    let old = head(2, B3, &leaves, 2);
    let four = head(2, B3, &leaves, 4);
    let honest = tree.prove_consistency(2, 3).unwrap();
    assert!(matches!(
        honest.verify(arity(2), B3, &old, &four),
        Err(VerifyError::SizeMismatch {
            which: "new size",
            proof: 3,
            trusted: 4
        })
    ));
    // The 2 -> 4 proof relabelled as 2 -> 3 has the same shape, so it decodes;
    // it is still bound to size 3 and fails against the trusted size 4.
    let mut bytes = tree.prove_consistency(2, 4).unwrap().to_bytes();
    bytes[12..20].copy_from_slice(&3u64.to_be_bytes());
    let relabelled =
        ConsistencyProof::from_bytes(&bytes).expect("2->3 and 2->4 share a shape at N = 2");
    assert!(relabelled.verify(arity(2), B3, &old, &four).is_err());
    // Against a head that claims size 3 with the 4-leaf root, the honest
    // 2 -> 3 proof fails too. (The relabelled one passes there, and rightly:
    // [l0, l1, H(l2, l3)] is a 3-leaf tree with that very root. Without a
    // leaf domain tag, a size is what tells leaves from nodes; see spec.md.)
    let three_with_four_root = TreeHead {
        size: 3,
        root: four.root,
    };
    assert!(
        honest
            .verify(arity(2), B3, &old, &three_with_four_root)
            .is_err()
    );
}

#[test]
fn swapped_roots_are_rejected() {
    let (mut tree, leaves) = tree(4, B3, 40);
    let old = head(4, B3, &leaves, 7);
    let new = head(4, B3, &leaves, 40);
    let proof = tree.prove_consistency(7, 40).unwrap();
    assert_eq!(proof.verify(arity(4), B3, &old, &new), Ok(()));
    let swapped_old = TreeHead {
        size: 7,
        root: new.root,
    };
    let swapped_new = TreeHead {
        size: 40,
        root: old.root,
    };
    assert!(matches!(
        proof.verify(arity(4), B3, &swapped_old, &swapped_new),
        Err(VerifyError::RootMismatch {
            which: "old root",
            ..
        })
    ));
}

#[test]
fn a_proof_from_another_tree_of_the_same_size_is_rejected() {
    let (mut tree, _) = tree(4, B3, 20);
    let other = cairn_testkit::leaves(99, 20);
    let trusted = head(4, B3, &other, 20);
    assert!(matches!(
        tree.prove(3).unwrap().verify(arity(4), B3, &trusted),
        Err(VerifyError::RootMismatch { which: "root", .. })
    ));
}

#[test]
fn a_proof_checked_with_another_arity_or_hash_is_rejected_by_name() {
    let (mut tree, leaves) = tree(4, B3, 20);
    let proof = tree.prove(3).unwrap();
    let trusted = head(4, B3, &leaves, 20);
    assert_eq!(
        proof
            .verify(arity(2), B3, &trusted)
            .unwrap_err()
            .to_string(),
        "proof is for arity 4, the trusted tree has arity 2"
    );
    assert_eq!(
        proof
            .verify(arity(4), HashKind::Sha256, &trusted)
            .unwrap_err()
            .to_string(),
        "proof is for hash blake3, the trusted tree uses sha256"
    );
}

#[test]
fn an_inconsistent_trusted_head_is_rejected() {
    let (mut tree, _) = tree(2, B3, 3);
    let proof = tree.prove(0).unwrap();
    let no_root = TreeHead {
        size: 3,
        root: None,
    };
    assert_eq!(
        proof.verify(arity(2), B3, &no_root),
        Err(VerifyError::InconsistentHead {
            size: 3,
            has_root: false
        })
    );
}

#[test]
fn every_bit_flip_of_a_membership_proof_is_rejected() {
    for (n, size, index) in [(2u64, 13u64, 6u64), (4, 70, 65), (16, 300, 299)] {
        let (mut tree, leaves) = tree(n, B3, size as usize);
        let bytes = tree.prove(index).unwrap().to_bytes();
        let trusted = head(n, B3, &leaves, size);
        assert_eq!(accept(&bytes, n, B3, &trusted), Ok(()));
        for bit in 0..bytes.len() * 8 {
            let mut flipped = bytes.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            assert!(
                accept(&flipped, n, B3, &trusted).is_err(),
                "n {n}: bit {bit} flipped was accepted"
            );
        }
    }
}

#[test]
fn every_bit_flip_of_a_consistency_proof_is_rejected() {
    for (n, old_size, new_size) in [(2u64, 5u64, 13u64), (4, 17, 70), (16, 1, 300)] {
        let (mut tree, leaves) = tree(n, B3, new_size as usize);
        let bytes = tree
            .prove_consistency(old_size, new_size)
            .unwrap()
            .to_bytes();
        let old = head(n, B3, &leaves, old_size);
        let new = head(n, B3, &leaves, new_size);
        let check = |bytes: &[u8]| {
            ConsistencyProof::from_bytes(bytes)
                .map_err(|e| e.to_string())
                .and_then(|p| {
                    p.verify(arity(n), B3, &old, &new)
                        .map_err(|e| e.to_string())
                })
        };
        assert_eq!(check(&bytes), Ok(()));
        for bit in 0..bytes.len() * 8 {
            let mut flipped = bytes.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            assert!(
                check(&flipped).is_err(),
                "n {n}: bit {bit} flipped was accepted"
            );
        }
    }
}

#[test]
fn roll_forward_refuses_unverified_inputs() {
    let (mut tree, leaves) = tree(4, B3, 50);
    let old = head(4, B3, &leaves, 10);
    let new = head(4, B3, &leaves, 50);
    let consistency = tree.prove_consistency(10, 50).unwrap();
    let proof = tree.prove_at(3, 10).unwrap();
    assert!(
        consistency
            .roll_forward(&proof, arity(4), B3, &old, &new)
            .is_ok()
    );
    let wrong_new = TreeHead {
        root: Some([0; 32]),
        ..new
    };
    assert!(
        consistency
            .roll_forward(&proof, arity(4), B3, &old, &wrong_new)
            .is_err()
    );
    let other_proof = tree.prove_at(3, 11).unwrap();
    assert!(
        consistency
            .roll_forward(&other_proof, arity(4), B3, &old, &new)
            .is_err()
    );
}

#[test]
fn a_non_canonical_poseidon_value_in_a_proof_is_rejected_not_reduced() {
    // x and x + p are the same field element; accepting both would make two
    // different proofs (and leaves) verify against one root.
    let hash = HashKind::Poseidon;
    let (mut tree, leaves) = tree(2, hash, 5);
    let trusted = head(2, hash, &leaves, 5);
    let proof = tree.prove(2).unwrap();
    assert_eq!(proof.verify(arity(2), hash, &trusted), Ok(()));
    let modulus = cairn_core::hash::BN254_MODULUS_BE;
    let mut bytes = proof.to_bytes();
    bytes[52..84].copy_from_slice(&modulus);
    let forged = MembershipProof::from_bytes(&bytes).unwrap();
    assert_eq!(
        forged.verify(arity(2), hash, &trusted),
        Err(VerifyError::NonCanonical {
            what: "sibling 0".into(),
            value: modulus
        })
    );
    let mut bytes = proof.to_bytes();
    bytes[20..52].copy_from_slice(&[0xff; 32]);
    let err = MembershipProof::from_bytes(&bytes)
        .unwrap()
        .verify(arity(2), hash, &trusted)
        .unwrap_err();
    assert!(err.to_string().starts_with("proof leaf 0xffff"), "{err}");
    let consistency = tree.prove_consistency(2, 5).unwrap();
    let mut bytes = consistency.to_bytes();
    bytes[20..52].copy_from_slice(&modulus);
    let old = head(2, hash, &leaves, 2);
    assert!(matches!(
        ConsistencyProof::from_bytes(&bytes)
            .unwrap()
            .verify(arity(2), hash, &old, &trusted),
        Err(VerifyError::NonCanonical { .. })
    ));
}
