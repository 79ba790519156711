//! Numbers for people: leaf counts as people write them (`2.5M`, `16Mi`,
//! `2^30`, `1_000_000`) and sizes as people read them (`278,827`,
//! `8.5 MiB`), shared by `plan`, `demo`, `stats` and the ingest progress.

/// A parsed count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Count {
    /// A whole number.
    Whole(u128),
    /// A whole number above `u128::MAX`.
    TooLarge,
    /// Not a whole number.
    Fraction,
}

/// A count written as digits (with `_` or `,` between them), an optional
/// fraction and exponent (`2.5e6`), a suffix K, M, G, T (powers of 1000)
/// or Ki, Mi, Gi, Ti (powers of 1024), or `B^E`; `None` when `text` is not
/// a count at all.
pub fn parse_count(text: &str) -> Option<Count> {
    let all_digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    if let Some((base, exponent)) = text.split_once('^') {
        let base = parse_digits(base.trim())?;
        let exponent = exponent.trim();
        if !all_digits(exponent) {
            return None;
        }
        let value = base
            .parse::<u128>()
            .ok()
            .zip(exponent.parse::<u32>().ok())
            .and_then(|(b, e)| b.checked_pow(e));
        return Some(value.map_or(Count::TooLarge, Count::Whole));
    }
    const SUFFIXES: [(&str, u128); 8] = [
        ("ki", 1 << 10),
        ("mi", 1 << 20),
        ("gi", 1 << 30),
        ("ti", 1 << 40),
        ("k", 1_000),
        ("m", 1_000_000),
        ("g", 1_000_000_000),
        ("t", 1_000_000_000_000),
    ];
    let lower = text.to_ascii_lowercase();
    let (number, multiplier) = SUFFIXES
        .iter()
        .find_map(|&(suffix, m)| lower.strip_suffix(suffix).map(|rest| (rest, m)))
        .unwrap_or((lower.as_str(), 1));
    let (mantissa, exponent) = match number.split_once('e') {
        Some((mantissa, exponent)) => {
            let exponent = exponent.strip_prefix('+').unwrap_or(exponent);
            if !all_digits(exponent) {
                return None;
            }
            (mantissa, exponent.parse::<i64>().unwrap_or(i64::MAX / 2))
        }
        None => (number, 0),
    };
    let (whole, fraction) = match mantissa.split_once('.') {
        Some((whole, fraction)) if all_digits(fraction) => (whole, fraction),
        Some(_) => return None,
        None => (mantissa, ""),
    };
    let whole = parse_digits(whole)?;
    // The value is (whole ‖ fraction) x 10^(exponent - len(fraction)) x multiplier.
    let digits = format!("{whole}{fraction}");
    let digits = digits.trim_start_matches('0');
    if digits.is_empty() {
        return Some(Count::Whole(0));
    }
    let Ok(value) = digits.parse::<u128>() else {
        return Some(Count::TooLarge);
    };
    let Some(value) = value.checked_mul(multiplier) else {
        return Some(Count::TooLarge);
    };
    let shift = exponent - fraction.len() as i64;
    if shift >= 0 {
        let power = u32::try_from(shift)
            .ok()
            .and_then(|s| 10u128.checked_pow(s));
        Some(
            power
                .and_then(|p| value.checked_mul(p))
                .map_or(Count::TooLarge, Count::Whole),
        )
    } else {
        match u32::try_from(-shift)
            .ok()
            .and_then(|s| 10u128.checked_pow(s))
        {
            Some(p) if value.is_multiple_of(p) => Some(Count::Whole(value / p)),
            // Non-zero digits below 10^-38 of a leaf: a fraction.
            _ => Some(Count::Fraction),
        }
    }
}

/// The digits of `text`, which is digits with single `_` or `,`
/// separators between them.
fn parse_digits(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let (first, last) = (bytes.first()?, bytes.last()?);
    if !first.is_ascii_digit() || !last.is_ascii_digit() {
        return None;
    }
    let mut previous_separator = false;
    for &b in bytes {
        let separator = b == b'_' || b == b',';
        if !(b.is_ascii_digit() || separator) || (separator && previous_separator) {
            return None;
        }
        previous_separator = separator;
    }
    Some(text.chars().filter(char::is_ascii_digit).collect())
}

/// `n` with thousands separators: 278,827.
pub fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `bytes` in binary units with one decimal: 8.5 MiB (bytes below 1 KiB as is).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let bytes = u128::from(bytes);
    let mut unit = 0;
    let mut scale: u128 = 1024;
    loop {
        let tenths = (bytes * 10 + scale / 2) / scale;
        // 1023.95 KiB and up reads 1.0 MiB, not 1024.0 KiB.
        if tenths < 10240 || unit + 1 == UNITS.len() {
            return format!("{}.{} {}", tenths / 10, tenths % 10, UNITS[unit]);
        }
        unit += 1;
        scale *= 1024;
    }
}

/// `total / leaves` with two decimals, rounded to nearest.
pub fn per_leaf(total: u64, leaves: u64) -> String {
    let hundredths = (u128::from(total) * 100 + u128::from(leaves) / 2) / u128::from(leaves);
    format!("{}.{:02}", hundredths / 100, hundredths % 100)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_formatted_for_people() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(278_827), "278,827");
        assert_eq!(group(1_048_576), "1,048,576");
        assert_eq!(human_bytes(660), "660 B");
        assert_eq!(human_bytes(1024), "1.0 KiB");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(32 << 20), "32.0 MiB");
        assert_eq!(human_bytes((1 << 20) - 1), "1.0 MiB");
        assert_eq!(human_bytes(u64::MAX), "16.0 EiB");
        assert_eq!(per_leaf(2, 3), "0.67");
        assert_eq!(per_leaf(1, 1), "1.00");
    }
}
