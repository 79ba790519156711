//! Bulk reads of a tile store's leaves for a mirror: whole bundles
//! (`bundle/{K}`, the leaves of one node of the bundle level) where the
//! store has them, byte ranges of them for shorter stretches, leaf tiles
//! elsewhere (past the last complete bundle, a store published before
//! bundles), several objects in flight at once, and a
//! thread that fetches the next chunks while the caller verifies and
//! adopts the current one. Nothing here is trusted: the mirror verifies
//! every leaf it is handed before it adopts it (`mirror.rs`).

use std::sync::Arc;
use std::sync::mpsc;

use cairn_core::Hash;

use crate::checkpoint::Checkpoint;
use crate::mirror::MirrorError;
use crate::store::TileSource;

/// Bundles (2 MiB each) asked for at once by default: with as many more
/// waiting for the verifier, at most 16 MiB of leaves are held ahead of
/// it, and a bundle's download (tens of milliseconds on a local network)
/// overlaps the verification and append of the ones before it.
/// `scripts/mirror_bench.sh` compares other values (`BULK=1 SWEEP=1`).
pub const DEFAULT_IN_FLIGHT: usize = 4;

/// Leaves `[from, to)` of one chunk, and the bundle they were cut from
/// (`None`: read from leaf tiles).
#[derive(Debug)]
pub(crate) struct Chunk {
    pub(crate) from: u64,
    pub(crate) to: u64,
    pub(crate) leaves: Result<Vec<Hash>, MirrorError>,
    pub(crate) bundle: Option<String>,
}

/// The chunks `[from, to)` is cut into: ends on multiples of `chunk`, and
/// `to`.
pub(crate) fn plan(from: u64, to: u64, chunk: u64) -> Vec<(u64, u64)> {
    let chunk = chunk.max(1);
    let mut out = Vec::new();
    let mut at = from;
    while at < to {
        let end = ((at / chunk + 1) * chunk).min(to);
        out.push((at, end));
        at = end;
    }
    out
}

/// Fetches `chunks` of the tree at `head` in order, `in_flight` bundles at
/// once, handing each to `emit` as soon as its batch is in; stops when
/// `emit` says so (returns `false`) or after the first chunk that failed.
/// Without `bundles` every chunk is read from the leaf tiles.
pub(crate) fn fetch_chunks(
    source: &dyn TileSource,
    head: &Checkpoint,
    chunks: &[(u64, u64)],
    in_flight: usize,
    bundles: bool,
    mut emit: impl FnMut(Chunk) -> bool,
) {
    let layout = head.layout();
    let per_bundle = layout.bundle_leaves();
    let full_bundles = head.head.size / per_bundle;
    // The bundle holding a chunk, if the chunk lies in one full bundle and
    // is at least an eighth of it (for fewer leaves, the bundle's 2 MiB
    // cost more than the tiles' round trips save).
    let bundle_of = |&(from, to): &(u64, u64)| {
        let k = from / per_bundle;
        (bundles && k < full_bundles && (to - 1) / per_bundle == k && (to - from) * 8 >= per_bundle)
            .then_some(k)
    };
    for batch in chunks.chunks(in_flight.max(1)) {
        let wanted: Vec<(usize, u64)> = batch
            .iter()
            .enumerate()
            .filter_map(|(i, c)| bundle_of(c).map(|k| (i, k)))
            .collect();
        let paths: Vec<String> = wanted.iter().map(|&(_, k)| layout.bundle_path(k)).collect();
        let mut answers: Vec<Option<_>> = source
            .get_many(&paths, per_bundle * 32)
            .into_iter()
            .map(Some)
            .collect();
        for (i, &(from, to)) in batch.iter().enumerate() {
            let answer = wanted
                .iter()
                .position(|&(j, _)| j == i)
                .map(|at| (wanted[at].1, &paths[at], answers[at].take().expect("once")));
            let chunk = match answer {
                Some((k, path, Ok(bytes))) => {
                    let object = format!("{}/{path}", source.location());
                    Chunk {
                        from,
                        to,
                        leaves: cut_bundle(&object, &bytes, k * per_bundle, per_bundle, from, to),
                        bundle: Some(object),
                    }
                }
                // A store published before bundles: the leaf tiles.
                Some((_, _, Err(e))) if e.missing => Chunk {
                    from,
                    to,
                    leaves: tile_leaves(source, head, from, to),
                    bundle: None,
                },
                Some((_, _, Err(e))) => Chunk {
                    from,
                    to,
                    leaves: Err(e.into()),
                    bundle: None,
                },
                None => Chunk {
                    from,
                    to,
                    leaves: tile_leaves(source, head, from, to),
                    bundle: None,
                },
            };
            let failed = chunk.leaves.is_err();
            if !emit(chunk) || failed {
                return;
            }
        }
    }
}

/// Leaves `[from, to)` of the bundle at `object` whose first leaf is
/// `first`, refused naming it unless it has exactly `leaves` leaves.
fn cut_bundle(
    object: &str,
    bytes: &[u8],
    first: u64,
    leaves: u64,
    from: u64,
    to: u64,
) -> Result<Vec<Hash>, MirrorError> {
    if bytes.len() as u64 != leaves * 32 {
        return Err(MirrorError::Refused {
            object: object.to_owned(),
            reason: format!(
                "{} bytes, a bundle of {leaves} leaves has {}",
                bytes.len(),
                leaves * 32
            ),
        });
    }
    let start = ((from - first) * 32) as usize;
    let end = ((to - first) * 32) as usize;
    Ok(bytes[start..end]
        .chunks_exact(32)
        .map(|leaf| -> Hash { leaf.try_into().expect("32 bytes") })
        .collect())
}

