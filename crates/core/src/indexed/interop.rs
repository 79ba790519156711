//! An absence proof as the inputs of cairn's `IndexedAbsence(N, MAX_DEPTH)`
//! circom template (`circuits/indexed.circom`, docs/spec.md section 10.5):
//! the trusted head, the value, the low leaf's preimage and index, and the
//! low leaf's path in the rows `LeanIMTInclusion` takes. Decimal strings,
//! as snarkjs reads a witness's inputs.

use super::proof::AbsenceProof;
use crate::hash::HashKind;
use crate::kind::TreeKind;
use crate::proof::interop::decimal;
use crate::proof::{InteropError, MembershipProof};

impl AbsenceProof {
    /// The inputs of `IndexedAbsence(N, MAX_DEPTH)` with `MAX_DEPTH =
    /// circuit_depth` (default: the tree's depth): `{"root","size","value",
    /// "lowValue","lowNextIndex","lowNextValue","lowIndex","siblings"}`,
    /// `root` the root the low leaf's path folds to. Poseidon trees only.
    pub fn to_circom_json(&self, circuit_depth: Option<u32>) -> Result<String, InteropError> {
        if self.hash != HashKind::Poseidon {
            return Err(InteropError::NotPoseidon {
                format: "circom",
                hash: self.hash,
            });
        }
        for value in [&self.value, &self.low.value, &self.low.next_value] {
            if !self.hash.accepts(value) {
                return Err(InteropError::NonCanonical {
                    value: crate::hex::to_hex(value),
                });
            }
        }
        // The low leaf's path in the indexed tree, which is a LeanIMT.
        let path = MembershipProof {
            arity: self.arity,
            hash: self.hash,
            kind: TreeKind::Lean,
            index: self.low_index,
            size: self.size,
            leaf: self.low.hash(self.hash),
            siblings: self.siblings.clone(),
        };
        let (root, siblings) = path.circom_path(circuit_depth)?;
        Ok(format!(
            "{{\"root\":{},\"size\":\"{}\",\"value\":{},\"lowValue\":{},\"lowNextIndex\":\"{}\",\"lowNextValue\":{},\"lowIndex\":\"{}\",\"siblings\":{}}}",
            decimal(&root),
            self.size,
            decimal(&self.value),
            decimal(&self.low.value),
            self.low.next_index,
            decimal(&self.low.next_value),
            self.low_index,
            siblings
        ))
    }
}

#[cfg(test)]
mod tests {
    use crate::hash::{Hash, HashKind};
    use crate::indexed::IndexedTree;
    use crate::{Arity, TreeConfig};

    fn value(n: u64) -> Hash {
        crate::indexed::index_word(n)
    }

    #[test]
    fn absence_circuit_inputs_name_the_low_leaf_and_pad_the_path() {
        let config = TreeConfig::new(Arity::new(4).unwrap(), HashKind::Poseidon);
        let tree = IndexedTree::from_values(config, &[value(30), value(10), value(20)]).unwrap();
        let proof = tree.prove_absence(&value(25)).unwrap();
        let text = proof.to_circom_json(Some(3)).unwrap();
        let root = crate::decimal::to_decimal(&tree.root());
        // Leaf 3 (value 20) points at leaf 1 (value 30); 4 leaves at N = 4
        // are one hashing level of three siblings, then two zero rows.
        assert!(text.starts_with(&format!(
            "{{\"root\":\"{root}\",\"size\":\"4\",\"value\":\"25\",\"lowValue\":\"20\",\"lowNextIndex\":\"1\",\"lowNextValue\":\"30\",\"lowIndex\":\"3\",\"siblings\":[["
        )), "{text}");
        assert!(
            text.ends_with(",[\"0\",\"0\",\"0\"],[\"0\",\"0\",\"0\"]]}"),
            "{text}"
        );
        let error = proof.to_circom_json(Some(0)).unwrap_err();
        assert!(
            matches!(
                error,
                crate::proof::InteropError::CircuitDepth {
                    circuit_depth: 0,
                    needed: 1
                }
            ),
            "{error}"
        );
    }

    #[test]
    fn absence_circuit_inputs_refuse_other_hashes() {
        let config = TreeConfig::new(Arity::new(2).unwrap(), HashKind::Blake3);
        let tree = IndexedTree::from_values(config, &[value(3)]).unwrap();
        let error = tree
            .prove_absence(&value(5))
            .unwrap()
            .to_circom_json(None)
            .unwrap_err();
        assert!(
            matches!(error, crate::proof::InteropError::NotPoseidon { .. }),
            "{error}"
        );
    }
}
