//! The seed-shaped baseline the benchmarks compare against is correct too:
//! on every workload it gives the world's verdicts, failure ids and claimed
//! bytes, so a ratio is between two correct implementations. The world is
//! run both ways the benches run it: binding `Binding`s and binding
//! pre-resolved rows.
//!
//! W5 and the real steps are logs, generated or recorded, which the `log`
//! feature reads; the benches, which Cargo.toml builds only with it, share
//! their workloads with this file. Built without it (`cargo test
//! --no-default-features`) the file holds no tests.

#![cfg(feature = "log")]

#[path = "../benches/baseline/mod.rs"]
mod baseline;
mod scale;
#[path = "../benches/workloads/mod.rs"]
mod workloads;

use std::rc::Rc;

use proptest::prelude::*;

use baseline::{BaseBinding, BaseVerdict, Baseline, RECORDS_KEPT};
use taintworld::systems::check_reads;
use taintworld::{Access, Outcome, ReadResult, Verdict, World};
use workloads::{
    Allocs, GPT2, GPT2_AMP, GPT2_DECODE, GPT2_DECODE_GRAPH, GPT2_GRAPH, GRAPH, KernelNames,
    OwnStrings, Pair, Prepared, RESNET, Step, TWO_STREAMS, W3_CLAIMS, W5_FAILED_LAUNCH, Work,
    base_kernels, base_verdict, graph_replay, real_graph, replay_base, replay_graph, w1_clean,
    w2_chain, w3_carve, w3_carve_mid, w3_fail_base, w3_fail_world, w3_fragmented, w3_reads,
    w4_retaint, w5_real, w5_training, world_claimed, world_row_verdicts, world_verdicts,
};

/// How many times `agree` runs a batch workload on both sides: the benches
/// time the same batch again and again on one state, so the rounds after
/// the first (the steady state they measure) are held equal too.
const ROUNDS: usize = 3;

fn agree(mut pair: Pair, prepared: Prepared, kernel: &str) -> Vec<BaseVerdict> {
    let mut rows_world = pair.world.clone();
    let mut history: Vec<Launched> = Vec::new();
    let mut first = Vec::new();
    for round in 0..ROUNDS {
        let expected = prepared.run_base(&mut pair.base, &[Rc::from(kernel)]);
        let got = world_verdicts(&mut pair.world, &prepared);
        assert_eq!(got, expected, "round {round}");
        assert_eq!(world_claimed(&pair.world), pair.base.claimed());
        assert_eq!(
            world_row_verdicts(&mut rows_world, &prepared),
            expected,
            "round {round} bound by rows"
        );
        assert_eq!(world_claimed(&rows_world), pair.base.claimed());
        history.extend(
            got.iter()
                .zip(prepared.base.iter())
                .map(|(&verdict, bindings)| Launched {
                    verdict,
                    kernel: kernel.to_owned(),
                    produced: produced(&pair.base, bindings),
                }),
        );
        for world in [&pair.world, &rows_world] {
            graphs_agree(world, &pair.base, &history);
        }
        if round == 0 {
            first = got;
        }
    }
    first
}

/// One launch as both sides saw it: what became of it, its kernel, and
/// the memory ids it would write.
struct Launched {
    verdict: BaseVerdict,
    kernel: String,
    produced: Vec<u64>,
}

/// The memory ids of the allocations `bindings` write, in binding order.
fn produced(base: &Baseline, bindings: &[BaseBinding]) -> Vec<u64> {
    bindings
        .iter()
        .filter(|b| b.write)
        .filter_map(|b| {
            let stream = base.pool.get(b.at.slot)?.as_ref()?;
            Some(stream.allocs.get(b.at.index)?.as_ref()?.memory)
        })
        .collect()
}

