//! Shared pieces of cairn's benchmarks: workloads defined once and run by
//! both the criterion suites and the interleaved peer comparison
//! (`src/bin/peers.rs`; the durable comparison is in [`durable`] and
//! `src/bin/peers_durable.rs`). Kept out of the core so ordinary builds never
//! compile the peers.

pub mod durable;
pub mod sched;

use std::time::{Duration, Instant};

use cairn_core::{Arity, Hash, HashKind, LeanImt, TreeConfig};

/// `count` pseudo-random leaves (canonical field elements, valid under every hash).
pub fn leaves(count: usize) -> Vec<Hash> {
    cairn_testkit::leaves(0xca1e, count)
}

/// A tree config.
pub fn config(arity: usize, hash: HashKind) -> TreeConfig {
    TreeConfig::new(
        Arity::new(arity as u64).expect("bench arity in 2..=16"),
        hash,
    )
}

/// cairn's batch build: append everything, hash once.
pub fn cairn_build(arity: usize, hash: HashKind, leaves: &[Hash]) -> Hash {
    let mut tree = LeanImt::from_leaves(config(arity, hash), leaves).expect("valid leaves");
    tree.root().expect("non-empty")
}

/// The chain-follower workload: one `append` per leaf, a root every `every` appends.
pub fn cairn_follow(arity: usize, leaves: &[Hash], every: usize) -> Hash {
    let mut tree = LeanImt::new(config(arity, HashKind::Blake3));
    let mut root = [0; 32];
    for (i, leaf) in leaves.iter().enumerate() {
        tree.append(*leaf).expect("valid leaf");
        if (i + 1) % every == 0 {
            root = tree.root().expect("non-empty");
        }
    }
    tree.root().unwrap_or(root)
}

/// The hashing limit of a build: the multi-lane kernel alone over exactly
/// the full groups the tree hashes, level by level, from precomputed
/// contiguous levels (the same 2-way split across threads as the tree for
/// large levels). Returns the time of the hashing only.
pub fn kernel_only(arity: usize, hash: HashKind, leaves: &[Hash]) -> Duration {
    let mut levels = vec![leaves.to_vec()];
    while levels.last().map_or(0, Vec::len) > 1 {
        let below = levels.last().expect("a level");
        let above = below
            .chunks(arity)
            .map(|g| {
                if g.len() == 1 {
                    g[0]
                } else {
                    hash.hash_children(g)
                }
            })
            .collect();
        levels.push(above);
    }
    let mut outputs: Vec<Vec<Hash>> = levels
        .iter()
        .map(|l| vec![[0u8; 32]; l.len() / arity])
        .collect();
    let started = Instant::now();
    for (level, out) in levels.iter().zip(outputs.iter_mut()) {
        let full = level.len() / arity * arity;
        let children = &level[..full];
        if out.len() >= 4096 {
            use rayon::prelude::*;
            out.par_chunks_mut(128)
                .zip(children.par_chunks(128 * arity))
                .for_each(|(o, c)| hash.hash_groups(c, arity, o));
        } else {
            hash.hash_groups(children, arity, out);
        }
    }
    let elapsed = started.elapsed();
    std::hint::black_box(&outputs);
    elapsed
}

/// The median of `samples`.
pub fn median(samples: &mut [Duration]) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// rotortree 0.20 runners, monomorphised per arity.
pub mod rotor {
    use cairn_core::Hash;
    use rotortree::{Blake3Hasher, LeanIMT};

    /// Calls `$body` with the const arity `N` bound for N in 2, 4, 8, 16.
    #[macro_export]
    macro_rules! with_rotor_arity {
        ($arity:expr, $n:ident => $body:expr) => {
            match $arity {
                2 => {
                    const $n: usize = 2;
                    $body
                }
                4 => {
                    const $n: usize = 4;
                    $body
                }
                8 => {
                    const $n: usize = 8;
                    $body
                }
                16 => {
                    const $n: usize = 16;
                    $body
                }
                other => panic!("rotortree comparison runs N in 2, 4, 8, 16, not {other}"),
            }
        };
    }

    /// rotortree's batch build (`insert_many`).
    pub fn build<const N: usize>(leaves: &[Hash]) -> Hash {
        let mut tree = LeanIMT::<Blake3Hasher, N, 32>::new(Blake3Hasher);
        tree.insert_many(leaves).expect("fits").to_owned()
    }

    /// rotortree's chain follower: `insert` per leaf, `root()` every `every`.
    pub fn follow<const N: usize>(leaves: &[Hash], every: usize) -> Hash {
        let mut tree = LeanIMT::<Blake3Hasher, N, 32>::new(Blake3Hasher);
        let mut root = [0; 32];
        for (i, leaf) in leaves.iter().enumerate() {
            tree.insert(*leaf).expect("fits");
            if (i + 1) % every == 0 {
                root = tree.root().expect("non-empty");
            }
        }
        tree.root().unwrap_or(root)
    }

    /// A built rotortree.
    pub fn tree<const N: usize>(leaves: &[Hash]) -> LeanIMT<Blake3Hasher, N, 32> {
        let mut tree = LeanIMT::<Blake3Hasher, N, 32>::new(Blake3Hasher);
        tree.insert_many(leaves).expect("fits");
        tree
    }
}

/// The process's CPU time (user + system, all threads) from
/// `/proc/self/stat`, in seconds: less sensitive than the wall clock to
/// other load on a shared machine. `None` where there is no procfs.
pub fn cpu_seconds() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces) start at ')'.
    let rest = text.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}
