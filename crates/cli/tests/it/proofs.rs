//! `cairn prove` and `cairn verify`.

use cairn_core::hex::to_hex;
use cairn_core::{HashKind, MembershipProof, TreeHead};

use crate::support::{Dir, arity, bin, cairn, cairn_stdin, hex, leaves, root_hex, tree};

/// `--arity n --hash h` as owned strings.
fn tree_args(n: u64, hash: HashKind) -> Vec<String> {
    vec![
        "--arity".into(),
        n.to_string(),
        "--hash".into(),
        hash.name().into(),
    ]
}

fn run(args: &[String], stdin: &[u8]) -> crate::support::Run {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    cairn_stdin(&args, stdin)
}

fn prove(n: u64, hash: HashKind, file: &str, index: u64, extra: &[&str]) -> crate::support::Run {
    let mut args = vec!["prove".to_owned()];
    args.extend(tree_args(n, hash));
    args.extend([
        "--leaves".into(),
        file.into(),
        "--index".into(),
        index.to_string(),
    ]);
    args.extend(extra.iter().map(|s| s.to_string()));
    run(&args, b"")
}

fn verify(
    n: u64,
    hash: HashKind,
    root: &str,
    size: u64,
    proof: &str,
    stdin: &[u8],
) -> crate::support::Run {
    let mut args = vec!["verify".to_owned()];
    args.extend(tree_args(n, hash));
    args.extend([
        "--root".into(),
        root.into(),
        "--size".into(),
        size.to_string(),
        proof.into(),
    ]);
    run(&args, stdin)
}

#[test]
fn prove_then_verify_round_trips_in_json_and_binary_for_every_hash() {
    let dir = Dir::new();
    let l = leaves(23);
    let file = dir.file("leaves.bin", bin(&l));
    for hash in HashKind::ALL {
        for n in [2, 3, 16] {
            let root = root_hex(n, hash, &l);
            for index in [0, 1, 11, 22] {
                let json = prove(n, hash, &file, index, &[]).success();
                // The CLI prints exactly the core's encoding.
                let core = tree(n, hash, &l).prove(index).expect("core proof");
                assert_eq!(json, core.to_json() + "\n");
                let proof_file = dir.file("proof.json", &json);
                let want = format!(
                    "valid: leaf {} is leaf {index} of the tree of size 23 with root {root}\n",
                    to_hex(&l[index as usize])
                );
                assert_eq!(verify(n, hash, &root, 23, &proof_file, b"").success(), want);

                let binary = prove(n, hash, &file, index, &["--binary"]);
                assert_eq!(binary.code, 0, "{}", binary.stderr);
                assert_eq!(binary.stdout, core.to_bytes());
                let proof_file = dir.file("proof.bin", &binary.stdout);
                assert_eq!(verify(n, hash, &root, 23, &proof_file, b"").success(), want);
                // And through stdin, both ways of saying so.
                assert_eq!(
                    verify(n, hash, &root, 23, "-", &binary.stdout).success(),
                    want
                );
                let mut args = vec!["verify".to_owned()];
                args.extend(tree_args(n, hash));
                args.extend(["--root".into(), root.clone(), "--size".into(), "23".into()]);
                assert_eq!(run(&args, json.as_bytes()).success(), want);
            }
        }
    }
}

#[test]
fn prove_reads_hex_leaves_and_stdin() {
    let dir = Dir::new();
    let l = leaves(5);
    let hex_file = dir.file("leaves.hex", hex(&l));
    let from_file = prove(2, HashKind::Sha256, &hex_file, 3, &["--format", "hex"]).success();
    let want = tree(2, HashKind::Sha256, &l)
        .prove(3)
        .expect("proof")
        .to_json()
        + "\n";
    assert_eq!(from_file, want);
    let from_stdin = cairn_stdin(
        &["prove", "--arity", "2", "--hash", "sha256", "--index", "3"],
        &bin(&l),
    )
    .success();
    assert_eq!(from_stdin, want);
}

#[test]
fn historical_proofs_verify_against_the_older_root_only() {
    let dir = Dir::new();
    let l = leaves(30);
    let file = dir.file("leaves.bin", bin(&l));
    let (n, hash) = (3, HashKind::Keccak256);
    for (index, size) in [(0, 1), (4, 5), (12, 13), (2, 17), (29, 30)] {
        let json = prove(n, hash, &file, index, &["--size", &size.to_string()]).success();
        let proof = MembershipProof::from_json(&json).expect("the CLI prints a decodable proof");
        assert_eq!((proof.index(), proof.size()), (index, size));
        let old_root = root_hex(n, hash, &l[..size as usize]);
        let proof_file = dir.file("proof.json", &json);
        let out = verify(n, hash, &old_root, size, &proof_file, b"").success();
        assert!(out.starts_with("valid: "), "{out}");
        // Core agrees too.
        let head = TreeHead::new(
            size,
            tree(n, hash, &l[..size as usize]).root().expect("root"),
        );
        proof
            .verify(arity(n), hash, &head)
            .expect("core verifies the historical proof");
        // Not against today's head.
        if size < 30 {
            verify(n, hash, &root_hex(n, hash, &l), 30, &proof_file, b"").invalid("size");
        }
    }
}

