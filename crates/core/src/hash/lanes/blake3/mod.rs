//! BLAKE3 of many groups of children at once, one group per SIMD lane.
//!
//! A tree parent is BLAKE3 of its k children concatenated (k = 2..=16, so
//! 64..=512 bytes). Such an input always fits in BLAKE3's first 1024-byte
//! chunk, so its hash is a chain of at most 8 compressions over one chunk:
//! chaining value starting at the IV, counter 0, every block 64 bytes except
//! the last (32 bytes when k is odd, zero padded), `CHUNK_START` on the
//! first block and `CHUNK_END | ROOT` on the last; the hash is the first 8
//! words of the last compression's output, little-endian.
//!
//! The parents of one level are independent and all have the same k, so the
//! block lengths and flags are the same in every lane: a kernel with L lanes
//! runs one compression chain with 32-bit word `i` of lane `j` holding group
//! `j`'s word `i`. Written from the BLAKE3 specification; it does not use the
//! `blake3` crate (which only serves as the reference in tests).
//!
//! Kernels: `avx512` (16 lanes), `avx2` (8), `sse41` (4), `portable` (one
//! group at a time, clear scalar code). [`hash_groups`] picks the widest the
//! CPU supports once and caches it. A batch's tail that fills at least half
//! of a kernel's lanes gets one more pass with the other lanes idle (that
//! still beats the narrower kernels); a smaller tail falls through to the
//! next narrower supported kernel, and finally to `portable`.
//!
//! `single.rs` hashes one group on its own, and a membership proof's whole
//! path, where every hash waits for the one below and there are no lanes to
//! fill ([`hash_one`], [`hash_path`]).

/// The 7 rounds of the compression function for a SIMD kernel, on a state
/// `$v: [V; 16]` and message `$m: [V; 16]` where each `V` holds one word of
/// every lane. The kernel's own `add`, `xor`, `rot16`, `rot12`, `rot8` and
/// `rot7` (on `V`) and `MSG_SCHEDULE` must be in scope where it expands.
///
/// A macro rather than functions: `#[inline(always)]` cannot be combined
/// with `#[target_feature]`, and LLVM declines to inline a round of that
/// size, which leaves the state in memory (the AVX-512 kernel then ran
/// slower than AVX2). Expanded in place, every state and message index is a
/// constant and the state lives in registers.
#[cfg(target_arch = "x86_64")]
macro_rules! rounds {
    ($v:ident, $m:ident) => {
        rounds!(@round $v, $m, 0);
        rounds!(@round $v, $m, 1);
        rounds!(@round $v, $m, 2);
        rounds!(@round $v, $m, 3);
        rounds!(@round $v, $m, 4);
        rounds!(@round $v, $m, 5);
        rounds!(@round $v, $m, 6);
    };
    // Round `r`: the four columns, then the four diagonals; G number `i`
    // takes message words `2i` and `2i + 1` of the round's order.
    (@round $v:ident, $m:ident, $r:literal) => {
        rounds!(@g4 $v, $m, $r, [
            (0, 4, 8, 12, 0, 1), (1, 5, 9, 13, 2, 3),
            (2, 6, 10, 14, 4, 5), (3, 7, 11, 15, 6, 7)
        ]);
        rounds!(@g4 $v, $m, $r, [
            (0, 5, 10, 15, 8, 9), (1, 6, 11, 12, 10, 11),
            (2, 7, 8, 13, 12, 13), (3, 4, 9, 14, 14, 15)
        ]);
    };
    // Four independent G functions, G(a, b, c, d, m[x], m[y]), interleaved
    // step by step for instruction-level parallelism.
    (@g4 $v:ident, $m:ident, $r:literal,
        [$(($a:literal, $b:literal, $c:literal, $d:literal, $x:literal, $y:literal)),*]) => {
        $( $v[$a] = add(add($v[$a], $v[$b]), $m[MSG_SCHEDULE[$r][$x]]); )*
        $( $v[$d] = rot16(xor($v[$d], $v[$a])); )*
        $( $v[$c] = add($v[$c], $v[$d]); )*
        $( $v[$b] = rot12(xor($v[$b], $v[$c])); )*
        $( $v[$a] = add(add($v[$a], $v[$b]), $m[MSG_SCHEDULE[$r][$y]]); )*
        $( $v[$d] = rot8(xor($v[$d], $v[$a])); )*
        $( $v[$c] = add($v[$c], $v[$d]); )*
        $( $v[$b] = rot7(xor($v[$b], $v[$c])); )*
    };
}

