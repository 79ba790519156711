//! `cairn-vectors`: generates and checks the committed test vectors under
//! `test-vectors/` (`roots.json`, `proofs.json`, `invalid-proofs.json`,
//! `imt.json`, `indexed.json`),
//! cross-checking cairn against independent implementations on the way.
//!
//! ```text
//! cargo run -p cairn-vectors -- generate   # (re)write the vector files
//! cargo run -p cairn-vectors -- check      # exit 1 if a committed file differs
//! ```
//!
//! Every number written is recomputed and compared before it is written: a
//! disagreement between cairn and any implementation is a failure, never an
//! omission. `typescript.json` (from `test-vectors/ts/generate.mjs`) is read,
//! never regenerated, here; so is `railgun.json` (from
//! `test-vectors/ts/railgun.mjs`), whose engine roots are checked against
//! cairn's trees (`railgun.rs`).

mod imt;
mod indexed;
mod invalid;
mod json;
mod peers;
mod proofs;
mod railgun;
mod roots;

use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::{Context, Result, bail, ensure};
use cairn_core::{Hash, HashKind};

use crate::json::{Json, first_difference};
use crate::peers::{LIGHT_POSEIDON_MAX_INPUTS, PeerHashes};

/// Maps `f` over `items` on all cores, keeping the input order.
pub fn par_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len())
        .max(1);
    let next = AtomicUsize::new(0);
    let mut results: Vec<(usize, R)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        done.push((i, f(item)));
                    }
                    done
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, r)| r).collect()
}

/// Checks `typescript.json`'s direct Poseidon vectors against light-poseidon
/// (1..=12 inputs; the generator's own sanity check, cairn is compared with
/// them in `crates/core/tests/it/vectors.rs`). Returns how many it compared.
fn check_typescript_poseidon(peers: &PeerHashes, doc: &serde_json::Value) -> Result<usize> {
    let vectors = doc["poseidon"]
        .as_array()
        .context("typescript.json has no poseidon array")?;
    let mut compared = 0;
    for (i, v) in vectors.iter().enumerate() {
        let parse = |x: &serde_json::Value| -> Result<Hash> {
            Ok(cairn_core::hex::parse_hash(
                x.as_str().context("not a string")?,
            )?)
        };
        let inputs: Vec<Hash> = v["inputs"]
            .as_array()
            .with_context(|| format!("typescript.json poseidon[{i}].inputs"))?
            .iter()
            .map(parse)
            .collect::<Result<_>>()?;
        let output =
            parse(&v["output"]).with_context(|| format!("typescript.json poseidon[{i}].output"))?;
        if inputs.len() <= LIGHT_POSEIDON_MAX_INPUTS {
            let ours = peers.poseidon.hash(&inputs).map_err(anyhow::Error::msg)?;
            ensure!(
                ours == output,
                "DISAGREEMENT: typescript.json poseidon[{i}] ({} inputs): poseidon-lite gives {}, light-poseidon {}",
                inputs.len(),
                cairn_core::hex::to_hex(&output),
                cairn_core::hex::to_hex(&ours)
            );
            compared += 1;
        }
    }
    Ok(compared)
}

