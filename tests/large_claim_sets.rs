//! Claim sets of many claims carrying many failures: past the size at which
//! a set counts its claims per failure (`COUNTED_ABOVE`), and back down
//! past the size at which it drops the count (`UNCOUNTED_AT`). The world
//! and the per-byte model are driven with the same random operations over
//! one 256-byte allocation, and must agree after every step — claims,
//! failures with their carrier counts, records, counters, reads — while
//! SPEC.md §10's invariants hold, the count agreeing with the claims among
//! them. `tests/world_matches_model.rs` keeps its allocations to 32 bytes,
//! too few claims to reach the count.

mod model;

use model::bridge::{model_state, read_result, run_launch, state, to_binding};
use model::{MBinding, MOutcome, Model};
use proptest::prelude::*;
use taintworld::components::claim::{COUNTED_ABOVE, UNCOUNTED_AT};
use taintworld::{Config, World};

/// The allocation's size: room for far more than `COUNTED_ABOVE` claims.
const SIZE: u64 = 256;
/// The memory id of the one allocation.
const MEMORY: u64 = 1;

#[derive(Clone, Debug)]
enum Op {
    /// A launch writing `[start, start + len)` fails with error kind
    /// `kind`: each kind is its own failure.
    Fail { kind: u8, start: u64, len: u64 },
    /// A launch reading `read` and writing `write`: skipped, taking on the
    /// failure read, when `read` is tainted; run, releasing `write`,
    /// otherwise.
    Chain { read: (u64, u64), write: (u64, u64) },
    /// A host write releasing `[start, start + len)`.
    Write { start: u64, len: u64 },
    /// A host read of `[start, start + len)`.
    Read { start: u64, len: u64 },
    /// The allocation freed, claims and all, and made again.
    Renew,
}

/// A range of the allocation: mostly a few bytes (so that claims pile up),
/// sometimes up to the whole of it (so that a set shrinks at once).
fn range() -> impl Strategy<Value = (u64, u64)> {
    let len = prop_oneof![8 => 1u64..=4, 1 => 1u64..=SIZE];
    (0..SIZE, len).prop_map(|(start, len)| (start, (start + len).min(SIZE)))
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => (0u8..64, range()).prop_map(|(kind, (start, end))| Op::Fail { kind, start, len: end - start }),
        4 => (range(), range()).prop_map(|(read, write)| Op::Chain { read, write }),
        3 => range().prop_map(|(start, end)| Op::Write { start, len: end - start }),
        2 => range().prop_map(|(start, end)| Op::Read { start, len: end - start }),
        1 => Just(Op::Renew),
    ]
}

fn binding((start, end): (u64, u64), access: u8) -> MBinding {
    MBinding {
        stream: 0,
        memory: MEMORY,
        range: Some((start, end)),
        access,
    }
}

