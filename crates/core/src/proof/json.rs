//! The JSON encoding of both proof kinds: hashes as 0x-hex, numbers as JSON
//! integers, siblings grouped per hashing level so a reader can follow them.
//! Decoding checks every level's length against the derived shape. A proof
//! of a fixed-depth tree is version 2 and names its tree in a `tree` object;
//! a Lean tree's proof is version 1 and has none.
//!
//!
//! Encoding is written by hand into bytes, in exactly the layout of
//! serde_json's pretty printer over the documents below (two-space indent,
//! `[]` for an empty array; a test compares the two over many shapes): a
//! server sends proofs as JSON all day, and going through the pretty
//! printer with a string per hash measured as a large part of a proof
//! request. The CLI, the server and the `serde` feature all use it.

use std::io::Write as _;

use serde::{Deserialize, Serialize};

use super::{
    ConsistencyProof, DecodeError, FORMAT_VERSION, FORMAT_VERSION_KINDS, MembershipProof,
    check_decoded_kind,
};
use crate::Arity;
use crate::hash::{Hash, HashKind};
#[cfg(any(test, feature = "serde"))]
use crate::hex::to_hex;
use crate::hex::{hex_bytes, parse_hash};
use crate::kind::TreeKind;
use crate::shape::{PathStep, Shape};

/// The tree of a version 2 proof: `{"kind": "imt", "depth": D, "zero": "0x.."}`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TreeJson {
    kind: String,
    /// An imt's; absent for an indexed tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    depth: Option<u32>,
    /// An imt's; absent for an indexed tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    zero: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MembershipJson {
    version: u64,
    kind: String,
    arity: u64,
    hash: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tree: Option<TreeJson>,
    index: u64,
    size: u64,
    leaf: String,
    siblings: Vec<Vec<String>>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LevelJson {
    level: u32,
    left: Vec<String>,
    right: Vec<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConsistencyJson {
    version: u64,
    kind: String,
    arity: u64,
    hash: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tree: Option<TreeJson>,
    old_size: u64,
    new_size: u64,
    edge_leaf: Option<String>,
    levels: Vec<LevelJson>,
}

#[cfg(any(test, feature = "serde"))]
fn hex_list(values: &[Hash]) -> Vec<String> {
    values.iter().map(to_hex).collect()
}

fn indent(out: &mut Vec<u8>, depth: usize) {
    for _ in 0..depth {
        out.extend_from_slice(b"  ");
    }
}

fn push_quoted_hex(out: &mut Vec<u8>, value: &Hash) {
    out.push(b'"');
    out.extend_from_slice(&hex_bytes(value));
    out.push(b'"');
}

/// A JSON array of hashes whose opening bracket is at `depth`.
fn hash_array(out: &mut Vec<u8>, values: &[Hash], depth: usize) {
    if values.is_empty() {
        out.extend_from_slice(b"[]");
        return;
    }
    out.push(b'[');
    for (position, value) in values.iter().enumerate() {
        out.extend_from_slice(if position == 0 { b"\n" } else { b",\n" });
        indent(out, depth + 1);
        push_quoted_hex(out, value);
    }
    out.push(b'\n');
    indent(out, depth);
    out.push(b']');
}

fn field(out: &mut Vec<u8>, name: &str) {
    out.extend_from_slice(b",\n  \"");
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\": ");
}

/// The fields every proof starts with; a proof of a tree of another kind
/// than Lean is version 2 and names its tree.
fn header(out: &mut Vec<u8>, kind: &str, arity: u64, hash: &str, tree: TreeKind) {
    let version = match tree {
        TreeKind::Lean => FORMAT_VERSION,
        _ => FORMAT_VERSION_KINDS,
    };
    let _ = write!(
        out,
        "{{\n  \"version\": {version},\n  \"kind\": \"{kind}\",\n  \"arity\": {arity},\n  \"hash\": \"{hash}\""
    );
    match tree {
        TreeKind::Fixed { depth, zero } => {
            let _ = write!(
                out,
                ",\n  \"tree\": {{\n    \"kind\": \"{}\",\n    \"depth\": {depth},\n    \"zero\": ",
                tree.name()
            );
            push_quoted_hex(out, &zero);
            out.extend_from_slice(b"\n  }");
        }
        TreeKind::Indexed => {
            let _ = write!(
                out,
                ",\n  \"tree\": {{\n    \"kind\": \"{}\"\n  }}",
                tree.name()
            );
        }
        TreeKind::Lean => {}
    }
}

