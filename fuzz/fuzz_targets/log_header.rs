#![no_main]
//! A log file's 4 KiB header page: the header proper, the two tail records
//! and the successor mark. Decoding never panics; a record that decodes is
//! exactly the encoding of what it decoded to. Byte 0: bit 0 fixes the
//! header's CRC, bit 1 the tail records', bit 2 the mark's; bits 3..7 the
//! file number.

use cairn_core::{Arity, HashKind, TreeConfig};
use cairn_store::decoders::{self, StoreMeta};
use libfuzzer_sys::fuzz_target;

#[path = "crc.rs"]
mod crc;

fuzz_target!(|data: &[u8]| {
    let Some((&control, rest)) = data.split_first() else {
        return;
    };
    let mut page = [0u8; 4096];
    page[..rest.len().min(4096)].copy_from_slice(&rest[..rest.len().min(4096)]);
    if control & 1 != 0 {
        crc::fix(&mut page, 0..48, 48);
    }
    if control & 2 != 0 {
        crc::fix(&mut page, 512..584, 584);
        crc::fix(&mut page, 1024..1096, 1096);
    }
    if control & 4 != 0 {
        crc::fix(&mut page, 1536..1560, 1560);
    }
    let file = u64::from(control >> 3);
    let meta = StoreMeta {
        tree: TreeConfig::new(Arity::new(4).expect("arity"), HashKind::Blake3),
        log_shift: 20,
        store_id: u64::from_le_bytes(page[16..24].try_into().expect("8 bytes")),
        flags: 0,
        mutable: None,
    };
    let Ok(header) = decoders::log_header(&meta, file, &page) else {
        return;
    };
    assert!(header.version == 1 || header.version == 2);
    if header.version == 1 {
        assert_eq!(header.tails, [None, None]);
        assert_eq!(header.successor, None);
    }
    for (tail, at) in header.tails.iter().zip([512usize, 1024]) {
        if let Some(tail) = tail {
            assert!(tail.counter > 0);
            assert_eq!(decoders::encode_tail_record(tail), page[at..at + 80]);
        }
    }
    if let Some(mark) = header.successor {
        assert_eq!(mark.next, file + 1);
        assert_eq!(mark.encode(meta.store_id), page[1536..1568]);
    }
});
