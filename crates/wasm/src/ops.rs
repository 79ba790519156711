//! The calls, as plain Rust: [`Module::call`] takes a call's number, a
//! tracker handle and its input bytes, and returns its output bytes. The
//! exported functions in `lib.rs` only move bytes in and out of memory
//! around it, so everything here is tested natively.

use cairn_core::{ConsistencyProof, MembershipProof};
use cairn_note::Verifier;
use cairn_tiles::{CheckpointSignature, SignedBy, Unsigned};
use cairn_wallet::{SyncPlan, Tracker};

use crate::error::CallError;
use crate::wire::{Reader, put_bytes, put_head, put_tree};

/// The calls by number (docs/spec.md, "WebAssembly module").
pub mod op {
    /// tree, head, membership proof (binary) -> nothing.
    pub const VERIFY_MEMBERSHIP: u32 = 1;
    /// tree, old head, new head, consistency proof (binary) -> nothing.
    pub const VERIFY_CONSISTENCY: u32 = 2;
    /// tree, window (`u32`) -> handle (`u32`).
    pub const TRACKER_NEW: u32 = 10;
    /// saved state -> handle (`u32`).
    pub const TRACKER_LOAD: u32 = 11;
    /// (handle) nothing -> nothing; the handle is free to reuse.
    pub const TRACKER_FREE: u32 = 12;
    /// (handle) nothing -> saved state.
    pub const TRACKER_SAVE: u32 = 13;
    /// (handle) nothing -> tree, head, marked count (`u32`), marked indices (`u64` each).
    pub const TRACKER_INFO: u32 = 14;
    /// (handle) index (`u64`) -> nothing.
    pub const MARK: u32 = 20;
    /// (handle) index (`u64`) -> 1 if it was marked, else 0.
    pub const UNMARK: u32 = 21;
    /// (handle) index (`u64`) -> membership proof (binary).
    pub const WITNESS: u32 = 22;
    /// (handle) block (`u64`) -> nothing.
    pub const CHECKPOINT: u32 = 23;
    /// (handle) block (`u64`) -> nothing.
    pub const REWIND: u32 = 24;
    /// (handle) key count (`u32`), keys (text each), checkpoint object (rest)
    /// -> head, tile count (`u32`), per tile its path (text), byte limit
    /// (`u64`), and its bundle (text, empty for none), offset in it (`u64`)
    /// and the bundle's length (`u64`) for a leaf tile inside a complete
    /// bundle (read that range; the tile's own path if the bundle is missing).
    pub const PLAN: u32 = 30;
    /// (handle) path (text), tile bytes (rest) -> nothing.
    pub const FEED: u32 = 31;
    /// (handle) nothing -> head, tiles (`u32`), bytes (`u64`), nodes (`u64`).
    pub const FINISH: u32 = 32;
}

/// A tracker and the sync it has planned, if any.
#[derive(Debug)]
struct Slot {
    tracker: Tracker,
    plan: Option<SyncPlan>,
}

/// The module's state: trackers by handle.
#[derive(Debug, Default)]
pub struct Module {
    slots: Vec<Option<Slot>>,
}

