//! SPEC.md §3: a launch step by step — check_reads, skip, fail, release,
//! apply_taint's set-and-fuse, release_written, dry runs, numbering and
//! batches.

mod common;

use common::{FAIL, claims, go, reads, writes};

use taintworld::{
    Access, Binding, Error, Launch, LaunchResult, Outcome, ReadResult, Verdict, World,
};

const FAIL2: Outcome<'static> = Outcome::Failed {
    kind: "launch",
    message: "too many resources",
};

fn w(ids: &[u64], size: u64) -> World {
    let mut w = World::default();
    for &m in ids {
        w.alloc(0, m, size).unwrap();
    }
    w
}

#[test]
fn launches_are_numbered_from_zero_in_the_order_they_are_processed() {
    let mut w = w(&[1], 16);
    let b = [writes(0, 1)];
    let numbers: Vec<u64> = [Outcome::Ok, FAIL, Outcome::DryRun]
        .into_iter()
        .map(|outcome| {
            w.launch(&Launch {
                kernel: "k",
                stream: 0.into(),
                bindings: &b,
                outcome,
            })
            .unwrap()
            .launch
        })
        .collect();
    assert_eq!(numbers, [0, 1, 2]);
    assert_eq!(w.stats().launches, 3);
}

#[test]
fn a_dry_run_changes_nothing_but_takes_a_launch_number() {
    let mut w = w(&[1, 2], 16);
    go(&mut w, "fill", &[writes(0, 1)], FAIL);
    let before = w.stats();
    let b = [reads(0, 1), writes(0, 2)];
    let r = w
        .launch(&Launch {
            kernel: "gelu",
            stream: 0.into(),
            bindings: &b,
            outcome: Outcome::DryRun,
        })
        .unwrap();
    assert_eq!(
        r,
        LaunchResult {
            launch: 1,
            verdict: Verdict::DryRun
        }
    );
    let mut expected = before;
    expected.launches = 2;
    assert_eq!(w.stats(), expected);
    assert_eq!(claims(&w, 2), []);
    assert_eq!(w.failures().next().unwrap().skipped, 0);
    assert_eq!(go(&mut w, "gelu", &b, Outcome::Ok), ("skipped", 1, 1));
    assert_eq!(w.skip_records().next().unwrap().launch, 2);
}

/// SPEC §3: a dry run is only checked — a write it binds releases nothing,
/// even over bytes a failure claims, and a read of them skips nothing.
#[test]
fn a_dry_run_that_writes_tainted_bytes_releases_nothing() {
    let mut w = w(&[1, 2], 16);
    go(&mut w, "fill", &[writes(0, 1)], FAIL);
    let tainted = claims(&w, 1);
    assert_eq!(tainted.len(), 1, "memory 1 carries the failure");
    let before = w.stats();
    for b in [[writes(0, 1), writes(0, 2)], [reads(0, 1), writes(0, 1)]] {
        let r = w
            .launch(&Launch {
                kernel: "overwrite",
                stream: 0.into(),
                bindings: &b,
                outcome: Outcome::DryRun,
            })
            .unwrap();
        assert_eq!(r.verdict, Verdict::DryRun);
    }
    assert_eq!(claims(&w, 1), tainted);
    let mut expected = before;
    expected.launches = before.launches + 2;
    assert_eq!(w.stats(), expected);
    // The same write run for real releases the bytes.
    assert_eq!(
        go(&mut w, "overwrite", &[writes(0, 1)], Outcome::Ok).0,
        "ran"
    );
    assert_eq!(claims(&w, 1), []);
}

#[test]
fn the_first_read_visible_binding_in_listed_order_that_a_claim_overlaps_decides() {
    let mut w = w(&[1, 2, 3, 4], 16);
    go(&mut w, "a", &[writes(0, 1)], FAIL);
    go(&mut w, "b", &[writes(0, 2)], FAIL);
    let b = [reads(0, 3), reads(0, 2), reads(0, 1), writes(0, 4)];
    assert_eq!(go(&mut w, "k", &b, Outcome::Ok), ("skipped", 2, 2));
    assert_eq!(claims(&w, 4), [(0, 16, 2, Some(2))]);
}

#[test]
fn a_write_only_binding_is_never_checked() {
    let mut w = w(&[1, 2], 16);
    go(&mut w, "fill", &[writes(0, 1)], FAIL);
    let b = [writes(0, 1), reads(0, 2)];
    assert_eq!(go(&mut w, "k", &b, Outcome::Ok), ("ran", 0, 0));
    assert_eq!(claims(&w, 1), []);
}

