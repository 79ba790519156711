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

use crate::checkpoint::page_crc;
use crate::error::{Result, StoreError};
use crate::format::{self, PAGE_NODES, SUM_LEN, SUMS_HEADER_LEN, StoreMeta, sum_offset};
use crate::fs::{Fs, OpenMode};
use crate::layout::Layout;

/// The sums of whole pages `0..pages` of `level`, read from its sums file
/// (whose header is checked).
fn read_sums(
    fs: &dyn Fs,
    layout: &Layout,
    meta: &StoreMeta,
    level: u32,
    pages: u64,
) -> Result<Vec<u32>> {
    let path = layout.sums_file(level);
    let file = fs
        .open(&path, OpenMode::ReadOnly)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => StoreError::corrupt(
                &path,
                0,
                format!("missing, but the checkpoint says level {level} has {pages} whole pages"),
            ),
            _ => StoreError::io("open", &path, e),
        })?;
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

/// Checks the final nodes `0..final_len` of `level` as loaded in `nodes`
/// against the level's sums and the checkpoint's CRC of the partial last
/// page (`partial`); pages in `trusted` are not read (the caller knows
/// them verified). The first damaged page (lowest index) is reported.
#[allow(clippy::too_many_arguments)]
pub(crate) fn verify_level(
    fs: &dyn Fs,
    layout: &Layout,
    meta: &StoreMeta,
    level: usize,
    nodes: &Level,
    final_len: u64,
    partial: u32,
    trusted: std::ops::Range<u64>,
) -> Result<()> {
    let level = level_number(level);
    let pages = final_len / PAGE_NODES;
    let sums = if pages > trusted.end.min(pages) - trusted.start.min(pages) {
        read_sums(fs, layout, meta, level, pages)?
    } else {
        Vec::new()
    };
    let bad = (0..pages)
        .into_par_iter()
        .filter(|page| !trusted.contains(page))
        .map(|page| {
            (
                page,
                page_crc(nodes, page * PAGE_NODES, (page + 1) * PAGE_NODES),
            )
        })
        .find_first(|&(page, crc)| sums.get(to_usize(page)) != Some(&crc));
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
    Ok(())
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
