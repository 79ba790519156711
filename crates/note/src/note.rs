//! Signed notes (C2SP `signed-note`): a UTF-8 text ending in a newline, a
//! blank line, then signature lines `— <key name> <base64(key ID || sig)>`.
//!
//! Invariant: [`open`] returns a note only if at least one signature by a
//! trusted key verified and no signature by a trusted key failed; the text
//! it returns is exactly the bytes those signatures cover. Every byte of the
//! input is accounted for: nothing after the last signature line, no
//! control character but `\n`, canonical base64 only.

use crate::error::NoteError;
use crate::key::{Signer, Verifier, check_key_name, decode_base64_canonical, encode_base64};

/// The most signature lines [`open`] reads (Go's `sumdb/note` reads as
/// many; the C2SP specification asks verifiers to accept at least 16).
pub const MAX_SIGNATURES: usize = 100;

/// The largest note [`open`] reads, in bytes.
pub const MAX_NOTE_BYTES: usize = 1 << 20;

/// What starts a signature line: an em dash (U+2014) and a space.
const SIGNATURE_PREFIX: &str = "\u{2014} ";

/// One signature line of a note.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    /// The key name.
    pub name: String,
    /// The key ID (the first four bytes of the signature field).
    pub id: u32,
    /// The signature field as written: base64 of the ID and the signature.
    pub base64: String,
}

impl Signature {
    /// `name+id`, how errors and reports name the key.
    pub fn key(&self) -> String {
        format!("{}+{:08x}", self.name, self.id)
    }
}

/// A note whose signatures were checked by [`open`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    /// The signed text, ending in a newline.
    pub text: String,
    /// The signatures by trusted keys, all verified.
    pub verified: Vec<Signature>,
    /// Signatures by keys the caller does not know (not verified; a
    /// witness's cosignature, a rotated key).
    pub unverified: Vec<Signature>,
}

/// Checks what every note and every text to sign must be: no ASCII control
/// character but newline (a `&str` is already valid UTF-8).
fn check_characters(text: &str, what: &str) -> Result<(), NoteError> {
    if let Some((offset, c)) = text
        .char_indices()
        .find(|&(_, c)| c < '\u{20}' && c != '\n')
    {
        return Err(NoteError::Malformed(format!(
            "{what} has control character 0x{:02x} at byte {offset}; only newline is allowed",
            c as u32
        )));
    }
    Ok(())
}

/// Signs `text` with every signer: the note is the text, a blank line and
/// one signature line per signer, in order.
pub fn sign(text: &str, signers: &[&Signer]) -> Result<String, NoteError> {
    if text.is_empty() || !text.ends_with('\n') {
        return Err(NoteError::Malformed(
            "the text to sign does not end in a newline".into(),
        ));
    }
    check_characters(text, "the text to sign")?;
    if signers.is_empty() {
        return Err(NoteError::Malformed("no signer given".into()));
    }
    let mut note = String::with_capacity(text.len() + 1 + signers.len() * 128);
    note.push_str(text);
    note.push('\n');
    for signer in signers {
        check_key_name(signer.name())?;
        let mut field = Vec::with_capacity(68);
        field.extend_from_slice(&signer.id().to_be_bytes());
        field.extend_from_slice(&signer.sign_bytes(text.as_bytes()));
        note.push_str(SIGNATURE_PREFIX);
        note.push_str(signer.name());
        note.push(' ');
        note.push_str(&encode_base64(&field));
        note.push('\n');
    }
    Ok(note)
}

/// Parses a signature line (without its newline).
fn parse_signature_line(line: &str, number: usize) -> Result<(Signature, Vec<u8>), NoteError> {
    let malformed = |reason: String| NoteError::SignatureLine {
        line: number,
        reason,
    };
    let rest = line.strip_prefix(SIGNATURE_PREFIX).ok_or_else(|| {
        malformed(format!(
            "{line:?} does not start with an em dash (U+2014) and a space"
        ))
    })?;
    let (name, field) = rest.split_once(' ').ok_or_else(|| {
        malformed(format!(
            "{line:?} has no space between key name and signature"
        ))
    })?;
    check_key_name(name).map_err(|e| malformed(e.to_string()))?;
    let bytes = decode_base64_canonical(field).map_err(malformed)?;
    let Some((id, signature)) = bytes
        .split_first_chunk::<4>()
        .filter(|(_, signature)| !signature.is_empty())
    else {
        return Err(malformed(format!(
            "the signature field has {} bytes, want a 4-byte key ID and a signature",
            bytes.len()
        )));
    };
    Ok((
        Signature {
            name: name.to_owned(),
            id: u32::from_be_bytes(*id),
            base64: field.to_owned(),
        },
        signature.to_vec(),
    ))
}

