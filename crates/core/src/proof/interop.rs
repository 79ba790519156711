//! A membership proof in the shapes other tools take: zk-kit's LeanIMT
//! proof (`@zk-kit/lean-imt`'s `generateProof`) or, for a fixed-depth tree,
//! zk-kit's IMT proof (`@zk-kit/imt`'s `createProof`), the inputs of cairn's
//! circom template (`circuits/`), and the inputs of zk-kit's
//! `BinaryMerkleRoot` circom template.
//!
//! Every value is a decimal string of the 32-byte value read big-endian
//! (what snarkjs and zk-kit print for a bigint). The root is recomputed by
//! folding the proof, so these are only as good as the proof: callers
//! render proofs they generated (or verified) themselves.

use crate::hash::{Hash, HashKind};
use crate::kind::TreeKind;
use crate::proof::MembershipProof;
use crate::shape::PathStep;

/// The deepest circuit the circuit-input renderers fill (a u64 size at
/// arity 2 has depth 64).
pub const MAX_CIRCUIT_DEPTH: u32 = 64;

/// Why a proof cannot be rendered in a format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InteropError {
    /// zk-kit's LeanIMT (and `BinaryMerkleRoot`) are binary trees.
    #[error("the {format} format is for binary trees (arity 2), this tree has arity {arity}")]
    NotBinary {
        /// The format asked for.
        format: &'static str,
        /// The tree's arity.
        arity: u64,
    },
    /// The circuits hash with Poseidon.
    #[error(
        "the {format} format is for Poseidon trees (the circuit hashes with Poseidon), this tree hashes with {hash}"
    )]
    NotPoseidon {
        /// The format asked for.
        format: &'static str,
        /// The tree's hash.
        hash: HashKind,
    },
    /// The circuit is shallower than the proof's path.
    #[error(
        "a circuit of depth {circuit_depth} cannot hold this proof: it needs depth {needed} (at least {needed}, at most {MAX_CIRCUIT_DEPTH})"
    )]
    CircuitDepth {
        /// The circuit depth asked for.
        circuit_depth: u32,
        /// The least depth that holds the proof.
        needed: u32,
    },
    /// cairn's circuit proves membership in a Lean tree.
    #[error(
        "the {format} format is for lean trees (cairn's LeanIMT circuit), this is an imt of depth {depth}; a binary Poseidon imt renders as zkkit-circom"
    )]
    NotLean {
        /// The format asked for.
        format: &'static str,
        /// The fixed-depth tree's depth.
        depth: u32,
    },
    /// The batch circuits commit to their values four at a time.
    #[error(
        "a batch of {leaves}: the {circuit} circuit takes a positive multiple of {group} values, each a BN254 field element"
    )]
    BatchSize {
        /// The circuit: `append` or `indexed insert`.
        circuit: &'static str,
        /// The batch's length.
        leaves: u64,
        /// What it must be a multiple of.
        group: u64,
    },
    /// The append witness does not recompute its own heads.
    #[error("the append witness does not hold: {0}")]
    Witness(crate::proof::append::AppendWitnessError),
    /// The insertion witness does not verify against the head it is from.
    #[error("the insertion witness does not hold: {0}")]
    InsertionWitness(Box<crate::indexed::IndexedVerifyError>),
    /// A value the hash refuses (a Poseidon value at or above the modulus):
    /// the proof was not made by a tree.
    #[error("the proof holds {value}, which is not a BN254 field element")]
    NonCanonical {
        /// The value, in 0x-hex.
        value: String,
    },
}

pub(crate) fn decimal(value: &Hash) -> String {
    format!("\"{}\"", crate::decimal::to_decimal(value))
}

fn list(values: impl IntoIterator<Item = String>) -> String {
    let items: Vec<String> = values.into_iter().collect();
    format!("[{}]", items.join(","))
}

