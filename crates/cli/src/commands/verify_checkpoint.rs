//! `cairn verify-checkpoint`: check a signed checkpoint with a verifier key.

use std::path::PathBuf;

use anyhow::anyhow;
use cairn_core::hex::to_hex;
use cairn_note::{Verifier, open_head};

use crate::args::Source;
use crate::commands::verify::reject;
use crate::failure::{Code, Failure};
use crate::json::Object;
use crate::output;

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Check a signed checkpoint (from `cairn signed-checkpoint` or GET /v1/checkpoint) with the \
verifier key KEY (what `cairn keygen` printed): the note must be a well-formed C2SP signed note \
whose signature by KEY verifies over its text (other signatures, such as witnesses', are \
ignored), the text a tlog-checkpoint whose origin is KEY's name, with exactly one line \
`cairn-tree kind=lean arity=N hash=H`. Reads FILE, or stdin when FILE is - or absent.

On success prints the head it vouches for (size, root, arity, hash), which `cairn verify \
--root R --size S --arity N --hash H` then trusts. Exit 0 valid; 1 invalid (a line `invalid: \
reason`: a malformed note or checkpoint, no signature by KEY, a signature that does not verify \
because the text was changed, another origin); 2 a malformed KEY; 4 an unreadable FILE.

--json prints {\"valid\":true,\"origin\":\"..\",\"size\":S,\"root\":\"0x..\",\"kind\":\"lean\",\
\"arity\":N,\"hash\":\"..\",\"other_signatures\":K} or {\"valid\":false,\"reason\":\"..\"} (exit 1).

Examples:
  cairn keygen --name example.org/db --out db.key > db.vkey && cairn signed-checkpoint db --sign-key db.key > checkpoint.txt && cairn verify-checkpoint --key \"$(cat db.vkey)\" checkpoint.txt
  cairn keygen --name example.org/db --out db.key > db.vkey && cairn signed-checkpoint db --sign-key db.key | cairn verify-checkpoint --key \"$(cat db.vkey)\" --json";

/// Check a signed checkpoint with a verifier key.
#[derive(clap::Args, Debug)]
pub struct VerifyCheckpointCmd {
    /// The verifier key (NAME+ID+KEYDATA, as `cairn keygen` prints it).
    #[arg(long, value_name = "KEY")]
    key: String,
    /// The signed checkpoint (default: stdin).
    #[arg(value_name = "FILE")]
    note: Option<PathBuf>,
    /// Print the verdict as one line of JSON.
    #[arg(long)]
    json: bool,
}

impl VerifyCheckpointCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        let json = self.json;
        self.verify().map_err(|failure| reject(json, failure))
    }

    fn verify(self) -> Result<(), Failure> {
        let verifier = Verifier::parse(self.key.trim())
            .map_err(|e| Failure::new(Code::Usage, anyhow!("--key: {e}")))?;
        let source = Source::from_arg(self.note.as_deref());
        let bytes = source.read()?;
        let text = std::str::from_utf8(&bytes).map_err(|e| {
            Failure::rejected(anyhow!(
                "malformed note: {} is not UTF-8 (byte {})",
                source.name(),
                e.valid_up_to()
            ))
        })?;
        let head = open_head(text, &verifier).map_err(Failure::rejected)?;
        let other_signatures = cairn_note::note::open(text, std::slice::from_ref(&verifier))
            .map_or(0, |note| note.unverified.len());
        if self.json {
            return output::line(
                &Object::new()
                    .field("valid", true)
                    .field("origin", head.origin.as_str())
                    .field("size", head.size)
                    .field("root", to_hex(&head.root))
                    .field("kind", head.tree.kind.name())
                    .field("arity", head.tree.arity.as_u64())
                    .field("hash", head.tree.hash.name())
                    .field("other_signatures", other_signatures as u64)
                    .finish(),
            );
        }
        output::line(&format!(
            "valid: {} signed size {}, root {}, arity {}, hash {}",
            head.origin,
            head.size,
            to_hex(&head.root),
            head.tree.arity,
            head.tree.hash,
        ))
    }
}
