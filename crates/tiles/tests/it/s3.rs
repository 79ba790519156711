//! Tiles on a real S3-protocol server (`s3s-fs` on 127.0.0.1, signed
//! requests) and read back over plain HTTP: publication, resumption from
//! the published checkpoint by a new client, a server killed mid-publish,
//! and objects tampered with on the server refused by name.

use std::time::Duration;

use cairn_core::{Arity, Hash, HashKind, LeanImt, TreeConfig};
use cairn_testkit::s3::{ACCESS_KEY, S3Server, SECRET_KEY};
use cairn_tiles::{
    CHECKPOINT, Checkpoint, Layout, Location, RemoteOptions, RemoteStore, TileError, TileSink as _,
    TileTree, publish, publish_at, read_checkpoint,
};

fn leaves(count: u64) -> Vec<Hash> {
    (0..count).map(|i| cairn_testkit::leaf(91, i)).collect()
}

fn config(n: u64) -> TreeConfig {
    TreeConfig::new(Arity::new(n).unwrap(), HashKind::Sha256)
}

fn options(server: &S3Server) -> RemoteOptions {
    RemoteOptions {
        s3_endpoint: Some(server.endpoint()),
        s3_credentials: Some((ACCESS_KEY.into(), SECRET_KEY.into())),
        max_retries: 20,
        retry_timeout: Duration::from_secs(20),
        first_backoff: Duration::from_millis(20),
        max_backoff: Duration::from_millis(500),
        request_timeout: Duration::from_secs(5),
        bulk_in_flight: cairn_tiles::DEFAULT_IN_FLIGHT,
        bulk_bundles: true,
    }
}

fn store(server: &S3Server, url: &str) -> RemoteStore {
    RemoteStore::open(&Location::parse(url).unwrap(), &options(server)).unwrap()
}

/// Every tile the store's checkpoint names is on the server's disk, whole.
fn assert_checkpoint_complete(server: &S3Server, bucket_prefix: &str) -> Option<Checkpoint> {
    let dir = server.dir().join(bucket_prefix);
    let bytes = std::fs::read(dir.join(CHECKPOINT)).ok()?;
    let checkpoint = Checkpoint::decode(&bytes).unwrap();
    let layout = checkpoint.layout();
    let size = checkpoint.head.size;
    for tile in layout.tiles(size) {
        // A leaf tile inside a complete bundle is a range of the bundle.
        let (path, want) = match layout.in_bundle(size, tile) {
            Some(range) => (range.path, range.bundle_bytes),
            None => (layout.path(tile), tile.width * 32),
        };
        let path = dir.join(path);
        let len = std::fs::metadata(&path)
            .unwrap_or_else(|_| panic!("the checkpoint names {} but it is missing", path.display()))
            .len();
        assert_eq!(len, want, "{}", path.display());
    }
    Some(checkpoint)
}

#[test]
fn tiles_published_to_s3_prove_like_the_tree_and_resume_from_the_checkpoint() {
    let Some(server) = S3Server::start("tiles") else {
        return;
    };
    let all = leaves(5_000);
    let mut tree = LeanImt::from_leaves(config(4), &all[..2_000]).unwrap();
    let first = publish(&tree.snapshot(), &store(&server, "s3://tiles/a/b")).unwrap();
    let layout = Layout::new(config(4).arity, HashKind::Sha256);
    assert_eq!(first.objects, layout.tiles(2_000).len() as u64 + 1);
    assert_checkpoint_complete(&server, "tiles/a/b").unwrap();
    // A new client (as after a restart) resumes from the checkpoint: it
    // writes only what changed.
    tree.append_batch(&all[2_000..]).unwrap();
    let second = publish(&tree.snapshot(), &store(&server, "s3://tiles/a/b")).unwrap();
    assert_eq!(
        second.objects,
        layout.tiles_since(2_000, 5_000).len() as u64 + 1
    );
    let s3 = store(&server, "s3://tiles/a/b");
    let checkpoint = read_checkpoint(&s3).unwrap();
    let snapshot = tree.snapshot();
    assert_eq!(checkpoint.head, snapshot.head());
    let mut client = TileTree::new(config(4), checkpoint.head, &s3);
    for index in [0, 255, 256, 1_999, 2_000, 4_999] {
        assert_eq!(client.prove(index).unwrap(), snapshot.prove(index).unwrap());
    }
    let old = snapshot.view(2_000).unwrap().head();
    assert_eq!(
        client.prove_consistency(&old).unwrap(),
        snapshot.prove_consistency(2_000, 5_000).unwrap()
    );
    // The same objects over plain HTTP GET, as a CDN in front of a public
    // bucket serves them.
    let http = cairn_testkit::http::StaticServer::start(server.dir());
    let url = format!("{}/tiles/a/b", http.url());
    let over_http = RemoteStore::open(&Location::parse(&url).unwrap(), &options(&server)).unwrap();
    let checkpoint = read_checkpoint(&over_http).unwrap();
    let mut client = TileTree::new(config(4), checkpoint.head, &over_http);
    assert_eq!(client.prove(4_321).unwrap(), snapshot.prove(4_321).unwrap());
    assert!(http.requests() >= 2);
}

