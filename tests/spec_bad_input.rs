//! SPEC.md §9 (and Appendix A, "Bindings"): every bad input is a typed
//! error naming the offending id or range, and leaves the world exactly as
//! it was.

mod common;

use common::{FAIL, reads, stale_row, writes};
use taintworld::{
    Access, Bind, Binding, Config, Error, Launch, Outcome, ReadResult, Stats, StreamRef, World,
};

/// A world with some of everything: memory 1 tainted at the root, memory 2
/// tainted through a skip, memory 3 clean (16 bytes each, stream 0), a graph
/// 7 writing memory 3, and an open profile 1. `strict` as given.
/// What naming special stream 1 gets: `world` has one special stream, 0.
const SPECIAL_1_OUT_OF_RANGE: Error = Error::SpecialOutOfRange {
    index: 1,
    num_special: 1,
};

fn world(strict: bool) -> World {
    let config = Config {
        num_special: 1,
        strict,
        ..Config::default()
    };
    let mut w = World::new(config).unwrap();
    for m in 1..=3 {
        w.alloc(0, m, 16).unwrap();
    }
    let run = |w: &mut World, kernel, bindings: &[Binding], outcome| {
        w.launch(&Launch {
            kernel,
            stream: 0.into(),
            bindings,
            outcome,
        })
        .unwrap();
    };
    run(&mut w, "fill", &[writes(0, 1)], FAIL);
    w.capture_begin(0).unwrap();
    run(&mut w, "init", &[writes(0, 3)], Outcome::Ok);
    w.capture_end(0, 7).unwrap();
    run(
        &mut w,
        "gelu",
        &[reads(0, 1), Binding::range(0, 2, 0, 8, Access::Write)],
        Outcome::Ok,
    );
    w.profile_begin(1).unwrap();
    w
}

/// An allocation's claims as `(start, end, failure, origin launch)`.
type Claims = Vec<(u64, u64, u64, Option<u64>)>;

/// Everything observable: the counters, every allocation's claims, and
/// the world's `Debug` print, which shows all it holds (failures, records,
/// windows, graphs, profiles) but the scratch a call reuses.
fn snapshot(w: &World) -> (Stats, Vec<(u64, Claims)>, String) {
    let mut claims: Vec<_> = w
        .allocations()
        .iter()
        .map(|(_, a)| {
            (
                a.memory,
                w.claims(a.memory)
                    .unwrap()
                    .map(|c| (c.start, c.end, c.failure.get(), c.origin))
                    .collect(),
            )
        })
        .collect();
    claims.sort();
    (w.stats(), claims, format!("{w:?}"))
}

/// The print in [`snapshot`] is the world's state and nothing else: a
/// clone, which draws its own row stamp, prints as its original, and so
/// does a world whose scratch rows a failed batch has left behind.
#[test]
fn a_world_prints_its_state_alone_not_its_stamp_or_scratch() {
    let w = world(false);
    assert_eq!(format!("{:?}", w.clone()), format!("{w:?}"));
    let mut after = w.clone();
    let bad = [reads(0, 3), Binding::range(0, 2, 0, 17, Access::Write)];
    let batch = [Launch {
        kernel: "bad",
        stream: 0.into(),
        bindings: &bad[..],
        outcome: Outcome::Ok,
    }];
    after.launch_batch(&batch, &mut Vec::new()).unwrap_err();
    assert_eq!(format!("{after:?}"), format!("{w:?}"));
    assert!(format!("{w:?}").contains("profiles: {1: None}"));
}

#[test]
fn zero_max_streams_is_rejected() {
    let err = World::new(Config {
        max_streams: 0,
        ..Config::default()
    })
    .unwrap_err();
    assert_eq!(err, Error::ZeroStreams);
    assert!(err.to_string().contains("max_streams"));
}

/// The errors are `std::error::Error`s (`core::error::Error`, which std
/// names so) in every build, with the `std` feature or without it: CI runs
/// this file with `--no-default-features` too, where this would not
/// compile if they were not, and a scheduler's `?` into a boxed error
/// works either way.
#[test]
fn an_error_goes_into_a_boxed_std_error_with_or_without_the_std_feature() {
    fn world() -> Result<World, Box<dyn std::error::Error + Send + Sync>> {
        Ok(World::new(Config {
            max_streams: 0,
            ..Config::default()
        })?)
    }
    let err = world().unwrap_err();
    assert_eq!(err.downcast_ref::<Error>(), Some(&Error::ZeroStreams));
    assert_eq!(err.to_string(), "max_streams must be at least 1");
    assert!(err.source().is_none());
}

#[test]
fn a_zero_chain_limit_is_rejected() {
    let err = World::new(Config {
        chain_limit: 0,
        ..Config::default()
    })
    .unwrap_err();
    assert_eq!(err, Error::ZeroChainLimit);
    assert!(err.to_string().contains("chain_limit"));
}

