//! Repair from a replica: what a damaged database still holds (its
//! [`Salvaged`] leaves and block-tagged heads, each vouched for by a
//! checksum), and the plan that rebuilds it from that and a replica that
//! vouches for a prefix of its tree (a signed tile store or a mirror).
//!
//! The rebuild itself is the caller's (`cairn repair`): a new database
//! filled with the replica's leaves, verified against its signed head as
//! a mirror verifies them, then with the salvaged leaves past the
//! replica's head, tagged as the salvaged heads say, then put in place of
//! the damaged directory. Nothing here trusts a byte no checksum vouched
//! for, and every acknowledged leaf or head that neither the salvage nor
//! the replica holds is reported as lost, never dropped silently.

use std::ops::Range;
use std::path::Path;

use cairn_core::{Hash, TreeConfig};
use cairn_store::{Damage, FLAG_EXPLICIT_FINALITY, Salvage, StdFs, TaggedHead};

use crate::config::DbConfig;
use crate::error::Result;
use crate::operation::Operation;

/// The flag of `cairn.meta` that says the database keeps a nullifier set.
const FLAG_UNIQUE: u64 = 1;

/// What a damaged database still holds, read under its writer's locks
/// (held until this is dropped, so nothing writes to it meanwhile).
#[derive(Debug)]
pub struct Salvaged {
    salvage: Salvage,
    config: DbConfig,
}

/// How a repair rebuilds a database from its salvage and a replica of
/// `replica` leaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Leaves the replica vouches for (its verified head's size).
    pub replica: u64,
    /// The repaired database's size.
    pub size: u64,
    /// Leaves taken from the salvage, past the replica's.
    pub local: Range<u64>,
    /// Acknowledged leaves neither holds (empty when nothing is lost).
    pub lost: Range<u64>,
    /// Block-tagged heads the repaired database keeps.
    pub heads: usize,
    /// Acknowledged heads it cannot keep.
    pub lost_heads: u64,
}

impl Plan {
    /// Whether the repair loses nothing acknowledged.
    pub fn loses_nothing(&self) -> bool {
        self.lost.is_empty() && self.lost_heads == 0
    }
}

/// Reads what the database in `dir` still holds. `tree` is used only if
/// `cairn.meta` is damaged (take it from the replica); the set and the
/// finality mode are then the defaults.
pub fn salvage(dir: impl AsRef<Path>, tree: Option<TreeConfig>) -> Result<Salvaged> {
    let salvage = Salvage::read(&StdFs, dir.as_ref(), tree)?;
    let meta = salvage.meta;
    Operation::Repair.check(meta.tree.kind)?;
    let mut config = DbConfig::new(meta.tree);
    config.store.log_shift = meta.log_shift;
    if salvage.meta_damage.is_none() {
        config.unique = meta.flags & FLAG_UNIQUE != 0;
        config.explicit_finality = meta.flags & FLAG_EXPLICIT_FINALITY != 0;
    }
    Ok(Salvaged { salvage, config })
}

impl Salvaged {
    /// The configuration the rebuilt database is created with.
    pub fn config(&self) -> &DbConfig {
        &self.config
    }

    /// The leaves read (those in [`Salvaged::unverified`] are not leaves).
    pub fn leaves(&self) -> &[Hash] {
        &self.salvage.leaves
    }

    /// Ranges of [`Salvaged::leaves`] no checksum vouched for.
    pub fn unverified(&self) -> &[Range<u64>] {
        &self.salvage.unverified
    }

    /// Leaves some durable record of the database says were acknowledged.
    pub fn acknowledged(&self) -> u64 {
        self.salvage.acknowledged
    }

    /// Leaves below which a rollback was refused.
    pub fn finalized(&self) -> u64 {
        self.salvage.finalized
    }

    /// The block-tagged heads read, in order.
    pub fn heads(&self) -> &[TaggedHead] {
        &self.salvage.heads
    }

    /// Every damage found, in the order of the files: the meta, the
    /// checkpoint, the leaves, the heads.
    pub fn damage(&self) -> Vec<&Damage> {
        [
            &self.salvage.meta_damage,
            &self.salvage.checkpoint_damage,
            &self.salvage.stopped,
            &self.salvage.heads_stopped,
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// How a replica of `replica` leaves rebuilds the database: its leaves,
    /// then the salvaged ones past them up to the first no checksum
    /// vouched for (none if the salvage cannot tell which leaves a
    /// rollback left behind).
    pub fn plan(&self, replica: u64) -> Plan {
        let s = &self.salvage;
        let local_end = if s.current {
            s.verified_until(replica).max(replica)
        } else {
            replica
        };
        let size = replica.max(local_end);
        let heads = s.heads.iter().take_while(|h| h.size <= size).count();
        Plan {
            replica,
            size,
            local: replica..local_end,
            lost: size..s.acknowledged.max(size),
            heads,
            lost_heads: s.heads_acknowledged.saturating_sub(heads as u64),
        }
    }

    /// The first index in `from..from + replica.len()` whose salvaged,
    /// checksum-verified leaf differs from the replica's: where the
    /// replica is not this database's history.
    /// Without a checkpoint to say where the log resumed after the last
    /// rollback, the salvaged leaves may be ones a rollback removed, so
    /// nothing is compared.
    pub fn first_difference(&self, from: u64, replica: &[Hash]) -> Option<u64> {
        if !self.salvage.current {
            return None;
        }
        let leaves = &self.salvage.leaves;
        (from..from + replica.len() as u64)
            .take_while(|&i| i < leaves.len() as u64)
            .filter(|&i| !self.salvage.unverified.iter().any(|r| r.contains(&i)))
            .find(|&i| leaves[i as usize] != replica[(i - from) as usize])
    }
}