/// The baseline did the bookkeeping its design asks for, so its time is
/// the time of all of it: the same live failures as the world (pruned
/// alike), each with the same occurrences, skips and carriers, and each
/// failure's kept records exactly its last skips (launch, kernel, needed
/// memory, produced ids). `history` is the launches last made on both, in
/// order (a workload's setup launches come before it).
fn graphs_agree(world: &World, base: &Baseline, history: &[Launched]) {
    let first = base.launches - history.len() as u64;
    assert_eq!(world.launches(), base.launches);
    let mut live: Vec<_> = world
        .failures()
        .map(|f| (f.id.get(), f.occurrences, f.skipped, f.carriers))
        .collect();
    live.sort_unstable();
    let mut kept: Vec<_> = base
        .graph
        .nodes
        .iter()
        .map(|(&id, n)| (id, n.occurrences, n.skipped, n.carriers))
        .collect();
    kept.sort_unstable();
    assert_eq!(
        kept, live,
        "live failures (id, occurrences, skipped, carriers)"
    );
    for (&id, node) in &base.graph.nodes {
        let skips: Vec<_> = (first..)
            .zip(history)
            .filter(|(_, l)| matches!(l.verdict, BaseVerdict::Skipped(f, _) if f == id))
            .collect();
        let last = &skips[skips.len().saturating_sub(RECORDS_KEPT)..];
        let expected: Vec<_> = last
            .iter()
            .map(|(launch, l)| {
                let BaseVerdict::Skipped(_, needed) = l.verdict else {
                    unreachable!("filtered to skips")
                };
                (*launch, l.kernel.as_str(), needed, l.produced.clone())
            })
            .collect();
        let records: Vec<_> = node
            .records
            .iter()
            .map(|r| (r.launch, &*r.kernel, r.needed, r.produced.clone()))
            .collect();
        assert_eq!(records, expected, "failure {id}'s kept records");
    }
    // And the world's live records name skips that happened.
    for r in world.skip_records() {
        let launched = &history[usize::try_from(r.launch - first).expect("small")];
        assert_eq!(
            (launched.verdict, launched.kernel.as_str()),
            (BaseVerdict::Skipped(r.failure.get(), r.needed), r.kernel),
            "record of launch {}",
            r.launch
        );
    }
}

#[test]
fn the_clean_workload_runs_every_launch_on_both() {
    let (pair, prepared) = w1_clean(4_000);
    let verdicts = agree(pair, prepared, "clean");
    // 4,000 bindings, four to a launch.
    assert_eq!(verdicts.len(), 1_000);
    assert!(verdicts.iter().all(|v| *v == BaseVerdict::Ran));
}

#[test]
fn the_poisoned_chain_skips_every_launch_on_both() {
    let (pair, prepared) = w2_chain(2_500);
    let verdicts = agree(pair, prepared, "gelu");
    assert_eq!(verdicts.len(), 2_500);
    assert!(
        verdicts
            .iter()
            .all(|v| matches!(v, BaseVerdict::Skipped(1, _)))
    );
}

#[test]
fn the_retaint_loop_keeps_one_failure_and_one_claim_on_both() {
    let (pair, prepared) = w4_retaint(1_000);
    let verdicts = agree(pair.clone(), prepared, "fill");
    assert_eq!(verdicts.len(), 1_000);
    assert!(verdicts.iter().all(|v| *v == BaseVerdict::Failed(1)));
}

/// The benches also time W2 and W4 with every launch naming its kernel
/// and error by strings of its own (`OwnStrings`), which the crate cannot
/// recognise by address: the same launches, so the same answers and the
/// same world as with the shared strings, the baseline's, by bindings and
/// by rows, over the rounds the benches run.
#[test]
fn with_strings_of_their_own_the_chain_and_the_retaint_loop_end_as_with_shared_ones() {
    let failures = |w: &World| {
        w.failures()
            .map(|f| (f.id.get(), f.occurrences, f.skipped, f.carriers))
            .collect::<Vec<_>>()
    };
    for (name, (pair, prepared)) in [("w2", w2_chain(2_500)), ("w4", w4_retaint(1_000))] {
        let own = OwnStrings::of(&prepared);
        let (mut shared, mut owning, mut owning_rows) =
            (pair.world.clone(), pair.world.clone(), pair.world);
        for round in 0..ROUNDS {
            let expected = world_verdicts(&mut shared, &prepared);
            let mut got = Vec::new();
            owning
                .launch_batch(&prepared.launches_owning(&own), &mut got)
                .unwrap();
            let mut got_rows = Vec::new();
            owning_rows
                .launch_batch(&prepared.row_launches_owning(&own), &mut got_rows)
                .unwrap();
            for (got, side) in [(got, "bindings"), (got_rows, "rows")] {
                let got: Vec<_> = got.iter().map(|r| base_verdict(r.verdict)).collect();
                assert_eq!(got, expected, "{name} round {round} by {side}");
            }
            for world in [&owning, &owning_rows] {
                assert_eq!(world.stats(), shared.stats(), "{name} round {round}");
                assert_eq!(world_claimed(world), world_claimed(&shared));
                assert_eq!(failures(world), failures(&shared), "{name} round {round}");
            }
        }
    }
}

