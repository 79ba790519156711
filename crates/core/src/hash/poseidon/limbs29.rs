//! The Poseidon permutation over BN254 field elements held as nine 29-bit
//! limbs in 64-bit words, for WebAssembly: wasm32 has a native 64-bit
//! multiply but no 64x64->128-bit one, which `ark-ff`'s four 64-bit limbs
//! need for every partial product (emulated in several instructions each).
//! Here every partial product is one 64-bit multiply of two values below
//! 2^29, and the product (below 2^58) is added to a 64-bit column with no
//! carry: 64 of them fit, so carries are propagated once per
//! multiplication, not once per partial product as with 32-bit limbs.
//!
//! **Representation.** Nine limbs of 29 bits (radix 2^29, 261 bits), each
//! below 2^29 ("normalised"), in Montgomery form with R = 2^261. [`hash`]
//! reads its inputs' bytes straight into limbs and enters the form with one
//! multiplication by `2^522 mod p`; only cell 0 leaves it, with one
//! multiplication by 1, so no value passes through `ark-ff` (whose 64-bit
//! limbs cost as much here as they do in the permutation). The constants
//! come from `ark-ff` (R = 2^256), entering with one multiplication by
//! `2^266 mod p` ([`F::from_fr`]), once per width ([`tables`]).
//!
//! **Multiplication.** [`F::mul`] and [`dot`] run the word-by-word
//! Montgomery reduction over unreduced columns: per limb `a_i` of the
//! left operand(s), add `a_i * b` (for a matrix row, `a_k,i * b_k` for
//! every entry `k`) into the columns, then `m * p` with `m = column_0 *
//! (-p^-1) mod 2^29`, which clears column 0; shift the columns down one
//! limb, carrying column 0's high bits into the new column 0. The result
//! is `(X + M p) / 2^261` with `M < 2^261`: below `X / 2^261 + p`. A matrix
//! row is reduced once, not once per product.
//!
//! **Bounds (lazy reduction).** Every value in flight is below `4p`, the
//! constants below `p`, and `p / 2^261 < 2^-7.4`:
//! - a product of `a, b < 4p` is below `16 p^2 / 2^261 + p < 1.1 p`;
//! - a matrix row of at most 17 entries (`< p`) times values `< 4p` is
//!   below `68 p^2 / 2^261 + p < 1.41 p`;
//! - a round constant is only ever added to a product or a row (the
//!   schedule in [`run_rounds`]), so the sum is below `2.41 p` and is not
//!   reduced at all ([`F::add_unreduced`]);
//! - a sparse matrix's column entry times cell 0, added to a cell `< 4p`,
//!   is below `5.1 p` and has `2p` subtracted when at least `2p`, so below
//!   `4p` again ([`F::mul_add`], which adds the cell into the product's
//!   columns before their one carry pass).
//!
//! So nothing is reduced below `p` until the output ([`F::canonical`]). A
//! column gathers at most 9 products per operand pair and 9 of the
//! reduction's, each below 2^58, and carries below 2^36: for rows of up to
//! 6 entries, 63 products, below 2^64; longer rows (widths 7..17) propagate
//! the carries after every limb step, so a column gathers at most 18
//! products on top of a normalised limb. Debug builds (the tests) check
//! every addition for overflow.

use std::sync::OnceLock;

use ark_bn254::Fr;
use ark_ff::Field;

use super::optimised::Optimised;
use super::params::{MAX_WIDTH, MIN_WIDTH};
use super::{Cell, Hash, is_canonical_field_element, run_rounds};

/// Limbs per element.
const LIMBS: usize = 9;
/// Bits per limb.
const BITS: u32 = 29;
/// The low `BITS` bits.
const MASK: u64 = (1 << BITS) - 1;

/// A field element in Montgomery form (R = 2^261), nine normalised 29-bit
/// limbs, little-endian, below `2p` (not necessarily below `p`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct F([u64; LIMBS]);