/// How far ahead (in input bytes, rounded up to whole passes) the SIMD
/// kernels prefetch: a few hundred nanoseconds of hashing, more than a
/// memory access takes.
#[cfg(target_arch = "x86_64")]
const PREFETCH_AHEAD: usize = 4096;

/// Asks the CPU to start fetching `bytes[from..to]` (clamped to `bytes`)
/// into cache, so a later pass's input arrives while this pass computes:
/// the lanes read rows `group * 32` bytes apart, a pattern the hardware
/// prefetchers follow poorly once a level no longer fits in cache (without
/// it, AVX-512 hashed a 32 MiB level at ~60% of its in-cache speed).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse")]
#[inline]
fn prefetch(bytes: &[u8], from: usize, to: usize) {
    use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
    let to = to.min(bytes.len());
    let mut at = from;
    while at < to {
        _mm_prefetch::<_MM_HINT_T0>(bytes[at..].as_ptr().cast());
        at += 64;
    }
}

mod portable;
mod single;

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(target_arch = "x86_64")]
mod sse41;

use std::sync::OnceLock;

pub use single::{PathGroup, hash_one, hash_path, single_kernel_name};
#[doc(hidden)]
pub use single::{SingleKernel, hash_one_with, hash_path_with};

/// BLAKE3's initial chaining value (the SHA-256 IV).
const IV: [u32; 8] = [
    0x6A09_E667,
    0xBB67_AE85,
    0x3C6E_F372,
    0xA54F_F53A,
    0x510E_527F,
    0x9B05_688C,
    0x1F83_D9AB,
    0x5BE0_CD19,
];

/// Block flags (only the ones a single-chunk hash uses).
const CHUNK_START: u32 = 1;
const CHUNK_END: u32 = 2;
const ROOT: u32 = 8;

/// The permutation applied to the message words between rounds.
const MSG_PERMUTATION: [usize; 16] = [2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8];

/// `MSG_SCHEDULE[r][i]` = which original message word is word `i` in round
/// `r` (the permutation applied `r` times), so kernels index the block
/// directly instead of permuting it.
const MSG_SCHEDULE: [[usize; 16]; 7] = {
    let mut schedule = [[0; 16]; 7];
    let mut i = 0;
    while i < 16 {
        schedule[0][i] = i;
        i += 1;
    }
    let mut r = 1;
    while r < 7 {
        let mut i = 0;
        while i < 16 {
            schedule[r][i] = schedule[r - 1][MSG_PERMUTATION[i]];
            i += 1;
        }
        r += 1;
    }
    schedule
};

/// One compression of a group's chain: where its block starts within the
/// group's bytes, how many bytes it holds (64, or 32 for an odd group's last
/// block) and its flags. The same in every lane.
#[derive(Clone, Copy, Debug)]
struct Block {
    offset: usize,
    len: u32,
    flags: u32,
}

/// The blocks of a group of `group` children, in order.
fn blocks(group: usize) -> impl Iterator<Item = Block> {
    let total = group * 32;
    let count = total.div_ceil(64);
    (0..count).map(move |index| {
        let offset = index * 64;
        let mut flags = 0;
        if index == 0 {
            flags |= CHUNK_START;
        }
        if index + 1 == count {
            flags |= CHUNK_END | ROOT;
        }
        Block {
            offset,
            len: u32::try_from((total - offset).min(64)).expect("at most 64"),
            flags,
        }
    })
}

/// The instruction sets a kernel can use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
enum Isa {
    Avx512,
    Avx2,
    Sse41,
    Portable,
}

impl Isa {
    /// Widest first.
    const ALL: [Isa; 4] = [Isa::Avx512, Isa::Avx2, Isa::Sse41, Isa::Portable];

    fn detected(self) -> bool {
        match self {
            Isa::Portable => true,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => std::arch::is_x86_feature_detected!("avx512f"),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => std::arch::is_x86_feature_detected!("avx2"),
            #[cfg(target_arch = "x86_64")]
            Isa::Sse41 => std::arch::is_x86_feature_detected!("sse4.1"),
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }
}

/// A BLAKE3 kernel this CPU can run. Values only come from
/// [`Kernel::supported`], [`Kernel::detected`] and [`Kernel::by_name`], which
/// check the CPU first. For tests and benchmarks; use [`hash_groups`].
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kernel(Isa);

impl Kernel {
    /// The scalar kernel, which every CPU runs.
    pub const PORTABLE: Kernel = Kernel(Isa::Portable);

