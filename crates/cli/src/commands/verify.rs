//! `cairn verify`: check a membership proof against a trusted head.

use std::path::PathBuf;

use cairn_core::hex::Hex;
use cairn_core::{Hash, TreeHead};

use crate::args::{Source, TreeArgs, parse_root};
use crate::failure::{Code, Failure};
use crate::{output, proof_file};

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Check a membership proof (JSON or binary) against the root and size you trust. Prints \
\"valid: ...\" and exits 0, or prints \"invalid: <reason>\" on stderr and exits 1. A proof file \
that is not a well-formed proof also exits 1.";

/// Check a membership proof against a trusted root and size.
#[derive(clap::Args, Debug)]
pub struct VerifyCmd {
    #[command(flatten)]
    tree: TreeArgs,
    /// The trusted root, 0x and 64 hex digits.
    #[arg(long, value_name = "R", value_parser = parse_root)]
    root: Hash,
    /// The trusted size (number of leaves), at least 1.
    #[arg(long, value_name = "S")]
    size: u64,
    /// The proof file; - or nothing reads stdin.
    #[arg(value_name = "PROOF_FILE")]
    proof: Option<PathBuf>,
}

impl VerifyCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        if self.size == 0 {
            return Err(Failure::new(
                Code::Usage,
                anyhow::anyhow!(
                    "--size 0 is the empty tree, which has no root and no leaves to prove"
                ),
            ));
        }
        let proof = proof_file::membership(&Source::from_arg(self.proof.as_deref()))?;
        let head = TreeHead::new(self.size, self.root);
        proof
            .verify(self.tree.arity, self.tree.hash, &head)
            .map_err(Failure::rejected)?;
        output::line(&format!(
            "valid: leaf {} is leaf {} of the tree of size {} with root {}",
            Hex(&proof.leaf()),
            proof.index(),
            self.size,
            Hex(&self.root),
        ))
    }
}
