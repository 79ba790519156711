//! The versioned binary encoding of both proof kinds.
//!
//! ```text
//! membership  : version u8 | kind u8 = 1 | arity u8 | hash id u8 | [tree] | index u64 BE | size u64 BE | leaf [32] | siblings [32] * count
//! consistency : version u8 | kind u8 = 2 | arity u8 | hash id u8 | [tree] | old_size u64 BE | new_size u64 BE | edge leaf [32] if old_size > 0 | hashes [32] * count
//! tree        : absent in version 1 (a Lean tree); in version 2: tree kind u8 | depth u8 | zero [32],
//!               kind 1 (imt) with its depth and zero, or kind 2 (indexed) with depth 0 and a zero of 32 zero bytes
//! ```
//! Counts are not encoded: they derive from the header, and the total length
//! must be exactly what the header implies. Every field is fixed-width, a
//! Lean tree's proof is always version 1, and every accepted byte string
//! re-encodes to itself.

#![deny(clippy::indexing_slicing, clippy::unwrap_used)]

use super::{ConsistencyProof, DecodeError, MembershipProof, check_decoded_kind};
use crate::Arity;
use crate::hash::{Hash, HashKind};
use crate::kind::{KindFields, TreeKind};
use crate::shape::Shape;

/// The binary and JSON format version of proofs of a Lean tree.
pub const FORMAT_VERSION: u8 = 1;
/// The binary and JSON format version of proofs whose header names the
/// tree's kind: proofs of a fixed-depth tree.
pub const FORMAT_VERSION_KINDS: u8 = 2;
/// Kind byte of a membership proof.
pub const KIND_MEMBERSHIP: u8 = 1;
/// Kind byte of a consistency proof.
pub const KIND_CONSISTENCY: u8 = 2;
/// Kind byte of an indexed tree's absence (non-membership) proof.
pub const KIND_ABSENCE: u8 = 3;
/// Kind byte of an indexed tree's membership proof.
pub const KIND_INDEXED_MEMBERSHIP: u8 = 4;
/// Kind byte of an indexed tree's insertion witness.
pub const KIND_INSERTION: u8 = 5;

const HEADER_BYTES: usize = 20;
/// The tree part of a version 2 header: kind, depth, zero.
const TREE_BYTES: usize = 34;

/// The proof kinds by their byte, as the encodings name them: the one list
/// (the indexed encodings share it).
pub(crate) const PROOF_KINDS: [(u8, &str); 5] = [
    (KIND_MEMBERSHIP, "membership"),
    (KIND_CONSISTENCY, "consistency"),
    (KIND_ABSENCE, "absence"),
    (KIND_INDEXED_MEMBERSHIP, "indexed_membership"),
    (KIND_INSERTION, "insertion"),
];

/// The name of proof kind byte `kind`, for errors.
pub(crate) fn kind_name(kind: u8) -> String {
    PROOF_KINDS
        .iter()
        .find(|(byte, _)| *byte == kind)
        .map_or_else(
            || format!("unknown ({kind})"),
            |(_, name)| (*name).to_owned(),
        )
}

struct Header {
    arity: Arity,
    hash: HashKind,
    tree: TreeKind,
    first: u64,
    second: u64,
    /// Bytes of the header: where the values start.
    len: usize,
}

/// The header's length for a tree of `tree`.
fn header_len(tree: &TreeKind) -> usize {
    match tree.fields() {
        None => HEADER_BYTES,
        Some(_) => HEADER_BYTES + TREE_BYTES,
    }
}

fn encode_header(
    out: &mut Vec<u8>,
    kind: u8,
    (arity, hash, tree): (Arity, HashKind, TreeKind),
    first: u64,
    second: u64,
) {
    match tree.fields() {
        None => out.extend_from_slice(&[FORMAT_VERSION, kind, arity.byte(), hash.id()]),
        Some(fields) => {
            out.extend_from_slice(&[FORMAT_VERSION_KINDS, kind, arity.byte(), hash.id()]);
            out.extend_from_slice(&[fields.id, fields.depth]);
            out.extend_from_slice(&fields.zero);
        }
    }
    out.extend_from_slice(&first.to_be_bytes());
    out.extend_from_slice(&second.to_be_bytes());
}

