//! The `cairn` binary: parse, dispatch, map failures to exit codes.

use std::process::ExitCode;

use cairn_cli::{Cli, Code, cli};
use clap::Parser as _;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let args: Vec<_> = std::env::args_os().skip(1).collect();
            let Some(line) = cli::usage_error_line(&error, &args) else {
                // Help or version asked for, or help because nothing was given.
                error.exit()
            };
            eprintln!("{line}");
            return Code::Usage.into();
        }
    };
    match cli.command.run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            if let Some(line) = failure.report() {
                eprintln!("{line}");
            }
            failure.code().into()
        }
    }
}
