//! SPEC.md §6 and §6a: capture windows, graphs and replays, profiles,
//! device faults, and allocations whose reservation failed.

mod common;

use common::{FAIL, claims, go_on as go, reads, writes};

use taintworld::{
    Access, Binding, CaptureResult, ChainHop, Config, Error, ErrorInfo, Outcome, ProfileResult,
    ReadResult, StreamRef, SyncResult, TaintReport, Verdict, World,
};

const FAIL2: Outcome<'static> = Outcome::Failed {
    kind: "launch",
    message: "out of resources",
};

/// A world with allocations 1..=4 of 16 bytes: 1 and 2 on stream 0, 3 and 4
/// on stream 1.
fn world() -> World {
    let mut w = World::default();
    for (stream, m) in [(0, 1), (0, 2), (1, 3), (1, 4)] {
        w.alloc(stream, m, 16).unwrap();
    }
    w
}

/// The hop a chain ends in when launch 1, `gelu`, was skipped for reading
/// memory 1, which `fill` failed to write.
fn gelu_hop() -> ChainHop {
    ChainHop {
        launch: 1,
        kernel: "gelu".into(),
        needed: 1,
    }
}

/// A world whose window on slot 0 a skip doomed: `fill` failed to write
/// memory 1, then, in the window, `gelu` read it (skipped: [`gelu_hop`]).
fn doomed_by_gelus_skip() -> World {
    let mut w = world();
    go(&mut w, "fill", 0, &[writes(0, 1)], FAIL);
    w.capture_begin(0).unwrap();
    go(&mut w, "gelu", 0, &[reads(0, 1), writes(0, 2)], Outcome::Ok);
    w
}

fn failed(result: CaptureResult) -> TaintReport {
    match result {
        CaptureResult::Failed(r) => r,
        CaptureResult::Ok => panic!("the window was doomed"),
    }
}

// ---- capture windows ----------------------------------------------------

/// A window records every launch on its slot that runs (SPEC §6), a batch
/// of clean launches too — in a world that holds a failure elsewhere,
/// where a clean batch that binds nothing claimed by key (the common
/// binding) is otherwise answered from its look-ups alone, with nothing
/// made but its numbers.
#[test]
fn a_clean_batch_in_a_window_beside_a_failure_is_recorded_and_its_graph_replays_it() {
    let mut w = world();
    let (k1, k2) = (w.alloc(0, 11, 16).unwrap(), w.alloc(0, 12, 16).unwrap());
    go(&mut w, "fill", 1, &[writes(1, 3)], FAIL);
    assert_eq!(claims(&w, 3).len(), 1, "a failure lives beside the batch");
    w.capture_begin(0).unwrap();
    let (one, two) = ([writes(0, k1)], [reads(0, k1), writes(0, k2)]);
    let batch =
        [("copy", &one[..]), ("gelu", &two[..])].map(|(kernel, bindings)| taintworld::Launch {
            kernel,
            stream: 0.into(),
            bindings,
            outcome: Outcome::Ok,
        });
    let mut results = Vec::new();
    w.launch_batch(&batch, &mut results).unwrap();
    assert!(results.iter().all(|r| r.verdict == Verdict::Ran));
    assert_eq!(w.capture_end(0, 7).unwrap(), CaptureResult::Ok);
    // The graph holds both launches: a failed replay taints their writes.
    assert!(matches!(w.replay(7, FAIL2).unwrap(), Verdict::Failed(_)));
    assert_eq!(claims(&w, 11).len(), 1, "copy's write, replayed");
    assert_eq!(claims(&w, 12).len(), 1, "gelu's write, replayed");
}

#[test]
fn capture_begin_on_a_slot_that_has_a_window_is_bad_input() {
    let mut w = world();
    w.capture_begin(1).unwrap();
    let err = w.capture_begin(9).unwrap_err(); // 9 % 8 == 1
    assert_eq!(
        err,
        Error::CaptureOpen {
            stream: 9.into(),
            slot: 1
        }
    );
    assert_eq!(
        err.to_string(),
        "stream 9 (slot 1) already has an open capture window"
    );
    assert_eq!(w.capture_end(1, 5).unwrap(), CaptureResult::Ok);
}

/// Stream ids fold onto slots, so a capture error names the stream the
/// caller gave as well as the slot whose window it is (the slot alone
/// told a log's author nothing about stream 13's "slot 5").
#[test]
fn a_capture_error_names_the_stream_as_given_and_its_slot() {
    let mut w = World::new(Config {
        num_special: 1,
        ..Config::default()
    })
    .unwrap();
    w.capture_begin(StreamRef::Special(0)).unwrap();
    let err = w.capture_begin(StreamRef::Special(0)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "special stream 0 (slot 8) already has an open capture window"
    );
    let err = w.capture_end(13, 1).unwrap_err();
    assert_eq!(
        err.to_string(),
        "stream 13 (slot 5) has no open capture window"
    );
}

#[test]
fn capture_end_without_an_open_window_is_bad_input() {
    let mut w = world();
    let err = w.capture_end(3, 5).unwrap_err();
    assert_eq!(
        err,
        Error::NoCapture {
            stream: 3.into(),
            slot: 3
        }
    );
    assert_eq!(
        err.to_string(),
        "stream 3 (slot 3) has no open capture window"
    );
    assert!(!w.has_graph(5));
}

