//! cairn against rotortree 0.20 on the same leaves, in the same process,
//! interleaved (the order alternates every round), reporting medians and
//! ratios. Also times the multi-lane kernel alone on the same bytes (the
//! hashing limit) and, when node is installed, zk-kit's TypeScript LeanIMT
//! with poseidon-lite on the same Poseidon workload.
//!
//! Run: `cargo run --release -p cairn-bench --bin peers -- [--quick] [--csv FILE]
//! [--only build,hashes,follow,proofs,poseidon]` (a CSV of some sections holds
//! only their rows).

use std::fmt::Write as _;
use std::process::Command;
use std::time::{Duration, Instant};

use cairn_bench::{
    cairn_build, cairn_follow, config, kernel_only, leaves, median, rotor, with_rotor_arity,
};
use cairn_core::{Hash, HashKind, LeanImt, MembershipProof};
use rotortree::Blake3Hasher;

struct Options {
    rounds: usize,
    csv: Option<String>,
    /// Sections to run (all when `None`).
    only: Option<Vec<String>>,
}

fn options() -> Options {
    let mut args = std::env::args().skip(1);
    let mut options = Options {
        rounds: 7,
        csv: None,
        only: None,
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => options.rounds = 3,
            "--csv" => options.csv = args.next(),
            "--only" => {
                options.only = args
                    .next()
                    .map(|list| list.split(',').map(str::to_owned).collect());
            }
            other => panic!(
                "unknown argument {other:?}; use --quick, --csv FILE and --only build,hashes,follow,proofs,poseidon"
            ),
        }
    }
    options
}

/// Runs `a` and `b` `rounds` times each, alternating which goes first, and
/// returns their median times.
fn interleave(rounds: usize, mut a: impl FnMut(), mut b: impl FnMut()) -> (Duration, Duration) {
    let (mut times_a, mut times_b) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let time = |f: &mut dyn FnMut(), into: &mut Vec<Duration>| {
            let started = Instant::now();
            f();
            into.push(started.elapsed());
        };
        if round % 2 == 0 {
            time(&mut a, &mut times_a);
            time(&mut b, &mut times_b);
        } else {
            time(&mut b, &mut times_b);
            time(&mut a, &mut times_a);
        }
    }
    (median(&mut times_a), median(&mut times_b))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let options = options();
    let rounds = options.rounds;
    let mut csv = String::from("workload,arity,leaves,cairn_ms,rotortree_ms,kernel_ms\n");
    println!(
        "machine: {} cores, rayon threads {}; medians of {rounds} interleaved rounds",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        rayon::current_num_threads()
    );
    let all = leaves(1 << 20);
    let sections: [(&str, Section); 5] = [
        ("build", build),
        ("hashes", other_hashes),
        ("follow", follow),
        ("proofs", proofs),
        ("poseidon", poseidon),
    ];
    for (name, section) in sections {
        if options
            .only
            .as_ref()
            .is_none_or(|only| only.iter().any(|o| o == name))
        {
            section(rounds, &all, &mut csv);
        }
    }
    if let Some(path) = options.csv {
        std::fs::write(&path, csv).expect("writing the CSV");
        println!("\nwrote {path}");
    }
}

/// One part of the comparison: rounds, the 2^20 leaves, the CSV to extend.
type Section = fn(usize, &[Hash], &mut String);

/// Batch builds, BLAKE3, every arity and size, with the kernel alone.
fn build(rounds: usize, all: &[Hash], csv: &mut String) {
    println!("\n## batch build, BLAKE3 (ratio = cairn / rotortree; < 1 means cairn is faster)");
    println!(
        "{:>6} {:>9} {:>11} {:>13} {:>7} {:>11} {:>13}",
        "arity", "leaves", "cairn ms", "rotortree ms", "ratio", "kernel ms", "cairn/kernel"
    );
    for arity in [2usize, 4, 8, 16] {
        for count in [1_000usize, 10_000, 100_000, 1 << 20] {
            let input = &all[..count];
            let reps = (1_000_000 / count).clamp(1, 200);
            let (cairn, rotor) = interleave(
                rounds,
                || {
                    for _ in 0..reps {
                        std::hint::black_box(cairn_build(arity, HashKind::Blake3, input));
                    }
                },
                || {
                    for _ in 0..reps {
                        std::hint::black_box(
                            with_rotor_arity!(arity, N => rotor::build::<N>(input)),
                        );
                    }
                },
            );
            assert_eq!(
                cairn_build(arity, HashKind::Blake3, input),
                with_rotor_arity!(arity, N => rotor::build::<N>(input)),
                "roots must agree"
            );
            let kernel = median(
                &mut (0..rounds)
                    .map(|_| kernel_only(arity, HashKind::Blake3, input))
                    .collect::<Vec<_>>(),
            );
            let (cairn, rotor) = (cairn / reps as u32, rotor / reps as u32);
            println!(
                "{arity:>6} {count:>9} {:>11.3} {:>13.3} {:>7.2} {:>11.3} {:>13.2}",
                ms(cairn),
                ms(rotor),
                cairn.as_secs_f64() / rotor.as_secs_f64(),
                ms(kernel),
                cairn.as_secs_f64() / kernel.as_secs_f64()
            );
            let _ = writeln!(
                csv,
                "build,{arity},{count},{:.4},{:.4},{:.4}",
                ms(cairn),
                ms(rotor),
                ms(kernel)
            );
        }
    }
}

