//! The bridge between the world and the model: the world's types in the
//! model's terms, and everything observable about either in one comparable
//! form. Shared by the proptest (`tests/world_matches_model.rs`) and the
//! fuzz target (`fuzz/fuzz_targets/world_vs_model.rs`), so both compare the
//! same things the same way.

use taintworld::{
    Access, Bind, Binding, Config, Error, ErrorInfo, Launch, LaunchResult, MemoryRef, Outcome,
    ReadResult, Resolved, ScopeOutcome, Stats, StreamRef, SyncResult, TaintReport, Verdict, World,
};

use super::{ErrorTriple, MBinding, MOutcome, MRead, MReport, MVerdict, Model};

/// The model's access code (0 read, 1 write, 2 read_write, 3 dead).
pub fn access(a: u8) -> Access {
    match a {
        0 => Access::Read,
        1 => Access::Write,
        2 => Access::ReadWrite,
        _ => Access::Dead,
    }
}

/// A model binding as the world's.
pub fn to_binding(b: &MBinding) -> Binding {
    Binding {
        stream: b.stream,
        memory: b.memory.into(),
        range: b.range,
        access: access(b.access),
    }
}

/// Frees `memory` as a scheduler holding keys would: by the key of its
/// allocation when its memory id is live in `world` (the free that removes
/// the id's index entry where the row says it is), else by the id, which
/// is bad input the same way.
pub fn free_keyed(world: &mut World, memory: u64) -> Result<(), Error> {
    match world.allocations().key_of(memory) {
        Some(key) => world.free(key),
        None => world.free(memory),
    }
}

/// The binding a scheduler holding keys would make of `binding`: by the
/// key of its allocation when its memory id is live in `world`, and on the
/// allocation's own slot when its stream folds onto that slot — the common
/// shape the world resolves in line; as it is otherwise, unresolved (or
/// bad input) the same way.
pub fn to_keyed_binding(world: &World, binding: &MBinding) -> Binding {
    let mut keyed = to_binding(binding);
    let allocations = world.allocations();
    if let Some(key) = allocations.key_of(binding.memory) {
        keyed.memory = MemoryRef::Key(key);
        let slot = allocations.get(key).map(|a| a.slot);
        if let StreamRef::Id(id) = binding.stream
            && slot == Some(id % world.config().max_streams)
        {
            keyed.stream = StreamRef::Id(id % world.config().max_streams);
        }
    }
    keyed
}

/// The row a scheduler holding `binding` would have resolved and kept
/// (`World::resolve_binding`), or for a binding that does not resolve the
/// row `stale` (a key that names nothing any more, unresolved the same
/// way) with the binding's access; `None` when no row can stand for it: it
/// is bad input (only the world makes rows, and never a reversed one or
/// one past its allocation's end), or unresolved with no stale row kept.
pub fn to_row(world: &World, binding: &MBinding, stale: Option<Resolved>) -> Option<Resolved> {
    let b = to_binding(binding);
    match world.resolve_binding(&b) {
        Ok(Some(row)) => Some(row),
        Ok(None) | Err(Error::Unresolved { .. }) => stale.map(|s| s.with_access(b.access)),
        Err(_) => None,
    }
}

/// A world launched with pre-resolved rows, as a scheduler keeping rows
/// drives it, and the stale row that scheduler still holds: the whole row
/// of the last allocation it freed, which names nothing from then on.
#[derive(Clone)]
pub struct RowWorld {
    /// The world.
    pub world: World,
    stale: Option<Resolved>,
}

impl RowWorld {
    /// A world with `config`, no row kept.
    pub fn new(config: Config) -> Self {
        Self {
            world: World::new(config).expect("a valid configuration"),
            stale: None,
        }
    }

    /// Frees `memory`, keeping its row (resolved just before) as the stale
    /// row.
    pub fn free(&mut self, memory: u64) -> Result<(), Error> {
        let allocations = self.world.allocations();
        let allocation = allocations
            .key_of(memory)
            .and_then(|key| allocations.get(key));
        let streams = self.world.streams();
        let whole = allocation
            .map(|a| Binding::whole(streams.stream_of_slot(a.slot), memory, Access::Read));
        let row = whole.and_then(|b| self.world.resolve_binding(&b).ok().flatten());
        self.world.free(memory)?;
        self.stale = row.or(self.stale);
        Ok(())
    }

