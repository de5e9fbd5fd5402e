//! The seed's stream-pool surface (`src/pool.rs`, from
//! `seed-stream-base.rs.txt`) and its agreement with the world on claims
//! (SPEC.md §1–3 through the shared `ClaimSet`).

use taintworld::pool::{
    self, PoolError, StreamAllocations, StreamFactory, StreamId, StreamMemory, StreamPool,
};
use taintworld::{
    Access, Binding, Error, ErrorInfo, FailureGraph, Launch, MemoryRef, Outcome, StreamRef, World,
};

/// A factory that counts its creations, tags each stream with the creation
/// number and `tag`, and fails while `fail` is set.
#[derive(Debug, Default)]
struct Factory {
    created: u32,
    tag: u32,
    fail: bool,
}

#[derive(Debug, Default)]
struct Tagged {
    serial: u32,
    tag: u32,
    memory: StreamAllocations,
    /// A memory id whose bytes this stream says a failure claims that the
    /// graph no longer holds: a stream memory out of step with the graph.
    out_of_step: Option<(u64, taintworld::FailureId)>,
}

impl StreamFactory for Factory {
    type Stream = Tagged;
    type Error = ErrorInfo;
    fn create(&mut self) -> Result<Tagged, ErrorInfo> {
        if self.fail {
            return Err(ErrorInfo::new("device", "create", "poisoned"));
        }
        self.created += 1;
        Ok(Tagged {
            serial: self.created,
            tag: self.tag,
            memory: StreamAllocations::default(),
            out_of_step: None,
        })
    }
}

impl StreamMemory for Tagged {
    fn failure(&self, b: &Binding, g: &FailureGraph) -> Option<taintworld::FailureId> {
        if let Some((m, f)) = self.out_of_step
            && b.memory == MemoryRef::Id(m)
        {
            return Some(f);
        }
        self.memory.failure(b, g)
    }
    fn taint(&mut self, b: &Binding, f: taintworld::FailureId, g: &mut FailureGraph) {
        self.memory.taint(b, f, g)
    }
    fn written(&mut self, b: &Binding, g: &mut FailureGraph) {
        self.memory.written(b, g)
    }
}

/// The claims of pool memory `m` on stream `s` as `(start, end, failure)`.
fn claims(p: &StreamPool<Factory>, g: &FailureGraph, s: u64, m: u64) -> Vec<(u64, u64, u64)> {
    let a = p
        .try_get(&StreamId { value: s })
        .unwrap()
        .memory
        .get(m)
        .unwrap();
    a.claims
        .iter()
        .map(|c| (c.start, c.end, g.failures.get(c.failure).unwrap().id.get()))
        .collect()
}

/// A pool of 4 regular slots and `num_special` special ones, and an empty
/// failure graph beside it.
fn fresh(num_special: u8) -> (StreamPool<Factory>, FailureGraph) {
    let pool = StreamPool::new(Factory::default(), 4, num_special).unwrap();
    (pool, FailureGraph::new())
}

fn id(value: u64) -> StreamId {
    StreamId { value }
}

#[test]
fn streams_are_created_lazily_through_the_factory_once_per_slot() {
    let mut p = StreamPool::new(Factory::default(), 4, 0).unwrap();
    assert_eq!(p.streams().count(), 0);
    assert_eq!(p.get_mut(&id(1)).serial, 1);
    assert_eq!(p.get_mut(&id(5)).serial, 1); // 5 % 4 == 1: the same stream
    assert_eq!(p.get_mut(&id(2)).serial, 2);
    assert_eq!(p.factory_mut().created, 2);
}

#[test]
fn a_failing_factorys_error_reaches_get_or_create_and_the_slot_stays_empty_for_the_next_call() {
    let mut p = StreamPool::new(
        Factory {
            fail: true,
            ..Factory::default()
        },
        4,
        1,
    )
    .unwrap();
    let err = p.get_or_create(&id(0)).unwrap_err();
    assert_eq!(err, ErrorInfo::new("device", "create", "poisoned"));
    assert!(p.get_or_create_special(0).is_err());
    assert_eq!(p.streams().count(), 0);
    // The seed retries a failed creation on the next call.
    p.factory_mut().fail = false;
    assert_eq!(p.get_or_create(&id(4)).unwrap().serial, 1, "slot 0 again");
    assert_eq!(p.get_or_create_special(0).unwrap().serial, 2);
    assert_eq!(p.stream_ids().collect::<Vec<_>>(), [id(0)]);
}

#[test]
fn get_or_create_special_wraps_the_factorys_error_in_create() {
    let mut p = StreamPool::new(
        Factory {
            fail: true,
            ..Factory::default()
        },
        4,
        1,
    )
    .unwrap();
    let err = p.get_or_create_special(0).unwrap_err();
    assert_eq!(
        err,
        PoolError::Create(ErrorInfo::new("device", "create", "poisoned"))
    );
    // The factory's error is in the message, so it survives `?` into a
    // boxed error, as the seed's returned error did.
    assert_eq!(
        err.to_string(),
        r#"a stream could not be created: ErrorInfo { kind: "device", kernel: "create", message: "poisoned" }"#
    );
}

#[test]
fn get_or_create_special_past_num_special_is_out_of_range() {
    let mut p = StreamPool::new(Factory::default(), 4, 2).unwrap();
    let err = p.get_or_create_special(2).unwrap_err();
    assert_eq!(
        err,
        PoolError::SpecialOutOfRange {
            index: 2,
            num_special: 2
        }
    );
    assert!(err.to_string().contains("special stream 2"));
    assert_eq!(p.factory_mut().created, 0);
}

