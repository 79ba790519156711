//! Membership proofs a verifier must reject: relabelled header fields, an
//! internal node presented as a leaf, wrong lengths, header bytes, values
//! (swapped, from another tree, non-canonical Poseidon), and mutations only
//! JSON can express.

use anyhow::{Context, Result};
use cairn_core::{HashKind, LeanImt, TreeConfig, TreeHead};

use super::*;

/// The binary membership cases.
pub(super) fn binary(t: &Trees<'_>, out: &mut Cases) -> Result<()> {
    use HashKind::{Blake3 as B3, Poseidon, Sha256};
    use Stage::{Decode, Verify};
    let leaves = t.leaves;
    let bin = Input::Binary;
    let member = Trusted::Membership;

    // ---- membership: relabelled header fields -------------------------------
    let mut t4 = t.tree(2, B3, 4)?;
    let h4 = member(t.head(2, B3, 4)?);
    out.add(
        "relabelled-index",
        B3,
        2,
        h4,
        bin(relabel(t4.prove_at(2, 3)?.to_bytes(), 3, 4)),
        Decode,
    );
    out.add(
        "relabelled-index-same-shape",
        B3,
        2,
        h4,
        bin(relabel(t4.prove_at(2, 4)?.to_bytes(), 3, 4)),
        Verify,
    );
    let mut t8 = t.tree(2, B3, 8)?;
    let h8 = member(t.head(2, B3, 8)?);
    out.add(
        "relabelled-size-same-depth",
        B3,
        2,
        h8,
        bin(relabel(t8.prove_at(4, 5)?.to_bytes(), 4, 8)),
        Decode,
    );
    out.add(
        "relabelled-size-same-depth-same-shape",
        B3,
        2,
        h8,
        bin(relabel(t8.prove_at(0, 5)?.to_bytes(), 0, 8)),
        Verify,
    );
    out.add(
        "stale-size",
        B3,
        2,
        h8,
        bin(t8.prove_at(0, 5)?.to_bytes()),
        Verify,
    );

    // ---- membership: an internal node as a leaf ------------------------------
    // Node 1 of level 1 at N = 4 (the parent of leaves 4..8) with the level-1
    // siblings of leaf 5 computes the 16-leaf root: a well-formed proof of
    // "leaf 1 of 4". Bound to size 4, it fails against the trusted size 16;
    // relabelled to size 16, it lacks a level of siblings.
    let mut t16 = t.tree(4, B3, 16)?;
    let h16 = member(t16.head());
    let node = t16.node(1, 1).context("node (1, 1)")?;
    let upper = t16.prove(5)?.siblings()[3..].to_vec();
    let mut forged = vec![1, 1, 4, B3.id()];
    forged.extend_from_slice(&1u64.to_be_bytes());
    forged.extend_from_slice(&4u64.to_be_bytes());
    forged.extend_from_slice(&node);
    forged.extend_from_slice(upper.as_flattened());
    // The forgery is meaningful: it computes the trusted root, and only the
    // size binds it out.
    let four_with_root16 = TreeHead {
        size: 4,
        root: t16.root(),
    };
    MembershipProof::from_bytes(&forged)?
        .verify(arity(4), B3, &four_with_root16)
        .context("internal-node-as-leaf: the forgery does not compute the 16-leaf root")?;
    out.add(
        "internal-node-as-leaf",
        B3,
        4,
        h16,
        bin(forged.clone()),
        Verify,
    );
    out.add(
        "internal-node-as-leaf-at-trusted-size",
        B3,
        4,
        h16,
        bin(relabel(forged, 1, 16)),
        Decode,
    );

    // ---- membership: wrong number of bytes -----------------------------------
    let mut t10 = t.tree(4, B3, 10)?;
    let h10 = member(t10.head());
    let last = t10.prove(9)?.to_bytes();
    let first_sibling = value_at(&last, BODY);
    out.add(
        "extra-sibling",
        B3,
        4,
        h10,
        bin(appended(last.clone(), &first_sibling)),
        Decode,
    );
    out.add(
        "missing-sibling",
        B3,
        4,
        h10,
        bin(last[..last.len() - 32].to_vec()),
        Decode,
    );
    out.add(
        "zero-padding-sibling",
        B3,
        4,
        h10,
        bin(appended(last.clone(), &[0; 32])),
        Decode,
    );
    out.add(
        "truncated",
        B3,
        4,
        h10,
        bin(last[..last.len() - 1].to_vec()),
        Decode,
    );
    out.add(
        "truncated-header",
        B3,
        4,
        h10,
        bin(last[..19].to_vec()),
        Decode,
    );
    out.add("empty", B3, 4, h10, bin(Vec::new()), Decode);
    out.add(
        "trailing-garbage",
        B3,
        4,
        h10,
        bin(appended(last.clone(), &[0xde, 0xad, 0xbe, 0xef])),
        Decode,
    );

    // ---- membership: header bytes --------------------------------------------
    let p3 = t10.prove(3)?.to_bytes();
    out.add(
        "wrong-hash-id",
        B3,
        4,
        h10,
        bin(with_byte(p3.clone(), 3, Sha256.id())),
        Verify,
    );
    out.add(
        "wrong-hash-id-trusted-as-claimed",
        Sha256,
        4,
        h10,
        bin(with_byte(p3.clone(), 3, Sha256.id())),
        Verify,
    );
    out.add(
        "unknown-hash-id",
        B3,
        4,
        h10,
        bin(with_byte(p3.clone(), 3, 0)),
        Decode,
    );
    out.add(
        "unknown-hash-id-6",
        B3,
        4,
        h10,
        bin(with_byte(p3.clone(), 3, 6)),
        Decode,
    );
    let mut t2 = t.tree(2, B3, 2)?;
    out.add(
        "wrong-arity",
        B3,
        2,
        member(t2.head()),
        bin(with_byte(t2.prove(0)?.to_bytes(), 2, 3)),
        Verify,
    );
    out.add(
        "arity-out-of-range",
        B3,
        4,
        h10,
        bin(with_byte(p3.clone(), 2, 17)),
        Decode,
    );
    out.add(
        "arity-one",
        B3,
        4,
        h10,
        bin(with_byte(p3.clone(), 2, 1)),
        Decode,
    );
    out.add(
        "unknown-version",
        B3,
        4,
        h10,
        bin(with_byte(p3.clone(), 0, 3)),
        Decode,
    );
    out.add(
        "version-zero",
        B3,
        4,
        h10,
        bin(with_byte(p3.clone(), 0, 0)),
        Decode,
    );
    out.add(
        "wrong-kind",
        B3,
        4,
        h10,
        bin(with_byte(p3.clone(), 1, 2)),
        Decode,
    );
    out.add(
        "index-equals-size",
        B3,
        4,
        h10,
        bin(relabel(last.clone(), 10, 10)),
        Decode,
    );
    out.add(
        "index-above-size",
        B3,
        4,
        h10,
        bin(relabel(last.clone(), 11, 10)),
        Decode,
    );
    out.add(
        "size-zero",
        B3,
        4,
        h10,
        bin(relabel(last.clone(), 0, 0)),
        Decode,
    );
    out.add(
        "consistency-bytes-as-membership",
        B3,
        4,
        h10,
        bin(t10.prove_consistency(3, 10)?.to_bytes()),
        Decode,
    );

    // ---- membership: values --------------------------------------------------
    out.add(
        "leaf-substituted",
        B3,
        4,
        h10,
        bin(with_value(p3.clone(), 20, &leaves[4])),
        Verify,
    );
    let p1 = t10.prove(1)?.to_bytes();
    let mut swapped = p1.clone();
    swapped[BODY..BODY + 32].copy_from_slice(&p1[BODY + 32..BODY + 64]);
    swapped[BODY + 32..BODY + 64].copy_from_slice(&p1[BODY..BODY + 32]);
    out.add(
        "siblings-swapped-within-level",
        B3,
        4,
        h10,
        bin(swapped),
        Verify,
    );
    out.add(
        "index-moved-within-group",
        B3,
        4,
        h10,
        bin(relabel(p1.clone(), 2, 10)),
        Verify,
    );
    let mut other = LeanImt::from_leaves(TreeConfig::new(arity(4), B3), &leaves[100..110])?;
    out.add(
        "proof-from-another-tree",
        B3,
        4,
        h10,
        bin(other.prove(3)?.to_bytes()),
        Verify,
    );
    out.add(
        "trusted-head-without-root",
        B3,
        4,
        member(TreeHead {
            size: 10,
            root: None,
        }),
        bin(p3.clone()),
        Verify,
    );

    // ---- membership: non-canonical Poseidon values ---------------------------
    let mut tp3 = t.tree(2, Poseidon, 3)?;
    let hp3 = member(tp3.head());
    let pp = tp3.prove(0)?.to_bytes();
    out.add(
        "non-canonical-poseidon-sibling",
        Poseidon,
        2,
        hp3,
        bin(with_value(
            pp.clone(),
            BODY,
            &plus_modulus(&value_at(&pp, BODY)),
        )),
        Verify,
    );
    out.add(
        "non-canonical-poseidon-leaf",
        Poseidon,
        2,
        hp3,
        bin(with_value(
            pp.clone(),
            20,
            &plus_modulus(&value_at(&pp, 20)),
        )),
        Verify,
    );
    out.add(
        "non-canonical-poseidon-sibling-all-ones",
        Poseidon,
        2,
        hp3,
        bin(with_value(pp.clone(), BODY + 32, &[0xff; 32])),
        Verify,
    );

    Ok(())
}

