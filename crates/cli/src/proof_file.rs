//! Reading a proof file: JSON (its first non-whitespace byte is `{`) or the
//! binary encoding (whose first byte is the format version, never `{`).

use anyhow::Context as _;
use cairn_core::{ConsistencyProof, DecodeError, MembershipProof};

use crate::args::Source;
use crate::failure::{Code, Failure, OrExit as _};

/// Whether `bytes` hold a JSON proof rather than a binary one.
pub fn is_json(bytes: &[u8]) -> bool {
    bytes.trim_ascii_start().first() == Some(&b'{')
}

fn decode<T>(
    source: &Source,
    from_json: fn(&str) -> Result<T, DecodeError>,
    from_bytes: fn(&[u8]) -> Result<T, DecodeError>,
) -> Result<T, Failure> {
    let bytes = source.read()?;
    let decoded = if is_json(&bytes) {
        std::str::from_utf8(&bytes)
            .map_err(|e| DecodeError::Json(format!("not UTF-8: {e}")))
            .and_then(from_json)
    } else {
        from_bytes(&bytes)
    };
    decoded
        .with_context(|| format!("{}: invalid proof", source.name()))
        .or_exit(Code::Invalid)
}

/// Reads and decodes a membership proof. Unreadable is exit 4, malformed exit 1.
pub fn membership(source: &Source) -> Result<MembershipProof, Failure> {
    decode(
        source,
        MembershipProof::from_json,
        MembershipProof::from_bytes,
    )
}

/// Reads and decodes a consistency proof. Unreadable is exit 4, malformed exit 1.
pub fn consistency(source: &Source) -> Result<ConsistencyProof, Failure> {
    decode(
        source,
        ConsistencyProof::from_json,
        ConsistencyProof::from_bytes,
    )
}
