//! What each tree kind can do: the one place that decides, and words, a
//! refusal (`Operation::check`, with the database's error). A
//! [`crate::Database`] asks it before an
//! operation some kind lacks, and the server's route table and the CLI's
//! option checks ask the same function, so every front end refuses the
//! same things with the same words.

use cairn_core::TreeKind;

use crate::error::DbError;

/// An operation only some tree kinds have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Operation {
    /// A proof against an earlier head (a size or a root below the
    /// current one): every kind (an indexed tree within its retained
    /// window of heads).
    HistoricalProof,
    /// A consistency proof between two heads: append-only trees.
    ConsistencyProof,
    /// Appends tagged with a chain block, the heads they record, rollbacks
    /// and finality by block: append-only trees.
    BlockTags,
    /// The size a root is the root of: append-only trees.
    RootLookup,
    /// Leaves read by index, as a mirror copies them: append-only trees.
    LeafRange,
    /// A signed checkpoint of the head (`cairn-tree kind=lean` or `kind=imt`):
    /// append-only trees.
    SignedCheckpoint,
    /// Tiles of the final nodes, and mirrors built from them:
    /// append-only trees.
    Tiles,
    /// A repair from a replica (a tile store or a mirror): append-only
    /// trees.
    Repair,
    /// A proof that a value is absent: indexed trees.
    AbsenceProof,
    /// The witness of an insertion (low leaves before, new paths after):
    /// indexed trees.
    InsertionWitness,
    /// Updates and removals of leaves: trees created mutable
    /// (`cairn init --mutable`).
    Mutation,
    /// Rollbacks and finality by size: every tree but a mutable one
    /// (whose size does not order its changes: it rolls back by block).
    SizeRollback,
    /// The witness that a range of leaves appended to an earlier head gives
    /// a later one (the old tree's frontier and the leaves): append-only
    /// trees.
    AppendWitness,
}