fn into_string(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| unreachable!("proof JSON is ASCII: {e}"))
}

/// The version and `tree` object a proof of a tree of `kind` carries.
#[cfg(any(test, feature = "serde"))]
fn tree_doc(kind: &TreeKind) -> (u64, Option<TreeJson>) {
    match kind {
        TreeKind::Fixed { depth, zero } => (
            u64::from(FORMAT_VERSION_KINDS),
            Some(TreeJson {
                kind: kind.name().to_owned(),
                depth: Some(*depth),
                zero: Some(to_hex(zero)),
            }),
        ),
        TreeKind::Indexed => (
            u64::from(FORMAT_VERSION_KINDS),
            Some(TreeJson {
                kind: kind.name().to_owned(),
                depth: None,
                zero: None,
            }),
        ),
        TreeKind::Lean => (u64::from(FORMAT_VERSION), None),
    }
}

/// The tree kind a version and `tree` object name: version 1 has no
/// `tree` (a Lean tree), version 2 must have one.
fn tree_of(version: u64, tree: Option<&TreeJson>) -> Result<TreeKind, DecodeError> {
    match (version, tree) {
        (1, None) => Ok(TreeKind::Lean),
        (1, Some(_)) => Err(DecodeError::TreeKind(
            "a version 1 proof is of a lean tree and has no \"tree\" field".to_owned(),
        )),
        (2, None) => Err(DecodeError::TreeKind(
            "a version 2 proof needs a \"tree\" field".to_owned(),
        )),
        (2, Some(tree)) => {
            let zero = tree.zero.as_deref().map(parse_hash).transpose()?;
            TreeKind::from_name(&tree.kind, tree.depth, zero)
                .map_err(|e| DecodeError::TreeKind(e.to_string()))
        }
        (other, _) => Err(DecodeError::UnsupportedVersion {
            got: other,
            want: FORMAT_VERSION_KINDS,
        }),
    }
}

fn check_common(
    version: u64,
    kind: &str,
    want_kind: &'static str,
    arity: u64,
    hash: &str,
) -> Result<(Arity, HashKind), DecodeError> {
    if version != u64::from(FORMAT_VERSION) && version != u64::from(FORMAT_VERSION_KINDS) {
        return Err(DecodeError::UnsupportedVersion {
            got: version,
            want: FORMAT_VERSION_KINDS,
        });
    }
    if kind != want_kind {
        return Err(DecodeError::WrongKind {
            got: kind.to_owned(),
            want: want_kind,
        });
    }
    let arity = Arity::new(arity).map_err(|_| DecodeError::BadArity { got: arity })?;
    let hash = hash
        .parse::<HashKind>()
        .map_err(|_| DecodeError::UnknownHash {
            got: format!("{hash:?}"),
        })?;
    Ok((arity, hash))
}

fn parse_level(
    values: &[String],
    level: usize,
    what: &'static str,
    want: usize,
    out: &mut Vec<Hash>,
) -> Result<(), DecodeError> {
    if values.len() != want {
        return Err(DecodeError::WrongLevelLength {
            level,
            what,
            got: values.len(),
            want,
        });
    }
    for value in values {
        out.push(parse_hash(value)?);
    }
    Ok(())
}

fn json_error(error: serde_json::Error) -> DecodeError {
    DecodeError::Json(error.to_string())
}

impl MembershipProof {
    /// The JSON encoding (pretty-printed).
    pub fn to_json(&self) -> String {
        into_string(self.json_bytes())
    }

