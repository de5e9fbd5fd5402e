//! SPEC.md §5: host reads, host writes, alloc and free.

mod common;

use common::{claims, reads, writes};

use taintworld::{Access, Binding, Error, ErrorInfo, Launch, Outcome, ReadResult, Verdict, World};

const FAIL: Outcome<'static> = Outcome::Failed {
    kind: "copy",
    message: "H2D failed",
};

/// A world with allocations 1, 2 and 3 of 16 bytes on stream 0, memory 1
/// tainted by a failed `fill` (failure 1).
fn world() -> World {
    let mut w = World::default();
    for m in 1..=3 {
        w.alloc(0, m, 16).unwrap();
    }
    let b = [writes(0, 1)];
    let fail = Outcome::Failed {
        kind: "compile",
        message: "bad PTX",
    };
    w.launch(&Launch {
        kernel: "fill",
        stream: 0.into(),
        bindings: &b,
        outcome: fail,
    })
    .unwrap();
    w
}

#[test]
fn a_read_of_a_tainted_buffer_reports_its_failure() {
    let mut w = world();
    let ReadResult::Tainted(r) = w.read(&Binding::range(0, 1, 15, 16, Access::Read)).unwrap()
    else {
        panic!("memory 1 carries failure 1")
    };
    assert_eq!((r.failure.get(), r.occurrences), (1, 1));
    assert_eq!(r.error, ErrorInfo::new("compile", "fill", "bad PTX"));
}

#[test]
fn a_read_of_an_unresolved_binding_is_unresolved_and_counted() {
    let mut w = world();
    assert_eq!(w.read(&reads(0, 42)).unwrap(), ReadResult::Unresolved);
    assert_eq!(w.stats().unresolved_bindings, 1);
}

#[test]
fn a_read_changes_nothing() {
    let mut w = world();
    let before = (w.stats(), claims(&w, 1));
    w.read(&reads(0, 1)).unwrap();
    assert_eq!(w.read(&reads(0, 2)).unwrap(), ReadResult::Clean);
    assert_eq!((w.stats(), claims(&w, 1)), before);
    assert_eq!(w.failures().next().unwrap().skipped, 0);
}

#[test]
fn a_read_ignores_the_bindings_access() {
    let mut w = world();
    let r = w.read(&Binding::whole(0, 1, Access::Dead)).unwrap();
    assert!(
        matches!(r, ReadResult::Tainted(ref t) if t.failure.get() == 1),
        "{r:?}"
    );
}

#[test]
fn an_ok_host_write_releases_only_the_bytes_it_covers() {
    let mut w = world();
    assert_eq!(
        w.host_write(&Binding::range(0, 1, 4, 12, Access::Write), Outcome::Ok)
            .unwrap(),
        Verdict::Ran
    );
    assert_eq!(claims(&w, 1), [(0, 4, 1, None), (12, 16, 1, None)]);
}

#[test]
fn a_host_write_ignores_the_bindings_access() {
    let mut w = world();
    w.host_write(&reads(0, 1), Outcome::Ok).unwrap();
    assert_eq!(claims(&w, 1), []);
    w.host_write(&Binding::whole(0, 2, Access::Dead), FAIL)
        .unwrap();
    assert_eq!(claims(&w, 2), [(0, 16, 2, None)]);
}

#[test]
fn a_failed_host_write_taints_its_range_at_the_root_with_kernel_host_write() {
    let mut w = world();
    let v = w
        .host_write(&Binding::range(0, 2, 0, 8, Access::Write), FAIL)
        .unwrap();
    let Verdict::Failed(id) = v else {
        panic!("{v:?}")
    };
    assert_eq!(id.get(), 2);
    assert_eq!(claims(&w, 2), [(0, 8, 2, None)]);
    assert_eq!(
        *w.failure(id).unwrap().error,
        ErrorInfo::new("copy", "host_write", "H2D failed")
    );
}

