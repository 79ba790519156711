//! The committed test vectors under `test-vectors/`: cairn must reproduce every
//! root (its own `roots.json`, and `typescript.json` from zk-kit's TypeScript
//! LeanIMT, the n-ary JS reference and poseidon-lite), every valid proof, and
//! must reject every invalid one at the stated stage. Regenerate with
//! `cargo run -p cairn-vectors -- generate`; see `test-vectors/README.md`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use cairn_core::hex::to_hex;
use cairn_core::{
    Arity, ConsistencyProof, Hash, HashKind, LeanImt, MembershipProof, TreeConfig, TreeHead,
};
use cairn_testkit::vectors::{hash_or_null, leaves, load};
use serde_json::Value;

/// Arities with proofs in `proofs.json`.
const PROOF_ARITIES: [u64; 5] = [2, 3, 4, 7, 16];

/// The named negative cases `invalid-proofs.json` must hold.
const REQUIRED_INVALID: [&str; 16] = [
    "relabelled-index",
    "relabelled-size-same-depth",
    "internal-node-as-leaf",
    "extra-sibling",
    "missing-sibling",
    "zero-padding-sibling",
    "truncated",
    "trailing-garbage",
    "forged-consistency-2-to-3-against-4-leaf-root",
    "swapped-roots",
    "wrong-hash-id",
    "wrong-arity",
    "unknown-version",
    "index-equals-size",
    "old-size-above-new",
    "non-canonical-poseidon-sibling",
];

/// The case rule shared by both generators: {0, 1, 2, 3} ∪ {N-1, N, N+1} ∪
/// {p-1, p, p+1 : p = N^k, k >= 2, p+1 <= max} ∪ {max}.
fn case_sizes(n: u64, max: u64) -> BTreeSet<u64> {
    let mut sizes: BTreeSet<u64> = [0, 1, 2, 3, n - 1, n, n + 1, max].into();
    let mut p = n * n;
    while p < max {
        sizes.extend([p - 1, p, p + 1]);
        p *= n;
    }
    sizes
}

fn str_of<'a>(v: &'a Value, key: &str, at: &str) -> &'a str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("{at}: {key} is not a string"))
}

fn u64_of(v: &Value, key: &str, at: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{at}: {key} is not an integer"))
}

fn array_of<'a>(v: &'a Value, key: &str, at: &str) -> &'a Vec<Value> {
    v[key]
        .as_array()
        .unwrap_or_else(|| panic!("{at}: {key} is not an array"))
}

fn hash_kind(v: &Value, at: &str) -> HashKind {
    str_of(v, "hash", at)
        .parse()
        .unwrap_or_else(|e| panic!("{at}: {e}"))
}

fn arity_of(v: &Value, at: &str) -> Arity {
    Arity::new(u64_of(v, "arity", at)).unwrap_or_else(|e| panic!("{at}: {e}"))
}

fn hash_of(v: &Value, key: &str, at: &str) -> Hash {
    hash_or_null(&v[key]).unwrap_or_else(|| panic!("{at}: {key} is not a hash"))
}

fn bytes(v: &Value, key: &str, at: &str) -> Vec<u8> {
    let text = str_of(v, key, at);
    let digits = text
        .strip_prefix("0x")
        .unwrap_or_else(|| panic!("{at}: {key} lacks 0x"));
    hex::decode(digits).unwrap_or_else(|e| panic!("{at}: {key} is not hex: {e}"))
}

fn head(size: u64, root: &Value) -> TreeHead {
    TreeHead {
        size,
        root: hash_or_null(root),
    }
}

/// The shared leaves of `leaves.json`, read once.
fn vector_leaves() -> &'static [Hash] {
    static LEAVES: OnceLock<Vec<Hash>> = OnceLock::new();
    LEAVES.get_or_init(leaves)
}

/// (root, depth) by (hash, arity, size).
type RootTable = BTreeMap<(HashKind, u64, u64), (Option<Hash>, u32)>;