#[test]
fn capture_begin_neither_needs_nor_initializes_a_slot() {
    let mut w = world();
    w.capture_begin(6).unwrap();
    assert!(w.streams().get(6).is_none());
    assert_eq!(w.capture_end(6, 1).unwrap(), CaptureResult::Ok);
}

#[test]
fn a_clean_window_makes_a_graph_whose_ok_replay_releases_every_recorded_range() {
    let mut w = world();
    w.capture_begin(0).unwrap();
    go(
        &mut w,
        "a",
        0,
        &[Binding::range(0, 1, 0, 4, Access::Write), reads(0, 2)],
        Outcome::Ok,
    );
    go(
        &mut w,
        "b",
        0,
        &[Binding::range(0, 1, 8, 12, Access::ReadWrite), writes(1, 3)],
        Outcome::Ok,
    );
    assert_eq!(w.capture_end(0, 5).unwrap(), CaptureResult::Ok);
    assert!(w.has_graph(5));
    for m in 1..=3 {
        w.host_write(&writes(if m == 3 { 1 } else { 0 }, m), FAIL)
            .unwrap();
    }
    assert_eq!(w.replay(5, Outcome::Ok).unwrap(), Verdict::Ran);
    assert_eq!(claims(&w, 1), [(4, 8, 1, None), (12, 16, 1, None)]);
    assert_eq!(claims(&w, 2), [(0, 16, 1, None)]);
    assert_eq!(claims(&w, 3), []);
}

#[test]
fn a_failed_replay_taints_the_recorded_ranges_at_the_root_with_kernel_graph_id() {
    let mut w = world();
    w.capture_begin(0).unwrap();
    go(
        &mut w,
        "a",
        0,
        &[Binding::range(0, 1, 0, 4, Access::Write)],
        Outcome::Ok,
    );
    w.capture_end(0, 7).unwrap();
    let v = w.replay(7, FAIL2).unwrap();
    assert!(matches!(v, Verdict::Failed(f) if f.get() == 1), "{v:?}");
    assert_eq!(claims(&w, 1), [(0, 4, 1, None)]);
    assert_eq!(
        *w.failures().next().unwrap().error,
        ErrorInfo::new("launch", "graph:7", "out of resources")
    );
}

#[test]
fn a_replay_takes_no_launch_number() {
    let mut w = world();
    w.capture_begin(0).unwrap();
    go(&mut w, "a", 0, &[writes(0, 1)], Outcome::Ok);
    w.capture_end(0, 7).unwrap();
    w.replay(7, Outcome::Ok).unwrap();
    w.replay(7, FAIL).unwrap();
    assert_eq!(w.stats().launches, 1);
}

#[test]
fn a_replay_of_an_unknown_graph_is_bad_input() {
    let mut w = world();
    let before = w.stats();
    let err = w.replay(7, Outcome::Ok).unwrap_err();
    assert_eq!(err, Error::UnknownGraph { graph: 7 });
    assert!(err.to_string().contains("graph 7"));
    assert_eq!(w.stats(), before);
}

#[test]
fn a_memory_freed_since_capture_is_unresolved_at_replay() {
    let mut w = world();
    w.capture_begin(0).unwrap();
    go(&mut w, "a", 0, &[writes(0, 1), writes(0, 2)], Outcome::Ok);
    w.capture_end(0, 7).unwrap();
    w.free(1).unwrap();
    w.replay(7, FAIL).unwrap();
    assert_eq!(w.stats().unresolved_bindings, 1);
    assert_eq!(claims(&w, 2), [(0, 16, 1, None)]);
}

/// A replay resolves each recorded (stream, memory, range) again (SPEC
/// Appendix A), so a freed memory that three recorded writes named counts
/// three times on every replay, whatever the graph merges its ranges into,
/// and still three times once its id lives again on another slot.
#[test]
fn each_recorded_binding_of_a_freed_memory_is_unresolved_at_every_replay() {
    let mut w = world();
    w.capture_begin(0).unwrap();
    let three = [
        Binding::range(0, 1, 0, 4, Access::Write),
        Binding::range(0, 1, 4, 8, Access::Write),
        // Stream 8 folds onto slot 0 of the default 8.
        Binding::range(8, 1, 2, 6, Access::Write),
    ];
    go(&mut w, "a", 0, &three, Outcome::Ok);
    w.capture_end(0, 7).unwrap();
    w.free(1).unwrap();
    w.replay(7, FAIL).unwrap();
    assert_eq!(w.stats().unresolved_bindings, 3);
    w.replay(7, Outcome::Ok).unwrap();
    assert_eq!(w.stats().unresolved_bindings, 6);
    w.alloc(1, 1, 16).unwrap();
    w.replay(7, FAIL).unwrap();
    assert_eq!(w.stats().unresolved_bindings, 9);
    assert_eq!(claims(&w, 1), []);
}

#[test]
fn a_reused_memory_id_is_hit_at_replay() {
    let mut w = world();
    w.capture_begin(0).unwrap();
    go(
        &mut w,
        "a",
        0,
        &[Binding::range(0, 1, 0, 8, Access::Write)],
        Outcome::Ok,
    );
    w.capture_end(0, 7).unwrap();
    w.free(1).unwrap();
    w.alloc(0, 1, 32).unwrap();
    w.replay(7, FAIL).unwrap();
    assert_eq!(claims(&w, 1), [(0, 8, 1, None)]);
}

