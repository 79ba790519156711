//! Helpers shared by the crash, adversarial and set-file tests.

use std::path::Path;

use cairn_core::{Arity, Hash, HashKind, TreeConfig, TreeKind};
use cairn_db::DbConfig;
use cairn_testkit::reference;

/// The tree of arity `n` under `hash`.
pub fn tree(n: u64, hash: HashKind) -> TreeConfig {
    TreeConfig::new(Arity::new(n).unwrap(), hash)
}

/// A fixed-depth (zk-kit IMT) tree of arity `n` under `hash`, deep enough
/// for 2^20 leaves, with a zero value that is not all zeros.
pub fn fixed_tree(n: u64, hash: HashKind) -> TreeConfig {
    let depth = (20f64 / (n as f64).log2()).ceil() as u32;
    tree(n, hash).with_kind(TreeKind::Fixed {
        depth,
        zero: value(u64::MAX, 0),
    })
}

/// The reference root of `leaves` in the tree `tree` of either kind (the
/// spec transcribed, in `cairn-testkit`).
pub fn reference_root_of(tree: &TreeConfig, leaves: &[Hash]) -> Option<Hash> {
    match tree.kind {
        TreeKind::Fixed { depth, zero } => Some(reference::fixed_root(
            tree.arity, tree.hash, depth, zero, leaves,
        )),
        _ => reference::root(tree.arity, tree.hash, leaves),
    }
}

/// A database config with small log files (1,024 leaves) and no
/// background thread: tests that want one set it.
pub fn config(n: u64, hash: HashKind) -> DbConfig {
    config_of(tree(n, hash))
}

/// [`config`] for the tree `tree`.
pub fn config_of(tree: TreeConfig) -> DbConfig {
    let mut config = DbConfig::new(tree);
    config.store.log_shift = 10;
    config.store.flush_interval = None;
    config.store.checkpoint = Default::default();
    config
}

/// Value `i` of the stream `seed`: pseudo-random, canonical for BN254 (so
/// valid under Poseidon too), distinct for distinct `(seed, i)`.
pub fn value(seed: u64, i: u64) -> Hash {
    cairn_testkit::leaf(seed, i)
}

/// The naive reference root of `leaves` (the spec transcribed, in
/// `cairn-testkit`).
pub fn reference_root(n: u64, hash: HashKind, leaves: &[Hash]) -> Option<Hash> {
    reference::root(Arity::new(n).unwrap(), hash, leaves)
}

/// Copies a directory tree (files and subdirectories).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}
