#![no_main]
//! `blocks.journal`, the block journal of a database of several trees.
//! Byte 0 picks the input's shape: raw bytes (bit 0 clear), or (bit 0
//! set) a journal built from the input, a valid header and frames whose
//! checksums and chain are right unless the input says otherwise (a
//! flipped chain value, a flipped sum, a frame cut short, trailing bytes
//! or zeros), so that the scan's judgement of a torn tail against damage
//! is reached. Decoding never panics; what it accepts is exactly the
//! encoding of the frames it returns (checked inside the decoder); a
//! journal built whole is accepted whole.

use cairn_db::decoders::{self, JournalRecord};
use libfuzzer_sys::fuzz_target;

/// Reads fuzz input front to back, zeros past its end.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn u8(&mut self) -> u8 {
        let Some((&first, rest)) = self.0.split_first() else {
            return 0;
        };
        self.0 = rest;
        first
    }

    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(std::array::from_fn(|_| self.u8()))
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&control, rest)) = data.split_first() else {
        return;
    };
    if control & 1 == 0 {
        let _ = decoders::forest_journal(rest);
        return;
    }
    let mut input = Input(rest);
    let first_seq = input.u64() % 1000;
    let trees = usize::from(input.u8() % 5);
    let base: Vec<u64> = (0..trees).map(|_| u64::from(input.u8())).collect();
    let blocks: Vec<(u64, u8, Vec<(u32, u64)>)> = (0..input.u8() % 4)
        .map(|_| {
            let number = u64::from(input.u8());
            let hash = input.u8();
            let sizes = (0..input.u8() % 3)
                .map(|_| (u32::from(input.u8() % 5), u64::from(input.u8())))
                .collect();
            (number, hash, sizes)
        })
        .collect();
    let (mut bytes, mut prev) = decoders::encode_journal_header(first_seq, &base, &blocks);
    let mut seq = first_seq;
    let mut whole = true;
    let mut frames = 0;
    while !input.is_empty() && frames < 16 {
        let kind = input.u8();
        let record = match kind % 3 {
            0 => JournalRecord::Append {
                block: (kind & 4 != 0).then(|| (u64::from(input.u8()), input.u8())),
                parts: (0..input.u8() % 3)
                    .map(|_| {
                        let tree = u32::from(input.u8() % 5);
                        let before = u64::from(input.u8());
                        let values = (0..input.u8() % 3).map(|_| [input.u8(); 32]).collect();
                        (tree, before, values)
                    })
                    .collect(),
            },
            1 => JournalRecord::Rollback(u64::from(input.u8())),
            _ => JournalRecord::Finalize(u64::from(input.u8())),
        };
        let (mut frame, crc) = decoders::encode_journal_frame(seq, prev, &record);
        // Damage the input may ask for: a flipped byte anywhere in the
        // frame, or the frame cut short (the torn tail of a crash).
        if kind & 8 != 0 {
            let at = usize::from(input.u8()) % frame.len();
            frame[at] ^= input.u8() | 1;
            whole = false;
        }
        if kind & 16 != 0 {
            let keep = usize::from(input.u8()) % frame.len();
            frame.truncate(keep);
            whole = false;
        }
        bytes.extend_from_slice(&frame);
        prev = crc;
        seq += 1;
        frames += 1;
    }
    if control & 2 != 0 {
        // Zeros after the last frame: a preallocated or torn tail.
        bytes.resize(bytes.len() + usize::from(control >> 2), 0);
    }
    let result = decoders::forest_journal(&bytes);
    if whole {
        let journal = result.expect("a journal built whole is accepted");
        assert_eq!(journal.frames, frames, "every frame built is accepted");
        assert_eq!(journal.next_seq, first_seq + frames as u64);
        assert_eq!(journal.base, base);
    }
});
