//! `invalid-proofs.json`: proofs a verifier must reject, each named after the
//! mutation that made it, with the stage (decode or verify) cairn rejects it
//! at; and, for a few valid proofs, every single-bit flip of their encoding.

use anyhow::{Context, Result, bail, ensure};
use cairn_core::hash::BN254_MODULUS_BE;
use cairn_core::{
    Arity, ConsistencyProof, Hash, HashKind, LeanImt, MembershipProof, TreeConfig, TreeHead,
};

use crate::json::Json;

/// Where a proof was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// The bytes or document are not a well-formed proof.
    Decode,
    /// A well-formed proof that does not prove the trusted claim.
    Verify,
}

impl Stage {
    fn name(self) -> &'static str {
        match self {
            Stage::Decode => "decode",
            Stage::Verify => "verify",
        }
    }
}

/// What the verifier trusts besides the arity and hash.
#[derive(Clone, Copy, Debug)]
pub enum Trusted {
    Membership(TreeHead),
    Consistency { old: TreeHead, new: TreeHead },
}

impl Trusted {
    fn kind(&self) -> &'static str {
        match self {
            Trusted::Membership(_) => "membership",
            Trusted::Consistency { .. } => "consistency",
        }
    }

    fn to_json(self) -> Json {
        match self {
            Trusted::Membership(head) => Json::obj([
                ("size", Json::from(head.size)),
                ("root", Json::hash_or_null(head.root)),
            ]),
            Trusted::Consistency { old, new } => Json::obj([
                ("old_size", Json::from(old.size)),
                ("old_root", Json::hash_or_null(old.root)),
                ("new_size", Json::from(new.size)),
                ("new_root", Json::hash_or_null(new.root)),
            ]),
        }
    }
}

/// The rejected input: a binary encoding or a JSON document.
#[derive(Clone, Debug)]
pub enum Input {
    Binary(Vec<u8>),
    Json(Json),
}

/// The name of an error's variant, from its `Debug` form.
fn variant<E: std::fmt::Debug>(error: &E) -> String {
    format!("{error:?}")
        .split(|c: char| !c.is_ascii_alphanumeric())
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// Decodes `input` as the kind `trusted` implies and verifies it; `Ok` if
/// it is accepted, else the stage and error variant that rejected it.
pub fn judge(
    hash: HashKind,
    arity: Arity,
    trusted: &Trusted,
    input: &Input,
) -> Result<(), (Stage, String)> {
    let decode = |e: cairn_core::DecodeError| (Stage::Decode, variant(&e));
    let verify = |e: cairn_core::VerifyError| (Stage::Verify, variant(&e));
    match trusted {
        Trusted::Membership(head) => {
            let proof = match input {
                Input::Binary(bytes) => MembershipProof::from_bytes(bytes),
                Input::Json(doc) => MembershipProof::from_json(&doc.to_compact()),
            }
            .map_err(decode)?;
            proof.verify(arity, hash, head).map_err(verify)
        }
        Trusted::Consistency { old, new } => {
            let proof = match input {
                Input::Binary(bytes) => ConsistencyProof::from_bytes(bytes),
                Input::Json(doc) => ConsistencyProof::from_json(&doc.to_compact()),
            }
            .map_err(decode)?;
            proof.verify(arity, hash, old, new).map_err(verify)
        }
    }
}

/// One named negative case.
#[derive(Debug)]
struct Case {
    name: &'static str,
    hash: HashKind,
    arity: Arity,
    trusted: Trusted,
    input: Input,
    expect: Stage,
}

/// Sets the two u64 header fields (index and size, or old and new size).
fn relabel(mut bytes: Vec<u8>, first: u64, second: u64) -> Vec<u8> {
    bytes[4..12].copy_from_slice(&first.to_be_bytes());
    bytes[12..20].copy_from_slice(&second.to_be_bytes());
    bytes
}

fn with_byte(mut bytes: Vec<u8>, at: usize, value: u8) -> Vec<u8> {
    bytes[at] = value;
    bytes
}

fn with_value(mut bytes: Vec<u8>, at: usize, value: &Hash) -> Vec<u8> {
    bytes[at..at + 32].copy_from_slice(value);
    bytes
}

fn value_at(bytes: &[u8], at: usize) -> Hash {
    bytes[at..at + 32]
        .try_into()
        .unwrap_or_else(|_| unreachable!("32 bytes"))
}

fn appended(mut bytes: Vec<u8>, extra: &[u8]) -> Vec<u8> {
    bytes.extend_from_slice(extra);
    bytes
}

/// `value + p` for the BN254 modulus p: the same field element, as a
/// non-canonical 32-byte encoding (fits because value < p < 2^256 / 2).
fn plus_modulus(value: &Hash) -> Hash {
    let mut out = [0u8; 32];
    let mut carry = 0u16;
    for i in (0..32).rev() {
        let sum = u16::from(value[i]) + u16::from(BN254_MODULUS_BE[i]) + carry;
        out[i] = sum as u8;
        carry = sum >> 8;
    }
    assert_eq!(carry, 0, "value + p overflows 256 bits");
    out
}

/// Offset of the first sibling or hash after the header and leaf.
const BODY: usize = 20 + 32;

struct Trees<'a> {
    leaves: &'a [Hash],
}

