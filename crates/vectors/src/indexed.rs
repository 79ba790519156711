//! `indexed.json`: the indexed tree's leaf hashes, roots, proofs in both
//! encodings and invalid proofs. Every root is computed three ways (a bulk
//! rebuild, inserts one at a time, and the testkit's sorted-list model that
//! recomputes everything) and written only if all agree; every valid proof
//! is verified and round-tripped, every invalid one is checked to be
//! rejected at its stated stage before it is written.

use anyhow::{Context, Result, bail, ensure};
use cairn_core::indexed::{
    AbsenceProof, IndexedLeaf, IndexedMembershipProof, IndexedTree, InsertionWitness,
};
use cairn_core::{
    Arity, ConsistencyProof, Hash, HashKind, LeanImt, MembershipProof, TreeConfig, TreeHead,
    TreeKind,
};
use cairn_testkit::indexed as model;

use crate::json::Json;

/// Arities of the root and proof cases.
const ARITIES: [u64; 4] = [2, 3, 4, 16];

/// Values inserted (a prefix of leaves.json) per root case.
fn value_counts(hash: HashKind) -> &'static [usize] {
    if hash.is_field_hash() {
        &[0, 1, 2, 3, 5, 17]
    } else {
        &[0, 1, 2, 3, 5, 16, 17, 100]
    }
}

/// The values proofs are made against.
fn proof_count(hash: HashKind) -> usize {
    if hash.is_field_hash() { 17 } else { 100 }
}

fn config(hash: HashKind, n: u64) -> Result<TreeConfig> {
    Ok(TreeConfig::new(Arity::new(n)?, hash))
}

fn head_json(head: &TreeHead) -> Json {
    Json::obj([
        ("size", Json::from(head.size)),
        ("root", Json::hash_or_null(head.root)),
    ])
}

fn leaf_json(leaf: &IndexedLeaf) -> Json {
    Json::obj([
        ("value", Json::hash(&leaf.value)),
        ("next_index", Json::from(leaf.next_index)),
        ("next_value", Json::hash(&leaf.next_value)),
    ])
}

/// The tree of the first `count` values, checked against a tree grown one
/// value at a time and against the model.
fn tree(hash: HashKind, n: u64, values: &[Hash], count: usize) -> Result<IndexedTree> {
    let config = config(hash, n)?;
    let built = IndexedTree::from_values(config, &values[..count])?;
    let mut grown = IndexedTree::new(config);
    for value in &values[..count] {
        grown.insert(*value)?;
    }
    let want = TreeHead::new(
        count as u64 + 1,
        model::root(Arity::new(n)?, hash, &values[..count]),
    );
    ensure!(
        built.head() == want && grown.head() == want,
        "DISAGREEMENT: {hash} N = {n}, {count} values: rebuild {:?}, inserts {:?}, model {want:?}",
        built.head(),
        grown.head()
    );
    Ok(built)
}

/// Values above and below every leaf of leaves.json, and one absent from
/// the first `count`.
fn probes(values: &[Hash]) -> [(&'static str, Hash); 3] {
    let mut low = [0u8; 32];
    low[31] = 1;
    let mut high = [0xff; 32];
    high[0] = 0x1f;
    [
        ("below-all", low),
        ("above-all", high),
        ("between", values[1000]),
    ]
}

/// Values whose low leaves are the values inserted just before them
/// ("pending" low leaves): `base`, `base + 1`, `base + 2`.
fn pending_values(values: &[Hash]) -> Vec<Hash> {
    (0..3u8)
        .map(|k| {
            let mut v = values[1001];
            v[31] = v[31].wrapping_add(k);
            v
        })
        .collect()
}

/// The tree a proof case is made against.
struct Setting {
    hash: HashKind,
    n: u64,
    count: usize,
    trusted: TreeHead,
}

fn proof_case(
    at: &Setting,
    name: String,
    kind: &str,
    value: Option<&Hash>,
    json: &str,
    binary: &[u8],
) -> Result<Json> {
    let Setting {
        hash,
        n,
        count,
        trusted,
    } = at;
    let (hash, n, count, trusted) = (*hash, *n, *count, trusted);
    Ok(Json::obj([
        ("name", Json::from(name)),
        ("kind", Json::from(kind)),
        ("hash", Json::from(hash.name())),
        ("arity", Json::from(n)),
        ("values", Json::from(count)),
        ("trusted", head_json(trusted)),
        ("value", value.map_or(Json::Null, Json::hash)),
        ("json", Json::parse(json).context("a proof's own JSON")?),
        ("binary", Json::bytes(binary)),
    ]))
}

/// An invalid proof: name, kind, hash, trusted head, claim, encoding,
/// and the stage and reason it is rejected with.
type InvalidCase<'a> = (
    String,
    &'static str,
    HashKind,
    TreeHead,
    Claim<'a>,
    Vec<u8>,
    &'static str,
    &'static str,
);

