//! The model `cairn plan` prints: integer arithmetic on the shape
//! (`cairn_core::shape`), the binary proof layout (docs/spec.md 7.1), the
//! storage format (docs/file-format.md) and the nullifier set's design,
//! the circuit cost models rotortree fitted, and the recommendation rule.
//! The command's unit tests check it against trees the core builds.

use std::fmt::Write as _;

use cairn_core::level::SEGMENT_LEN;
use cairn_core::{Arity, HashKind, shape};

use crate::units::group;

/// The largest count a plan models: every byte figure then fits in a u64.
pub const MAX_LEAVES: u64 = 1 << 56;

/// The arities modelled when none is given.
pub const DEFAULT_ARITIES: [u64; 4] = [2, 4, 8, 16];

/// Storage constants, from docs/file-format.md (`crates/store/src/format.rs`
/// and `config.rs`; the CLI does not depend on the store crate).
pub mod store_format {
    /// Leaves per log file: 2^21, the default (`DEFAULT_LOG_SHIFT`).
    pub const LOG_FILE_LEAVES: u64 = 1 << 21;
    /// The header of a log file and of a level file: one 4 KiB page.
    pub const FILE_HEADER_BYTES: u64 = 4096;
    /// One frame per group commit per log file.
    pub const FRAME_BYTES: u64 = 32;
    /// `cairn.meta`.
    pub const META_BYTES: u64 = 40;
    /// The checkpoint's fixed part: a 64-byte header and a 4-byte CRC.
    pub const CHECKPOINT_FIXED_BYTES: u64 = 68;
    /// The checkpoint's bytes per level: `final_len` and the last node.
    pub const CHECKPOINT_LEVEL_BYTES: u64 = 40;
}

/// The nullifier set's cost per value, from its design (the database
/// crate, `crates/db/src/set/table.rs`): an open-addressing table of 8-byte
/// slots (a 28-bit keyed fingerprint and a 36-bit leaf index), grown by
/// 1.25x when 80% full,
/// so between 64% and 80% full: 8 / 0.8 = 10 to 8 / 0.64 = 12.5 bytes per
/// value in memory, and the same again in its disk checkpoint.
pub mod set_model {
    /// Bytes per slot.
    pub const SLOT_BYTES: u64 = 8;
    /// The load at which the table grows (percent): the fullest it gets.
    pub const MAX_LOAD_PERCENT: u64 = 80;
    /// The load right after growing by 1.25x (percent): the emptiest it gets.
    pub const MIN_LOAD_PERCENT: u64 = 64;
    /// The 36-bit leaf index in a slot (plus one; 0 marks an empty slot):
    /// the most values the set can hold.
    pub const MAX_VALUES: u64 = (1 << 36) - 1;

    /// Bytes for `values` at the fullest load (10 per value).
    pub fn bytes_min(values: u64) -> u64 {
        bytes_at(values, MAX_LOAD_PERCENT)
    }

    /// Bytes for `values` at the emptiest load (12.5 per value).
    pub fn bytes_max(values: u64) -> u64 {
        bytes_at(values, MIN_LOAD_PERCENT)
    }

    /// Slot bytes for `values` at `load_percent`, rounded up (in u128: at
    /// 2^56 values the product exceeds u64; the result does not).
    fn bytes_at(values: u64, load_percent: u64) -> u64 {
        let bytes =
            (u128::from(values) * u128::from(SLOT_BYTES) * 100).div_ceil(u128::from(load_percent));
        u64::try_from(bytes).expect("at most 12.5 x 2^56 bytes")
    }
}

/// Where the circuit models come from; printed with them.
pub const CIRCUIT_MODELS_SOURCE: &str = "Jolt cycles and Noir (UltraHonk via bb) expression width \
and circuit size are fitted by rotortree 0.20 (its README) for N = 2, 4, 8, 16, not measured by \
cairn; D = d here";

/// The recommendation rule; printed with the recommendation.
pub const RULE: &str = "poseidon: fewest Noir/UltraHonk gates (fitted circuit size); blake3, \
sha256, keccak256: fewest hash block operations to verify the largest membership proof; ties: \
smaller proof, then smaller arity";

