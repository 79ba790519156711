//! The reference model of the indexed tree: a sorted list and everything
//! recomputed from scratch. Leaf `i` holds the `i`-th inserted value (the
//! guard, value 0, is leaf 0) and points to the leaf of the smallest larger
//! value, found by scanning every value; the root is the reference LeanIMT
//! root over the leaf hashes, each hash taken over the 96 bytes (three
//! words) the spec lays out. Slow on purpose: quadratic in the values.

use cairn_core::indexed::IndexedLeaf;
use cairn_core::{Arity, Hash, HashKind};

use crate::reference;

/// The leaves of the tree after inserting `values` in order (no zero, no
/// repeats: the caller's to ensure), the guard first.
pub fn leaves(values: &[Hash]) -> Vec<IndexedLeaf> {
    let mut all = vec![[0u8; 32]];
    all.extend_from_slice(values);
    all.iter()
        .map(|value| {
            let next = all
                .iter()
                .enumerate()
                .filter(|(_, other)| *other > value)
                .min_by_key(|(_, other)| **other);
            match next {
                Some((index, next_value)) => IndexedLeaf {
                    value: *value,
                    next_index: index as u64,
                    next_value: *next_value,
                },
                None => IndexedLeaf {
                    value: *value,
                    next_index: 0,
                    next_value: [0; 32],
                },
            }
        })
        .collect()
}

/// The leaf hash, from the spec's words: the value, the next index as a
/// 32-byte big-endian integer, the next value.
pub fn leaf_hash(hash: HashKind, leaf: &IndexedLeaf) -> Hash {
    let mut index = [0u8; 32];
    index[24..].copy_from_slice(&leaf.next_index.to_be_bytes());
    hash.hash_children(&[leaf.value, index, leaf.next_value])
}

/// The root after inserting `values` in order.
pub fn root(arity: Arity, hash: HashKind, values: &[Hash]) -> Hash {
    let hashes: Vec<Hash> = leaves(values).iter().map(|l| leaf_hash(hash, l)).collect();
    reference::root(arity, hash, &hashes).expect("the guard leaf is always there")
}

/// The low leaf of `value` (absent from `values`): the index of the
/// largest value below it, by scanning.
pub fn low_index(values: &[Hash], value: &Hash) -> u64 {
    let mut all = vec![[0u8; 32]];
    all.extend_from_slice(values);
    all.iter()
        .enumerate()
        .filter(|(_, other)| *other < value)
        .max_by_key(|(_, other)| **other)
        .map(|(index, _)| index as u64)
        .expect("the guard is below every nonzero value")
}
