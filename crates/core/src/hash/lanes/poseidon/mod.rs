//! circomlib Poseidon (BN254) of many tree parents at once, one parent per
//! 64-bit SIMD lane.
//!
//! A parent is `poseidon_k(children)` (circomlib's, as
//! [`HashKind::hash_children`] computes it one at a time); the
//! parents of a level are independent, so the IFMA kernel runs 8
//! permutations side by side in radix-2^52 Montgomery arithmetic (AVX-512
//! IFMA's 52-bit multiply-add). It produces byte-identical outputs to the
//! scalar path, which stays the reference.
//!
//! Kernels and dispatch (cached on first use):
//! - [`Kernel::Scalar`]: one group after another through the scalar
//!   permutation (ark-bn254 `Fr`); the fallback on every other CPU and
//!   under Miri, and the IFMA kernel's path for a single leftover group.
//! - [`Kernel::Ifma`]: 8 groups per pass (AVX-512F + AVX-512 IFMA); a
//!   level's last 2..=7 groups take one padded pass.

// Miri cannot run the intrinsics: under it the kernel is not even built.
#[cfg(all(target_arch = "x86_64", not(miri)))]
mod ifma;

use std::sync::OnceLock;

use crate::hash::{Hash, HashKind, is_canonical_field_element};

/// A Poseidon implementation [`hash_groups_with`] can be forced to use.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// The scalar permutation, one group at a time.
    Scalar,
    /// 8 groups per pass with AVX-512 IFMA.
    Ifma,
}

impl Kernel {
    /// Every kernel, supported here or not.
    pub const ALL: [Kernel; 2] = [Kernel::Scalar, Kernel::Ifma];

    /// A short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Scalar => "scalar (montgomery, ark-bn254)",
            Kernel::Ifma => "avx512ifma x8 (radix 2^52 montgomery)",
        }
    }

    /// Whether this CPU (and build) can run the kernel. Miri cannot run
    /// SIMD intrinsics, so under Miri only the scalar kernel is supported.
    pub fn is_supported(self) -> bool {
        match self {
            Kernel::Scalar => true,
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Kernel::Ifma => ifma::is_supported(),
            #[cfg(not(all(target_arch = "x86_64", not(miri))))]
            Kernel::Ifma => false,
        }
    }

    /// The kernels this CPU can run.
    pub fn supported() -> Vec<Kernel> {
        Kernel::ALL
            .into_iter()
            .filter(|kernel| kernel.is_supported())
            .collect()
    }
}

/// The kernel [`hash_groups`] uses, chosen once.
fn selected() -> Kernel {
    static SELECTED: OnceLock<Kernel> = OnceLock::new();
    *SELECTED.get_or_init(|| {
        if Kernel::Ifma.is_supported() {
            Kernel::Ifma
        } else {
            Kernel::Scalar
        }
    })
}

/// `out[i] = poseidon(children[i*group .. (i+1)*group])`, for
/// `i < out.len()`.
///
/// # Panics
/// Unless 2 <= group <= 16 and children.len() == out.len() * group; and,
/// as [`HashKind::hash_children`], if a child is not a canonical field
/// element (with the same message, naming the first such child of the
/// first such group).
pub fn hash_groups(children: &[Hash], group: usize, out: &mut [Hash]) {
    hash_groups_with(selected(), children, group, out);
}

/// The groups one pass of [`hash_groups`] hashes at once on this CPU.
pub fn groups_per_pass() -> usize {
    match selected() {
        Kernel::Scalar => 1,
        Kernel::Ifma => 8,
    }
}

/// Which kernel [`hash_groups`] uses on this CPU.
pub fn kernel_name() -> &'static str {
    selected().name()
}

