//! `cairn consistency`: the proof that an older tree is a prefix of a newer
//! one, from a leaf file or a database.

use std::path::PathBuf;

use anyhow::Context as _;
use cairn_core::{Arity, HashKind};

use crate::args::{KindArgs, Source, build_tree, file_tree, parse_arity, parse_hash_kind};
use crate::database;
use crate::failure::{Code, Failure, OrExit as _};
use crate::leaves::Format;
use crate::output;

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Print the consistency proof between the tree of the first --from leaves and the tree of the \
first --to leaves (default: all of them), as JSON (or binary with --binary): of the leaves of \
--leaves FILE (with --arity and --hash, and --kind imt --depth D [--zero Z] for a fixed-depth \
tree), or of the cairn database DIR.

From size 0 the proof is empty: the empty tree is a prefix of every tree. For equal sizes it \
proves that two roots are the same root.

Examples:
  cairn consistency --arity 3 --hash sha256 --format hex --leaves leaves.hex --from 4 --to 7
  cairn consistency db --from 4 > c.json
  cairn consistency db --from 4 --to 7 --binary > c.bin";

/// Print the proof that the tree at one size is a prefix of the tree at a larger one.
#[derive(clap::Args, Debug)]
pub struct ConsistencyCmd {
    /// A cairn database directory (instead of --leaves, --arity and --hash).
    #[arg(value_name = "DIR", conflicts_with_all = ["leaves", "arity", "hash", "kind", "depth", "zero", "format"])]
    dir: Option<PathBuf>,
    /// With DIR: the tree of a database of several trees (default: the one named default, or the only one).
    #[arg(long, value_name = "NAME", requires = "dir")]
    tree: Option<String>,
    /// Children per internal node, 2 to 16 (for a leaf file).
    #[arg(long, short = 'n', value_name = "N", value_parser = parse_arity, required_unless_present = "dir")]
    arity: Option<Arity>,
    /// Node hash: blake3, sha256, keccak256, poseidon or mimcsponge (for a leaf file).
    #[arg(long, value_name = "HASH", value_parser = parse_hash_kind, required_unless_present = "dir")]
    hash: Option<HashKind>,
    #[command(flatten)]
    kind: KindArgs,
    /// How the leaf file is written [default: bin].
    #[arg(long, value_enum, value_name = "FORMAT")]
    format: Option<Format>,
    /// The leaf file; - or nothing reads stdin.
    #[arg(long, value_name = "FILE")]
    leaves: Option<PathBuf>,
    /// The older size.
    #[arg(long, value_name = "S1")]
    from: u64,
    /// The newer size (default: the number of leaves).
    #[arg(long, value_name = "S2")]
    to: Option<u64>,
    /// Write the binary encoding instead of JSON (refused when stdout is a terminal).
    #[arg(long)]
    binary: bool,
}

impl ConsistencyCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        if self.binary {
            output::check_binary_allowed()?;
        }
        let (proof, to, name) = match &self.dir {
            Some(dir) => {
                let db = database::read_tree(dir, self.tree.as_deref())?.db;
                let to = self.to.unwrap_or(db.durable_size());
                let proof = db.prove_consistency(self.from, Some(to));
                database::close(db)?;
                (
                    proof.map_err(anyhow::Error::new),
                    to,
                    dir.display().to_string(),
                )
            }
            None => {
                let config = file_tree(self.arity, self.hash, &self.kind, "consistency")?;
                let source = Source::from_arg(self.leaves.as_deref());
                let mut tree = build_tree(config, &source, self.format.unwrap_or_default())?;
                let to = self.to.unwrap_or(tree.size());
                (
                    tree.prove_consistency(self.from, to)
                        .map_err(anyhow::Error::new),
                    to,
                    source.name(),
                )
            }
        };
        let proof = proof
            .with_context(|| {
                format!(
                    "cannot prove consistency from size {} to {to} from {name}",
                    self.from
                )
            })
            .or_exit(Code::Usage)?;
        if self.binary {
            output::binary(&proof.to_bytes())
        } else {
            output::line(&proof.to_json())
        }
    }
}
