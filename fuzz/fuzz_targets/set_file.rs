#![no_main]
//! `nullifiers.set`, built from the input so that most of it is well
//! formed: a header (fields from the input), then all 4096 shards, the
//! ones the input describes with its bytes and the rest empty, with every
//! CRC and the body length right unless the input says otherwise. Both
//! layouts: version 2 (occupancy bitmap and the slots in use, the tag hash
//! named in the header) and version 1 (every slot). Open never panics, and
//! a file it accepts covers at most the recovered leaves and holds exactly
//! one value per covered leaf.

use cairn_db::decoders::{self, SET_HEADER_LEN, SET_SHARDS};
use libfuzzer_sys::fuzz_target;

/// Reads fuzz input front to back, zeros past its end.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        let take = N.min(self.0.len());
        out[..take].copy_from_slice(&self.0[..take]);
        self.0 = &self.0[take..];
        out
    }

    fn u8(&mut self) -> u8 {
        self.bytes::<1>()[0]
    }

    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.bytes())
    }
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let control = input.u8();
    let store_id: u64 = 7;
    // Small sizes, so indices in the slots can fall below them.
    let covered = input.u64() % 4096;
    let size = input.u64() % 8192;
    let floor = (control & 4 != 0).then(|| input.u64() % 8192);
    let key = input.bytes::<16>();

    let mut shards: Vec<(u32, u32, Vec<u64>)> = vec![(0, 0, Vec::new()); SET_SHARDS];
    let described = input.u8() % 8;
    for _ in 0..described {
        let shard = usize::from(u16::from_le_bytes(input.bytes())) % SET_SHARDS;
        let capacity = u32::from(input.u8() % 40);
        let count = u32::from(input.u8() % 40);
        let slots = (0..capacity).map(|_| input.u64()).collect();
        shards[shard] = (capacity, count, slots);
    }

    let mut body = Vec::new();
    // Version 1 when the input asks; else 2, with a bitmap that marks the
    // non-zero slots (or, when the input asks, its own words).
    let version_1 = control & 16 != 0;
    let own_bitmap = control & 32 != 0;
    for (index, (capacity, count, slots)) in shards.iter().enumerate() {
        let start = body.len();
        let count = if version_1 || own_bitmap {
            *count
        } else {
            slots.iter().filter(|&&s| s != 0).count() as u32
        };
        body.extend_from_slice(&capacity.to_le_bytes());
        body.extend_from_slice(&count.to_le_bytes());
        if version_1 {
            for slot in slots {
                body.extend_from_slice(&slot.to_le_bytes());
            }
        } else {
            for chunk in slots.chunks(64) {
                let word = if own_bitmap {
                    input.u64()
                } else {
                    chunk
                        .iter()
                        .enumerate()
                        .fold(0u64, |w, (bit, &s)| w | (u64::from(s != 0) << bit))
                };
                body.extend_from_slice(&word.to_le_bytes());
            }
            for slot in slots.iter().filter(|&&s| s != 0) {
                body.extend_from_slice(&slot.to_le_bytes());
            }
        }
        let mut crc = crc32c::crc32c(&body[start..]);
        if control & 8 != 0 && index == usize::from(control >> 4) {
            crc ^= 1;
        }
        body.extend_from_slice(&crc.to_le_bytes());
    }
    let mut header = vec![0u8; SET_HEADER_LEN];
    header[0..8].copy_from_slice(b"CAIRNSET");
    if version_1 {
        header[8..12].copy_from_slice(&1u32.to_le_bytes());
        header[12..16].copy_from_slice(&12u32.to_le_bytes());
    } else {
        header[8..12].copy_from_slice(&2u32.to_le_bytes());
        header[12] = 12;
        // Tag hash 1 (SipHash-1-3) or 2 (folded multiply); other ids too.
        header[13] = control >> 6;
    }
    header[16..24].copy_from_slice(&store_id.to_le_bytes());
    header[24..32].copy_from_slice(&covered.to_le_bytes());
    header[32..48].copy_from_slice(&key);
    let body_len = body.len() as u64 + u64::from(control & 1);
    header[48..56].copy_from_slice(&body_len.to_le_bytes());
    if control & 2 == 0 {
        let crc = crc32c::crc32c(&header[..56]);
        header[56..60].copy_from_slice(&crc.to_le_bytes());
    }
    header.extend_from_slice(&body);

    if let Ok(set) = decoders::set_file(header, store_id, size, floor) {
        assert!(set.covered <= size);
        assert!(set.covered <= covered);
        assert_eq!(set.values, set.covered, "one value per covered leaf");
    }
});
