#![no_main]
//! Binary membership proofs: decoding never panics, accepted bytes are
//! canonical, and verification of anything decoded returns a value.

use cairn_core::MembershipProof;
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Ok(proof) = MembershipProof::from_bytes(data) else {
        return;
    };
    assert_eq!(
        proof.to_bytes(),
        data,
        "decoded bytes must re-encode identically"
    );
    let fixture = common::blake3_for(proof.kind());
    let head = fixture.head(proof.size());
    let verdict = proof.verify_with(&fixture.config(), &head);
    if verdict.is_ok() {
        // Only the honest proof can verify against an honest head.
        assert_eq!(
            Some(proof.clone()),
            fixture
                .tree
                .view(head.size)
                .and_then(|view| view.prove(proof.index()))
                .ok()
        );
    }
    let _ = MembershipProof::from_json(&proof.to_json()).expect("own JSON decodes");
});