/// 256 bits in four little-endian 64-bit words as nine 29-bit limbs.
const fn from_words(words: [u64; 4]) -> [u64; LIMBS] {
    let mut out = [0u64; LIMBS];
    let mut i = 0;
    while i < LIMBS {
        let bit = i * BITS as usize;
        let (word, shift) = (bit / 64, bit % 64);
        let mut limb = words[word] >> shift;
        if shift + BITS as usize > 64 && word + 1 < 4 {
            limb |= words[word + 1] << (64 - shift);
        }
        out[i] = limb & MASK;
        i += 1;
    }
    out
}

/// Nine normalised 29-bit limbs of a value below 2^256 as four 64-bit
/// words.
fn to_words(limbs: [u64; LIMBS]) -> [u64; 4] {
    let mut words = [0u64; 4];
    for (i, limb) in limbs.into_iter().enumerate() {
        let bit = i * BITS as usize;
        let (word, shift) = (bit / 64, bit % 64);
        words[word] |= limb << shift;
        if shift + BITS as usize > 64 && word + 1 < 4 {
            words[word + 1] |= limb >> (64 - shift);
        }
    }
    words
}

/// The BN254 scalar modulus.
const P: [u64; LIMBS] = from_words([
    0x43e1_f593_f000_0001,
    0x2833_e848_79b9_7091,
    0xb850_45b6_8181_585d,
    0x3064_4e72_e131_a029,
]);

/// `2p`, the bound every value in flight stays below.
const TWO_P: [u64; LIMBS] = {
    let mut out = [0u64; LIMBS];
    let mut carry = 0;
    let mut i = 0;
    while i < LIMBS {
        let sum = 2 * P[i] + carry;
        out[i] = sum & MASK;
        carry = sum >> BITS;
        i += 1;
    }
    out
};

/// -p^-1 mod 2^29, for the Montgomery reduction.
const P_INV_NEG: u64 = {
    // Newton's iteration: each step doubles the correct low bits of p^-1.
    let mut inverse: u64 = 1;
    let mut step = 0;
    while step < 6 {
        inverse = inverse.wrapping_mul(2u64.wrapping_sub(P[0].wrapping_mul(inverse)));
        step += 1;
    }
    inverse.wrapping_neg() & MASK
};

/// Columns with unpropagated carries: `sum columns[i] 2^(29 i)`.
type Columns = [u64; LIMBS];

/// Clears column 0 by adding `m p` and divides by 2^29: column 0's carry
/// moves into the next column, which becomes the new column 0. With
/// `spread`, then propagates every carry (for the longest rows, module
/// doc).
#[inline(always)]
fn reduce_step(mut t: Columns, spread: bool) -> Columns {
    let m = t[0].wrapping_mul(P_INV_NEG) & MASK;
    for (column, p) in t.iter_mut().zip(P) {
        *column += m * p;
    }
    let carry = t[0] >> BITS;
    let shifted = [t[1] + carry, t[2], t[3], t[4], t[5], t[6], t[7], t[8], 0];
    if spread { propagate(shifted) } else { shifted }
}

/// Propagates every column's carry into the next: normalised limbs. The
/// top column keeps what it holds (below 2^29 for any value below 2^261).
#[inline(always)]
fn propagate(mut t: Columns) -> Columns {
    for i in 0..LIMBS - 1 {
        t[i + 1] += t[i] >> BITS;
        t[i] &= MASK;
    }
    t
}

/// What a Montgomery product adds at each limb step.
trait Products {
    /// Adds the products of limb `i` into the columns, then
    /// [`reduce_step`].
    fn step(&self, t: Columns, i: usize) -> Columns;
}