#[test]
fn the_fragmented_allocation_answers_every_check_alike_and_carves_alike() {
    let mut pair = w3_fragmented();
    assert_eq!(pair.world.stats().claims, W3_CLAIMS);
    assert_eq!(world_claimed(&pair.world), pair.base.claimed());
    let mut tainted = 0;
    for r in w3_reads(&pair, 2_000) {
        let world = match pair.world.read(&r.binding()).unwrap() {
            ReadResult::Tainted(t) => Some(t.failure.get()),
            _ => None,
        };
        let base = pair.base.failure(r.at, r.start, r.end);
        assert_eq!(world, base);
        assert_eq!(pair.base.failure_searched(r.at, r.start, r.end), base);
        // The benched check: a pre-resolved row through `check_reads`.
        let row = r.row(&pair.world);
        let hit = check_reads(std::slice::from_ref(&row), pair.world.allocations());
        assert_eq!(hit.is_some(), base.is_some());
        assert_eq!(
            pair.world
                .read_failure(&r.binding())
                .unwrap()
                .map(|f| f.get()),
            base
        );
        tainted += world.is_some() as usize;
    }
    assert!(
        tainted > 500 && tainted < 2_000,
        "both kinds of range are read"
    );
    let carve = w3_carve(&pair);
    pair.world
        .host_write(&carve.binding(), Outcome::Ok)
        .unwrap();
    pair.base.written(&[carve.base_binding()]);
    assert_eq!(pair.world.stats().claims, W3_CLAIMS - 100);
    assert_eq!(world_claimed(&pair.world), pair.base.claimed());
    // The benched write through the middle of the set, then the first
    // write again over what is left: both sides alike after each.
    let mut pair = w3_fragmented();
    for carve in [w3_carve_mid(&pair), w3_carve(&pair)] {
        pair.world
            .host_write(&carve.binding(), Outcome::Ok)
            .unwrap();
        pair.base.written(&[carve.base_binding()]);
        assert_eq!(world_claimed(&pair.world), pair.base.claimed());
    }
    assert_eq!(pair.world.stats().claims, W3_CLAIMS - 200);
}

/// The benched failing write: both sides give it a new failure and leave
/// one claim of it where the 100 claims and their gaps were.
#[test]
fn the_fragmented_allocation_takes_a_failed_write_alike() {
    let mut pair = w3_fragmented();
    let write = w3_carve(&pair);
    let world = base_verdict(w3_fail_world(&mut pair.world, &write.binding()));
    let kernel: Rc<str> = Rc::from(World::HOST_WRITE_KERNEL);
    let base = w3_fail_base(&mut pair.base, &kernel, &write.base_binding());
    assert_eq!(world, base);
    assert!(
        matches!(base, BaseVerdict::Failed(2)),
        "a second failure: {base:?}"
    );
    let stats = pair.world.stats();
    assert_eq!(
        (stats.claims, stats.live_failures),
        (W3_CLAIMS - 100 + 1, 2)
    );
    assert_eq!(world_claimed(&pair.world), pair.base.claimed());
}

/// The benched graph replays: a good one over clean memory runs on both
/// and claims nothing; a failed one gives both sides the same new failure
/// and the same claimed bytes, every recorded write's range; a good one
/// then releases them all and the failure goes, round after round.
#[test]
fn a_captured_graph_replays_alike_good_and_failed() {
    let (mut pair, writes) = graph_replay(4_000);
    assert_eq!(writes.len(), 1_000, "one write a captured launch");
    let kernel: Rc<str> = Rc::from(World::graph_kernel(GRAPH));
    for round in 0..ROUNDS {
        let good = replay_graph(&mut pair.world, GRAPH, false);
        assert_eq!(good, Verdict::Ran, "round {round}");
        assert_eq!(
            replay_base(&mut pair.base, &kernel, &writes, false),
            BaseVerdict::Ran
        );
        assert_eq!(pair.world.stats().claims, 0);
        assert!(pair.base.claimed().is_empty());

        let failed = base_verdict(replay_graph(&mut pair.world, GRAPH, true));
        assert_eq!(
            failed,
            replay_base(&mut pair.base, &kernel, &writes, true),
            "round {round}"
        );
        assert!(matches!(failed, BaseVerdict::Failed(_)), "{failed:?}");
        let claimed = world_claimed(&pair.world);
        assert_eq!(claimed, pair.base.claimed(), "round {round}");
        // W1's writes touch every allocation of the 1,000, each whole.
        assert_eq!(claimed.len(), 1_000);
        assert!(
            claimed
                .iter()
                .all(|&(_, start, end, _)| (start, end) == (0, 4096))
        );
        let report = pair.world.failures().next().expect("the replay's failure");
        assert_eq!(report.error.kernel, World::graph_kernel(GRAPH));
    }
    assert_eq!(replay_graph(&mut pair.world, GRAPH, false), Verdict::Ran);
    replay_base(&mut pair.base, &kernel, &writes, false);
    assert_eq!(world_claimed(&pair.world), pair.base.claimed());
    let stats = pair.world.stats();
    assert_eq!((stats.claims, stats.live_failures), (0, 0));
    pair.world.check_invariants().expect("a sound world");
}

