//! Appends and their acknowledgement. An append returns an [`Ack`] at
//! once (the append itself is a memory copy and the set's insert); the
//! ack resolves, blocking ([`Ack::wait`]) or awaited ([`Ack::durable`]),
//! within a deadline, to the durable [`Acked`]: where the values went and
//! the head that holds them.
//!
//! 409 only for durable values: a batch refused for duplicates of values
//! not yet durable (appended by someone else, not yet committed) does not
//! answer "duplicate" at once. Its ack waits for them (the last append's
//! token covers every leaf not yet durable), then appends again: refused
//! then for duplicates that are durable now, or appended if the earlier
//! append was rolled back. So a "duplicate" answer never names a value a
//! crash can still take back. A batch that skips duplicates
//! ([`Database::append_new`]) and appends others needs no wait: its own
//! leaves follow the skipped ones in the log, so they are durable only
//! once those are, and rolled back with them.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use cairn_core::Hash;
use cairn_core::indexed::InsertionWitness;
use cairn_store::{BlockTag, StoreError, Token};

use super::{Database, Kind};
use crate::error::{DbError, Result};
use crate::indexed::WitnessTicket;
use crate::operation::Operation;
use crate::set::{Duplicate, DuplicateOf};

/// How an append was asked for (what a retry repeats).
#[derive(Clone, Copy, Debug)]
enum How {
    Plain,
    Tagged(BlockTag),
    Witnessed,
    New,
}

/// An append's acknowledgement: resolves within a deadline to the durable
/// [`Acked`], or to why it is not (a duplicate, a failure, a rollback, the
/// deadline).
#[derive(Debug)]
#[must_use = "an append is acknowledged only once its Ack resolves"]
pub struct Ack(State);

#[derive(Debug)]
enum State {
    /// Appended: acknowledged once its token is durable.
    Appended(Appending),
    /// Refused for duplicates of values not yet durable: waits for them
    /// (`None`: by a flush), then appends again.
    Waiting {
        token: Option<Token>,
        values: Vec<Hash>,
        how: How,
    },
    /// Nothing appended: every value is a durable duplicate, skipped.
    Skipped(Vec<Duplicate>),
}

#[derive(Debug)]
struct Appending {
    first: u64,
    count: u64,
    token: Token,
    tag: Option<BlockTag>,
    ticket: Option<WitnessTicket>,
    skipped: Vec<Duplicate>,
}

/// A durable append.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acked {
    /// The leaf index of the first value (the size before the append when
    /// nothing was appended).
    pub first: u64,
    /// Values appended.
    pub count: u64,
    /// The size of the head below: `first + count` for an append-only
    /// tree; at least that for an indexed tree (its durable head when
    /// acknowledged, which may hold later values too).
    pub size: u64,
    /// The root at `size` (`None` for an empty lean tree).
    pub root: Option<Hash>,
    /// The block the append was tagged with.
    pub block: Option<BlockTag>,
    /// The insertion witness, if asked for ([`Database::append_witnessed`]).
    pub witness: Option<InsertionWitness>,
    /// The values skipped as durable duplicates
    /// ([`Database::append_new`]), in batch order.
    pub skipped: Vec<Duplicate>,
}

impl Ack {
    /// Where the values went, once appended: the first index and the count
    /// (`None` while it waits for duplicates to be durable).
    pub fn appended(&self) -> Option<(u64, u64)> {
        match &self.0 {
            State::Appended(appending) => Some((appending.first, appending.count)),
            _ => None,
        }
    }