/// The nine limb steps of a Montgomery product. Each step is called with a
/// literal `i` and inlined (`#[inline(always)]` on every [`Products::step`];
/// a closure here would be left out of line), so every column index is a
/// constant and the columns stay in locals: a loop over `i` keeps them in
/// memory.
/// `addend` (normalised limbs) is added to the result's columns before the
/// last carry pass: the result is the product plus `addend`, for the cost
/// of nine additions.
#[inline(always)]
fn montgomery(products: &impl Products, addend: [u64; LIMBS]) -> F {
    let mut t: Columns = [0; LIMBS];
    t = products.step(t, 0);
    t = products.step(t, 1);
    t = products.step(t, 2);
    t = products.step(t, 3);
    t = products.step(t, 4);
    t = products.step(t, 5);
    t = products.step(t, 6);
    t = products.step(t, 7);
    t = products.step(t, 8);
    for (column, limb) in t.iter_mut().zip(addend) {
        *column += limb;
    }
    let t = propagate(t);
    debug_assert!(t[LIMBS - 1] <= MASK);
    F(t)
}

/// The products of [`dot`].
struct Dot<'a, const T: usize> {
    row: &'a [F; T],
    state: &'a [F; T],
}

impl<const T: usize> Products for Dot<'_, T> {
    #[inline(always)]
    fn step(&self, mut t: Columns, i: usize) -> Columns {
        // At step i the columns are 2^(29 i) apart from the product's:
        // limb i times limb j lands in column j.
        for (entry, cell) in self.row.iter().zip(self.state) {
            let a = entry.0[i];
            for (column, b) in t.iter_mut().zip(cell.0) {
                *column += a * b;
            }
        }
        // Without carries, a column gathers 9 (T + 1) products below 2^58.
        reduce_step(t, 9 * (T + 1) >= 64)
    }
}

/// `row . state / 2^261 mod p`, reduced once: below `1.41 p` for a row of
/// at most 17 entries below `p` and a state below `4p` (module doc).
#[inline(never)]
fn dot<const T: usize>(row: &[F; T], state: &[F; T]) -> F {
    montgomery(&Dot { row, state }, [0; LIMBS])
}

/// `a * b / 2^261 + addend mod p`, not reduced: below `addend + 1.1 p`
/// (`a`, `b` below `4p`).
#[inline(never)]
fn mul_add_unreduced(a: F, b: F, addend: F) -> F {
    montgomery(
        &Dot {
            row: &[a],
            state: &[b],
        },
        addend.0,
    )
}

/// The products of [`square`].
struct Square(F);

impl Products for Square {
    #[inline(always)]
    fn step(&self, mut t: Columns, i: usize) -> Columns {
        // Step i adds limb i's products with limbs i.. (those with the
        // limbs below were added, doubled, at their own steps): a column
        // gathers at most 5 doubled products and 9 of the reduction's.
        let limbs = self.0.0;
        let a = limbs[i];
        t[i] += a * a;
        let twice = a << 1;
        for j in i + 1..LIMBS {
            t[j] += twice * limbs[j];
        }
        reduce_step(t, false)
    }
}

/// `x^2 / 2^261 mod p`, below `1.1 p` (`x` below `4p`): [`dot`] of one
/// entry with 45 products instead of 81, each product `a_i a_j` (i < j)
/// once, doubled.
#[inline(never)]
fn square(x: F) -> F {
    montgomery(&Square(x), [0; LIMBS])
}

impl F {
    /// `ark-ff`'s value (`x 2^256 mod p`, canonical) in this Montgomery
    /// form (`x 2^261 mod p`), below `1.1 p`.
    #[inline(always)]
    fn from_fr(value: &Fr) -> F {
        F(from_words(value.0.0)).mul(factors().from_ark)
    }

    /// The value as `ark-ff` holds it (canonical, Montgomery form).
    #[cfg(test)]
    fn to_fr(self) -> Fr {
        // `2^256 mod p`: `x 2^261 * 2^256 / 2^261 = x 2^256`.
        let into_ark = F(from_words(Fr::from(1u64).0.0));
        let limbs = self.mul(into_ark).canonical().0;
        ark_ff::Fp(
            ark_ff::BigInt::new(to_words(limbs)),
            std::marker::PhantomData,
        )
    }