    /// Every kernel this CPU supports, widest first; `portable` is last.
    pub fn supported() -> &'static [Kernel] {
        static SUPPORTED: OnceLock<Vec<Kernel>> = OnceLock::new();
        SUPPORTED.get_or_init(|| {
            Isa::ALL
                .into_iter()
                .filter(|isa| isa.detected())
                .map(Kernel)
                .collect()
        })
    }

    /// The kernel [`hash_groups`] uses: the widest supported.
    pub fn detected() -> Kernel {
        Kernel::supported()[0]
    }

    /// The kernel called `name`, if this CPU supports it.
    pub fn by_name(name: &str) -> Option<Kernel> {
        Kernel::supported()
            .iter()
            .copied()
            .find(|kernel| kernel.name() == name)
    }

    /// `"avx512"`, `"avx2"`, `"sse41"` or `"portable"`.
    pub fn name(self) -> &'static str {
        match self.0 {
            Isa::Avx512 => "avx512",
            Isa::Avx2 => "avx2",
            Isa::Sse41 => "sse41",
            Isa::Portable => "portable",
        }
    }

    /// How many groups the kernel hashes per pass.
    pub fn lanes(self) -> usize {
        match self.0 {
            Isa::Avx512 => 16,
            Isa::Avx2 => 8,
            Isa::Sse41 => 4,
            Isa::Portable => 1,
        }
    }

    /// The next narrower supported kernel (`portable` for `portable`).
    fn narrower(self) -> Kernel {
        Kernel::supported()
            .iter()
            .copied()
            .find(|kernel| kernel.lanes() < self.lanes())
            .unwrap_or(Kernel::PORTABLE)
    }

    /// How many of `count` groups this kernel takes: its whole passes, plus
    /// the remainder when that fills at least half its lanes (such a pass
    /// still costs less than the narrower kernels would); narrower kernels
    /// hash the rest.
    fn share(self, count: usize) -> usize {
        let lanes = self.lanes();
        let whole = count / lanes * lanes;
        if 2 * (count - whole) >= lanes {
            count
        } else {
            whole
        }
    }

    /// `out[i]` = BLAKE3 of the `i`-th `group` children, with this kernel
    /// alone (a last partial pass leaves lanes idle).
    fn hash_alone(self, children: &[[u8; 32]], group: usize, out: &mut [[u8; 32]]) {
        match self.0 {
            // The public `blake3::hash` compresses one input with the crate's
            // own single-lane SIMD and beats a scalar multi-group loop
            // (~120 vs ~215 ns per 128-byte parent here), so it serves the
            // non-x86 fallback and the 1..3-group tails of the wide kernels.
            // `portable.rs` remains the spec transcription the tests check
            // the lane kernels' structure against.
            Isa::Portable => {
                for (parent, members) in out.iter_mut().zip(children.chunks_exact(group)) {
                    *parent = *::blake3::hash(members.as_flattened()).as_bytes();
                }
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => avx512::hash(children, group, out),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => avx2::hash(children, group, out),
            #[cfg(target_arch = "x86_64")]
            Isa::Sse41 => sse41::hash(children, group, out),
            #[cfg(not(target_arch = "x86_64"))]
            _ => unreachable!("only x86_64 has SIMD kernels"),
        }
    }
}

/// `out[i]` = BLAKE3(`children[i*group .. (i+1)*group]` concatenated), for
/// `i < out.len()`.
///
/// # Panics
/// Unless `2 <= group <= 16` and `children.len() == out.len() * group`.
pub fn hash_groups(children: &[[u8; 32]], group: usize, out: &mut [[u8; 32]]) {
    hash_groups_with(Kernel::detected(), children, group, out);
}

/// Which kernel [`hash_groups`] uses on this CPU: `"avx512"`, `"avx2"`,
/// `"sse41"` or `"portable"`.
pub fn kernel_name() -> &'static str {
    Kernel::detected().name()
}