/// A pool of one special stream refuses special stream 1 naming the
/// setting, word for word: "num_special is 1", never "the pool has 1".
#[test]
fn special_stream_one_of_a_pool_of_one_says_num_special_is_1() {
    let mut p = StreamPool::new(Factory::default(), 4, 1).unwrap();
    let err = p.get_or_create_special(1).unwrap_err();
    assert_eq!(
        err.to_string(),
        "special stream 1 is out of range: num_special is 1"
    );
}

#[test]
fn special_streams_sit_after_the_regular_slots() {
    let mut p = StreamPool::new(Factory::default(), 4, 2).unwrap();
    assert_eq!(p.num_special(), 2);
    p.get_or_create_special(1).unwrap().tag = 99;
    assert_eq!(p.get_mut_index(5).tag, 99);
    assert_eq!(p.get_special(1).tag, 99);
    // No regular id reaches slot 5, and special streams have no stream id.
    assert!(p.try_get(&id(5)).is_none());
    assert_eq!(p.stream_ids().count(), 0);
    assert_eq!(p.streams().count(), 1);
}

#[test]
fn try_get_and_try_get_mut_never_create_a_stream() {
    let mut p = StreamPool::new(Factory::default(), 4, 0).unwrap();
    assert!(p.try_get(&id(3)).is_none());
    assert!(p.try_get_mut(&id(3)).is_none());
    assert_eq!((p.factory_mut().created, p.streams().count()), (0, 0));
    p.get_mut(&id(3));
    assert_eq!(p.try_get(&id(7)).unwrap().serial, 1);
}

#[test]
fn stream_ids_round_trip_through_get_mut_to_the_same_slot() {
    let mut p = StreamPool::new(Factory::default(), 4, 1).unwrap();
    p.get_mut(&id(6)).tag = 6; // slot 2
    p.get_mut(&id(9)).tag = 9; // slot 1
    p.get_special(0);
    let ids: Vec<StreamId> = p.stream_ids().collect();
    assert_eq!(ids, [id(1), id(2)]);
    let tags: Vec<u32> = ids.iter().map(|i| p.get_mut(i).tag).collect();
    assert_eq!(tags, [9, 6]);
    assert_eq!(p.factory_mut().created, 3);
}

#[test]
fn streams_and_streams_mut_iterate_initialized_streams_only() {
    let mut p = StreamPool::new(Factory::default(), 8, 2).unwrap();
    p.get_mut(&id(5));
    p.get_special(1);
    p.streams_mut().for_each(|s| s.tag = 7);
    let seen: Vec<(u32, u32)> = p.streams().map(|s| (s.serial, s.tag)).collect();
    assert_eq!(seen, [(1, 7), (2, 7)]);
}

#[test]
fn factory_mut_changes_only_streams_created_later() {
    let mut p = StreamPool::new(Factory::default(), 4, 0).unwrap();
    p.get_mut(&id(0));
    p.factory_mut().tag = 3;
    p.get_mut(&id(1));
    assert_eq!((p.get_mut(&id(0)).tag, p.get_mut(&id(1)).tag), (0, 3));
}

#[test]
fn stream_index_is_the_id_modulo_max_streams() {
    let p = StreamPool::new(Factory::default(), 3, 2).unwrap();
    let got: Vec<usize> = [0, 2, 3, 7, u64::MAX]
        .iter()
        .map(|&v| p.stream_index(&id(v)))
        .collect();
    assert_eq!(got, [0, 2, 0, 1, (u64::MAX % 3) as usize]);
    assert_eq!(pool::stream_index(&id(10), 4), 2);
}

#[test]
fn a_pool_of_zero_streams_is_rejected() {
    let err = StreamPool::new(Factory::default(), 0, 3).unwrap_err();
    assert_eq!(err, Error::ZeroStreams);
}

#[test]
#[should_panic(expected = "out of range")]
fn get_mut_index_past_the_last_slot_panics() {
    let mut p = StreamPool::new(Factory::default(), 4, 1).unwrap();
    p.get_mut_index(5);
}

/// A pool of one slot is out of range at slot 1, and says so naming the
/// settings that count the slots, not "the pool has 1".
#[test]
#[should_panic(expected = "stream slot 1 is out of range: max_streams + num_special is 1")]
fn get_mut_index_past_a_pool_of_one_slot_names_max_streams_and_num_special() {
    let mut p = StreamPool::new(Factory::default(), 1, 0).unwrap();
    p.get_mut_index(1);
}

#[test]
fn taint_with_lands_the_claim_on_the_stream_that_allocated_the_binding() {
    let (mut p, mut g) = fresh(0);
    p.get_mut(&id(0)).memory.alloc(9, 64).unwrap(); // the failing stream has a memory 9 too
    p.get_mut(&id(1)).memory.alloc(9, 64).unwrap();
    let error = ErrorInfo::new("compile", "fill", "bad PTX");
    let key = g
        .failures
        .find_or_mint(&error.kind, &error.kernel, &error.message);
    let f = g.failures.get(key).unwrap().id;
    pool::taint_with(
        &mut p,
        f,
        [&Binding::range(1, 9, 0, 32, Access::Write)].into_iter(),
        &mut g,
    );
    assert_eq!(claims(&p, &g, 1, 9), [(0, 32, 1)]);
    assert_eq!(claims(&p, &g, 0, 9), []);
    assert_eq!(g.failures.get(key).unwrap().carriers, 1);
}

