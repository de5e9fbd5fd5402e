//! SPEC.md §4: failure ids, dedup by identity, pruning, skip counts, skip
//! records and the chain a tainted read reports.

mod common;

use common::{FAIL, claims, go, reads, writes};

use taintworld::{
    Access, Binding, ChainHop, Config, ErrorInfo, Outcome, ReadResult, RecordInfo, TaintReport,
    World,
};

/// A world with allocations `ids` of 16 bytes each on stream 0.
fn world(config: Config, ids: impl IntoIterator<Item = u64>) -> World {
    let mut w = World::new(config).unwrap();
    for m in ids {
        w.alloc(0, m, 16).unwrap();
    }
    w
}

fn hop(launch: u64, kernel: &str, needed: u64) -> ChainHop {
    ChainHop {
        launch,
        kernel: kernel.into(),
        needed,
    }
}

fn tainted(w: &mut World, b: Binding) -> TaintReport {
    match w.read(&b).unwrap() {
        ReadResult::Tainted(r) => r,
        other => panic!("expected a tainted read, got {other:?}"),
    }
}

#[test]
fn failure_ids_are_minted_one_two_three_in_order_of_creation() {
    let mut w = world(Config::default(), 1..=3);
    let got: Vec<_> = ["a", "b", "c"]
        .iter()
        .zip(1..=3)
        .map(|(k, m)| go(&mut w, k, &[writes(0, m)], FAIL))
        .collect();
    assert_eq!(got, [("failed", 1, 0), ("failed", 2, 0), ("failed", 3, 0)]);
    assert_eq!(w.stats().failures_minted, 3);
}

#[test]
fn a_pruned_failures_id_is_never_reused() {
    let mut w = world(Config::default(), [1]);
    let out = [writes(0, 1)];
    assert_eq!(go(&mut w, "fill", &out, FAIL), ("failed", 1, 0));
    go(&mut w, "fill", &out, Outcome::Ok);
    assert_eq!((w.stats().live_failures, w.failures().count()), (0, 0));
    assert_eq!(go(&mut w, "fill", &out, FAIL), ("failed", 2, 0));
    assert_eq!(w.stats().failures_minted, 2);
}

#[test]
fn a_failed_outcome_with_a_live_identity_reuses_its_failure_and_counts_an_occurrence() {
    let mut w = world(Config::default(), [1, 2]);
    go(&mut w, "fill", &[writes(0, 1)], FAIL);
    assert_eq!(go(&mut w, "fill", &[writes(0, 2)], FAIL), ("failed", 1, 0));
    let f = w.failures().next().unwrap();
    assert_eq!((f.id.get(), f.occurrences, f.carriers), (1, 2, 2));
    assert_eq!(w.stats().failures_minted, 1);
}

#[test]
fn a_different_kind_kernel_or_message_mints_a_new_failure() {
    let mut w = world(Config::default(), [1]);
    let out = [Binding::range(0, 1, 0, 1, Access::Write)];
    go(
        &mut w,
        "fill",
        &out,
        Outcome::Failed {
            kind: "compile",
            message: "m",
        },
    );
    let kind = go(
        &mut w,
        "fill",
        &[Binding::range(0, 1, 1, 2, Access::Write)],
        Outcome::Failed {
            kind: "launch",
            message: "m",
        },
    );
    let kernel = go(
        &mut w,
        "gelu",
        &[Binding::range(0, 1, 2, 3, Access::Write)],
        Outcome::Failed {
            kind: "compile",
            message: "m",
        },
    );
    let message = go(
        &mut w,
        "fill",
        &[Binding::range(0, 1, 3, 4, Access::Write)],
        Outcome::Failed {
            kind: "compile",
            message: "n",
        },
    );
    assert_eq!(
        [kind, kernel, message],
        [("failed", 2, 0), ("failed", 3, 0), ("failed", 4, 0)]
    );
    assert!(w.failures().all(|f| f.occurrences == 1));
}

#[test]
fn a_failure_that_ends_up_carrying_nothing_is_pruned_but_counted_as_minted() {
    let mut w = world(Config::default(), []);
    assert_eq!(go(&mut w, "fill", &[], FAIL), ("failed", 1, 0));
    let s = w.stats();
    assert_eq!((s.live_failures, s.failures_minted), (0, 1));
    assert_eq!(w.failures().count(), 0);
}

