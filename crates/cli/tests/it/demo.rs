//! `cairn demo`: the README's main job, on a real database.

use std::time::{Duration, Instant};

use cairn_cli::commands::demo::{DEPOSITS, SECOND_BATCH, leaf};
use cairn_core::hex::to_hex;
use cairn_core::{Arity, HashKind, LeanImt, TreeConfig};

use crate::support::{Dir, cairn};

const STEPS: [&str; 16] = [
    "create",
    "generate",
    "ingest",
    "root",
    "checkpoint",
    "prove",
    "verify",
    "append",
    "consistency",
    "verify_consistency",
    "roll_forward",
    "duplicate",
    "close",
    "reopen",
    "lookup",
    "disk",
];

#[test]
fn the_default_demo_runs_in_seconds_on_a_temporary_directory_and_prints_its_table() {
    let started = Instant::now();
    let out = cairn(&["demo"]).success();
    let took = started.elapsed();
    // Poseidon at arity 2, the default (a LeanIMT, as Semaphore v4 uses): its roots are pinned,
    // since the leaves are deterministic (and the same as the tornado
    // example's); a change here changes what the README shows.
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with(
            "cairn demo: 278,827 leaves (the Tornado Cash mainnet deposit count) then 10,000 more, arity 2, poseidon, in "
        ),
        "{out}"
    );
    assert!(lines[0].ends_with("(removed at the end)"), "{out}");
    // Which Poseidon code path ran decides the times: the demo says.
    assert_eq!(
        lines[1],
        format!(
            "poseidon code path on this CPU: {}",
            HashKind::Poseidon.kernel_name()
        ),
        "{out}"
    );
    for label in [
        "create database",
        "ingest 278,827 leaves, durable",
        "hash the tree (depth 19)",
        "root 0x284647140d36833a8b180b4ce4b847e2f5043ca202aa9bde4818f6ed4fc41f58",
        "prove leaf 92,942",
        "verify membership",
        "append 10,000 more, durable",
        "prove consistency 278,827 -> 288,827",
        "refuse a duplicate",
        "reopen",
        "root matches at size 288,827",
        "final root 0x1e1af6a8b4703828ded1c2fcb1a7ef7d7fe87cd84d4a2a5188051f6a155282b4",
    ] {
        assert!(out.contains(label), "the demo lacks {label:?}:\n{out}");
    }
    let dir = lines[0]
        .split(" in ")
        .last()
        .and_then(|rest| rest.strip_suffix(" (removed at the end)"))
        .expect("the directory");
    assert!(
        !std::path::Path::new(dir).exists(),
        "the temporary database {dir} is removed"
    );
    // A guard against gross regressions (a reopen that rehashes
    // everything, a lost parallel build), not a benchmark: about 3 s in a
    // release build on an idle two-core machine, 5 to 11 s here under
    // concurrent builds.
    assert!(took < Duration::from_secs(60), "the demo took {took:?}");
}

#[test]
fn the_demo_in_a_given_directory_keeps_a_database_the_other_commands_read() {
    let dir = Dir::new();
    let db = dir.path("demo-db");
    let json = cairn(&["demo", &db, "--hash", "blake3", "--arity", "4", "--json"]).json();
    assert_eq!(json["leaves"], DEPOSITS);
    assert_eq!(json["second_batch"], SECOND_BATCH);
    assert_eq!(json["arity"], 4);
    assert_eq!(json["hash"], "blake3");
    assert_eq!(json["dir"], db.as_str());
    assert_eq!(json["kept"], true);
    let steps = json["steps"].as_array().expect("steps");
    let names: Vec<&str> = steps.iter().map(|s| s["step"].as_str().unwrap()).collect();
    assert_eq!(names, STEPS);
    for step in steps {
        for key in ["seconds", "bytes", "root", "figure"] {
            assert!(step.get(key).is_some(), "{step} lacks {key}");
        }
    }

    // The roots are the core's over the documented leaves.
    let config = TreeConfig::new(Arity::new(4).unwrap(), HashKind::Blake3);
    let all: Vec<_> = (0..DEPOSITS + SECOND_BATCH).map(leaf).collect();
    let mut old = LeanImt::from_leaves(config, &all[..DEPOSITS as usize]).unwrap();
    let mut new = LeanImt::from_leaves(config, &all).unwrap();
    let old_root = to_hex(&old.root().unwrap());
    let new_root = to_hex(&new.root().unwrap());
    assert_eq!(steps[3]["root"], old_root.as_str());
    assert_eq!(steps[7]["root"], new_root.as_str());
    assert_eq!(json["root"], new_root.as_str());
    assert!(steps[5]["bytes"].as_u64().unwrap() > 0, "proof bytes");
    assert!(
        steps[2]["bytes"].as_u64().unwrap() >= DEPOSITS * 32,
        "the log holds every leaf"
    );

    // The database stays, closed and whole.
    assert_eq!(cairn(&["root", &db]).success(), new_root + "\n");
    assert_eq!(
        cairn(&["contains", &db, &to_hex(&leaf(DEPOSITS / 3))]).success(),
        format!("{}\n", DEPOSITS / 3)
    );
    assert_eq!(cairn(&["check", "--json", &db]).json()["ok"], true);
    // A second demo there is refused: the directory is not empty.
    cairn(&["demo", &db, "--hash", "blake3"]).error(2, &["not empty"]);
}

#[test]
fn demo_leaves_are_the_documented_canonical_field_elements() {
    for i in [0, 1, DEPOSITS - 1, DEPOSITS + SECOND_BATCH] {
        let mut want = *blake3::hash(&i.to_be_bytes()).as_bytes();
        want[0] &= 0x1f;
        assert_eq!(
            leaf(i),
            want,
            "leaf {i} is BLAKE3(i, 8 bytes big-endian) below 2^253"
        );
        assert!(HashKind::Poseidon.accepts(&leaf(i)), "leaf {i}");
    }
}
