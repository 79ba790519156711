//! The server survives its clients: a request whose headers stop half
//! way, a connection that sends nothing and a request body that stalls are
//! closed after their timeouts while other clients are served; connections
//! beyond the bound are answered 503 with `Retry-After` at once; and at a
//! low open-file limit a flood of half-sent requests blocks nobody and
//! leaves the database the descriptors it needs. Every wait is bounded;
//! no test asserts how long anything took.

use std::io::{Read as _, Write as _};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use cairn_core::HashKind;
use cairn_core::hex::to_hex;
use cairn_db::{Db, DbConfig};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::support::*;

/// The longest any wait below may take before the test fails.
const BOUND: Duration = Duration::from_secs(60);

async fn connect(addr: SocketAddr, sent: &[u8]) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(sent).await.unwrap();
    stream
}

/// Reads until the server closes the connection; what it sent.
async fn until_closed(stream: &mut TcpStream) -> String {
    let mut answer = Vec::new();
    let read = tokio::time::timeout(BOUND, async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => answer.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    assert!(read.is_ok(), "the server kept the connection open");
    String::from_utf8_lossy(&answer).into_owned()
}

/// One request on a fresh connection (`connection: close`): the status
/// and the whole answer, or `None` if the server closed it unanswered.
async fn raw(addr: SocketAddr, request: &str) -> Option<(u16, String)> {
    let mut stream = connect(addr, request.as_bytes()).await;
    let answer = until_closed(&mut stream).await;
    let status = answer.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()?;
    Some((status, answer))
}

fn get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
}