/// SHA-256 and Keccak-256 builds at N = 4 against their kernels alone.
fn other_hashes(rounds: usize, all: &[Hash], csv: &mut String) {
    println!(
        "\n## other hashes, batch build of 2^20 leaves at N = 4 (no peer: rotortree ships BLAKE3 only)"
    );
    for hash in [HashKind::Sha256, HashKind::Keccak256] {
        let mut times: Vec<Duration> = (0..rounds)
            .map(|_| {
                let started = Instant::now();
                std::hint::black_box(cairn_build(4, hash, all));
                started.elapsed()
            })
            .collect();
        let kernel = median(
            &mut (0..rounds)
                .map(|_| kernel_only(4, hash, all))
                .collect::<Vec<_>>(),
        );
        let build = median(&mut times);
        println!(
            "{hash:>10}: build {:.1} ms, kernel alone {:.1} ms, build/kernel {:.2}",
            ms(build),
            ms(kernel),
            build.as_secs_f64() / kernel.as_secs_f64()
        );
        let _ = writeln!(
            csv,
            "build-{hash},4,{},{:.4},,{:.4}",
            all.len(),
            ms(build),
            ms(kernel)
        );
    }
}

/// The chain follower: single appends, a root every 100.
fn follow(rounds: usize, all: &[Hash], csv: &mut String) {
    println!("\n## chain follower: 2^20 single appends, root every 100, N = 4");
    let (cairn, rotor) = interleave(
        rounds.min(5),
        || {
            std::hint::black_box(cairn_follow(4, all, 100));
        },
        || {
            std::hint::black_box(rotor::follow::<4>(all, 100));
        },
    );
    assert_eq!(cairn_follow(4, all, 100), rotor::follow::<4>(all, 100));
    println!(
        "cairn {:.1} ms, rotortree {:.1} ms, speed-up {:.1}x",
        ms(cairn),
        ms(rotor),
        rotor.as_secs_f64() / cairn.as_secs_f64()
    );
    let _ = writeln!(
        csv,
        "follow,4,{},{:.4},{:.4},",
        all.len(),
        ms(cairn),
        ms(rotor)
    );
}

