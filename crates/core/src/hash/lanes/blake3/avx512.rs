//! The AVX-512 kernel: 16 groups per pass, group `j` in 32-bit lane `j` of
//! each zmm register (`v[i]` holds state word `i` of all 16 groups).
//! Uses AVX-512F only (native 32-bit rotates).
#![allow(unsafe_code)]

use std::arch::x86_64::*;

use super::{IV, MSG_SCHEDULE, PREFETCH_AHEAD, blocks, prefetch};

const LANES: usize = 16;

/// `out[i]` = BLAKE3 of the `i`-th `group` children, 16 groups per pass;
/// a last pass of fewer than 16 groups leaves its other lanes idle.
///
/// # Panics
/// If `children.len() != out.len() * group`, or the CPU lacks AVX-512F (callers
/// only pick this kernel when it has it).
pub(super) fn hash(children: &[[u8; 32]], group: usize, out: &mut [[u8; 32]]) {
    assert_eq!(children.len(), out.len() * group);
    if out.is_empty() {
        return;
    }
    assert!(
        is_x86_feature_detected!("avx512f"),
        "the avx512 kernel needs AVX-512F"
    );
    // SAFETY: `hash_avx512` only requires the `avx512f` target feature
    // (which implies AVX2/AVX for the 256-bit loads), and the CPU was just
    // detected to support it. Every memory access inside goes through a
    // bounds-checked reference.
    unsafe { hash_avx512(children, group, out) };
}

#[target_feature(enable = "avx512f")]
fn hash_avx512(children: &[[u8; 32]], group: usize, out: &mut [[u8; 32]]) {
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
            hash16(
                src,
                next,
                group,
                lanes,
                dst.try_into().expect("a whole pass"),
            );
        } else {
            let mut whole = [0u8; LANES * 32];
            hash16(src, next, group, lanes, &mut whole);
            dst.copy_from_slice(&whole[..dst.len()]);
        }
    }
}

/// Hashes the `lanes` (1..=16) groups of `group` children in `src`
/// (`lanes * group * 32` bytes) into the first `lanes` hashes of `dst`. Idle
/// lanes recompute group 0 and their hashes are left unspecified. Meanwhile
/// prefetches the start of `next` (a later pass's input).
#[target_feature(enable = "avx512f")]
#[inline]
fn hash16(src: &[u8], next: &[u8], group: usize, lanes: usize, dst: &mut [u8; LANES * 32]) {
    let stride = group * 32;
    // Where each lane's group starts in `src`.
    let starts: [usize; LANES] =
        std::array::from_fn(|lane| if lane < lanes { lane * stride } else { 0 });
    let mut cv = [_mm512_setzero_si512(); 8];
    for (word, iv) in cv.iter_mut().zip(IV) {
        *word = _mm512_set1_epi32(iv as i32);
    }
    let mut rows = [_mm512_setzero_si512(); LANES];
    for (index, block) in blocks(group).enumerate() {
        // Prefetch a pass's worth of `next`, spread over this pass's blocks
        // (each block reads `LANES * 64` bytes of a pass).
        prefetch(next, index * LANES * 64, (index + 1) * LANES * 64);
        if block.len == 64 {
            for (lane, row) in rows.iter_mut().enumerate() {
                let at = starts[lane] + block.offset;
                *row = load64(src[at..at + 64].try_into().expect("64-byte block"));
            }
        } else {
            // An odd group's last block: 32 bytes, then zero padding. Loading
            // only 32 bytes keeps the last lane inside `src`.
            for (lane, row) in rows.iter_mut().enumerate() {
                let at = starts[lane] + block.offset;
                *row = load32(src[at..at + 32].try_into().expect("32-byte block"));
            }
        }
        let m = transpose16(&rows);
        cv = compress(&cv, &m, block.len, block.flags);
    }
    store_hashes(&cv, dst);
}

/// 64 bytes as one vector (word `i` in lane `i`).
#[target_feature(enable = "avx512f")]
#[inline]
fn load64(bytes: &[u8; 64]) -> __m512i {
    // SAFETY: `bytes` is a valid reference to exactly 64 readable bytes,
    // the width of this unaligned load; AVX-512F is enabled on this function.
    unsafe { _mm512_loadu_si512(bytes.as_ptr().cast()) }
}

