//! The crate docs' "Costs" (SPEC.md §3's hot path): launches over clean
//! allocations, launches that taint or release one range per binding (bound
//! by `Binding` or by pre-resolved row), a successful `World::scope`, skips
//! of registered kernels and good replays of a captured graph make no heap
//! allocation once warm; nor does a failure that comes and goes (new each
//! time, in the room of the one before), nor shrinking buffers that never
//! grew, nor (with the `log` feature) recording a launch to a launch log
//! with `LogWriter::write_launch`; nor do allocations made into room
//! `World::reserve_allocations` reserved for them; nor does asking why
//! bytes are tainted with `World::read_taint`, walking the chain and
//! printing it.
//!
//! Allocations are counted by `tests/common/counting.rs`.

#[path = "common/counting.rs"]
mod counting;

use counting::{allocations_in, live_bytes};
use taintworld::{
    Access, AllocKey, Binding, ErrorInfo, Launch, Outcome, ReadResult, Resolved, ScopeOutcome,
    Verdict, World,
};

#[test]
fn the_hot_path_makes_no_heap_allocation_once_warm() {
    let mut w = World::default();
    let keys: Vec<AllocKey> = (0..8).map(|m| w.alloc(0, m, 4096).unwrap()).collect();
    let b = |k: usize, access| Binding::whole(0, keys[k], access);

    // (a) 3 reads + 1 write over clean allocations, by key.
    let clean = [
        b(0, Access::Read),
        b(1, Access::Read),
        b(2, Access::Read),
        b(3, Access::Write),
    ];
    let matmul = Launch {
        kernel: "matmul",
        stream: 0.into(),
        bindings: &clean,
        outcome: Outcome::Ok,
    };
    for _ in 0..10 {
        w.launch(&matmul).unwrap();
    }
    let mut ran = 0u32;
    let n = allocations_in(|| {
        for _ in 0..1000 {
            if w.launch(&matmul).unwrap().verdict == Verdict::Ran {
                ran += 1;
            }
        }
    });
    assert_eq!((n, ran), (0, 1000), "clean launches allocated");

    // (b) Taint one range per binding, then release it again, under a failure
    // that stays alive on memory 7 so that find-or-mint finds it.
    let fail = Outcome::Failed {
        kind: "compile",
        message: "bad PTX",
    };
    let anchor = [b(7, Access::Write)];
    w.launch(&Launch {
        kernel: "fill",
        stream: 0.into(),
        bindings: &anchor,
        outcome: fail,
    })
    .unwrap();
    let written = [
        b(4, Access::Write),
        Binding::range(0, keys[5], 0, 1024, Access::Write),
        b(6, Access::Write),
    ];
    let failing = Launch {
        kernel: "fill",
        stream: 0.into(),
        bindings: &written,
        outcome: fail,
    };
    let fixing = Launch {
        kernel: "fix",
        stream: 0.into(),
        bindings: &written,
        outcome: Outcome::Ok,
    };
    for _ in 0..10 {
        w.launch(&failing).unwrap();
        w.launch(&fixing).unwrap();
    }
    let (mut tainted, mut released) = (0u32, 0u32);
    let n = allocations_in(|| {
        for _ in 0..1000 {
            if matches!(w.launch(&failing).unwrap().verdict, Verdict::Failed(f) if f.get() == 1) {
                tainted += 1;
            }
            if w.launch(&fixing).unwrap().verdict == Verdict::Ran {
                released += 1;
            }
        }
    });
    assert_eq!(
        (n, tainted, released),
        (0, 1000, 1000),
        "taint/release launches allocated"
    );
    let s = w.stats();
    assert_eq!((s.claims, s.live_failures, s.failures_minted), (1, 1, 1));
    assert_eq!(w.failures().next().unwrap().occurrences, 1 + 10 + 1000);

    // (c) The success path of a write scope with 4 bindings.
    let scoped = [
        b(0, Access::Read),
        b(1, Access::Read),
        b(2, Access::ReadWrite),
        b(3, Access::Write),
    ];
    for _ in 0..10 {
        w.scope("gelu", 0, &scoped, || Ok::<_, ErrorInfo>(1u32))
            .unwrap();
    }
    let mut sum = 0u32;
    let n = allocations_in(|| {
        for _ in 0..1000 {
            if let Ok(ScopeOutcome::Ran(v)) =
                w.scope("gelu", 0, &scoped, || Ok::<_, ErrorInfo>(1u32))
            {
                sum += v;
            }
        }
    });
    assert_eq!((n, sum), (0, 1000), "successful scopes allocated");

    // (d) The same taint and release through pre-resolved rows, in batches.
    let rows: Vec<Resolved> = written
        .iter()
        .map(|b| w.resolve_binding(b).unwrap().unwrap())
        .collect();
    let batch = [
        Launch {
            kernel: "fill",
            stream: 0.into(),
            bindings: &rows[..],
            outcome: fail,
        },
        Launch {
            kernel: "fix",
            stream: 0.into(),
            bindings: &rows[..],
            outcome: Outcome::Ok,
        },
    ];
    let mut results = Vec::with_capacity(2000);
    for _ in 0..10 {
        w.launch_batch(&batch, &mut results).unwrap();
    }
    results.clear();
    let n = allocations_in(|| {
        for _ in 0..1000 {
            w.launch_batch(&batch, &mut results).unwrap();
        }
    });
    let failed = results
        .iter()
        .filter(|r| matches!(r.verdict, Verdict::Failed(_)))
        .count();
    assert_eq!(
        (n, failed, results.len()),
        (0, 1000, 2000),
        "row batches allocated"
    );

    // (d') A clean batch beside the failure on memory 7, which it does not
    // bind: answered from its look-ups, by key and by rows.
    let clean_rows: Vec<Resolved> = clean
        .iter()
        .map(|b| w.resolve_binding(b).unwrap().unwrap())
        .collect();
    let by_key = [matmul, matmul];
    let by_rows = [Launch {
        kernel: "matmul",
        stream: 0.into(),
        bindings: &clean_rows[..],
        outcome: Outcome::Ok,
    }; 2];
    results.clear();
    w.launch_batch(&by_key, &mut results).unwrap();
    w.launch_batch(&by_rows, &mut results).unwrap();
    results.clear();
    let n = allocations_in(|| {
        for _ in 0..500 {
            w.launch_batch(&by_key, &mut results).unwrap();
            w.launch_batch(&by_rows, &mut results).unwrap();
        }
    });
    let ran = results.iter().filter(|r| r.verdict == Verdict::Ran).count();
    assert_eq!(
        (n, ran),
        (0, 2000),
        "clean batches beside a failure allocated"
    );
    assert_eq!(w.stats().live_failures, 1, "the failure on memory 7 lives");

    // (e) Skips of registered kernels, two by turns so that each is found
    // by its address, each skip tainting one buffer and letting the record
    // before it go: memory 7 still carries the failure.
    static GELU: &str = "gelu";
    static SOFTMAX: &str = "softmax";
    w.register_kernel(GELU);
    w.register_kernel(SOFTMAX);
    let tainting = [b(7, Access::Read), b(4, Access::Write)];
    let skips = [GELU, SOFTMAX].map(|kernel| Launch {
        kernel,
        stream: 0.into(),
        bindings: &tainting,
        outcome: Outcome::Ok,
    });
    for _ in 0..10 {
        for skip in &skips {
            w.launch(skip).unwrap();
        }
    }
    let mut skipped = 0u32;
    let n = allocations_in(|| {
        for _ in 0..500 {
            for skip in &skips {
                if matches!(w.launch(skip).unwrap().verdict, Verdict::Skipped { .. }) {
                    skipped += 1;
                }
            }
        }
    });
    assert_eq!(
        (n, skipped),
        (0, 1000),
        "skips of registered kernels allocated"
    );
    assert_eq!(
        w.skip_records().map(|r| r.kernel).collect::<Vec<_>>(),
        ["softmax"]
    );

    // (f) Good replays of a captured graph, as a training loop replays its
    // step: each releases the graph's write set, memory 5's first KiB
    // tainted again by hand between them.
    let step = [b(0, Access::Read), b(5, Access::Write)];
    w.capture_begin(0).unwrap();
    w.launch(&Launch {
        kernel: "step",
        stream: 0.into(),
        bindings: &step,
        outcome: Outcome::Ok,
    })
    .unwrap();
    w.capture_end(0, 7).unwrap();
    let taint_five = Launch {
        kernel: "fill",
        stream: 0.into(),
        bindings: &written[1..2],
        outcome: fail,
    };
    for _ in 0..10 {
        w.launch(&taint_five).unwrap();
        w.replay(7, Outcome::Ok).unwrap();
    }
    let mut released = 0u32;
    let n = allocations_in(|| {
        for _ in 0..1000 {
            w.launch(&taint_five).unwrap();
            let claimed = w.stats().claims;
            if w.replay(7, Outcome::Ok).unwrap() == Verdict::Ran && w.stats().claims + 1 == claimed
            {
                released += 1;
            }
        }
    });
    assert_eq!((n, released), (0, 1000), "good replays allocated");

    // (g) Good checked replays of a graph whose first launch reads memory
    // 1, tainted once the graph is captured, and writes memory 6; and whose
    // second reads clean memory 0 and writes memory 5's first KiB, tainted
    // again by hand between replays. Each replay skips the first launch
    // (a record made, memory 6's claim relabelled, the record before it
    // let go) and runs the second, which releases memory 5.
    let attend = [b(1, Access::Read), b(6, Access::Write)];
    let project = [b(0, Access::Read), written[1]];
    w.capture_begin(0).unwrap();
    for (kernel, bindings) in [("attend", &attend[..]), ("project", &project[..])] {
        w.launch(&Launch {
            kernel,
            stream: 0.into(),
            bindings,
            outcome: Outcome::Ok,
        })
        .unwrap();
    }
    w.capture_end(0, 8).unwrap();
    let one = [b(1, Access::Write)];
    w.launch(&Launch {
        kernel: "fill",
        stream: 0.into(),
        bindings: &one,
        outcome: fail,
    })
    .unwrap();
    for _ in 0..10 {
        w.launch(&taint_five).unwrap();
        w.replay_checked(8, Outcome::Ok).unwrap();
    }
    // Counted per replay: its first launch skipped, its second run, and
    // one claim fewer after it (memory 5's, released).
    let (mut skipped, mut ran, mut released) = (0u32, 0u32, 0u32);
    let n = allocations_in(|| {
        for _ in 0..1000 {
            w.launch(&taint_five).unwrap();
            let claimed = w.stats().claims;
            w.replay_checked_each(8, Outcome::Ok, |result| match result.verdict {
                Verdict::Skipped { needed: 1, .. } => skipped += 1,
                Verdict::Ran => ran += 1,
                _ => {}
            })
            .unwrap();
            if w.stats().claims + 1 == claimed {
                released += 1;
            }
        }
    });
    assert_eq!(
        (n, skipped, ran, released),
        (0, 1000, 1000, 1000),
        "checked replays allocated"
    );
    let ReadResult::Tainted(report) = w.read(&b(6, Access::Read)).unwrap() else {
        panic!("memory 6 should carry the failure through the skipped attend");
    };
    assert_eq!(report.chain[0].kernel, "graph:8/attend");
    w.check_invariants().unwrap();
}

