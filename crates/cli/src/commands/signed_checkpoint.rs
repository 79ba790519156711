//! `cairn signed-checkpoint`: the signed note of a database's durable head.

use std::path::PathBuf;

use anyhow::anyhow;
use cairn_core::hex::to_hex;
use cairn_db::Operation;
use cairn_note::{TreeLine, sign_head};

use crate::database;
use crate::failure::{Code, Failure};
use crate::json::Object;
use crate::output;
use crate::signing;

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Print the durable head of the cairn database DIR as a signed checkpoint: a C2SP signed note \
whose text is the tlog-checkpoint body (the origin, which is the key's name; the size; the root \
in base64; the line `cairn-tree kind=lean arity=N hash=H`), signed with Ed25519 by the \
database's key (DIR/signer.key, see `cairn sign-key`) or --sign-key FILE. It is what `GET \
/v1/checkpoint` of `cairn serve` answers, and `cairn verify-checkpoint`, the TypeScript \
package's verifyCheckpoint and any C2SP note verifier check it with the verifier key.

DIR is opened read-only, so this runs beside a server: the head is the one durable when it \
started. --finalized signs the finalized head instead, which no rollback can undo: a log must \
never sign two heads that are not consistent, and a chain follower's heads above the finalized \
size may be rolled back. The empty tree has no root and no checkpoint (exit 1).

--json prints {\"origin\":\"..\",\"size\":S,\"root\":\"0x..\",\"kind\":\"lean\"|\"imt\",\"arity\":N,\
\"hash\":\"..\",\"verifier_key\":\"..\",\"note\":\"the signed note\"}.

Examples:
  cairn keygen --name example.org/db --out db.key && cairn signed-checkpoint db --sign-key db.key
  cairn keygen --name example.org/db --out db.key && cairn sign-key db db.key && cairn signed-checkpoint db --json";

/// Print the signed checkpoint of a database's durable head.
#[derive(clap::Args, Debug)]
pub struct SignedCheckpointCmd {
    /// The database directory.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// Sign with this key file instead of the database's own (DIR/signer.key).
    #[arg(long, value_name = "FILE")]
    sign_key: Option<PathBuf>,
    /// Sign the finalized head (never rolled back) instead of the durable one.
    #[arg(long)]
    finalized: bool,
    /// Print the result as one line of JSON.
    #[arg(long)]
    json: bool,
}

impl SignedCheckpointCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        // Refused before the key is read: the kind has no signed checkpoints.
        Operation::SignedCheckpoint
            .check(database::stored(&self.dir)?.tree().kind)
            .map_err(database::db_failure)?;
        let signer = signing::key_for(&self.dir, self.sign_key.as_deref())?;
        let db = database::read(&self.dir)?;
        let durable = db.durable();
        let config = db.tree_config();
        let head = if self.finalized {
            db.head_at(durable.finalized)
        } else {
            Ok(durable.head())
        };
        database::close(db)?;
        let head = head.map_err(database::db_failure)?;
        let size = head.size;
        let Some(root) = head.root else {
            return Err(Failure::verdict(
                "empty",
                anyhow!(
                    "the {} tree of {} has no leaves, so no root to sign",
                    if self.finalized {
                        "finalized"
                    } else {
                        "durable"
                    },
                    self.dir.display()
                ),
            ));
        };
        let tree = TreeLine::of(&config).map_err(|e| Failure::new(Code::Usage, e))?;
        let note =
            sign_head(&signer, &tree, size, &root).map_err(|e| Failure::new(Code::Usage, e))?;
        if self.json {
            return output::line(
                &Object::new()
                    .field("origin", signer.name())
                    .field("size", size)
                    .field("root", to_hex(&root))
                    .field("kind", tree.kind.name())
                    .field("arity", config.arity.as_u64())
                    .field("hash", config.hash.name())
                    .field("verifier_key", signer.verifier().to_string())
                    .field("note", note.as_str())
                    .finish(),
            );
        }
        // The note ends in its own newline.
        output::binary(note.as_bytes())
    }
}
