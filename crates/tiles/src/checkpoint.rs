//! The checkpoint object: the head a tile store publishes, written after
//! every tile it needs (docs/spec.md, "Tiles"). Plain text, one field per
//! line, parsed strictly: a client trusts it only as far as it trusts the
//! place it fetched it from (or, once signed, its signature).

use cairn_core::hex::{parse_hash, to_hex};
use cairn_core::{Arity, HashKind, TreeHead};

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

    /// Parses a checkpoint object, refusing anything [`Checkpoint::encode`]
    /// would not write.
    pub fn decode(text: &[u8]) -> Result<Checkpoint, String> {
        let text = std::str::from_utf8(text).map_err(|_| "not UTF-8".to_owned())?;
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
}
