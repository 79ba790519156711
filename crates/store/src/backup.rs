//! Online backup: a fresh store in another directory holding exactly a
//! durable state of this one (docs/file-format.md, "Backups"). It is
//! written from a snapshot, not copied file by file: only used bytes are
//! written (a log file's unused leaf region stays a hole), the log is one
//! frame per file, and a checkpoint at the backup's size makes it open
//! without hashing. Nothing here holds a lock of the source store.

use cairn_core::cast::to_usize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairn_core::{Hash, Snapshot, TreeHead};

use crate::checkpoint::{self, Checkpoints, Marks};
use crate::error::{Result, StoreError};
use crate::format::{
    self, FRAME_LEN, Frame, FrameRef, HEADER_LEN, HeadDurable, HeadRecord, LogPosition, PAGE_NODES,
    StoreMeta, TAIL_OFFSETS, TailRecord,
};
use crate::fs::{Fs, FsFile, OpenMode};
use crate::heads::TaggedHead;
use crate::layout::Layout;
use crate::store::{Inner, Store, Taken};

/// What [`Store::backup_with`] runs to write the layer above's files.
pub type DerivedFiles<'a> = dyn FnMut(&dyn Fs, &Path, u64) -> Result<u64> + 'a;

/// What [`Store::backup_to`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Backup {
    /// The head of the copy: the source's durable head when the backup
    /// took its snapshot.
    pub head: TreeHead,
    /// Block-tagged heads copied.
    pub tagged_heads: u64,
    /// Bytes written (file contents, not holes).
    pub bytes: u64,
}

impl Store {
    /// Writes a copy of this store's durable state into `dest` (created;
    /// it must not exist or be empty), which then opens as a store with
    /// the same id, size, root, tagged heads and finalized size. A writer
    /// keeps appending meanwhile: the copy is of the durable state when it
    /// started (a writer flushes to take it, as a group commit does); a
    /// read-only store copies what it opened. `dest` is durable when this
    /// returns.
    pub fn backup_to(&self, dest: &Path) -> Result<Backup> {
        self.backup_with(dest, &mut |_, _, _| Ok(0))
    }

    /// [`Store::backup_to`], running `derived(fs, dest, size)` before the
    /// copy is complete (before its `cairn.meta`): the layer above writes
    /// its derived files for the copy's `size` leaves there, returning the
    /// bytes it wrote.
    pub fn backup_with(&self, dest: &Path, derived: &mut DerivedFiles<'_>) -> Result<Backup> {
        let (snapshot, tags, finalized) = self.inner.durable_state()?;
        write_copy(
            &*self.inner.fs,
            dest,
            &self.inner.meta,
            (&snapshot, &tags, finalized.min(snapshot.size())),
            derived,
        )
    }
}

impl Inner {
    /// A snapshot of exactly the durable leaves, the tagged heads within
    /// it and the finalized size, taken together (no rollback between).
    fn durable_state(&self) -> Result<(Arc<Snapshot>, Vec<TaggedHead>, u64)> {
        let mut checkpoints = self.checkpoints.lock();
        let finalized = Inner::finalized(&checkpoints);
        if self.read_only {
            let tags = self.heads.lock().tags().to_vec();
            return Ok((self.published.load_full(), tags, finalized));
        }
        self.settle(&mut checkpoints)?;
        let mut taken = None;
        let result = self.flush_log(Some(&mut taken));
        {
            let mut durable = self.durable.lock();
            self.record_flush(&mut durable, result.clone());
        }
        result?;
        let Taken {
            snapshot, heads, ..
        } = taken.expect("flush_log fills the snapshot");
        let tags = self.heads.lock().tags()[..to_usize(heads)].to_vec();
        Ok((snapshot, tags, finalized))
    }
}