fn decode_header(
    bytes: &[u8],
    want_kind: u8,
    want_name: &'static str,
) -> Result<Header, DecodeError> {
    let short = |want| DecodeError::ShortHeader {
        got: bytes.len(),
        want,
    };
    let common: &[u8; 4] = bytes.first_chunk().ok_or(short(HEADER_BYTES))?;
    let [version, kind, arity, hash] = common;
    let (tree, rest) = match *version {
        FORMAT_VERSION => (TreeKind::Lean, bytes.get(4..)),
        FORMAT_VERSION_KINDS => {
            let tree: &[u8; 4 + TREE_BYTES] = bytes
                .first_chunk()
                .ok_or(short(HEADER_BYTES + TREE_BYTES))?;
            let [_, _, _, _, id, depth, zero @ ..] = tree;
            let fields = KindFields {
                id: *id,
                depth: *depth,
                zero: *zero,
            };
            // One encoding only: what would not re-encode is refused.
            let tree =
                TreeKind::from_fields(&fields).map_err(|e| DecodeError::TreeKind(e.to_string()))?;
            (tree, bytes.get(4 + TREE_BYTES..))
        }
        other => {
            return Err(DecodeError::UnsupportedVersion {
                got: u64::from(other),
                want: FORMAT_VERSION_KINDS,
            });
        }
    };
    let rest = rest.unwrap_or_default();
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
    let sizes: &[u8; 16] = rest.first_chunk().ok_or(short(header_len(&tree)))?;
    let (first, second) = sizes.split_at(8);
    let to_u64 = |b: &[u8]| u64::from_be_bytes(b.try_into().unwrap_or_default());
    Ok(Header {
        arity,
        hash,
        tree,
        first: to_u64(first),
        second: to_u64(second),
        len: header_len(&tree),
    })
}

/// Splits the values after the header into 32-byte values, requiring
/// exactly `count` of them after `prefix` leading values. Lengths are
/// checked before anything is allocated.
fn read_hashes(
    bytes: &[u8],
    header: &Header,
    prefix: usize,
    count: usize,
) -> Result<(Vec<Hash>, Vec<Hash>), DecodeError> {
    let want = header.len + 32 * (prefix + count);
    if bytes.len() != want {
        return Err(DecodeError::WrongLength {
            got: bytes.len(),
            want,
        });
    }
    let body = bytes.get(header.len..).unwrap_or_default();
    let (values, remainder) = body.as_chunks::<32>();
    debug_assert!(remainder.is_empty());
    let (head, tail) = values.split_at(prefix.min(values.len()));
    Ok((head.to_vec(), tail.to_vec()))
}

impl MembershipProof {
    /// The binary encoding.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(header_len(&self.kind) + 32 * (1 + self.siblings.len()));
        encode_header(
            &mut out,
            KIND_MEMBERSHIP,
            (self.arity, self.hash, self.kind),
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
        check_decoded_kind(header.arity, header.hash, header.tree, size)?;
        let count = Shape::new(header.arity, header.tree).membership_sibling_count(index, size);
        let (leaf, siblings) = read_hashes(bytes, &header, 1, count)?;
        Ok(MembershipProof {
            arity: header.arity,
            hash: header.hash,
            kind: header.tree,
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
        let mut out = Vec::with_capacity(header_len(&self.kind) + 32 * (1 + self.hashes.len()));
        encode_header(
            &mut out,
            KIND_CONSISTENCY,
            (self.arity, self.hash, self.kind),
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
        check_decoded_kind(header.arity, header.hash, header.tree, new_size)?;
        let count =
            Shape::new(header.arity, header.tree).consistency_hash_count(old_size, new_size);
        let prefix = usize::from(old_size > 0);
        let (edge, hashes) = read_hashes(bytes, &header, prefix, count)?;
        Ok(ConsistencyProof {
            arity: header.arity,
            hash: header.hash,
            kind: header.tree,
            old_size,
            new_size,
            edge_leaf: edge.first().copied(),
            hashes,
        })
    }
}
