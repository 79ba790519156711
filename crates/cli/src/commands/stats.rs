//! `cairn stats`: what a database is and what it holds, in memory and on disk.

use std::path::PathBuf;

use cairn_core::hex::to_hex;
use cairn_core::level::SEGMENT_LEN;
use cairn_core::{TreeKind, shape};
use cairn_db::{Database, FileBytes};

use crate::database::{self, Options};
use crate::failure::Failure;
use crate::json::{Object, array};
use crate::output;
use crate::units::{group, human_bytes};

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Print what the cairn database in DIR is and holds: its arity, hash, kind (lean, or imt with its \
fixed depth and zero value), maximum depth and format \
version; its size (leaves), durable size, depth and root; the last checkpoint (its number and \
the leaves it covers); the nullifier set (values, slots, resident bytes, leaves its checkpoint \
file covers); each level's nodes and how many of its 2 MiB segments are served from file \
mappings (tiered) rather than held in memory; and the bytes of its files by kind.

Bytes on disk are allocated blocks (log files are sparse: a log file's apparent length counts \
its whole leaf region from creation); apparent lengths are in --json's \"file_bytes\". Resident \
bytes count 32 bytes per node not served from a mapping, plus the set's table.

--json prints one line:
  {\"dir\":\"..\",\"format_version\":1,\"arity\":N,\"hash\":\"..\",\"max_depth\":D|null,\"unique\":true|false,
   \"log_file_leaves\":L,\"size\":S,\"durable_size\":S,\"depth\":d,\"root\":\"0x..\"|null,
   \"checkpoint_number\":C,\"checkpoint_size\":S,\"finalized_size\":F,\"tagged_heads\":T,
   \"set\":{\"values\":V,\"slots\":V,\"memory_bytes\":B,\"checkpoint_size\":S}|null,
   \"levels\":[{\"level\":0,\"nodes\":n,\"segments\":s,\"tiered_segments\":t,\"resident_bytes\":B},..],
   \"resident_bytes\":B,
   \"disk_bytes\":{\"log\":B,\"levels\":B,\"checkpoint\":B,\"set\":B,\"meta\":B,\"other\":B,\"total\":B},
   \"file_bytes\":{..the same keys..},\"kind\":\"lean\"|\"imt\",\"zero\":\"0x..\"|null}
(checkpoint_number 0: no checkpoint yet).

Examples:
  cairn stats db
  cairn stats --json db | jq .disk_bytes.total";

/// Print a database's figures.
#[derive(clap::Args, Debug)]
pub struct StatsCmd {
    /// The database directory.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// The tree of a database of several trees (default: the one named default, or the only one).
    #[arg(long, value_name = "NAME")]
    tree: Option<String>,
    /// Print the figures as one line of JSON.
    #[arg(long)]
    json: bool,
}

/// One level's figures.
#[derive(Debug)]
struct LevelFigures {
    level: u32,
    nodes: u64,
    segments: u64,
    tiered: u64,
    resident_bytes: u64,
}

impl StatsCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        let opened = database::open_tree(&self.dir, self.tree.as_deref(), Options::default())?;
        let (dir, db) = (opened.dir, opened.db);
        // What there is to report differs by kind: an indexed tree's values
        // and guard; a lean or imt tree's levels, tiering and set.
        if db.kind() == TreeKind::Indexed {
            return self.indexed(db);
        }
        let meta = db.config().clone();
        let stats = db.stats();
        let head = db.head();
        database::close(db)?;
        let (disk, apparent) = database::usage(&dir)?;
        let tree = meta.tree();
        let depth = tree.depth_at(head.size);
        let levels: Vec<LevelFigures> = if head.size == 0 {
            Vec::new()
        } else {
            (0..=depth)
                .map(|level| {
                    let nodes = shape::level_len(head.size, tree.arity, level);
                    let segments = nodes.div_ceil(SEGMENT_LEN as u64);
                    let tiered = stats
                        .store
                        .tiered_segments
                        .get(level as usize)
                        .map_or(0, |&t| t as u64);
                    let resident_bytes =
                        (nodes * 32).saturating_sub(tiered * SEGMENT_LEN as u64 * 32);
                    LevelFigures {
                        level,
                        nodes,
                        segments,
                        tiered,
                        resident_bytes,
                    }
                })
                .collect()
        };
        let set_memory = stats.set.map_or(0, |s| s.memory_bytes);
        let resident = levels.iter().map(|l| l.resident_bytes).sum::<u64>() + set_memory;
        if self.json {
            let set = match stats.set {
                Some(set) => Object::new()
                    .field("values", set.values)
                    .field("slots", set.slots)
                    .field("memory_bytes", set.memory_bytes)
                    .field("checkpoint_size", stats.set_checkpoint_size)
                    .finish(),
                None => "null".to_owned(),
            };
            let levels = array(levels.iter().map(|l| {
                Object::new()
                    .field("level", l.level)
                    .field("nodes", l.nodes)
                    .field("segments", l.segments)
                    .field("tiered_segments", l.tiered)
                    .field("resident_bytes", l.resident_bytes)
                    .finish()
            }));
            return output::line(
                &Object::new()
                    .field("dir", self.dir.display().to_string())
                    .field("format_version", super::init::format_version(&tree))
                    .field("arity", tree.arity.as_u64())
                    .field("hash", tree.hash.name())
                    .field("max_depth", tree.max_depth)
                    .field("unique", meta.unique)
                    .field("log_file_leaves", meta.log_file_leaves())
                    .field("size", head.size)
                    .field("durable_size", stats.store.durable)
                    .field("depth", depth)
                    .hash("root", head.root.as_ref())
                    .field("checkpoint_number", stats.store.checkpoint_number)
                    .field("checkpoint_size", stats.store.checkpoint_size)
                    .field("finalized_size", stats.store.finalized)
                    .field("tagged_heads", stats.store.tagged_heads)
                    .raw("set", &set)
                    .raw("levels", &levels)
                    .field("resident_bytes", resident)
                    .raw("disk_bytes", &database::usage_json(&disk))
                    .raw("file_bytes", &database::usage_json(&apparent))
                    .field("kind", tree.kind.name())
                    .hash("zero", tree.kind.zero().as_ref())
                    .finish(),
            );
        }
        let mut rows: Vec<(&str, String)> = vec![
            ("database", self.dir.display().to_string()),
            (
                "format",
                format!("version {}", super::init::format_version(&tree)),
            ),
            ("arity", tree.arity.to_string()),
            ("hash", tree.hash.to_string()),
            (
                "kind",
                match tree.kind.fixed_depth() {
                    Some(fixed) => format!(
                        "imt (fixed depth {fixed}, zero {})",
                        tree.kind.zero().map(|z| to_hex(&z)).unwrap_or_default()
                    ),
                    None => "lean".to_owned(),
                },
            ),
            (
                "max depth",
                tree.max_depth
                    .map_or_else(|| "none".to_owned(), |d| d.to_string()),
            ),
            (
                "size",
                format!(
                    "{} leaves ({} durable)",
                    group(head.size),
                    group(stats.store.durable)
                ),
            ),
            ("depth", depth.to_string()),
            (
                "root",
                head.root
                    .map_or_else(|| "none (the tree is empty)".to_owned(), |r| to_hex(&r)),
            ),
            (
                "checkpoint",
                if stats.store.checkpoint_number == 0 {
                    "none yet".to_owned()
                } else {
                    format!(
                        "number {}, covering {} leaves",
                        stats.store.checkpoint_number,
                        group(stats.store.checkpoint_size)
                    )
                },
            ),
            (
                "finality",
                format!(
                    "{} leaves final; {} block-tagged heads",
                    group(stats.store.finalized),
                    group(stats.store.tagged_heads)
                ),
            ),
            (
                "nullifier set",
                match stats.set {
                    Some(set) => format!(
                        "{} values in {} slots, {} in memory; its checkpoint covers {} leaves",
                        group(set.values),
                        group(set.slots),
                        human_bytes(set.memory_bytes),
                        group(stats.set_checkpoint_size)
                    ),
                    None => "none (created with --no-unique)".to_owned(),
                },
            ),
        ];
        for l in &levels {
            rows.push((
                if l.level == 0 { "levels" } else { "" },
                format!(
                    "{:>2}: {} nodes, {} of {} segments tiered, {} resident",
                    l.level,
                    group(l.nodes),
                    l.tiered,
                    l.segments,
                    human_bytes(l.resident_bytes)
                ),
            ));
        }
        rows.push((
            "resident",
            format!("{} (levels and set)", human_bytes(resident)),
        ));
        rows.push(("disk", describe(&disk)));
        let mut text = String::new();
        for (key, value) in rows {
            text.push_str(&format!("{key:<14}{value}\n"));
        }
        output::line(text.trim_end())
    }
}

