//! The binary encoding of the indexed proofs (docs/spec.md, "Indexed
//! trees"), beside the LeanIMT proofs' (same version byte, kinds 3..=5):
//!
//! ```text
//! absence   : version | kind 3 | arity | hash id | low index u64 | size u64 | value [32] | low leaf (value [32] | next index u64 | next value [32]) | siblings [32] * count
//! membership: version | kind 4 | arity | hash id | index u64 | size u64 | leaf (value [32] | next index u64 | next value [32]) | siblings [32] * count
//! insertion : version | kind 5 | arity | hash id | old size u64 | insertions u64 | per insertion: value [32] | low index u64 | low leaf | low siblings | new siblings
//! ```
//! Integers are big-endian. Counts derive from the header (and, for an
//! insertion, from its position in the witness); the total length must be
//! exactly what they imply, so every accepted byte string re-encodes to
//! itself.

#![deny(clippy::indexing_slicing, clippy::unwrap_used)]

use super::leaf::IndexedLeaf;
use super::proof::{AbsenceProof, IndexedMembershipProof, InsertionStep, InsertionWitness};
use crate::Arity;
use crate::cast::to_usize;
use crate::hash::{Hash, HashKind};
use crate::proof::{
    DecodeError, FORMAT_VERSION, KIND_ABSENCE, KIND_INDEXED_MEMBERSHIP, KIND_INSERTION, kind_name,
};
use crate::shape;

/// Bytes of a leaf preimage in these encodings (the next index as a u64).
const LEAF_BYTES: usize = 32 + 8 + 32;
/// Bytes of an insertion before its siblings.
const STEP_FIXED_BYTES: usize = 32 + 8 + LEAF_BYTES;

/// A cursor over untrusted bytes: every read is bounds-checked.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, count: usize) -> Result<&'a [u8], DecodeError> {
        let end = self.at.checked_add(count);
        match end.and_then(|end| self.bytes.get(self.at..end)) {
            Some(slice) => {
                self.at += count;
                Ok(slice)
            }
            None => Err(DecodeError::WrongLength {
                got: self.bytes.len(),
                want: self.at.saturating_add(count),
            }),
        }
    }

    fn u64(&mut self) -> Result<u64, DecodeError> {
        let bytes = self.take(8)?;
        Ok(u64::from_be_bytes(bytes.try_into().unwrap_or_default()))
    }

    fn hash(&mut self) -> Result<Hash, DecodeError> {
        let bytes = self.take(32)?;
        Ok(bytes.try_into().unwrap_or_default())
    }

    fn hashes(&mut self, count: usize) -> Result<Vec<Hash>, DecodeError> {
        let bytes = self.take(count.saturating_mul(32))?;
        Ok(bytes.as_chunks::<32>().0.to_vec())
    }

    fn leaf(&mut self) -> Result<IndexedLeaf, DecodeError> {
        Ok(IndexedLeaf {
            value: self.hash()?,
            next_index: self.u64()?,
            next_value: self.hash()?,
        })
    }

    fn finish(&self) -> Result<(), DecodeError> {
        if self.at != self.bytes.len() {
            return Err(DecodeError::WrongLength {
                got: self.bytes.len(),
                want: self.at,
            });
        }
        Ok(())
    }
}

/// Reads the four leading bytes and the two header integers.
fn header<'a>(
    bytes: &'a [u8],
    want_kind: u8,
    want_name: &'static str,
) -> Result<(Arity, HashKind, u64, u64, Cursor<'a>), DecodeError> {
    if bytes.len() < 20 {
        return Err(DecodeError::ShortHeader {
            got: bytes.len(),
            want: 20,
        });
    }
    let mut cursor = Cursor { bytes, at: 0 };
    let [version, kind, arity, hash] = cursor.take(4)?.try_into().unwrap_or_default();
    if version != FORMAT_VERSION {
        return Err(DecodeError::UnsupportedVersion {
            got: u64::from(version),
            want: FORMAT_VERSION,
        });
    }
    if kind != want_kind {
        return Err(DecodeError::WrongKind {
            got: kind_name(kind),
            want: want_name,
        });
    }
    let arity = Arity::new(u64::from(arity)).map_err(|_| DecodeError::BadArity {
        got: u64::from(arity),
    })?;
    let hash = HashKind::from_id(hash).ok_or_else(|| DecodeError::UnknownHash {
        got: hash.to_string(),
    })?;
    let first = cursor.u64()?;
    let second = cursor.u64()?;
    Ok((arity, hash, first, second, cursor))
}

fn encode_header(
    out: &mut Vec<u8>,
    kind: u8,
    arity: Arity,
    hash: HashKind,
    first: u64,
    second: u64,
) {
    out.extend_from_slice(&[FORMAT_VERSION, kind, arity.byte(), hash.id()]);
    out.extend_from_slice(&first.to_be_bytes());
    out.extend_from_slice(&second.to_be_bytes());
}

fn encode_leaf(out: &mut Vec<u8>, leaf: &IndexedLeaf) {
    out.extend_from_slice(&leaf.value);
    out.extend_from_slice(&leaf.next_index.to_be_bytes());
    out.extend_from_slice(&leaf.next_value);
}

