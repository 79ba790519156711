//! `cairn checkpoint`: write a checkpoint of a database now.

use std::path::PathBuf;

use crate::database::{self, Options};
use crate::failure::Failure;
use crate::json::Object;
use crate::output;
use crate::units::group;

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Write a checkpoint of the cairn database DIR: the upper levels' final nodes go to the level \
files and the checkpoint file is replaced atomically, and the nullifier set's checkpoint file is \
rewritten, so that the next open maps them instead of rehashing the leaves appended since the \
last checkpoint (an indexed database: its log of values, from which open rebuilds the tree). \
`cairn ingest` checkpoints on its own after large inputs; this forces one.

Prints the checkpoint's number and the leaves it covers, or says that the last checkpoint \
already covers every leaf.

--json prints {\"written\":true|false,\"number\":C,\"size\":S,\"set_checkpoint_size\":S|null}.

Examples:
  cairn checkpoint db
  cairn checkpoint --json db";

/// Write a checkpoint now.
#[derive(clap::Args, Debug)]
pub struct CheckpointCmd {
    /// The database directory.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// The tree of a database of several trees whose checkpoint is reported (every tree is checkpointed with the block journal; default: the one named default, or the only one).
    #[arg(long, value_name = "NAME")]
    tree: Option<String>,
    /// Print the result as one line of JSON.
    #[arg(long)]
    json: bool,
}

impl CheckpointCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        let checkpointed = if cairn_db::is_forest(&self.dir) {
            // Every tree made durable in its own files and checkpointed,
            // the block journal rewritten; the named tree reported.
            let forest = cairn_db::Forest::open(&self.dir).map_err(database::db_failure)?;
            let db = match &self.tree {
                Some(name) => forest.tree(name),
                None => forest.default_tree(),
            }
            .map_err(database::db_failure)?;
            let before = db.stats().store.checkpoint_number;
            forest.checkpoint().map_err(database::db_failure)?;
            // The tree's own checkpoint call writes nothing more now; it
            // reports what the database's checkpoint left.
            let mut checkpointed = db.checkpoint().map_err(database::db_failure)?;
            checkpointed.written = checkpointed.number != before;
            drop(db);
            forest.close().map_err(database::db_failure)?;
            checkpointed
        } else {
            if let Some(name) = &self.tree {
                // One tree in the layout before several: only `default`.
                database::tree_dir(&self.dir, Some(name))?;
            }
            let db = database::open(&self.dir, Options::default())?;
            let checkpointed = db.checkpoint().map_err(database::db_failure)?;
            database::close(db)?;
            checkpointed
        };
        let (number, size) = (checkpointed.number, checkpointed.size);
        if self.json {
            return output::line(
                &Object::new()
                    .field("written", checkpointed.written)
                    .field("number", number)
                    .field("size", size)
                    .field("set_checkpoint_size", checkpointed.set_size)
                    .finish(),
            );
        }
        output::line(&match (checkpointed.written, number) {
            (true, _) => format!("wrote checkpoint {number}, covering {} leaves", group(size)),
            (false, 0) => "nothing to checkpoint: the database is empty".to_owned(),
            (false, _) => format!(
                "checkpoint {number} already covers all {} leaves",
                group(size)
            ),
        })
    }
}
