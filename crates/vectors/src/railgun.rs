//! `railgun.json` (written by `test-vectors/ts/railgun.mjs` from
//! `@railgun-community/engine`'s merkle tree) checked against cairn's
//! trees: every root of the rollover from tree 0 to tree 1, and the
//! whole-batch case, where a batch that does not fit in tree 0 starts
//! tree 1 and leaves tree 0 short. The batches' places are checked
//! against the rule transcribed here (independently of the database's
//! families, which `cairn-db`'s tests hold to the same file), the roots
//! against cairn's fixed-depth tree over the same leaves. Read only: the
//! file is the TypeScript script's.

use anyhow::{Context, Result, ensure};
use cairn_core::{Arity, Hash, HashKind, LeanImt, TreeConfig, TreeKind};
use cairn_testkit::vectors::{hash_or_null, load, rule_leaf};
use serde_json::Value;

fn u64_of(value: &Value, what: &str) -> Result<u64> {
    value
        .as_u64()
        .with_context(|| format!("railgun.json: {what} is not a u64"))
}

fn hash_of(value: &Value, what: &str) -> Result<Hash> {
    hash_or_null(value).with_context(|| format!("railgun.json: {what} is not a hash"))
}

/// Where each batch of `counts` goes under the whole-batch rule with
/// `capacity` leaves a tree: (tree, first index).
fn place_whole(counts: &[u64], capacity: u64) -> Result<Vec<(u64, u64)>> {
    let (mut tree, mut size) = (0, 0);
    let mut placed = Vec::with_capacity(counts.len());
    for &count in counts {
        ensure!(
            count <= capacity,
            "a batch of {count} is more than one tree holds"
        );
        if size + count > capacity {
            tree += 1;
            size = 0;
        }
        placed.push((tree, size));
        size += count;
    }
    Ok(placed)
}

/// Checks `railgun.json`; returns a summary line.
pub fn check() -> Result<String> {
    let doc = load("railgun.json");
    let depth = u32::try_from(u64_of(&doc["depth"], "depth")?)?;
    let capacity = u64_of(&doc["capacity"], "capacity")?;
    let zero = hash_of(&doc["zero"], "zero")?;
    let leaf_count = u64_of(&doc["leaf_count"], "leaf_count")?;
    let config = TreeConfig::new(Arity::BINARY, HashKind::Poseidon)
        .with_kind(TreeKind::Fixed { depth, zero });
    ensure!(
        config.capacity() == Some(capacity),
        "railgun.json: capacity {capacity} is not 2^{depth}"
    );
    let leaves: Vec<Hash> = (0..leaf_count).map(rule_leaf).collect();
    for (i, first) in doc["first_leaves"]
        .as_array()
        .context("first_leaves")?
        .iter()
        .enumerate()
    {
        ensure!(
            hash_of(first, "a first leaf")? == leaves[i],
            "railgun.json: leaf {i} is not the rule's"
        );
    }
    let root_of = |chunk: &[Hash]| -> Result<Hash> {
        let mut tree = LeanImt::from_leaves(config, chunk)?;
        tree.root().context("a fixed-depth tree has a root")
    };
    ensure!(
        root_of(&[])? == hash_of(&doc["empty_root"], "empty_root")?,
        "DISAGREEMENT: railgun.json's empty root is not cairn's"
    );
    // The split rollover: tree k holds the stream's leaves from k * capacity.
    let mut checked = 0;
    for entry in doc["roots"].as_array().context("roots")? {
        let tree = u64_of(&entry["tree"], "roots[].tree")?;
        let size = u64_of(&entry["size"], "roots[].size")?;
        let from = usize::try_from(tree * capacity)?;
        let chunk = &leaves[from..from + usize::try_from(size)?];
        ensure!(
            root_of(chunk)? == hash_of(&entry["root"], "roots[].root")?,
            "DISAGREEMENT: railgun.json: tree {tree} at size {size}: the engine's root is not cairn's"
        );
        checked += 1;
    }
    // The whole-batch rollover: each batch the stream's next leaves.
    let whole = &doc["whole_batch"];
    let batches = whole["batches"]
        .as_array()
        .context("railgun.json has no whole_batch.batches")?;
    let counts = batches
        .iter()
        .map(|b| u64_of(&b["values"], "whole_batch.batches[].values"))
        .collect::<Result<Vec<_>>>()?;
    let placed = place_whole(&counts, capacity)?;
    let mut held: Vec<Vec<Hash>> = Vec::new();
    let mut next = 0usize;
    let mut short = false;
    for (i, (batch, &(tree, first))) in batches.iter().zip(&placed).enumerate() {
        let recorded = (
            u64_of(&batch["tree"], "whole_batch.batches[].tree")?,
            u64_of(&batch["first_index"], "whole_batch.batches[].first_index")?,
        );
        ensure!(
            recorded == (tree, first),
            "railgun.json: whole-batch batch {i} is placed at tree {} index {}, the rule says tree {tree} index {first}",
            recorded.0,
            recorded.1
        );
        let count = usize::try_from(counts[i])?;
        let member = usize::try_from(tree)?;
        if member == held.len() {
            short |= held.last().is_some_and(|h| (h.len() as u64) < capacity);
            held.push(Vec::new());
        }
        held[member].extend_from_slice(&leaves[next..next + count]);
        next += count;
        ensure!(
            root_of(&held[member])? == hash_of(&batch["root"], "whole_batch.batches[].root")?,
            "DISAGREEMENT: railgun.json: whole-batch batch {i} (tree {tree}, size {}): the engine's root is not cairn's",
            held[member].len()
        );
        checked += 1;
    }
    ensure!(
        short,
        "railgun.json: no whole-batch batch leaves a tree short"
    );
    let closed = whole["closed"]
        .as_array()
        .context("railgun.json has no whole_batch.closed")?;
    ensure!(
        closed.len() == held.len(),
        "railgun.json: {} closed trees, the batches fill {}",
        closed.len(),
        held.len()
    );
    for (k, entry) in closed.iter().enumerate() {
        ensure!(
            u64_of(&entry["size"], "whole_batch.closed[].size")? == held[k].len() as u64
                && root_of(&held[k])? == hash_of(&entry["root"], "whole_batch.closed[].root")?,
            "DISAGREEMENT: railgun.json: whole-batch tree {k} as closed is not cairn's"
        );
    }
    Ok(format!(
        "railgun.json: {checked} engine roots (split and whole-batch rollover) agree with cairn's depth-{depth} Poseidon trees"
    ))
}

#[cfg(test)]
mod tests {
    use super::place_whole;

    #[test]
    fn a_batch_that_does_not_fit_starts_the_next_tree() {
        assert_eq!(
            place_whole(&[3, 1, 2, 4, 4], 4).unwrap(),
            [(0, 0), (0, 3), (1, 0), (2, 0), (3, 0)]
        );
        assert!(place_whole(&[5], 4).is_err());
    }
}
