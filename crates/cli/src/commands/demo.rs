//! `cairn demo`: the main job end to end on a real database, with each
//! step's time and figure.
//!
//! The leaves are those of `crates/core/examples/tornado.rs` (BLAKE3 of the
//! big-endian index with the top three bits cleared: canonical BN254 field
//! elements, valid under every hash), so every root the demo prints is
//! reproducible and the in-memory example computes the same ones.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::anyhow;
use cairn_core::hex::to_hex;
use cairn_core::{Arity, Hash, HashKind, TreeConfig, TreeHead};
use cairn_db::{At, Database, DbConfig, DbError, DuplicateOf, Proof};

use crate::args::{parse_arity, parse_hash_kind};
use crate::database;
use crate::failure::{Code, Failure};
use crate::json::{Object, array};
use crate::output;
use crate::units::{group, human_bytes};

/// The size of the whole Tornado Cash mainnet deposit history.
pub const DEPOSITS: u64 = 278_827;

/// The second batch, appended after the first head.
pub const SECOND_BATCH: u64 = 10_000;

/// The most leaves `--leaves` takes.
const MAX_DEMO_LEAVES: u64 = 1 << 26;

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Run the main job end to end on a real, durable database and print each step's time and figure:

  create      a database (arity --arity, hash --hash, with its nullifier set) in DIR, or in a
              temporary directory removed at the end
  generate    278,827 leaves (the size of the whole Tornado Cash mainnet deposit history):
              deterministic pseudo-random field elements, leaf i = BLAKE3(i as 8 big-endian
              bytes) with the top three bits cleared, so every root printed is reproducible (they
              are the leaves of `cargo run -p cairn-core --example tornado`)
  ingest      them in one durable commit (write + fdatasync), then hash the tree (root)
  checkpoint  the upper levels and the nullifier set
  prove       a membership proof of leaf 92,942 (278,827 / 3) and verify it against the head
  append      a second batch of 10,000 leaves durably, prove consistency from the first head to
              the second, verify it, and roll the membership proof forward to the new head
  refuse      a batch holding a value already present (`cairn ingest` exits 3): nothing appended
  reopen      the database after closing it (timed), check its root, and look a value up

The defaults (arity 2, Poseidon) are a LeanIMT of the shape Semaphore v4 and Privacy Pools \
use: a binary tree of a circuit-friendly hash, which is what privacy protocols prove membership \
in. It holds as many leaves as Tornado Cash's deposit history, but it is not Tornado's tree \
(MiMCSponge over a fixed depth of 20, empty positions zero-padded), so its roots differ from \
Tornado's; `cairn init --kind imt` creates that shape (see `cairn init --help`). Poseidon costs about \
20 us a hash on one core, so hashing the 278,827 leaves dominates: the demo takes about 3 s on \
an idle two-core machine (release build), more on a busy one. --hash blake3 --arity 4 runs it \
in about 0.2 s.

--json prints {\"leaves\":L,\"second_batch\":10000,\"arity\":N,\"hash\":\"..\",\"dir\":\"..\",\
\"kept\":true|false,\"steps\":[{\"step\":\"..\",\"seconds\":t,\"bytes\":B|null,\"root\":\"0x..\"|null,\
\"figure\":\"..\"},..],\"root\":\"0x..\",\"total_seconds\":t}, with steps named create, generate, \
ingest, root, checkpoint, prove, verify, append, consistency, verify_consistency, roll_forward, \
duplicate, close, reopen, lookup and disk.

Examples:
  cairn demo
  cairn demo --hash blake3 --arity 4
  cairn demo ./demo-db --json";

/// Run the main job end to end and print each step's figures.
#[derive(clap::Args, Debug)]
pub struct DemoCmd {
    /// Where to create the database (must not exist or be empty; kept afterwards). Default: a
    /// temporary directory, removed at the end.
    #[arg(value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Children per internal node, 2 to 16.
    #[arg(long, short = 'n', value_name = "N", value_parser = parse_arity, default_value = "2")]
    arity: Arity,
    /// Node hash: blake3, sha256, keccak256, poseidon or mimcsponge.
    #[arg(long, value_name = "HASH", value_parser = parse_hash_kind, default_value = "poseidon")]
    hash: HashKind,
    /// Leaves in the first batch (default: the Tornado Cash mainnet deposit count).
    #[arg(long, value_name = "L", value_parser = parse_demo_leaves, default_value = "278827")]
    leaves: u64,
    /// Print the steps as one line of JSON at the end instead of a table.
    #[arg(long)]
    json: bool,
}

fn parse_demo_leaves(text: &str) -> Result<u64, String> {
    match crate::commands::plan::parse_leaves(text) {
        Ok(n) if n <= MAX_DEMO_LEAVES => Ok(n),
        _ => Err(format!(
            "{text:?} is not a demo size: want a whole number of leaves from 1 to 2^26"
        )),
    }
}

/// Leaf `index` of the demo (and of the tornado example).
pub fn leaf(index: u64) -> Hash {
    let mut leaf = *blake3::hash(&index.to_be_bytes()).as_bytes();
    leaf[0] &= 0x1f; // below 2^253: a canonical BN254 scalar, valid for Poseidon too
    leaf
}

/// One row of the report.
#[derive(Debug)]
struct Step {
    id: &'static str,
    label: String,
    time: Option<Duration>,
    bytes: Option<u64>,
    root: Option<Hash>,
    figure: String,
}

/// The rows so far; the table prints each as it completes.
#[derive(Debug)]
struct Report {
    json: bool,
    steps: Vec<Step>,
}

impl Report {
    fn add(&mut self, step: Step) -> Result<(), Failure> {
        if !self.json {
            output::line(&format!(
                "{:<38} {:>10}  {}",
                step.label,
                step.time.map_or_else(|| "-".to_owned(), seconds),
                step.figure
            ))?;
        }
        self.steps.push(step);
        Ok(())
    }
}

/// `d` with three significant figures in a fitting unit.
fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{:.1} us", s * 1e6)
    }
}

