//! The SSE4.1 kernel: 4 groups per pass, group `j` in 32-bit lane `j` of
//! each xmm register (`v[i]` holds state word `i` of all 4 groups).
#![allow(unsafe_code)]

use std::arch::x86_64::*;

use super::{IV, MSG_SCHEDULE, PREFETCH_AHEAD, blocks, prefetch};

const LANES: usize = 4;

/// `out[i]` = BLAKE3 of the `i`-th `group` children, 4 groups per pass;
/// a last pass of fewer than 4 groups leaves its other lanes idle.
///
/// # Panics
/// If `children.len() != out.len() * group`, or the CPU lacks SSE4.1 (callers
/// only pick this kernel when it has it).
pub(super) fn hash(children: &[[u8; 32]], group: usize, out: &mut [[u8; 32]]) {
    assert_eq!(children.len(), out.len() * group);
    if out.is_empty() {
        return;
    }
    assert!(
        is_x86_feature_detected!("sse4.1"),
        "the sse41 kernel needs SSE4.1"
    );
    // SAFETY: `hash_sse41` only requires the `sse4.1` target feature (which
    // implies SSSE3 for the byte shuffles), and the CPU was just detected to
    // support it. Every memory access inside goes through a bounds-checked
    // reference.
    unsafe { hash_sse41(children, group, out) };
}

#[target_feature(enable = "sse4.1")]
fn hash_sse41(children: &[[u8; 32]], group: usize, out: &mut [[u8; 32]]) {
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
            hash4(
                src,
                next,
                group,
                lanes,
                dst.try_into().expect("a whole pass"),
            );
        } else {
            let mut whole = [0u8; LANES * 32];
            hash4(src, next, group, lanes, &mut whole);
            dst.copy_from_slice(&whole[..dst.len()]);
        }
    }
}

/// Hashes the `lanes` (1..=4) groups of `group` children in `src`
/// (`lanes * group * 32` bytes) into the first `lanes` hashes of `dst`. Idle
/// lanes recompute group 0 and their hashes are left unspecified. Meanwhile
/// prefetches the start of `next` (a later pass's input).
#[target_feature(enable = "sse4.1")]
#[inline]
fn hash4(src: &[u8], next: &[u8], group: usize, lanes: usize, dst: &mut [u8; LANES * 32]) {
    let stride = group * 32;
    // Where each lane's group starts in `src`.
    let starts: [usize; LANES] =
        std::array::from_fn(|lane| if lane < lanes { lane * stride } else { 0 });
    let mut cv = [_mm_setzero_si128(); 8];
    for (word, iv) in cv.iter_mut().zip(IV) {
        *word = _mm_set1_epi32(iv as i32);
    }
    for (index, block) in blocks(group).enumerate() {
        // Prefetch a pass's worth of `next`, spread over this pass's blocks
        // (each block reads `LANES * 64` bytes of a pass).
        prefetch(next, index * LANES * 64, (index + 1) * LANES * 64);
        // Words 4k..4k+4 of every lane, then transposed. An odd group's
        // last block is 32 bytes: its words 8..16 stay the zero padding,
        // and nothing past the block is read.
        let mut m = [_mm_setzero_si128(); 16];
        let quarters = block.len as usize / 16;
        for k in 0..quarters {
            let mut rows = [_mm_setzero_si128(); LANES];
            for (lane, row) in rows.iter_mut().enumerate() {
                let at = starts[lane] + block.offset + 16 * k;
                *row = load16(src[at..at + 16].try_into().expect("16-byte quarter"));
            }
            m[4 * k..4 * k + 4].copy_from_slice(&transpose4(&rows));
        }
        cv = compress(&cv, &m, block.len, block.flags);
    }
    // The transpose is its own inverse: row `j` of each half becomes that
    // half of lane `j`'s hash.
    let low = transpose4(&[cv[0], cv[1], cv[2], cv[3]]);
    let high = transpose4(&[cv[4], cv[5], cv[6], cv[7]]);
    let (dst, _) = dst.as_chunks_mut::<32>();
    for ((hash, low), high) in dst.iter_mut().zip(low).zip(high) {
        let (first, second) = hash.split_at_mut(16);
        store16(first.try_into().expect("16 bytes"), low);
        store16(second.try_into().expect("16 bytes"), high);
    }
}