/// A recorded write names its allocation's stream as the binding would: a
/// special stream's allocation, freed and made again on the same special
/// stream, is found by id at replay and hit, and one made again on a
/// regular stream instead is unresolved.
#[test]
fn a_reused_memory_id_of_a_special_stream_is_hit_at_replay_on_that_stream_only() {
    for (again, hit) in [(StreamRef::Special(0), true), (StreamRef::Id(0), false)] {
        let mut w = World::new(Config {
            num_special: 1,
            ..Config::default()
        })
        .unwrap();
        w.alloc(StreamRef::Special(0), 5, 16).unwrap();
        w.capture_begin(0).unwrap();
        let write = Binding::range(StreamRef::Special(0), 5, 0, 8, Access::Write);
        go(&mut w, "a", 0, &[write], Outcome::Ok);
        w.capture_end(0, 7).unwrap();
        w.free(5).unwrap();
        w.alloc(again, 5, 32).unwrap();
        w.replay(7, FAIL).unwrap();
        let (claimed, unresolved) = if hit {
            (vec![(0, 8, 1, None)], 0)
        } else {
            (vec![], 1)
        };
        assert_eq!(claims(&w, 5), claimed, "made again on {again:?}");
        assert_eq!(w.stats().unresolved_bindings, unresolved, "{again:?}");
    }
}

/// A replay takes a recorded write's row as it was recorded only while
/// that very allocation lives. One freed, whose place in the allocation
/// store another memory id's allocation takes (same slot index, newer
/// version), is resolved by id again: unresolved, and the newcomer is
/// neither tainted by a failed replay nor released by a good one.
#[test]
fn an_allocation_taking_a_freed_recorded_ones_place_is_not_hit_at_replay() {
    use slotmap::Key;
    let mut w = world();
    let old = w.alloc(0, 5, 16).unwrap();
    w.capture_begin(0).unwrap();
    go(&mut w, "a", 0, &[writes(0, 5), writes(0, 2)], Outcome::Ok);
    w.capture_end(0, 7).unwrap();
    w.free(5).unwrap();
    let new = w.alloc(0, 6, 16).unwrap();
    let index = |k: taintworld::AllocKey| k.data().as_ffi() & u64::from(u32::MAX);
    assert_eq!(index(new), index(old), "the newcomer took the freed place");
    assert_ne!(new, old);

    w.replay(7, FAIL).unwrap();
    assert_eq!(w.stats().unresolved_bindings, 1);
    assert_eq!(claims(&w, 6), []);
    assert_eq!(claims(&w, 2), [(0, 16, 1, None)]);

    go(&mut w, "b", 0, &[writes(0, 6)], FAIL2);
    assert_eq!(w.replay(7, Outcome::Ok).unwrap(), Verdict::Ran);
    assert_eq!(w.stats().unresolved_bindings, 2);
    assert_eq!(claims(&w, 6), [(0, 16, 2, None)]);
    assert_eq!(claims(&w, 2), []);
    w.check_invariants().unwrap();
}

#[test]
fn graph_destroy_forgets_a_graph_and_its_id_may_be_captured_again() {
    let mut w = world();
    w.capture_begin(0).unwrap();
    w.capture_end(0, 7).unwrap();
    w.graph_destroy(7).unwrap();
    assert!(!w.has_graph(7));
    assert_eq!(
        w.replay(7, Outcome::Ok).unwrap_err(),
        Error::UnknownGraph { graph: 7 }
    );
    assert_eq!(
        w.graph_destroy(7).unwrap_err(),
        Error::UnknownGraph { graph: 7 }
    );
    w.capture_begin(0).unwrap();
    assert_eq!(w.capture_end(0, 7).unwrap(), CaptureResult::Ok);
}

/// A doomed window makes no graph (SPEC §6), so the id its `capture_end`
/// named never becomes live: it cannot be replayed or destroyed, and a
/// later clean window may take it.
#[test]
fn a_doomed_windows_graph_id_is_never_live_and_a_later_window_may_take_it() {
    let mut w = world();
    w.capture_begin(0).unwrap();
    go(&mut w, "fill", 0, &[writes(0, 1)], FAIL);
    failed(w.capture_end(0, 2).unwrap());
    let unknown = Error::UnknownGraph { graph: 2 };
    assert_eq!(w.replay(2, Outcome::Ok).unwrap_err(), unknown);
    assert_eq!(w.graph_destroy(2).unwrap_err(), unknown);
    w.capture_begin(0).unwrap();
    go(&mut w, "fill", 0, &[writes(0, 2)], Outcome::Ok);
    assert_eq!(w.capture_end(0, 2).unwrap(), CaptureResult::Ok);
    assert!(w.has_graph(2));
    w.replay(2, FAIL).unwrap();
    assert_eq!(claims(&w, 2), [(0, 16, 2, None)]);
}

#[test]
fn a_dry_run_neither_records_into_nor_dooms_a_window() {
    let mut w = world();
    w.capture_begin(0).unwrap();
    go(&mut w, "a", 0, &[writes(0, 1)], Outcome::DryRun);
    assert_eq!(w.capture_end(0, 7).unwrap(), CaptureResult::Ok);
    w.replay(7, FAIL).unwrap();
    assert_eq!(claims(&w, 1), []);
}

