//! `cairn repair`: bytes flipped, zeroed or cut at random offsets in every
//! file of a database with a checkpoint, a nullifier set, block-tagged
//! heads and a tail past what it published to a signed tile store. Each
//! case ends in exactly one of: nothing to repair and the same answers;
//! repaired with the same answers; or a refusal naming the acknowledged
//! leaves or heads lost (damage past the replica) that changes nothing,
//! after which `--accept-loss` repairs to a prefix of the same tree.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use cairn_core::{Arity, Hash, HashKind, LeanImt, TreeConfig, TreeHead};
use cairn_db::{BlockTag, Db, DbConfig, OpenOptions, TaggedHead};

use crate::support::*;

const WAIT: Duration = Duration::from_secs(30);
/// Leaves checkpointed and published, then appended after (the tail the
/// replica does not hold).
const PUBLISHED: usize = 2_000;
const TAIL: usize = 600;

fn config() -> DbConfig {
    let mut config = DbConfig::new(TreeConfig::new(Arity::new(4).unwrap(), HashKind::Blake3));
    config.store.log_shift = 10;
    config.store.flush_interval = None;
    config.store.checkpoint = Default::default();
    config
}

/// Appends `values` in blocks of `per_block` from block `first`.
fn append_blocks(db: &Db, values: &[Hash], per_block: usize, first: u64) {
    for (i, chunk) in values.chunks(per_block).enumerate() {
        db.append_tagged(chunk, BlockTag::number(first + i as u64))
            .unwrap()
            .token
            .wait(WAIT)
            .unwrap();
    }
}

/// What the database answers: its head, its tagged heads, where each of
/// `values` is.
#[derive(Debug, PartialEq, Eq)]
struct Answers {
    head: TreeHead,
    heads: Vec<TaggedHead>,
    found: Vec<Option<u64>>,
}

fn answers(dir: &str, values: &[Hash]) -> Answers {
    let db = OpenOptions::new()
        .read_only(true)
        .background(false)
        .verify(true)
        .open(dir)
        .unwrap_or_else(|e| panic!("{dir} does not open: {e}"));
    let answers = Answers {
        head: db.head(),
        heads: db.heads(0, usize::MAX).unwrap(),
        found: db.lookup(values).unwrap().indices,
    };
    db.close().unwrap();
    answers
}

/// The database, its signed replica and its verifier key file.
struct Setup {
    dir: Dir,
    db: String,
    store: String,
    vkey: String,
    values: Vec<Hash>,
    want: Answers,
}

fn setup() -> Setup {
    let dir = Dir::new();
    let db = dir.path("db");
    let key = dir.path("db.key");
    let vkey = cairn(&["keygen", "--name", "example.org/db", "--out", &key])
        .success()
        .trim()
        .to_owned();
    let vkey = dir.file("db.vkey", format!("{vkey}\n"));
    let values = leaves(PUBLISHED + TAIL);
    let created = Db::create(&db, config()).unwrap();
    append_blocks(&created, &values[..PUBLISHED], 100, 10);
    created.checkpoint().unwrap();
    created.close().unwrap();
    let store = dir.path("public");
    cairn(&["publish", &db, "--to", &store, "--sign-key", &key]).success();
    let db_again = Db::open(&db).unwrap();
    append_blocks(&db_again, &values[PUBLISHED..], 50, 100);
    db_again.close().unwrap();
    let want = answers(&db, &values);
    assert_eq!(want.head.size, (PUBLISHED + TAIL) as u64);
    Setup {
        dir,
        db,
        store,
        vkey,
        values,
        want,
    }
}

/// A copy of the directory tree `from` at `to` (also the format
/// snapshots' working copies).
pub(crate) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn files(dir: &Path, base: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            files(&entry.path(), base, out);
        } else if entry.metadata().unwrap().len() > 0 {
            out.push(entry.path().strip_prefix(base).unwrap().to_path_buf());
        }
    }
}

/// A small deterministic generator (xorshift64*): the cases are the same
/// on every run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1)
    }
}

