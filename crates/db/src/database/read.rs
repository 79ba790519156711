//! Reads of the durable tree: the head, lookups, proofs of every kind,
//! tagged heads and roots, leaves by index. Each answers for one durable
//! tree: from a snapshot of it (lookups, proofs, leaves), under the tree's
//! lock (an indexed tree holds durable values only), or between two
//! rollbacks (tagged heads and roots, kept apart from the tree).

use std::sync::Arc;

use cairn_core::indexed::{AbsenceProof, IndexedMembershipProof, InsertionWitness};
use cairn_core::proof::InteropError;
use cairn_core::{
    AppendWitness, ConsistencyProof, Hash, MembershipProof, Snapshot, TreeError, TreeHead,
};
use cairn_store::{RootAt, StoreError, TaggedHead};

use super::{Database, Kind};
use crate::db::DbSnapshot;
use crate::error::{DbError, Result};
use crate::operation::Operation;

/// What a reader may serve: the durable head, the finalized size and the
/// failure that stopped acknowledgements, read together.
#[derive(Debug, Clone)]
pub struct Durable {
    /// Leaves durable on disk.
    pub size: u64,
    /// The root at `size` (`None` for an empty lean tree).
    pub root: Option<Hash>,
    /// Leaves below which a rollback is refused (at most `size`).
    pub finalized: u64,
    /// The write or sync failure that stopped acknowledgements, if any.
    pub failure: Option<StoreError>,
}

impl Durable {
    /// The head.
    pub fn head(&self) -> TreeHead {
        TreeHead {
            size: self.size,
            root: self.root,
        }
    }
}

/// Lookups of many values at one durable size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lookup {
    /// The durable size the answers are for.
    pub size: u64,
    /// Per value, in order: its leaf index, or `None` if it is not a leaf
    /// of the tree of `size` leaves.
    pub indices: Vec<Option<u64>>,
}

/// Which head a proof is against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    /// The durable head.
    Durable,
    /// The tree of this many leaves (at most the durable size):
    /// append-only trees ([`Operation::HistoricalProof`]).
    Size(u64),
    /// The durable tree whose root this is: a tagged head's, one of the
    /// last appends', or the current one's ([`Operation::HistoricalProof`]).
    Root(Hash),
}

/// A proof, of whichever kind the database's tree has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Proof {
    /// A lean or fixed-depth tree's membership proof.
    Membership(MembershipProof),
    /// An indexed tree's membership proof (the leaf with its pointer).
    IndexedMembership(IndexedMembershipProof),
    /// An indexed tree's absence proof (the low leaf and its path).
    Absence(AbsenceProof),
}

/// How a proof is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProofFormat {
    /// cairn's proof JSON (docs/spec.md).
    Json,
    /// cairn's binary encoding.
    Binary,
    /// zk-kit's proof JSON: a LeanIMT's of arity 2, or an IMT's.
    Zkkit,
    /// The inputs of cairn's circom templates: `LeanIMTInclusion` for a
    /// membership proof, `IndexedAbsence` for an absence proof.
    Circom,
    /// The inputs of zk-kit's `BinaryMerkleRoot` template (arity 2, Poseidon).
    ZkkitCircom,
}

/// Why a proof cannot be printed in a format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    /// The format is not one of this kind of proof.
    #[error("{what} has no {format} form")]
    NotFor {
        /// The format asked for.
        format: &'static str,
        /// The proof, in words.
        what: &'static str,
    },
    /// The tree cannot have the format (an arity, a hash, a depth).
    #[error(transparent)]
    Interop(#[from] InteropError),
}

impl Proof {
    /// The size of the tree it is against.
    pub fn size(&self) -> u64 {
        match self {
            Proof::Membership(proof) => proof.size(),
            Proof::IndexedMembership(proof) => proof.size(),
            Proof::Absence(proof) => proof.size(),
        }
    }

