//! Block-tagged heads and roots by value: what a chain follower needs to
//! roll back to a block and what a wallet needs to prove against the root
//! a contract holds.
//!
//! A tagged append records (block, block hash, size, root) at its end. The
//! records live in `heads` (docs/file-format.md, "Heads"): written and
//! made durable by the group commit *before* the log frame of the leaves
//! they follow, so a durable leaf's tag is durable too, and a record past
//! the recovered log is dropped as unacknowledged. Each record also says
//! what was durable when its batch was written (the records before it and
//! the log's last frame), so an invalid record followed by one that
//! vouches for it is damage, not a torn batch. In memory, [`Heads`]
//! keeps every tag and the roots of the last `window` appends for lookups
//! by root value.
//!
//! Recovery reads the file's bytes from disk: it answers every input with
//! the tags or an error, never a panic (the lints hold it to it).
#![deny(clippy::indexing_slicing, clippy::unwrap_used)]

use cairn_core::cast::to_usize;
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairn_core::Hash;

use crate::error::{Result, StoreError};
use crate::format::{
    self, FrameRef, HEAD_RECORD_LEN, HEADS_HEADER_LEN, HEADS_VERSION, HeadDurable, HeadRecord,
    StoreMeta,
};
use crate::fs::{Fs, FsFile, OpenMode};
use crate::layout::Layout;
use crate::log::Claim;

/// The block an append belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockTag {
    /// The block number: strictly increasing from one tagged append to the next.
    pub number: u64,
    /// The block hash, if the caller has it.
    pub hash: Option<Hash>,
}

impl BlockTag {
    /// A tag with a block number only.
    pub const fn number(number: u64) -> BlockTag {
        BlockTag { number, hash: None }
    }
}

/// The tree's head at the end of a tagged append.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaggedHead {
    /// The block number.
    pub block: u64,
    /// The block hash, if the append carried one.
    pub block_hash: Option<Hash>,
    /// Leaves in the tree at the end of the append.
    pub size: u64,
    /// The root at that size (`None` for the empty tree).
    pub root: Option<Hash>,
}

/// Where a root was seen: the size it is the root of, and the first block
/// tagged at that size, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RootAt {
    /// The size whose root it is.
    pub size: u64,
    /// The first block whose tagged head has this root.
    pub block: Option<u64>,
}

/// The tags and the recent roots, in memory (behind the store's `heads` lock).
#[derive(Debug)]
pub(crate) struct Heads {
    tags: Vec<TaggedHead>,
    /// Records handed to the heads file (the rest are pending).
    written: usize,
    /// A root of a tagged head -> the first tag with it.
    tag_roots: HashMap<Hash, usize>,
    /// End sizes of the last `window` appends, with their roots once
    /// computed: the first `filled` have them (roots are computed for every
    /// entry at once, and new entries join at the back, so the ones without
    /// are always a suffix).
    recent: VecDeque<(u64, Option<Hash>)>,
    filled: usize,
    recent_roots: HashMap<Hash, u64>,
    window: usize,
    /// Rollbacks so far: roots computed before one are not filled in after.
    epoch: u64,
}

impl Heads {
    /// The recovered tags (all durable), keeping `window` recent roots.
    pub fn new(tags: Vec<TaggedHead>, window: usize) -> Heads {
        let mut heads = Heads {
            written: tags.len(),
            tags: Vec::new(),
            tag_roots: HashMap::new(),
            recent: VecDeque::with_capacity(window.min(1 << 16)),
            filled: 0,
            recent_roots: HashMap::new(),
            window,
            epoch: 0,
        };
        for tag in tags {
            heads.push_tag(tag);
        }
        heads
    }

    /// Every tag, in order.
    pub fn tags(&self) -> &[TaggedHead] {
        &self.tags
    }

    /// The block number of the last tag.
    pub fn last_block(&self) -> Option<u64> {
        self.tags.last().map(|t| t.block)
    }

    /// Records a tag (its root already computed).
    pub fn push_tag(&mut self, head: TaggedHead) {
        if let Some(root) = head.root {
            self.tag_roots.entry(root).or_insert(self.tags.len());
        }
        self.tags.push(head);
    }

