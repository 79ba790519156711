use cairn_core::{Arity, HashKind, TreeConfig, TreeHead, TreeKind};
use cairn_note::Signer;

use super::*;

fn entry(name: &str, kind: TreeKind, size: u64, root: Option<Hash>) -> ForestEntry {
    ForestEntry {
        name: name.to_owned(),
        tree: TreeConfig::new(Arity::new(2).unwrap(), HashKind::Sha256).with_kind(kind),
        head: TreeHead { size, root },
    }
}

/// The three trees of the shared vector (test-vectors/forest.json).
pub(super) fn vector() -> ForestEntries {
    ForestEntries::new(vec![
        entry("notes", TreeKind::Lean, 5, Some([0x11; 32])),
        entry("nullifiers", TreeKind::Indexed, 3, Some([0x22; 32])),
        entry(
            "deposits",
            TreeKind::Fixed {
                depth: 20,
                zero: [0; 32],
            },
            0,
            Some([0x33; 32]),
        ),
    ])
    .unwrap()
}

#[test]
fn the_vector_hashes_as_the_spec_says() {
    let entries = vector();
    let text = entries.encode();
    assert_eq!(
        text,
        format!(
            "deposits kind=imt arity=2 hash=sha256 depth=20 zero=0x{} size=0 root=0x{}\n\
             notes kind=lean arity=2 hash=sha256 size=5 root=0x{}\n\
             nullifiers kind=indexed arity=2 hash=sha256 size=3 root=0x{}\n",
            "00".repeat(32),
            "33".repeat(32),
            "11".repeat(32),
            "22".repeat(32)
        )
    );
    // RFC 6962 by hand: three leaves split 2 + 1.
    let leaf = |line: &str| sha256(&[&[0], format!("{line}\n").as_bytes()]);
    let lines: Vec<&str> = text.lines().collect();
    let want = node(&node(&leaf(lines[0]), &leaf(lines[1])), &leaf(lines[2]));
    assert_eq!(entries.root(), want);
    assert_eq!(
        to_hex(&entries.root()),
        "0xb70c8ff3ea57038ed2f91bc899ec86cccfe8bbef02bffc6c0cf5d2004f6580f5",
        "the root in test-vectors/forest.json"
    );
    assert_eq!(ForestEntries::decode(text.as_bytes()), Ok(entries));
}

#[test]
fn every_inclusion_proof_verifies_and_no_other() {
    for count in 1..=9usize {
        let all: Vec<ForestEntry> = (0..count)
            .map(|i| {
                entry(
                    &format!("t{i}"),
                    TreeKind::Lean,
                    i as u64 + 1,
                    Some([i as u8; 32]),
                )
            })
            .collect();
        let entries = ForestEntries::new(all.clone()).unwrap();
        let head = ForestHead::of(&entries, 7, [9; 32]);
        for e in &all {
            let (index, proof) = entries.prove(&e.name).unwrap();
            assert_eq!(
                verify_entry(&head, e, index, &proof),
                Ok(()),
                "{count} {}",
                e.name
            );
            let mut other = e.clone();
            other.head.size += 1;
            assert!(verify_entry(&head, &other, index, &proof).is_err());
            if count > 1 {
                assert!(verify_entry(&head, e, (index + 1) % count as u64, &proof).is_err());
                let mut short = proof.clone();
                short.pop();
                assert!(verify_entry(&head, e, index, &short).is_err());
            }
            let mut long = proof.clone();
            long.push([0; 32]);
            assert!(verify_entry(&head, e, index, &long).is_err());
        }
    }
}

