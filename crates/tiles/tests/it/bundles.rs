//! Bundles: the publisher writes one per full stretch of 65,536 leaves,
//! a mirror reads them instead of the leaf tiles, falls back to the tiles
//! where a store has none, and refuses a wrong bundle or a checkpoint that
//! disagrees with its tiles by name, adopting nothing of them.

use std::sync::{Arc, Mutex};

use cairn_core::LeanImt;
use cairn_tiles::{
    DEFAULT_CHUNK_LEAVES, DirStore, MirrorError, ObjectError, TileSource, TilesUpstream, Unsigned,
    catch_up, publish,
};

use cairn_tiles::MirrorTarget as _;

use crate::mirror::{Memory, config, leaves};

/// Bundles of N = 2 hold 65,536 leaves: three full ones and a right edge.
const SIZE: u64 = 3 * 65_536 + 1_000;

/// A directory store that records every path read.
struct Counted {
    dir: DirStore,
    read: Arc<Mutex<Vec<String>>>,
}

impl TileSource for Counted {
    fn get(&self, path: &str, max_bytes: u64) -> Result<Vec<u8>, ObjectError> {
        self.read.lock().unwrap().push(path.to_owned());
        self.dir.get(path, max_bytes)
    }
    fn location(&self) -> String {
        self.dir.location()
    }
    fn get_range(
        &self,
        path: &str,
        offset: u64,
        len: u64,
        whole: u64,
    ) -> Result<Vec<u8>, ObjectError> {
        let end = offset + len;
        self.read
            .lock()
            .unwrap()
            .push(format!("{path}[{offset}..{end}]"));
        self.dir.get_range(path, offset, len, whole)
    }
}

fn counted(dir: &std::path::Path) -> (TilesUpstream, Arc<Mutex<Vec<String>>>) {
    let read = Arc::new(Mutex::new(Vec::new()));
    let source = Counted {
        dir: DirStore::new(dir),
        read: Arc::clone(&read),
    };
    (
        TilesUpstream::new(Box::new(source), Box::new(Unsigned)).with_in_flight(2),
        read,
    )
}

fn published(all: &[cairn_core::Hash]) -> (LeanImt, tempfile::TempDir) {
    let mut source = LeanImt::from_leaves(config(2), all).unwrap();
    let dir = tempfile::tempdir().unwrap();
    publish(&source.snapshot(), &DirStore::new(dir.path())).unwrap();
    (source, dir)
}

/// A mirror of `config` holding `all[..held]` catches up from the tiles in
/// `dir` (published from `source`), which must bring it to `source`'s head
/// by adopting the rest; returns the mirror and the reads it made.
fn resume(
    config: cairn_core::TreeConfig,
    dir: &std::path::Path,
    source: &mut LeanImt,
    all: &[cairn_core::Hash],
    held: usize,
) -> (Memory, Arc<Mutex<Vec<String>>>) {
    let mut mirror = Memory::new(config);
    if held > 0 {
        mirror.adopt(&all[..held]).unwrap();
    }
    let (mut upstream, read) = counted(dir);
    let done = catch_up(&mut upstream, &mut mirror, DEFAULT_CHUNK_LEAVES).unwrap();
    assert_eq!(
        (done.head, done.adopted),
        (source.head(), all.len() as u64 - held as u64)
    );
    (mirror, read)
}

#[test]
fn a_mirror_reads_bundles_where_the_store_has_them_and_tiles_elsewhere() {
    let all = leaves(7, SIZE);
    let (mut source, dir) = published(&all);
    for k in ["000", "001", "002"] {
        let bytes = std::fs::read(dir.path().join("bundle").join(k)).unwrap();
        assert_eq!(bytes.len(), 65_536 * 32, "bundle {k}");
        let first = k.parse::<usize>().unwrap() * 65_536;
        assert_eq!(
            &bytes[..32],
            &all[first][..],
            "bundle {k} starts at leaf {first}"
        );
    }
    assert!(!dir.path().join("bundle/003").exists(), "no partial bundle");

    let (mut upstream, read) = counted(dir.path());
    let mut mirror = Memory::new(config(2));
    let done = catch_up(&mut upstream, &mut mirror, DEFAULT_CHUNK_LEAVES).unwrap();
    assert_eq!((done.head, done.adopted), (source.head(), SIZE));
    assert!(mirror.tree.leaves().eq(all.iter()));
    let read = read.lock().unwrap().clone();
    let bundles = read
        .iter()
        .filter(|p| p.starts_with("bundle/") && !p.ends_with(']'))
        .count();
    let leaf_tiles = read.iter().filter(|p| p.starts_with("tile/0/")).count();
    assert_eq!(bundles, 3, "{read:?}");
    // The right edge (4 tiles) and the few a proof reads, not 772.
    assert!(leaf_tiles < 20, "{leaf_tiles} leaf tiles read: {read:?}");

    // A store published before bundles: the same tree from the tiles.
    crate::bundle_layout::older_layout(dir.path(), false);
    let (mut upstream, read) = counted(dir.path());
    let mut mirror = Memory::new(config(2));
    let done = catch_up(&mut upstream, &mut mirror, DEFAULT_CHUNK_LEAVES).unwrap();
    assert_eq!((done.head, done.adopted), (source.head(), SIZE));
    assert!(mirror.tree.leaves().eq(all.iter()));
    let leaf_tiles = read
        .lock()
        .unwrap()
        .iter()
        .filter(|p| p.starts_with("tile/0/"))
        .count();
    assert!(leaf_tiles >= 772, "{leaf_tiles}");
}

