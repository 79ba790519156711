//! [`Forest`]: a database directory of named trees, each a [`Database`]
//! of any kind, written together by blocks. One write (a block's values
//! for any number of trees, a rollback or a finalization by block) is one
//! frame of the block journal and one `fdatasync`; the trees' own logs
//! catch up behind it, bounded by what the journal holds (a rollback's
//! trees roll back in memory, their files at their next write), and open
//! replays into each tree what it lacks (or removes what the journal
//! never held, or took back). So after a crash a block is in every tree
//! or in none.
//!
//! A directory made before databases held several trees (its `cairn.meta`
//! at the top, no manifest) opens as one tree named `default`, written
//! exactly as before (its own log, its own tags, no journal); adding a
//! tree writes the journal and then the manifest, and from then on every
//! write goes through the journal.
//!
//! Invariants kept here:
//! - every write to a tree of a journaled database is made under the
//!   writer lock (`state`) and journaled before the lock is released, so
//!   whoever flushes a tree's log (the applier, a trim) flushes only
//!   journaled leaves: at most the journaled size (`flush_to`), under the
//!   apply lock a rollback takes exclusively;
//! - a rollback or a block is refused whole before its frame is written
//!   (finality and block order checked first; a refused append undone in
//!   the trees it reached);
//! - the first failed journal write or sync poisons the database: nothing
//!   is written after it.

mod add;
mod error;
mod family;
mod files;
pub(crate) mod journal;
pub(crate) mod manifest;
mod read;
mod replay;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cairn_core::{Hash, TreeKind};
use cairn_store::fs::{Fs, FsFile};
use cairn_store::{BlockTag, StdFs, StoreError};
use parking_lot::{Condvar, Mutex, RwLock};

use crate::database::Database;
use crate::error::{DbError, Result};

pub use family::{Capacity, Located, Rollover};
pub use journal::{BlockId, JOURNAL, JOURNAL_VERSION};
pub use manifest::{Family, MANIFEST, MANIFEST_VERSION, MAX_NAME, check_name, member_name};

pub use error::ForestError;
pub use files::{family_dirs, is_forest, tree_dir, tree_dirs};
pub use read::{ReadTree, open_tree, open_trees};

use files::{journaled_config, open_writer, read_all, write_journal, write_manifest};
use journal::{BlockSizes, Header, Part, Record};

/// The name of the one tree of a directory made before databases held
/// several.
pub const DEFAULT_TREE: &str = "default";
/// The directory, under the database's, that holds the trees added to it.
pub const TREES_DIR: &str = "trees";
/// The journal is rewritten (every tree made durable first) once it
/// passes this many bytes.
pub const JOURNAL_TRIM_BYTES: u64 = 64 << 20;
/// How long a write waits for one tree's acknowledgement in the
/// single-tree layout.
const WAIT: Duration = Duration::from_secs(60);

/// One tree of a [`Forest`].
#[derive(Debug, Clone)]
pub struct Tree {
    /// Its name (`FAMILY/k` for member k >= 1 of a family).
    pub name: String,
    /// The tree.
    pub db: Arc<Database>,
    /// Its family, if it was added with a capacity.
    pub family: Option<Family>,
}

impl Tree {
    /// The name of its family (its own name for a tree of none).
    pub fn family_name(&self) -> &str {
        match self.family {
            Some(f) if f.member > 0 => self
                .name
                .rsplit_once('/')
                .map_or(self.name.as_str(), |(family, _)| family),
            _ => &self.name,
        }
    }
}

/// What one tree holds at a block, or got from one write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeAt {
    /// The tree's name.
    pub tree: String,
    /// The index of the first value written (the size before).
    pub first: u64,
    /// Values written.
    pub count: u64,
    /// The tree's size after.
    pub size: u64,
}

/// One block of [`Forest::commit_blocks`]: the block, and the trees it
/// names with the values each gets.
pub type BlockParts<'a> = (BlockId, Vec<(&'a str, &'a [Hash])>);

/// A durable write: the block it was for, and every tree it named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Committed {
    /// The block, if the write was one.
    pub block: Option<BlockId>,
    /// Per tree named, in the order named.
    pub trees: Vec<TreeAt>,
}