#[test]
fn slot_numbers_that_overflow_are_rejected() {
    let err = World::new(Config {
        max_streams: u64::MAX,
        num_special: 1,
        ..Config::default()
    })
    .unwrap_err();
    assert_eq!(
        err,
        Error::SlotOverflow {
            max_streams: u64::MAX,
            num_special: 1
        }
    );
    assert!(err.to_string().contains(&u64::MAX.to_string()));
}

#[test]
fn a_world_of_u64_max_regular_slots_is_valid_and_folds_each_id_onto_itself() {
    let config = Config {
        max_streams: u64::MAX,
        ..Config::default()
    };
    let mut w = World::new(config).expect("SPEC §1: max_streams >= 1");
    let key = w.alloc(u64::MAX - 1, 7, 16).unwrap();
    assert_eq!(w.allocations().get(key).unwrap().slot, u64::MAX - 1);
    assert_eq!(w.read(&reads(u64::MAX - 1, 7)).unwrap(), ReadResult::Clean);
}

#[test]
fn a_launch_with_one_range_past_the_end_is_rejected_whole_and_takes_no_number() {
    let mut w = world(false);
    let before = snapshot(&w);
    let b = [
        reads(4, 99), // unresolved: not counted either
        writes(0, 3),
        Binding::range(0, 3, 8, 17, Access::Read),
    ];
    let err = w
        .launch(&Launch {
            kernel: "k",
            stream: 0.into(),
            bindings: &b,
            outcome: FAIL,
        })
        .unwrap_err();
    assert_eq!(
        err,
        Error::RangePastEnd {
            memory: 3,
            start: 8,
            end: 17,
            size: 16
        }
    );
    assert_eq!(
        err.to_string(),
        "range [8, 17) runs past the end of memory 3 (size 16)"
    );
    assert_eq!(snapshot(&w), before);
    w.check_invariants().unwrap();
}

#[test]
fn a_reversed_range_is_rejected_even_on_an_unresolved_binding() {
    let mut w = world(false);
    let before = snapshot(&w);
    let b = [Binding::range(5, 99, 8, 4, Access::Read)];
    let err = w
        .launch(&Launch {
            kernel: "k",
            stream: 0.into(),
            bindings: &b,
            outcome: Outcome::Ok,
        })
        .unwrap_err();
    assert_eq!(
        err,
        Error::RangeReversed {
            memory: 99,
            start: 8,
            end: 4
        }
    );
    assert!(err.to_string().contains("memory 99"));
    assert_eq!(snapshot(&w), before);
}

#[test]
fn a_range_past_the_end_of_an_unresolved_binding_is_not_compared_with_a_size() {
    let mut w = world(false);
    let b = [Binding::range(1, 3, 0, 1000, Access::Write)];
    let r = w
        .launch(&Launch {
            kernel: "k",
            stream: 0.into(),
            bindings: &b,
            outcome: FAIL,
        })
        .unwrap();
    assert_eq!(r.launch, 3);
    assert_eq!(w.stats().unresolved_bindings, 1);
}

#[test]
fn a_range_ending_at_u64_max_is_past_the_end_of_a_small_allocation() {
    let mut w = world(false);
    let before = snapshot(&w);
    let err = w
        .host_write(
            &Binding::range(0, 2, u64::MAX - 1, u64::MAX, Access::Write),
            FAIL,
        )
        .unwrap_err();
    assert_eq!(
        err,
        Error::RangePastEnd {
            memory: 2,
            start: u64::MAX - 1,
            end: u64::MAX,
            size: 16
        }
    );
    assert!(err.to_string().contains(&u64::MAX.to_string()));
    assert_eq!(snapshot(&w), before);
}

#[test]
fn an_allocation_of_u64_max_bytes_is_tainted_and_released_to_its_last_byte() {
    let mut w = world(false);
    w.alloc(0, 9, u64::MAX).unwrap();
    w.host_write(
        &Binding::range(0, 9, u64::MAX - 1, u64::MAX, Access::Write),
        FAIL,
    )
    .unwrap();
    let got: Vec<_> = w.claims(9).unwrap().map(|c| (c.start, c.end)).collect();
    assert_eq!(got, [(u64::MAX - 1, u64::MAX)]);
    w.host_write(&writes(0, 9), FAIL).unwrap();
    // Exact past u64::MAX: 16 + 8 bytes of the small allocations are
    // tainted too.
    assert_eq!(w.stats().tainted_bytes, u128::from(u64::MAX) + 24);
    w.host_write(
        &Binding::range(0, 9, 0, u64::MAX - 1, Access::Write),
        Outcome::Ok,
    )
    .unwrap();
    let got: Vec<_> = w.claims(9).unwrap().map(|c| (c.start, c.end)).collect();
    assert_eq!(got, [(u64::MAX - 1, u64::MAX)]);
    w.check_invariants().unwrap();
}