/// Writes the store of `snapshot` into `dest` (see [`Store::backup_to`]).
fn write_copy(
    fs: &dyn Fs,
    dest: &Path,
    meta: &StoreMeta,
    (snapshot, tags, finalized): (&Snapshot, &[TaggedHead], u64),
    derived: &mut DerivedFiles<'_>,
) -> Result<Backup> {
    prepare(fs, dest)?;
    let layout = Layout::new(dest, meta);
    // Kept until the copy is complete: nobody opens a half-written copy.
    let _lock = fs
        .lock(&layout.lock())
        .map_err(|e| StoreError::io("lock", layout.lock(), e))?;
    let mut bytes = 0u64;
    for path in [layout.log_dir(), layout.levels_dir()] {
        fs.create_dir(&path)
            .map_err(|e| StoreError::io("create directory", &path, e))?;
    }
    fs.sync_dir(dest)
        .map_err(|e| StoreError::io("fsync", dest, e))?;
    let (resume, chain, log_bytes) = write_log(fs, &layout, meta, snapshot, tags.len() as u64)?;
    bytes += log_bytes;
    if !tags.is_empty() {
        bytes += write_heads(fs, dest, meta, tags)?;
    }
    let written = checkpoint::write(
        fs,
        dest,
        meta,
        &mut Checkpoints::default(),
        snapshot,
        resume,
        Marks {
            chain,
            finalized,
            epoch: 0,
            heads: tags.len() as u64,
            rollback_floor: u64::MAX,
        },
    )?;
    bytes += written.encode(meta.store_id).len() as u64;
    bytes += written
        .levels
        .iter()
        .skip(1)
        .filter(|(final_len, _)| *final_len > 0)
        .map(|(final_len, _)| Layout::nodes_len(*final_len))
        .sum::<u64>();
    // The sums files of the levels with a whole page (the leaves' too).
    bytes += written
        .levels
        .iter()
        .map(|(final_len, _)| final_len / PAGE_NODES)
        .filter(|&pages| pages > 0)
        .map(format::sum_offset)
        .sum::<u64>();
    bytes += derived(fs, dest, snapshot.size())?;
    // Last: a directory with `cairn.meta` is a store.
    crate::replace::replace_file(fs, dest, Layout::META_TMP, Layout::META, |file, tmp| {
        file.write_at(&meta.encode(), 0)
            .map_err(|e| StoreError::io("write", tmp, e))
    })?;
    bytes += meta.encoded_len() as u64;
    Ok(Backup {
        head: snapshot.head(),
        tagged_heads: tags.len() as u64,
        bytes,
    })
}

/// Creates `dest` (and makes its entry durable), or checks it is empty.
fn prepare(fs: &dyn Fs, dest: &Path) -> Result<()> {
    if fs
        .exists(dest)
        .map_err(|e| StoreError::io("stat", dest, e))?
    {
        let entries = fs
            .list_dir(dest)
            .map_err(|e| StoreError::io("list", dest, e))?;
        if !entries.is_empty() {
            return Err(StoreError::NotEmpty { path: dest.into() });
        }
        return Ok(());
    }
    fs.create_dir(dest)
        .map_err(|e| StoreError::io("create directory", dest, e))?;
    if let Some(parent) = dest.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs.sync_dir(parent)
            .map_err(|e| StoreError::io("fsync", parent, e))?;
    }
    Ok(())
}

