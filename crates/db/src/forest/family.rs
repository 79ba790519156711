//! Families: a tree with a capacity, and the members that follow it when
//! it rolls over (Railgun's tree numbers). Member `k` of family `NAME` is
//! the tree `NAME/k` (member 0 is `NAME`), with the config of member 0;
//! a write to `NAME` goes to its last member and, when that is full, to
//! the next one, made in the block that needs it.
//!
//! Invariants kept here:
//! - a member exists for readers once the journal holds a value of it: a
//!   member made for a block that never reached the journal (a crash, a
//!   refusal) or emptied by a rollback is an empty member, listed in the
//!   manifest but in no family answer, and the next rollover reuses it;
//!   so a crash leaves a rollover all or nothing, with the block's frame
//!   the one commit point;
//! - a family refusing duplicates refuses a value any of its members
//!   holds: each write's values are looked up in every member but the
//!   one they go to (whose own set checks them), and checked against each
//!   other across the members they are split over.

use std::collections::HashSet;

use cairn_core::{Hash, TreeKind};

use super::manifest::Family;
use super::{Forest, ForestError, State, Tree, empty_size, unknown};
use crate::config::DbConfig;
use crate::error::Result;

/// What a tree with a capacity does when full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capacity {
    /// The most leaves one member holds (an indexed tree's guard leaf
    /// counted; a fixed-depth tree's is at most `arity^depth`).
    pub leaves: u64,
    /// What happens to values that do not fit in the last member.
    pub rollover: Rollover,
}

/// A family's successor rule: where the values of a write that do not
/// fit in its last member go.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Rollover {
    /// No successor: a full tree refuses what does not fit, whole.
    #[default]
    Refuse,
    /// The last member is filled exactly and the rest goes on in new
    /// members (as many as the values need).
    Split,
    /// A write that does not fit in the last member goes whole to a new
    /// member, leaving the last one short (Railgun's contract: a batch of
    /// commitments is never split across trees). A write larger than one
    /// member is refused.
    WholeBatch,
}

impl Rollover {
    /// Whether a full member is followed by a new one.
    pub fn rolls_over(self) -> bool {
        self != Rollover::Refuse
    }

    /// The name the CLI and the JSON answers give it.
    pub fn name(self) -> &'static str {
        match self {
            Rollover::Refuse => "none",
            Rollover::Split => "split",
            Rollover::WholeBatch => "whole-batch",
        }
    }
}

/// Where a value is in a family: the member holding it and its index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Located {
    /// The member's name (`NAME` or `NAME/k`).
    pub tree: String,
    /// The member's number (0 for a tree of no family).
    pub member: u32,
    /// The value's leaf index in that member.
    pub index: u64,
}

/// One tree's share of a write, after names are resolved.
pub(super) struct Planned {
    pub(super) number: usize,
    pub(super) values: Vec<Hash>,
}

/// The family fields of member 0 of a tree added with `capacity`, or why
/// the capacity cannot be one of `config`'s trees.
pub(super) fn check_capacity(name: &str, config: &DbConfig, capacity: Capacity) -> Result<Family> {
    let tree = config.tree();
    let empty = empty_size(tree.kind);
    let most = match tree.kind {
        TreeKind::Fixed { depth, .. } => tree.arity.as_u64().checked_pow(depth),
        _ => None,
    };
    if capacity.leaves <= empty || most.is_some_and(|most| capacity.leaves > most) {
        return Err(ForestError::BadCapacity {
            name: name.to_owned(),
            capacity: capacity.leaves,
            least: empty + 1,
            most,
        }
        .into());
    }
    Ok(Family {
        member: 0,
        capacity: capacity.leaves,
        rollover: capacity.rollover,
    })
}

impl Forest {
    /// The members of the family `name` names that hold something (member
    /// 0 always), in member order; for a tree of no family, or a member
    /// named `NAME/k`, that tree alone.
    pub fn family(&self, name: &str) -> Result<Vec<Tree>> {
        let journaled = self.state.lock().journaled.clone();
        let trees = self.trees.read();
        let Some(found) = trees.iter().find(|t| t.name == name) else {
            return Err(unknown(name, &trees));
        };
        if found.family.is_none_or(|f| f.member > 0) {
            return Ok(vec![found.clone()]);
        }
        Ok(live_members(&trees, &journaled, name)
            .into_iter()
            .filter_map(|number| trees.get(number).cloned())
            .collect())
    }

    /// Where `value` is in the family (or tree) `name` names: the member
    /// and the index, `None` if no member holds it. Every member is read
    /// at least as far as the journal holds it.
    pub fn locate(&self, name: &str, value: &Hash) -> Result<Option<Located>> {
        let members = self.family(name)?;
        let bounds = self.state.lock().journaled.clone();
        let trees = self.trees.read().clone();
        for member in &members {
            let number = trees.iter().position(|t| t.name == member.name);
            if let Some(&bound) = number.and_then(|n| bounds.get(n)) {
                let _shared = self.apply.lock.read();
                member.db.flush_to(bound)?;
            }
            if let Some(index) = member.db.index_of(value)? {
                return Ok(Some(Located {
                    tree: member.name.clone(),
                    member: member.family.map_or(0, |f| f.member),
                    index,
                }));
            }
        }
        Ok(None)
    }