/// cairn's (root, depth) of every case tree, each from `LeanImt::from_leaves`
/// over its prefix of the leaves; computed once for the tests that need it.
fn cairn_roots() -> &'static RootTable {
    static ROOTS: OnceLock<RootTable> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let leaves = vector_leaves();
        let mut out = BTreeMap::new();
        for kind in HashKind::ALL {
            for arity in Arity::all() {
                for size in case_sizes(arity.as_u64(), leaves.len() as u64) {
                    let mut tree = LeanImt::from_leaves(
                        TreeConfig::new(arity, kind),
                        &leaves[..size as usize],
                    )
                    .expect("vector leaves are valid under every hash");
                    out.insert((kind, arity.as_u64(), size), (tree.root(), tree.depth()));
                }
            }
        }
        out
    })
}

/// Checks a file's roots against cairn's: exactly one entry per case, equal
/// root and depth. Returns the entries for further checks.
fn assert_roots_match_cairn(file: &str) -> Vec<Value> {
    let doc = load(file);
    let roots = array_of(&doc, "roots", file).clone();
    let cairn = cairn_roots();
    assert_eq!(
        roots.len(),
        cairn.len(),
        "{file} holds {} roots, the case rule gives {}",
        roots.len(),
        cairn.len()
    );
    let mut seen = BTreeSet::new();
    for (i, entry) in roots.iter().enumerate() {
        let at = format!("{file} roots[{i}]");
        let key = (
            hash_kind(entry, &at),
            u64_of(entry, "arity", &at),
            u64_of(entry, "size", &at),
        );
        let at = format!("{at} ({} arity {} size {})", key.0, key.1, key.2);
        assert!(seen.insert(key), "{at}: duplicate case");
        let (root, depth) = cairn
            .get(&key)
            .unwrap_or_else(|| panic!("{at}: not a case of the shared rule"));
        assert_eq!(
            hash_or_null(&entry["root"]).as_ref().map(to_hex),
            root.as_ref().map(to_hex),
            "{at}: root differs from cairn's"
        );
        assert_eq!(
            u64_of(entry, "depth", &at),
            u64::from(*depth),
            "{at}: depth differs from cairn's"
        );
    }
    roots
}

#[test]
fn every_committed_root_matches_cairn() {
    let roots = assert_roots_match_cairn("roots.json");
    for (i, entry) in roots.iter().enumerate() {
        let agreed = array_of(entry, "agreed_with", "roots.json");
        assert!(
            !agreed.is_empty(),
            "roots.json roots[{i}] was cross-checked against no independent implementation"
        );
    }
}

#[test]
fn every_typescript_root_matches_cairn() {
    // The check against zk-kit's TypeScript LeanIMT (arity 2), the n-ary JS
    // reference and poseidon-lite: the only independent check of Poseidon
    // with 13..=16 children.
    let roots = assert_roots_match_cairn("typescript.json");
    let wide_poseidon = roots
        .iter()
        .filter(|r| r["hash"] == "poseidon" && r["arity"].as_u64().is_some_and(|n| n >= 13))
        .count();
    assert!(
        wide_poseidon > 0,
        "typescript.json has no Poseidon roots of arity 13..=16"
    );
}

#[test]
fn every_typescript_poseidon_vector_matches_cairn() {
    let doc = load("typescript.json");
    let vectors = array_of(&doc, "poseidon", "typescript.json");
    let mut widths = BTreeSet::new();
    for (i, vector) in vectors.iter().enumerate() {
        let at = format!("typescript.json poseidon[{i}]");
        let inputs: Vec<Hash> = array_of(vector, "inputs", &at)
            .iter()
            .map(|x| hash_or_null(x).unwrap_or_else(|| panic!("{at}: input is not a hash")))
            .collect();
        assert_eq!(
            str_of(vector, "function", &at),
            format!("poseidon{}", inputs.len()),
            "{at}: function and input count disagree"
        );
        // A group of one is lifted, never hashed, and the poseidon module
        // exposes no one-input function: k = 1 is not part of the tree.
        if inputs.len() < 2 {
            continue;
        }
        let output = hash_of(vector, "output", &at);
        assert_eq!(
            to_hex(&HashKind::Poseidon.hash_children(&inputs)),
            to_hex(&output),
            "{at}: cairn's poseidon{} differs from poseidon-lite's",
            inputs.len()
        );
        widths.insert(inputs.len());
    }
    assert_eq!(
        widths,
        (2..=16).collect::<BTreeSet<_>>(),
        "typescript.json must cover poseidon2..poseidon16"
    );
}

