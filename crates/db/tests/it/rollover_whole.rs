//! Families under the whole-batch successor rule (Railgun's contract): a
//! block's values for the family that do not fit in its last member go
//! whole to the next member, leaving the last one short; a write larger
//! than a member is refused whole; a rollback across the boundary makes
//! the short member the last again; the rule survives a reopen (manifest
//! version 3); and a power loss anywhere in a block crossing a boundary
//! leaves all of it or none.

use cairn_db::{Capacity, DbError, Forest, ForestError, Located, Rollover};

use super::rollover::{block, crossing_under_power_loss, imt, members, root_of, values};

fn whole(leaves: u64) -> Option<Capacity> {
    Some(Capacity {
        leaves,
        rollover: Rollover::WholeBatch,
    })
}

/// (name, size, root) of members holding `chunks`, in member order.
fn expected(
    family: &str,
    chunks: &[&[cairn_core::Hash]],
) -> Vec<(String, u64, Option<cairn_core::Hash>)> {
    chunks
        .iter()
        .enumerate()
        .map(|(k, chunk)| {
            (
                cairn_db::member_name(family, k as u32),
                chunk.len() as u64,
                Some(root_of(chunk)),
            )
        })
        .collect()
}

#[test]
fn a_write_that_does_not_fit_goes_whole_to_the_next_member_leaving_the_last_short() {
    let dir = tempfile::tempdir().unwrap();
    let forest = Forest::create(dir.path()).unwrap();
    forest.add_tree_with("w", imt(true), whole(8)).unwrap();
    let first = values(1, 0, 6);
    let second = values(2, 0, 5);
    forest.commit_block(block(1), &[("w", &first)]).unwrap();
    // 5 values, 2 of room: all 5 start member 1; member 0 keeps its head.
    let committed = forest.commit_block(block(2), &[("w", &second)]).unwrap();
    let written: Vec<(&str, u64, u64)> = committed
        .trees
        .iter()
        .map(|t| (t.tree.as_str(), t.first, t.count))
        .collect();
    assert_eq!(written, [("w", 6, 0), ("w/1", 0, 5)]);
    assert_eq!(members(&forest, "w"), expected("w", &[&first, &second]));
    // What fits in the last member goes there, even exactly.
    let third = values(3, 0, 3);
    forest.commit_block(block(3), &[("w", &third)]).unwrap();
    let member_1: Vec<_> = second.iter().chain(&third).copied().collect();
    assert_eq!(members(&forest, "w"), expected("w", &[&first, &member_1]));
    // A write no member can hold whole is refused, changing nothing.
    let refused = forest
        .commit_block(block(4), &[("w", &values(4, 0, 9))])
        .unwrap_err();
    match &refused {
        DbError::Forest(ForestError::BatchOverMember {
            tree,
            capacity,
            values,
        }) => assert_eq!((tree.as_str(), *capacity, *values), ("w", 8, 9)),
        other => panic!("{other}"),
    }
    assert_eq!(members(&forest, "w"), expected("w", &[&first, &member_1]));
    // A strict family refuses a value of the short member in a whole
    // batch going to the next.
    let mut repeat = values(5, 0, 3);
    repeat.push(first[4]);
    let refused = forest
        .commit_block(block(4), &[("w", &repeat)])
        .unwrap_err();
    match &refused {
        DbError::Forest(ForestError::InFamily { value, tree, index }) => {
            assert_eq!(*value, first[4]);
            assert_eq!(tree.as_deref(), Some("w"));
            assert_eq!(*index, Some(4));
        }
        other => panic!("{other}"),
    }
    let fourth = values(4, 0, 8);
    forest.commit_block(block(4), &[("w", &fourth)]).unwrap();
    let chunks: [&[cairn_core::Hash]; 3] = [&first, &member_1, &fourth];
    assert_eq!(members(&forest, "w"), expected("w", &chunks));
    for (member, chunk) in chunks.iter().enumerate() {
        for (index, v) in chunk.iter().enumerate() {
            assert_eq!(
                forest.locate("w", v).unwrap(),
                Some(Located {
                    tree: cairn_db::member_name("w", member as u32),
                    member: member as u32,
                    index: index as u64,
                }),
                "member {member} index {index}"
            );
        }
    }
    // The rule is the manifest's: version 3, and a reopen keeps it.
    forest.close().unwrap();
    let manifest = std::fs::read(dir.path().join(cairn_db::MANIFEST)).unwrap();
    assert_eq!(manifest[8..12], 3u32.to_le_bytes());
    let forest = Forest::open(dir.path()).unwrap();
    assert_eq!(members(&forest, "w"), expected("w", &chunks));
    let tree = forest.family("w").unwrap().remove(0);
    assert_eq!(tree.family.map(|f| f.rollover), Some(Rollover::WholeBatch));
    // Back before the boundary, the short member is the last again and
    // takes what fits; the next crossing reuses member 1.
    forest.truncate_to_block(1).unwrap();
    assert_eq!(members(&forest, "w"), expected("w", &[&first]));
    let fits = values(6, 0, 2);
    forest.commit_block(block(2), &[("w", &fits)]).unwrap();
    let over = values(7, 0, 1);
    forest.commit_block(block(3), &[("w", &over)]).unwrap();
    let member_0: Vec<_> = first.iter().chain(&fits).copied().collect();
    assert_eq!(members(&forest, "w"), expected("w", &[&member_0, &over]));
    assert_eq!(forest.names().len(), 3, "member 1 and 2 made once each");
    forest.close().unwrap();
}