#[test]
fn a_failed_launch_dooms_the_window_which_reports_it_with_an_empty_chain_and_makes_no_graph() {
    let mut w = world();
    w.capture_begin(0).unwrap();
    go(&mut w, "ok", 0, &[writes(0, 2)], Outcome::Ok);
    go(&mut w, "fill", 0, &[writes(0, 1)], FAIL);
    let report = failed(w.capture_end(0, 7).unwrap());
    let expected = TaintReport {
        failure: report.failure,
        error: ErrorInfo::new("compile", "fill", "bad PTX"),
        occurrences: 1,
        chain: vec![],
        truncated: false,
    };
    assert_eq!(report, expected);
    assert_eq!(report.failure.get(), 1);
    assert!(!w.has_graph(7));
}

#[test]
fn a_skip_dooms_the_window_which_reports_the_chain_from_the_skips_record() {
    let mut w = world();
    go(&mut w, "fill", 0, &[writes(0, 1)], FAIL);
    go(&mut w, "gelu", 0, &[reads(0, 1), writes(0, 2)], Outcome::Ok);
    w.capture_begin(1).unwrap();
    go(&mut w, "loss", 1, &[reads(0, 2), writes(1, 3)], Outcome::Ok);
    let report = failed(w.capture_end(1, 7).unwrap());
    let hops = [
        ChainHop {
            launch: 2,
            kernel: "loss".into(),
            needed: 2,
        },
        gelu_hop(),
    ];
    assert_eq!(
        (report.failure.get(), report.chain, report.truncated),
        (1, hops.to_vec(), false)
    );
}

#[test]
fn the_first_skip_or_failure_in_a_window_wins() {
    let mut w = world();
    w.capture_begin(0).unwrap();
    go(&mut w, "first", 0, &[writes(0, 1)], FAIL);
    go(&mut w, "second", 0, &[writes(0, 2)], FAIL2);
    let report = failed(w.capture_end(0, 7).unwrap());
    assert_eq!(
        (report.failure.get(), report.error.kernel.as_str()),
        (1, "first")
    );
}

/// SPEC §6: a skip and a failure doom a window alike, and whichever comes
/// first is the one its capture_end reports — the skip with its chain, the
/// failure with none.
#[test]
fn the_first_of_a_skip_and_a_failure_in_a_window_wins_either_way() {
    // A skip, then a failure.
    let mut w = doomed_by_gelus_skip();
    go(&mut w, "late", 0, &[writes(0, 2)], FAIL2);
    let report = failed(w.capture_end(0, 7).unwrap());
    assert_eq!(
        (report.failure.get(), report.error.kernel.as_str()),
        (1, "fill")
    );
    assert_eq!(report.chain, [gelu_hop()]);
    // A failure, then a skip.
    let mut w = world();
    go(&mut w, "fill", 0, &[writes(0, 1)], FAIL);
    w.capture_begin(0).unwrap();
    go(&mut w, "first", 0, &[writes(0, 2)], FAIL2);
    go(&mut w, "gelu", 0, &[reads(0, 1), writes(0, 2)], Outcome::Ok);
    let report = failed(w.capture_end(0, 7).unwrap());
    assert_eq!(
        (report.failure.get(), report.error.kernel.as_str()),
        (2, "first")
    );
    assert!(report.chain.is_empty(), "{:?}", report.chain);
}

#[test]
fn a_doomed_window_pins_its_failure_after_the_tainted_memory_is_freed() {
    let mut w = world();
    w.capture_begin(0).unwrap();
    go(&mut w, "fill", 0, &[writes(0, 1)], FAIL);
    w.free(1).unwrap();
    assert_eq!(w.stats().live_failures, 1);
    let f = w.failures().next().unwrap();
    assert_eq!((f.id.get(), f.carriers, f.pins), (1, 0, 1));
    let report = failed(w.capture_end(0, 7).unwrap());
    assert_eq!(report.failure.get(), 1);
    assert_eq!(w.stats().live_failures, 0);
    w.check_invariants().unwrap();
}

#[test]
fn a_window_doomed_by_a_skip_pins_its_record_until_it_ends() {
    let mut w = doomed_by_gelus_skip();
    w.free(1).unwrap();
    w.free(2).unwrap();
    assert_eq!((w.stats().live_failures, w.stats().live_records), (1, 1));
    let report = failed(w.capture_end(0, 7).unwrap());
    assert_eq!(report.chain, [gelu_hop()]);
    assert_eq!((w.stats().live_failures, w.stats().live_records), (0, 0));
}

#[test]
fn a_failed_launch_with_an_empty_write_set_still_dooms_and_pins() {
    let mut w = world();
    w.capture_begin(0).unwrap();
    go(&mut w, "fill", 0, &[], FAIL);
    assert_eq!(w.stats().live_failures, 1);
    assert_eq!(failed(w.capture_end(0, 7).unwrap()).failure.get(), 1);
    assert_eq!(w.stats().live_failures, 0);
}

#[test]
fn capture_failed_reports_occurrences_as_of_capture_end() {
    let mut w = world();
    w.capture_begin(0).unwrap();
    go(&mut w, "fill", 0, &[], FAIL);
    go(&mut w, "fill", 1, &[], FAIL);
    go(&mut w, "fill", 1, &[], FAIL);
    assert_eq!(failed(w.capture_end(0, 7).unwrap()).occurrences, 3);
}

