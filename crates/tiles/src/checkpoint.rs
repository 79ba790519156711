//! The checkpoint object: the head a tile store publishes, written after
//! every tile it needs (docs/spec.md, "Tiles"), in one of two forms: the
//! unsigned lines (`cairn tiles v1` for a Lean tree, five lines;
//! `cairn tiles v2` for a fixed-depth tree, which adds its kind, depth and
//! zero value), or, when the publisher has a key, cairn's signed
//! checkpoint (the C2SP note that `GET /v1/checkpoint` serves). Both are
//! parsed strictly; [`Checkpoint::decode`] reads either WITHOUT checking a
//! signature (a reader with no key trusts the place it fetched the object
//! from), and `SignedBy` (signed.rs) checks one against trusted keys.
//!
//! The decoder reads bytes from the network: it never panics (no indexing,
//! no unwrap), and refuses every text the encoder would not write.

#![deny(clippy::indexing_slicing, clippy::unwrap_used)]

use cairn_core::hex::{parse_hash, to_hex};
use cairn_core::kind::KindCodeError;
use cairn_core::{Arity, Hash, HashKind, KindError, TreeConfig, TreeHead, TreeKind};
use cairn_note::{NoteError, Signer, TreeLine};

use crate::layout::Layout;

/// The first line of the checkpoint object of a Lean tree.
pub const MAGIC: &str = "cairn tiles v1";
/// The first line of the checkpoint object of a tree that names its kind
/// (a fixed-depth tree).
pub const MAGIC_KINDS: &str = "cairn tiles v2";

/// A tile store's published head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// The tree: its arity, hash and kind (never a maximum depth).
    pub tree: TreeConfig,
    /// The head every published tile belongs to.
    pub head: TreeHead,
}

/// Why bytes are not a checkpoint object (or a checkpoint cannot be signed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// The object is not UTF-8.
    #[error("not UTF-8")]
    NotUtf8,
    /// The unsigned form with the wrong number of lines.
    #[error("{got} lines, want {want} each ending in a newline")]
    Lines {
        /// The lines found.
        got: usize,
        /// The lines its first line implies.
        want: usize,
    },
    /// A line that is not `NAME VALUE` for the field it must hold.
    #[error("line {line:?}, want \"{field} ...\"")]
    Field {
        /// The line.
        line: String,
        /// The field it must hold.
        field: &'static str,
    },
    /// An arity that is not 2..=16 in its one spelling.
    #[error("arity {0:?} is not 2..=16")]
    Arity(String),
    /// A hash name cairn does not know.
    #[error("unknown hash {0:?}")]
    Hash(String),
    /// A size or depth that is not a decimal number in its one spelling.
    #[error("{field} {text:?} is not a decimal number without sign or leading zeros")]
    Number {
        /// `size` or `depth`.
        field: &'static str,
        /// The text.
        text: String,
    },
    /// A root or zero value that is not 0x and 64 lowercase hex digits.
    #[error("{field} {text:?} is not 0x and 64 lowercase hex digits")]
    Hex {
        /// `root` or `zero`.
        field: &'static str,
        /// The text.
        text: String,
    },
    /// A kind the unsigned form does not describe.
    #[error("tree: {0}")]
    Kind(KindCodeError),
    /// A kind that cannot be a tree of the hash.
    #[error("tree: {0}")]
    Tree(KindError),
    /// A root where the head has none, or none where it has one.
    #[error("size {size} with {} root", if *has_root { "a" } else { "no" })]
    Root {
        /// The size.
        size: u64,
        /// Whether the object names a root.
        has_root: bool,
    },
    /// A root the hash refuses (a field hash's non-canonical value).
    #[error("root {} is not a canonical {hash} value", to_hex(root))]
    NonCanonicalRoot {
        /// The root.
        root: Hash,
        /// The tree's hash.
        hash: HashKind,
    },
    /// A size beyond what a fixed-depth tree holds.
    #[error("size {size} is beyond the tree's capacity of {capacity} leaves")]
    Capacity {
        /// The size.
        size: u64,
        /// N^depth.
        capacity: u64,
    },
    /// Neither form: its first line is no magic, and it is no signed note.
    #[error(
        "neither an unsigned checkpoint (first line {MAGIC:?} or {MAGIC_KINDS:?}, got {first:?}) nor a signed one: {error}"
    )]
    Neither {
        /// The object's first line (at most 80 characters).
        first: String,
        /// Why it is no signed note.
        error: NoteError,
    },
    /// The empty Lean tree has no root, so no signed checkpoint.
    #[error("the tree is empty: cairn's empty tree has no root, so no signed checkpoint names it")]
    EmptySigned,
    /// The signer refused the head.
    #[error("signing: {0}")]
    Sign(NoteError),
}

