//! circomlib Poseidon over BN254 for 8 groups at once with AVX-512 IFMA:
//! the permutation of [`crate::hash::poseidon`] (same optimised form, same
//! constants) on 8 independent states, one state per 64-bit lane.
//!
//! **Representation.** A field element is 5 limbs of 52 bits (radix 2^52,
//! 260 bits), each limb in its own `zmm` register holding that limb of all
//! 8 lanes ([`F`]), in Montgomery form with R = 2^260. `vpmadd52luq` /
//! `vpmadd52huq` multiply the low 52 bits of two limbs and add the low /
//! high 52 bits of the 104-bit product to a 64-bit accumulator, so a
//! product needs no carries until the end and every input limb must be
//! below 2^52 ("normalised").
//!
//! **Multiplication.** Schoolbook products accumulate into 10 unreduced
//! 64-bit columns ([`Wide`]); one Montgomery reduction ([`reduce`]: five
//! word-by-word steps, each adding `m * p` with `m = column * (-p^-1) mod
//! 2^52` and carrying the cleared column up) turns a column sum `X` into
//! `(X + M p) / 2^260` with `M < 2^260`, i.e. below `X / 2^260 + p`. A sum of
//! products (a matrix row times the state) is reduced once, not per product.
//!
//! **Bounds (lazy reduction).** Nothing is reduced below `p` until the
//! output. With `U = 2^256`, `p < 0.19 U` and the constants canonical
//! (`< p`), writing `mont(X) < X / (16 U) + p` in units of `U`:
//! - a product of `a, b < 2 U` is below `4 U / 16 + p < 0.44 U`, so an
//!   S-box input `x < 2 U` gives `x^2 < 0.44 U`, `x^4 < 0.21 U`,
//!   `x^5 < 0.22 U`;
//! - a matrix row of at most 17 entries (`< p`) times values `< S` is below
//!   `17 p S / 16 + p < 0.21 S + 0.19 U`: for `S < U`, below `0.4 U`;
//! - adding a constant (`< p`) to a value `< 0.4 U` stays below `0.6 U`;
//! - a partial round adds `column * state[0]` (`state[0] < 0.22 U + p`,
//!   so the reduced product is `< 0.2 U`) to every other cell each round,
//!   for up to 68 rounds: unbounded growth, so after each addition a cell
//!   `>= 2p` (tested on the top limb alone, against a threshold just above
//!   `2p`) has `2p` subtracted ([`add_reduced`]). A cell enters the partial
//!   rounds below `0.6 U`, so it leaves each round below
//!   `max(2p + 2^208, 0.6 U + 0.2 U - 2p) < 0.43 U`.
//!
//! So every value in flight is below `U` and every multiplication input is
//! below `2 U`; a column of [`Wide`] gathers at most 17 products of 10
//! terms below 2^52 plus the reduction's 10 terms and a carry, below 2^61:
//! no 64-bit lane overflows. The output `mont(x * 1) < x / 2^260 + p` is at
//! most `p`, and equals `p` only for `x = 0 mod p`; one conditional
//! subtraction makes it canonical.
#![allow(unsafe_code)]
#![allow(
    clippy::needless_range_loop,
    reason = "carries and reduction steps index columns k, k + 1 and i + j: indices read as the arithmetic"
)]

use std::arch::x86_64::*;
use std::sync::OnceLock;

use ark_bn254::Fr;
use ark_ff::{Field, PrimeField};

use crate::hash::Hash;
use crate::hash::poseidon::optimised::{self, Optimised};

/// States per call: one per 64-bit lane of a `zmm` register.
pub(super) const LANES: usize = 8;

/// One field element per lane: limb `k` of lane `l` is lane `l` of `F[k]`.
type F = [__m512i; 5];

/// One field element (a constant) as 5 limbs of 52 bits, least significant
/// first.
type Limbs = [u64; 5];

const MASK: u64 = (1 << 52) - 1;

