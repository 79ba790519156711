//! The x86-64 kernels of [`super`]: the SSE4.1 and AVX-512 compressions of
//! one group and of a proof path, and the in-lane shuffle network that
//! carries the message schedule (the argument is in the parent module's
//! header and on `mod x86` there).

use super::*;

/// A chaining value: words 0..4 and 4..8.
type Cv = [__m128i; 2];

/// Lane permutations for `shuffle1` / `shuffle2`: `lanes(x, y, z, w)`
/// puts source lanes `x, y, z, w` in lanes 0..4.
const fn lanes(x: i32, y: i32, z: i32, w: i32) -> i32 {
    x | (y << 2) | (z << 4) | (w << 6)
}
/// Lane `j` takes lane `j + 3` (row `a` into the diagonal step, `c` out).
const FROM_LEFT: i32 = lanes(3, 0, 1, 2);
/// Lane `j` takes lane `j + 1` (row `c` into the diagonal step, `a` out).
const FROM_RIGHT: i32 = lanes(1, 2, 3, 0);
/// Lane `j` takes lane `j + 2` (row `d`, both ways).
const SWAP_HALVES: i32 = lanes(2, 3, 0, 1);

/// Which message words round `r` feeds each lane, as four vectors: the
/// first and second word of the column step (lane `j` = G number `j`),
/// then of the diagonal step (lane `j` = G number `(j + 3) % 4`): what
/// `first_round` and `next_round` produce (checked by a test).
#[cfg(test)]
const fn round_words(r: usize) -> [[usize; 4]; 4] {
    let s = &super::super::MSG_SCHEDULE[r];
    [
        [s[0], s[2], s[4], s[6]],
        [s[1], s[3], s[5], s[7]],
        [s[14], s[8], s[10], s[12]],
        [s[15], s[9], s[11], s[13]],
    ]
}

/// How many levels above the main chain the prefix stream may work: the
/// next one only, so at most one finished prefix waits at a time, in
/// registers. (A ring of 16 was an array the compiler initialised with
/// 512-bit stores; the kernels keep to 128- and 256-bit registers, as
/// 512-bit instructions can lower this CPU's clock.) In a simulation of
/// random paths, looking further ahead saved nothing at N = 4 and up to
/// 7% of the compressions at N = 16.
const AHEAD: usize = 2;

#[target_feature(enable = "sse2")]
#[inline]
fn iv() -> Cv {
    [
        _mm_setr_epi32(IV[0] as i32, IV[1] as i32, IV[2] as i32, IV[3] as i32),
        _mm_setr_epi32(IV[4] as i32, IV[5] as i32, IV[6] as i32, IV[7] as i32),
    ]
}

#[target_feature(enable = "sse2")]
#[inline]
fn load16(bytes: &[u8; 16]) -> __m128i {
    // SAFETY: `bytes` is a valid reference to exactly 16 readable bytes,
    // the width of this unaligned load; SSE2 is enabled.
    unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) }
}

#[target_feature(enable = "sse2")]
#[inline]
fn store16(bytes: &mut [u8; 16], v: __m128i) {
    // SAFETY: `bytes` is a valid exclusive reference to exactly 16
    // writable bytes, the width of this unaligned store; SSE2 is enabled.
    unsafe { _mm_storeu_si128(bytes.as_mut_ptr().cast(), v) }
}

/// A 32-byte value as a chaining value (or two message rows).
#[target_feature(enable = "sse2")]
#[inline]
fn load32(bytes: &[u8; 32]) -> Cv {
    let (low, high) = bytes.split_at(16);
    [
        load16(low.try_into().expect("16 bytes")),
        load16(high.try_into().expect("16 bytes")),
    ]
}

/// A chaining value's 32 bytes (the hash, for the last block's).
#[target_feature(enable = "sse2")]
#[inline]
fn to_bytes(cv: Cv) -> [u8; 32] {
    let mut bytes = [0u8; 32];
    let (low, high) = bytes.split_at_mut(16);
    store16(low.try_into().expect("16 bytes"), cv[0]);
    store16(high.try_into().expect("16 bytes"), cv[1]);
    bytes
}