    /// Waits up to `timeout` for the append to be durable (flushing if no
    /// flush runs), blocking this thread.
    pub fn wait(self, db: &Database, timeout: Duration) -> Result<Acked> {
        let deadline = Instant::now() + timeout;
        let mut state = self.0;
        loop {
            let remaining = deadline.saturating_duration_since(Instant::now());
            state = match state {
                State::Appended(appending) => {
                    let end = appending.first + appending.count;
                    appending
                        .token
                        .wait(remaining)
                        .map_err(|error| db.unless_timed_out(error, end))?;
                    return db
                        .gate
                        .read(|generation| db.acknowledge(&appending, generation));
                }
                State::Waiting { token, values, how } => {
                    match token {
                        Some(token) => db.settled(token.wait(remaining), &token)?,
                        None => {
                            db.flush()?;
                        }
                    }
                    db.append_as(&values, how)?.0
                }
                State::Skipped(skipped) => return Ok(db.skipped(skipped)),
            };
        }
    }

    /// Resolves once the append is durable, without blocking a thread (see
    /// `cairn_store::Token::durable`), or when `deadline` completes first
    /// ([`StoreError::Timeout`]): pass the runtime's sleep.
    pub async fn durable(self, db: &Database, deadline: impl Future<Output = ()>) -> Result<Acked> {
        let mut deadline = std::pin::pin!(deadline);
        let mut state = self.0;
        loop {
            state = match state {
                State::Appended(appending) => {
                    let end = appending.first + appending.count;
                    match within(appending.token.durable(), deadline.as_mut()).await {
                        Some(result) => result?,
                        None => return Err(db.timeout(end)),
                    }
                    return db
                        .gate
                        .read_async(|generation| db.acknowledge(&appending, generation))
                        .await;
                }
                State::Waiting { token, values, how } => {
                    match token {
                        Some(token) => match within(token.durable(), deadline.as_mut()).await {
                            Some(result) => db.settled(result, &token)?,
                            None => return Err(db.timeout(db.in_tree(token.end()))),
                        },
                        None => {
                            db.flush()?;
                        }
                    }
                    db.append_as(&values, how)?.0
                }
                State::Skipped(skipped) => return Ok(db.skipped(skipped)),
            };
        }
    }
}

/// `future`'s output, or `None` if `deadline` completes first.
async fn within<F: Future>(
    future: F,
    mut deadline: Pin<&mut impl Future<Output = ()>>,
) -> Option<F::Output> {
    let mut future = std::pin::pin!(future);
    std::future::poll_fn(move |cx| {
        if let Poll::Ready(output) = future.as_mut().poll(cx) {
            return Poll::Ready(Some(output));
        }
        if deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        Poll::Pending
    })
    .await
}

impl Database {
    /// Appends `values` in order, all or nothing: a batch holding a value
    /// the database holds or repeats is refused with every duplicate
    /// listed ([`DbError::Duplicates`]; once those are durable: see
    /// [`Ack`]), and so is a value the tree refuses (an indexed tree's
    /// guard value 0, a value not canonical for a field hash).
    pub fn append(&self, values: &[Hash]) -> Result<Ack> {
        self.append_as(values, How::Plain)
    }

    /// [`Database::append`] of the values of block `tag` (possibly none),
    /// recording the head at their end ([`Operation::BlockTags`]): block
    /// numbers must increase.
    pub fn append_tagged(&self, values: &[Hash], tag: BlockTag) -> Result<Ack> {
        self.append_as(values, How::Tagged(tag))
    }

    /// [`Database::append`], keeping the insertion witness (each value's
    /// low leaf before, with its path, and the new leaf's path after),
    /// which the acknowledgement carries ([`Operation::InsertionWitness`]).
    pub fn append_witnessed(&self, values: &[Hash]) -> Result<Ack> {
        self.append_as(values, How::Witnessed)
    }

    /// Appends the values of `values` the database does not hold, in
    /// order, skipping the others (reported in [`Acked::skipped`]); a
    /// value repeated within the batch is appended once, at its first
    /// position. Needs a set or an indexed tree ([`DbError::NoSet`]).
    pub fn append_new(&self, values: &[Hash]) -> Result<Ack> {
        self.append_as(values, How::New)
    }