#[test]
fn a_skip_raises_the_failures_skip_count_and_not_its_occurrences() {
    let mut w = world(Config::default(), [1, 2]);
    go(&mut w, "fill", &[writes(0, 1)], FAIL);
    let b = [reads(0, 1), writes(0, 2)];
    go(&mut w, "gelu", &b, Outcome::Ok);
    go(&mut w, "gelu", &b, FAIL);
    let id = w.failures().next().unwrap().id;
    let f = w.failure(id).unwrap();
    assert_eq!((f.id.get(), f.skipped, f.occurrences), (1, 2, 1));
}

#[test]
fn a_skip_record_names_its_launch_kernel_needed_memory_and_cause() {
    let mut w = world(Config::default(), 1..=3);
    go(&mut w, "fill", &[writes(0, 1)], FAIL);
    go(&mut w, "gelu", &[reads(0, 1), writes(0, 2)], Outcome::Ok);
    go(&mut w, "loss", &[reads(0, 2), writes(0, 3)], Outcome::Ok);
    let mut records: Vec<RecordInfo<'_>> = w.skip_records().collect();
    records.sort_by_key(|r| r.launch);
    let id = records[0].failure;
    assert_eq!(id.get(), 1);
    let seen: Vec<_> = records
        .iter()
        .map(|r| {
            (
                r.launch, r.kernel, r.needed, r.cause, r.depth, r.cut, r.failure,
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (1, "gelu", 1, None, 1, false, id),
            (2, "loss", 2, Some(1), 2, false, id)
        ]
    );
    assert_eq!(w.skip_records_of(id).count(), 2);
}

#[test]
fn skip_records_of_a_failure_lists_its_own_records_and_none_of_anothers() {
    let mut w = world(Config::default(), 1..=5);
    go(&mut w, "fill", &[writes(0, 1)], FAIL);
    let other = Outcome::Failed {
        kind: "copy",
        message: "host copy failed",
    };
    go(&mut w, "load", &[writes(0, 3)], other);
    go(&mut w, "gelu", &[reads(0, 1), writes(0, 2)], Outcome::Ok);
    go(&mut w, "norm", &[reads(0, 3), writes(0, 4)], Outcome::Ok);
    go(&mut w, "loss", &[reads(0, 4), writes(0, 5)], Outcome::Ok);
    let ids: Vec<_> = w.failures().map(|f| f.id).collect();
    assert_eq!(ids.len(), 2);
    let kernels = |id| {
        let mut k: Vec<&str> = w.skip_records_of(id).map(|r| r.kernel).collect();
        k.sort_unstable();
        k
    };
    let fill = w.failures().find(|f| f.error.kernel == "fill").unwrap().id;
    let load = w.failures().find(|f| f.error.kernel == "load").unwrap().id;
    assert_eq!(kernels(fill), ["gelu"]);
    assert_eq!(kernels(load), ["loss", "norm"]);
    assert!(w.skip_records_of(fill).all(|r| r.failure == fill));
    assert_eq!(w.skip_records().count(), 3);
}

#[test]
fn a_tainted_read_reports_the_chain_newest_first_ending_at_the_launch_that_read_root_bytes() {
    let mut w = world(Config::default(), 1..=3);
    go(&mut w, "fill", &[writes(0, 1)], FAIL);
    go(&mut w, "matmul", &[reads(0, 1), writes(0, 2)], Outcome::Ok);
    go(&mut w, "loss", &[reads(0, 2), writes(0, 3)], Outcome::Ok);
    let report = tainted(&mut w, reads(0, 3));
    assert_eq!(report.failure.get(), 1);
    assert_eq!(report.error, ErrorInfo::new("compile", "fill", "bad PTX"));
    assert_eq!(report.occurrences, 1);
    assert_eq!(report.chain, [hop(2, "loss", 2), hop(1, "matmul", 1)]);
    assert!(!report.truncated);
}

#[test]
fn a_read_of_bytes_tainted_at_the_root_has_an_empty_chain() {
    let mut w = world(Config::default(), [1]);
    go(&mut w, "fill", &[writes(0, 1)], FAIL);
    let report = tainted(&mut w, reads(0, 1));
    assert_eq!((report.chain.len(), report.truncated), (0, false));
}

#[test]
fn a_chain_is_cut_at_chain_limit_and_the_read_says_truncated() {
    let mut w = world(
        Config {
            chain_limit: 2,
            ..Config::default()
        },
        0..=4,
    );
    go(&mut w, "fill", &[writes(0, 0)], FAIL);
    for m in 1..=4u64 {
        let b = [reads(0, m - 1), writes(0, m)];
        let kernel = ["k1", "k2", "k3", "k4"][m as usize - 1];
        assert_eq!(go(&mut w, kernel, &b, Outcome::Ok), ("skipped", 1, m - 1));
    }
    let r2 = tainted(&mut w, reads(0, 2));
    assert_eq!(
        (r2.chain, r2.truncated),
        (vec![hop(2, "k2", 1), hop(1, "k1", 0)], false)
    );
    let r3 = tainted(&mut w, reads(0, 3));
    assert_eq!((r3.chain, r3.truncated), (vec![hop(3, "k3", 2)], true));
    let r4 = tainted(&mut w, reads(0, 4));
    assert_eq!(
        (r4.chain, r4.truncated),
        (vec![hop(4, "k4", 3), hop(3, "k3", 2)], true)
    );
    let cut = w.skip_records().find(|r| r.launch == 3).unwrap();
    assert_eq!((cut.cause, cut.depth, cut.cut), (None, 1, true));
    assert!(w.skip_records().all(|r| r.depth <= 2));
}

#[test]
fn a_record_lives_while_a_later_record_refers_to_it_and_goes_with_the_last_claim() {
    let mut w = world(Config::default(), 1..=3);
    go(&mut w, "fill", &[writes(0, 1)], FAIL);
    go(&mut w, "matmul", &[reads(0, 1), writes(0, 2)], Outcome::Ok);
    go(&mut w, "loss", &[reads(0, 2), writes(0, 3)], Outcome::Ok);
    w.host_write(&writes(0, 2), Outcome::Ok).unwrap();
    assert_eq!(w.stats().live_records, 2); // the record of launch 1 is loss's cause
    w.host_write(&writes(0, 3), Outcome::Ok).unwrap();
    let s = w.stats();
    assert_eq!((s.live_records, s.live_failures), (0, 1));
    assert_eq!(w.skip_records().count(), 0);
}

#[test]
fn a_skip_with_an_empty_write_set_makes_a_record_that_goes_at_once() {
    let mut w = world(Config::default(), [1]);
    go(&mut w, "fill", &[writes(0, 1)], FAIL);
    assert_eq!(
        go(&mut w, "print", &[reads(0, 1)], Outcome::Ok),
        ("skipped", 1, 1)
    );
    assert_eq!(w.stats().live_records, 0);
    assert_eq!(w.failures().next().unwrap().skipped, 1);
}

#[test]
fn a_reads_report_comes_from_the_overlapping_claim_with_the_lowest_start() {
    let mut w = world(Config::default(), [1, 2]);
    go(
        &mut w,
        "a",
        &[Binding::range(0, 1, 8, 16, Access::Write)],
        FAIL,
    );
    go(&mut w, "b", &[writes(0, 2)], FAIL);
    let copy = [reads(0, 2), Binding::range(0, 1, 0, 8, Access::Write)];
    assert_eq!(go(&mut w, "copy", &copy, Outcome::Ok), ("skipped", 2, 2));
    let whole = tainted(&mut w, Binding::range(0, 1, 4, 16, Access::Read));
    assert_eq!(
        (whole.failure.get(), whole.chain),
        (2, vec![hop(2, "copy", 2)])
    );
    assert_eq!(whole.error.kernel, "b");
    let tail = tainted(&mut w, Binding::range(0, 1, 8, 12, Access::Read));
    assert_eq!((tail.failure.get(), tail.chain.len()), (1, 0));
}

#[test]
fn bytes_left_after_a_partial_overwrite_keep_their_provenance() {
    let mut w = world(Config::default(), [1, 2]);
    go(&mut w, "fill", &[writes(0, 1)], FAIL);
    go(&mut w, "gelu", &[reads(0, 1), writes(0, 2)], Outcome::Ok);
    w.host_write(&Binding::range(0, 2, 0, 8, Access::Write), Outcome::Ok)
        .unwrap();
    let r = tainted(&mut w, reads(0, 2));
    assert_eq!(r.chain, [hop(1, "gelu", 1)]);
}

#[test]
fn a_report_gives_occurrences_as_of_the_read() {
    let mut w = world(Config::default(), [1, 2]);
    go(&mut w, "fill", &[writes(0, 1)], FAIL);
    assert_eq!(tainted(&mut w, reads(0, 1)).occurrences, 1);
    go(&mut w, "fill", &[writes(0, 2)], FAIL);
    go(&mut w, "fill", &[], FAIL);
    assert_eq!(tainted(&mut w, reads(0, 1)).occurrences, 3);
}

#[test]
fn after_every_allocation_is_freed_no_failure_and_no_record_exists() {
    let mut w = world(Config::default(), 1..=3);
    go(&mut w, "fill", &[writes(0, 1)], FAIL);
    go(&mut w, "gelu", &[reads(0, 1), writes(0, 2)], Outcome::Ok);
    go(&mut w, "loss", &[reads(0, 2), writes(0, 3)], Outcome::Ok);
    for m in [2, 1, 3] {
        w.free(m).unwrap();
        w.check_invariants().unwrap();
    }
    let s = w.stats();
    assert_eq!(
        (s.live_failures, s.live_records, s.claims, s.failures_minted),
        (0, 0, 0, 1)
    );
}

/// The failed outcome `message`: a kernel that does not compile, with its
/// own message, so each message is its own failure.
fn fails_with(message: &str) -> Outcome<'_> {
    Outcome::Failed {
        kind: "compile",
        message,
    }
}