    /// Records the end size of an append (root computed lazily).
    pub fn note_append(&mut self, size: u64) {
        if self.window == 0 || self.recent.back().is_some_and(|&(s, _)| s == size) {
            return;
        }
        if self.recent.len() == self.window
            && let Some((old, root)) = self.recent.pop_front()
        {
            self.filled = self.filled.saturating_sub(1);
            if let Some(root) = root
                && self.recent_roots.get(&root) == Some(&old)
            {
                self.recent_roots.remove(&root);
            }
        }
        self.recent.push_back((size, None));
    }

    /// Tags not yet handed to the heads file, and how many tags there are.
    pub fn pending(&self) -> (Vec<TaggedHead>, usize) {
        (
            self.tags.get(self.written..).unwrap_or_default().to_vec(),
            self.tags.len(),
        )
    }

    /// The first `count` tags are in the heads file.
    pub fn mark_written(&mut self, count: usize) {
        self.written = self.written.max(count.min(self.tags.len()));
    }

    /// How many tags [`Heads::truncate`] would keep for `to` and
    /// `max_block` (without changing anything).
    pub fn kept(&self, to: u64, max_block: Option<u64>) -> usize {
        self.tags
            .partition_point(|t| t.size <= to && max_block.is_none_or(|b| t.block <= b))
    }

    /// Drops every tag above size `to` (and with `max_block`, every tag of
    /// a later block) and every recent size above `to`; returns how many
    /// tags remain.
    pub fn truncate(&mut self, to: u64, max_block: Option<u64>) -> usize {
        let keep = self.kept(to, max_block);
        if keep < self.tags.len() {
            self.tags.truncate(keep);
            self.tag_roots.retain(|_, index| *index < keep);
        }
        self.written = self.written.min(keep);
        while self.recent.back().is_some_and(|&(size, _)| size > to) {
            self.filled = self.filled.min(self.recent.len() - 1);
            if let Some((size, Some(root))) = self.recent.pop_back()
                && self.recent_roots.get(&root) == Some(&size)
            {
                self.recent_roots.remove(&root);
            }
        }
        self.epoch += 1;
        keep
    }

    /// Rollbacks so far (see [`Heads::fill_roots`]).
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// What is known of `root` from memory alone.
    pub fn lookup(&self, root: &Hash) -> Option<RootAt> {
        if let Some(tag) = self
            .tag_roots
            .get(root)
            .and_then(|&index| self.tags.get(index))
        {
            return Some(RootAt {
                size: tag.size,
                block: Some(tag.block),
            });
        }
        self.recent_roots.get(root).map(|&size| RootAt {
            size,
            block: self.first_block_at(size),
        })
    }

    fn first_block_at(&self, size: u64) -> Option<u64> {
        let at = self.tags.partition_point(|t| t.size < size);
        self.tags
            .get(at)
            .filter(|t| t.size == size)
            .map(|t| t.block)
    }

    /// Sizes of recent appends whose roots are not computed yet.
    pub fn missing_roots(&self) -> Vec<u64> {
        self.recent
            .iter()
            .skip(self.filled)
            .map(|&(size, _)| size)
            .collect()
    }

    /// Stores roots of recent sizes computed in rollback epoch `epoch`
    /// (dropped if a rollback came since: a size may hold other leaves now).
    pub fn fill_roots(&mut self, roots: &[(u64, Option<Hash>)], epoch: u64) {
        if epoch != self.epoch {
            return;
        }
        let by_size: HashMap<u64, Option<Hash>> = roots.iter().copied().collect();
        while let Some((size, slot)) = self.recent.get_mut(self.filled) {
            // The empty tree's root is none: nothing to find it by.
            let Some(&root) = by_size.get(size) else {
                break;
            };
            *slot = root;
            if let Some(root) = root {
                self.recent_roots.entry(root).or_insert(*size);
            }
            self.filled += 1;
        }
    }

    /// The last tag at or below `block`.
    pub fn at_block(&self, block: u64) -> Option<TaggedHead> {
        let at = self.tags.partition_point(|t| t.block <= block);
        at.checked_sub(1).and_then(|i| self.tags.get(i)).copied()
    }
}

