//! SPEC.md §6b: the write scope an embedding scheduler wraps each launch in
//! (`World::scope`).

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};

use taintworld::{
    Access, Binding, CaptureResult, Error, ErrorInfo, Launch, Outcome, ProfileResult, ReadResult,
    ScopeOutcome, World,
};

/// A world with memory 1 (input) and 2 (output), 16 bytes each on stream 0.
fn world() -> World {
    let mut w = World::default();
    w.alloc(0, 1, 16).unwrap();
    w.alloc(0, 2, 16).unwrap();
    w
}

/// What a host read of memory `m` finds, as `(kind, kernel)` of its failure,
/// or `("clean", "")`.
fn read(w: &mut World, m: u64) -> (String, String) {
    match w.read(&Binding::whole(0, m, Access::Read)).unwrap() {
        ReadResult::Tainted(r) => (r.error.kind, r.error.kernel),
        ReadResult::Clean => ("clean".into(), String::new()),
        other => panic!("{other:?}"),
    }
}

const IO: [Binding; 2] = [
    Binding {
        stream: taintworld::StreamRef::Id(0),
        memory: taintworld::MemoryRef::Id(1),
        range: None,
        access: Access::Read,
    },
    Binding {
        stream: taintworld::StreamRef::Id(0),
        memory: taintworld::MemoryRef::Id(2),
        range: None,
        access: Access::Write,
    },
];

#[test]
fn a_scope_whose_body_returns_ok_releases_its_write_set() {
    let mut w = world();
    w.host_write(
        &Binding::whole(0, 2, Access::Write),
        Outcome::Failed {
            kind: "copy",
            message: "m",
        },
    )
    .unwrap();
    let out = w.scope("gelu", 0, &IO, || Ok::<_, ErrorInfo>(42)).unwrap();
    assert_eq!(out, ScopeOutcome::Ran(42));
    assert_eq!(read(&mut w, 2), ("clean".into(), String::new()));
    assert_eq!(w.stats().live_failures, 0);
}

#[test]
fn a_scope_whose_body_returns_err_taints_its_write_set_with_the_bodys_error() {
    let mut w = world();
    let error = ErrorInfo::new("launch", "ignored", "too many blocks");
    let out = w
        .scope("gelu", 0, &IO, || Err::<(), _>(error.clone()))
        .unwrap();
    let ScopeOutcome::Failed {
        failure,
        error: returned,
    } = out
    else {
        panic!("{out:?}")
    };
    assert_eq!((failure.get(), returned), (1, error));
    assert_eq!(read(&mut w, 2), ("launch".into(), "gelu".into()));
    let claims: Vec<_> = w
        .claims(2)
        .unwrap()
        .map(|c| (c.start, c.end, c.failure.get(), c.origin))
        .collect();
    assert_eq!(claims, [(0, 16, 1, None)]);
    assert_eq!(w.failure(failure).unwrap().error.message, "too many blocks");
}

#[test]
fn a_scope_whose_read_set_is_tainted_skips_without_running_the_body() {
    let mut w = world();
    w.host_write(
        &Binding::whole(0, 1, Access::Write),
        Outcome::Failed {
            kind: "copy",
            message: "m",
        },
    )
    .unwrap();
    let ran = Cell::new(false);
    let out = w
        .scope("gelu", 0, &IO, || {
            ran.set(true);
            Ok::<_, ErrorInfo>(())
        })
        .unwrap();
    assert!(!ran.get());
    assert!(
        matches!(out, ScopeOutcome::Skipped { failure, needed: 1 } if failure.get() == 1),
        "{out:?}"
    );
    let claims: Vec<_> = w
        .claims(2)
        .unwrap()
        .map(|c| (c.start, c.end, c.failure.get(), c.origin))
        .collect();
    assert_eq!(claims, [(0, 16, 1, Some(0))]);
}

#[test]
fn a_scope_whose_body_panics_leaves_its_write_set_reading_as_torn_down() {
    let mut w = world();
    let result = catch_unwind(AssertUnwindSafe(|| {
        w.scope("gelu", 0, &IO, || -> Result<(), ErrorInfo> {
            panic!("kernel launch wrapper panicked")
        })
    }));
    assert!(result.is_err());
    assert_eq!(read(&mut w, 2), ("torn_down".into(), "gelu".into()));
    assert_eq!(read(&mut w, 1), ("clean".into(), String::new()));
    w.check_invariants().unwrap();
}

#[test]
fn a_torn_down_buffer_is_released_by_an_ok_host_write() {
    let mut w = world();
    let _ = catch_unwind(AssertUnwindSafe(|| {
        w.scope("gelu", 0, &IO, || -> Result<(), ErrorInfo> {
            panic!("boom")
        })
    }));
    assert_eq!(read(&mut w, 2), ("torn_down".into(), "gelu".into()));
    w.host_write(&Binding::whole(0, 2, Access::Write), Outcome::Ok)
        .unwrap();
    assert_eq!(read(&mut w, 2), ("clean".into(), String::new()));
    assert_eq!(w.stats().live_failures, 0);
}

