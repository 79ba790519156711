//! A chain follower on a cairn database: a simulated chain of blocks, each
//! with a few commitments, reorganised at random (depth 1 to 64), with a
//! finality depth of 64 blocks. The follower appends each block's leaves
//! tagged with the block, rolls back to the fork point when the chain
//! reorganises (re-appending the new branch, which re-includes most of the
//! orphaned values, as chains do), and finalizes what can no longer change.
//!
//! At the end the database's root must equal the root of a tree built from
//! the surviving blocks alone, every tagged head of the canonical chain
//! must resolve by root value to its size, and the same must hold after a
//! reopen. Prints blocks per second with and without reorganisations.
//!
//! ```sh
//! cargo run --release -p cairn-db --example follower -- --blocks 10000
//! cargo run --release -p cairn-db --example follower -- --blocks 10000 --wait-every 100
//! ```

use std::time::{Duration, Instant};

use cairn_core::{Arity, Hash, HashKind, LeanImt, TreeConfig};
use cairn_db::{BlockTag, Db, DbConfig};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const WAIT: Duration = Duration::from_secs(60);

struct Options {
    blocks: u64,
    reorg_per_block: f64,
    max_depth: u64,
    finality: u64,
    max_leaves: usize,
    seed: u64,
    /// Wait for durability every this many blocks (1: every block, as a
    /// follower that acknowledges each block upstream does).
    wait_every: u64,
}

fn options() -> Options {
    let mut o = Options {
        blocks: 10_000,
        reorg_per_block: 0.02,
        max_depth: 64,
        finality: 64,
        max_leaves: 16,
        seed: 1,
        wait_every: 1,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .unwrap_or_else(|| panic!("{flag} needs a value"))
                .clone()
        };
        match flag.as_str() {
            "--blocks" => o.blocks = value().parse().expect("--blocks N"),
            "--reorg-rate" => o.reorg_per_block = value().parse().expect("--reorg-rate P"),
            "--max-depth" => o.max_depth = value().parse().expect("--max-depth D"),
            "--finality" => o.finality = value().parse().expect("--finality D"),
            "--max-leaves" => o.max_leaves = value().parse().expect("--max-leaves L"),
            "--seed" => o.seed = value().parse().expect("--seed S"),
            "--wait-every" => o.wait_every = value().parse().expect("--wait-every K"),
            other => panic!(
                "unknown flag {other} (--blocks --reorg-rate --max-depth --finality --max-leaves --seed --wait-every)"
            ),
        }
    }
    assert!(
        o.max_depth <= o.finality,
        "a reorg deeper than finality cannot be followed"
    );
    o
}

/// One block of the simulated chain.
#[derive(Clone)]
struct Block {
    number: u64,
    hash: Hash,
    leaves: Vec<Hash>,
}

/// The simulated chain: produces blocks, forks, and values never seen.
struct Chain {
    rng: ChaCha8Rng,
    next_value: u64,
    fork: u64,
}

impl Chain {
    fn value(&mut self) -> Hash {
        self.next_value += 1;
        value_of(self.next_value)
    }

    fn block(&mut self, number: u64, max_leaves: usize, reinclude: &mut Vec<Hash>) -> Block {
        let count = self.rng.gen_range(0..=max_leaves);
        let mut leaves = Vec::with_capacity(count);
        for _ in 0..count {
            // Orphaned values come back first (most transactions of an
            // orphaned block are mined again on the new branch).
            match reinclude.pop() {
                Some(value) if self.rng.gen_bool(0.8) => leaves.push(value),
                _ => leaves.push(self.value()),
            }
        }
        let mut hash = [0u8; 32];
        hash[..8].copy_from_slice(&number.to_le_bytes());
        hash[8..16].copy_from_slice(&self.fork.to_le_bytes());
        Block {
            number,
            hash,
            leaves,
        }
    }
}

/// Deterministic, distinct 32-byte values (already hashes, as commitments
/// are): a bijective mix of the counter in each 8-byte word.
fn value_of(i: u64) -> Hash {
    let mut out = [0u8; 32];
    let mut x = i;
    for (word, chunk) in out.chunks_mut(8).enumerate() {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15 ^ word as u64);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        chunk.copy_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    out
}

struct Run {
    seconds: f64,
    blocks_appended: u64,
    reorgs: u64,
    deepest: u64,
    leaves: u64,
}

