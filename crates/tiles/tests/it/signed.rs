//! Signed tile checkpoints: a publisher with a key writes cairn's signed
//! checkpoint, a mirror holding the verifier key adopts it, and a mirror
//! refuses, adopting nothing and naming the object, a checkpoint that is
//! unsigned, signed by another key, or whose signature or tree line was
//! changed. A publisher never unsigns a signed store.

use cairn_core::LeanImt;
use cairn_note::{Signer, Verifier};
use cairn_tiles::{
    CHECKPOINT, Checkpoint, CheckpointSignature, DirStore, MirrorError, PublishError,
    PublishOptions, SignedBy, TileSink as _, TilesUpstream, Unsigned, catch_up, publish,
    publish_with, read_checkpoint, read_checkpoint_checked,
};

use crate::mirror::{Memory, config, imt, leaves};

fn signer(name: &str, seed: u8) -> Signer {
    Signer::from_seed(name, &[seed; 32]).unwrap()
}

fn trusting(dir: &std::path::Path, keys: &[Verifier]) -> TilesUpstream {
    TilesUpstream::new(
        Box::new(DirStore::new(dir)),
        Box::new(SignedBy::new(keys.to_vec()).unwrap()),
    )
}

fn publish_signed(tree: &mut LeanImt, store: &DirStore, key: &Signer) -> cairn_tiles::Published {
    let snapshot = tree.snapshot();
    let options = PublishOptions {
        signer: Some(key),
        ..PublishOptions::default()
    };
    publish_with(&snapshot, snapshot.size(), store, &options).unwrap()
}

#[track_caller]
fn refused(err: MirrorError, wanted: &[&str]) {
    let text = err.to_string();
    assert!(matches!(err, MirrorError::Refused { .. }), "{text}");
    assert!(
        text.contains(&format!("/{CHECKPOINT}")),
        "names the object: {text}"
    );
    for want in wanted {
        assert!(text.contains(want), "{text:?} does not say {want:?}");
    }
}

/// A fixed-depth tree's signed store: its checkpoint names the tree
/// (`kind=imt` with depth and zero), the empty tree's too (it has a root),
/// a mirror with the key follows it from empty, and a note whose tree line
/// says another depth is refused.
#[test]
fn a_signed_fixed_depth_store_is_followed_from_its_empty_tree() {
    let key = signer("example.org/pool", 5);
    let dir = tempfile::tempdir().unwrap();
    let store = DirStore::new(dir.path());
    let all = leaves(12, 1_500);
    let mut tree = LeanImt::new(imt(2));
    publish_signed(&mut tree, &store, &key);
    let text = std::fs::read_to_string(dir.path().join(CHECKPOINT)).unwrap();
    assert!(
        text.contains("\ncairn-tree kind=imt arity=2 hash=blake3 depth=15 zero=0x2121"),
        "{text}"
    );
    let head = cairn_note::open_head(&text, &key.verifier()).unwrap();
    assert_eq!((head.size, Some(head.root)), (0, tree.root()));
    let mut mirror = Memory::new(imt(2));
    let done = catch_up(
        &mut trusting(dir.path(), &[key.verifier()]),
        &mut mirror,
        512,
    )
    .unwrap();
    assert_eq!((done.head, done.adopted), (tree.head(), 0));
    tree.append_batch(&all).unwrap();
    publish_signed(&mut tree, &store, &key);
    let done = catch_up(
        &mut trusting(dir.path(), &[key.verifier()]),
        &mut mirror,
        512,
    )
    .unwrap();
    assert_eq!((done.head, done.adopted), (tree.head(), 1_500));
    // The same head under another depth's tree line: the signature fails.
    let text = std::fs::read_to_string(dir.path().join(CHECKPOINT)).unwrap();
    store
        .put(CHECKPOINT, text.replace("depth=15", "depth=16").as_bytes())
        .unwrap();
    let err = catch_up(
        &mut trusting(dir.path(), &[key.verifier()]),
        &mut mirror,
        512,
    )
    .unwrap_err();
    refused(err, &["bad signature"]);
}

