//! Exit codes and the one-line report of a failed command.

use std::fmt;
use std::process::ExitCode;

/// Why a command did not succeed, as its process exit code (0 is success).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    /// 1: the proof is invalid or malformed, or a check failed (such as asking
    /// for the root of the empty tree, which has none, a value that is absent,
    /// or `cairn check` finding a node or set entry that is wrong).
    Invalid = 1,
    /// 2: bad or missing arguments (clap's own errors use 2 too), including
    /// an index or size the tree does not reach and a database that cannot
    /// do what was asked (`init` on a non-empty directory, a lookup by value
    /// without a nullifier set).
    Usage = 2,
    /// 3: duplicate leaves refused by a database's nullifier set.
    Duplicate = 3,
    /// 4: an input file or database could not be read, is locked by another
    /// process or is corrupt, a write or sync failed, the input holds what
    /// the tree refuses, or stdout failed.
    Input = 4,
    /// 5: `cairn serve` cannot listen on its address: another process
    /// listens there (address in use), the address is not one of this
    /// host's, or the port needs privileges. Distinct from 2 so that a
    /// supervisor can tell "retry when the port is free" from "fix the
    /// command line".
    Listen = 5,
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
    /// What the line starts with: `error`, or a verdict (`invalid`,
    /// `absent`); `None` when the command already reported on stdout (a
    /// `--json` verdict) and stderr stays empty.
    prefix: Option<&'static str>,
    error: anyhow::Error,
}

impl Failure {
    /// A failure with exit `code`, reported as `error: ...`.
    pub fn new(code: Code, error: impl Into<anyhow::Error>) -> Failure {
        Failure {
            code,
            prefix: Some("error"),
            error: error.into(),
        }
    }

    /// A well-formed proof that does not verify: exit 1, reported as `invalid: ...`.
    pub fn rejected(reason: impl Into<anyhow::Error>) -> Failure {
        Failure::verdict("invalid", reason)
    }

    /// A negative answer (exit 1) reported as `{prefix}: ...`.
    pub fn verdict(prefix: &'static str, reason: impl Into<anyhow::Error>) -> Failure {
        Failure {
            code: Code::Invalid,
            prefix: Some(prefix),
            error: reason.into(),
        }
    }

    /// Exit `code` with nothing on stderr: the command already said why on
    /// stdout (as JSON).
    pub fn quiet(code: Code, error: impl Into<anyhow::Error>) -> Failure {
        Failure {
            code,
            prefix: None,
            error: error.into(),
        }
    }

    /// The exit code.
    pub fn code(&self) -> Code {
        self.code
    }

    /// The report: one line, `error: ` (or a verdict such as `invalid: `)
    /// then the error and its context, outermost first.
    pub fn line(&self) -> String {
        let prefix = self.prefix.unwrap_or("error");
        let message = format!("{:#}", self.error);
        format!("{prefix}: {}", one_line(&message))
    }

    /// The line for stderr, `None` if stdout already carries the report.
    pub fn report(&self) -> Option<String> {
        self.prefix.map(|_| self.line())
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
