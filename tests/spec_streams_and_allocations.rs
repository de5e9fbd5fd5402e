//! SPEC.md §1–2: stream slots, special streams, allocations, memory-id and
//! key bindings, resolution, empty ranges and dead bindings.

mod common;

use common::{FAIL, claims, go_on as go, reads, writes};

use taintworld::{Access, Binding, Config, Outcome, ReadResult, StreamRef, World};

#[test]
fn the_default_config_has_eight_slots_no_special_streams_and_chain_limit_1024() {
    let c = Config::default();
    assert_eq!(
        (c.max_streams, c.num_special, c.chain_limit, c.strict),
        (8, 0, 1024, false)
    );
}

#[test]
fn a_world_keeps_the_configuration_it_was_made_with() {
    let config = Config {
        max_streams: 3,
        num_special: 2,
        chain_limit: 7,
        strict: true,
    };
    let w = World::new(config).unwrap();
    assert_eq!(*w.config(), config);
    assert_eq!(
        (w.streams().max_streams(), w.streams().num_special()),
        (3, 2)
    );
}

#[test]
fn two_stream_ids_that_fold_onto_one_slot_resolve_the_same_allocation() {
    let mut w = World::new(Config {
        max_streams: 4,
        ..Config::default()
    })
    .unwrap();
    w.alloc(1, 7, 16).unwrap();
    // Stream 5 folds onto slot 1 (5 % 4), where memory 7 was made.
    assert_eq!(
        go(&mut w, "fill", 5, &[writes(5, 7)], FAIL),
        ("failed", 1, 0)
    );
    assert_eq!(claims(&w, 7), [(0, 16, 1, None)]);
    // Stream 9 folds onto slot 1 too.
    let ReadResult::Tainted(r) = w.read(&reads(9, 7)).unwrap() else {
        panic!("memory 7 carries failure 1")
    };
    assert_eq!(r.failure.get(), 1);
    assert_eq!(w.stats().unresolved_bindings, 0);
}

#[test]
fn a_binding_whose_allocation_was_made_on_another_slot_is_unresolved() {
    let mut w = World::default();
    w.alloc(1, 7, 16).unwrap();
    w.alloc(2, 8, 16).unwrap(); // slot 2 is initialized, memory 7 is not on it
    assert_eq!(
        go(&mut w, "fill", 2, &[writes(2, 7)], FAIL),
        ("failed", 1, 0)
    );
    assert_eq!(claims(&w, 7), []);
    let s = w.stats();
    assert_eq!(
        (s.unresolved_bindings, s.failures_minted, s.live_failures),
        (1, 1, 0)
    );
    assert_eq!(w.read(&reads(2, 7)).unwrap(), ReadResult::Unresolved);
}

#[test]
fn a_binding_on_a_never_initialized_slot_is_unresolved_and_counted() {
    let mut w = World::default();
    w.alloc(0, 7, 16).unwrap();
    let bindings = [reads(3, 7), writes(3, 7)];
    assert_eq!(go(&mut w, "k", 0, &bindings, Outcome::Ok), ("ran", 0, 0));
    assert_eq!(w.stats().unresolved_bindings, 2);
}

#[test]
fn resolving_a_binding_never_initializes_its_slot() {
    let mut w = World::default();
    w.alloc(0, 7, 16).unwrap();
    go(&mut w, "k", 3, &[writes(3, 7)], FAIL);
    assert_eq!(w.read(&reads(3, 7)).unwrap(), ReadResult::Unresolved);
    assert!(w.streams().get(3).is_none());
    assert_eq!(w.streams().iter().count(), 1);
}

#[test]
fn an_allocation_initializes_its_slot() {
    let mut w = World::default();
    assert!(w.streams().get(5).is_none());
    let key = w.alloc(13, 7, 16).unwrap(); // 13 % 8 == 5
    assert!(w.streams().get(5).is_some());
    assert_eq!(w.allocations().get(key).unwrap().slot, 5);
}

#[test]
fn a_failed_reservation_still_initializes_its_slot() {
    let mut w = World::default();
    w.alloc_failed(4, 7, 16, "oom", "out of memory").unwrap();
    assert!(w.streams().get(4).is_some());
}

#[test]
fn an_explicitly_initialized_slot_still_resolves_only_its_own_allocations() {
    let mut w = World::default();
    w.initialize_stream(2).unwrap();
    assert!(w.streams().get(2).is_some());
    w.alloc(0, 7, 16).unwrap();
    assert_eq!(w.read(&reads(2, 7)).unwrap(), ReadResult::Unresolved);
    assert_eq!(w.stats().unresolved_bindings, 1);
}

/// A world of 4 regular slots (0–3) and 2 special ones (4 and 5).
fn four_regular_two_special() -> World {
    World::new(Config {
        max_streams: 4,
        num_special: 2,
        ..Config::default()
    })
    .unwrap()
}