#[test]
fn a_resolved_dead_binding_past_the_end_is_bad_input() {
    let mut w = world(false);
    let before = snapshot(&w);
    let b = [Binding::range(0, 3, 0, 32, Access::Dead)];
    let err = w
        .launch(&Launch {
            kernel: "k",
            stream: 0.into(),
            bindings: &b,
            outcome: Outcome::Ok,
        })
        .unwrap_err();
    assert_eq!(
        err,
        Error::RangePastEnd {
            memory: 3,
            start: 0,
            end: 32,
            size: 16
        }
    );
    assert_eq!(snapshot(&w), before);
}

#[test]
fn a_read_past_the_end_is_bad_input() {
    let mut w = world(false);
    let before = snapshot(&w);
    let err = w
        .read(&Binding::range(0, 1, 16, 17, Access::Read))
        .unwrap_err();
    assert_eq!(
        err,
        Error::RangePastEnd {
            memory: 1,
            start: 16,
            end: 17,
            size: 16
        }
    );
    assert_eq!(snapshot(&w), before);
}

#[test]
fn a_special_stream_index_out_of_range_is_bad_input_everywhere() {
    let mut w = world(false);
    let before = snapshot(&w);
    let bad = StreamRef::Special(1);
    let expected = SPECIAL_1_OUT_OF_RANGE;
    assert_eq!(w.alloc(bad, 9, 16).unwrap_err(), expected);
    assert_eq!(
        w.alloc_failed(bad, 9, 64, "out_of_memory", "x"),
        Err(expected.clone())
    );
    let b = [writes(0, 3)];
    assert_eq!(
        w.launch(&Launch {
            kernel: "k",
            stream: bad,
            bindings: &b,
            outcome: FAIL
        })
        .unwrap_err(),
        expected
    );
    let b = [writes(0, 3), reads(bad, 3)];
    assert_eq!(
        w.launch(&Launch {
            kernel: "k",
            stream: 0.into(),
            bindings: &b,
            outcome: FAIL
        })
        .unwrap_err(),
        expected
    );
    // The same with outcomes that cannot fail, which a world without a
    // failure answers without building rows: still bad input.
    for outcome in [Outcome::Ok, Outcome::DryRun] {
        let on_bad_stream = [writes(0, 3)];
        let result = w.launch(&Launch {
            kernel: "k",
            stream: bad,
            bindings: &on_bad_stream,
            outcome,
        });
        assert_eq!(result.unwrap_err(), expected);
        let result = w.launch(&Launch {
            kernel: "k",
            stream: 0.into(),
            bindings: &b,
            outcome,
        });
        assert_eq!(result.unwrap_err(), expected);
    }
    assert_eq!(w.capture_begin(bad).unwrap_err(), expected);
    assert_eq!(w.initialize_stream(bad).unwrap_err(), expected);
    assert_eq!(w.read(&reads(bad, 3)).unwrap_err(), expected);
    assert!(expected.to_string().contains("special stream 1"));
    assert_eq!(snapshot(&w), before);
    assert!(w.streams().get(9).is_none());
    // Ending a capture names its stream too: the window stays open.
    w.capture_begin(0).unwrap();
    let before = snapshot(&w);
    assert_eq!(w.capture_end(bad, 8), Err(expected));
    assert_eq!(snapshot(&w), before);
    assert_eq!(w.capture_end(0, 8), Ok(taintworld::CaptureResult::Ok));
}

#[test]
fn strict_mode_rejects_an_unresolved_launch_binding() {
    let mut w = world(true);
    let before = snapshot(&w);
    let b = [writes(0, 3), reads(2, 1)];
    let err = w
        .launch(&Launch {
            kernel: "k",
            stream: 0.into(),
            bindings: &b,
            outcome: FAIL,
        })
        .unwrap_err();
    assert_eq!(
        err,
        Error::Unresolved {
            memory: 1,
            slot: 2,
            made_on: Some(0)
        }
    );
    assert_eq!(
        err.to_string(),
        "binding of memory 1 on stream slot 2 does not resolve (strict mode; memory 1 lives on slot 0)"
    );
    assert_eq!(snapshot(&w), before);
}

#[test]
fn strict_mode_rejects_an_unresolved_read_and_host_write() {
    let mut w = world(true);
    let before = snapshot(&w);
    assert_eq!(
        w.read(&reads(0, 42)).unwrap_err(),
        Error::Unresolved {
            memory: 42,
            slot: 0,
            made_on: None
        }
    );
    assert_eq!(
        w.host_write(&writes(0, 42), FAIL).unwrap_err(),
        Error::Unresolved {
            memory: 42,
            slot: 0,
            made_on: None
        }
    );
    assert_eq!(snapshot(&w), before);
}

#[test]
fn strict_mode_rejects_a_replay_of_memory_freed_since_capture() {
    let mut w = world(true);
    w.free(3).unwrap();
    let before = snapshot(&w);
    assert_eq!(
        w.replay(7, FAIL).unwrap_err(),
        Error::Unresolved {
            memory: 3,
            slot: 0,
            made_on: None
        }
    );
    assert_eq!(snapshot(&w), before);
}

