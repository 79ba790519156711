//! The branching factor of a tree, checked once at the boundary.

use std::fmt;
use std::str::FromStr;

/// The smallest supported arity.
pub const MIN_ARITY: usize = 2;
/// The largest supported arity (Poseidon is defined here for up to 16 inputs).
pub const MAX_ARITY: usize = 16;

/// A tree's arity N: every internal node has at most N children. Always in
/// `MIN_ARITY..=MAX_ARITY`; constructing one is the only place that is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Arity(u8);

/// An arity outside 2..=16.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("arity {got} is out of range, want 2..=16")]
pub struct ArityError {
    /// The rejected value, as given.
    pub got: String,
}

impl Arity {
    /// The binary tree of zk-kit's LeanIMT.
    pub const BINARY: Arity = Arity(2);

    /// `n` as an arity, or an error if it is outside 2..=16.
    pub fn new(n: u64) -> Result<Arity, ArityError> {
        match u8::try_from(n) {
            Ok(byte) if (MIN_ARITY as u64..=MAX_ARITY as u64).contains(&n) => Ok(Arity(byte)),
            _ => Err(ArityError { got: n.to_string() }),
        }
    }

    /// The arity as a count of children.
    #[inline]
    pub const fn get(self) -> usize {
        self.0 as usize
    }

    /// The arity as a `u64`, for index arithmetic.
    #[inline]
    pub const fn as_u64(self) -> u64 {
        self.0 as u64
    }

    /// The arity as the one byte the encodings hold.
    #[inline]
    pub const fn byte(self) -> u8 {
        self.0
    }

    /// Every supported arity, ascending.
    pub fn all() -> impl Iterator<Item = Arity> {
        (MIN_ARITY as u64..=MAX_ARITY as u64).map(|n| Arity::new(n).expect("in range"))
    }
}

impl fmt::Display for Arity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for Arity {
    type Err = ArityError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let n: u64 = s
            .trim()
            .parse()
            .map_err(|_| ArityError { got: s.to_owned() })?;
        Arity::new(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_two_to_sixteen_are_arities() {
        assert!(Arity::new(0).is_err());
        assert!(Arity::new(1).is_err());
        assert!(Arity::new(17).is_err());
        assert_eq!(Arity::new(2).map(Arity::get), Ok(2));
        assert_eq!(Arity::new(16).map(Arity::get), Ok(16));
        assert_eq!(Arity::all().count(), 15);
        assert_eq!(
            "1".parse::<Arity>().unwrap_err().to_string(),
            "arity 1 is out of range, want 2..=16"
        );
        assert!("four".parse::<Arity>().is_err());
    }
}
