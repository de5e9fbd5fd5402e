//! The benchmark workloads, built identically for the crate's `World` and
//! the seed-shaped baseline, so the same launches run on both.

#![allow(dead_code)]

use std::rc::Rc;

use taintworld::{
    Access, AllocKey, Bind, Binding, Launch, Outcome, Resolved, StreamRef, Verdict, World,
};

use crate::baseline::{BaseBinding, BaseVerdict, Baseline, Location};

/// One binding, named both ways.
#[derive(Copy, Clone, Debug)]
pub struct Both {
    pub key: AllocKey,
    pub at: Location,
    pub start: u64,
    pub end: u64,
    pub access: Access,
}

impl Both {
    /// The binding as the world names it.
    pub fn binding(&self) -> Binding {
        Binding {
            stream: StreamRef::Id(self.at.slot as u64),
            memory: self.key.into(),
            range: Some((self.start, self.end)),
            access: self.access,
        }
    }

    /// The row a scheduler keeps for it: the binding resolved once by the
    /// world (only the world makes rows).
    pub fn row(&self, world: &World) -> Resolved {
        world
            .resolve_binding(&self.binding())
            .expect("good input")
            .expect("live")
    }

    /// The binding as the baseline names it.
    pub fn base_binding(&self) -> BaseBinding {
        BaseBinding {
            at: self.at,
            start: self.start,
            end: self.end,
            read: self.access.reads(),
            write: self.access.writes(),
        }
    }
}

/// One launch, described once.
#[derive(Clone, Debug)]
pub struct Work {
    pub kernel: &'static str,
    pub bindings: Vec<Both>,
    pub failed: Option<(&'static str, &'static str)>,
}

impl Work {
    pub fn outcome(&self) -> Outcome<'static> {
        match self.failed {
            Some((kind, message)) => Outcome::Failed { kind, message },
            None => Outcome::Ok,
        }
    }
}

/// Both implementations, set up identically.
#[derive(Clone)]
pub struct Pair {
    pub world: World,
    pub base: Baseline,
    pub allocs: Vec<(AllocKey, Location, u64)>,
}

impl Pair {
    /// The pair and `work` prepared against its world (the rows resolved
    /// by it).
    pub fn with_work(self, work: Vec<Work>) -> (Pair, Prepared) {
        let prepared = Prepared::new(&self.world, work);
        (self, prepared)
    }

    pub fn new(count: usize, size: u64, streams: usize) -> Self {
        let mut world = World::default();
        let mut base = Baseline::new(8);
        let mut allocs = Vec::with_capacity(count);
        for i in 0..count {
            let slot = i % streams;
            let memory = i as u64;
            let key = world
                .alloc(slot as u64, memory, size)
                .expect("fresh memory id");
            let at = base.alloc(slot, memory, size);
            allocs.push((key, at, size));
        }
        Pair {
            world,
            base,
            allocs,
        }
    }

    pub fn bind(&self, i: usize, start: u64, end: u64, access: Access) -> Both {
        let (key, at, _) = self.allocs[i];
        Both {
            key,
            at,
            start,
            end,
            access,
        }
    }

    pub fn whole(&self, i: usize, access: Access) -> Both {
        let size = self.allocs[i].2;
        self.bind(i, 0, size, access)
    }
}

/// Every launch's bindings in one buffer, in launch order, as a scheduler
/// builds a batch: the launches' slices lie one after another in memory,
/// whatever the allocator did before (one `Vec` a launch would scatter them
/// as the heap the earlier benches left behind allows).
pub struct Flat<T> {
    items: Vec<T>,
    ends: Vec<usize>,
}

impl<T> Flat<T> {
    fn new(per_launch: impl Iterator<Item = impl Iterator<Item = T>>) -> Self {
        let mut items = Vec::new();
        let mut ends = Vec::new();
        for launch in per_launch {
            items.extend(launch);
            ends.push(items.len());
        }
        Flat { items, ends }
    }

    /// Launch `i`'s bindings.
    pub fn get(&self, i: usize) -> &[T] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.items[start..self.ends[i]]
    }

    /// Every launch's bindings as one slice, in order.
    pub fn all(&self) -> &[T] {
        &self.items
    }

    /// Every launch's bindings, in order.
    pub fn iter(&self) -> impl Iterator<Item = &[T]> {
        (0..self.ends.len()).map(|i| self.get(i))
    }
}

/// Launches prepared for the world's batch call: owns the bindings the
/// `Launch`es borrow — named, pre-resolved, and the baseline's.
pub struct Prepared {
    pub bindings: Flat<Binding>,
    pub rows: Flat<Resolved>,
    pub base: Flat<BaseBinding>,
    pub work: Vec<Work>,
}

impl Prepared {
    pub fn new(world: &World, work: Vec<Work>) -> Self {
        // What a scheduler holding keys would keep: each binding's row, as
        // `World::resolve_binding` gives it (a key and a concrete range).
        let rows = work
            .iter()
            .map(|w| w.bindings.iter().map(|b| b.row(world)).collect())
            .collect();
        Prepared::with_rows(work, rows)
    }

