//! Sums files `levels/level-NN.sums` (docs/file-format.md, "Sums"): the
//! CRC-32C of every whole 4 KiB page (128 nodes) of a level's final
//! nodes, level 0 (the leaves in the log files) included, so that what
//! open maps or reads is checked before it is trusted.

use cairn_core::cast::to_usize;

use super::bytes::{array, crc_holds, put, put_crc, put_u32, put_u64, u16_at, u32_at, u64_at};
use super::{Malformed, StoreMeta};

pub(crate) const SUMS_MAGIC: &[u8; 8] = b"CAIRNSUM";
/// The sums file version.
pub const SUMS_VERSION: u32 = 1;
/// Bytes of a sums file's header.
pub const SUMS_HEADER_LEN: u64 = 64;
/// Nodes per page: one sum covers 4 KiB of nodes.
pub const PAGE_NODES: u64 = 128;
/// Bytes of one sum.
pub const SUM_LEN: u64 = 4;

const HEADER: usize = to_usize(SUMS_HEADER_LEN);

const _: () = assert!(PAGE_NODES * 32 == 4096);
// A log file holds whole pages (at least 2^10 leaves), so no page of
// level 0 spans two log files; a 2 MiB segment is whole pages.
const _: () = assert!((1u64 << 10).is_multiple_of(PAGE_NODES));
const _: () = assert!((cairn_core::level::SEGMENT_LEN as u64).is_multiple_of(PAGE_NODES));

/// The header of the sums file of `level`.
pub(crate) fn sums_header(meta: &StoreMeta, level: u32) -> [u8; HEADER] {
    let mut b = [0u8; HEADER];
    put::<0, 8, HEADER>(&mut b, *SUMS_MAGIC);
    put_u32::<8, HEADER>(&mut b, SUMS_VERSION);
    put::<12, 2, HEADER>(
        &mut b,
        u16::try_from(level)
            .expect("a level number below MAX_LEVELS")
            .to_le_bytes(),
    );
    put_u64::<16, HEADER>(&mut b, meta.store_id);
    put_crc::<24, HEADER>(&mut b);
    b
}

/// Checks a sums file's header.
pub(crate) fn check_sums_header(
    meta: &StoreMeta,
    level: u32,
    b: &[u8; HEADER],
) -> Result<(), Malformed> {
    if array::<0, 8, HEADER>(b) != *SUMS_MAGIC {
        return Err(Malformed::Magic);
    }
    let version = u32_at::<8, HEADER>(b);
    if version != SUMS_VERSION {
        return Err(Malformed::Version(version));
    }
    if !crc_holds::<24, HEADER>(b) {
        return Err(Malformed::Crc);
    }
    if *b != sums_header(meta, level) {
        return Err(Malformed::Field(format!(
            "header is for store {:#x} level {}, want store {:#x} level {level}",
            u64_at::<16, HEADER>(b),
            u16_at::<12, HEADER>(b),
            meta.store_id
        )));
    }
    Ok(())
}

/// The byte offset of page `page`'s sum.
pub const fn sum_offset(page: u64) -> u64 {
    SUMS_HEADER_LEN + SUM_LEN * page
}

/// `levels/level-NN.sums`
pub(crate) fn sums_name(level: u32) -> String {
    format!("level-{level:02}.sums")
}

/// The level of a sums file name (0..=64).
pub(crate) fn parse_sums_name(name: &str) -> Option<u32> {
    let digits = name.strip_prefix("level-")?.strip_suffix(".sums")?;
    (digits.len() == 2 && digits.bytes().all(|c| c.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
        .filter(|&level| level < cairn_core::cast::level_number(super::MAX_LEVELS))
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used)]
mod tests {
    use cairn_core::{Arity, HashKind, TreeConfig};

    use super::*;

    #[test]
    fn headers_and_names_check_what_they_say() {
        let meta = StoreMeta {
            tree: TreeConfig::new(Arity::new(4).unwrap(), HashKind::Blake3),
            log_shift: 12,
            store_id: 5,
            flags: 0,
            mutable: None,
        };
        let header = sums_header(&meta, 3);
        assert_eq!(check_sums_header(&meta, 3, &header), Ok(()));
        assert!(check_sums_header(&meta, 2, &header).is_err());
        for bit in 0..HEADER * 8 {
            let mut bad = header;
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(check_sums_header(&meta, 3, &bad).is_err(), "bit {bit}");
        }
        assert_eq!(parse_sums_name(&sums_name(0)), Some(0));
        assert_eq!(parse_sums_name(&sums_name(64)), Some(64));
        assert_eq!(parse_sums_name("level-65.sums"), None);
        assert_eq!(parse_sums_name("level-1.sums"), None);
        assert_eq!(sum_offset(3), 76);
    }
}
