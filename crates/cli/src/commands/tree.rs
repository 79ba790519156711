//! `cairn tree add`: adds a named tree to a database, and `cairn trees`:
//! lists them.

use std::path::PathBuf;

use cairn_core::hex::to_hex;
use cairn_core::{Arity, HashKind};
use cairn_db::Forest;

use crate::args::{KindArgs, parse_arity, parse_hash_kind};
use crate::database;
use crate::failure::Failure;
use crate::json::{Object, array};
use crate::output;

/// The long help of `cairn tree`.
pub(crate) const TREE_ABOUT: &str = "\
Manage the named trees of the cairn database DIR. `cairn tree add DIR NAME --arity N --hash H` \
adds a tree named NAME (1 to 64 bytes of a-z, 0-9, '-', '_', '.', starting with a letter or \
digit) of any kind (--kind lean|imt|indexed, with --depth and --zero for an imt), with its own \
arity, hash, --max-depth and --no-unique, as `cairn init` takes them. Its files go to \
DIR/trees/NAME. A tree of a database of several trees finalizes only explicitly, by block.

DIR is a database made by `cairn init DIR` (without --arity and --hash), or a database of one \
tree made before: adding a tree converts it, its tree named `default` and left where it is \
(docs/file-format.md, \"Database directory of several trees\"). Such a directory must not be \
written by an earlier build afterwards.

--json prints {\"dir\":\"..\",\"tree\":\"NAME\",\"kind\":\"..\",\"arity\":N,\"hash\":\"..\",\"size\":S,\
\"capacity\":C|null,\"rollover\":true|false,\"rule\":\"none|split|whole-batch\"}.

With --capacity LEAVES the tree holds at most that many leaves (an indexed tree's guard counted; \
an imt at most N^depth): full, it refuses more, or with --rollover the next values (of the same \
block, which stays one atomic write) go to a new member NAME/1, then NAME/2, ..., each of the \
same config (Railgun's tree numbers). `--rollover split` (what --rollover alone means) fills \
the full member exactly and puts the rest in the next; `--rollover whole-batch` puts a block's \
values for the family whole in the next member when they do not fit in the last, leaving it \
short, as Railgun's contract starts a new tree for a batch that does not fit (one block per \
batch, then; a batch larger than a member is refused). Writes name the family NAME; reads take NAME (every \
member: `cairn contains` and `cairn prove --leaf` say which) or NAME/K (one member). A family \
with a nullifier set refuses a value any member holds.

Examples:
  cairn tree add db notes --arity 2 --hash poseidon
  cairn tree add db nullifiers --kind indexed --arity 2 --hash poseidon
  cairn tree add db railgun --kind imt --depth 16 --arity 2 --hash poseidon --capacity 65536 --rollover";

/// The long help of `cairn trees`.
pub(crate) const TREES_ABOUT: &str = "\
List the trees of the cairn database DIR, in the order they were added: name, kind, arity, \
hash, size and root, each read-only from its own files (beside a running writer, a tree may \
trail the last block by the writer's catch-up). A database of one tree made before several \
lists one tree, `default`. The members of a family follow it as NAME/1, NAME/2, ... (a member \
a rollback emptied is not listed).

One line per tree: `NAME kind K arity N hash H size S root 0x..|none`. --json prints \
{\"trees\":[{\"name\":\"..\",\"kind\":\"..\",\"arity\":N,\"hash\":\"..\",\"size\":S,\"root\":\"0x..\"|null},..]}.

Examples:
  cairn trees db
  cairn trees db --json";

/// Manage a database's trees.
#[derive(clap::Args, Debug)]
pub struct TreeCmd {
    #[command(subcommand)]
    action: TreeAction,
}

#[derive(clap::Subcommand, Debug)]
enum TreeAction {
    /// Add a named tree of any kind to a database.
    Add(TreeAddCmd),
}

/// Add a named tree.
#[derive(clap::Args, Debug)]
struct TreeAddCmd {
    /// The database directory.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// The tree's name.
    #[arg(value_name = "NAME")]
    name: String,
    /// Children per internal node, 2 to 16.
    #[arg(long, short = 'n', value_name = "N", value_parser = parse_arity)]
    arity: Arity,
    /// Node hash: blake3, sha256, keccak256, poseidon or mimcsponge.
    #[arg(long, value_name = "HASH", value_parser = parse_hash_kind)]
    hash: HashKind,
    /// Refuse appends that would make the tree deeper than D levels (1 to 64; lean trees).
    #[arg(long, value_name = "D", value_parser = clap::value_parser!(u32).range(1..=64))]
    max_depth: Option<u32>,
    #[command(flatten)]
    kind: KindArgs,
    /// Keep no nullifier set: repeated values are accepted, nothing is looked up by value.
    #[arg(long)]
    no_unique: bool,
    /// The most leaves the tree holds (an indexed tree's guard counted; an imt's at most N^depth): a full tree refuses more, or rolls over with --rollover.
    #[arg(long, value_name = "LEAVES")]
    capacity: Option<u64>,
    /// When full, the next values go to a new member NAME/1, NAME/2, ... of the same config (needs --capacity): `split` (the default) fills the full member exactly and puts the rest in the next; `whole-batch` puts a block's values for the family whole in the next member when they do not fit, leaving the full one short (Railgun's rule).
    #[arg(
        long,
        requires = "capacity",
        value_name = "RULE",
        num_args = 0..=1,
        default_missing_value = "split"
    )]
    rollover: Option<RolloverRule>,
    /// Print what was added as one line of JSON.
    #[arg(long)]
    json: bool,
}

/// A family's successor rule.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub(crate) enum RolloverRule {
    /// Fill the full member exactly; the rest goes to the next.
    Split,
    /// A block's values for the family that do not fit go whole to the next member.
    WholeBatch,
}

