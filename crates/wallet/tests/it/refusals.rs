//! Refusals: each leaves the tracker as it was.

use cairn_core::HashKind;
use cairn_note::Signer;
use cairn_tiles::{
    CHECKPOINT, PublishOptions, SignedBy, TileSink, TileSource, Unsigned, publish_with,
};
use cairn_wallet::{StateError, Tracker, WalletError, sync};

use crate::{Published, config, imt, leaves};

fn synced(marks: &[u64]) -> (Published, Tracker) {
    let config = config(2, HashKind::Poseidon);
    let mut published = Published::new(config);
    published.grow(&leaves(5, 700));
    let mut tracker = Tracker::new(config, 2).unwrap();
    for &m in marks {
        tracker.mark(m).unwrap();
    }
    sync(&mut tracker, &published.store, &Unsigned).unwrap();
    (published, tracker)
}

#[test]
fn a_rewind_past_the_window_is_refused_by_type() {
    let (mut published, mut tracker) = synced(&[3]);
    for block in 1..=4u64 {
        published.grow(&leaves(6 + block, 10));
        sync(&mut tracker, &published.store, &Unsigned).unwrap();
        tracker.checkpoint(block).unwrap();
    }
    assert_eq!(tracker.checkpoints(), vec![3, 4]);
    let before = tracker.to_bytes();
    assert_eq!(
        tracker.rewind(2),
        Err(WalletError::RewindBeyondWindow {
            block: 2,
            oldest: Some(3),
            window: 2
        })
    );
    assert_eq!(
        tracker.checkpoint(4),
        Err(WalletError::BlockOrder { block: 4, last: 4 })
    );
    assert_eq!(tracker.to_bytes(), before);
    tracker.rewind(3).unwrap();
    assert_eq!(tracker.head().size, 730);
    assert_eq!(
        tracker.witness(3).unwrap(),
        published.tree.at_size(730).unwrap().prove(3).unwrap()
    );
    // The store is ahead: following it again works from the rewound head.
    sync(&mut tracker, &published.store, &Unsigned).unwrap();
    assert_eq!(tracker.head().size, 740);
}

#[test]
fn a_changed_or_short_tile_is_refused_and_nothing_is_adopted() {
    let (mut published, mut tracker) = synced(&[100]);
    published.grow(&leaves(8, 300));
    let before = tracker.to_bytes();
    let object = published.store.get(CHECKPOINT, 1 << 16).unwrap();
    // A short tile.
    let mut plan = tracker.plan(&object, &Unsigned).unwrap();
    let first = plan.wanted()[0].clone();
    let got = plan.feed(&first.path, &[0; 31]);
    assert!(
        matches!(got, Err(WalletError::MalformedTile { got: 31, .. })),
        "{got:?}"
    );
    assert!(matches!(
        plan.feed("tile/0/999", &[0; 32]),
        Err(WalletError::UnexpectedTile { .. })
    ));
    // One changed node in each tile in turn: the sync is refused.
    for bad in 0..plan.wanted().len() {
        let mut plan = tracker.plan(&object, &Unsigned).unwrap();
        let wanted = plan.wanted();
        for (i, tile) in wanted.iter().enumerate() {
            let mut bytes = published.store.get(&tile.path, tile.max_bytes).unwrap();
            if i == bad {
                let last = bytes.len() - 1;
                bytes[last] ^= 1;
            }
            plan.feed(&tile.path, &bytes).unwrap();
        }
        let got = tracker.finish(plan);
        assert!(
            matches!(got, Err(WalletError::Mismatch { .. })),
            "tile {bad}: {got:?}"
        );
        assert_eq!(tracker.to_bytes(), before);
    }
    // An unfed tile.
    let plan = tracker.plan(&object, &Unsigned).unwrap();
    assert!(matches!(
        tracker.finish(plan),
        Err(WalletError::MissingTile { .. })
    ));
    sync(&mut tracker, &published.store, &Unsigned).unwrap();
}