#[test]
fn a_clone_of_a_warm_world_launches_and_writes_without_allocating_as_its_original_does() {
    // A world warmed by the work below, then cloned: the clone's first
    // launches and host writes must allocate no more than its original's
    // next ones — none. (A derived clone gave the scratch rows no room, so
    // a clone's first call allocated.)
    let mut w = World::default();
    let keys: Vec<AllocKey> = (0..4).map(|m| w.alloc(0, m, 4096).unwrap()).collect();
    let fail = Outcome::Failed {
        kind: "compile",
        message: "bad PTX",
    };
    let anchor = [Binding::whole(0, keys[3], Access::Write)];
    let written = [
        Binding::whole(0, keys[0], Access::Write),
        Binding::range(0, keys[1], 0, 1024, Access::Write),
    ];
    let launch = |bindings, outcome| Launch {
        kernel: "fill",
        stream: 0.into(),
        bindings,
        outcome,
    };
    let clean = [
        Binding::whole(0, keys[2], Access::Read),
        Binding::whole(0, keys[1], Access::Write),
    ];
    let cycle = |w: &mut World| {
        let failed = w.launch(&launch(&written, fail)).unwrap().verdict;
        let fixed = w.launch(&launch(&written, Outcome::Ok)).unwrap().verdict;
        let ran = w.launch(&launch(&clean, Outcome::Ok)).unwrap().verdict;
        let host = w.host_write(&written[1], Outcome::Ok).unwrap();
        [failed, fixed, ran, host]
    };
    w.launch(&launch(&anchor, fail)).unwrap();
    for _ in 0..10 {
        cycle(&mut w);
    }
    let mut clone = w.clone();
    let (mut verdicts, mut again) = (Vec::with_capacity(4), Vec::with_capacity(4));
    let n = allocations_in(|| verdicts.extend(cycle(&mut clone)));
    let m = allocations_in(|| again.extend(cycle(&mut w)));
    let failure = w.failures().next().unwrap().id;
    let expected = [
        Verdict::Failed(failure),
        Verdict::Ran,
        Verdict::Ran,
        Verdict::Ran,
    ];
    assert_eq!(
        (verdicts.as_slice(), again.as_slice()),
        (&expected[..], &expected[..])
    );
    assert_eq!(
        (n, m),
        (0, 0),
        "a clone's first calls allocated (clone, original)"
    );
}

