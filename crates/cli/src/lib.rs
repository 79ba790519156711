//! The `cairn` command-line tool, as a library so that its parts can be
//! tested in-process. `main.rs` only parses, dispatches and maps failures to
//! exit codes.
//!
//! Layout: [`cli`] is the top-level parser and its help text, [`args`] the
//! options several commands share, [`leaves`] reading leaf files (whole or
//! streamed in blocks), [`proof_file`] reading proof files, [`database`]
//! opening database directories and mapping their errors to exit codes,
//! [`output`] writing to stdout, [`json`] the one-line JSON reports,
//! [`progress`] the ingest progress bar, [`signing`] signer keys
//! (files and a database's own), [`failure`] exit codes and the
//! one-line error report, [`units`] leaf counts and sizes written for
//! people, and [`commands`] one file per subcommand.

pub mod args;
pub mod cli;
pub mod commands;
pub mod database;
pub mod failure;
pub mod json;
pub mod leaves;
pub mod output;
pub mod progress;
pub mod proof_file;
pub mod signing;
pub mod units;

pub use cli::Cli;
pub use failure::{Code, Failure};
