//! The committed OpenAPI document and the router agree: the router serves
//! exactly `ROUTES`, the document lists exactly the same routes with
//! exactly their statuses, and the server serves the committed bytes.
//! (Every answer in every test is also checked against the document's
//! statuses by the test client.)

use std::collections::BTreeSet;

use axum::http::Method;
use cairn_core::HashKind;
use cairn_server::{OPENAPI_JSON, ROUTES};

use crate::support::*;

#[test]
fn the_document_lists_exactly_the_routes_and_their_statuses() {
    let mut documented = BTreeSet::new();
    for (path, operations) in DOC["paths"].as_object().unwrap() {
        for (method, operation) in operations.as_object().unwrap() {
            let statuses: BTreeSet<u16> = operation["responses"]
                .as_object()
                .unwrap()
                .keys()
                .map(|s| s.parse().unwrap())
                .collect();
            documented.insert((method.to_uppercase(), path.clone(), statuses));
        }
    }
    let served: BTreeSet<_> = ROUTES
        .iter()
        .map(|r| {
            (
                r.method.to_owned(),
                r.path.to_owned(),
                r.statuses.iter().copied().collect::<BTreeSet<u16>>(),
            )
        })
        .collect();
    assert_eq!(served.len(), ROUTES.len(), "a route is listed twice");
    assert_eq!(documented, served);
}

#[test]
fn the_document_marks_exactly_the_token_routes_as_secured() {
    for route in ROUTES {
        let operation = &DOC["paths"][route.path][route.method.to_lowercase()];
        let secured = operation.get("security").is_some();
        assert_eq!(
            secured, route.needs_token,
            "{} {}",
            route.method, route.path
        );
        let has_401 = route.statuses.contains(&401);
        assert_eq!(
            has_401, route.needs_token,
            "{} {}",
            route.method, route.path
        );
    }
}

#[test]
fn every_reference_in_the_document_resolves() {
    fn walk(value: &serde_json::Value, refs: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(map) => {
                if let Some(serde_json::Value::String(r)) = map.get("$ref") {
                    refs.push(r.clone());
                }
                map.values().for_each(|v| walk(v, refs));
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| walk(v, refs)),
            _ => {}
        }
    }
    let mut refs = Vec::new();
    walk(&DOC, &mut refs);
    assert!(!refs.is_empty());
    for r in refs {
        let pointer = r.strip_prefix('#').unwrap();
        assert!(DOC.pointer(pointer).is_some(), "{r} does not resolve");
    }
    assert!(DOC["openapi"].as_str().unwrap().starts_with("3."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_is_served_and_the_document_is_the_committed_one() {
    let server = TestServer::new(2, HashKind::Blake3).await;
    let client = server.client();
    let reply = client.get("/openapi.json").await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.headers["content-type"], "application/json");
    assert_eq!(reply.text(), OPENAPI_JSON);
    let value = to_hex_leaf();
    for route in ROUTES {
        let path = route
            .path
            .replace("{value}", &value)
            .replace("{root}", &value)
            .replace("{index}", "0")
            .replace("{name}", "default");
        let method: Method = route.method.parse().unwrap();
        let reply = client.request(method, &path, &[], Vec::new()).await;
        // Whatever the route answers to an empty request, it is the
        // route's answer, not the router's "no route" or "wrong method".
        assert_ne!(reply.status, 405, "{} {path}", route.method);
        if reply.status == 404 {
            let error = reply.json()["error"].as_str().unwrap().to_owned();
            assert!(
                !error.starts_with("no route"),
                "{} {path}: {error}",
                route.method
            );
        }
    }
}

fn to_hex_leaf() -> String {
    cairn_core::hex::to_hex(&leaf(40, 0))
}
