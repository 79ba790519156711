//! Values chosen to cluster: long shared prefixes and one-byte differences,
//! inserted in batches (the set's parallel path) and singly (its serial
//! path). Lookups stay exact and the longest probe stays short, because the
//! set places values by a SipHash-1-3 of the whole value under a secret
//! random key, not by any bytes of the value; and the set's memory stays at
//! most 16 bytes per value once it holds a million.
//!
//! The probe bound (what [`probe_bound`] computes). A value's shard is
//! picked by the top bits of the keyed hash and its home slot in the
//! shard's linear-probing table (kept at <= 80% load: expected probes about
//! 3 for a hit, 13 for a miss) by the next ones. Two limits hold for random
//! hashing:
//!
//! - Every slot between an entry's home and its slot is full, so no probe
//!   is longer than the entries of its shard. With S shards (read from the
//!   set file's header) and m values, a shard's entries are Binomial(m,
//!   1/S), and by the Chernoff bound P(some shard holds >= B) <= S *
//!   exp(-mu * h(B / mu)), mu = m / S, h(x) = x ln x - x + 1. The bound
//!   takes the smallest B that makes this <= 1e-9: 133 for the 258,161
//!   values of the first test with 4,096 shards (29 with 65,536), 394 for
//!   the 1,068,576 of the second (58 with 65,536).
//! - Whatever the shard count, a linear-probing cluster of length L at load
//!   a occurs with probability about L^(-3/2) * exp(-r L) per slot, r = a -
//!   1 - ln a = 0.0231 at 80% (Flajolet, Poblete and Viola), so over the
//!   ~1.7 million slots of these tests a probe of 1,024 has a probability
//!   below 1e-6: the bound never exceeds [`MAX_PROBE`] = 1,024.
//!
//! Measured (4,096 shards): about 50 for the first test, 70..160 for a
//! million values (the higher figures when a batch leaves shards at 80%
//! load). A hash that let the shared prefix pick the shard or the home
//! slot would put these values in one cluster: probes in the hundreds of
//! thousands.

use std::collections::HashSet;
use std::time::Instant;

use cairn_core::{Hash, HashKind};
use cairn_db::{Db, DbError, Duplicate, DuplicateOf};

use crate::support::*;

/// The longest probe sequence the set may show for any shard count (see
/// the module doc).
const MAX_PROBE: usize = 1_024;

/// The probe bound for `values` values in `2^shard_bits` shards (see the
/// module doc): the smallest B with S * exp(-mu h(B / mu)) <= 1e-9, at
/// most [`MAX_PROBE`].
fn probe_bound(values: u64, shard_bits: u32) -> usize {
    let shards = f64::from(1u32 << shard_bits);
    let mu = values as f64 / shards;
    let mut bound = mu.ceil() as usize + 1;
    while bound < MAX_PROBE {
        let x = bound as f64 / mu;
        let h = x * x.ln() - x + 1.0;
        if shards * (-mu * h).exp() <= 1e-9 {
            break;
        }
        bound += 1;
    }
    bound.min(MAX_PROBE)
}

/// Checkpoints `db` and reads the set's shard count (log2) from its file's
/// header (byte 12, `docs/file-format.md`).
fn shard_bits(db: &Db) -> u32 {
    db.checkpoint().unwrap();
    let bytes = std::fs::read(db.dir().join("nullifiers.set")).unwrap();
    u32::from(bytes[12])
}

/// Asserts the longest probe of `db`'s set is below the bound.
fn assert_short_probes(db: &Db) -> usize {
    let values = db.stats().set.unwrap().values;
    let bits = shard_bits(db);
    let bound = probe_bound(values, bits);
    let probe = db.set_max_probe().unwrap();
    eprintln!("{values} values in 2^{bits} shards: longest probe {probe}, bound {bound}");
    assert!(
        probe < bound,
        "{values} values in 2^{bits} shards: longest probe {probe}, bound {bound}"
    );
    probe
}

/// `count` values that share their first `32 - tail` bytes (those of
/// `prefix`) and differ in the last `tail` bytes (a big-endian counter
/// from `from`).
fn shared_prefix(prefix: &Hash, tail: usize, from: u64, count: u64) -> Vec<Hash> {
    (from..from + count)
        .map(|i| {
            let mut v = *prefix;
            v[32 - tail..].copy_from_slice(&i.to_be_bytes()[8 - tail..]);
            v
        })
        .collect()
}

/// Every value that differs from `base` in exactly one byte.
fn one_byte_away(base: &Hash) -> Vec<Hash> {
    let mut out = Vec::with_capacity(32 * 255);
    for position in 0..32 {
        for byte in 0..=255u8 {
            if byte != base[position] {
                let mut v = *base;
                v[position] = byte;
                out.push(v);
            }
        }
    }
    out
}

