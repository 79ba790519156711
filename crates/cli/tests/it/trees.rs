//! `--tree NAME` on the commands that read or write one tree of a
//! database of several: consistency, check and checkpoint.

use cairn_core::HashKind;

use crate::support::{Dir, cairn, ingest, leaves, root_hex};

#[test]
fn consistency_check_and_checkpoint_take_the_tree_they_act_on() {
    let dir = Dir::new();
    let db = dir.path("db");
    cairn(&["init", &db]).success();
    cairn(&[
        "tree", "add", &db, "notes", "--arity", "2", "--hash", "blake3",
    ])
    .success();
    cairn(&[
        "tree", "add", &db, "nulls", "--arity", "4", "--hash", "blake3",
    ])
    .success();
    let notes = leaves(9);
    let nulls = &leaves(20)[9..];
    ingest(&db, &notes, &["--tree", "notes"]).success();
    ingest(&db, nulls, &["--tree", "nulls"]).success();
    // consistency: the proof from 4 to 9 of the tree named.
    let parse = |out: String| -> serde_json::Value { serde_json::from_str(&out).unwrap() };
    let proof = parse(cairn(&["consistency", &db, "--tree", "notes", "--from", "4"]).success());
    assert_eq!(proof["old_size"], 4, "{proof}");
    assert_eq!(proof["new_size"], 9, "{proof}");
    let proof = parse(cairn(&["consistency", &db, "--tree", "nulls", "--from", "4"]).success());
    assert_eq!(proof["new_size"], 11, "{proof}");
    // Several trees and none named default: a tree must be named.
    cairn(&["consistency", &db, "--from", "1"])
        .error(2, &["no tree named \"default\"", "notes, nulls"]);
    cairn(&["consistency", &db, "--tree", "ghost", "--from", "1"]).error(2, &["ghost"]);
    // check: the tree named, verified.
    let checked = cairn(&["check", &db, "--tree", "nulls", "--json"]).json();
    assert_eq!(checked["size"], 11, "{checked}");
    cairn(&["check", &db, "--tree", "ghost"]).error(2, &["ghost", "notes, nulls"]);
    // checkpoint: every tree checkpointed, the one named reported.
    let written = cairn(&["checkpoint", &db, "--tree", "notes", "--json"]).json();
    assert_eq!(written["size"], 9, "{written}");
    let again = cairn(&["checkpoint", &db, "--tree", "nulls", "--json"]).json();
    assert_eq!(again["size"], 11, "{again}");
    assert_eq!(again["written"], false, "{again}");
    // The trees are whole afterwards.
    let root = cairn(&["root", &db, "--tree", "notes"]).success();
    assert_eq!(root.trim(), root_hex(2, HashKind::Blake3, &notes));
}
