//! The five systems called on their own, on stores cloned from a world, as
//! `taintworld::systems` says a microbenchmark of one system calls them:
//! each does to the clones what the world does when it runs the same
//! launch.

use taintworld::systems::{
    apply_taint, check_reads, prune_failures, release_written, resolve_owner,
};
use taintworld::{
    Access, AllocKey, Allocations, Binding, Launch, Origin, Outcome, Resolved, Verdict, World,
};

/// The claims on `key`'s allocation, as (start, end).
fn claims(allocs: &Allocations, key: AllocKey) -> Vec<(u64, u64)> {
    allocs
        .get(key)
        .expect("a live allocation")
        .claims
        .iter()
        .map(|c| (c.start, c.end))
        .collect()
}

/// `bindings` resolved on `world`'s stores.
fn rows_of(world: &World, bindings: &[Binding]) -> Vec<Resolved> {
    let mut rows = Vec::new();
    let resolution = resolve_owner(
        bindings,
        world.streams(),
        world.allocations(),
        false,
        &mut rows,
    )
    .expect("good bindings");
    assert_eq!(resolution.unresolved, 0);
    rows
}

#[test]
fn the_systems_on_a_worlds_cloned_stores_claim_release_and_prune_as_its_launches_do() {
    let mut world = World::default();
    world.alloc(0, 1, 4096).unwrap();
    let out = world.alloc(0, 2, 4096).unwrap();
    let bindings = [
        Binding::range(0, 1, 0, 1024, Access::Read),
        Binding::range(0, 2, 512, 1536, Access::Write),
    ];
    let rows = rows_of(&world, &bindings);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1].alloc(), out);

    let mut allocs = world.allocations().clone();
    let mut graph = world.failure_graph().clone();
    assert!(
        check_reads(&rows, &allocs).is_none(),
        "nothing is claimed yet"
    );

    // The launch fails: its write set carries the failure, at the root.
    let failure = graph.failures.find_or_mint("launch", "fill", "failed");
    let g = &mut graph;
    apply_taint(
        &rows,
        &mut allocs,
        &mut g.failures,
        &mut g.records,
        failure,
        Origin::Root,
    );
    assert_eq!(claims(&allocs, out), [(512, 1536)]);
    assert!(
        claims(&allocs, rows[0].alloc()).is_empty(),
        "a read is never tainted"
    );

    // The world, running the same launch failed, claims the same bytes.
    let failed = Launch {
        kernel: "fill",
        stream: 0.into(),
        bindings: &bindings,
        outcome: Outcome::Failed {
            kind: "launch",
            message: "failed",
        },
    };
    assert!(matches!(
        world.launch(&failed).unwrap().verdict,
        Verdict::Failed(_)
    ));
    assert_eq!(claims(world.allocations(), out), claims(&allocs, out));

    // A read of the written bytes now meets the claim, and names it.
    let read = rows_of(&world, &[Binding::range(0, 2, 1000, 1100, Access::Read)]);
    let hit = check_reads(&read, &allocs).expect("the read overlaps the claim");
    assert_eq!((hit.row, hit.needed), (0, 2));
    assert_eq!((hit.claim.start, hit.claim.end), (512, 1536));
    assert_eq!(hit.claim.failure, failure);
    assert_eq!(hit.claim.origin, Origin::Root);

    // A write of the same bytes releases them, and the failure, carried by
    // nothing any more, is pruned.
    let g = &mut graph;
    release_written(&rows, &mut allocs, &mut g.failures, &mut g.records);
    assert!(claims(&allocs, out).is_empty());
    assert!(check_reads(&read, &allocs).is_none());
    assert_eq!(prune_failures(&mut g.failures, &mut g.records), 1);
    assert!(graph.failures.get(failure).is_none());

    // The world does the same when the launch runs again.
    let good = Launch {
        outcome: Outcome::Ok,
        ..failed
    };
    assert_eq!(world.launch(&good).unwrap().verdict, Verdict::Ran);
    assert!(claims(world.allocations(), out).is_empty());
    assert_eq!(world.failure_graph().failures.len(), 0);
}
