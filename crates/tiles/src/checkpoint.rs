//! The checkpoint object: the head a tile store publishes, written after
//! every tile it needs (docs/spec.md, "Tiles"), in one of two forms: the
//! unsigned five lines (`cairn tiles v1`, one field per line), or, when
//! the publisher has a key, cairn's signed checkpoint (the C2SP signed
//! note that `GET /v1/checkpoint` serves). Both are parsed strictly;
//! [`Checkpoint::decode`] reads either WITHOUT checking a signature (a
//! reader with no key trusts the place it fetched the object from), and
//! `SignedBy` (signed.rs) checks one against trusted keys.

use cairn_core::hex::{parse_hash, to_hex};
use cairn_core::{Arity, HashKind, TreeConfig, TreeHead};
use cairn_note::{Signer, TreeLine};

use crate::layout::Layout;

/// The first line of every checkpoint object.
pub const MAGIC: &str = "cairn tiles v1";

/// A tile store's published head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// The tree's arity and hash.
    pub layout: Layout,
    /// The head every published tile belongs to.
    pub head: TreeHead,
}

impl Checkpoint {
    /// The object's text.
    pub fn encode(&self) -> String {
        let root = self
            .head
            .root
            .map_or_else(|| "none".to_owned(), |r| to_hex(&r));
        format!(
            "{MAGIC}\narity {}\nhash {}\nsize {}\nroot {root}\n",
            self.layout.arity,
            self.layout.hash.name(),
            self.head.size
        )
    }

    /// The object's text signed by `signer`: cairn's signed checkpoint
    /// (docs/spec.md, "Signed checkpoints"), whose origin is the signer's
    /// name. The empty tree has no root, so no signed checkpoint: refused.
    pub fn encode_signed(&self, signer: &Signer) -> Result<String, String> {
        let root = self.head.root.ok_or_else(|| {
            "the tree is empty: cairn's empty tree has no root, so no signed checkpoint names it"
                .to_owned()
        })?;
        let tree = TreeLine::lean_imt(&TreeConfig::new(self.layout.arity, self.layout.hash));
        cairn_note::sign_head(signer, &tree, self.head.size, &root).map_err(|e| e.to_string())
    }

    /// Parses a checkpoint object of either form, refusing anything
    /// [`Checkpoint::encode`] or [`Checkpoint::encode_signed`] would not
    /// write. A signed object's signature is NOT checked here.
    pub fn decode(text: &[u8]) -> Result<Checkpoint, String> {
        let text = std::str::from_utf8(text).map_err(|_| "not UTF-8".to_owned())?;
        if !is_unsigned(text) {
            return decode_signed(text);
        }
        let lines: Vec<&str> = text.split('\n').collect();
        if lines.len() != 6 || !lines[5].is_empty() {
            return Err(format!(
                "{} lines, want 5 each ending in a newline",
                lines.len().saturating_sub(1)
            ));
        }
        if lines[0] != MAGIC {
            return Err(format!("first line {:?}, want {MAGIC:?}", lines[0]));
        }
        let field = |line: &str, name: &str| -> Result<String, String> {
            line.strip_prefix(name)
                .and_then(|rest| rest.strip_prefix(' '))
                .map(str::to_owned)
                .ok_or_else(|| format!("line {line:?}, want \"{name} ...\""))
        };
        let arity_text = field(lines[1], "arity")?;
        let arity = arity_text
            .parse::<u64>()
            .ok()
            .filter(|n| n.to_string() == arity_text)
            .and_then(|n| Arity::new(n).ok())
            .ok_or_else(|| format!("arity {arity_text:?} is not 2..=16"))?;
        let hash_text = field(lines[2], "hash")?;
        let hash: HashKind = hash_text
            .parse()
            .map_err(|_| format!("unknown hash {hash_text:?}"))?;
        let size_text = field(lines[3], "size")?;
        let size = size_text
            .parse::<u64>()
            .ok()
            .filter(|s| s.to_string() == size_text)
            .ok_or_else(|| format!("size {size_text:?} is not a decimal count"))?;
        let root_text = field(lines[4], "root")?;
        let root = match root_text.as_str() {
            "none" => None,
            hex => {
                let root = parse_hash(hex).map_err(|e| format!("root: {e}"))?;
                // One spelling only: 0x and lowercase digits.
                if to_hex(&root) != hex {
                    return Err(format!(
                        "root {hex:?} is not 0x and 64 lowercase hex digits"
                    ));
                }
                Some(root)
            }
        };
        if root.is_some() != (size > 0) {
            return Err(format!(
                "size {size} with {} root",
                if root.is_some() { "a" } else { "no" }
            ));
        }
        if let Some(root) = &root
            && !hash.accepts(root)
        {
            return Err(format!(
                "root {} is not a canonical {hash} value",
                to_hex(root)
            ));
        }
        Ok(Checkpoint {
            layout: Layout::new(arity, hash),
            head: TreeHead { size, root },
        })
    }
}