/// Splits a note into its text and its signature lines (without their
/// final newline), checking everything but the signature lines.
fn split(note: &str) -> Result<(&str, &str), NoteError> {
    if note.len() > MAX_NOTE_BYTES {
        return Err(NoteError::TooLarge {
            got: note.len(),
            max: MAX_NOTE_BYTES,
        });
    }
    check_characters(note, "the note")?;
    // The text ends at the last blank line.
    let split = note.rfind("\n\n").ok_or_else(|| {
        NoteError::Malformed("no blank line between the text and the signatures".into())
    })?;
    // `split` is the byte offset of an ASCII newline, a character boundary.
    let (text, signatures) = note
        .split_at_checked(split + 1)
        .and_then(|(text, rest)| Some((text, rest.strip_prefix('\n')?)))
        .ok_or_else(|| {
            NoteError::Malformed("no blank line between the text and the signatures".into())
        })?;
    if signatures.is_empty() {
        return Err(NoteError::Malformed(
            "no signature lines after the blank line".into(),
        ));
    }
    let Some(lines) = signatures.strip_suffix('\n') else {
        return Err(NoteError::Malformed(
            "the last signature line does not end in a newline".into(),
        ));
    };
    Ok((text, lines))
}

/// Reads a signed note and checks its signatures against `known`.
///
/// Signatures by keys not in `known` (name and ID both matching) are kept
/// unverified; a signature by a known key must verify, else the whole note
/// is refused (C2SP signed-note: verifiers must verify a known key's
/// signature, should reject the note if it fails, and must reject a note no
/// known key verified).
pub fn open(note: &str, known: &[Verifier]) -> Result<Note, NoteError> {
    let (text, lines) = split(note)?;
    let mut result = Note {
        text: text.to_owned(),
        verified: Vec::new(),
        unverified: Vec::new(),
    };
    for (index, line) in lines.split('\n').enumerate() {
        let number = index + 1;
        if number > MAX_SIGNATURES {
            return Err(NoteError::TooManySignatures {
                max: MAX_SIGNATURES,
            });
        }
        let (signature, bytes) = parse_signature_line(line, number)?;
        let verifier = known
            .iter()
            .find(|v| v.name() == signature.name && v.id() == signature.id);
        match verifier {
            None => {
                if !result.unverified.contains(&signature) {
                    result.unverified.push(signature);
                }
            }
            Some(verifier) => {
                if !verifier.verifies(text.as_bytes(), &bytes) {
                    return Err(NoteError::BadSignature {
                        key: signature.key(),
                    });
                }
                if !result.verified.contains(&signature) {
                    result.verified.push(signature);
                }
            }
        }
    }
    if result.verified.is_empty() {
        return Err(NoteError::NoKnownSignature {
            found: result.unverified.iter().map(Signature::key).collect(),
            known: known
                .iter()
                .map(|v| format!("{}+{:08x}", v.name(), v.id()))
                .collect(),
        });
    }
    Ok(result)
}

/// Reads a signed note without verifying any signature: every signature
/// line is parsed and returned in `unverified`. For a reader that trusts
/// the place it got the note from (and so no key), or one that wants to
/// know who signed before choosing a key; never a substitute for [`open`].
pub fn read_unverified(note: &str) -> Result<Note, NoteError> {
    let (text, lines) = split(note)?;
    let mut result = Note {
        text: text.to_owned(),
        verified: Vec::new(),
        unverified: Vec::new(),
    };
    for (index, line) in lines.split('\n').enumerate() {
        let number = index + 1;
        if number > MAX_SIGNATURES {
            return Err(NoteError::TooManySignatures {
                max: MAX_SIGNATURES,
            });
        }
        let (signature, _) = parse_signature_line(line, number)?;
        if !result.unverified.contains(&signature) {
            result.unverified.push(signature);
        }
    }
    Ok(result)
}
