//! Open of a journaled database: the journal replayed into what every
//! tree must hold, and each tree brought there. A tree's log trails the
//! journal and never passes it, except where a rollback frame took the
//! tree back: a rollback reaches a tree's files only at its next write,
//! so after a crash they may still hold the leaves it removed, or some of
//! them under leaves written since. So a tree's leaves from the lowest
//! size any rollback frame took it to are removed, and the journal's
//! values are written from the tree's size on. Both are idempotent: a
//! crash during open is replayed the same way by the next.

use std::collections::BTreeSet;
use std::path::Path;

use cairn_core::Hash;
use cairn_store::fs::Fs;

use super::journal::{self, BlockId, BlockSizes, Record};
use super::{ForestError, JOURNAL, State, Tree, empty_size, open_writer, read_all};
use crate::error::Result;

/// Every tree's size at the end of the last block at or below `block`:
/// the finalized sizes (or the empty ones) updated by every retained
/// block up to it.
pub(crate) fn sizes_at(
    finalized: &Option<(BlockId, Vec<u64>)>,
    blocks: &[BlockSizes],
    block: u64,
    empty: &[u64],
) -> Result<Vec<u64>> {
    let reachable = blocks.iter().any(|b| b.block.number <= block)
        || finalized.as_ref().is_some_and(|(f, _)| f.number <= block);
    if !reachable {
        return Err(ForestError::NoBlock {
            block,
            finalized: finalized.as_ref().map(|(f, _)| f.number),
        }
        .into());
    }
    let mut sizes = empty.to_vec();
    if let Some((_, floor)) = finalized {
        for (size, &at) in sizes.iter_mut().zip(floor) {
            *size = at;
        }
    }
    for entry in blocks.iter().take_while(|b| b.block.number <= block) {
        for &(tree, size) in &entry.sizes {
            if let Some(slot) = sizes.get_mut(tree as usize) {
                *slot = size;
            }
        }
    }
    Ok(sizes)
}

/// What the journal says every tree must hold: per tree number its size,
/// the values from some size on that the frames carry, and the lowest
/// size a rollback frame took it to (its files may hold the leaves
/// removed there, or leaves written at those indices since); and the
/// finality and retained blocks it leaves.
#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) sizes: Vec<u64>,
    pub(crate) values: Vec<(u64, Vec<Hash>)>,
    pub(crate) floors: Vec<Option<u64>>,
    finalized: Option<(BlockId, Vec<u64>)>,
    blocks: Vec<BlockSizes>,
}

impl Plan {
    /// Whether a tree whose files hold `held` leaves holds, as far as the
    /// journal can tell without reading them, what it must: its size,
    /// and no rollback frame took it below that since the journal's
    /// header (whose leaves the files may then hold stale).
    pub(crate) fn settled(&self, number: usize, held: u64) -> bool {
        self.sizes.get(number) == Some(&held) && self.floors[number].is_none_or(|f| f >= held)
    }
}

