//! `cairn prove`: the membership proof of one leaf, from a leaf file or a
//! database.

use std::path::PathBuf;

use anyhow::{Context as _, anyhow};
use cairn_core::hex::Hex;
use cairn_core::{Arity, Hash, HashKind, MembershipProof, TreeError};
use cairn_db::{At, DbError, Operation, Proof, ProofFormat as DbFormat, RenderError};

use crate::args::{
    KindArgs, Source, build_tree, file_tree, parse_arity, parse_hash_kind, parse_root,
};
use crate::database;
use crate::failure::{Code, Failure, OrExit as _};
use crate::leaves::Format;
use crate::output;
use clap::ValueEnum as _;

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Print the membership proof of one leaf, as JSON (or binary with --binary): of the tree holding \
the leaves of --leaves FILE (with --arity and --hash, and --kind imt --depth D [--zero Z] for a \
fixed-depth tree), or of the cairn database DIR (which stores its arity, hash and kind).

The leaf is chosen by --index I (counting from 0) or by value with --leaf 0x.. (its first \
occurrence in a leaf file; in a database, found through the nullifier set, so the database must \
keep one). A value that is not there exits 1; an index the tree does not reach exits 2.

With --tree NAME naming a family (a tree added with --capacity), --leaf finds the member \
holding the value and proves it there, printing `tree NAME/K member K index I` on stderr; \
--tree NAME/K proves in member K (--index counts in it).

With --size S the proof is against the tree as it was with its first S leaves (a historical \
proof, for a verifier that trusts that older root). With --root 0x.. (a database only) it is \
against the tree whose root that is: a root of a block-tagged head (`cairn heads`) or the \
current one; an unknown root exits 2.