/// The four 16-byte message rows of a block of 64 bytes, or of 32
/// followed by zeros.
#[target_feature(enable = "sse2")]
#[inline]
fn rows(block: &[u8]) -> [__m128i; 4] {
    let row = |k: usize| match block.get(16 * k..16 * k + 16) {
        Some(row) => load16(row.try_into().expect("16 bytes")),
        None => _mm_setzero_si128(),
    };
    [row(0), row(1), row(2), row(3)]
}

/// The message rows of the block holding the path node: the node and
/// its neighbour in the group (none when the node is an odd group's last
/// member), node first if its position is even.
#[target_feature(enable = "sse2")]
#[inline]
fn node_rows(node: Cv, neighbour: Option<&[u8; 32]>, node_first: bool) -> [__m128i; 4] {
    let [n0, n1] = match neighbour {
        Some(bytes) => load32(bytes),
        None => [_mm_setzero_si128(); 2],
    };
    if node_first {
        [node[0], node[1], n0, n1]
    } else {
        [n0, n1, node[0], node[1]]
    }
}

/// The flags of block `index` of a `count`-block chunk.
#[inline]
fn block_flags(index: usize, count: usize) -> u32 {
    let mut flags = 0;
    if index == 0 {
        flags |= CHUNK_START;
    }
    if index + 1 == count {
        flags |= CHUNK_END | ROOT;
    }
    flags
}

/// The length of block `index` of a group of `width`: 64 bytes, but 32
/// for an odd group's last.
#[inline]
fn block_len(index: usize, width: usize) -> u32 {
    if 2 * index + 1 == width { 32 } else { 64 }
}

/// The prefix stream's position: the next block to compress of the
/// first level at or above `level` whose path node is not in its first
/// block (`level == path.len()` when no prefix is left).
#[derive(Clone, Copy, Debug)]
struct Prefix {
    level: usize,
    block: usize,
    /// Where the level's siblings start in the proof's.
    offset: usize,
}

impl Prefix {
    /// The first level from `level` up (its siblings from `offset`)
    /// with a prefix.
    #[inline]
    fn seek(path: &[PathGroup], mut level: usize, mut offset: usize) -> Prefix {
        while let Some(group) = path.get(level) {
            if group.node_block() > 0 {
                break;
            }
            offset += group.width() - 1;
            level += 1;
        }
        Prefix {
            level,
            block: 0,
            offset,
        }
    }

    /// Whether the stream has a block to compress while the main chain
    /// is at `main` (it must stay below `main + AHEAD`).
    #[inline]
    fn ready_at(&self, path: &[PathGroup], main: usize) -> bool {
        self.level < path.len() && self.level < main + AHEAD
    }

    /// The block's 64 bytes: members `2 * block` and `2 * block + 1`,
    /// siblings before the node, so siblings at the same indices.
    #[inline]
    fn bytes<'a>(&self, siblings: &'a [[u8; 32]]) -> &'a [u8] {
        let at = self.offset + 2 * self.block;
        siblings[at..at + 2].as_flattened()
    }

    /// A prefix block is never its chunk's last.
    #[inline]
    fn flags(&self) -> u32 {
        if self.block == 0 { CHUNK_START } else { 0 }
    }

    /// Moves past the block just compressed. True when that finished
    /// the level's prefix; the stream then seeks the next one.
    #[inline]
    fn advance(&mut self, path: &[PathGroup]) -> bool {
        self.block += 1;
        let group = path[self.level];
        if self.block < group.node_block() {
            return false;
        }
        *self = Prefix::seek(path, self.level + 1, self.offset + group.width() - 1);
        true
    }
}

