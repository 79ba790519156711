//! SHA-256 of 16 messages at once: one 32-bit word of each message per lane
//! of a `zmm` register (AVX-512F for the arithmetic, rotations and
//! ternary-logic Ch/Maj/xor3; AVX-512BW for the byte swap).
#![allow(unsafe_code)]

use std::arch::x86_64::*;

use super::{IV, K, Padding};

/// Messages per register.
const LANES: usize = 16;

/// A tail of fewer parents than this goes to the single-stream crate; from
/// this many on, a full 16-lane pass (with lanes repeating the last parent)
/// is cheaper. Measured on a Cascade Lake Xeon without SHA-NI: a pass for
/// one parent takes ~1.35x as long as one `sha2` call, a pass for two
/// 0.55-0.65x as long as two calls.
const MIN_TAIL: usize = 2;

pub(super) fn is_supported() -> bool {
    is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw")
}

/// See [`super::hash_groups`]; the arguments are already checked.
pub(super) fn hash_groups(children: &[[u8; 32]], group: usize, out: &mut [[u8; 32]]) {
    assert!(
        is_supported(),
        "the AVX-512 SHA-256 kernel needs avx512f and avx512bw"
    );
    // SAFETY: the assert above checked that this CPU has every feature that
    // `hash_all` enables.
    unsafe { hash_all(children, group, out) }
}

#[target_feature(enable = "avx512f,avx512bw")]
fn hash_all(children: &[[u8; 32]], group: usize, out: &mut [[u8; 32]]) {
    let pad = Padding::new(group);
    let bytes = children.as_flattened();
    let len = 32 * group;
    let full = out.len() / LANES * LANES;
    let (body, tail) = out.split_at_mut(full);
    for (i, parents) in body.chunks_exact_mut(LANES).enumerate() {
        let base = i * LANES * len;
        let msgs: [&[u8]; LANES] = std::array::from_fn(|j| &bytes[base + j * len..][..len]);
        hash_lanes(&msgs, &pad, parents);
    }
    if tail.len() >= MIN_TAIL {
        let base = full * len;
        let last = tail.len() - 1;
        let msgs: [&[u8]; LANES] =
            std::array::from_fn(|j| &bytes[base + j.min(last) * len..][..len]);
        let mut parents = [[0u8; 32]; LANES];
        hash_lanes(&msgs, &pad, &mut parents);
        tail.copy_from_slice(&parents[..tail.len()]);
    } else {
        super::single_stream(&children[full * group..], group, tail);
    }
}

/// Hashes `msgs` (each `32 * group` bytes) into the first `parents.len()`
/// (at most 16) parents.
#[target_feature(enable = "avx512f,avx512bw")]
fn hash_lanes(msgs: &[&[u8]; LANES], pad: &Padding, parents: &mut [[u8; 32]]) {
    let mut state = [_mm512_setzero_si512(); 8];
    for (lane, iv) in state.iter_mut().zip(IV) {
        *lane = splat(iv);
    }
    for block in 0..pad.data_blocks {
        let rows: [&[u8; 64]; LANES] = std::array::from_fn(|j| {
            msgs[j][64 * block..64 * (block + 1)]
                .try_into()
                .expect("64 bytes")
        });
        compress(&mut state, load_block(&rows));
    }
    if pad.half_data {
        let offset = 64 * pad.data_blocks;
        let mut last = [[0u8; 64]; LANES];
        for (row, msg) in last.iter_mut().zip(msgs) {
            row[..32].copy_from_slice(&msg[offset..offset + 32]);
            row[32..].copy_from_slice(&pad.tail);
        }
        compress(&mut state, load_block(&last.each_ref()));
    } else {
        compress_wk(&mut state, &pad.wk);
    }
    let mut words = [[0u32; LANES]; 8];
    for (word, lane) in words.iter_mut().zip(state) {
        *word = to_u32s(lane);
    }
    for (j, parent) in parents.iter_mut().enumerate() {
        for (bytes, word) in parent.chunks_exact_mut(4).zip(&words) {
            bytes.copy_from_slice(&word[j].to_be_bytes());
        }
    }
}

#[target_feature(enable = "avx512f")]
fn load(bytes: &[u8; 64]) -> __m512i {
    // SAFETY: `bytes` is 64 readable bytes and the load is unaligned.
    unsafe { _mm512_loadu_si512(bytes.as_ptr().cast()) }
}

