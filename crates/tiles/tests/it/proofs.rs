//! Proofs from tiles equal the tree's own, for every arity's geometry and
//! both append-only kinds (Lean, and fixed-depth padded with zeros),
//! across tile and segment boundaries, after incremental publications; a
//! wrong, short or missing tile and a forked tree are refused by name.

use cairn_core::{Arity, Hash, HashKind, LeanImt, TreeConfig, TreeHead, TreeKind};
use cairn_tiles::{
    CHECKPOINT, CHECKPOINT_MAX_BYTES, Checkpoint, DirStore, Foreign, Layout, PublishError,
    TileError, TileSink, TileSource, TileTree, publish,
};

fn leaves(count: u64) -> Vec<Hash> {
    (0..count).map(|i| cairn_testkit::leaf(77, i)).collect()
}

fn config(n: u64) -> TreeConfig {
    TreeConfig::new(Arity::new(n).unwrap(), HashKind::Blake3)
}

/// A fixed-depth tree of arity `n` two levels deeper than `leaves` need
/// (its top levels pad a lone node with zeros).
fn imt(n: u64, leaves: u64) -> TreeConfig {
    let arity = Arity::new(n).unwrap();
    config(n).with_kind(TreeKind::Fixed {
        depth: cairn_core::shape::depth(leaves, arity) + 2,
        zero: [0x5a; 32],
    })
}

/// Indices worth proving at `size`: both ends, tile edges, a spread.
fn indices(size: u64) -> Vec<u64> {
    let mut out = vec![0, size - 1, size / 2, size / 3];
    for edge in [255, 256, 243, 244, 125, 65_535, 65_536] {
        if edge < size {
            out.push(edge);
        }
    }
    out
}

#[test]
fn proofs_from_tiles_equal_the_trees_at_every_arity_and_after_each_publication() {
    let all = leaves(70_000);
    let configs = [2, 3, 4, 5, 7, 16]
        .into_iter()
        .flat_map(|n| [config(n), imt(n, 70_000)]);
    for config in configs {
        let n = config.arity.as_u64();
        let dir = tempfile::tempdir().unwrap();
        let store = DirStore::new(dir.path());
        let mut tree = LeanImt::new(config);
        let mut published: Vec<TreeHead> = Vec::new();
        let mut at = 0u64;
        // Publish at sizes that start and end inside and on tile edges.
        for size in [1u64, 2, 255, 256, 257, 1_000, 16_385, 70_000] {
            tree.append_batch(&all[at as usize..size as usize]).unwrap();
            at = size;
            let snapshot = tree.snapshot();
            let done = publish(&snapshot, &store).unwrap();
            assert!(done.objects >= 1, "the checkpoint at least");
            let checkpoint =
                Checkpoint::decode(&store.get(CHECKPOINT, CHECKPOINT_MAX_BYTES).unwrap()).unwrap();
            assert_eq!(checkpoint.head, snapshot.head());
            assert_eq!(checkpoint.tree, config);
            assert_eq!(
                checkpoint.layout(),
                Layout::new(config.arity, HashKind::Blake3)
            );
            let mut client = TileTree::new(config, checkpoint.head, &store);
            for index in indices(size) {
                let proof = client
                    .prove(index)
                    .unwrap_or_else(|e| panic!("{config:?} size {size} index {index}: {e}"));
                assert_eq!(
                    proof,
                    snapshot.prove(index).unwrap(),
                    "{config:?} n {n} size {size} index {index}"
                );
            }
            for old in &published {
                let proof = client.prove_consistency(old).unwrap();
                assert_eq!(proof, snapshot.prove_consistency(old.size, size).unwrap());
            }
            published.push(checkpoint.head);
        }
    }
}

#[test]
fn a_publication_writes_only_the_tiles_it_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let store = DirStore::new(dir.path());
    let all = leaves(3_000);
    let mut tree = LeanImt::from_leaves(config(4), &all[..2_000]).unwrap();
    let first = publish(&tree.snapshot(), &store).unwrap();
    let layout = Layout::new(config(4).arity, HashKind::Blake3);
    assert_eq!(first.objects, layout.tiles(2_000).len() as u64 + 1);
    // Again at the same size: the checkpoint only.
    assert_eq!(publish(&tree.snapshot(), &store).unwrap().objects, 1);
    tree.append_batch(&all[2_000..]).unwrap();
    let second = publish(&tree.snapshot(), &store).unwrap();
    assert_eq!(
        second.objects,
        layout.tiles_since(2_000, 3_000).len() as u64 + 1
    );
    assert!(second.objects < first.objects);
}

