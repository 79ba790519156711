//! SHA-256 of many tree parents at once, one parent per SIMD lane.
//!
//! A parent is SHA-256 of its `group` children concatenated: a message of
//! `32 * group` bytes (64..=512), padded per FIPS 180-4 to
//! `group / 2 + 1` blocks of 64 bytes. Parents of a level are independent,
//! so the kernels run the compression function on 8 (AVX2) or 16 (AVX-512)
//! messages at once, one 32-bit word per lane. Because every message of a
//! call has the same length, the padding is the same in every lane: for an
//! even group the whole final block is a constant whose message schedule is
//! computed once per call; for an odd group only its second half is.
//!
//! Kernels and dispatch (cached on first use):
//! - [`Kernel::Sha2`]: a loop over the single-message `sha2` crate, the
//!   portable fallback and the reference. `sha2` itself uses the SHA-NI
//!   instructions when the CPU has them.
//! - [`Kernel::Avx512`]: 16 lanes in `zmm` registers (AVX-512F + BW).
//! - [`Kernel::Avx2`]: 8 lanes in `ymm` registers.
//!
//! [`hash_groups`] takes the AVX-512 kernel wherever the CPU has it, SHA-NI
//! or not; then `sha2` on a CPU with SHA-NI; then the AVX2 kernel; then
//! portable `sha2`. Measured with the `sha_keccak_lanes` example (it prints
//! every kernel this CPU runs): on a Zen 4 EPYC, which has SHA-NI, the
//! AVX-512 kernel is 1.7-2.6x faster than `sha2`'s SHA-NI single stream
//! (which hashes one short message at a time) and the AVX2 kernel 0.7-0.9x
//! its speed; on a Cascade Lake Xeon (no SHA-NI) the AVX-512 kernel is
//! 11-15x and the AVX2 kernel 5.5-7x faster than `sha2`.

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;

use std::sync::OnceLock;

use sha2::Digest as _;

/// The SHA-256 round constants.
const K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/// The SHA-256 initial hash value.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // used by the x86-64 kernels
const IV: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// A SHA-256 implementation [`hash_groups_with`] can be forced to use.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// A loop over the single-message `sha2` crate (SHA-NI where present).
    Sha2,
    /// 8 messages per AVX2 register.
    Avx2,
    /// 16 messages per AVX-512 register.
    Avx512,
}

impl Kernel {
    /// Every kernel, supported here or not.
    pub const ALL: [Kernel; 3] = [Kernel::Sha2, Kernel::Avx2, Kernel::Avx512];

    /// A short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Sha2 if sha_ni() => "sha2 (SHA-NI)",
            Kernel::Sha2 => "sha2 (portable)",
            Kernel::Avx2 => "avx2 x8",
            Kernel::Avx512 => "avx512 x16",
        }
    }

    /// Whether this CPU can run the kernel.
    pub fn is_supported(self) -> bool {
        match self {
            Kernel::Sha2 => true,
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

/// Whether the CPU has the SHA extensions (which the `sha2` crate uses).
fn sha_ni() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("sha")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The kernel [`hash_groups`] uses, chosen once.
fn selected() -> Kernel {
    static SELECTED: OnceLock<Kernel> = OnceLock::new();
    *SELECTED.get_or_init(|| {
        if Kernel::Avx512.is_supported() {
            Kernel::Avx512
        } else if sha_ni() {
            Kernel::Sha2
        } else if Kernel::Avx2.is_supported() {
            Kernel::Avx2
        } else {
            Kernel::Sha2
        }
    })
}

/// `out[i] = SHA-256(children[i*group .. (i+1)*group] concatenated)`, for
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
        Kernel::Sha2 => single_stream(children, group, out),
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2 => avx2::hash_groups(children, group, out),
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512 => avx512::hash_groups(children, group, out),
        #[cfg(not(target_arch = "x86_64"))]
        Kernel::Avx2 | Kernel::Avx512 => panic!("the {kernel:?} kernel needs x86_64"),
    }
}

/// The portable fallback: one `sha2` call per parent.
fn single_stream(children: &[[u8; 32]], group: usize, out: &mut [[u8; 32]]) {
    for (parent, kids) in out.iter_mut().zip(children.chunks_exact(group)) {
        *parent = sha2::Sha256::digest(kids.as_flattened()).into();
    }
}

/// The lane-invariant part of the padded message, for one group size.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
struct Padding {
    /// Message blocks made only of child bytes (`group / 2`).
    data_blocks: usize,
    /// Whether the final block starts with 32 child bytes (odd groups).
    half_data: bool,
    /// Odd groups: bytes 32..64 of the final block (0x80, zeros, bit length).
    tail: [u8; 32],
    /// Even groups: `W[t] + K[t]` of the constant final block.
    wk: [u32; 64],
}

#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
impl Padding {
    fn new(group: usize) -> Padding {
        let bits = (group as u64 * 32 * 8).to_be_bytes();
        let half_data = group % 2 == 1;
        let mut tail = [0u8; 32];
        let mut wk = [0u32; 64];
        if half_data {
            tail[0] = 0x80;
            tail[24..].copy_from_slice(&bits);
        } else {
            let mut block = [0u8; 64];
            block[0] = 0x80;
            block[56..].copy_from_slice(&bits);
            let mut w = [0u32; 64];
            for (t, word) in block.chunks_exact(4).enumerate() {
                w[t] = u32::from_be_bytes(word.try_into().expect("4 bytes"));
            }
            for t in 16..64 {
                let s0 = w[t - 15].rotate_right(7) ^ w[t - 15].rotate_right(18) ^ (w[t - 15] >> 3);
                let s1 = w[t - 2].rotate_right(17) ^ w[t - 2].rotate_right(19) ^ (w[t - 2] >> 10);
                w[t] = w[t - 16]
                    .wrapping_add(s0)
                    .wrapping_add(w[t - 7])
                    .wrapping_add(s1);
            }
            for t in 0..64 {
                wk[t] = w[t].wrapping_add(K[t]);
            }
        }
        Padding {
            data_blocks: group / 2,
            half_data,
            tail,
            wk,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::hash::lanes::testing::random_children;

    fn digest(bytes: &[u8]) -> [u8; 32] {
        sha2::Sha256::digest(bytes).into()
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
    fn every_supported_kernel_matches_sha2() {
        let kernels = Kernel::supported();
        assert!(kernels.contains(&Kernel::Sha2));
        for kernel in kernels {
            check_kernel(kernel);
        }
    }

    #[test]
    fn the_selected_kernel_matches_sha2() {
        assert!(selected().is_supported());
        assert_eq!(kernel_name(), selected().name());
        for group in [2, 3, 4, 8, 15, 16] {
            let children = random_children(37 * group, group as u64);
            let mut out = vec![[0u8; 32]; 37];
            hash_groups(&children, group, &mut out);
            assert_eq!(out, reference(&children, group), "group {group}");
        }
    }

    #[test]
    fn matches_hash_children() {
        let children = random_children(5 * 7, 99);
        let mut out = vec![[0u8; 32]; 5];
        hash_groups(&children, 7, &mut out);
        for (parent, kids) in out.iter().zip(children.chunks_exact(7)) {
            assert_eq!(*parent, crate::HashKind::Sha256.hash_children(kids));
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