#[test]
fn a_replay_whose_recorded_range_is_past_a_reused_ids_end_is_bad_input() {
    let mut w = world(false);
    w.free(3).unwrap();
    w.alloc(0, 3, 8).unwrap();
    let before = snapshot(&w);
    let err = w.replay(7, FAIL).unwrap_err();
    assert_eq!(
        err,
        Error::RangePastEnd {
            memory: 3,
            start: 0,
            end: 16,
            size: 8
        }
    );
    assert_eq!(snapshot(&w), before);
}

#[test]
fn strict_mode_names_a_stale_key_binding_by_its_key_as_it_names_a_stale_row() {
    let mut w = world(true);
    let key = w.alloc(0, 9, 16).unwrap();
    let row = w
        .resolve_binding(&Binding::whole(0, key, Access::Read))
        .unwrap()
        .expect("live");
    // A live key named on another slot is unresolved, by its memory id,
    // and the slot its allocation was made on.
    assert_eq!(
        w.read(&Binding::whole(1, key, Access::Read)).unwrap_err(),
        Error::Unresolved {
            memory: 9,
            slot: 1,
            made_on: Some(0)
        }
    );
    w.free(key).unwrap();
    let before = snapshot(&w);
    let stale = Error::UnknownKey { key };
    let bindings = [Binding::whole(0, key, Access::Read)];
    fn launch<B: Bind>(bindings: &[B]) -> Launch<'_, B> {
        Launch {
            kernel: "k",
            stream: 0.into(),
            bindings,
            outcome: Outcome::Ok,
        }
    }
    assert_eq!(w.launch(&launch(&bindings)), Err(stale.clone()));
    assert_eq!(w.launch(&launch(&[row])), Err(stale.clone()));
    assert_eq!(w.read(&bindings[0]), Err(stale.clone()));
    assert_eq!(
        w.host_write(&Binding::whole(0, key, Access::Write), FAIL),
        Err(stale.clone())
    );
    assert_eq!(w.resolve_binding(&bindings[0]), Err(stale));
    assert_eq!(snapshot(&w), before);
}

/// A stale key has no memory id to name: a reversed range on it names
/// the key (it once named "memory 0", which may be another allocation).
#[test]
fn a_reversed_range_on_a_stale_key_names_the_key_not_a_memory_id() {
    for strict in [false, true] {
        let mut w = world(strict);
        w.alloc(0, 0, 16).unwrap();
        let key = w.alloc(0, 5, 16).unwrap();
        w.free(key).unwrap();
        let before = snapshot(&w);
        let reversed = Binding::range(0, key, 9, 3, Access::Read);
        let expected = Error::KeyRangeReversed {
            key,
            start: 9,
            end: 3,
        };
        let launch = Launch {
            kernel: "k",
            stream: 0.into(),
            bindings: &[reversed][..],
            outcome: Outcome::Ok,
        };
        assert_eq!(w.launch(&launch), Err(expected.clone()));
        assert_eq!(w.read(&reversed), Err(expected.clone()));
        assert_eq!(w.resolve_binding(&reversed), Err(expected.clone()));
        assert!(expected.to_string().contains("stale allocation key"));
        assert_eq!(snapshot(&w), before);
    }
}

#[test]
fn freeing_a_stale_key_is_bad_input() {
    let mut w = world(false);
    let key = w.alloc(0, 9, 16).unwrap();
    w.free(key).unwrap();
    let before = snapshot(&w);
    let err = w.free(key).unwrap_err();
    assert_eq!(err, Error::UnknownKey { key });
    assert!(err.to_string().contains(&format!("{key:?}")));
    assert_eq!(snapshot(&w), before);
}

#[test]
fn a_dry_run_host_write_or_replay_is_bad_input() {
    let mut w = world(false);
    let before = snapshot(&w);
    let err = w.host_write(&writes(0, 1), Outcome::DryRun).unwrap_err();
    assert_eq!(
        err,
        Error::DryRunOutcome {
            operation: "host_write"
        }
    );
    assert_eq!(err.to_string(), "host_write cannot have a dry_run outcome");
    assert_eq!(
        w.replay(7, Outcome::DryRun).unwrap_err(),
        Error::DryRunOutcome {
            operation: "replay"
        }
    );
    assert_eq!(snapshot(&w), before);
}

#[test]
fn rejected_operations_leave_open_windows_profiles_and_graphs_as_they_were() {
    let mut w = world(false);
    let before = snapshot(&w);
    assert_eq!(
        w.capture_end(0, 7).unwrap_err(),
        Error::NoCapture {
            stream: 0.into(),
            slot: 0
        }
    );
    assert_eq!(
        w.profile_begin(1).unwrap_err(),
        Error::ProfileOpen { profile: 1 }
    );
    assert_eq!(
        w.replay(8, Outcome::Ok).unwrap_err(),
        Error::UnknownGraph { graph: 8 }
    );
    assert_eq!(
        w.graph_destroy(8).unwrap_err(),
        Error::UnknownGraph { graph: 8 }
    );
    assert_eq!(
        w.alloc(0, 2, 4).unwrap_err(),
        Error::DuplicateMemory { memory: 2 }
    );
    assert_eq!(snapshot(&w), before);
    assert!(w.has_graph(7));
    // Profile 1 is still open and still valid: nothing failed since it began.
    assert_eq!(w.profile_end(1).unwrap(), taintworld::ProfileResult::Valid);
    assert_eq!(w.read(&reads(0, 3)).unwrap(), ReadResult::Clean);
    w.check_invariants().unwrap();
}