#[test]
fn a_special_stream_sits_after_the_regular_slots() {
    let mut w = four_regular_two_special();
    let key = w.alloc(StreamRef::Special(1), 7, 16).unwrap();
    let alloc = w.allocations().get(key).unwrap();
    assert_eq!(alloc.slot, 5);
    assert!(w.streams().iter().any(|(_, s)| s.slot == 5 && s.special));
    let out = [writes(StreamRef::Special(1), 7)];
    assert_eq!(
        go(&mut w, "fill", StreamRef::Special(1), &out, FAIL),
        ("failed", 1, 0)
    );
    assert_eq!(claims(&w, 7), [(0, 16, 1, None)]);
}

#[test]
fn a_regular_stream_id_never_reaches_a_special_slot() {
    let mut w = four_regular_two_special();
    w.alloc(StreamRef::Special(1), 7, 16).unwrap();
    // Id 5 folds onto regular slot 1, not onto slot 5.
    assert_eq!(w.read(&reads(5, 7)).unwrap(), ReadResult::Unresolved);
    assert_eq!(
        w.read(&reads(StreamRef::Special(0), 7)).unwrap(),
        ReadResult::Unresolved
    );
    assert_eq!(w.stats().unresolved_bindings, 2);
}

#[test]
fn a_regular_stream_id_never_reaches_a_special_slot_by_key_either() {
    let mut w = four_regular_two_special();
    let first = w.alloc(StreamRef::Special(0), 7, 16).unwrap();
    let second = w.alloc(StreamRef::Special(1), 8, 16).unwrap();
    // Ids 4 and 5 fold onto regular slots 0 and 1, not onto slots 4 and 5
    // where the keys' allocations were made: a failed launch binding them
    // taints nothing.
    let out = [
        Binding::whole(4, first, Access::Write),
        Binding::whole(5, second, Access::Write),
    ];
    assert_eq!(go(&mut w, "fill", 4, &out, FAIL), ("failed", 1, 0));
    assert_eq!(w.stats().unresolved_bindings, 2);
    assert_eq!((claims(&w, 7), claims(&w, 8)), (vec![], vec![]));
}

#[test]
fn a_memory_id_reused_after_free_inherits_nothing() {
    let mut w = World::default();
    w.alloc(0, 7, 16).unwrap();
    go(&mut w, "fill", 0, &[writes(0, 7)], FAIL);
    w.free(7).unwrap();
    w.alloc(0, 7, 32).unwrap();
    assert_eq!(claims(&w, 7), []);
    assert_eq!(w.read(&reads(0, 7)).unwrap(), ReadResult::Clean);
    assert_eq!(w.stats().live_failures, 0);
}

/// A free by key finds the memory id's index entry where the allocation
/// left it, or by the id once the index has grown and moved it: either
/// way the id is free again and no other id is touched.
#[test]
fn frees_by_key_before_and_after_the_memory_index_grows_free_exactly_their_ids() {
    let mut w = World::default();
    let early: Vec<_> = (0..8).map(|m| w.alloc(0, m, 16).unwrap()).collect();
    // The index grows several times past its first 8 entries: the early
    // allocations' entries move.
    let late: Vec<_> = (8..1000).map(|m| w.alloc(0, m, 16).unwrap()).collect();
    for &key in early.iter().chain(late.iter().rev().take(8)) {
        w.free(key).unwrap();
    }
    w.check_invariants().unwrap();
    assert_eq!(w.stats().allocations, 1000 - 16);
    for m in (0..8).chain(992..1000) {
        assert_eq!(
            w.read(&reads(0, m)).unwrap(),
            ReadResult::Unresolved,
            "memory {m}"
        );
        w.alloc(0, m, 32).unwrap();
    }
    for m in 8..992 {
        assert_eq!(
            w.read(&reads(0, m)).unwrap(),
            ReadResult::Clean,
            "memory {m}"
        );
        assert!(w.alloc(0, m, 16).is_err(), "memory {m} is still live");
    }
    w.check_invariants().unwrap();
}

#[test]
fn a_stale_key_does_not_reach_the_allocation_that_reuses_its_memory_id() {
    let mut w = World::default();
    let old = w.alloc(0, 7, 16).unwrap();
    w.free(old).unwrap();
    let new = w.alloc(0, 7, 16).unwrap();
    assert_ne!(old, new);
    assert_eq!(
        go(&mut w, "fill", 0, &[writes(0, old)], FAIL),
        ("failed", 1, 0)
    );
    assert_eq!(claims(&w, new), []);
    assert!(w.claims(old).is_none());
    assert_eq!(w.read(&reads(0, old)).unwrap(), ReadResult::Unresolved);
    assert_eq!(w.stats().unresolved_bindings, 2);
}

#[test]
fn a_key_binding_is_checked_like_a_memory_id_binding() {
    let mut w = World::default();
    let x = w.alloc(0, 7, 16).unwrap();
    w.alloc(0, 8, 16).unwrap();
    go(&mut w, "fill", 0, &[writes(0, 7)], FAIL);
    let bindings = [reads(0, x), writes(0, 8)];
    // `needed` is the memory id, even when the binding named a key.
    assert_eq!(
        go(&mut w, "gelu", 0, &bindings, Outcome::Ok),
        ("skipped", 1, 7)
    );
    assert_eq!(claims(&w, 8), [(0, 16, 1, Some(1))]);
}

