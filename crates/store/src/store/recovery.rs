//! Recovery (docs/file-format.md, "Recovery"): the checkpoint read, the
//! log's tail replayed without rehashing (every claim a durable record
//! makes about the log checked), the levels rebuilt from the log and the
//! level files (complete segments mapped) and checked against their sums,
//! and, when asked, every level verified against the one below.

use cairn_core::cast::level_number;
use cairn_core::cast::to_usize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairn_core::level::{Level, SEGMENT_LEN};
use cairn_core::{Hash, LeanImt};

use super::open::{check_config, read_meta};
use super::tiering::{map_leaves, map_segment, mappable};
use super::verified::{Trust, identity_of};
use super::{Access, Store};
use crate::checkpoint::{self, Checkpoints};
use crate::config::StoreConfig;
use crate::error::{NodeMismatch, Result, StoreError};
use crate::format::{
    self, CheckpointMeta, HEADER_LEN, HeaderPage, LogPosition, PAGE_NODES, StoreMeta, VerifiedFile,
};
use crate::fs::{Fs, FsFile, OpenMode};
use crate::heads;
use crate::layout::Layout;
use crate::log;

impl Store {
    /// Recovery proper (docs/file-format.md, "Recovery"); the caller holds
    /// the locks `access` needs.
    pub(super) fn recover(
        fs: Arc<dyn Fs>,
        dir: &Path,
        config: StoreConfig,
        access: Access,
    ) -> Result<Store> {
        let read_only = access.is_read_only();
        let meta_path = dir.join(Layout::META);
        let meta = read_meta(&*fs, &meta_path)?;
        check_config(&meta, &config)?;
        let layout = Layout::new(dir, &meta);
        if !read_only {
            // Never published, so never valid: a checkpoint or a heads
            // rewrite that crashed.
            crate::replace::remove_stale(&*fs, &layout.checkpoint_tmp())?;
            crate::replace::remove_stale(&*fs, &layout.heads_tmp())?;
        }
        let lazy = meta.flags & Layout::FLAG_LAZY_FILES != 0;
        let levels_dir = layout.levels_dir();
        for name in log::list_dir(&*fs, &levels_dir, lazy)? {
            if format::parse_level_name(&name).is_none() && format::parse_sums_name(&name).is_none()
            {
                return Err(StoreError::corrupt(
                    levels_dir.join(name),
                    0,
                    "unexpected file in the levels directory",
                ));
            }
        }
        let last = checkpoint::read(&*fs, dir, &meta)?;
        // A store created without its files makes them at its first write,
        // its checkpoint at size 0 before its first log file: until then
        // (or a crash part way) it has no log file and at most that
        // checkpoint, and is empty. Once any later checkpoint exists, it
        // is held to what every store of the format is.
        let making = lazy && last.as_ref().is_none_or(checkpoint::is_initial);
        let strict = (meta.flags & Layout::FLAG_FORMAT_2 != 0
            || last.as_ref().is_some_and(|c| c.integrity.is_some()))
            && !making;
        let (position, start) = match &last {
            Some(c) => (c.resume, c.size),
            None => (
                LogPosition {
                    file: 0,
                    slot: 0,
                    seq: 1,
                },
                0,
            ),
        };
        let (trusted, epoch) = last.as_ref().map_or((0, 0), |c| (c.heads, c.epoch));
        let judge = access.judges_tail();
        // The heads file first: its records say which log frames were
        // durable when they were written, and the log's scan checks them.
        let read_heads = heads::read(&*fs, dir, &meta, read_only)?;
        let claims = if judge {
            read_heads.log_claims(&meta, epoch)
        } else {
            Vec::new()
        };
        let resume = log::Resume {
            position,
            start,
            chain: last
                .as_ref()
                .and_then(|c| c.integrity.as_ref())
                .map(|i| i.chain),
            strict,
        };
        let mut recovered = log::recover(Arc::clone(&fs), &layout, meta, resume, claims, access)?;
        if last.is_none() && judge && (strict || recovered.writer.has_current_file()) {
            return Err(StoreError::corrupt(
                layout.checkpoint(),
                0,
                "missing: a store of this format has a checkpoint from its creation on",
            ));
        }
        // Until the store publishes its checkpoint, it holds in memory the
        // one it will publish, as a store created with its files does.
        let last = last.or_else(|| making.then(checkpoint::initial));
        let mut checkpoints = Checkpoints {
            last: last.clone(),
            ..Checkpoints::default()
        };
        let claimed = recovered
            .tails
            .iter()
            .filter(|(tail, _, _)| judge && tail.epoch == epoch)
            .max_by_key(|(tail, _, _)| tail.heads)
            .map(|(tail, path, offset)| (tail.heads, path.clone(), *offset));
        let (tags, heads_writer, torn) = heads::recover(
            Arc::clone(&fs),
            dir,
            meta,
            read_heads,
            heads::Known {
                trusted,
                epoch,
                end: recovered.writer.end(),
                start,
                claimed,
            },
            read_only,
        )?;
        // A full verification (`cairn check`) trusts no record.
        let trust = if config.verify_on_open {
            Trust::default()
        } else {
            Trust::read(&*fs, &layout, meta.store_id)
        };
        let mut tree = match &last {
            Some(c) if c.size > 0 => load_levels(
                &*fs,
                dir,
                &meta,
                c,
                &recovered.writer.files(),
                &mut checkpoints,
                (read_only, &trust),
            )?,
            _ => LeanImt::new(meta.tree),
        };
        // A reader leaves out the part of a block a torn commit left (a
        // writer rolls it back durably below, once the store runs).
        if let Some(to) = torn.filter(|_| read_only) {
            recovered.tail.truncate(to_usize(to - start));
            recovered.writer.rewind(to)?;
        }
        if !recovered.tail.is_empty() {
            tree.append_batch(&recovered.tail).map_err(|e| {
                StoreError::corrupt(
                    layout.log_dir(),
                    0,
                    format!("the log holds leaves the tree refuses: {e}"),
                )
            })?;
        }
        tree.commit();
        if config.verify_on_open
            && let Some((level, index)) = tree.first_mismatch()
        {
            let (file, offset) = layout.node_location(level, index);
            let children = layout
                .children_of(meta.tree.arity, tree.size(), level, index)
                .expect("verification finds mismatches above the leaves");
            return Err(StoreError::NodeMismatch(Box::new(NodeMismatch {
                level,
                index,
                file,
                offset,
                children,
            })));
        }
        let store = Store::start(
            fs,
            dir,
            meta,
            config,
            tree,
            recovered.writer,
            (tags, heads_writer),
            checkpoints,
            read_only,
        );
        if let Some(to) = torn.filter(|_| !read_only) {
            // The log ends inside a block whose commit a crash tore (it
            // crossed a log file): a block is all or nothing, so the part
            // that became durable is rolled back, durably, before anyone
            // reads it. Its heads record stays until this publishes.
            store.truncate(to)?;
        }
        Ok(store)
    }
}

