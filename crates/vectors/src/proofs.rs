//! `proofs.json`: valid membership and consistency proofs in both encodings,
//! each verified, round-tripped, equal to a proof from a freshly built tree,
//! and compared with the proofs of the independent implementations.

use std::collections::BTreeMap;

use anyhow::{Context, Result, ensure};
use cairn_core::{
    Arity, ConsistencyProof, Hash, HashKind, LeanImt, MembershipProof, TreeConfig, TreeHead,
};

use crate::json::Json;
use crate::par_map;
use crate::peers::{self, PeerHashes};

/// The arities proofs are generated for.
pub const ARITIES: [u64; 5] = [2, 3, 4, 7, 16];

/// Tree sizes of the membership proofs: around the first two depth changes,
/// and the full leaf set.
pub fn membership_sizes(n: u64, max: u64) -> Vec<u64> {
    let mut sizes = vec![1, 2, n, n + 1, n * n, n * n + 1, max];
    sizes.retain(|&s| s <= max);
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

/// Leaf indices proven at `size`: the first, the middle, the last, and the
/// last of the last complete group.
pub fn membership_indices(n: u64, size: u64) -> Vec<u64> {
    let mut indices = vec![0, size / 2, size - 1];
    if size >= n {
        indices.push(size / n * n - 1);
    }
    indices.sort_unstable();
    indices.dedup();
    indices
}

/// (old, new) sizes of the consistency proofs: from the empty tree, equal
/// sizes, from one leaf, and across and within depth changes.
pub fn consistency_pairs(n: u64, max: u64) -> Vec<(u64, u64)> {
    let mut pairs = vec![
        (0, 0),
        (0, n + 1),
        (1, 1),
        (1, 2),
        (1, n + 1),
        (n - 1, n),
        (n, n),
        (n, n + 1),
        (n + 1, n * n),
        (n * n, n * n + 1),
        (3, max),
        (n * n + 1, max),
        (max, max),
    ];
    pairs.retain(|&(old, new)| old <= new && new <= max);
    pairs.sort_unstable();
    pairs.dedup();
    pairs
}

/// Trees of one (hash, arity): the full leaf set, and fresh trees per size.
struct Trees<'a> {
    config: TreeConfig,
    leaves: &'a [Hash],
    full: LeanImt,
    fresh: BTreeMap<u64, LeanImt>,
}

