//! The subcommands, one file each (`truncate` and `finalize` share
//! `rollback.rs`).
//!
//! Two kinds of source: a leaf file (`root FILE`, `--leaves FILE`, with
//! `--arity` and `--hash`) or a database directory, which stores its arity
//! and hash. `root`'s positional is either, told apart by whether it is a
//! directory holding `cairn.meta`; `prove` and `consistency` take a
//! database as an optional positional beside `--leaves`; `verify` and
//! `verify-consistency` take `--db DIR` for the trusted head. Every other
//! command that reads or writes a database takes its directory as a
//! positional (`demo`'s is optional: a temporary one by default). `plan`
//! reads nothing: its `--leaves` is a count, and its model is public for
//! reuse. `keygen` writes a key file;
//! `verify-checkpoint` reads a signed checkpoint and a key. `completions`
//! and `man` print what clap generates from the parser.

mod backup;
mod change;
mod check;
mod checkpoint;
mod completions;
mod consistency;
mod contains;
pub mod demo;
mod export;
mod follow;
mod forest_tiles;
mod heads;
mod ingest;
mod init;
mod keygen;
mod man;
mod mirror;
pub mod plan;
mod prove;
pub(crate) mod publish;
mod repair;
mod rollback;
mod root;
mod serve;
mod sign_key;
mod signed_checkpoint;
mod stats;
mod tree;
mod verify;
mod verify_checkpoint;
mod verify_consistency;

use crate::failure::Failure;

pub use backup::BackupCmd;
pub use change::{RemoveCmd, UpdateCmd};
pub use check::CheckCmd;
pub use checkpoint::CheckpointCmd;
pub use completions::CompletionsCmd;
pub use consistency::ConsistencyCmd;
pub use contains::ContainsCmd;
pub use demo::DemoCmd;
pub use export::ExportCmd;
pub use follow::FollowCmd;
pub use heads::HeadsCmd;
pub use ingest::IngestCmd;
pub use init::InitCmd;
pub use keygen::KeygenCmd;
pub use man::ManCmd;
pub use mirror::MirrorCmd;
pub use plan::PlanCmd;
pub use prove::ProveCmd;
pub use publish::PublishCmd;
pub use repair::RepairCmd;
pub use rollback::{FinalizeCmd, TruncateCmd};
pub use root::RootCmd;
pub use serve::ServeCmd;
pub use sign_key::SignKeyCmd;
pub use signed_checkpoint::SignedCheckpointCmd;
pub use stats::StatsCmd;
pub use tree::{TreeCmd, TreesCmd};
pub use verify::VerifyCmd;
pub use verify_checkpoint::VerifyCheckpointCmd;
pub use verify_consistency::VerifyConsistencyCmd;

