//! Publishing, mirroring and backing up a database of several trees
//! (docs/spec.md, "Tiles of a database of several trees"): every tree's
//! tiles under `trees/NAME/` and one forest checkpoint at one block; a
//! mirror that verifies every tree against it and adopts the whole
//! checkpoint in one block of its own (one journal frame, so after a crash
//! all of it or none); a backup of the manifest, journal and every tree at
//! one write.

use std::path::Path;
use std::sync::Arc;

use anyhow::anyhow;
use cairn_core::{Hash, TreeHead};
use cairn_db::{BlockId, DbConfig, Forest};
use cairn_note::{Signer, Verifier};
use cairn_tiles::{
    Checkpoint, ForestEntries, ForestEntry, ForestHead, ForestReadError, MirrorError, NotAPrefix,
    Prefixed, PublishOptions, Published, TileSink, TileSource, TilesUpstream, Unsigned, Upstream,
    publish_with, read_forest, tree_prefix, verify_leaves, write_forest,
};

use crate::database;
use crate::failure::{Code, Failure};

/// What a forest publication wrote.
pub(crate) struct ForestPublished {
    /// The block published.
    pub(crate) block: BlockId,
    /// The head (root of roots).
    pub(crate) head: ForestHead,
    /// Every tree's entry.
    pub(crate) entries: ForestEntries,
    /// Objects and bytes written, over every tree and the checkpoint.
    pub(crate) objects: u64,
    /// Bytes written.
    pub(crate) bytes: u64,
    /// Tiles found already published.
    pub(crate) skipped: u64,
}

/// The block a forest is published at: the last one, or the finalized one.
fn block_of(forest: &Forest, finalized: bool, dir: &Path) -> Result<BlockId, Failure> {
    let number = if finalized {
        forest.finalized_block()
    } else {
        forest.last_block()
    };
    let number = number.ok_or_else(|| {
        Failure::new(
            Code::Usage,
            anyhow!(
                "{} has no {}block: a database of several trees is published at a block, which names every tree's head (write one with `cairn ingest --block`)",
                dir.display(),
                if finalized { "finalized " } else { "" }
            ),
        )
    })?;
    forest
        .blocks()
        .into_iter()
        .find(|b| b.number == number)
        .ok_or_else(|| {
            Failure::new(
                Code::Input,
                anyhow!("block {number} is not among the blocks the database holds"),
            )
        })
}

/// Every tree's entry at `block`.
fn entries_at(forest: &Forest, block: u64) -> Result<Vec<ForestEntry>, Failure> {
    let heads = forest.heads_at(block).map_err(database::db_failure)?;
    heads
        .into_iter()
        .map(|(name, size, root)| {
            let db = forest.tree(&name).map_err(database::db_failure)?;
            let tree = Checkpoint::tree_of(&db.tree_config());
            if root.is_none() && (size > 0 || tree.empty_has_root()) {
                return Err(Failure::new(
                    Code::Usage,
                    anyhow!(
                        "tree {name} ({}) changed after block {block}: its root at that block is not known (an indexed tree's root is known at its current size only); write a block first",
                        tree.kind.name()
                    ),
                ));
            }
            Ok(ForestEntry {
                name,
                tree,
                head: TreeHead { size, root },
            })
        })
        .collect()
}

/// A publication's error as a failure: the store's own state refused is a
/// usage error (2), the rest I/O (4).
pub(crate) fn publish_failure(location: &str, error: cairn_tiles::PublishError) -> Failure {
    match error {
        cairn_tiles::PublishError::Foreign(why) => {
            Failure::new(Code::Usage, anyhow!("{location}: {why}"))
        }
        error @ cairn_tiles::PublishError::WouldUnsign { .. } => Failure::new(
            Code::Usage,
            anyhow!("{location}: {error} (--sign-key FILE, or `cairn sign-key DIR FILE`)"),
        ),
        error @ cairn_tiles::PublishError::Indexed => Failure::new(Code::Usage, error),
        error => Failure::new(Code::Input, error),
    }
}