#[test]
fn freeing_pool_memory_takes_its_claims_and_their_carriers_and_an_unknown_id_is_an_error() {
    let (mut p, mut g) = fresh(0);
    let memory = &mut p.get_mut(&id(1)).memory;
    memory.alloc(9, 64).unwrap();
    memory.alloc(10, 64).unwrap();
    let out = [
        Binding::whole(1, 9, Access::Write),
        Binding::whole(1, 10, Access::Write),
    ];
    let f = taint_error(
        &mut p,
        &mut g,
        ErrorInfo::new("compile", "fill", "bad PTX"),
        &out,
    );
    let key = g.failures.key_of(f).unwrap();
    assert_eq!(g.failures.get(key).unwrap().carriers, 2);
    let memory = &mut p.get_mut(&id(1)).memory;
    memory.free(9, &mut g).unwrap();
    assert!(memory.get(9).is_none());
    assert_eq!(g.failures.get(key).unwrap().carriers, 1);
    assert_eq!(
        memory.free(9, &mut g),
        Err(Error::UnknownMemory { memory: 9 })
    );
    memory.free(10, &mut g).unwrap();
    // Nothing carries the failure any more: the next prune lets it go.
    assert_eq!(g.prune(), 1);
    assert!(g.failures.is_empty());
}

/// A live memory id is bad input to the pool's allocation as it is to the
/// world's (SPEC §5): the allocation it names keeps its size and claims.
#[test]
fn allocating_a_live_pool_memory_id_again_is_an_error_that_changes_nothing() {
    let (mut p, mut g) = fresh(0);
    p.get_mut(&id(1)).memory.alloc(9, 64).unwrap();
    let out = [Binding::range(1, 9, 0, 32, Access::Write)];
    let f = taint_error(
        &mut p,
        &mut g,
        ErrorInfo::new("compile", "fill", "bad PTX"),
        &out,
    );
    let memory = &mut p.get_mut(&id(1)).memory;
    assert_eq!(
        memory.alloc(9, 128),
        Err(Error::DuplicateMemory { memory: 9 })
    );
    assert_eq!(memory.get(9).map(|a| a.size), Some(64));
    assert_eq!(claims(&p, &g, 1, 9), [(0, 32, f.get())]);
    // Once freed, the id is free to allocate again, clean.
    let memory = &mut p.get_mut(&id(1)).memory;
    memory.free(9, &mut g).unwrap();
    memory.alloc(9, 128).unwrap();
    assert_eq!(memory.get(9).map(|a| a.size), Some(128));
    assert_eq!(claims(&p, &g, 1, 9), []);
}

#[test]
fn taint_with_skips_a_binding_on_a_never_initialized_slot() {
    let (mut p, mut g) = fresh(0);
    p.get_mut(&id(1)).memory.alloc(9, 64).unwrap();
    let f = taint_error(
        &mut p,
        &mut g,
        ErrorInfo::new("compile", "fill", "x"),
        &[Binding::whole(2, 9, Access::Write)],
    );
    assert_eq!(f.get(), 1);
    assert!(p.try_get(&id(2)).is_none());
    assert_eq!(claims(&p, &g, 1, 9), []);
}

#[test]
fn taint_mints_its_failure_and_prunes_it_when_it_claimed_nothing() {
    let (mut p, mut g) = fresh(0);
    let f = taint_error(&mut p, &mut g, ErrorInfo::new("compile", "fill", "x"), &[]);
    assert_eq!((f.get(), g.failures.minted()), (1, 1));
    assert!(g.failures.is_empty());
    let again = taint_error(&mut p, &mut g, ErrorInfo::new("compile", "fill", "x"), &[]);
    assert_eq!(again.get(), 2);
}

#[test]
fn taint_reuses_a_live_failure_of_the_same_identity() {
    let (mut p, mut g) = fresh(0);
    p.get_mut(&id(0)).memory.alloc(1, 8).unwrap();
    p.get_mut(&id(0)).memory.alloc(2, 8).unwrap();
    let e = ErrorInfo::new("compile", "fill", "x");
    let a = taint_error(
        &mut p,
        &mut g,
        e.clone(),
        &[Binding::whole(0, 1, Access::Write)],
    );
    let b = taint_error(&mut p, &mut g, e, &[Binding::whole(0, 2, Access::Write)]);
    assert_eq!((a.get(), b.get()), (1, 1));
    let f = g.failures.get(g.failures.key_of(a).unwrap()).unwrap();
    assert_eq!((f.occurrences, f.carriers), (2, 2));
}

#[test]
fn written_releases_only_the_bytes_it_names() {
    let (mut p, mut g) = fresh(0);
    p.get_mut(&id(0)).memory.alloc(9, 64).unwrap();
    taint_error(
        &mut p,
        &mut g,
        ErrorInfo::new("compile", "fill", "x"),
        &[Binding::whole(0, 9, Access::Write)],
    );
    pool::written(
        &mut p,
        [&Binding::range(0, 9, 16, 32, Access::Write)].into_iter(),
        &mut g,
    );
    assert_eq!(claims(&p, &g, 0, 9), [(0, 16, 1), (32, 64, 1)]);
    pool::written(
        &mut p,
        [&Binding::range(0, 9, 0, 64, Access::Write)].into_iter(),
        &mut g,
    );
    g.prune();
    assert!(g.failures.is_empty());
}

#[test]
fn read_failure_finds_the_first_read_binding_a_failure_claims() {
    let (mut p, mut g) = fresh(0);
    for m in 1..=3 {
        p.get_mut(&id(0)).memory.alloc(m, 16).unwrap();
    }
    let e1 = ErrorInfo::new("compile", "a", "x");
    let e2 = ErrorInfo::new("compile", "b", "y");
    taint_error(&mut p, &mut g, e1, &[Binding::whole(0, 1, Access::Write)]);
    taint_error(
        &mut p,
        &mut g,
        e2.clone(),
        &[Binding::range(0, 3, 8, 16, Access::Write)],
    );
    let bindings = [
        Binding::whole(0, 1, Access::Write), // tainted, but not a read
        Binding::whole(0, 2, Access::Read),  // clean
        Binding::whole(3, 3, Access::Read),  // a never-initialized slot
        Binding::whole(0, 3, Access::ReadWrite),
        Binding::whole(0, 1, Access::Read),
    ];
    let hit = pool::read_failure(&p, bindings.iter(), &g).unwrap();
    assert_eq!((hit.failure.get(), hit.needed, hit.error), (2, 3, e2));
    assert!(pool::read_failure(&p, bindings[..3].iter(), &g).is_none());
}

