//! A small fixed tree whose heads the fuzzed proofs are verified against.

use std::sync::LazyLock;

use cairn_core::{Arity, HashKind, LeanImt, TreeConfig, TreeHead, TreeKind};

/// Built once per process: fuzzing runs millions of inputs.
#[allow(dead_code)]
pub static BLAKE3: LazyLock<Fixture> = LazyLock::new(|| Fixture::new(HashKind::Blake3));
#[allow(dead_code)]
pub static POSEIDON: LazyLock<Fixture> = LazyLock::new(|| Fixture::new(HashKind::Poseidon));
/// The BLAKE3 tree again as a fixed-depth one (depth 4, 81 leaves at most).
#[allow(dead_code)]
pub static FIXED: LazyLock<Fixture> = LazyLock::new(|| {
    Fixture::of(
        HashKind::Blake3,
        TreeKind::Fixed {
            depth: 4,
            zero: [7; 32],
        },
    )
});

/// The BLAKE3 fixture of `kind`'s tree: fuzzed proofs of a fixed-depth tree
/// are checked against one.
#[allow(dead_code)]
pub fn blake3_for(kind: TreeKind) -> &'static Fixture {
    if kind == TreeKind::Lean { &BLAKE3 } else { &FIXED }
}

pub struct Fixture {
    pub tree: LeanImt,
}

impl Fixture {
    /// N = 3 over 40 leaves with BLAKE3, plus a Poseidon twin for canonicity checks.
    pub fn new(hash: HashKind) -> Fixture {
        Fixture::of(hash, TreeKind::Lean)
    }

    /// N = 3 over 40 leaves of `hash` and `kind`.
    pub fn of(hash: HashKind, kind: TreeKind) -> Fixture {
        let arity = Arity::new(3).expect("3 is an arity");
        let leaves: Vec<[u8; 32]> = (0u8..40).map(|i| [i; 32]).collect();
        let config = TreeConfig::new(arity, hash).with_kind(kind);
        let tree = LeanImt::from_leaves(config, &leaves).expect("canonical leaves");
        Fixture { tree }
    }

    /// The tree a verifier trusts.
    #[allow(dead_code)]
    pub fn config(&self) -> TreeConfig {
        self.tree.config()
    }

    #[allow(dead_code)]
    pub fn arity(&self) -> Arity {
        self.tree.config().arity
    }

    #[allow(dead_code)]
    pub fn hash(&self) -> HashKind {
        self.tree.config().hash
    }

    /// The honest head at `size`, clamped into the tree.
    pub fn head(&self, size: u64) -> TreeHead {
        let size = size % (self.tree.size() + 1);
        self.tree.view(size).expect("size within the tree").head()
    }
}
