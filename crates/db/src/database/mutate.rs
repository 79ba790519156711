//! Updates and removals of a mutable tree's leaves
//! ([`Operation::Mutation`]), serialised with appends and rollbacks.

use std::time::Duration;

use cairn_core::{Hash, TreeHead};
use cairn_store::BlockTag;

use super::Database;
use crate::error::Result;
use crate::mutable::{Change, ChangeTicket, OldLeaf};
use crate::operation::Operation;

/// A durable update or removal: the leaf it replaced, with that leaf's
/// proof against the head before it, and the durable head after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    /// The old leaf and its proof (what Semaphore's `updateMember` and
    /// `removeMember` take).
    pub old: OldLeaf,
    /// The durable head once the change is durable (it may hold later
    /// changes too).
    pub head: TreeHead,
}

impl Database {
    /// Applies `changes` in order, all or nothing (see
    /// [`crate::MutableDb::change`]); durable once the ticket's token is.
    pub fn change(&self, changes: &[Change]) -> Result<ChangeTicket> {
        let db = self.mutable(Operation::Mutation)?;
        let mut last = self.appends.lock();
        let ticket = db.change(changes)?;
        *last = Some(ticket.token.clone());
        Ok(ticket)
    }

    /// [`Database::change`] as block `tag`'s changes (possibly none),
    /// recording the head at their end: a rollback to an earlier block
    /// undoes them.
    pub fn change_tagged(&self, changes: &[Change], tag: BlockTag) -> Result<ChangeTicket> {
        let db = self.mutable(Operation::Mutation)?;
        let mut last = self.appends.lock();
        let ticket = db.change_tagged(changes, tag)?;
        *last = Some(ticket.token.clone());
        Ok(ticket)
    }

    /// The old leaves of `ticket`'s changes (`None` for an append), once
    /// durable (waiting up to `timeout`).
    pub fn changed(
        &self,
        ticket: &ChangeTicket,
        timeout: Duration,
    ) -> Result<Vec<Option<OldLeaf>>> {
        self.mutable(Operation::Mutation)?.changed(ticket, timeout)
    }

    /// Sets leaf `index` to `value` and waits (up to `timeout`) for it to
    /// be durable.
    pub fn update(&self, index: u64, value: Hash, timeout: Duration) -> Result<Changed> {
        self.change_one(Change::Update(index, value), timeout)
    }

    /// Sets leaf `index` to the zero leaf (0 for a Lean tree, the tree's
    /// zero value for a fixed-depth one) and waits (up to `timeout`) for
    /// it to be durable.
    pub fn remove(&self, index: u64, timeout: Duration) -> Result<Changed> {
        self.change_one(Change::Remove(index), timeout)
    }

    fn change_one(&self, change: Change, timeout: Duration) -> Result<Changed> {
        let ticket = self.change(&[change])?;
        let mut old = self.changed(&ticket, timeout)?;
        let old = old
            .pop()
            .flatten()
            .expect("an update or removal replaces a leaf");
        Ok(Changed {
            old,
            head: self.head(),
        })
    }
}
