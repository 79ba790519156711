//! `test-vectors/indexed.json` against cairn: leaf hashes, roots, valid
//! proofs (both encodings, byte-identical re-encoding, verification) and
//! invalid proofs (rejected at the stated stage, for the stated reason).

use cairn_core::indexed::{
    AbsenceProof, IndexedLeaf, IndexedMembershipProof, IndexedTree, InsertionWitness,
};
use cairn_core::{Arity, Hash, HashKind, TreeConfig, TreeHead};
use cairn_testkit::vectors::{self, hash_or_null};
use serde_json::Value;

fn hash(v: &Value) -> Hash {
    hash_or_null(v).expect("a hash")
}

fn kind(v: &Value) -> HashKind {
    v["hash"].as_str().unwrap().parse().unwrap()
}

fn arity(v: &Value) -> Arity {
    Arity::new(v["arity"].as_u64().unwrap()).unwrap()
}

fn trusted(v: &Value) -> TreeHead {
    TreeHead {
        size: v["trusted"]["size"].as_u64().unwrap(),
        root: hash_or_null(&v["trusted"]["root"]),
    }
}

fn bytes(v: &Value) -> Vec<u8> {
    let text = v.as_str().unwrap().strip_prefix("0x").unwrap();
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

/// The encoding a case carries: its binary bytes or its JSON text.
fn encoded(case: &Value) -> Vec<u8> {
    match case.get("binary") {
        Some(b) => bytes(b),
        None => case["json"].to_string().into_bytes(),
    }
}

/// Decodes and verifies a case: `Ok`, or (stage, variant name).
fn judge(case: &Value, data: &[u8]) -> Result<(), (String, String)> {
    let (h, a, head) = (kind(case), arity(case), trusted(case));
    let variant = |e: String| {
        e.split(|c: char| !c.is_alphanumeric())
            .find(|w| !w.is_empty() && *w != "Path")
            .unwrap_or("")
            .to_owned()
    };
    let decode = |e: cairn_core::DecodeError| ("decode".to_owned(), variant(format!("{e:?}")));
    let verify = |e: cairn_core::indexed::IndexedVerifyError| {
        ("verify".to_owned(), variant(format!("{e:?}")))
    };
    match case["kind"].as_str().unwrap() {
        "absence" => AbsenceProof::decode(data)
            .map_err(decode)?
            .verify(a, h, &head, &hash(&case["value"]))
            .map_err(verify),
        "indexed_membership" => IndexedMembershipProof::decode(data)
            .map_err(decode)?
            .verify(a, h, &head, &hash(&case["value"]))
            .map_err(verify),
        "insertion" => InsertionWitness::decode(data)
            .map_err(decode)?
            .verify(a, h, &head)
            .map(|_| ())
            .map_err(verify),
        other => panic!("unknown kind {other}"),
    }
}

#[test]
fn every_indexed_leaf_hash_matches_its_words() {
    let doc = vectors::load("indexed.json");
    for case in doc["leaf_hashes"].as_array().unwrap() {
        let leaf = IndexedLeaf {
            value: hash(&case["leaf"]["value"]),
            next_index: case["leaf"]["next_index"].as_u64().unwrap(),
            next_value: hash(&case["leaf"]["next_value"]),
        };
        assert_eq!(
            leaf.words().as_flattened(),
            bytes(&case["words"]).as_slice()
        );
        assert_eq!(leaf.hash(kind(case)), hash(&case["leaf_hash"]), "{case}");
    }
}

#[test]
fn every_indexed_root_matches_cairn() {
    let doc = vectors::load("indexed.json");
    let leaves = vectors::leaves();
    let roots = doc["roots"].as_array().unwrap();
    assert_eq!(roots.len(), 144);
    for case in roots {
        let count = case["values"].as_u64().unwrap() as usize;
        let tree =
            IndexedTree::from_values(TreeConfig::new(arity(case), kind(case)), &leaves[..count])
                .unwrap();
        assert_eq!(tree.size(), case["size"].as_u64().unwrap());
        assert_eq!(tree.root(), hash(&case["root"]), "{case}");
    }
}

#[test]
fn every_indexed_proof_decodes_reencodes_and_verifies() {
    let doc = vectors::load("indexed.json");
    let proofs = doc["proofs"].as_array().unwrap();
    assert!(proofs.len() >= 90);
    for case in proofs {
        let binary = bytes(&case["binary"]);
        let json = case["json"].to_string();
        let at = format!("{} {} N = {}", case["name"], case["hash"], case["arity"]);
        match case["kind"].as_str().unwrap() {
            "absence" => {
                let proof = AbsenceProof::from_bytes(&binary).unwrap();
                assert_eq!(AbsenceProof::from_json(&json).unwrap(), proof, "{at}");
                assert_eq!(proof.to_bytes(), binary, "{at}");
            }
            "indexed_membership" => {
                let proof = IndexedMembershipProof::from_bytes(&binary).unwrap();
                assert_eq!(
                    IndexedMembershipProof::from_json(&json).unwrap(),
                    proof,
                    "{at}"
                );
                assert_eq!(proof.to_bytes(), binary, "{at}");
            }
            "insertion" => {
                let proof = InsertionWitness::from_bytes(&binary).unwrap();
                assert_eq!(InsertionWitness::from_json(&json).unwrap(), proof, "{at}");
                assert_eq!(proof.to_bytes(), binary, "{at}");
            }
            other => panic!("{other}"),
        }
        assert_eq!(judge(case, &binary), Ok(()), "{at}");
        assert_eq!(judge(case, json.as_bytes()), Ok(()), "{at}");
    }
}

#[test]
fn every_invalid_indexed_proof_is_rejected_at_its_stated_stage() {
    let doc = vectors::load("indexed.json");
    for case in doc["invalid"].as_array().unwrap() {
        let want = (
            case["error"].as_str().unwrap().to_owned(),
            case["reason"].as_str().unwrap().to_owned(),
        );
        assert_eq!(judge(case, &encoded(case)), Err(want), "{}", case["name"]);
    }
}

/// A plain proof case of `leaf_hash_proofs` / `leaf_hash_invalid`, decoded
/// and verified against the indexed tree it names: `Ok`, or (stage, variant).
fn judge_plain(case: &Value) -> Result<(), (String, String)> {
    use cairn_core::{ConsistencyProof, MembershipProof, TreeKind};
    assert_eq!(case["tree"], "indexed", "{}", case["name"]);
    let config = TreeConfig::new(arity(case), kind(case)).with_kind(TreeKind::Indexed);
    let variant = |e: String| {
        let word = e
            .split(|c: char| !c.is_alphanumeric())
            .find(|w| !w.is_empty());
        word.unwrap_or("").to_owned()
    };
    let decode = |e: cairn_core::DecodeError| ("decode".to_owned(), variant(format!("{e:?}")));
    let verify = |e: cairn_core::VerifyError| ("verify".to_owned(), variant(format!("{e:?}")));
    let head = |key: &str| TreeHead {
        size: case[key]["size"].as_u64().unwrap(),
        root: hash_or_null(&case[key]["root"]),
    };
    let data = encoded(case);
    match case["kind"].as_str().unwrap() {
        "membership" => MembershipProof::decode(&data)
            .map_err(decode)?
            .verify_with(&config, &head("trusted"))
            .map_err(verify),
        "consistency" => ConsistencyProof::decode(&data)
            .map_err(decode)?
            .verify_with(&config, &head("trusted_old"), &head("trusted_new"))
            .map_err(verify),
        other => panic!("unknown kind {other}"),
    }
}

#[test]
fn every_plain_proof_of_an_indexed_tree_verifies_and_reencodes() {
    use cairn_core::{MembershipProof, TreeKind};
    let doc = vectors::load("indexed.json");
    let cases = doc["leaf_hash_proofs"].as_array().unwrap();
    assert_eq!(cases.len(), 8);
    for case in cases {
        let values = usize::try_from(case["values"].as_u64().unwrap()).unwrap();
        let t = IndexedTree::from_values(
            TreeConfig::new(arity(case), kind(case)),
            &vectors::leaves()[..values],
        )
        .unwrap();
        assert_eq!(t.head(), trusted(case), "{}", case["name"]);
        assert_eq!(judge_plain(case), Ok(()), "{}", case["name"]);
        let proof = MembershipProof::decode(&encoded(case)).unwrap();
        assert_eq!(proof.kind(), TreeKind::Indexed);
        assert_eq!(
            t.leaf(proof.index()).unwrap().hash(kind(case)),
            proof.leaf()
        );
        if let Some(b) = case.get("binary") {
            assert_eq!(proof.to_bytes(), bytes(b), "{}", case["name"]);
        } else {
            let json: Value = serde_json::from_str(&proof.to_json()).unwrap();
            assert_eq!(json, case["json"], "{}", case["name"]);
        }
    }
}

#[test]
fn every_invalid_plain_proof_of_an_indexed_tree_is_rejected_at_its_stated_stage() {
    let doc = vectors::load("indexed.json");
    let cases = doc["leaf_hash_invalid"].as_array().unwrap();
    assert_eq!(cases.len(), 5);
    for case in cases {
        let want = (
            case["error"].as_str().unwrap().to_owned(),
            case["reason"].as_str().unwrap().to_owned(),
        );
        assert_eq!(judge_plain(case), Err(want), "{}", case["name"]);
    }
}
