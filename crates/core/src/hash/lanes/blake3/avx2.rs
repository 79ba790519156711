//! The AVX2 kernel: 8 groups per pass, group `j` in 32-bit lane `j` of each
//! ymm register (`v[i]` holds state word `i` of all 8 groups).
#![allow(unsafe_code)]

use std::arch::x86_64::*;

use super::{IV, MSG_SCHEDULE, PREFETCH_AHEAD, blocks, prefetch};

const LANES: usize = 8;

/// `out[i]` = BLAKE3 of the `i`-th `group` children, 8 groups per pass;
/// a last pass of fewer than 8 groups leaves its other lanes idle.
///
/// # Panics
/// If `children.len() != out.len() * group`, or the CPU lacks AVX2 (callers
/// only pick this kernel when it has it).
pub(super) fn hash(children: &[[u8; 32]], group: usize, out: &mut [[u8; 32]]) {
    assert_eq!(children.len(), out.len() * group);
    if out.is_empty() {
        return;
    }
    assert!(
        is_x86_feature_detected!("avx2"),
        "the avx2 kernel needs AVX2"
    );
    // SAFETY: `hash_avx2` only requires the `avx2` target feature, and the
    // CPU was just detected to support it. Every memory access inside goes
    // through a bounds-checked reference.
    unsafe { hash_avx2(children, group, out) };
}

#[target_feature(enable = "avx2")]
fn hash_avx2(children: &[[u8; 32]], group: usize, out: &mut [[u8; 32]]) {
    let pass_bytes = LANES * group * 32;
    // Prefetch whole passes at least `PREFETCH_AHEAD` bytes ahead.
    let ahead = PREFETCH_AHEAD.div_ceil(pass_bytes) * pass_bytes;
    let input = children.as_flattened();
    for (pass, dst) in out.chunks_mut(LANES).enumerate() {
        let start = pass * pass_bytes;
        let src = &input[start..input.len().min(start + pass_bytes)];
        let next = input.get(start + ahead..).unwrap_or_default();
        let lanes = dst.len();
        let dst = dst.as_flattened_mut();
        if lanes == LANES {
            hash8(
                src,
                next,
                group,
                lanes,
                dst.try_into().expect("a whole pass"),
            );
        } else {
            let mut whole = [0u8; LANES * 32];
            hash8(src, next, group, lanes, &mut whole);
            dst.copy_from_slice(&whole[..dst.len()]);
        }
    }
}

/// Hashes the `lanes` (1..=8) groups of `group` children in `src`
/// (`lanes * group * 32` bytes) into the first `lanes` hashes of `dst`. Idle
/// lanes recompute group 0 and their hashes are left unspecified. Meanwhile
/// prefetches the start of `next` (a later pass's input).
#[target_feature(enable = "avx2")]
#[inline]
fn hash8(src: &[u8], next: &[u8], group: usize, lanes: usize, dst: &mut [u8; LANES * 32]) {
    let stride = group * 32;
    // Where each lane's group starts in `src`.
    let starts: [usize; LANES] =
        std::array::from_fn(|lane| if lane < lanes { lane * stride } else { 0 });
    let mut cv = [_mm256_setzero_si256(); 8];
    for (word, iv) in cv.iter_mut().zip(IV) {
        *word = _mm256_set1_epi32(iv as i32);
    }
    let mut low = [_mm256_setzero_si256(); LANES];
    let mut high = [_mm256_setzero_si256(); LANES];
    for (index, block) in blocks(group).enumerate() {
        // Prefetch a pass's worth of `next`, spread over this pass's blocks
        // (each block reads `LANES * 64` bytes of a pass).
        prefetch(next, index * LANES * 64, (index + 1) * LANES * 64);
        let mut m = [_mm256_setzero_si256(); 16];
        for (lane, row) in low.iter_mut().enumerate() {
            let at = starts[lane] + block.offset;
            *row = load32(src[at..at + 32].try_into().expect("32-byte half block"));
        }
        m[..8].copy_from_slice(&transpose8(&low));
        // An odd group's last block is 32 bytes: its words 8..16 are the
        // zero padding, and nothing past the block is read.
        if block.len == 64 {
            for (lane, row) in high.iter_mut().enumerate() {
                let at = starts[lane] + block.offset + 32;
                *row = load32(src[at..at + 32].try_into().expect("32-byte half block"));
            }
            m[8..].copy_from_slice(&transpose8(&high));
        }
        cv = compress(&cv, &m, block.len, block.flags);
    }
    // The transpose is its own inverse: row `j` becomes lane `j`'s hash.
    let (dst, _) = dst.as_chunks_mut::<32>();
    for (hash, row) in dst.iter_mut().zip(transpose8(&cv)) {
        store32(hash, row);
    }
}

#[target_feature(enable = "avx2")]
#[inline]
fn load32(bytes: &[u8; 32]) -> __m256i {
    // SAFETY: `bytes` is a valid reference to exactly 32 readable bytes,
    // the width of this unaligned load; AVX2 is enabled on this function.
    unsafe { _mm256_loadu_si256(bytes.as_ptr().cast()) }
}