    fn append_as(&self, values: &[Hash], how: How) -> Result<Ack> {
        match how {
            How::Tagged(_) => self.supports(Operation::BlockTags)?,
            How::Witnessed => self.supports(Operation::InsertionWitness)?,
            How::Plain | How::New => {}
        }
        let mut last = self.appends.lock();
        let appended = |a: Appending| Outcome::Appended(a);
        let outcome = match (&self.kind, how) {
            (Kind::AppendOnly(db), How::Plain) => db
                .append_batch(values)
                .map(|a| appended(Appending::new(a.first, a.count, a.token, None, Vec::new()))),
            (Kind::AppendOnly(db), How::Tagged(tag)) => db.append_tagged(values, tag).map(|a| {
                appended(Appending::new(
                    a.first,
                    a.count,
                    a.token,
                    Some(tag),
                    Vec::new(),
                ))
            }),
            (Kind::AppendOnly(db), How::New) => {
                db.append_new(values).map(|new| match new.appended {
                    Some(a) => {
                        appended(Appending::new(a.first, a.count, a.token, None, new.skipped))
                    }
                    None => Outcome::Skipped(new.skipped),
                })
            }
            (Kind::Indexed(db), How::Plain) => db
                .insert_batch(values)
                .map(|i| appended(Appending::new(i.first, i.count, i.token, None, Vec::new()))),
            (Kind::Indexed(db), How::Witnessed) => db.insert_witnessed(values).map(|ticket| {
                let inserted = ticket.inserted.clone();
                let mut appending = Appending::new(
                    inserted.first,
                    inserted.count,
                    inserted.token,
                    None,
                    Vec::new(),
                );
                appending.ticket = Some(ticket);
                appended(appending)
            }),
            (Kind::Indexed(db), How::New) => db.insert_new(values).map(|new| match new {
                (Some(i), skipped) => {
                    appended(Appending::new(i.first, i.count, i.token, None, skipped))
                }
                (None, skipped) => Outcome::Skipped(skipped),
            }),
            (Kind::Mutable(db), How::Plain | How::Tagged(_) | How::New) => {
                let tag = match how {
                    How::Tagged(tag) => Some(tag),
                    _ => None,
                };
                db.append_values(values, tag, matches!(how, How::New))
                    .map(|(ticket, skipped)| match ticket {
                        Some(ticket) => appended(Appending::new(
                            ticket.size - ticket.count,
                            ticket.count,
                            ticket.token,
                            tag,
                            skipped,
                        )),
                        None => Outcome::Skipped(skipped),
                    })
            }
            (Kind::AppendOnly(_) | Kind::Mutable(_), How::Witnessed)
            | (Kind::Indexed(_), How::Tagged(_)) => {
                unreachable!("refused above")
            }
        };
        match outcome {
            // Skipped values below the durable size are durable; those
            // above it precede this append's leaves in the log.
            Ok(Outcome::Appended(appending)) => {
                *last = Some(appending.token.clone());
                Ok(Ack(State::Appended(appending)))
            }
            Ok(Outcome::Skipped(skipped)) if !self.holds_pending(&skipped) => {
                Ok(Ack(State::Skipped(skipped)))
            }
            Ok(Outcome::Skipped(_)) => Ok(self.waiting(last.clone(), values, how)),
            Err(DbError::Duplicates { duplicates, .. }) if self.holds_pending(&duplicates) => {
                Ok(self.waiting(last.clone(), values, how))
            }
            Err(error) => Err(error),
        }
    }

    fn waiting(&self, token: Option<Token>, values: &[Hash], how: How) -> Ack {
        Ack(State::Waiting {
            token,
            values: values.to_vec(),
            how,
        })
    }

    /// Whether any of `duplicates` repeats a leaf not yet durable.
    fn holds_pending(&self, duplicates: &[Duplicate]) -> bool {
        let durable = self.durable_size();
        duplicates
            .iter()
            .any(|d| matches!(d.of, DuplicateOf::Leaf(index) if index >= durable))
    }