#[test]
fn a_clone_allocates_for_its_first_new_skip_failure_and_allocation_what_its_original_does() {
    // Five allocations, one failure and one skip record alive, each store
    // with room past them (a vector grows by more than one item). A clone
    // must have that room too: its next skip and its next allocation then
    // allocate nothing and its next new failure only its three strings, as
    // its original's do. (A derived clone held exactly the stores' slots,
    // so the clone's first new ones moved each store.)
    let mut w = World::default();
    let keys: Vec<AllocKey> = (0..5).map(|m| w.alloc(0, m, 4096).unwrap()).collect();
    let b = |k: usize, access| Binding::whole(0, keys[k], access);
    let launch = |kernel, bindings, outcome| Launch {
        kernel,
        stream: 0.into(),
        bindings,
        outcome,
    };
    let compile = Outcome::Failed {
        kind: "compile",
        message: "bad PTX",
    };
    let first = [b(0, Access::Write)];
    let skipped = [b(0, Access::Read), b(1, Access::Write)];
    w.launch(&launch("fill", &first, compile)).unwrap();
    w.launch(&launch("gelu", &skipped, Outcome::Ok)).unwrap();
    let mut clone = w.clone();

    let next_skip = [b(1, Access::Read), b(2, Access::Write)];
    let new_failure = [b(3, Access::Write)];
    let rejected = Outcome::Failed {
        kind: "launch",
        message: "too many resources requested",
    };
    let mut counts = Vec::new();
    for world in [&mut clone, &mut w] {
        let mut verdicts = Vec::with_capacity(2);
        let skip = allocations_in(|| {
            verdicts.push(
                world
                    .launch(&launch("gelu", &next_skip, Outcome::Ok))
                    .unwrap()
                    .verdict,
            )
        });
        let failure = allocations_in(|| {
            verdicts.push(
                world
                    .launch(&launch("copy", &new_failure, rejected))
                    .unwrap()
                    .verdict,
            )
        });
        let alloc = allocations_in(|| world.alloc(0, 5, 4096).map(drop).unwrap());
        assert!(
            matches!(verdicts[0], Verdict::Skipped { .. }),
            "{verdicts:?}"
        );
        assert!(matches!(verdicts[1], Verdict::Failed(_)), "{verdicts:?}");
        assert_eq!(world.failures().count(), 2);
        world.check_invariants().unwrap();
        counts.push((skip, failure, alloc));
    }
    assert_eq!(
        counts,
        [(0, 3, 0), (0, 3, 0)],
        "allocations in the next skip, new failure and allocation (clone, original)"
    );
}

