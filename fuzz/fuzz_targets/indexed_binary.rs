#![no_main]
//! Binary indexed proofs (absence, indexed membership, insertion witness):
//! decoding never panics, accepted bytes are canonical, verification of
//! anything decoded returns a value, and only the honest proof verifies.

use std::sync::LazyLock;

use cairn_core::indexed::{AbsenceProof, IndexedMembershipProof, IndexedTree, InsertionWitness};
use cairn_core::{Arity, HashKind, TreeConfig};
use libfuzzer_sys::fuzz_target;

/// N = 3 over 40 values (1, 3, 5, ...: every even value is absent).
static TREE: LazyLock<IndexedTree> = LazyLock::new(|| {
    let config = TreeConfig::new(Arity::new(3).expect("3 is an arity"), HashKind::Blake3);
    let values: Vec<[u8; 32]> = (0u8..40)
        .map(|i| {
            let mut v = [0u8; 32];
            v[31] = 2 * i + 1;
            v
        })
        .collect();
    IndexedTree::from_values(config, &values).expect("distinct nonzero values")
});

fuzz_target!(|data: &[u8]| {
    let tree = &*TREE;
    let config = tree.config();
    let head = tree.head();
    match data.get(1) {
        Some(3) => {
            let Ok(proof) = AbsenceProof::from_bytes(data) else {
                return;
            };
            assert_eq!(proof.to_bytes(), data, "decoded bytes must re-encode identically");
            if proof.verify(config.arity, config.hash, &head, &proof.value()).is_ok() {
                assert_eq!(Ok(proof.clone()), tree.prove_absence(&proof.value()));
            }
            let _ = AbsenceProof::from_json(&proof.to_json()).expect("own JSON decodes");
        }
        Some(4) => {
            let Ok(proof) = IndexedMembershipProof::from_bytes(data) else {
                return;
            };
            assert_eq!(proof.to_bytes(), data, "decoded bytes must re-encode identically");
            let value = proof.leaf().value;
            if proof.verify(config.arity, config.hash, &head, &value).is_ok() {
                assert_eq!(Ok(proof.clone()), tree.prove_index(proof.index()));
            }
            let _ = IndexedMembershipProof::from_json(&proof.to_json()).expect("own JSON decodes");
        }
        _ => {
            let Ok(witness) = InsertionWitness::from_bytes(data) else {
                return;
            };
            assert_eq!(witness.to_bytes(), data, "decoded bytes must re-encode identically");
            let _ = witness.verify(config.arity, config.hash, &head);
            let _ = InsertionWitness::from_json(&witness.to_json()).expect("own JSON decodes");
        }
    }
});