#[target_feature(enable = "avx2")]
#[inline]
fn store32(bytes: &mut [u8; 32], v: __m256i) {
    // SAFETY: `bytes` is a valid exclusive reference to exactly 32 writable
    // bytes, the width of this unaligned store; AVX2 is enabled.
    unsafe { _mm256_storeu_si256(bytes.as_mut_ptr().cast(), v) }
}

/// Transposes 8 rows of 8 words: `out[w]` lane `j` = `rows[j]` lane `w`.
#[target_feature(enable = "avx2")]
#[inline]
fn transpose8(rows: &[__m256i; 8]) -> [__m256i; 8] {
    // `a[2p]`, 128-bit slot L = rows 2p, 2p+1 interleaved at words 4L, 4L+1;
    // `a[2p+1]` the same at words 4L+2, 4L+3.
    let mut a = [_mm256_setzero_si256(); 8];
    for p in 0..4 {
        a[2 * p] = _mm256_unpacklo_epi32(rows[2 * p], rows[2 * p + 1]);
        a[2 * p + 1] = _mm256_unpackhi_epi32(rows[2 * p], rows[2 * p + 1]);
    }
    // `b[4q + c]`, slot L = word 4L+c of rows 4q..4q+4.
    let mut b = [_mm256_setzero_si256(); 8];
    for q in 0..2 {
        b[4 * q] = _mm256_unpacklo_epi64(a[4 * q], a[4 * q + 2]);
        b[4 * q + 1] = _mm256_unpackhi_epi64(a[4 * q], a[4 * q + 2]);
        b[4 * q + 2] = _mm256_unpacklo_epi64(a[4 * q + 1], a[4 * q + 3]);
        b[4 * q + 3] = _mm256_unpackhi_epi64(a[4 * q + 1], a[4 * q + 3]);
    }
    // Word 4L+c of all rows = slot L of b[c] then slot L of b[4+c].
    let mut out = [_mm256_setzero_si256(); 8];
    for c in 0..4 {
        out[c] = _mm256_permute2x128_si256::<0x20>(b[c], b[4 + c]);
        out[4 + c] = _mm256_permute2x128_si256::<0x31>(b[c], b[4 + c]);
    }
    out
}

#[target_feature(enable = "avx2")]
#[inline]
fn rot16(x: __m256i) -> __m256i {
    #[rustfmt::skip]
    let bytes = _mm256_setr_epi8(
        2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13,
        2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13,
    );
    _mm256_shuffle_epi8(x, bytes)
}

#[target_feature(enable = "avx2")]
#[inline]
fn rot12(x: __m256i) -> __m256i {
    _mm256_or_si256(_mm256_srli_epi32::<12>(x), _mm256_slli_epi32::<20>(x))
}

#[target_feature(enable = "avx2")]
#[inline]
fn rot8(x: __m256i) -> __m256i {
    #[rustfmt::skip]
    let bytes = _mm256_setr_epi8(
        1, 2, 3, 0, 5, 6, 7, 4, 9, 10, 11, 8, 13, 14, 15, 12,
        1, 2, 3, 0, 5, 6, 7, 4, 9, 10, 11, 8, 13, 14, 15, 12,
    );
    _mm256_shuffle_epi8(x, bytes)
}

#[target_feature(enable = "avx2")]
#[inline]
fn rot7(x: __m256i) -> __m256i {
    _mm256_or_si256(_mm256_srli_epi32::<7>(x), _mm256_slli_epi32::<25>(x))
}

#[target_feature(enable = "avx2")]
#[inline]
fn add(a: __m256i, b: __m256i) -> __m256i {
    _mm256_add_epi32(a, b)
}

#[target_feature(enable = "avx2")]
#[inline]
fn xor(a: __m256i, b: __m256i) -> __m256i {
    _mm256_xor_si256(a, b)
}

/// The compression function in every lane (counter 0), truncated to the 8
/// chaining-value words.
#[target_feature(enable = "avx2")]
#[inline]
fn compress(cv: &[__m256i; 8], m: &[__m256i; 16], block_len: u32, flags: u32) -> [__m256i; 8] {
    let zero = _mm256_setzero_si256();
    #[rustfmt::skip]
    let mut v = [
        cv[0], cv[1], cv[2], cv[3], cv[4], cv[5], cv[6], cv[7],
        _mm256_set1_epi32(IV[0] as i32), _mm256_set1_epi32(IV[1] as i32),
        _mm256_set1_epi32(IV[2] as i32), _mm256_set1_epi32(IV[3] as i32),
        zero, zero,
        _mm256_set1_epi32(block_len as i32), _mm256_set1_epi32(flags as i32),
    ];
    rounds!(v, m);
    let mut out = [zero; 8];
    for (i, word) in out.iter_mut().enumerate() {
        *word = _mm256_xor_si256(v[i], v[i + 8]);
    }
    out
}
