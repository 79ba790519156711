//! Bundles as the leaf level (docs/spec.md 8.1): a publisher writes no
//! leaf tile inside a complete bundle, so each leaf is stored once; proofs
//! read such a leaf tile as a byte range of its bundle (from a directory,
//! and over HTTP from a server that ignores `Range`), across the boundary
//! between the bundles and the tail of leaf tiles; a wrong bundle range is
//! refused naming the bundle; a store of the older layout (leaf tiles
//! everywhere, with or without bundles) is still read; and a publication
//! that stops before its checkpoint leaves a store that reads at the old
//! head and resumes.

use cairn_core::{Hash, LeanImt, TreeHead};
use cairn_testkit::http::StaticServer;
use cairn_tiles::{
    CHECKPOINT, DirStore, Layout, Location, ObjectError, RemoteOptions, RemoteStore, TileError,
    TileSink, TileSource, TileTree, catch_up, publish, publish_at, read_checkpoint,
};

use crate::mirror::{Memory, config, leaves};

/// N = 2: bundles of 65,536 leaves, leaf tiles of 256; two complete
/// bundles and a tail of three full leaf tiles and a partial one.
const B: u64 = 65_536;
const SIZE: u64 = 2 * B + 3 * 256 + 100;

fn published(all: &[Hash]) -> (LeanImt, tempfile::TempDir) {
    let mut tree = LeanImt::from_leaves(config(2), all).unwrap();
    let dir = tempfile::tempdir().unwrap();
    publish(&tree.snapshot(), &DirStore::new(dir.path())).unwrap();
    (tree, dir)
}

/// Every file under `dir`, relative, with its length.
fn files(dir: &std::path::Path) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            } else {
                let name = entry
                    .path()
                    .strip_prefix(dir)
                    .unwrap()
                    .display()
                    .to_string();
                out.push((name, entry.metadata().unwrap().len()));
            }
        }
    }
    out.sort();
    out
}

/// Turns a store of this layout into one of the older layout: every
/// bundle's leaf tiles written beside it (cut from the bundle by the
/// spec's geometry, not by the crate's), and the bundles removed unless
/// `keep_bundles`.
pub(crate) fn older_layout(dir: &std::path::Path, keep_bundles: bool) {
    let checkpoint = read_checkpoint(&DirStore::new(dir)).unwrap();
    let layout = checkpoint.layout();
    let (bundle_leaves, width) = (layout.bundle_leaves(), layout.width());
    let store = DirStore::new(dir);
    for k in 0..checkpoint.head.size / bundle_leaves {
        let path = layout.bundle_path(k);
        let bytes = std::fs::read(dir.join(&path)).unwrap();
        for (j, tile) in bytes.chunks(width as usize * 32).enumerate() {
            let index = k * (bundle_leaves / width) + j as u64;
            let name = format!("tile/0/{}", three_digit_groups(index));
            store.put(&name, tile).unwrap();
        }
        if !keep_bundles {
            std::fs::remove_file(dir.join(&path)).unwrap();
        }
    }
}

/// `1234` as `x001/234`.
fn three_digit_groups(index: u64) -> String {
    let digits = format!(
        "{index:0>width$}",
        width = index.to_string().len().div_ceil(3) * 3
    );
    let groups: Vec<&str> = (0..digits.len() / 3)
        .map(|i| &digits[3 * i..3 * i + 3])
        .collect();
    let (last, rest) = groups.split_last().unwrap();
    rest.iter().map(|g| format!("x{g}/")).collect::<String>() + last
}

/// Proofs of leaves on both sides of every boundary, and consistency
/// proofs from sizes inside and past the bundles, all equal to the tree's.
fn proves_like_the_tree(tree: &mut LeanImt, source: &dyn TileSource) -> Vec<String> {
    let head = tree.head();
    let mut client = TileTree::new(config(2), head, source);
    for i in [
        0,
        5,
        255,
        256,
        B - 1,
        B,
        2 * B - 1,
        2 * B,
        2 * B + 700,
        SIZE - 1,
    ] {
        assert_eq!(client.prove(i).unwrap(), tree.prove(i).unwrap(), "leaf {i}");
    }
    let snapshot = tree.snapshot();
    let now = snapshot.view(head.size).unwrap();
    for old in [1, 1_000, B, B + 1, 2 * B + 300, SIZE] {
        let old_head = snapshot.view(old).unwrap().head();
        assert_eq!(
            client.prove_consistency(&old_head).unwrap(),
            now.prove_consistency(old).unwrap(),
            "from {old}"
        );
    }
    client
        .fetched()
        .iter()
        .map(|(name, _)| name.clone())
        .collect()
}

