//! Encodings: round trips, canonical binary form, and decoders that return
//! errors (never panic) on any input.

use cairn_core::{ConsistencyProof, DecodeError, HashKind, MembershipProof};
use proptest::prelude::*;

use crate::support::tree;

#[test]
fn binary_and_json_round_trip_for_both_kinds() {
    let (mut tree, _) = tree(5, HashKind::Keccak256, 140);
    for (index, size) in [(0u64, 1u64), (0, 140), (139, 140), (124, 125), (7, 26)] {
        let proof = tree.prove_at(index, size).unwrap();
        assert_eq!(
            MembershipProof::from_bytes(&proof.to_bytes()),
            Ok(proof.clone())
        );
        assert_eq!(
            MembershipProof::from_json(&proof.to_json()),
            Ok(proof.clone())
        );
    }
    for (old, new) in [
        (0u64, 0u64),
        (0, 5),
        (1, 1),
        (1, 140),
        (25, 26),
        (26, 125),
        (125, 140),
    ] {
        let proof = tree.prove_consistency(old, new).unwrap();
        assert_eq!(
            ConsistencyProof::from_bytes(&proof.to_bytes()),
            Ok(proof.clone())
        );
        assert_eq!(
            ConsistencyProof::from_json(&proof.to_json()),
            Ok(proof.clone())
        );
    }
}

#[test]
fn membership_proof_size_is_compact() {
    // N = 4, 1M leaves: depth 10, 3 siblings a level, plus a 52-byte header.
    let leaves = cairn_testkit::leaves(1, 1 << 20);
    let mut tree = cairn_core::LeanImt::from_leaves(
        cairn_core::TreeConfig::new(crate::support::arity(4), HashKind::Blake3),
        &leaves,
    )
    .unwrap();
    let bytes = tree.prove(123_457).unwrap().to_bytes();
    assert_eq!(bytes.len(), 20 + 32 + 30 * 32);
    assert!(bytes.len() <= 1_100);
}

#[test]
fn json_with_a_wrong_level_length_or_unknown_field_is_rejected() {
    let (mut tree, _) = tree(4, HashKind::Blake3, 20);
    let json = tree.prove(5).unwrap().to_json();
    let mut doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    doc["siblings"][0].as_array_mut().unwrap().pop();
    assert!(matches!(
        MembershipProof::from_json(&doc.to_string()),
        Err(DecodeError::WrongLevelLength {
            level: 0,
            got: 2,
            want: 3,
            ..
        })
    ));
    let mut doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    doc["root"] = serde_json::Value::String("0x00".into());
    assert!(matches!(
        MembershipProof::from_json(&doc.to_string()),
        Err(DecodeError::Json(_))
    ));
    let mut doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    doc["kind"] = "consistency".into();
    assert!(matches!(
        MembershipProof::from_json(&doc.to_string()),
        Err(DecodeError::WrongKind { .. })
    ));
    let consistency = tree.prove_consistency(3, 20).unwrap().to_json();
    let mut doc: serde_json::Value = serde_json::from_str(&consistency).unwrap();
    doc["levels"][0]["level"] = 5.into();
    assert!(ConsistencyProof::from_json(&doc.to_string()).is_err());
    doc["levels"] = serde_json::json!([]);
    assert!(matches!(
        ConsistencyProof::from_json(&doc.to_string()),
        Err(DecodeError::WrongLevelCount { got: 0, .. })
    ));
}

#[test]
fn a_header_claiming_a_huge_tree_is_rejected_without_allocating_its_size() {
    let mut bytes = vec![1, 1, 2, 1];
    bytes.extend_from_slice(&(u64::MAX - 1).to_be_bytes());
    bytes.extend_from_slice(&u64::MAX.to_be_bytes());
    bytes.extend_from_slice(&[0; 32]);
    assert_eq!(
        MembershipProof::from_bytes(&bytes),
        Err(DecodeError::WrongLength {
            got: 52,
            want: 52 + 63 * 32
        })
    );
    let mut bytes = vec![1, 2, 16, 1];
    bytes.extend_from_slice(&1u64.to_be_bytes());
    bytes.extend_from_slice(&u64::MAX.to_be_bytes());
    assert!(matches!(
        ConsistencyProof::from_bytes(&bytes),
        Err(DecodeError::WrongLength { .. })
    ));
}

fn valid_encodings() -> Vec<Vec<u8>> {
    let (mut tree, _) = tree(3, HashKind::Blake3, 40);
    vec![
        tree.prove_at(5, 28).unwrap().to_bytes(),
        tree.prove(39).unwrap().to_bytes(),
        tree.prove_consistency(9, 40).unwrap().to_bytes(),
        tree.prove_consistency(0, 3).unwrap().to_bytes(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn decoders_never_panic_and_accepted_bytes_re_encode_identically(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        if let Ok(proof) = MembershipProof::from_bytes(&bytes) {
            prop_assert_eq!(proof.to_bytes(), bytes.clone());
        }
        if let Ok(proof) = ConsistencyProof::from_bytes(&bytes) {
            prop_assert_eq!(proof.to_bytes(), bytes.clone());
        }
        let text = String::from_utf8_lossy(&bytes);
        let _ = MembershipProof::from_json(&text);
        let _ = ConsistencyProof::from_json(&text);
    }

    #[test]
    fn mutated_valid_encodings_decode_canonically_or_not_at_all(which in 0usize..4, edits in prop::collection::vec((any::<usize>(), any::<u8>()), 0..4), cut in any::<Option<usize>>()) {
        let mut bytes = valid_encodings()[which].clone();
        for (at, value) in edits {
            let at = at % bytes.len();
            bytes[at] = value;
        }
        if let Some(cut) = cut {
            bytes.truncate(cut % (bytes.len() + 1));
        }
        if let Ok(proof) = MembershipProof::from_bytes(&bytes) {
            prop_assert_eq!(proof.to_bytes(), bytes.clone());
        }
        if let Ok(proof) = ConsistencyProof::from_bytes(&bytes) {
            prop_assert_eq!(proof.to_bytes(), bytes);
        }
    }
}

#[test]
fn decode_accepts_either_encoding_and_reports_non_utf8_json() {
    let (mut tree, _) = tree(4, HashKind::Blake3, 30);
    let proof = tree.prove(17).unwrap();
    assert_eq!(
        MembershipProof::decode(&proof.to_bytes()),
        Ok(proof.clone())
    );
    let padded = format!("\n  {}", proof.to_json());
    assert_eq!(MembershipProof::decode(padded.as_bytes()), Ok(proof));
    let consistency = tree.prove_consistency(4, 30).unwrap();
    assert_eq!(
        ConsistencyProof::decode(consistency.to_json().as_bytes()),
        Ok(consistency)
    );
    assert!(
        matches!(MembershipProof::decode(b"{\xff}"), Err(DecodeError::Json(m)) if m.contains("UTF-8"))
    );
}