/// Defines `first_round` (round 0's message vectors, in
/// `round_words` order, from the block's four rows) and `next_round`
/// (round `r + 1`'s from round `r`'s: BLAKE3's message permutation
/// carried through that layout) for the module's `V`.
macro_rules! message_schedule {
    ($features:literal) => {
        #[target_feature(enable = $features)]
        #[inline]
        fn first_round([m0, m1, m2, m3]: [V; 4]) -> [V; 4] {
            // Words 8, 10, 12, 14 and 9, 11, 13, 15, rotated to start
            // with 14 and 15.
            let even = shuffle2::<{ lanes(0, 2, 0, 2) }>(m2, m3);
            let odd = shuffle2::<{ lanes(1, 3, 1, 3) }>(m2, m3);
            [
                shuffle2::<{ lanes(0, 2, 0, 2) }>(m0, m1),
                shuffle2::<{ lanes(1, 3, 1, 3) }>(m0, m1),
                shuffle1::<FROM_LEFT>(even),
                shuffle1::<FROM_LEFT>(odd),
            ]
        }

        /// With `M` round `r`'s words in order, the inputs hold
        /// `cx = (M0, M2, M4, M6)`, `cy = (M1, M3, M5, M7)`,
        /// `dx = (M14, M8, M10, M12)`, `dy = (M15, M9, M11, M13)`; the
        /// next round's word `i` is `M[MSG_PERMUTATION[i]]`.
        #[target_feature(enable = $features)]
        #[inline]
        fn next_round([cx, cy, dx, dy]: [V; 4]) -> [V; 4] {
            // (M2, M3, M7, M4) from (M2, M4, M3, M7).
            let cx_next =
                shuffle1::<{ lanes(0, 2, 3, 1) }>(shuffle2::<{ lanes(1, 2, 1, 3) }>(cx, cy));
            // (M6, M10, M0, M13): lanes 0 and 2 from (M6, _, M0, _),
            // 1 and 3 from (_, M10, _, M13).
            let cy_next = blend_odd(
                shuffle1::<{ lanes(3, 0, 0, 0) }>(cx),
                shuffle2::<{ lanes(0, 2, 0, 3) }>(dx, dy),
            );
            // (M15, M1, M12, M9): (M15, M1) from (M15, M1, M9, M3) and
            // (M12, M9) from (M12, M14, M9, M15).
            let dx_next = shuffle2::<{ lanes(0, 1, 0, 2) }>(
                unpack_low(dy, cy),
                shuffle2::<{ lanes(3, 0, 1, 0) }>(dx, dy),
            );
            // (M8, M11, M5, M14): M8 from the top lane of
            // (_, _, _, M8), then (M11, M5, M14) from (M11, M5, M14, _)
            // shifted up a lane.
            let tail = shuffle2::<{ lanes(0, 1, 0, 0) }>(unpack_high(dy, cy), dx);
            let dy_next = align12(tail, shuffle1::<{ lanes(0, 0, 0, 1) }>(dx));
            [cx_next, cy_next, dx_next, dy_next]
        }
    };
}

/// The 7 rounds on each state `$s` (rows `[a, b, c, d]`) with its
/// message `$m` (round 0's vectors from `first_round`, advanced by
/// `next_round` between rounds), the states' instructions interleaved
/// step by step so that independent streams overlap.
macro_rules! rounds {
    ($($s:ident / $m:ident),+) => {
        rounds!(@round $($s / $m),+);
        $( $m = next_round($m); )+
        rounds!(@round $($s / $m),+);
        $( $m = next_round($m); )+
        rounds!(@round $($s / $m),+);
        $( $m = next_round($m); )+
        rounds!(@round $($s / $m),+);
        $( $m = next_round($m); )+
        rounds!(@round $($s / $m),+);
        $( $m = next_round($m); )+
        rounds!(@round $($s / $m),+);
        $( $m = next_round($m); )+
        rounds!(@round $($s / $m),+);
    };
    (@round $($s:ident / $m:ident),+) => {
        rounds!(@g $($s, $m[0], $m[1]);+);
        // Line the diagonals up in lanes (row `b` stays put)...
        $(
            $s[0] = shuffle1::<FROM_LEFT>($s[0]);
            $s[2] = shuffle1::<FROM_RIGHT>($s[2]);
            $s[3] = shuffle1::<SWAP_HALVES>($s[3]);
        )+
        rounds!(@g $($s, $m[2], $m[3]);+);
        // ...and back.
        $(
            $s[0] = shuffle1::<FROM_RIGHT>($s[0]);
            $s[2] = shuffle1::<FROM_LEFT>($s[2]);
            $s[3] = shuffle1::<SWAP_HALVES>($s[3]);
        )+
    };
    // G in every lane. The message word is added first: it does not
    // wait for `b`, so that addition stays off the dependency chain.
    (@g $($s:ident, $x:expr, $y:expr);+) => {
        $( $s[0] = add(add($s[0], $x), $s[1]); )+
        $( $s[3] = rot16(xor($s[3], $s[0])); )+
        $( $s[2] = add($s[2], $s[3]); )+
        $( $s[1] = rot12(xor($s[1], $s[2])); )+
        $( $s[0] = add(add($s[0], $y), $s[1]); )+
        $( $s[3] = rot8(xor($s[3], $s[0])); )+
        $( $s[2] = add($s[2], $s[3]); )+
        $( $s[1] = rot7(xor($s[1], $s[2])); )+
    };
}