#[test]
fn a_signed_store_is_adopted_with_its_key_and_refused_otherwise() {
    let key = signer("example.org/tiles", 1);
    let dir = tempfile::tempdir().unwrap();
    let store = DirStore::new(dir.path());
    let all = leaves(11, 3_000);
    let mut tree = LeanImt::from_leaves(config(4), &all[..2_000]).unwrap();
    publish_signed(&mut tree, &store, &key);
    let object = std::fs::read(dir.path().join(CHECKPOINT)).unwrap();
    let text = String::from_utf8(object.clone()).unwrap();
    // The object is the note GET /v1/checkpoint serves: it opens with the
    // note verifier and decodes to the tree's head.
    let head = cairn_note::open_head(&text, &key.verifier()).unwrap();
    assert_eq!((head.size, Some(head.root)), (2_000, tree.root()));
    assert_eq!(Checkpoint::decode(&object).unwrap().head, tree.head());

    // Refused, nothing adopted, the object named: another key, the
    // unsigned form, a changed signature, a changed tree line, a changed
    // size.
    let mut mirror = Memory::new(config(4));
    let other = signer("example.org/tiles", 2).verifier();
    let err = catch_up(&mut trusting(dir.path(), &[other]), &mut mirror, 512).unwrap_err();
    refused(err, &["signature", "no known signature"]);
    let cases: [(String, &[&str]); 4] = [
        (
            Checkpoint::decode(&object).unwrap().encode(),
            &["the checkpoint is unsigned"],
        ),
        (
            {
                // The last base64 character of the signature, changed.
                let at = text.trim_end().len() - 2;
                let mut bytes = text.clone().into_bytes();
                bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
                String::from_utf8(bytes).unwrap()
            },
            &["bad signature"],
        ),
        (text.replace("arity=4", "arity=2"), &["bad signature"]),
        (text.replace("\n2000\n", "\n1999\n"), &["bad signature"]),
    ];
    for (bad, wanted) in cases {
        store.put(CHECKPOINT, bad.as_bytes()).unwrap();
        let err = catch_up(
            &mut trusting(dir.path(), &[key.verifier()]),
            &mut mirror,
            512,
        )
        .unwrap_err();
        refused(err, wanted);
        assert_eq!(mirror.snapshot.size(), 0, "nothing adopted");
    }
    store.put(CHECKPOINT, &object).unwrap();

    // The right key (beside another): adopted, and followed as it grows.
    let keys = [other_key(), key.verifier()];
    let done = catch_up(&mut trusting(dir.path(), &keys), &mut mirror, 512).unwrap();
    assert_eq!((done.head, done.adopted), (tree.head(), 2_000));
    tree.append_batch(&all[2_000..]).unwrap();
    publish_signed(&mut tree, &store, &key);
    let done = catch_up(&mut trusting(dir.path(), &keys), &mut mirror, 512).unwrap();
    assert_eq!((done.head, done.adopted), (tree.head(), 1_000));

    // A reader without a key reads the signed store as it always did.
    let done = catch_up(
        &mut TilesUpstream::new(Box::new(DirStore::new(dir.path())), Box::new(Unsigned)),
        &mut mirror,
        512,
    )
    .unwrap();
    assert_eq!(done.head, tree.head());
    assert_eq!(read_checkpoint(&store).unwrap().head, tree.head());
    let checked = read_checkpoint_checked(&store, &SignedBy::new(keys.to_vec()).unwrap());
    assert_eq!(checked.unwrap().head, tree.head());
    let err = read_checkpoint_checked(&store, &SignedBy::new(vec![other_key()]).unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("checkpoint: signature: no known signature"),
        "{err}"
    );
}

fn other_key() -> Verifier {
    signer("example.org/elsewhere", 3).verifier()
}

#[test]
fn a_fork_of_a_signed_store_is_refused_even_when_properly_signed() {
    // A signature vouches for who published a head, not that it extends
    // the one adopted: a signed fork (a rollback below a published size,
    // republished into a fresh store) is still refused.
    let key = signer("example.org/tiles", 1);
    let first = tempfile::tempdir().unwrap();
    let mut tree = LeanImt::from_leaves(config(2), &leaves(1, 1_500)).unwrap();
    publish_signed(&mut tree, &DirStore::new(first.path()), &key);
    let mut mirror = Memory::new(config(2));
    catch_up(
        &mut trusting(first.path(), &[key.verifier()]),
        &mut mirror,
        512,
    )
    .unwrap();
    let mut forked_leaves = leaves(1, 1_000);
    forked_leaves.extend(leaves(2, 1_000));
    let mut forked = LeanImt::from_leaves(config(2), &forked_leaves).unwrap();
    let second = tempfile::tempdir().unwrap();
    publish_signed(&mut forked, &DirStore::new(second.path()), &key);
    let err = catch_up(
        &mut trusting(second.path(), &[key.verifier()]),
        &mut mirror,
        512,
    )
    .unwrap_err();
    refused(err, &["FORK", "does not extend"]);
    assert_eq!(mirror.snapshot.head(), tree.head());
}