#[test]
fn a_special_streams_memory_is_reached_through_a_special_binding() {
    let (mut p, mut g) = fresh(1);
    p.get_special(0).memory.alloc(9, 8).unwrap();
    let b = Binding::whole(StreamRef::Special(0), 9, Access::ReadWrite);
    let f = taint_error(&mut p, &mut g, ErrorInfo::new("compile", "fill", "x"), &[b]);
    assert_eq!(
        pool::read_failure(&p, [&b].into_iter(), &g)
            .unwrap()
            .failure,
        f
    );
    assert_eq!(p.get_special(0).memory.get(9).unwrap().claims.len(), 1);
}

#[test]
fn the_pool_path_and_the_world_agree_on_claims_for_one_taint_and_release_sequence() {
    let (mut p, mut g) = fresh(0);
    p.get_mut(&id(1)).memory.alloc(9, 64).unwrap();
    let mut w = World::new(taintworld::Config {
        max_streams: 4,
        ..Default::default()
    })
    .unwrap();
    w.alloc(1, 9, 64).unwrap();
    let steps: [(u64, u64, bool); 5] = [
        (0, 10, false),
        (10, 20, false),
        (40, 64, false),
        (5, 8, true),
        (15, 45, true),
    ];
    for (start, end, ok) in steps {
        let b = [Binding::range(1, 9, start, end, Access::Write)];
        if ok {
            pool::written(&mut p, b.iter(), &mut g);
            g.prune();
        } else {
            pool::taint(
                &mut p,
                ErrorInfo::new("compile", "fill", "bad PTX"),
                b.iter(),
                &mut g,
            );
        }
        let outcome = if ok {
            Outcome::Ok
        } else {
            Outcome::Failed {
                kind: "compile",
                message: "bad PTX",
            }
        };
        w.launch(&Launch {
            kernel: "fill",
            stream: 1.into(),
            bindings: &b,
            outcome,
        })
        .unwrap();
        let world: Vec<_> = w
            .claims(9)
            .unwrap()
            .map(|c| (c.start, c.end, c.failure.get()))
            .collect();
        assert_eq!(
            claims(&p, &g, 1, 9),
            world,
            "after [{start}, {end}) ok={ok}"
        );
    }
    assert_eq!(claims(&p, &g, 1, 9), [(0, 5, 1), (8, 15, 1), (45, 64, 1)]);
    assert_eq!(g.failures.minted(), w.stats().failures_minted);
}

/// [`pool::taint`] of `bindings` under the error `(kind, kernel, "x")`.
fn taint_as(
    p: &mut StreamPool<Factory>,
    g: &mut FailureGraph,
    (kind, kernel): (&str, &str),
    bindings: &[Binding],
) -> taintworld::FailureId {
    taint_error(p, g, ErrorInfo::new(kind, kernel, "x"), bindings)
}

/// `pool::taint` of `error` over `bindings`.
fn taint_error(
    p: &mut StreamPool<Factory>,
    g: &mut FailureGraph,
    error: ErrorInfo,
    bindings: &[Binding],
) -> taintworld::FailureId {
    pool::taint(p, error, bindings.iter(), g)
}

/// A pool whose factory fails, with `num_special` special slots.
fn failing_factory_pool(num_special: u8) -> StreamPool<Factory> {
    let factory = Factory {
        fail: true,
        ..Factory::default()
    };
    StreamPool::new(factory, 4, num_special).unwrap()
}

#[test]
#[should_panic(expected = "could not be created for slot 1")]
fn get_mut_panics_when_the_factory_fails() {
    failing_factory_pool(0).get_mut(&id(5));
}

#[test]
#[should_panic(expected = "could not be created for slot 2")]
fn get_mut_index_panics_when_the_factory_fails() {
    failing_factory_pool(0).get_mut_index(2);
}

#[test]
#[should_panic(expected = "could not be created for slot 4")]
fn get_special_panics_when_the_factory_fails() {
    failing_factory_pool(1).get_special(0);
}

#[test]
#[should_panic(expected = "special stream 2 is out of range: num_special is 2")]
fn get_special_past_num_special_panics() {
    let mut p = StreamPool::new(Factory::default(), 4, 2).unwrap();
    p.get_special(2);
}

#[test]
fn get_or_create_creates_a_slots_stream_once_and_folds_the_id() {
    let mut p = StreamPool::new(Factory::default(), 4, 0).unwrap();
    p.get_or_create(&id(2)).unwrap().tag = 7;
    let again = p.get_or_create(&id(6)).unwrap(); // 6 % 4 == 2
    assert_eq!((again.serial, again.tag), (1, 7));
    assert_eq!(p.factory_mut().created, 1);
}

#[test]
fn try_get_mut_reaches_an_initialized_stream_by_any_id_that_folds_onto_it() {
    let mut p = StreamPool::new(Factory::default(), 4, 0).unwrap();
    p.get_mut(&id(3));
    p.try_get_mut(&id(7)).unwrap().tag = 9;
    assert_eq!(p.get_mut(&id(3)).tag, 9);
    assert_eq!(p.factory_mut().created, 1);
}

#[test]
fn the_free_stream_index_of_a_pool_of_no_streams_is_slot_zero() {
    assert_eq!(pool::stream_index(&id(u64::MAX), 0), 0);
}

