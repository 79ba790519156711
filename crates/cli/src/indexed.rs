//! The commands on indexed databases (`cairn init --kind indexed`):
//! opening them, and what root, stats, contains, prove, verify, truncate,
//! checkpoint and backup do for them. Each command's file branches here
//! when its directory (or proof) is of the indexed kind.
//!
//! An indexed database proves against its current durable head only: its
//! leaves below the right edge change as values are inserted, so there
//! are no historical proofs and no consistency proofs.

use std::path::Path;

use anyhow::anyhow;
use cairn_core::hex::{Hex, to_hex};
use cairn_core::indexed::{
    AbsenceProof, IndexedError, IndexedMembershipProof, IndexedVerifyError, InsertionWitness,
};
use cairn_core::{Arity, DecodeError, Hash, HashKind, TreeError, TreeHead};
use cairn_db::{DbError, ErrorKind, IndexedDb};

use crate::database::{self, Options};
use crate::failure::{Code, Failure};
use crate::json::Object;
use crate::output;
use crate::units::group;

/// Opens the indexed database in `dir` for writing.
pub fn open(dir: &Path, options: Options) -> Result<IndexedDb, Failure> {
    database::open_indexed(dir, options)
}

/// Opens the indexed database in `dir` read-only (beside a writer).
pub fn open_read_only(dir: &Path) -> Result<IndexedDb, Failure> {
    database::open_indexed_read_only(dir)
}

/// `cairn root DIR`.
pub fn root(dir: &Path, json: bool) -> Result<(), Failure> {
    let db = open_read_only(dir)?;
    let head = db.head();
    let config = db.tree_config();
    let depth = cairn_core::shape::depth(head.size, config.arity);
    let root = head
        .root
        .expect("an indexed tree always has its guard leaf");
    if json {
        return output::line(&format!(
            r#"{{"size":{},"depth":{depth},"root":"{}","arity":{},"hash":"{}","kind":"indexed"}}"#,
            head.size,
            to_hex(&root),
            config.arity,
            config.hash
        ));
    }
    output::line(&to_hex(&root))
}

/// `cairn stats DIR`: the indexed tree's figures.
pub fn stats(dir: &Path, json: bool) -> Result<(), Failure> {
    let db = open_read_only(dir)?;
    let head = db.head();
    let config = db.tree_config();
    let stats = db.stats();
    let root = head
        .root
        .expect("an indexed tree always has its guard leaf");
    if json {
        return output::line(
            &Object::new()
                .field("kind", "indexed")
                .field("arity", config.arity.as_u64())
                .field("hash", config.hash.name())
                .field("size", head.size)
                .field("values", head.size - 1)
                .hash("root", Some(&root))
                .field(
                    "depth",
                    u64::from(cairn_core::shape::depth(head.size, config.arity)),
                )
                .field("checkpoint_size", stats.store.checkpoint_size)
                .field("finalized_size", stats.store.finalized + 1)
                .finish(),
        );
    }
    output::line(&format!(
        "indexed tree: arity {}, hash {}, {} values (size {} with the guard leaf), depth {}, root {}\ncheckpoint: {} values of the log",
        config.arity,
        config.hash,
        group(head.size - 1),
        head.size,
        cairn_core::shape::depth(head.size, config.arity),
        to_hex(&root),
        group(stats.store.checkpoint_size),
    ))
}

/// `cairn contains DIR VALUE`.
pub fn contains(dir: &Path, value: &Hash, json: bool) -> Result<(), Failure> {
    let db = open_read_only(dir)?;
    let index = db.index_of(value).filter(|&i| i > 0);
    let size = db.head().size;
    if json {
        output::line(
            &Object::new()
                .hash("leaf", Some(value))
                .field("present", index.is_some())
                .field("index", index)
                .field("size", size)
                .finish(),
        )?;
        return match index {
            Some(_) => Ok(()),
            None => Err(Failure::quiet(Code::Invalid, anyhow!("absent"))),
        };
    }
    match index {
        Some(index) => output::line(&index.to_string()),
        None => Err(Failure::verdict(
            "absent",
            anyhow!(
                "{} is not among the {} values of {} (`cairn prove {} --absent {}` proves it)",
                Hex(value),
                group(size - 1),
                dir.display(),
                dir.display(),
                Hex(value),
            ),
        )),
    }
}

