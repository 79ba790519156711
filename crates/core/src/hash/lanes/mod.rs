//! Multi-lane node hashers: many independent parents of one tree level
//! hashed at once, one parent per SIMD lane.

pub mod blake3;
pub mod keccak;
pub mod poseidon;
pub mod sha256;

#[cfg(test)]
pub(crate) mod testing;
