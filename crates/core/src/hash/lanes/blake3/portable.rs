//! The scalar kernel: one group at a time, written as the specification
//! reads. The model the lane kernels' structure is checked against, and the
//! `portable` single-group kernel of `single.rs` (which `hash_one` and
//! `hash_path` never pick: `blake3::hash` is faster).

use super::{IV, MSG_SCHEDULE, blocks};

/// The quarter-round mixing state words `a`, `b`, `c`, `d` with message
/// words `x` and `y`.
#[inline(always)]
fn g(v: &mut [u32; 16], a: usize, b: usize, c: usize, d: usize, x: u32, y: u32) {
    v[a] = v[a].wrapping_add(v[b]).wrapping_add(x);
    v[d] = (v[d] ^ v[a]).rotate_right(16);
    v[c] = v[c].wrapping_add(v[d]);
    v[b] = (v[b] ^ v[c]).rotate_right(12);
    v[a] = v[a].wrapping_add(v[b]).wrapping_add(y);
    v[d] = (v[d] ^ v[a]).rotate_right(8);
    v[c] = v[c].wrapping_add(v[d]);
    v[b] = (v[b] ^ v[c]).rotate_right(7);
}

/// Round `r`: the four columns, then the four diagonals, each fed the next
/// two words of the round's message order.
#[inline(always)]
fn round(v: &mut [u32; 16], m: &[u32; 16], r: usize) {
    let s = &MSG_SCHEDULE[r];
    g(v, 0, 4, 8, 12, m[s[0]], m[s[1]]);
    g(v, 1, 5, 9, 13, m[s[2]], m[s[3]]);
    g(v, 2, 6, 10, 14, m[s[4]], m[s[5]]);
    g(v, 3, 7, 11, 15, m[s[6]], m[s[7]]);
    g(v, 0, 5, 10, 15, m[s[8]], m[s[9]]);
    g(v, 1, 6, 11, 12, m[s[10]], m[s[11]]);
    g(v, 2, 7, 8, 13, m[s[12]], m[s[13]]);
    g(v, 3, 4, 9, 14, m[s[14]], m[s[15]]);
}

/// The compression function with counter 0, truncated to the 8 words a
/// chaining value (or, for the last block, the hash) needs.
fn compress(cv: &[u32; 8], m: &[u32; 16], block_len: u32, flags: u32) -> [u32; 8] {
    #[rustfmt::skip]
    let mut v = [
        cv[0], cv[1], cv[2], cv[3], cv[4], cv[5], cv[6], cv[7],
        IV[0], IV[1], IV[2], IV[3], 0, 0, block_len, flags,
    ];
    // Spelled out (not a loop) so each round's message order is a constant.
    round(&mut v, m, 0);
    round(&mut v, m, 1);
    round(&mut v, m, 2);
    round(&mut v, m, 3);
    round(&mut v, m, 4);
    round(&mut v, m, 5);
    round(&mut v, m, 6);
    std::array::from_fn(|i| v[i] ^ v[i + 8])
}

/// BLAKE3 of one group of children concatenated.
pub(super) fn hash_group(children: &[[u8; 32]]) -> [u8; 32] {
    let bytes = children.as_flattened();
    let mut cv = IV;
    for block in blocks(children.len()) {
        let data = &bytes[block.offset..block.offset + block.len as usize];
        // Words past a short block's end are its zero padding.
        let mut m = [0u32; 16];
        for (word, le) in m.iter_mut().zip(data.chunks_exact(4)) {
            *word = u32::from_le_bytes(le.try_into().expect("4-byte chunk"));
        }
        cv = compress(&cv, &m, block.len, block.flags);
    }
    let mut hash = [0u8; 32];
    for (le, word) in hash.chunks_exact_mut(4).zip(cv) {
        le.copy_from_slice(&word.to_le_bytes());
    }
    hash
}

/// `out[i]` = [`hash_group`] of the `i`-th `group` children.
#[cfg(test)]
pub(super) fn hash_all(children: &[[u8; 32]], group: usize, out: &mut [[u8; 32]]) {
    for (parent, members) in out.iter_mut().zip(children.chunks_exact(group)) {
        *parent = hash_group(members);
    }
}
