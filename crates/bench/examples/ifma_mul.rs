//! One 8-lane AVX-512 IFMA Montgomery multiplication over BN254's scalar
//! field against eight `ark-ff` `Fr` multiplications: throughput of many
//! independent chains on each side, per field multiplication.
//!
//! The IFMA side keeps elements in radix 2^52 (5 limbs of 52 bits, one
//! `zmm` register per limb, 8 elements per register) in Montgomery form
//! with R = 2^260 and multiplies by operand scanning (schoolbook product
//! with `vpmadd52luq`/`vpmadd52huq`, then 5 word-by-word reduction steps).
//! Every chain's result is converted back and compared with `ark-ff`'s, so
//! a fast wrong multiplication cannot pass.
//!
//! Run: `cargo run --release -p cairn-bench --example ifma_mul -- [ROUNDS]`.
//!
//! On an AMD EPYC (Zen 4, shared with other builds), three runs of 9
//! rounds each: `ark-ff` 12.22 / 12.24 / 12.26 ns per multiplication, IFMA
//! 1.98 / 1.98 / 1.99 ns, a speed-up of 6.2x. That is what makes the
//! multi-lane Poseidon kernel worth having (`cairn_core::hash::lanes::poseidon`).
#![allow(unsafe_code)]

use std::hint::black_box;
use std::time::Instant;

use ark_bn254::Fr;
use ark_ff::{BigInt, BigInteger, Field, PrimeField};

/// Independent chains per side; each IFMA chain is 8 lanes wide.
const CHAINS: usize = 8;
/// Multiplications per chain per timed run.
const STEPS: usize = 100_000;

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .map_or(9, |r| r.parse().expect("usage: ifma_mul [ROUNDS]"));
    let factor = (0..8).fold(Fr::from(0x9e37_79b9_7f4a_7c15u64), |x, _| x.square());
    let start: Vec<Fr> = (0..CHAINS * 8)
        .map(|i| (0..8).fold(Fr::from(i as u64 + 3), |x, _| x.square()))
        .collect();

    let mut ark_ns = Vec::new();
    let mut ifma_ns = Vec::new();
    let ifma = ifma::supported();
    if !ifma {
        println!("this CPU has no avx512ifma: timing ark-ff only");
    }
    for _ in 0..rounds {
        // ark-ff: CHAINS * 8 independent accumulators, 8 at a time.
        let mut lanes = start.clone();
        let begin = Instant::now();
        for _ in 0..STEPS {
            for lane in lanes.iter_mut() {
                *lane *= factor;
            }
        }
        ark_ns.push(begin.elapsed().as_secs_f64() * 1e9 / (STEPS * CHAINS * 8) as f64);
        let want = black_box(lanes);

        if ifma {
            let begin = Instant::now();
            let got = ifma::run(&start, factor, STEPS);
            ifma_ns.push(begin.elapsed().as_secs_f64() * 1e9 / (STEPS * CHAINS * 8) as f64);
            assert_eq!(got, want, "the IFMA chains disagree with ark-ff");
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let ark = median(&mut ark_ns);
    println!("ark-ff Fr mul:         {ark:.2} ns per multiplication (median of {rounds})");
    if ifma {
        let lanes = median(&mut ifma_ns);
        println!("IFMA 8-lane mont mul:  {lanes:.2} ns per multiplication (median of {rounds})");
        println!("speed-up:              {:.2}x", ark / lanes);
    }
}

/// The bigint value of `x` (not Montgomery form) in 5 limbs of 52 bits.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn to_radix52(x: BigInt<4>) -> [u64; 5] {
    let l = x.0;
    let mask = (1u64 << 52) - 1;
    [
        l[0] & mask,
        (l[0] >> 52 | l[1] << 12) & mask,
        (l[1] >> 40 | l[2] << 24) & mask,
        (l[2] >> 28 | l[3] << 36) & mask,
        l[3] >> 16,
    ]
}

/// 5 limbs of 52 bits (each below 2^52) as a bigint of 4 u64 limbs; the
/// value must be below 2^256.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn from_radix52(x: [u64; 5]) -> BigInt<4> {
    BigInt::new([
        x[0] | x[1] << 52,
        x[1] >> 12 | x[2] << 40,
        x[2] >> 24 | x[3] << 28,
        x[3] >> 36 | x[4] << 16,
    ])
}

#[cfg(target_arch = "x86_64")]
mod ifma {
    use std::arch::x86_64::*;

    use super::*;

    pub(super) fn supported() -> bool {
        is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512ifma")
    }

    /// The chains of `start` (8 lanes each) multiplied `steps` times by
    /// `factor`, back as `Fr`.
    pub(super) fn run(start: &[Fr], factor: Fr, steps: usize) -> Vec<Fr> {
        assert!(supported());
        // SAFETY: the assert above checked the features `run_inner` enables.
        unsafe { run_inner(start, factor, steps) }
    }

