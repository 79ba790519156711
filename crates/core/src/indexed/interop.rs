//! Indexed proofs as the inputs of cairn's circom templates, decimal
//! strings as snarkjs reads a witness's inputs: an absence proof as those
//! of `IndexedAbsence(N, MAX_DEPTH)` (`circuits/indexed.circom`,
//! docs/spec.md section 10.5): the trusted head, the value, the low leaf's
//! preimage and index, and the low leaf's path in the rows
//! `LeanIMTInclusion` takes; an insertion witness as those of
//! `IndexedInsertBatch(K, MAX_DEPTH)` (`circuits/indexed-batch.circom`,
//! section 10.7).

use super::proof::{AbsenceProof, InsertionWitness};
use crate::hash::HashKind;
use crate::kind::TreeKind;
use crate::proof::append::{COMMITMENT_GROUP, batch_commitment};
use crate::proof::interop::{MAX_CIRCUIT_DEPTH, decimal};
use crate::proof::{InteropError, MembershipProof};
use crate::tree::TreeHead;

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

impl InsertionWitness {
    /// The inputs of `IndexedInsertBatch(K, MAX_DEPTH)`, K the number of
    /// values (a positive multiple of 4) and `MAX_DEPTH = circuit_depth`
    /// (default: the depth of the tree after the batch, at least 1), for
    /// the witness made from the tree of head `old`:
    /// `{"oldRoot","newRoot","size","commitment","values","lowValue",
    /// "lowNextIndex","lowNextValue","lowIndex","lowSiblings","frontier"}`.
    /// `size` is the old size (the guard counted), `commitment` the
    /// batch commitment of the values ([`batch_commitment`]), row t of
    /// `lowSiblings` the low leaf's path in the tree of `size + t` leaves
    /// (`MAX_DEPTH` rows of one), row t of `frontier` the new leaf's
    /// siblings by level bottom-up, "0" where bit k of `size + t` is
    /// clear. A binary Poseidon tree only. The witness is verified against
    /// `old` first, and `newRoot` is the root it verifies to.
    pub fn to_circom_json(
        &self,
        old: &TreeHead,
        circuit_depth: Option<u32>,
    ) -> Result<String, InteropError> {
        const FORMAT: &str = "circom insert";
        if self.arity.get() != 2 {
            return Err(InteropError::NotBinary {
                format: FORMAT,
                arity: self.arity.as_u64(),
            });
        }
        if self.hash != HashKind::Poseidon {
            return Err(InteropError::NotPoseidon {
                format: FORMAT,
                hash: self.hash,
            });
        }
        let values: Vec<_> = self.values().copied().collect();
        let commitment = batch_commitment(&values).ok_or(InteropError::BatchSize {
            circuit: "indexed insert",
            leaves: values.len() as u64,
            group: COMMITMENT_GROUP as u64,
        })?;
        let new = self
            .verify(self.arity, self.hash, old)
            .map_err(|error| InteropError::InsertionWitness(Box::new(error)))?;
        let shape = crate::shape::Shape::lean(self.arity);
        let needed = shape.depth(new.size).max(1);
        let depth = circuit_depth.unwrap_or(needed);
        if depth < needed || depth > MAX_CIRCUIT_DEPTH {
            return Err(InteropError::CircuitDepth {
                circuit_depth: depth,
                needed,
            });
        }
        let column = |f: &dyn Fn(&super::InsertionStep) -> String| {
            self.steps.iter().map(f).collect::<Vec<_>>().join(",")
        };
        let mut low_paths = Vec::with_capacity(self.steps.len());
        let mut frontiers = Vec::with_capacity(self.steps.len());
        for (t, step) in self.steps.iter().enumerate() {
            let size = self.old_size + t as u64;
            let path = MembershipProof {
                arity: self.arity,
                hash: self.hash,
                kind: TreeKind::Lean,
                index: step.low_index,
                size,
                leaf: step.low.hash(self.hash),
                siblings: step.low_siblings.clone(),
            };
            low_paths.push(path.circom_path(Some(depth))?.1);
            // The new leaf's siblings at size + 1: one left sibling at
            // each level where bit k of size is set (its node is odd), none
            // where it is clear (a lone last node, lifted).
            let mut siblings = step.new_siblings.iter();
            let row: Vec<String> = (0..depth)
                .map(|k| match (size >> k) & 1 {
                    1 => decimal(siblings.next().expect("verified: one a set bit")),
                    _ => "\"0\"".to_owned(),
                })
                .collect();
            debug_assert!(
                siblings.next().is_none(),
                "verified: no sibling past the bits"
            );
            frontiers.push(format!("[{}]", row.join(",")));
        }
        Ok(format!(
            "{{\"oldRoot\":{},\"newRoot\":{},\"size\":\"{}\",\"commitment\":{},\"values\":[{}],\"lowValue\":[{}],\"lowNextIndex\":[{}],\"lowNextValue\":[{}],\"lowIndex\":[{}],\"lowSiblings\":[{}],\"frontier\":[{}]}}",
            decimal(&old.root.unwrap_or_default()),
            decimal(&new.root.unwrap_or_default()),
            self.old_size,
            decimal(&commitment),
            column(&|s| decimal(&s.value)),
            column(&|s| decimal(&s.low.value)),
            column(&|s| format!("\"{}\"", s.low.next_index)),
            column(&|s| decimal(&s.low.next_value)),
            column(&|s| format!("\"{}\"", s.low_index)),
            low_paths.join(","),
            frontiers.join(",")
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

    /// The decimal strings of a JSON array.
    fn strings(value: &serde_json::Value) -> Vec<String> {
        value
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn insertion_circuit_inputs_follow_the_tree_insert_by_insert() {
        use crate::decimal::to_decimal;
        let config = TreeConfig::new(Arity::new(2).unwrap(), HashKind::Poseidon);
        let stored = [value(1000), value(5000), value(9000)];
        // 2000 and 3000 share 1000's leaf; 9500 and 9600 follow the last.
        let batch = [value(2000), value(3000), value(9500), value(9600)];
        let mut tree = IndexedTree::from_values(config, &stored).unwrap();
        let old = tree.head();
        let witness = tree.snapshot().insertion_witness(&batch).unwrap();
        let text = witness.to_circom_json(&old, Some(5)).unwrap();
        let input: serde_json::Value = serde_json::from_str(&text).unwrap();
        tree.insert_batch(&batch).unwrap();
        assert_eq!(input["oldRoot"], to_decimal(&old.root.unwrap()));
        assert_eq!(input["newRoot"], to_decimal(&tree.root()));
        assert_eq!(input["size"], "4");
        let chain =
            HashKind::Poseidon.hash_children(&[[0; 32], batch[0], batch[1], batch[2], batch[3]]);
        assert_eq!(input["commitment"], to_decimal(&chain));
        assert_eq!(strings(&input["values"]), ["2000", "3000", "9500", "9600"]);
        assert_eq!(
            strings(&input["lowValue"]),
            ["1000", "2000", "9000", "9500"]
        );
        assert_eq!(strings(&input["lowIndex"]), ["1", "4", "3", "6"]);
        assert_eq!(strings(&input["lowNextValue"]), ["5000", "5000", "0", "0"]);
        assert_eq!(strings(&input["lowNextIndex"]), ["2", "2", "0", "0"]);
        for t in 0..4 {
            // The low leaf's path: 5 rows of one, the tree's depth of them
            // hashing or lifted, the rest "0".
            let rows = input["lowSiblings"][t].as_array().unwrap();
            assert_eq!(rows.len(), 5);
            assert!(rows.iter().all(|row| row.as_array().unwrap().len() == 1));
            assert!(rows[3..].iter().all(|row| row[0] == "0"));
            // The frontier: the new leaf's left siblings in the tree after
            // the insertion, at the set bits of its index.
            let n = 4 + t as u64;
            let after =
                IndexedTree::from_values(config, &[&stored[..], &batch[..=t]].concat()).unwrap();
            let mut siblings = after
                .prove_index(n)
                .unwrap()
                .siblings()
                .to_vec()
                .into_iter();
            let frontier = strings(&input["frontier"][t]);
            assert_eq!(frontier.len(), 5);
            for (k, node) in frontier.iter().enumerate() {
                match (n >> k) & 1 {
                    1 => assert_eq!(*node, to_decimal(&siblings.next().unwrap())),
                    _ => assert_eq!(node, "0"),
                }
            }
            assert!(siblings.next().is_none());
        }
        // The default depth: the tree's after the batch (8 leaves: 3).
        let default: serde_json::Value =
            serde_json::from_str(&witness.to_circom_json(&old, None).unwrap()).unwrap();
        assert_eq!(default["frontier"][0].as_array().unwrap().len(), 3);
    }

    #[test]
    fn insertion_circuit_inputs_refuse_what_the_circuit_cannot_take() {
        use crate::proof::InteropError;
        let poseidon = TreeConfig::new(Arity::new(2).unwrap(), HashKind::Poseidon);
        let mut tree = IndexedTree::from_values(poseidon, &[value(10)]).unwrap();
        let old = tree.head();
        let snapshot = tree.snapshot();
        let four = [value(1), value(2), value(3), value(4)];
        let witness = snapshot.insertion_witness(&four).unwrap();
        // 6 leaves after the batch need depth 3.
        assert_eq!(
            witness.to_circom_json(&old, Some(2)),
            Err(InteropError::CircuitDepth {
                circuit_depth: 2,
                needed: 3
            })
        );
        assert!(witness.to_circom_json(&old, Some(3)).is_ok());
        assert!(matches!(
            snapshot
                .insertion_witness(&four[..3])
                .unwrap()
                .to_circom_json(&old, None),
            Err(InteropError::BatchSize {
                circuit: "indexed insert",
                leaves: 3,
                group: 4
            })
        ));
        // Against another head it does not verify.
        let other = crate::TreeHead::new(old.size, value(7));
        assert!(matches!(
            witness.to_circom_json(&other, None),
            Err(InteropError::InsertionWitness(_))
        ));
        for (arity, hash) in [(4, HashKind::Poseidon), (2, HashKind::Blake3)] {
            let config = TreeConfig::new(Arity::new(arity).unwrap(), hash);
            let mut tree = IndexedTree::from_values(config, &[value(10)]).unwrap();
            let old = tree.head();
            let error = tree
                .snapshot()
                .insertion_witness(&four)
                .unwrap()
                .to_circom_json(&old, None)
                .unwrap_err();
            assert!(
                matches!(
                    error,
                    InteropError::NotBinary { .. } | InteropError::NotPoseidon { .. }
                ),
                "{error}"
            );
        }
    }
}