#[test]
fn in_a_world_without_failures_a_launch_that_cannot_fail_is_checked_as_input_all_the_same() {
    // Such a world answers launches that cannot fail without building rows;
    // bad input is bad input there too, and changes nothing.
    let mut w = World::new(Config {
        num_special: 1,
        strict: true,
        ..Config::default()
    })
    .unwrap();
    let key = w.alloc(0, 1, 16).unwrap();
    let stale = stale_row(&mut w);
    let cases: [(Binding, Error); 4] = [
        (
            reads(StreamRef::Special(1), 1),
            Error::SpecialOutOfRange {
                index: 1,
                num_special: 1,
            },
        ),
        (
            Binding::range(0, 1, 0, 17, Access::Read),
            Error::RangePastEnd {
                memory: 1,
                start: 0,
                end: 17,
                size: 16,
            },
        ),
        (
            Binding::range(0, 1, 9, 3, Access::Write),
            Error::RangeReversed {
                memory: 1,
                start: 9,
                end: 3,
            },
        ),
        (
            reads(1, 1),
            Error::Unresolved {
                memory: 1,
                slot: 1,
                made_on: Some(0),
            },
        ),
    ];
    for outcome in [Outcome::Ok, Outcome::DryRun] {
        for (binding, expected) in &cases {
            let bindings = [writes(0, key), *binding];
            let launch = Launch {
                kernel: "k",
                stream: 0.into(),
                bindings: &bindings,
                outcome,
            };
            assert_eq!(w.launch(&launch).unwrap_err(), *expected, "{binding:?}");
            let mut results = Vec::new();
            let batch = w.launch_batch(&[launch], &mut results).unwrap_err();
            assert!(
                matches!(&batch, Error::InBatch { index: 0, error } if **error == *expected),
                "{batch:?}"
            );
            assert!(results.is_empty());
        }
        // The launch's own stream is checked too.
        let fine = [writes(0, key)];
        let on_bad_stream = Launch {
            kernel: "k",
            stream: StreamRef::Special(1),
            bindings: &fine,
            outcome,
        };
        assert_eq!(w.launch(&on_bad_stream).unwrap_err(), cases[0].1);
        let rows = [stale];
        let launch = Launch {
            kernel: "k",
            stream: 0.into(),
            bindings: &rows[..],
            outcome,
        };
        assert_eq!(
            w.launch(&launch).unwrap_err(),
            Error::UnknownKey { key: stale.alloc() }
        );
    }
    assert_eq!((w.launches(), w.stats().unresolved_bindings), (0, 0));
    assert_eq!(
        w.stats().live_failures,
        0,
        "the world stayed without failures"
    );
}

#[test]
fn in_a_world_of_more_than_2_pow_32_slots_two_slots_with_the_same_low_32_bits_stay_apart() {
    let config = Config {
        max_streams: (1 << 32) + 8,
        ..Config::default()
    };
    let mut w = World::new(config).unwrap();
    w.alloc(1, 7, 16).unwrap();
    // Slot 2^32 + 1 is a slot of its own, not slot 1: memory 7 is not
    // made there, so the binding is unresolved and the failure taints
    // nothing.
    let far = (1u64 << 32) + 1;
    let launch = Launch {
        kernel: "fill",
        stream: StreamRef::Id(far),
        bindings: &[writes(far, 7)],
        outcome: FAIL,
    };
    w.launch(&launch).unwrap();
    assert_eq!(w.stats().unresolved_bindings, 1);
    assert_eq!(w.read(&reads(1, 7)).unwrap(), ReadResult::Clean);
    // The same launch on slot 1 taints it.
    w.launch(&Launch {
        stream: StreamRef::Id(1),
        bindings: &[writes(1, 7)],
        ..launch
    })
    .unwrap();
    assert!(matches!(
        w.read(&reads(1, 7)).unwrap(),
        ReadResult::Tainted(_)
    ));
}

#[test]
fn a_regular_stream_id_never_reaches_a_special_slot_past_2_pow_32_by_key() {
    // Regular slots 0 to 2^32 - 2, then special slots from 2^32 - 1: the
    // second special slot, 2^32, has the low 32 bits of slot 0.
    let config = Config {
        max_streams: (1 << 32) - 1,
        num_special: 5,
        ..Config::default()
    };
    let mut w = World::new(config).unwrap();
    let key = w.alloc(StreamRef::Special(1), 7, 16).unwrap();
    assert_eq!(w.allocations().get(key).unwrap().slot, 1 << 32);
    let launch = Launch {
        kernel: "fill",
        stream: StreamRef::Id(0),
        bindings: &[Binding::whole(0, key, Access::Write)],
        outcome: FAIL,
    };
    w.launch(&launch).unwrap();
    assert_eq!(w.stats().unresolved_bindings, 1);
    let special = Binding::whole(StreamRef::Special(1), key, Access::Read);
    assert_eq!(w.read(&special).unwrap(), ReadResult::Clean);
}