#[test]
fn checkpoints_round_trip_in_both_forms_and_damage_is_refused() {
    let entries = vector();
    let head = ForestHead::of(&entries, 42, [0xab; 32]);
    let text = head.encode();
    assert_eq!(
        text,
        format!(
            "cairn forest v1\nblock 42 0x{}\ntrees 3\nroot {}\n",
            "ab".repeat(32),
            to_hex(&entries.root())
        )
    );
    assert_eq!(ForestHead::decode(text.as_bytes()), Ok(head));
    for bad in [
        text.replace("block 42", "block 042"),
        text.replace("trees 3", "trees 0"),
        text.replace("trees 3", "trees 03"),
        text.replace("root 0x", "root 0X"),
        text.trim_end().to_owned(),
        format!("{text}x\n"),
        text.replace("cairn forest v1", "cairn forest v2"),
    ] {
        assert!(ForestHead::decode(bad.as_bytes()).is_err(), "{bad:?}");
    }
    let signer = Signer::from_seed("example.org/forest", &[5; 32]).unwrap();
    let signed = head.encode_signed(&signer).unwrap();
    assert!(
        signed.contains(&format!(
            "\ncairn-forest block=42 hash=0x{}\n\n",
            "ab".repeat(32)
        )),
        "{signed}"
    );
    assert_eq!(ForestHead::decode(signed.as_bytes()), Ok(head));
    assert_eq!(
        verify_signed(signed.as_bytes(), &[signer.verifier()]),
        Ok(head)
    );
    assert!(is_forest_checkpoint(signed.as_bytes()) && is_forest_checkpoint(text.as_bytes()));
    let other = Signer::from_seed("example.org/forest", &[6; 32]).unwrap();
    for (bytes, want) in [
        (text.clone(), "unsigned"),
        (signed.replace("block=42", "block=43"), "signature"),
        (head.encode_signed(&other).unwrap(), "no known signature"),
    ] {
        let error = verify_signed(bytes.as_bytes(), &[signer.verifier()])
            .unwrap_err()
            .to_string();
        assert!(error.contains(want), "{error}");
    }
    // A single tree's checkpoint is no forest checkpoint, and the reverse.
    let tree = Checkpoint {
        tree: TreeConfig::new(Arity::new(2).unwrap(), HashKind::Sha256),
        head: TreeHead::new(3, [1; 32]),
    };
    assert!(!is_forest_checkpoint(tree.encode().as_bytes()));
    assert!(!is_forest_checkpoint(
        tree.encode_signed(&signer).unwrap().as_bytes()
    ));
    assert!(Checkpoint::decode(signed.as_bytes()).is_err());
}

#[test]
fn entries_objects_are_refused_unless_sorted_canonical_and_complete() {
    let entries = vector();
    let text = entries.encode();
    let head = ForestHead::of(&entries, 1, [0; 32]);
    let lines: Vec<&str> = text.lines().collect();
    let swapped = format!("{}\n{}\n{}\n", lines[1], lines[0], lines[2]);
    for (bad, want) in [
        (swapped, "sorted"),
        (text.replace("size=5", "size=05"), "size"),
        (text.replace("notes ", "../x "), "name"),
        (text.replace("notes ", "Notes "), "name"),
        (text.replace("kind=lean", "kind=leanimt"), "kind"),
        (text.replace("root=0x1111", "root=none1111"), "root"),
        (text.trim_end().to_owned(), "newline"),
        (format!("{text}{}\n", lines[2]), "sorted"),
    ] {
        let error = ForestEntries::decode(bad.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(error.contains(want), "{bad:?}: {error}");
    }
    // A valid object of other entries does not match the head.
    let fewer = format!("{}\n{}\n", lines[0], lines[1]);
    let error = ForestEntries::decode(fewer.as_bytes())
        .unwrap()
        .check(&head)
        .unwrap_err()
        .to_string();
    assert!(error.contains("2 entries"), "{error}");
}

#[test]
fn tree_names_stay_inside_the_store() {
    for good in ["notes", "notes/1", "a.b_c-d"] {
        assert_eq!(check_tree_name(good), Ok(()), "{good}");
    }
    for bad in ["", "..", "a/../b", "/a", "a/", "a b", "A", "a//b"] {
        assert!(check_tree_name(bad).is_err(), "{bad:?}");
    }
}

/// The shared vector (test-vectors/forest.json), computed without cairn:
/// the entries, leaves, root, proofs and checkpoint are cairn's.
#[test]
fn the_shared_vector_agrees() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../test-vectors/forest.json"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let entries = ForestEntries::decode(v["entries"].as_str().unwrap().as_bytes()).unwrap();
    assert_eq!(entries, vector());
    let leaves: Vec<String> = entries.leaves().iter().map(to_hex).collect();
    let want: Vec<String> = v["leaves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(leaves, want);
    assert_eq!(to_hex(&entries.root()), v["root"].as_str().unwrap());
    let head = ForestHead::of(&entries, 42, [0xab; 32]);
    assert_eq!(head.encode(), v["checkpoint"].as_str().unwrap());
    assert_eq!(
        entries_path(&head.root),
        v["entries_object"].as_str().unwrap()
    );
    for proof in v["proofs"].as_array().unwrap() {
        let name = proof["name"].as_str().unwrap();
        let (index, path) = entries.prove(name).unwrap();
        assert_eq!(index, proof["index"].as_u64().unwrap());
        let want: Vec<Hash> = proof["path"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| parse_hash(h.as_str().unwrap()).unwrap())
            .collect();
        assert_eq!(path, want);
        verify_entry(&head, entries.get(name).unwrap(), index, &want).unwrap();
    }
}
