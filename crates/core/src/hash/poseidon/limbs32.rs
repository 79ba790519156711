//! The Poseidon permutation over BN254 field elements held as eight 32-bit
//! limbs, for WebAssembly: wasm32 has a native 64-bit multiply but no
//! 64x64->128-bit one, which `ark-ff`'s four 64-bit limbs need for every
//! partial product (emulated in several instructions each). Here every
//! partial product is one 32x32->64-bit multiply.
//!
//! The values are in the same Montgomery form as `ark-ff`'s (R = 2^256 for
//! both limb sizes), so a state and the constants move between the two by
//! reinterpreting limbs, and this permutation gives bit for bit what
//! [`super::permute`] gives: the tests run both on every width.

// Every `as u32` here keeps the low half of a 64-bit product or sum on
// purpose; the high half is carried separately.
#![allow(clippy::cast_possible_truncation)]

use std::marker::PhantomData;

use ark_bn254::Fr;
use ark_ff::BigInt;

use super::optimised::Optimised;
use super::{Cell, run_rounds};

/// A field element in Montgomery form, little-endian 32-bit limbs, always
/// below the modulus.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct F([u32; 8]);

/// The BN254 scalar modulus, little-endian 32-bit limbs.
const P: [u32; 8] = [
    0xf000_0001,
    0x43e1_f593,
    0x79b9_7091,
    0x2833_e848,
    0x8181_585d,
    0xb850_45b6,
    0xe131_a029,
    0x3064_4e72,
];

/// -P^-1 mod 2^32, for the Montgomery reduction.
const P_INV_NEG: u32 = {
    // Newton's iteration: each step doubles the correct low bits of P^-1.
    let mut inverse: u32 = 1;
    let mut step = 0;
    while step < 5 {
        inverse = inverse.wrapping_mul(2u32.wrapping_sub(P[0].wrapping_mul(inverse)));
        step += 1;
    }
    inverse.wrapping_neg()
};

impl F {
    #[inline(always)]
    fn from_fr(value: &Fr) -> F {
        let limbs = value.0.0;
        let mut out = [0u32; 8];
        for (pair, limb) in out.chunks_exact_mut(2).zip(limbs) {
            pair[0] = limb as u32;
            pair[1] = (limb >> 32) as u32;
        }
        F(out)
    }

    #[inline(always)]
    fn to_fr(self) -> Fr {
        let mut limbs = [0u64; 4];
        for (limb, pair) in limbs.iter_mut().zip(self.0.chunks_exact(2)) {
            *limb = u64::from(pair[0]) | (u64::from(pair[1]) << 32);
        }
        // Below the modulus and in Montgomery form: what ark-ff holds.
        ark_ff::Fp(BigInt::new(limbs), PhantomData)
    }

    /// `value - P` if `value >= P` (for values below 2P).
    #[inline(always)]
    fn reduce_once(value: [u32; 8]) -> [u32; 8] {
        let mut out = [0u32; 8];
        let mut borrow = 0u64;
        for ((o, v), p) in out.iter_mut().zip(value).zip(P) {
            let d = u64::from(v).wrapping_sub(u64::from(p)).wrapping_sub(borrow);
            *o = d as u32;
            borrow = (d >> 63) & 1;
        }
        if borrow == 0 { out } else { value }
    }

    #[inline(always)]
    fn add(self, other: F) -> F {
        // Both below P < 2^254: the sum fits in 256 bits, below 2P.
        let mut sum = [0u32; 8];
        let mut carry = 0u64;
        for ((s, a), b) in sum.iter_mut().zip(self.0).zip(other.0) {
            let t = u64::from(a) + u64::from(b) + carry;
            *s = t as u32;
            carry = t >> 32;
        }
        F(F::reduce_once(sum))
    }

    /// Montgomery multiplication (CIOS): `self * other / 2^256 mod P`.
    #[inline(always)]
    fn mul(self, other: F) -> F {
        let (a, b) = (self.0, other.0);
        let mut t = [0u32; 10];
        for bi in b {
            let mut carry = 0u64;
            for (tj, aj) in t.iter_mut().zip(a) {
                let s = u64::from(*tj) + u64::from(aj) * u64::from(bi) + carry;
                *tj = s as u32;
                carry = s >> 32;
            }
            let s = u64::from(t[8]) + carry;
            t[8] = s as u32;
            t[9] = (s >> 32) as u32;
            let m = t[0].wrapping_mul(P_INV_NEG);
            let mut carry = (u64::from(t[0]) + u64::from(m) * u64::from(P[0])) >> 32;
            for j in 1..8 {
                let s = u64::from(t[j]) + u64::from(m) * u64::from(P[j]) + carry;
                t[j - 1] = s as u32;
                carry = s >> 32;
            }
            let s = u64::from(t[8]) + carry;
            t[7] = s as u32;
            t[8] = t[9] + (s >> 32) as u32;
        }
        // P < 2^254: the result is below 2P and t[8] is zero.
        debug_assert_eq!(t[8], 0);
        let mut out = [0u32; 8];
        out.copy_from_slice(&t[..8]);
        F(F::reduce_once(out))
    }

