//! Loader for the committed JSON vectors under `test-vectors/`.

use std::path::PathBuf;

use cairn_core::Hash;
use cairn_core::hex::parse_hash;

/// The repository's `test-vectors/` directory.
pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../test-vectors")
}

/// Reads and parses `test-vectors/<name>`.
///
/// # Panics
/// If the file is missing or is not JSON: vectors are committed, so that is a
/// broken checkout, and a test should fail loudly.
pub fn load(name: &str) -> serde_json::Value {
    let path = dir().join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

/// The shared leaves of `test-vectors/leaves.json`.
pub fn leaves() -> Vec<Hash> {
    load("leaves.json")["leaves"]
        .as_array()
        .expect("leaves.json has a leaves array")
        .iter()
        .map(|v| parse_hash(v.as_str().expect("leaf is a string")).expect("leaf is 0x-hex"))
        .collect()
}

/// Parses a JSON value holding a 0x-hex hash or null.
pub fn hash_or_null(value: &serde_json::Value) -> Option<Hash> {
    value
        .as_str()
        .map(|s| parse_hash(s).unwrap_or_else(|e| panic!("bad hash in vectors: {e}")))
}

/// Leaf `index` of `leaves.json`'s rule, for streams longer than its
/// 1,100 leaves: SHA-256 of `cairn/test-vector-leaf/v1` and the index as a
/// big-endian u64, with the top three bits cleared (a BN254 scalar).
pub fn rule_leaf(index: u64) -> Hash {
    use sha2::Digest as _;
    let mut hasher = sha2::Sha256::new();
    hasher.update(b"cairn/test-vector-leaf/v1");
    hasher.update(index.to_be_bytes());
    let mut out: Hash = hasher.finalize().into();
    out[0] &= 0x1f;
    out
}