/// SSE4.1 on xmm registers: rotations by whole bytes are byte shuffles,
/// the others two shifts and an or. A path's two streams are two states
/// whose instructions interleave.
mod sse41 {
    use super::*;

    type V = __m128i;

    #[target_feature(enable = "sse4.1")]
    #[inline]
    fn add(a: V, b: V) -> V {
        _mm_add_epi32(a, b)
    }
    #[target_feature(enable = "sse4.1")]
    #[inline]
    fn xor(a: V, b: V) -> V {
        _mm_xor_si128(a, b)
    }
    #[target_feature(enable = "sse4.1")]
    #[inline]
    fn rot16(x: V) -> V {
        _mm_shuffle_epi8(
            x,
            _mm_setr_epi8(2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13),
        )
    }
    #[target_feature(enable = "sse4.1")]
    #[inline]
    fn rot12(x: V) -> V {
        _mm_or_si128(_mm_srli_epi32::<12>(x), _mm_slli_epi32::<20>(x))
    }
    #[target_feature(enable = "sse4.1")]
    #[inline]
    fn rot8(x: V) -> V {
        _mm_shuffle_epi8(
            x,
            _mm_setr_epi8(1, 2, 3, 0, 5, 6, 7, 4, 9, 10, 11, 8, 13, 14, 15, 12),
        )
    }
    #[target_feature(enable = "sse4.1")]
    #[inline]
    fn rot7(x: V) -> V {
        _mm_or_si128(_mm_srli_epi32::<7>(x), _mm_slli_epi32::<25>(x))
    }
    #[target_feature(enable = "sse4.1")]
    #[inline]
    fn shuffle1<const LANES: i32>(a: V) -> V {
        _mm_shuffle_epi32::<LANES>(a)
    }
    /// Lanes 0 and 1 from `a`, 2 and 3 from `b`.
    #[target_feature(enable = "sse4.1")]
    #[inline]
    fn shuffle2<const LANES: i32>(a: V, b: V) -> V {
        _mm_castps_si128(_mm_shuffle_ps::<LANES>(
            _mm_castsi128_ps(a),
            _mm_castsi128_ps(b),
        ))
    }
    /// Lanes 0 and 2 from `a`, 1 and 3 from `b`.
    #[target_feature(enable = "sse4.1")]
    #[inline]
    fn blend_odd(a: V, b: V) -> V {
        _mm_blend_epi16::<0b1100_1100>(a, b)
    }
    #[target_feature(enable = "sse4.1")]
    #[inline]
    fn unpack_low(a: V, b: V) -> V {
        _mm_unpacklo_epi32(a, b)
    }
    #[target_feature(enable = "sse4.1")]
    #[inline]
    fn unpack_high(a: V, b: V) -> V {
        _mm_unpackhi_epi32(a, b)
    }
    /// `(low[3], high[0], high[1], high[2])`.
    #[target_feature(enable = "sse4.1")]
    #[inline]
    fn align12(high: V, low: V) -> V {
        _mm_alignr_epi8::<12>(high, low)
    }

    message_schedule!("sse4.1");

    /// Compresses each chaining value `$cv` in place with message rows
    /// `$rows`, block length `$len` and `$flags` (counter 0), `$s` and
    /// `$m` naming its state and message; several streams interleave.
    macro_rules! compress {
        ($($s:ident / $m:ident: $cv:ident, $rows:expr, $len:expr, $flags:expr);+) => {
            $(
                let mut $m = first_round($rows);
                let mut $s = [
                    $cv[0],
                    $cv[1],
                    iv()[0],
                    _mm_setr_epi32(0, 0, len_word($len), $flags as i32),
                ];
            )+
            rounds!($($s / $m),+);
            $( $cv = [xor($s[0], $s[2]), xor($s[1], $s[3])]; )+
        };
    }