/// Publishes every tree of the forest in `dir` at its last (or finalized)
/// block under `trees/NAME/` of `to`, then the forest checkpoint. Before
/// the first checkpoint is written the block is made final, so no rollback
/// contradicts the store.
pub(crate) fn publish_forest(
    dir: &Path,
    to: &dyn TileSink,
    signer: Option<&Signer>,
    finalized: bool,
) -> Result<ForestPublished, Failure> {
    let forest = Forest::open(dir).map_err(database::db_failure)?;
    let result = publish_open(&forest, dir, to, signer, finalized);
    forest.close().map_err(database::db_failure)?;
    result
}

/// What runs before a checkpoint is written: makes `block` final (unless
/// the finalized block is what is published), so that no rollback can
/// contradict a published store.
fn pin_block(
    forest: &Forest,
    block: u64,
    finalized: bool,
) -> impl Fn(&TreeHead) -> Result<(), cairn_tiles::PinError> + '_ {
    move |_| {
        if !finalized {
            forest
                .finalize_to_block(block)
                .map_err(|e| format!("making block {block} final before publishing it: {e}"))?;
        }
        Ok(())
    }
}

fn publish_open(
    forest: &Forest,
    dir: &Path,
    to: &dyn TileSink,
    signer: Option<&Signer>,
    finalized: bool,
) -> Result<ForestPublished, Failure> {
    let block = block_of(forest, finalized, dir)?;
    let entries = ForestEntries::new(entries_at(forest, block.number)?)
        .map_err(|e| Failure::new(Code::Usage, anyhow!("{}: {e}", dir.display())))?;
    let pin = pin_block(forest, block.number, finalized);
    let options = PublishOptions {
        signer,
        before_checkpoint: Some(&pin),
    };
    let mut done = Published::default();
    for entry in entries.entries() {
        if !entry.tree.kind.is_append_only() {
            // Its head is in the forest checkpoint; it has no tiles.
            continue;
        }
        let db = forest.tree(&entry.name).map_err(database::db_failure)?;
        let snapshot = db.tree_snapshot().map_err(database::db_failure)?;
        let sink = Prefixed::new(to, tree_prefix(&entry.name));
        let published = publish_with(&snapshot, entry.head.size, &sink, &options)
            .map_err(|e| publish_failure(&sink.location(), e))?;
        done.objects += published.objects;
        done.bytes += published.bytes;
        done.skipped += published.skipped;
    }
    pin(&TreeHead::EMPTY).map_err(|e| Failure::new(Code::Input, anyhow!("{e}")))?;
    let head = ForestHead::of(&entries, block.number, block.hash);
    let bytes =
        write_forest(to, &entries, &head, signer).map_err(|e| Failure::new(Code::Input, e))?;
    Ok(ForestPublished {
        block,
        head,
        entries,
        objects: done.objects + 2,
        bytes: done.bytes + bytes,
        skipped: done.skipped,
    })
}

/// Publishes tree `name` of the forest in `dir` as an ordinary single-tree
/// store at `to` (its head at the last or finalized block).
pub(crate) fn publish_one_tree(
    dir: &Path,
    name: &str,
    to: &dyn TileSink,
    signer: Option<&Signer>,
    finalized: bool,
) -> Result<(Published, TreeHead), Failure> {
    let forest = Forest::open(dir).map_err(database::db_failure)?;
    let result = (|| {
        let block = block_of(&forest, finalized, dir)?;
        let entry = entries_at(&forest, block.number)?
            .into_iter()
            .find(|e| e.name == name);
        let db = forest.tree(name).map_err(database::db_failure)?;
        let entry = entry.ok_or_else(|| Failure::new(Code::Usage, anyhow!("no tree {name}")))?;
        let snapshot = db.tree_snapshot().map_err(database::db_failure)?;
        let pin = pin_block(&forest, block.number, finalized);
        let options = PublishOptions {
            signer,
            before_checkpoint: Some(&pin),
        };
        let published = publish_with(&snapshot, entry.head.size, to, &options)
            .map_err(|e| publish_failure(&to.location(), e))?;
        Ok((published, entry.head))
    })();
    forest.close().map_err(database::db_failure)?;
    result
}

