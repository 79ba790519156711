//! The verifying mirror against a tile store: it copies the tree chunk by
//! chunk, adopts new heads incrementally, and refuses a fork, a rewritten
//! history, a size going backwards, a wrong, short or oversized leaf tile
//! and a checkpoint its signature hook rejects, adopting nothing of them.

use std::sync::Arc;

use cairn_core::{Arity, Hash, HashKind, LeanImt, Snapshot, TreeConfig};
use cairn_tiles::{
    CHECKPOINT, Checkpoint, CheckpointSignature, DirStore, MirrorError, MirrorTarget,
    TileSink as _, TilesUpstream, Unsigned, catch_up, publish, root_after,
};
use proptest::prelude::*;

pub(crate) fn config(n: u64) -> TreeConfig {
    TreeConfig::new(Arity::new(n).unwrap(), HashKind::Blake3)
}

pub(crate) fn leaves(seed: u64, count: u64) -> Vec<Hash> {
    (0..count).map(|i| cairn_testkit::leaf(seed, i)).collect()
}

/// A mirror's tree in memory.
pub(crate) struct Memory {
    pub(crate) tree: LeanImt,
    pub(crate) snapshot: Arc<Snapshot>,
}

impl Memory {
    pub(crate) fn new(config: TreeConfig) -> Memory {
        let mut tree = LeanImt::new(config);
        let snapshot = Arc::new(tree.snapshot());
        Memory { tree, snapshot }
    }
}

impl MirrorTarget for Memory {
    fn adopted(&self) -> Arc<Snapshot> {
        Arc::clone(&self.snapshot)
    }
    fn adopt(&mut self, leaves: &[Hash]) -> Result<(), String> {
        self.tree.append_batch(leaves).map_err(|e| e.to_string())?;
        self.snapshot = Arc::new(self.tree.snapshot());
        Ok(())
    }
    fn sync(&mut self) -> Result<(), String> {
        Ok(())
    }
}

fn upstream(dir: &std::path::Path) -> TilesUpstream {
    TilesUpstream::new(Box::new(DirStore::new(dir)), Box::new(Unsigned))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn root_after_equals_the_root_of_the_longer_tree(
        n in 2u64..=16,
        old in 0u64..700,
        added in 0u64..700,
    ) {
        let all = leaves(3, old + added);
        let mut before = LeanImt::from_leaves(config(n), &all[..old as usize]).unwrap();
        let mut after = LeanImt::from_leaves(config(n), &all).unwrap();
        prop_assert_eq!(root_after(&before.snapshot(), &all[old as usize..]), after.root());
    }
}

