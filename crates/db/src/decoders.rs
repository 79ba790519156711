//! The decoder of the database's own file, `nullifiers.set`, for the fuzz
//! targets in `fuzz/`. Hidden from the docs: this is not an API. It takes
//! the file's bytes and answers what open concludes from them; it must not
//! panic on any input.

use std::path::Path;

use cairn_store::decoders::BytesFile;

use crate::set::file;

/// Bytes of the set file's header.
pub const SET_HEADER_LEN: usize = file::HEADER_LEN;
/// Shards in a set file.
pub const SET_SHARDS: usize = 1 << crate::set::SHARD_BITS;

/// What open keeps of a valid set file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetFile {
    /// Leaves `0..covered` are in the set (after the rollback floor).
    pub covered: u64,
    /// Values the loaded set holds.
    pub values: u64,
}

/// Reads `bytes` as the set file of store `store_id` whose log recovered
/// `size` leaves, with the store's rollback floor `floor`.
pub fn set_file(
    bytes: Vec<u8>,
    store_id: u64,
    size: u64,
    floor: Option<u64>,
) -> Result<SetFile, String> {
    let loaded = file::read_from(
        Some(Box::new(BytesFile(bytes))),
        Path::new("fuzz"),
        store_id,
        size,
        floor,
    )
    .map_err(|e| e.to_string())?
    .expect("a file was given");
    Ok(SetFile {
        covered: loaded.covered,
        values: loaded.set.len(),
    })
}
