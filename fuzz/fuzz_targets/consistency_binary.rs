#![no_main]
//! Binary consistency proofs: decoding never panics, accepted bytes are
//! canonical, verification and roll-forward of anything decoded return values.

use cairn_core::ConsistencyProof;
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Ok(proof) = ConsistencyProof::from_bytes(data) else {
        return;
    };
    assert_eq!(
        proof.to_bytes(),
        data,
        "decoded bytes must re-encode identically"
    );
    let fixture = common::blake3_for(proof.kind());
    let old = fixture.head(proof.old_size());
    let new = fixture.head(proof.new_size());
    let verdict = proof.verify_with(&fixture.config(), &old, &new);
    if verdict.is_ok() && old.size > 0 {
        assert_eq!(
            Some(proof.clone()),
            fixture
                .tree
                .view(new.size)
                .and_then(|view| view.prove_consistency(old.size))
                .ok()
        );
        let member = fixture
            .tree
            .view(old.size)
            .and_then(|view| view.prove(old.size - 1))
            .expect("leaf below old size");
        let rolled = proof
            .roll_forward_with(&member, &fixture.config(), &old, &new)
            .expect("verified inputs roll forward");
        assert_eq!(
            Some(rolled),
            fixture
                .tree
                .view(new.size)
                .and_then(|view| view.prove(old.size - 1))
                .ok()
        );
    }
    let _ = ConsistencyProof::from_json(&proof.to_json()).expect("own JSON decodes");
});