#[target_feature(enable = "sse4.1")]
#[inline]
fn load16(bytes: &[u8; 16]) -> __m128i {
    // SAFETY: `bytes` is a valid reference to exactly 16 readable bytes,
    // the width of this unaligned load; SSE2 (implied) is enabled.
    unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) }
}

#[target_feature(enable = "sse4.1")]
#[inline]
fn store16(bytes: &mut [u8; 16], v: __m128i) {
    // SAFETY: `bytes` is a valid exclusive reference to exactly 16 writable
    // bytes, the width of this unaligned store; SSE2 (implied) is enabled.
    unsafe { _mm_storeu_si128(bytes.as_mut_ptr().cast(), v) }
}

/// Transposes 4 rows of 4 words: `out[w]` lane `j` = `rows[j]` lane `w`.
#[target_feature(enable = "sse4.1")]
#[inline]
fn transpose4(rows: &[__m128i; 4]) -> [__m128i; 4] {
    let ab01 = _mm_unpacklo_epi32(rows[0], rows[1]); // r0.0 r1.0 r0.1 r1.1
    let ab23 = _mm_unpackhi_epi32(rows[0], rows[1]); // r0.2 r1.2 r0.3 r1.3
    let cd01 = _mm_unpacklo_epi32(rows[2], rows[3]);
    let cd23 = _mm_unpackhi_epi32(rows[2], rows[3]);
    [
        _mm_unpacklo_epi64(ab01, cd01),
        _mm_unpackhi_epi64(ab01, cd01),
        _mm_unpacklo_epi64(ab23, cd23),
        _mm_unpackhi_epi64(ab23, cd23),
    ]
}

#[target_feature(enable = "sse4.1")]
#[inline]
fn rot16(x: __m128i) -> __m128i {
    _mm_shuffle_epi8(
        x,
        _mm_setr_epi8(2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13),
    )
}

#[target_feature(enable = "sse4.1")]
#[inline]
fn rot12(x: __m128i) -> __m128i {
    _mm_or_si128(_mm_srli_epi32::<12>(x), _mm_slli_epi32::<20>(x))
}

#[target_feature(enable = "sse4.1")]
#[inline]
fn rot8(x: __m128i) -> __m128i {
    _mm_shuffle_epi8(
        x,
        _mm_setr_epi8(1, 2, 3, 0, 5, 6, 7, 4, 9, 10, 11, 8, 13, 14, 15, 12),
    )
}

#[target_feature(enable = "sse4.1")]
#[inline]
fn rot7(x: __m128i) -> __m128i {
    _mm_or_si128(_mm_srli_epi32::<7>(x), _mm_slli_epi32::<25>(x))
}

#[target_feature(enable = "sse4.1")]
#[inline]
fn add(a: __m128i, b: __m128i) -> __m128i {
    _mm_add_epi32(a, b)
}

#[target_feature(enable = "sse4.1")]
#[inline]
fn xor(a: __m128i, b: __m128i) -> __m128i {
    _mm_xor_si128(a, b)
}

/// The compression function in every lane (counter 0), truncated to the 8
/// chaining-value words.
#[target_feature(enable = "sse4.1")]
#[inline]
fn compress(cv: &[__m128i; 8], m: &[__m128i; 16], block_len: u32, flags: u32) -> [__m128i; 8] {
    let zero = _mm_setzero_si128();
    #[rustfmt::skip]
    let mut v = [
        cv[0], cv[1], cv[2], cv[3], cv[4], cv[5], cv[6], cv[7],
        _mm_set1_epi32(IV[0] as i32), _mm_set1_epi32(IV[1] as i32),
        _mm_set1_epi32(IV[2] as i32), _mm_set1_epi32(IV[3] as i32),
        zero, zero,
        _mm_set1_epi32(block_len as i32), _mm_set1_epi32(flags as i32),
    ];
    rounds!(v, m);
    let mut out = [zero; 8];
    for (i, word) in out.iter_mut().enumerate() {
        *word = _mm_xor_si128(v[i], v[i + 8]);
    }
    out
}
