#![no_main]
//! JSON proofs of both kinds: decoding arbitrary text never panics, and
//! anything accepted survives a round trip and verifies without panicking.

use cairn_core::{ConsistencyProof, MembershipProof};
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let fixture = &*common::POSEIDON;
    if let Ok(proof) = MembershipProof::from_json(text) {
        assert_eq!(
            MembershipProof::from_bytes(&proof.to_bytes()),
            Ok(proof.clone())
        );
        let _ = proof.verify(fixture.arity(), fixture.hash(), &fixture.head(proof.size()));
        let fixed = &*common::FIXED;
        let _ = proof.verify_with(&fixed.config(), &fixed.head(proof.size()));
    }
    if let Ok(proof) = ConsistencyProof::from_json(text) {
        assert_eq!(
            ConsistencyProof::from_bytes(&proof.to_bytes()),
            Ok(proof.clone())
        );
        let old = fixture.head(proof.old_size());
        let new = fixture.head(proof.new_size());
        let _ = proof.verify(fixture.arity(), fixture.hash(), &old, &new);
        let fixed = &*common::FIXED;
        let (old, new) = (fixed.head(proof.old_size()), fixed.head(proof.new_size()));
        let _ = proof.verify_with(&fixed.config(), &old, &new);
    }
});