    /// A waited-for token's outcome: `Ok` once durable or rolled back (the
    /// append is then tried again), the failure or the deadline otherwise.
    fn settled(&self, result: std::result::Result<(), StoreError>, token: &Token) -> Result<()> {
        match result {
            Ok(()) | Err(StoreError::RolledBack { .. }) => Ok(()),
            Err(error) => Err(self.unless_timed_out(error, self.in_tree(token.end()))),
        }
    }

    /// A token's end (the log's leaves) in the tree's sizes.
    fn in_tree(&self, end: u64) -> u64 {
        match &self.kind {
            Kind::AppendOnly(_) => end,
            Kind::Indexed(_) => end + 1,
            // A token counts log words, two per change: the tree's size
            // with every accepted change is what a waiter waits for.
            Kind::Mutable(db) => db.accepted_size(),
        }
    }

    /// `error`, or the deadline's error for `want` leaves if it is one.
    fn unless_timed_out(&self, error: StoreError, want: u64) -> DbError {
        match error {
            StoreError::Timeout { .. } => self.timeout(want),
            error => error.into(),
        }
    }

    /// The error of an acknowledgement whose deadline passed before the
    /// tree of `want` leaves was durable (the values stay appended and may
    /// still become durable).
    fn timeout(&self, want: u64) -> DbError {
        DbError::Store(StoreError::Timeout {
            want,
            durable: self.durable_size(),
        })
    }

    /// The acknowledgement of a durable append, read between two
    /// rollbacks (`generation`): the head at its end, from a tree taken
    /// before its token is asked again, so that a rollback since its
    /// durability is noticed rather than a head without it answered.
    fn acknowledge(&self, appending: &Appending, generation: u64) -> Result<Acked> {
        let end = appending.first + appending.count;
        let (size, root, witness) = match &self.kind {
            Kind::AppendOnly(db) => {
                let head = db.durable_head();
                let tree = if head.snapshot.size() >= end {
                    head.snapshot
                } else {
                    db.snapshot()
                };
                if !appending.token.is_durable()? {
                    return Err(self.timeout(end));
                }
                (end, tree.view(end)?.root(), None)
            }
            Kind::Indexed(db) => {
                let witness = appending
                    .ticket
                    .as_ref()
                    .map(|ticket| db.witness(ticket, Duration::ZERO))
                    .transpose()?;
                let head = db.head();
                if !appending.token.is_durable()? {
                    return Err(self.timeout(end));
                }
                (head.size, head.root, witness)
            }
            Kind::Mutable(db) => {
                if !appending.token.is_durable()? {
                    return Err(self.timeout(end));
                }
                let head = db.head();
                (head.size, head.root, None)
            }
        };
        if let Some(tag) = appending.tag {
            // Under the lock, and only if no rollback began: a rollback
            // sets the acknowledged block itself once it is done.
            let mut acked = self.acked_block.lock();
            if self.gate.unchanged(generation) {
                *acked = Some(acked.map_or(tag.number, |a| a.max(tag.number)));
            }
        }
        Ok(Acked {
            first: appending.first,
            count: appending.count,
            size,
            root,
            block: appending.tag,
            witness,
            skipped: appending.skipped.clone(),
        })
    }

    /// The acknowledgement of an append whose every value was skipped.
    fn skipped(&self, skipped: Vec<Duplicate>) -> Acked {
        let head = self.head();
        Acked {
            first: head.size,
            count: 0,
            size: head.size,
            root: head.root,
            block: None,
            witness: None,
            skipped,
        }
    }
}

impl Appending {
    fn new(
        first: u64,
        count: u64,
        token: Token,
        tag: Option<BlockTag>,
        skipped: Vec<Duplicate>,
    ) -> Appending {
        Appending {
            first,
            count,
            token,
            tag,
            ticket: None,
            skipped,
        }
    }
}

/// What an append did.
enum Outcome {
    Appended(Appending),
    /// Nothing appended: every value was a duplicate.
    Skipped(Vec<Duplicate>),
}