/// [`hash_groups`] with a forced kernel (for tests and measurements).
///
/// # Panics
/// As [`hash_groups`], and if this CPU cannot run `kernel`.
#[doc(hidden)]
pub fn hash_groups_with(kernel: Kernel, children: &[Hash], group: usize, out: &mut [Hash]) {
    super::check_level(children, group, out);
    match kernel {
        Kernel::Scalar => scalar(children, group, out),
        Kernel::Ifma => {
            assert!(
                kernel.is_supported(),
                "the {kernel:?} kernel is not supported on this CPU"
            );
            // The lanes never see a non-canonical value: the first group
            // holding one goes through the scalar path, which panics with
            // its position, exactly as a level hashed one group at a time.
            if let Some(bad) = children
                .chunks_exact(group)
                .find(|members| !members.iter().all(is_canonical_field_element))
            {
                HashKind::Poseidon.hash_children(bad);
                unreachable!("a non-canonical child makes hash_children panic");
            }
            lanes(children, group, out);
        }
    }
}

/// One group after another through the scalar permutation.
fn scalar(children: &[Hash], group: usize, out: &mut [Hash]) {
    for (parent, members) in out.iter_mut().zip(children.chunks_exact(group)) {
        *parent = HashKind::Poseidon.hash_children(members);
    }
}

/// A tail of at least this many groups (fewer than 8) takes one padded
/// lane pass instead of the scalar path: on a Zen 4 EPYC a pass of 8 costs
/// 1.0 to 1.3 scalar hashes (`poseidon_peer`: t = 3, 9.9 us against 7.7
/// us; t = 9, 27.6 us against 26.4 us), so two or more groups are cheaper
/// in lanes.
#[cfg_attr(not(all(target_arch = "x86_64", not(miri))), allow(dead_code))]
const PADDED_TAIL_MIN: usize = 2;

/// Passes of 8 groups through the IFMA kernel; a last partial pass of at
/// least [`PADDED_TAIL_MIN`] groups is padded (the unused lanes repeat its
/// last group), a single leftover group goes through the scalar path.
/// Children are canonical, arguments checked.
#[cfg(all(target_arch = "x86_64", not(miri)))]
fn lanes(children: &[Hash], group: usize, out: &mut [Hash]) {
    use ifma::LANES;
    let full = out.len() / LANES * LANES;
    let (body, tail) = out.split_at_mut(full);
    let (body_children, tail_children) = children.split_at(full * group);
    for (parents, members) in body
        .chunks_exact_mut(LANES)
        .zip(body_children.chunks_exact(LANES * group))
    {
        let parents: &mut [Hash; LANES] = parents.try_into().expect("8 parents");
        hash_8(members, group, parents);
    }
    if tail.len() >= PADDED_TAIL_MIN {
        let mut members = [[0u8; 32]; LANES * crate::hash::MAX_GROUP];
        let members = &mut members[..LANES * group];
        let last = &tail_children[tail_children.len() - group..];
        for (lane, slot) in members.chunks_exact_mut(group).enumerate() {
            slot.copy_from_slice(tail_children.chunks_exact(group).nth(lane).unwrap_or(last));
        }
        let mut parents = [[0u8; 32]; LANES];
        hash_8(members, group, &mut parents);
        tail.copy_from_slice(&parents[..tail.len()]);
    } else {
        scalar(tail_children, group, tail);
    }
}

/// One IFMA pass over 8 groups of `group` children.
#[cfg(all(target_arch = "x86_64", not(miri)))]
fn hash_8(members: &[Hash], group: usize, parents: &mut [Hash; ifma::LANES]) {
    match group {
        2 => ifma::hash_8::<3>(members, parents),
        3 => ifma::hash_8::<4>(members, parents),
        4 => ifma::hash_8::<5>(members, parents),
        5 => ifma::hash_8::<6>(members, parents),
        6 => ifma::hash_8::<7>(members, parents),
        7 => ifma::hash_8::<8>(members, parents),
        8 => ifma::hash_8::<9>(members, parents),
        9 => ifma::hash_8::<10>(members, parents),
        10 => ifma::hash_8::<11>(members, parents),
        11 => ifma::hash_8::<12>(members, parents),
        12 => ifma::hash_8::<13>(members, parents),
        13 => ifma::hash_8::<14>(members, parents),
        14 => ifma::hash_8::<15>(members, parents),
        15 => ifma::hash_8::<16>(members, parents),
        16 => ifma::hash_8::<17>(members, parents),
        _ => unreachable!("check_level bounds the group"),
    }
}

