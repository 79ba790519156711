//! Reads past one machine, end to end with the real binary: `cairn publish`
//! to a real S3-protocol server (`s3s-fs` on 127.0.0.1), `cairn prove
//! --tiles` over S3 and over plain HTTP, `cairn mirror` from a tile store
//! and from a server (a fork refused, exit 1), `cairn serve --publish` in
//! the background with its lag in /metrics (an S3 server killed and
//! restarted under it), and `cairn serve --read-only [--mirror-from]`.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cairn_core::HashKind;
use cairn_testkit::http::StaticServer;
use cairn_testkit::s3::S3Server;

use crate::support::{Dir, bin, cairn, cairn_env, ingest, init, leaves, root_hex};

/// One request on a fresh connection: (status, body).
fn request(
    addr: &str,
    method: &str,
    path: &str,
    content_type: &str,
    body: &[u8],
) -> (u16, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let status = std::str::from_utf8(&response[9..12])
        .unwrap()
        .parse()
        .unwrap();
    let at = response.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    (status, response[at..].to_vec())
}

fn get(addr: &str, path: &str) -> String {
    let (status, body) = request(addr, "GET", path, "text/plain", b"");
    assert_eq!(status, 200, "GET {path}");
    String::from_utf8(body).unwrap()
}

/// The value of an unlabelled metric.
fn metric(addr: &str, name: &str) -> u64 {
    let text = get(addr, "/metrics");
    text.lines()
        .find_map(|line| line.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no {name} in /metrics"))
        .parse()
        .unwrap()
}

/// Waits (at most 60 s) until `done` holds.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `cairn serve ARGS` with `env`: the child and its address.
fn serve(args: &[&str], env: &[(&str, &str)]) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .arg("serve")
        .args(args)
        .args(["--listen", "127.0.0.1:0"])
        .envs(env.iter().copied())
        .env("CAIRN_LOG", "error")
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
    (child, addr.to_owned())
}

fn stop(mut child: Child) {
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    assert!(child.wait().unwrap().success());
}

fn root_of(addr: &str) -> (u64, String) {
    let json: serde_json::Value = serde_json::from_str(&get(addr, "/v1/root")).unwrap();
    (
        json["size"].as_u64().unwrap(),
        json["root"].as_str().unwrap_or("none").to_owned(),
    )
}

#[test]
fn published_to_s3_proven_over_s3_and_http_mirrored_and_served_read_only() {
    let Some(s3) = S3Server::start("tiles") else {
        return;
    };
    let env = s3.env();
    let endpoint = s3.endpoint();
    let dir = Dir::new();
    let db = dir.path("db");
    init(&db, 4, HashKind::Sha256, &[]);
    let l = leaves(5_000);
    ingest(&db, &l, &[]).success();
    let root = root_hex(4, HashKind::Sha256, &l);
    let published = cairn_env(
        &[
            "publish",
            &db,
            "--to",
            "s3://tiles/n",
            "--s3-endpoint",
            &endpoint,
            "--json",
        ],
        b"",
        &env,
    )
    .json();
    assert_eq!(published["root"], root.as_str());
    // Without credentials: a usage error naming what to set.
    cairn(&[
        "publish",
        &db,
        "--to",
        "s3://tiles/n",
        "--s3-endpoint",
        &endpoint,
    ])
    .error(2, &["AWS_ACCESS_KEY_ID"]);
    // With wrong ones the server refuses: exit 4, naming the object.
    let wrong = [env[0], ("AWS_SECRET_ACCESS_KEY", "wrong"), env[2]];
    cairn_env(
        &[
            "publish",
            &db,
            "--to",
            "s3://tiles/n",
            "--s3-endpoint",
            &endpoint,
            "--retries",
            "0",
        ],
        b"",
        &wrong,
    )
    .error(4, &["s3://tiles/n/checkpoint"]);
    // A proof over S3.
    let proof = cairn_env(
        &[
            "prove",
            "--tiles",
            "s3://tiles/n",
            "--s3-endpoint",
            &endpoint,
            "--index",
            "4321",
        ],
        b"",
        &env,
    )
    .success();
    let file = dir.file("p.json", proof);
    cairn(&[
        "verify", "--arity", "4", "--hash", "sha256", "--root", &root, "--size", "5000", &file,
    ])
    .success();
    // The same objects over plain HTTP, as a public bucket or CDN serves them.
    let http = StaticServer::start(s3.dir());
    let url = format!("{}/tiles/n", http.url());
    let over_http = cairn(&["prove", "--tiles", &url, "--index", "4321"]).success();
    assert_eq!(over_http, std::fs::read_to_string(&file).unwrap());
    // A mirror of the tile store, over HTTP.
    let replica = dir.path("replica");
    let json = cairn(&[
        "mirror", "--from", &url, &replica, "--chunk", "1000", "--json",
    ])
    .json();
    assert_eq!(
        (json["size"].as_u64(), json["adopted"].as_u64()),
        (Some(5_000), Some(5_000))
    );
    assert_eq!(json["root"], root.as_str());
    cairn(&["check", &replica]).success();
    // Served read-only: reads as the primary's, writes refused with 403.
    let (child, addr) = serve(&[&replica, "--read-only"], &[]);
    assert_eq!(root_of(&addr), (5_000, root.clone()));
    let (status, body) = request(
        &addr,
        "POST",
        "/v1/leaves",
        "application/octet-stream",
        &bin(&leaves(5_001)[5_000..]),
    );
    assert_eq!(status, 403, "{}", String::from_utf8_lossy(&body));
    assert!(String::from_utf8_lossy(&body).contains("read-only"));
    stop(child);
    // A tile store of another tree at the mirror's size: refused, exit 1.
    let other = dir.path("other");
    init(&other, 4, HashKind::Sha256, &[]);
    ingest(&other, &cairn_testkit::leaves(99, 6_000), &[]).success();
    cairn(&["publish", &other, "--to", &dir.path("other-tiles")]).success();
    cairn(&["mirror", "--from", &dir.path("other-tiles"), &replica])
        .error(1, &["FORK", "checkpoint"]);
    assert_eq!(cairn(&["root", &replica]).success().trim(), root);
}