#[test]
fn a_wrong_or_short_bundle_is_refused_by_name_after_the_bundles_before_it() {
    let all = leaves(8, SIZE);
    let (mut source, dir) = published(&all);
    let bundle = dir.path().join("bundle/001");
    let good = std::fs::read(&bundle).unwrap();
    for (what, bytes) in [
        ("a changed leaf", {
            let mut b = good.clone();
            b[300 * 32 + 5] ^= 1;
            b
        }),
        ("a short bundle", good[..good.len() - 32].to_vec()),
        ("an oversized bundle", [good.clone(), vec![0; 32]].concat()),
    ] {
        std::fs::write(&bundle, &bytes).unwrap();
        let mut mirror = Memory::new(config(2));
        let (mut upstream, _) = counted(dir.path());
        let err = catch_up(&mut upstream, &mut mirror, DEFAULT_CHUNK_LEAVES).unwrap_err();
        let MirrorError::Refused { object, reason } = &err else {
            panic!("{what}: {err}");
        };
        assert!(object.ends_with("bundle/001"), "{what}: {err}");
        assert!(!reason.is_empty(), "{what}");
        // The first bundle was verified and adopted; nothing of the bad one.
        assert_eq!(mirror.snapshot.size(), 65_536, "{what}: {err}");
        // Run again, the store repaired: it resumes from there.
        std::fs::write(&bundle, &good).unwrap();
        let done = catch_up(&mut upstream, &mut mirror, DEFAULT_CHUNK_LEAVES).unwrap();
        assert_eq!((done.head, done.adopted), (source.head(), SIZE - 65_536));
        assert!(mirror.tree.leaves().eq(all.iter()), "{what}");
    }
    // The changed leaf is named by its index.
    let mut b = good.clone();
    b[300 * 32] ^= 1;
    std::fs::write(&bundle, &b).unwrap();
    let err = catch_up(
        &mut counted(dir.path()).0,
        &mut Memory::new(config(2)),
        DEFAULT_CHUNK_LEAVES,
    )
    .unwrap_err();
    assert!(err.to_string().contains("leaves 65792..66048"), "{err}");
}

#[test]
fn a_checkpoint_over_another_historys_tiles_is_named_not_the_first_tile() {
    let n = 3_000;
    let (_, dir) = published(&leaves(1, n));
    let (_, other) = published(&leaves(2, n));
    std::fs::copy(
        other.path().join("checkpoint"),
        dir.path().join("checkpoint"),
    )
    .unwrap();
    let mut mirror = Memory::new(config(2));
    let err = catch_up(&mut counted(dir.path()).0, &mut mirror, 1_000).unwrap_err();
    let MirrorError::Refused { object, reason } = &err else {
        panic!("{err}");
    };
    assert!(object.ends_with("/checkpoint"), "{err}");
    assert!(reason.contains("its tiles hash to root"), "{err}");
    assert_eq!(mirror.snapshot.size(), 0, "nothing adopted");

    // A mirror that adopted part of the true tree is told the same.
    let (_, dir) = published(&leaves(1, n));
    let mut mirror = Memory::new(config(2));
    let (_, part) = published(&leaves(1, 1_000));
    catch_up(&mut counted(part.path()).0, &mut mirror, 1_000).unwrap();
    std::fs::copy(
        other.path().join("checkpoint"),
        dir.path().join("checkpoint"),
    )
    .unwrap();
    let err = catch_up(&mut counted(dir.path()).0, &mut mirror, 1_000).unwrap_err();
    assert!(err.to_string().contains("its tiles hash to root"), "{err}");
    assert_eq!(mirror.snapshot.size(), 1_000, "nothing more adopted");
}

/// Reads per kind of object: whole bundles, leaf tiles (a leaf tile
/// inside a complete bundle is a range of it), tiles above.
fn kinds(read: &[String]) -> (usize, usize, usize) {
    let count = |prefix: &str| read.iter().filter(|p| p.starts_with(prefix)).count();
    let ranges = read
        .iter()
        .filter(|p| p.starts_with("bundle/") && p.contains('['))
        .count();
    let leaf = count("tile/0/");
    (
        count("bundle/") - ranges,
        leaf + ranges,
        count("tile/") - leaf,
    )
}

