//! Options several commands share, their value parsers, and where input
//! comes from.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use cairn_core::{Arity, Hash, HashKind, LeanImt, TreeConfig};

use crate::failure::{Code, Failure, OrExit as _};
use crate::leaves::{self, Format};

/// The tree's identity: arity and node hash.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct TreeArgs {
    /// Children per internal node, 2 to 16.
    #[arg(long, short = 'n', value_name = "N", value_parser = parse_arity)]
    pub arity: Arity,
    /// Node hash: blake3, sha256, keccak256 or poseidon.
    #[arg(long, value_name = "HASH", value_parser = parse_hash_kind)]
    pub hash: HashKind,
}

impl TreeArgs {
    /// The tree configuration these options describe.
    pub fn config(&self) -> TreeConfig {
        TreeConfig::new(self.arity, self.hash)
    }
}

/// How a leaf file is written.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct FormatArgs {
    /// How the leaf file is written.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = Format::Bin)]
    pub format: Format,
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
}

/// Reads leaves from `source` in `format` and builds the tree. Unreadable or
/// corrupt input, including a leaf the hash refuses, is exit code 4.
pub fn build_tree(tree: TreeArgs, source: &Source, format: Format) -> Result<LeanImt, Failure> {
    let input = source.read()?;
    let leaves = leaves::parse(&input, format)
        .with_context(|| source.name())
        .or_exit(Code::Input)?;
    LeanImt::from_leaves(tree.config(), &leaves)
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