    /// `launches` as one batch of rows ([`to_row`]); when some binding has
    /// no row to stand for it, as one batch of the bindings themselves, as
    /// a scheduler holding no row for them would launch it. Equal errors
    /// share their strings ([`share_failures`]), so this world also meets
    /// a failure it knows again by address within a batch.
    pub fn batch(&mut self, launches: &[MLaunch<'_>]) -> Result<Vec<(u64, MVerdict)>, Error> {
        let launches = &share_failures(launches);
        let rows: Option<Vec<Vec<Resolved>>> = launches
            .iter()
            .map(|(_, _, bindings, _)| {
                bindings
                    .iter()
                    .map(|b| to_row(&self.world, b, self.stale))
                    .collect()
            })
            .collect();
        match rows {
            Some(rows) => run_bound(&mut self.world, launches, &rows),
            None => run_batch::<Binding>(&mut self.world, launches, |_, b| to_binding(b)),
        }
    }

    /// One launch of rows on its own (`World::launch`), as [`batch`](Self::batch)
    /// makes them; when some binding has no row, of the bindings themselves.
    pub fn launch(&mut self, launch: MLaunch<'_>) -> Result<(u64, MVerdict), Error> {
        let rows: Option<Vec<Resolved>> = launch
            .2
            .iter()
            .map(|b| to_row(&self.world, b, self.stale))
            .collect();
        match rows {
            Some(rows) => run_one(&mut self.world, launch, &rows),
            None => run_launch(&mut self.world, launch),
        }
    }
}

/// One launch as the model takes it: kernel, stream, bindings, outcome.
pub type MLaunch<'a> = (&'a str, StreamRef, &'a [MBinding], &'a MOutcome);

/// A refusal as a world that binds rows ([`RowWorld`]) is held to it:
/// `error` with every [`Error::Unresolved`] and [`Error::UnknownKey`]
/// (within a batch's wrapping too) read as one `Unresolved` naming
/// nothing. Such a world binds the stale row it keeps where a binding does
/// not resolve, and strict mode refuses that row by its key where the
/// binding would be refused by its memory id and slot: the same refusal
/// of the same binding, told in other terms.
pub fn unresolved_blurred(error: Error) -> Error {
    match error {
        Error::Unresolved { .. } | Error::UnknownKey { .. } => Error::Unresolved {
            memory: 0,
            slot: 0,
            made_on: None,
        },
        Error::InBatch { index, error } => Error::InBatch {
            index,
            error: Box::new(unresolved_blurred(*error)),
        },
        other => other,
    }
}

/// A result as a world that binds rows is held to it: a refusal
/// [`unresolved_blurred`].
pub fn blurred<T>(result: Result<T, Error>) -> Result<T, Error> {
    result.map_err(unresolved_blurred)
}

/// The error a batch gives when its launch `index` is refused with `error`.
pub fn in_batch(index: usize, error: Error) -> Error {
    Error::InBatch {
        index,
        error: Box::new(error),
    }
}

/// `launches` with each failed outcome equal to an earlier one in the batch
/// replaced by that one: the same strings at the same addresses, as a
/// scheduler's static error strings are, where each launch's own copies
/// are equal bytes at other addresses. The world answers the same either
/// way; only how it finds the failure again differs.
fn share_failures<'a>(launches: &[MLaunch<'a>]) -> Vec<MLaunch<'a>> {
    let mut shared: Vec<MLaunch<'a>> = Vec::with_capacity(launches.len());
    for &(kernel, stream, bindings, outcome) in launches {
        let outcome = shared
            .iter()
            .map(|l| l.3)
            .find(|&o| matches!(o, MOutcome::Failed(..)) && o == outcome)
            .unwrap_or(outcome);
        shared.push((kernel, stream, bindings, outcome));
    }
    shared
}