#[test]
fn taint_and_taint_with_take_every_binding_of_the_call() {
    let (mut p, mut g) = fresh(0);
    p.get_mut(&id(0)).memory.alloc(1, 16).unwrap();
    p.get_mut(&id(1)).memory.alloc(2, 16).unwrap();
    p.get_mut(&id(1)).memory.alloc(3, 16).unwrap();
    let f = taint_as(
        &mut p,
        &mut g,
        ("compile", "fill"),
        &[
            Binding::whole(0, 1, Access::Write),
            Binding::range(1, 2, 4, 8, Access::Write),
        ],
    );
    pool::taint_with(
        &mut p,
        f,
        [
            &Binding::range(1, 2, 12, 16, Access::Write),
            &Binding::whole(1, 3, Access::ReadWrite),
        ]
        .into_iter(),
        &mut g,
    );
    assert_eq!(claims(&p, &g, 0, 1), [(0, 16, 1)]);
    assert_eq!(claims(&p, &g, 1, 2), [(4, 8, 1), (12, 16, 1)]);
    assert_eq!(claims(&p, &g, 1, 3), [(0, 16, 1)]);
    assert_eq!(
        g.failures
            .get(g.failures.key_of(f).unwrap())
            .unwrap()
            .carriers,
        3
    );
}

#[test]
fn a_runtimes_stream_id_converts_into_the_stream_a_binding_names() {
    let (mut p, mut g) = fresh(0);
    p.get_mut(&id(6)).memory.alloc(1, 16).unwrap();
    let out = Binding::whole(id(6), 1, Access::Write);
    assert_eq!(out.stream, StreamRef::Id(6));
    taint_as(&mut p, &mut g, ("compile", "fill"), &[out]);
    // 6 folds onto slot 2, where the memory was allocated.
    assert_eq!(claims(&p, &g, 2, 1), [(0, 16, 1)]);
}

#[test]
fn the_free_functions_take_each_binding_whatever_its_access_and_only_the_read_check_looks_at_it() {
    let (mut p, mut g) = fresh(0);
    p.get_mut(&id(0)).memory.alloc(1, 16).unwrap();
    let dead = Binding::whole(0, 1, Access::Dead);
    let read = Binding::range(0, 1, 0, 8, Access::Read);
    let f = taint_as(&mut p, &mut g, ("compile", "fill"), &[dead]);
    assert_eq!(claims(&p, &g, 0, 1), [(0, 16, 1)]);
    // The read check passes over the dead binding and finds the claim
    // through the one that reads.
    assert_eq!(pool::read_failure(&p, [&dead].into_iter(), &g), None);
    assert_eq!(
        pool::read_failure(&p, [&read].into_iter(), &g).map(|r| r.failure),
        Some(f)
    );
    // `written` of a binding that only reads still releases its bytes.
    pool::written(&mut p, [&read].into_iter(), &mut g);
    assert_eq!(claims(&p, &g, 0, 1), [(8, 16, 1)]);
}

#[test]
fn taint_prunes_its_failure_when_its_bindings_claimed_nothing() {
    let (mut p, mut g) = fresh(0);
    p.get_mut(&id(0)).memory.alloc(1, 16).unwrap();
    let f = taint_as(
        &mut p,
        &mut g,
        ("compile", "fill"),
        &[
            Binding::whole(2, 1, Access::Write), // a never-initialized slot
            Binding::whole(0, 8, Access::Write), // no memory 8
        ],
    );
    assert_eq!((f.get(), g.failures.minted()), (1, 1));
    assert!(g.failures.is_empty());
    assert_eq!(claims(&p, &g, 0, 1), []);
}

#[test]
fn taint_prunes_only_its_own_failure_and_leaves_the_rest_to_the_caller() {
    let (mut p, mut g) = fresh(0);
    p.get_mut(&id(0)).memory.alloc(1, 16).unwrap();
    let a = taint_as(
        &mut p,
        &mut g,
        ("compile", "fill"),
        &[Binding::whole(0, 1, Access::Write)],
    );
    // `a` loses its last carrier; the caller has not pruned yet.
    pool::written(
        &mut p,
        [&Binding::whole(0, 1, Access::Write)].into_iter(),
        &mut g,
    );
    let b = taint_as(&mut p, &mut g, ("launch", "gelu"), &[]);
    assert_eq!((a.get(), b.get()), (1, 2));
    assert!(g.failures.key_of(a).is_some(), "a is the caller's to prune");
    assert!(g.failures.key_of(b).is_none(), "b claimed nothing");
    assert_eq!(g.prune(), 1);
    assert!(g.failures.is_empty());
}

#[test]
fn a_stream_memory_taint_sets_another_failure_over_a_claim_rather_than_adding_it() {
    let (mut p, mut g) = fresh(0);
    p.get_mut(&id(0)).memory.alloc(1, 16).unwrap();
    let a = taint_as(
        &mut p,
        &mut g,
        ("compile", "fill"),
        &[Binding::whole(0, 1, Access::Write)],
    );
    let b = taint_as(
        &mut p,
        &mut g,
        ("launch", "gelu"),
        &[Binding::range(0, 1, 4, 12, Access::Write)],
    );
    assert_eq!((a.get(), b.get()), (1, 2));
    assert_eq!(claims(&p, &g, 0, 1), [(0, 4, 1), (4, 12, 2), (12, 16, 1)]);
    let carriers = |f| {
        g.failures
            .get(g.failures.key_of(f).unwrap())
            .unwrap()
            .carriers
    };
    assert_eq!((carriers(a), carriers(b)), (1, 1));
}

#[test]
fn written_skips_a_never_initialized_slot_and_releases_only_on_the_allocating_stream() {
    let (mut p, mut g) = fresh(0);
    p.get_mut(&id(0)).memory.alloc(9, 16).unwrap();
    p.get_mut(&id(1)).memory.alloc(9, 16).unwrap();
    for s in [0, 1] {
        taint_as(
            &mut p,
            &mut g,
            ("compile", "fill"),
            &[Binding::whole(s, 9, Access::Write)],
        );
    }
    pool::written(
        &mut p,
        [
            &Binding::whole(2, 9, Access::Write), // a never-initialized slot
            &Binding::whole(1, 9, Access::Write),
        ]
        .into_iter(),
        &mut g,
    );
    assert!(p.try_get(&id(2)).is_none(), "written creates no stream");
    assert_eq!(claims(&p, &g, 0, 9), [(0, 16, 1)]);
    assert_eq!(claims(&p, &g, 1, 9), []);
}

