//! `cairn plan`: the model calculator, checked against figures computed
//! here independently (integer loops over the level lengths, the spec's
//! proof layout, proofs the core encodes, the circuit formulas in floating
//! point) rather than through the command's own code.

use cairn_core::{Arity, HashKind, LeanImt, TreeConfig};
use serde_json::Value;

use crate::support::cairn;

/// Every Tornado Cash mainnet deposit.
const TORNADO: u64 = 278_827;

/// Level lengths: L, ceil(L / N), .., 1.
fn level_lens(leaves: u64, n: u64) -> Vec<u64> {
    let mut lens = vec![leaves];
    while *lens.last().unwrap() > 1 {
        lens.push(lens.last().unwrap().div_ceil(n));
    }
    lens
}

/// ceil(log_N(L)) by repeated multiplication.
fn depth(leaves: u64, n: u64) -> u64 {
    let (mut depth, mut capacity) = (0, 1u64);
    while capacity < leaves {
        capacity *= n;
        depth += 1;
    }
    depth
}

/// docs/spec.md 7.1: 20-byte header, the leaf, then for the largest proof
/// (leaf 0) a full group's siblings at every level: min(N, len) - 1.
fn largest_proof_bytes(leaves: u64, n: u64) -> u64 {
    let lens = level_lens(leaves, n);
    let siblings: u64 = lens[..lens.len() - 1]
        .iter()
        .map(|&len| len.min(n) - 1)
        .sum();
    20 + 32 + 32 * siblings
}

/// rotortree's fitted models, transcribed from rotortree 0.20.0's README
/// ("Jolt" and "Noir" sections), independently of `plan.rs`.
fn jolt(n: u64, d: u64) -> u64 {
    let (n, d) = (n as f64, d as f64);
    (2948.4 + 1832.9 * n * d + (899.5 + 2993.8 * n - 103.4 * n * n) * d).round() as u64
}

fn noir_width(n: u64, d: u64) -> u64 {
    68 + (217 * n - 100) * d
}

fn noir_size(n: u64, d: u64) -> u64 {
    2962 + 30 * n + (551 * n * n + 2629 * n - 2448) * d
}

fn plan_json(args: &[&str]) -> Value {
    let out = cairn(&[&["plan", "--json"], args].concat()).success();
    assert!(
        out.ends_with('\n') && out.matches('\n').count() == 1,
        "one line: {out}"
    );
    serde_json::from_str(&out).expect("plan --json is JSON")
}

