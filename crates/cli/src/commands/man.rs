//! `cairn man`: the manual pages, generated from the parser and its help
//! texts (one source for `--help` and `man cairn`).

use std::path::PathBuf;

use anyhow::anyhow;
use clap::CommandFactory as _;

use crate::Cli;
use crate::failure::{Code, Failure};
use crate::output;

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Print the cairn(1) manual page (roff) on stdout, or with --dir DIR write cairn.1 and one page \
per command (cairn-ingest.1, ...) into DIR (created if missing) and list them.

Examples:
  cairn man | man -l -
  cairn man --dir ~/.local/share/man/man1";

/// Print or write the manual pages.
#[derive(clap::Args, Debug)]
pub struct ManCmd {
    /// Write every page into this directory instead of printing cairn(1).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

impl ManCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        let cli = Cli::command();
        let Some(dir) = self.dir else {
            let mut page = Vec::new();
            clap_mangen::Man::new(cli)
                .render(&mut page)
                .map_err(|e| Failure::new(Code::Input, anyhow!("cannot render the manual: {e}")))?;
            return output::binary(&page);
        };
        let failed = |e: std::io::Error| {
            Failure::new(
                Code::Input,
                anyhow!("{}: cannot write the manual: {e}", dir.display()),
            )
        };
        std::fs::create_dir_all(&dir).map_err(failed)?;
        clap_mangen::generate_to(cli, &dir).map_err(failed)?;
        let mut pages: Vec<String> = std::fs::read_dir(&dir)
            .map_err(failed)?
            .filter_map(|entry| entry.ok())
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with("cairn") && name.ends_with(".1"))
            .collect();
        pages.sort();
        for page in pages {
            output::line(&dir.join(page).display().to_string())?;
        }
        Ok(())
    }
}