impl Module {
    /// Runs call `op` on tracker `handle` (ignored by calls without one)
    /// with `input`, returning its output. A refused call changes nothing.
    pub fn call(&mut self, op: u32, handle: u32, input: &[u8]) -> Result<Vec<u8>, CallError> {
        let mut r = Reader::new(input);
        let mut out = Vec::new();
        match op {
            op::VERIFY_MEMBERSHIP => {
                let config = r.tree()?;
                let head = r.head()?;
                let proof = MembershipProof::from_bytes(r.rest())?;
                proof.verify_with(&config, &head)?;
            }
            op::VERIFY_CONSISTENCY => {
                let config = r.tree()?;
                let old = r.head()?;
                let new = r.head()?;
                let proof = ConsistencyProof::from_bytes(r.rest())?;
                proof.verify_with(&config, &old, &new)?;
            }
            op::TRACKER_NEW => {
                let config = r.tree()?;
                let window = r.u32("window")? as usize;
                r.end()?;
                let tracker = Tracker::new(config, window)?;
                out.extend_from_slice(&self.insert(tracker).to_le_bytes());
            }
            op::TRACKER_LOAD => {
                let tracker = Tracker::from_bytes(r.rest())?;
                out.extend_from_slice(&self.insert(tracker).to_le_bytes());
            }
            op::TRACKER_FREE => {
                r.end()?;
                self.slot(handle)?;
                self.slots[handle as usize] = None;
            }
            op::TRACKER_SAVE => {
                r.end()?;
                out = self.slot(handle)?.tracker.to_bytes();
            }
            op::TRACKER_INFO => {
                r.end()?;
                let tracker = &self.slot(handle)?.tracker;
                put_tree(&mut out, &tracker.config());
                put_head(&mut out, &tracker.head());
                let marked: Vec<u64> = tracker.marked().collect();
                let count = u32::try_from(marked.len()).expect("fewer than 2^32 marks");
                out.extend_from_slice(&count.to_le_bytes());
                for index in marked {
                    out.extend_from_slice(&index.to_le_bytes());
                }
            }
            op::MARK | op::UNMARK | op::WITNESS | op::CHECKPOINT | op::REWIND => {
                let value = r.u64(if matches!(op, op::CHECKPOINT | op::REWIND) {
                    "block"
                } else {
                    "index"
                })?;
                r.end()?;
                let tracker = &mut self.slot(handle)?.tracker;
                match op {
                    op::MARK => tracker.mark(value)?,
                    op::UNMARK => out.push(u8::from(tracker.unmark(value))),
                    op::WITNESS => out = tracker.witness(value)?.to_bytes(),
                    op::CHECKPOINT => tracker.checkpoint(value)?,
                    _ => tracker.rewind(value)?,
                }
            }
            op::PLAN => {
                let count = r.u32("key count")?;
                let mut keys = Vec::new();
                for _ in 0..count {
                    keys.push(Verifier::parse(r.text("verifier key")?)?);
                }
                let signature: Box<dyn CheckpointSignature> = if keys.is_empty() {
                    Box::new(Unsigned)
                } else {
                    Box::new(SignedBy::new(keys)?)
                };
                let object = r.rest();
                let slot = self.slot(handle)?;
                let plan = slot.tracker.plan(object, signature.as_ref())?;
                put_head(&mut out, &plan.head());
                let wanted = plan.wanted();
                let n = u32::try_from(wanted.len()).expect("fewer than 2^32 tiles");
                out.extend_from_slice(&n.to_le_bytes());
                for tile in wanted {
                    put_bytes(&mut out, tile.path.as_bytes());
                    out.extend_from_slice(&tile.max_bytes.to_le_bytes());
                    // A leaf tile inside a complete bundle: the bundle's
                    // path, the tile's offset in it and the bundle's
                    // length; an empty path otherwise.
                    let (bundle, offset, whole) = tile.bundle.map_or((String::new(), 0, 0), |b| {
                        (b.path, b.offset, b.bundle_bytes)
                    });
                    put_bytes(&mut out, bundle.as_bytes());
                    out.extend_from_slice(&offset.to_le_bytes());
                    out.extend_from_slice(&whole.to_le_bytes());
                }
                slot.plan = Some(plan);
            }
            op::FEED => {
                let path = r.text("tile path")?;
                let bytes = r.rest();
                let slot = self.slot(handle)?;
                let plan = slot.plan.as_mut().ok_or(CallError::NoPlan { handle })?;
                plan.feed(path, bytes)?;
            }
            op::FINISH => {
                r.end()?;
                let slot = self.slot(handle)?;
                let plan = slot.plan.take().ok_or(CallError::NoPlan { handle })?;
                let report = slot.tracker.finish(plan)?;
                put_head(&mut out, &report.head);
                let tiles = u32::try_from(report.tiles).expect("fewer than 2^32 tiles");
                out.extend_from_slice(&tiles.to_le_bytes());
                out.extend_from_slice(&(report.bytes as u64).to_le_bytes());
                out.extend_from_slice(&(report.nodes as u64).to_le_bytes());
            }
            op => return Err(CallError::UnknownOp { op }),
        }
        Ok(out)
    }

    fn insert(&mut self, tracker: Tracker) -> u32 {
        let slot = Some(Slot {
            tracker,
            plan: None,
        });
        let at = match self.slots.iter().position(Option::is_none) {
            Some(free) => {
                self.slots[free] = slot;
                free
            }
            None => {
                self.slots.push(slot);
                self.slots.len() - 1
            }
        };
        u32::try_from(at).expect("fewer than 2^32 trackers")
    }

