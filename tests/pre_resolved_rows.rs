//! Launches that bind pre-resolved rows (`World::resolve_binding`): the same
//! answers as the bindings they came from while their allocation lives, and
//! the same bad input, with the differences a key makes written down.

mod common;

use common::{FAIL, claims, go, named, stale_row};
use taintworld::systems::check_reads;
use taintworld::{Access, Binding, Config, Error, Launch, Outcome, Resolved, Verdict, World};

fn launch<'a>(kernel: &'a str, rows: &'a [Resolved], outcome: Outcome<'a>) -> Launch<'a, Resolved> {
    Launch {
        kernel,
        stream: 0.into(),
        bindings: rows,
        outcome,
    }
}

fn row(world: &World, binding: Binding) -> Resolved {
    world
        .resolve_binding(&binding)
        .expect("good input")
        .expect("resolves")
}

#[test]
fn a_row_is_the_key_and_the_concrete_range_its_binding_resolves_to() {
    let mut world = World::default();
    let key = world.alloc(1, 7, 4096).unwrap();
    let whole = row(&world, Binding::whole(1, 7, Access::Write));
    assert_eq!(
        (whole.alloc(), whole.start(), whole.end(), whole.access()),
        (key, 0, 4096, Access::Write)
    );
    // A dead binding gets its row too: the world passes over it.
    let dead = row(&world, Binding::range(1, 7, 8, 16, Access::Dead));
    assert_eq!(
        (dead.start(), dead.end(), dead.access()),
        (8, 16, Access::Dead)
    );
    // The same bytes with another access, and a part of them.
    assert_eq!(dead.with_access(Access::Read).access(), Access::Read);
    assert_eq!(dead.with_access(Access::Read).start(), 8);
}

#[test]
fn rows_are_equal_when_one_world_made_them_for_the_same_bytes_the_same_way() {
    let mut world = World::default();
    world.alloc(0, 1, 4096).unwrap();
    world.alloc(0, 2, 4096).unwrap();
    world.alloc(0, 3, 64).unwrap();
    let read = Binding::range(0, 1, 0, 256, Access::Read);
    let first = row(&world, read);
    // Made again after a free elsewhere (a later epoch): still the same row
    // (as the world's unit test of fresh rows asserts; here from outside).
    world.free(3).unwrap();
    assert_eq!(row(&world, read), first);
    for other in [
        Binding::range(0, 2, 0, 256, Access::Read),
        Binding::range(0, 1, 8, 256, Access::Read),
        Binding::range(0, 1, 0, 255, Access::Read),
        Binding::range(0, 1, 0, 256, Access::Write),
    ] {
        assert_ne!(row(&world, other), first, "{other:?}");
    }
    // The same binding resolved by a clone: another world's row. Where
    // worlds get no stamps (a target without atomics; CI's build with
    // `--cfg taintworld_no_stamps`), no row says which world made it, and
    // the clone's is equal.
    if cfg!(taintworld_no_stamps) {
        assert_eq!(row(&world.clone(), read), first);
    } else {
        assert_ne!(row(&world.clone(), read), first);
    }
}

#[test]
fn resolving_a_binding_that_does_not_resolve_answers_none_and_counts_nothing() {
    let mut world = World::default();
    world.alloc(0, 7, 64).unwrap();
    // Made on slot 0, named on slot 1.
    assert_eq!(
        world.resolve_binding(&Binding::whole(1, 7, Access::Read)),
        Ok(None)
    );
    assert_eq!(
        world.resolve_binding(&Binding::whole(0, 8, Access::Read)),
        Ok(None)
    );
    assert_eq!(world.stats().unresolved_bindings, 0);
    // Bad input is bad input whether or not it is launched.
    assert!(matches!(
        world.resolve_binding(&Binding::range(0, 7, 0, 65, Access::Read)),
        Err(Error::RangePastEnd { memory: 7, .. })
    ));
}

