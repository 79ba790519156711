//! The witness tracker against the tree itself: witnesses after random
//! appends, marks, checkpoints and rewinds equal the tree's own proofs at
//! the adopted head, for both kinds and every hash; what a sync reads
//! (counted: only whole tiles, and after the first sync only the right
//! edge and tiles whose nodes changed); and refusals: a rewind past the
//! window, a wrong or short tile, a fork, a foreign or unsigned
//! checkpoint, and a changed persisted state; and the tracker in lockstep
//! with zcash's `shardtree` over a Poseidon imt.

mod refusals;
mod requests;
mod shardtree_lockstep;
mod witnesses;

use std::sync::Mutex;

use cairn_core::{Arity, Hash, HashKind, LeanImt, TreeConfig, TreeKind};
use cairn_tiles::{DirStore, ObjectError, TileSource, publish};

pub fn config(n: u64, hash: HashKind) -> TreeConfig {
    TreeConfig::new(Arity::new(n).unwrap(), hash)
}

pub fn imt(n: u64, hash: HashKind, depth: u32) -> TreeConfig {
    config(n, hash).with_kind(TreeKind::Fixed {
        depth,
        zero: [0; 32],
    })
}

/// Leaves every hash accepts (canonical field elements: a zero top byte).
pub fn leaves(seed: u64, count: u64) -> Vec<Hash> {
    (0..count)
        .map(|i| {
            let mut leaf = cairn_testkit::leaf(seed, i);
            leaf[0] = 0;
            leaf
        })
        .collect()
}

/// A tree and its tile store in a temporary directory.
#[allow(missing_debug_implementations)]
pub struct Published {
    pub tree: LeanImt,
    pub store: Counting,
    pub _dir: tempfile::TempDir,
}

impl Published {
    pub fn new(config: TreeConfig) -> Published {
        let dir = tempfile::tempdir().unwrap();
        Published {
            tree: LeanImt::new(config),
            store: Counting::new(DirStore::new(dir.path())),
            _dir: dir,
        }
    }

    /// Appends `leaves` and publishes the new head.
    pub fn grow(&mut self, leaves: &[Hash]) {
        self.tree.append_batch(leaves).unwrap();
        let snapshot = self.tree.snapshot();
        publish(&snapshot, &self.store.inner).unwrap();
    }
}

/// A store that counts what a reader fetches.
#[allow(missing_debug_implementations)]
pub struct Counting {
    pub inner: DirStore,
    pub log: Mutex<Vec<(String, usize)>>,
}

impl Counting {
    pub fn new(inner: DirStore) -> Counting {
        Counting {
            inner,
            log: Mutex::new(Vec::new()),
        }
    }

    /// What was fetched since the last call.
    pub fn take(&self) -> Vec<(String, usize)> {
        std::mem::take(&mut *self.log.lock().unwrap())
    }
}

impl TileSource for Counting {
    fn get(&self, path: &str, max_bytes: u64) -> Result<Vec<u8>, ObjectError> {
        let bytes = self.inner.get(path, max_bytes)?;
        self.log
            .lock()
            .unwrap()
            .push((path.to_owned(), bytes.len()));
        Ok(bytes)
    }

    fn location(&self) -> String {
        self.inner.location()
    }

    /// Logged as `bundle/{K}[a..b]` (a leaf tile inside a complete bundle).
    fn get_range(
        &self,
        path: &str,
        offset: u64,
        len: u64,
        whole: u64,
    ) -> Result<Vec<u8>, ObjectError> {
        let bytes = self.inner.get_range(path, offset, len, whole)?;
        let name = format!("{path}[{offset}..{}]", offset + len);
        self.log.lock().unwrap().push((name, bytes.len()));
        Ok(bytes)
    }
}
