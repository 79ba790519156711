//! Mutable trees from the command line: `init --mutable`, `update` and
//! `remove` printing the old leaf's proof, the refusals, the
//! `--readmit-removed` policy and a rollback by block across changes.

use cairn_core::hex::to_hex;
use cairn_core::{Hash, HashKind};

use crate::support::{Dir, Run, cairn, ingest, init, leaves, root_hex};

/// Asserts a change succeeded: its old leaf's proof (JSON) on stdout and one
/// line naming the new head on stderr, starting with `what`.
#[track_caller]
fn changed(run: &Run, what: &str) -> serde_json::Value {
    assert_eq!(run.code, 0, "cairn {:?} failed: {}", run.args, run.stderr);
    assert!(
        run.stderr.starts_with(what) && run.stderr.matches('\n').count() == 1,
        "cairn {:?}: stderr {:?} is not one line starting with {what:?}",
        run.args,
        run.stderr
    );
    serde_json::from_str(&run.out()).expect("the old leaf's proof is JSON")
}

fn db_root(db: &str) -> String {
    cairn(&["root", db, "--json"]).json()["root"]
        .as_str()
        .expect("a root")
        .to_owned()
}

#[test]
fn update_and_remove_print_the_old_leafs_proof_and_match_a_reference_tree() {
    let dir = Dir::new();
    let db = dir.path("db");
    init(&db, 2, HashKind::Blake3, &["--mutable"]);
    let mut l = leaves(10);
    ingest(&db, &l, &[]).success();
    let before = db_root(&db);
    let new: Hash = [0xab; 32];
    let proof = changed(
        &cairn(&["update", &db, "3", &to_hex(&new)]),
        "updated leaf 3",
    );
    assert_eq!(proof["index"], 3);
    assert_eq!(proof["leaf"], to_hex(&l[3]).as_str());
    // The old leaf's proof verifies against the root before the change.
    let file = dir.file("old.json", proof.to_string());
    cairn(&[
        "verify", "--arity", "2", "--hash", "blake3", "--root", &before, "--size", "10", &file,
    ])
    .success();
    l[3] = new;
    assert_eq!(db_root(&db), root_hex(2, HashKind::Blake3, &l));
    // A proof of the new leaf from the database verifies against the new root.
    let now = db_root(&db);
    let file = dir.file("new.json", cairn(&["prove", &db, "--index", "3"]).success());
    cairn(&[
        "verify", "--arity", "2", "--hash", "blake3", "--root", &now, "--size", "10", &file,
    ])
    .success();
    // Removal: the leaf becomes the zero leaf, as in a reference tree.
    let proof = changed(&cairn(&["remove", &db, "7"]), "removed leaf 7");
    assert_eq!(proof["leaf"], to_hex(&l[7]).as_str());
    l[7] = [0; 32];
    assert_eq!(db_root(&db), root_hex(2, HashKind::Blake3, &l));
}

#[test]
fn refusals_name_the_cause_and_change_nothing() {
    let dir = Dir::new();
    let plain = dir.path("plain");
    init(&plain, 2, HashKind::Blake3, &[]);
    let l = leaves(4);
    ingest(&plain, &l, &[]).success();
    let root = db_root(&plain);
    cairn(&["update", &plain, "1", &to_hex(&[9; 32])]).error(2, &["append-only", "--mutable"]);
    cairn(&["remove", &plain, "1"]).error(2, &["append-only"]);
    assert_eq!(db_root(&plain), root);

    let db = dir.path("db");
    init(&db, 2, HashKind::Blake3, &["--mutable"]);
    ingest(&db, &l, &[]).success();
    changed(&cairn(&["remove", &db, "0"]), "removed leaf 0");
    let root = db_root(&db);
    cairn(&["update", &db, "9", &to_hex(&[9; 32])]).error(2, &["index 9", "out of range"]);
    cairn(&["update", &db, "1", &to_hex(&l[2])]).error(3, &["duplicate", "already leaf 2"]);
    // A removed value stays out; a removed leaf cannot change again.
    cairn(&["update", &db, "1", &to_hex(&l[0])]).error(3, &["was removed", "--readmit-removed"]);
    cairn(&["update", &db, "0", &to_hex(&[9; 32])]).error(1, &["leaf 0 was removed"]);
    cairn(&["remove", &db, "0"]).error(1, &["leaf 0 was removed"]);
    assert_eq!(db_root(&db), root);
}

#[test]
fn a_tree_created_with_readmit_removed_takes_a_removed_value_back() {
    let dir = Dir::new();
    let db = dir.path("db");
    init(
        &db,
        2,
        HashKind::Blake3,
        &["--mutable", "--readmit-removed"],
    );
    let mut l = leaves(4);
    ingest(&db, &l, &[]).success();
    changed(&cairn(&["remove", &db, "0"]), "removed leaf 0");
    let back = l[0];
    changed(
        &cairn(&["update", &db, "2", &to_hex(&back)]),
        "updated leaf 2",
    );
    l[0] = [0; 32];
    l[2] = back;
    assert_eq!(db_root(&db), root_hex(2, HashKind::Blake3, &l));
}

#[test]
fn a_rollback_by_block_undoes_the_changes_after_it() {
    let dir = Dir::new();
    let db = dir.path("db");
    init(&db, 2, HashKind::Blake3, &["--mutable"]);
    let l = leaves(12);
    ingest(&db, &l[..8], &["--block", "10"]).success();
    let at10 = db_root(&db);
    changed(
        &cairn(&["update", &db, "2", &to_hex(&[0xcd; 32])]),
        "updated leaf 2",
    );
    changed(&cairn(&["remove", &db, "5"]), "removed leaf 5");
    ingest(&db, &l[8..], &["--block", "11"]).success();
    let mut want = l.clone();
    want[2] = [0xcd; 32];
    want[5] = [0; 32];
    assert_eq!(db_root(&db), root_hex(2, HashKind::Blake3, &want));
    cairn(&["truncate", &db, "--to-block", "10", "--json"]).json();
    assert_eq!(db_root(&db), at10);
    // The removed leaf holds its value again.
    let proof: serde_json::Value =
        serde_json::from_str(&cairn(&["prove", &db, "--index", "5"]).success()).expect("JSON");
    assert_eq!(proof["leaf"], to_hex(&l[5]).as_str());
}
