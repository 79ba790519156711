//! Test support shared by every cairn crate: a naive reference transcription
//! of the tree spec, deterministic leaf generators, the loader of the
//! committed vectors under `test-vectors/`, the kill -9 harness of the
//! crash tests, the simulated file system of the power-loss and fault
//! tests (`sim`, feature `sim`) and the operation-sequence model run in
//! lockstep against the store and every database kind (`model`, feature
//! `model`). Never used by production code.

pub mod http;
pub mod indexed;
pub mod kill9;
#[cfg(feature = "model")]
pub mod model;
pub mod reference;
pub mod s3;
#[cfg(feature = "sim")]
pub mod sim;
pub mod vectors;

use cairn_core::Hash;
use sha2::{Digest, Sha256};

/// Deterministic pseudo-random leaves: SHA-256 of a label, a seed and the
/// index, with the top three bits cleared so that every leaf is a canonical
/// BN254 field element (valid under every hash, Poseidon included).
pub fn leaves(seed: u64, count: usize) -> Vec<Hash> {
    (0..count as u64).map(|i| leaf(seed, i)).collect()
}

/// The `index`th leaf of [`leaves`] for `seed`.
pub fn leaf(seed: u64, index: u64) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update(b"cairn/testkit-leaf/v1");
    hasher.update(seed.to_be_bytes());
    hasher.update(index.to_be_bytes());
    let mut out: Hash = hasher.finalize().into();
    out[0] &= 0x1f;
    out
}

/// An unsigned integer from the environment (`_` separators allowed),
/// `default` if unset: how slow variants of tests are asked for.
///
/// # Panics
/// If the variable is set to something else.
pub fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(value) => value
            .trim()
            .replace('_', "")
            .parse()
            .unwrap_or_else(|e| panic!("{name}={value}: {e}")),
        Err(_) => default,
    }
}
