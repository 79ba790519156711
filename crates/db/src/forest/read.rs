//! Reading the trees of a database without writing to it or locking it:
//! what the read-only commands and a read-only server open.
//!
//! A tree's own files trail the block journal: the writer journals a
//! block (one `fdatasync`) and its trees' logs catch up behind, and a
//! rollback reaches a tree's files only at its next write. So a tree read
//! from its files alone may lack the last blocks (after a crash, until a
//! writer opens; beside a writer, for the catch-up's latency) or still
//! hold leaves a rollback removed. A reader therefore reads the journal
//! too: a tree whose files hold what the journal says it must is read
//! from them as they are; otherwise the writer's own recovery
//! ([`super::replay`]) runs over an in-memory overlay of the directory
//! ([`cairn_store::fs::OverlayFs`]), which brings every tree to the
//! journal in memory and leaves the directory untouched, and the trees
//! are read from that overlay.
//!
//! Invariant: a reader never answers from a tree state the journal does
//! not hold at the moment it read the journal (trees are opened before
//! the journal is read, and a tree's log never passes the journal).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairn_core::Snapshot;
use cairn_store::fs::{Fs, OverlayFs};
use cairn_store::{StdFs, StoreError};

use super::manifest::{self, MANIFEST};
use super::{DEFAULT_TREE, Forest, empty_size, read_all, replay};
use crate::database::Database;
use crate::error::{DbError, Result};
use crate::open::OpenOptions;

/// How many times a read starts again when the manifest changed under it
/// (a writer adding a tree journals it before the manifest names it).
const RETRIES: usize = 3;

/// How many times a read starts again when a tree's files changed under
/// it ([`raced`]), 10 ms apart: a writer making many trees' first files
/// at once can meet each attempt with another.
const RACE_RETRIES: usize = 50;

/// A tree opened to read.
#[derive(Debug)]
pub struct ReadTree {
    /// Its name.
    pub name: String,
    /// Its directory.
    pub dir: PathBuf,
    /// The file system it was opened through: the real one, or the
    /// overlay on which the journal was replayed (read the tree's other
    /// files through it).
    pub fs: Arc<dyn Fs>,
    /// The tree, opened read-only with the options given.
    pub db: Database,
    /// Whether the tree's files did not hold what the journal says (a
    /// crash before its catch-up, a writer's catch-up or rollback not
    /// applied yet), so that it was read from the journal's replay in
    /// memory.
    pub replayed: bool,
}

impl ReadTree {
    /// The values appended to the tree, in order, as the leaves of a tree
    /// (see [`Database::read_values`]).
    pub fn values(&self) -> Result<Arc<Snapshot>> {
        crate::open::read_log_in(Arc::clone(&self.fs), &self.dir)
    }
}

/// Opens tree `name` of the database in `dir` to read (no name: the
/// default tree, or the only one), as the journal says it is; `options`
/// are used read-only.
pub fn open_tree(
    dir: impl AsRef<Path>,
    name: Option<&str>,
    options: OpenOptions,
) -> Result<ReadTree> {
    let dir = dir.as_ref();
    let wanted = name.unwrap_or(DEFAULT_TREE);
    let wanted = wanted.strip_suffix("/0").unwrap_or(wanted);
    let mut trees = open_trees_where(dir, options, &|tree, all| {
        tree == wanted || (name.is_none() && all == 1)
    })?;
    match trees.pop() {
        Some(tree) => Ok(tree),
        None => Err(super::ForestError::UnknownTree {
            name: wanted.to_owned(),
            known: super::tree_dirs(dir)?
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        }
        .into()),
    }
}

/// Opens every tree of the database in `dir` to read, in the manifest's
/// order (see [`open_tree`]).
pub fn open_trees(dir: impl AsRef<Path>, options: OpenOptions) -> Result<Vec<ReadTree>> {
    open_trees_where(dir.as_ref(), options, &|_, _| true)
}