#[test]
fn wrong_root_wrong_size_wrong_tree_and_tampering_are_rejected_with_a_reason() {
    let dir = Dir::new();
    let l = leaves(12);
    let file = dir.file("leaves.bin", bin(&l));
    let (n, hash) = (4, HashKind::Blake3);
    let root = root_hex(n, hash, &l);
    let json = prove(n, hash, &file, 5, &[]).success();
    let proof_file = dir.file("proof.json", &json);

    let other_root = root_hex(n, hash, &l[..11]);
    let line = verify(n, hash, &other_root, 12, &proof_file, b"").invalid("root");
    assert!(line.contains(&other_root), "names the trusted root: {line}");
    verify(n, hash, &root, 11, &proof_file, b"")
        .invalid("proof size is 12, the trusted size is 11");
    verify(n, HashKind::Sha256, &root, 12, &proof_file, b"").invalid("hash");
    verify(5, hash, &root, 12, &proof_file, b"").invalid("arity");

    // A changed sibling: the proof still decodes, but computes another root.
    let sibling = to_hex(&l[4]);
    assert!(json.contains(&sibling), "leaf 4 is a sibling of leaf 5");
    let tampered = json.replace(&sibling, &to_hex(&l[7]));
    let tampered = dir.file("tampered.json", tampered);
    verify(n, hash, &root, 12, &tampered, b"").invalid("proof computes root");
    // A changed leaf.
    let tampered = json.replace(&to_hex(&l[5]), &to_hex(&l[6]));
    let tampered = dir.file("tampered-leaf.json", tampered);
    verify(n, hash, &root, 12, &tampered, b"").invalid("proof computes root");

    // A flipped bit anywhere in a binary proof is caught, as malformed or invalid.
    let good = prove(n, hash, &file, 5, &["--binary"]).stdout;
    for byte in 0..good.len() {
        let mut bad = good.clone();
        bad[byte] ^= 0x04;
        let run = verify(n, hash, &root, 12, "-", &bad);
        assert_eq!(run.code, 1, "flipping byte {byte}: {run:?}");
        assert!(run.stdout.is_empty());
        assert!(
            run.stderr.starts_with("invalid: ")
                || run.stderr.starts_with("error: <stdin>: invalid proof: "),
            "byte {byte}: {}",
            run.stderr
        );
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    }
}

#[test]
fn malformed_proof_files_exit_1_with_the_decode_reason() {
    let dir = Dir::new();
    let l = leaves(7);
    let file = dir.file("leaves.bin", bin(&l));
    let (n, hash) = (2, HashKind::Sha256);
    let root = root_hex(n, hash, &l);
    let good = prove(n, hash, &file, 3, &["--binary"]).stdout;
    let json = prove(n, hash, &file, 3, &[]).success();
    let consistency = cairn(&[
        "consistency",
        "--arity",
        "2",
        "--hash",
        "sha256",
        "--leaves",
        &file,
        "--from",
        "3",
    ])
    .success();
    let consistency_binary = cairn(&[
        "consistency",
        "--arity",
        "2",
        "--hash",
        "sha256",
        "--leaves",
        &file,
        "--from",
        "3",
        "--binary",
    ])
    .stdout;
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", Vec::new(), "shorter than its 20-byte header"),
        (
            "truncated",
            good[..good.len() - 1].to_vec(),
            "its header implies exactly",
        ),
        (
            "extended",
            [&good[..], &[0]].concat(),
            "its header implies exactly",
        ),
        (
            "not json",
            b"  {not json".to_vec(),
            "proof JSON is malformed",
        ),
        (
            "unknown field",
            json.replacen('{', "{\"extra\": 1,", 1).into_bytes(),
            "extra",
        ),
        (
            "bad hex",
            json.replacen("0x", "0y", 1).into_bytes(),
            "must start with 0x",
        ),
        (
            "wrong kind",
            consistency.into_bytes(),
            "its kind is consistency, not membership: check it with `cairn verify-consistency`",
        ),
        (
            "wrong kind, binary",
            consistency_binary,
            "its kind is consistency, not membership: check it with `cairn verify-consistency`",
        ),
        ("not utf-8", b"{\xff}".to_vec(), "UTF-8"),
    ];
    for (name, bytes, reason) in cases {
        let path = dir.file(name, &bytes);
        let line = verify(n, hash, &root, 7, &path, b"").error(1, &["invalid proof", reason]);
        assert!(line.contains(&path), "{name}: names the file: {line}");
    }
}