#[test]
fn a_failure_that_comes_and_goes_allocates_its_strings_once() {
    // No failure stays alive to be found again: each failing launch, host
    // write or batch mints a new failure, and the launch after it writes
    // the bytes again, so the failure goes. Its strings' room goes to the
    // next failure minted, whose strings fit it: 0 allocations, where each
    // new failure used to allocate its three strings.
    let mut w = World::default();
    let key = w.alloc(0, 4, 4096).unwrap();
    let out = [Binding::whole(0, key, Access::Write)];
    let launch = |outcome| Launch {
        kernel: "fill",
        stream: 0.into(),
        bindings: &out[..],
        outcome,
    };
    let messages = ["bad grid", "bad block", "too many resources requested"];
    let failing = messages.map(|message| {
        launch(Outcome::Failed {
            kind: "launch",
            message,
        })
    });
    let fixing = launch(Outcome::Ok);
    let copy_failed = Outcome::Failed {
        kind: "copy",
        message: "DMA",
    };
    // Warm: the longest strings first, so every later one fits.
    for f in failing.iter().rev() {
        w.launch(f).unwrap();
        w.launch(&fixing).unwrap();
    }
    w.host_write(&out[0], copy_failed).unwrap();
    w.host_write(&out[0], Outcome::Ok).unwrap();
    let mut results = Vec::with_capacity(2);
    w.launch_batch(&[failing[0], fixing], &mut results).unwrap();
    let minted = w.stats().failures_minted;

    let (mut failed, mut released) = (0u32, 0u32);
    let n = allocations_in(|| {
        for i in 0..999 {
            let outcome = match i % 3 {
                0 => w.launch(&failing[i / 3 % 3]).unwrap().verdict,
                1 => w.host_write(&out[0], copy_failed).unwrap(),
                _ => {
                    results.clear();
                    w.launch_batch(&[failing[2], fixing], &mut results).unwrap();
                    results[0].verdict
                }
            };
            if matches!(outcome, Verdict::Failed(_)) {
                failed += 1;
            }
            let released_now = if i % 3 == 2 {
                results[1].verdict
            } else if i % 3 == 1 {
                w.host_write(&out[0], Outcome::Ok).unwrap()
            } else {
                w.launch(&fixing).unwrap().verdict
            };
            if released_now == Verdict::Ran && w.stats().live_failures == 0 {
                released += 1;
            }
        }
    });
    assert_eq!(
        (n, failed, released),
        (0, 999, 999),
        "failures that came and went allocated"
    );
    assert_eq!(
        w.stats().failures_minted,
        minted + 999,
        "each was a new failure"
    );
    w.check_invariants().unwrap();
}