#[test]
fn a_fork_a_step_back_and_a_foreign_tree_are_refused() {
    let (published, mut tracker) = synced(&[1]);
    // Another tree of the same size: a fork.
    let mut other = Published::new(tracker.config());
    other.grow(&leaves(99, 700));
    let got = sync(&mut tracker, &other.store, &Unsigned);
    assert!(
        matches!(got, Err(WalletError::Fork { size: 700, .. })),
        "{got:?}"
    );
    // A longer fork: its consistency proof from the adopted head fails.
    other.grow(&leaves(98, 10));
    let got = sync(&mut tracker, &other.store, &Unsigned);
    assert!(matches!(got, Err(WalletError::Mismatch { .. })), "{got:?}");
    // A shorter tree.
    let mut short = Published::new(tracker.config());
    short.grow(&leaves(5, 600));
    let got = sync(&mut tracker, &short.store, &Unsigned);
    assert_eq!(
        got,
        Err(WalletError::Behind {
            got: 600,
            have: 700
        })
    );
    // Another tree.
    let mut foreign = Published::new(imt(2, HashKind::Poseidon, 12));
    foreign.grow(&leaves(5, 700));
    let got = sync(&mut tracker, &foreign.store, &Unsigned);
    assert!(
        matches!(got, Err(WalletError::ForeignTree { .. })),
        "{got:?}"
    );
    assert_eq!(tracker.head().size, 700);
    drop(published);
}

#[test]
fn a_checkpoint_is_checked_against_the_wallets_keys() {
    let key = Signer::from_seed("example.org/notes", &[7; 32]).unwrap();
    let other = Signer::from_seed("example.org/notes", &[8; 32]).unwrap();
    let config = config(2, HashKind::Blake3);
    let mut published = Published::new(config);
    published.tree.append_batch(&leaves(1, 300)).unwrap();
    let snapshot = published.tree.snapshot();
    let options = PublishOptions {
        signer: Some(&other),
        ..PublishOptions::default()
    };
    publish_with(&snapshot, 300, &published.store.inner, &options).unwrap();
    let keys = SignedBy::new(vec![key.verifier()]).unwrap();
    let mut tracker = Tracker::new(config, 2).unwrap();
    let got = sync(&mut tracker, &published.store, &keys);
    assert!(matches!(got, Err(WalletError::Signature(_))), "{got:?}");
    // Signed by the trusted key: adopted.
    published.store.inner.put(CHECKPOINT, b"").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = cairn_tiles::DirStore::new(dir.path());
    let options = PublishOptions {
        signer: Some(&key),
        ..PublishOptions::default()
    };
    publish_with(&snapshot, 300, &store, &options).unwrap();
    tracker.mark(5).unwrap();
    sync(&mut tracker, &store, &keys).unwrap();
    assert_eq!(tracker.head().size, 300);
}

#[test]
fn a_changed_truncated_or_newer_state_is_refused() {
    let (mut published, mut tracker) = synced(&[0, 255, 699]);
    tracker.checkpoint(1).unwrap();
    published.grow(&leaves(3, 50));
    sync(&mut tracker, &published.store, &Unsigned).unwrap();
    let bytes = tracker.to_bytes();
    let back = Tracker::from_bytes(&bytes).unwrap();
    assert_eq!(back.witness(255), tracker.witness(255));
    for at in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[at] ^= 0x10;
        assert!(
            Tracker::from_bytes(&bad).is_err(),
            "byte {at} changed and accepted"
        );
    }
    for len in 0..bytes.len() {
        assert!(
            Tracker::from_bytes(&bytes[..len]).is_err(),
            "{len} bytes accepted"
        );
    }
    let mut newer = bytes.clone();
    newer[8] = 2;
    assert_eq!(
        Tracker::from_bytes(&newer).err(),
        Some(StateError::Version { got: 2, want: 1 })
    );
    let mut flipped = bytes.clone();
    let last = flipped.len() - 5;
    flipped[last] ^= 1;
    assert!(matches!(
        Tracker::from_bytes(&flipped),
        Err(StateError::Checksum { .. })
    ));
    // A node changed with the checksum made to match: its witness fails.
    let mut forged = bytes[..bytes.len() - 4].to_vec();
    let node = forged.len() - 1;
    forged[node] ^= 1;
    let sum = crc32c::crc32c(&forged);
    forged.extend_from_slice(&sum.to_be_bytes());
    assert!(
        matches!(
            Tracker::from_bytes(&forged),
            Err(StateError::Inconsistent { .. })
        ),
        "{:?}",
        Tracker::from_bytes(&forged)
    );
}
