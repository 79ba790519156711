//! Writing results to stdout. A reader that goes away early (a closed pipe,
//! as with `| head`) is not an error: the command's exit code still says
//! what happened.

use std::io::{self, IsTerminal as _, Write as _};

use anyhow::Context as _;

use crate::failure::{Code, Failure, OrExit as _};

fn write(bytes: &[u8]) -> Result<(), Failure> {
    let mut stdout = io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Err(error) if error.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        result => result
            .context("cannot write to stdout")
            .or_exit(Code::Input),
    }
}

/// Writes `text` and a newline.
pub fn line(text: &str) -> Result<(), Failure> {
    let mut bytes = Vec::with_capacity(text.len() + 1);
    bytes.extend_from_slice(text.as_bytes());
    bytes.push(b'\n');
    write(&bytes)
}

/// Refuses (usage error) when stdout is a terminal: binary output there is
/// garbage at best. Call it before doing any work.
pub fn check_binary_allowed() -> Result<(), Failure> {
    if io::stdout().is_terminal() {
        return Err(Failure::new(
            Code::Usage,
            anyhow::anyhow!(
                "refusing to write a binary proof to a terminal: redirect stdout to a file or pipe, or drop --binary for JSON"
            ),
        ));
    }
    Ok(())
}

/// Writes binary output as is.
pub fn binary(bytes: &[u8]) -> Result<(), Failure> {
    write(bytes)
}
