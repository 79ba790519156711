//! The batch-append witness: from a tree's snapshot, for old sizes 0 to
//! past several powers of two and batches that cross depth increases, the
//! frontier folds to the reference model's old root and, with the leaves,
//! gives its new root; a model of the circuit's window computation
//! (`circuits/append.circom`) over the printed JSON gives the same roots;
//! a changed frontier node, leaf or size is refused.

use cairn_core::proof::InteropError;
use cairn_core::{
    AppendWitness, AppendWitnessError, Hash, HashKind, LeanImt, TreeConfig, TreeHead,
};
use cairn_testkit::reference;

use crate::support::arity;

fn poseidon2(left: &Hash, right: &Hash) -> Hash {
    HashKind::Poseidon.hash_children(&[*left, *right])
}

fn field(text: &serde_json::Value) -> Hash {
    cairn_core::decimal::parse_field_element(text.as_str().expect("a decimal string"))
        .expect("a field element")
}

/// The circuit's computation, step for step: the fold of the frontier
/// (the old root) and the windows level by level (the new root).
fn circuit_roots(input: &serde_json::Value, depth: usize) -> (Hash, Hash) {
    let size: u64 = input["size"].as_str().unwrap().parse().unwrap();
    let frontier: Vec<Hash> = input["frontier"]
        .as_array()
        .unwrap()
        .iter()
        .map(field)
        .collect();
    let leaves: Vec<Hash> = input["leaves"]
        .as_array()
        .unwrap()
        .iter()
        .map(field)
        .collect();
    assert_eq!(frontier.len(), depth);
    let bit = |k: usize| k < depth && (size >> k) & 1 == 1;
    for (k, node) in frontier.iter().enumerate() {
        assert!(
            bit(k) || *node == [0; 32],
            "frontier slot {k} is not 0 where bit {k} of {size} is clear"
        );
    }
    // The old root: the fold, smallest subtree first.
    let mut acc = [0u8; 32];
    let mut started = false;
    for (k, node) in frontier.iter().enumerate() {
        if bit(k) {
            acc = if started {
                poseidon2(node, &acc)
            } else {
                *node
            };
            started = true;
        }
    }
    // The windows, as (value, present) slots.
    let mut window: Vec<(Hash, bool)> = Vec::new();
    if bit(0) {
        window.push((frontier[0], true));
    }
    window.extend(leaves.iter().map(|leaf| (*leaf, true)));
    for k in 0..depth {
        let mut next: Vec<(Hash, bool)> = Vec::new();
        if bit(k + 1) {
            next.push((frontier[k + 1], true));
        }
        for pair in window.chunks(2) {
            match pair {
                [(left, true), (right, true)] => next.push((poseidon2(left, right), true)),
                [(left, true), ..] => next.push((*left, true)),
                _ => unreachable!("windows are prefixes"),
            }
        }
        let bound = 2 + (leaves.len() - 1).div_ceil(1 << (k + 1));
        assert!(
            next.len() <= bound,
            "level {}: {} nodes over the bound {bound}",
            k + 1,
            next.len()
        );
        window = next;
    }
    assert_eq!(window.len(), 1, "one node at the top");
    (acc, window[0].0)
}

fn decimal_root(root: Option<Hash>) -> Hash {
    root.unwrap_or([0; 32])
}

