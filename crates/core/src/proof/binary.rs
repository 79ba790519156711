//! The versioned binary encoding of both proof kinds.
//!
//! ```text
//! membership  : version u8 | kind u8 = 1 | arity u8 | hash id u8 | index u64 BE | size u64 BE | leaf [32] | siblings [32] * count
//! consistency : version u8 | kind u8 = 2 | arity u8 | hash id u8 | old_size u64 BE | new_size u64 BE | edge leaf [32] if old_size > 0 | hashes [32] * count
//! ```
//! Counts are not encoded: they derive from the header, and the total length
//! must be exactly what the header implies. Every field is fixed-width and
//! every accepted byte string re-encodes to itself.

#![deny(clippy::indexing_slicing, clippy::unwrap_used)]

use super::{ConsistencyProof, DecodeError, MembershipProof};
use crate::Arity;
use crate::hash::{Hash, HashKind};
use crate::shape;

/// The binary and JSON format version this build reads and writes.
pub const FORMAT_VERSION: u8 = 1;
/// Kind byte of a membership proof.
pub const KIND_MEMBERSHIP: u8 = 1;
/// Kind byte of a consistency proof.
pub const KIND_CONSISTENCY: u8 = 2;

const HEADER_BYTES: usize = 20;

fn kind_name(kind: u8) -> String {
    match kind {
        KIND_MEMBERSHIP => "membership".to_owned(),
        KIND_CONSISTENCY => "consistency".to_owned(),
        crate::indexed::KIND_ABSENCE => "absence".to_owned(),
        crate::indexed::KIND_INDEXED_MEMBERSHIP => "indexed_membership".to_owned(),
        crate::indexed::KIND_INSERTION => "insertion".to_owned(),
        other => format!("unknown ({other})"),
    }
}

struct Header {
    arity: Arity,
    hash: HashKind,
    first: u64,
    second: u64,
}

fn encode_header(
    out: &mut Vec<u8>,
    kind: u8,
    arity: Arity,
    hash: HashKind,
    first: u64,
    second: u64,
) {
    out.extend_from_slice(&[FORMAT_VERSION, kind, arity.get() as u8, hash.id()]);
    out.extend_from_slice(&first.to_be_bytes());
    out.extend_from_slice(&second.to_be_bytes());
}

fn decode_header(
    bytes: &[u8],
    want_kind: u8,
    want_name: &'static str,
) -> Result<Header, DecodeError> {
    let header: &[u8; HEADER_BYTES] = bytes.first_chunk().ok_or(DecodeError::ShortHeader {
        got: bytes.len(),
        want: HEADER_BYTES,
    })?;
    let [version, kind, arity, hash, rest @ ..] = header;
    if *version != FORMAT_VERSION {
        return Err(DecodeError::UnsupportedVersion {
            got: u64::from(*version),
            want: FORMAT_VERSION,
        });
    }
    if *kind != want_kind {
        return Err(DecodeError::WrongKind {
            got: kind_name(*kind),
            want: want_name,
        });
    }
    let arity = Arity::new(u64::from(*arity)).map_err(|_| DecodeError::BadArity {
        got: u64::from(*arity),
    })?;
    let hash = HashKind::from_id(*hash).ok_or_else(|| DecodeError::UnknownHash {
        got: hash.to_string(),
    })?;
    let (first, second) = rest.split_at(8);
    let to_u64 = |b: &[u8]| u64::from_be_bytes(b.try_into().unwrap_or_default());
    Ok(Header {
        arity,
        hash,
        first: to_u64(first),
        second: to_u64(second),
    })
}

/// Splits `body` into 32-byte values, requiring exactly `count` of them after
/// `prefix` leading values. Lengths are checked before anything is allocated.
fn read_hashes(
    bytes: &[u8],
    prefix: usize,
    count: usize,
) -> Result<(Vec<Hash>, Vec<Hash>), DecodeError> {
    let want = HEADER_BYTES + 32 * (prefix + count);
    if bytes.len() != want {
        return Err(DecodeError::WrongLength {
            got: bytes.len(),
            want,
        });
    }
    let body = bytes.get(HEADER_BYTES..).unwrap_or_default();
    let (values, remainder) = body.as_chunks::<32>();
    debug_assert!(remainder.is_empty());
    let (head, tail) = values.split_at(prefix.min(values.len()));
    Ok((head.to_vec(), tail.to_vec()))
}

impl MembershipProof {
    /// The binary encoding.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_BYTES + 32 * (1 + self.siblings.len()));
        encode_header(
            &mut out,
            KIND_MEMBERSHIP,
            self.arity,
            self.hash,
            self.index,
            self.size,
        );
        out.extend_from_slice(&self.leaf);
        out.extend_from_slice(self.siblings.as_flattened());
        out
    }

    /// Decodes a binary membership proof. Never panics; checks the exact
    /// length the header implies before allocating.
    pub fn from_bytes(bytes: &[u8]) -> Result<MembershipProof, DecodeError> {
        let header = decode_header(bytes, KIND_MEMBERSHIP, "membership")?;
        let (index, size) = (header.first, header.second);
        if index >= size {
            return Err(DecodeError::IndexOutOfRange { index, size });
        }
        let count = shape::membership_sibling_count(index, size, header.arity);
        let (leaf, siblings) = read_hashes(bytes, 1, count)?;
        Ok(MembershipProof {
            arity: header.arity,
            hash: header.hash,
            index,
            size,
            leaf: leaf.first().copied().unwrap_or_default(),
            siblings,
        })
    }
}

impl ConsistencyProof {
    /// The binary encoding.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_BYTES + 32 * (1 + self.hashes.len()));
        encode_header(
            &mut out,
            KIND_CONSISTENCY,
            self.arity,
            self.hash,
            self.old_size,
            self.new_size,
        );
        if let Some(leaf) = &self.edge_leaf {
            out.extend_from_slice(leaf);
        }
        out.extend_from_slice(self.hashes.as_flattened());
        out
    }

    /// Decodes a binary consistency proof. Never panics; checks the exact
    /// length the header implies before allocating.
    pub fn from_bytes(bytes: &[u8]) -> Result<ConsistencyProof, DecodeError> {
        let header = decode_header(bytes, KIND_CONSISTENCY, "consistency")?;
        let (old_size, new_size) = (header.first, header.second);
        if old_size > new_size {
            return Err(DecodeError::OldSizeAboveNew { old_size, new_size });
        }
        let count = shape::consistency_hash_count(old_size, new_size, header.arity);
        let prefix = usize::from(old_size > 0);
        let (edge, hashes) = read_hashes(bytes, prefix, count)?;
        Ok(ConsistencyProof {
            arity: header.arity,
            hash: header.hash,
            old_size,
            new_size,
            edge_leaf: edge.first().copied(),
            hashes,
        })
    }
}