#[test]
fn a_failed_host_write_over_a_tainted_buffer_replaces_its_failure() {
    let mut w = world();
    w.host_write(&writes(0, 1), FAIL).unwrap();
    assert_eq!(claims(&w, 1), [(0, 16, 2, None)]);
    assert_eq!(w.stats().live_failures, 1);
}

#[test]
fn failed_host_writes_of_one_identity_share_one_failure() {
    let mut w = world();
    w.host_write(&writes(0, 2), FAIL).unwrap();
    w.host_write(&writes(0, 3), FAIL).unwrap();
    let f = w.failures().find(|f| f.id.get() == 2).unwrap();
    assert_eq!((f.occurrences, f.carriers), (2, 2));
    assert_eq!(w.stats().failures_minted, 2);
}

#[test]
fn a_host_write_takes_no_launch_number() {
    let mut w = world();
    w.host_write(&writes(0, 2), FAIL).unwrap();
    w.host_write(&writes(0, 2), Outcome::Ok).unwrap();
    assert_eq!(w.stats().launches, 1);
    let b = [writes(0, 3)];
    let r = w
        .launch(&Launch {
            kernel: "k",
            stream: 0.into(),
            bindings: &b,
            outcome: Outcome::Ok,
        })
        .unwrap();
    assert_eq!(r.launch, 1);
}

#[test]
fn a_failed_host_write_whose_binding_is_unresolved_mints_a_failure_that_is_pruned() {
    let mut w = world();
    let v = w.host_write(&writes(0, 42), FAIL).unwrap();
    assert!(matches!(v, Verdict::Failed(id) if id.get() == 2), "{v:?}");
    let s = w.stats();
    assert_eq!(
        (s.live_failures, s.failures_minted, s.unresolved_bindings),
        (1, 2, 1)
    );
}

#[test]
fn alloc_of_a_live_memory_id_is_bad_input_and_changes_nothing() {
    let mut w = world();
    let before = (w.stats(), claims(&w, 1));
    let err = w.alloc(1, 1, 8).unwrap_err();
    assert_eq!(err, Error::DuplicateMemory { memory: 1 });
    assert_eq!(err.to_string(), "memory 1 is already a live allocation");
    assert_eq!((w.stats(), claims(&w, 1)), before);
    assert!(w.streams().get(1).is_none());
}

#[test]
fn free_of_an_unknown_memory_id_is_bad_input_and_changes_nothing() {
    let mut w = world();
    let before = w.stats();
    let err = w.free(42).unwrap_err();
    assert_eq!(err, Error::UnknownMemory { memory: 42 });
    assert!(err.to_string().contains("42"));
    assert_eq!(w.stats(), before);
}

#[test]
fn free_takes_every_claim_and_prunes_the_failures_nothing_else_carries() {
    let mut w = world();
    w.host_write(&Binding::range(0, 1, 0, 4, Access::Write), FAIL)
        .unwrap();
    assert_eq!(w.stats().live_failures, 2);
    w.free(1).unwrap();
    let s = w.stats();
    assert_eq!(
        (
            s.live_failures,
            s.claims,
            s.tainted_allocations,
            s.allocations
        ),
        (0, 0, 0, 2)
    );
    assert!(w.claims(1).is_none());
}

#[test]
fn free_keeps_a_failure_another_allocation_still_carries() {
    let mut w = world();
    let b = [writes(0, 2)];
    let fail = Outcome::Failed {
        kind: "compile",
        message: "bad PTX",
    };
    w.launch(&Launch {
        kernel: "fill",
        stream: 0.into(),
        bindings: &b,
        outcome: fail,
    })
    .unwrap();
    w.free(1).unwrap();
    let f = w.failures().next().unwrap();
    assert_eq!((f.id.get(), f.carriers, f.occurrences), (1, 1, 2));
    assert_eq!(claims(&w, 2), [(0, 16, 1, None)]);
}