/// What `cairn prove` proves in an indexed database.
#[derive(Clone, Copy, Debug)]
pub enum Query {
    /// The absence of a value.
    Absent(Hash),
    /// The membership of a value.
    Value(Hash),
    /// The leaf at an index (0: the guard).
    Index(u64),
}

/// How `cairn prove` prints an indexed proof.
#[derive(Clone, Copy, Debug)]
pub enum Printed {
    /// cairn's proof JSON.
    Json,
    /// cairn's binary encoding.
    Binary,
    /// The inputs of the `IndexedAbsence` circom template for a circuit of
    /// this depth (default: the tree's); absence proofs only.
    Circom(Option<u32>),
}

/// `cairn prove DIR --absent|--leaf|--index`: the proof against the
/// database's durable head, JSON, binary or (absence) circuit inputs.
pub fn prove(dir: &Path, query: Query, printed: Printed) -> Result<(), Failure> {
    let db = open_read_only(dir)?;
    let failure = |e: DbError| match e {
        DbError::Indexed(IndexedError::Present { value, index }) => Failure::verdict(
            "present",
            anyhow!(
                "{} is leaf {index} of {}: it has no absence proof (`cairn prove {} --leaf {}` proves its membership)",
                Hex(&value),
                dir.display(),
                dir.display(),
                Hex(&value)
            ),
        ),
        DbError::Indexed(IndexedError::Absent { value }) => Failure::verdict(
            "absent",
            anyhow!(
                "{} is not in {} (`cairn prove {} --absent {}` proves it)",
                Hex(&value),
                dir.display(),
                dir.display(),
                Hex(&value)
            ),
        ),
        DbError::Indexed(IndexedError::Tree(TreeError::IndexOutOfRange { index, size })) => {
            Failure::new(
                Code::Usage,
                anyhow!(
                    "--index {index} is beyond the indexed database {}, which holds {size} leaves (the guard and {} values)",
                    dir.display(),
                    size - 1
                ),
            )
        }
        other => database::db_failure(other),
    };
    let (json, bytes) = match query {
        Query::Absent(value) => {
            let proof = db.prove_absence(&value).map_err(failure)?;
            if let Printed::Circom(circuit_depth) = printed {
                let text = proof.to_circom_json(circuit_depth).map_err(|error| {
                    Failure::new(
                        Code::Usage,
                        anyhow::Error::new(error).context(format!(
                            "cannot print the absence circuit's inputs for {} in {}",
                            Hex(&value),
                            dir.display()
                        )),
                    )
                })?;
                return output::line(&text);
            }
            (proof.to_json(), proof.to_bytes())
        }
        Query::Value(value) => {
            let proof = db.prove_value(&value).map_err(failure)?;
            (proof.to_json(), proof.to_bytes())
        }
        Query::Index(index) => {
            let proof = db.prove_index(index).map_err(failure)?;
            (proof.to_json(), proof.to_bytes())
        }
    };
    match printed {
        Printed::Binary => output::binary(&bytes),
        Printed::Json | Printed::Circom(_) => output::line(&json),
    }
}

/// What `cairn verify` trusts for an indexed proof.
#[derive(Clone, Copy, Debug)]
pub struct Trusted {
    /// The tree's arity.
    pub arity: Arity,
    /// The tree's hash.
    pub hash: HashKind,
    /// The head: the tree's (for a proof) or the one before (for a witness).
    pub head: TreeHead,
}

/// The trusted parameters and current durable head of the indexed
/// database in `dir`.
pub fn trusted_from(dir: &Path) -> Result<Trusted, Failure> {
    let db = open_read_only(dir)?;
    let config = db.tree_config();
    Ok(Trusted {
        arity: config.arity,
        hash: config.hash,
        head: db.head(),
    })
}

fn malformed(name: &str, error: DecodeError) -> Failure {
    Failure::new(Code::Invalid, anyhow!("{name}: invalid proof: {error}"))
}

fn rejected(error: IndexedVerifyError) -> Failure {
    Failure::rejected(anyhow!(error))
}

