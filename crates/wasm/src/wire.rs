//! The byte formats the module's calls read and write (docs/spec.md,
//! "WebAssembly module"): integers little-endian, strings and byte
//! strings length-prefixed with a `u32`. A reader refuses input that ends
//! early or runs on past what a call reads, naming the field.

use cairn_core::kind::KindFields;
use cairn_core::{Arity, Hash, HashKind, TreeConfig, TreeHead, TreeKind};

use crate::error::CallError;

/// Reads one call's input front to back.
#[derive(Debug)]
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes, at: 0 }
    }

    pub(crate) fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], CallError> {
        let left = self.bytes.len() - self.at;
        if n > left {
            return Err(CallError::Short {
                field,
                want: n,
                got: left,
            });
        }
        let out = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(out)
    }

    pub(crate) fn u8(&mut self, field: &'static str) -> Result<u8, CallError> {
        Ok(self.take(1, field)?[0])
    }

    pub(crate) fn u32(&mut self, field: &'static str) -> Result<u32, CallError> {
        let b = self.take(4, field)?;
        Ok(u32::from_le_bytes(b.try_into().expect("4 bytes")))
    }

    pub(crate) fn u64(&mut self, field: &'static str) -> Result<u64, CallError> {
        let b = self.take(8, field)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    pub(crate) fn hash(&mut self, field: &'static str) -> Result<Hash, CallError> {
        Ok(self.take(32, field)?.try_into().expect("32 bytes"))
    }

    /// A `u32` length, then that many bytes.
    pub(crate) fn bytes(&mut self, field: &'static str) -> Result<&'a [u8], CallError> {
        let n = self.u32(field)? as usize;
        self.take(n, field)
    }

    pub(crate) fn text(&mut self, field: &'static str) -> Result<&'a str, CallError> {
        std::str::from_utf8(self.bytes(field)?).map_err(|_| CallError::NotText { field })
    }

    /// Everything not read yet.
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        let out = &self.bytes[self.at..];
        self.at = self.bytes.len();
        out
    }

    /// Refuses bytes past the last field read.
    pub(crate) fn end(&self) -> Result<(), CallError> {
        let extra = self.bytes.len() - self.at;
        if extra != 0 {
            return Err(CallError::Trailing { extra });
        }
        Ok(())
    }

    /// A tree: arity, hash id, kind id (0 Lean, then the ids of
    /// [`TreeKind::fields`]), depth, zero value (36 bytes), checked.
    pub(crate) fn tree(&mut self) -> Result<TreeConfig, CallError> {
        let arity = Arity::new(u64::from(self.u8("arity")?))?;
        let id = self.u8("hash")?;
        let hash = HashKind::from_id(id).ok_or(CallError::UnknownHash { id })?;
        let fields = KindFields {
            id: self.u8("kind")?,
            depth: self.u8("depth")?,
            zero: self.hash("zero")?,
        };
        let kind = if fields.id == 0 {
            if fields.depth != 0 || fields.zero != [0; 32] {
                return Err(CallError::LeanFields);
            }
            TreeKind::Lean
        } else {
            TreeKind::from_fields(&fields)?
        };
        let config = TreeConfig::new(arity, hash).with_kind(kind);
        config.check()?;
        Ok(config)
    }

    /// A head: size, then a flag byte (1 with a root, 0 without) and 32
    /// bytes (zero without a root).
    pub(crate) fn head(&mut self) -> Result<TreeHead, CallError> {
        let size = self.u64("head size")?;
        let flag = self.u8("head root flag")?;
        let root = self.hash("head root")?;
        match flag {
            1 => Ok(TreeHead::new(size, root)),
            0 if root == [0; 32] => Ok(TreeHead { size, root: None }),
            got => Err(CallError::RootFlag { got }),
        }
    }
}

/// Writes a head as [`Reader::head`] reads it.
pub(crate) fn put_head(out: &mut Vec<u8>, head: &TreeHead) {
    out.extend_from_slice(&head.size.to_le_bytes());
    match head.root {
        Some(root) => {
            out.push(1);
            out.extend_from_slice(&root);
        }
        None => {
            out.push(0);
            out.extend_from_slice(&[0; 32]);
        }
    }
}

/// Writes a tree as [`Reader::tree`] reads it.
pub(crate) fn put_tree(out: &mut Vec<u8>, config: &TreeConfig) {
    out.push(u8::try_from(config.arity.get()).expect("arity is 2..=16"));
    out.push(config.hash.id());
    match config.kind.fields() {
        Some(fields) => {
            out.push(fields.id);
            out.push(fields.depth);
            out.extend_from_slice(&fields.zero);
        }
        None => out.extend_from_slice(&[0; 34]),
    }
}

/// A `u32` length, then `bytes`.
pub(crate) fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    let n = u32::try_from(bytes.len()).expect("an output below 4 GiB");
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(bytes);
}