/// The recorded GPT-2 step's graph (`gpt2-step` in the graph bench): both
/// sides left by the log's capture with the same allocations; a good replay
/// runs on both and claims nothing, a failed one gives both the same new
/// failure and the same claimed bytes (the weights and AdamW's state among
/// them, which the captured update writes in place), and a good one then
/// releases them all, round after round.
#[test]
fn the_captured_gpt2_step_replays_alike_good_and_failed() {
    real_graph_replays_alike_good_and_failed(GPT2_GRAPH, 612);
}

/// The recorded decoding pass's graph (`gpt2-decode-pass` in the graph
/// bench): the same, over the key/value caches it binds whole and its
/// pool's intermediates.
#[test]
fn the_captured_decoding_pass_replays_alike_good_and_failed() {
    real_graph_replays_alike_good_and_failed(GPT2_DECODE_GRAPH, 55);
}

/// A real log's captured graph, with `bindings` write-visible bindings,
/// replayed good, failed and good again on both sides, round after round:
/// the same verdicts, failures and claimed bytes each time.
fn real_graph_replays_alike_good_and_failed(file: &str, bindings: usize) {
    let (mut pair, graph, writes) = real_graph(file);
    assert_eq!(
        writes.len(),
        bindings,
        "{file}: the captured launches' write-visible bindings"
    );
    let kernel: Rc<str> = Rc::from(World::graph_kernel(graph));
    for round in 0..ROUNDS {
        assert_eq!(replay_graph(&mut pair.world, graph, false), Verdict::Ran);
        assert_eq!(
            replay_base(&mut pair.base, &kernel, &writes, false),
            BaseVerdict::Ran
        );
        assert_eq!(pair.world.stats().claims, 0);
        assert!(pair.base.claimed().is_empty());

        let failed = base_verdict(replay_graph(&mut pair.world, graph, true));
        assert_eq!(
            failed,
            replay_base(&mut pair.base, &kernel, &writes, true),
            "round {round}"
        );
        let BaseVerdict::Failed(failure) = failed else {
            panic!("{failed:?}");
        };
        let claimed = world_claimed(&pair.world);
        assert_eq!(claimed, pair.base.claimed(), "round {round}");
        assert!(claimed.iter().all(|&(_, _, _, f)| f == failure));
        let bytes: u64 = claimed.iter().map(|&(_, start, end, _)| end - start).sum();
        assert_eq!(u128::from(bytes), pair.world.stats().tainted_bytes);
        assert!(bytes > 0);
    }
    assert_eq!(replay_graph(&mut pair.world, graph, false), Verdict::Ran);
    replay_base(&mut pair.base, &kernel, &writes, false);
    let stats = pair.world.stats();
    assert_eq!((stats.claims, stats.live_failures), (0, 0));
    assert!(pair.base.claimed().is_empty());
    pair.world.check_invariants().expect("a sound world");
}

#[test]
fn the_training_workload_gives_the_same_verdicts_and_reads_on_both() {
    training_agrees(KernelNames::PerLaunch);
}

/// Registered kernel names change how a skip finds its kernel, not what
/// it records.
#[test]
fn the_training_workload_with_registered_kernels_gives_the_same_verdicts_and_reads_on_both() {
    training_agrees(KernelNames::Registered);
}

