#![no_main]
//! The verified record: decoding never panics, and a record that decodes
//! re-encodes to exactly its bytes. Byte 0: bit 0 fixes the trailing CRC,
//! bit 1 takes the store id from the bytes (so the id check passes).

use cairn_store::decoders;
use libfuzzer_sys::fuzz_target;

#[path = "crc.rs"]
mod crc;

fuzz_target!(|data: &[u8]| {
    let Some((&control, rest)) = data.split_first() else {
        return;
    };
    let mut bytes = rest.to_vec();
    if control & 1 != 0 && bytes.len() >= 4 {
        let body = bytes.len() - 4;
        crc::fix(&mut bytes, 0..body, body);
    }
    let store_id = if control & 2 != 0 && bytes.len() >= 24 {
        u64::from_le_bytes(bytes[16..24].try_into().expect("8 bytes"))
    } else {
        0x5eed
    };
    let Ok(entries) = decoders::verified(&bytes, store_id) else {
        return;
    };
    assert_eq!(decoders::encode_verified(store_id, &entries), bytes);
});
