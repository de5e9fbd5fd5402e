//! Leaks (issue 6, SPEC §10 invariants 2 and 6): after a 1,000,000-operation
//! random run frees every allocation, ends every capture and profile and
//! destroys every graph, no failure, skip record, claim or allocation
//! remains — and the heap the world holds is back to what it held before
//! the run, give or take the capacity its stores keep once grown.
//!
//! The heap is measured with the counting allocator of
//! `tests/common/counting.rs`, on this test's thread.

#[path = "common/counting.rs"]
mod counting;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use taintworld::{Access, Binding, Config, Launch, LaunchResult, Outcome, World};

/// Bytes this test's thread holds on the heap.
fn live_heap() -> isize {
    counting::live_bytes()
}

/// A seeded generator: the same run every time.
struct Rng(ChaCha8Rng);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0.random_range(0..n)
    }
}

const MEMORIES: u64 = 24;
const STREAMS: u64 = 4;
const GRAPHS: u64 = 8;
const PROFILES: u64 = 4;
/// Graph ids the clean-up ends windows into: never used by the run.
const CLEANUP_GRAPHS: u64 = 1 << 32;

/// Names made once, before anything is measured, so that the run itself
/// owns no strings.
struct Names {
    kernels: Vec<String>,
    messages: Vec<String>,
}

/// The buffers the run reuses, grown before anything is measured.
struct Scratch {
    bindings: Vec<Vec<Binding>>,
    results: Vec<LaunchResult>,
}

/// Mostly the stream the run allocates `memory` on, so that most bindings
/// resolve; now and then another.
fn stream_of(rng: &mut Rng, memory: u64) -> u64 {
    if rng.below(8) == 0 {
        rng.below(STREAMS)
    } else {
        memory % STREAMS
    }
}

fn binding(rng: &mut Rng) -> Binding {
    let access = match rng.below(8) {
        0..=3 => Access::Read,
        4 | 5 => Access::Write,
        6 => Access::ReadWrite,
        _ => Access::Dead,
    };
    let range = match rng.below(8) {
        0 | 1 => None,
        // Now and then past the end or reversed: bad input, rejected.
        2 => Some((rng.below(80), rng.below(80))),
        _ => {
            let s = rng.below(48);
            Some((s, s + rng.below(16)))
        }
    };
    let memory = rng.below(MEMORIES);
    Binding {
        stream: stream_of(rng, memory).into(),
        memory: memory.into(),
        range,
        access,
    }
}

fn outcome<'a>(rng: &mut Rng, names: &'a Names, dry: bool) -> Outcome<'a> {
    match rng.below(16) {
        0..=2 => Outcome::Failed {
            kind: "launch",
            message: &names.messages[rng.below(names.messages.len() as u64) as usize],
        },
        3 if dry => Outcome::DryRun,
        _ => Outcome::Ok,
    }
}

/// One random operation; bad input is expected and ignored (it changes
/// nothing).
fn step(w: &mut World, rng: &mut Rng, names: &Names, scratch: &mut Scratch) {
    let kernel = names.kernels[rng.below(names.kernels.len() as u64) as usize].as_str();
    match rng.below(40) {
        0..=4 => {
            let memory = rng.below(MEMORIES);
            let _ = w.alloc(stream_of(rng, memory), memory, rng.below(65));
        }
        5 => {
            let message = &names.messages[rng.below(4) as usize];
            let memory = rng.below(MEMORIES);
            let _ = w.alloc_failed(
                stream_of(rng, memory),
                memory,
                rng.below(65),
                "oom",
                message,
            );
        }
        6..=9 => {
            let _ = w.free(rng.below(MEMORIES));
        }
        10..=27 => {
            let b = &mut scratch.bindings[0];
            b.clear();
            for _ in 0..rng.below(5) {
                b.push(binding(rng));
            }
            let _ = w.launch(&Launch {
                kernel,
                stream: rng.below(STREAMS).into(),
                bindings: b,
                outcome: outcome(rng, names, true),
            });
        }
        28 | 29 => {
            let n = 1 + rng.below(4) as usize;
            for b in &mut scratch.bindings[..n] {
                b.clear();
                for _ in 0..rng.below(5) {
                    b.push(binding(rng));
                }
            }
            let mut batch = [Launch {
                kernel,
                stream: 0.into(),
                bindings: &[],
                outcome: Outcome::Ok,
            }; 4];
            for (l, b) in batch.iter_mut().zip(&scratch.bindings[..n]) {
                l.stream = rng.below(STREAMS).into();
                l.bindings = b.as_slice();
                l.outcome = outcome(rng, names, true);
            }
            scratch.results.clear();
            let _ = w.launch_batch(&batch[..n], &mut scratch.results);
        }
        30 | 31 => {
            let b = binding(rng);
            let _ = w.host_write(&b, outcome(rng, names, false));
        }
        32 | 33 => {
            let _ = w.read(&binding(rng));
        }
        34 => {
            let _ = w.capture_begin(rng.below(STREAMS));
        }
        35 => {
            let _ = w.capture_end(rng.below(STREAMS), rng.below(GRAPHS));
        }
        36 => {
            let _ = w.replay(rng.below(GRAPHS), outcome(rng, names, false));
        }
        37 => {
            let _ = w.graph_destroy(rng.below(GRAPHS));
        }
        38 => {
            let _ = w.profile_begin(rng.below(PROFILES));
        }
        _ => {
            let _ = w.profile_end(rng.below(PROFILES));
        }
    }
}

