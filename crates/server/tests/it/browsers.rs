//! What browsers and dApps need: CORS by allow-list (`*` for reads only),
//! validators and `immutable` caching on answers that can never change,
//! proofs in zk-kit's and the circuits' formats, and decimal field
//! elements in JSON bodies and lookups of Poseidon databases.
//!
//! Preflights (`OPTIONS`) are not API routes: they are sent with a plain
//! client here, not the one that checks statuses against openapi.json.

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, Request};
use cairn_core::decimal::to_decimal;
use cairn_core::{ConsistencyProof, HashKind};
use cairn_db::DbConfig;
use cairn_server::CorsPolicy;
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::TokioExecutor;

use crate::support::*;

/// A request that bypasses the documented-status check: (status, headers, body).
async fn raw(
    server: &TestServer,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, HeaderMap, String) {
    raw_to(server.addr, method, path, headers, body).await
}

/// [`raw`] to any server's address.
pub async fn raw_to(
    addr: std::net::SocketAddr,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, HeaderMap, String) {
    let client = HyperClient::builder(TokioExecutor::new()).build_http();
    let mut builder = Request::builder()
        .method(method)
        .uri(format!("http://{addr}{path}"));
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let response = client
        .request(
            builder
                .body(Full::new(Bytes::from(body.to_owned())))
                .unwrap(),
        )
        .await
        .unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, headers, String::from_utf8(body.to_vec()).unwrap())
}

pub fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).map(|v| v.to_str().unwrap())
}

