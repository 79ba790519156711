//! `cairn root`: the root of the tree holding the given leaves.

use std::path::PathBuf;

use cairn_core::hex::to_hex;

use crate::args::{FormatArgs, Source, TreeArgs, build_tree};
use crate::failure::{Code, Failure};
use crate::output;

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Print the root of the tree holding the given leaves, as 0x-hex.

The empty tree has no root: with no leaves, nothing is printed on stdout, \"empty tree: no root\" \
goes to stderr and the exit code is 1. With --json the empty tree is not an error: the root is \
null and the exit code is 0.";

/// Print the root of the tree holding the given leaves.
#[derive(clap::Args, Debug)]
pub struct RootCmd {
    #[command(flatten)]
    tree: TreeArgs,
    #[command(flatten)]
    format: FormatArgs,
    /// Print {"size":..,"depth":..,"root":"0x.."|null,"arity":..,"hash":".."} on one line.
    #[arg(long)]
    json: bool,
    /// The leaf file; - or nothing reads stdin.
    #[arg(value_name = "FILE")]
    source: Option<PathBuf>,
}

impl RootCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        let source = Source::from_arg(self.source.as_deref());
        let mut tree = build_tree(self.tree, &source, self.format.format)?;
        let root = tree.root();
        if self.json {
            let root = root.map_or_else(
                || "null".to_owned(),
                |root| format!("\"{}\"", to_hex(&root)),
            );
            return output::line(&format!(
                r#"{{"size":{},"depth":{},"root":{root},"arity":{},"hash":"{}"}}"#,
                tree.size(),
                tree.depth(),
                self.tree.arity,
                self.tree.hash,
            ));
        }
        match root {
            Some(root) => output::line(&to_hex(&root)),
            None => Err(Failure::new(
                Code::Invalid,
                anyhow::anyhow!(
                    "empty tree: no root ({} has no leaves; --json prints \"root\":null)",
                    source.name()
                ),
            )),
        }
    }
}