#[test]
fn a_torn_down_buffer_is_released_by_another_scope() {
    let mut w = world();
    let _ = catch_unwind(AssertUnwindSafe(|| {
        w.scope("gelu", 0, &IO, || -> Result<(), ErrorInfo> {
            panic!("boom")
        })
    }));
    assert_eq!(read(&mut w, 2), ("torn_down".into(), "gelu".into()));
    assert_eq!(
        w.scope("gelu", 0, &IO, || Ok::<_, ErrorInfo>(())).unwrap(),
        ScopeOutcome::Ran(())
    );
    assert_eq!(read(&mut w, 2), ("clean".into(), String::new()));
}

#[test]
fn a_scope_takes_a_launch_number_and_a_successful_one_mints_no_failure() {
    let mut w = world();
    w.scope("a", 0, &IO, || Ok::<_, ErrorInfo>(())).unwrap();
    let b = [Binding::whole(0, 2, Access::Write)];
    let r = w
        .launch(&Launch {
            kernel: "b",
            stream: 0.into(),
            bindings: &b,
            outcome: Outcome::Ok,
        })
        .unwrap();
    assert_eq!(r.launch, 1);
    assert_eq!(w.stats().failures_minted, 0);
}

#[test]
fn a_scope_with_bad_input_does_not_run_its_body_and_changes_nothing() {
    let mut w = world();
    let before = w.stats();
    let ran = Cell::new(false);
    let bad = [Binding::range(0, 2, 0, 17, Access::Write)];
    let err = w
        .scope("gelu", 0, &bad, || {
            ran.set(true);
            Ok::<_, ErrorInfo>(())
        })
        .unwrap_err();
    assert_eq!(
        err,
        Error::RangePastEnd {
            memory: 2,
            start: 0,
            end: 17,
            size: 16
        }
    );
    assert!(!ran.get());
    assert_eq!(w.stats(), before);
}

#[test]
fn a_scope_that_fails_on_a_captured_slot_dooms_the_window() {
    let mut w = world();
    w.capture_begin(0).unwrap();
    let error = ErrorInfo::new("launch", "", "bad grid");
    w.scope("gelu", 0, &IO, || Err::<(), _>(error)).unwrap();
    let CaptureResult::Failed(report) = w.capture_end(0, 1).unwrap() else {
        panic!("doomed")
    };
    assert_eq!(report.error, ErrorInfo::new("launch", "gelu", "bad grid"));
}

#[test]
fn a_failed_scope_finds_the_live_failure_of_its_identity_instead_of_minting_one() {
    let mut w = world();
    w.alloc(0, 3, 16).unwrap();
    // Failure 1, kernel `gelu`, carried by memory 3.
    w.launch(&Launch {
        kernel: "gelu",
        stream: 0.into(),
        bindings: &[Binding::whole(0, 3, Access::Write)],
        outcome: Outcome::Failed {
            kind: "launch",
            message: "too many blocks",
        },
    })
    .unwrap();
    // A successful scope uses up no id on the way.
    w.scope("gelu", 0, &IO, || Ok::<_, ErrorInfo>(())).unwrap();
    let error = ErrorInfo::new("launch", "ignored", "too many blocks");
    let out = w.scope("gelu", 0, &IO, || Err::<(), _>(error)).unwrap();
    let ScopeOutcome::Failed { failure, .. } = out else {
        panic!("{out:?}")
    };
    assert_eq!(failure.get(), 1, "the same identity is the same failure");
    assert_eq!(w.failure(failure).unwrap().occurrences, 2);
    assert_eq!(w.stats().failures_minted, 1);
    // A different message is another failure, and it takes the next id.
    let other = ErrorInfo::new("launch", "ignored", "out of registers");
    let out = w.scope("gelu", 0, &IO, || Err::<(), _>(other)).unwrap();
    let ScopeOutcome::Failed { failure, .. } = out else {
        panic!("{out:?}")
    };
    assert_eq!(failure.get(), 2);
}

