//! Fuzz inputs rarely carry a valid CRC-32C: the targets recompute it
//! (when the input asks) so the decoders' checks behind it are reached.

use std::ops::Range;

/// Writes the CRC-32C of `bytes[body]` at `at` (little-endian), if it fits.
#[allow(dead_code)]
pub fn fix(bytes: &mut [u8], body: Range<usize>, at: usize) {
    if bytes.len() >= at + 4 && body.end <= bytes.len() {
        let crc = crc32c::crc32c(&bytes[body]);
        bytes[at..at + 4].copy_from_slice(&crc.to_le_bytes());
    }
}
