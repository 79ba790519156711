//! Decimal field elements: how snarkjs, circom inputs and zk-kit print a
//! BN254 scalar, as opposed to cairn's 0x-hex.
//!
//! [`parse_field_element`] accepts exactly the canonical spelling (ASCII
//! digits, no sign, no leading zero, a value below the modulus), so every
//! accepted text names one value and [`to_decimal`] gives it back.

use crate::hash::{BN254_MODULUS_BE, Hash};

/// The most digits a decimal value below 2^256 has.
const MAX_DIGITS: usize = 78;

/// Why a string is not a decimal BN254 field element.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecimalError {
    /// Nothing to parse.
    #[error("decimal value is empty")]
    Empty,
    /// A character other than `0`..`9`.
    #[error("decimal value {text:?} has a character that is not a digit at position {position}")]
    BadDigit {
        /// The rejected text (shortened if long).
        text: String,
        /// Byte offset of the bad character.
        position: usize,
    },
    /// A leading zero (the spelling would not be the canonical one).
    #[error("decimal value {0:?} has a leading zero")]
    LeadingZero(String),
    /// At least the BN254 scalar modulus (or longer than any 256-bit value).
    #[error(
        "decimal value {0:?} is not a BN254 field element: it must be below p = 21888242871839275222246405745257275088548364400416034343698204186575808495617"
    )]
    NotCanonical(String),
}

fn shorten(text: &str) -> String {
    if text.len() <= 90 {
        text.to_owned()
    } else {
        let mut end = 87;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}...", &text[..end])
    }
}

/// Parses a decimal BN254 scalar (`0` to `p - 1`) into its 32-byte
/// big-endian form.
pub fn parse_field_element(text: &str) -> Result<Hash, DecimalError> {
    if text.is_empty() {
        return Err(DecimalError::Empty);
    }
    if let Some(position) = text.bytes().position(|b| !b.is_ascii_digit()) {
        return Err(DecimalError::BadDigit {
            text: shorten(text),
            position,
        });
    }
    if text.len() > 1 && text.starts_with('0') {
        return Err(DecimalError::LeadingZero(shorten(text)));
    }
    if text.len() > MAX_DIGITS {
        return Err(DecimalError::NotCanonical(shorten(text)));
    }
    // Little-endian 64-bit limbs; value = value * 10 + digit, refusing an
    // overflow of 256 bits.
    let mut limbs = [0u64; 4];
    for digit in text.bytes().map(|b| u64::from(b - b'0')) {
        let mut carry = u128::from(digit);
        for limb in &mut limbs {
            let wide = u128::from(*limb) * 10 + carry;
            #[allow(clippy::cast_possible_truncation)] // the low 64 bits; the rest carries
            {
                *limb = wide as u64;
            }
            carry = wide >> 64;
        }
        if carry != 0 {
            return Err(DecimalError::NotCanonical(shorten(text)));
        }
    }
    let mut out = [0u8; 32];
    for (chunk, limb) in out.chunks_exact_mut(8).zip(limbs.iter().rev()) {
        chunk.copy_from_slice(&limb.to_be_bytes());
    }
    if out >= BN254_MODULUS_BE {
        return Err(DecimalError::NotCanonical(shorten(text)));
    }
    Ok(out)
}

/// `value` read as a big-endian unsigned integer, in decimal (no leading
/// zeros; `0` for zero). Defined for every 32-byte value, field element or
/// not.
pub fn to_decimal(value: &Hash) -> String {
    let mut limbs = [0u64; 4];
    for (limb, chunk) in limbs.iter_mut().rev().zip(value.chunks_exact(8)) {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(chunk);
        *limb = u64::from_be_bytes(bytes);
    }
    // Peel off 19 digits at a time (10^19 is the largest power of ten in
    // a u64), least significant chunk first.
    const CHUNK: u64 = 10_000_000_000_000_000_000;
    let mut chunks = Vec::with_capacity(5);
    while limbs.iter().any(|&l| l != 0) {
        let mut remainder = 0u128;
        for limb in limbs.iter_mut().rev() {
            let wide = (remainder << 64) | u128::from(*limb);
            // wide < CHUNK * 2^64 (remainder < CHUNK), so the quotient fits.
            *limb = u64::try_from(wide / u128::from(CHUNK)).expect("a quotient below 2^64");
            remainder = wide % u128::from(CHUNK);
        }
        chunks.push(u64::try_from(remainder).expect("a remainder below 10^19"));
    }
    let Some((top, rest)) = chunks.split_last() else {
        return "0".to_owned();
    };
    let mut text = top.to_string();
    for chunk in rest.iter().rev() {
        text.push_str(&format!("{chunk:019}"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small(n: u128) -> Hash {
        let mut out = [0u8; 32];
        out[16..].copy_from_slice(&n.to_be_bytes());
        out
    }

    #[test]
    fn decimal_round_trips_small_and_large_values() {
        for n in [
            0u128,
            1,
            9,
            10,
            11,
            1 << 64,
            u128::from(u64::MAX),
            u128::MAX,
        ] {
            assert_eq!(to_decimal(&small(n)), n.to_string());
            assert_eq!(parse_field_element(&n.to_string()), Ok(small(n)));
        }
        let mut below_p = BN254_MODULUS_BE;
        below_p[31] -= 1;
        let text = to_decimal(&below_p);
        assert_eq!(
            text,
            "21888242871839275222246405745257275088548364400416034343698204186575808495616"
        );
        assert_eq!(parse_field_element(&text), Ok(below_p));
        assert_eq!(
            to_decimal(&[0xff; 32]),
            "115792089237316195423570985008687907853269984665640564039457584007913129639935"
        );
    }

    #[test]
    fn decimal_refuses_non_canonical_spellings_and_values_at_or_above_p() {
        let p = to_decimal(&BN254_MODULUS_BE);
        assert!(matches!(
            parse_field_element(&p),
            Err(DecimalError::NotCanonical(_))
        ));
        let max = to_decimal(&[0xff; 32]);
        assert!(matches!(
            parse_field_element(&max),
            Err(DecimalError::NotCanonical(_))
        ));
        // 2^256 overflows the limbs: still a range error, not a panic.
        let two_256 =
            "115792089237316195423570985008687907853269984665640564039457584007913129639936";
        assert!(matches!(
            parse_field_element(two_256),
            Err(DecimalError::NotCanonical(_))
        ));
        assert!(matches!(
            parse_field_element(&"9".repeat(200)),
            Err(DecimalError::NotCanonical(_))
        ));
        assert_eq!(parse_field_element(""), Err(DecimalError::Empty));
        assert_eq!(
            parse_field_element("007"),
            Err(DecimalError::LeadingZero("007".into()))
        );
        for bad in ["-1", "+1", "1 ", "0x12", "1e3", "١"] {
            assert!(
                matches!(parse_field_element(bad), Err(DecimalError::BadDigit { .. })),
                "{bad}"
            );
        }
        let message = parse_field_element(&p).unwrap_err().to_string();
        assert!(
            message.contains(&p) && message.contains("below p"),
            "{message}"
        );
    }
}
