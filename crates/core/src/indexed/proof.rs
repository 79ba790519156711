//! Proofs about an indexed tree: absence of a value (its low leaf and that
//! leaf's path), membership of a value (its leaf and path), and insertion
//! witnesses (the state before and after each insertion), with their
//! verifiers.
//!
//! Every verifier takes what the caller trusts (arity, hash, the head, and
//! the value asked about) and derives positions and widths from it, as the
//! LeanIMT membership verifier does; the leaf hashes are recomputed from
//! the preimages, never read from the proof.

use super::error::IndexedVerifyError;
use super::leaf::{END_MARKER, GUARD_VALUE, IndexedLeaf};
use crate::Arity;
use crate::hash::{Hash, HashKind};
use crate::proof::{MembershipProof, VerifyError};
use crate::recompute::Frontier;
use crate::tree::{TreeConfig, TreeHead};

/// A proof that `value` is not in the indexed tree of `size` leaves: the
/// low leaf (the largest value below it, whose successor is above it or
/// absent) at `low_index`, and the low leaf's siblings.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct AbsenceProof {
    pub(crate) arity: Arity,
    pub(crate) hash: HashKind,
    pub(crate) value: Hash,
    pub(crate) low_index: u64,
    pub(crate) size: u64,
    pub(crate) low: IndexedLeaf,
    pub(crate) siblings: Vec<Hash>,
}

/// A proof that the indexed tree of `size` leaves holds `leaf.value` at
/// `index`: the leaf's preimage (with its pointer) and siblings.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct IndexedMembershipProof {
    pub(crate) arity: Arity,
    pub(crate) hash: HashKind,
    pub(crate) index: u64,
    pub(crate) size: u64,
    pub(crate) leaf: IndexedLeaf,
    pub(crate) siblings: Vec<Hash>,
}

/// One insertion of an [`InsertionWitness`], into the tree of `size`
/// leaves (the witness's old size plus the insertions before it).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct InsertionStep {
    /// The value inserted; it becomes leaf `size`.
    pub value: Hash,
    /// The low leaf's index.
    pub low_index: u64,
    /// The low leaf before the insertion.
    pub low: IndexedLeaf,
    /// The low leaf's siblings in the tree before the insertion.
    pub low_siblings: Vec<Hash>,
    /// The new leaf's siblings in the tree after it (all to its left: it
    /// is the last leaf).
    pub new_siblings: Vec<Hash>,
}

/// Witnesses of inserting values one after another into the indexed tree
/// of `old_size` leaves. Insertion j goes into the tree of
/// `old_size + j` leaves left by the insertions before it, so a low leaf
/// may be a leaf inserted earlier in the same witness. Verified against
/// the trusted old head, it yields the new head.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct InsertionWitness {
    pub(crate) arity: Arity,
    pub(crate) hash: HashKind,
    pub(crate) old_size: u64,
    pub(crate) steps: Vec<InsertionStep>,
}

/// Checks that a trusted head can be an indexed tree's and the proof's
/// parameters match the trusted ones.
fn check_trusted(
    arity: Arity,
    hash: HashKind,
    proof_arity: Arity,
    proof_hash: HashKind,
    trusted: &TreeHead,
) -> Result<(), IndexedVerifyError> {
    if proof_arity != arity {
        return Err(VerifyError::ArityMismatch {
            proof: proof_arity.get(),
            trusted: arity.get(),
        }
        .into());
    }
    if proof_hash != hash {
        return Err(VerifyError::HashMismatch {
            proof: proof_hash,
            trusted: hash,
        }
        .into());
    }
    if (trusted.size == 0) != trusted.root.is_none() {
        return Err(VerifyError::InconsistentHead {
            size: trusted.size,
            has_root: trusted.root.is_some(),
        }
        .into());
    }
    if trusted.size == 0 {
        return Err(IndexedVerifyError::EmptyHead);
    }
    Ok(())
}