    /// A canonical big-endian value (the caller checked it is below `p`)
    /// in this form, below `1.1 p`.
    #[inline(always)]
    fn from_be(bytes: &Hash) -> F {
        let mut words = [0u64; 4];
        let (chunks, _) = bytes.as_chunks::<8>();
        for (word, chunk) in words.iter_mut().rev().zip(chunks) {
            *word = u64::from_be_bytes(*chunk);
        }
        F(from_words(words)).mul(factors().from_plain)
    }

    /// The value, canonical, big-endian: `x 2^261 * 1 / 2^261 = x`.
    #[inline(always)]
    fn to_be(self) -> Hash {
        let mut one = [0u64; LIMBS];
        one[0] = 1;
        let words = to_words(self.mul(F(one)).canonical().0);
        let mut out = [0u8; 32];
        let (chunks, _) = out.as_chunks_mut::<8>();
        for (chunk, word) in chunks.iter_mut().zip(words.iter().rev()) {
            *chunk = word.to_be_bytes();
        }
        out
    }

    /// `value - subtrahend` if that is not negative, else `value`.
    #[inline(always)]
    fn subtract_if_at_least(value: [u64; LIMBS], subtrahend: [u64; LIMBS]) -> [u64; LIMBS] {
        let mut out = [0u64; LIMBS];
        let mut borrow = 0u64;
        for ((o, v), s) in out.iter_mut().zip(value).zip(subtrahend) {
            let d = v.wrapping_sub(s).wrapping_sub(borrow);
            *o = d & MASK;
            borrow = d >> 63;
        }
        if borrow == 0 { out } else { value }
    }

    /// The same value below `p` (for a value below `2p`).
    #[inline(always)]
    fn canonical(self) -> F {
        F(F::subtract_if_at_least(self.0, P))
    }

    /// `self + other`, not reduced: normalised limbs of the sum (below
    /// 2^261; the callers' sums are below `2.41 p`, module doc).
    #[inline(always)]
    fn add_unreduced(self, other: F) -> F {
        let mut sum = [0u64; LIMBS];
        let mut carry = 0u64;
        for ((s, a), b) in sum.iter_mut().zip(self.0).zip(other.0) {
            let t = a + b + carry;
            *s = t & MASK;
            carry = t >> BITS;
        }
        debug_assert_eq!(carry, 0);
        F(sum)
    }

    /// `self + a * b / 2^261 mod p`, below `4p` (all three below `4p`): the
    /// sum is below `5.1 p`, less `2p` when at least `2p`.
    #[inline(always)]
    fn mul_add(self, a: F, b: F) -> F {
        F(F::subtract_if_at_least(
            mul_add_unreduced(a, b, self).0,
            TWO_P,
        ))
    }

    /// Montgomery multiplication: `self * other / 2^261 mod p`, below
    /// `1.1 p` (both below `4p`).
    #[inline(always)]
    fn mul(self, other: F) -> F {
        dot(&[self], &[other])
    }

    #[inline(always)]
    fn sbox(self) -> F {
        let x4 = square(square(self));
        self.mul(x4)
    }
}

/// The factors that move a value into this Montgomery form.
#[derive(Clone, Copy, Debug)]
struct Factors {
    /// `2^266 mod p`, from `ark-ff`'s form: `x 2^256 * 2^266 / 2^261 = x
    /// 2^261`.
    from_ark: F,
    /// `2^522 mod p`, from a plain integer: `x * 2^522 / 2^261 = x 2^261`.
    from_plain: F,
}

/// [`Factors`], made on the first call: `ark-ff` holds `v` as `v 2^256 mod
/// p`, so the words of `Fr::from(2^10)` are `2^266 mod p` and those of
/// `Fr::from(2^266)` are `2^522 mod p` (canonical, as plain integers).
fn factors() -> &'static Factors {
    static FACTORS: OnceLock<Factors> = OnceLock::new();
    FACTORS.get_or_init(|| {
        let two = Fr::from(2u64);
        Factors {
            from_ark: F(from_words(two.pow([266 - 256]).0.0)),
            from_plain: F(from_words(two.pow([522 - 256]).0.0)),
        }
    })
}

