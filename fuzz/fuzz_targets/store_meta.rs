#![no_main]
//! `cairn.meta`, then a log and a level file header of the store it
//! describes: decoding never panics, and what decodes is what the encoder
//! writes. The first byte steers the input past the CRCs (bit 0: fix the
//! meta's CRC; bit 1: the headers') so the fields behind them are explored.

use cairn_store::decoders::{self, StoreMeta};
use libfuzzer_sys::fuzz_target;

#[path = "crc.rs"]
mod crc;

fuzz_target!(|data: &[u8]| {
    let Some((&control, rest)) = data.split_first() else {
        return;
    };
    let mut meta_bytes = rest[..rest.len().min(StoreMeta::LEN)].to_vec();
    if control & 1 != 0 {
        crc::fix(&mut meta_bytes, 0..32, 32);
    }
    let Ok(meta) = decoders::meta(&meta_bytes) else {
        return;
    };
    // Every field lives in bytes 0..36 (36..40 are reserved and not read).
    let encoded = decoders::encode_meta(&meta);
    assert_eq!(
        encoded[..36],
        meta_bytes[..36],
        "meta re-encodes differently"
    );
    assert_eq!(decoders::meta(&encoded), Ok(meta));

    // The rest is a header page, checked as a log file's and a level file's.
    let mut header = [0u8; 4096];
    let tail = &rest[StoreMeta::LEN.min(rest.len())..];
    header[..tail.len().min(4096)].copy_from_slice(&tail[..tail.len().min(4096)]);
    let number = u64::from(control >> 2);
    let mut log = header;
    let mut level = header;
    if control & 2 != 0 {
        crc::fix(&mut log, 0..48, 48);
        crc::fix(&mut level, 0..24, 24);
    }
    if decoders::log_header(&meta, number, &log).is_ok() {
        // A valid header names this store and this file.
        assert_eq!(log[16..24], meta.store_id.to_le_bytes());
        assert_eq!(log[24..32], number.to_le_bytes());
    }
    if decoders::level_header(&meta, number as u32 + 1, &level).is_ok() {
        assert_eq!(level[16..24], meta.store_id.to_le_bytes());
    }
});
