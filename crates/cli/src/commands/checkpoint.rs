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
last checkpoint. `cairn ingest` checkpoints on its own after large inputs; this forces one.

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
    /// Print the result as one line of JSON.
    #[arg(long)]
    json: bool,
}

impl CheckpointCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        if database::is_indexed_dir(&self.dir) {
            return self.run_indexed();
        }
        let db = database::open(&self.dir, Options::default())?;
        let written = db.checkpoint().map_err(database::db_failure)?;
        let stats = db.stats();
        let unique = db.is_unique();
        db.close().map_err(database::db_failure)?;
        let (number, size) = (stats.store.checkpoint_number, stats.store.checkpoint_size);
        if self.json {
            return output::line(
                &Object::new()
                    .field("written", written.is_some())
                    .field("number", number)
                    .field("size", size)
                    .field(
                        "set_checkpoint_size",
                        unique.then_some(stats.set_checkpoint_size),
                    )
                    .finish(),
            );
        }
        output::line(&match (&written, number) {
            (Some(_), _) => format!("wrote checkpoint {number}, covering {} leaves", group(size)),
            (None, 0) => "nothing to checkpoint: the database is empty".to_owned(),
            (None, _) => format!(
                "checkpoint {number} already covers all {} leaves",
                group(size)
            ),
        })
    }
}

impl CheckpointCmd {
    /// An indexed database checkpoints its log of values (its tree is
    /// rebuilt from them at open).
    fn run_indexed(self) -> Result<(), Failure> {
        let db = crate::indexed::open(&self.dir, Options::default())?;
        let written = db.checkpoint().map_err(database::db_failure)?;
        let stats = db.stats();
        db.close().map_err(database::db_failure)?;
        let (number, size) = (stats.store.checkpoint_number, stats.store.checkpoint_size);
        if self.json {
            return output::line(
                &Object::new()
                    .field("written", written.is_some())
                    .field("number", number)
                    .field("size", size)
                    .field("set_checkpoint_size", None::<u64>)
                    .finish(),
            );
        }
        output::line(&match (&written, number) {
            (Some(_), _) => format!("wrote checkpoint {number}, covering {} values", group(size)),
            (None, 0) => "nothing to checkpoint: the database holds no value".to_owned(),
            (None, _) => format!(
                "checkpoint {number} already covers all {} values",
                group(size)
            ),
        })
    }
}