/// The optimised constants of width `T` in this form, canonical, converted
/// on the first call for that width from `opt` (the tables of width `T`).
fn tables<const T: usize>(opt: &Optimised) -> &'static Optimised<F> {
    static CACHE: [OnceLock<Optimised<F>>; MAX_WIDTH - MIN_WIDTH + 1] =
        [const { OnceLock::new() }; MAX_WIDTH - MIN_WIDTH + 1];
    debug_assert_eq!(opt.mds.len(), T * T, "the tables of width T");
    CACHE[T - MIN_WIDTH].get_or_init(|| opt.map(|value| F::from_fr(value).canonical()))
}

impl Cell for F {
    type Constant = F;

    #[inline(always)]
    fn add_constants<const T: usize>(state: &mut [F; T], constants: &[F; T]) {
        for (cell, constant) in state.iter_mut().zip(constants) {
            cell.add_constant(constant);
        }
    }

    #[inline(always)]
    fn add_constant(&mut self, constant: &F) {
        *self = self.add_unreduced(*constant);
    }

    #[inline(always)]
    fn sbox(&mut self) {
        *self = F::sbox(*self);
    }

    #[inline(always)]
    fn mix<const T: usize>(state: &mut [F; T], matrix: &[[F; T]]) {
        let old = *state;
        for (cell, row) in state.iter_mut().zip(matrix) {
            *cell = dot(row, &old);
        }
    }

    #[inline(always)]
    fn mix_sparse<const T: usize>(state: &mut [F; T], row: &[F; T], column: &[F; T]) {
        let first = state[0];
        let new_first = dot(row, state);
        for (cell, entry) in state.iter_mut().zip(column).skip(1) {
            *cell = cell.mul_add(first, *entry);
        }
        state[0] = new_first;
    }
}

/// [`super::hash`] of `T - 1` inputs over 29-bit limbs: the same result, or
/// `Err(i)` for the first input `i` that is not canonical.
pub(super) fn hash<const T: usize>(inputs: &[Hash], opt: &Optimised) -> Result<Hash, usize> {
    let tables = tables::<T>(opt);
    // Zero is zero in Montgomery form: the capacity cell.
    let mut state = [F([0; LIMBS]); T];
    for (position, (cell, input)) in state[1..].iter_mut().zip(inputs).enumerate() {
        if !is_canonical_field_element(input) {
            return Err(position);
        }
        *cell = F::from_be(input);
    }
    run_rounds(&mut state, tables);
    Ok(state[0].to_be())
}

/// The permutation over 29-bit limbs on a whole state, `ark-ff` in and
/// out: [`run_rounds`] over [`F`], the same result as [`super::permute`].
#[cfg(test)]
fn permute<const T: usize>(state: &mut [Fr; T], opt: &Optimised) {
    let tables = tables::<T>(opt);
    let mut s: [F; T] = std::array::from_fn(|i| F::from_fr(&state[i]));
    run_rounds(&mut s, tables);
    for (cell, value) in state.iter_mut().zip(s) {
        *cell = value.to_fr();
    }
}

#[cfg(test)]
mod tests {
    use ark_ff::{AdditiveGroup, BigInt, BigInteger, PrimeField};
    use proptest::prelude::*;

    use super::*;

