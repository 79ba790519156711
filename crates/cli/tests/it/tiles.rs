//! `cairn publish` and `cairn prove --tiles`: proofs from published tiles
//! verify against the database's head; a damaged tile and a forked tree
//! are refused with their exit codes.

use cairn_core::HashKind;

use crate::support::{Dir, cairn, ingest, init, leaves, root_hex};

#[test]
fn proofs_from_published_tiles_verify_and_damage_is_refused() {
    let dir = Dir::new();
    let db = dir.path("db");
    let public = dir.path("public");
    init(&db, 4, HashKind::Blake3, &["--finality", "explicit"]);
    let l = leaves(3_000);
    ingest(&db, &l[..2_000], &[]).success();
    let json = cairn(&[
        "publish",
        &db,
        "--to",
        &format!("file://{public}"),
        "--json",
    ])
    .json();
    assert_eq!(json["size"].as_u64(), Some(2_000));
    let root = root_hex(4, HashKind::Blake3, &l[..2_000]);
    assert_eq!(json["root"], root.as_str());
    for index in ["0", "1023", "1999"] {
        let proof = cairn(&["prove", "--tiles", &public, "--index", index]).success();
        let file = dir.file("proof.json", proof);
        cairn(&[
            "verify", "--arity", "4", "--hash", "blake3", "--root", &root, "--size", "2000", &file,
        ])
        .success();
    }
    cairn(&["prove", "--tiles", &public, "--index", "2000"]).error(2, &["out of range"]);
    // A copy of the database as published so far.
    let older = dir.path("older");
    cairn(&["backup", &db, &older]).success();
    // Publishing again after more leaves writes only what changed.
    ingest(&db, &l[2_000..], &[]).success();
    let again = cairn(&["publish", &db, "--to", &public, "--json"]).json();
    assert!(again["objects"].as_u64().unwrap() < json["objects"].as_u64().unwrap());
    assert_eq!(again["signed_by"], serde_json::Value::Null);
    // A damaged tile is refused by name.
    let tile = format!("{public}/tile/0/001");
    let mut bytes = std::fs::read(&tile).unwrap();
    bytes[0] ^= 1;
    std::fs::write(&tile, bytes).unwrap();
    cairn(&["prove", "--tiles", &public, "--index", "300"])
        .error(4, &["tile/0/001", "do not match"]);
    // What was published is final: no rollback contradicts the store.
    cairn(&["truncate", &db, "--to", "2500"])
        .error(2, &["the first 3000 are final", "publishing them as tiles"]);
    cairn(&["truncate", &db, "--to", "3000"]).success();
    // A tree behind what was published (an older copy) cannot publish there.
    cairn(&["publish", &older, "--to", &public])
        .error(2, &["rolled back below what was published"]);
    // --finalized publishes only what can never be rolled back.
    let chain = dir.path("chain");
    init(&chain, 4, HashKind::Blake3, &["--finality", "explicit"]);
    ingest(&chain, &l, &[]).success();
    cairn(&["finalize", &chain, "--to", "1000"]).success();
    let fin = cairn(&[
        "publish",
        &chain,
        "--to",
        &dir.path("final"),
        "--finalized",
        "--json",
    ])
    .json();
    assert_eq!(fin["size"].as_u64(), Some(1_000));
    assert_eq!(
        fin["root"],
        root_hex(4, HashKind::Blake3, &l[..1_000]).as_str()
    );
    // Above the published size, the chain can still be rolled back.
    cairn(&["truncate", &chain, "--to", "1000"]).success();
    cairn(&["publish", &db, "--to", "gs://bucket/prefix"]).error(2, &["gs:// is not supported"]);
    cairn(&["publish", &db, "--to", "https://example.org/x"]).error(2, &["read-only"]);
}