/// What a forest mirror adopted.
pub(crate) struct ForestMirrored {
    /// The forest checkpoint now adopted.
    pub(crate) head: ForestHead,
    /// Leaves adopted, over every tree.
    pub(crate) adopted: u64,
}

fn refused(object: String, reason: String) -> Failure {
    Failure::new(Code::Invalid, MirrorError::Refused { object, reason })
}

fn read_failure(error: ForestReadError) -> Failure {
    match error {
        ForestReadError::Fetch(e) => crate::commands::mirror::mirror_failure(e.into()),
        ForestReadError::Refused { object, error } => refused(object, error.to_string()),
    }
}

/// Mirrors the forest store `source` into the forest in `dir` (created
/// with its trees if `dir` holds nothing): every tree's new leaves are
/// fetched from its leaf tiles and checked to hash to its entry's root
/// from the mirror's own tree, and only then all of them are written as
/// one block (the checkpoint's number and hash).
pub(crate) fn mirror_forest(
    source: Arc<dyn TileSource>,
    dir: &Path,
    keys: Option<&[Verifier]>,
    no_unique: bool,
) -> Result<ForestMirrored, Failure> {
    let read = read_forest(&*source, keys).map_err(read_failure)?;
    let checkpoint_object = format!("{}/{}", source.location(), cairn_tiles::CHECKPOINT);
    if let Some(entry) = read
        .entries
        .entries()
        .iter()
        .find(|e| !e.tree.kind.is_append_only())
    {
        return Err(Failure::new(
            Code::Usage,
            anyhow!(
                "{checkpoint_object}: tree {} is indexed, and an indexed tree has no tiles to mirror (its head is in the checkpoint); mirror the others one by one with --tree NAME",
                entry.name
            ),
        ));
    }
    let forest = open_or_create(dir)?;
    let result = adopt(&forest, &source, &read, &checkpoint_object, no_unique);
    forest.close().map_err(database::db_failure)?;
    result
}

fn open_or_create(dir: &Path) -> Result<Forest, Failure> {
    if cairn_db::is_forest(dir) {
        return Forest::open(dir).map_err(database::db_failure);
    }
    if database::is_database(dir) {
        return Err(Failure::new(
            Code::Usage,
            anyhow!(
                "{} holds a database of one tree; a forest store mirrors into a database of several (a new directory), or one tree of it with --tree NAME",
                dir.display()
            ),
        ));
    }
    Forest::create(dir).map_err(database::db_failure)
}

fn adopt(
    forest: &Forest,
    source: &Arc<dyn TileSource>,
    read: &cairn_tiles::ForestRead,
    checkpoint_object: &str,
    no_unique: bool,
) -> Result<ForestMirrored, Failure> {
    let head = read.head;
    let names = forest.names();
    if let Some(extra) = names.iter().find(|n| read.entries.get(n).is_err()) {
        return Err(refused(
            checkpoint_object.to_owned(),
            format!("it names no tree {extra}, which the mirror holds: another database's store?"),
        ));
    }
    for entry in read.entries.entries() {
        if !names.contains(&entry.name) {
            let mut config = DbConfig::new(entry.tree);
            config.unique = !no_unique;
            forest
                .add_tree(&entry.name, config)
                .map_err(database::db_failure)?;
        }
    }
    let last = forest.last_block();
    if let Some(last) = last
        && last > head.block
    {
        return Err(refused(
            checkpoint_object.to_owned(),
            format!(
                "its block {} is below block {last}, which the mirror adopted: a published forest never goes back",
                head.block
            ),
        ));
    }
    let mut verified: Vec<(String, Vec<Hash>)> = Vec::new();
    for entry in read.entries.entries() {
        let db = forest.tree(&entry.name).map_err(database::db_failure)?;
        let ours = Checkpoint::tree_of(&db.tree_config());
        let theirs = entry.checkpoint().expect("append-only, checked before");
        let prefix = tree_prefix(&entry.name);
        let object = format!("{}/{prefix}", source.location());
        if ours != theirs.tree {
            return Err(refused(
                object,
                format!(
                    "tree {} is {:?} in the checkpoint, {:?} in the mirror",
                    entry.name, theirs.tree, ours
                ),
            ));
        }
        let snapshot = db.tree_snapshot().map_err(database::db_failure)?;
        let at = snapshot.head();
        if at.size > entry.head.size || (at.size == entry.head.size && at != entry.head) {
            return Err(refused(
                object,
                format!(
                    "FORK: tree {} has {} leaves in the mirror (root {}), the checkpoint of block {} names {} (root {}): history was rewritten",
                    entry.name,
                    at.size,
                    show(at.root),
                    head.block,
                    entry.head.size,
                    show(entry.head.root)
                ),
            ));
        }
        let mut upstream = TilesUpstream::new(
            Box::new(Prefixed::new(Arc::clone(source), prefix)),
            Box::new(Unsigned),
        );
        let leaves = upstream
            .leaves(&theirs, at.size, entry.head.size)
            .map_err(crate::commands::mirror::mirror_failure)?;
        verify_leaves(&mut upstream, &theirs, &snapshot, &leaves)
            .map_err(crate::commands::mirror::mirror_failure)?;
        verified.push((entry.name.clone(), leaves));
    }
    let adopted: u64 = verified.iter().map(|(_, l)| l.len() as u64).sum();
    if last == Some(head.block) {
        // Every tree is at its entry (checked above): nothing to adopt.
        return Ok(ForestMirrored { head, adopted: 0 });
    }
    let parts: Vec<(&str, &[Hash])> = verified
        .iter()
        .map(|(name, leaves)| (name.as_str(), leaves.as_slice()))
        .collect();
    forest
        .commit_block(
            BlockId {
                number: head.block,
                hash: head.block_hash,
            },
            &parts,
        )
        .map_err(database::db_failure)?;
    Ok(ForestMirrored { head, adopted })
}