#[test]
fn a_launch_of_rows_gives_the_verdicts_and_claims_of_its_bindings() {
    let mut named_world = World::default();
    for memory in 1..=3 {
        named_world.alloc(0, memory, 256).unwrap();
    }
    let mut rows_world = named_world.clone();
    let fill = [Binding::whole(0, 1, Access::Write)];
    let gelu = [
        Binding::whole(0, 1, Access::Read),
        Binding::range(0, 2, 0, 128, Access::Write),
    ];
    let copy = [
        Binding::range(0, 2, 64, 128, Access::Read),
        Binding::whole(0, 3, Access::ReadWrite),
    ];
    let steps: [(&str, &[Binding], Outcome); 3] = [
        ("fill", &fill, FAIL),
        ("gelu", &gelu, Outcome::Ok),
        ("copy", &copy, Outcome::Ok),
    ];
    for (kernel, bindings, outcome) in steps {
        let want = named_world
            .launch(&Launch {
                kernel,
                stream: 0.into(),
                bindings,
                outcome,
            })
            .unwrap();
        let rows: Vec<Resolved> = bindings.iter().map(|b| row(&rows_world, *b)).collect();
        let got = rows_world.launch(&launch(kernel, &rows, outcome)).unwrap();
        assert_eq!(got, want, "{kernel}");
    }
    assert_eq!(rows_world.launches(), named_world.launches());
    for memory in 1..=3 {
        assert_eq!(claims(&rows_world, memory), claims(&named_world, memory));
    }
    assert_eq!(rows_world.stats(), named_world.stats());
}

#[test]
fn a_row_whose_allocation_was_freed_is_unresolved_even_when_its_memory_id_is_reused() {
    let mut world = World::default();
    world.alloc(0, 7, 64).unwrap();
    let old = row(&world, Binding::whole(0, 7, Access::Write));
    world.free(7).unwrap();
    world.alloc(0, 7, 64).unwrap();
    // A binding by memory id would hit the new allocation; the row names
    // the old one by key, which is gone.
    let result = world.launch(&launch("fill", &[old], FAIL)).unwrap();
    assert!(matches!(result.verdict, Verdict::Failed(_)));
    assert_eq!(claims(&world, 7), vec![]);
    assert_eq!(world.stats().unresolved_bindings, 1);
    assert_eq!(world.stats().live_failures, 0);
}

#[test]
fn in_strict_mode_a_stale_row_is_rejected_naming_its_key_and_nothing_changes() {
    let mut world = World::new(Config {
        strict: true,
        ..Config::default()
    })
    .unwrap();
    world.alloc(0, 1, 64).unwrap();
    let good = row(&world, Binding::whole(0, 1, Access::Write));
    let stale = stale_row(&mut world);
    let batch = [
        launch("fill", std::slice::from_ref(&good), FAIL),
        launch("copy", std::slice::from_ref(&stale), Outcome::Ok),
    ];
    let mut results = Vec::new();
    let error = world.launch_batch(&batch, &mut results).unwrap_err();
    match error {
        Error::InBatch { index, error } => {
            assert_eq!(index, 1);
            assert_eq!(*error, Error::UnknownKey { key: stale.alloc() });
        }
        other => panic!("expected the batch to name launch 1, got {other:?}"),
    }
    assert!(results.is_empty());
    assert_eq!(world.launches(), 0);
    assert_eq!(claims(&world, 1), vec![]);
}

/// A stale row with an empty range (`[8, 8)` of a freed allocation) is
/// unresolved, as any stale row is: counted, never an error, whichever path
/// takes it. The world's check of a row that is not good asks whether its
/// range ends before it starts; asked as "ends at or before", it called
/// this row reversed, and only the random model test noticed.
#[test]
fn a_stale_row_with_an_empty_range_is_unresolved_not_reversed() {
    let mut world = World::default();
    world.alloc(0, 1, 64).unwrap();
    world.alloc(0, 7, 16).unwrap();
    let good = row(&world, Binding::whole(0, 1, Access::Read));
    let empty = row(&world, Binding::range(0, 7, 8, 8, Access::Write));
    world.free(7).unwrap();

    let alone = world
        .launch(&launch("alone", std::slice::from_ref(&empty), Outcome::Ok))
        .unwrap();
    assert_eq!(named(alone.verdict), ("ran", 0, 0));
    let rows = [good, empty];
    let beside = world.launch(&launch("beside", &rows, Outcome::Ok)).unwrap();
    assert_eq!(named(beside.verdict), ("ran", 0, 0));
    let batch = [launch("batch", &rows, Outcome::Ok)];
    let mut results = Vec::new();
    world.launch_batch(&batch, &mut results).unwrap();
    assert_eq!(named(results[0].verdict), ("ran", 0, 0));
    assert_eq!(world.stats().unresolved_bindings, 3);
    assert_eq!(world.launches(), 3);
}

