//! The independent implementations cairn is cross-checked against, and the
//! node hashes they are driven with. Nothing here calls cairn's hashers: the
//! byte hashes come from the `blake3`, `sha2` and `sha3` crates (BLAKE3
//! through rotortree's own adapter where rotortree hashes), Poseidon from
//! `light-poseidon`.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use ark_bn254::Fr;
use cairn_core::{Hash, HashKind};
use light_poseidon::{Poseidon, PoseidonBytesHasher};
use rotortree::{HashState, Hasher, LeanIMT};

/// How `agreed_with` names rotortree.
pub const ROTORTREE: &str = "rotortree 0.20.0";
/// How `agreed_with` names the Rust zk-kit LeanIMT.
pub const ZK_KIT: &str = "zk-kit-lean-imt 0.1.1";
/// The largest group light-poseidon's circom parameters cover.
pub const LIGHT_POSEIDON_MAX_INPUTS: usize = 12;

/// rotortree's depth bound; 1100 leaves at arity 2 need depth 11.
const MAX_DEPTH: usize = 32;

/// light-poseidon's circom-compatible Poseidon for 1..=12 inputs, memoised
/// (the trees over many prefixes of the same leaves share every complete
/// subtree, so most groups repeat; Poseidon is a pure function).
#[derive(Clone)]
pub struct LightPoseidon {
    inner: Arc<LightPoseidonInner>,
}

struct LightPoseidonInner {
    /// `hashers[k - 1]` hashes k inputs.
    hashers: Vec<Mutex<Poseidon<Fr>>>,
    memo: Mutex<HashMap<Vec<Hash>, Hash>>,
}

impl fmt::Debug for LightPoseidon {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LightPoseidon")
    }
}

