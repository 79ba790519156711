//! Hash maps keyed by values (and by leaf indices) for the databases' own
//! bookkeeping: a mutable tree's value -> leaf index map, its removed
//! values and pending leaves, an indexed database's pending values.
//!
//! Their keys need no SipHash: a 32-byte value is already the output of a
//! hash, and the map only needs its buckets picked in a way no one can aim
//! at. [`ValueState`] hashes a value with the set's keyed fold
//! ([`super::folded`]: its four words masked by a 128-bit key and
//! multiplied, about 3 ns where SipHash-1-3 of 32 bytes takes 15 to 20),
//! under one random key per process. That is safe against adversarial
//! values for the reason the set's placement is (see `folded`): a user can
//! grind a value to any prefix or suffix, but without the key every
//! bucket and control byte looks independent of the value's bits, so
//! ground values do not pile into a probe sequence. The key never leaves
//! the process; the worst an attacker who recovered it (from timings, say)
//! could do is lengthen probes of the keys they chose: a map never answers
//! wrongly, since every key is compared whole.
//! Other keys (leaf indices, lengths) go through one keyed multiply-fold
//! per word.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

use cairn_core::Hash;

use super::{Key, fold, folded};

/// A map from values (or leaf indices) under [`ValueState`].
pub(crate) type ValueMap<K, V> = HashMap<K, V, ValueState>;
/// A set of values under [`ValueState`].
pub(crate) type ValueSet = HashSet<Hash, ValueState>;

/// An odd constant (digits of e) that masks the key word of the
/// multiply-fold of non-value words.
const WORD_MASK: u64 = 0xb7e1_5162_8aed_2a6b;

/// The process's key, drawn at first use.
fn process_key() -> Key {
    static KEY: OnceLock<Key> = OnceLock::new();
    *KEY.get_or_init(Key::random)
}

/// Builds [`ValueHasher`]s under the process's random key.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ValueState {
    key: Key,
}

impl Default for ValueState {
    fn default() -> ValueState {
        ValueState { key: process_key() }
    }
}

impl BuildHasher for ValueState {
    type Hasher = ValueHasher;

    #[inline]
    fn build_hasher(&self) -> ValueHasher {
        ValueHasher {
            key: self.key,
            state: 0,
        }
    }
}

/// The keyed hash of one key (see the module header).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ValueHasher {
    key: Key,
    state: u64,
}

impl Hasher for ValueHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        if let Ok(value) = <&Hash>::try_from(bytes) {
            // The rotation keeps a key of several values order-sensitive.
            self.state = self.state.rotate_left(29) ^ folded(value, self.key);
            return;
        }
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
        self.write_u64(bytes.len() as u64);
    }

    #[inline]
    fn write_u64(&mut self, word: u64) {
        self.state = fold(self.state ^ word ^ self.key.0, self.key.1 ^ WORD_MASK);
    }

    #[inline]
    fn write_usize(&mut self, word: usize) {
        self.write_u64(word as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.state
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::hash::BuildHasher;

    use super::*;

    fn value(i: u64) -> Hash {
        cairn_testkit::leaf(1, i)
    }

    #[test]
    fn maps_under_the_keyed_hash_answer_as_std_maps_do() {
        // The same operations on a std map (SipHash) and a value map: the
        // same answers, including for keys that share all but one byte.
        let mut std_map: HashMap<Hash, u64> = HashMap::new();
        let mut map: ValueMap<Hash, u64> = ValueMap::default();
        let mut indices: ValueMap<u64, Hash> = ValueMap::default();
        for i in 0..20_000u64 {
            let key = if i % 2 == 0 {
                value(i % 7_000)
            } else {
                let mut v = [0x5a; 32];
                v[31] = i as u8;
                v[0] = (i >> 8) as u8;
                v
            };
            match i % 3 {
                0 => assert_eq!(map.remove(&key), std_map.remove(&key)),
                _ => assert_eq!(map.insert(key, i), std_map.insert(key, i)),
            }
            indices.insert(i * 4096, key);
        }
        assert_eq!(map.len(), std_map.len());
        for (key, index) in &std_map {
            assert_eq!(map.get(key), Some(index));
        }
        assert_eq!(indices.len(), 20_000);
        assert_eq!(indices.get(&(4096 * 16)), Some(&value(16)));
    }

    #[test]
    fn ground_values_do_not_share_buckets() {
        // Values equal but for their last 4 bytes (what grinding for a
        // prefix gives), or for their first 4: the low bits (the bucket)
        // and the top 7 (the control byte) spread as for random values.
        let state = ValueState::default();
        for shared_prefix in [true, false] {
            let buckets = 1usize << 12;
            let mut low = vec![0u32; buckets];
            let mut top = [0u32; 128];
            let count = 1u32 << 18;
            for i in 0..count {
                let mut v = [0xabu8; 32];
                if shared_prefix {
                    v[28..].copy_from_slice(&i.to_be_bytes());
                } else {
                    v[..4].copy_from_slice(&i.to_be_bytes());
                }
                let hash = state.hash_one(v);
                low[(hash as usize) & (buckets - 1)] += 1;
                top[(hash >> 57) as usize] += 1;
            }
            // 64 per bucket expected; a fair spread stays well under 2x.
            let most = *low.iter().max().unwrap();
            assert!(most < 128, "bucket of {most}, prefix {shared_prefix}");
            let most = *top.iter().max().unwrap();
            assert!(most < 2 * (count / 128), "control byte of {most}");
        }
        // The order of a key's parts matters.
        assert_ne!(
            state.hash_one((value(1), value(2))),
            state.hash_one((value(2), value(1)))
        );
    }
}
