#![no_main]
//! The `heads` file: its header and every 128-byte record slot after it.
//! Decoding never panics, and a slot that decodes is exactly the encoding
//! of what it decoded to (every byte is a field, zero or the CRC), in the
//! version the header names (both versions when it names none). Byte 0:
//! bit 0 fixes the header's CRC, bit 1 every record's.

use cairn_core::{Arity, HashKind, TreeConfig};
use cairn_store::decoders::{self, StoreMeta};
use libfuzzer_sys::fuzz_target;

#[path = "crc.rs"]
mod crc;

fuzz_target!(|data: &[u8]| {
    let Some((&control, rest)) = data.split_first() else {
        return;
    };
    let mut bytes = rest.to_vec();
    if control & 1 != 0 {
        crc::fix(&mut bytes, 0..24, 24);
    }
    let store_id = if bytes.len() >= 24 {
        u64::from_le_bytes(bytes[16..24].try_into().expect("8 bytes"))
    } else {
        1
    };
    let meta = StoreMeta {
        tree: TreeConfig::new(Arity::new(4).expect("arity"), HashKind::Blake3),
        log_shift: 20,
        store_id,
        flags: 0,
        mutable: None,
    };
    let header = decoders::heads_header(&meta, &bytes[..bytes.len().min(64)]);
    if let Ok(version) = header {
        assert!(bytes.len() >= 64 && (version == 1 || version == 2));
    }
    let versions = match header {
        Ok(version) => vec![version],
        Err(_) => vec![1, 2],
    };
    for slot in bytes.get(64..).unwrap_or_default().chunks(128) {
        for &version in &versions {
            let mut slot = slot.to_vec();
            if control & 2 != 0 {
                let body = if version == 2 { 120 } else { 96 };
                crc::fix(&mut slot, 0..body, body);
            }
            for empty_has_root in [false, true] {
                if let Some(record) = decoders::head_record(&slot, version, empty_has_root) {
                    assert_eq!(record.root.is_some(), record.size > 0 || empty_has_root);
                    assert_eq!(record.durable.is_some(), version == 2);
                    assert_eq!(decoders::encode_head_record(&record), slot);
                }
            }
        }
    }
});
