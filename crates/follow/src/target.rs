//! What a follower writes into: one database (one source, its block-tagged
//! heads), or the named trees of a database of several (one source per
//! tree, every block one journal frame across them). Either way the
//! target's own blocks are the follower's only state.

use std::sync::Arc;
use std::time::Duration;

use cairn_db::{BlockId, BlockParts, BlockTag, Database, DbError, Forest, Operation};

use crate::abi::Word;
use crate::follower::{FollowError, Source};

/// One block to write: its number, hash, and per source its values.
pub(crate) struct Block {
    pub number: u64,
    pub hash: Word,
    pub values: Vec<Vec<Word>>,
}

/// Where the values go.
#[derive(Debug)]
pub(crate) enum Target<'a> {
    /// One database: the one source's values, block-tagged appends.
    Tree(&'a Database),
    /// The trees of a database of several: per source, its tree's name
    /// and the tree that checks its values (the first member of a family).
    Forest {
        forest: &'a Forest,
        trees: Vec<(String, Arc<Database>)>,
    },
}

fn db_error(what: impl Into<String>) -> impl FnOnce(DbError) -> FollowError {
    let what = what.into();
    move |source| FollowError::Db { what, source }
}

impl<'a> Target<'a> {
    /// A database of one tree, checked fit to follow a chain into.
    pub(crate) fn tree(db: &'a Database, sources: &[Source]) -> Result<Target<'a>, FollowError> {
        db.supports(Operation::BlockTags)
            .map_err(db_error("following a chain"))?;
        if !db.config().explicit_finality {
            return Err(FollowError::Unsuitable(format!(
                "{} finalizes what each checkpoint covers, which a reorganisation may still remove: create it with `cairn init --finality explicit`",
                db.dir().display()
            )));
        }
        if sources.len() != 1 {
            return Err(FollowError::Unsuitable(format!(
                "{} holds one tree, and {} sources were given: follow several into a database of several trees",
                db.dir().display(),
                sources.len()
            )));
        }
        Ok(Target::Tree(db))
    }

    /// The trees of `forest` the sources name, each named by one source.
    pub(crate) fn forest(
        forest: &'a Forest,
        sources: &[Source],
    ) -> Result<Target<'a>, FollowError> {
        if !forest.is_journaled() {
            return Err(FollowError::Unsuitable(format!(
                "{} holds one tree in the layout before several: follow one contract into it (without a list of sources), or add a tree to it first",
                forest.dir().display()
            )));
        }
        if sources.is_empty() {
            return Err(FollowError::Unsuitable("no source to follow".to_owned()));
        }
        let mut trees = Vec::with_capacity(sources.len());
        for (index, source) in sources.iter().enumerate() {
            let Some(name) = &source.tree else {
                return Err(FollowError::Unsuitable(format!(
                    "source {index} names no tree: each source of a database of several trees names the one it feeds"
                )));
            };
            if let Some(other) = sources[..index]
                .iter()
                .position(|s| s.tree.as_deref() == Some(name))
            {
                return Err(FollowError::Unsuitable(format!(
                    "sources {other} and {index} both feed the tree {name:?}: one source a tree, so its values keep the contract's order"
                )));
            }
            let members = forest
                .family(name)
                .map_err(db_error(format!("source {index}'s tree")))?;
            let first = members.first().expect("a family holds member 0");
            if first.family.is_some_and(|f| f.member > 0) {
                return Err(FollowError::Unsuitable(format!(
                    "source {index} names {name:?}, a member of a family: name the family {:?}",
                    first.family_name()
                )));
            }
            if first.family.is_some() && source.root_call.is_some() {
                return Err(FollowError::Unsuitable(format!(
                    "source {index} has a root call, but {name:?} is a family of trees (its root is a member's): follow it without one"
                )));
            }
            trees.push((name.clone(), Arc::clone(&first.db)));
        }
        Ok(Target::Forest { forest, trees })
    }

    /// The database's directory.
    pub(crate) fn dir(&self) -> &std::path::Path {
        match self {
            Target::Tree(db) => db.dir(),
            Target::Forest { forest, .. } => forest.dir(),
        }
    }

    /// The last block held, and its hash.
    pub(crate) fn last(&self) -> Result<Option<(u64, Option<Word>)>, FollowError> {
        match self {
            Target::Tree(db) => Ok(db
                .head_at_block(u64::MAX)
                .map_err(db_error("reading the last tagged head"))?
                .map(|head| (head.block, head.block_hash))),
            Target::Forest { forest, .. } => {
                Ok(forest.blocks().last().map(|b| (b.number, Some(b.hash))))
            }
        }
    }

    /// The first block a rollback can reach (the first block followed, or
    /// the last final one).
    pub(crate) fn first(&self) -> Result<Option<u64>, FollowError> {
        match self {
            Target::Tree(db) => Ok(db
                .heads(0, 1)
                .map_err(db_error("reading the first tagged head"))?
                .first()
                .map(|head| head.block)),
            Target::Forest { forest, .. } => Ok(forest.blocks().first().map(|b| b.number)),
        }
    }

    /// The last block held as final (0: none).
    pub(crate) fn final_block(&self) -> Result<u64, FollowError> {
        match self {
            Target::Tree(db) => {
                // Nothing finalized yet: no block is final (the first
                // block followed, tagged empty, is not one either).
                let finalized = db.finalized_size();
                if finalized == 0 {
                    return Ok(0);
                }
                let mut final_block = 0;
                for head in db
                    .heads(0, usize::MAX)
                    .map_err(db_error("reading the tagged heads"))?
                {
                    if head.size > finalized {
                        break;
                    }
                    final_block = head.block;
                }
                Ok(final_block)
            }
            Target::Forest { forest, .. } => Ok(forest.finalized_block().unwrap_or(0)),
        }
    }

