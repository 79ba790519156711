//! Salvage: what a store that no longer opens still holds, as far as its
//! own checksums vouch for it, for a repair that rebuilds the store from
//! it and a replica (`cairn repair`). It reads only, holds the writer's
//! locks while its caller rebuilds, and trusts nothing a checksum does not
//! cover: a leaf is salvaged only inside a whole page whose sum holds (below
//! the checkpoint) or inside a frame whose CRCs hold (after it); a range
//! no checksum vouches for is reported as such, never passed off as a
//! leaf. Where reading stops short of what the store acknowledged, it says
//! where and why.
//!
//! Without a readable checkpoint, the frames are read from the start of
//! the log, and the leaves they hold count as the store's current ones
//! ([`Salvage::current`]) only up to the last frame a tail record names,
//! if that chain of frames reaches it: a rollback's leftovers are never on
//! it. Otherwise a repair takes none of them past what its replica
//! vouches for.

use std::ops::Range;
use std::path::{Path, PathBuf};

use cairn_core::cast::to_usize;
use cairn_core::{Hash, TreeConfig, TreeKind};

use crate::error::{Result, StoreError};
use crate::format::{
    self, CheckpointMeta, FRAME_LEN, Frame, FrameRef, HEAD_RECORD_LEN, HEADER_LEN,
    HEADS_HEADER_LEN, HeadRecord, HeaderRecords, PAGE_NODES, SUMS_HEADER_LEN, StoreMeta,
};
use crate::fs::{Fs, FsFile, FsLock, OpenMode};
use crate::heads::TaggedHead;
use crate::layout::Layout;

/// Where salvage found damage: the file, the offset and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damage {
    /// The damaged file.
    pub path: PathBuf,
    /// Where in it.
    pub offset: u64,
    /// What is wrong.
    pub why: String,
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} at offset {}: {}",
            self.path.display(),
            self.offset,
            self.why
        )
    }
}

/// What a damaged store still holds (see the module documentation).
#[derive(Debug)]
pub struct Salvage {
    /// The store's meta: `cairn.meta`'s, or, when that file is damaged,
    /// the caller's tree with the rest from log file 0's header.
    pub meta: StoreMeta,
    /// Why `cairn.meta` was not used, if it was not.
    pub meta_damage: Option<Damage>,
    /// The checkpoint, if it decodes.
    pub checkpoint: Option<CheckpointMeta>,
    /// Why the checkpoint was not used, if it was not.
    pub checkpoint_damage: Option<Damage>,
    /// Leaves `0..leaves.len()` as read; those in `unverified` are bytes no
    /// checksum vouched for, not leaves.
    pub leaves: Vec<Hash>,
    /// Ranges of `leaves` no checksum vouched for, in order.
    pub unverified: Vec<Range<u64>>,
    /// Whether the leaves read are known to be the store's current ones
    /// (a checkpoint was read to say where the log resumes after the last
    /// rollback).
    pub current: bool,
    /// Leaves some durable record of the store says were acknowledged:
    /// the checkpoint's size, and the frames its log's tail records name.
    pub acknowledged: u64,
    /// Why reading leaves stopped, when it stopped short of
    /// `acknowledged`.
    pub stopped: Option<Damage>,
    /// Leaves below which a rollback was refused (the checkpoint's).
    pub finalized: u64,
    /// The block-tagged heads read, in order.
    pub heads: Vec<TaggedHead>,
    /// Head records some durable record says were written (the
    /// checkpoint's count, and the counts the log's tail records name).
    pub heads_acknowledged: u64,
    /// Why reading heads stopped, when it stopped short of
    /// `heads_acknowledged`.
    pub heads_stopped: Option<Damage>,
    _locks: [Box<dyn FsLock>; 2],
}