#[test]
fn no_row_is_made_reversed_or_past_its_allocation_and_a_part_of_a_row_is_checked_once() {
    let mut world = World::default();
    world.alloc(0, 9, 64).unwrap();
    assert_eq!(
        world.resolve_binding(&Binding::range(0, 9, 0, 65, Access::Read)),
        Err(Error::RangePastEnd {
            memory: 9,
            start: 0,
            end: 65,
            size: 64
        })
    );
    assert_eq!(
        world.resolve_binding(&Binding::range(0, 9, 9, 3, Access::Read)),
        Err(Error::RangeReversed {
            memory: 9,
            start: 9,
            end: 3
        })
    );
    let half = row(&world, Binding::range(0, 9, 0, 32, Access::Write));
    // A part of a row stays inside it: never past it, never reversed.
    assert_eq!(half.narrow(0, 33), None);
    assert_eq!(half.narrow(9, 3), None);
    let part = half.narrow(8, 16).expect("inside the row");
    assert_eq!(
        (part.alloc(), part.start(), part.end(), part.access()),
        (half.alloc(), 8, 16, Access::Write)
    );
    let failed = world.launch(&launch("fill", &[part], FAIL)).unwrap();
    let Verdict::Failed(failure) = failed.verdict else {
        panic!("expected the launch to fail, got {failed:?}");
    };
    assert_eq!(claims(&world, 9), vec![(8, 16, failure.get(), None)]);
}

/// Two worlds that made their allocations in the same order hand out the
/// same keys: a row kept from `other` (memory 5, 128 bytes) names `world`'s
/// memory 9 (64 bytes), with a range `world` never checked.
fn worlds_sharing_keys() -> (World, Resolved) {
    let mut world = World::default();
    world.alloc(0, 9, 64).unwrap();
    world.alloc(0, 10, 64).unwrap();
    let mut other = World::default();
    other.alloc(0, 5, 128).unwrap();
    let foreign = row(&other, Binding::whole(0, 5, Access::Write));
    assert_eq!(
        foreign.alloc(),
        row(&world, Binding::whole(0, 9, Access::Read)).alloc()
    );
    (world, foreign)
}

const PAST: Error = Error::RangePastEnd {
    memory: 9,
    start: 0,
    end: 128,
    size: 64,
};

#[test]
fn a_row_kept_from_another_world_is_bad_input_wherever_its_range_runs_past_the_end() {
    let (mut world, foreign) = worlds_sharing_keys();
    let mut results = Vec::new();
    let batch = [launch("copy", std::slice::from_ref(&foreign), Outcome::Ok)];
    let in_batch = Err(Error::InBatch {
        index: 0,
        error: Box::new(PAST),
    });
    // Nothing is claimed: a launch that runs would change nothing, and the
    // range is checked all the same — alone, in a batch, as a dry run.
    assert_eq!(
        world.launch(&launch("copy", &[foreign], Outcome::Ok)),
        Err(PAST)
    );
    assert_eq!(
        world.launch(&launch("copy", &[foreign], Outcome::DryRun)),
        Err(PAST)
    );
    assert_eq!(world.launch_batch(&batch, &mut results), in_batch);
    // A launch that may claim bytes.
    assert_eq!(world.launch(&launch("fill", &[foreign], FAIL)), Err(PAST));
    assert_eq!(world.launches(), 0);
    // Once something is claimed.
    let other_buffer = row(&world, Binding::whole(0, 10, Access::Write));
    world
        .launch(&launch("fill", &[other_buffer], FAIL))
        .unwrap();
    assert_eq!(
        world.launch(&launch("copy", &[foreign], Outcome::Ok)),
        Err(PAST)
    );
    assert_eq!(world.launch_batch(&batch, &mut results), in_batch);
    assert!(results.is_empty());
    assert_eq!(claims(&world, 9), vec![]);
    world.check_invariants().unwrap();
}

#[test]
fn a_row_kept_from_another_world_gets_the_same_answer_alone_and_in_a_batch_that_fails() {
    // The batch must fail before anything changes, and one launch at a time
    // must stop at the same launch: the clean launch's row is checked in a
    // quiet world as it would be once the failure has claimed something.
    let (mut world, foreign) = worlds_sharing_keys();
    let out = [row(&world, Binding::whole(0, 10, Access::Write))];
    let batch = [
        launch("copy", std::slice::from_ref(&foreign), Outcome::Ok),
        launch("fill", &out, FAIL),
    ];
    let mut single = world.clone();
    assert_eq!(single.launch(&batch[0]), Err(PAST));
    let mut results = Vec::new();
    assert_eq!(
        world.launch_batch(&batch, &mut results),
        Err(Error::InBatch {
            index: 0,
            error: Box::new(PAST)
        })
    );
    assert_eq!((world.launches(), single.launches()), (0, 0));
}

