//! The README's "CLI JSON fields" table against the commands: every row's
//! top-level fields, in order, are the keys of the object the command
//! prints with `--json` (its first form, before "; or", for the rows that
//! list a failure form too), and every row is checked or named here as
//! left out.

use std::path::Path;

use crate::support::{Dir, bin, cairn, cairn_stdin, leaves};

/// Rows not run here, and why.
const LEFT_OUT: &[(&str, &str)] = &[
    ("`plan`", "its fields are listed in `cairn plan --help`"),
    (
        "`follow`",
        "it needs a JSON-RPC node: clients/evm's follow tests read its JSON lines from a Hardhat node",
    ),
];

fn readme() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    std::fs::read_to_string(path).expect("README.md")
}

/// The table's rows: (the command cell, the fields cell).
fn rows(text: &str) -> Vec<(String, String)> {
    let section = text
        .split("\n## CLI JSON fields\n")
        .nth(1)
        .expect("the README has a CLI JSON fields section");
    let section = section.split("\n## ").next().unwrap_or(section);
    section
        .lines()
        .filter(|line| line.starts_with("| ") && !line.starts_with("| command |"))
        .map(|line| {
            let cells: Vec<&str> = line
                .trim_start_matches("| ")
                .trim_end_matches(" |")
                .splitn(2, " | ")
                .collect();
            assert_eq!(cells.len(), 2, "a row of two cells: {line}");
            (cells[0].to_owned(), cells[1].to_owned())
        })
        .collect()
}

/// The top-level field names of a fields cell: the backticked identifiers
/// outside parentheses (which describe a field's values or nested fields),
/// of the first form only.
fn fields(cell: &str) -> Vec<String> {
    let first = cell.split("; or ").next().unwrap_or(cell);
    let first = first.split(". Indexed proofs:").next().unwrap_or(first);
    let mut top = String::new();
    let mut depth = 0usize;
    for c in first.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.checked_sub(1).expect("balanced parentheses"),
            _ if depth == 0 => top.push(c),
            _ => {}
        }
    }
    top.split('`')
        .skip(1)
        .step_by(2)
        .filter(|name| !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .map(str::to_owned)
        .collect()
}

/// The keys of the JSON object `text`, in the order they are written.
fn keys(text: &str) -> Vec<String> {
    let value: serde_json::Value = serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("not one JSON value ({e}): {text}"));
    assert!(value.is_object(), "not an object: {text}");
    let mut keys = Vec::new();
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    let mut current = String::new();
    let mut chars = text.trim().chars().peekable();
    while let Some(c) = chars.next() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
                if depth == 1 && chars.peek() == Some(&':') {
                    keys.push(std::mem::take(&mut current));
                }
                current.clear();
                continue;
            }
            current.push(c);
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '[' => depth += 1,
            '}' | ']' => depth -= 1,
            _ => {}
        }
    }
    keys
}

