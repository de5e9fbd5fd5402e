//! What only a long run reaches: a slot of the allocation store freed 2^31
//! times, whose slot-map version wraps. Ignored by default (about a minute
//! in a release build, far longer in a debug one); run with
//! `cargo test --release --test long_haul -- --ignored`.

use taintworld::{Access, Binding, CaptureResult, Launch, Outcome, ReadResult, World};

/// A captured graph kept while one slot is freed 2^31 times: a temporary
/// made and freed on every launch takes the same slot each time, and the
/// graph's old key for the buffer it wrote then names the allocation
/// sitting there. SPEC §6 resolves a replay's writes again by memory id:
/// the freed buffer is unresolved and the newcomer untouched.
#[test]
#[ignore = "2^31 frees: about a minute in a release build"]
fn a_graph_kept_while_its_buffers_slot_is_freed_two_billion_times_resolves_by_memory_id() {
    let mut w = World::default();
    w.alloc(0, 100, 64).unwrap();
    let old = w.alloc(0, 1, 64).unwrap();
    w.capture_begin(0).unwrap();
    let write = [Binding::whole(0, 1, Access::Write)];
    let launch = Launch {
        kernel: "fill",
        stream: 0.into(),
        bindings: &write,
        outcome: Outcome::Ok,
    };
    w.launch(&launch).unwrap();
    assert_eq!(w.capture_end(0, 9).unwrap(), CaptureResult::Ok);
    w.free(1).unwrap();
    for _ in 0..(1u64 << 31) - 1 {
        w.alloc(0, 2, 8).unwrap();
        w.free(2).unwrap();
    }
    let new = w.alloc(0, 3, 8).unwrap();
    assert_eq!(new, old, "the slot's version wrapped back to the old key");

    let failed = Outcome::Failed {
        kind: "compile",
        message: "bad PTX",
    };
    w.replay(9, failed).unwrap();
    assert_eq!(w.stats().unresolved_bindings, 1);
    assert_eq!(w.stats().claims, 0);
    let read = Binding::whole(0, 3, Access::Read);
    assert_eq!(w.read(&read).unwrap(), ReadResult::Clean);
    w.check_invariants().unwrap();
}