fn training_agrees(names: KernelNames) {
    let (skipped, records) = steps_agree(w5_training(3_000, names), names);
    assert!(
        skipped > 2_000,
        "the early failure taints the steps after it: {skipped} skipped"
    );
    assert!(records > 100, "records live at the end: {records}");
}

/// The real GPT-2 step, launch 3 failing: skips and runs interleave, and
/// most of the step is skipped.
#[test]
fn the_real_gpt2_step_gives_the_same_verdicts_and_reads_on_both() {
    real_step_agrees_every_way(GPT2, |skipped, launches| {
        skipped > launches / 2 && skipped < launches
    });
}

/// The real ResNet step, launch 3 failing: what it taints is written
/// again soon, and the rest of the step runs.
#[test]
fn the_real_resnet_step_gives_the_same_verdicts_and_reads_on_both() {
    real_step_agrees_every_way(RESNET, |skipped, launches| {
        skipped >= 1 && skipped < launches / 10
    });
}

/// The real two-stream step, launch 3 failing: its launches run on one
/// stream and bind memory made on the other, and the failure taints
/// nearly all of them.
#[test]
fn the_real_two_stream_step_gives_the_same_verdicts_and_reads_on_both() {
    real_step_agrees_every_way(TWO_STREAMS, |skipped, launches| {
        skipped > launches * 3 / 4 && skipped < launches
    });
}

/// The real GPT-2 decoding, launch 3 (a cache's zero-fill) failing: each
/// position of the cache is written before attention reads it, so nothing
/// is skipped, and both sides carve the same claim a position at a time.
#[test]
fn the_real_gpt2_decoding_gives_the_same_verdicts_and_reads_on_both() {
    real_step_agrees_every_way(GPT2_DECODE, |skipped, _| skipped == 0);
}

/// The real mixed-precision GPT-2 steps, launch 3 failing: most of both
/// steps is skipped, the gradient scaler's checks and scale updates among
/// them.
#[test]
fn the_real_mixed_precision_gpt2_steps_give_the_same_verdicts_and_reads_on_both() {
    real_step_agrees_every_way(GPT2_AMP, |skipped, launches| {
        skipped > launches / 2 && skipped < launches
    });
}

/// A real log's step held to agree on both sides from an empty world,
/// from a warm one and from one warmed by other memory ids, with as many
/// launches skipped as `expected` allows of how many there are, and no
/// record left: the log frees every allocation by its end, and the claims
/// take their records with them.
fn real_step_agrees_every_way(file: &str, expected: impl Fn(usize, usize) -> bool) {
    for allocs in [
        Allocs::InSteps,
        Allocs::InStepsWarm,
        Allocs::InStepsWarmNewIds,
    ] {
        let (skipped, launches, records) = real_step_agrees(file, allocs);
        assert!(
            expected(skipped, launches),
            "{file}, {allocs:?}: {skipped} of {launches} skipped"
        );
        assert_eq!(records, 0, "{file}, {allocs:?}: records live at the end");
    }
}

/// A real log's step, launch 3 failing, its allocations made as `allocs`
/// says, held to agree on both sides; returns how many launches were
/// skipped, of how many, and the records left.
fn real_step_agrees(file: &str, allocs: Allocs) -> (usize, usize, usize) {
    let names = KernelNames::PerLaunch;
    let workload = w5_real(file, names, Some(W5_FAILED_LAUNCH), allocs);
    let launches = workload.1.work.len();
    let (skipped, records) = steps_agree(workload, names);
    (skipped, launches, records)
}

