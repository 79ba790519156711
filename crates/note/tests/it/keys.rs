//! Key texts: round trips, the Go sumdb/note forms, and every refusal.

use cairn_note::{KeyError, Signer, Verifier, key_id};

use crate::support::{refused, signer};

// A key pair published in the tests of Go's golang.org/x/mod/sumdb/note
// (the verifier key and the signer key of "PeterNeumann"): cairn must read
// Go's key texts and derive the same public key and ID from the seed.
const GO_VERIFIER: &str = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
const GO_SIGNER: &str =
    "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz";

#[test]
fn go_signer_key_derives_go_verifier_key() {
    let signer = Signer::parse(GO_SIGNER).unwrap();
    assert_eq!(signer.verifier().to_string(), GO_VERIFIER);
    assert_eq!(signer.to_key_text().as_str(), GO_SIGNER);
    let verifier = Verifier::parse(GO_VERIFIER).unwrap();
    assert_eq!(verifier.name(), "PeterNeumann");
    assert_eq!(verifier.id(), 0xc74f20a3);
    assert_eq!(key_id("PeterNeumann", &verifier.public_key()), 0xc74f20a3);
}

#[test]
fn generated_keys_round_trip_through_their_texts() {
    let signer = Signer::generate("example.org/log").unwrap();
    let again = Signer::parse(&signer.to_key_text()).unwrap();
    assert_eq!(again.verifier(), signer.verifier());
    let verifier = Verifier::parse(&signer.verifier().to_string()).unwrap();
    assert_eq!(verifier, signer.verifier());
    assert_ne!(
        Signer::generate("example.org/log").unwrap().verifier(),
        signer.verifier(),
        "two generated keys are equal"
    );
}

#[test]
fn verifier_key_refusals() {
    let good = signer("log").verifier().to_string();
    let (name, rest) = good.split_once('+').unwrap();
    let (id, data) = rest.split_once('+').unwrap();
    let cases: &[(String, &[&str])] = &[
        ("log".into(), &["no '+'"]),
        (format!("{name}+{id}"), &["one '+'"]),
        (format!("+{id}+{data}"), &["key name \"\"", "empty"]),
        (format!("a b+{id}+{data}"), &["key name \"a b\""]),
        (
            format!("{name}+{}+{data}", id.to_uppercase()),
            &["8 lowercase hex digits"],
        ),
        (format!("{name}+0{id}+{data}"), &["8 lowercase hex digits"]),
        (
            format!("{name}+00000000+{data}"),
            &["key ID 00000000 does not match", id],
        ),
        (
            format!("{name}+{id}+{}", &data[..data.len() - 4]),
            &["the Ed25519 key has 29 bytes, want 32"],
        ),
        (format!("{name}+{id}+{data}=="), &["not standard base64"]),
        (
            format!("{name}+{id}+AA=="),
            &["key algorithm 0x00", "want 0x01"],
        ),
        (format!("other+{id}+{data}"), &["does not match"]),
        (
            signer("log").to_key_text().to_string(),
            &["signer (private) key"],
        ),
    ];
    for (text, wanted) in cases {
        refused(Verifier::parse(text), wanted);
    }
}

#[test]
fn signer_key_refusals() {
    let good = signer("log").to_key_text().to_string();
    let rest = good.strip_prefix("PRIVATE+KEY+").unwrap();
    let (_, after_name) = rest.split_once('+').unwrap();
    let (id, data) = after_name.split_once('+').unwrap();
    let cases: &[(String, &[&str])] = &[
        (
            signer("log").verifier().to_string(),
            &["does not start with \"PRIVATE+KEY+\""],
        ),
        (format!("PRIVATE+KEY+log+{id}"), &["one '+'"]),
        (
            format!("PRIVATE+KEY+log+ffffffff+{data}"),
            &["key ID ffffffff does not match", id],
        ),
        (
            format!("PRIVATE+KEY+other+{id}+{data}"),
            &["does not match"],
        ),
        (
            format!("PRIVATE+KEY+log+{id}+AgAA"),
            &["key algorithm 0x02"],
        ),
    ];
    for (text, wanted) in cases {
        refused(Signer::parse(text), wanted);
    }
}

#[test]
fn a_signer_key_error_never_shows_the_seed() {
    let good = signer("log").to_key_text().to_string();
    let data = good.splitn(5, '+').nth(4).unwrap();
    let error = Signer::parse(&good.replacen("+log+", "+gol+", 1)).unwrap_err();
    assert!(matches!(error, KeyError::IdMismatch { .. }), "{error:?}");
    assert!(!error.to_string().contains(data), "{error}");
}
