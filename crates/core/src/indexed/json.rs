//! The JSON encoding of the indexed proofs: hashes as 0x-hex, integers as
//! JSON numbers, siblings grouped per hashing level (as for membership
//! proofs). Unknown fields are refused; every level's length is checked
//! against the shape the sizes imply.

use serde::{Deserialize, Serialize};

use super::leaf::IndexedLeaf;
use super::proof::{AbsenceProof, IndexedMembershipProof, InsertionStep, InsertionWitness};
use crate::Arity;
use crate::hash::{Hash, HashKind};
use crate::hex::{parse_hash, to_hex};
use crate::proof::{DecodeError, FORMAT_VERSION};
use crate::shape::{Path, PathStep};

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LeafJson {
    value: String,
    next_index: u64,
    next_value: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AbsenceJson {
    version: u64,
    kind: String,
    arity: u64,
    hash: String,
    value: String,
    size: u64,
    low_index: u64,
    low_leaf: LeafJson,
    siblings: Vec<Vec<String>>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MembershipJson {
    version: u64,
    kind: String,
    arity: u64,
    hash: String,
    index: u64,
    size: u64,
    leaf: LeafJson,
    siblings: Vec<Vec<String>>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StepJson {
    value: String,
    low_index: u64,
    low_leaf: LeafJson,
    low_siblings: Vec<Vec<String>>,
    new_siblings: Vec<Vec<String>>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct InsertionJson {
    version: u64,
    kind: String,
    arity: u64,
    hash: String,
    old_size: u64,
    insertions: Vec<StepJson>,
}

fn leaf_doc(leaf: &IndexedLeaf) -> LeafJson {
    LeafJson {
        value: to_hex(&leaf.value),
        next_index: leaf.next_index,
        next_value: to_hex(&leaf.next_value),
    }
}

fn leaf_from(doc: &LeafJson) -> Result<IndexedLeaf, DecodeError> {
    Ok(IndexedLeaf {
        value: parse_hash(&doc.value)?,
        next_index: doc.next_index,
        next_value: parse_hash(&doc.next_value)?,
    })
}

/// Siblings grouped per hashing level of the path of `index` at `size`.
fn grouped(siblings: &[Hash], index: u64, size: u64, arity: Arity) -> Vec<Vec<String>> {
    let mut rest = siblings;
    Path::new(index, size, arity)
        .filter(PathStep::hashes)
        .map(|step| {
            let (level, tail) = rest.split_at(step.sibling_count().min(rest.len()));
            rest = tail;
            level.iter().map(to_hex).collect()
        })
        .collect()
}

/// The flat siblings of the path of `index` at `size` from per-level lists,
/// each checked against the derived shape.
fn flatten(
    levels: &[Vec<String>],
    index: u64,
    size: u64,
    arity: Arity,
) -> Result<Vec<Hash>, DecodeError> {
    if index >= size {
        return Err(DecodeError::IndexOutOfRange { index, size });
    }
    let steps: Vec<PathStep> = Path::new(index, size, arity)
        .filter(PathStep::hashes)
        .collect();
    if levels.len() != steps.len() {
        return Err(DecodeError::WrongLevelCount {
            got: levels.len(),
            want: steps.len(),
        });
    }
    let mut out = Vec::new();
    for (position, (step, level)) in steps.iter().zip(levels).enumerate() {
        if level.len() != step.sibling_count() {
            return Err(DecodeError::WrongLevelLength {
                level: position,
                what: "siblings",
                got: level.len(),
                want: step.sibling_count(),
            });
        }
        for value in level {
            out.push(parse_hash(value)?);
        }
    }
    Ok(out)
}

fn check_common(
    version: u64,
    kind: &str,
    want_kind: &'static str,
    arity: u64,
    hash: &str,
) -> Result<(Arity, HashKind), DecodeError> {
    if version != u64::from(FORMAT_VERSION) {
        return Err(DecodeError::UnsupportedVersion {
            got: version,
            want: FORMAT_VERSION,
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

fn json_error(error: serde_json::Error) -> DecodeError {
    DecodeError::Json(error.to_string())
}

/// Parses `text`, refusing another kind of proof by its name before its
/// fields are checked (so the error names the kind, not a field).
fn parse<T: serde::de::DeserializeOwned>(text: &str, want: &'static str) -> Result<T, DecodeError> {
    let doc: serde_json::Value = serde_json::from_str(text).map_err(json_error)?;
    if let Some(kind) = doc.get("kind").and_then(serde_json::Value::as_str)
        && kind != want
    {
        return Err(DecodeError::WrongKind {
            got: kind.to_owned(),
            want,
        });
    }
    serde_json::from_value(doc).map_err(json_error)
}

fn pretty<T: Serialize>(doc: &T) -> String {
    serde_json::to_string_pretty(doc)
        .unwrap_or_else(|e| unreachable!("serialising plain data: {e}"))
}

impl AbsenceProof {
    /// The JSON encoding (pretty-printed).
    pub fn to_json(&self) -> String {
        pretty(&AbsenceJson {
            version: u64::from(FORMAT_VERSION),
            kind: "absence".to_owned(),
            arity: self.arity.as_u64(),
            hash: self.hash.name().to_owned(),
            value: to_hex(&self.value),
            size: self.size,
            low_index: self.low_index,
            low_leaf: leaf_doc(&self.low),
            siblings: grouped(&self.siblings, self.low_index, self.size, self.arity),
        })
    }

    /// Decodes a JSON absence proof.
    pub fn from_json(text: &str) -> Result<AbsenceProof, DecodeError> {
        let doc: AbsenceJson = parse(text, "absence")?;
        let (arity, hash) = check_common(doc.version, &doc.kind, "absence", doc.arity, &doc.hash)?;
        Ok(AbsenceProof {
            arity,
            hash,
            value: parse_hash(&doc.value)?,
            low_index: doc.low_index,
            size: doc.size,
            low: leaf_from(&doc.low_leaf)?,
            siblings: flatten(&doc.siblings, doc.low_index, doc.size, arity)?,
        })
    }

    /// Decodes either encoding (JSON if it starts with `{`).
    pub fn decode(bytes: &[u8]) -> Result<AbsenceProof, DecodeError> {
        either(bytes, AbsenceProof::from_json, AbsenceProof::from_bytes)
    }
}

impl IndexedMembershipProof {
    /// The JSON encoding (pretty-printed).
    pub fn to_json(&self) -> String {
        pretty(&MembershipJson {
            version: u64::from(FORMAT_VERSION),
            kind: "indexed_membership".to_owned(),
            arity: self.arity.as_u64(),
            hash: self.hash.name().to_owned(),
            index: self.index,
            size: self.size,
            leaf: leaf_doc(&self.leaf),
            siblings: grouped(&self.siblings, self.index, self.size, self.arity),
        })
    }

    /// Decodes a JSON indexed membership proof.
    pub fn from_json(text: &str) -> Result<IndexedMembershipProof, DecodeError> {
        let doc: MembershipJson = parse(text, "indexed_membership")?;
        let (arity, hash) = check_common(
            doc.version,
            &doc.kind,
            "indexed_membership",
            doc.arity,
            &doc.hash,
        )?;
        Ok(IndexedMembershipProof {
            arity,
            hash,
            index: doc.index,
            size: doc.size,
            leaf: leaf_from(&doc.leaf)?,
            siblings: flatten(&doc.siblings, doc.index, doc.size, arity)?,
        })
    }

    /// Decodes either encoding (JSON if it starts with `{`).
    pub fn decode(bytes: &[u8]) -> Result<IndexedMembershipProof, DecodeError> {
        either(
            bytes,
            IndexedMembershipProof::from_json,
            IndexedMembershipProof::from_bytes,
        )
    }
}

impl InsertionWitness {
    /// The JSON encoding (pretty-printed).
    pub fn to_json(&self) -> String {
        pretty(&self.doc())
    }

    /// The JSON encoding on one line (for responses that embed it).
    pub fn to_json_compact(&self) -> String {
        serde_json::to_string(&self.doc())
            .unwrap_or_else(|e| unreachable!("serialising plain data: {e}"))
    }

    fn doc(&self) -> InsertionJson {
        InsertionJson {
            version: u64::from(FORMAT_VERSION),
            kind: "insertion".to_owned(),
            arity: self.arity.as_u64(),
            hash: self.hash.name().to_owned(),
            old_size: self.old_size,
            insertions: self
                .steps
                .iter()
                .enumerate()
                .map(|(j, step)| {
                    let size = self.old_size + j as u64;
                    StepJson {
                        value: to_hex(&step.value),
                        low_index: step.low_index,
                        low_leaf: leaf_doc(&step.low),
                        low_siblings: grouped(&step.low_siblings, step.low_index, size, self.arity),
                        new_siblings: grouped(&step.new_siblings, size, size + 1, self.arity),
                    }
                })
                .collect(),
        }
    }

    /// Decodes a JSON insertion witness.
    pub fn from_json(text: &str) -> Result<InsertionWitness, DecodeError> {
        let doc: InsertionJson = parse(text, "insertion")?;
        let (arity, hash) =
            check_common(doc.version, &doc.kind, "insertion", doc.arity, &doc.hash)?;
        let count = doc.insertions.len() as u64;
        if doc
            .old_size
            .checked_add(count)
            .is_none_or(|end| end == u64::MAX)
        {
            return Err(DecodeError::IndexOutOfRange {
                index: doc.old_size,
                size: u64::MAX,
            });
        }
        let mut steps = Vec::with_capacity(doc.insertions.len());
        for (j, step) in doc.insertions.iter().enumerate() {
            let size = doc.old_size + j as u64;
            steps.push(InsertionStep {
                value: parse_hash(&step.value)?,
                low_index: step.low_index,
                low: leaf_from(&step.low_leaf)?,
                low_siblings: flatten(&step.low_siblings, step.low_index, size, arity)?,
                new_siblings: flatten(&step.new_siblings, size, size + 1, arity)?,
            });
        }
        Ok(InsertionWitness {
            arity,
            hash,
            old_size: doc.old_size,
            steps,
        })
    }

    /// Decodes either encoding (JSON if it starts with `{`).
    pub fn decode(bytes: &[u8]) -> Result<InsertionWitness, DecodeError> {
        either(
            bytes,
            InsertionWitness::from_json,
            InsertionWitness::from_bytes,
        )
    }
}

fn either<T>(
    bytes: &[u8],
    from_json: fn(&str) -> Result<T, DecodeError>,
    from_bytes: fn(&[u8]) -> Result<T, DecodeError>,
) -> Result<T, DecodeError> {
    if bytes.trim_ascii_start().first() == Some(&b'{') {
        let text =
            std::str::from_utf8(bytes).map_err(|e| DecodeError::Json(format!("not UTF-8: {e}")))?;
        from_json(text)
    } else {
        from_bytes(bytes)
    }
}
