//! `cairn verify-consistency`: check a consistency proof against two trusted heads.

use std::path::PathBuf;

use cairn_core::hex::Hex;
use cairn_core::{Arity, Hash, HashKind, TreeHead};

use super::verify::{db_heads, reject};
use crate::args::{KindArgs, Source, file_tree, parse_arity, parse_hash_kind, parse_root};
use crate::failure::{Code, Failure};
use crate::json::Object;
use crate::{output, proof_file};

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Check a consistency proof (JSON or binary): the tree of --old-size leaves with --old-root is a \
prefix of the tree of --new-size leaves with --new-root. Prints \"valid: ...\" and exits 0, or \
prints \"invalid: <reason>\" on stderr and exits 1. A proof file that is not a well-formed proof \
also exits 1.

The empty lean tree has no root: omit --old-root exactly when --old-size is 0 (and --new-root \
exactly when --new-size is 0). A proof from size 0 is empty and checks no new root: the empty \
tree is a prefix of every tree. The trusted tree is lean unless --kind imt --depth D [--zero Z] \
names a fixed-depth tree, whose empty tree's root is its top zero hash: --old-root may then be \
omitted at size 0 and is checked against it if given.

With --db DIR the arity, the hash, the kind and both trusted heads come from the cairn database in DIR: the heads at --old-size and --new-size if given, else at the proof's own sizes (the database computes the root of any size it has reached; a size beyond it is invalid). --arity, --hash, the kind options, --old-root and --new-root are then refused.

--json prints {\"valid\":true,\"old_size\":S1,\"old_root\":\"0x..\"|null,\"new_size\":S2,\"new_root\":\"0x..\"|null} or, for a proof that does not verify or is malformed, {\"valid\":false,\"reason\":\"..\"} (exit 1, nothing on stderr).

Examples:
  cairn verify-consistency --arity 3 --hash sha256 --old-size 4 \\
      --old-root 0x2add4c442d58e2e04fdad95c32fc2715c6619f5effa9dd1fa6d5fdbce4ac07dd \\
      --new-size 7 --new-root 0x3e3999cd6a77a34ae09f0d40912e365683144ad848f0d3f1c576737fdc43c920 c.bin
  cairn consistency db --from 4 | cairn verify-consistency --db db";

/// Check a consistency proof against two trusted heads.
#[derive(clap::Args, Debug)]
pub struct VerifyConsistencyCmd {
    /// Take the arity, the hash and both trusted heads from this cairn database.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["arity", "hash", "kind", "depth", "zero", "old_root", "new_root"])]
    db: Option<PathBuf>,
    /// Children per internal node, 2 to 16.
    #[arg(long, short = 'n', value_name = "N", value_parser = parse_arity, required_unless_present = "db")]
    arity: Option<Arity>,
    /// Node hash: blake3, sha256, keccak256, poseidon or mimcsponge.
    #[arg(long, value_name = "HASH", value_parser = parse_hash_kind, required_unless_present = "db")]
    hash: Option<HashKind>,
    #[command(flatten)]
    kind: KindArgs,
    /// The trusted older root; omitted when --old-size is 0.
    #[arg(long, value_name = "R1", value_parser = parse_root)]
    old_root: Option<Hash>,
    /// The trusted older size (with --db: default the proof's).
    #[arg(long, value_name = "S1", required_unless_present = "db")]
    old_size: Option<u64>,
    /// The trusted newer root; omitted when --new-size is 0.
    #[arg(long, value_name = "R2", value_parser = parse_root)]
    new_root: Option<Hash>,
    /// The trusted newer size (with --db: default the proof's).
    #[arg(long, value_name = "S2", required_unless_present = "db")]
    new_size: Option<u64>,
    /// Print the verdict as one line of JSON.
    #[arg(long)]
    json: bool,
    /// The proof file; - or nothing reads stdin.
    #[arg(value_name = "PROOF_FILE")]
    proof: Option<PathBuf>,
}

/// The head `--{which}-size` and `--{which}-root` describe; a root is
/// required exactly when the size is not 0. A fixed-depth tree's empty
/// head has a root (`empty`): the given one, else that.
fn head(
    which: &str,
    size: u64,
    root: Option<Hash>,
    empty: Option<Hash>,
) -> Result<TreeHead, Failure> {
    match (size, root) {
        (0, None) => Ok(TreeHead {
            size: 0,
            root: empty,
        }),
        (0, Some(root)) if empty.is_some() => Ok(TreeHead {
            size: 0,
            root: Some(root),
        }),
        (0, Some(_)) => Err(Failure::new(
            Code::Usage,
            anyhow::anyhow!(
                "--{which}-root must be omitted when --{which}-size is 0: the empty tree has no root"
            ),
        )),
        (size, None) => Err(Failure::new(
            Code::Usage,
            anyhow::anyhow!("--{which}-root is required when --{which}-size is {size}"),
        )),
        (size, Some(root)) => Ok(TreeHead::new(size, root)),
    }
}

fn describe(head: &TreeHead) -> String {
    match &head.root {
        Some(root) if head.size > 0 => {
            format!("the tree of size {} with root {}", head.size, Hex(root))
        }
        Some(root) => format!("the empty tree (root {})", Hex(root)),
        None => "the empty tree".to_owned(),
    }
}

impl VerifyConsistencyCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        let json = self.json;
        self.verify().map_err(|failure| reject(json, failure))
    }

    fn verify(self) -> Result<(), Failure> {
        let (config, old, new, proof) = match &self.db {
            Some(dir) => {
                let proof = proof_file::consistency(&Source::from_arg(self.proof.as_deref()))?;
                let old_size = self.old_size.unwrap_or(proof.old_size());
                let new_size = self.new_size.unwrap_or(proof.new_size());
                let (config, heads) = db_heads(
                    dir,
                    &[
                        (old_size, self.old_size.is_some(), "old-size"),
                        (new_size, self.new_size.is_some(), "new-size"),
                    ],
                )?;
                (config, heads[0], heads[1], proof)
            }
            None => {
                let config = file_tree(self.arity, self.hash, &self.kind, "verify-consistency")?;
                let (Some(old_size), Some(new_size)) = (self.old_size, self.new_size) else {
                    unreachable!("clap requires --old-size and --new-size without --db")
                };
                let empty = config.empty_root();
                let old = head("old", old_size, self.old_root, empty)?;
                let new = head("new", new_size, self.new_root, empty)?;
                let proof = proof_file::consistency(&Source::from_arg(self.proof.as_deref()))?;
                (config, old, new, proof)
            }
        };
        proof
            .verify_with(&config, &old, &new)
            .map_err(Failure::rejected)?;
        if self.json {
            return output::line(
                &Object::new()
                    .field("valid", true)
                    .field("old_size", old.size)
                    .hash("old_root", old.root.as_ref())
                    .field("new_size", new.size)
                    .hash("new_root", new.root.as_ref())
                    .finish(),
            );
        }
        let mut message = format!(
            "valid: {} is a prefix of {}",
            describe(&old),
            describe(&new)
        );
        if old.size == 0 && new.size > 0 {
            message.push_str(" (trivially: a proof from size 0 checks no root)");
        }
        output::line(&message)
    }
}
