//! `cairn repair`: rebuild a damaged database from what it still holds
//! and a replica (a signed tile store, a mirror's server), then put the
//! rebuilt database in its place.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::anyhow;
use cairn_core::{Hash, Snapshot};
use cairn_db::repair::{Plan, Salvaged};
use cairn_db::{BlockTag, Database, DbError, OpenOptions, TaggedHead};
use cairn_server::open_upstream;
use cairn_tiles::{DEFAULT_CHUNK_LEAVES, MirrorError, MirrorTarget, TargetError, catch_up};

use crate::commands::mirror::trusted_keys;
use crate::commands::publish::RemoteArgs;
use crate::database;
use crate::failure::{Code, Failure};
use crate::json::Object;
use crate::output;
use crate::units::group;

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Repair the cairn database DIR from a replica: a tile store `cairn publish` or `cairn serve \
--publish` wrote (a directory, file://PATH, http(s)://URL or s3://BUCKET/PREFIX; with \
--verify-key its signed checkpoint must verify) or a cairn server holding a mirror of it.

First DIR is checked as `cairn check` does; a database that passes is left alone (exit 0). \
Otherwise, holding DIR's writer locks (so nothing writes to it meanwhile), repair reads what DIR \
still holds that a checksum vouches for: the leaves below the checkpoint page by page against \
their sums, the leaves after it frame by frame, and the block-tagged heads record by record. It \
then builds a new database beside DIR: the replica's leaves, each chunk verified against the \
replica's head as `cairn mirror` verifies it, then DIR's own leaves past the replica's head (up \
to the first one no checksum vouches for), tagged with DIR's blocks, each tagged root checked \
against the root DIR recorded. Where both hold a leaf they must agree, else the replica is \
another tree's history and nothing is changed (exit 1). The rebuilt database is made durable, \
DIR is renamed to DIR.damaged-<seconds> (kept for inspection; remove it when satisfied) and the \
rebuilt one takes its name, then checked again.

Acknowledged leaves or heads that neither DIR nor the replica holds (damage past what was \
published) are lost: repair refuses, naming the damage and the leaves (exit 1), unless \
--accept-loss is given. A damaged cairn.meta is rebuilt from the replica's tree (the nullifier \
set on, finality at checkpoints). Run it while no server or ingest has DIR open (it waits for \
the locks briefly and exits 4 if they stay held). Indexed databases have no replica: restore \
them from a backup.

