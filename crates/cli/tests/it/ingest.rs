//! `cairn ingest` end to end: stdin and files, hex and binary, blocks,
//! duplicates (refused with exit 3, or skipped), bad input, and a large
//! ingest killed with SIGKILL and completed by a re-run.

use std::os::unix::fs::MetadataExt as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cairn_core::hex::to_hex;
use cairn_core::{Hash, HashKind};

use crate::support::{Dir, bin, cairn, cairn_stdin, hex, ingest, init, leaves, root_hex};

/// A fresh database at arity `n` under `hash`.
fn empty(dir: &Dir, n: u64, hash: HashKind) -> String {
    let db = dir.path("db");
    init(&db, n, hash, &[]);
    db
}

fn size_of(db: &str) -> u64 {
    cairn(&["root", "--json", db]).json()["size"]
        .as_u64()
        .expect("size")
}

#[test]
fn ingest_reads_binary_and_hex_from_stdin_and_files_in_blocks() {
    let dir = Dir::new();
    let db = empty(&dir, 4, HashKind::Sha256);
    let all = leaves(1500);
    let json = cairn_stdin(
        &["ingest", &db, "--block-size", "300", "--json"],
        &bin(&all[..1000]),
    )
    .json();
    assert_eq!(json["first_index"], 0);
    assert_eq!(json["count"], 1000);
    assert_eq!(json["size"], 1000);
    assert_eq!(json["blocks"], 4);
    assert_eq!(json["skipped_count"], 0);
    assert_eq!(json["skipped"], serde_json::json!([]));
    assert_eq!(json["checkpointed"], false);
    assert_eq!(
        json["root"],
        root_hex(4, HashKind::Sha256, &all[..1000]).as_str()
    );

    let file = dir.file("more.hex", format!("\n{}\n", hex(&all[1000..1400])));
    let out = cairn(&["ingest", &db, "--format", "hex", &file]).success();
    assert_eq!(
        out,
        format!(
            "appended 400 leaves at indices 1000..1400 in 1 block: size 1400, root {}\n",
            root_hex(4, HashKind::Sha256, &all[..1400])
        )
    );
    let out = cairn_stdin(
        &["ingest", &db, "--format", "hex", "--block-size", "2^5", "-"],
        hex(&all[1400..]).as_bytes(),
    )
    .success();
    assert!(
        out.starts_with("appended 100 leaves at indices 1400..1500 in 4 blocks"),
        "{out}"
    );
    assert_eq!(
        cairn(&["root", &db]).success(),
        root_hex(4, HashKind::Sha256, &all) + "\n"
    );
    // Nothing in: nothing appended, not an error.
    let json = cairn_stdin(&["ingest", &db, "--json"], b"").json();
    assert_eq!(json["count"], 0);
    assert_eq!(json["first_index"], serde_json::Value::Null);
    assert_eq!(json["size"], 1500);
    assert!(
        cairn(&["ingest", &db, &dir.file("empty.bin", b"")])
            .success()
            .starts_with("appended nothing: size 1500, root 0x")
    );
}

#[test]
fn duplicates_exit_3_listing_each_and_their_block_appends_nothing() {
    let dir = Dir::new();
    let db = empty(&dir, 2, HashKind::Blake3);
    let old = leaves(100);
    ingest(&db, &old, &[]).success();
    let new = cairn_testkit::leaves(11, 2);
    let input = [new[0], old[5], new[1], new[1]];
    let file = dir.file("dups.hex", format!("\n{}", hex(&input)));
    let line = cairn(&["ingest", &db, "--format", "hex", &file]).error(
        3,
        &[
            "2 duplicate values in block 0",
            &format!(
                "{} (input leaf 1, line 3) is already leaf 5",
                to_hex(&old[5])
            ),
            &format!(
                "{} (input leaf 3, line 5) repeats input leaf 2, line 4",
                to_hex(&new[1])
            ),
            "nothing was appended (the database holds 100 leaves)",
            &file,
        ],
    );
    assert!(line.contains(&db), "{line}");
    assert_eq!(size_of(&db), 100);

    let run = cairn(&["ingest", &db, "--format", "hex", "--json", &file]);
    assert_eq!(run.code, 3);
    assert!(run.stderr.starts_with("error: ") && run.stderr.lines().count() == 1);
    let json: serde_json::Value = serde_json::from_str(&run.out()).expect("JSON on stdout");
    assert_eq!(json["error"], "duplicates");
    assert_eq!(json["appended_before"], 0);
    assert_eq!(json["size"], 100);
    assert_eq!(json["block"], 0);
    assert_eq!(json["duplicate_count"], 2);
    assert_eq!(
        json["duplicates"],
        serde_json::json!([
            {"value": to_hex(&old[5]), "position": 1, "line": 3, "existing_index": 5, "earlier_position": null},
            {"value": to_hex(&new[1]), "position": 3, "line": 5, "existing_index": null, "earlier_position": 2},
        ])
    );
}

