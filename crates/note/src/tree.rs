//! cairn's signed heads: a checkpoint whose extension lines hold one
//! `cairn-tree` line naming the tree's kind, arity and hash, and for a
//! fixed-depth tree its depth and zero value (docs/spec.md, "Signed
//! checkpoints"), so a verifier of the note also learns how to verify
//! proofs against its head.
//!
//! Invariant: [`open_head`] returns a head only from a note whose signature
//! verified, whose origin is the key's name and which holds exactly one
//! well-formed tree line; the line's spelling is canonical (one order, no
//! leading zeros, lowercase hex), so a head has one text as cairn writes
//! it. The kind names are core's (`TreeKind::NAMES`); `kind=leanimt`, how
//! older cairn versions spelled `kind=lean`, is read too, so the notes they
//! signed stay valid.

use std::fmt;

use cairn_core::hex::{parse_hash, to_hex};
use cairn_core::{Arity, Hash, HashKind, TreeConfig};

use crate::checkpoint::Checkpoint;
use crate::error::NoteError;
use crate::key::{Signer, Verifier};

/// The first word of cairn's extension line.
pub const TREE_LINE_KEYWORD: &str = "cairn-tree";

/// The LeanIMT's kind name in the tree line, core's.
const LEAN: &str = cairn_core::TreeKind::Lean.name();

/// How older cairn versions named the LeanIMT in the tree line: read as
/// [`LEAN`], never written.
const LEAN_LEGACY: &str = "leanimt";

/// The shape of a tree, as its checkpoint names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TreeKind {
    /// The n-ary LeanIMT of docs/spec.md section 2 (`kind=lean`).
    LeanImt,
    /// The fixed-depth tree of docs/spec.md section 2.1 (`kind=imt`), with
    /// its depth and zero value.
    Imt {
        /// Levels above the leaves, 1..=64.
        depth: u32,
        /// The value of an absent leaf.
        zero: Hash,
    },
}

impl TreeKind {
    /// The name in the tree line: core's name of the kind
    /// ([`cairn_core::TreeKind::name`]), `lean` or `imt`.
    pub const fn name(self) -> &'static str {
        match self {
            TreeKind::LeanImt => cairn_core::TreeKind::Lean.name(),
            TreeKind::Imt { .. } => "imt",
        }
    }

    /// Whether the empty tree has a root (and so a checkpoint): a
    /// fixed-depth tree's is its `zeros[depth]`, a LeanIMT's has none.
    pub const fn empty_has_root(self) -> bool {
        matches!(self, TreeKind::Imt { .. })
    }
}

/// cairn's extension line: `cairn-tree kind=K arity=N hash=H`, and for a
/// fixed-depth tree ` depth=D zero=0x..` after the hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreeLine {
    /// The tree's shape.
    pub kind: TreeKind,
    /// Children per internal node.
    pub arity: Arity,
    /// The node hash.
    pub hash: HashKind,
}

fn refuse(reason: String) -> NoteError {
    NoteError::TreeLine(reason)
}

/// The value of field `key` in `field` (`key=value`), refusing any other key.
fn field<'a>(field: Option<&'a str>, key: &str) -> Result<&'a str, NoteError> {
    let field = field.ok_or_else(|| refuse(format!("the field {key}= is missing")))?;
    match field.split_once('=') {
        Some((got, value)) if got == key => Ok(value),
        _ => Err(refuse(format!("field {field:?} where {key}= belongs"))),
    }
}

/// A decimal number without sign or leading zeros.
fn canonical_decimal(text: &str) -> bool {
    !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit())
        && !(text.len() > 1 && text.starts_with('0'))
}

impl TreeLine {
    /// The line of a LeanIMT of `config`'s arity and hash (its maximum
    /// depth limits appends, not proofs, and is not named).
    pub fn lean_imt(config: &TreeConfig) -> TreeLine {
        TreeLine {
            kind: TreeKind::LeanImt,
            arity: config.arity,
            hash: config.hash,
        }
    }