/// `cairn verify` of an absence proof, an indexed membership proof or an
/// insertion witness (`kind` from [`cairn_core::indexed::proof_kind`]).
/// `value` is the value the user asks about (default: the proof's own).
pub fn verify(
    name: &str,
    bytes: &[u8],
    kind: &str,
    trusted: Trusted,
    value: Option<Hash>,
    json: bool,
) -> Result<(), Failure> {
    let Trusted { arity, hash, head } = trusted;
    let root = head.root.unwrap_or_default();
    match kind {
        "absence" => {
            let proof = AbsenceProof::decode(bytes).map_err(|e| malformed(name, e))?;
            let value = value.unwrap_or(proof.value());
            proof.verify(arity, hash, &head, &value).map_err(rejected)?;
            if json {
                return output::line(
                    &Object::new()
                        .field("valid", true)
                        .field("kind", "absence")
                        .hash("value", Some(&value))
                        .field("low_index", proof.low_index())
                        .field("size", head.size)
                        .hash("root", Some(&root))
                        .finish(),
                );
            }
            let low = proof.low_leaf();
            output::line(&format!(
                "valid: {} is absent from the indexed tree of size {} with root {} (low leaf {}: {} < value{})",
                Hex(&value),
                head.size,
                Hex(&root),
                proof.low_index(),
                Hex(&low.value),
                if low.is_last() {
                    ", the largest value".to_owned()
                } else {
                    format!(" < {}", Hex(&low.next_value))
                }
            ))
        }
        "indexed_membership" => {
            let proof = IndexedMembershipProof::decode(bytes).map_err(|e| malformed(name, e))?;
            let value = value.unwrap_or(proof.leaf().value);
            proof.verify(arity, hash, &head, &value).map_err(rejected)?;
            if json {
                return output::line(
                    &Object::new()
                        .field("valid", true)
                        .field("kind", "indexed_membership")
                        .hash("value", Some(&value))
                        .field("index", proof.index())
                        .field("size", head.size)
                        .hash("root", Some(&root))
                        .finish(),
                );
            }
            output::line(&format!(
                "valid: {} is leaf {} of the indexed tree of size {} with root {}",
                Hex(&value),
                proof.index(),
                head.size,
                Hex(&root),
            ))
        }
        "insertion" => {
            let witness = InsertionWitness::decode(bytes).map_err(|e| malformed(name, e))?;
            let after = witness.verify(arity, hash, &head).map_err(rejected)?;
            let new_root = after.root.unwrap_or_default();
            if json {
                return output::line(
                    &Object::new()
                        .field("valid", true)
                        .field("kind", "insertion")
                        .field("count", witness.steps().len() as u64)
                        .field("old_size", head.size)
                        .hash("old_root", Some(&root))
                        .field("new_size", after.size)
                        .hash("new_root", Some(&new_root))
                        .finish(),
                );
            }
            output::line(&format!(
                "valid: {} insertion{} carry the indexed tree of size {} (root {}) to size {} (root {})",
                witness.steps().len(),
                if witness.steps().len() == 1 { "" } else { "s" },
                head.size,
                Hex(&root),
                after.size,
                Hex(&new_root),
            ))
        }
        other => Err(Failure::new(
            Code::Invalid,
            anyhow!("{name}: a {other} proof is not an indexed tree's"),
        )),
    }
}

/// `cairn truncate DIR --to S` of an indexed database.
pub fn truncate(dir: &Path, size: u64, json: bool) -> Result<(), Failure> {
    let db = open(dir, Options::default())?;
    let before = db.flush().map_err(database::db_failure)?.size;
    let head = db.truncate(size).map_err(|error| match error.kind() {
        // The log counts values: say it in the tree's sizes.
        ErrorKind::BelowFinalized { finalized } => Failure::new(
            Code::Usage,
            anyhow!(
                "cannot roll {} back to size {size}: its first {} leaves are final (the guard and {finalized} values)",
                dir.display(),
                finalized + 1
            ),
        ),
        ErrorKind::NotFound if size > before => Failure::new(
            Code::Usage,
            anyhow!(
                "cannot roll {} back to size {size}: it holds {before} leaves",
                dir.display(),
            ),
        ),
        _ => database::db_failure(error),
    })?;
    let finalized = db.finalized_size();
    db.close().map_err(database::db_failure)?;
    let removed = before.saturating_sub(head.size);
    let root = head.root.unwrap_or_default();
    if json {
        return output::line(
            &Object::new()
                .field("size", head.size)
                .hash("root", Some(&root))
                .field("removed", removed)
                .field("finalized_size", finalized)
                .finish(),
        );
    }
    output::line(&format!(
        "removed {} value{}: size {}, root {}",
        group(removed),
        if removed == 1 { "" } else { "s" },
        head.size,
        to_hex(&root)
    ))
}
