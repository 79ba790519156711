//! Indexed databases end to end on the real binary: init --kind indexed,
//! ingest (blocks, duplicates, skipped duplicates, the guard value), root,
//! stats, contains, prove --absent/--leaf/--index, verify (with --db and
//! with a given head, --value), truncate, checkpoint, backup, export, and
//! the commands that apply to lean trees only.

use cairn_core::hex::to_hex;
use cairn_core::indexed::{AbsenceProof, IndexedTree, InsertionWitness};
use cairn_core::{Hash, HashKind, TreeConfig};

use crate::support::{Dir, arity, cairn, cairn_stdin, ingest, init, leaves};

fn indexed_root(n: u64, hash: HashKind, values: &[Hash]) -> String {
    let tree = IndexedTree::from_values(TreeConfig::new(arity(n), hash), values).unwrap();
    to_hex(&tree.root())
}

#[test]
fn an_indexed_database_ingests_proves_absence_and_verifies() {
    let dir = Dir::new();
    let db = dir.path("db");
    let json = cairn(&[
        "init", &db, "--kind", "indexed", "--arity", "4", "--hash", "sha256", "--json",
    ])
    .json();
    assert_eq!(json["kind"], "indexed");
    assert_eq!(json["unique"], false);
    let values = leaves(300);
    let report = ingest(&db, &values[..200], &["--block-size", "64", "--json"]).json();
    assert_eq!(report["first_index"], 1);
    assert_eq!(report["count"], 200);
    assert_eq!(report["size"], 201);
    assert_eq!(report["blocks"], 4);
    let root = indexed_root(4, HashKind::Sha256, &values[..200]);
    assert_eq!(report["root"], root.as_str());
    assert_eq!(cairn(&["root", &db]).success(), format!("{root}\n"));
    let root_json = cairn(&["root", "--json", &db]).json();
    assert_eq!(
        (root_json["size"].as_u64(), root_json["kind"].as_str()),
        (Some(201), Some("indexed"))
    );
    assert_eq!(cairn(&["stats", "--json", &db]).json()["values"], 200);

    // Duplicates: refused whole (exit 3), or skipped.
    ingest(&db, &values[190..210], &[]).error(3, &["10 duplicate values", "is already leaf 191"]);
    let skipped = ingest(&db, &values[190..210], &["--skip-duplicates", "--json"]).json();
    assert_eq!(
        (skipped["count"].as_u64(), skipped["skipped_count"].as_u64()),
        (Some(10), Some(10))
    );
    let root = indexed_root(4, HashKind::Sha256, &values[..210]);
    assert_eq!(skipped["root"], root.as_str());
    // The guard value, and block tags, are refused.
    cairn_stdin(
        &["ingest", &db, "--format", "hex", "-"],
        format!("{}\n", to_hex(&[0; 32])).as_bytes(),
    )
    .error(4, &["line 1", "guard"]);
    ingest(&db, &values[250..251], &["--block", "7"]).error(2, &["indexed database", "--block"]);

    // Lookups and proofs.
    assert_eq!(
        cairn(&["contains", &db, &to_hex(&values[7])]).success(),
        "8\n"
    );
    cairn(&["contains", &db, &to_hex(&values[250])]).fails(1, "absent: ");
    let absent = to_hex(&values[250]);
    let proof = cairn(&["prove", &db, "--absent", &absent]).success();
    let file = dir.file("absence.json", &proof);
    let decoded = AbsenceProof::from_json(&proof).unwrap();
    assert_eq!(decoded.size(), 211);
    let verdict = cairn(&["verify", "--db", &db, "--json", &file]).json();
    assert_eq!(
        (verdict["valid"].as_bool(), verdict["kind"].as_str()),
        (Some(true), Some("absence"))
    );
    let out = cairn(&[
        "verify", "--arity", "4", "--hash", "sha256", "--root", &root, "--size", "211", &file,
    ])
    .success();
    assert!(
        out.starts_with(&format!("valid: {absent} is absent")),
        "{out}"
    );
    // About another value, against another head, or with the wrong size: invalid.
    cairn(&[
        "verify",
        "--db",
        &db,
        "--value",
        &to_hex(&values[251]),
        &file,
    ])
    .invalid("the verifier asked about");
    cairn(&[
        "verify", "--arity", "4", "--hash", "sha256", "--root", &root, "--size", "212", &file,
    ])
    .invalid("trusted size is 212");
    cairn(&["prove", &db, "--absent", &to_hex(&values[3])]).fails(1, "present: ");
    let member = cairn(&["prove", &db, "--leaf", &to_hex(&values[3])]).success();
    let member_file = dir.file("member.json", &member);
    assert_eq!(
        cairn(&["verify", "--db", &db, "--json", &member_file]).json()["index"],
        4
    );
    let guard = dir.file(
        "guard.json",
        cairn(&["prove", &db, "--index", "0"]).success(),
    );
    cairn(&["verify", "--db", &db, &guard]).success();
    cairn(&["prove", &db, "--index", "211"]).error(2, &["leaf index 211", "size 211"]);
    // An earlier head (every size of the last 4,096 values is retained
    // after an open), by size or by root, verifying against its own head.
    let root5 = indexed_root(4, HashKind::Sha256, &values[..4]);
    let old = cairn(&["prove", &db, "--absent", &absent, "--size", "5"]).success();
    assert_eq!(AbsenceProof::from_json(&old).unwrap().size(), 5);
    let old_file = dir.file("old.json", &old);
    cairn(&[
        "verify", "--arity", "4", "--hash", "sha256", "--root", &root5, "--size", "5", &old_file,
    ])
    .success();
    cairn(&["verify", "--db", &db, &old_file]).success();
    assert_eq!(
        cairn(&["prove", &db, "--absent", &absent, "--root", &root5]).success(),
        old
    );
    // Held now, absent from the tree of size 5.
    cairn(&[
        "prove",
        &db,
        "--absent",
        &to_hex(&values[100]),
        "--size",
        "5",
    ])
    .success();
    cairn(&["prove", &db, "--index", "3", "--size", "5"]).success();
    cairn(&["prove", &db, "--absent", &absent, "--size", "212"]).error(2, &["212"]);
    // Binary proofs verify the same.
    let bin = dir.path("absence.bin");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args(["prove", &db, "--absent", &absent, "--binary"])
        .output()
        .unwrap();
    std::fs::write(&bin, &out.stdout).unwrap();
    assert_eq!(AbsenceProof::from_bytes(&out.stdout).unwrap(), decoded);
    cairn(&["verify", "--db", &db, &bin]).success();

    // Commands of lean trees say so; --absent on a lean database too.
    cairn(&["consistency", &db, "--from", "3"]).error(2, &["indexed database"]);
    cairn(&["heads", &db]).error(2, &["indexed database"]);
    // Tiles, signatures and mirrors are for append-only trees: each says so.
    cairn(&["publish", &db, "--to", &dir.path("public")]).error(2, &["indexed database"]);
    cairn(&["signed-checkpoint", &db]).error(2, &["indexed database"]);
    let key = dir.path("signer.key");
    cairn(&["keygen", "--name", "example.org/spent", "--out", &key]).success();
    cairn(&["sign-key", &db, &key]).error(2, &["indexed database"]);
    cairn(&["serve", &db, "--sign-key", &key, "--listen", "127.0.0.1:0"])
        .error(2, &["indexed database", "signed checkpoints"]);
    cairn(&[
        "serve",
        &db,
        "--publish",
        &dir.path("public"),
        "--listen",
        "127.0.0.1:0",
    ])
    .error(2, &["indexed database", "--publish"]);
    let other = dir.path("other");
    cairn(&[
        "init",
        &other,
        "--kind",
        "indexed",
        "--arity",
        "2",
        "--hash",
        "blake3",
        "--sign-key",
        &key,
    ])
    .error(2, &["--sign-key is for lean and imt trees"]);
    cairn(&[
        "init",
        &other,
        "--kind",
        "indexed",
        "--arity",
        "2",
        "--hash",
        "blake3",
        "--no-unique",
    ])
    .error(2, &["--no-unique"]);
    cairn(&[
        "init", &other, "--kind", "indexed", "--arity", "2", "--hash", "blake3", "--depth", "3",
    ])
    .error(2, &["--depth"]);
    assert!(!std::path::Path::new(&other).join("cairn.meta").exists());
    // A leaf file has no indexed kind: that is a database's.
    cairn_stdin(
        &[
            "root", "--arity", "2", "--hash", "blake3", "--kind", "indexed", "--format", "hex", "-",
        ],
        format!("{}\n", to_hex(&values[0])).as_bytes(),
    )
    .error(2, &["--kind indexed is for databases"]);
    let lean = dir.path("lean");
    init(&lean, 4, HashKind::Sha256, &[]);
    ingest(&lean, &values[..5], &[]).success();
    cairn(&["prove", &lean, "--absent", &absent]).error(2, &["--absent"]);
    cairn(&["verify", "--db", &lean, &file]).invalid("not an indexed database");

    let checked = cairn(&["check", &db]).success();
    assert!(checked.contains("indexed tree rebuilt"), "{checked}");
    // Truncate (refused below what a checkpoint finalized), checkpoint,
    // backup, export.
    let truncated = cairn(&["truncate", &db, "--to", "201", "--json"]).json();
    assert_eq!(truncated["removed"], 10);
    assert_eq!(
        truncated["root"],
        indexed_root(4, HashKind::Sha256, &values[..200]).as_str()
    );
    cairn(&["truncate", &db, "--to", "300"]).error(2, &["the tree holds 201"]);
    ingest(&db, &values[200..210], &[]).success();
    cairn(&["checkpoint", &db]).success();
    cairn(&["truncate", &db, "--to", "101"]).error(2, &["the first 211 are final"]);
    // Finality as over HTTP, in the tree's sizes; no block targets.
    let finalized = cairn(&["finalize", &db, "--to", "150", "--json"]).json();
    assert_eq!(finalized["finalized_size"], 211);
    cairn(&["finalize", &db, "--to-block", "3"]).error(2, &["indexed database", "block-tagged"]);
    let copy = dir.path("copy");
    let backup = cairn(&["backup", &db, &copy, "--json"]).json();
    assert_eq!(backup["root"], root.as_str());
    assert_eq!(cairn(&["root", &copy]).success(), format!("{root}\n"));
    let exported = cairn(&["export", &db, "--format", "hex"]).success();
    assert_eq!(exported.lines().count(), 210);
}

