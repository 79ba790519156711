//! The kind of a tree: how a level's last, partial group becomes its parent,
//! and how many levels the tree has. Everything else (complete groups, level
//! lengths, which nodes are final) is the same in every kind.
//!
//! Two rules live here and nowhere else. The partial-group rule is
//! [`group_parent`]: the tree, its views, the provers, the verifiers and
//! every recompute from known nodes (`recompute.rs`) call it. The kind's
//! encoding (an id byte, a depth byte and the zero value in binary
//! encodings; a name with a depth and zero in text ones) is
//! [`TreeKind::fields`] and [`TreeKind::from_fields`], [`TreeKind::name`]
//! and [`TreeKind::from_name`]: `cairn.meta`, the proof encodings and the
//! tile checkpoint all go through them.

use std::sync::Arc;

use crate::Arity;
use crate::hash::{Hash, HashKind, MAX_GROUP};
use crate::hex::Hex;

/// The deepest fixed-depth tree: a u64 leaf index has at most 64 binary
/// digits, and the checkpoint format holds at most 65 levels.
pub const MAX_FIXED_DEPTH: u32 = 64;

/// What a tree is shaped like, beyond its arity and hash. Chosen at
/// creation and stored with the tree.
///
/// - [`TreeKind::Lean`]: the LeanIMT (zk-kit's `LeanIMT`, rotortree). A
///   group of one member is lifted unchanged; a partial group is hashed
///   over exactly its members; the tree is as deep as its size needs
///   (`ceil(log_N(size))`); the empty tree has no root.
/// - [`TreeKind::Fixed`]: the fixed-depth, zero-padded incremental tree
///   (zk-kit's `IMT`, `BinaryIMT.sol`, `QuinaryIMT.sol`; Tornado Cash's
///   shape). `zeros[0] = zero`, `zeros[k + 1] = H(zeros[k]` N times`)`;
///   every group at level k is padded to N members with `zeros[k]` (a lone
///   member too) and hashed; the root is the one node of level `depth`,
///   and the empty tree's root is `zeros[depth]`.
/// - [`TreeKind::Indexed`]: the indexed tree (docs/spec.md section 12):
///   Lean-shaped, over leaves that form a linked list sorted by value, so
///   that it proves absence; inserting a value rewrites an earlier leaf, so
///   it is not append-only ([`TreeKind::is_append_only`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum TreeKind {
    /// The Lean Incremental Merkle Tree (the default).
    #[default]
    Lean,
    /// The fixed-depth tree padded with zero hashes.
    Fixed {
        /// Levels above the leaves, 1..=64: the tree holds at most N^depth leaves.
        depth: u32,
        /// The value of an absent leaf, `zeros[0]`.
        zero: Hash,
    },
    /// The indexed tree: Lean-shaped, over sorted linked-list leaves.
    Indexed,
}

impl std::fmt::Debug for TreeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TreeKind::Lean => f.write_str("Lean"),
            TreeKind::Indexed => f.write_str("Indexed"),
            TreeKind::Fixed { depth, zero } => f
                .debug_struct("Fixed")
                .field("depth", depth)
                .field("zero", &Hex(zero))
                .finish(),
        }
    }
}

impl TreeKind {
    /// Every kind's [`name`](TreeKind::name), in the order of the variants:
    /// what the CLI's `--kind` offers and ARCHITECTURE.md lists (tests
    /// check both against it).
    pub const NAMES: [&'static str; 3] = ["lean", "imt", "indexed"];

    /// The name the CLI, the server and the JSON encodings use: `lean`,
    /// `imt` or `indexed`.
    pub const fn name(&self) -> &'static str {
        match self {
            TreeKind::Lean => "lean",
            TreeKind::Fixed { .. } => "imt",
            TreeKind::Indexed => "indexed",
        }
    }

    /// The fixed depth, `None` for a Lean or indexed tree.
    pub const fn fixed_depth(&self) -> Option<u32> {
        match self {
            TreeKind::Lean | TreeKind::Indexed => None,
            TreeKind::Fixed { depth, .. } => Some(*depth),
        }
    }

    /// The zero value of a fixed-depth tree, `None` for a Lean or indexed tree.
    pub const fn zero(&self) -> Option<Hash> {
        match self {
            TreeKind::Lean | TreeKind::Indexed => None,
            TreeKind::Fixed { zero, .. } => Some(*zero),
        }
    }