impl Checkpoint {
    /// What a checkpoint names of the tree `config`: its arity, hash and
    /// kind (a maximum depth limits appends, not proofs, and is not named).
    pub fn tree_of(config: &TreeConfig) -> TreeConfig {
        TreeConfig::new(config.arity, config.hash).with_kind(config.kind)
    }

    /// The tile geometry of the tree.
    pub fn layout(&self) -> Layout {
        Layout::new(self.tree.arity, self.tree.hash)
    }

    /// The object's text: `cairn tiles v1` for a Lean tree, `cairn tiles
    /// v2` with the kind, depth and zero value for a fixed-depth one.
    ///
    /// # Panics
    /// For an indexed tree (a programmer error: tiles describe append-only
    /// trees, and the publisher refuses one first).
    pub fn encode(&self) -> String {
        let root = self
            .head
            .root
            .map_or_else(|| "none".to_owned(), |r| to_hex(&r));
        let (arity, hash, size) = (self.tree.arity, self.tree.hash.name(), self.head.size);
        match self.tree.kind {
            TreeKind::Lean => {
                format!("{MAGIC}\narity {arity}\nhash {hash}\nsize {size}\nroot {root}\n")
            }
            TreeKind::Fixed { depth, zero } => format!(
                "{MAGIC_KINDS}\narity {arity}\nhash {hash}\nkind {}\ndepth {depth}\nzero {}\nsize {size}\nroot {root}\n",
                self.tree.kind.name(),
                to_hex(&zero)
            ),
            other => panic!(
                "a checkpoint of a {} tree: tiles describe append-only trees",
                other.name()
            ),
        }
    }

    /// The object's text signed by `signer`: cairn's signed checkpoint
    /// (docs/spec.md, "Signed checkpoints"), whose origin is the signer's
    /// name. The empty Lean tree has no root, so no signed checkpoint.
    pub fn encode_signed(&self, signer: &Signer) -> Result<String, CheckpointError> {
        let root = self.head.root.ok_or(CheckpointError::EmptySigned)?;
        let tree = TreeLine::of(&self.tree).map_err(CheckpointError::Sign)?;
        cairn_note::sign_head(signer, &tree, self.head.size, &root).map_err(CheckpointError::Sign)
    }

