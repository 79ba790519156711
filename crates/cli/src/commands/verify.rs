//! `cairn verify`: check a membership proof against a trusted head, given
//! on the command line or taken from a database.

use std::path::PathBuf;

use anyhow::anyhow;
use cairn_core::hex::Hex;
use cairn_core::indexed::{
    AbsenceProof, IndexedMembershipProof, IndexedVerifyError, InsertionWitness,
};
use cairn_core::{Arity, DecodeError, Hash, HashKind, TreeConfig, TreeHead, TreeKind};

use crate::args::{
    KindArgs, KindName, Source, file_tree, parse_arity, parse_hash_kind, parse_root,
};
use crate::failure::{Code, Failure};
use crate::json::Object;
use crate::units::group;
use crate::{database, output, proof_file};

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Check a membership proof (JSON or binary) against the root and size you trust. Prints \
\"valid: ...\" and exits 0, or prints \"invalid: <reason>\" on stderr and exits 1. A proof file \
that is not a well-formed proof also exits 1.

The trusted tree is lean unless --kind imt --depth D [--zero Z] names a fixed-depth tree: a proof \
of another kind, depth or zero value is invalid.

With --db DIR the arity, the hash, the kind and the trusted head come from the cairn database in \
DIR: the head at --size S if given, else at the proof's own size (the database computes the root \
of any size it has reached; a size beyond it is invalid). --arity, --hash, the kind options and \
--root are then refused.

--json prints {\"valid\":true,\"leaf\":\"0x..\",\"index\":I,\"size\":S,\"root\":\"0x..\"} or, for a \
proof that does not verify or is malformed, {\"valid\":false,\"reason\":\"..\"} (exit 1, nothing on \
stderr).

Indexed trees (`cairn init --kind indexed`): an absence proof, an indexed membership proof \
(`cairn prove DIR --absent|--leaf|--index`) or an insertion witness is recognised by its kind and \
checked the same way (--kind indexed may say so; another kind is refused). An absence or membership proof is about the value it carries, or about \
--value 0x.. when given (a proof about another value is invalid); with --db the trusted head is \
the database's current one (an indexed database has no older heads). An insertion witness is \
checked against the head before it, so it takes --root and --size, not --db, and prints the \
head after it.

Examples:
  cairn verify --arity 3 --hash sha256 --root 0x3e3999cd6a77a34ae09f0d40912e365683144ad848f0d3f1c576737fdc43c920 --size 7 proof.json
  cairn verify --db db proof.json
  cairn prove db --index 4 | cairn verify --db db --json
  cairn prove spent --absent 0x000000000000000000000000000000000000000000000000000000000000000a | cairn verify --db spent";

/// Check a membership proof against a trusted root and size.
#[derive(clap::Args, Debug)]
pub struct VerifyCmd {
    /// Take the arity, the hash and the trusted head from this cairn database.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["arity", "hash", "kind", "depth", "zero", "root"])]
    db: Option<PathBuf>,
    /// Children per internal node, 2 to 16.
    #[arg(long, short = 'n', value_name = "N", value_parser = parse_arity, required_unless_present = "db")]
    arity: Option<Arity>,
    /// Node hash: blake3, sha256, keccak256, poseidon or mimcsponge.
    #[arg(long, value_name = "HASH", value_parser = parse_hash_kind, required_unless_present = "db")]
    hash: Option<HashKind>,
    #[command(flatten)]
    kind: KindArgs,
    /// The trusted root, 0x and 64 hex digits.
    #[arg(long, value_name = "R", value_parser = parse_root, required_unless_present = "db")]
    root: Option<Hash>,
    /// The trusted size (number of leaves), at least 1 (with --db: default the proof's size).
    #[arg(long, value_name = "S", required_unless_present = "db")]
    size: Option<u64>,
    /// Print the verdict as one line of JSON.
    #[arg(long)]
    json: bool,
    /// The value an indexed absence or membership proof must be about (default: its own).
    #[arg(long, value_name = "0x..", value_parser = parse_root)]
    value: Option<Hash>,
    /// The proof file; - or nothing reads stdin.
    #[arg(value_name = "PROOF_FILE")]
    proof: Option<PathBuf>,
}

/// A negative verdict: `invalid: ...` on stderr, or the JSON verdict on stdout.
pub(crate) fn reject(json: bool, failure: Failure) -> Failure {
    if !json || failure.code() != Code::Invalid {
        return failure;
    }
    let reason = failure.line();
    let reason = reason
        .strip_prefix("invalid: ")
        .or_else(|| reason.strip_prefix("error: "))
        .unwrap_or(&reason)
        .to_owned();
    match output::line(
        &Object::new()
            .field("valid", false)
            .field("reason", reason.as_str())
            .finish(),
    ) {
        Ok(()) => Failure::quiet(Code::Invalid, anyhow!(reason)),
        Err(failure) => failure,
    }
}

/// A size to take a trusted head at: the size, whether the user gave it
/// (else it is the proof's), and the option that gives it.
pub(crate) type Wanted<'a> = (u64, bool, &'a str);

