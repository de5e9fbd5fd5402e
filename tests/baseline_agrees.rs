//! The seed-shaped baseline the benchmarks compare against is correct too:
//! on every workload it gives the world's verdicts, failure ids and claimed
//! bytes, so a ratio is between two correct implementations. The world is
//! run both ways the benches run it: binding `Binding`s and binding
//! pre-resolved rows.

#[path = "../benches/baseline/mod.rs"]
mod baseline;
#[path = "../benches/workloads/mod.rs"]
mod workloads;

use std::rc::Rc;

use baseline::BaseVerdict;
use taintworld::{Outcome, ReadResult};
use workloads::{
    KernelNames, Pair, Prepared, Step, W3_CLAIMS, base_kernels, base_verdict, w1_clean, w2_chain,
    w3_carve, w3_fragmented, w3_reads, w4_retaint, w5_training, world_claimed, world_row_verdicts,
    world_verdicts,
};

fn agree(mut pair: Pair, prepared: Prepared, kernel: &str) -> Vec<BaseVerdict> {
    let mut rows_world = pair.world.clone();
    let expected = prepared.run_base(&mut pair.base, &[Rc::from(kernel)]);
    let got = world_verdicts(&mut pair.world, &prepared);
    assert_eq!(got, expected);
    assert_eq!(world_claimed(&pair.world), pair.base.claimed());
    assert_eq!(world_row_verdicts(&mut rows_world, &prepared), expected);
    assert_eq!(world_claimed(&rows_world), pair.base.claimed());
    got
}

#[test]
fn the_clean_workload_runs_every_launch_on_both() {
    let (pair, prepared) = w1_clean(4_000);
    let verdicts = agree(pair, prepared, "clean");
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
    assert!(verdicts.iter().all(|v| *v == BaseVerdict::Failed(1)));
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
        assert_eq!(world, pair.base.failure(r.at, r.start, r.end));
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
    let (mut pair, prepared, steps) = w5_training(3_000, names);
    let launches = prepared.launches();
    let row_launches = prepared.row_launches();
    let mut rows_world = pair.world.clone();
    let kernels = base_kernels(&prepared.work, names);
    let mut skipped = 0;
    let mut work_of = std::collections::HashMap::new();
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
            Step::Read(b) => {
                let got = match pair.world.read(&b.binding()).unwrap() {
                    ReadResult::Tainted(t) => Some(t.failure.get()),
                    _ => None,
                };
                assert_eq!(got, pair.base.failure(b.at, b.start, b.end));
            }
        }
    }
    assert!(
        skipped > 2_000,
        "the early failure poisons the steps after it"
    );
    assert_eq!(world_claimed(&pair.world), pair.base.claimed());
    assert_eq!(world_claimed(&rows_world), pair.base.claimed());
    // Every live record names its own launch's kernel.
    let mut records = 0;
    for world in [&pair.world, &rows_world] {
        for r in world.skip_records() {
            assert_eq!(
                r.kernel, prepared.work[work_of[&r.launch]].kernel,
                "launch {}",
                r.launch
            );
            records += 1;
        }
    }
    assert!(records > 100, "records live at the end: {records}");
}
