//! What a sync reads: only whole tiles (never an object naming one leaf),
//! and after the first sync only the right edge's tiles and the tiles
//! whose nodes changed.

use cairn_core::HashKind;
use cairn_tiles::{Layout, Unsigned};
use cairn_wallet::{Tracker, sync};

use crate::{Published, config, leaves};

/// The tile-level and index a path names (`tile/{t}/{K}[.p/{w}]`), or a
/// bundle range does (`bundle/{K}[a..b]`: a leaf tile of N = 2, 256 per
/// bundle, by the spec's geometry).
fn tile_of(path: &str) -> (u32, u64) {
    if let Some(rest) = path.strip_prefix("bundle/") {
        let (bundle, range) = rest.split_once('[').expect("a range");
        let digits: String = bundle.chars().filter(char::is_ascii_digit).collect();
        let offset: u64 = range.split_once("..").unwrap().0.parse().unwrap();
        assert!(
            range.ends_with(&format!("..{}]", offset + 256 * 32)),
            "{path}"
        );
        return (
            0,
            digits.parse::<u64>().unwrap() * 256 + offset / (256 * 32),
        );
    }
    let rest = path.strip_prefix("tile/").expect("a tile path");
    let rest = rest.split(".p/").next().unwrap();
    let (level, index) = rest.split_once('/').unwrap();
    let digits: String = index.chars().filter(char::is_ascii_digit).collect();
    (level.parse().unwrap(), digits.parse().unwrap())
}

#[test]
fn following_the_tree_reads_only_the_right_edge_and_the_marked_paths() {
    let config = config(2, HashKind::Blake3);
    let layout = Layout::new(config.arity, config.hash);
    let (h, w) = (layout.height(), layout.width());
    let all = leaves(3, 120_000);
    let mut published = Published::new(config);
    published.grow(&all[..50_000]);
    let mut tracker = Tracker::new(config, 10).unwrap();
    let marks = [7u64, 12_345, 40_000, 49_999];
    for index in marks {
        tracker.mark(index).unwrap();
    }
    sync(&mut tracker, &published.store, &Unsigned).unwrap();
    let cold = published.store.take();
    assert_eq!(cold[0].0, "checkpoint");
    // Cold: at most one tile per tile-level per mark, plus the right edge.
    let levels = 50_000u64.ilog(w) as usize + 1;
    assert!(
        cold.len() - 1 <= (marks.len() + 1) * levels,
        "{} tiles cold: {cold:?}",
        cold.len() - 1
    );
    let mut size = 50_000u64;
    let mut ranges = 0;
    for block in 0..70u64 {
        let to = size + 1_000;
        published.grow(&all[size as usize..to as usize]);
        let report = sync(&mut tracker, &published.store, &Unsigned).unwrap();
        let fetched = published.store.take();
        assert_eq!(
            fetched.len(),
            report.tiles + 1,
            "the checkpoint and the tiles"
        );
        for (path, _) in &fetched[1..] {
            ranges += usize::from(path.starts_with("bundle/"));
            let (level, index) = tile_of(path);
            // The last tile of its tile-level at the new size, or the one
            // holding the new size's first node of that level (the old
            // right edge, whose nodes changed), or on a marked path.
            let span = 1u64 << (h * level);
            let last = (to / span).saturating_sub(1) / w;
            let old_edge = (size / span) / w;
            let on_path = marks.iter().any(|m| (m / span) / w == index);
            assert!(
                index == last || index == old_edge || on_path,
                "block {block}: {path} is neither the right edge nor on a marked path"
            );
        }
        // Never more than one tile per tile-level for the edge, one for
        // the old edge, and one per marked path.
        assert!(report.tiles <= 2 * levels + marks.len(), "{fetched:?}");
        for index in marks {
            let got = tracker.witness(index).unwrap();
            assert_eq!(
                got,
                published.tree.at_size(to).unwrap().prove(index).unwrap()
            );
        }
        size = to;
    }
    // Past the first bundle (65,536 leaves), a leaf tile inside it is read
    // as a range of it.
    assert!(
        ranges > 0,
        "the old right edge inside the bundle, read as a range"
    );
    // A sync with nothing new reads the checkpoint alone.
    let report = sync(&mut tracker, &published.store, &Unsigned).unwrap();
    assert_eq!((report.tiles, published.store.take().len()), (0, 1));
}

#[test]
fn a_new_mark_fetches_its_path_at_the_same_head_only() {
    let config = config(4, HashKind::Sha256);
    let all = leaves(4, 5_000);
    let mut published = Published::new(config);
    published.grow(&all);
    let mut tracker = Tracker::new(config, 3).unwrap();
    sync(&mut tracker, &published.store, &Unsigned).unwrap();
    published.store.take();
    tracker.mark(1_234).unwrap();
    let report = sync(&mut tracker, &published.store, &Unsigned).unwrap();
    assert!(report.tiles >= 1);
    let fetched = published.store.take();
    assert!(
        fetched
            .iter()
            .all(|(p, _)| p == "checkpoint" || p.starts_with("tile/"))
    );
    assert_eq!(
        tracker.witness(1_234).unwrap(),
        published.tree.at_size(5_000).unwrap().prove(1_234).unwrap()
    );
    // Held nodes, not tiles: the state is small.
    assert!(tracker.held_nodes() < 64, "{}", tracker.held_nodes());
}