#[test]
fn a_publisher_signs_an_unsigned_store_but_never_unsigns_a_signed_one() {
    let key = signer("example.org/tiles", 1);
    let dir = tempfile::tempdir().unwrap();
    let store = DirStore::new(dir.path());
    let all = leaves(4, 900);
    let mut tree = LeanImt::from_leaves(config(3), &all[..600]).unwrap();
    publish(&tree.snapshot(), &store).unwrap();
    assert_eq!(
        cairn_tiles::signers(&std::fs::read(dir.path().join(CHECKPOINT)).unwrap()),
        None
    );
    // With a key, the next publication (even at the same size) signs.
    let again = publish_signed(&mut tree, &store, &key);
    assert_eq!(again.objects, 1, "the checkpoint only");
    let object = std::fs::read(dir.path().join(CHECKPOINT)).unwrap();
    assert_eq!(
        cairn_tiles::signers(&object),
        Some(vec![format!("example.org/tiles+{:08x}", key.id())])
    );
    // Without the key, it refuses to replace the signed checkpoint.
    tree.append_batch(&all[600..]).unwrap();
    let err = publish(&tree.snapshot(), &store).unwrap_err();
    assert!(matches!(err, PublishError::WouldUnsign { .. }), "{err}");
    assert!(err.to_string().contains("example.org/tiles+"), "{err}");
    assert_eq!(std::fs::read(dir.path().join(CHECKPOINT)).unwrap(), object);
    SignedBy::new(vec![key.verifier()])
        .unwrap()
        .verify_checkpoint_signature(&object, &Checkpoint::decode(&object).unwrap())
        .unwrap();
}

#[test]
fn a_signed_publication_of_the_empty_tree_writes_nothing() {
    let key = signer("example.org/tiles", 1);
    let dir = tempfile::tempdir().unwrap();
    let store = DirStore::new(dir.path());
    let mut tree = LeanImt::new(config(2));
    let done = publish_signed(&mut tree, &store, &key);
    assert_eq!(done.objects, 0);
    assert!(!dir.path().join(CHECKPOINT).exists());
}

#[test]
fn the_pin_hook_runs_before_the_checkpoint_and_can_stop_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = DirStore::new(dir.path());
    let mut tree = LeanImt::from_leaves(config(2), &leaves(6, 300)).unwrap();
    let snapshot = tree.snapshot();
    let seen = std::sync::Mutex::new(Vec::new());
    let refuse = |head: &cairn_core::TreeHead| {
        // The tiles are durable by now; the checkpoint is not written yet.
        assert!(dir.path().join("tile/0/000").exists());
        assert!(!dir.path().join(CHECKPOINT).exists());
        seen.lock().unwrap().push(*head);
        Err("rolled back meanwhile".into())
    };
    let options = PublishOptions {
        before_checkpoint: Some(&refuse),
        ..PublishOptions::default()
    };
    let err = publish_with(&snapshot, 300, &store, &options).unwrap_err();
    assert!(
        err.to_string()
            .contains("the head of 300 leaves cannot be published: rolled back meanwhile"),
        "{err}"
    );
    assert!(!dir.path().join(CHECKPOINT).exists());
    assert_eq!(*seen.lock().unwrap(), vec![snapshot.head()]);
    let accept = |_: &cairn_core::TreeHead| Ok(());
    let options = PublishOptions {
        before_checkpoint: Some(&accept),
        ..PublishOptions::default()
    };
    publish_with(&snapshot, 300, &store, &options).unwrap();
    assert_eq!(read_checkpoint(&store).unwrap().head, snapshot.head());
}
