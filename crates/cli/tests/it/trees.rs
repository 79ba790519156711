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

/// Every file under `dir` with its bytes.
fn contents(dir: &std::path::Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut all = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            } else {
                let name = entry
                    .path()
                    .strip_prefix(dir)
                    .unwrap()
                    .display()
                    .to_string();
                all.insert(name, std::fs::read(entry.path()).unwrap());
            }
        }
    }
    all
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn read_only_commands_answer_as_the_journal_after_a_crash_before_the_trees_caught_up() {
    use cairn_core::{Arity, TreeConfig};
    use cairn_db::{BlockId, DbConfig, Forest};
    let dir = Dir::new();
    let db = dir.path("db");
    let path = std::path::Path::new(&db);
    let all = leaves(30);
    let (notes, nulls) = (&all[..18], &all[18..]);
    let block = |n: u64| BlockId {
        number: n,
        hash: [n as u8; 32],
    };
    let forest = Forest::create(path).unwrap();
    let lean = TreeConfig::new(Arity::new(2).unwrap(), HashKind::Blake3);
    forest.add_tree("notes", DbConfig::new(lean)).unwrap();
    forest
        .add_tree(
            "nulls",
            DbConfig::new(lean.with_kind(cairn_core::TreeKind::Indexed)),
        )
        .unwrap();
    let commit = |forest: &Forest, n: u64| {
        let (a, b) = (n as usize * 6 - 6, n as usize * 4 - 4);
        forest
            .commit_block(
                block(n),
                &[("notes", &notes[a..a + 6]), ("nulls", &nulls[b..b + 4])],
            )
            .unwrap();
    };
    commit(&forest, 1);
    forest.close().unwrap();
    let saved = std::path::Path::new(&dir.path("saved")).to_owned();
    copy_dir(&path.join(cairn_db::TREES_DIR), &saved);
    let forest = Forest::open(path).unwrap();
    commit(&forest, 2);
    commit(&forest, 3);
    let journal = std::fs::read(path.join(cairn_db::JOURNAL)).unwrap();
    forest.close().unwrap();
    // The state a crash leaves after block 3's journal frame, before
    // either tree's log caught up with blocks 2 and 3.
    std::fs::remove_dir_all(path.join(cairn_db::TREES_DIR)).unwrap();
    copy_dir(&saved, &path.join(cairn_db::TREES_DIR));
    std::fs::write(path.join(cairn_db::JOURNAL), journal).unwrap();
    let before = contents(path);

    let trees = cairn(&["trees", &db, "--json"]).json();
    let sizes: Vec<u64> = trees["trees"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["size"].as_u64().unwrap())
        .collect();
    assert_eq!(sizes, [18, 13], "{trees}");
    let root = cairn(&["root", &db, "--tree", "notes"]).success();
    assert_eq!(root.trim(), root_hex(2, HashKind::Blake3, notes));
    let found = cairn(&[
        "contains",
        &db,
        "--tree",
        "notes",
        &cairn_core::hex::to_hex(&notes[15]),
        "--json",
    ])
    .json();
    assert_eq!(found["index"], 15, "{found}");
    let proof: serde_json::Value =
        serde_json::from_str(&cairn(&["prove", &db, "--tree", "notes", "--index", "16"]).success())
            .unwrap();
    assert_eq!(proof["size"], 18, "{proof}");
    let exported = cairn(&["export", &db, "--tree", "nulls", "--format", "hex"]).success();
    assert_eq!(exported.lines().count(), 12, "the values of three blocks");
    assert!(contents(path) == before, "read-only commands write nothing");
    // A writer's open replays the same.
    let heads = cairn(&["heads", &db, "--json"]).success();
    assert!(heads.contains("\"block\":3"), "{heads}");
    let root = cairn(&["root", &db, "--tree", "notes"]).success();
    assert_eq!(root.trim(), root_hex(2, HashKind::Blake3, notes));
}

#[test]
fn tree_add_takes_the_whole_batch_rollover_and_a_block_that_does_not_fit_starts_a_member() {
    let dir = Dir::new();
    let db = dir.path("db");
    cairn(&["init", &db]).success();
    let added = cairn(&[
        "tree",
        "add",
        &db,
        "rg",
        "--arity",
        "2",
        "--hash",
        "blake3",
        "--capacity",
        "4",
        "--json",
        "--rollover",
        "whole-batch",
    ])
    .json();
    assert_eq!(added["rollover"], true, "{added}");
    assert_eq!(added["rule"], "whole-batch", "{added}");
    // --rollover alone is the split rule, as before.
    let split = cairn(&[
        "tree",
        "add",
        &db,
        "sp",
        "--arity",
        "2",
        "--hash",
        "blake3",
        "--capacity",
        "4",
        "--rollover",
    ])
    .success();
    assert!(split.contains("capacity 4 then sp/1, sp/2, ..."), "{split}");
    assert!(!split.contains("whole"), "{split}");
    cairn(&[
        "tree",
        "add",
        &db,
        "bad",
        "--arity",
        "2",
        "--hash",
        "blake3",
        "--capacity",
        "4",
        "--rollover",
        "halves",
    ])
    .error(2, &["invalid value 'halves'", "split, whole-batch"]);
    let all = leaves(9);
    ingest(&db, &all[..3], &["--tree", "rg", "--block", "1"]).success();
    ingest(&db, &all[3..5], &["--tree", "sp", "--block", "2"]).success();
    // 2 values, 1 of room: both go to rg/1 and rg keeps 3.
    ingest(&db, &all[5..7], &["--tree", "rg", "--block", "3"]).success();
    let trees = cairn(&["trees", &db, "--json"]).json();
    let sizes: Vec<(String, u64)> = trees["trees"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_owned(),
                t["size"].as_u64().unwrap(),
            )
        })
        .collect();
    let want: Vec<(String, u64)> = [("rg", 3), ("sp", 2), ("rg/1", 2)]
        .iter()
        .map(|(n, s)| (n.to_string(), *s))
        .collect();
    assert_eq!(sizes, want);
    let root = cairn(&["root", &db, "--tree", "rg/1"]).success();
    assert_eq!(root.trim(), root_hex(2, HashKind::Blake3, &all[5..7]));
    let found = cairn(&[
        "contains",
        &db,
        "--tree",
        "rg",
        crate::support::hex(&all[6..7]).trim(),
    ])
    .success();
    assert!(found.contains("1 1"), "{found}");
}