impl MembershipProof {
    /// The root the proof folds to (the root of the tree it was generated
    /// from).
    fn folded_root(&self) -> Result<Hash, InteropError> {
        if let Some(bad) = std::iter::once(&self.leaf)
            .chain(&self.siblings)
            .find(|value| !self.hash.accepts(value))
        {
            return Err(InteropError::NonCanonical {
                value: crate::hex::to_hex(bad),
            });
        }
        if self.kind != TreeKind::Lean {
            return Ok(self.fold_fixed());
        }
        let mut node = self.leaf;
        let mut group = Vec::with_capacity(self.arity.get());
        for (step, siblings) in self.levels() {
            group.clear();
            group.extend_from_slice(&siblings[..step.position.min(siblings.len())]);
            group.push(node);
            group.extend_from_slice(&siblings[step.position.min(siblings.len())..]);
            node = self.hash.hash_children(&group);
        }
        Ok(node)
    }

    /// The proof as `@zk-kit/lean-imt`'s `generateProof` returns it for
    /// the same tree, serialised as `JSON.stringify` does with bigints
    /// printed as decimal strings: `{"root","leaf","index","siblings"}`,
    /// where `index` has bit k set when the path node is the right child
    /// at the k-th hashing level (zk-kit's compressed path, not the leaf
    /// index). Binary trees only. For a hash other than Poseidon the values
    /// are the 32-byte nodes read as big-endian integers, and zk-kit's hash
    /// function is `(a, b) => H(a ‖ b)` over their 32-byte big-endian forms.
    ///
    /// For a fixed-depth tree (any arity) it is what `@zk-kit/imt`'s
    /// `createProof(index)` returns for the same tree, serialised the same
    /// way: `{"root","leaf","pathIndices","siblings","leafIndex"}`, one
    /// entry per level (the tree's depth), `pathIndices[k]` the path
    /// node's position in its group, `siblings[k]` the group's N - 1 other
    /// members with absent ones filled in with the level's zero. zk-kit's
    /// hash function takes the N children as one array.
    pub fn to_zkkit_json(&self) -> Result<String, InteropError> {
        if self.kind != TreeKind::Lean {
            let root = self.folded_root()?;
            let (positions, rows) = self.padded_levels();
            return Ok(format!(
                "{{\"root\":{},\"leaf\":{},\"pathIndices\":{},\"siblings\":{},\"leafIndex\":{}}}",
                decimal(&root),
                decimal(&self.leaf),
                list(positions.iter().map(usize::to_string)),
                list(rows.iter().map(|row| list(row.iter().map(decimal)))),
                self.index
            ));
        }
        self.require_binary("zkkit")?;
        Ok(format!(
            "{{\"root\":{},\"leaf\":{},\"index\":{},\"siblings\":{}}}",
            decimal(&self.folded_root()?),
            decimal(&self.leaf),
            self.zkkit_index(),
            list(self.siblings.iter().map(decimal))
        ))
    }

    /// The inputs of zk-kit's `BinaryMerkleRoot(MAX_DEPTH)` circom template
    /// with `MAX_DEPTH = circuit_depth` (default: the tree's depth):
    /// `{"leaf","depth","index","siblings"}`, `depth` the number of hashing
    /// levels, `index` zk-kit's compressed path, `siblings` padded with
    /// zeros. Binary Poseidon trees only; the template's output is the root.
    /// For a fixed-depth tree every level hashes: `depth` is the tree's
    /// depth, `index` the leaf index, and the siblings are its levels'
    /// with absent ones filled in with the level's zero.
    pub fn to_zkkit_circom_json(&self, circuit_depth: Option<u32>) -> Result<String, InteropError> {
        self.require_binary("zkkit-circom")?;
        self.require_poseidon("zkkit-circom")?;
        let circuit_depth = self.circuit_depth(circuit_depth)?;
        self.folded_root()?;
        if self.kind != TreeKind::Lean {
            let (_, rows) = self.padded_levels();
            let padding = circuit_depth as usize - rows.len();
            return Ok(format!(
                "{{\"leaf\":{},\"depth\":\"{}\",\"index\":\"{}\",\"siblings\":{}}}",
                decimal(&self.leaf),
                rows.len(),
                self.index,
                list(
                    rows.iter()
                        .flatten()
                        .map(decimal)
                        .chain(std::iter::repeat_n("\"0\"".to_owned(), padding))
                )
            ));
        }
        let padding = circuit_depth as usize - self.siblings.len();
        Ok(format!(
            "{{\"leaf\":{},\"depth\":\"{}\",\"index\":\"{}\",\"siblings\":{}}}",
            decimal(&self.leaf),
            self.siblings.len(),
            self.zkkit_index(),
            list(
                self.siblings
                    .iter()
                    .map(decimal)
                    .chain(std::iter::repeat_n("\"0\"".to_owned(), padding))
            )
        ))
    }