    fn slot(&mut self, handle: u32) -> Result<&mut Slot, CallError> {
        self.slots
            .get_mut(handle as usize)
            .and_then(Option::as_mut)
            .ok_or(CallError::NoTracker { handle })
    }
}

#[cfg(test)]
mod tests {
    use cairn_core::{Arity, Hash, HashKind, LeanImt, TreeConfig, TreeKind};
    use cairn_tiles::{CHECKPOINT, DirStore, publish};

    use super::*;
    use crate::wire::put_tree;

    fn leaves(count: u64) -> Vec<Hash> {
        (0..count)
            .map(|i| {
                let mut leaf = cairn_testkit::leaf(7, i);
                leaf[0] = 0;
                leaf
            })
            .collect()
    }

    fn tree_bytes(config: &TreeConfig) -> Vec<u8> {
        let mut out = Vec::new();
        put_tree(&mut out, config);
        out
    }

    fn head_bytes(head: &cairn_core::TreeHead) -> Vec<u8> {
        let mut out = Vec::new();
        put_head(&mut out, head);
        out
    }

    /// Syncs tracker `handle` to the store in `dir` through the calls.
    fn sync(module: &mut Module, handle: u32, dir: &std::path::Path) -> Vec<u8> {
        let mut input = 0u32.to_le_bytes().to_vec();
        input.extend(std::fs::read(dir.join(CHECKPOINT)).unwrap());
        let plan = module.call(op::PLAN, handle, &input).unwrap();
        let mut r = Reader::new(&plan);
        r.head().unwrap();
        for _ in 0..r.u32("count").unwrap() {
            let path = r.text("path").unwrap().to_owned();
            let max = r.u64("max").unwrap() as usize;
            let bundle = r.text("bundle").unwrap().to_owned();
            let offset = r.u64("offset").unwrap() as usize;
            let whole = r.u64("bundle length").unwrap() as usize;
            let mut feed = Vec::new();
            put_bytes(&mut feed, path.as_bytes());
            match std::fs::read(dir.join(&bundle)) {
                Ok(bytes) if !bundle.is_empty() => {
                    assert_eq!(bytes.len(), whole, "{bundle}");
                    feed.extend(&bytes[offset..offset + max]);
                }
                _ => feed.extend(std::fs::read(dir.join(&path)).unwrap()),
            }
            module.call(op::FEED, handle, &feed).unwrap();
        }
        r.end().unwrap();
        module.call(op::FINISH, handle, &[]).unwrap()
    }

    #[test]
    fn a_tracker_driven_through_the_calls_matches_the_tree() {
        for kind in [
            TreeKind::Lean,
            TreeKind::Fixed {
                depth: 12,
                zero: [0; 32],
            },
        ] {
            let config =
                TreeConfig::new(Arity::new(2).unwrap(), HashKind::Poseidon).with_kind(kind);
            let dir = tempfile::tempdir().unwrap();
            let store = DirStore::new(dir.path());
            let mut tree = LeanImt::new(config);
            tree.append_batch(&leaves(300)).unwrap();
            publish(&tree.snapshot(), &store).unwrap();

            let mut module = Module::default();
            let mut input = tree_bytes(&config);
            input.extend(100u32.to_le_bytes());
            let handle = module.call(op::TRACKER_NEW, 0, &input).unwrap();
            let handle = u32::from_le_bytes(handle.try_into().unwrap());
            module.call(op::MARK, handle, &5u64.to_le_bytes()).unwrap();
            module
                .call(op::MARK, handle, &299u64.to_le_bytes())
                .unwrap();
            let report = sync(&mut module, handle, dir.path());
            assert_eq!(report[..41], head_bytes(&tree.head())[..]);
            module
                .call(op::CHECKPOINT, handle, &1u64.to_le_bytes())
                .unwrap();

            let witness = module
                .call(op::WITNESS, handle, &5u64.to_le_bytes())
                .unwrap();
            assert_eq!(witness, tree.prove(5).unwrap().to_bytes());
            let mut verify = tree_bytes(&config);
            verify.extend(head_bytes(&tree.head()));
            verify.extend(&witness);
            module.call(op::VERIFY_MEMBERSHIP, 0, &verify).unwrap();
            let last = verify.len() - 1;
            verify[last] ^= 1;
            let refused = module.call(op::VERIFY_MEMBERSHIP, 0, &verify).unwrap_err();
            assert_eq!(refused.status(), 2, "{refused}");

            // Grow, sync, rewind to block 1: the old witness comes back.
            let old = tree.head();
            tree.append_batch(&leaves(500)[300..]).unwrap();
            publish(&tree.snapshot(), &store).unwrap();
            sync(&mut module, handle, dir.path());
            let grown = module
                .call(op::WITNESS, handle, &5u64.to_le_bytes())
                .unwrap();
            assert_eq!(grown, tree.prove(5).unwrap().to_bytes());
            let mut consistency = tree_bytes(&config);
            consistency.extend(head_bytes(&old));
            consistency.extend(head_bytes(&tree.head()));
            consistency.extend(
                tree.prove_consistency(old.size, tree.size())
                    .unwrap()
                    .to_bytes(),
            );
            module
                .call(op::VERIFY_CONSISTENCY, 0, &consistency)
                .unwrap();

            let saved = module.call(op::TRACKER_SAVE, handle, &[]).unwrap();
            module
                .call(op::REWIND, handle, &1u64.to_le_bytes())
                .unwrap();
            assert_eq!(
                module
                    .call(op::WITNESS, handle, &5u64.to_le_bytes())
                    .unwrap(),
                witness
            );

            let loaded = module.call(op::TRACKER_LOAD, 0, &saved).unwrap();
            let loaded = u32::from_le_bytes(loaded.try_into().unwrap());
            assert_ne!(loaded, handle);
            assert_eq!(
                module
                    .call(op::WITNESS, loaded, &5u64.to_le_bytes())
                    .unwrap(),
                grown
            );
            assert_eq!(
                module
                    .call(op::UNMARK, loaded, &5u64.to_le_bytes())
                    .unwrap(),
                [1]
            );
            assert_eq!(
                module
                    .call(op::UNMARK, loaded, &5u64.to_le_bytes())
                    .unwrap(),
                [0]
            );
            module.call(op::TRACKER_FREE, loaded, &[]).unwrap();
            let gone = module
                .call(op::WITNESS, loaded, &5u64.to_le_bytes())
                .unwrap_err();
            assert!(matches!(gone, CallError::NoTracker { .. }), "{gone}");
        }
    }

