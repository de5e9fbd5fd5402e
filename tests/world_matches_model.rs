//! The world and the per-byte model, driven with the same random operations:
//! every result and the whole observable state must agree after every step,
//! and SPEC.md §10's invariants must hold. A second world takes the same
//! launches in batches (half of them naming live memory by key) and frees
//! live memory by key, and must end up identical to the first; a third takes them in batches of pre-resolved
//! rows ([`World::resolve_binding`]) and must too.
//!
//! A refused call must be refused with the model's error: the same kind,
//! naming the same ids, slots and range, and for a batch the same launch
//! (the pre-resolved world but for how it names a binding that does not
//! resolve, `bridge::unresolved_blurred`). Streams include the world's two
//! special streams and one past them (SPEC §1).
//!
//! Random bindings mostly miss (another slot, a freed id, a range past the
//! end), so many bindings are aimed instead: resolved when their operation
//! runs to live memory on its own slot (an [`Aim`]). Reads are mostly
//! aimed, so that they compare skip chains, truncated ones among them; a
//! composite operation captures launches on one slot, replays the graph and
//! in between often fails a host write over one of its bindings, so that
//! replays release and retaint bytes; and half the cases keep device faults
//! out of all but the last quarter of the operations, or out altogether,
//! since after one every resolved read answers the fault.

mod model;
mod scale;

use model::bridge::{
    self, MLaunch, RowWorld, blurred, in_batch, model_state, read_result, report,
    run_binding_batch, state, to_binding, to_outcome, verdict,
};
use model::{MBinding, MCapture, MOutcome, MProfile, MRead, MVerdict, Model};
use proptest::prelude::*;
use taintworld::{CaptureResult, Config, Error, ProfileResult, ReadResult, StreamRef, World};

/// Launch kernels, among them the names the world gives a host write, a
/// replay of graph 0 and a failed reservation, so that a failed launch can
/// share its identity with a failure of another source (SPEC §4). A
/// `static`, so that a launch names the very strings a world registers.
static KERNELS: [&str; 7] = ["k0", "k1", "k2", "k3", "host_write", "graph:0", "alloc"];
/// Error kinds and messages, the failed reservation's among them.
const KINDS: [&str; 3] = ["compile", "launch", "oom"];
const MESSAGES: [&str; 3] = ["m0", "m1", "out of memory"];

/// A binding aimed at live memory, resolved against the model when its
/// operation runs: the `pick`-th live allocation (by memory id, counted
/// round the live ones) on its own slot (as stream `slot + max_streams *
/// fold`, which folds onto it, or the special stream at a special slot),
/// over `range` made to fit: a start and a length, each
/// taken modulo what fits, or `None` for the whole allocation. With nothing
/// live it names memory `pick`, which does not resolve.
#[derive(Copy, Clone, Debug)]
struct Aim {
    pick: u64,
    fold: u64,
    range: Option<(u64, u64)>,
    access: u8,
}

impl Aim {
    /// The binding this aims at in `m` as it is now.
    fn at(&self, m: &Model) -> MBinding {
        let live = m.allocs.len().max(1) as u64;
        let Some((&memory, allocation)) = m.allocs.iter().nth((self.pick % live) as usize) else {
            return MBinding {
                stream: StreamRef::Id(self.fold),
                memory: self.pick,
                range: None,
                access: self.access,
            };
        };
        let size = allocation.bytes.len() as u64;
        let range = self.range.map(|(start, len)| {
            let start = start % (size + 1);
            (start, start + len % (size - start + 1))
        });
        let stream = match allocation.slot.checked_sub(m.max_streams) {
            Some(index) => StreamRef::Special(index as u16),
            None => StreamRef::Id(allocation.slot + m.max_streams * self.fold),
        };
        MBinding {
            stream,
            memory,
            range,
            access: self.access,
        }
    }
}

/// A launch: `aimed` bindings come first, then the random `bindings`.
#[derive(Clone, Debug)]
struct LaunchOp {
    kernel: usize,
    stream: StreamRef,
    bindings: Vec<MBinding>,
    aimed: Vec<Aim>,
    outcome: MOutcome,
}

