//! Consistency proofs a verifier must reject: relabelled sizes, swapped
//! roots, another tree, wrong lengths, the edge leaf, non-canonical
//! Poseidon values, and mutations only JSON can express.

use anyhow::{Context, Result};
use cairn_core::{HashKind, LeanImt, TreeConfig, TreeHead};

use super::*;

/// The binary consistency cases.
pub(super) fn binary(t: &Trees<'_>, out: &mut Cases) -> Result<()> {
    use HashKind::{Blake3 as B3, Poseidon, Sha256};
    use Stage::{Decode, Verify};
    let leaves = t.leaves;
    let bin = Input::Binary;
    let consistent = |old, new| Trusted::Consistency { old, new };

    let mut t4 = t.tree(2, B3, 4)?;
    let mut t8 = t.tree(2, B3, 8)?;
    let mut t2 = t.tree(2, B3, 2)?;
    // ---- consistency ----------------------------------------------------------
    let c4 = consistent(t.head(2, B3, 2)?, t.head(2, B3, 4)?);
    // The relabelled 2 -> 4 proof computes the 4-leaf root as a "3-leaf"
    // root (of [l0, l1, H(l2, l3)]); only the trusted size refuses it.
    let forged = relabel(t4.prove_consistency(2, 4)?.to_bytes(), 2, 3);
    let three_with_root4 = TreeHead {
        size: 3,
        root: t4.root(),
    };
    ConsistencyProof::from_bytes(&forged)?
        .verify(arity(2), B3, &t4.at_size(2)?.head(), &three_with_root4)
        .context("forged-consistency: the relabelled proof does not compute the 4-leaf root")?;
    out.add(
        "forged-consistency-2-to-3-against-4-leaf-root",
        B3,
        2,
        c4,
        bin(forged),
        Verify,
    );
    out.add(
        "honest-consistency-2-to-3-against-4-leaf-root",
        B3,
        2,
        c4,
        bin(t4.prove_consistency(2, 3)?.to_bytes()),
        Verify,
    );
    out.add(
        "consistency-2-to-3-relabelled-as-2-to-4",
        B3,
        2,
        c4,
        bin(relabel(t4.prove_consistency(2, 3)?.to_bytes(), 2, 4)),
        Verify,
    );

    let mut t40 = t.tree(4, B3, 40)?;
    let (o7, n40) = (t40.at_size(7)?.head(), t40.head());
    let c40 = consistent(o7, n40);
    let c = t40.prove_consistency(7, 40)?.to_bytes();
    let swapped_roots = consistent(
        TreeHead {
            size: 7,
            root: n40.root,
        },
        TreeHead {
            size: 40,
            root: o7.root,
        },
    );
    out.add(
        "swapped-roots",
        B3,
        4,
        swapped_roots,
        bin(c.clone()),
        Verify,
    );
    let other5 = LeanImt::from_leaves(TreeConfig::new(arity(4), B3), &leaves[100..105])?.head();
    out.add(
        "equal-sizes-different-roots",
        B3,
        4,
        consistent(t40.at_size(5)?.head(), other5),
        bin(t40.prove_consistency(5, 5)?.to_bytes()),
        Verify,
    );
    out.add(
        "old-size-above-new",
        B3,
        4,
        c40,
        bin(relabel(c.clone(), 40, 7)),
        Decode,
    );
    let c8 = consistent(t.head(2, B3, 6)?, t.head(2, B3, 8)?);
    out.add(
        "consistency-relabelled-old-size",
        B3,
        2,
        c8,
        bin(relabel(t8.prove_consistency(5, 8)?.to_bytes(), 6, 8)),
        Verify,
    );
    out.add(
        "consistency-extra-hash",
        B3,
        4,
        c40,
        bin(appended(c.clone(), &value_at(&c, BODY))),
        Decode,
    );
    out.add(
        "consistency-missing-hash",
        B3,
        4,
        c40,
        bin(c[..c.len() - 32].to_vec()),
        Decode,
    );
    out.add(
        "consistency-zero-padding-hash",
        B3,
        4,
        c40,
        bin(appended(c.clone(), &[0; 32])),
        Decode,
    );
    out.add(
        "consistency-truncated",
        B3,
        4,
        c40,
        bin(c[..c.len() - 1].to_vec()),
        Decode,
    );
    out.add(
        "consistency-trailing-garbage",
        B3,
        4,
        c40,
        bin(appended(c.clone(), &[0xde, 0xad, 0xbe, 0xef])),
        Decode,
    );
    let mut no_edge = c[..20].to_vec();
    no_edge.extend_from_slice(&c[BODY..]);
    out.add(
        "consistency-missing-edge-leaf",
        B3,
        4,
        c40,
        bin(no_edge),
        Decode,
    );
    out.add(
        "consistency-edge-leaf-substituted",
        B3,
        4,
        c40,
        bin(with_value(c.clone(), 20, &leaves[0])),
        Verify,
    );
    out.add(
        "consistency-wrong-hash-id",
        B3,
        4,
        c40,
        bin(with_byte(c.clone(), 3, Sha256.id())),
        Verify,
    );
    out.add(
        "consistency-unknown-version",
        B3,
        4,
        c40,
        bin(with_byte(c.clone(), 0, 3)),
        Decode,
    );
    out.add(
        "consistency-wrong-kind",
        B3,
        4,
        c40,
        bin(with_byte(c.clone(), 1, 1)),
        Decode,
    );
    out.add(
        "membership-bytes-as-consistency",
        B3,
        4,
        c40,
        bin(t40.prove(3)?.to_bytes()),
        Decode,
    );
    let c2 = consistent(t2.at_size(1)?.head(), t2.head());
    out.add(
        "consistency-wrong-arity",
        B3,
        2,
        c2,
        bin(with_byte(t2.prove_consistency(1, 2)?.to_bytes(), 2, 3)),
        Verify,
    );
    let c05 = consistent(TreeHead::EMPTY, t40.at_size(5)?.head());
    let from_empty = t40.prove_consistency(0, 5)?.to_bytes();
    out.add(
        "consistency-from-empty-with-edge-leaf",
        B3,
        4,
        c05,
        bin(appended(from_empty.clone(), &leaves[0])),
        Decode,
    );
    out.add(
        "consistency-from-empty-wrong-new-size",
        B3,
        4,
        c05,
        bin(relabel(from_empty.clone(), 0, 6)),
        Verify,
    );
    let mut tp7 = t.tree(2, Poseidon, 7)?;
    let cp7 = consistent(tp7.at_size(3)?.head(), tp7.head());
    let cp = tp7.prove_consistency(3, 7)?.to_bytes();
    out.add(
        "non-canonical-poseidon-consistency-hash",
        Poseidon,
        2,
        cp7,
        bin(with_value(
            cp.clone(),
            BODY,
            &plus_modulus(&value_at(&cp, BODY)),
        )),
        Verify,
    );
    out.add(
        "non-canonical-poseidon-edge-leaf",
        Poseidon,
        2,
        cp7,
        bin(with_value(
            cp.clone(),
            20,
            &plus_modulus(&value_at(&cp, 20)),
        )),
        Verify,
    );

    Ok(())
}