#[test]
fn append_witnesses_recompute_both_roots_and_the_circuit_model_agrees() {
    let config = TreeConfig::new(arity(2), HashKind::Poseidon);
    let leaves = cairn_testkit::leaves(7, 140);
    let mut tree = LeanImt::from_leaves(config, &leaves).expect("canonical leaves");
    let snapshot = tree.snapshot();
    let mut checked = 0;
    for from in (0..=70u64).chain([96, 124, 127, 128]) {
        for k in [4u64, 8, 12] {
            let to = from + k;
            let witness = snapshot.append_witness(from, to).expect("within the tree");
            witness.check().expect("the witness holds");
            let old = reference::root(arity(2), HashKind::Poseidon, &leaves[..from as usize]);
            let new = reference::root(arity(2), HashKind::Poseidon, &leaves[..to as usize]);
            assert_eq!(
                witness.old(),
                TreeHead {
                    size: from,
                    root: old
                }
            );
            assert_eq!(
                witness.new_head(),
                TreeHead {
                    size: to,
                    root: new
                }
            );
            assert_eq!(witness.leaves(), &leaves[from as usize..to as usize]);
            let needed = config.depth_at(to).max(1) as usize;
            for depth in [needed, needed + 3] {
                let json = witness.to_circom_json(Some(depth as u32)).expect("renders");
                let input: serde_json::Value = serde_json::from_str(&json).expect("JSON");
                assert_eq!(input["size"], from.to_string());
                assert_eq!(
                    field(&input["oldRoot"]),
                    decimal_root(old),
                    "old root at {from}"
                );
                assert_eq!(
                    field(&input["newRoot"]),
                    decimal_root(new),
                    "new root at {to}"
                );
                assert_eq!(
                    circuit_roots(&input, depth),
                    (decimal_root(old), new.unwrap()),
                    "{from}..{to} at depth {depth}"
                );
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 75 * 3);
}

#[test]
fn the_commitment_is_the_poseidon5_chain_over_groups_of_four() {
    let config = TreeConfig::new(arity(2), HashKind::Poseidon);
    let leaves = cairn_testkit::leaves(8, 20);
    let mut tree = LeanImt::from_leaves(config, &leaves).expect("canonical leaves");
    let witness = tree
        .snapshot()
        .append_witness(3, 11)
        .expect("within the tree");
    let first =
        HashKind::Poseidon.hash_children(&[[0; 32], leaves[3], leaves[4], leaves[5], leaves[6]]);
    let second =
        HashKind::Poseidon.hash_children(&[first, leaves[7], leaves[8], leaves[9], leaves[10]]);
    assert_eq!(witness.commitment(), Some(second));
    let input: serde_json::Value =
        serde_json::from_str(&witness.to_circom_json(None).unwrap()).unwrap();
    assert_eq!(field(&input["commitment"]), second);
    // A batch that is not a multiple of four has no commitment and no circuit input.
    let odd = tree
        .snapshot()
        .append_witness(3, 9)
        .expect("within the tree");
    assert_eq!(odd.commitment(), None);
    assert!(matches!(
        odd.to_circom_json(None),
        Err(InteropError::BatchSize {
            circuit: "append",
            leaves: 6,
            group: 4
        })
    ));
}

#[test]
fn a_changed_frontier_leaf_or_size_is_refused() {
    let config = TreeConfig::new(arity(2), HashKind::Poseidon);
    let leaves = cairn_testkit::leaves(9, 40);
    let mut tree = LeanImt::from_leaves(config, &leaves).expect("canonical leaves");
    let snapshot = tree.snapshot();
    let witness = snapshot.append_witness(21, 29).expect("within the tree");
    let rebuild =
        |old: TreeHead, new: TreeHead, frontier: cairn_core::Frontier, batch: Vec<Hash>| {
            AppendWitness::new(config, old, new, frontier, batch)
        };
    let (old, new) = (witness.old(), witness.new_head());
    assert!(
        rebuild(
            old,
            new,
            witness.frontier().clone(),
            witness.leaves().to_vec()
        )
        .is_ok()
    );

    // Each frontier node (21 = 10101b: three of them) changed.
    assert_eq!(witness.frontier().nodes().len(), 3);
    for at in 0..3 {
        let mut nodes = witness.frontier().nodes().to_vec();
        nodes[at][31] ^= 1;
        let frontier = cairn_core::Frontier::new(arity(2), 21, nodes).unwrap();
        let refused = rebuild(old, new, frontier, witness.leaves().to_vec());
        assert!(
            matches!(refused, Err(AppendWitnessError::OldRoot { .. })),
            "frontier node {at}: {refused:?}"
        );
    }
    // A leaf changed.
    let mut batch = witness.leaves().to_vec();
    batch[5][31] ^= 1;
    let refused = rebuild(old, new, witness.frontier().clone(), batch);
    assert!(
        matches!(refused, Err(AppendWitnessError::NewRoot { .. })),
        "{refused:?}"
    );
    // Another size with the same nodes: the frontier is of 21 leaves.
    let moved = TreeHead { size: 22, ..old };
    let refused = rebuild(
        moved,
        new,
        witness.frontier().clone(),
        witness.leaves().to_vec(),
    );
    assert!(
        matches!(
            refused,
            Err(AppendWitnessError::FrontierSize { got: 21, want: 22 })
        ),
        "{refused:?}"
    );
    // A batch one leaf short of the new size.
    let refused = rebuild(
        old,
        new,
        witness.frontier().clone(),
        witness.leaves()[1..].to_vec(),
    );
    assert!(
        matches!(refused, Err(AppendWitnessError::Sizes { .. })),
        "{refused:?}"
    );
}