#[test]
fn wrong_short_or_missing_tiles_are_refused_naming_the_object() {
    let dir = tempfile::tempdir().unwrap();
    let store = DirStore::new(dir.path());
    let mut tree = LeanImt::from_leaves(config(4), &leaves(5_000)).unwrap();
    let snapshot = tree.snapshot();
    publish(&snapshot, &store).unwrap();
    let head = snapshot.head();
    // One flipped bit in a leaf tile: the proof does not verify.
    let path = "tile/0/001";
    let mut bytes = store.get(path, 8192).unwrap();
    bytes[40] ^= 1;
    store.put(path, &bytes).unwrap();
    let mut client = TileTree::new(config(4), head, &store);
    let err = client.prove(300).unwrap_err();
    match &err {
        TileError::Mismatch { objects, .. } => {
            assert!(objects.iter().any(|o| o == path), "{err}");
        }
        other => panic!("want a mismatch, got {other:?}"),
    }
    // Nothing of the failed proof is kept: not the wrong tile, not the
    // good ones fetched with it.
    assert_eq!(client.cached_tiles(), 0);
    // A leaf that does not use that tile is still proven, and its tiles kept.
    client.prove(10).unwrap();
    assert!(client.cached_tiles() > 0);
    assert!(
        client.prove(300).is_err(),
        "the wrong tile is fetched again, and refused again"
    );
    // A short tile.
    store.put(path, &bytes[..100]).unwrap();
    let err = TileTree::new(config(4), head, &store)
        .prove(300)
        .unwrap_err();
    assert!(
        matches!(&err, TileError::Malformed { path: p, got: 100, want: 8192, .. } if p == path),
        "{err}"
    );
    // An oversized one: refused from its announced length, naming it.
    let mut long = store.get(path, 8192).unwrap_or_else(|_| bytes.clone());
    long.resize(8192 + 32, 0);
    store.put(path, &long).unwrap();
    let err = TileTree::new(config(4), head, &store)
        .prove(300)
        .unwrap_err();
    assert!(
        matches!(&err, TileError::Fetch(e) if e.too_large && e.path == path),
        "{err}"
    );
    assert!(err.to_string().contains(path), "{err}");
    // A missing one.
    std::fs::remove_file(dir.path().join(path)).unwrap();
    let err = TileTree::new(config(4), head, &store)
        .prove(300)
        .unwrap_err();
    assert!(
        matches!(&err, TileError::Fetch(e) if e.missing && e.path == path),
        "{err}"
    );
    // A head the tiles do not belong to.
    let wrong = TreeHead::new(head.size, [9; 32]);
    assert!(matches!(
        TileTree::new(config(4), wrong, &store).prove(10),
        Err(TileError::Mismatch { .. })
    ));
}

#[test]
fn a_tree_that_forked_below_the_published_size_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = DirStore::new(dir.path());
    let all = leaves(2_000);
    let mut tree = LeanImt::from_leaves(config(2), &all[..1_500]).unwrap();
    publish(&tree.snapshot(), &store).unwrap();
    tree.truncate(1_000).unwrap();
    tree.append_batch(&leaves(4_000)[3_000..3_600]).unwrap();
    let err = publish(&tree.snapshot(), &store).unwrap_err();
    assert!(
        matches!(&err, PublishError::Foreign(Foreign::Root { size: 1_500 })),
        "{err}"
    );
    assert!(err.to_string().contains("rolled back"), "{err}");
    let mut other = LeanImt::from_leaves(config(4), &all).unwrap();
    assert!(matches!(
        publish(&other.snapshot(), &store),
        Err(PublishError::Foreign(Foreign::Tree { .. }))
    ));
    // Nor does a fixed-depth tree of the same arity and hash publish over it.
    let mut other = LeanImt::from_leaves(imt(2, 2_000), &all).unwrap();
    let err = publish(&other.snapshot(), &store).unwrap_err();
    assert!(
        matches!(err, PublishError::Foreign(Foreign::Tree { .. })),
        "{err}"
    );
    assert!(err.to_string().contains("imt of depth 13"), "{err}");
    // The store still holds the first publication.
    let checkpoint =
        Checkpoint::decode(&store.get(CHECKPOINT, CHECKPOINT_MAX_BYTES).unwrap()).unwrap();
    assert_eq!(checkpoint.head.size, 1_500);
}

#[test]
fn an_indexed_tree_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let store = DirStore::new(dir.path());
    // Its earlier leaves change: no tile of it would stay immutable.
    let indexed = config(2).with_kind(TreeKind::Indexed);
    let mut tree = LeanImt::from_leaves(indexed, &leaves(300)).unwrap();
    let err = publish(&tree.snapshot(), &store).unwrap_err();
    assert!(matches!(err, PublishError::Indexed), "{err}");
    assert_eq!(std::fs::read_dir(dir.path()).map_or(0, |d| d.count()), 0);
}

/// The empty fixed-depth tree has a root (`zeros[depth]`): its checkpoint
/// names it, and a consistency proof from it to a later head verifies.
#[test]
fn the_empty_fixed_depth_tree_is_published_with_its_root() {
    let dir = tempfile::tempdir().unwrap();
    let store = DirStore::new(dir.path());
    let config = imt(2, 300);
    let mut tree = LeanImt::new(config);
    publish(&tree.snapshot(), &store).unwrap();
    let empty = Checkpoint::decode(&store.get(CHECKPOINT, CHECKPOINT_MAX_BYTES).unwrap()).unwrap();
    assert_eq!(empty.head, config.empty_head());
    assert!(empty.head.root.is_some());
    tree.append_batch(&leaves(300)).unwrap();
    publish(&tree.snapshot(), &store).unwrap();
    let full = Checkpoint::decode(&store.get(CHECKPOINT, CHECKPOINT_MAX_BYTES).unwrap()).unwrap();
    let mut client = TileTree::new(config, full.head, &store);
    let proof = client.prove_consistency(&empty.head).unwrap();
    assert_eq!(proof, tree.prove_consistency(0, 300).unwrap());
    assert!(matches!(
        client.prove(300),
        Err(TileError::Tree(
            cairn_core::TreeError::IndexOutOfRange { .. }
        ))
    ));
}