    /// Whether the tree only grows at its right edge (every leaf, once
    /// written, keeps its value), so that consistency proofs between two
    /// of its heads exist: Lean and fixed-depth trees, not indexed ones.
    pub const fn is_append_only(&self) -> bool {
        !matches!(self, TreeKind::Indexed)
    }

    /// Whether this kind can be a tree of `hash`: the depth is in
    /// 1..=[`MAX_FIXED_DEPTH`] and the hash accepts the zero value (a field
    /// hash takes only canonical field elements).
    pub fn check(&self, hash: HashKind) -> Result<(), KindError> {
        match *self {
            TreeKind::Lean | TreeKind::Indexed => Ok(()),
            TreeKind::Fixed { depth, zero } => {
                if !(1..=MAX_FIXED_DEPTH).contains(&depth) {
                    return Err(KindError::Depth { depth });
                }
                if !hash.accepts(&zero) {
                    return Err(KindError::Zero { zero, hash });
                }
                Ok(())
            }
        }
    }

    /// `zeros[0..=depth]` of a fixed-depth tree: `zeros[0] = zero`,
    /// `zeros[k + 1]` the hash of N copies of `zeros[k]`, `zeros[depth]` the
    /// root of the empty tree. Empty for a Lean or indexed tree. Costs
    /// `depth` hashes.
    pub fn zeros(&self, arity: Arity, hash: HashKind) -> Vec<Hash> {
        match *self {
            TreeKind::Lean | TreeKind::Indexed => Vec::new(),
            TreeKind::Fixed { depth, zero } => {
                let mut zeros = Vec::with_capacity(depth as usize + 1);
                zeros.push(zero);
                for _ in 0..depth {
                    let below = *zeros.last().expect("zeros[0] is pushed first");
                    zeros.push(hash.hash_children(&[below; MAX_GROUP][..arity.get()]));
                }
                zeros
            }
        }
    }
}

/// A tree kind as cairn's binary encodings write it (`cairn.meta` version
/// 2, version 2 proof headers): an id byte, a depth byte and the zero
/// value. Only the kinds other than Lean have fields: a Lean tree's files
/// and proofs are version 1 and name no kind.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct KindFields {
    /// [`TreeKind::FIXED_ID`] or [`TreeKind::INDEXED_ID`].
    pub id: u8,
    /// A fixed-depth tree's depth; 0 for an indexed tree.
    pub depth: u8,
    /// A fixed-depth tree's zero value; 32 zero bytes for an indexed tree.
    pub zero: Hash,
}

impl std::fmt::Debug for KindFields {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KindFields")
            .field("id", &self.id)
            .field("depth", &self.depth)
            .field("zero", &Hex(&self.zero))
            .finish()
    }
}

impl TreeKind {
    /// The id byte of a fixed-depth tree (0 is never written: a Lean
    /// tree's encodings are version 1, without a kind).
    pub const FIXED_ID: u8 = 1;
    /// The id byte of an indexed tree (its depth byte and zero are 0).
    pub const INDEXED_ID: u8 = 2;

    /// The fields a version 2 encoding writes for this kind; `None` for a
    /// Lean tree, which is written as version 1.
    ///
    /// # Panics
    /// For a fixed depth above 255 (a programmer error: [`TreeKind::check`]
    /// allows at most [`MAX_FIXED_DEPTH`]).
    pub fn fields(&self) -> Option<KindFields> {
        match *self {
            TreeKind::Lean => None,
            TreeKind::Fixed { depth, zero } => Some(KindFields {
                id: TreeKind::FIXED_ID,
                depth: u8::try_from(depth).expect("depths are 1..=64 (`TreeKind::check`)"),
                zero,
            }),
            TreeKind::Indexed => Some(KindFields {
                id: TreeKind::INDEXED_ID,
                depth: 0,
                zero: [0; 32],
            }),
        }
    }

    /// The kind `fields` name, refusing an unknown id and an indexed tree
    /// with a depth or zero (one encoding per kind). The depth's range and
    /// the zero's fit to the hash are [`TreeKind::check`]'s.
    pub fn from_fields(fields: &KindFields) -> Result<TreeKind, KindCodeError> {
        match fields.id {
            TreeKind::FIXED_ID => Ok(TreeKind::Fixed {
                depth: u32::from(fields.depth),
                zero: fields.zero,
            }),
            TreeKind::INDEXED_ID if fields.depth != 0 || fields.zero != [0; 32] => {
                Err(KindCodeError::IndexedFields {
                    depth: fields.depth,
                    zero: fields.zero,
                })
            }
            TreeKind::INDEXED_ID => Ok(TreeKind::Indexed),
            id => Err(KindCodeError::UnknownId { id }),
        }
    }