--json prints {\"repaired\":true|false,\"size\":S,\"root\":\"0x..\"|null,\"from_replica\":R,\
\"from_local\":L,\"heads\":H,\"lost\":[FROM,TO]|null,\"damaged_copy\":\"..\"|null,\
\"damage\":[\"..\"]}.

Exit status: 0 repaired, or nothing to repair; 1 refused (loss without --accept-loss, a replica \
of another tree, a checkpoint whose signature does not verify); 2 usage; 4 DIR or the replica \
could not be read or written.

Examples:
  cairn repair db --from public --verify-key db.vkey
  cairn repair db --from s3://tiles/db --s3-endpoint http://127.0.0.1:9000 --verify-key db.vkey
  cairn repair db --from http://replica.example.org:7878";

/// Rebuild a damaged database from what it still holds and a replica.
#[derive(clap::Args, Debug)]
pub struct RepairCmd {
    /// The damaged database directory.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// The replica: a tile store (path, file://, http(s)://, s3://) or a cairn server's URL.
    #[arg(long, value_name = "URL")]
    from: String,
    /// Trust only checkpoints signed by a key in this file (one verifier key per line; repeatable).
    #[arg(long, value_name = "FILE")]
    verify_key: Vec<PathBuf>,
    /// Repair even if acknowledged leaves or heads are lost (neither DIR nor the replica holds them).
    #[arg(long)]
    accept_loss: bool,
    /// Leaves fetched, verified and adopted at once.
    #[arg(long, value_name = "LEAVES", default_value_t = DEFAULT_CHUNK_LEAVES)]
    chunk: u64,
    /// How remote stores are reached.
    #[command(flatten)]
    remote: RemoteArgs,
    /// Print the result as one line of JSON.
    #[arg(long)]
    json: bool,
    /// Report on stderr (stdout is a server's).
    #[arg(skip)]
    report_to_stderr: bool,
}

impl RepairCmd {
    /// A repair as `cairn serve --repair-from` runs it: no loss accepted,
    /// the report in words.
    pub(crate) fn new(
        dir: PathBuf,
        from: String,
        verify_key: Vec<PathBuf>,
        remote: RemoteArgs,
    ) -> RepairCmd {
        RepairCmd {
            dir,
            from,
            verify_key,
            accept_loss: false,
            chunk: DEFAULT_CHUNK_LEAVES,
            remote,
            json: false,
            report_to_stderr: true,
        }
    }
}

/// How long one chunk may take to become durable in the rebuilt database.
const DURABLE_WITHIN: Duration = Duration::from_secs(3600);

impl RepairCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        if cairn_db::is_forest(&self.dir) {
            return Err(Failure::new(
                Code::Usage,
                anyhow!(
                    "{} holds several trees: repair rebuilds one tree from a replica, which would take it out of step with the database's block journal (a block is in every tree or in none); restore the database from a `cairn backup` of it, or rebuild it with `cairn mirror` from its published store",
                    self.dir.display()
                ),
            ));
        }
        if let Some(head) = intact(&self.dir) {
            return self.report_intact(head);
        }
        let trusted = trusted_keys(&self.verify_key)?;
        let mut upstream = open_upstream(&self.from, &self.remote.options(), trusted.as_ref())
            .map_err(|why| Failure::new(Code::Usage, anyhow!("{why}")))?;
        let head = upstream.head().map_err(mirror_failure)?;
        let salvaged =
            cairn_db::repair::salvage(&self.dir, Some(head.tree)).map_err(database::db_failure)?;
        let damage: Vec<String> = salvaged.damage().iter().map(|d| d.to_string()).collect();
        for line in &damage {
            eprintln!("damage: {line}");
        }
        if salvaged.config().tree() != head.tree {
            return Err(Failure::new(
                Code::Invalid,
                anyhow!(
                    "{} holds another tree ({}) than {} ({}): nothing was changed",
                    self.dir.display(),
                    describe(&salvaged.config().tree()),
                    self.from,
                    describe(&head.tree)
                ),
            ));
        }
        self.refuse_loss(&salvaged.plan(head.head.size), false)?;
        let rebuilt = sibling(&self.dir, "repair");
        let built = self.rebuild(&salvaged, &mut *upstream, &rebuilt);
        let plan = match built {
            Ok(plan) => plan,
            Err(failure) => {
                let _ = std::fs::remove_dir_all(&rebuilt);
                return Err(failure);
            }
        };
        let kept = sibling(&self.dir, &format!("damaged-{}", unix_seconds()));
        swap(&self.dir, &rebuilt, &kept)?;
        drop(salvaged);
        let head = intact(&self.dir).ok_or_else(|| {
            Failure::new(
                Code::Input,
                anyhow!(
                    "the repaired database {} does not pass its check; the damaged one is at {}",
                    self.dir.display(),
                    kept.display()
                ),
            )
        })?;
        self.report(&plan, head, Some(&kept), &damage)
    }

    /// Refuses a plan that loses acknowledged data, unless accepted (then
    /// warns, if `warn`).
    fn refuse_loss(&self, plan: &Plan, warn: bool) -> Result<(), Failure> {
        if plan.loses_nothing() {
            return Ok(());
        }
        let what = lost_words(plan);
        if self.accept_loss {
            if warn {
                eprintln!("warning: {what} (--accept-loss)");
            }
            return Ok(());
        }
        Err(Failure::new(
            Code::Invalid,
            anyhow!(
                "{what}: neither {} nor {} holds them; nothing was changed (--accept-loss repairs anyway)",
                self.dir.display(),
                self.from
            ),
        ))
    }

    /// Builds the repaired database in `rebuilt`; returns the plan it
    /// followed (the replica may have grown since the first look).
    fn rebuild(
        &self,
        salvaged: &Salvaged,
        upstream: &mut dyn cairn_tiles::Upstream,
        rebuilt: &Path,
    ) -> Result<Plan, Failure> {
        if rebuilt.exists() {
            // What an interrupted repair left.
            std::fs::remove_dir_all(rebuilt).map_err(|e| {
                Failure::new(Code::Input, anyhow!("removing {}: {e}", rebuilt.display()))
            })?;
        }
        let mut config = salvaged.config().clone();
        config.store.flush_interval = None;
        config.store.checkpoint = Default::default();
        let db = Arc::new(Database::create(rebuilt, config).map_err(database::db_failure)?);
        let mut target = Tagged {
            db: Arc::clone(&db),
            size: 0,
            heads: salvaged.heads().iter().copied().collect(),
            salvaged,
        };
        let caught = catch_up(upstream, &mut target, self.chunk).map_err(mirror_failure)?;
        let plan = salvaged.plan(caught.head.size);
        self.refuse_loss(&plan, true)?;
        let local = &salvaged.leaves()[plan.local.start as usize..plan.local.end as usize];
        for chunk in local.chunks(DEFAULT_CHUNK_LEAVES as usize) {
            target.append(chunk).map_err(target_failure)?;
        }
        target.append(&[]).map_err(target_failure)?;
        let finalized = salvaged.finalized().min(plan.size);
        if finalized > 0 {
            db.finalize(finalized).map_err(database::db_failure)?;
        }
        drop(target);
        db.checkpoint().map_err(database::db_failure)?;
        let db = Arc::try_unwrap(db)
            .map_err(|_| Failure::new(Code::Input, anyhow!("the database is still in use")))?;
        db.close().map_err(database::db_failure)?;
        Ok(plan)
    }

    fn report_intact(&self, head: cairn_core::TreeHead) -> Result<(), Failure> {
        if self.report_to_stderr {
            eprintln!("nothing to repair: {} passes its check", self.dir.display());
            return Ok(());
        }
        if self.json {
            return output::line(
                &Object::new()
                    .field("repaired", false)
                    .field("size", head.size)
                    .hash("root", head.root.as_ref())
                    .finish(),
            );
        }
        output::line(&format!(
            "nothing to repair: {} passes its check (size {})",
            self.dir.display(),
            head.size
        ))
    }

    fn report(
        &self,
        plan: &Plan,
        head: cairn_core::TreeHead,
        kept: Option<&Path>,
        damage: &[String],
    ) -> Result<(), Failure> {
        if self.json {
            let lost =
                (!plan.lost.is_empty()).then(|| format!("[{},{}]", plan.lost.start, plan.lost.end));
            return output::line(
                &Object::new()
                    .field("repaired", true)
                    .field("size", head.size)
                    .hash("root", head.root.as_ref())
                    .field("from_replica", plan.replica.min(head.size))
                    .field("from_local", plan.local.end - plan.local.start)
                    .field("heads", plan.heads as u64)
                    .raw("lost", lost.as_deref().unwrap_or("null"))
                    .field("damaged_copy", kept.map(|p| p.display().to_string()))
                    .raw(
                        "damage",
                        &crate::json::array(
                            damage
                                .iter()
                                .map(|d| serde_json::Value::from(d.as_str()).to_string()),
                        ),
                    )
                    .finish(),
            );
        }
        let mut text = format!(
            "repaired {}: size {} ({} leaves from {}, {} from its own log), {} block-tagged heads, root {}",
            self.dir.display(),
            head.size,
            group(plan.replica.min(head.size)),
            self.from,
            group(plan.local.end - plan.local.start),
            plan.heads,
            head.root
                .map_or_else(|| "none".to_owned(), |r| cairn_core::hex::to_hex(&r))
        );
        if !plan.loses_nothing() {
            text.push_str(&format!("; {}", lost_words(plan)));
        }
        if let Some(kept) = kept {
            text.push_str(&format!(
                "\nthe damaged database is kept at {}",
                kept.display()
            ));
        }
        if self.report_to_stderr {
            eprintln!("{text}");
            return Ok(());
        }
        output::line(&text)
    }
}