#[test]
fn read_failure_passes_over_a_failure_the_graph_no_longer_holds() {
    let (mut p, mut g) = fresh(0);
    p.get_mut(&id(0)).memory.alloc(2, 16).unwrap();
    // Failure 1 claims nothing and is pruned at once.
    let gone = taint_as(&mut p, &mut g, ("launch", "gelu"), &[]);
    p.get_mut(&id(0)).out_of_step = Some((1, gone));
    let e = ErrorInfo::new("compile", "fill", "x");
    taint_error(
        &mut p,
        &mut g,
        e.clone(),
        &[Binding::whole(0, 2, Access::Write)],
    );
    let bindings = [
        Binding::whole(0, 1, Access::Read), // failure 1: not in the graph
        Binding::whole(0, 2, Access::Read),
    ];
    let hit = pool::read_failure(&p, bindings.iter(), &g).unwrap();
    assert_eq!((hit.failure.get(), hit.needed, hit.error), (2, 2, e));
    assert!(pool::read_failure(&p, bindings[..1].iter(), &g).is_none());
}

#[test]
fn taint_mints_a_new_id_for_an_identity_nothing_holds_any_more() {
    let (mut p, mut g) = fresh(0);
    p.get_mut(&id(0)).memory.alloc(1, 16).unwrap();
    let out = [Binding::whole(0, 1, Access::Write)];
    let a = taint_as(&mut p, &mut g, ("compile", "fill"), &out);
    pool::written(&mut p, out.iter(), &mut g);
    // Failure 1 is unheld but not pruned: SPEC §4 counts it gone, so the
    // same error mints failure 2, as the world would.
    let b = taint_as(&mut p, &mut g, ("compile", "fill"), &out);
    assert_eq!((a.get(), b.get(), g.failures.minted()), (1, 2, 2));
    assert_eq!(claims(&p, &g, 0, 1), [(0, 16, 2)]);
    // Failure 1 stays, unheld and with its one occurrence, until the
    // caller prunes, as the seed's `taint` left a failure it did not mint.
    let old = g.failures.get(g.failures.key_of(a).unwrap()).unwrap();
    assert_eq!((old.occurrences, old.held()), (1, false));
    let new = g.failures.get(g.failures.key_of(b).unwrap()).unwrap();
    assert_eq!(new.occurrences, 1);
    assert_eq!(g.prune(), 1);
    assert!(g.failures.key_of(a).is_none());
    assert!(g.failures.key_of(b).is_some());
}

/// Memories 1 to 3 on stream 0 and their write bindings; "fill" fails on
/// memory 1 (failure 1), memory 1 is written again, and "fill" fails on
/// memory 2: failure 2, since nothing held failure 1 — which the caller
/// has not pruned. Returns the bindings and the two ids.
fn an_old_id_and_a_new_one(
    p: &mut StreamPool<Factory>,
    g: &mut FailureGraph,
) -> (
    [[Binding; 1]; 3],
    taintworld::FailureId,
    taintworld::FailureId,
) {
    for m in 1..=3 {
        p.get_mut(&id(0)).memory.alloc(m, 8).unwrap();
    }
    let [a, b, c] = [1, 2, 3].map(|m| [Binding::whole(0, m, Access::Write)]);
    let first = taint_as(p, g, ("compile", "fill"), &a);
    pool::written(p, a.iter(), g);
    let second = taint_as(p, g, ("compile", "fill"), &b);
    assert_eq!((first.get(), second.get()), (1, 2));
    ([a, b, c], first, second)
}

#[test]
fn an_id_the_caller_has_not_pruned_still_takes_a_taint_after_its_error_minted_a_new_one() {
    let (mut p, mut g) = fresh(0);
    let ([_, b, c], first, second) = an_old_id_and_a_new_one(&mut p, &mut g);
    // The backend still holds failure 1 and taints with it: it lands.
    pool::taint_with(&mut p, first, c.iter(), &mut g);
    assert_eq!(claims(&p, &g, 0, 3), [(0, 8, 1)]);
    assert_eq!(claims(&p, &g, 0, 2), [(0, 8, 2)]);
    // Held again, it outlives a prune. Both are held: the error occurs
    // again as the one minted last.
    assert_eq!(g.prune(), 0);
    assert_eq!(taint_as(&mut p, &mut g, ("compile", "fill"), &b), second);
}

/// Whichever way the backend taints with the old id — the free
/// `taint_with`, or its stream's own `StreamMemory::taint` — the failure it
/// holds again is found by its error again.
#[test]
fn a_failure_held_again_through_its_old_id_is_found_by_its_error_once_the_newer_one_goes() {
    for (prune, through_stream) in [(true, false), (false, false), (true, true), (false, true)] {
        let case = format!("prune {prune}, through the stream {through_stream}");
        let (mut p, mut g) = fresh(0);
        let ([a, b, c], first, second) = an_old_id_and_a_new_one(&mut p, &mut g);
        if through_stream {
            p.get_mut(&id(0)).taint(&c[0], first, &mut g);
        } else {
            pool::taint_with(&mut p, first, c.iter(), &mut g);
        }
        // Failure 2 loses its carrier; failure 1 is carried (memory 3).
        pool::written(&mut p, b.iter(), &mut g);
        if prune {
            assert_eq!(g.prune(), 1);
            assert!(g.failures.key_of(second).is_none());
            assert_eq!(
                g.failures.find("compile", "fill", "x"),
                g.failures.key_of(first),
                "{case}"
            );
        }
        // SPEC §4: the held failure of that identity occurs again.
        let again = taint_as(&mut p, &mut g, ("compile", "fill"), &a);
        assert_eq!(again, first, "{case}");
        assert_eq!(g.failures.minted(), 2, "{case}");
        let f = g.failures.get(g.failures.key_of(first).unwrap()).unwrap();
        assert_eq!(f.occurrences, 2, "{case}");
        assert_eq!(claims(&p, &g, 0, 1), [(0, 8, 1)]);
    }
}

