//! Leaf input: raw 32-byte records, one 0x-hex leaf per line, or (for
//! trees of a field hash: Poseidon, MiMCSponge) one decimal BN254 field
//! element per line.
//!
//! Parsing never panics: any byte string either parses or gives a
//! [`LeafError`] saying where and why. [`parse`] works on bytes already in
//! memory (binary input is borrowed, not copied: the leaves are the input's
//! bytes viewed as 32-byte chunks); [`BlockReader`] streams the same
//! formats in blocks, with the same errors, for inputs too large to hold.

use std::borrow::Cow;
use std::fmt;

use cairn_core::decimal::{DecimalError, parse_field_element};
use cairn_core::hex::{HexError, parse_hash};
use cairn_core::{Hash, HashKind};

/// How leaves are written in a leaf file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    /// Raw leaves, 32 bytes each, back to back (no separators, no header).
    #[default]
    Bin,
    /// One leaf per line as 0x followed by 64 hex digits; blank lines and
    /// whitespace around a leaf are ignored.
    Hex,
    /// One BN254 field element per line in decimal, as snarkjs and zk-kit
    /// print them (Poseidon and MiMCSponge trees only): digits without sign or leading
    /// zero, below the field modulus; blank lines and whitespace around a
    /// value are ignored.
    Dec,
}

impl Format {
    /// Refuses `--format dec` for a tree whose hash is not a field hash
    /// (Poseidon, MiMCSponge): decimal values are field elements.
    pub fn check_hash(self, hash: HashKind) -> Result<(), String> {
        if self == Format::Dec && !hash.is_field_hash() {
            return Err(format!(
                "--format dec reads BN254 field elements, for Poseidon and MiMCSponge trees; this tree hashes with {hash}: use --format hex"
            ));
        }
        Ok(())
    }
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
    /// The line is text but not a decimal field element.
    Decimal(DecimalError),
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
                LineError::Decimal(error) => write!(f, "line {line}: {error}"),
            },
        }
    }
}

impl std::error::Error for LeafError {}

/// Parses `input` as leaves written in `format`.
pub fn parse(input: &[u8], format: Format) -> Result<Cow<'_, [Hash]>, LeafError> {
    match format {
        Format::Bin => parse_bin(input).map(Cow::Borrowed),
        Format::Hex => parse_lines(input, Format::Hex).map(Cow::Owned),
        Format::Dec => parse_lines(input, Format::Dec).map(Cow::Owned),
    }
}

/// Parses one line's text as a leaf written in `format` (hex or decimal).
fn parse_line(text: &[u8], format: Format) -> Result<Hash, LineError> {
    let text = std::str::from_utf8(text).map_err(|_| LineError::NotUtf8)?;
    match format {
        Format::Dec => parse_field_element(text).map_err(LineError::Decimal),
        Format::Hex | Format::Bin => parse_hash(text).map_err(LineError::Hex),
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

/// Parses one hex leaf per non-blank line.
pub fn parse_hex(input: &[u8]) -> Result<Vec<Hash>, LeafError> {
    parse_lines(input, Format::Hex)
}

/// Parses one leaf per non-blank line, in hex or decimal.
fn parse_lines(input: &[u8], format: Format) -> Result<Vec<Hash>, LeafError> {
    // 67 bytes is the shortest a hex line holding a leaf can be ("0x", 64
    // digits, "\n"); reserving for that never over-allocates much.
    let mut leaves = Vec::with_capacity(input.len() / 67);
    for (line, text) in leaf_lines(input) {
        leaves.push(parse_line(text, format).map_err(|reason| LeafError::Line { line, reason })?);
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
        Format::Hex | Format::Dec => match leaf_lines(input).nth(position) {
            Some((line, _)) => format!("line {line}"),
            None => format!("leaf {position}"),
        },
    }
}

/// Writes `leaves` in `format` (the inverse of [`parse`] for values it
/// accepts; hex is lowercase, one leaf per line).
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
        Format::Dec => {
            let mut out = String::with_capacity(leaves.len() * 78);
            for leaf in leaves {
                out.push_str(&cairn_core::decimal::to_decimal(leaf));
                out.push('\n');
            }
            out.into_bytes()
        }
    }
}

