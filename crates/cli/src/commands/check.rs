//! `cairn check`: verify every level of a database and its nullifier set.

use std::path::PathBuf;

use anyhow::anyhow;
use cairn_db::{Checked, DbError, NodeMismatch};

use crate::database::{self, Options};
use crate::failure::{Code, Failure};
use crate::json::Object;
use crate::output;
use crate::units::group;

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Verify the cairn database DIR in full: open it (every file's header and checksum; every page of \
stored nodes, the leaves included, against its sum; the log's frames after the last checkpoint \
against their checksums and against what the log's tail records and the heads file say was \
durable), recompute every level above the leaves from the level below and compare it with what \
is stored, then check the nullifier set against the leaves (every leaf found at its index, \
nothing else in the set). Reports the first problem with its file and byte offset.

Exit status: 0 every check passed; 4 the database is damaged or could not be opened: a file is \
missing, unreadable, malformed or fails its checksum, or acknowledged data is lost (the message \
names the file and offset); 1 a stored node or set entry is wrong although its checksum holds \
(a node that is not the hash of its children, a leaf missing from the set): what a faulty \
writer, not a damaged disk, leaves. The check opens the database read-only, so it runs beside a \
server or an ingest on the same directory (on what was durable when it started; beside a writer \
it cannot judge the frames of the last commits). Every command that opens a database refuses \
the same damage with exit 4; the check also recomputes.

--json prints {\"ok\":true|false,\"size\":S|null,\"depth\":d|null,\"set_checked\":true|false,\
\"error\":\"..\"|null,\"file\":\"..\"|null,\"offset\":B|null} on stdout, also when a check fails \
(the one-line error still goes to stderr).

Examples:
  cairn check db
  cairn check --json db";

/// Verify every level and the nullifier set.
#[derive(clap::Args, Debug)]
pub struct CheckCmd {
    /// The database directory.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// The tree of a database of several trees (default: the one named default, or the only one).
    #[arg(long, value_name = "NAME")]
    tree: Option<String>,
    /// Print the result as one line of JSON.
    #[arg(long)]
    json: bool,
}

/// What a check found.
struct Outcome {
    size: Option<u64>,
    depth: Option<u32>,
    set_checked: bool,
    /// What was checked beyond the levels, once the database opened.
    checked: Option<Checked>,
    error: Option<(Code, DbError)>,
    /// Where the children of a node that does not match them are.
    hint: Option<String>,
}

/// Where the children of a node that is not the hash of its children are,
/// in words: the node is wrong, or one of its children is (a flipped leaf
/// in the log shows up as a wrong node of level 1).
fn children(mismatch: &NodeMismatch) -> String {
    let children = &mismatch.children;
    format!(
        "the node or one of its children is wrong: its children are nodes {}..{} of level {}, in {} from offset {}",
        children.first,
        children.end,
        children.level,
        children.file.display(),
        children.offset
    )
}

impl CheckCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        let outcome = self.check(&database::tree_dir(&self.dir, self.tree.as_deref())?);
        let error = outcome.error.as_ref().map(|(code, error)| {
            let what = if *code == Code::Invalid {
                "check failed"
            } else {
                "cannot open"
            };
            let hint = outcome
                .hint
                .as_ref()
                .map_or_else(String::new, |hint| format!(" ({hint})"));
            (
                *code,
                format!("{}: {what}: {error}{hint}", self.dir.display()),
            )
        });
        if self.json {
            let location = outcome
                .error
                .as_ref()
                .and_then(|(_, error)| error.corrupt_location());
            output::line(
                &Object::new()
                    .field("ok", outcome.error.is_none())
                    .field("size", outcome.size)
                    .field("depth", outcome.depth)
                    .field("set_checked", outcome.set_checked)
                    .field("error", error.as_ref().map(|(_, m)| m.clone()))
                    .field(
                        "file",
                        location
                            .as_ref()
                            .map(|(path, _)| path.display().to_string()),
                    )
                    .field("offset", location.map(|(_, offset)| offset))
                    .finish(),
            )?;
        }
        match error {
            Some((code, message)) => Err(Failure::new(code, anyhow!(message))),
            None if self.json => Ok(()),
            None => output::line(&format!(
                "ok: {} leaves; every level recomputed and equal to the stored one; {}",
                group(outcome.size.unwrap_or(0)),
                match outcome.checked {
                    Some(Checked::Set) => "the nullifier set holds exactly the leaves",
                    Some(Checked::Values) =>
                        "the indexed tree rebuilt from the log's values (each nonzero, canonical and held once)",
                    _ => "no nullifier set to check (created with --no-unique)",
                }
            )),
        }
    }

    fn check(&self, tree_dir: &std::path::Path) -> Outcome {
        let mut outcome = Outcome {
            size: None,
            depth: None,
            set_checked: false,
            checked: None,
            error: None,
            hint: None,
        };
        let verify = Options {
            background: false,
            verify: true,
        };
        let db = match database::open_read_only_raw(tree_dir, verify) {
            Ok(db) => db,
            Err(error) => {
                // A node the verification found wrong (1), or a database
                // that does not open at all (4).
                let code = match error.node_mismatch() {
                    Some(mismatch) => {
                        outcome.hint = Some(children(mismatch));
                        Code::Invalid
                    }
                    None => database::db_code(&error),
                };
                outcome.error = Some((code, error));
                return outcome;
            }
        };
        let head = db.head();
        outcome.size = Some(head.size);
        outcome.depth = Some(db.tree_config().depth_at(head.size));
        match db.check() {
            Ok(checked) => {
                outcome.set_checked = checked == Checked::Set;
                outcome.checked = Some(checked);
            }
            Err(error) => {
                let code = if error.corrupt_location().is_some() {
                    Code::Invalid
                } else {
                    database::db_code(&error)
                };
                outcome.error = Some((code, error));
            }
        }
        if let Err(error) = db.close()
            && outcome.error.is_none()
        {
            let code = database::db_code(&error);
            outcome.error = Some((code, error));
        }
        outcome
    }
}