    /// `work` with each launch's rows made already (where its memory is
    /// not all alive at once).
    pub fn with_rows(work: Vec<Work>, rows: Vec<Vec<Resolved>>) -> Self {
        let bindings = Flat::new(work.iter().map(|w| w.bindings.iter().map(Both::binding)));
        let rows = Flat::new(rows.into_iter().map(Vec::into_iter));
        let base = Flat::new(
            work.iter()
                .map(|w| w.bindings.iter().map(Both::base_binding)),
        );
        Prepared {
            bindings,
            rows,
            base,
            work,
        }
    }

    /// The launches, binding `Binding`s.
    pub fn launches(&self) -> Vec<Launch<'_>> {
        self.launches_of(&self.bindings)
    }

    /// The same launches, binding pre-resolved rows.
    pub fn row_launches(&self) -> Vec<Launch<'_, Resolved>> {
        self.launches_of(&self.rows)
    }

    /// The launches, binding `Binding`s, each naming its kernel and error
    /// by the copies `own` holds for it (see [`OwnStrings`]).
    pub fn launches_owning<'a>(&'a self, own: &'a OwnStrings) -> Vec<Launch<'a>> {
        own.name(self.launches())
    }

    /// The same, binding pre-resolved rows.
    pub fn row_launches_owning<'a>(&'a self, own: &'a OwnStrings) -> Vec<Launch<'a, Resolved>> {
        own.name(self.row_launches())
    }

    fn launches_of<'a, B: Bind>(&'a self, bound: &'a Flat<B>) -> Vec<Launch<'a, B>> {
        self.work
            .iter()
            .zip(bound.iter())
            .map(|(w, b)| Launch {
                kernel: w.kernel,
                stream: StreamRef::Id(0),
                bindings: b,
                outcome: w.outcome(),
            })
            .collect()
    }

    /// Runs every launch on the baseline.
    pub fn run_base(&self, base: &mut Baseline, kernels: &[Rc<str>]) -> Vec<BaseVerdict> {
        self.work
            .iter()
            .zip(self.base.iter())
            .enumerate()
            .map(|(i, (w, b))| base.launch(&kernels[i % kernels.len()], b, w.failed))
            .collect()
    }

    /// The launches as the baseline takes them (its bindings and how it
    /// ended), made once outside any timed loop as `launches` makes the
    /// world's.
    pub fn base_launches(&self) -> Vec<BaseLaunch<'_>> {
        self.work
            .iter()
            .zip(self.base.iter())
            .map(|(w, bindings)| BaseLaunch {
                bindings,
                failed: w.failed,
            })
            .collect()
    }
}

/// One launch as the baseline takes it.
#[derive(Copy, Clone, Debug)]
pub struct BaseLaunch<'a> {
    pub bindings: &'a [BaseBinding],
    pub failed: Option<(&'static str, &'static str)>,
}