    /// The proof in words (`an absence proof`).
    pub fn describe(&self) -> &'static str {
        match self {
            Proof::Membership(_) => "a membership proof",
            Proof::IndexedMembership(_) => "an indexed membership proof",
            Proof::Absence(_) => "an absence proof",
        }
    }

    /// cairn's proof JSON.
    pub fn to_json(&self) -> String {
        match self {
            Proof::Membership(proof) => proof.to_json(),
            Proof::IndexedMembership(proof) => proof.to_json(),
            Proof::Absence(proof) => proof.to_json(),
        }
    }

    /// cairn's binary encoding.
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            Proof::Membership(proof) => proof.to_bytes(),
            Proof::IndexedMembership(proof) => proof.to_bytes(),
            Proof::Absence(proof) => proof.to_bytes(),
        }
    }

    /// The proof printed in `format` (`circuit_depth`: the circuit's
    /// depth for the circom formats, default the tree's).
    pub fn render(
        &self,
        format: ProofFormat,
        circuit_depth: Option<u32>,
    ) -> std::result::Result<Vec<u8>, RenderError> {
        let not_for = |format: &'static str| RenderError::NotFor {
            format,
            what: self.describe(),
        };
        Ok(match (self, format) {
            (Proof::Membership(proof), ProofFormat::Json) => proof.json_bytes(),
            (_, ProofFormat::Json) => self.to_json().into_bytes(),
            (_, ProofFormat::Binary) => self.to_bytes(),
            (Proof::Membership(proof), ProofFormat::Zkkit) => proof.to_zkkit_json()?.into_bytes(),
            (Proof::Membership(proof), ProofFormat::Circom) => {
                proof.to_circom_json(circuit_depth)?.into_bytes()
            }
            (Proof::Membership(proof), ProofFormat::ZkkitCircom) => {
                proof.to_zkkit_circom_json(circuit_depth)?.into_bytes()
            }
            (Proof::Absence(proof), ProofFormat::Circom) => {
                proof.to_circom_json(circuit_depth)?.into_bytes()
            }
            (_, ProofFormat::Zkkit) => return Err(not_for("zk-kit")),
            (_, ProofFormat::ZkkitCircom) => return Err(not_for("zk-kit circom")),
            (_, ProofFormat::Circom) => return Err(not_for("circom")),
        })
    }
}

impl Database {
    /// The durable head, the finalized size (read first: it is durable
    /// when it is published) and the failure, if any.
    pub fn durable(&self) -> Durable {
        let finalized = self.finalized_size();
        match &self.kind {
            Kind::AppendOnly(db) => {
                let head = db.durable_head();
                Durable {
                    size: head.size,
                    root: head.root,
                    finalized: finalized.min(head.size),
                    failure: head.failure,
                }
            }
            Kind::Indexed(db) => {
                let head = db.head();
                Durable {
                    size: head.size,
                    root: head.root,
                    finalized: finalized.min(head.size),
                    failure: db.failure(),
                }
            }
            Kind::Mutable(db) => {
                let head = db.head();
                Durable {
                    size: head.size,
                    root: head.root,
                    finalized: 0,
                    failure: db.failure(),
                }
            }
        }
    }

    /// The durable head (what a reader may serve).
    pub fn head(&self) -> TreeHead {
        self.durable().head()
    }

    /// The head of the tree of `size` leaves as appended, durable or not,
    /// if the tree can say from memory: an append-only tree of at least
    /// `size` leaves (`None` for other kinds, which apply values once
    /// durable). For a caller whose own record already made the leaves
    /// durable (a database's block journal).
    pub fn accepted_head_at(&self, size: u64) -> Option<TreeHead> {
        match &self.kind {
            Kind::AppendOnly(db) => {
                let snapshot = db.store.snapshot();
                Some(snapshot.view(size).ok()?.head())
            }
            Kind::Indexed(_) | Kind::Mutable(_) => None,
        }
    }

    /// The head of the tree of `size` leaves, at most the durable size:
    /// any such size of an append-only tree; an indexed tree's current
    /// size only ([`Operation::HistoricalProof`]).
    pub fn head_at(&self, size: u64) -> Result<TreeHead> {
        match &self.kind {
            Kind::AppendOnly(db) => {
                let head = db.durable_head();
                if size > head.size {
                    return Err(TreeError::SizeBeyondTree {
                        size,
                        tree_size: head.size,
                    }
                    .into());
                }
                Ok(head.snapshot.view(size)?.head())
            }
            Kind::Indexed(db) => db.head_at(size).map_err(indexed_refusal),
            Kind::Mutable(db) => {
                let head = db.head();
                if size != head.size {
                    self.supports(Operation::HistoricalProof)?;
                }
                Ok(head)
            }
        }
    }

    /// The leaf index of `value` in the durable tree (an indexed tree's
    /// guard value 0 is no value). A value the tree's hash refuses is an
    /// error ([`crate::ErrorKind::InvalidBatch`]): no leaf can be it.
    pub fn index_of(&self, value: &Hash) -> Result<Option<u64>> {
        Ok(self.lookup(std::slice::from_ref(value))?.indices[0])
    }

