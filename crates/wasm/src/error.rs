//! Why a call was refused. The module writes the message (UTF-8) as the
//! call's output and returns a status naming the layer
//! ([`CallError::status`]), so a caller can tell a malformed call from a
//! proof that does not verify or a sync the tracker refuses.

use cairn_core::{ArityError, DecodeError, KindCodeError, KindError, VerifyError};
use cairn_note::KeyError;
use cairn_tiles::SignatureError;
use cairn_wallet::{StateError, WalletError};

/// A refused call.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// The input ended inside a field.
    #[error("input ends inside {field}: want {want} bytes, got {got}")]
    Short {
        /// The field being read.
        field: &'static str,
        /// Its length.
        want: usize,
        /// The bytes left.
        got: usize,
    },
    /// Bytes follow the call's last field.
    #[error("{extra} bytes follow the call's last field")]
    Trailing {
        /// How many.
        extra: usize,
    },
    /// A string field is not UTF-8.
    #[error("{field} is not UTF-8 text")]
    NotText {
        /// The field.
        field: &'static str,
    },
    /// No call has this number.
    #[error("unknown call {op}")]
    UnknownOp {
        /// The number given.
        op: u32,
    },
    /// The tree's hash id names no hash.
    #[error("hash id {id} is unknown, want 1..=5")]
    UnknownHash {
        /// The id given.
        id: u8,
    },
    /// A Lean tree given a depth or zero value.
    #[error("a lean tree (kind 0) has depth 0 and a zero value of 32 zero bytes")]
    LeanFields,
    /// A head's root flag is neither 0 (no root, 32 zero bytes) nor 1.
    #[error("head root flag {got}: want 1 (a root) or 0 (none, 32 zero bytes)")]
    RootFlag {
        /// The flag byte (or 0 with a non-zero root).
        got: u8,
    },
    /// The tree's arity.
    #[error("tree: {0}")]
    Arity(#[from] ArityError),
    /// The tree's kind fields.
    #[error("tree kind: {0}")]
    KindCode(#[from] KindCodeError),
    /// The tree's kind does not fit its hash.
    #[error("tree kind: {0}")]
    Kind(#[from] KindError),
    /// A verifier key.
    #[error("verifier key: {0}")]
    Key(#[from] KeyError),
    /// The verifier keys as a set.
    #[error("verifier keys: {0}")]
    Keys(#[from] SignatureError),
    /// A proof's encoding.
    #[error("proof encoding: {0}")]
    Decode(#[from] DecodeError),
    /// A proof that does not verify against the trusted head.
    #[error("{0}")]
    Verify(#[from] VerifyError),
    /// The tracker refused (a sync, a mark, a witness, a rewind).
    #[error("{0}")]
    Wallet(#[from] WalletError),
    /// Saved state that does not load.
    #[error("wallet state: {0}")]
    State(#[from] StateError),
    /// No tracker has this handle.
    #[error("no tracker has handle {handle}")]
    NoTracker {
        /// The handle given.
        handle: u32,
    },
    /// A feed or finish with no sync planned.
    #[error("tracker {handle} has no sync planned: call plan first")]
    NoPlan {
        /// The tracker's handle.
        handle: u32,
    },
}

impl CallError {
    /// The status a refused call returns: 1 a malformed call (input, keys,
    /// handles), 2 a proof that does not decode or verify, 3 a tracker's
    /// refusal (sync, witness, state).
    #[must_use]
    pub fn status(&self) -> u32 {
        match self {
            CallError::Decode(_) | CallError::Verify(_) => 2,
            CallError::Wallet(_) | CallError::State(_) | CallError::NoPlan { .. } => 3,
            _ => 1,
        }
    }
}
