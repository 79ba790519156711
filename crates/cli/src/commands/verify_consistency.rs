//! `cairn verify-consistency`: check a consistency proof against two trusted heads.

use std::path::PathBuf;

use cairn_core::hex::Hex;
use cairn_core::{Hash, TreeHead};

use crate::args::{Source, TreeArgs, parse_root};
use crate::failure::{Code, Failure};
use crate::{output, proof_file};

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Check a consistency proof (JSON or binary): the tree of --old-size leaves with --old-root is a \
prefix of the tree of --new-size leaves with --new-root. Prints \"valid: ...\" and exits 0, or \
prints \"invalid: <reason>\" on stderr and exits 1. A proof file that is not a well-formed proof \
also exits 1.

The empty tree has no root: omit --old-root exactly when --old-size is 0 (and --new-root \
exactly when --new-size is 0). A proof from size 0 is empty and checks no root: the empty tree \
is a prefix of every tree.";

/// Check a consistency proof against two trusted heads.
#[derive(clap::Args, Debug)]
pub struct VerifyConsistencyCmd {
    #[command(flatten)]
    tree: TreeArgs,
    /// The trusted older root; omitted when --old-size is 0.
    #[arg(long, value_name = "R1", value_parser = parse_root)]
    old_root: Option<Hash>,
    /// The trusted older size.
    #[arg(long, value_name = "S1")]
    old_size: u64,
    /// The trusted newer root; omitted when --new-size is 0.
    #[arg(long, value_name = "R2", value_parser = parse_root)]
    new_root: Option<Hash>,
    /// The trusted newer size.
    #[arg(long, value_name = "S2")]
    new_size: u64,
    /// The proof file; - or nothing reads stdin.
    #[arg(value_name = "PROOF_FILE")]
    proof: Option<PathBuf>,
}

/// The head `--{which}-size` and `--{which}-root` describe; a root is
/// required exactly when the size is not 0.
fn head(which: &str, size: u64, root: Option<Hash>) -> Result<TreeHead, Failure> {
    match (size, root) {
        (0, None) => Ok(TreeHead::EMPTY),
        (0, Some(_)) => Err(Failure::new(
            Code::Usage,
            anyhow::anyhow!(
                "--{which}-root must be omitted when --{which}-size is 0: the empty tree has no root"
            ),
        )),
        (size, None) => Err(Failure::new(
            Code::Usage,
            anyhow::anyhow!("--{which}-root is required when --{which}-size is {size}"),
        )),
        (size, Some(root)) => Ok(TreeHead::new(size, root)),
    }
}

fn describe(head: &TreeHead) -> String {
    match &head.root {
        Some(root) => format!("the tree of size {} with root {}", head.size, Hex(root)),
        None => "the empty tree".to_owned(),
    }
}

impl VerifyConsistencyCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        let old = head("old", self.old_size, self.old_root)?;
        let new = head("new", self.new_size, self.new_root)?;
        let proof = proof_file::consistency(&Source::from_arg(self.proof.as_deref()))?;
        proof
            .verify(self.tree.arity, self.tree.hash, &old, &new)
            .map_err(Failure::rejected)?;
        let mut message = format!(
            "valid: {} is a prefix of {}",
            describe(&old),
            describe(&new)
        );
        if old.size == 0 && new.size > 0 {
            message.push_str(" (trivially: a proof from size 0 checks no root)");
        }
        output::line(&message)
    }
}