#[test]
fn an_errors_inner_error_is_itself_alone_and_the_bad_launchs_in_a_batch() {
    let alone = Error::UnknownMemory { memory: 4 };
    assert_eq!((alone.inner(), alone.batch_index()), (&alone, None));
    let mut w = world(false);
    let good = [reads(0, 1)];
    let bad = [reads(0, 4)];
    let launch = |bindings| Launch {
        kernel: "k",
        stream: 0.into(),
        bindings,
        outcome: Outcome::Ok,
    };
    let mut w_strict = world(true);
    let batch = [launch(&good[..]), launch(&bad[..])];
    let error = w_strict.launch_batch(&batch, &mut Vec::new()).unwrap_err();
    assert_eq!(error.batch_index(), Some(1));
    assert_eq!(
        error.inner(),
        &Error::Unresolved {
            memory: 4,
            slot: 0,
            made_on: None
        }
    );
    // Not strict: memory 4 is only unresolved, and the batch runs.
    assert!(w.launch_batch(&batch, &mut Vec::new()).is_ok());
}

/// SPEC §2 (strict mode rejects an unresolved binding) with Appendix A
/// "Bindings" (`dead` bindings are resolved too).
#[test]
fn in_strict_mode_an_unresolved_dead_binding_is_rejected() {
    let mut w = world(true);
    let (before, launches) = (snapshot(&w), w.launches());
    let b = [writes(0, 1), Binding::whole(0, 99, Access::Dead)];
    let err = w
        .launch(&Launch {
            kernel: "k",
            stream: 0.into(),
            bindings: &b,
            outcome: FAIL,
        })
        .unwrap_err();
    assert_eq!(
        err,
        Error::Unresolved {
            memory: 99,
            slot: 0,
            made_on: None
        }
    );
    assert_eq!((snapshot(&w), w.launches()), (before, launches));
}

/// `World::binding_at_fault`: the error of a launch names memory, and the
/// world says which binding it is about, for bindings, rows and a batch.
#[test]
fn the_world_names_the_first_bad_binding_of_a_launch_its_error_is_about() {
    let mut w = world(false);
    let past = Binding::range(0, 2, 0, 32, Access::Read);
    let reversed = Binding::range(0, 3, 9, 3, Access::Write);
    // Memory 42 does not resolve, which outside strict mode is no error.
    let bindings = [reads(0, 1), reads(0, 42), past, reversed];
    let launch = |bindings| Launch {
        kernel: "k",
        stream: 0.into(),
        bindings,
        outcome: Outcome::Ok,
    };
    let error = w.launch(&launch(&bindings[..])).unwrap_err();
    assert_eq!(w.binding_at_fault(&bindings, &error), Some(2));
    let error = w.launch(&launch(&bindings[3..])).unwrap_err();
    assert_eq!(w.binding_at_fault(&bindings[3..], &error), Some(0));
    // A binding's stream out of range is that binding's error; the
    // launch's own stream is no binding's, and names none.
    let special = [
        reads(0, 1),
        Binding::whole(StreamRef::Special(5), 1, Access::Read),
    ];
    let error = w.launch(&launch(&special[..])).unwrap_err();
    assert!(matches!(error, Error::SpecialOutOfRange { index: 5, .. }));
    assert_eq!(w.binding_at_fault(&special, &error), Some(1));
    let own = Launch {
        stream: StreamRef::Special(5),
        ..launch(&special[..1])
    };
    let error = w.launch(&own).unwrap_err();
    assert!(matches!(error, Error::SpecialOutOfRange { index: 5, .. }));
    assert_eq!(w.binding_at_fault(&special[..1], &error), None);
    // In a batch: the bad launch's bindings, and its error unwrapped.
    let good = [reads(0, 3)];
    let batch = [launch(&good[..]), launch(&bindings[..])];
    let error = w.launch_batch(&batch, &mut Vec::new()).unwrap_err();
    assert_eq!(error.batch_index(), Some(1));
    assert_eq!(w.binding_at_fault(&bindings, error.inner()), Some(2));
    assert_eq!(w.binding_at_fault(&bindings, &error), None);

    // Rows: a stale one in strict mode, among good ones.
    let mut strict = world(true);
    let rows = [
        strict.resolve_binding(&reads(0, 1)).unwrap().unwrap(),
        strict.resolve_binding(&reads(0, 3)).unwrap().unwrap(),
        stale_row(&mut strict),
    ];
    let error = strict
        .launch(&Launch {
            kernel: "k",
            stream: 0.into(),
            bindings: &rows[..],
            outcome: Outcome::Ok,
        })
        .unwrap_err();
    assert!(matches!(error, Error::UnknownKey { .. }), "{error:?}");
    assert_eq!(strict.binding_at_fault(&rows, &error), Some(2));
    // In strict mode an unresolved binding is bad input, and is named.
    let error = strict.launch(&launch(&bindings[..])).unwrap_err();
    assert_eq!(strict.binding_at_fault(&bindings, &error), Some(1));
}