#[test]
fn an_insertion_witness_verifies_against_the_head_before_it() {
    let dir = Dir::new();
    let db = dir.path("db");
    cairn(&[
        "init", &db, "--kind", "indexed", "--arity", "2", "--hash", "blake3",
    ])
    .success();
    let values = leaves(20);
    ingest(&db, &values[..10], &[]).success();
    let mut tree =
        IndexedTree::from_values(TreeConfig::new(arity(2), HashKind::Blake3), &values[..10])
            .unwrap();
    let before = tree.head();
    let witness: InsertionWitness = tree.insert_with_witness(&values[10..13]).unwrap();
    let file = dir.file("witness.json", witness.to_json());
    let root = to_hex(&before.root.unwrap());
    let verdict = cairn(&[
        "verify", "--arity", "2", "--hash", "blake3", "--root", &root, "--size", "11", "--json",
        &file,
    ])
    .json();
    assert_eq!(verdict["new_size"], 14);
    assert_eq!(verdict["new_root"], to_hex(&tree.root()).as_str());
    cairn(&["verify", "--db", &db, &file]).error(2, &["head before it"]);
    // The trusted tree may be named indexed; another kind is refused.
    cairn(&[
        "verify", "--kind", "indexed", "--arity", "2", "--hash", "blake3", "--root", &root,
        "--size", "11", &file,
    ])
    .success();
    cairn(&[
        "verify", "--kind", "lean", "--arity", "2", "--hash", "blake3", "--root", &root, "--size",
        "11", &file,
    ])
    .error(2, &["lean or imt tree"]);
    cairn(&[
        "verify", "--arity", "2", "--hash", "blake3", "--root", &root, "--size", "12", &file,
    ])
    .invalid("size");
}