#[test]
fn shrinking_buffers_that_never_grew_allocates_nothing() {
    let mut w = World::default();
    let key = w.alloc(0, 4, 4096).unwrap();
    let clean = [Binding::whole(0, key, Access::Write)];
    let launch = Launch {
        kernel: "fill",
        stream: 0.into(),
        bindings: &clean[..],
        outcome: Outcome::Ok,
    };
    let mut results = Vec::with_capacity(1);
    w.launch_batch(&[launch], &mut results).unwrap();
    let n = allocations_in(|| {
        for _ in 0..1000 {
            w.shrink_buffers();
        }
    });
    assert_eq!(n, 0, "shrinking room a new world has allocated");
    results.clear();
    let n = allocations_in(|| w.launch_batch(&[launch], &mut results).unwrap());
    assert_eq!((n, results[0].verdict), (0, Verdict::Ran));
}

#[test]
fn a_clone_mints_its_first_new_failure_into_the_room_its_original_would() {
    // A long message comes and goes, then a short one is minted into its
    // room and goes too: the kept strings are short, their room long. A
    // clone must keep that room, so that its next new failure, whose
    // message is longer than the short one, allocates nothing, as its
    // original's does. (A derived clone copied the strings at their
    // length.)
    let mut w = World::default();
    let key = w.alloc(0, 4, 4096).unwrap();
    let out = Binding::whole(0, key, Access::Write);
    let comes_and_goes = |w: &mut World, message| {
        let failed = Outcome::Failed {
            kind: "launch",
            message,
        };
        w.host_write(&out, failed).unwrap();
        w.host_write(&out, Outcome::Ok).unwrap();
    };
    comes_and_goes(&mut w, "too many resources requested");
    comes_and_goes(&mut w, "bad grid");
    let mut clone = w.clone();
    let longer = Outcome::Failed {
        kind: "launch",
        message: "a longer message here",
    };
    let mut counts = Vec::new();
    for world in [&mut clone, &mut w] {
        let mut verdict = Verdict::Ran;
        let n = allocations_in(|| verdict = world.host_write(&out, longer).unwrap());
        assert!(matches!(verdict, Verdict::Failed(_)), "{verdict:?}");
        world.check_invariants().unwrap();
        counts.push(n);
    }
    assert_eq!(
        counts,
        [0, 0],
        "allocations in the next new failure (clone, original)"
    );
}