    /// [`Database::index_of`] of each of `values`, at one durable size,
    /// with the memory reads of different values overlapped (about 1,000
    /// values a call is plenty).
    pub fn lookup(&self, values: &[Hash]) -> Result<Lookup> {
        self.check_canonical(values)?;
        match &self.kind {
            Kind::AppendOnly(db) => {
                self.check_lookups()?;
                let head = db.durable_head();
                let size = head.size;
                let indices = head
                    .snapshot
                    .index_of_many(values)?
                    .into_iter()
                    .map(|index| index.filter(|&i| i < size))
                    .collect();
                Ok(Lookup { size, indices })
            }
            Kind::Indexed(db) => {
                let (size, indices) = db.index_of_many(values);
                Ok(Lookup { size, indices })
            }
            Kind::Mutable(db) => {
                let (size, indices) = db.index_of_many(values);
                Ok(Lookup { size, indices })
            }
        }
    }

    /// The membership proof of leaf `index` against the head `at` names.
    pub fn prove(&self, index: u64, at: At) -> Result<Proof> {
        match &self.kind {
            Kind::AppendOnly(_) => {
                let (snapshot, size) = self.tree_at(at)?;
                Ok(Proof::Membership(snapshot.prove_at(index, size)?))
            }
            Kind::Indexed(db) => Ok(Proof::IndexedMembership(
                match self.indexed_size(db, at)? {
                    None => db.prove_index(index),
                    Some(size) => db.prove_index_at(index, size),
                }
                .map_err(indexed_refusal)?,
            )),
            Kind::Mutable(db) => {
                self.durable_only(at)?;
                Ok(Proof::Membership(db.prove(index)?))
            }
        }
    }

    /// The membership proof of the leaf holding `value` against the head
    /// `at` names; [`DbError::Absent`] if the tree does not hold it, an
    /// index out of range (its leaf's) if the tree at `at` does not yet.
    pub fn prove_value(&self, value: &Hash, at: At) -> Result<Proof> {
        self.check_canonical(std::slice::from_ref(value))?;
        match &self.kind {
            Kind::AppendOnly(_) => {
                self.check_lookups()?;
                let (snapshot, size) = self.tree_at(at)?;
                // A leaf beyond `size` is out of range there, not absent.
                let index = snapshot
                    .index_of(value)?
                    .ok_or(DbError::Absent { value: *value })?;
                Ok(Proof::Membership(snapshot.prove_at(index, size)?))
            }
            Kind::Indexed(db) => Ok(Proof::IndexedMembership(
                match self.indexed_size(db, at)? {
                    None => db.prove_value(value),
                    Some(size) => db.prove_value_at(value, size),
                }
                .map_err(indexed_refusal)?,
            )),
            Kind::Mutable(db) => {
                self.durable_only(at)?;
                let (_, indices) = db.index_of_many(std::slice::from_ref(value));
                let index = indices[0].ok_or(DbError::Absent { value: *value })?;
                Ok(Proof::Membership(db.prove(index)?))
            }
        }
    }

    /// The proof that `value` is absent from the durable tree (an indexed
    /// tree's, [`Operation::AbsenceProof`]); [`DbError::Present`] if it is
    /// a leaf.
    pub fn prove_absence(&self, value: &Hash) -> Result<Proof> {
        self.prove_absence_at(value, At::Durable)
    }

    /// The proof that `value` is absent from the tree `at` names: the
    /// durable head, or a retained head of an indexed tree by size or root
    /// ([`crate::DbConfig::history_heads`]; a size outside the window is
    /// refused with it, [`cairn_core::indexed::IndexedError::OutsideWindow`]).
    pub fn prove_absence_at(&self, value: &Hash, at: At) -> Result<Proof> {
        let db = self.indexed(Operation::AbsenceProof)?;
        Ok(Proof::Absence(
            match self.indexed_size(db, at)? {
                None => db.prove_absence(value),
                Some(size) => db.prove_absence_at(value, size),
            }
            .map_err(indexed_refusal)?,
        ))
    }

    /// The retained heads of an indexed tree, oldest first, the durable
    /// head last ([`Operation::AbsenceProof`]: indexed trees).
    pub fn indexed_heads(&self) -> Result<Vec<TreeHead>> {
        Ok(self.indexed(Operation::AbsenceProof)?.heads())
    }

    /// The size an indexed tree's proof at `at` is against: `None` for
    /// the durable head.
    fn indexed_size(&self, db: &crate::IndexedDb, at: At) -> Result<Option<u64>> {
        match at {
            At::Durable => Ok(None),
            At::Size(size) => Ok(Some(size)),
            At::Root(root) => match db.size_of_root(&root) {
                Some(size) => Ok(Some(size)),
                None => Err(DbError::UnknownRoot {
                    root,
                    window: db.history_stats().window,
                }),
            },
        }
    }