/// Everything the generator writes, and what it checked on the way.
struct Generated {
    /// (file name under `test-vectors/`, contents).
    files: Vec<(&'static str, String)>,
    /// One line per file, for stderr.
    summary: Vec<String>,
}

fn generate_all() -> Result<Generated> {
    let leaves = cairn_testkit::vectors::leaves();
    ensure!(
        leaves.len() == 1100,
        "leaves.json holds {} leaves, want 1100",
        leaves.len()
    );
    ensure!(
        leaves.iter().all(|leaf| HashKind::Poseidon.accepts(leaf)),
        "leaves.json has a leaf that is not a canonical BN254 element"
    );
    let peers = PeerHashes::new();
    let typescript = cairn_testkit::vectors::load("typescript.json");
    let ts_roots = roots::load_typescript(&typescript)?;
    let mut summary = Vec::new();
    let compared = check_typescript_poseidon(&peers, &typescript)?;
    summary.push(format!(
        "typescript.json: {compared} poseidon-lite hash vectors agree with light-poseidon"
    ));

    let timed = |start: Instant, s: String| format!("{s} [{:.1}s]", start.elapsed().as_secs_f64());
    let start = Instant::now();
    let (roots_doc, s) = roots::build(&peers, &ts_roots, &leaves)?;
    summary.push(timed(start, s));
    let start = Instant::now();
    let (proofs_doc, s) = proofs::build(&peers, &leaves)?;
    summary.push(timed(start, s));
    let start = Instant::now();
    let (invalid_doc, s) = invalid::build(&leaves)?;
    summary.push(timed(start, s));
    let start = Instant::now();
    let (imt_doc, s) = imt::build(&typescript, &leaves)?;
    summary.push(timed(start, s));
    let start = Instant::now();
    let (indexed_doc, s) = indexed::build(&leaves)?;
    summary.push(timed(start, s));
    let start = Instant::now();
    summary.push(timed(start, railgun::check()?));
    let files = vec![
        ("roots.json", roots_doc.to_pretty()),
        ("proofs.json", proofs_doc.to_pretty()),
        ("invalid-proofs.json", invalid_doc.to_pretty()),
        ("imt.json", imt_doc.to_pretty()),
        ("indexed.json", indexed_doc.to_pretty()),
    ];
    Ok(Generated { files, summary })
}

/// The first difference between the committed `path` and `computed`, or
/// `None` if they are byte-identical.
fn difference(path: &Path, computed: &str) -> Option<String> {
    let committed = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => {
            return Some(format!(
                "cannot read it ({e}); run `cargo run -p cairn-vectors -- generate`"
            ));
        }
    };
    if committed == computed {
        return None;
    }
    let semantic = match (Json::parse(&committed), Json::parse(computed)) {
        (Ok(a), Ok(b)) => first_difference(&a, &b, ""),
        (Err(e), _) => Some(format!("the committed file is not valid JSON ({e})")),
        (_, Err(e)) => Some(format!("the computed file is not valid JSON ({e})")),
    };
    Some(semantic.unwrap_or_else(|| {
        let line = committed
            .lines()
            .zip(computed.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| committed.lines().count().min(computed.lines().count()));
        format!("formatting only, first at line {}", line + 1)
    }))
}

fn run(command: &str) -> Result<bool> {
    let start = Instant::now();
    let Generated { files, summary } = generate_all()?;
    let dir = cairn_testkit::vectors::dir();
    for line in &summary {
        eprintln!("{line}");
    }
    let secs = start.elapsed().as_secs_f64();
    match command {
        "generate" => {
            for (name, text) in &files {
                let path = dir.join(name);
                std::fs::write(&path, text)
                    .with_context(|| format!("writing {}", path.display()))?;
                eprintln!("wrote test-vectors/{name} ({} bytes)", text.len());
            }
            eprintln!("generated in {secs:.1}s");
            Ok(true)
        }
        "check" => {
            for (name, text) in &files {
                if let Some(diff) = difference(&dir.join(name), text) {
                    eprintln!("test-vectors/{name} is stale: {diff}");
                    eprintln!(
                        "regenerate with `cargo run -p cairn-vectors -- generate` (and review the diff)"
                    );
                    return Ok(false);
                }
            }
            eprintln!(
                "test-vectors/{{roots,proofs,invalid-proofs,imt,indexed}}.json are up to date ({secs:.1}s)"
            );
            Ok(true)
        }
        other => bail!("unknown command {other:?}"),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let command = match args.as_slice() {
        [c] if c == "generate" || c == "check" => c.as_str(),
        _ => {
            eprintln!("usage: cairn-vectors generate | check");
            return ExitCode::from(2);
        }
    };
    match run(command) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("cairn-vectors {command} failed: {e:#}");
            ExitCode::FAILURE
        }
    }
}
