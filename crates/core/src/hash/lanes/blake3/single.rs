//! BLAKE3 of one group on its own: a single input of 64..=512 bytes (2..=16
//! children), for callers with one group and nothing to put in other lanes,
//! and of a whole membership-proof path, whose every hash needs the one
//! below it.
//!
//! Such an input is one chunk (see the parent module): a chain of 1..=8
//! compressions from the IV, counter 0, `CHUNK_START` on the first block,
//! `CHUNK_END | ROOT` on the last, an odd group's last block 32 bytes. A
//! chain of compressions is a chain of dependent additions, xors and
//! rotations, so what counts is the latency of one compression; there is no
//! generic hasher state, buffering or length bookkeeping around it here.
//!
//! The SIMD kernels hold the 16 state words as four rows of four,
//! `a` = words 0..4, `b` = 4..8, `c` = 8..12, `d` = 12..16, one row per
//! 128-bit register (half), so a column step is the four G functions at
//! once, one per lane. For the diagonal step, rows `a`, `c` and `d` rotate
//! across lanes so that lane `j` holds the diagonal through `b[j]` (G
//! number `(j + 3) % 4`), and rotate back afterwards. Row `b` stays put: it
//! is the last word a G step writes, so its rotation would sit on the
//! dependency chain; the other rows' rotations run beside it. Each lane's
//! two message words come from the block through BLAKE3's schedule
//! ([`MSG_SCHEDULE`](super::MSG_SCHEDULE)), carried from round to round by
//! a fixed network of in-lane shuffles.
//!
//! A path ([`hash_path`]) is where latency is everything: each compression
//! waits for the one before and leaves most of the vector units idle. But a
//! group's blocks before the one holding the path node (its *prefix*) are
//! siblings only, so their compressions wait for nothing. The path kernels
//! run them as a second stream, up to a level ahead of the main chain,
//! alongside the main chain's compressions. For N = 4 the main chain is then
//! 1.5 compressions per level on average instead of 2, for N = 16 4.5
//! instead of 8.
//!
//! Kernels, picked once by runtime CPU detection:
//! - `avx512`: AVX-512 VL on 256-bit registers. Every rotation is one
//!   `vprord`, and the two 128-bit halves of each register hold two
//!   compressions (the main chain's and the prefix stream's), so the second
//!   stream costs no extra instructions. The only kernel [`hash_one`] and
//!   [`hash_path`] use ([`SingleKernel::routed`]).
//! - `sse41`: SSE4.1 on 128-bit registers, rotations by byte shuffles or two
//!   shifts and an or; the two streams are two states whose instructions
//!   interleave.
//! - `portable`: the scalar transcription in `portable.rs`, one group after
//!   another.
#![allow(unsafe_code)]

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;
use std::sync::OnceLock;

use super::portable;
#[cfg(target_arch = "x86_64")]
use super::{CHUNK_END, CHUNK_START, IV, ROOT};
use crate::hash::MAX_GROUP;

/// How [`hash_one_with`] and [`hash_path_with`] hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
enum Flavour {
    Avx512,
    Sse41,
    Portable,
}

impl Flavour {
    /// Fastest first.
    const ALL: [Flavour; 3] = [Flavour::Avx512, Flavour::Sse41, Flavour::Portable];

    fn detected(self) -> bool {
        match self {
            Flavour::Portable => true,
            #[cfg(target_arch = "x86_64")]
            Flavour::Avx512 => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512vl")
            }
            #[cfg(target_arch = "x86_64")]
            Flavour::Sse41 => std::arch::is_x86_feature_detected!("sse4.1"),
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }
}

/// A single-group BLAKE3 kernel this CPU can run. Values only come from
/// [`SingleKernel::supported`], [`SingleKernel::detected`] and
/// [`SingleKernel::by_name`], which check the CPU first. For tests and
/// benchmarks; use [`hash_one`] and [`hash_path`].
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SingleKernel(Flavour);