/// A mirror reading bundles over HTTP, killed (SIGKILL) several times at
/// seeded points of its runs (`CAIRN_KILL_SEED` repeats a failing run),
/// holds a verified prefix of the published tree (or nothing) after each
/// kill, never asks again for a bundle it had adopted, and ends with the
/// source's root. A store serving a corrupt bundle is refused by name with
/// the bundles before it adopted and nothing of it.
#[test]
fn a_mirror_killed_while_reading_bundles_resumes_from_what_it_adopted() {
    let dir = Dir::new();
    let db = dir.path("db");
    let public = dir.path("public");
    init(&db, 2, HashKind::Blake3, &[]);
    let l = leaves(4 * 65_536 + 300);
    ingest(&db, &l, &[]).success();
    cairn(&["publish", &db, "--to", &public]).success();
    assert!(std::path::Path::new(&format!("{public}/bundle/003")).exists());
    let server = cairn_testkit::http::StaticServer::start(&public);
    let seed = std::env::var("CAIRN_KILL_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos() as u64
        });
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let replica = dir.path("replica");
    let bundle_of = |path: &str| path.strip_prefix("bundle/")?.parse::<u64>().ok();
    let mut held = 0u64;
    for kill in 0..4 {
        let delay_ms = 30 + next() % 400;
        let context = format!("CAIRN_KILL_SEED={seed}, kill {kill} after {delay_ms} ms");
        let asked_before = server.paths().len();
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_cairn"))
            .args([
                "mirror",
                "--from",
                &server.url(),
                &replica,
                "--in-flight",
                "2",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        child.kill().expect("SIGKILL");
        child.wait().unwrap();
        // What this run asked for: no bundle the mirror held before it.
        for path in &server.paths()[asked_before..] {
            if let Some(k) = bundle_of(path) {
                assert!(
                    (k + 1) * 65_536 > held,
                    "{context}: {path} refetched at {held} leaves"
                );
            }
        }
        if cairn_db::is_database(std::path::Path::new(&replica)) {
            let json = cairn(&["root", &replica, "--json"]).json();
            let size = json["size"].as_u64().unwrap();
            assert!(
                size >= held,
                "{context}: {size} leaves after holding {held}"
            );
            held = size;
            if held > 0 {
                assert_eq!(
                    json["root"],
                    root_hex(2, HashKind::Blake3, &l[..held as usize]).as_str(),
                    "{context}: at {held} leaves"
                );
            }
        } else {
            assert_eq!(held, 0, "{context}: the database is gone");
            let _ = std::fs::remove_dir_all(&replica);
        }
    }
    let asked_before = server.paths().len();
    let json = cairn(&["mirror", "--from", &server.url(), &replica, "--json"]).json();
    let context = format!("CAIRN_KILL_SEED={seed}, resumed at {held} leaves");
    assert_eq!(
        json["adopted"].as_u64(),
        Some(l.len() as u64 - held),
        "{context}"
    );
    assert_eq!(
        json["root"],
        root_hex(2, HashKind::Blake3, &l).as_str(),
        "{context}"
    );
    for path in &server.paths()[asked_before..] {
        if let Some(k) = bundle_of(path) {
            assert!((k + 1) * 65_536 > held, "{context}: {path} refetched");
        }
    }

    // A corrupt bundle part way: the two before it adopted, nothing of it.
    // Its leaves were staged in the mirror's tree and rolled back: out of
    // the tree, the nullifier set and the files, so the repaired bundle is
    // adopted afterwards.
    let bundle = format!("{public}/bundle/002");
    let good = std::fs::read(&bundle).unwrap();
    let mut bytes = good.clone();
    bytes[7 * 32 + 3] ^= 1;
    std::fs::write(&bundle, bytes).unwrap();
    let other = dir.path("other");
    cairn(&["mirror", "--from", &server.url(), &other]).error(1, &["bundle/002"]);
    let json = cairn(&["root", &other, "--json"]).json();
    assert_eq!(json["size"].as_u64(), Some(2 * 65_536));
    assert_eq!(
        json["root"],
        root_hex(2, HashKind::Blake3, &l[..2 * 65_536]).as_str()
    );
    cairn(&["check", &other]).success();
    // Killed at any moment while the corrupt bundle is fetched, staged and
    // rolled back: it holds a verified prefix, never a leaf of bundle 2.
    let third = dir.path("third");
    for kill in 0..3 {
        let delay_ms = 20 + next() % 300;
        let context =
            format!("CAIRN_KILL_SEED={seed}, corrupt store, kill {kill} after {delay_ms} ms");
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_cairn"))
            .args(["mirror", "--from", &server.url(), &third])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        child.kill().expect("SIGKILL");
        child.wait().unwrap();
        if cairn_db::is_database(std::path::Path::new(&third)) {
            let json = cairn(&["root", &third, "--json"]).json();
            let size = json["size"].as_u64().unwrap();
            assert!(size <= 2 * 65_536, "{context}: {size} leaves");
            if size > 0 {
                assert_eq!(
                    json["root"],
                    root_hex(2, HashKind::Blake3, &l[..size as usize]).as_str(),
                    "{context}"
                );
            }
        } else {
            let _ = std::fs::remove_dir_all(&third);
        }
    }
    std::fs::write(&bundle, good).unwrap();
    let json = cairn(&["mirror", "--from", &server.url(), &other, "--json"]).json();
    assert_eq!(json["adopted"].as_u64(), Some(l.len() as u64 - 2 * 65_536));
    assert_eq!(json["root"], root_hex(2, HashKind::Blake3, &l).as_str());
}