/// 32 bytes as the low half of a vector whose high half is zero.
#[target_feature(enable = "avx512f")]
#[inline]
fn load32(bytes: &[u8; 32]) -> __m512i {
    // SAFETY: `bytes` is a valid reference to exactly 32 readable bytes,
    // the width of this unaligned load; AVX (implied by AVX-512F) is enabled.
    _mm512_zextsi256_si512(unsafe { _mm256_loadu_si256(bytes.as_ptr().cast()) })
}

#[target_feature(enable = "avx512f")]
#[inline]
fn store64(bytes: &mut [u8; 64], v: __m512i) {
    // SAFETY: `bytes` is a valid exclusive reference to exactly 64 writable
    // bytes, the width of this unaligned store; AVX-512F is enabled.
    unsafe { _mm512_storeu_si512(bytes.as_mut_ptr().cast(), v) }
}

/// Transposes 16 rows of 16 words: `out[w]` lane `j` = `rows[j]` lane `w`.
#[target_feature(enable = "avx512f")]
#[inline]
fn transpose16(rows: &[__m512i; 16]) -> [__m512i; 16] {
    // Pairs of rows: `a[2p]`, 128-bit slot L = rows 2p, 2p+1 interleaved at
    // words 4L, 4L+1; `a[2p+1]` the same at words 4L+2, 4L+3.
    let mut a = [_mm512_setzero_si512(); 16];
    for p in 0..8 {
        a[2 * p] = _mm512_unpacklo_epi32(rows[2 * p], rows[2 * p + 1]);
        a[2 * p + 1] = _mm512_unpackhi_epi32(rows[2 * p], rows[2 * p + 1]);
    }
    // Quads: `b[4q + c]`, slot L = word 4L+c of rows 4q..4q+4.
    let mut b = [_mm512_setzero_si512(); 16];
    for q in 0..4 {
        b[4 * q] = _mm512_unpacklo_epi64(a[4 * q], a[4 * q + 2]);
        b[4 * q + 1] = _mm512_unpackhi_epi64(a[4 * q], a[4 * q + 2]);
        b[4 * q + 2] = _mm512_unpacklo_epi64(a[4 * q + 1], a[4 * q + 3]);
        b[4 * q + 3] = _mm512_unpackhi_epi64(a[4 * q + 1], a[4 * q + 3]);
    }
    // Word 4L+c of all rows = slot L of b[c], b[4+c], b[8+c], b[12+c]: a 4x4
    // transpose of 128-bit slots, in two steps of `shuffle_i32x4` (slots 0,1
    // of the result from the first operand, slots 2,3 from the second).
    let mut out = [_mm512_setzero_si512(); 16];
    for c in 0..4 {
        let (b0, b1, b2, b3) = (b[c], b[4 + c], b[8 + c], b[12 + c]);
        let e0 = _mm512_shuffle_i32x4::<0x44>(b0, b1); // b0.0 b0.1 b1.0 b1.1
        let e1 = _mm512_shuffle_i32x4::<0xEE>(b0, b1); // b0.2 b0.3 b1.2 b1.3
        let e2 = _mm512_shuffle_i32x4::<0x44>(b2, b3);
        let e3 = _mm512_shuffle_i32x4::<0xEE>(b2, b3);
        out[c] = _mm512_shuffle_i32x4::<0x88>(e0, e2); // b0.0 b1.0 b2.0 b3.0
        out[4 + c] = _mm512_shuffle_i32x4::<0xDD>(e0, e2); // slot 1s
        out[8 + c] = _mm512_shuffle_i32x4::<0x88>(e1, e3); // slot 2s
        out[12 + c] = _mm512_shuffle_i32x4::<0xDD>(e1, e3); // slot 3s
    }
    out
}