    /// The line of the tree `config` describes: a LeanIMT or a
    /// fixed-depth tree. An indexed tree rewrites earlier leaves and has
    /// no signed checkpoints: refused.
    pub fn of(config: &TreeConfig) -> Result<TreeLine, NoteError> {
        let kind = match config.kind {
            cairn_core::TreeKind::Lean => TreeKind::LeanImt,
            cairn_core::TreeKind::Fixed { depth, zero } => TreeKind::Imt { depth, zero },
            other => {
                return Err(refuse(format!(
                    "a tree of kind {} has no signed checkpoint: it rewrites earlier leaves",
                    other.name()
                )));
            }
        };
        Ok(TreeLine {
            kind,
            arity: config.arity,
            hash: config.hash,
        })
    }

    /// The tree the line names, as the core describes it (no maximum depth).
    pub fn config(&self) -> TreeConfig {
        let tree = TreeConfig::new(self.arity, self.hash);
        match self.kind {
            TreeKind::LeanImt => tree,
            TreeKind::Imt { depth, zero } => {
                tree.with_kind(cairn_core::TreeKind::Fixed { depth, zero })
            }
        }
    }

    /// Whether `line` is a tree line (well formed or not).
    pub fn is_tree_line(line: &str) -> bool {
        line.split(' ').next() == Some(TREE_LINE_KEYWORD)
    }

    /// Parses `cairn-tree kind=K arity=N hash=H` (and for `kind=imt`,
    /// `depth=D zero=0x..`): single spaces, these fields in this order,
    /// nothing else.
    pub fn parse(line: &str) -> Result<TreeLine, NoteError> {
        let mut fields = line.split(' ');
        if fields.next() != Some(TREE_LINE_KEYWORD) {
            return Err(refuse(format!(
                "{line:?} does not start with {TREE_LINE_KEYWORD:?}"
            )));
        }
        let kind_name = field(fields.next(), "kind")?;
        if ![LEAN, LEAN_LEGACY, "imt"].contains(&kind_name) {
            return Err(refuse(format!(
                "unknown tree kind {kind_name:?}, want \"{LEAN}\" or \"imt\""
            )));
        }
        let arity_text = field(fields.next(), "arity")?;
        if !canonical_decimal(arity_text) {
            return Err(refuse(format!(
                "arity {arity_text:?} is not a decimal number without leading zeros"
            )));
        }
        let arity = arity_text
            .parse::<u64>()
            .map_err(|_| refuse(format!("arity {arity_text} is out of range, want 2..=16")))
            .and_then(|n| Arity::new(n).map_err(|e| refuse(e.to_string())))?;
        let hash = field(fields.next(), "hash")?
            .parse::<HashKind>()
            .map_err(|e| refuse(e.to_string()))?;
        let kind = if kind_name == "imt" {
            let depth_text = field(fields.next(), "depth")?;
            if !canonical_decimal(depth_text) {
                return Err(refuse(format!(
                    "depth {depth_text:?} is not a decimal number without leading zeros"
                )));
            }
            let depth = depth_text.parse::<u32>().map_err(|_| {
                refuse(format!(
                    "depth {depth_text} is out of range, want 1..={}",
                    cairn_core::kind::MAX_FIXED_DEPTH
                ))
            })?;
            let zero_text = field(fields.next(), "zero")?;
            let zero = parse_hash(zero_text).map_err(|e| refuse(format!("zero: {e}")))?;
            if to_hex(&zero) != zero_text {
                return Err(refuse(format!(
                    "zero {zero_text:?} is not 0x and 64 lowercase hex digits"
                )));
            }
            let kind = cairn_core::TreeKind::Fixed { depth, zero };
            kind.check(hash).map_err(|e| refuse(e.to_string()))?;
            TreeKind::Imt { depth, zero }
        } else {
            TreeKind::LeanImt
        };
        if let Some(extra) = fields.next() {
            return Err(refuse(format!(
                "unexpected {extra:?} after the {}: a {} line has no more fields",
                if kind_name == "imt" { "zero" } else { "hash" },
                kind.name()
            )));
        }
        Ok(TreeLine { kind, arity, hash })
    }
}