impl Salvage {
    /// Reads what the store in `dir` holds, holding its writer's locks
    /// (released when the `Salvage` is dropped). `tree` is used only if
    /// `cairn.meta` is damaged; without it, that is an error.
    pub fn read(fs: &dyn Fs, dir: &Path, tree: Option<TreeConfig>) -> Result<Salvage> {
        let locks = crate::store::take_writer_locks(fs, dir)?;
        let (meta, meta_damage) = read_meta(fs, dir, tree)?;
        let layout = Layout::new(dir, &meta);
        let (checkpoint, checkpoint_damage) = read_checkpoint(fs, &layout, &meta);
        let mut reader = Reader {
            fs,
            layout: &layout,
            meta: &meta,
            leaves: Vec::new(),
            unverified: Vec::new(),
            stopped: None,
        };
        let (resume, current): (_, bool) = match &checkpoint {
            Some(checkpoint) => {
                reader.below_checkpoint(checkpoint);
                (Some(checkpoint), true)
            }
            None => (None, false),
        };
        let claims = reader.tail_claims(resume);
        let reached = reader.frames(resume, claims.newest);
        // Without a checkpoint, the leaves read are the current ones up to
        // the last frame a tail record names, if the frames read from the
        // start of the log reach it: a rollback's leftovers are never on
        // that chain (the frames after a rollback start below the end of
        // the frames before them).
        let current = current
            || reached.is_some_and(|end| {
                reader.leaves.truncate(to_usize(end));
                reader.unverified.retain_mut(|range| {
                    range.end = range.end.min(end);
                    !range.is_empty()
                });
                true
            });
        let mut acknowledged = claims.leaves;
        let mut heads_acknowledged = claims.heads;
        let mut finalized = 0;
        if let Some(checkpoint) = &checkpoint {
            acknowledged = acknowledged.max(checkpoint.size);
            heads_acknowledged = heads_acknowledged.max(checkpoint.heads);
            finalized = checkpoint.finalized;
        }
        let (heads, heads_stopped) = read_heads(fs, &layout, &meta, checkpoint.as_ref());
        let heads_stopped = heads_stopped.filter(|_| (heads.len() as u64) < heads_acknowledged);
        let stopped = reader
            .stopped
            .filter(|_| (reader.leaves.len() as u64) < acknowledged);
        Ok(Salvage {
            meta,
            meta_damage,
            checkpoint,
            checkpoint_damage,
            leaves: reader.leaves,
            unverified: reader.unverified,
            current,
            acknowledged,
            stopped,
            finalized,
            heads,
            heads_acknowledged,
            heads_stopped,
            _locks: locks,
        })
    }

    /// The first leaf at or after `from` no checksum vouched for (or the
    /// number of leaves read, if none).
    pub fn verified_until(&self, from: u64) -> u64 {
        self.unverified
            .iter()
            .find(|range| range.end > from)
            .map_or(self.leaves.len() as u64, |range| range.start.max(from))
    }
}

/// `cairn.meta`, or the caller's tree with log file 0's header.
fn read_meta(
    fs: &dyn Fs,
    dir: &Path,
    tree: Option<TreeConfig>,
) -> Result<(StoreMeta, Option<Damage>)> {
    let path = dir.join(Layout::META);
    let damage = match read_all(fs, &path) {
        Ok(bytes) => match StoreMeta::decode(&bytes) {
            Ok(meta) => return Ok((meta, None)),
            Err(e) => Damage {
                path: path.clone(),
                offset: 0,
                why: e.to_string(),
            },
        },
        Err(e) => Damage {
            path: path.clone(),
            offset: 0,
            why: e.to_string(),
        },
    };
    let Some(tree) = tree else {
        return Err(StoreError::corrupt(path, 0, damage.why));
    };
    // Log file 0 exists from creation on; its header names the store id
    // and the leaves per file, and the arity and hash to check `tree`.
    let log0 = dir.join(Layout::LOG_DIR).join(format::log_name(0));
    let mut header = [0u8; to_usize(HEADER_LEN)];
    let file = fs
        .open(&log0, OpenMode::ReadOnly)
        .map_err(|e| StoreError::io("open", &log0, e))?;
    file.read_exact_at(&mut header, 0)
        .map_err(|e| StoreError::io("read", &log0, e))?;
    let per_file = u64::from_le_bytes(header[40..48].try_into().expect("8 bytes"));
    let log_shift = per_file.trailing_zeros();
    if !per_file.is_power_of_two() || !(10..=30).contains(&log_shift) {
        return Err(StoreError::corrupt(
            log0,
            40,
            format!("{per_file} leaves per log file, want a power of two 2^10..=2^30"),
        ));
    }
    let meta = StoreMeta {
        tree,
        log_shift: u8::try_from(log_shift).expect("checked to be 10..=30"),
        store_id: u64::from_le_bytes(header[16..24].try_into().expect("8 bytes")),
        flags: 0,
        // A damaged meta of a mutable tree salvages as its change log.
        mutable: None,
    };
    format::check_log_header(&meta, 0, &header).map_err(|e| {
        StoreError::corrupt(
            &log0,
            0,
            format!("its header does not match the tree given for the damaged cairn.meta: {e}"),
        )
    })?;
    Ok((meta, Some(damage)))
}

