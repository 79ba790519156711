//! Little-endian fields of fixed-size records at offsets the compiler
//! checks: every offset is a constant asserted to lie inside the record, so
//! a decoder that reads through these helpers cannot index out of bounds.

/// `LEN` bytes at `AT` of `b`.
pub(crate) fn array<const AT: usize, const LEN: usize, const N: usize>(b: &[u8; N]) -> [u8; LEN] {
    const { assert!(AT + LEN <= N) };
    let mut out = [0u8; LEN];
    for (to, from) in out.iter_mut().zip(b.iter().skip(AT)) {
        *to = *from;
    }
    out
}

/// Writes `value` at `AT` of `b`.
pub(crate) fn put<const AT: usize, const LEN: usize, const N: usize>(
    b: &mut [u8; N],
    value: [u8; LEN],
) {
    const { assert!(AT + LEN <= N) };
    for (to, from) in b.iter_mut().skip(AT).zip(value) {
        *to = from;
    }
}

pub(crate) fn u16_at<const AT: usize, const N: usize>(b: &[u8; N]) -> u16 {
    u16::from_le_bytes(array::<AT, 2, N>(b))
}

pub(crate) fn u32_at<const AT: usize, const N: usize>(b: &[u8; N]) -> u32 {
    u32::from_le_bytes(array::<AT, 4, N>(b))
}

pub(crate) fn u64_at<const AT: usize, const N: usize>(b: &[u8; N]) -> u64 {
    u64::from_le_bytes(array::<AT, 8, N>(b))
}

pub(crate) fn put_u32<const AT: usize, const N: usize>(b: &mut [u8; N], value: u32) {
    put::<AT, 4, N>(b, value.to_le_bytes());
}

pub(crate) fn put_u64<const AT: usize, const N: usize>(b: &mut [u8; N], value: u64) {
    put::<AT, 8, N>(b, value.to_le_bytes());
}

/// The first `BODY` bytes of `b`.
pub(crate) fn body<const BODY: usize, const N: usize>(b: &[u8; N]) -> &[u8] {
    const { assert!(BODY <= N) };
    b.first_chunk::<BODY>()
        .map_or(&[][..], |body| body.as_slice())
}

/// Whether the CRC-32C stored at `BODY` covers bytes `0..BODY`.
pub(crate) fn crc_holds<const BODY: usize, const N: usize>(b: &[u8; N]) -> bool {
    crc32c::crc32c(body::<BODY, N>(b)) == u32_at::<BODY, N>(b)
}

/// Stores at `BODY` the CRC-32C of bytes `0..BODY`.
pub(crate) fn put_crc<const BODY: usize, const N: usize>(b: &mut [u8; N]) {
    let crc = crc32c::crc32c(body::<BODY, N>(b));
    put_u32::<BODY, N>(b, crc);
}

/// Whether bytes `FROM..TO` of `b` are all zero.
pub(crate) fn zero<const FROM: usize, const TO: usize, const N: usize>(b: &[u8; N]) -> bool {
    const { assert!(FROM <= TO && TO <= N) };
    b.iter().skip(FROM).take(TO - FROM).all(|&x| x == 0)
}

/// `b` as an array of `N` bytes, if it has exactly that length.
pub(crate) fn exact<const N: usize>(b: &[u8]) -> Option<&[u8; N]> {
    b.try_into().ok()
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_back_what_was_written() {
        let mut b = [0u8; 16];
        put_u64::<4, 16>(&mut b, 0x0102_0304_0506_0708);
        assert_eq!(u64_at::<4, 16>(&b), 0x0102_0304_0506_0708);
        assert_eq!(u32_at::<4, 16>(&b), 0x0506_0708);
        assert_eq!(u16_at::<10, 16>(&b), 0x0102);
        assert!(zero::<0, 4, 16>(&b) && !zero::<0, 5, 16>(&b));
        put_crc::<12, 16>(&mut b);
        assert!(crc_holds::<12, 16>(&b));
        b[0] ^= 1;
        assert!(!crc_holds::<12, 16>(&b));
        assert!(exact::<16>(&b).is_some() && exact::<15>(&b).is_none());
    }
}