    /// The proof that the tree of `from` leaves is a prefix of the tree of
    /// `to` (default: the durable size) leaves
    /// ([`Operation::ConsistencyProof`]).
    pub fn prove_consistency(&self, from: u64, to: Option<u64>) -> Result<ConsistencyProof> {
        let db = self.append_only(Operation::ConsistencyProof)?;
        let head = db.durable_head();
        let to = to.unwrap_or(head.size);
        if to > head.size {
            return Err(TreeError::SizeBeyondTree {
                size: to,
                tree_size: head.size,
            }
            .into());
        }
        Ok(head.snapshot.prove_consistency(from, to)?)
    }

    /// The witness that the leaves `from..to` (`to` default the durable
    /// size) appended to the durable tree of `from` leaves give the tree
    /// of `to`: both heads, the old tree's frontier and the leaves, as a
    /// batch-update circuit takes them ([`Operation::AppendWitness`]).
    pub fn append_witness(&self, from: u64, to: Option<u64>) -> Result<AppendWitness> {
        let db = self.append_only(Operation::AppendWitness)?;
        let head = db.durable_head();
        let to = to.unwrap_or(head.size);
        if to > head.size {
            return Err(TreeError::SizeBeyondTree {
                size: to,
                tree_size: head.size,
            }
            .into());
        }
        Ok(head.snapshot.tree().append_witness(from, to)?)
    }

    /// The witness of inserting `values` one at a time, in order, into the
    /// durable indexed tree, without inserting them, and the head it
    /// starts from: what a batch circuit proves before (or instead of) the
    /// insert, the same witness [`Database::append_witnessed`] would
    /// return for these values at this head. Refused as an insert would
    /// be (a value held or repeated, the guard 0, a non-canonical value,
    /// past capacity), with nothing changed
    /// ([`Operation::InsertionWitness`]).
    pub fn insertion_witness(&self, values: &[Hash]) -> Result<(TreeHead, InsertionWitness)> {
        let db = self.indexed(Operation::InsertionWitness)?;
        let snapshot = db.snapshot();
        let witness = snapshot.insertion_witness(values)?;
        Ok((snapshot.head(), witness))
    }

    /// The durable block-tagged heads from block `from_block` on, at most
    /// `limit` ([`Operation::BlockTags`]).
    pub fn heads(&self, from_block: u64, limit: usize) -> Result<Vec<TaggedHead>> {
        if let Kind::Mutable(mutable) = &self.kind {
            // The log's heads count its words: each in the tree's terms,
            // those applied (durable) only.
            let heads = mutable.log().heads(from_block, limit);
            return Ok(heads
                .into_iter()
                .map_while(|head| mutable.tree_head(head))
                .collect());
        }
        let db = self.append_only(Operation::BlockTags)?;
        Ok(self.gate.read(|_| {
            let durable = self.tag_durability(db.durable_size());
            let mut heads = db.heads(from_block, limit);
            // Durable heads are a prefix (made durable in order).
            let count = heads
                .iter()
                .take_while(|head| durable(head.block, head.size))
                .count();
            heads.truncate(count);
            heads
        }))
    }

    /// The last durable block-tagged head at or below `block` (`u64::MAX`:
    /// the last one), what a rollback to `block` keeps and where a chain
    /// follower resumes ([`Operation::BlockTags`]).
    pub fn head_at_block(&self, block: u64) -> Result<Option<TaggedHead>> {
        if let Kind::Mutable(mutable) = &self.kind {
            let mut below = block;
            loop {
                match mutable.log().head_at_block(below) {
                    Some(head) => match mutable.tree_head(head) {
                        Some(head) => return Ok(Some(head)),
                        None if head.block > 0 => below = head.block - 1,
                        None => return Ok(None),
                    },
                    None => return Ok(None),
                }
            }
        }
        let db = self.append_only(Operation::BlockTags)?;
        Ok(self.gate.read(|_| {
            let durable = self.tag_durability(db.durable_size());
            let mut below = block;
            // Durable heads are a prefix: skip the pending ones above it.
            loop {
                match db.head_at_block(below) {
                    Some(head) if durable(head.block, head.size) => return Some(head),
                    Some(head) if head.block > 0 => below = head.block - 1,
                    _ => return None,
                }
            }
        }))
    }

