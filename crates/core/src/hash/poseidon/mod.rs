//! circomlib-compatible Poseidon over the BN254 scalar field, for 1 to 16
//! inputs (state widths t = 2..=17).
//!
//! This module owns the whole hash: the canonical-value rule for inputs, the
//! 32-byte big-endian encoding, the permutation, and its parameters. The
//! parameters are not vendored tables: [`grain`] regenerates them from the
//! Poseidon reference script's Grain LFSR and [`params`] caches them per width.
//! The hash runs an equivalent form of the permutation whose partial rounds
//! add one scalar and multiply by a sparse matrix; [`optimised`] derives its
//! constants from the textbook ones, once per width.
//!
//! Semantics are exactly circomlib's `poseidon(inputs)` (poseidon-lite's
//! `poseidonK`, light-poseidon's `Poseidon::<Fr>::new_circom(k)`): x^5 S-box,
//! state `[0, inputs...]` (the capacity cell is zero: no domain tag), 4 full
//! rounds, R_P partial rounds, 4 full rounds, each round being "add round
//! constants, S-box, multiply by the MDS matrix"; the output is cell 0.
//! The tests keep that textbook permutation as the reference for the
//! optimised one.

mod grain;
#[cfg(any(target_arch = "wasm32", test))]
mod limbs29;
pub(in crate::hash) mod optimised;
mod params;
#[cfg(test)]
mod tests;

use ark_bn254::Fr;
use ark_ff::{BigInt, Field, PrimeField};

use super::Hash;
use optimised::Optimised;
use params::FULL_ROUNDS;

/// The BN254 scalar field modulus, big-endian.
pub const BN254_MODULUS_BE: Hash = [
    0x30, 0x64, 0x4e, 0x72, 0xe1, 0x31, 0xa0, 0x29, 0xb8, 0x50, 0x45, 0xb6, 0x81, 0x81, 0x58, 0x5d,
    0x28, 0x33, 0xe8, 0x48, 0x79, 0xb9, 0x70, 0x91, 0x43, 0xe1, 0xf5, 0x93, 0xf0, 0x00, 0x00, 0x01,
];

/// The rounds of circomlib's Poseidon of width `t` (inputs + 1): full
/// rounds, partial rounds. For cost models (a benchmark's multiplication
/// count); the permutation itself reads them from its parameters.
///
/// # Panics
/// If `t` is outside 2..=17.
pub fn rounds(t: usize) -> (usize, usize) {
    (FULL_ROUNDS, params::partial_rounds(t))
}

/// Whether `value`, read big-endian, is below the BN254 scalar modulus.
pub fn is_canonical_field_element(value: &Hash) -> bool {
    value < &BN254_MODULUS_BE
}

/// circomlib `poseidon(inputs)` of 1..=16 big-endian field elements, as a
/// big-endian field element.
///
/// Returns `Err(i)` for the first input `i` that is not canonical (`>=` the
/// modulus): such values are rejected, never reduced, so two distinct byte
/// strings can never hash as the same field element.
///
/// # Panics
/// If `inputs` is empty or has more than 16 values (a programmer error).
pub(crate) fn hash(inputs: &[Hash]) -> Result<Hash, usize> {
    // One monomorphised permutation per width, so the state is a fixed-size
    // stack array and every loop has a constant bound.
    match inputs.len() {
        1 => hash_width::<2>(inputs),
        2 => hash_width::<3>(inputs),
        3 => hash_width::<4>(inputs),
        4 => hash_width::<5>(inputs),
        5 => hash_width::<6>(inputs),
        6 => hash_width::<7>(inputs),
        7 => hash_width::<8>(inputs),
        8 => hash_width::<9>(inputs),
        9 => hash_width::<10>(inputs),
        10 => hash_width::<11>(inputs),
        11 => hash_width::<12>(inputs),
        12 => hash_width::<13>(inputs),
        13 => hash_width::<14>(inputs),
        14 => hash_width::<15>(inputs),
        15 => hash_width::<16>(inputs),
        16 => hash_width::<17>(inputs),
        n => panic!("poseidon takes 1..=16 inputs, got {n}"),
    }
}

