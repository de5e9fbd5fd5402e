//! The workloads of `systems.rs` run a given number of times with no timing
//! at all, for `scripts/instruction-counts` and `scripts/instruction-profile`:
//! under `valgrind --tool=callgrind --toggle-collect='*measured*'` only the
//! work inside [`measured`] is counted, and that count divided by the units
//! of work is the instruction count per unit — the same from run to run of
//! one binary in one environment (the environment's size moves the stack,
//! and with it the hash seeds of the paths that hash, up to about 3 % of a
//! real step: `scripts/instruction-counts --seeds`), where wall-clock
//! medians on a shared machine move by half or more. It prints the units
//! of work measured.
//!
//! ```text
//! instructions <workload> <side> <iterations> [size]
//!   workload: w1 | w1-claimed (W1's batch beside one allocation
//!             carrying a failure) | w1-single (W1's launches one `World::launch` at a
//!             time) | w1-single-claimed (the same beside one allocation
//!             carrying a failure) | w2 | w2-own-strings, w4-own-strings (W2's and
//!             W4's launches each naming its kernel and error by strings of
//!             its own) | w3 (W3's checks: the crate's `check_reads`
//!             on rows, the baseline's scan) | w3-searched (the same, the
//!             baseline binary-searching) | w3-carve (W3's write
//!             carving 100 claims, a fresh clone each) | w3-carve-mid
//!             (the same through the middle 100) | w3-one (a write
//!             of one claim of the set, whole) | w3-fail (the
//!             same write failing, a new failure's claim over the 100) |
//!             w4 | w5 |
//!             w5-registered (W5 with one string a kernel, registered
//!             with the world) | w5-gpt2, w5-resnet (W5's steps from the
//!             real GPT-2 or ResNet training-step log, launch 3 failing) |
//!             w5-gpt2-registered (the GPT-2 step's names registered) |
//!             w5-gpt2-warm, w5-resnet-warm (the same steps from a world
//!             that has made and freed their allocations once) |
//!             w5-gpt2-new-ids, w5-resnet-new-ids (the same from a world
//!             that has made and freed as many of other memory ids) |
//!             w5-two-streams (the real two-stream log's steps) |
//!             w5-gpt2-decode, w5-gpt2-decode-warm (the real GPT-2
//!             decoding log's steps, from an empty world or a warm one) |
//!             graph (replays of a captured graph of W1's writes, good
//!             over clean memory) | graph-failed (each replay failed, then
//!             good) | graph-gpt2, graph-gpt2-failed (the same with the
//!             graph of the real GPT-2 step captured whole) | graph-decode,
//!             graph-decode-failed (the same with the real decoding pass's)
//!   side:     crate | rows (pre-resolved) | baseline
//! ```

mod baseline;
mod workloads;

use std::hint::black_box;
use std::rc::Rc;

use baseline::Baseline;
use taintworld::systems::check_reads;
use taintworld::{Outcome, Resolved, World};
use workloads::{
    Allocs, GPT2, GPT2_DECODE, GPT2_DECODE_GRAPH, GPT2_GRAPH, GRAPH, KernelNames, OwnStrings,
    RESNET, TWO_STREAMS, W5_FAILED_LAUNCH, base_kernels, base_steps, graph_replay, real_graph,
    replay_base, replay_graph, run_base_quiet, step_bindings, w1_beside_a_failure, w1_clean,
    w2_chain, w3_carve, w3_carve_mid, w3_fail_base, w3_fail_world, w3_fragmented, w3_reads,
    w3_write_one, w4_retaint, w5_real, w5_training, world_steps,
};