    /// Parses a checkpoint object of either form, refusing anything
    /// [`Checkpoint::encode`] or [`Checkpoint::encode_signed`] would not
    /// write. A signed object's signature is NOT checked here.
    pub fn decode(text: &[u8]) -> Result<Checkpoint, CheckpointError> {
        let text = std::str::from_utf8(text).map_err(|_| CheckpointError::NotUtf8)?;
        let lines: Vec<&str> = text.split('\n').collect();
        let names: &[&'static str] = match lines.first() {
            Some(&MAGIC) => &["arity", "hash", "size", "root"],
            Some(&MAGIC_KINDS) => &["arity", "hash", "kind", "depth", "zero", "size", "root"],
            _ => return decode_signed(text),
        };
        // The magic, a line per field, and the empty rest after the last newline.
        if lines.len() != names.len() + 2 || lines.last() != Some(&"") {
            return Err(CheckpointError::Lines {
                got: lines.len().saturating_sub(1),
                want: names.len() + 1,
            });
        }
        let values = names
            .iter()
            .zip(lines.iter().skip(1))
            .map(|(&name, line)| {
                line.strip_prefix(name)
                    .and_then(|rest| rest.strip_prefix(' '))
                    .ok_or_else(|| CheckpointError::Field {
                        line: (*line).to_owned(),
                        field: name,
                    })
            })
            .collect::<Result<Vec<&str>, _>>()?;
        let (arity_text, hash_text, kind_fields, size_text, root_text) = match *values.as_slice() {
            [arity, hash, size, root] => (arity, hash, None, size, root),
            [arity, hash, kind, depth, zero, size, root] => {
                (arity, hash, Some((kind, depth, zero)), size, root)
            }
            _ => {
                return Err(CheckpointError::Lines {
                    got: lines.len().saturating_sub(1),
                    want: names.len() + 1,
                });
            }
        };
        let arity = number(arity_text)
            .and_then(|n| Arity::new(n).ok())
            .ok_or_else(|| CheckpointError::Arity(arity_text.to_owned()))?;
        let hash: HashKind = hash_text
            .parse()
            .map_err(|_| CheckpointError::Hash(hash_text.to_owned()))?;
        let kind = match kind_fields {
            None => TreeKind::Lean,
            Some((name, depth_text, zero_text)) => {
                let depth = number(depth_text)
                    .and_then(|d| u32::try_from(d).ok())
                    .ok_or_else(|| CheckpointError::Number {
                        field: "depth",
                        text: depth_text.to_owned(),
                    })?;
                let zero = hex(zero_text, "zero")?;
                let kind = TreeKind::from_name(name, Some(depth), Some(zero))
                    .map_err(CheckpointError::Kind)?;
                kind.check(hash).map_err(CheckpointError::Tree)?;
                kind
            }
        };
        let size = number(size_text).ok_or_else(|| CheckpointError::Number {
            field: "size",
            text: size_text.to_owned(),
        })?;
        let root = match root_text {
            "none" => None,
            text => Some(hex(text, "root")?),
        };
        let tree = TreeConfig::new(arity, hash).with_kind(kind);
        let checkpoint = Checkpoint {
            tree,
            head: TreeHead { size, root },
        };
        checkpoint.check()?;
        Ok(checkpoint)
    }

    /// What both forms check of the head: a root exactly where the tree
    /// has one, canonical for the hash, and a size within a fixed depth.
    fn check(&self) -> Result<(), CheckpointError> {
        let TreeHead { size, root } = self.head;
        if root.is_some() != (size > 0 || self.tree.empty_has_root()) {
            return Err(CheckpointError::Root {
                size,
                has_root: root.is_some(),
            });
        }
        if let Some(root) = root
            && !self.tree.hash.accepts(&root)
        {
            return Err(CheckpointError::NonCanonicalRoot {
                root,
                hash: self.tree.hash,
            });
        }
        if let Some(capacity) = self.tree.capacity()
            && size > capacity
        {
            return Err(CheckpointError::Capacity { size, capacity });
        }
        Ok(())
    }
}

/// A tree as refusals name it: `a tree of arity 2 under poseidon`, with
/// its kind when it is not Lean.
pub(crate) fn describe_tree(tree: &TreeConfig) -> String {
    let mut out = format!("a tree of arity {} under {}", tree.arity, tree.hash);
    if let TreeKind::Fixed { depth, zero } = tree.kind {
        out.push_str(&format!(
            " (imt of depth {depth} and zero {})",
            to_hex(&zero)
        ));
    }
    out
}

/// A decimal number in its one spelling (no sign, no leading zero).
fn number(text: &str) -> Option<u64> {
    text.parse::<u64>().ok().filter(|n| n.to_string() == text)
}

/// A 32-byte value in its one spelling: 0x and lowercase digits.
fn hex(text: &str, field: &'static str) -> Result<Hash, CheckpointError> {
    parse_hash(text)
        .ok()
        .filter(|value| to_hex(value) == text)
        .ok_or_else(|| CheckpointError::Hex {
            field,
            text: text.to_owned(),
        })
}