#[test]
fn a_mirror_follows_a_server_and_refuses_a_rewritten_history() {
    let dir = Dir::new();
    let db = dir.path("db");
    init(&db, 2, HashKind::Blake3, &["--finality", "explicit"]);
    let l = leaves(3_000);
    ingest(&db, &l[..2_000], &[]).success();
    let (primary, addr) = serve(&[&db], &[]);
    let replica = dir.path("replica");
    let url = format!("http://{addr}");
    let json = cairn(&[
        "mirror", "--from", &url, &replica, "--chunk", "300", "--json",
    ])
    .json();
    assert_eq!(json["size"].as_u64(), Some(2_000));
    // A read-only server that follows the primary.
    let (mirror, mirror_addr) = serve(
        &[
            &replica,
            "--read-only",
            "--mirror-from",
            &url,
            "--mirror-interval-ms",
            "50",
        ],
        &[],
    );
    let (status, _) = request(
        &addr,
        "POST",
        "/v1/leaves",
        "application/octet-stream",
        &bin(&l[2_000..]),
    );
    assert_eq!(status, 200);
    let want = (3_000, root_hex(2, HashKind::Blake3, &l));
    eventually("the mirror to adopt 3,000 leaves", || {
        root_of(&mirror_addr) == want
    });
    assert_eq!(metric(&mirror_addr, "cairn_mirror_adopted_size"), 3_000);
    assert_eq!(metric(&mirror_addr, "cairn_mirror_refusals_total"), 0);
    stop(mirror);
    // The primary rewrites its last 500 leaves: the mirror refuses, loudly.
    let (status, body) = request(
        &addr,
        "POST",
        "/v1/rollback",
        "application/json",
        br#"{"to_size":2500}"#,
    );
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let (status, _) = request(
        &addr,
        "POST",
        "/v1/leaves",
        "application/octet-stream",
        &bin(&cairn_testkit::leaves(5, 800)),
    );
    assert_eq!(status, 200);
    cairn(&["mirror", "--from", &url, &replica]).error(1, &["FORK", "does not extend"]);
    assert_eq!(cairn(&["root", &replica]).success().trim(), want.1);
    stop(primary);
}

