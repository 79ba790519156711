//! The native driver: a sync whose tiles come from a tile store (a
//! directory, S3-compatible storage, HTTP(S)).

use cairn_tiles::{CHECKPOINT, CHECKPOINT_MAX_BYTES, CheckpointSignature, TileSource};

use crate::error::WalletError;
use crate::tracker::{SyncReport, Tracker};

/// Syncs `tracker` to the checkpoint of `source`, checked with
/// `signature`: fetches the checkpoint, then every tile the sync asks for
/// in one batch, and adopts the head if everything verifies (otherwise
/// the tracker is unchanged). The report counts the tiles; the checkpoint
/// is one more request.
pub fn sync(
    tracker: &mut Tracker,
    source: &dyn TileSource,
    signature: &dyn CheckpointSignature,
) -> Result<SyncReport, WalletError> {
    let object = source.get(CHECKPOINT, CHECKPOINT_MAX_BYTES)?;
    let mut plan = tracker.plan(&object, signature)?;
    let wanted = plan.wanted();
    let paths: Vec<String> = wanted.iter().map(|t| t.path.clone()).collect();
    let max = wanted.iter().map(|t| t.max_bytes).max().unwrap_or(0);
    for (path, bytes) in paths.iter().zip(source.get_many(&paths, max)) {
        plan.feed(path, &bytes?)?;
    }
    tracker.finish(plan)
}
