//! The persisted state: versioned, checksummed bytes a wallet keeps
//! anywhere (a file, IndexedDB). Layout (docs/spec.md, "Wallet state"),
//! integers big-endian:
//!
//! ```text
//! magic "cairnwlt" | version u8 = 1
//! arity u8 | hash id u8 | kind u8 (0 lean, 1 imt) [| depth u8 | zero 32]
//! window u32
//! head | marks
//! checkpoints u32, each: block u64 | head | marks
//! nodes u32, each: level u8 | index u64 | node 32
//! crc32c u32 of every byte before it
//! head  = size u64 | 0 (no root) or 1 followed by the root (32)
//! marks = count u32 | leaf indices u64, strictly increasing
//! ```
//!
//! The decoder refuses every byte string the encoder would not write, and
//! then recomputes every witness at every stored head from the stored
//! nodes: a state whose witnesses do not verify is refused too.

#![deny(clippy::indexing_slicing, clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use cairn_core::{Arity, Hash, HashKind, TreeConfig, TreeHead, TreeKind};

use crate::error::{StateError, WalletError};
use crate::nodes::{Mode, is_final};
use crate::tracker::{Retained, Tracker};

/// The first bytes of a persisted state.
pub const STATE_MAGIC: &[u8; 8] = b"cairnwlt";
/// The state version this build writes and reads.
pub const STATE_VERSION: u8 = 1;

