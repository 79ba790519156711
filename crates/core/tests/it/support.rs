//! Helpers shared by the integration tests.

use cairn_core::{Arity, Hash, HashKind, LeanImt, TreeConfig, TreeHead};
use cairn_testkit::reference;

pub fn arity(n: u64) -> Arity {
    Arity::new(n).expect("test arity in range")
}

/// A tree of `count` testkit leaves (seed 7).
pub fn tree(n: u64, hash: HashKind, count: usize) -> (LeanImt, Vec<Hash>) {
    let leaves = cairn_testkit::leaves(7, count);
    let tree =
        LeanImt::from_leaves(TreeConfig::new(arity(n), hash), &leaves).expect("valid leaves");
    (tree, leaves)
}

/// The trusted head of the first `size` leaves, from the reference model.
pub fn head(n: u64, hash: HashKind, leaves: &[Hash], size: u64) -> TreeHead {
    TreeHead {
        size,
        root: reference::root(arity(n), hash, &leaves[..size as usize]),
    }
}