    fn element(seed: u64) -> Fr {
        // Products of small values spread over the whole field.
        let x = Fr::from(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        x.pow([seed % 97 + 3])
    }

    /// The modulus as words.
    fn modulus() -> [u64; 4] {
        Fr::MODULUS.0
    }

    /// `x + y` over 256-bit words (no overflow for the values used here).
    fn add_words(x: [u64; 4], y: [u64; 4]) -> [u64; 4] {
        let mut a = BigInt::new(x);
        assert!(!a.add_with_carry(&BigInt::new(y)));
        a.0
    }

    /// The element whose plain integer (not Montgomery form) is `words`,
    /// reduced mod p.
    fn plain(words: [u64; 4]) -> Fr {
        Fr::from_le_bytes_mod_order(&BigInt::new(words).to_bytes_le())
    }

    /// `value` in this form, given as a plain integer below `2p` (a
    /// non-canonical representative when at least `p`).
    fn ours(words: [u64; 4]) -> F {
        F(from_words(words))
    }

    /// What an [`F`] means: its limbs as an integer, over R = 2^261.
    fn meaning(value: F) -> Fr {
        let r_inv = Fr::from(2u64).pow([261]).inverse().unwrap();
        plain(to_words(value.0)) * r_inv
    }

    /// `k p` as words.
    fn times_p(k: u64) -> [u64; 4] {
        (1..k).fold(modulus(), |sum, _| add_words(sum, modulus()))
    }

    /// Checks that `value` has normalised limbs and is below `bound`.
    fn assert_below(value: F, bound: [u64; 4]) {
        assert!(value.0.iter().all(|&limb| limb <= MASK), "{value:?}");
        assert!(
            BigInt::new(to_words(value.0)) < BigInt::new(bound),
            "{value:?} is not below {bound:?}"
        );
    }

    /// Checks the representation invariant: normalised limbs, below `4p`.
    fn assert_in_range(value: F) {
        assert_below(value, times_p(4));
    }

    /// The canonical representative of a plain integer, as words.
    fn canonical_words(words: [u64; 4]) -> [u64; 4] {
        plain(words).into_bigint().0
    }

    /// Plain integers below 4p that stress the bounds: 0, 1, p - 1, p,
    /// p + 1, 2p - 1, 2p, 3p, 4p - 1, 2^253 and its neighbours, and
    /// pseudo-random ones up to 4p.
    fn edge_words() -> Vec<[u64; 4]> {
        let p = modulus();
        let p_minus = |k: u64| {
            let mut x = BigInt::new(p);
            x.sub_with_borrow(&BigInt::from(k));
            x.0
        };
        let p_plus = |k: u64| add_words(p, [k, 0, 0, 0]);
        let two_p_minus_1 = add_words(p, p_minus(1));
        let mut values = vec![
            [0; 4],
            [1, 0, 0, 0],
            p_minus(1),
            p_minus(2),
            p,
            p_plus(1),
            two_p_minus_1,
            [0, 0, 0, 1 << 61],
            [u64::MAX, u64::MAX, u64::MAX, (1 << 61) - 1],
            [MASK, 0, 0, 0],
            [u64::MAX, u64::MAX, u64::MAX, 0x3064_4e72_e131_a029],
            times_p(2),
            times_p(3),
            add_words(times_p(3), p_minus(1)),
        ];
        values.extend((1..24).map(|seed| element(seed).into_bigint().0));
        for k in 1..4 {
            values.extend(
                (1..24).map(|seed| add_words(element(seed + 100 * k).into_bigint().0, times_p(k))),
            );
        }
        values
    }

    #[test]
    fn radix_conversion_round_trips() {
        // Up to 2^256 - 1: nine limbs hold 261 bits.
        for words in edge_words()
            .into_iter()
            .chain([[u64::MAX; 4], [0, 0, 0, 1 << 63]])
        {
            assert_eq!(to_words(from_words(words)), words);
        }
        assert_eq!(to_words(P), modulus());
        assert_eq!(to_words(TWO_P), add_words(modulus(), modulus()));
        assert_eq!(P[0].wrapping_mul(P_INV_NEG.wrapping_neg()) & MASK, 1);
    }

    #[test]
    fn limbs29_arithmetic_equals_ark_ff_on_edge_values() {
        let values = edge_words();
        for &x in &values {
            let a = ours(x);
            assert_in_range(a);
            assert_eq!(F::from_fr(&meaning(a)).to_fr(), meaning(a));
            for &y in &values {
                let b = ours(y);
                let product = a.mul(b);
                assert_in_range(product);
                assert_eq!(meaning(product), meaning(a) * meaning(b), "{x:?} * {y:?}");
                assert_eq!(square(a), a.mul(a), "{x:?}^2");
                // A product stays below 1.1p; a constant (below p) added
                // unreduced gives the exact sum (below 5p < 2^256); the
                // sparse update stays below 4p.
                assert_below(
                    product,
                    add_words(modulus(), [0, 0, 0, modulus()[3] / 10 + 1]),
                );
                let constant = ours(canonical_words(y));
                let sum = a.add_unreduced(constant);
                assert_eq!(
                    meaning(sum),
                    meaning(a) + meaning(constant),
                    "{x:?} + {y:?}"
                );
                let fused = a.mul_add(b, constant);
                assert_in_range(fused);
                assert_eq!(meaning(fused), meaning(a) + meaning(b) * meaning(constant));
            }
        }
    }

    #[test]
    fn limbs29_conversion_equals_ark_ff() {
        let mut values = vec![Fr::ZERO, Fr::ONE, -Fr::ONE, -Fr::from(2u64)];
        values.extend((1..40).map(element));
        for a in &values {
            let ours = F::from_fr(a);
            assert_in_range(ours);
            assert_eq!(meaning(ours), *a);
            assert_eq!(ours.to_fr(), *a);
            for b in &values {
                assert_eq!(F::from_fr(a).mul(F::from_fr(b)).to_fr(), *a * b);
                assert_eq!(F::from_fr(a).add_unreduced(F::from_fr(b)).to_fr(), *a + b);
            }
        }
    }

    /// A row of `T` entries at the bounds (canonical constants, state below
    /// 4p) against the sum of the products in `ark-ff`.
    fn check_dot<const T: usize>(entries: &[[u64; 4]], cells: &[[u64; 4]]) {
        let row: [F; T] =
            std::array::from_fn(|k| ours(canonical_words(entries[k % entries.len()])));
        let state: [F; T] = std::array::from_fn(|k| ours(cells[(k * 7 + 3) % cells.len()]));
        let got = dot(&row, &state);
        // Below 1.41 p (module doc).
        assert_below(
            got,
            add_words(modulus(), [0, 0, 0, modulus()[3] / 100 * 41 + 1]),
        );
        let want: Fr = row
            .iter()
            .zip(&state)
            .map(|(a, b)| meaning(*a) * meaning(*b))
            .sum();
        assert_eq!(meaning(got), want, "t = {T}");
    }

    #[test]
    fn limbs29_dot_equals_ark_ff_for_every_width_at_the_bounds() {
        let p = modulus();
        let mut p_minus_1 = BigInt::new(p);
        p_minus_1.sub_with_borrow(&BigInt::from(1u64));
        let mut four_p_minus_1 = BigInt::new(times_p(4));
        four_p_minus_1.sub_with_borrow(&BigInt::from(1u64));
        // 2^253 - 1: every limb but the top one all ones, the largest
        // columns a value below p makes (widths 7..17 overflow a column
        // unless carries are propagated per step).
        let ones = [u64::MAX, u64::MAX, u64::MAX, (1 << 61) - 1];
        // The largest inputs the bounds allow, then a mix of edge values.
        for (entries, cells) in [
            (vec![ones], vec![ones]),
            (vec![p_minus_1.0], vec![four_p_minus_1.0]),
            (edge_words(), edge_words()),
        ] {
            check_dot::<2>(&entries, &cells);
            check_dot::<3>(&entries, &cells);
            check_dot::<5>(&entries, &cells);
            check_dot::<6>(&entries, &cells);
            check_dot::<7>(&entries, &cells);
            check_dot::<9>(&entries, &cells);
            check_dot::<13>(&entries, &cells);
            check_dot::<17>(&entries, &cells);
        }
    }

    /// Any plain integer below 4p, as words.
    fn below_four_p() -> impl Strategy<Value = [u64; 4]> {
        any::<[u64; 4]>().prop_map(|words| {
            // Below 2^256 < 5.3 p, then below 4p by subtracting 2p if at
            // least 4p.
            let mut x = BigInt::new(words);
            if x >= BigInt::new(times_p(4)) {
                x.sub_with_borrow(&BigInt::new(times_p(2)));
            }
            x.0
        })
    }

    proptest! {
        #[test]
        fn limbs29_mul_add_and_dot_equal_ark_ff(
            x in below_four_p(),
            y in below_four_p(),
            c in below_four_p(),
            cells in proptest::collection::vec(below_four_p(), 17),
            entries in proptest::collection::vec(below_four_p(), 17),
        ) {
            let (a, b) = (ours(x), ours(y));
            let product = a.mul(b);
            assert_in_range(product);
            prop_assert_eq!(meaning(product), meaning(a) * meaning(b));
            let squared = square(a);
            assert_in_range(squared);
            prop_assert_eq!(meaning(squared), meaning(a).square());
            let constant = ours(canonical_words(c));
            let sum = a.add_unreduced(constant);
            prop_assert_eq!(meaning(sum), meaning(a) + meaning(constant));
            let fused = a.mul_add(b, constant);
            assert_in_range(fused);
            prop_assert_eq!(meaning(fused), meaning(a) + meaning(b) * meaning(constant));
            prop_assert_eq!(a.to_fr(), meaning(a));
            check_dot::<3>(&entries, &cells);
            check_dot::<17>(&entries, &cells);
        }
    }

    fn check_width<const T: usize>() {
        for seed in 0..8u64 {
            let start: [Fr; T] = std::array::from_fn(|i| element(seed * 31 + i as u64));
            let mut ours = start;
            permute(&mut ours, super::super::optimised::get(T));
            let mut reference = start;
            super::super::permute(&mut reference, super::super::optimised::get(T));
            assert_eq!(ours, reference, "t = {T}, seed {seed}");
        }
    }

    /// [`hash`] (bytes straight into limbs and back) against the `ark-ff`
    /// hash, on random canonical inputs and at the edges (0, p - 1), and
    /// the same refusal of the first non-canonical input.
    fn check_hash<const T: usize>() {
        let p_minus_1 = (-Fr::ONE).into_bigint().to_bytes_be();
        let edges: [Hash; 2] = [[0; 32], p_minus_1.try_into().unwrap()];
        for seed in 0..8u64 {
            let inputs: Vec<Hash> = (0..T - 1)
                .map(|i| match (seed, i % 2) {
                    (0, k) => edges[k],
                    _ => {
                        let bytes = element(seed * 31 + i as u64).into_bigint().to_bytes_be();
                        bytes.try_into().unwrap()
                    }
                })
                .collect();
            let opt = super::super::optimised::get(T);
            let ours = hash::<T>(&inputs, opt);
            assert_eq!(
                ours,
                super::super::hash_ark::<T>(&inputs),
                "t = {T}, seed {seed}"
            );
            assert!(ours.is_ok());
            let mut bad = inputs.clone();
            let last = bad.len() - 1;
            bad[last] = super::super::BN254_MODULUS_BE;
            assert_eq!(hash::<T>(&bad, opt), Err(last));
            assert_eq!(super::super::hash_ark::<T>(&bad), Err(last));
        }
    }

    #[test]
    fn limbs29_hash_equals_ark_ff_for_every_width() {
        check_hash::<2>();
        check_hash::<3>();
        check_hash::<4>();
        check_hash::<5>();
        check_hash::<8>();
        check_hash::<9>();
        check_hash::<16>();
        check_hash::<17>();
    }

    #[test]
    fn limbs29_permutation_equals_ark_ff_for_every_width() {
        check_width::<2>();
        check_width::<3>();
        check_width::<4>();
        check_width::<5>();
        check_width::<6>();
        check_width::<7>();
        check_width::<8>();
        check_width::<9>();
        check_width::<13>();
        check_width::<16>();
        check_width::<17>();
    }
}
