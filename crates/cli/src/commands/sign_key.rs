//! `cairn sign-key`: make a database sign its checkpoints with a key.

use std::path::PathBuf;

use anyhow::anyhow;
use cairn_db::Operation;

use crate::database;
use crate::failure::{Code, Failure};
use crate::json::Object;
use crate::output;
use crate::signing::{self, Installed};

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Give the cairn database DIR the signer key in FILE (from `cairn keygen`): a copy goes to \
DIR/signer.key (mode 0600), from which `cairn serve` signs GET /v1/checkpoint and `cairn \
signed-checkpoint` signs without --sign-key. A server already running reads it when it next \
starts. The same key again changes nothing; another key is refused unless --replace (verifiers \
that trust the old verifier key then refuse the new checkpoints). Backups leave the key out \
unless `cairn backup --with-sign-key`.

Prints the verifier key checkpoints then verify with.

--json prints {\"dir\":\"..\",\"verifier_key\":\"..\",\"changed\":true|false}.

Examples:
  cairn keygen --name example.org/db --out db.key && cairn sign-key db db.key";

/// Make a database sign its checkpoints with a key.
#[derive(clap::Args, Debug)]
pub struct SignKeyCmd {
    /// The database directory.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// The signer key file (`cairn keygen --out FILE`).
    #[arg(value_name = "FILE")]
    key: PathBuf,
    /// Replace a different key the database already has.
    #[arg(long)]
    replace: bool,
    /// Print the result as one line of JSON.
    #[arg(long)]
    json: bool,
}

impl SignKeyCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        if !database::is_database(&self.dir) {
            return Err(Failure::new(
                Code::Input,
                anyhow!(
                    "{} is not a cairn database (no {})",
                    self.dir.display(),
                    database::META_FILE
                ),
            ));
        }
        Operation::SignedCheckpoint
            .check(database::stored(&self.dir)?.tree().kind)
            .map_err(database::db_failure)?;
        let signer = signing::read_key(&self.key)?;
        let installed = signing::install(&self.dir, &signer, self.replace)?;
        let verifier = signer.verifier().to_string();
        if self.json {
            return output::line(
                &Object::new()
                    .field("dir", self.dir.display().to_string())
                    .field("verifier_key", verifier.as_str())
                    .field("changed", installed != Installed::Same)
                    .finish(),
            );
        }
        let what = match installed {
            Installed::New => "now signs",
            Installed::Same => "already signs",
            Installed::Replaced => "now signs (the old key was replaced)",
        };
        output::line(&format!(
            "{} {what} its checkpoints with the key whose verifier key is {verifier}",
            self.dir.display()
        ))
    }
}
