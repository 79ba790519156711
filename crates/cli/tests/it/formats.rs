//! Format snapshots: every on-disk format version cairn has written is
//! kept under `test-vectors/formats/store-N/` (directories as that build
//! left them, with the proofs it served), and this build must open each,
//! answer the same roots (read-only, then after a writer's open, which
//! migrates an older format), pass `cairn check`, and accept each proof
//! against the recorded heads and against the database. What a release
//! may change is in docs/compatibility.md; these tests hold it to that.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::cairn;

fn formats_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test-vectors/formats")
}

/// Every `store-N/manifest.json`, with the directory it is in.
fn manifests() -> Vec<(PathBuf, Value)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(formats_dir()).unwrap() {
        let dir = entry.unwrap().path();
        let manifest = dir.join("manifest.json");
        if manifest.exists() {
            let text = std::fs::read_to_string(&manifest).unwrap();
            found.push((dir, serde_json::from_str(&text).unwrap()));
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

/// The `--arity --hash [--kind ..]` options naming `database`'s tree.
fn tree_args(database: &Value) -> Vec<String> {
    let mut args = vec![
        "--arity".to_owned(),
        database["arity"].to_string(),
        "--hash".to_owned(),
        database["hash"].as_str().unwrap().to_owned(),
    ];
    match database["kind"].as_str().unwrap() {
        "lean" => {}
        "imt" => args.extend([
            "--kind".to_owned(),
            "imt".to_owned(),
            "--depth".to_owned(),
            database["depth"].to_string(),
            "--zero".to_owned(),
            database["zero"].as_str().unwrap().to_owned(),
        ]),
        kind => args.extend(["--kind".to_owned(), kind.to_owned()]),
    }
    args
}

fn run(args: &[String]) -> String {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    cairn(&args).success()
}

#[test]
fn every_format_version_this_build_wrote_or_read_has_a_snapshot() {
    let versions: Vec<u64> = manifests()
        .iter()
        .map(|(_, manifest)| manifest["format"].as_u64().unwrap())
        .collect();
    let current = u64::from(cairn_db::STORE_FORMAT);
    let want: Vec<u64> = (1..=current).collect();
    assert_eq!(
        versions, want,
        "one snapshot per format version up to the one this build writes: add test-vectors/formats/store-{current} (cargo run -p cairn-db --example format_fixtures)"
    );
}

#[test]
fn snapshots_of_every_format_open_with_the_same_roots_and_pass_check() {
    for (dir, manifest) in manifests() {
        for database in manifest["databases"].as_array().unwrap() {
            let source = dir.join(database["dir"].as_str().unwrap());
            let temp = tempfile::tempdir().unwrap();
            let copy = temp.path().join("db");
            crate::repair::copy_dir(&source, &copy);
            let copy = copy.to_str().unwrap().to_owned();
            let root = database["root"].as_str().unwrap();
            let size = database["size"].to_string();
            let what = format!("{}: {}", dir.display(), database["dir"]);
            // Read-only: nothing is migrated or rewritten.
            assert_eq!(run(&["root".into(), copy.clone()]).trim(), root, "{what}");
            let stats: Value =
                serde_json::from_str(&run(&["stats".into(), copy.clone(), "--json".into()]))
                    .unwrap();
            assert_eq!(stats["size"].to_string(), size, "{what}");
            assert_eq!(stats["root"], root, "{what}");
            run(&["check".into(), copy.clone()]);
            // A writer's open (and checkpoint) migrates an older format;
            // the tree is the same.
            run(&["checkpoint".into(), copy.clone()]);
            assert_eq!(run(&["root".into(), copy.clone()]).trim(), root, "{what}");
            run(&["check".into(), copy.clone()]);
        }
    }
}

#[test]
fn proofs_served_by_every_format_still_verify() {
    let mut checked = 0;
    for (dir, manifest) in manifests() {
        let databases = manifest["databases"].as_array().unwrap();
        for proof in manifest["proofs"].as_array().unwrap() {
            let file = dir.join("proofs").join(proof["file"].as_str().unwrap());
            let file = file.to_str().unwrap().to_owned();
            let database = databases
                .iter()
                .find(|d| d["dir"] == proof["dir"])
                .unwrap_or_else(|| panic!("{proof}: no database {}", proof["dir"]));
            let db = dir.join(database["dir"].as_str().unwrap());
            let db = db.to_str().unwrap().to_owned();
            let heads = proof["heads"].as_array().unwrap();
            let head = |i: usize| {
                (
                    heads[i]["size"].to_string(),
                    heads[i]["root"].as_str().unwrap().to_owned(),
                )
            };
            let mut args = match proof["proves"].as_str().unwrap() {
                "consistency" => {
                    let ((old_size, old_root), (new_size, new_root)) = (head(0), head(1));
                    vec![
                        "verify-consistency".to_owned(),
                        file.clone(),
                        "--old-size".into(),
                        old_size,
                        "--old-root".into(),
                        old_root,
                        "--new-size".into(),
                        new_size,
                        "--new-root".into(),
                        new_root,
                    ]
                }
                _ => {
                    let (size, root) = head(0);
                    vec![
                        "verify".to_owned(),
                        file.clone(),
                        "--size".into(),
                        size,
                        "--root".into(),
                        root,
                    ]
                }
            };
            let against_db = vec![args[0].clone(), file.clone(), "--db".into(), db];
            args.extend(tree_args(database));
            let out = run(&args);
            assert!(out.starts_with("valid: "), "{file}: {out}");
            // The committed directory is only read (verify --db opens
            // read-only).
            let out = run(&against_db);
            assert!(out.starts_with("valid: "), "{file}: {out}");
            checked += 1;
        }
    }
    assert!(checked >= 11, "{checked} proofs checked");
}