    /// The kind a text encoding names: `imt` with its depth and zero
    /// value, or `indexed` with neither (the name of [`TreeKind::name`]; a
    /// Lean tree's text encodings name no kind). The depth's range and
    /// the zero's fit to the hash are [`TreeKind::check`]'s.
    pub fn from_name(
        name: &str,
        depth: Option<u32>,
        zero: Option<Hash>,
    ) -> Result<TreeKind, KindCodeError> {
        match (name, depth, zero) {
            ("imt", Some(depth), Some(zero)) => Ok(TreeKind::Fixed { depth, zero }),
            ("imt", _, _) => Err(KindCodeError::ImtFields),
            ("indexed", None, None) => Ok(TreeKind::Indexed),
            ("indexed", _, _) => Err(KindCodeError::IndexedNamedFields),
            (other, _, _) => Err(KindCodeError::UnknownName {
                name: other.to_owned(),
            }),
        }
    }
}

/// Encoded kind fields that name no kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KindCodeError {
    /// An id byte other than [`TreeKind::FIXED_ID`] and [`TreeKind::INDEXED_ID`].
    #[error(
        "tree kind byte {id} is unknown, want {} (imt) or {} (indexed)",
        TreeKind::FIXED_ID,
        TreeKind::INDEXED_ID
    )]
    UnknownId {
        /// The id byte read.
        id: u8,
    },
    /// An indexed tree's id with a depth or zero that is not 0.
    #[error(
        "an indexed tree's depth byte and zero are 0, got depth {depth} and zero {}",
        Hex(zero)
    )]
    IndexedFields {
        /// The depth byte read.
        depth: u8,
        /// The zero read.
        zero: Hash,
    },
    /// A name other than `imt` and `indexed`.
    #[error("tree kind {name:?} is unknown, want \"imt\" or \"indexed\"")]
    UnknownName {
        /// The name read.
        name: String,
    },
    /// `imt` without its depth or zero value.
    #[error("an imt names its depth and its zero value")]
    ImtFields,
    /// `indexed` with a depth or zero value.
    #[error("an indexed tree names no depth or zero value")]
    IndexedNamedFields,
}

/// A [`TreeKind`] that cannot be a tree of its hash.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KindError {
    /// A fixed depth outside 1..=64.
    #[error("fixed-depth tree depth {depth} is out of range, want 1..={MAX_FIXED_DEPTH}")]
    Depth {
        /// The depth given.
        depth: u32,
    },
    /// A zero value the hash refuses (a field hash's non-canonical value).
    #[error(
        "zero value {} is not a canonical BN254 field element, which a {hash} tree needs",
        Hex(zero)
    )]
    Zero {
        /// The zero value given.
        zero: Hash,
        /// The tree's hash.
        hash: HashKind,
    },
    /// A maximum depth beside a fixed depth.
    #[error(
        "a fixed-depth tree takes no maximum depth: its depth {depth} is its limit (got max depth {max_depth})"
    )]
    MaxDepth {
        /// The fixed depth.
        depth: u32,
        /// The maximum depth given.
        max_depth: u32,
    },
}

/// The parent of a group of `members` (1..=N nodes of one level, in index
/// order) in a tree of arity `n`: the rule that tells the kinds apart, in
/// one place (docs/spec.md, sections 2 and 2.1). Clients in other
/// languages mirror this function (clients/ts: `groupParent`).
///
/// `pad` is `None` for a Lean tree: a lone member is lifted unchanged and
/// any other group is hashed over exactly its members. For a fixed-depth
/// tree it is the zero of the members' level: a group of fewer than N
/// members is padded with it to N and hashed (a lone member too). A
/// caller that holds a tree's configuration rather than its zeros uses
/// [`GroupRule::parent`](crate::recompute::GroupRule::parent).
///
/// # Panics
/// If `members` is empty or longer than `n`, or `n` is above 16.
#[inline]
pub fn group_parent(hash: HashKind, n: usize, pad: Option<&Hash>, members: &[Hash]) -> Hash {
    assert!(
        (1..=n).contains(&members.len()) && n <= MAX_GROUP,
        "a group has 1..=N members, got {} at N = {n}",
        members.len()
    );
    match (pad, members) {
        (None, [alone]) => *alone,
        (Some(zero), _) if members.len() < n => {
            let mut group = [*zero; MAX_GROUP];
            group[..members.len()].copy_from_slice(members);
            hash.hash_children(&group[..n])
        }
        _ => hash.hash_children(members),
    }
}