#[test]
fn a_key_binding_is_tainted_and_released_like_a_memory_id_binding() {
    let mut w = World::default();
    let x = w.alloc(0, 7, 16).unwrap();
    go(
        &mut w,
        "fill",
        0,
        &[Binding::range(0, x, 0, 8, Access::Write)],
        FAIL,
    );
    assert_eq!(claims(&w, 7), [(0, 8, 1, None)]);
    go(
        &mut w,
        "fill",
        0,
        &[Binding::range(0, x, 0, 4, Access::Write)],
        Outcome::Ok,
    );
    assert_eq!(claims(&w, x), [(4, 8, 1, None)]);
}

#[test]
fn a_zero_size_allocation_reads_clean_and_carries_nothing() {
    let mut w = World::default();
    w.alloc(0, 7, 0).unwrap();
    assert_eq!(
        go(&mut w, "fill", 0, &[writes(0, 7)], FAIL),
        ("failed", 1, 0)
    );
    assert_eq!(claims(&w, 7), []);
    assert_eq!(w.read(&reads(0, 7)).unwrap(), ReadResult::Clean);
    let s = w.stats();
    assert_eq!(
        (s.allocations, s.live_failures, s.failures_minted),
        (1, 0, 1)
    );
}

#[test]
fn an_empty_range_trips_no_claim() {
    let mut w = World::default();
    w.alloc(0, 7, 16).unwrap();
    w.alloc(0, 8, 16).unwrap();
    go(&mut w, "fill", 0, &[writes(0, 7)], FAIL);
    let bindings = [Binding::range(0, 7, 4, 4, Access::Read), writes(0, 8)];
    assert_eq!(go(&mut w, "k", 0, &bindings, Outcome::Ok), ("ran", 0, 0));
    assert_eq!(
        w.read(&Binding::range(0, 7, 4, 4, Access::Read)).unwrap(),
        ReadResult::Clean
    );
}

#[test]
fn an_empty_range_claims_nothing_and_releases_nothing() {
    let mut w = World::default();
    w.alloc(0, 7, 16).unwrap();
    go(
        &mut w,
        "fill",
        0,
        &[Binding::range(0, 7, 16, 16, Access::Write)],
        FAIL,
    );
    assert_eq!(claims(&w, 7), []);
    go(
        &mut w,
        "fill",
        0,
        &[Binding::range(0, 7, 0, 8, Access::Write)],
        FAIL,
    );
    go(
        &mut w,
        "fill",
        0,
        &[Binding::range(0, 7, 4, 4, Access::Write)],
        Outcome::Ok,
    );
    assert_eq!(claims(&w, 7), [(0, 8, 2, None)]);
}

#[test]
fn a_dead_binding_is_not_checked() {
    let mut w = World::default();
    w.alloc(0, 7, 16).unwrap();
    w.alloc(0, 8, 16).unwrap();
    go(&mut w, "fill", 0, &[writes(0, 7)], FAIL);
    let bindings = [Binding::whole(0, 7, Access::Dead), writes(0, 8)];
    assert_eq!(go(&mut w, "k", 0, &bindings, Outcome::Ok), ("ran", 0, 0));
    assert_eq!(
        w.failure(w.claims(7).unwrap().next().unwrap().failure)
            .unwrap()
            .skipped,
        0
    );
}

#[test]
fn a_dead_binding_is_not_tainted() {
    let mut w = World::default();
    w.alloc(0, 7, 16).unwrap();
    go(
        &mut w,
        "fill",
        0,
        &[Binding::whole(0, 7, Access::Dead)],
        FAIL,
    );
    assert_eq!(claims(&w, 7), []);
    assert_eq!(w.stats().live_failures, 0);
}

#[test]
fn a_dead_binding_is_not_released() {
    let mut w = World::default();
    w.alloc(0, 7, 16).unwrap();
    go(&mut w, "fill", 0, &[writes(0, 7)], FAIL);
    go(
        &mut w,
        "k",
        0,
        &[Binding::whole(0, 7, Access::Dead)],
        Outcome::Ok,
    );
    assert_eq!(claims(&w, 7), [(0, 16, 1, None)]);
}

#[test]
fn an_unresolved_dead_binding_is_counted() {
    let mut w = World::default();
    go(
        &mut w,
        "k",
        0,
        &[Binding::whole(0, 99, Access::Dead)],
        Outcome::Ok,
    );
    assert_eq!(w.stats().unresolved_bindings, 1);
}

#[test]
fn the_allocation_store_counts_its_live_allocations() {
    let mut w = World::default();
    assert!(w.allocations().is_empty());
    w.alloc(0, 1, 16).unwrap();
    w.alloc(1, 2, 16).unwrap();
    assert_eq!(
        (w.allocations().len(), w.allocations().is_empty()),
        (2, false)
    );
    w.free(1).unwrap();
    w.free(2).unwrap();
    assert_eq!(
        (w.allocations().len(), w.allocations().is_empty()),
        (0, true)
    );
}