    /// One compression of the main chain's `$cv`, interleaved with the
    /// prefix stream's next block when it has one; a prefix the pair
    /// finishes goes to `$ready`.
    macro_rules! paired {
        ($path:ident, $siblings:ident, $level:ident, $ready:ident, $ahead:ident,
         $ahead_cv:ident; $cv:ident, $rows:expr, $len:expr, $flags:expr) => {
            if $ahead.ready_at($path, $level) {
                if $ahead.block == 0 {
                    $ahead_cv = iv();
                }
                let other = rows($ahead.bytes($siblings));
                let other_flags = $ahead.flags();
                compress!(s / m: $cv, $rows, $len, $flags;
                    t / n: $ahead_cv, other, 64, other_flags);
                if $ahead.advance($path) {
                    $ready = $ahead_cv;
                }
            } else {
                compress!(s / m: $cv, $rows, $len, $flags);
            }
        };
    }

    /// BLAKE3 of `children` (2..=16 of them) concatenated.
    ///
    /// # Safety
    /// The CPU must support SSE4.1.
    #[target_feature(enable = "sse4.1")]
    pub(crate) unsafe fn one_sse41(children: &[[u8; 32]]) -> [u8; 32] {
        let input = children.as_flattened();
        let count = children.len().div_ceil(2);
        let mut cv = iv();
        for index in 0..count {
            let block = &input[index * 64..input.len().min(index * 64 + 64)];
            compress!(s / m: cv, rows(block), block_word_len(block), block_flags(index, count));
        }
        to_bytes(cv)
    }

    /// [`hash_path`] (whose checks the arguments have passed): the main
    /// chain compresses each level's blocks from the node's on; the
    /// prefix stream, interleaved with it, the blocks before the node's
    /// of the level above.
    ///
    /// # Safety
    /// The CPU must support SSE4.1.
    #[target_feature(enable = "sse4.1")]
    pub(crate) unsafe fn path_sse41(
        node: &[u8; 32],
        path: &[PathGroup],
        siblings: &[[u8; 32]],
    ) -> [u8; 32] {
        // The prefix the stream finished for the level above the main
        // chain's, if it has.
        let mut ready = iv();
        let mut ahead = Prefix::seek(path, 0, 0);
        let mut ahead_cv = iv();
        let mut node = load32(node);
        let mut offset = 0;
        for (level, &group) in path.iter().enumerate() {
            let members = &siblings[offset..offset + group.width() - 1];
            let first = group.node_block();
            let count = group.blocks();
            let mut cv = iv();
            if first > 0 && ahead.level == level {
                // The stream has not finished this level's prefix: the
                // main chain takes it over, the stream moves up.
                let mut own = ahead;
                cv = if own.block == 0 { iv() } else { ahead_cv };
                ahead = Prefix::seek(path, level + 1, offset + group.width() - 1);
                while own.block < first {
                    paired!(path, siblings, level, ready, ahead, ahead_cv;
                        cv, rows(own.bytes(siblings)), 64, own.flags());
                    own.block += 1;
                }
            } else if first > 0 {
                // The stream moved past this level: it finished it.
                cv = ready;
            }
            for block in first..count {
                let rows = if block == first {
                    node_rows(node, members.get(2 * first), group.position() % 2 == 0)
                } else {
                    // Members 2 * block and 2 * block + 1 come after
                    // the node: siblings one index lower.
                    rows(members[2 * block - 1..members.len().min(2 * block + 1)].as_flattened())
                };
                paired!(path, siblings, level, ready, ahead, ahead_cv;
                    cv, rows, block_len(block, group.width()), block_flags(block, count));
            }
            node = cv;
            offset += group.width() - 1;
        }
        to_bytes(node)
    }

    #[cfg(test)]
    #[target_feature(enable = "sse4.1")]
    pub(super) fn schedule_words(block: &[u8; 64]) -> [[[u32; 4]; 4]; 7] {
        let mut m = first_round(rows(block));
        let mut out = [[[0u32; 4]; 4]; 7];
        for round in &mut out {
            for (vector, v) in round.iter_mut().zip(m) {
                *vector = words(v);
            }
            m = next_round(m);
        }
        out
    }
}

/// AVX-512 VL on ymm registers: every rotation is one `vprord`, and the
/// two 128-bit halves of each register are two streams, so a path's
/// main chain and prefix stream share every instruction (the pair costs
/// what one compression costs). The low halves are the main chain.
mod avx512 {
    use super::*;

    type V = __m256i;
    /// Two chaining values: the low halves one stream's, the high the
    /// other's.
    type Pair = [V; 2];