impl SingleKernel {
    /// The scalar kernel, which every CPU runs.
    pub const PORTABLE: SingleKernel = SingleKernel(Flavour::Portable);

    /// Every kernel this CPU supports, fastest first; `portable` is last.
    pub fn supported() -> &'static [SingleKernel] {
        static SUPPORTED: OnceLock<Vec<SingleKernel>> = OnceLock::new();
        SUPPORTED.get_or_init(|| {
            Flavour::ALL
                .into_iter()
                .filter(|flavour| flavour.detected())
                .map(SingleKernel)
                .collect()
        })
    }

    /// The fastest kernel this CPU supports.
    pub fn detected() -> SingleKernel {
        SingleKernel::supported()[0]
    }

    /// The kernel [`hash_one`] and [`hash_path`] use, if any: `avx512` where
    /// the CPU has it, the only one measured faster than `blake3::hash`
    /// (docs/performance.md). `sse41` measured slower here than the
    /// `blake3` crate, which uses its own AVX-512 code on this CPU; on a CPU
    /// without AVX-512 the two could not be compared, so there the `blake3`
    /// crate stays.
    pub fn routed() -> Option<SingleKernel> {
        static ROUTED: OnceLock<Option<SingleKernel>> = OnceLock::new();
        *ROUTED.get_or_init(|| SingleKernel::by_name("avx512"))
    }

    /// The kernel called `name`, if this CPU supports it.
    pub fn by_name(name: &str) -> Option<SingleKernel> {
        SingleKernel::supported()
            .iter()
            .copied()
            .find(|kernel| kernel.name() == name)
    }

    /// `"avx512"`, `"sse41"` or `"portable"`.
    pub fn name(self) -> &'static str {
        match self.0 {
            Flavour::Avx512 => "avx512",
            Flavour::Sse41 => "sse41",
            Flavour::Portable => "portable",
        }
    }
}

/// What [`hash_one`] and [`hash_path`] use on this CPU: `"avx512"` or
/// `"blake3::hash"` (see [`SingleKernel::routed`]).
pub fn single_kernel_name() -> &'static str {
    SingleKernel::routed().map_or("blake3::hash", SingleKernel::name)
}

/// A block's length (at most 64 bytes) as the 32-bit word the SIMD
/// compression state takes.
#[inline(always)]
#[allow(clippy::cast_possible_wrap)] // at most 64
const fn len_word(len: u32) -> i32 {
    debug_assert!(len <= 64);
    len as i32
}

/// The length of a block (a slice of at most 64 bytes) as a `u32`.
#[inline(always)]
fn block_word_len(block: &[u8]) -> u32 {
    u32::try_from(block.len()).expect("a block of at most 64 bytes")
}

fn check_group(children: &[[u8; 32]]) {
    assert!(
        (2..=MAX_GROUP).contains(&children.len()),
        "a group has 2..=16 children, got {}",
        children.len()
    );
}

/// The largest group [`hash_one`] gives to its own kernel. Both it and
/// `blake3::hash` are one compression after another at the latency limit;
/// the kernel wins by a smaller fixed cost per call (measured 5-15% faster
/// for 2..=7 children, equal from 8 on: docs/performance.md), so larger
/// groups stay with the `blake3` crate.
const ONE_MAX_CHILDREN: usize = 7;

/// BLAKE3 of `children` concatenated: with the single-group kernel
/// [`SingleKernel::routed`] picks for groups of up to 7 children, else with
/// `blake3::hash`.
///
/// # Panics
/// Unless `2 <= children.len() <= 16`.
#[inline]
pub fn hash_one(children: &[[u8; 32]]) -> [u8; 32] {
    match SingleKernel::routed() {
        Some(kernel) if children.len() <= ONE_MAX_CHILDREN => hash_one_with(kernel, children),
        _ => {
            check_group(children);
            *::blake3::hash(children.as_flattened()).as_bytes()
        }
    }
}

