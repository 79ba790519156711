//! `cairn serve` as operators run it: a read-only server beside the
//! writer on one directory, the exit status when the address is taken,
//! JSON logs.

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::serve::{request, spawn_serve, stop};
use crate::support::cairn;

const JSON: &[&str] = &["Content-Type: application/json"];

fn hex_leaf(i: u64) -> String {
    format!("\"0x{i:064x}\"")
}

#[test]
fn a_read_only_server_runs_beside_the_writer_and_follows_its_durable_head() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    let create = ["--create", "--arity", "4", "--hash", "blake3"];
    let (writer, writer_addr) =
        spawn_serve(&[&[db][..], &create[..], &["--listen", "127.0.0.1:0"]].concat());
    let body = format!("{{\"leaves\":[{},{}]}}", hex_leaf(1), hex_leaf(2));
    let (status, _) = request(&writer_addr, "POST", "/v1/leaves", JSON, &body);
    assert_eq!(status, 200);
    // The writer holds the lock; the reader takes none.
    let (reader, reader_addr) = spawn_serve(&[
        db,
        "--read-only",
        "--refresh-interval-ms",
        "10",
        "--listen",
        "127.0.0.1:0",
    ]);
    let (_, root) = request(&reader_addr, "GET", "/v1/root", &[], "");
    assert!(root.contains("\"size\":2"), "{root}");
    let (status, _) = request(&reader_addr, "POST", "/v1/leaves", JSON, &body);
    assert_eq!(status, 403);

    let body = format!("{{\"leaves\":[{}]}}", hex_leaf(3));
    let (status, appended) = request(&writer_addr, "POST", "/v1/leaves", JSON, &body);
    assert_eq!(status, 200, "{appended}");
    let (_, writer_root) = request(&writer_addr, "GET", "/v1/root", &[], "");
    // The reader serves the writer's new durable head once it has looked
    // at the directory again (every 10 ms here).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, root) = request(&reader_addr, "GET", "/v1/root", &[], "");
        if root == writer_root {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "reader {root}, writer {writer_root}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let (status, ready) = request(&reader_addr, "GET", "/readyz", &[], "");
    assert_eq!(status, 200, "{ready}");
    stop(reader);
    stop(writer);
}

#[test]
fn serve_on_an_address_in_use_exits_5_not_2() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    cairn(&[
        "serve",
        db.to_str().unwrap(),
        "--create",
        "--arity",
        "2",
        "--hash",
        "blake3",
        "--listen",
        &addr,
    ])
    .error(5, &["cannot listen on", &addr]);
    // The database it created is released: a writer opens it.
    cairn(&["root", db.to_str().unwrap()]);
}

#[test]
fn json_logs_are_one_object_per_line_with_the_documented_fields() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let mut child = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args(["serve", db.to_str().unwrap()])
        .args(["--create", "--arity", "2", "--hash", "blake3"])
        .args(["--listen", "127.0.0.1:0", "--log-format", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("listening on "), "{line}");
    // A few lines: the pipe holds them until the server has stopped.
    let mut stderr = child.stderr.take().unwrap();
    stop(child);
    let mut log = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut log).unwrap();
    let mut messages = Vec::new();
    for line in log.lines() {
        let value: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        for field in ["timestamp", "level", "fields", "target"] {
            assert!(value.get(field).is_some(), "no {field} in {line}");
        }
        messages.push(value["fields"]["message"].as_str().unwrap().to_owned());
    }
    for message in ["listening", "flushed", "closed: the directory is released"] {
        assert!(
            messages.iter().any(|m| m == message),
            "{message} in {messages:?}"
        );
    }
}