/// The head of the database in `dir` if it opens and passes every check
/// (`cairn check`'s).
fn intact(dir: &Path) -> Option<cairn_core::TreeHead> {
    let db = OpenOptions::new()
        .read_only(true)
        .background(false)
        .verify(true)
        .open(dir)
        .ok()?;
    db.check().ok()?;
    let head = db.head();
    db.close().ok()?;
    Some(head)
}

/// A tree in words: arity, hash, kind.
fn describe(tree: &cairn_core::TreeConfig) -> String {
    format!(
        "arity {}, {}, {}",
        tree.arity.get(),
        tree.hash.name(),
        tree.kind.name()
    )
}

fn lost_words(plan: &Plan) -> String {
    let mut parts = Vec::new();
    if !plan.lost.is_empty() {
        parts.push(format!(
            "acknowledged leaves {}..{} are lost",
            plan.lost.start, plan.lost.end
        ));
    }
    if plan.lost_heads > 0 {
        parts.push(format!(
            "{} acknowledged block-tagged heads are lost",
            plan.lost_heads
        ));
    }
    parts.join(", ")
}

/// `dir` with `.suffix` added to its name, beside it.
fn sibling(dir: &Path, suffix: &str) -> PathBuf {
    let mut name = dir.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{suffix}"));
    dir.with_file_name(name)
}