    /// The inputs of cairn's `LeanIMTInclusion(N, MAX_DEPTH)` circom
    /// template (`circuits/leanimt.circom`) with `MAX_DEPTH = circuit_depth`
    /// (default: the tree's depth): `{"root","leaf","index","size",
    /// "siblings"}`, `siblings` one row of N - 1 values per level, bottom-up,
    /// `MAX_DEPTH` rows; a hashing level's row holds its siblings in index
    /// order followed by zeros, a lifted level's and the levels above the
    /// root are zeros. Poseidon trees only.
    pub fn to_circom_json(&self, circuit_depth: Option<u32>) -> Result<String, InteropError> {
        if let Some(depth) = self.kind.fixed_depth() {
            return Err(InteropError::NotLean {
                format: "circom",
                depth,
            });
        }
        self.require_poseidon("circom")?;
        let (root, siblings) = self.circom_path(circuit_depth)?;
        Ok(format!(
            "{{\"root\":{},\"leaf\":{},\"index\":\"{}\",\"size\":\"{}\",\"siblings\":{}}}",
            decimal(&root),
            decimal(&self.leaf),
            self.index,
            self.size,
            siblings
        ))
    }

    /// The folded root and the `siblings` rows of cairn's circom templates
    /// for a circuit of `circuit_depth` levels (default: the tree's depth):
    /// one row of N - 1 decimal strings per level, a hashing level's
    /// siblings then `"0"`s, a lifted level and the levels above the root
    /// all `"0"`s (docs/spec.md section 10.3).
    pub(crate) fn circom_path(
        &self,
        circuit_depth: Option<u32>,
    ) -> Result<(Hash, String), InteropError> {
        let circuit_depth = self.circuit_depth(circuit_depth)?;
        let width = self.arity.get() - 1;
        let zero = || "\"0\"".to_owned();
        let mut rows = Vec::with_capacity(circuit_depth as usize);
        let mut rest = self.siblings.as_slice();
        for step in self.shape().path(self.index, self.size) {
            let count = step.sibling_count().min(rest.len());
            let (level, tail) = rest.split_at(count);
            rest = tail;
            rows.push(list(
                level
                    .iter()
                    .map(decimal)
                    .chain(std::iter::repeat_with(zero))
                    .take(width),
            ));
        }
        while rows.len() < circuit_depth as usize {
            rows.push(list(std::iter::repeat_with(zero).take(width)));
        }
        Ok((self.folded_root()?, list(rows)))
    }

    /// zk-kit's compressed path: bit k is the position (0 left, 1 right) at
    /// the k-th hashing level.
    fn zkkit_index(&self) -> u64 {
        self.levels()
            .enumerate()
            .fold(0u64, |index, (k, (step, _))| {
                index | ((step.position as u64) << k)
            })
    }

    /// A fixed-depth proof's levels as zk-kit's IMT gives them: per level,
    /// the path node's position and the group's N - 1 other members, absent
    /// ones filled in with the level's zero.
    fn padded_levels(&self) -> (Vec<usize>, Vec<Vec<Hash>>) {
        let zeros = self.kind.zeros(self.arity, self.hash);
        let n = self.arity.get();
        self.levels()
            .map(|(step, siblings): (PathStep, &[Hash])| {
                let mut row = siblings.to_vec();
                row.resize(n - 1, zeros[step.level as usize]);
                (step.position, row)
            })
            .unzip()
    }