/// Runs `launches` on the baseline, keeping nothing (for timing).
#[inline]
pub fn run_base_quiet(base: &mut Baseline, kernel: &Rc<str>, launches: &[BaseLaunch<'_>]) {
    for launch in launches {
        std::hint::black_box(base.launch(kernel, launch.bindings, launch.failed));
    }
}

/// W1: launches of 3 reads + 1 write over 1,000 clean allocations.
pub fn w1_clean(bindings: usize) -> (Pair, Prepared) {
    let pair = Pair::new(1000, 4096, 4);
    let launches = bindings / 4;
    let work = (0..launches)
        .map(|i| Work {
            kernel: "clean",
            bindings: vec![
                pair.whole((i * 7) % 1000, Access::Read),
                pair.whole((i * 7 + 1) % 1000, Access::Read),
                pair.whole((i * 7 + 2) % 1000, Access::Read),
                pair.whole((i * 7 + 3) % 1000, Access::Write),
            ],
            failed: None,
        })
        .collect();
    pair.with_work(work)
}

/// Puts a failure in `pair`'s world beside W1's allocations: one more
/// allocation, which no W1 launch binds, carrying a failed host write — so
/// that the world is no longer quiet and each launch is checked as in any
/// world that holds a failure. The baseline needs nothing: its clean launch
/// costs the same whatever other allocations carry.
pub fn w1_beside_a_failure(pair: &mut Pair) {
    let beside = pair.allocs.len() as u64;
    pair.world.alloc(0, beside, 4096).expect("fresh memory id");
    let failed = Outcome::Failed {
        kind: "copy",
        message: "host copy failed",
    };
    pair.world
        .host_write(&Binding::whole(0, beside, Access::Write), failed)
        .expect("valid write");
    assert_eq!(pair.world.stats().live_failures, 1, "one failure lives");
}

/// Each launch's kernel name and error strings copied into strings of its
/// own, as a runtime that formats them afresh for every launch hands them
/// over: the same bytes, no two launches sharing an address. The workloads
/// name every launch by one `&'static str` each, which the crate's batch
/// call recognises by address within one call (a kernel interned or a
/// failure found once a batch); with these copies it compares or hashes
/// the strings for every launch, as the baseline always does.
pub struct OwnStrings(Vec<(String, Option<(String, String)>)>);

impl OwnStrings {
    pub fn of(prepared: &Prepared) -> Self {
        OwnStrings(
            prepared
                .work
                .iter()
                .map(|w| {
                    let failed = w
                        .failed
                        .map(|(kind, message)| (kind.to_owned(), message.to_owned()));
                    (w.kernel.to_owned(), failed)
                })
                .collect(),
        )
    }

    fn name<'a, B: Bind>(&'a self, launches: Vec<Launch<'a, B>>) -> Vec<Launch<'a, B>> {
        launches
            .into_iter()
            .zip(&self.0)
            .map(|(launch, (kernel, failed))| Launch {
                kernel,
                outcome: match failed {
                    Some((kind, message)) => Outcome::Failed { kind, message },
                    None => launch.outcome,
                },
                ..launch
            })
            .collect()
    }
}

/// Allocations in the W2 ring.
pub const W2_RING: usize = 1000;

/// W2: one failed launch, then a chain of `skips` launches each reading the
/// previous output, round a ring of 1,000 allocations — so a long chain
/// runs in steady state (each write replaces a claim, and the records its
/// old claim kept alive go) instead of growing the world without bound.
/// The failed launch is applied in setup; the chain is what is timed.
pub fn w2_chain(skips: usize) -> (Pair, Prepared) {
    let mut pair = Pair::new(W2_RING, 256, 1);
    let fail = Prepared::new(
        &pair.world,
        vec![Work {
            kernel: "fill",
            bindings: vec![pair.whole(0, Access::Write)],
            failed: Some(("compile", "bad PTX")),
        }],
    );
    pair.world
        .launch_batch(&fail.launches(), &mut Vec::new())
        .expect("valid launch");
    fail.run_base(&mut pair.base, &[Rc::from("fill")]);
    let work = (0..skips)
        .map(|i| Work {
            kernel: "gelu",
            bindings: vec![
                pair.whole(i % W2_RING, Access::Read),
                pair.whole((i + 1) % W2_RING, Access::Write),
            ],
            failed: None,
        })
        .collect();
    pair.with_work(work)
}

/// The fragmented allocation of W3: 1,000 tainted 1 KiB claims alternating
/// with 1,000 written 1 KiB gaps (a 2,000 KiB allocation).
pub const W3_CLAIMS: u64 = 1000;
pub const W3_KIB: u64 = 1024;

pub fn w3_fragmented() -> Pair {
    let size = 2 * W3_CLAIMS * W3_KIB;
    let mut pair = Pair::new(1, size, 1);
    let mut work = vec![Work {
        kernel: "fill",
        bindings: vec![pair.whole(0, Access::Write)],
        failed: Some(("compile", "bad PTX")),
    }];
    for i in 0..W3_CLAIMS {
        let start = (2 * i + 1) * W3_KIB;
        work.push(Work {
            kernel: "patch",
            bindings: vec![pair.bind(0, start, start + W3_KIB, Access::Write)],
            failed: None,
        });
    }
    let prepared = Prepared::new(&pair.world, work);
    pair.world
        .launch_batch(&prepared.launches(), &mut Vec::new())
        .expect("valid launches");
    prepared.run_base(&mut pair.base, &[Rc::from("fill")]);
    pair
}

/// Deterministic pseudo-random read ranges of 256 bytes over the W3
/// allocation (a seeded ChaCha generator, so runs compare).
pub fn w3_reads(pair: &Pair, count: usize) -> Vec<Both> {
    use rand::{RngExt, SeedableRng};
    let size = pair.allocs[0].2;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    (0..count)
        .map(|_| {
            let start = rng.random_range(0..size - 256);
            pair.bind(0, start, start + 256, Access::Read)
        })
        .collect()
}

/// The W3 write that carves through 100 claims (and the 100 gaps between),
/// a tenth of the way into the allocation: 100 claims before it, 800
/// after.
pub fn w3_carve(pair: &Pair) -> Both {
    w3_carve_from(pair, 200)
}

/// The same write through the middle 100 claims: 450 before it and 450
/// after, the most a change to the set moves either way.
pub fn w3_carve_mid(pair: &Pair) -> Both {
    w3_carve_from(pair, 900)
}

/// A write of the one claim 100 claims into W3's set, whole (KiB 200 to
/// 201): a kernel rewriting one patch of a fragmented buffer, the change
/// most writes into a large set are.
pub fn w3_write_one(pair: &Pair) -> Both {
    pair.bind(0, 200 * W3_KIB, 201 * W3_KIB, Access::Write)
}

/// A write of W3's 200 KiB from KiB `kib` on: 100 claims and their gaps.
fn w3_carve_from(pair: &Pair, kib: u64) -> Both {
    let start = kib * W3_KIB;
    pair.bind(0, start, start + 200 * W3_KIB, Access::Write)
}

/// The error of W3's write failing: a host copy into the fragmented
/// allocation that fails, so its 200 KiB carry a new failure and the 100
/// claims it crosses are cut away (no target: the taint through a window
/// of many claims, as the carving above is the release through one).
pub const W3_FAILED_COPY: (&str, &str) = ("copy", "host copy failed");

/// W3's carving write, failed, on the world: a failed host write.
pub fn w3_fail_world(world: &mut World, binding: &Binding) -> Verdict {
    let (kind, message) = W3_FAILED_COPY;
    world
        .host_write(binding, Outcome::Failed { kind, message })
        .expect("valid write")
}

/// The same on the baseline: the seed's launch of the host write's
/// kernel, failed (`kernel` is made once, outside the timing, as the
/// world's name is a constant).
pub fn w3_fail_base(base: &mut Baseline, kernel: &Rc<str>, binding: &BaseBinding) -> BaseVerdict {
    base.launch(kernel, std::slice::from_ref(binding), Some(W3_FAILED_COPY))
}

/// The graph the replay workload captures.
pub const GRAPH: u64 = 7;

/// How a replay of [`GRAPH`] fails, as a log writes a failed graph launch.
pub const GRAPH_FAILED: (&str, &str) = ("launch", "graph launch failed");

/// The replay workload: W1's `bindings / 4` launches of 3 reads + 1 write
/// over 1,000 allocations, captured on stream 0 into graph [`GRAPH`], which
/// records each launch's write (a replay reads nothing and writes every
/// recorded binding, SPEC §6); and the same writes as the baseline binds
/// them. The seed has no graphs: a runtime of its shape replaying one
/// would mark the graph's outputs written, one launch of these bindings,
/// each reached by its cached location, where the world resolves each
/// again by memory id as SPEC §6 asks (an id freed since the capture is
/// unresolved, a reused one hits the new allocation).
pub fn graph_replay(bindings: usize) -> (Pair, Vec<BaseBinding>) {
    let (mut pair, prepared) = w1_clean(bindings);
    pair.world.capture_begin(0).expect("stream 0 is live");
    pair.world
        .launch_batch(&prepared.launches(), &mut Vec::new())
        .expect("valid launches");
    pair.world
        .capture_end(0, GRAPH)
        .expect("a window nothing doomed");
    let writes = prepared
        .base
        .iter()
        .flat_map(|b| b.iter().filter(|b| b.write).copied())
        .collect();
    (pair, writes)
}

/// One replay of `graph` on the world, failed or good.
pub fn replay_graph(world: &mut World, graph: u64, failed: bool) -> Verdict {
    let outcome = if failed {
        Outcome::Failed {
            kind: GRAPH_FAILED.0,
            message: GRAPH_FAILED.1,
        }
    } else {
        Outcome::Ok
    };
    world.replay(graph, outcome).expect("a live graph")
}

/// The same replay on the baseline: one launch of the graph's writes.
pub fn replay_base(
    base: &mut Baseline,
    kernel: &Rc<str>,
    writes: &[BaseBinding],
    failed: bool,
) -> BaseVerdict {
    base.launch(kernel, writes, failed.then_some(GRAPH_FAILED))
}

/// W4: the same kernel failing on the same buffer `launches` times.
pub fn w4_retaint(launches: usize) -> (Pair, Prepared) {
    let pair = Pair::new(1, 4096, 1);
    let work = (0..launches)
        .map(|_| Work {
            kernel: "fill",
            bindings: vec![pair.whole(0, Access::Write)],
            failed: Some(("compile", "bad PTX")),
        })
        .collect();
    pair.with_work(work)
}

/// The world's verdicts, in the baseline's terms.
pub fn world_verdicts(world: &mut World, prepared: &Prepared) -> Vec<BaseVerdict> {
    verdicts_of(world, &prepared.launches())
}

/// The same, the launches binding pre-resolved rows.
pub fn world_row_verdicts(world: &mut World, prepared: &Prepared) -> Vec<BaseVerdict> {
    verdicts_of(world, &prepared.row_launches())
}

fn verdicts_of<B: Bind>(world: &mut World, launches: &[Launch<'_, B>]) -> Vec<BaseVerdict> {
    let mut results = Vec::new();
    world
        .launch_batch(launches, &mut results)
        .expect("valid launches");
    results.iter().map(|r| base_verdict(r.verdict)).collect()
}

/// A world verdict in the baseline's terms (a dry run ran, as far as the
/// baseline can tell).
pub fn base_verdict(verdict: taintworld::Verdict) -> BaseVerdict {
    match verdict {
        taintworld::Verdict::Ran | taintworld::Verdict::DryRun => BaseVerdict::Ran,
        taintworld::Verdict::Failed(f) => BaseVerdict::Failed(f.get()),
        taintworld::Verdict::Skipped { failure, needed } => {
            BaseVerdict::Skipped(failure.get(), needed)
        }
    }
}

/// The world's claimed bytes per failure, as `(memory, start, end, failure)`
/// sorted, with claims of one failure that touch (they differ only in
/// origin) fused — the baseline's view.
pub fn world_claimed(world: &World) -> Vec<(u64, u64, u64, u64)> {
    let mut out: Vec<(u64, u64, u64, u64)> = Vec::new();
    let mut memories: Vec<u64> = world.allocations().iter().map(|(_, a)| a.memory).collect();
    memories.sort_unstable();
    for memory in memories {
        let mut per: Vec<(u64, u64, u64)> = world
            .claims(memory)
            .into_iter()
            .flatten()
            .map(|c| (c.failure.get(), c.start, c.end))
            .collect();
        per.sort_unstable();
        let mut fused: Vec<(u64, u64, u64, u64)> = Vec::new();
        for (f, s, e) in per {
            match fused.last_mut() {
                Some(last) if last.3 == f && last.2 == s => last.2 = e,
                _ => fused.push((memory, s, e, f)),
            }
        }
        out.extend(fused);
    }
    out.sort_unstable();
    out
}

/// One step of the W5 workload.
#[derive(Clone, Debug)]
pub enum Step {
    /// A launch: its index in the prepared launches.
    Launch(usize),
    /// A host write of one buffer.
    HostWrite(Both),
    /// A host read of one buffer.
    Read(Both),
    /// A free of one buffer (its whole range named).
    Free(Both),
    /// An allocation of `memory`: `made` is its whole range, with the key
    /// and location it gets when the steps run from the pair's start.
    Alloc { memory: u64, made: Both },
}

/// When a W5-shaped workload's allocations are made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Allocs {
    /// All before the steps, outside the timing: W5's generated log makes
    /// them before its launches use them and frees none.
    Before,
    /// In the steps, where the log makes them, as it frees them, from an
    /// empty world (as `taintworld replay` starts).
    InSteps,
    /// The same from a world — and a baseline — that has made and freed
    /// the log's allocations once: its stores have the room the step
    /// needs, as a scheduler's world has after its first step, and the
    /// step makes the memory ids it freed again, as a runtime that names
    /// memory by a caching allocator's addresses does.
    InStepsWarm,
    /// The same from a world and a baseline that have made and freed as
    /// many allocations of other memory ids: a runtime that never reuses
    /// an id (as the recorder of `examples/logs/real/` numbers storages)
    /// at its second step.
    InStepsWarmNewIds,
}

/// The bindings of the W5 host writes and reads, by step (`None` for a
/// launch), made once outside any timed loop.
pub fn step_bindings(steps: &[Step]) -> Vec<Option<Binding>> {
    steps
        .iter()
        .map(|s| match s {
            Step::HostWrite(b) | Step::Read(b) => Some(b.binding()),
            Step::Launch(_) | Step::Free(_) | Step::Alloc { .. } => None,
        })
        .collect()
}

/// The W5 steps on `world`: each launch one at a time (bound by binding
/// or by pre-resolved row), host writes and reads between them. Out of
/// line, so that the two W5 groups calling it do not change how the bench
/// binary lays out the world's launch (docs/performance-history.md measured W5
/// with bindings 5–10 % slower that way, for the same library code).
#[inline(never)]
pub fn world_steps<B: Bind>(
    world: &mut World,
    steps: &[Step],
    bindings: &[Option<Binding>],
    launches: &[Launch<'_, B>],
) {
    for (step, binding) in steps.iter().zip(bindings) {
        match (step, binding) {
            (Step::Launch(i), _) => {
                std::hint::black_box(world.launch(&launches[*i]).expect("valid launch"));
            }
            (Step::HostWrite(_), Some(b)) => {
                world.host_write(b, Outcome::Ok).expect("valid write");
            }
            (Step::Read(_), Some(b)) => {
                std::hint::black_box(world.read_failure(b).expect("valid read"));
            }
            (Step::Free(b), _) => world.free(b.key).expect("live memory"),
            (Step::Alloc { memory, made }, _) => {
                std::hint::black_box(
                    world
                        .alloc(made.at.slot as u64, *memory, made.end)
                        .expect("fresh memory id"),
                );
            }
            _ => {}
        }
    }
}

/// The same W5 steps on the baseline.
pub fn base_steps(
    base: &mut Baseline,
    steps: &[Step],
    launches: &[BaseLaunch<'_>],
    kernels: &[Rc<str>],
) {
    for step in steps {
        match step {
            Step::Launch(i) => {
                let launch = &launches[*i];
                std::hint::black_box(base.launch(&kernels[*i], launch.bindings, launch.failed));
            }
            Step::HostWrite(b) => base.written(&[b.base_binding()]),
            Step::Read(b) => {
                std::hint::black_box(base.failure(b.at, b.start, b.end));
            }
            Step::Free(b) => base.free(b.at),
            Step::Alloc { memory, made } => {
                std::hint::black_box(base.alloc(made.at.slot, *memory, made.end));
            }
        }
    }
}

/// How the W5 launches name their kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelNames {
    /// Each launch its own copy of the name, as a parsed log's are; the
    /// baseline gets one `Rc<str>` a launch.
    PerLaunch,
    /// One string a kernel, registered with the world
    /// (`World::register_kernel`), as a scheduler names the kernels it
    /// compiled; the baseline gets one shared `Rc<str>` a kernel.
    Registered,
}

/// The baseline's kernel names for `work`, one per launch, shared between
/// launches of one kernel as `names` says.
pub fn base_kernels(work: &[Work], names: KernelNames) -> Vec<Rc<str>> {
    let mut shared: std::collections::HashMap<&str, Rc<str>> = Default::default();
    work.iter()
        .map(|w| match names {
            KernelNames::PerLaunch => Rc::from(w.kernel),
            KernelNames::Registered => shared
                .entry(w.kernel)
                .or_insert_with(|| Rc::from(w.kernel))
                .clone(),
        })
        .collect()
}

/// The launch that W5 fails, as the recording docs' example fails the
/// real logs' (`--fail-launch 3`): early, so that most of what follows
/// reads what it tainted.
pub const W5_FAILED_LAUNCH: usize = 3;

/// W5: a generated training-step log (forward, loss, backward and optimizer
/// launches over about 200 allocations), parsed here — outside any timed
/// loop — into launches on both implementations, with launch 3 failing,
/// their kernels named as `names` says.
pub fn w5_training(launches: u64, names: KernelNames) -> (Pair, Prepared, Vec<Step>) {
    use taintworld::log::{GenOptions, Shape, generate};
    let mut events = Vec::new();
    generate(
        &GenOptions {
            seed: 5,
            launches,
            streams: 2,
            fail_rate: 0.0,
            shape: Shape::TrainingStep,
        },
        |e| {
            events.push(e);
            Ok(())
        },
    )
    .expect("generating into memory cannot fail");
    w5_from_events(&events, names, Some(W5_FAILED_LAUNCH), Allocs::Before)
}

/// The real GPT-2 training-step log: with launch 3 failing, 160 of its 228
/// launches are skipped and 67 run, skips and runs interleaved.
pub const GPT2: &str = "gpt2_train_step.jsonl.gz";
/// The real ResNet training-step log: with launch 3 failing, one launch is
/// skipped and the next write releases it all — a clean step, nearly.
pub const RESNET: &str = "resnet_train_step.jsonl.gz";
/// The real two-stream log: a producer stream and a consumer stream,
/// launch 3 failing.
pub const TWO_STREAMS: &str = "two_streams.jsonl.gz";
/// The real GPT-2 decoding log: 16 tokens made with a key/value cache,
/// each read back. With launch 3 failing (the zero-fill of a layer's value
/// cache) nothing is skipped: every position of the cache is written before
/// attention reads it, so the failure's claim shrinks position by position
/// — a step of allocations, partial writes and reads, with no skip.
pub const GPT2_DECODE: &str = "gpt2_decode.jsonl.gz";
/// The real GPT-2 mixed-precision log: float16 autocast and a gradient
/// scaler. With launch 3 failing (an early embedding), 254 of its 350
/// launches are skipped, the scaler's casts, checks and scale updates
/// among them. Not timed; `tests/baseline_agrees.rs` holds the baseline to
/// it.
pub const GPT2_AMP: &str = "gpt2_amp_step.jsonl.gz";

/// W5's steps from one of the launch logs recorded from real PyTorch
/// programs on an H200 or an H100 (`examples/logs/real/`, `file` its name
/// there),
/// read here — outside any timed loop — with launch `fail` failing, or
/// none: every event of the log is a step (allocations and frees included,
/// where the log makes them) but its header, from an empty world or, when
/// warm (`allocs`: [`Allocs::InStepsWarm`] or [`Allocs::InStepsWarmNewIds`]). What `w5_from_events` cannot
/// mirror on both sides (a capture, a profile, a failed host write) makes
/// it panic, naming the event, rather than time something else.
pub fn w5_real(
    file: &str,
    names: KernelNames,
    fail: Option<usize>,
    allocs: Allocs,
) -> (Pair, Prepared, Vec<Step>) {
    assert!(
        allocs != Allocs::Before,
        "a real log's step makes its allocations"
    );
    w5_from_events(&real_events(file), names, fail, allocs)
}

/// The events of `file` in `examples/logs/real/`, every line one.
fn real_events(file: &str) -> Vec<taintworld::log::Event> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/logs/real")
        .join(file);
    taintworld::log::LogReader::open(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .map(|line| {
            let line = line.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            line.event
                .unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), line.number))
        })
        .collect()
}

