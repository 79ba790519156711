//! The model (`cairn_testkit::model`) run in lockstep against the store
//! and the database facade of every kind. Default case counts keep the
//! whole file to about the time the models it replaced took;
//! `CAIRN_MODEL_CASES=<percent>` scales them for a longer run.

use cairn_core::HashKind;
use cairn_core::level::SEGMENT_LEN;
use cairn_testkit::model::{
    Coverage, CrashKind, CrashPoint, Kind, Op, Setup, Target, cases, poseidon_case, run, run_case,
    small_case, tiering_case,
};

/// What a run of the default size must have exercised: crashes in every
/// mode, in the middle of operations, losing and keeping unacknowledged
/// leaves, across log files, inside rollbacks (opening clearly before
/// and clearly after them), rollbacks of every sort.
fn assert_covered(total: &Coverage, tags: bool) {
    assert!(total.crashes.len() >= 6, "crash modes: {:?}", total.crashes);
    assert!(total.mid_operation > 0, "{total:?}");
    assert!(total.lost_unacknowledged > 0, "{total:?}");
    assert!(total.kept_unacknowledged > 0, "{total:?}");
    assert!(total.log_files >= 3, "{total:?}");
    assert!(
        total.durable_rollbacks > 0 && total.refused > 0,
        "{total:?}"
    );
    assert!(total.across_files > 0, "{total:?}");
    assert!(total.rolled_back_waits > 0, "{total:?}");
    assert!(total.reappends > 0 && total.finalizes > 0, "{total:?}");
    assert!(total.inside_rollback > 0, "{total:?}");
    if tags {
        assert!(total.tags > 0, "{total:?}");
    }
}

#[test]
fn random_sequences_on_the_store_match_the_reference() {
    let cases = cases(320);
    let total = run("store, lean", cases, small_case(Target::Store, Kind::Lean));
    if cases >= 64 {
        assert_covered(&total, true);
        assert!(total.memory_rollbacks > 0, "{total:?}");
        assert!(
            total.opened_before > 0 && total.opened_after > 0,
            "power losses inside rollbacks opened before {} and after {} (clearly)",
            total.opened_before,
            total.opened_after
        );
    }
}

#[test]
fn random_sequences_on_a_fixed_depth_store_match_the_reference() {
    run(
        "store, imt",
        cases(32),
        small_case(Target::Store, Kind::Fixed),
    );
}

#[test]
fn random_sequences_with_tiering_on_the_store_match_the_reference() {
    let total = run(
        "store, tiering",
        cases(32),
        tiering_case(Target::Store, Kind::Lean),
    );
    assert!(total.tiered >= 1, "level 0 was mapped: {total:?}");
}

#[test]
fn random_poseidon_sequences_on_the_store_match_the_reference() {
    run(
        "store, poseidon",
        cases(16),
        poseidon_case(Target::Store, Kind::Lean),
    );
}

#[test]
fn random_sequences_on_a_lean_database_match_the_reference() {
    let cases = cases(64);
    let total = run(
        "database, lean",
        cases,
        small_case(Target::Database, Kind::Lean),
    );
    if cases >= 64 {
        assert_covered(&total, true);
        assert!(total.duplicates > 0, "{total:?}");
    }
}

#[test]
fn random_sequences_on_a_fixed_depth_database_match_the_reference() {
    let cases = cases(32);
    let total = run(
        "database, imt",
        cases,
        small_case(Target::Database, Kind::Fixed),
    );
    if cases >= 32 {
        assert!(total.duplicates > 0 && total.tags > 0, "{total:?}");
    }
}

#[test]
fn random_sequences_on_an_indexed_database_match_the_reference() {
    let cases = cases(48);
    let total = run(
        "database, indexed",
        cases,
        small_case(Target::Database, Kind::Indexed),
    );
    if cases >= 48 {
        assert_covered(&total, false);
        assert!(
            total.duplicates > 0 && total.absence_proofs > 0,
            "{total:?}"
        );
        // Block tags are refused by the capability table, never run.
        assert!(total.unsupported > 0 && total.tags == 0, "{total:?}");
    }
}

#[test]
fn random_poseidon_sequences_on_every_database_kind_match_the_reference() {
    for kind in [Kind::Lean, Kind::Fixed, Kind::Indexed] {
        run(
            &format!("database, {kind:?}, poseidon"),
            cases(6),
            poseidon_case(Target::Database, kind),
        );
    }
}

