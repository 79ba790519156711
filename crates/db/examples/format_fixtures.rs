//! Writes the format snapshot fixtures of `test-vectors/formats/`: one
//! small database directory per tree kind in the on-disk format this build
//! writes, the proofs it serves in every encoding, and `manifest.json`
//! recording each directory's head and each proof's tree.
//!
//! A snapshot is made once per format version and then kept as it is:
//! later builds must open it, answer the same heads and accept the same
//! proofs (the `formats` tests of `cairn-cli`). Run this only to add the
//! snapshot of a new format version, into a new directory:
//!
//! ```sh
//! cargo run -p cairn-db --example format_fixtures -- test-vectors/formats/store-3
//! ```

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use cairn_core::hex::to_hex;
use cairn_core::{Arity, Hash, HashKind, TreeConfig, TreeKind};
use cairn_db::{At, BlockTag, Database, DbConfig};

const WAIT: Duration = Duration::from_secs(60);

/// Value `i` of every fixture: `i * 7919 + 1` as a 32-byte big-endian
/// number (below every field modulus, so Poseidon trees take it too).
fn value(i: u64) -> Hash {
    let mut value = [0u8; 32];
    value[24..].copy_from_slice(&(i * 7919 + 1).to_be_bytes());
    value
}

fn values(range: std::ops::Range<u64>) -> Vec<Hash> {
    range.map(value).collect()
}

/// Small log files (1,024 leaves) so the fixtures stay small; no
/// background flush or automatic checkpoint, so what is on disk is what
/// this program asks for.
fn config(tree: TreeConfig) -> DbConfig {
    let mut config = DbConfig::new(tree);
    config.store.log_shift = 10;
    config.store.flush_interval = None;
    config.store.checkpoint = Default::default();
    config
}

struct Manifest {
    databases: Vec<String>,
    proofs: Vec<String>,
}

impl Manifest {
    fn database(&mut self, name: &str, db: &Database) {
        let head = db.head();
        let tree = db.tree_config();
        self.databases.push(format!(
            "    {{\"dir\": \"{name}\", \"kind\": \"{}\", \"arity\": {}, \"hash\": \"{}\", {}\"size\": {}, \"root\": \"{}\"}}",
            tree.kind.name(),
            tree.arity.as_u64(),
            tree.hash.name(),
            match tree.kind {
                TreeKind::Fixed { depth, zero } =>
                    format!("\"depth\": {depth}, \"zero\": \"{}\", ", to_hex(&zero)),
                _ => String::new(),
            },
            head.size,
            head.root.map_or_else(|| "null".to_owned(), |root| to_hex(&root)),
        ));
    }

