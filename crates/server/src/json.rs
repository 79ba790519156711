//! Fast writers for what the server sends most: 0x-hex and the two proof
//! encodings. They produce exactly the bytes of the core's `to_json()`
//! (serde_json's pretty printer: two-space indent, `[]` for an empty
//! array), which the CLI prints; a test compares them over many shapes.
//! Why not call `to_json()`: it goes through serde_json's pretty printer
//! and a string per hash; formatting hex a byte at a time (since replaced
//! by the core's `hex_bytes`) measured as about 40% of the server's time
//! per proof request.

use std::io::Write as _;

use cairn_core::hex::hex_bytes;
use cairn_core::proof::{FORMAT_VERSION, FORMAT_VERSION_KINDS};
use cairn_core::{ConsistencyProof, Hash, MembershipProof, TreeKind};

/// Appends `value` as `0x` and 64 lowercase hex digits.
pub(crate) fn push_hex(out: &mut Vec<u8>, value: &Hash) {
    out.extend_from_slice(&hex_bytes(value));
}

fn indent(out: &mut Vec<u8>, depth: usize) {
    for _ in 0..depth {
        out.extend_from_slice(b"  ");
    }
}

fn push_quoted_hex(out: &mut Vec<u8>, value: &Hash) {
    out.push(b'"');
    push_hex(out, value);
    out.push(b'"');
}

/// A JSON array of hashes whose opening bracket is at `depth`.
fn hash_array(out: &mut Vec<u8>, values: &[Hash], depth: usize) {
    if values.is_empty() {
        out.extend_from_slice(b"[]");
        return;
    }
    out.push(b'[');
    for (position, value) in values.iter().enumerate() {
        out.extend_from_slice(if position == 0 { b"\n" } else { b",\n" });
        indent(out, depth + 1);
        push_quoted_hex(out, value);
    }
    out.push(b'\n');
    indent(out, depth);
    out.push(b']');
}

fn field(out: &mut Vec<u8>, name: &str) {
    out.extend_from_slice(b",\n  \"");
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\": ");
}

/// The fields every proof starts with; a proof of a tree of another kind
/// than Lean is version 2 and names its tree.
fn header(out: &mut Vec<u8>, kind: &str, arity: u64, hash: &str, tree: TreeKind) {
    let version = match tree {
        TreeKind::Lean => FORMAT_VERSION,
        _ => FORMAT_VERSION_KINDS,
    };
    let _ = write!(
        out,
        "{{\n  \"version\": {version},\n  \"kind\": \"{kind}\",\n  \"arity\": {arity},\n  \"hash\": \"{hash}\""
    );
    if let TreeKind::Fixed { depth, zero } = tree {
        let _ = write!(
            out,
            ",\n  \"tree\": {{\n    \"kind\": \"{}\",\n    \"depth\": {depth},\n    \"zero\": ",
            tree.name()
        );
        push_quoted_hex(out, &zero);
        out.extend_from_slice(b"\n  }");
    }
}

/// `proof.to_json()`, faster.
pub(crate) fn membership(proof: &MembershipProof) -> Vec<u8> {
    let mut out = Vec::with_capacity(256 + 80 * proof.siblings().len());
    header(
        &mut out,
        "membership",
        proof.arity().as_u64(),
        proof.hash().name(),
        proof.kind(),
    );
    field(&mut out, "index");
    let _ = write!(out, "{}", proof.index());
    field(&mut out, "size");
    let _ = write!(out, "{}", proof.size());
    field(&mut out, "leaf");
    push_quoted_hex(&mut out, &proof.leaf());
    field(&mut out, "siblings");
    let mut levels = proof.levels().peekable();
    if levels.peek().is_none() {
        out.extend_from_slice(b"[]");
    } else {
        out.push(b'[');
        for (position, (_, siblings)) in levels.enumerate() {
            out.extend_from_slice(if position == 0 { b"\n" } else { b",\n" });
            indent(&mut out, 2);
            hash_array(&mut out, siblings, 2);
        }
        out.extend_from_slice(b"\n  ]");
    }
    out.extend_from_slice(b"\n}");
    out
}

/// `proof.to_json()`, faster.
pub(crate) fn consistency(proof: &ConsistencyProof) -> Vec<u8> {
    let mut out = Vec::with_capacity(320 + 80 * proof.hashes().len());
    header(
        &mut out,
        "consistency",
        proof.arity().as_u64(),
        proof.hash().name(),
        proof.kind(),
    );
    field(&mut out, "old_size");
    let _ = write!(out, "{}", proof.old_size());
    field(&mut out, "new_size");
    let _ = write!(out, "{}", proof.new_size());
    field(&mut out, "edge_leaf");
    match proof.edge_leaf() {
        Some(leaf) => push_quoted_hex(&mut out, &leaf),
        None => out.extend_from_slice(b"null"),
    }
    field(&mut out, "levels");
    let mut levels = proof.levels().peekable();
    if levels.peek().is_none() {
        out.extend_from_slice(b"[]");
    } else {
        out.push(b'[');
        for (position, (step, left, right)) in levels.enumerate() {
            out.extend_from_slice(if position == 0 { b"\n" } else { b",\n" });
            indent(&mut out, 2);
            let _ = write!(
                out,
                "{{\n      \"level\": {},\n      \"left\": ",
                step.level
            );
            hash_array(&mut out, left, 3);
            out.extend_from_slice(b",\n      \"right\": ");
            hash_array(&mut out, right, 3);
            out.extend_from_slice(b"\n    }");
        }
        out.extend_from_slice(b"\n  ]");
    }
    out.extend_from_slice(b"\n}");
    out
}

#[cfg(test)]
mod tests {
    use cairn_core::{Arity, HashKind, LeanImt, TreeConfig};

    use super::*;

    #[test]
    fn proofs_are_byte_for_byte_the_core_json() {
        let lean = |n: u64| TreeConfig::new(Arity::new(n).unwrap(), HashKind::Blake3);
        // A fixed-depth tree's proofs (version 2, with their tree) too.
        let fixed = |n: u64| {
            lean(n).with_kind(cairn_core::TreeKind::Fixed {
                depth: 7,
                zero: [0x1d; 32],
            })
        };
        let configs = [2u64, 3, 4, 5, 8, 16]
            .map(lean)
            .into_iter()
            .chain([2u64, 3, 5].map(fixed));
        for config in configs {
            let n = config.arity.as_u64();
            let leaves = cairn_testkit::leaves(n, 70);
            let mut tree = LeanImt::from_leaves(config, &leaves).unwrap();
            for size in 0..=70u64 {
                for index in 0..size {
                    let proof = tree.prove_at(index, size).unwrap();
                    assert_eq!(
                        String::from_utf8(membership(&proof)).unwrap(),
                        proof.to_json(),
                        "n {n} {index}/{size}"
                    );
                }
                for old in (0..=size).step_by(3).chain([size]) {
                    let proof = tree.prove_consistency(old, size).unwrap();
                    assert_eq!(
                        String::from_utf8(consistency(&proof)).unwrap(),
                        proof.to_json(),
                        "n {n} {old}..{size}"
                    );
                }
            }
        }
    }
}