impl LightPoseidon {
    pub fn new() -> LightPoseidon {
        let hashers = (1..=LIGHT_POSEIDON_MAX_INPUTS)
            .map(|k| {
                Mutex::new(Poseidon::<Fr>::new_circom(k).unwrap_or_else(|e| {
                    panic!("light-poseidon has circom parameters for {k} inputs: {e}")
                }))
            })
            .collect();
        LightPoseidon {
            inner: Arc::new(LightPoseidonInner {
                hashers,
                memo: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// circomlib `poseidon(inputs)` of big-endian field elements, or an error
    /// if light-poseidon refuses them (too many inputs, a value >= the modulus).
    pub fn hash(&self, inputs: &[Hash]) -> Result<Hash, String> {
        let hasher = inputs
            .len()
            .checked_sub(1)
            .and_then(|i| self.inner.hashers.get(i))
            .ok_or_else(|| {
                format!(
                    "light-poseidon has no circom parameters for {} inputs",
                    inputs.len()
                )
            })?;
        if let Some(out) = self
            .inner
            .memo
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(inputs)
        {
            return Ok(*out);
        }
        let slices: Vec<&[u8]> = inputs.iter().map(|x| x.as_slice()).collect();
        let out = hasher
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .hash_bytes_be(&slices)
            .map_err(|e| format!("light-poseidon refused {} inputs: {e}", inputs.len()))?;
        self.inner
            .memo
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(inputs.to_vec(), out);
        Ok(out)
    }
}

/// The node hashes of the independent crates, one per cairn [`HashKind`].
#[derive(Clone, Debug)]
pub struct PeerHashes {
    pub poseidon: LightPoseidon,
}

impl PeerHashes {
    pub fn new() -> PeerHashes {
        PeerHashes {
            poseidon: LightPoseidon::new(),
        }
    }

    /// The parent of `children` under `kind`, computed without cairn, or an
    /// error if no independent implementation covers that group size.
    pub fn hash_children(&self, kind: HashKind, children: &[Hash]) -> Result<Hash, String> {
        let bytes = children.as_flattened();
        Ok(match kind {
            HashKind::Blake3 => *blake3::hash(bytes).as_bytes(),
            HashKind::Sha256 => {
                use sha2::Digest as _;
                sha2::Sha256::digest(bytes).into()
            }
            HashKind::Keccak256 => {
                use sha3::Digest as _;
                sha3::Keccak256::digest(bytes).into()
            }
            HashKind::Poseidon => return self.poseidon.hash(children),
            // No Rust crate implements circomlib's MiMCSponge: its only
            // independent check is circomlibjs, through typescript.json.
            HashKind::MiMCSponge => {
                return Err("no independent rust implementation of mimcsponge".to_owned());
            }
        })
    }

    /// Whether a peer can hash every group of a tree of `arity` under `kind`.
    pub fn covers(kind: HashKind, arity: usize) -> bool {
        match kind {
            HashKind::Poseidon => arity <= LIGHT_POSEIDON_MAX_INPUTS,
            HashKind::MiMCSponge => false,
            HashKind::Blake3 | HashKind::Sha256 | HashKind::Keccak256 => true,
        }
    }
}

// ---- rotortree hashers ------------------------------------------------------

/// rotortree's streaming state over `sha2::Sha256`.
#[derive(Debug)]
pub struct Sha256State(sha2::Sha256);

impl HashState for Sha256State {
    fn update(&mut self, data: &[u8]) {
        sha2::Digest::update(&mut self.0, data);
    }
    fn finalize(self) -> Hash {
        sha2::Digest::finalize(self.0).into()
    }
}

/// SHA-256 for rotortree, through its default streaming `hash_children`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sha256Hasher;

impl Hasher for Sha256Hasher {
    type State = Sha256State;
    fn new_state(&self) -> Sha256State {
        Sha256State(<sha2::Sha256 as sha2::Digest>::new())
    }
}

/// rotortree's streaming state over `sha3::Keccak256`.
#[derive(Debug)]
pub struct KeccakState(sha3::Keccak256);

impl HashState for KeccakState {
    fn update(&mut self, data: &[u8]) {
        sha3::Digest::update(&mut self.0, data);
    }
    fn finalize(self) -> Hash {
        sha3::Digest::finalize(self.0).into()
    }
}

/// Keccak-256 for rotortree, through its default streaming `hash_children`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Keccak256Hasher;

impl Hasher for Keccak256Hasher {
    type State = KeccakState;
    fn new_state(&self) -> KeccakState {
        KeccakState(<sha3::Keccak256 as sha3::Digest>::new())
    }
}

/// rotortree's streaming state for Poseidon: buffers the concatenated
/// children, then reads them back as 32-byte big-endian field elements.
#[derive(Debug)]
pub struct PoseidonState {
    poseidon: LightPoseidon,
    bytes: Vec<u8>,
}

impl HashState for PoseidonState {
    fn update(&mut self, data: &[u8]) {
        self.bytes.extend_from_slice(data);
    }
    fn finalize(self) -> Hash {
        let (children, rest) = self.bytes.as_chunks::<32>();
        assert!(
            rest.is_empty(),
            "poseidon input is not a whole number of 32-byte children"
        );
        self.poseidon
            .hash(children)
            .unwrap_or_else(|e| panic!("{e}"))
    }
}

/// light-poseidon for rotortree (groups of at most 12 children).
#[derive(Clone, Debug)]
pub struct PoseidonHasher(pub LightPoseidon);

impl Hasher for PoseidonHasher {
    type State = PoseidonState;
    fn new_state(&self) -> PoseidonState {
        PoseidonState {
            poseidon: self.0.clone(),
            bytes: Vec::with_capacity(32 * 16),
        }
    }
    fn hash_children(&self, children: &[Hash]) -> Hash {
        self.0.hash(children).unwrap_or_else(|e| panic!("{e}"))
    }
}

/// Runs `$body` with `$N` bound to the const arity `$n` (2..=16), so that
/// rotortree's const-generic tree can be chosen at run time.
macro_rules! with_arity {
    ($n:expr, $N:ident => $body:expr) => {
        match $n {
            2 => {
                const $N: usize = 2;
                $body
            }
            3 => {
                const $N: usize = 3;
                $body
            }
            4 => {
                const $N: usize = 4;
                $body
            }
            5 => {
                const $N: usize = 5;
                $body
            }
            6 => {
                const $N: usize = 6;
                $body
            }
            7 => {
                const $N: usize = 7;
                $body
            }
            8 => {
                const $N: usize = 8;
                $body
            }
            9 => {
                const $N: usize = 9;
                $body
            }
            10 => {
                const $N: usize = 10;
                $body
            }
            11 => {
                const $N: usize = 11;
                $body
            }
            12 => {
                const $N: usize = 12;
                $body
            }
            13 => {
                const $N: usize = 13;
                $body
            }
            14 => {
                const $N: usize = 14;
                $body
            }
            15 => {
                const $N: usize = 15;
                $body
            }
            16 => {
                const $N: usize = 16;
                $body
            }
            other => unreachable!("arity {other} is outside 2..=16"),
        }
    };
}

/// Runs `$body` with `$h` bound to the rotortree hasher for `$kind`.
macro_rules! with_hasher {
    ($peers:expr, $kind:expr, $h:ident => $body:expr) => {
        match $kind {
            HashKind::Blake3 => {
                let $h = rotortree::Blake3Hasher::new();
                $body
            }
            HashKind::Sha256 => {
                let $h = Sha256Hasher;
                $body
            }
            HashKind::Keccak256 => {
                let $h = Keccak256Hasher;
                $body
            }
            HashKind::Poseidon => {
                let $h = PoseidonHasher($peers.poseidon.clone());
                $body
            }
            HashKind::MiMCSponge => unreachable!("no peer covers mimcsponge"),
        }
    };
}

/// A root and depth as rotortree reports them.
pub type RootDepth = (Option<Hash>, u32);

fn rotortree_tree<H: Hasher, const N: usize>(
    hasher: &H,
    leaves: &[Hash],
) -> Result<LeanIMT<H, N, MAX_DEPTH>, String> {
    let mut tree = LeanIMT::<H, N, MAX_DEPTH>::new(hasher.clone());
    if !leaves.is_empty() {
        tree.insert_many(leaves)
            .map_err(|e| format!("rotortree insert_many: {e}"))?;
    }
    Ok(tree)
}

fn depth_u32(depth: usize) -> u32 {
    u32::try_from(depth).unwrap_or(u32::MAX)
}

/// rotortree's root and depth of every prefix `leaves[..size]` for `sizes`
/// (ascending), each from a fresh tree filled by one `insert_many`. A second
/// tree walks the same sizes by `insert_many` of each gap and, if `singles`,
/// a third by single `insert`s; any disagreement among them is an error.
fn rotortree_roots_n<H: Hasher, const N: usize>(
    hasher: &H,
    leaves: &[Hash],
    sizes: &[u64],
    singles_too: bool,
) -> Result<Vec<RootDepth>, String> {
    let mut batches = LeanIMT::<H, N, MAX_DEPTH>::new(hasher.clone());
    let mut singles = LeanIMT::<H, N, MAX_DEPTH>::new(hasher.clone());
    let mut out = Vec::with_capacity(sizes.len());
    for &size in sizes {
        let size_usize = size as usize;
        let fresh = rotortree_tree::<H, N>(hasher, &leaves[..size_usize])?;
        let have = batches.size() as usize;
        if size_usize > have {
            batches
                .insert_many(&leaves[have..size_usize])
                .map_err(|e| format!("rotortree insert_many: {e}"))?;
        }
        if singles_too {
            for leaf in &leaves[singles.size() as usize..size_usize] {
                singles
                    .insert(*leaf)
                    .map_err(|e| format!("rotortree insert: {e}"))?;
            }
        }
        let want = (fresh.root(), fresh.depth());
        let paths = [
            ("insert_many of each gap", &batches),
            ("single inserts", &singles),
        ];
        for (path, tree) in &paths[..1 + usize::from(singles_too)] {
            if (tree.root(), tree.depth()) != want {
                return Err(format!(
                    "rotortree arity {N} size {size}: one insert_many gives {want:?}, {path} give {:?}",
                    (tree.root(), tree.depth())
                ));
            }
        }
        out.push((fresh.root(), depth_u32(fresh.depth())));
    }
    Ok(out)
}

/// See [`rotortree_roots_n`]; `Ok(None)` when no rotortree hasher covers
/// `kind` at `arity` (Poseidon above 12 children). The single-insert walk is
/// skipped for Poseidon: it only re-checks the tree shape, which the byte
/// hashes already cover, and it costs a light-poseidon hash per level and
/// leaf (most of the generator's run time).
pub fn rotortree_roots(
    peers: &PeerHashes,
    kind: HashKind,
    arity: usize,
    leaves: &[Hash],
    sizes: &[u64],
) -> Result<Option<Vec<RootDepth>>, String> {
    if !PeerHashes::covers(kind, arity) {
        return Ok(None);
    }
    with_hasher!(peers, kind, h => with_arity!(arity, N => rotortree_roots_n::<_, N>(&h, leaves, sizes, kind != HashKind::Poseidon).map(Some)))
}

fn rotortree_membership_n<H: Hasher, const N: usize>(
    hasher: &H,
    leaves: &[Hash],
    index: u64,
) -> Result<(Hash, Vec<Hash>), String> {
    let tree = rotortree_tree::<H, N>(hasher, leaves)?;
    let root = tree.root().ok_or("rotortree: empty tree")?;
    let proof = tree
        .snapshot()
        .generate_proof(index)
        .map_err(|e| format!("rotortree generate_proof: {e}"))?;
    match proof.verify_against(hasher, root) {
        Ok(true) => {}
        other => {
            return Err(format!(
                "rotortree rejects its own proof of leaf {index}: {other:?}"
            ));
        }
    }
    let siblings = proof.levels[..proof.level_count]
        .iter()
        .flat_map(|level| {
            level.siblings[..usize::from(level.sibling_count)]
                .iter()
                .copied()
        })
        .collect();
    Ok((proof.leaf, siblings))
}

/// rotortree's membership proof of leaf `index` in the tree over `leaves`,
/// as (leaf, siblings of every hashing level bottom-up); rotortree checks it
/// against its own root first. `Ok(None)` when rotortree cannot hash `kind`
/// at `arity`.
pub fn rotortree_membership(
    peers: &PeerHashes,
    kind: HashKind,
    arity: usize,
    leaves: &[Hash],
    index: u64,
) -> Result<Option<(Hash, Vec<Hash>)>, String> {
    if !PeerHashes::covers(kind, arity) {
        return Ok(None);
    }
    with_hasher!(peers, kind, h => with_arity!(arity, N => rotortree_membership_n::<_, N>(&h, leaves, index).map(Some)))
}

fn rotortree_consistency_n<H: Hasher, const N: usize>(
    hasher: &H,
    leaves: &[Hash],
    old_size: u64,
) -> Result<(Hash, Vec<Hash>), String> {
    let old_root = rotortree_tree::<H, N>(hasher, &leaves[..old_size as usize])?
        .root()
        .ok_or("rotortree: empty old tree")?;
    let tree = rotortree_tree::<H, N>(hasher, leaves)?;
    let new_root = tree.root().ok_or("rotortree: empty tree")?;
    let proof = tree
        .snapshot()
        .generate_consistency_proof(old_size, old_root)
        .map_err(|e| format!("rotortree generate_consistency_proof: {e}"))?;
    match proof.verify_against(hasher, old_root, new_root) {
        Ok(true) => {}
        other => {
            return Err(format!(
                "rotortree rejects its own consistency proof from {old_size}: {other:?}"
            ));
        }
    }
    // rotortree's level 0 holds the old edge leaf among the shared hashes
    // (as its last one); cairn carries it separately.
    let mut edge = None;
    let mut hashes = Vec::new();
    for (level, entry) in proof.levels[..proof.level_count].iter().enumerate() {
        let shared = usize::from(entry.shared_count);
        let all = &entry.hashes[..shared + usize::from(entry.new_count)];
        if level == 0 {
            let edge_at = shared
                .checked_sub(1)
                .ok_or("rotortree level 0 has no shared hash")?;
            edge = Some(all[edge_at]);
            hashes.extend_from_slice(&all[..edge_at]);
            hashes.extend_from_slice(&all[shared..]);
        } else {
            hashes.extend_from_slice(all);
        }
    }
    Ok((edge.ok_or("rotortree proof has no levels")?, hashes))
}

/// rotortree's consistency proof from `old_size` to `leaves.len()`, as (old
/// edge leaf, then per level the left and right hashes bottom-up, as cairn
/// orders them); rotortree checks it first. `Ok(None)` when rotortree cannot
/// hash `kind` at `arity`. Requires `0 < old_size < leaves.len()`: rotortree
/// has no proof from the empty tree and an empty one for equal sizes.
pub fn rotortree_consistency(
    peers: &PeerHashes,
    kind: HashKind,
    arity: usize,
    leaves: &[Hash],
    old_size: u64,
) -> Result<Option<(Hash, Vec<Hash>)>, String> {
    if !PeerHashes::covers(kind, arity) {
        return Ok(None);
    }
    with_hasher!(peers, kind, h => with_arity!(arity, N => rotortree_consistency_n::<_, N>(&h, leaves, old_size).map(Some)))
}

// ---- zk-kit-lean-imt (binary only) -----------------------------------------

fn zk_kit_hash(peers: &PeerHashes, kind: HashKind) -> impl Fn(&[u8]) -> [u8; 32] + '_ {
    move |input: &[u8]| {
        let (children, rest) = input.as_chunks::<32>();
        assert!(
            rest.is_empty() && children.len() == 2,
            "zk-kit hashes exactly two 32-byte nodes"
        );
        peers
            .hash_children(kind, children)
            .unwrap_or_else(|e| panic!("{e}"))
    }
}

fn zk_kit_tree(
    peers: &PeerHashes,
    kind: HashKind,
    leaves: &[Hash],
) -> Result<lean_imt::lean_imt::LeanIMT<32>, String> {
    lean_imt::lean_imt::LeanIMT::<32>::new(leaves, zk_kit_hash(peers, kind))
        .map_err(|e| format!("zk-kit LeanIMT::new: {e}"))
}

/// zk-kit's root and depth of every prefix `leaves[..size]` for `sizes`
/// (ascending), each from `LeanIMT::new` (which uses `insert_many`); for the
/// byte hashes a second tree grown by single `insert`s must agree at every
/// size (skipped for Poseidon, as for rotortree).
pub fn zk_kit_roots(
    peers: &PeerHashes,
    kind: HashKind,
    leaves: &[Hash],
    sizes: &[u64],
) -> Result<Vec<RootDepth>, String> {
    let mut singles = zk_kit_tree(peers, kind, &[])?;
    let mut out = Vec::with_capacity(sizes.len());
    for &size in sizes {
        let size = size as usize;
        let fresh = zk_kit_tree(peers, kind, &leaves[..size])?;
        let want = (fresh.root(), fresh.depth());
        if kind == HashKind::Poseidon {
            out.push((fresh.root(), depth_u32(fresh.depth())));
            continue;
        }
        for leaf in &leaves[singles.size()..size] {
            singles.insert(leaf, zk_kit_hash(peers, kind));
        }
        if (singles.root(), singles.depth()) != want {
            return Err(format!(
                "zk-kit size {size}: LeanIMT::new gives {want:?}, single inserts give {:?}",
                (singles.root(), singles.depth())
            ));
        }
        out.push((fresh.root(), depth_u32(fresh.depth())));
    }
    Ok(out)
}

/// zk-kit's proof of leaf `index` in the binary tree over `leaves`, as (leaf,
/// siblings bottom-up); zk-kit verifies it first.
pub fn zk_kit_membership(
    peers: &PeerHashes,
    kind: HashKind,
    leaves: &[Hash],
    index: u64,
) -> Result<(Hash, Vec<Hash>), String> {
    let tree = zk_kit_tree(peers, kind, leaves)?;
    let proof = tree
        .generate_proof(index as usize)
        .map_err(|e| format!("zk-kit generate_proof({index}): {e}"))?;
    if Some(proof.root) != tree.root()
        || !lean_imt::lean_imt::LeanIMT::<32>::verify_proof(&proof, zk_kit_hash(peers, kind))
    {
        return Err(format!("zk-kit rejects its own proof of leaf {index}"));
    }
    Ok((proof.leaf, proof.siblings))
}