fn follow(o: &Options, reorgs: bool) -> Run {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut config = DbConfig::new(TreeConfig::new(
        Arity::new(4).expect("arity"),
        HashKind::Blake3,
    ));
    config.explicit_finality = true;
    let db = Db::create(dir.path(), config).expect("create");
    let mut chain = Chain {
        rng: ChaCha8Rng::seed_from_u64(o.seed),
        next_value: 0,
        fork: 0,
    };
    let mut canonical: Vec<Block> = Vec::new();
    let mut orphaned: Vec<Hash> = Vec::new();
    let (mut appended, mut reorg_count, mut deepest) = (0u64, 0u64, 0u64);
    let started = Instant::now();
    let mut number = 0u64;
    // The last block finalized: a reorg never reaches it (the chain's rule).
    let mut finalized_block = 0u64;
    while number < o.blocks {
        let head = canonical.last().map_or(0, |b| b.number);
        if reorgs && canonical.len() > 1 && chain.rng.gen_bool(o.reorg_per_block) {
            let depth = chain
                .rng
                .gen_range(1..=o.max_depth)
                .min(head - finalized_block)
                .min(canonical.len() as u64 - 1);
            if depth > 0 {
                let keep = canonical.len() - depth as usize;
                let fork_point = canonical[keep - 1].number;
                db.truncate_to_block(fork_point)
                    .expect("rollback above finality");
                for block in canonical.drain(keep..) {
                    orphaned.extend(block.leaves);
                }
                chain.fork += 1;
                number = fork_point + 1;
                reorg_count += 1;
                deepest = deepest.max(depth);
            }
        }
        let block = chain.block(number, o.max_leaves, &mut orphaned);
        let tag = BlockTag {
            number: block.number,
            hash: Some(block.hash),
        };
        let appended_block = db.append_tagged(&block.leaves, tag).expect("append");
        if number.is_multiple_of(o.wait_every.max(1)) {
            appended_block.token.wait(WAIT).expect("durable");
        }
        canonical.push(block);
        appended += 1;
        if number.is_multiple_of(16) && number > o.finality && number - o.finality > finalized_block
        {
            finalized_block = number - o.finality;
            db.finalize_to_block(finalized_block).expect("finalize");
        }
        number += 1;
    }
    let seconds = started.elapsed().as_secs_f64();
    check(&db, &canonical, o);
    drop(db);
    let db = Db::open(dir.path()).expect("reopen");
    check(&db, &canonical, o);
    Run {
        seconds,
        blocks_appended: appended,
        reorgs: reorg_count,
        deepest,
        leaves: canonical.iter().map(|b| b.leaves.len() as u64).sum(),
    }
}

/// The database equals the canonical chain: root, tagged heads, and every
/// tagged root resolving to its size.
fn check(db: &Db, canonical: &[Block], o: &Options) {
    let leaves: Vec<Hash> = canonical.iter().flat_map(|b| b.leaves.clone()).collect();
    let mut fresh = LeanImt::from_leaves(db.config().tree(), &leaves).expect("a tree");
    assert_eq!(db.head(), fresh.head(), "the root of the surviving blocks");
    let heads = db.heads(0, usize::MAX);
    assert_eq!(heads.len(), canonical.len(), "one tagged head per block");
    let mut size = 0u64;
    for (head, block) in heads.iter().zip(canonical) {
        size += block.leaves.len() as u64;
        assert_eq!((head.block, head.size), (block.number, size));
        assert_eq!(head.block_hash, Some(block.hash));
        assert_eq!(head.root, fresh.at_size(size).expect("a size").root());
        if let Some(root) = head.root {
            let found = db.size_of_root(&root).expect("every tagged root resolves");
            assert_eq!(found.size, size);
        }
    }
    let finalized = db.finalized_size();
    assert!(finalized <= db.size());
    let head_block = canonical.last().map_or(0, |b| b.number);
    assert!(
        head_block < o.finality + 16 || finalized > 0,
        "finality advanced"
    );
}

fn main() {
    let o = options();
    let plain = follow(&o, false);
    let forked = follow(&o, true);
    for (name, run) in [("no reorgs", &plain), ("with reorgs", &forked)] {
        println!(
            "{name:>12}: {} blocks ({} appended, {} reorgs, deepest {}), {} leaves kept, {:.2} s, {:.0} blocks/s",
            o.blocks,
            run.blocks_appended,
            run.reorgs,
            run.deepest,
            run.leaves,
            run.seconds,
            run.blocks_appended as f64 / run.seconds
        );
    }
    println!(
        "follower: roots, tagged heads and roots by value match the surviving chain, before and after a reopen"
    );
}