/// Leaves `[from, to)` of the tree at `head` without reading whole
/// bundles: inside a complete bundle, one ranged read of the bundle per
/// bundle the stretch touches (the bundle is the leaf level there,
/// docs/spec.md 8.1), from the leaf tiles where that bundle is missing (a
/// store published before bundles were the leaf level) and past the last
/// complete bundle.
pub(crate) fn tile_leaves(
    source: &dyn TileSource,
    head: &Checkpoint,
    from: u64,
    to: u64,
) -> Result<Vec<Hash>, MirrorError> {
    let per_bundle = head.layout().bundle_leaves();
    let in_bundles = (head.head.size / per_bundle) * per_bundle;
    let mut out = Vec::with_capacity((to - from) as usize);
    let mut at = from;
    while at < to.min(in_bundles) {
        let k = at / per_bundle;
        let end = ((k + 1) * per_bundle).min(to);
        let path = head.layout().bundle_path(k);
        let offset = (at - k * per_bundle) * 32;
        match source.get_range(&path, offset, (end - at) * 32, per_bundle * 32) {
            Ok(bytes) => out.extend(bytes.as_chunks::<32>().0.iter().copied()),
            Err(e) if e.missing => out.extend(leaf_tile_leaves(source, head, at, end)?),
            Err(e) => {
                return Err(MirrorError::Refused {
                    object: format!("{}/{path}", source.location()),
                    reason: e.message,
                });
            }
        }
        at = end;
    }
    if at < to {
        out.extend(leaf_tile_leaves(source, head, at, to)?);
    }
    Ok(out)
}

/// Leaves `[from, to)` of the tree at `head` from its leaf tiles (64 tiles
/// asked for at once), each checked for length.
fn leaf_tile_leaves(
    source: &dyn TileSource,
    head: &Checkpoint,
    from: u64,
    to: u64,
) -> Result<Vec<Hash>, MirrorError> {
    let layout = head.layout();
    let width = layout.width();
    let mut tiles = Vec::new();
    let mut index = from / width;
    while index * width < to {
        let tile = layout
            .tile_of(head.head.size, 0, index * width)
            .ok_or_else(|| MirrorError::Refused {
                object: source.location(),
                reason: format!("leaf {} is past its size", index * width),
            })?;
        tiles.push(tile);
        index += 1;
    }
    let paths: Vec<String> = tiles.iter().map(|t| layout.path(*t)).collect();
    let mut out = Vec::with_capacity((to - from) as usize);
    for (batch_tiles, batch_paths) in tiles.chunks(64).zip(paths.chunks(64)) {
        let answers = source.get_many(batch_paths, crate::MAX_TILE_NODES * 32);
        for ((tile, path), answer) in batch_tiles.iter().zip(batch_paths).zip(answers) {
            let bytes = answer?;
            let want = tile.width as usize * 32;
            if bytes.len() != want {
                return Err(MirrorError::Refused {
                    object: format!("{}/{path}", source.location()),
                    reason: format!(
                        "{} bytes, a tile of {} leaves has {want}",
                        bytes.len(),
                        tile.width
                    ),
                });
            }
            let first = tile.index * width;
            for (i, leaf) in bytes.chunks_exact(32).enumerate() {
                let position = first + i as u64;
                if (from..to).contains(&position) {
                    out.push(leaf.try_into().expect("32 bytes"));
                }
            }
        }
    }
    Ok(out)
}

/// Chunks fetched ahead by a thread of their own, in order. At most
/// `in_flight` chunks wait here besides the batch in flight; dropping it
/// stops the thread after its current batch.
#[derive(Debug)]
pub(crate) struct Ahead {
    pub(crate) head: Checkpoint,
    receiver: mpsc::Receiver<Chunk>,
}

impl Ahead {
    /// Starts fetching `chunks` of `head` from `source`.
    pub(crate) fn start(
        source: Arc<dyn TileSource>,
        head: &Checkpoint,
        chunks: Vec<(u64, u64)>,
        in_flight: usize,
        bundles: bool,
    ) -> Ahead {
        let (sender, receiver) = mpsc::sync_channel(in_flight.max(1));
        let theirs = *head;
        std::thread::Builder::new()
            .name("cairn-mirror-fetch".into())
            .spawn(move || {
                fetch_chunks(&*source, &theirs, &chunks, in_flight, bundles, |chunk| {
                    sender.send(chunk).is_ok()
                });
            })
            .map_or_else(
                // No thread: the caller fetches each chunk itself.
                |_| Ahead {
                    head: *head,
                    receiver: mpsc::sync_channel(0).1,
                },
                |_| Ahead {
                    head: *head,
                    receiver,
                },
            )
    }

    /// The next chunk if it is `[from, to)`; `None` when the thread stopped
    /// or fetched another one (the caller then fetches it itself).
    pub(crate) fn take(&mut self, from: u64, to: u64) -> Option<Chunk> {
        let chunk = self.receiver.recv().ok()?;
        (chunk.from == from && chunk.to == to).then_some(chunk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_end_on_multiples_after_any_start() {
        assert_eq!(plan(0, 10, 4), vec![(0, 4), (4, 8), (8, 10)]);
        assert_eq!(plan(5, 13, 4), vec![(5, 8), (8, 12), (12, 13)]);
        assert_eq!(plan(3, 3, 4), vec![]);
        assert_eq!(plan(0, 3, 0), vec![(0, 1), (1, 2), (2, 3)]);
    }
}
