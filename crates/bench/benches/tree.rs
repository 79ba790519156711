//! Criterion suites for every in-memory workload of docs/performance.md.
//! The side-by-side comparison with rotortree is `src/bin/peers.rs`.
//! Run: `cargo bench -p cairn-bench --bench tree` (add a filter, e.g. `-- build`).

use std::time::Duration;

use cairn_bench::{cairn_build, cairn_follow, config, leaves};
use cairn_core::{HashKind, LeanImt, MembershipProof, TreeKind};
use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

fn build(c: &mut Criterion) {
    let all = leaves(1 << 20);
    let mut group = c.benchmark_group("build");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(4));
    for hash in [HashKind::Blake3, HashKind::Sha256, HashKind::Keccak256] {
        for arity in [2usize, 4, 8, 16] {
            for count in [10_000usize, 1 << 20] {
                if hash != HashKind::Blake3 && (count != 1 << 20 || arity != 4) {
                    continue;
                }
                group.throughput(Throughput::Elements(count as u64));
                group.bench_with_input(
                    BenchmarkId::new(format!("{hash}/n{arity}"), count),
                    &all[..count],
                    |b, input| {
                        b.iter(|| cairn_build(arity, hash, input));
                    },
                );
            }
        }
    }
    group.finish();
}

fn kernels(c: &mut Criterion) {
    let children = leaves(1 << 16);
    let mut group = c.benchmark_group("hash_groups");
    group.sample_size(20);
    for hash in [HashKind::Blake3, HashKind::Sha256, HashKind::Keccak256] {
        for arity in [2usize, 4, 8, 16] {
            let mut out = vec![[0u8; 32]; children.len() / arity];
            group.throughput(Throughput::Bytes((children.len() * 32) as u64));
            group.bench_function(BenchmarkId::new(hash.name(), arity), |b| {
                b.iter(|| hash.hash_groups(&children, arity, &mut out));
            });
        }
    }
    group.finish();
}

fn follow(c: &mut Criterion) {
    let all = leaves(1 << 20);
    let mut group = c.benchmark_group("follow");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));
    group.throughput(Throughput::Elements(all.len() as u64));
    group.bench_function("n4/root_every_100", |b| {
        b.iter(|| cairn_follow(4, &all, 100))
    });
    group.finish();
}

fn proofs(c: &mut Criterion) {
    let all = leaves(1 << 20);
    let mut tree = LeanImt::from_leaves(config(4, HashKind::Blake3), &all).expect("valid");
    let head = tree.head();
    let view = tree.view(head.size).expect("committed");
    let mut group = c.benchmark_group("proof/n4/1M");
    let mut next = 0u64;
    let mut proof = MembershipProof::empty(view.config());
    group.bench_function("generate_into", |b| {
        b.iter(|| {
            next = (next + 2_654_435_761) % head.size;
            view.prove_into(next, &mut proof).expect("in range");
        })
    });
    group.bench_function("generate", |b| {
        b.iter(|| {
            next = (next + 2_654_435_761) % head.size;
            view.prove(next).expect("in range")
        })
    });
    let proofs: Vec<_> = (0..256u64)
        .map(|i| view.prove(i * 4099).expect("in range"))
        .collect();
    let arity = view.config().arity;
    group.bench_function("verify", |b| {
        b.iter_batched(
            || {
                next = (next + 1) % proofs.len() as u64;
                &proofs[next as usize]
            },
            |proof| proof.verify(arity, HashKind::Blake3, &head).expect("valid"),
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

fn poseidon(c: &mut Criterion) {
    let all = leaves(1 << 12);
    let mut group = c.benchmark_group("poseidon");
    group.sample_size(10);
    group.throughput(Throughput::Elements(all.len() as u64));
    group.bench_function("build/n2/4096", |b| {
        b.iter(|| cairn_build(2, HashKind::Poseidon, &all))
    });
    // One hash of k inputs (state width k + 1): the per-hash cost that
    // docs/performance.md quotes for 2, 4, 8 and 16 inputs.
    group.throughput(Throughput::Elements(1));
    for inputs in [2usize, 4, 8, 16] {
        let children = &all[..inputs];
        group.bench_function(BenchmarkId::new("hash", inputs), |b| {
            b.iter(|| HashKind::Poseidon.hash_children(std::hint::black_box(children)))
        });
    }
    group.finish();
}

/// The fixed-depth kind beside the Lean tree of the same leaves: a binary
/// Poseidon tree of depth 20 (Semaphore v3's and Tornado's shape) holding
/// 1,000 leaves, where every proof has 20 levels and the verifier climbs
/// the zero hashes of the levels above the leaves (10 of them here); and a
/// BLAKE3 build at N = 4, where only the right edge is padded.
fn imt(c: &mut Criterion) {
    let all = leaves(1000);
    let lean = config(2, HashKind::Poseidon);
    let fixed = lean.with_kind(TreeKind::Fixed {
        depth: 20,
        zero: [0; 32],
    });
    let mut group = c.benchmark_group("imt");
    group.sample_size(20);
    for (name, config) in [("lean", lean), ("imt", fixed)] {
        let mut tree = LeanImt::from_leaves(config, &all).expect("canonical leaves");
        let head = tree.head();
        let proof = tree.prove(777).expect("in range");
        group.bench_function(BenchmarkId::new("verify/poseidon/n2/1000", name), |b| {
            b.iter(|| proof.verify_with(&config, &head).expect("valid"))
        });
    }
    let many = leaves(1 << 20);
    let blake = config(4, HashKind::Blake3);
    let blake_fixed = blake.with_kind(TreeKind::Fixed {
        depth: 12,
        zero: [0; 32],
    });
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(4))
        .throughput(Throughput::Elements(many.len() as u64));
    for (name, config) in [("lean", blake), ("imt", blake_fixed)] {
        group.bench_function(BenchmarkId::new("build/blake3/n4/1048576", name), |b| {
            b.iter(|| LeanImt::from_leaves(config, &many).expect("valid").root())
        });
    }
    group.finish();
}

criterion_group!(benches, build, kernels, follow, proofs, poseidon, imt);
criterion_main!(benches);
