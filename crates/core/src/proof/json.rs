//! The JSON encoding of both proof kinds: hashes as 0x-hex, numbers as JSON
//! integers, siblings grouped per hashing level so a reader can follow them.
//! Decoding checks every level's length against the derived shape. A proof
//! of a fixed-depth tree is version 2 and names its tree in a `tree` object;
//! a Lean tree's proof is version 1 and has none.

use serde::{Deserialize, Serialize};

use super::{
    ConsistencyProof, DecodeError, FORMAT_VERSION, FORMAT_VERSION_KINDS, MembershipProof,
    check_decoded_kind,
};
use crate::Arity;
use crate::hash::{Hash, HashKind};
use crate::hex::{parse_hash, to_hex};
use crate::kind::TreeKind;
use crate::shape::{PathStep, Shape};

/// The tree of a version 2 proof: `{"kind": "imt", "depth": D, "zero": "0x.."}`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TreeJson {
    kind: String,
    depth: u32,
    zero: String,
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

fn hex_list(values: &[Hash]) -> Vec<String> {
    values.iter().map(to_hex).collect()
}

/// The version and `tree` object a proof of a tree of `kind` carries.
fn tree_doc(kind: &TreeKind) -> (u64, Option<TreeJson>) {
    match kind {
        TreeKind::Fixed { depth, zero } => (
            u64::from(FORMAT_VERSION_KINDS),
            Some(TreeJson {
                kind: kind.name().to_owned(),
                depth: *depth,
                zero: to_hex(zero),
            }),
        ),
        _ => (u64::from(FORMAT_VERSION), None),
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
            if tree.kind != "imt" {
                return Err(DecodeError::TreeKind(format!(
                    "tree kind {:?} is unknown, want \"imt\"",
                    tree.kind
                )));
            }
            Ok(TreeKind::Fixed {
                depth: tree.depth,
                zero: parse_hash(&tree.zero)?,
            })
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
        serde_json::to_string_pretty(&self.doc())
            .unwrap_or_else(|e| unreachable!("serialising plain data: {e}"))
    }

    /// Decodes a JSON membership proof, checking each level's length.
    pub fn from_json(text: &str) -> Result<MembershipProof, DecodeError> {
        MembershipProof::from_doc(serde_json::from_str(text).map_err(json_error)?)
    }

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
        serde_json::to_string_pretty(&self.doc())
            .unwrap_or_else(|e| unreachable!("serialising plain data: {e}"))
    }

    /// Decodes a JSON consistency proof, checking each level's lengths.
    pub fn from_json(text: &str) -> Result<ConsistencyProof, DecodeError> {
        ConsistencyProof::from_doc(serde_json::from_str(text).map_err(json_error)?)
    }

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
