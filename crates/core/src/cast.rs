//! Integer conversions whose range is an invariant, named once so that
//! the crates built on the core can keep `clippy::cast_possible_truncation`
//! on: every narrowing `as` left in them is one of these, or carries its
//! own argument.
//!
//! Leaf indices, node indices and counts are `u64` everywhere (a tree's
//! size is a `u64`), and memory is addressed with `usize`. cairn builds for
//! 64-bit targets only (asserted below), where one converts to the other
//! without loss.

// A `u64` index converts to a `usize` without loss: cairn's trees and
// files are sized in `u64`, and memory holding them is indexed by `usize`.
const _: () = assert!(
    usize::BITS == u64::BITS,
    "cairn builds for 64-bit targets only"
);

/// A leaf or node index, a count or a byte length as a `usize`: lossless
/// on the 64-bit targets cairn builds for.
#[inline(always)]
#[must_use]
#[allow(clippy::cast_possible_truncation)] // lossless: usize is 64 bits (asserted above)
pub const fn to_usize(n: u64) -> usize {
    n as usize
}

/// A level number (0 for the leaves) as a `u32`, the type level numbers
/// have in the core's API. A tree of at most `u64::MAX` leaves has at most
/// 65 levels, so every level number a tree can have fits.
///
/// # Panics
/// If `level` does not fit a `u32`: a bug, never input.
#[inline]
#[must_use]
pub fn level_number(level: usize) -> u32 {
    u32::try_from(level).expect("a level number fits a u32 (a tree has at most 65 levels)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_keep_their_values() {
        for n in [0, 1, u64::from(u32::MAX) + 1, u64::MAX] {
            assert_eq!(to_usize(n) as u64, n);
        }
        assert_eq!(level_number(64), 64);
    }

    #[test]
    #[should_panic(expected = "a level number fits a u32")]
    fn a_level_number_past_u32_is_a_bug() {
        let _ = level_number(usize::MAX);
    }
}