#[test]
fn a_server_killed_mid_publish_leaves_no_checkpoint_naming_a_missing_tile() {
    let Some(mut server) = S3Server::start("tiles") else {
        return;
    };
    // 200,000 leaves at N = 2: about 790 tiles, many round trips.
    let all = leaves(200_000);
    let mut tree = LeanImt::from_leaves(config(2), &all[..1_000]).unwrap();
    publish(&tree.snapshot(), &store(&server, "s3://tiles/x")).unwrap();
    tree.append_batch(&all[1_000..]).unwrap();
    let snapshot = tree.snapshot();
    let bucket = server.dir().join("tiles/x/tile/0");
    let before = count_files(&bucket);
    let publisher = {
        let snapshot = snapshot.clone();
        let s3 = store(&server, "s3://tiles/x");
        std::thread::spawn(move || publish(&snapshot, &s3))
    };
    // Kill it as soon as the new publication has written a tile.
    let started = std::time::Instant::now();
    while count_files(&bucket) <= before && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(2));
    }
    server.kill();
    // Down: the checkpoint on disk is still the old one, complete.
    let during = assert_checkpoint_complete(&server, "tiles/x").unwrap();
    assert_eq!(during.head.size, 1_000);
    std::thread::sleep(Duration::from_millis(300));
    server.restart();
    // The publisher's requests were retried with backoff: it finishes.
    let done = publisher.join().unwrap().unwrap();
    assert!(done.objects > 1);
    let after = assert_checkpoint_complete(&server, "tiles/x").unwrap();
    assert_eq!(after.head, snapshot.head());
    let s3 = store(&server, "s3://tiles/x");
    let mut client = TileTree::new(config(2), after.head, &s3);
    // Leaf 150,000 is inside bundle 2: its leaf tile is a ranged GET.
    assert_eq!(
        client.prove(150_000).unwrap(),
        snapshot.prove(150_000).unwrap()
    );
    assert!(
        client
            .fetched()
            .iter()
            .any(|(o, _)| o.starts_with("bundle/002[")),
        "{:?}",
        client.fetched()
    );
}

#[test]
fn a_server_down_past_the_retries_fails_the_publication_and_the_next_one_completes_it() {
    let Some(mut server) = S3Server::start("tiles") else {
        return;
    };
    let all = leaves(200_000);
    let mut tree = LeanImt::from_leaves(config(2), &all[..3_000]).unwrap();
    publish(&tree.snapshot(), &store(&server, "s3://tiles")).unwrap();
    tree.append_batch(&all[3_000..]).unwrap();
    let mut impatient = options(&server);
    impatient.max_retries = 2;
    impatient.retry_timeout = Duration::from_millis(200);
    let bucket = server.dir().join("tiles/tile/0");
    let before = count_files(&bucket);
    let publisher = {
        let snapshot = tree.snapshot();
        let s3 = RemoteStore::open(&Location::parse("s3://tiles").unwrap(), &impatient).unwrap();
        std::thread::spawn(move || publish(&snapshot, &s3).map_err(|e| e.to_string()))
    };
    let started = std::time::Instant::now();
    while count_files(&bucket) <= before && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(2));
    }
    server.kill();
    let error = publisher.join().unwrap().unwrap_err();
    assert!(
        error.contains("s3://tiles/tile/") || error.contains("s3://tiles/bundle/"),
        "names the object: {error}"
    );
    assert_eq!(
        assert_checkpoint_complete(&server, "tiles")
            .unwrap()
            .head
            .size,
        3_000
    );
    let s3 = RemoteStore::open(&Location::parse("s3://tiles").unwrap(), &impatient).unwrap();
    server.restart();
    let done = publish(&tree.snapshot(), &s3).unwrap();
    assert!(done.objects > 1);
    assert_eq!(
        assert_checkpoint_complete(&server, "tiles").unwrap().head,
        tree.snapshot().head()
    );
}