/// Flips a byte, zeroes 512 bytes or cuts the file, at a random offset.
/// Returns what it did.
fn damage(path: &Path, mode: u64, rng: &mut Rng) -> String {
    let mut bytes = std::fs::read(path).unwrap();
    let len = bytes.len() as u64;
    // Offsets that hold something: not the holes of a sparse log file.
    let used: Vec<u64> = (0..len).filter(|&i| bytes[i as usize] != 0).collect();
    let at = if used.is_empty() || mode == 1 {
        rng.below(len)
    } else {
        used[rng.below(used.len() as u64) as usize]
    };
    let what = match mode {
        0 => {
            bytes[at as usize] ^= 1 << rng.below(8);
            format!("flipped a bit at {at}")
        }
        1 => {
            let end = (at + 512).min(len);
            bytes[at as usize..end as usize].fill(0);
            format!("zeroed {at}..{end}")
        }
        _ => {
            bytes.truncate(at as usize);
            format!("cut at {at}")
        }
    };
    std::fs::write(path, bytes).unwrap();
    what
}

/// The root of the first `size` of `values` (the tree a repair that lost
/// the rest must hold).
fn prefix_head(values: &[Hash], size: u64) -> TreeHead {
    let mut tree = LeanImt::from_leaves(
        TreeConfig::new(Arity::new(4).unwrap(), HashKind::Blake3),
        &values[..size as usize],
    )
    .unwrap();
    tree.head()
}

#[test]
fn random_damage_in_every_file_is_repaired_from_the_signed_replica_or_refused_as_loss() {
    let s = setup();
    let original = PathBuf::from(&s.db);
    let mut names = Vec::new();
    files(&original, &original, &mut names);
    assert!(names.len() >= 8, "{names:?}");
    let mut rng = Rng(0x5eed_cafe_f00d_0001);
    let mut counts: BTreeMap<String, [u32; 3]> = BTreeMap::new();
    for (case, name) in names.iter().flat_map(|n| [n; 3]).enumerate() {
        let copy = PathBuf::from(s.dir.path(&format!("case{case}")));
        copy_dir(&original, &copy);
        let what = damage(&copy.join(name), case as u64 % 3, &mut rng);
        let label = format!("{} ({what})", name.display());
        let copy_str = copy.to_str().unwrap();
        let run = cairn(&[
            "repair",
            copy_str,
            "--from",
            &s.store,
            "--verify-key",
            &s.vkey,
            "--json",
        ]);
        let count = counts.entry(name.display().to_string()).or_default();
        match run.code {
            0 => {
                let json: serde_json::Value = serde_json::from_str(&run.out()).unwrap();
                count[usize::from(json["repaired"] == true)] += 1;
                assert_eq!(answers(copy_str, &s.values), s.want, "{label}: {json}");
                if json["repaired"] == true {
                    let kept = json["damaged_copy"].as_str().unwrap();
                    assert!(Path::new(kept).is_dir(), "{label}");
                    assert_eq!(json["size"], s.want.head.size, "{label}");
                }
            }
            1 => {
                // Refused as loss: nothing changed, nothing left beside it.
                count[2] += 1;
                let err = &run.stderr;
                assert!(err.contains("acknowledged"), "{label}: {err}");
                assert!(copy.join("cairn.meta").exists(), "{label}");
                assert!(
                    !Path::new(&format!("{copy_str}.repair")).exists(),
                    "{label}"
                );
                let accepted = cairn(&[
                    "repair",
                    copy_str,
                    "--from",
                    &s.store,
                    "--verify-key",
                    &s.vkey,
                    "--accept-loss",
                    "--json",
                ]);
                assert_eq!(accepted.code, 0, "{label}: {}", accepted.stderr);
                assert!(accepted.stderr.contains("(--accept-loss)"), "{label}");
                let json: serde_json::Value = serde_json::from_str(&accepted.out()).unwrap();
                assert_eq!(json["repaired"], true, "{label}: {json}");
                let size = json["size"].as_u64().unwrap();
                assert!(size >= PUBLISHED as u64, "{label}: {json}");
                let got = answers(copy_str, &s.values);
                assert_eq!(got.head, prefix_head(&s.values, size), "{label}");
                let kept: Vec<Option<u64>> = (0..s.values.len() as u64)
                    .map(|i| (i < size).then_some(i))
                    .collect();
                assert_eq!(got.found, kept, "{label}");
                assert_eq!(
                    got.heads,
                    s.want
                        .heads
                        .iter()
                        .copied()
                        .take(got.heads.len())
                        .collect::<Vec<_>>(),
                    "{label}"
                );
            }
            code => panic!("{label}: exit {code}: {}", run.stderr),
        }
    }
    eprintln!("per file [nothing to repair, repaired, refused as loss]: {counts:#?}");
    let total: u32 = counts.values().map(|c| c[1]).sum();
    assert!(total > names.len() as u32, "too few repairs: {counts:?}");
}

