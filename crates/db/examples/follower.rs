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
//! Then the same chain into one database of two trees, as a shielded pool
//! keeps them: a note tree (the commitments) and an indexed nullifier tree
//! (notes spent, refused twice). Each block writes both trees at once (one
//! journal frame), a reorganisation rolls both back to the fork point, and
//! after every reorganisation and at the end (and after a reopen) each tree
//! must equal a tree rebuilt from the surviving blocks' values alone.
//!
//! ```sh
//! cargo run --release -p cairn-db --example follower -- --blocks 10000
//! cargo run --release -p cairn-db --example follower -- --blocks 10000 --wait-every 100
//! ```

use std::time::{Duration, Instant};

use cairn_core::indexed::IndexedTree;
use cairn_core::{Arity, Hash, HashKind, LeanImt, TreeConfig, TreeKind};
use cairn_db::{BlockId, BlockTag, Db, DbConfig, Forest};
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

const NOTES: &str = "notes";
const NULLIFIERS: &str = "nullifiers";

/// One block of the two-tree chain: notes created, notes spent (by the
/// counters their values are made of).
struct PoolBlock {
    number: u64,
    notes: Vec<u64>,
    spent: Vec<u64>,
}

/// A note's nullifier: distinct from every note and every other nullifier
/// (the value counter with its top bit set).
fn nullifier_of(note: u64) -> Hash {
    value_of(note | 1 << 63)
}

/// The chain into a [`Forest`] of a note tree and an indexed nullifier
/// tree, checked against per-tree rebuilds after every reorganisation.
fn follow_pool(o: &Options) -> Run {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let forest = Forest::create(dir.path()).expect("create");
    let notes_config = TreeConfig::new(Arity::new(4).expect("arity"), HashKind::Blake3);
    let nullifiers_config = TreeConfig::new(Arity::new(2).expect("arity"), HashKind::Blake3)
        .with_kind(TreeKind::Indexed);
    forest
        .add_tree(NOTES, DbConfig::new(notes_config))
        .expect("the note tree");
    forest
        .add_tree(NULLIFIERS, DbConfig::new(nullifiers_config))
        .expect("the nullifier tree");
    let mut rng = ChaCha8Rng::seed_from_u64(o.seed);
    let mut canonical: Vec<PoolBlock> = Vec::new();
    // Notes made on the canonical chain and not spent on it, by counter.
    let mut unspent: Vec<u64> = Vec::new();
    // Orphaned notes and spends, which the new branch mostly includes again.
    let (mut orphaned_notes, mut orphaned_spends): (Vec<u64>, Vec<u64>) = (Vec::new(), Vec::new());
    let (mut made, mut fork) = (0u64, 0u64);
    let (mut appended, mut reorg_count, mut deepest) = (0u64, 0u64, 0u64);
    let (mut number, mut finalized_block) = (0u64, 0u64);
    let started = Instant::now();
    while number < o.blocks {
        let head = canonical.last().map_or(0, |b| b.number);
        if canonical.len() > 1 && rng.gen_bool(o.reorg_per_block) {
            let depth = rng
                .gen_range(1..=o.max_depth)
                .min(head - finalized_block)
                .min(canonical.len() as u64 - 1);
            if depth > 0 {
                let keep = canonical.len() - depth as usize;
                let fork_point = canonical[keep - 1].number;
                forest
                    .truncate_to_block(fork_point)
                    .expect("rollback above finality");
                let mut dropped = std::collections::HashSet::new();
                for block in canonical.drain(keep..) {
                    dropped.extend(block.notes.iter().copied());
                    orphaned_notes.extend(block.notes);
                    orphaned_spends.extend(block.spent);
                }
                unspent.retain(|n| !dropped.contains(n));
                // A spend is made again only if its note survived.
                orphaned_spends.retain(|n| !dropped.contains(n));
                unspent.append(&mut orphaned_spends);
                fork += 1;
                number = fork_point + 1;
                reorg_count += 1;
                deepest = deepest.max(depth);
                check_pool(&forest, &canonical, "after a reorganisation");
            }
        }
        let mut notes = Vec::new();
        for _ in 0..rng.gen_range(0..=o.max_leaves) {
            let counter = match orphaned_notes.pop() {
                Some(counter) if rng.gen_bool(0.8) => counter,
                _ => {
                    made += 1;
                    made
                }
            };
            notes.push(counter);
        }
        // Spend notes of earlier blocks only (never one of this block).
        let mut spent = Vec::new();
        for _ in 0..rng.gen_range(0..=o.max_leaves / 2).min(unspent.len()) {
            let at = rng.gen_range(0..unspent.len());
            spent.push(unspent.swap_remove(at));
        }
        unspent.extend(&notes);
        let mut hash = [0u8; 32];
        hash[..8].copy_from_slice(&number.to_le_bytes());
        hash[8..16].copy_from_slice(&fork.to_le_bytes());
        forest
            .commit_block(
                BlockId { number, hash },
                &[
                    (
                        NOTES,
                        &notes.iter().map(|&n| value_of(n)).collect::<Vec<_>>(),
                    ),
                    (
                        NULLIFIERS,
                        &spent.iter().map(|&n| nullifier_of(n)).collect::<Vec<_>>(),
                    ),
                ],
            )
            .expect("a block of both trees");
        canonical.push(PoolBlock {
            number,
            notes,
            spent,
        });
        appended += 1;
        if number.is_multiple_of(16) && number > o.finality && number - o.finality > finalized_block
        {
            finalized_block = number - o.finality;
            forest.finalize_to_block(finalized_block).expect("finalize");
        }
        number += 1;
    }
    let seconds = started.elapsed().as_secs_f64();
    check_pool(&forest, &canonical, "at the end");
    forest.close().expect("close");
    let forest = Forest::open(dir.path()).expect("reopen");
    check_pool(&forest, &canonical, "after a reopen");
    Run {
        seconds,
        blocks_appended: appended,
        reorgs: reorg_count,
        deepest,
        leaves: canonical
            .iter()
            .map(|b| (b.notes.len() + b.spent.len()) as u64)
            .sum(),
    }
}

