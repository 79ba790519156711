//! The verifying mirror against a tile store: it copies the tree chunk by
//! chunk, adopts new heads incrementally, and refuses a fork, a rewritten
//! history, a size going backwards, a wrong, short or oversized leaf tile
//! and a checkpoint its signature hook rejects, adopting nothing of them.

use std::sync::Arc;

use cairn_core::{Arity, Hash, HashKind, LeanImt, Snapshot, TreeConfig, TreeKind};
use cairn_tiles::{
    CHECKPOINT, Checkpoint, CheckpointSignature, DirStore, MirrorError, MirrorTarget,
    SignatureError, TargetError, TileSink as _, TilesUpstream, Unsigned, catch_up, publish,
};

pub(crate) fn config(n: u64) -> TreeConfig {
    TreeConfig::new(Arity::new(n).unwrap(), HashKind::Blake3)
}

/// A fixed-depth (Tornado- or Semaphore v3-style) tree of arity `n`,
/// deep enough for 10,000 leaves.
pub(crate) fn imt(n: u64) -> TreeConfig {
    config(n).with_kind(TreeKind::Fixed {
        depth: cairn_core::shape::depth(10_000, Arity::new(n).unwrap()) + 1,
        zero: [0x21; 32],
    })
}

pub(crate) fn leaves(seed: u64, count: u64) -> Vec<Hash> {
    (0..count).map(|i| cairn_testkit::leaf(seed, i)).collect()
}

/// A mirror's tree in memory.
pub(crate) struct Memory {
    pub(crate) tree: LeanImt,
    pub(crate) snapshot: Arc<Snapshot>,
    /// What each catch-up said it would bring ([`MirrorTarget::expect`]).
    pub(crate) expected: Vec<u64>,
}

impl Memory {
    pub(crate) fn new(config: TreeConfig) -> Memory {
        let mut tree = LeanImt::new(config);
        let snapshot = Arc::new(tree.snapshot());
        Memory {
            tree,
            snapshot,
            expected: Vec::new(),
        }
    }
}

impl MirrorTarget for Memory {
    fn adopted(&self) -> Arc<Snapshot> {
        Arc::clone(&self.snapshot)
    }
    fn adopt(&mut self, leaves: &[Hash]) -> Result<(), TargetError> {
        self.tree.append_batch(leaves)?;
        self.snapshot = Arc::new(self.tree.snapshot());
        Ok(())
    }
    fn sync(&mut self) -> Result<(), TargetError> {
        Ok(())
    }
    fn expect(&mut self, leaves: u64) {
        self.expected.push(leaves);
    }
}

fn upstream(dir: &std::path::Path) -> TilesUpstream {
    TilesUpstream::new(Box::new(DirStore::new(dir)), Box::new(Unsigned))
}

#[test]
fn a_mirror_copies_the_tree_in_verified_chunks_and_follows_new_heads() {
    let all = leaves(5, 9_000);
    let configs = [2, 4, 16].into_iter().flat_map(|n| [config(n), imt(n)]);
    for config in configs {
        let n = config.arity;
        let mut source = LeanImt::from_leaves(config, &all[..5_000]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let store = DirStore::new(dir.path());
        publish(&source.snapshot(), &store).unwrap();
        let mut mirror = Memory::new(config);
        // Chunks that start and end inside tiles.
        let done = catch_up(&mut upstream(dir.path()), &mut mirror, 700).unwrap();
        assert_eq!((done.head, done.adopted), (source.head(), 5_000));
        source.append_batch(&all[5_000..]).unwrap();
        publish(&source.snapshot(), &store).unwrap();
        let done = catch_up(&mut upstream(dir.path()), &mut mirror, 1_000).unwrap();
        assert_eq!((done.head, done.adopted), (source.head(), 4_000));
        assert!(mirror.tree.leaves().eq(all.iter()), "{config:?} n {n}");
        // Nothing new: nothing adopted.
        let done = catch_up(&mut upstream(dir.path()), &mut mirror, 1_000).unwrap();
        assert_eq!(done.adopted, 0);
        // Each catch-up that fetched said first how many leaves it brings.
        assert_eq!(mirror.expected, [5_000, 4_000], "{config:?}");
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
    // Another kind: the same leaves as a fixed-depth tree.
    let mut padded = LeanImt::from_leaves(imt(4), &a).unwrap();
    let fixed = tempfile::tempdir().unwrap();
    publish(&padded.snapshot(), &DirStore::new(fixed.path())).unwrap();
    let err = catch_up(&mut upstream(fixed.path()), &mut mirror, 512).unwrap_err();
    assert!(err.to_string().contains("(imt of depth 8"), "{err}");
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
    ) -> Result<(), SignatureError> {
        assert_eq!(Checkpoint::decode(object).unwrap(), *checkpoint);
        if checkpoint.head.size % 2 == 1 {
            return Err(SignatureError::Unsigned {
                keys: format!("the key of even heads, not {}", checkpoint.head.size),
            });
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
            .contains("signature: the checkpoint is unsigned, want one signed by the key of even heads, not 1001"),
        "{err}"
    );
    assert!(err.to_string().contains(CHECKPOINT), "{err}");
    assert_eq!(mirror.snapshot.size(), 0);
}
