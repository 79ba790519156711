//! circomlib's MiMCSponge over the BN254 scalar field: the sponge Tornado
//! Cash and its forks hash their deposit trees with (`MiMCSponge(2, 220, 1)`
//! with key 0), here for 1 to 16 inputs.
//!
//! This module owns the whole hash: the canonical-value rule for inputs (the
//! same as Poseidon's), the 32-byte big-endian encoding, the 220-round
//! Feistel permutation and its round constants. The constants are not a
//! vendored table: they are regenerated from circomlib's published derivation
//! (Keccak-256 iterated from the seed string `"mimcsponge"`) on first use.
//!
//! Semantics are exactly circomlib's `MiMCSponge(k, 220, 1)` template and
//! circomlibjs's `mimcsponge.multiHash(inputs, 0, 1)`: the state `(R, C)`
//! starts at `(0, 0)`; each input is added to `R` and the pair is permuted;
//! the output is `R` after the last input.

use std::sync::OnceLock;

use ark_bn254::Fr;
use ark_ff::{AdditiveGroup, Field, PrimeField};

use super::Hash;
use super::poseidon::{field_from_be, field_to_be};

/// Feistel rounds of circomlib's MiMCSponge (`nRounds = 220`).
pub(crate) const ROUNDS: usize = 220;

/// The seed string circomlib hashes to start the constant chain.
const SEED: &[u8] = b"mimcsponge";

/// The round constants: `c_0 = c_219 = 0`, and for `i` in `1..219`, `c_i`
/// is the `i`-th link of the chain `k_0 = keccak256(SEED)`,
/// `k_i = keccak256(k_{i-1})` (each link the 32 bytes of the previous one),
/// read big-endian and reduced mod p. Generated once per process.
fn constants() -> &'static [Fr; ROUNDS] {
    static CONSTANTS: OnceLock<[Fr; ROUNDS]> = OnceLock::new();
    CONSTANTS.get_or_init(|| {
        use sha3::Digest;
        let mut constants = [Fr::ZERO; ROUNDS];
        let mut link: [u8; 32] = sha3::Keccak256::digest(SEED).into();
        // The first and the last round take no constant (circomlib sets both
        // to 0 after computing the chain, so the chain still starts at k_1
        // for round 1).
        for constant in &mut constants[1..ROUNDS - 1] {
            link = sha3::Keccak256::digest(link).into();
            *constant = Fr::from_be_bytes_mod_order(&link);
        }
        constants
    })
}

/// The MiMC-Feistel permutation with key 0: for each round i,
/// `t = xL + c_i`, then `(xL, xR) <- (xR + t^5, xL)`, except that the last
/// round leaves the halves in place and only updates `xR`.
fn permute(left: &mut Fr, right: &mut Fr) {
    let constants = constants();
    let Some((last, rounds)) = constants.split_last() else {
        unreachable!("ROUNDS >= 1")
    };
    for constant in rounds {
        let t = *left + constant;
        let t4 = t.square().square();
        let mixed = *right + t4 * t;
        *right = *left;
        *left = mixed;
    }
    let t = *left + last;
    let t4 = t.square().square();
    *right += t4 * t;
}

