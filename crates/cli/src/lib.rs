//! The `cairn` command-line tool, as a library so that its parts can be
//! tested in-process. `main.rs` only parses, dispatches and maps failures to
//! exit codes.
//!
//! Layout: [`cli`] is the top-level parser and its help text, [`args`] the
//! options several commands share, [`leaves`] reading leaf files, [`proof_file`]
//! reading proof files, [`output`] writing to stdout, [`failure`] exit codes
//! and the one-line error report, and [`commands`] one file per subcommand.

pub mod args;
pub mod cli;
pub mod commands;
pub mod failure;
pub mod leaves;
pub mod output;
pub mod proof_file;

pub use cli::Cli;
pub use failure::{Code, Failure};