#[test]
fn a_replica_of_another_tree_or_an_unsigned_one_changes_nothing() {
    let s = setup();
    // Damage a level file so that there is something to repair.
    let level = PathBuf::from(&s.db).join("levels/level-01.nodes");
    let mut bytes = std::fs::read(&level).unwrap();
    bytes[4096 + 40] ^= 0x10;
    std::fs::write(&level, &bytes).unwrap();
    // Another database's store, signed by the same key name but another key.
    let other = s.dir.path("other");
    init(&other, 4, HashKind::Blake3, &[]);
    ingest(&other, &leaves(PUBLISHED + 7)[7..], &[]).success();
    let other_store = s.dir.path("other-public");
    cairn(&["publish", &other, "--to", &other_store]).success();
    cairn(&[
        "repair",
        &s.db,
        "--from",
        &other_store,
        "--verify-key",
        &s.vkey,
    ])
    .error(1, &["checkpoint"]);
    assert_eq!(std::fs::read(&level).unwrap(), bytes, "nothing changed");
    // Unsigned, so trusted as far as the transport: its history differs.
    cairn(&["repair", &s.db, "--from", &other_store]).error(1, &["not this database's history"]);
    assert_eq!(std::fs::read(&level).unwrap(), bytes, "nothing changed");
    assert!(!Path::new(&format!("{}.repair", s.db)).exists());
    // The right replica repairs it.
    cairn(&["repair", &s.db, "--from", &s.store, "--verify-key", &s.vkey]).success();
    assert_eq!(answers(&s.db, &s.values), s.want);
    cairn(&["check", &s.db]).success();
}

#[test]
fn an_intact_database_is_left_alone_and_an_indexed_one_is_refused() {
    let s = setup();
    let out = cairn(&["repair", &s.db, "--from", &s.store, "--verify-key", &s.vkey]).success();
    assert!(out.starts_with("nothing to repair"), "{out}");
    let indexed = s.dir.path("indexed");
    init(&indexed, 4, HashKind::Blake3, &["--kind", "indexed"]);
    ingest(&indexed, &leaves(10), &[]).success();
    let log = PathBuf::from(&indexed).join("log/000000000000.log");
    let mut bytes = std::fs::read(&log).unwrap();
    bytes[4096 + 32 * 3] ^= 1;
    std::fs::write(&log, bytes).unwrap();
    cairn(&["repair", &indexed, "--from", &s.store]).error(2, &["restore it from a backup"]);
}

#[test]
fn serve_with_repair_from_repairs_a_damaged_database_before_it_listens() {
    let s = setup();
    let level = PathBuf::from(&s.db).join("levels/level-02.nodes");
    let mut bytes = std::fs::read(&level).unwrap();
    bytes[4096 + 5] ^= 0x20;
    std::fs::write(&level, &bytes).unwrap();
    cairn(&["root", &s.db]).error(4, &["level-02.nodes"]);
    let (child, addr) = crate::serve::spawn_serve(&[
        &s.db,
        "--listen",
        "127.0.0.1:0",
        "--repair-from",
        &s.store,
        "--repair-key",
        &s.vkey,
    ]);
    let (status, body) = crate::serve::request(&addr, "GET", "/v1/root", &[], "");
    assert_eq!(status, 200, "{body}");
    let root = cairn_core::hex::to_hex(&s.want.head.root.unwrap());
    assert!(body.contains(&root), "{body}");
    crate::serve::stop(child);
    assert_eq!(answers(&s.db, &s.values), s.want);
    // An intact database is served as it is.
    let (child, _) = crate::serve::spawn_serve(&[
        &s.db,
        "--listen",
        "127.0.0.1:0",
        "--repair-from",
        &s.store,
        "--repair-key",
        &s.vkey,
    ]);
    crate::serve::stop(child);
    let kept = std::fs::read_dir(s.dir.path(""))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("db.damaged-")
        })
        .count();
    assert_eq!(kept, 1, "one repair, one damaged copy");
}
