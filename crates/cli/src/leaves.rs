//! Leaf input: raw 32-byte records or one 0x-hex leaf per line.
//!
//! Parsing works on bytes already in memory and never panics: any byte
//! string either parses or gives a [`LeafError`] saying where and why.
//! Binary input is borrowed, not copied: the leaves are the input's bytes
//! viewed as 32-byte chunks.

use std::borrow::Cow;
use std::fmt;

use cairn_core::Hash;
use cairn_core::hex::{HexError, parse_hash};

/// How leaves are written in a leaf file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    /// Raw leaves, 32 bytes each, back to back (no separators, no header).
    #[default]
    Bin,
    /// One leaf per line as 0x followed by 64 hex digits; blank lines and
    /// whitespace around a leaf are ignored.
    Hex,
}

/// Why bytes are not a list of leaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeafError {
    /// Binary input whose length is not a multiple of 32.
    Length {
        /// The input's length in bytes.
        len: usize,
        /// Whether the input starts like hex text (to suggest `--format hex`).
        looks_like_hex: bool,
    },
    /// A hex line that is not a leaf.
    Line {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        reason: LineError,
    },
}

/// What is wrong with one line of hex input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LineError {
    /// The line is not UTF-8 (so not hex text).
    NotUtf8,
    /// The line is text but not a 0x-prefixed 64-digit hex value.
    Hex(HexError),
}

impl fmt::Display for LeafError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LeafError::Length {
                len,
                looks_like_hex,
            } => {
                write!(
                    f,
                    "{len} bytes is not a multiple of 32: {} whole leaves and {} bytes left over",
                    len / 32,
                    len % 32
                )?;
                if *looks_like_hex {
                    f.write_str(" (the input looks like hex text: use --format hex)")?;
                }
                Ok(())
            }
            LeafError::Line { line, reason } => match reason {
                LineError::NotUtf8 => {
                    write!(f, "line {line}: not UTF-8 text, want 0x and 64 hex digits")
                }
                LineError::Hex(error) => write!(f, "line {line}: {error}"),
            },
        }
    }
}

impl std::error::Error for LeafError {}

/// Parses `input` as leaves written in `format`.
pub fn parse(input: &[u8], format: Format) -> Result<Cow<'_, [Hash]>, LeafError> {
    match format {
        Format::Bin => parse_bin(input).map(Cow::Borrowed),
        Format::Hex => parse_hex(input).map(Cow::Owned),
    }
}

/// Views `input` as raw 32-byte leaves, without copying.
pub fn parse_bin(input: &[u8]) -> Result<&[Hash], LeafError> {
    let (leaves, rest) = input.as_chunks::<32>();
    if rest.is_empty() {
        Ok(leaves)
    } else {
        Err(LeafError::Length {
            len: input.len(),
            looks_like_hex: input.trim_ascii_start().starts_with(b"0x"),
        })
    }
}

/// Lines of `input` with their 1-based numbers, split on `\n` (a trailing
/// `\r` is whitespace), trimmed, blank ones skipped.
fn leaf_lines(input: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    input
        .split(|&byte| byte == b'\n')
        .enumerate()
        .map(|(i, line)| (i + 1, line.trim_ascii()))
        .filter(|(_, line)| !line.is_empty())
}

/// Parses one leaf per non-blank line.
pub fn parse_hex(input: &[u8]) -> Result<Vec<Hash>, LeafError> {
    // 67 bytes is the shortest a line holding a leaf can be ("0x", 64
    // digits, "\n"); reserving for that never over-allocates much.
    let mut leaves = Vec::with_capacity(input.len() / 67);
    for (line, text) in leaf_lines(input) {
        let error = |reason| LeafError::Line { line, reason };
        let text = std::str::from_utf8(text).map_err(|_| error(LineError::NotUtf8))?;
        leaves.push(parse_hash(text).map_err(|e| error(LineError::Hex(e)))?);
    }
    Ok(leaves)
}

/// Where the leaf at `position` (0-based) sits in `input`, for error
/// messages: `line 7` for hex, `bytes 192..224` for binary.
pub fn locate(input: &[u8], format: Format, position: usize) -> String {
    match format {
        Format::Bin => {
            let start = position.saturating_mul(32);
            format!("bytes {start}..{}", start.saturating_add(32))
        }
        Format::Hex => match leaf_lines(input).nth(position) {
            Some((line, _)) => format!("line {line}"),
            None => format!("leaf {position}"),
        },
    }
}

/// Writes `leaves` in `format` (the inverse of [`parse`]; hex is lowercase,
/// one leaf per line).
pub fn encode(leaves: &[Hash], format: Format) -> Vec<u8> {
    match format {
        Format::Bin => leaves.as_flattened().to_vec(),
        Format::Hex => {
            let mut out = String::with_capacity(leaves.len() * 67);
            for leaf in leaves {
                out.push_str(&cairn_core::hex::to_hex(leaf));
                out.push('\n');
            }
            out.into_bytes()
        }
    }
}