/// W4 of `docs/performance.md` ("memory flat", which its bench asserts as
/// one failure and one claim): a kernel failing again and again on the
/// buffer it already tainted, in batches and one launch at a time, by
/// binding and by row, allocates nothing once warm, and the heap the
/// world holds does not move by a byte.
#[test]
fn a_kernel_failing_again_on_the_buffer_it_tainted_allocates_nothing() {
    let mut w = World::default();
    let key = w.alloc(0, 1, 4096).unwrap();
    let bound = [Binding::whole(0, key, Access::Write)];
    let row: [Resolved; 1] = [w.resolve_binding(&bound[0]).unwrap().unwrap()];
    let outcome = Outcome::Failed {
        kind: "launch",
        message: "out of memory",
    };
    let by_binding = vec![
        Launch {
            kernel: "fill",
            stream: 0.into(),
            bindings: &bound[..],
            outcome,
        };
        1000
    ];
    let by_row = vec![
        Launch {
            kernel: "fill",
            stream: 0.into(),
            bindings: &row[..],
            outcome,
        };
        1000
    ];
    let mut results = Vec::with_capacity(1000);
    let mut round = |w: &mut World| {
        w.launch_batch(&by_binding, &mut results).unwrap();
        results.clear();
        w.launch_batch(&by_row, &mut results).unwrap();
        results.clear();
        w.launch(&by_binding[0]).unwrap();
        w.launch(&by_row[0]).unwrap();
    };
    round(&mut w);
    let before = live_bytes();
    let n = allocations_in(|| {
        for _ in 0..10 {
            round(&mut w);
        }
    });
    assert_eq!(
        (n, live_bytes() - before),
        (0, 0),
        "the retaint loop allocated"
    );
    let stats = w.stats();
    assert_eq!(
        (stats.live_failures, stats.claims, stats.failures_minted),
        (1, 1, 1)
    );
}

/// A skip allocates nothing for its kernel's name while a live record
/// holds the name (the crate docs, *Bindings resolved once*), though the
/// scheduler never registers the kernel and names it by a fresh copy each
/// time: the name is interned once, and found again by hashing the copy.
#[test]
fn skips_of_a_kernel_a_live_record_names_allocate_nothing_for_the_name() {
    let mut w = World::default();
    for m in 0..4 {
        w.alloc(0, m, 64).unwrap();
    }
    let launch = |w: &mut World, kernel: &str, out: u64, outcome| {
        let bindings = [
            Binding::whole(0, 0, Access::Read),
            Binding::whole(0, out, Access::Write),
        ];
        w.launch(&Launch {
            kernel,
            stream: 0.into(),
            bindings: &bindings,
            outcome,
        })
        .unwrap()
        .verdict
    };
    let failed = Outcome::Failed {
        kind: "launch",
        message: "out of memory",
    };
    // Memory 0 carries a failure; skips of each kernel write memory 1 and
    // 2 and stay, their records holding the two names.
    launch(&mut w, "fill", 0, failed);
    launch(&mut w, "gelu", 1, Outcome::Ok);
    launch(&mut w, "softmax", 2, Outcome::Ok);
    // Then skips by turns write memory 3, each letting the record before
    // it go, named by copies made here and not counted.
    let names: Vec<String> = (0..1000)
        .map(|i| ["gelu", "softmax"][i % 2].to_owned())
        .collect();
    for name in &names[..10] {
        launch(&mut w, name, 3, Outcome::Ok);
    }
    let mut skipped = 0;
    let n = allocations_in(|| {
        for name in &names {
            if matches!(
                launch(&mut w, name, 3, Outcome::Ok),
                Verdict::Skipped { .. }
            ) {
                skipped += 1;
            }
        }
    });
    assert_eq!((n, skipped), (0, 1000), "skips allocated for a held name");
    assert_eq!(w.stats().live_records, 3);
}