/// A little-endian 4x64-bit integer as 5 limbs of 52 bits.
const fn to_radix52(x: [u64; 4]) -> Limbs {
    [
        x[0] & MASK,
        (x[0] >> 52 | x[1] << 12) & MASK,
        (x[1] >> 40 | x[2] << 24) & MASK,
        (x[2] >> 28 | x[3] << 36) & MASK,
        x[3] >> 16,
    ]
}

/// 5 normalised limbs of 52 bits (the value below 2^256) as a
/// little-endian 4x64-bit integer.
const fn from_radix52(x: Limbs) -> [u64; 4] {
    [
        x[0] | x[1] << 52,
        x[1] >> 12 | x[2] << 40,
        x[2] >> 24 | x[3] << 28,
        x[3] >> 36 | x[4] << 16,
    ]
}

/// The modulus as 4x64 bits.
const MODULUS: [u64; 4] = <Fr as PrimeField>::MODULUS.0;

/// The modulus in radix 2^52.
const P: Limbs = to_radix52(MODULUS);

/// `2p` in radix 2^52 (`2p < 2^255`).
const TWO_P: Limbs = to_radix52([
    MODULUS[0] << 1,
    MODULUS[1] << 1 | MODULUS[0] >> 63,
    MODULUS[2] << 1 | MODULUS[1] >> 63,
    MODULUS[3] << 1 | MODULUS[2] >> 63,
]);

/// A normalised value whose top limb is at least this is at least `2p`
/// (`2p`'s low limbs are not all zero, so its top limb plus one is a bound
/// from above).
const TWO_P_TOP_THRESHOLD: u64 = TWO_P[4] + 1;

/// `-p^-1 mod 2^52`, by Newton's iteration for the inverse mod 2^64 (each
/// step doubles the correct low bits; `p` is odd so `p` is its own inverse
/// to 3 bits).
const P_INV_NEG: u64 = {
    let mut inverse = MODULUS[0];
    let mut step = 0;
    while step < 5 {
        inverse = inverse.wrapping_mul(2u64.wrapping_sub(MODULUS[0].wrapping_mul(inverse)));
        step += 1;
    }
    inverse.wrapping_neg() & MASK
};

/// Whether this CPU can run the kernel.
pub(super) fn is_supported() -> bool {
    is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512ifma")
}

/// `R = 2^260 mod p` as an `Fr`: multiplying a value by it and taking the
/// canonical integer gives the value's radix-2^52 Montgomery form.
fn montgomery_factor() -> Fr {
    Fr::from(2u64).pow([260])
}

/// `R^2 mod p = 2^520 mod p`: the Montgomery product with it enters
/// Montgomery form.
fn r_squared() -> Limbs {
    static R2: OnceLock<Limbs> = OnceLock::new();
    *R2.get_or_init(|| {
        let r = montgomery_factor();
        to_radix52((r * r).into_bigint().0)
    })
}

/// The optimised constants of one width in radix-2^52 Montgomery form,
/// laid out as in [`Optimised`].
#[derive(Debug)]
pub(super) struct Tables {
    first_constants: Box<[Limbs]>,
    mds: Box<[Limbs]>,
    entry_mds: Box<[Limbs]>,
    entry_constants: Box<[Limbs]>,
    partial_constants: Box<[Limbs]>,
    sparse_rows: Box<[Limbs]>,
    sparse_columns: Box<[Limbs]>,
    last_constants: Box<[Limbs]>,
}

impl Tables {
    fn convert(opt: &Optimised) -> Tables {
        let factor = montgomery_factor();
        let convert = |values: &[Fr]| -> Box<[Limbs]> {
            values
                .iter()
                .map(|value| to_radix52((*value * factor).into_bigint().0))
                .collect()
        };
        Tables {
            first_constants: convert(&opt.first_constants),
            mds: convert(&opt.mds),
            entry_mds: convert(&opt.entry_mds),
            entry_constants: convert(&opt.entry_constants),
            partial_constants: convert(&opt.partial_constants),
            sparse_rows: convert(&opt.sparse_rows),
            sparse_columns: convert(&opt.sparse_columns),
            last_constants: convert(&opt.last_constants),
        }
    }
}