With --tiles STORE (what `cairn publish` wrote: a directory or file://PATH, an http(s):// URL \
serving it, or s3://BUCKET/PREFIX with --s3-endpoint for S3-compatible servers) the proof of \
--index I is computed from the published tiles alone, fetching only those it needs (failed \
requests are retried with backoff), and checked against the head in STORE's checkpoint before \
it is printed (a tile that is short, oversized, missing or does not hash to that head exits 4, \
naming the object). With --verify-key FILE (verifier keys, one per line, as `cairn keygen` prints \
them; repeatable) that checkpoint must be signed by one of the keys, for its own origin: an \
unsigned, foreign or altered checkpoint exits 1 and nothing is proven; without it, the \
checkpoint is trusted as far as the place serving it.

--proof-format picks what is printed: `json` (the default, cairn's proof JSON), `zkkit` (arity 2: \
exactly what @zk-kit/lean-imt's generateProof returns for the same tree, {\"root\",\"leaf\",\"index\",\
\"siblings\"} with decimal values and zk-kit's compressed path index; for an imt of any arity, \
what @zk-kit/imt's createProof returns, {\"root\",\"leaf\",\"pathIndices\",\"siblings\",\
\"leafIndex\"}, N - 1 siblings per level with absent ones the level's zero), `circom` (a lean \
Poseidon tree: the input JSON of cairn's LeanIMTInclusion(N, D) circom template in circuits/, D = \
--circuit-depth, default the tree's depth) or `zkkit-circom` (arity 2, Poseidon: the inputs of \
zk-kit's BinaryMerkleRoot(D) template). A format the tree cannot have exits 2.

In an indexed database (`cairn init --kind indexed`), --absent 0x.. prints the absence proof of a \
value (its low leaf: the largest value below it, whose next value is above it or none, and that \
leaf's path; a value that is present exits 1), and --leaf or --index the membership proof of a \
value's leaf with its pointer (--index 0 is the guard leaf). With --size S or --root 0x.. they \
are against a retained earlier head: every size of the last 4,096 values when the database is \
opened (a server keeps one head per insert, the last 4,096); a size outside that window exits 2 \
naming it. With --absent, --proof-format circom (a \
Poseidon database) prints the input JSON of cairn's IndexedAbsence(N, D) circom template in \
circuits/indexed.circom instead (D = --circuit-depth, default the tree's depth).

--append-witness FROM..TO (a binary Poseidon lean database) prints the input JSON of cairn's \
LeanIMTAppend(K, D) circom template in circuits/append.circom, K = TO - FROM (a positive multiple \
of 4): that the leaves FROM..TO appended to the tree of the first FROM leaves give the tree of the \
first TO, from the old tree's frontier (docs/spec.md section 10.6). D = --circuit-depth, default \
the depth of the tree of TO leaves. The witness is recomputed with the tree's own append before \
it is printed.

Examples:
  cairn prove --arity 3 --hash sha256 --format hex --leaves leaves.hex --index 4 > proof.json
  cairn prove db --index 4
  cairn prove db --leaf 0x0000000000000000000000000000000000000000000000000000000000000005
  cairn prove db --index 4 --size 7 --binary > proof.bin
  cairn prove db --index 4 --root 0x3e3999cd6a77a34ae09f0d40912e365683144ad848f0d3f1c576737fdc43c920
  seq 1 5 | cairn prove --arity 2 --hash poseidon --format dec --index 4 --proof-format zkkit
  seq 1 9 | cairn prove --arity 3 --hash poseidon --format dec --index 4 --proof-format circom --circuit-depth 4
  seq 1 9 | cairn prove --arity 5 --hash poseidon --kind imt --depth 3 --format dec --index 7 --proof-format zkkit

  cairn publish db --to public && cairn prove --tiles public --index 4
  cairn prove --tiles https://tiles.example.org/nullifiers --index 4
  cairn keygen --name example.org/db --out db.key > db.vkey && cairn publish db --to public --sign-key db.key && cairn prove --tiles public --index 4 --verify-key db.vkey
  cairn prove db --append-witness 16..32 --circuit-depth 20 > input.json
  cairn prove spent --absent 0x000000000000000000000000000000000000000000000000000000000000000a
  cairn init nullifiers --kind indexed --arity 4 --hash poseidon && seq 1 9 | cairn ingest nullifiers --format dec && cairn prove nullifiers --absent 0x0000000000000000000000000000000000000000000000000000000000000010 --proof-format circom --circuit-depth 4";

/// Print the membership proof of one leaf.
#[derive(clap::Args, Debug)]
pub struct ProveCmd {
    /// A cairn database directory (instead of --leaves, --arity and --hash).
    #[arg(value_name = "DIR", conflicts_with_all = ["leaves", "arity", "hash", "kind", "depth", "zero", "format"])]
    dir: Option<PathBuf>,
    /// The tree of a database of several trees (default: the one named default, or the only one).
    #[arg(long, value_name = "NAME", requires = "dir")]
    tree: Option<String>,
    /// Published tiles to compute the proof from: a directory, file://PATH, http(s)://URL or s3://BUCKET/PREFIX.
    #[arg(long, value_name = "STORE", conflicts_with_all = ["dir", "leaves", "arity", "hash", "kind", "depth", "zero", "format", "leaf", "size", "root"])]
    tiles: Option<String>,
    /// With --tiles: how a remote store is reached.
    #[command(flatten)]
    remote: crate::commands::publish::RemoteArgs,
    /// With --tiles: trust only a checkpoint signed by a key in this file (one verifier key per line; repeatable).
    #[arg(long, value_name = "FILE", requires = "tiles")]
    verify_key: Vec<PathBuf>,
    /// Children per internal node, 2 to 16 (for a leaf file).
    #[arg(long, short = 'n', value_name = "N", value_parser = parse_arity, required_unless_present_any = ["dir", "tiles"])]
    arity: Option<Arity>,
    /// Node hash: blake3, sha256, keccak256, poseidon or mimcsponge (for a leaf file).
    #[arg(long, value_name = "HASH", value_parser = parse_hash_kind, required_unless_present_any = ["dir", "tiles"])]
    hash: Option<HashKind>,
    #[command(flatten)]
    kind: KindArgs,
    /// How the leaf file is written [default: bin].
    #[arg(long, value_enum, value_name = "FORMAT")]
    format: Option<Format>,
    /// The leaf file; - or nothing reads stdin.
    #[arg(long, value_name = "FILE")]
    leaves: Option<PathBuf>,
    /// The leaf to prove, counting from 0.
    #[arg(
        long,
        value_name = "I",
        required_unless_present_any = ["leaf", "absent", "append_witness", "insert_witness"],
        conflicts_with = "leaf"
    )]
    index: Option<u64>,
    /// The leaf to prove, by value (0x and 64 hex digits).
    #[arg(long, value_name = "0x..", value_parser = parse_root)]
    leaf: Option<Hash>,
    /// Prove that this value is absent (an indexed database: its low leaf and path).
    #[arg(long, value_name = "0x..", value_parser = parse_root, requires = "dir", conflicts_with_all = ["index", "leaf"])]
    absent: Option<Hash>,
    /// Print the inputs of the batch-append circuit for leaves FROM..TO (a binary Poseidon database).
    #[arg(long, value_name = "FROM..TO", value_parser = parse_range, requires = "dir", conflicts_with_all = ["index", "leaf", "absent", "size", "root", "binary", "proof_format"])]
    append_witness: Option<(u64, u64)>,
    /// Print the inputs of the indexed batch-insert circuit for these values (an indexed binary Poseidon database): V1,V2,... (0x-hex or decimal) or @FILE (one a line).
    #[arg(long, value_name = "V1,V2,..|@FILE", requires = "dir", conflicts_with_all = ["index", "leaf", "absent", "append_witness", "size", "root", "binary", "proof_format"])]
    insert_witness: Option<String>,
    /// Prove against the tree of the first S leaves (default: all of them).
    #[arg(long, value_name = "S", conflicts_with = "root")]
    size: Option<u64>,
    /// Prove against the tree whose root this is (a database's tagged or current root).
    #[arg(long, value_name = "0x..", value_parser = parse_root, requires = "dir")]
    root: Option<Hash>,
    /// Write the binary encoding instead of JSON (refused when stdout is a terminal).
    #[arg(long, conflicts_with = "proof_format")]
    binary: bool,
    /// What to print: cairn's proof JSON, zk-kit's LeanIMT proof, or circuit inputs.
    #[arg(long, value_enum, value_name = "FORMAT")]
    proof_format: Option<ProofFormat>,
    /// The circuit's maximum depth D, for --proof-format circom or zkkit-circom [default: the tree's depth].
    #[arg(long, value_name = "D")]
    circuit_depth: Option<u32>,
}

/// What `cairn prove` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ProofFormat {
    /// cairn's proof JSON (docs/spec.md).
    Json,
    /// @zk-kit/lean-imt's proof {root, leaf, index, siblings} (arity 2); an imt's: @zk-kit/imt's createProof.
    Zkkit,
    /// The inputs of cairn's LeanIMTInclusion circom template (Poseidon); with --absent, of IndexedAbsence.
    Circom,
    /// The inputs of zk-kit's BinaryMerkleRoot circom template (arity 2, Poseidon).
    ZkkitCircom,
}

