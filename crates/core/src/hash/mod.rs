//! Node hashers: how a group of 2..=16 children becomes its parent.
//!
//! A parent is the hash of exactly its children's 32-byte values concatenated
//! (no padding, no domain tag, no length prefix); Poseidon instead reads each
//! child as a big-endian BN254 scalar and applies circomlib's `poseidon_k`,
//! and MiMCSponge reads them the same way and absorbs them into circomlib's
//! `MiMCSponge(k, 220, 1)`.
//! The set of hashes is closed: a [`HashKind`] is a value a database stores.

pub mod lanes;
mod mimcsponge;
mod poseidon;

use std::fmt;
use std::str::FromStr;

pub use poseidon::{BN254_MODULUS_BE, is_canonical_field_element, rounds as poseidon_rounds};

/// A node or leaf value: 32 bytes. Leaves are stored verbatim (they are
/// already hashes); internal nodes are hasher outputs.
pub type Hash = [u8; 32];

/// The most children a group can have (the largest supported arity).
pub const MAX_GROUP: usize = 16;

/// The node hash functions cairn supports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HashKind {
    /// BLAKE3 of the concatenated children (the default).
    Blake3,
    /// SHA-256 of the concatenated children.
    Sha256,
    /// Keccak-256 (Ethereum's, not NIST SHA3-256) of the concatenated children.
    Keccak256,
    /// circomlib Poseidon over BN254: `poseidon_k(children)` for a group of k.
    Poseidon,
    /// circomlib MiMCSponge over BN254 (220 rounds, key 0, one output):
    /// `MiMCSponge(k, 220, 1)(children)` for a group of k; Tornado Cash's hash
    /// at k = 2.
    MiMCSponge,
}

impl HashKind {
    /// Every kind, in id order.
    pub const ALL: [HashKind; 5] = [
        HashKind::Blake3,
        HashKind::Sha256,
        HashKind::Keccak256,
        HashKind::Poseidon,
        HashKind::MiMCSponge,
    ];

    /// The lowercase name used by the CLI, JSON encodings and test vectors.
    pub const fn name(self) -> &'static str {
        match self {
            HashKind::Blake3 => "blake3",
            HashKind::Sha256 => "sha256",
            HashKind::Keccak256 => "keccak256",
            HashKind::Poseidon => "poseidon",
            HashKind::MiMCSponge => "mimcsponge",
        }
    }

    /// The one-byte id used by the binary encodings.
    pub const fn id(self) -> u8 {
        match self {
            HashKind::Blake3 => 1,
            HashKind::Sha256 => 2,
            HashKind::Keccak256 => 3,
            HashKind::Poseidon => 4,
            HashKind::MiMCSponge => 5,
        }
    }

    /// The kind with binary id `id`, if any.
    pub const fn from_id(id: u8) -> Option<HashKind> {
        match id {
            1 => Some(HashKind::Blake3),
            2 => Some(HashKind::Sha256),
            3 => Some(HashKind::Keccak256),
            4 => Some(HashKind::Poseidon),
            5 => Some(HashKind::MiMCSponge),
            _ => None,
        }
    }

    /// Whether this hash reads values as BN254 scalars (Poseidon and
    /// MiMCSponge): every leaf and proof value must then be canonical, and
    /// one hash costs tens of microseconds of field arithmetic rather than
    /// a memory-bound byte hash.
    #[inline]
    pub const fn is_field_hash(self) -> bool {
        matches!(self, HashKind::Poseidon | HashKind::MiMCSponge)
    }

    /// Whether `value` may appear as a leaf or node under this hash. Only
    /// the field hashes (Poseidon, MiMCSponge) restrict values: they must be
    /// canonical BN254 scalars (strictly below the modulus), never reduced
    /// silently.
    #[inline]
    pub fn accepts(self, value: &Hash) -> bool {
        match self {
            HashKind::Poseidon | HashKind::MiMCSponge => is_canonical_field_element(value),
            _ => true,
        }
    }

    /// The parent of `children` (2..=16 of them).
    ///
    /// # Panics
    /// If `children.len()` is outside 2..=16, or, for a field hash, a child is not
    /// a canonical field element. Both are programmer errors: the tree checks
    /// leaves on append and the verifiers check every proof value with
    /// [`HashKind::accepts`] before hashing.
    #[inline]
    pub fn hash_children(self, children: &[Hash]) -> Hash {
        assert!(
            (2..=MAX_GROUP).contains(&children.len()),
            "a group has 2..=16 children, got {}",
            children.len()
        );
        match self {
            // A single-input kernel where it measured faster than
            // `blake3::hash` (docs/performance.md), else that.
            HashKind::Blake3 => lanes::blake3::hash_one(children),
            HashKind::Sha256 => {
                use sha2::Digest;
                sha2::Sha256::digest(children.as_flattened()).into()
            }
            HashKind::Keccak256 => {
                use sha3::Digest;
                sha3::Keccak256::digest(children.as_flattened()).into()
            }
            HashKind::Poseidon => match poseidon::hash(children) {
                Ok(parent) => parent,
                Err(position) => panic!(
                    "poseidon child {position} is not a canonical field element; callers must check values with HashKind::accepts"
                ),
            },
            HashKind::MiMCSponge => match mimcsponge::hash(children) {
                Ok(parent) => parent,
                Err(position) => panic!(
                    "mimcsponge child {position} is not a canonical field element; callers must check values with HashKind::accepts"
                ),
            },
        }
    }
}

