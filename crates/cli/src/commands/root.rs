//! `cairn root`: the root of the tree holding the given leaves, or of a
//! database.

use std::path::PathBuf;

use anyhow::anyhow;
use cairn_core::hex::to_hex;
use cairn_core::{Arity, HashKind, TreeHead};

use crate::args::{
    KindArgs, Source, build_tree, file_tree, parse_arity, parse_hash_kind, refuse_tree_options,
};
use crate::database;
use crate::failure::{Code, Failure};
use crate::json::Object;
use crate::leaves::Format;
use crate::output;

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Print the root of a tree, as 0x-hex: of the leaves in FILE (with --arity and --hash, and \
--kind imt --depth D [--zero Z] for zk-kit's fixed-depth IMT), or of the cairn database in DIR (a \
directory holding cairn.meta; its arity, hash and kind are stored, so --arity, --hash, the kind \
options and --format are refused).

The empty lean tree has no root: with no leaves, nothing is printed on stdout, \"empty tree: no \
root\" goes to stderr and the exit code is 1. With --json the empty tree is not an error: the root \
is null and the exit code is 0. The empty imt's root is its top zero hash, zeros[D], printed as \
any root.

--json prints {\"size\":S,\"depth\":d,\"root\":\"0x..\"|null,\"arity\":N,\"hash\":\"..\",\
\"kind\":\"lean\"|\"imt\"|\"indexed\",\"zero\":\"0x..\"|null} (depth: an imt's fixed depth; zero: an imt's).

Examples:
  cairn root --arity 4 --hash blake3 leaves.bin
  cairn root --arity 2 --hash poseidon --format hex - < leaves.hex
  cairn root --arity 2 --hash poseidon --kind imt --depth 20 leaves.bin
  cairn root db
  cairn root --json db";

/// Print the root of the tree holding the given leaves, or of a database.
#[derive(clap::Args, Debug)]
pub struct RootCmd {
    /// Children per internal node, 2 to 16 (for a leaf file).
    #[arg(long, short = 'n', value_name = "N", value_parser = parse_arity)]
    arity: Option<Arity>,
    /// Node hash: blake3, sha256, keccak256, poseidon or mimcsponge (for a leaf file).
    #[arg(long, value_name = "HASH", value_parser = parse_hash_kind)]
    hash: Option<HashKind>,
    /// How the leaf file is written [default: bin].
    #[arg(long, value_enum, value_name = "FORMAT")]
    format: Option<Format>,
    #[command(flatten)]
    kind: KindArgs,
    /// Print {"size":..,"depth":..,"root":"0x.."|null,"arity":..,"hash":"..","kind":..,"zero":..} on one line.
    #[arg(long)]
    json: bool,
    /// A leaf file (- or nothing reads stdin), or a database directory.
    #[arg(value_name = "FILE|DIR")]
    source: Option<PathBuf>,
    /// The tree of a database of several trees (default: the one named default, or the only one).
    #[arg(long, value_name = "NAME", requires = "source")]
    tree: Option<String>,
}

impl RootCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        let (head, depth, config, name) = match &self.source {
            Some(dir) if database::is_database(dir) || cairn_db::is_forest(dir) => {
                refuse_tree_options(dir, self.arity, self.hash, &self.kind, self.format)?;
                let opened = database::read_tree(dir, self.tree.as_deref())?;
                let (dir, db) = (&opened.dir, opened.db);
                let (head, config) = (db.head(), db.tree_config());
                database::close(db)?;
                (
                    head,
                    config.depth_at(head.size),
                    config,
                    format!("the database {} has no leaves", dir.display()),
                )
            }
            source => {
                let source = Source::from_arg(source.as_deref());
                if let Source::File(path) = &source
                    && path.is_dir()
                {
                    return Err(Failure::new(
                        Code::Input,
                        anyhow!(
                            "{}: cannot read: a directory, and not a cairn database (it has no {})",
                            path.display(),
                            database::META_FILE
                        ),
                    ));
                }
                let config = file_tree(self.arity, self.hash, &self.kind, "root")?;
                let mut tree = build_tree(config, &source, self.format.unwrap_or_default())?;
                (
                    tree.head(),
                    tree.depth(),
                    config,
                    format!("{} has no leaves", source.name()),
                )
            }
        };
        let TreeHead { size, root } = head;
        if self.json {
            return output::line(
                &Object::new()
                    .field("size", size)
                    .field("depth", depth)
                    .hash("root", root.as_ref())
                    .field("arity", config.arity.as_u64())
                    .field("hash", config.hash.name())
                    .field("kind", config.kind.name())
                    .hash("zero", config.kind.zero().as_ref())
                    .finish(),
            );
        }
        match root {
            Some(root) => output::line(&to_hex(&root)),
            None => Err(Failure::new(
                Code::Invalid,
                anyhow!("empty tree: no root ({name}; --json prints \"root\":null)"),
            )),
        }
    }
}