fn check_size(proof: u64, trusted: u64) -> Result<(), IndexedVerifyError> {
    if proof != trusted {
        return Err(VerifyError::SizeMismatch {
            which: "size",
            proof,
            trusted,
        }
        .into());
    }
    Ok(())
}

/// A value asked about or inserted: not the guard, canonical.
fn check_value(hash: HashKind, what: &str, value: &Hash) -> Result<(), IndexedVerifyError> {
    if *value == GUARD_VALUE {
        return Err(IndexedVerifyError::GuardValue);
    }
    if !hash.accepts(value) {
        return Err(VerifyError::NonCanonical {
            what: what.to_owned(),
            value: *value,
        }
        .into());
    }
    Ok(())
}

/// A leaf preimage that can be in a tree of `size` leaves: canonical
/// values, a pointer inside the tree that is the end marker exactly when
/// its index is 0 (the guard is never a successor).
fn check_leaf(
    hash: HashKind,
    what: &str,
    leaf: &IndexedLeaf,
    size: u64,
) -> Result<(), IndexedVerifyError> {
    for (part, value) in [("value", &leaf.value), ("next value", &leaf.next_value)] {
        if !hash.accepts(value) {
            return Err(VerifyError::NonCanonical {
                what: format!("{what} {part}"),
                value: *value,
            }
            .into());
        }
    }
    let end = leaf.next_value == END_MARKER;
    if leaf.next_index >= size || end != (leaf.next_index == 0) {
        return Err(IndexedVerifyError::BadPointer {
            next_index: leaf.next_index,
            next_value: leaf.next_value,
            size,
        });
    }
    if !end && leaf.next_value <= leaf.value {
        return Err(IndexedVerifyError::NotBracketed {
            value: leaf.next_value,
            low: leaf.value,
            next: leaf.next_value,
        });
    }
    Ok(())
}

/// The guard (value 0) is leaf 0 and only leaf 0.
fn check_guard_index(index: u64, leaf: &IndexedLeaf) -> Result<(), IndexedVerifyError> {
    if (index == 0) != (leaf.value == GUARD_VALUE) {
        return Err(IndexedVerifyError::GuardIndex {
            index,
            value: leaf.value,
        });
    }
    Ok(())
}

/// The root of the tree of `size` leaves whose leaf `index` is `leaf`,
/// from its siblings (shape, count and values checked).
fn fold(
    arity: Arity,
    hash: HashKind,
    index: u64,
    size: u64,
    leaf: Hash,
    siblings: &[Hash],
) -> Result<Hash, VerifyError> {
    MembershipProof {
        arity,
        hash,
        index,
        size,
        leaf,
        siblings: siblings.to_vec(),
        kind: crate::TreeKind::Indexed,
    }
    .compute_root()
}

fn check_root(computed: Hash, trusted: &TreeHead, which: &'static str) -> Result<(), VerifyError> {
    let trusted = trusted.root.unwrap_or_default();
    if computed != trusted {
        return Err(VerifyError::RootMismatch {
            which,
            computed,
            trusted,
        });
    }
    Ok(())
}

impl AbsenceProof {
    /// The arity the proof was made for.
    pub fn arity(&self) -> Arity {
        self.arity
    }
    /// The hash the proof was made for.
    pub fn hash(&self) -> HashKind {
        self.hash
    }
    /// The value proven absent.
    pub fn value(&self) -> Hash {
        self.value
    }
    /// The low leaf's index.
    pub fn low_index(&self) -> u64 {
        self.low_index
    }
    /// The tree size the proof is against.
    pub fn size(&self) -> u64 {
        self.size
    }
    /// The low leaf.
    pub fn low_leaf(&self) -> &IndexedLeaf {
        &self.low
    }
    /// The low leaf's siblings, bottom-up.
    pub fn siblings(&self) -> &[Hash] {
        &self.siblings
    }
    pub(crate) fn into_siblings(self) -> Vec<Hash> {
        self.siblings
    }