    /// Resolves `parts` to trees: a plain tree or member named as it is;
    /// a family with a rollover split over its last member and as many
    /// new ones as the values need (made now); a full tree without one
    /// refusing what does not fit. Every tree is named once.
    pub(super) fn plan(
        &self,
        state: &mut State,
        parts: &[(&str, &[Hash])],
    ) -> Result<Vec<Planned>> {
        let mut planned: Vec<Planned> = Vec::with_capacity(parts.len());
        let mut create: Vec<(String, Family, DbConfig)> = Vec::new();
        let trees = self.trees.read().clone();
        for &(name, values) in parts {
            let Some(number) = trees.iter().position(|t| t.name == name) else {
                return Err(unknown(name, &trees));
            };
            let tree = &trees[number];
            let twice = planned.iter().any(|p| {
                trees
                    .get(p.number)
                    .is_some_and(|t| t.family_name() == tree.family_name())
            });
            if twice {
                return Err(ForestError::TreeTwice {
                    name: name.to_owned(),
                }
                .into());
            }
            let Some(family) = tree.family else {
                planned.push(Planned {
                    number,
                    values: values.to_vec(),
                });
                continue;
            };
            if family.member > 0 {
                return Err(ForestError::MemberWrite {
                    name: name.to_owned(),
                    family: tree.family_name().to_owned(),
                }
                .into());
            }
            let members = live_members(&trees, &state.journaled, name);
            let last = *members.last().expect("member 0 is live");
            let size = state.journaled[last];
            let room = usize::try_from(family.capacity.saturating_sub(size)).unwrap_or(usize::MAX);
            let per_member =
                usize::try_from(family.capacity - empty_size(tree.db.kind())).unwrap_or(usize::MAX);
            if values.len() > room && !family.rollover.rolls_over() {
                return Err(ForestError::Full {
                    tree: trees[last].name.clone(),
                    capacity: family.capacity,
                    size,
                    values: values.len() as u64,
                }
                .into());
            }
            // Under the whole-batch rule a write that does not fit goes
            // whole to the next member (the last keeps its head: an empty
            // share still records the block).
            let whole = family.rollover == Rollover::WholeBatch && values.len() > room;
            if whole && values.len() > per_member {
                return Err(ForestError::BatchOverMember {
                    tree: name.to_owned(),
                    capacity: per_member as u64,
                    values: values.len() as u64,
                }
                .into());
            }
            let (head, mut rest) = values.split_at(if whole { 0 } else { room.min(values.len()) });
            let mut split = vec![(Some(last), head.to_vec())];
            planned.push(Planned {
                number: last,
                values: head.to_vec(),
            });
            let mut member = trees[last].family.map_or(0, |f| f.member);
            while !rest.is_empty() {
                member += 1;
                let (chunk, after) = rest.split_at(per_member.min(rest.len()));
                rest = after;
                let full = super::member_name(name, member);
                let existing = trees.iter().position(|t| t.name == full);
                split.push((existing, chunk.to_vec()));
                match existing {
                    Some(number) => planned.push(Planned {
                        number,
                        values: chunk.to_vec(),
                    }),
                    None => {
                        create.push((
                            name.to_owned(),
                            Family { member, ..family },
                            tree.db.config().clone(),
                        ));
                        planned.push(Planned {
                            number: usize::MAX,
                            values: chunk.to_vec(),
                        });
                    }
                }
            }
            if tree.db.refuses_duplicates() {
                self.check_family(state, &trees, &members, &split)?;
            }
        }
        // Members made last, once nothing above refused the write.
        let mut made = create.into_iter();
        for slot in planned.iter_mut().filter(|p| p.number == usize::MAX) {
            let (name, family, config) = made.next().expect("one member made per new slot");
            self.create_member(state, &name, config, Some(family))?;
            slot.number = self.trees.read().len() - 1;
        }
        Ok(planned)
    }

    /// Refuses a write to a strict family holding a value twice, or a
    /// value a member it does not go to holds. Costs one lookup per value
    /// and member it does not go to (a family's members are few: 65,536
    /// leaves each in Railgun's), plus one hash set of the write's values.
    fn check_family(
        &self,
        state: &State,
        trees: &[Tree],
        members: &[usize],
        split: &[(Option<usize>, Vec<Hash>)],
    ) -> Result<()> {
        if split.len() > 1 {
            let mut seen = HashSet::new();
            for value in split.iter().flat_map(|(_, values)| values) {
                if !seen.insert(*value) {
                    return Err(ForestError::InFamily {
                        value: *value,
                        tree: None,
                        index: None,
                    }
                    .into());
                }
            }
        }
        for &number in members {
            let others: Vec<Hash> = split
                .iter()
                .filter(|(to, _)| *to != Some(number))
                .flat_map(|(_, values)| values.iter().copied())
                .collect();
            if others.is_empty() {
                continue;
            }
            let db = &trees[number].db;
            {
                let _shared = self.apply.lock.read();
                db.flush_to(state.journaled[number])?;
            }
            let found = db.lookup(&others)?;
            if let Some((value, index)) = others
                .iter()
                .zip(&found.indices)
                .find_map(|(value, index)| index.map(|i| (*value, i)))
            {
                return Err(ForestError::InFamily {
                    value,
                    tree: Some(trees[number].name.clone()),
                    index: Some(index),
                }
                .into());
            }
        }
        Ok(())
    }
}

/// The tree numbers of the members of family `name` that hold something
/// (member 0 always), in member order: a member past the last that holds
/// something is empty too (rollbacks empty members from the last down).
fn live_members(trees: &[Tree], journaled: &[u64], name: &str) -> Vec<usize> {
    let mut members: Vec<(u32, usize)> = trees
        .iter()
        .enumerate()
        .filter(|(_, t)| t.family_name() == name)
        .filter_map(|(number, t)| t.family.map(|f| (f.member, number)))
        .filter(|&(member, number)| {
            member == 0
                || journaled
                    .get(number)
                    .is_some_and(|&size| size > empty_size(trees[number].db.kind()))
        })
        .collect();
    members.sort_unstable();
    members.into_iter().map(|(_, number)| number).collect()
}