fn post_leaves(values: &[cairn_core::Hash]) -> String {
    let body =
        serde_json::json!({ "leaves": values.iter().map(to_hex).collect::<Vec<_>>() }).to_string();
    format!(
        "POST /v1/leaves HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// The value of metric `name` in a scrape.
fn metric(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {name} in\n{text}"))
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_silent_and_stalled_clients_are_closed_while_others_are_served() {
    let server = TestServer::with(DbConfig::new(tree(2, HashKind::Blake3)), |c| {
        c.header_read_timeout = Duration::from_secs(1);
        c.idle_timeout = Duration::from_secs(1);
    })
    .await;
    let client = server.client();
    let mut half = connect(server.addr, b"GET /v1/root HTTP/1.1\r\nhost: 127.").await;
    let mut silent = connect(server.addr, b"").await;
    let mut stalled = connect(
        server.addr,
        b"POST /v1/leaves HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/octet-stream\r\ncontent-length: 64\r\n\r\n0123456789",
    )
    .await;
    // Others are served meanwhile.
    client.post_binary(&leaves(1, 4), None).await.ok();
    assert_eq!(client.head().await.size, 4);
    // Each of the three is closed; the stalled body is refused first.
    assert_eq!(until_closed(&mut half).await, "");
    assert_eq!(until_closed(&mut silent).await, "");
    let answer = until_closed(&mut stalled).await;
    assert!(answer.starts_with("HTTP/1.1 400 "), "{answer}");
    assert!(
        answer.contains("no part of the request body arrived for 1 s"),
        "{answer}"
    );
    // A fresh client from here on: `client`'s pooled connection has been
    // idle for about the server's 1 s idle timeout, and a request sent on
    // it as the server closes it fails to send (a race of the test's own
    // making, not a refusal).
    let client = server.client();
    assert_eq!(
        client.head().await.size,
        4,
        "the stalled body appended nothing"
    );
    let metrics = client.get("/metrics").await;
    let text = metrics.text();
    assert!(
        metric(text, "cairn_http_header_read_timeouts_total") >= 2,
        "{text}"
    );
    assert_eq!(metric(text, "cairn_http_header_read_timeout_seconds"), 1);
    assert_eq!(metric(text, "cairn_http_idle_timeout_seconds"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_bound_are_answered_503_at_once_and_served_later() {
    let server = TestServer::with(DbConfig::new(tree(2, HashKind::Blake3)), |c| {
        c.max_connections = Some(4);
        c.header_read_timeout = Duration::from_secs(120);
    })
    .await;
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(connect(server.addr, b"GET /v1/root HTTP/1.1\r\n").await);
    }
    // Connections are accepted in order: the next one is over the bound.
    let (status, answer) = raw(server.addr, &get("/v1/root"))
        .await
        .expect("answered, not dropped");
    assert_eq!(status, 503, "{answer}");
    assert!(answer.contains("\r\nretry-after: 1\r\n"), "{answer}");
    assert!(answer.contains("connections open"), "{answer}");
    drop(held);
    // Once they are gone, clients are served again.
    let deadline = Instant::now() + BOUND;
    loop {
        let answered = raw(server.addr, &post_leaves(&leaves(4, 3))).await;
        match answered.map(|(status, _)| status) {
            Some(200) => break,
            Some(503) | None => {}
            Some(other) => panic!("answered {other}"),
        }
        assert!(Instant::now() < deadline, "never served again");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let metrics = server.client().get("/metrics").await;
    let text = metrics.text();
    assert!(
        metric(text, "cairn_http_connections_refused_total") >= 1,
        "{text}"
    );
    assert_eq!(metric(text, "cairn_http_connections_max"), 4);
    assert_eq!(server.client().head().await.size, 3);
}

/// The fault run: 104 half-sent requests at an open-file limit of 64. New
/// clients get an answer at once (503 with Retry-After while the flood
/// holds every slot), the half-sent requests are closed after the header
/// timeout, appends and a finalization (a checkpoint: the database's own
/// files) succeed, and the server shuts down cleanly with everything it
/// acknowledged.
#[test]
fn a_flood_at_a_low_descriptor_limit_blocks_no_client_and_starves_no_file() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("db");
    let log = temp.path().join("server.log");
    let mut server = ServerProcess::start_with_fd_limit(
        &dir,
        &[
            "--create-arity",
            "2",
            "--create-hash",
            "blake3",
            "--header-read-timeout",
            "5",
        ],
        &log,
        64,
    );
    let addr = server.addr;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut flood: Vec<std::net::TcpStream> = (0..104)
        .map(|_| {
            let mut stream = std::net::TcpStream::connect(addr).unwrap();
            stream
                .write_all(b"POST /v1/leaves HTTP/1.1\r\nhost: 1")
                .unwrap();
            stream
        })
        .collect();
    // An answer, at once: the server is full, and says when to come back.
    let deadline = Instant::now() + BOUND;
    let refused = loop {
        if let Some((status, answer)) = runtime.block_on(raw(addr, &get("/v1/root"))) {
            break (status, answer);
        }
        // Closed unanswered: as many refusals as allowed were under way.
        assert!(Instant::now() < deadline, "no answer while flooded");
    };
    assert!(
        refused.0 == 503 && refused.1.contains("\r\nretry-after: 1\r\n"),
        "{refused:?}"
    );
    // Every connection of the flood is closed: by the header timeout, or
    // after a 503, or unanswered (a reset counts as closed too).
    for stream in &mut flood {
        stream.set_read_timeout(Some(BOUND)).unwrap();
        let mut answer = Vec::new();
        if let Err(e) = stream.read_to_end(&mut answer) {
            assert!(
                !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ),
                "a connection of the flood stayed open"
            );
        }
        let answer = String::from_utf8_lossy(&answer);
        assert!(
            answer.is_empty() || answer.starts_with("HTTP/1.1 503 "),
            "{answer}"
        );
    }
    drop(flood);
    // Appends are acknowledged again, and the database can still open the
    // files a checkpoint writes.
    let mut acknowledged = Vec::new();
    for round in 0..5 {
        let values = leaves(100 + round, 8);
        let deadline = Instant::now() + BOUND;
        loop {
            match runtime.block_on(raw(addr, &post_leaves(&values))) {
                Some((200, _)) => break,
                Some((503, answer)) if answer.contains("connections open") => {}
                None => {}
                other => panic!("{other:?}"),
            }
            assert!(Instant::now() < deadline, "appends never acknowledged");
            std::thread::sleep(Duration::from_millis(50));
        }
        acknowledged.extend(values);
    }
    let finalize = "POST /v1/finalize HTTP/1.1\r\nhost: 1\r\ncontent-type: application/json\r\ncontent-length: 11\r\nconnection: close\r\n\r\n{\"size\":40}";
    let (status, answer) = runtime.block_on(raw(addr, finalize)).unwrap();
    assert_eq!(status, 200, "{answer}");
    let (status, metrics) = runtime.block_on(raw(addr, &get("/metrics"))).unwrap();
    assert_eq!(status, 200);
    assert!(metric(&metrics, "cairn_http_connections_refused_total") >= 1);
    assert!(metric(&metrics, "cairn_http_header_read_timeouts_total") >= 1);
    let max = metric(&metrics, "cairn_http_connections_max");
    assert!((1..64).contains(&max), "{max}");
    assert_eq!(metric(&metrics, "process_max_fds"), 64);
    assert_eq!(metric(&metrics, "cairn_checkpoint_failing"), 0);
    assert!(server.terminate().success());
    let db = Db::open(&dir).unwrap();
    assert_eq!(db.size(), acknowledged.len() as u64);
    for value in &acknowledged {
        assert!(db.contains(value).unwrap());
    }
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("connection limits"), "{text}");
}

/// An answer the client stops reading: once nothing moves for the idle
/// timeout, the connection is closed (the answer is not sent whole).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_the_client_does_not_read_is_closed() {
    const LEAVES: u64 = 1 << 18;
    let server = TestServer::with(DbConfig::new(tree(2, HashKind::Blake3)), |c| {
        c.idle_timeout = Duration::from_secs(1);
        c.max_leaves_per_read = LEAVES as usize;
    })
    .await;
    let client = server.client();
    client.post_binary(&leaves(5, LEAVES), None).await.ok();
    // 8 MiB of leaves, to a socket that takes 4 KiB at a time and is not
    // read: more than the kernel's buffers hold.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(server.addr).await.unwrap();
    stream
        .write_all(get(&format!("/v1/leaves?from=0&to={LEAVES}")).as_bytes())
        .await
        .unwrap();
    let deadline = Instant::now() + BOUND;
    loop {
        let metrics = client.get("/metrics").await;
        if metric(metrics.text(), "cairn_http_idle_timeouts_total") >= 1 {
            break;
        }
        assert!(Instant::now() < deadline, "never closed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut received = Vec::new();
    let _ = tokio::time::timeout(BOUND, stream.read_to_end(&mut received)).await;
    assert!(
        received.len() < (LEAVES * 32) as usize,
        "the whole answer arrived: {} bytes",
        received.len()
    );
    assert!(received.starts_with(b"HTTP/1.1 200 "));
}