/// A block of a million duplicates once printed all of them on one JSON
/// line (164 MB): the list is bounded, the count is not.
#[test]
fn duplicates_json_lists_at_most_a_thousand_and_counts_them_all() {
    let dir = Dir::new();
    let db = empty(&dir, 4, HashKind::Blake3);
    let l = leaves(1500);
    ingest(&db, &l, &[]).success();
    let run = ingest(&db, &l, &["--json"]);
    assert_eq!(run.code, 3, "{run:?}");
    assert!(
        run.stderr.contains("1,500 duplicate values")
            && run.stderr.contains("(--json lists the first 1,000)"),
        "{}",
        run.stderr
    );
    let json: serde_json::Value = serde_json::from_str(&run.out()).expect("JSON on stdout");
    assert_eq!(json["duplicate_count"], 1500);
    let listed = json["duplicates"].as_array().unwrap();
    assert_eq!(listed.len(), 1000);
    assert_eq!(listed[999]["existing_index"], 999);
}

#[test]
fn a_refused_later_block_leaves_the_earlier_blocks_appended_and_says_so() {
    let dir = Dir::new();
    let db = empty(&dir, 3, HashKind::Keccak256);
    let old = leaves(100);
    ingest(&db, &old, &[]).success();
    let mut input = cairn_testkit::leaves(12, 25);
    input[23] = old[40];
    let run = ingest(&db, &input, &["--block-size", "10", "--json"]);
    assert_eq!(run.code, 3);
    assert!(
        run.stderr.contains(
            "20 leaves of earlier blocks were appended and are durable (indices 100..120; the database holds 120)"
        ),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("in block 2 of <stdin> (input leaves 20..25)"),
        "{}",
        run.stderr
    );
    let json: serde_json::Value = serde_json::from_str(&run.out()).unwrap();
    assert_eq!(json["appended_before"], 20);
    assert_eq!(json["first_index"], 100);
    assert_eq!(json["size"], 120);
    assert_eq!(json["duplicates"][0]["position"], 23);
    assert_eq!(json["duplicates"][0]["line"], serde_json::Value::Null);
    assert_eq!(json["duplicates"][0]["existing_index"], 40);
    let mut want = old.clone();
    want.extend_from_slice(&input[..20]);
    assert_eq!(
        json["root"],
        root_hex(3, HashKind::Keccak256, &want).as_str()
    );
    assert_eq!(
        cairn(&["root", &db]).success(),
        root_hex(3, HashKind::Keccak256, &want) + "\n"
    );
}

#[test]
fn skip_duplicates_appends_the_new_values_and_reports_the_skipped() {
    let dir = Dir::new();
    let db = empty(&dir, 2, HashKind::Poseidon);
    let old = leaves(10);
    ingest(&db, &old, &[]).success();
    let new = cairn_testkit::leaves(13, 2);
    let input = [old[3], new[0], new[0], new[1]];
    let json = ingest(&db, &input, &["--skip-duplicates", "--json"]).json();
    assert_eq!(json["first_index"], 10);
    assert_eq!(json["count"], 2);
    assert_eq!(json["size"], 12);
    assert_eq!(json["skipped_count"], 2);
    assert_eq!(
        json["skipped"],
        serde_json::json!([
            {"value": to_hex(&old[3]), "position": 0, "line": null, "existing_index": 3, "earlier_position": null},
            {"value": to_hex(&new[0]), "position": 2, "line": null, "existing_index": null, "earlier_position": 1},
        ])
    );
    let mut want = old.clone();
    want.extend_from_slice(&new);
    assert_eq!(
        json["root"],
        root_hex(2, HashKind::Poseidon, &want).as_str()
    );
    // Text: the skipped ones are listed too; all skipped appends nothing.
    let out = ingest(&db, &input, &["--skip-duplicates"]).success();
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            format!(
                "appended nothing: size 12, root {}",
                root_hex(2, HashKind::Poseidon, &want)
            ),
            format!(
                "skipped 4 duplicates: {} (input leaf 0) is already leaf 3; {} (input leaf 1) is already leaf 10; {} (input leaf 2) is already leaf 10; {} (input leaf 3) is already leaf 11",
                to_hex(&old[3]),
                to_hex(&new[0]),
                to_hex(&new[0]),
                to_hex(&new[1])
            ),
        ]
    );
}