impl LaunchOp {
    /// The launch with its aimed bindings resolved against `m`.
    fn at(&self, m: &Model) -> LaunchOp {
        let aimed = self.aimed.iter().map(|aim| aim.at(m));
        LaunchOp {
            bindings: aimed.chain(self.bindings.iter().copied()).collect(),
            aimed: Vec::new(),
            ..self.clone()
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    Alloc {
        stream: StreamRef,
        memory: u64,
        size: u64,
    },
    AllocFailed {
        stream: StreamRef,
        memory: u64,
        size: u64,
    },
    Free {
        memory: u64,
    },
    Launch(LaunchOp),
    /// The launch as a write scope (`World::scope`), its body returning
    /// the outcome.
    Scope(LaunchOp),
    Batch(Vec<LaunchOp>),
    HostWrite {
        binding: MBinding,
        outcome: MOutcome,
    },
    /// A host write aimed at live memory.
    HostWriteAt {
        aim: Aim,
        outcome: MOutcome,
    },
    Read {
        binding: MBinding,
    },
    /// A read aimed at live memory.
    ReadAt {
        aim: Aim,
    },
    CaptureBegin {
        stream: StreamRef,
    },
    CaptureEnd {
        stream: StreamRef,
        graph: u64,
    },
    /// A replay, checked launch by launch ([`World::replay_checked`]) or
    /// not.
    Replay {
        graph: u64,
        outcome: MOutcome,
        checked: bool,
    },
    GraphDestroy {
        graph: u64,
    },
    ProfileBegin {
        profile: u64,
    },
    ProfileEnd {
        profile: u64,
    },
    /// A device fault of `FAULTS[kind]` and `FAULT_MESSAGES[message]`: the
    /// first one a world sees is the one it keeps.
    DeviceFault {
        kind: usize,
        message: usize,
    },
    Sync,
    /// Operations run one after another, each checked as its own: a
    /// capture of launches on one slot and replays of its graph
    /// ([`captured`]).
    Steps(Vec<Op>),
}

const FAULTS: [&str; 2] = ["device", "ecc"];
const FAULT_MESSAGES: [&str; 2] = ["illegal address", "uncorrectable"];

/// The special streams the worlds have (SPEC §1).
const SPECIAL: u16 = 2;

/// A stream: ids 0–5, or one of the special streams, or the one past them
/// (bad input).
fn stream() -> impl Strategy<Value = StreamRef> {
    (0u64..9).prop_map(|s| match s.checked_sub(6) {
        Some(index) => StreamRef::Special(index as u16),
        None => StreamRef::Id(s),
    })
}

fn binding() -> impl Strategy<Value = MBinding> {
    // Ranges of 4 bytes on a grid of 8 come up again and again and never
    // touch one another, so a taint often lands exactly on one claim among
    // others: the case `ClaimSet::taint` relabels in place.
    let range = prop_oneof![
        3 => Just(None),
        8 => (0u64..=24, 0u64..=12).prop_map(|(s, len)| Some((s, s + len))),
        3 => (0u64..=3).prop_map(|i| Some((8 * i, 8 * i + 4))),
        1 => (1u64..=24, 0u64..=24).prop_map(|(s, e)| Some((s, e))),
    ];
    (stream(), 0u64..6, range, 0u8..4).prop_map(|(stream, memory, range, access)| MBinding {
        stream,
        memory,
        range,
        access,
    })
}

/// An aim: a quarter of them at the whole allocation. (A weighted flag
/// rather than `prop_oneof!`, which forks a generator: see [`op`].)
fn aim() -> impl Strategy<Value = Aim> {
    let range = (prop::bool::weighted(0.25), 0u64..=32, 0u64..=16);
    (0u64..6, 0u64..2, range, 0u8..4).prop_map(|(pick, fold, (whole, start, len), access)| Aim {
        pick,
        fold,
        range: (!whole).then_some((start, len)),
        access,
    })
}

fn failed() -> impl Strategy<Value = MOutcome> {
    (0..KINDS.len(), 0..MESSAGES.len())
        .prop_map(|(k, m)| MOutcome::Failed(KINDS[k].into(), MESSAGES[m].into()))
}

fn outcome(dry: bool) -> impl Strategy<Value = MOutcome> {
    let dry_weight = if dry { 1 } else { 0 };
    prop_oneof![
        11 => Just(MOutcome::Ok),
        6 => failed(),
        dry_weight => Just(MOutcome::DryRun),
    ]
}

/// A launch with `random` random bindings and `aimed` aimed ones.
fn launch_op(
    random: std::ops::Range<usize>,
    aimed: std::ops::RangeInclusive<usize>,
) -> impl Strategy<Value = LaunchOp> {
    (
        0..KERNELS.len(),
        stream(),
        prop::collection::vec(binding(), random),
        prop::collection::vec(aim(), aimed),
        outcome(true),
    )
        .prop_map(|(kernel, stream, bindings, aimed, outcome)| LaunchOp {
            kernel,
            stream,
            bindings,
            aimed,
            outcome,
        })
}

/// Any launch: up to four random bindings and up to two aimed ones.
fn any_launch() -> impl Strategy<Value = LaunchOp> {
    launch_op(0..5, 0..=2)
}

/// Graph `graph` destroyed (so that its id is free), a capture on `stream`
/// of one or two launches on it with aimed bindings, its end as `graph`,
/// then once or twice a replay of it, most often after a host write over
/// one of the launches' aimed bindings (failing, mostly): a replay that
/// runs must release what the write tainted, one that fails retaint it.
fn captured() -> impl Strategy<Value = Op> {
    let spoil = (
        prop::bool::weighted(0.8),
        0usize..6,
        prop::bool::weighted(0.75),
        failed(),
    );
    let round = (spoil, outcome(false), prop::bool::ANY);
    (
        stream(),
        prop::collection::vec(launch_op(0..2, 1..=3), 1..=2),
        0u64..3,
        prop::collection::vec(round, 1..=2),
    )
        .prop_map(|(stream, launches, graph, rounds)| {
            let aims: Vec<Aim> = launches.iter().flat_map(|l| l.aimed.clone()).collect();
            let mut steps = vec![Op::GraphDestroy { graph }, Op::CaptureBegin { stream }];
            steps.extend(
                launches
                    .into_iter()
                    .map(|l| Op::Launch(LaunchOp { stream, ..l })),
            );
            steps.push(Op::CaptureEnd { stream, graph });
            for ((spoiled, i, fails, failed), outcome, checked) in rounds {
                if spoiled {
                    let aim = aims[i % aims.len()];
                    let outcome = if fails { failed } else { MOutcome::Ok };
                    steps.push(Op::HostWriteAt { aim, outcome });
                }
                steps.push(Op::Replay {
                    graph,
                    outcome,
                    checked,
                });
            }
            Op::Steps(steps)
        })
}

/// One operation. The most frequent come first: for every alternative
/// before the one it picks, `prop_oneof!` forks a random generator (for
/// shrinking), which costs more than the rest of the case, so the order
/// keeps the test's time; `Alloc` stays first, what sequences shrink to.
fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (stream(), 0u64..6, 0u64..=32).prop_map(|(stream, memory, size)| Op::Alloc { stream, memory, size }),
        14 => any_launch().prop_map(Op::Launch),
        4 => aim().prop_map(|aim| Op::ReadAt { aim }),
        1 => (stream(), 0u64..6, 0u64..=16).prop_map(|(stream, memory, size)| Op::AllocFailed { stream, memory, size }),
        2 => (0u64..6).prop_map(|memory| Op::Free { memory }),
        2 => any_launch().prop_map(Op::Scope),
        2 => prop::collection::vec(any_launch(), 1..5).prop_map(Op::Batch),
        2 => (binding(), outcome(false)).prop_map(|(binding, outcome)| Op::HostWrite { binding, outcome }),
        1 => (aim(), outcome(false)).prop_map(|(aim, outcome)| Op::HostWriteAt { aim, outcome }),
        1 => binding().prop_map(|binding| Op::Read { binding }),
        1 => captured(),
        1 => stream().prop_map(|stream| Op::CaptureBegin { stream }),
        1 => (stream(), 0u64..3).prop_map(|(stream, graph)| Op::CaptureEnd { stream, graph }),
        1 => (0u64..3, outcome(false), prop::bool::ANY).prop_map(|(graph, outcome, checked)| Op::Replay { graph, outcome, checked }),
        1 => (0u64..3).prop_map(|graph| Op::GraphDestroy { graph }),
        1 => (0u64..2).prop_map(|profile| Op::ProfileBegin { profile }),
        1 => (0u64..2).prop_map(|profile| Op::ProfileEnd { profile }),
        1 => (0..FAULTS.len(), 0..FAULT_MESSAGES.len())
            .prop_map(|(kind, message)| Op::DeviceFault { kind, message }),
        1 => Just(Op::Sync),
    ]
}