#[test]
fn capture_end_naming_a_live_graph_is_bad_input_and_leaves_the_window_open() {
    let mut w = world();
    w.capture_begin(1).unwrap();
    w.capture_end(1, 5).unwrap();
    w.capture_begin(0).unwrap();
    go(&mut w, "fill", 0, &[writes(0, 1)], FAIL);
    w.free(1).unwrap();
    let err = w.capture_end(0, 5).unwrap_err();
    assert_eq!(err, Error::GraphLive { graph: 5 });
    assert!(err.to_string().contains("graph 5"));
    assert_eq!(w.stats().live_failures, 1); // still pinned
    assert_eq!(
        w.capture_begin(0).unwrap_err(),
        Error::CaptureOpen {
            stream: 0.into(),
            slot: 0
        }
    );
    assert_eq!(failed(w.capture_end(0, 6).unwrap()).failure.get(), 1);
    assert!(!w.has_graph(6));
}

#[test]
fn a_launch_on_another_slot_does_not_doom_the_window() {
    let mut w = world();
    w.capture_begin(0).unwrap();
    go(&mut w, "fill", 1, &[writes(0, 1)], FAIL);
    assert_eq!(w.capture_end(0, 7).unwrap(), CaptureResult::Ok);
}

#[test]
fn only_the_launchs_own_stream_decides_which_window_sees_it() {
    let mut w = world();
    w.capture_begin(8).unwrap(); // slot 0
    // On slot 0, writing memory made on stream 1: recorded.
    go(&mut w, "a", 16, &[writes(1, 3)], Outcome::Ok);
    assert_eq!(w.capture_end(0, 7).unwrap(), CaptureResult::Ok);
    w.replay(7, FAIL).unwrap();
    assert_eq!(claims(&w, 3), [(0, 16, 1, None)]);
}

#[test]
fn a_failed_host_write_or_replay_never_dooms_a_window() {
    let mut w = world();
    w.capture_begin(1).unwrap();
    go(&mut w, "a", 1, &[writes(1, 4)], Outcome::Ok);
    w.capture_end(1, 9).unwrap();
    w.capture_begin(0).unwrap();
    w.host_write(&writes(0, 1), FAIL).unwrap();
    w.replay(9, FAIL).unwrap();
    assert_eq!(w.capture_end(0, 7).unwrap(), CaptureResult::Ok);
}

// ---- profiles -----------------------------------------------------------

#[test]
fn a_profile_nothing_failed_in_is_valid() {
    let mut w = world();
    w.profile_begin(1).unwrap();
    go(&mut w, "a", 0, &[writes(0, 1)], Outcome::Ok);
    assert_eq!(w.profile_end(1).unwrap(), ProfileResult::Valid);
}

#[test]
fn a_profile_is_invalid_with_the_first_failure_while_open_even_if_pruned_since() {
    let mut w = world();
    w.profile_begin(1).unwrap();
    go(&mut w, "fill", 0, &[writes(0, 1)], FAIL);
    go(&mut w, "other", 1, &[writes(1, 3)], FAIL2);
    go(&mut w, "fix", 0, &[writes(0, 1)], Outcome::Ok);
    assert_eq!(w.failures().count(), 1); // failure 1 was pruned
    let r = w.profile_end(1).unwrap();
    let ProfileResult::Invalid { failure, error } = r else {
        panic!("{r:?}")
    };
    assert_eq!(
        (failure.get(), error),
        (1, ErrorInfo::new("compile", "fill", "bad PTX"))
    );
}

#[test]
fn a_skip_invalidates_a_profile() {
    let mut w = world();
    go(&mut w, "fill", 0, &[writes(0, 1)], FAIL);
    w.profile_begin(1).unwrap();
    go(&mut w, "gelu", 0, &[reads(0, 1)], Outcome::Ok);
    let r = w.profile_end(1).unwrap();
    assert!(
        matches!(r, ProfileResult::Invalid { failure, .. } if failure.get() == 1),
        "{r:?}"
    );
}

#[test]
fn a_failed_host_write_invalidates_a_profile() {
    let mut w = world();
    w.profile_begin(1).unwrap();
    w.host_write(&writes(0, 1), FAIL).unwrap();
    let r = w.profile_end(1).unwrap();
    let ProfileResult::Invalid { failure, error } = r else {
        panic!("{r:?}")
    };
    assert_eq!((failure.get(), error.kernel.as_str()), (1, "host_write"));
}

#[test]
fn a_failed_replay_invalidates_a_profile() {
    let mut w = world();
    w.capture_begin(0).unwrap();
    w.capture_end(0, 7).unwrap();
    w.profile_begin(1).unwrap();
    w.replay(7, FAIL).unwrap();
    let r = w.profile_end(1).unwrap();
    let ProfileResult::Invalid { failure, error } = r else {
        panic!("{r:?}")
    };
    assert_eq!((failure.get(), error.kernel.as_str()), (1, "graph:7"));
}

/// SPEC Appendix A: a failed host write whose write set is empty (its
/// binding names no live allocation) still mints its failure, and so
/// invalidates an open profile, as one that taints bytes does.
#[test]
fn a_failed_host_write_with_an_empty_write_set_invalidates_a_profile() {
    let mut w = world();
    w.profile_begin(1).unwrap();
    w.host_write(&writes(0, 9), FAIL).unwrap();
    assert_eq!(w.stats().unresolved_bindings, 1);
    let r = w.profile_end(1).unwrap();
    let ProfileResult::Invalid { failure, error } = r else {
        panic!("{r:?}")
    };
    assert_eq!((failure.get(), error.kernel.as_str()), (1, "host_write"));
}

