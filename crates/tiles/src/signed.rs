//! Checking a tile store's checkpoint against trusted keys: [`SignedBy`]
//! is the [`CheckpointSignature`] of a reader that holds verifier keys. It
//! accepts only cairn's signed checkpoint (docs/spec.md, "Signed
//! checkpoints") whose signature by one of the keys verifies and whose
//! origin is that key's name, and refuses the unsigned form outright: a
//! reader that asked for signatures never falls back to trusting the
//! transport.
//!
//! Invariant: `verify` returns `Ok` only for an object whose signed head,
//! opened with cairn-note, is the very head [`Checkpoint::decode`] read
//! from the same bytes (asserted, not assumed).

use cairn_note::{NoteError, SignedHead, Verifier, open_head};

use crate::checkpoint::{Checkpoint, is_unsigned};

/// Checks a checkpoint's signature before a mirror or a client trusts its
/// head ([`SignedBy`] checks cairn's signed checkpoint). `object` is the
/// checkpoint object's bytes as fetched, `checkpoint` what
/// [`Checkpoint::decode`] read from it.
pub trait CheckpointSignature: Send + Sync {
    /// `Ok` to go on with the head, or why it is refused.
    fn verify_checkpoint_signature(
        &self,
        object: &[u8],
        checkpoint: &Checkpoint,
    ) -> Result<(), SignatureError>;
}

/// Accepts every checkpoint: the head is trusted as far as the place it
/// came from is (and its consistency with the adopted head is still
/// checked).
#[derive(Debug, Clone, Copy, Default)]
pub struct Unsigned;

impl CheckpointSignature for Unsigned {
    fn verify_checkpoint_signature(&self, _: &[u8], _: &Checkpoint) -> Result<(), SignatureError> {
        Ok(())
    }
}

/// Why a checkpoint's signature is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignatureError {
    /// No key to check against.
    #[error("no verifier key given: a signed checkpoint needs one to check")]
    NoKeys,
    /// The object is not UTF-8.
    #[error("not UTF-8")]
    NotUtf8,
    /// The unsigned form, where a signed one is wanted.
    #[error(
        "the checkpoint is unsigned, want one signed by {keys} (its publisher has no signer key, or the object was replaced)"
    )]
    Unsigned {
        /// The trusted keys, `name+id`.
        keys: String,
    },
    /// The note did not verify with the keys (no signature by them, a
    /// bad signature, a malformed note).
    #[error("{0}")]
    Note(NoteError),
    /// A note whose origin is not the name of a key that signed it.
    #[error(
        "the checkpoint's origin is {origin:?}, but it is signed by {signed_by}: want the origin to be the name of a key that signed it"
    )]
    Origin {
        /// The note's origin.
        origin: String,
        /// The keys whose signatures verified.
        signed_by: String,
    },
    /// The signed head is not the head decoded from the same bytes.
    #[error(
        "the signed head ({signed} leaves) is not the head read from the object ({read} leaves)"
    )]
    HeadMismatch {
        /// The signed size.
        signed: u64,
        /// The size decoded.
        read: u64,
    },
}

/// Trusts checkpoints signed by any of its keys.
#[derive(Clone, Debug)]
pub struct SignedBy {
    keys: Vec<Verifier>,
}

impl SignedBy {
    /// Trusts `keys` (at least one).
    pub fn new(keys: Vec<Verifier>) -> Result<SignedBy, SignatureError> {
        if keys.is_empty() {
            return Err(SignatureError::NoKeys);
        }
        Ok(SignedBy { keys })
    }

    /// The trusted keys.
    pub fn keys(&self) -> &[Verifier] {
        &self.keys
    }