#[test]
fn the_leaf_level_is_stored_once_and_proofs_read_bundle_ranges() {
    let all = leaves(31, SIZE);
    let (mut tree, dir) = published(&all);
    let files = files(dir.path());
    let leaf_tiles: Vec<&(String, u64)> = files
        .iter()
        .filter(|(p, _)| p.starts_with("tile/0/"))
        .collect();
    // The tail only: three full leaf tiles and the partial one.
    let names: Vec<&str> = leaf_tiles.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        names,
        ["tile/0/512", "tile/0/513", "tile/0/514", "tile/0/515.p/100"]
    );
    // Every leaf once: the bundles' bytes and the tail's are the leaves'.
    let leaf_bytes: u64 = files
        .iter()
        .filter(|(p, _)| p.starts_with("tile/0/") || p.starts_with("bundle/"))
        .map(|(_, len)| len)
        .sum();
    assert_eq!(leaf_bytes, SIZE * 32);

    let read = proves_like_the_tree(&mut tree, &DirStore::new(dir.path()));
    assert!(read.iter().any(|r| r == "bundle/000[0..8192]"), "{read:?}");
    assert!(
        read.iter().any(|r| r.starts_with("bundle/001[")),
        "{read:?}"
    );
    assert!(read.iter().any(|r| r == "tile/0/515.p/100"), "{read:?}");

    // Over HTTP from a server that answers `Range` with the whole object:
    // accepted at exactly the bundle's length, and cut.
    let server = StaticServer::start(dir.path());
    let http = RemoteStore::open(
        &Location::parse(&server.url()).unwrap(),
        &RemoteOptions::default(),
    )
    .unwrap();
    proves_like_the_tree(&mut tree, &http);
    assert!(
        server.paths().iter().any(|p| p == "bundle/001"),
        "{:?}",
        server.paths()
    );

    // A mirror copies the whole tree from it.
    let mut mirror = Memory::new(config(2));
    let done = catch_up(
        &mut cairn_tiles::TilesUpstream::new(
            Box::new(DirStore::new(dir.path())),
            Box::new(cairn_tiles::Unsigned),
        ),
        &mut mirror,
        1_000,
    )
    .unwrap();
    assert_eq!((done.head, done.adopted), (tree.head(), SIZE));
    assert!(mirror.tree.leaves().eq(all.iter()));
}

#[test]
fn a_wrong_bundle_range_is_refused_naming_the_bundle() {
    let all = leaves(32, SIZE);
    let (mut tree, dir) = published(&all);
    let bundle = dir.path().join("bundle/001");
    let good = std::fs::read(&bundle).unwrap();
    // Leaf B + 300 is in the bundle's second leaf tile: bytes 8192..16384.
    let mut bad = good.clone();
    bad[300 * 32 + 7] ^= 1;
    std::fs::write(&bundle, &bad).unwrap();
    let store = DirStore::new(dir.path());
    let mut client = TileTree::new(config(2), tree.head(), &store);
    let err = client.prove(B + 300).unwrap_err();
    let TileError::Mismatch { objects, .. } = &err else {
        panic!("want a mismatch, got {err:?}");
    };
    assert!(
        objects.iter().any(|o| o == "bundle/001[8192..16384]"),
        "{err}"
    );
    assert_eq!(
        client.cached_tiles(),
        0,
        "nothing of a failed proof is kept"
    );
    // A leaf outside the damaged range still proves.
    client.prove(B + 5).unwrap();

    // A bundle of another length is refused by name, even read in part.
    for bytes in [
        good[..good.len() - 32].to_vec(),
        [good.clone(), vec![0; 32]].concat(),
    ] {
        std::fs::write(&bundle, &bytes).unwrap();
        let mut client = TileTree::new(config(2), tree.head(), &store);
        let err = client.prove(B + 300).unwrap_err();
        let TileError::Fetch(ObjectError { path, message, .. }) = &err else {
            panic!("want a refused object, got {err:?}");
        };
        assert_eq!(path, "bundle/001", "{err}");
        assert!(
            message.contains(&format!("want exactly {}", B * 32)),
            "{err}"
        );
    }
}