/// Appends head records to the heads file (behind the log's flush lock).
#[derive(Debug)]
pub(crate) struct HeadsWriter {
    fs: Arc<dyn Fs>,
    path: PathBuf,
    dir: PathBuf,
    meta: StoreMeta,
    file: Option<Arc<dyn FsFile>>,
    /// The file's version (1 until a writer's open migrates it).
    version: u32,
    /// Where the next record goes (records before it are valid).
    next: u64,
    /// The rollback epoch new records carry.
    epoch: u64,
    /// The file's length: records past it are written with a run of zeroed
    /// slots after them, so most commits overwrite allocated bytes of an
    /// unchanged length (an `fdatasync` that changes a file's length also
    /// commits its metadata: on this workload's machines that made a
    /// tagged block's wait several times longer).
    len: u64,
}

/// Slots zeroed ahead of the records when the file grows (512 KiB).
const RESERVE_RECORDS: u64 = 4096;

impl HeadsWriter {
    /// Records in the file (valid, and durable once the flush writing them returned).
    pub fn written(&self) -> usize {
        to_usize(self.next)
    }

    /// The epoch new records carry.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The open heads file, if one was opened or created, and its path.
    pub fn file(&self) -> (Option<&Arc<dyn FsFile>>, &Path) {
        (self.file.as_ref(), &self.path)
    }

    /// Writes go to `handle` from now on: the same bytes, written again at
    /// the file's name after it was removed or replaced.
    pub fn replace_handle(&mut self, handle: Arc<dyn FsFile>) {
        self.file = Some(handle);
    }

    /// Whether the file (if any) is of the current version.
    pub fn is_current(&self) -> bool {
        self.file.is_none() || self.version == HEADS_VERSION
    }

    fn record(&self, head: &TaggedHead, log: Option<FrameRef>) -> HeadRecord {
        HeadRecord {
            block: head.block,
            block_hash: head.block_hash,
            size: head.size,
            root: head.root,
            epoch: self.epoch,
            durable: Some(HeadDurable {
                records: self.next,
                log_seq: log.map_or(0, |f| f.seq),
                log_end: log.map_or(0, |f| f.end),
            }),
        }
    }

    /// Writes `heads` after the valid records and makes them durable;
    /// `log` is the log's last durable frame (each record names it).
    pub fn write(&mut self, heads: &[TaggedHead], log: Option<FrameRef>) -> Result<()> {
        if heads.is_empty() {
            return Ok(());
        }
        let file = match &self.file {
            Some(file) => Arc::clone(file),
            None => {
                let file: Arc<dyn FsFile> = Arc::from(
                    self.fs
                        .open(&self.path, OpenMode::CreateNew)
                        .map_err(|e| StoreError::io("create", &self.path, e))?,
                );
                file.write_at(&format::heads_header(&self.meta), 0)
                    .map_err(|e| StoreError::io("write", &self.path, e))?;
                file.sync_data()
                    .map_err(|e| StoreError::io("fdatasync", &self.path, e))?;
                self.fs
                    .sync_dir(&self.dir)
                    .map_err(|e| StoreError::io("fsync", &self.dir, e))?;
                self.file = Some(Arc::clone(&file));
                self.version = HEADS_VERSION;
                self.len = HEADS_HEADER_LEN;
                file
            }
        };
        assert_eq!(
            self.version, HEADS_VERSION,
            "an older heads file is migrated before the first write"
        );
        let at = Layout::head_record_offset(self.next);
        let mut bytes = Vec::with_capacity(heads.len() * to_usize(HEAD_RECORD_LEN));
        for head in heads {
            let record = self.record(head, log);
            let encoded = record.encode();
            // Pair assertion: what goes to disk reads back as what was meant.
            debug_assert_eq!(
                HeadRecord::decode(&encoded, HEADS_VERSION, self.meta.tree.empty_has_root()),
                Some(record)
            );
            bytes.extend_from_slice(&encoded);
        }
        let end = at + bytes.len() as u64;
        if end > self.len {
            // Zeroed slots read as the end of the records, as a torn tail does.
            let reserved = end + HEAD_RECORD_LEN * RESERVE_RECORDS;
            bytes.resize(to_usize(reserved - at), 0);
            self.len = reserved;
        }
        file.write_at(&bytes, at)
            .map_err(|e| StoreError::io("write", &self.path, e))?;
        file.sync_data()
            .map_err(|e| StoreError::io("fdatasync", &self.path, e))?;
        self.next += heads.len() as u64;
        Ok(())
    }

    /// After a rollback published at `epoch`: the first `count` records
    /// stay valid, later ones are overwritten.
    pub fn rewind(&mut self, count: u64, epoch: u64) {
        self.next = self.next.min(count);
        self.epoch = epoch;
    }