/// A fresh pool with memories 1 and 2 of 8 bytes on stream 0, and a write
/// binding of each.
fn two_memories() -> (StreamPool<Factory>, FailureGraph, [[Binding; 1]; 2]) {
    let (mut p, g) = fresh(0);
    for m in 1..=2 {
        p.get_mut(&id(0)).memory.alloc(m, 8).unwrap();
    }
    let bindings = [1, 2].map(|m| [Binding::whole(0, m, Access::Write)]);
    (p, g, bindings)
}

/// A failure the caller's search took out of the identity index while
/// nothing held it (a taint of its error that claimed nothing), then held
/// again through the stream's own `StreamMemory::taint`, is found by its
/// error, not only through the free `taint_with`.
#[test]
fn a_failure_held_again_through_a_stream_memory_taint_is_found_by_its_error() {
    let (mut p, mut g, [a, b]) = two_memories();
    let first = taint_as(&mut p, &mut g, ("compile", "fill"), &a);
    pool::written(&mut p, a.iter(), &mut g);
    let nowhere = [Binding::whole(0, 99, Access::Write)];
    let none = taint_as(&mut p, &mut g, ("compile", "fill"), &nowhere);
    assert_eq!(
        none.get(),
        2,
        "nothing held failure 1, so the error minted anew"
    );
    assert_eq!(g.failures.find("compile", "fill", "x"), None);
    p.get_mut(&id(0)).taint(&b[0], first, &mut g);
    assert_eq!(
        g.failures.find("compile", "fill", "x"),
        g.failures.key_of(first)
    );
    assert_eq!(taint_as(&mut p, &mut g, ("compile", "fill"), &a), first);
}

/// While a failure held again waits to go back into the identity index
/// (until the next taint by error), `find` names a held failure of that
/// very error, and nothing for another error: neither a parked failure
/// nothing holds nor one of another error.
#[test]
fn find_names_only_a_held_failure_of_its_error_while_one_held_again_waits_to_go_back() {
    let (mut p, mut g, [a, b]) = two_memories();
    let nowhere = [Binding::whole(0, 99, Access::Write)];
    // Each error's failure is released, then passed over (and taken out of
    // the index) by a taint of its error that claims nothing.
    let mut parked = |error: (&str, &str)| {
        let f = taint_as(&mut p, &mut g, error, &a);
        pool::written(&mut p, a.iter(), &mut g);
        taint_as(&mut p, &mut g, error, &nowhere);
        f
    };
    let gelu = parked(("launch", "gelu"));
    let fill = parked(("compile", "fill"));
    p.get_mut(&id(0)).taint(&b[0], fill, &mut g);
    assert_eq!(
        g.failures.find("compile", "fill", "x"),
        g.failures.key_of(fill)
    );
    assert_eq!(
        g.failures.find("launch", "gelu", "x"),
        None,
        "failure {gelu} is parked and nothing holds it"
    );
    assert_eq!(g.failures.find("compile", "mm", "x"), None);
}

/// An id the caller has pruned names no error any more: tainting with it
/// changes nothing (the bytes keep what they carried), and tainting by the
/// error mints a new failure that does claim them.
#[test]
fn taint_with_an_id_pruned_since_taints_nothing_and_taint_by_its_error_mints_anew() {
    let (mut p, mut g, [a, b]) = two_memories();
    let first = taint_as(&mut p, &mut g, ("compile", "fill"), &a);
    let other = taint_as(&mut p, &mut g, ("launch", "gelu"), &b);
    pool::written(&mut p, a.iter(), &mut g);
    assert_eq!(g.prune(), 1);
    pool::taint_with(&mut p, first, a.iter().chain(&b), &mut g);
    assert_eq!(claims(&p, &g, 0, 1), []);
    assert_eq!(claims(&p, &g, 0, 2), [(0, 8, other.get())]);
    let again = taint_as(&mut p, &mut g, ("compile", "fill"), &a);
    assert_eq!(again.get(), 3);
    assert_eq!(claims(&p, &g, 0, 1), [(0, 8, 3)]);
}

/// A factory error with `Debug` and nothing else.
#[derive(Debug)]
struct Opaque;

struct OpaqueFactory;

impl StreamFactory for OpaqueFactory {
    type Stream = StreamAllocations;
    type Error = Opaque;
    fn create(&mut self) -> Result<StreamAllocations, Opaque> {
        Err(Opaque)
    }
}

#[test]
fn a_pool_error_is_a_std_error_for_a_factory_error_with_only_debug() {
    let mut p = StreamPool::new(OpaqueFactory, 1, 1).unwrap();
    let err: Box<dyn std::error::Error> = Box::new(p.get_or_create_special(0).unwrap_err());
    assert_eq!(err.to_string(), "a stream could not be created: Opaque");
}

/// A stream memory of the backend's own, keeping its claims in the
/// crate's [`taintworld::ClaimSet`] as `StreamMemory`'s docs ask: the
/// graph counts it as carrying its failures, so `taint` keeps them.
#[derive(Default)]
struct OwnMemory(std::collections::BTreeMap<u64, taintworld::ClaimSet>);