fn open_trees_where(
    dir: &Path,
    options: OpenOptions,
    wanted: &dyn Fn(&str, usize) -> bool,
) -> Result<Vec<ReadTree>> {
    let options = options.read_only(true);
    let manifest_path = dir.join(MANIFEST);
    if !super::is_forest(dir) {
        let (name, tree_dir) = super::tree_dirs(dir)?.remove(0);
        if !wanted(&name, 1) {
            return Ok(Vec::new());
        }
        let fs: Arc<dyn Fs> = Arc::new(StdFs);
        let db = options.open_in(Arc::clone(&fs), &tree_dir)?;
        return Ok(vec![ReadTree {
            name,
            dir: tree_dir,
            fs,
            db,
            replayed: false,
        }]);
    }
    let mut attempt = 0;
    loop {
        attempt += 1;
        let bytes = read_all(&StdFs, &manifest_path)?;
        match read_journaled(dir, &bytes, options, wanted) {
            Ok(trees) => return Ok(trees),
            Err(error) => {
                let moved = read_all(&StdFs, &manifest_path)? != bytes;
                let raced = raced(&error);
                let most = if raced { RACE_RETRIES } else { RETRIES };
                if !(moved || raced) || attempt >= most {
                    return Err(error);
                }
                if raced {
                    // Let the writer finish making what this read met.
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
            }
        }
    }
}

/// Whether `error` is what a read racing the writer meets: a file the
/// writer made or removed between this open's look at a tree and its use
/// of what it saw (a tree's first files made by the writer's catch-up
/// while the replay in memory makes them too; a log file a checkpoint
/// removed). A directory nobody writes gives neither twice in a row, so
/// a retry tells a race from damage.
fn raced(error: &DbError) -> bool {
    matches!(
        error,
        DbError::Store(StoreError::Io { kind, .. })
            if matches!(kind, std::io::ErrorKind::AlreadyExists | std::io::ErrorKind::NotFound)
    )
}

/// [`open_trees_where`] for a journaled database whose manifest is
/// `manifest`.
fn read_journaled(
    dir: &Path,
    manifest: &[u8],
    options: OpenOptions,
    wanted: &dyn Fn(&str, usize) -> bool,
) -> Result<Vec<ReadTree>> {
    let entries = manifest::decode(manifest)?;
    let real: Arc<dyn Fs> = Arc::new(StdFs);
    let mut empty = Vec::with_capacity(entries.len());
    let mut chosen = Vec::new();
    for (number, entry) in entries.iter().enumerate() {
        let tree_dir = dir.join(&entry.dir);
        let kind = crate::db::resolve_config(&*real, &tree_dir, None)?
            .tree()
            .kind;
        empty.push(empty_size(kind));
        let name = entry.full_name();
        if wanted(&name, entries.len()) {
            chosen.push((number, name, tree_dir));
        }
    }
    // Trees first, then the journal: what a tree's files hold was in the
    // journal before it was read.
    let mut opened = Vec::with_capacity(chosen.len());
    for (number, name, tree_dir) in &chosen {
        let db = options.open_in(Arc::clone(&real), tree_dir)?;
        opened.push((*number, name.clone(), tree_dir.clone(), db));
    }
    let plan = replay::plan(&*real, dir, &empty)?;
    let settled = opened
        .iter()
        .all(|(number, _, _, db)| settled(&plan, *number, db));
    if settled {
        return Ok(opened
            .into_iter()
            .map(|(_, name, dir, db)| ReadTree {
                name,
                dir,
                fs: Arc::clone(&real),
                db,
                replayed: false,
            })
            .collect());
    }
    drop(opened);
    // The writer's recovery, in memory.
    let overlay: Arc<dyn Fs> = Arc::new(OverlayFs::new(Arc::clone(&real)));
    // Open replays the journal into every tree and waits until each tree
    // holds it (in the overlay's files); nothing else is wanted of it.
    drop(Forest::open_in(Arc::clone(&overlay), dir)?);
    chosen
        .into_iter()
        .map(|(_, name, tree_dir)| {
            let db = options.open_in(Arc::clone(&overlay), &tree_dir)?;
            Ok(ReadTree {
                name,
                dir: tree_dir,
                fs: Arc::clone(&overlay),
                db,
                replayed: true,
            })
        })
        .collect()
}

/// Whether `db`, tree `number`, holds what the journal says: its size,
/// and, where a rollback frame took it below that since the journal's
/// header, the journal's values from there on (a tree's files settle a
/// rollback at its next write, so a tree that grew again after one holds
/// them; one that did not, or an indexed tree, whose leaves are not read
/// here, is replayed).
fn settled(plan: &replay::Plan, number: usize, db: &Database) -> bool {
    let held = db.durable_size();
    if plan.settled(number, held) {
        return true;
    }
    let (Some(&size), Some(Some(floor))) = (plan.sizes.get(number), plan.floors.get(number)) else {
        return false;
    };
    let (start, values) = &plan.values[number];
    if size != held || db.kind() == cairn_core::TreeKind::Indexed || *floor < *start {
        return false;
    }
    let from = usize::try_from(floor - start).expect("64-bit");
    db.leaves(*floor, Some(held))
        .is_ok_and(|leaves| values.get(from..) == Some(&leaves[..]))
}
