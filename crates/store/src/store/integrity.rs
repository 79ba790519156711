//! Verification of stored nodes against their sums: every whole 4 KiB
//! page of a level's final nodes (level 0 is the leaves in the log files)
//! against its CRC-32C in the level's sums file, and the partial last page
//! against the CRC the checkpoint holds. Run at open on what the tree is
//! built from (mapped segments included) before any of it is trusted; a
//! mismatch is a typed corruption naming the file and offset of the page.

use std::path::Path;

use cairn_core::cast::{level_number, to_usize};
use cairn_core::level::Level;
use rayon::prelude::*;

use super::verified::Trust;
use crate::checkpoint::page_crc;
use crate::error::{Result, StoreError};
use crate::format::{
    self, PAGE_NODES, SUM_LEN, SUMS_HEADER_LEN, StoreMeta, VerifiedFile, sum_offset,
};
use crate::fs::{Fs, FsFile, OpenMode};
use crate::layout::Layout;

/// The sums file of `level`, opened (an error if it is missing).
fn open_sums(fs: &dyn Fs, layout: &Layout, level: u32, pages: u64) -> Result<Box<dyn FsFile>> {
    let path = layout.sums_file(level);
    fs.open(&path, OpenMode::ReadOnly)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => StoreError::corrupt(
                &path,
                0,
                format!("missing, but the checkpoint says level {level} has {pages} whole pages"),
            ),
            _ => StoreError::io("open", &path, e),
        })
}

/// The sums of whole pages `0..pages` of `level`, read from its sums file
/// (whose header is checked).
fn read_sums(
    file: &dyn FsFile,
    layout: &Layout,
    meta: &StoreMeta,
    level: u32,
    pages: u64,
) -> Result<Vec<u32>> {
    let path = layout.sums_file(level);
    let mut header = [0u8; to_usize(SUMS_HEADER_LEN)];
    file.read_exact_at(&mut header, 0)
        .map_err(|e| StoreError::corrupt(&path, 0, format!("header: {e}")))?;
    format::check_sums_header(meta, level, &header)
        .map_err(|why| StoreError::corrupt(&path, 0, why))?;
    let mut bytes = vec![0u8; to_usize(pages * SUM_LEN)];
    file.read_exact_at(&mut bytes, SUMS_HEADER_LEN)
        .map_err(|e| {
            StoreError::corrupt(
                &path,
                sum_offset(0),
                format!("the sums of {pages} pages of level {level}: {e}"),
            )
        })?;
    Ok(bytes
        .chunks_exact(to_usize(SUM_LEN))
        .map(|sum| u32::from_le_bytes(sum.try_into().expect("4 bytes")))
        .collect())
}

/// One level as loaded at open, to check against its sums.
pub(crate) struct LevelCheck<'a> {
    pub level: usize,
    /// Its nodes as loaded (mapped or read).
    pub nodes: &'a Level,
    /// Its final nodes (those in files).
    pub final_len: u64,
    /// The checkpoint's CRC of its partial last page.
    pub partial: u32,
    /// Whether the verified record vouches for the data of whole page `p`
    /// (its file unchanged since the record, which covers the page).
    pub data_vouched: &'a (dyn Fn(u64) -> bool + Sync),
}

/// Checks the final nodes `0..final_len` of a level as loaded against the
/// level's sums and the checkpoint's CRC of the partial last page. A whole
/// page the verified record vouches for (its data and its sum unchanged
/// since) is not read. The first damaged page (lowest index) is reported.
/// Returns the whole pages read and checked, and those vouched for.
pub(crate) fn verify_level(
    fs: &dyn Fs,
    layout: &Layout,
    meta: &StoreMeta,
    check: LevelCheck<'_>,
    trust: &Trust,
) -> Result<(u64, u64)> {
    let LevelCheck {
        level,
        nodes,
        final_len,
        partial,
        data_vouched,
    } = check;
    let level = level_number(level);
    let pages = final_len / PAGE_NODES;
    let mut sums = Vec::new();
    let mut vouched_pages = 0;
    if pages > 0 {
        // Not found (or not readable): nothing vouched for; the open
        // that reads the sums below reports why.
        let identity = fs.identity_of(&layout.sums_file(level)).ok();
        let vouched = trust.verified(VerifiedFile::Sums(level), identity);
        let untrusted: Vec<u64> = (0..pages)
            .filter(|&page| page >= vouched || !data_vouched(page))
            .collect();
        vouched_pages = pages - untrusted.len() as u64;
        // Nothing to read: no sums, and no thread woken.
        let bad = if untrusted.is_empty() {
            None
        } else {
            let file = open_sums(fs, layout, level, pages)?;
            sums = read_sums(&*file, layout, meta, level, pages)?;
            untrusted
                .into_par_iter()
                .map(|page| {
                    (
                        page,
                        page_crc(nodes, page * PAGE_NODES, (page + 1) * PAGE_NODES),
                    )
                })
                .find_first(|&(page, crc)| sums.get(to_usize(page)) != Some(&crc))
        };
        if let Some((page, crc)) = bad {
            let want = sums.get(to_usize(page)).copied().unwrap_or_default();
            let (file, offset) = layout.node_location(level, page * PAGE_NODES);
            return Err(damaged(
                &file,
                offset,
                level,
                (page * PAGE_NODES, (page + 1) * PAGE_NODES),
                crc,
                format!(
                    "{} says {want:#010x} at offset {}",
                    layout.sums_file(level).display(),
                    sum_offset(page)
                ),
            ));
        }
    }
    let first = pages * PAGE_NODES;
    let crc = page_crc(nodes, first, final_len);
    if crc != partial {
        let (file, offset) = layout.node_location(level, first);
        return Err(damaged(
            &file,
            offset,
            level,
            (first, final_len),
            crc,
            format!("the checkpoint says {partial:#010x}"),
        ));
    }
    Ok((pages - vouched_pages, vouched_pages))
}

fn damaged(
    file: &Path,
    offset: u64,
    level: u32,
    (first, end): (u64, u64),
    crc: u32,
    want: String,
) -> StoreError {
    StoreError::corrupt(
        file,
        offset,
        format!(
            "nodes {first}..{end} of level {level} have CRC {crc:#010x}, {want}: the nodes or their sum are damaged"
        ),
    )
}