/// One launch on `world`, one at a time, naming live memory by key as a
/// scheduler holding keys would ([`to_keyed_binding`]): the bindings a
/// world can answer from one look-up each.
pub fn run_keyed_launch(world: &mut World, launch: MLaunch<'_>) -> Result<(u64, MVerdict), Error> {
    let bindings: Vec<Binding> = launch
        .2
        .iter()
        .map(|b| to_keyed_binding(world, b))
        .collect();
    run_one(world, launch, &bindings)
}

/// One launch on `world`, one at a time: its number and verdict, or the
/// error that refuses it.
pub fn run_launch(world: &mut World, launch: MLaunch<'_>) -> Result<(u64, MVerdict), Error> {
    let bindings: Vec<Binding> = launch.2.iter().map(to_binding).collect();
    run_one(world, launch, &bindings)
}

/// `launch` on `world` on its own, binding `bindings` (what its model
/// bindings stand for): its number and verdict, or the error that refuses
/// it.
fn run_one<B: Bind>(
    world: &mut World,
    (kernel, stream, _, outcome): MLaunch<'_>,
    bindings: &[B],
) -> Result<(u64, MVerdict), Error> {
    world
        .launch(&Launch {
            kernel,
            stream,
            bindings,
            outcome: to_outcome(outcome),
        })
        .map(|r| (r.launch, verdict(r.verdict)))
}

/// A launch run as a write scope (SPEC §6b) whose body returns what the
/// launch's outcome says (`Ok` for a dry run, which a scope cannot be):
/// its number and verdict, in the model's terms, as [`run_launch`] gives
/// them. The body runs only when the read set is clean.
pub fn run_scope(
    world: &mut World,
    (kernel, stream, bindings, outcome): MLaunch<'_>,
) -> Result<(u64, MVerdict), Error> {
    let bindings: Vec<Binding> = bindings.iter().map(to_binding).collect();
    let number = world.launches();
    let body = || match outcome {
        MOutcome::Failed(kind, message) => Err(ErrorInfo::new(kind, kernel, message)),
        MOutcome::Ok | MOutcome::DryRun => Ok(()),
    };
    let verdict = match world.scope(kernel, stream, &bindings, body) {
        Ok(ScopeOutcome::Ran(())) => MVerdict::Ran,
        Ok(ScopeOutcome::Failed { failure, .. }) => MVerdict::Failed(failure.get()),
        Ok(ScopeOutcome::Skipped { failure, needed }) => MVerdict::Skipped(failure.get(), needed),
        Err(error) => return Err(error),
    };
    Ok((number, verdict))
}

/// The error a write scope whose body panicked leaves on its write set:
/// SPEC §6b names the kind, `World::scope`'s documentation the message
/// (and the kernel, the scope's own).
pub const TORN_DOWN: (&str, &str) = ("torn_down", "the write scope's body did not finish");

/// A launch run as a write scope whose body panics (SPEC §6b): the error
/// that refuses it; its number and verdict where the body does not run (a
/// tainted read set skips it); or `None` where the body ran and panicked,
/// which the model takes as the launch failed with [`TORN_DOWN`]. The
/// panic is caught here with the panic hook silenced for this thread while
/// the scope runs ([`silenced`]), so that a fuzz target, whose hook aborts
/// the process on any panic, can drive a scope that panics at all.
pub fn run_torn_scope(
    world: &mut World,
    (kernel, stream, bindings, _): MLaunch<'_>,
) -> Result<Option<(u64, MVerdict)>, Error> {
    let bindings: Vec<Binding> = bindings.iter().map(to_binding).collect();
    let number = world.launches();
    let scoped = silenced(|| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            world.scope(kernel, stream, &bindings, || -> Result<(), ErrorInfo> {
                panic!("the body does not finish")
            })
        }))
    });
    match scoped {
        Err(_) => Ok(None),
        Ok(Ok(ScopeOutcome::Skipped { failure, needed })) => {
            Ok(Some((number, MVerdict::Skipped(failure.get(), needed))))
        }
        Ok(Ok(_)) => panic!("a scope whose body panics ran it and returned"),
        Ok(Err(error)) => Err(error),
    }
}

