//! (b) The world driven by arbitrary operation sequences, every step checked
//! against the per-byte model of the tests (tests/model/mod.rs), exactly as
//! tests/world_matches_model.rs compares them: the one-at-a-time world `a`,
//! the batching world `b` (which frees live memory by key), the world `r`
//! that takes every launch as a batch of pre-resolved rows, and the model
//! must give the same results and the same observable state after every
//! operation, and `a` must keep SPEC §10. A refused call must be refused
//! with the model's error — the same kind, naming the same ids, slots and
//! range, and for a batch the same launch — by `a` and `b`, and by `r` but
//! for how it names a binding that does not resolve
//! (`bridge::unresolved_blurred`). Streams include special streams (SPEC
//! §1), one of them past `num_special`.
//! A write scope (SPEC §6b) is a launch whose outcome is its body's: `a`
//! and `b` run it through `World::scope`, the model and `r` as the launch;
//! a scope's dry run, which a scope cannot be, is a body that panics (the
//! panic caught, `bridge::run_torn_scope`), the launch failed with
//! `torn_down`.
//!
//! Beside the answers and the state, each world is held to the model in
//! what a scheduler asks besides: the cheap question before a read
//! (`read_failure`), the answer read in place (`read_taint`, whose copy
//! must be the read's report), each launch a checked replay settles
//! (`replay_checked_each`), which binding a rejected launch is about
//! (`binding_at_fault`) and which launch a rejected batch
//! (`Error::batch_index`), which graphs live (`has_graph`), the O(1)
//! unresolved count, and every failure id ever named, found by
//! `failure(id)` exactly while it lives. Device faults alternate between
//! two errors, so that the fault kept must be the first; kernels and errors
//! include those of host writes, replays and reservations, so that a
//! failed launch can share their failure (SPEC §4); a sync gives back the
//! buffers' room (`shrink_buffers`) on `b` and `h`; and every 16
//! operations `a` and `b` go on as their clones.
//!
//! Sizes go to the model worlds as `size % 65` (the model holds one entry
//! per byte). A fourth world `h` takes the same operations with the sizes as
//! given — up to `u64::MAX` — and is checked only for no panic and SPEC §10:
//! a declared size is never turned into memory or work. Ranges and offsets
//! are the same for all worlds and reach past the end, run backwards and sit
//! next to `u64::MAX`.

#![no_main]

#[path = "../../tests/model/mod.rs"]
mod model;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use model::bridge::{
    self, MLaunch, RowWorld, blurred, in_batch, model_state, read_result, report,
    run_binding_batch, state, to_binding, to_outcome, verdict,
};
use model::{MBinding, MCapture, MOutcome, MProfile, MVerdict, Model};
use taintworld::{
    Binding, CaptureResult, Config, Error, FailureId, Launch, ProfileResult, ReadResult, StreamRef,
    World,
};