#[test]
fn an_absence_proof_prints_the_inputs_of_the_absence_circuit() {
    let dir = Dir::new();
    let db = dir.path("set");
    init(&db, 4, HashKind::Poseidon, &["--kind", "indexed"]);
    let values: Vec<Hash> = [30u64, 10, 20]
        .iter()
        .map(|&v| cairn_core::indexed::index_word(v))
        .collect();
    ingest(&db, &values, &[]).success();
    let tree =
        IndexedTree::from_values(TreeConfig::new(arity(4), HashKind::Poseidon), &values).unwrap();
    let absent = to_hex(&cairn_core::indexed::index_word(25));
    let inputs = cairn(&[
        "prove",
        &db,
        "--absent",
        &absent,
        "--proof-format",
        "circom",
        "--circuit-depth",
        "3",
    ])
    .json();
    // Leaf 3 (value 20) points at leaf 1 (value 30); the path has one
    // hashing level of three siblings, then two rows of zeros.
    assert_eq!(
        inputs["root"],
        cairn_core::decimal::to_decimal(&tree.root()).as_str()
    );
    for (field, want) in [
        ("size", "4"),
        ("value", "25"),
        ("lowValue", "20"),
        ("lowNextIndex", "1"),
        ("lowNextValue", "30"),
        ("lowIndex", "3"),
    ] {
        assert_eq!(inputs[field], want, "{field}: {inputs}");
    }
    let siblings = inputs["siblings"].as_array().unwrap();
    assert_eq!(siblings.len(), 3);
    assert_eq!(siblings[0].as_array().unwrap().len(), 3);
    assert_eq!(siblings[2], serde_json::json!(["0", "0", "0"]));

    // Membership has no absence circuit; zk-kit formats are lean trees';
    // a circuit too shallow and another hash are refused.
    let three = to_hex(&values[2]);
    cairn(&["prove", &db, "--leaf", &three, "--proof-format", "circom"]).error(2, &["--absent"]);
    cairn(&["prove", &db, "--absent", &absent, "--proof-format", "zkkit"])
        .error(2, &["lean trees"]);
    cairn(&[
        "prove",
        &db,
        "--absent",
        &absent,
        "--proof-format",
        "circom",
        "--circuit-depth",
        "0",
    ])
    .error(2, &["needs depth 1"]);
    let other = dir.path("blake");
    init(&other, 4, HashKind::Blake3, &["--kind", "indexed"]);
    ingest(&other, &values, &[]).success();
    cairn(&[
        "prove",
        &other,
        "--absent",
        &absent,
        "--proof-format",
        "circom",
    ])
    .error(2, &["Poseidon"]);
}

