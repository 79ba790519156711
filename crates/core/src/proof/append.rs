//! The witness that appending a batch of leaves to a tree of one size gives
//! the tree of a larger size: the old tree's frontier and the new leaves,
//! with both heads. What a circuit proving a batch update takes
//! (`circuits/append.circom`'s `LeanIMTAppend`), and what a verifier can
//! recompute on its own.

use crate::config::TreeHead;
use crate::error::TreeError;
use crate::hash::{Hash, HashKind};
use crate::kind::TreeKind;
use crate::proof::interop::{InteropError, MAX_CIRCUIT_DEPTH, decimal};
use crate::recompute::Frontier;
use crate::tree::{Snapshot, TreeConfig};

/// Leaves the batch commitment hashes at a time, after the running value:
/// circomlib's `Poseidon(5)`, poseidon-solidity's `PoseidonT6`.
pub const COMMITMENT_GROUP: usize = 4;

/// The batch commitment cairn's batch circuits make public (`BatchCommitment`
/// in `circuits/append.circom`, over the leaves of an append or the values
/// of an indexed insertion, in order): 0, then `Poseidon(c, v[4i],
/// v[4i+1], v[4i+2], v[4i+3])` for each group of four values; `None`
/// unless there is a positive multiple of four values, each a BN254 field
/// element.
pub fn batch_commitment(values: &[Hash]) -> Option<Hash> {
    if values.is_empty()
        || !values.len().is_multiple_of(COMMITMENT_GROUP)
        || !values.iter().all(|value| HashKind::Poseidon.accepts(value))
    {
        return None;
    }
    let mut chain = [0u8; 32];
    let mut group = [[0u8; 32]; COMMITMENT_GROUP + 1];
    for values in values.chunks_exact(COMMITMENT_GROUP) {
        group[0] = chain;
        group[1..].copy_from_slice(values);
        chain = HashKind::Poseidon.hash_children(&group);
    }
    Some(chain)
}

/// Appending `leaves` to the tree with head `old` (whose frontier is
/// `frontier`) gives the tree with head `new`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppendWitness {
    config: TreeConfig,
    old: TreeHead,
    new: TreeHead,
    frontier: Frontier,
    leaves: Vec<Hash>,
}

/// Why an append witness does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AppendWitnessError {
    /// The frontier is of a tree of another size than the old head's.
    #[error("the frontier is of a tree of {got} leaves, the old head has {want}")]
    FrontierSize {
        /// The frontier's size.
        got: u64,
        /// The old head's size.
        want: u64,
    },
    /// The sizes do not add up.
    #[error("{old} leaves and {leaves} more make {sum}, the new head has {new}")]
    Sizes {
        /// The old size.
        old: u64,
        /// The batch's length.
        leaves: u64,
        /// Their sum (saturated).
        sum: u64,
        /// The new head's size.
        new: u64,
    },
    /// The frontier does not fold to the old root.
    #[error("the frontier folds to {got}, the old root is {want}")]
    OldRoot {
        /// What the frontier folds to, 0x-hex ("none" for no root).
        got: String,
        /// The old head's root.
        want: String,
    },
    /// The frontier and the leaves do not give the new root.
    #[error("the frontier and the leaves give root {got}, the new root is {want}")]
    NewRoot {
        /// What they give.
        got: String,
        /// The new head's root.
        want: String,
    },
}

fn hex_or_none(root: Option<Hash>) -> String {
    root.map_or_else(|| "none".to_owned(), |root| crate::hex::to_hex(&root))
}

impl Snapshot {
    /// The witness that leaves `from..to` appended to the tree of the
    /// first `from` leaves give the tree of the first `to`.
    pub fn append_witness(&self, from: u64, to: u64) -> Result<AppendWitness, TreeError> {
        if from > to {
            return Err(TreeError::SizeBeyondTree {
                size: from,
                tree_size: to,
            });
        }
        let old = self.view(from)?;
        let new = self.view(to)?;
        let leaves = (from..to)
            .map(|index| self.leaf(index))
            .collect::<Option<Vec<Hash>>>()
            .ok_or(TreeError::SizeBeyondTree {
                size: to,
                tree_size: self.size(),
            })?;
        Ok(AppendWitness {
            config: self.config(),
            old: old.head(),
            new: new.head(),
            frontier: old.frontier(),
            leaves,
        })
    }
}

impl AppendWitness {
    /// A witness from its parts, checked ([`AppendWitness::check`]).
    pub fn new(
        config: TreeConfig,
        old: TreeHead,
        new: TreeHead,
        frontier: Frontier,
        leaves: Vec<Hash>,
    ) -> Result<AppendWitness, AppendWitnessError> {
        let witness = AppendWitness {
            config,
            old,
            new,
            frontier,
            leaves,
        };
        witness.check()?;
        Ok(witness)
    }

    /// The tree's configuration.
    pub fn config(&self) -> TreeConfig {
        self.config
    }

    /// The head before the batch.
    pub fn old(&self) -> TreeHead {
        self.old
    }

