//! The corruption campaign: a database with a checkpoint, mapped segments
//! (tiers), tagged heads, frames after the checkpoint and a nullifier set;
//! a byte flipped, a range zeroed, the file cut or deleted, at seeded
//! random offsets in every file. Every case must end in exactly one of:
//! the same answers as before (root, heads, every value at its index,
//! proofs that verify against the old root, every value refused again),
//! or a refusal naming the damaged file; both by a plain open and by the
//! open `cairn check` makes. Never a wrong answer or a value accepted
//! again. For a database stopped without a close (a `kill -9`), the one
//! loss a single disk cannot tell from a crash is also allowed: the last
//! commit, and only it.
//!
//! `CAIRN_CORRUPTION_CASES` (cases per file and damage, default 4) and
//! `CAIRN_CORRUPTION_SEED` size and seed a run; the counts per file and
//! outcome are printed (`--nocapture`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cairn_core::{Hash, TreeHead};
use cairn_db::{At, Database, Db, DbConfig, DbError, OpenOptions, Proof};
use cairn_store::BlockTag;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::support::*;

/// Values appended before the checkpoint: two whole 2 MiB segments of
/// leaves (mapped from the log at open) and part of a third log file.
const BEFORE: u64 = 150_000;
/// Tagged blocks after the checkpoint, and values in each.
const BLOCKS_AFTER: u64 = 4;
const PER_BLOCK: u64 = 100;
const WAIT: std::time::Duration = std::time::Duration::from_secs(30);

fn campaign_config() -> DbConfig {
    let mut config = config(4, cairn_core::HashKind::Blake3);
    // 2^16 leaves per log file: a whole segment of leaves per file, so the
    // leaves below the checkpoint are mapped, not read.
    config.store.log_shift = 16;
    config.store.tier_below = 1;
    config
}

/// Everything a database answered before the damage.
struct Answers {
    head: TreeHead,
    /// The head before the last commit.
    head_before_last: TreeHead,
    heads: Vec<cairn_store::TaggedHead>,
    values: Vec<Hash>,
    /// Values of the last commit (what an unclean stop may lose).
    last_commit: usize,
}

