//! cairn's signed heads and the tree line.

use cairn_core::{Arity, HashKind, TreeConfig};
use cairn_note::{Checkpoint, NoteError, TreeKind, TreeLine, open_head, sign_head};

use crate::support::{refused, signer};

fn tree() -> TreeLine {
    TreeLine::lean_imt(&TreeConfig::new(Arity::new(4).unwrap(), HashKind::Poseidon))
}

#[test]
fn heads_round_trip_for_every_arity_and_hash() {
    let signer = signer("example.org/log");
    for arity in Arity::all() {
        for hash in HashKind::ALL {
            let tree = TreeLine::lean_imt(&TreeConfig::new(arity, hash));
            let line = tree.to_string();
            assert_eq!(
                line,
                format!("cairn-tree kind=lean arity={arity} hash={hash}")
            );
            assert_eq!(TreeLine::parse(&line).unwrap(), tree);
            let note = sign_head(&signer, &tree, 12345, &[3; 32]).unwrap();
            let head = open_head(&note, &signer.verifier()).unwrap();
            assert_eq!(head.tree, tree);
            assert_eq!((head.size, head.root), (12345, [3; 32]));
            assert_eq!(head.origin, "example.org/log");
            assert!(head.other_extensions.is_empty());
        }
    }
}

/// A fixed-depth tree's line names its depth and zero value; its empty
/// tree has a root (`zeros[depth]`), so even size 0 has a checkpoint.
#[test]
fn imt_heads_name_their_depth_and_zero_and_sign_the_empty_tree() {
    let signer = signer("example.org/pool");
    let zero = [0x11; 32];
    let config = TreeConfig::new(Arity::BINARY, HashKind::Blake3)
        .with_kind(cairn_core::TreeKind::Fixed { depth: 20, zero });
    let tree = TreeLine::of(&config).unwrap();
    assert_eq!(tree.kind, TreeKind::Imt { depth: 20, zero });
    assert_eq!(
        tree.to_string(),
        format!(
            "cairn-tree kind=imt arity=2 hash=blake3 depth=20 zero=0x{}",
            "11".repeat(32)
        )
    );
    assert_eq!(TreeLine::parse(&tree.to_string()).unwrap(), tree);
    assert_eq!(tree.config(), config);
    for size in [0, 9] {
        let note = sign_head(&signer, &tree, size, &[3; 32]).unwrap();
        let head = open_head(&note, &signer.verifier()).unwrap();
        assert_eq!((head.tree, head.size), (tree, size));
    }
    let lean = TreeConfig::new(Arity::BINARY, HashKind::Blake3);
    assert_eq!(TreeLine::of(&lean).unwrap(), TreeLine::lean_imt(&lean));
    let indexed = lean.with_kind(cairn_core::TreeKind::Indexed);
    refused(TreeLine::of(&indexed), &["rewrites earlier leaves"]);
}

#[test]
fn tree_line_refusals() {
    let cases: &[(&str, &[&str])] = &[
        ("cairn-tree", &["kind= is missing"]),
        (
            "cairn-tree kind=smt arity=2 hash=poseidon",
            &["unknown tree kind \"smt\""],
        ),
        (
            "cairn-tree kind=imt arity=2 hash=poseidon",
            &["depth= is missing"],
        ),
        (
            "cairn-tree kind=imt arity=2 hash=poseidon depth=20",
            &["zero= is missing"],
        ),
        (
            "cairn-tree kind=imt arity=2 hash=poseidon depth=020 zero=0x0000000000000000000000000000000000000000000000000000000000000000",
            &["depth \"020\"", "leading zeros"],
        ),
        (
            "cairn-tree kind=imt arity=2 hash=poseidon depth=0 zero=0x0000000000000000000000000000000000000000000000000000000000000000",
            &["depth 0 is out of range"],
        ),
        (
            "cairn-tree kind=imt arity=2 hash=blake3 depth=3 zero=0xAA00000000000000000000000000000000000000000000000000000000000000",
            &["lowercase hex"],
        ),
        (
            "cairn-tree kind=imt arity=2 hash=poseidon depth=3 zero=0xff00000000000000000000000000000000000000000000000000000000000000",
            &["not a canonical BN254 field element"],
        ),
        (
            "cairn-tree kind=imt arity=2 hash=blake3 depth=3 zero=0x0000000000000000000000000000000000000000000000000000000000000000 x=1",
            &["unexpected \"x=1\""],
        ),
        (
            "cairn-tree arity=4 kind=lean hash=blake3",
            &["\"arity=4\" where kind= belongs"],
        ),
        (
            "cairn-tree kind=lean arity=04 hash=blake3",
            &["arity \"04\"", "leading zeros"],
        ),
        (
            "cairn-tree kind=lean arity=17 hash=blake3",
            &["arity 17 is out of range"],
        ),
        (
            "cairn-tree kind=lean arity=99999999999999999999 hash=blake3",
            &["out of range"],
        ),
        (
            "cairn-tree kind=lean arity=4 hash=sha3",
            &["unknown hash \"sha3\""],
        ),
        ("cairn-tree kind=lean arity=4", &["hash= is missing"]),
        (
            "cairn-tree kind=lean arity=4 hash=blake3 depth=3",
            &["unexpected \"depth=3\""],
        ),
        (
            "cairn-tree  kind=lean arity=4 hash=blake3",
            &["\"\" where kind= belongs"],
        ),
        (
            "cairn-trees kind=lean arity=4 hash=blake3",
            &["does not start with \"cairn-tree\""],
        ),
    ];
    for (line, wanted) in cases {
        refused(TreeLine::parse(line), wanted);
    }
}

