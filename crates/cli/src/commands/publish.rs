//! `cairn publish`: write a database's tiles and checkpoint to a directory
//! any static HTTP server or CDN can serve.

use std::path::PathBuf;

use anyhow::anyhow;
use cairn_tiles::{DirStore, publish_at};

use crate::commands::plan::group;
use crate::database::{self, Options};
use crate::failure::{Code, Failure};
use crate::json::Object;
use crate::output;

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Publish the cairn database DIR as immutable tiles to the directory --to (a path or file://PATH): \
the tree's final nodes cut into objects of at most 256 nodes (tile/L/N for full tiles, \
tile/L/N.p/W for partial ones) and, last, a checkpoint object naming the head they belong to. \
Only the tiles the directory lacks are written, so publishing again after more leaves writes \
what changed. Serve the directory with any static HTTP server or CDN: every tile can be cached \
forever, only `checkpoint` changes. `cairn prove --tiles` computes proofs from it.

A directory published from a tree that was rolled back below its checkpoint, or from another \
tree, is refused (exit 2): published tiles never change. Chain followers publish finalized sizes \
(--finalized).

--json prints {\"size\":S,\"root\":\"0x..\"|null,\"objects\":O,\"bytes\":B,\"skipped\":K}.

Examples:
  cairn publish db --to public
  cairn publish db --to file://public --json";

/// Publish a database's tiles to a directory.
#[derive(clap::Args, Debug)]
pub struct PublishCmd {
    /// The database directory.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// Where to publish: a directory, or file://DIRECTORY.
    #[arg(long, value_name = "DEST")]
    to: String,
    /// Publish the finalized size only (what a rollback can never undo).
    #[arg(long)]
    finalized: bool,
    /// Print the result as one line of JSON.
    #[arg(long)]
    json: bool,
}

/// The directory a `--to`/`--tiles` argument names.
pub(crate) fn tile_dir(dest: &str) -> Result<PathBuf, Failure> {
    if let Some(path) = dest.strip_prefix("file://") {
        return Ok(PathBuf::from(path));
    }
    if dest.contains("://") {
        return Err(Failure::new(
            Code::Usage,
            anyhow!("{dest}: only directories and file:// are supported here"),
        ));
    }
    Ok(PathBuf::from(dest))
}

impl PublishCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        let to = tile_dir(&self.to)?;
        let db = database::open(&self.dir, Options::default())?;
        let snapshot = db.snapshot();
        let finalized = db.finalized_size();
        db.close().map_err(database::db_failure)?;
        let tree = snapshot.tree();
        let size = if self.finalized {
            finalized
        } else {
            tree.size()
        };
        let (published, head) = self.publish(tree, size, &to)?;
        if self.json {
            return output::line(
                &Object::new()
                    .field("size", head.size)
                    .hash("root", head.root.as_ref())
                    .field("objects", published.objects)
                    .field("bytes", published.bytes)
                    .field("skipped", published.skipped)
                    .finish(),
            );
        }
        output::line(&format!(
            "published {} objects ({} bytes) to {}: size {}, root {}",
            group(published.objects),
            group(published.bytes),
            to.display(),
            head.size,
            head.root
                .map_or_else(|| "none".to_owned(), |r| cairn_core::hex::to_hex(&r))
        ))
    }

    fn publish(
        &self,
        snapshot: &cairn_core::Snapshot,
        size: u64,
        to: &std::path::Path,
    ) -> Result<(cairn_tiles::Published, cairn_core::TreeHead), Failure> {
        let store = DirStore::new(to);
        let head = snapshot
            .view(size)
            .map_err(|e| Failure::new(Code::Input, e))?
            .head();
        match publish_at(snapshot, size, &store) {
            Ok(done) => Ok((done, head)),
            Err(cairn_tiles::PublishError::Foreign(why)) => Err(Failure::new(
                Code::Usage,
                anyhow!("{}: {why}", to.display()),
            )),
            Err(error @ cairn_tiles::PublishError::NotLean { .. }) => {
                Err(Failure::new(Code::Usage, error))
            }
            Err(error) => Err(Failure::new(Code::Input, error)),
        }
    }
}