/// A block whose values go whole to a new member beside another tree,
/// a rollback across the boundary and a crossing again, with a power
/// loss after every file-system operation: the database opens at the
/// state after some write, at or after the last acknowledged one and at
/// most one past it.
#[test]
fn a_whole_batch_crossing_is_all_or_nothing_after_a_power_loss_anywhere() {
    crossing_under_power_loss(
        whole(8),
        (8, 5),
        // Under the same rule, 7 values fit in no short member.
        7,
        |states| {
            // The crossings left member 0 short.
            assert_eq!(states[1].0[0].1, 6);
            assert_eq!(states[3].0[1].1, 8);
        },
        |ctx, before, forest, second_open| {
            if second_open {
                assert_eq!(
                    forest.family("c").unwrap().len(),
                    before + 1,
                    "{ctx}: a second open"
                );
            } else {
                assert_eq!(
                    members(forest, "c").len(),
                    before + 1,
                    "{ctx}: a whole batch in a new member"
                );
            }
        },
    );
}

/// Railgun's whole-batch rollover (`test-vectors/railgun.json`'s
/// `whole_batch`, roots computed by `@railgun-community/engine`): a family
/// of depth-16 Poseidon members with Railgun's zero value, fed the same
/// batches as blocks, puts each in the member and at the index the engine
/// did (a batch that does not fit starts member 1, leaving member 0
/// short) with the engine's root, and keeps each member's last root.
#[test]
fn a_railgun_family_closes_a_short_tree_as_the_railgun_engine_does() {
    use cairn_core::{Hash, HashKind, TreeKind};
    use cairn_testkit::vectors;

    use crate::support::{config_of, tree};

    let railgun = vectors::load("railgun.json");
    let depth = railgun["depth"].as_u64().unwrap() as u32;
    let capacity = railgun["capacity"].as_u64().unwrap();
    let zero = vectors::hash_or_null(&railgun["zero"]).unwrap();
    let whole_batch = &railgun["whole_batch"];
    let batches = whole_batch["batches"].as_array().unwrap();
    let total: u64 = batches.iter().map(|b| b["values"].as_u64().unwrap()).sum();
    let leaves: Vec<Hash> = (0..total).map(vectors::rule_leaf).collect();
    let dir = tempfile::tempdir().unwrap();
    let forest = Forest::create(dir.path()).unwrap();
    let mut config =
        config_of(tree(2, HashKind::Poseidon).with_kind(TreeKind::Fixed { depth, zero }));
    config.store.log_shift = 16;
    forest
        .add_tree_with("railgun", config, whole(capacity))
        .unwrap();
    let mut next = 0usize;
    let mut short = false;
    for (number, batch) in batches.iter().enumerate() {
        let count = batch["values"].as_u64().unwrap() as usize;
        let member = batch["tree"].as_u64().unwrap() as u32;
        let first = batch["first_index"].as_u64().unwrap();
        let before = members(&forest, "railgun");
        let committed = forest
            .commit_block(
                block(number as u64 + 1),
                &[("railgun", &leaves[next..next + count])],
            )
            .unwrap();
        next += count;
        forest.apply().unwrap();
        let name = cairn_db::member_name("railgun", member);
        let part = committed
            .trees
            .iter()
            .find(|t| t.tree == name && t.count > 0)
            .unwrap_or_else(|| panic!("batch {number}: no values in {name}"));
        assert_eq!(part.first, first, "batch {number}: {name}");
        let head = forest.tree(&name).unwrap().head();
        assert_eq!(head.size, first + count as u64, "{name}");
        assert_eq!(
            head.root,
            vectors::hash_or_null(&batch["root"]),
            "batch {number}: {name} at size {}",
            head.size
        );
        // A member left short by a batch that went whole to the next.
        short |= member as usize == before.len() && before.last().unwrap().1 < capacity;
    }
    assert!(short, "the vectors leave a member short");
    let closed: Vec<(String, u64, Option<Hash>)> = whole_batch["closed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                cairn_db::member_name("railgun", c["tree"].as_u64().unwrap() as u32),
                c["size"].as_u64().unwrap(),
                vectors::hash_or_null(&c["root"]),
            )
        })
        .collect();
    assert_eq!(members(&forest, "railgun"), closed);
    forest.close().unwrap();
}