/// Frees every allocation, ends every capture window and profile, destroys
/// every graph.
fn clean_up(w: &mut World) {
    for memory in 0..MEMORIES {
        let _ = w.free(memory);
    }
    for stream in 0..STREAMS {
        let _ = w.capture_end(stream, CLEANUP_GRAPHS + stream);
    }
    for graph in (0..GRAPHS).chain(CLEANUP_GRAPHS..CLEANUP_GRAPHS + STREAMS) {
        let _ = w.graph_destroy(graph);
    }
    for profile in 0..PROFILES {
        let _ = w.profile_end(profile);
    }
}

fn assert_empty(w: &World) {
    let stats = w.stats();
    assert_eq!(stats.live_failures, 0, "{stats:?}");
    assert_eq!(stats.live_records, 0, "{stats:?}");
    assert_eq!(stats.claims, 0, "{stats:?}");
    assert_eq!(stats.allocations, 0, "{stats:?}");
    assert_eq!(stats.tainted_bytes, 0, "{stats:?}");
    w.check_invariants().unwrap();
}

#[test]
fn a_million_random_operations_leave_nothing_behind_and_the_heap_returns() {
    const OPERATIONS: u64 = 1_000_000;
    const WARM_UP: u64 = 100_000;
    let names = Names {
        kernels: (0..32).map(|i| format!("kernel_{i}")).collect(),
        messages: (0..8).map(|i| format!("failure message {i}")).collect(),
    };
    let mut scratch = Scratch {
        bindings: (0..4).map(|_| Vec::with_capacity(8)).collect(),
        results: Vec::with_capacity(8),
    };
    let mut w = World::new(Config {
        max_streams: STREAMS,
        chain_limit: 64,
        ..Config::default()
    })
    .unwrap();
    let mut rng = Rng(ChaCha8Rng::seed_from_u64(0x1ea4_5eed));

    // Warm-up: the stores grow to their working size, then everything ends.
    for _ in 0..WARM_UP {
        step(&mut w, &mut rng, &names, &mut scratch);
    }
    clean_up(&mut w);
    assert_empty(&w);
    let start = live_heap();

    let mut launches_before = w.stats().launches;
    for i in 0..OPERATIONS {
        step(&mut w, &mut rng, &names, &mut scratch);
        if i % 100_000 == 99_999 {
            w.check_invariants().unwrap();
            // The run does something: launches keep being numbered.
            let launches = w.stats().launches;
            assert!(launches > launches_before);
            launches_before = launches;
        }
    }
    let peak = live_heap();
    let stats = w.stats();
    // The run did real work: failures minted and launches skipped.
    assert!(stats.failures_minted > 10_000, "{stats:?}");
    clean_up(&mut w);
    assert_empty(&w);
    let end = live_heap();

    // What the stores keep of their grown capacity (slot maps and hash
    // maps do not shrink). Measured: see docs/reliability.md.
    let retained = end.saturating_sub(start);
    assert!(
        retained <= 64 * 1024,
        "the world kept {retained} bytes more than after the warm-up"
    );

    // And a clean-up of the clean-up changes nothing.
    clean_up(&mut w);
    assert_eq!(live_heap(), end);
    // Printed last: the test harness's captured stderr is itself heap.
    eprintln!(
        "heap: {start} bytes after warm-up, {peak} at the end of the run, \
         {end} after clean-up; retained capacity {retained} bytes"
    );
}

