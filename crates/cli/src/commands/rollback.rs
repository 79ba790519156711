//! `cairn truncate` and `cairn finalize`: roll a database back to an
//! earlier size or block, and mark what can no longer be rolled back.

use std::path::PathBuf;

use crate::database::{self, Options};
use crate::failure::Failure;
use crate::json::Object;
use crate::output;

/// The long help of `truncate`.
pub(crate) const TRUNCATE_ABOUT: &str = "\
Roll the cairn database DIR back to its first SIZE leaves (--to SIZE), or to the end of the last \
ingest tagged with a block at or below N (--to-block N, which also drops the tagged heads of \
later blocks, even empty ones): what a chain follower does when the chain reorganises. Every \
leaf from SIZE on and every tagged head above it is removed, atomically and durably (a crash at \
any instant leaves the database as before or as after), their values leave the nullifier set (so \
they can be ingested again), and the next ingest reuses their indices.

A rollback below the finalized size (see `cairn finalize` and `cairn init --finality`; a size \
published as tiles by `cairn publish` or `cairn serve --publish` is final too) is refused (exit 2) and changes nothing; so is a size beyond the tree or a block with no tagged \
head at or below it.

An indexed database (`cairn init --kind indexed`) is rolled back --to a size of its tree, which \
counts the guard leaf 0 (always final); it records no block-tagged heads.

--json prints {\"size\":S,\"root\":\"0x..\"|null,\"removed\":R,\"finalized_size\":F}.

Examples:
  cairn truncate db --to 5
  cairn ingest db /dev/null --block 99 && cairn ingest db leaves.bin --block 100 && cairn truncate db --to-block 99";

/// The long help of `finalize`.
pub(crate) const FINALIZE_ABOUT: &str = "\
Mark the first SIZE leaves of the cairn database DIR final (--to SIZE), or those up to the end \
of the last ingest tagged with a block at or below N (--to-block N): `cairn truncate` never goes \
below them again, and their nodes may be served from file mappings. Durable when it returns. The \
finalized size never goes down: a smaller one leaves it as it is.

A database created with --finality checkpoint (the default) also finalizes what each checkpoint \
covers; one created with --finality explicit only what this command names.

An indexed database takes --to in its tree's sizes (the guard leaf 0 counts, and is always final).

--json prints {\"finalized_size\":F,\"size\":S}.

Examples:
  cairn finalize db --to 5
  cairn ingest db leaves.bin --block 100 && cairn finalize db --to-block 100";

/// Where to roll back or finalize to.
#[derive(clap::Args, Debug)]
#[group(required = true, multiple = false)]
pub struct Target {
    /// A size (a count of leaves).
    #[arg(long, value_name = "SIZE")]
    to: Option<u64>,
    /// The end of the last ingest tagged with a block at or below N.
    #[arg(long, value_name = "N")]
    to_block: Option<u64>,
}

/// Roll a database back to an earlier size or block.
#[derive(clap::Args, Debug)]
pub struct TruncateCmd {
    /// The database directory.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    #[command(flatten)]
    target: Target,
    /// Print the result as one line of JSON.
    #[arg(long)]
    json: bool,
}

/// Mark leaves final: never rolled back.
#[derive(clap::Args, Debug)]
pub struct FinalizeCmd {
    /// The database directory.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    #[command(flatten)]
    target: Target,
    /// Print the result as one line of JSON.
    #[arg(long)]
    json: bool,
}

/// A database of several trees rolls back and finalizes by block only.
fn forest_block(target: &Target) -> Result<u64, Failure> {
    target.to_block.ok_or_else(|| {
        Failure::new(
            crate::failure::Code::Usage,
            anyhow::anyhow!(
                "a database of several trees rolls back and finalizes by block, every tree at once: use --to-block"
            ),
        )
    })
}

impl TruncateCmd {
    /// Every tree of a database of several back to a block.
    fn run_forest(&self) -> Result<(), Failure> {
        let block = forest_block(&self.target)?;
        let forest = cairn_db::Forest::open(&self.dir).map_err(database::db_failure)?;
        let trees = forest
            .truncate_to_block(block)
            .map_err(database::db_failure);
        forest.close().map_err(database::db_failure)?;
        let trees = trees?;
        if self.json {
            let listed = crate::json::array(trees.iter().map(|t| {
                Object::new()
                    .field("tree", t.tree.as_str())
                    .field("size", t.size)
                    .finish()
            }));
            return output::line(&Object::new().raw("trees", &listed).finish());
        }
        let lines: Vec<String> = trees
            .iter()
            .map(|t| format!("tree {} size {}", t.tree, t.size))
            .collect();
        output::line(&lines.join("\n"))
    }

    pub(crate) fn run(self) -> Result<(), Failure> {
        if cairn_db::is_forest(&self.dir) {
            return self.run_forest();
        }
        let db = database::open(&self.dir, Options::default())?;
        let before = db.size();
        let head = match (self.target.to, self.target.to_block) {
            (Some(size), _) => db.truncate(size),
            (None, Some(block)) => db.truncate_to_block(block),
            (None, None) => unreachable!("clap requires --to or --to-block"),
        }
        .map_err(|error| {
            if matches!(error.kind(), cairn_db::ErrorKind::BelowFinalized { .. }) {
                // Say where finality can come from: publishing is one.
                let code = database::db_code(&error);
                return Failure::new(
                    code,
                    anyhow::anyhow!(
                        "{error} (made final by `cairn finalize`, a checkpoint, or publishing them as tiles)"
                    ),
                );
            }
            database::db_failure(error)
        })?;
        let finalized = db.finalized_size();
        database::close(db)?;
        let removed = before.saturating_sub(head.size);
        if self.json {
            return output::line(
                &Object::new()
                    .field("size", head.size)
                    .hash("root", head.root.as_ref())
                    .field("removed", removed)
                    .field("finalized_size", finalized)
                    .finish(),
            );
        }
        let root = head.root.map_or_else(
            || "none (the tree is empty)".to_owned(),
            |r| cairn_core::hex::to_hex(&r),
        );
        output::line(&format!(
            "removed {} lea{}: size {}, root {root}",
            crate::units::group(removed),
            if removed == 1 { "f" } else { "ves" },
            head.size
        ))
    }
}

impl FinalizeCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        if cairn_db::is_forest(&self.dir) {
            let block = forest_block(&self.target)?;
            let forest = cairn_db::Forest::open(&self.dir).map_err(database::db_failure)?;
            let finalized = forest
                .finalize_to_block(block)
                .map_err(database::db_failure);
            forest.close().map_err(database::db_failure)?;
            let finalized = finalized?;
            if self.json {
                return output::line(&Object::new().field("finalized_block", finalized).finish());
            }
            return output::line(&format!("finalized every tree at block {finalized}"));
        }
        let db = database::open(&self.dir, Options::default())?;
        let finalized = match (self.target.to, self.target.to_block) {
            (Some(size), _) => db.finalize(size),
            (None, Some(block)) => db.finalize_to_block(block),
            (None, None) => unreachable!("clap requires --to or --to-block"),
        }
        .map_err(database::db_failure)?;
        let size = db.size();
        database::close(db)?;
        if self.json {
            return output::line(
                &Object::new()
                    .field("finalized_size", finalized)
                    .field("size", size)
                    .finish(),
            );
        }
        output::line(&format!("finalized the first {finalized} of {size} leaves"))
    }
}