/// Launch kernels, among them the names the world gives a host write, a
/// replay of graphs 0 and 1 and a failed reservation, so that a failed
/// launch can share its identity with a failure of another source (SPEC
/// §4). Picked by `kernel % 8` (before these were added, `% 4` of the
/// first four: the bytes decode as before, some into other kernels). A
/// `static`, so that a launch names the very strings a world registers.
static KERNELS: [&str; 8] = [
    "k0",
    "k1",
    "k2",
    "k3",
    "host_write",
    "graph:0",
    "alloc",
    "graph:1",
];
/// Copies of [`KERNELS`] at other addresses, leaked once a process.
static COPIES: std::sync::OnceLock<[&'static str; 8]> = std::sync::OnceLock::new();
/// Error kinds and messages, the failed reservation's among them (the kind
/// and message `Op::AllocFailed` gives).
const KINDS: [&str; 4] = ["compile", "launch", "oom", "ecc"];
const MESSAGES: [&str; 4] = ["m0", "m1", "out of memory", "uncorrectable"];
/// The device faults, taken in turn: the first a world sees is the one it
/// keeps, so a second, different fault tells a world that kept the last.
const FAULTS: [(&str, &str); 2] = [("device", "illegal address"), ("ecc", "uncorrectable")];

/// A stream: mostly a small id, sometimes an id anywhere in `u64`, and for
/// a small byte of 240 or more special stream `(s - 240) % 3` — of a world
/// with 0, 1 or 2 of them, so some are past `num_special` (bytes below 240
/// decode as they did before special streams came in).
#[derive(Arbitrary, Clone, Copy, Debug)]
enum Stream {
    Small(u8),
    Raw(u64),
}

impl Stream {
    fn get(self) -> StreamRef {
        match self {
            Stream::Small(s) if s >= 240 => StreamRef::Special(u16::from((s - 240) % 3)),
            Stream::Small(s) => StreamRef::Id(u64::from(s % 6)),
            Stream::Raw(s) => StreamRef::Id(s),
        }
    }
}

/// A memory, graph or profile id: a handful of small ones, or one next to
/// `u64::MAX`.
#[derive(Arbitrary, Clone, Copy, Debug)]
enum Id {
    Small(u8),
    NearMax(u8),
}

impl Id {
    fn get(self) -> u64 {
        match self {
            Id::Small(m) => u64::from(m % 6),
            Id::NearMax(m) => u64::MAX - u64::from(m % 2),
        }
    }
}

/// A size, offset or length.
#[derive(Arbitrary, Clone, Copy, Debug)]
enum Num {
    Small(u8),
    Pow2(u8),
    NearMax(u8),
    Raw(u64),
}

impl Num {
    fn get(self) -> u64 {
        match self {
            Num::Small(n) => u64::from(n % 72),
            Num::Pow2(p) => 1u64 << (p % 64),
            Num::NearMax(n) => u64::MAX - u64::from(n % 4),
            Num::Raw(n) => n,
        }
    }
}

#[derive(Arbitrary, Clone, Copy, Debug)]
enum Range {
    Whole,
    /// `[start, start + len)`, saturating at `u64::MAX`.
    Len(Num, u8),
    /// Any two numbers, in either order.
    Pair(Num, Num),
}

impl Range {
    fn get(self) -> Option<(u64, u64)> {
        match self {
            Range::Whole => None,
            Range::Len(s, len) => {
                let s = s.get();
                Some((s, s.saturating_add(u64::from(len % 24))))
            }
            Range::Pair(s, e) => Some((s.get(), e.get())),
        }
    }
}

#[derive(Arbitrary, Clone, Copy, Debug)]
struct B {
    stream: Stream,
    memory: Id,
    range: Range,
    access: u8,
}

impl B {
    fn get(self) -> MBinding {
        MBinding {
            stream: self.stream.get(),
            memory: self.memory.get(),
            range: self.range.get(),
            access: self.access % 4,
        }
    }
}

#[derive(Arbitrary, Clone, Copy, Debug)]
enum O {
    Ok,
    DryRun,
    Failed(u8, u8),
}

impl O {
    fn get(self) -> MOutcome {
        match self {
            O::Ok => MOutcome::Ok,
            O::DryRun => MOutcome::DryRun,
            O::Failed(k, m) => MOutcome::Failed(
                KINDS[usize::from(k) % KINDS.len()].into(),
                MESSAGES[usize::from(m) % MESSAGES.len()].into(),
            ),
        }
    }
}

#[derive(Arbitrary, Clone, Debug)]
struct L {
    kernel: u8,
    stream: Stream,
    /// 0–4 bindings (the rest is dropped).
    bindings: Vec<B>,
    outcome: O,
}

struct LaunchOp {
    kernel: &'static str,
    stream: StreamRef,
    bindings: Vec<MBinding>,
    outcome: MOutcome,
}

impl L {
    fn get(&self) -> LaunchOp {
        LaunchOp {
            kernel: KERNELS[usize::from(self.kernel) % KERNELS.len()],
            stream: self.stream.get(),
            bindings: self.bindings.iter().take(4).map(|b| b.get()).collect(),
            outcome: self.outcome.get(),
        }
    }
}

#[derive(Arbitrary, Clone, Debug)]
enum Op {
    Alloc {
        stream: Stream,
        memory: Id,
        size: Num,
    },
    AllocFailed {
        stream: Stream,
        memory: Id,
        size: Num,
    },
    Free {
        memory: Id,
    },
    Launch(L),
    /// The launch as a write scope (`World::scope`, SPEC §6b), its body
    /// returning the outcome: a launch whose outcome is its body's.
    Scope(L),
    Batch(Vec<L>),
    HostWrite {
        binding: B,
        outcome: O,
    },
    Read {
        binding: B,
    },
    CaptureBegin {
        stream: Stream,
    },
    /// The end of the window on `stream`, or, for a `graph` of 128 or
    /// more, of the window opened last (aimed: a stream drawn at random
    /// seldom names an open window), as graph `graph % 3`.
    CaptureEnd {
        stream: Stream,
        graph: u8,
    },
    /// A replay, checked launch by launch (`World::replay_checked`) or not,
    /// of graph `graph % 3`, or, for a `graph` of 128 or more, of the graph
    /// made last (aimed: a replay of a graph that lives is otherwise rare).
    Replay {
        graph: u8,
        outcome: O,
        checked: bool,
    },
    GraphDestroy {
        graph: u8,
    },
    ProfileBegin {
        profile: u8,
    },
    ProfileEnd {
        profile: u8,
    },
    DeviceFault,
    Sync,
}

#[derive(Arbitrary, Debug)]
struct Input {
    chain_limit: u8,
    strict: u8,
    /// `% 4` picks the regular slots, `/ 4 % 3` the special ones.
    max_streams: u8,
    ops: Vec<Op>,
}

/// A launch as the model takes it.
fn model_launch(l: &LaunchOp) -> MLaunch<'_> {
    (l.kernel, l.stream, &l.bindings[..], &l.outcome)
}