pub const APP: &str = "https://app.example.org";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cors_is_off_by_default() {
    let server = TestServer::new(2, HashKind::Blake3).await;
    let (status, headers, _) = raw(&server, Method::GET, "/v1/root", &[("origin", APP)], "").await;
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "access-control-allow-origin"), None);
    let preflight = [("origin", APP), ("access-control-request-method", "GET")];
    let (status, headers, _) = raw(&server, Method::OPTIONS, "/v1/root", &preflight, "").await;
    assert_eq!(status, 405, "no policy: OPTIONS is not answered");
    assert_eq!(header(&headers, "access-control-allow-origin"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cors_star_grants_reads_to_every_origin_and_writes_to_none() {
    let server = TestServer::with(DbConfig::new(tree(2, HashKind::Blake3)), |c| {
        c.cors = CorsPolicy::AnyReads;
    })
    .await;
    let (status, headers, _) = raw(&server, Method::GET, "/v1/root", &[("origin", APP)], "").await;
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "access-control-allow-origin"), Some("*"));
    assert_eq!(
        header(&headers, "access-control-expose-headers"),
        Some("etag, x-request-id")
    );
    let read = [("origin", APP), ("access-control-request-method", "GET")];
    let (status, headers, _) = raw(&server, Method::OPTIONS, "/v1/proofs/0", &read, "").await;
    assert_eq!(status, 204);
    assert_eq!(header(&headers, "access-control-allow-origin"), Some("*"));
    assert_eq!(
        header(&headers, "access-control-allow-methods"),
        Some("GET, HEAD")
    );
    let write = [("origin", APP), ("access-control-request-method", "POST")];
    let (status, headers, body) = raw(&server, Method::OPTIONS, "/v1/leaves", &write, "").await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("writes to none"), "{body}");
    assert!(body.contains(APP), "{body}");
    assert_eq!(header(&headers, "access-control-allow-origin"), None);
    // A write sent anyway (no preflight needed for a simple request) gets
    // no CORS header, so the page cannot read the answer.
    let body = format!(r#"{{"leaves":["0x{}"]}}"#, "11".repeat(32));
    let (status, headers, _) = raw(
        &server,
        Method::POST,
        "/v1/leaves",
        &[("origin", APP), ("content-type", "application/json")],
        &body,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "access-control-allow-origin"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cors_named_origins_may_read_and_write_and_others_nothing() {
    let server = TestServer::with(DbConfig::new(tree(2, HashKind::Blake3)), |c| {
        c.cors = CorsPolicy::Origins(vec![APP.to_owned()]);
        c.token = Some(TOKEN.to_owned());
    })
    .await;
    let write = [
        ("origin", APP),
        ("access-control-request-method", "POST"),
        (
            "access-control-request-headers",
            "authorization, content-type",
        ),
    ];
    let (status, headers, _) = raw(&server, Method::OPTIONS, "/v1/leaves", &write, "").await;
    assert_eq!(status, 204);
    assert_eq!(header(&headers, "access-control-allow-origin"), Some(APP));
    assert_eq!(header(&headers, "vary"), Some("origin"));
    let allowed = header(&headers, "access-control-allow-headers").unwrap();
    assert!(allowed.contains("authorization") && allowed.contains("content-type"));
    let bearer = format!("Bearer {TOKEN}");
    let body = format!(r#"{{"leaves":["0x{}"]}}"#, "22".repeat(32));
    let (status, headers, _) = raw(
        &server,
        Method::POST,
        "/v1/leaves",
        &[
            ("origin", APP),
            ("content-type", "application/json"),
            ("authorization", &bearer),
        ],
        &body,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "access-control-allow-origin"), Some(APP));

    let other = "https://evil.example.net";
    let (status, headers, body) = raw(
        &server,
        Method::OPTIONS,
        "/v1/root",
        &[("origin", other), ("access-control-request-method", "GET")],
        "",
    )
    .await;
    assert_eq!(status, 403);
    assert!(body.contains(other) && body.contains(APP), "{body}");
    assert_eq!(header(&headers, "access-control-allow-origin"), None);
    let (status, headers, _) =
        raw(&server, Method::GET, "/v1/root", &[("origin", other)], "").await;
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "access-control-allow-origin"), None);
    assert_eq!(header(&headers, "vary"), Some("origin"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proofs_at_a_final_explicit_size_are_immutable_and_revalidate_by_etag() {
    let server = TestServer::new(3, HashKind::Sha256).await;
    let client = server.client();
    let all = leaves(7, 12);
    client.post_binary(&all[..8], None).await.ok();
    server.db.checkpoint().unwrap(); // finalizes the first 8 (checkpoint finality)
    assert_eq!(server.db.finalized_size(), 8);
    client.post_binary(&all[8..], None).await.ok();

    let reply = client.get("/v1/proofs/2?size=8").await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.headers["cache-control"],
        "public, max-age=31536000, immutable"
    );
    let etag = reply.headers["etag"].to_str().unwrap().to_owned();
    assert!(etag.starts_with('"') && etag.len() == 34, "{etag}");
    let again = client
        .request(
            Method::GET,
            "/v1/proofs/2?size=8",
            &[("if-none-match", &etag)],
            Vec::new(),
        )
        .await;
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    assert_eq!(again.headers["etag"], etag.as_str());
    let stale = client
        .request(
            Method::GET,
            "/v1/proofs/2?size=8",
            &[("if-none-match", "\"0123\"")],
            Vec::new(),
        )
        .await;
    assert_eq!(stale.status, 200);
    assert_eq!(stale.body, reply.body);
    // json is the default format: the same body, the same tag.
    let other = client.get("/v1/proofs/2?size=8&format=json").await;
    assert_eq!(other.headers["etag"], etag.as_str());

    // Not final (a rollback could still change it) or not explicit: no-cache.
    for path in [
        "/v1/proofs/2?size=9",
        "/v1/proofs/2",
        "/v1/consistency?from=3",
    ] {
        let reply = client.get(path).await;
        assert_eq!(reply.status, 200, "{path}");
        assert_eq!(reply.headers["cache-control"], "no-cache", "{path}");
        assert!(reply.headers.contains_key("etag"), "{path}");
    }
    let reply = client.get("/v1/consistency?from=3&to=8").await;
    assert_eq!(
        reply.headers["cache-control"],
        "public, max-age=31536000, immutable"
    );
    ConsistencyProof::from_json(reply.text()).unwrap();
    let tag = reply.headers["etag"].to_str().unwrap().to_owned();
    let again = client
        .request(
            Method::GET,
            "/v1/consistency?from=3&to=8",
            &[("if-none-match", &format!("W/\"x\", {tag}"))],
            Vec::new(),
        )
        .await;
    assert_eq!(again.status, 304);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proofs_come_in_zkkit_and_circuit_formats_where_the_tree_allows() {
    let server = TestServer::new(2, HashKind::Poseidon).await;
    let client = server.client();
    let all = leaves(9, 11);
    client.post_binary(&all, None).await.ok();
    let mut local = local_tree(tree(2, HashKind::Poseidon), &all);
    let proof = local.prove_at(6, 9).unwrap();
    let zkkit = client.get("/v1/proofs/6?size=9&format=zkkit").await;
    assert_eq!(zkkit.text(), proof.to_zkkit_json().unwrap() + "\n");
    assert_eq!(zkkit.headers["content-type"], "application/json");
    let circom = client
        .get("/v1/proofs/6?size=9&format=circom&circuit_depth=6")
        .await;
    assert_eq!(circom.text(), proof.to_circom_json(Some(6)).unwrap() + "\n");
    let binary = client
        .get("/v1/proofs/6?size=9&format=zkkit-circom&circuit_depth=5")
        .await;
    assert_eq!(
        binary.text(),
        proof.to_zkkit_circom_json(Some(5)).unwrap() + "\n"
    );

    let shallow = client
        .get("/v1/proofs/6?size=9&format=circom&circuit_depth=2")
        .await
        .error(400);
    assert!(
        shallow.contains("circuit of depth 2") && shallow.contains("needs depth 4"),
        "{shallow}"
    );
    let unknown = client.get("/v1/proofs/6?format=xml").await.error(400);
    assert!(
        unknown.contains("\"xml\"") && unknown.contains("zkkit"),
        "{unknown}"
    );
    let twice = client
        .get("/v1/proofs/6?format=json&format=zkkit")
        .await
        .error(400);
    assert!(twice.contains("more than once"), "{twice}");
    let stray = client.get("/v1/proofs/6?circuit_depth=4").await.error(400);
    assert!(stray.contains("circuit_depth is for"), "{stray}");

    let ternary = TestServer::new(3, HashKind::Poseidon).await;
    ternary.client().post_binary(&all, None).await.ok();
    let refused = ternary
        .client()
        .get("/v1/proofs/1?format=zkkit")
        .await
        .error(400);
    assert!(
        refused.contains("binary trees (arity 2), this tree has arity 3"),
        "{refused}"
    );
    let sha = TestServer::new(2, HashKind::Sha256).await;
    sha.client().post_binary(&all, None).await.ok();
    let refused = sha
        .client()
        .get("/v1/proofs/1?format=circom")
        .await
        .error(400);
    assert!(refused.contains("hashes with sha256"), "{refused}");
}

/// A MiMCSponge database (Tornado Cash's deposit tree: an imt of depth 20
/// whose zero is keccak256("tornado") mod p) took a decimal `--zero` but
/// refused decimal leaves, because the server asked "is this Poseidon"
/// rather than "is this a field hash".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mimcsponge_databases_take_decimal_field_elements_too() {
    let zero = cairn_core::decimal::parse_field_element(
        "21663839004416932945382355908790599225266501822907911457504978515578255421292",
    )
    .unwrap();
    let config =
        tree(2, HashKind::MiMCSponge).with_kind(cairn_core::TreeKind::Fixed { depth: 20, zero });
    let server = TestServer::with(DbConfig::new(config), |_| {}).await;
    let client = server.client();
    let values = leaves(6, 3);
    let decimals: Vec<String> = values.iter().map(to_decimal).collect();
    let body = serde_json::json!({ "leaves": decimals }).to_string();
    let reply = client
        .request(
            Method::POST,
            "/v1/leaves",
            &[("content-type", "application/json")],
            body.into_bytes(),
        )
        .await
        .ok();
    let mut local = local_tree(config, &values);
    assert_eq!(
        reply["root"],
        cairn_core::hex::to_hex(&local.root().unwrap())
    );
    let found = client
        .get(&format!("/v1/leaves/{}", decimals[1]))
        .await
        .ok();
    assert_eq!(found["index"], 1);
    let p = "21888242871839275222246405745257275088548364400416034343698204186575808495617";
    let refused = client.get(&format!("/v1/leaves/{p}")).await.error(400);
    assert!(refused.contains("not a BN254 field element"), "{refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn poseidon_databases_take_decimal_field_elements_below_the_modulus() {
    let server = TestServer::new(2, HashKind::Poseidon).await;
    let client = server.client();
    let values = leaves(5, 3);
    let decimals: Vec<String> = values.iter().map(to_decimal).collect();
    let body = serde_json::json!({ "leaves": decimals }).to_string();
    let reply = client
        .request(
            Method::POST,
            "/v1/leaves",
            &[("content-type", "application/json")],
            body.into_bytes(),
        )
        .await
        .ok();
    let mut local = local_tree(tree(2, HashKind::Poseidon), &values);
    assert_eq!(
        reply["root"],
        cairn_core::hex::to_hex(&local.root().unwrap())
    );
    let found = client
        .get(&format!("/v1/leaves/{}", decimals[2]))
        .await
        .ok();
    assert_eq!(found["index"], 2);

    let p = "21888242871839275222246405745257275088548364400416034343698204186575808495617";
    let body = format!(r#"{{"leaves":["7","{p}"]}}"#);
    let refused = client
        .request(
            Method::POST,
            "/v1/leaves",
            &[("content-type", "application/json")],
            body.into_bytes(),
        )
        .await
        .error(400);
    assert!(
        refused.contains("position 1") && refused.contains("below p"),
        "{refused}"
    );
    let refused = client.get(&format!("/v1/leaves/{p}")).await.error(400);
    assert!(refused.contains("not a BN254 field element"), "{refused}");
    assert_eq!(
        server.db.size(),
        3,
        "nothing of a refused batch is appended"
    );

    let sha = TestServer::new(2, HashKind::Sha256).await;
    let refused = sha
        .client()
        .request(
            Method::POST,
            "/v1/leaves",
            &[("content-type", "application/json")],
            br#"{"leaves":["7"]}"#.to_vec(),
        )
        .await
        .error(400);
    assert!(
        refused.contains("Poseidon and MiMCSponge databases only"),
        "{refused}"
    );
}