    /// Rewrites a version 1 heads file holding `tags` as the current
    /// version: a fresh file (records of this epoch, each naming the
    /// records before it as durable, as they are once it is published)
    /// written, synced and renamed over the old one, the directory synced.
    pub fn migrate(&mut self, tags: &[TaggedHead]) -> Result<()> {
        if self.is_current() {
            return Ok(());
        }
        let mut bytes = format::heads_header(&self.meta).to_vec();
        for (index, head) in tags.iter().enumerate() {
            let mut record = self.record(head, None);
            record.durable = Some(HeadDurable {
                records: index as u64,
                log_seq: 0,
                log_end: 0,
            });
            bytes.extend_from_slice(&record.encode());
        }
        let name = self
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or(Layout::HEADS)
            .to_owned();
        crate::replace::replace_file(
            &*self.fs,
            &self.dir,
            Layout::HEADS_TMP,
            &name,
            |file, tmp| {
                file.write_at(&bytes, 0)
                    .map_err(|e| StoreError::io("write", tmp, e))
            },
        )?;
        let file: Arc<dyn FsFile> = Arc::from(
            self.fs
                .open(&self.path, OpenMode::Existing)
                .map_err(|e| StoreError::io("open", &self.path, e))?,
        );
        self.file = Some(file);
        self.version = HEADS_VERSION;
        self.next = tags.len() as u64;
        self.len = bytes.len() as u64;
        Ok(())
    }
}

/// The heads file as read at open, before the log is recovered: its
/// records' claims about the log are judged by the log's scan.
#[derive(Debug)]
pub(crate) struct ReadHeads {
    path: PathBuf,
    /// The open file, its length and version; `None` if there is none (or
    /// its header was never made durable).
    file: Option<(Arc<dyn FsFile>, u64, u32)>,
    /// The record slots' bytes.
    slots: Vec<u8>,
    /// The file exists with a header that was never made durable and no
    /// record: a writer rewrites the header.
    unheaded: bool,
}

impl ReadHeads {
    fn records(&self, meta: &StoreMeta) -> impl Iterator<Item = (u64, Option<HeadRecord>)> + '_ {
        let version = self.file.as_ref().map_or(HEADS_VERSION, |f| f.2);
        let empty_has_root = meta.tree.empty_has_root();
        self.slots
            .chunks_exact(to_usize(HEAD_RECORD_LEN))
            .enumerate()
            .map(move |(index, raw)| {
                (
                    index as u64,
                    HeadRecord::decode(raw, version, empty_has_root),
                )
            })
    }

    /// What the valid records of rollback epoch `epoch` say was durable
    /// in the log: frames the log's scan must find.
    pub fn log_claims(&self, meta: &StoreMeta, epoch: u64) -> Vec<Claim> {
        self.records(meta)
            .filter_map(|(index, record)| {
                let record = record.filter(|r| r.epoch == epoch)?;
                let durable = record.durable.filter(|d| d.log_seq > 0)?;
                Some(Claim {
                    seq: durable.log_seq,
                    end: durable.log_end,
                    exact: None,
                    source: self.path.clone(),
                    offset: Layout::head_record_offset(index),
                })
            })
            .collect()
    }
}