    /// The hash held for exactly `block`, if it is held.
    pub(crate) fn hash_at(&self, block: u64) -> Result<Option<Word>, FollowError> {
        match self {
            Target::Tree(db) => Ok(db
                .head_at_block(block)
                .map_err(db_error("reading a tagged head"))?
                .filter(|head| head.block == block)
                .and_then(|head| head.block_hash)),
            Target::Forest { forest, .. } => Ok(forest
                .blocks()
                .iter()
                .find(|b| b.number == block)
                .map(|b| b.hash)),
        }
    }

    /// Per source, its tree's name (none for one database) and size.
    pub(crate) fn sizes(&self) -> Vec<(Option<String>, u64)> {
        match self {
            Target::Tree(db) => vec![(None, db.size())],
            Target::Forest { forest, trees } => {
                let all = forest.trees();
                trees
                    .iter()
                    .map(|(name, _)| {
                        let size = all
                            .iter()
                            .filter(|t| t.family_name() == name)
                            .map(|t| t.db.size())
                            .sum();
                        (Some(name.clone()), size)
                    })
                    .collect()
            }
        }
    }

    /// Leaves in the trees followed.
    pub(crate) fn leaves(&self) -> u64 {
        self.sizes().iter().map(|(_, size)| size).sum()
    }

    /// Whether source `source`'s tree accepts `value` at `position`.
    pub(crate) fn check_value(
        &self,
        source: usize,
        position: usize,
        value: &Word,
    ) -> Result<(), DbError> {
        match self {
            Target::Tree(db) => db.check_value(position, value),
            Target::Forest { trees, .. } => trees[source].1.check_value(position, value),
        }
    }

    /// Writes `blocks` (oldest first), durable when it returns.
    pub(crate) fn commit(&self, blocks: &[Block], timeout: Duration) -> Result<(), FollowError> {
        let (Some(first), Some(last)) = (blocks.first(), blocks.last()) else {
            return Ok(());
        };
        match self {
            Target::Tree(db) => {
                let mut last_ack = None;
                for block in blocks {
                    let number = block.number;
                    let what = || format!("appending the values of block {number}");
                    let ack = db
                        .append_tagged(
                            &block.values[0],
                            BlockTag {
                                number,
                                hash: Some(block.hash),
                            },
                        )
                        .map_err(db_error(what()))?;
                    if ack.appended().is_some() {
                        last_ack = Some(ack);
                    } else {
                        // Refused for values not durable yet (an earlier
                        // block of these): waiting resolves it to the
                        // refusal.
                        ack.wait(db, timeout).map_err(db_error(what()))?;
                    }
                }
                if let Some(ack) = last_ack {
                    ack.wait(db, timeout).map_err(db_error(format!(
                        "making blocks {} to {} durable",
                        first.number, last.number
                    )))?;
                }
                Ok(())
            }
            Target::Forest { forest, trees } => {
                let parts: Vec<BlockParts<'_>> = blocks
                    .iter()
                    .map(|block| {
                        (
                            BlockId {
                                number: block.number,
                                hash: block.hash,
                            },
                            trees
                                .iter()
                                .zip(&block.values)
                                .filter(|(_, values)| !values.is_empty())
                                .map(|((name, _), values)| (name.as_str(), &values[..]))
                                .collect(),
                        )
                    })
                    .collect();
                forest.commit_blocks(&parts).map_err(db_error(format!(
                    "writing blocks {} to {}",
                    first.number, last.number
                )))?;
                Ok(())
            }
        }
    }

    /// Per source, its tree's size and root now (durable in the tree's own
    /// files first, in a database of several trees).
    pub(crate) fn roots(&self) -> Result<Vec<(u64, Option<Word>)>, FollowError> {
        match self {
            Target::Tree(db) => {
                let head = db.head();
                Ok(vec![(head.size, head.root)])
            }
            Target::Forest { forest, trees } => {
                forest
                    .apply()
                    .map_err(db_error("making the trees' roots durable"))?;
                Ok(trees
                    .iter()
                    .map(|(_, db)| {
                        let head = db.head();
                        (head.size, head.root)
                    })
                    .collect())
            }
        }
    }

    /// Rolls back to the end of `block`; leaves removed.
    pub(crate) fn truncate_to_block(&self, block: u64) -> Result<u64, FollowError> {
        let before = self.leaves();
        let what = || format!("rolling back to block {block}");
        match self {
            Target::Tree(db) => {
                db.truncate_to_block(block).map_err(db_error(what()))?;
            }
            Target::Forest { forest, .. } => {
                forest.truncate_to_block(block).map_err(db_error(what()))?;
            }
        }
        Ok(before.saturating_sub(self.leaves()))
    }

    /// Makes everything up to `block` final, if a block at or below it is
    /// held; whether it was.
    pub(crate) fn finalize_to_block(&self, block: u64) -> Result<bool, FollowError> {
        let held = match self {
            Target::Tree(db) => db
                .head_at_block(block)
                .map_err(db_error("reading a tagged head"))?
                .is_some(),
            Target::Forest { forest, .. } => {
                forest.blocks().first().is_some_and(|b| b.number <= block)
            }
        };
        if !held {
            return Ok(false);
        }
        let what = || format!("finalizing up to block {block}");
        match self {
            Target::Tree(db) => db.finalize_to_block(block).map(drop),
            Target::Forest { forest, .. } => forest.finalize_to_block(block).map(drop),
        }
        .map_err(db_error(what()))?;
        Ok(true)
    }
}