fn unix_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Puts `rebuilt` in place of `dir`, keeping `dir` as `kept`, durably.
fn swap(dir: &Path, rebuilt: &Path, kept: &Path) -> Result<(), Failure> {
    let io = |what: &str, e: std::io::Error| Failure::new(Code::Input, anyhow!("{what}: {e}"));
    std::fs::rename(dir, kept).map_err(|e| {
        io(
            &format!("renaming {} to {}", dir.display(), kept.display()),
            e,
        )
    })?;
    std::fs::rename(rebuilt, dir).map_err(|e| {
        io(
            &format!(
                "renaming {} to {} (the damaged database is at {})",
                rebuilt.display(),
                dir.display(),
                kept.display()
            ),
            e,
        )
    })?;
    let parent = match dir.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    std::fs::File::open(parent)
        .and_then(|d| d.sync_all())
        .map_err(|e| io(&format!("syncing {}", parent.display()), e))
}

/// A replica's error as `cairn mirror` maps it, but a refusal of the
/// replica's history by the rebuilt database is a failed check (1).
fn mirror_failure(error: MirrorError) -> Failure {
    match error {
        MirrorError::Target(error) => target_failure(error),
        error => crate::commands::mirror::mirror_failure(error),
    }
}

/// A refusal of the replica's history is a failed check (1); what the
/// rebuilt database says is its own.
fn target_failure(error: TargetError) -> Failure {
    let error = match error.downcast::<NotThisHistory>() {
        Ok(error) => {
            return Failure::new(
                Code::Invalid,
                anyhow!("the replica is not this database's history: {error}; nothing was changed"),
            );
        }
        Err(error) => error,
    };
    match error.downcast::<DbError>() {
        Ok(error) => database::db_failure(*error),
        Err(error) => Failure::new(Code::Input, anyhow!("{error}")),
    }
}

/// The rebuilt database as a mirror's target: leaves appended with the
/// salvaged block tags at the sizes they name, each tagged root checked
/// against the recorded one.
struct Tagged<'a> {
    db: Arc<Database>,
    size: u64,
    heads: VecDeque<TaggedHead>,
    salvaged: &'a Salvaged,
}

/// Why the rebuilt database is not the damaged one's history.
#[derive(Debug, thiserror::Error)]
enum NotThisHistory {
    #[error("leaf {index} differs from the one the database holds")]
    Leaf { index: u64 },
    #[error("block {block} at size {size}: the rebuilt root differs from the one recorded")]
    Root { block: u64, size: u64 },
    #[error("block {block} is recorded at size {size}, below the {below} leaves before it")]
    Order { block: u64, size: u64, below: u64 },
}

impl Tagged<'_> {
    fn append(&mut self, leaves: &[Hash]) -> Result<(), TargetError> {
        if let Some(index) = self.salvaged.first_difference(self.size, leaves) {
            return Err(NotThisHistory::Leaf { index }.into());
        }
        let mut rest = leaves;
        let mut acks = Vec::new();
        loop {
            let end = self.size + rest.len() as u64;
            match self.heads.front().copied() {
                Some(head) if head.size <= end => {
                    self.heads.pop_front();
                    let take = head
                        .size
                        .checked_sub(self.size)
                        .ok_or(NotThisHistory::Order {
                            block: head.block,
                            size: head.size,
                            below: self.size,
                        })?;
                    let (segment, after) = rest.split_at(take as usize);
                    let tag = BlockTag {
                        number: head.block,
                        hash: head.block_hash,
                    };
                    acks.push((self.db.append_tagged(segment, tag)?, Some(head)));
                    self.size = head.size;
                    rest = after;
                }
                _ => {
                    if !rest.is_empty() {
                        acks.push((self.db.append(rest)?, None));
                        self.size = end;
                    }
                    break;
                }
            }
        }
        for (ack, head) in acks {
            let acked = ack.wait(&self.db, DURABLE_WITHIN)?;
            if let Some(head) = head
                && acked.root != head.root
            {
                return Err(NotThisHistory::Root {
                    block: head.block,
                    size: head.size,
                }
                .into());
            }
        }
        Ok(())
    }
}

impl MirrorTarget for Tagged<'_> {
    fn adopted(&self) -> Arc<Snapshot> {
        self.db
            .tree_snapshot()
            .expect("a repaired database is append-only (checked at salvage)")
    }

    fn adopt(&mut self, leaves: &[Hash]) -> Result<(), TargetError> {
        self.append(leaves)
    }

    fn sync(&mut self) -> Result<(), TargetError> {
        self.db.flush().map(|_| ()).map_err(Into::into)
    }
}