/// Rebuilds the tree at the checkpoint from the log (level 0) and the
/// level files, mapping cold levels, without hashing.
fn load_levels(
    fs: &dyn Fs,
    dir: &Path,
    meta: &StoreMeta,
    last: &CheckpointMeta,
    log_files: &[Arc<dyn FsFile>],
    checkpoints: &mut Checkpoints,
    (read_only, trust): (bool, &Trust),
) -> Result<LeanImt> {
    let mode = if read_only {
        OpenMode::ReadOnly
    } else {
        OpenMode::Existing
    };
    let layout = Layout::new(dir, meta);
    let per_file = layout.log_file_leaves();
    let checkpoint_path = layout.checkpoint();
    let mut levels = Vec::with_capacity(last.levels.len());
    checkpoints.tiered = vec![0; last.levels.len()];
    // One `fstat` per log file: lengths checked before mapping, and the
    // identity the verified record is compared with.
    let log_identities: Vec<_> = log_files.iter().map(|f| identity_of(&**f)).collect();
    for (level, &(final_len, edge)) in last.levels.iter().enumerate() {
        let mut nodes = Level::default();
        let final_len = to_usize(final_len);
        // Where node `i` of this level lives: (file, offset).
        // Where leaf `i` lives: (log file, its path, offset).
        let file_for = |i: u64| -> Result<(Arc<dyn FsFile>, PathBuf, u64)> {
            let (number, offset) = layout.leaf_location(i);
            let path = layout.log_file(number);
            let handle = log_files.get(to_usize(number)).ok_or_else(|| {
                StoreError::corrupt(
                    &checkpoint_path,
                    0,
                    format!("the checkpoint covers leaf {i} but log file {number} is missing"),
                )
            })?;
            Ok((Arc::clone(handle), path, offset))
        };
        let level_file = if level > 0 && final_len > 0 {
            let path = layout.level_file(level_number(level));
            let handle: Arc<dyn FsFile> =
                Arc::from(fs.open(&path, mode).map_err(|e| match e.kind() {
                    std::io::ErrorKind::NotFound => StoreError::corrupt(
                        &path,
                        0,
                        format!("missing, but the checkpoint says it holds {final_len} nodes"),
                    ),
                    _ => StoreError::io("open", &path, e),
                })?);
            let mut header: HeaderPage = [0u8; to_usize(HEADER_LEN)];
            handle
                .read_exact_at(&mut header, 0)
                .map_err(|e| StoreError::corrupt(&path, 0, format!("header: {e}")))?;
            format::check_level_header(meta, level_number(level), &header)
                .map_err(|why| StoreError::corrupt(&path, 0, why))?;
            let want = Layout::nodes_len(final_len as u64);
            // One `fstat`: the length checked here, the identity the
            // verified record is compared with.
            let identity = identity_of(&*handle);
            let len = match identity {
                Some(identity) => identity.len,
                None => handle.len().map_err(|e| StoreError::io("stat", &path, e))?,
            };
            if len < want {
                return Err(StoreError::corrupt(
                    &path,
                    len,
                    format!(
                        "the file has {len} bytes, the checkpoint says it holds {final_len} nodes ({want} bytes)"
                    ),
                ));
            }
            if checkpoints.files.len() <= level {
                checkpoints.files.resize(level + 1, None);
            }
            checkpoints.files[level] = Some(Arc::clone(&handle));
            Some((handle, path, identity))
        } else if level == 0 {
            // Every leaf the checkpoint covers must be in the log files
            // (checked before mapping: reading past a mapping's end is a
            // SIGBUS): each file before the last whole, the last up to the
            // last leaf.
            let leaves = last.size;
            let mut first = 0;
            while first < leaves {
                let in_file = (leaves - first).min(per_file);
                let (handle, path, offset) = file_for(first + in_file - 1)?;
                let number = to_usize(first / per_file);
                let len = match log_identities.get(number).copied().flatten() {
                    Some(identity) => identity.len,
                    None => handle.len().map_err(|e| StoreError::io("stat", &path, e))?,
                };
                if len < offset + Layout::NODE_LEN {
                    return Err(StoreError::corrupt(
                        &path,
                        len,
                        format!(
                            "the log file ends before leaf {} that the checkpoint covers",
                            first + in_file - 1
                        ),
                    ));
                }
                first += in_file;
            }
            None
        } else {
            None
        };
        let mut at = 0usize;
        while at < final_len {
            // Open maps every complete segment of every level (pages come
            // in on demand from the page cache, so open reads nothing for
            // them); only the partial last segment of each level is read.
            // `tier_below` governs what later checkpoints move out of memory.
            let whole = at.is_multiple_of(SEGMENT_LEN)
                && at + SEGMENT_LEN <= final_len
                && (at + SEGMENT_LEN) as u64 <= mappable(meta, last.finalized, level);
            if whole {
                let source = match &level_file {
                    Some((handle, path, _)) => {
                        Some(map_segment(&**handle, at / SEGMENT_LEN, path)?)
                    }
                    None => map_leaves(&layout, log_files, at / SEGMENT_LEN)?,
                };
                if let Some(source) = source {
                    nodes
                        .push_tiered(source)
                        .expect("segments are pushed in order");
                    checkpoints.tiered[level] += 1;
                    at += SEGMENT_LEN;
                    continue;
                }
            }
            // Read into memory, at most to the end of this segment (and of
            // the log file holding it).
            let mut take = (SEGMENT_LEN - at % SEGMENT_LEN).min(final_len - at);
            let (handle, path, offset) = match &level_file {
                Some((handle, path, _)) => (
                    Arc::clone(handle),
                    path.clone(),
                    Layout::node_offset(at as u64),
                ),
                None => {
                    let (handle, path, offset) = file_for(at as u64)?;
                    let left_in_file = per_file - (at as u64 % per_file);
                    take = take.min(to_usize(left_in_file));
                    (handle, path, offset)
                }
            };
            // Straight into the level's memory: no buffer, no zeroing.
            let first = at;
            nodes.extend_with(take, |index, run: &mut [Hash]| {
                let at = offset + Layout::NODE_LEN * (index - first) as u64;
                handle
                    .read_exact_at(run.as_flattened_mut(), at)
                    .map_err(|e| StoreError::corrupt(&path, at, format!("reading nodes: {e}")))
            })?;
            at += take;
        }
        // Nothing loaded is trusted before it matches its sums (a
        // checkpoint of an older version has none: its store is migrated
        // by a writer's open).
        if let Some(integrity) = &last.integrity {
            let partial = integrity
                .partial_pages
                .get(level)
                .copied()
                .unwrap_or_default();
            // What the verified record vouches for of the level's files.
            let vouched: Vec<u64> = match &level_file {
                Some((_, _, identity)) => {
                    vec![trust.verified(VerifiedFile::Level(level_number(level)), *identity)]
                }
                None => log_identities
                    .iter()
                    .enumerate()
                    .map(|(n, &identity)| trust.verified(VerifiedFile::Log(n as u64), identity))
                    .collect(),
            };
            let data_vouched = |page: u64| -> bool {
                let end = (page + 1) * PAGE_NODES;
                if level > 0 {
                    return vouched.first().is_some_and(|&v| v >= end);
                }
                let file = page * PAGE_NODES / per_file;
                vouched
                    .get(to_usize(file))
                    .is_some_and(|&v| v >= end - file * per_file)
            };
            let (checked, vouched) = super::integrity::verify_level(
                fs,
                &layout,
                meta,
                super::integrity::LevelCheck {
                    level,
                    nodes: &nodes,
                    final_len: final_len as u64,
                    partial,
                    data_vouched: &data_vouched,
                },
                trust,
            )?;
            checkpoints.pages_checked += checked;
            checkpoints.pages_vouched += vouched;
        }
        // The level's last node is in the checkpoint (for level 0 it is
        // also in the log: they must agree).
        if level == 0 {
            let (handle, path, offset) = file_for(final_len as u64)?;
            let mut leaf = [0u8; 32];
            handle
                .read_exact_at(&mut leaf, offset)
                .map_err(|e| StoreError::corrupt(&path, offset, format!("reading a leaf: {e}")))?;
            if leaf != edge {
                return Err(StoreError::corrupt(
                    &path,
                    offset,
                    format!("leaf {final_len} differs from the checkpoint's copy"),
                ));
            }
        }
        nodes.extend_from_slice(&[edge]);
        levels.push(nodes);
    }
    let tree = LeanImt::from_levels(meta.tree, levels).map_err(|e| {
        StoreError::corrupt(
            &checkpoint_path,
            0,
            format!("levels do not form a tree: {e}"),
        )
    })?;
    if tree.size() != last.size {
        return Err(StoreError::corrupt(
            &checkpoint_path,
            0,
            format!(
                "level 0 holds {} leaves, the checkpoint says {}",
                tree.size(),
                last.size
            ),
        ));
    }
    Ok(tree)
}