#[target_feature(enable = "avx512f")]
fn to_u32s(lane: __m512i) -> [u32; LANES] {
    // SAFETY: both types are 64 bytes of plain integers; every bit pattern
    // is a valid value of either.
    unsafe { std::mem::transmute::<__m512i, [u32; LANES]>(lane) }
}

/// Row `j` is message `j`'s 64-byte block; returns its 16 big-endian words
/// with word `t` of every message in vector `t`.
#[target_feature(enable = "avx512f,avx512bw")]
fn load_block(rows: &[&[u8; 64]; LANES]) -> [__m512i; 16] {
    let mut r = [_mm512_setzero_si512(); 16];
    for (lane, row) in r.iter_mut().zip(rows) {
        *lane = load(row);
    }
    let mut w = transpose(r);
    let swap = _mm512_set4_epi32(0x0c0d0e0f, 0x08090a0b, 0x04050607, 0x00010203);
    for lane in &mut w {
        *lane = _mm512_shuffle_epi8(*lane, swap);
    }
    w
}

/// Transposes a 16x16 matrix of 32-bit words held as 16 row vectors.
#[target_feature(enable = "avx512f")]
fn transpose(r: [__m512i; 16]) -> [__m512i; 16] {
    // After the two unpack stages, c[g][m] holds, in its 128-bit block i,
    // column 4i+m of rows 4g..4g+4.
    let mut c = [[_mm512_setzero_si512(); 4]; 4];
    for (g, cg) in c.iter_mut().enumerate() {
        let lo01 = _mm512_unpacklo_epi32(r[4 * g], r[4 * g + 1]);
        let hi01 = _mm512_unpackhi_epi32(r[4 * g], r[4 * g + 1]);
        let lo23 = _mm512_unpacklo_epi32(r[4 * g + 2], r[4 * g + 3]);
        let hi23 = _mm512_unpackhi_epi32(r[4 * g + 2], r[4 * g + 3]);
        cg[0] = _mm512_unpacklo_epi64(lo01, lo23);
        cg[1] = _mm512_unpackhi_epi64(lo01, lo23);
        cg[2] = _mm512_unpacklo_epi64(hi01, hi23);
        cg[3] = _mm512_unpackhi_epi64(hi01, hi23);
    }
    // Then a 4x4 transpose of 128-bit blocks across the row groups.
    let mut out = [_mm512_setzero_si512(); 16];
    for m in 0..4 {
        let u0 = _mm512_shuffle_i32x4::<0x88>(c[0][m], c[1][m]);
        let u1 = _mm512_shuffle_i32x4::<0xdd>(c[0][m], c[1][m]);
        let u2 = _mm512_shuffle_i32x4::<0x88>(c[2][m], c[3][m]);
        let u3 = _mm512_shuffle_i32x4::<0xdd>(c[2][m], c[3][m]);
        out[m] = _mm512_shuffle_i32x4::<0x88>(u0, u2);
        out[4 + m] = _mm512_shuffle_i32x4::<0x88>(u1, u3);
        out[8 + m] = _mm512_shuffle_i32x4::<0xdd>(u0, u2);
        out[12 + m] = _mm512_shuffle_i32x4::<0xdd>(u1, u3);
    }
    out
}

#[target_feature(enable = "avx512f")]
fn splat(x: u32) -> __m512i {
    _mm512_set1_epi32(x as i32)
}

#[target_feature(enable = "avx512f")]
fn add(a: __m512i, b: __m512i) -> __m512i {
    _mm512_add_epi32(a, b)
}

#[target_feature(enable = "avx512f")]
fn xor3(a: __m512i, b: __m512i, c: __m512i) -> __m512i {
    _mm512_ternarylogic_epi32::<0x96>(a, b, c)
}

#[target_feature(enable = "avx512f")]
fn big_sigma0(x: __m512i) -> __m512i {
    xor3(
        _mm512_ror_epi32::<2>(x),
        _mm512_ror_epi32::<13>(x),
        _mm512_ror_epi32::<22>(x),
    )
}

#[target_feature(enable = "avx512f")]
fn big_sigma1(x: __m512i) -> __m512i {
    xor3(
        _mm512_ror_epi32::<6>(x),
        _mm512_ror_epi32::<11>(x),
        _mm512_ror_epi32::<25>(x),
    )
}