fn show(root: Option<Hash>) -> String {
    root.map_or_else(|| "none".to_owned(), |r| cairn_core::hex::to_hex(&r))
}

/// One tree of a forest store as a mirror's upstream: its head is its entry
/// in the forest checkpoint (checked against the keys, if given, and the
/// entries object against the checkpoint's root), its leaves and proofs
/// come from its tiles under `trees/NAME/`.
pub(crate) struct ForestTreeUpstream {
    source: Arc<dyn TileSource>,
    keys: Option<Vec<Verifier>>,
    name: String,
    tiles: TilesUpstream,
}

impl ForestTreeUpstream {
    pub(crate) fn new(
        source: Arc<dyn TileSource>,
        keys: Option<Vec<Verifier>>,
        name: &str,
    ) -> ForestTreeUpstream {
        let tiles = TilesUpstream::new(
            Box::new(Prefixed::new(Arc::clone(&source), tree_prefix(name))),
            Box::new(Unsigned),
        );
        ForestTreeUpstream {
            source,
            keys,
            name: name.to_owned(),
            tiles,
        }
    }
}

impl Upstream for ForestTreeUpstream {
    fn describe(&self) -> String {
        format!(
            "{}/{} (tree {})",
            self.source.location(),
            cairn_tiles::CHECKPOINT,
            self.name
        )
    }

    fn head(&mut self) -> Result<Checkpoint, MirrorError> {
        let read = read_forest(&*self.source, self.keys.as_deref()).map_err(|e| match e {
            ForestReadError::Fetch(e) => e.into(),
            ForestReadError::Refused { object, error } => MirrorError::Refused {
                object,
                reason: error.to_string(),
            },
        })?;
        let refused = |reason: String| MirrorError::Refused {
            object: self.describe(),
            reason,
        };
        let entry = read
            .entries
            .get(&self.name)
            .map_err(|e| refused(e.to_string()))?;
        entry.checkpoint().ok_or_else(|| {
            refused(format!(
                "tree {} is indexed: an indexed tree has no tiles to mirror",
                self.name
            ))
        })
    }

    fn leaves(&mut self, head: &Checkpoint, from: u64, to: u64) -> Result<Vec<Hash>, MirrorError> {
        self.tiles.leaves(head, from, to)
    }

    fn prove_prefix(
        &mut self,
        new: &Checkpoint,
        old: &TreeHead,
    ) -> Result<Result<(), NotAPrefix>, MirrorError> {
        self.tiles.prove_prefix(new, old)
    }