#[cfg(not(all(target_arch = "x86_64", not(miri))))]
fn lanes(_: &[Hash], _: usize, _: &mut [Hash]) {
    unreachable!("the IFMA kernel is never supported here")
}

#[cfg(test)]
mod tests {
    use super::*;

    use proptest::prelude::*;

    /// Deterministic canonical field elements (xorshift, top two bits
    /// cleared, values `>= p` dropped), with edge values mixed in.
    fn canonical_children(n: usize, seed: usize) -> Vec<Hash> {
        let mut p_minus_one = crate::hash::BN254_MODULUS_BE;
        p_minus_one[31] -= 1;
        let mut two_253 = [0u8; 32];
        two_253[0] = 0x20;
        let mut below_two_253 = [0xffu8; 32];
        below_two_253[0] = 0x1f;
        let mut one = [0u8; 32];
        one[31] = 1;
        let edges = [[0u8; 32], one, p_minus_one, two_253, below_two_253];
        let mut random = crate::hash::lanes::testing::random_children(2 * n + 8, seed as u64)
            .into_iter()
            .map(|mut child| {
                child[0] &= 0x3f;
                child
            })
            .filter(is_canonical_field_element);
        (0..n)
            .map(|i| {
                if (i + seed).is_multiple_of(7) {
                    edges[(i + seed) % edges.len()]
                } else {
                    random.next().expect("enough random children")
                }
            })
            .collect()
    }

    fn reference(children: &[Hash], group: usize) -> Vec<Hash> {
        children
            .chunks_exact(group)
            .map(|members| HashKind::Poseidon.hash_children(members))
            .collect()
    }

    fn skipped() -> bool {
        let skip = !Kernel::Ifma.is_supported();
        if skip {
            println!("note: this CPU has no avx512ifma; the IFMA Poseidon path was skipped");
        }
        skip
    }

    #[test]
    fn every_supported_kernel_matches_the_scalar_hash_for_every_group_and_count() {
        skipped();
        for kernel in Kernel::supported() {
            for group in 2..=16 {
                for count in 0..=20 {
                    let children = canonical_children(count * group, group * 100 + count);
                    let mut out = vec![[0x5au8; 32]; count];
                    hash_groups_with(kernel, &children, group, &mut out);
                    assert_eq!(
                        out,
                        reference(&children, group),
                        "{kernel:?}, group {group}, count {count}"
                    );
                }
            }
        }
    }

    #[test]
    fn edge_values_in_every_lane_match_the_scalar_hash() {
        if skipped() {
            return;
        }
        let mut p_minus_one = crate::hash::BN254_MODULUS_BE;
        p_minus_one[31] -= 1;
        // p - 1 - 2^24: p's low bytes are f0 00 00 01.
        let mut below_p = p_minus_one;
        below_p[28] -= 1;
        let mut two_253 = [0u8; 32];
        two_253[0] = 0x20;
        let mut near_two_253 = [0xffu8; 32];
        near_two_253[0] = 0x1f;
        let mut one = [0u8; 32];
        one[31] = 1;
        for edge in [[0u8; 32], one, p_minus_one, below_p, two_253, near_two_253] {
            for group in 2..=16 {
                let children = vec![edge; 8 * group];
                let mut out = vec![[0u8; 32]; 8];
                hash_groups_with(Kernel::Ifma, &children, group, &mut out);
                assert_eq!(out, reference(&children, group), "group {group}");
            }
        }
    }