/// [`hash`] for exactly `T - 1` inputs, on wasm32: over 29-bit limbs
/// ([`limbs29::hash`], bytes to limbs and back with no `ark-ff` step, the
/// same result).
#[cfg(target_arch = "wasm32")]
fn hash_width<const T: usize>(inputs: &[Hash]) -> Result<Hash, usize> {
    debug_assert_eq!(inputs.len() + 1, T);
    limbs29::hash::<T>(inputs, optimised::get(T))
}

/// [`hash`] for exactly `T - 1` inputs, elsewhere: [`hash_ark`].
#[cfg(not(target_arch = "wasm32"))]
fn hash_width<const T: usize>(inputs: &[Hash]) -> Result<Hash, usize> {
    hash_ark::<T>(inputs)
}

/// [`hash`] of exactly `T - 1` inputs over `ark-ff`'s [`Fr`] (64-bit
/// limbs).
#[cfg(any(test, not(target_arch = "wasm32")))]
fn hash_ark<const T: usize>(inputs: &[Hash]) -> Result<Hash, usize> {
    use ark_ff::AdditiveGroup;
    debug_assert_eq!(inputs.len() + 1, T);
    let mut state = [Fr::ZERO; T];
    for (position, (cell, input)) in state[1..].iter_mut().zip(inputs).enumerate() {
        *cell = field_from_be(input).ok_or(position)?;
    }
    permute(&mut state, optimised::get(T));
    Ok(field_to_be(state[0]))
}

/// The Poseidon permutation of width `T` over `ark-ff`'s 64-bit limbs:
/// [`run_rounds`] over [`Fr`] itself.
#[cfg(any(test, not(target_arch = "wasm32")))]
#[inline(always)]
fn permute<const T: usize>(state: &mut [Fr; T], opt: &Optimised) {
    run_rounds(state, opt);
}

/// One cell of the permutation's state with the operations a round needs:
/// `Fr` itself, or [`limbs29`]'s 29-bit limbs on wasm32, each with its
/// constants in its own representation ([`Optimised::map`]). The round
/// schedule, [`run_rounds`], is written once over it.
pub(super) trait Cell: Copy {
    /// What the tables hold: a round constant or a matrix entry, made once.
    type Constant;
    /// cell <- cell + constant, for every cell.
    fn add_constants<const T: usize>(state: &mut [Self; T], constants: &[Self::Constant; T]);
    /// cell <- cell + constant.
    fn add_constant(&mut self, constant: &Self::Constant);
    /// x -> x^5.
    fn sbox(&mut self);
    /// state <- M * state.
    fn mix<const T: usize>(state: &mut [Self; T], matrix: &[[Self::Constant; T]]);
    /// state <- S * state for the sparse matrix `S = [[row], [column, I]]`:
    /// cell 0 becomes `row . state`, cell i > 0 gains `column[i] *
    /// state[0]` (`column[0]` is unused). About 2t multiplications instead
    /// of t^2.
    fn mix_sparse<const T: usize>(
        state: &mut [Self; T],
        row: &[Self::Constant; T],
        column: &[Self::Constant; T],
    );
}