#[test]
fn prove_outside_the_leaves_and_verify_of_size_0_are_usage_errors() {
    let dir = Dir::new();
    let l = leaves(7);
    let file = dir.file("leaves.bin", bin(&l));
    prove(2, HashKind::Blake3, &file, 7, &[]).error(2, &["leaf index 7", "size 7"]);
    prove(2, HashKind::Blake3, &file, 1, &["--size", "9"]).error(2, &["size 9", "7"]);
    prove(2, HashKind::Blake3, &file, 3, &["--size", "3"]).error(2, &["leaf index 3"]);
    let empty = dir.file("empty.bin", b"");
    prove(2, HashKind::Blake3, &empty, 0, &[]).error(2, &["leaf index 0"]);
    let proof = dir.file(
        "proof.json",
        prove(2, HashKind::Blake3, &file, 0, &[]).success(),
    );
    let root = root_hex(2, HashKind::Blake3, &l);
    verify(2, HashKind::Blake3, &root, 0, &proof, b"").error(2, &["--size 0"]);
    verify(2, HashKind::Blake3, "0x1234", 7, &proof, b"").error(2, &["0x1234"]);
    verify(
        2,
        HashKind::Blake3,
        &root,
        7,
        &dir.path("missing.json"),
        b"",
    )
    .error(4, &["missing.json"]);
}

/// `--append-witness FROM..TO` on a binary Poseidon database: the inputs of
/// `LeanIMTAppend(K, D)` (docs/spec.md section 10.6), checked against the
/// core's trees of the two prefixes and a commitment chained here; and
/// every batch the circuit cannot take refused with exit 2, naming why.
#[test]
fn an_append_witness_prints_the_batch_circuits_inputs_and_refuses_what_it_cannot_take() {
    use crate::support::{ingest, init};
    use cairn_core::decimal::to_decimal;

    let dir = Dir::new();
    let db = dir.path("db");
    init(&db, 2, HashKind::Poseidon, &[]);
    let l = leaves(13);
    ingest(&db, &l, &[]).success();
    let root = |n: usize| to_decimal(&tree(2, HashKind::Poseidon, &l[..n]).root().unwrap());
    let inputs = cairn(&[
        "prove",
        &db,
        "--append-witness",
        "5..13",
        "--circuit-depth",
        "5",
    ])
    .json();
    assert_eq!(inputs["oldRoot"], root(5).as_str());
    assert_eq!(inputs["newRoot"], root(13).as_str());
    assert_eq!(inputs["size"], "5");
    let decimals =
        |values: &[cairn_core::Hash]| -> Vec<String> { values.iter().map(to_decimal).collect() };
    assert_eq!(inputs["leaves"], serde_json::json!(decimals(&l[5..13])));
    // 5 = 0b101: leaf 4 at level 0, the root of leaves 0..4 at level 2, and
    // 0 at the clear bits, up to the circuit's depth.
    let four = to_decimal(&l[4]);
    assert_eq!(
        inputs["frontier"],
        serde_json::json!([four, "0", root(4), "0", "0"])
    );
    // The Poseidon(5) chain over groups of four leaves, from 0.
    let commitment = l[5..13].chunks(4).fold([0u8; 32], |chain, group| {
        let mut children = vec![chain];
        children.extend_from_slice(group);
        HashKind::Poseidon.hash_children(&children)
    });
    assert_eq!(inputs["commitment"], to_decimal(&commitment).as_str());
    // Without --circuit-depth, the depth of the tree of 13 leaves.
    let shallow = cairn(&["prove", &db, "--append-witness", "5..13"]).json();
    assert_eq!(shallow["frontier"].as_array().unwrap().len(), 4);
    assert_eq!(shallow["newRoot"], inputs["newRoot"]);
    // From the empty tree: no root, reported as 0.
    let first = cairn(&["prove", &db, "--append-witness", "0..4"]).json();
    assert_eq!(
        (first["oldRoot"].as_str(), first["newRoot"].as_str()),
        (Some("0"), Some(root(4).as_str()))
    );

    for (range, says) in [
        ("5..8", "a batch of 3"),
        ("5..5", "a batch of 0"),
        ("5..17", "beyond the tree's current size 13"),
    ] {
        cairn(&["prove", &db, "--append-witness", range]).error(2, &[says]);
    }
    cairn(&["prove", &db, "--append-witness", "8..4"]).error(2, &["FROM 8 is above TO 4"]);
    for (depth, says) in [("3", "needs depth 4"), ("65", "at most 64")] {
        cairn(&[
            "prove",
            &db,
            "--append-witness",
            "5..13",
            "--circuit-depth",
            depth,
        ])
        .error(2, &[says]);
    }
    let quaternary = dir.path("quaternary");
    init(&quaternary, 4, HashKind::Poseidon, &[]);
    ingest(&quaternary, &l, &[]).success();
    cairn(&["prove", &quaternary, "--append-witness", "0..4"]).error(2, &["arity 4"]);
    let sha = dir.path("sha");
    init(&sha, 2, HashKind::Sha256, &[]);
    ingest(&sha, &l, &[]).success();
    cairn(&["prove", &sha, "--append-witness", "0..4"]).error(2, &["sha256"]);
    let set = dir.path("set");
    init(&set, 2, HashKind::Poseidon, &["--kind", "indexed"]);
    ingest(&set, &l, &[]).success();
    cairn(&["prove", &set, "--append-witness", "1..5"]).error(2, &["insertion witness"]);
}
