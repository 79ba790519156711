//! `cairn plan`: the model calculator. For a number of leaves and each
//! arity, the figures that decide a tree's shape: depth, proof sizes, memory
//! and disk for the tree and the nullifier set, hashing work, and the circuit
//! cost models that rotortree fitted; then a recommendation with its reason.
//!
//! Everything is integer arithmetic on the shape (`cairn_core::shape`), the
//! binary proof layout (docs/spec.md 7.1) and the storage format
//! (docs/file-format.md). Nothing here builds a tree; the unit tests check
//! the model against trees the core builds, so it cannot drift from the
//! encoders.

mod model;

use std::fmt::Write as _;

use cairn_core::level::SEGMENT_LEN;
use cairn_core::{Arity, HashKind};

pub use model::*;

use crate::args::{parse_arity, parse_hash_kind};
use crate::failure::Failure;
use crate::output;
use crate::units::{Count, group, human_bytes, parse_count, per_leaf};

/// The long help of the command.
pub(crate) const LONG_ABOUT: &str = "\
Print the model of a tree holding L leaves at each arity (2, 4, 8 and 16, or the one given with \
--arity), each at the smallest maximum depth that holds L, then a recommended arity with its \
reason. Nothing is built or measured: every figure is computed from the tree's shape, the proof \
encoding (docs/spec.md) and the storage format (docs/file-format.md).

--leaves takes a count (not a file): 278827, 278_827, 278,827, 1e6, 2.5e6, 1M (K, M, G, T are \
powers of 1000; Ki, Mi, Gi, Ti powers of 1024) or 2^30; at least 1 and at most 2^56.

Figures, per arity N:
  depth: ceil(log_N L), 0 for one leaf; the maximum depth D is the smallest that holds L, so D = \
depth, and capacity = N^D leaves.
  proof bytes: the binary encodings (docs/spec.md 7.1). Membership: the largest over every leaf \
(leaf 0, whose group is full at every level, reaches it). Consistency to size L: the largest over \
every old size from 1 to L (old size 1 reaches it; it has the same size as the largest membership \
proof: the same header, one leaf and the same siblings).
  tree memory: 32 bytes per node, every level in memory. Resident with level 0 tiered: the same \
minus level 0's complete final segments (of 65,536 leaves, 2 MiB), which a checkpoint serves from \
mappings of the log (the store's default).
  tree on disk: the bytes a store holding L leaves wrote after one bulk load and a checkpoint: \