/// Bindings (W1), skips (W2) or launches (W4) per iteration unless the
/// command line says otherwise.
const SIZE: usize = 10_000;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `cargo bench` runs every bench target with `--bench`, after whatever
    // filter and criterion options it was given: those are the `systems`
    // bench's, and this one has nothing to do then. The scripts run its
    // executable directly, with no flag.
    if args.iter().any(|a| a.starts_with('-')) {
        return;
    }
    let (workload, side, iterations, n) = match args.as_slice() {
        [w, s, iterations, rest @ ..] => (
            w.as_str(),
            s.as_str(),
            iterations.parse::<usize>().unwrap_or(0),
            rest.first().and_then(|n| n.parse().ok()).unwrap_or(SIZE),
        ),
        _ => {
            eprintln!(
                "usage: instructions WORKLOAD crate|rows|baseline ITERATIONS [SIZE] \
                 (run through scripts/instruction-counts, under callgrind)"
            );
            std::process::exit(2);
        }
    };
    let w5_shaped = W5_SHAPED.iter().find(|(name, ..)| *name == workload);
    let units = match (workload, w5_shaped) {
        (_, Some(&(_, names, real))) => run_w5(side, iterations, names, real),
        ("w1-single", _) => run_w1_single(side, iterations, n, false),
        ("w1-single-claimed", _) => run_w1_single(side, iterations, n, true),
        ("w3", _) => run_w3(side, iterations, n, false),
        ("w3-searched", _) => run_w3(side, iterations, n, true),
        ("w3-carve", _) => run_w3_carve(side, iterations, w3_carve),
        ("w3-carve-mid", _) => run_w3_carve(side, iterations, w3_carve_mid),
        ("w3-one", _) => run_w3_carve(side, iterations, w3_write_one),
        ("w3-fail", _) => run_w3_fail(side, iterations),
        ("graph", _) => run_graph(side, iterations, GraphOf::W1(n), false),
        ("graph-failed", _) => run_graph(side, iterations, GraphOf::W1(n), true),
        ("graph-gpt2", _) => run_graph(side, iterations, GraphOf::Gpt2Step, false),
        ("graph-gpt2-failed", _) => run_graph(side, iterations, GraphOf::Gpt2Step, true),
        ("graph-decode", _) => run_graph(side, iterations, GraphOf::DecodePass, false),
        ("graph-decode-failed", _) => run_graph(side, iterations, GraphOf::DecodePass, true),
        _ => {
            let (mut pair, prepared, kernel, units) = match workload {
                "w1" => {
                    let (p, q) = w1_clean(n);
                    (p, q, "clean", n / 4 * 4)
                }
                "w1-claimed" => {
                    let (mut p, q) = w1_clean(n);
                    w1_beside_a_failure(&mut p);
                    (p, q, "clean", n / 4 * 4)
                }
                "w2" | "w2-own-strings" => {
                    let (p, q) = w2_chain(n);
                    (p, q, "gelu", n)
                }
                "w4" | "w4-own-strings" => {
                    let (p, q) = w4_retaint(n);
                    (p, q, "fill", n)
                }
                other => {
                    eprintln!(
                        "unknown workload {other}: w1, w1-claimed, w1-single, w1-single-claimed, w2, \
                         w2-own-strings, w3, w4-own-strings, \
                         w3-searched, w3-carve, w3-carve-mid, w3-one, w3-fail, w4, w5, w5-registered, w5-gpt2, \
                         w5-gpt2-registered, w5-gpt2-warm, w5-resnet, w5-resnet-warm, \
                         w5-gpt2-new-ids, w5-resnet-new-ids, w5-two-streams, w5-gpt2-decode, \
                         w5-gpt2-decode-warm, graph, graph-failed, graph-gpt2, graph-gpt2-failed, \
                         graph-decode or graph-decode-failed"
                    );
                    std::process::exit(2);
                }
            };
            // With `-own-strings`, each launch's kernel and error strings
            // are copies of its own (`OwnStrings`); the baseline's side is
            // the same either way.
            let own = OwnStrings::of(&prepared);
            let (launches, row_launches) = if workload.ends_with("-own-strings") {
                (
                    prepared.launches_owning(&own),
                    prepared.row_launches_owning(&own),
                )
            } else {
                (prepared.launches(), prepared.row_launches())
            };
            let base_launches = prepared.base_launches();
            let mut results = Vec::with_capacity(launches.len());
            let kernel: Rc<str> = Rc::from(kernel);
            // One round outside the count, as criterion warms up: buffers
            // grow to the batch's size once, not on every launch.
            for round in 0..=iterations {
                if round == 0 {
                    if side == "crate" {
                        pair.world
                            .launch_batch(&launches, &mut results)
                            .expect("valid launches");
                        results.clear();
                    } else if side == "rows" {
                        pair.world
                            .launch_batch(&row_launches, &mut results)
                            .expect("valid launches");
                        results.clear();
                    } else {
                        run_base_quiet(&mut pair.base, &kernel, &base_launches);
                    }
                    continue;
                }
                if side == "crate" {
                    results.clear();
                    measured(|| {
                        pair.world
                            .launch_batch(black_box(&launches), &mut results)
                            .expect("valid launches")
                    });
                } else if side == "rows" {
                    results.clear();
                    measured(|| {
                        pair.world
                            .launch_batch(black_box(&row_launches), &mut results)
                            .expect("valid launches")
                    });
                } else {
                    measured(|| run_base_quiet(black_box(&mut pair.base), &kernel, &base_launches));
                }
            }
            units * iterations
        }
    };
    println!("{units}");
}