#[test]
fn a_failed_alloc_or_a_device_fault_does_not_invalidate_a_profile() {
    let mut w = world();
    w.profile_begin(1).unwrap();
    w.alloc_failed(0, 9, 16, "oom", "out of memory").unwrap();
    w.device_fault("device", "illegal address");
    go(&mut w, "a", 0, &[writes(0, 1)], Outcome::DryRun);
    assert_eq!(w.profile_end(1).unwrap(), ProfileResult::Valid);
}

#[test]
fn a_failure_before_profile_begin_does_not_invalidate_it() {
    let mut w = world();
    go(&mut w, "fill", 0, &[writes(0, 1)], FAIL);
    w.profile_begin(1).unwrap();
    assert_eq!(w.profile_end(1).unwrap(), ProfileResult::Valid);
}

#[test]
fn each_open_profile_keeps_its_own_first_failure() {
    let mut w = world();
    w.profile_begin(1).unwrap();
    w.profile_begin(2).unwrap();
    go(&mut w, "a", 0, &[writes(0, 1)], FAIL);
    w.profile_begin(3).unwrap();
    go(&mut w, "b", 1, &[writes(1, 3)], FAIL2);
    let first = |r: ProfileResult| match r {
        ProfileResult::Invalid { failure, .. } => failure.get(),
        ProfileResult::Valid => 0,
    };
    let got = [1, 2, 3].map(|p| first(w.profile_end(p).unwrap()));
    assert_eq!(got, [1, 1, 2]);
}

#[test]
fn profile_begin_twice_and_profile_end_unopened_are_bad_input() {
    let mut w = world();
    w.profile_begin(4).unwrap();
    let twice = w.profile_begin(4).unwrap_err();
    assert_eq!(twice, Error::ProfileOpen { profile: 4 });
    assert!(twice.to_string().contains("profile 4"));
    let unopened = w.profile_end(5).unwrap_err();
    assert_eq!(unopened, Error::ProfileNotOpen { profile: 5 });
    assert!(unopened.to_string().contains("profile 5"));
    assert_eq!(w.profile_end(4).unwrap(), ProfileResult::Valid);
}

#[test]
fn a_profile_id_is_reusable_after_its_end_and_starts_valid() {
    let mut w = world();
    w.profile_begin(1).unwrap();
    go(&mut w, "fill", 0, &[writes(0, 1)], FAIL);
    assert!(matches!(
        w.profile_end(1).unwrap(),
        ProfileResult::Invalid { .. }
    ));
    w.profile_begin(1).unwrap();
    assert_eq!(w.profile_end(1).unwrap(), ProfileResult::Valid);
    w.profile_begin(1).unwrap();
    go(&mut w, "more", 0, &[writes(0, 2)], FAIL2);
    assert!(
        matches!(w.profile_end(1).unwrap(), ProfileResult::Invalid { failure, .. } if failure.get() == 2)
    );
}

// ---- device faults ------------------------------------------------------

#[test]
fn sync_is_ok_until_a_device_fault_and_then_reports_the_first_fault_with_kernel_device() {
    let mut w = world();
    assert_eq!(w.sync(), SyncResult::Ok);
    w.device_fault("device", "illegal address");
    w.device_fault("ecc", "uncorrectable");
    let fault = ErrorInfo::new("device", "device", "illegal address");
    assert_eq!(w.sync(), SyncResult::DeviceFault(fault.clone()));
    assert_eq!(w.sync(), SyncResult::DeviceFault(fault));
}

#[test]
fn a_read_of_a_resolved_binding_reports_the_device_fault_before_claims() {
    let mut w = world();
    go(&mut w, "fill", 0, &[writes(0, 1)], FAIL);
    w.device_fault("device", "illegal address");
    let fault = ReadResult::DeviceFault(ErrorInfo::new("device", "device", "illegal address"));
    assert_eq!(w.read(&reads(0, 1)).unwrap(), fault);
    assert_eq!(w.read(&reads(0, 2)).unwrap(), fault);
}

/// The fault answers every resolved read, an empty range too; a range past
/// the allocation's end is still bad input, checked before the fault.
#[test]
fn after_a_device_fault_an_empty_read_reports_it_and_a_read_past_the_end_is_bad_input() {
    let mut w = world();
    w.device_fault("device", "illegal address");
    let fault = ReadResult::DeviceFault(ErrorInfo::new("device", "device", "illegal address"));
    let empty = Binding::range(0, 1, 3, 3, Access::Read);
    assert_eq!(w.read(&empty).unwrap(), fault);
    let past = Binding::range(0, 1, 8, 17, Access::Read);
    assert_eq!(
        w.read(&past).unwrap_err(),
        Error::RangePastEnd {
            memory: 1,
            start: 8,
            end: 17,
            size: 16
        }
    );
}

#[test]
fn an_unresolved_read_is_still_unresolved_after_a_device_fault() {
    let mut w = world();
    w.device_fault("device", "illegal address");
    assert_eq!(w.read(&reads(0, 3)).unwrap(), ReadResult::Unresolved);
}