impl Tracker {
    /// The tracker's state as bytes ([`Tracker::from_bytes`] reads them).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.nodes.len() * 41);
        out.extend_from_slice(STATE_MAGIC);
        out.push(STATE_VERSION);
        let c = self.config;
        out.push(u8::try_from(c.arity.get()).expect("arity at most 16"));
        out.push(c.hash.id());
        match c.kind {
            TreeKind::Fixed { depth, zero } => {
                out.push(1);
                out.push(u8::try_from(depth).expect("depth at most 64"));
                out.extend_from_slice(&zero);
            }
            _ => out.push(0),
        }
        out.extend_from_slice(&u32::try_from(self.window).unwrap_or(u32::MAX).to_be_bytes());
        put_head(&mut out, &self.head);
        put_marks(&mut out, &self.marked);
        put_u32(&mut out, self.checkpoints.len());
        for c in &self.checkpoints {
            out.extend_from_slice(&c.block.to_be_bytes());
            put_head(&mut out, &c.head);
            put_marks(&mut out, &c.marked);
        }
        put_u32(&mut out, self.nodes.len());
        for ((level, index), node) in &self.nodes {
            out.push(u8::try_from(*level).expect("a level of a u64-sized tree"));
            out.extend_from_slice(&index.to_be_bytes());
            out.extend_from_slice(node);
        }
        let sum = crc32c::crc32c(&out);
        out.extend_from_slice(&sum.to_be_bytes());
        out
    }

    /// Reads a state [`Tracker::to_bytes`] wrote, refusing (and naming
    /// why) bytes that are truncated, of another version, changed (the
    /// checksum), outside the encoding, or whose witnesses do not verify.
    pub fn from_bytes(bytes: &[u8]) -> Result<Tracker, StateError> {
        let body_len = bytes.len().checked_sub(4).ok_or(StateError::Truncated {
            got: bytes.len(),
            want: STATE_MAGIC.len() + 1 + 4,
        })?;
        let (body, sum) = bytes.split_at(body_len);
        let mut r = Reader { bytes: body, at: 0 };
        let magic = r.take(STATE_MAGIC.len())?;
        if magic != STATE_MAGIC {
            return Err(StateError::Magic {
                got: magic.to_vec(),
                want: STATE_MAGIC.to_vec(),
            });
        }
        let version = r.u8()?;
        if version != STATE_VERSION {
            return Err(StateError::Version {
                got: version,
                want: STATE_VERSION,
            });
        }
        let stored = u32::from_be_bytes(sum.try_into().map_err(|_| StateError::Truncated {
            got: bytes.len(),
            want: body_len + 4,
        })?);
        let computed = crc32c::crc32c(body);
        if stored != computed {
            return Err(StateError::Checksum {
                got: stored,
                want: computed,
            });
        }
        let config = r.config()?;
        let window = r.u32()?;
        if window == 0 {
            return Err(field("window", 0, "at least 1"));
        }
        let mut tracker =
            Tracker::new(config, window as usize).map_err(|_| field("kind", 2, "0 or 1"))?;
        tracker.head = r.head(&config)?;
        tracker.marked = r.marks(&config)?;
        let count = r.u32()?;
        if count > window {
            return Err(field("checkpoints", count, "at most the window"));
        }
        let mut checkpoints = VecDeque::new();
        let mut last: Option<u64> = None;
        for _ in 0..count {
            let block = r.u64()?;
            if last.is_some_and(|last| block <= last) {
                return Err(field("checkpoint block", block, "above the one before"));
            }
            last = Some(block);
            let head = r.head(&config)?;
            if head.size > tracker.head.size {
                return Err(field(
                    "checkpoint size",
                    head.size,
                    "at most the adopted head's",
                ));
            }
            let marked = r.marks(&config)?;
            checkpoints.push_back(Retained {
                block,
                head,
                marked,
                keys: BTreeSet::new(),
            });
        }
        tracker.checkpoints = checkpoints;
        let count = r.u32()?;
        let mut nodes = BTreeMap::new();
        let mut last: Option<(u32, u64)> = None;
        for _ in 0..count {
            let key = (u32::from(r.u8()?), r.u64()?);
            if last.is_some_and(|last| key <= last) {
                return Err(field("node", format!("{key:?}"), "above the one before"));
            }
            last = Some(key);
            if !is_final(config.arity, tracker.head.size, key.0, key.1) {
                return Err(field(
                    "node",
                    format!("{key:?}"),
                    "a final node of the adopted head",
                ));
            }
            let node = r.hash()?;
            if !config.hash.accepts(&node) {
                return Err(field(
                    "node",
                    cairn_core::hex::to_hex(&node),
                    "a value the hash accepts",
                ));
            }
            nodes.insert(key, node);
        }
        if r.at != body.len() {
            return Err(StateError::Trailing {
                extra: body.len() - r.at,
            });
        }
        tracker.nodes = nodes;
        tracker.keys = tracker.recheck(&tracker.head, &tracker.marked)?;
        for at in 0..tracker.checkpoints.len() {
            let (head, marked) = match tracker.checkpoints.get(at) {
                Some(c) => (c.head, c.marked.clone()),
                None => break,
            };
            let keys = tracker.recheck(&head, &marked)?;
            if let Some(c) = tracker.checkpoints.get_mut(at) {
                c.keys = keys;
            }
        }
        Ok(tracker)
    }

    /// The keys the witnesses of `marked` at `head` read, each witness
    /// verified; a mark the nodes cannot prove is one not synced yet.
    fn recheck(
        &self,
        head: &TreeHead,
        marked: &BTreeSet<u64>,
    ) -> Result<BTreeSet<(u32, u64)>, StateError> {
        let mut keys = BTreeSet::new();
        for &index in marked.iter().filter(|&&i| i < head.size) {
            let mut hits = BTreeSet::new();
            let mut found = HashMap::new();
            let mut source = self.source(head.size, &mut found, Mode::Record(&mut hits));
            match self.witness_from(index, head.size, &mut source) {
                Ok(proof) => {
                    proof.verify_with(&self.config, head).map_err(|reason| {
                        StateError::Inconsistent {
                            size: head.size,
                            index,
                            reason: reason.to_string(),
                        }
                    })?;
                    keys.extend(hits);
                }
                Err(WalletError::NotSynced { .. }) => {}
                Err(e) => {
                    return Err(StateError::Inconsistent {
                        size: head.size,
                        index,
                        reason: e.to_string(),
                    });
                }
            }
        }
        if head.size > 0 {
            let mut found = HashMap::new();
            let mut source = self.source(head.size, &mut found, Mode::Record(&mut keys));
            self.record_frontier(head.size, &mut source)
                .map_err(|_| StateError::Inconsistent {
                    size: head.size,
                    index: head.size - 1,
                    reason: "the state lacks a node of the head's frontier".into(),
                })?;
        }
        Ok(keys)
    }
}

