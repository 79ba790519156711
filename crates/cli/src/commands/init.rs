//! `cairn init`: create a database.

use std::path::PathBuf;

use anyhow::anyhow;
use cairn_core::hex::to_hex;
use cairn_core::{Arity, HashKind, TreeConfig, TreeKind};
use cairn_db::{Database, DbConfig, Forest, Operation};

use crate::args::{KindArgs, parse_arity, parse_hash_kind};
use crate::database;
use crate::failure::{Code, Failure};
use crate::json::Object;
use crate::output;

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Create an empty cairn database in DIR (created if missing). DIR must not exist or be empty: a \
directory holding anything else, a cairn database included, is refused (exit 2).

The arity, the hash and the kind are the tree's identity: stored in DIR/cairn.meta and never \
changed. --max-depth D limits the tree to D levels above the leaves (N^D leaves), for trees that \
must fit a fixed-depth circuit: an ingest that would exceed it is refused.

--kind imt creates zk-kit's IMT instead of the LeanIMT (the shape of IMT.sol, BinaryIMT.sol, \
QuinaryIMT.sol and Tornado Cash's deposit tree): --depth D levels above the leaves whatever \
the size (at most N^D leaves: an ingest beyond is refused), every group padded to N with the \
level's zero hash (zeros[0] = --zero, default 0; zeros[k+1] = H(zeros[k], .., zeros[k])); the \
empty tree's root is zeros[D]. --zero takes 0x and 64 hex digits or, for poseidon and \
mimcsponge, a decimal field element. --max-depth does not apply to it.

By default the database keeps \
a nullifier set, which refuses a value already present (`cairn ingest` exits 3) and finds \
values (`cairn contains`, `cairn prove --leaf`); --no-unique creates a database without it, \
which accepts repeated values and looks nothing up by value.

--finality says what makes leaves final, which `cairn truncate` (a rollback) never goes below: checkpoint (the default) finalizes what each checkpoint covers, so a rollback reaches back to the last checkpoint only; explicit finalizes only what `cairn finalize` names, so a chain follower can roll back any block it has not finalized, whatever was checkpointed.