    fn prove_extends(
        &mut self,
        new: &Checkpoint,
        adopted: &cairn_core::Snapshot,
    ) -> Result<Result<(), NotAPrefix>, MirrorError> {
        self.tiles.prove_extends(new, adopted)
    }

    fn chunk_hint(&self, head: &Checkpoint) -> Option<u64> {
        self.tiles.chunk_hint(head)
    }

    fn fetch_ahead(&mut self, head: &Checkpoint, from: u64, to: u64, chunk: u64) {
        self.tiles.fetch_ahead(head, from, to, chunk);
    }

    fn check_head(&mut self, head: &Checkpoint) -> Result<Result<(), MirrorError>, MirrorError> {
        self.tiles.check_head(head)
    }

    fn leaves_object(&self, from: u64, to: u64) -> Option<String> {
        self.tiles.leaves_object(from, to)
    }
}

/// What a forest backup copied.
pub(crate) struct ForestBackup {
    /// The last block the copy holds, if any.
    pub(crate) block: Option<u64>,
    /// Per tree: its name and head.
    pub(crate) trees: Vec<(String, TreeHead)>,
    /// Bytes written.
    pub(crate) bytes: u64,
}

/// Copies the forest in `dir` to `dest` at one write: every tree made
/// durable in its own files and the journal rewritten to its header
/// (`Forest::checkpoint`), then each tree's backup, then the journal and
/// the manifest byte for byte, so `dest` opens to the same trees, blocks
/// and finality. The database is held open (locked) meanwhile.
pub(crate) fn backup_forest(dir: &Path, dest: &Path) -> Result<ForestBackup, Failure> {
    let forest = Forest::open(dir).map_err(database::db_failure)?;
    let result = backup_open(&forest, dir, dest);
    forest.close().map_err(database::db_failure)?;
    result
}

fn backup_open(forest: &Forest, dir: &Path, dest: &Path) -> Result<ForestBackup, Failure> {
    let io = |what: &str, path: &Path, e: std::io::Error| {
        Failure::new(Code::Input, anyhow!("{what} {}: {e}", path.display()))
    };
    if dest.exists()
        && std::fs::read_dir(dest)
            .map_err(|e| io("list", dest, e))?
            .next()
            .is_some()
    {
        return Err(Failure::new(
            Code::Usage,
            anyhow!("{} is not empty", dest.display()),
        ));
    }
    forest.checkpoint().map_err(database::db_failure)?;
    let mut trees = forest.trees();
    // A tree kept at the top (a directory converted from one tree) is
    // copied first, into the empty destination.
    trees.sort_by_key(|t| t.db.dir() != dir);
    let mut bytes = 0;
    let mut heads = Vec::new();
    for tree in &trees {
        let relative = tree.db.dir().strip_prefix(dir).map_err(|_| {
            Failure::new(
                Code::Input,
                anyhow!("tree {} is outside {}", tree.name, dir.display()),
            )
        })?;
        let target = dest.join(relative);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io("mkdir", parent, e))?;
        }
        let backup = tree.db.backup_to(&target).map_err(database::db_failure)?;
        bytes += backup.bytes;
        heads.push((tree.name.clone(), tree.db.head()));
    }
    for name in [cairn_db::JOURNAL, cairn_db::MANIFEST] {
        let from = dir.join(name);
        let to = dest.join(name);
        let data = std::fs::read(&from).map_err(|e| io("read", &from, e))?;
        let file = std::fs::File::create(&to).map_err(|e| io("create", &to, e))?;
        use std::io::Write as _;
        (&file).write_all(&data).map_err(|e| io("write", &to, e))?;
        file.sync_all().map_err(|e| io("fsync", &to, e))?;
        bytes += data.len() as u64;
    }
    for synced in [dest.to_owned(), dest.join(cairn_db::TREES_DIR)] {
        if synced.exists() {
            std::fs::File::open(&synced)
                .and_then(|d| d.sync_all())
                .map_err(|e| io("fsync", &synced, e))?;
        }
    }
    Ok(ForestBackup {
        block: forest.last_block(),
        trees: heads,
        bytes,
    })
}
