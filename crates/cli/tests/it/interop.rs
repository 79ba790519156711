//! Decimal leaf input (`--format dec`, Poseidon only) and proofs printed
//! for other tools (`--proof-format zkkit|circom|zkkit-circom`): the same
//! bytes as the core's renderers, and usage errors (exit 2) for trees a
//! format cannot describe.

use cairn_core::decimal::to_decimal;
use cairn_core::hex::to_hex;
use cairn_core::{Arity, Hash, HashKind, LeanImt, TreeConfig};

use crate::support::*;

fn small(i: u64) -> Hash {
    let mut out = [0u8; 32];
    out[24..].copy_from_slice(&i.to_be_bytes());
    out
}

#[test]
fn decimal_leaves_build_the_same_tree_as_hex_and_export_round_trips() {
    let values: Vec<Hash> = (1..=9u64).map(|i| small(i * 1_000_003)).collect();
    let dec: String = values.iter().map(|v| to_decimal(v) + "\n").collect();
    let hex: String = values.iter().map(|v| to_hex(v) + "\n").collect();
    let args = |format| {
        [
            "root", "--arity", "3", "--hash", "poseidon", "--format", format,
        ]
    };
    let from_dec = cairn_stdin(&args("dec"), dec.as_bytes()).success();
    assert_eq!(
        from_dec,
        cairn_stdin(&args("hex"), hex.as_bytes()).success()
    );

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    cairn(&["init", db, "--arity", "2", "--hash", "poseidon"]).success();
    cairn_stdin(&["ingest", db, "--format", "dec"], dec.as_bytes()).success();
    assert_eq!(cairn(&["export", db, "--format", "dec"]).success(), dec);
    assert_eq!(cairn(&["export", db, "--format", "hex"]).success(), hex);
}

/// `cairn ingest --format dec` refused a MiMCSponge database (Tornado
/// Cash's hash) although `--zero` took a decimal value for it: the leaf
/// reader asked "is this Poseidon" rather than "is this a field hash".
#[test]
fn decimal_leaves_go_into_a_mimcsponge_database_and_export_round_trips() {
    let values: Vec<Hash> = (1..=7u64).map(|i| small(i * 7_000_001)).collect();
    let dec: String = values.iter().map(|v| to_decimal(v) + "\n").collect();
    let dir = tempfile::tempdir().unwrap();
    for kind in [&[][..], &["--kind", "imt", "--depth", "20"][..]] {
        let db = dir.path().join(format!("db{}", kind.len()));
        let db = db.to_str().unwrap();
        let mut init = vec!["init", db, "--arity", "2", "--hash", "mimcsponge"];
        init.extend_from_slice(kind);
        cairn(&init).success();
        cairn_stdin(&["ingest", db, "--format", "dec"], dec.as_bytes()).success();
        assert_eq!(cairn(&["export", db, "--format", "dec"]).success(), dec);
        let mut config = TreeConfig::new(Arity::BINARY, HashKind::MiMCSponge);
        if !kind.is_empty() {
            config = config.with_kind(cairn_core::TreeKind::Fixed {
                depth: 20,
                zero: [0; 32],
            });
        }
        let want = to_hex(
            &LeanImt::from_leaves(config, &values)
                .unwrap()
                .root()
                .unwrap(),
        );
        let root = cairn(&["root", db, "--json"]).json();
        assert_eq!(root["root"], want, "{kind:?}");
    }
}

#[test]
fn decimal_input_refuses_values_at_or_above_p_and_other_hashes() {
    let p = "21888242871839275222246405745257275088548364400416034343698204186575808495617";
    let root = [
        "root", "--arity", "2", "--hash", "poseidon", "--format", "dec",
    ];
    let error = cairn_stdin(&root, format!("1\n\n{p}\n").as_bytes()).fails(4, "error: ");
    assert!(
        error.contains("line 3") && error.contains(p) && error.contains("below p"),
        "{error}"
    );
    let error = cairn_stdin(&root, b"12a\n").fails(4, "error: ");
    assert!(
        error.contains("line 1") && error.contains("not a digit"),
        "{error}"
    );
    let error = cairn_stdin(
        &[
            "root",
            "--arity",
            "2",
            "--hash",
            "keccak256",
            "--format",
            "dec",
        ],
        b"1\n",
    )
    .fails(2, "error: ");
    assert!(error.contains("hashes with keccak256"), "{error}");

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    cairn(&["init", db, "--arity", "2", "--hash", "sha256"]).success();
    let error = cairn_stdin(&["ingest", db, "--format", "dec"], b"1\n").fails(2, "error: ");
    assert!(
        error.contains("for Poseidon and MiMCSponge trees"),
        "{error}"
    );
    let error = cairn(&["export", db, "--format", "dec"]).fails(2, "error: ");
    assert!(
        error.contains("for Poseidon and MiMCSponge trees"),
        "{error}"
    );
}

#[test]
fn proof_formats_print_the_core_renderings_or_refuse_with_usage_errors() {
    let values: Vec<Hash> = (1..=13u64).map(small).collect();
    let dec: String = values.iter().map(|v| to_decimal(v) + "\n").collect();
    for arity in [2u64, 3, 16] {
        let config = TreeConfig::new(Arity::new(arity).unwrap(), HashKind::Poseidon);
        let mut tree = LeanImt::from_leaves(config, &values).unwrap();
        let n = arity.to_string();
        let prove = |extra: &[&str]| {
            let mut args = vec![
                "prove", "--arity", &n, "--hash", "poseidon", "--format", "dec", "--index", "11",
                "--size", "12",
            ];
            args.extend_from_slice(extra);
            cairn_stdin(&args, dec.as_bytes())
        };
        let proof = tree.prove_at(11, 12).unwrap();
        assert_eq!(
            prove(&["--proof-format", "circom", "--circuit-depth", "7"]).success(),
            proof.to_circom_json(Some(7)).unwrap() + "\n"
        );
        assert_eq!(
            prove(&["--proof-format", "json"]).success(),
            proof.to_json() + "\n"
        );
        if arity == 2 {
            assert_eq!(
                prove(&["--proof-format", "zkkit"]).success(),
                proof.to_zkkit_json().unwrap() + "\n"
            );
            assert_eq!(
                prove(&["--proof-format", "zkkit-circom", "--circuit-depth", "6"]).success(),
                proof.to_zkkit_circom_json(Some(6)).unwrap() + "\n"
            );
        } else {
            let error = prove(&["--proof-format", "zkkit"]).fails(2, "error: ");
            assert!(
                error.contains(&format!("this tree has arity {arity}")),
                "{error}"
            );
        }
        let error =
            prove(&["--proof-format", "circom", "--circuit-depth", "0"]).fails(2, "error: ");
        assert!(error.contains("circuit of depth 0"), "{error}");
    }
    let error = cairn_stdin(
        &[
            "prove",
            "--arity",
            "2",
            "--hash",
            "blake3",
            "--format",
            "hex",
            "--index",
            "0",
            "--proof-format",
            "circom",
        ],
        format!("{}\n", to_hex(&small(1))).as_bytes(),
    )
    .fails(2, "error: ");
    assert!(error.contains("hashes with blake3"), "{error}");
}