/// The tables of `width` (2..=17), converted on the first call for it.
pub(super) fn tables(width: usize) -> &'static Tables {
    static CACHE: [OnceLock<Tables>; 16] = [const { OnceLock::new() }; 16];
    CACHE[width - 2].get_or_init(|| Tables::convert(optimised::get(width)))
}

/// A canonical big-endian field element as radix-2^52 limbs (not in
/// Montgomery form).
fn limbs_from_be(bytes: &Hash) -> Limbs {
    let mut words = [0u64; 4];
    let (chunks, _) = bytes.as_chunks::<8>();
    for (word, chunk) in words.iter_mut().rev().zip(chunks) {
        *word = u64::from_be_bytes(*chunk);
    }
    to_radix52(words)
}

/// Normalised limbs of a value at most `p` as the canonical big-endian
/// encoding (`p` itself becomes 0).
fn be_from_limbs(limbs: Limbs) -> Hash {
    let mut words = from_radix52(limbs);
    if words == MODULUS {
        words = [0; 4];
    }
    debug_assert!(words.iter().rev().lt(MODULUS.iter().rev()), "not reduced");
    let mut out = [0u8; 32];
    let (chunks, _) = out.as_chunks_mut::<8>();
    for (chunk, word) in chunks.iter_mut().zip(words.iter().rev()) {
        *chunk = word.to_be_bytes();
    }
    out
}

/// Hashes 8 groups of `T - 1` canonical children (`children`, group after
/// group) into `out`.
///
/// # Panics
/// If this CPU lacks avx512f or avx512ifma, or the slices have other
/// lengths. The children must be canonical (the caller checks).
pub(super) fn hash_8<const T: usize>(children: &[Hash], out: &mut [Hash; LANES]) {
    assert!(is_supported(), "the IFMA Poseidon kernel needs avx512ifma");
    assert_eq!(children.len(), LANES * (T - 1));
    let tables = tables(T);
    let r2 = r_squared();
    // SAFETY: the assert above checked that this CPU has every feature
    // `hash_8_ifma` enables.
    unsafe { hash_8_ifma::<T>(children, out, tables, &r2) }
}

#[target_feature(enable = "avx512f,avx512ifma")]
fn hash_8_ifma<const T: usize>(
    children: &[Hash],
    out: &mut [Hash; LANES],
    tables: &Tables,
    r2: &Limbs,
) {
    let zero = _mm512_setzero_si512();
    let mut state = [[zero; 5]; T];
    for (position, cell) in state.iter_mut().enumerate().skip(1) {
        let lanes: [Limbs; LANES] =
            std::array::from_fn(|lane| limbs_from_be(&children[lane * (T - 1) + position - 1]));
        *cell = to_montgomery(&load(&lanes), r2);
    }
    permute(&mut state, tables);
    let lanes = store(&from_montgomery(&state[0]));
    for (hash, limbs) in out.iter_mut().zip(lanes) {
        *hash = be_from_limbs(limbs);
    }
}

/// 8 lanes of limbs as an [`F`].
#[target_feature(enable = "avx512f")]
fn load(lanes: &[Limbs; LANES]) -> F {
    std::array::from_fn(|limb| {
        let column: [u64; LANES] = std::array::from_fn(|lane| lanes[lane][limb]);
        // SAFETY: `column` is 64 readable bytes; an unaligned load has no
        // alignment requirement.
        unsafe { _mm512_loadu_si512(column.as_ptr().cast()) }
    })
}

/// An [`F`] as 8 lanes of limbs.
#[target_feature(enable = "avx512f")]
fn store(x: &F) -> [Limbs; LANES] {
    let mut columns = [[0u64; LANES]; 5];
    for (column, limb) in columns.iter_mut().zip(x) {
        // SAFETY: `column` is 64 writable bytes; an unaligned store has no
        // alignment requirement.
        unsafe { _mm512_storeu_si512(column.as_mut_ptr().cast(), *limb) }
    }
    std::array::from_fn(|lane| std::array::from_fn(|limb| columns[limb][lane]))
}