/// Why a block of streamed leaves could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// The source failed.
    Io(std::io::Error),
    /// The bytes are not leaves.
    Leaf(LeafError),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Io(error) => write!(f, "cannot read: {error}"),
            ReadError::Leaf(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for ReadError {}

/// The bytes kept from the start of binary input, to tell whether it looks
/// like hex text when its length is wrong.
const HEAD_BYTES: usize = 4096;

/// Reads leaves in blocks from a stream, holding one block in memory at a
/// time. The errors are those of [`parse`] on the whole input: a binary
/// input's length is checked when its end is reached, a hex line's number
/// counts every line before it.
#[derive(Debug)]
pub struct BlockReader<R> {
    input: R,
    format: Format,
    /// Bytes consumed so far.
    bytes: u64,
    /// Hex: lines consumed so far.
    line: usize,
    /// Binary: the first bytes of the input.
    head: Vec<u8>,
    /// Hex: the line being read.
    buffer: Vec<u8>,
    done: bool,
}

impl<R: std::io::BufRead> BlockReader<R> {
    /// A reader of `format` leaves from `input`.
    pub fn new(input: R, format: Format) -> BlockReader<R> {
        BlockReader {
            input,
            format,
            bytes: 0,
            line: 0,
            head: Vec::new(),
            buffer: Vec::new(),
            done: false,
        }
    }

    /// Bytes consumed so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Replaces `leaves` with the next up to `max` leaves (none at the end)
    /// and, for hex, `lines` with the 1-based line number of each.
    pub fn next_block(
        &mut self,
        max: usize,
        leaves: &mut Vec<Hash>,
        lines: &mut Vec<usize>,
    ) -> Result<(), ReadError> {
        leaves.clear();
        lines.clear();
        if self.done {
            return Ok(());
        }
        match self.format {
            Format::Bin => self.next_bin(max, leaves),
            Format::Hex | Format::Dec => self.next_lines(max, leaves, lines),
        }
    }

    fn next_bin(&mut self, max: usize, leaves: &mut Vec<Hash>) -> Result<(), ReadError> {
        leaves.resize(max, [0; 32]);
        let bytes = leaves.as_flattened_mut();
        let mut filled = 0;
        while filled < bytes.len() {
            match self.input.read(&mut bytes[filled..]) {
                Ok(0) => {
                    self.done = true;
                    break;
                }
                Ok(read) => {
                    if self.head.len() < HEAD_BYTES {
                        let take = read.min(HEAD_BYTES - self.head.len());
                        self.head.extend_from_slice(&bytes[filled..filled + take]);
                    }
                    filled += read;
                    self.bytes += read as u64;
                }
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(error) => return Err(ReadError::Io(error)),
            }
        }
        if !filled.is_multiple_of(32) {
            return Err(ReadError::Leaf(LeafError::Length {
                len: usize::try_from(self.bytes).unwrap_or(usize::MAX),
                looks_like_hex: self.head.trim_ascii_start().starts_with(b"0x"),
            }));
        }
        leaves.truncate(filled / 32);
        Ok(())
    }

    fn next_lines(
        &mut self,
        max: usize,
        leaves: &mut Vec<Hash>,
        lines: &mut Vec<usize>,
    ) -> Result<(), ReadError> {
        while leaves.len() < max {
            self.buffer.clear();
            let read = self
                .input
                .read_until(b'\n', &mut self.buffer)
                .map_err(ReadError::Io)?;
            if read == 0 {
                self.done = true;
                break;
            }
            self.bytes += read as u64;
            self.line += 1;
            let line = self.line;
            let text = self
                .buffer
                .strip_suffix(b"\n")
                .unwrap_or(&self.buffer)
                .trim_ascii();
            if text.is_empty() {
                continue;
            }
            leaves.push(
                parse_line(text, self.format)
                    .map_err(|reason| ReadError::Leaf(LeafError::Line { line, reason }))?,
            );
            lines.push(line);
        }
        Ok(())
    }
}
