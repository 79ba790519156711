//! The subcommands, one file each.
//!
//! Commands that read leaves take the file as an argument that is either a
//! positional (`root`) or `--leaves`. The database commands to come (`cairn
//! init DIR`, `cairn root DIR`, ...) fit beside them: `root`'s positional is
//! a source, and a directory there will name a database whose stored arity
//! and hash make `--arity`/`--hash` unnecessary. `plan` reads nothing: its
//! `--leaves` is a count, and its model is public for reuse.

mod consistency;
pub mod plan;
mod prove;
mod root;
mod verify;
mod verify_consistency;

use crate::failure::Failure;

pub use consistency::ConsistencyCmd;
pub use plan::PlanCmd;
pub use prove::ProveCmd;
pub use root::RootCmd;
pub use verify::VerifyCmd;
pub use verify_consistency::VerifyConsistencyCmd;

/// A `cairn` subcommand.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Print the root of the tree holding the given leaves.
    #[command(long_about = root::LONG_ABOUT)]
    Root(RootCmd),
    /// Print the membership proof of one leaf.
    #[command(long_about = prove::LONG_ABOUT)]
    Prove(ProveCmd),
    /// Check a membership proof against a trusted root and size.
    #[command(long_about = verify::LONG_ABOUT)]
    Verify(VerifyCmd),
    /// Print the proof that the tree at one size is a prefix of the tree at a larger one.
    #[command(long_about = consistency::LONG_ABOUT)]
    Consistency(ConsistencyCmd),
    /// Check a consistency proof against two trusted heads.
    #[command(long_about = verify_consistency::LONG_ABOUT)]
    VerifyConsistency(VerifyConsistencyCmd),
    /// Model a tree of L leaves at each arity (proofs, memory, disk, circuits) and recommend one.
    #[command(long_about = plan::LONG_ABOUT)]
    Plan(PlanCmd),
}

impl Command {
    /// Runs the command, printing its result on stdout.
    pub fn run(self) -> Result<(), Failure> {
        match self {
            Command::Root(cmd) => cmd.run(),
            Command::Prove(cmd) => cmd.run(),
            Command::Verify(cmd) => cmd.run(),
            Command::Consistency(cmd) => cmd.run(),
            Command::VerifyConsistency(cmd) => cmd.run(),
            Command::Plan(cmd) => cmd.run(),
        }
    }
}
