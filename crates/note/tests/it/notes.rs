//! Signed notes: round trips and every refusal of `open`.

use cairn_note::note::{self, MAX_SIGNATURES};
use cairn_note::{NoteError, Signer};

use crate::support::{refused, signer, verifier};

const TEXT: &str = "example.org/log\n5\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n";

// A note from the documentation of Go's golang.org/x/mod/sumdb/note, signed
// with the PeterNeumann key of its tests: a signature made by Go's code that
// cairn must verify.
const GO_NOTE: &str = "If you think cryptography is the answer to your problem,\n\
then you don't know what your problem is.\n\
\n\
\u{2014} PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n";
const GO_VERIFIER: &str = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";

#[test]
fn a_note_signed_by_go_verifies() {
    let known = cairn_note::Verifier::parse(GO_VERIFIER).unwrap();
    let opened = note::open(GO_NOTE, std::slice::from_ref(&known)).unwrap();
    assert!(opened.text.starts_with("If you think"));
    assert_eq!(opened.verified.len(), 1);
    // And cairn's signature of the same text is byte-identical
    // (Ed25519 is deterministic).
    let signer = Signer::parse(
        "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz",
    )
    .unwrap();
    assert_eq!(note::sign(&opened.text, &[&signer]).unwrap(), GO_NOTE);
}

#[test]
fn sign_then_open_round_trips() {
    let signer = signer("example.org/log");
    let signed = note::sign(TEXT, &[&signer]).unwrap();
    assert!(signed.starts_with(TEXT));
    assert!(signed[TEXT.len()..].starts_with("\n\u{2014} example.org/log "));
    let opened = note::open(&signed, &[signer.verifier()]).unwrap();
    assert_eq!(opened.text, TEXT);
    assert_eq!(opened.verified.len(), 1);
    assert_eq!(opened.verified[0].id, signer.id());
    assert!(opened.unverified.is_empty());
}

#[test]
fn unknown_signatures_are_kept_unverified_beside_a_known_one() {
    let log = signer("example.org/log");
    let witness = Signer::from_seed("witness.example", &[3; 32]).unwrap();
    let signed = note::sign(TEXT, &[&witness, &log]).unwrap();
    let opened = note::open(&signed, &[log.verifier()]).unwrap();
    assert_eq!(opened.verified.len(), 1);
    assert_eq!(opened.unverified.len(), 1);
    assert_eq!(opened.unverified[0].name, "witness.example");
}

#[test]
fn a_key_sharing_only_the_name_is_unknown() {
    // Same name, another key: another ID, so the signature is not checked
    // against the trusted key, and the note has no known signature.
    let other = Signer::from_seed("example.org/log", &[4; 32]).unwrap();
    let signed = note::sign(TEXT, &[&other]).unwrap();
    refused(
        note::open(&signed, &[verifier("example.org/log")]),
        &[
            "no known signature",
            "example.org/log+",
            "want a signature by",
        ],
    );
}

fn signed() -> String {
    note::sign(TEXT, &[&signer("example.org/log")]).unwrap()
}

