//! `invalid-proofs.json`: proofs a verifier must reject, each named after the
//! mutation that made it, with the stage (decode or verify) cairn rejects it
//! at; and, for a few valid proofs, every single-bit flip of their encoding.

use anyhow::{Context, Result, bail, ensure};
use cairn_core::hash::BN254_MODULUS_BE;
use cairn_core::{
    Arity, ConsistencyProof, Hash, HashKind, LeanImt, MembershipProof, TreeConfig, TreeHead,
};

use crate::json::Json;

mod consistency;
mod membership;

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

/// The named cases, in the order the file lists them.
#[derive(Debug, Default)]
struct Cases(Vec<Case>);

impl Cases {
    fn add(
        &mut self,
        name: &'static str,
        hash: HashKind,
        n: u64,
        trusted: Trusted,
        input: Input,
        expect: Stage,
    ) {
        self.0.push(Case {
            name,
            hash,
            arity: arity(n),
            trusted,
            input,
            expect,
        });
    }
}

fn cases(leaves: &[Hash]) -> Result<Vec<Case>> {
    let t = Trees { leaves };
    let mut out = Cases::default();
    membership::binary(&t, &mut out)?;
    consistency::binary(&t, &mut out)?;
    membership::json(&t, &mut out)?;
    consistency::json(&t, &mut out)?;
    Ok(out.0)
}

/// A proof JSON document as cairn writes it.
fn doc(text: String) -> Result<Json> {
    Json::parse(&text).context("cairn writes JSON")
}

/// `value` after `f`.
fn edit(mut value: Json, f: &dyn Fn(&mut Json)) -> Json {
    f(&mut value);
    value
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
