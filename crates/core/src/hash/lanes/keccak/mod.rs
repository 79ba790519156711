//! Keccak-256 (Ethereum's: rate 136 bytes, padding `0x01 .. 0x80`, not
//! NIST SHA3-256's `0x06`) of many tree parents at once, one parent per
//! SIMD lane.
//!
//! A parent is Keccak-256 of its `group` children concatenated: a message of
//! `32 * group` bytes (64..=512), absorbed as `32 * group / 136 + 1` blocks
//! of 136 bytes (1..=4), each followed by the `Keccak-f[1600]` permutation.
//! The last block is always partial and carries the padding. Parents of a
//! level are independent, so the kernels keep 4 (AVX2) or 8 (AVX-512)
//! states at once, one 64-bit state word per lane: the state is 25 vectors.
//!
//! Kernels and dispatch (cached on first use):
//! - [`Kernel::Sha3`]: a loop over the single-message `sha3` crate, the
//!   portable fallback and the reference.
//! - [`Kernel::Avx512`]: 8 lanes in `zmm` registers (AVX-512F: 64-bit
//!   rotates, ternary logic for the theta xors and chi).
//! - [`Kernel::Avx2`]: 4 lanes in `ymm` registers.
//!
//! [`hash_groups`] takes the widest lane kernel the CPU supports: on a
//! Cascade Lake Xeon the AVX-512 kernel is 6.5x and the AVX2 kernel 3.5x
//! faster than `sha3`, and even a lone parent is faster in a lane pass.

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;

use std::sync::OnceLock;

use sha3::Digest as _;

/// Bytes absorbed per permutation (1600 - 2 * 256 bits).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const RATE: usize = 136;

/// The `Keccak-f[1600]` round constants (iota).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const RC: [u64; 24] = [
    0x0000_0000_0000_0001,
    0x0000_0000_0000_8082,
    0x8000_0000_0000_808a,
    0x8000_0000_8000_8000,
    0x0000_0000_0000_808b,
    0x0000_0000_8000_0001,
    0x8000_0000_8000_8081,
    0x8000_0000_0000_8009,
    0x0000_0000_0000_008a,
    0x0000_0000_0000_0088,
    0x0000_0000_8000_8009,
    0x0000_0000_8000_000a,
    0x0000_0000_8000_808b,
    0x8000_0000_0000_008b,
    0x8000_0000_0000_8089,
    0x8000_0000_0000_8003,
    0x8000_0000_0000_8002,
    0x8000_0000_0000_0080,
    0x0000_0000_0000_800a,
    0x8000_0000_8000_000a,
    0x8000_0000_8000_8081,
    0x8000_0000_0000_8080,
    0x0000_0000_8000_0001,
    0x8000_0000_8000_8008,
];

/// Lays out a message's final, partial block: the message bytes from
/// `RATE * (len / RATE)` on, then Keccak's pad10*1 with Ethereum's domain
/// byte (`0x01` after the data, `0x80` in the block's last byte).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn final_block(msg: &[u8]) -> [u8; RATE] {
    let rest = &msg[msg.len() / RATE * RATE..];
    let mut block = [0u8; RATE];
    block[..rest.len()].copy_from_slice(rest);
    block[rest.len()] ^= 0x01;
    block[RATE - 1] ^= 0x80;
    block
}

/// A Keccak-256 implementation [`hash_groups_with`] can be forced to use.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// A loop over the single-message `sha3` crate.
    Sha3,
    /// 4 states per AVX2 register set.
    Avx2,
    /// 8 states per AVX-512 register set.
    Avx512,
}

impl Kernel {
    /// Every kernel, supported here or not.
    pub const ALL: [Kernel; 3] = [Kernel::Sha3, Kernel::Avx2, Kernel::Avx512];

    /// A short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Sha3 => "sha3 (portable)",
            Kernel::Avx2 => "avx2 x4",
            Kernel::Avx512 => "avx512 x8",
        }
    }

    /// Whether this CPU can run the kernel.
    pub fn is_supported(self) -> bool {
        match self {
            Kernel::Sha3 => true,
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => avx2::is_supported(),
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => avx512::is_supported(),
            #[cfg(not(target_arch = "x86_64"))]
            Kernel::Avx2 | Kernel::Avx512 => false,
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
        if Kernel::Avx512.is_supported() {
            Kernel::Avx512
        } else if Kernel::Avx2.is_supported() {
            Kernel::Avx2
        } else {
            Kernel::Sha3
        }
    })
}

