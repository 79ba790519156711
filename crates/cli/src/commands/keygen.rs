//! `cairn keygen`: a new Ed25519 signer key for signed checkpoints.

use std::path::PathBuf;

use anyhow::anyhow;
use cairn_note::Signer;
use cairn_note::file::write_signer_key;

use crate::failure::{Code, Failure};
use crate::json::Object;
use crate::output;
use crate::signing::key_failure;

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Generate an Ed25519 key that signs a database's checkpoints (C2SP signed notes). The signer \
(private) key goes to FILE, readable by its owner only (mode 0600; an existing FILE is refused); \
the verifier (public) key is printed on stdout: give it to whoever verifies the checkpoints \
(`cairn verify-checkpoint --key`, the TypeScript package's verifyCheckpoint, any C2SP note \
verifier).

NAME names the log: it is the origin line of every checkpoint the key signs, and should be a \
URL without scheme that identifies this tree, such as example.org/deposits (no spaces, no '+'). \
The key texts are those of Go's golang.org/x/mod/sumdb/note: the signer key is \
PRIVATE+KEY+NAME+ID+KEYDATA, the verifier key NAME+ID+KEYDATA, ID being 8 hex digits of the key \
ID (SHA-256 of the name, a newline, 0x01 and the public key).

Then `cairn init DIR --sign-key FILE` or `cairn sign-key DIR FILE` make a database sign with it.

--json prints {\"name\":\"..\",\"key_id\":\"8 hex digits\",\"verifier_key\":\"..\",\"signer_key_file\":\"..\"}.

Examples:
  cairn keygen --name example.org/deposits --out deposits.key
  cairn keygen --name example.org/deposits --out deposits.key --json";

/// Generate a key that signs checkpoints.
#[derive(clap::Args, Debug)]
pub struct KeygenCmd {
    /// The log's name: the origin of the checkpoints it signs (example.org/deposits).
    #[arg(long, value_name = "NAME")]
    name: String,
    /// Where to write the signer (private) key; must not exist.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Print the result as one line of JSON.
    #[arg(long)]
    json: bool,
}

impl KeygenCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        let signer = Signer::generate(&self.name).map_err(key_failure)?;
        if self.out.exists() {
            return Err(Failure::new(
                Code::Usage,
                anyhow!(
                    "{} already exists: refusing to overwrite it (it may hold a key in use)",
                    self.out.display()
                ),
            ));
        }
        write_signer_key(&self.out, &signer, false).map_err(key_failure)?;
        let verifier = signer.verifier().to_string();
        if self.json {
            return output::line(
                &Object::new()
                    .field("name", signer.name())
                    .field("key_id", format!("{:08x}", signer.id()))
                    .field("verifier_key", verifier.as_str())
                    .field("signer_key_file", self.out.display().to_string())
                    .finish(),
            );
        }
        output::line(&verifier)
    }
}