/// The zero of every level of a fixed-depth tree, computed once per tree
/// and shared by its clones, snapshots and views (`None` for a Lean tree).
#[derive(Clone, Debug, Default)]
pub(crate) struct Zeros(Option<Arc<[Hash]>>);

impl Zeros {
    /// The zeros of a tree of `arity`, `hash` and `kind`.
    pub(crate) fn new(arity: Arity, hash: HashKind, kind: TreeKind) -> Zeros {
        match kind {
            TreeKind::Fixed { .. } => Zeros(Some(kind.zeros(arity, hash).into())),
            TreeKind::Lean | TreeKind::Indexed => Zeros(None),
        }
    }

    /// What pads a partial group at `level`: `None` for a Lean tree.
    ///
    /// # Panics
    /// For a fixed-depth tree, at a level above its depth (a programmer
    /// error: no group lives there).
    #[inline]
    pub(crate) fn pad(&self, level: u32) -> Option<&Hash> {
        self.0.as_deref().map(|zeros| &zeros[level as usize])
    }

    /// The root of the empty tree: `zeros[depth]`, `None` for a Lean tree.
    #[inline]
    pub(crate) fn empty_root(&self) -> Option<Hash> {
        self.0.as_deref().and_then(|zeros| zeros.last().copied())
    }
}

/// Zeros a verifier computes as it climbs, only as high as it needs them:
/// a proof through complete groups needs none. The chain of the last tree
/// a thread verified against is kept (at most 65 values) and reused, so a
/// verifier checking many proofs of one tree hashes its zeros once.
pub(crate) struct ClimbingZeros {
    /// (arity, hash, zero) of a fixed-depth tree; `None` for a Lean tree.
    key: Option<(Arity, HashKind, Hash)>,
    /// `zeros[0..=known]`.
    zeros: arrayvec::ArrayVec<Hash, { MAX_FIXED_DEPTH as usize + 1 }>,
}

/// The chain of zeros of one tree, by (arity, hash, zero value).
type ZeroChain = (
    (Arity, HashKind, Hash),
    arrayvec::ArrayVec<Hash, { MAX_FIXED_DEPTH as usize + 1 }>,
);

thread_local! {
    /// The longest chain computed for the last tree this thread verified against.
    static LAST_CHAIN: std::cell::RefCell<Option<ZeroChain>> = const { std::cell::RefCell::new(None) };
}

impl ClimbingZeros {
    pub(crate) fn new(arity: Arity, hash: HashKind, kind: TreeKind) -> ClimbingZeros {
        let key = kind.zero().map(|zero| (arity, hash, zero));
        let mut zeros = arrayvec::ArrayVec::new();
        if let Some(key) = key {
            LAST_CHAIN.with_borrow(|last| match last {
                Some((cached, chain)) if *cached == key => zeros.clone_from(chain),
                _ => zeros.push(key.2),
            });
        }
        ClimbingZeros { key, zeros }
    }

    /// What pads a partial group at `level` (see [`Zeros::pad`]).
    pub(crate) fn pad(&mut self, level: u32) -> Option<&Hash> {
        let (arity, hash, _) = self.key?;
        while self.zeros.len() <= level as usize {
            let below = *self.zeros.last().expect("zeros[0] is pushed first");
            self.zeros
                .push(hash.hash_children(&[below; MAX_GROUP][..arity.get()]));
        }
        self.zeros.get(level as usize)
    }
}

