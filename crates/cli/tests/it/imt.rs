//! The fixed-depth tree kind (`--kind imt`) through the binary: init,
//! the empty tree's root, ingest up to and beyond the capacity, proofs in
//! every format, verification with the trusted kind from a database or the
//! command line, consistency, stats and check, and the usage errors.

use cairn_core::decimal::to_decimal;
use cairn_core::hex::to_hex;
use cairn_core::{Hash, HashKind, LeanImt, TreeConfig, TreeKind};
use cairn_testkit::reference;

use crate::support::{Dir, arity, cairn, cairn_stdin, hex, ingest, leaves};

const DEPTH: u32 = 3;

fn imt(n: u64, hash: HashKind, zero: Hash) -> TreeConfig {
    TreeConfig::new(arity(n), hash).with_kind(TreeKind::Fixed { depth: DEPTH, zero })
}

fn root_of(config: TreeConfig, leaves: &[Hash]) -> String {
    to_hex(
        &LeanImt::from_leaves(config, leaves)
            .unwrap()
            .root()
            .unwrap(),
    )
}

/// `cairn init DIR --arity n --hash h --kind imt --depth 3` and `extra`.
fn init_imt(db: &str, n: u64, hash: HashKind, extra: &[&str]) -> serde_json::Value {
    let n = n.to_string();
    let depth = DEPTH.to_string();
    let mut args = vec![
        "init",
        db,
        "--arity",
        &n,
        "--hash",
        hash.name(),
        "--kind",
        "imt",
        "--depth",
        &depth,
        "--json",
    ];
    args.extend(extra);
    cairn(&args).json()
}