/// Writes lane `j`'s 8 words `h[0..8]` to `dst[32j..32j + 32]`.
#[target_feature(enable = "avx512f")]
#[inline]
fn store_hashes(h: &[__m512i; 8], dst: &mut [u8; LANES * 32]) {
    // `a[2p]`, slot L = words 2p, 2p+1 of lanes 4L, 4L+1; `a[2p+1]` lanes
    // 4L+2, 4L+3.
    let mut a = [_mm512_setzero_si512(); 8];
    for p in 0..4 {
        a[2 * p] = _mm512_unpacklo_epi32(h[2 * p], h[2 * p + 1]);
        a[2 * p + 1] = _mm512_unpackhi_epi32(h[2 * p], h[2 * p + 1]);
    }
    // `lo[t]`, slot L = words 0..4 of lane 4L+t; `hi[t]` words 4..8.
    let lo = [
        _mm512_unpacklo_epi64(a[0], a[2]),
        _mm512_unpackhi_epi64(a[0], a[2]),
        _mm512_unpacklo_epi64(a[1], a[3]),
        _mm512_unpackhi_epi64(a[1], a[3]),
    ];
    let hi = [
        _mm512_unpacklo_epi64(a[4], a[6]),
        _mm512_unpackhi_epi64(a[4], a[6]),
        _mm512_unpacklo_epi64(a[5], a[7]),
        _mm512_unpackhi_epi64(a[5], a[7]),
    ];
    // `e01[t]` = lo[t].0 lo[t].1 hi[t].0 hi[t].1, `e23[t]` slots 2 and 3.
    let mut e01 = [_mm512_setzero_si512(); 4];
    let mut e23 = [_mm512_setzero_si512(); 4];
    for t in 0..4 {
        e01[t] = _mm512_shuffle_i32x4::<0x44>(lo[t], hi[t]);
        e23[t] = _mm512_shuffle_i32x4::<0xEE>(lo[t], hi[t]);
    }
    // Output vector k holds lanes 2k, 2k+1 = 4L+t, 4L+t+1 (t = 0 or 2):
    // lo[t].L hi[t].L lo[t+1].L hi[t+1].L.
    let (dst, _) = dst.as_chunks_mut::<64>();
    for t in [0, 2] {
        let k = t / 2;
        store64(
            &mut dst[k],
            _mm512_shuffle_i32x4::<0x88>(e01[t], e01[t + 1]),
        );
        store64(
            &mut dst[2 + k],
            _mm512_shuffle_i32x4::<0xDD>(e01[t], e01[t + 1]),
        );
        store64(
            &mut dst[4 + k],
            _mm512_shuffle_i32x4::<0x88>(e23[t], e23[t + 1]),
        );
        store64(
            &mut dst[6 + k],
            _mm512_shuffle_i32x4::<0xDD>(e23[t], e23[t + 1]),
        );
    }
}

#[target_feature(enable = "avx512f")]
#[inline]
fn add(a: __m512i, b: __m512i) -> __m512i {
    _mm512_add_epi32(a, b)
}

#[target_feature(enable = "avx512f")]
#[inline]
fn xor(a: __m512i, b: __m512i) -> __m512i {
    _mm512_xor_si512(a, b)
}

#[target_feature(enable = "avx512f")]
#[inline]
fn rot16(x: __m512i) -> __m512i {
    _mm512_ror_epi32::<16>(x)
}

#[target_feature(enable = "avx512f")]
#[inline]
fn rot12(x: __m512i) -> __m512i {
    _mm512_ror_epi32::<12>(x)
}

#[target_feature(enable = "avx512f")]
#[inline]
fn rot8(x: __m512i) -> __m512i {
    _mm512_ror_epi32::<8>(x)
}

#[target_feature(enable = "avx512f")]
#[inline]
fn rot7(x: __m512i) -> __m512i {
    _mm512_ror_epi32::<7>(x)
}

/// The compression function in every lane (counter 0), truncated to the 8
/// chaining-value words.
#[target_feature(enable = "avx512f")]
#[inline]
fn compress(cv: &[__m512i; 8], m: &[__m512i; 16], block_len: u32, flags: u32) -> [__m512i; 8] {
    let zero = _mm512_setzero_si512();
    #[rustfmt::skip]
    let mut v = [
        cv[0], cv[1], cv[2], cv[3], cv[4], cv[5], cv[6], cv[7],
        _mm512_set1_epi32(IV[0] as i32), _mm512_set1_epi32(IV[1] as i32),
        _mm512_set1_epi32(IV[2] as i32), _mm512_set1_epi32(IV[3] as i32),
        zero, zero,
        _mm512_set1_epi32(block_len as i32), _mm512_set1_epi32(flags as i32),
    ];
    rounds!(v, m);
    let mut out = [zero; 8];
    for (i, word) in out.iter_mut().enumerate() {
        *word = _mm512_xor_si512(v[i], v[i + 8]);
    }
    out
}
