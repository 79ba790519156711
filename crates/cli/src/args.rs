//! Options several commands share, their value parsers, and where input
//! comes from.

use std::io::{BufRead, BufReader, Read as _};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use cairn_core::{Arity, Hash, HashKind, LeanImt, TreeConfig, TreeKind};

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
    match crate::units::parse_count(text.trim()) {
        Some(crate::units::Count::Whole(n)) if (1..=u128::from(MAX_BLOCK_SIZE)).contains(&n) => {
            Ok(n as u64)
        }
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

/// The tree kinds `--kind` names.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum KindName {
    /// The LeanIMT: a lone node is lifted, partial groups are not padded,
    /// the depth grows with the size.
    Lean,
    /// zk-kit's IMT (Tornado Cash's shape): fixed depth, every group padded
    /// to N with the level's zero hash.
    Imt,
    /// An indexed tree (a database only): sorted linked-list leaves with a
    /// guard, so that a value's absence can be proven.
    Indexed,
}

/// `--kind`, `--depth` and `--zero`: the tree's kind, for commands given a
/// leaf file or a trusted head (a database stores its kind).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct KindArgs {
    /// Tree kind: lean (the LeanIMT), imt (zk-kit's IMT: fixed depth, zero-padded) or indexed (sorted leaves, absence proofs; databases only) [default: lean].
    #[arg(long, value_enum, value_name = "KIND")]
    pub kind: Option<KindName>,
    /// With --kind imt: levels above the leaves, 1 to 64 (the tree holds at most N^D leaves).
    #[arg(long, value_name = "D", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub depth: Option<u32>,
    /// With --kind imt: the value of an absent leaf, 0x and 64 hex digits, or a decimal field element for poseidon and mimcsponge [default: 0].
    #[arg(long, value_name = "ZERO")]
    pub zero: Option<String>,
}

impl KindArgs {
    /// The options given, as they are spelled (for refusing them).
    pub fn given(&self) -> Vec<&'static str> {
        [
            self.kind.map(|_| "--kind"),
            self.depth.map(|_| "--depth"),
            self.zero.as_ref().map(|_| "--zero"),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// The kind of a tree of `hash` these options describe: Lean unless
    /// `--kind imt`, which needs `--depth` (and takes `--zero`, default 0).
    /// Anything else is a usage error naming the option.
    pub fn resolve(&self, hash: HashKind) -> Result<TreeKind, Failure> {
        let usage = |message: String| Failure::new(Code::Usage, anyhow::anyhow!(message));
        match self.kind.unwrap_or(KindName::Lean) {
            name @ (KindName::Lean | KindName::Indexed) => {
                let stray: Vec<&str> = self
                    .given()
                    .into_iter()
                    .filter(|&option| option != "--kind")
                    .collect();
                if stray.is_empty() {
                    Ok(if name == KindName::Indexed {
                        TreeKind::Indexed
                    } else {
                        TreeKind::Lean
                    })
                } else {
                    Err(usage(format!(
                        "{} {} for a fixed-depth tree: add --kind imt",
                        stray.join(" and "),
                        if stray.len() == 1 { "is" } else { "are" }
                    )))
                }
            }
            KindName::Imt => {
                let depth = self.depth.ok_or_else(|| {
                    usage(
                        "--kind imt needs --depth D: the tree's fixed depth, 1 to 64 (it holds at most N^D leaves)"
                            .to_owned(),
                    )
                })?;
                let zero = match &self.zero {
                    None => [0; 32],
                    Some(text) => parse_zero(text, hash).map_err(usage)?,
                };
                let kind = TreeKind::Fixed { depth, zero };
                kind.check(hash).map_err(|e| usage(e.to_string()))?;
                Ok(kind)
            }
        }
    }
}

/// Parses `--zero`: 0x-hex, or a decimal field element for a field hash.
fn parse_zero(text: &str, hash: HashKind) -> Result<Hash, String> {
    let text = text.trim();
    if text.starts_with("0x") || text.starts_with("0X") || !hash.is_field_hash() {
        return cairn_core::hex::parse_hash(text).map_err(|e| {
            let decimal = if hash.is_field_hash() {
                ""
            } else {
                " (decimal values are for poseidon and mimcsponge trees)"
            };
            format!("--zero {text:?}: {e}{decimal}")
        });
    }
    cairn_core::decimal::parse_field_element(text).map_err(|e| format!("--zero {text:?}: {e}"))
}

/// The tree `--arity`, `--hash` and the kind options describe, arity and
/// hash required for a leaf file; a usage error naming what is missing and
/// `command`'s help otherwise.
pub fn file_tree(
    arity: Option<Arity>,
    hash: Option<HashKind>,
    kind: &KindArgs,
    command: &str,
) -> Result<TreeConfig, Failure> {
    match (arity, hash) {
        (Some(arity), Some(hash)) => match kind.resolve(hash)? {
            TreeKind::Indexed => Err(Failure::new(
                Code::Usage,
                anyhow::anyhow!(
                    "--kind indexed is for databases (`cairn init DIR --kind indexed`, then `cairn {command} DIR`), not leaf files"
                ),
            )),
            kind => Ok(TreeConfig::new(arity, hash).with_kind(kind)),
        },
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

/// Refuses `--arity`, `--hash`, the kind options and `--format` with a
/// database, which stores its tree and holds leaves, not a leaf file.
pub fn refuse_tree_options(
    dir: &Path,
    arity: Option<Arity>,
    hash: Option<HashKind>,
    kind: &KindArgs,
    format: Option<Format>,
) -> Result<(), Failure> {
    let mut given: Vec<&str> = [arity.map(|_| "--arity"), hash.map(|_| "--hash")]
        .into_iter()
        .flatten()
        .collect();
    given.extend(kind.given());
    given.extend(format.map(|_| "--format"));
    if given.is_empty() {
        return Ok(());
    }
    Err(Failure::new(
        Code::Usage,
        anyhow::anyhow!(
            "{} is a cairn database, which stores its arity, hash and kind: drop {}",
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

#[cfg(test)]
mod tests {
    use clap::ValueEnum as _;

    /// `--kind` offers exactly the core's kinds, by the core's names.
    #[test]
    fn kind_names_are_the_cores() {
        let names: Vec<String> = super::KindName::value_variants()
            .iter()
            .filter_map(|name| name.to_possible_value())
            .map(|value| value.get_name().to_owned())
            .collect();
        assert_eq!(names, cairn_core::TreeKind::NAMES);
    }
}