/// Allocation `memory` of `size` bytes on `stream`, made on both sides:
/// the world's key and the baseline's location.
fn alloc_on_both(
    world: &mut World,
    base: &mut Baseline,
    (stream, memory, size): (u64, u64, u64),
) -> (AllocKey, Location) {
    let key = world
        .alloc(stream, memory, size)
        .expect("a log allocates each live memory id once");
    (key, base.alloc(stream as usize, memory, size))
}

/// A real log's live allocations on both sides, by memory id: the world's
/// key, the baseline's location and the size.
type ByMemory = std::collections::HashMap<u64, (AllocKey, Location, u64)>;

/// A log's binding `b` named both ways, by the live allocation of its
/// memory id in `by_memory`, touched as `access` says (a host write's or a
/// read's binding names none of its own).
fn log_both(b: &taintworld::log::LogBinding, access: Access, by_memory: &ByMemory) -> Both {
    let (key, at, size) = by_memory[&b.memory];
    let (start, end) = b.range.unwrap_or((0, size));
    Both {
        key,
        at,
        start,
        end,
        access,
    }
}

/// The recorded GPT-2 step captured whole into one CUDA graph.
pub const GPT2_GRAPH: &str = "gpt2_graph_train.jsonl.gz";

/// The real log of the GPT-2 decoder replaying one captured decoding pass
/// a token: its graph (39 launches) writes each layer's key/value cache
/// whole, as `index_copy_` at a position that is data is bound, and the
/// pass's intermediates in its pool.
pub const GPT2_DECODE_GRAPH: &str = "gpt2_decode_graph.jsonl.gz";

