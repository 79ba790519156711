//! `cairn ingest`: append leaves to a database durably, block by block.
//!
//! The input is streamed: two blocks of leaves are in memory at a time (the
//! one being appended and the one whose write is in flight), and each block
//! is one all-or-nothing append whose durability is waited for before the
//! command counts it, so when the command reports a block it is on disk. A block that is
//! refused (duplicates, a bad line, a leaf the hash refuses) appends
//! nothing, but the blocks before it stay appended: every error says how
//! many leaves that was.

use std::path::PathBuf;
use std::time::Duration;

use std::io::IsTerminal as _;

use anyhow::anyhow;
use cairn_core::hex::{Hex, to_hex};
use cairn_core::{Hash, TreeHead};
use cairn_db::{Ack, BlockTag, Database, DbError, Duplicate, DuplicateOf, Operation};

use crate::args::{Source, parse_block_size};
use crate::database::{self, Options};
use crate::failure::{Code, Failure};
use crate::json::{Object, array};
use crate::leaves::{self, BlockReader, Format, LeafError, ReadError};
use crate::output;
use crate::progress::Progress;
use crate::units::group;

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Append the leaves of FILE (- or nothing reads stdin) to the cairn database DIR, durably: the \
input is read in blocks of --block-size leaves (default 1M), and each block is one \
all-or-nothing append made durable by one commit (write and fdatasync), which runs while the \
next block is read and checked. At most two blocks are held in memory, so inputs of any size \
stream through, and nothing is reported appended before it is on disk.

Prints the index of the first appended leaf, the count, and the database's new size and root. \
When at least 65,536 leaves are not covered by the last checkpoint, ingest ends with a \
checkpoint, so that the next open does not rehash them.

Duplicates: a database with a nullifier set (the default of `cairn init`) refuses a value it \
already holds or that repeats within a block. The block is refused whole and the command exits 3 \
listing each duplicate (its value, its position in the input counting leaves from 0, its line \
for hex input, and where the value already is: a leaf index of the database or an earlier input \
position). Blocks before it are already appended and durable: the error says how many leaves \
that was. With --skip-duplicates duplicates are skipped (a value repeated within the input is \
appended once, at its first position) and reported instead. Re-running an interrupted ingest \
with --skip-duplicates completes it.

A progress bar with rate and ETA is drawn on stderr when stderr is a terminal and the input is \
large (32 MiB or more), followed by a spinner while the new leaves are hashed and checkpointed; \
never when stderr is piped. Reading a terminal (no file argument, stdin not redirected), ingest \
says it is waiting: end the input with Ctrl-D.

