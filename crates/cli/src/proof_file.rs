//! Reading a proof file: JSON (its first non-whitespace byte is `{`) or the
//! binary encoding (whose first byte is the format version, never `{`).

use anyhow::Context as _;
use cairn_core::{ConsistencyProof, DecodeError, MembershipProof};

use crate::args::Source;
use crate::failure::{Code, Failure, OrExit as _};

fn decode<T>(source: &Source, decode: fn(&[u8]) -> Result<T, DecodeError>) -> Result<T, Failure> {
    let bytes = source.read()?;
    decode(&bytes)
        .with_context(|| format!("{}: invalid proof", source.name()))
        .or_exit(Code::Invalid)
}

/// Reads and decodes a membership proof. Unreadable is exit 4, malformed exit 1.
pub fn membership(source: &Source) -> Result<MembershipProof, Failure> {
    decode(source, MembershipProof::decode)
}

/// Decodes a membership proof already read from `source`. Malformed is exit 1.
pub fn decode_membership(source: &Source, bytes: &[u8]) -> Result<MembershipProof, Failure> {
    MembershipProof::decode(bytes)
        .with_context(|| format!("{}: invalid proof", source.name()))
        .or_exit(Code::Invalid)
}

/// Reads and decodes a consistency proof. Unreadable is exit 4, malformed exit 1.
pub fn consistency(source: &Source) -> Result<ConsistencyProof, Failure> {
    decode(source, ConsistencyProof::decode)
}