    #[target_feature(enable = "avx512f,avx512ifma")]
    fn run_inner(start: &[Fr], factor: Fr, steps: usize) -> Vec<Fr> {
        let c = Constants::new();
        let r2 = splat(to_radix52(c.r2));
        let one = splat([1, 0, 0, 0, 0]);
        let factor = mul(&splat(to_radix52(factor.into_bigint())), &r2, &c);
        let mut chains: [[__m512i; 5]; CHAINS] = std::array::from_fn(|k| {
            let limbs: [[u64; 5]; 8] =
                std::array::from_fn(|lane| to_radix52(start[k * 8 + lane].into_bigint()));
            mul(&load(&limbs), &r2, &c)
        });
        for _ in 0..steps {
            for chain in chains.iter_mut() {
                *chain = mul(chain, &factor, &c);
            }
        }
        let mut out = Vec::new();
        for chain in &chains {
            let plain = store(&mul(chain, &one, &c));
            for limbs in plain {
                let mut value = from_radix52(limbs);
                if value >= c.p {
                    value.sub_with_borrow(&c.p);
                }
                out.push(Fr::from_bigint(value).expect("reduced"));
            }
        }
        out
    }

    struct Constants {
        p: BigInt<4>,
        p52: [__m512i; 5],
        /// -p^-1 mod 2^52.
        inv: __m512i,
        /// 2^520 mod p: multiplying by it enters Montgomery form.
        r2: BigInt<4>,
    }

    impl Constants {
        #[target_feature(enable = "avx512f")]
        fn new() -> Self {
            let p = Fr::MODULUS;
            // Newton's iteration for p^-1 mod 2^64 (p odd), then negate.
            let mut inv = 1u64;
            for _ in 0..6 {
                inv = inv.wrapping_mul(2u64.wrapping_sub(p.0[0].wrapping_mul(inv)));
            }
            let inv = inv.wrapping_neg() & ((1 << 52) - 1);
            let r = Fr::from(2u64).pow([260]);
            Constants {
                p,
                p52: splat(to_radix52(p)),
                inv: _mm512_set1_epi64(inv as i64),
                r2: (r * r).into_bigint(),
            }
        }
    }

    #[target_feature(enable = "avx512f")]
    fn splat(limbs: [u64; 5]) -> [__m512i; 5] {
        limbs.map(|l| _mm512_set1_epi64(l as i64))
    }

    #[target_feature(enable = "avx512f")]
    fn load(lanes: &[[u64; 5]; 8]) -> [__m512i; 5] {
        std::array::from_fn(|limb| {
            let column: [u64; 8] = std::array::from_fn(|lane| lanes[lane][limb]);
            // SAFETY: `column` is 64 readable bytes; loadu has no alignment
            // requirement.
            unsafe { _mm512_loadu_si512(column.as_ptr().cast()) }
        })
    }

    #[target_feature(enable = "avx512f")]
    fn store(x: &[__m512i; 5]) -> [[u64; 5]; 8] {
        let mut columns = [[0u64; 8]; 5];
        for (column, limb) in columns.iter_mut().zip(x) {
            // SAFETY: `column` is 64 writable bytes; storeu has no alignment
            // requirement.
            unsafe { _mm512_storeu_si512(column.as_mut_ptr().cast(), *limb) }
        }
        std::array::from_fn(|lane| std::array::from_fn(|limb| columns[limb][lane]))
    }

    /// a * b / 2^260 mod p, for a, b < 2^258 with limbs below 2^52: the
    /// result is below a * b / 2^260 + p < 2^257, limbs below 2^52.
    #[inline]
    #[target_feature(enable = "avx512f,avx512ifma")]
    fn mul(a: &[__m512i; 5], b: &[__m512i; 5], c: &Constants) -> [__m512i; 5] {
        {
            let zero = _mm512_setzero_si512();
            let mut t = [zero; 10];
            for i in 0..5 {
                for j in 0..5 {
                    t[i + j] = _mm512_madd52lo_epu64(t[i + j], a[i], b[j]);
                    t[i + j + 1] = _mm512_madd52hi_epu64(t[i + j + 1], a[i], b[j]);
                }
            }
            for i in 0..5 {
                let m = _mm512_madd52lo_epu64(zero, t[i], c.inv);
                for j in 0..5 {
                    t[i + j] = _mm512_madd52lo_epu64(t[i + j], m, c.p52[j]);
                    t[i + j + 1] = _mm512_madd52hi_epu64(t[i + j + 1], m, c.p52[j]);
                }
                t[i + 1] = _mm512_add_epi64(t[i + 1], _mm512_srli_epi64(t[i], 52));
            }
            let mask = _mm512_set1_epi64((1 << 52) - 1);
            let mut r = [zero; 5];
            let mut carry = zero;
            for k in 0..5 {
                let v = _mm512_add_epi64(t[5 + k], carry);
                r[k] = _mm512_and_si512(v, mask);
                carry = _mm512_srli_epi64(v, 52);
            }
            r
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod ifma {
    use super::*;

    pub(super) fn supported() -> bool {
        false
    }

    pub(super) fn run(_: &[Fr], _: Fr, _: usize) -> Vec<Fr> {
        unreachable!("no IFMA off x86_64")
    }
}