/// Each live failure as `(id, carriers)`, by id.
fn carriers(w: &World) -> Vec<(u64, u64)> {
    let mut all: Vec<_> = w.failures().map(|f| (f.id.get(), f.carriers)).collect();
    all.sort_unstable();
    all
}

/// The first and second claims of [`apart`]: `[0, 8)` and `[16, 24)` of
/// memory 1, written.
const FIRST: (u64, u64) = (0, 8);
const SECOND: (u64, u64) = (16, 24);

fn part((start, end): (u64, u64)) -> Binding {
    Binding::range(0, 1, start, end, Access::Write)
}

/// A world whose 32-byte memory 1 carries the failure of message `first`
/// on [`FIRST`] and that of `second` on [`SECOND`]: two claims that do not
/// touch. The failures' ids are 1 and 2, or both 1 for one message.
fn apart(first: &str, second: &str) -> World {
    let mut w = world(Config::default(), []);
    w.alloc(0, 1, 32).unwrap();
    assert_eq!(
        go(&mut w, "fill", &[part(FIRST)], fails_with(first)).0,
        "failed"
    );
    assert_eq!(
        go(&mut w, "fill", &[part(SECOND)], fails_with(second)).0,
        "failed"
    );
    w
}

#[test]
fn a_failure_that_retaints_one_claim_among_others_gains_its_carrier_and_the_old_failure_keeps_its_own()
 {
    // Failure 1 on both claims; failure 2 then taints exactly the second.
    let mut w = apart("a", "a");
    assert_eq!(carriers(&w), [(1, 1)]);
    assert_eq!(
        go(&mut w, "fill", &[part(SECOND)], fails_with("b")),
        ("failed", 2, 0)
    );
    // Failure 2 is carried (it was carried nowhere before), and failure 1
    // still is, by the first claim: one carrier each.
    assert_eq!(carriers(&w), [(1, 1), (2, 1)]);
    w.check_invariants().unwrap();
    // Writing the first claim's bytes lets failure 1 go; failure 2 stays.
    assert_eq!(
        go(&mut w, "fill", &[part(FIRST)], Outcome::Ok),
        ("ran", 0, 0)
    );
    assert_eq!(carriers(&w), [(2, 1)]);
    w.check_invariants().unwrap();
}