/// Each operation that takes one binding checks it as a launch checks its
/// bindings (the `# Errors` of `launch`, `resolve_binding`, `host_write`,
/// `read`, `read_failure` and `scope` list the same variants): the same
/// typed error from every one of them, and nothing changed. A scope given
/// bad input does not run its body.
#[test]
fn every_operation_on_one_binding_rejects_a_bad_one_with_the_error_a_launch_gives() {
    for strict in [false, true] {
        let mut w = world(strict);
        let key = w.alloc(0, 9, 16).unwrap();
        w.free(key).unwrap();
        let before = snapshot(&w);
        let mut cases: Vec<(Binding, Error)> = vec![
            (reads(StreamRef::Special(1), 3), SPECIAL_1_OUT_OF_RANGE),
            (
                Binding::range(0, 3, 9, 3, Access::Read),
                Error::RangeReversed {
                    memory: 3,
                    start: 9,
                    end: 3,
                },
            ),
            (
                Binding::range(0, key, 9, 3, Access::Read),
                Error::KeyRangeReversed {
                    key,
                    start: 9,
                    end: 3,
                },
            ),
            (
                Binding::range(0, 3, 0, 17, Access::Read),
                Error::RangePastEnd {
                    memory: 3,
                    start: 0,
                    end: 17,
                    size: 16,
                },
            ),
        ];
        if strict {
            cases.push((
                reads(1, 3),
                Error::Unresolved {
                    memory: 3,
                    slot: 1,
                    made_on: Some(0),
                },
            ));
            cases.push((reads(0, key), Error::UnknownKey { key }));
        }
        for (binding, expected) in &cases {
            let expected = Err(expected.clone());
            let bindings = [*binding];
            let launch = Launch {
                kernel: "k",
                stream: 0.into(),
                bindings: &bindings[..],
                outcome: Outcome::Ok,
            };
            assert_eq!(w.launch(&launch).map(|_| ()), expected, "{binding:?}");
            assert_eq!(w.resolve_binding(binding).map(|_| ()), expected);
            assert_eq!(w.host_write(binding, FAIL).map(|_| ()), expected);
            assert_eq!(w.read(binding).map(|_| ()), expected);
            assert_eq!(w.read_failure(binding).map(|_| ()), expected);
            let mut ran = false;
            let scoped = w.scope("k", 0, &bindings, || {
                ran = true;
                Ok::<_, taintworld::ErrorInfo>(())
            });
            assert_eq!(scoped.map(|_| ()), expected);
            assert!(!ran, "a scope given bad input runs no body");
            assert_eq!(snapshot(&w), before, "{binding:?} changed the world");
        }
        // A scope's own stream is checked as a launch's is.
        let scoped = w.scope("k", StreamRef::Special(1), &[reads(0, 3)], || {
            Ok::<_, taintworld::ErrorInfo>(())
        });
        assert_eq!(scoped.map(|_| ()), Err(SPECIAL_1_OUT_OF_RANGE));
        assert_eq!(snapshot(&w), before);
    }
}

/// `alloc_failed` is bad input where `alloc` is (a special stream out of
/// range: `a_special_stream_index_out_of_range_is_bad_input_everywhere`),
/// and a rejected one mints no failure and, like a rejected `alloc`,
/// initializes no stream's slot (stream 5 is one no call here has used).
#[test]
fn a_failed_reservation_of_a_live_id_is_bad_input_and_initializes_no_slot() {
    let mut w = world(false);
    let before = snapshot(&w);
    assert!(w.streams().get(5).is_none());
    assert_eq!(
        w.alloc_failed(5, 2, 64, "out_of_memory", "cudaMalloc failed"),
        Err(Error::DuplicateMemory { memory: 2 })
    );
    assert_eq!(w.alloc(5, 2, 64), Err(Error::DuplicateMemory { memory: 2 }));
    assert_eq!(snapshot(&w), before);
    assert!(
        w.streams().get(5).is_none(),
        "a rejected reservation initialized its slot"
    );
}