    /// The JSON encoding as bytes: [`MembershipProof::to_json`] without
    /// the UTF-8 check of a `String`.
    pub fn json_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256 + 80 * self.siblings.len());
        header(
            &mut out,
            "membership",
            self.arity.as_u64(),
            self.hash.name(),
            self.kind(),
        );
        field(&mut out, "index");
        let _ = write!(out, "{}", self.index);
        field(&mut out, "size");
        let _ = write!(out, "{}", self.size);
        field(&mut out, "leaf");
        push_quoted_hex(&mut out, &self.leaf);
        field(&mut out, "siblings");
        let mut levels = self.levels().peekable();
        if levels.peek().is_none() {
            out.extend_from_slice(b"[]");
        } else {
            out.push(b'[');
            for (position, (_, siblings)) in levels.enumerate() {
                out.extend_from_slice(if position == 0 { b"\n" } else { b",\n" });
                indent(&mut out, 2);
                hash_array(&mut out, siblings, 2);
            }
            out.extend_from_slice(b"\n  ]");
        }
        out.extend_from_slice(b"\n}");
        out
    }

    /// Decodes a JSON membership proof, checking each level's length.
    pub fn from_json(text: &str) -> Result<MembershipProof, DecodeError> {
        MembershipProof::from_doc(serde_json::from_str(text).map_err(json_error)?)
    }

    #[cfg(any(test, feature = "serde"))]
    fn doc(&self) -> MembershipJson {
        let (version, tree) = tree_doc(&self.kind);
        MembershipJson {
            version,
            kind: "membership".to_owned(),
            arity: self.arity.as_u64(),
            hash: self.hash.name().to_owned(),
            tree,
            index: self.index,
            size: self.size,
            leaf: to_hex(&self.leaf),
            siblings: self
                .levels()
                .map(|(_, siblings)| hex_list(siblings))
                .collect(),
        }
    }

    fn from_doc(doc: MembershipJson) -> Result<MembershipProof, DecodeError> {
        let (arity, hash) =
            check_common(doc.version, &doc.kind, "membership", doc.arity, &doc.hash)?;
        let tree = tree_of(doc.version, doc.tree.as_ref())?;
        if doc.index >= doc.size {
            return Err(DecodeError::IndexOutOfRange {
                index: doc.index,
                size: doc.size,
            });
        }
        check_decoded_kind(arity, hash, tree, doc.size)?;
        let shape = Shape::new(arity, tree);
        let steps = shape.path(doc.index, doc.size).filter(PathStep::hashes);
        let want_levels = steps.clone().count();
        if doc.siblings.len() != want_levels {
            return Err(DecodeError::WrongLevelCount {
                got: doc.siblings.len(),
                want: want_levels,
            });
        }
        let mut siblings = Vec::with_capacity(shape.membership_sibling_count(doc.index, doc.size));
        for (position, (step, level)) in steps.zip(&doc.siblings).enumerate() {
            parse_level(
                level,
                position,
                "siblings",
                step.sibling_count(),
                &mut siblings,
            )?;
        }
        Ok(MembershipProof {
            arity,
            hash,
            kind: tree,
            index: doc.index,
            size: doc.size,
            leaf: parse_hash(&doc.leaf)?,
            siblings,
        })
    }
}

impl ConsistencyProof {
    /// The JSON encoding (pretty-printed).
    pub fn to_json(&self) -> String {
        into_string(self.json_bytes())
    }

