//! Shared keys and notes.

use cairn_note::{Signer, Verifier};

/// A fixed key, so notes are reproducible (Ed25519 signing is deterministic).
pub fn signer(name: &str) -> Signer {
    Signer::from_seed(name, &[0x5a; 32]).expect("a valid name")
}

pub fn verifier(name: &str) -> Verifier {
    signer(name).verifier()
}

/// Asserts that `result` is an error whose message contains every one of
/// `wanted`, and returns the message.
#[track_caller]
pub fn refused<T: std::fmt::Debug, E: std::fmt::Display>(
    result: Result<T, E>,
    wanted: &[&str],
) -> String {
    let message = match result {
        Ok(value) => panic!("accepted, want a refusal mentioning {wanted:?}: {value:?}"),
        Err(error) => error.to_string(),
    };
    for want in wanted {
        assert!(
            message.contains(want),
            "the error {message:?} does not mention {want:?}"
        );
    }
    message
}