/// A constant in every lane.
#[inline]
#[target_feature(enable = "avx512f")]
fn splat(c: &Limbs) -> F {
    c.map(|limb| _mm512_set1_epi64(limb as i64))
}

/// `x R mod p` (below `p + 1`) for canonical lanes `x`.
#[target_feature(enable = "avx512f,avx512ifma")]
fn to_montgomery(x: &F, r2: &Limbs) -> F {
    mul(x, &splat(r2))
}

/// `x / R mod p`, at most `p` (see the module doc), normalised.
#[target_feature(enable = "avx512f,avx512ifma")]
fn from_montgomery(x: &F) -> F {
    let mut wide = Wide::zero();
    wide.lo[..5].copy_from_slice(x);
    normalise(reduce(&wide))
}

/// An unreduced sum of products: `lo[k]` gathers low halves of column `k`,
/// `hi[k]` high halves of column `k + 1`. Two accumulators per column
/// halve the chain of dependent multiply-adds a column waits on.
struct Wide {
    lo: [__m512i; 9],
    hi: [__m512i; 9],
}

impl Wide {
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn zero() -> Wide {
        let zero = _mm512_setzero_si512();
        Wide {
            lo: [zero; 9],
            hi: [zero; 9],
        }
    }

    /// The 10 column sums `lo[k] + hi[k - 1]`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn columns(&self) -> [__m512i; 10] {
        let mut t = [_mm512_setzero_si512(); 10];
        t[0] = self.lo[0];
        for k in 1..9 {
            t[k] = _mm512_add_epi64(self.lo[k], self.hi[k - 1]);
        }
        t[9] = self.hi[8];
        t
    }

    /// `self += a * b` (limbs of `a` and `b` below 2^52).
    #[inline]
    #[target_feature(enable = "avx512f,avx512ifma")]
    fn add_product(&mut self, a: &F, b: &F) {
        for (i, a) in a.iter().enumerate() {
            for (j, b) in b.iter().enumerate() {
                self.lo[i + j] = _mm512_madd52lo_epu64(self.lo[i + j], *a, *b);
                self.hi[i + j] = _mm512_madd52hi_epu64(self.hi[i + j], *a, *b);
            }
        }
    }
}

/// Montgomery reduction of `wide` (see the module doc): `(X + M p) / 2^260`
/// as 5 limbs that may exceed 52 bits (carries not yet propagated).
#[inline]
#[target_feature(enable = "avx512f,avx512ifma")]
fn reduce(wide: &Wide) -> F {
    reduce_columns(wide.columns())
}

/// [`reduce`] of the 10 column sums.
#[inline]
#[target_feature(enable = "avx512f,avx512ifma")]
fn reduce_columns(mut t: [__m512i; 10]) -> F {
    let zero = _mm512_setzero_si512();
    let p = splat(&P);
    let inverse = _mm512_set1_epi64(P_INV_NEG as i64);
    for i in 0..5 {
        // m = t[i] * (-p^-1) mod 2^52 makes t[i] + m p[0] = 0 mod 2^52.
        let m = _mm512_madd52lo_epu64(zero, t[i], inverse);
        for j in 0..5 {
            t[i + j] = _mm512_madd52lo_epu64(t[i + j], m, p[j]);
            t[i + j + 1] = _mm512_madd52hi_epu64(t[i + j + 1], m, p[j]);
        }
        t[i + 1] = _mm512_add_epi64(t[i + 1], _mm512_srli_epi64::<52>(t[i]));
    }
    [t[5], t[6], t[7], t[8], t[9]]
}