impl Operation {
    /// The operation in words, plural (`consistency proofs`).
    pub const fn name(self) -> &'static str {
        match self {
            Operation::HistoricalProof => "proofs against earlier heads",
            Operation::ConsistencyProof => "consistency proofs",
            Operation::BlockTags => "block-tagged heads",
            Operation::RootLookup => "lookups of earlier roots",
            Operation::LeafRange => "leaf ranges by index",
            Operation::SignedCheckpoint => "signed checkpoints",
            Operation::Tiles => "tiles or mirrors",
            Operation::Repair => "repairs from a replica",
            Operation::AbsenceProof => "absence proofs",
            Operation::InsertionWitness => "insertion witnesses",
            Operation::Mutation => "updates or removals of leaves",
            Operation::SizeRollback => "rollbacks or finality by size",
            Operation::AppendWitness => "append witnesses",
        }
    }

    /// Whether a tree of `kind` can do it.
    pub const fn supported_by(self, kind: TreeKind) -> bool {
        match self {
            Operation::HistoricalProof => true,
            Operation::AbsenceProof | Operation::InsertionWitness => {
                matches!(kind, TreeKind::Indexed)
            }
            // Mutability is chosen at creation, beside the kind: see
            // `supported_by_mutable`.
            Operation::Mutation => false,
            Operation::SizeRollback => true,
            _ => kind.is_append_only(),
        }
    }

    /// Whether a mutable tree (of shape `kind`, Lean or fixed-depth) can do
    /// it: mutations, proofs against its current head, block tags (whose
    /// rollbacks undo every change after the block); not what assumes
    /// that nodes below the right edge never change (historical and
    /// consistency proofs, roots by value, leaf ranges, signed checkpoints,
    /// tiles, repairs), nor what only indexed trees do.
    pub const fn supported_by_mutable(self) -> bool {
        matches!(self, Operation::Mutation | Operation::BlockTags)
    }

    /// Why a mutable tree of shape `kind` cannot do it, in words (the
    /// message of [`DbError::UnsupportedMutable`]).
    pub(crate) fn refusal_mutable(self, kind: TreeKind) -> String {
        let name = kind.name();
        let why = match self {
            Operation::AbsenceProof | Operation::InsertionWitness => {
                "they need an indexed database (`cairn init --kind indexed`)"
            }
            Operation::SizeRollback => {
                "updates and removals do not change its size, so a size names no point of its history; roll it back and finalize it by block"
            }
            Operation::Tiles | Operation::Repair => {
                "tiles hold final nodes under names that never change, and a mutable tree's nodes change when a leaf is updated or removed"
            }
            _ => {
                "its leaves below the right edge change when updated or removed, so it proves against its current head only and its roots do not follow one another by consistency proofs"
            }
        };
        format!("a mutable {name} database has no {}: {why}", self.name())
    }

    /// Whether a database of `kind` (`mutable` or not) can do it; `Err` is
    /// the refusal.
    pub fn check_for(self, kind: TreeKind, mutable: bool) -> Result<(), DbError> {
        match mutable {
            false => self.check(kind),
            true if self.supported_by_mutable() => Ok(()),
            true => Err(DbError::UnsupportedMutable {
                operation: self,
                kind,
            }),
        }
    }

    /// Why a tree of `kind` cannot do it, in words (the message of
    /// [`DbError::Unsupported`]).
    pub(crate) fn refusal(self, kind: TreeKind) -> String {
        let name = kind.name();
        let article = if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        };
        let why = match self {
            Operation::HistoricalProof => "it keeps no earlier heads",
            Operation::ConsistencyProof | Operation::RootLookup => {
                "its leaves below the right edge change as values are inserted, so an earlier head is no prefix of a later one"
            }
            Operation::BlockTags => {
                "it records no block-tagged heads; roll it back and finalize it by size"
            }
            Operation::LeafRange => {
                "its leaves are rewritten as values are inserted (`cairn export` writes its values in insertion order)"
            }
            Operation::SignedCheckpoint => {
                "a signed checkpoint names an append-only tree (`cairn-tree kind=lean` or `kind=imt`), whose roots follow one another by consistency proofs"
            }
            Operation::Tiles => {
                "tiles hold final nodes, and an indexed tree's nodes change as values are inserted"
            }
            Operation::Repair => {
                "a replica holds final nodes of an append-only tree; restore it from a backup (`cairn backup`)"
            }
            Operation::AppendWitness => {
                "its leaves below the right edge change as values are inserted, so a batch is not an append to an earlier tree; a batch of values has an insertion witness"
            }
            Operation::SizeRollback => unreachable!("every kind rolls back by size"),
            Operation::Mutation => {
                return format!(
                    "{article} {name} database has no {}: it is append-only; create a mutable one (`cairn init --mutable`)",
                    self.name()
                );
            }
            Operation::AbsenceProof | Operation::InsertionWitness => {
                return format!(
                    "{article} {name} database has no {}: its leaves are in insertion order; {} need an indexed database (`cairn init --kind indexed`)",
                    self.name(),
                    self.name()
                );
            }
        };
        format!("{article} {name} database has no {}: {why}", self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVERY: [Operation; 11] = [
        Operation::HistoricalProof,
        Operation::ConsistencyProof,
        Operation::BlockTags,
        Operation::RootLookup,
        Operation::LeafRange,
        Operation::SignedCheckpoint,
        Operation::Tiles,
        Operation::Repair,
        Operation::AbsenceProof,
        Operation::InsertionWitness,
        Operation::AppendWitness,
    ];

    #[test]
    fn historical_proofs_are_had_by_every_kind() {
        let fixed = TreeKind::Fixed {
            depth: 4,
            zero: [0; 32],
        };
        for kind in [TreeKind::Lean, fixed, TreeKind::Indexed] {
            assert!(Operation::HistoricalProof.supported_by(kind));
            assert!(Operation::HistoricalProof.check(kind).is_ok());
        }
    }

    #[test]
    fn every_operation_is_had_by_the_append_only_kinds_or_the_indexed_one_never_both() {
        let fixed = TreeKind::Fixed {
            depth: 4,
            zero: [0; 32],
        };
        for operation in EVERY
            .into_iter()
            .filter(|&o| o != Operation::HistoricalProof)
        {
            let lean = operation.supported_by(TreeKind::Lean);
            assert_eq!(lean, operation.supported_by(fixed), "{operation:?}");
            assert_ne!(
                lean,
                operation.supported_by(TreeKind::Indexed),
                "{operation:?}"
            );
            let refused = if lean {
                TreeKind::Indexed
            } else {
                TreeKind::Lean
            };
            let error = operation.check(refused).unwrap_err();
            assert_eq!(error.kind(), crate::ErrorKind::Unsupported);
            let message = error.to_string();
            assert!(message.contains(operation.name()), "{message}");
            assert!(message.contains(refused.name()), "{message}");
        }
    }

    #[test]
    fn refusals_name_the_kind_with_its_article() {
        let fixed = TreeKind::Fixed {
            depth: 4,
            zero: [0; 32],
        };
        let message = Operation::AbsenceProof
            .check(fixed)
            .unwrap_err()
            .to_string();
        assert!(
            message.starts_with("an imt database has no absence proofs"),
            "{message}"
        );
        let message = Operation::AbsenceProof
            .check(TreeKind::Lean)
            .unwrap_err()
            .to_string();
        assert!(message.starts_with("a lean database"), "{message}");
        assert!(message.contains("indexed database"), "{message}");
        let message = Operation::BlockTags
            .check(TreeKind::Indexed)
            .unwrap_err()
            .to_string();
        assert!(
            message.starts_with("an indexed database has no block-tagged heads"),
            "{message}"
        );
    }
}