/// A real log's captured graph (`file` in `examples/logs/real/`, which
/// captures one): both sides as the log leaves them when its capture ends,
/// the graph's id, and the graph's recorded writes as the baseline binds
/// them, each reached by its cached location. The world makes and frees
/// what the log does up to there and runs its launches (every one of them
/// good), the captured ones in the capture window, so that its graph
/// records their write-visible bindings (SPEC §6); the baseline makes and
/// frees the same allocations. Host writes and reads change nothing in a
/// world where nothing failed, and are left out. The graph benches replay
/// it as they replay W1's graph: good, and failed then good.
pub fn real_graph(file: &str) -> (Pair, u64, Vec<BaseBinding>) {
    use taintworld::log::Event;
    let mut world = World::new(taintworld::Config {
        max_streams: 8,
        ..Default::default()
    })
    .expect("valid config");
    let mut base = Baseline::new(8);
    let mut by_memory = ByMemory::new();
    let mut writes = Vec::new();
    let mut capturing = false;
    for e in real_events(file) {
        match e {
            Event::Alloc {
                stream,
                memory,
                size,
                ..
            } => {
                let (key, at) = alloc_on_both(&mut world, &mut base, (stream, memory, size));
                by_memory.insert(memory, (key, at, size));
            }
            Event::Free { memory } => {
                let (key, at, _) = by_memory.remove(&memory).expect("live memory");
                world.free(key).expect("live memory");
                base.free(at);
            }
            Event::Launch {
                kernel,
                stream,
                bindings,
                outcome,
            } => {
                assert!(
                    matches!(outcome, taintworld::log::Outcome::Ok),
                    "the log's launches are good"
                );
                let bound: Vec<Both> = bindings
                    .iter()
                    .map(|b| log_both(b, b.access, &by_memory))
                    .collect();
                if capturing {
                    // A replay writes its recorded bindings and reads none.
                    writes.extend(bound.iter().filter(|b| b.access.writes()).map(|b| {
                        BaseBinding {
                            read: false,
                            ..b.base_binding()
                        }
                    }));
                }
                let rows: Vec<Binding> = bound.iter().map(Both::binding).collect();
                let result = world
                    .launch(&Launch {
                        kernel: &kernel,
                        stream: StreamRef::Id(stream),
                        bindings: &rows,
                        outcome: Outcome::Ok,
                    })
                    .expect("good input");
                assert_eq!(result.verdict, Verdict::Ran);
            }
            Event::CaptureBegin { stream } => {
                world.capture_begin(stream).expect("a live stream");
                capturing = true;
            }
            Event::CaptureEnd { stream, graph } => {
                assert_eq!(
                    world.capture_end(stream, graph).expect("an open window"),
                    taintworld::CaptureResult::Ok
                );
                let allocs = by_memory.into_values().collect();
                return (
                    Pair {
                        world,
                        base,
                        allocs,
                    },
                    graph,
                    writes,
                );
            }
            _ => {}
        }
    }
    panic!("{file} captures no graph");
}

