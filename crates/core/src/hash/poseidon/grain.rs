//! The Grain LFSR of the Poseidon reference parameter script
//! (`generate_parameters_grain.sage` from the paper's `hadeshash` repository,
//! eprint 2019/458), and the two things circomlib derives from it: the round
//! constants and the Cauchy MDS matrix of one state width.
//!
//! circomlib's tables are that script's output for `field = 1` (prime field),
//! `sbox = 0` (x^alpha), `n = 254`, `t`, `R_F = 8`, `R_P` and the BN254 scalar
//! modulus, so regenerating them here reproduces circomlib bit for bit without
//! vendoring ~100k constants.

use ark_bn254::Fr;
use ark_ff::{BigInt, BigInteger, Field, PrimeField};

/// The script's `field` argument: 1 = GF(p).
const FIELD_PRIME: u64 = 1;
/// The script's `sbox` argument: 0 = x^alpha (alpha = 5 for BN254).
const SBOX_POWER: u64 = 0;
/// The script's `n`: bits per sampled value, the BN254 scalar modulus size.
const FIELD_BITS: u32 = 254;
/// Outputs discarded after seeding, as the script does, so the first used bit
/// depends on every seed bit.
const WARM_UP_CLOCKS: usize = 160;

/// An 80-bit Grain LFSR read through the self-shrinking generator.
///
/// Position `i` of the script's `bit_sequence` list (index 0 = oldest bit) is
/// bit `i` of `state`: the script's `pop(0)` + `append` becomes a right shift
/// with the new bit entering at position 79.
struct Grain {
    state: u128,
}

impl Grain {
    /// Seeds the register with the script's 80-bit parameter encoding (each
    /// field most significant bit first: field 2 bits, sbox 4, n 12, t 12,
    /// R_F 10, R_P 10, then 30 ones) and discards the first 160 bits.
    fn new(width: usize, full_rounds: usize, partial_rounds: usize) -> Self {
        let fields: [(u64, u32); 6] = [
            (FIELD_PRIME, 2),
            (SBOX_POWER, 4),
            (u64::from(FIELD_BITS), 12),
            (width as u64, 12),
            (full_rounds as u64, 10),
            (partial_rounds as u64, 10),
        ];
        let mut state = 0u128;
        let mut position = 0;
        for (value, bits) in fields {
            assert!(
                value < 1 << bits,
                "{value} does not fit the {bits}-bit Grain field"
            );
            for k in (0..bits).rev() {
                state |= u128::from((value >> k) & 1) << position;
                position += 1;
            }
        }
        debug_assert_eq!(position, 50);
        state |= ((1u128 << 30) - 1) << position;

        let mut grain = Grain { state };
        for _ in 0..WARM_UP_CLOCKS {
            grain.clock();
        }
        grain
    }

    /// One LFSR step (taps 62, 51, 38, 23, 13, 0); returns the new bit.
    fn clock(&mut self) -> u128 {
        let s = self.state;
        let bit = ((s >> 62) ^ (s >> 51) ^ (s >> 38) ^ (s >> 23) ^ (s >> 13) ^ s) & 1;
        self.state = (s >> 1) | (bit << 79);
        bit
    }

    /// The next self-shrinking output: LFSR bits are taken in pairs and the
    /// second bit of a pair is emitted only when the first is 1.
    fn next_bit(&mut self) -> u64 {
        loop {
            let select = self.clock();
            let bit = self.clock();
            if select == 1 {
                return u64::try_from(bit).expect("a bit");
            }
        }
    }

    /// The next `FIELD_BITS` output bits as an integer, first bit most
    /// significant (the script joins them into a binary string).
    fn next_integer(&mut self) -> BigInt<4> {
        let mut value = BigInt::<4>::zero();
        for _ in 0..FIELD_BITS {
            value.mul2();
            value.0[0] |= self.next_bit();
        }
        value
    }

    /// A round constant: values `>= p` are rejected and redrawn, never reduced.
    fn round_constant(&mut self) -> Fr {
        loop {
            if let Some(constant) = Fr::from_bigint(self.next_integer()) {
                return constant;
            }
        }
    }

    /// An MDS seed value: the script wraps it in `F(...)`, i.e. reduces it
    /// modulo `p`. One subtraction suffices because `2^254 < 2p`.
    fn mds_value(&mut self) -> Fr {
        let mut value = self.next_integer();
        if value >= Fr::MODULUS {
            value.sub_with_borrow(&Fr::MODULUS);
        }
        Fr::from_bigint(value).expect("a 254-bit value minus p at most once is below p")
    }

    /// The Cauchy matrix `M[i][j] = 1 / (x_i + y_j)` (row-major), from `2t`
    /// values split into `xs` then `ys`, following the script's `create_mds_p`:
    /// redraw all `2t` values while any two are equal, and start over if some
    /// `x_i + y_j` is zero.
    ///
    /// The newer script also runs three subspace-trail checks on the matrix
    /// and regenerates if one fails. They are not implemented: for every width
    /// 2..=17 circomlib's matrix is the first candidate drawn here (checked
    /// against light-poseidon's tables for t <= 13 in this module's tests, and
    /// through poseidon-lite hash vectors for t = 14..=17), so the checks never
    /// changed the outcome for these parameters.
    fn cauchy_mds(&mut self, width: usize) -> Vec<Fr> {
        'candidate: loop {
            let mut seeds: Vec<Fr> = (0..2 * width).map(|_| self.mds_value()).collect();
            while has_duplicates(&seeds) {
                seeds = (0..2 * width).map(|_| self.mds_value()).collect();
            }
            let (xs, ys) = seeds.split_at(width);
            let mut matrix = Vec::with_capacity(width * width);
            for x in xs {
                for y in ys {
                    match (*x + y).inverse() {
                        Some(entry) => matrix.push(entry),
                        None => continue 'candidate,
                    }
                }
            }
            return matrix;
        }
    }
}

fn has_duplicates(values: &[Fr]) -> bool {
    values
        .iter()
        .enumerate()
        .any(|(i, a)| values[i + 1..].contains(a))
}

/// The round constants (`(full_rounds + partial_rounds) * width` of them,
/// round-major) and the row-major `width x width` MDS matrix that the
/// reference script produces for these parameters, in the script's order:
/// all round constants first, then the matrix from the same bit stream.
pub(super) fn generate(
    width: usize,
    full_rounds: usize,
    partial_rounds: usize,
) -> (Vec<Fr>, Vec<Fr>) {
    let mut grain = Grain::new(width, full_rounds, partial_rounds);
    let round_constants = (0..(full_rounds + partial_rounds) * width)
        .map(|_| grain.round_constant())
        .collect();
    let mds = grain.cauchy_mds(width);
    (round_constants, mds)
}