std::thread_local! {
    /// Whether this thread's panics are expected and caught: see
    /// [`silenced`].
    static SILENCED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with this thread's panics kept from the panic hook. The hook
/// is process-wide: swapping it around each scope would silence, for that
/// while, a real failure on another test thread, and two threads swapping
/// at once could leave the silent one in place for good. Instead the hook
/// is wrapped once, and the wrapper passes on every panic but those of a
/// thread inside `f` (the fuzz target's abort among them).
fn silenced<T>(f: impl FnOnce() -> T) -> T {
    static WRAPPED: std::sync::Once = std::sync::Once::new();
    WRAPPED.call_once(|| {
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !SILENCED.with(|silenced| silenced.get()) {
                hook(info);
            }
        }));
    });
    SILENCED.with(|silenced| silenced.set(true));
    let out = f();
    SILENCED.with(|silenced| silenced.set(false));
    out
}

/// `launches` as one batch of [`Binding`]s ([`run_batch`]): a batch of an
/// even length names live memory by key, as a scheduler holding keys would
/// (the key paths, [`to_keyed_binding`]); the others by memory id.
pub fn run_binding_batch(
    world: &mut World,
    launches: &[MLaunch<'_>],
) -> Result<Vec<(u64, MVerdict)>, Error> {
    if launches.len().is_multiple_of(2) {
        run_batch::<Binding>(world, launches, to_keyed_binding)
    } else {
        run_batch::<Binding>(world, launches, |_, b| to_binding(b))
    }
}

/// `launches` as one batch on `world`, each binding made a `B` by `bind`
/// (against the world as it is before the batch): [`run_bound`].
fn run_batch<B: Bind>(
    world: &mut World,
    launches: &[MLaunch<'_>],
    bind: impl Fn(&World, &MBinding) -> B,
) -> Result<Vec<(u64, MVerdict)>, Error> {
    let owned: Vec<Vec<B>> = launches
        .iter()
        .map(|(_, _, bindings, _)| bindings.iter().map(|b| bind(world, b)).collect())
        .collect();
    run_bound(world, launches, &owned)
}

/// `launches` as one batch on `world`, binding `owned` (one vector a
/// launch): the results, or the error of a rejected batch, which must have
/// pushed no result.
fn run_bound<B: Bind>(
    world: &mut World,
    launches: &[MLaunch<'_>],
    owned: &[Vec<B>],
) -> Result<Vec<(u64, MVerdict)>, Error> {
    let batch: Vec<Launch<'_, B>> = launches
        .iter()
        .zip(owned)
        .map(|(&(kernel, stream, _, outcome), bindings)| Launch {
            kernel,
            stream,
            bindings,
            outcome: to_outcome(outcome),
        })
        .collect();
    let mut results: Vec<LaunchResult> = Vec::new();
    match world.launch_batch(&batch, &mut results) {
        Ok(()) => Ok(results
            .iter()
            .map(|r| (r.launch, verdict(r.verdict)))
            .collect()),
        Err(error) => {
            assert!(results.is_empty(), "a rejected batch pushes no result");
            Err(error)
        }
    }
}

/// A model outcome as the world's.
pub fn to_outcome(o: &MOutcome) -> Outcome<'_> {
    match o {
        MOutcome::Ok => Outcome::Ok,
        MOutcome::DryRun => Outcome::DryRun,
        MOutcome::Failed(kind, message) => Outcome::Failed { kind, message },
    }
}

/// A world verdict in the model's terms.
pub fn verdict(v: Verdict) -> MVerdict {
    match v {
        Verdict::Ran => MVerdict::Ran,
        Verdict::Failed(f) => MVerdict::Failed(f.get()),
        Verdict::Skipped { failure, needed } => MVerdict::Skipped(failure.get(), needed),
        Verdict::DryRun => MVerdict::DryRun,
    }
}

/// A world taint report in the model's terms.
pub fn report(r: TaintReport) -> MReport {
    MReport {
        failure: r.failure.get(),
        error: (r.error.kind, r.error.kernel, r.error.message),
        occurrences: r.occurrences,
        chain: r
            .chain
            .into_iter()
            .map(|h| (h.launch, h.kernel, h.needed))
            .collect(),
        truncated: r.truncated,
    }
}

/// A world's `sync` in the model's terms: the fault as `(kind, kernel,
/// message)`, if any.
pub fn sync_result(r: SyncResult) -> Option<ErrorTriple> {
    match r {
        SyncResult::Ok => None,
        SyncResult::DeviceFault(e) => Some((e.kind, e.kernel, e.message)),
    }
}

/// A world read in the model's terms.
pub fn read_result(r: ReadResult) -> MRead {
    match r {
        ReadResult::Clean => MRead::Clean,
        ReadResult::Unresolved => MRead::Unresolved,
        ReadResult::Tainted(r) => MRead::Tainted(report(r)),
        ReadResult::DeviceFault(e) => MRead::DeviceFault(e.kind, e.kernel, e.message),
    }
}

/// `(start, end, failure, origin launch)`.
pub type ClaimRow = (u64, u64, u64, Option<u64>);

/// `(id, kind, kernel, message, occurrences, skipped, carriers, pins)`.
pub type FailureRow = (u64, String, String, String, u64, u64, u64, u64);

/// `(launch, kernel, needed, cause's launch, depth, cut, failure)`.
pub type RecordRow = (u64, String, u64, Option<u64>, u32, bool, u64);

/// Everything observable about a world, in a comparable form.
#[derive(Debug, PartialEq, Eq)]
pub struct State {
    /// The counters.
    pub stats: Stats,
    /// Per live memory id, its claims sorted by start.
    pub claims: Vec<(u64, Vec<ClaimRow>)>,
    /// The live failures, sorted by id.
    pub failures: Vec<FailureRow>,
    /// The live skip records, sorted by launch number.
    pub records: Vec<RecordRow>,
}

/// A world's observable state.
pub fn state(world: &World) -> State {
    let mut claims: Vec<_> = world
        .allocations()
        .iter()
        .map(|(_, a)| {
            let list = world
                .claims(a.memory)
                .into_iter()
                .flatten()
                .map(|c| (c.start, c.end, c.failure.get(), c.origin))
                .collect();
            (a.memory, list)
        })
        .collect();
    claims.sort();
    let mut failures: Vec<_> = world
        .failures()
        .map(|f| {
            let e = f.error;
            (
                f.id.get(),
                e.kind.clone(),
                e.kernel.clone(),
                e.message.clone(),
                f.occurrences,
                f.skipped,
                f.carriers,
                f.pins,
            )
        })
        .collect();
    failures.sort();
    let mut records: Vec<RecordRow> = world
        .skip_records()
        .map(|r| {
            let failure = r.failure.get();
            (
                r.launch,
                r.kernel.to_owned(),
                r.needed,
                r.cause,
                r.depth,
                r.cut,
                failure,
            )
        })
        .collect();
    records.sort();
    State {
        stats: world.stats(),
        claims,
        failures,
        records,
    }
}

/// The model's observable state, in the same form.
pub fn model_state(m: &Model) -> State {
    let claims: Vec<_> = m.allocs.keys().map(|&mem| (mem, m.claims(mem))).collect();
    let failures = m
        .failures
        .iter()
        .map(|(&id, f)| {
            (
                id,
                f.kind.clone(),
                f.kernel.clone(),
                f.message.clone(),
                f.occurrences,
                f.skipped,
                m.carriers(id),
                f.pins,
            )
        })
        .collect();
    let records = m.live_record_rows();
    let claim_count = claims.iter().map(|(_, c)| c.len() as u64).sum();
    // `Stats` is `#[non_exhaustive]`: a count the world gains starts at 0
    // here, and the comparison fails until the model keeps it too.
    let mut stats = Stats::default();
    stats.live_failures = m.failures.len() as u64;
    stats.tainted_allocations = m.tainted_allocations();
    stats.tainted_bytes = m.tainted_bytes();
    stats.claims = claim_count;
    stats.failures_minted = m.minted;
    stats.unresolved_bindings = m.unresolved;
    stats.live_records = records.len() as u64;
    stats.allocations = m.allocs.len() as u64;
    stats.launches = m.launches;
    State {
        stats,
        claims,
        failures,
        records,
    }
}
