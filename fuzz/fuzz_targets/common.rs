//! A small fixed tree whose heads the fuzzed proofs are verified against.

use std::sync::LazyLock;

use cairn_core::{Arity, HashKind, LeanImt, TreeConfig, TreeHead};

/// Built once per process: fuzzing runs millions of inputs.
#[allow(dead_code)]
pub static BLAKE3: LazyLock<Fixture> = LazyLock::new(|| Fixture::new(HashKind::Blake3));
#[allow(dead_code)]
pub static POSEIDON: LazyLock<Fixture> = LazyLock::new(|| Fixture::new(HashKind::Poseidon));

pub struct Fixture {
    pub tree: LeanImt,
}

impl Fixture {
    /// N = 3 over 40 leaves with BLAKE3, plus a Poseidon twin for canonicity checks.
    pub fn new(hash: HashKind) -> Fixture {
        let arity = Arity::new(3).expect("3 is an arity");
        let leaves: Vec<[u8; 32]> = (0u8..40).map(|i| [i; 32]).collect();
        let tree =
            LeanImt::from_leaves(TreeConfig::new(arity, hash), &leaves).expect("canonical leaves");
        Fixture { tree }
    }

    pub fn arity(&self) -> Arity {
        self.tree.config().arity
    }

    pub fn hash(&self) -> HashKind {
        self.tree.config().hash
    }

    /// The honest head at `size`, clamped into the tree.
    pub fn head(&self, size: u64) -> TreeHead {
        let size = size % (self.tree.size() + 1);
        self.tree.view(size).expect("size within the tree").head()
    }
}
