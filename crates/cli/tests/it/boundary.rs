//! The crate graph's boundary: the binaries (the CLI and the server) reach
//! storage only through the database facade, `cairn-db`. Neither depends
//! on the storage engine (`cairn-store`) except for tests (the server's use
//! its simulated file system), and neither's sources name it.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// The binaries and the crate they must not depend on outside tests.
const BINARIES: [&str; 2] = ["cairn-cli", "cairn-server"];
const ENGINE: &str = "cairn-store";

/// The dependencies of `BINARIES` on the engine in `cargo metadata`'s
/// output, as "package -> dependency (kind)" (dev-dependencies allowed).
fn forbidden(metadata: &Value) -> Vec<String> {
    let mut found = Vec::new();
    for package in metadata["packages"].as_array().expect("packages") {
        let name = package["name"].as_str().unwrap_or_default();
        if !BINARIES.contains(&name) {
            continue;
        }
        for dependency in package["dependencies"].as_array().expect("dependencies") {
            let kind = dependency["kind"].as_str().unwrap_or("normal");
            if dependency["name"] == ENGINE && kind != "dev" {
                found.push(format!("{name} -> {ENGINE} ({kind})"));
            }
        }
    }
    found
}

#[test]
fn the_cli_and_the_server_depend_on_the_database_not_the_storage_engine() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(&root)
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: Value = serde_json::from_slice(&output.stdout).expect("metadata JSON");
    let names: Vec<&str> = metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(
        BINARIES.iter().all(|b| names.contains(b)) && names.contains(&ENGINE),
        "{names:?}"
    );
    let found = forbidden(&metadata);
    assert!(found.is_empty(), "{found:?}");

    // Nor do their sources name the engine (a path dependency through
    // another crate would otherwise slip past the manifest check).
    for crate_dir in ["crates/cli/src", "crates/server/src"] {
        let mut stack = vec![root.join(crate_dir)];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    assert!(
                        !text.contains("cairn_store"),
                        "{} names cairn_store: go through cairn_db",
                        path.display()
                    );
                }
            }
        }
    }
}

#[test]
fn the_boundary_check_reports_a_normal_or_build_dependency() {
    let metadata = serde_json::json!({"packages": [
        {"name": "cairn-cli", "dependencies": [
            {"name": "cairn-db", "kind": null},
            {"name": "cairn-store", "kind": null},
        ]},
        {"name": "cairn-server", "dependencies": [
            {"name": "cairn-store", "kind": "dev"},
            {"name": "cairn-store", "kind": "build"},
        ]},
        {"name": "cairn-db", "dependencies": [{"name": "cairn-store", "kind": null}]},
    ]});
    assert_eq!(
        forbidden(&metadata),
        [
            "cairn-cli -> cairn-store (normal)",
            "cairn-server -> cairn-store (build)"
        ]
    );
}