#[test]
fn serve_publishes_in_the_background_and_survives_the_s3_server_dying() {
    let Some(mut s3) = S3Server::start("tiles") else {
        return;
    };
    let env = s3.env();
    let endpoint = s3.endpoint();
    let dir = Dir::new();
    let db = dir.path("db");
    init(&db, 16, HashKind::Blake3, &[]);
    let (child, addr) = serve(
        &[
            &db,
            "--publish",
            "s3://tiles/live",
            "--s3-endpoint",
            &endpoint,
            "--publish-interval-ms",
            "20",
            "--publish-retry-seconds",
            "1",
        ],
        &env,
    );
    let l = leaves(40_000);
    let mut appended = 0;
    let mut append = |count: usize| {
        let (status, body) = request(
            &addr,
            "POST",
            "/v1/leaves",
            "application/octet-stream",
            &bin(&l[appended..appended + count]),
        );
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        appended += count;
    };
    append(10_000);
    eventually("the publisher to catch up", || {
        metric(&addr, "cairn_publish_published_size") == 10_000
    });
    assert_eq!(metric(&addr, "cairn_publish_lag_leaves"), 0);
    // The S3 server dies; appends go on (publishing never blocks them).
    s3.kill();
    for _ in 0..10 {
        append(1_000);
    }
    eventually("a failed publication", || {
        metric(&addr, "cairn_publish_failures_total") > 0
    });
    assert_eq!(metric(&addr, "cairn_publish_published_size"), 10_000);
    assert_eq!(metric(&addr, "cairn_publish_durable_size"), 20_000);
    assert_eq!(metric(&addr, "cairn_publish_lag_leaves"), 10_000);
    s3.restart();
    append(20_000);
    eventually("the publisher to catch up after the restart", || {
        metric(&addr, "cairn_publish_published_size") == 40_000
    });
    stop(child);
    // Every tile the checkpoint names is there: prove from S3 at both ends.
    let root = root_hex(16, HashKind::Blake3, &l);
    for index in ["0", "39999"] {
        let proof = cairn_env(
            &[
                "prove",
                "--tiles",
                "s3://tiles/live",
                "--s3-endpoint",
                &endpoint,
                "--index",
                index,
            ],
            b"",
            &env,
        )
        .success();
        let file = dir.file("p.json", proof);
        cairn(&[
            "verify", "--arity", "16", "--hash", "blake3", "--root", &root, "--size", "40000",
            &file,
        ])
        .success();
    }
    // A restarted server resumes from the published checkpoint.
    let (child, addr) = serve(
        &[
            &db,
            "--publish",
            "s3://tiles/live",
            "--s3-endpoint",
            &endpoint,
            "--publish-interval-ms",
            "20",
            "--publish-retry-seconds",
            "1",
        ],
        &env,
    );
    eventually("the restarted publisher", || {
        metric(&addr, "cairn_publications_total") >= 1
    });
    // Only the checkpoint was written again.
    assert_eq!(metric(&addr, "cairn_publish_objects_total"), 1);
    stop(child);
}

#[test]
fn a_served_database_publishes_signed_final_heads_and_a_mirror_server_checks_them() {
    let dir = Dir::new();
    let key = dir.path("log.key");
    let vkey = cairn(&["keygen", "--name", "example.org/served", "--out", &key])
        .success()
        .trim()
        .to_owned();
    let vkey_file = dir.file("log.vkey", format!("{vkey}\n"));
    let other_key = dir.path("other.key");
    let other = cairn(&[
        "keygen",
        "--name",
        "example.org/served",
        "--out",
        &other_key,
    ])
    .success();
    let other_file = dir.file("other.vkey", other);
    let db = dir.path("db");
    init(
        &db,
        4,
        HashKind::Blake3,
        &["--finality", "explicit", "--sign-key", &key],
    );
    let l = leaves(2_000);
    ingest(&db, &l[..1_000], &[]).success();
    let public = dir.path("public");
    let (primary, addr) = serve(
        &[&db, "--publish", &public, "--publish-interval-ms", "20"],
        &[],
    );
    eventually("the first publication", || {
        metric(&addr, "cairn_publish_published_size") == 1_000
    });
    // The store's checkpoint is the note GET /v1/checkpoint serves.
    let object = std::fs::read_to_string(format!("{public}/checkpoint")).unwrap();
    assert_eq!(object, get(&addr, "/v1/checkpoint"));
    // What was published is final: a rollback below it is refused.
    let (status, body) = request(
        &addr,
        "POST",
        "/v1/rollback",
        "application/json",
        br#"{"to_size":500}"#,
    );
    assert_eq!(status, 409, "{}", String::from_utf8_lossy(&body));
    assert!(
        String::from_utf8_lossy(&body).contains("final"),
        "{}",
        String::from_utf8_lossy(&body)
    );
    let (status, _) = request(
        &addr,
        "POST",
        "/v1/leaves",
        "application/octet-stream",
        &bin(&l[1_000..]),
    );
    assert_eq!(status, 200);
    eventually("the second publication", || {
        metric(&addr, "cairn_publish_published_size") == 2_000
    });
    // A read-only mirror server that trusts the key follows the store.
    let replica = dir.path("replica");
    let (mirror, mirror_addr) = serve(
        &[
            &replica,
            "--read-only",
            "--mirror-from",
            &public,
            "--verify-key",
            &vkey_file,
            "--mirror-interval-ms",
            "20",
        ],
        &[],
    );
    let want = (2_000, root_hex(4, HashKind::Blake3, &l));
    eventually("the mirror to adopt 2,000 leaves", || {
        root_of(&mirror_addr) == want
    });
    stop(mirror);
    // One that trusts another key refuses the store and creates nothing.
    cairn(&[
        "serve",
        &dir.path("r2"),
        "--read-only",
        "--mirror-from",
        &public,
        "--verify-key",
        &other_file,
    ])
    .error(1, &["no known signature", "checkpoint"]);
    // Verifier keys check tile stores, not a server's API.
    cairn(&[
        "mirror",
        "--from",
        &format!("http://{addr}"),
        &dir.path("r3"),
        "--verify-key",
        &vkey_file,
    ])
    .error(2, &["is a cairn server, not a tile store"]);
    stop(primary);
}