    /// The head after it.
    pub fn new_head(&self) -> TreeHead {
        self.new
    }

    /// The frontier of the tree before the batch.
    pub fn frontier(&self) -> &Frontier {
        &self.frontier
    }

    /// The batch.
    pub fn leaves(&self) -> &[Hash] {
        &self.leaves
    }

    /// Recomputes both roots with the tree's own append
    /// ([`crate::GroupRule::root_after`]): the frontier alone must fold to
    /// the old root, the frontier and the leaves to the new one.
    pub fn check(&self) -> Result<(), AppendWitnessError> {
        if self.frontier.size() != self.old.size {
            return Err(AppendWitnessError::FrontierSize {
                got: self.frontier.size(),
                want: self.old.size,
            });
        }
        let count = self.leaves.len() as u64;
        let sum = self.old.size.saturating_add(count);
        if sum != self.new.size {
            return Err(AppendWitnessError::Sizes {
                old: self.old.size,
                leaves: count,
                sum,
                new: self.new.size,
            });
        }
        let rule = self.config.group_rule();
        let old = rule.root_after(&self.frontier, &[]);
        if old != self.old.root {
            return Err(AppendWitnessError::OldRoot {
                got: hex_or_none(old),
                want: hex_or_none(self.old.root),
            });
        }
        let new = rule.root_after(&self.frontier, &self.leaves);
        if new != self.new.root {
            return Err(AppendWitnessError::NewRoot {
                got: hex_or_none(new),
                want: hex_or_none(self.new.root),
            });
        }
        Ok(())
    }

    /// The batch commitment the circuit makes public: 0, then
    /// `Poseidon(c, l[4i], l[4i+1], l[4i+2], l[4i+3])` for each group of
    /// four leaves in order; `None` unless the batch is a positive
    /// multiple of four leaves and every leaf is a BN254 field element.
    pub fn commitment(&self) -> Option<Hash> {
        batch_commitment(&self.leaves)
    }

    /// The inputs of cairn's `LeanIMTAppend(K, MAX_DEPTH)` circom template
    /// (`circuits/append.circom`), K the batch's length and `MAX_DEPTH =
    /// circuit_depth` (default: the new tree's depth, at least 1):
    /// `{"oldRoot","newRoot","size","commitment","leaves","frontier"}`,
    /// `oldRoot` "0" for the empty tree, `size` the old size, `frontier`
    /// `MAX_DEPTH` values bottom-up with "0" where the old size's bit is
    /// clear. A binary Lean Poseidon tree, and K a positive multiple of 4,
    /// only. The witness is checked first ([`AppendWitness::check`]).
    pub fn to_circom_json(&self, circuit_depth: Option<u32>) -> Result<String, InteropError> {
        const FORMAT: &str = "circom append";
        if let Some(depth) = self.config.kind.fixed_depth() {
            return Err(InteropError::NotLean {
                format: FORMAT,
                depth,
            });
        }
        if self.config.arity.get() != 2 {
            return Err(InteropError::NotBinary {
                format: FORMAT,
                arity: self.config.arity.as_u64(),
            });
        }
        if self.config.hash != HashKind::Poseidon {
            return Err(InteropError::NotPoseidon {
                format: FORMAT,
                hash: self.config.hash,
            });
        }
        let commitment = self.commitment().ok_or(InteropError::BatchSize {
            circuit: "append",
            leaves: self.leaves.len() as u64,
            group: COMMITMENT_GROUP as u64,
        })?;
        self.check().map_err(InteropError::Witness)?;
        debug_assert_eq!(self.config.kind, TreeKind::Lean);
        let needed = self.config.depth_at(self.new.size).max(1);
        let depth = circuit_depth.unwrap_or(needed);
        if depth < needed || depth > MAX_CIRCUIT_DEPTH {
            return Err(InteropError::CircuitDepth {
                circuit_depth: depth,
                needed,
            });
        }
        // The frontier holds a node for each set bit of the old size, bottom-up.
        let mut nodes = self.frontier.nodes().iter();
        let frontier: Vec<String> = (0..depth)
            .map(|k| {
                if (self.old.size >> k) & 1 == 1 {
                    decimal(nodes.next().expect("a node for each set bit"))
                } else {
                    "\"0\"".to_owned()
                }
            })
            .collect();
        debug_assert!(nodes.next().is_none(), "no node past the bits");
        let leaves: Vec<String> = self.leaves.iter().map(decimal).collect();
        let root = |root: Option<Hash>| root.map_or_else(|| "\"0\"".to_owned(), |r| decimal(&r));
        Ok(format!(
            "{{\"oldRoot\":{},\"newRoot\":{},\"size\":\"{}\",\"commitment\":{},\"leaves\":[{}],\"frontier\":[{}]}}",
            root(self.old.root),
            root(self.new.root),
            self.old.size,
            decimal(&commitment),
            leaves.join(","),
            frontier.join(",")
        ))
    }
}