/// The launches as the model takes them.
fn model_launches(launches: &[LaunchOp]) -> Vec<MLaunch<'_>> {
    launches.iter().map(model_launch).collect()
}

/// One launch on `world`, one at a time.
fn run_launch(world: &mut World, l: &LaunchOp) -> Result<(u64, MVerdict), Error> {
    bridge::run_launch(world, model_launch(l))
}

fn batch(world: &mut World, launches: &[LaunchOp]) -> Result<Vec<(u64, MVerdict)>, Error> {
    run_binding_batch(world, &model_launches(launches))
}

fn batch_rows(rows: &mut RowWorld, launches: &[LaunchOp]) -> Result<Vec<(u64, MVerdict)>, Error> {
    rows.batch(&model_launches(launches))
}

/// The model's size of an allocation the huge world makes `size` bytes.
fn small(size: u64) -> u64 {
    size % 65
}

/// What a run carries from one step to the next, besides the worlds.
#[derive(Default)]
struct Carried {
    /// How many device faults came so far: the next takes
    /// `FAULTS[faults % 2]`.
    faults: usize,
    /// Every failure id a world has named, by number: each is asked of
    /// every world after every step (`World::failure`), and must be found
    /// exactly while the model holds it live.
    ids: std::collections::BTreeMap<u64, FailureId>,
    /// The stream of the window opened last, for an aimed `CaptureEnd`.
    opened: Option<StreamRef>,
    /// The graph made last, for an aimed `Replay`.
    made: Option<u64>,
}

/// What a world's `read_failure` says, in the model's terms.
fn read_failure(world: &mut World, binding: &Binding) -> Result<Option<u64>, Error> {
    world.read_failure(binding).map(|f| f.map(FailureId::get))
}

