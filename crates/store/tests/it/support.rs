//! Shared helpers: deterministic leaves, configs, and the reference check.

use std::sync::Arc;
use std::time::Duration;

use cairn_core::{Arity, Hash, HashKind, LeanImt, TreeConfig, TreeKind};
use cairn_store::{CheckpointPolicy, Fs, Store, StoreConfig};

/// Leaf `i` of every workload: a pure function of the index, so a checker
/// knows what must be where without being told.
pub fn leaf(i: u64) -> Hash {
    let mut out = [0u8; 32];
    out[..8].copy_from_slice(&i.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_le_bytes());
    out[8..16].copy_from_slice(&i.to_le_bytes());
    out[16..24].copy_from_slice(
        &(i ^ 0x5555)
            .wrapping_mul(0xff51_afd7_ed55_8ccd)
            .to_le_bytes(),
    );
    out
}

pub fn leaves(range: std::ops::Range<u64>) -> Vec<Hash> {
    range.map(leaf).collect()
}

pub fn tree_config(n: u64) -> TreeConfig {
    TreeConfig::new(Arity::new(n).unwrap(), HashKind::Blake3)
}

/// A fixed-depth (zk-kit IMT) tree of arity `n`, deep enough for 2^20
/// leaves, with a zero value that is not all zeros.
pub fn fixed_tree_config(n: u64) -> TreeConfig {
    let depth = (20f64 / (n as f64).log2()).ceil() as u32;
    tree_config(n).with_kind(TreeKind::Fixed {
        depth,
        zero: leaf(u64::MAX),
    })
}

/// A config with no background thread (tests drive flushes and checkpoints).
pub fn config(n: u64, log_shift: u8) -> StoreConfig {
    config_of(tree_config(n), log_shift)
}

/// [`config`] for the tree `tree`.
pub fn config_of(tree: TreeConfig, log_shift: u8) -> StoreConfig {
    StoreConfig {
        flush_interval: None,
        checkpoint: CheckpointPolicy::default(),
        log_shift,
        ..StoreConfig::new(tree)
    }
}

pub const WAIT: Duration = Duration::from_secs(30);

/// Checks that `store` holds exactly leaves `0..size` of the workload, with
/// the reference root, and that proofs of a few leaves verify.
pub fn check_prefix(store: &Store, n: u64) -> u64 {
    check_prefix_of(store, tree_config(n))
}

/// [`check_prefix`] for a store of the tree `tree`.
pub fn check_prefix_of(store: &Store, tree: TreeConfig) -> u64 {
    let snapshot = store.snapshot();
    assert_eq!(snapshot.config(), tree, "the store's tree");
    let size = snapshot.size();
    let want = leaves(0..size);
    let mut reference = LeanImt::from_leaves(tree, &want).unwrap();
    assert_eq!(snapshot.head(), reference.head(), "head at size {size}");
    for index in [0, size / 3, size / 2, size.saturating_sub(1)] {
        if index < size {
            assert_eq!(snapshot.leaf(index), Some(want[index as usize]));
            let proof = snapshot.prove(index).unwrap();
            proof.verify_with(&tree, &reference.head()).unwrap();
        }
    }
    size
}

pub fn std_fs() -> Arc<dyn Fs> {
    Arc::new(cairn_store::StdFs)
}