    /// The durable size whose root is `root`, among the tagged heads, the
    /// last appends' roots and the durable head, with its block if that
    /// tag is durable ([`Operation::RootLookup`]).
    pub fn size_of_root(&self, root: &Hash) -> Result<Option<RootAt>> {
        let db = self.append_only(Operation::RootLookup)?;
        Ok(self
            .gate
            .read(|_| self.durable_root(db, root, db.durable_size())))
    }

    /// The leaves `from..to` of the durable tree (`to` at most its size;
    /// default the durable size): what a mirror copies
    /// ([`Operation::LeafRange`]).
    pub fn leaves(&self, from: u64, to: Option<u64>) -> Result<Vec<Hash>> {
        let db = self.append_only(Operation::LeafRange)?;
        let head = db.durable_head();
        let to = to.unwrap_or(head.size);
        if to > head.size || from > to {
            return Err(TreeError::SizeBeyondTree {
                size: to.max(from),
                tree_size: head.size,
            }
            .into());
        }
        (from..to)
            .map(|index| {
                head.snapshot
                    .leaf(index)
                    .ok_or(DbError::Tree(TreeError::IndexOutOfRange {
                        index,
                        size: head.snapshot.size(),
                    }))
            })
            .collect()
    }

    /// A snapshot of the whole tree, durable or not: what tiles and
    /// mirrors are made of ([`Operation::Tiles`]).
    pub fn tree_snapshot(&self) -> Result<Arc<Snapshot>> {
        let db = self.append_only(Operation::Tiles)?;
        Ok(Arc::clone(db.snapshot().tree()))
    }

    /// A snapshot holding the tree `at` names, and its size (an
    /// append-only tree's).
    fn tree_at(&self, at: At) -> Result<(DbSnapshot, u64)> {
        let db = self.append_only(Operation::HistoricalProof)?;
        match at {
            At::Durable => {
                let head = db.durable_head();
                Ok((head.snapshot, head.size))
            }
            At::Size(size) => {
                let head = db.durable_head();
                if size > head.size {
                    return Err(TreeError::SizeBeyondTree {
                        size,
                        tree_size: head.size,
                    }
                    .into());
                }
                Ok((head.snapshot, size))
            }
            At::Root(root) => self.gate.read(|_| {
                let head = db.durable_head();
                let found =
                    self.durable_root(db, &root, head.size)
                        .ok_or(DbError::UnknownRoot {
                            root,
                            window: db.config().store.root_window,
                        })?;
                Ok((head.snapshot, found.size))
            }),
        }
    }

    /// Refuses a head other than the durable one (an indexed tree's).
    fn durable_only(&self, at: At) -> Result<()> {
        match at {
            At::Durable => Ok(()),
            At::Size(_) | At::Root(_) => self.supports(Operation::HistoricalProof),
        }
    }

    /// Where `root` is, if that is within the durable tree of `durable`
    /// leaves; its block only if its tag is durable (between rollbacks).
    fn durable_root(&self, db: &crate::Db, root: &Hash, durable: u64) -> Option<RootAt> {
        let found = match db.size_of_root(root) {
            Some(at) if at.size <= durable => at,
            // The durable head's own root, known after any reopen.
            _ => {
                let head = db.durable_head();
                if head.size != durable || head.root.as_ref() != Some(root) {
                    return None;
                }
                RootAt {
                    size: durable,
                    block: db
                        .head_at_block(u64::MAX)
                        .filter(|tag| tag.size == durable && tag.root.as_ref() == Some(root))
                        .map(|tag| tag.block),
                }
            }
        };
        let durable_tag = self.tag_durability(durable);
        Some(RootAt {
            size: found.size,
            block: found.block.filter(|&block| durable_tag(block, found.size)),
        })
    }

    /// Which tagged heads are durable when `durable` leaves are: those a
    /// durable leaf follows, and those up to the last block whose append
    /// was acknowledged (heads are made durable in order, before the
    /// leaves that follow them).
    fn tag_durability(&self, durable: u64) -> impl Fn(u64, u64) -> bool {
        let acked = *self.acked_block.lock();
        move |block, size| size < durable || acked.is_some_and(|a| block <= a)
    }
}

/// An indexed tree's refusal of a proof as the database's (the same for
/// every kind): a value present or absent, an index or size it lacks.
fn indexed_refusal(error: DbError) -> DbError {
    use cairn_core::indexed::IndexedError;
    match error {
        DbError::Indexed(IndexedError::Tree(error)) => DbError::Tree(error),
        DbError::Indexed(IndexedError::Present { value, index }) => {
            DbError::Present { value, index }
        }
        DbError::Indexed(IndexedError::Absent { value }) => DbError::Absent { value },
        other => other,
    }
}
