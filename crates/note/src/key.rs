//! Ed25519 keys of signed notes and their text forms.
//!
//! A verifier key is `name+hash+base64(0x01 || public key)` and a signer
//! key `PRIVATE+KEY+name+hash+base64(0x01 || seed)`, where `hash` is the key
//! ID as 8 lowercase hex digits: the forms Go's `golang.org/x/mod/sumdb/note`
//! reads and writes (`NewVerifier`, `NewSigner`, `GenerateKey`), so keys move
//! between cairn and tools built on that package. The key ID is the one the
//! C2SP signed-note specification recommends for Ed25519:
//! `SHA-256(name || 0x0A || 0x01 || public key)[:4]`, big-endian.
//!
//! Invariant: a parsed key's ID is recomputed from its name and key bytes and
//! must equal the one written in the text; a key never carries an ID that
//! does not belong to it.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use ed25519_dalek::{Signer as _, SigningKey, VerifyingKey};
use sha2::{Digest as _, Sha256};
use zeroize::Zeroizing;

use crate::error::KeyError;

/// The signature type byte of Ed25519 in signed notes (C2SP signed-note,
/// "Signature types").
pub const ALGORITHM_ED25519: u8 = 0x01;

/// The prefix of a signer key's text form (Go's `sumdb/note`).
const SIGNER_PREFIX: &str = "PRIVATE+KEY+";

/// Whether `name` can name a key: non-empty, without Unicode white space or
/// `+` (C2SP signed-note, "Format"; a `&str` is always valid UTF-8).
pub fn is_valid_key_name(name: &str) -> bool {
    !name.is_empty() && !name.contains(|c: char| c.is_whitespace() || c == '+')
}

/// Why `name` cannot name a key, or `Ok`.
pub(crate) fn check_key_name(name: &str) -> Result<(), KeyError> {
    if name.is_empty() {
        return Err(KeyError::Name {
            got: name.to_owned(),
            reason: "it is empty".into(),
        });
    }
    if let Some(c) = name.chars().find(|c| c.is_whitespace() || *c == '+') {
        return Err(KeyError::Name {
            got: name.to_owned(),
            reason: format!(
                "it contains {c:?} (U+{:04X}); spaces and '+' are not allowed",
                c as u32
            ),
        });
    }
    Ok(())
}

/// The key ID of an Ed25519 public key under `name`:
/// `SHA-256(name || 0x0A || 0x01 || public key)[:4]`, big-endian.
pub fn key_id(name: &str, public_key: &[u8; 32]) -> u32 {
    let mut hasher = Sha256::new();
    hasher.update(name.as_bytes());
    hasher.update([b'\n', ALGORITHM_ED25519]);
    hasher.update(public_key);
    let digest: [u8; 32] = hasher.finalize().into();
    let [a, b, c, d, ..] = digest;
    u32::from_be_bytes([a, b, c, d])
}

/// Decodes standard base64 (RFC 4648 section 4, padded) and refuses any
/// other spelling of the same bytes: the text must be what encoding the
/// bytes gives back.
pub(crate) fn decode_base64_canonical(text: &str) -> Result<Vec<u8>, String> {
    let bytes = BASE64.decode(text).map_err(|e| match e {
        base64::DecodeError::InvalidLastSymbol(offset, _) => format!(
            "{text:?} is not canonical base64: the character at offset {offset} has bits set past the last byte"
        ),
        e => format!("{text:?} is not standard base64 ({e})"),
    })?;
    let again = BASE64.encode(&bytes);
    if again != text {
        return Err(format!(
            "{text:?} is not canonical base64: the same bytes encode as {again:?}"
        ));
    }
    Ok(bytes)
}

pub(crate) fn encode_base64(bytes: &[u8]) -> String {
    BASE64.encode(bytes)
}

/// Splits `name+hash+keydata` (the text after the signer prefix, or a whole
/// verifier key) into its three fields. The name has no `+`; the key data
/// is base64 and may.
fn split_key_text<'a>(text: &'a str, what: &str) -> Result<(&'a str, &'a str, &'a str), KeyError> {
    let malformed = |reason: String| KeyError::Format {
        what: what.to_owned(),
        reason,
    };
    let (name, rest) = text
        .split_once('+')
        .ok_or_else(|| malformed("it has no '+': want name+hash+keydata".into()))?;
    let (hash, data) = rest
        .split_once('+')
        .ok_or_else(|| malformed("it has one '+': want name+hash+keydata".into()))?;
    Ok((name, hash, data))
}