impl RolloverRule {
    fn rule(self) -> cairn_db::Rollover {
        match self {
            RolloverRule::Split => cairn_db::Rollover::Split,
            RolloverRule::WholeBatch => cairn_db::Rollover::WholeBatch,
        }
    }
}

impl TreeCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        match self.action {
            TreeAction::Add(cmd) => cmd.run(),
        }
    }
}

impl TreeAddCmd {
    fn run(self) -> Result<(), Failure> {
        let (config, tree) = super::init::tree_config(
            self.arity,
            self.hash,
            self.max_depth,
            &self.kind,
            self.no_unique,
            true,
        )?;
        let forest = Forest::open(&self.dir).map_err(database::db_failure)?;
        let rule = self
            .rollover
            .map_or(cairn_db::Rollover::Refuse, RolloverRule::rule);
        let capacity = self.capacity.map(|leaves| cairn_db::Capacity {
            leaves,
            rollover: rule,
        });
        let added = forest.add_tree_with(&self.name, config, capacity);
        let size = added.as_ref().map(|db| db.size()).unwrap_or(0);
        let closed = forest.close();
        added.map_err(database::db_failure)?;
        closed.map_err(database::db_failure)?;
        if self.json {
            return output::line(
                &Object::new()
                    .field("dir", self.dir.display().to_string())
                    .field("tree", self.name.as_str())
                    .field("kind", tree.kind.name())
                    .field("arity", self.arity.as_u64())
                    .field("hash", self.hash.name())
                    .field("size", size)
                    .field("capacity", self.capacity)
                    .field("rollover", rule.rolls_over())
                    .field("rule", rule.name())
                    .finish(),
            );
        }
        let capacity = match self.capacity {
            Some(leaves) if rule.rolls_over() => {
                let whole = if rule == cairn_db::Rollover::WholeBatch {
                    ", a block's values whole in one member"
                } else {
                    ""
                };
                format!(
                    ", capacity {leaves} then {}/1, {}/2, ...{whole}",
                    self.name, self.name
                )
            }
            Some(leaves) => format!(", capacity {leaves}"),
            None => String::new(),
        };
        output::line(&format!(
            "added tree {} to {}: {}, arity {}, hash {}{capacity}",
            self.name,
            self.dir.display(),
            tree.kind.name(),
            self.arity,
            self.hash
        ))
    }
}

/// List a database's trees.
#[derive(clap::Args, Debug)]
pub struct TreesCmd {
    /// The database directory.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// Print the trees as one line of JSON.
    #[arg(long)]
    json: bool,
}

impl TreesCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        let trees = cairn_db::open_trees(&self.dir, cairn_db::OpenOptions::new().lookups(false))
            .map_err(database::db_failure)?;
        let mut rows = Vec::with_capacity(trees.len());
        for cairn_db::ReadTree { name, db, .. } in trees {
            let config = db.tree_config();
            let head = db.head();
            database::close(db)?;
            // A member past a family's first that holds nothing was made
            // for a block that a crash or a rollback took away: no member.
            let empty = u64::from(config.kind == cairn_core::TreeKind::Indexed);
            if name.contains('/') && head.size <= empty {
                continue;
            }
            rows.push((name, config, head));
        }
        if self.json {
            let listed = array(rows.iter().map(|(name, config, head)| {
                Object::new()
                    .field("name", name.as_str())
                    .field("kind", config.kind.name())
                    .field("arity", config.arity.as_u64())
                    .field("hash", config.hash.name())
                    .field("size", head.size)
                    .hash("root", head.root.as_ref())
                    .finish()
            }));
            return output::line(&Object::new().raw("trees", &listed).finish());
        }
        let lines: Vec<String> = rows
            .iter()
            .map(|(name, config, head)| {
                format!(
                    "{name} kind {} arity {} hash {} size {} root {}",
                    config.kind.name(),
                    config.arity,
                    config.hash,
                    head.size,
                    head.root.map_or_else(|| "none".to_owned(), |r| to_hex(&r))
                )
            })
            .collect();
        output::line(&lines.join("\n"))
    }
}