--json prints {\"first_index\":I|null,\"count\":C,\"size\":S,\"root\":\"0x..\"|null,\"blocks\":B,\
\"skipped_count\":K,\"skipped\":[..],\"checkpointed\":true|false}; with --skip-duplicates \
\"skipped\" lists the first 1,000 skipped values. On exit 3 it prints {\"error\":\"duplicates\",\
\"message\":\"..\",\"appended_before\":A,\"first_index\":I|null,\"size\":S,\"root\":..,\"block\":B,\
\"duplicate_count\":K,\"duplicates\":[..]} counting every duplicate of the refused block and \
listing the first 1,000. Each \
listed value is {\"value\":\"0x..\",\"position\":P,\"line\":L|null,\"existing_index\":I|null,\
\"earlier_position\":Q|null}.

--block N tags the input as the leaves of chain block N (--block-hash 0x.. adds the block's hash): they are appended as one all-or-nothing commit (the input must hold at most --block-size leaves; an empty input records the block alone), and the head at their end (block, size, root) is recorded under the same durability, for `cairn heads`, `cairn truncate --to-block` and `cairn prove --root`. Block numbers must increase from one tagged ingest to the next (exit 2).

Examples:
  cairn ingest db leaves.bin
  cairn ingest db leaves.bin --block 19000000
  cairn ingest db --format hex leaves.hex
  cairn init posdb --arity 2 --hash poseidon && printf '1\\n2\\n' | cairn ingest posdb --format dec
  generate-leaves | cairn ingest db --block-size 100000 -
  cairn ingest db --skip-duplicates --json leaves.bin";

/// Leaves not covered by the last checkpoint that make ingest end with one.
pub const CHECKPOINT_AFTER: u64 = 1 << 16;

/// Skipped or refused duplicates listed by `--json` (all are counted): a
/// block of a million duplicates would otherwise print a line of 164 MB.
pub const LISTED: usize = 1000;

/// Values listed on the one stderr or stdout line (all are in `--json`).
const SHOWN: usize = 8;

/// How long one block may take to become durable before the command gives up.
const DURABLE_TIMEOUT: Duration = Duration::from_secs(3600);

/// Append leaves to a database, durably, block by block.
#[derive(clap::Args, Debug)]
pub struct IngestCmd {
    /// The database directory.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// The leaf file; - or nothing reads stdin.
    #[arg(value_name = "FILE")]
    source: Option<PathBuf>,
    /// How the leaf file is written.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = Format::Bin)]
    format: Format,
    /// Leaves per durable commit (1 to 2^26; 1M, 64Ki and 2^16 are accepted spellings).
    #[arg(long, value_name = "B", value_parser = parse_block_size, default_value = "1Mi")]
    block_size: u64,
    /// Skip values the database already holds instead of refusing their block.
    #[arg(long, conflicts_with = "block")]
    skip_duplicates: bool,
    /// The chain block these leaves belong to: one commit, tagged with it.
    #[arg(long, value_name = "N")]
    block: Option<u64>,
    /// The tree of a database of several trees to append to (default: the one named default, or the only one).
    #[arg(long, value_name = "NAME")]
    tree: Option<String>,
    /// The block's hash (with --block).
    #[arg(long, value_name = "0x..", requires = "block", value_parser = crate::args::parse_root)]
    block_hash: Option<Hash>,
    /// Print the report as one line of JSON.
    #[arg(long)]
    json: bool,
}

/// A duplicate, located in the input.
#[derive(Clone, Copy, Debug)]
struct Located {
    value: Hash,
    position: u64,
    line: Option<usize>,
    existing_index: Option<u64>,
    earlier_position: Option<u64>,
    earlier_line: Option<usize>,
}

impl Located {
    fn json(&self) -> String {
        Object::new()
            .hash("value", Some(&self.value))
            .field("position", self.position)
            .field("line", self.line.map(|l| l as u64))
            .field("existing_index", self.existing_index)
            .field("earlier_position", self.earlier_position)
            .finish()
    }

    fn text(&self) -> String {
        let at = |position: u64, line: Option<usize>| match line {
            Some(line) => format!("input leaf {position}, line {line}"),
            None => format!("input leaf {position}"),
        };
        let of = match (self.existing_index, self.earlier_position) {
            (Some(index), _) => format!("is already leaf {index}"),
            (None, Some(position)) => format!("repeats {}", at(position, self.earlier_line)),
            (None, None) => "is a duplicate".to_owned(),
        };
        format!(
            "{} ({}) {of}",
            Hex(&self.value),
            at(self.position, self.line)
        )
    }
}

/// `items` rendered by `text`, at most [`SHOWN`], with how many more there are.
fn listing(items: &[Located], total: usize, more: &str) -> String {
    let mut out: Vec<String> = items.iter().take(SHOWN).map(Located::text).collect();
    if total > out.len() {
        out.push(format!(
            "and {} more{more}",
            group((total - out.len()) as u64)
        ));
    }
    out.join("; ")
}

/// What the ingest has done so far.
#[derive(Debug, Default)]
struct Progressed {
    first_index: Option<u64>,
    count: u64,
    blocks: u64,
    /// Leaves of the input consumed (appended or skipped).
    position: u64,
    skipped_count: u64,
    skipped: Vec<Located>,
}

/// Where a block is in the input: to locate its duplicates.
#[derive(Debug)]
struct Place {
    /// The block's number, from 0.
    block: u64,
    /// Its first input position.
    first: u64,
    /// Its length.
    len: u64,
    /// The input line of each of its leaves (hex and decimal input).
    lines: Vec<usize>,
}

impl Place {
    /// `d`, located in the input.
    fn locate(&self, d: &Duplicate) -> Located {
        let line_of = |position: usize| self.lines.get(position).copied();
        let (existing_index, earlier) = match d.of {
            DuplicateOf::Leaf(index) => (Some(index), None),
            DuplicateOf::Batch(position) => (None, Some(position)),
        };
        Located {
            value: d.value,
            position: self.first + d.position as u64,
            line: line_of(d.position),
            existing_index,
            earlier_position: earlier.map(|p| self.first + p as u64),
            earlier_line: earlier.and_then(line_of),
        }
    }

    /// The refusal of this block for `duplicates`.
    fn refused(&self, duplicates: &[Duplicate]) -> Stop {
        Stop::Duplicates {
            block: self.block,
            first: self.first,
            len: self.len,
            count: duplicates.len(),
            located: duplicates
                .iter()
                .take(LISTED)
                .map(|d| self.locate(d))
                .collect(),
        }
    }
}

/// A block appended but not yet counted: its acknowledgement and where it
/// is in the input (its duplicates are found when it resolves if they were
/// not durable yet when it was appended).
type Pending = (Ack, Place);

/// Waits for the block in flight, if any, and counts it as done (its
/// skipped duplicates too).
fn settle(db: &Database, pending: &mut Option<Pending>, done: &mut Progressed) -> Result<(), Stop> {
    let Some((ack, place)) = pending.take() else {
        return Ok(());
    };
    let acked = ack.wait(db, DURABLE_TIMEOUT).map_err(|error| match error {
        DbError::Duplicates { duplicates, .. } => place.refused(&duplicates),
        error => Stop::Db(error),
    })?;
    if acked.count > 0 {
        done.first_index.get_or_insert(acked.first);
    }
    done.count += acked.count;
    done.skipped_count += acked.skipped.len() as u64;
    let room = LISTED.saturating_sub(done.skipped.len());
    done.skipped
        .extend(acked.skipped.iter().take(room).map(|d| place.locate(d)));
    Ok(())
}

/// What ingest says when it reads leaves from a terminal.
fn waiting_notice(format: Format) -> String {
    let what = match format {
        Format::Hex => "one 0x-prefixed 64-digit hex leaf per line",
        Format::Dec => "one decimal field element per line",
        Format::Bin => "raw 32-byte leaves (--format hex for typed hex lines)",
    };
    format!("reading leaves from the terminal: {what}; end the input with Ctrl-D")
}

impl IngestCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        let source = Source::from_arg(self.source.as_deref());
        if self.format == Format::Bin
            && let Some(len) = source.file_len()
            && !len.is_multiple_of(32)
        {
            // Refused before anything is appended (stdin is checked at its end).
            let error = LeafError::Length {
                len: usize::try_from(len).unwrap_or(usize::MAX),
                looks_like_hex: looks_like_hex(&source),
            };
            return Err(Failure::new(
                Code::Input,
                anyhow!("{}: {error}", source.name()),
            ));
        }
        let input = source.open()?;
        if matches!(source, Source::Stdin) && std::io::stdin().is_terminal() {
            // Otherwise a bare `cairn ingest db` looks hung.
            eprintln!("{}", waiting_notice(self.format));
        }
        if cairn_db::is_forest(&self.dir) {
            return self.ingest_forest(&source, input);
        }
        if let Some(tree) = &self.tree
            && tree != cairn_db::DEFAULT_TREE
        {
            return Err(database::db_failure(
                cairn_db::tree_dir(&self.dir, Some(tree))
                    .err()
                    .unwrap_or(cairn_db::DbError::Forest(cairn_db::ForestError::SingleTree)),
            ));
        }
        let db = database::open(
            &self.dir,
            Options {
                background: true,
                verify: false,
            },
        )?;
        if self.block.is_some()
            && let Err(refusal) = db.supports(Operation::BlockTags)
        {
            return Err(Failure::new(
                Code::Usage,
                anyhow!("{} cannot take --block: {refusal}", self.dir.display()),
            ));
        }
        if self.skip_duplicates && !db.refuses_duplicates() {
            return Err(Failure::new(
                Code::Usage,
                anyhow!(
                    "{} keeps no nullifier set (it was created with --no-unique), so it has no duplicates to skip: drop --skip-duplicates",
                    self.dir.display()
                ),
            ));
        }
        if let Err(message) = self.format.check_hash(db.tree_config().hash) {
            return Err(Failure::new(
                Code::Usage,
                anyhow!("{}: {message}", self.dir.display()),
            ));
        }
        if self.format == Format::Bin
            && let Some(len) = source.file_len()
        {
            // A bulk load: the set's tables sized once for the whole input,
            // rather than grown block by block (each growth moves every
            // entry held), and its file written once, by the checkpoint at
            // the end, not at each automatic one. A set that cannot take
            // that many says so at the append that overflows it, with the
            // leaves before it appended: the reservation is only a hint.
            let _ = db.reserve(len / 32);
        }
        let mut done = Progressed::default();
        let result = self.ingest(&db, &source, input, &mut done);
        match result {
            Ok((checkpointed, head)) => {
                db.close().map_err(database::db_failure)?;
                self.report(&done, head, checkpointed)
            }
            Err(failure) => {
                let failure = self.explain(db.size(), &|| db.head(), &done, failure);
                drop(db);
                Err(failure)
            }
        }
    }

    /// An ingest into one tree of a database of several: each block read
    /// is one write through the database's block journal (with --block,
    /// the input is that chain block's values for this tree).
    fn ingest_forest(
        &self,
        source: &Source,
        input: Box<dyn std::io::BufRead>,
    ) -> Result<(), Failure> {
        let forest = cairn_db::Forest::open(&self.dir).map_err(database::db_failure)?;
        let tree = match &self.tree {
            Some(name) => name.clone(),
            None => {
                let names = forest.names();
                match names.iter().find(|n| *n == cairn_db::DEFAULT_TREE) {
                    Some(name) => name.clone(),
                    None if names.len() == 1 => names[0].clone(),
                    None => {
                        return Err(Failure::new(
                            Code::Usage,
                            anyhow!(
                                "{} holds several trees ({}): name one with --tree",
                                self.dir.display(),
                                names.join(", ")
                            ),
                        ));
                    }
                }
            }
        };
        let db = forest.tree(&tree).map_err(database::db_failure)?;
        if let Err(message) = self.format.check_hash(db.tree_config().hash) {
            return Err(Failure::new(
                Code::Usage,
                anyhow!("{}: {message}", self.dir.display()),
            ));
        }
        let mut reader = BlockReader::new(input, self.format);
        let block_size = usize::try_from(self.block_size).unwrap_or(usize::MAX);
        let (mut block, mut lines) = (Vec::new(), Vec::new());
        let (mut first, mut count) = (None, 0u64);
        let mut last_tree = tree.clone();
        loop {
            reader
                .next_block(block_size, &mut block, &mut lines)
                .map_err(|error| {
                    Failure::new(Code::Input, anyhow!("{}: {error}", source.name()))
                })?;
            if block.is_empty() && (self.block.is_none() || first.is_some()) {
                break;
            }
            let committed = match self.block {
                Some(number) => {
                    if first.is_some() {
                        return Err(Failure::new(
                            Code::Usage,
                            anyhow!("with --block the input holds at most --block-size leaves"),
                        ));
                    }
                    let id = cairn_db::BlockId {
                        number,
                        hash: self.block_hash.unwrap_or([0; 32]),
                    };
                    forest.commit_block(id, &[(tree.as_str(), &block[..])])
                }
                None => forest.append(&tree, &block),
            }
            .map_err(database::db_failure)?;
            first.get_or_insert(committed.trees[0].first);
            count += committed.trees.iter().map(|t| t.count).sum::<u64>();
            // A family's values may go on in a new member (rollover).
            if let Some(last) = committed.trees.last() {
                last_tree.clone_from(&last.tree);
            }
            if block.is_empty() {
                break;
            }
        }
        forest.apply().map_err(database::db_failure)?;
        let rolled = last_tree != tree;
        let db = if rolled {
            forest.tree(&last_tree).map_err(database::db_failure)?
        } else {
            db
        };
        let head = db.head();
        drop(db);
        forest.close().map_err(database::db_failure)?;
        let first = first.unwrap_or(head.size);
        if self.json {
            return output::line(
                &Object::new()
                    .field("tree", tree.as_str())
                    .field("last_tree", last_tree.as_str())
                    .field("first_index", first)
                    .field("count", count)
                    .field("size", head.size)
                    .hash("root", head.root.as_ref())
                    .finish(),
            );
        }
        if rolled {
            return output::line(&format!(
                "appended {count} lea{} to tree {tree}, rolling over to {last_tree}: size {}, root {}",
                if count == 1 { "f" } else { "ves" },
                head.size,
                head.root.map_or_else(|| "none".to_owned(), |r| to_hex(&r))
            ));
        }
        output::line(&format!(
            "appended {count} lea{} to tree {tree} at indices {first}..{}: size {}, root {}",
            if count == 1 { "f" } else { "ves" },
            first + count,
            head.size,
            head.root.map_or_else(|| "none".to_owned(), |r| to_hex(&r))
        ))
    }

    /// Reads and appends every block; returns whether it checkpointed, and
    /// the head (committing the tree, which hashes what the appends left).
    ///
    /// One block is in flight: block k+1 is read, checked against the
    /// nullifier set and appended while block k's write and fdatasync run
    /// (the wait for k comes after k+1's append), so the CPU work of one
    /// block overlaps the disk work of the one before. Every block is still
    /// one all-or-nothing commit, and whatever stops the ingest first waits
    /// for the block in flight, so `done` only ever counts durable leaves.
    fn ingest(
        &self,
        db: &Database,
        source: &Source,
        input: Box<dyn std::io::BufRead>,
        done: &mut Progressed,
    ) -> Result<(bool, TreeHead), Stop> {
        let mut pending = None;
        let mut progress = Progress::new(source.file_len());
        let result = self.ingest_blocks(db, source, input, done, &mut pending, &mut progress);
        // Settle the block in flight whatever happened; a failed wait is the
        // more serious report.
        settle(db, &mut pending, done)?;
        result?;
        let stats = db.stats();
        let checkpoint =
            done.count > 0 && stats.store.size - stats.store.checkpoint_size >= CHECKPOINT_AFTER;
        // Appends only copied the leaves: the tree is hashed now (by the
        // checkpoint, or by the head the report prints).
        let hash = db.tree_config().hash;
        progress.phase(
            format!(
                "hashing {} new leaves ({hash}){}",
                group(done.count),
                if checkpoint {
                    " and writing a checkpoint"
                } else {
                    ""
                }
            ),
            done.count,
        );
        if checkpoint {
            db.checkpoint().map_err(Stop::Db)?;
        }
        let head = db.head();
        progress.finish();
        Ok((checkpoint, head))
    }

    fn ingest_blocks(
        &self,
        db: &Database,
        source: &Source,
        input: Box<dyn std::io::BufRead>,
        done: &mut Progressed,
        pending: &mut Option<Pending>,
        progress: &mut Progress,
    ) -> Result<(), Stop> {
        let mut reader = BlockReader::new(input, self.format);
        let block_size = usize::try_from(self.block_size).unwrap_or(usize::MAX);
        let mut block = Vec::new();
        let mut lines = Vec::new();
        let tag = self.block.map(|number| BlockTag {
            number,
            hash: self.block_hash,
        });
        loop {
            reader
                .next_block(block_size, &mut block, &mut lines)
                .map_err(|error| Stop::read(source, error))?;
            if block.is_empty() {
                break;
            }
            // A value the tree refuses whatever it holds, located in the input.
            for (position, value) in block.iter().enumerate() {
                let input_position = done.position + position as u64;
                if let Err(error) =
                    db.check_value(usize::try_from(input_position).unwrap_or(usize::MAX), value)
                {
                    let at = match lines.get(position) {
                        Some(line) => format!("line {line}"),
                        None => leaves::locate(
                            &[],
                            Format::Bin,
                            usize::try_from(input_position).unwrap_or(usize::MAX),
                        ),
                    };
                    return Err(Stop::Failed(Failure::new(
                        Code::Input,
                        anyhow!("{}: {at}: {error}", source.name()),
                    )));
                }
            }
            if tag.is_some() {
                // A block's leaves are one commit: nothing may follow them.
                let (mut rest, mut rest_lines) = (Vec::new(), Vec::new());
                reader
                    .next_block(1, &mut rest, &mut rest_lines)
                    .map_err(|error| Stop::read(source, error))?;
                if !rest.is_empty() {
                    return Err(Stop::Failed(Failure::new(
                        Code::Usage,
                        anyhow!(
                            "{}: more than --block-size ({}) leaves; with --block the input is one commit: raise --block-size",
                            source.name(),
                            group(self.block_size)
                        ),
                    )));
                }
            }
            let place = Place {
                block: done.blocks,
                first: done.position,
                len: block.len() as u64,
                lines: std::mem::take(&mut lines),
            };
            let appended = match (self.skip_duplicates, tag) {
                (true, _) => db.append_new(&block),
                (false, Some(tag)) => db.append_tagged(&block, tag),
                (false, None) => db.append(&block),
            };
            let ack = appended.map_err(|error| match error {
                DbError::Duplicates { duplicates, .. } => place.refused(&duplicates),
                error => Stop::Db(error),
            })?;
            done.position += place.len;
            done.blocks += 1;
            // The previous block's wait, now that this one is appended.
            settle(db, pending, done)?;
            let waits = ack.appended().is_none();
            *pending = Some((ack, place));
            if waits {
                // Not appended yet (its duplicates were not durable): it
                // goes in now, before the next block.
                settle(db, pending, done)?;
            }
            progress.update(reader.bytes(), done.count);
        }
        if let Some(tag) = tag
            && done.blocks == 0
        {
            // No leaves: the block is recorded alone.
            settle(db, pending, done)?;
            let ack = db.append_tagged(&[], tag).map_err(Stop::Db)?;
            *pending = Some((
                ack,
                Place {
                    block: 0,
                    first: 0,
                    len: 0,
                    lines: Vec::new(),
                },
            ));
        }
        Ok(())
    }

    /// The failure to report for `stop`, saying what was appended before it.
    fn explain(
        &self,
        size: u64,
        head: &dyn Fn() -> TreeHead,
        done: &Progressed,
        stop: Stop,
    ) -> Failure {
        let before = if done.count == 0 {
            format!(
                "nothing was appended (the database holds {} leaves)",
                group(size)
            )
        } else {
            format!(
                "{} leaves of earlier blocks were appended and are durable (indices {}..{}; the database holds {})",
                group(done.count),
                done.first_index.unwrap_or(0),
                done.first_index.unwrap_or(0) + done.count,
                group(size)
            )
        };
        match stop {
            Stop::Failed(failure) => {
                let code = failure.code();
                let line = failure.line();
                let message = line.strip_prefix("error: ").unwrap_or(&line);
                Failure::new(code, anyhow!("{message}; {before}"))
            }
            Stop::Db(error) => {
                let code = database::db_code(&error);
                Failure::new(code, anyhow!("{}: {error}; {before}", self.dir.display()))
            }
            Stop::Duplicates {
                block,
                first,
                len,
                count,
                located,
            } => {
                let json_lists = if count > LISTED {
                    format!(" (--json lists the first {})", group(LISTED as u64))
                } else {
                    " (--json lists all)".to_owned()
                };
                let message = format!(
                    "{}: {} duplicate value{} in block {block} of {} (input leaves {first}..{}), so none of its leaves was appended: {}; {before}",
                    self.dir.display(),
                    group(count as u64),
                    if count == 1 { "" } else { "s" },
                    self.source_name(),
                    first + len,
                    listing(&located, count, &json_lists),
                );
                if self.json {
                    let head = head();
                    let json = Object::new()
                        .field("error", "duplicates")
                        .field("message", message.as_str())
                        .field("appended_before", done.count)
                        .field("first_index", done.first_index)
                        .field("size", head.size)
                        .hash("root", head.root.as_ref())
                        .field("block", block)
                        .field("duplicate_count", count as u64)
                        .raw("duplicates", &array(located.iter().map(Located::json)))
                        .finish();
                    if let Err(failure) = output::line(&json) {
                        return failure;
                    }
                }
                Failure::new(Code::Duplicate, anyhow!("{message}"))
            }
        }
    }

    fn source_name(&self) -> String {
        Source::from_arg(self.source.as_deref()).name()
    }

    fn report(&self, done: &Progressed, head: TreeHead, checkpointed: bool) -> Result<(), Failure> {
        if self.json {
            return output::line(
                &Object::new()
                    .field("first_index", done.first_index)
                    .field("count", done.count)
                    .field("size", head.size)
                    .hash("root", head.root.as_ref())
                    .field("blocks", done.blocks)
                    .field("skipped_count", done.skipped_count)
                    .raw("skipped", &array(done.skipped.iter().map(Located::json)))
                    .field("checkpointed", checkpointed)
                    .finish(),
            );
        }
        let root = head
            .root
            .map_or_else(|| "none (the tree is empty)".to_owned(), |r| to_hex(&r));
        let mut text = match done.first_index {
            Some(first) => format!(
                "appended {} lea{} at indices {first}..{} in {} block{}: size {}, root {root}",
                group(done.count),
                if done.count == 1 { "f" } else { "ves" },
                first + done.count,
                done.blocks,
                if done.blocks == 1 { "" } else { "s" },
                head.size,
            ),
            None => format!("appended nothing: size {}, root {root}", head.size),
        };
        if done.skipped_count > 0 {
            text.push_str(&format!(
                "\nskipped {} duplicate{}: {}",
                group(done.skipped_count),
                if done.skipped_count == 1 { "" } else { "s" },
                listing(
                    &done.skipped,
                    usize::try_from(done.skipped_count).unwrap_or(usize::MAX),
                    ""
                ),
            ));
        }
        output::line(&text)
    }
}

/// Why an ingest stopped.
#[derive(Debug)]
enum Stop {
    /// A failure already worded (bad input).
    Failed(Failure),
    /// The database refused or failed.
    Db(DbError),
    /// A block held duplicates.
    Duplicates {
        /// Its number, from 0.
        block: u64,
        /// Its first input position.
        first: u64,
        /// Its length.
        len: u64,
        /// Its duplicates, all counted...
        count: usize,
        /// ...and the first [`LISTED`] located.
        located: Vec<Located>,
    },
}

impl Stop {
    fn read(source: &Source, error: ReadError) -> Stop {
        Stop::Failed(Failure::new(
            Code::Input,
            anyhow!("{}: {error}", source.name()),
        ))
    }
}

/// Whether a file's first bytes look like hex text (for the length error's hint).
fn looks_like_hex(source: &Source) -> bool {
    let Source::File(path) = source else {
        return false;
    };
    let mut head = [0u8; 256];
    let read = std::fs::File::open(path)
        .and_then(|mut file| std::io::Read::read(&mut file, &mut head))
        .unwrap_or(0);
    head[..read].trim_ascii_start().starts_with(b"0x")
}