#[test]
fn an_insertion_witness_of_values_not_inserted_prints_the_batch_circuits_inputs() {
    let dir = Dir::new();
    let db = dir.path("set");
    init(&db, 2, HashKind::Poseidon, &["--kind", "indexed"]);
    let word = cairn_core::indexed::index_word;
    let stored = [word(1000), word(5000), word(9000)];
    ingest(&db, &stored, &[]).success();
    let before = cairn(&["root", &db]).success();
    // 2000 and 3000 share 1000's leaf; 9500 follows the last; one value in hex.
    let batch = [word(2000), word(3000), word(9500), word(1)];
    let list = format!("2000,3000,9500,{}", to_hex(&word(1)));
    let inputs = cairn(&[
        "prove",
        &db,
        "--insert-witness",
        &list,
        "--circuit-depth",
        "4",
    ])
    .json();
    assert_eq!(cairn(&["root", &db]).success(), before, "nothing inserted");
    let after = IndexedTree::from_values(
        TreeConfig::new(arity(2), HashKind::Poseidon),
        &[&stored[..], &batch[..]].concat(),
    )
    .unwrap();
    assert_eq!(
        inputs["newRoot"],
        cairn_core::decimal::to_decimal(&after.root()).as_str()
    );
    assert_eq!(inputs["lowIndex"], serde_json::json!(["1", "4", "3", "0"]));
    assert_eq!(inputs["frontier"][0].as_array().unwrap().len(), 4);
    // The same from a file, one value a line.
    let file = dir.path("batch.txt");
    std::fs::write(&file, "2000\n3000\n9500\n1\n").unwrap();
    let from_file = cairn(&[
        "prove",
        &db,
        "--insert-witness",
        &format!("@{file}"),
        "--circuit-depth",
        "4",
    ])
    .json();
    assert_eq!(from_file, inputs);
    // A held value exits 1; a repeat, the guard, K not a multiple of 4 or a
    // lean database exit 2.
    let held = cairn(&["prove", &db, "--insert-witness", "2000,5000,9500,1"]).fails(1, "present: ");
    assert!(held.contains("already leaf 2"), "{held}");
    cairn(&["prove", &db, "--insert-witness", "2000,2000,9500,1"])
        .error(2, &["already batch position 0"]);
    cairn(&["prove", &db, "--insert-witness", "2000,0,9500,1"]).error(2, &["guard"]);
    cairn(&["prove", &db, "--insert-witness", "2000,3000"]).error(2, &["multiple of 4"]);
    cairn(&["prove", &db, "--insert-witness", "2000,x"]).error(2, &["position 1"]);
    let lean = dir.path("lean");
    init(&lean, 2, HashKind::Poseidon, &[]);
    cairn(&["prove", &lean, "--insert-witness", "1,2,3,4"])
        .error(2, &["--insert-witness", "indexed"]);
}
