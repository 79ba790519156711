//! `cairn contains`: whether a database holds a value, and where.

use std::path::PathBuf;

use anyhow::anyhow;
use cairn_core::Hash;
use cairn_core::hex::Hex;
use cairn_db::Operation;

use crate::args::parse_root;
use crate::database::{self, Options};
use crate::failure::{Code, Failure};
use crate::json::Object;
use crate::output;
use crate::units::group;

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Look a value up in the cairn database DIR through its nullifier set (one table probe, confirmed \
against the leaf: never a scan, never a false answer), or an indexed database's sorted leaves. A \
value no leaf can be (not canonical for a field hash) is refused (exit 4). Present: prints its leaf index (from 0) \
and exits 0. Absent: prints \"absent: ...\" on stderr and exits 1. A database \
created with --no-unique keeps no set and cannot answer (exit 2).

--json prints {\"leaf\":\"0x..\",\"present\":true|false,\"index\":I|null,\"size\":S} on stdout in \
both cases (exit 0 present, 1 absent, nothing on stderr).

With --tree NAME naming a family (a tree added with --capacity), every member is searched and \
the answer is `K I`: the member (Railgun's tree number; `NAME/K` is its name) and the index in \
it; --json prints {\"leaf\",\"present\",\"tree\":\"NAME/K\",\"member\":K,\"index\":I}. \
--tree NAME/K looks in that member alone.

Examples:
  cairn contains db 0x0000000000000000000000000000000000000000000000000000000000000005
  cairn contains db \"$NULLIFIER\" 2>/dev/null && echo spent
  index=$(cairn contains db \"$COMMITMENT\")";

/// Whether a database holds a value.
#[derive(clap::Args, Debug)]
pub struct ContainsCmd {
    /// The database directory.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// The tree of a database of several trees (default: the one named default, or the only one).
    #[arg(long, value_name = "NAME")]
    tree: Option<String>,
    /// The value, 0x and 64 hex digits.
    #[arg(value_name = "0x..", value_parser = parse_root)]
    leaf: Hash,
    /// Print the answer as one line of JSON.
    #[arg(long)]
    json: bool,
}

impl ContainsCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        if let Some(tree) = &self.tree
            && database::is_family(&self.dir, Some(tree))?
        {
            return self.run_family(tree);
        }
        let db = database::open_tree(&self.dir, self.tree.as_deref(), Options::default())?.db;
        let found = db
            .lookup(std::slice::from_ref(&self.leaf))
            .map_err(database::db_failure)?;
        // Where the tree proves absence, say how.
        let proves_absence = db.supports(Operation::AbsenceProof).is_ok();
        database::close(db)?;
        let (index, size) = (found.indices[0], found.size);
        if self.json {
            output::line(
                &Object::new()
                    .hash("leaf", Some(&self.leaf))
                    .field("present", index.is_some())
                    .field("index", index)
                    .field("size", size)
                    .finish(),
            )?;
            return match index {
                Some(_) => Ok(()),
                None => Err(Failure::quiet(Code::Invalid, anyhow!("absent"))),
            };
        }
        match index {
            Some(index) => output::line(&index.to_string()),
            None => Err(Failure::verdict(
                "absent",
                anyhow!(
                    "{} is not among the {} leaves of {}{}",
                    Hex(&self.leaf),
                    group(size),
                    self.dir.display(),
                    if proves_absence {
                        format!(
                            " (`cairn prove {} --absent {}` proves it)",
                            self.dir.display(),
                            Hex(&self.leaf)
                        )
                    } else {
                        String::new()
                    }
                ),
            )),
        }
    }

    /// A family (a tree added with a capacity): every member searched,
    /// the answer naming the member (Railgun's tree number) and index.
    fn run_family(&self, tree: &str) -> Result<(), Failure> {
        let found = database::locate(&self.dir, tree, &self.leaf)?;
        if self.json {
            let (name, member, index) = match &found {
                Some((name, member, _, index)) => (Some(name.as_str()), *member, Some(*index)),
                None => (None, None, None),
            };
            output::line(
                &Object::new()
                    .hash("leaf", Some(&self.leaf))
                    .field("present", found.is_some())
                    .field("tree", name)
                    .field("member", member.map(u64::from))
                    .field("index", index)
                    .finish(),
            )?;
            return match found {
                Some(_) => Ok(()),
                None => Err(Failure::quiet(Code::Invalid, anyhow!("absent"))),
            };
        }
        match found {
            Some((_, member, _, index)) => {
                output::line(&format!("{} {index}", member.unwrap_or(0)))
            }
            None => Err(Failure::verdict(
                "absent",
                anyhow!(
                    "{} is in no member of {tree} in {}",
                    Hex(&self.leaf),
                    self.dir.display()
                ),
            )),
        }
    }
}