#[test]
fn a_device_fault_mints_no_failure_and_launches_are_still_processed() {
    let mut w = world();
    w.device_fault("device", "illegal address");
    assert_eq!(w.stats().failures_minted, 0);
    assert_eq!(
        go(&mut w, "fill", 0, &[writes(0, 1)], FAIL),
        ("failed", 1, 0)
    );
    let b = [reads(0, 1), writes(0, 2)];
    assert_eq!(go(&mut w, "gelu", 0, &b, Outcome::Ok), ("skipped", 1, 1));
    assert_eq!(claims(&w, 2), [(0, 16, 1, Some(1))]);
}

// ---- failed reservations (§6a) ------------------------------------------

#[test]
fn a_failed_reservation_claims_the_whole_allocation_with_kernel_alloc() {
    let mut w = world();
    w.alloc_failed(0, 9, 64, "oom", "out of memory").unwrap();
    assert_eq!(claims(&w, 9), [(0, 64, 1, None)]);
    let ReadResult::Tainted(r) = w.read(&Binding::range(0, 9, 8, 9, Access::Read)).unwrap() else {
        panic!("unbacked memory is tainted")
    };
    assert_eq!(
        (r.failure.get(), r.error),
        (1, ErrorInfo::new("oom", "alloc", "out of memory"))
    );
    assert_eq!(w.stats().tainted_bytes, 64);
}

#[test]
fn writes_do_not_release_a_failed_reservation() {
    let mut w = world();
    w.alloc_failed(0, 9, 64, "oom", "out of memory").unwrap();
    assert_eq!(
        go(&mut w, "fill", 0, &[writes(0, 9)], Outcome::Ok),
        ("ran", 0, 0)
    );
    w.host_write(&Binding::range(0, 9, 0, 32, Access::Write), Outcome::Ok)
        .unwrap();
    assert_eq!(claims(&w, 9), [(0, 64, 1, None)]);
}

#[test]
fn taints_do_not_replace_a_failed_reservation() {
    let mut w = world();
    w.alloc_failed(0, 9, 64, "oom", "out of memory").unwrap();
    assert_eq!(
        go(
            &mut w,
            "fill",
            0,
            &[Binding::range(0, 9, 0, 8, Access::Write)],
            FAIL
        ),
        ("failed", 2, 0)
    );
    w.host_write(&writes(0, 9), FAIL2).unwrap();
    assert_eq!(claims(&w, 9), [(0, 64, 1, None)]);
}

/// SPEC §6a with §6: a graph replay is a write like any other to a failed
/// reservation — a good one releases nothing of its claim and a failed one
/// does not replace it.
#[test]
fn graph_replays_neither_release_nor_replace_a_failed_reservation() {
    let mut w = world();
    w.alloc_failed(0, 9, 64, "oom", "out of memory").unwrap();
    w.capture_begin(0).unwrap();
    assert_eq!(
        go(&mut w, "fill", 0, &[writes(0, 9)], Outcome::Ok),
        ("ran", 0, 0)
    );
    assert_eq!(w.capture_end(0, 7).unwrap(), CaptureResult::Ok);
    w.replay(7, Outcome::Ok).unwrap();
    assert_eq!(claims(&w, 9), [(0, 64, 1, None)]);
    w.replay(7, FAIL2).unwrap();
    assert_eq!(claims(&w, 9), [(0, 64, 1, None)]);
    assert_eq!(w.stats().tainted_bytes, 64);
}

#[test]
fn a_launch_reading_a_failed_reservation_is_skipped() {
    let mut w = world();
    w.alloc_failed(0, 9, 64, "oom", "out of memory").unwrap();
    let b = [Binding::range(0, 9, 60, 64, Access::Read), writes(0, 1)];
    assert_eq!(go(&mut w, "gelu", 0, &b, Outcome::Ok), ("skipped", 1, 9));
    assert_eq!(claims(&w, 1), [(0, 16, 1, Some(0))]);
}

#[test]
fn freeing_a_failed_reservation_ends_its_failure() {
    let mut w = world();
    w.alloc_failed(0, 9, 64, "oom", "out of memory").unwrap();
    w.free(9).unwrap();
    assert_eq!((w.stats().live_failures, w.stats().failures_minted), (0, 1));
    w.alloc(0, 9, 64).unwrap();
    assert_eq!(claims(&w, 9), []);
}

#[test]
fn a_zero_size_failed_reservation_carries_nothing() {
    let mut w = world();
    w.alloc_failed(0, 9, 0, "oom", "out of memory").unwrap();
    assert_eq!(claims(&w, 9), []);
    let s = w.stats();
    assert_eq!(
        (s.live_failures, s.failures_minted, s.allocations),
        (0, 1, 5)
    );
    assert_eq!(w.read(&reads(0, 9)).unwrap(), ReadResult::Clean);
}

#[test]
fn failed_reservations_of_one_identity_share_one_failure() {
    let mut w = world();
    w.alloc_failed(0, 9, 64, "oom", "out of memory").unwrap();
    w.alloc_failed(1, 10, 8, "oom", "out of memory").unwrap();
    let f = w.failures().next().unwrap();
    assert_eq!((f.id.get(), f.occurrences, f.carriers), (1, 2, 2));
}

