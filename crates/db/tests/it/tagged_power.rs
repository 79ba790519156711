//! Block-tagged appends to one append-only tree (lean and fixed-depth, the
//! same code path) whose group commits cross log files, under a power loss
//! after every file-system operation and in every crash mode: after
//! reopening, each block is wholly present or wholly absent (the size is
//! a block's end, its last tagged head is that block's and its values are
//! found exactly when their block is in), every block acknowledged before
//! the crash is present, the root is the reference root, and the database
//! takes the next block.
//!
//! A commit that crosses a log file writes one frame per file and syncs
//! each file in turn, so a power loss between two of those syncs leaves
//! the first files' frames durable and the rest lost: the log then ends
//! inside a block. The heads file, durable before the log, still holds
//! that block's record, which is how recovery knows to drop the part.

use std::path::Path;
use std::sync::Arc;

use cairn_core::{HashKind, TreeConfig};
use cairn_db::{Database, DbConfig};
use cairn_store::{BlockTag, Fs};
use cairn_testkit::sim::SimFs;
use rand::SeedableRng;

use crate::rollover::values;
use crate::support::{config_of, fixed_tree, reference_root_of, tree};

/// Blocks as (number, values from, values to); the log files hold 1,024
/// leaves. Blocks 2 and 6 cross a file; 3 and 4 are one group commit whose
/// second block crosses one; 6 spans three files.
const BLOCKS: [(u64, u64, u64); 6] = [
    (1, 0, 1_000),
    (2, 1_000, 1_100),
    (3, 1_100, 1_900),
    (4, 1_900, 2_100),
    (5, 2_100, 2_200),
    (6, 2_200, 4_200),
];
const SEED: u64 = 0x7a99_ed00;

fn sim_config(shape: TreeConfig) -> DbConfig {
    let config = config_of(shape);
    assert_eq!(config.log_file_leaves(), 1_024, "the blocks cross files");
    config
}

/// Writes the blocks, each group waited for, and returns the file
/// system's operation count once the database exists and when each block
/// was acknowledged.
fn write_blocks(fs: &SimFs, shape: TreeConfig) -> (usize, Vec<usize>) {
    let db = Database::create_in(
        Arc::new(fs.clone()) as Arc<dyn Fs>,
        Path::new("/db"),
        sim_config(shape),
    )
    .unwrap();
    let created = fs.op_count();
    let wait = std::time::Duration::from_secs(30);
    let mut acked = Vec::new();
    let mut pending = Vec::new();
    for &(number, from, to) in &BLOCKS {
        pending.push(
            db.append_tagged(&values(SEED, from, to), BlockTag::number(number))
                .unwrap(),
        );
        // Blocks 3 and 4 go out in one group commit.
        if number == 3 {
            continue;
        }
        for ack in pending.drain(..) {
            ack.wait(&db, wait).unwrap();
            acked.push(fs.op_count());
        }
    }
    db.close().unwrap();
    (created, acked)
}

/// Opens a crash state and checks the rule; returns the blocks present.
fn check_state(crashed: &SimFs, shape: &TreeConfig, acked_blocks: usize, ctx: &str) -> usize {
    let db = Database::open_in(
        Arc::new(crashed.clone()) as Arc<dyn Fs>,
        Path::new("/db"),
        None,
    )
    .unwrap_or_else(|e| panic!("{ctx}: open: {e}"));
    let size = db.size();
    let present = BLOCKS.iter().take_while(|b| b.2 <= size).count();
    let end = present.checked_sub(1).map_or(0, |i| BLOCKS[i].2);
    assert_eq!(
        size,
        end,
        "{ctx}: {size} leaves, not a block's end: block {} came back in part",
        present + 1
    );
    assert!(
        present >= acked_blocks,
        "{ctx}: {present} blocks, but {acked_blocks} were acknowledged"
    );
    let heads = db.heads(0, usize::MAX).unwrap();
    assert_eq!(
        heads.iter().map(|h| (h.block, h.size)).collect::<Vec<_>>(),
        BLOCKS[..present]
            .iter()
            .map(|&(number, _, to)| (number, to))
            .collect::<Vec<_>>(),
        "{ctx}: tagged heads"
    );
    let all = values(SEED, 0, BLOCKS[BLOCKS.len() - 1].2);
    let found = db.lookup(&all).unwrap();
    for (i, index) in found.indices.iter().enumerate() {
        let want = (i as u64) < size;
        assert_eq!(index.is_some(), want, "{ctx}: value {i} found: {index:?}");
    }
    assert_eq!(
        db.head().root,
        reference_root_of(shape, &all[..size as usize]),
        "{ctx}: root"
    );
    // The next block goes in at the end of the last whole one.
    let next = BLOCKS.get(present).map_or((99, 0, 0), |b| *b);
    db.append_tagged(&values(SEED, size, size + 3), BlockTag::number(next.0))
        .unwrap_or_else(|e| panic!("{ctx}: a block after: {e}"))
        .wait(&db, std::time::Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{ctx}: a block after: {e}"));
    db.close().unwrap();
    present
}

fn sweep(shape: TreeConfig) {
    let fs = SimFs::new();
    let (created, acked) = write_blocks(&fs, shape);
    let end = fs.op_count();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(SEED);
    let mut replay = fs.replay();
    let mut states = 0;
    let mut partial_reached = 0;
    // Before the database exists there is nothing to open.
    for k in created..=end {
        replay.seek(k);
        let acked_blocks = acked.iter().filter(|&&a| a <= k).count();
        for mode in replay.crash_modes() {
            let crashed = replay.crash(&mode, &mut rng);
            let ctx = format!(
                "boundary {k} of {end} ({}), {mode:?}",
                fs.describe_op(k.saturating_sub(1))
            );
            let present = check_state(&crashed, &shape, acked_blocks, &ctx);
            partial_reached += usize::from(present > acked_blocks);
            states += 1;
        }
    }
    assert!(states > 500, "{states} crash states");
    assert!(partial_reached > 0, "no state kept an unacknowledged block");
}

#[test]
fn a_tagged_block_across_log_files_is_all_or_nothing_after_a_power_loss_in_a_lean_tree() {
    sweep(tree(2, HashKind::Blake3));
}

#[test]
fn a_tagged_block_across_log_files_is_all_or_nothing_after_a_power_loss_in_a_fixed_depth_tree() {
    sweep(fixed_tree(2, HashKind::Blake3));
}