/// Applies `op` to both and compares them after it.
fn step(m: &mut Model, w: &mut World, op: &Op) -> Result<(), TestCaseError> {
    match op {
        Op::Fail { kind, start, len } => {
            let bindings = [binding((*start, start + len), 1)];
            let outcome = MOutcome::Failed(format!("e{kind}"), "m".into());
            let expected = m.launch("k", 0, &bindings, &outcome).map_err(|_| ());
            prop_assert_eq!(run_launch(w, ("k", 0, &bindings, &outcome)), expected);
        }
        Op::Chain { read, write } => {
            let bindings = [binding(*read, 0), binding(*write, 1)];
            let outcome = MOutcome::Ok;
            let expected = m.launch("chain", 0, &bindings, &outcome).map_err(|_| ());
            prop_assert_eq!(run_launch(w, ("chain", 0, &bindings, &outcome)), expected);
        }
        Op::Write { start, len } => {
            let b = binding((*start, start + len), 1);
            let expected = m.host_write(&b, &MOutcome::Ok).is_ok();
            let got = w.host_write(&to_binding(&b), taintworld::Outcome::Ok);
            prop_assert_eq!(got.is_ok(), expected);
        }
        Op::Read { start, len } => {
            let b = binding((*start, start + len), 0);
            let expected = m.read(&b).ok();
            prop_assert_eq!(w.read(&to_binding(&b)).ok().map(read_result), expected);
        }
        Op::Renew => {
            prop_assert!(m.free(MEMORY).is_ok());
            prop_assert!(w.free(MEMORY).is_ok());
            prop_assert!(m.alloc(0, MEMORY, SIZE).is_ok());
            prop_assert!(w.alloc(0, MEMORY, SIZE).is_ok());
        }
    }
    if let Err(e) = w.check_invariants() {
        return Err(TestCaseError::fail(format!(
            "invariant broken after {op:?}: {e}"
        )));
    }
    prop_assert_eq!(
        state(w),
        model_state(m),
        "world differs from the model after {:?}",
        op
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// 400 random operations on one allocation, most of them failures of
    /// 64 kinds over a few bytes each, between a start that takes its
    /// claim set past the count's threshold and an end that takes it down,
    /// up again and clears it.
    #[test]
    fn a_set_of_many_failures_counts_its_carriers_as_the_model_does(
        ops in prop::collection::vec(op(), 400)
    ) {
        let mut m = Model::new(4, 64, false);
        let mut w = World::new(Config { max_streams: 4, chain_limit: 64, ..Config::default() })
            .expect("valid config");
        prop_assert!(m.alloc(0, MEMORY, SIZE).is_ok());
        prop_assert!(w.alloc(0, MEMORY, SIZE).is_ok());
        // Every case starts counted: 40 one-byte claims of 40 failures, a
        // byte apart. The random operations then grow and shrink the set;
        // a write of the whole allocation empties it (the count dropped),
        // the 40 claims come again (the count made afresh) and a free
        // clears the counted set.
        let forty = || (0..40).map(|i| Op::Fail { kind: i as u8, start: 3 * i, len: 1 });
        let whole = Op::Write { start: 0, len: SIZE };
        let all = forty()
            .chain(ops)
            .chain([whole])
            .chain(forty())
            .chain([Op::Renew]);
        for op in all {
            step(&mut m, &mut w, &op)?;
        }
    }
}

/// The count is made when a set grows past `COUNTED_ABOVE` claims and
/// dropped when it shrinks to `UNCOUNTED_AT`: a set taken up and down
/// across both, one failure a claim, keeps every carrier count right.
#[test]
fn a_set_counted_then_shrunk_loses_each_failure_once() {
    let mut w = World::new(Config::default()).expect("valid config");
    let key = w.alloc(0, MEMORY, SIZE).expect("fresh id");
    let claims = COUNTED_ABOVE + 8;
    for i in 0..claims as u64 {
        let b = to_binding(&binding((2 * i, 2 * i + 1), 1));
        let outcome = taintworld::Outcome::Failed {
            kind: &format!("e{i}"),
            message: "m",
        };
        w.launch(&taintworld::Launch {
            kernel: "k",
            stream: 0.into(),
            bindings: &[b],
            outcome,
        })
        .expect("good input");
    }
    assert_eq!(
        w.allocations().get(key).map(|a| a.claims.len()),
        Some(claims)
    );
    assert_eq!(w.failures().count(), claims, "one failure a claim");
    w.check_invariants().expect("counted past COUNTED_ABOVE");
    // Written down to UNCOUNTED_AT claims, one failure released at a time:
    // each released failure loses its one carrier and goes.
    let keep = UNCOUNTED_AT as u64;
    let write = to_binding(&binding((2 * keep, SIZE), 1));
    w.host_write(&write, taintworld::Outcome::Ok)
        .expect("good input");
    assert_eq!(
        w.allocations().get(key).map(|a| a.claims.len()),
        Some(UNCOUNTED_AT)
    );
    assert_eq!(w.failures().count(), UNCOUNTED_AT);
    w.check_invariants()
        .expect("the count dropped at UNCOUNTED_AT");
    w.free(key).expect("live");
    assert_eq!(w.failures().count(), 0, "the free took every failure");
    w.check_invariants().expect("empty world");
}