/// The arities rotortree fitted its circuit models for.
const FITTED_ARITIES: [u64; 4] = [2, 4, 8, 16];

/// Bytes of the binary proof header (docs/spec.md 7.1): version, kind,
/// arity, hash id, two u64s. Then 32 bytes per value.
const PROOF_HEADER_BYTES: u64 = 20;

/// The binary membership proof of leaf `index` in a tree of `size` leaves:
/// the header, the leaf and its siblings.
pub fn membership_proof_bytes(index: u64, size: u64, arity: Arity) -> u64 {
    let siblings = shape::membership_sibling_count(index, size, arity) as u64;
    PROOF_HEADER_BYTES + 32 * (1 + siblings)
}

/// The binary consistency proof from `old_size` to `new_size`: the header,
/// the edge leaf when `old_size > 0`, and the hashes.
pub fn consistency_proof_bytes(old_size: u64, new_size: u64, arity: Arity) -> u64 {
    let hashes = shape::consistency_hash_count(old_size, new_size, arity) as u64;
    PROOF_HEADER_BYTES + 32 * (u64::from(old_size > 0) + hashes)
}

/// The block operations one hash of `children` 32-byte children costs.
pub fn hash_blocks(hash: HashKind, children: u64) -> u64 {
    let bytes = 32 * children;
    match hash {
        // One chunk (at most 16 x 32 = 512 of its 1024 bytes): one
        // compression per 64-byte block, the last one full, no padding block.
        HashKind::Blake3 => bytes.div_ceil(64),
        // 64-byte blocks after appending 0x80 and the 8-byte bit length.
        HashKind::Sha256 => (bytes + 9).div_ceil(64),
        // Keccak-f[1600] per 136-byte block; the padding takes at least a byte.
        HashKind::Keccak256 => bytes / 136 + 1,
        // One permutation of width children + 1.
        HashKind::Poseidon => 1,
        // The sponge absorbs one child per 220-round Feistel permutation.
        HashKind::MiMCSponge => children,
    }
}

/// What the table and JSON call a block operation of `hash`.
pub fn hash_work_unit(hash: HashKind) -> &'static str {
    match hash {
        HashKind::Blake3 => "blake3 compressions",
        HashKind::Sha256 => "sha256 compressions",
        HashKind::Keccak256 => "keccak256 permutations",
        HashKind::Poseidon => "poseidon permutations",
        HashKind::MiMCSponge => "mimcsponge permutations",
    }
}

/// rotortree's fitted Jolt execution cycles, rounded to the nearest cycle,
/// for `n` in 2, 4, 8, 16 (max depth `max_depth`, depth `depth`).
pub fn jolt_cycles(n: u64, max_depth: u64, depth: u64) -> Option<u64> {
    FITTED_ARITIES.contains(&n).then(|| {
        // In tenths, to stay in integers: 2948.4 + 1832.9 N D + (899.5 +
        // 2993.8 N - 103.4 N^2) d. The per-level term is positive for every
        // fitted N (223,299 tenths at N = 16).
        let tenths = 29_484 + 18_329 * n * max_depth + (8_995 + 29_938 * n - 1_034 * n * n) * depth;
        (tenths + 5) / 10
    })
}

/// rotortree's fitted Noir (UltraHonk via bb) expression width.
pub fn noir_expression_width(n: u64, depth: u64) -> Option<u64> {
    FITTED_ARITIES
        .contains(&n)
        .then(|| 68 + (217 * n - 100) * depth)
}

/// rotortree's fitted Noir (UltraHonk via bb) circuit size, in gates.
pub fn noir_circuit_size(n: u64, depth: u64) -> Option<u64> {
    FITTED_ARITIES
        .contains(&n)
        .then(|| 2962 + 30 * n + (551 * n * n + 2629 * n - 2448) * depth)
}

