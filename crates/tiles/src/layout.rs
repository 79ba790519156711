//! Which object holds which nodes (docs/spec.md, "Tiles").
//!
//! A tile of tile-level `t` holds up to `W = N^h` consecutive *final* nodes
//! of tree level `h * t` (a node is final when its subtree is complete: it
//! never changes as the tree grows). `h` is the largest height with
//! `N^h <= 256`, so a tile is at most 8 KiB and a proof needs one tile per
//! `h` levels: the levels between are recomputed from the tile below.
//! Full tiles and partial ones (named by how many final nodes they hold)
//! are both immutable.
//!
//! Bundles are the leaf level in large objects: `B` leaves (a power of `N`
//! at most 65,536). Inside a complete bundle's stretch the bundle IS the
//! leaf level: no leaf tile is written there, and a reader reads leaf tile
//! `j` as a byte range of bundle `j / (B / W)` ([`Layout::in_bundle`]),
//! from the checkpoint's size alone, so the store holds each leaf once.

use cairn_core::{Arity, HashKind};

/// Most nodes a tile holds, for every arity.
pub const MAX_TILE_NODES: u64 = 256;

/// Most leaves a bundle holds (2 MiB of leaves), for every arity.
pub const MAX_BUNDLE_LEAVES: u64 = 1 << 16;

/// The tile geometry of a tree of one arity and hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The tree's arity.
    pub arity: Arity,
    /// The tree's hash.
    pub hash: HashKind,
}

/// One tile object: tile-level, index, and how many nodes it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TileId {
    /// The tile-level: the tile holds nodes of tree level `height * level`.
    pub level: u32,
    /// The tile's index within its tile-level.
    pub index: u64,
    /// Nodes in the tile: the width when full, fewer when partial.
    pub width: u64,
}

/// Where the bytes of a leaf tile lie in the bundle that holds it (a leaf
/// tile inside a complete bundle's stretch has no object of its own).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BundleRange {
    /// The bundle's index.
    pub bundle: u64,
    /// The bundle's path (`bundle/{K}`).
    pub path: String,
    /// The tile's first byte in the bundle.
    pub offset: u64,
    /// The tile's bytes (`32 W`).
    pub len: u64,
    /// The bundle's whole length (`32 B`): a bundle of any other length is
    /// refused.
    pub bundle_bytes: u64,
}

impl BundleRange {
    /// `bundle/{K}[a..b]`: how messages and fetch lists name the range.
    pub fn describe(&self) -> String {
        format!("{}[{}..{}]", self.path, self.offset, self.offset + self.len)
    }
}

impl Layout {
    /// The layout of a tree of `arity` under `hash`.
    pub const fn new(arity: Arity, hash: HashKind) -> Layout {
        Layout { arity, hash }
    }

    /// Tree levels per tile-level: the largest `h` with `N^h <= 256`.
    pub fn height(&self) -> u32 {
        let n = self.arity.as_u64();
        let mut height = 1;
        while n.pow(height + 1) <= MAX_TILE_NODES {
            height += 1;
        }
        height
    }

    /// Nodes in a full tile: `N^height`.
    pub fn width(&self) -> u64 {
        self.arity.as_u64().pow(self.height())
    }

    /// Final nodes of tree `level` in the tree of `size` leaves:
    /// `floor(size / N^level)`.
    pub fn final_nodes(&self, size: u64, level: u32) -> u64 {
        match self.arity.as_u64().checked_pow(level) {
            Some(span) => size / span,
            None => 0,
        }
    }

    /// The tile of tile-level `level` holding node `node` of tree level
    /// `height * level`, in the tree of `size` leaves (`None` if that node
    /// is not final).
    pub fn tile_of(&self, size: u64, level: u32, node: u64) -> Option<TileId> {
        let finals = self.final_nodes(size, self.height() * level);
        if node >= finals {
            return None;
        }
        let width = self.width();
        let index = node / width;
        Some(TileId {
            level,
            index,
            width: (finals - index * width).min(width),
        })
    }

    /// Every tile object of the tree of `size` leaves, by tile-level.
    pub fn tiles(&self, size: u64) -> Vec<TileId> {
        self.tiles_since(0, size)
    }

    /// The tile objects of the tree of `size` leaves that the tree of
    /// `from` leaves did not have (what a publisher uploads when it moves
    /// from `from` to `size`): every full tile that became full since, and
    /// the partial tiles of `size`.
    pub fn tiles_since(&self, from: u64, size: u64) -> Vec<TileId> {
        let width = self.width();
        let mut out = Vec::new();
        let mut level = 0;
        loop {
            let tree_level = self.height() * level;
            let finals = self.final_nodes(size, tree_level);
            if finals == 0 {
                break;
            }
            let before = self.final_nodes(from.min(size), tree_level);
            // The first tile that changed: the one holding the first new
            // final node (full tiles before it were already published).
            let first = before / width;
            let last = (finals - 1) / width;
            for index in first..=last {
                let id = TileId {
                    level,
                    index,
                    width: (finals - index * width).min(width),
                };
                let had = (before - (index * width).min(before)).min(width);
                if id.width != had {
                    out.push(id);
                }
            }
            level += 1;
        }
        out
    }

