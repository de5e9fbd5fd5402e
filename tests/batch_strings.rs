//! Within one batch the world knows a kernel or failure string it saw on the
//! previous launch by its address and length (the batch borrows every string
//! for the whole call). These tests hand it strings that share an address
//! but not a length, and equal strings at different addresses, and check
//! that names and failure identities come out as if every string were
//! compared.

mod common;

use common::named;
use taintworld::{Access, Binding, Launch, Outcome, World};

/// A world of eight 64-byte allocations on stream 0, memory ids 0..8.
fn world() -> World {
    let mut world = World::default();
    for memory in 0..8 {
        world.alloc(0, memory, 64).unwrap();
    }
    world
}

#[test]
fn kernels_that_share_an_address_but_not_a_length_are_different_kernels() {
    let mut world = world();
    // "gelu" and "gelu_backward" start at the same byte.
    let names = String::from("gelu_backward");
    let (short, long) = (&names[..4], &names[..]);
    let fail = [Binding::whole(0, 0, Access::Write)];
    let step = |m: u64| {
        [
            Binding::whole(0, m, Access::Read),
            Binding::whole(0, m + 1, Access::Write),
        ]
    };
    let (s0, s1, s2) = (step(0), step(1), step(2));
    let failed = Outcome::Failed {
        kind: "compile",
        message: "bad PTX",
    };
    let batch = [
        Launch {
            kernel: "fill",
            stream: 0.into(),
            bindings: &fail[..],
            outcome: failed,
        },
        Launch {
            kernel: short,
            stream: 0.into(),
            bindings: &s0[..],
            outcome: Outcome::Ok,
        },
        Launch {
            kernel: long,
            stream: 0.into(),
            bindings: &s1[..],
            outcome: Outcome::Ok,
        },
        Launch {
            kernel: short,
            stream: 0.into(),
            bindings: &s2[..],
            outcome: Outcome::Ok,
        },
    ];
    let mut results = Vec::new();
    world.launch_batch(&batch, &mut results).unwrap();
    let verdicts: Vec<_> = results.iter().map(|r| named(r.verdict).0).collect();
    assert_eq!(verdicts, ["failed", "skipped", "skipped", "skipped"]);
    let mut kernels: Vec<(u64, &str)> =
        world.skip_records().map(|r| (r.launch, r.kernel)).collect();
    kernels.sort();
    assert_eq!(kernels, [(1, "gelu"), (2, "gelu_backward"), (3, "gelu")]);
}

#[test]
fn failures_that_share_addresses_but_not_lengths_are_different_failures() {
    let mut world = world();
    let text = String::from("launch failed: out of resources");
    let (short, long) = (&text[..13], &text[..]);
    let write = |m: u64| [Binding::whole(0, m, Access::Write)];
    let (w0, w1, w2) = (write(0), write(1), write(2));
    let fail = |message| Outcome::Failed {
        kind: "launch",
        message,
    };
    let batch = [
        Launch {
            kernel: "k",
            stream: 0.into(),
            bindings: &w0[..],
            outcome: fail(short),
        },
        Launch {
            kernel: "k",
            stream: 0.into(),
            bindings: &w1[..],
            outcome: fail(long),
        },
        Launch {
            kernel: "k",
            stream: 0.into(),
            bindings: &w2[..],
            outcome: fail(short),
        },
    ];
    let mut results = Vec::new();
    world.launch_batch(&batch, &mut results).unwrap();
    let ids: Vec<u64> = results.iter().map(|r| named(r.verdict).1).collect();
    assert_eq!(
        ids,
        [1, 2, 1],
        "the short message occurred twice, the long once"
    );
    let mut seen: Vec<(u64, String, u64)> = world
        .failures()
        .map(|f| (f.id.get(), f.error.message.clone(), f.occurrences))
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            (1, "launch failed".to_string(), 2),
            (2, "launch failed: out of resources".to_string(), 1)
        ]
    );
}

#[test]
fn equal_strings_at_different_addresses_are_the_same_kernel_and_failure() {
    let mut world = world();
    let (a, b) = (String::from("softmax"), String::from("softmax"));
    let (m1, m2) = (String::from("bad PTX"), String::from("bad PTX"));
    let write = |m: u64| [Binding::whole(0, m, Access::Write)];
    let (w0, w1) = (write(0), write(1));
    let batch = [
        Launch {
            kernel: &a,
            stream: 0.into(),
            bindings: &w0[..],
            outcome: Outcome::Failed {
                kind: "compile",
                message: &m1,
            },
        },
        Launch {
            kernel: &b,
            stream: 0.into(),
            bindings: &w1[..],
            outcome: Outcome::Failed {
                kind: "compile",
                message: &m2,
            },
        },
    ];
    let mut results = Vec::new();
    world.launch_batch(&batch, &mut results).unwrap();
    let ids: Vec<u64> = results.iter().map(|r| named(r.verdict).1).collect();
    assert_eq!(ids, [1, 1]);
    assert_eq!(world.failures().next().map(|f| f.occurrences), Some(2));
}