/// A Semaphore v3-style group (Poseidon, an imt of depth 16, zero 0)
/// served with `--publish`: its signed tiles name the tree, a read-only
/// server mirrors them with the key, and a mirror of the server's API is
/// created with the group's kind and follows it.
#[test]
fn a_served_fixed_depth_group_publishes_and_is_mirrored_from_tiles_and_from_the_api() {
    let dir = Dir::new();
    let key = dir.path("group.key");
    let vkey = cairn(&["keygen", "--name", "example.org/group", "--out", &key])
        .success()
        .trim()
        .to_owned();
    let vkey_file = dir.file("group.vkey", format!("{vkey}\n"));
    let db = dir.path("db");
    let imt = ["--kind", "imt", "--depth", "16", "--sign-key", &key];
    init(&db, 2, HashKind::Poseidon, &imt);
    let l = leaves(1_200);
    ingest(&db, &l[..700], &[]).success();
    let public = dir.path("public");
    let (primary, addr) = serve(
        &[&db, "--publish", &public, "--publish-interval-ms", "20"],
        &[],
    );
    eventually("the first publication", || {
        metric(&addr, "cairn_publish_published_size") == 700
    });
    let object = std::fs::read_to_string(format!("{public}/checkpoint")).unwrap();
    assert_eq!(object, get(&addr, "/v1/checkpoint"));
    assert!(
        object.contains("cairn-tree kind=imt arity=2 hash=poseidon depth=16 zero=0x00"),
        "{object}"
    );
    let replica = dir.path("replica");
    let (mirror, mirror_addr) = serve(
        &[
            &replica,
            "--read-only",
            "--mirror-from",
            &public,
            "--verify-key",
            &vkey_file,
            "--mirror-interval-ms",
            "20",
        ],
        &[],
    );
    let (status, _) = request(
        &addr,
        "POST",
        "/v1/leaves",
        "application/octet-stream",
        &bin(&l[700..]),
    );
    assert_eq!(status, 200);
    let want = root_of(&addr);
    assert_eq!(want.0, 1_200);
    eventually("the tile mirror to adopt 1,200 leaves", || {
        root_of(&mirror_addr) == want
    });
    let described: serde_json::Value =
        serde_json::from_str(&get(&mirror_addr, "/v1/root")).unwrap();
    assert_eq!(
        (&described["kind"], &described["depth"]),
        (&serde_json::json!("imt"), &serde_json::json!(16))
    );
    stop(mirror);
    // From the server's API: created as the same imt, then it follows.
    let api = dir.path("api");
    let url = format!("http://{addr}");
    let json = cairn(&["mirror", "--from", &url, &api, "--chunk", "256", "--json"]).json();
    assert_eq!(
        (json["size"].as_u64(), json["root"].as_str()),
        (Some(want.0), Some(want.1.as_str()))
    );
    let stats = cairn(&["stats", &api, "--json"]).json();
    assert_eq!(
        (&stats["kind"], &stats["depth"]),
        (&serde_json::json!("imt"), &serde_json::json!(16))
    );
    stop(primary);
}