/// Propagates carries so limbs 0..4 are below 2^52 (the top limb keeps
/// the rest: every value here is below 2^257, see the module doc).
#[inline]
#[target_feature(enable = "avx512f")]
fn normalise(mut x: F) -> F {
    let mask = _mm512_set1_epi64(MASK as i64);
    for k in 0..4 {
        x[k + 1] = _mm512_add_epi64(x[k + 1], _mm512_srli_epi64::<52>(x[k]));
        x[k] = _mm512_and_si512(x[k], mask);
    }
    x
}

/// `a * b / R` (a Montgomery product), normalised.
#[inline]
#[target_feature(enable = "avx512f,avx512ifma")]
fn mul(a: &F, b: &F) -> F {
    let mut wide = Wide::zero();
    wide.add_product(a, b);
    normalise(reduce(&wide))
}

/// `a^2 / R`, normalised: each product `a_i a_j` (i < j) once, the
/// columns doubled by a shift, then the 5 squares `a_i^2`: 30
/// multiply-adds where [`mul`] takes 50. Same value, same bounds; a column
/// holds at most 3 cross products (6 halves) before doubling, 2^56 at most.
#[inline]
#[target_feature(enable = "avx512f,avx512ifma")]
fn square(a: &F) -> F {
    let mut cross = Wide::zero();
    for i in 0..5 {
        for j in i + 1..5 {
            cross.lo[i + j] = _mm512_madd52lo_epu64(cross.lo[i + j], a[i], a[j]);
            cross.hi[i + j] = _mm512_madd52hi_epu64(cross.hi[i + j], a[i], a[j]);
        }
    }
    let mut t = cross.columns();
    // Cross products land in columns 1..=8 (low halves at i + j, high
    // halves one up); 0 and 9 stay zero.
    for column in &mut t[1..9] {
        *column = _mm512_slli_epi64::<1>(*column);
    }
    for i in 0..5 {
        t[2 * i] = _mm512_madd52lo_epu64(t[2 * i], a[i], a[i]);
        t[2 * i + 1] = _mm512_madd52hi_epu64(t[2 * i + 1], a[i], a[i]);
    }
    normalise(reduce_columns(t))
}

/// x -> x^5 in two squarings and one multiplication.
#[inline]
#[target_feature(enable = "avx512f,avx512ifma")]
fn sbox(x: &mut F) {
    let x2 = square(x);
    let x4 = square(&x2);
    *x = mul(x, &x4);
}

/// `x + c`, normalised (`x` normalised, `c` canonical).
#[inline]
#[target_feature(enable = "avx512f")]
fn add_constant(x: &F, c: &Limbs) -> F {
    let c = splat(c);
    normalise(std::array::from_fn(|k| _mm512_add_epi64(x[k], c[k])))
}

/// `x + y` for `x` normalised and `y` unnormalised, normalised, then less
/// `2p` where it is at least `2p` (see the module doc's partial rounds).
#[inline]
#[target_feature(enable = "avx512f")]
fn add_reduced(x: &F, y: &F) -> F {
    let mut sum = normalise(std::array::from_fn(|k| _mm512_add_epi64(x[k], y[k])));
    let at_least = _mm512_cmpge_epu64_mask(sum[4], _mm512_set1_epi64(TWO_P_TOP_THRESHOLD as i64));
    let two_p = splat(&TWO_P);
    for k in 0..5 {
        sum[k] = _mm512_mask_sub_epi64(sum[k], at_least, sum[k], two_p[k]);
    }
    // Limbs may now be negative (as i64, above -2^52); an arithmetic shift
    // carries the borrow. The whole is non-negative, so the top limb is.
    let mask = _mm512_set1_epi64(MASK as i64);
    for k in 0..4 {
        sum[k + 1] = _mm512_add_epi64(sum[k + 1], _mm512_srai_epi64::<52>(sum[k]));
        sum[k] = _mm512_and_si512(sum[k], mask);
    }
    sum
}

#[inline]
#[target_feature(enable = "avx512f,avx512ifma")]
fn add_constants<const T: usize>(state: &mut [F; T], constants: &[Limbs; T]) {
    for (cell, constant) in state.iter_mut().zip(constants) {
        *cell = add_constant(cell, constant);
    }
}