    /// Checks that `value` is absent from the indexed tree of `arity` and
    /// `hash` whose head the caller trusts: the proof is about `value`, its
    /// low leaf brackets it (`low.value < value`, and `value <
    /// low.next_value` or the low leaf is the last), and the low leaf with
    /// its siblings hashes to the trusted root at the trusted size.
    pub fn verify(
        &self,
        arity: Arity,
        hash: HashKind,
        trusted: &TreeHead,
        value: &Hash,
    ) -> Result<(), IndexedVerifyError> {
        check_trusted(arity, hash, self.arity, self.hash, trusted)?;
        if self.value != *value {
            return Err(IndexedVerifyError::ValueMismatch {
                proof: self.value,
                asked: *value,
            });
        }
        check_value(hash, "value", value)?;
        check_size(self.size, trusted.size)?;
        check_leaf(hash, "low leaf", &self.low, self.size)?;
        check_guard_index(self.low_index, &self.low)?;
        if !self.low.brackets(value) {
            return Err(IndexedVerifyError::NotBracketed {
                value: *value,
                low: self.low.value,
                next: self.low.next_value,
            });
        }
        let root = fold(
            arity,
            hash,
            self.low_index,
            self.size,
            self.low.hash(hash),
            &self.siblings,
        )?;
        check_root(root, trusted, "root")?;
        Ok(())
    }
}

impl IndexedMembershipProof {
    /// The arity the proof was made for.
    pub fn arity(&self) -> Arity {
        self.arity
    }
    /// The hash the proof was made for.
    pub fn hash(&self) -> HashKind {
        self.hash
    }
    /// The leaf's index.
    pub fn index(&self) -> u64 {
        self.index
    }
    /// The tree size the proof is against.
    pub fn size(&self) -> u64 {
        self.size
    }
    /// The leaf, with its pointer.
    pub fn leaf(&self) -> &IndexedLeaf {
        &self.leaf
    }
    /// The siblings, bottom-up.
    pub fn siblings(&self) -> &[Hash] {
        &self.siblings
    }

    /// Checks that the indexed tree of `arity` and `hash` whose head the
    /// caller trusts holds `value` at the proof's index: the leaf holds
    /// `value` and hashes, with its siblings, to the trusted root.
    pub fn verify(
        &self,
        arity: Arity,
        hash: HashKind,
        trusted: &TreeHead,
        value: &Hash,
    ) -> Result<(), IndexedVerifyError> {
        check_trusted(arity, hash, self.arity, self.hash, trusted)?;
        if self.leaf.value != *value {
            return Err(IndexedVerifyError::ValueMismatch {
                proof: self.leaf.value,
                asked: *value,
            });
        }
        check_size(self.size, trusted.size)?;
        check_leaf(hash, "leaf", &self.leaf, self.size)?;
        check_guard_index(self.index, &self.leaf)?;
        let root = fold(
            arity,
            hash,
            self.index,
            self.size,
            self.leaf.hash(hash),
            &self.siblings,
        )?;
        check_root(root, trusted, "root")?;
        Ok(())
    }
}

/// The roots of the tree of `index` leaves and of the tree after a new
/// last leaf `index`, from that leaf's siblings (all to its left: the old
/// tree's frontier) by the core's [`GroupRule::root_after`].
fn fold_append(
    arity: Arity,
    hash: HashKind,
    index: u64,
    leaf: Hash,
    siblings: &[Hash],
) -> Result<(Option<Hash>, Hash), VerifyError> {
    let frontier =
        Frontier::new(arity, index, siblings.to_vec()).map_err(|e| VerifyError::HashCount {
            got: e.got,
            want: e.want,
        })?;
    for (i, sibling) in siblings.iter().enumerate() {
        if !hash.accepts(sibling) {
            return Err(VerifyError::NonCanonical {
                what: format!("new leaf sibling {i}"),
                value: *sibling,
            });
        }
    }
    let rule = TreeConfig::new(arity, hash)
        .with_kind(crate::TreeKind::Indexed)
        .group_rule();
    let old = rule.root_after(&frontier, &[]);
    let new = rule
        .root_after(&frontier, std::slice::from_ref(&leaf))
        .expect("a tree with a leaf has a root");
    Ok((old, new))
}