#[test]
fn a_scope_over_pre_resolved_rows_does_what_it_does_over_their_bindings() {
    let (mut by_binding, mut by_row) = (world(), world());
    let rows = IO.map(|b| {
        by_row
            .resolve_binding(&b)
            .expect("good input")
            .expect("resolves")
    });
    let input = [Binding::whole(0, 1, Access::Write)];
    let failed = Outcome::Failed {
        kind: "copy",
        message: "m",
    };
    let error = ErrorInfo::new("launch", "gelu", "out of registers");
    for w in [&mut by_binding, &mut by_row] {
        w.host_write(&input[0], failed).unwrap();
    }
    // The input is tainted: both skip, and the output carries the failure.
    let skipped = by_binding
        .scope("gelu", 0, &IO, || Ok::<_, ErrorInfo>(()))
        .unwrap();
    assert!(matches!(skipped, ScopeOutcome::Skipped { .. }));
    assert_eq!(
        by_row
            .scope("gelu", 0, &rows, || Ok::<_, ErrorInfo>(()))
            .unwrap(),
        skipped
    );
    for w in [&mut by_binding, &mut by_row] {
        w.host_write(&input[0], Outcome::Ok).unwrap();
    }
    // Clean input: the body's error taints the output, then `Ok` releases.
    let err = by_binding
        .scope("gelu", 0, &IO, || Err::<(), _>(error.clone()))
        .unwrap();
    assert_eq!(
        by_row
            .scope("gelu", 0, &rows, || Err::<(), _>(error.clone()))
            .unwrap(),
        err
    );
    assert_eq!(read(&mut by_row, 2), read(&mut by_binding, 2));
    assert_eq!(read(&mut by_row, 2).1, "gelu");
    let ran = by_binding
        .scope("gelu", 0, &IO, || Ok::<_, ErrorInfo>(7))
        .unwrap();
    assert_eq!(ran, ScopeOutcome::Ran(7));
    let ran = by_row
        .scope("gelu", 0, &rows, || Ok::<_, ErrorInfo>(7))
        .unwrap();
    assert_eq!(ran, ScopeOutcome::Ran(7));
    assert_eq!(read(&mut by_row, 2), ("clean".into(), String::new()));
    assert_eq!(by_row.stats(), by_binding.stats());
    by_row.check_invariants().unwrap();
}

#[test]
fn a_scope_over_a_stale_row_counts_it_or_in_strict_mode_rejects_it_running_nothing() {
    for strict in [false, true] {
        let mut w = World::new(taintworld::Config {
            strict,
            ..taintworld::Config::default()
        })
        .unwrap();
        w.alloc(0, 1, 16).unwrap();
        let stale = w
            .resolve_binding(&Binding::whole(0, 1, Access::Write))
            .unwrap()
            .expect("live");
        w.free(1).unwrap();
        let ran = Cell::new(false);
        let out = w.scope("gelu", 0, &[stale], || {
            ran.set(true);
            Ok::<_, ErrorInfo>(())
        });
        if strict {
            assert_eq!(out, Err(Error::UnknownKey { key: stale.alloc() }));
            assert!(!ran.get(), "a rejected scope runs no body");
            assert_eq!(w.stats().unresolved_bindings, 0);
        } else {
            assert_eq!(out, Ok(ScopeOutcome::Ran(())));
            assert_eq!(w.stats().unresolved_bindings, 1);
        }
    }
}

/// SPEC §6 profiles with §6b: a scope that runs is a launch that ran, so an
/// open profile stays valid (no provisional failure reaches it).
#[test]
fn a_scope_whose_body_returns_ok_leaves_an_open_profile_valid() {
    let mut w = world();
    w.profile_begin(1).unwrap();
    let out = w.scope("gelu", 0, &IO, || Ok::<_, ErrorInfo>(())).unwrap();
    assert_eq!(out, ScopeOutcome::Ran(()));
    assert_eq!(w.profile_end(1).unwrap(), ProfileResult::Valid);
}

/// SPEC §6 profiles with §6b and Appendix A ("id and error as at that
/// moment"): a failed scope invalidates an open profile with the body's
/// error, not the provisional `torn_down` one.
#[test]
fn a_scope_whose_body_fails_invalidates_an_open_profile_with_the_bodys_error() {
    let mut w = world();
    w.profile_begin(1).unwrap();
    let error = ErrorInfo::new("launch", "ignored", "too many blocks");
    w.scope("gelu", 0, &IO, || Err::<(), _>(error)).unwrap();
    let r = w.profile_end(1).unwrap();
    let ProfileResult::Invalid { failure, error } = r else {
        panic!("{r:?}")
    };
    assert_eq!(
        (failure.get(), error),
        (1, ErrorInfo::new("launch", "gelu", "too many blocks"))
    );
}

/// Where SPEC §6b is silent (it names only the kind of the failure a
/// panicking body leaves), the crate settles the scope as the failed launch
/// it is: its launch counted, the scope's kernel and a fixed message, a
/// capture window on its stream doomed and an open profile invalid.
#[test]
fn a_scope_whose_body_panics_is_a_failed_launch_that_dooms_its_window_and_invalidates_profiles() {
    let mut w = world();
    w.capture_begin(0).unwrap();
    w.profile_begin(1).unwrap();
    let torn_down = ErrorInfo::new("torn_down", "gelu", "the write scope's body did not finish");
    let result = catch_unwind(AssertUnwindSafe(|| {
        w.scope("gelu", 0, &IO, || -> Result<(), ErrorInfo> {
            panic!("kernel launch wrapper panicked")
        })
    }));
    assert!(result.is_err());
    assert_eq!(w.launches(), 1);
    let r = w.profile_end(1).unwrap();
    let ProfileResult::Invalid { failure, error } = r else {
        panic!("{r:?}")
    };
    assert_eq!((failure.get(), &error), (1, &torn_down));
    let CaptureResult::Failed(report) = w.capture_end(0, 1).unwrap() else {
        panic!("doomed")
    };
    assert_eq!(report.error, torn_down);
    w.check_invariants().unwrap();
}