impl HashKind {
    /// Hashes `out.len()` complete groups of `group` children laid out
    /// contiguously: `out[i] = hash_children(&children[i * group..(i + 1) * group])`.
    /// This is the tree's bulk path: the byte hashes and Poseidon run
    /// multi-lane SIMD kernels (one parent per lane, chosen for this CPU at
    /// first use); MiMCSponge hashes one group after another.
    ///
    /// # Panics
    /// As [`HashKind::hash_children`], or if `children.len() != out.len() * group`.
    #[inline]
    pub fn hash_groups(self, children: &[Hash], group: usize, out: &mut [Hash]) {
        assert_eq!(
            children.len(),
            out.len() * group,
            "children must fill the groups exactly"
        );
        match self {
            HashKind::Blake3 => lanes::blake3::hash_groups(children, group, out),
            HashKind::Sha256 => lanes::sha256::hash_groups(children, group, out),
            HashKind::Keccak256 => lanes::keccak::hash_groups(children, group, out),
            HashKind::Poseidon => lanes::poseidon::hash_groups(children, group, out),
            HashKind::MiMCSponge => {
                for (parent, members) in out.iter_mut().zip(children.chunks_exact(group)) {
                    *parent = self.hash_children(members);
                }
            }
        }
    }

    /// For the field hashes, the groups one pass of
    /// [`HashKind::hash_groups`] hashes at once on this CPU (its lanes: 8
    /// for Poseidon on the IFMA kernel, else 1): the grain at which a
    /// level of field hashes is split across threads, since a single field
    /// hash already outweighs a task.
    pub(crate) fn field_hash_grain(self) -> usize {
        match self {
            HashKind::Poseidon => lanes::poseidon::groups_per_pass(),
            _ => 1,
        }
    }

    /// The kernel [`HashKind::hash_groups`] uses on this CPU, for reports.
    pub fn kernel_name(self) -> &'static str {
        match self {
            HashKind::Blake3 => lanes::blake3::kernel_name(),
            HashKind::Sha256 => lanes::sha256::kernel_name(),
            HashKind::Keccak256 => lanes::keccak::kernel_name(),
            HashKind::Poseidon => lanes::poseidon::kernel_name(),
            HashKind::MiMCSponge => "scalar (montgomery, ark-bn254)",
        }
    }
}

impl fmt::Display for HashKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A hash name that is not one of `blake3`, `sha256`, `keccak256`,
/// `poseidon`, `mimcsponge`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown hash {got:?}, want one of blake3, sha256, keccak256, poseidon, mimcsponge")]
pub struct UnknownHash {
    /// The name that was given.
    pub got: String,
}

impl FromStr for HashKind {
    type Err = UnknownHash;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        HashKind::ALL
            .into_iter()
            .find(|kind| kind.name() == s)
            .ok_or_else(|| UnknownHash { got: s.to_owned() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_ids_round_trip() {
        for kind in HashKind::ALL {
            assert_eq!(kind.name().parse::<HashKind>(), Ok(kind));
            assert_eq!(HashKind::from_id(kind.id()), Some(kind));
        }
        assert_eq!(HashKind::from_id(0), None);
        assert_eq!(HashKind::from_id(6), None);
        assert!("sha3".parse::<HashKind>().is_err());
    }

    #[test]
    fn byte_hashes_hash_the_plain_concatenation() {
        let children = [[1u8; 32], [2u8; 32], [3u8; 32]];
        let mut concat = Vec::new();
        for child in &children {
            concat.extend_from_slice(child);
        }
        assert_eq!(
            HashKind::Blake3.hash_children(&children),
            *blake3::hash(&concat).as_bytes()
        );
        // SHA-256 and Keccak-256 of the empty string are well known; check the
        // implementations are the intended ones through a 2-child known answer.
        use sha2::Digest as _;
        assert_eq!(
            HashKind::Sha256.hash_children(&children),
            <[u8; 32]>::from(sha2::Sha256::digest(&concat))
        );
        let keccak_empty = <[u8; 32]>::from(sha3::Keccak256::digest(b""));
        assert_eq!(
            keccak_empty[..4],
            [0xc5, 0xd2, 0x46, 0x01],
            "Keccak-256, not NIST SHA3-256"
        );
    }

    #[test]
    #[should_panic(expected = "a group has 2..=16 children")]
    fn a_single_child_is_never_hashed() {
        HashKind::Blake3.hash_children(&[[0u8; 32]]);
    }
}
