//! `cairn ingest` into an indexed database: the same blocks, reports and
//! duplicate handling as for a lean one, through `IndexedDb`. A block is
//! one all-or-nothing insert, waited for before it counts; the report's
//! head is the indexed tree's after the last block.

use anyhow::anyhow;
use cairn_core::indexed::IndexedError;
use cairn_db::{DbError, Duplicate, DuplicateOf, IndexedDb, Inserted};
use std::collections::HashSet;

use super::{CHECKPOINT_AFTER, DURABLE_TIMEOUT, IngestCmd, LISTED, Located, Progressed, Stop};
use crate::args::Source;
use crate::database::{self, Options};
use crate::failure::{Code, Failure};
use crate::leaves::{self, BlockReader, Format};
use crate::progress::Progress;

/// Waits for the block in flight, if any, and counts it as done.
fn settle(pending: &mut Option<Inserted>, done: &mut Progressed) -> Result<(), Stop> {
    if let Some(inserted) = pending.take() {
        inserted
            .token
            .wait(DURABLE_TIMEOUT)
            .map_err(|e| Stop::Db(e.into()))?;
        done.first_index.get_or_insert(inserted.first);
        done.count += inserted.count;
    }
    Ok(())
}

impl IngestCmd {
    pub(super) fn run_indexed(
        &self,
        source: &Source,
        input: Box<dyn std::io::BufRead>,
    ) -> Result<(), Failure> {
        if self.block.is_some() {
            return Err(Failure::new(
                Code::Usage,
                anyhow!(
                    "{} is an indexed database: it records no block-tagged heads, so --block does not apply",
                    self.dir.display()
                ),
            ));
        }
        let db = crate::indexed::open(
            &self.dir,
            Options {
                background: true,
                verify: false,
            },
        )?;
        if let Err(message) = self.format.check_hash(db.tree_config().hash) {
            return Err(Failure::new(
                Code::Usage,
                anyhow!("{}: {message}", self.dir.display()),
            ));
        }
        let mut done = Progressed::default();
        let mut pending = None;
        let mut progress = Progress::new(source.file_len());
        let mut result =
            self.insert_blocks(&db, source, input, &mut done, &mut pending, &mut progress);
        if let Err(stop) = settle(&mut pending, &mut done) {
            result = Err(stop);
        }
        let result = result.and_then(|()| {
            let stats = db.stats();
            let checkpoint = done.count > 0
                && stats.store.size - stats.store.checkpoint_size >= CHECKPOINT_AFTER;
            if checkpoint {
                progress.phase("writing a checkpoint of the log".to_owned(), done.count);
                db.checkpoint().map_err(Stop::Db)?;
            }
            progress.finish();
            Ok(checkpoint)
        });
        match result {
            Ok(checkpointed) => {
                let head = db.head();
                db.close().map_err(database::db_failure)?;
                self.report(&done, head, checkpointed)
            }
            Err(stop) => {
                let head = db.head();
                let failure = self.explain(head.size, &|| head, &done, stop);
                drop(db);
                Err(failure)
            }
        }
    }

    fn insert_blocks(
        &self,
        db: &IndexedDb,
        source: &Source,
        input: Box<dyn std::io::BufRead>,
        done: &mut Progressed,
        pending: &mut Option<Inserted>,
        progress: &mut Progress,
    ) -> Result<(), Stop> {
        let mut reader = BlockReader::new(input, self.format);
        let block_size = usize::try_from(self.block_size).unwrap_or(usize::MAX);
        let mut block = Vec::new();
        let mut lines = Vec::new();
        loop {
            reader
                .next_block(block_size, &mut block, &mut lines)
                .map_err(|error| {
                    Stop::Failed(Failure::new(
                        Code::Input,
                        anyhow!("{}: {error}", source.name()),
                    ))
                })?;
            if block.is_empty() {
                break;
            }
            let line_of = |position: usize| lines.get(position).copied();
            let at = |position: usize| match line_of(position) {
                Some(line) => format!("line {line}"),
                None => leaves::locate(
                    &[],
                    Format::Bin,
                    usize::try_from(done.position + position as u64).unwrap_or(usize::MAX),
                ),
            };
            // The values the tree refuses whatever it holds, located in the input.
            let hash = db.tree_config().hash;
            for (position, value) in block.iter().enumerate() {
                let error = if *value == [0; 32] {
                    IndexedError::GuardValue {
                        position: usize::try_from(done.position).unwrap_or(usize::MAX) + position,
                    }
                } else if !hash.accepts(value) {
                    IndexedError::NonCanonical {
                        position: usize::try_from(done.position).unwrap_or(usize::MAX) + position,
                        value: *value,
                    }
                } else {
                    continue;
                };
                return Err(Stop::Failed(Failure::new(
                    Code::Input,
                    anyhow!("{}: {}: {error}", source.name(), at(position)),
                )));
            }
            let base = done.position;
            let locate = |d: &Duplicate| {
                let (existing_index, earlier) = match d.of {
                    DuplicateOf::Leaf(index) => (Some(index), None),
                    DuplicateOf::Batch(position) => (None, Some(position)),
                };
                Located {
                    value: d.value,
                    position: base + d.position as u64,
                    line: line_of(d.position),
                    existing_index,
                    earlier_position: earlier.map(|p| base + p as u64),
                    earlier_line: earlier.and_then(line_of),
                }
            };
            let values: Vec<cairn_core::Hash> = if self.skip_duplicates {
                // The tree answers for durable values only: the block in
                // flight is settled first.
                settle(pending, done)?;
                let mut seen = HashSet::with_capacity(block.len());
                let mut kept = Vec::with_capacity(block.len());
                let mut skipped = Vec::new();
                let mut first_at = std::collections::HashMap::new();
                for (position, value) in block.iter().enumerate() {
                    let of = if let Some(index) = db.index_of(value).filter(|&i| i > 0) {
                        Some(DuplicateOf::Leaf(index))
                    } else if !seen.insert(*value) {
                        Some(DuplicateOf::Batch(first_at[value]))
                    } else {
                        first_at.insert(*value, position);
                        None
                    };
                    match of {
                        Some(of) => skipped.push(Duplicate {
                            position,
                            value: *value,
                            of,
                        }),
                        None => kept.push(*value),
                    }
                }
                done.skipped_count += skipped.len() as u64;
                let room = LISTED.saturating_sub(done.skipped.len());
                done.skipped.extend(skipped.iter().take(room).map(locate));
                kept
            } else {
                block.clone()
            };
            let inserted = if values.is_empty() {
                None
            } else {
                match db.insert_batch(&values) {
                    Ok(inserted) => Some(inserted),
                    Err(DbError::Duplicates { duplicates, .. }) => {
                        return Err(Stop::Duplicates {
                            block: done.blocks,
                            first: done.position,
                            len: block.len() as u64,
                            count: duplicates.len(),
                            located: duplicates.iter().take(LISTED).map(locate).collect(),
                        });
                    }
                    Err(error) => return Err(Stop::Db(error)),
                }
            };
            done.position += block.len() as u64;
            done.blocks += 1;
            settle(pending, done)?;
            *pending = inserted;
            progress.update(reader.bytes(), done.count);
        }
        Ok(())
    }
}