/// Runs `f`, timing it.
fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let value = f();
    (value, start.elapsed())
}

/// A step that went wrong: the demo's own checks failed (exit 1) or the
/// database did (its own code).
fn broke(step: &str, error: impl std::fmt::Display) -> Failure {
    Failure::new(Code::Invalid, anyhow!("demo step {step} failed: {error}"))
}

fn db_broke(step: &str, error: DbError) -> Failure {
    let code = database::db_code(&error);
    Failure::new(code, anyhow!("demo step {step} failed: {error}"))
}

fn short(hash: &Hash) -> String {
    let hex = to_hex(hash);
    format!("{}..{}", &hex[..10], &hex[hex.len() - 4..])
}

impl DemoCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        let started = Instant::now();
        let temp;
        let (dir, kept) = match &self.dir {
            Some(dir) => (dir.clone(), true),
            None => {
                temp = tempfile::Builder::new()
                    .prefix("cairn-demo-")
                    .tempdir()
                    .map_err(|e| {
                        Failure::new(
                            Code::Input,
                            anyhow!("cannot create a temporary directory: {e}"),
                        )
                    })?;
                (temp.path().join("db"), false)
            }
        };
        let config = TreeConfig::new(self.arity, self.hash);
        let (db, time) = timed(|| Database::create(&dir, DbConfig::new(config)));
        let db = db.map_err(database::db_failure)?;
        if !self.json {
            output::line(&format!(
                "cairn demo: {} leaves (the Tornado Cash mainnet deposit count{}) then {} more, arity {}, {}, in {}{}\n\
                 {} code path on this CPU: {}\n",
                group(self.leaves),
                if self.leaves == DEPOSITS {
                    ""
                } else {
                    " is 278,827"
                },
                group(SECOND_BATCH),
                self.arity,
                self.hash,
                dir.display(),
                if kept { "" } else { " (removed at the end)" },
                self.hash,
                self.hash.kernel_name(),
            ))?;
            output::line(&format!("{:<38} {:>10}  figure", "step", "time"))?;
        }
        let mut report = Report {
            json: self.json,
            steps: Vec::new(),
        };
        report.add(Step {
            id: "create",
            label: "create database".into(),
            time: Some(time),
            bytes: None,
            root: None,
            figure: format!("{}", dir.display()),
        })?;
        let root = self.steps(db, &dir, &mut report)?;
        let total = started.elapsed();
        if self.json {
            let steps = array(report.steps.iter().map(|s| {
                Object::new()
                    .field("step", s.id)
                    .field("seconds", s.time.map(|t| t.as_secs_f64()))
                    .field("bytes", s.bytes)
                    .hash("root", s.root.as_ref())
                    .field("figure", s.figure.as_str())
                    .finish()
            }));
            return output::line(
                &Object::new()
                    .field("leaves", self.leaves)
                    .field("second_batch", SECOND_BATCH)
                    .field("arity", self.arity.as_u64())
                    .field("hash", self.hash.name())
                    .field("dir", dir.display().to_string())
                    .field("kept", kept)
                    .raw("steps", &steps)
                    .hash("root", Some(&root))
                    .field("total_seconds", total.as_secs_f64())
                    .field("hash_kernel", self.hash.kernel_name())
                    .finish(),
            );
        }
        output::line(&format!(
            "{:<38} {:>10}  final root {}",
            "total",
            seconds(total),
            to_hex(&root)
        ))
    }

    /// Runs every step; returns the final root.
    fn steps(&self, db: Database, dir: &Path, report: &mut Report) -> Result<Hash, Failure> {
        let (arity, hash) = (self.arity, self.hash);
        let n = self.leaves;

        let (all, time) = timed(|| (0..n + SECOND_BATCH + 1).map(leaf).collect::<Vec<Hash>>());
        let (history, rest) = all.split_at(n as usize);
        let (batch, fresh) = rest.split_at(SECOND_BATCH as usize);
        report.add(Step {
            id: "generate",
            label: format!("generate {} leaves", group(n)),
            time: Some(time),
            bytes: Some(n * 32),
            root: None,
            figure: format!("{} of pseudo-random field elements", human_bytes(n * 32)),
        })?;

        let (appended, time) = timed(|| db.append(history)?.wait(&db, Duration::from_secs(3600)));
        let appended = appended.map_err(|e| db_broke("ingest", e))?;
        let (usage, _) = database::usage(dir)?;
        report.add(Step {
            id: "ingest",
            label: format!("ingest {} leaves, durable", group(appended.count)),
            time: Some(time),
            bytes: Some(usage.log),
            root: None,
            figure: format!(
                "one commit (write + fdatasync), {} leaves/s, log {} on disk",
                group((n as f64 / time.as_secs_f64().max(1e-9)) as u64),
                human_bytes(usage.log)
            ),
        })?;

        let (old, time) = timed(|| db.head());
        let old_root = old
            .root
            .ok_or_else(|| broke("root", "the tree has no root"))?;
        report.add(Step {
            id: "root",
            label: format!(
                "hash the tree (depth {})",
                cairn_core::shape::depth(n, arity)
            ),
            time: Some(time),
            bytes: None,
            root: Some(old_root),
            figure: format!("root {}", to_hex(&old_root)),
        })?;

        let (written, time) = timed(|| db.checkpoint());
        written.map_err(|e| db_broke("checkpoint", e))?;
        let (usage, _) = database::usage(dir)?;
        report.add(Step {
            id: "checkpoint",
            label: "checkpoint".into(),
            time: Some(time),
            bytes: Some(usage.levels + usage.checkpoint + usage.set),
            root: None,
            figure: format!(
                "levels {}, nullifier set {} on disk",
                human_bytes(usage.levels + usage.checkpoint),
                human_bytes(usage.set)
            ),
        })?;

        let index = n / 3;
        let (proof, time) = timed(|| db.prove(index, At::Durable));
        let proof = membership(proof).map_err(|e| broke("prove", e))?;
        let proof_bytes = proof.to_bytes().len() as u64;
        report.add(Step {
            id: "prove",
            label: format!("prove leaf {}", group(index)),
            time: Some(time),
            bytes: Some(proof_bytes),
            root: None,
            figure: format!("{proof_bytes} B binary, {} B JSON", proof.to_json().len()),
        })?;

        let (verified, time) = timed(|| proof.verify(arity, hash, &old));
        verified.map_err(|e| broke("verify", e))?;
        report.add(Step {
            id: "verify",
            label: "verify membership".into(),
            time: Some(time),
            bytes: None,
            root: Some(old_root),
            figure: format!("valid against size {}, root {}", group(n), short(&old_root)),
        })?;

        let (new, time) = timed(|| {
            db.append(batch)?.wait(&db, Duration::from_secs(3600))?;
            Ok::<_, DbError>(db.head())
        });
        let new = new.map_err(|e| db_broke("append", e))?;
        let new_root = new
            .root
            .ok_or_else(|| broke("append", "the tree has no root"))?;
        report.add(Step {
            id: "append",
            label: format!("append {} more, durable", group(SECOND_BATCH)),
            time: Some(time),
            bytes: None,
            root: Some(new_root),
            figure: format!("size {}, root {}", group(new.size), to_hex(&new_root)),
        })?;

        let (consistency, time) = timed(|| db.prove_consistency(old.size, Some(new.size)));
        let consistency = consistency.map_err(|e| broke("consistency", e))?;
        let consistency_bytes = consistency.to_bytes().len() as u64;
        report.add(Step {
            id: "consistency",
            label: format!(
                "prove consistency {} -> {}",
                group(old.size),
                group(new.size)
            ),
            time: Some(time),
            bytes: Some(consistency_bytes),
            root: None,
            figure: format!("{consistency_bytes} B binary"),
        })?;

        let (verified, time) = timed(|| consistency.verify(arity, hash, &old, &new));
        verified.map_err(|e| broke("verify_consistency", e))?;
        report.add(Step {
            id: "verify_consistency",
            label: "verify consistency".into(),
            time: Some(time),
            bytes: None,
            root: Some(new_root),
            figure: format!("{} is a prefix of {}", short(&old_root), short(&new_root)),
        })?;

        let (rolled, time) = timed(|| {
            let rolled = consistency.roll_forward(&proof, arity, hash, &old, &new)?;
            rolled.verify(arity, hash, &new)?;
            Ok::<_, cairn_core::VerifyError>(rolled)
        });
        let rolled = rolled.map_err(|e| broke("roll_forward", e))?;
        let fresh_proof =
            membership(db.prove(index, At::Durable)).map_err(|e| broke("roll_forward", e))?;
        if rolled != fresh_proof {
            return Err(broke(
                "roll_forward",
                "the rolled-forward proof differs from a fresh proof at the new head",
            ));
        }
        report.add(Step {
            id: "roll_forward",
            label: "roll the proof forward, verify".into(),
            time: Some(time),
            bytes: Some(rolled.to_bytes().len() as u64),
            root: Some(new_root),
            figure: format!(
                "{} B, equal to a fresh proof at size {}",
                rolled.to_bytes().len(),
                group(new.size)
            ),
        })?;

        let repeated = history[index as usize];
        let attempt = [fresh[0], repeated];
        let (refused, time) = timed(|| db.append(&attempt));
        match refused {
            Err(DbError::Duplicates { duplicates, .. })
                if duplicates.len() == 1
                    && duplicates[0].position == 1
                    && duplicates[0].of == DuplicateOf::Leaf(index) => {}
            Err(error) => return Err(broke("duplicate", error)),
            Ok(_) => {
                return Err(broke("duplicate", "a batch repeating a leaf was accepted"));
            }
        }
        if db.size() != new.size || db.index_of(&fresh[0]).map_or(true, |i| i.is_some()) {
            return Err(broke("duplicate", "a refused batch changed the database"));
        }
        report.add(Step {
            id: "duplicate",
            label: "refuse a duplicate".into(),
            time: Some(time),
            bytes: None,
            root: None,
            figure: format!(
                "{} is already leaf {}: batch refused, nothing appended",
                short(&repeated),
                group(index)
            ),
        })?;

        let (closed, time) = timed(|| db.close());
        closed.map_err(|e| db_broke("close", e))?;
        report.add(Step {
            id: "close",
            label: "close".into(),
            time: Some(time),
            bytes: None,
            root: None,
            figure: "flushed, lock released".into(),
        })?;

        let (db, time) = timed(|| Database::open(dir));
        let db = db.map_err(|e| db_broke("reopen", e))?;
        let head: TreeHead = db.head();
        if head != new {
            return Err(broke(
                "reopen",
                format!(
                    "reopened at size {} with root {:?}, want size {} root {}",
                    head.size,
                    head.root.map(|r| to_hex(&r)),
                    new.size,
                    to_hex(&new_root)
                ),
            ));
        }
        report.add(Step {
            id: "reopen",
            label: "reopen".into(),
            time: Some(time),
            bytes: None,
            root: Some(new_root),
            figure: format!(
                "root matches at size {} (checkpoint mapped, the {} leaves after it replayed from the log)",
                group(head.size),
                group(head.size - old.size)
            ),
        })?;

        let (found, time) = timed(|| db.index_of(&repeated));
        match found {
            Ok(Some(found)) if found == index => {}
            other => {
                return Err(broke(
                    "lookup",
                    format!("found {other:?}, want leaf {index}"),
                ));
            }
        }
        report.add(Step {
            id: "lookup",
            label: "look a value up".into(),
            time: Some(time),
            bytes: None,
            root: None,
            figure: format!("{} is leaf {}", short(&repeated), group(index)),
        })?;
        db.close().map_err(|e| db_broke("close", e))?;

        let (usage, _) = database::usage(dir)?;
        report.add(Step {
            id: "disk",
            label: "on disk".into(),
            time: None,
            bytes: Some(usage.total()),
            root: None,
            figure: format!(
                "{} total: log {}, levels {}, nullifier set {}",
                human_bytes(usage.total()),
                human_bytes(usage.log),
                human_bytes(usage.levels + usage.checkpoint),
                human_bytes(usage.set)
            ),
        })?;
        Ok(new_root)
    }
}

/// The membership proof of a lean database's proof.
fn membership(proof: Result<Proof, DbError>) -> Result<cairn_core::MembershipProof, String> {
    match proof.map_err(|e| e.to_string())? {
        Proof::Membership(proof) => Ok(proof),
        other => Err(format!("{} of a lean tree", other.describe())),
    }
}
