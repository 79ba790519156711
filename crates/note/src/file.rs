//! Signer key files: the signer key text and a newline, readable by its
//! owner only. Verifier key files (public): one key text per line.
//!
//! Invariant: a key file is written whole or not at all (a temporary file in
//! the same directory, synced, renamed over the name, then the directory
//! synced), with mode 0600 from its creation, so no other user ever reads a
//! partial or a complete key.

use std::fs::{self, File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use zeroize::Zeroizing;

use crate::error::KeyError;
use crate::key::{Signer, Verifier};

/// The largest key file read (a key text is about 110 bytes).
const MAX_KEY_FILE_BYTES: u64 = 4096;

fn file_error(path: &Path, reason: impl Into<String>) -> KeyError {
    KeyError::File {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

fn content_error(path: &Path, reason: impl Into<String>) -> KeyError {
    KeyError::FileContent {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// Reads a signer key file: the key text, surrounding white space ignored.
/// Errors name the file, never its content.
pub fn read_signer_key(path: &Path) -> Result<Signer, KeyError> {
    let length = fs::metadata(path)
        .map_err(|e| file_error(path, e.to_string()))?
        .len();
    if length > MAX_KEY_FILE_BYTES {
        return Err(content_error(
            path,
            format!("it has {length} bytes, want at most {MAX_KEY_FILE_BYTES}"),
        ));
    }
    let text = Zeroizing::new(fs::read(path).map_err(|e| file_error(path, e.to_string()))?);
    let text =
        std::str::from_utf8(&text).map_err(|_| content_error(path, "it is not UTF-8 text"))?;
    Signer::parse(text.trim()).map_err(|e| match e {
        // A format error may quote the text: say only what was wrong.
        KeyError::Format { .. } => content_error(
            path,
            "want PRIVATE+KEY+name+hash+keydata, as `cairn keygen` writes",
        ),
        other => content_error(path, other.to_string()),
    })
}

/// The largest verifier key file read (a trusted-keys list).
const MAX_VERIFIER_FILE_BYTES: u64 = 1 << 20;

/// Reads a verifier key file: one verifier key text per line (what `cairn
/// keygen` prints), blank lines and lines starting with `#` ignored, at
/// least one key. Errors name the file and the line.
pub fn read_verifier_keys(path: &Path) -> Result<Vec<Verifier>, KeyError> {
    let length = fs::metadata(path)
        .map_err(|e| file_error(path, e.to_string()))?
        .len();
    if length > MAX_VERIFIER_FILE_BYTES {
        return Err(file_error(
            path,
            format!("it has {length} bytes, want at most {MAX_VERIFIER_FILE_BYTES}"),
        ));
    }
    let bytes = fs::read(path).map_err(|e| file_error(path, e.to_string()))?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|e| file_error(path, format!("not UTF-8 text (byte {})", e.valid_up_to())))?;
    let mut keys = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let key = Verifier::parse(line)
            .map_err(|e| file_error(path, format!("line {}: {e}", index + 1)))?;
        keys.push(key);
    }
    if keys.is_empty() {
        return Err(file_error(
            path,
            "holds no verifier key, want one NAME+ID+KEYDATA per line (what `cairn keygen` prints)",
        ));
    }
    Ok(keys)
}

/// Whether the file's mode lets users other than its owner read it.
#[cfg(unix)]
pub fn readable_by_others(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    fs::metadata(path).is_ok_and(|meta| meta.permissions().mode() & 0o077 != 0)
}

/// Whether the file's mode lets users other than its owner read it.
#[cfg(not(unix))]
pub fn readable_by_others(_path: &Path) -> bool {
    false
}

fn create_private(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    options.open(path)
}

fn sync_directory(path: &Path) -> std::io::Result<()> {
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    #[cfg(unix)]
    {
        File::open(parent)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = parent;
        Ok(())
    }
}

/// Writes `signer`'s key to `path` (mode 0600), durably. An existing file
/// is refused unless `replace`.
pub fn write_signer_key(path: &Path, signer: &Signer, replace: bool) -> Result<(), KeyError> {
    if !replace && fs::symlink_metadata(path).is_ok() {
        return Err(file_error(
            path,
            "already exists; the key it holds was not replaced",
        ));
    }
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    let temporary = PathBuf::from(temporary);
    // A temporary left by an interrupted write holds a key or part of one.
    let _ = fs::remove_file(&temporary);
    let written = (|| {
        let mut file = create_private(&temporary)?;
        let mut text = Zeroizing::new(signer.to_key_text().to_string());
        text.push('\n');
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        drop(file);
        if replace {
            fs::rename(&temporary, path)?;
        } else {
            // Refuses a file created meanwhile instead of replacing it.
            fs::hard_link(&temporary, path)?;
            fs::remove_file(&temporary)?;
        }
        sync_directory(path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    written.map_err(|e| file_error(path, e.to_string()))
}
