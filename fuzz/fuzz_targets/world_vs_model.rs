//! (b) The world driven by arbitrary operation sequences, every step checked
//! against the per-byte model of the tests (tests/model/mod.rs), exactly as
//! tests/world_matches_model.rs compares them: the one-at-a-time world `a`,
//! the batching world `b` (which frees live memory by key), the world `r`
//! that takes every launch as a batch of pre-resolved rows, and the model
//! must give the same results and the same observable state after every
//! operation, and `a` must keep SPEC §10.
//! A write scope (SPEC §6b) is a launch whose outcome is its body's: `a`
//! and `b` run it through `World::scope`, the model and `r` as the launch.
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
    self, MLaunch, RowWorld, model_state, read_result, report, run_binding_batch, state,
    to_binding, to_outcome, verdict,
};
use model::{MBinding, MCapture, MOutcome, MProfile, MVerdict, Model};
use taintworld::{CaptureResult, Config, ProfileResult, World};

/// A `static`, so that a launch names the very strings a world registers.
static KERNELS: [&str; 4] = ["k0", "k1", "k2", "k3"];
/// Copies of [`KERNELS`] at other addresses, leaked once a process.
static COPIES: std::sync::OnceLock<[&'static str; 4]> = std::sync::OnceLock::new();
const KINDS: [&str; 2] = ["compile", "launch"];
const MESSAGES: [&str; 2] = ["m0", "m1"];

/// A stream id: mostly small, sometimes anywhere in `u64`.
#[derive(Arbitrary, Clone, Copy, Debug)]
enum Stream {
    Small(u8),
    Raw(u64),
}

impl Stream {
    fn get(self) -> u64 {
        match self {
            Stream::Small(s) => u64::from(s % 6),
            Stream::Raw(s) => s,
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
    stream: u64,
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
    CaptureEnd {
        stream: Stream,
        graph: u8,
    },
    /// A replay, checked launch by launch (`World::replay_checked`) or not.
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
fn run_launch(world: &mut World, l: &LaunchOp) -> Result<(u64, MVerdict), ()> {
    bridge::run_launch(world, model_launch(l))
}

fn batch(world: &mut World, launches: &[LaunchOp]) -> Result<Vec<(u64, MVerdict)>, ()> {
    run_binding_batch(world, &model_launches(launches))
}

fn batch_rows(rows: &mut RowWorld, launches: &[LaunchOp]) -> Result<Vec<(u64, MVerdict)>, ()> {
    rows.batch(&model_launches(launches))
}

/// The model's size of an allocation the huge world makes `size` bytes.
fn small(size: u64) -> u64 {
    size % 65
}

/// Applies one operation to the model, the one-at-a-time world `a`
/// (memory ids), the batching world `b` (whose single launches name live
/// memory by key), the pre-resolved world `r` (rows, in batches or one
/// launch at a time) and the huge world `h`, and checks that the first
/// four agree and that `a` and `h` keep SPEC §10.
fn step(m: &mut Model, a: &mut World, b: &mut World, r: &mut RowWorld, h: &mut World, op: &Op) {
    match op {
        Op::Alloc {
            stream,
            memory,
            size,
        } => {
            let (s, mem, size) = (stream.get(), memory.get(), size.get());
            let expected = m.alloc(s, mem, small(size)).is_ok();
            assert_eq!(a.alloc(s, mem, small(size)).is_ok(), expected);
            assert_eq!(b.alloc(s, mem, small(size)).is_ok(), expected);
            assert_eq!(r.world.alloc(s, mem, small(size)).is_ok(), expected);
            let _ = h.alloc(s, mem, size);
        }
        Op::AllocFailed {
            stream,
            memory,
            size,
        } => {
            let (s, mem, size) = (stream.get(), memory.get(), size.get());
            let (kind, msg) = ("oom", "out of memory");
            let expected = m.alloc_failed(s, mem, small(size), kind, msg).is_ok();
            assert_eq!(
                a.alloc_failed(s, mem, small(size), kind, msg).is_ok(),
                expected
            );
            for w in [&mut *b, &mut r.world] {
                assert_eq!(
                    w.alloc_failed(s, mem, small(size), kind, msg).is_ok(),
                    expected
                );
            }
            let _ = h.alloc_failed(s, mem, size, kind, msg);
        }
        Op::Free { memory } => {
            let mem = memory.get();
            let expected = m.free(mem).is_ok();
            assert_eq!(a.free(mem).is_ok(), expected);
            assert_eq!(bridge::free_keyed(b, mem).is_ok(), expected);
            assert_eq!(r.free(mem).is_ok(), expected);
            let _ = h.free(mem);
        }
        Op::Launch(l) => {
            let l = l.get();
            let expected = m
                .launch(l.kernel, l.stream, &l.bindings, &l.outcome)
                .map_err(|_| ());
            assert_eq!(run_launch(a, &l), expected);
            // `b` names live memory by key and `r` binds rows: the
            // bindings a single launch answers from one look-up each.
            assert_eq!(bridge::run_keyed_launch(b, model_launch(&l)), expected);
            assert_eq!(r.launch(model_launch(&l)), expected);
            let _ = run_launch(h, &l);
        }
        Op::Scope(l) => {
            // The model and `r` take it as the launch it stands for; a
            // scope cannot be a dry run, so its body returns `Ok` then.
            let mut l = l.get();
            if l.outcome == MOutcome::DryRun {
                l.outcome = MOutcome::Ok;
            }
            let expected = m
                .launch(l.kernel, l.stream, &l.bindings, &l.outcome)
                .map_err(|_| ());
            assert_eq!(bridge::run_scope(a, model_launch(&l)), expected);
            assert_eq!(bridge::run_scope(b, model_launch(&l)), expected);
            let rows = batch_rows(r, std::slice::from_ref(&l)).map(|v| v[0].clone());
            assert_eq!(rows, expected);
            let _ = bridge::run_scope(h, model_launch(&l));
        }
        Op::Batch(launches) => {
            let launches: Vec<LaunchOp> = launches.iter().take(4).map(L::get).collect();
            // One at a time on the model and `a`; a bad launch anywhere
            // rejects the whole batch, so both are rolled back then.
            let (m0, a0) = (m.clone(), a.clone());
            let mut expected = Vec::new();
            let mut bad = false;
            for l in &launches {
                let want = m.launch(l.kernel, l.stream, &l.bindings, &l.outcome);
                let got = run_launch(a, l);
                assert_eq!(got, want.clone().map_err(|_| ()));
                match want {
                    Ok(v) => expected.push(v),
                    Err(_) => {
                        bad = true;
                        break;
                    }
                }
            }
            if bad {
                *m = m0;
                *a = a0;
            }
            let got = batch(b, &launches);
            assert_eq!(got.is_err(), bad);
            if let Ok(got) = &got {
                assert_eq!(got, &expected);
            }
            assert_eq!(batch_rows(r, &launches), got);
            let _ = batch(h, &launches);
        }
        Op::HostWrite { binding, outcome } => {
            let (binding, outcome) = (binding.get(), outcome.get());
            let expected = m.host_write(&binding, &outcome).map_err(|_| ());
            for w in [&mut *a, &mut *b, &mut r.world] {
                let got = w
                    .host_write(&to_binding(&binding), to_outcome(&outcome))
                    .map(verdict)
                    .map_err(|_| ());
                assert_eq!(got, expected);
            }
            let _ = h.host_write(&to_binding(&binding), to_outcome(&outcome));
        }
        Op::Read { binding } => {
            let binding = binding.get();
            let expected = m.read(&binding).map_err(|_| ());
            for w in [&mut *a, &mut *b, &mut r.world] {
                let got = w
                    .read(&to_binding(&binding))
                    .map(read_result)
                    .map_err(|_| ());
                assert_eq!(got, expected);
            }
            let _ = h.read(&to_binding(&binding));
        }
        Op::CaptureBegin { stream } => {
            let s = stream.get();
            let expected = m.capture_begin(s).is_ok();
            assert_eq!(a.capture_begin(s).is_ok(), expected);
            assert_eq!(b.capture_begin(s).is_ok(), expected);
            assert_eq!(r.world.capture_begin(s).is_ok(), expected);
            let _ = h.capture_begin(s);
        }
        Op::CaptureEnd { stream, graph } => {
            let (s, g) = (stream.get(), u64::from(graph % 3));
            let expected = m.capture_end(s, g).map_err(|_| ());
            for w in [&mut *a, &mut *b, &mut r.world] {
                let got = w.capture_end(s, g).map_err(|_| ()).map(|r| match r {
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
            let (g, outcome, checked) = (u64::from(graph % 3), outcome.get(), *checked);
            let expected = if checked {
                m.replay_checked(g, &outcome)
            } else {
                m.replay(g, &outcome)
            };
            let expected = expected.map_err(|_| ());
            let replay = |w: &mut World| {
                if checked {
                    w.replay_checked(g, to_outcome(&outcome))
                } else {
                    w.replay(g, to_outcome(&outcome))
                }
            };
            for w in [&mut *a, &mut *b, &mut r.world] {
                assert_eq!(replay(w).map(verdict).map_err(|_| ()), expected);
            }
            let _ = replay(h);
        }
        Op::GraphDestroy { graph } => {
            let g = u64::from(graph % 3);
            let expected = m.graph_destroy(g).is_ok();
            assert_eq!(a.graph_destroy(g).is_ok(), expected);
            assert_eq!(b.graph_destroy(g).is_ok(), expected);
            assert_eq!(r.world.graph_destroy(g).is_ok(), expected);
            let _ = h.graph_destroy(g);
        }
        Op::ProfileBegin { profile } => {
            let p = u64::from(profile % 2);
            let expected = m.profile_begin(p).is_ok();
            assert_eq!(a.profile_begin(p).is_ok(), expected);
            assert_eq!(b.profile_begin(p).is_ok(), expected);
            assert_eq!(r.world.profile_begin(p).is_ok(), expected);
            let _ = h.profile_begin(p);
        }
        Op::ProfileEnd { profile } => {
            let p = u64::from(profile % 2);
            let expected = m.profile_end(p).map_err(|_| ());
            for w in [&mut *a, &mut *b, &mut r.world] {
                let got = w.profile_end(p).map_err(|_| ()).map(|r| match r {
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
            m.device_fault("device", "illegal address");
            a.device_fault("device", "illegal address");
            b.device_fault("device", "illegal address");
            r.world.device_fault("device", "illegal address");
            h.device_fault("device", "illegal address");
        }
        Op::Sync => {
            let expected = m.sync();
            for w in [&*a, &*b, &r.world] {
                let got = bridge::sync_result(w.sync());
                assert_eq!(got, expected);
            }
            let _ = h.sync();
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
    let config = Config {
        max_streams,
        num_special: 0,
        chain_limit,
        strict,
    };
    let mut m = Model::new(max_streams, chain_limit, strict);
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
    for op in input.ops.iter().take(256) {
        step(&mut m, &mut a, &mut b, &mut r, &mut h, op);
    }
    let captured: Vec<u64> = input
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