/// The writer's state: the journal and what it holds.
#[derive(Debug)]
struct State {
    /// `None` in the single-tree layout.
    journal: Option<Writer>,
    /// Per tree number, its size as the journal holds it.
    journaled: Vec<u64>,
    /// Trees whose size changed since the last block (the next block
    /// records their sizes; all of them after an open).
    dirty: BTreeSet<u32>,
    finalized: Option<(BlockId, Vec<u64>)>,
    blocks: Vec<BlockSizes>,
    failure: Option<String>,
}

#[derive(Debug)]
struct Writer {
    file: Box<dyn FsFile>,
    /// Where the frames begin (the header's end).
    start: u64,
    end: u64,
    seq: u64,
    prev: u32,
}

/// What the applier thread shares with the database: the trees whose
/// logs trail the journal, and the bound each may be flushed to.
#[derive(Debug, Default)]
struct Apply {
    /// Held shared while a tree's log catches up, exclusively by a
    /// rollback: a catch-up's bound is never one a rollback lowered.
    lock: RwLock<()>,
    work: Mutex<Work>,
    signal: Condvar,
}

#[derive(Debug, Default)]
struct Work {
    /// What the applier has yet to flush.
    bounds: std::collections::BTreeMap<u32, (Arc<Database>, u64)>,
    /// Per tree, the last bound handed over (durable in the journal): what
    /// a reader catches the tree up to ([`Forest::catch_up`]).
    handed: std::collections::BTreeMap<u32, (Arc<Database>, u64)>,
    /// The applier flushes nothing: trees catch up when read, at a
    /// checkpoint and at close ([`Forest::set_background_apply`]).
    manual: bool,
    stop: bool,
}

impl Apply {
    /// The applier thread: flushes each trailing tree to its bound, one
    /// group commit per tree covering every write handed over meanwhile.
    /// A failure is the tree's (its durable head reports it); the journal
    /// still holds the values, and open replays them.
    fn run(&self) {
        loop {
            {
                let mut work = self.work.lock();
                while work.bounds.is_empty() && !work.stop {
                    self.signal.wait(&mut work);
                }
                if work.stop {
                    return;
                }
            }
            // The bounds are taken under the shared lock: a rollback
            // between the wait and the flush has lowered them already.
            let _shared = self.lock.read();
            let bounds = std::mem::take(&mut self.work.lock().bounds);
            for (db, bound) in bounds.values() {
                let _ = db.flush_to(*bound);
            }
        }
    }

    /// Lowers every bound to what a rollback left (under the exclusive
    /// lock).
    fn lower(&self, number: u32, to: u64) {
        let mut work = self.work.lock();
        if let Some((_, bound)) = work.bounds.get_mut(&number) {
            *bound = (*bound).min(to);
        }
        if let Some((_, bound)) = work.handed.get_mut(&number) {
            *bound = (*bound).min(to);
        }
    }
}

/// A database directory of named trees (see the module doc).
#[derive(Debug)]
pub struct Forest {
    dir: PathBuf,
    fs: Arc<dyn Fs>,
    trees: RwLock<Vec<Tree>>,
    state: Mutex<State>,
    apply: Arc<Apply>,
    applier: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Drop for Forest {
    fn drop(&mut self) {
        self.stop_applier();
    }
}

impl Forest {
    /// Creates a database of several trees (none yet: see
    /// [`Forest::add_tree`]) in `dir`, created if missing; must be empty.
    pub fn create(dir: impl AsRef<Path>) -> Result<Forest> {
        Forest::create_in(Arc::new(StdFs), dir.as_ref())
    }

    /// [`Forest::create`] through a given file system.
    pub fn create_in(fs: Arc<dyn Fs>, dir: &Path) -> Result<Forest> {
        if !fs.exists(dir).map_err(|e| StoreError::io("stat", dir, e))? {
            fs.create_dir(dir)
                .map_err(|e| StoreError::io("mkdir", dir, e))?;
            if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                fs.sync_dir(parent)
                    .map_err(|e| StoreError::io("fsync", parent, e))?;
            }
        }
        let entries = fs
            .list_dir(dir)
            .map_err(|e| StoreError::io("list", dir, e))?;
        if !entries.is_empty() {
            return Err(StoreError::NotEmpty {
                path: dir.to_owned(),
            }
            .into());
        }
        fs.create_dir(&dir.join(TREES_DIR))
            .map_err(|e| StoreError::io("mkdir", dir, e))?;
        let header = Header {
            first_seq: 1,
            base: Vec::new(),
            finalized: None,
            blocks: Vec::new(),
        };
        write_journal(&*fs, dir, &header)?;
        write_manifest(&*fs, dir, &[])?;
        Forest::open_in(fs, dir)
    }