fn signed_with(extensions: Vec<String>, size: u64) -> String {
    let signer = signer("example.org/log");
    Checkpoint {
        origin: "example.org/log".into(),
        size,
        root: [1; 32],
        extensions,
    }
    .sign(&signer)
    .unwrap()
}

#[test]
fn open_head_needs_exactly_one_tree_line() {
    let verifier = signer("example.org/log").verifier();
    let line = tree().to_string();
    refused(
        open_head(&signed_with(vec![], 5), &verifier),
        &["no cairn-tree extension line"],
    );
    refused(
        open_head(&signed_with(vec![line.clone(), line.clone()], 5), &verifier),
        &["2 cairn-tree lines, want one"],
    );
    refused(
        open_head(
            &signed_with(vec!["cairn-tree kind=lean".into()], 5),
            &verifier,
        ),
        &["arity= is missing"],
    );
    // Other extension lines are signed, returned, and not interpreted.
    let head = open_head(
        &signed_with(vec!["note: hello".into(), line.clone()], 5),
        &verifier,
    )
    .unwrap();
    assert_eq!(head.other_extensions, vec!["note: hello".to_owned()]);
    assert_eq!(head.tree.kind, TreeKind::LeanImt);
    // The empty LeanIMT has no root, so no checkpoint.
    refused(
        open_head(&signed_with(vec![line], 0), &verifier),
        &["size 0"],
    );
    let error = sign_head(&signer("example.org/log"), &tree(), 0, &[0; 32]).unwrap_err();
    assert!(matches!(error, NoteError::Checkpoint(_)), "{error:?}");
}

#[test]
fn a_tampered_head_is_refused() {
    let signer = signer("example.org/log");
    let note = sign_head(&signer, &tree(), 7, &[9; 32]).unwrap();
    for (from, to) in [
        ("\n7\n", "\n8\n"),
        ("arity=4", "arity=2"),
        ("hash=poseidon", "hash=blake3"),
    ] {
        let tampered = note.replacen(from, to, 1);
        assert_ne!(tampered, note);
        refused(open_head(&tampered, &signer.verifier()), &["bad signature"]);
    }
}

#[test]
fn an_unverified_read_gives_the_signed_head_and_still_refuses_malformed_notes() {
    let signer = signer("example.org/log");
    let note = sign_head(&signer, &tree(), 77, &[9; 32]).unwrap();
    let head = cairn_note::read_head_unverified(&note).unwrap();
    assert_eq!(head, open_head(&note, &signer.verifier()).unwrap());
    // No key is checked: a note signed by anyone reads the same.
    let other = crate::support::signer("example.org/other");
    let forged = sign_head(&other, &tree(), 77, &[9; 32]).unwrap();
    assert_eq!(
        cairn_note::read_head_unverified(&forged).unwrap().origin,
        "example.org/other"
    );
    // But the note and the checkpoint must be well formed.
    refused(
        cairn_note::read_head_unverified(note.split("\n\n").next().unwrap()),
        &["no blank line"],
    );
    refused(
        cairn_note::read_head_unverified(&note.replace("\n77\n", "\n077\n")),
        &["leading zero"],
    );
    refused(
        cairn_note::read_head_unverified(&note.replace("cairn-tree", "cairn-trees")),
        &["no cairn-tree extension line"],
    );
    refused(
        cairn_note::read_head_unverified(&note.replace("\u{2014} ", "- ")),
        &["signature line 1"],
    );
}

/// The tree line names the kind as core does (`lean`, `imt`); a note that
/// older cairn versions signed with `kind=leanimt` still opens, as the
/// same LeanIMT, and a line is written in the current spelling only.
#[test]
fn the_lean_kind_is_written_lean_and_read_under_its_older_name_too() {
    let verifier = signer("example.org/log").verifier();
    assert_eq!(TreeKind::LeanImt.name(), cairn_core::TreeKind::NAMES[0]);
    assert_eq!(
        TreeKind::Imt {
            depth: 1,
            zero: [0; 32]
        }
        .name(),
        cairn_core::TreeKind::NAMES[1]
    );
    let older = "cairn-tree kind=leanimt arity=4 hash=poseidon";
    assert_eq!(TreeLine::parse(older).unwrap(), tree());
    let head = open_head(&signed_with(vec![older.into()], 5), &verifier).unwrap();
    assert_eq!(head.tree, tree());
    assert_eq!(
        tree().to_string(),
        "cairn-tree kind=lean arity=4 hash=poseidon"
    );
    for name in ["LEAN", "leanIMT", "lean-imt", "indexed"] {
        refused(
            TreeLine::parse(&format!("cairn-tree kind={name} arity=4 hash=poseidon")),
            &[&format!(
                "unknown tree kind \"{name}\", want \"lean\" or \"imt\""
            )],
        );
    }
}