#[test]
fn every_typescript_mimcsponge_vector_matches_cairn() {
    // circomlibjs's multiHash(inputs, 0, 1): the only independent
    // implementation of MiMCSponge cairn is checked against.
    let doc = load("typescript.json");
    let vectors = array_of(&doc, "mimcsponge", "typescript.json");
    let mut widths = BTreeSet::new();
    for (i, vector) in vectors.iter().enumerate() {
        let at = format!("typescript.json mimcsponge[{i}]");
        let inputs: Vec<Hash> = array_of(vector, "inputs", &at)
            .iter()
            .map(|x| hash_or_null(x).unwrap_or_else(|| panic!("{at}: input is not a hash")))
            .collect();
        assert_eq!(str_of(vector, "function", &at), "multiHash(inputs, 0, 1)");
        // A group of one is lifted, never hashed: k = 1 is not part of the tree.
        if inputs.len() < 2 {
            continue;
        }
        let output = hash_of(vector, "output", &at);
        assert_eq!(
            to_hex(&HashKind::MiMCSponge.hash_children(&inputs)),
            to_hex(&output),
            "{at}: cairn's mimcsponge of {} inputs differs from circomlibjs's",
            inputs.len()
        );
        widths.insert(inputs.len());
    }
    assert_eq!(
        widths,
        (2..=16).collect::<BTreeSet<_>>(),
        "typescript.json must cover mimcsponge of 2..=16 inputs"
    );
}

/// Fresh trees over prefixes of the vector leaves, built on demand.
#[derive(Default)]
struct FreshTrees(BTreeMap<(HashKind, u64, u64), LeanImt>);

impl FreshTrees {
    fn get(&mut self, kind: HashKind, arity: Arity, size: u64) -> &mut LeanImt {
        self.0
            .entry((kind, arity.as_u64(), size))
            .or_insert_with(|| {
                LeanImt::from_leaves(
                    TreeConfig::new(arity, kind),
                    &vector_leaves()[..size as usize],
                )
                .expect("vector leaves are valid under every hash")
            })
    }
}

#[test]
fn every_committed_membership_proof_decodes_verifies_and_equals_a_fresh_proof() {
    let doc = load("proofs.json");
    let entries = array_of(&doc, "membership", "proofs.json");
    let mut trees = FreshTrees::default();
    let mut covered = BTreeSet::new();
    for (i, entry) in entries.iter().enumerate() {
        let at = format!("proofs.json membership[{i}]");
        let (kind, arity) = (hash_kind(entry, &at), arity_of(entry, &at));
        let (index, size) = (u64_of(entry, "index", &at), u64_of(entry, "size", &at));
        let at = format!("{at} ({kind} arity {arity} leaf {index} of {size})");
        let binary = bytes(entry, "binary", &at);
        let from_binary = MembershipProof::from_bytes(&binary)
            .unwrap_or_else(|e| panic!("{at}: binary does not decode: {e}"));
        let from_json = MembershipProof::from_json(&entry["json"].to_string())
            .unwrap_or_else(|e| panic!("{at}: JSON does not decode: {e}"));
        assert_eq!(from_json, from_binary, "{at}: JSON and binary differ");
        assert_eq!(
            from_binary.to_bytes(),
            binary,
            "{at}: binary does not re-encode byte-identically"
        );
        let trusted = head(size, &entry["root"]);
        from_binary
            .verify(arity, kind, &trusted)
            .unwrap_or_else(|e| panic!("{at}: does not verify: {e}"));
        assert_eq!(
            from_binary.leaf(),
            hash_of(entry, "leaf", &at),
            "{at}: leaf field differs"
        );
        let fresh_tree: &mut LeanImt = trees.get(kind, arity, size);
        assert_eq!(
            fresh_tree.head(),
            trusted,
            "{at}: root differs from a fresh tree's"
        );
        assert_eq!(
            fresh_tree.prove(index).expect("index < size"),
            from_binary,
            "{at}: differs from a freshly generated proof"
        );
        covered.insert((kind, arity.as_u64()));
    }
    let want: BTreeSet<_> = HashKind::ALL
        .into_iter()
        .flat_map(|k| PROOF_ARITIES.map(|n| (k, n)))
        .collect();
    assert_eq!(
        covered, want,
        "proofs.json must cover every hash at arities 2, 3, 4, 7, 16"
    );
}

