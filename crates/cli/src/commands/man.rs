//! `cairn man`: the manual pages, generated from the parser and its help
//! texts (one source for `--help` and `man cairn`). The help texts hold
//! preformatted blocks (examples, the exit status table), indented by two
//! spaces; roff would fill them into one paragraph, so every such run of
//! lines is kept as it is written (`.nf` .. `.fi`).

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
            return output::binary(preformatted(&String::from_utf8_lossy(&page)).as_bytes());
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
        for page in &pages {
            let path = dir.join(page);
            let text = std::fs::read_to_string(&path).map_err(failed)?;
            std::fs::write(&path, preformatted(&text)).map_err(failed)?;
        }
        for page in pages {
            output::line(&dir.join(page).display().to_string())?;
        }
        Ok(())
    }
}

/// `roff` with every run of text lines indented by two spaces or more
/// (a help text's examples and tables) between `.nf` and `.fi`, so that
/// `man` shows them line for line instead of filling them.
fn preformatted(roff: &str) -> String {
    let mut out = String::with_capacity(roff.len() + 256);
    let mut in_block = false;
    for line in roff.lines() {
        let indented = line.starts_with("  ") && !line.trim().is_empty();
        if indented && !in_block {
            out.push_str(".nf\n");
            in_block = true;
        } else if !indented && in_block {
            out.push_str(".fi\n");
            in_block = false;
        }
        out.push_str(line);
        out.push('\n');
    }
    if in_block {
        out.push_str(".fi\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::preformatted;

    #[test]
    fn indented_runs_are_kept_as_written_and_prose_is_filled() {
        let roff = ".SH DESCRIPTION\nSome prose\nthat fills.\n\nExamples:\n  cairn a\n  cairn b\nAfter.\n  last\n";
        assert_eq!(
            preformatted(roff),
            ".SH DESCRIPTION\nSome prose\nthat fills.\n\nExamples:\n.nf\n  cairn a\n  cairn b\n.fi\nAfter.\n.nf\n  last\n.fi\n"
        );
    }
}