fn check_index(index: u64, size: u64) -> Result<(), DecodeError> {
    if index >= size {
        return Err(DecodeError::IndexOutOfRange { index, size });
    }
    Ok(())
}

impl AbsenceProof {
    /// The binary encoding.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(124 + 32 * self.siblings.len());
        encode_header(
            &mut out,
            KIND_ABSENCE,
            self.arity,
            self.hash,
            self.low_index,
            self.size,
        );
        out.extend_from_slice(&self.value);
        encode_leaf(&mut out, &self.low);
        out.extend_from_slice(self.siblings.as_flattened());
        out
    }

    /// Decodes a binary absence proof; never panics, checks the exact
    /// length before allocating.
    pub fn from_bytes(bytes: &[u8]) -> Result<AbsenceProof, DecodeError> {
        let (arity, hash, low_index, size, mut cursor) = header(bytes, KIND_ABSENCE, "absence")?;
        check_index(low_index, size)?;
        let count = shape::membership_sibling_count(low_index, size, arity);
        let want = 20 + 32 + LEAF_BYTES + 32 * count;
        if bytes.len() != want {
            return Err(DecodeError::WrongLength {
                got: bytes.len(),
                want,
            });
        }
        let value = cursor.hash()?;
        let low = cursor.leaf()?;
        let siblings = cursor.hashes(count)?;
        cursor.finish()?;
        Ok(AbsenceProof {
            arity,
            hash,
            value,
            low_index,
            size,
            low,
            siblings,
        })
    }
}

impl IndexedMembershipProof {
    /// The binary encoding.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(92 + 32 * self.siblings.len());
        encode_header(
            &mut out,
            KIND_INDEXED_MEMBERSHIP,
            self.arity,
            self.hash,
            self.index,
            self.size,
        );
        encode_leaf(&mut out, &self.leaf);
        out.extend_from_slice(self.siblings.as_flattened());
        out
    }

    /// Decodes a binary indexed membership proof; never panics, checks the
    /// exact length before allocating.
    pub fn from_bytes(bytes: &[u8]) -> Result<IndexedMembershipProof, DecodeError> {
        let (arity, hash, index, size, mut cursor) =
            header(bytes, KIND_INDEXED_MEMBERSHIP, "indexed_membership")?;
        check_index(index, size)?;
        let count = shape::membership_sibling_count(index, size, arity);
        let want = 20 + LEAF_BYTES + 32 * count;
        if bytes.len() != want {
            return Err(DecodeError::WrongLength {
                got: bytes.len(),
                want,
            });
        }
        let leaf = cursor.leaf()?;
        let siblings = cursor.hashes(count)?;
        cursor.finish()?;
        Ok(IndexedMembershipProof {
            arity,
            hash,
            index,
            size,
            leaf,
            siblings,
        })
    }
}

impl InsertionWitness {
    /// The binary encoding.
    pub fn to_bytes(&self) -> Vec<u8> {
        let siblings: usize = self
            .steps
            .iter()
            .map(|s| s.low_siblings.len() + s.new_siblings.len())
            .sum();
        let mut out = Vec::with_capacity(20 + STEP_FIXED_BYTES * self.steps.len() + 32 * siblings);
        encode_header(
            &mut out,
            KIND_INSERTION,
            self.arity,
            self.hash,
            self.old_size,
            self.steps.len() as u64,
        );
        for step in &self.steps {
            out.extend_from_slice(&step.value);
            out.extend_from_slice(&step.low_index.to_be_bytes());
            encode_leaf(&mut out, &step.low);
            out.extend_from_slice(step.low_siblings.as_flattened());
            out.extend_from_slice(step.new_siblings.as_flattened());
        }
        out
    }

    /// Decodes a binary insertion witness; never panics, and allocates
    /// only for what the bytes hold.
    pub fn from_bytes(bytes: &[u8]) -> Result<InsertionWitness, DecodeError> {
        let (arity, hash, old_size, count, mut cursor) =
            header(bytes, KIND_INSERTION, "insertion")?;
        let room = (bytes.len() - 20) / STEP_FIXED_BYTES;
        if count > room as u64 {
            return Err(DecodeError::WrongLength {
                got: bytes.len(),
                want: 20usize.saturating_add(to_usize(count).saturating_mul(STEP_FIXED_BYTES)),
            });
        }
        if old_size
            .checked_add(count)
            .is_none_or(|end| end == u64::MAX)
        {
            return Err(DecodeError::IndexOutOfRange {
                index: old_size,
                size: u64::MAX,
            });
        }
        let mut steps = Vec::with_capacity(to_usize(count));
        for j in 0..count {
            let size = old_size + j;
            let value = cursor.hash()?;
            let low_index = cursor.u64()?;
            check_index(low_index, size)?;
            let low = cursor.leaf()?;
            let low_siblings =
                cursor.hashes(shape::membership_sibling_count(low_index, size, arity))?;
            let new_siblings =
                cursor.hashes(shape::membership_sibling_count(size, size + 1, arity))?;
            steps.push(InsertionStep {
                value,
                low_index,
                low,
                low_siblings,
                new_siblings,
            });
        }
        cursor.finish()?;
        Ok(InsertionWitness {
            arity,
            hash,
            old_size,
            steps,
        })
    }
}
