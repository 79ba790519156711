//! Oversized and malformed append bodies: each refusal is a 4xx JSON error
//! that names the offending value, and appends nothing.

use std::net::SocketAddr;

use axum::http::Method;
use cairn_core::HashKind;
use cairn_core::hex::to_hex;
use cairn_db::DbConfig;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::support::*;

const MAX_BODY: usize = 1024;
const MAX_LEAVES: usize = 8;

async fn limited(hash: HashKind) -> TestServer {
    TestServer::with(DbConfig::new(tree(2, hash)), |c| {
        c.max_body_bytes = MAX_BODY;
        c.max_batch_leaves = MAX_LEAVES;
    })
    .await
}

async fn post(client: &Client, content_type: &str, body: Vec<u8>) -> Reply {
    client
        .request(
            Method::POST,
            "/v1/leaves",
            &[("content-type", content_type)],
            body,
        )
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_and_batches_above_the_limits_are_refused_with_413() {
    let server = limited(HashKind::Blake3).await;
    let client = server.client();
    let big = vec![1u8; 2 * MAX_BODY];
    let error = post(&client, "application/octet-stream", big)
        .await
        .error(413);
    assert!(
        error.contains("2048 bytes exceeds this server's limit of 1024 bytes"),
        "{error}"
    );
    let error = client.post_binary(&leaves(30, 9), None).await.error(413);
    assert!(
        error.contains("a batch of 9 leaves exceeds this server's limit of 8"),
        "{error}"
    );
    let error = client.post_json(&leaves(30, 9), None).await.error(413);
    assert!(error.contains("a batch of 9 leaves"), "{error}");
    // JSON of 20 leaves is over the byte limit before the leaf limit.
    let error = client.post_json(&leaves(30, 20), None).await.error(413);
    assert!(error.contains("limit of 1024 bytes"), "{error}");

    let (status, body) = chunked_post(server.addr, &vec![0u8; 4 * MAX_BODY]).await;
    assert_eq!(status, 413, "{body}");
    assert!(body.contains("more than 1024 bytes"), "{body}");
    let (status, body) = chunked_post(server.addr, leaves(31, 2).as_flattened()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(client.head().await.size, 2);
}

/// POSTs `body` with `Transfer-Encoding: chunked` (no Content-Length, so
/// only reading the body can find it too large) over a raw connection.
async fn chunked_post(addr: SocketAddr, body: &[u8]) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut request = b"POST /v1/leaves HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/octet-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n".to_vec();
    for chunk in body.chunks(500) {
        request.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        request.extend_from_slice(chunk);
        request.extend_from_slice(b"\r\n");
    }
    request.extend_from_slice(b"0\r\n\r\n");
    // The server may answer and close before reading everything.
    let _ = stream.write_all(&request).await;
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {answer:?}"));
    let body = answer
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_bodies_are_refused_with_400_naming_the_value() {
    let server = limited(HashKind::Blake3).await;
    let client = server.client();
    let good = to_hex(&leaf(32, 0));
    let json = "application/json";
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (json, br#"{"leaves": []}"#.to_vec(), "empty batch"),
        ("application/octet-stream", Vec::new(), "empty batch"),
        (
            "application/octet-stream",
            vec![0; 33],
            "a binary body of 33 bytes is not a whole number of 32-byte leaves",
        ),
        ("application/octet-stream", vec![0; 31], "31 bytes"),
        (
            json,
            format!(r#"{{"leaves": ["{good}", "0x1234"]}}"#).into_bytes(),
            "leaf at position 1: hash \"0x1234\" has 4 hex digits, want 64",
        ),
        (
            json,
            format!(r#"{{"leaves": ["{}"]}}"#, &good[2..]).into_bytes(),
            "must start with 0x",
        ),
        (
            json,
            format!(r#"{{"leaves": ["{}zz"]}}"#, &good[..64]).into_bytes(),
            "non-hex character at position 64",
        ),
        (
            json,
            format!(r#"{{"leaves": ["{good}"], "extra": 1}}"#).into_bytes(),
            "unknown field `extra`",
        ),
        (json, br#"{"leaves": "0x00"}"#.to_vec(), "invalid type"),
        (json, br#"{"leaves": [1]}"#.to_vec(), "invalid type"),
        (json, br#"{"leaves": ["#.to_vec(), "EOF"),
        (json, b"not json".to_vec(), "expected"),
        (json, br#"{}"#.to_vec(), "empty batch"),
    ];
    for (content_type, body, needle) in cases {
        let shown = String::from_utf8_lossy(&body).into_owned();
        let error = post(&client, content_type, body).await.error(400);
        assert!(
            error.contains(needle),
            "{shown:?}: {error:?} lacks {needle:?}"
        );
    }
    for content_type in ["text/plain", "application/x-www-form-urlencoded"] {
        let error = post(&client, content_type, good.clone().into_bytes())
            .await
            .error(415);
        assert!(error.contains(content_type), "{error}");
    }
    let reply = client
        .request(
            Method::POST,
            "/v1/leaves",
            &[],
            leaves(32, 1).as_flattened().to_vec(),
        )
        .await;
    assert!(reply.error(415).contains("no Content-Type"));
    assert_eq!(client.head().await.size, 0, "nothing was appended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn poseidon_refuses_non_canonical_field_elements_with_400() {
    refuses_non_canonical_field_elements(HashKind::Poseidon).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mimcsponge_refuses_non_canonical_field_elements_with_400() {
    refuses_non_canonical_field_elements(HashKind::MiMCSponge).await;
}

async fn refuses_non_canonical_field_elements(hash: HashKind) {
    let server = limited(hash).await;
    let client = server.client();
    let mut above = [0xffu8; 32];
    above[0] = 0x30; // above the BN254 modulus 0x3064..
    let batch = [leaf(33, 0), above];
    let error = client.post_binary(&batch, None).await.error(400);
    assert!(error.contains(&to_hex(&above)), "{error}");
    assert!(error.contains("position 1"), "{error}");
    assert!(
        error.contains("not a canonical BN254 field element"),
        "{error}"
    );
    assert_eq!(client.head().await.size, 0);
    client.post_binary(&batch[..1], None).await.ok();
    client.post_binary(&[leaf(34, 0)], None).await.ok();
    let mut tree = cairn_core::LeanImt::new(tree(2, hash));
    tree.append_batch(&[leaf(33, 0), leaf(34, 0)]).unwrap();
    assert_eq!(client.head().await.root, tree.root(), "{hash}");
}
