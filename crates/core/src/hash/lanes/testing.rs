//! Test helpers shared by the lane kernels' byte-identity tests.

/// Deterministic pseudo-random children (xorshift).
pub(crate) fn random_children(n: usize, seed: u64) -> Vec<[u8; 32]> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            let mut child = [0u8; 32];
            for chunk in child.chunks_exact_mut(8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                chunk.copy_from_slice(&x.to_le_bytes());
            }
            child
        })
        .collect()
}

/// The parents of `children` in groups of `group`, one `digest` call each.
pub(crate) fn reference(
    children: &[[u8; 32]],
    group: usize,
    digest: impl Fn(&[u8]) -> [u8; 32],
) -> Vec<[u8; 32]> {
    children
        .chunks_exact(group)
        .map(|kids| digest(kids.as_flattened()))
        .collect()
}

/// `hash_groups` equals `digest` per group for every group size 2..=16 and
/// every count 0..=40, on random, all-zero and all-0xff children.
pub(crate) fn check_groups(
    label: &str,
    digest: impl Fn(&[u8]) -> [u8; 32],
    hash_groups: impl Fn(&[[u8; 32]], usize, &mut [[u8; 32]]),
) {
    for group in 2..=16 {
        for count in 0..=40 {
            let n = count * group;
            let inputs = [
                random_children(n, (group * 1000 + count) as u64),
                vec![[0u8; 32]; n],
                vec![[0xffu8; 32]; n],
            ];
            for children in &inputs {
                let mut out = vec![[0x5au8; 32]; count];
                hash_groups(children, group, &mut out);
                assert_eq!(
                    out,
                    reference(children, group, &digest),
                    "{label}, group {group}, count {count}"
                );
            }
        }
    }
}
