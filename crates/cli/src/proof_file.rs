//! Reading a proof file: JSON (its first non-whitespace byte is `{`) or the
//! binary encoding (whose first byte is the format version, never `{`).

use anyhow::Context as _;
use cairn_core::{ConsistencyProof, MembershipProof};

use crate::args::Source;
use crate::failure::{Code, Failure, OrExit as _};

/// The command that checks a proof of `kind` (as the encodings name it).
fn command_for(kind: &str) -> &'static str {
    match kind {
        "consistency" => "cairn verify-consistency",
        _ => "cairn verify",
    }
}

/// Refuses (exit 1) a well-labelled proof of another kind than `want`,
/// naming the command that checks it, before the decoder of `want` would
/// stumble on a field it does not know.
fn of_kind(source: &Source, bytes: &[u8], want: &str) -> Result<(), Failure> {
    match cairn_core::indexed::proof_kind(bytes) {
        Some(kind) if kind != want && command_for(kind) != command_for(want) => Err(Failure::new(
            Code::Invalid,
            anyhow::anyhow!(
                "{}: invalid proof: its kind is {kind}, not {want}: check it with `{}`",
                source.name(),
                command_for(kind)
            ),
        )),
        _ => Ok(()),
    }
}

/// Reads and decodes a membership proof. Unreadable is exit 4, malformed exit 1.
pub fn membership(source: &Source) -> Result<MembershipProof, Failure> {
    let bytes = source.read()?;
    decode_membership(source, &bytes)
}

/// Decodes a membership proof already read from `source`. Malformed, or a
/// proof of another kind, is exit 1.
pub fn decode_membership(source: &Source, bytes: &[u8]) -> Result<MembershipProof, Failure> {
    of_kind(source, bytes, "membership")?;
    MembershipProof::decode(bytes)
        .with_context(|| format!("{}: invalid proof", source.name()))
        .or_exit(Code::Invalid)
}

/// Reads and decodes a consistency proof. Unreadable is exit 4, malformed,
/// or a proof of another kind, exit 1.
pub fn consistency(source: &Source) -> Result<ConsistencyProof, Failure> {
    let bytes = source.read()?;
    of_kind(source, &bytes, "consistency")?;
    ConsistencyProof::decode(&bytes)
        .with_context(|| format!("{}: invalid proof", source.name()))
        .or_exit(Code::Invalid)
}