#[test]
fn a_store_of_the_older_layout_is_still_read() {
    for keep_bundles in [false, true] {
        let all = leaves(33, SIZE);
        let (mut tree, dir) = published(&all);
        older_layout(dir.path(), keep_bundles);
        let read = proves_like_the_tree(&mut tree, &DirStore::new(dir.path()));
        if keep_bundles {
            assert!(
                read.iter().any(|r| r.starts_with("bundle/000[")),
                "{read:?}"
            );
        } else {
            assert!(read.iter().any(|r| r == "tile/0/000"), "{read:?}");
            assert!(!read.iter().any(|r| r.starts_with("bundle/")), "{read:?}");
        }
        let mut mirror = Memory::new(config(2));
        let done = catch_up(
            &mut cairn_tiles::TilesUpstream::new(
                Box::new(DirStore::new(dir.path())),
                Box::new(cairn_tiles::Unsigned),
            ),
            &mut mirror,
            1_000,
        )
        .unwrap();
        assert_eq!(done.adopted, SIZE);
        assert!(mirror.tree.leaves().eq(all.iter()));
        // Publishing on from the older layout: the new stretch is bundles.
        let more = leaves(34, B);
        tree.append_batch(&more).unwrap();
        publish(&tree.snapshot(), &DirStore::new(dir.path())).unwrap();
        assert!(dir.path().join("bundle/002").exists());
        assert!(!dir.path().join("tile/0/520").exists(), "inside bundle 2");
        let store = DirStore::new(dir.path());
        let mut client = TileTree::new(config(2), tree.head(), &store);
        for i in [3, B + 9, 2 * B + 10, 3 * B - 1, 3 * B + 5] {
            assert_eq!(client.prove(i).unwrap(), tree.prove(i).unwrap(), "leaf {i}");
        }
    }
}

/// A store that refuses to write the checkpoint: a publication that stops
/// after its tiles and bundles.
struct NoCheckpoint(DirStore);

impl TileSource for NoCheckpoint {
    fn get(&self, path: &str, max_bytes: u64) -> Result<Vec<u8>, ObjectError> {
        self.0.get(path, max_bytes)
    }
    fn location(&self) -> String {
        self.0.location()
    }
}

impl TileSink for NoCheckpoint {
    fn put(&self, path: &str, bytes: &[u8]) -> Result<(), ObjectError> {
        if path == CHECKPOINT {
            return Err(ObjectError {
                op: "put",
                store: self.location(),
                path: path.into(),
                message: "stopped".into(),
                missing: false,
                too_large: false,
            });
        }
        self.0.put(path, bytes)
    }
    fn sync(&self) -> Result<(), ObjectError> {
        self.0.sync()
    }
}

#[test]
fn a_publication_stopped_before_its_checkpoint_leaves_a_readable_store_and_resumes() {
    let all = leaves(35, SIZE);
    let mut tree = LeanImt::from_leaves(config(2), &all).unwrap();
    let snapshot = tree.snapshot();
    let dir = tempfile::tempdir().unwrap();
    let store = DirStore::new(dir.path());
    // Published at B + 600: bundle 0, and leaf tiles 256..258 in the tail.
    let first = B + 600;
    publish_at(&snapshot, first, &store).unwrap();
    assert!(dir.path().join("tile/0/257").exists());
    // The next publication writes bundle 1 and stops before the checkpoint.
    publish_at(&snapshot, SIZE, &NoCheckpoint(store.clone())).unwrap_err();
    assert!(dir.path().join("bundle/001").exists());
    // Readers of the standing checkpoint read its tail from the leaf tiles.
    let old: TreeHead = snapshot.view(first).unwrap().head();
    assert_eq!(read_checkpoint(&store).unwrap().head, old);
    let mut client = TileTree::new(config(2), old, &store);
    for i in [0, B - 1, B, B + 599] {
        assert_eq!(
            client.prove(i).unwrap(),
            snapshot.view(first).unwrap().prove(i).unwrap(),
            "leaf {i} at {first}"
        );
    }
    // Resumed: the checkpoint names the new head and every proof holds.
    publish_at(&snapshot, SIZE, &store).unwrap();
    proves_like_the_tree(&mut tree, &store);
    let layout = Layout::new(config(2).arity, config(2).hash);
    assert_eq!(
        layout
            .in_bundle(SIZE, layout.tile_of(SIZE, 0, B + 5).unwrap())
            .unwrap()
            .path,
        "bundle/001"
    );
}