/// [`hash_groups`] with a chosen kernel, for tests and benchmarks. A tail
/// that fills less than half of `kernel`'s lanes goes to narrower kernels.
///
/// # Panics
/// As [`hash_groups`].
#[doc(hidden)]
pub fn hash_groups_with(kernel: Kernel, children: &[[u8; 32]], group: usize, out: &mut [[u8; 32]]) {
    super::check_level(children, group, out);
    let mut kernel = kernel;
    let mut done = 0;
    while done < out.len() {
        let take = kernel.share(out.len() - done);
        if take > 0 {
            kernel.hash_alone(
                &children[done * group..(done + take) * group],
                group,
                &mut out[done..done + take],
            );
            done += take;
        }
        kernel = kernel.narrower();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// splitmix64: deterministic pseudo-random bytes without dependencies.
    fn pseudo_random_children(count: usize, seed: u64) -> Vec<[u8; 32]> {
        let mut state = seed;
        let mut next = move || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        (0..count)
            .map(|_| {
                let mut child = [0u8; 32];
                for word in child.chunks_exact_mut(8) {
                    word.copy_from_slice(&next().to_le_bytes());
                }
                child
            })
            .collect()
    }

    fn reference(children: &[[u8; 32]], group: usize) -> Vec<[u8; 32]> {
        children
            .chunks_exact(group)
            .map(|g| *::blake3::hash(g.as_flattened()).as_bytes())
            .collect()
    }

    const MAX_COUNT: usize = 40;

    /// `kernel` equals `blake3::hash` for every group size and every count
    /// 0..=40 (whole passes and every tail), on random, all-zero and
    /// all-0xff children: through `hash_groups_with` (tails shared with
    /// narrower kernels) and alone (partial passes with every number of
    /// idle lanes).
    fn check(kernel: Kernel) {
        for group in 2..=crate::hash::MAX_GROUP {
            let inputs = [
                pseudo_random_children(MAX_COUNT * group + 1, group as u64),
                vec![[0u8; 32]; MAX_COUNT * group + 1],
                vec![[0xffu8; 32]; MAX_COUNT * group + 1],
            ];
            for input in &inputs {
                // Start one child in, so the groups' bytes sit at a different
                // alignment from the allocation's.
                let children = &input[1..];
                let expected = reference(children, group);
                for count in 0..=MAX_COUNT {
                    let input = &children[..count * group];
                    let mut shared = vec![[0x5au8; 32]; count];
                    hash_groups_with(kernel, input, group, &mut shared);
                    let mut alone = vec![[0xa5u8; 32]; count];
                    kernel.hash_alone(input, group, &mut alone);
                    for (i, want) in expected[..count].iter().enumerate() {
                        let at = format!(
                            "kernel {} group {group} count {count} parent {i}",
                            kernel.name()
                        );
                        assert_eq!(&shared[i], want, "{at}");
                        assert_eq!(&alone[i], want, "{at} alone");
                    }
                }
            }
        }
    }

    fn check_named(name: &str) {
        // A CPU without the instructions has nothing to check for this kernel;
        // `the_detected_kernel_matches_blake3` covers the one CI uses.
        if let Some(kernel) = Kernel::by_name(name) {
            check(kernel);
        }
    }

    #[test]
    fn portable_matches_blake3() {
        check(Kernel::PORTABLE);
    }

    #[test]
    fn sse41_matches_blake3() {
        check_named("sse41");
    }

    #[test]
    fn avx2_matches_blake3() {
        check_named("avx2");
    }

    #[test]
    fn avx512_matches_blake3() {
        check_named("avx512");
    }

    #[test]
    fn the_detected_kernel_matches_blake3() {
        check(Kernel::detected());
        // And through the public entry point.
        for group in 2..=crate::hash::MAX_GROUP {
            let children = pseudo_random_children(37 * group, 1000 + group as u64);
            let mut out = vec![[0u8; 32]; 37];
            hash_groups(&children, group, &mut out);
            assert_eq!(out, reference(&children, group), "group {group}");
        }
    }

    #[test]
    fn kernel_name_is_a_known_kernel() {
        assert!(["avx512", "avx2", "sse41", "portable"].contains(&kernel_name()));
        assert_eq!(kernel_name(), Kernel::detected().name());
        assert_eq!(Kernel::supported().last(), Some(&Kernel::PORTABLE));
        for kernel in Kernel::supported() {
            assert_eq!(Kernel::by_name(kernel.name()), Some(*kernel));
        }
        assert_eq!(Kernel::by_name("neon-ish"), None);
    }

    #[test]
    fn a_kernel_takes_its_whole_passes_and_a_tail_of_at_least_half() {
        let avx512 = Kernel(Isa::Avx512);
        assert_eq!(avx512.share(0), 0);
        assert_eq!(avx512.share(7), 0);
        assert_eq!(avx512.share(8), 8);
        assert_eq!(avx512.share(16), 16);
        assert_eq!(avx512.share(39), 32);
        assert_eq!(avx512.share(40), 40);
        assert_eq!(Kernel(Isa::Sse41).share(5), 4);
        assert_eq!(Kernel(Isa::Sse41).share(6), 6);
        assert_eq!(Kernel::PORTABLE.share(3), 3);
    }

    #[test]
    fn the_schedule_is_the_permutation_applied_round_by_round() {
        assert_eq!(MSG_SCHEDULE[0], std::array::from_fn(|i| i));
        assert_eq!(MSG_SCHEDULE[1], MSG_PERMUTATION);
        assert_eq!(
            MSG_SCHEDULE[6],
            [11, 15, 5, 0, 1, 9, 8, 6, 14, 10, 2, 12, 3, 4, 7, 13]
        );
    }

    #[test]
    fn blocks_cover_the_group_with_the_right_flags() {
        let two: Vec<_> = blocks(2).map(|b| (b.offset, b.len, b.flags)).collect();
        assert_eq!(two, [(0, 64, CHUNK_START | CHUNK_END | ROOT)]);
        let five: Vec<_> = blocks(5).map(|b| (b.offset, b.len, b.flags)).collect();
        assert_eq!(
            five,
            [
                (0, 64, CHUNK_START),
                (64, 64, 0),
                (128, 32, CHUNK_END | ROOT)
            ]
        );
        assert_eq!(blocks(16).count(), 8);
    }

    #[test]
    #[should_panic(expected = "a group has 2..=16 children, got 1")]
    fn a_group_of_one_panics() {
        hash_groups(&[[0u8; 32]; 4], 1, &mut [[0u8; 32]; 4]);
    }

    #[test]
    #[should_panic(expected = "a group has 2..=16 children, got 17")]
    fn a_group_of_seventeen_panics() {
        hash_groups(&[[0u8; 32]; 17], 17, &mut [[0u8; 32]; 1]);
    }

    #[test]
    #[should_panic(expected = "a group has 2..=16 children, got 0")]
    fn a_group_of_zero_panics() {
        hash_groups(&[], 0, &mut []);
    }

    #[test]
    #[should_panic(expected = "9 children do not make 2 groups of 4")]
    fn extra_children_panic() {
        hash_groups(&[[0u8; 32]; 9], 4, &mut [[0u8; 32]; 2]);
    }

    #[test]
    #[should_panic(expected = "7 children do not make 2 groups of 4")]
    fn missing_children_panic() {
        hash_groups(&[[0u8; 32]; 7], 4, &mut [[0u8; 32]; 2]);
    }

    #[test]
    fn every_kernel_panics_on_a_length_mismatch() {
        for kernel in Kernel::supported() {
            let result = std::panic::catch_unwind(|| {
                let children = [[1u8; 32]; 16 * 3 - 1];
                hash_groups_with(*kernel, &children, 3, &mut [[0u8; 32]; 16]);
            });
            assert!(result.is_err(), "kernel {}", kernel.name());
        }
    }
}

#[cfg(test)]
mod portable_reference {
    /// The scalar transcription of the BLAKE3 compression (the model the lane
    /// kernels follow) agrees with the `blake3` crate for every group size.
    #[test]
    fn portable_transcription_matches_the_blake3_crate() {
        let children: Vec<[u8; 32]> = (0..16u8 * 7).map(|i| [i.wrapping_mul(37); 32]).collect();
        for group in 2..=16 {
            let count = children.len() / group;
            let mut out = vec![[0u8; 32]; count];
            super::portable::hash_all(&children[..count * group], group, &mut out);
            for (i, parent) in out.iter().enumerate() {
                let input = children[i * group..(i + 1) * group].as_flattened();
                assert_eq!(
                    *parent,
                    *blake3::hash(input).as_bytes(),
                    "group {group} parent {i}"
                );
            }
        }
    }
}
