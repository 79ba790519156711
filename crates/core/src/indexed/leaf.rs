//! The indexed tree's leaf: a value and a pointer to the next larger value.
//!
//! Layout (docs/spec.md, "Indexed trees"): the leaf hashes the three
//! 32-byte words `value ‖ be32(next_index) ‖ next_value` with the tree's
//! hash as a group of three children, so the byte hashes hash those 96
//! bytes and the field hashes take three field elements (Poseidon with
//! t = 4, MiMCSponge absorbing three inputs). `next_value = 0` with
//! `next_index = 0` marks the largest value (no successor).

use crate::hash::{Hash, HashKind};

/// The value of the guard leaf, index 0 of every indexed tree: it is below
/// every value, so every value has a predecessor. It cannot be inserted.
pub const GUARD_VALUE: Hash = [0; 32];

/// The next value of the leaf holding the largest value: "no successor".
pub const END_MARKER: Hash = [0; 32];

/// One leaf of an indexed tree, before hashing: its value, and the index
/// and value of the next larger value in the tree (`0`, `0` for the
/// largest). `Debug` shows the values in hex.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct IndexedLeaf {
    /// The value this leaf holds (0 for the guard).
    pub value: Hash,
    /// The index of the leaf holding the next larger value (0: none).
    pub next_index: u64,
    /// The next larger value ([`END_MARKER`]: none).
    pub next_value: Hash,
}

impl std::fmt::Debug for IndexedLeaf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexedLeaf")
            .field("value", &crate::hex::Hex(&self.value))
            .field("next_index", &self.next_index)
            .field("next_value", &crate::hex::Hex(&self.next_value))
            .finish()
    }
}

/// `index` as a 32-byte big-endian word (a field element below 2^64).
pub fn index_word(index: u64) -> Hash {
    let mut word = [0u8; 32];
    word[24..].copy_from_slice(&index.to_be_bytes());
    word
}

impl IndexedLeaf {
    /// The guard leaf of an empty tree: value 0, no successor.
    pub const GUARD: IndexedLeaf = IndexedLeaf {
        value: GUARD_VALUE,
        next_index: 0,
        next_value: END_MARKER,
    };

    /// Whether this leaf holds the largest value (no successor).
    pub fn is_last(&self) -> bool {
        self.next_value == END_MARKER
    }

    /// The three words the leaf hash takes, in order.
    pub fn words(&self) -> [Hash; 3] {
        [self.value, index_word(self.next_index), self.next_value]
    }

    /// Whether every word is a value `hash` accepts (the field hashes need
    /// canonical field elements; the index word always is).
    pub fn accepted_by(&self, hash: HashKind) -> bool {
        hash.accepts(&self.value) && hash.accepts(&self.next_value)
    }

    /// The leaf hash: `hash` over the three words as one group.
    ///
    /// # Panics
    /// For a field hash, if a value is not canonical (callers check with
    /// [`IndexedLeaf::accepted_by`]; the tree never holds one).
    pub fn hash(&self, hash: HashKind) -> Hash {
        hash.hash_children(&self.words())
    }

    /// Whether `value` lies strictly between this leaf's value and its
    /// next value (or above the value, for the last leaf): the leaf is the
    /// low leaf of `value`, which the tree then does not hold.
    pub fn brackets(&self, value: &Hash) -> bool {
        self.value < *value && (self.is_last() || *value < self.next_value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_leaf_hash_is_the_hash_of_the_96_byte_layout() {
        let leaf = IndexedLeaf {
            value: [3; 32],
            next_index: 0x0102_0304_0506_0708,
            next_value: [9; 32],
        };
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&[3; 32]);
        bytes.extend_from_slice(&[0; 24]);
        bytes.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        bytes.extend_from_slice(&[9; 32]);
        assert_eq!(
            leaf.hash(HashKind::Blake3),
            *blake3::hash(&bytes).as_bytes()
        );
        use sha2::Digest;
        let sha: Hash = sha2::Sha256::digest(&bytes).into();
        assert_eq!(leaf.hash(HashKind::Sha256), sha);
    }

    #[test]
    fn brackets_follows_the_order_of_big_endian_integers() {
        let mut low = IndexedLeaf {
            value: [0; 32],
            next_index: 3,
            next_value: [0; 32],
        };
        low.value[31] = 5;
        low.next_value[30] = 1; // 256
        let at = |n: u16| {
            let mut v = [0u8; 32];
            v[30..].copy_from_slice(&n.to_be_bytes());
            v
        };
        assert!(!low.brackets(&at(5)));
        assert!(low.brackets(&at(6)));
        assert!(low.brackets(&at(255)));
        assert!(!low.brackets(&at(256)));
        assert!(!low.brackets(&at(4)));
        let last = IndexedLeaf {
            next_index: 0,
            next_value: END_MARKER,
            ..low
        };
        assert!(last.brackets(&at(256)) && last.brackets(&[0xff; 32]));
        assert!(!IndexedLeaf::GUARD.brackets(&GUARD_VALUE));
    }
}