    #[target_feature(enable = "avx2,avx512f,avx512vl")]
    #[inline]
    fn add(a: V, b: V) -> V {
        _mm256_add_epi32(a, b)
    }
    #[target_feature(enable = "avx2,avx512f,avx512vl")]
    #[inline]
    fn xor(a: V, b: V) -> V {
        _mm256_xor_si256(a, b)
    }
    #[target_feature(enable = "avx2,avx512f,avx512vl")]
    #[inline]
    fn rot16(x: V) -> V {
        _mm256_ror_epi32::<16>(x)
    }
    #[target_feature(enable = "avx2,avx512f,avx512vl")]
    #[inline]
    fn rot12(x: V) -> V {
        _mm256_ror_epi32::<12>(x)
    }
    #[target_feature(enable = "avx2,avx512f,avx512vl")]
    #[inline]
    fn rot8(x: V) -> V {
        _mm256_ror_epi32::<8>(x)
    }
    #[target_feature(enable = "avx2,avx512f,avx512vl")]
    #[inline]
    fn rot7(x: V) -> V {
        _mm256_ror_epi32::<7>(x)
    }
    #[target_feature(enable = "avx2,avx512f,avx512vl")]
    #[inline]
    fn shuffle1<const LANES: i32>(a: V) -> V {
        _mm256_shuffle_epi32::<LANES>(a)
    }
    /// Lanes 0 and 1 of each half from `a`, 2 and 3 from `b`.
    #[target_feature(enable = "avx2,avx512f,avx512vl")]
    #[inline]
    fn shuffle2<const LANES: i32>(a: V, b: V) -> V {
        _mm256_castps_si256(_mm256_shuffle_ps::<LANES>(
            _mm256_castsi256_ps(a),
            _mm256_castsi256_ps(b),
        ))
    }
    /// Lanes 0 and 2 of each half from `a`, 1 and 3 from `b`.
    #[target_feature(enable = "avx2,avx512f,avx512vl")]
    #[inline]
    fn blend_odd(a: V, b: V) -> V {
        _mm256_blend_epi32::<0b1010_1010>(a, b)
    }
    #[target_feature(enable = "avx2,avx512f,avx512vl")]
    #[inline]
    fn unpack_low(a: V, b: V) -> V {
        _mm256_unpacklo_epi32(a, b)
    }
    #[target_feature(enable = "avx2,avx512f,avx512vl")]
    #[inline]
    fn unpack_high(a: V, b: V) -> V {
        _mm256_unpackhi_epi32(a, b)
    }
    /// `(low[3], high[0], high[1], high[2])` in each half.
    #[target_feature(enable = "avx2,avx512f,avx512vl")]
    #[inline]
    fn align12(high: V, low: V) -> V {
        _mm256_alignr_epi8::<12>(high, low)
    }

    message_schedule!("avx2,avx512f,avx512vl");

    /// `low` in the low half, `high` in the high.
    #[target_feature(enable = "avx2,avx512f,avx512vl")]
    #[inline]
    fn halves(low: __m128i, high: __m128i) -> V {
        _mm256_set_m128i(high, low)
    }

    /// Both halves' message rows: stream one's `low`, and stream two's
    /// `high`, or, when it idles, anything.
    #[target_feature(enable = "avx2,avx512f,avx512vl")]
    #[inline]
    fn pair_rows(low: [__m128i; 4], high: Option<[__m128i; 4]>) -> [V; 4] {
        match high {
            Some(high) => [
                halves(low[0], high[0]),
                halves(low[1], high[1]),
                halves(low[2], high[2]),
                halves(low[3], high[3]),
            ],
            None => [
                _mm256_castsi128_si256(low[0]),
                _mm256_castsi128_si256(low[1]),
                _mm256_castsi128_si256(low[2]),
                _mm256_castsi128_si256(low[3]),
            ],
        }
    }

    /// Replaces the low halves of `pair` with `cv`.
    #[target_feature(enable = "avx2,avx512f,avx512vl")]
    #[inline]
    fn with_low(pair: Pair, cv: Cv) -> Pair {
        [
            _mm256_blend_epi32::<0b0000_1111>(pair[0], _mm256_castsi128_si256(cv[0])),
            _mm256_blend_epi32::<0b0000_1111>(pair[1], _mm256_castsi128_si256(cv[1])),
        ]
    }