fn db_config(log_shift: u8) -> cairn_db::DbConfig {
    let mut config = config(2, HashKind::Blake3);
    config.store.log_shift = log_shift;
    config
}

#[test]
fn prefix_sharing_and_one_byte_apart_values_stay_exact_with_short_probes() {
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(dir.path().join("db"), db_config(16)).unwrap();
    // 200,000 values agreeing on their first 24 bytes, in batches of
    // 10,000 (parallel insertion).
    let a = shared_prefix(&value(1, 0), 8, 0, 200_000);
    for batch in a.chunks(10_000) {
        db.append_batch(batch).unwrap();
    }
    // 50,000 values agreeing on their first 28 bytes, one at a time.
    let b = shared_prefix(&value(1, 1), 4, 0, 50_000);
    for v in &b {
        db.append(*v).unwrap();
    }
    // A value and the 8,160 values one byte away from it: in batches of
    // 100 (serial insertion) and the rest singly.
    let base = value(1, 2);
    let mut c = vec![base];
    c.extend(one_byte_away(&base));
    let (batched, single) = c.split_at(6_000);
    for batch in batched.chunks(100) {
        db.append_batch(batch).unwrap();
    }
    for v in single {
        db.append(*v).unwrap();
    }
    let all: Vec<Hash> = a.iter().chain(&b).chain(&c).copied().collect();
    assert_eq!(
        all.iter().collect::<HashSet<_>>().len(),
        all.len(),
        "the workload's values are distinct"
    );
    assert_eq!(db.size(), all.len() as u64);

    for (i, v) in all.iter().enumerate() {
        assert_eq!(db.index_of(v).unwrap(), Some(i as u64), "value {i}");
    }
    // Absent values that share the same prefixes, or are two bytes away.
    for v in shared_prefix(&value(1, 0), 8, 200_000, 2_000)
        .iter()
        .chain(&shared_prefix(&value(1, 1), 4, 50_000, 2_000))
    {
        assert_eq!(db.index_of(v).unwrap(), None);
    }
    for v in one_byte_away(&c[1])
        .iter()
        .filter(|v| **v != base)
        .take(2_000)
    {
        if !c.contains(v) {
            assert_eq!(db.index_of(v).unwrap(), None);
        }
    }

    // Duplicates among near-identical values are still named exactly.
    let mut batch = shared_prefix(&value(1, 0), 8, 300_000, 5_000);
    batch[10] = a[123_456];
    batch[4_000] = c[77];
    batch[4_999] = batch[11];
    let Err(DbError::Duplicates { duplicates, .. }) = db.append_batch(&batch) else {
        panic!("duplicates appended");
    };
    assert_eq!(
        duplicates,
        vec![
            Duplicate {
                position: 10,
                value: a[123_456],
                of: DuplicateOf::Leaf(123_456)
            },
            Duplicate {
                position: 4_000,
                value: c[77],
                of: DuplicateOf::Leaf(250_077)
            },
            Duplicate {
                position: 4_999,
                value: batch[11],
                of: DuplicateOf::Batch(11)
            },
        ]
    );
    assert_eq!(db.index_of(&batch[0]).unwrap(), None);

    assert_short_probes(&db);
    db.check_set().unwrap();
    eprintln!(
        "{} clustered values, {:.1} s",
        all.len(),
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn a_million_values_take_at_most_16_bytes_each() {
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(dir.path().join("db"), db_config(20)).unwrap();
    // 2^20 values sharing their first 24 bytes, in four batches.
    let all = shared_prefix(&value(2, 0), 8, 0, 1 << 20);
    for batch in all.chunks(1 << 18) {
        db.append_batch(batch).unwrap();
    }
    let check = |db: &Db, values: u64| {
        let set = db.stats().set.unwrap();
        assert_eq!(set.values, values);
        let per_value = set.memory_bytes as f64 / set.values as f64;
        eprintln!(
            "{values} values: {} slots, {per_value:.2} bytes per value",
            set.slots
        );
        assert!(per_value <= 16.0, "{per_value:.2} bytes per value");
    };
    check(&db, 1 << 20);
    assert_short_probes(&db);
    // Growth by single appends keeps the bound.
    let more = shared_prefix(&value(2, 0), 8, 1 << 20, 20_000);
    for v in &more {
        db.append(*v).unwrap();
    }
    check(&db, (1 << 20) + 20_000);
    assert_short_probes(&db);
    for (i, v) in all.iter().chain(&more).enumerate().step_by(101) {
        assert_eq!(db.index_of(v).unwrap(), Some(i as u64));
    }
    assert_eq!(
        db.index_of(&shared_prefix(&value(2, 0), 8, 2 << 20, 1)[0])
            .unwrap(),
        None
    );
    db.check_set().unwrap();
    eprintln!("{:.1} s", started.elapsed().as_secs_f64());
}