/// `FROM..TO`: a range of leaf indices, FROM at most TO.
fn parse_range(text: &str) -> Result<(u64, u64), String> {
    let (from, to) = text
        .split_once("..")
        .ok_or_else(|| format!("want FROM..TO (two leaf counts, e.g. 16..32), got {text:?}"))?;
    let number = |part: &str, what: &str| {
        part.parse::<u64>()
            .map_err(|error| format!("{what} in {text:?}: {error}"))
    };
    let (from, to) = (number(from, "FROM")?, number(to, "TO")?);
    if from > to {
        return Err(format!("FROM {from} is above TO {to} in {text:?}"));
    }
    Ok((from, to))
}

/// The values of `--insert-witness`: comma-separated, or one a line in
/// the file after `@`; each 0x and 64 hex digits, or decimal (a BN254
/// field element).
fn parse_values(text: &str) -> anyhow::Result<Vec<Hash>> {
    let (list, separator): (String, char) = match text.strip_prefix('@') {
        Some(path) => (
            std::fs::read_to_string(path).with_context(|| format!("cannot read {path}"))?,
            '\n',
        ),
        None => (text.to_owned(), ','),
    };
    list.split(separator)
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .enumerate()
        .map(|(position, item)| {
            if item.starts_with("0x") {
                cairn_core::hex::parse_hash(item).map_err(anyhow::Error::new)
            } else {
                cairn_core::decimal::parse_field_element(item).map_err(anyhow::Error::new)
            }
            .with_context(|| format!("--insert-witness: value at position {position}"))
        })
        .collect()
}

