//! Signed checkpoints for cairn: C2SP signed notes with Ed25519 and the
//! C2SP tlog-checkpoint body, with keys in the text forms of Go's
//! `golang.org/x/mod/sumdb/note`, so any implementation of those formats
//! verifies what cairn signs.
//!
//! - [`key`]: [`Signer`] and [`Verifier`], their text forms and key IDs.
//! - [`note`]: [`sign`](note::sign) and [`open`](note::open) any signed note.
//! - [`checkpoint`]: [`Checkpoint`], the (origin, size, root, extensions)
//!   body, signed and opened.
//! - [`tree`]: cairn's `cairn-tree` extension line and the signed heads of
//!   cairn trees ([`sign_head`], [`open_head`]).
//! - [`file`](mod@file): signer key files (mode 0600, written atomically).
//!
//! ```
//! use cairn_core::{Arity, HashKind, TreeConfig};
//! use cairn_note::{Signer, TreeLine, open_head, sign_head};
//!
//! let signer = Signer::generate("example.org/deposits").unwrap();
//! let verifier = signer.verifier(); // its text form is what users trust
//! let tree = TreeLine::lean_imt(&TreeConfig::new(Arity::new(4).unwrap(), HashKind::Blake3));
//! let note = sign_head(&signer, &tree, 5, &[7; 32]).unwrap();
//! let head = open_head(&note, &verifier).unwrap();
//! assert_eq!((head.size, head.root, head.tree), (5, [7; 32], tree));
//! assert!(open_head(&note.replace("\n5\n", "\n6\n"), &verifier).is_err());
//! ```
#![warn(missing_docs)]
// Everything here parses text from files and the network: no panics.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::indexing_slicing))]

pub mod checkpoint;
pub mod error;
pub mod file;
pub mod key;
pub mod note;
pub mod tree;

pub use checkpoint::Checkpoint;
pub use error::{KeyError, NoteError};
pub use key::{Signer, Verifier, key_id};
pub use note::Note;
pub use tree::{
    SignedHead, TreeKind, TreeLine, head_checkpoint, open_head, read_head_unverified, sign_head,
};