    fn key_names(&self) -> String {
        self.keys
            .iter()
            .map(|k| format!("{}+{:08x}", k.name(), k.id()))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Checks the checkpoint object `object`, which decoded to
    /// `checkpoint`: the signed head, or why it is refused.
    pub fn verify(
        &self,
        object: &[u8],
        checkpoint: &Checkpoint,
    ) -> Result<SignedHead, SignatureError> {
        let text = std::str::from_utf8(object).map_err(|_| SignatureError::NotUtf8)?;
        if is_unsigned(text) {
            return Err(SignatureError::Unsigned {
                keys: self.key_names(),
            });
        }
        // Every trusted key's signature must verify (C2SP signed-note), and
        // at least one must be there.
        let note = cairn_note::note::open(text, &self.keys).map_err(SignatureError::Note)?;
        let origin = cairn_note::Checkpoint::parse(&note.text)
            .map_err(SignatureError::Note)?
            .origin;
        let key = self
            .keys
            .iter()
            .find(|k| {
                k.name() == origin
                    && note
                        .verified
                        .iter()
                        .any(|s| s.name == k.name() && s.id == k.id())
            })
            .ok_or_else(|| SignatureError::Origin {
                origin: origin.clone(),
                signed_by: note
                    .verified
                    .iter()
                    .map(|s| s.key())
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        let head = open_head(text, key).map_err(SignatureError::Note)?;
        let signed = Checkpoint {
            tree: head.tree.config(),
            head: cairn_core::TreeHead::new(head.size, head.root),
        };
        if signed != *checkpoint {
            return Err(SignatureError::HeadMismatch {
                signed: signed.head.size,
                read: checkpoint.head.size,
            });
        }
        Ok(head)
    }
}

impl CheckpointSignature for SignedBy {
    fn verify_checkpoint_signature(
        &self,
        object: &[u8],
        checkpoint: &Checkpoint,
    ) -> Result<(), SignatureError> {
        self.verify(object, checkpoint).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use cairn_core::{Arity, HashKind, TreeHead};
    use cairn_note::Signer;

    use super::*;
    fn signer(name: &str, seed: u8) -> Signer {
        Signer::from_seed(name, &[seed; 32]).unwrap()
    }

    fn check(keys: &[&Signer], object: &str) -> Result<SignedHead, SignatureError> {
        let verifier = SignedBy::new(keys.iter().map(|s| s.verifier()).collect()).unwrap();
        let checkpoint = Checkpoint::decode(object.as_bytes()).unwrap();
        verifier.verify(object.as_bytes(), &checkpoint)
    }

    #[test]
    fn only_a_checkpoint_signed_by_a_trusted_key_for_its_own_origin_passes() {
        let c = Checkpoint {
            tree: cairn_core::TreeConfig::new(Arity::new(2).unwrap(), HashKind::Blake3),
            head: TreeHead::new(9, [4; 32]),
        };
        let ours = signer("example.org/tiles", 1);
        let theirs = signer("example.org/other", 2);
        let signed = c.encode_signed(&ours).unwrap();
        assert_eq!(check(&[&ours], &signed).unwrap().size, 9);
        // Among several trusted keys, one is enough.
        assert_eq!(check(&[&theirs, &ours], &signed).unwrap().size, 9);
        let cases = [
            (check(&[&ours], &c.encode()), "unsigned"),
            (check(&[&theirs], &signed), "no known signature"),
            (
                check(&[&ours], &signed.replace("\n9\n", "\n10\n")),
                "bad signature",
            ),
            (
                check(&[&ours], &signed.replace("arity=2", "arity=3")),
                "bad signature",
            ),
            // Same name, another key: not the trusted key.
            (
                check(&[&signer("example.org/tiles", 3)], &signed),
                "no known signature",
            ),
        ];
        for (result, want) in cases {
            let error = result.unwrap_err().to_string();
            assert!(error.contains(want), "{error:?} does not say {want:?}");
        }
        // A note whose origin is not the name of the key that signed it.
        let text = cairn_note::Checkpoint {
            origin: "example.org/elsewhere".into(),
            size: 9,
            root: [4; 32],
            extensions: vec!["cairn-tree kind=lean arity=2 hash=blake3".into()],
        }
        .to_text()
        .unwrap();
        let forged = cairn_note::note::sign(&text, &[&ours]).unwrap();
        let error = check(&[&ours], &forged).unwrap_err();
        assert!(matches!(error, SignatureError::Origin { .. }), "{error}");
        assert!(matches!(
            SignedBy::new(Vec::new()),
            Err(SignatureError::NoKeys)
        ));
    }
}