impl<'a> Trees<'a> {
    fn new(config: TreeConfig, leaves: &'a [Hash]) -> Result<Trees<'a>> {
        Ok(Trees {
            config,
            leaves,
            full: LeanImt::from_leaves(config, leaves)?,
            fresh: BTreeMap::new(),
        })
    }

    /// A tree built from scratch over the first `size` leaves.
    fn fresh(&mut self, size: u64) -> Result<&mut LeanImt> {
        if !self.fresh.contains_key(&size) {
            let tree = LeanImt::from_leaves(self.config, &self.leaves[..size as usize])?;
            self.fresh.insert(size, tree);
        }
        self.fresh.get_mut(&size).context("just inserted")
    }

    fn head(&mut self, size: u64) -> Result<TreeHead> {
        Ok(self.fresh(size)?.head())
    }
}

fn membership(peers: &PeerHashes, trees: &mut Trees<'_>, index: u64, size: u64) -> Result<Json> {
    let TreeConfig {
        arity, hash: kind, ..
    } = trees.config;
    let case = format!("{kind} arity {arity} membership of leaf {index} at size {size}");
    let proof = trees.full.prove_at(index, size)?;
    let fresh = trees.fresh(size)?.prove(index)?;
    ensure!(
        proof == fresh,
        "{case}: the historical proof differs from a fresh tree's"
    );
    let head = trees.head(size)?;
    proof
        .verify(arity, kind, &head)
        .with_context(|| format!("{case}: does not verify"))?;
    let bytes = proof.to_bytes();
    let json = proof.to_json();
    ensure!(
        MembershipProof::from_bytes(&bytes)? == proof,
        "{case}: binary does not round-trip"
    );
    ensure!(
        MembershipProof::from_json(&json)? == proof,
        "{case}: JSON does not round-trip"
    );

    let prefix = &trees.leaves[..size as usize];
    let mut agreed = Vec::new();
    if let Some(peer) = peers::rotortree_membership(peers, kind, arity.get(), prefix, index)
        .map_err(anyhow::Error::msg)?
    {
        ensure!(
            peer == (proof.leaf(), proof.siblings().to_vec()),
            "{case}: DISAGREEMENT: rotortree's proof has leaf and siblings {peer:?}, cairn's {:?}",
            (proof.leaf(), proof.siblings())
        );
        agreed.push(Json::from(peers::ROTORTREE));
    }
    if arity == Arity::BINARY && PeerHashes::covers(kind, 2) {
        let peer =
            peers::zk_kit_membership(peers, kind, prefix, index).map_err(anyhow::Error::msg)?;
        ensure!(
            peer == (proof.leaf(), proof.siblings().to_vec()),
            "{case}: DISAGREEMENT: zk-kit's proof has leaf and siblings {peer:?}, cairn's {:?}",
            (proof.leaf(), proof.siblings())
        );
        agreed.push(Json::from(peers::ZK_KIT));
    }
    Ok(Json::obj([
        ("hash", Json::from(kind.name())),
        ("arity", Json::from(arity.as_u64())),
        ("index", Json::from(index)),
        ("size", Json::from(size)),
        ("root", Json::hash_or_null(head.root)),
        ("leaf", Json::hash(&proof.leaf())),
        ("json", Json::parse(&json)?),
        ("binary", Json::bytes(&bytes)),
        ("agreed_with", Json::Arr(agreed)),
    ]))
}

fn consistency(
    peers: &PeerHashes,
    trees: &mut Trees<'_>,
    old_size: u64,
    new_size: u64,
) -> Result<Json> {
    let TreeConfig {
        arity, hash: kind, ..
    } = trees.config;
    let case = format!("{kind} arity {arity} consistency {old_size} -> {new_size}");
    let proof = trees.full.prove_consistency(old_size, new_size)?;
    let fresh = trees
        .fresh(new_size)?
        .prove_consistency(old_size, new_size)?;
    ensure!(
        proof == fresh,
        "{case}: the historical proof differs from a fresh tree's"
    );
    let old = trees.head(old_size)?;
    let new = trees.head(new_size)?;
    proof
        .verify(arity, kind, &old, &new)
        .with_context(|| format!("{case}: does not verify"))?;
    let bytes = proof.to_bytes();
    let json = proof.to_json();
    ensure!(
        ConsistencyProof::from_bytes(&bytes)? == proof,
        "{case}: binary does not round-trip"
    );
    ensure!(
        ConsistencyProof::from_json(&json)? == proof,
        "{case}: JSON does not round-trip"
    );

    let mut agreed = Vec::new();
    if 0 < old_size && old_size < new_size {
        let prefix = &trees.leaves[..new_size as usize];
        if let Some(peer) = peers::rotortree_consistency(peers, kind, arity.get(), prefix, old_size)
            .map_err(anyhow::Error::msg)?
        {
            let ours = (
                proof.edge_leaf().context("old size > 0 has an edge leaf")?,
                proof.hashes().to_vec(),
            );
            ensure!(
                peer == ours,
                "{case}: DISAGREEMENT: rotortree's proof holds {peer:?}, cairn's {ours:?}"
            );
            agreed.push(Json::from(peers::ROTORTREE));
        }
    }
    Ok(Json::obj([
        ("hash", Json::from(kind.name())),
        ("arity", Json::from(arity.as_u64())),
        ("old_size", Json::from(old_size)),
        ("new_size", Json::from(new_size)),
        ("old_root", Json::hash_or_null(old.root)),
        ("new_root", Json::hash_or_null(new.root)),
        ("json", Json::parse(&json)?),
        ("binary", Json::bytes(&bytes)),
        ("agreed_with", Json::Arr(agreed)),
    ]))
}

fn group(
    peers: &PeerHashes,
    leaves: &[Hash],
    kind: HashKind,
    n: u64,
) -> Result<(Vec<Json>, Vec<Json>)> {
    let config = TreeConfig::new(Arity::new(n)?, kind);
    let mut trees = Trees::new(config, leaves)?;
    let max = leaves.len() as u64;
    let mut members = Vec::new();
    for size in membership_sizes(n, max) {
        for index in membership_indices(n, size) {
            members.push(membership(peers, &mut trees, index, size)?);
        }
    }
    let mut consistent = Vec::new();
    for (old, new) in consistency_pairs(n, max) {
        consistent.push(consistency(peers, &mut trees, old, new)?);
    }
    Ok((members, consistent))
}

/// Builds `proofs.json`.
pub fn build(peers: &PeerHashes, leaves: &[Hash]) -> Result<(Json, String)> {
    let units: Vec<(HashKind, u64)> = HashKind::ALL
        .iter()
        .flat_map(|&kind| ARITIES.map(|n| (kind, n)))
        .collect();
    let mut members = Vec::new();
    let mut consistent = Vec::new();
    for result in par_map(&units, |&(kind, n)| group(peers, leaves, kind, n)) {
        let (m, c) = result?;
        members.extend(m);
        consistent.extend(c);
    }
    let agreed = |entries: &[Json]| {
        entries
            .iter()
            .filter(|e| matches!(e.get("agreed_with"), Some(Json::Arr(a)) if !a.is_empty()))
            .count()
    };
    let summary = format!(
        "proofs.json: {} membership proofs ({} agreed with a peer), {} consistency proofs ({} agreed with rotortree)",
        members.len(),
        agreed(&members),
        consistent.len(),
        agreed(&consistent)
    );
    let doc = Json::obj([
        (
            "description",
            Json::from(
                "Valid cairn proofs over prefixes of leaves.json, in both encodings, each verified against its trusted head \
                 and equal to the proof of a freshly built tree; agreed_with lists the independent implementations whose \
                 proof holds the same values. See README.md.",
            ),
        ),
        (
            "generator",
            Json::from("crates/vectors (cargo run -p cairn-vectors -- generate)"),
        ),
        ("leaves", Json::from("leaves.json")),
        (
            "format_version",
            Json::from(u64::from(cairn_core::proof::FORMAT_VERSION)),
        ),
        ("membership", Json::Arr(members)),
        ("consistency", Json::Arr(consistent)),
    ]);
    Ok((doc, summary))
}