/// Whether `text` is (meant to be) the unsigned form: its first line is
/// [`MAGIC`].
pub(crate) fn is_unsigned(text: &str) -> bool {
    text.split('\n').next() == Some(MAGIC)
}

/// The head of a signed checkpoint object, its signature unchecked.
fn decode_signed(text: &str) -> Result<Checkpoint, String> {
    let head = cairn_note::read_head_unverified(text).map_err(|e| {
        let first = text.split('\n').next().unwrap_or_default();
        format!(
            "neither an unsigned checkpoint (first line {MAGIC:?}, got {:?}) nor a signed one: {e}",
            first.chars().take(80).collect::<String>()
        )
    })?;
    if !head.tree.hash.accepts(&head.root) {
        return Err(format!(
            "root {} is not a canonical {} value",
            to_hex(&head.root),
            head.tree.hash
        ));
    }
    Ok(Checkpoint {
        layout: Layout::new(head.tree.arity, head.tree.hash),
        head: TreeHead::new(head.size, head.root),
    })
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
mod tests {
    use super::*;

    #[test]
    fn checkpoints_round_trip_and_anything_else_is_refused() {
        let layout = Layout::new(Arity::new(4).unwrap(), HashKind::Sha256);
        for head in [TreeHead::EMPTY, TreeHead::new(12345, [7; 32])] {
            let c = Checkpoint { layout, head };
            assert_eq!(Checkpoint::decode(c.encode().as_bytes()), Ok(c));
        }
        let good = Checkpoint {
            layout,
            head: TreeHead::new(5, [1; 32]),
        }
        .encode();
        for bad in [
            good.replace("arity 4", "arity 04"),
            good.replace("arity 4", "arity 17"),
            good.replace("size 5", "size +5"),
            good.replace("size 5", "size 0"),
            good.replace("hash sha256", "hash md5"),
            good.replace("cairn tiles v1", "cairn tiles v2"),
            good.trim_end().to_owned(),
            format!("{good}extra\n"),
            good.replace("root 0x", "root 0X"),
        ] {
            assert!(Checkpoint::decode(bad.as_bytes()).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn signed_checkpoints_decode_to_the_same_head_and_name_their_signers() {
        let layout = Layout::new(Arity::new(4).unwrap(), HashKind::Sha256);
        let signer = Signer::from_seed("example.org/tiles", &[1; 32]).unwrap();
        let c = Checkpoint {
            layout,
            head: TreeHead::new(12345, [7; 32]),
        };
        let signed = c.encode_signed(&signer).unwrap();
        assert!(signed.starts_with("example.org/tiles\n12345\n"), "{signed}");
        assert!(
            signed.contains("\ncairn-tree kind=leanimt arity=4 hash=sha256\n\n\u{2014} "),
            "{signed}"
        );
        assert_eq!(Checkpoint::decode(signed.as_bytes()), Ok(c));
        assert_eq!(
            signers(signed.as_bytes()),
            Some(vec![format!("example.org/tiles+{:08x}", signer.id())])
        );
        assert_eq!(signers(c.encode().as_bytes()), None);
        let empty = Checkpoint {
            layout,
            head: TreeHead::EMPTY,
        };
        assert!(empty.encode_signed(&signer).unwrap_err().contains("empty"));
        for bad in [
            signed.replace("arity=4", "arity=04"),
            signed.replace("\n12345\n", "\n012345\n"),
            signed.replace("\n\n", "\n"),
            format!("{signed}extra"),
        ] {
            let error = Checkpoint::decode(bad.as_bytes()).unwrap_err();
            assert!(error.contains("nor a signed one"), "{error}");
        }
    }
}
