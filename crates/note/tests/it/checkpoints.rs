//! The checkpoint body: round trips and every refusal of `parse`.

use cairn_note::{Checkpoint, NoteError, Signer};

use crate::support::{refused, signer, verifier};

fn checkpoint() -> Checkpoint {
    Checkpoint {
        origin: "example.org/log".into(),
        size: 20852163,
        root: [0xab; 32],
        extensions: vec!["cairn-tree kind=lean arity=4 hash=blake3".into()],
    }
}

#[test]
fn text_round_trips_and_has_the_c2sp_layout() {
    let text = checkpoint().to_text().unwrap();
    assert_eq!(
        text,
        "example.org/log\n20852163\nq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6s=\ncairn-tree kind=lean arity=4 hash=blake3\n"
    );
    assert_eq!(Checkpoint::parse(&text).unwrap(), checkpoint());
    let bare = Checkpoint {
        extensions: vec![],
        ..checkpoint()
    };
    assert_eq!(Checkpoint::parse(&bare.to_text().unwrap()).unwrap(), bare);
}

#[test]
fn parse_refuses_every_non_canonical_body() {
    let root = "q6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6s=";
    let cases: &[(&str, String, &[&str])] = &[
        ("two-lines", "o\n5\n".into(), &["2 lines, want at least 3"]),
        (
            "no-final-newline",
            format!("o\n5\n{root}"),
            &["does not end in a newline"],
        ),
        (
            "empty-origin",
            format!("\n5\n{root}\n"),
            &["line 1 is empty"],
        ),
        (
            "empty-extension",
            format!("o\n5\n{root}\n\n"),
            &["line 4 is empty"],
        ),
        (
            "leading-zero",
            format!("o\n05\n{root}\n"),
            &["leading zero", "want \"5\""],
        ),
        ("two-zeros", format!("o\n00\n{root}\n"), &["leading zero"]),
        (
            "sign",
            format!("o\n+5\n{root}\n"),
            &["not a decimal number"],
        ),
        (
            "hex-size",
            format!("o\n0x5\n{root}\n"),
            &["not a decimal number"],
        ),
        (
            "size-overflow",
            format!("o\n18446744073709551616\n{root}\n"),
            &["does not fit 64 bits"],
        ),
        (
            "short-root",
            "o\n5\nq6urqw==\n".into(),
            &["the root has 4 bytes, want 32"],
        ),
        (
            "unpadded-root",
            format!("o\n5\n{}\n", root.trim_end_matches('=')),
            &["root line", "base64"],
        ),
        (
            "non-canonical-root",
            format!("o\n5\n{}t=\n", &root[..root.len() - 2]),
            &["not canonical base64"],
        ),
        (
            "hex-root",
            format!("o\n5\n0x{}\n", "ab".repeat(32)),
            &["root line"],
        ),
    ];
    for (name, text, wanted) in cases {
        let result = Checkpoint::parse(text);
        assert!(result.is_err(), "{name}: accepted {result:?}");
        let message = result.unwrap_err().to_string();
        for want in *wanted {
            assert!(message.contains(want), "{name}: {message:?} lacks {want:?}");
        }
    }
    assert_eq!(
        Checkpoint::parse(&format!("o\n0\n{root}\n")).unwrap().size,
        0
    );
}

#[test]
fn to_text_refuses_lines_that_would_change_the_layout() {
    let with = |f: fn(&mut Checkpoint)| {
        let mut checkpoint = checkpoint();
        f(&mut checkpoint);
        checkpoint.to_text()
    };
    refused(with(|c| c.origin.clear()), &["origin is empty"]);
    refused(with(|c| c.origin = "a\nb".into()), &["holds a newline"]);
    refused(
        with(|c| c.extensions.push(String::new())),
        &["extension line is empty"],
    );
    refused(
        with(|c| c.extensions.push("x\n\ny".into())),
        &["holds a newline"],
    );
}

#[test]
fn sign_and_open_check_the_origin_against_the_key() {
    let signer = signer("example.org/log");
    let note = checkpoint().sign(&signer).unwrap();
    assert_eq!(
        Checkpoint::open(&note, &signer.verifier()).unwrap(),
        checkpoint()
    );

    let other = Signer::from_seed("other.example", &[1; 32]).unwrap();
    let error = checkpoint().sign(&other).unwrap_err();
    assert!(matches!(error, NoteError::Origin { .. }), "{error:?}");
    refused(
        checkpoint().sign(&other),
        &["origin is \"example.org/log\"", "want \"other.example\""],
    );

    // A key whose name differs from the origin it signed: the note
    // verifies, the checkpoint does not.
    let text = checkpoint().to_text().unwrap();
    let note = cairn_note::note::sign(&text, &[&other]).unwrap();
    refused(
        Checkpoint::open(&note, &other.verifier()),
        &["origin is \"example.org/log\", want \"other.example\""],
    );
    refused(
        Checkpoint::open(&note, &verifier("example.org/log")),
        &["no known signature"],
    );
}