#[test]
fn every_committed_consistency_proof_decodes_verifies_and_equals_a_fresh_proof() {
    let doc = load("proofs.json");
    let entries = array_of(&doc, "consistency", "proofs.json");
    let mut trees = FreshTrees::default();
    let mut covered = BTreeSet::new();
    let (mut from_empty, mut equal, mut from_one, mut deeper) = (0, 0, 0, 0);
    for (i, entry) in entries.iter().enumerate() {
        let at = format!("proofs.json consistency[{i}]");
        let (kind, arity) = (hash_kind(entry, &at), arity_of(entry, &at));
        let (old_size, new_size) = (
            u64_of(entry, "old_size", &at),
            u64_of(entry, "new_size", &at),
        );
        let at = format!("{at} ({kind} arity {arity} {old_size} -> {new_size})");
        let binary = bytes(entry, "binary", &at);
        let from_binary = ConsistencyProof::from_bytes(&binary)
            .unwrap_or_else(|e| panic!("{at}: binary does not decode: {e}"));
        let from_json = ConsistencyProof::from_json(&entry["json"].to_string())
            .unwrap_or_else(|e| panic!("{at}: JSON does not decode: {e}"));
        assert_eq!(from_json, from_binary, "{at}: JSON and binary differ");
        assert_eq!(
            from_binary.to_bytes(),
            binary,
            "{at}: binary does not re-encode byte-identically"
        );
        let old = head(old_size, &entry["old_root"]);
        let new = head(new_size, &entry["new_root"]);
        from_binary
            .verify(arity, kind, &old, &new)
            .unwrap_or_else(|e| panic!("{at}: does not verify: {e}"));
        assert_eq!(
            trees.get(kind, arity, old_size).head(),
            old,
            "{at}: old root differs from a fresh tree's"
        );
        let fresh_tree: &mut LeanImt = trees.get(kind, arity, new_size);
        assert_eq!(
            fresh_tree.head(),
            new,
            "{at}: new root differs from a fresh tree's"
        );
        assert_eq!(
            fresh_tree
                .prove_consistency(old_size, new_size)
                .expect("old <= new"),
            from_binary,
            "{at}: differs from a freshly generated proof"
        );
        covered.insert((kind, arity.as_u64()));
        from_empty += usize::from(old_size == 0);
        equal += usize::from(old_size == new_size);
        from_one += usize::from(old_size == 1);
        let depth = |size| cairn_core::shape::depth(size, arity);
        deeper += usize::from(old_size > 1 && depth(old_size) < depth(new_size));
    }
    let want: BTreeSet<_> = HashKind::ALL
        .into_iter()
        .flat_map(|k| PROOF_ARITIES.map(|n| (k, n)))
        .collect();
    assert_eq!(
        covered, want,
        "proofs.json must cover every hash at arities 2, 3, 4, 7, 16"
    );
    for (what, count) in [
        ("from size 0", from_empty),
        ("between equal sizes", equal),
        ("from size 1", from_one),
        ("across a depth change", deeper),
    ] {
        assert!(count > 0, "proofs.json has no consistency proof {what}");
    }
}

