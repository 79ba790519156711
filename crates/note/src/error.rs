//! The errors of keys, notes and checkpoints. Messages are lowercase and
//! carry what was found and what was wanted; none ever holds a private key.

/// A key text or key file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The text is not `name+hash+keydata` (or its signer form).
    #[error("malformed {what}: {reason}")]
    Format {
        /// Which kind of key ("verifier key", "signer key").
        what: String,
        /// What is wrong, with the values.
        reason: String,
    },
    /// The key's name is empty or holds a space or `+`.
    #[error("key name {got:?} is not allowed: {reason}")]
    Name {
        /// The name given.
        got: String,
        /// Why not.
        reason: String,
    },
    /// A signature type other than Ed25519.
    #[error("key algorithm 0x{got:02x} is not supported, want 0x01 (Ed25519)")]
    Algorithm {
        /// The algorithm byte found.
        got: u8,
    },
    /// The key ID written in the text is not the key's.
    #[error("key ID {got:08x} does not match the key, whose ID is {want:08x}")]
    IdMismatch {
        /// The ID in the text.
        got: u32,
        /// The ID computed from the name and the key.
        want: u32,
    },
    /// The operating system's random source failed.
    #[error("cannot draw a random key: {0}")]
    Random(String),
    /// A key file holds no usable signer key.
    #[error("key file {path} does not hold a signer key: {reason}")]
    FileContent {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong (never the key).
        reason: String,
    },
    /// Reading or writing a key file failed.
    #[error("key file {path}: {reason}")]
    File {
        /// The file.
        path: std::path::PathBuf,
        /// What failed (never the key).
        reason: String,
    },
}

/// A signed note that cannot be made, read or trusted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NoteError {
    /// The note (or a text to sign) breaks the signed-note format.
    #[error("malformed note: {0}")]
    Malformed(String),
    /// A signature line is not `— name base64(id || signature)`.
    #[error("malformed signature line {line}: {reason}")]
    SignatureLine {
        /// Its number among the signature lines, from 1.
        line: usize,
        /// What is wrong, with the values.
        reason: String,
    },
    /// More signature lines than a verifier reads.
    #[error("the note has more than {max} signatures, want at most {max}")]
    TooManySignatures {
        /// The limit.
        max: usize,
    },
    /// The note is larger than a verifier reads.
    #[error("the note has {got} bytes, want at most {max}")]
    TooLarge {
        /// Its size.
        got: usize,
        /// The limit.
        max: usize,
    },
    /// No signature is by a key the caller trusts.
    #[error("no known signature: the note is signed by {}, want a signature by {}", list(.found), list(.known))]
    NoKnownSignature {
        /// The keys (`name+id`) of the signatures found.
        found: Vec<String>,
        /// The keys (`name+id`) the caller trusts.
        known: Vec<String>,
    },
    /// A signature by a trusted key does not verify: the text or the
    /// signature was changed, so the whole note is refused.
    #[error("bad signature by {key}: the note's text is not what this key signed")]
    BadSignature {
        /// The key (`name+id`).
        key: String,
    },
    /// The note's text is not a checkpoint.
    #[error("malformed checkpoint: {0}")]
    Checkpoint(String),
    /// The checkpoint names another log than the key's.
    #[error("the checkpoint's origin is {got:?}, want {want:?} (the verifier key's name)")]
    Origin {
        /// The origin line.
        got: String,
        /// The verifier key's name.
        want: String,
    },
    /// The checkpoint has no valid `cairn-tree` extension line.
    #[error("cairn tree line: {0}")]
    TreeLine(String),
    /// The signer key cannot sign this text.
    #[error(transparent)]
    Key(#[from] KeyError),
}

fn list(keys: &[String]) -> String {
    if keys.is_empty() {
        "no key".to_owned()
    } else {
        keys.join(", ")
    }
}
