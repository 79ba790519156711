//! `GET /v1/checkpoint`: the durable (or finalized) head as a signed note
//! that verifies with the server's verifier key and names the tree.

use std::sync::Arc;

use cairn_core::HashKind;
use cairn_db::DbConfig;
use cairn_note::{Signer, open_head};
use cairn_server::{SIGNER_KEY_FILE, ServeOptions, ServerError};
use clap::Parser as _;
use serde_json::json;

use crate::support::*;

const ORIGIN: &str = "example.org/deposits";

fn signer() -> Arc<Signer> {
    Arc::new(Signer::generate(ORIGIN).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_checkpoint_is_the_durable_head_signed() {
    let key = signer();
    let signing = Arc::clone(&key);
    let config = DbConfig::new(tree(4, HashKind::Sha256));
    let server = TestServer::with(config, move |c| c.signer = Some(signing)).await;
    let client = server.client();

    // The empty tree has no root: nothing to sign yet.
    let error = client.get("/v1/checkpoint").await.error(404);
    assert!(error.contains("the durable tree is empty"), "{error}");

    let all = leaves(7, 9);
    for (from, to) in [(0, 5), (5, 9)] {
        client.post_json(&all[from..to], None).await.ok();
        let reply = client.get("/v1/checkpoint").await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert_eq!(reply.headers["content-type"], "text/plain; charset=utf-8");
        assert_eq!(reply.headers["cache-control"], "no-cache");
        let head = open_head(reply.text(), &key.verifier()).unwrap();
        assert_eq!(head.origin, ORIGIN);
        assert_eq!(head.size, to as u64);
        let mut local = local_tree(tree(4, HashKind::Sha256), &all[..to]);
        assert_eq!(Some(head.root), local.root());
        assert_eq!(head.tree.arity.get(), 4);
        assert_eq!(head.tree.hash, HashKind::Sha256);
        // The same head as /v1/root.
        assert_eq!(
            client.head().await,
            cairn_core::TreeHead {
                size: head.size,
                root: Some(head.root)
            }
        );
        // A tampered note is refused.
        let tampered = reply.text().replacen(&format!("\n{to}\n"), "\n1\n", 1);
        let error = open_head(&tampered, &key.verifier())
            .unwrap_err()
            .to_string();
        assert!(error.contains("bad signature"), "{error}");
        // And another key finds no known signature.
        let error = open_head(reply.text(), &signer().verifier())
            .unwrap_err()
            .to_string();
        assert!(error.contains("no known signature"), "{error}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_key_the_checkpoint_is_not_found() {
    let server = TestServer::new(2, HashKind::Blake3).await;
    let client = server.client();
    client.post_json(&leaves(1, 3), None).await.ok();
    let error = client.get("/v1/checkpoint").await.error(404);
    assert!(error.contains("no signer key"), "{error}");
    assert!(error.contains("--sign-key"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_signs_its_finalized_head_and_never_a_removed_one() {
    let key = signer();
    let signing = Arc::clone(&key);
    let mut config = DbConfig::new(tree(3, HashKind::Blake3));
    config.explicit_finality = true;
    let server = TestServer::with(config, move |c| {
        c.signer = Some(signing);
        c.sign_finalized = true;
    })
    .await;
    let client = server.client();
    let all = leaves(3, 8);
    client.post_json(&all, None).await.ok();
    let error = client.get("/v1/checkpoint").await.error(404);
    assert!(error.contains("the finalized tree is empty"), "{error}");

    client
        .post_to("/v1/finalize", &json!({"size": 5}), None)
        .await
        .ok();
    let head = open_head(client.get("/v1/checkpoint").await.text(), &key.verifier()).unwrap();
    assert_eq!(head.size, 5);
    assert_eq!(
        Some(head.root),
        local_tree(tree(3, HashKind::Blake3), &all[..5]).root()
    );

    // A rollback to the finalized size: the signed head stays where it was.
    client
        .post_to("/v1/rollback", &json!({"to_size": 5}), None)
        .await
        .ok();
    let again = open_head(client.get("/v1/checkpoint").await.text(), &key.verifier()).unwrap();
    assert_eq!(again, head);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_rollback_the_durable_checkpoint_names_the_new_head() {
    let key = signer();
    let signing = Arc::clone(&key);
    let mut config = DbConfig::new(tree(2, HashKind::Blake3));
    config.explicit_finality = true;
    let server = TestServer::with(config, move |c| c.signer = Some(signing)).await;
    let client = server.client();
    let all = leaves(5, 6);
    client.post_json(&all, None).await.ok();
    assert_eq!(
        open_head(client.get("/v1/checkpoint").await.text(), &key.verifier())
            .unwrap()
            .size,
        6
    );
    client
        .post_to("/v1/rollback", &json!({"to_size": 4}), None)
        .await
        .ok();
    let head = open_head(client.get("/v1/checkpoint").await.text(), &key.verifier()).unwrap();
    assert_eq!(head.size, 4);
    assert_eq!(
        Some(head.root),
        local_tree(tree(2, HashKind::Blake3), &all[..4]).root()
    );
}

#[derive(clap::Parser)]
struct Options {
    #[command(flatten)]
    serve: ServeOptions,
}

fn options(args: &[&str]) -> ServeOptions {
    let mut argv = vec!["test"];
    argv.extend_from_slice(args);
    Options::parse_from(argv).serve
}

#[test]
fn the_key_comes_from_the_option_or_the_database() {
    let dir = tempfile::tempdir().unwrap();
    // No key anywhere: no signer, and --sign-finalized is refused.
    assert!(
        options(&[])
            .config_for(dir.path())
            .unwrap()
            .signer
            .is_none()
    );
    let error = options(&["--sign-finalized"])
        .config_for(dir.path())
        .unwrap_err();
    assert!(matches!(error, ServerError::Usage(_)), "{error:?}");
    assert!(error.to_string().contains("needs a signer key"), "{error}");

    // The database's key.
    let in_database = Signer::generate("db.example").unwrap();
    cairn_note::file::write_signer_key(&dir.path().join(SIGNER_KEY_FILE), &in_database, false)
        .unwrap();
    let config = options(&[]).config_for(dir.path()).unwrap();
    assert_eq!(config.signer.unwrap().verifier(), in_database.verifier());

    // --sign-key wins over it.
    let elsewhere = Signer::generate("other.example").unwrap();
    let path = dir.path().join("other.key");
    cairn_note::file::write_signer_key(&path, &elsewhere, false).unwrap();
    let config = options(&["--sign-key", path.to_str().unwrap()])
        .config_for(dir.path())
        .unwrap();
    assert_eq!(config.signer.unwrap().verifier(), elsewhere.verifier());

    // A bad key file is an error naming the file.
    std::fs::write(&path, "not a key\n").unwrap();
    let error = options(&["--sign-key", path.to_str().unwrap()])
        .config()
        .unwrap_err();
    assert!(matches!(error, ServerError::SignerKey(_)), "{error:?}");
    assert!(error.to_string().contains("other.key"), "{error}");
    // The signer's Debug never shows the key.
    let config = options(&[]).config_for(dir.path()).unwrap();
    let shown = format!("{config:?}");
    // PRIVATE+KEY+name+hash+key: the key's base64 may itself hold a `+`,
    // so take everything after the fourth.
    let secret = in_database.to_key_text().to_string();
    let key = secret.splitn(5, '+').nth(4).unwrap();
    assert!(key.len() > 40, "{secret}");
    assert!(!shown.contains(key), "{shown}");
}