#[test]
fn tampered_objects_on_the_server_are_refused_by_name_and_never_cached() {
    let Some(server) = S3Server::start("tiles") else {
        return;
    };
    let tree = LeanImt::from_leaves(config(16), &leaves(3_000)).unwrap();
    let mut tree = tree;
    let snapshot = tree.snapshot();
    let s3 = store(&server, "s3://tiles/t");
    publish(&snapshot, &s3).unwrap();
    let head = snapshot.head();
    let path = "tile/0/002";
    let good = std::fs::read(server.dir().join("tiles/t").join(path)).unwrap();
    // Wrong bytes: the proof fails, naming the tiles it read.
    let mut wrong = good.clone();
    wrong[7] ^= 0x40;
    s3.put(path, &wrong).unwrap();
    let mut client = TileTree::new(config(16), head, &s3);
    let err = client.prove(600).unwrap_err();
    assert!(
        matches!(&err, TileError::Mismatch { objects, .. } if objects.iter().any(|o| o == path)),
        "{err}"
    );
    assert_eq!(client.cached_tiles(), 0);
    // Truncated.
    s3.put(path, &good[..1000]).unwrap();
    let err = client.prove(600).unwrap_err();
    assert!(
        matches!(&err, TileError::Malformed { path: p, got: 1000, .. } if p == path),
        "{err}"
    );
    // Oversized: refused from the announced length.
    let mut long = good.clone();
    long.extend_from_slice(&[0; 64]);
    s3.put(path, &long).unwrap();
    let err = client.prove(600).unwrap_err();
    assert!(
        matches!(&err, TileError::Fetch(e) if e.too_large && e.path == path),
        "{err}"
    );
    assert!(err.to_string().contains("s3://tiles/t/tile/0/002"), "{err}");
    // Put right: proven, and now cached.
    s3.put(path, &good).unwrap();
    assert_eq!(client.prove(600).unwrap(), snapshot.prove(600).unwrap());
    assert!(client.cached_tiles() > 0);
    // A checkpoint that is not one is refused naming the store.
    s3.put(CHECKPOINT, b"cairn tiles v1\nhello\n").unwrap();
    let err = read_checkpoint(&s3).unwrap_err();
    assert!(err.to_string().contains("s3://tiles/t/checkpoint"), "{err}");
    // And a publisher will not write over a store it cannot read.
    assert!(publish_at(&snapshot, 3_000, &s3).is_err());
}

fn count_files(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .filter_map(Result::ok)
            .map(|e| {
                if e.path().is_dir() {
                    count_files(&e.path())
                } else {
                    1
                }
            })
            .sum()
    })
}

#[test]
fn a_signed_checkpoint_on_s3_is_adopted_with_its_key_and_refused_when_replaced() {
    let Some(server) = S3Server::start("tiles") else {
        return;
    };
    let key = cairn_note::Signer::from_seed("example.org/s3", &[8; 32]).unwrap();
    let mut tree = LeanImt::from_leaves(config(2), &leaves(1_200)).unwrap();
    let snapshot = tree.snapshot();
    let options = cairn_tiles::PublishOptions {
        signer: Some(&key),
        ..cairn_tiles::PublishOptions::default()
    };
    let s3 = store(&server, "s3://tiles/signed");
    cairn_tiles::publish_with(&snapshot, 1_200, &s3, &options).unwrap();
    let trusted = || {
        cairn_tiles::TilesUpstream::new(
            Box::new(store(&server, "s3://tiles/signed")),
            Box::new(cairn_tiles::SignedBy::new(vec![key.verifier()]).unwrap()),
        )
    };
    let mut mirror = crate::mirror::Memory::new(config(2));
    let done = cairn_tiles::catch_up(&mut trusted(), &mut mirror, 500).unwrap();
    assert_eq!(done.head, tree.head());
    // Someone with write access to the bucket replaces the checkpoint
    // with an unsigned one of another tree: refused, nothing adopted.
    let mut other = LeanImt::from_leaves(config(2), &leaves(1_300)[100..]).unwrap();
    let forged = Checkpoint {
        tree: config(2),
        head: other.head(),
    };
    s3.put(CHECKPOINT, forged.encode().as_bytes()).unwrap();
    let err = cairn_tiles::catch_up(&mut trusted(), &mut mirror, 500).unwrap_err();
    assert!(
        err.to_string().contains("s3://tiles/signed/checkpoint")
            && err.to_string().contains("unsigned"),
        "{err}"
    );
    assert_eq!(mirror.snapshot.head(), tree.head());
}
