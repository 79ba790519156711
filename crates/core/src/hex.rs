//! 0x-prefixed lowercase hex for 32-byte values: how hashes appear in JSON,
//! on the command line and in error messages.

use std::fmt;

use crate::hash::Hash;

/// Each byte's two lowercase hex digits.
const PAIRS: [[u8; 2]; 256] = {
    let digits = b"0123456789abcdef";
    let mut pairs = [[0u8; 2]; 256];
    let mut byte = 0;
    while byte < 256 {
        pairs[byte] = [digits[byte >> 4], digits[byte & 0x0f]];
        byte += 1;
    }
    pairs
};

/// `value` as the 66 ASCII bytes `0x` and 64 lowercase hex digits, without
/// allocating (servers write many of these per response: formatting a byte
/// at a time through `core::fmt` cost more than the proof itself).
pub fn hex_bytes(value: &Hash) -> [u8; 66] {
    let mut out = [0u8; 66];
    out[0] = b'0';
    out[1] = b'x';
    for (pair, &byte) in out[2..].chunks_exact_mut(2).zip(value) {
        pair.copy_from_slice(&PAIRS[usize::from(byte)]);
    }
    out
}

/// Displays a 32-byte value as `0x` followed by 64 lowercase hex digits.
#[derive(Clone, Copy)]
pub struct Hex<'a>(pub &'a Hash);

impl fmt::Display for Hex<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bytes = hex_bytes(self.0);
        f.write_str(std::str::from_utf8(&bytes).expect("hex digits are ASCII"))
    }
}

impl fmt::Debug for Hex<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Debug-formats a list of 32-byte values as a list of hex strings.
#[derive(Clone, Copy)]
pub(crate) struct HexList<'a>(pub &'a [Hash]);

impl fmt::Debug for HexList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.iter().map(Hex)).finish()
    }
}

/// Debug-formats an optional 32-byte value as `Some(0x..)` or `None`.
#[derive(Clone, Copy)]
pub(crate) struct HexOption<'a>(pub Option<&'a Hash>);

impl fmt::Debug for HexOption<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(value) => f.debug_tuple("Some").field(&Hex(value)).finish(),
            None => f.write_str("None"),
        }
    }
}

/// `Option<Hash>` as a 0x-hex string or null, for serde's `with`.
#[cfg(feature = "serde")]
pub(crate) mod serde_option {
    use serde::de::Error as _;
    use serde::{Deserialize as _, Deserializer, Serializer};

    use crate::hash::Hash;

    pub fn serialize<S: Serializer>(
        value: &Option<Hash>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(value) => serializer.serialize_some(&super::to_hex(value)),
            None => serializer.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Hash>, D::Error> {
        Option::<String>::deserialize(deserializer)?
            .map(|text| super::parse_hash(&text).map_err(D::Error::custom))
            .transpose()
    }
}

/// `value` as `0x`-prefixed lowercase hex.
pub fn to_hex(value: &Hash) -> String {
    String::from_utf8(hex_bytes(value).to_vec()).expect("hex digits are ASCII")
}

/// Why a string is not a 32-byte hex value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HexError {
    /// No `0x` prefix.
    #[error("hash {0:?} must start with 0x")]
    MissingPrefix(String),
    /// Not 64 hex digits after the prefix.
    #[error("hash {text:?} has {got} hex digits, want 64")]
    WrongLength {
        /// The rejected text (truncated if long).
        text: String,
        /// Digits found after `0x`.
        got: usize,
    },
    /// A character that is not a hex digit.
    #[error("hash {text:?} has a non-hex character at position {position}")]
    BadDigit {
        /// The rejected text (truncated if long).
        text: String,
        /// Byte offset of the bad character.
        position: usize,
    },
}

fn shorten(text: &str) -> String {
    if text.len() <= 80 {
        text.to_owned()
    } else {
        let mut end = 77;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}...", &text[..end])
    }
}

/// Parses `0x` followed by exactly 64 hex digits (either case).
pub fn parse_hash(text: &str) -> Result<Hash, HexError> {
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .ok_or_else(|| HexError::MissingPrefix(shorten(text)))?;
    if digits.len() != 64 {
        return Err(HexError::WrongLength {
            text: shorten(text),
            got: digits.chars().count(),
        });
    }
    let mut out = [0u8; 32];
    let bytes = digits.as_bytes();
    for (i, byte) in out.iter_mut().enumerate() {
        let digit = |offset: usize| -> Result<u8, HexError> {
            let c = bytes[2 * i + offset];
            (c as char)
                .to_digit(16)
                .and_then(|d| u8::try_from(d).ok())
                .ok_or_else(|| HexError::BadDigit {
                    text: shorten(text),
                    position: 2 + 2 * i + offset,
                })
        };
        *byte = (digit(0)? << 4) | digit(1)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_bytes_is_the_naive_formatting() {
        let mut value = [0u8; 32];
        for seed in 0..=255u8 {
            for (i, byte) in value.iter_mut().enumerate() {
                *byte = seed
                    .wrapping_mul(31)
                    .wrapping_add(u8::try_from(i).unwrap() * 7);
            }
            let naive: String = std::iter::once("0x".to_string())
                .chain(value.iter().map(|b| format!("{b:02x}")))
                .collect();
            assert_eq!(to_hex(&value), naive);
            assert_eq!(Hex(&value).to_string(), naive);
            assert_eq!(&hex_bytes(&value)[..], naive.as_bytes());
        }
    }

    #[test]
    fn hex_round_trips_and_rejects_malformed_text() {
        let mut value = [0u8; 32];
        value[0] = 0xab;
        value[31] = 0x01;
        let text = to_hex(&value);
        assert_eq!(text.len(), 66);
        assert!(text.starts_with("0xab00"));
        assert_eq!(parse_hash(&text), Ok(value));
        assert_eq!(
            parse_hash(&text.to_uppercase().replacen("0X", "0x", 1)),
            Ok(value)
        );
        assert!(matches!(
            parse_hash(&text[2..]),
            Err(HexError::MissingPrefix(_))
        ));
        assert!(matches!(
            parse_hash("0x12"),
            Err(HexError::WrongLength { got: 2, .. })
        ));
        let bad = format!("0x{}g", "0".repeat(63));
        assert_eq!(
            parse_hash(&bad),
            Err(HexError::BadDigit {
                text: bad.clone(),
                position: 65
            })
        );
        // Multi-byte characters must not panic on slicing.
        assert!(parse_hash(&format!("0x{}é", "0".repeat(62))).is_err());
    }
}
