//! Power losses on a [`SimFs`] as the model draws them: when one happens
//! ([`CrashPoint`]), what it leaves ([`CrashKind`], resolved to a
//! [`CrashMode`] by [`crash_state`]) and the proptest strategies that
//! choose them.

use crate::sim::{CrashMode, PAGE, Replay, SECTOR, SimFs};
use proptest::prelude::*;

/// When a power loss happens.
#[derive(Clone, Copy, Debug)]
pub enum CrashPoint {
    /// Now: the store is idle.
    Now,
    /// At a boundary inside the last operation that touched the file
    /// system (a flush, checkpoint, close, drop or open; chosen by the value).
    InLastOp(u32),
    /// At any boundary since the store existed on this file system.
    Anywhere(u32),
}

/// Which [`CrashMode`]; a tear is resolved against the last write at the
/// chosen boundary (falling back to `DropUnsynced` if it was synced).
#[derive(Clone, Copy, Debug)]
pub enum CrashKind {
    DropUnsynced,
    KeepUnsynced,
    RandomSectors,
    UndoDirOps,
    GrowthLost,
    Tear { page: bool, keep: u16 },
}

pub fn crash_kind() -> impl Strategy<Value = CrashKind> {
    prop_oneof![
        3 => Just(CrashKind::DropUnsynced),
        1 => Just(CrashKind::KeepUnsynced),
        2 => Just(CrashKind::RandomSectors),
        1 => Just(CrashKind::UndoDirOps),
        1 => Just(CrashKind::GrowthLost),
        3 => (any::<bool>(), any::<u16>()).prop_map(|(page, keep)| CrashKind::Tear { page, keep }),
    ]
}

/// A crash point, inside the last operation with weight `in_last_op`
/// (against 1 for now and 2 for anywhere).
pub fn crash_point(in_last_op: u32) -> impl Strategy<Value = CrashPoint> {
    prop_oneof![
        1 => Just(CrashPoint::Now),
        in_last_op => any::<u32>().prop_map(CrashPoint::InLastOp),
        2 => any::<u32>().prop_map(CrashPoint::Anywhere),
    ]
}

/// Where the file system's trace stands: `now` operations so far, `mark`
/// where the last operation began and `floor` where the store was created
/// on this file system.
#[derive(Clone, Copy, Debug)]
pub struct Trace {
    pub now: usize,
    pub mark: usize,
    pub floor: usize,
}

/// The boundary `at` and `kind` choose, the replay of `fs` seeked to it,
/// and the [`CrashMode`] to build the image with.
pub fn crash_state(
    fs: &SimFs,
    trace: Trace,
    kind: CrashKind,
    at: CrashPoint,
) -> (usize, Replay, CrashMode) {
    let Trace { now, mark, floor } = trace;
    let (from, pick) = match at {
        CrashPoint::Now => (now, 0),
        CrashPoint::InLastOp(pick) => (mark.clamp(floor, now), pick),
        CrashPoint::Anywhere(pick) => (floor, pick),
    };
    // A tear needs a write that is not synced yet and spans a sector
    // boundary: prefer boundaries right after such a write.
    let after_writes: Vec<usize> = match kind {
        CrashKind::Tear { .. } => (from.max(1)..=now)
            .filter(|&k| sector_cuts(&fs.describe_op(k - 1)) > 0)
            .collect(),
        _ => Vec::new(),
    };
    let k = if !after_writes.is_empty() {
        after_writes[pick as usize % after_writes.len()]
    } else {
        from + pick as usize % (now - from + 1)
    };
    let mut replay = fs.replay();
    replay.seek(k);
    let mode = match kind {
        CrashKind::DropUnsynced => CrashMode::DropUnsynced,
        CrashKind::KeepUnsynced => CrashMode::KeepUnsynced,
        CrashKind::RandomSectors => CrashMode::RandomSectors,
        CrashKind::UndoDirOps => CrashMode::UndoDirOps,
        CrashKind::GrowthLost => CrashMode::GrowthLost,
        CrashKind::Tear { page, keep } => {
            let order = if page { [PAGE, SECTOR] } else { [SECTOR, PAGE] };
            order
                .into_iter()
                .find_map(|boundary| {
                    let points = replay.tear_points(boundary);
                    (points > 0).then(|| CrashMode::TearLastWrite {
                        boundary,
                        keep: keep as usize % points,
                    })
                })
                .unwrap_or(CrashMode::DropUnsynced)
        }
    };
    (k, replay, mode)
}

/// The sector-aligned offsets inside a write described as
/// `write PATH [from, to)` (0 for any other operation).
fn sector_cuts(op: &str) -> u64 {
    let range = op
        .strip_prefix("write ")
        .and_then(|rest| rest.rsplit_once(" ["))
        .and_then(|(_, range)| range.strip_suffix(')'))
        .and_then(|range| range.split_once(", "));
    let Some((from, to)) = range else {
        return 0;
    };
    let (Ok(from), Ok(to)) = (from.parse::<u64>(), to.parse::<u64>()) else {
        return 0;
    };
    let sector = SECTOR as u64;
    to.div_ceil(sector).saturating_sub(from.div_ceil(sector))
}

pub fn mode_name(mode: &CrashMode) -> &'static str {
    match mode {
        CrashMode::DropUnsynced => "DropUnsynced",
        CrashMode::KeepUnsynced => "KeepUnsynced",
        CrashMode::TearLastWrite { .. } => "TearLastWrite",
        CrashMode::RandomSectors => "RandomSectors",
        CrashMode::UndoDirOps => "UndoDirOps",
        CrashMode::GrowthLost => "GrowthLost",
    }
}
