#![no_main]
//! The `checkpoint` file: decoding never panics, what decodes is in range,
//! and a checkpoint of version 2 or 3 re-encodes to exactly its bytes
//! (version 1 converts to version 2, which reads back the same). Byte 0:
//! bit 0 fixes the trailing CRC, bit 1 takes the store id from the bytes
//! (so the id check passes).

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
    let Ok(checkpoint) = decoders::checkpoint(&bytes, store_id) else {
        return;
    };
    assert!(checkpoint.finalized <= checkpoint.size);
    assert!(checkpoint.levels.len() <= 65);
    let encoded = decoders::encode_checkpoint(&checkpoint, store_id);
    let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if version >= 2 {
        assert_eq!(encoded, bytes, "a checkpoint re-encodes to its bytes");
    }
    assert_eq!(decoders::checkpoint(&encoded, store_id), Ok(checkpoint));
});