#[test]
fn full_bundles_are_checked_against_a_verified_row_not_a_proof_each() {
    // Lean trees of N = 2 and 4 and a fixed-depth one, from empty and
    // from a mirror that holds part of a bundle already.
    let n4 = cairn_core::TreeConfig::new(cairn_core::Arity::new(4).unwrap(), config(2).hash);
    let imt = n4.with_kind(cairn_core::TreeKind::Fixed {
        depth: 10,
        zero: [0x21; 32],
    });
    for (config, held) in [(config(2), 0), (n4, 0), (imt, 0), (n4, 70_000)] {
        let all = leaves(9, 5 * 65_536 + 777);
        let mut source = LeanImt::from_leaves(config, &all).unwrap();
        let dir = tempfile::tempdir().unwrap();
        publish(&source.snapshot(), &DirStore::new(dir.path())).unwrap();
        let (mirror, read) = resume(config, dir.path(), &mut source, &all, held);
        assert!(mirror.tree.leaves().eq(all.iter()));
        let (bundles, leaf_tiles, upper) = kinds(&read.lock().unwrap());
        assert_eq!(bundles, 5 - held / 65_536, "{config:?}: {read:?}");
        // The right edge, and a proof for a first chunk that is not a
        // whole bundle; not one proof per bundle.
        assert!(leaf_tiles <= 16, "{config:?}: {leaf_tiles} leaf tiles");
        assert!(upper <= 8, "{config:?}: {upper} upper tiles: {read:?}");
    }
}

#[test]
fn a_bundle_changed_with_its_node_in_the_tiles_is_refused_by_the_root() {
    // A store whose bundle 1 and its node (level 16, tile-level 2) were both
    // changed to agree: each bundle hashes to its node, but the nodes no
    // longer hash to the checkpoint's root. Nothing of bundle 1 is adopted.
    let all = leaves(10, SIZE);
    let (_, dir) = published(&all);
    let bundle = dir.path().join("bundle/001");
    let mut bad: Vec<cairn_core::Hash> = all[65_536..2 * 65_536].to_vec();
    bad[40][0] ^= 1;
    std::fs::write(&bundle, bad.concat()).unwrap();
    let node = LeanImt::from_leaves(config(2), &bad)
        .unwrap()
        .head()
        .root
        .unwrap();
    let row = dir.path().join("tile/2/000.p/3");
    let mut nodes = std::fs::read(&row).unwrap();
    assert_eq!(nodes.len(), 3 * 32);
    nodes[32..64].copy_from_slice(&node);
    std::fs::write(&row, &nodes).unwrap();
    let mut mirror = Memory::new(config(2));
    let err = catch_up(
        &mut counted(dir.path()).0,
        &mut mirror,
        DEFAULT_CHUNK_LEAVES,
    )
    .unwrap_err();
    assert!(matches!(err, MirrorError::Refused { .. }), "{err}");
    assert!(mirror.snapshot.size() <= 65_536, "{err}");
    assert!(
        mirror
            .tree
            .leaves()
            .eq(all[..mirror.snapshot.size() as usize].iter()),
        "{err}"
    );
}

/// The leaf range `[first, end)` an object read covers, for a bundle, a
/// range of one, or a leaf tile of 256 leaves (N = 2); `None` for upper
/// tiles and the checkpoint.
fn leaf_span(read: &str) -> Option<(u64, u64)> {
    if let Some(rest) = read.strip_prefix("bundle/") {
        let (k, range) = rest
            .split_once('[')
            .map_or((rest, None), |(k, r)| (k, Some(r)));
        let base = k.parse::<u64>().ok()? * 65_536;
        return Some(match range {
            None => (base, base + 65_536),
            Some(range) => {
                let (from, to) = range.trim_end_matches(']').split_once("..")?;
                (
                    base + from.parse::<u64>().ok()? / 32,
                    base + to.parse::<u64>().ok()? / 32,
                )
            }
        });
    }
    let tile = read.strip_prefix("tile/0/")?;
    let digits: String = tile
        .split(".p/")
        .next()?
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    let index = digits.parse::<u64>().ok()?;
    Some((index * 256, index * 256 + 256))
}

#[test]
fn a_mirror_resuming_reads_nothing_of_what_it_holds() {
    // A mirror killed after adopting whole bundles (or part of one) proves
    // that upstream's head extends its tree with the nodes it holds: no
    // read covers only leaves it has, not even the edge leaf's tile.
    let all = leaves(11, 4 * 65_536 + 300);
    let (mut source, dir) = published(&all);
    for held in [65_536, 2 * 65_536, 70_000, 65_535] {
        let (_, read) = resume(config(2), dir.path(), &mut source, &all, held);
        let read = read.lock().unwrap();
        for path in read.iter() {
            if let Some((first, end)) = leaf_span(path) {
                assert!(
                    end > held as u64,
                    "holding {held} leaves, read {path} (leaves {first}..{end}): {read:?}"
                );
            }
        }
    }
}