/// Membership proof generation, verification and size, N = 4.
fn proofs(rounds: usize, all: &[Hash], csv: &mut String) {
    println!("\n## membership proofs, N = 4, 2^20 leaves");
    let mut tree = LeanImt::from_leaves(config(4, HashKind::Blake3), all).expect("valid");
    let head = tree.head();
    let rotor_tree = rotor::tree::<4>(all);
    let snapshot = rotor_tree.snapshot();
    let indices: Vec<u64> = (0..100_000u64)
        .map(|i| (i * 2_654_435_761) % all.len() as u64)
        .collect();
    // What the store, the database and the server serve from: a snapshot,
    // whose views hold each level's last node apart.
    let cairn_snapshot = tree.snapshot();
    let view = tree.view(head.size).expect("committed");
    let mut reused = MembershipProof::empty(view.config());
    let (cairn_gen, rotor_gen) = interleave(
        rounds,
        || {
            for &i in &indices {
                view.prove_into(i, &mut reused).expect("in range");
                std::hint::black_box(&reused);
            }
        },
        || {
            for &i in &indices {
                std::hint::black_box(snapshot.generate_proof(i).expect("in range"));
            }
        },
    );
    let (cairn_alloc, _) = interleave(
        rounds,
        || {
            for &i in &indices {
                std::hint::black_box(view.prove(i).expect("in range"));
            }
        },
        || {},
    );
    let snapshot_view = cairn_snapshot.view(head.size).expect("own size");
    let (cairn_snap, _) = interleave(
        rounds,
        || {
            for &i in &indices {
                snapshot_view.prove_into(i, &mut reused).expect("in range");
                std::hint::black_box(&reused);
            }
        },
        || {},
    );
    let per = |d: Duration| d.as_secs_f64() * 1e9 / indices.len() as f64;
    println!(
        "generate: cairn {:.0} ns (reusing a buffer), {:.0} ns (allocating), {:.0} ns (from a snapshot, reusing); rotortree {:.0} ns (from a snapshot); speed-up {:.1}x / {:.1}x / {:.1}x",
        per(cairn_gen),
        per(cairn_alloc),
        per(cairn_snap),
        per(rotor_gen),
        rotor_gen.as_secs_f64() / cairn_gen.as_secs_f64(),
        rotor_gen.as_secs_f64() / cairn_alloc.as_secs_f64(),
        rotor_gen.as_secs_f64() / cairn_snap.as_secs_f64()
    );
    let cairn_proofs: Vec<_> = indices
        .iter()
        .take(1000)
        .map(|&i| view.prove(i).expect("in range"))
        .collect();
    let rotor_proofs: Vec<_> = indices
        .iter()
        .take(1000)
        .map(|&i| snapshot.generate_proof(i).expect("in range"))
        .collect();
    let arity = view.config().arity;
    let (cairn_verify, rotor_verify) = interleave(
        rounds,
        || {
            for proof in cairn_proofs.iter().cycle().take(indices.len()) {
                proof.verify(arity, HashKind::Blake3, &head).expect("valid");
            }
        },
        || {
            for proof in rotor_proofs.iter().cycle().take(indices.len()) {
                assert!(proof.verify(&Blake3Hasher).expect("well-formed"));
            }
        },
    );
    println!(
        "verify: cairn {:.0} ns, rotortree {:.0} ns, speed-up {:.2}x",
        per(cairn_verify),
        per(rotor_verify),
        rotor_verify.as_secs_f64() / cairn_verify.as_secs_f64()
    );
    println!(
        "size: cairn {} bytes (binary encoding), rotortree {} bytes (fixed NaryProof<4, 32>)",
        cairn_proofs[0].to_bytes().len(),
        std::mem::size_of::<rotortree::NaryProof<4, 32>>()
    );
    let _ = writeln!(
        csv,
        "prove,4,{},{:.6},{:.6},",
        all.len(),
        per(cairn_gen) / 1e6,
        per(rotor_gen) / 1e6
    );
    let _ = writeln!(
        csv,
        "verify,4,{},{:.6},{:.6},",
        all.len(),
        per(cairn_verify) / 1e6,
        per(rotor_verify) / 1e6
    );
}

/// Poseidon N = 2 against zk-kit TypeScript under node.
fn poseidon(_rounds: usize, all: &[Hash], csv: &mut String) {
    println!(
        "\n## Poseidon batch build, 2^16 leaves, N = 2 (peer: zk-kit TypeScript LeanIMT + poseidon-lite under node)"
    );
    let poseidon_leaves = &all[..1 << 16];
    let started = Instant::now();
    let root = cairn_build(2, HashKind::Poseidon, poseidon_leaves);
    let cairn_poseidon = started.elapsed();
    print!("cairn {:.0} ms", ms(cairn_poseidon));
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../test-vectors/ts/bench_poseidon.mjs"
    );
    let leaves_hex: String = poseidon_leaves
        .iter()
        .map(|l| cairn_core::hex::to_hex(l) + "\n")
        .collect();
    let input = std::env::temp_dir().join("cairn-bench-poseidon-leaves.hex");
    let node = std::fs::write(&input, leaves_hex)
        .ok()
        .and_then(|()| Command::new("node").arg(script).arg(&input).output().ok());
    match node {
        Some(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            let field = |name: &str| {
                text.split_whitespace()
                    .find_map(|w| w.strip_prefix(name))
                    .map(str::to_owned)
            };
            let ts_ms: f64 = field("ms=")
                .and_then(|v| v.parse().ok())
                .unwrap_or(f64::NAN);
            let ts_root = field("root=").unwrap_or_default();
            assert_eq!(
                ts_root,
                cairn_core::hex::to_hex(&root),
                "zk-kit TS and cairn roots differ"
            );
            println!(
                ", zk-kit TS {ts_ms:.0} ms, speed-up {:.1}x, roots equal",
                ts_ms / ms(cairn_poseidon)
            );
            let _ = writeln!(
                csv,
                "poseidon-build,2,{},{:.4},{ts_ms:.4},",
                1 << 16,
                ms(cairn_poseidon)
            );
        }
        _ => println!(
            " (node or test-vectors/ts/node_modules missing: run `cd test-vectors/ts && npm ci`)"
        ),
    }
}
