//! The native driver: a sync whose tiles come from a tile store (a
//! directory, S3-compatible storage, HTTP(S)).

use std::collections::BTreeSet;

use cairn_tiles::{
    CHECKPOINT, CHECKPOINT_MAX_BYTES, CheckpointSignature, TileSource, read_tile_object,
};

use crate::error::WalletError;
use crate::tracker::{SyncReport, Tracker};

/// Syncs `tracker` to the checkpoint of `source`, checked with
/// `signature`: fetches the checkpoint, then every tile the sync asks for
/// (the tiles of their own in one batch, a leaf tile inside a complete
/// bundle as its range of the bundle), and adopts the head if everything verifies (otherwise
/// the tracker is unchanged). The report counts the tiles; the checkpoint
/// is one more request.
pub fn sync(
    tracker: &mut Tracker,
    source: &dyn TileSource,
    signature: &dyn CheckpointSignature,
) -> Result<SyncReport, WalletError> {
    let object = source.get(CHECKPOINT, CHECKPOINT_MAX_BYTES)?;
    let mut plan = tracker.plan(&object, signature)?;
    let (ranged, whole): (Vec<_>, Vec<_>) =
        plan.wanted().into_iter().partition(|t| t.bundle.is_some());
    let paths: Vec<String> = whole.iter().map(|t| t.path.clone()).collect();
    let max = whole.iter().map(|t| t.max_bytes).max().unwrap_or(0);
    for (path, bytes) in paths.iter().zip(source.get_many(&paths, max)) {
        plan.feed(path, &bytes?)?;
    }
    let mut no_bundle = BTreeSet::new();
    for tile in ranged {
        let (bytes, _) = read_tile_object(
            source,
            &tile.path,
            tile.max_bytes,
            tile.bundle.as_ref(),
            &mut no_bundle,
        )?;
        plan.feed(&tile.path, &bytes)?;
    }
    tracker.finish(plan)
}