/// Reads the heads file (if any): its header checked, its record slots
/// read. A file whose header was never made durable and that holds no
/// record is nothing; with a record, it is damage.
pub(crate) fn read(
    fs: &dyn Fs,
    dir: &Path,
    meta: &StoreMeta,
    read_only: bool,
) -> Result<ReadHeads> {
    let path = Layout::new(dir, meta).heads();
    let mut heads = ReadHeads {
        path: path.clone(),
        file: None,
        slots: Vec::new(),
        unheaded: false,
    };
    if !fs
        .exists(&path)
        .map_err(|e| StoreError::io("stat", &path, e))?
    {
        return Ok(heads);
    }
    let mode = if read_only {
        OpenMode::ReadOnly
    } else {
        OpenMode::Existing
    };
    let file: Arc<dyn FsFile> = Arc::from(
        fs.open(&path, mode)
            .map_err(|e| StoreError::io("open", &path, e))?,
    );
    let len = file.len().map_err(|e| StoreError::io("stat", &path, e))?;
    let mut header = [0u8; to_usize(HEADS_HEADER_LEN)];
    let read = file
        .read_at(&mut header, 0)
        .map_err(|e| StoreError::io("read", &path, e))?;
    let slots = len.saturating_sub(HEADS_HEADER_LEN) / HEAD_RECORD_LEN;
    let mut bytes = vec![0u8; to_usize(slots * HEAD_RECORD_LEN)];
    file.read_exact_at(&mut bytes, HEADS_HEADER_LEN)
        .map_err(|e| StoreError::io("read", &path, e))?;
    heads.slots = bytes;
    match format::check_heads_header(meta, header.get(..read).unwrap_or_default()) {
        Ok(version) => heads.file = Some((file, len, version)),
        Err(why) => {
            // Records are written only after the header is durable, so a
            // file with a bad header and no valid record (of either
            // version) was created but its header never made durable (a
            // power loss can keep the length and lose the bytes: zeros):
            // it holds nothing.
            let empty_has_root = meta.tree.empty_has_root();
            let any = heads
                .slots
                .chunks_exact(to_usize(HEAD_RECORD_LEN))
                .any(|raw| {
                    [format::HEADS_VERSION_PLAIN, HEADS_VERSION]
                        .into_iter()
                        .any(|v| HeadRecord::decode(raw, v, empty_has_root).is_some())
                });
            if any && read == header.len() {
                return Err(StoreError::corrupt(&path, 0, why));
            }
            heads.unheaded = true;
            heads.slots.clear();
            heads.file = Some((file, len, HEADS_VERSION));
        }
    }
    Ok(heads)
}

/// What the rest of the store knows of the heads file at open.
#[derive(Debug)]
pub(crate) struct Known {
    /// The records the checkpoint counts (all valid, whatever their epoch).
    pub trusted: u64,
    /// The checkpoint's rollback epoch.
    pub epoch: u64,
    /// The recovered log's end.
    pub end: u64,
    /// The size the log resumed at (the checkpoint's).
    pub start: u64,
    /// The most records a tail record of the log says were durable in
    /// this epoch, and where it says so.
    pub claimed: Option<(u64, PathBuf, u64)>,
}