fn field(field: &'static str, got: impl ToString, want: &'static str) -> StateError {
    StateError::Field {
        field,
        got: got.to_string(),
        want,
    }
}

fn put_u32(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(
        &u32::try_from(n)
            .expect("fewer than 2^32 entries")
            .to_be_bytes(),
    );
}

fn put_head(out: &mut Vec<u8>, head: &TreeHead) {
    out.extend_from_slice(&head.size.to_be_bytes());
    match head.root {
        Some(root) => {
            out.push(1);
            out.extend_from_slice(&root);
        }
        None => out.push(0),
    }
}

fn put_marks(out: &mut Vec<u8>, marks: &BTreeSet<u64>) {
    put_u32(out, marks.len());
    for index in marks {
        out.extend_from_slice(&index.to_be_bytes());
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], StateError> {
        let end = self.at.saturating_add(n);
        let out = self.bytes.get(self.at..end).ok_or(StateError::Truncated {
            got: self.bytes.len() + 4,
            want: end + 4,
        })?;
        self.at = end;
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, StateError> {
        Ok(self.take(1)?.first().copied().unwrap_or_default())
    }

    fn u32(&mut self) -> Result<u32, StateError> {
        let mut b = [0; 4];
        b.copy_from_slice(self.take(4)?);
        Ok(u32::from_be_bytes(b))
    }

    fn u64(&mut self) -> Result<u64, StateError> {
        let mut b = [0; 8];
        b.copy_from_slice(self.take(8)?);
        Ok(u64::from_be_bytes(b))
    }

    fn hash(&mut self) -> Result<Hash, StateError> {
        let mut b = [0; 32];
        b.copy_from_slice(self.take(32)?);
        Ok(b)
    }

    fn config(&mut self) -> Result<TreeConfig, StateError> {
        let arity = self.u8()?;
        let arity = Arity::new(u64::from(arity)).map_err(|_| field("arity", arity, "2..=16"))?;
        let id = self.u8()?;
        let hash = HashKind::from_id(id).ok_or_else(|| field("hash", id, "a hash id 1..=5"))?;
        let kind = match self.u8()? {
            0 => TreeKind::Lean,
            1 => {
                let depth = u32::from(self.u8()?);
                let zero = self.hash()?;
                TreeKind::Fixed { depth, zero }
            }
            other => return Err(field("kind", other, "0 (lean) or 1 (imt)")),
        };
        let config = TreeConfig::new(arity, hash).with_kind(kind);
        config
            .check()
            .map_err(|e| field("kind", e, "a fixed-depth tree of the hash"))?;
        Ok(config)
    }

    fn head(&mut self, config: &TreeConfig) -> Result<TreeHead, StateError> {
        let size = self.u64()?;
        if config.capacity().is_some_and(|c| size > c) {
            return Err(field("size", size, "at most the tree's capacity"));
        }
        let root = match self.u8()? {
            0 => None,
            1 => Some(self.hash()?),
            other => return Err(field("root flag", other, "0 or 1")),
        };
        let wants_root = size > 0 || config.empty_has_root();
        if root.is_some() != wants_root {
            return Err(field(
                "root flag",
                u8::from(root.is_some()),
                "a root exactly when the head has one",
            ));
        }
        if let Some(root) = root
            && !config.hash.accepts(&root)
        {
            return Err(field(
                "root",
                cairn_core::hex::to_hex(&root),
                "a value the hash accepts",
            ));
        }
        if size == 0 && root.is_some() && root != config.empty_root() {
            return Err(field(
                "root",
                "another value",
                "the empty tree's root at size 0",
            ));
        }
        Ok(TreeHead { size, root })
    }

    fn marks(&mut self, config: &TreeConfig) -> Result<BTreeSet<u64>, StateError> {
        let count = self.u32()?;
        let mut out = BTreeSet::new();
        let mut last: Option<u64> = None;
        for _ in 0..count {
            let index = self.u64()?;
            if last.is_some_and(|last| index <= last) {
                return Err(field("mark", index, "above the one before"));
            }
            if config.capacity().is_some_and(|c| index >= c) {
                return Err(field("mark", index, "below the tree's capacity"));
            }
            last = Some(index);
            out.insert(index);
        }
        Ok(out)
    }
}
