//! circomlib's Poseidon parameters per state width, generated once per width
//! on first use and kept in Montgomery form so the hot path only reads them.

use std::sync::OnceLock;

use ark_bn254::Fr;

use super::grain;

/// Full rounds (x^5 on every cell), split evenly before and after the
/// partial rounds.
pub(super) const FULL_ROUNDS: usize = 8;

/// The smallest and largest state widths: 1 to 16 inputs plus the capacity cell.
pub(super) const MIN_WIDTH: usize = 2;
pub(super) const MAX_WIDTH: usize = 17;

/// Partial rounds (x^5 on cell 0 only) for widths 2..=17, circomlib's
/// `N_ROUNDS_P`: the paper's recommended counts for 128-bit security,
/// rounded up to a multiple of `t` by the reference tooling.
const PARTIAL_ROUNDS: [usize; MAX_WIDTH - MIN_WIDTH + 1] = [
    56, 57, 56, 60, 60, 63, 64, 63, 60, 66, 60, 65, 70, 60, 64, 68,
];

/// The constants of one width, as field elements in Montgomery form.
#[derive(Debug)]
pub(super) struct Params {
    /// `(FULL_ROUNDS + partial rounds) * width` round constants, round-major.
    pub(super) round_constants: Box<[Fr]>,
    /// The `width x width` MDS matrix, row-major.
    pub(super) mds: Box<[Fr]>,
}

/// The partial round count for `width`.
///
/// # Panics
/// If `width` is outside 2..=17.
pub(super) fn partial_rounds(width: usize) -> usize {
    assert!(
        (MIN_WIDTH..=MAX_WIDTH).contains(&width),
        "poseidon width must be 2..=17, got {width}"
    );
    PARTIAL_ROUNDS[width - MIN_WIDTH]
}

/// The parameters for `width`, generating them on the first call for that
/// width. Generation takes a few milliseconds, so each width is done at most
/// once per process and only if used.
///
/// # Panics
/// If `width` is outside 2..=17.
pub(super) fn get(width: usize) -> &'static Params {
    static CACHE: [OnceLock<Params>; MAX_WIDTH - MIN_WIDTH + 1] =
        [const { OnceLock::new() }; MAX_WIDTH - MIN_WIDTH + 1];
    let partial = partial_rounds(width);
    CACHE[width - MIN_WIDTH].get_or_init(|| {
        let (round_constants, mds) = grain::generate(width, FULL_ROUNDS, partial);
        Params {
            round_constants: round_constants.into_boxed_slice(),
            mds: mds.into_boxed_slice(),
        }
    })
}