#[test]
fn bad_input_is_exit_4_saying_where_and_what_was_appended_before() {
    let dir = Dir::new();
    let db = empty(&dir, 2, HashKind::Poseidon);
    let l = leaves(9);
    // A file whose length is wrong is refused before anything is appended.
    let mut odd = bin(&l);
    odd.extend_from_slice(&[1, 2, 3, 4]);
    let file = dir.file("odd.bin", &odd);
    cairn(&["ingest", &db, &file]).error(4, &[&file, "292 bytes", "4 bytes left over"]);
    cairn(&["ingest", &db, &dir.file("l.hex", hex(&l))]).error(4, &["--format hex"]);
    assert_eq!(size_of(&db), 0);
    // Through stdin the length is known at the end: earlier blocks stay.
    cairn_stdin(&["ingest", &db, "--block-size", "4", "-"], &odd).error(
        4,
        &[
            "<stdin>",
            "292 bytes",
            "8 leaves of earlier blocks were appended and are durable",
        ],
    );
    assert_eq!(size_of(&db), 8);

    let db = {
        let dir2 = dir.path("db2");
        init(&dir2, 2, HashKind::Poseidon, &[]);
        dir2
    };
    let mut text = hex(&l[..6]);
    text.push_str("0x1234\n");
    text.push_str(&hex(&l[6..]));
    let file = dir.file("bad.hex", &text);
    cairn(&["ingest", &db, "--format", "hex", "--block-size", "3", &file]).error(
        4,
        &[
            &file,
            "line 7",
            "hex digits",
            "6 leaves of earlier blocks were appended and are durable (indices 0..6",
        ],
    );
    assert_eq!(size_of(&db), 6);

    let mut refused = l.clone();
    refused[8] = [0xff; 32];
    cairn_stdin(
        &["ingest", &db, "--block-size", "2", "-"],
        &bin(&refused[6..]),
    )
    .error(
        4,
        &[
            "bytes 64..96",
            "position 2",
            "not a canonical BN254 field element",
        ],
    );
    let file = dir.file("refused.hex", hex(&refused[6..]));
    cairn(&["ingest", &db, "--format", "hex", &file]).error(
        4,
        &[
            "line 3",
            "not a canonical BN254 field element",
            "nothing was appended",
        ],
    );
    assert_eq!(size_of(&db), 8, "the block before the refused leaf is in");

    cairn(&["ingest", &db, "--block-size", "0", "-"]).error(2, &["block size"]);
    cairn(&["ingest", &db, "--block-size", "2^27", "-"]).error(2, &["2^26"]);
    cairn(&["ingest", &db, &dir.path("missing.bin")]).error(4, &["missing.bin", "cannot read"]);
    let good = dir.file("good.bin", bin(&l));
    cairn(&["ingest", &dir.path("nodb"), &good]).error(4, &["nodb does not exist"]);
}

#[test]
fn a_database_without_a_set_takes_repeats_and_refuses_skip_duplicates() {
    let dir = Dir::new();
    let db = dir.path("db");
    init(&db, 4, HashKind::Blake3, &["--no-unique"]);
    let l = leaves(5);
    let twice = [&l[..], &l[..]].concat();
    ingest(&db, &twice, &[]).success();
    assert_eq!(
        cairn(&["root", &db]).success(),
        root_hex(4, HashKind::Blake3, &twice) + "\n"
    );
    ingest(&db, &l, &["--skip-duplicates"]).error(2, &["--no-unique", "drop --skip-duplicates"]);
}