/// The text of the first object in the array `field` of the JSON object
/// `text`, as printed (a parsed value would lose the field order).
fn first_element(text: &str, field: &str) -> String {
    let start = text
        .find(&format!("\"{field}\":[{{"))
        .unwrap_or_else(|| panic!("no {field} array of objects: {text}"))
        + field.len()
        + 4;
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (offset, c) in text[start..].char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            '{' if !in_string => depth += 1,
            '}' if !in_string => {
                depth -= 1;
                if depth == 0 {
                    return text[start..=start + offset].to_owned();
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced {field}: {text}")
}

#[test]
fn field_parsing_keeps_top_level_names_of_the_first_form() {
    assert_eq!(
        fields("`valid` (true), `leaf`, `set` (null, else `values`); or `valid` (false), `reason`"),
        ["valid", "leaf", "set"]
    );
    assert_eq!(
        fields("`kind` (`\"lean\"` or `\"imt\"`), `zero`"),
        ["kind", "zero"]
    );
    assert_eq!(
        keys(r#"{"a":1,"b":{"c":[{"d":"x\"y:"}]},"e":"f"}"#),
        ["a", "b", "e"]
    );
    assert_eq!(
        first_element(r#"{"n":2,"list":[{"z":"}","a":{"b":1}},{"c":3}]}"#, "list"),
        r#"{"z":"}","a":{"b":1}}"#
    );
}

#[test]
fn readme_json_field_table_matches_every_command() {
    let dir = Dir::new();
    let db = dir.path("db");
    let values = leaves(20);
    let file = dir.file("leaves.bin", bin(&values));
    let duplicate = dir.file("again.bin", bin(&values[..2]));
    let hex = |i: usize| cairn_core::hex::to_hex(&values[i]);
    let key_file = dir.path("k.key");
    let run = |args: &[&str]| cairn(args).success();

    let mut printed: Vec<(&str, String)> = vec![
        (
            "`init`",
            // Explicit finality: truncate may remove leaves a checkpoint covers.
            run(&[
                "init",
                &db,
                "--arity",
                "4",
                "--hash",
                "blake3",
                "--finality",
                "explicit",
                "--json",
            ]),
        ),
        ("`ingest`", run(&["ingest", &db, &file, "--json"])),
    ];
    let refused = cairn(&["ingest", &db, &duplicate, "--json"]);
    assert_eq!(refused.code, 3, "duplicates: {}", refused.stderr);
    let refused = refused.out();
    let first_duplicate = first_element(&refused, "duplicates");
    printed.push(("`ingest`, exit 3", refused));
    printed.push(("*duplicate*", first_duplicate));
    let proof = dir.file("proof.json", run(&["prove", &db, "--index", "3"]));
    let link = dir.file(
        "consistency.json",
        run(&["consistency", &db, "--from", "5"]),
    );
    printed.extend([
        ("`root`", run(&["root", &db, "--json"])),
        ("`stats`", run(&["stats", &db, "--json"])),
        ("`verify`", run(&["verify", "--db", &db, "--json", &proof])),
        (
            "`verify-consistency`",
            run(&["verify-consistency", "--db", &db, "--json", &link]),
        ),
        ("`contains`", run(&["contains", &db, &hex(3), "--json"])),
        (
            "`truncate`",
            run(&["truncate", &db, "--to", "15", "--json"]),
        ),
        ("`checkpoint`", run(&["checkpoint", &db, "--json"])),
        (
            "`finalize`",
            run(&["finalize", &db, "--to", "10", "--json"]),
        ),
        ("`heads`", run(&["heads", &db, "--json"])),
        (
            "`backup`",
            run(&["backup", &db, &dir.path("copy"), "--json"]),
        ),
        ("`check`", run(&["check", &db, "--json"])),
        (
            "`keygen`",
            run(&[
                "keygen",
                "--name",
                "example.org/db",
                "--out",
                &key_file,
                "--json",
            ]),
        ),
    ]);
    let sign_key = run(&["sign-key", &db, &key_file, "--json"]);
    let verifier_key =
        serde_json::from_str::<serde_json::Value>(&sign_key).unwrap()["verifier_key"]
            .as_str()
            .expect("verifier_key")
            .to_owned();
    printed.push(("`sign-key`", sign_key));
    printed.push((
        "`signed-checkpoint`",
        run(&["signed-checkpoint", &db, "--json"]),
    ));
    let note = run(&["signed-checkpoint", &db]);
    printed.push((
        "`verify-checkpoint`",
        cairn_stdin(
            &["verify-checkpoint", "--key", &verifier_key, "--json"],
            note.as_bytes(),
        )
        .success(),
    ));
    let indexed = dir.path("indexed");
    run(&[
        "init", &indexed, "--kind", "indexed", "--arity", "4", "--hash", "blake3",
    ]);
    run(&["ingest", &indexed, &file]);
    printed.push(("`stats` (indexed)", run(&["stats", &indexed, "--json"])));
    printed.push(("`demo`", run(&["demo", "--leaves", "64", "--json"])));

    let table = rows(&readme());
    let mut problems = Vec::new();
    for (command, cell) in &table {
        if LEFT_OUT.iter().any(|(left, _)| left == command) {
            continue;
        }
        match printed.iter().find(|(name, _)| name == command) {
            None => problems.push(format!(
                "the README lists {command}, which this test does not run: run it here or add it to LEFT_OUT"
            )),
            Some((_, text)) if keys(text) != fields(cell) => problems.push(format!(
                "{command}: the README lists {:?}, it prints {:?}: {text}",
                fields(cell),
                keys(text)
            )),
            Some(_) => {}
        }
    }
    for (name, _) in &printed {
        if !table.iter().any(|(command, _)| command == name) {
            problems.push(format!(
                "{name} prints JSON but has no row in the README's table"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