/// The JSON-only membership cases.
pub(super) fn json(t: &Trees<'_>, out: &mut Cases) -> Result<()> {
    use HashKind::Blake3 as B3;
    use Stage::{Decode, Verify};
    let leaves = t.leaves;
    let member = Trusted::Membership;
    let json = Input::Json;
    let mut t10 = t.tree(4, B3, 10)?;
    let h10 = member(t10.head());
    let m5 = doc(t10.prove(5)?.to_json())?;
    out.add(
        "json-sibling-moved-between-levels",
        B3,
        4,
        h10,
        json(edit(m5.clone(), &|v| {
            let moved = level(v, 0).pop().unwrap_or(Json::Null);
            level(v, 1).insert(0, moved);
        })),
        Decode,
    );
    out.add(
        "json-extra-level",
        B3,
        4,
        h10,
        json(edit(m5.clone(), &|v| {
            array(v, "siblings").push(Json::Arr(Vec::new()))
        })),
        Decode,
    );
    let mut t9 = t.tree(4, B3, 9)?;
    out.add(
        "json-empty-lifted-level",
        B3,
        4,
        member(t9.head()),
        json(edit(doc(t9.prove(8)?.to_json())?, &|v| {
            array(v, "siblings").insert(0, Json::Arr(Vec::new()))
        })),
        Decode,
    );
    let root10 = t10.root().context("a 10-leaf tree has a root")?;
    out.add(
        "json-proof-carries-root",
        B3,
        4,
        h10,
        json(edit(m5.clone(), &|v| {
            if let Json::Obj(fields) = v {
                fields.push(("root".to_owned(), Json::hash(&root10)));
            }
        })),
        Decode,
    );
    out.add(
        "json-missing-field",
        B3,
        4,
        h10,
        json(edit(m5.clone(), &|v| {
            if let Json::Obj(fields) = v {
                fields.retain(|(k, _)| k != "size");
            }
        })),
        Decode,
    );
    let leaf_text = to_text(m5.get("leaf"))?;
    out.add(
        "json-hash-without-0x",
        B3,
        4,
        h10,
        json(edit(m5.clone(), &|v| {
            set(v, "leaf", Json::from(&leaf_text[2..]))
        })),
        Decode,
    );
    out.add(
        "json-short-hash",
        B3,
        4,
        h10,
        json(edit(m5.clone(), &|v| {
            set(v, "leaf", Json::from(&leaf_text[..64]))
        })),
        Decode,
    );
    out.add(
        "json-non-hex-digit",
        B3,
        4,
        h10,
        json(edit(m5.clone(), &|v| {
            set(v, "leaf", Json::from(format!("{}g", &leaf_text[..65])))
        })),
        Decode,
    );
    out.add(
        "json-wrong-kind",
        B3,
        4,
        h10,
        json(edit(m5.clone(), &|v| {
            set(v, "kind", Json::from("consistency"))
        })),
        Decode,
    );
    out.add(
        "json-unknown-hash-name",
        B3,
        4,
        h10,
        json(edit(m5.clone(), &|v| set(v, "hash", Json::from("sha3")))),
        Decode,
    );
    out.add(
        "json-index-as-string",
        B3,
        4,
        h10,
        json(edit(m5.clone(), &|v| set(v, "index", Json::from("5")))),
        Decode,
    );
    out.add(
        "json-negative-index",
        B3,
        4,
        h10,
        json(edit(m5.clone(), &|v| set(v, "index", Json::Num(-1)))),
        Decode,
    );
    out.add(
        "json-unknown-version",
        B3,
        4,
        h10,
        json(edit(m5.clone(), &|v| set(v, "version", Json::from(3u64)))),
        Decode,
    );
    out.add(
        "json-sibling-substituted",
        B3,
        4,
        h10,
        json(edit(m5.clone(), &|v| {
            level(v, 1)[0] = Json::hash(&leaves[0])
        })),
        Verify,
    );

    Ok(())
}