    /// The JSON encoding as bytes: [`ConsistencyProof::to_json`] without
    /// the UTF-8 check of a `String`.
    pub fn json_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(320 + 80 * self.hashes.len());
        header(
            &mut out,
            "consistency",
            self.arity.as_u64(),
            self.hash.name(),
            self.kind(),
        );
        field(&mut out, "old_size");
        let _ = write!(out, "{}", self.old_size);
        field(&mut out, "new_size");
        let _ = write!(out, "{}", self.new_size);
        field(&mut out, "edge_leaf");
        match &self.edge_leaf {
            Some(leaf) => push_quoted_hex(&mut out, leaf),
            None => out.extend_from_slice(b"null"),
        }
        field(&mut out, "levels");
        let mut levels = self.levels().peekable();
        if levels.peek().is_none() {
            out.extend_from_slice(b"[]");
        } else {
            out.push(b'[');
            for (position, (step, left, right)) in levels.enumerate() {
                out.extend_from_slice(if position == 0 { b"\n" } else { b",\n" });
                indent(&mut out, 2);
                let _ = write!(
                    out,
                    "{{\n      \"level\": {},\n      \"left\": ",
                    step.level
                );
                hash_array(&mut out, left, 3);
                out.extend_from_slice(b",\n      \"right\": ");
                hash_array(&mut out, right, 3);
                out.extend_from_slice(b"\n    }");
            }
            out.extend_from_slice(b"\n  ]");
        }
        out.extend_from_slice(b"\n}");
        out
    }

    /// Decodes a JSON consistency proof, checking each level's lengths.
    pub fn from_json(text: &str) -> Result<ConsistencyProof, DecodeError> {
        ConsistencyProof::from_doc(serde_json::from_str(text).map_err(json_error)?)
    }

    #[cfg(any(test, feature = "serde"))]
    fn doc(&self) -> ConsistencyJson {
        let (version, tree) = tree_doc(&self.kind);
        ConsistencyJson {
            version,
            kind: "consistency".to_owned(),
            arity: self.arity.as_u64(),
            hash: self.hash.name().to_owned(),
            tree,
            old_size: self.old_size,
            new_size: self.new_size,
            edge_leaf: self.edge_leaf.as_ref().map(to_hex),
            levels: self
                .levels()
                .map(|(step, left, right)| LevelJson {
                    level: step.level,
                    left: hex_list(left),
                    right: hex_list(right),
                })
                .collect(),
        }
    }

    fn from_doc(doc: ConsistencyJson) -> Result<ConsistencyProof, DecodeError> {
        let (arity, hash) =
            check_common(doc.version, &doc.kind, "consistency", doc.arity, &doc.hash)?;
        let tree = tree_of(doc.version, doc.tree.as_ref())?;
        let (old_size, new_size) = (doc.old_size, doc.new_size);
        if old_size > new_size {
            return Err(DecodeError::OldSizeAboveNew { old_size, new_size });
        }
        check_decoded_kind(arity, hash, tree, new_size)?;
        let shape = Shape::new(arity, tree);
        let edge_leaf = match (old_size, &doc.edge_leaf) {
            (0, None) => None,
            (0, Some(_)) | (_, None) => {
                return Err(DecodeError::EdgeLeaf {
                    present: doc.edge_leaf.is_some(),
                    old_size,
                });
            }
            (_, Some(text)) => Some(parse_hash(text)?),
        };
        let steps: Vec<_> = if old_size == 0 {
            Vec::new()
        } else {
            shape
                .consistency_steps(old_size, new_size)
                .filter(|step| step.left + step.right > 0)
                .collect()
        };
        if doc.levels.len() != steps.len() {
            return Err(DecodeError::WrongLevelCount {
                got: doc.levels.len(),
                want: steps.len(),
            });
        }
        let mut hashes = Vec::with_capacity(shape.consistency_hash_count(old_size, new_size));
        for (position, (step, level)) in steps.iter().zip(&doc.levels).enumerate() {
            if level.level != step.level {
                return Err(DecodeError::Json(format!(
                    "level entry {position} is labelled level {}, want level {}",
                    level.level, step.level
                )));
            }
            parse_level(&level.left, position, "left hashes", step.left, &mut hashes)?;
            parse_level(
                &level.right,
                position,
                "right hashes",
                step.right,
                &mut hashes,
            )?;
        }
        Ok(ConsistencyProof {
            arity,
            hash,
            kind: tree,
            old_size,
            new_size,
            edge_leaf,
            hashes,
        })
    }
}

/// With the `serde` feature, proofs serialize as the proof JSON of
/// docs/spec.md in any serde format, and deserializing checks them exactly
/// as `from_json` does.
#[cfg(feature = "serde")]
mod serde_impls {
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::{ConsistencyJson, ConsistencyProof, MembershipJson, MembershipProof};

    impl Serialize for MembershipProof {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            self.doc().serialize(serializer)
        }
    }

    impl<'de> Deserialize<'de> for MembershipProof {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            MembershipProof::from_doc(MembershipJson::deserialize(deserializer)?)
                .map_err(D::Error::custom)
        }
    }

    impl Serialize for ConsistencyProof {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            self.doc().serialize(serializer)
        }
    }

    impl<'de> Deserialize<'de> for ConsistencyProof {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            ConsistencyProof::from_doc(ConsistencyJson::deserialize(deserializer)?)
                .map_err(D::Error::custom)
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Arity, HashKind, LeanImt, TreeConfig};

    /// The hand-written encoder against serde_json's pretty printer over
    /// the documents (the reference layout), byte for byte.
    #[test]
    fn proofs_are_byte_for_byte_the_pretty_printed_documents() {
        let leaves: Vec<[u8; 32]> = (0u8..70).map(|i| [i; 32]).collect();
        for n in [2u64, 3, 4, 5, 8, 16] {
            let config = TreeConfig::new(Arity::new(n).unwrap(), HashKind::Blake3);
            let mut tree = LeanImt::from_leaves(config, &leaves).unwrap();
            for size in 0..=70u64 {
                for index in 0..size {
                    let proof = tree.prove_at(index, size).unwrap();
                    let reference = serde_json::to_string_pretty(&proof.doc()).unwrap();
                    assert_eq!(proof.to_json(), reference, "n {n} {index}/{size}");
                    assert_eq!(proof.json_bytes(), reference.as_bytes());
                }
                for old in (0..=size).step_by(3).chain([size]) {
                    let proof = tree.prove_consistency(old, size).unwrap();
                    let reference = serde_json::to_string_pretty(&proof.doc()).unwrap();
                    assert_eq!(proof.to_json(), reference, "n {n} {old}..{size}");
                }
            }
        }
    }
}