    fn circuit_depth(&self, asked: Option<u32>) -> Result<u32, InteropError> {
        let needed = self.shape().depth(self.size);
        let circuit_depth = asked.unwrap_or(needed);
        if circuit_depth < needed || circuit_depth > MAX_CIRCUIT_DEPTH {
            return Err(InteropError::CircuitDepth {
                circuit_depth,
                needed,
            });
        }
        Ok(circuit_depth)
    }

    fn require_binary(&self, format: &'static str) -> Result<(), InteropError> {
        if self.arity.get() != 2 {
            return Err(InteropError::NotBinary {
                format,
                arity: self.arity.as_u64(),
            });
        }
        Ok(())
    }

    fn require_poseidon(&self, format: &'static str) -> Result<(), InteropError> {
        if self.hash != HashKind::Poseidon {
            return Err(InteropError::NotPoseidon {
                format,
                hash: self.hash,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Arity, LeanImt, TreeConfig};

    fn leaf(i: u64) -> Hash {
        let mut out = [0u8; 32];
        out[24..].copy_from_slice(&(i + 1).to_be_bytes());
        out
    }

    fn tree(arity: u64, hash: HashKind, size: u64) -> LeanImt {
        let leaves: Vec<Hash> = (0..size).map(leaf).collect();
        LeanImt::from_leaves(TreeConfig::new(Arity::new(arity).unwrap(), hash), &leaves).unwrap()
    }

    #[test]
    fn zkkit_index_counts_hashing_levels_only() {
        // Size 5 at N = 2: leaf 4 is lifted twice, then hashed as the right
        // child: one sibling, compressed index 1 (its leaf index is 4).
        let mut t = tree(2, HashKind::Poseidon, 5);
        let proof = t.prove(4).unwrap();
        assert_eq!(proof.siblings().len(), 1);
        let json = proof.to_zkkit_json().unwrap();
        let root = crate::decimal::to_decimal(&t.root().unwrap());
        assert_eq!(
            json,
            format!(
                "{{\"root\":\"{root}\",\"leaf\":\"5\",\"index\":1,\"siblings\":[\"{}\"]}}",
                crate::decimal::to_decimal(&t.at_size(4).unwrap().root().unwrap())
            )
        );
        // Leaf 3: right child at level 0 and level 1, left child of nothing
        // above (lifted sibling group at level 2 hashes with leaf 4).
        let proof = t.prove(3).unwrap();
        assert_eq!(proof.zkkit_index(), 0b011);
    }

    #[test]
    fn circom_rows_pad_lifted_levels_and_the_circuit_depth() {
        let mut t = tree(3, HashKind::Poseidon, 10);
        let proof = t.prove(9).unwrap(); // lifted at level 0, hashed above
        let json = proof.to_circom_json(Some(4)).unwrap();
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        let rows = value["siblings"].as_array().unwrap();
        assert_eq!(rows.len(), 4);
        assert_eq!(rows[0], serde_json::json!(["0", "0"]));
        assert_eq!(rows[3], serde_json::json!(["0", "0"]));
        assert_eq!(value["index"], "9");
        assert_eq!(value["size"], "10");
        assert_eq!(
            value["root"],
            crate::decimal::to_decimal(&t.root().unwrap())
        );
    }

    #[test]
    fn interop_formats_refuse_trees_they_cannot_describe() {
        let mut t = tree(3, HashKind::Poseidon, 10);
        let proof = t.prove(1).unwrap();
        assert_eq!(
            proof.to_zkkit_json().unwrap_err().to_string(),
            "the zkkit format is for binary trees (arity 2), this tree has arity 3"
        );
        assert_eq!(
            proof.to_circom_json(Some(2)).unwrap_err(),
            InteropError::CircuitDepth {
                circuit_depth: 2,
                needed: 3
            }
        );
        let mut t = tree(2, HashKind::Sha256, 3);
        let proof = t.prove(1).unwrap();
        assert!(proof.to_zkkit_json().is_ok());
        assert!(matches!(
            proof.to_circom_json(None),
            Err(InteropError::NotPoseidon { .. })
        ));
        assert!(matches!(
            proof.to_zkkit_circom_json(None),
            Err(InteropError::NotPoseidon { .. })
        ));
    }
}