    /// Opens the database in `dir`: a directory of several trees, or one
    /// made before (a single tree, named [`DEFAULT_TREE`]).
    pub fn open(dir: impl AsRef<Path>) -> Result<Forest> {
        Forest::open_in(Arc::new(StdFs), dir.as_ref())
    }

    /// [`Forest::open`] through a given file system.
    pub fn open_in(fs: Arc<dyn Fs>, dir: &Path) -> Result<Forest> {
        let manifest_path = dir.join(MANIFEST);
        let exists = fs
            .exists(&manifest_path)
            .map_err(|e| StoreError::io("stat", &manifest_path, e))?;
        if !exists {
            // The layout before several trees: the directory is the tree.
            let db = Database::open_in(Arc::clone(&fs), dir, None)?;
            let trees = vec![Tree {
                name: DEFAULT_TREE.to_owned(),
                db: Arc::new(db),
                family: None,
            }];
            let state = State {
                journal: None,
                journaled: Vec::new(),
                dirty: BTreeSet::new(),
                finalized: None,
                blocks: Vec::new(),
                failure: None,
            };
            return Ok(Forest::assemble(fs, dir, trees, state));
        }
        let entries = manifest::decode(&read_all(&*fs, &manifest_path)?)?;
        let mut trees = Vec::with_capacity(entries.len());
        for entry in &entries {
            let tree_dir = dir.join(&entry.dir);
            let config = journaled_config(&*fs, &tree_dir)?;
            let db = Database::open_in(Arc::clone(&fs), &tree_dir, Some(config))?;
            trees.push(Tree {
                name: entry.full_name(),
                db: Arc::new(db),
                family: entry.family,
            });
        }
        let state = replay::recover(&*fs, dir, &trees)?;
        let forest = Forest::assemble(fs, dir, trees, state);
        forest.start_applier();
        Ok(forest)
    }

    fn assemble(fs: Arc<dyn Fs>, dir: &Path, trees: Vec<Tree>, state: State) -> Forest {
        Forest {
            dir: dir.to_owned(),
            fs,
            trees: RwLock::new(trees),
            state: Mutex::new(state),
            apply: Arc::new(Apply::default()),
            applier: Mutex::new(None),
        }
    }

    /// The database's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether writes go through the block journal (a database of several
    /// trees), or straight to its one tree (the layout before).
    pub fn is_journaled(&self) -> bool {
        self.state.lock().journal.is_some()
    }

    /// Every tree, in the order added.
    pub fn trees(&self) -> Vec<Tree> {
        self.trees.read().clone()
    }

    /// The names of the trees, in the order added.
    pub fn names(&self) -> Vec<String> {
        self.trees.read().iter().map(|t| t.name.clone()).collect()
    }

    /// The tree named `name`.
    pub fn tree(&self, name: &str) -> Result<Arc<Database>> {
        let trees = self.trees.read();
        trees
            .iter()
            .find(|t| t.name == name)
            .map(|t| Arc::clone(&t.db))
            .ok_or_else(|| unknown(name, &trees))
    }

    /// The tree a front end means by no name: [`DEFAULT_TREE`] if there is
    /// one, else the only tree.
    pub fn default_tree(&self) -> Result<Arc<Database>> {
        let trees = self.trees.read();
        if let Some(tree) = trees.iter().find(|t| t.name == DEFAULT_TREE) {
            return Ok(Arc::clone(&tree.db));
        }
        match trees.as_slice() {
            [only] => Ok(Arc::clone(&only.db)),
            _ => Err(unknown(DEFAULT_TREE, &trees)),
        }
    }

    /// Appends `values` to tree `name`, not as part of a block.
    pub fn append(&self, name: &str, values: &[Hash]) -> Result<Committed> {
        self.commit(None, &[(name, values)])
    }

    /// Writes one block: `parts` names trees (each once) and the values
    /// each gets, possibly none (the tree still records its size at the
    /// block). Durable when it returns, in every tree or (after a crash)
    /// in none; refused whole (a duplicate, a value a tree refuses, a
    /// block number not above the last) with nothing written.
    pub fn commit_block(&self, block: BlockId, parts: &[(&str, &[Hash])]) -> Result<Committed> {
        self.commit(Some(block), parts)
    }