/// Parses the key ID field: exactly 8 lowercase hex digits.
fn parse_key_id(text: &str, what: &str) -> Result<u32, KeyError> {
    let valid = text.len() == 8 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if !valid {
        return Err(KeyError::Format {
            what: what.to_owned(),
            reason: format!("key ID {text:?} is not 8 lowercase hex digits"),
        });
    }
    u32::from_str_radix(text, 16).map_err(|e| KeyError::Format {
        what: what.to_owned(),
        reason: format!("key ID {text:?}: {e}"),
    })
}

/// Decodes the key data field: base64 of the algorithm byte and 32 key bytes.
/// A `secret` field (a signer's seed) is never quoted in an error.
fn parse_key_data(text: &str, what: &str, secret: bool) -> Result<[u8; 32], KeyError> {
    let malformed = |reason: String| KeyError::Format {
        what: what.to_owned(),
        reason,
    };
    let data = Zeroizing::new(decode_base64_canonical(text).map_err(|reason| {
        malformed(if secret {
            "the key data is not canonical standard base64".into()
        } else {
            reason
        })
    })?);
    let Some((&algorithm, key)) = data.split_first() else {
        return Err(malformed("the key data is empty".into()));
    };
    if algorithm != ALGORITHM_ED25519 {
        return Err(KeyError::Algorithm { got: algorithm });
    }
    <[u8; 32]>::try_from(key)
        .map_err(|_| malformed(format!("the Ed25519 key has {} bytes, want 32", key.len())))
}

fn check_id(name: &str, got: u32, public_key: &[u8; 32]) -> Result<(), KeyError> {
    let want = key_id(name, public_key);
    if got != want {
        return Err(KeyError::IdMismatch { got, want });
    }
    Ok(())
}

/// A public key that verifies signatures of one named signer.
#[derive(Clone, PartialEq, Eq)]
pub struct Verifier {
    name: String,
    id: u32,
    key: VerifyingKey,
}

impl Verifier {
    /// Parses a verifier key `name+hash+base64(0x01 || public key)`.
    pub fn parse(text: &str) -> Result<Verifier, KeyError> {
        const WHAT: &str = "verifier key";
        if text.starts_with(SIGNER_PREFIX) {
            return Err(KeyError::Format {
                what: WHAT.into(),
                reason: "this is a signer (private) key: give the verifier key it prints".into(),
            });
        }
        let (name, id, data) = split_key_text(text, WHAT)?;
        check_key_name(name)?;
        let id = parse_key_id(id, WHAT)?;
        let public = parse_key_data(data, WHAT, false)?;
        check_id(name, id, &public)?;
        let key = VerifyingKey::from_bytes(&public).map_err(|_| KeyError::Format {
            what: WHAT.into(),
            reason: "the public key is not a point of Ed25519".into(),
        })?;
        Ok(Verifier {
            name: name.to_owned(),
            id,
            key,
        })
    }

    /// The signer's name (a log's origin).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key ID.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The 32-byte Ed25519 public key.
    pub fn public_key(&self) -> [u8; 32] {
        self.key.to_bytes()
    }

    /// Whether `signature` is this key's signature of `message` (RFC 8032,
    /// with `verify_strict`'s refusal of small-order points).
    pub(crate) fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        let Ok(signature) = ed25519_dalek::Signature::from_slice(signature) else {
            return false;
        };
        self.key.verify_strict(message, &signature).is_ok()
    }
}

impl fmt::Display for Verifier {
    /// The verifier key text, `name+hash+base64(0x01 || public key)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut data = Vec::with_capacity(33);
        data.push(ALGORITHM_ED25519);
        data.extend_from_slice(self.key.as_bytes());
        write!(f, "{}+{:08x}+{}", self.name, self.id, encode_base64(&data))
    }
}

impl fmt::Debug for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Verifier({self})")
    }
}

/// A private key that signs notes under a name. Its `Debug` never shows the
/// key, and the key is wiped when it is dropped.
#[derive(Clone)]
pub struct Signer {
    name: String,
    id: u32,
    key: SigningKey,
}