/// 200 operations. In half the cases a device fault may come anywhere; in
/// a quarter only in the last 50 operations, and in a quarter never (the
/// faults drawn earlier become syncs).
fn ops() -> impl Strategy<Value = Vec<Op>> {
    let faults_from = prop_oneof![2 => Just(0usize), 1 => Just(150), 1 => Just(200)];
    (prop::collection::vec(op(), 200), faults_from).prop_map(|(mut ops, from)| {
        for op in &mut ops[..from] {
            if let Op::DeviceFault { .. } = op {
                *op = Op::Sync;
            }
        }
        ops
    })
}

/// `op` with its aimed bindings resolved against `m` as it is now; `None`
/// for an operation with no aimed binding, which runs as it is.
fn land(m: &Model, op: &Op) -> Option<Op> {
    let aims = |l: &LaunchOp| !l.aimed.is_empty();
    Some(match op {
        Op::Launch(l) if aims(l) => Op::Launch(l.at(m)),
        Op::Scope(l) if aims(l) => Op::Scope(l.at(m)),
        Op::Batch(launches) if launches.iter().any(aims) => {
            Op::Batch(launches.iter().map(|l| l.at(m)).collect())
        }
        Op::HostWriteAt { aim, outcome } => Op::HostWrite {
            binding: aim.at(m),
            outcome: outcome.clone(),
        },
        Op::ReadAt { aim } => Op::Read { binding: aim.at(m) },
        _ => return None,
    })
}