#[test]
fn a_row_kept_from_another_world_inside_an_allocation_here_names_that_allocation() {
    // As an `AllocKey` would: the range fits, so it is good input here.
    let mut world = World::default();
    world.alloc(0, 9, 64).unwrap();
    let mut other = World::default();
    other.alloc(0, 5, 128).unwrap();
    let foreign = row(&other, Binding::range(0, 5, 8, 16, Access::Write));
    let ran = world
        .launch(&launch("copy", &[foreign], Outcome::Ok))
        .unwrap();
    assert_eq!(ran.verdict, Verdict::Ran);
    let failed = world.launch(&launch("fill", &[foreign], FAIL)).unwrap();
    let Verdict::Failed(failure) = failed.verdict else {
        panic!("expected the launch to fail, got {failed:?}");
    };
    assert_eq!(claims(&world, 9), vec![(8, 16, failure.get(), None)]);
}

#[test]
fn a_key_from_a_world_built_apart_names_whatever_allocation_sits_at_its_slot_here() {
    // As a row does (above): a key is a slot and a version, and no world
    // can tell its own keys from another's.
    let mut world = World::default();
    world.alloc(0, 9, 64).unwrap();
    let mut other = World::default();
    let foreign = other.alloc(0, 5, 128).unwrap();
    let beyond = other.alloc(0, 6, 128).unwrap();
    assert_eq!(world.free(foreign), Ok(()));
    assert!(
        world.claims(9).is_none(),
        "the other world's key freed memory 9"
    );
    // Where no allocation of this world sits at the key's slot and
    // version, the key names nothing.
    assert_eq!(world.free(foreign), Err(Error::UnknownKey { key: foreign }));
    assert_eq!(world.free(beyond), Err(Error::UnknownKey { key: beyond }));
    world.check_invariants().unwrap();
}

#[test]
fn a_world_and_its_clone_check_each_others_later_rows_as_another_worlds() {
    // After the clone the two worlds part ways: each frees the allocation
    // and makes a new one in its slot, which takes the same key in both,
    // of another size in each. The row either makes for its own is another
    // world's row to the other.
    let mut world = World::default();
    world.alloc(0, 1, 64).unwrap();
    let mut clone = world.clone();
    world.free(1).unwrap();
    clone.free(1).unwrap();
    let small = world.alloc(0, 2, 16).unwrap();
    let large = clone.alloc(0, 2, 4096).unwrap();
    assert_eq!(small, large, "the same key in both worlds");
    let past = |memory, end, size| {
        Err(Error::RangePastEnd {
            memory,
            start: 0,
            end,
            size,
        })
    };
    // The original checks the clone's row.
    let the_clones = row(&clone, Binding::whole(0, 2, Access::Write));
    let in_world = world.launch(&launch("copy", &[the_clones], Outcome::Ok));
    assert_eq!(in_world, past(2, 4096, 16));
    // The clone checks the original's, sizes the other way round.
    let stale = row(&world, Binding::whole(0, 2, Access::Write));
    world.free(2).unwrap();
    clone.free(2).unwrap();
    let large = world.alloc(0, 3, 4096).unwrap();
    let small = clone.alloc(0, 3, 16).unwrap();
    assert_eq!(small, large, "the same key in both worlds");
    let the_originals = row(&world, Binding::whole(0, 3, Access::Write));
    let in_clone = clone.launch(&launch("copy", &[the_originals], Outcome::Ok));
    assert_eq!(in_clone, past(3, 4096, 16));
    // Each world still takes its own rows by key, and its stale ones as
    // unresolved.
    let ran = world
        .launch(&launch("copy", &[the_originals, stale], Outcome::Ok))
        .unwrap();
    assert_eq!(ran.verdict, Verdict::Ran);
    assert_eq!(world.stats().unresolved_bindings, 1);
    let its_own = row(&clone, Binding::whole(0, 3, Access::Write));
    let ran = clone
        .launch(&launch("copy", &[its_own], Outcome::Ok))
        .unwrap();
    assert_eq!(ran.verdict, Verdict::Ran);
}

#[test]
fn a_clean_batch_of_rows_counts_stale_ones_and_numbers_every_launch() {
    let mut world = World::default();
    world.alloc(0, 1, 64).unwrap();
    let good = row(&world, Binding::whole(0, 1, Access::Read));
    let stale = stale_row(&mut world);
    let rows = [good, stale, good];
    let batch = [
        launch("a", &rows, Outcome::Ok),
        launch("b", &rows[..1], Outcome::DryRun),
    ];
    let mut results = Vec::new();
    world.launch_batch(&batch, &mut results).unwrap();
    let verdicts: Vec<_> = results
        .iter()
        .map(|r| (r.launch, named(r.verdict)))
        .collect();
    assert_eq!(verdicts, vec![(0, ("ran", 0, 0)), (1, ("dry_run", 0, 0))]);
    assert_eq!(world.stats().unresolved_bindings, 1);
}

