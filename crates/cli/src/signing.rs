//! Signer keys for the signing commands: reading key files, a database's
//! own key (`DIR/signer.key`, docs/file-format.md) and what their errors
//! mean as exit codes.

use std::path::{Path, PathBuf};

use anyhow::anyhow;
use cairn_note::file::{read_signer_key, readable_by_others, write_signer_key};
use cairn_note::{KeyError, Signer};

use crate::failure::{Code, Failure};

/// Where the database in `dir` keeps its signer key.
pub fn database_key_path(dir: &Path) -> PathBuf {
    dir.join(cairn_server::SIGNER_KEY_FILE)
}

/// The exit code of a key error: a file that cannot be read or written is
/// 4, a key that is not one 2.
pub fn key_failure(error: KeyError) -> Failure {
    let code = match &error {
        KeyError::File { .. } => Code::Input,
        _ => Code::Usage,
    };
    Failure::new(code, error)
}

/// Reads a signer key file, warning on stderr when other users can read it.
pub fn read_key(path: &Path) -> Result<Signer, Failure> {
    let signer = read_signer_key(path).map_err(key_failure)?;
    if readable_by_others(path) {
        eprintln!(
            "warning: {} is readable by other users: chmod 600 it",
            path.display()
        );
    }
    Ok(signer)
}

/// The key that signs for the database in `dir`: `given` if any, else the
/// database's own.
pub fn key_for(dir: &Path, given: Option<&Path>) -> Result<Signer, Failure> {
    if let Some(path) = given {
        return read_key(path);
    }
    let path = database_key_path(dir);
    if !path.exists() {
        return Err(Failure::new(
            Code::Usage,
            anyhow!(
                "{} has no signer key: add one with `cairn sign-key {} FILE` (FILE from `cairn keygen`), or give --sign-key FILE",
                dir.display(),
                dir.display()
            ),
        ));
    }
    read_key(&path)
}

/// What [`install`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Installed {
    /// The database had no key and now has this one.
    New,
    /// The database already had this very key.
    Same,
    /// Another key was replaced.
    Replaced,
}

/// Makes `signer` the signer key of the database in `dir`. Another key
/// already there is replaced only if `replace`.
pub fn install(dir: &Path, signer: &Signer, replace: bool) -> Result<Installed, Failure> {
    let path = database_key_path(dir);
    let existing = if path.exists() {
        Some(read_signer_key(&path).map_err(key_failure)?)
    } else {
        None
    };
    match existing {
        Some(current) if current.verifier() == signer.verifier() => Ok(Installed::Same),
        Some(current) if !replace => Err(Failure::new(
            Code::Usage,
            anyhow!(
                "{} already signs with the key {}+{:08x}, not {}+{:08x}: give --replace to replace it (verifiers that trust the old key then refuse its checkpoints)",
                dir.display(),
                current.name(),
                current.id(),
                signer.name(),
                signer.id()
            ),
        )),
        Some(_) => {
            write_signer_key(&path, signer, true).map_err(key_failure)?;
            Ok(Installed::Replaced)
        }
        None => {
            write_signer_key(&path, signer, false).map_err(key_failure)?;
            Ok(Installed::New)
        }
    }
}
