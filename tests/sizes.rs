//! What each entity costs in memory, pinned so a change that grows one is
//! seen. The crate docs (`lib.rs`, "Costs") state the same figures.

use std::mem::size_of;

#[path = "common/counting.rs"]
mod counting;

use counting::live_bytes as live;
use taintworld::components::allocation::Footprint;
use taintworld::{
    Access, Allocation, Binding, Claim, ClaimSet, Failure, Launch, Outcome, Resolved, SkipRecord,
    World,
};

#[test]
#[cfg_attr(
    not(target_pointer_width = "64"),
    ignore = "pins a 64-bit target's sizes: a 32-bit target lays these types out smaller"
)]
fn each_component_has_the_size_the_docs_state() {
    assert_eq!(size_of::<Footprint>(), 16, "the hot part of an allocation");
    assert_eq!(size_of::<Allocation>(), 80, "an allocation's row");
    assert_eq!(size_of::<Claim>(), 32);
    assert_eq!(
        size_of::<ClaimSet>(),
        48,
        "one claim inline, and the count of a large set"
    );
    assert_eq!(size_of::<SkipRecord>(), 56);
    assert_eq!(size_of::<Failure>(), 120);
    assert_eq!(size_of::<Resolved>(), 32, "a resolved row");
    assert_eq!(size_of::<Binding>(), 64);
}

/// What the docs state is for the real thresholds: a build with small
/// claim sets keeps 4,000 claims in a tree.
#[test]
#[cfg_attr(
    taintworld_small_claim_sets,
    ignore = "measures the real thresholds, not a build with small claim sets"
)]
fn a_clean_allocation_a_claim_and_a_failure_cost_what_the_docs_state() {
    const N: u64 = 100_000;
    let mut world = World::default();
    let before = live();
    for memory in 0..N {
        world.alloc(0, memory, 4096).unwrap();
    }
    let per_allocation = (live() - before) as f64 / N as f64;
    println!("bytes per clean allocation: {per_allocation:.1}");
    assert!(
        (100.0..=200.0).contains(&per_allocation),
        "{per_allocation}"
    );

    // Claims: every other 16-byte range of large allocations, one failure,
    // so each is its own claim: 4,000 an allocation (the sorted vector),
    // then all in one (the tree past TREE_ABOVE claims).
    for (per_allocation, low, high) in [(4_000, 32.0, 64.0), (N, 48.0, 96.0)] {
        let mut world = World::default();
        let allocations: Vec<_> = (0..N / per_allocation)
            .map(|m| world.alloc(0, m, 32 * per_allocation).unwrap())
            .collect();
        let before = live();
        for (i, &key) in allocations.iter().enumerate() {
            for j in 0..per_allocation {
                let b = Binding::range(0, key, 32 * j, 32 * j + 16, Access::Write);
                fail(&mut world, b, "k", "m").unwrap_or_else(|e| panic!("allocation {i}: {e}"));
            }
        }
        assert_eq!(world.stats().claims, N);
        let per_claim = (live() - before) as f64 / N as f64;
        println!("bytes per claim, {per_allocation} an allocation: {per_claim:.1}");
        assert!((low..=high).contains(&per_claim), "{per_claim}");
    }

    // Failures: N distinct failures, each carried by its own allocation.
    let mut world = World::default();
    for memory in 0..N {
        world.alloc(0, memory, 64).unwrap();
    }
    let messages: Vec<String> = (0..N).map(|i| format!("{i:08}")).collect();
    let before = live();
    for (memory, message) in messages.iter().enumerate() {
        let b = Binding::whole(0, memory as u64, Access::Write);
        fail(&mut world, b, "compile", message).unwrap();
    }
    assert_eq!(world.stats().live_failures, N);
    let per_failure = (live() - before) as f64 / N as f64;
    println!("bytes per failure (with its claim and strings): {per_failure:.1}");
    assert!((128.0..=320.0).contains(&per_failure), "{per_failure}");
}

/// A launch of `fill` writing `binding` that fails with `kind` and
/// `message`.
fn fail(
    world: &mut World,
    binding: Binding,
    kind: &str,
    message: &str,
) -> Result<taintworld::LaunchResult, taintworld::Error> {
    world.launch(&Launch {
        kernel: "fill",
        stream: 0.into(),
        bindings: &[binding],
        outcome: Outcome::Failed { kind, message },
    })
}
