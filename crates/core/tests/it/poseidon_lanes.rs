//! Poseidon trees hashed through the multi-lane bulk path (the IFMA kernel
//! where this CPU has it: full 8-parent passes, padded tails, single
//! leftovers) against the reference model, which hashes one group at a
//! time through the scalar permutation.

use cairn_core::{Hash, HashKind, LeanImt, TreeConfig};
use cairn_testkit::reference;

use crate::support::arity;

fn config(n: u64) -> TreeConfig {
    TreeConfig::new(arity(n), HashKind::Poseidon)
}

#[test]
fn poseidon_builds_appends_and_updates_equal_the_reference_for_every_arity() {
    println!("poseidon bulk kernel: {}", HashKind::Poseidon.kernel_name());
    for n in 2..=16u64 {
        // Enough leaves for several full passes of 8 parents at the bottom
        // level and tails of every length above it.
        let count = (8 * n as usize) * 3 + 5;
        let leaves = cairn_testkit::leaves(n, count);
        let want = reference::root(arity(n), HashKind::Poseidon, &leaves);

        let mut built = LeanImt::from_leaves(config(n), &leaves).expect("canonical leaves");
        assert_eq!(built.root(), want, "from_leaves, N = {n}");

        let mut appended = LeanImt::new(config(n));
        let (first, rest) = leaves.split_at(count / 3);
        appended.append_batch(first).expect("canonical leaves");
        appended.commit();
        appended.append_batch(rest).expect("canonical leaves");
        assert_eq!(appended.root(), want, "two batches, N = {n}");

        // Rewrite every third leaf: many dirty parents per level.
        let updates: Vec<(u64, Hash)> = (0..count as u64)
            .step_by(3)
            .map(|index| (index, cairn_testkit::leaf(n + 100, index)))
            .collect();
        let mut updated_leaves = leaves.clone();
        for &(index, leaf) in &updates {
            updated_leaves[index as usize] = leaf;
        }
        built.update_leaves(&updates).expect("canonical leaves");
        assert_eq!(
            built.root(),
            reference::root(arity(n), HashKind::Poseidon, &updated_leaves),
            "update_leaves, N = {n}"
        );
    }
}