/// [`hash_one`] with a chosen kernel, for tests and benchmarks.
///
/// # Panics
/// As [`hash_one`].
#[doc(hidden)]
#[inline]
pub fn hash_one_with(kernel: SingleKernel, children: &[[u8; 32]]) -> [u8; 32] {
    check_group(children);
    match kernel.0 {
        Flavour::Portable => portable::hash_group(children),
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a `SingleKernel(Avx512)` only exists when the CPU was
        // detected to support AVX2 and AVX-512 F and VL (see `Flavour`),
        // the target features `x86::one_avx512` enables and its only
        // precondition; every memory access inside goes through a
        // bounds-checked reference.
        Flavour::Avx512 => unsafe { x86::one_avx512(children) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above, for SSE4.1, which a `SingleKernel(Sse41)`
        // guarantees the CPU supports.
        Flavour::Sse41 => unsafe { x86::one_sse41(children) },
        #[cfg(not(target_arch = "x86_64"))]
        _ => unreachable!("only x86_64 has SIMD kernels"),
    }
}

/// One hashing level of a leaf's path to the root: a group of `width`
/// (2..=16) members with the path node at `position`; the others are the
/// level's `width - 1` siblings, in order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PathGroup {
    /// Members in the group, 2..=16.
    pub width: u8,
    /// The path node's position in the group, below `width`.
    pub position: u8,
}

impl PathGroup {
    fn width(self) -> usize {
        usize::from(self.width)
    }
    fn position(self) -> usize {
        usize::from(self.position)
    }
    /// Blocks of the group's hash: two members each, the last maybe one.
    fn blocks(self) -> usize {
        self.width().div_ceil(2)
    }
    /// The block holding the path node; the blocks before it hold
    /// siblings only (the prefix).
    fn node_block(self) -> usize {
        self.position() / 2
    }
}

/// The root above `node`: level by level up `path`, the group of that
/// level's siblings (the next `width - 1` of `siblings`) with the running
/// node inserted at `position`, hashed with BLAKE3. Equal to folding
/// [`hash_one`] up the path; computed with the path kernel
/// [`SingleKernel::routed`] picks (see the module documentation), or one
/// group after another with `blake3::hash`.
///
/// # Panics
/// If a width is outside 2..=16, a position is not below its width, or
/// `siblings` does not hold exactly the path's `width - 1` per level.
pub fn hash_path(node: &[u8; 32], path: &[PathGroup], siblings: &[[u8; 32]]) -> [u8; 32] {
    match SingleKernel::routed() {
        Some(kernel) => hash_path_with(kernel, node, path, siblings),
        None => {
            check_path(path, siblings);
            fold_path(node, path, siblings, |group| {
                *::blake3::hash(group.as_flattened()).as_bytes()
            })
        }
    }
}

