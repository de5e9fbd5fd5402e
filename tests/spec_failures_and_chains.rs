//! SPEC.md §4: failure ids, dedup by identity, pruning, skip counts, skip
//! records and the chain a tainted read reports.

mod common;

use common::{FAIL, go, reads, writes};

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
    let first = RecordInfo {
        launch: 1,
        kernel: "gelu",
        needed: 1,
        cause: None,
        depth: 1,
        cut: false,
        failure: id,
    };
    let second = RecordInfo {
        launch: 2,
        kernel: "loss",
        needed: 2,
        cause: Some(1),
        depth: 2,
        cut: false,
        failure: id,
    };
    assert_eq!(records, [first, second]);
    assert_eq!(w.skip_records_of(id).count(), 2);
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