/// Each tree equals a tree rebuilt from the surviving blocks' values, and
/// the last block is the chain's.
fn check_pool(forest: &Forest, canonical: &[PoolBlock], when: &str) {
    let notes: Vec<Hash> = canonical
        .iter()
        .flat_map(|b| b.notes.iter().map(|&n| value_of(n)))
        .collect();
    let nullifiers: Vec<Hash> = canonical
        .iter()
        .flat_map(|b| b.spent.iter().map(|&n| nullifier_of(n)))
        .collect();
    // The trees' own heads trail the journal until applied.
    forest.apply().expect("the trees catch up with the journal");
    let note_tree = forest.tree(NOTES).expect("the note tree");
    let rebuilt = LeanImt::from_leaves(note_tree.config().tree(), &notes)
        .expect("a note tree")
        .head();
    assert_eq!(note_tree.head(), rebuilt, "notes {when}");
    let nullifier_tree = forest.tree(NULLIFIERS).expect("the nullifier tree");
    let rebuilt = IndexedTree::from_values(nullifier_tree.config().tree(), &nullifiers)
        .expect("a nullifier tree")
        .head();
    assert_eq!(nullifier_tree.head(), rebuilt, "nullifiers {when}");
    assert_eq!(
        forest.last_block(),
        canonical.last().map(|b| b.number),
        "the last block {when}"
    );
    if let Some(spent) = nullifiers.last() {
        assert!(
            nullifier_tree.index_of(spent).expect("a lookup").is_some(),
            "the last nullifier is in the tree {when}"
        );
    }
}

fn main() {
    let o = options();
    let plain = follow(&o, false);
    let forked = follow(&o, true);
    let pool = follow_pool(&o);
    for (name, run) in [
        ("no reorgs", &plain),
        ("with reorgs", &forked),
        ("two trees", &pool),
    ] {
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
        "follower: roots, tagged heads and roots by value match the surviving chain, before and after a reopen; the note and nullifier trees match per-tree rebuilds after every reorganisation"
    );
}