#[test]
fn among_claims_overlapping_the_deciding_binding_the_lowest_start_names_the_failure() {
    let mut w = w(&[1, 2], 32);
    go(
        &mut w,
        "late",
        &[Binding::range(0, 1, 16, 32, Access::Write)],
        FAIL,
    );
    go(
        &mut w,
        "early",
        &[Binding::range(0, 1, 0, 8, Access::Write)],
        FAIL2,
    );
    let whole = [reads(0, 1), writes(0, 2)];
    assert_eq!(go(&mut w, "k", &whole, Outcome::DryRun), ("dry_run", 0, 0));
    assert_eq!(go(&mut w, "k", &whole, Outcome::Ok), ("skipped", 2, 1));
    let tail = [Binding::range(0, 1, 8, 32, Access::Read), writes(0, 2)];
    assert_eq!(go(&mut w, "k", &tail, Outcome::Ok), ("skipped", 1, 1));
}

#[test]
fn a_skip_taints_the_write_set_with_the_same_failure_through_its_record() {
    let mut w = w(&[1, 2, 3], 16);
    go(&mut w, "fill", &[writes(0, 1)], FAIL);
    let b = [
        reads(0, 1),
        Binding::range(0, 2, 0, 8, Access::Write),
        Binding::range(0, 3, 8, 16, Access::Write),
    ];
    assert_eq!(go(&mut w, "gelu", &b, Outcome::Ok), ("skipped", 1, 1));
    assert_eq!(claims(&w, 2), [(0, 8, 1, Some(1))]);
    assert_eq!(claims(&w, 3), [(8, 16, 1, Some(1))]);
}

#[test]
fn a_skip_takes_precedence_over_a_failed_outcome() {
    let mut w = w(&[1, 2], 16);
    go(&mut w, "fill", &[writes(0, 1)], FAIL);
    let b = [reads(0, 1), writes(0, 2)];
    assert_eq!(go(&mut w, "gelu", &b, FAIL2), ("skipped", 1, 1));
    assert_eq!(w.stats().failures_minted, 1);
}

#[test]
fn a_failed_launch_taints_its_whole_write_set_at_the_root() {
    let mut w = w(&[1, 2, 3], 16);
    let b = [
        Binding::range(0, 1, 0, 4, Access::Write),
        Binding::whole(0, 2, Access::ReadWrite),
        reads(0, 3),
    ];
    assert_eq!(go(&mut w, "fill", &b, FAIL), ("failed", 1, 0));
    assert_eq!(claims(&w, 1), [(0, 4, 1, None)]);
    assert_eq!(claims(&w, 2), [(0, 16, 1, None)]);
    assert_eq!(claims(&w, 3), []);
    assert_eq!(
        w.failure(w.claims(1).unwrap().next().unwrap().failure)
            .unwrap()
            .carriers,
        2
    );
}

#[test]
fn an_ok_launch_releases_its_write_set() {
    let mut w = w(&[1, 2], 16);
    go(&mut w, "fill", &[writes(0, 1), writes(0, 2)], FAIL);
    let b = [writes(0, 1), Binding::whole(0, 2, Access::ReadWrite)];
    assert_eq!(go(&mut w, "k", &b[..1], Outcome::Ok), ("ran", 0, 0));
    assert_eq!(claims(&w, 1), []);
    assert_eq!(claims(&w, 2), [(0, 16, 1, None)]);
}

#[test]
fn a_read_write_binding_is_checked_before_it_is_released() {
    let mut w = w(&[1], 16);
    go(&mut w, "fill", &[writes(0, 1)], FAIL);
    assert_eq!(
        go(
            &mut w,
            "axpy",
            &[Binding::whole(0, 1, Access::ReadWrite)],
            Outcome::Ok
        ),
        ("skipped", 1, 1)
    );
    // Not released: re-tainted through the skip's record.
    assert_eq!(claims(&w, 1), [(0, 16, 1, Some(1))]);
}

#[test]
fn a_skipped_read_write_binding_is_retainted_over_its_own_range_only() {
    let mut w = w(&[1], 16);
    go(
        &mut w,
        "fill",
        &[Binding::range(0, 1, 8, 16, Access::Write)],
        FAIL,
    );
    assert_eq!(
        go(
            &mut w,
            "axpy",
            &[Binding::range(0, 1, 0, 12, Access::ReadWrite)],
            Outcome::Ok
        ),
        ("skipped", 1, 1)
    );
    assert_eq!(claims(&w, 1), [(0, 12, 1, Some(1)), (12, 16, 1, None)]);
}