/// The systems are public, for schedulers that run them one by one: each
/// answer they give besides the rows is part of that surface.
#[test]
fn the_systems_call_a_batch_claimed_only_when_a_row_not_left_dead_is_claimed() {
    use taintworld::systems::{check_rows, resolve_each, resolve_owner};
    let mut w = World::default();
    w.alloc(0, 1, 64).unwrap(); // claimed below
    w.alloc(0, 2, 64).unwrap(); // clean
    go(&mut w, "fill", &[Binding::whole(0, 1, Access::Write)], FAIL);
    let stale = stale_row(&mut w);
    let claimed = |access| Binding::whole(0, 1, access);
    let clean = |access| Binding::whole(0, 2, access);
    let batches: [(&[Binding], bool); 6] = [
        (&[clean(Access::Read), clean(Access::Write)], false),
        (&[claimed(Access::Dead)], false),
        (&[clean(Access::Read), claimed(Access::Dead)], false),
        (&[clean(Access::Read), claimed(Access::Read)], true),
        (&[claimed(Access::Write)], true),
        (&[claimed(Access::ReadWrite), clean(Access::Dead)], true),
    ];
    let (streams, allocs) = (w.streams(), w.allocations());
    for (bindings, answer) in batches {
        let rows: Vec<Resolved> = bindings.iter().map(|b| row(&w, *b)).collect();
        let by_rows = check_rows(&rows, allocs, true).unwrap();
        assert_eq!(by_rows.claimed, answer, "check_rows of {bindings:?}");
        let mut made = Vec::new();
        let by_bindings = resolve_owner(bindings, streams, allocs, true, &mut made).unwrap();
        assert_eq!(by_bindings.claimed, answer, "resolve_owner of {bindings:?}");
        let each = resolve_each(bindings, streams, allocs, true, |_| {}).unwrap();
        assert_eq!(each.claimed, answer, "resolve_each of {bindings:?}");
        assert_eq!((by_rows.unresolved, by_bindings.unresolved), (0, 0));
        // A stale row first sends the check down its slower path, which
        // counts it as unresolved and must give the same answer.
        let with_stale: Vec<Resolved> = core::iter::once(stale).chain(rows).collect();
        let slower = check_rows(&with_stale, allocs, false).unwrap();
        assert_eq!(
            (slower.claimed, slower.unresolved),
            (answer, 1),
            "{bindings:?}"
        );
    }
}

/// `systems::check_reads` on pre-resolved rows: the hit names the position
/// of the deciding row among all the rows checked (write rows and clean
/// reads before it included), the memory it needed, and the claim with the
/// lowest start overlapping it. The world itself reads only `needed` and
/// `claim` of a hit, so only a direct call sees `row`.
#[test]
fn check_reads_names_the_deciding_rows_position_among_all_rows_checked() {
    let mut world = World::default();
    world.alloc(0, 1, 64).unwrap();
    world.alloc(0, 2, 64).unwrap();
    go(
        &mut world,
        "k",
        &[Binding::range(0, 2, 16, 32, Access::Write)],
        FAIL,
    );
    let rows = [
        // A write over the claim is not a read.
        row(&world, Binding::whole(0, 2, Access::Write)),
        // A clean allocation.
        row(&world, Binding::whole(0, 1, Access::Read)),
        // Clean bytes of the claimed allocation.
        row(&world, Binding::range(0, 2, 0, 16, Access::Read)),
        // The first read overlapping the claim decides...
        row(&world, Binding::range(0, 2, 24, 40, Access::Read)),
        // ...not a later one.
        row(&world, Binding::whole(0, 2, Access::Read)),
    ];
    let hit = check_reads(&rows, world.allocations()).expect("row 3 reads claimed bytes");
    assert_eq!(hit.row, 3);
    assert_eq!(hit.needed, 2);
    assert_eq!((hit.claim.start, hit.claim.end), (16, 32));
    // Without the deciding row, the next one decides, at its own position.
    let hit = check_reads(&[rows[0], rows[1], rows[2], rows[4]], world.allocations())
        .expect("the whole read overlaps the claim");
    assert_eq!(hit.row, 3);
    let hit = check_reads(&[rows[4], rows[3]], world.allocations()).expect("both read it");
    assert_eq!(hit.row, 0);
    assert_eq!(check_reads(&rows[..3], world.allocations()), None);
}