/// circomlib `MiMCSponge(k, 220, 1)` of 1..=16 big-endian field elements,
/// key 0, as a big-endian field element.
///
/// Returns `Err(i)` for the first input `i` that is not canonical (`>=` the
/// modulus): such values are rejected, never reduced.
///
/// # Panics
/// If `inputs` is empty or has more than 16 values (a programmer error).
pub(crate) fn hash(inputs: &[Hash]) -> Result<Hash, usize> {
    assert!(
        (1..=super::MAX_GROUP).contains(&inputs.len()),
        "mimcsponge takes 1..=16 inputs, got {}",
        inputs.len()
    );
    let mut left = Fr::ZERO;
    let mut right = Fr::ZERO;
    for (position, input) in inputs.iter().enumerate() {
        left += field_from_be(input).ok_or(position)?;
        permute(&mut left, &mut right);
    }
    Ok(field_to_be(left))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::BN254_MODULUS_BE;

    fn from_hex(hex: &str) -> Hash {
        let bytes = hex::decode(hex.trim_start_matches("0x")).expect("valid hex");
        bytes.try_into().expect("32 bytes")
    }

    fn small(value: u64) -> Hash {
        let mut out = [0u8; 32];
        out[24..].copy_from_slice(&value.to_be_bytes());
        out
    }

    #[test]
    fn the_constant_chain_starts_and_ends_as_circomlib_sets_it() {
        let constants = constants();
        assert_eq!(constants[0], Fr::ZERO);
        assert_eq!(constants[ROUNDS - 1], Fr::ZERO);
        // Round 1 is keccak256(keccak256("mimcsponge")), below p as is.
        assert_eq!(
            field_to_be(constants[1]),
            from_hex("0x0fbe43c36a80e36d7c7c584d4f8f3759fb51f0d66065d8a227b688d12488c5d4")
        );
        assert_eq!(
            field_to_be(constants[218]),
            from_hex("0x04af9e46dbc42b94137981fece56e9775d00fc101129f08fd6b781f439c20c0b")
        );
        assert!(constants[1..ROUNDS - 1].iter().all(|c| *c != Fr::ZERO));
    }

    /// Outputs of circomlibjs 0.1.7 `buildMimcSponge().multiHash(inputs, 0, 1)`.
    #[test]
    fn hashes_match_circomlibjs_multihash() {
        let cases: [(&[u64], &str); 4] = [
            (
                &[1, 2],
                "0x2bcea035a1251603f1ceaf73cd4ae89427c47075bb8e3a944039ff1e3d6d2a6f",
            ),
            (
                &[0, 0],
                "0x2d9fea8398a61ea1997e7d748364c0fdb49412c4dbabc1578375ade642e85581",
            ),
            (
                &[1],
                "0x13703c30a6670c778c8bfca7cb91649f4181847ef3f0194c00c22bbb44f789ab",
            ),
            (
                &[1, 2, 3],
                "0x1d824407e6b579a4052dc76880c041ae440e4dafd5c7f6ea262336c417de4692",
            ),
        ];
        for (inputs, want) in cases {
            let inputs: Vec<Hash> = inputs.iter().map(|&v| small(v)).collect();
            assert_eq!(hash(&inputs), Ok(from_hex(want)), "{inputs:?}");
        }
    }

    /// Tornado Cash's `MerkleTreeWithHistory` publishes its zero value
    /// (`keccak256("tornado") mod p`) and `zeros(1) = hashLeftRight(z, z)`.
    #[test]
    fn tornado_cash_zero_hashes_match_its_contract() {
        let zero = from_hex("0x2fe54c60d3acabf3343a35b6eba15db4821b340f76e741e2249685ed4899af6c");
        {
            use sha3::Digest;
            let tornado: [u8; 32] = sha3::Keccak256::digest(b"tornado").into();
            assert_eq!(field_to_be(Fr::from_be_bytes_mod_order(&tornado)), zero);
        }
        assert_eq!(
            hash(&[zero, zero]),
            Ok(from_hex(
                "0x256a6135777eee2fd26f54b8b7037a25439d5235caee224154186d2b8a52e31d"
            ))
        );
    }

    #[test]
    fn non_canonical_inputs_are_refused_not_reduced() {
        let mut above = BN254_MODULUS_BE;
        above[31] += 1; // p + 1, the same field element as 1
        assert_eq!(hash(&[small(1), above]), Err(1));
        assert_eq!(hash(&[BN254_MODULUS_BE, small(1)]), Err(0));
        let mut below = BN254_MODULUS_BE;
        below[31] -= 1;
        assert!(hash(&[below, below]).is_ok());
    }

    #[test]
    #[should_panic(expected = "mimcsponge takes 1..=16 inputs, got 17")]
    fn more_than_sixteen_inputs_is_a_programmer_error() {
        let _ = hash(&[small(1); 17]);
    }
}