/// The cells of the table row whose label is `label`.
fn row(table: &str, label: &str) -> Vec<String> {
    let line = table
        .lines()
        .find(|line| line.starts_with(label))
        .unwrap_or_else(|| panic!("no row {label:?} in\n{table}"));
    line[label.len()..]
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn recommendation(table: &str) -> &str {
    table
        .lines()
        .find_map(|line| line.strip_prefix("recommendation: "))
        .unwrap_or_else(|| panic!("no recommendation in\n{table}"))
}

#[test]
fn the_table_for_the_tornado_size_shows_every_arity() {
    let table = cairn(&["plan", "--leaves", "278827"]).success();
    assert!(
        table.starts_with("cairn plan: 278,827 leaves, hash blake3"),
        "{table}"
    );
    let arities = [2, 4, 8, 16];
    assert_eq!(row(&table, "arity N"), ["2", "4", "8", "16"]);
    assert_eq!(row(&table, "depth (= max depth D)"), ["19", "10", "7", "5"]);
    let want = |f: &dyn Fn(u64) -> u64| -> Vec<String> {
        arities.iter().map(|&n| grouped(f(n))).collect()
    };
    assert_eq!(
        row(&table, "capacity at D (leaves)"),
        want(&|n| n.pow(depth(TORNADO, n) as u32))
    );
    assert_eq!(
        row(&table, "membership proof, max (bytes)"),
        want(&|n| largest_proof_bytes(TORNADO, n))
    );
    assert_eq!(
        row(&table, "membership proof, max (bytes)"),
        ["660", "948", "1,428", "2,100"]
    );
    assert_eq!(
        row(&table, "consistency proof, max (bytes)"),
        want(&|n| largest_proof_bytes(TORNADO, n))
    );
    assert_eq!(
        row(&table, "tree nodes"),
        want(&|n| level_lens(TORNADO, n).iter().sum())
    );
    assert_eq!(
        row(&table, "Jolt cycles (fitted*)"),
        want(&|n| jolt(n, depth(TORNADO, n)))
    );
    assert_eq!(
        row(&table, "Noir expression width (fitted*)"),
        want(&|n| noir_width(n, depth(TORNADO, n)))
    );
    assert_eq!(
        row(&table, "Noir circuit size, gates (fitted*)"),
        want(&|n| noir_size(n, depth(TORNADO, n)))
    );
    // 17,845,312 bytes of nodes at N = 2.
    assert_eq!(row(&table, "tree memory, all levels")[..2], ["17.0", "MiB"]);
    for needle in [
        "tree resident, level 0 tiered",
        "tree on disk",
        "blake3 compressions: verify, max",
        "blake3 compressions: build, per leaf",
        "nullifier set (any arity): memory 2.7 MiB to 3.3 MiB",
        "fitted by rotortree",
        "not measured by cairn",
        "rule: ",
    ] {
        assert!(table.contains(needle), "no {needle:?} in\n{table}");
    }
    assert!(
        recommendation(&table).starts_with("N = 2."),
        "{}",
        recommendation(&table)
    );
}

#[test]
fn one_arity_is_modelled_alone_and_recommended() {
    let table = cairn(&["plan", "--leaves", "278827", "--arity", "4"]).success();
    assert_eq!(row(&table, "arity N"), ["4"]);
    assert_eq!(row(&table, "depth (= max depth D)"), ["10"]);
    assert_eq!(row(&table, "membership proof, max (bytes)"), ["948"]);
    assert_eq!(
        row(&table, "Noir circuit size, gates (fitted*)"),
        ["171,922"]
    );
    let rec = recommendation(&table);
    assert!(rec.starts_with("N = 4."), "{rec}");
    assert!(rec.contains("only arity asked for"), "{rec}");

    // An arity rotortree did not fit: n/a, never extrapolated.
    let table = cairn(&["plan", "--leaves", "1000", "-n", "3", "--hash", "poseidon"]).success();
    assert_eq!(row(&table, "Jolt cycles (fitted*)"), ["n/a"]);
    assert_eq!(row(&table, "Noir expression width (fitted*)"), ["n/a"]);
    assert_eq!(row(&table, "Noir circuit size, gates (fitted*)"), ["n/a"]);
    assert!(recommendation(&table).starts_with("N = 3."), "{table}");
}

#[test]
fn json_holds_the_documented_fields_with_independent_values() {
    let json = plan_json(&["--leaves", "278827"]);
    assert_eq!(json["leaves"], TORNADO);
    assert_eq!(json["hash"], "blake3");
    assert_eq!(json["log_file_leaves"], 1u64 << 21);
    assert_eq!(json["segment_leaves"], 65_536);
    assert_eq!(json["set"]["memory_bytes_min"], 10 * TORNADO);
    assert_eq!(json["set"]["memory_bytes_max"], (25 * TORNADO).div_ceil(2));
    assert_eq!(json["set"]["disk_bytes_min"], 10 * TORNADO);
    assert_eq!(json["set"]["disk_bytes_max"], (25 * TORNADO).div_ceil(2));
    assert_eq!(json["recommendation"]["arity"], 2);
    assert!(json["rule"].as_str().unwrap().contains("poseidon"));
    let source = json["circuit_models"].as_str().unwrap();
    assert!(source.contains("fitted by rotortree") && source.contains("not measured by cairn"));

    let leaves = cairn_testkit::leaves(11, TORNADO as usize);
    let arities = json["arities"].as_array().expect("arities");
    assert_eq!(arities.len(), 4);
    for (plan, n) in arities.iter().zip([2u64, 4, 8, 16]) {
        let d = depth(TORNADO, n);
        let lens = level_lens(TORNADO, n);
        let nodes: u64 = lens.iter().sum();
        assert_eq!(plan["arity"], n);
        assert_eq!(plan["depth"], d, "N {n}");
        assert_eq!(plan["max_depth"], d, "N {n}");
        assert_eq!(plan["capacity"], n.pow(d as u32), "N {n}");
        assert_eq!(plan["nodes"], nodes, "N {n}");
        assert_eq!(plan["tree_memory_bytes"], 32 * nodes, "N {n}");
        // Level 0's final leaves (all but the last) hold 4 whole segments.
        assert_eq!(
            plan["tree_resident_bytes_level0_tiered"],
            32 * (nodes - 4 * 65_536),
            "N {n}"
        );
        // meta, one log file (header, frame, leaves), level files with their
        // final nodes, the checkpoint.
        let level_files: u64 = lens[1..lens.len() - 1]
            .iter()
            .map(|len| 4096 + 32 * (len - 1))
            .sum();
        let disk = 40 + 4096 + 32 + 32 * TORNADO + level_files + 68 + 40 * (d + 1);
        assert_eq!(plan["tree_disk_bytes"], disk, "N {n}");
        assert_eq!(plan["jolt_cycles"], jolt(n, d), "N {n}");
        assert_eq!(plan["noir_expression_width"], noir_width(n, d), "N {n}");
        assert_eq!(plan["noir_circuit_size"], noir_size(n, d), "N {n}");

        // The proof sizes: by the spec, and as the core encodes them.
        let want = largest_proof_bytes(TORNADO, n);
        assert_eq!(plan["membership_proof_bytes_max"], want, "N {n}");
        assert_eq!(plan["consistency_proof_bytes_max"], want, "N {n}");
        let config = TreeConfig::new(Arity::new(n).unwrap(), HashKind::Blake3);
        let mut tree = LeanImt::from_leaves(config, &leaves).unwrap();
        assert_eq!(tree.depth() as u64, d);
        assert_eq!(tree.prove(0).unwrap().to_bytes().len() as u64, want);
        assert_eq!(
            tree.prove_consistency(1, TORNADO).unwrap().to_bytes().len() as u64,
            want
        );
        for index in [1, 12_345, TORNADO / 2, TORNADO - 2, TORNADO - 1] {
            assert!(tree.prove(index).unwrap().to_bytes().len() as u64 <= want);
        }
    }
}

#[test]
fn json_fields_come_in_the_documented_order() {
    let out = cairn(&["plan", "--json", "--leaves", "1000", "--arity", "3"]).success();
    let order = [
        "\"leaves\"",
        "\"hash\"",
        "\"log_file_leaves\"",
        "\"segment_leaves\"",
        "\"hash_work_unit\"",
        "\"arities\"",
        "\"arity\"",
        "\"depth\"",
        "\"max_depth\"",
        "\"capacity\"",
        "\"nodes\"",
        "\"membership_proof_bytes_max\"",
        "\"consistency_proof_bytes_max\"",
        "\"tree_memory_bytes\"",
        "\"tree_resident_bytes_level0_tiered\"",
        "\"tree_disk_bytes\"",
        "\"verify_hash_blocks_max\"",
        "\"build_hash_blocks\"",
        "\"jolt_cycles\"",
        "\"noir_expression_width\"",
        "\"noir_circuit_size\"",
        "\"set\"",
        "\"memory_bytes_min\"",
        "\"memory_bytes_max\"",
        "\"disk_bytes_min\"",
        "\"disk_bytes_max\"",
        "\"recommendation\"",
        "\"reason\"",
        "\"rule\"",
        "\"circuit_models\"",
    ];
    let mut at = 0;
    for key in order {
        let found = out[at..]
            .find(key)
            .unwrap_or_else(|| panic!("{key} missing or out of order in {out}"));
        at += found + key.len();
    }
    let json: Value = serde_json::from_str(&out).unwrap();
    let plan = &json["arities"][0];
    assert_eq!(plan.as_object().unwrap().len(), 15);
    for key in ["jolt_cycles", "noir_expression_width", "noir_circuit_size"] {
        assert!(plan[key].is_null(), "N = 3 has no fitted {key}: {plan}");
    }
    // Leaf 0 of 1000 at N = 3: levels 1000, 334, 112, 38, 13, 5, 2, 1.
    assert_eq!(plan["depth"], 7);
    assert_eq!(plan["membership_proof_bytes_max"], 52 + 32 * (6 * 2 + 1));
}

#[test]
fn every_documented_form_of_leaves_is_a_count() {
    for (text, want) in [
        ("1000000", 1_000_000u64),
        ("1_000_000", 1_000_000),
        ("1,000,000", 1_000_000),
        ("1e6", 1_000_000),
        ("1M", 1_000_000),
        ("2.5e6", 2_500_000),
        ("2^20", 1 << 20),
        ("1Mi", 1 << 20),
        ("1", 1),
    ] {
        let json = plan_json(&["--leaves", text, "--arity", "2"]);
        assert_eq!(json["leaves"], want, "{text}");
    }
    // One leaf: depth 0, a proof of the leaf alone.
    let json = plan_json(&["--leaves", "1"]);
    for plan in json["arities"].as_array().unwrap() {
        assert_eq!(plan["depth"], 0);
        assert_eq!(plan["capacity"], 1);
        assert_eq!(plan["membership_proof_bytes_max"], 52);
    }
}

#[test]
fn bad_arguments_are_one_line_usage_errors() {
    for (value, needle) in [
        ("0", "at least 1 leaf"),
        ("abc", "not a leaf count"),
        ("", "not a leaf count"),
        ("1.5", "not a whole number"),
        ("1e-3", "not a leaf count"),
        ("12 leaves", "not a leaf count"),
        ("0x10", "not a leaf count"),
        ("2^57", "more than the 2^56"),
        ("1e30", "more than the 2^56"),
        ("-5", "not a leaf count"),
    ] {
        let arg = format!("--leaves={value}");
        cairn(&["plan", &arg]).error(2, &["--leaves", needle, "cairn plan --help"]);
    }
    cairn(&["plan"]).error(2, &["--leaves"]);
    cairn(&["plan", "--leaves", "10", "--arity", "1"]).error(2, &["--arity"]);
    cairn(&["plan", "--leaves", "10", "--hash", "md5"]).error(2, &["--hash"]);
}

#[test]
fn the_hash_decides_what_the_recommendation_weighs() {
    let poseidon = cairn(&["plan", "--leaves", "278827", "--hash", "poseidon"]).success();
    let blake3 = cairn(&["plan", "--leaves", "278827", "--hash", "blake3"]).success();
    let sha256 = cairn(&["plan", "--leaves", "278827", "--hash", "sha256"]).success();

    // Poseidon: the fewest fitted Noir/UltraHonk gates, cited as rotortree's.
    let rec = recommendation(&poseidon);
    assert!(rec.starts_with("N = 2."), "{rec}");
    for needle in [
        "Noir/UltraHonk gates",
        "98,288",
        "171,922",
        "not measured by cairn",
    ] {
        assert!(rec.contains(needle), "{needle:?} not in {rec}");
    }
    assert!(row(&poseidon, "poseidon permutations: verify, max").len() == 4);

    // BLAKE3: the fewest compressions to verify; N = 2 and 4 tie at 19 and
    // the smaller proof decides.
    assert_eq!(
        row(&blake3, "blake3 compressions: verify, max"),
        ["19", "19", "25", "35"]
    );
    let rec = recommendation(&blake3);
    assert!(rec.starts_with("N = 2."), "{rec}");
    assert!(
        rec.contains("blake3 compressions") && rec.contains("tied with N = 4"),
        "{rec}"
    );
    assert!(!rec.contains("Noir"), "{rec}");

    // SHA-256 pays a padding block on 2 children: N = 4 verifies cheapest.
    assert_eq!(
        row(&sha256, "sha256 compressions: verify, max"),
        ["38", "29", "32", "39"]
    );
    let rec = recommendation(&sha256);
    assert!(rec.starts_with("N = 4."), "{rec}");
    assert!(rec.contains("29 against 32 at N = 8"), "{rec}");

    // The JSON says the same.
    for (hash, arity) in [
        ("poseidon", 2),
        ("blake3", 2),
        ("sha256", 4),
        ("keccak256", 4),
    ] {
        let json = plan_json(&["--leaves", "278827", "--hash", hash]);
        assert_eq!(json["recommendation"]["arity"], arity, "{hash}");
        assert_eq!(json["hash"], hash);
    }
}

#[test]
fn help_documents_the_sources_the_rule_and_the_json_fields() {
    let help = cairn(&["plan", "--help"]).success();
    for needle in [
        "fitted by rotortree",
        "not measured by cairn",
        "2948.4 + 1832.9 N D + (899.5 + 2993.8 N - 103.4 N^2) d",
        "68 + (217 N - 100) d",
        "2962 + 30 N + (551 N^2 + 2629 N - 2448) d",
        "n/a",
        "Recommendation rule",
        "leaf 0",
        "membership_proof_bytes_max",
        "consistency_proof_bytes_max",
        "tree_resident_bytes_level0_tiered",
        "noir_circuit_size",
        "10 to 12.5 bytes per value",
        "2^30",
    ] {
        assert!(
            help.contains(needle),
            "plan --help lacks {needle:?}:\n{help}"
        );
    }
    let top = cairn(&["--help"]).success();
    assert!(top.contains("plan"), "{top}");
}