#[test]
fn an_imt_database_from_init_to_verified_proofs() {
    let dir = Dir::new();
    let db = dir.path("db");
    let config = imt(2, HashKind::Poseidon, [0; 32]);
    let json = init_imt(&db, 2, HashKind::Poseidon, &[]);
    assert_eq!(json["kind"], "imt");
    assert_eq!(json["depth"], DEPTH);
    assert_eq!(json["zero"], to_hex(&[0; 32]));
    assert_eq!(json["max_depth"], serde_json::Value::Null);
    assert_eq!(json["format_version"], 2);
    assert_eq!(
        std::fs::metadata(dir.path("db/cairn.meta")).unwrap().len(),
        80,
        "an imt's cairn.meta is version 2"
    );

    // The empty tree's root is zeros[D], printed like any root.
    let empty = to_hex(&config.empty_root().unwrap());
    assert_eq!(cairn(&["root", &db]).success(), format!("{empty}\n"));
    let root = cairn(&["root", "--json", &db]).json();
    assert_eq!(root["size"], 0);
    assert_eq!(root["depth"], DEPTH);
    assert_eq!(root["root"], empty.as_str());
    assert_eq!(root["kind"], "imt");
    assert_eq!(root["zero"], to_hex(&[0; 32]));

    let l = leaves(8);
    ingest(&db, &l[..5], &[]).success();
    let want = root_of(config, &l[..5]);
    assert_eq!(
        want,
        to_hex(&reference::fixed_root(
            arity(2),
            HashKind::Poseidon,
            DEPTH,
            [0; 32],
            &l[..5]
        ))
    );
    assert_eq!(cairn(&["root", &db]).success(), format!("{want}\n"));
    // The same leaves in a file give the same root with the same options.
    let file = dir.file("leaves.hex", hex(&l[..5]));
    let from_file = cairn(&[
        "root", "--arity", "2", "--hash", "poseidon", "--kind", "imt", "--depth", "3", "--format",
        "hex", &file,
    ])
    .success();
    assert_eq!(from_file, format!("{want}\n"));

    // Proofs: cairn's JSON names the tree; verify takes the kind from the
    // database, or from the command line.
    let proof = dir.file(
        "proof.json",
        cairn(&["prove", &db, "--index", "4"]).success(),
    );
    let text = std::fs::read_to_string(&proof).unwrap();
    let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(parsed["version"], 2);
    assert_eq!(parsed["tree"]["kind"], "imt");
    assert_eq!(parsed["tree"]["depth"], DEPTH);
    cairn(&["verify", "--db", &db, &proof]).success();
    let trusted = [
        "verify", "--arity", "2", "--hash", "poseidon", "--root", &want, "--size", "5",
    ];
    let mut as_imt = trusted.to_vec();
    as_imt.extend(["--kind", "imt", "--depth", "3", &proof]);
    cairn(&as_imt).success();
    let mut as_lean = trusted.to_vec();
    as_lean.push(&proof);
    cairn(&as_lean).invalid("the trusted tree is lean");
    let mut deeper = trusted.to_vec();
    deeper.extend(["--kind", "imt", "--depth", "4", &proof]);
    cairn(&deeper).invalid("imt of depth 3");
    let mut other_zero = trusted.to_vec();
    other_zero.extend(["--kind", "imt", "--depth", "3", "--zero", "1", &proof]);
    cairn(&other_zero).invalid("imt of depth 3");

    // zk-kit's IMT proof: D levels of N - 1 siblings, zeros filled in.
    let zkkit = cairn(&["prove", &db, "--index", "4", "--proof-format", "zkkit"]).json();
    assert_eq!(zkkit["leafIndex"], 4);
    assert_eq!(zkkit["pathIndices"], serde_json::json!([0, 0, 1]));
    assert_eq!(
        zkkit["root"],
        to_decimal(&cairn_core::hex::parse_hash(&want).unwrap())
    );
    let zeros = config.kind.zeros(config.arity, config.hash);
    assert_eq!(zkkit["siblings"][0][0], to_decimal(&zeros[0]));
    assert_eq!(zkkit["siblings"][1][0], to_decimal(&zeros[1]));
    let circuit = cairn(&[
        "prove",
        &db,
        "--index",
        "4",
        "--proof-format",
        "zkkit-circom",
        "--circuit-depth",
        "5",
    ])
    .json();
    assert_eq!(circuit["depth"], "3");
    assert_eq!(circuit["index"], "4");
    assert_eq!(circuit["siblings"].as_array().unwrap().len(), 5);
    cairn(&["prove", &db, "--index", "4", "--proof-format", "circom"])
        .error(2, &["lean trees", "imt of depth 3"]);

    // Consistency from the empty tree and between sizes.
    let c = dir.file(
        "c.json",
        cairn(&["consistency", &db, "--from", "2", "--to", "5"]).success(),
    );
    cairn(&["verify-consistency", "--db", &db, &c]).success();
    let from_empty = dir.file(
        "c0.json",
        cairn(&["consistency", &db, "--from", "0"]).success(),
    );
    let head = [
        "verify-consistency",
        "--arity",
        "2",
        "--hash",
        "poseidon",
        "--kind",
        "imt",
        "--depth",
        "3",
        "--old-size",
        "0",
        "--new-size",
        "5",
        "--new-root",
        &want,
    ];
    let mut implied = head.to_vec();
    implied.push(&from_empty);
    cairn(&implied).success();
    let mut wrong_empty = head.to_vec();
    let zero_hex = to_hex(&[0; 32]);
    wrong_empty.extend(["--old-root", &zero_hex, &from_empty]);
    cairn(&wrong_empty).invalid("old root");

    // Up to the capacity, not beyond: N^D = 8.
    ingest(&db, &l[5..8], &[]).success();
    let more = dir.file("more.hex", hex(&leaves(9)[8..]));
    cairn(&["ingest", &db, &more, "--format", "hex"]).error(4, &["capacity of 8 leaves"]);
    assert_eq!(
        cairn(&["root", &db]).success(),
        format!("{}\n", root_of(config, &l))
    );

    let stats = cairn(&["stats", "--json", &db]).json();
    assert_eq!(stats["kind"], "imt");
    assert_eq!(stats["depth"], DEPTH);
    assert_eq!(stats["format_version"], 2);
    assert_eq!(
        stats["levels"].as_array().unwrap().len(),
        DEPTH as usize + 1
    );
    cairn(&["checkpoint", &db]).success();
    cairn(&["check", &db]).success();
    assert_eq!(
        cairn(&["root", &db]).success(),
        format!("{}\n", root_of(config, &l))
    );
    // Published as tiles, it proves from them as the imt it is.
    let tiles = dir.path("tiles");
    cairn(&["publish", &db, "--to", &tiles]).success();
    assert_eq!(
        cairn(&["prove", "--tiles", &tiles, "--index", "2"]).success(),
        cairn(&["prove", &db, "--index", "2"]).success()
    );
}

