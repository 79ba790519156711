//! `cairn update` and `cairn remove`: one leaf of a mutable tree changed
//! durably, printing the old leaf's proof against the root before the
//! change in the formats `cairn prove` prints.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::anyhow;
use cairn_core::Hash;
use cairn_db::{Changed, Proof, ProofFormat as DbFormat};

use super::prove::ProofFormat;
use crate::args::parse_root;
use crate::database::{self, Options};
use crate::failure::{Code, Failure};
use crate::output;

pub const UPDATE_ABOUT: &str = "\
Sets leaf INDEX of a mutable database (`cairn init --mutable`) to VALUE, durably, and prints the \
old leaf's membership proof against the root before the change: the old leaf and its siblings, \
what Semaphore's updateMember and zk-kit's LeanIMT/BinaryIMT update take. The value must be \
new to the tree (not held, not the zero leaf, not removed unless the tree was created with \
--readmit-removed); the leaf must not have been removed. The new head goes to stderr.

--proof-format picks what is printed, as for `cairn prove`: json (the default), zkkit, circom \
or zkkit-circom.

Example:
  cairn init group --arity 2 --hash poseidon --mutable && seq 1 4 | cairn ingest group --format dec && cairn update group 1 0x0000000000000000000000000000000000000000000000000000000000000009 --proof-format zkkit";

pub const REMOVE_ABOUT: &str = "\
Sets leaf INDEX of a mutable database (`cairn init --mutable`) to the zero leaf (0 in a lean \
tree, as zk-kit's LeanIMT removes; the tree's zero value in an imt, as zk-kit's IMT and \
BinaryIMT do), durably, and prints the old leaf's membership proof against the root before the \
change: what Semaphore's removeMember takes. A removed leaf cannot be updated or removed again. \
The new head goes to stderr.

Example:
  cairn init group --arity 2 --hash poseidon --mutable && seq 1 4 | cairn ingest group --format dec && cairn remove group 2";

/// How long a change waits to be durable.
const WAIT: Duration = Duration::from_secs(60);

/// Update one leaf.
#[derive(clap::Args, Debug)]
pub struct UpdateCmd {
    /// The database directory.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// The leaf index.
    #[arg(value_name = "INDEX")]
    index: u64,
    /// The new value (0x and 64 hex digits).
    #[arg(value_name = "VALUE", value_parser = parse_root)]
    value: Hash,
    #[command(flatten)]
    print: Print,
}

/// Remove one leaf.
#[derive(clap::Args, Debug)]
pub struct RemoveCmd {
    /// The database directory.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// The leaf index.
    #[arg(value_name = "INDEX")]
    index: u64,
    #[command(flatten)]
    print: Print,
}

/// How the old leaf's proof is printed.
#[derive(clap::Args, Debug)]
struct Print {
    /// The proof's format (as `cairn prove`).
    #[arg(long, value_enum, value_name = "FORMAT")]
    proof_format: Option<ProofFormat>,
    /// The circuit's maximum depth D, for --proof-format circom or zkkit-circom [default: the tree's depth].
    #[arg(long, value_name = "D")]
    circuit_depth: Option<u32>,
}

impl UpdateCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        let (index, value) = (self.index, self.value);
        change(&self.dir, &self.print, "updated", |db| {
            db.update(index, value, WAIT)
        })
    }
}

impl RemoveCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        let index = self.index;
        change(&self.dir, &self.print, "removed", |db| {
            db.remove(index, WAIT)
        })
    }
}

fn change(
    dir: &std::path::Path,
    print: &Print,
    what: &str,
    apply: impl FnOnce(&cairn_db::Database) -> cairn_db::Result<Changed>,
) -> Result<(), Failure> {
    let format = match print.proof_format.unwrap_or(ProofFormat::Json) {
        ProofFormat::Json => DbFormat::Json,
        ProofFormat::Zkkit => DbFormat::Zkkit,
        ProofFormat::Circom => DbFormat::Circom,
        ProofFormat::ZkkitCircom => DbFormat::ZkkitCircom,
    };
    let db = database::open(dir, Options::default())?;
    let changed = apply(&db);
    database::close(db)?;
    let changed = changed.map_err(database::db_failure)?;
    let proof = Proof::Membership(changed.old.proof.clone());
    let bytes = proof.render(format, print.circuit_depth).map_err(|error| {
        Failure::new(
            Code::Usage,
            anyhow!("cannot print the old leaf's proof: {error}"),
        )
    })?;
    eprintln!(
        "{what} leaf {} (was {}): size {}, root {}",
        changed.old.index,
        cairn_core::hex::to_hex(&changed.old.old),
        changed.head.size,
        changed
            .head
            .root
            .map_or_else(|| "none".to_owned(), |root| cairn_core::hex::to_hex(&root)),
    );
    output::line(&String::from_utf8(bytes).expect("proof JSON is text"))
}