/// Bytes the first log file occupies on disk.
fn log_bytes(db: &str) -> u64 {
    std::fs::metadata(format!("{db}/log/000000000000.log"))
        .map(|m| m.blocks() * 512)
        .unwrap_or(0)
}

#[test]
fn a_large_ingest_killed_midway_completes_with_skip_duplicates() {
    // 2M leaves in blocks of 50,000: the kill lands after a few blocks are
    // durable, possibly in the middle of writing one.
    const LEAVES: usize = 2_000_000;
    const BLOCK: u64 = 50_000;
    let dir = Dir::new();
    let db = empty(&dir, 16, HashKind::Blake3);
    let all: Vec<Hash> = cairn_testkit::leaves(21, LEAVES);
    let file = dir.file("large.bin", bin(&all));
    let block = BLOCK.to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args(["ingest", &db, "--block-size", &block, &file])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn cairn ingest");
    // Wait (polling the log's allocated size, not sleeping a guessed time)
    // until three blocks have reached the log, then kill.
    let deadline = Instant::now() + Duration::from_secs(60);
    let target = 4096 + 32 * 3 * BLOCK;
    while log_bytes(&db) < target {
        assert!(Instant::now() < deadline, "ingest wrote nothing for 60 s");
        if let Some(status) = child.try_wait().expect("poll child") {
            panic!("ingest finished ({status}) before it could be killed");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    child.kill().expect("SIGKILL");
    let status = child.wait().expect("reap");
    assert!(!status.success(), "killed: {status}");

    // What survived is a prefix of whole blocks with the right root.
    let survived = size_of(&db);
    assert!(
        survived >= 2 * BLOCK,
        "at least the blocks before the last written one: {survived}"
    );
    assert!(survived < LEAVES as u64, "the kill came before the end");
    assert_eq!(
        survived % BLOCK,
        0,
        "each block is one all-or-nothing commit"
    );
    assert_eq!(
        cairn(&["root", &db]).success(),
        root_hex(16, HashKind::Blake3, &all[..survived as usize]) + "\n"
    );

    // Re-running with --skip-duplicates completes the data set.
    let json = cairn(&[
        "ingest",
        &db,
        "--block-size",
        "1M",
        "--skip-duplicates",
        "--json",
        &file,
    ])
    .json();
    assert_eq!(json["skipped_count"], survived);
    assert_eq!(json["count"], LEAVES as u64 - survived);
    assert_eq!(json["first_index"], survived);
    assert_eq!(json["size"], LEAVES as u64);
    assert_eq!(json["checkpointed"], true);
    assert_eq!(json["skipped"].as_array().unwrap().len(), 1000);
    let want = root_hex(16, HashKind::Blake3, &all);
    assert_eq!(json["root"], want.as_str());
    assert_eq!(cairn(&["root", &db]).success(), want + "\n");
    let check = cairn(&["check", "--json", &db]).json();
    assert_eq!(check["ok"], true);
    assert_eq!(check["size"], LEAVES as u64);
}

/// A bare `cairn ingest db` on a terminal once sat silent, looking hung: it
/// says it is waiting for input. Run under `script`, which gives the child a
/// terminal (util-linux; the test says so and passes where it is missing).
#[test]
fn ingest_from_a_terminal_says_it_is_waiting_for_input() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("no `script` command: cannot give cairn a terminal here");
        return;
    }
    let dir = Dir::new();
    let db = empty(&dir, 2, HashKind::Blake3);
    let command = format!("{} ingest {db} --format hex", env!("CARGO_BIN_EXE_cairn"));
    let mut child = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // One hex line, then Ctrl-D at the start of a line: end of input.
    let typed = format!("{}\n\u{4}", to_hex(&leaves(1)[0]));
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), typed.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    let shown = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{shown}");
    assert!(
        shown.contains("reading leaves from the terminal: one 0x-prefixed 64-digit hex leaf per line; end the input with Ctrl-D"),
        "{shown}"
    );
    assert!(shown.contains("appended 1 leaf"), "{shown}");
    // A pipe is not a terminal: no notice.
    let run = ingest(&db, &leaves(3)[1..], &[]);
    assert!(!run.stderr.contains("terminal"), "{run:?}");
}
