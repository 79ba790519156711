//! `cairn consistency` and `cairn verify-consistency`.

use cairn_core::hex::to_hex;
use cairn_core::{ConsistencyProof, HashKind};

use crate::support::{Dir, Run, bin, cairn, cairn_stdin, leaves, tree};

/// The root of the first `size` leaves, or `None` for 0.
fn root_at(n: u64, hash: HashKind, l: &[cairn_core::Hash], size: u64) -> Option<String> {
    tree(n, hash, &l[..size as usize])
        .root()
        .map(|root| to_hex(&root))
}

fn prove(n: u64, hash: HashKind, file: &str, from: u64, to: Option<u64>, binary: bool) -> Run {
    let n = n.to_string();
    let from = from.to_string();
    let mut args = vec![
        "consistency",
        "--arity",
        &n,
        "--hash",
        hash.name(),
        "--leaves",
        file,
        "--from",
        &from,
    ];
    let to = to.map(|to| to.to_string());
    if let Some(to) = &to {
        args.extend(["--to", to.as_str()]);
    }
    if binary {
        args.push("--binary");
    }
    cairn(&args)
}

/// `verify-consistency` with roots given exactly when present.
fn verify(
    n: u64,
    hash: HashKind,
    old: (u64, Option<&str>),
    new: (u64, Option<&str>),
    proof: &str,
    stdin: &[u8],
) -> Run {
    let n = n.to_string();
    let (old_size, new_size) = (old.0.to_string(), new.0.to_string());
    let mut args = vec![
        "verify-consistency",
        "--arity",
        &n,
        "--hash",
        hash.name(),
        "--old-size",
        &old_size,
        "--new-size",
        &new_size,
    ];
    if let Some(root) = old.1 {
        args.extend(["--old-root", root]);
    }
    if let Some(root) = new.1 {
        args.extend(["--new-root", root]);
    }
    args.push(proof);
    cairn_stdin(&args, stdin)
}

#[test]
fn consistency_round_trips_for_every_pair_of_sizes_including_0_and_equal() {
    let dir = Dir::new();
    let l = leaves(11);
    let file = dir.file("leaves.bin", bin(&l));
    for (n, hash) in [(2, HashKind::Blake3), (3, HashKind::Poseidon)] {
        for new in 0..=11u64 {
            for old in 0..=new {
                let json = prove(n, hash, &file, old, Some(new), false).success();
                let core = tree(n, hash, &l)
                    .prove_consistency(old, new)
                    .expect("core proof");
                assert_eq!(json, core.to_json() + "\n", "{old}->{new}");
                let (r1, r2) = (root_at(n, hash, &l, old), root_at(n, hash, &l, new));
                let proof_file = dir.file("proof.json", &json);
                let out = verify(
                    n,
                    hash,
                    (old, r1.as_deref()),
                    (new, r2.as_deref()),
                    &proof_file,
                    b"",
                )
                .success();
                let want = match (&r1, &r2) {
                    (Some(r1), Some(r2)) => format!(
                        "valid: the tree of size {old} with root {r1} is a prefix of the tree of size {new} with root {r2}\n"
                    ),
                    (None, Some(r2)) => format!(
                        "valid: the empty tree is a prefix of the tree of size {new} with root {r2} (trivially: a proof from size 0 checks no root)\n"
                    ),
                    (None, None) => {
                        "valid: the empty tree is a prefix of the empty tree\n".to_owned()
                    }
                    (Some(_), None) => unreachable!("old <= new"),
                };
                assert_eq!(out, want, "{old}->{new}");

                let binary = prove(n, hash, &file, old, Some(new), true);
                assert_eq!(binary.code, 0, "{}", binary.stderr);
                assert_eq!(binary.stdout, core.to_bytes());
                verify(
                    n,
                    hash,
                    (old, r1.as_deref()),
                    (new, r2.as_deref()),
                    "-",
                    &binary.stdout,
                )
                .success();
            }
        }
    }
}

#[test]
fn to_defaults_to_all_the_leaves() {
    let dir = Dir::new();
    let l = leaves(9);
    let file = dir.file("leaves.bin", bin(&l));
    let json = prove(4, HashKind::Sha256, &file, 5, None, false).success();
    let proof = ConsistencyProof::from_json(&json).expect("decodable");
    assert_eq!((proof.old_size(), proof.new_size()), (5, 9));
}