    /// Leaves in a bundle: the largest power of `N` at most
    /// [`MAX_BUNDLE_LEAVES`] (65,536 for N = 2, 4, 16; 59,049 for N = 3),
    /// a multiple of the tile width.
    pub fn bundle_leaves(&self) -> u64 {
        let n = self.arity.as_u64();
        let mut leaves = n;
        while leaves * n <= MAX_BUNDLE_LEAVES {
            leaves *= n;
        }
        leaves
    }

    /// Tree level of the node a bundle's leaves hash to: `log_N` of
    /// [`Layout::bundle_leaves`].
    pub fn bundle_level(&self) -> u32 {
        self.bundle_leaves().ilog(self.arity.as_u64())
    }

    /// The full bundles of the tree of `size` leaves that the tree of
    /// `from` leaves did not have: indexes `k` with
    /// `from < (k + 1) B <= size`.
    pub fn bundles_since(&self, from: u64, size: u64) -> std::ops::Range<u64> {
        let leaves = self.bundle_leaves();
        (from / leaves).min(size / leaves)..size / leaves
    }

    /// Where leaf tile `tile` lies in a bundle, when it is in the stretch
    /// of a complete bundle of the tree of `size` leaves (`k < floor(S /
    /// B)`): leaf tile `j` is bytes `[(j mod B/W) 32 W, +32 W)` of bundle
    /// `j / (B/W)`. `None` for a tile of another level and a leaf tile past
    /// `floor(S / B) B` (the right edge keeps its leaf tiles).
    pub fn in_bundle(&self, size: u64, tile: TileId) -> Option<BundleRange> {
        let (leaves, width) = (self.bundle_leaves(), self.width());
        let per_bundle = leaves / width;
        let bundle = tile.index / per_bundle;
        (tile.level == 0 && bundle < size / leaves).then(|| BundleRange {
            bundle,
            path: self.bundle_path(bundle),
            offset: (tile.index % per_bundle) * width * 32,
            len: width * 32,
            bundle_bytes: leaves * 32,
        })
    }

    /// The tiles of [`Layout::tiles_since`] that are objects of their own
    /// in the tree of `size` leaves: all but the leaf tiles inside complete
    /// bundles (their bytes are the bundles').
    pub fn tile_objects_since(&self, from: u64, size: u64) -> Vec<TileId> {
        let mut tiles = self.tiles_since(from, size);
        tiles.retain(|&tile| self.in_bundle(size, tile).is_none());
        tiles
    }

    /// The object path of bundle `index` (leaves `[index B, (index + 1) B)`):
    /// `bundle/{index}`, the index in groups of three digits as a tile's.
    pub fn bundle_path(&self, index: u64) -> String {
        format!("bundle/{}", index_path(index))
    }

    /// The object path of `tile`: `tile/{level}/{index}` for a full tile,
    /// `tile/{level}/{index}.p/{width}` for a partial one; the index is
    /// written in groups of three digits, all but the last prefixed by `x`
    /// (`1234067` is `x001/x234/067`), so no directory holds more than 1,000
    /// entries.
    pub fn path(&self, tile: TileId) -> String {
        let mut out = format!("tile/{}/{}", tile.level, index_path(tile.index));
        if tile.width < self.width() {
            out.push_str(&format!(".p/{}", tile.width));
        }
        out
    }
}