#[test]
fn a_failure_that_retaints_one_claim_among_its_own_keeps_one_carrier_and_the_old_failure_goes() {
    // Failure 1 on the first claim, failure 2 on the second; failure 1
    // then taints exactly the second.
    let mut w = apart("a", "b");
    assert_eq!(carriers(&w), [(1, 1), (2, 1)]);
    assert_eq!(
        go(&mut w, "fill", &[part(SECOND)], fails_with("a")),
        ("failed", 1, 0)
    );
    // Failure 1 was carried already: still one carrier. Failure 2 lost
    // its only claim and is pruned.
    assert_eq!(carriers(&w), [(1, 1)]);
    assert_eq!(
        claims(&w, 1),
        [(0, 8, 1, None), (16, 24, 1, None)],
        "the two claims of failure 1 do not touch, so they stay two"
    );
    w.check_invariants().unwrap();
}

#[test]
fn a_taint_over_two_claims_of_one_failure_takes_one_carrier_from_it() {
    // Memory 1 carries failure 1 on two claims; memory 2 carries it whole.
    // Failure 2 then taints all of memory 1.
    let mut w = apart("a", "a");
    w.alloc(0, 2, 16).unwrap();
    go(&mut w, "fill", &[writes(0, 2)], fails_with("a"));
    assert_eq!(carriers(&w), [(1, 2)]);
    assert_eq!(
        go(&mut w, "fill", &[writes(0, 1)], fails_with("b")),
        ("failed", 2, 0)
    );
    // Memory 1 no longer carries failure 1; memory 2 still does.
    assert_eq!(carriers(&w), [(1, 1), (2, 1)]);
    assert_eq!(claims(&w, 1), [(0, 32, 2, None)]);
    w.check_invariants().unwrap();
}