/// [`hash_path`] with a chosen kernel, for tests and benchmarks.
///
/// # Panics
/// As [`hash_path`].
#[doc(hidden)]
pub fn hash_path_with(
    kernel: SingleKernel,
    node: &[u8; 32],
    path: &[PathGroup],
    siblings: &[[u8; 32]],
) -> [u8; 32] {
    check_path(path, siblings);
    match kernel.0 {
        Flavour::Portable => fold_path(node, path, siblings, portable::hash_group),
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the CPU supports the target features of
        // `x86::path_avx512`, as for `one_avx512` in `hash_one_with`; every
        // memory access inside goes through a bounds-checked reference.
        Flavour::Avx512 => unsafe { x86::path_avx512(node, path, siblings) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above, for SSE4.1.
        Flavour::Sse41 => unsafe { x86::path_sse41(node, path, siblings) },
        #[cfg(not(target_arch = "x86_64"))]
        _ => unreachable!("only x86_64 has SIMD kernels"),
    }
}

fn check_path(path: &[PathGroup], siblings: &[[u8; 32]]) {
    let mut count = 0;
    for (level, group) in path.iter().enumerate() {
        assert!(
            (2..=MAX_GROUP).contains(&group.width()) && group.position() < group.width(),
            "path level {level}: a group of {} with the node at {}",
            group.width,
            group.position
        );
        count += group.width() - 1;
    }
    assert_eq!(
        siblings.len(),
        count,
        "the path's groups take {count} siblings"
    );
}

/// [`hash_path`] one group after another with `hash`.
fn fold_path(
    node: &[u8; 32],
    path: &[PathGroup],
    siblings: &[[u8; 32]],
    hash: impl Fn(&[[u8; 32]]) -> [u8; 32],
) -> [u8; 32] {
    let mut node = *node;
    let mut rest = siblings;
    let mut group = [[0u8; 32]; MAX_GROUP];
    for step in path {
        let (width, position) = (step.width(), step.position());
        let (level, tail) = rest.split_at(width - 1);
        rest = tail;
        group[..position].copy_from_slice(&level[..position]);
        group[position] = node;
        group[position + 1..width].copy_from_slice(&level[position..]);
        node = hash(&group[..width]);
    }
    node
}

/// The row-style kernels. The rounds and the message schedule are written
/// once, as macros, and expanded in each instruction-set module with that
/// module's vector type `V` and helpers (`add`, `xor`, `rot16`, `rot12`,
/// `rot8`, `rot7`, `shuffle1`, `shuffle2`, `blend_odd`, `unpack_low`,
/// `unpack_high`, `align12`): those are `#[target_feature]` functions,
/// which only inline into functions with the same features, and the state
/// must stay in registers. Every helper works within 128-bit lanes, so on a
/// 256-bit `V` the same code runs two independent compressions, one per
/// half.
#[cfg(target_arch = "x86_64")]
mod x86 {
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
                        rows(
                            members[2 * block - 1..members.len().min(2 * block + 1)].as_flattened(),
                        )
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// splitmix64 bytes, different for every seed.
    fn pseudo_random_children(count: usize, seed: u64) -> Vec<[u8; 32]> {
        let mut state = seed;
        (0..count)
            .map(|_| {
                let mut child = [0u8; 32];
                for word in child.chunks_exact_mut(8) {
                    word.copy_from_slice(&splitmix(&mut state).to_le_bytes());
                }
                child
            })
            .collect()
    }

    fn splitmix(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn reference(children: &[[u8; 32]]) -> [u8; 32] {
        *::blake3::hash(children.as_flattened()).as_bytes()
    }

    /// `kernel` equals `blake3::hash` for every input length 64..=512 in
    /// steps of 32 (2..=16 children), on 64 random inputs per length, on
    /// all-zero and all-0xff ones, and read from every alignment mod 32.
    fn check_one(kernel: SingleKernel) {
        for group in 2..=MAX_GROUP {
            let mut inputs = vec![vec![[0u8; 32]; group], vec![[0xffu8; 32]; group]];
            for seed in 0..64 {
                inputs.push(pseudo_random_children(group, (group as u64) << 32 | seed));
            }
            for (n, children) in inputs.iter().enumerate() {
                let want = reference(children);
                assert_eq!(
                    hash_one_with(kernel, children),
                    want,
                    "kernel {} group {group} input {n}",
                    kernel.name()
                );
                // The same bytes at every offset from an allocation's
                // alignment: the kernels make no alignment assumption.
                let mut bytes = vec![0u8; group * 32 + 32];
                for shift in 1..32 {
                    bytes[shift..shift + group * 32].copy_from_slice(children.as_flattened());
                    let shifted: Vec<[u8; 32]> = bytes[shift..shift + group * 32]
                        .chunks_exact(32)
                        .map(|c| c.try_into().expect("32 bytes"))
                        .collect();
                    assert_eq!(hash_one_with(kernel, &shifted), want, "shift {shift}");
                }
            }
        }
    }

    #[test]
    fn single_portable_matches_blake3() {
        check_one(SingleKernel::PORTABLE);
    }

    #[test]
    fn single_sse41_matches_blake3() {
        // Nothing to check on a CPU without SSE4.1.
        if let Some(kernel) = SingleKernel::by_name("sse41") {
            check_one(kernel);
        }
    }

    #[test]
    fn single_avx512_matches_blake3() {
        if let Some(kernel) = SingleKernel::by_name("avx512") {
            check_one(kernel);
        }
    }

    #[test]
    fn hash_one_matches_blake3_with_the_detected_kernel() {
        for group in 2..=MAX_GROUP {
            for seed in 0..16 {
                let children = pseudo_random_children(group, 7000 + seed);
                assert_eq!(
                    hash_one(&children),
                    reference(&children),
                    "{} group {group}",
                    single_kernel_name()
                );
            }
        }
        assert!(["avx512", "blake3::hash"].contains(&single_kernel_name()));
    }

    #[test]
    fn only_avx512_is_routed() {
        assert_eq!(SingleKernel::routed(), SingleKernel::by_name("avx512"));
        assert_eq!(
            single_kernel_name(),
            if SingleKernel::routed().is_some() {
                "avx512"
            } else {
                "blake3::hash"
            }
        );
    }

    #[test]
    fn single_kernels_are_listed_fastest_first() {
        assert_eq!(
            SingleKernel::supported().last(),
            Some(&SingleKernel::PORTABLE)
        );
        assert_eq!(SingleKernel::detected(), SingleKernel::supported()[0]);
        for kernel in SingleKernel::supported() {
            assert_eq!(SingleKernel::by_name(kernel.name()), Some(*kernel));
        }
        assert_eq!(SingleKernel::by_name("neon-ish"), None);
    }

    #[test]
    #[should_panic(expected = "a group has 2..=16 children, got 1")]
    fn a_single_child_panics() {
        hash_one(&[[0u8; 32]]);
    }

    #[test]
    #[should_panic(expected = "a group has 2..=16 children, got 17")]
    fn seventeen_children_panic() {
        hash_one(&[[0u8; 32]; 17]);
    }

    #[test]
    fn every_single_kernel_panics_outside_2_to_16_children() {
        for kernel in SingleKernel::supported() {
            for count in [0, 1, 17] {
                let children = vec![[1u8; 32]; count];
                let result = std::panic::catch_unwind(|| hash_one_with(*kernel, &children));
                assert!(result.is_err(), "kernel {} count {count}", kernel.name());
            }
        }
    }

    /// The root of `path` hashed one group at a time with `blake3::hash`,
    /// written independently of `fold_path`.
    fn path_reference(node: &[u8; 32], path: &[PathGroup], siblings: &[[u8; 32]]) -> [u8; 32] {
        let mut node = *node;
        let mut rest = siblings.iter();
        for group in path {
            let members: Vec<[u8; 32]> = (0..group.width)
                .map(|i| {
                    if i == group.position {
                        node
                    } else {
                        *rest.next().expect("enough siblings")
                    }
                })
                .collect();
            node = reference(&members);
        }
        assert!(rest.next().is_none(), "every sibling used");
        node
    }

    fn check_path(kernel: SingleKernel, path: &[PathGroup], seed: u64) {
        let count = path.iter().map(|g| usize::from(g.width) - 1).sum();
        let siblings = pseudo_random_children(count, seed);
        let node = pseudo_random_children(1, !seed)[0];
        assert_eq!(
            hash_path_with(kernel, &node, path, &siblings),
            path_reference(&node, path, &siblings),
            "kernel {} path {path:?}",
            kernel.name()
        );
    }

    /// Every kernel's path equals hashing one group at a time with
    /// `blake3::hash`: every (width, position) alone and under and over
    /// other groups, random paths of every arity (prefixes of every length
    /// on every level, so the prefix stream runs ahead, falls behind and
    /// stalls), and paths longer than the stream's look-ahead.
    fn check_paths(kernel: SingleKernel) {
        let mut seed = 1;
        let mut next = || {
            seed += 1;
            seed
        };
        for width in 2..=16u8 {
            for position in 0..width {
                let group = PathGroup { width, position };
                check_path(kernel, &[group], next());
                let high = PathGroup {
                    width: 16,
                    position: 15,
                };
                let low = PathGroup {
                    width: 3,
                    position: 0,
                };
                check_path(kernel, &[group, high, group], next());
                check_path(kernel, &[high, group, low, group, high], next());
            }
        }
        let mut state = 99u64;
        for arity in 2..=16u64 {
            for _ in 0..40 {
                let depth = (splitmix(&mut state) % 24) as usize;
                let path: Vec<PathGroup> = (0..depth)
                    .map(|_| {
                        // Mostly full groups, like a tree's, some narrower.
                        let width = if splitmix(&mut state).is_multiple_of(4) {
                            2 + splitmix(&mut state) % (arity - 1)
                        } else {
                            arity
                        };
                        let position = splitmix(&mut state) % width;
                        PathGroup {
                            width: u8::try_from(width).unwrap(),
                            position: u8::try_from(position).unwrap(),
                        }
                    })
                    .collect();
                check_path(kernel, &path, next());
            }
        }
        // Longer than the look-ahead: every level's prefix long, or none.
        for group in [
            PathGroup {
                width: 16,
                position: 15,
            },
            PathGroup {
                width: 4,
                position: 3,
            },
            PathGroup {
                width: 2,
                position: 1,
            },
        ] {
            check_path(kernel, &[group; 64], next());
        }
        let alternating: Vec<PathGroup> = (0..64)
            .map(|level| PathGroup {
                width: 16,
                position: if level % 3 == 0 { 0 } else { 14 },
            })
            .collect();
        check_path(kernel, &alternating, next());
        check_path(kernel, &[], next());
    }

    #[test]
    fn path_portable_matches_blake3() {
        check_paths(SingleKernel::PORTABLE);
    }

    #[test]
    fn path_sse41_matches_blake3() {
        if let Some(kernel) = SingleKernel::by_name("sse41") {
            check_paths(kernel);
        }
    }

    #[test]
    fn path_avx512_matches_blake3() {
        if let Some(kernel) = SingleKernel::by_name("avx512") {
            check_paths(kernel);
        }
    }

    #[test]
    fn hash_path_matches_blake3_with_the_detected_kernel() {
        let path = [PathGroup {
            width: 4,
            position: 2,
        }; 10];
        let siblings = pseudo_random_children(30, 5);
        let node = [7u8; 32];
        assert_eq!(
            hash_path(&node, &path, &siblings),
            path_reference(&node, &path, &siblings)
        );
        assert_eq!(hash_path(&node, &[], &[]), node);
    }

    #[test]
    fn every_path_kernel_checks_the_path() {
        let group = |width, position| PathGroup { width, position };
        let bad: [(&[PathGroup], usize, &str); 5] = [
            (
                &[group(1, 0)],
                0,
                "path level 0: a group of 1 with the node at 0",
            ),
            (&[group(17, 0)], 16, "a group of 17"),
            (
                &[group(4, 1), group(4, 4)],
                6,
                "path level 1: a group of 4 with the node at 4",
            ),
            (&[group(4, 1)], 2, "the path's groups take 3 siblings"),
            (&[group(4, 1)], 4, "the path's groups take 3 siblings"),
        ];
        for kernel in SingleKernel::supported() {
            for (path, count, message) in bad {
                let siblings = vec![[1u8; 32]; count];
                let result = std::panic::catch_unwind(|| {
                    hash_path_with(*kernel, &[0u8; 32], path, &siblings)
                });
                let error = result.expect_err("a bad path panics");
                let text = error
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| error.downcast_ref::<&str>().copied())
                    .unwrap_or_default();
                assert!(text.contains(message), "kernel {} {text:?}", kernel.name());
            }
        }
    }
}
