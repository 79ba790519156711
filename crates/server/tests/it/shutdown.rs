//! The server binary's life cycle: SIGTERM while writers are busy lets
//! every in-flight append finish (each acknowledged one is durable), then
//! flushes, checkpoints and releases the directory; the write token never
//! reaches the log; a second server on the same directory is refused.

use std::os::unix::fs::PermissionsExt as _;
use std::process::Command;

use cairn_core::Hash;
use cairn_db::Db;

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_finishes_in_flight_appends_checkpoints_and_releases_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("db");
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let log = dir.path().join("server.log");
    let token_arg = token_file.to_str().unwrap();
    let mut server = ServerProcess::start(
        &data,
        &[
            "--create-arity",
            "2",
            "--create-hash",
            "blake3",
            "--token-file",
            token_arg,
            "--durability-timeout",
            "300",
        ],
        &log,
    );

    // A second server on the same directory is refused while this one runs.
    let second = Command::new(env!("CARGO_BIN_EXE_cairn-server"))
        .arg(&data)
        .args(["--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!second.status.success());
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(stderr.contains("locked"), "{stderr}");

    let (acks, mut acked) = tokio::sync::watch::channel(0u64);
    let writers: Vec<_> = (0..8u64)
        .map(|w| {
            let client = server.client();
            let acks = acks.clone();
            tokio::spawn(async move {
                let mut mine: Vec<(u64, Hash)> = Vec::new();
                for n in 0.. {
                    let count = 1 + (n % 20);
                    let batch: Vec<Hash> = (0..count).map(|k| leaf(200 + w, n * 100 + k)).collect();
                    match client.try_post_binary(&batch, Some(TOKEN)).await {
                        Ok(reply) => {
                            let first = reply.ok()["first_index"].as_u64().unwrap();
                            mine.extend(
                                batch
                                    .iter()
                                    .enumerate()
                                    .map(|(k, v)| (first + k as u64, *v)),
                            );
                            acks.send_modify(|a| *a += 1);
                        }
                        Err(_) => break, // the server stopped accepting
                    }
                }
                mine
            })
        })
        .collect();
    drop(acks);
    acked.wait_for(|&n| n >= 40).await.unwrap();
    let status = tokio::task::spawn_blocking(move || {
        let status = server.terminate();
        (status, server)
    })
    .await
    .unwrap()
    .0;
    assert!(status.success(), "{status:?}");
    let mut all = Vec::new();
    for writer in writers {
        all.extend(writer.await.unwrap());
    }
    assert!(all.len() >= 40);

    let text = std::fs::read_to_string(&log).unwrap();
    for needle in [
        "listening",
        "SIGTERM",
        "flushed",
        "checkpoint written",
        "closed",
    ] {
        assert!(text.contains(needle), "the log lacks {needle:?}:\n{text}");
    }
    assert!(!text.contains(TOKEN), "the token leaked into the log");

    let db = Db::open(&data).expect("the directory is released");
    for (index, value) in &all {
        assert_eq!(db.index_of(value).unwrap(), Some(*index));
    }
    let stats = db.stats();
    assert_eq!(
        stats.store.checkpoint_size, stats.store.size,
        "checkpointed on shutdown"
    );
    db.close().unwrap();
}