fn crash(kind: CrashKind, at: CrashPoint) -> Op {
    Op::CrashReopen {
        kind,
        at,
        seed: 5,
        verify: true,
    }
}

/// One fixed sequence on N = 2 with log files of one segment that must tier
/// level 0 and level 1, by a checkpoint and at open, keep a snapshot taken
/// before tiering intact, and recover from power losses in the middle of a
/// tiering checkpoint and of a group commit that crosses a log file.
#[test]
fn a_scripted_sequence_tiers_levels_0_and_1_and_survives_crashes() {
    let setup = Setup {
        target: Target::Store,
        kind: Kind::Lean,
        n: 2,
        hash: HashKind::Blake3,
        log_shift: 16,
        tier_below: 2,
        explicit: false,
        root_window: 4096,
        set_rewrite_percent: 25,
        seed: 0x7e57,
    };
    let ops = [
        Op::Append(2 * SEGMENT_LEN + 700),
        Op::Snapshot,
        Op::Checkpoint,
        Op::Append(1500),
        Op::Wait(0),
        Op::Append(1),
        Op::Checkpoint,
        // Mid checkpoint: the level files are written, the checkpoint may
        // or may not be published.
        crash(CrashKind::DropUnsynced, CrashPoint::InLastOp(7)),
        Op::Snapshot,
        Op::Append(SEGMENT_LEN),
        Op::Checkpoint,
        crash(
            CrashKind::Tear {
                page: true,
                keep: 3,
            },
            CrashPoint::InLastOp(2),
        ),
        Op::Append(2000),
        // Crosses from log file 3 into file 4.
        Op::Append(SEGMENT_LEN),
        Op::Flush,
        crash(CrashKind::RandomSectors, CrashPoint::InLastOp(1)),
        Op::CloseReopen { verify: false },
        Op::Append(10),
        Op::DropReopen { verify: true },
        Op::Checkpoint,
    ];
    let coverage = run_case(setup, &ops, false);
    eprintln!("{coverage:?}");
    let two = |tiered: &[usize]| tiered.len() >= 2 && tiered[..2].iter().all(|&s| s >= 1);
    assert!(
        two(&coverage.tiered_by_checkpoint),
        "a checkpoint tiered levels 0 and 1: {:?}",
        coverage.tiered_by_checkpoint
    );
    assert!(
        two(&coverage.tiered_at_open),
        "open mapped levels 0 and 1: {:?}",
        coverage.tiered_at_open
    );
    assert!(coverage.crash_count() == 3 && coverage.mid_operation == 3);
    assert!(coverage.log_files >= 4);
}

/// The canary: with syncs that lie, a power loss after an acknowledged
/// flush loses acknowledged leaves, and the model must say so, on the
/// store and on every database kind. A test that cannot fail proves
/// nothing.
#[test]
fn canary_with_lying_fsync_the_model_finds_lost_acknowledged_leaves() {
    for (target, kind) in [
        (Target::Store, Kind::Lean),
        (Target::Database, Kind::Lean),
        (Target::Database, Kind::Fixed),
        (Target::Database, Kind::Indexed),
    ] {
        let setup = Setup {
            target,
            kind,
            n: 4,
            hash: HashKind::Blake3,
            log_shift: 10,
            tier_below: 1,
            explicit: false,
            root_window: 4096,
            set_rewrite_percent: 25,
            seed: 3,
        };
        let ops = [
            Op::Append(1500),
            Op::Flush,
            Op::CrashReopen {
                kind: CrashKind::DropUnsynced,
                at: CrashPoint::Now,
                seed: 0,
                verify: false,
            },
        ];
        // Honest syncs: nothing lost.
        run_case(setup, &ops, false);
        let caught = std::panic::catch_unwind(|| run_case(setup, &ops, true))
            .expect_err("lying syncs lost nothing the model noticed");
        let message = caught.downcast_ref::<String>().cloned().unwrap_or_default();
        let offset = setup.offset();
        let want = format!("{offset} leaves recovered; {} acknowledged", 1500 + offset);
        assert!(message.contains(&want), "{target:?} {kind:?}: {message}");
    }
}