/// `state <- M state` for a dense `T x T` matrix: one reduction per cell.
#[inline]
#[target_feature(enable = "avx512f,avx512ifma")]
fn mix<const T: usize>(state: &mut [F; T], matrix: &[[Limbs; T]]) {
    let old = *state;
    for (cell, row) in state.iter_mut().zip(matrix) {
        *cell = dot(row, &old);
    }
}

/// `row . values`, reduced once, normalised.
#[inline]
#[target_feature(enable = "avx512f,avx512ifma")]
fn dot<const T: usize>(row: &[Limbs; T], values: &[F; T]) -> F {
    let mut wide = Wide::zero();
    for (entry, value) in row.iter().zip(values) {
        wide.add_product(value, &splat(entry));
    }
    normalise(reduce(&wide))
}

#[target_feature(enable = "avx512f,avx512ifma")]
fn full_round<const T: usize>(state: &mut [F; T], matrix: &[[Limbs; T]]) {
    for cell in state.iter_mut() {
        sbox(cell);
    }
    mix(state, matrix);
}

/// One partial round of the optimised form: S-box on cell 0, its scalar
/// constant, then the sparse matrix `[[row], [column, I]]`.
#[target_feature(enable = "avx512f,avx512ifma")]
fn partial_round<const T: usize>(
    state: &mut [F; T],
    constant: &Limbs,
    row: &[Limbs; T],
    column: &[Limbs; T],
) {
    sbox(&mut state[0]);
    state[0] = add_constant(&state[0], constant);
    let first = state[0];
    let new_first = dot(row, state);
    for (cell, entry) in state.iter_mut().zip(column).skip(1) {
        let mut wide = Wide::zero();
        wide.add_product(&first, &splat(entry));
        *cell = add_reduced(cell, &reduce(&wide));
    }
    state[0] = new_first;
}

/// The permutation exactly as the scalar `permute` of
/// [`crate::hash::poseidon`] runs it, on 8 states.
#[target_feature(enable = "avx512f,avx512ifma")]
fn permute<const T: usize>(state: &mut [F; T], tables: &Tables) {
    let (first_constants, _) = tables.first_constants.as_chunks::<T>();
    let (mds, _) = tables.mds.as_chunks::<T>();
    let (entry_mds, _) = tables.entry_mds.as_chunks::<T>();
    let (entry_constants, _) = tables.entry_constants.as_chunks::<T>();
    let (sparse_rows, _) = tables.sparse_rows.as_chunks::<T>();
    let (sparse_columns, _) = tables.sparse_columns.as_chunks::<T>();
    let (last_constants, _) = tables.last_constants.as_chunks::<T>();

    let Some((last_first, first_rounds)) = first_constants.split_last() else {
        unreachable!("at least one full round in the first half")
    };
    for constants in first_rounds {
        add_constants(state, constants);
        full_round(state, mds);
    }
    add_constants(state, last_first);
    full_round(state, entry_mds);
    add_constants(state, &entry_constants[0]);

    let partial = tables
        .partial_constants
        .iter()
        .zip(sparse_rows)
        .zip(sparse_columns);
    for ((constant, row), column) in partial {
        partial_round(state, constant, row, column);
    }

    // The first full round of the second half has no constants left.
    full_round(state, mds);
    for constants in last_constants {
        add_constants(state, constants);
        full_round(state, mds);
    }
}

#[cfg(test)]
mod tests {
    use ark_ff::{BigInt, BigInteger};

    use super::*;

    fn fr_from_limbs(limbs: Limbs) -> Fr {
        Fr::from_bigint(BigInt::new(from_radix52(limbs))).expect("canonical")
    }

    fn limbs_from_fr(x: Fr) -> Limbs {
        to_radix52(x.into_bigint().0)
    }

