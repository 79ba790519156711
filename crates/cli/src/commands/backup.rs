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
    /// Print the result as one line of JSON.
    #[arg(long)]
    json: bool,
}

impl BackupCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        let started = Instant::now();
        let db = database::open_read_only(&self.dir, Options::default())?;
        let backup = db.backup_to(&self.dest).map_err(database::db_failure)?;
        database::close(db)?;
        let key = signing::database_key_path(&self.dir);
        let signer_key = if !key.exists() {
            None
        } else if self.with_sign_key {
            let signer = signing::read_key(&key)?;
            signing::install(&self.dest, &signer, false)?;
            Some("copied")
        } else {
            Some("left out")
        };
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