impl StreamMemory for OwnMemory {
    fn failure(&self, b: &Binding, g: &FailureGraph) -> Option<taintworld::FailureId> {
        let MemoryRef::Id(m) = b.memory else {
            return None;
        };
        let claim = self.0.get(&m)?.first_overlap(0, u64::MAX)?;
        g.failures.get(claim.failure).map(|f| f.id)
    }
    fn taint(&mut self, b: &Binding, f: taintworld::FailureId, g: &mut FailureGraph) {
        if let (MemoryRef::Id(m), Some(key)) = (b.memory, g.failures.key_of(f)) {
            let set = self.0.entry(m).or_default();
            let origin = taintworld::Origin::Root;
            set.taint(0, 64, key, origin, &mut g.failures, &mut g.records);
        }
    }
    fn written(&mut self, b: &Binding, g: &mut FailureGraph) {
        if let MemoryRef::Id(m) = b.memory
            && let Some(set) = self.0.get_mut(&m)
        {
            set.release(0, 64, &mut g.failures, &mut g.records);
        }
    }
}

/// A factory whose every stream is a new `S`, for the backends' own
/// stream memories below.
#[derive(Default)]
struct Fresh<S>(std::marker::PhantomData<S>);

impl<S: Default> StreamFactory for Fresh<S> {
    type Stream = S;
    type Error = ErrorInfo;
    fn create(&mut self) -> Result<S, ErrorInfo> {
        Ok(S::default())
    }
}

#[test]
fn a_backends_own_stream_memory_that_keeps_claim_sets_keeps_its_failures() {
    let mut p = StreamPool::new(Fresh::<OwnMemory>::default(), 1, 0).unwrap();
    let mut g = FailureGraph::new();
    p.get_mut(&id(0));
    let out = [Binding::whole(0, 7, Access::Write)];
    let read = Binding::whole(0, 7, Access::Read);
    let f = pool::taint(
        &mut p,
        ErrorInfo::new("compile", "fill", "x"),
        out.iter(),
        &mut g,
    );
    assert_eq!(g.prune(), 0);
    let hit = pool::read_failure(&p, [&read].into_iter(), &g).expect("failure 1 kept");
    assert_eq!((hit.failure, hit.error.kernel.as_str()), (f, "fill"));
    pool::written(&mut p, out.iter(), &mut g);
    assert_eq!(g.prune(), 1);
    assert!(pool::read_failure(&p, [&read].into_iter(), &g).is_none());
}

/// A stream memory that answers every binding, by memory id or by a
/// world's key, with the failure last tainted on it.
#[derive(Default)]
struct Blanket(Option<taintworld::FailureId>);

impl StreamMemory for Blanket {
    fn failure(&self, _: &Binding, _: &FailureGraph) -> Option<taintworld::FailureId> {
        self.0
    }
    fn taint(&mut self, _: &Binding, f: taintworld::FailureId, _: &mut FailureGraph) {
        self.0 = Some(f);
    }
    fn written(&mut self, _: &Binding, _: &mut FailureGraph) {
        self.0 = None;
    }
}

/// A read the backend's stream memory finds tainted names the binding's
/// memory id as what the launch needed, and 0 for a binding by a world's
/// key, for which the pool knows no id (as `ReadFailure::needed` says).
#[test]
fn a_tainted_read_by_a_worlds_key_names_memory_0_as_needed() {
    let mut p = StreamPool::new(Fresh::<Blanket>::default(), 1, 0).unwrap();
    let mut g = FailureGraph::new();
    p.get_mut(&id(0));
    let error = ErrorInfo::new("compile", "fill", "bad PTX");
    let key = g
        .failures
        .find_or_mint(&error.kind, &error.kernel, &error.message);
    let failure = g.failures.get(key).unwrap().id;
    let out = [Binding::whole(0, 7, Access::Write)];
    pool::taint_with(&mut p, failure, out.iter(), &mut g);
    let by_id = Binding::whole(0, 7, Access::Read);
    let by_key = Binding {
        memory: MemoryRef::Key(taintworld::AllocKey::default()),
        ..by_id
    };
    let needed = |b: &Binding| pool::read_failure(&p, [b].into_iter(), &g);
    assert_eq!(
        needed(&by_id),
        Some(pool::ReadFailure {
            failure,
            needed: 7,
            error: error.clone(),
        })
    );
    assert_eq!(
        needed(&by_key),
        Some(pool::ReadFailure {
            failure,
            needed: 0,
            error,
        })
    );
}

/// The pool's own stream memory knows allocations by memory id only: a
/// binding by a world's key is passed over by a taint, a write and a read
/// check alike, and the bindings beside it are not.
#[test]
fn the_pools_own_stream_memory_passes_over_a_binding_by_a_worlds_key() {
    let (mut p, mut g) = fresh(0);
    p.get_mut(&id(1)).memory.alloc(9, 64).unwrap();
    let by_key = |access| Binding {
        memory: MemoryRef::Key(taintworld::AllocKey::default()),
        ..Binding::whole(1, 9, access)
    };
    let out = [by_key(Access::Write), Binding::whole(1, 9, Access::Write)];
    let f = taint_error(
        &mut p,
        &mut g,
        ErrorInfo::new("compile", "fill", "bad PTX"),
        &out,
    );
    assert_eq!(claims(&p, &g, 1, 9), [(0, 64, f.get())]);
    let read = by_key(Access::Read);
    assert_eq!(pool::read_failure(&p, [&read].into_iter(), &g), None);
    pool::written(&mut p, [by_key(Access::Write)].iter(), &mut g);
    assert_eq!(claims(&p, &g, 1, 9), [(0, 64, f.get())]);
    let by_id = Binding::whole(1, 9, Access::Read);
    let hit = pool::read_failure(&p, [&read, &by_id].into_iter(), &g);
    assert_eq!(hit.map(|r| (r.failure, r.needed)), Some((f, 9)));
}
