//! SHA-256 of 8 messages at once: one 32-bit word of each message per lane
//! of a `ymm` register (AVX2; rotations are shift, shift, or).
#![allow(unsafe_code)]

use std::arch::x86_64::*;

use super::{IV, K, Padding};

/// Messages per register.
const LANES: usize = 8;

/// A tail of fewer parents than this goes to the single-stream crate; from
/// this many on, a full 8-lane pass (with lanes repeating the last parent)
/// is cheaper. Measured on a Cascade Lake Xeon without SHA-NI: a pass for
/// one parent takes ~1.35x as long as one `sha2` call, a pass for two
/// 0.55-0.65x as long as two calls.
const MIN_TAIL: usize = 2;

pub(super) fn is_supported() -> bool {
    is_x86_feature_detected!("avx2")
}

/// See [`super::hash_groups`]; the arguments are already checked.
pub(super) fn hash_groups(children: &[[u8; 32]], group: usize, out: &mut [[u8; 32]]) {
    assert!(is_supported(), "the AVX2 SHA-256 kernel needs avx2");
    // SAFETY: the assert above checked that this CPU has every feature that
    // `hash_all` enables.
    unsafe { hash_all(children, group, out) }
}

#[target_feature(enable = "avx2")]
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
/// (at most 8) parents.
#[target_feature(enable = "avx2")]
fn hash_lanes(msgs: &[&[u8]; LANES], pad: &Padding, parents: &mut [[u8; 32]]) {
    let mut state = [_mm256_setzero_si256(); 8];
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

#[target_feature(enable = "avx2")]
fn load(bytes: &[u8; 32]) -> __m256i {
    // SAFETY: `bytes` is 32 readable bytes and the load is unaligned.
    unsafe { _mm256_loadu_si256(bytes.as_ptr().cast()) }
}

#[target_feature(enable = "avx2")]
fn to_u32s(lane: __m256i) -> [u32; LANES] {
    // SAFETY: both types are 32 bytes of plain integers; every bit pattern
    // is a valid value of either.
    unsafe { std::mem::transmute::<__m256i, [u32; LANES]>(lane) }
}

/// Row `j` is message `j`'s 64-byte block; returns its 16 big-endian words
/// with word `t` of every message in vector `t`.
#[target_feature(enable = "avx2")]
fn load_block(rows: &[&[u8; 64]; LANES]) -> [__m256i; 16] {
    let swap = _mm256_set_epi32(
        0x0c0d0e0f, 0x08090a0b, 0x04050607, 0x00010203, 0x0c0d0e0f, 0x08090a0b, 0x04050607,
        0x00010203,
    );
    let mut w = [_mm256_setzero_si256(); 16];
    for (half, words) in w.chunks_exact_mut(8).enumerate() {
        let mut r = [_mm256_setzero_si256(); 8];
        for (lane, row) in r.iter_mut().zip(rows) {
            let (bytes, _) = row.as_chunks::<32>();
            *lane = load(&bytes[half]);
        }
        for (word, lane) in words.iter_mut().zip(transpose(r)) {
            *word = _mm256_shuffle_epi8(lane, swap);
        }
    }
    w
}

/// Transposes an 8x8 matrix of 32-bit words held as 8 row vectors.
#[target_feature(enable = "avx2")]
fn transpose(r: [__m256i; 8]) -> [__m256i; 8] {
    // After the two unpack stages, c[g][m] holds, in its 128-bit half i,
    // column 4i+m of rows 4g..4g+4.
    let mut c = [[_mm256_setzero_si256(); 4]; 2];
    for (g, cg) in c.iter_mut().enumerate() {
        let lo01 = _mm256_unpacklo_epi32(r[4 * g], r[4 * g + 1]);
        let hi01 = _mm256_unpackhi_epi32(r[4 * g], r[4 * g + 1]);
        let lo23 = _mm256_unpacklo_epi32(r[4 * g + 2], r[4 * g + 3]);
        let hi23 = _mm256_unpackhi_epi32(r[4 * g + 2], r[4 * g + 3]);
        cg[0] = _mm256_unpacklo_epi64(lo01, lo23);
        cg[1] = _mm256_unpackhi_epi64(lo01, lo23);
        cg[2] = _mm256_unpacklo_epi64(hi01, hi23);
        cg[3] = _mm256_unpackhi_epi64(hi01, hi23);
    }
    let mut out = [_mm256_setzero_si256(); 8];
    for m in 0..4 {
        out[m] = _mm256_permute2x128_si256::<0x20>(c[0][m], c[1][m]);
        out[4 + m] = _mm256_permute2x128_si256::<0x31>(c[0][m], c[1][m]);
    }
    out
}

#[target_feature(enable = "avx2")]
fn splat(x: u32) -> __m256i {
    _mm256_set1_epi32(x as i32)
}

#[target_feature(enable = "avx2")]
fn add(a: __m256i, b: __m256i) -> __m256i {
    _mm256_add_epi32(a, b)
}

#[target_feature(enable = "avx2")]
fn xor(a: __m256i, b: __m256i) -> __m256i {
    _mm256_xor_si256(a, b)
}

/// Rotates every 32-bit lane right by `R` (`L` must be `32 - R`).
#[target_feature(enable = "avx2")]
fn ror<const R: i32, const L: i32>(x: __m256i) -> __m256i {
    _mm256_or_si256(_mm256_srli_epi32::<R>(x), _mm256_slli_epi32::<L>(x))
}

#[target_feature(enable = "avx2")]
fn big_sigma0(x: __m256i) -> __m256i {
    xor(xor(ror::<2, 30>(x), ror::<13, 19>(x)), ror::<22, 10>(x))
}

#[target_feature(enable = "avx2")]
fn big_sigma1(x: __m256i) -> __m256i {
    xor(xor(ror::<6, 26>(x), ror::<11, 21>(x)), ror::<25, 7>(x))
}

#[target_feature(enable = "avx2")]
fn small_sigma0(x: __m256i) -> __m256i {
    xor(
        xor(ror::<7, 25>(x), ror::<18, 14>(x)),
        _mm256_srli_epi32::<3>(x),
    )
}

#[target_feature(enable = "avx2")]
fn small_sigma1(x: __m256i) -> __m256i {
    xor(
        xor(ror::<17, 15>(x), ror::<19, 13>(x)),
        _mm256_srli_epi32::<10>(x),
    )
}

/// (e & f) ^ (!e & g), as ((f ^ g) & e) ^ g
#[target_feature(enable = "avx2")]
fn ch(e: __m256i, f: __m256i, g: __m256i) -> __m256i {
    xor(_mm256_and_si256(xor(f, g), e), g)
}

/// (a & b) ^ (a & c) ^ (b & c), as ((a ^ b) & (b ^ c)) ^ b; the next
/// round's b ^ c is this round's a ^ b, which the compiler reuses.
#[target_feature(enable = "avx2")]
fn maj(a: __m256i, b: __m256i, c: __m256i) -> __m256i {
    xor(_mm256_and_si256(xor(a, b), xor(b, c)), b)
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
#[target_feature(enable = "avx2")]
fn compress(state: &mut [__m256i; 8], mut w: [__m256i; 16]) {
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
#[target_feature(enable = "avx2")]
fn compress_wk(state: &mut [__m256i; 8], wk: &[u32; 64]) {
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
