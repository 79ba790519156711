//! `cairn init`: create a database.

use std::path::PathBuf;

use anyhow::anyhow;
use cairn_core::{Arity, HashKind, TreeConfig};
use cairn_db::{Db, DbConfig, IndexedDb};

use crate::args::{parse_arity, parse_hash_kind};
use crate::database;
use crate::failure::{Code, Failure};
use crate::json::Object;
use crate::output;

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Create an empty cairn database in DIR (created if missing). DIR must not exist or be empty: a \
directory holding anything else, a cairn database included, is refused (exit 2).

The arity and the hash are the tree's identity: stored in DIR/cairn.meta and never changed. \
--max-depth D limits the tree to D levels above the leaves (N^D leaves), for trees that must fit \
a fixed-depth circuit: an ingest that would exceed it is refused. By default the database keeps \
a nullifier set, which refuses a value already present (`cairn ingest` exits 3) and finds \
values (`cairn contains`, `cairn prove --leaf`); --no-unique creates a database without it, \
which accepts repeated values and looks nothing up by value.

--finality says what makes leaves final, which `cairn truncate` (a rollback) never goes below: checkpoint (the default) finalizes what each checkpoint covers, so a rollback reaches back to the last checkpoint only; explicit finalizes only what `cairn finalize` names, so a chain follower can roll back any block it has not finalized, whatever was checkpointed.

--kind indexed creates an indexed tree instead of the plain (lean) one: leaves are a sorted \
linked list (value, next index, next value) with a guard leaf 0, so that `cairn prove DIR \
--absent 0x..` proves a value is not there (docs/spec.md, \"Indexed trees\"). Inserting a value \
also rewrites its predecessor's leaf; the database keeps the values in insertion order and \
refuses a value twice (exit 3) without a nullifier set, and proves against its current head \
only (no --size, no consistency proofs). Value 0 is the guard's and is refused.

--json prints {\"dir\":\"..\",\"arity\":N,\"hash\":\"..\",\"max_depth\":D|null,\"unique\":true|false,\
\"log_file_leaves\":L,\"finality\":\"checkpoint\"|\"explicit\",\"format_version\":1,\"kind\":\"lean\"|\"indexed\"}.

Examples:
  cairn init db --arity 4 --hash blake3
  cairn init deposits --arity 2 --hash poseidon --max-depth 32
  cairn init commitments --arity 16 --hash keccak256 --no-unique
  cairn init follower --arity 2 --hash poseidon --finality explicit
  cairn init spent --kind indexed --arity 4 --hash blake3";

/// What makes leaves final.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finality {
    /// Every checkpoint finalizes what it covers.
    Checkpoint,
    /// Only `cairn finalize` does.
    Explicit,
}

impl Finality {
    /// The name `--finality` takes.
    pub fn name(self) -> &'static str {
        match self {
            Finality::Checkpoint => "checkpoint",
            Finality::Explicit => "explicit",
        }
    }
}

/// Which tree a database holds.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Kind {
    /// The append-only LeanIMT of the values.
    #[default]
    Lean,
    /// An indexed tree: sorted linked-list leaves, with absence proofs.
    Indexed,
}

impl Kind {
    /// The name `--kind` takes.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Lean => "lean",
            Kind::Indexed => "indexed",
        }
    }
}

/// Create an empty database.
#[derive(clap::Args, Debug)]
pub struct InitCmd {
    /// The directory to create it in (created if missing; must be empty).
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// Children per internal node, 2 to 16.
    #[arg(long, short = 'n', value_name = "N", value_parser = parse_arity)]
    arity: Arity,
    /// Node hash: blake3, sha256, keccak256, poseidon or mimcsponge.
    #[arg(long, value_name = "HASH", value_parser = parse_hash_kind)]
    hash: HashKind,
    /// Refuse appends that would make the tree deeper than D levels (1 to 64).
    #[arg(long, value_name = "D", value_parser = clap::value_parser!(u32).range(1..=64))]
    max_depth: Option<u32>,
    /// Keep no nullifier set: repeated values are accepted, nothing is looked up by value.
    #[arg(long)]
    no_unique: bool,
    /// The tree: lean (append-only) or indexed (sorted leaves, absence proofs).
    #[arg(long, value_enum, value_name = "KIND", default_value_t = Kind::Lean, conflicts_with = "no_unique")]
    kind: Kind,
    /// What makes leaves final (never rolled back): each checkpoint, or only `cairn finalize`.
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = Finality::Checkpoint)]
    finality: Finality,
    /// Print what was created as one line of JSON.
    #[arg(long)]
    json: bool,
}

impl InitCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        if database::is_database(&self.dir) {
            return Err(Failure::new(
                Code::Usage,
                anyhow!(
                    "{} already holds a cairn database: refusing to create another there",
                    self.dir.display()
                ),
            ));
        }
        let mut tree = TreeConfig::new(self.arity, self.hash);
        if let Some(depth) = self.max_depth {
            tree = tree.with_max_depth(depth);
        }
        let mut config = DbConfig::new(tree);
        config.unique = !self.no_unique;
        config.explicit_finality = self.finality == Finality::Explicit;
        config.store.flush_interval = None;
        config.store.checkpoint = Default::default();
        let log_file_leaves = 1u64 << config.store.log_shift;
        match self.kind {
            Kind::Lean => Db::create(&self.dir, config)
                .and_then(Db::close)
                .map_err(database::db_failure)?,
            Kind::Indexed => IndexedDb::create(&self.dir, config)
                .and_then(IndexedDb::close)
                .map_err(database::db_failure)?,
        }
        let unique = !self.no_unique && self.kind == Kind::Lean;
        if self.json {
            return output::line(
                &Object::new()
                    .field("dir", self.dir.display().to_string())
                    .field("arity", self.arity.as_u64())
                    .field("hash", self.hash.name())
                    .field("max_depth", self.max_depth)
                    .field("unique", unique)
                    .field("log_file_leaves", log_file_leaves)
                    .field("finality", self.finality.name())
                    .field("format_version", cairn_store::format::VERSION)
                    .field("kind", self.kind.name())
                    .finish(),
            );
        }
        if self.kind == Kind::Indexed {
            return output::line(&format!(
                "created {}: indexed tree, arity {}, hash {}, max depth {}{}",
                self.dir.display(),
                self.arity,
                self.hash,
                self.max_depth
                    .map_or_else(|| "none".to_owned(), |d| d.to_string()),
                match self.finality {
                    Finality::Checkpoint => "",
                    Finality::Explicit => ", explicit finality",
                },
            ));
        }
        output::line(&format!(
            "created {}: arity {}, hash {}, max depth {}, nullifier set {}{}",
            self.dir.display(),
            self.arity,
            self.hash,
            self.max_depth
                .map_or_else(|| "none".to_owned(), |d| d.to_string()),
            if self.no_unique { "off" } else { "on" },
            match self.finality {
                Finality::Checkpoint => "",
                Finality::Explicit => ", explicit finality",
            },
        ))
    }
}