    /// Replaces the high halves of `pair` with the IV.
    #[target_feature(enable = "avx2,avx512f,avx512vl")]
    #[inline]
    fn with_iv_high(pair: Pair) -> Pair {
        let iv = iv();
        [
            _mm256_blend_epi32::<0b1111_0000>(pair[0], halves(iv[0], iv[0])),
            _mm256_blend_epi32::<0b1111_0000>(pair[1], halves(iv[1], iv[1])),
        ]
    }

    #[target_feature(enable = "avx2,avx512f,avx512vl")]
    #[inline]
    fn low(pair: Pair) -> Cv {
        [
            _mm256_castsi256_si128(pair[0]),
            _mm256_castsi256_si128(pair[1]),
        ]
    }

    #[target_feature(enable = "avx2,avx512f,avx512vl")]
    #[inline]
    fn high(pair: Pair) -> Cv {
        [
            _mm256_extracti128_si256::<1>(pair[0]),
            _mm256_extracti128_si256::<1>(pair[1]),
        ]
    }

    /// Compresses both halves of `$cv` (a [`Pair`]) in place: message
    /// rows `$rows`, and for each half its block length and flags.
    macro_rules! compress_pair {
        ($cv:ident, $rows:expr, $len:expr, $flags:expr, $len2:expr, $flags2:expr) => {
            let mut m = first_round($rows);
            let iv = iv();
            let mut s = [
                $cv[0],
                $cv[1],
                halves(iv[0], iv[0]),
                _mm256_setr_epi32(
                    0,
                    0,
                    len_word($len),
                    $flags as i32,
                    0,
                    0,
                    len_word($len2),
                    $flags2 as i32,
                ),
            ];
            rounds!(s / m);
            $cv = [xor(s[0], s[2]), xor(s[1], s[3])];
        };
    }

    /// BLAKE3 of `children` (2..=16 of them) concatenated, in the low
    /// halves.
    ///
    /// # Safety
    /// The CPU must support AVX2 and AVX-512 F and VL.
    #[target_feature(enable = "avx2,avx512f,avx512vl")]
    pub(crate) unsafe fn one_avx512(children: &[[u8; 32]]) -> [u8; 32] {
        let input = children.as_flattened();
        let count = children.len().div_ceil(2);
        let iv = iv();
        let mut cv = [halves(iv[0], iv[0]), halves(iv[1], iv[1])];
        for index in 0..count {
            let block = &input[index * 64..input.len().min(index * 64 + 64)];
            let rows = pair_rows(rows(block), None);
            compress_pair!(
                cv,
                rows,
                block_word_len(block),
                block_flags(index, count),
                0,
                0
            );
        }
        to_bytes(low(cv))
    }

    /// [`hash_path`] (whose checks the arguments have passed), the main
    /// chain in the low halves, the prefix stream in the high halves.
    /// One loop of steps, each one compression of both halves, so the
    /// rounds are expanded once (a loop per phase, as in `path_sse41`,
    /// made the kernel 2.7 times the size and no faster).
    ///
    /// # Safety
    /// The CPU must support AVX2 and AVX-512 F and VL.
    #[target_feature(enable = "avx2,avx512f,avx512vl")]
    pub(crate) unsafe fn path_avx512(
        node: &[u8; 32],
        path: &[PathGroup],
        siblings: &[[u8; 32]],
    ) -> [u8; 32] {
        let iv = iv();
        // The prefix the stream finished for the level above the main
        // chain's, if it has.
        let mut ready = iv;
        let mut ahead = Prefix::seek(path, 0, 0);
        let mut cv = [halves(iv[0], iv[0]), halves(iv[1], iv[1])];
        let mut node = load32(node);
        // The main chain's level, where its siblings start, and its
        // next block there (`None` before the level's first).
        let (mut level, mut offset, mut next) = (0, 0, None);
        while let Some(&group) = path.get(level) {
            let members = &siblings[offset..offset + group.width() - 1];
            let (first, count) = (group.node_block(), group.blocks());
            let block = match next {
                Some(block) => block,
                None if first > 0 && ahead.level == level => {
                    // The stream has not finished this level's prefix:
                    // the main chain takes it over (at block 0 the
                    // stream has not started: level 0), the stream
                    // moves up.
                    cv = with_low(cv, if ahead.block == 0 { iv } else { high(cv) });
                    let block = ahead.block;
                    ahead = Prefix::seek(path, level + 1, offset + group.width() - 1);
                    block
                }
                None => {
                    // The stream finished this level's prefix, or it
                    // has none.
                    cv = with_low(cv, if first > 0 { ready } else { iv });
                    first
                }
            };
            let main = if block == first {
                node_rows(node, members.get(2 * first), group.position() % 2 == 0)
            } else if block < first {
                // A prefix block: siblings at the members' indices.
                rows(members[2 * block..2 * block + 2].as_flattened())
            } else {
                // Members 2 * block and 2 * block + 1 come after the
                // node: siblings one index lower.
                rows(members[2 * block - 1..members.len().min(2 * block + 1)].as_flattened())
            };
            let paired = ahead.ready_at(path, level);
            if paired && ahead.block == 0 {
                cv = with_iv_high(cv);
            }
            let (other, other_flags) = if paired {
                (Some(rows(ahead.bytes(siblings))), ahead.flags())
            } else {
                (None, 0)
            };
            compress_pair!(
                cv,
                pair_rows(main, other),
                block_len(block, group.width()),
                block_flags(block, count),
                64,
                other_flags
            );
            if paired && ahead.advance(path) {
                ready = high(cv);
            }
            if block + 1 < count {
                next = Some(block + 1);
            } else {
                node = low(cv);
                offset += group.width() - 1;
                level += 1;
                next = None;
            }
        }
        to_bytes(node)
    }