/// Runs a W5-shaped workload's steps on the world (bound by bindings and,
/// in a second world, by rows) and the baseline, holding every verdict,
/// read, claim and record to agree; returns how many launches were skipped
/// and how many records each world holds at the end.
fn steps_agree(
    (mut pair, prepared, steps): (Pair, Prepared, Vec<Step>),
    names: KernelNames,
) -> (usize, usize) {
    let launches = prepared.launches();
    let row_launches = prepared.row_launches();
    let mut rows_world = pair.world.clone();
    let kernels = base_kernels(&prepared.work, names);
    let mut skipped = 0;
    let mut work_of = std::collections::HashMap::new();
    let mut history = Vec::new();
    for step in &steps {
        match step {
            Step::Launch(i) => {
                let r = pair.world.launch(&launches[*i]).unwrap();
                work_of.insert(r.launch, *i);
                let expected = pair.base.launch(
                    &kernels[*i],
                    prepared.base.get(*i),
                    prepared.work[*i].failed,
                );
                let got = base_verdict(r.verdict);
                assert_eq!(got, expected, "launch {i}");
                history.push(Launched {
                    verdict: got,
                    kernel: prepared.work[*i].kernel.to_owned(),
                    produced: produced(&pair.base, prepared.base.get(*i)),
                });
                let by_row = rows_world.launch(&row_launches[*i]).unwrap();
                assert_eq!(by_row, r, "launch {i} bound by rows");
                skipped += matches!(got, BaseVerdict::Skipped(..)) as usize;
            }
            Step::HostWrite(b) => {
                let write = b.binding();
                pair.world.host_write(&write, Outcome::Ok).unwrap();
                rows_world.host_write(&write, Outcome::Ok).unwrap();
                pair.base.written(&[b.base_binding()]);
            }
            Step::Alloc { memory, made } => {
                let slot = made.at.slot as u64;
                for world in [&mut pair.world, &mut rows_world] {
                    let key = world.alloc(slot, *memory, made.end).unwrap();
                    assert_eq!(key, made.key, "memory {memory}'s key");
                }
                let at = pair.base.alloc(made.at.slot, *memory, made.end);
                assert_eq!(at, made.at, "memory {memory}'s location");
            }
            Step::Free(b) => {
                pair.world.free(b.key).unwrap();
                rows_world.free(b.key).unwrap();
                pair.base.free(b.at);
            }
            Step::Read(b) => {
                let got = match pair.world.read(&b.binding()).unwrap() {
                    ReadResult::Tainted(t) => Some(t.failure.get()),
                    _ => None,
                };
                assert_eq!(got, pair.base.failure(b.at, b.start, b.end));
                // The benched read (`world_steps`), on both worlds.
                for world in [&mut pair.world, &mut rows_world] {
                    let benched = world.read_failure(&b.binding()).unwrap();
                    assert_eq!(benched.map(|f| f.get()), got);
                }
            }
        }
    }
    assert_eq!(world_claimed(&pair.world), pair.base.claimed());
    assert_eq!(world_claimed(&rows_world), pair.base.claimed());
    for world in [&pair.world, &rows_world] {
        graphs_agree(world, &pair.base, &history);
    }
    // Every live record names its own launch's kernel.
    let mut records = [0, 0];
    for (world, count) in [&pair.world, &rows_world].into_iter().zip(&mut records) {
        for r in world.skip_records() {
            assert_eq!(
                r.kernel, prepared.work[work_of[&r.launch]].kernel,
                "launch {}",
                r.launch
            );
            *count += 1;
        }
    }
    assert_eq!(records[0], records[1], "both worlds keep the same records");
    (skipped, records[0])
}

/// One random step for the baseline and the world alike.
#[derive(Clone, Debug)]
enum Op {
    /// A launch of kernel `kernel` binding `(allocation, start, length,
    /// access)`s, failed with error `fail` if given.
    Launch {
        kernel: usize,
        bindings: Vec<(usize, u64, u64, usize)>,
        fail: Option<usize>,
    },
    HostWrite(usize, u64, u64),
    Read(usize, u64, u64),
}

const KERNELS: [&str; 3] = ["fill", "gelu", "adam"];
const ERRORS: [(&str, &str); 2] = [("compile", "bad PTX"), ("launch", "too many resources")];
const SIZE: u64 = 64;

fn op() -> impl Strategy<Value = Op> {
    let range = || (0..4usize, 0..SIZE, 1..=SIZE);
    prop_oneof![
        4 => (
            0..KERNELS.len(),
            prop::collection::vec((0..4usize, 0..SIZE, 1..=SIZE, 0..3usize), 1..4),
            prop::option::weighted(0.2, 0..ERRORS.len()),
        )
            .prop_map(|(kernel, bindings, fail)| Op::Launch { kernel, bindings, fail }),
        1 => range().prop_map(|(a, s, l)| Op::HostWrite(a, s, l)),
        1 => range().prop_map(|(a, s, l)| Op::Read(a, s, l)),
    ]
}