/// A launch as the model takes it.
fn model_launch(l: &LaunchOp) -> MLaunch<'_> {
    (KERNELS[l.kernel], l.stream, &l.bindings[..], &l.outcome)
}

/// The launches as the model takes them.
fn model_launches(launches: &[LaunchOp]) -> Vec<MLaunch<'_>> {
    launches.iter().map(model_launch).collect()
}

/// One launch on `world`, one at a time.
fn run_launch(world: &mut World, l: &LaunchOp) -> Result<(u64, MVerdict), Error> {
    bridge::run_launch(world, model_launch(l))
}

/// Launches `launches` as one batch of pre-resolved rows.
fn run_rows(rows: &mut RowWorld, launches: &[LaunchOp]) -> Result<Vec<(u64, MVerdict)>, Error> {
    rows.batch(&model_launches(launches))
}

/// Applies one operation to the model, the one-at-a-time world `a`
/// (memory ids), the batching world `b` (whose single launches name live
/// memory by key) and the pre-resolved world `c` (rows, in batches or one
/// launch at a time), and checks that all four agree.
fn step(
    m: &mut Model,
    a: &mut World,
    b: &mut World,
    c: &mut RowWorld,
    op: &Op,
) -> Result<(), TestCaseError> {
    if let Some(landed) = land(m, op) {
        return step(m, a, b, c, &landed);
    }
    match op {
        Op::Alloc {
            stream,
            memory,
            size,
        } => {
            let expected = m.alloc(*stream, *memory, *size);
            for w in [&mut *a, &mut *b, &mut c.world] {
                prop_assert_eq!(&w.alloc(*stream, *memory, *size).map(|_| ()), &expected);
            }
        }
        Op::AllocFailed {
            stream,
            memory,
            size,
        } => {
            let expected = m.alloc_failed(*stream, *memory, *size, "oom", "out of memory");
            for w in [&mut *a, &mut *b, &mut c.world] {
                let got = w.alloc_failed(*stream, *memory, *size, "oom", "out of memory");
                prop_assert_eq!(&got.map(|_| ()), &expected);
            }
        }
        Op::Free { memory } => {
            let expected = m.free(*memory);
            prop_assert_eq!(&a.free(*memory), &expected);
            prop_assert_eq!(&bridge::free_keyed(b, *memory), &expected);
            prop_assert_eq!(&c.free(*memory), &expected);
        }
        Op::Launch(l) => {
            let expected = m.launch(KERNELS[l.kernel], l.stream, &l.bindings, &l.outcome);
            prop_assert_eq!(&run_launch(a, l), &expected);
            // `b` names live memory by key and `c` binds rows: the
            // bindings a single launch answers from one look-up each.
            prop_assert_eq!(&bridge::run_keyed_launch(b, model_launch(l)), &expected);
            prop_assert_eq!(blurred(c.launch(model_launch(l))), blurred(expected));
        }
        Op::Scope(l) => {
            // A write scope is a launch whose outcome is its body's
            // (SPEC §6b): the model runs it as one. A scope cannot be a
            // dry run, so a dry run's body panics: a launch that fails
            // with the `torn_down` error. `c` binds rows.
            let torn = l.outcome == MOutcome::DryRun;
            let outcome = match &l.outcome {
                MOutcome::DryRun => {
                    let (kind, message) = bridge::TORN_DOWN;
                    MOutcome::Failed(kind.into(), message.into())
                }
                other => other.clone(),
            };
            let expected = m.launch(KERNELS[l.kernel], l.stream, &l.bindings, &outcome);
            let scoped = LaunchOp {
                outcome,
                ..l.clone()
            };
            for w in [&mut *a, &mut *b] {
                if !torn {
                    prop_assert_eq!(&bridge::run_scope(w, model_launch(&scoped)), &expected);
                    continue;
                }
                // A body that ran and panicked: the launch the model
                // failed, its number taken (its failure is held to the
                // model's by the state below).
                match bridge::run_torn_scope(w, model_launch(&scoped)) {
                    Ok(None) => {
                        let failed = matches!(expected, Ok((_, MVerdict::Failed(_))));
                        prop_assert!(failed, "a body ran and panicked: {:?}", expected);
                        let number = expected.as_ref().map_or(0, |(n, _)| *n);
                        prop_assert_eq!(w.launches(), number + 1);
                    }
                    got => prop_assert_eq!(&got.map(|v| v.expect("not run")), &expected),
                }
            }
            // `c` takes it as a batch of one, whose refusal names launch 0.
            let rows = run_rows(c, core::slice::from_ref(&scoped)).map(|v| v[0].clone());
            let expected = expected.map_err(|e| in_batch(0, e));
            prop_assert_eq!(blurred(rows), blurred(expected));
        }
        Op::Batch(launches) => {
            // One at a time on the model and `a`; a bad launch anywhere
            // rejects the whole batch, so both are rolled back then.
            let (m0, a0) = (m.clone(), a.clone());
            let mut expected = Vec::new();
            let mut bad = None;
            for l in launches {
                let want = m.launch(KERNELS[l.kernel], l.stream, &l.bindings, &l.outcome);
                let got = run_launch(a, l);
                prop_assert_eq!(&got, &want);
                match want {
                    Ok(v) => expected.push(v),
                    Err(e) => {
                        bad = Some(in_batch(expected.len(), e));
                        break;
                    }
                }
            }
            if bad.is_some() {
                *m = m0;
                *a = a0;
            }
            let expected = match bad {
                Some(e) => Err(e),
                None => Ok(expected),
            };
            let got = run_binding_batch(b, &model_launches(launches));
            prop_assert_eq!(&got, &expected);
            prop_assert_eq!(blurred(run_rows(c, launches)), blurred(expected));
        }
        Op::HostWrite { binding, outcome } => {
            let expected = m.host_write(binding, outcome);
            for w in [&mut *a, &mut *b, &mut c.world] {
                let got = w
                    .host_write(&to_binding(binding), to_outcome(outcome))
                    .map(verdict);
                prop_assert_eq!(&got, &expected);
            }
        }
        Op::Read { binding } => {
            let expected = m.read(binding);
            for w in [&mut *a, &mut *b, &mut c.world] {
                // The answer read in place, asked first, on a copy (an
                // unresolved binding is counted again).
                let mut copy = w.clone();
                let in_place = copy.read_taint(&to_binding(binding));
                let in_place = in_place.map(|t| t.map(|t| (t.to_report(), t.to_string())));
                let full = w.read(&to_binding(binding));
                let got = full.clone().map(read_result);
                prop_assert_eq!(&got, &expected);
                // The cheap question agrees with the full answer (on a copy:
                // an unresolved binding is counted again).
                if let Ok(MRead::Tainted(_) | MRead::Clean) = &expected {
                    let cheap = w.clone().read_failure(&to_binding(binding));
                    let want = match &expected {
                        Ok(MRead::Tainted(r)) => Some(r.failure),
                        _ => None,
                    };
                    prop_assert_eq!(cheap.map(|f| f.map(|f| f.get())), Ok(want));
                }
                // So does the answer read in place: the same report, in the
                // same words, or nothing where read finds no claim (a device
                // fault is sync's to report, so the bytes' claims are asked
                // of read_failure there).
                match (full, in_place) {
                    (Ok(ReadResult::Tainted(report)), Ok(Some((copied, text)))) => {
                        prop_assert_eq!(&copied, &report);
                        prop_assert_eq!(text, report.to_string());
                    }
                    (Ok(ReadResult::Clean | ReadResult::Unresolved), Ok(None)) => {}
                    (Ok(ReadResult::DeviceFault(_)), Ok(in_place)) => {
                        let cheap = w.clone().read_failure(&to_binding(binding));
                        prop_assert_eq!(cheap, Ok(in_place.map(|(r, _)| r.failure)));
                    }
                    (Err(e), Err(in_place)) => prop_assert_eq!(e, in_place),
                    (full, in_place) => {
                        prop_assert!(false, "read {:?}, read_taint {:?}", full, in_place)
                    }
                }
            }
        }
        Op::CaptureBegin { stream } => {
            let expected = m.capture_begin(*stream);
            for w in [&mut *a, &mut *b, &mut c.world] {
                prop_assert_eq!(&w.capture_begin(*stream), &expected);
            }
        }
        Op::CaptureEnd { stream, graph } => {
            let expected = m.capture_end(*stream, *graph);
            for w in [&mut *a, &mut *b, &mut c.world] {
                let got = w.capture_end(*stream, *graph).map(|r| match r {
                    CaptureResult::Ok => MCapture::Ok,
                    CaptureResult::Failed(r) => MCapture::Failed(report(r)),
                });
                prop_assert_eq!(&got, &expected);
            }
        }
        Op::Replay {
            graph,
            outcome,
            checked,
        } => {
            let expected = if *checked {
                m.replay_checked(*graph, outcome)
            } else {
                m.replay(*graph, outcome)
            };
            for w in [&mut *a, &mut *b, &mut c.world] {
                let got = if *checked {
                    w.replay_checked(*graph, to_outcome(outcome))
                } else {
                    w.replay(*graph, to_outcome(outcome))
                };
                prop_assert_eq!(&got.map(verdict), &expected);
            }
        }
        Op::GraphDestroy { graph } => {
            let expected = m.graph_destroy(*graph);
            for w in [&mut *a, &mut *b, &mut c.world] {
                prop_assert_eq!(&w.graph_destroy(*graph), &expected);
            }
        }
        Op::ProfileBegin { profile } => {
            let expected = m.profile_begin(*profile);
            for w in [&mut *a, &mut *b, &mut c.world] {
                prop_assert_eq!(&w.profile_begin(*profile), &expected);
            }
        }
        Op::ProfileEnd { profile } => {
            let expected = m.profile_end(*profile);
            for w in [&mut *a, &mut *b, &mut c.world] {
                let got = w.profile_end(*profile).map(|r| match r {
                    ProfileResult::Valid => MProfile::Valid,
                    ProfileResult::Invalid { failure, error } => {
                        MProfile::Invalid(failure.get(), (error.kind, error.kernel, error.message))
                    }
                });
                prop_assert_eq!(&got, &expected);
            }
        }
        Op::DeviceFault { kind, message } => {
            let (kind, message) = (FAULTS[*kind], FAULT_MESSAGES[*message]);
            m.device_fault(kind, message);
            a.device_fault(kind, message);
            b.device_fault(kind, message);
            c.world.device_fault(kind, message);
        }
        Op::Sync => {
            let expected = m.sync();
            for w in [&*a, &*b, &c.world] {
                prop_assert_eq!(&bridge::sync_result(w.sync()), &expected);
            }
        }
        Op::Steps(steps) => {
            for op in steps {
                step(m, a, b, c, op)?;
            }
            return Ok(());
        }
        Op::HostWriteAt { .. } | Op::ReadAt { .. } => unreachable!("landed above"),
    }
    // Each world keeps SPEC §10 on its own: the batching and pre-resolved
    // worlds take paths the one-at-a-time world never does (a batch's
    // repeated kernel takes its name's reference without a look-up).
    for (name, w) in [
        ("world", &*a),
        ("batching world", &*b),
        ("pre-resolved world", &c.world),
    ] {
        if let Err(e) = w.check_invariants() {
            return Err(TestCaseError::fail(format!(
                "{name}: invariant broken after {op:?}: {e}"
            )));
        }
    }
    let expected = model_state(m);
    prop_assert_eq!(
        &state(a),
        &expected,
        "world differs from the model after {:?}",
        op
    );
    prop_assert_eq!(
        &state(b),
        &expected,
        "batching world differs after {:?}",
        op
    );
    prop_assert_eq!(
        &state(&c.world),
        &expected,
        "pre-resolved world differs after {:?}",
        op
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { max_shrink_iters: 4096, ..scale::config(256) })]

    /// SPEC §10 after every step of 200 random operations, and the world
    /// equal to the per-byte model in every result and every claim.
    #[test]
    fn the_world_agrees_with_the_per_byte_model_after_every_operation(
        ops in ops(),
        chain_limit in prop_oneof![Just(1u32), Just(2), Just(3), Just(1024)],
        strict in prop::bool::weighted(0.15),
    ) {
        let config = Config { max_streams: 3, num_special: SPECIAL, chain_limit, strict };
        let mut m = Model::new(3, chain_limit, strict).with_special(SPECIAL);
        let mut a = World::new(config).unwrap();
        let mut b = World::new(config).unwrap();
        let mut c = RowWorld::new(config);
        // Registered kernel names change how a skip finds its kernel, never
        // what it records: the pre-resolved world registers the very
        // strings its launches name, the batching world copies of them at
        // other addresses (so that its launches find them by hashing).
        for kernel in KERNELS {
            c.world.register_kernel(kernel);
            b.register_kernel(Box::leak(kernel.to_owned().into_boxed_str()));
        }
        for (i, op) in ops.iter().enumerate() {
            step(&mut m, &mut a, &mut b, &mut c, op)?;
            // Every so often the two worlds that bind by `Binding` go on
            // as their clones, which must print as they do and then agree
            // with the model as they would have (a clone's stores are
            // copied by hand, to keep their room).
            if i % 16 == 15 {
                for w in [&mut a, &mut b] {
                    let copy = w.clone();
                    prop_assert_eq!(format!("{copy:?}"), format!("{w:?}"), "a clone after {:?}", op);
                    *w = copy;
                }
            }
        }
        // Invariant 2 and 6: once everything is freed and every window
        // ended, nothing remains.
        for memory in 0..6 {
            let _ = a.free(memory);
            let _ = bridge::free_keyed(&mut b, memory);
            let _ = c.free(memory);
        }
        for w in [&mut a, &mut b, &mut c.world] {
            for stream in 0..3 {
                let _ = w.capture_end(stream, 1000 + stream);
            }
            for index in 0..SPECIAL {
                let _ = w.capture_end(StreamRef::Special(index), 2000 + u64::from(index));
            }
            prop_assert_eq!(w.stats().live_failures, 0);
            prop_assert_eq!(w.stats().live_records, 0);
            prop_assert_eq!(w.check_invariants(), Ok(()));
        }
    }
}