    /// `2^253 + k` and `p - 1 - k` style edge values, 0 and 1, then
    /// pseudo-random canonical values.
    fn sample_values() -> Vec<Fr> {
        let mut values = vec![
            Fr::from(0u64),
            Fr::from(1u64),
            -Fr::from(1u64),
            -Fr::from(2u64),
            Fr::from(2u64).pow([253]),
            Fr::from(2u64).pow([253]) - Fr::from(1u64),
            Fr::from(2u64).pow([253]) + Fr::from(1u64),
            Fr::from(u64::MAX),
        ];
        let mut x = 0x243f_6a88_85a3_08d3u64;
        while values.len() < 64 {
            let mut words = [0u64; 4];
            for word in &mut words {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *word = x;
            }
            words[3] >>= 2;
            if let Some(value) = Fr::from_bigint(BigInt::new(words)) {
                values.push(value);
            }
        }
        values
    }

    #[test]
    fn radix52_round_trips_and_knows_the_modulus() {
        assert_eq!(from_radix52(P), MODULUS);
        assert!(P.iter().all(|&limb| limb <= MASK));
        for value in sample_values() {
            let limbs = limbs_from_fr(value);
            assert!(limbs.iter().all(|&limb| limb <= MASK), "{value}");
            assert_eq!(fr_from_limbs(limbs), value);
        }
        // p - 1 and 0 through the byte encoding.
        let mut p_minus_one = crate::hash::BN254_MODULUS_BE;
        p_minus_one[31] -= 1;
        assert_eq!(be_from_limbs(limbs_from_be(&p_minus_one)), p_minus_one);
        assert_eq!(be_from_limbs(limbs_from_be(&[0; 32])), [0; 32]);
        // p itself (what a Montgomery exit of 0 may give) encodes as 0.
        assert_eq!(be_from_limbs(P), [0; 32]);
    }

    #[test]
    fn montgomery_constants_are_right() {
        // p * (-p^-1) = -1 mod 2^52.
        assert_eq!(MODULUS[0].wrapping_mul(P_INV_NEG) & MASK, MASK);
        let mut two_p = Fr::MODULUS;
        assert!(!two_p.add_with_carry(&Fr::MODULUS), "2p fits 256 bits");
        assert_eq!(from_radix52(TWO_P), two_p.0);
        assert!(TWO_P.iter().all(|&limb| limb <= MASK));
        let value = -Fr::from(5u64);
        assert_eq!(to_radix52((value * montgomery_factor()).into_bigint().0), {
            // value * 2^260 computed as value * 2^256 * 2^4.
            let shifted = value * Fr::from(2u64).pow([256]) * Fr::from(16u64);
            limbs_from_fr(shifted)
        });
    }

    fn skip_note() -> bool {
        if is_supported() {
            return false;
        }
        println!("note: this CPU has no avx512ifma; the IFMA Poseidon path was skipped");
        true
    }

    /// The integer of normalised limbs below 2^256, reduced mod p.
    fn residue(limbs: Limbs) -> Fr {
        assert!(
            limbs[..4].iter().all(|&limb| limb <= MASK),
            "not normalised"
        );
        assert!(limbs[4] < 1 << 48, "not below 2^256");
        let words = from_radix52(limbs);
        let bytes: Vec<u8> = words.iter().flat_map(|word| word.to_le_bytes()).collect();
        Fr::from_le_bytes_mod_order(&bytes)
    }

