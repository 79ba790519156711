//! Options several commands share, their value parsers, and where input
//! comes from.

use std::io::{BufRead, BufReader, Read as _};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use cairn_core::{Arity, Hash, HashKind, LeanImt, TreeConfig};

use crate::failure::{Code, Failure, OrExit as _};
use crate::leaves::{self, Format};

/// The most leaves `cairn ingest --block-size` takes (2 GiB of leaves held
/// in memory at once).
pub const MAX_BLOCK_SIZE: u64 = 1 << 26;

/// Parses a block size: a whole number of leaves from 1 to
/// [`MAX_BLOCK_SIZE`], spelled as `cairn plan --leaves` takes it (65536,
/// 1M, 64Ki, 2^16).
pub fn parse_block_size(text: &str) -> Result<u64, String> {
    let want = "want a whole number of leaves from 1 to 2^26 such as 65536, 1M, 64Ki or 2^16";
    match crate::commands::plan::parse_leaves(text) {
        Ok(n) if n <= MAX_BLOCK_SIZE => Ok(n),
        _ => Err(format!("{text:?} is not a block size: {want}")),
    }
}

/// Parses an arity, naming the value when it is not one.
pub fn parse_arity(text: &str) -> Result<Arity, String> {
    let n: u64 = text
        .parse()
        .map_err(|_| format!("arity {text:?} is not a whole number, want 2 to 16"))?;
    Arity::new(n).map_err(|e| e.to_string())
}

/// Parses a hash name.
pub fn parse_hash_kind(text: &str) -> Result<HashKind, String> {
    text.parse::<HashKind>().map_err(|e| e.to_string())
}

/// Parses a root or other 32-byte value given as 0x-hex.
pub fn parse_root(text: &str) -> Result<Hash, String> {
    cairn_core::hex::parse_hash(text).map_err(|e| e.to_string())
}

/// Where input is read from: a file, or stdin for `-` or a missing argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// Standard input.
    Stdin,
    /// A file.
    File(PathBuf),
}

impl Source {
    /// The source an optional path argument names: stdin when absent or `-`.
    pub fn from_arg(path: Option<&Path>) -> Source {
        match path {
            None => Source::Stdin,
            Some(path) if path.as_os_str() == "-" => Source::Stdin,
            Some(path) => Source::File(path.to_owned()),
        }
    }

    /// How error messages name the source.
    pub fn name(&self) -> String {
        match self {
            Source::Stdin => "<stdin>".to_owned(),
            Source::File(path) => path.display().to_string(),
        }
    }

    /// All of the source's bytes. A failure is exit code 4, naming the source.
    pub fn read(&self) -> Result<Vec<u8>, Failure> {
        let bytes = match self {
            Source::Stdin => {
                let mut bytes = Vec::new();
                std::io::stdin()
                    .lock()
                    .read_to_end(&mut bytes)
                    .map(|_| bytes)
            }
            Source::File(path) => std::fs::read(path),
        };
        bytes
            .with_context(|| format!("{}: cannot read", self.name()))
            .or_exit(Code::Input)
    }

    /// The source as a buffered stream (for reading in blocks). A failure
    /// to open is exit code 4, naming the source.
    pub fn open(&self) -> Result<Box<dyn BufRead>, Failure> {
        match self {
            Source::Stdin => Ok(Box::new(std::io::stdin().lock())),
            Source::File(path) => {
                let file = std::fs::File::open(path)
                    .with_context(|| format!("{}: cannot read", self.name()))
                    .or_exit(Code::Input)?;
                Ok(Box::new(BufReader::with_capacity(1 << 20, file)))
            }
        }
    }

    /// The length of a regular file, `None` for stdin or anything else.
    pub fn file_len(&self) -> Option<u64> {
        match self {
            Source::Stdin => None,
            Source::File(path) => std::fs::metadata(path)
                .ok()
                .filter(|m| m.is_file())
                .map(|m| m.len()),
        }
    }
}

/// The tree `--arity` and `--hash` describe, both required for a leaf file;
/// a usage error naming what is missing and `command`'s help otherwise.
pub fn file_tree(
    arity: Option<Arity>,
    hash: Option<HashKind>,
    command: &str,
) -> Result<TreeConfig, Failure> {
    match (arity, hash) {
        (Some(arity), Some(hash)) => Ok(TreeConfig::new(arity, hash)),
        (arity, hash) => {
            let missing: Vec<&str> = [
                arity.is_none().then_some("--arity <N>"),
                hash.is_none().then_some("--hash <HASH>"),
            ]
            .into_iter()
            .flatten()
            .collect();
            Err(Failure::new(
                Code::Usage,
                anyhow::anyhow!(
                    "the following required arguments were not provided: {} (a leaf file needs the tree's arity and hash; a database directory stores them); see 'cairn {command} --help'",
                    missing.join(" ")
                ),
            ))
        }
    }
}

/// Refuses `--arity`, `--hash` and `--format` with a database, which stores
/// its arity and hash and holds leaves, not a leaf file.
pub fn refuse_tree_options(
    dir: &Path,
    arity: Option<Arity>,
    hash: Option<HashKind>,
    format: Option<Format>,
) -> Result<(), Failure> {
    let given: Vec<&str> = [
        arity.map(|_| "--arity"),
        hash.map(|_| "--hash"),
        format.map(|_| "--format"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if given.is_empty() {
        return Ok(());
    }
    Err(Failure::new(
        Code::Usage,
        anyhow::anyhow!(
            "{} is a cairn database, which stores its arity and hash: drop {}",
            dir.display(),
            given.join(" and ")
        ),
    ))
}

/// Reads leaves from `source` in `format` and builds the tree. Unreadable or
/// corrupt input, including a leaf the hash refuses, is exit code 4.
pub fn build_tree(config: TreeConfig, source: &Source, format: Format) -> Result<LeanImt, Failure> {
    format
        .check_hash(config.hash)
        .map_err(|message| Failure::new(Code::Usage, anyhow::anyhow!(message)))?;
    let input = source.read()?;
    let leaves = leaves::parse(&input, format)
        .with_context(|| source.name())
        .or_exit(Code::Input)?;
    LeanImt::from_leaves(config, &leaves)
        .map_err(|error| {
            let at = match error {
                cairn_core::TreeError::NonCanonicalLeaf { position, .. } => {
                    format!(
                        "{}: {}",
                        source.name(),
                        leaves::locate(&input, format, position)
                    )
                }
                _ => source.name(),
            };
            anyhow::Error::new(error).context(at)
        })
        .or_exit(Code::Input)
}