fn read_checkpoint(
    fs: &dyn Fs,
    layout: &Layout,
    meta: &StoreMeta,
) -> (Option<CheckpointMeta>, Option<Damage>) {
    let path = layout.checkpoint();
    let damage = |why: String| Damage {
        path: path.clone(),
        offset: 0,
        why,
    };
    match read_all(fs, &path) {
        Ok(bytes) => match CheckpointMeta::decode(&bytes, meta.store_id) {
            Ok(checkpoint) if checkpoint.integrity.is_some() => (Some(checkpoint), None),
            Ok(_) => (
                None,
                Some(damage("a checkpoint of format 1, without sums".to_owned())),
            ),
            Err(e) => (None, Some(damage(e.to_string()))),
        },
        Err(e) => (None, Some(damage(e.to_string()))),
    }
}

fn read_all(fs: &dyn Fs, path: &Path) -> std::io::Result<Vec<u8>> {
    let file = fs.open(path, OpenMode::ReadOnly)?;
    let mut bytes = vec![0u8; usize::try_from(file.len()?).unwrap_or(usize::MAX)];
    file.read_exact_at(&mut bytes, 0)?;
    Ok(bytes)
}

/// What the log's tail records claim was durable.
struct Claims {
    leaves: u64,
    heads: u64,
    /// The newest frame a tail record names.
    newest: Option<FrameRef>,
}

struct Reader<'a> {
    fs: &'a dyn Fs,
    layout: &'a Layout,
    meta: &'a StoreMeta,
    leaves: Vec<Hash>,
    unverified: Vec<Range<u64>>,
    stopped: Option<Damage>,
}