impl Drop for ClimbingZeros {
    fn drop(&mut self) {
        if let Some(key) = self.key {
            let zeros = std::mem::take(&mut self.zeros);
            LAST_CHAIN.with_borrow_mut(|last| match last {
                Some((cached, chain)) if *cached == key && chain.len() >= zeros.len() => {}
                _ => *last = Some((key, zeros)),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decimal(text: &str) -> Hash {
        crate::decimal::parse_field_element(text).unwrap()
    }

    /// `BinaryIMT.sol`'s default zeroes (zk-kit.solidity, `InternalBinaryIMT`:
    /// `Z_0 = 0`, `Z_1`, `Z_2`, `Z_32`) are `zeros` of zero value 0 at N = 2
    /// under Poseidon.
    #[test]
    fn poseidon_zeros_of_zero_are_the_binary_imt_contract_defaults() {
        let kind = TreeKind::Fixed {
            depth: 32,
            zero: [0; 32],
        };
        let zeros = kind.zeros(Arity::BINARY, HashKind::Poseidon);
        assert_eq!(zeros.len(), 33);
        assert_eq!(zeros[0], [0; 32]);
        assert_eq!(
            zeros[1],
            decimal(
                "14744269619966411208579211824598458697587494354926760081771325075741142829156"
            )
        );
        assert_eq!(
            zeros[2],
            decimal("7423237065226347324353380772367382631490014989348495481811164164159255474657")
        );
        assert_eq!(
            zeros[32],
            decimal(
                "21443572485391568159800782191812935835534334817699172242223315142338162256601"
            )
        );
        let mut climbing = ClimbingZeros::new(Arity::BINARY, HashKind::Poseidon, kind);
        assert_eq!(climbing.pad(32), Some(&zeros[32]));
        assert_eq!(climbing.pad(1), Some(&zeros[1]));
    }

    /// The thread's cached chain is reused only for the same arity, hash
    /// and zero value.
    #[test]
    fn climbing_zeros_reuse_the_last_chain_only_for_the_same_tree() {
        let fixed = |zero| TreeKind::Fixed { depth: 8, zero };
        let (a, b) = (fixed([1; 32]), fixed([2; 32]));
        let three = Arity::new(3).unwrap();
        for (arity, hash, kind) in [
            (Arity::BINARY, HashKind::Blake3, a),
            (Arity::BINARY, HashKind::Blake3, b),
            (three, HashKind::Blake3, a),
            (Arity::BINARY, HashKind::Sha256, a),
            (Arity::BINARY, HashKind::Blake3, a),
        ] {
            let want = kind.zeros(arity, hash);
            // A climb to level 5 leaves a chain the next climb starts from.
            let mut first = ClimbingZeros::new(arity, hash, kind);
            assert_eq!(first.pad(5), Some(&want[5]));
            drop(first);
            let mut again = ClimbingZeros::new(arity, hash, kind);
            assert_eq!(again.zeros.len(), 6, "the cached chain is reused");
            assert_eq!(again.pad(8), Some(&want[8]));
            assert_eq!(again.pad(0), Some(&want[0]));
        }
        assert_eq!(
            ClimbingZeros::new(Arity::BINARY, HashKind::Blake3, TreeKind::Lean).pad(3),
            None
        );
    }

    /// Tornado Cash's `MerkleTreeWithHistory.sol` lists its zero hashes:
    /// `zeros(0)` = keccak256("tornado") mod p, `zeros(i + 1)` =
    /// `hashLeftRight(zeros(i), zeros(i))` (MiMCSponge), `zeros(20)` the
    /// empty root of its depth-20 deposit tree.
    #[test]
    fn mimcsponge_zeros_of_tornados_zero_value_are_tornados_zeros() {
        let hex = |text: &str| crate::hex::parse_hash(text).unwrap();
        let kind = TreeKind::Fixed {
            depth: 31,
            zero: decimal(
                "21663839004416932945382355908790599225266501822907911457504978515578255421292",
            ),
        };
        let zeros = kind.zeros(Arity::BINARY, HashKind::MiMCSponge);
        for (level, want) in [
            (
                0,
                "0x2fe54c60d3acabf3343a35b6eba15db4821b340f76e741e2249685ed4899af6c",
            ),
            (
                1,
                "0x256a6135777eee2fd26f54b8b7037a25439d5235caee224154186d2b8a52e31d",
            ),
            (
                10,
                "0x1f04ef20dee48d39984d8eabe768a70eafa6310ad20849d4573c3c40c2ad1e30",
            ),
            (
                20,
                "0x29d7ed391256ccc3ea596c86e933b89ff339d25ea8ddced975ae2fe30b5296d4",
            ),
            (
                31,
                "0x2c7a07d20dff79d01fecedc1134284a8d08436606c93693b67e333f671bf69cc",
            ),
        ] {
            assert_eq!(zeros[level], hex(want), "zeros({level})");
        }
    }

    #[test]
    fn group_parent_lifts_or_pads_by_kind() {
        let h = HashKind::Blake3;
        let (a, b, z) = ([1; 32], [2; 32], [9; 32]);
        assert_eq!(group_parent(h, 4, None, &[a]), a);
        assert_eq!(group_parent(h, 4, None, &[a, b]), h.hash_children(&[a, b]));
        assert_eq!(
            group_parent(h, 4, Some(&z), &[a]),
            h.hash_children(&[a, z, z, z])
        );
        assert_eq!(
            group_parent(h, 2, Some(&z), &[a, b]),
            h.hash_children(&[a, b])
        );
    }

    /// The codec round-trips every kind that has fields and refuses every
    /// other id, an indexed tree's non-zero fields, and names it does not know.
    #[test]
    fn the_kind_codec_round_trips_and_refuses_what_would_not_re_encode() {
        let fixed = TreeKind::Fixed {
            depth: 20,
            zero: [7; 32],
        };
        assert_eq!(TreeKind::Lean.fields(), None);
        for kind in [fixed, TreeKind::Indexed] {
            let fields = kind.fields().unwrap();
            assert_eq!(TreeKind::from_fields(&fields), Ok(kind));
            let (depth, zero) = (kind.fixed_depth(), kind.zero());
            assert_eq!(TreeKind::from_name(kind.name(), depth, zero), Ok(kind));
        }
        assert_eq!(fixed.fields().unwrap().id, TreeKind::FIXED_ID);
        for id in [0, 3, 255] {
            let fields = KindFields {
                id,
                depth: 0,
                zero: [0; 32],
            };
            let error = TreeKind::from_fields(&fields).unwrap_err();
            assert_eq!(
                error.to_string(),
                format!("tree kind byte {id} is unknown, want 1 (imt) or 2 (indexed)")
            );
        }
        let mut indexed = TreeKind::Indexed.fields().unwrap();
        indexed.depth = 1;
        assert!(matches!(
            TreeKind::from_fields(&indexed),
            Err(KindCodeError::IndexedFields { depth: 1, .. })
        ));
        indexed.depth = 0;
        indexed.zero[31] = 1;
        assert!(TreeKind::from_fields(&indexed).is_err());
        assert_eq!(
            TreeKind::from_name("imt", Some(3), None),
            Err(KindCodeError::ImtFields)
        );
        assert_eq!(
            TreeKind::from_name("indexed", Some(3), None),
            Err(KindCodeError::IndexedNamedFields)
        );
        for name in ["lean", "IMT", ""] {
            assert!(matches!(
                TreeKind::from_name(name, None, None),
                Err(KindCodeError::UnknownName { .. })
            ));
        }
    }

    /// `NAMES` holds every kind's name once: the match has no wildcard, so
    /// a new kind does not compile until it has a place in `NAMES`.
    #[test]
    fn names_lists_every_kind_once() {
        let place = |kind: TreeKind| match kind {
            TreeKind::Lean => 0,
            TreeKind::Fixed { .. } => 1,
            TreeKind::Indexed => 2,
        };
        let kinds = [
            TreeKind::Lean,
            TreeKind::Fixed {
                depth: 1,
                zero: [0; 32],
            },
            TreeKind::Indexed,
        ];
        assert_eq!(kinds.len(), TreeKind::NAMES.len());
        for kind in kinds {
            assert_eq!(TreeKind::NAMES[place(kind)], kind.name());
        }
    }

    #[test]
    fn kinds_are_checked_against_their_hash() {
        let fixed = |depth, zero| TreeKind::Fixed { depth, zero };
        assert!(TreeKind::Lean.check(HashKind::Poseidon).is_ok());
        assert!(fixed(20, [0; 32]).check(HashKind::Poseidon).is_ok());
        assert_eq!(
            fixed(0, [0; 32])
                .check(HashKind::Blake3)
                .unwrap_err()
                .to_string(),
            "fixed-depth tree depth 0 is out of range, want 1..=64"
        );
        assert!(fixed(65, [0; 32]).check(HashKind::Blake3).is_err());
        assert!(fixed(64, [0xff; 32]).check(HashKind::Blake3).is_ok());
        assert!(matches!(
            fixed(3, [0xff; 32]).check(HashKind::MiMCSponge),
            Err(KindError::Zero { .. })
        ));
        assert_eq!(
            format!("{:?}", fixed(2, [0; 32])).len(),
            "Fixed { depth: 2, zero: 0x }".len() + 64
        );
    }
}