    #[test]
    fn malformed_calls_are_refused_with_what_was_wrong() {
        let mut module = Module::default();
        let config = TreeConfig::new(Arity::new(2).unwrap(), HashKind::Blake3);
        let short = module
            .call(op::TRACKER_NEW, 0, &tree_bytes(&config))
            .unwrap_err();
        assert!(
            matches!(
                short,
                CallError::Short {
                    field: "window",
                    want: 4,
                    got: 0
                }
            ),
            "{short}"
        );
        assert_eq!(short.status(), 1);
        let mut long = tree_bytes(&config);
        long.extend([0; 5]);
        let trailing = module.call(op::TRACKER_NEW, 0, &long).unwrap_err();
        assert!(
            matches!(trailing, CallError::Trailing { extra: 1 }),
            "{trailing}"
        );
        let mut bad = tree_bytes(&config);
        bad[1] = 9;
        bad.extend([0; 4]);
        let hash = module.call(op::TRACKER_NEW, 0, &bad).unwrap_err();
        assert!(matches!(hash, CallError::UnknownHash { id: 9 }), "{hash}");
        let mut lean = tree_bytes(&config);
        lean[3] = 4;
        lean.extend([0; 4]);
        let fields = module.call(op::TRACKER_NEW, 0, &lean).unwrap_err();
        assert!(matches!(fields, CallError::LeanFields), "{fields}");
        let unknown = module.call(99, 0, &[]).unwrap_err();
        assert!(
            matches!(unknown, CallError::UnknownOp { op: 99 }),
            "{unknown}"
        );
        let mut input = tree_bytes(&config);
        input.extend(10u32.to_le_bytes());
        let handle = module.call(op::TRACKER_NEW, 0, &input).unwrap();
        let handle = u32::from_le_bytes(handle.try_into().unwrap());
        let unplanned = module.call(op::FINISH, handle, &[]).unwrap_err();
        assert!(matches!(unplanned, CallError::NoPlan { .. }), "{unplanned}");
        assert_eq!(unplanned.status(), 3);
        let mut flag = tree_bytes(&config);
        flag.extend(0u64.to_le_bytes());
        flag.push(2);
        flag.extend([0; 32]);
        let root = module.call(op::VERIFY_MEMBERSHIP, 0, &flag).unwrap_err();
        assert!(matches!(root, CallError::RootFlag { got: 2 }), "{root}");
    }
}