#[test]
fn apply_taint_replaces_another_failures_bytes_and_splits_its_claim() {
    let mut w = w(&[1], 32);
    go(&mut w, "a", &[writes(0, 1)], FAIL);
    go(
        &mut w,
        "b",
        &[Binding::range(0, 1, 8, 16, Access::Write)],
        FAIL2,
    );
    assert_eq!(
        claims(&w, 1),
        [(0, 8, 1, None), (8, 16, 2, None), (16, 32, 1, None)]
    );
    let s = w.stats();
    assert_eq!((s.claims, s.tainted_bytes, s.live_failures), (3, 32, 2));
}

#[test]
fn a_failure_whose_last_bytes_are_replaced_is_pruned() {
    let mut w = w(&[1], 16);
    go(
        &mut w,
        "a",
        &[Binding::range(0, 1, 4, 8, Access::Write)],
        FAIL,
    );
    go(&mut w, "b", &[writes(0, 1)], FAIL2);
    assert_eq!(claims(&w, 1), [(0, 16, 2, None)]);
    assert_eq!(w.stats().live_failures, 1);
    assert!(w.failures().all(|f| f.id.get() == 2));
}

#[test]
fn touching_taints_of_one_failure_and_origin_fuse_into_one_claim() {
    // Whichever of the two comes first.
    for [first, second] in [[(0, 10), (10, 20)], [(10, 20), (0, 10)]] {
        let mut w = w(&[1], 32);
        for (start, end) in [first, second] {
            let taint = [Binding::range(0, 1, start, end, Access::Write)];
            go(&mut w, "a", &taint, FAIL);
        }
        assert_eq!(
            claims(&w, 1),
            [(0, 20, 1, None)],
            "{first:?} then {second:?}"
        );
        assert_eq!(w.stats().claims, 1);
    }
}

#[test]
fn a_read_that_ends_where_a_claim_starts_or_starts_where_it_ends_is_clean() {
    let mut w = w(&[1], 32);
    go(
        &mut w,
        "a",
        &[Binding::range(0, 1, 10, 20, Access::Write)],
        FAIL,
    );
    let read = |w: &mut World, start, end| w.read(&Binding::range(0, 1, start, end, Access::Read));
    assert!(matches!(read(&mut w, 0, 10), Ok(ReadResult::Clean)));
    assert!(matches!(read(&mut w, 20, 32), Ok(ReadResult::Clean)));
    assert!(matches!(read(&mut w, 0, 11), Ok(ReadResult::Tainted(_))));
    assert!(matches!(read(&mut w, 19, 32), Ok(ReadResult::Tainted(_))));
}

#[test]
fn overlapping_taints_of_one_failure_and_origin_fuse_into_one_claim() {
    let mut w = w(&[1], 32);
    go(
        &mut w,
        "a",
        &[Binding::range(0, 1, 0, 10, Access::Write)],
        FAIL,
    );
    go(
        &mut w,
        "a",
        &[Binding::range(0, 1, 20, 30, Access::Write)],
        FAIL,
    );
    go(
        &mut w,
        "a",
        &[Binding::range(0, 1, 5, 25, Access::Write)],
        FAIL,
    );
    assert_eq!(claims(&w, 1), [(0, 30, 1, None)]);
}

#[test]
fn touching_claims_of_one_failure_through_different_origins_stay_apart() {
    let mut w = w(&[1, 2], 32);
    go(
        &mut w,
        "fill",
        &[Binding::range(0, 1, 0, 10, Access::Write), writes(0, 2)],
        FAIL,
    );
    let b = [reads(0, 2), Binding::range(0, 1, 10, 20, Access::Write)];
    assert_eq!(go(&mut w, "copy", &b, Outcome::Ok), ("skipped", 1, 2));
    assert_eq!(claims(&w, 1), [(0, 10, 1, None), (10, 20, 1, Some(1))]);
}

#[test]
fn tainting_bytes_already_claimed_the_same_way_changes_nothing_but_occurrences() {
    let mut w = w(&[1], 32);
    go(
        &mut w,
        "a",
        &[Binding::range(0, 1, 0, 20, Access::Write)],
        FAIL,
    );
    go(
        &mut w,
        "a",
        &[Binding::range(0, 1, 5, 10, Access::Write)],
        FAIL,
    );
    assert_eq!(claims(&w, 1), [(0, 20, 1, None)]);
    assert_eq!(w.failures().next().unwrap().occurrences, 2);
}

#[test]
fn a_partial_write_releases_only_the_bytes_it_covers() {
    let mut w = w(&[1], 32);
    go(&mut w, "a", &[writes(0, 1)], FAIL);
    go(
        &mut w,
        "k",
        &[Binding::range(0, 1, 8, 16, Access::Write)],
        Outcome::Ok,
    );
    assert_eq!(claims(&w, 1), [(0, 8, 1, None), (16, 32, 1, None)]);
    assert_eq!((w.stats().claims, w.stats().tainted_bytes), (2, 24));
}