/// The tree and trusted heads of the database in `dir` at each of `sizes`
/// (an indexed tree's within its retained window).
pub(crate) fn db_heads(
    dir: &std::path::Path,
    sizes: &[Wanted<'_>],
) -> Result<(TreeConfig, Vec<TreeHead>), Failure> {
    let db = database::read(dir)?;
    let config = db.tree_config();
    let durable = db.durable_size();
    let mut heads = Vec::with_capacity(sizes.len());
    for &(size, given, option) in sizes {
        if size > durable {
            let message = anyhow!(
                "{} {size} is beyond the database {}, which holds {} leaves",
                if given {
                    format!("--{option}")
                } else {
                    "the proof's size".to_owned()
                },
                dir.display(),
                group(durable)
            );
            return Err(if given {
                Failure::new(Code::Usage, message)
            } else {
                Failure::rejected(message)
            });
        }
        heads.push(db.head_at(size).map_err(database::db_failure)?);
    }
    database::close(db)?;
    Ok((config, heads))
}

impl VerifyCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        let json = self.json;
        self.verify().map_err(|failure| reject(json, failure))
    }

    fn verify(self) -> Result<(), Failure> {
        if self.size == Some(0) {
            return Err(Failure::new(
                Code::Usage,
                anyhow!("--size 0 is the empty tree, which has no root and no leaves to prove"),
            ));
        }
        let source = Source::from_arg(self.proof.as_deref());
        let bytes = source.read()?;
        if let Some(kind @ ("absence" | "indexed_membership" | "insertion")) =
            cairn_core::indexed::proof_kind(&bytes)
        {
            return self.verify_indexed(&source.name(), &bytes, kind);
        }
        if self.value.is_some() {
            return Err(Failure::new(
                Code::Usage,
                anyhow!("--value is for indexed proofs (absence or indexed membership)"),
            ));
        }
        // A proof of one kind against a tree of another is invalid.
        let trusted_kind = match &self.db {
            Some(dir) => Some(database::stored(dir)?.tree().kind),
            None => self.kind.kind.map(|name| match name {
                KindName::Indexed => TreeKind::Indexed,
                KindName::Lean | KindName::Imt => TreeKind::Lean,
            }),
        };
        if trusted_kind == Some(TreeKind::Indexed) {
            return Err(Failure::rejected(anyhow!(
                "{}: a lean or imt tree's membership proof, but {} indexed",
                source.name(),
                match &self.db {
                    Some(dir) => format!("{} is an", dir.display()),
                    None => "the trusted tree is".to_owned(),
                }
            )));
        }
        let proof = proof_file::decode_membership(&source, &bytes)?;
        let (config, head) = match &self.db {
            Some(dir) => {
                let size = self.size.unwrap_or(proof.size());
                let (config, heads) = db_heads(dir, &[(size, self.size.is_some(), "size")])?;
                (config, heads[0])
            }
            None => {
                let config = file_tree(self.arity, self.hash, &self.kind, "verify")?;
                let (Some(root), Some(size)) = (self.root, self.size) else {
                    unreachable!("clap requires --root and --size without --db")
                };
                (config, TreeHead::new(size, root))
            }
        };
        let Some(root) = head.root else {
            return Err(Failure::rejected(anyhow!(
                "the trusted tree is empty: it has no leaves to prove"
            )));
        };
        proof
            .verify_with(&config, &head)
            .map_err(Failure::rejected)?;
        if self.json {
            return output::line(
                &Object::new()
                    .field("valid", true)
                    .hash("leaf", Some(&proof.leaf()))
                    .field("index", proof.index())
                    .field("size", head.size)
                    .hash("root", Some(&root))
                    .finish(),
            );
        }
        output::line(&format!(
            "valid: leaf {} is leaf {} of the tree of size {} with root {}",
            Hex(&proof.leaf()),
            proof.index(),
            head.size,
            Hex(&root),
        ))
    }
}