/// Makes and frees `allocations` (stream, memory id, size) on both sides
/// once, each id made `id_offset` higher (wrapping), and gives the
/// baseline's vectors room for as many again: the stores then hold the
/// room a second run of them needs, as a scheduler's do after its first
/// step.
fn warm_up(
    world: &mut World,
    base: &mut Baseline,
    allocations: &[(u64, u64, u64)],
    id_offset: u64,
) {
    let mut per_slot = std::collections::BTreeMap::new();
    let made: Vec<_> = allocations
        .iter()
        .map(|&(stream, memory, size)| {
            *per_slot.entry(stream as usize).or_insert(0) += 1;
            let key = world
                .alloc(stream, memory.wrapping_add(id_offset), size)
                .expect("fresh id");
            (key, base.alloc(stream as usize, memory, size))
        })
        .collect();
    for (key, at) in made {
        world.free(key).expect("live memory");
        base.free(at);
    }
    for (slot, count) in per_slot {
        base.reserve(slot, count);
    }
}

/// W5's pair, launches and steps from a log's `events`: the allocations
/// made as `allocs` says (a log's memory ids are each allocated once: a
/// second `alloc` of one panics here), the launches, host writes, reads
/// and frees in log order, launch `fail` (counted from 0) failing, and any
/// launch the log says failed. A binding of freed memory panics: the
/// steps would name an allocation that is gone.
fn w5_from_events(
    events: &[taintworld::log::Event],
    names: KernelNames,
    fail: Option<usize>,
    allocs: Allocs,
) -> (Pair, Prepared, Vec<Step>) {
    use taintworld::log::{Event, Outcome as LogOutcome};
    let mut world = World::new(taintworld::Config {
        max_streams: 8,
        ..Default::default()
    })
    .expect("valid config");
    let mut base = Baseline::new(8);
    let allocations: Vec<(u64, u64, u64)> = events
        .iter()
        .filter_map(|e| match e {
            Event::Alloc {
                stream,
                memory,
                size,
                ..
            } => Some((*stream, *memory, *size)),
            _ => None,
        })
        .collect();
    match allocs {
        Allocs::InStepsWarm => warm_up(&mut world, &mut base, &allocations, 0),
        // Far from any id a log names.
        Allocs::InStepsWarmNewIds => warm_up(&mut world, &mut base, &allocations, 1 << 62),
        Allocs::Before | Allocs::InSteps => {}
    }
    // A replica of both sides replays the log's allocations and frees
    // alone: the keys and locations they get are those the steps' own
    // allocations will get (both stores hand them out in a fixed order),
    // and each launch's rows are made while what it binds is alive.
    let (mut replica, mut base_replica) = (world.clone(), base.clone());
    let mut by_memory = std::collections::HashMap::new();
    let mut list = Vec::new();
    let mut freed = std::collections::HashSet::new();
    let both = |b: &taintworld::log::LogBinding,
                access: Access,
                by_memory: &ByMemory,
                freed: &std::collections::HashSet<u64>| {
        assert!(
            !freed.contains(&b.memory),
            "memory {} is bound after its free",
            b.memory
        );
        log_both(b, access, by_memory)
    };
    let leak = |name: &String| -> &'static str { Box::leak(name.clone().into_boxed_str()) };
    let mut registered = std::collections::HashMap::new();
    let mut work = Vec::new();
    let mut rows = Vec::new();
    let mut steps = Vec::new();
    let mut per_launch = Vec::new();
    for e in events {
        match e {
            Event::Alloc {
                stream,
                memory,
                size,
                ..
            } => {
                let (key, at) =
                    alloc_on_both(&mut replica, &mut base_replica, (*stream, *memory, *size));
                by_memory.insert(*memory, (key, at, *size));
                list.push((key, at, *size));
                if allocs != Allocs::Before {
                    let made = Both {
                        key,
                        at,
                        start: 0,
                        end: *size,
                        access: Access::Write,
                    };
                    steps.push(Step::Alloc {
                        memory: *memory,
                        made,
                    });
                }
            }
            Event::Launch {
                kernel,
                bindings,
                outcome,
                ..
            } => {
                let failed = (Some(work.len()) == fail || matches!(outcome, LogOutcome::Failed(_)))
                    .then_some(("injected", "injected failure"));
                let kernel = match names {
                    // Named after the loop, all in one pass.
                    KernelNames::PerLaunch => {
                        per_launch.push(kernel);
                        ""
                    }
                    KernelNames::Registered => {
                        *registered.entry(kernel.clone()).or_insert_with(|| {
                            let name = leak(kernel);
                            world.register_kernel(name);
                            name
                        })
                    }
                };
                let bound: Vec<Both> = bindings
                    .iter()
                    .map(|b| both(b, b.access, &by_memory, &freed))
                    .collect();
                rows.push(bound.iter().map(|b| b.row(&replica)).collect::<Vec<_>>());
                steps.push(Step::Launch(work.len()));
                work.push(Work {
                    kernel,
                    bindings: bound,
                    failed,
                });
            }
            Event::HostWrite { binding, outcome } => {
                assert!(
                    matches!(outcome, LogOutcome::Ok),
                    "a failed host write (memory {}), which W5 does not mirror",
                    binding.memory
                );
                let write = both(binding, Access::Write, &by_memory, &freed);
                steps.push(Step::HostWrite(write))
            }
            Event::Read { binding } => {
                let read = both(binding, Access::Read, &by_memory, &freed);
                steps.push(Step::Read(read))
            }
            Event::Free { memory } => {
                assert_ne!(
                    allocs,
                    Allocs::Before,
                    "a free (memory {memory}) in a log whose allocations are made before its steps"
                );
                let (key, at, size) = by_memory[memory];
                replica.free(key).expect("freed once");
                base_replica.free(at);
                freed.insert(*memory);
                steps.push(Step::Free(Both {
                    key,
                    at,
                    start: 0,
                    end: size,
                    access: Access::Write,
                }));
            }
            Event::Header(_) | Event::Sync => {}
            other => panic!("W5 does not mirror {other:?}"),
        }
    }
    if allocs == Allocs::Before {
        // No frees: made in log order, they get the replica's keys.
        for &(stream, memory, size) in &allocations {
            let (key, at, _) = by_memory[&memory];
            let made = world.alloc(stream, memory, size).expect("fresh id");
            assert_eq!(made, key, "memory {memory}");
            assert_eq!(base.alloc(stream as usize, memory, size), at);
        }
    }
    // Each launch's own copy of its name is made in one pass, in launch
    // order, as `base_kernels` makes the baseline's `Rc<str>`s: made in the
    // loop above, between each launch's bindings, the crate's 20,000 names
    // lay a few cache lines apart where the baseline's lay packed, which
    // cost the crate first-level misses (13.47 against 12.67 a launch with
    // rows) and, in alternating rounds, time (docs/performance.md).
    if names == KernelNames::PerLaunch {
        for (w, name) in work.iter_mut().zip(per_launch) {
            w.kernel = leak(name);
        }
    }
    let prepared = Prepared::with_rows(work, rows);
    (
        Pair {
            world,
            base,
            allocs: list,
        },
        prepared,
        steps,
    )
}