impl Reader<'_> {
    fn per_file(&self) -> u64 {
        self.meta.log_file_leaves()
    }

    fn open_log(&self, number: u64) -> std::result::Result<Box<dyn FsFile>, Damage> {
        let path = self.layout.log_file(number);
        let damage = |offset, why: String| Damage {
            path: path.clone(),
            offset,
            why,
        };
        let file = self
            .fs
            .open(&path, OpenMode::ReadOnly)
            .map_err(|e| damage(0, e.to_string()))?;
        let mut header = [0u8; to_usize(HEADER_LEN)];
        file.read_exact_at(&mut header, 0)
            .map_err(|e| damage(0, e.to_string()))?;
        format::check_log_header(self.meta, number, &header)
            .map_err(|e| damage(0, format!("log header: {e}")))?;
        Ok(file)
    }

    /// Appends leaves `[from, to)` (all in log file `number`) as read.
    fn read_leaves(&mut self, file: &dyn FsFile, number: u64, to: u64) -> std::io::Result<()> {
        let from = self.leaves.len() as u64;
        let first = number * self.per_file();
        let mut bytes = vec![0u8; to_usize((to - from) * 32)];
        file.read_exact_at(&mut bytes, Layout::node_offset(from - first))?;
        self.leaves.extend(
            bytes
                .chunks_exact(32)
                .map(|c| <Hash>::try_from(c).expect("32 bytes")),
        );
        Ok(())
    }

    fn mark_unverified(&mut self, range: Range<u64>) {
        match self.unverified.last_mut() {
            Some(last) if last.end == range.start => last.end = range.end,
            _ => self.unverified.push(range),
        }
    }

    /// The leaves below the checkpoint, page by page against level 0's
    /// sums, the partial last page against the checkpoint's CRC and the
    /// last leaf against the checkpoint's copy of it.
    fn below_checkpoint(&mut self, checkpoint: &CheckpointMeta) {
        let size = checkpoint.size;
        if size == 0 {
            return;
        }
        let final_len = checkpoint.levels.first().map_or(0, |level| level.0);
        let sums = self.read_sums(final_len / PAGE_NODES);
        let per_file = self.per_file();
        let mut open: Option<(u64, Box<dyn FsFile>)> = None;
        while (self.leaves.len() as u64) < size {
            let from = self.leaves.len() as u64;
            let number = from / per_file;
            if open.as_ref().is_none_or(|(n, _)| *n != number) {
                match self.open_log(number) {
                    Ok(file) => open = Some((number, file)),
                    Err(damage) => {
                        // A whole file unreadable: its leaves are unknown.
                        let to = ((number + 1) * per_file).min(size);
                        self.leaves.resize(to_usize(to), [0; 32]);
                        self.mark_unverified(from..to);
                        self.stopped.get_or_insert(damage);
                        open = None;
                        continue;
                    }
                }
            }
            let (_, file) = open.as_ref().expect("opened above");
            let page = from / PAGE_NODES;
            let whole = page < final_len / PAGE_NODES;
            let to = if whole {
                from + PAGE_NODES
            } else if from < final_len {
                final_len
            } else {
                size
            };
            let path = self.layout.log_file(number);
            let offset = Layout::node_offset(from - number * per_file);
            if let Err(e) = self.read_leaves(&**file, number, to) {
                self.leaves.resize(to_usize(to), [0; 32]);
                self.mark_unverified(from..to);
                self.stopped.get_or_insert(Damage {
                    path,
                    offset,
                    why: e.to_string(),
                });
                continue;
            }
            let read = &self.leaves[to_usize(from)..to_usize(to)];
            let (holds, what) = if whole {
                let want = sums.get(to_usize(page)).copied().flatten();
                let got = crc32c::crc32c(read.as_flattened());
                (want == Some(got), format!("page {page}'s sum"))
            } else if from < final_len {
                let want = checkpoint
                    .integrity
                    .as_ref()
                    .and_then(|i| i.partial_pages.first().copied());
                let got = crc32c::crc32c(read.as_flattened());
                (
                    want == Some(got),
                    "the checkpoint's CRC of the last page".to_owned(),
                )
            } else {
                let want = checkpoint.levels.first().map(|level| level.1);
                (
                    want == read.first().copied(),
                    "the checkpoint's last leaf".to_owned(),
                )
            };
            if !holds {
                self.mark_unverified(from..to);
                self.stopped.get_or_insert(Damage {
                    path,
                    offset,
                    why: format!("leaves {from}..{to} do not match {what}"),
                });
            }
        }
    }

    /// Level 0's sums, `None` for each one that cannot be read.
    fn read_sums(&mut self, pages: u64) -> Vec<Option<u32>> {
        let path = self.layout.sums_file(0);
        let mut sums = vec![None; to_usize(pages)];
        let read = || -> std::result::Result<Vec<u8>, String> {
            let file = self
                .fs
                .open(&path, OpenMode::ReadOnly)
                .map_err(|e| e.to_string())?;
            let mut header = [0u8; to_usize(SUMS_HEADER_LEN)];
            file.read_exact_at(&mut header, 0)
                .map_err(|e| e.to_string())?;
            format::check_sums_header(self.meta, 0, &header).map_err(|e| e.to_string())?;
            let mut bytes = vec![0u8; to_usize(pages * 4)];
            file.read_exact_at(&mut bytes, SUMS_HEADER_LEN)
                .map_err(|e| e.to_string())?;
            Ok(bytes)
        };
        match read() {
            Ok(bytes) => {
                for (sum, b) in sums.iter_mut().zip(bytes.chunks_exact(4)) {
                    *sum = Some(u32::from_le_bytes(b.try_into().expect("4 bytes")));
                }
            }
            Err(why) => {
                self.stopped.get_or_insert(Damage {
                    path: path.clone(),
                    offset: 0,
                    why,
                });
            }
        }
        sums
    }

    /// The frames after `checkpoint` (from the start of the log without
    /// one): each one's leaves, or, for a frame whose leaves' CRC fails
    /// or whose own CRC fails with the next one valid, an unverified
    /// range.
    ///
    /// Returns the end of `named` if a frame read is that one (its leaves
    /// verified).
    fn frames(
        &mut self,
        checkpoint: Option<&CheckpointMeta>,
        named: Option<FrameRef>,
    ) -> Option<u64> {
        let mut reached = None;
        let per_file = self.per_file();
        let (mut number, mut slot, mut seq, mut chain) = match checkpoint {
            Some(c) => (
                c.resume.file,
                c.resume.slot,
                c.resume.seq,
                c.integrity.as_ref().map(|i| i.chain),
            ),
            None => (0, 0, 0, None),
        };
        loop {
            // A missing next file is the end of the log (what the store
            // claimed past it is the caller's to compare).
            if !self
                .fs
                .exists(&self.layout.log_file(number))
                .unwrap_or(false)
            {
                return reached;
            }
            let file = match self.open_log(number) {
                Ok(file) => file,
                Err(damage) => {
                    self.stopped.get_or_insert(damage);
                    return reached;
                }
            };
            let first = number * per_file;
            let frames_at = Layout::node_offset(per_file);
            let mut skipped = 0;
            loop {
                let end = self.leaves.len() as u64;
                if end >= first + per_file {
                    break;
                }
                let offset = frames_at + slot * FRAME_LEN;
                let mut bytes = [0u8; to_usize(FRAME_LEN)];
                let frame = file
                    .read_exact_at(&mut bytes, offset)
                    .ok()
                    .and_then(|()| Frame::decode(&bytes));
                let follows = |f: &Frame| {
                    (seq == 0 && checkpoint.is_none() || f.seq == seq + skipped)
                        && f.start() >= end
                        && f.end <= first + per_file
                        && (skipped > 0 || f.start() == end)
                };
                match frame {
                    Some(frame) if follows(&frame) => {
                        let chained = chain.is_none_or(|c| skipped > 0 || frame.prev == c);
                        if frame.start() > end {
                            // The frames skipped: their leaves unknown.
                            self.leaves.resize(to_usize(frame.start()), [0; 32]);
                            self.mark_unverified(end..frame.start());
                        }
                        let start = frame.start();
                        let path = self.layout.log_file(number);
                        let ok = self.read_leaves(&*file, number, frame.end).is_ok()
                            && chained
                            && crc32c::crc32c(
                                self.leaves[to_usize(start)..to_usize(frame.end)].as_flattened(),
                            ) == frame.leaves_crc;
                        let this = FrameRef {
                            seq: frame.seq,
                            end: frame.end,
                            file: number,
                            slot,
                            crc: frame.crc(),
                        };
                        if ok && named == Some(this) {
                            reached = Some(frame.end);
                        }
                        if !ok {
                            self.leaves.resize(to_usize(frame.end), [0; 32]);
                            self.mark_unverified(start..frame.end);
                            self.stopped.get_or_insert(Damage {
                                path,
                                offset: Layout::node_offset(start - first),
                                why: format!(
                                    "the leaves of frame {} ({start}..{}) do not match its CRC or chain",
                                    frame.seq, frame.end
                                ),
                            });
                        }
                        seq = frame.seq + 1;
                        chain = Some(frame.crc());
                        slot += 1;
                        skipped = 0;
                    }
                    _ if skipped == 0 => {
                        // One damaged frame may be followed by valid ones.
                        if checkpoint.is_none() && seq == 0 {
                            return reached;
                        }
                        self.stopped.get_or_insert(Damage {
                            path: self.layout.log_file(number),
                            offset,
                            why: format!("frame {seq} is missing or damaged"),
                        });
                        skipped = 1;
                        slot += 1;
                    }
                    _ => return reached,
                }
            }
            number += 1;
            slot = 0;
        }
    }

    /// What the valid tail records of the log's files claim was durable
    /// (of the timeline after the checkpoint's resume point, if known).
    fn tail_claims(&self, checkpoint: Option<&CheckpointMeta>) -> Claims {
        let mut claims = Claims {
            leaves: 0,
            heads: 0,
            newest: None,
        };
        let from_seq = checkpoint.map_or(0, |c| c.resume.seq);
        let epoch = checkpoint.map(|c| c.epoch);
        let names = self.fs.list_dir(&self.layout.log_dir()).unwrap_or_default();
        for number in names.iter().filter_map(|name| format::parse_log_name(name)) {
            let path = self.layout.log_file(number);
            let Ok(file) = self.fs.open(&path, OpenMode::ReadOnly) else {
                continue;
            };
            let mut header = [0u8; to_usize(HEADER_LEN)];
            if file.read_exact_at(&mut header, 0).is_err() {
                continue;
            }
            for tail in HeaderRecords::read(&header, number, self.meta.store_id)
                .tails
                .into_iter()
                .flatten()
            {
                if let Some(frame) = tail.durable
                    && frame.seq >= from_seq
                {
                    claims.leaves = claims.leaves.max(frame.end);
                    if claims.newest.is_none_or(|newest| frame.seq > newest.seq) {
                        claims.newest = Some(frame);
                    }
                }
                if epoch.is_none_or(|e| e == tail.epoch) {
                    claims.heads = claims.heads.max(tail.heads);
                }
            }
        }
        claims
    }
}