#[test]
fn wrong_roots_and_sizes_are_rejected_with_a_reason() {
    let dir = Dir::new();
    let l = leaves(20);
    let file = dir.file("leaves.bin", bin(&l));
    let (n, hash) = (3, HashKind::Sha256);
    let r = |size| root_at(n, hash, &l, size).expect("non-empty");
    let proof = dir.file(
        "proof.json",
        prove(n, hash, &file, 7, Some(20), false).success(),
    );
    verify(n, hash, (7, Some(&r(7))), (20, Some(&r(20))), &proof, b"").success();
    verify(n, hash, (7, Some(&r(8))), (20, Some(&r(20))), &proof, b"").invalid("old root");
    verify(n, hash, (7, Some(&r(7))), (20, Some(&r(19))), &proof, b"").invalid("new root");
    verify(n, hash, (6, Some(&r(6))), (20, Some(&r(20))), &proof, b"").invalid("old size");
    verify(n, hash, (7, Some(&r(7))), (19, Some(&r(19))), &proof, b"").invalid("new size");
    verify(
        n,
        HashKind::Keccak256,
        (7, Some(&r(7))),
        (20, Some(&r(20))),
        &proof,
        b"",
    )
    .invalid("hash");

    // Equal sizes prove the two roots are one.
    let same = dir.file(
        "same.json",
        prove(n, hash, &file, 12, Some(12), false).success(),
    );
    verify(n, hash, (12, Some(&r(12))), (12, Some(&r(12))), &same, b"").success();
    verify(n, hash, (12, Some(&r(12))), (12, Some(&r(11))), &same, b"").invalid("root");

    // A membership proof is not a consistency proof.
    let membership = cairn(&[
        "prove", "--arity", "3", "--hash", "sha256", "--leaves", &file, "--index", "2",
    ])
    .success();
    let membership = dir.file("membership.json", membership);
    verify(
        n,
        hash,
        (7, Some(&r(7))),
        (20, Some(&r(20))),
        &membership,
        b"",
    )
    .error(1, &["invalid proof", "kind"]);
}

#[test]
fn a_root_is_given_exactly_when_the_size_is_not_0() {
    let dir = Dir::new();
    let l = leaves(5);
    let file = dir.file("leaves.bin", bin(&l));
    let (n, hash) = (2, HashKind::Blake3);
    let r5 = root_at(n, hash, &l, 5).expect("root");
    let r2 = root_at(n, hash, &l, 2).expect("root");
    let from0 = dir.file(
        "from0.json",
        prove(n, hash, &file, 0, Some(5), false).success(),
    );
    let from2 = dir.file(
        "from2.json",
        prove(n, hash, &file, 2, Some(5), false).success(),
    );
    verify(n, hash, (0, Some(&r5)), (5, Some(&r5)), &from0, b"")
        .error(2, &["--old-root", "--old-size is 0"]);
    verify(n, hash, (2, None), (5, Some(&r5)), &from2, b"")
        .error(2, &["--old-root is required", "--old-size is 2"]);
    verify(n, hash, (2, Some(&r2)), (5, None), &from2, b"")
        .error(2, &["--new-root is required", "--new-size is 5"]);
    verify(n, hash, (0, None), (0, Some(&r5)), &from0, b"")
        .error(2, &["--new-root", "--new-size is 0"]);
}

#[test]
fn consistency_outside_the_leaves_is_a_usage_error() {
    let dir = Dir::new();
    let file = dir.file("leaves.bin", bin(&leaves(6)));
    prove(2, HashKind::Blake3, &file, 4, Some(3), false).error(2, &["old size 4", "new size 3"]);
    prove(2, HashKind::Blake3, &file, 4, Some(9), false).error(2, &["size 9", "6"]);
    prove(2, HashKind::Blake3, &file, 7, None, false).error(2, &["old size 7", "new size 6"]);
}

/// `verify-consistency` given a membership proof (JSON or binary) names
/// the command that checks it, instead of a decoder's complaint about a
/// field it does not know.
#[test]
fn verify_consistency_given_a_membership_proof_points_at_verify() {
    let dir = Dir::new();
    let l = leaves(7);
    let file = dir.file("leaves.bin", bin(&l));
    let root = root_at(2, HashKind::Blake3, &l, 7).unwrap();
    let old = root_at(2, HashKind::Blake3, &l, 3).unwrap();
    for extra in [None, Some("--binary")] {
        let mut args = vec![
            "prove", "--arity", "2", "--hash", "blake3", "--leaves", &file, "--index", "2",
        ];
        args.extend(extra);
        let membership = dir.file("membership", cairn(&args).stdout);
        let line = verify(2, HashKind::Blake3, (3, Some(&old)), (7, Some(&root)), &membership, b"").error(
            1,
            &["invalid proof: its kind is membership, not consistency: check it with `cairn verify`"],
        );
        assert!(line.contains(&membership), "names the file: {line}");
    }
}