#[test]
fn a_mirror_copies_the_tree_in_verified_chunks_and_follows_new_heads() {
    let all = leaves(5, 9_000);
    for n in [2, 4, 16] {
        let mut source = LeanImt::from_leaves(config(n), &all[..5_000]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let store = DirStore::new(dir.path());
        publish(&source.snapshot(), &store).unwrap();
        let mut mirror = Memory::new(config(n));
        // Chunks that start and end inside tiles.
        let done = catch_up(&mut upstream(dir.path()), &mut mirror, 700).unwrap();
        assert_eq!((done.head, done.adopted), (source.head(), 5_000));
        source.append_batch(&all[5_000..]).unwrap();
        publish(&source.snapshot(), &store).unwrap();
        let done = catch_up(&mut upstream(dir.path()), &mut mirror, 1_000).unwrap();
        assert_eq!((done.head, done.adopted), (source.head(), 4_000));
        assert!(mirror.tree.leaves().eq(all.iter()), "n {n}");
        // Nothing new: nothing adopted.
        let done = catch_up(&mut upstream(dir.path()), &mut mirror, 1_000).unwrap();
        assert_eq!(done.adopted, 0);
    }
}

#[test]
fn a_fork_a_rewritten_history_and_a_shrinking_store_are_refused_and_nothing_is_adopted() {
    let dir = tempfile::tempdir().unwrap();
    let a = leaves(1, 3_000);
    let tree = LeanImt::from_leaves(config(4), &a[..2_000]).unwrap();
    let mut tree = tree;
    publish(&tree.snapshot(), &DirStore::new(dir.path())).unwrap();
    let mut mirror = Memory::new(config(4));
    catch_up(&mut upstream(dir.path()), &mut mirror, 512).unwrap();
    let adopted = mirror.snapshot.head();

    // Another tree, longer, sharing the first 1,000 leaves: a fork.
    let mut forked_leaves = a[..1_000].to_vec();
    forked_leaves.extend(leaves(2, 2_500));
    let mut forked = LeanImt::from_leaves(config(4), &forked_leaves).unwrap();
    let other = tempfile::tempdir().unwrap();
    publish(&forked.snapshot(), &DirStore::new(other.path())).unwrap();
    let err = catch_up(&mut upstream(other.path()), &mut mirror, 512).unwrap_err();
    assert!(
        matches!(&err, MirrorError::Refused { reason, .. } if reason.contains("FORK")),
        "{err}"
    );
    assert!(
        err.to_string().contains("checkpoint"),
        "names the object: {err}"
    );
    assert_eq!(mirror.snapshot.head(), adopted, "nothing adopted");

    // The same size with another root: rewritten history.
    let mut rewritten = LeanImt::from_leaves(config(4), &forked_leaves[..2_000]).unwrap();
    let same = tempfile::tempdir().unwrap();
    publish(&rewritten.snapshot(), &DirStore::new(same.path())).unwrap();
    let err = catch_up(&mut upstream(same.path()), &mut mirror, 512).unwrap_err();
    assert!(err.to_string().contains("history was rewritten"), "{err}");

    // Fewer leaves than adopted.
    let mut short = LeanImt::from_leaves(config(4), &a[..1_500]).unwrap();
    let shrunk = tempfile::tempdir().unwrap();
    publish(&short.snapshot(), &DirStore::new(shrunk.path())).unwrap();
    let err = catch_up(&mut upstream(shrunk.path()), &mut mirror, 512).unwrap_err();
    assert!(err.to_string().contains("went backwards"), "{err}");

    // Another arity.
    let mut wide = LeanImt::from_leaves(config(16), &a).unwrap();
    let foreign = tempfile::tempdir().unwrap();
    publish(&wide.snapshot(), &DirStore::new(foreign.path())).unwrap();
    let err = catch_up(&mut upstream(foreign.path()), &mut mirror, 512).unwrap_err();
    assert!(err.to_string().contains("arity 16"), "{err}");
    assert_eq!(mirror.snapshot.head(), adopted, "still nothing adopted");

    // The honest store, grown, is followed.
    tree.append_batch(&a[2_000..]).unwrap();
    publish(&tree.snapshot(), &DirStore::new(dir.path())).unwrap();
    let done = catch_up(&mut upstream(dir.path()), &mut mirror, 512).unwrap();
    assert_eq!(done.head, tree.head());
}

#[test]
fn wrong_short_or_oversized_leaf_tiles_are_refused_by_name_and_never_adopted() {
    let dir = tempfile::tempdir().unwrap();
    let store = DirStore::new(dir.path());
    let mut tree = LeanImt::from_leaves(config(2), &leaves(7, 4_000)).unwrap();
    publish(&tree.snapshot(), &store).unwrap();
    let path = "tile/0/009";
    let good = std::fs::read(dir.path().join(path)).unwrap();
    let mut wrong = good.clone();
    wrong[100] ^= 2;
    store.put(path, &wrong).unwrap();
    let mut mirror = Memory::new(config(2));
    // A chunk of 1,024 leaves (4 tiles) holds the bad one: the chunks
    // before it are adopted, that one is not, and the error names the
    // leaf and its tile.
    let err = catch_up(&mut upstream(dir.path()), &mut mirror, 1_024).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, MirrorError::Refused { .. }), "{text}");
    // Leaf 9 * 256 + 100 / 32 = 2,307 is the flipped one, in tile 9.
    assert!(text.contains("leaves 2304..2560 in tile/0/009"), "{text}");
    assert_eq!(mirror.snapshot.size(), 2_048);
    // Short.
    store.put(path, &good[..640]).unwrap();
    let err = catch_up(&mut upstream(dir.path()), &mut mirror, 1_024).unwrap_err();
    assert!(
        err.to_string().contains(path) && err.to_string().contains("640 bytes"),
        "{err}"
    );
    // Oversized.
    let mut long = good.clone();
    long.extend_from_slice(&[0; 32]);
    store.put(path, &long).unwrap();
    let err = catch_up(&mut upstream(dir.path()), &mut mirror, 1_024).unwrap_err();
    assert!(
        err.to_string().contains(path) && err.to_string().contains("8224 bytes"),
        "{err}"
    );
    assert_eq!(mirror.snapshot.size(), 2_048);
    // Repaired: adopted to the end.
    store.put(path, &good).unwrap();
    let done = catch_up(&mut upstream(dir.path()), &mut mirror, 1_024).unwrap();
    assert_eq!(done.head, tree.head());
}

/// A signature hook that refuses every checkpoint whose size is odd.
struct EvenOnly;

impl CheckpointSignature for EvenOnly {
    fn verify_checkpoint_signature(
        &self,
        object: &[u8],
        checkpoint: &Checkpoint,
    ) -> Result<(), String> {
        assert_eq!(Checkpoint::decode(object).unwrap(), *checkpoint);
        if checkpoint.head.size % 2 == 1 {
            return Err(format!(
                "no signature on the head of {} leaves",
                checkpoint.head.size
            ));
        }
        Ok(())
    }
}

#[test]
fn a_checkpoint_the_signature_hook_rejects_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut tree = LeanImt::from_leaves(config(3), &leaves(9, 1_001)).unwrap();
    publish(&tree.snapshot(), &DirStore::new(dir.path())).unwrap();
    let mut mirror = Memory::new(config(3));
    let mut signed = TilesUpstream::new(Box::new(DirStore::new(dir.path())), Box::new(EvenOnly));
    let err = catch_up(&mut signed, &mut mirror, 4_096).unwrap_err();
    assert!(
        err.to_string()
            .contains("signature: no signature on the head of 1001 leaves"),
        "{err}"
    );
    assert!(err.to_string().contains(CHECKPOINT), "{err}");
    assert_eq!(mirror.snapshot.size(), 0);
}