/// Where a leaf looked up by value is.
fn found(leaf: &Hash, index: Option<u64>, size: Option<u64>, name: &str) -> Result<u64, Failure> {
    let Some(index) = index else {
        return Err(Failure::verdict(
            "absent",
            anyhow!("leaf {} is not in {name}", Hex(leaf)),
        ));
    };
    if let Some(size) = size
        && index >= size
    {
        return Err(Failure::new(
            Code::Usage,
            anyhow!(
                "leaf {} is leaf {index} of {name}, not in the tree of its first {size} leaves",
                Hex(leaf)
            ),
        ));
    }
    Ok(index)
}

impl ProveCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        if self.binary {
            output::check_binary_allowed()?;
        }
        let format = self.proof_format.unwrap_or(ProofFormat::Json);
        if self.circuit_depth.is_some()
            && self.append_witness.is_none()
            && self.insert_witness.is_none()
            && !matches!(format, ProofFormat::Circom | ProofFormat::ZkkitCircom)
        {
            return Err(Failure::new(
                Code::Usage,
                anyhow!(
                    "--circuit-depth is for --proof-format circom or zkkit-circom, not {}",
                    format
                        .to_possible_value()
                        .map_or("json".into(), |v| v.get_name().to_owned())
                ),
            ));
        }
        if let (Some((from, to)), Some(dir)) = (self.append_witness, &self.dir) {
            return self.print_append_witness(dir, from, to);
        }
        if let (Some(values), Some(dir)) = (&self.insert_witness, &self.dir) {
            return self.print_insert_witness(dir, values);
        }
        let proof = match (&self.dir, &self.tiles) {
            (Some(dir), _) => self.prove_db(dir)?,
            (None, Some(tiles)) => Proof::Membership(self.prove_tiles(tiles)?),
            (None, None) => Proof::Membership(self.prove_file()?),
        };
        let format = if self.binary {
            DbFormat::Binary
        } else {
            match format {
                ProofFormat::Json => DbFormat::Json,
                ProofFormat::Zkkit => DbFormat::Zkkit,
                ProofFormat::Circom => DbFormat::Circom,
                ProofFormat::ZkkitCircom => DbFormat::ZkkitCircom,
            }
        };
        let bytes = proof
            .render(format, self.circuit_depth)
            .map_err(|error| self.render_failure(&proof, error))?;
        if self.binary {
            return output::binary(&bytes);
        }
        output::line(&String::from_utf8(bytes).expect("proof JSON is text"))
    }

    /// The inputs of the batch-append circuit for leaves `from..to` of the database in `dir`.
    fn print_append_witness(
        &self,
        dir: &std::path::Path,
        from: u64,
        to: u64,
    ) -> Result<(), Failure> {
        let opened = database::read_tree(dir, self.tree.as_deref())?;
        let (dir, db) = (&opened.dir, opened.db);
        let witness = db.append_witness(from, Some(to));
        database::close(db)?;
        let name = dir.display();
        let witness = witness.map_err(|error| match error {
            DbError::Tree(error) => Failure::new(
                Code::Usage,
                anyhow::Error::new(error).context(format!(
                    "cannot make the append witness of leaves {from}..{to} of {name}"
                )),
            ),
            error @ DbError::Unsupported { .. } => {
                Failure::new(Code::Usage, anyhow!("--append-witness: {error}"))
            }
            error => database::db_failure(error),
        })?;
        let json = witness
            .to_circom_json(self.circuit_depth)
            .map_err(|error| {
                Failure::new(
                    Code::Usage,
                    anyhow::Error::new(error).context(format!(
                        "cannot print the append witness of leaves {from}..{to} of {name}"
                    )),
                )
            })?;
        output::line(&json)
    }

    /// The inputs of the indexed batch-insert circuit for `values` (a
    /// list or `@FILE`), inserted in order into the database in `dir`
    /// (which is not changed).
    fn print_insert_witness(&self, dir: &std::path::Path, values: &str) -> Result<(), Failure> {
        let values = parse_values(values).map_err(|error| Failure::new(Code::Usage, error))?;
        let opened = database::read_tree(dir, self.tree.as_deref())?;
        let (dir, db) = (&opened.dir, opened.db);
        let witness = db.insertion_witness(&values);
        database::close(db)?;
        let name = dir.display();
        let (head, witness) = witness.map_err(|error| {
            let context = format!("cannot make the insertion witness in {name}");
            // A value the tree holds: the verdict --absent gives it (exit 1).
            let held = matches!(&error, DbError::Duplicates { duplicates, .. }
                if duplicates.iter().any(|d| matches!(d.of, cairn_db::DuplicateOf::Leaf(_))));
            match error {
                error if held => {
                    Failure::verdict("present", anyhow::Error::new(error).context(context))
                }
                error @ (DbError::Duplicates { .. } | DbError::Indexed(_) | DbError::Tree(_)) => {
                    Failure::new(Code::Usage, anyhow::Error::new(error).context(context))
                }
                error @ (DbError::Unsupported { .. } | DbError::UnsupportedMutable { .. }) => {
                    Failure::new(Code::Usage, anyhow!("--insert-witness: {error}"))
                }
                error => database::db_failure(error),
            }
        })?;
        let json = witness
            .to_circom_json(&head, self.circuit_depth)
            .map_err(|error| {
                Failure::new(
                    Code::Usage,
                    anyhow::Error::new(error).context(format!(
                        "cannot print the insertion witness of {} values in {name}",
                        values.len()
                    )),
                )
            })?;
        output::line(&json)
    }

    /// Why `proof` cannot be printed as asked.
    fn render_failure(&self, proof: &Proof, error: RenderError) -> Failure {
        let message = match (proof, error) {
            (_, RenderError::Interop(error)) => {
                let what = match proof {
                    Proof::Absence(absence) => format!(
                        "cannot print the absence circuit's inputs for {}{}",
                        Hex(&absence.value()),
                        self.dir
                            .as_ref()
                            .map(|dir| format!(" in {}", dir.display()))
                            .unwrap_or_default()
                    ),
                    Proof::Membership(membership) => format!(
                        "cannot print the proof of leaf {} at size {}",
                        membership.index(),
                        proof.size()
                    ),
                    Proof::IndexedMembership(membership) => format!(
                        "cannot print the proof of leaf {} at size {}",
                        membership.index(),
                        proof.size()
                    ),
                };
                anyhow::Error::new(error).context(what)
            }
            (
                Proof::IndexedMembership(_),
                RenderError::NotFor {
                    format: "circom", ..
                },
            ) => anyhow!(
                "--proof-format circom in an indexed database prints the inputs of the absence circuit (IndexedAbsence): use it with --absent 0x.., not --leaf or --index"
            ),
            (_, RenderError::NotFor { .. }) => anyhow!(
                "--proof-format zkkit and zkkit-circom are for lean trees; an indexed database prints its own proof JSON (or --binary), or with --absent the inputs of its absence circuit (--proof-format circom)"
            ),
        };
        Failure::new(Code::Usage, message)
    }

    fn prove_tiles(&self, tiles: &str) -> Result<MembershipProof, Failure> {
        use cairn_tiles::{TileError, TileTree, Unsigned, read_checkpoint_checked};
        let trusted = crate::commands::mirror::trusted_keys(&self.verify_key)?;
        let store = crate::commands::publish::open_source(tiles, &self.remote)?;
        let checkpoint = match &trusted {
            None => read_checkpoint_checked(&*store, &Unsigned),
            Some(keys) => read_checkpoint_checked(&*store, keys),
        }
        .map_err(|error| match error {
            // A checkpoint the keys do not vouch for: a failed check.
            TileError::Signature { .. } => Failure::new(Code::Invalid, error),
            error => Failure::new(Code::Input, error),
        })?;
        let config = checkpoint.tree;
        let index = self.index.expect("clap requires --index with --tiles");
        let mut tree = TileTree::new(config, checkpoint.head, &*store);
        tree.prove(index).map_err(|error| match error {
            cairn_tiles::TileError::Tree(error) => Failure::new(
                Code::Usage,
                anyhow::Error::new(error)
                    .context(format!("cannot prove leaf {index} from {tiles}")),
            ),
            error => Failure::new(Code::Input, error),
        })
    }

    fn prove_file(&self) -> Result<MembershipProof, Failure> {
        let config = file_tree(self.arity, self.hash, &self.kind, "prove")?;
        let source = Source::from_arg(self.leaves.as_deref());
        let mut tree = build_tree(config, &source, self.format.unwrap_or_default())?;
        let size = self.size.unwrap_or(tree.size());
        let index = match (self.index, &self.leaf) {
            (Some(index), _) => index,
            (None, Some(leaf)) => {
                let at = tree.leaves().position(|l| l == leaf).map(|i| i as u64);
                found(leaf, at, self.size, &source.name())?
            }
            (None, None) => unreachable!("clap requires --index or --leaf"),
        };
        tree.prove_at(index, size)
            .with_context(|| {
                format!(
                    "cannot prove leaf {index} at size {size} from {}",
                    source.name()
                )
            })
            .or_exit(Code::Usage)
    }

    /// The proof asked of a database: absence, or membership by value or
    /// index, against its durable head or an earlier one it names.
    fn prove_db(&self, dir: &std::path::Path) -> Result<Proof, Failure> {
        // A family asked by value: the member holding it, named on stderr
        // with the index (the proof is that member's).
        let member = match (&self.tree, &self.leaf) {
            (Some(tree), Some(value)) if database::is_family(dir, Some(tree))? => {
                database::locate(dir, tree, value)?.map(|(name, member, _, index)| {
                    eprintln!("tree {} member {} index {index}", name, member.unwrap_or(0));
                    name
                })
            }
            _ => None,
        };
        let tree = member.as_deref().or(self.tree.as_deref());
        let lookups = self.leaf.is_some() || self.absent.is_some();
        let opened = if lookups {
            database::open_tree(dir, tree, database::Options::default())?
        } else {
            database::read_tree(dir, tree)?
        };
        let (dir, db) = (&opened.dir, opened.db);
        let at = match (self.root, self.size) {
            (Some(root), _) => At::Root(root),
            (None, Some(size)) => At::Size(size),
            (None, None) => At::Durable,
        };
        let proof = match (self.absent, &self.leaf, self.index) {
            (Some(value), _, _) => db.prove_absence_at(&value, at),
            (None, Some(value), _) => db.prove_value(value, at),
            (None, None, Some(index)) => db.prove(index, at),
            (None, None, None) => unreachable!("clap requires --index, --leaf or --absent"),
        };
        let proves_absence = db.supports(Operation::AbsenceProof).is_ok();
        database::close(db)?;
        proof.map_err(|error| self.prove_failure(dir, at, proves_absence, error))
    }

    /// What a refused proof means: a verdict for a value present or absent
    /// (exit 1), else a usage error naming what was asked (exit 2).
    fn prove_failure(
        &self,
        dir: &std::path::Path,
        at: At,
        proves_absence: bool,
        error: DbError,
    ) -> Failure {
        let name = dir.display();
        match error {
            DbError::Present { value, index } => Failure::verdict(
                "present",
                anyhow!(
                    "{} is leaf {index} of {name}: it has no absence proof (`cairn prove {name} --leaf {}` proves its membership)",
                    Hex(&value),
                    Hex(&value)
                ),
            ),
            DbError::Absent { value } => Failure::verdict(
                "absent",
                anyhow!(
                    "leaf {} is not in {name}{}",
                    Hex(&value),
                    if proves_absence {
                        format!(" (`cairn prove {name} --absent {}` proves it)", Hex(&value))
                    } else {
                        String::new()
                    }
                ),
            ),
            DbError::UnknownRoot { root, .. } => Failure::new(
                Code::Usage,
                anyhow!(
                    "{name} has no head with root {} (known: the current root and the block-tagged heads `cairn heads` lists)",
                    Hex(&root)
                ),
            ),
            // Asked by value: the leaf holds it, beyond the size asked.
            DbError::Tree(TreeError::IndexOutOfRange { index, size }) if self.leaf.is_some() => {
                Failure::new(
                    Code::Usage,
                    anyhow!(
                        "leaf {} is leaf {index} of {name}, not in the tree of its first {size} leaves",
                        Hex(&self.leaf.unwrap_or_default())
                    ),
                )
            }
            DbError::Tree(error) => {
                let size = match at {
                    At::Size(size) => format!("size {size}"),
                    _ => "its head".to_owned(),
                };
                Failure::new(
                    Code::Usage,
                    anyhow::Error::new(error).context(format!(
                        "cannot prove leaf {} at {size} from {name}",
                        self.index.unwrap_or_default()
                    )),
                )
            }
            // What the kind cannot do, naming the option that asked.
            error @ DbError::Unsupported { .. } => {
                let option = match (self.absent, at) {
                    (Some(_), _) => "--absent",
                    (None, At::Root(_)) => "--root",
                    (None, _) => "--size",
                };
                Failure::new(Code::Usage, anyhow!("{option}: {error}"))
            }
            error => database::db_failure(error),
        }
    }
}