#[test]
fn a_skip_with_an_empty_write_set_dooms_the_window_and_its_record_reports_the_hop() {
    let mut w = world();
    go(&mut w, "fill", 0, &[writes(0, 1)], FAIL);
    w.capture_begin(0).unwrap();
    go(&mut w, "print", 0, &[reads(0, 1)], Outcome::Ok);
    assert_eq!(w.stats().live_records, 1); // pinned by the window
    let report = failed(w.capture_end(0, 7).unwrap());
    assert_eq!(
        report.chain,
        [ChainHop {
            launch: 1,
            kernel: "print".into(),
            needed: 1
        }]
    );
    assert_eq!(w.stats().live_records, 0);
}

#[test]
fn a_whole_binding_is_recorded_with_the_size_it_had_at_capture() {
    let mut w = world();
    w.capture_begin(0).unwrap();
    go(&mut w, "a", 0, &[writes(0, 1)], Outcome::Ok);
    w.capture_end(0, 7).unwrap();
    w.free(1).unwrap();
    w.alloc(0, 1, 64).unwrap();
    w.replay(7, FAIL).unwrap();
    assert_eq!(claims(&w, 1), [(0, 16, 1, None)]);
}

#[test]
fn a_failed_launch_with_an_empty_write_set_invalidates_a_profile() {
    let mut w = world();
    w.profile_begin(1).unwrap();
    go(&mut w, "fill", 0, &[], FAIL);
    assert_eq!(w.stats().live_failures, 0);
    let r = w.profile_end(1).unwrap();
    assert!(
        matches!(r, ProfileResult::Invalid { failure, .. } if failure.get() == 1),
        "{r:?}"
    );
}

#[test]
fn a_replay_of_a_memory_id_reused_on_another_slot_is_unresolved() {
    let mut w = world();
    w.capture_begin(0).unwrap();
    go(&mut w, "a", 0, &[writes(0, 1)], Outcome::Ok);
    w.capture_end(0, 7).unwrap();
    w.free(1).unwrap();
    w.alloc(1, 1, 16).unwrap();
    w.replay(7, FAIL).unwrap();
    assert_eq!(claims(&w, 1), []);
    assert_eq!(w.stats().unresolved_bindings, 1);
}

// ---- what a window records, and its report ------------------------------

/// SPEC §6 and Appendix A "Captures": a window records the *resolved*
/// write-visible bindings of the launches that ran — not an unresolved one
/// (which a replay would otherwise resolve again, by memory id, onto a
/// later allocation), not a dead one, not a read.
#[test]
fn a_window_records_only_resolved_write_visible_bindings() {
    let mut w = world();
    w.capture_begin(0).unwrap();
    let b = [
        writes(0, 9), // memory 9 is not live: unresolved
        Binding::whole(0, 1, Access::Dead),
        reads(1, 3),
        writes(0, 2),
    ];
    assert_eq!(go(&mut w, "a", 0, &b, Outcome::Ok), ("ran", 0, 0));
    assert_eq!(w.capture_end(0, 7).unwrap(), CaptureResult::Ok);
    assert_eq!(w.stats().unresolved_bindings, 1);
    w.alloc(0, 9, 16).unwrap();
    w.replay(7, FAIL).unwrap();
    assert_eq!(claims(&w, 9), []);
    assert_eq!(claims(&w, 1), []);
    assert_eq!(claims(&w, 3), []);
    assert_eq!(claims(&w, 2), [(0, 16, 1, None)]);
    assert_eq!(w.stats().unresolved_bindings, 1);
}

/// SPEC §6: only launches on the window's slot are recorded; one on
/// another slot that writes memory made on the window's slot is not.
#[test]
fn a_launch_that_runs_on_another_slot_is_not_recorded_into_the_window() {
    let mut w = world();
    w.capture_begin(0).unwrap();
    assert_eq!(
        go(&mut w, "a", 1, &[writes(0, 1)], Outcome::Ok),
        ("ran", 0, 0)
    );
    assert_eq!(w.capture_end(0, 7).unwrap(), CaptureResult::Ok);
    w.replay(7, FAIL).unwrap();
    assert_eq!(claims(&w, 1), []);
}

/// Appendix A "Captures" and §4: the `capture_failed` chain walks from the
/// pinned record, and says `truncated` when that record was cut.
#[test]
fn a_capture_failed_report_is_truncated_when_the_pinned_record_was_cut() {
    let mut w = World::new(Config {
        chain_limit: 1,
        ..Config::default()
    })
    .unwrap();
    for m in 1..=3 {
        w.alloc(0, m, 16).unwrap();
    }
    go(&mut w, "fill", 0, &[writes(0, 1)], FAIL);
    let b = [reads(0, 1), writes(0, 2)];
    assert_eq!(go(&mut w, "k1", 0, &b, Outcome::Ok), ("skipped", 1, 1));
    w.capture_begin(0).unwrap();
    // Depth 2 would pass chain_limit 1: k2's record is cut.
    let b = [reads(0, 2), writes(0, 3)];
    assert_eq!(go(&mut w, "k2", 0, &b, Outcome::Ok), ("skipped", 1, 2));
    let report = failed(w.capture_end(0, 7).unwrap());
    let hop = ChainHop {
        launch: 2,
        kernel: "k2".into(),
        needed: 2,
    };
    assert_eq!(
        (report.failure.get(), report.chain, report.truncated),
        (1, vec![hop], true)
    );
}