    #[test]
    fn add_reduced_keeps_the_residue_and_the_bound() {
        if skip_note() {
            return;
        }
        #[target_feature(enable = "avx512f,avx512ifma")]
        fn run(x: &[Limbs; LANES], y: &[Limbs; LANES]) -> [Limbs; LANES] {
            store(&add_reduced(&load(x), &load(y)))
        }
        let two_p = from_radix52(TWO_P);
        let below =
            |limbs: Limbs| -> bool { from_radix52(limbs).iter().rev().lt(two_p.iter().rev()) };
        // Around 2p and the top-limb threshold, 0, and the largest cell a
        // partial round can hold (just under 0.6 * 2^256).
        let mut threshold = [0u64; 5];
        threshold[4] = TWO_P_TOP_THRESHOLD;
        let mut threshold_less_one = [MASK; 5];
        threshold_less_one[4] = TWO_P_TOP_THRESHOLD - 1;
        let mut largest = [MASK; 5];
        largest[4] = (1 << 48) * 6 / 10;
        let mut two_p_less_one = TWO_P;
        two_p_less_one[0] -= 1;
        let xs = [
            [0; 5],
            TWO_P,
            two_p_less_one,
            threshold,
            threshold_less_one,
            largest,
            P,
            [1, 0, 0, 0, 0],
        ];
        // Addends: 0, 1, an unnormalised limb, about 0.2 * 2^256.
        let mut fifth = [MASK; 5];
        fifth[4] = (1 << 48) / 5;
        let ys = [[0; 5], [1, 0, 0, 0, 0], [1 << 53, 1 << 53, 0, 0, 0], fifth];
        for y in ys {
            let y_lanes = [y; LANES];
            // SAFETY: `skip_note` returned false: this CPU has the features
            // `run` enables.
            let got = unsafe { run(&xs, &y_lanes) };
            for (x, sum) in xs.iter().zip(got) {
                let want = residue(*x) + residue(normalised(y));
                assert_eq!(residue(sum), want, "x {x:?} y {y:?}");
                // Below 2p + 2^208 + the addend: never above 0.6 * 2^256 here.
                assert!(sum[4] < (1 << 48) * 6 / 10 + 1, "x {x:?} y {y:?}: {sum:?}");
                if below(*x) && y == [0; 5] {
                    assert_eq!(sum, *x, "nothing below 2p is touched");
                }
            }
        }
    }

    /// Limbs with carries propagated (scalar), for building expectations.
    fn normalised(mut x: Limbs) -> Limbs {
        for k in 0..4 {
            x[k + 1] += x[k] >> 52;
            x[k] &= MASK;
        }
        x
    }

    #[test]
    fn montgomery_round_trip_and_products_match_ark() {
        if skip_note() {
            return;
        }
        #[target_feature(enable = "avx512f,avx512ifma")]
        fn round_trip_and_product(values: &[Fr], factor: Fr) -> (Vec<Fr>, Vec<Fr>) {
            let lanes: [Limbs; LANES] =
                std::array::from_fn(|lane| limbs_from_fr(values[lane % values.len()]));
            let r2 = r_squared();
            let x = to_montgomery(&load(&lanes), &r2);
            let y = to_montgomery(&splat(&limbs_from_fr(factor)), &r2);
            let back = store(&from_montgomery(&x));
            let product = store(&from_montgomery(&mul(&x, &y)));
            let squared = store(&from_montgomery(&square(&x)));
            let squared_by_mul = store(&from_montgomery(&mul(&x, &x)));
            assert_eq!(squared, squared_by_mul, "square equals mul(x, x)");
            let decode = |limbs: [Limbs; LANES]| -> Vec<Fr> {
                limbs
                    .iter()
                    .take(values.len())
                    .map(|limbs| Fr::from_be_bytes_mod_order(&be_from_limbs(*limbs)))
                    .collect()
            };
            (decode(back), decode(product))
        }
        let values = sample_values();
        for factor in [Fr::from(0u64), Fr::from(1u64), -Fr::from(1u64), values[9]] {
            let (mut back, mut got) = (Vec::new(), Vec::new());
            for chunk in values.chunks(LANES) {
                // SAFETY: `skip_note` returned false: this CPU has the
                // features the function enables.
                let (round_trip, product) = unsafe { round_trip_and_product(chunk, factor) };
                back.extend(round_trip);
                got.extend(product);
            }
            assert_eq!(back, values);
            let want: Vec<Fr> = values.iter().map(|value| *value * factor).collect();
            assert_eq!(got, want, "factor {factor}");
        }
    }
}