/// Reads the journal of `dir`, a database of trees whose empty sizes are
/// `empty` (per tree number), into what every tree must hold.
pub(crate) fn plan(fs: &dyn Fs, dir: &Path, empty: &[u64]) -> Result<Plan> {
    let bytes = read_all(fs, &dir.join(JOURNAL))?;
    let (header, prev, at) = journal::decode_header(&bytes)?;
    let scanned = journal::scan(&bytes, at, header.first_seq, prev)?;
    if header.base.len() > empty.len() {
        return Err(ForestError::CorruptJournal {
            offset: 0,
            what: format!(
                "it holds {} trees, the manifest {}",
                header.base.len(),
                empty.len()
            ),
        }
        .into());
    }
    // Per tree: its journaled size and the values from `start` to it.
    let mut sizes = empty.to_vec();
    for (size, &base) in sizes.iter_mut().zip(&header.base) {
        *size = base;
    }
    let mut values: Vec<(u64, Vec<Hash>)> = sizes.iter().map(|&s| (s, Vec::new())).collect();
    // Per tree, the lowest size a rollback frame took it to from above:
    // its files may still hold the leaves removed there (a rollback
    // reaches them at the tree's next write), and leaves written at those
    // indices since.
    let mut floors: Vec<Option<u64>> = vec![None; empty.len()];
    let mut finalized = header.finalized.clone();
    let mut blocks = header.blocks.clone();
    for record in scanned.records {
        match record {
            Record::Append { block, parts } => {
                let mut after = Vec::with_capacity(parts.len());
                for part in parts {
                    let number = part.tree as usize;
                    let Some(size) = sizes.get_mut(number) else {
                        return Err(corrupt(format!(
                            "a frame names tree {number} of {}",
                            empty.len()
                        )));
                    };
                    if part.before != *size {
                        return Err(corrupt(format!(
                            "a frame appends to tree {number} at {}, the frames before leave it at {size}",
                            part.before
                        )));
                    }
                    *size += part.values.len() as u64;
                    values[number].1.extend_from_slice(&part.values);
                    after.push((part.tree, *size));
                }
                if let Some(block) = block {
                    blocks.push(BlockSizes {
                        block,
                        sizes: after,
                    });
                }
            }
            Record::Rollback { block } => {
                let targets = sizes_at(&finalized, &blocks, block, empty)?;
                for (number, &to) in targets.iter().enumerate() {
                    let (start, held) = &mut values[number];
                    if to > sizes[number] {
                        return Err(corrupt(format!(
                            "a rollback takes tree {number} to {to}, above its {}",
                            sizes[number]
                        )));
                    }
                    if to < sizes[number] {
                        floors[number] = Some(floors[number].map_or(to, |f| f.min(to)));
                    }
                    sizes[number] = to;
                    if to < *start {
                        *start = to;
                        held.clear();
                    } else {
                        held.truncate(usize::try_from(to - *start).expect("64-bit"));
                    }
                }
                blocks.retain(|b| b.block.number <= block);
            }
            Record::Finalize { block } => {
                let at_sizes = sizes_at(&finalized, &blocks, block, empty)?;
                if let Some(at) = blocks
                    .iter()
                    .rev()
                    .find(|b| b.block.number <= block)
                    .map(|b| b.block)
                {
                    blocks.retain(|b| b.block.number > at.number);
                    finalized = Some((at, at_sizes));
                }
            }
        }
    }
    Ok(Plan {
        sizes,
        values,
        floors,
        finalized,
        blocks,
    })
}

/// Replays the journal of `dir` into `trees` and returns the writer's
/// state.
pub(crate) fn recover(fs: &dyn Fs, dir: &Path, trees: &[Tree]) -> Result<State> {
    let empty: Vec<u64> = trees.iter().map(|t| empty_size(t.db.kind())).collect();
    let plan = plan(fs, dir, &empty)?;
    for (number, tree) in trees.iter().enumerate() {
        bring(
            tree,
            plan.sizes[number],
            &plan.values[number],
            plan.floors[number],
        )?;
    }
    Ok(State {
        journal: Some(open_writer(fs, dir)?),
        journaled: plan.sizes,
        dirty: (0..trees.len() as u32).collect::<BTreeSet<u32>>(),
        finalized: plan.finalized,
        blocks: plan.blocks,
        failure: None,
    })
}

/// Brings `tree` to `size`, with `values` (from `start`) for what it
/// lacks. Its leaves from `floor` on (the lowest size a rollback frame
/// took it to) are not trusted: they may be ones the rollback removed,
/// so they go and the journal's are written again (`start <= floor`).
fn bring(
    tree: &Tree,
    size: u64,
    (start, values): &(u64, Vec<Hash>),
    floor: Option<u64>,
) -> Result<()> {
    let mut held = tree.db.durable_size();
    if let Some(floor) = floor
        && held > floor
    {
        debug_assert!(*start <= floor);
        tree.db.truncate(floor)?;
        held = tree.db.durable_size();
    }
    if held > size {
        tree.db.truncate(size)?;
    } else if held < size {
        if held < *start {
            return Err(corrupt(format!(
                "tree {:?} holds {held} leaves, the journal continues from {start}",
                tree.name
            )));
        }
        let from = usize::try_from(held - start).expect("64-bit");
        let missing = values.get(from..).unwrap_or_default();
        tree.db
            .append(missing)?
            .wait(&tree.db, std::time::Duration::from_secs(3600))?;
    }
    Ok(())
}

fn corrupt(what: String) -> crate::error::DbError {
    ForestError::CorruptJournal { offset: 0, what }.into()
}
