//! Heads and proofs print their hashes as hex in `Debug` (a `[u8; 32]`
//! printed as 32 decimal numbers cannot be compared with anything), and,
//! with the `serde` feature, round-trip through serde as the proof JSON.

use cairn_core::hex::to_hex;
use cairn_core::{HashKind, TreeHead};

use crate::support::tree;

#[test]
fn heads_and_proofs_debug_print_hashes_as_hex() {
    let (mut tree, _) = tree(3, HashKind::Sha256, 7);
    let head = tree.head();
    let root = to_hex(&head.root.unwrap());
    assert_eq!(
        format!("{head:?}"),
        format!("TreeHead {{ size: 7, root: Some({root}) }}")
    );
    assert_eq!(
        format!("{:?}", TreeHead::EMPTY),
        "TreeHead { size: 0, root: None }"
    );
    let proof = tree.prove(4).unwrap();
    let shown = format!("{proof:?}");
    assert!(
        shown.contains(&format!("leaf: {}", to_hex(&tree.leaf(4).unwrap()))),
        "{shown}"
    );
    assert!(shown.contains("siblings: [0x"), "{shown}");
    let consistency = tree.prove_consistency(4, 7).unwrap();
    let shown = format!("{consistency:?}");
    assert!(shown.contains("edge_leaf: Some(0x"), "{shown}");
    assert!(shown.contains("hashes: [0x"), "{shown}");
    assert!(
        !shown.contains(", 0, 0,"),
        "bytes printed as numbers: {shown}"
    );
}

#[cfg(feature = "serde")]
#[test]
fn heads_and_proofs_round_trip_through_serde_as_the_proof_json() {
    use cairn_core::{ConsistencyProof, MembershipProof};

    let (mut tree, _) = tree(3, HashKind::Sha256, 7);
    let head = tree.head();
    let text = serde_json::to_string(&head).unwrap();
    assert_eq!(
        text,
        format!(r#"{{"size":7,"root":"{}"}}"#, to_hex(&head.root.unwrap()))
    );
    assert_eq!(serde_json::from_str::<TreeHead>(&text).unwrap(), head);
    let empty = serde_json::to_string(&TreeHead::EMPTY).unwrap();
    assert_eq!(empty, r#"{"size":0,"root":null}"#);
    assert_eq!(
        serde_json::from_str::<TreeHead>(&empty).unwrap(),
        TreeHead::EMPTY
    );
    assert!(serde_json::from_str::<TreeHead>(r#"{"size":1,"root":"0x12"}"#).is_err());

    let proof = tree.prove(4).unwrap();
    let value = serde_json::to_value(&proof).unwrap();
    let spec: serde_json::Value = serde_json::from_str(&proof.to_json()).unwrap();
    assert_eq!(value, spec, "serde writes the proof JSON of docs/spec.md");
    let back: MembershipProof = serde_json::from_value(value.clone()).unwrap();
    assert_eq!(back, proof);
    back.verify(tree.config().arity, tree.config().hash, &head)
        .unwrap();
    // Decoding checks the shape as from_json does.
    let mut short = value;
    short["siblings"].as_array_mut().unwrap().pop();
    let error = serde_json::from_value::<MembershipProof>(short).unwrap_err();
    assert!(error.to_string().contains("level"), "{error}");

    let consistency = tree.prove_consistency(4, 7).unwrap();
    let text = serde_json::to_string(&consistency).unwrap();
    let back: ConsistencyProof = serde_json::from_str(&text).unwrap();
    assert_eq!(back, consistency);
    assert_eq!(ConsistencyProof::from_json(&text).unwrap(), consistency);
}
