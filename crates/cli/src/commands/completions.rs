//! `cairn completions SHELL`: a shell completion script, generated from the
//! same parser the binary uses, so it never lags behind a new option.

use clap::CommandFactory as _;
use clap_complete::Shell;

use crate::Cli;
use crate::failure::Failure;
use crate::output;

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Print a completion script for SHELL (bash, zsh, fish, elvish or powershell) on stdout: every \
command, option and value cairn knows.

Examples:
  cairn completions bash > ~/.local/share/bash-completion/completions/cairn
  cairn completions zsh > ~/.zfunc/_cairn
  cairn completions fish > ~/.config/fish/completions/cairn.fish";

/// Print a shell completion script.
#[derive(clap::Args, Debug)]
pub struct CompletionsCmd {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_name = "SHELL")]
    shell: Shell,
}

impl CompletionsCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        let mut script = Vec::new();
        clap_complete::generate(self.shell, &mut Cli::command(), "cairn", &mut script);
        output::binary(&script)
    }
}
