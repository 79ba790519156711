//! The checkpoint body (C2SP `tlog-checkpoint`): the origin line, the tree
//! size in decimal, the root in base64, then optional extension lines,
//! each ending in a newline.
//!
//! Invariant: `parse(text)` succeeds exactly on the texts `to_text` can
//! produce, so a checkpoint has one spelling and a signature covers one
//! head: no leading zeros, canonical base64, no empty line.

use crate::error::NoteError;
use crate::key::{Signer, Verifier, decode_base64_canonical, encode_base64};
use crate::note;

/// A log's head as a checkpoint: who issued it, the size and the root,
/// and any extension lines (opaque to generic verifiers, but signed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// The log's identity (cairn: the signer key's name).
    pub origin: String,
    /// The number of leaves.
    pub size: u64,
    /// The root at `size`.
    pub root: [u8; 32],
    /// Extension lines, in order, without their newlines.
    pub extensions: Vec<String>,
}

fn malformed(reason: String) -> NoteError {
    NoteError::Checkpoint(reason)
}

/// A line of a checkpoint may not be empty nor hold a newline (the note
/// checks the other characters).
fn check_line(line: &str, what: &str) -> Result<(), NoteError> {
    if line.is_empty() {
        return Err(malformed(format!("the {what} is empty")));
    }
    if line.contains('\n') {
        return Err(malformed(format!("the {what} {line:?} holds a newline")));
    }
    Ok(())
}

/// Parses a size line: `0`, or a decimal number without leading zeros.
fn parse_size(line: &str) -> Result<u64, NoteError> {
    let digits = !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit());
    if !digits {
        return Err(malformed(format!(
            "size line {line:?} is not a decimal number"
        )));
    }
    if line.len() > 1 && line.starts_with('0') {
        return Err(malformed(format!(
            "size line {line:?} has a leading zero, want {:?}",
            line.trim_start_matches('0')
        )));
    }
    line.parse::<u64>()
        .map_err(|_| malformed(format!("size {line} does not fit 64 bits")))
}

impl Checkpoint {
    /// The checkpoint text: origin, size, base64 root, extension lines, each
    /// followed by a newline.
    pub fn to_text(&self) -> Result<String, NoteError> {
        check_line(&self.origin, "origin")?;
        let mut text = format!(
            "{}\n{}\n{}\n",
            self.origin,
            self.size,
            encode_base64(&self.root)
        );
        for extension in &self.extensions {
            check_line(extension, "extension line")?;
            text.push_str(extension);
            text.push('\n');
        }
        Ok(text)
    }

    /// Parses a checkpoint text (the text of a note, ending in a newline).
    pub fn parse(text: &str) -> Result<Checkpoint, NoteError> {
        let Some(body) = text.strip_suffix('\n') else {
            return Err(malformed("the text does not end in a newline".into()));
        };
        let lines: Vec<&str> = body.split('\n').collect();
        let [origin, size, root, extensions @ ..] = lines.as_slice() else {
            return Err(malformed(format!(
                "{} lines, want at least 3 (origin, size, root)",
                lines.len()
            )));
        };
        if let Some(index) = lines.iter().position(|line| line.is_empty()) {
            return Err(malformed(format!("line {} is empty", index + 1)));
        }
        let origin = (*origin).to_owned();
        let size = parse_size(size)?;
        let root =
            decode_base64_canonical(root).map_err(|e| malformed(format!("root line: {e}")))?;
        let root = <[u8; 32]>::try_from(root.as_slice())
            .map_err(|_| malformed(format!("the root has {} bytes, want 32", root.len())))?;
        Ok(Checkpoint {
            origin,
            size,
            root,
            extensions: extensions.iter().map(|line| (*line).to_owned()).collect(),
        })
    }

    /// The signed note of this checkpoint. The origin must be the signer's
    /// name (C2SP tlog-checkpoint: the key name should match the origin;
    /// cairn requires it).
    pub fn sign(&self, signer: &Signer) -> Result<String, NoteError> {
        if self.origin != signer.name() {
            return Err(NoteError::Origin {
                got: self.origin.clone(),
                want: signer.name().to_owned(),
            });
        }
        note::sign(&self.to_text()?, &[signer])
    }

    /// Verifies a signed checkpoint with `verifier` and parses its text;
    /// the origin must be the verifier's name.
    pub fn open(signed: &str, verifier: &Verifier) -> Result<Checkpoint, NoteError> {
        let opened = note::open(signed, std::slice::from_ref(verifier))?;
        let checkpoint = Checkpoint::parse(&opened.text)?;
        if checkpoint.origin != verifier.name() {
            return Err(NoteError::Origin {
                got: checkpoint.origin,
                want: verifier.name().to_owned(),
            });
        }
        Ok(checkpoint)
    }
}