#[test]
fn a_release_across_several_claims_removes_their_bytes_in_range_and_prunes_what_empties() {
    let mut w = w(&[1], 24);
    go(&mut w, "a", &[writes(0, 1)], FAIL);
    go(
        &mut w,
        "b",
        &[Binding::range(0, 1, 8, 16, Access::Write)],
        FAIL2,
    );
    go(
        &mut w,
        "k",
        &[Binding::range(0, 1, 4, 20, Access::Write)],
        Outcome::Ok,
    );
    assert_eq!(claims(&w, 1), [(0, 4, 1, None), (20, 24, 1, None)]);
    assert_eq!(w.stats().live_failures, 1);
}

#[test]
fn a_batch_gives_exactly_the_results_of_its_launches_one_at_a_time() {
    let (mut one, mut batch) = (w(&[1, 2, 3], 16), w(&[1, 2, 3], 16));
    let b0 = [Binding::range(0, 1, 0, 8, Access::Write)];
    let b1 = [reads(0, 1), writes(0, 2)];
    let b2 = [reads(0, 2), Binding::whole(0, 3, Access::ReadWrite)];
    let b3 = [writes(0, 1), reads(0, 9)];
    let launches = [
        Launch {
            kernel: "fill",
            stream: 0.into(),
            bindings: &b0,
            outcome: FAIL,
        },
        Launch {
            kernel: "gelu",
            stream: 0.into(),
            bindings: &b1,
            outcome: Outcome::Ok,
        },
        Launch {
            kernel: "axpy",
            stream: 0.into(),
            bindings: &b2,
            outcome: Outcome::DryRun,
        },
        Launch {
            kernel: "axpy",
            stream: 0.into(),
            bindings: &b2,
            outcome: Outcome::Ok,
        },
        Launch {
            kernel: "fill",
            stream: 0.into(),
            bindings: &b3,
            outcome: Outcome::Ok,
        },
    ];
    let singles: Vec<LaunchResult> = launches.iter().map(|l| one.launch(l).unwrap()).collect();
    let mut results = Vec::new();
    batch.launch_batch(&launches, &mut results).unwrap();
    assert_eq!(results, singles);
    assert_eq!(batch.stats(), one.stats());
    for m in 1..=3 {
        assert_eq!(claims(&batch, m), claims(&one, m));
    }
    assert_eq!(claims(&one, 3), [(0, 16, 1, Some(3))]);
}

#[test]
fn a_batch_with_one_bad_launch_changes_nothing_and_names_its_index() {
    let mut w = w(&[1, 2], 16);
    let good = [writes(0, 1)];
    let bad = [Binding::range(0, 2, 0, 17, Access::Write)];
    let launches = [
        Launch {
            kernel: "fill",
            stream: 0.into(),
            bindings: &good,
            outcome: FAIL,
        },
        Launch {
            kernel: "fill",
            stream: 0.into(),
            bindings: &bad,
            outcome: Outcome::Ok,
        },
    ];
    let before = w.stats();
    let mut results = Vec::new();
    let err = w.launch_batch(&launches, &mut results).unwrap_err();
    let inner = Error::RangePastEnd {
        memory: 2,
        start: 0,
        end: 17,
        size: 16,
    };
    assert_eq!(
        err,
        Error::InBatch {
            index: 1,
            error: Box::new(inner)
        }
    );
    assert!(err.to_string().contains("launch 1"));
    assert!(results.is_empty());
    assert_eq!(w.stats(), before);
    assert_eq!(claims(&w, 1), []);
    assert_eq!(w.launch(&launches[0]).unwrap().launch, 0);
}

/// SPEC §3: step 1 (resolve_owner) comes before step 2 (dry_run), so a dry
/// run's unresolved bindings are counted — in a world with no failure and
/// in one with a live failure alike.
#[test]
fn a_dry_run_still_resolves_its_bindings_and_counts_the_unresolved_ones() {
    let mut w = w(&[1, 2], 16);
    let b = [reads(0, 99), writes(3, 1), writes(0, 1)];
    assert_eq!(go(&mut w, "k", &b, Outcome::DryRun), ("dry_run", 0, 0));
    assert_eq!(w.stats().unresolved_bindings, 2);
    go(&mut w, "fill", &[writes(0, 2)], FAIL);
    assert_eq!(go(&mut w, "k", &b, Outcome::DryRun), ("dry_run", 0, 0));
    assert_eq!(w.stats().unresolved_bindings, 4);
}