impl StatsCmd {
    /// An indexed database's figures: its values (the tree's size counts
    /// the guard leaf too), head, depth, checkpoint of the log and
    /// finalized size.
    fn indexed(&self, db: Database) -> Result<(), Failure> {
        let head = db.head();
        let config = db.tree_config();
        let stats = db.stats();
        let finalized = db.finalized_size();
        database::close(db)?;
        let root = head
            .root
            .expect("an indexed tree always has its guard leaf");
        let depth = config.depth_at(head.size);
        if self.json {
            return output::line(
                &Object::new()
                    .field("kind", "indexed")
                    .field("arity", config.arity.as_u64())
                    .field("hash", config.hash.name())
                    .field("size", head.size)
                    .field("values", head.size - 1)
                    .hash("root", Some(&root))
                    .field("depth", u64::from(depth))
                    .field("checkpoint_size", stats.store.checkpoint_size)
                    .field("finalized_size", finalized)
                    .finish(),
            );
        }
        output::line(&format!(
            "indexed tree: arity {}, hash {}, {} values (size {} with the guard leaf), depth {depth}, root {}\ncheckpoint: {} values of the log",
            config.arity,
            config.hash,
            group(head.size - 1),
            head.size,
            to_hex(&root),
            group(stats.store.checkpoint_size),
        ))
    }
}

/// Bytes by kind, in words.
fn describe(usage: &FileBytes) -> String {
    format!(
        "{} total: log {}, levels {}, checkpoint {}, set {}, meta {}, other {}",
        human_bytes(usage.total()),
        human_bytes(usage.log),
        human_bytes(usage.levels),
        human_bytes(usage.checkpoint),
        human_bytes(usage.set),
        human_bytes(usage.meta),
        human_bytes(usage.other),
    )
}