/// Every way `open` refuses a note, named after the change that made it.
#[test]
fn open_refuses_every_malformed_or_tampered_note() {
    let good = signed();
    let sig_line = good[TEXT.len() + 1..].to_owned();
    let field = sig_line.trim_end().rsplit(' ').next().unwrap().to_owned();
    let many: String = std::iter::repeat_n(sig_line.as_str(), MAX_SIGNATURES + 1).collect();
    let other_key = Signer::from_seed("other.example", &[8; 32]).unwrap();
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        (
            "missing-blank-line",
            good.replacen("\n\n", "\n", 1),
            vec!["no blank line"],
        ),
        (
            "no-signatures",
            format!("{TEXT}\n"),
            vec!["no signature lines"],
        ),
        (
            "no-final-newline",
            good.trim_end().to_owned(),
            vec!["does not end in a newline"],
        ),
        (
            "hyphen-for-em-dash",
            good.replacen('\u{2014}', "-", 1),
            vec!["signature line 1", "em dash"],
        ),
        (
            "no-space-after-name",
            good.replacen("example.org/log ", "example.org/log", 1),
            vec!["signature line 1", "no space"],
        ),
        (
            "non-canonical-base64",
            good.replacen(&field, &non_canonical(&field), 1),
            vec!["signature line 1", "not canonical base64"],
        ),
        (
            "short-signature-field",
            good.replacen(&field, "AAAA", 1),
            vec!["3 bytes, want a 4-byte key ID"],
        ),
        (
            "control-character",
            good.replacen("\n5\n", "\n5\t\n", 1),
            vec!["control character 0x09"],
        ),
        (
            "carriage-return",
            good.replace('\n', "\r\n"),
            vec!["control character 0x0d"],
        ),
        (
            "too-many-signatures",
            format!("{TEXT}\n{many}"),
            vec!["more than 100 signatures"],
        ),
        (
            "tampered-size",
            good.replacen("\n5\n", "\n6\n", 1),
            vec!["bad signature by example.org/log+"],
        ),
        (
            "tampered-origin",
            good.replacen("example.org/log\n", "example.org/lag\n", 1),
            vec!["bad signature"],
        ),
        (
            "tampered-signature",
            good.replacen(&field, &flip_last_signature_byte(&field), 1),
            vec!["bad signature"],
        ),
        (
            "trailing-garbage",
            format!("{good}junk\n"),
            vec!["signature line 2"],
        ),
        (
            "unknown-key",
            note::sign(TEXT, &[&other_key]).unwrap(),
            vec!["no known signature", "other.example+"],
        ),
    ];
    let known = [verifier("example.org/log")];
    for (name, note, wanted) in cases {
        let result = note::open(&note, &known);
        assert!(result.is_err(), "{name}: accepted");
        let message = result.unwrap_err().to_string();
        for want in wanted {
            assert!(message.contains(want), "{name}: {message:?} lacks {want:?}");
        }
    }
    // The untouched note still opens: every refusal above came from the change.
    assert!(note::open(&good, &known).is_ok());
}

/// The same bytes with a non-zero bit where the padding's unused bits are.
fn non_canonical(field: &str) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    assert!(field.ends_with('='), "a 68-byte field ends in padding");
    let mut bytes = field.as_bytes().to_vec();
    let last = field.trim_end_matches('=').len() - 1;
    let value = ALPHABET.iter().position(|&c| c == bytes[last]).unwrap();
    assert_eq!(value & 3, 0, "a canonical encoding has zero unused bits");
    bytes[last] = ALPHABET[value | 1];
    String::from_utf8(bytes).unwrap()
}

fn flip_last_signature_byte(field: &str) -> String {
    use base64::Engine as _;
    let engine = base64::engine::general_purpose::STANDARD;
    let mut bytes = engine.decode(field).unwrap();
    *bytes.last_mut().unwrap() ^= 1;
    engine.encode(bytes)
}

#[test]
fn too_large_notes_are_refused_before_parsing() {
    let huge = "a".repeat(note::MAX_NOTE_BYTES + 1);
    refused(
        note::open(&huge, &[verifier("x")]),
        &["bytes, want at most"],
    );
}

#[test]
fn sign_refuses_texts_that_are_not_notes() {
    let signer = signer("example.org/log");
    refused(
        note::sign("no newline", &[&signer]),
        &["does not end in a newline"],
    );
    refused(note::sign("", &[&signer]), &["does not end in a newline"]);
    refused(
        note::sign("bell\u{7}\n", &[&signer]),
        &["control character 0x07"],
    );
    refused(note::sign(TEXT, &[]), &["no signer"]);
    assert!(matches!(
        note::sign("x", &[&signer]),
        Err(NoteError::Malformed(_))
    ));
}

#[test]
fn a_text_with_empty_lines_is_split_at_the_last_blank_line() {
    let signer = signer("example.org/log");
    let text = "first\n\nsecond\n";
    let signed = note::sign(text, &[&signer]).unwrap();
    assert_eq!(
        note::open(&signed, &[signer.verifier()]).unwrap().text,
        text
    );
}