/// Recovers the tagged heads from what [`read`] found. The records every
/// durable record vouches for (the checkpoint's count, what a tail record
/// of the log or a later record of this epoch says was durable before it)
/// must be valid and in order, else the file is damaged. After them,
/// records of the checkpoint's epoch are taken in order up to the first
/// that is torn, stale or past the recovered log's end (written before
/// their leaves were durable, in the commit a crash interrupted).
///
/// The third value is where the log must be cut back to when it ends
/// inside the block of such a record: a commit that crossed a log file
/// syncs each file in turn, so a crash between them leaves the block's
/// first part durable. A block is all or nothing, so that part goes too
/// (the caller rolls the store back to it; the record is left in place
/// until then, so a crash before the rollback finds it again).
pub(crate) fn recover(
    fs: Arc<dyn Fs>,
    dir: &Path,
    meta: StoreMeta,
    read: ReadHeads,
    known: Known,
    read_only: bool,
) -> Result<(Vec<TaggedHead>, HeadsWriter, Option<u64>)> {
    let Known {
        trusted,
        epoch,
        end,
        start,
        claimed,
    } = known;
    let path = read.path.clone();
    let mut writer = HeadsWriter {
        fs: Arc::clone(&fs),
        path: path.clone(),
        dir: dir.to_path_buf(),
        meta,
        file: None,
        version: HEADS_VERSION,
        next: 0,
        epoch,
        len: 0,
    };
    // What durable records vouch for, and the first that says so.
    let mut required = (trusted, path.clone(), 0u64, "the checkpoint");
    if let Some((count, source, offset)) = claimed.filter(|c| c.0 > required.0) {
        required = (count, source, offset, "a tail record of the log");
    }
    for (index, record) in read.records(&meta) {
        let Some(durable) = record.filter(|r| r.epoch == epoch).and_then(|r| r.durable) else {
            continue;
        };
        if durable.records > required.0 {
            required = (
                durable.records,
                path.clone(),
                Layout::head_record_offset(index),
                "a later record",
            );
        }
    }
    let Some((file, len, version)) = read.file.clone() else {
        if required.0 > 0 {
            return Err(StoreError::corrupt(
                &path,
                0,
                format!(
                    "missing, but {} ({} at offset {}) counts {} block-tagged heads",
                    required.3,
                    required.1.display(),
                    required.2,
                    required.0
                ),
            ));
        }
        return Ok((Vec::new(), writer, None));
    };
    if read.unheaded {
        if required.0 > 0 {
            return Err(StoreError::corrupt(
                &path,
                0,
                format!(
                    "the header is not valid, but {} counts {} block-tagged heads",
                    required.3, required.0
                ),
            ));
        }
        // Created but its header never made durable: it holds nothing.
        if read_only {
            return Ok((Vec::new(), writer, None));
        }
        file.write_at(&format::heads_header(&meta), 0)
            .map_err(|e| StoreError::io("write", &path, e))?;
        file.sync_data()
            .map_err(|e| StoreError::io("fdatasync", &path, e))?;
        writer.len = len.max(HEADS_HEADER_LEN);
        writer.file = Some(file);
        return Ok((Vec::new(), writer, None));
    }
    let slots = read.slots.len() as u64 / HEAD_RECORD_LEN;
    if slots < required.0 {
        return Err(StoreError::corrupt(
            &path,
            len,
            format!(
                "{slots} record slots, but {} ({} at offset {}) counts {} block-tagged heads",
                required.3,
                required.1.display(),
                required.2,
                required.0
            ),
        ));
    }
    let mut tags: Vec<TaggedHead> = Vec::new();
    let mut torn = None;
    for (index, record) in read.records(&meta) {
        let offset = Layout::head_record_offset(index);
        let in_order = |r: &HeadRecord| {
            tags.last()
                .is_none_or(|last| r.block > last.block && r.size >= last.size)
        };
        let record = record.filter(|r| in_order(r) && (index < trusted || r.epoch == epoch));
        let Some(r) = record else {
            if index < required.0 {
                return Err(StoreError::corrupt(
                    &path,
                    offset,
                    format!(
                        "block-tagged head {index} is damaged, out of order or of another epoch, but {} ({} at offset {}) counts {} durable",
                        required.3,
                        required.1.display(),
                        required.2,
                        required.0
                    ),
                ));
            }
            break;
        };
        if r.size > end {
            // Written for leaves that never became durable (its commit's
            // log write did not complete): not acknowledged.
            if index < trusted {
                return Err(StoreError::corrupt(
                    &path,
                    offset,
                    format!(
                        "block-tagged head {index} is at size {}, past the log's end {end}, but the checkpoint counts {trusted}",
                        r.size
                    ),
                ));
            }
            // Its block starts after the last head kept, and after what
            // the log held durably when the record was written (where its
            // commit began; a version 1 record does not say, and is left
            // as it was).
            if let Some(durable) = r.durable {
                let from = durable.log_end.max(start);
                let from = tags.last().map_or(from, |last| last.size.max(from));
                torn = (from < end).then_some(from);
            }
            break;
        }
        tags.push(TaggedHead {
            block: r.block,
            block_hash: r.block_hash,
            size: r.size,
            root: r.root,
        });
    }
    writer.next = tags.len() as u64;
    writer.version = version;
    let past = read
        .slots
        .get(to_usize(writer.next * HEAD_RECORD_LEN)..)
        .unwrap_or_default();
    if past.iter().any(|&b| b != 0) && !read_only && torn.is_none() {
        // Records past the valid ones were never acknowledged (torn, or
        // written before leaves that did not become durable). Zero them:
        // left in place, one of this epoch could read as valid once the
        // log grows past its size. (Slots reserved ahead are zero already.)
        let at = Layout::head_record_offset(writer.next);
        let zeros = vec![0u8; to_usize((slots - writer.next) * HEAD_RECORD_LEN)];
        file.write_at(&zeros, at)
            .map_err(|e| StoreError::io("write", &path, e))?;
        file.sync_data()
            .map_err(|e| StoreError::io("fdatasync", &path, e))?;
    }
    writer.len = len;
    writer.file = Some(file);
    Ok((tags, writer, torn))
}

/// A writer for a store without a heads file yet.
pub(crate) fn new_writer(fs: Arc<dyn Fs>, dir: &Path, meta: StoreMeta) -> HeadsWriter {
    HeadsWriter {
        fs,
        path: Layout::new(dir, &meta).heads(),
        dir: dir.to_path_buf(),
        meta,
        file: None,
        version: HEADS_VERSION,
        next: 0,
        epoch: 0,
        len: 0,
    }
}