    /// The message words of both halves, for each round.
    #[cfg(test)]
    #[target_feature(enable = "avx2,avx512f,avx512vl")]
    pub(super) fn schedule_words(
        low_block: &[u8; 64],
        high_block: &[u8; 64],
    ) -> [[[[u32; 4]; 4]; 2]; 7] {
        let mut m = first_round(pair_rows(rows(low_block), Some(rows(high_block))));
        let mut out = [[[[0u32; 4]; 4]; 2]; 7];
        for [low, high] in &mut out {
            for (k, v) in m.into_iter().enumerate() {
                low[k] = words(_mm256_castsi256_si128(v));
                high[k] = words(_mm256_extracti128_si256::<1>(v));
            }
            m = next_round(m);
        }
        out
    }
}

pub(super) use avx512::{one_avx512, path_avx512};
pub(super) use sse41::{one_sse41, path_sse41};

/// A vector's four words.
#[cfg(test)]
#[target_feature(enable = "sse2")]
fn words(v: __m128i) -> [u32; 4] {
    let bytes = to_bytes([v, _mm_setzero_si128()]);
    std::array::from_fn(|i| {
        u32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().expect("4 bytes"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A block whose word `i` is `i + offset`.
    fn numbered(offset: u32) -> [u8; 64] {
        let mut block = [0u8; 64];
        for (i, word) in block.chunks_exact_mut(4).enumerate() {
            word.copy_from_slice(&(u32::try_from(i).unwrap() + offset).to_le_bytes());
        }
        block
    }

    fn want(r: usize, offset: u32) -> [[u32; 4]; 4] {
        round_words(r).map(|vector| vector.map(|word| u32::try_from(word).unwrap() + offset))
    }

    #[test]
    fn the_sse41_message_schedule_follows_the_permutation() {
        if !is_x86_feature_detected!("sse4.1") {
            return;
        }
        // SAFETY: the CPU supports SSE4.1, the target feature
        // `schedule_words` enables; it only reads its argument.
        let rounds = unsafe { sse41::schedule_words(&numbered(0)) };
        for (r, round) in rounds.iter().enumerate() {
            assert_eq!(*round, want(r, 0), "round {r}");
        }
    }

    #[test]
    fn the_avx512_message_schedule_follows_the_permutation_in_each_half() {
        if !(is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512vl"))
        {
            return;
        }
        // SAFETY: the CPU supports the target features `schedule_words`
        // enables; it only reads its arguments.
        let rounds = unsafe { avx512::schedule_words(&numbered(0), &numbered(100)) };
        for (r, [low, high]) in rounds.iter().enumerate() {
            assert_eq!(*low, want(r, 0), "low half, round {r}");
            assert_eq!(*high, want(r, 100), "high half, round {r}");
        }
    }
}