/// Recording each launch to a log as it is handed to the world
/// (`LogWriter::write_launch`) allocates nothing once the writer's line
/// buffer has grown to the longest line: the kernel's name, the bindings
/// (by key, by id, on a special stream, left out) and a failure's words
/// are borrowed from the launch, where an `Event::Launch` built for
/// `write_event` costs a `String` and a `Vec` a launch, and two more
/// strings when it failed.
#[cfg(feature = "log")]
#[test]
fn recording_launches_with_write_launch_allocates_nothing_once_warm() {
    use std::io::BufWriter;
    use taintworld::StreamRef;
    use taintworld::log::{Event, LogBinding, LogWriter};

    let mut w = World::default();
    let keys: Vec<AllocKey> = (0..4).map(|m| w.alloc(0, m, 4096).unwrap()).collect();
    let bindings = [
        Binding::whole(0, keys[0], Access::Read),
        Binding::range(0, keys[1], 0, 1024, Access::Read),
        Binding::whole(0, 2, Access::ReadWrite),
        Binding::whole(StreamRef::Special(0), keys[3], Access::Write),
        Binding::whole(0, keys[3], Access::Write),
    ];
    let launches = [
        Launch {
            kernel: "matmul",
            stream: 0.into(),
            bindings: &bindings[..],
            outcome: Outcome::Ok,
        },
        Launch {
            kernel: "fill \"tile\"\n",
            stream: 1.into(),
            bindings: &bindings[1..],
            outcome: Outcome::Failed {
                kind: "launch",
                message: "too many resources requested for launch",
            },
        },
        Launch {
            kernel: "plan",
            stream: 0.into(),
            bindings: &bindings[..2],
            outcome: Outcome::DryRun,
        },
    ];
    let mut log = LogWriter::new(BufWriter::with_capacity(1 << 16, std::io::sink()));
    // Warm: the line buffer grows to the longest line.
    for launch in &launches {
        log.write_launch(launch, &w).unwrap();
    }
    let n = allocations_in(|| {
        for i in 0..999 {
            log.write_launch(&launches[i % 3], &w).unwrap();
        }
    });
    assert_eq!(n, 0, "recording launches allocated");

    // The premise: recording them as events allocates on every launch.
    let event = |launch: &Launch<'_>| Event::Launch {
        kernel: launch.kernel.into(),
        stream: 0,
        bindings: launch
            .bindings
            .iter()
            .filter_map(|b| LogBinding::of(b, &w))
            .collect(),
        outcome: launch.outcome.into(),
    };
    let n = allocations_in(|| {
        for i in 0..999 {
            log.write_event(&event(&launches[i % 3])).unwrap();
        }
    });
    assert!(n >= 2 * 999, "events allocated {n} times for 999 launches");
    log.flush().unwrap();
}

/// Makes `count` allocations from memory id `first` on, frees every other
/// one of them, then makes `count` more (the ids after): twice `count`
/// made, the index and the slot map handed frees to fill in between.
fn allocate_free_and_allocate_again(w: &mut World, first: u64, count: u64) {
    for memory in first..first + count {
        w.alloc(0, memory, 4096).unwrap();
    }
    for memory in (first..first + count).step_by(2) {
        w.free(memory).unwrap();
    }
    for memory in first + count..first + 2 * count {
        w.alloc(0, memory, 4096).unwrap();
    }
}

#[test]
fn allocations_made_into_room_reserved_for_them_allocate_nothing_frees_between_or_not() {
    // Without room reserved the same calls grow the stores: the count
    // below could fail.
    let mut unreserved = World::default();
    unreserved.initialize_stream(0).unwrap();
    let grown = allocations_in(|| allocate_free_and_allocate_again(&mut unreserved, 0, 5_000));
    assert!(
        grown > 0,
        "10,000 allocations into a new world's stores allocated nothing"
    );

    // A new world, and one that has made and freed allocations before (its
    // index holds the room of freed entries, and its slot map free places).
    let mut fresh = World::default();
    let mut used = World::default();
    allocate_free_and_allocate_again(&mut used, 1 << 40, 700);
    for w in [&mut fresh, &mut used] {
        w.initialize_stream(0).unwrap();
        let live = w.stats().allocations;
        w.reserve_allocations(10_000).unwrap();
        let n = allocations_in(|| allocate_free_and_allocate_again(w, 0, 5_000));
        assert_eq!(n, 0, "allocations in 10,000 made into room for 10,000");
        assert_eq!(w.stats().allocations, live + 7_500);
        w.check_invariants().unwrap();
    }
}

