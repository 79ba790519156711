//! `cairn consistency`: the proof that an older tree is a prefix of a newer one.

use std::path::PathBuf;

use anyhow::Context as _;

use crate::args::{FormatArgs, Source, TreeArgs, build_tree};
use crate::failure::{Code, Failure, OrExit as _};
use crate::output;

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Print the consistency proof between the tree of the first --from leaves and the tree of the \
first --to leaves (default: all of them), as JSON (or binary with --binary).

From size 0 the proof is empty: the empty tree is a prefix of every tree. For equal sizes it \
proves that two roots are the same root.";

/// Print the proof that the tree at one size is a prefix of the tree at a larger one.
#[derive(clap::Args, Debug)]
pub struct ConsistencyCmd {
    #[command(flatten)]
    tree: TreeArgs,
    #[command(flatten)]
    format: FormatArgs,
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
        let source = Source::from_arg(self.leaves.as_deref());
        let mut tree = build_tree(self.tree, &source, self.format.format)?;
        let to = self.to.unwrap_or(tree.size());
        let proof = tree
            .prove_consistency(self.from, to)
            .with_context(|| {
                format!(
                    "cannot prove consistency from size {} to {to} from {}",
                    self.from,
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