#[test]
fn a_zero_value_in_decimal_or_hex_names_the_same_tree() {
    let dir = Dir::new();
    let l = leaves(3);
    let file = dir.file("l.bin", l.as_flattened());
    let zero = cairn_testkit::leaf(1, 1);
    let root = |hash: &str, zero: &str| {
        cairn(&[
            "root", "--arity", "5", "--hash", hash, "--kind", "imt", "--depth", "3", "--zero",
            zero, &file,
        ])
    };
    let want = root_of(imt(5, HashKind::MiMCSponge, zero), &l);
    assert_eq!(
        root("mimcsponge", &to_decimal(&zero)).success(),
        format!("{want}\n")
    );
    assert_eq!(
        root("mimcsponge", &to_hex(&zero)).success(),
        format!("{want}\n")
    );
    root("blake3", "1").error(2, &["--zero", "decimal values are for poseidon"]);
    root("poseidon", &to_hex(&[0xff; 32])).error(2, &["not a canonical BN254 field element"]);
    root("poseidon", "1e3").error(2, &["--zero \"1e3\""]);
}

#[test]
fn kind_options_are_checked_and_a_database_refuses_them() {
    let dir = Dir::new();
    let db = dir.path("db");
    let base = ["init", &db, "--arity", "2", "--hash", "blake3"];
    let with = |extra: &[&str]| {
        let mut args = base.to_vec();
        args.extend(extra);
        cairn(&args)
    };
    with(&["--depth", "3"]).error(2, &["--depth", "add --kind imt"]);
    with(&["--zero", "0x01"]).error(2, &["--zero", "add --kind imt"]);
    with(&["--kind", "imt"]).error(2, &["needs --depth"]);
    with(&["--kind", "imt", "--depth", "0"]).error(2, &["--depth"]);
    with(&["--kind", "imt", "--depth", "65"]).error(2, &["--depth"]);
    with(&["--kind", "imt", "--depth", "3", "--max-depth", "3"])
        .error(2, &["--max-depth 3 is for lean trees"]);
    assert!(!std::path::Path::new(&db).exists(), "nothing was created");
    init_imt(&db, 2, HashKind::Blake3, &[]);
    cairn(&["root", &db, "--kind", "imt"]).error(2, &["stores its arity, hash and kind", "--kind"]);
    cairn(&["prove", &db, "--index", "0", "--depth", "3"]).error(2, &["--depth"]);
    cairn(&["verify", "--db", &db, "--kind", "imt", "-"]).error(2, &["--kind"]);
    // An explicit lean kind is the default.
    let lean = dir.path("lean");
    cairn(&[
        "init", &lean, "--arity", "2", "--hash", "blake3", "--kind", "lean",
    ])
    .success();
    assert_eq!(cairn(&["root", "--json", &lean]).json()["kind"], "lean");
    // serve --create takes the kind and refuses another one over a database.
    cairn(&[
        "serve",
        &db,
        "--create",
        "--arity",
        "2",
        "--hash",
        "blake3",
        "--listen",
        "127.0.0.1:0",
    ])
    .error(2, &["already holds a database of kind"]);
    cairn(&["serve", &lean, "--depth", "3"]).error(2, &["--depth", "--create"]);
    let _ = cairn_stdin;
}