    #[test]
    fn the_selected_kernel_is_the_widest_supported_and_named() {
        assert!(selected().is_supported());
        assert_eq!(kernel_name(), selected().name());
        assert_eq!(
            HashKind::Poseidon.kernel_name(),
            kernel_name(),
            "HashKind reports this module's kernel"
        );
        if Kernel::Ifma.is_supported() {
            assert_eq!(selected(), Kernel::Ifma);
            assert_eq!(groups_per_pass(), 8);
        } else {
            assert_eq!(groups_per_pass(), 1);
        }
    }

    #[test]
    fn known_answer_through_the_lanes() {
        // circomlib poseidon([1, 2]) (poseidon-lite's test vector).
        let mut one = [0u8; 32];
        one[31] = 1;
        let mut two = [0u8; 32];
        two[31] = 2;
        let want = hex::decode("115cc0f5e7d690413df64c6b9662e9cf2a3617f2743245519e19607a4417189a")
            .expect("hex");
        for kernel in Kernel::supported() {
            let children: Vec<Hash> = [one, two].repeat(9);
            let mut out = vec![[0u8; 32]; 9];
            hash_groups_with(kernel, &children, 2, &mut out);
            for parent in out {
                assert_eq!(parent[..], want[..], "{kernel:?}");
            }
        }
    }

    #[test]
    fn a_non_canonical_child_panics_as_the_scalar_hash_does() {
        for kernel in Kernel::supported() {
            let mut children = canonical_children(16 * 3, 5);
            children[9 * 3 + 2] = [0xff; 32];
            let result = std::panic::catch_unwind(|| {
                hash_groups_with(kernel, &children, 3, &mut [[0u8; 32]; 16])
            });
            let message = result.expect_err("must panic");
            let message = message
                .downcast_ref::<String>()
                .expect("a formatted message");
            assert!(
                message.starts_with("poseidon child 2 is not a canonical field element"),
                "{kernel:?}: {message}"
            );
        }
    }

    #[test]
    #[should_panic(expected = "a group has 2..=16 children")]
    fn a_group_of_one_panics() {
        hash_groups(&[[0u8; 32]; 3], 1, &mut [[0u8; 32]; 3]);
    }

    #[test]
    #[should_panic(expected = "a group has 2..=16 children")]
    fn a_group_of_seventeen_panics() {
        hash_groups(&[[0u8; 32]; 17], 17, &mut [[0u8; 32]; 1]);
    }

    #[test]
    #[should_panic(expected = "do not make")]
    fn a_ragged_level_panics() {
        hash_groups(&[[0u8; 32]; 7], 2, &mut [[0u8; 32]; 3]);
    }

    #[test]
    fn unsupported_kernels_panic() {
        for kernel in Kernel::ALL {
            if !kernel.is_supported() {
                let result = std::panic::catch_unwind(|| {
                    hash_groups_with(kernel, &[[0u8; 32]; 2], 2, &mut [[0u8; 32]; 1])
                });
                assert!(result.is_err(), "{kernel:?}");
            }
        }
    }

    fn canonical() -> impl Strategy<Value = Hash> {
        any::<[u8; 32]>().prop_map(|mut value| {
            // Clearing the top three bits leaves a value below 2^253 < p;
            // keep some values with the high bits set by folding into p - 1.
            if value[1] & 1 == 0 {
                value[0] &= 0x1f;
            } else {
                value[0] &= 0x2f;
            }
            value
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        #[test]
        fn lanes_equal_the_scalar_hash(
            group in 2usize..=16,
            children in proptest::collection::vec(canonical(), 16 * 20),
            count in 0usize..=20,
        ) {
            let children = &children[..count * group];
            for kernel in Kernel::supported() {
                let mut out = vec![[0u8; 32]; count];
                hash_groups_with(kernel, children, group, &mut out);
                prop_assert_eq!(&out, &reference(children, group), "{:?}", kernel);
            }
        }
    }
}