/// A `core::fmt` sink that keeps no text: the bytes written and whether a
/// given text was among them, line by line, without a heap.
struct Sink<'a> {
    lines: core::str::Lines<'a>,
    matched: bool,
    bytes: usize,
    pending: [u8; 256],
    at: usize,
}

impl<'a> Sink<'a> {
    fn expecting(text: &'a str) -> Self {
        Sink {
            lines: text.lines(),
            matched: true,
            bytes: 0,
            pending: [0; 256],
            at: 0,
        }
    }

    /// Checks the line held so far against the next expected one.
    fn end_line(&mut self) {
        let got = core::str::from_utf8(&self.pending[..self.at]).ok();
        self.matched &= got.is_some() && got == self.lines.next();
        self.at = 0;
    }

    /// Whether every line matched and none was left out.
    fn matched(mut self) -> bool {
        self.end_line();
        self.matched && self.lines.next().is_none()
    }
}

impl core::fmt::Write for Sink<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        for &byte in s.as_bytes() {
            self.bytes += 1;
            if byte == b'\n' {
                self.end_line();
            } else if self.at < self.pending.len() {
                self.pending[self.at] = byte;
                self.at += 1;
            } else {
                self.matched = false;
            }
        }
        Ok(())
    }
}

/// A tainted read asked with `read_taint`, its chain walked hop by hop
/// and the whole printed through `core::fmt`, allocates nothing, where
/// `read` copies the chain and the error into a report; and says what
/// `read` says, word for word, whole chains and cut ones alike.
#[test]
fn asking_why_bytes_are_tainted_in_place_allocates_nothing_and_says_what_read_says() {
    for chain_limit in [1024, 3] {
        let config = taintworld::Config {
            chain_limit,
            ..taintworld::Config::default()
        };
        let mut w = World::new(config).unwrap();
        let keys: Vec<AllocKey> = (0..8).map(|m| w.alloc(0, m, 4096).unwrap()).collect();
        let b = |k: usize, access| Binding::whole(0, keys[k], access);
        let fail = Outcome::Failed {
            kind: "compile",
            message: "bad PTX",
        };
        // A chain of six skips after the failure: memory k read, memory
        // k + 1 written.
        let first = [b(0, Access::Write)];
        let hops: Vec<[Binding; 2]> = (0..6)
            .map(|k| [b(k, Access::Read), b(k + 1, Access::Write)])
            .collect();
        let launch = |kernel, bindings, outcome| Launch {
            kernel,
            stream: 0.into(),
            bindings,
            outcome,
        };
        w.launch(&launch("fill", &first, fail)).unwrap();
        for hop in &hops {
            w.launch(&launch("step", hop, Outcome::Ok)).unwrap();
        }
        let read = b(6, Access::Read);
        let ReadResult::Tainted(report) = w.read(&read).unwrap() else {
            panic!("memory 6 should carry the failure through six skips");
        };
        let expected_hops = if chain_limit == 3 { 3 } else { 6 };
        assert_eq!(report.chain.len(), expected_hops, "{report}");
        assert_eq!(report.truncated, chain_limit == 3, "{report}");
        let text = report.to_string();
        let (mut hops, mut cut, mut needed_sum, mut printed) = (0, false, 0, None);
        let n = allocations_in(|| {
            let taint = w.read_taint(&read).unwrap().expect("tainted");
            for hop in taint.chain() {
                hops += 1;
                needed_sum += hop.needed;
            }
            cut = taint.truncated();
            let mut sink = Sink::expecting(&text);
            core::fmt::Write::write_fmt(&mut sink, format_args!("{taint}")).unwrap();
            printed = Some((sink.bytes, sink.matched()));
        });
        assert_eq!(n, 0, "chain_limit {chain_limit}: asking in place allocated");
        assert_eq!((hops, cut), (expected_hops, report.truncated));
        let needed: u64 = report.chain.iter().map(|h| h.needed).sum();
        assert_eq!(needed_sum, needed);
        assert_eq!(printed, Some((text.len(), true)), "{text}");
        let taint = w.read_taint(&read).unwrap().expect("tainted");
        assert_eq!(taint.to_report(), report);
        assert_eq!(
            w.read_taint(&b(7, Access::Read))
                .unwrap()
                .map(|t| t.failure()),
            None
        );
        w.check_invariants().unwrap();
    }
}
