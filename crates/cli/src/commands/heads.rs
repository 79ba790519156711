//! `cairn heads`: the block-tagged heads of a database.

use std::path::PathBuf;

use cairn_core::hex::to_hex;

use crate::database::{self, Options};
use crate::failure::Failure;
use crate::json::{Object, array};
use crate::output;

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
List the block-tagged heads of the cairn database DIR: for every ingest tagged with --block, the \
block number, its hash (if given), and the tree's size and root at the end of that block's \
leaves, in block order, from --from-block on, at most --limit of them. These are the roots a \
contract that accepts recent roots may hold; `cairn prove DIR --index I --root 0x..` proves \
against any of them.

One line per head: `block B size S root 0x.. [hash 0x..]`. --json prints \
{\"heads\":[{\"block\":B,\"block_hash\":\"0x..\"|null,\"size\":S,\"root\":\"0x..\"|null},..],\
\"finalized_size\":F}.

Examples:
  cairn ingest db leaves.bin --block 100 && cairn heads db
  cairn heads db --from-block 100 --limit 10 --json";

/// List the block-tagged heads.
#[derive(clap::Args, Debug)]
pub struct HeadsCmd {
    /// The database directory.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// The first block to list.
    #[arg(long, value_name = "N", default_value_t = 0)]
    from_block: u64,
    /// At most this many heads.
    #[arg(long, value_name = "L", default_value_t = 1000)]
    limit: usize,
    /// Print the heads as one line of JSON.
    #[arg(long)]
    json: bool,
}

impl HeadsCmd {
    /// Every tree's head at each block of a database of several trees.
    fn run_forest(&self) -> Result<(), Failure> {
        let forest = cairn_db::Forest::open(&self.dir).map_err(database::db_failure)?;
        let mut rows = Vec::new();
        let blocks = forest.blocks();
        let result = blocks
            .iter()
            .filter(|b| b.number >= self.from_block)
            .take(self.limit)
            .try_for_each(|block| {
                let heads = forest.heads_at(block.number)?;
                rows.push((*block, heads));
                Ok::<(), cairn_db::DbError>(())
            });
        let finalized = forest.finalized_block();
        forest.close().map_err(database::db_failure)?;
        result.map_err(database::db_failure)?;
        if self.json {
            let listed = array(rows.iter().map(|(block, heads)| {
                let trees = array(heads.iter().map(|(name, size, root)| {
                    Object::new()
                        .field("tree", name.as_str())
                        .field("size", *size)
                        .hash("root", root.as_ref())
                        .finish()
                }));
                Object::new()
                    .field("block", block.number)
                    .hash("block_hash", Some(&block.hash))
                    .raw("trees", &trees)
                    .finish()
            }));
            return output::line(
                &Object::new()
                    .raw("blocks", &listed)
                    .field("finalized_block", finalized)
                    .finish(),
            );
        }
        let lines: Vec<String> = rows
            .iter()
            .flat_map(|(block, heads)| {
                heads.iter().map(move |(name, size, root)| {
                    let root = root.map_or_else(|| "none".to_owned(), |r| to_hex(&r));
                    format!("block {} tree {name} size {size} root {root}", block.number)
                })
            })
            .collect();
        if lines.is_empty() {
            return output::line("no blocks");
        }
        output::line(&lines.join("\n"))
    }

    pub(crate) fn run(self) -> Result<(), Failure> {
        if cairn_db::is_forest(&self.dir) {
            return self.run_forest();
        }
        let db = database::open_read_only(&self.dir, Options::default())?;
        let heads = db
            .heads(self.from_block, self.limit)
            .map_err(database::db_failure);
        let finalized = db.finalized_size();
        database::close(db)?;
        let heads = heads?;
        if self.json {
            let listed = array(heads.iter().map(|h| {
                Object::new()
                    .field("block", h.block)
                    .hash("block_hash", h.block_hash.as_ref())
                    .field("size", h.size)
                    .hash("root", h.root.as_ref())
                    .finish()
            }));
            return output::line(
                &Object::new()
                    .raw("heads", &listed)
                    .field("finalized_size", finalized)
                    .finish(),
            );
        }
        let lines: Vec<String> = heads
            .iter()
            .map(|h| {
                let root = h.root.map_or_else(|| "none".to_owned(), |r| to_hex(&r));
                let hash = h
                    .block_hash
                    .map(|b| format!(" hash {}", to_hex(&b)))
                    .unwrap_or_default();
                format!("block {} size {} root {root}{hash}", h.block, h.size)
            })
            .collect();
        if lines.is_empty() {
            return output::line("no block-tagged heads");
        }
        output::line(&lines.join("\n"))
    }
}