/// W1's clean launches, each through `World::launch` on its own (as a
/// scheduler that does not batch calls it); per binding. `claimed`: beside
/// one more allocation, which none of them binds, carrying a failure — so
/// that the world is not quiet and each launch is checked and settled as
/// in any world that holds a failure (the baseline has no such mode: its
/// side is W1's own).
fn run_w1_single(side: &str, iterations: usize, n: usize, claimed: bool) -> usize {
    let (mut pair, prepared) = w1_clean(n);
    if claimed {
        w1_beside_a_failure(&mut pair);
    }
    let launches = prepared.launches();
    let row_launches = prepared.row_launches();
    let base_launches = prepared.base_launches();
    let kernel: Rc<str> = Rc::from("clean");
    for round in 0..=iterations {
        let run = |pair: &mut workloads::Pair| match side {
            "crate" => {
                for launch in &launches {
                    black_box(pair.world.launch(black_box(launch)).expect("valid launch"));
                }
            }
            "rows" => {
                for launch in &row_launches {
                    black_box(pair.world.launch(black_box(launch)).expect("valid launch"));
                }
            }
            _ => run_base_quiet(&mut pair.base, &kernel, &base_launches),
        };
        if round == 0 {
            run(&mut pair);
        } else {
            measured(|| run(&mut pair));
        }
    }
    n / 4 * 4 * iterations
}

/// W3's checks of `n` random reads of the fragmented allocation, as
/// `systems.rs` times them: the crate's `check_reads` on pre-resolved rows
/// (`crate` and `rows` alike: W3 binds rows only), or the baseline's
/// scan, or with `searched` its binary search; per check.
fn run_w3(side: &str, iterations: usize, n: usize, searched: bool) -> usize {
    let pair = w3_fragmented();
    let reads = w3_reads(&pair, n);
    let rows: Vec<Resolved> = reads.iter().map(|b| b.row(&pair.world)).collect();
    let allocs = pair.world.allocations();
    let run = || match side {
        "crate" | "rows" => rows
            .iter()
            .filter(|row| check_reads(std::slice::from_ref(*row), allocs).is_some())
            .count(),
        _ if searched => reads
            .iter()
            .filter(|r| pair.base.failure_searched(r.at, r.start, r.end).is_some())
            .count(),
        _ => reads
            .iter()
            .filter(|r| pair.base.failure(r.at, r.start, r.end).is_some())
            .count(),
    };
    for round in 0..=iterations {
        if round == 0 {
            black_box(run());
        } else {
            black_box(measured(run));
        }
    }
    n * iterations
}

/// The work counted: callgrind collects only inside this function.
#[inline(never)]
fn measured<T>(work: impl FnOnce() -> T) -> T {
    work()
}

/// W3's write that carves through 100 claims (where `carve` puts it), on
/// a fresh clone per iteration as `systems.rs` times it (the clones made
/// outside [`measured`]); per write. `crate` and `rows` alike: one binding.
fn run_w3_carve(
    side: &str,
    iterations: usize,
    carve: fn(&workloads::Pair) -> workloads::Both,
) -> usize {
    let pair = w3_fragmented();
    let carve = carve(&pair);
    let (binding, base_binding) = (carve.binding(), carve.base_binding());
    on_clones(&pair, iterations, |world, base| match side {
        "crate" | "rows" => {
            black_box(world.host_write(black_box(&binding), Outcome::Ok)).expect("valid write");
        }
        _ => base.written(std::slice::from_ref(black_box(&base_binding))),
    });
    iterations
}

/// The same write failing, as `systems.rs` times it; per write.
fn run_w3_fail(side: &str, iterations: usize) -> usize {
    let pair = w3_fragmented();
    let carve = w3_carve(&pair);
    let (binding, base_binding) = (carve.binding(), carve.base_binding());
    let kernel: Rc<str> = Rc::from(World::HOST_WRITE_KERNEL);
    on_clones(&pair, iterations, |world, base| match side {
        "crate" | "rows" => {
            black_box(w3_fail_world(world, black_box(&binding)));
        }
        _ => {
            black_box(w3_fail_base(base, &kernel, black_box(&base_binding)));
        }
    });
    iterations
}

/// Which graph [`run_graph`] replays.
enum GraphOf {
    /// The graph of W1's writes of `n` bindings (`n / 4` recorded writes).
    W1(usize),
    /// The real GPT-2 step captured whole (`real_graph`).
    Gpt2Step,
    /// The real decoding pass captured once and replayed a token.
    DecodePass,
}

