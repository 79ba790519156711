//! Every example in every `--help` runs as written: each in a fresh copy of
//! a fixture directory holding what the examples name (`db`, a database of
//! arity 3 under SHA-256 holding the leaves 1..=7; `leaves.bin` and
//! `leaves.hex`, the leaves 8..=14; `$NULLIFIER` and `$COMMITMENT`, the
//! leaves 5 and 6), with the built `cairn` first on PATH, and must exit 0
//! (every command of a pipeline too). The examples of `cairn --help` (a
//! walk-through from `cairn init db` on) and of `cairn init --help` run in
//! order in one copy without `db`. The few that cannot run here are listed
//! in `SKIPPED` with the reason.

use std::path::Path;
use std::process::Command;

use crate::support::cairn;

/// Examples not run, by a fragment of their text, and why.
const SKIPPED: &[(&str, &str)] = &[
    (
        "generate-leaves",
        "stands for the user's own leaf generator",
    ),
    ("cairn serve", "runs until stopped: the serve tests run it"),
    (
        "curl ",
        "needs a running server: the serve tests and the README test",
    ),
    ("cairn demo", "takes seconds: the demo tests run it"),
    ("~/", "writes into the home directory"),
    ("man -l", "needs man(1)"),
    ("s3://", "needs an S3 server: the tile tests start one"),
    (
        "https://",
        "needs a remote tile store: the tile tests serve one over HTTP",
    ),
    (
        "http://127.0.0.1",
        "needs a running server: the mirror tests run one",
    ),
];

/// The example lines of `help` (after `Examples:`, up to the first blank
/// line), continuation lines joined.
fn examples(help: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let Some((_, after)) = help.split_once("\nExamples:\n") else {
        return out;
    };
    for line in after.lines().take_while(|l| !l.trim().is_empty()) {
        match out.last_mut() {
            Some(last) if last.ends_with('\\') => {
                last.pop();
                last.push_str(line.trim_start());
            }
            _ => out.push(line.trim().to_owned()),
        }
    }
    out
}

fn commands() -> Vec<String> {
    let help = cairn(&["--help"]).success();
    let listed = help.split_once("\nCommands:\n").unwrap().1;
    let mut commands = vec![String::new()];
    commands.extend(
        listed
            .lines()
            .take_while(|l| !l.trim().is_empty())
            .filter_map(|l| l.split_whitespace().next())
            .filter(|name| *name != "help")
            .map(str::to_owned),
    );
    commands
}

fn hex_lines(range: std::ops::RangeInclusive<u64>) -> String {
    range.map(|i| format!("0x{i:064x}\n")).collect()
}

fn fixture(dir: &Path) {
    std::fs::write(dir.join("db.hex"), hex_lines(1..=7)).unwrap();
    std::fs::write(dir.join("leaves.hex"), hex_lines(8..=14)).unwrap();
    let bin: Vec<u8> = (8u64..=14)
        .flat_map(|i| {
            let mut leaf = [0u8; 32];
            leaf[24..].copy_from_slice(&i.to_be_bytes());
            leaf
        })
        .collect();
    std::fs::write(dir.join("leaves.bin"), bin).unwrap();
    let setup = "cairn init db --arity 3 --hash sha256 >/dev/null \
        && cairn ingest db db.hex --format hex >/dev/null \
        && cairn prove db --index 4 > proof.json \
        && cairn consistency db --from 4 --to 7 --binary > c.bin \
        && cairn init spent --kind indexed --arity 4 --hash blake3 >/dev/null \
        && cairn ingest spent db.hex --format hex >/dev/null";
    let status = shell(setup, dir).status().unwrap();
    assert!(status.success(), "fixture setup failed");
}

fn shell(command: &str, dir: &Path) -> Command {
    let bin = Path::new(env!("CARGO_BIN_EXE_cairn")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut shell = Command::new("bash");
    shell
        .args(["--norc", "--noprofile", "-o", "pipefail", "-c", command])
        .current_dir(dir)
        .env("PATH", path)
        .env("NULLIFIER", format!("0x{:064x}", 5))
        .env("COMMITMENT", format!("0x{:064x}", 6));
    shell
}

#[test]
fn every_help_example_runs_as_written() {
    let template = tempfile::tempdir().unwrap();
    fixture(template.path());
    let mut ran = 0;
    for command in commands() {
        let mut args: Vec<&str> = command.split_whitespace().collect();
        args.push("--help");
        let creates = command.is_empty() || command == "init";
        let mut dir = tempfile::tempdir().unwrap();
        let mut fresh = true;
        for example in examples(&cairn(&args).success()) {
            if let Some((_, why)) = SKIPPED.iter().find(|(s, _)| example.contains(s)) {
                eprintln!("skipped {example:?}: {why}");
                continue;
            }
            if fresh {
                let copy = format!("cp -r {}/. .", template.path().display());
                let copy = if creates {
                    format!("{copy} && rm -r db spent")
                } else {
                    copy
                };
                assert!(shell(&copy, dir.path()).status().unwrap().success());
            }
            let output = shell(&example, dir.path()).output().unwrap();
            assert!(
                output.status.success(),
                "cairn {command} --help: {example:?} exited {}: {}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            );
            ran += 1;
            if !creates {
                dir = tempfile::tempdir().unwrap();
            }
            fresh = !creates;
        }
    }
    assert!(ran >= 40, "only {ran} examples ran");
}

#[test]
fn help_texts_show_no_shortened_values() {
    // A value like 0x3e39..c920 cannot be pasted into a shell.
    for command in commands() {
        let mut args: Vec<&str> = command.split_whitespace().collect();
        args.push("--help");
        let help = cairn(&args).success();
        for word in help.split(|c: char| !(c.is_ascii_alphanumeric() || c == '.')) {
            let shortened = word.starts_with("0x")
                && word
                    .split_once("..")
                    .is_some_and(|(_, tail)| tail.chars().any(|c| c.is_ascii_hexdigit()));
            assert!(!shortened, "cairn {command} --help shows {word:?}");
        }
    }
}