#[test]
fn a_failure_id_displays_as_its_number() {
    let mut w = world(Config::default(), [1]);
    go(&mut w, "fill", &[writes(0, 1)], FAIL);
    let id = w.failures().next().unwrap().id;
    assert_eq!(
        (id.to_string(), format!("failure {id}")),
        ("1".to_string(), "failure 1".to_string())
    );
}

#[test]
fn the_record_store_holds_a_skip_record_while_its_claim_lives() {
    let mut w = world(Config::default(), [1, 2]);
    assert!(w.failure_graph().records.is_empty());
    go(&mut w, "fill", &[writes(0, 1)], FAIL);
    assert!(
        w.failure_graph().records.is_empty(),
        "a failed launch makes no record"
    );
    assert_eq!(
        go(&mut w, "gelu", &[reads(0, 1), writes(0, 2)], Outcome::Ok),
        ("skipped", 1, 1)
    );
    let records = &w.failure_graph().records;
    assert_eq!((records.len(), records.is_empty()), (1, false));
    // Writing memory 2 releases the claim that held the record.
    go(&mut w, "fill", &[writes(0, 2)], Outcome::Ok);
    let records = &w.failure_graph().records;
    assert_eq!((records.len(), records.is_empty()), (0, true));
}

/// SPEC §4 "Skip records — exact provenance": the record's cause is the
/// origin of the claim that decided — the lowest `start` overlapping the
/// deciding binding — when one failure reaches the bytes both at the root
/// and through a record.
#[test]
fn a_skips_cause_is_the_origin_of_the_lowest_start_claim_its_deciding_binding_overlaps() {
    for record_first in [true, false] {
        let mut w = world(Config::default(), [2, 3]);
        w.alloc(0, 1, 32).unwrap();
        let (through_record, at_root) = if record_first {
            ((0, 16), (16, 32))
        } else {
            ((16, 32), (0, 16))
        };
        let fill = [
            writes(0, 2),
            Binding::range(0, 1, at_root.0, at_root.1, Access::Write),
        ];
        assert_eq!(go(&mut w, "fill", &fill, FAIL), ("failed", 1, 0));
        let (start, end) = through_record;
        let copy = [reads(0, 2), Binding::range(0, 1, start, end, Access::Write)];
        assert_eq!(go(&mut w, "copy", &copy, Outcome::Ok), ("skipped", 1, 2));
        let b = [reads(0, 1), writes(0, 3)];
        assert_eq!(go(&mut w, "use", &b, Outcome::Ok), ("skipped", 1, 1));
        let expected = if record_first {
            vec![hop(2, "use", 1), hop(1, "copy", 2)]
        } else {
            vec![hop(2, "use", 1)]
        };
        let r = tainted(&mut w, reads(0, 3));
        assert_eq!((r.chain, r.truncated), (expected, false), "{record_first}");
    }
}