/// Replays of a captured graph, good over clean memory or (`failed`)
/// failed then good, as `systems.rs` times them, after one round
/// uncounted; per recorded binding. `crate` and `rows` alike: a replay
/// binds what the graph recorded.
fn run_graph(side: &str, iterations: usize, of: GraphOf, failed: bool) -> usize {
    let (mut pair, graph, writes) = match of {
        GraphOf::W1(n) => {
            let (pair, writes) = graph_replay(n);
            (pair, GRAPH, writes)
        }
        GraphOf::Gpt2Step => real_graph(GPT2_GRAPH),
        GraphOf::DecodePass => real_graph(GPT2_DECODE_GRAPH),
    };
    let kernel: Rc<str> = Rc::from(World::graph_kernel(graph));
    let round = |pair: &mut workloads::Pair| match side {
        "crate" | "rows" => {
            if failed {
                black_box(replay_graph(&mut pair.world, graph, true));
            }
            black_box(replay_graph(&mut pair.world, graph, false));
        }
        _ => {
            if failed {
                black_box(replay_base(&mut pair.base, &kernel, &writes, true));
            }
            black_box(replay_base(&mut pair.base, &kernel, &writes, false));
        }
    };
    round(&mut pair);
    for _ in 0..iterations {
        measured(|| round(&mut pair));
    }
    iterations * writes.len()
}

/// `step` on `iterations` fresh clones of each side of `pair`, each call
/// counted: the clones are made before and dropped after the counting, so
/// only the step is measured.
fn on_clones(pair: &workloads::Pair, iterations: usize, step: impl Fn(&mut World, &mut Baseline)) {
    let mut worlds: Vec<_> = (0..iterations).map(|_| pair.world.clone()).collect();
    let mut bases: Vec<_> = (0..iterations).map(|_| pair.base.clone()).collect();
    for (world, base) in worlds.iter_mut().zip(&mut bases) {
        measured(|| step(world, base));
    }
    drop(worlds);
    drop(bases);
}

/// A real log's file name in `examples/logs/real/`, and how its steps
/// make their allocations (from an empty world or a warm one).
type RealLog = (&'static str, Allocs);

/// The W5-shaped workloads: each one's name, how its kernels are named, and
/// the real log it replays (and whether from a warm world), if any.
const W5_SHAPED: [(&str, KernelNames, Option<RealLog>); 12] = [
    ("w5", KernelNames::PerLaunch, None),
    ("w5-registered", KernelNames::Registered, None),
    (
        "w5-gpt2",
        KernelNames::PerLaunch,
        Some((GPT2, Allocs::InSteps)),
    ),
    (
        "w5-gpt2-registered",
        KernelNames::Registered,
        Some((GPT2, Allocs::InSteps)),
    ),
    (
        "w5-gpt2-warm",
        KernelNames::PerLaunch,
        Some((GPT2, Allocs::InStepsWarm)),
    ),
    (
        "w5-resnet",
        KernelNames::PerLaunch,
        Some((RESNET, Allocs::InSteps)),
    ),
    (
        "w5-resnet-warm",
        KernelNames::PerLaunch,
        Some((RESNET, Allocs::InStepsWarm)),
    ),
    (
        "w5-gpt2-new-ids",
        KernelNames::PerLaunch,
        Some((GPT2, Allocs::InStepsWarmNewIds)),
    ),
    (
        "w5-resnet-new-ids",
        KernelNames::PerLaunch,
        Some((RESNET, Allocs::InStepsWarmNewIds)),
    ),
    (
        "w5-two-streams",
        KernelNames::PerLaunch,
        Some((TWO_STREAMS, Allocs::InSteps)),
    ),
    (
        "w5-gpt2-decode",
        KernelNames::PerLaunch,
        Some((GPT2_DECODE, Allocs::InSteps)),
    ),
    (
        "w5-gpt2-decode-warm",
        KernelNames::PerLaunch,
        Some((GPT2_DECODE, Allocs::InStepsWarm)),
    ),
];

/// W5 steps on a fresh clone per iteration, as `systems.rs` times them (the
/// clones are made outside [`measured`]): the generated log's, or with
/// `real` a real log's (launch 3 failing as in W5), from an empty world or
/// a warm one (see `w5_real`).
fn run_w5(side: &str, iterations: usize, names: KernelNames, real: Option<RealLog>) -> usize {
    let (pair, prepared, steps) = match real {
        Some((file, allocs)) => w5_real(file, names, Some(W5_FAILED_LAUNCH), allocs),
        None => w5_training(20_000, names),
    };
    let launches = prepared.launches();
    let row_launches = prepared.row_launches();
    let base_launches = prepared.base_launches();
    let bindings = step_bindings(&steps);
    let kernels = base_kernels(&prepared.work, names);
    on_clones(&pair, iterations, |world, base| match side {
        "crate" => world_steps(world, &steps, &bindings, &launches),
        "rows" => world_steps(world, &steps, &bindings, &row_launches),
        _ => base_steps(base, &steps, &base_launches, &kernels),
    });
    launches.len() * iterations
}
