//! `cairn export`: a database's leaves, out as raw bytes or hex lines.

use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;

use anyhow::anyhow;

use crate::database;
use crate::failure::{Code, Failure, OrExit as _};
use crate::leaves::{Format, encode};

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Write the leaves of the cairn database DIR to stdout, in order: those with indices from --from \
(default 0) up to but not including --to (default: the size), that is, the leaves appended \
between the tree of size S1 and the tree of size S2. --format bin (the default) writes raw 32-byte \
leaves (refused when stdout is a terminal), --format hex one 0x-hex leaf per line, --format dec \
(Poseidon and MiMCSponge databases) one decimal field element per line: each is what `cairn ingest` and the \
leaf-file commands read.

Examples:
  cairn export db > leaves.bin
  cairn export db --format hex --from 4
  cairn init copy --arity 3 --hash sha256 && cairn export db | cairn ingest copy -";

/// Write a database's leaves to stdout.
#[derive(clap::Args, Debug)]
pub struct ExportCmd {
    /// The database directory.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// The tree of a database of several trees (default: the one named default, or the only one).
    #[arg(long, value_name = "NAME")]
    tree: Option<String>,
    /// The first leaf index (a size S1).
    #[arg(long, value_name = "S1", default_value_t = 0)]
    from: u64,
    /// One past the last leaf index (a size S2; default: the database's size).
    #[arg(long, value_name = "S2")]
    to: Option<u64>,
    /// How to write the leaves.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = Format::Bin)]
    format: Format,
}

/// Leaves written per chunk.
const CHUNK: u64 = 1 << 16;

impl ExportCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        if self.format == Format::Bin && std::io::stdout().is_terminal() {
            return Err(Failure::new(
                Code::Usage,
                anyhow!(
                    "refusing to write binary leaves to a terminal: redirect stdout to a file or pipe, or use --format hex"
                ),
            ));
        }
        // The values in the order they were appended (an indexed
        // database's in insertion order, not its sorted leaves).
        let snapshot = database::tree_values(&self.dir, self.tree.as_deref())?;
        if let Err(message) = self.format.check_hash(snapshot.config().hash) {
            return Err(Failure::new(
                Code::Usage,
                anyhow!("{}: {message}", self.dir.display()),
            ));
        }
        let size = snapshot.size();
        let to = self.to.unwrap_or(size);
        if self.from > to || to > size {
            return Err(Failure::new(
                Code::Usage,
                anyhow!(
                    "cannot export leaves {}..{to} of {}, which holds {size}: want --from <= --to <= {size}",
                    self.from,
                    self.dir.display()
                ),
            ));
        }
        let mut stdout = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
        let mut chunk = Vec::with_capacity(CHUNK.min(to - self.from) as usize);
        let mut start = self.from;
        while start < to {
            let end = (start + CHUNK).min(to);
            chunk.clear();
            chunk.extend((start..end).map(|i| snapshot.leaf(i).expect("below the size")));
            match stdout.write_all(&encode(&chunk, self.format)) {
                Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
                result => result
                    .map_err(|e| anyhow!("cannot write to stdout: {e}"))
                    .or_exit(Code::Input)?,
            }
            start = end;
        }
        match stdout.flush() {
            Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            result => result
                .map_err(|e| anyhow!("cannot write to stdout: {e}"))
                .or_exit(Code::Input),
        }
    }
}