the 40-byte meta; per log file of 2^21 leaves (the default) a 4096-byte header and one 32-byte \
frame (every further group commit adds a frame); 32 bytes per leaf; per level above 0 with final \
nodes a 4096-byte header and 32 bytes per final node (all but the level's last); the checkpoint, \
68 + 40 x (depth + 1) bytes. Before file-system block rounding.
  hash work: the hash's block operations (BLAKE3 and SHA-256 compressions of 64-byte blocks, \
Keccak-f permutations of 136-byte blocks, Poseidon permutations of width group + 1, which cost \
more the wider they are) to verify the largest membership proof, and to build the whole tree \
(shown per leaf in the table).
  circuit models: Jolt execution cycles and Noir (UltraHonk via bb) expression width and circuit \
size, as fitted by rotortree 0.20 (its README) for N = 2, 4, 8 and 16 only; they are rotortree's \
fitted models, not measured by cairn, and shown as n/a for other arities rather than extrapolated:
    Jolt cycles ~ 2948.4 + 1832.9 N D + (899.5 + 2993.8 N - 103.4 N^2) d
    Noir expression width = 68 + (217 N - 100) d
    Noir circuit size = 2962 + 30 N + (551 N^2 + 2629 N - 2448) d
  with D the maximum depth and d the depth (equal here). Jolt cycles are rounded to the nearest \
whole cycle.
  nullifier set (the same at every arity): 10 to 12.5 bytes per value in memory and again in its \
disk checkpoint (8-byte slots in an open-addressing table kept between 64% and 80% full).

Recommendation rule, among the arities shown: under poseidon, the fewest Noir/UltraHonk gates \
(the fitted circuit size), because a Poseidon tree is there to be proven in circuits; under \
blake3, sha256 and keccak256, the fewest hash block operations to verify the largest membership \
proof, because every client pays that for every proof, in a chain that cannot run in parallel \
(the build work is shown but not weighed: the server pays it once per leaf). Ties go to the \
smaller membership proof, then to the smaller arity. With --arity the one arity given is the \
recommendation, and the reason gives its figures.

--json prints one line:
  {\"leaves\":L,\"hash\":\"blake3\",\"log_file_leaves\":2097152,\"segment_leaves\":65536,
   \"hash_work_unit\":\"blake3 compressions\",\"arities\":[{..},..],
   \"set\":{\"memory_bytes_min\":..,\"memory_bytes_max\":..,\"disk_bytes_min\":..,\"disk_bytes_max\":..},
   \"recommendation\":{\"arity\":N,\"reason\":\"..\"},\"rule\":\"..\",\"circuit_models\":\"..\"}
with one object per arity, its fields in this order:
  arity, depth, max_depth, capacity, nodes,
  membership_proof_bytes_max, consistency_proof_bytes_max,
  tree_memory_bytes, tree_resident_bytes_level0_tiered, tree_disk_bytes,
  verify_hash_blocks_max, build_hash_blocks,
  jolt_cycles, noir_expression_width, noir_circuit_size (null where rotortree fitted no model).
Every count is a whole number of bytes, nodes, leaves, blocks, cycles or gates.

Examples:
  cairn plan --leaves 278827                    # every arity, BLAKE3
  cairn plan --leaves 2^32 --hash poseidon      # a circuit's tree: fewest gates wins
  cairn plan --leaves 100M --arity 4 --json     # one arity, machine-readable";

/// Model a tree of L leaves at each arity and recommend one.
#[derive(clap::Args, Debug)]
pub struct PlanCmd {
    /// How many leaves the tree must hold (a count, not a file): 278827, 1e6, 2.5M, 16Mi, 2^30.
    #[arg(long, value_name = "L", value_parser = parse_leaves)]
    leaves: u64,
    /// Model only this arity (2 to 16) instead of 2, 4, 8 and 16.
    #[arg(long, short = 'n', value_name = "N", value_parser = parse_arity)]
    arity: Option<Arity>,
    /// Node hash: blake3, sha256, keccak256, poseidon or mimcsponge; decides what the recommendation weighs.
    #[arg(long, value_name = "HASH", value_parser = parse_hash_kind, default_value = "blake3")]
    hash: HashKind,
    /// Print the figures as one line of JSON (its fields are listed in --help).
    #[arg(long)]
    json: bool,
}

impl PlanCmd {
    pub(crate) fn run(self) -> Result<(), Failure> {
        let plan = Plan::new(self.leaves, self.arity, self.hash);
        if self.json {
            output::line(&plan.json())
        } else {
            output::line(plan.table().trim_end())
        }
    }
}

/// The whole model.
#[derive(Clone, Debug)]
pub struct Plan {
    pub leaves: u64,
    pub hash: HashKind,
    pub arities: Vec<ArityPlan>,
    pub recommendation: Recommendation,
}

impl Plan {
    /// The model of `leaves` leaves at `arity`, or at 2, 4, 8 and 16.
    pub fn new(leaves: u64, arity: Option<Arity>, hash: HashKind) -> Plan {
        let arities: Vec<ArityPlan> = match arity {
            Some(arity) => vec![ArityPlan::new(leaves, arity, hash)],
            None => DEFAULT_ARITIES
                .iter()
                .map(|&n| ArityPlan::new(leaves, Arity::new(n).expect("a valid arity"), hash))
                .collect(),
        };
        let recommendation = recommend(&arities, hash);
        Plan {
            leaves,
            hash,
            arities,
            recommendation,
        }
    }

    /// The one-line JSON documented in the long help.
    pub fn json(&self) -> String {
        let opt = |value: Option<u64>| value.map_or_else(|| "null".to_owned(), |v| v.to_string());
        let arities: Vec<String> = self
            .arities
            .iter()
            .map(|a| {
                format!(
                    concat!(
                        r#"{{"arity":{},"depth":{},"max_depth":{},"capacity":{},"nodes":{},"#,
                        r#""membership_proof_bytes_max":{},"consistency_proof_bytes_max":{},"#,
                        r#""tree_memory_bytes":{},"tree_resident_bytes_level0_tiered":{},"#,
                        r#""tree_disk_bytes":{},"verify_hash_blocks_max":{},"build_hash_blocks":{},"#,
                        r#""jolt_cycles":{},"noir_expression_width":{},"noir_circuit_size":{}}}"#
                    ),
                    a.arity,
                    a.depth,
                    a.max_depth,
                    a.capacity,
                    a.nodes,
                    a.membership_proof_bytes_max,
                    a.consistency_proof_bytes_max,
                    a.tree_memory_bytes,
                    a.tree_resident_bytes_level0_tiered,
                    a.tree_disk_bytes,
                    a.verify_hash_blocks_max,
                    a.build_hash_blocks,
                    opt(a.jolt_cycles),
                    opt(a.noir_expression_width),
                    opt(a.noir_circuit_size),
                )
            })
            .collect();
        format!(
            concat!(
                r#"{{"leaves":{},"hash":{},"log_file_leaves":{},"segment_leaves":{},"#,
                r#""hash_work_unit":{},"arities":[{}],"#,
                r#""set":{{"memory_bytes_min":{},"memory_bytes_max":{},"disk_bytes_min":{},"disk_bytes_max":{}}},"#,
                r#""recommendation":{{"arity":{},"reason":{}}},"rule":{},"circuit_models":{}}}"#
            ),
            self.leaves,
            json_string(self.hash.name()),
            store_format::LOG_FILE_LEAVES,
            SEGMENT_LEN,
            json_string(hash_work_unit(self.hash)),
            arities.join(","),
            set_model::bytes_min(self.leaves),
            set_model::bytes_max(self.leaves),
            set_model::bytes_min(self.leaves),
            set_model::bytes_max(self.leaves),
            self.recommendation.arity,
            json_string(&self.recommendation.reason),
            json_string(RULE),
            json_string(CIRCUIT_MODELS_SOURCE),
        )
    }

    /// The table printed by default.
    pub fn table(&self) -> String {
        let unit = hash_work_unit(self.hash);
        let fitted = |value: Option<u64>| value.map_or_else(|| "n/a".to_owned(), group);
        let mut cells: Vec<(String, Vec<String>)> = Vec::new();
        let mut row = |label: &str, cell: &dyn Fn(&ArityPlan) -> String| {
            cells.push((label.to_owned(), self.arities.iter().map(cell).collect()));
        };
        row("arity N", &|a| a.arity.to_string());
        row("depth (= max depth D)", &|a| a.depth.to_string());
        row("capacity at D (leaves)", &|a| group(a.capacity));
        row("membership proof, max (bytes)", &|a| {
            group(a.membership_proof_bytes_max)
        });
        row("consistency proof, max (bytes)", &|a| {
            group(a.consistency_proof_bytes_max)
        });
        row("tree nodes", &|a| group(a.nodes));
        row("tree memory, all levels", &|a| {
            human_bytes(a.tree_memory_bytes)
        });
        row("tree resident, level 0 tiered", &|a| {
            human_bytes(a.tree_resident_bytes_level0_tiered)
        });
        row("tree on disk", &|a| human_bytes(a.tree_disk_bytes));
        row(&format!("{unit}: verify, max"), &|a| {
            group(a.verify_hash_blocks_max)
        });
        row(&format!("{unit}: build, per leaf"), &|a| {
            per_leaf(a.build_hash_blocks, self.leaves)
        });
        row("Jolt cycles (fitted*)", &|a| fitted(a.jolt_cycles));
        row("Noir expression width (fitted*)", &|a| {
            fitted(a.noir_expression_width)
        });
        row("Noir circuit size, gates (fitted*)", &|a| {
            fitted(a.noir_circuit_size)
        });
        let label_width = cells.iter().map(|(l, _)| l.len()).max().unwrap_or(0) + 2;
        let cell_width = cells
            .iter()
            .flat_map(|(_, c)| c.iter().map(String::len))
            .max()
            .unwrap_or(0)
            .max(10)
            + 2;

        let mut out = String::new();
        let _ = writeln!(
            out,
            "cairn plan: {} leaves, hash {}, each arity at the smallest max depth that holds them",
            group(self.leaves),
            self.hash
        );
        out.push('\n');
        for (label, row) in &cells {
            let _ = write!(out, "{label:<label_width$}");
            for cell in row {
                let _ = write!(out, "{cell:>cell_width$}");
            }
            out.push('\n');
        }
        out.push('\n');
        let _ = writeln!(
            out,
            "nullifier set (any arity): memory {} to {}, disk checkpoint the same (10 to 12.5 bytes a value)",
            human_bytes(set_model::bytes_min(self.leaves)),
            human_bytes(set_model::bytes_max(self.leaves)),
        );
        if self.leaves > set_model::MAX_VALUES {
            let _ = writeln!(
                out,
                "note: the nullifier set's 36-bit leaf index holds at most 2^36 - 1 values, fewer than {}",
                group(self.leaves)
            );
        }
        let _ = writeln!(
            out,
            "proofs: the largest binary proofs (membership of leaf 0, consistency from size 1)"
        );
        let _ = writeln!(
            out,
            "disk: after one bulk load and a checkpoint, 2^21-leaf log files with one frame each"
        );
        let _ = writeln!(
            out,
            "hash work: {unit}, counted from the hash's block size, not timed"
        );
        let _ = writeln!(
            out,
            "* {CIRCUIT_MODELS_SOURCE}; n/a: no fitted model for that arity"
        );
        out.push('\n');
        let _ = writeln!(
            out,
            "recommendation: N = {}. {}",
            self.recommendation.arity, self.recommendation.reason
        );
        let _ = writeln!(out, "rule: {RULE}");
        out
    }
}

/// Parses a leaf count: digits (with `_` or `,` between them), an optional
/// fraction and exponent (`2.5e6`), a suffix K, M, G, T (powers of 1000) or
/// Ki, Mi, Gi, Ti (powers of 1024), or `B^E`. The result must be a whole
/// number from 1 to [`MAX_LEAVES`].
pub fn parse_leaves(text: &str) -> Result<u64, String> {
    let value = parse_count(text.trim()).ok_or_else(|| {
        format!(
            "{text:?} is not a leaf count: want a whole number such as 278827, 1e6, 2.5M, 16Mi or 2^30"
        )
    })?;
    match value {
        Count::Whole(0) => Err("a plan needs at least 1 leaf".to_owned()),
        Count::Whole(n) if n <= u128::from(MAX_LEAVES) => Ok(n as u64),
        Count::Whole(_) | Count::TooLarge => {
            Err(format!("{text} leaves is more than the 2^56 a plan models"))
        }
        Count::Fraction => Err(format!("{text} is not a whole number of leaves")),
    }
}

/// `text` as a JSON string.
fn json_string(text: &str) -> String {
    serde_json::to_string(text).expect("a string serialises")
}

#[cfg(test)]
mod tests {
    use super::*;

    use cairn_core::{LeanImt, TreeConfig, shape};

    fn arity(n: u64) -> Arity {
        Arity::new(n).unwrap()
    }

    #[test]
    fn leaf_counts_parse_in_every_documented_form() {
        let cases = [
            ("278827", 278_827),
            ("278_827", 278_827),
            ("278,827", 278_827),
            (" 42 ", 42),
            ("1e6", 1_000_000),
            ("1E6", 1_000_000),
            ("1e+6", 1_000_000),
            ("2.5e6", 2_500_000),
            ("1M", 1_000_000),
            ("1m", 1_000_000),
            ("2.5M", 2_500_000),
            ("3k", 3_000),
            ("1G", 1_000_000_000),
            ("2T", 2_000_000_000_000),
            ("16Mi", 16 << 20),
            ("1Ki", 1024),
            ("1Gi", 1 << 30),
            ("1Ti", 1 << 40),
            ("2^30", 1 << 30),
            ("10^6", 1_000_000),
            ("2^56", 1 << 56),
            ("1.5Ki", 1536),
            ("0.5e1", 5),
            ("1e0", 1),
        ];
        for (text, want) in cases {
            assert_eq!(parse_leaves(text), Ok(want), "{text}");
        }
    }

    #[test]
    fn bad_leaf_counts_are_refused_with_a_reason() {
        for text in ["0", "0e5", "0^3", "000", "0.0"] {
            let error = parse_leaves(text).unwrap_err();
            assert!(error.contains("at least 1"), "{text}: {error}");
        }
        for text in ["1.5", "1e-3", "2.5e0", "1.0001K"] {
            let error = parse_leaves(text).unwrap_err();
            assert!(
                error.contains("whole number") || error.contains("not a leaf count"),
                "{text}: {error}"
            );
        }
        for text in [
            "2^57",
            "1e18",
            "1e999",
            "99999999999999999999999999999999999999999",
        ] {
            let error = parse_leaves(text).unwrap_err();
            assert!(error.contains("more than the 2^56"), "{text}: {error}");
        }
        for text in [
            "", "abc", "-5", "+5", "1x", "1MM", "1e", "e6", "2^", "^3", "2^-1", "1__0", "_1", "1_",
            "1.", ".5", "1.2.3", "0x10", "1 000", "1e6e2",
        ] {
            let error = parse_leaves(text).unwrap_err();
            assert!(error.contains("not a leaf count"), "{text:?}: {error}");
        }
    }

    #[test]
    fn the_shape_matches_trees_the_core_builds() {
        for n in [2, 3, 4, 5, 8, 16] {
            for size in [1, 2, 3, 15, 16, 17, 1000] {
                let leaves = cairn_testkit::leaves(3, size);
                let tree =
                    LeanImt::from_leaves(TreeConfig::new(arity(n), HashKind::Blake3), &leaves)
                        .unwrap();
                let plan = ArityPlan::new(size as u64, arity(n), HashKind::Blake3);
                assert_eq!(plan.depth, u64::from(tree.depth()), "N {n} size {size}");
                let nodes: usize = tree.levels().iter().map(|level| level.len()).sum();
                assert_eq!(plan.nodes, nodes as u64, "N {n} size {size}");
                assert_eq!(plan.tree_memory_bytes, 32 * nodes as u64);
                assert!(plan.capacity >= size as u64);
                assert!(plan.depth == 0 || plan.capacity / n < size as u64);
            }
        }
    }

    /// The proof sizes of the model against every proof the core encodes
    /// for a 1000-leaf tree: the maximum over every leaf and every old size.
    #[test]
    fn proof_sizes_match_the_encoder_for_every_position() {
        let size = 1000u64;
        let leaves = cairn_testkit::leaves(5, size as usize);
        for n in [2, 3, 4, 7, 8, 16] {
            let mut tree =
                LeanImt::from_leaves(TreeConfig::new(arity(n), HashKind::Sha256), &leaves).unwrap();
            let mut membership_max = 0;
            for index in 0..size {
                let bytes = tree.prove(index).unwrap().to_bytes().len() as u64;
                assert_eq!(bytes, membership_proof_bytes(index, size, arity(n)));
                membership_max = membership_max.max(bytes);
            }
            let mut consistency_max = 0;
            for old in 0..=size {
                let bytes = tree.prove_consistency(old, size).unwrap().to_bytes().len() as u64;
                assert_eq!(bytes, consistency_proof_bytes(old, size, arity(n)));
                if old > 0 {
                    consistency_max = consistency_max.max(bytes);
                }
            }
            let plan = ArityPlan::new(size, arity(n), HashKind::Sha256);
            assert_eq!(plan.membership_proof_bytes_max, membership_max, "N {n}");
            assert_eq!(plan.consistency_proof_bytes_max, consistency_max, "N {n}");
        }
    }

    /// Leaf 0 and old size 1 reach the largest proofs at every size, and the
    /// verification work is the largest there too.
    #[test]
    fn leaf_0_and_old_size_1_are_the_worst_cases() {
        for n in 2..=16 {
            for size in 1..=300u64 {
                let a = arity(n);
                let plan = ArityPlan::new(size, a, HashKind::Keccak256);
                let membership = (0..size)
                    .map(|i| membership_proof_bytes(i, size, a))
                    .max()
                    .unwrap();
                let consistency = (1..=size)
                    .map(|m| consistency_proof_bytes(m, size, a))
                    .max()
                    .unwrap();
                assert_eq!(plan.membership_proof_bytes_max, membership);
                assert_eq!(plan.consistency_proof_bytes_max, consistency);
                for hash in HashKind::ALL {
                    let verify = (0..size)
                        .map(|i| {
                            shape::Path::new(i, size, a)
                                .filter(|s| s.hashes())
                                .map(|s| hash_blocks(hash, s.group_len as u64))
                                .sum::<u64>()
                        })
                        .max()
                        .unwrap();
                    assert_eq!(ArityPlan::new(size, a, hash).verify_hash_blocks_max, verify);
                }
            }
        }
    }

    #[test]
    fn hash_blocks_follow_each_hash_s_block_size() {
        // BLAKE3: 64-byte blocks, no padding block.
        assert_eq!(hash_blocks(HashKind::Blake3, 2), 1);
        assert_eq!(hash_blocks(HashKind::Blake3, 3), 2);
        assert_eq!(hash_blocks(HashKind::Blake3, 16), 8);
        // SHA-256: 64 bytes + 9 of padding need a second block.
        assert_eq!(hash_blocks(HashKind::Sha256, 1), 1);
        assert_eq!(hash_blocks(HashKind::Sha256, 2), 2);
        assert_eq!(hash_blocks(HashKind::Sha256, 4), 3);
        assert_eq!(hash_blocks(HashKind::Sha256, 16), 9);
        // Keccak-256: rate 136; 128 bytes fit one block, 136 do not.
        assert_eq!(hash_blocks(HashKind::Keccak256, 4), 1);
        assert_eq!(hash_blocks(HashKind::Keccak256, 5), 2);
        assert_eq!(hash_blocks(HashKind::Keccak256, 8), 2);
        assert_eq!(hash_blocks(HashKind::Keccak256, 16), 4);
        assert_eq!(hash_blocks(HashKind::Poseidon, 16), 1);
    }

    #[test]
    fn build_work_counts_every_hashed_group_once() {
        // 10 leaves at N = 4: level 0 has groups of 4, 4, 2; level 1 one
        // group of 3. BLAKE3: 2 + 2 + 1 + 2 = 7 compressions.
        let plan = ArityPlan::new(10, arity(4), HashKind::Blake3);
        assert_eq!(plan.build_hash_blocks, 7);
        // 9 leaves at N = 4: the last leaf is lifted (no hash).
        let plan = ArityPlan::new(9, arity(4), HashKind::Poseidon);
        assert_eq!(plan.build_hash_blocks, 2 + 1);
        assert_eq!(
            ArityPlan::new(1, arity(2), HashKind::Blake3).build_hash_blocks,
            0
        );
    }

    #[test]
    fn the_circuit_models_are_rotortree_s_formulas() {
        // Exact values, by hand from the README's coefficients.
        // Jolt N = 4, D = d = 10: 2948.4 + 1832.9 x 40 + (899.5 + 11975.2 -
        // 1654.4) x 10 = 2948.4 + 73316 + 112203 = 188467.4.
        assert_eq!(jolt_cycles(4, 10, 10), Some(188_467));
        assert_eq!(jolt_cycles(2, 0, 0), Some(2948));
        assert_eq!(noir_expression_width(2, 19), Some(68 + 334 * 19));
        assert_eq!(
            noir_circuit_size(16, 5),
            Some(2962 + 480 + (141_056 + 42_064 - 2448) * 5)
        );
        for n in [3, 5, 7, 9, 15] {
            assert_eq!(jolt_cycles(n, 3, 3), None);
            assert_eq!(noir_expression_width(n, 3), None);
            assert_eq!(noir_circuit_size(n, 3), None);
        }
    }

    #[test]
    fn memory_and_disk_follow_the_file_format() {
        // 278,827 leaves at N = 4: levels 278827, 69707, 17427, 4357, 1090,
        // 273, 69, 18, 5, 2, 1.
        let lens = [
            278_827u64, 69_707, 17_427, 4_357, 1_090, 273, 69, 18, 5, 2, 1,
        ];
        let plan = ArityPlan::new(278_827, arity(4), HashKind::Blake3);
        let nodes: u64 = lens.iter().sum();
        assert_eq!(plan.nodes, nodes);
        // Level 0's final leaves 0..278826 hold 4 complete segments of 65,536.
        assert_eq!(
            plan.tree_resident_bytes_level0_tiered,
            32 * (nodes - 4 * 65_536)
        );
        let levels: u64 = lens[1..10].iter().map(|len| 4096 + 32 * (len - 1)).sum();
        let disk = 40 + (4096 + 32 + 32 * 278_827) + levels + (68 + 40 * 11);
        assert_eq!(plan.tree_disk_bytes, disk);
        // Exactly one segment: its last leaf is not final, so nothing tiers.
        let plan = ArityPlan::new(65_536, arity(2), HashKind::Blake3);
        assert_eq!(
            plan.tree_resident_bytes_level0_tiered,
            plan.tree_memory_bytes
        );
        let plan = ArityPlan::new(65_537, arity(2), HashKind::Blake3);
        assert_eq!(
            plan.tree_memory_bytes - plan.tree_resident_bytes_level0_tiered,
            32 * 65_536
        );
        // Two log files past 2^21 leaves; one leaf: no level files.
        let one = ArityPlan::new(1, arity(2), HashKind::Blake3);
        assert_eq!(one.tree_disk_bytes, 40 + 4096 + 32 + 32 + 68 + 40);
        let two_files = ArityPlan::new((1 << 21) + 1, arity(16), HashKind::Blake3);
        let one_file = ArityPlan::new(1 << 21, arity(16), HashKind::Blake3);
        assert_eq!((one_file.depth, two_files.depth), (6, 6));
        // A second log file (header, frame, one leaf) and one more final
        // node at each of levels 1 to 5 (lengths 2^17 + 1, .., 33, 3).
        assert_eq!(
            two_files.tree_disk_bytes - one_file.tree_disk_bytes,
            4096 + 32 + 32 + 5 * 32
        );
    }

    #[test]
    fn the_set_is_10_to_12_5_bytes_a_value() {
        assert_eq!(set_model::bytes_min(1000), 10_000);
        assert_eq!(set_model::bytes_max(1000), 12_500);
        assert_eq!(set_model::bytes_max(1), 13);
    }

    #[test]
    fn the_recommendation_follows_the_rule() {
        let poseidon = Plan::new(278_827, None, HashKind::Poseidon);
        assert_eq!(poseidon.recommendation.arity, 2);
        assert!(
            poseidon
                .recommendation
                .reason
                .contains("Noir/UltraHonk gates")
        );
        assert!(
            poseidon
                .recommendation
                .reason
                .contains("not measured by cairn")
        );
        assert!(
            poseidon.recommendation.reason.contains("Jolt"),
            "{}",
            poseidon.recommendation.reason
        );
        // SHA-256 and Keccak: N = 4 verifies with the fewest blocks.
        for hash in [HashKind::Sha256, HashKind::Keccak256] {
            let plan = Plan::new(278_827, None, hash);
            let best = plan
                .arities
                .iter()
                .map(|a| a.verify_hash_blocks_max)
                .min()
                .unwrap();
            let chosen = plan
                .arities
                .iter()
                .find(|a| a.arity == plan.recommendation.arity)
                .unwrap();
            assert_eq!(chosen.verify_hash_blocks_max, best);
            assert_eq!(plan.recommendation.arity, 4, "{hash}");
        }
        // BLAKE3: N = 2 and N = 4 tie on compressions; the smaller proof wins.
        let blake3 = Plan::new(278_827, None, HashKind::Blake3);
        assert_eq!(blake3.recommendation.arity, 2);
        assert!(blake3.recommendation.reason.contains("tied with N = 4"));
        // One arity: it is the recommendation, fitted or not.
        let five = Plan::new(1000, Some(arity(5)), HashKind::Poseidon);
        assert_eq!(five.recommendation.arity, 5);
        assert!(five.recommendation.reason.contains("no circuit model"));
        for plan in [poseidon, blake3, five] {
            let reason = &plan.recommendation.reason;
            assert!(reason.ends_with('.') && !reason.contains('\n'), "{reason}");
        }
    }

    #[test]
    fn the_largest_count_does_not_overflow() {
        for n in [2, 3, 16] {
            for hash in HashKind::ALL {
                let plan = ArityPlan::new(MAX_LEAVES, arity(n), hash);
                assert!(plan.tree_memory_bytes > 32 * MAX_LEAVES);
            }
        }
        let plan = Plan::new(MAX_LEAVES, None, HashKind::Sha256);
        assert!(plan.table().contains("at most 2^36 - 1"));
        serde_json::from_str::<serde_json::Value>(&plan.json()).unwrap();
    }
}