    #[inline(always)]
    fn sbox(self) -> F {
        let x2 = self.mul(self);
        let x4 = x2.mul(x2);
        self.mul(x4)
    }
}

/// `row . state`.
#[inline(always)]
fn dot<const T: usize>(row: &[Fr; T], state: &[F; T]) -> F {
    let mut sum = F([0; 8]);
    for (entry, cell) in row.iter().zip(state) {
        sum = sum.add(F::from_fr(entry).mul(*cell));
    }
    sum
}

impl Cell for F {
    #[inline(always)]
    fn add_constants<const T: usize>(state: &mut [F; T], constants: &[Fr; T]) {
        for (cell, constant) in state.iter_mut().zip(constants) {
            cell.add_constant(constant);
        }
    }

    #[inline(always)]
    fn add_constant(&mut self, constant: &Fr) {
        *self = self.add(F::from_fr(constant));
    }

    #[inline(always)]
    fn sbox(&mut self) {
        *self = F::sbox(*self);
    }

    #[inline(always)]
    fn mix<const T: usize>(state: &mut [F; T], matrix: &[[Fr; T]]) {
        let old = *state;
        for (cell, row) in state.iter_mut().zip(matrix) {
            *cell = dot(row, &old);
        }
    }

    #[inline(always)]
    fn mix_sparse<const T: usize>(state: &mut [F; T], row: &[Fr; T], column: &[Fr; T]) {
        let first = state[0];
        let new_first = dot(row, state);
        for (cell, entry) in state.iter_mut().zip(column).skip(1) {
            *cell = cell.add(first.mul(F::from_fr(entry)));
        }
        state[0] = new_first;
    }
}

/// [`super::permute`] over 32-bit limbs: [`run_rounds`] over [`F`], the same
/// result.
pub(super) fn permute<const T: usize>(state: &mut [Fr; T], opt: &Optimised) {
    let mut s: [F; T] = std::array::from_fn(|i| F::from_fr(&state[i]));
    run_rounds(&mut s, opt);
    for (cell, value) in state.iter_mut().zip(s) {
        *cell = value.to_fr();
    }
}

#[cfg(test)]
mod tests {
    use ark_ff::{AdditiveGroup, Field};

    use super::*;

    fn element(seed: u64) -> Fr {
        // Products of small values spread over the whole field.
        let x = Fr::from(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        x.pow([seed % 97 + 3])
    }

    #[test]
    fn limbs32_arithmetic_equals_ark_ff() {
        let mut values = vec![Fr::ZERO, Fr::ONE, -Fr::ONE, -Fr::from(2u64)];
        values.extend((1..40).map(element));
        for a in &values {
            assert_eq!(F::from_fr(a).to_fr(), *a);
            for b in &values {
                assert_eq!(
                    F::from_fr(a).mul(F::from_fr(b)).to_fr(),
                    *a * b,
                    "{a} * {b}"
                );
                assert_eq!(
                    F::from_fr(a).add(F::from_fr(b)).to_fr(),
                    *a + b,
                    "{a} + {b}"
                );
            }
        }
    }

    fn check_width<const T: usize>() {
        for seed in 0..8u64 {
            let start: [Fr; T] = std::array::from_fn(|i| element(seed * 31 + i as u64));
            let mut ours = start;
            permute(&mut ours, super::super::optimised::get(T));
            let mut reference = start;
            super::super::permute_ark(&mut reference, super::super::optimised::get(T));
            assert_eq!(ours, reference, "t = {T}, seed {seed}");
        }
    }

    #[test]
    fn limbs32_permutation_equals_ark_ff_for_every_width() {
        check_width::<2>();
        check_width::<3>();
        check_width::<4>();
        check_width::<5>();
        check_width::<6>();
        check_width::<9>();
        check_width::<13>();
        check_width::<17>();
    }
}