    /// A proof file against the heads of `db` at `sizes` (one size for
    /// a membership or absence proof, old and new for a consistency proof).
    fn proof(
        &mut self,
        db: &Database,
        file: &str,
        dir: &str,
        what: &str,
        sizes: &[u64],
    ) -> Result<(), cairn_db::DbError> {
        let mut line = format!(
            "    {{\"file\": \"{file}\", \"dir\": \"{dir}\", \"proves\": \"{what}\", \"heads\": ["
        );
        for (i, &size) in sizes.iter().enumerate() {
            let head = db.head_at(size)?;
            let root = head
                .root
                .map_or_else(|| "null".to_owned(), |root| to_hex(&root));
            let separator = if i == 0 { "" } else { ", " };
            let _ = write!(
                line,
                "{separator}{{\"size\": {size}, \"root\": \"{root}\"}}"
            );
        }
        line.push_str("]}");
        self.proofs.push(line);
        Ok(())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(
        std::env::args()
            .nth(1)
            .ok_or("usage: format_fixtures OUT_DIR")?,
    );
    if out.exists() {
        return Err(format!("{} exists: a snapshot is never rewritten", out.display()).into());
    }
    std::fs::create_dir_all(out.join("proofs"))?;
    let mut manifest = Manifest {
        databases: Vec::new(),
        proofs: Vec::new(),
    };
    let write = |name: &str, bytes: &[u8]| std::fs::write(out.join("proofs").join(name), bytes);

    // A LeanIMT: tagged blocks, a checkpoint, then frames after it.
    let lean = TreeConfig::new(Arity::new(4)?, HashKind::Blake3);
    let db = Database::create(out.join("lean"), config(lean))?;
    for block in 1..=3u64 {
        let tag = BlockTag {
            number: block,
            hash: Some(value(1_000_000 + block)),
        };
        let batch = values((block - 1) * 100..block * 100);
        db.append_tagged(&batch, tag)?.wait(&db, WAIT)?;
    }
    db.checkpoint()?;
    let tag = BlockTag {
        number: 4,
        hash: None,
    };
    db.append_tagged(&values(300..350), tag)?.wait(&db, WAIT)?;
    manifest.database("lean", &db);
    let proof = db.prove(7, At::Durable)?;
    write("lean-membership-7.json", proof.to_json().as_bytes())?;
    write("lean-membership-7.bin", &proof.to_bytes())?;
    let old = db.prove(7, At::Size(100))?;
    write("lean-membership-7-at-100.json", old.to_json().as_bytes())?;
    manifest.proof(&db, "lean-membership-7.json", "lean", "membership", &[350])?;
    manifest.proof(&db, "lean-membership-7.bin", "lean", "membership", &[350])?;
    manifest.proof(
        &db,
        "lean-membership-7-at-100.json",
        "lean",
        "membership",
        &[100],
    )?;
    let consistency = db.prove_consistency(100, None)?;
    write(
        "lean-consistency-100-350.json",
        consistency.to_json().as_bytes(),
    )?;
    write("lean-consistency-100-350.bin", &consistency.to_bytes())?;
    manifest.proof(
        &db,
        "lean-consistency-100-350.json",
        "lean",
        "consistency",
        &[100, 350],
    )?;
    manifest.proof(
        &db,
        "lean-consistency-100-350.bin",
        "lean",
        "consistency",
        &[100, 350],
    )?;
    // Dropped without closing: the frames after the checkpoint stay in
    // the log, as after a crash.
    drop(db);

    // zk-kit's IMT: fixed depth, a non-zero zero value, Poseidon.
    let mut zero = [0u8; 32];
    zero[31] = 7;
    let imt = TreeConfig::new(Arity::new(2)?, HashKind::Poseidon)
        .with_kind(TreeKind::Fixed { depth: 8, zero });
    let db = Database::create(out.join("imt"), config(imt))?;
    db.append(&values(0..40))?.wait(&db, WAIT)?;
    db.checkpoint()?;
    db.append(&values(40..45))?.wait(&db, WAIT)?;
    manifest.database("imt", &db);
    let proof = db.prove(3, At::Durable)?;
    write("imt-membership-3.json", proof.to_json().as_bytes())?;
    write("imt-membership-3.bin", &proof.to_bytes())?;
    manifest.proof(&db, "imt-membership-3.json", "imt", "membership", &[45])?;
    manifest.proof(&db, "imt-membership-3.bin", "imt", "membership", &[45])?;
    drop(db);

    // An indexed tree: membership and absence proofs.
    let indexed = TreeConfig::new(Arity::new(4)?, HashKind::Blake3).with_kind(TreeKind::Indexed);
    let db = Database::create(out.join("indexed"), config(indexed))?;
    db.append(&values(1..60))?.wait(&db, WAIT)?;
    db.checkpoint()?;
    db.append(&values(60..70))?.wait(&db, WAIT)?;
    manifest.database("indexed", &db);
    let size = db.head().size;
    let proof = db.prove_value(&value(5), At::Durable)?;
    write("indexed-membership.json", proof.to_json().as_bytes())?;
    write("indexed-membership.bin", &proof.to_bytes())?;
    manifest.proof(
        &db,
        "indexed-membership.json",
        "indexed",
        "membership",
        &[size],
    )?;
    manifest.proof(
        &db,
        "indexed-membership.bin",
        "indexed",
        "membership",
        &[size],
    )?;
    let absent = {
        let mut v = value(5);
        v[31] ^= 0x80;
        v
    };
    let proof = db.prove_absence(&absent)?;
    write("indexed-absence.json", proof.to_json().as_bytes())?;
    write("indexed-absence.bin", &proof.to_bytes())?;
    manifest.proof(&db, "indexed-absence.json", "indexed", "absence", &[size])?;
    manifest.proof(&db, "indexed-absence.bin", "indexed", "absence", &[size])?;
    drop(db);

    let text = format!(
        "{{\n  \"format\": {},\n  \"databases\": [\n{}\n  ],\n  \"proofs\": [\n{}\n  ]\n}}\n",
        cairn_db::STORE_FORMAT,
        manifest.databases.join(",\n"),
        manifest.proofs.join(",\n"),
    );
    std::fs::write(out.join("manifest.json"), text)?;
    println!("wrote {}", out.display());
    Ok(())
}