impl InsertionWitness {
    /// The arity the witness was made for.
    pub fn arity(&self) -> Arity {
        self.arity
    }
    /// The hash the witness was made for.
    pub fn hash(&self) -> HashKind {
        self.hash
    }
    /// The size of the tree before the first insertion.
    pub fn old_size(&self) -> u64 {
        self.old_size
    }
    /// The insertions, in order.
    pub fn steps(&self) -> &[InsertionStep] {
        &self.steps
    }
    /// The values inserted, in order.
    pub fn values(&self) -> impl Iterator<Item = &Hash> {
        self.steps.iter().map(|s| &s.value)
    }

    /// Checks every insertion against the trusted head before it, starting
    /// from `trusted` (the tree before the first), and returns the head
    /// after the last; a witness of no insertion is refused (no tree makes
    /// one). Insertion of `x` into the tree of `s` leaves:
    ///
    /// 1. the low leaf brackets `x` and, with its siblings, hashes to the
    ///    root at `s` (so `x` was absent);
    /// 2. the low leaf pointing to `x` (`(low.value, s, x)`) with the same
    ///    siblings gives the intermediate root;
    /// 3. the new leaf `(x, low.next_index, low.next_value)` at index `s`
    ///    with its siblings gives, without it, the intermediate root, and
    ///    with it the root at `s + 1`.
    pub fn verify(
        &self,
        arity: Arity,
        hash: HashKind,
        trusted: &TreeHead,
    ) -> Result<TreeHead, IndexedVerifyError> {
        check_trusted(arity, hash, self.arity, self.hash, trusted)?;
        check_size(self.old_size, trusted.size)?;
        if self.steps.is_empty() {
            return Err(IndexedVerifyError::EmptyWitness);
        }
        let mut head = *trusted;
        for (j, step) in self.steps.iter().enumerate() {
            head = step
                .verify(arity, hash, &head)
                .map_err(|reason| IndexedVerifyError::Step {
                    step: j,
                    reason: Box::new(reason),
                })?;
        }
        Ok(head)
    }
}

impl InsertionStep {
    fn verify(
        &self,
        arity: Arity,
        hash: HashKind,
        before: &TreeHead,
    ) -> Result<TreeHead, IndexedVerifyError> {
        let size = before.size;
        check_value(hash, "value", &self.value)?;
        check_leaf(hash, "low leaf", &self.low, size)?;
        check_guard_index(self.low_index, &self.low)?;
        if !self.low.brackets(&self.value) {
            return Err(IndexedVerifyError::NotBracketed {
                value: self.value,
                low: self.low.value,
                next: self.low.next_value,
            });
        }
        let root = fold(
            arity,
            hash,
            self.low_index,
            size,
            self.low.hash(hash),
            &self.low_siblings,
        )?;
        check_root(root, before, "old root")?;
        let updated = IndexedLeaf {
            value: self.low.value,
            next_index: size,
            next_value: self.value,
        };
        let middle = fold(
            arity,
            hash,
            self.low_index,
            size,
            updated.hash(hash),
            &self.low_siblings,
        )?;
        let new = IndexedLeaf {
            value: self.value,
            next_index: self.low.next_index,
            next_value: self.low.next_value,
        };
        let (without, with) = fold_append(arity, hash, size, new.hash(hash), &self.new_siblings)?;
        let without = without.unwrap_or_default();
        if without != middle {
            return Err(VerifyError::RootMismatch {
                which: "root before the new leaf",
                computed: without,
                trusted: middle,
            }
            .into());
        }
        Ok(TreeHead::new(size + 1, with))
    }
}