/// What a verifier is asked.
enum Claim<'a> {
    Absence(&'a Hash),
    Membership(&'a Hash),
    Insertion,
}

/// Decodes `bytes` as `kind` and verifies it: `Ok(())`, or the stage and
/// the error's variant name.
fn judge(
    kind: &str,
    hash: HashKind,
    n: u64,
    trusted: &TreeHead,
    claim: &Claim<'_>,
    bytes: &[u8],
) -> Result<(), (&'static str, String)> {
    let arity = Arity::new(n).map_err(|e| ("decode", e.to_string()))?;
    let variant = |e: &dyn std::fmt::Debug| {
        let text = format!("{e:?}");
        text.split(|c: char| !c.is_alphanumeric())
            .find(|w| !w.is_empty() && w != &"Path")
            .unwrap_or("")
            .to_owned()
    };
    let decode = |e: cairn_core::DecodeError| ("decode", variant(&e));
    let verify = |e: cairn_core::indexed::IndexedVerifyError| ("verify", variant(&e));
    match (kind, claim) {
        ("absence", Claim::Absence(value)) => AbsenceProof::decode(bytes)
            .map_err(decode)?
            .verify(arity, hash, trusted, value)
            .map_err(verify),
        ("indexed_membership", Claim::Membership(value)) => IndexedMembershipProof::decode(bytes)
            .map_err(decode)?
            .verify(arity, hash, trusted, value)
            .map_err(verify),
        ("insertion", Claim::Insertion) => InsertionWitness::decode(bytes)
            .map_err(decode)?
            .verify(arity, hash, trusted)
            .map(|_| ())
            .map_err(verify),
        _ => Err(("decode", format!("no claim for kind {kind}"))),
    }
}

pub fn build(values: &[Hash]) -> Result<(Json, String)> {
    ensure!(values.len() >= 1100, "indexed vectors use 1100 leaves");
    // Leaf hashes: the guard and two ordinary leaves, every hash.
    let mut leaf_hashes = Vec::new();
    let sample = [
        IndexedLeaf::GUARD,
        IndexedLeaf {
            value: values[0],
            next_index: 7,
            next_value: values[1],
        },
        IndexedLeaf {
            value: values[2],
            next_index: 0,
            next_value: [0; 32],
        },
    ];
    for hash in HashKind::ALL {
        for leaf in &sample {
            let words = leaf.words();
            let got = leaf.hash(hash);
            ensure!(
                got == model::leaf_hash(hash, leaf),
                "leaf hash disagrees with the model ({hash})"
            );
            leaf_hashes.push(Json::obj([
                ("hash", Json::from(hash.name())),
                ("leaf", leaf_json(leaf)),
                ("words", Json::bytes(words.as_flattened())),
                ("leaf_hash", Json::hash(&got)),
            ]));
        }
    }
    // Roots.
    let mut roots = Vec::new();
    for hash in HashKind::ALL {
        for &n in &ARITIES {
            for &count in value_counts(hash) {
                let t = tree(hash, n, values, count)?;
                roots.push(Json::obj([
                    ("hash", Json::from(hash.name())),
                    ("arity", Json::from(n)),
                    ("values", Json::from(count)),
                    ("size", Json::from(t.size())),
                    ("root", Json::hash(&t.root())),
                ]));
            }
        }
    }
    // Valid proofs.
    let mut proofs = Vec::new();
    for hash in HashKind::ALL {
        for n in [2u64, 4, 16] {
            let count = proof_count(hash);
            let t = tree(hash, n, values, count)?;
            let head = t.head();
            let arity = Arity::new(n)?;
            let setting = Setting {
                hash,
                n,
                count,
                trusted: head,
            };
            for (label, probe) in probes(values) {
                let proof = t.prove_absence(&probe)?;
                proof.verify(arity, hash, &head, &probe)?;
                ensure!(
                    proof.low_index() == model::low_index(&values[..count], &probe),
                    "low leaf disagrees with the model"
                );
                ensure!(
                    AbsenceProof::decode(&proof.to_bytes())? == proof
                        && AbsenceProof::from_json(&proof.to_json())? == proof,
                    "absence round trip"
                );
                proofs.push(proof_case(
                    &setting,
                    format!("absence-{label}"),
                    "absence",
                    Some(&probe),
                    &proof.to_json(),
                    &proof.to_bytes(),
                )?);
            }
            for index in [0usize, count - 1] {
                let value = values[index];
                let proof = t.prove_value(&value)?;
                proof.verify(arity, hash, &head, &value)?;
                ensure!(
                    IndexedMembershipProof::decode(&proof.to_bytes())? == proof,
                    "membership round trip"
                );
                proofs.push(proof_case(
                    &setting,
                    format!("membership-leaf-{}", index + 1),
                    "indexed_membership",
                    Some(&value),
                    &proof.to_json(),
                    &proof.to_bytes(),
                )?);
            }
            let mut grown = tree(hash, n, values, count)?;
            let inserted = &values[1000..1003];
            let witness = grown.insert_with_witness(inserted)?;
            let after = witness.verify(arity, hash, &head)?;
            let mut all = values[..count].to_vec();
            all.extend_from_slice(inserted);
            ensure!(
                after == TreeHead::new(all.len() as u64 + 1, model::root(arity, hash, &all)),
                "witness head disagrees with the model"
            );
            ensure!(
                InsertionWitness::decode(&witness.to_bytes())? == witness,
                "witness round trip"
            );
            proofs.push(proof_case(
                &setting,
                "insertion-3".into(),
                "insertion",
                None,
                &witness.to_json(),
                &witness.to_bytes(),
            )?);
            if n == 4 {
                let mut grown = tree(hash, n, values, count)?;
                let pending = pending_values(values);
                let witness = grown.insert_with_witness(&pending)?;
                ensure!(
                    witness.steps()[2].low_index == count as u64 + 2,
                    "the third value's low leaf is the second"
                );
                witness.verify(arity, hash, &head)?;
                proofs.push(proof_case(
                    &setting,
                    "insertion-pending-low-leaves".into(),
                    "insertion",
                    None,
                    &witness.to_json(),
                    &witness.to_bytes(),
                )?);
            }
        }
    }
    // Invalid proofs (BLAKE3, N = 4, and Poseidon for canonicity).
    let mut invalid = Vec::new();
    let hash = HashKind::Blake3;
    let n = 4;
    let count = proof_count(hash);
    let t = tree(hash, n, values, count)?;
    let head = t.head();
    let x = values[1000];
    let absence = t.prove_absence(&x)?;
    let doc = |json: &str| -> Result<Json> { Ok(Json::parse(json)?) };
    let set = |json: &mut Json, path: &[&str], to: Json| -> Result<()> {
        let mut at = json;
        for key in path {
            at = match key.parse::<usize>() {
                Ok(i) => match at {
                    Json::Arr(items) => items.get_mut(i).context("index")?,
                    _ => bail!("not an array at {key}"),
                },
                Err(_) => at.get_mut(key).with_context(|| format!("no field {key}"))?,
            };
        }
        *at = to;
        Ok(())
    };
    let held = values[10];
    let other = values[1001];
    let modulus = cairn_core::hash::BN254_MODULUS_BE;
    let mut bigger = head;
    bigger.size += 1;
    let mut cases: Vec<InvalidCase<'_>> = Vec::new();
    {
        let mut j = doc(&absence.to_json())?;
        set(&mut j, &["value"], Json::hash(&held))?;
        cases.push((
            "absence-value-held".into(),
            "absence",
            hash,
            head,
            Claim::Absence(&held),
            j.to_compact().into_bytes(),
            "verify",
            "NotBracketed",
        ));
        let mut j = doc(&absence.to_json())?;
        set(&mut j, &["low_leaf", "next_value"], Json::hash(&[0x1f; 32]))?;
        cases.push((
            "absence-low-leaf-next-raised".into(),
            "absence",
            hash,
            head,
            Claim::Absence(&x),
            j.to_compact().into_bytes(),
            "verify",
            "RootMismatch",
        ));
        let mut j = doc(&absence.to_json())?;
        set(&mut j, &["low_leaf", "next_value"], Json::hash(&[0; 32]))?;
        set(&mut j, &["low_leaf", "next_index"], Json::from(0u64))?;
        cases.push((
            "absence-low-leaf-claims-last".into(),
            "absence",
            hash,
            head,
            Claim::Absence(&x),
            j.to_compact().into_bytes(),
            "verify",
            "RootMismatch",
        ));
        let mut j = doc(&absence.to_json())?;
        set(&mut j, &["low_leaf", "next_index"], Json::from(head.size))?;
        cases.push((
            "absence-pointer-outside-tree".into(),
            "absence",
            hash,
            head,
            Claim::Absence(&x),
            j.to_compact().into_bytes(),
            "verify",
            "BadPointer",
        ));
        cases.push((
            "absence-stale-size".into(),
            "absence",
            hash,
            bigger,
            Claim::Absence(&x),
            absence.to_bytes(),
            "verify",
            "SizeMismatch",
        ));
        cases.push((
            "absence-other-value".into(),
            "absence",
            hash,
            head,
            Claim::Absence(&other),
            absence.to_bytes(),
            "verify",
            "ValueMismatch",
        ));
        let mut j = doc(&absence.to_json())?;
        set(&mut j, &["value"], Json::hash(&[0; 32]))?;
        cases.push((
            "absence-guard-value".into(),
            "absence",
            hash,
            head,
            Claim::Absence(&[0; 32]),
            j.to_compact().into_bytes(),
            "verify",
            "GuardValue",
        ));
        // The guard is leaf 0 and only leaf 0.
        ensure!(
            absence.low_index() != 0,
            "the probe's low leaf is not the guard"
        );
        let mut j = doc(&absence.to_json())?;
        set(&mut j, &["low_leaf", "value"], Json::hash(&[0; 32]))?;
        cases.push((
            "absence-low-leaf-value-zero-off-the-guard".into(),
            "absence",
            hash,
            head,
            Claim::Absence(&x),
            j.to_compact().into_bytes(),
            "verify",
            "GuardIndex",
        ));
        let mut long = absence.to_bytes();
        long.push(0);
        cases.push((
            "absence-trailing-byte".into(),
            "absence",
            hash,
            head,
            Claim::Absence(&x),
            long,
            "decode",
            "WrongLength",
        ));
        let member = t.prove_value(&held)?;
        cases.push((
            "membership-as-absence".into(),
            "absence",
            hash,
            head,
            Claim::Absence(&held),
            member.to_bytes(),
            "decode",
            "WrongKind",
        ));
        let mut j = doc(&member.to_json())?;
        set(&mut j, &["leaf", "next_index"], Json::from(1u64))?;
        cases.push((
            "membership-pointer-changed".into(),
            "indexed_membership",
            hash,
            head,
            Claim::Membership(&held),
            j.to_compact().into_bytes(),
            "verify",
            "RootMismatch",
        ));
        let mut j = doc(&member.to_json())?;
        set(&mut j, &["leaf", "value"], Json::hash(&[0; 32]))?;
        cases.push((
            "membership-guard-value-off-index-zero".into(),
            "indexed_membership",
            hash,
            head,
            Claim::Membership(&[0; 32]),
            j.to_compact().into_bytes(),
            "verify",
            "GuardIndex",
        ));
        let mut grown = tree(hash, n, values, count)?;
        let witness = grown.insert_with_witness(&values[1000..1003])?;
        let mut j = doc(&witness.to_json())?;
        let again = witness.steps()[0].value;
        set(&mut j, &["insertions", "1", "value"], Json::hash(&again))?;
        cases.push((
            "insertion-value-repeated".into(),
            "insertion",
            hash,
            head,
            Claim::Insertion,
            j.to_compact().into_bytes(),
            "verify",
            "Step",
        ));
        let mut j = doc(&witness.to_json())?;
        set(&mut j, &["insertions"], Json::Arr(Vec::new()))?;
        cases.push((
            "insertion-empty".into(),
            "insertion",
            hash,
            head,
            Claim::Insertion,
            j.to_compact().into_bytes(),
            "verify",
            "EmptyWitness",
        ));
        cases.push((
            "insertion-stale-head".into(),
            "insertion",
            hash,
            bigger,
            Claim::Insertion,
            witness.to_bytes(),
            "verify",
            "SizeMismatch",
        ));
        // Poseidon: a value at the modulus.
        let p = tree(HashKind::Poseidon, 2, values, 5)?;
        let absent = p.prove_absence(&values[1000])?;
        let mut j = doc(&absent.to_json())?;
        set(&mut j, &["value"], Json::hash(&modulus))?;
        cases.push((
            "absence-value-not-canonical".into(),
            "absence",
            HashKind::Poseidon,
            p.head(),
            Claim::Absence(&modulus),
            j.to_compact().into_bytes(),
            "verify",
            "NonCanonical",
        ));
    }
    for (name, kind, hash, trusted, claim, bytes, stage, reason) in &cases {
        let n = if *hash == HashKind::Poseidon { 2 } else { 4 };
        match judge(kind, *hash, n, trusted, claim, bytes) {
            Err((got_stage, got_reason)) if got_stage == *stage && got_reason == *reason => {}
            other => bail!("invalid case {name}: want {stage} {reason}, got {other:?}"),
        }
        let value = match claim {
            Claim::Absence(v) | Claim::Membership(v) => Json::hash(v),
            Claim::Insertion => Json::Null,
        };
        let encoded = if bytes.first() == Some(&b'{') {
            ("json", Json::parse(std::str::from_utf8(bytes)?)?)
        } else {
            ("binary", Json::bytes(bytes))
        };
        invalid.push(Json::obj([
            ("name", Json::from(name.clone())),
            ("kind", Json::from(*kind)),
            ("hash", Json::from(hash.name())),
            ("arity", Json::from(n)),
            ("trusted", head_json(trusted)),
            ("value", value),
            encoded,
            ("error", Json::from(*stage)),
            ("reason", Json::from(*reason)),
        ]));
    }
    let (leaf_hash_proofs, leaf_hash_invalid) = leaf_hash_cases(values)?;
    let summary = format!(
        "indexed.json: {} leaf hashes, {} roots (rebuild, inserts and the sorted-list model agree), {} proofs, {} invalid proofs, {} plain proofs of leaf hashes, {} invalid ones",
        leaf_hashes.len(),
        roots.len(),
        proofs.len(),
        invalid.len(),
        leaf_hash_proofs.len(),
        leaf_hash_invalid.len()
    );
    let doc = Json::obj([
        (
            "description",
            Json::from(
                "Indexed trees (docs/spec.md, Indexed trees): leaf hashes, roots after inserting the first `values` leaves of leaves.json in order (size = values + 1, the guard included), valid proofs in both encodings, and invalid proofs with the stage and reason cairn rejects them at; plain (leaf-hash) membership proofs of indexed trees (format version 2, tree kind 2) and their refusals. See README.md.",
            ),
        ),
        (
            "generator",
            Json::from("crates/vectors (cargo run -p cairn-vectors -- generate)"),
        ),
        ("leaves", Json::from("leaves.json")),
        ("format_version", Json::from(1u64)),
        ("leaf_hashes", Json::Arr(leaf_hashes)),
        ("roots", Json::Arr(roots)),
        ("proofs", Json::Arr(proofs)),
        ("invalid", Json::Arr(invalid)),
        ("leaf_hash_proofs", Json::Arr(leaf_hash_proofs)),
        ("leaf_hash_invalid", Json::Arr(leaf_hash_invalid)),
    ]);
    Ok((doc, summary))
}

/// A plain proof case over an indexed tree's leaf hashes: its kind and
/// where it stands, the trusted head(s), the encoding and, if invalid, the
/// stage and reason cairn refuses it for.
struct PlainCase {
    name: String,
    kind: &'static str,
    hash: HashKind,
    n: u64,
    values: usize,
    /// The trusted head; for a consistency proof the old and the new one.
    heads: Vec<TreeHead>,
    /// The proof: binary, or JSON text (which starts with `{`).
    bytes: Vec<u8>,
    refused: Option<(&'static str, String)>,
}

impl PlainCase {
    fn to_json(&self) -> Result<Json> {
        let mut fields = vec![
            ("name", Json::from(self.name.clone())),
            ("kind", Json::from(self.kind)),
            ("hash", Json::from(self.hash.name())),
            ("arity", Json::from(self.n)),
            ("tree", Json::from("indexed")),
            ("values", Json::from(self.values)),
        ];
        match self.heads.as_slice() {
            [head] => fields.push(("trusted", head_json(head))),
            [old, new] => {
                fields.push(("trusted_old", head_json(old)));
                fields.push(("trusted_new", head_json(new)));
            }
            _ => unreachable!("one or two heads"),
        }
        fields.push(if self.bytes.first() == Some(&b'{') {
            ("json", Json::parse(std::str::from_utf8(&self.bytes)?)?)
        } else {
            ("binary", Json::bytes(&self.bytes))
        });
        if let Some((stage, reason)) = &self.refused {
            fields.push(("error", Json::from(*stage)));
            fields.push(("reason", Json::from(reason.clone())));
        }
        Ok(Json::obj(fields))
    }
}

/// Decodes and verifies a plain proof case against the indexed tree it
/// names: `Ok(())`, or the stage and the error's variant name.
fn judge_plain(case: &PlainCase) -> Result<(), (&'static str, String)> {
    let variant = |e: &dyn std::fmt::Debug| {
        let text = format!("{e:?}");
        text.split(|c: char| !c.is_alphanumeric())
            .find(|w| !w.is_empty())
            .unwrap_or("")
            .to_owned()
    };
    let arity = Arity::new(case.n).map_err(|e| ("decode", e.to_string()))?;
    let config = TreeConfig::new(arity, case.hash).with_kind(TreeKind::Indexed);
    match (case.kind, case.heads.as_slice()) {
        ("membership", [head]) => MembershipProof::decode(&case.bytes)
            .map_err(|e| ("decode", variant(&e)))?
            .verify_with(&config, head)
            .map_err(|e| ("verify", variant(&e))),
        ("consistency", [old, new]) => ConsistencyProof::decode(&case.bytes)
            .map_err(|e| ("decode", variant(&e)))?
            .verify_with(&config, old, new)
            .map_err(|e| ("verify", variant(&e))),
        _ => Err(("decode", format!("no claim for kind {}", case.kind))),
    }
}

/// Plain (leaf-hash) membership proofs of indexed trees (version 2, tree
/// kind 2), which prove a leaf hash with the Lean shape, and the ways
/// they are refused: a depth or zero under kind 2, a proof of another
/// kind, and any consistency proof (an indexed tree is not append-only).
fn leaf_hash_cases(values: &[Hash]) -> Result<(Vec<Json>, Vec<Json>)> {
    let mut valid = Vec::new();
    let mut invalid = Vec::new();
    for (hash, n, indices) in [
        (HashKind::Blake3, 4u64, &[0usize, 57, 100][..]),
        (HashKind::Poseidon, 2, &[17][..]),
    ] {
        let count = proof_count(hash);
        let t = tree(hash, n, values, count)?;
        let leaves = (0..t.size())
            .map(|i| Ok(t.leaf(i).context("leaf in range")?.hash(hash)))
            .collect::<Result<Vec<Hash>>>()?;
        let config = t.config();
        ensure!(config.kind == TreeKind::Indexed, "an indexed tree's kind");
        let mut plain = LeanImt::from_leaves(config, &leaves)?;
        let head = plain.head();
        ensure!(
            head == t.head(),
            "leaf hashes rebuild the indexed tree's head"
        );
        for &index in indices {
            let proof = plain.prove_at(index as u64, head.size)?;
            proof.verify_with(&config, &head)?;
            let bytes = proof.to_bytes();
            ensure!(
                MembershipProof::decode(&bytes)? == proof
                    && MembershipProof::from_json(&proof.to_json())? == proof,
                "plain membership round trip"
            );
            for bytes in [bytes, proof.to_json().into_bytes()] {
                let case = PlainCase {
                    name: format!("leaf-hash-index-{index}"),
                    kind: "membership",
                    hash,
                    n,
                    values: count,
                    heads: vec![head],
                    bytes,
                    refused: None,
                };
                judge_plain(&case)
                    .map_err(|e| anyhow::anyhow!("leaf-hash proof refused: {e:?}"))?;
                valid.push(case.to_json()?);
            }
        }
        if hash != HashKind::Blake3 {
            continue;
        }
        let proof = plain.prove_at(57, head.size)?;
        let bytes = proof.to_bytes();
        let mut cases = Vec::new();
        let mut case = |name: &str, kind, heads, bytes, stage, reason: &str| {
            cases.push(PlainCase {
                name: name.to_owned(),
                kind,
                hash,
                n,
                values: count,
                heads,
                bytes,
                refused: Some((stage, reason.to_owned())),
            });
        };
        for (name, at) in [("indexed-depth-byte-set", 5), ("indexed-zero-byte-set", 37)] {
            let mut bad = bytes.clone();
            bad[at] = 1;
            case(name, "membership", vec![head], bad, "decode", "TreeKind");
        }
        let mut j = Json::parse(&proof.to_json())?;
        *j.get_mut("tree").context("tree")? = Json::parse(r#"{"kind": "indexed", "depth": 3}"#)?;
        case(
            "indexed-json-depth",
            "membership",
            vec![head],
            j.to_compact().into_bytes(),
            "decode",
            "TreeKind",
        );
        let mut lean = LeanImt::from_leaves(config.with_kind(TreeKind::Lean), &leaves)?;
        let lean_proof = lean.prove_at(57, head.size)?;
        case(
            "lean-proof-of-the-same-leaf",
            "membership",
            vec![head],
            lean_proof.to_bytes(),
            "verify",
            "KindMismatch",
        );
        let old = plain.view(50)?.head();
        let consistency = plain.prove_consistency(50, head.size)?;
        case(
            "consistency",
            "consistency",
            vec![old, head],
            consistency.to_bytes(),
            "verify",
            "NotAppendOnly",
        );
        for case in &cases {
            match (judge_plain(case), &case.refused) {
                (Err((stage, reason)), Some((want_stage, want_reason)))
                    if stage == *want_stage && reason == *want_reason => {}
                (got, want) => bail!("leaf-hash case {}: want {want:?}, got {got:?}", case.name),
            }
            invalid.push(case.to_json()?);
        }
    }
    Ok((valid, invalid))
}