proptest! {
    #![proptest_config(scale::config(512))]

    /// Beyond the benches' workloads: random launches (failing ones among
    /// them, several failures at once), host writes and reads of partial
    /// ranges over four small allocations give the same verdicts, reads,
    /// claimed bytes and failure bookkeeping on the baseline and the
    /// world after every step — so the baseline's in-place range code,
    /// and its pruning of failures that lose their last byte, are right.
    #[test]
    fn random_launches_writes_and_reads_agree_with_the_world_at_every_step(
        ops in prop::collection::vec(op(), 1..60)
    ) {
        let mut pair = Pair::new(4, SIZE, 2);
        let mut history = Vec::new();
        for op in &ops {
            let both = |pair: &Pair, (a, s, l): (usize, u64, u64), access| {
                pair.bind(a, s, (s + l).min(SIZE), access)
            };
            match op {
                Op::Launch { kernel, bindings, fail } => {
                    let access = [Access::Read, Access::Write, Access::ReadWrite];
                    let work = Work {
                        kernel: KERNELS[*kernel],
                        bindings: bindings
                            .iter()
                            .map(|&(a, s, l, k)| both(&pair, (a, s, l), access[k]))
                            .collect(),
                        failed: fail.map(|e| ERRORS[e]),
                    };
                    let (world, base) = launch_both(&mut pair, &work, &mut history);
                    prop_assert_eq!(world, base);
                }
                Op::HostWrite(a, s, l) => {
                    let b = both(&pair, (*a, *s, *l), Access::Write);
                    pair.world.host_write(&b.binding(), Outcome::Ok).unwrap();
                    pair.base.written(&[b.base_binding()]);
                }
                Op::Read(a, s, l) => {
                    let b = both(&pair, (*a, *s, *l), Access::Read);
                    let world = match pair.world.read(&b.binding()).unwrap() {
                        ReadResult::Tainted(t) => Some(t.failure.get()),
                        _ => None,
                    };
                    prop_assert_eq!(world, pair.base.failure(b.at, b.start, b.end));
                    prop_assert_eq!(world, pair.base.failure_searched(b.at, b.start, b.end));
                }
            }
            prop_assert_eq!(world_claimed(&pair.world), pair.base.claimed());
            graphs_agree(&pair.world, &pair.base, &history);
        }
    }
}

/// Both ways a failure loses its last byte — written over, and tainted
/// over by another failure — take it away on both sides alike.
#[test]
fn a_failure_that_loses_its_last_byte_goes_on_both() {
    let mut pair = Pair::new(2, SIZE, 1);
    let mut history = Vec::new();
    let mut launch = |pair: &mut Pair, kernel, a, failed| {
        let work = Work {
            kernel,
            bindings: vec![pair.whole(a, Access::Write)],
            failed,
        };
        let (world, base) = launch_both(pair, &work, &mut history);
        assert_eq!(world, base);
        graphs_agree(&pair.world, &pair.base, &history);
    };
    // Failure 1 on allocation 0, then written over: gone.
    launch(&mut pair, "fill", 0, Some(ERRORS[0]));
    assert_eq!(pair.base.graph.nodes.len(), 1);
    launch(&mut pair, "fill", 0, None);
    assert!(pair.base.graph.nodes.is_empty());
    // Failure 2 on allocation 1, then failure 3 over all of it: 2 is gone.
    launch(&mut pair, "fill", 1, Some(ERRORS[0]));
    launch(&mut pair, "adam", 1, Some(ERRORS[1]));
    let live: Vec<_> = pair.base.graph.nodes.keys().copied().collect();
    assert_eq!(live, [3]);
    assert_eq!(
        pair.world
            .failures()
            .map(|f| f.id.get())
            .collect::<Vec<_>>(),
        [3]
    );
}

/// `work` launched on the world and on the baseline, recorded in
/// `history`; the world's verdict and the baseline's, to compare.
fn launch_both(
    pair: &mut Pair,
    work: &Work,
    history: &mut Vec<Launched>,
) -> (BaseVerdict, BaseVerdict) {
    let bindings: Vec<_> = work.bindings.iter().map(|b| b.binding()).collect();
    let base_bindings: Vec<_> = work.bindings.iter().map(|b| b.base_binding()).collect();
    let got = pair
        .world
        .launch(&taintworld::Launch {
            kernel: work.kernel,
            stream: 0.into(),
            bindings: &bindings,
            outcome: work.outcome(),
        })
        .unwrap();
    let expected = pair
        .base
        .launch(&Rc::from(work.kernel), &base_bindings, work.failed);
    history.push(Launched {
        verdict: expected,
        kernel: work.kernel.to_owned(),
        produced: produced(&pair.base, &base_bindings),
    });
    (base_verdict(got.verdict), expected)
}
