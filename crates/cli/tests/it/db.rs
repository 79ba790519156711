//! The database commands end to end on the real binary: init, root, stats,
//! prove, consistency, verify --db, verify-consistency --db, contains,
//! checkpoint, check and export, with their exit codes, locking and
//! corruption.

use cairn_core::hex::to_hex;
use cairn_core::{Hash, HashKind, MembershipProof};

use crate::support::{Dir, bin, cairn, cairn_stdin, hex, ingest, init, leaves, root_hex, tree};

/// A database of `count` test leaves at arity `n` under `hash`, in `dir/db`.
fn database(dir: &Dir, n: u64, hash: HashKind, count: usize) -> (String, Vec<Hash>) {
    let db = dir.path("db");
    init(&db, n, hash, &[]);
    let l = leaves(count);
    if count > 0 {
        ingest(&db, &l, &[]).success();
    }
    (db, l)
}

/// Flips one bit of `path` at `offset`.
fn flip(path: &str, offset: u64) {
    let mut bytes = std::fs::read(path).expect("read file to corrupt");
    bytes[offset as usize] ^= 0x01;
    std::fs::write(path, bytes).expect("write corrupted file");
}

#[test]
fn init_creates_an_empty_database_and_refuses_a_non_empty_directory() {
    let dir = Dir::new();
    let db = dir.path("db");
    let json = cairn(&["init", &db, "--arity", "4", "--hash", "keccak256", "--json"]).json();
    assert_eq!(json["dir"], db.as_str());
    assert_eq!(json["arity"], 4);
    assert_eq!(json["hash"], "keccak256");
    assert_eq!(json["max_depth"], serde_json::Value::Null);
    assert_eq!(json["unique"], true);
    assert_eq!(json["log_file_leaves"], 1 << 21);
    assert_eq!(json["format_version"], 1);
    assert!(std::path::Path::new(&db).join("cairn.meta").is_file());

    // The empty database has no root, as the empty leaf file has none.
    cairn(&["root", &db]).error(1, &["empty tree: no root", &db]);
    assert_eq!(
        cairn(&["root", "--json", &db]).success(),
        "{\"size\":0,\"depth\":0,\"root\":null,\"arity\":4,\"hash\":\"keccak256\",\"kind\":\"lean\",\"zero\":null}\n"
    );

    cairn(&["init", &db, "--arity", "4", "--hash", "keccak256"])
        .error(2, &[&db, "already holds a cairn database"]);
    let foreign = dir.path("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(dir.path("foreign/notes.txt"), "mine").unwrap();
    cairn(&["init", &foreign, "--arity", "2", "--hash", "blake3"])
        .error(2, &[&foreign, "not empty"]);
    assert_eq!(
        std::fs::read_dir(&foreign).unwrap().count(),
        1,
        "a refused init leaves the directory alone"
    );
    cairn(&[
        "init",
        &dir.path("d0"),
        "--arity",
        "2",
        "--hash",
        "blake3",
        "--max-depth",
        "0",
    ])
    .error(2, &["--max-depth"]);
    cairn(&["init", &dir.path("d1"), "--arity", "1", "--hash", "blake3"]).error(2, &["arity 1"]);
    cairn(&["init", &dir.path("d2"), "--hash", "blake3"]).error(2, &["--arity"]);
}

#[test]
fn max_depth_refuses_an_ingest_that_would_exceed_it() {
    let dir = Dir::new();
    let db = dir.path("db");
    init(&db, 2, HashKind::Blake3, &["--max-depth", "2"]);
    let json = cairn(&["stats", "--json", &db]).json();
    assert_eq!(json["max_depth"], 2);
    ingest(&db, &leaves(5), &[]).error(4, &["capacity of 4 leaves", "nothing was appended"]);
    ingest(&db, &leaves(4), &[]).success();
}

#[test]
fn root_prove_and_consistency_of_a_database_equal_the_file_commands() {
    let dir = Dir::new();
    let (db, l) = database(&dir, 3, HashKind::Sha256, 100);
    let file = dir.file("leaves.bin", bin(&l));
    let file_args = ["--arity", "3", "--hash", "sha256"];

    assert_eq!(
        cairn(&["root", &db]).success(),
        root_hex(3, HashKind::Sha256, &l) + "\n"
    );
    assert_eq!(
        cairn(&["root", "--json", &db]).success(),
        cairn(&[&["root", "--json"][..], &file_args, &[file.as_str()]].concat()).success()
    );

    let mut core = tree(3, HashKind::Sha256, &l);
    let proof = cairn(&["prove", &db, "--index", "42"]).success();
    assert_eq!(proof, core.prove(42).unwrap().to_json() + "\n");
    assert_eq!(
        cairn(&["prove", &db, "--leaf", &to_hex(&l[42])]).success(),
        proof
    );
    let binary = cairn(&["prove", &db, "--index", "42", "--binary"]);
    assert_eq!(binary.code, 0, "{}", binary.stderr);
    assert_eq!(binary.stdout, core.prove(42).unwrap().to_bytes());
    let historical = cairn(&["prove", &db, "--index", "42", "--size", "50"]).success();
    assert_eq!(historical, core.prove_at(42, 50).unwrap().to_json() + "\n");

    let consistency = cairn(&["consistency", &db, "--from", "30", "--to", "80"]).success();
    assert_eq!(
        consistency,
        core.prove_consistency(30, 80).unwrap().to_json() + "\n"
    );
    assert_eq!(
        cairn(&["consistency", &db, "--from", "30"]).success(),
        core.prove_consistency(30, 100).unwrap().to_json() + "\n"
    );
    let c_bin = cairn(&["consistency", &db, "--from", "30", "--binary"]);
    assert_eq!(
        c_bin.stdout,
        core.prove_consistency(30, 100).unwrap().to_bytes()
    );

    // verify --db takes arity, hash and head from the database: the head
    // at the proof's size unless --size says otherwise.
    let root = root_hex(3, HashKind::Sha256, &l);
    let proof_file = dir.file("proof.json", &proof);
    assert_eq!(
        cairn(&["verify", "--db", &db, &proof_file]).success(),
        format!(
            "valid: leaf {} is leaf 42 of the tree of size 100 with root {root}\n",
            to_hex(&l[42])
        )
    );
    let json = cairn(&["verify", "--db", &db, "--json", &proof_file]).json();
    assert_eq!(json["valid"], true);
    assert_eq!(json["index"], 42);
    assert_eq!(json["size"], 100);
    assert_eq!(json["root"], root.as_str());
    assert_eq!(json["leaf"], to_hex(&l[42]).as_str());
    let old_file = dir.file("old.json", &historical);
    let old_root = root_hex(3, HashKind::Sha256, &l[..50]);
    let out = cairn(&["verify", "--db", &db, &old_file]).success();
    assert!(
        out.contains(&format!("size 50 with root {old_root}")),
        "{out}"
    );
    cairn(&["verify", "--db", &db, "--size", "60", &old_file]).invalid("size");
    // Through stdin, binary.
    let run = cairn_stdin(&["verify", "--db", &db], &binary.stdout);
    assert!(run.success().starts_with("valid: "));

    let c_file = dir.file("c.json", &consistency);
    let json = cairn(&["verify-consistency", "--db", &db, "--json", &c_file]).json();
    assert_eq!(json["valid"], true);
    assert_eq!(json["old_size"], 30);
    assert_eq!(json["new_size"], 80);
    assert_eq!(
        json["old_root"],
        root_hex(3, HashKind::Sha256, &l[..30]).as_str()
    );
    assert!(
        cairn_stdin(&["verify-consistency", "--db", &db], &c_bin.stdout)
            .success()
            .starts_with("valid: ")
    );
    cairn(&[
        "verify-consistency",
        "--db",
        &db,
        "--old-size",
        "31",
        &c_file,
    ])
    .invalid("size");
}

#[test]
fn verify_db_rejects_proofs_of_another_tree_and_beyond_the_database() {
    let dir = Dir::new();
    let (db, l) = database(&dir, 2, HashKind::Blake3, 20);
    // A proof from a longer tree with the same prefix: its size is beyond
    // the database.
    let mut longer = l.clone();
    longer.extend(cairn_testkit::leaves(99, 5));
    let proof = tree(2, HashKind::Blake3, &longer).prove(3).unwrap();
    let file = dir.file("beyond.json", proof.to_json());
    cairn(&["verify", "--db", &db, &file]).invalid("beyond the database");
    let json = cairn(&["verify", "--db", &db, "--json", &file]);
    assert_eq!(json.code, 1);
    assert_eq!(json.stderr, "", "a --json verdict goes to stdout only");
    let verdict: serde_json::Value = serde_json::from_str(&json.out()).unwrap();
    assert_eq!(verdict["valid"], false);
    assert!(
        verdict["reason"]
            .as_str()
            .unwrap()
            .contains("beyond the database")
    );
    // A proof of another tree of the same size: the root does not match.
    let other = cairn_testkit::leaves(98, 20);
    let proof = tree(2, HashKind::Blake3, &other).prove(3).unwrap();
    let other_file = dir.file("other.json", proof.to_json());
    cairn(&["verify", "--db", &db, &other_file]).invalid("root");
    cairn(&["verify", "--db", &db, "--size", "21", &other_file]).error(2, &["--size 21", "beyond"]);
    // Malformed proofs are exit 1 too.
    let file = dir.file("garbage.json", "{\"nope\":1}");
    cairn(&["verify", "--db", &db, &file]).fails(1, "error: ");
    // --db conflicts with the trusted values it replaces.
    cairn(&["verify", "--db", &db, "--root", &to_hex(&[0; 32]), &file]).error(2, &["--root"]);
    cairn(&["verify", "--db", &db, "--arity", "2", &file]).error(2, &["--arity"]);
}

#[test]
fn root_tells_a_database_from_a_leaf_file_and_refuses_tree_options_with_one() {
    let dir = Dir::new();
    let (db, _) = database(&dir, 2, HashKind::Blake3, 3);
    cairn(&["root", "--arity", "2", &db]).error(2, &[&db, "drop --arity"]);
    cairn(&["root", "--format", "hex", &db]).error(2, &["drop --format"]);
    cairn(&["prove", &db, "--arity", "2", "--index", "0"]).error(2, &["--arity"]);
    cairn(&["consistency", &db, "--leaves", &db, "--from", "0"]).error(2, &["--leaves"]);
    // A directory that is not a database is not a leaf file either.
    let plain = dir.path("plain");
    std::fs::create_dir(&plain).unwrap();
    cairn(&["root", &plain]).error(4, &["cannot read", "not a cairn database"]);
    cairn(&["root", "--arity", "2", "--hash", "blake3", &plain]).error(4, &["cannot read"]);
    cairn(&["prove", &plain, "--index", "0"]).error(4, &["not a cairn store"]);
    cairn(&["stats", &dir.path("missing")]).error(4, &["does not exist"]);
}

#[test]
fn prove_by_value_and_out_of_range_requests_have_their_exit_codes() {
    let dir = Dir::new();
    let (db, l) = database(&dir, 4, HashKind::Blake3, 30);
    cairn(&["prove", &db, "--leaf", &to_hex(&[7; 32])]).fails(1, "absent: ");
    cairn(&["prove", &db, "--index", "30"]).error(2, &["leaf index 30", "size 30"]);
    cairn(&["prove", &db, "--index", "3", "--size", "31"]).error(2, &["size 31"]);
    cairn(&["prove", &db, "--leaf", &to_hex(&l[20]), "--size", "10"])
        .error(2, &["leaf 20", "first 10 leaves"]);
    cairn(&["prove", &db]).error(2, &["--index"]);
    cairn(&["consistency", &db, "--from", "31"]).error(2, &["31"]);
    // By value in a leaf file too (its first occurrence).
    let file = dir.file("leaves.bin", bin(&l));
    let by_value = cairn(&[
        "prove",
        "--arity",
        "4",
        "--hash",
        "blake3",
        "--leaves",
        &file,
        "--leaf",
        &to_hex(&l[7]),
    ])
    .success();
    let proof = MembershipProof::from_json(by_value.trim()).unwrap();
    assert_eq!(proof.index(), 7);
}

#[test]
fn contains_prints_the_index_and_exits_1_when_absent() {
    let dir = Dir::new();
    let (db, l) = database(&dir, 2, HashKind::Poseidon, 12);
    assert_eq!(cairn(&["contains", &db, &to_hex(&l[9])]).success(), "9\n");
    let absent = to_hex(&[3; 32]);
    cairn(&["contains", &db, &absent]).fails(1, "absent: ");
    let json = cairn(&["contains", "--json", &db, &to_hex(&l[0])]).json();
    assert_eq!(json["present"], true);
    assert_eq!(json["index"], 0);
    assert_eq!(json["size"], 12);
    let run = cairn(&["contains", "--json", &db, &absent]);
    assert_eq!((run.code, run.stderr.as_str()), (1, ""));
    let json: serde_json::Value = serde_json::from_str(&run.out()).unwrap();
    assert_eq!(json["present"], false);
    assert_eq!(json["index"], serde_json::Value::Null);
    assert_eq!(json["leaf"], absent.as_str());
    cairn(&["contains", &db, "0x12"]).error(2, &["0x12"]);

    let plain = dir.path("plain");
    init(&plain, 2, HashKind::Blake3, &["--no-unique"]);
    cairn(&["contains", &plain, &absent]).error(2, &["no nullifier set"]);
    cairn(&["prove", &plain, "--leaf", &absent]).error(2, &["no nullifier set"]);
}

#[test]
fn export_writes_the_leaves_back_in_both_formats() {
    let dir = Dir::new();
    let (db, l) = database(&dir, 5, HashKind::Keccak256, 200);
    let run = cairn(&["export", &db]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, bin(&l));
    assert_eq!(
        cairn(&[
            "export", &db, "--format", "hex", "--from", "10", "--to", "20"
        ])
        .success(),
        hex(&l[10..20])
    );
    assert_eq!(
        cairn(&["export", &db, "--format", "hex", "--from", "200"]).success(),
        ""
    );
    cairn(&["export", &db, "--from", "5", "--to", "3"]).error(2, &["5..3"]);
    cairn(&["export", &db, "--to", "201"]).error(2, &["201"]);
    // What export writes, ingest reads: a copy has the same root.
    let copy = dir.path("copy");
    init(&copy, 5, HashKind::Keccak256, &[]);
    cairn_stdin(&["ingest", &copy, "-"], &run.stdout).success();
    assert_eq!(
        cairn(&["root", &copy]).success(),
        cairn(&["root", &db]).success()
    );
}

#[test]
fn stats_reports_shape_checkpoint_set_and_bytes_on_disk() {
    let dir = Dir::new();
    let (db, l) = database(&dir, 4, HashKind::Blake3, 1000);
    let json = cairn(&["stats", "--json", &db]).json();
    assert_eq!(json["format_version"], 1);
    assert_eq!(json["arity"], 4);
    assert_eq!(json["hash"], "blake3");
    assert_eq!(json["unique"], true);
    assert_eq!(json["size"], 1000);
    assert_eq!(json["durable_size"], 1000);
    assert_eq!(json["depth"], 5);
    assert_eq!(json["root"], root_hex(4, HashKind::Blake3, &l).as_str());
    assert_eq!(
        json["checkpoint_number"], 0,
        "a small ingest does not checkpoint"
    );
    assert_eq!(json["set"]["values"], 1000);
    let levels = json["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 6);
    assert_eq!(levels[0]["nodes"], 1000);
    assert_eq!(levels[1]["nodes"], 250);
    assert_eq!(levels[5]["nodes"], 1);
    assert!(json["disk_bytes"]["log"].as_u64().unwrap() >= 32_000);
    assert!(json["file_bytes"]["log"].as_u64().unwrap() >= 4096 + 32 * (1 << 21));
    assert_eq!(json["disk_bytes"]["levels"], 0);
    let disk = &json["disk_bytes"];
    let sum: u64 = ["log", "levels", "checkpoint", "set", "meta", "other"]
        .iter()
        .map(|k| disk[k].as_u64().unwrap())
        .sum();
    assert_eq!(disk["total"], sum);

    let written = cairn(&["checkpoint", "--json", &db]).json();
    assert_eq!(written["written"], true);
    assert_eq!(written["number"], 1);
    assert_eq!(written["size"], 1000);
    assert_eq!(written["set_checkpoint_size"], 1000);
    let again = cairn(&["checkpoint", "--json", &db]).json();
    assert_eq!(again["written"], false);
    assert_eq!(again["number"], 1);
    assert_eq!(
        cairn(&["checkpoint", &db]).success(),
        "checkpoint 1 already covers all 1,000 leaves\n"
    );

    let json = cairn(&["stats", "--json", &db]).json();
    assert_eq!(json["checkpoint_number"], 1);
    assert_eq!(json["checkpoint_size"], 1000);
    assert_eq!(json["set"]["checkpoint_size"], 1000);
    assert!(json["disk_bytes"]["levels"].as_u64().unwrap() > 0);
    assert!(json["disk_bytes"]["set"].as_u64().unwrap() > 0);
    assert!(json["disk_bytes"]["checkpoint"].as_u64().unwrap() > 0);

    let text = cairn(&["stats", &db]).success();
    for needle in [
        "arity         4",
        "hash          blake3",
        "size          1,000 leaves (1,000 durable)",
        "checkpoint    number 1, covering 1,000 leaves",
        "levels         0: 1,000 nodes",
        "disk",
    ] {
        assert!(text.contains(needle), "stats lacks {needle:?}:\n{text}");
    }
}

#[test]
fn check_passes_on_a_healthy_database_with_and_without_a_checkpoint() {
    let dir = Dir::new();
    let (db, _) = database(&dir, 3, HashKind::Sha256, 500);
    let out = cairn(&["check", &db]).success();
    assert!(out.starts_with("ok: 500 leaves"), "{out}");
    cairn(&["checkpoint", &db]).success();
    let json = cairn(&["check", "--json", &db]).json();
    assert_eq!(json["ok"], true);
    assert_eq!(json["size"], 500);
    assert_eq!(json["set_checked"], true);
    assert_eq!(json["error"], serde_json::Value::Null);
    let plain = dir.path("plain");
    init(&plain, 2, HashKind::Blake3, &["--no-unique"]);
    ingest(&plain, &leaves(10), &[]).success();
    assert!(
        cairn(&["check", &plain])
            .success()
            .contains("no nullifier set")
    );
}

#[test]
fn check_names_a_corrupt_level_file_page_and_exits_4() {
    let dir = Dir::new();
    let (db, _) = database(&dir, 2, HashKind::Blake3, 1000);
    cairn(&["checkpoint", &db]).success();
    let level = format!("{db}/levels/level-01.nodes");
    flip(&level, 4096 + 32 * 10 + 5);
    let line = cairn(&["check", &db]).error(
        4,
        &[
            "cannot open",
            "level-01.nodes",
            "offset 4096",
            "nodes 0..128 of level 1",
            "level-01.sums says",
        ],
    );
    assert!(line.contains(&db), "{line}");
    let run = cairn(&["check", "--json", &db]);
    assert_eq!(run.code, 4);
    let json: serde_json::Value = serde_json::from_str(&run.out()).unwrap();
    assert_eq!(json["ok"], false);
    assert!(json["file"].as_str().unwrap().ends_with("level-01.nodes"));
    assert_eq!(json["offset"], 4096);
    // Every command that opens the database refuses it the same way.
    cairn(&["root", &db]).error(4, &["level-01.nodes", "offset 4096"]);
}

#[test]
fn check_finds_a_flipped_log_byte_through_the_frames_or_the_sums() {
    // After the last checkpoint the log's frame checksums catch it at open;
    // before it, the sums of the leaves' pages do (exit 4 either way).
    let dir = Dir::new();
    let db = dir.path("db");
    init(&db, 2, HashKind::Blake3, &[]);
    ingest(&db, &leaves(300), &["--block-size", "100"]).success();
    let log = format!("{db}/log/000000000000.log");
    flip(&log, 4096 + 32 * 5);
    cairn(&["check", &db]).error(4, &["cannot open", "000000000000.log", "corrupt"]);
    cairn(&["root", &db]).error(4, &["000000000000.log"]);

    let dir = Dir::new();
    let (db, _) = database(&dir, 2, HashKind::Blake3, 300);
    cairn(&["checkpoint", &db]).success();
    let log = format!("{db}/log/000000000000.log");
    flip(&log, 4096 + 32 * 5);
    cairn(&["check", &db]).error(
        4,
        &[
            "cannot open",
            "000000000000.log at offset 4096",
            "nodes 0..128 of level 0",
            "level-00.sums says",
        ],
    );
}

#[test]
fn reading_commands_run_beside_a_writer_and_writing_ones_get_exit_4() {
    let dir = Dir::new();
    let (db, l) = database(&dir, 2, HashKind::Blake3, 10);
    cairn(&["ingest", &db, "--block", "7", "-"]).success();
    let root = cairn(&["root", &db]).success();
    cairn(&["prove", &db, "--index", "3"]).success();
    std::fs::write(
        dir.path("proof.json"),
        cairn(&["prove", &db, "--index", "3"]).stdout,
    )
    .unwrap();
    // A writer (the test process) holds the directory, as `cairn serve` would.
    let held = cairn_db::Db::open(&db).expect("open in the test process");
    let leaf = to_hex(&l[3]);
    assert_eq!(cairn(&["root", &db]).success(), root);
    assert_eq!(cairn(&["contains", &db, &leaf]).success(), "3\n");
    cairn(&["stats", &db, "--json"]).success();
    cairn(&["check", &db]).success();
    cairn(&["prove", &db, "--leaf", &leaf]).success();
    cairn(&["consistency", &db, "--from", "2", "--to", "10"]).success();
    cairn(&[
        "export", &db, "--from", "0", "--to", "10", "--format", "hex",
    ])
    .success();
    cairn(&["verify", "--db", &db, &dir.path("proof.json")]).success();
    assert!(
        cairn(&["heads", &db])
            .success()
            .starts_with("block 7 size 10 ")
    );
    // What the reader saw is what the writer holds; writing still excludes.
    ingest(&db, &cairn_testkit::leaves(3, 2), &[]).error(4, &["locked", "another process"]);
    cairn(&["checkpoint", &db]).error(4, &["locked"]);
    cairn(&["truncate", &db, "--to", "5"]).error(4, &["locked"]);
    held.append([0x42; 32])
        .unwrap()
        .token
        .wait(std::time::Duration::from_secs(5))
        .unwrap();
    assert_eq!(
        cairn(&["contains", &db, &to_hex(&[0x42; 32])]).success(),
        "10\n"
    );
    drop(held);
    assert_eq!(cairn(&["contains", &db, &to_hex(&l[0])]).success(), "0\n");
}

#[test]
fn backup_copies_a_database_held_by_a_writer_and_the_copy_checks() {
    let dir = Dir::new();
    let (db, l) = database(&dir, 2, HashKind::Blake3, 300);
    let held = cairn_db::Db::open(&db).expect("open in the test process");
    let copy = dir.path("copy");
    let json = cairn(&["backup", "--json", &db, &copy]).json();
    assert_eq!(json["size"], 300);
    assert_eq!(json["root"], root_hex(2, HashKind::Blake3, &l).as_str());
    assert!(json["bytes"].as_u64().unwrap() >= 32 * 300);
    drop(held);
    assert!(
        cairn(&["check", &copy])
            .success()
            .starts_with("ok: 300 leaves")
    );
    assert_eq!(
        cairn(&["root", &copy]).success(),
        cairn(&["root", &db]).success()
    );
    assert_eq!(
        cairn(&["contains", &copy, &to_hex(&l[299])]).success(),
        "299\n"
    );
    // The copy's files are not sparse giants: its bytes on disk are the
    // bytes written.
    let stats = cairn(&["stats", "--json", &copy]).json();
    assert!(stats["disk_bytes"]["total"].as_u64().unwrap() < 1 << 20);
    cairn(&["backup", &db, &copy]).error(2, &["not empty"]);
}

#[test]
fn every_command_has_help_with_examples() {
    for command in [
        "init",
        "ingest",
        "root",
        "stats",
        "prove",
        "verify",
        "consistency",
        "verify-consistency",
        "contains",
        "checkpoint",
        "check",
        "export",
        "backup",
        "demo",
        "plan",
        "serve",
    ] {
        let help = cairn(&[command, "--help"]).success();
        assert!(
            help.contains("Examples:"),
            "cairn {command} --help:\n{help}"
        );
        assert!(
            help.contains(&format!("cairn {command} ")),
            "cairn {command} --help has no example of itself:\n{help}"
        );
    }
}