/// Builds the database in `dir`: blocks of values tagged, the checkpoint,
/// more tagged blocks after it. With `close`, closed (sealed); without,
/// left as a `kill -9` leaves it (the handle leaked: no seal, no record).
fn build(dir: &Path, close: bool) -> Answers {
    let db = Db::create(dir, campaign_config()).unwrap();
    let values: Vec<Hash> = (0..BEFORE + BLOCKS_AFTER * PER_BLOCK)
        .map(|i| value(7, i))
        .collect();
    let mut block = 1;
    for chunk in values[..BEFORE as usize].chunks(50_000) {
        db.append_tagged(chunk, BlockTag::number(block))
            .unwrap()
            .token
            .wait(WAIT)
            .unwrap();
        block += 1;
    }
    db.checkpoint().unwrap();
    let mut head_before_last = db.head();
    for chunk in values[BEFORE as usize..].chunks(PER_BLOCK as usize) {
        head_before_last = db.head();
        db.append_tagged(chunk, BlockTag::number(block))
            .unwrap()
            .token
            .wait(WAIT)
            .unwrap();
        block += 1;
    }
    let answers = Answers {
        head: db.head(),
        head_before_last,
        heads: db.heads(0, usize::MAX),
        values,
        last_commit: PER_BLOCK as usize,
    };
    assert!(
        db.stats()
            .store
            .tiered_segments
            .first()
            .copied()
            .unwrap_or(0)
            >= 2,
        "the campaign's database maps its leaves"
    );
    if close {
        db.close().unwrap();
    } else {
        std::mem::forget(db);
    }
    answers
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Every file of the database (relative paths), the lock file aside.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n != "LOCK") {
                out.push(path.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Damage {
    Flip,
    Zero,
    Cut,
    Delete,
}

/// Where in a file the bytes that decide the most are: a log file's header
/// page and its frames, the heads file's records (not the zeroed slots
/// reserved after them), everything of other files.
// A list of ranges, some of one range: not a range collected.
#[allow(clippy::single_range_in_vec_init)]
fn hot(name: &str, len: u64, frames: u64, records: u64) -> Vec<std::ops::Range<u64>> {
    if name.ends_with(".log") {
        vec![0..len.min(4096), frames.min(len)..len]
    } else if name == "heads" {
        vec![0..len.min(64 + 128 * (records + 1))]
    } else {
        vec![0..len]
    }
}

/// An offset in a file of `len` bytes: a quarter of the time anywhere, the
/// rest in its hot ranges.
fn offset(rng: &mut ChaCha8Rng, len: u64, hot: &[std::ops::Range<u64>]) -> u64 {
    let ranges: Vec<_> = hot.iter().filter(|r| !r.is_empty()).collect();
    if len == 0 {
        return 0;
    }
    if ranges.is_empty() || rng.gen_range(0..4) == 0 {
        return rng.gen_range(0..len);
    }
    let range = ranges[rng.gen_range(0..ranges.len())];
    rng.gen_range(range.clone())
}

/// Applies `damage` to `path`; a description of what was done.
fn apply(
    path: &Path,
    damage: Damage,
    rng: &mut ChaCha8Rng,
    hot: &[std::ops::Range<u64>],
) -> String {
    let mut bytes = std::fs::read(path).unwrap();
    let len = bytes.len() as u64;
    let at = offset(rng, len, hot);
    match damage {
        Damage::Flip if len > 0 => {
            let bit = rng.gen_range(0..8);
            bytes[at as usize] ^= 1 << bit;
            std::fs::write(path, &bytes).unwrap();
            format!("bit {bit} of byte {at} flipped")
        }
        Damage::Zero if len > 0 => {
            let end = (at + rng.gen_range(1..=512)).min(len);
            bytes[at as usize..end as usize].fill(0);
            std::fs::write(path, &bytes).unwrap();
            format!("bytes {at}..{end} zeroed")
        }
        Damage::Cut => {
            std::fs::write(path, &bytes[..at as usize]).unwrap();
            format!("cut to {at} bytes")
        }
        Damage::Delete | Damage::Flip | Damage::Zero => {
            std::fs::remove_file(path).unwrap();
            "deleted".to_owned()
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    /// Opened, every answer as before.
    Same,
    /// Refused, naming the damaged file.
    Refused,
    /// Opened without the last commit (an unclean stop only).
    LastCommit,
}

/// What a database answers, against what it answered before; `Err` with
/// what differs. Whether it lost the last commit (its leaves, or only its
/// tag) is returned; checking that only an unclean stop may is the
/// caller's. With `writable`, every acknowledged value is also offered
/// again and must be refused.
fn compare(db: &Database, want: &Answers, writable: bool) -> Result<bool, String> {
    let head = db.head();
    let (kept, lost_leaves) = if head == want.head {
        (want.values.len(), false)
    } else if head == want.head_before_last {
        (want.values.len() - want.last_commit, true)
    } else {
        return Err(format!("head {head:?}, want {:?}", want.head));
    };
    let found = db.lookup(&want.values).map_err(|e| e.to_string())?.indices;
    for (i, found) in found.iter().enumerate() {
        let expect = (i < kept).then_some(i as u64);
        if *found != expect {
            return Err(format!("value {i} found at {found:?}"));
        }
    }
    let config = db.tree_config();
    for &i in &[0, 1, 65_535, 65_536, 131_071, 149_999, 150_001, kept - 1] {
        let proof = match db.prove(i as u64, At::Durable) {
            Ok(Proof::Membership(proof)) => proof,
            other => return Err(format!("proof of leaf {i}: {other:?}")),
        };
        proof
            .verify_with(&config, &head)
            .map_err(|e| format!("proof of leaf {i}: {e}"))?;
    }
    let heads = db.heads(0, usize::MAX).map_err(|e| e.to_string())?;
    let lost_tag = if heads == want.heads {
        false
    } else if heads == want.heads[..want.heads.len() - 1] {
        true
    } else {
        return Err(format!(
            "{} tagged heads, want {}",
            heads.len(),
            want.heads.len()
        ));
    };
    if lost_leaves && !lost_tag {
        return Err("the last commit's leaves were lost but not its tag".to_owned());
    }
    // Nothing acknowledged is accepted again (but what an unclean stop
    // lost, which is not acknowledged as far as the disk can tell).
    if writable {
        let again = db
            .append_new(&want.values[..kept])
            .map_err(|e| e.to_string())?;
        if again.appended().is_some() {
            return Err("acknowledged values were accepted again".to_owned());
        }
    }
    Ok(lost_tag)
}

/// Opens a damaged copy twice (as `cairn check` does: read-only,
/// recomputing; then as a writer) and classifies the result.
fn judge(dir: &Path, damaged: &Path, want: &Answers, unclean: bool) -> Result<Outcome, String> {
    let name = damaged.file_name().unwrap().to_string_lossy().into_owned();
    let refusal = |error: DbError| -> Result<Outcome, String> {
        let text = error.to_string();
        if text.contains(&name) {
            Ok(Outcome::Refused)
        } else {
            Err(format!("refused without naming {name}: {text}"))
        }
    };
    let check = OpenOptions::new()
        .read_only(true)
        .background(false)
        .verify(true)
        .open(dir);
    let checked = match check {
        Ok(db) => {
            let result = compare(&db, want, false);
            db.close().map_err(|e| e.to_string())?;
            Some(result.map_err(|e| format!("check: {e}"))?)
        }
        Err(error) => {
            refusal(error).map_err(|e| format!("check: {e}"))?;
            None
        }
    };
    let opened = OpenOptions::new().background(false).open(dir);
    let outcome = match opened {
        Ok(db) => {
            let lost = compare(&db, want, true)?;
            drop(db);
            if checked.is_none() {
                return Err("the check refused what a plain open serves".to_owned());
            }
            if lost && !unclean {
                return Err("a closed database lost its last commit".to_owned());
            }
            if lost {
                Outcome::LastCommit
            } else {
                Outcome::Same
            }
        }
        Err(error) => {
            if checked.is_some() {
                return Err(format!(
                    "the check passed what a plain open refuses: {error}"
                ));
            }
            refusal(error)?
        }
    };
    Ok(outcome)
}

fn campaign(unclean: bool) {
    let cases = cairn_testkit::env_u64("CAIRN_CORRUPTION_CASES", 4);
    let seed = cairn_testkit::env_u64("CAIRN_CORRUPTION_SEED", 0x5eed_c0de);
    let root = tempfile::tempdir().unwrap();
    let pristine = root.path().join("pristine");
    let want = build(&pristine, !unclean);
    let frames = 4096 + 32 * (1u64 << 16);
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ u64::from(unclean));
    let mut counts: BTreeMap<(String, Damage, Outcome), u64> = BTreeMap::new();
    let mut failures = Vec::new();
    for file in files(&pristine) {
        for damage in [Damage::Flip, Damage::Zero, Damage::Cut, Damage::Delete] {
            let runs = if damage == Damage::Delete { 1 } else { cases };
            for run in 0..runs {
                let dir = root.path().join("case");
                let _ = std::fs::remove_dir_all(&dir);
                copy_dir(&pristine, &dir);
                let name = file.file_name().unwrap().to_string_lossy();
                let len = std::fs::metadata(dir.join(&file)).unwrap().len();
                let hot = hot(&name, len, frames, want.heads.len() as u64);
                let what = apply(&dir.join(&file), damage, &mut rng, &hot);
                match judge(&dir, &dir.join(&file), &want, unclean) {
                    Ok(outcome) => {
                        *counts
                            .entry((file.display().to_string(), damage, outcome))
                            .or_default() += 1;
                    }
                    Err(why) => failures.push(format!(
                        "{} ({damage:?} {run}: {what}): {why}",
                        file.display()
                    )),
                }
            }
        }
    }
    eprintln!(
        "corruption campaign ({}, seed {seed:#x}, {cases} cases per file and damage):",
        if unclean { "killed" } else { "closed" }
    );
    for ((file, damage, outcome), count) in &counts {
        eprintln!("  {file:28} {damage:7?} {outcome:10?} {count}");
    }
    let total: u64 = counts.values().sum();
    eprintln!("  {total} cases, {} failed", failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn damage_to_a_closed_database_is_refused_or_harmless() {
    campaign(false);
}

#[test]
fn damage_to_a_killed_database_loses_at_most_its_last_commit() {
    campaign(true);
}
