//! `cairn serve`: the real binary serving a real database over HTTP, driven
//! with plain HTTP/1.1 over a TCP socket; SIGTERM ends it cleanly.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Command, Stdio};

use crate::support::cairn;

/// One HTTP/1.1 request on a fresh connection: (status, body).
pub(crate) fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[&str],
    body: &str,
) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for header in headers {
        head.push_str(header);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response[9..12].parse().unwrap();
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

#[test]
fn serve_answers_appends_proofs_and_lookups_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    cairn(&["init", db, "--arity", "4", "--hash", "blake3"]).success();
    let token = dir.path().join("token");
    std::fs::write(&token, "s3cret\n").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args([
            "serve",
            db,
            "--listen",
            "127.0.0.1:0",
            "--token-file",
            token.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_string();

    let leaves = r#"{"leaves":["0x0000000000000000000000000000000000000000000000000000000000000001","0x0000000000000000000000000000000000000000000000000000000000000002"]}"#;
    let json = "Content-Type: application/json";
    // Writes need the token; reads do not.
    assert_eq!(request(&addr, "POST", "/v1/leaves", &[json], leaves).0, 401);
    let (status, body) = request(
        &addr,
        "POST",
        "/v1/leaves",
        &[json, "Authorization: Bearer s3cret"],
        leaves,
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""first_index":0"#), "{body}");
    assert!(body.contains(r#""size":2"#), "{body}");
    // The same values again: 409, nothing appended.
    let (status, body) = request(
        &addr,
        "POST",
        "/v1/leaves",
        &[json, "Authorization: Bearer s3cret"],
        leaves,
    );
    assert_eq!(status, 409, "{body}");
    let (status, body) = request(
        &addr,
        "GET",
        "/v1/leaves/0x0000000000000000000000000000000000000000000000000000000000000002",
        &[],
        "",
    );
    assert_eq!((status, body.as_str()), (200, r#"{"index":1}"#));
    let (status, body) = request(&addr, "GET", "/v1/proofs/1", &[], "");
    assert_eq!(status, 200, "{body}");
    let (status, root) = request(&addr, "GET", "/v1/root", &[], "");
    assert_eq!(status, 200);
    assert!(root.contains(r#""size":2"#), "{root}");

    // SIGTERM: a clean shutdown that releases the directory.
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    assert!(child.wait().unwrap().success());
    let stats = cairn(&["stats", db, "--json"]);
    stats.success();
    assert!(stats.out().contains(r#""size":2"#), "{}", stats.out());
}

/// Starts `cairn serve ARGS` and returns it with the address it listens on.
pub(crate) fn spawn_serve(args: &[&str]) -> (std::process::Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .arg("serve")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line.trim().strip_prefix("listening on ");
    let addr = addr.unwrap_or_else(|| panic!("no address in {line:?}"));
    (child, addr.to_string())
}

/// Sends SIGTERM and asserts a clean exit.
pub(crate) fn stop(mut child: std::process::Child) {
    let pid = child.id().to_string();
    let killed = Command::new("kill").args(["-TERM", &pid]).status();
    assert!(killed.unwrap().success());
    assert!(child.wait().unwrap().success());
}

#[test]
fn serve_create_makes_the_database_then_reuses_a_matching_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("fresh");
    let db = db.to_str().unwrap();
    let create = [db, "--create", "--arity", "3", "--hash", "sha256"];
    let (child, addr) = spawn_serve(&[&create[..], &["--listen", "127.0.0.1:0"]].concat());
    let leaf =
        r#"{"leaves":["0x0000000000000000000000000000000000000000000000000000000000000007"]}"#;
    let json = "Content-Type: application/json";
    let (status, body) = request(&addr, "POST", "/v1/leaves", &[json], leaf);
    assert_eq!(status, 200, "{body}");
    stop(child);
    let stats = cairn(&["stats", db, "--json"]).success();
    assert!(stats.contains(r#""arity":3,"hash":"sha256""#), "{stats}");
    assert!(stats.contains(r#""size":1"#), "{stats}");

    // The same arguments again serve the existing database, leaf included.
    let (child, addr) = spawn_serve(&[&create[..], &["--listen", "127.0.0.1:0"]].concat());
    let (status, root) = request(&addr, "GET", "/v1/root", &[], "");
    assert_eq!(status, 200);
    assert!(root.contains(r#""size":1"#), "{root}");
    stop(child);

    // Another arity or hash is refused rather than silently ignored.
    cairn(&[
        "serve",
        db,
        "--create",
        "--arity",
        "4",
        "--hash",
        "sha256",
        "--listen",
        "127.0.0.1:0",
    ])
    .error(2, &["arity 3 and hash sha256, not arity 4 and hash sha256"]);
    // --arity without --create is a usage error: it would be ignored.
    cairn(&["serve", db, "--arity", "4"]).error(2, &["--create"]);
    cairn(&["serve", db, "--create", "--arity", "4"]).error(2, &["--hash"]);
}

/// One GET on a fresh connection: (status, body bytes).
fn get_bytes(addr: &str, path: &str) -> (u16, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).unwrap();
    let head = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let status = std::str::from_utf8(&response[9..12])
        .unwrap()
        .parse()
        .unwrap();
    let body_at = response.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    (status, response[body_at..].to_vec())
}

#[test]
fn served_leaves_are_the_bytes_export_writes_for_the_same_range() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    cairn(&["init", db, "--arity", "3", "--hash", "sha256"]).success();
    let hex: String = (1..=50).map(|i| format!("0x{i:064x}\n")).collect();
    let file = dir.path().join("leaves.hex");
    std::fs::write(&file, hex).unwrap();
    cairn(&["ingest", db, file.to_str().unwrap(), "--format", "hex"]).success();
    let (child, addr) =
        spawn_serve(&[db, "--listen", "127.0.0.1:0", "--max-leaves-per-read", "20"]);
    for (from, to) in [(0, 20), (7, 26), (49, 50), (50, 50)] {
        let (status, served) = get_bytes(&addr, &format!("/v1/leaves?from={from}&to={to}"));
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&served));
        // Read-only, beside the server.
        let exported = cairn(&[
            "export",
            db,
            "--from",
            &from.to_string(),
            "--to",
            &to.to_string(),
        ]);
        exported.success();
        assert_eq!(served, exported.stdout, "leaves {from}..{to}");
    }
    let (status, body) = get_bytes(&addr, "/v1/leaves?from=0&to=21");
    assert_eq!(status, 400);
    assert!(String::from_utf8_lossy(&body).contains("limit of 20"));
    stop(child);
}

#[test]
fn serve_signs_checkpoints_with_the_database_key_or_the_given_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    let key = dir.path().join("db.key");
    let key = key.to_str().unwrap();
    let vkey = cairn(&["keygen", "--name", "example.org/served", "--out", key]).success();
    cairn(&[
        "init",
        db,
        "--arity",
        "2",
        "--hash",
        "blake3",
        "--sign-key",
        key,
    ])
    .success();

    let (child, addr) = spawn_serve(&[db, "--listen", "127.0.0.1:0"]);
    let (status, body) = request(&addr, "GET", "/v1/checkpoint", &[], "");
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("empty"), "{body}");
    let leaf = format!("0x{:064x}", 9);
    let (status, body) = request(
        &addr,
        "POST",
        "/v1/leaves",
        &["content-type: application/json"],
        &format!(r#"{{"leaves":["{leaf}"]}}"#),
    );
    assert_eq!(status, 200, "{body}");
    let (status, note) = request(&addr, "GET", "/v1/checkpoint", &[], "");
    assert_eq!(status, 200, "{note}");
    stop(child);
    let verdict = crate::support::cairn_stdin(
        &["verify-checkpoint", "--key", vkey.trim()],
        note.as_bytes(),
    )
    .success();
    assert!(
        verdict.contains(&format!("signed size 1, root {leaf}")),
        "{verdict}"
    );
    // The server's answer is the CLI's note of the same head.
    assert_eq!(note, cairn(&["signed-checkpoint", db]).success());

    // --sign-key overrides the database's key; a missing one stops the start.
    let other = dir.path().join("other.key");
    let other = other.to_str().unwrap();
    let other_vkey = cairn(&["keygen", "--name", "other.example", "--out", other]).success();
    let (child, addr) = spawn_serve(&[db, "--listen", "127.0.0.1:0", "--sign-key", other]);
    let (status, note) = request(&addr, "GET", "/v1/checkpoint", &[], "");
    stop(child);
    assert_eq!(status, 200, "{note}");
    crate::support::cairn_stdin(
        &["verify-checkpoint", "--key", other_vkey.trim()],
        note.as_bytes(),
    )
    .success();
    let missing = dir.path().join("missing.key");
    cairn(&["serve", db, "--sign-key", missing.to_str().unwrap()]).error(4, &["missing.key"]);
}

#[test]
fn serve_help_shows_every_default() {
    let help = cairn(&["serve", "--help"]).success();
    for default in [
        "[default: 127.0.0.1:7878]",
        "[default: 67108864]",
        "[default: 1048576]",
        "[default: 65536]",
        "[default: 30]",
    ] {
        assert!(help.contains(default), "no {default} in:\n{help}");
    }
}

#[test]
fn serve_on_a_missing_database_is_one_line_and_exit_4() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nothing");
    cairn(&[
        "serve",
        missing.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ])
    .error(4, &["does not exist"]);
}

/// The token file's rules under `cairn serve`, as under `cairn-server`:
/// one other users can read is warned about (the logger is installed
/// before the options are read), and one of two lines is refused with
/// that reason (`--help` says one line), never cut to its first.
#[test]
fn serve_warns_of_a_readable_token_file_and_refuses_one_of_two_lines() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    cairn(&["init", db, "--arity", "2", "--hash", "blake3"]).success();
    let token = dir.path().join("token");
    std::fs::write(&token, "s3cret\n").unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o644)).unwrap();
    let log = dir.path().join("log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args(["serve", db, "--listen", "127.0.0.1:0"])
        .args(["--token-file", token.to_str().unwrap()])
        .env("CAIRN_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("listening on "), "{line:?}");
    stop(child);
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains("the token file is readable by other users; chmod 600 it"),
        "{logged}"
    );
    assert!(!logged.contains("s3cret"), "{logged}");

    std::fs::write(&token, "s3cret\nsecond\n").unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    let refused = cairn(&["serve", db, "--token-file", token.to_str().unwrap()]);
    let error = refused.error(2, &["holds 2 lines, a token is one"]);
    assert!(!error.contains("s3cret"), "{error}");
    let help = cairn(&["serve", "--help"]);
    assert!(help.out().contains("one line"), "{}", help.out());
}