/// The model of one arity. The fields are the JSON keys, in the JSON's
/// order (see `LONG_ABOUT`); `None` is `null` (no fitted model).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArityPlan {
    pub arity: u64,
    pub depth: u64,
    pub max_depth: u64,
    pub capacity: u64,
    pub nodes: u64,
    pub membership_proof_bytes_max: u64,
    pub consistency_proof_bytes_max: u64,
    pub tree_memory_bytes: u64,
    pub tree_resident_bytes_level0_tiered: u64,
    pub tree_disk_bytes: u64,
    pub verify_hash_blocks_max: u64,
    pub build_hash_blocks: u64,
    pub jolt_cycles: Option<u64>,
    pub noir_expression_width: Option<u64>,
    pub noir_circuit_size: Option<u64>,
}

impl ArityPlan {
    /// The model of a tree of `leaves` (1..=`MAX_LEAVES`) leaves at `arity`
    /// under `hash`.
    pub fn new(leaves: u64, arity: Arity, hash: HashKind) -> ArityPlan {
        assert!((1..=MAX_LEAVES).contains(&leaves), "leaves {leaves}");
        let n = arity.as_u64();
        let depth = shape::depth(leaves, arity);
        let lens: Vec<u64> = (0..=depth)
            .map(|level| shape::level_len(leaves, arity, level))
            .collect();
        let nodes: u64 = lens.iter().sum();
        let depth = u64::from(depth);
        // The smallest maximum depth that holds `leaves` is the depth itself.
        let max_depth = depth;
        let capacity = n.pow(max_depth as u32);

        // Level 0's complete final segments: final leaves are all but the
        // last (the checkpoint's `final_len` of level 0 is size - 1).
        let tiered = (leaves - 1) / SEGMENT_LEN as u64 * SEGMENT_LEN as u64;

        let log_files = leaves.div_ceil(store_format::LOG_FILE_LEAVES);
        let log_bytes =
            log_files * (store_format::FILE_HEADER_BYTES + store_format::FRAME_BYTES) + 32 * leaves;
        // Levels 1..depth have final nodes; the root level (one node) has
        // none and gets no file.
        let level_file_bytes: u64 = lens
            .iter()
            .skip(1)
            .filter(|&&len| len > 1)
            .map(|&len| store_format::FILE_HEADER_BYTES + 32 * (len - 1))
            .sum();
        let checkpoint_bytes = store_format::CHECKPOINT_FIXED_BYTES
            + store_format::CHECKPOINT_LEVEL_BYTES * (depth + 1);
        let disk = store_format::META_BYTES + log_bytes + level_file_bytes + checkpoint_bytes;

        // Leaf 0's group at every level is as full as a group there can be.
        let verify_blocks = shape::Path::new(0, leaves, arity)
            .filter(|step| step.hashes())
            .map(|step| hash_blocks(hash, step.group_len as u64))
            .sum();
        let build_blocks = lens
            .iter()
            .take(depth as usize)
            .map(|&len| {
                let partial = len % n;
                (len / n) * hash_blocks(hash, n)
                    + if partial > 1 {
                        hash_blocks(hash, partial)
                    } else {
                        0
                    }
            })
            .sum();

        ArityPlan {
            arity: n,
            depth,
            max_depth,
            capacity,
            nodes,
            membership_proof_bytes_max: membership_proof_bytes(0, leaves, arity),
            consistency_proof_bytes_max: consistency_proof_bytes(1, leaves, arity),
            tree_memory_bytes: 32 * nodes,
            tree_resident_bytes_level0_tiered: 32 * (nodes - tiered),
            tree_disk_bytes: disk,
            verify_hash_blocks_max: verify_blocks,
            build_hash_blocks: build_blocks,
            jolt_cycles: jolt_cycles(n, max_depth, depth),
            noir_expression_width: noir_expression_width(n, depth),
            noir_circuit_size: noir_circuit_size(n, depth),
        }
    }
}

/// The recommended arity and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recommendation {
    pub arity: u64,
    pub reason: String,
}