impl Signer {
    /// A new key named `name`, from the operating system's random source
    /// (the `os-random` feature).
    #[cfg(feature = "os-random")]
    pub fn generate(name: &str) -> Result<Signer, KeyError> {
        use rand::RngCore as _;
        let mut seed = Zeroizing::new([0u8; 32]);
        rand::rngs::OsRng
            .try_fill_bytes(seed.as_mut())
            .map_err(|e| KeyError::Random(e.to_string()))?;
        Signer::from_seed(name, &seed)
    }

    /// The key named `name` whose RFC 8032 private key (seed) is `seed`.
    pub fn from_seed(name: &str, seed: &[u8; 32]) -> Result<Signer, KeyError> {
        check_key_name(name)?;
        let key = SigningKey::from_bytes(seed);
        let id = key_id(name, key.verifying_key().as_bytes());
        Ok(Signer {
            name: name.to_owned(),
            id,
            key,
        })
    }

    /// Parses a signer key `PRIVATE+KEY+name+hash+base64(0x01 || seed)`.
    pub fn parse(text: &str) -> Result<Signer, KeyError> {
        const WHAT: &str = "signer key";
        let Some(rest) = text.strip_prefix(SIGNER_PREFIX) else {
            return Err(KeyError::Format {
                what: WHAT.into(),
                reason: format!("it does not start with {SIGNER_PREFIX:?}"),
            });
        };
        let (name, id, data) = split_key_text(rest, WHAT)?;
        check_key_name(name)?;
        let id = parse_key_id(id, WHAT)?;
        let seed = Zeroizing::new(parse_key_data(data, WHAT, true)?);
        let signer = Signer::from_seed(name, &seed)?;
        check_id(name, id, signer.key.verifying_key().as_bytes())?;
        Ok(signer)
    }

    /// The signer's name (a log's origin).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key ID.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The public half, as a verifier.
    pub fn verifier(&self) -> Verifier {
        Verifier {
            name: self.name.clone(),
            id: self.id,
            key: self.key.verifying_key(),
        }
    }

    /// The signer key text, `PRIVATE+KEY+name+hash+base64(0x01 || seed)`;
    /// wiped when dropped. It is the secret: keep it out of logs.
    pub fn to_key_text(&self) -> Zeroizing<String> {
        let mut data = Zeroizing::new(Vec::with_capacity(33));
        data.push(ALGORITHM_ED25519);
        data.extend_from_slice(self.key.as_bytes());
        Zeroizing::new(format!(
            "{SIGNER_PREFIX}{}+{:08x}+{}",
            self.name,
            self.id,
            encode_base64(data.as_ref())
        ))
    }

    /// The Ed25519 signature of `message`.
    pub(crate) fn sign_bytes(&self, message: &[u8]) -> [u8; 64] {
        self.key.sign(message).to_bytes()
    }
}

impl fmt::Debug for Signer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Signer({}+{:08x}, <private key>)", self.name, self.id)
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn key_id_is_the_first_four_bytes_of_the_recommended_sha256() {
        let public = [7u8; 32];
        let mut input = b"example.org/log\n\x01".to_vec();
        input.extend_from_slice(&public);
        let digest = Sha256::digest(&input);
        assert_eq!(
            key_id("example.org/log", &public).to_be_bytes(),
            [digest[0], digest[1], digest[2], digest[3]]
        );
    }

    #[test]
    fn names_with_spaces_or_plus_are_refused() {
        assert!(is_valid_key_name("example.org/log"));
        assert!(!is_valid_key_name(""));
        assert!(!is_valid_key_name("a b"));
        assert!(!is_valid_key_name("a+b"));
        assert!(!is_valid_key_name("a\u{a0}b"));
        assert!(Signer::from_seed("a b", &[1; 32]).is_err());
    }

    #[test]
    fn canonical_base64_only() {
        assert_eq!(decode_base64_canonical("AQI=").unwrap(), vec![1, 2]);
        // The same two bytes with non-zero trailing bits.
        assert!(decode_base64_canonical("AQJ=").is_err());
        assert!(decode_base64_canonical("AQI").is_err());
        assert!(decode_base64_canonical("AQI=\n").is_err());
        assert!(decode_base64_canonical("AQ-_").is_err());
    }

    #[test]
    fn debug_never_shows_the_private_key() {
        let signer = Signer::from_seed("log", &[9; 32]).unwrap();
        let shown = format!("{signer:?}");
        let secret = signer.to_key_text();
        let data = secret.splitn(5, '+').nth(4).unwrap();
        assert!(!shown.contains(data), "{shown}");
        assert!(shown.contains("<private key>"), "{shown}");
    }
}