/// `out[i] = Keccak-256(children[i*group .. (i+1)*group] concatenated)`, for
/// `i < out.len()`.
///
/// # Panics
/// Unless 2 <= group <= 16 and children.len() == out.len() * group.
pub fn hash_groups(children: &[[u8; 32]], group: usize, out: &mut [[u8; 32]]) {
    hash_groups_with(selected(), children, group, out);
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
pub fn hash_groups_with(kernel: Kernel, children: &[[u8; 32]], group: usize, out: &mut [[u8; 32]]) {
    super::check_level(children, group, out);
    match kernel {
        Kernel::Sha3 => single_stream(children, group, out),
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2 => avx2::hash_groups(children, group, out),
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512 => avx512::hash_groups(children, group, out),
        #[cfg(not(target_arch = "x86_64"))]
        Kernel::Avx2 | Kernel::Avx512 => panic!("the {kernel:?} kernel needs x86_64"),
    }
}

/// The portable fallback: one `sha3` call per parent.
fn single_stream(children: &[[u8; 32]], group: usize, out: &mut [[u8; 32]]) {
    for (parent, kids) in out.iter_mut().zip(children.chunks_exact(group)) {
        *parent = sha3::Keccak256::digest(kids.as_flattened()).into();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::hash::lanes::testing::random_children;

    fn digest(bytes: &[u8]) -> [u8; 32] {
        sha3::Keccak256::digest(bytes).into()
    }

    fn reference(children: &[[u8; 32]], group: usize) -> Vec<[u8; 32]> {
        crate::hash::lanes::testing::reference(children, group, digest)
    }

    fn check_kernel(kernel: Kernel) {
        crate::hash::lanes::testing::check_groups(
            &format!("{kernel:?}"),
            digest,
            |children, group, out| hash_groups_with(kernel, children, group, out),
        );
    }

    #[test]
    fn every_supported_kernel_matches_sha3() {
        let kernels = Kernel::supported();
        assert!(kernels.contains(&Kernel::Sha3));
        for kernel in kernels {
            check_kernel(kernel);
        }
    }

    #[test]
    fn the_selected_kernel_matches_sha3() {
        assert!(selected().is_supported());
        assert_eq!(kernel_name(), selected().name());
        for group in [2, 3, 4, 5, 8, 9, 12, 13, 16] {
            let children = random_children(37 * group, group as u64);
            let mut out = vec![[0u8; 32]; 37];
            hash_groups(&children, group, &mut out);
            assert_eq!(out, reference(&children, group), "group {group}");
        }
    }

    #[test]
    fn is_ethereum_keccak_not_sha3() {
        // keccak256 of 64 zero bytes (Ethereum's empty-subtree hash at
        // depth 1 in many Merkle trees) starts ad3228b6; SHA3-256 differs.
        let mut out = [[0u8; 32]; 1];
        for kernel in Kernel::supported() {
            hash_groups_with(kernel, &[[0u8; 32]; 2], 2, &mut out);
            assert_eq!(out[0][..4], [0xad, 0x32, 0x28, 0xb6], "{kernel:?}");
        }
    }

    #[test]
    fn final_block_pads_with_the_keccak_domain_byte() {
        let msg = [7u8; 64];
        let block = final_block(&msg);
        assert_eq!(block[..64], msg);
        assert_eq!(block[64], 0x01);
        assert!(block[65..RATE - 1].iter().all(|&b| b == 0));
        assert_eq!(block[RATE - 1], 0x80);
        // 512 bytes: three full blocks, then 104 bytes in the fourth.
        let msg = [9u8; 512];
        let block = final_block(&msg);
        assert_eq!(block[..104], msg[408..]);
        assert_eq!(block[104], 0x01);
        assert_eq!(block[RATE - 1], 0x80);
    }

    #[test]
    fn matches_hash_children() {
        let children = random_children(5 * 7, 99);
        let mut out = vec![[0u8; 32]; 5];
        hash_groups(&children, 7, &mut out);
        for (parent, kids) in out.iter().zip(children.chunks_exact(7)) {
            assert_eq!(*parent, crate::HashKind::Keccak256.hash_children(kids));
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
    #[should_panic(expected = "do not make")]
    fn too_few_outputs_panics() {
        hash_groups(&[[0u8; 32]; 8], 2, &mut [[0u8; 32]; 3]);
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
}
