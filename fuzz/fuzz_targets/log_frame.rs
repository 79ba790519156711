#![no_main]
//! One log frame slot: decoding never panics, a decoded frame is
//! well-formed and re-encodes to the fields it was read from, and the scan
//! accepts it where it follows the log. Byte 0 bit 0 fixes the frame's CRC.

use cairn_store::decoders::{self, LogPosition};
use libfuzzer_sys::fuzz_target;

#[path = "crc.rs"]
mod crc;

fuzz_target!(|data: &[u8]| {
    let Some((&control, rest)) = data.split_first() else {
        return;
    };
    let mut slot = [0u8; 32];
    slot[..rest.len().min(32)].copy_from_slice(&rest[..rest.len().min(32)]);
    if control & 1 != 0 {
        crc::fix(&mut slot, 0..28, 28);
    }
    let Some(frame) = decoders::frame(&slot) else {
        return;
    };
    assert!(frame.count > 0 && frame.seq > 0 && frame.end >= u64::from(frame.count));
    let encoded = decoders::encode_frame(&frame);
    // Every byte is a field (24..28 the chain's previous CRC) or the CRC.
    assert_eq!(encoded, slot, "frame fields re-encode differently");
    assert_eq!(decoders::frame(&encoded), Some(frame));
    let start = frame.end - u64::from(frame.count);
    let position = LogPosition {
        file: 0,
        slot: 1,
        seq: frame.seq,
    };
    assert!(decoders::frame_follows(
        &frame, position, start, 0, frame.end
    ));
    assert!(!decoders::frame_follows(
        &frame,
        LogPosition {
            seq: frame.seq.wrapping_add(1),
            ..position
        },
        start,
        0,
        frame.end
    ));
});