/// The Poseidon permutation of width `T`, in the equivalent form of
/// [`optimised`]: the first full rounds as in the textbook (the last of them
/// with the matrix `P_0 * M`), then the partial rounds (S-box on cell 0, one
/// scalar constant, a sparse matrix), then the last full rounds. Everything
/// lives on the stack; the constants are only read.
#[inline(always)]
pub(super) fn run_rounds<C: Cell, const T: usize>(
    state: &mut [C; T],
    opt: &Optimised<C::Constant>,
) {
    let (first_constants, _) = opt.first_constants.as_chunks::<T>();
    let (mds, _) = opt.mds.as_chunks::<T>();
    let (entry_mds, _) = opt.entry_mds.as_chunks::<T>();
    let (entry_constants, _) = opt.entry_constants.as_chunks::<T>();
    let (sparse_rows, _) = opt.sparse_rows.as_chunks::<T>();
    let (sparse_columns, _) = opt.sparse_columns.as_chunks::<T>();
    let (last_constants, _) = opt.last_constants.as_chunks::<T>();
    debug_assert_eq!(first_constants.len(), FULL_ROUNDS / 2);
    debug_assert_eq!(last_constants.len(), FULL_ROUNDS / 2 - 1);
    debug_assert_eq!(mds.len(), T);
    debug_assert_eq!(entry_mds.len(), T);
    debug_assert_eq!(sparse_rows.len(), opt.partial_constants.len());
    debug_assert_eq!(sparse_columns.len(), opt.partial_constants.len());

    let Some((last_first, first_rounds)) = first_constants.split_last() else {
        unreachable!("FULL_ROUNDS / 2 >= 1")
    };
    for constants in first_rounds {
        C::add_constants(state, constants);
        state.iter_mut().for_each(C::sbox);
        C::mix(state, mds);
    }
    C::add_constants(state, last_first);
    state.iter_mut().for_each(C::sbox);
    C::mix(state, entry_mds);
    C::add_constants(state, &entry_constants[0]);

    let partial = opt
        .partial_constants
        .iter()
        .zip(sparse_rows)
        .zip(sparse_columns);
    for ((constant, row), column) in partial {
        state[0].sbox();
        state[0].add_constant(constant);
        C::mix_sparse(state, row, column);
    }

    // The first full round of the second half has no constants left.
    state.iter_mut().for_each(C::sbox);
    C::mix(state, mds);
    for constants in last_constants {
        C::add_constants(state, constants);
        state.iter_mut().for_each(C::sbox);
        C::mix(state, mds);
    }
}

impl Cell for Fr {
    type Constant = Fr;

    #[inline(always)]
    fn add_constants<const T: usize>(state: &mut [Fr; T], constants: &[Fr; T]) {
        for (cell, constant) in state.iter_mut().zip(constants) {
            *cell += constant;
        }
    }

    #[inline(always)]
    fn add_constant(&mut self, constant: &Fr) {
        *self += constant;
    }

    /// In two squarings and one multiplication.
    #[inline(always)]
    fn sbox(&mut self) {
        let x4 = self.square().square();
        *self *= x4;
    }

    /// `sum_of_products` accumulates several products before one
    /// Montgomery reduction (BN254 leaves two spare bits in the top limb),
    /// which is cheaper than reducing every product.
    #[inline(always)]
    fn mix<const T: usize>(state: &mut [Fr; T], matrix: &[[Fr; T]]) {
        let old = *state;
        for (cell, row) in state.iter_mut().zip(matrix) {
            *cell = Fr::sum_of_products(row, &old);
        }
    }

    #[inline(always)]
    fn mix_sparse<const T: usize>(state: &mut [Fr; T], row: &[Fr; T], column: &[Fr; T]) {
        let first = state[0];
        let new_first = Fr::sum_of_products(row, state);
        for (cell, entry) in state.iter_mut().zip(column).skip(1) {
            *cell += first * entry;
        }
        state[0] = new_first;
    }
}

/// A canonical big-endian value as a field element, or `None` if it is
/// `>=` the modulus.
pub(in crate::hash) fn field_from_be(bytes: &Hash) -> Option<Fr> {
    if !is_canonical_field_element(bytes) {
        return None;
    }
    // Limbs are little-endian u64s: the last 8 bytes are limb 0.
    let mut limbs = [0u64; 4];
    let (chunks, _) = bytes.as_chunks::<8>();
    for (limb, chunk) in limbs.iter_mut().rev().zip(chunks) {
        *limb = u64::from_be_bytes(*chunk);
    }
    Fr::from_bigint(BigInt::new(limbs))
}

/// A field element as its canonical 32-byte big-endian encoding.
pub(in crate::hash) fn field_to_be(value: Fr) -> Hash {
    let limbs = value.into_bigint().0;
    let mut out = [0u8; 32];
    let (chunks, _) = out.as_chunks_mut::<8>();
    for (chunk, limb) in chunks.iter_mut().zip(limbs.iter().rev()) {
        *chunk = limb.to_be_bytes();
    }
    out
}