/// The recommendation among `arities` under `hash` (the rule in [`RULE`]).
pub fn recommend(arities: &[ArityPlan], hash: HashKind) -> Recommendation {
    let unit = hash_work_unit(hash);
    if let [only] = arities {
        let reason = match (hash, only.noir_circuit_size) {
            (HashKind::Poseidon, Some(gates)) => format!(
                "It is the only arity asked for: a Poseidon membership circuit of about {} Noir/UltraHonk gates \
                 (rotortree's fitted model, not measured by cairn) and proofs of at most {} bytes.",
                group(gates),
                group(only.membership_proof_bytes_max)
            ),
            (HashKind::Poseidon, None) => format!(
                "It is the only arity asked for; rotortree fitted no circuit model for N = {}, and its proofs take at most {} bytes.",
                only.arity,
                group(only.membership_proof_bytes_max)
            ),
            _ => format!(
                "It is the only arity asked for: {} {unit} to verify the largest membership proof, of {} bytes.",
                group(only.verify_hash_blocks_max),
                group(only.membership_proof_bytes_max)
            ),
        };
        return Recommendation {
            arity: only.arity,
            reason,
        };
    }
    let (key, what): (fn(&ArityPlan) -> Option<u64>, String) = match hash {
        HashKind::Poseidon => (
            |a| a.noir_circuit_size,
            "Noir/UltraHonk gates for a Poseidon membership circuit (rotortree's fitted model, not measured by cairn)".to_owned(),
        ),
        _ => (
            |a| Some(a.verify_hash_blocks_max),
            format!("{unit} to verify the largest membership proof"),
        ),
    };
    let mut ranked: Vec<(&ArityPlan, u64)> = arities
        .iter()
        .filter_map(|a| key(a).map(|k| (a, k)))
        .collect();
    ranked.sort_by_key(|&(a, k)| (k, a.membership_proof_bytes_max, a.arity));
    let Some(&(best, best_key)) = ranked.first() else {
        // Unreachable with the default arities (all fitted); kept total.
        let smallest = arities
            .iter()
            .min_by_key(|a| (a.membership_proof_bytes_max, a.arity))
            .expect("at least one arity");
        return Recommendation {
            arity: smallest.arity,
            reason: format!(
                "No arity shown has a fitted circuit model, so the smallest proof ({} bytes) decides.",
                group(smallest.membership_proof_bytes_max)
            ),
        };
    };
    let tied: Vec<&ArityPlan> = ranked
        .iter()
        .skip(1)
        .filter(|&&(_, k)| k == best_key)
        .map(|&(a, _)| a)
        .collect();
    let mut reason = if tied.is_empty() {
        match ranked.get(1) {
            Some(&(next, next_key)) => format!(
                "Fewest {what}: {} against {} at N = {}; its proofs take at most {} bytes",
                group(best_key),
                group(next_key),
                next.arity,
                group(best.membership_proof_bytes_max)
            ),
            None => format!(
                "Fewest {what}: {}; its proofs take at most {} bytes",
                group(best_key),
                group(best.membership_proof_bytes_max)
            ),
        }
    } else {
        let others: Vec<String> = tied.iter().map(|a| format!("N = {}", a.arity)).collect();
        let proofs = if tied
            .iter()
            .all(|a| a.membership_proof_bytes_max > best.membership_proof_bytes_max)
        {
            format!(
                "the smaller proof decides: {} bytes against {} at N = {}",
                group(best.membership_proof_bytes_max),
                group(tied[0].membership_proof_bytes_max),
                tied[0].arity
            )
        } else {
            "the proofs are the same size, so the smaller arity decides".to_owned()
        };
        format!(
            "Fewest {what}: {}, tied with {}; {proofs}",
            group(best_key),
            others.join(" and ")
        )
    };
    if hash == HashKind::Poseidon {
        let jolt_best = arities
            .iter()
            .filter_map(|a| a.jolt_cycles.map(|c| (c, a.arity)))
            .min();
        if let Some((cycles, n)) = jolt_best
            && n != best.arity
        {
            let _ = write!(
                reason,
                "; in Jolt, the fitted cycles are lowest at N = {n} ({})",
                group(cycles)
            );
        }
    }
    reason.push('.');
    Recommendation {
        arity: best.arity,
        reason,
    }
}