/// The JSON-only consistency cases.
pub(super) fn json(t: &Trees<'_>, out: &mut Cases) -> Result<()> {
    use HashKind::Blake3 as B3;
    use Stage::Decode;
    let leaves = t.leaves;
    let consistent = |old, new| Trusted::Consistency { old, new };
    let json = Input::Json;

    let mut t40 = t.tree(4, B3, 40)?;
    let c40 = consistent(t40.at_size(7)?.head(), t40.head());
    let c05 = consistent(TreeHead::EMPTY, t40.at_size(5)?.head());
    let c7 = doc(t40.prove_consistency(7, 40)?.to_json())?;
    out.add(
        "json-mislabelled-level",
        B3,
        4,
        c40,
        json(edit(c7.clone(), &|v| {
            if let Some(Json::Num(label)) = array(v, "levels")[0].get_mut("level") {
                *label += 1;
            }
        })),
        Decode,
    );
    out.add(
        "json-level-dropped",
        B3,
        4,
        c40,
        json(edit(c7.clone(), &|v| {
            array(v, "levels").pop();
        })),
        Decode,
    );
    out.add(
        "json-hash-moved-from-left-to-right",
        B3,
        4,
        c40,
        json(edit(c7.clone(), &|v| {
            for entry in array(v, "levels").iter_mut() {
                let moved = match entry.get_mut("left") {
                    Some(Json::Arr(left)) => left.pop(),
                    _ => None,
                };
                if let (Some(moved), Some(Json::Arr(right))) = (moved, entry.get_mut("right")) {
                    right.insert(0, moved);
                    return;
                }
            }
        })),
        Decode,
    );
    out.add(
        "json-missing-edge-leaf",
        B3,
        4,
        c40,
        json(edit(c7.clone(), &|v| set(v, "edge_leaf", Json::Null))),
        Decode,
    );
    out.add(
        "json-edge-leaf-for-old-size-0",
        B3,
        4,
        c05,
        json(edit(doc(t40.prove_consistency(0, 5)?.to_json())?, &|v| {
            set(v, "edge_leaf", Json::hash(&leaves[0]))
        })),
        Decode,
    );
    Ok(())
}