impl Trees<'_> {
    fn tree(&self, n: u64, hash: HashKind, count: usize) -> Result<LeanImt> {
        Ok(LeanImt::from_leaves(
            TreeConfig::new(Arity::new(n)?, hash),
            &self.leaves[..count],
        )?)
    }

    fn head(&self, n: u64, hash: HashKind, size: u64) -> Result<TreeHead> {
        Ok(self.tree(n, hash, size as usize)?.head())
    }
}

fn arity(n: u64) -> Arity {
    Arity::new(n).unwrap_or_else(|e| unreachable!("{e}"))
}

fn cases(leaves: &[Hash]) -> Result<Vec<Case>> {
    use HashKind::{Blake3 as B3, Poseidon, Sha256};
    use Stage::{Decode, Verify};
    let t = Trees { leaves };
    let mut out = Vec::new();
    let mut add = |name, hash, n: u64, trusted, input, expect| {
        out.push(Case {
            name,
            hash,
            arity: arity(n),
            trusted,
            input,
            expect,
        });
    };
    let bin = Input::Binary;
    let member = Trusted::Membership;
    let consistent = |old, new| Trusted::Consistency { old, new };

    // ---- membership: relabelled header fields -------------------------------
    let mut t4 = t.tree(2, B3, 4)?;
    let h4 = member(t.head(2, B3, 4)?);
    add(
        "relabelled-index",
        B3,
        2,
        h4,
        bin(relabel(t4.prove_at(2, 3)?.to_bytes(), 3, 4)),
        Decode,
    );
    add(
        "relabelled-index-same-shape",
        B3,
        2,
        h4,
        bin(relabel(t4.prove_at(2, 4)?.to_bytes(), 3, 4)),
        Verify,
    );
    let mut t8 = t.tree(2, B3, 8)?;
    let h8 = member(t.head(2, B3, 8)?);
    add(
        "relabelled-size-same-depth",
        B3,
        2,
        h8,
        bin(relabel(t8.prove_at(4, 5)?.to_bytes(), 4, 8)),
        Decode,
    );
    add(
        "relabelled-size-same-depth-same-shape",
        B3,
        2,
        h8,
        bin(relabel(t8.prove_at(0, 5)?.to_bytes(), 0, 8)),
        Verify,
    );
    add(
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
    add(
        "internal-node-as-leaf",
        B3,
        4,
        h16,
        bin(forged.clone()),
        Verify,
    );
    add(
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
    add(
        "extra-sibling",
        B3,
        4,
        h10,
        bin(appended(last.clone(), &first_sibling)),
        Decode,
    );
    add(
        "missing-sibling",
        B3,
        4,
        h10,
        bin(last[..last.len() - 32].to_vec()),
        Decode,
    );
    add(
        "zero-padding-sibling",
        B3,
        4,
        h10,
        bin(appended(last.clone(), &[0; 32])),
        Decode,
    );
    add(
        "truncated",
        B3,
        4,
        h10,
        bin(last[..last.len() - 1].to_vec()),
        Decode,
    );
    add(
        "truncated-header",
        B3,
        4,
        h10,
        bin(last[..19].to_vec()),
        Decode,
    );
    add("empty", B3, 4, h10, bin(Vec::new()), Decode);
    add(
        "trailing-garbage",
        B3,
        4,
        h10,
        bin(appended(last.clone(), &[0xde, 0xad, 0xbe, 0xef])),
        Decode,
    );

    // ---- membership: header bytes --------------------------------------------
    let p3 = t10.prove(3)?.to_bytes();
    add(
        "wrong-hash-id",
        B3,
        4,
        h10,
        bin(with_byte(p3.clone(), 3, Sha256.id())),
        Verify,
    );
    add(
        "wrong-hash-id-trusted-as-claimed",
        Sha256,
        4,
        h10,
        bin(with_byte(p3.clone(), 3, Sha256.id())),
        Verify,
    );
    add(
        "unknown-hash-id",
        B3,
        4,
        h10,
        bin(with_byte(p3.clone(), 3, 0)),
        Decode,
    );
    add(
        "unknown-hash-id-6",
        B3,
        4,
        h10,
        bin(with_byte(p3.clone(), 3, 6)),
        Decode,
    );
    let mut t2 = t.tree(2, B3, 2)?;
    add(
        "wrong-arity",
        B3,
        2,
        member(t2.head()),
        bin(with_byte(t2.prove(0)?.to_bytes(), 2, 3)),
        Verify,
    );
    add(
        "arity-out-of-range",
        B3,
        4,
        h10,
        bin(with_byte(p3.clone(), 2, 17)),
        Decode,
    );
    add(
        "arity-one",
        B3,
        4,
        h10,
        bin(with_byte(p3.clone(), 2, 1)),
        Decode,
    );
    add(
        "unknown-version",
        B3,
        4,
        h10,
        bin(with_byte(p3.clone(), 0, 3)),
        Decode,
    );
    add(
        "version-zero",
        B3,
        4,
        h10,
        bin(with_byte(p3.clone(), 0, 0)),
        Decode,
    );
    add(
        "wrong-kind",
        B3,
        4,
        h10,
        bin(with_byte(p3.clone(), 1, 2)),
        Decode,
    );
    add(
        "index-equals-size",
        B3,
        4,
        h10,
        bin(relabel(last.clone(), 10, 10)),
        Decode,
    );
    add(
        "index-above-size",
        B3,
        4,
        h10,
        bin(relabel(last.clone(), 11, 10)),
        Decode,
    );
    add(
        "size-zero",
        B3,
        4,
        h10,
        bin(relabel(last.clone(), 0, 0)),
        Decode,
    );
    add(
        "consistency-bytes-as-membership",
        B3,
        4,
        h10,
        bin(t10.prove_consistency(3, 10)?.to_bytes()),
        Decode,
    );

    // ---- membership: values --------------------------------------------------
    add(
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
    add(
        "siblings-swapped-within-level",
        B3,
        4,
        h10,
        bin(swapped),
        Verify,
    );
    add(
        "index-moved-within-group",
        B3,
        4,
        h10,
        bin(relabel(p1.clone(), 2, 10)),
        Verify,
    );
    let mut other = LeanImt::from_leaves(TreeConfig::new(arity(4), B3), &leaves[100..110])?;
    add(
        "proof-from-another-tree",
        B3,
        4,
        h10,
        bin(other.prove(3)?.to_bytes()),
        Verify,
    );
    add(
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
    add(
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
    add(
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
    add(
        "non-canonical-poseidon-sibling-all-ones",
        Poseidon,
        2,
        hp3,
        bin(with_value(pp.clone(), BODY + 32, &[0xff; 32])),
        Verify,
    );

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
    add(
        "forged-consistency-2-to-3-against-4-leaf-root",
        B3,
        2,
        c4,
        bin(forged),
        Verify,
    );
    add(
        "honest-consistency-2-to-3-against-4-leaf-root",
        B3,
        2,
        c4,
        bin(t4.prove_consistency(2, 3)?.to_bytes()),
        Verify,
    );
    add(
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
    add(
        "swapped-roots",
        B3,
        4,
        swapped_roots,
        bin(c.clone()),
        Verify,
    );
    let other5 = LeanImt::from_leaves(TreeConfig::new(arity(4), B3), &leaves[100..105])?.head();
    add(
        "equal-sizes-different-roots",
        B3,
        4,
        consistent(t40.at_size(5)?.head(), other5),
        bin(t40.prove_consistency(5, 5)?.to_bytes()),
        Verify,
    );
    add(
        "old-size-above-new",
        B3,
        4,
        c40,
        bin(relabel(c.clone(), 40, 7)),
        Decode,
    );
    let c8 = consistent(t.head(2, B3, 6)?, t.head(2, B3, 8)?);
    add(
        "consistency-relabelled-old-size",
        B3,
        2,
        c8,
        bin(relabel(t8.prove_consistency(5, 8)?.to_bytes(), 6, 8)),
        Verify,
    );
    add(
        "consistency-extra-hash",
        B3,
        4,
        c40,
        bin(appended(c.clone(), &value_at(&c, BODY))),
        Decode,
    );
    add(
        "consistency-missing-hash",
        B3,
        4,
        c40,
        bin(c[..c.len() - 32].to_vec()),
        Decode,
    );
    add(
        "consistency-zero-padding-hash",
        B3,
        4,
        c40,
        bin(appended(c.clone(), &[0; 32])),
        Decode,
    );
    add(
        "consistency-truncated",
        B3,
        4,
        c40,
        bin(c[..c.len() - 1].to_vec()),
        Decode,
    );
    add(
        "consistency-trailing-garbage",
        B3,
        4,
        c40,
        bin(appended(c.clone(), &[0xde, 0xad, 0xbe, 0xef])),
        Decode,
    );
    let mut no_edge = c[..20].to_vec();
    no_edge.extend_from_slice(&c[BODY..]);
    add(
        "consistency-missing-edge-leaf",
        B3,
        4,
        c40,
        bin(no_edge),
        Decode,
    );
    add(
        "consistency-edge-leaf-substituted",
        B3,
        4,
        c40,
        bin(with_value(c.clone(), 20, &leaves[0])),
        Verify,
    );
    add(
        "consistency-wrong-hash-id",
        B3,
        4,
        c40,
        bin(with_byte(c.clone(), 3, Sha256.id())),
        Verify,
    );
    add(
        "consistency-unknown-version",
        B3,
        4,
        c40,
        bin(with_byte(c.clone(), 0, 3)),
        Decode,
    );
    add(
        "consistency-wrong-kind",
        B3,
        4,
        c40,
        bin(with_byte(c.clone(), 1, 1)),
        Decode,
    );
    add(
        "membership-bytes-as-consistency",
        B3,
        4,
        c40,
        bin(t40.prove(3)?.to_bytes()),
        Decode,
    );
    let c2 = consistent(t2.at_size(1)?.head(), t2.head());
    add(
        "consistency-wrong-arity",
        B3,
        2,
        c2,
        bin(with_byte(t2.prove_consistency(1, 2)?.to_bytes(), 2, 3)),
        Verify,
    );
    let c05 = consistent(TreeHead::EMPTY, t40.at_size(5)?.head());
    let from_empty = t40.prove_consistency(0, 5)?.to_bytes();
    add(
        "consistency-from-empty-with-edge-leaf",
        B3,
        4,
        c05,
        bin(appended(from_empty.clone(), &leaves[0])),
        Decode,
    );
    add(
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
    add(
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
    add(
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

    // ---- JSON-only mutations ----------------------------------------------------
    let doc = |text: String| Json::parse(&text).context("cairn writes JSON");
    let edit = |mut value: Json, f: &dyn Fn(&mut Json)| -> Json {
        f(&mut value);
        value
    };
    let m5 = doc(t10.prove(5)?.to_json())?;
    let json = Input::Json;
    add(
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
    add(
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
    add(
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
    add(
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
    add(
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
    add(
        "json-hash-without-0x",
        B3,
        4,
        h10,
        json(edit(m5.clone(), &|v| {
            set(v, "leaf", Json::from(&leaf_text[2..]))
        })),
        Decode,
    );
    add(
        "json-short-hash",
        B3,
        4,
        h10,
        json(edit(m5.clone(), &|v| {
            set(v, "leaf", Json::from(&leaf_text[..64]))
        })),
        Decode,
    );
    add(
        "json-non-hex-digit",
        B3,
        4,
        h10,
        json(edit(m5.clone(), &|v| {
            set(v, "leaf", Json::from(format!("{}g", &leaf_text[..65])))
        })),
        Decode,
    );
    add(
        "json-wrong-kind",
        B3,
        4,
        h10,
        json(edit(m5.clone(), &|v| {
            set(v, "kind", Json::from("consistency"))
        })),
        Decode,
    );
    add(
        "json-unknown-hash-name",
        B3,
        4,
        h10,
        json(edit(m5.clone(), &|v| set(v, "hash", Json::from("sha3")))),
        Decode,
    );
    add(
        "json-index-as-string",
        B3,
        4,
        h10,
        json(edit(m5.clone(), &|v| set(v, "index", Json::from("5")))),
        Decode,
    );
    add(
        "json-negative-index",
        B3,
        4,
        h10,
        json(edit(m5.clone(), &|v| set(v, "index", Json::Num(-1)))),
        Decode,
    );
    add(
        "json-unknown-version",
        B3,
        4,
        h10,
        json(edit(m5.clone(), &|v| set(v, "version", Json::from(3u64)))),
        Decode,
    );
    add(
        "json-sibling-substituted",
        B3,
        4,
        h10,
        json(edit(m5.clone(), &|v| {
            level(v, 1)[0] = Json::hash(&leaves[0])
        })),
        Verify,
    );

    let c7 = doc(t40.prove_consistency(7, 40)?.to_json())?;
    add(
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
    add(
        "json-level-dropped",
        B3,
        4,
        c40,
        json(edit(c7.clone(), &|v| {
            array(v, "levels").pop();
        })),
        Decode,
    );
    add(
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
    add(
        "json-missing-edge-leaf",
        B3,
        4,
        c40,
        json(edit(c7.clone(), &|v| set(v, "edge_leaf", Json::Null))),
        Decode,
    );
    add(
        "json-edge-leaf-for-old-size-0",
        B3,
        4,
        c05,
        json(edit(doc(t40.prove_consistency(0, 5)?.to_json())?, &|v| {
            set(v, "edge_leaf", Json::hash(&leaves[0]))
        })),
        Decode,
    );
    Ok(out)
}

/// The array under `key` of an object.
fn array<'a>(value: &'a mut Json, key: &str) -> &'a mut Vec<Json> {
    match value.get_mut(key) {
        Some(Json::Arr(values)) => values,
        _ => unreachable!("the proof JSON has an array {key}"),
    }
}

/// Level `i` of a membership proof's siblings.
fn level(value: &mut Json, i: usize) -> &mut Vec<Json> {
    match &mut array(value, "siblings")[i] {
        Json::Arr(values) => values,
        _ => unreachable!("a level is an array"),
    }
}

/// Replaces the value of an existing `key`.
fn set(value: &mut Json, key: &str, new: Json) {
    match value.get_mut(key) {
        Some(slot) => *slot = new,
        None => unreachable!("{key} is present"),
    }
}

fn to_text(value: Option<&Json>) -> Result<String> {
    match value {
        Some(Json::Str(text)) => Ok(text.clone()),
        other => bail!("expected a string, got {other:?}"),
    }
}

/// A valid proof whose every bit flip is listed.
struct Original(HashKind, Arity, Trusted, Vec<u8>);

/// The valid proofs whose every bit flip is listed.
fn bit_flip_originals(leaves: &[Hash]) -> Result<Vec<Original>> {
    let t = Trees { leaves };
    let mut m = t.tree(3, HashKind::Blake3, 10)?;
    let mut c = t.tree(4, HashKind::Keccak256, 11)?;
    let mut p = t.tree(2, HashKind::Poseidon, 3)?;
    Ok(vec![
        Original(
            HashKind::Blake3,
            arity(3),
            Trusted::Membership(m.head()),
            m.prove(7)?.to_bytes(),
        ),
        Original(
            HashKind::Keccak256,
            arity(4),
            Trusted::Consistency {
                old: c.at_size(5)?.head(),
                new: c.head(),
            },
            c.prove_consistency(5, 11)?.to_bytes(),
        ),
        Original(
            HashKind::Poseidon,
            arity(2),
            Trusted::Membership(p.head()),
            p.prove(1)?.to_bytes(),
        ),
    ])
}

/// Builds `invalid-proofs.json`, failing if any case is accepted or rejected
/// at another stage than intended.
pub fn build(leaves: &[Hash]) -> Result<(Json, String)> {
    let cases = cases(leaves)?;
    let mut entries = Vec::with_capacity(cases.len());
    let mut names = std::collections::BTreeSet::new();
    for case in &cases {
        ensure!(names.insert(case.name), "duplicate case name {}", case.name);
        let (stage, reason) = match judge(case.hash, case.arity, &case.trusted, &case.input) {
            Ok(()) => bail!("{}: the mutated proof was ACCEPTED", case.name),
            Err(rejection) => rejection,
        };
        ensure!(
            stage == case.expect,
            "{}: rejected at {} ({reason}), intended {}",
            case.name,
            stage.name(),
            case.expect.name()
        );
        let (key, input) = match &case.input {
            Input::Binary(bytes) => ("binary", Json::bytes(bytes)),
            Input::Json(doc) => ("json", doc.clone()),
        };
        entries.push(Json::obj([
            ("name", Json::from(case.name)),
            ("kind", Json::from(case.trusted.kind())),
            ("hash", Json::from(case.hash.name())),
            ("arity", Json::from(case.arity.as_u64())),
            ("trusted", case.trusted.to_json()),
            (key, input),
            ("error", Json::from(stage.name())),
            ("reason", Json::from(reason)),
        ]));
    }

    let mut groups = Vec::new();
    let mut flips = 0;
    for Original(hash, arity, trusted, bytes) in bit_flip_originals(leaves)? {
        judge(hash, arity, &trusted, &Input::Binary(bytes.clone())).map_err(
            |(stage, reason)| {
                anyhow::anyhow!("bit-flip original rejected at {} ({reason})", stage.name())
            },
        )?;
        let mut decode = Vec::new();
        let mut verify = Vec::new();
        for bit in 0..bytes.len() * 8 {
            let mut flipped = bytes.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            let position = Json::from(format!("{}.{}", bit / 8, bit % 8));
            match judge(hash, arity, &trusted, &Input::Binary(flipped)) {
                Ok(()) => bail!(
                    "bit-flip@{}.{} of the {} {hash} proof was ACCEPTED",
                    bit / 8,
                    bit % 8,
                    trusted.kind()
                ),
                Err((Stage::Decode, _)) => decode.push(position),
                Err((Stage::Verify, _)) => verify.push(position),
            }
            flips += 1;
        }
        groups.push(Json::obj([
            ("name", Json::from("bit-flip@<byte>.<bit>")),
            ("kind", Json::from(trusted.kind())),
            ("hash", Json::from(hash.name())),
            ("arity", Json::from(arity.as_u64())),
            ("trusted", trusted.to_json()),
            ("binary", Json::bytes(&bytes)),
            ("decode", Json::Arr(decode)),
            ("verify", Json::Arr(verify)),
        ]));
    }
    let summary = format!(
        "invalid-proofs.json: {} named cases, {} bit-flip groups expanding to {flips} cases",
        entries.len(),
        groups.len()
    );
    let doc = Json::obj([
        (
            "description",
            Json::from(
                "Proofs a verifier must reject, named after the mutation that made them, with the stage cairn rejects \
                 them at; and valid proofs whose every single-bit flip must be rejected. See README.md.",
            ),
        ),
        (
            "generator",
            Json::from("crates/vectors (cargo run -p cairn-vectors -- generate)"),
        ),
        ("leaves", Json::from("leaves.json")),
        (
            "format_version",
            Json::from(u64::from(cairn_core::proof::FORMAT_VERSION)),
        ),
        ("cases", Json::Arr(entries)),
        ("bit_flips", Json::Arr(groups)),
    ]);
    Ok((doc, summary))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adding_the_modulus_keeps_the_field_element() {
        let mut one = [0u8; 32];
        one[31] = 1;
        let mut want = BN254_MODULUS_BE;
        want[31] += 1;
        assert_eq!(plus_modulus(&one), want);
        assert_eq!(plus_modulus(&[0; 32]), BN254_MODULUS_BE);
    }
}