    /// Writes several blocks, oldest first, with one `fdatasync` for all
    /// of them (a chain follower catching up): each block is one journal
    /// frame, in every tree or (after a crash) in none, and a crash keeps
    /// a prefix of the blocks. A block refused (as by
    /// [`Forest::commit_block`]) is refused whole with nothing of it
    /// written; the blocks before it are durable when the error returns.
    pub fn commit_blocks(&self, blocks: &[BlockParts<'_>]) -> Result<Vec<Committed>> {
        let mut state = self.state.lock();
        let mut done = Vec::with_capacity(blocks.len());
        let mut touched = BTreeSet::new();
        let mut refused = None;
        for (block, parts) in blocks {
            match self.commit_locked(&mut state, Some(*block), parts, false) {
                Ok((committed, trees)) => {
                    touched.extend(trees);
                    done.push(committed);
                }
                Err(error) => {
                    refused = Some(error);
                    break;
                }
            }
        }
        if state.journal.is_some() && !done.is_empty() {
            self.sync(&mut state)?;
            self.settle(&mut state, touched.into_iter())?;
        }
        match refused {
            Some(error) => Err(error),
            None => Ok(done),
        }
    }

    fn commit(&self, block: Option<BlockId>, parts: &[(&str, &[Hash])]) -> Result<Committed> {
        let mut state = self.state.lock();
        let (committed, trees) = self.commit_locked(&mut state, block, parts, true)?;
        if state.journal.is_some() {
            self.settle(&mut state, trees.into_iter())?;
        }
        Ok(committed)
    }

    /// After frames are durable: the journal trimmed when it grew past
    /// [`JOURNAL_TRIM_BYTES`], else the trees written handed to the
    /// applier.
    fn settle(&self, state: &mut State, trees: impl Iterator<Item = u32>) -> Result<()> {
        let trim = state
            .journal
            .as_ref()
            .is_some_and(|w| w.end > JOURNAL_TRIM_BYTES);
        if trim {
            self.trim(state)
        } else {
            self.wake_applier(state, trees);
            Ok(())
        }
    }

    /// One write's frame (synced when `sync`; else the caller syncs before
    /// anything reads it as durable) and the trees it wrote.
    fn commit_locked(
        &self,
        state: &mut State,
        block: Option<BlockId>,
        parts: &[(&str, &[Hash])],
        sync: bool,
    ) -> Result<(Committed, Vec<u32>)> {
        check_failure(state)?;
        if let (Some(block), Some(last)) = (block, last_block(state))
            && block.number <= last
        {
            return Err(ForestError::BlockOrder {
                block: block.number,
                last,
            }
            .into());
        }
        if state.journal.is_none() {
            self.numbers(parts)?;
            return Ok((self.commit_single(block, parts)?, Vec::new()));
        }
        // Names resolved to trees, a family's values split across its
        // members (new members made now), strict families checked whole.
        let planned = self.plan(state, parts)?;
        let numbers: Vec<usize> = planned.iter().map(|p| p.number).collect();
        let trees = self.trees.read().clone();
        // In memory first (each tree checks its values), undone on refusal.
        let mut done: Vec<(usize, u64)> = Vec::with_capacity(parts.len());
        let mut record_parts = Vec::with_capacity(parts.len());
        let mut out = Vec::with_capacity(parts.len());
        for part in &planned {
            let (number, values) = (part.number, &part.values[..]);
            let name = trees[number].name.as_str();
            let db = &trees[number].db;
            let before = db.size();
            if !values.is_empty()
                && let Err(error) = append_now(db, values, state.journaled[number])
            {
                for &(undo, size) in done.iter().rev() {
                    if let Err(failure) = trees[undo].db.truncate(size) {
                        state.failure = Some(failure.to_string());
                    }
                }
                return Err(error);
            }
            done.push((number, before));
            record_parts.push(Part {
                tree: number as u32,
                before,
                values: values.to_vec(),
            });
            out.push(TreeAt {
                tree: name.to_owned(),
                first: before,
                count: values.len() as u64,
                size: before + values.len() as u64,
            });
        }
        if block.is_some() {
            // Trees changed since the last block record their sizes too.
            for &number in &state.dirty {
                if !numbers.contains(&(number as usize)) {
                    record_parts.push(Part {
                        tree: number,
                        before: state.journaled[number as usize],
                        values: Vec::new(),
                    });
                }
            }
        }
        let record = Record::Append {
            block,
            parts: record_parts,
        };
        self.write_frame(state, &record, sync)?;
        let Record::Append { parts, .. } = record else {
            unreachable!()
        };
        for part in &parts {
            state.journaled[part.tree as usize] = part.before + part.values.len() as u64;
        }
        match block {
            Some(block) => {
                state.blocks.push(BlockSizes {
                    block,
                    sizes: parts
                        .iter()
                        .map(|p| (p.tree, p.before + p.values.len() as u64))
                        .collect(),
                });
                state.dirty.clear();
            }
            None => state.dirty.extend(parts.iter().map(|p| p.tree)),
        }
        let trees = parts.iter().map(|p| p.tree).collect();
        Ok((Committed { block, trees: out }, trees))
    }

    /// A block in the single-tree layout: the tree's own tagged append.
    fn commit_single(
        &self,
        block: Option<BlockId>,
        parts: &[(&str, &[Hash])],
    ) -> Result<Committed> {
        let db = self.default_tree()?;
        let [(name, values)] = parts else {
            return Err(ForestError::SingleTree.into());
        };
        let ack = match block {
            Some(block) => db.append_tagged(
                values,
                BlockTag {
                    number: block.number,
                    hash: Some(block.hash),
                },
            )?,
            None => db.append(values)?,
        };
        let acked = ack.wait(&db, WAIT)?;
        Ok(Committed {
            block,
            trees: vec![TreeAt {
                tree: (*name).to_owned(),
                first: acked.first,
                count: acked.count,
                size: acked.size,
            }],
        })
    }

    /// The tree numbers of `parts`' names, each named once.
    fn numbers(&self, parts: &[(&str, &[Hash])]) -> Result<Vec<usize>> {
        let trees = self.trees.read();
        let mut numbers = Vec::with_capacity(parts.len());
        for (name, _) in parts {
            let number = trees
                .iter()
                .position(|t| t.name == *name)
                .ok_or_else(|| unknown(name, &trees))?;
            if numbers.contains(&number) {
                return Err(ForestError::TreeTwice {
                    name: (*name).to_owned(),
                }
                .into());
            }
            numbers.push(number);
        }
        Ok(numbers)
    }

    /// Writes `record` as the next frame and syncs it: the commit point.
    fn write(&self, state: &mut State, record: &Record) -> Result<()> {
        self.write_frame(state, record, true)
    }

    /// Writes `record` as the next frame, synced when `sync` (the commit
    /// point); a frame written unsynced is made durable by [`Forest::sync`]
    /// before the write returns to its caller.
    fn write_frame(&self, state: &mut State, record: &Record, sync: bool) -> Result<()> {
        let writer = state.journal.as_mut().expect("journaled");
        let (frame, crc) = journal::encode_frame(writer.seq, writer.prev, record);
        let path = self.dir.join(JOURNAL);
        let result = writer.file.write_at(&frame, writer.end).and_then(|()| {
            if sync {
                writer.file.sync_data()
            } else {
                Ok(())
            }
        });
        match result {
            Ok(()) => {
                writer.end += frame.len() as u64;
                writer.seq += 1;
                writer.prev = crc;
                Ok(())
            }
            Err(e) => {
                let error = StoreError::io("write", &path, e);
                state.failure = Some(error.to_string());
                Err(error.into())
            }
        }
    }

    /// Syncs the frames written unsynced: the commit point of them all.
    fn sync(&self, state: &mut State) -> Result<()> {
        let writer = state.journal.as_mut().expect("journaled");
        if let Err(e) = writer.file.sync_data() {
            let error = StoreError::io("fsync", self.dir.join(JOURNAL), e);
            state.failure = Some(error.to_string());
            return Err(error.into());
        }
        Ok(())
    }

    /// The last block written, if any.
    pub fn last_block(&self) -> Option<u64> {
        let state = self.state.lock();
        if state.journal.is_none() {
            return self
                .default_tree()
                .ok()?
                .heads(0, usize::MAX)
                .ok()?
                .last()
                .map(|h| h.block);
        }
        last_block(&state)
    }

    /// The blocks a rollback or [`Forest::heads_at`] can still reach, oldest
    /// first: the finalized one and every one after it (journaled
    /// databases; the single-tree layout's tagged blocks otherwise).
    pub fn blocks(&self) -> Vec<BlockId> {
        let state = self.state.lock();
        if state.journal.is_none() {
            return self
                .default_tree()
                .and_then(|db| db.heads(0, usize::MAX))
                .map(|heads| {
                    heads
                        .iter()
                        .map(|h| BlockId {
                            number: h.block,
                            hash: h.block_hash.unwrap_or([0; 32]),
                        })
                        .collect()
                })
                .unwrap_or_default();
        }
        state
            .finalized
            .iter()
            .map(|(block, _)| *block)
            .chain(state.blocks.iter().map(|b| b.block))
            .collect()
    }

    /// The last finalized block, if any (journaled databases).
    pub fn finalized_block(&self) -> Option<u64> {
        self.state.lock().finalized.as_ref().map(|(b, _)| b.number)
    }

    /// Rolls every tree back to its size at the end of the last block at
    /// or below `block`: all or nothing (refused whole below a tree's
    /// finalized size), one journal frame. Returns every tree's size.
    pub fn truncate_to_block(&self, block: u64) -> Result<Vec<TreeAt>> {
        let mut state = self.state.lock();
        check_failure(&state)?;
        if state.journal.is_none() {
            let db = self.default_tree()?;
            let head = db.truncate_to_block(block)?;
            return Ok(vec![TreeAt {
                tree: DEFAULT_TREE.to_owned(),
                first: head.size,
                count: 0,
                size: head.size,
            }]);
        }
        let trees = self.trees.read().clone();
        let targets = self.sizes_at(&state, block, trees.len())?;
        for (tree, &to) in trees.iter().zip(&targets) {
            let finalized = tree.db.finalized_size();
            if to < finalized {
                return Err(ForestError::BelowFinalized {
                    block,
                    tree: tree.name.clone(),
                    to,
                    finalized,
                }
                .into());
            }
        }
        self.write(&mut state, &Record::Rollback { block })?;
        {
            let _exclusive = self.apply.lock.write();
            for (number, (tree, &to)) in trees.iter().zip(&targets).enumerate() {
                // The frame is the commit point: each tree rolls back in
                // memory, its files at its next write (open replays the
                // frame into a tree a crash left before it).
                if (state.journaled[number] > to || tree.db.size() > to)
                    && let Err(error) = tree.db.truncate_deferred(to)
                {
                    state.failure = Some(error.to_string());
                    return Err(error);
                }
                state.journaled[number] = to;
                self.apply.lower(number as u32, to);
            }
        }
        state.blocks.retain(|b| b.block.number <= block);
        state.dirty.clear();
        Ok(trees
            .iter()
            .zip(&targets)
            .map(|(tree, &size)| TreeAt {
                tree: tree.name.clone(),
                first: size,
                count: 0,
                size,
            })
            .collect())
    }

    /// Makes every tree final up to its size at the end of the last block
    /// at or below `block`: no rollback below it. One journal frame; the
    /// trees' own finalized sizes follow at the next trim.
    pub fn finalize_to_block(&self, block: u64) -> Result<u64> {
        let mut state = self.state.lock();
        check_failure(&state)?;
        if state.journal.is_none() {
            return self.default_tree()?.finalize_to_block(block);
        }
        let count = self.trees.read().len();
        let sizes = self.sizes_at(&state, block, count)?;
        let Some(at) = block_at(&state, block) else {
            // At the finalized block already.
            return Ok(block);
        };
        self.write(&mut state, &Record::Finalize { block })?;
        state.blocks.retain(|b| b.block.number > at.number);
        state.finalized = Some((at, sizes));
        Ok(at.number)
    }

    /// Every tree's size at the end of the last block at or below `block`.
    fn sizes_at(&self, state: &State, block: u64, count: usize) -> Result<Vec<u64>> {
        replay::sizes_at(
            &state.finalized,
            &state.blocks,
            block,
            &self.empty_sizes(count),
        )
    }

    fn empty_sizes(&self, count: usize) -> Vec<u64> {
        self.trees
            .read()
            .iter()
            .take(count)
            .map(|t| empty_size(t.db.kind()))
            .collect()
    }

    /// Every tree's (size, root) at the end of the last block at or below
    /// `block` (the root where the tree can say: an indexed tree only at
    /// its current size).
    pub fn heads_at(&self, block: u64) -> Result<Vec<(String, u64, Option<Hash>)>> {
        let state = self.state.lock();
        let trees = self.trees.read().clone();
        let sizes = if state.journal.is_none() {
            let head = self.default_tree()?.heads(0, usize::MAX)?;
            let found =
                head.iter()
                    .rev()
                    .find(|h| h.block <= block)
                    .ok_or(ForestError::NoBlock {
                        block,
                        finalized: None,
                    })?;
            vec![found.size]
        } else {
            self.sizes_at(&state, block, trees.len())?
        };
        let journaled = state.journaled.clone();
        drop(state);
        trees
            .iter()
            .zip(sizes)
            .enumerate()
            .map(|(number, (tree, size))| {
                if let Some(&bound) = journaled.get(number) {
                    let _shared = self.apply.lock.read();
                    tree.db.flush_to(bound)?;
                }
                let root = tree.db.head_at(size).ok().and_then(|h| h.root);
                Ok((tree.name.clone(), size, root))
            })
            .collect()
    }

    /// Whether the trees' logs catch up with the journal in the background
    /// (the default: one group commit per tree shortly after each write),
    /// or only when a reader asks ([`Forest::catch_up`], [`Forest::apply`]),
    /// at a checkpoint and at close. Either way a write is durable once
    /// its journal frame is, and costs that one `fdatasync`.
    pub fn set_background_apply(&self, background: bool) {
        let mut work = self.apply.work.lock();
        work.manual = !background;
        if work.manual {
            work.bounds.clear();
        }
    }

    /// Makes tree `name`'s log hold every write the journal made durable
    /// before this call (nothing to do, and no I/O, if it holds them
    /// already): afterwards its durable head, which its readers serve,
    /// holds them. What a server does before it reads a tree, so that a
    /// write answered once its journal frame was durable is read back.
    pub fn catch_up(&self, name: &str) -> Result<()> {
        let number = {
            let trees = self.trees.read();
            trees
                .iter()
                .position(|t| t.name == name)
                .ok_or_else(|| unknown(name, &trees))?
        };
        // Under the shared lock: a rollback has lowered the bound already,
        // or waits until this flush is done.
        let _shared = self.apply.lock.read();
        let handed = self.apply.work.lock().handed.get(&(number as u32)).cloned();
        if let Some((db, bound)) = handed
            && db.durable_size() < bound
        {
            db.flush_to(bound)?;
        }
        Ok(())
    }

    /// Whether tree `name`'s log trails what the journal made durable
    /// ([`Forest::catch_up`] would write): a cheap check, without I/O.
    pub fn trails(&self, name: &str) -> bool {
        let Some(number) = self.trees.read().iter().position(|t| t.name == name) else {
            return false;
        };
        let work = self.apply.work.lock();
        work.handed
            .get(&(number as u32))
            .is_some_and(|(db, bound)| db.durable_size() < *bound)
    }

    /// The head of tree `name` at `size`, for the answer to a write that
    /// just made it durable in the journal: from the tree's memory when
    /// it can say (an append-only tree: no I/O), else once the tree has
    /// caught up ([`Forest::catch_up`]).
    pub fn head_after(&self, name: &str, size: u64) -> Result<cairn_core::TreeHead> {
        let db = self.tree(name)?;
        if let Some(head) = db.accepted_head_at(size) {
            return Ok(head);
        }
        self.catch_up(name)?;
        db.head_at(size)
    }

    /// Makes every tree's log catch up with the journal now (the applier
    /// does it in the background): afterwards every tree's durable head
    /// holds every write made before.
    pub fn apply(&self) -> Result<()> {
        let journaled = self.state.lock().journaled.clone();
        let trees = self.trees.read().clone();
        let _shared = self.apply.lock.read();
        for (tree, bound) in trees.iter().zip(journaled) {
            tree.db.flush_to(bound)?;
        }
        Ok(())
    }

    /// Makes every tree durable in its own files, applies finality to
    /// them, and rewrites the journal to hold nothing else (what open
    /// then replays).
    pub fn checkpoint(&self) -> Result<()> {
        let mut state = self.state.lock();
        check_failure(&state)?;
        if state.journal.is_none() {
            self.default_tree()?.checkpoint()?;
            return Ok(());
        }
        self.trim(&mut state)
    }

    fn trim(&self, state: &mut State) -> Result<()> {
        let writer = state.journal.as_ref().expect("journaled");
        if writer.end == writer.start {
            // No frame since the header: every tree holds what it says.
            return Ok(());
        }
        let trees = self.trees.read().clone();
        for (number, (tree, &bound)) in trees.iter().zip(&state.journaled).enumerate() {
            // A rollback the journal holds reaches the tree's files before
            // the journal forgets it.
            tree.db.settle_rollback()?;
            let final_size = state
                .finalized
                .as_ref()
                .and_then(|(_, sizes)| sizes.get(number).copied())
                .filter(|&size| size > tree.db.finalized_size());
            let stats = tree.db.stats().store;
            if tree.db.durable_size() == bound
                && stats.checkpoint_size == stats.size
                && final_size.is_none()
            {
                // Durable and checkpointed as it is: nothing to do.
                continue;
            }
            tree.db.flush_to(bound)?;
            if let Some(size) = final_size {
                tree.db.finalize(size)?;
            }
            tree.db.checkpoint()?;
        }
        let seq = state.journal.as_ref().expect("journaled").seq;
        let header = Header {
            first_seq: seq,
            base: state.journaled.clone(),
            finalized: state.finalized.clone(),
            blocks: state.blocks.clone(),
        };
        write_journal(&*self.fs, &self.dir, &header)?;
        state.journal = Some(open_writer(&*self.fs, &self.dir)?);
        Ok(())
    }

    fn start_applier(&self) {
        let mut applier = self.applier.lock();
        if applier.is_some() {
            return;
        }
        let apply = Arc::clone(&self.apply);
        *applier = Some(
            std::thread::Builder::new()
                .name("cairn-apply".into())
                .spawn(move || apply.run())
                .expect("spawn the applier"),
        );
    }

    /// Hands the trees `numbers` named (at their journaled sizes) to the
    /// applier.
    fn wake_applier(&self, state: &State, numbers: impl Iterator<Item = u32>) {
        let trees = self.trees.read();
        let mut work = self.apply.work.lock();
        for number in numbers {
            let index = number as usize;
            let bound = (Arc::clone(&trees[index].db), state.journaled[index]);
            if !work.manual {
                work.bounds.insert(number, bound.clone());
            }
            work.handed.insert(number, bound);
        }
        drop(work);
        self.apply.signal.notify_one();
    }

    fn stop_applier(&self) {
        self.apply.work.lock().stop = true;
        self.apply.signal.notify_all();
        if let Some(thread) = self.applier.lock().take() {
            let _ = thread.join();
        }
    }

    /// Makes everything durable in the trees' own files, rewrites the
    /// journal, and releases the directory.
    pub fn close(self) -> Result<()> {
        self.stop_applier();
        {
            let mut state = self.state.lock();
            if state.journal.is_some() && state.failure.is_none() {
                self.trim(&mut state)?;
            }
        }
        let trees = std::mem::take(&mut *self.trees.write());
        let mut first = Ok(());
        for tree in trees {
            // A tree still held by a caller closes when its last holder
            // drops it.
            if let Ok(db) = Arc::try_unwrap(tree.db)
                && let Err(error) = db.close()
                && first.is_ok()
            {
                first = Err(error);
            }
        }
        first
    }
}

/// A tree's size before any value: an indexed tree holds its guard.
pub(crate) fn empty_size(kind: TreeKind) -> u64 {
    u64::from(kind == TreeKind::Indexed)
}

/// Appends `values` to `db` now: a value that repeats one not yet durable
/// in the tree (but journaled, so durable for the database) is refused
/// once the tree's log holds it.
fn append_now(db: &Database, values: &[Hash], journaled: u64) -> Result<()> {
    let ack = db.append(values)?;
    if ack.appended().is_some() {
        return Ok(());
    }
    db.flush_to(journaled)?;
    let ack = db.append(values)?;
    match ack.appended() {
        Some(_) => Ok(()),
        None => unreachable!("a tree whose log holds every journaled value waits for none"),
    }
}

fn unknown(name: &str, trees: &[Tree]) -> DbError {
    ForestError::UnknownTree {
        name: name.to_owned(),
        known: trees
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    }
    .into()
}

fn check_failure(state: &State) -> Result<()> {
    match &state.failure {
        Some(cause) => Err(ForestError::Poisoned {
            cause: cause.clone(),
        }
        .into()),
        None => Ok(()),
    }
}

fn last_block(state: &State) -> Option<u64> {
    state
        .blocks
        .last()
        .map(|b| b.block.number)
        .or(state.finalized.as_ref().map(|(b, _)| b.number))
}

/// The last retained block at or below `block`.
fn block_at(state: &State, block: u64) -> Option<BlockId> {
    state
        .blocks
        .iter()
        .rev()
        .find(|b| b.block.number <= block)
        .map(|b| b.block)
}