/// `1234067` as `x001/x234/067`.
fn index_path(index: u64) -> String {
    let digits = index.to_string();
    let pad = (3 - digits.len() % 3) % 3;
    let padded = format!("{}{digits}", "0".repeat(pad));
    let groups: Vec<&str> = padded
        .as_bytes()
        .chunks(3)
        .map(|c| std::str::from_utf8(c).expect("ascii digits"))
        .collect();
    let (last, rest) = groups.split_last().expect("at least one group");
    let mut out = String::new();
    for group in rest {
        out.push('x');
        out.push_str(group);
        out.push('/');
    }
    out.push_str(last);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(n: u64) -> Layout {
        Layout::new(Arity::new(n).unwrap(), HashKind::Blake3)
    }

    #[test]
    fn heights_and_widths_fit_a_256_node_tile() {
        let expect = [
            (2, 8, 256),
            (3, 5, 243),
            (4, 4, 256),
            (5, 3, 125),
            (6, 3, 216),
            (7, 2, 49),
            (8, 2, 64),
            (15, 2, 225),
            (16, 2, 256),
        ];
        for (n, h, w) in expect {
            assert_eq!((layout(n).height(), layout(n).width()), (h, w), "arity {n}");
        }
    }

    #[test]
    fn bundles_are_the_largest_power_of_n_within_65536_leaves() {
        let expect = [
            (2, 65_536, 16),
            (3, 59_049, 10),
            (4, 65_536, 8),
            (5, 15_625, 6),
            (7, 16_807, 5),
            (16, 65_536, 4),
        ];
        for (n, leaves, level) in expect {
            let l = layout(n);
            assert_eq!(
                (l.bundle_leaves(), l.bundle_level()),
                (leaves, level),
                "arity {n}"
            );
            assert_eq!(l.bundle_leaves() % l.width(), 0, "arity {n}");
        }
        let l = layout(2);
        assert_eq!(l.bundles_since(0, 65_535), 0..0);
        assert_eq!(l.bundles_since(0, 65_536), 0..1);
        assert_eq!(l.bundles_since(65_535, 3 * 65_536 + 1), 0..3);
        assert_eq!(l.bundles_since(65_536, 3 * 65_536), 1..3);
        assert_eq!(l.bundles_since(200_000, 200_001), 3..3);
        assert_eq!(l.bundle_path(1_234_067), "bundle/x001/x234/067");
    }

    #[test]
    fn leaf_tiles_of_complete_bundles_are_bundle_ranges() {
        for n in [2, 3, 4, 5, 7, 16] {
            let l = layout(n);
            let (b, w) = (l.bundle_leaves(), l.width());
            let size = 2 * b + w + 3;
            let tiles = l.tiles(size);
            let objects = l.tile_objects_since(0, size);
            for tile in &tiles {
                let range = l.in_bundle(size, *tile);
                // A naive reading of the geometry: the leaves of the tile
                // are the leaves of its bundle at the same offsets.
                let first_leaf = tile.index * w;
                let inside = tile.level == 0 && first_leaf + w <= (size / b) * b;
                assert_eq!(range.is_some(), inside, "arity {n} {tile:?}");
                assert_eq!(objects.contains(tile), !inside, "arity {n} {tile:?}");
                if let Some(range) = range {
                    assert_eq!(range.bundle, first_leaf / b);
                    assert_eq!(range.offset, (first_leaf - range.bundle * b) * 32);
                    assert_eq!((range.len, range.bundle_bytes), (w * 32, b * 32));
                    assert_eq!(range.path, l.bundle_path(range.bundle));
                }
            }
            // The leaf tiles of the tail stay, the partial one included.
            let tail: Vec<_> = objects.iter().filter(|t| t.level == 0).collect();
            assert_eq!(tail.len(), 2, "arity {n}");
            assert_eq!(tail[1].width, 3, "arity {n}");
        }
        // A resumed publication: tiles of a stretch whose bundle completed
        // since are not written again.
        let l = layout(4);
        let b = l.bundle_leaves();
        assert!(
            l.tile_objects_since(b - 10, b + 10)
                .iter()
                .all(|t| t.level != 0 || t.index >= b / 256)
        );
        assert_eq!(
            l.in_bundle(
                b - 1,
                TileId {
                    level: 0,
                    index: 0,
                    width: 256
                }
            ),
            None
        );
    }

    #[test]
    fn paths_group_the_index_by_three_digits() {
        let l = layout(4);
        let tile = |level, index, width| {
            l.path(TileId {
                level,
                index,
                width,
            })
        };
        assert_eq!(tile(0, 0, 256), "tile/0/000");
        assert_eq!(tile(1, 1234067, 256), "tile/1/x001/x234/067");
        assert_eq!(tile(2, 5, 17), "tile/2/005.p/17");
        assert_eq!(tile(0, 1000, 256), "tile/0/x001/000");
    }

    #[test]
    fn tiles_since_lists_exactly_what_changed() {
        let l = layout(2);
        for (from, to) in [
            (0, 1),
            (0, 256),
            (255, 257),
            (256, 512),
            (1000, 70_000),
            (70_000, 70_000),
        ] {
            let all_to: std::collections::BTreeSet<TileId> = l.tiles(to).into_iter().collect();
            let all_from: std::collections::BTreeSet<TileId> = l.tiles(from).into_iter().collect();
            let want: Vec<TileId> = all_to.difference(&all_from).copied().collect();
            let mut got = l.tiles_since(from, to);
            got.sort();
            assert_eq!(got, want, "{from} -> {to}");
        }
        // 70,000 leaves at N = 2: 273 full leaf tiles and one of 112; one
        // tile-level up, 273 final nodes of level 8: a full tile and 17.
        let tiles = l.tiles(70_000);
        assert_eq!(tiles.iter().filter(|t| t.level == 0).count(), 274);
        assert!(tiles.contains(&TileId {
            level: 0,
            index: 273,
            width: 112
        }));
        assert!(tiles.contains(&TileId {
            level: 1,
            index: 1,
            width: 17
        }));
    }
}