/// Whether `text` is (meant to be) the unsigned form: its first line is
/// [`MAGIC`] or [`MAGIC_KINDS`].
pub(crate) fn is_unsigned(text: &str) -> bool {
    matches!(text.split('\n').next(), Some(MAGIC | MAGIC_KINDS))
}

/// The head of a signed checkpoint object, its signature unchecked.
fn decode_signed(text: &str) -> Result<Checkpoint, CheckpointError> {
    let head = cairn_note::read_head_unverified(text).map_err(|error| {
        let first = text.split('\n').next().unwrap_or_default();
        CheckpointError::Neither {
            first: first.chars().take(80).collect(),
            error,
        }
    })?;
    let checkpoint = Checkpoint {
        tree: head.tree.config(),
        head: TreeHead::new(head.size, head.root),
    };
    checkpoint.check()?;
    Ok(checkpoint)
}

/// The keys (`name+id`) whose signature lines a checkpoint object carries,
/// unverified: `None` for the unsigned form (or an object that is no
/// signed note).
pub fn signers(object: &[u8]) -> Option<Vec<String>> {
    let text = std::str::from_utf8(object).ok()?;
    if is_unsigned(text) {
        return None;
    }
    let note = cairn_note::note::read_unverified(text).ok()?;
    Some(note.unverified.iter().map(|s| s.key()).collect())
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn lean() -> TreeConfig {
        TreeConfig::new(Arity::new(4).unwrap(), HashKind::Sha256)
    }

    fn imt() -> TreeConfig {
        TreeConfig::new(Arity::BINARY, HashKind::Poseidon).with_kind(TreeKind::Fixed {
            depth: 20,
            zero: [0; 32],
        })
    }

    #[test]
    fn checkpoints_round_trip_and_anything_else_is_refused() {
        for head in [TreeHead::EMPTY, TreeHead::new(12345, [7; 32])] {
            let c = Checkpoint { tree: lean(), head };
            assert_eq!(Checkpoint::decode(c.encode().as_bytes()), Ok(c));
        }
        let good = Checkpoint {
            tree: lean(),
            head: TreeHead::new(5, [1; 32]),
        }
        .encode();
        assert_eq!(
            good,
            format!(
                "cairn tiles v1\narity 4\nhash sha256\nsize 5\nroot 0x{}\n",
                "01".repeat(32)
            )
        );
        for bad in [
            good.replace("arity 4", "arity 04"),
            good.replace("arity 4", "arity 17"),
            good.replace("size 5", "size +5"),
            good.replace("size 5", "size 0"),
            good.replace("hash sha256", "hash md5"),
            good.replace("cairn tiles v1", "cairn tiles v2"),
            good.replace("cairn tiles v1", "cairn tiles v3"),
            good.trim_end().to_owned(),
            format!("{good}extra\n"),
            good.replace("root 0x", "root 0X"),
        ] {
            assert!(Checkpoint::decode(bad.as_bytes()).is_err(), "{bad:?}");
        }
    }

    /// A fixed-depth tree's object is version 2 and names its kind, depth
    /// and zero; its empty tree has a root (`zeros[depth]`).
    #[test]
    fn an_imt_checkpoint_names_its_depth_and_zero() {
        let root = [0x11; 32];
        let empty = Checkpoint {
            tree: imt(),
            head: TreeHead {
                size: 0,
                root: Some(root),
            },
        };
        let text = empty.encode();
        assert_eq!(
            text,
            format!(
                "cairn tiles v2\narity 2\nhash poseidon\nkind imt\ndepth 20\nzero 0x{}\nsize 0\nroot 0x{}\n",
                "00".repeat(32),
                "11".repeat(32)
            )
        );
        assert_eq!(Checkpoint::decode(text.as_bytes()), Ok(empty));
        for (bad, want) in [
            (text.replace("root 0x11", "root none0x11"), "root"),
            (
                text.replace(&format!("root 0x{}", "11".repeat(32)), "root none"),
                "size 0 with no root",
            ),
            (
                text.replace("kind imt", "kind indexed"),
                "tree: an indexed tree names no depth",
            ),
            (
                text.replace("kind imt", "kind lean"),
                "tree kind \"lean\" is unknown",
            ),
            (text.replace("depth 20", "depth 020"), "depth \"020\""),
            (
                text.replace("depth 20", "depth 65"),
                "depth 65 is out of range",
            ),
            (
                text.replace("size 0", "size 1048577"),
                "capacity of 1048576",
            ),
            (
                text.replace("zero 0x00", "zero 0xff"),
                "not a canonical BN254",
            ),
            (text.replace("\nkind imt", ""), "7 lines, want 8"),
        ] {
            let error = Checkpoint::decode(bad.as_bytes()).unwrap_err().to_string();
            assert!(error.contains(want), "{bad:?}: {error}");
        }
    }

    proptest::proptest! {
        /// What the fuzz target checks, in every test run: a valid object
        /// with bytes overwritten or cut decodes without panicking, and
        /// only to the head whose encoding it is.
        #[test]
        fn damaged_objects_never_panic_and_decode_only_to_their_own_encoding(
            fixed in proptest::bool::ANY,
            cut in 0usize..400,
            edits in proptest::collection::vec((0usize..400, proptest::num::u8::ANY), 0..4),
        ) {
            let tree = if fixed { imt() } else { lean() };
            let root = Some([0x0b; 32]);
            let text = Checkpoint { tree, head: TreeHead { size: 77, root } }.encode();
            let mut bytes = text.into_bytes();
            for (at, byte) in edits {
                if let Some(slot) = bytes.get_mut(at) {
                    *slot = byte;
                }
            }
            bytes.truncate(cut.max(1));
            if let Ok(checkpoint) = Checkpoint::decode(&bytes) {
                proptest::prop_assert_eq!(checkpoint.encode().into_bytes(), bytes);
            }
        }
    }

    #[test]
    fn signed_checkpoints_decode_to_the_same_head_and_name_their_signers() {
        let signer = Signer::from_seed("example.org/tiles", &[1; 32]).unwrap();
        let c = Checkpoint {
            tree: lean(),
            head: TreeHead::new(12345, [7; 32]),
        };
        let signed = c.encode_signed(&signer).unwrap();
        assert!(signed.starts_with("example.org/tiles\n12345\n"), "{signed}");
        assert!(
            signed.contains("\ncairn-tree kind=lean arity=4 hash=sha256\n\n\u{2014} "),
            "{signed}"
        );
        assert_eq!(Checkpoint::decode(signed.as_bytes()), Ok(c));
        assert_eq!(
            signers(signed.as_bytes()),
            Some(vec![format!("example.org/tiles+{:08x}", signer.id())])
        );
        assert_eq!(signers(c.encode().as_bytes()), None);
        let empty = Checkpoint {
            tree: lean(),
            head: TreeHead::EMPTY,
        };
        assert_eq!(
            empty.encode_signed(&signer),
            Err(CheckpointError::EmptySigned)
        );
        for bad in [
            signed.replace("arity=4", "arity=04"),
            signed.replace("\n12345\n", "\n012345\n"),
            signed.replace("\n\n", "\n"),
            format!("{signed}extra"),
        ] {
            let error = Checkpoint::decode(bad.as_bytes()).unwrap_err();
            assert!(matches!(error, CheckpointError::Neither { .. }), "{error}");
            assert!(error.to_string().contains("nor a signed one"), "{error}");
        }
        // A fixed-depth tree's signed checkpoint names it, the empty tree too.
        let pool = Checkpoint {
            tree: imt(),
            head: TreeHead {
                size: 0,
                root: Some([0x11; 32]),
            },
        };
        let signed = pool.encode_signed(&signer).unwrap();
        assert!(
            signed.contains("cairn-tree kind=imt arity=2 hash=poseidon depth=20 zero=0x00"),
            "{signed}"
        );
        assert_eq!(Checkpoint::decode(signed.as_bytes()), Ok(pool));
    }
}