/// A world holding an allocation whose claim set has `claims` claims, each
/// one byte of its own failure (so none fuse), and a clone of it.
fn world_with_claims(claims: u64) -> (World, World) {
    let mut w = World::default();
    w.alloc(0, MEMORY_OF_MANY, 2 * claims).unwrap();
    for i in 0..claims {
        let kind = format!("kind {i}");
        let write = [Binding::range(
            0,
            MEMORY_OF_MANY,
            2 * i,
            2 * i + 1,
            Access::Write,
        )];
        let failed = w
            .launch(&Launch {
                kernel: "fill",
                stream: 0.into(),
                bindings: &write,
                outcome: Outcome::Failed {
                    kind: &kind,
                    message: "bad PTX",
                },
            })
            .unwrap();
        assert!(matches!(failed.verdict, taintworld::Verdict::Failed(_)));
    }
    assert_eq!(w.stats().claims, claims);
    assert_eq!(w.stats().live_failures, claims);
    w.check_invariants().unwrap();
    let copy = w.clone();
    (w, copy)
}

/// The memory id of `world_with_claims`' allocation.
const MEMORY_OF_MANY: u64 = 7;

#[test]
fn a_world_dropped_while_a_claim_set_is_counted_or_in_its_tree_gives_all_its_heap_back() {
    use taintworld::components::claim::{COUNTED_ABOVE, TREE_ABOVE};
    // Past each form's threshold: counted, and counted in a tree.
    let sizes = [COUNTED_ABOVE as u64 + 1, TREE_ABOVE as u64 + 1];
    for claims in sizes {
        let before = live_heap();
        let (w, copy) = world_with_claims(claims);
        assert!(live_heap() > before);
        drop(w);
        // The clone's claim set (its large part too) is its own.
        copy.check_invariants().unwrap();
        assert_eq!(copy.stats().claims, claims);
        drop(copy);
        assert_eq!(
            live_heap(),
            before,
            "a world holding a set of {claims} claims kept heap after it was dropped"
        );
    }
}

/// A batch that is resolved whole (beside a claim one of its launches
/// binds) leaves the world's row buffer as roomy as the batch, 32 bytes a
/// binding, for the next batch to reuse; `shrink_buffers` gives the room
/// back, and the world goes on as before.
#[test]
fn a_large_batchs_rows_are_kept_until_the_world_shrinks_its_buffers() {
    const LAUNCHES: usize = 10_000;
    let mut w = World::default();
    for memory in 1..=3 {
        w.alloc(0, memory, 64).unwrap();
    }
    let fill = [Binding::whole(0, 1, Access::Write)];
    let failed = Outcome::Failed {
        kind: "compile",
        message: "bad PTX",
    };
    w.launch(&Launch {
        kernel: "fill",
        stream: 0.into(),
        bindings: &fill,
        outcome: failed,
    })
    .unwrap();
    let first = [
        Binding::whole(0, 1, Access::Read),
        Binding::whole(0, 2, Access::Write),
    ];
    let rest = [Binding::whole(0, 3, Access::ReadWrite); 2];
    let launches: Vec<Launch> = (0..LAUNCHES)
        .map(|i| Launch {
            kernel: "step",
            stream: 0.into(),
            bindings: if i == 0 { &first } else { &rest },
            outcome: Outcome::Ok,
        })
        .collect();
    let mut results: Vec<LaunchResult> = Vec::with_capacity(2 * LAUNCHES);

    let before = live_heap();
    w.launch_batch(&launches, &mut results).unwrap();
    let rows = 32 * 2 * LAUNCHES as isize;
    let grown = live_heap() - before;
    assert!(
        grown >= rows,
        "{grown} bytes grown for {rows} bytes of rows"
    );
    w.shrink_buffers();
    let kept = live_heap() - before;
    assert!(kept < 4096, "{kept} bytes kept after shrink_buffers");
    // The room a new world starts with stays: a launch beside the claim,
    // its rows resolved, allocates nothing.
    let ran = counting::allocations_in(|| {
        let result = w.launch(&launches[1]).unwrap();
        assert_eq!(result.verdict, taintworld::Verdict::Ran);
    });
    assert_eq!(ran, 0, "allocations in a launch after shrink_buffers");

    w.launch_batch(&launches, &mut results).unwrap();
    assert_eq!(results.len(), 2 * LAUNCHES);
    assert!(matches!(
        results[LAUNCHES].verdict,
        taintworld::Verdict::Skipped { .. }
    ));
    w.check_invariants().unwrap();
}