/// The heads file's records: those the checkpoint counts, then those of
/// its epoch in order, up to the first that does not decode or follow.
fn read_heads(
    fs: &dyn Fs,
    layout: &Layout,
    meta: &StoreMeta,
    checkpoint: Option<&CheckpointMeta>,
) -> (Vec<TaggedHead>, Option<Damage>) {
    let path = layout.heads();
    let damage = |offset, why: String| Damage {
        path: path.clone(),
        offset,
        why,
    };
    let bytes = match read_all(fs, &path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return (Vec::new(), Some(damage(0, "missing".to_owned())));
        }
        Err(e) => return (Vec::new(), Some(damage(0, e.to_string()))),
    };
    let version = match format::check_heads_header(meta, &bytes) {
        Ok(version) => version,
        Err(e) => return (Vec::new(), Some(damage(0, format!("header: {e}")))),
    };
    let empty_has_root = !matches!(meta.tree.kind, TreeKind::Lean);
    let counted = checkpoint.map_or(0, |c| c.heads);
    let mut heads: Vec<TaggedHead> = Vec::new();
    let mut epoch = checkpoint.map(|c| c.epoch);
    let records = bytes
        .get(to_usize(HEADS_HEADER_LEN)..)
        .unwrap_or_default()
        .chunks_exact(to_usize(HEAD_RECORD_LEN));
    for (i, b) in records.enumerate() {
        let offset = HEADS_HEADER_LEN + i as u64 * HEAD_RECORD_LEN;
        let Some(record) = HeadRecord::decode(b, version, empty_has_root) else {
            let why = format!("record {i} does not decode");
            return (heads, Some(damage(offset, why)));
        };
        let follows = heads
            .last()
            .is_none_or(|last| record.block > last.block && record.size >= last.size);
        // Past the checkpoint's count, records are of its epoch; without
        // a checkpoint, epochs only grow (a rollback rewinds the file).
        let of_epoch = (i as u64) < counted
            || match (checkpoint, epoch) {
                (Some(_), Some(e)) => record.epoch == e,
                (None, Some(e)) => record.epoch >= e,
                (_, None) => true,
            };
        if !follows || !of_epoch {
            let why = format!("record {i} does not follow the ones before it");
            return (heads, Some(damage(offset, why)));
        }
        if checkpoint.is_none() {
            epoch = Some(record.epoch);
        }
        heads.push(TaggedHead {
            block: record.block,
            block_hash: record.block_hash,
            size: record.size,
            root: record.root,
        });
    }
    (heads, None)
}