#[target_feature(enable = "avx512f")]
fn small_sigma0(x: __m512i) -> __m512i {
    xor3(
        _mm512_ror_epi32::<7>(x),
        _mm512_ror_epi32::<18>(x),
        _mm512_srli_epi32::<3>(x),
    )
}

#[target_feature(enable = "avx512f")]
fn small_sigma1(x: __m512i) -> __m512i {
    xor3(
        _mm512_ror_epi32::<17>(x),
        _mm512_ror_epi32::<19>(x),
        _mm512_srli_epi32::<10>(x),
    )
}

/// (e & f) ^ (!e & g)
#[target_feature(enable = "avx512f")]
fn ch(e: __m512i, f: __m512i, g: __m512i) -> __m512i {
    _mm512_ternarylogic_epi32::<0xca>(e, f, g)
}

/// (a & b) ^ (a & c) ^ (b & c)
#[target_feature(enable = "avx512f")]
fn maj(a: __m512i, b: __m512i, c: __m512i) -> __m512i {
    _mm512_ternarylogic_epi32::<0xe8>(a, b, c)
}

/// One round; the caller rotates the roles of the eight working variables.
macro_rules! round {
    ($a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident, $wk:expr) => {
        let t1 = add(add($h, $wk), add(big_sigma1($e), ch($e, $f, $g)));
        $d = add($d, t1);
        $h = add(t1, add(big_sigma0($a), maj($a, $b, $c)));
    };
}

/// One compression of a data block `w` (word t of every lane in `w[t]`).
#[target_feature(enable = "avx512f")]
fn compress(state: &mut [__m512i; 8], mut w: [__m512i; 16]) {
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = *state;
    for block in 0..4 {
        // Round 16*block + i; from the second block on, w[i] first becomes
        // the schedule word W[16*block + i] (w is a ring of the last 16).
        macro_rules! step {
            ($i:literal, $a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident) => {
                if block > 0 {
                    w[$i] = add(
                        add(w[$i], small_sigma0(w[($i + 1) % 16])),
                        add(w[($i + 9) % 16], small_sigma1(w[($i + 14) % 16])),
                    );
                }
                round!(
                    $a,
                    $b,
                    $c,
                    $d,
                    $e,
                    $f,
                    $g,
                    $h,
                    add(w[$i], splat(K[16 * block + $i]))
                );
            };
        }
        step!(0, a, b, c, d, e, f, g, h);
        step!(1, h, a, b, c, d, e, f, g);
        step!(2, g, h, a, b, c, d, e, f);
        step!(3, f, g, h, a, b, c, d, e);
        step!(4, e, f, g, h, a, b, c, d);
        step!(5, d, e, f, g, h, a, b, c);
        step!(6, c, d, e, f, g, h, a, b);
        step!(7, b, c, d, e, f, g, h, a);
        step!(8, a, b, c, d, e, f, g, h);
        step!(9, h, a, b, c, d, e, f, g);
        step!(10, g, h, a, b, c, d, e, f);
        step!(11, f, g, h, a, b, c, d, e);
        step!(12, e, f, g, h, a, b, c, d);
        step!(13, d, e, f, g, h, a, b, c);
        step!(14, c, d, e, f, g, h, a, b);
        step!(15, b, c, d, e, f, g, h, a);
    }
    for (lane, x) in state.iter_mut().zip([a, b, c, d, e, f, g, h]) {
        *lane = add(*lane, x);
    }
}

/// One compression of a block that is the same in every lane, given as
/// its precomputed `W[t] + K[t]`.
#[target_feature(enable = "avx512f")]
fn compress_wk(state: &mut [__m512i; 8], wk: &[u32; 64]) {
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = *state;
    for t in (0..64).step_by(8) {
        round!(a, b, c, d, e, f, g, h, splat(wk[t]));
        round!(h, a, b, c, d, e, f, g, splat(wk[t + 1]));
        round!(g, h, a, b, c, d, e, f, splat(wk[t + 2]));
        round!(f, g, h, a, b, c, d, e, splat(wk[t + 3]));
        round!(e, f, g, h, a, b, c, d, splat(wk[t + 4]));
        round!(d, e, f, g, h, a, b, c, splat(wk[t + 5]));
        round!(c, d, e, f, g, h, a, b, splat(wk[t + 6]));
        round!(b, c, d, e, f, g, h, a, splat(wk[t + 7]));
    }
    for (lane, x) in state.iter_mut().zip([a, b, c, d, e, f, g, h]) {
        *lane = add(*lane, x);
    }
}
