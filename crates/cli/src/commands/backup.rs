//! `cairn backup`: a consistent copy of a database, also while it is served.

use std::path::PathBuf;
use std::time::Instant;

use cairn_core::hex::to_hex;

use crate::database::{self, Options};
use crate::failure::Failure;
use crate::json::Object;
use crate::output;
use crate::signing;
use crate::units::group;

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Copy the cairn database DIR into DEST (created; it must not exist or be empty), also while \
`cairn serve` or an ingest is appending to DIR: DIR is opened read-only, and DEST receives the \
leaves that were durable when the backup started, the tagged heads among them, the finalized \
size and the nullifier set, with a fresh checkpoint, so that it opens at once. Appends to DIR \
are never stopped. Only used bytes are written: a backup is about as large as the database's \
allocated size, never its sparse log files' apparent size. DEST is a normal database: `cairn \
check DEST` verifies it, `cairn serve DEST` serves it (restore by serving or moving DEST).

The database's signer key (DIR/signer.key) is a secret, and stays out of the copy unless \
--with-sign-key (then DEST/signer.key, mode 0600): a restored copy signs again once given the \
key (`cairn sign-key DEST FILE` with the file from `cairn keygen`, or `cairn serve DEST \
--sign-key FILE`).

Prints the size and root of the copy and the bytes written.

--json prints {\"dest\":\"..\",\"size\":S,\"root\":\"0x..\"|null,\"tagged_heads\":T,\"bytes\":B,\
\"seconds\":s,\"signer_key\":\"copied\"|\"left out\"|null} (null: DIR has no key).

Examples:
  cairn backup db db-backup
  cairn backup --json db db-copy";

/// Copy a database consistently, also while it is served.
#[derive(clap::Args, Debug)]
pub struct BackupCmd {
    /// The database directory.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// Where the copy goes (created; must not exist or be empty).
    #[arg(value_name = "DEST")]
    dest: PathBuf,
    /// Copy the database's signer key too (by default a backup leaves the secret out).
    #[arg(long)]
    with_sign_key: bool,
    /// Of a database of several trees: copy only this tree, as a database of one tree.
    #[arg(long, value_name = "NAME")]
    tree: Option<String>,
    /// Print the result as one line of JSON.
    #[arg(long)]
    json: bool,
}

impl BackupCmd {
    /// The signer key: copied, left out, or none to copy.
    fn signer_key(&self) -> Result<Option<&'static str>, Failure> {
        let key = signing::database_key_path(&self.dir);
        Ok(if !key.exists() {
            None
        } else if self.with_sign_key {
            let signer = signing::read_key(&key)?;
            signing::install(&self.dest, &signer, false)?;
            Some("copied")
        } else {
            Some("left out")
        })
    }

    /// A database of several trees, whole.
    fn run_forest(&self, started: Instant) -> Result<(), Failure> {
        let backup = crate::commands::forest_tiles::backup_forest(&self.dir, &self.dest)?;
        let signer_key = self.signer_key()?;
        let seconds = started.elapsed().as_secs_f64();
        if self.json {
            let trees: Vec<String> = backup
                .trees
                .iter()
                .map(|(name, head)| {
                    Object::new()
                        .field("tree", name.as_str())
                        .field("size", head.size)
                        .field("root", head.root.map(|r| to_hex(&r)))
                        .finish()
                })
                .collect();
            return output::line(
                &Object::new()
                    .field("dest", self.dest.display().to_string())
                    .field("block", backup.block)
                    .raw("trees", &format!("[{}]", trees.join(",")))
                    .field("bytes", backup.bytes)
                    .field("seconds", seconds)
                    .field("signer_key", signer_key)
                    .finish(),
            );
        }
        output::line(&format!(
            "backed up {} trees to {}{}: {} bytes written",
            backup.trees.len(),
            self.dest.display(),
            backup
                .block
                .map_or_else(String::new, |b| format!(" at block {b}")),
            group(backup.bytes)
        ))?;
        for (name, head) in &backup.trees {
            output::line(&format!(
                "  {name}: size {}, root {}",
                head.size,
                head.root.map_or_else(|| "none".to_owned(), |r| to_hex(&r))
            ))?;
        }
        Ok(())
    }

    pub(crate) fn run(self) -> Result<(), Failure> {
        let started = Instant::now();
        if cairn_db::is_forest(&self.dir) && self.tree.is_none() {
            return self.run_forest(started);
        }
        let backup = match &self.tree {
            Some(name) if cairn_db::is_forest(&self.dir) => {
                let forest = cairn_db::Forest::open(&self.dir).map_err(database::db_failure)?;
                let result = forest
                    .checkpoint()
                    .and_then(|()| forest.tree(name))
                    .and_then(|db| db.backup_to(&self.dest));
                forest.close().map_err(database::db_failure)?;
                result.map_err(database::db_failure)?
            }
            Some(name) if name != cairn_db::DEFAULT_TREE => {
                return Err(Failure::new(
                    crate::failure::Code::Usage,
                    anyhow::anyhow!(
                        "--tree {name}: {} holds one tree, named {}",
                        self.dir.display(),
                        cairn_db::DEFAULT_TREE
                    ),
                ));
            }
            _ => {
                let db = database::open_read_only(&self.dir, Options::default())?;
                let backup = db.backup_to(&self.dest).map_err(database::db_failure)?;
                database::close(db)?;
                backup
            }
        };
        let signer_key = self.signer_key()?;
        let seconds = started.elapsed().as_secs_f64();
        let root = backup.head.root.map(|r| to_hex(&r));
        if self.json {
            return output::line(
                &Object::new()
                    .field("dest", self.dest.display().to_string())
                    .field("size", backup.head.size)
                    .field("root", root)
                    .field("tagged_heads", backup.tagged_heads)
                    .field("bytes", backup.bytes)
                    .field("seconds", seconds)
                    .field("signer_key", signer_key)
                    .finish(),
            );
        }
        output::line(&format!(
            "backed up {} leaves to {}: root {}, {} bytes written",
            group(backup.head.size),
            self.dest.display(),
            root.as_deref().unwrap_or("none (empty tree)"),
            group(backup.bytes)
        ))?;
        if signer_key == Some("left out") {
            output::line(&format!(
                "the signer key was left out (a secret): give the copy one with `cairn sign-key {} FILE`, or back up with --with-sign-key",
                self.dest.display()
            ))?;
        }
        Ok(())
    }
}
