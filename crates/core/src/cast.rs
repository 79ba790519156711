//! Integer conversions whose range is an invariant, named once so that
//! the crates built on the core can keep `clippy::cast_possible_truncation`
//! on: every narrowing `as` left in them is one of these, or carries its
//! own argument.
//!
//! Leaf indices, node indices and counts are `u64` everywhere (a tree's
//! size is a `u64`), and memory is addressed with `usize`. On 64-bit
//! targets one converts to the other without loss. On a 32-bit target
//! (WebAssembly, where a wallet verifies proofs and tracks witnesses
//! without holding a tree) an index past `usize::MAX` saturates: memory
//! there cannot hold that many nodes, so the access it feeds fails its
//! bounds check instead of reading a smaller index's node.

const _: () = assert!(
    usize::BITS == u64::BITS || usize::BITS == 32,
    "cairn builds for 64-bit and 32-bit targets"
);

/// A leaf or node index, a count or a byte length as a `usize`: lossless
/// on 64-bit targets, saturating at `usize::MAX` on 32-bit ones.
#[inline(always)]
#[must_use]
#[allow(clippy::cast_possible_truncation)] // lossless where usize is 64 bits (the cfg)
pub const fn to_usize(n: u64) -> usize {
    #[cfg(target_pointer_width = "64")]
    {
        n as usize
    }
    #[cfg(not(target_pointer_width = "64"))]
    {
        if n > usize::MAX as u64 {
            usize::MAX
        } else {
            n as usize
        }
    }
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