/// Where a proof was rejected: "decode" or "verify", and the error variant.
type Rejection = (&'static str, String);

/// The name of an error's variant, from its `Debug` form.
fn variant<E: std::fmt::Debug>(error: &E) -> String {
    format!("{error:?}")
        .split(|c: char| !c.is_ascii_alphanumeric())
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// Decodes `input` (binary bytes or JSON text) as `kind` and verifies it
/// against `trusted`; `Ok` if accepted.
fn judge(
    kind: &str,
    hash: HashKind,
    arity: Arity,
    trusted: &Value,
    input: &Input<'_>,
    at: &str,
) -> Result<(), Rejection> {
    let decode = |e: cairn_core::DecodeError| ("decode", variant(&e));
    let verify = |e: cairn_core::VerifyError| ("verify", variant(&e));
    match kind {
        "membership" => {
            let proof = match input {
                Input::Binary(b) => MembershipProof::from_bytes(b),
                Input::Json(text) => MembershipProof::from_json(text),
            }
            .map_err(decode)?;
            let head = head(u64_of(trusted, "size", at), &trusted["root"]);
            proof.verify(arity, hash, &head).map_err(verify)
        }
        "consistency" => {
            let proof = match input {
                Input::Binary(b) => ConsistencyProof::from_bytes(b),
                Input::Json(text) => ConsistencyProof::from_json(text),
            }
            .map_err(decode)?;
            let old = head(u64_of(trusted, "old_size", at), &trusted["old_root"]);
            let new = head(u64_of(trusted, "new_size", at), &trusted["new_root"]);
            proof.verify(arity, hash, &old, &new).map_err(verify)
        }
        other => panic!("{at}: unknown kind {other:?}"),
    }
}

enum Input<'a> {
    Binary(&'a [u8]),
    Json(&'a str),
}

#[test]
fn every_invalid_proof_is_rejected_at_its_stated_stage() {
    let doc = load("invalid-proofs.json");
    let cases = array_of(&doc, "cases", "invalid-proofs.json");
    let mut names = BTreeSet::new();
    for (i, case) in cases.iter().enumerate() {
        let at = format!("invalid-proofs.json cases[{i}]");
        let name = str_of(case, "name", &at);
        let at = format!("{at} ({name})");
        assert!(names.insert(name), "{at}: duplicate name");
        let (kind, hash, arity) = (
            str_of(case, "kind", &at),
            hash_kind(case, &at),
            arity_of(case, &at),
        );
        let json_text;
        let binary;
        let input = if case.get("binary").is_some() {
            binary = bytes(case, "binary", &at);
            Input::Binary(&binary)
        } else {
            json_text = case["json"].to_string();
            Input::Json(&json_text)
        };
        let (stage, reason) = match judge(kind, hash, arity, &case["trusted"], &input, &at) {
            Ok(()) => panic!("{at}: was ACCEPTED"),
            Err(rejection) => rejection,
        };
        assert_eq!(
            stage,
            str_of(case, "error", &at),
            "{at}: rejected at another stage ({reason})"
        );
        assert_eq!(
            reason,
            str_of(case, "reason", &at),
            "{at}: rejected for another reason"
        );
    }
    for name in REQUIRED_INVALID {
        assert!(
            names.contains(name),
            "invalid-proofs.json lacks the case {name}"
        );
    }
}

#[test]
fn every_bit_flip_of_the_committed_proofs_is_rejected() {
    let doc = load("invalid-proofs.json");
    let groups = array_of(&doc, "bit_flips", "invalid-proofs.json");
    let kinds: BTreeSet<&str> = groups.iter().filter_map(|g| g["kind"].as_str()).collect();
    assert_eq!(
        kinds,
        ["consistency", "membership"].into(),
        "bit flips must cover a membership and a consistency proof"
    );
    for (g, group) in groups.iter().enumerate() {
        let at = format!("invalid-proofs.json bit_flips[{g}]");
        let (kind, hash, arity) = (
            str_of(group, "kind", &at),
            hash_kind(group, &at),
            arity_of(group, &at),
        );
        let original = bytes(group, "binary", &at);
        judge(
            kind,
            hash,
            arity,
            &group["trusted"],
            &Input::Binary(&original),
            &at,
        )
        .unwrap_or_else(|(stage, reason)| {
            panic!("{at}: the original is rejected at {stage} ({reason})")
        });
        let mut listed = BTreeSet::new();
        for stage in ["decode", "verify"] {
            for position in array_of(group, stage, &at) {
                let position = position
                    .as_str()
                    .unwrap_or_else(|| panic!("{at}: a {stage} position is not a string"));
                let name = format!("{at} bit-flip@{position}");
                let (byte, bit) = position
                    .split_once('.')
                    .and_then(|(byte, bit)| {
                        Some((byte.parse::<usize>().ok()?, bit.parse::<u8>().ok()?))
                    })
                    .filter(|&(byte, bit)| byte < original.len() && bit < 8)
                    .unwrap_or_else(|| panic!("{name}: not a <byte>.<bit> position of the proof"));
                assert!(listed.insert((byte, bit)), "{name}: listed twice");
                let mut flipped = original.clone();
                flipped[byte] ^= 1 << bit;
                match judge(
                    kind,
                    hash,
                    arity,
                    &group["trusted"],
                    &Input::Binary(&flipped),
                    &name,
                ) {
                    Ok(()) => panic!("{name}: was ACCEPTED"),
                    Err((got, reason)) => {
                        assert_eq!(got, stage, "{name}: rejected at another stage ({reason})");
                    }
                }
            }
        }
        assert_eq!(
            listed.len(),
            original.len() * 8,
            "{at}: not every bit is flipped"
        );
    }
}

/// The fixed-depth tree a vector describes (`hash`, `arity`, `depth`, `zero`).
fn imt_config(v: &Value, at: &str) -> TreeConfig {
    TreeConfig::new(arity_of(v, at), hash_kind(v, at)).with_kind(cairn_core::TreeKind::Fixed {
        depth: u64_of(v, "depth", at) as u32,
        zero: hash_of(v, "zero", at),
    })
}

#[test]
fn every_typescript_imt_vector_matches_cairn() {
    // @zk-kit/imt's roots, zero hashes and createProof proofs, for N = 2 and
    // 5 under Poseidon, a byte hash, and Tornado Cash's MiMCSponge tree.
    let doc = load("typescript.json");
    let trees = array_of(&doc, "imt", "typescript.json");
    let mut shapes = BTreeSet::new();
    for (t, tree) in trees.iter().enumerate() {
        let at = format!("typescript.json imt[{t}]");
        let config = imt_config(tree, &at);
        shapes.insert((config.hash, config.arity.get()));
        let zeros: Vec<Hash> = array_of(tree, "zeros", &at)
            .iter()
            .map(|z| hash_or_null(z).unwrap_or_else(|| panic!("{at}: zero")))
            .collect();
        assert_eq!(zeros, config.kind.zeros(config.arity, config.hash), "{at}");
        let leaves = vector_leaves();
        for root in array_of(tree, "roots", &at) {
            let size = u64_of(root, "size", &at);
            let mut built = LeanImt::from_leaves(config, &leaves[..size as usize]).unwrap();
            assert_eq!(
                built.root(),
                Some(hash_of(root, "root", &at)),
                "{at} size {size}"
            );
        }
        for (i, zk) in array_of(tree, "proofs", &at).iter().enumerate() {
            let at = format!("{at} proofs[{i}]");
            let size = u64_of(zk, "size", &at);
            let index = u64_of(zk, "leafIndex", &at);
            let mut built = LeanImt::from_leaves(config, &leaves[..size as usize]).unwrap();
            let proof = built.prove(index).unwrap();
            proof.verify_with(&config, &built.head()).unwrap();
            let ours: Value = serde_json::from_str(&proof.to_zkkit_json().unwrap()).unwrap();
            let dec = |v: &Value| {
                Value::from(cairn_core::decimal::to_decimal(
                    &hash_or_null(v).unwrap_or_else(|| panic!("{at}: not a hash")),
                ))
            };
            assert_eq!(ours["root"], dec(&zk["root"]), "{at}");
            assert_eq!(ours["leaf"], dec(&zk["leaf"]), "{at}");
            assert_eq!(ours["leafIndex"], zk["leafIndex"], "{at}");
            assert_eq!(ours["pathIndices"], zk["pathIndices"], "{at}");
            let siblings: Vec<Vec<Value>> = array_of(zk, "siblings", &at)
                .iter()
                .map(|level| level.as_array().unwrap().iter().map(dec).collect())
                .collect();
            assert_eq!(ours["siblings"], serde_json::json!(siblings), "{at}");
        }
    }
    for want in [
        (HashKind::Poseidon, 2),
        (HashKind::Poseidon, 5),
        (HashKind::MiMCSponge, 2),
    ] {
        assert!(
            shapes.contains(&want),
            "typescript.json's imt lacks {want:?}"
        );
    }
}

#[test]
fn every_committed_imt_vector_matches_cairn() {
    let doc = load("imt.json");
    let leaves = vector_leaves();
    for (t, tree) in array_of(&doc, "trees", "imt.json").iter().enumerate() {
        let at = format!("imt.json trees[{t}]");
        let config = imt_config(tree, &at);
        let zeros: Vec<Hash> = array_of(tree, "zeros", &at)
            .iter()
            .map(|z| hash_or_null(z).unwrap())
            .collect();
        assert_eq!(zeros, config.kind.zeros(config.arity, config.hash), "{at}");
        let capacity = config.capacity().unwrap().min(leaves.len() as u64);
        let mut full = LeanImt::from_leaves(config, &leaves[..capacity as usize]).unwrap();
        for root in array_of(tree, "roots", &at) {
            let size = u64_of(root, "size", &at);
            assert_eq!(
                full.at_size(size).unwrap().root(),
                Some(hash_of(root, "root", &at)),
                "{at} size {size}"
            );
        }
        for entry in array_of(tree, "membership", &at) {
            let (index, size) = (u64_of(entry, "index", &at), u64_of(entry, "size", &at));
            let at = format!("{at} membership {index}/{size}");
            let binary = bytes(entry, "binary", &at);
            let proof = MembershipProof::from_bytes(&binary).unwrap();
            assert_eq!(proof.to_bytes(), binary, "{at}: re-encoding");
            let json = entry["json"].to_string();
            assert_eq!(MembershipProof::from_json(&json).unwrap(), proof, "{at}");
            assert_eq!(proof, full.prove_at(index, size).unwrap(), "{at}");
            proof
                .verify_with(&config, &head(size, &entry["root"]))
                .unwrap();
        }
        for entry in array_of(tree, "consistency", &at) {
            let (old, new) = (
                u64_of(entry, "old_size", &at),
                u64_of(entry, "new_size", &at),
            );
            let at = format!("{at} consistency {old} -> {new}");
            let binary = bytes(entry, "binary", &at);
            let proof = ConsistencyProof::from_bytes(&binary).unwrap();
            assert_eq!(proof.to_bytes(), binary, "{at}: re-encoding");
            assert_eq!(proof, full.prove_consistency(old, new).unwrap(), "{at}");
            proof
                .verify_with(
                    &config,
                    &head(old, &entry["old_root"]),
                    &head(new, &entry["new_root"]),
                )
                .unwrap();
        }
    }
}

#[test]
fn every_invalid_imt_proof_is_rejected_at_its_stated_stage() {
    let doc = load("imt.json");
    let cases = array_of(&doc, "invalid", "imt.json");
    assert!(
        cases.len() >= 10,
        "imt.json holds {} invalid cases",
        cases.len()
    );
    for (i, case) in cases.iter().enumerate() {
        let at = format!(
            "imt.json invalid[{i}] ({})",
            str_of(case, "name", "imt.json")
        );
        let config = match str_of(case, "tree", &at) {
            "lean" => TreeConfig::new(arity_of(case, &at), hash_kind(case, &at)),
            "imt" => imt_config(case, &at),
            other => panic!("{at}: unknown tree {other:?}"),
        };
        let trusted = &case["trusted"];
        let decode = |e: cairn_core::DecodeError| ("decode", variant(&e));
        let verify = |e: cairn_core::VerifyError| ("verify", variant(&e));
        let result = match str_of(case, "kind", &at) {
            "membership" => {
                let proof = if case.get("binary").is_some() {
                    MembershipProof::from_bytes(&bytes(case, "binary", &at))
                } else {
                    MembershipProof::from_json(&case["json"].to_string())
                };
                proof.map_err(decode).and_then(|p| {
                    p.verify_with(
                        &config,
                        &head(u64_of(trusted, "size", &at), &trusted["root"]),
                    )
                    .map_err(verify)
                })
            }
            "consistency" => ConsistencyProof::from_bytes(&bytes(case, "binary", &at))
                .map_err(decode)
                .and_then(|p| {
                    p.verify_with(
                        &config,
                        &head(u64_of(trusted, "old_size", &at), &trusted["old_root"]),
                        &head(u64_of(trusted, "new_size", &at), &trusted["new_root"]),
                    )
                    .map_err(verify)
                }),
            other => panic!("{at}: unknown kind {other:?}"),
        };
        let (stage, reason) = result.err().unwrap_or_else(|| panic!("{at}: was ACCEPTED"));
        assert_eq!(stage, str_of(case, "error", &at), "{at}: stage ({reason})");
        assert_eq!(reason, str_of(case, "reason", &at), "{at}: reason");
    }
}