impl VerifyCmd {
    /// An indexed tree's proof or witness, against --db's current head or
    /// the head given (`--kind indexed`, or no kind: the proof names its own).
    fn verify_indexed(&self, name: &str, bytes: &[u8], kind: &str) -> Result<(), Failure> {
        let trusted = match &self.db {
            Some(dir) => {
                if kind == "insertion" {
                    return Err(Failure::new(
                        Code::Usage,
                        anyhow!(
                            "an insertion witness is checked against the head before it: give that head with --arity, --hash, --root and --size instead of --db"
                        ),
                    ));
                }
                // The head at --size, else at the proof's own size: the
                // database's current head or one it retains (a size out of
                // its window is refused by the database, naming the window).
                let proved = match kind {
                    "absence" => AbsenceProof::decode(bytes).ok().map(|p| p.size()),
                    "indexed_membership" => {
                        IndexedMembershipProof::decode(bytes).ok().map(|p| p.size())
                    }
                    _ => None,
                };
                let db = database::read(dir)?;
                let config = db.tree_config();
                if config.kind != TreeKind::Indexed {
                    database::close(db)?;
                    return Err(Failure::rejected(anyhow!(
                        "{name}: an indexed tree's proof, but {} is not an indexed database",
                        dir.display()
                    )));
                }
                let current = db.head();
                let head = match self.size.or(proved) {
                    Some(size) if size != current.size => db.head_at(size),
                    _ => Ok(current),
                };
                database::close(db)?;
                let head = head.map_err(|error| match self.size {
                    Some(size) => Failure::new(
                        Code::Usage,
                        anyhow!("--size {size}: {}: {error}", dir.display()),
                    ),
                    None => Failure::rejected(anyhow!(
                        "{name}: the proof's head is not one {} holds: {error}",
                        dir.display()
                    )),
                })?;
                Trusted {
                    arity: config.arity,
                    hash: config.hash,
                    head,
                }
            }
            None => {
                // The proof names its kind: a kind given must be indexed.
                if !matches!(self.kind.kind, None | Some(KindName::Indexed))
                    || self.kind.depth.is_some()
                    || self.kind.zero.is_some()
                {
                    return Err(Failure::new(
                        Code::Usage,
                        anyhow!(
                            "{name}: an indexed tree's proof; {} describe a lean or imt tree",
                            self.kind.given().join(" and ")
                        ),
                    ));
                }
                let (Some(arity), Some(hash), Some(root), Some(size)) =
                    (self.arity, self.hash, self.root, self.size)
                else {
                    unreachable!("clap requires --arity, --hash, --root and --size without --db")
                };
                Trusted {
                    arity,
                    hash,
                    head: TreeHead::new(size, root),
                }
            }
        };
        verify_indexed(name, bytes, kind, trusted, self.value, self.json)
    }
}

/// What `cairn verify` trusts for an indexed proof.
#[derive(Clone, Copy, Debug)]
struct Trusted {
    arity: Arity,
    hash: HashKind,
    /// The head: the tree's (for a proof) or the one before (for a witness).
    head: TreeHead,
}

fn malformed(name: &str, error: DecodeError) -> Failure {
    Failure::new(Code::Invalid, anyhow!("{name}: invalid proof: {error}"))
}

fn rejected(error: IndexedVerifyError) -> Failure {
    Failure::rejected(anyhow!(error))
}

/// An absence proof, an indexed membership proof or an insertion witness
/// (`kind` from [`cairn_core::indexed::proof_kind`]) checked against
/// `trusted`; `value` is the value the user asks about (default: the
/// proof's own).
fn verify_indexed(
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