--kind indexed creates an indexed tree instead: leaves are a sorted linked list (value, next \
index, next value) with a guard leaf 0, so that `cairn prove DIR --absent 0x..` proves a value \
is not there (docs/spec.md, \"Indexed trees\"). Inserting a value also rewrites its \
predecessor's leaf; the database keeps the values in insertion order and refuses a value twice \
(exit 3) without a nullifier set (--no-unique does not apply), and proves against its current \
head only (no --size, no consistency proofs). Value 0 is the guard's and is refused.

--sign-key FILE (a signer key from `cairn keygen`) makes the database sign its checkpoints \
(`cairn signed-checkpoint`, GET /v1/checkpoint of `cairn serve`): a copy goes to DIR/signer.key, \
mode 0600; `cairn sign-key` adds one later.

--json prints {\"dir\":\"..\",\"arity\":N,\"hash\":\"..\",\"max_depth\":D|null,\"unique\":true|false,\
\"log_file_leaves\":L,\"finality\":\"checkpoint\"|\"explicit\",\"format_version\":1,\"kind\":\"lean\"|\"imt\"|\"indexed\",\
\"depth\":D|null,\"zero\":\"0x..\"|null} (depth and zero: an imt's; format_version 2 for an imt's or an \
indexed tree's cairn.meta).

Without --arity and --hash, DIR becomes a database of several trees, none yet: `cairn tree add \
DIR NAME --arity N --hash H` adds each (any kind, with its own arity, hash and nullifier set), \
and `cairn trees DIR` lists them (README, \"Many trees\").

Examples:
  cairn init db --arity 4 --hash blake3
  cairn init state
  cairn init deposits --arity 2 --hash poseidon --max-depth 32
  cairn init commitments --arity 16 --hash keccak256 --no-unique
  cairn init follower --arity 2 --hash poseidon --finality explicit
  cairn init semaphore-v3 --arity 2 --hash poseidon --kind imt --depth 20
  cairn init tornado --arity 2 --hash mimcsponge --kind imt --depth 20 \\
      --zero 21663839004416932945382355908790599225266501822907911457504978515578255421292
  cairn keygen --name example.org/signed --out signed.key
  cairn init signed --arity 4 --hash blake3 --sign-key signed.key
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

/// Create an empty database.
#[derive(clap::Args, Debug)]
pub struct InitCmd {
    /// The directory to create it in (created if missing; must be empty).
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// Children per internal node, 2 to 16 (with --hash; neither: a database of several trees).
    #[arg(long, short = 'n', value_name = "N", value_parser = parse_arity, requires = "hash")]
    arity: Option<Arity>,
    /// Node hash: blake3, sha256, keccak256, poseidon or mimcsponge (with --arity).
    #[arg(long, value_name = "HASH", value_parser = parse_hash_kind, requires = "arity")]
    hash: Option<HashKind>,
    /// Refuse appends that would make the tree deeper than D levels (1 to 64; lean trees).
    #[arg(long, value_name = "D", value_parser = clap::value_parser!(u32).range(1..=64))]
    max_depth: Option<u32>,
    #[command(flatten)]
    kind: KindArgs,
    /// Keep no nullifier set: repeated values are accepted, nothing is looked up by value.
    #[arg(long)]
    no_unique: bool,
    /// What makes leaves final (never rolled back): each checkpoint, or only `cairn finalize`.
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = Finality::Checkpoint)]
    finality: Finality,
    /// Make the tree mutable: leaves can be updated and removed (`cairn update`, `cairn remove`); lean and imt trees. No consistency proofs, tiles or signed checkpoints then.
    #[arg(long)]
    mutable: bool,
    /// With --mutable: a removed value may be appended or updated to again (by default it never comes back, like a spent nullifier).
    #[arg(long, requires = "mutable")]
    readmit_removed: bool,
    /// Sign checkpoints with this signer key file (`cairn keygen`): copied to DIR/signer.key.
    #[arg(long, value_name = "FILE")]
    sign_key: Option<PathBuf>,
    /// Print what was created as one line of JSON.
    #[arg(long)]
    json: bool,
}

/// The configuration of a tree of `arity` and `hash` with these options
/// (checked against each other: usage errors name the option), and its
/// tree: what `cairn init` creates and `cairn tree add` adds.
pub(crate) fn tree_config(
    arity: Arity,
    hash: HashKind,
    max_depth: Option<u32>,
    kind_args: &KindArgs,
    no_unique: bool,
    explicit: bool,
) -> Result<(DbConfig, TreeConfig), Failure> {
    let kind = kind_args.resolve(hash)?;
    if let (TreeKind::Fixed { depth, .. }, Some(max_depth)) = (kind, max_depth) {
        return Err(Failure::new(
            Code::Usage,
            anyhow!(
                "--max-depth {max_depth} is for lean trees: an imt's depth is fixed by --depth {depth}"
            ),
        ));
    }
    // An indexed tree refuses duplicates itself: it has no set to drop.
    if no_unique && !kind.is_append_only() {
        return Err(Failure::new(
            Code::Usage,
            anyhow!(
                "--no-unique is for lean and imt trees: an indexed tree refuses a value twice by construction"
            ),
        ));
    }
    let mut tree = TreeConfig::new(arity, hash).with_kind(kind);
    if let Some(depth) = max_depth {
        tree = tree.with_max_depth(depth);
    }
    let mut config = DbConfig::new(tree);
    config.unique = !no_unique;
    config.explicit_finality = explicit;
    config.store.flush_interval = None;
    config.store.checkpoint = Default::default();
    Ok((config, tree))
}

/// The version of the `cairn.meta` a database of `tree` has: 1, or 2 for
/// a tree of another kind than Lean.
pub(crate) fn format_version(tree: &TreeConfig) -> u32 {
    match tree.kind {
        TreeKind::Lean => cairn_db::FORMAT_VERSION,
        _ => cairn_db::FORMAT_VERSION_KINDS,
    }
}

impl InitCmd {
    /// An empty database of several trees.
    fn create_forest(&self) -> Result<(), Failure> {
        let given: Vec<&str> = [
            self.max_depth.map(|_| "--max-depth"),
            self.no_unique.then_some("--no-unique"),
            (self.finality != Finality::Checkpoint).then_some("--finality"),
            self.sign_key.as_ref().map(|_| "--sign-key"),
        ]
        .into_iter()
        .flatten()
        .chain(self.kind.given())
        .collect();
        if let Some(option) = given.first() {
            return Err(Failure::new(
                Code::Usage,
                anyhow!(
                    "{option} describes a tree: give --arity and --hash with it, or add the tree with `cairn tree add`"
                ),
            ));
        }
        Forest::create(&self.dir)
            .and_then(Forest::close)
            .map_err(database::db_failure)?;
        if self.json {
            return output::line(
                &Object::new()
                    .field("dir", self.dir.display().to_string())
                    .raw("trees", "[]")
                    .finish(),
            );
        }
        output::line(&format!(
            "created {}: a database of several trees, none yet (cairn tree add)",
            self.dir.display()
        ))
    }

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
        // Read before anything is created: a bad key creates nothing.
        let signer = self
            .sign_key
            .as_deref()
            .map(crate::signing::read_key)
            .transpose()?;
        let (Some(arity), Some(hash)) = (self.arity, self.hash) else {
            return self.create_forest();
        };
        if self.sign_key.is_some()
            && !Operation::SignedCheckpoint.supported_by(self.kind.resolve(hash)?)
        {
            return Err(Failure::new(
                Code::Usage,
                anyhow!(
                    "--sign-key is for lean and imt trees: an indexed database's checkpoints are not signed"
                ),
            ));
        }
        let (config, tree) = tree_config(
            arity,
            hash,
            self.max_depth,
            &self.kind,
            self.no_unique,
            self.finality == Finality::Explicit,
        )?;
        let kind = tree.kind;
        let mut config = config;
        if self.mutable {
            if kind == TreeKind::Indexed {
                return Err(Failure::new(
                    Code::Usage,
                    anyhow!(
                        "--mutable is for lean and imt trees: an indexed tree's leaves are its sorted values"
                    ),
                ));
            }
            if self.sign_key.is_some() {
                return Err(Failure::new(
                    Code::Usage,
                    anyhow!(
                        "--sign-key is for append-only trees: a mutable tree's roots do not follow one another by consistency proofs"
                    ),
                ));
            }
            config.mutable = Some(self.readmit_removed);
        }
        let log_file_leaves = 1u64 << config.store.log_shift;
        Database::create(&self.dir, config)
            .and_then(Database::close)
            .map_err(database::db_failure)?;
        if let Some(signer) = &signer {
            crate::signing::install(&self.dir, signer, false)?;
        }
        let unique = !self.no_unique && kind.is_append_only();
        if self.json {
            return output::line(
                &Object::new()
                    .field("dir", self.dir.display().to_string())
                    .field("arity", arity.as_u64())
                    .field("hash", hash.name())
                    .field("max_depth", self.max_depth)
                    .field("unique", unique)
                    .field("log_file_leaves", log_file_leaves)
                    .field("finality", self.finality.name())
                    .field("format_version", format_version(&tree))
                    .field("kind", kind.name())
                    .field("mutable", self.mutable)
                    .field("depth", kind.fixed_depth())
                    .hash("zero", kind.zero().as_ref())
                    .finish(),
            );
        }
        let max_depth = format!(
            "max depth {}",
            self.max_depth
                .map_or_else(|| "none".to_owned(), |d| d.to_string())
        );
        let shape = match kind {
            TreeKind::Fixed { depth, zero } => {
                format!("imt of depth {depth} (zero {})", to_hex(&zero))
            }
            TreeKind::Indexed => format!("indexed tree, {max_depth}"),
            _ => max_depth,
        };
        let set = match (kind, unique) {
            (TreeKind::Indexed, _) => "",
            (_, true) => ", nullifier set on",
            (_, false) => ", nullifier set off",
        };
        let set = match (self.mutable, self.readmit_removed) {
            (false, _) => set.to_owned(),
            (true, false) => format!("{set}, mutable (removed values stay out)"),
            (true, true) => format!("{set}, mutable (removed values may return)"),
        };
        output::line(&format!(
            "created {}: arity {}, hash {}, {shape}{set}{}",
            self.dir.display(),
            arity,
            hash,
            match self.finality {
                Finality::Checkpoint => "",
                Finality::Explicit => ", explicit finality",
            },
        ))
    }
}