/// One launch on `a`, one at a time by memory id, as [`run_launch`] runs it,
/// and when it is rejected for a binding, not its own stream, it must name
/// through `binding_at_fault` the binding the model finds bad first
/// (`first_bad`, asked before the launch; `None` when the launch's stream
/// is bad, an error that is no binding's: a binding on the same bad
/// special stream has an equal error, which `binding_at_fault` cannot tell
/// apart).
fn run_launch_named(
    first_bad: Option<Option<usize>>,
    a: &mut World,
    l: &LaunchOp,
) -> Result<(u64, MVerdict), Error> {
    let bindings: Vec<Binding> = l.bindings.iter().map(to_binding).collect();
    let launch = Launch {
        kernel: l.kernel,
        stream: l.stream.into(),
        bindings: &bindings[..],
        outcome: to_outcome(&l.outcome),
    };
    match a.launch(&launch) {
        Ok(r) => Ok((r.launch, verdict(r.verdict))),
        Err(e) => {
            if let Some(first_bad) = first_bad {
                assert_eq!(
                    a.binding_at_fault(&bindings, &e),
                    first_bad,
                    "the binding at fault in {e}"
                );
            }
            Err(e)
        }
    }
}

/// Applies one operation to the model, the one-at-a-time world `a`
/// (memory ids), the batching world `b` (whose single launches name live
/// memory by key), the pre-resolved world `r` (rows, in batches or one
/// launch at a time) and the huge world `h`, and checks that the first
/// four agree and that `a` and `h` keep SPEC §10.
fn step(
    m: &mut Model,
    a: &mut World,
    b: &mut World,
    r: &mut RowWorld,
    h: &mut World,
    carried: &mut Carried,
    op: &Op,
) {
    match op {
        Op::Alloc {
            stream,
            memory,
            size,
        } => {
            let (s, mem, size) = (stream.get(), memory.get(), size.get());
            let expected = m.alloc(s, mem, small(size));
            for w in [&mut *a, &mut *b, &mut r.world] {
                assert_eq!(w.alloc(s, mem, small(size)).map(|_| ()), expected);
            }
            let _ = h.alloc(s, mem, size);
        }
        Op::AllocFailed {
            stream,
            memory,
            size,
        } => {
            let (s, mem, size) = (stream.get(), memory.get(), size.get());
            let (kind, msg) = ("oom", "out of memory");
            let expected = m.alloc_failed(s, mem, small(size), kind, msg);
            for w in [&mut *a, &mut *b, &mut r.world] {
                let got = w.alloc_failed(s, mem, small(size), kind, msg);
                assert_eq!(got.map(|_| ()), expected);
            }
            let _ = h.alloc_failed(s, mem, size, kind, msg);
        }
        Op::Free { memory } => {
            let mem = memory.get();
            let expected = m.free(mem);
            assert_eq!(a.free(mem), expected);
            assert_eq!(bridge::free_keyed(b, mem), expected);
            assert_eq!(r.free(mem), expected);
            let _ = h.free(mem);
        }
        Op::Launch(l) => {
            let l = l.get();
            let first_bad = m.slot(l.stream).ok().map(|_| m.first_bad(&l.bindings));
            let expected = m.launch(l.kernel, l.stream, &l.bindings, &l.outcome);
            assert_eq!(run_launch_named(first_bad, a, &l), expected);
            // `b` names live memory by key and `r` binds rows: the
            // bindings a single launch answers from one look-up each.
            assert_eq!(bridge::run_keyed_launch(b, model_launch(&l)), expected);
            assert_eq!(blurred(r.launch(model_launch(&l))), blurred(expected));
            let _ = run_launch(h, &l);
        }
        Op::Scope(l) => {
            // The model and `r` take it as the launch it stands for; a
            // scope cannot be a dry run, so a dry run's body panics, a
            // launch that fails with the `torn_down` error (SPEC §6b).
            let mut l = l.get();
            let torn = l.outcome == MOutcome::DryRun;
            if torn {
                let (kind, message) = bridge::TORN_DOWN;
                l.outcome = MOutcome::Failed(kind.into(), message.into());
            }
            let expected = m.launch(l.kernel, l.stream, &l.bindings, &l.outcome);
            for w in [&mut *a, &mut *b] {
                if !torn {
                    assert_eq!(bridge::run_scope(w, model_launch(&l)), expected);
                    continue;
                }
                // A body that ran and panicked: the launch the model failed,
                // its number taken (its failure is held to the model's by
                // the state below).
                match bridge::run_torn_scope(w, model_launch(&l)) {
                    Ok(None) => {
                        let Ok((number, MVerdict::Failed(_))) = expected else {
                            panic!("a body ran and panicked where the model has {expected:?}");
                        };
                        assert_eq!(w.launches(), number + 1, "the torn scope's number");
                    }
                    got => assert_eq!(got.map(|v| v.expect("not run")), expected),
                }
            }
            // `r` takes it as a batch of one, whose refusal names launch 0.
            let rows = batch_rows(r, std::slice::from_ref(&l)).map(|v| v[0].clone());
            let expected = expected.map_err(|e| in_batch(0, e));
            assert_eq!(blurred(rows), blurred(expected));
            let _ = bridge::run_scope(h, model_launch(&l));
        }
        Op::Batch(launches) => {
            let launches: Vec<LaunchOp> = launches.iter().take(4).map(L::get).collect();
            // One at a time on the model and `a`; a bad launch anywhere
            // rejects the whole batch, so both are rolled back then.
            let (m0, a0) = (m.clone(), a.clone());
            let mut expected = Vec::new();
            let mut bad = None;
            for l in &launches {
                let want = m.launch(l.kernel, l.stream, &l.bindings, &l.outcome);
                let got = run_launch(a, l);
                assert_eq!(got, want);
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
            let got = batch(b, &launches);
            assert_eq!(got, expected);
            if let Err(e) = &expected {
                // Rejected, `b` is as it was: the same batch by memory id
                // again, which must be refused with the same error, and
                // within the bad launch `binding_at_fault` must name the
                // binding the model finds bad first (unless the launch's
                // own stream is bad: see `run_launch_named`).
                let at = e.batch_index().expect("a batch's error names its launch");
                let bound: Vec<Vec<Binding>> = launches
                    .iter()
                    .map(|l| l.bindings.iter().map(to_binding).collect())
                    .collect();
                let batch: Vec<Launch<'_>> = launches
                    .iter()
                    .zip(&bound)
                    .map(|(l, bindings)| Launch {
                        kernel: l.kernel,
                        stream: l.stream.into(),
                        bindings: &bindings[..],
                        outcome: to_outcome(&l.outcome),
                    })
                    .collect();
                let mut results = Vec::new();
                let again = b.launch_batch(&batch, &mut results);
                assert_eq!(again.as_ref(), Err(e), "a batch by memory id");
                if m.slot(launches[at].stream).is_ok() {
                    assert_eq!(
                        b.binding_at_fault(&bound[at], e.inner()),
                        m.first_bad(&launches[at].bindings),
                        "the binding at fault in {e}"
                    );
                }
            }
            assert_eq!(blurred(batch_rows(r, &launches)), blurred(expected));
            let _ = batch(h, &launches);
        }
        Op::HostWrite { binding, outcome } => {
            let (binding, outcome) = (binding.get(), outcome.get());
            let expected = m.host_write(&binding, &outcome);
            for w in [&mut *a, &mut *b, &mut r.world] {
                let got = w
                    .host_write(&to_binding(&binding), to_outcome(&outcome))
                    .map(verdict);
                assert_eq!(got, expected);
            }
            let _ = h.host_write(&to_binding(&binding), to_outcome(&outcome));
        }
        Op::Read { binding } => {
            // First the cheap question a scheduler asks before every host
            // read (`read_failure`: the failure alone, no report, no
            // fault), `b` naming live memory by key; then the read itself.
            let binding = binding.get();
            let cheap = m.read_failure(&binding);
            let keyed = bridge::to_keyed_binding(b, &binding);
            assert_eq!(read_failure(a, &to_binding(&binding)), cheap);
            assert_eq!(read_failure(b, &keyed), cheap);
            assert_eq!(read_failure(&mut r.world, &to_binding(&binding)), cheap);
            let _ = h.read_failure(&to_binding(&binding));
            let expected = m.read(&binding);
            for w in [&mut *a, &mut *b, &mut r.world] {
                // The answer read in place (`read_taint`, on a copy: an
                // unresolved binding is counted again) is the read's
                // report, not copied; like `read_failure` it looks only at
                // claims, so under a device fault it is the cheap answer.
                let mut copy = w.clone();
                let in_place = copy.read_taint(&to_binding(&binding));
                let in_place = in_place.map(|t| t.map(|t| t.to_report()));
                let full = w.read(&to_binding(&binding));
                assert_eq!(full.clone().map(read_result), expected);
                match (full, in_place) {
                    (Ok(ReadResult::Tainted(report)), Ok(Some(copied))) => {
                        assert_eq!(copied, report)
                    }
                    (Ok(ReadResult::Clean | ReadResult::Unresolved), Ok(None)) => {}
                    (Ok(ReadResult::DeviceFault(_)), Ok(copied)) => {
                        assert_eq!(Ok(copied.map(|r| r.failure.get())), cheap)
                    }
                    (Err(e), Err(copied)) => assert_eq!(e, copied),
                    (full, in_place) => panic!("read {full:?}, read_taint {in_place:?}"),
                }
            }
            let _ = h.read(&to_binding(&binding));
        }
        Op::CaptureBegin { stream } => {
            let s = stream.get();
            let expected = m.capture_begin(s);
            if expected.is_ok() {
                carried.opened = Some(s);
            }
            for w in [&mut *a, &mut *b, &mut r.world] {
                assert_eq!(w.capture_begin(s), expected);
            }
            let _ = h.capture_begin(s);
        }
        Op::CaptureEnd { stream, graph } => {
            let s = match carried.opened {
                Some(opened) if *graph >= 128 => opened,
                _ => stream.get(),
            };
            let g = u64::from(graph % 3);
            let expected = m.capture_end(s, g);
            if let Ok(MCapture::Ok) = expected {
                carried.made = Some(g);
            }
            for w in [&mut *a, &mut *b, &mut r.world] {
                let got = w.capture_end(s, g).map(|r| match r {
                    CaptureResult::Ok => MCapture::Ok,
                    CaptureResult::Failed(r) => MCapture::Failed(report(r)),
                });
                assert_eq!(got, expected);
            }
            let _ = h.capture_end(s, g);
        }
        Op::Replay {
            graph,
            outcome,
            checked,
        } => {
            // A checked replay on `a` and `b` hands over each launch it
            // settles (`replay_checked_each`), which must be the model's,
            // in order; `r` takes the plain `replay_checked`.
            let g = match carried.made {
                Some(made) if *graph >= 128 => made,
                _ => u64::from(graph % 3),
            };
            let (outcome, checked) = (outcome.get(), *checked);
            let expected = if checked {
                m.replay_checked_each(g, &outcome)
            } else {
                m.replay(g, &outcome).map(|v| (v, Vec::new()))
            };
            let replay = |w: &mut World, each: bool| {
                let mut settled = Vec::new();
                let got = if checked && each {
                    w.replay_checked_each(g, to_outcome(&outcome), |l| {
                        settled.push((l.launch, verdict(l.verdict)))
                    })
                } else if checked {
                    w.replay_checked(g, to_outcome(&outcome))
                } else {
                    w.replay(g, to_outcome(&outcome))
                };
                got.map(|v| (verdict(v), settled))
            };
            assert_eq!(replay(a, true), expected);
            assert_eq!(replay(b, true), expected);
            let plain = replay(&mut r.world, false).map(|(v, _)| v);
            assert_eq!(plain, expected.map(|(v, _)| v));
            let _ = replay(h, true);
        }
        Op::GraphDestroy { graph } => {
            let g = u64::from(graph % 3);
            let expected = m.graph_destroy(g);
            for w in [&mut *a, &mut *b, &mut r.world] {
                assert_eq!(w.graph_destroy(g), expected);
            }
            let _ = h.graph_destroy(g);
        }
        Op::ProfileBegin { profile } => {
            let p = u64::from(profile % 2);
            let expected = m.profile_begin(p);
            for w in [&mut *a, &mut *b, &mut r.world] {
                assert_eq!(w.profile_begin(p), expected);
            }
            let _ = h.profile_begin(p);
        }
        Op::ProfileEnd { profile } => {
            let p = u64::from(profile % 2);
            let expected = m.profile_end(p);
            for w in [&mut *a, &mut *b, &mut r.world] {
                let got = w.profile_end(p).map(|r| match r {
                    ProfileResult::Valid => MProfile::Valid,
                    ProfileResult::Invalid { failure, error } => {
                        MProfile::Invalid(failure.get(), (error.kind, error.kernel, error.message))
                    }
                });
                assert_eq!(got, expected);
            }
            let _ = h.profile_end(p);
        }
        Op::DeviceFault => {
            let (kind, message) = FAULTS[carried.faults % FAULTS.len()];
            carried.faults += 1;
            m.device_fault(kind, message);
            a.device_fault(kind, message);
            b.device_fault(kind, message);
            r.world.device_fault(kind, message);
            h.device_fault(kind, message);
        }
        Op::Sync => {
            let expected = m.sync();
            for w in [&*a, &*b, &r.world] {
                let got = bridge::sync_result(w.sync());
                assert_eq!(got, expected);
            }
            let _ = h.sync();
            // A scheduler may give back its buffers' room at any quiet
            // moment; nothing else may change (`b` and `h` are held to
            // the model and SPEC §10 as before).
            b.shrink_buffers();
            h.shrink_buffers();
        }
    }
    // Each world keeps SPEC §10 on its own: the batching and pre-resolved
    // worlds take paths the one-at-a-time world never does (a batch's
    // repeated kernel takes its name's reference without a look-up).
    for (name, w) in [
        ("world", &*a),
        ("batching world", &*b),
        ("pre-resolved world", &r.world),
        ("huge world", &*h),
    ] {
        if let Err(e) = w.check_invariants() {
            panic!("{name}: invariant broken after {op:?}: {e}");
        }
    }
    // What the state below does not hold: the live graphs, the counter
    // asked in O(1), and every failure found by its id (`failure`) exactly
    // while it lives — a pruned id found still, or a live one lost, is an
    // id index out of step with the store.
    for w in [&*a, &*b, &r.world] {
        for f in w.failures() {
            carried.ids.insert(f.id.get(), f.id);
        }
    }
    let records = m.live_record_rows();
    for (name, w) in [
        ("world", &*a),
        ("batching world", &*b),
        ("pre-resolved world", &r.world),
    ] {
        for g in 0..3 {
            assert_eq!(
                w.has_graph(g),
                m.has_graph(g),
                "{name}: graph {g} after {op:?}"
            );
        }
        assert_eq!(w.unresolved_bindings(), m.unresolved, "{name} after {op:?}");
        for (&n, &id) in &carried.ids {
            let found = w.failure(id);
            assert_eq!(
                found.is_some(),
                m.failures.contains_key(&n),
                "{name}: failure {n} by its id after {op:?}"
            );
            if let Some(f) = found {
                assert_eq!(
                    Some(f),
                    w.failures().find(|g| g.id == id),
                    "{name}: failure {n}"
                );
                let of = w.skip_records_of(id).count();
                let live = records.iter().filter(|r| r.6 == n).count();
                assert_eq!(of, live, "{name}: failure {n}'s records after {op:?}");
            }
        }
    }
    let expected = model_state(m);
    assert_eq!(
        state(a),
        expected,
        "world differs from the model after {op:?}"
    );
    assert_eq!(state(b), expected, "batching world differs after {op:?}");
    assert_eq!(
        state(&r.world),
        expected,
        "pre-resolved world differs after {op:?}"
    );
}

fuzz_target!(|input: Input| {
    let chain_limit = [1u32, 2, 3, 1024][usize::from(input.chain_limit % 4)];
    let strict = input.strict.is_multiple_of(8);
    let max_streams = [3u64, 1, 2, u64::MAX][usize::from(input.max_streams % 4)];
    let num_special = u16::from(input.max_streams / 4 % 3);
    let mut config = Config {
        max_streams,
        num_special,
        chain_limit,
        strict,
    };
    if max_streams.checked_add(u64::from(num_special)).is_none() {
        // Refused as the slots it asks for, and then asked with the last
        // regular slots given to the special streams: the special slots
        // end at `u64::MAX`.
        let overflow = Error::SlotOverflow {
            max_streams,
            num_special,
        };
        assert_eq!(World::new(config).err(), Some(overflow));
        config.max_streams -= u64::from(num_special);
    }
    let mut m = Model::new(config.max_streams, chain_limit, strict).with_special(num_special);
    let mut a = World::new(config).expect("a valid configuration");
    let mut b = World::new(config).expect("a valid configuration");
    let mut r = RowWorld::new(config);
    let mut h = World::new(config).expect("a valid configuration");
    // Registered kernel names change how a skip finds its kernel, never
    // what it records: the pre-resolved world registers the very strings
    // its launches name, the batching world copies of them at other
    // addresses (found by hashing, into the same kernels).
    let copies = COPIES.get_or_init(|| KERNELS.map(|k| &*Box::leak(k.to_owned().into_boxed_str())));
    for (kernel, copy) in KERNELS.into_iter().zip(*copies) {
        r.world.register_kernel(kernel);
        b.register_kernel(copy);
    }
    let mut carried = Carried::default();
    for (i, op) in input.ops.iter().take(256).enumerate() {
        step(&mut m, &mut a, &mut b, &mut r, &mut h, &mut carried, op);
        // Every so often the worlds that bind by `Binding` go on as their
        // clones, which must print as they do (a clone's stores are copied
        // by hand, to keep their room) and are then held to the model as
        // the originals would have been.
        if i % 16 == 15 {
            for w in [&mut a, &mut b] {
                let copy = w.clone();
                assert_eq!(
                    format!("{copy:?}"),
                    format!("{w:?}"),
                    "a clone after {op:?}"
                );
                *w = copy;
            }
        }
    }
    let captured: Vec<StreamRef> = input
        .ops
        .iter()
        .filter_map(|op| match op {
            Op::CaptureBegin { stream } => Some(stream.get()),
            _ => None,
        })
        .collect();
    // SPEC §10 invariants 2 and 6: once everything is freed and every
    // window ended, nothing remains — on every world.
    for w in [&mut a, &mut h, &mut b, &mut r.world] {
        let live: Vec<u64> = w.allocations().iter().map(|(_, al)| al.memory).collect();
        for memory in live {
            w.free(memory).expect("a live allocation frees");
        }
        let mut g = 1000;
        for &stream in &captured {
            while w.capture_end(stream, g).is_ok() {
                g += 1;
            }
        }
        let stats = w.stats();
        assert_eq!(stats.live_failures, 0);
        assert_eq!(stats.live_records, 0);
        assert_eq!(stats.allocations, 0);
        assert_eq!(stats.claims, 0);
        assert_eq!(stats.tainted_bytes, 0);
        if let Err(e) = w.check_invariants() {
            panic!("invariant broken at the end: {e}");
        }
    }
});
