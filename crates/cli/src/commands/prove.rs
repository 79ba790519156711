//! `cairn prove`: the membership proof of one leaf.

use std::path::PathBuf;

use anyhow::Context as _;

use crate::args::{FormatArgs, Source, TreeArgs, build_tree};
use crate::failure::{Code, Failure, OrExit as _};
use crate::output;

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Print the membership proof of leaf --index of the tree holding the given leaves, as JSON (or \
binary with --binary).

With --size S the proof is against the tree as it was with its first S leaves (a historical \
proof, for a verifier that trusts that older root).";

/// Print the membership proof of one leaf.
#[derive(clap::Args, Debug)]
pub struct ProveCmd {
    #[command(flatten)]
    tree: TreeArgs,
    #[command(flatten)]
    format: FormatArgs,
    /// The leaf file; - or nothing reads stdin.
    #[arg(long, value_name = "FILE")]
    leaves: Option<PathBuf>,
    /// The leaf to prove, counting from 0.
    #[arg(long, value_name = "I")]
    index: u64,
    /// Prove against the tree of the first S leaves (default: all of them).
    #[arg(long, value_name = "S")]
    size: Option<u64>,
    /// Write the binary encoding instead of JSON (refused when stdout is a terminal).
    #[arg(long)]
    binary: bool,
}

impl ProveCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        if self.binary {
            output::check_binary_allowed()?;
        }
        let source = Source::from_arg(self.leaves.as_deref());
        let mut tree = build_tree(self.tree, &source, self.format.format)?;
        let size = self.size.unwrap_or(tree.size());
        let proof = tree
            .prove_at(self.index, size)
            .with_context(|| {
                format!(
                    "cannot prove leaf {} at size {size} from {}",
                    self.index,
                    source.name()
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
