//! Tests of [`super`]: every kernel against the `blake3` crate for every
//! group size, paths against the one-hash-at-a-time fold, and the refusals.

use super::*;

/// splitmix64 bytes, different for every seed.
fn pseudo_random_children(count: usize, seed: u64) -> Vec<[u8; 32]> {
    let mut state = seed;
    (0..count)
        .map(|_| {
            let mut child = [0u8; 32];
            for word in child.chunks_exact_mut(8) {
                word.copy_from_slice(&splitmix(&mut state).to_le_bytes());
            }
            child
        })
        .collect()
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn reference(children: &[[u8; 32]]) -> [u8; 32] {
    *::blake3::hash(children.as_flattened()).as_bytes()
}

/// `kernel` equals `blake3::hash` for every input length 64..=512 in
/// steps of 32 (2..=16 children), on 64 random inputs per length, on
/// all-zero and all-0xff ones, and read from every alignment mod 32.
fn check_one(kernel: SingleKernel) {
    for group in 2..=MAX_GROUP {
        let mut inputs = vec![vec![[0u8; 32]; group], vec![[0xffu8; 32]; group]];
        for seed in 0..64 {
            inputs.push(pseudo_random_children(group, (group as u64) << 32 | seed));
        }
        for (n, children) in inputs.iter().enumerate() {
            let want = reference(children);
            assert_eq!(
                hash_one_with(kernel, children),
                want,
                "kernel {} group {group} input {n}",
                kernel.name()
            );
            // The same bytes at every offset from an allocation's
            // alignment: the kernels make no alignment assumption.
            let mut bytes = vec![0u8; group * 32 + 32];
            for shift in 1..32 {
                bytes[shift..shift + group * 32].copy_from_slice(children.as_flattened());
                let shifted: Vec<[u8; 32]> = bytes[shift..shift + group * 32]
                    .chunks_exact(32)
                    .map(|c| c.try_into().expect("32 bytes"))
                    .collect();
                assert_eq!(hash_one_with(kernel, &shifted), want, "shift {shift}");
            }
        }
    }
}

#[test]
fn single_portable_matches_blake3() {
    check_one(SingleKernel::PORTABLE);
}

#[test]
fn single_sse41_matches_blake3() {
    // Nothing to check on a CPU without SSE4.1.
    if let Some(kernel) = SingleKernel::by_name("sse41") {
        check_one(kernel);
    }
}

#[test]
fn single_avx512_matches_blake3() {
    if let Some(kernel) = SingleKernel::by_name("avx512") {
        check_one(kernel);
    }
}

#[test]
fn hash_one_matches_blake3_with_the_detected_kernel() {
    for group in 2..=MAX_GROUP {
        for seed in 0..16 {
            let children = pseudo_random_children(group, 7000 + seed);
            assert_eq!(
                hash_one(&children),
                reference(&children),
                "{} group {group}",
                single_kernel_name()
            );
        }
    }
    assert!(["avx512", "blake3::hash"].contains(&single_kernel_name()));
}

#[test]
fn only_avx512_is_routed() {
    assert_eq!(SingleKernel::routed(), SingleKernel::by_name("avx512"));
    assert_eq!(
        single_kernel_name(),
        if SingleKernel::routed().is_some() {
            "avx512"
        } else {
            "blake3::hash"
        }
    );
}

#[test]
fn single_kernels_are_listed_fastest_first() {
    assert_eq!(
        SingleKernel::supported().last(),
        Some(&SingleKernel::PORTABLE)
    );
    assert_eq!(SingleKernel::detected(), SingleKernel::supported()[0]);
    for kernel in SingleKernel::supported() {
        assert_eq!(SingleKernel::by_name(kernel.name()), Some(*kernel));
    }
    assert_eq!(SingleKernel::by_name("neon-ish"), None);
}

#[test]
#[should_panic(expected = "a group has 2..=16 children, got 1")]
fn a_single_child_panics() {
    hash_one(&[[0u8; 32]]);
}

#[test]
#[should_panic(expected = "a group has 2..=16 children, got 17")]
fn seventeen_children_panic() {
    hash_one(&[[0u8; 32]; 17]);
}

#[test]
fn every_single_kernel_panics_outside_2_to_16_children() {
    for kernel in SingleKernel::supported() {
        for count in [0, 1, 17] {
            let children = vec![[1u8; 32]; count];
            let result = std::panic::catch_unwind(|| hash_one_with(*kernel, &children));
            assert!(result.is_err(), "kernel {} count {count}", kernel.name());
        }
    }
}

/// The root of `path` hashed one group at a time with `blake3::hash`,
/// written independently of `fold_path`.
fn path_reference(node: &[u8; 32], path: &[PathGroup], siblings: &[[u8; 32]]) -> [u8; 32] {
    let mut node = *node;
    let mut rest = siblings.iter();
    for group in path {
        let members: Vec<[u8; 32]> = (0..group.width)
            .map(|i| {
                if i == group.position {
                    node
                } else {
                    *rest.next().expect("enough siblings")
                }
            })
            .collect();
        node = reference(&members);
    }
    assert!(rest.next().is_none(), "every sibling used");
    node
}

fn check_path(kernel: SingleKernel, path: &[PathGroup], seed: u64) {
    let count = path.iter().map(|g| usize::from(g.width) - 1).sum();
    let siblings = pseudo_random_children(count, seed);
    let node = pseudo_random_children(1, !seed)[0];
    assert_eq!(
        hash_path_with(kernel, &node, path, &siblings),
        path_reference(&node, path, &siblings),
        "kernel {} path {path:?}",
        kernel.name()
    );
}

/// Every kernel's path equals hashing one group at a time with
/// `blake3::hash`: every (width, position) alone and under and over
/// other groups, random paths of every arity (prefixes of every length
/// on every level, so the prefix stream runs ahead, falls behind and
/// stalls), and paths longer than the stream's look-ahead.
fn check_paths(kernel: SingleKernel) {
    let mut seed = 1;
    let mut next = || {
        seed += 1;
        seed
    };
    for width in 2..=16u8 {
        for position in 0..width {
            let group = PathGroup { width, position };
            check_path(kernel, &[group], next());
            let high = PathGroup {
                width: 16,
                position: 15,
            };
            let low = PathGroup {
                width: 3,
                position: 0,
            };
            check_path(kernel, &[group, high, group], next());
            check_path(kernel, &[high, group, low, group, high], next());
        }
    }
    let mut state = 99u64;
    for arity in 2..=16u64 {
        for _ in 0..40 {
            let depth = (splitmix(&mut state) % 24) as usize;
            let path: Vec<PathGroup> = (0..depth)
                .map(|_| {
                    // Mostly full groups, like a tree's, some narrower.
                    let width = if splitmix(&mut state).is_multiple_of(4) {
                        2 + splitmix(&mut state) % (arity - 1)
                    } else {
                        arity
                    };
                    let position = splitmix(&mut state) % width;
                    PathGroup {
                        width: u8::try_from(width).unwrap(),
                        position: u8::try_from(position).unwrap(),
                    }
                })
                .collect();
            check_path(kernel, &path, next());
        }
    }
    // Longer than the look-ahead: every level's prefix long, or none.
    for group in [
        PathGroup {
            width: 16,
            position: 15,
        },
        PathGroup {
            width: 4,
            position: 3,
        },
        PathGroup {
            width: 2,
            position: 1,
        },
    ] {
        check_path(kernel, &[group; 64], next());
    }
    let alternating: Vec<PathGroup> = (0..64)
        .map(|level| PathGroup {
            width: 16,
            position: if level % 3 == 0 { 0 } else { 14 },
        })
        .collect();
    check_path(kernel, &alternating, next());
    check_path(kernel, &[], next());
}

#[test]
fn path_portable_matches_blake3() {
    check_paths(SingleKernel::PORTABLE);
}

#[test]
fn path_sse41_matches_blake3() {
    if let Some(kernel) = SingleKernel::by_name("sse41") {
        check_paths(kernel);
    }
}

#[test]
fn path_avx512_matches_blake3() {
    if let Some(kernel) = SingleKernel::by_name("avx512") {
        check_paths(kernel);
    }
}

#[test]
fn hash_path_matches_blake3_with_the_detected_kernel() {
    let path = [PathGroup {
        width: 4,
        position: 2,
    }; 10];
    let siblings = pseudo_random_children(30, 5);
    let node = [7u8; 32];
    assert_eq!(
        hash_path(&node, &path, &siblings),
        path_reference(&node, &path, &siblings)
    );
    assert_eq!(hash_path(&node, &[], &[]), node);
}

#[test]
fn every_path_kernel_checks_the_path() {
    let group = |width, position| PathGroup { width, position };
    let bad: [(&[PathGroup], usize, &str); 5] = [
        (
            &[group(1, 0)],
            0,
            "path level 0: a group of 1 with the node at 0",
        ),
        (&[group(17, 0)], 16, "a group of 17"),
        (
            &[group(4, 1), group(4, 4)],
            6,
            "path level 1: a group of 4 with the node at 4",
        ),
        (&[group(4, 1)], 2, "the path's groups take 3 siblings"),
        (&[group(4, 1)], 4, "the path's groups take 3 siblings"),
    ];
    for kernel in SingleKernel::supported() {
        for (path, count, message) in bad {
            let siblings = vec![[1u8; 32]; count];
            let result =
                std::panic::catch_unwind(|| hash_path_with(*kernel, &[0u8; 32], path, &siblings));
            let error = result.expect_err("a bad path panics");
            let text = error
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| error.downcast_ref::<&str>().copied())
                .unwrap_or_default();
            assert!(text.contains(message), "kernel {} {text:?}", kernel.name());
        }
    }
}