/// A `cairn` subcommand.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Create an empty database in a directory.
    #[command(long_about = init::LONG_ABOUT)]
    Init(InitCmd),
    /// Add a named tree to a database.
    #[command(long_about = tree::TREE_ABOUT)]
    Tree(TreeCmd),
    /// List a database's trees.
    #[command(long_about = tree::TREES_ABOUT)]
    Trees(TreesCmd),
    /// Append leaves to a database durably, block by block.
    #[command(long_about = ingest::LONG_ABOUT)]
    Ingest(IngestCmd),
    /// Print the root of the tree holding the given leaves, or of a database.
    #[command(long_about = root::LONG_ABOUT)]
    Root(RootCmd),
    /// Print a database's size, shape, checkpoint, set and bytes on disk.
    #[command(long_about = stats::LONG_ABOUT)]
    Stats(StatsCmd),
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
    /// Tell whether a database holds a value, and its index.
    #[command(long_about = contains::LONG_ABOUT)]
    Contains(ContainsCmd),
    /// Write a database checkpoint now.
    #[command(long_about = checkpoint::LONG_ABOUT)]
    Checkpoint(CheckpointCmd),
    /// Verify every level of a database and its nullifier set.
    #[command(long_about = check::LONG_ABOUT)]
    Check(CheckCmd),
    /// Roll a database back to an earlier size or block (a chain reorganisation).
    #[command(long_about = rollback::TRUNCATE_ABOUT)]
    Truncate(TruncateCmd),
    /// Set one leaf of a mutable database to a new value; print the old leaf's proof.
    #[command(long_about = change::UPDATE_ABOUT)]
    Update(UpdateCmd),
    /// Set one leaf of a mutable database to the zero leaf; print the old leaf's proof.
    #[command(long_about = change::REMOVE_ABOUT)]
    Remove(RemoveCmd),
    /// Mark a database's first leaves final: never rolled back.
    #[command(long_about = rollback::FINALIZE_ABOUT)]
    Finalize(FinalizeCmd),
    /// Publish a database as immutable tiles to a directory or S3 (for any static server or CDN).
    #[command(long_about = publish::LONG_ABOUT)]
    Publish(PublishCmd),
    /// List the block-tagged heads (block, size, root).
    #[command(long_about = heads::LONG_ABOUT)]
    Heads(HeadsCmd),
    /// Follow a contract's events on an Ethereum node into a database, through reorganisations.
    #[command(long_about = follow::LONG_ABOUT)]
    Follow(FollowCmd),
    /// Copy a database consistently, also while it is served.
    #[command(long_about = backup::LONG_ABOUT)]
    Backup(BackupCmd),
    /// Write a database's leaves to stdout, raw or hex.
    #[command(long_about = export::LONG_ABOUT)]
    Export(ExportCmd),
    /// Model a tree of L leaves at each arity (proofs, memory, disk, circuits) and recommend one.
    #[command(long_about = plan::LONG_ABOUT)]
    Plan(PlanCmd),
    /// Run the main job end to end on a real database and print each step's figures.
    #[command(long_about = demo::LONG_ABOUT)]
    Demo(DemoCmd),
    /// Serve a database over HTTP (appends, proofs, lookups, metrics).
    #[command(long_about = serve::LONG_ABOUT)]
    Serve(ServeCmd),
    /// Generate an Ed25519 key that signs a database's checkpoints.
    #[command(long_about = keygen::LONG_ABOUT)]
    Keygen(KeygenCmd),
    /// Make a database sign its checkpoints with a key.
    #[command(long_about = sign_key::LONG_ABOUT)]
    SignKey(SignKeyCmd),
    /// Print a database's durable head as a signed checkpoint (C2SP signed note).
    #[command(long_about = signed_checkpoint::LONG_ABOUT)]
    SignedCheckpoint(SignedCheckpointCmd),
    /// Check a signed checkpoint with a verifier key.
    #[command(long_about = verify_checkpoint::LONG_ABOUT)]
    VerifyCheckpoint(VerifyCheckpointCmd),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(long_about = completions::LONG_ABOUT)]
    Completions(CompletionsCmd),
    /// Print or write the manual pages.
    #[command(long_about = man::LONG_ABOUT)]
    Man(ManCmd),
    /// Copy a tile store or a cairn server into a database, verifying every head (a mirror).
    #[command(long_about = mirror::LONG_ABOUT)]
    Mirror(MirrorCmd),
    /// Rebuild a damaged database from what it still holds and a replica (a signed tile store or a mirror).
    #[command(long_about = repair::LONG_ABOUT)]
    Repair(RepairCmd),
}

impl Command {
    /// Runs the command, printing its result on stdout.
    pub fn run(self) -> Result<(), Failure> {
        match self {
            Command::Init(cmd) => cmd.run(),
            Command::Tree(cmd) => cmd.run(),
            Command::Trees(cmd) => cmd.run(),
            Command::Ingest(cmd) => cmd.run(),
            Command::Root(cmd) => cmd.run(),
            Command::Stats(cmd) => cmd.run(),
            Command::Prove(cmd) => cmd.run(),
            Command::Verify(cmd) => cmd.run(),
            Command::Consistency(cmd) => cmd.run(),
            Command::VerifyConsistency(cmd) => cmd.run(),
            Command::Contains(cmd) => cmd.run(),
            Command::Checkpoint(cmd) => cmd.run(),
            Command::Check(cmd) => cmd.run(),
            Command::Export(cmd) => cmd.run(),
            Command::Backup(cmd) => cmd.run(),
            Command::Truncate(cmd) => cmd.run(),
            Command::Finalize(cmd) => cmd.run(),
            Command::Update(cmd) => cmd.run(),
            Command::Remove(cmd) => cmd.run(),
            Command::Heads(cmd) => cmd.run(),
            Command::Follow(cmd) => cmd.run(),
            Command::Publish(cmd) => cmd.run(),
            Command::Plan(cmd) => cmd.run(),
            Command::Demo(cmd) => cmd.run(),
            Command::Serve(cmd) => cmd.run(),
            Command::Keygen(cmd) => cmd.run(),
            Command::SignKey(cmd) => cmd.run(),
            Command::SignedCheckpoint(cmd) => cmd.run(),
            Command::VerifyCheckpoint(cmd) => cmd.run(),
            Command::Completions(cmd) => cmd.run(),
            Command::Man(cmd) => cmd.run(),
            Command::Mirror(cmd) => cmd.run(),
            Command::Repair(cmd) => cmd.run(),
        }
    }
}