impl fmt::Display for TreeLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{TREE_LINE_KEYWORD} kind={} arity={} hash={}",
            self.kind.name(),
            self.arity,
            self.hash.name()
        )?;
        if let TreeKind::Imt { depth, zero } = self.kind {
            write!(f, " depth={depth} zero={}", to_hex(&zero))?;
        }
        Ok(())
    }
}

/// A head whose signed note verified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedHead {
    /// The log (the key's name).
    pub origin: String,
    /// The number of leaves.
    pub size: u64,
    /// The root at `size`.
    pub root: Hash,
    /// The tree the head belongs to.
    pub tree: TreeLine,
    /// Extension lines other than the tree line (signed, not interpreted).
    pub other_extensions: Vec<String>,
}

/// The checkpoint of the head `(size, root)` of a `tree`, named after the
/// signer (its origin is the signer's name).
pub fn head_checkpoint(signer: &Signer, tree: &TreeLine, size: u64, root: &Hash) -> Checkpoint {
    Checkpoint {
        origin: signer.name().to_owned(),
        size,
        root: *root,
        extensions: vec![tree.to_string()],
    }
}

/// The signed note of the head `(size, root)` of a `tree`. cairn's empty
/// tree has no root, so it has no checkpoint: callers sign non-empty heads.
pub fn sign_head(
    signer: &Signer,
    tree: &TreeLine,
    size: u64,
    root: &Hash,
) -> Result<String, NoteError> {
    if size == 0 && !tree.kind.empty_has_root() {
        return Err(NoteError::Checkpoint(
            "size 0: cairn's empty tree has no root, so no checkpoint names it".into(),
        ));
    }
    head_checkpoint(signer, tree, size, root).sign(signer)
}

/// Verifies a signed head with `verifier`: the signature, the origin, the
/// checkpoint body and exactly one tree line.
pub fn open_head(note: &str, verifier: &Verifier) -> Result<SignedHead, NoteError> {
    head_of(Checkpoint::open(note, verifier)?)
}

/// Reads the head of a signed note WITHOUT verifying its signature (nor
/// its origin against a key): what a reader with no key, trusting the
/// place it fetched the note from, learns from it. The note must still be
/// well formed, with at least one well-formed signature line.
pub fn read_head_unverified(note: &str) -> Result<SignedHead, NoteError> {
    let opened = crate::note::read_unverified(note)?;
    head_of(Checkpoint::parse(&opened.text)?)
}

/// The head a checkpoint names: exactly one tree line, not the empty tree.
fn head_of(checkpoint: Checkpoint) -> Result<SignedHead, NoteError> {
    let (tree_lines, other): (Vec<String>, Vec<String>) = checkpoint
        .extensions
        .into_iter()
        .partition(|line| TreeLine::is_tree_line(line));
    let tree = match tree_lines.as_slice() {
        [line] => TreeLine::parse(line)?,
        [] => {
            return Err(refuse(format!(
                "the checkpoint has no {TREE_LINE_KEYWORD} extension line, want one"
            )));
        }
        lines => {
            return Err(refuse(format!(
                "the checkpoint has {} {TREE_LINE_KEYWORD} lines, want one",
                lines.len()
            )));
        }
    };
    if checkpoint.size == 0 && !tree.kind.empty_has_root() {
        return Err(NoteError::Checkpoint(
            "size 0: cairn's empty tree has no root, so no checkpoint names it".into(),
        ));
    }
    Ok(SignedHead {
        origin: checkpoint.origin,
        size: checkpoint.size,
        root: checkpoint.root,
        tree,
        other_extensions: other,
    })
}
