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
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // used by the x86-64 kernels
#[inline(always)]
#[allow(clippy::cast_possible_wrap)] // at most 64
const fn len_word(len: u32) -> i32 {
    debug_assert!(len <= 64);
    len as i32
}

/// The length of a block (a slice of at most 64 bytes) as a `u32`.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // used by the x86-64 kernels
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
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // used by the x86-64 kernels
    fn blocks(self) -> usize {
        self.width().div_ceil(2)
    }
    /// The block holding the path node; the blocks before it hold
    /// siblings only (the prefix).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // used by the x86-64 kernels
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
mod x86;

#[cfg(test)]
mod tests;
