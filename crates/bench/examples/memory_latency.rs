//! The latency of one dependent random memory read on this machine: a
//! pointer chase over a random cycle, in 4 KiB-page heap memory and in an
//! anonymous mapping advised for 2 MiB (transparent huge) pages. This is
//! the floor under a nullifier-set lookup (one read for an absent value,
//! two for a present one: the slot, then the leaf) quoted in
//! `docs/performance.md`.
//!
//! Run: `cargo run --release -p cairn-bench --example memory_latency -- [MIB...]`
//! (default: 128 1024).

use std::time::Instant;

/// Memory read and written as u64 words.
trait Words {
    fn len(&self) -> usize;
    fn get(&self, i: usize) -> u64;
    fn set(&mut self, i: usize, value: u64);
}

impl Words for Vec<u64> {
    fn len(&self) -> usize {
        self.as_slice().len()
    }
    fn get(&self, i: usize) -> u64 {
        self[i]
    }
    fn set(&mut self, i: usize, value: u64) {
        self[i] = value;
    }
}

/// A mapping as little-endian words (safe reads of its bytes).
impl Words for memmap2::MmapMut {
    fn len(&self) -> usize {
        self.as_ref().len() / 8
    }
    fn get(&self, i: usize) -> u64 {
        u64::from_le_bytes(self[i * 8..i * 8 + 8].try_into().expect("8 bytes"))
    }
    fn set(&mut self, i: usize, value: u64) {
        self[i * 8..i * 8 + 8].copy_from_slice(&value.to_le_bytes());
    }
}

/// Nanoseconds per dependent read: `words` becomes one random cycle through
/// every index (Sattolo's shuffle), then is followed for 2M steps.
fn chase(words: &mut impl Words) -> f64 {
    let len = words.len();
    for i in 0..len {
        words.set(i, i as u64);
    }
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for i in (1..len).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let j = (state % i as u64) as usize;
        let (a, b) = (words.get(i), words.get(j));
        words.set(i, b);
        words.set(j, a);
    }
    let steps = 2_000_000;
    let mut at = 0usize;
    let began = Instant::now();
    for _ in 0..steps {
        at = words.get(at) as usize;
    }
    std::hint::black_box(at);
    began.elapsed().as_nanos() as f64 / steps as f64
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("sizes in MiB"))
        .collect();
    let sizes = if sizes.is_empty() {
        vec![128, 1024]
    } else {
        sizes
    };
    for mib in sizes {
        let small = chase(&mut vec![0u64; (mib << 20) / 8]);
        let mut map = memmap2::MmapMut::map_anon(mib << 20).expect("anonymous mapping");
        #[cfg(target_os = "linux")]
        let _ = map.advise(memmap2::Advice::HugePage);
        let huge = chase(&mut map);
        println!(
            "{mib:>6} MiB: {small:>6.1} ns per dependent read (4 KiB pages), {huge:>6.1} ns (2 MiB pages advised)"
        );
    }
}