/// `replay_checked` and `replay_checked_each` give a replay's typed
/// errors, with either outcome, and on bad input settle no launch, call
/// nothing and keep the graph.
#[test]
fn a_checked_replay_gives_the_typed_errors_of_a_replay_and_settles_no_launch() {
    let unknown = Err(Error::UnknownGraph { graph: 8 });
    let dry = Err(Error::DryRunOutcome {
        operation: "replay",
    });
    // Memory 3, which graph 7 writes whole (16 bytes), reused too small.
    let mut w = world(false);
    w.free(3).unwrap();
    w.alloc(0, 3, 8).unwrap();
    let past = Err(Error::RangePastEnd {
        memory: 3,
        start: 0,
        end: 16,
        size: 8,
    });
    // Memory 3 freed, in strict mode.
    let mut strict = world(true);
    strict.free(3).unwrap();
    let unresolved = Err(Error::Unresolved {
        memory: 3,
        slot: 0,
        made_on: None,
    });
    let mut worlds = [w, strict];
    for (at, graph, outcome, expected) in [
        (0, 8, Outcome::Ok, &unknown),
        (0, 8, FAIL, &unknown),
        (0, 7, Outcome::DryRun, &dry),
        (0, 7, Outcome::Ok, &past),
        (0, 7, FAIL, &past),
        (1, 7, Outcome::Ok, &unresolved),
        (1, 7, FAIL, &unresolved),
    ] {
        let w = &mut worlds[at];
        let before = snapshot(w);
        assert_eq!(w.replay_checked(graph, outcome), *expected);
        let mut called = 0;
        let got = w.replay_checked_each(graph, outcome, |_| called += 1);
        assert_eq!(got, *expected, "graph {graph}, {outcome:?}");
        assert_eq!(called, 0, "bad input settles no launch");
        assert_eq!(snapshot(w), before);
        assert!(w.has_graph(7));
    }
}

/// Every error prints its whole message, word for word: the wording is
/// public (a caller may show it, match on it or log it), and the checks
/// above each ask only for the id or the words they care about. A message
/// that lost its batch launch's own error, or said "already open" for a
/// profile that is not, or left out the range or a count, passed them all.
#[test]
fn every_error_prints_the_whole_message_its_variant_promises_word_for_word() {
    let mut w = world(false);
    let key = w.alloc(0, 9, 16).unwrap();
    w.free(key).unwrap();
    let cases = [
        (Error::ZeroStreams, "max_streams must be at least 1".to_owned()),
        (
            Error::ZeroChainLimit,
            "chain_limit must be at least 1".to_owned(),
        ),
        (
            Error::SlotOverflow {
                max_streams: u64::MAX,
                num_special: 2,
            },
            "max_streams 18446744073709551615 + num_special 2 does not fit in a u64".to_owned(),
        ),
        (
            SPECIAL_1_OUT_OF_RANGE,
            "special stream 1 is out of range: num_special is 1".to_owned(),
        ),
        (
            Error::UnknownMemory { memory: 5 },
            "memory 5 is not a live allocation".to_owned(),
        ),
        (
            Error::UnknownKey { key },
            format!("allocation key {key:?} names no live allocation"),
        ),
        (
            Error::DuplicateMemory { memory: 5 },
            "memory 5 is already a live allocation".to_owned(),
        ),
        (
            Error::RangeReversed {
                memory: 5,
                start: 8,
                end: 4,
            },
            "range [8, 4) of memory 5 ends before it starts".to_owned(),
        ),
        (
            Error::KeyRangeReversed {
                key,
                start: 8,
                end: 4,
            },
            format!("range [8, 4) of stale allocation key {key:?} ends before it starts"),
        ),
        (
            Error::RangePastEnd {
                memory: 5,
                start: 8,
                end: 40,
                size: 16,
            },
            "range [8, 40) runs past the end of memory 5 (size 16)".to_owned(),
        ),
        (
            Error::Unresolved {
                memory: 5,
                slot: 1,
                made_on: None,
            },
            "binding of memory 5 on stream slot 1 does not resolve (strict mode)".to_owned(),
        ),
        (
            Error::Unresolved {
                memory: 5,
                slot: 1,
                made_on: Some(0),
            },
            "binding of memory 5 on stream slot 1 does not resolve (strict mode; memory 5 lives on slot 0)"
                .to_owned(),
        ),
        (
            Error::DryRunOutcome {
                operation: "host_write",
            },
            "host_write cannot have a dry_run outcome".to_owned(),
        ),
        (
            Error::CaptureOpen {
                stream: StreamRef::Id(3),
                slot: 1,
            },
            "stream 3 (slot 1) already has an open capture window".to_owned(),
        ),
        (
            Error::NoCapture {
                stream: StreamRef::Special(0),
                slot: 2,
            },
            "special stream 0 (slot 2) has no open capture window".to_owned(),
        ),
        (
            Error::GraphLive { graph: 7 },
            "graph 7 is already live".to_owned(),
        ),
        (
            Error::UnknownGraph { graph: 7 },
            "graph 7 is not a live graph".to_owned(),
        ),
        (
            Error::ProfileOpen { profile: 4 },
            "profile 4 is already open".to_owned(),
        ),
        (
            Error::ProfileNotOpen { profile: 4 },
            "profile 4 is not open".to_owned(),
        ),
        (
            Error::NoRoom { additional: 7 },
            "no room for more allocations: 7 asked for".to_owned(),
        ),
        (
            Error::InBatch {
                index: 2,
                error: Box::new(Error::UnknownMemory { memory: 5 }),
            },
            "launch 2 of the batch: memory 5 is not a live allocation".to_owned(),
        ),
    ];
    for (error, message) in cases {
        assert_eq!(error.to_string(), message, "{error:?}");
    }
}