/// Writes the leaves of `snapshot` as log files of one frame each (file
/// 0 even for no leaves: a store has it from creation on), each sealed by
/// a tail record naming its frame (true once the copy is published, which
/// happens only after everything is synced); returns where the next frame
/// goes, the chain value it carries and the bytes written.
fn write_log(
    fs: &dyn Fs,
    layout: &Layout,
    meta: &StoreMeta,
    snapshot: &Snapshot,
    heads: u64,
) -> Result<(LogPosition, u32, u64)> {
    let size = snapshot.size();
    let per_file = meta.log_file_leaves();
    let files = size.div_ceil(per_file).max(1);
    let mut bytes = 0;
    let mut chain = 0u32;
    for number in 0..files {
        let path: PathBuf = layout.log_file(number);
        let file = fs
            .open(&path, OpenMode::CreateNew)
            .map_err(|e| StoreError::io("create", &path, e))?;
        let first = number * per_file;
        let end = size.min(first + per_file);
        let write = |bytes: &[u8], at: u64| {
            file.write_at(bytes, at)
                .map_err(|e| StoreError::io("write", &path, e))
        };
        write(&format::log_header(meta, number), 0)?;
        bytes += HEADER_LEN;
        if end > first {
            let mut crc = 0u32;
            let mut at = first;
            while at < end {
                let run = leaves_from(snapshot, at);
                let take = to_usize((run.len() as u64).min(end - at));
                let run = run[..take].as_flattened();
                crc = crc32c::crc32c_append(crc, run);
                write(run, Layout::node_offset(at - first))?;
                at += take as u64;
            }
            let frame = Frame {
                seq: number + 1,
                end,
                count: u32::try_from(end - first).expect("log files hold at most 2^30 leaves"),
                leaves_crc: crc,
                prev: chain,
            };
            write(&frame.encode(), layout.frame_offset(0))?;
            chain = frame.crc();
            let tail = TailRecord {
                counter: number + 1,
                durable: Some(FrameRef {
                    seq: frame.seq,
                    end,
                    file: number,
                    slot: 0,
                    crc: chain,
                }),
                heads,
                epoch: 0,
                sealed: true,
            };
            write(&tail.encode(), TAIL_OFFSETS[0])?;
            bytes += Layout::nodes_len(end - first) - HEADER_LEN + FRAME_LEN;
        }
        sync(&*file, &path)?;
    }
    let dir = layout.log_dir();
    fs.sync_dir(&dir)
        .map_err(|e| StoreError::io("fsync", &dir, e))?;
    let resume = if size == 0 {
        LogPosition {
            file: 0,
            slot: 0,
            seq: 1,
        }
    } else if size.is_multiple_of(per_file) {
        LogPosition {
            file: files,
            slot: 0,
            seq: files + 1,
        }
    } else {
        // The last file's slot 0 holds its frame.
        LogPosition {
            file: files - 1,
            slot: 1,
            seq: files + 1,
        }
    };
    Ok((resume, chain, bytes))
}

/// The leaves of `snapshot` from `at` on that are contiguous in memory
/// (the last leaf is kept apart, in the edge).
fn leaves_from(snapshot: &Snapshot, at: u64) -> &[Hash] {
    let finals = snapshot.final_nodes(0);
    if at < finals.len() as u64 {
        finals.run_from(to_usize(at))
    } else {
        std::slice::from_ref(&snapshot.edge()[0].1)
    }
}

/// Writes the heads file holding `tags` (all at sizes within the copy).
fn write_heads(fs: &dyn Fs, dir: &Path, meta: &StoreMeta, tags: &[TaggedHead]) -> Result<u64> {
    let path = Layout::new(dir, meta).heads();
    let file = fs
        .open(&path, OpenMode::CreateNew)
        .map_err(|e| StoreError::io("create", &path, e))?;
    let mut bytes = format::heads_header(meta).to_vec();
    for (index, tag) in tags.iter().enumerate() {
        let record = HeadRecord {
            block: tag.block,
            block_hash: tag.block_hash,
            size: tag.size,
            root: tag.root,
            epoch: 0,
            // Each vouches for those before it: the file is synced before
            // the copy is published.
            durable: Some(HeadDurable {
                records: index as u64,
                log_seq: 0,
                log_end: 0,
            }),
        };
        bytes.extend_from_slice(&record.encode());
    }
    file.write_at(&bytes, 0)
        .map_err(|e| StoreError::io("write", &path, e))?;
    sync(&*file, &path)?;
    fs.sync_dir(dir)
        .map_err(|e| StoreError::io("fsync", dir, e))?;
    Ok(bytes.len() as u64)
}

fn sync(file: &dyn FsFile, path: &Path) -> Result<()> {
    file.sync_data()
        .map_err(|e| StoreError::io("fdatasync", path, e))
}