#[test]
fn a_long_error_is_given_back_when_its_failure_goes_and_a_kept_one_when_the_world_shrinks() {
    // The failure store keeps the strings of the failure removed last for
    // the next one minted, but only room of up to 1 KiB a string: a
    // 64 KiB message goes with its failure, and the next failure does not
    // hold its room. What it keeps, `shrink_buffers` gives back.
    let mut w = World::default();
    let key = w.alloc(0, 4, 64).unwrap();
    let out = Binding::whole(0, key, Access::Write);
    let comes_and_goes = |w: &mut World, message: &str| {
        let failed = Outcome::Failed {
            kind: "launch",
            message,
        };
        w.host_write(&out, failed).unwrap();
        w.host_write(&out, Outcome::Ok).unwrap();
    };
    let long = "x".repeat(64 * 1024);
    let before = live_heap();
    comes_and_goes(&mut w, &long);
    let kept = live_heap() - before;
    assert!(kept < 1024, "{kept} bytes kept after a 64 KiB error went");
    w.host_write(
        &out,
        Outcome::Failed {
            kind: "launch",
            message: "small",
        },
    )
    .unwrap();
    let room = w
        .failures()
        .next()
        .expect("the failure lives")
        .error
        .message
        .capacity();
    assert!(
        room < 1024,
        "a new failure's message holds {room} bytes of room"
    );
    w.host_write(&out, Outcome::Ok).unwrap();

    comes_and_goes(&mut w, &"y".repeat(1000));
    let before = live_heap();
    w.shrink_buffers();
    let given_back = before - live_heap();
    assert!(
        given_back >= 1000,
        "{given_back} bytes given back by shrinking, a 1000-byte message kept"
    );
    assert_eq!(w.stats().live_failures, 0);
    w.check_invariants().unwrap();
}

/// However many profiles are open when a failure comes, its error is kept
/// once for them all, not copied into each: 10,000 `profile_begin` lines
/// and one failed launch with a 1 MiB message made a replay hold 10 GB.
/// The profiles still each end invalid with that failure, and a profile
/// begun after it still sees the next.
#[test]
fn a_failure_seen_by_many_open_profiles_is_kept_once() {
    const OPEN: u64 = 10_000;
    let mut w = World::default();
    w.alloc(0, 1, 64).unwrap();
    let out = [Binding::whole(0, 1, Access::Write)];
    for profile in 0..OPEN {
        w.profile_begin(profile).unwrap();
    }
    let long = "x".repeat(4096);
    let failed = Launch {
        kernel: "fill",
        stream: 0.into(),
        bindings: &out,
        outcome: Outcome::Failed {
            kind: "launch",
            message: &long,
        },
    };
    let before = live_heap();
    w.launch(&failed).unwrap();
    let kept = live_heap() - before;
    assert!(
        kept < 64 * 1024,
        "{kept} bytes kept for one 4 KiB error seen by {OPEN} open profiles"
    );

    // Later failures add nothing for the profiles that saw one already.
    w.profile_begin(OPEN).unwrap();
    let second = Launch {
        outcome: Outcome::Failed {
            kind: "launch",
            message: "second",
        },
        ..failed
    };
    w.launch(&second).unwrap();
    for profile in 0..OPEN {
        match w.profile_end(profile).unwrap() {
            taintworld::ProfileResult::Invalid { error, .. } => assert_eq!(error.message, long),
            other => panic!("profile {profile} ended {other:?}"),
        }
    }
    match w.profile_end(OPEN).unwrap() {
        taintworld::ProfileResult::Invalid { error, .. } => assert_eq!(error.message, "second"),
        other => panic!("profile {OPEN} ended {other:?}"),
    }
    w.profile_begin(0).unwrap();
    assert_eq!(w.profile_end(0).unwrap(), taintworld::ProfileResult::Valid);
    w.check_invariants().unwrap();
}
