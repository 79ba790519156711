//! Exit codes and the one-line report of a failed command.

use std::fmt;
use std::process::ExitCode;

/// Why a command did not succeed, as its process exit code (0 is success).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    /// 1: the proof is invalid or malformed, or a check failed (such as asking
    /// for the root of the empty tree, which has none).
    Invalid = 1,
    /// 2: bad or missing arguments (clap's own errors use 2 too).
    Usage = 2,
    /// 3: reserved for duplicate leaves.
    Duplicate = 3,
    /// 4: an input file could not be read or is corrupt, or stdout failed.
    Input = 4,
}

impl From<Code> for ExitCode {
    fn from(code: Code) -> ExitCode {
        ExitCode::from(code as u8)
    }
}

/// A failed command: its exit code and what to tell the user, on one line.
#[derive(Debug)]
pub struct Failure {
    code: Code,
    /// A verifier's verdict ("invalid: ...") rather than an error ("error: ...").
    verdict: bool,
    error: anyhow::Error,
}

impl Failure {
    /// A failure with exit `code`, reported as `error: ...`.
    pub fn new(code: Code, error: impl Into<anyhow::Error>) -> Failure {
        Failure {
            code,
            verdict: false,
            error: error.into(),
        }
    }

    /// A well-formed proof that does not verify: exit 1, reported as `invalid: ...`.
    pub fn rejected(reason: impl Into<anyhow::Error>) -> Failure {
        Failure {
            code: Code::Invalid,
            verdict: true,
            error: reason.into(),
        }
    }

    /// The exit code.
    pub fn code(&self) -> Code {
        self.code
    }

    /// The report for stderr: one line, `error: ` or `invalid: ` then the
    /// error and its context, outermost first.
    pub fn line(&self) -> String {
        let prefix = if self.verdict { "invalid" } else { "error" };
        let message = format!("{:#}", self.error);
        format!("{prefix}: {}", one_line(&message))
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.line())
    }
}

/// `text` with every run of line breaks replaced by a single space.
pub fn one_line(text: &str) -> String {
    text.split(['\n', '\r'])
        .map(str::trim_end)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Attaching an exit code to any error.
pub trait OrExit<T> {
    /// Turns the error into a [`Failure`] with exit `code`.
    fn or_exit(self, code: Code) -> Result<T, Failure>;
}

impl<T, E: Into<anyhow::Error>> OrExit<T> for Result<T, E> {
    fn or_exit(self, code: Code) -> Result<T, Failure> {
        self.map_err(|error| Failure::new(code, error))
    }
}
